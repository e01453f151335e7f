// In-place methods (PyTorch's trailing underscore: x:add_(y) writes x and returns it) and the
// factories shaped like a tensor (full_like, rand_like, randn_like) or by sizes (empty).
// Every in-place op keeps x's shape and dtype: the other operand broadcasts to x. Kernels: the
// pointwise, fill and rand routines (src/kernels/cpu/elemwise.cc).
#include <cmath>

#include "../core/writes.h"
#include "elemwise.h"
#include "registry.h"

namespace mf {

namespace {

// x op= other: other broadcasts to x, whose shape never changes (PyTorch's rule).
void binary_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &o = c.input(1);
  Shape b = broadcast_shapes(c.name(), shape_of(x), shape_of(o), "x", "other");
  if (!shapes_match(b, shape_of(x)))
    fail(c.name(), ": other is ", shape_str(o), "; it must broadcast to x ", shape_str(x),
         " (an in-place op keeps x's shape; use ", c.op.in_place_of_, " for a new tensor)");
  write_x(c);
}

// One dtype: x's, which an in-place op cannot change.
void binary_type(InferCtx& c) {
  int dx = c.input(0).dtype_id, dy = c.input(1).dtype_id;
  if (dx != dy)
    fail(c.name(), ": x is ", dtype_name(dx), ", other is ", dtype_name(dy),
         "; expected one dtype (x keeps its dtype in place: convert other, e.g. other:type('", dtype_name(dx), "'))");
  c.out[0].dtype_id = dx;
}

// alpha scales other: into integers (dtype dt) only an integral alpha that fits the dtype; operands
// names the integer operands in the message ("x is", "the operands are").
void check_alpha(InferCtx& c, int dt, const char* operands) {
  double a = c.p.get_float("alpha");
  if (dtype_is_float(dt)) return;
  if (!std::isfinite(a) || std::floor(a) != a)
    fail(c.name(), ": alpha ", a, " is not an integer; ", operands, " ", dtype_name(dt),
         " (convert with :float() first)");
  check_value_fits(a, dt, c.name());
}

// add_/sub_: x's dtype, and alpha fits it.
void alpha_type(InferCtx& c) {
  binary_type(c);
  check_alpha(c, c.input(0).dtype_id, "x is");
}

void clamp_shape(InferCtx& c) {
  clamp_check(c);
  write_x(c);
}

// uniform_'s rule (normal_ takes write_x alone)
void uniform_shape(InferCtx& c) {
  double lo = c.p.get_float("from"), hi = c.p.get_float("to");
  if (!(lo <= hi)) fail(c.name(), ": from ", lo, " is greater than to ", hi, "; expected from <= to");
  write_x(c);
}

// The in-place pass of x op= other, in a factory whose locals are y, x, v (other), op (K.B's code),
// overlap (mf._reads_overlap) and K: an other that shares memory with x other than element for
// element (x:add_(x:t())) is read from a copy, as copy reads its source whole first; output 1 aliases
// x. rename: the binary kernel names its fault after the operation it computes (div: integer division
// by zero); the error is raised again naming the op the user called (div_).
std::string inplace_pass(const std::string& op, bool rename) {
  std::string run = rename ? R"lua(
      local ok, err = pcall(K.binary, op, x, x, w)
      if not ok then
        error((tostring(err):gsub('^(.-))lua" + op + R"lua(: ', '%1)lua" + op + R"lua(_: ', 1)), 0)
      end)lua"
                           : R"lua(
      K.binary(op, x, x, w))lua";
  return R"lua(
    return function()
      local w = v
      if overlap(x, v) then
        w = mf._new_like_meta(v, ')lua" + op + R"lua(_')
        K.copy(w, v)
      end)lua" + run + R"lua(
      K.alias(y, x, 0)
    end)lua";
}

// The x + alpha * other family (add, sub and their in-place forms; z is what is written: the
// output, or x itself). alpha == 1, the usual case, is one pass; another alpha scales other into a
// scratch tensor of other's shape first (integers stay exact: no float round trip).
std::string alpha_kernel(const char* binop, bool in_place) {
  std::string op = binop, name = op + (in_place ? "_" : "");
  std::string one = in_place ? inplace_pass(op, false) : R"lua(
    return function() K.binary(op, y, x, v) end)lua";
  return R"lua(
function(ins, outs, p, K)
  local y, x, v, alpha, overlap = outs[1], ins[1], ins[2], p.alpha, mf._reads_overlap
  local op, mul, z = K.B.)lua" + op + ", K.B.mul, " + (in_place ? "x" : "y") + R"lua(
  if alpha == 1 then)lua" + one + R"lua(
  end
  local a = mf._new_tensor({}, v._dtype_id, v._device_id)  -- alpha as a 0-dim tensor of v's dtype
  K.fill(a, alpha)
  return function()
    local t = mf._new_like_meta(v, ')lua" + name + R"lua(')  -- per call: a cached entry holds no scratch
    K.binary(mul, t, v, a)
    K.binary(op, z, x, t))lua" + (in_place ? "\n    K.alias(y, x, 0)" : "") + R"lua(
  end
end)lua";
}

// mul_, div_: the in-place pass alone.
std::string binary_inplace_kernel(const char* binop) {
  std::string op = binop;
  return R"lua(
function(ins, outs, p, K)
  local y, x, v, op, overlap = outs[1], ins[1], ins[2], K.B.)lua" + op + R"lua(, mf._reads_overlap)lua" +
         inplace_pass(op, true) + R"lua(
end)lua";
}

// uniform_ / normal_: the generator writes dense memory; a strided x takes a dense draw copied in.
std::string random_kernel(const char* normal, const char* a, const char* b) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, x, a, b = outs[1], ins[1], p.)lua") + a + ", p." + b + R"lua(
  if x._is_contig == 1 then return function() K.rand(x, )lua" + normal + R"lua(, a, b); K.alias(y, x, 0) end end
  return function()
    local t = mf._new_like_meta(x, 'random')
    K.rand(t, )lua" + normal + R"lua(, a, b)
    K.copy(x, t)
    K.alias(y, x, 0)
  end
end)lua";
}

Field alpha_field() { return Field::number("alpha", 1, "Multiplier of other: x + alpha * other (integral for integer x)."); }

void full_like_type(InferCtx& c) {
  same_type(c);
  check_value_fits(c.p.get_float("value"), c.out[0].dtype_id, c.name());
}
// rand_like's rule (randn_like takes same_shape alone)
void rand_like_shape(InferCtx& c) {
  double lo = c.p.get_float("low"), hi = c.p.get_float("high");
  if (!(lo <= hi)) fail(c.name(), ": low ", lo, " is greater than high ", hi, "; expected low <= high");
  same_shape(c);
}

}  // namespace

// The out-of-place add and sub with alpha (their blocks in elemwise.cc take these).
std::string alpha_binary_kernel(const char* binop) { return alpha_kernel(binop, false); }
void alpha_binary_type(InferCtx& c) {
  arith_type(c);
  check_alpha(c, c.out[0].dtype_id, "the operands are");
}

void register_inplace_ops() {
  MF_REGISTER_OP(add_)
      .in_place_of("add")
      .describe("x + alpha * other written into x in place (other broadcasts to x; numbers allowed); returns x. "
                "Not differentiable: it writes x (add is).")
      .inputs({"x", "other"})
      .param(alpha_field())
      .view()
      .writes()
      .infer_shape(binary_shape)
      .infer_type(alpha_type)
      .lua_compute(MF_CPU, alpha_kernel("add", true));

  MF_REGISTER_OP(sub_)
      .in_place_of("sub")
      .describe("x - alpha * other written into x in place (other broadcasts to x; numbers allowed); returns x. "
                "Not differentiable: it writes x (sub is).")
      .inputs({"x", "other"})
      .param(alpha_field())
      .view()
      .writes()
      .infer_shape(binary_shape)
      .infer_type(alpha_type)
      .lua_compute(MF_CPU, alpha_kernel("sub", true));

  MF_REGISTER_OP(mul_)
      .in_place_of("mul")
      .describe("x * other written into x in place (other broadcasts to x; numbers allowed); returns x. "
                "Not differentiable: it writes x (mul is).")
      .inputs({"x", "other"})
      .view()
      .writes()
      .infer_shape(binary_shape)
      .infer_type(binary_type)
      .lua_compute(MF_CPU, binary_inplace_kernel("mul"));

  MF_REGISTER_OP(div_)
      .in_place_of("div")
      .describe("x / other written into x in place (other broadcasts to x; integers divide truncating toward "
                "zero); returns x. Not differentiable: it writes x (div is).")
      .inputs({"x", "other"})
      .view()
      .writes()
      .infer_shape(binary_shape)
      .infer_type(binary_type)
      .lua_compute(MF_CPU, binary_inplace_kernel("div"));

  MF_REGISTER_OP(zero_)
      .alias("zero")
      .describe("Writes 0 into every element of x and returns x (Torch7's zero). Not differentiable.")
      .inputs({"x"})
      .view()
      .writes()
      .overwrites()
      .infer_shape(write_x)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.fill(x, 0); K.alias(y, x, 0) end
end)lua");

  MF_REGISTER_OP(clamp_)
      .in_place_of("clamp")
      .describe("Limits every element of x to [min, max] in place and returns x; NaN elements stay NaN. "
                "Not differentiable: it writes x (clamp is).")
      .inputs({"x"})
      .param(Field::number("min", -INFINITY, "Lower bound (default: none; NaN makes every element NaN).").allow_nan())
      .param(Field::number("max", INFINITY, "Upper bound (default: none; NaN makes every element NaN).").allow_nan())
      .view()
      .writes()
      .infer_shape(clamp_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, lo, hi, clamp = outs[1], ins[1], p.min, p.max, K.U.clamp
  return function() K.unary(clamp, x, x, lo, hi); K.alias(y, x, 0) end
end)lua");

  MF_REGISTER_OP(uniform_)
      .alias("uniform")
      .describe("Writes uniform draws in [from, to) into x (float) from the seeded generator (mf.manual_seed) "
                "and returns x (Torch7's uniform). Not differentiable.")
      .inputs({"x"})
      .param(Field::number("from", 0, "Lower bound, included."))
      .param(Field::number("to", 1, "Upper bound, excluded."))
      .view()
      .writes()
      .overwrites()
      .random()
      .infer_shape(uniform_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, random_kernel("0", "from", "to"));

  MF_REGISTER_OP(normal_)
      .describe("Writes normal draws with mean and std into x (float) from the seeded generator "
                "(mf.manual_seed) and returns x. Not differentiable.")
      .inputs({"x"})
      .param(Field::number("mean", 0, "Mean."))
      .param(Field::number("std", 1, "Standard deviation.").range(0, INFINITY))
      .view()
      .writes()
      .overwrites()
      .random()
      .infer_shape(write_x)
      .infer_type(float_type)
      .lua_compute(MF_CPU, random_kernel("1", "mean", "std"));

  MF_REGISTER_OP(empty)
      .describe("A tensor of the given sizes whose contents are unspecified (as PyTorch's empty): nothing is "
                "written, so it costs an allocation only. Use zeros for zeros.")
      .inputs({})
      .param(shape_field())
      .list_args()
      .param(dtype_field())
      .infer_shape(shape_param)
      .infer_type(dtype_param)
      // the closure does nothing: fresh memory from the allocator (a reused block, or pages the
      // system zeroes on first touch) is handed out as it is, never written here
      .lua_compute(MF_CPU, "function(ins, outs, p, K) return function() end end");

  MF_REGISTER_OP(full_like)
      .describe("value in every element, with x's shape and dtype.")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .param(Field::number("value", 0, "Fill value (must fit x's dtype; NaN and infinities fill floats).")
                 .mandatory()
                 .allow_nan())
      .infer_shape(same_shape)
      .infer_type(full_like_type)
      .lua_compute(MF_CPU, fill_kernel("p.value"));

  MF_REGISTER_OP(rand_like)
      .describe("Uniform draws in [low, high) with x's shape and (float) dtype, from the seeded generator.")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .param(Field::number("low", 0, "Lower bound, included."))
      .param(Field::number("high", 1, "Upper bound, excluded."))
      .random()
      .infer_shape(rand_like_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, draw_kernel(false, "low", "high"));

  MF_REGISTER_OP(randn_like)
      .describe("Normal draws with mean and std, with x's shape and (float) dtype, from the seeded generator.")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .param(Field::number("mean", 0, "Mean."))
      .param(Field::number("std", 1, "Standard deviation.").range(0, INFINITY))
      .random()
      .infer_shape(same_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, draw_kernel(true, "mean", "std"));
}

}  // namespace mf
