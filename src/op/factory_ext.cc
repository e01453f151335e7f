// Ranges and integer draws (issue 21): linspace, logspace, randperm, randint, multinomial. The draws
// use the seeded Philox generator (mf.manual_seed) and give 1-based indices, as the rest of the API.
#include <cmath>

#include "../core/writes.h"
#include "registry.h"

namespace mf {

namespace {

void linspace_shape(InferCtx& c) { c.set_out(0, {c.p.get_int("steps")}); }

void logspace_shape(InferCtx& c) {
  if (c.p.get_float("base") == 0) fail("logspace: base is 0; expected a nonzero base");
  linspace_shape(c);
}

void randperm_shape(InferCtx& c) { c.set_out(0, {c.p.get_int("n")}); }

void randperm_type(InferCtx& c) {
  dtype_param(c);
  if (c.p.get_int("n") > 0) check_value_fits(double(c.p.get_int("n")), c.out[0].dtype_id, "randperm");
}

void randint_shape(InferCtx& c) {
  double low = c.p.get_float("low"), high = c.p.get_float("high");
  if (low != std::floor(low) || high != std::floor(high))
    fail("randint: low ", low, " and high ", high, " must be integers");
  if (!(low < high)) fail("randint: low ", low, " must be less than high ", high, " (high is excluded)");
  if (std::fabs(low) > 9e15 || std::fabs(high) > 9e15) fail("randint: low and high must lie within +-9e15");
  c.set_out(0, c.p.get_list("shape"));
}

void randint_type(InferCtx& c) {
  dtype_param(c);
  check_value_fits(c.p.get_float("low"), c.out[0].dtype_id, "randint");
  check_value_fits(c.p.get_float("high") - 1, c.out[0].dtype_id, "randint");
}

void multinomial_shape(InferCtx& c) {
  const mf_tensor& w = c.input(0);
  int64_t n = c.p.get_int("num_samples");
  if (w.ndim < 1 || w.ndim > 2)
    fail("multinomial: probs is ", shape_str(w), "; expected 1-D weights or 2-D rows of weights");
  int64_t k = w.shape[w.ndim - 1];
  if (!is_unknown(k) && k == 0) fail("multinomial: probs is ", shape_str(w), "; expected at least one category");
  if (!c.p.get_bool("replacement") && !is_unknown(k) && n > k)
    fail("multinomial: cannot draw ", n, " of ", k, " categories without replacement");
  if (w.ndim == 1) c.set_out(0, {n});
  else c.set_out(0, {w.shape[0], n});
}

void multinomial_type(InferCtx& c) {
  if (!dtype_is_float(c.input(0).dtype_id))
    fail("multinomial: probs is ", dtype_name(c.input(0).dtype_id), "; expected float32 or float64 weights");
  c.out[0].dtype_id = MF_INT64;
}

}  // namespace

void register_factory_ext_ops() {
  MF_REGISTER_OP(linspace)
      .describe("steps values evenly spaced from start to stop, both included (1-D).")
      .inputs({})
      .param(Field::number("start", 0, "First value.").mandatory())
      .param(Field::number("stop", 0, "Last value (included).").mandatory())
      .param(Field::integer("steps", 0, "Number of values.").range(0, 1e12).mandatory())
      .param(Field::dtype("dtype", "float32", "Element type (integer dtypes truncate)."))
      .infer_shape(linspace_shape)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, a, b = outs[1], p.start, p.stop
  return function() K.linspace(y, a, b, 0) end
end)lua");

  MF_REGISTER_OP(logspace)
      .describe("base to the powers linspace(start, stop, steps): steps values evenly spaced on a log scale (1-D).")
      .inputs({})
      .param(Field::number("start", 0, "First exponent.").mandatory())
      .param(Field::number("stop", 0, "Last exponent (included).").mandatory())
      .param(Field::integer("steps", 0, "Number of values.").range(0, 1e12).mandatory())
      .param(Field::number("base", 10, "Base of the powers (nonzero)."))
      .param(Field::dtype("dtype", "float32", "Element type (integer dtypes truncate)."))
      .infer_shape(logspace_shape)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, a, b, base = outs[1], p.start, p.stop, p.base
  return function() K.linspace(y, a, b, base) end
end)lua");

  MF_REGISTER_OP(randperm)
      .describe("A random permutation of 1..n (1-based, so it indexes: x:index_select(mf.randperm(n), 1)).")
      .inputs({})
      .param(Field::integer("n", 0, "Number of elements.").range(0, 9e15).mandatory())
      .param(Field::dtype("dtype", "int64", "Element type."))
      .random()
      .infer_shape(randperm_shape)
      .infer_type(randperm_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y = outs[1]
  return function() K.randperm(y) end
end)lua");

  MF_REGISTER_OP(randint)
      .describe("Integers drawn uniformly from [low, high), high excluded as in PyTorch: randint(low, high, sizes...) "
                "or randint(high, {sizes}).")
      .inputs({})
      .param(Field::number("low", 0, "Smallest value (included)."))
      .param(Field::number("high", 0, "End of the range (excluded).").mandatory())
      .param(Field::int_list("shape", "", "Sizes of the result; empty for a 0-dim tensor."))
      .param(Field::dtype("dtype", "int64", "Element type."))
      .random()
      // randint(low, high, sizes... or {sizes}[, opts]), randint(high, {sizes}[, opts]), randint{...}
      .lua_adapter(R"lua(
function(op, a, b, ...)
  if type(a) == 'table' then return {}, a end
  local n, raise = select('#', ...), mf.kernels.raise  -- raise blames the caller's line
  local rest = mf._pack_args(n, ...)  -- not {...} (tensor.lua's pack_args says why)
  local function is_list(t) return type(t) == 'table' and (t[1] ~= nil or next(t) == nil) end
  local p, i = {}, 1
  if is_list(b) then
    p.low, p.high, p.shape = 0, a, b
  elseif type(b) == 'number' then
    p.low, p.high = a, b
    if is_list(rest[1]) then
      p.shape, i = rest[1], 2
    else
      p.shape = {}
      while type(rest[i]) == 'number' do p.shape[#p.shape + 1] = rest[i]; i = i + 1 end
      if i == 1 then
        raise('randint: no sizes; call randint(low, high, sizes...), randint(low, high, {sizes}) or ' ..
              'randint(high, {sizes})')
      end
    end
  else
    raise('randint: expected randint(low, high, sizes...) or randint(high, {sizes}); argument 2 is a ' ..
          (mf.is_tensor(b) and 'tensor' or type(b)))
  end
  for j = i, n do
    if type(rest[j]) ~= 'table' then
      raise('randint: unexpected argument ' .. tostring(rest[j]) .. ' after the sizes')
    end
    for k, v in pairs(rest[j]) do p[k] = v end
  end
  return {}, p
end)lua")
      .infer_shape(randint_shape)
      .infer_type(randint_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, lo, hi = outs[1], p.low, p.high
  return function() K.randint(y, lo, hi) end
end)lua");

  MF_REGISTER_OP(multinomial)
      .describe("num_samples 1-based category indices (int64) drawn per row of nonnegative weights (1-D or 2-D "
                "probs, need not sum to 1); without replacement no category repeats within a row.")
      .inputs({"probs"})
      .param(Field::integer("num_samples", 1, "Draws per row.").range(1, 1e9).mandatory())
      .param(Field::boolean("replacement", false, "Draw with replacement (categories may repeat)."))
      .random()
      .infer_shape(multinomial_shape)
      .infer_type(multinomial_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, w, rep = outs[1], ins[1], p.replacement and 1 or 0
  return function() K.multinomial(y, w, rep) end
end)lua");
}

}  // namespace mf
