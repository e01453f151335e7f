// Pointwise operators: unary math, binary arithmetic and comparison with NumPy broadcasting,
// clamp, where and cast. Kernels: src/kernels/cpu/elemwise.cc.
#include <cmath>

#include "registry.h"

namespace mf {

namespace {

// The factory every unary op shares; CODE names the native routine's op code.
std::string unary_kernel(const char* code, const char* a = "0", const char* b = "0") {
  return std::string(R"lua(
function(ins, outs, p)
  local K, y, x = mf.kernels, outs[1], ins[1]
  local code, a, b = K.U.)lua") + code + ", " + a + ", " + b + R"lua(
  return function() K.unary(code, y, x, a, b) end
end)lua";
}

std::string binary_kernel(const char* code) {
  return std::string(R"lua(
function(ins, outs, p)
  local K, z, x, y = mf.kernels, outs[1], ins[1], ins[2]
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

void clamp_check(InferCtx& c) {
  same_shape(c);
  if (c.p.get_float("min") > c.p.get_float("max"))
    fail("clamp: min ", c.p.get_float("min"), " is greater than max ", c.p.get_float("max"));
}

struct UnaryDef {
  const char* name;
  const char* code;
  const char* doc;
  bool float_only;
};

}  // namespace

void register_elemwise_ops() {
  static const UnaryDef unary[] = {
      {"neg", "NEG", "Negation, -x, elementwise.", false},
      {"abs", "ABS", "Absolute value |x|, elementwise.", false},
      {"exp", "EXP", "Exponential e^x, elementwise.", true},
      {"log", "LOG", "Natural logarithm, elementwise (-inf at 0, nan below).", true},
      {"log1p", "LOG1P", "log(1 + x), accurate for small x, elementwise.", true},
      {"sqrt", "SQRT", "Square root, elementwise.", true},
      {"rsqrt", "RSQRT", "Reciprocal square root 1/sqrt(x), elementwise.", true},
      {"sigmoid", "SIGMOID", "Logistic function 1/(1+e^-x), elementwise, stable for large |x|.", true},
      {"tanh", "TANH", "Hyperbolic tangent, elementwise.", true},
      {"relu", "RELU", "Rectified linear unit max(x, 0), elementwise.", false},
      {"sin", "SIN", "Sine (radians), elementwise.", true},
      {"cos", "COS", "Cosine (radians), elementwise.", true},
      {"square", "SQUARE", "x * x, elementwise.", false},
      {"sign", "SIGN", "-1, 0 or 1 by the sign of x, elementwise.", false},
      {"floor", "FLOOR", "Largest integer not above x, elementwise.", false},
      {"ceil", "CEIL", "Smallest integer not below x, elementwise.", false},
      {"round", "ROUND", "Nearest integer, halves to even, elementwise.", false},
  };
  for (const UnaryDef& u : unary) {
    Registry::get()
        .add(u.name)
        .describe(u.doc)
        .inputs({"x"})
        .infer_shape(same_shape)
        .infer_type(u.float_only ? float_type : same_type)
        .lua_compute(MF_CPU, unary_kernel(u.code));
  }

  MF_REGISTER_OP(clamp)
      .describe("Limits every element to [min, max].")
      .inputs({"x"})
      .param(Field::number("min", -INFINITY, "Lower bound (default: none)."))
      .param(Field::number("max", INFINITY, "Upper bound (default: none)."))
      .infer_shape(clamp_check)
      .infer_type(same_type)
      .lua_compute(MF_CPU, unary_kernel("CLAMP", "p.min", "p.max"));

  struct BinaryDef {
    const char* name;
    const char* code;
    const char* doc;
    InferFn type;
  };
  static const BinaryDef binary[] = {
      {"add", "ADD", "a + b elementwise, with NumPy broadcasting.", arith_type},
      {"sub", "SUB", "a - b elementwise, with NumPy broadcasting.", arith_type},
      {"mul", "MUL", "a * b elementwise (Hadamard product), with NumPy broadcasting.", arith_type},
      {"div", "DIV", "a / b elementwise, with NumPy broadcasting; integers divide truncating toward zero.", arith_type},
      {"pow", "POW", "a ^ b elementwise, with NumPy broadcasting.", arith_type},
      {"maximum", "MAXIMUM", "Larger of a and b elementwise (NaN wins), with NumPy broadcasting.", arith_type},
      {"minimum", "MINIMUM", "Smaller of a and b elementwise (NaN wins), with NumPy broadcasting.", arith_type},
      {"eq", "EQ", "1 where a == b, else 0 (uint8), with NumPy broadcasting.", compare_type},
      {"ne", "NE", "1 where a ~= b, else 0 (uint8), with NumPy broadcasting.", compare_type},
      {"lt", "LT", "1 where a < b, else 0 (uint8), with NumPy broadcasting.", compare_type},
      {"le", "LE", "1 where a <= b, else 0 (uint8), with NumPy broadcasting.", compare_type},
      {"gt", "GT", "1 where a > b, else 0 (uint8), with NumPy broadcasting.", compare_type},
      {"ge", "GE", "1 where a >= b, else 0 (uint8), with NumPy broadcasting.", compare_type},
  };
  for (const BinaryDef& b : binary) {
    Registry::get()
        .add(b.name)
        .describe(b.doc)
        .inputs({"a", "b"})
        .infer_shape(broadcast_shape)
        .infer_type(b.type)
        .lua_compute(MF_CPU, binary_kernel(b.code));
  }

  MF_REGISTER_OP(where)
      .describe("Picks a where cond is nonzero, else b; all three broadcast together.")
      .inputs({"cond", "a", "b"})
      .infer_shape(broadcast_shape)
      .infer_type(where_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, out, c, a, b = mf.kernels, outs[1], ins[1], ins[2], ins[3]
  return function() K.where(out, c, a, b) end
end)lua");

  MF_REGISTER_OP(cast)
      .describe("Converts every element to another dtype (floats truncate toward zero into integers).")
      .inputs({"x"})
      .param(Field::dtype("dtype", "float32", "Target dtype: float32, float64, int32, int64 or uint8.").mandatory())
      .infer_shape(same_shape)
      .infer_type(cast_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, x = mf.kernels, outs[1], ins[1]
  return function() K.copy(y, x) end
end)lua");
}

}  // namespace mf
