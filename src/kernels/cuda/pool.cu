// -- batch_norm / max_pool2d / avg_pool2d / adaptive_avg_pool2d (and the pooling gradients) --------
// Direct kernels with the CPU's rules (src/kernels/cpu/pool.cc, norm.cc). Forward pooling: a thread
// per output over its window. Gradients gather instead of scattering: a thread per input element
// adds the shares of the windows covering it in the CPU's (row-major) order, so no atomics and the
// same sums every run. batch_norm: a block per channel, statistics in double as the CPU.
#include "../../core/kcheck.h"
#include "../../core/nchw.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

// Pool, pool_of, Span, span, adaptive_span and the operand checks: src/core/nchw.h, the CPU's.

// the outputs along one axis whose windows cover input index h: [first, last]
__device__ __forceinline__ void covering(long long h, long long k, long long s, long long p, long long outs,
                                         long long* first, long long* last) {
  long long lo = h + p - k + 1;  // oh * s >= lo
  long long f = lo <= 0 ? 0 : (lo + s - 1) / s;
  long long l = (h + p) / s;
  *first = f;
  *last = l < outs - 1 ? l : outs - 1;
}

// b displaces a when larger or NaN (a NaN, once in, stays)
template <class T>
__device__ __forceinline__ T max_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}

template <class T>
__global__ void max_pool_kernel(T* y, const T* x, Pool g) {
  long long n = g.N * g.C * g.Ho * g.Wo;
  for (long long i = global_index(); i < n; i += global_step()) {
    long long ow = i % g.Wo, oh = (i / g.Wo) % g.Ho, c = (i / (g.Wo * g.Ho)) % g.C, b = i / (g.Wo * g.Ho * g.C);
    const T* xp = x + b * g.xs[0] + c * g.xs[1];
    Span h = span(oh, g.kh, g.sh, g.ph, g.H, false), w = span(ow, g.kw, g.sw, g.pw, g.W, false);
    T m = xp[h.lo * g.xs[2] + w.lo * g.xs[3]];
    for (long long r = h.lo; r < h.hi; ++r)
      for (long long k = w.lo; k < w.hi; ++k) m = max_nan(m, xp[r * g.xs[2] + k * g.xs[3]]);
    y[i] = m;
  }
}

// the flat (row * W + col) position of window (oh, ow)'s first maximum, or its first NaN
template <class T>
__device__ long long window_argmax(const T* xp, const long long* xs, const Pool& g, long long oh, long long ow) {
  Span h = span(oh, g.kh, g.sh, g.ph, g.H, false), w = span(ow, g.kw, g.sw, g.pw, g.W, false);
  long long best = h.lo * g.W + w.lo;
  T m = xp[h.lo * xs[2] + w.lo * xs[3]];
  for (long long r = h.lo; r < h.hi && m == m; ++r)
    for (long long k = w.lo; k < w.hi; ++k) {
      T v = xp[r * xs[2] + k * xs[3]];
      if (v > m || v != v) {
        m = v;
        best = r * g.W + k;
        if (v != v) break;
      }
    }
  return best;
}

template <class T>
__global__ void max_pool_backward_kernel(T* gx, const T* gy, const T* x, Pool g, Layout xl) {
  long long n = g.N * g.C * g.H * g.W;
  for (long long i = global_index(); i < n; i += global_step()) {
    long long iw = i % g.W, ih = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, b = i / (g.W * g.H * g.C);
    const T* xp = x + b * xl.stride[0] + c * xl.stride[1];
    const T* gp = gy + b * g.xs[0] + c * g.xs[1];
    long long h0, h1, w0, w1, me = ih * g.W + iw;
    covering(ih, g.kh, g.sh, g.ph, g.Ho, &h0, &h1);
    covering(iw, g.kw, g.sw, g.pw, g.Wo, &w0, &w1);
    T acc = T(0);
    for (long long oh = h0; oh <= h1; ++oh)
      for (long long ow = w0; ow <= w1; ++ow)
        if (window_argmax(xp, xl.stride, g, oh, ow) == me) acc += gp[oh * g.xs[2] + ow * g.xs[3]];
    gx[i] = acc;
  }
}

template <class T>
__global__ void avg_pool_kernel(T* y, const T* x, Pool g, bool include_pad, bool adaptive) {
  long long n = g.N * g.C * g.Ho * g.Wo;
  for (long long i = global_index(); i < n; i += global_step()) {
    long long ow = i % g.Wo, oh = (i / g.Wo) % g.Ho, c = (i / (g.Wo * g.Ho)) % g.C, b = i / (g.Wo * g.Ho * g.C);
    const T* xp = x + b * g.xs[0] + c * g.xs[1];
    Span h = adaptive ? adaptive_span(oh, g.H, g.Ho) : span(oh, g.kh, g.sh, g.ph, g.H, include_pad);
    Span w = adaptive ? adaptive_span(ow, g.W, g.Wo) : span(ow, g.kw, g.sw, g.pw, g.W, include_pad);
    T s = T(0);
    for (long long k = w.lo; k < w.hi; ++k) {  // column sums over the rows, then across: the CPU's order
      T col = T(0);
      for (long long r = h.lo; r < h.hi; ++r) col += xp[r * g.xs[2] + k * g.xs[3]];
      s += col;
    }
    y[i] = s / T(h.div * w.div);
  }
}

template <class T>
__global__ void avg_pool_backward_kernel(T* gx, const T* gy, Pool g, bool include_pad, bool adaptive) {
  long long n = g.N * g.C * g.H * g.W;
  for (long long i = global_index(); i < n; i += global_step()) {
    long long iw = i % g.W, ih = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, b = i / (g.W * g.H * g.C);
    const T* gp = gy + b * g.xs[0] + c * g.xs[1];
    long long h0, h1, w0, w1;
    if (adaptive) {  // windows may overlap by one: scan from the first whose end passes ih
      h0 = ih * g.Ho / g.H;
      while (h0 > 0 && adaptive_span(h0 - 1, g.H, g.Ho).hi > ih) --h0;
      h1 = h0;
      while (h1 + 1 < g.Ho && adaptive_span(h1 + 1, g.H, g.Ho).lo <= ih) ++h1;
      w0 = iw * g.Wo / g.W;
      while (w0 > 0 && adaptive_span(w0 - 1, g.W, g.Wo).hi > iw) --w0;
      w1 = w0;
      while (w1 + 1 < g.Wo && adaptive_span(w1 + 1, g.W, g.Wo).lo <= iw) ++w1;
    } else {
      covering(ih, g.kh, g.sh, g.ph, g.Ho, &h0, &h1);
      covering(iw, g.kw, g.sw, g.pw, g.Wo, &w0, &w1);
    }
    T acc = T(0);
    for (long long oh = h0; oh <= h1; ++oh) {
      Span h = adaptive ? adaptive_span(oh, g.H, g.Ho) : span(oh, g.kh, g.sh, g.ph, g.H, include_pad);
      if (ih < h.lo || ih >= h.hi) continue;
      T row = T(0);
      for (long long ow = w0; ow <= w1; ++ow) {
        Span w = adaptive ? adaptive_span(ow, g.W, g.Wo) : span(ow, g.kw, g.sw, g.pw, g.W, include_pad);
        if (iw < w.lo || iw >= w.hi) continue;
        row += gp[oh * g.xs[2] + ow * g.xs[3]] / T(h.div * w.div);
      }
      acc += row;
    }
    gx[i] = acc;
  }
}

template <class T>
void launch_max(mf_tensor& y, const mf_tensor& x, const Pool& g) {
  long long n = y.count;
  if (n == 0) return;
  max_pool_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T*>(y.ptr), static_cast<const T*>(x.ptr), g);
}
template <class T>
void launch_max_backward(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& x, const Pool& g) {
  long long n = gx.count;
  if (n == 0) return;
  max_pool_backward_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(
      static_cast<T*>(gx.ptr), static_cast<const T*>(gy.ptr), static_cast<const T*>(x.ptr), g, layout_of(x));
}
template <class T>
void launch_avg(mf_tensor& y, const mf_tensor& x, const Pool& g, bool include_pad, bool adaptive) {
  long long n = y.count;
  if (n == 0) return;
  avg_pool_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T*>(y.ptr), static_cast<const T*>(x.ptr), g,
                                                            include_pad, adaptive);
}
template <class T>
void launch_avg_backward(mf_tensor& gx, const mf_tensor& gy, const Pool& g, bool include_pad, bool adaptive) {
  long long n = gx.count;
  if (n == 0) return;
  avg_pool_backward_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(
      static_cast<T*>(gx.ptr), static_cast<const T*>(gy.ptr), g, include_pad, adaptive);
}

// -- batch_norm ------------------------------------------------------------------------------------
__device__ __forceinline__ double block_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __shared__ double part[kThreads / 32];
  __syncthreads();
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  double s = 0;
  for (int i = 0; i < kThreads / 32; ++i) s += part[i];
  return s;
}

template <class T>
__global__ void batch_norm_kernel(T* y, const T* x, const T* w, const T* bias, long long N, long long C, long long inner,
                                  long long ws, long long bs, double eps) {
  for (long long c = blockIdx.x; c < C; c += gridDim.x) {
    long long cnt = N * inner;
    double s = 0;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) s += double(x[((e / inner) * C + c) * inner + e % inner]);
    double mean = cnt > 0 ? block_sum(s) / double(cnt) : 0.0, sq = 0;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      double d = double(x[((e / inner) * C + c) * inner + e % inner]) - mean;
      sq += d * d;
    }
    sq = block_sum(sq);
    double var = cnt > 0 ? sq / double(cnt) : 0.0;  // biased, as normalisation uses
    double scale = double(w[c * ws]) / sqrt(var + eps), shift = double(bias[c * bs]) - mean * scale;
    for (long long e = threadIdx.x; e < cnt; e += blockDim.x) {
      long long at = ((e / inner) * C + c) * inner + e % inner;
      y[at] = T(double(x[at]) * scale + shift);
    }
  }
}

}  // namespace

int max_pool2d(mf_tensor* y, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph, int32_t pw) {
  return entry("max_pool2d", [&] {
    const int32_t kp[] = {kh, kw, sh, sw, ph, pw};
    on_device("max_pool2d", "y", *y);
    on_device("max_pool2d", "x", *x);
    kcheck::pool_types("max_pool2d", *y, *x, nullptr, true);
    Pool g = pool_of("max_pool2d", *x, *y, *x, kp);
    if (x->dtype_id == MF_FLOAT32) launch_max<float>(*y, *x, g);
    else launch_max<double>(*y, *x, g);
    check_launch("max_pool2d");
  });
}

int max_pool2d_backward(mf_tensor* gx, const mf_tensor* gy, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh,
                        int32_t sw, int32_t ph, int32_t pw) {
  return entry("max_pool2d_backward", [&] {
    const int32_t kp[] = {kh, kw, sh, sw, ph, pw};
    const char* op = "max_pool2d_backward";
    for (const mf_tensor* t : {(const mf_tensor*)gx, gy, x}) on_device(op, "an operand", *t);
    kcheck::pool_types(op, *gx, *gy, x, true);
    Pool g = pool_of(op, *x, *gy, *gy, kp);
    if (shape_of(*gx) != shape_of(*x)) fail(op, ": the output is ", shape_str(*gx), ", x ", shape_str(*x));
    if (x->dtype_id == MF_FLOAT32) launch_max_backward<float>(*gx, *gy, *x, g);
    else launch_max_backward<double>(*gx, *gy, *x, g);
    check_launch(op);
  });
}

int avg_pool2d(mf_tensor* y, const mf_tensor* x, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph, int32_t pw,
               int32_t count_include_pad) {
  return entry("avg_pool2d", [&] {
    const int32_t kp[] = {kh, kw, sh, sw, ph, pw};
    on_device("avg_pool2d", "y", *y);
    on_device("avg_pool2d", "x", *x);
    kcheck::pool_types("avg_pool2d", *y, *x, nullptr, true);
    Pool g = pool_of("avg_pool2d", *x, *y, *x, kp);
    if (x->dtype_id == MF_FLOAT32) launch_avg<float>(*y, *x, g, count_include_pad != 0, false);
    else launch_avg<double>(*y, *x, g, count_include_pad != 0, false);
    check_launch("avg_pool2d");
  });
}

int avg_pool2d_backward(mf_tensor* gx, const mf_tensor* gy, int32_t kh, int32_t kw, int32_t sh, int32_t sw, int32_t ph,
                        int32_t pw, int32_t count_include_pad) {
  return entry("avg_pool2d_backward", [&] {
    const int32_t kp[] = {kh, kw, sh, sw, ph, pw};
    const char* op = "avg_pool2d_backward";
    on_device(op, "gx", *gx);
    on_device(op, "gy", *gy);
    kcheck::pool_types(op, *gx, *gy, nullptr, true);
    Pool g = pool_of(op, *gx, *gy, *gy, kp);
    if (gy->dtype_id == MF_FLOAT32) launch_avg_backward<float>(*gx, *gy, g, count_include_pad != 0, false);
    else launch_avg_backward<double>(*gx, *gy, g, count_include_pad != 0, false);
    check_launch(op);
  });
}

int adaptive_avg_pool2d(mf_tensor* y, const mf_tensor* x) {
  return entry("adaptive_avg_pool2d", [&] {
    const char* op = "adaptive_avg_pool2d";
    on_device(op, "y", *y);
    on_device(op, "x", *x);
    kcheck::pool_types(op, *y, *x, nullptr, true);
    Pool g = pool_of(op, *x, *y, *x, nullptr);
    if (x->dtype_id == MF_FLOAT32) launch_avg<float>(*y, *x, g, false, true);
    else launch_avg<double>(*y, *x, g, false, true);
    check_launch(op);
  });
}

int adaptive_avg_pool2d_backward(mf_tensor* gx, const mf_tensor* gy) {
  return entry("adaptive_avg_pool2d_backward", [&] {
    const char* op = "adaptive_avg_pool2d_backward";
    on_device(op, "gx", *gx);
    on_device(op, "gy", *gy);
    kcheck::pool_types(op, *gx, *gy, nullptr, true);
    Pool g = pool_of(op, *gx, *gy, *gy, nullptr);
    if (gy->dtype_id == MF_FLOAT32) launch_avg_backward<float>(*gx, *gy, g, false, true);
    else launch_avg_backward<double>(*gx, *gy, g, false, true);
    check_launch(op);
  });
}

int batch_norm(mf_tensor* y_p, const mf_tensor* x_p, const mf_tensor* w_p, const mf_tensor* b_p, double eps) {
  return entry("batch_norm", [&] {
    mf_tensor& y = *y_p;
    const mf_tensor &x = *x_p, &w = *w_p, &b = *b_p;
    const char* op = "batch_norm";
    for (const mf_tensor* t : {(const mf_tensor*)y_p, x_p, w_p, b_p}) on_device(op, "an operand", *t);
    kcheck::batch_norm(op, y, x, w, b, true);  // the CPU's checks, and x of a float dtype (src/core/nchw.h)
    long long N = x.shape[0], C = x.shape[1], inner = 1;
    for (int d = 2; d < x.ndim; ++d) inner *= x.shape[d];
    if (C == 0 || x.count == 0) return;
    unsigned grid = unsigned(C < 65535 ? C : 65535);
    if (x.dtype_id == MF_FLOAT32)
      batch_norm_kernel<float><<<grid, kThreads, 0, stream()>>>(static_cast<float*>(y.ptr),
                                                                static_cast<const float*>(x.ptr),
                                                                static_cast<const float*>(w.ptr),
                                                                static_cast<const float*>(b.ptr), N, C, inner,
                                                                w.strides[0], b.strides[0], eps);
    else
      batch_norm_kernel<double><<<grid, kThreads, 0, stream()>>>(static_cast<double*>(y.ptr),
                                                                 static_cast<const double*>(x.ptr),
                                                                 static_cast<const double*>(w.ptr),
                                                                 static_cast<const double*>(b.ptr), N, C, inner,
                                                                 w.strides[0], b.strides[0], eps);
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
