// CUDA entries of the shape family: concat and pad_like as device copies into views of the output
// (the CPU's construction), index_select and one_hot (indices and labels read by the kernel and
// checked on the device: a bad one is recorded and raised at the next host read, fault.cuh, so the
// host never waits; the kernel writes 0 where it points), tri and periodic_copy as one kernel each.
// Operand rules and messages are the CPU's.
#include <vector>

#include "../../core/dtype.h"
#include "../../core/kcheck.h"
#include "../../core/shape.h"
#include "../../core/writes.h"
#include "backend.h"
#include "fault.cuh"
#include "kernels.h"
#include "walk.h"

namespace mf {
namespace cuda {

namespace {

// The view of out from position `at` along dim, of x's size there (a narrow of out).
mf_tensor part_of(const mf_tensor& out, int dim, int64_t at, int64_t size, int64_t step = 1) {
  mf_tensor part = out;
  part.shape[dim] = size;
  part.strides[dim] = out.strides[dim] * step;
  part.count = 1;
  for (int d = 0; d < part.ndim; ++d) part.count *= part.shape[d];
  part.ptr = (char*)out.ptr + at * out.strides[dim] * dtype_size(out.dtype_id);
  part.is_contig = is_contiguous(part) ? 1 : 0;
  return part;
}

void copy_or_throw(const char* op, mf_tensor& dst, const mf_tensor& src) {
  if (copy(&dst, &src) != MF_OK) fail(op, ": ", last_error());
}

// idx: 1-based, 1-D with stride is; one out of 1..nx (recorded by check_indices) writes 0
template <class T>
__global__ void index_select_k(T* out, const T* x, const int64_t* idx, int64_t is, int64_t nx, Walk<2> L, int dim,
                               int64_t xs_dim, int64_t n) {
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t r = i, o0 = 0, o1 = 0;
    bool bad = false;
    for (int d = L.ndim - 1; d >= 0; --d) {
      int64_t c = r % L.size[d];
      r /= L.size[d];
      o0 += c * L.st[0][d];
      if (d == dim) {
        int64_t v = idx[c * is];
        bad = v < 1 || v > nx;
        o1 += bad ? 0 : (v - 1) * xs_dim;
      } else {
        o1 += c * L.st[1][d];
      }
    }
    out[o0] = bad ? T(0) : x[o1];
  }
}

// labels: 1-based, read through their layout; a bad one (recorded by check_indices) gives a zero row
template <class T>
__global__ void one_hot_k(T* out, const void* labels, Layout ll, int ldtype, int64_t rows, int64_t classes) {
  MF_CUDA_GRID_LOOP(i, rows * classes) {
    long long v = index_at(labels, ldtype, offset_of(ll, i / classes));
    out[i] = T(i % classes == v - 1 ? 1 : 0);
  }
}

template <class T>
__global__ void tri_k(T* out, const T* x, Walk<2> L, int64_t n, int64_t k, int upper) {
  MF_CUDA_GRID_LOOP(e, n) {
    int64_t o[2];
    offsets(L, e, o);
    int64_t cols = L.size[L.ndim - 1], rows = L.size[L.ndim - 2];
    int64_t j = e % cols, i = (e / cols) % rows, diff = j - i;
    bool keep = upper ? diff >= k : diff <= k;
    out[o[0]] = keep ? x[o[1]] : T(0);
  }
}

struct Periodic {
  int ndim;
  int64_t size[MF_MAX_DIMS];   // out's sizes
  int64_t nx[MF_MAX_DIMS];     // x's size aligned to out's dim (1 where x has none)
  int64_t sx[MF_MAX_DIMS];     // x's stride there (0 where x has none)
  int64_t shift[MF_MAX_DIMS];  // already reduced mod nx
  uint32_t flip;
};

template <class T>
__global__ void periodic_k(T* out, const T* x, Periodic P, int64_t n) {
  MF_CUDA_GRID_LOOP(e, n) {
    int64_t r = e, off = 0;
    for (int d = P.ndim - 1; d >= 0; --d) {
      int64_t i = r % P.size[d];
      r /= P.size[d];
      int64_t j = (P.flip >> d) & 1u ? P.size[d] - 1 - i : i - P.shift[d];
      j %= P.nx[d];
      if (j < 0) j += P.nx[d];
      off += j * P.sx[d];
    }
    out[e] = x[off];
  }
}

}  // namespace

int concat(mf_tensor* out, int32_t n, const mf_tensor* const* ins, int32_t dim) {
  return entry("concat", [&] {
    if (dim < 0 || dim >= out->ndim) fail("concat: dim ", dim + 1, " out of range for a ", out->ndim, "-dim output");
    on_device("concat", "output", *out);
    int64_t at = 0;
    for (int i = 0; i < n; ++i) {
      const mf_tensor& x = *ins[i];
      bool fits = x.ndim == out->ndim && x.shape[dim] >= 0 && x.shape[dim] <= out->shape[dim] - at;
      for (int d = 0; fits && d < out->ndim; ++d) fits = d == dim || x.shape[d] == out->shape[d];
      if (!fits)
        fail("concat: input ", i + 1, " is ", shape_str(x), "; it does not fit the output ", shape_str(*out),
             " after ", at, " slices along dim ", dim + 1);
      mf_tensor part = part_of(*out, dim, at, x.shape[dim]);
      copy_or_throw("concat", part, x);
      at += x.shape[dim];
    }
    if (at != out->shape[dim])
      fail("concat: the inputs fill ", at, " of the output's ", out->shape[dim], " slices along dim ", dim + 1);
  });
}

int pad_like(mf_tensor* out, const mf_tensor* g, int32_t dim, int64_t start, int64_t step) {
  return entry("pad_like", [&] {
    bool fits = dim >= 0 && dim < out->ndim && g->ndim == out->ndim && start >= 0 && step >= 1;
    for (int d = 0; fits && d < g->ndim; ++d) fits = d == dim || g->shape[d] == out->shape[d];
    if (fits && g->shape[dim] > 0) fits = start + (g->shape[dim] - 1) * step < out->shape[dim];
    if (!fits)
      fail("pad_like: gradient ", shape_str(*g), " placed from index ", start + 1, " by step ", step, " along dim ",
           dim + 1, " does not fit inside ", shape_str(*out));
    on_device("pad_like", "output", *out);
    if (fill(out, 0) != MF_OK) fail("pad_like: ", last_error());
    if (g->count == 0) return;
    mf_tensor view = part_of(*out, dim, start, g->shape[dim], step);
    copy_or_throw("pad_like", view, *g);
  });
}

int index_select(mf_tensor* out, const mf_tensor* x, const mf_tensor* idx, int32_t dim) {
  return entry("index_select", [&] {
    const char* op = "index_select";
    kcheck::meta(op, "output", *out);
    kcheck::meta(op, "x", *x);
    if (dim < 0 || dim >= out->ndim || out->ndim != x->ndim || idx->ndim != 1)
      fail(op, ": output is ", shape_str(*out), ", x ", shape_str(*x), ", indices ", shape_str(*idx), " along dim ",
           dim + 1, "; expected equal ranks and 1-D indices");
    for (int d = 0; d < out->ndim; ++d)
      if (d != dim && out->shape[d] != x->shape[d])
        fail(op, ": output is ", shape_str(*out), ", x ", shape_str(*x), "; sizes off dim ", dim + 1, " must match");
    if (out->shape[dim] != idx->count)
      fail(op, ": output has ", out->shape[dim], " slices along dim ", dim + 1, " for ", idx->count, " indices");
    if (idx->dtype_id != MF_INT64) fail(op, ": indices are ", dtype_name(idx->dtype_id), "; expected int64");
    if (out->dtype_id != x->dtype_id)
      fail(op, ": output is ", dtype_name(out->dtype_id), ", x ", dtype_name(x->dtype_id), "; expected one dtype");
    for (const mf_tensor* t : {(const mf_tensor*)out, x, idx}) on_device(op, "an operand", *t);
    kcheck::writable(op, "output", *out);
    // every host check before the device one: a host error after it would leave its fault pending,
    // raised at some later, unrelated read
    if (out->count > 0 && memory_overlaps(*out, *x)) fail(op, ": the output shares memory with x");
    check_indices(index_fault(op, "index", *idx, x->shape[dim], dim, true, x), *idx);
    if (out->count == 0) return;
    mf_tensor xs = *x;  // x's stride along dim is added per index; the walk steps over the others
    xs.strides[dim] = 0;
    const mf_tensor* xops[1] = {&xs};
    Walk<2> L = make_walk<2>(*out, xops, true);
    const int64_t* ip = static_cast<const int64_t*>(idx->ptr);
    int64_t is = idx->strides[0], nx = x->shape[dim];
    switch (dtype_size(x->dtype_id)) {  // elements move as same-size words
      case 1:
        index_select_k<uint8_t><<<grid_for(out->count), kThreads, 0, stream()>>>(
            (uint8_t*)out->ptr, (const uint8_t*)x->ptr, ip, is, nx, L, dim, x->strides[dim], out->count);
        break;
      case 4:
        index_select_k<uint32_t><<<grid_for(out->count), kThreads, 0, stream()>>>(
            (uint32_t*)out->ptr, (const uint32_t*)x->ptr, ip, is, nx, L, dim, x->strides[dim], out->count);
        break;
      default:
        index_select_k<uint64_t><<<grid_for(out->count), kThreads, 0, stream()>>>(
            (uint64_t*)out->ptr, (const uint64_t*)x->ptr, ip, is, nx, L, dim, x->strides[dim], out->count);
        break;
    }
    check_launch(op);
  });
}

int one_hot(mf_tensor* out, const mf_tensor* labels) {
  return entry("one_hot", [&] {
    if (out->ndim < 1 || !is_contiguous(*out) || out->count != labels->count * out->shape[out->ndim - 1])
      fail("one_hot: output ", shape_str(*out), " does not hold one contiguous row per label of ", shape_str(*labels));
    int64_t classes = out->shape[out->ndim - 1];
    if (labels->dtype_id != MF_INT64 && labels->dtype_id != MF_INT32 && labels->dtype_id != MF_UINT8)
      fail("one_hot: labels are ", dtype_name(labels->dtype_id), "; expected an integer dtype");
    on_device("one_hot", "output", *out);
    on_device("one_hot", "labels", *labels);
    Layout ll = layout_of(*labels);
    // the device check is queued only once every host check has passed (the dtype switch's too), so a
    // host error never leaves a pending fault for an unrelated later read
    MF_DISPATCH(out->dtype_id, T, {
      check_indices(index_fault("one_hot", "label", *labels, classes, 0, true, nullptr), *labels);
      if (out->count == 0) return;
      one_hot_k<T><<<grid_for(out->count), kThreads, 0, stream()>>>((T*)out->ptr, labels->ptr, ll, labels->dtype_id,
                                                                    labels->count, classes);
    });
    check_launch("one_hot");
  });
}

int tri(mf_tensor* out, const mf_tensor* x, int64_t k, int32_t upper) {
  const char* op = upper ? "triu" : "tril";
  return entry(op, [&] {
    kcheck::meta(op, "out", *out);
    kcheck::meta(op, "x", *x);
    kcheck::contiguous(op, "out", *out);
    kcheck::same_shape(op, "out", *out, "x", *x);
    kcheck::dtype(op, "out", *out, x->dtype_id, " (x's dtype)");
    if (x->ndim < 2) fail(op, ": x is ", shape_str(*x), "; expected at least 2 dims (a matrix or a batch of them)");
    on_device(op, "out", *out);
    on_device(op, "x", *x);
    if (out->count == 0) return;
    const mf_tensor* ops[1] = {x};
    Walk<2> L = make_walk<2>(*out, ops, true);
    // keep the bound inside the matrix: the same result, and j - i cannot overflow against it
    int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
    int64_t kk = k < -rows - 1 ? -rows - 1 : k > cols + 1 ? cols + 1 : k;
    MF_DISPATCH(x->dtype_id, T, {
      tri_k<T><<<grid_for(out->count), kThreads, 0, stream()>>>((T*)out->ptr, (const T*)x->ptr, L, out->count, kk,
                                                                upper);
    });
    check_launch(op);
  });
}

int periodic_copy(mf_tensor* out, const mf_tensor* x, const int64_t* shift, uint32_t flip_mask) {
  return entry("periodic_copy", [&] {
    const char* op = "periodic_copy";
    kcheck::meta(op, "out", *out);
    kcheck::meta(op, "x", *x);
    kcheck::contiguous(op, "out", *out);
    kcheck::dtype(op, "out", *out, x->dtype_id, " (x's dtype)");
    if (x->ndim > out->ndim)
      fail(op, ": x is ", shape_str(*x), ", out ", shape_str(*out), "; expected out to have at least x's dims");
    on_device(op, "out", *out);
    on_device(op, "x", *x);
    if (out->count == 0) return;
    Periodic P{};
    P.ndim = out->ndim;
    P.flip = flip_mask;
    int lead = out->ndim - x->ndim;
    for (int d = 0; d < out->ndim; ++d) {
      int xd = d - lead;
      int64_t nx = xd >= 0 ? x->shape[xd] : 1, no = out->shape[d];
      if (nx == 0 || no % nx != 0)
        fail(op, ": out is ", shape_str(*out), ", x ", shape_str(*x), "; out's dim ", d + 1,
             " must be a multiple of x's");
      P.size[d] = no;
      P.nx[d] = nx;
      P.sx[d] = xd >= 0 ? x->strides[xd] : 0;
      P.shift[d] = shift ? shift[d] % nx : 0;
    }
    switch (dtype_size(x->dtype_id)) {
      case 1:
        periodic_k<uint8_t><<<grid_for(out->count), kThreads, 0, stream()>>>((uint8_t*)out->ptr,
                                                                             (const uint8_t*)x->ptr, P, out->count);
        break;
      case 4:
        periodic_k<uint32_t><<<grid_for(out->count), kThreads, 0, stream()>>>((uint32_t*)out->ptr,
                                                                              (const uint32_t*)x->ptr, P, out->count);
        break;
      default:
        periodic_k<uint64_t><<<grid_for(out->count), kThreads, 0, stream()>>>((uint64_t*)out->ptr,
                                                                              (const uint64_t*)x->ptr, P, out->count);
        break;
    }
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
