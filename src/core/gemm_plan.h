// What the CPU (OpenBLAS) and CUDA (cuBLAS) matmul entries share: the operand checks, how a BLAS takes
// an operand's last two dims in place (transpose flag and leading dim) or that it must be packed, and
// the element offsets of one batch of a broadcast batched product. Host code (g++ for both devices).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kcheck.h"
#include "shape.h"

namespace mf {
namespace kcheck {

// c = (batch) m x n with a (batch) m x k, b (batch) k x n after the transposes; a's and b's batch
// dims broadcast to c's; one float dtype; c contiguous. op names the entry in messages.
inline void matmul(const mf_tensor& c, const mf_tensor& a, const mf_tensor& b, bool trans_a, bool trans_b,
                   const char* op = "matmul") {
  if (a.dtype_id != b.dtype_id || c.dtype_id != a.dtype_id) fail(op, ": a, b and the output must share one dtype");
  if (a.ndim < 2 || b.ndim < 2 || c.ndim < 2)
    fail(op, ": a is ", shape_str(a), ", b ", shape_str(b), ", output ", shape_str(c),
         "; the kernel expects operands of at least 2 dims");
  meta(op, "a", a);
  meta(op, "b", b);
  meta(op, "output", c);
  float_dtype(op, "a", a);
  contiguous(op, "output", c);
  int64_t m = a.shape[a.ndim - (trans_a ? 1 : 2)], ka = a.shape[a.ndim - (trans_a ? 2 : 1)];
  int64_t kb = b.shape[b.ndim - (trans_b ? 1 : 2)], n = b.shape[b.ndim - (trans_b ? 2 : 1)];
  bool ok = ka == kb && c.shape[c.ndim - 2] == m && c.shape[c.ndim - 1] == n;
  mf_tensor ba = a, bb = b, bc = c;  // the batch dims alone
  ba.ndim -= 2, bb.ndim -= 2, bc.ndim -= 2;
  const mf_tensor* ins[] = {&ba, &bb};
  bool batch_ok = ba.ndim <= bc.ndim && bb.ndim <= bc.ndim && is_broadcast_of(bc, 2, ins);
  if (!ok || !batch_ok)
    fail(op, ": output is ", shape_str(c), ", a ", shape_str(a), trans_a ? " (transposed)" : "", ", b ", shape_str(b),
         trans_b ? " (transposed)" : "",
         "; expected a's columns to equal b's rows and the output of (broadcast batch) x a's rows x b's columns");
}

}  // namespace kcheck

// t's batch strides in elements, one per batch dim of the output (t's leading dims aligned to the
// right of batch; 0 where t has size 1 or lacks the dim).
inline Shape gemm_batch_strides(const mf_tensor& t, const Shape& batch) {
  Shape s(batch.size(), 0);
  size_t lead = batch.size() - size_t(t.ndim - 2);
  for (int d = 0; d < t.ndim - 2; ++d) s[lead + size_t(d)] = t.shape[d] == 1 ? 0 : t.strides[d];
  return s;
}

// How a row-major BLAS reads t's last two dims (r x c) in place: as stored (returns 0) or transposed
// (1), with leading dim ld; -1 when neither describes the layout (a doubly strided view: pack it).
inline int gemm_layout(const mf_tensor& t, int64_t& ld) {
  int nd = t.ndim;
  int64_t r = t.shape[nd - 2], c = t.shape[nd - 1];
  int64_t rs = t.strides[nd - 2], cs = t.strides[nd - 1];
  if ((cs == 1 || c == 1) && (r == 1 || rs >= c)) {
    ld = std::max<int64_t>({rs, c, 1});
    return 0;
  }
  if ((rs == 1 || r == 1) && (c == 1 || cs >= r)) {
    ld = std::max<int64_t>({cs, r, 1});
    return 1;
  }
  return -1;
}

// Packing an operand gemm_layout refuses: the view of t a dense copy reads (t at the shape full =
// batch x r x c, each batch dim at batch_stride), the copy's destination having full's dense strides.
inline mf_tensor gemm_pack_source(const mf_tensor& t, const Shape& batch, const Shape& batch_stride, Shape& full) {
  int nd = t.ndim;
  full = batch;
  full.push_back(t.shape[nd - 2]);
  full.push_back(t.shape[nd - 1]);
  Shape st = batch_stride;
  st.push_back(t.strides[nd - 2]);
  st.push_back(t.strides[nd - 1]);
  mf_tensor src = t;
  set_strided(src, full, st, t.offset);
  src.ptr = t.ptr;
  return src;
}

// How BLAS reads the packed copy: as stored, ld the row length (at least 1), dense batch strides.
inline void gemm_packed_layout(const Shape& full, int64_t& ld, Shape& batch_stride) {
  ld = full.back() > 0 ? full.back() : 1;
  batch_stride = contiguous_strides(full);
  batch_stride.resize(full.size() - 2);
}

// The element offsets in A, B and C of batch bi, counted row-major over batch dims [0, ndims).
inline void gemm_batch_offsets(int64_t bi, const Shape& batch, int ndims, const Shape& sa, const Shape& sb,
                               const Shape& sc, int64_t& oa, int64_t& ob, int64_t& oc) {
  oa = ob = oc = 0;
  for (int d = ndims - 1; d >= 0; --d) {
    int64_t i = bi % batch[size_t(d)];
    bi /= batch[size_t(d)];
    oa += i * sa[size_t(d)];
    ob += i * sb[size_t(d)];
    oc += i * sc[size_t(d)];
  }
}

}  // namespace mf
