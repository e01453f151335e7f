// -- sort / topk / kthvalue --------------------------------------------------------------------------
// The CPU's total order (src/kernels/cpu/sort.cc): by value, NaN above every number, equal values by
// position; so the result is unique and any correct sort gives the CPU's. One thread per line runs a
// bottom-up merge sort of the line's positions in scratch memory (stable, O(n log n) each; parallel
// over lines: a few very long lines are correct but slow, a block sort is the next step for them).
#include "../../core/kcheck.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

enum { kSortAll = 0, kSortTop = 1, kSortKth = 2 };  // sort_cpu's modes

void check_dim(const char* op, const mf_tensor& x, int dim) {
  if (x.ndim == 0 ? (dim != 0 && dim != -1) : (dim < 0 || dim >= x.ndim))
    fail(op, ": dim ", dim + 1, " out of range for x of size ", shape_str(x));
}

// out has x's shape with dim's size replaced by `along` (or dropped when may_drop)
void check_along_shape(const char* op, const char* name, const mf_tensor& out, const mf_tensor& x, int dim,
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

// a before b in the order (positions a != b)
template <class T, bool DESC>
__device__ __forceinline__ bool before(const T* p, long long st, long long a, long long b) {
  T x = p[a * st], y = p[b * st];
  bool nx = x != x, ny = y != y;
  if (nx || ny) return nx == ny ? a < b : (DESC ? nx : ny);
  if (DESC) {
    T t = x;
    x = y;
    y = t;
  }
  return x < y || (!(y < x) && a < b);
}

// mode kSortTop unsorted: the chosen k written in position order (flag the chosen, then walk positions)
template <class T, bool DESC>
__global__ void sort_kernel(T* values, long long* indices, const T* x, Layout kept, long long lines, long long n,
                            long long st, long long k, int mode, bool sorted, long long inner, long long* scratch) {
  for (long long l = global_index(); l < lines; l += global_step()) {
    const T* p = x + offset_of(kept, l);
    long long* a = scratch + l * 2 * n;
    long long* b = a + n;
    for (long long j = 0; j < n; ++j) a[j] = j;
    for (long long w = 1; w < n; w *= 2) {  // bottom-up merge sort of positions a -> b, then swap
      for (long long lo = 0; lo < n; lo += 2 * w) {
        long long mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
        long long i = lo, j = mid, o = lo;
        while (i < mid && j < hi) b[o++] = before<T, DESC>(p, st, a[j], a[i]) ? a[j++] : a[i++];
        while (i < mid) b[o++] = a[i++];
        while (j < hi) b[o++] = a[j++];
      }
      long long* t = a;
      a = b;
      b = t;
    }
    if (mode == kSortKth) {
      values[l] = p[a[k - 1] * st];
      indices[l] = a[k - 1] + 1;
      continue;
    }
    long long o = (l / inner) * k * inner + l % inner;
    if (mode == kSortTop && !sorted) {  // b is free: flag the chosen positions, then take them in order
      for (long long j = 0; j < n; ++j) b[j] = 0;
      for (long long j = 0; j < k; ++j) b[a[j]] = 1;
      long long m = 0;
      for (long long j = 0; j < n && m < k; ++j)
        if (b[j]) {
          values[o + m * inner] = p[j * st];
          indices[o + m * inner] = j + 1;
          ++m;
        }
      continue;
    }
    for (long long j = 0; j < k; ++j) {
      values[o + j * inner] = p[a[j] * st];
      indices[o + j * inner] = a[j] + 1;
    }
  }
}

template <class T>
void launch_sort(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, long long k, int mode,
                 bool descending, bool sorted) {
  Layout kept{};
  long long n = 1, st = 1, lines = 1, inner = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d == dim) {
      n = x.shape[d];
      st = x.strides[d];
    } else {
      kept.shape[kept.ndim] = x.shape[d];
      kept.stride[kept.ndim++] = x.strides[d];
      lines *= x.shape[d];
    }
    if (d > dim && mode != kSortKth) inner *= x.shape[d];
  }
  if (lines == 0 || n == 0) return;
  Scratch s(size_t(lines) * size_t(2 * n) * sizeof(long long));
  T* vp = static_cast<T*>(values.ptr);
  long long* ip = static_cast<long long*>(indices.ptr);
  const T* xp = static_cast<const T*>(x.ptr);
  if (descending)
    sort_kernel<T, true><<<grid_for(lines), kThreads, 0, stream()>>>(vp, ip, xp, kept, lines, n, st, k, mode, sorted,
                                                                     inner, s.as<long long>());
  else
    sort_kernel<T, false><<<grid_for(lines), kThreads, 0, stream()>>>(vp, ip, xp, kept, lines, n, st, k, mode, sorted,
                                                                      inner, s.as<long long>());
}

void sort_impl(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, int64_t k, int mode,
               bool descending, bool sorted) {
  static const char* names[] = {"sort", "topk", "kthvalue"};
  const char* op = names[mode];
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "values", values);
  kcheck::meta(op, "indices", indices);
  check_dim(op, x, dim);
  int64_t n = x.ndim ? x.shape[dim] : 1;
  if (mode == kSortAll) k = n;
  if (mode == kSortKth ? (k < 1 || k > n) : (k < 0 || k > n))
    fail(op, ": k is ", k, "; expected ", mode == kSortKth ? "1" : "0", "..", n, " (the size of dim ", dim + 1,
         " of x, ", shape_str(x), ")");
  kcheck::contiguous(op, "values", values);
  kcheck::contiguous(op, "indices", indices);
  kcheck::dtype(op, "values", values, x.dtype_id, " like x");
  kcheck::dtype(op, "indices", indices, MF_INT64);
  check_along_shape(op, "values", values, x, dim, mode == kSortKth ? 1 : k, mode == kSortKth);
  kcheck::same_shape(op, "indices", indices, "values", values);
  if (values.count == 0) return;
  int d = x.ndim ? dim : -1;
  switch (x.dtype_id) {
    case MF_FLOAT32: launch_sort<float>(values, indices, x, d, k, mode, descending, sorted); break;
    case MF_FLOAT64: launch_sort<double>(values, indices, x, d, k, mode, descending, sorted); break;
    case MF_INT32: launch_sort<int32_t>(values, indices, x, d, k, mode, descending, sorted); break;
    case MF_INT64: launch_sort<int64_t>(values, indices, x, d, k, mode, descending, sorted); break;
    case MF_UINT8: launch_sort<uint8_t>(values, indices, x, d, k, mode, descending, sorted); break;
    default: fail(op, ": x has an unknown dtype");
  }
  check_launch(op);
}

}  // namespace

int sort(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int32_t descending) {
  return entry("sort", [&] { sort_impl(*values, *indices, *x, dim, 0, kSortAll, descending != 0, true); });
}

int topk(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int64_t k, int32_t largest,
         int32_t sorted) {
  return entry("topk", [&] { sort_impl(*values, *indices, *x, dim, k, kSortTop, largest != 0, sorted != 0); });
}

int kthvalue(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int64_t k) {
  return entry("kthvalue", [&] { sort_impl(*values, *indices, *x, dim, k, kSortKth, false, true); });
}

}  // namespace cuda
}  // namespace mf
