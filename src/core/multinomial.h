// multinomial's weight checks and per-row draws (host code): the CPU routine runs them over threads
// (src/kernels/cpu/sample.cc) and the CUDA one on the host after copying the weights there, which its
// checks need anyway (src/kernels/cuda/sample.cu); one definition, so both devices draw the same
// categories from the same seed. Row r, position j draws from counter offset + r * m + j, m = max(k, n).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "error.h"
#include "philox.h"
#include "shape.h"

namespace mf {

// Whether one row of k weights passes multinomial_check (no error raised: the CPU kernel tests its
// rows inside its parallel loop, then calls multinomial_check for the message if one fails). One
// pass without early exits, in integers as wide as W, so it vectorizes (a block of 2^30 at a time:
// int32 counts for float32).
template <class W>
inline bool multinomial_row_ok(const W* wr, int64_t k, int64_t n, bool replacement) {
  using I = std::conditional_t<sizeof(W) == 4, int32_t, int64_t>;
  int64_t positive = 0;
  I bad = 0;
  for (int64_t b = 0; b < k; b += int64_t(1) << 30) {
    int64_t e = std::min(k, b + (int64_t(1) << 30));
    I pos = 0;
    for (int64_t j = b; j < e; ++j) {
      W v = wr[j];
      bad |= I(!(v >= W(0))) | I(v == W(INFINITY));
      pos += I(v > W(0));
    }
    positive += pos;
  }
  return !bad && positive > 0 && (replacement || positive >= n);
}

// rows x k weights w (row-major, float or double): finite, >= 0, some positive per row, and at
// least n positive per row without replacement; else an error naming the row (and category).
template <class W>
inline void multinomial_check(const char* op, const W* w, int64_t rows, int64_t k, int64_t n, bool replacement,
                              const mf_tensor& probs) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t positive = 0;
    for (int64_t j = 0; j < k; ++j) {
      double v = double(w[size_t(r * k + j)]);
      if (!(v >= 0) || std::isinf(v))
        fail(op, ": row ", r + 1, " has weight ", v, " at category ", j + 1, "; weights must be finite and >= 0");
      if (v > 0) ++positive;
    }
    if (positive == 0) fail(op, ": row ", r + 1, " of probs ", shape_str(probs), " has no positive weight");
    if (!replacement && positive < n)
      fail(op, ": row ", r + 1, " has ", positive, " positive weights; cannot draw ", n,
           " categories without replacement");
  }
}

// n draws with replacement, 1-based categories o, from counters c0, c0 + 1, ...: the inverse of a
// row's cumulative weights acc[0 .. k) (the total last), the first category whose sum exceeds
// u * total; last: the row's last positive category.
inline void multinomial_draw(uint64_t seed, uint64_t c0, const double* acc, int64_t k, int64_t last, int64_t n,
                             int64_t* o) {
  double total = acc[k - 1];
  for (int64_t s = 0; s < n; ++s) {
    Philox4 q = philox(seed, c0 + uint64_t(s));
    double target = u64_to_unit_double(q.v[0], q.v[1]) * total;
    int64_t j = std::upper_bound(acc, acc + k, target) - acc;
    o[s] = (j < k ? j : last) + 1;  // j == k only when rounding reaches the total
  }
}

// multinomial_row with replacement for 4 checked rows at once: rows w + q k, counters c0 + q m,
// outputs o + q n (q = 0 .. 3); acc: 4 k elements of scratch. Each row's running sum is the same
// chain of additions in the same order (so the same draws); four independent chains keep the adder
// busy where one waits out each addition's latency.
template <class W>
inline void multinomial_rows4(uint64_t seed, uint64_t c0, uint64_t m, const W* w, int64_t k, int64_t n, int64_t* o,
                              double* acc) {
  const W *w0 = w, *w1 = w + k, *w2 = w + 2 * k, *w3 = w + 3 * k;
  double *a0 = acc, *a1 = acc + k, *a2 = acc + 2 * k, *a3 = acc + 3 * k;
  double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
  int64_t l0 = 0, l1 = 0, l2 = 0, l3 = 0;
  for (int64_t j = 0; j < k; ++j) {
    t0 += double(w0[j]);
    t1 += double(w1[j]);
    t2 += double(w2[j]);
    t3 += double(w3[j]);
    a0[j] = t0;
    a1[j] = t1;
    a2[j] = t2;
    a3[j] = t3;
    l0 = w0[j] > 0 ? j : l0;
    l1 = w1[j] > 0 ? j : l1;
    l2 = w2[j] > 0 ? j : l2;
    l3 = w3[j] > 0 ? j : l3;
  }
  int64_t last[4] = {l0, l1, l2, l3};
  for (int64_t q = 0; q < 4; ++q) multinomial_draw(seed, c0 + uint64_t(q) * m, acc + q * k, k, last[q], n, o + q * n);
}

// n 1-based categories o of one row of k checked weights wr (float or double, summed in double),
// from counters c0, c0 + 1, ...; acc and order: k elements of scratch each.
template <class W>
inline void multinomial_row(uint64_t seed, uint64_t c0, const W* wr, int64_t k, int64_t n, bool replacement,
                            int64_t* o, std::vector<double>& acc, std::vector<int64_t>& order) {
  if (replacement) {  // inverse of the cumulative weights: first category whose sum exceeds u * total
    double total = 0;
    int64_t last = 0;
    for (int64_t j = 0; j < k; ++j) {
      total += double(wr[j]);
      acc[size_t(j)] = total;
      if (wr[j] > 0) last = j;
    }
    multinomial_draw(seed, c0, acc.data(), k, last, n, o);
  } else {  // Efraimidis-Spirakis: the n largest keys log(u) / w are a draw without replacement
    for (int64_t j = 0; j < k; ++j) {
      Philox4 q = philox(seed, c0 + uint64_t(j));
      double u = 1.0 - u64_to_unit_double(q.v[0], q.v[1]);  // (0, 1]: log is finite
      acc[size_t(j)] = wr[j] > 0 ? std::log(u) / double(wr[j]) : -INFINITY;
      order[size_t(j)] = j;
    }
    std::partial_sort(order.begin(), order.begin() + n, order.begin() + k, [&](int64_t a, int64_t b) {
      return acc[size_t(a)] > acc[size_t(b)] || (acc[size_t(a)] == acc[size_t(b)] && a < b);
    });
    for (int64_t s = 0; s < n; ++s) o[s] = order[size_t(s)] + 1;
  }
}

}  // namespace mf
