// One block makes a pointwise op: a functor and a unary_op block registered here, at test time,
// give an op that runs eagerly, in a graph, inside a fused group, and differentiates; every value is
// checked against hand-computed numbers and finite differences. The op joins this process's
// registry only, so the file sorts after test_ops.cc, whose coverage check would miss its case.
#include <catch2/catch.hpp>
#include <moonflow/moonflow.hpp>

#include <mutex>
#include <string>

#include "op/elemwise.h"

namespace {

// softsign: x / (1 + |x|); its derivative is 1 / (1 + |x|)^2
struct Softsign {
  template <class A> static A f(A x) { return x / (A(1) + (x < 0 ? -x : x)); }
};

// The op's one block, as it would stand in a register_<family>_ops() of src/op/<family>.cc.
void register_test_softsign() {
  mf::unary_op<Softsign>("test_softsign")
      .describe("x / (1 + |x|), elementwise.")
      .infer_type(mf::float_type)
      .gradient("function(x, y, gy) return {gy / mf.square(mf.abs(x) + 1)} end");
}

void register_softsign() {
  static std::once_flag once;
  std::call_once(once, [] {
    mf::register_builtin_ops();  // the built-in ops first, as an engine's start would
    register_test_softsign();
  });
}

// Runs Lua in a fresh engine; a Lua error fails the test with its message.
void run_lua(const char* src) {
  mf::Engine engine;
  try {
    engine.eval(src);
  } catch (const mf::Error& e) {
    FAIL(e.message() << "\n" << e.traceback());
  }
}

}  // namespace

TEST_CASE("pointwise op: one block registers a unary op with its code", "[pointwise]") {
  register_softsign();
  const mf::OpDef* op = mf::Registry::get().find("test_softsign");
  REQUIRE(op);
  const mf::PointwiseKernels* k = mf::pointwise_at(op->pointwise_);
  REQUIRE(k);
  CHECK(std::string(k->name) == "test_softsign");
  CHECK(k->arity == 1);
  CHECK(k->nparams == 0);
  CHECK(k->fusable);
  // the Lua mappings come from the same code
  run_lua(("assert(mf.kernels.U.test_softsign == " + std::to_string(op->pointwise_) +
           ", 'mf.kernels.U.test_softsign is ' .. tostring(mf.kernels.U.test_softsign))").c_str());
}

TEST_CASE("pointwise op: a test-registered op runs eagerly, in a graph, fused, and differentiates", "[pointwise]") {
  register_softsign();
  run_lua(R"lua(
    local function near(got, want, tol, what)
      for i = 1, #want do
        if math.abs(got[i] - want[i]) > tol then
          error(('%s[%d]: got %.17g, want %.17g'):format(what, i, got[i], want[i]), 2)
        end
      end
    end
    local xs = {-3, -0.5, 0, 2}
    local soft = {-0.75, -1 / 3, 0, 2 / 3}   -- x / (1 + |x|), by hand
    local dsoft = {1 / 16, 1 / 2.25, 1, 1 / 9} -- 1 / (1 + |x|)^2, by hand

    -- eager, float64 and float32, and a strided view
    near(mf.test_softsign(mf.tensor(xs, 'float64')):totable(), soft, 1e-15, 'eager float64')
    near(mf.test_softsign(mf.tensor(xs)):totable(), soft, 1e-7, 'eager float32')
    local m = mf.tensor({{-3, 9}, {-0.5, 9}, {0, 9}, {2, 9}}, 'float64')
    near(mf.test_softsign(m:select(2, 1)):totable(), soft, 1e-15, 'eager strided')
    local ok, err = pcall(mf.test_softsign, mf.tensor({1, 2}, 'int32'))
    assert(not ok and tostring(err):find('test_softsign'), 'an int32 input is refused naming the op: ' .. tostring(err))

    -- a graph, fused with its neighbours: 2 * softsign(x) + 1 runs as one fused step
    local x = mf.placeholder('float64', {4}, 'x')
    local y = mf.test_softsign(x) * 2 + 1
    local want = {}
    for i = 1, 4 do want[i] = 2 * soft[i] + 1 end
    local s = mf.Session()
    near(s:run(y, {[x] = mf.tensor(xs, 'float64')}):totable(), want, 1e-15, 'graph, fused')
    local st = s:stats()
    assert(st.steps == 1 and st.fused == 2, ('expected 1 step with 2 nodes folded into it; got %d steps, %d folded')
      :format(st.steps, st.fused))
    local plain = mf.Session{fuse = false}
    near(plain:run(y, {[x] = mf.tensor(xs, 'float64')}):totable(), want, 1e-15, 'graph, unfused')
    assert(plain:stats().steps == 3, 'unfused: softsign, mul and add run as 3 steps')

    -- the gradient rule, against the hand-computed derivative and central differences
    local g = mf.gradients(mf.sum(mf.test_softsign(x)), {x})[1]
    local gv = s:run(g, {[x] = mf.tensor(xs, 'float64')}):totable()
    near(gv, dsoft, 1e-15, 'gradient')
    local h, fd = 1e-6, {}
    for i = 1, 4 do
      local xp, xm = mf.tensor(xs, 'float64'), mf.tensor(xs, 'float64')
      xp:set(i, xs[i] + h); xm:set(i, xs[i] - h)
      fd[i] = (mf.test_softsign(xp):sum():item() - mf.test_softsign(xm):sum():item()) / (2 * h)
    end
    near(gv, fd, 2e-6, 'gradient vs central differences')  -- at 0: 1 / (1 + h)
  )lua");
}
