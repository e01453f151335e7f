// OpenMP inside engines on several threads: 3 std::threads, an engine each, run kernels big enough
// to open parallel regions (teams of 4: elementwise and reduction loops, im2col convolution and
// pooling, OpenBLAS) at the same time, and agree with the same work run alone.
//
// scripts/sanitize.sh runs this under ThreadSanitizer with MF_NUM_THREADS=4. libgomp is not built
// with TSan, so a TSan build declares the fork and join of each region to it (a GOMP_parallel
// wrapper in src/core/threads.cc); races between a team's threads or between the std::threads are
// reported.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// Each returned value comes from a tensor above the serial threshold (131072 element-ops).
const char* const kWork = R"lua(
  mf.set_num_threads(4)
  local seed = ...
  mf.manual_seed(seed)
  local a = mf.randn(256, 1024)
  local e = ((a * 2 + 1):relu() - a:tanh()):sum():item()
  local s = a:abs():sum(2):max():item()
  local m = mf.matmul(a, a, false, true):sum():item()
  local x = mf.randn(16, 3, 32, 32)
  local w = mf.randn(8, 3, 5, 5)
  local c = mf.conv2d(x, w):sum():item()
  local p = mf.max_pool2d(x, {kernel_size = {2, 2}, stride = {2, 2}}):sum():item()
  return e, s, m, c, p
)lua";

std::vector<double> run_work(mf::Engine& engine, int seed) {
  engine.eval("work = load([=[" + std::string(kWork) + "]=])");
  mf::Values v = engine.call("work", {mf::Value(double(seed))});
  std::vector<double> out;
  for (const auto& x : v) out.push_back(x.number());
  return out;
}

}  // namespace

TEST_CASE("embed parallel: OpenMP teams inside engines on several threads agree with a lone run", "[embed][threads]") {
  constexpr int kThreads = 3;
  std::vector<std::vector<double>> expect(kThreads);
  {
    mf::Engine engine;
    for (int t = 0; t < kThreads; ++t) expect[size_t(t)] = run_work(engine, 100 + t);
    REQUIRE(engine.eval("return mf.get_num_threads()").at(0).number() == 4);
  }
  std::vector<std::vector<double>> got(kThreads);
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        mf::Engine engine;
        for (int round = 0; round < 2; ++round) got[size_t(t)] = run_work(engine, 100 + t);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors) FAIL(e);
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    REQUIRE(got[size_t(t)].size() == 5);
    for (size_t i = 0; i < 5; ++i) {
      INFO("value " << i);
      // the same partition of the same work: equal up to OpenBLAS's choice of kernel per call
      CHECK(std::abs(got[size_t(t)][i] - expect[size_t(t)][i]) <= 1e-4 * std::max(1.0, std::abs(expect[size_t(t)][i])));
    }
  }
}
