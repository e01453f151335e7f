// Vectorizable building blocks of the reductions (reduce.cc) and the softmax family (softmax.cc):
// folds of one contiguous run with lane accumulators, and the fixed-size blocks that make a long
// run's result independent of the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../../core/threads.h"
#include "../../core/vecmath.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace mf {
namespace rr {

// The float folds run on 8-lane vectors in GCC's generic vector extension (the compiler picks the
// ISA: AVX-512, AVX2 or SSE), four of them side by side: enough independent adds to hide their
// latency. Their order of operations is fixed by n alone, whatever the machine or the thread count.
// Integer folds use kLanes scalar lanes.
constexpr int kLanes = 16;
// Elements per block of a run reduced by several threads: a constant, never derived from the
// thread count, so the per-block results and the order they are combined in (block order) are the
// same for any MF_NUM_THREADS.
constexpr int64_t kBlock = 16384;

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  return false;
}

// The accumulator of sums and products: double for floats, uint64 for integers (wrapping as two's
// complement int64 does, with no signed-overflow UB).
template <typename T>
using Acc = std::conditional_t<std::is_floating_point<T>::value, double, uint64_t>;

// 8 lanes of T (floats only)
template <typename T>
struct Vec8;
template <>
struct Vec8<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct Vec8<double> {
  typedef double type __attribute__((vector_size(64)));
};
template <typename T>
using V8 = typename Vec8<T>::type;
using V8d = V8<double>;

template <typename T>
inline V8<T> load8(const T* p) {
  V8<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// 8 values as doubles (exact). float: AVX-512's one 8-wide conversion where the build has it; the
// generic __builtin_convertvector compiled to two 4-wide ones (GCC 12, -march=native on Zen 4), which
// held a float32 sum at half the speed of reading its input (issue 12: 16 MB summed in 310 us on one
// thread, 172 with this, as fast as float32 adds). The same values and the same adds: same bits.
inline V8d to_v8d(V8d v) { return v; }
inline V8d to_v8d(V8<float> v) {
#if defined(__AVX512F__)
  return (V8d)_mm512_maskz_cvtps_pd(0xFF, (__m256)v);  // (the unmasked form warns: GCC 12 undefined passthrough)
#else
  return __builtin_convertvector(v, V8d);
#endif
}

inline double hsum(V8d v) {  // pairwise: (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then the last two
  double a0 = v[0] + v[4], a1 = v[1] + v[5], a2 = v[2] + v[6], a3 = v[3] + v[7];
  return (a0 + a2) + (a1 + a3);
}

// Combines lanes pairwise (a tree of depth log2(kLanes)).
template <typename A>
inline A fold_lanes(A* s) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  return s[0];
}

// Sum of f(p[i]) for i in [0, n) in double, f applied to double values (a generic lambda: it gets
// 8-lane double vectors and scalars alike). Four 8-lane accumulators over runs of 32 (independent
// adds enough to hide the add latency), a fifth for a remaining run of 8, the last elements added
// in order; the accumulators are added lanewise, then their lanes pairwise. Error bound:
// |error| <= (n / 32 + 6) * 2^-53 * sum |f(p[i])|, so a float32 result is within one rounding of
// the exact sum for any n below about 2^30.
template <typename T, typename F>
inline double sum_map(const T* p, int64_t n, F f) {
  static_assert(std::is_floating_point<T>::value, "sum_map: floats");
  V8d s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 += f(to_v8d(load8(p + i)));
    s1 += f(to_v8d(load8(p + i + 8)));
    s2 += f(to_v8d(load8(p + i + 16)));
    s3 += f(to_v8d(load8(p + i + 24)));
  }
  for (; i + 8 <= n; i += 8) s0 += f(to_v8d(load8(p + i)));
  double t = 0;
  for (; i < n; ++i) t += f(double(p[i]));
  return hsum((s0 + s1) + (s2 + s3)) + t;
}

// Sum of p[0..n) in Acc<T>: floats by sum_map; integers in kLanes uint64 lanes (exact modulo 2^64).
template <typename T>
inline Acc<T> sum(const T* p, int64_t n) {
  if constexpr (std::is_floating_point<T>::value) {
    return sum_map(p, n, [](auto v) { return v; });
  } else {
    uint64_t s[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) s[j] += uint64_t(p[i + j]);
    for (int j = 0; i < n; ++i, ++j) s[j] += uint64_t(p[i]);
    return fold_lanes(s);
  }
}

// sum of a[i] * (b[i] - m) in double (the cross-entropy's dot product), as sum_map.
template <typename T>
inline double dot_shifted(const T* a, const T* b, int64_t n, T m) {
  auto term = [&](int64_t i) {
    return to_v8d(load8(a + i)) * to_v8d(load8(b + i) - m);
  };
  V8d s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 += term(i);
    s1 += term(i + 8);
    s2 += term(i + 16);
    s3 += term(i + 24);
  }
  for (; i + 8 <= n; i += 8) s0 += term(i);
  double t = 0;
  for (; i < n; ++i) t += double(a[i]) * double(b[i] - m);
  return hsum((s0 + s1) + (s2 + s3)) + t;
}

// Product of p[0..n) in Acc<T>, kLanes lanes (exact for integers, which wrap modulo 2^64).
template <typename T>
inline Acc<T> prod(const T* p, int64_t n) {
  if constexpr (std::is_floating_point<T>::value) {
    V8d s0 = {1, 1, 1, 1, 1, 1, 1, 1}, s1 = s0, s2 = s0, s3 = s0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      s0 *= to_v8d(load8(p + i));
      s1 *= to_v8d(load8(p + i + 8));
      s2 *= to_v8d(load8(p + i + 16));
      s3 *= to_v8d(load8(p + i + 24));
    }
    for (; i + 8 <= n; i += 8) s0 *= to_v8d(load8(p + i));
    V8d v = (s0 * s1) * (s2 * s3);
    double r = ((v[0] * v[4]) * (v[2] * v[6])) * ((v[1] * v[5]) * (v[3] * v[7]));
    for (; i < n; ++i) r *= double(p[i]);
    return r;
  } else {
    uint64_t s[kLanes];
    for (int j = 0; j < kLanes; ++j) s[j] = 1;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) s[j] *= uint64_t(p[i + j]);
    for (int j = 0; i < n; ++i, ++j) s[j] *= uint64_t(p[i]);
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) s[j] *= s[j + w];
    return s[0];
  }
}

// The largest (Max) or smallest element of p[0..n), n >= 1, ignoring NaNs; nonfinite is set when
// some element is NaN or infinite (v - v is NaN for both), which the callers check for NaN apart:
// the compare-and-select lanes compile to vmaxps / vminps.
template <typename T, bool Max>
inline T extreme(const T* p, int64_t n, bool& nonfinite) {
  auto pick = [](auto v, auto b) { return Max ? (v > b ? v : b) : (v < b ? v : b); };
  int64_t i = 0;
  T r = p[0];
  if constexpr (std::is_floating_point<T>::value) {
    using V = V8<T>;
    V m0 = V{} + p[0], m1 = m0, m2 = m0, m3 = m0, z = {};
    for (; i + 32 <= n; i += 32) {
      V a = load8(p + i), b = load8(p + i + 8), c = load8(p + i + 16), d = load8(p + i + 24);
      m0 = pick(a, m0);
      m1 = pick(b, m1);
      m2 = pick(c, m2);
      m3 = pick(d, m3);
      z += ((a - a) + (b - b)) + ((c - c) + (d - d));
    }
    for (; i + 8 <= n; i += 8) {
      V a = load8(p + i);
      m0 = pick(a, m0);
      z += a - a;
    }
    V m = pick(pick(m0, m1), pick(m2, m3));
    T zs = 0;
    for (int j = 0; j < 8; ++j) {
      r = pick(m[j], r);
      zs += z[j];
    }
    for (; i < n; ++i) {
      r = pick(p[i], r);
      zs += p[i] - p[i];
    }
    nonfinite = zs != zs;
  } else {
    for (; i < n; ++i) r = pick(p[i], r);
    nonfinite = false;
  }
  return r;
}

// The extreme of p[0..n), n >= 1: NaN when any element is NaN (PyTorch's max and min).
template <typename T, bool Max>
inline T extreme_nan(const T* p, int64_t n) {
  bool bad = false;
  T r = extreme<T, Max>(p, n, bad);
  if (bad)
    for (int64_t i = 0; i < n; ++i)
      if (is_nan(p[i])) return p[i];
  return r;
}

// The first i >= from with p[i] == v (which must exist): 8 at a time.
template <typename T>
inline int64_t find_equal(const T* p, int64_t from, int64_t n, T v) {
  int64_t i = from;
  if constexpr (std::is_floating_point<T>::value) {
    for (; i + 8 <= n; i += 8) {
      auto eq = load8(p + i) == v;
      bool any = false;
      for (int j = 0; j < 8; ++j) any |= eq[j] != 0;
      if (any) break;
    }
  }
  while (!(p[i] == v)) ++i;
  return i;
}

// The first position of the extreme of a run (or of its first NaN: NaN wins, as in PyTorch).
template <typename T>
struct Best {
  T v;
  int64_t i;
  bool nan;
};

// argmax / argmin of p[0..n), n >= 1: the extreme of each sub-block of 2048 elements (in L1) by
// extreme(), the sub-block holding the first best rescanned for its position.
template <typename T, bool Max>
inline Best<T> arg(const T* p, int64_t n) {
  constexpr int64_t kSub = 2048;
  T best = p[0];
  int64_t where = 0;
  for (int64_t s = 0; s < n; s += kSub) {
    int64_t len = std::min(kSub, n - s);
    bool bad = false;
    T m = extreme<T, Max>(p + s, len, bad);
    if (bad)
      for (int64_t i = s; i < s + len; ++i)
        if (is_nan(p[i])) return {p[i], i, true};
    if (Max ? m > best : m < best) {
      best = m;
      where = s;
    }
  }
  where = find_equal(p, where, n, best);
  return {p[where], where, false};
}

// The better of two results where a comes first in the run: the first NaN, else the strictly
// better value, else a (the first of ties).
template <typename T, bool Max>
inline Best<T> first_best(const Best<T>& a, const Best<T>& b) {
  if (a.nan) return a;
  if (b.nan) return b;
  return (Max ? b.v > a.v : b.v < a.v) ? b : a;
}

// sum of exp(q[i] - m) over [0, n): the vector exp (vecmath.h) on chunks of 512 in a stack buffer,
// summed in double lanes; q[i] - m is rounded to T first, as PyTorch's softmax does.
template <typename T>
inline double exp_sum(const T* q, int64_t n, T m) {
  constexpr int64_t kChunk = 512;
  T buf[kChunk];
  double s = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    int64_t len = std::min(kChunk, n - c);
    for (int64_t i = 0; i < len; ++i) buf[i] = q[c + i] - m;
    vm::exp(buf, buf, len);
    s += sum(buf, len);
  }
  return s;
}

// f(begin, end) -> R for each kBlock-element block of a run of n elements, on the thread pool;
// cost: the work per element. The results are in block order.
template <typename R, typename F>
inline std::vector<R> per_block(int64_t n, int64_t cost, F f) {
  int64_t nb = (n + kBlock - 1) / kBlock;
  std::vector<R> r(size_t(nb > 0 ? nb : 0));
  parallel_for(nb, kBlock * cost, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) r[size_t(b)] = f(b * kBlock, std::min(n, (b + 1) * kBlock));
  });
  return r;
}

// The sum of block results, added pairwise (depth log2(blocks)).
template <typename A>
inline A pairwise(std::vector<A> v) {
  if (v.empty()) return A(0);
  for (size_t w = 1; w < v.size(); w *= 2)
    for (size_t j = 0; j + w < v.size(); j += 2 * w) v[j] += v[j + w];
  return v[0];
}

}  // namespace rr
}  // namespace mf
