// The lines of a tensor along one dim, the total order the sorting ops rank them by, and the operand
// checks of the ops that work line by line (max / min over a dim, sort, topk, kthvalue, cumsum, cumprod,
// softmax, softmax cross-entropy). Compiled by g++ (src/kernels/cpu) and nvcc (src/kernels/cuda: Lines goes to
// a kernel by value), so both devices walk, order and check lines alike.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "kcheck.h"
#include "shape.h"

#if defined(__CUDACC__)
#define MF_LINES_HD __host__ __device__ __forceinline__
#else
#define MF_LINES_HD inline
#endif

namespace mf {

// The lines of t along dim (0-based; -1 or any dim of a 0-dim tensor: one line of one element): n
// elements `stride` apart, one line per index of the other dims, numbered row-major over them.
// A contiguous output of t's shape holds line l from out_start(l), stepping `inner` (the product of
// the sizes after dim).
struct Lines {
  int64_t n = 1, stride = 1, count = 1, inner = 1;
  int nk = 0;
  int64_t kshape[kMaxDims], kstride[kMaxDims];
  Lines(const mf_tensor& t, int dim) {
    for (int d = 0; d < t.ndim; ++d) {
      if (d == dim) {
        n = t.shape[d];
        stride = t.strides[d];
      } else {
        kshape[nk] = t.shape[d];
        kstride[nk++] = t.strides[d];
        count *= t.shape[d];
      }
      if (d > dim) inner *= t.shape[d];
    }
  }
  // the element offset of line l's first element in t
  MF_LINES_HD int64_t offset(int64_t l) const {
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      int64_t q = l / kshape[d];
      off += (l - q * kshape[d]) * kstride[d];
      l = q;
    }
    return off;
  }
  // where line l starts in a contiguous tensor of t's shape with dim of size len (n: t's own shape)
  MF_LINES_HD int64_t out_start(int64_t l, int64_t len) const { return (l / inner) * len * inner + l % inner; }
};

template <typename T>
MF_LINES_HD bool is_nan_value(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  else return false;
}

// The total order sort, topk and kthvalue rank by: x at position a before y at position b (a != b)?
// By value, NaN above every number (PyTorch's order: last ascending, first descending), equal values
// by position, so the result is the one a stable sort gives.
template <typename T, bool Descending>
MF_LINES_HD bool value_before(T x, T y, int64_t a, int64_t b) {
  bool nx = is_nan_value(x), ny = is_nan_value(y);
  if (nx || ny) return nx == ny ? a < b : (Descending ? nx : ny);
  if (Descending) {  // the values' order reverses, the positions' never does
    T t = x;
    x = y;
    y = t;
  }
  return x < y || (!(y < x) && a < b);
}

namespace kcheck {

// dim (0-based) names a dim of x; a 0-dim tensor takes 0 or -1.
inline void line_dim(const char* op, const mf_tensor& x, int dim) {
  if (x.ndim == 0 ? (dim != 0 && dim != -1) : (dim < 0 || dim >= x.ndim))
    fail(op, ": dim ", dim + 1, " out of range for x of size ", shape_str(x));
}

// out has x's shape with dim's size replaced by `along` (or dropped, when may_drop).
inline void along_shape(const char* op, const char* name, const mf_tensor& out, const mf_tensor& x, int dim,
                        int64_t along, bool may_drop) {
  bool ok = true;
  if (x.ndim == 0) {
    ok = out.ndim == 0 || (out.ndim == 1 && out.shape[0] == along);
  } else if (out.ndim == x.ndim) {
    for (int d = 0; d < x.ndim && ok; ++d) ok = out.shape[d] == (d == dim ? along : x.shape[d]);
  } else if (may_drop && out.ndim == x.ndim - 1) {
    for (int d = 0, i = 0; d < x.ndim && ok; ++d)
      if (d != dim) ok = out.shape[i++] == x.shape[d];
  } else {
    ok = false;
  }
  if (!ok)
    fail(op, ": ", name, " is ", shape_str(out), ", x is ", shape_str(x), "; expected x's shape with dim ", dim + 1,
         may_drop ? " reduced" : " of size ", may_drop ? "" : std::to_string(along));
}

// max_dim / min_dim (op "max" or "min"): values and indices contiguous, x's shape with dim reduced,
// values of x's dtype, int64 indices, and a dim that is not empty.
inline void max_dim(const char* op, const mf_tensor& values, const mf_tensor& indices, const mf_tensor& x, int dim) {
  meta(op, "x", x);
  meta(op, "values", values);
  meta(op, "indices", indices);
  line_dim(op, x, dim);
  contiguous(op, "values", values);
  contiguous(op, "indices", indices);
  dtype(op, "values", values, x.dtype_id, " like x");
  dtype(op, "indices", indices, MF_INT64);
  along_shape(op, "values", values, x, dim, 1, true);
  same_shape(op, "indices", indices, "values", values);
  if (x.ndim > 0 && x.shape[dim] == 0)
    fail(op, ": cannot reduce over dim ", dim + 1, " of size 0 (x is ", shape_str(x), ")");
}

// sort (mode 0), topk (1), kthvalue (2): returns k checked (the size of dim for sort).
inline int64_t sort_k(const char* op, const mf_tensor& values, const mf_tensor& indices, const mf_tensor& x, int dim,
                      int64_t k, int mode) {
  meta(op, "x", x);
  meta(op, "values", values);
  meta(op, "indices", indices);
  line_dim(op, x, dim);
  int64_t n = x.ndim ? x.shape[dim] : 1;
  if (mode == 0) k = n;
  if (mode == 2 ? (k < 1 || k > n) : (k < 0 || k > n))
    fail(op, ": k is ", k, "; expected ", mode == 2 ? "1" : "0", "..", n, " (the size of dim ", dim + 1, " of x, ",
         shape_str(x), ")");
  contiguous(op, "values", values);
  contiguous(op, "indices", indices);
  dtype(op, "values", values, x.dtype_id, " like x");
  dtype(op, "indices", indices, MF_INT64);
  along_shape(op, "values", values, x, dim, mode == 2 ? 1 : k, mode == 2);
  same_shape(op, "indices", indices, "values", values);
  return k;
}

// cumsum / cumprod: y contiguous, x's shape; x's dtype for floats, int64 for integers.
inline void cumulate(const char* op, const mf_tensor& y, const mf_tensor& x, int dim) {
  meta(op, "x", x);
  meta(op, "y", y);
  line_dim(op, x, dim);
  contiguous(op, "y", y);
  same_shape(op, "y", y, "x", x);
  bool is_float = dtype_is_float(x.dtype_id);
  dtype(op, "y", y, is_float ? x.dtype_id : int(MF_INT64), is_float ? " like x" : " (integers accumulate in int64)");
}

// cumprod_grad: gy and gx of x's shape and dtype, gx contiguous.
inline void cumprod_grad(const char* op, const mf_tensor& gx, const mf_tensor& x, const mf_tensor& gy, int dim) {
  meta(op, "x", x);
  meta(op, "gy", gy);
  meta(op, "gx", gx);
  line_dim(op, x, dim);
  same_shape(op, "gy", gy, "x", x);
  same_shape(op, "gx", gx, "x", x);
  contiguous(op, "gx", gx);
}

// softmax / log_softmax along dim: y of x's shape and dtype, writable (float x too when float_only).
inline void softmax(const char* op, const mf_tensor& y, const mf_tensor& x, int dim, bool float_only) {
  meta(op, "x", x);
  meta(op, "y", y);
  if (dim < 0 || dim >= x.ndim) fail(op, ": dim ", dim + 1, " out of range for x of size ", shape_str(x));
  same_shape(op, "y", y, "x", x);
  dtype(op, "y", y, x.dtype_id, " like x");
  writable(op, "y", y);
  if (float_only) float_dtype(op, "x", x);
}

// softmax_cross_entropy: labels of the logits' shape, loss contiguous of their shape without dim (or
// with dim of size 1), both of the logits' dtype.
inline void softmax_xent(const char* op, const mf_tensor& loss, const mf_tensor& x, const mf_tensor& labels, int dim,
                         bool float_only) {
  if (dim < 0 || dim >= x.ndim) fail(op, ": dim ", dim + 1, " out of range");
  meta(op, "logits", x);
  meta(op, "labels", labels);
  meta(op, "loss", loss);
  if (float_only) float_dtype(op, "logits", x);
  dtype(op, "labels", labels, x.dtype_id, " like the logits");
  dtype(op, "loss", loss, x.dtype_id, " like the logits");
  contiguous(op, "loss", loss);
  bool ok = loss.ndim == x.ndim || loss.ndim == x.ndim - 1;
  for (int d = 0, i = 0; d < x.ndim && ok; ++d) {
    if (d == dim) {
      if (loss.ndim == x.ndim) ok = loss.shape[i++] == 1;
      continue;
    }
    ok = loss.shape[i++] == x.shape[d];
  }
  if (!ok)
    fail(op, ": loss is ", shape_str(loss), ", logits ", shape_str(x), "; expected the logits' shape without dim ",
         dim + 1);
  for (int d = 0; d < x.ndim; ++d)
    if (labels.ndim != x.ndim || labels.shape[d] != x.shape[d])
      fail(op, ": labels are ", shape_str(labels), ", logits ", shape_str(x), "; expected one shape");
}

}  // namespace kcheck
}  // namespace mf
