// multinomial's weight checks and per-row draws (host code): the CPU routine runs them over threads
// (src/kernels/cpu/sample.cc) and the CUDA one on the host after copying the weights there, which its
// checks need anyway (src/kernels/cuda/sample.cu); one definition, so both devices draw the same
// categories from the same seed. Row r, position j draws from counter offset + r * m + j, m = max(k, n).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "error.h"
#include "philox.h"
#include "shape.h"

namespace mf {

// rows x k weights w (row-major): finite, >= 0, some positive per row, and at least n positive
// per row without replacement; else an error naming the row (and category).
inline void multinomial_check(const char* op, const double* w, int64_t rows, int64_t k, int64_t n, bool replacement,
                              const mf_tensor& probs) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t positive = 0;
    for (int64_t j = 0; j < k; ++j) {
      double v = w[size_t(r * k + j)];
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

// n 1-based categories o of one row of k checked weights wr, from counters c0, c0 + 1, ...; acc and
// order: k elements of scratch each.
inline void multinomial_row(uint64_t seed, uint64_t c0, const double* wr, int64_t k, int64_t n, bool replacement,
                            int64_t* o, std::vector<double>& acc, std::vector<int64_t>& order) {
  if (replacement) {  // inverse of the cumulative weights: first category whose sum exceeds u * total
    double total = 0;
    int64_t last = 0;
    for (int64_t j = 0; j < k; ++j) {
      total += wr[j];
      acc[size_t(j)] = total;
      if (wr[j] > 0) last = j;
    }
    for (int64_t s = 0; s < n; ++s) {
      Philox4 q = philox(seed, c0 + uint64_t(s));
      double target = u64_to_unit_double(q.v[0], q.v[1]) * total;
      int64_t j = std::upper_bound(acc.begin(), acc.begin() + k, target) - acc.begin();
      o[s] = (j < k ? j : last) + 1;  // j == k only when rounding reaches the total
    }
  } else {  // Efraimidis-Spirakis: the n largest keys log(u) / w are a draw without replacement
    for (int64_t j = 0; j < k; ++j) {
      Philox4 q = philox(seed, c0 + uint64_t(j));
      double u = 1.0 - u64_to_unit_double(q.v[0], q.v[1]);  // (0, 1]: log is finite
      acc[size_t(j)] = wr[j] > 0 ? std::log(u) / wr[j] : -INFINITY;
      order[size_t(j)] = j;
    }
    std::partial_sort(order.begin(), order.begin() + n, order.begin() + k, [&](int64_t a, int64_t b) {
      return acc[size_t(a)] > acc[size_t(b)] || (acc[size_t(a)] == acc[size_t(b)] && a < b);
    });
    for (int64_t s = 0; s < n; ++s) o[s] = order[size_t(s)] + 1;
  }
}

}  // namespace mf
