// Tensor creation: constant fills, ranges, identity and seeded random draws (Philox, src/core/rng.cc).
#include <cmath>

#include "../core/writes.h"
#include "registry.h"

namespace mf {

namespace {

void float_dtype_param(InferCtx& c) {
  dtype_param(c);
  if (!dtype_is_float(c.out[0].dtype_id))
    fail(c.name(), ": dtype ", dtype_name(c.out[0].dtype_id), " not supported; expected float32 or float64");
}

// full's value must fit its dtype (300 into uint8, NaN into int64 are errors; NaN fills floats).
void full_type(InferCtx& c) {
  dtype_param(c);
  check_value_fits(c.p.get_float("value"), c.out[0].dtype_id, c.name());
}

// rand: [low, high) must be a range (PyTorch's uniform_ refuses low > high too).
void rand_shape(InferCtx& c) {
  double low = c.p.get_float("low"), high = c.p.get_float("high");
  if (low > high) fail("rand: low ", low, " is greater than high ", high, "; expected low <= high");
  shape_param(c);
}

void arange_shape(InferCtx& c) {
  double start = c.p.get_float("start"), stop = c.p.get_float("stop"), step = c.p.get_float("step");
  if (step == 0) fail("arange: step is 0");
  if ((stop - start) * step < 0)
    fail("arange: from ", start, " to ", stop, " never arrives with step ", step);
  double n = std::ceil((stop - start) / step);
  if (n > 9e15) fail("arange: ", n, " elements requested");
  c.set_out(0, {int64_t(n)});
}

void eye_shape(InferCtx& c) {
  int64_t n = c.p.get_int("n"), m = c.p.get_int("m");
  c.set_out(0, {n, m < 0 ? n : m});
}

}  // namespace

Field shape_field() { return Field::int_list("shape", "", "Sizes of the result; empty for a 0-dim tensor."); }
Field dtype_field() { return Field::dtype("dtype", "float32", "Element type."); }
void shape_param(InferCtx& c) { c.set_out(0, c.p.get_list("shape")); }

std::string draw_kernel(bool normal, const char* a, const char* b) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, a, b = outs[1], p.)lua") + a + ", p." + b + R"lua(
  return function() K.rand(y, )lua" + (normal ? "1" : "0") + R"lua(, a, b) end
end)lua";
}

std::string fill_kernel(const char* value) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, v = outs[1], )lua") + value + R"lua(
  return function() K.fill(y, v) end
end)lua";
}

void register_init_ops() {
  MF_REGISTER_OP(zeros)
      .describe("A tensor of zeros.")
      .inputs({})
      .param(shape_field())
      .list_args()
      .param(dtype_field())
      .infer_shape(shape_param)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, fill_kernel("0"));

  MF_REGISTER_OP(ones)
      .describe("A tensor of ones.")
      .inputs({})
      .param(shape_field())
      .list_args()
      .param(dtype_field())
      .infer_shape(shape_param)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, fill_kernel("1"));

  MF_REGISTER_OP(full)
      .describe("A tensor filled with value.")
      .inputs({})
      .param(shape_field())
      .param(Field::number("value", 0, "Fill value (NaN and infinities fill float dtypes).").mandatory().allow_nan())
      .param(dtype_field())
      .infer_shape(shape_param)
      .infer_type(full_type)
      .lua_compute(MF_CPU, fill_kernel("p.value"));

  MF_REGISTER_OP(arange)
      .describe("start, start+step, ... up to but excluding stop (1-D).")
      .inputs({})
      .param(Field::number("start", 0, "First value."))
      .param(Field::number("stop", 0, "End, excluded.").mandatory())
      .param(Field::number("step", 1, "Increment (nonzero, may be negative)."))
      .param(dtype_field())
      // arange(stop), arange(start, stop[, step]), each with an optional trailing table of params,
      // or arange{start =, stop =, step =, dtype =}
      .lua_adapter(R"lua(
function(op, a, b, c, opts)
  if type(a) == 'table' then return {}, a end
  if type(b) == 'table' then opts, b = b, nil elseif type(c) == 'table' then opts, c = c, nil end
  local p = b == nil and {start = 0, stop = a} or {start = a, stop = b, step = c}
  if type(opts) == 'table' then for k, v in pairs(opts) do p[k] = v end end
  return {}, p
end)lua")
      .infer_shape(arange_shape)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, start, step = outs[1], p.start, p.step
  return function() K.arange(y, start, step) end
end)lua");

  MF_REGISTER_OP(eye)
      .describe("n x m identity matrix (m defaults to n).")
      .inputs({})
      .param(Field::integer("n", 1, "Rows.").range(0, 1e9).mandatory())
      .param(Field::integer("m", -1, "Columns; -1 means n.").range(-1, 1e9))
      .param(dtype_field())
      .infer_shape(eye_shape)
      .infer_type(dtype_param)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y = outs[1]
  return function() K.eye(y) end
end)lua");

  MF_REGISTER_OP(rand)
      .describe("Uniform draws in [low, high) from the seeded counter-based generator (mf.manual_seed).")
      .inputs({})
      .param(shape_field())
      .list_args()
      .param(Field::number("low", 0, "Lower bound, included."))
      .param(Field::number("high", 1, "Upper bound, excluded."))
      .param(dtype_field())
      .random()
      .infer_shape(rand_shape)
      .infer_type(float_dtype_param)
      .lua_compute(MF_CPU, draw_kernel(false, "low", "high"));

  MF_REGISTER_OP(randn)
      .describe("Normal draws with mean and std from the seeded counter-based generator (mf.manual_seed).")
      .inputs({})
      .param(shape_field())
      .list_args()
      .param(Field::number("mean", 0, "Mean."))
      .param(Field::number("std", 1, "Standard deviation.").range(0, INFINITY))
      .param(dtype_field())
      .random()
      .infer_shape(shape_param)
      .infer_type(float_dtype_param)
      .lua_compute(MF_CPU, draw_kernel(true, "mean", "std"));
}

}  // namespace mf
