// The extreme/position combiner the CUDA reductions use (src/core/reduce_combine.h): folding any
// partition of a line in any grouping must give the sequential scan's answer (the first NaN, else
// the first of equal extremes), which this test writes out independently.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/reduce_combine.h"

namespace {

// the CPU's rule, as a plain loop: index of the first NaN, else of the first max (or min)
long long scan(const std::vector<double>& v, bool want_max) {
  long long best = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    if (std::isnan(v[j])) return (long long)j;
    if (want_max ? v[j] > v[size_t(best)] : v[j] < v[size_t(best)]) best = (long long)j;
  }
  return best;
}

}  // namespace

TEST_CASE("reduce_combine: strided partials in any tree order give the sequential scan's pick", "[core]") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 400; ++trial) {
    int n = 1 + int(rng() % 90);
    std::vector<double> v(static_cast<size_t>(n), 0.0);
    for (double& x : v) x = double(int(rng() % 7)) - 3;  // few values: many ties
    if (trial % 3 == 0) v[rng() % size_t(n)] = NAN;
    if (trial % 5 == 0) v[rng() % size_t(n)] = NAN;
    for (bool want_max : {true, false}) {
      // G "threads" each fold a strided share (j = lane, lane + G, ...), as a CUDA group does
      int G = 1 + int(rng() % 40);
      std::vector<mf::ArgBest<double>> part(size_t(G), mf::ArgBest<double>{0, -1});
      for (int j = 0; j < n; ++j)
        part[size_t(j % G)] = mf::arg_combine(part[size_t(j % G)], mf::ArgBest<double>{v[size_t(j)], j}, want_max);
      // then combine pairwise in a random order
      while (part.size() > 1) {
        size_t a = rng() % part.size(), b = rng() % (part.size() - 1);
        if (b >= a) ++b;
        part[a] = mf::arg_combine(part[a], part[b], want_max);
        part.erase(part.begin() + long(b));
      }
      long long want = scan(v, want_max);
      INFO("trial " << trial << " n " << n << " G " << G << " max " << want_max);
      CHECK(part[0].j == want);
      if (!std::isnan(v[size_t(want)])) CHECK(part[0].v == v[size_t(want)]);
    }
  }
}

TEST_CASE("reduce_combine: an empty partial yields to any other; integers keep every bit", "[core]") {
  mf::ArgBest<long long> none{0, -1}, big{(1LL << 62) + 1, 5}, near{(1LL << 62), 2};
  CHECK(mf::arg_combine(none, big, true).j == 5);
  CHECK(mf::arg_combine(big, none, true).j == 5);
  CHECK(mf::arg_combine(near, big, true).j == 5);  // 2^62 + 1 > 2^62 (a double would tie them)
  CHECK(mf::arg_combine(near, big, false).j == 2);
  CHECK(mf::is_float_type<float>());
  CHECK(!mf::is_float_type<long long>());
}
