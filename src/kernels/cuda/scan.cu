// -- cumsum / cumprod (cumulate) / cumprod_grad ------------------------------------------------------
// Running sums and products along one dim, the CPU's (src/kernels/cpu/sort.cc) to the bit: one thread
// per line walks it in the CPU's order with the CPU's accumulator (double for floats, wrapping uint64
// for integers, written as int64). Parallel over lines only: a few very long lines run on few
// threads (correct, not fast; a block scan is the next step for them).
#include "../../core/kcheck.h"
#include "../../core/lines.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

// Lines (src/core/lines.h): x's lines along dim; the contiguous output's line l starts at
// out_start(l, n) and steps inner.

template <class T, class O, bool FLOAT>
__global__ void cumulate_kernel(O* y, const T* x, Lines L, bool prod, bool reverse) {
  for (long long l = global_index(); l < L.count; l += global_step()) {
    const T* p = x + L.offset(l);
    O* q = y + L.out_start(l, L.n);
    if (FLOAT) {
      double a = prod ? 1.0 : 0.0;
      for (long long s = 0; s < L.n; ++s) {
        long long j = reverse ? L.n - 1 - s : s;
        a = prod ? a * double(p[j * L.stride]) : a + double(p[j * L.stride]);
        q[j * L.inner] = O(a);
      }
    } else {
      unsigned long long a = prod ? 1ull : 0ull;
      for (long long s = 0; s < L.n; ++s) {
        long long j = reverse ? L.n - 1 - s : s;
        unsigned long long v = (unsigned long long)(long long)p[j * L.stride];
        a = prod ? a * v : a + v;
        q[j * L.inner] = O((long long)a);
      }
    }
  }
}

// S_t = gy_t + x_{t+1} S_{t+1} backward, then gx_t = prod_{k<t} x_k * S_t forward (positions t in
// accumulation order); s: n doubles of scratch per line
template <class T>
__global__ void cumprod_grad_kernel(T* gx, const T* x, const T* gy, Lines lx, Lines lg, bool reverse, double* s) {
  for (long long l = global_index(); l < lx.count; l += global_step()) {
    const T* p = x + lx.offset(l);
    const T* g = gy + lg.offset(l);
    T* q = gx + lx.out_start(l, lx.n);
    double* sl = s + l * lx.n;
    const long long n = lx.n;
    double acc = 0;
    for (long long t = n - 1; t >= 0; --t) {
      long long at = reverse ? n - 1 - t : t, next = reverse ? n - 2 - t : t + 1;
      acc = t + 1 < n ? double(g[at * lg.stride]) + double(p[next * lx.stride]) * acc : double(g[at * lg.stride]);
      sl[t] = acc;
    }
    double pre = 1;
    for (long long t = 0; t < n; ++t) {
      long long at = reverse ? n - 1 - t : t;
      q[at * lx.inner] = T(pre * sl[t]);
      pre *= double(p[at * lx.stride]);
    }
  }
}

template <class T, class O, bool FLOAT>
void launch_cumulate(mf_tensor& y, const mf_tensor& x, const Lines& L, bool prod, bool reverse) {
  cumulate_kernel<T, O, FLOAT><<<grid_for(L.count), kThreads, 0, stream()>>>(
      static_cast<O*>(y.ptr), static_cast<const T*>(x.ptr), L, prod, reverse);
}

}  // namespace

int cumulate(mf_tensor* y_p, const mf_tensor* x_p, int32_t dim, int32_t prod, int32_t reverse) {
  const char* op = prod ? "cumprod" : "cumsum";
  return entry(op, [&] {
    mf_tensor& y = *y_p;
    const mf_tensor& x = *x_p;
    kcheck::cumulate(op, y, x, dim);  // the CPU's checks (src/core/lines.h)
    if (x.count == 0) return;
    Lines L(x, x.ndim ? dim : -1);
    switch (x.dtype_id) {
      case MF_FLOAT32: launch_cumulate<float, float, true>(y, x, L, prod, reverse); break;
      case MF_FLOAT64: launch_cumulate<double, double, true>(y, x, L, prod, reverse); break;
      case MF_INT32: launch_cumulate<int32_t, int64_t, false>(y, x, L, prod, reverse); break;
      case MF_INT64: launch_cumulate<int64_t, int64_t, false>(y, x, L, prod, reverse); break;
      case MF_UINT8: launch_cumulate<uint8_t, int64_t, false>(y, x, L, prod, reverse); break;
      default: fail(op, ": x has an unknown dtype");
    }
    check_launch(op);
  });
}

int cumprod_grad(mf_tensor* gx_p, const mf_tensor* x_p, const mf_tensor* gy_p, int32_t dim, int32_t reverse) {
  const char* op = "cumprod_grad";
  return entry(op, [&] {
    mf_tensor& gx = *gx_p;
    const mf_tensor &x = *x_p, &gy = *gy_p;
    kcheck::cumprod_grad(op, gx, x, gy, dim);
    kcheck::float_dtype(op, "x", x);
    kcheck::dtype(op, "gy", gy, x.dtype_id, " like x");
    kcheck::dtype(op, "gx", gx, x.dtype_id, " like x");
    if (x.count == 0) return;
    int d = x.ndim ? dim : -1;
    Lines lx(x, d), lg(gy, d);
    Scratch s(size_t(x.count) * sizeof(double));
    if (x.dtype_id == MF_FLOAT32)
      cumprod_grad_kernel<float><<<grid_for(lx.count), kThreads, 0, stream()>>>(
          static_cast<float*>(gx.ptr), static_cast<const float*>(x.ptr), static_cast<const float*>(gy.ptr), lx, lg,
          reverse != 0, s.as<double>());
    else
      cumprod_grad_kernel<double><<<grid_for(lx.count), kThreads, 0, stream()>>>(
          static_cast<double*>(gx.ptr), static_cast<const double*>(x.ptr), static_cast<const double*>(gy.ptr), lx,
          lg, reverse != 0, s.as<double>());
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
