// The two thread models of mf::Engine with 4 threads: an engine per thread (sharing the process-wide
// op registry and allocator), and one engine shared in locking mode.
//
// scripts/sanitize.sh runs these under ThreadSanitizer (with MF_NUM_THREADS=4; every tensor here is
// below kGrain, 131072 element-ops, so these stay serial inside each engine: test_embed_parallel.cc
// runs OpenMP teams inside engines on several threads). Catch2's assertions are not thread safe:
// threads record failures, the main thread checks them.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <atomic>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;

const char* const kModel = R"lua(
  mf.manual_seed(3)
  local model = mf.nn.Sequential{mf.nn.Linear(16, 8), mf.nn.Tanh(), mf.nn.Linear(8, 4)}
  model:evaluate()
  function predict(x) return mf.softmax(model:forward(x), 2) end
)lua";

// Failures seen on worker threads, checked on the main thread.
struct Failures {
  std::mutex mu;
  std::vector<std::string> list;
  void add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    list.push_back(s);
  }
};

template <typename F>
void run_threads(Failures& failures, F&& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        failures.add("thread " + std::to_string(t) + ": " + e.what());
      }
    });
  for (auto& th : threads) th.join();
}

std::vector<float> input(int salt) {
  std::vector<float> x(2 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7 + size_t(salt)) % 11) / 11.0f;
  return x;
}

}  // namespace

TEST_CASE("embed threads: one engine per thread", "[embed][threads]") {
  // the reference result, computed on this thread
  std::vector<float> expect;
  {
    mf::Engine engine;
    engine.eval(kModel);
    std::vector<float> x = input(0);
    expect = engine.call("predict", {mf::Tensor::view(x.data(), {2, 16})}).at(0).tensor().to_vector<float>();
  }
  Failures failures;
  std::atomic<int> shared_wins{0}, shared_losses{0};
  run_threads(failures, [&](int t) {
    mf::Engine engine;  // each thread its own state
    engine.eval(kModel);
    // ops registered from Lua go into the one process-wide registry
    std::string name = "thread_op_" + std::to_string(t);
    engine.eval("mf.register_op{name = '" + name + "', num_inputs = 1, doc = 'x + 1', infer_shape = 'same', "
                "lua_compute = [[ function(ins, outs) return function() local x, y = ins[1]:data(), outs[1]:data() "
                "for i = 0, ins[1]:numel() - 1 do y[i] = x[i] + 1 end end end ]]}");
    try {
      engine.eval("mf.register_op{name = 'thread_shared', num_inputs = 1, doc = 'shared', infer_shape = 'same', "
                  "lua_compute = [[ function(ins, outs) return function() end end ]]}");
      ++shared_wins;
    } catch (const mf::Error& e) {
      if (e.message().find("already registered") == std::string::npos) throw;
      ++shared_losses;
    }
    std::vector<float> x = input(0);
    for (int i = 0; i < 100; ++i) {
      std::vector<float> got =
          engine.call("predict", {mf::Tensor::view(x.data(), {2, 16})}).at(0).tensor().to_vector<float>();
      if (got != expect) {
        failures.add("thread " + std::to_string(t) + ": predict differs at call " + std::to_string(i));
        return;
      }
      double v = engine.eval("return mf." + name + "(mf.ones(3)):sum():item()").at(0).number();
      if (v != 6) failures.add("thread " + std::to_string(t) + ": " + name + " gave " + std::to_string(v));
    }
    // tensors made here outlive the engine and may go to another thread
    engine.collect_garbage();
  });
  for (auto& f : failures.list) FAIL_CHECK(f);
  CHECK(shared_wins == 1);
  CHECK(shared_losses == kThreads - 1);
}

TEST_CASE("embed threads: engines created and destroyed concurrently", "[embed][threads]") {
  Failures failures;
  mf::MemoryStats before = mf::memory_stats();
  run_threads(failures, [&](int t) {
    for (int i = 0; i < 3; ++i) {
      mf::Engine engine;
      std::vector<float> x = input(t);
      double s = engine.call("mf.sum", {mf::Tensor::view(x.data(), {2, 16})}).at(0).tensor().to_vector<double>()[0];
      double want = 0;
      for (float v : x) want += v;
      if (std::abs(s - want) > 1e-4) failures.add("thread " + std::to_string(t) + ": sum " + std::to_string(s));
    }
  });
  for (auto& f : failures.list) FAIL_CHECK(f);
  CHECK(mf::memory_stats().in_use == before.in_use);
}

TEST_CASE("embed threads: one engine shared in locking mode", "[embed][threads]") {
  mf::Engine engine(mf::Engine::Mode::kLocking);
  CHECK(engine.mode() == mf::Engine::Mode::kLocking);
  engine.eval(kModel);
  engine.eval("count = 0; function bump(k) count = count + k; return count end");
  std::atomic<int> host_calls{0};
  engine.register_function("host_note", [&](const std::vector<mf::Value>& a) -> mf::Values {
    ++host_calls;  // runs under the engine's lock
    return {a.at(0).number() * 2};
  });
  std::vector<float> x = input(1);
  std::vector<float> expect =
      engine.call("predict", {mf::Tensor::view(x.data(), {2, 16})}).at(0).tensor().to_vector<float>();
  Failures failures;
  std::vector<mf::Tensor> results(kThreads);
  run_threads(failures, [&](int t) {
    std::vector<float> mine = input(1);  // each thread its own host memory
    for (int i = 0; i < 100; ++i) {
      engine.call("bump", {1});
      mf::Tensor p = engine.call("predict", {mf::Tensor::view(mine.data(), {2, 16})}).at(0).tensor();
      if (p.to_vector<float>() != expect) failures.add("thread " + std::to_string(t) + ": predict differs");
      if (engine.eval("return host_note(21)").at(0).number() != 42) failures.add("host_note");
      engine.set("last_thread", t);
      results[size_t(t)] = p;  // handed to the main thread
    }
  });
  for (auto& f : failures.list) FAIL_CHECK(f);
  CHECK(engine.get("count").number() == kThreads * 100);
  CHECK(host_calls == kThreads * 100);
  for (auto& r : results) CHECK(r.to_vector<float>() == expect);
}

TEST_CASE("embed threads: the thread count is process-wide", "[embed][threads]") {
  mf::Engine main_engine;
  main_engine.eval("mf.set_num_threads(1)");
  // OpenMP keeps the count per thread; an engine on another thread still runs with the one set
  double seen = 0;
  std::thread([&] {
    mf::Engine engine;
    seen = engine.eval("return mf.get_num_threads()").at(0).number();
  }).join();
  CHECK(seen == 1);
}
