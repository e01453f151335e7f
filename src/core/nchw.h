// What the CPU (src/kernels/cpu/pool.cc, norm.cc, conv.cc) and CUDA (src/kernels/cuda/pool.cu,
// conv.cc) routines of the NCHW ops share: the 4-dim rule, the pooling geometry and its operand
// checks, one axis of a pooling window (host and device: the CUDA kernels take Pool by value), and
// batch_norm's operand checks. Compiled by g++ and nvcc.
#pragma once
#include <cstdint>

#include "kcheck.h"
#include "shape.h"

#if defined(__CUDACC__)
#define MF_NCHW_HD __host__ __device__ __forceinline__
#else
#define MF_NCHW_HD inline
#endif

namespace mf {
namespace kcheck {

// t has 4 dims (N x C x H x W); what names it in the message ("input", "output", "input 1").
inline void nchw(const char* op, const char* what, const mf_tensor& t) {
  if (t.ndim != 4) fail(op, ": ", what, " is ", shape_str(t), "; expected 4 dims (N x C x H x W)");
}

// A pooling routine's dtypes and output: out, a (and b when given) share one dtype, out contiguous;
// strict (the CUDA entries) also checks the metadata of out and a and that a is float first.
inline void pool_types(const char* op, const mf_tensor& out, const mf_tensor& a, const mf_tensor* b, bool strict) {
  if (strict) {
    meta(op, "output", out);
    meta(op, "input", a);
  }
  if (out.dtype_id != a.dtype_id || (b && b->dtype_id != a.dtype_id)) fail(op, ": inputs and output must share one dtype");
  if (strict) float_dtype(op, "input", a);
  if (!out.is_contig) fail(op, ": the output must be contiguous (it is ", shape_str(out), " with other strides)");
}

// batch_norm: x of at least 2 dims (N x C x ...), y of its shape, both contiguous; weight and bias of
// C elements; all of x's dtype (float when float_only: the CUDA entry checks it before the others).
inline void batch_norm(const char* op, const mf_tensor& y, const mf_tensor& x, const mf_tensor& w, const mf_tensor& b,
                       bool float_only) {
  meta(op, "x", x);
  meta(op, "y", y);
  meta(op, "weight", w);
  meta(op, "bias", b);
  if (x.ndim < 2) fail(op, ": x is ", shape_str(x), "; expected at least 2 dims (N x C x ...)");
  same_shape(op, "y", y, "x", x);
  contiguous(op, "x", x);
  contiguous(op, "y", y);
  if (float_only) float_dtype(op, "x", x);
  dtype(op, "y", y, x.dtype_id, " like x");
  dtype(op, "weight", w, x.dtype_id, " like x");
  dtype(op, "bias", b, x.dtype_id, " like x");
  if (w.ndim != 1 || w.shape[0] != x.shape[1] || b.ndim != 1 || b.shape[0] != x.shape[1])
    fail(op, ": weight is ", shape_str(w), ", bias ", shape_str(b), ", x ", shape_str(x), "; expected weight and bias of ",
         x.shape[1], " elements (x's channels, dim 2)");
}

}  // namespace kcheck

// A pooling's plane geometry: N x C planes of H x W (the big, input-sized tensor) pooled to Ho x Wo
// (the small, output-sized one) by kh x kw windows at strides sh, sw with paddings ph, pw (0 for the
// adaptive pools); xs: the strides of the operand read through strides (x forward, gy backward).
struct Pool {
  int64_t N, C, H, W, Ho, Wo;
  int64_t kh, kw, sh, sw, ph, pw;
  int64_t xs[4];
};

// Checks the geometry and returns it. kp: kernel h, w, stride h, w, padding h, w; nullptr for the
// adaptive pools (any output size of at least 1 x 1, or an empty batch).
inline Pool pool_of(const char* op, const mf_tensor& big, const mf_tensor& small, const mf_tensor& strided,
                    const int32_t* kp) {
  kcheck::nchw(op, "input", big);
  kcheck::nchw(op, "output", small);
  Pool g{big.shape[0], big.shape[1], big.shape[2], big.shape[3], small.shape[2], small.shape[3], 0, 0, 0, 0, 0, 0, {}};
  if (small.shape[0] != g.N || small.shape[1] != g.C)
    fail(op, ": ", shape_str(small), " and ", shape_str(big), " disagree in batch or channels");
  if (kp) {
    g.kh = kp[0], g.kw = kp[1], g.sh = kp[2], g.sw = kp[3], g.ph = kp[4], g.pw = kp[5];
    if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0 || 2 * g.ph > g.kh || 2 * g.pw > g.kw)
      fail(op, ": bad kernel_size, stride or padding");
    if (g.H + 2 * g.ph < g.kh || g.W + 2 * g.pw < g.kw || (g.H + 2 * g.ph - g.kh) / g.sh + 1 != g.Ho ||
        (g.W + 2 * g.pw - g.kw) / g.sw + 1 != g.Wo)
      fail(op, ": ", shape_str(small), " is not the pooled size of ", shape_str(big));
  } else if (g.Ho < 1 || g.Wo < 1 || g.H < 1 || g.W < 1) {
    if (g.N * g.C > 0) fail(op, ": cannot pool ", shape_str(big), " to ", shape_str(small));
  }
  for (int d = 0; d < 4; ++d) g.xs[d] = strided.strides[d];
  return g;
}

// One axis of a window: output i covers input [lo, hi) (clipped); div counts the cells that
// PyTorch's divisor counts (with count_include_pad: clipped to the padded input instead).
struct Span {
  int64_t lo, hi, div;
};
MF_NCHW_HD Span span(int64_t i, int64_t k, int64_t s, int64_t p, int64_t n, bool include_pad) {
  int64_t b = i * s - p, e = b + k;
  Span r{b > 0 ? b : 0, e < n ? e : n, 0};
  r.div = include_pad ? (e < n + p ? e : n + p) - b : r.hi - r.lo;
  return r;
}
// adaptive windows (PyTorch's rule): [floor(i*n/out), ceil((i+1)*n/out))
MF_NCHW_HD Span adaptive_span(int64_t i, int64_t n, int64_t out) {
  Span r{i * n / out, ((i + 1) * n + out - 1) / out, 0};
  r.div = r.hi - r.lo;
  return r;
}

}  // namespace mf
