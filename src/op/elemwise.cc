// Pointwise operators: unary math, binary arithmetic and comparison with NumPy broadcasting,
// clamp, where and cast. Kernels: src/kernels/cpu/elemwise.cc.
#include <cmath>

#include "elemwise.h"

namespace mf {

std::string unary_kernel(int code, const std::vector<std::string>& params) {
  std::string a = params.size() > 0 ? "p." + params[0] : "0", b = params.size() > 1 ? "p." + params[1] : "0";
  return R"lua(
function(ins, outs, p, K)
  local y, x, a, b = outs[1], ins[1], )lua" + a + ", " + b + R"lua(
  return function() K.unary()lua" + std::to_string(code) + R"lua(, y, x, a, b) end
end)lua";
}

std::string binary_kernel(int code) {
  return R"lua(
function(ins, outs, p, K)
  local z, x, y = outs[1], ins[1], ins[2]
  return function() K.binary()lua" + std::to_string(code) + R"lua(, z, x, y) end
end)lua";
}

void broadcast_shape(InferCtx& c) {
  Shape s = c.in_shape(0);
  for (size_t i = 1; i < c.in.size(); ++i) {
    std::string prev = i == 1 ? c.op.inputs_[0] : "the broadcast of the earlier inputs";
    s = broadcast_shapes(c.name(), s, c.in_shape(i), prev.c_str(), c.op.inputs_[i].c_str());
  }
  c.set_out(0, s);
}

namespace {

void check_same_dtypes(InferCtx& c, size_t first) {
  for (size_t i = first + 1; i < c.in.size(); ++i)
    if (c.input(i).dtype_id != c.input(first).dtype_id)
      fail(c.name(), ": ", c.op.inputs_[first], " is ", dtype_name(c.input(first).dtype_id), ", ", c.op.inputs_[i], " is ",
           dtype_name(c.input(i).dtype_id), "; expected one dtype (convert with :float(), :double() or mf.cast)");
}

}  // namespace

void arith_type(InferCtx& c) {
  check_same_dtypes(c, 0);
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void compare_type(InferCtx& c) {
  check_same_dtypes(c, 0);
  c.out[0].dtype_id = MF_UINT8;
}

namespace {

void where_type(InferCtx& c) {
  if (c.input(0).dtype_id != MF_UINT8)
    fail("where: cond is ", dtype_name(c.input(0).dtype_id), "; expected uint8 (the result of a comparison such as mf.gt(a, 0))");
  check_same_dtypes(c, 1);
  c.out[0].dtype_id = c.input(1).dtype_id;
}

void cast_type(InferCtx& c) { c.out[0].dtype_id = int(c.p.get("dtype").num); }

}  // namespace

// A NaN bound makes every element NaN (PyTorch's clamp); an integer x takes integral bounds only
// (a fractional one would be truncated silently).
void clamp_check(InferCtx& c) {
  same_shape(c);
  double lo = c.p.get_float("min"), hi = c.p.get_float("max");
  if (lo > hi) fail(c.name(), ": min ", lo, " is greater than max ", hi);
  int dt = c.input(0).dtype_id;
  if (!dtype_is_float(dt))
    for (double v : {lo, hi})
      if (v != v || (std::isfinite(v) && std::floor(v) != v))
        fail(c.name(), ": x is ", dtype_name(dt), " and bound ", v, " is not an integer; convert x with :float() first");
}

// Each pointwise op is one block: unary_op / binary_op (src/op/elemwise.h) with the functor of its
// math (src/core/pointwise.h), then its doc, params, float-only type rule and gradient.
void register_elemwise_ops() {
  unary_op<pw::Neg>("neg").alias("negative").describe("Negation, -x, elementwise.").gradient("function(x, y, gy) return {-gy} end");
  unary_op<pw::Abs>("abs")
      .describe("Absolute value |x|, elementwise.")
      .gradient("function(x, y, gy) return {gy * mf.sign(x)} end");
  unary_op<pw::Exp>("exp")
      .describe("Exponential e^x, elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * y} end");
  unary_op<pw::Log>("log")
      .describe("Natural logarithm, elementwise (-inf at 0, nan below).")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy / x} end");
  unary_op<pw::Log1p>("log1p")
      .describe("log(1 + x), accurate for small x, elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy / (x + 1)} end");
  unary_op<pw::Sqrt>("sqrt")
      .describe("Square root, elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy / (y * 2)} end");
  unary_op<pw::Rsqrt>("rsqrt")
      .describe("Reciprocal square root 1/sqrt(x), elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * y * y * y * -0.5} end");
  unary_op<pw::Sigmoid>("sigmoid")
      .describe("Logistic function 1/(1+e^-x), elementwise, stable for large |x|.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * y * (1 - y)} end");
  unary_op<pw::Tanh>("tanh")
      .describe("Hyperbolic tangent, elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * (1 - y * y)} end");
  unary_op<pw::Relu>("relu")
      .describe("Rectified linear unit max(x, 0), elementwise; NaN stays NaN.")
      .gradient("function(x, y, gy) return {mf.relu_backward(gy, y)} end");
  unary_op<pw::Sin>("sin")
      .describe("Sine (radians), elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * mf.cos(x)} end");
  unary_op<pw::Cos>("cos")
      .describe("Cosine (radians), elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {-(gy * mf.sin(x))} end");
  unary_op<pw::Square>("square").describe("x * x, elementwise.").gradient("function(x, y, gy) return {gy * x * 2} end");
  unary_op<pw::Sign>("sign")
      .describe("-1, 0 or 1 by the sign of x, elementwise; NaN stays NaN.")
      .gradient("function(x, y, gy) return {mf.zeros_like(x)} end");
  unary_op<pw::Floor>("floor")
      .describe("Largest integer not above x, elementwise.")
      .gradient("function(x, y, gy) return {mf.zeros_like(x)} end");
  unary_op<pw::Ceil>("ceil")
      .describe("Smallest integer not below x, elementwise.")
      .gradient("function(x, y, gy) return {mf.zeros_like(x)} end");
  unary_op<pw::Erf>("erf")
      .describe("Error function, elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * mf.exp(-(x * x)) * 1.1283791670955126} end");
  unary_op<pw::Gelu>("gelu")
      .describe("Gaussian error linear unit x * Phi(x) (exact, with erf), elementwise.")
      .infer_type(float_type)
      .gradient("function(x, y, gy) return {gy * (mf.erf(x * 0.7071067811865476) * 0.5 + 0.5 + "
                "x * mf.exp(x * x * -0.5) * 0.3989422804014327)} end");
  unary_op<pw::Round>("round")
      .describe("Nearest integer, halves to even, elementwise.")
      .gradient("function(x, y, gy) return {mf.zeros_like(x)} end");

  unary_op<pw::LeakyRelu>("leaky_relu", {"negative_slope"})
      .describe("x where x > 0, else negative_slope * x, elementwise.")
      .param(Field::number("negative_slope", 0.01, "Slope for negative inputs.").allow_nan())
      .infer_type(float_type)
      .gradient("function(x, y, gy, p) return {mf.where(mf.gt(x, 0), gy, gy * p.negative_slope)} end");

  unary_op<pw::Clamp>("clamp", {"min", "max"})
      .describe("Limits every element to [min, max]; NaN elements stay NaN.")
      .param(Field::number("min", -INFINITY, "Lower bound (default: none; NaN makes every element NaN).").allow_nan())
      .param(Field::number("max", INFINITY, "Upper bound (default: none; NaN makes every element NaN).").allow_nan())
      .infer_shape(clamp_check)
      .gradient("function(x, y, gy, p) return {mf.where(mf.mul(mf.ge(x, p.min), mf.le(x, p.max)), gy, 0)} end");

  // binary ops' gradients: function(a, b, y, gy, p) -> {ga, gb}; sum_to undoes broadcasting
  // add and sub take PyTorch's alpha (a + alpha * b); graph fusion leaves a step with alpha ~= 1 alone
  binary_op<pw::Add>("add")
      .describe("a + alpha * b elementwise, with NumPy broadcasting.")
      .param(Field::number("alpha", 1, "Multiplier of b (integral for integer operands)."))
      .infer_type(alpha_binary_type)
      .lua_compute(MF_CPU, alpha_binary_kernel("add"))
      .gradient("function(a, b, y, gy, p) local alpha = p and p.alpha or 1\n"
                "  return {mf.sum_to(gy, a), mf.sum_to(alpha == 1 and gy or gy * alpha, b)} end");
  binary_op<pw::Sub>("sub").alias("subtract")
      .describe("a - alpha * b elementwise, with NumPy broadcasting.")
      .param(Field::number("alpha", 1, "Multiplier of b (integral for integer operands)."))
      .infer_type(alpha_binary_type)
      .lua_compute(MF_CPU, alpha_binary_kernel("sub"))
      .gradient("function(a, b, y, gy, p) local alpha = p and p.alpha or 1\n"
                "  return {mf.sum_to(gy, a), mf.sum_to(alpha == 1 and -gy or gy * -alpha, b)} end");
  binary_op<pw::Mul>("mul").alias("multiply").alias("cmul")
      .describe("a * b elementwise (Hadamard product), with NumPy broadcasting.")
      .gradient("function(a, b, y, gy) return {mf.sum_to(gy * b, a), mf.sum_to(gy * a, b)} end");
  binary_op<pw::Div>("div").alias("divide").alias("cdiv")
      .describe("a / b elementwise, with NumPy broadcasting; integers divide truncating toward zero.")
      .gradient("function(a, b, y, gy) return {mf.sum_to(gy / b, a), mf.sum_to(-(gy * y) / b, b)} end");
  // PyTorch's rule at the removable singularities: d/da is 0 where b == 0 (0 * 0^-1 would be NaN),
  // d/db is 0 where a == 0 and b >= 0 (0 * log 0 would be NaN)
  binary_op<pw::Pow>("pow")
      .describe("a ^ b elementwise, with NumPy broadcasting.")
      .gradient(R"lua(function(a, b, y, gy)
  local ga = mf.where(mf.eq(b, 0), 0, gy * b * mf.pow(a, b - 1))
  local gb = mf.where(mf.mul(mf.eq(a, 0), mf.ge(b, 0)), 0, gy * y * mf.log(a))
  return {mf.sum_to(ga, a), mf.sum_to(gb, b)}
end)lua");
  // PyTorch's rule: ties share the gradient evenly (as central differences see it); where a NaN
  // is involved neither side is the smaller, so both get it
  binary_op<pw::Maximum>("maximum")
      .describe("Larger of a and b elementwise (NaN wins), with NumPy broadcasting.")
      .gradient(R"lua(function(a, b, y, gy)
  local h = mf.where(mf.eq(a, b), gy / 2, gy)
  return {mf.sum_to(mf.where(mf.lt(a, b), 0, h), a), mf.sum_to(mf.where(mf.gt(a, b), 0, h), b)}
end)lua");
  binary_op<pw::Minimum>("minimum")
      .describe("Smaller of a and b elementwise (NaN wins), with NumPy broadcasting.")
      .gradient(R"lua(function(a, b, y, gy)
  local h = mf.where(mf.eq(a, b), gy / 2, gy)
  return {mf.sum_to(mf.where(mf.gt(a, b), 0, h), a), mf.sum_to(mf.where(mf.lt(a, b), 0, h), b)}
end)lua");
  binary_op<pw::ReluBackward>("relu_backward")
      .describe("0 where b <= 0, else a: relu's gradient in one pass (a: gradient, b: relu's input or output; NaN "
                "in b passes a).")
      // linear in a with b's mask; b only selects (zero gradient almost everywhere): relu's grad of grad
      .gradient("function(a, b, y, gy) return {mf.sum_to(mf.relu_backward(gy, b), a)} end");
  binary_op<pw::Eq>("eq").alias("equal").describe("1 where a == b, else 0 (uint8), with NumPy broadcasting.");
  binary_op<pw::Ne>("ne").alias("not_equal").describe("1 where a ~= b, else 0 (uint8), with NumPy broadcasting.");
  binary_op<pw::Lt>("lt").alias("less").describe("1 where a < b, else 0 (uint8), with NumPy broadcasting.");
  binary_op<pw::Le>("le").alias("less_equal").describe("1 where a <= b, else 0 (uint8), with NumPy broadcasting.");
  binary_op<pw::Gt>("gt").alias("greater").describe("1 where a > b, else 0 (uint8), with NumPy broadcasting.");
  binary_op<pw::Ge>("ge").alias("greater_equal").describe("1 where a >= b, else 0 (uint8), with NumPy broadcasting.");

  MF_REGISTER_OP(where)
      .describe("Picks a where cond is nonzero, else b; all three broadcast together.")
      .inputs({"cond", "a", "b"})
      .mask_input(1)
      .strided()
      .infer_shape(broadcast_shape)
      .infer_type(where_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local out, c, a, b = outs[1], ins[1], ins[2], ins[3]
  return function() K.where(out, c, a, b) end
end)lua")
      .gradient("function(c, a, b, y, gy) return {nil, mf.sum_to(mf.where(c, gy, 0), a), mf.sum_to(mf.where(c, 0, gy), b)} end");

  MF_REGISTER_OP(cast)
      .describe("Converts every element to another dtype (floats truncate toward zero into integers).")
      .inputs({"x"})
      .strided()
      .param(Field::dtype("dtype", "float32", "Target dtype: float32, float64, int32, int64 or uint8.").mandatory())
      .infer_shape(same_shape)
      .infer_type(cast_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.copy(y, x) end
end)lua")
      .gradient("function(x, y, gy) return {mf.cast(gy, x:dtype())} end");
}

}  // namespace mf
