// -- randint / randperm / multinomial ----------------------------------------------------------
// Integer draws from the counter-based Philox generator (src/core/rng.h): every value comes from
// fixed counters (offset + element, or row and column), so the thread count never changes them.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

void randint_cpu(mf_tensor& t, mf_rng& g, double low, double high) {
  kcheck::meta("randint", "output", t);
  kcheck::contiguous("randint", "output", t);
  if (!(low < high) || low != std::floor(low) || high != std::floor(high) || std::fabs(low) > 9e15 ||
      std::fabs(high) > 9e15)
    fail("randint: low ", low, " and high ", high, " must be integers with low < high");
  if (t.count > 0) {
    check_value_fits(low, t.dtype_id, "randint");
    check_value_fits(high - 1, t.dtype_id, "randint");
  }
  // r % range is biased by at most range / 2^64 (below 2^-11 for any range the params allow)
  uint64_t seed = g.seed, base = g.offset, range = uint64_t(high - low);
  int64_t lo64 = int64_t(low);
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    parallel_for(t.count, 20, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) p[i] = T(lo64 + int64_t(u64_of(philox(seed, base + uint64_t(i))) % range));
    });
  });
  g.offset = base + uint64_t(t.count);
}

void randperm_cpu(mf_tensor& t, mf_rng& g) {
  kcheck::meta("randperm", "output", t);
  kcheck::contiguous("randperm", "output", t);
  if (t.ndim != 1) fail("randperm: output is ", shape_str(t), "; expected 1 dim");
  int64_t n = t.count;
  if (n > 0) check_value_fits(double(n), t.dtype_id, "randperm");
  // Fisher-Yates from the last position down, step i drawing from counter offset + i: serial, so
  // it is the same permutation whatever the thread count.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t(1));
  uint64_t seed = g.seed, base = g.offset;
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = int64_t(u64_of(philox(seed, base + uint64_t(i))) % uint64_t(i + 1));
    std::swap(perm[size_t(i)], perm[size_t(j)]);
  }
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    for (int64_t i = 0; i < n; ++i) p[i] = T(perm[size_t(i)]);
  });
  g.offset = base + uint64_t(n);
}

void multinomial_cpu(mf_tensor& out, mf_rng& g, const mf_tensor& probs, bool replacement) {
  const char* op = "multinomial";
  kcheck::meta(op, "out", out);
  kcheck::meta(op, "probs", probs);
  kcheck::contiguous(op, "out", out);
  kcheck::contiguous(op, "probs", probs);
  kcheck::float_dtype(op, "probs", probs);
  kcheck::dtype(op, "out", out, MF_INT64, " (1-based category indices)");
  if (probs.ndim < 1 || probs.ndim > 2 || out.ndim != probs.ndim || (probs.ndim == 2 && out.shape[0] != probs.shape[0]))
    fail(op, ": probs is ", shape_str(probs), ", out ", shape_str(out), "; expected 1-D or 2-D probs and out of ",
         "(rows, n) or (n)");
  int64_t k = probs.shape[probs.ndim - 1], n = out.shape[out.ndim - 1], rows = probs.ndim == 2 ? probs.shape[0] : 1;
  if (out.count == 0) return;
  // Check every weight first: no error may be thrown inside the parallel loop.
  std::vector<double> w(size_t(probs.count));
  MF_DISPATCH_FLOAT(probs.dtype_id, T, op, {
    const T* p = (const T*)probs.ptr;
    for (int64_t i = 0; i < probs.count; ++i) w[size_t(i)] = double(p[i]);
  });
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
  // Row r, position j draws from counter offset + r * m + j (m = max(k, n)).
  uint64_t seed = g.seed, base = g.offset, m = uint64_t(std::max(k, n));
  int64_t* dst = (int64_t*)out.ptr;
  parallel_for(rows, k * 8 + n * 16, [&](int64_t lo, int64_t hi) {
    std::vector<double> acc(static_cast<size_t>(k));
    std::vector<int64_t> order(static_cast<size_t>(k));
    for (int64_t r = lo; r < hi; ++r) {
      const double* wr = w.data() + r * k;
      int64_t* o = dst + r * n;
      uint64_t c0 = base + uint64_t(r) * m;
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
          int64_t j = std::upper_bound(acc.begin(), acc.end(), target) - acc.begin();
          o[s] = (j < k ? j : last) + 1;  // j == k only when rounding reaches the total
        }
      } else {  // Efraimidis-Spirakis: the n largest keys log(u) / w are a draw without replacement
        for (int64_t j = 0; j < k; ++j) {
          Philox4 q = philox(seed, c0 + uint64_t(j));
          double u = 1.0 - u64_to_unit_double(q.v[0], q.v[1]);  // (0, 1]: log is finite
          acc[size_t(j)] = wr[j] > 0 ? std::log(u) / wr[j] : -INFINITY;
          order[size_t(j)] = j;
        }
        std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](int64_t a, int64_t b) {
          return acc[size_t(a)] > acc[size_t(b)] || (acc[size_t(a)] == acc[size_t(b)] && a < b);
        });
        for (int64_t s = 0; s < n; ++s) o[s] = order[size_t(s)] + 1;
      }
    }
  });
  g.offset = base + uint64_t(rows) * m;
}

}  // namespace mf
