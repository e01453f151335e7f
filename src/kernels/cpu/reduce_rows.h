// Vectorizable building blocks of the reductions (reduce.cc) and the softmax family (softmax.cc):
// folds of one contiguous run with lane accumulators, and the fixed-size blocks that make a long
// run's result independent of the thread count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../../core/threads.h"
#include "../../core/vecmath.h"

namespace mf {
namespace rr {

// Lanes per fold: 16 accumulators of the fold's type (two AVX-512 or four AVX2 vectors of double),
// enough independent adds to hide the add latency. A fixed count, so a fold's order of operations
// is fixed by n alone.
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

// Combines lanes pairwise (a tree of depth log2(kLanes)).
template <typename A>
inline A fold_lanes(A* s) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  return s[0];
}

// Sum of f(p[i]) for i in [0, n), accumulated in A over kLanes lanes, lanes added pairwise. Error
// bound (floats): |error| <= (n / kLanes + log2(kLanes) + 1) * 2^-53 * sum |f(p[i])|, so a float32
// result is within one rounding of the exact sum for any n below about 2^30.
template <typename A, typename T, typename F>
inline A sum_map(const T* p, int64_t n, F f) {
  A s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += f(A(p[i + j]));
  for (int j = 0; i < n; ++i, ++j) s[j] += f(A(p[i]));
  return fold_lanes(s);
}

template <typename T>
inline Acc<T> sum(const T* p, int64_t n) {
  return sum_map<Acc<T>>(p, n, [](Acc<T> v) { return v; });
}

// Product of p[0..n) in Acc<T>, kLanes lanes (exact for integers, which wrap modulo 2^64).
template <typename T>
inline Acc<T> prod(const T* p, int64_t n) {
  using A = Acc<T>;
  A s[kLanes];
  for (int j = 0; j < kLanes; ++j) s[j] = A(1);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] *= A(p[i + j]);
  for (int j = 0; i < n; ++i, ++j) s[j] *= A(p[i]);
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) s[j] *= s[j + w];
  return s[0];
}

// The largest (Max) or smallest element of p[0..n), n >= 1, ignoring NaNs; nonfinite is set when
// some element is NaN or infinite (v - v is NaN for both), which the callers check for NaN apart:
// the compare-and-select lanes compile to vmaxps / vminps.
template <typename T, bool Max>
inline T extreme(const T* p, int64_t n, bool& nonfinite) {
  T m[kLanes], z[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    m[j] = p[0];
    z[j] = T(0);
  }
  auto pick = [](T v, T b) { return Max ? (v > b ? v : b) : (v < b ? v : b); };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      T v = p[i + j];
      m[j] = pick(v, m[j]);
      if constexpr (std::is_floating_point<T>::value) z[j] += v - v;
    }
  for (int j = 0; i < n; ++i, ++j) {
    T v = p[i];
    m[j] = pick(v, m[j]);
    if constexpr (std::is_floating_point<T>::value) z[j] += v - v;
  }
  T r = m[0], zs = z[0];
  for (int j = 1; j < kLanes; ++j) {
    r = pick(m[j], r);
    zs += z[j];
  }
  nonfinite = is_nan(zs);
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
  while (!(p[where] == best)) ++where;
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
