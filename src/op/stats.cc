// Statistics and predicates: var, std, norm, logsumexp (float reductions with a number), any, all
// (uint8 reductions), isnan, isfinite (uint8 predicates). Kernels: the reduce routines of
// src/kernels/cpu/reduce.cc; the predicates run the binary loops (src/core/pointwise.h).
#include "../core/pointwise.h"
#include "reduce.h"

namespace mf {

namespace {

// Reducing a size-0 dim gives each op's identity (var NaN, norm 0, logsumexp -inf, any 0, all 1).
void stat_shape(InferCtx& c) { reduce_out_shape(c, true); }

void uint8_type(InferCtx& c) { c.out[0].dtype_id = MF_UINT8; }

// A predicate's functor runs in the binary loops with x as both operands (they can write uint8).
std::string predicate_kernel(int code) {
  return R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.binary()lua" + std::to_string(code) + R"lua(, y, x, x) end
end)lua";
}

Field dim_field() {
  return Field::int_list("dim", "", "Dims to reduce, 1-based (negative counts from the end); empty: all.");
}
Field keepdim_field() { return Field::boolean("keepdim", false, "Keep reduced dims with size 1."); }
Field unbiased_field() {
  return Field::boolean("unbiased", true, "Divide by n - 1 (Bessel's correction) instead of n.");
}

// d var / dx = 2 (x - mean) / (n - correction); std's is var's over 2 std, 0 where std is 0 (PyTorch)
const char* kVarGrad = R"lua(
function(x, y, gy, p)
  local d = x - mf.mean(x, p.dim, true)
  local n = mf.reduced_count(x, p.dim) - (p.unbiased and 1 or 0)
  return {mf.unreduce_like(gy, x, p.dim, p.keepdim) * d * (2 / n)}
end)lua";
const char* kStdGrad = R"lua(
function(x, y, gy, p)
  local d = x - mf.mean(x, p.dim, true)
  local n = mf.reduced_count(x, p.dim) - (p.unbiased and 1 or 0)
  local g = mf.where(mf.eq(y, 0), 0, gy / y)
  return {mf.unreduce_like(g, x, p.dim, p.keepdim) * d / n}
end)lua";
// PyTorch's norm_backward: p = 2 is x gy / norm and 0 where the norm is 0; +-inf shares gy evenly
// among the elements whose |x| is the norm; p = 0 (a count) has a zero gradient; other p:
// sign(x) |x|^(p-1) gy norm^(1-p), 0 where x or the norm is 0.
const char* kNormGrad = R"lua(
function(x, y, gy, p)
  local o, inf = p.p, 1 / 0
  local function up(t, keep)
    if keep == nil then keep = p.keepdim end
    return mf.unreduce_like(t, x, p.dim, keep)
  end
  if o == 0 then return {mf.zeros_like(x)} end
  if o == 1 then return {mf.sign(x) * up(gy)} end
  if o == 2 then return {x * up(mf.where(mf.eq(y, 0), 0, gy / y))} end
  if o == inf or o == -inf then
    local m = mf.cast(mf.eq(mf.abs(x), up(y)), x:dtype())
    return {mf.sign(x) * m * up(gy) / up(mf.sum(m, p.dim, true), true)}
  end
  local s = mf.where(mf.eq(y, 0), 0, gy * mf.pow(y, 1 - o))
  return {mf.where(mf.eq(x, 0), 0, mf.sign(x) * mf.pow(mf.abs(x), o - 1)) * up(s)}
end)lua";

}  // namespace

void register_stats_ops() {
  MF_REGISTER_OP(var)
      .describe("Variance over dims (all when none given): sum((x - mean)^2) / (n - 1), or / n when not unbiased; "
                "two passes in float64. One element (unbiased) or none gives NaN, as in PyTorch. Float input only.")
      .inputs({"x"})
      .strided()
      .param(dim_field())
      .param(unbiased_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, reduce_kernel("VAR", "p.unbiased and 1 or 0"))
      .gradient(kVarGrad);

  MF_REGISTER_OP(std)
      .describe("Standard deviation over dims (all when none given): the square root of var with the same params. "
                "Float input only; its gradient is 0 where it is 0, as in PyTorch.")
      .inputs({"x"})
      .strided()
      .param(dim_field())
      .param(unbiased_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, reduce_kernel("STD", "p.unbiased and 1 or 0"))
      .gradient(kStdGrad);

  MF_REGISTER_OP(norm)
      .describe("Vector p-norm over dims (all when none given), PyTorch's vector norm: (sum |x|^p)^(1/p); p = inf "
                "is max |x|, -inf min |x| (an error over an empty dim), 0 the count of nonzeros. Float input only, "
                "accumulated in float64; the gradient at a zero norm is 0.")
      .inputs({"x"})
      .strided()
      .param(Field::number("p", 2, "Order of the norm: any number, inf or -inf (math.huge, -math.huge)."))
      .param(dim_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, reduce_kernel("NORM", "p.p"))
      .gradient(kNormGrad);

  MF_REGISTER_OP(logsumexp)
      .describe("log(sum(exp(x))) over dims (all when none given), computed after subtracting the max: no overflow; "
                "all -inf gives -inf, a +inf gives +inf (PyTorch). Float input only; gradient softmax(x) * gy.")
      .inputs({"x"})
      .strided()
      .param(dim_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, reduce_kernel("LOGSUMEXP"))
      .gradient(R"lua(
function(x, y, gy, p)
  return {mf.unreduce_like(gy, x, p.dim, p.keepdim) * mf.exp(x - mf.unreduce_like(y, x, p.dim, p.keepdim))}
end)lua");

  MF_REGISTER_OP(any)
      .describe("1 (uint8) where some element over dims (all when none given) is nonzero (NaN counts), else 0; "
                "0 over an empty dim. Any dtype.")
      .inputs({"x"})
      .strided()
      .param(dim_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(uint8_type)
      .lua_compute(MF_CPU, reduce_kernel("ANY"));

  MF_REGISTER_OP(all)
      .describe("1 (uint8) where every element over dims (all when none given) is nonzero (NaN counts), else 0; "
                "1 over an empty dim. Any dtype.")
      .inputs({"x"})
      .strided()
      .param(dim_field())
      .param(keepdim_field())
      .infer_shape(stat_shape)
      .infer_type(uint8_type)
      .lua_compute(MF_CPU, reduce_kernel("ALL"));

  MF_REGISTER_OP(isnan)
      .describe("1 (uint8) where x is NaN, else 0, elementwise; integers are never NaN.")
      .inputs({"x"})
      .strided()
      .infer_shape(same_shape)
      .infer_type(uint8_type)
      .lua_compute(MF_CPU, predicate_kernel(pointwise_add(binary_kernels<pw::IsNan>("isnan"))));

  MF_REGISTER_OP(isfinite)
      .describe("1 (uint8) where x is neither NaN nor infinite, else 0, elementwise; integers are always finite.")
      .inputs({"x"})
      .strided()
      .infer_shape(same_shape)
      .infer_type(uint8_type)
      .lua_compute(MF_CPU, predicate_kernel(pointwise_add(binary_kernels<pw::IsFinite>("isfinite"))));
}

}  // namespace mf
