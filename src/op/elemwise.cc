// Pointwise operators: unary math, binary arithmetic and comparison with NumPy broadcasting,
// clamp, where and cast. Kernels: src/kernels/cpu/elemwise.cc.
#include <cmath>

#include "registry.h"

namespace mf {

namespace {

// The factory every unary op shares; CODE names the native routine's op code.
std::string unary_kernel(const char* code, const char* a = "0", const char* b = "0") {
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local code, a, b = K.U.)lua") + code + ", " + a + ", " + b + R"lua(
  return function() K.unary(code, y, x, a, b) end
end)lua";
}

std::string binary_kernel(const char* code) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local z, x, y = outs[1], ins[1], ins[2]
  local code = K.B.)lua") + code + R"lua(
  return function() K.binary(code, z, x, y) end
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

void check_same_dtypes(InferCtx& c, size_t first) {
  for (size_t i = first + 1; i < c.in.size(); ++i)
    if (c.input(i).dtype_id != c.input(first).dtype_id)
      fail(c.name(), ": ", c.op.inputs_[first], " is ", dtype_name(c.input(first).dtype_id), ", ", c.op.inputs_[i], " is ",
           dtype_name(c.input(i).dtype_id), "; expected one dtype (convert with :float(), :double() or mf.cast)");
}

void arith_type(InferCtx& c) {
  check_same_dtypes(c, 0);
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void compare_type(InferCtx& c) {
  check_same_dtypes(c, 0);
  c.out[0].dtype_id = MF_UINT8;
}

void where_type(InferCtx& c) {
  if (c.input(0).dtype_id != MF_UINT8)
    fail("where: cond is ", dtype_name(c.input(0).dtype_id), "; expected uint8 (the result of a comparison such as mf.gt(a, 0))");
  check_same_dtypes(c, 1);
  c.out[0].dtype_id = c.input(1).dtype_id;
}

void cast_type(InferCtx& c) { c.out[0].dtype_id = int(c.p.get("dtype").num); }

// A NaN bound makes every element NaN (PyTorch's clamp); an integer x takes integral bounds only
// (a fractional one would be truncated silently).
void clamp_check(InferCtx& c) {
  same_shape(c);
  double lo = c.p.get_float("min"), hi = c.p.get_float("max");
  if (lo > hi) fail("clamp: min ", lo, " is greater than max ", hi);
  int dt = c.input(0).dtype_id;
  if (!dtype_is_float(dt))
    for (double v : {lo, hi})
      if (v != v || (std::isfinite(v) && std::floor(v) != v))
        fail("clamp: x is ", dtype_name(dt), " and bound ", v, " is not an integer; convert x with :float() first");
}

struct UnaryDef {
  const char* name;
  const char* code;
  const char* doc;
  bool float_only;
  const char* grad;  // Lua gradient rule: function(x, y, gy, p) -> {gx}
};

}  // namespace

void register_elemwise_ops() {
  static const UnaryDef unary[] = {
      {"neg", "NEG", "Negation, -x, elementwise.", false, "function(x, y, gy) return {-gy} end"},
      {"abs", "ABS", "Absolute value |x|, elementwise.", false, "function(x, y, gy) return {gy * mf.sign(x)} end"},
      {"exp", "EXP", "Exponential e^x, elementwise.", true, "function(x, y, gy) return {gy * y} end"},
      {"log", "LOG", "Natural logarithm, elementwise (-inf at 0, nan below).", true, "function(x, y, gy) return {gy / x} end"},
      {"log1p", "LOG1P", "log(1 + x), accurate for small x, elementwise.", true, "function(x, y, gy) return {gy / (x + 1)} end"},
      {"sqrt", "SQRT", "Square root, elementwise.", true, "function(x, y, gy) return {gy / (y * 2)} end"},
      {"rsqrt", "RSQRT", "Reciprocal square root 1/sqrt(x), elementwise.", true, "function(x, y, gy) return {gy * y * y * y * -0.5} end"},
      {"sigmoid", "SIGMOID", "Logistic function 1/(1+e^-x), elementwise, stable for large |x|.", true, "function(x, y, gy) return {gy * y * (1 - y)} end"},
      {"tanh", "TANH", "Hyperbolic tangent, elementwise.", true, "function(x, y, gy) return {gy * (1 - y * y)} end"},
      {"relu", "RELU", "Rectified linear unit max(x, 0), elementwise; NaN stays NaN.", false, "function(x, y, gy) return {mf.relu_backward(gy, y)} end"},
      {"sin", "SIN", "Sine (radians), elementwise.", true, "function(x, y, gy) return {gy * mf.cos(x)} end"},
      {"cos", "COS", "Cosine (radians), elementwise.", true, "function(x, y, gy) return {-(gy * mf.sin(x))} end"},
      {"square", "SQUARE", "x * x, elementwise.", false, "function(x, y, gy) return {gy * x * 2} end"},
      {"sign", "SIGN", "-1, 0 or 1 by the sign of x, elementwise; NaN stays NaN.", false, "function(x, y, gy) return {mf.zeros_like(x)} end"},
      {"floor", "FLOOR", "Largest integer not above x, elementwise.", false, "function(x, y, gy) return {mf.zeros_like(x)} end"},
      {"ceil", "CEIL", "Smallest integer not below x, elementwise.", false, "function(x, y, gy) return {mf.zeros_like(x)} end"},
      {"erf", "ERF", "Error function, elementwise.", true,
       "function(x, y, gy) return {gy * mf.exp(-(x * x)) * 1.1283791670955126} end"},
      {"gelu", "GELU", "Gaussian error linear unit x * Phi(x) (exact, with erf), elementwise.", true,
       "function(x, y, gy) return {gy * (mf.erf(x * 0.7071067811865476) * 0.5 + 0.5 + x * mf.exp(x * x * -0.5) * 0.3989422804014327)} end"},
      {"round", "ROUND", "Nearest integer, halves to even, elementwise.", false, "function(x, y, gy) return {mf.zeros_like(x)} end"},
  };
  for (const UnaryDef& u : unary) {
    Registry::get()
        .add(u.name)
        .describe(u.doc)
        .inputs({"x"})
        .strided()
        .infer_shape(same_shape)
        .infer_type(u.float_only ? float_type : same_type)
        .inplace()
        .lua_compute(MF_CPU, unary_kernel(u.code))
        .gradient(u.grad);
  }

  MF_REGISTER_OP(leaky_relu)
      .describe("x where x > 0, else negative_slope * x, elementwise.")
      .inputs({"x"})
      .strided()
      .param(Field::number("negative_slope", 0.01, "Slope for negative inputs.").allow_nan())
      .infer_shape(same_shape)
      .infer_type(float_type)
      .inplace()
      .lua_compute(MF_CPU, unary_kernel("LEAKY_RELU", "p.negative_slope"))
      .gradient("function(x, y, gy, p) return {mf.where(mf.gt(x, 0), gy, gy * p.negative_slope)} end");

  MF_REGISTER_OP(clamp)
      .describe("Limits every element to [min, max]; NaN elements stay NaN.")
      .inputs({"x"})
      .strided()
      .param(Field::number("min", -INFINITY, "Lower bound (default: none; NaN makes every element NaN).").allow_nan())
      .param(Field::number("max", INFINITY, "Upper bound (default: none; NaN makes every element NaN).").allow_nan())
      .infer_shape(clamp_check)
      .infer_type(same_type)
      .inplace()
      .lua_compute(MF_CPU, unary_kernel("CLAMP", "p.min", "p.max"))
      .gradient("function(x, y, gy, p) return {mf.where(mf.mul(mf.ge(x, p.min), mf.le(x, p.max)), gy, 0)} end");

  struct BinaryDef {
    const char* name;
    const char* code;
    const char* doc;
    InferFn type;
    const char* grad;  // function(a, b, y, gy, p) -> {ga, gb}; sum_to undoes broadcasting
  };
  // PyTorch's rule: ties share the gradient evenly (as central differences see it); where a NaN
  // is involved neither side is the smaller, so both get it
  static const char* kMaximumGrad = R"lua(function(a, b, y, gy)
  local h = mf.where(mf.eq(a, b), gy / 2, gy)
  return {mf.sum_to(mf.where(mf.lt(a, b), 0, h), a), mf.sum_to(mf.where(mf.gt(a, b), 0, h), b)}
end)lua";
  static const char* kMinimumGrad = R"lua(function(a, b, y, gy)
  local h = mf.where(mf.eq(a, b), gy / 2, gy)
  return {mf.sum_to(mf.where(mf.gt(a, b), 0, h), a), mf.sum_to(mf.where(mf.lt(a, b), 0, h), b)}
end)lua";
  static const BinaryDef binary[] = {
      {"add", "ADD", "a + b elementwise, with NumPy broadcasting.", arith_type, "function(a, b, y, gy) return {mf.sum_to(gy, a), mf.sum_to(gy, b)} end"},
      {"sub", "SUB", "a - b elementwise, with NumPy broadcasting.", arith_type, "function(a, b, y, gy) return {mf.sum_to(gy, a), mf.sum_to(-gy, b)} end"},
      {"mul", "MUL", "a * b elementwise (Hadamard product), with NumPy broadcasting.", arith_type, "function(a, b, y, gy) return {mf.sum_to(gy * b, a), mf.sum_to(gy * a, b)} end"},
      {"div", "DIV", "a / b elementwise, with NumPy broadcasting; integers divide truncating toward zero.", arith_type, "function(a, b, y, gy) return {mf.sum_to(gy / b, a), mf.sum_to(-(gy * y) / b, b)} end"},
      {"pow", "POW", "a ^ b elementwise, with NumPy broadcasting.", arith_type, "function(a, b, y, gy) return {mf.sum_to(gy * b * mf.pow(a, b - 1), a), mf.sum_to(gy * y * mf.log(a), b)} end"},
      {"maximum", "MAXIMUM", "Larger of a and b elementwise (NaN wins), with NumPy broadcasting.", arith_type, kMaximumGrad},
      {"minimum", "MINIMUM", "Smaller of a and b elementwise (NaN wins), with NumPy broadcasting.", arith_type, kMinimumGrad},
      {"relu_backward", "RELU_BACKWARD", "0 where b <= 0, else a: relu's gradient in one pass (a: gradient, b: relu's input or output; NaN in b passes a).",
       arith_type, nullptr},
      {"eq", "EQ", "1 where a == b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
      {"ne", "NE", "1 where a ~= b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
      {"lt", "LT", "1 where a < b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
      {"le", "LE", "1 where a <= b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
      {"gt", "GT", "1 where a > b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
      {"ge", "GE", "1 where a >= b, else 0 (uint8), with NumPy broadcasting.", compare_type, nullptr},
  };
  for (const BinaryDef& b : binary) {
    Registry::get()
        .add(b.name)
        .describe(b.doc)
        .inputs({"a", "b"})
        .strided()
        .infer_shape(broadcast_shape)
        .infer_type(b.type)
        .inplace()
        .lua_compute(MF_CPU, binary_kernel(b.code))
        .gradient(b.grad ? b.grad : "");
  }

  MF_REGISTER_OP(where)
      .describe("Picks a where cond is nonzero, else b; all three broadcast together.")
      .inputs({"cond", "a", "b"})
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
