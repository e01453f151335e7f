// Lua-registered ops are process-wide: an op registered by one mf::Engine with its shape rule,
// gradient and kernel given as source strings runs eagerly, in a graph and under autodiff in every
// other engine (created before or after the registration, on this thread or another). Rules given
// as Lua functions stay in the registering engine, and the others say so. References are
// hand-computed.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// y[r] = scale * sum_c x[r][c]^2, so dy[r]/dx[r][c] = 2 * scale * x[r][c]
const char* const kRegister = R"lua(
  mf.register_op{name = 'engines_sqrowsum', num_inputs = 1, doc = 'scale * the sum of squares of each row',
    params = {scale = {type = 'number', default = 1, doc = 'factor'}},
    infer_shape = [[ function(s, p) return {{s[1][1]}} end ]],
    gradient = [[ function(x, y, gy, p) return {mf.unsqueeze(gy, 2) * x * (2 * p.scale)} end ]],
    lua_compute = [[ function(ins, outs, p)
      local rows, cols, scale = ins[1]:size(1), ins[1]:size(2), p.scale
      return function()
        local xp, yp = ins[1]:data(), outs[1]:data()
        for r = 0, rows - 1 do
          local acc = 0
          for c = 0, cols - 1 do local v = xp[r * cols + c]; acc = acc + v * v end
          yp[r] = scale * acc
        end
      end end ]]}
)lua";

// x = {{1, 2, 3}, {-1, 0, 2}}: row sums of squares 14 and 5
const char* const kEager = R"lua(
  local x = mf.tensor{{1, 2, 3}, {-1, 0, 2}}
  return mf.engines_sqrowsum(x, {scale = 1.5}), x:engines_sqrowsum()
)lua";

// loss = sum(y * {1, 2}) with scale 1.5: d loss/dx = 3 * x * {1, 2} per row
const char* const kGraph = R"lua(
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local y = mf.engines_sqrowsum(x, {scale = 1.5})
  local loss = mf.sum(y * mf.constant(mf.tensor{1, 2}))
  local g = mf.gradients(loss, {x})[1]
  return mf.Session():run({y, g}, {[x] = mf.tensor{{1, 2, 3}, {-1, 0, 2}}})
)lua";

const std::vector<float> kY15{21, 7.5}, kY1{14, 5}, kGrad{3, 6, 9, -6, 0, 12}, kSevens{7, 7};

// Runs the eager and graph checks in engine e; returns what differs (empty when all agree).
std::vector<std::string> check_engine(mf::Engine& e) {
  std::vector<std::string> bad;
  mf::Values eager = e.eval(kEager, "eager");
  if (eager.at(0).tensor().to_vector<float>() != kY15) bad.push_back("eager with scale 1.5");
  if (eager.at(1).tensor().to_vector<float>() != kY1) bad.push_back("eager method with the default scale");
  mf::Values graph = e.eval(kGraph, "graph");
  if (graph.at(0).tensor().to_vector<float>() != kY15) bad.push_back("graph value");
  if (graph.at(1).tensor().to_vector<float>() != kGrad) bad.push_back("graph gradient");
  return bad;
}

template <typename F>
std::string error_of(F&& body) {
  try {
    body();
  } catch (const mf::Error& e) {
    return e.message();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("engines: an op registered from Lua with source strings runs in every engine", "[embed][engines]") {
  mf::Engine before;  // loaded the registry before the op existed
  mf::Engine owner;
  owner.eval(kRegister, "register");
  mf::Engine after;
  for (mf::Engine* e : {&owner, &before, &after}) {
    std::vector<std::string> bad = check_engine(*e);
    for (auto& b : bad) FAIL_CHECK((e == &owner ? "owner: " : e == &before ? "before: " : "after: ") << b);
  }
  // the registering engine is not needed any more
  { mf::Engine gone = std::move(owner); }
  CHECK(check_engine(after).empty());
  // the other engines see it listed and documented
  CHECK(before.eval("return mf.op_doc('engines_sqrowsum') ~= nil").at(0).boolean());
  CHECK(after.eval("for _, n in ipairs(mf.list_ops()) do if n == 'engines_sqrowsum' then return true end end "
                   "return false").at(0).boolean());
}

TEST_CASE("engines: a registered op runs on other threads' engines", "[embed][engines][threads]") {
  mf::Engine main_engine;
  if (!main_engine.eval("return mf._ops.engines_sqrowsum ~= nil").at(0).boolean())
    main_engine.eval(kRegister, "register");
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      try {
        mf::Engine e;
        for (int i = 0; i < 3; ++i)
          for (auto& b : check_engine(e)) {
            std::lock_guard<std::mutex> lock(mu);
            failures.push_back("thread " + std::to_string(t) + ": " + b);
          }
      } catch (const std::exception& ex) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("thread " + std::to_string(t) + ": " + ex.what());
      }
    });
  std::vector<std::string> main_bad;
  try {
    for (int i = 0; i < 3; ++i) {  // the main thread's engine at the same time
      std::vector<std::string> bad = check_engine(main_engine);
      main_bad.insert(main_bad.end(), bad.begin(), bad.end());
    }
  } catch (const std::exception& ex) {
    main_bad.push_back(ex.what());
  }
  for (auto& th : threads) th.join();
  for (auto& b : main_bad) FAIL_CHECK("main: " << b);
  for (auto& f : failures) FAIL_CHECK(f);
}

TEST_CASE("engines: rules given as Lua functions stay in the registering engine", "[embed][engines]") {
  mf::Engine owner, other;
  owner.eval(R"lua(
    local kernel = [[ function(ins, outs, p)
      return function() local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do y[i] = 2 * x[i] end end end ]]
    mf.register_op{name = 'engines_local_shape', num_inputs = 1, doc = '2x', lua_compute = kernel,
      infer_shape = function(s) return {s[1]} end}
    mf.register_op{name = 'engines_local_grad', num_inputs = 1, doc = '2x', lua_compute = kernel,
      gradient = function(x, y, gy) return {gy * 2} end}
  )lua");
  // the owner runs both, with their gradients
  CHECK(owner.eval("return mf.engines_local_shape(mf.ones(3)):sum():item()").at(0).number() == 6);
  const char* grad = R"lua(
    local x = mf.placeholder('float32', {3}, 'x')
    local g = mf.gradients(mf.sum(mf.engines_local_grad(x)), {x})[1]
    return mf.Session():run(g, {[x] = mf.ones(3)})
  )lua";
  CHECK(owner.eval(grad).at(0).tensor().to_vector<float>() == std::vector<float>{2, 2, 2});
  // another engine: a clear error naming the op and the field, and how to share the rule
  std::string shape_err = error_of([&] { other.eval("return mf.engines_local_shape(mf.ones(3))"); });
  CHECK_THAT(shape_err, Catch::Contains("engines_local_shape: its infer_shape was given to mf.register_op as a "
                                        "Lua function, which lives in the engine that registered it"));
  CHECK_THAT(shape_err, Catch::Contains("register it with infer_shape as a source string"));
  // its shape rule ('same') is native, so the op itself runs; only the gradient is missing
  CHECK(other.eval("return mf.engines_local_grad(mf.ones(3)):sum():item()").at(0).number() == 6);
  std::string grad_err = error_of([&] { other.eval(grad); });
  CHECK_THAT(grad_err, Catch::Contains("engines_local_grad: its gradient was given to mf.register_op as a Lua function"));
  // and the engine stays usable
  CHECK(other.eval("return mf.sum(mf.ones(4)):item()").at(0).number() == 4);
}

// The attributes register_op takes live in the registry too: a write op's out-of-place form
// (in_place_of) and the inputs that lend only their shape (lends_shape) serve every engine.
TEST_CASE("engines: a Lua op's block attributes are seen by every engine", "[embed][engines]") {
  mf::Engine before, owner;
  owner.eval(R"lua(
    local k = [[ function(ins, outs) return function()
      local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
      for i = 0, n - 1 do y[i] = 3 * x[i] end end end ]]
    mf.register_op{name = 'engines_triple', num_inputs = 1, doc = '3 x', lua_compute = k,
      gradient = 'function(x, y, gy) return {gy * 3} end'}
    mf.register_op{name = 'engines_triple_', num_inputs = 1, doc = 'x = 3 x', writes = true,
      in_place_of = 'engines_triple', lua_compute = [[ function(ins, outs) return function()
        local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do x[i] = 3 * x[i]; y[i] = x[i] end end end ]]}
    mf.register_op{name = 'engines_sevens', num_inputs = 1, doc = 'sevens shaped like x', lends_shape = {1},
      lua_compute = [[ function(ins, outs) return function()
        local y = outs[1]:data(); for i = 0, outs[1]:numel() - 1 do y[i] = 7 end end end ]]}
  )lua", "register");
  mf::Engine after;
  for (mf::Engine* e : {&before, &after}) {
    // a graph refusing the write names the out-of-place form
    std::string err = error_of([&] {
      e->eval("mf.reset_default_graph(); mf.engines_triple_(mf.placeholder('float32', {2}, 'p'))", "graph write");
    });
    CHECK_THAT(err, Catch::Contains("engines_triple returns a new result"));
    // every input lends its shape: nothing recorded, nothing flows back (d sum(sevens(w) * w)/dw = 7)
    mf::Values v = e->eval(R"lua(
      local w = mf.tensor({1, 2}, {requires_grad = true})
      local s = mf.engines_sevens(w)
      mf.sum(s * w):backward()
      return s:requires_grad(), w.grad
    )lua", "lends_shape");
    CHECK(v.at(0).boolean() == false);
    CHECK(v.at(1).tensor().to_vector<float>() == kSevens);
  }
}
