// -- sort / topk / kthvalue --------------------------------------------------------------------------
// The CPU's total order (value_before, src/core/lines.h): by value, NaN above every number, equal
// values by position; so the result is unique and any correct sort gives the CPU's. One thread per line runs a
// bottom-up merge sort of the line's positions in scratch memory (stable, O(n log n) each; parallel
// over lines: a few very long lines are correct but slow, a block sort is the next step for them).
#include "../../core/kcheck.h"
#include "../../core/lines.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

enum { kSortAll = 0, kSortTop = 1, kSortKth = 2 };  // sort_cpu's modes

// mode kSortTop unsorted: the chosen k written in position order (flag the chosen, then walk positions)
template <class T, bool DESC>
__global__ void sort_kernel(T* values, long long* indices, const T* x, Lines L, long long k, int mode, bool sorted,
                            long long* scratch) {
  const long long n = L.n, st = L.stride;
  for (long long l = global_index(); l < L.count; l += global_step()) {
    const T* p = x + L.offset(l);
    long long* a = scratch + l * 2 * n;
    long long* b = a + n;
    for (long long j = 0; j < n; ++j) a[j] = j;
    for (long long w = 1; w < n; w *= 2) {  // bottom-up merge sort of positions a -> b, then swap
      for (long long lo = 0; lo < n; lo += 2 * w) {
        long long mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
        long long i = lo, j = mid, o = lo;
        while (i < mid && j < hi)
          b[o++] = value_before<T, DESC>(p[a[j] * st], p[a[i] * st], a[j], a[i]) ? a[j++] : a[i++];
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
    long long o = L.out_start(l, k), inner = L.inner;
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
  Lines L(x, dim);
  if (L.count == 0 || L.n == 0) return;
  Scratch s(size_t(L.count) * size_t(2 * L.n) * sizeof(long long));
  T* vp = static_cast<T*>(values.ptr);
  long long* ip = static_cast<long long*>(indices.ptr);
  const T* xp = static_cast<const T*>(x.ptr);
  if (descending)
    sort_kernel<T, true><<<grid_for(L.count), kThreads, 0, stream()>>>(vp, ip, xp, L, k, mode, sorted,
                                                                       s.as<long long>());
  else
    sort_kernel<T, false><<<grid_for(L.count), kThreads, 0, stream()>>>(vp, ip, xp, L, k, mode, sorted,
                                                                        s.as<long long>());
}

void sort_impl(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, int64_t k, int mode,
               bool descending, bool sorted) {
  static const char* names[] = {"sort", "topk", "kthvalue"};
  const char* op = names[mode];
  k = kcheck::sort_k(op, values, indices, x, dim, k, mode);  // the CPU's checks (src/core/lines.h)
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
