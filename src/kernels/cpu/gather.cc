// -- index_select / index_add_like / one_hot ---------------------------------------------------
// Gathers and scatters along one dim by 1-based int64 indices: index_select row by row (a row: the
// run of x's dims after dim) when the layout allows, else slice by slice through the strided copy
// and add routines (each slice is itself parallel when large); one_hot one output row at a time.
#include <algorithm>
#include <cstring>
#include <vector>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "checks.h"
#include "copy.h"
#include "kernels.h"

namespace mf {

namespace {

// The view of t at position i (0-based) along dim, with that dim kept as size 1.
mf_tensor slice_at(const mf_tensor& t, int dim, int64_t i) {
  mf_tensor v = t;
  v.shape[dim] = 1;
  v.count = t.shape[dim] ? t.count / t.shape[dim] : 0;
  v.ptr = (char*)t.ptr + i * t.strides[dim] * dtype_size(t.dtype_id);
  v.is_contig = is_contiguous(v) ? 1 : 0;
  return v;
}

// The 1-D indices read through their stride (a strided or expanded view is fine), range-checked.
std::vector<int64_t> checked_indices(const char* op, const mf_tensor& idx, int64_t n) {
  if (idx.dtype_id != MF_INT64) fail(op, ": indices are ", dtype_name(idx.dtype_id), "; expected int64");
  const int64_t* p = (const int64_t*)idx.ptr;
  std::vector<int64_t> out(size_t(idx.count));
  for (int64_t j = 0; j < idx.count; ++j) {
    out[size_t(j)] = p[j * idx.strides[0]];
    if (out[size_t(j)] < 1 || out[size_t(j)] > n)
      fail(op, ": index ", out[size_t(j)], " at position ", j + 1, " is out of range 1..", n);
  }
  return out;
}

// The tensors a gather or scatter along dim pairs up: same rank, same sizes off dim, and as many
// slices of a (the one written or read per index) as there are indices.
void check_along(const char* op, const mf_tensor& a, const char* an, const mf_tensor& b, const char* bn, int dim,
                 const mf_tensor& idx) {
  if (dim < 0 || dim >= a.ndim || a.ndim != b.ndim || idx.ndim != 1)
    fail(op, ": ", an, " is ", shape_str(a), ", ", bn, " ", shape_str(b), ", indices ", shape_str(idx), " along dim ",
         dim + 1, "; expected equal ranks and 1-D indices");
  for (int d = 0; d < a.ndim; ++d)
    if (d != dim && a.shape[d] != b.shape[d])
      fail(op, ": ", an, " is ", shape_str(a), ", ", bn, " ", shape_str(b), "; sizes off dim ", dim + 1, " must match");
  if (a.shape[dim] != idx.count)
    fail(op, ": ", an, " has ", a.shape[dim], " slices along dim ", dim + 1, " for ", idx.count, " indices");
}

// x's dims after dim as one run: its length and stride, or false when they do not merge into one.
bool inner_run(const mf_tensor& x, int dim, int64_t& n, int64_t& stride) {
  n = 1;
  stride = 1;
  bool first = true;
  for (int d = x.ndim - 1; d > dim; --d) {
    if (x.shape[d] == 1) continue;
    if (first) {
      stride = x.strides[d];
    } else if (x.strides[d] != stride * n) {
      return false;
    }
    first = false;
    n *= x.shape[d];
  }
  return true;
}

// index_select into a contiguous out of x's dtype, x's dims after dim forming one run: out is
// (outer x indices) rows of that run, each copied by memcpy (unit stride) or a strided loop, rows
// split across threads. Elements move as W-byte words.
template <typename W>
void select_rows(mf_tensor& out, const mf_tensor& x, const std::vector<int64_t>& p, int dim, int64_t n, int64_t sn) {
  int64_t nidx = int64_t(p.size()), rows = n ? out.count / n : 0;
  W* dst = (W*)out.ptr;
  const W* src = (const W*)x.ptr;
  int64_t sd = x.strides[dim];
  // x's offset of outer index o (row-major over x's dims before dim)
  auto outer_offset = [&](int64_t o) {
    int64_t off = 0;
    for (int d = dim - 1; d >= 0; --d) {
      off += (o % x.shape[d]) * x.strides[d];
      o /= x.shape[d];
    }
    return off;
  };
  const bool stream = stream_into(out, out.count * int64_t(sizeof(W)));  // streaming stores (copy.h)
  parallel_for(rows, n + 16, [&](int64_t lo, int64_t hi) {
    // row r is index j of outer index o: both stepped, not divided out of r per row (K.index_select
    // of 128 rows of 128 float32, warm, 1 thread: 0.87-0.90 -> 0.82 us)
    int64_t o = lo / nidx, j = lo % nidx, base = outer_offset(o);
    // short rows: their lines fetched ahead for writing (copy.h; eager index_select of 128 rows of 128
    // float32, 1 thread, interleaved: 3.8 -> 3.2 us; 0.86 -> 1.02 us into one warm output)
    const bool ahead = !stream && n * int64_t(sizeof(W)) < kPrefetchRowMax;
    uintptr_t next = uintptr_t(dst + lo * n);
    for (int64_t r = lo; r < hi; ++r) {
      int64_t off = base + (p[size_t(j)] - 1) * sd;
      if (++j == nidx) {
        j = 0;
        base = outer_offset(++o);
      }
      W* q = dst + r * n;
      if (ahead) prefetch_ahead(q, q + n, dst + hi * n, next);
      const W* s = src + off;
      if (sn == 1 && n * int64_t(sizeof(W)) >= 128) {
        if (stream) {
          copy_stream(q, s, size_t(n) * sizeof(W));
        } else {
          copy_run(q, s, size_t(n) * sizeof(W));
        }
      } else {
        for (int64_t i = 0; i < n; ++i) q[i] = s[i * sn];
      }
    }
    if (stream) stream_fence();
  });
}

}  // namespace

void index_select_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, int dim) {
  check_along("index_select", out, "output", x, "x", dim, idx);
  std::vector<int64_t> p = checked_indices("index_select", idx, x.shape[dim]);
  kcheck::meta("index_select", "output", out);
  kcheck::meta("index_select", "x", x);
  int64_t n, sn;
  if (out.dtype_id == x.dtype_id && is_contiguous(out) && inner_run(x, dim, n, sn) && !memory_overlaps(out, x)) {
    switch (dtype_size(x.dtype_id)) {
      case 1: return select_rows<uint8_t>(out, x, p, dim, n, sn);
      case 4: return select_rows<uint32_t>(out, x, p, dim, n, sn);
      case 8: return select_rows<uint64_t>(out, x, p, dim, n, sn);
      default: break;
    }
  }
  for (int64_t j = 0; j < idx.count; ++j) {  // any other layout: slice by slice

    mf_tensor dst = slice_at(out, dim, j), src = slice_at(x, dim, p[size_t(j)] - 1);
    copy_cpu(dst, src);
  }
}

void index_add_like_cpu(mf_tensor& out, const mf_tensor& g, const mf_tensor& idx, int dim) {
  kcheck::meta("index_add_like", "gradient", g);
  kcheck::meta("index_add_like", "output", out);
  check_along("index_add_like", g, "gradient", out, "output", dim, idx);
  if (g.dtype_id != out.dtype_id)
    fail("index_add_like: gradient is ", dtype_name(g.dtype_id), ", output ", dtype_name(out.dtype_id),
         "; expected one dtype");
  std::vector<int64_t> p = checked_indices("index_add_like", idx, out.shape[dim]);
  fill_cpu(out, 0);
  for (int64_t j = 0; j < idx.count; ++j) {  // in order: repeated indices accumulate
    mf_tensor dst = slice_at(out, dim, p[size_t(j)] - 1), src = slice_at(g, dim, j);
    add_cpu(dst, dst, src);
  }
}

void one_hot_cpu(mf_tensor& out, const mf_tensor& labels) {
  if (out.ndim < 1 || !is_contiguous(out) || out.count != labels.count * out.shape[out.ndim - 1])
    fail("one_hot: output ", shape_str(out), " does not hold one contiguous row per label of ", shape_str(labels));
  int64_t classes = out.shape[out.ndim - 1];
  if (labels.dtype_id != MF_INT64 && labels.dtype_id != MF_INT32 && labels.dtype_id != MF_UINT8)
    fail("one_hot: labels are ", dtype_name(labels.dtype_id), "; expected an integer dtype");
  // every label read (through the strides) and checked before any write; then each thread's rows
  // are zeroed by one memset and get their ones, rows split across threads
  std::vector<int64_t> hot(size_t(labels.count));
  MF_DISPATCH(labels.dtype_id, L, {
    const L* lp = (const L*)labels.ptr;
    for (int64_t i = 0; i < labels.count; ++i) {
      int64_t off = 0, rem = i;  // label i in row-major order
      for (int d = labels.ndim - 1; d >= 0; --d) {
        off += (rem % labels.shape[d]) * labels.strides[d];
        rem /= labels.shape[d];
      }
      int64_t lab = int64_t(lp[off]);
      if (lab < 1 || lab > classes)
        fail("one_hot: label ", lab, " at position ", i + 1, " is out of range 1..", classes);
      hot[size_t(i)] = lab - 1;
    }
  });
  MF_DISPATCH(out.dtype_id, T, {
    T* o = (T*)out.ptr;
    parallel_for(labels.count, classes, [&](int64_t lo, int64_t hi) {
      // one memset over the rows, not a loop per row: an eager output is usually cold in cache, and
      // memset's string stores over a long span write whole lines without reading them first (128
      // labels x 128 classes int64, eager, 1 thread: 5.5 -> 2-3.5 us). Locals, not the captured
      // references: a store through the int64 output may alias a captured int64_t
      const int64_t nc = classes;
      const int64_t* h = hot.data();
      std::memset(o + lo * nc, 0, size_t((hi - lo) * nc) * sizeof(T));
      for (int64_t i = lo; i < hi; ++i) o[i * nc + h[i]] = T(1);
    });
  });
}

}  // namespace mf
