// -- pooling ---------------------------------------------------------------------------------------
// Max / average / adaptive average pooling (NCHW) and their gradients over (N, C) planes, row by row:
// a vertical pass over a window's input rows (contiguous, vectorized) and a horizontal one over its columns.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../../core/error.h"
#include "../../core/nchw.h"
#include "../../core/threads.h"
#include "copy.h"
#include "kernels.h"

namespace mf {

namespace {

// Pool, pool_of, Span, span and adaptive_span: src/core/nchw.h (the CUDA kernels' too).

// Runs f(plane, n, c, row) over the N*C planes; row is a scratch row of `row` elements per thread.
template <typename T, typename F>
void for_planes(const Pool& g, int64_t cost, int64_t row, F&& f) {
  parallel_for(g.N * g.C, cost, [&](int64_t b, int64_t e) {
    std::vector<T> tmp(size_t(std::max<int64_t>(row, 1)));
    for (int64_t pl = b; pl < e; ++pl) f(pl, pl / g.C, pl % g.C, tmp.data());
  });
}

// max_pool2d's gradient writes gx plane after plane, row after row: a fresh eager result's lines are
// cold and each vector store waits for its line's read for ownership. For rows shorter than
// kPrefetchRowMax bytes, row() asks for the lines kPrefetchAhead bytes ahead first (copy.h's
// prefetch_ahead), within the thread's planes. (4x16x16x16, 1 thread: the 2x2 gradient into 300
// outputs in turn 3.4-3.9 -> 2.6-3.0 us, warm 2.4 -> 2.5; the average gradients' rows and adaptive's
// 1 KB plane fills gained nothing measurable from it, and lost up to 0.1 us warm.)
struct Ahead {
  uintptr_t next;
  const void* end;
  bool on;
  void row(const void* b, const void* e) {
    if (on) prefetch_ahead(b, e, end, next);
  }
};
// for_planes for a gradient into gx, with no scratch row: f(plane, n, c, ahead); row_bytes: the rows it writes
template <typename T, typename F>
void for_grad_planes(const Pool& g, T* gx, int64_t cost, int64_t row_bytes, F&& f) {
  const int64_t P = g.H * g.W;
  parallel_for(g.N * g.C, cost, [&](int64_t b, int64_t e) {
    Ahead a{uintptr_t(gx + b * P), gx + e * P, row_bytes < kPrefetchRowMax};
    for (int64_t pl = b; pl < e; ++pl) f(pl, pl / g.C, pl % g.C, a);
  });
}

// b displaces the running maximum a when it is larger or NaN (a NaN, once in, stays); bitwise
// operators so the compiler emits selects, not branches on random data
template <typename T>
inline T max_nan(T a, T b) { return ((b > a) | (b != b)) ? b : a; }

// dst[w] = op(dst[w], row[w]) over a row read through its column stride
template <typename T>
inline void row_max(T* dst, const T* r, int64_t n, int64_t s) {
  if (s == 1) {
    for (int64_t w = 0; w < n; ++w) dst[w] = max_nan(dst[w], r[w]);
  } else {
    for (int64_t w = 0; w < n; ++w) dst[w] = max_nan(dst[w], r[w * s]);
  }
}
template <typename T>
inline void row_add(T* dst, const T* r, int64_t n, int64_t s) {
  if (s == 1) {
    for (int64_t w = 0; w < n; ++w) dst[w] += r[w];
  } else {
    for (int64_t w = 0; w < n; ++w) dst[w] += r[w * s];
  }
}
template <typename T>
inline void row_copy(T* dst, const T* r, int64_t n, int64_t s) {
  if (s == 1) {
    std::memcpy(dst, r, size_t(n) * sizeof(T));
  } else {
    for (int64_t w = 0; w < n; ++w) dst[w] = r[w * s];
  }
}

// -- vectors ------------------------------------------------------------------------------------------
// GCC/Clang vector extensions (AVX with -march=native, SSE otherwise) for the 2x2 windows: the
// compiler will not vectorize the NaN-aware selects by itself, and branches on random data miss.
template <typename T, int B>
struct Vec {
  static constexpr int L = B / int(sizeof(T));
  typedef T V __attribute__((vector_size(B)));
  typedef std::conditional_t<sizeof(T) == 4, int32_t, int64_t> I;
  typedef I M __attribute__((vector_size(B)));
};
template <typename V>
inline V vload(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
inline void vstore(void* p, V v) { std::memcpy(p, &v, sizeof v); }

// the even and odd elements of 2L consecutive values, and back
using F8 = Vec<float, 32>::V;
using F4 = Vec<float, 16>::V;
using D4 = Vec<double, 32>::V;
using D2 = Vec<double, 16>::V;
inline void deinterleave(const float* p, F8& e, F8& o) {
  F8 lo = vload<F8>(p), hi = vload<F8>(p + 8);
  e = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
  o = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
}
inline void interleave(float* p, F8 e, F8 o) {
  vstore(p, F8(__builtin_shufflevector(e, o, 0, 8, 1, 9, 2, 10, 3, 11)));
  vstore(p + 8, F8(__builtin_shufflevector(e, o, 4, 12, 5, 13, 6, 14, 7, 15)));
}
inline void deinterleave(const float* p, F4& e, F4& o) {
  F4 lo = vload<F4>(p), hi = vload<F4>(p + 4);
  e = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
  o = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
}
inline void interleave(float* p, F4 e, F4 o) {
  vstore(p, F4(__builtin_shufflevector(e, o, 0, 4, 1, 5)));
  vstore(p + 4, F4(__builtin_shufflevector(e, o, 2, 6, 3, 7)));
}
inline void deinterleave(const double* p, D4& e, D4& o) {
  D4 lo = vload<D4>(p), hi = vload<D4>(p + 4);
  e = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
  o = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
}
inline void interleave(double* p, D4 e, D4 o) {
  vstore(p, D4(__builtin_shufflevector(e, o, 0, 4, 1, 5)));
  vstore(p + 4, D4(__builtin_shufflevector(e, o, 2, 6, 3, 7)));
}
inline void deinterleave(const double* p, D2& e, D2& o) {
  D2 lo = vload<D2>(p), hi = vload<D2>(p + 2);
  e = __builtin_shufflevector(lo, hi, 0, 2);
  o = __builtin_shufflevector(lo, hi, 1, 3);
}
inline void interleave(double* p, D2 e, D2 o) {
  vstore(p, D2(__builtin_shufflevector(e, o, 0, 2)));
  vstore(p + 2, D2(__builtin_shufflevector(e, o, 1, 3)));
}

template <typename M, typename V>
inline V pick(M m, V a, V b) { return (V)(((M)a & m) | ((M)b & ~m)); }  // a where m, else b

// Runs step(i) for the n windows of a row, L at a time in the widest vector that fits (the last
// vector overlapping the one before: each step writes the same values for the same windows),
// the rest one by one through scalar(i); for rows too short for any vector.
template <typename T, typename F32, typename F16, typename F1>
inline void windows(int64_t n, F32&& wide, F16&& narrow, F1&& scalar) {
  constexpr int64_t L = Vec<T, 32>::L, l = Vec<T, 16>::L;
  if (n >= L) {
    for (int64_t i = 0; i + L <= n; i += L) wide(i);
    if (n % L) wide(n - L);
  } else if (n >= l) {
    for (int64_t i = 0; i + l <= n; i += l) narrow(i);
    if (n % l) narrow(n - l);
  } else {
    for (int64_t i = 0; i < n; ++i) scalar(i);
  }
}

// out[i] = the maximum (or a NaN) of window i of two rows, for n 2x2 windows at stride 2
template <typename T, int B>
inline void max2x2_step(const T* r0, const T* r1, T* out) {
  using V = typename Vec<T, B>::V;
  using M = typename Vec<T, B>::M;
  V a0, a1, b0, b1;
  deinterleave(r0, a0, a1);
  deinterleave(r1, b0, b1);
  auto mx = [](V a, V b) { return pick<M>((b > a) | (b != b), b, a); };
  vstore(out, mx(mx(a0, a1), mx(b0, b1)));
}
template <typename T>
void max2x2_row(const T* r0, const T* r1, T* out, int64_t n) {
  windows<T>(
      n, [&](int64_t i) { max2x2_step<T, 32>(r0 + 2 * i, r1 + 2 * i, out + i); },
      [&](int64_t i) { max2x2_step<T, 16>(r0 + 2 * i, r1 + 2 * i, out + i); },
      [&](int64_t i) {
        out[i] = max_nan(max_nan(r0[2 * i], r0[2 * i + 1]), max_nan(r1[2 * i], r1[2 * i + 1]));
      });
}

// The 2x2 / stride 2 gradient of one output row: rows r0, r1 hold the windows' top and bottom
// pairs, g their gradients; writes all four outputs of each window (its gradient or 0). v beats
// the winner m so far (scanning in row-major order) when larger, or the first NaN.
template <typename T, int B>
inline void back2x2_step(const T* r0, const T* r1, const T* g, T* o0, T* o1) {
  using V = typename Vec<T, B>::V;
  using M = typename Vec<T, B>::M;
  auto beats = [](V v, V m) -> M { return (v > m) | ((v != v) & (m == m)); };
  auto keep = [](M m, V a) -> V { return (V)((M)a & m); };
  V a0, a1, b0, b1, gv = vload<V>(g);
  deinterleave(r0, a0, a1);
  deinterleave(r1, b0, b1);
  M t1 = beats(a1, a0), t2 = beats(b1, b0);
  M bt = beats(pick<M>(t2, b1, b0), pick<M>(t1, a1, a0));
  interleave(o0, keep(~bt & ~t1, gv), keep(~bt & t1, gv));
  interleave(o1, keep(bt & ~t2, gv), keep(bt & t2, gv));
}
template <typename T>
void back2x2_row(const T* r0, const T* r1, const T* g, T* o0, T* o1, int64_t n) {
  windows<T>(
      n, [&](int64_t i) { back2x2_step<T, 32>(r0 + 2 * i, r1 + 2 * i, g + i, o0 + 2 * i, o1 + 2 * i); },
      [&](int64_t i) { back2x2_step<T, 16>(r0 + 2 * i, r1 + 2 * i, g + i, o0 + 2 * i, o1 + 2 * i); },
      [&](int64_t i) {
        const T *p = r0 + 2 * i, *q = r1 + 2 * i;
        auto beats = [](T v, T m) { return v > m || (v != v && m == m); };
        bool t1 = beats(p[1], p[0]), t2 = beats(q[1], q[0]);
        bool bt = beats(t2 ? q[1] : q[0], t1 ? p[1] : p[0]);
        T* a = o0 + 2 * i;
        T* b = o1 + 2 * i;
        a[0] = a[1] = b[0] = b[1] = T(0);
        (bt ? b : a)[(bt ? t2 : t1) ? 1 : 0] = g[i];
      });
}

// -- max_pool2d ----------------------------------------------------------------------------------------
template <typename T>
void max_pool_typed(mf_tensor& y, const mf_tensor& x, const Pool& g) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)y.ptr;
  const int64_t s2 = g.xs[2], s3 = g.xs[3];
  const bool two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && s3 == 1;
  for_planes<T>(g, g.H * g.W + g.Ho * g.Wo, g.W, [&](int64_t pl, int64_t n, int64_t c, T* tmp) {
    const T* xpl = xp + n * g.xs[0] + c * g.xs[1];
    T* out = yp + pl * g.Ho * g.Wo;
    for (int64_t oh = 0; oh < g.Ho; ++oh, out += g.Wo) {
      if (two) {  // LeNet's and most CNNs' pooling: one pass, no scratch row
        const T* r0 = xpl + 2 * oh * s2;
        max2x2_row(r0, r0 + s2, out, g.Wo);
        continue;
      }
      Span h = span(oh, g.kh, g.sh, g.ph, g.H, false);
      row_copy(tmp, xpl + h.lo * s2, g.W, s3);
      for (int64_t r = h.lo + 1; r < h.hi; ++r) row_max(tmp, xpl + r * s2, g.W, s3);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        Span w = span(ow, g.kw, g.sw, g.pw, g.W, false);
        T m = tmp[w.lo];
        for (int64_t k = w.lo + 1; k < w.hi; ++k) m = max_nan(m, tmp[k]);
        out[ow] = m;
      }
    }
  });
}

// gx = 0, then each gy element goes to the first maximum of its window (the first NaN, if any)
template <typename T>
void max_pool_backward_typed(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& x, const Pool& g) {
  const T* xp = (const T*)x.ptr;
  const T* gp = (const T*)gy.ptr;
  T* op = (T*)gx.ptr;
  const int64_t s2 = x.strides[2], s3 = x.strides[3];
  const int64_t* gs = gy.strides;
  bool two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && s3 == 1 && gs[3] == 1;
  const int64_t row_bytes = (two ? 2 : g.H) * g.W * int64_t(sizeof(T));
  for_grad_planes<T>(g, op, g.Ho * g.Wo * g.kh * g.kw + g.H * g.W, row_bytes,
                     [&](int64_t pl, int64_t n, int64_t c, Ahead& ahead) {
    const T* xpl = xp + n * x.strides[0] + c * x.strides[1];
    const T* gpl = gp + n * gs[0] + c * gs[1];
    T* out = op + pl * g.H * g.W;
    if (two) {
      // the windows tile the plane: each writes its four elements, then the rows and columns
      // no window covers are zeroed
      for (int64_t oh = 0; oh < g.Ho; ++oh) {
        const T* r0 = xpl + 2 * oh * s2;
        T* o0 = out + 2 * oh * g.W;
        ahead.row(o0, o0 + 2 * g.W);
        back2x2_row(r0, r0 + s2, gpl + oh * gs[2], o0, o0 + g.W, g.Wo);
        if (g.W > 2 * g.Wo) {
          std::fill(o0 + 2 * g.Wo, o0 + g.W, T(0));
          std::fill(o0 + g.W + 2 * g.Wo, o0 + 2 * g.W, T(0));
        }
      }
      std::fill(out + 2 * g.Ho * g.W, out + g.H * g.W, T(0));
      return;
    }
    ahead.row(out, out + g.H * g.W);
    std::fill(out, out + g.H * g.W, T(0));
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      Span h = span(oh, g.kh, g.sh, g.ph, g.H, false);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        Span w = span(ow, g.kw, g.sw, g.pw, g.W, false);
        int64_t best = h.lo * g.W + w.lo;
        T m = xpl[h.lo * s2 + w.lo * s3];
        for (int64_t r = h.lo; r < h.hi && m == m; ++r)
          for (int64_t k = w.lo; k < w.hi; ++k) {
            T v = xpl[r * s2 + k * s3];
            if (v > m || v != v) {
              m = v;
              best = r * g.W + k;
              if (v != v) break;
            }
          }
        out[best] += gpl[oh * gs[2] + ow * gs[3]];
      }
    }
  });
}

// -- avg_pool2d ----------------------------------------------------------------------------------------
// Sums are taken column by column over the window's rows, then across its columns.
template <typename T>
void avg_pool_typed(mf_tensor& y, const mf_tensor& x, const Pool& g, bool include_pad) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)y.ptr;
  const int64_t s2 = g.xs[2], s3 = g.xs[3];
  const bool two = g.kw == 2 && g.sw == 2 && g.pw == 0;
  for_planes<T>(g, g.H * g.W + g.Ho * g.Wo, g.W, [&](int64_t pl, int64_t n, int64_t c, T* tmp) {
    const T* xpl = xp + n * g.xs[0] + c * g.xs[1];
    T* out = yp + pl * g.Ho * g.Wo;
    for (int64_t oh = 0; oh < g.Ho; ++oh, out += g.Wo) {
      Span h = span(oh, g.kh, g.sh, g.ph, g.H, include_pad);
      row_copy(tmp, xpl + h.lo * s2, g.W, s3);
      for (int64_t r = h.lo + 1; r < h.hi; ++r) row_add(tmp, xpl + r * s2, g.W, s3);
      if (two) {
        const T d = T(h.div * 2);
        for (int64_t ow = 0; ow < g.Wo; ++ow) out[ow] = (tmp[2 * ow] + tmp[2 * ow + 1]) / d;
        continue;
      }
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        Span w = span(ow, g.kw, g.sw, g.pw, g.W, include_pad);
        T s = 0;
        for (int64_t k = w.lo; k < w.hi; ++k) s += tmp[k];
        out[ow] = s / T(h.div * w.div);
      }
    }
  });
}

// Writes the gradient row tmp (W values) into rows [lo, hi) of a plane whose rows below `next` hold
// their sums so far: those get tmp added, the others (the first window to reach them) a copy, and
// rows no window reaches zeros. Window rows come in increasing order (their lo and hi never fall),
// so this is the zeroed plane plus each window row in turn, without a zeroing pass: tmp must hold
// what 0 + tmp gives (no -0), and then every sum is the one the zeroed plane would have got.
template <typename T>
inline void spread_rows(T* plane, int64_t W, const T* tmp, int64_t lo, int64_t hi, int64_t& next) {
  for (int64_t r = lo; r < hi && r < next; ++r) row_add(plane + r * W, tmp, W, 1);
  if (hi <= next) return;
  if (lo > next) std::fill(plane + next * W, plane + lo * W, T(0));
  for (int64_t r = std::max(lo, next); r < hi; ++r) std::memcpy(plane + r * W, tmp, size_t(W) * sizeof(T));
  next = hi;
}

// tmp[2i] = tmp[2i+1] = g[i] / d + 0 (the + 0 turns a -0 into the +0 that 0 + (-0) gives) for n
// windows, L at a time (the division vectorized: one scalar division a window bound the loop)
template <typename T, int B>
inline void spread2_step(const T* g, T d, T* o) {
  using V = typename Vec<T, B>::V;
  V v = vload<V>(g) / d + T(0);
  interleave(o, v, v);
}
template <typename T>
void spread2_row(const T* g, T d, T* o, int64_t n) {
  windows<T>(
      n, [&](int64_t i) { spread2_step<T, 32>(g + i, d, o + 2 * i); },
      [&](int64_t i) { spread2_step<T, 16>(g + i, d, o + 2 * i); },
      [&](int64_t i) { o[2 * i] = o[2 * i + 1] = g[i] / d + T(0); });
}

// per output row, the row of what its windows spread over the columns (tmp), added to each input
// row the windows cover (spread_rows: one pass over gx, no zeroing first)
template <typename T>
void avg_pool_backward_typed(mf_tensor& gx, const mf_tensor& gy, const Pool& g, bool include_pad) {
  const T* gp = (const T*)gy.ptr;
  T* op = (T*)gx.ptr;
  const bool two = g.kw == 2 && g.sw == 2 && g.pw == 0;
  for_planes<T>(g, g.H * g.W + g.Ho * g.Wo, g.W, [&](int64_t pl, int64_t n, int64_t c, T* tmp) {
    const T* gpl = gp + n * g.xs[0] + c * g.xs[1];
    T* out = op + pl * g.H * g.W;
    int64_t next = 0;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      Span h = span(oh, g.kh, g.sh, g.ph, g.H, include_pad);
      const T* grow = gpl + oh * g.xs[2];
      if (two) {
        const T d = T(h.div * 2);
        if (g.xs[3] == 1) {
          spread2_row(grow, d, tmp, g.Wo);
        } else {
          for (int64_t ow = 0; ow < g.Wo; ++ow) tmp[2 * ow] = tmp[2 * ow + 1] = grow[ow * g.xs[3]] / d + T(0);
        }
        std::fill(tmp + 2 * g.Wo, tmp + g.W, T(0));
      } else {
        std::fill(tmp, tmp + g.W, T(0));
        for (int64_t ow = 0; ow < g.Wo; ++ow) {
          Span w = span(ow, g.kw, g.sw, g.pw, g.W, include_pad);
          T v = grow[ow * g.xs[3]] / T(h.div * w.div);
          for (int64_t k = w.lo; k < w.hi; ++k) tmp[k] += v;
        }
      }
      spread_rows(out, g.W, tmp, h.lo, h.hi, next);
    }
    if (next < g.H) std::fill(out + next * g.W, out + g.H * g.W, T(0));
  });
}

// -- adaptive_avg_pool2d -------------------------------------------------------------------------------
// the sum of n contiguous values, in four vector accumulators
template <typename T>
T vsum(const T* p, int64_t n) {
  using V = typename Vec<T, 32>::V;
  constexpr int64_t L = Vec<T, 32>::L;
  V a0{}, a1{}, a2{}, a3{};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 += vload<V>(p + i);
    a1 += vload<V>(p + i + L);
    a2 += vload<V>(p + i + 2 * L);
    a3 += vload<V>(p + i + 3 * L);
  }
  for (; i + L <= n; i += L) a0 += vload<V>(p + i);
  V a = (a0 + a1) + (a2 + a3);
  T s = 0;
  for (int64_t k = 0; k < L; ++k) s += a[k];
  for (; i < n; ++i) s += p[i];
  return s;
}

template <typename T>
void adaptive_avg_typed(mf_tensor& y, const mf_tensor& x, const Pool& g) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)y.ptr;
  const int64_t s2 = g.xs[2], s3 = g.xs[3];
  // global pooling (output 1x1) of planes stored contiguously: one vector sum a plane
  const bool global = g.Ho == 1 && g.Wo == 1 && s3 == 1 && (s2 == g.W || g.H == 1);
  for_planes<T>(g, g.H * g.W + g.Ho * g.Wo, g.W, [&](int64_t pl, int64_t n, int64_t c, T* tmp) {
    const T* xpl = xp + n * g.xs[0] + c * g.xs[1];
    T* out = yp + pl * g.Ho * g.Wo;
    if (global) {
      *out = vsum(xpl, g.H * g.W) / T(g.H * g.W);
      return;
    }
    for (int64_t oh = 0; oh < g.Ho; ++oh, out += g.Wo) {
      Span h = adaptive_span(oh, g.H, g.Ho);
      row_copy(tmp, xpl + h.lo * s2, g.W, s3);
      for (int64_t r = h.lo + 1; r < h.hi; ++r) row_add(tmp, xpl + r * s2, g.W, s3);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        Span w = adaptive_span(ow, g.W, g.Wo);
        T s = 0;
        for (int64_t k = w.lo; k < w.hi; ++k) s += tmp[k];
        out[ow] = s / T(h.div * w.div);
      }
    }
  });
}

// Global pooling's gradient into gx of kStreamBytes (copy.h: 16 MiB) or more fills each plane by
// streaming stores, as copy_stream writes copies that size: a vector store waits for its line's read
// for ownership from DRAM (a fresh eager result is cold, and an output that size does not stay in
// the shared L3 under load), where a streaming store writes the whole line without reading it.
// 32x64x56x56 float32, 1 thread, CPU time, load 2.5-5, 6-8 runs interleaved with the plain stores:
// into out= (min / median) 795 / 864 -> 661 / 695 us, eager 847 / 863 -> 680 / 693. Smaller outputs
// keep plain stores: 8x64x56x56 (6.4 MB) streamed lost at best (min 124 -> 160 us) though it gained
// in the median under load (240 -> 190), as copy.h found for a warm 8 MB output.
// p[0, n) = v, the whole 64-byte lines by streaming stores (AVX-512; other builds plain stores);
// the caller calls stream_fence() on each thread before the threads join
template <typename T>
void stream_fill(T* p, int64_t n, T v) {
  int64_t i = 0;
#if defined(__AVX512F__)
  constexpr int64_t L = 64 / int64_t(sizeof(T));
  for (; i < n && (uintptr_t(p + i) & 63) != 0; ++i) p[i] = v;
  if constexpr (std::is_same<T, float>::value) {
    const __m512 x = _mm512_set1_ps(v);
    for (; i + L <= n; i += L) _mm512_stream_ps(p + i, x);
  } else if constexpr (std::is_same<T, double>::value) {
    const __m512d x = _mm512_set1_pd(v);
    for (; i + L <= n; i += L) _mm512_stream_pd(p + i, x);
  }
#endif
  for (; i < n; ++i) p[i] = v;
}

template <typename T>
void adaptive_avg_backward_typed(mf_tensor& gx, const mf_tensor& gy, const Pool& g) {
  const T* gp = (const T*)gy.ptr;
  T* op = (T*)gx.ptr;
  const int64_t P = g.H * g.W;
  if (g.Ho == 1 && g.Wo == 1) {  // global pooling: every input gets the same share (no scratch row)
    // the streamed planes in a loop of their own: a test per plane in the plain loop below cost
    // 4x16x16x16 float32 (1 thread, CPU time, interleaved) 3.0-3.4 -> 3.7-3.9 us
    if (gx.count * int64_t(sizeof(T)) >= kStreamBytes) {
      parallel_for(g.N * g.C, P + 1, [&](int64_t b, int64_t e) {
        for (int64_t pl = b; pl < e; ++pl)
          stream_fill(op + pl * P, P, T(gp[(pl / g.C) * g.xs[0] + (pl % g.C) * g.xs[1]] / T(P)));
        stream_fence();
      });
      return;
    }
    parallel_for(g.N * g.C, P + 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        T v = gp[(pl / g.C) * g.xs[0] + (pl % g.C) * g.xs[1]] / T(P);
        std::fill(op + pl * P, op + (pl + 1) * P, v);
      }
    });
    return;
  }
  for_planes<T>(g, g.H * g.W + g.Ho * g.Wo, g.W, [&](int64_t pl, int64_t n, int64_t c, T* tmp) {
    const T* gpl = gp + n * g.xs[0] + c * g.xs[1];
    T* out = op + pl * g.H * g.W;
    int64_t next = 0;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      Span h = adaptive_span(oh, g.H, g.Ho);
      std::fill(tmp, tmp + g.W, T(0));
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        Span w = adaptive_span(ow, g.W, g.Wo);
        T v = gpl[oh * g.xs[2] + ow * g.xs[3]] / T(h.div * w.div);
        for (int64_t k = w.lo; k < w.hi; ++k) tmp[k] += v;
      }
      spread_rows(out, g.W, tmp, h.lo, h.hi, next);
    }
    if (next < g.H) std::fill(out + next * g.W, out + g.H * g.W, T(0));
  });
}

}  // namespace

void max_pool2d_cpu(mf_tensor& y, const mf_tensor& x, const int32_t* kp) {
  kcheck::pool_types("max_pool2d", y, x, nullptr, false);
  Pool g = pool_of("max_pool2d", x, y, x, kp);
  MF_DISPATCH_FLOAT(x.dtype_id, T, "max_pool2d", max_pool_typed<T>(y, x, g));
}

void max_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& x, const int32_t* kp) {
  kcheck::pool_types("max_pool2d_backward", gx, gy, &x, false);
  Pool g = pool_of("max_pool2d_backward", x, gy, gy, kp);
  if (shape_of(gx) != shape_of(x)) fail("max_pool2d_backward: the output is ", shape_str(gx), ", x ", shape_str(x));
  MF_DISPATCH_FLOAT(x.dtype_id, T, "max_pool2d_backward", max_pool_backward_typed<T>(gx, gy, x, g));
}

void avg_pool2d_cpu(mf_tensor& y, const mf_tensor& x, const int32_t* kp, bool count_include_pad) {
  kcheck::pool_types("avg_pool2d", y, x, nullptr, false);
  Pool g = pool_of("avg_pool2d", x, y, x, kp);
  MF_DISPATCH_FLOAT(x.dtype_id, T, "avg_pool2d", avg_pool_typed<T>(y, x, g, count_include_pad));
}

void avg_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy, const int32_t* kp, bool count_include_pad) {
  kcheck::pool_types("avg_pool2d_backward", gx, gy, nullptr, false);
  Pool g = pool_of("avg_pool2d_backward", gx, gy, gy, kp);
  MF_DISPATCH_FLOAT(gy.dtype_id, T, "avg_pool2d_backward", avg_pool_backward_typed<T>(gx, gy, g, count_include_pad));
}

void adaptive_avg_pool2d_cpu(mf_tensor& y, const mf_tensor& x) {
  kcheck::pool_types("adaptive_avg_pool2d", y, x, nullptr, false);
  Pool g = pool_of("adaptive_avg_pool2d", x, y, x, nullptr);
  MF_DISPATCH_FLOAT(x.dtype_id, T, "adaptive_avg_pool2d", adaptive_avg_typed<T>(y, x, g));
}

void adaptive_avg_pool2d_backward_cpu(mf_tensor& gx, const mf_tensor& gy) {
  kcheck::pool_types("adaptive_avg_pool2d_backward", gx, gy, nullptr, false);
  Pool g = pool_of("adaptive_avg_pool2d_backward", gx, gy, gy, nullptr);
  MF_DISPATCH_FLOAT(gy.dtype_id, T, "adaptive_avg_pool2d_backward", adaptive_avg_backward_typed<T>(gx, gy, g));
}

}  // namespace mf
