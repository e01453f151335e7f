// Neural-network operators: softmax and log_softmax along a dim (max-subtracted, so stable).
#include <cmath>

#include "registry.h"

namespace mf {

namespace {

void softmax_shape(InferCtx& c) {
  normalize_dim(c.name(), c.p.get_int("dim"), c.input(0).ndim);
  same_shape(c);
}

std::string softmax_kernel(const char* log) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local dim = K.dim0(p.dim, x._ndim)
  return function() K.softmax(y, x, dim, )lua") + log + R"lua() end
end)lua";
}

void xent_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &l = c.input(1);
  int d = normalize_dim("softmax_cross_entropy", c.p.get_int("dim"), x.ndim);
  if (!shapes_match(shape_of(x), shape_of(l)))
    fail("softmax_cross_entropy: logits are ", shape_str(x), ", labels ", shape_str(l), "; expected one shape",
         l.ndim == 0 && x.ndim > 0 ? " (labels are 0-dim: a placeholder shape {nil} is {} in Lua, which drops a lone nil;"
                                     " write {-1} for one unknown size)" : "");
  Shape s = shape_of(x);
  s.erase(s.begin() + d);
  c.set_out(0, s);
}

void xent_type(InferCtx& c) {
  if (c.input(0).dtype_id != c.input(1).dtype_id)
    fail("softmax_cross_entropy: logits are ", dtype_name(c.input(0).dtype_id), ", labels ",
         dtype_name(c.input(1).dtype_id), "; expected one dtype");
  float_type(c);
}

void batch_norm_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &w = c.input(1), &b = c.input(2);
  if (x.ndim < 2) fail("batch_norm: x is ", shape_str(x), "; expected N x C x ... (at least 2 dims)");
  if (w.ndim != 1 || b.ndim != 1 || !dims_match(w.shape[0], x.shape[1]) || !dims_match(b.shape[0], x.shape[1]))
    fail("batch_norm: x is ", shape_str(x), ", weight ", shape_str(w), ", bias ", shape_str(b), "; weight and bias need ",
         x.shape[1], " elements (one per channel, dim 2)");
  // batch statistics of a single value per channel are meaningless (PyTorch raises this too)
  int64_t per_channel = has_unknown(x) ? 0 : x.shape[0];  // unknown at graph build: checked at run
  for (int d = 2; d < x.ndim; ++d) per_channel *= x.shape[d];
  if (per_channel == 1)
    fail("batch_norm: x is ", shape_str(x), "; expected more than 1 value per channel when training (batch statistics)");
  same_shape(c);
}

void batch_norm_type(InferCtx& c) {
  for (size_t i = 1; i < 3; ++i)
    if (c.input(i).dtype_id != c.input(0).dtype_id)
      fail("batch_norm: ", c.op.inputs_[i], " is ", dtype_name(c.input(i).dtype_id), ", x ", dtype_name(c.input(0).dtype_id));
  float_type(c);
}

void dropout_shape(InferCtx& c) { same_shape(c); }

}  // namespace

void register_nn_ops() {
  MF_REGISTER_OP(batch_norm)
      .describe("Batch normalisation with batch statistics: per channel (dim 2), (x - mean) / sqrt(var + eps) * weight + bias, "
                "mean and biased var over every other dim.")
      .inputs({"x", "weight", "bias"})
      .param(Field::number("eps", 1e-5, "Added to the variance.").range(0, INFINITY))
      .infer_shape(batch_norm_shape)
      .infer_type(batch_norm_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, w, b, eps = outs[1], ins[1], ins[2], ins[3], p.eps
  return function() K.batch_norm(y, x, w, b, eps) end
end)lua")
      .gradient(R"lua(
function(x, w, b, y, gy, p, needs)
  local dims = {1}
  for d = 3, x:dim() do dims[#dims + 1] = d end
  local mean = mf.mean(x, dims, true)
  local xc = x - mean
  local rstd = mf.rsqrt(mf.mean(xc * xc, dims, true) + p.eps)
  local xhat = xc * rstd
  local shape = {1, -1}
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  local gx  -- skipped where not wanted (needs: the gradient contract), e.g. a network's first layer
  if needs[1] then
    local dxhat = gy * mf.reshape(w, shape)
    gx = rstd * (dxhat - mf.mean(dxhat, dims, true) - xhat * mf.mean(dxhat * xhat, dims, true))
  end
  return {gx, needs[2] and mf.sum(gy * xhat, dims) or nil, needs[3] and mf.sum(gy, dims) or nil}
end)lua");

  MF_REGISTER_OP(dropout_mask)
      .describe("Random mask shaped like x: 0 with probability p, else 1 / (1 - p) (inverted dropout: x * mask).")
      .inputs({"like"})
      .lends_shape(1)
      .strided()
      .param(Field::number("p", 0.5, "Probability of dropping an element.").range(0, 1))
      .random()
      .infer_shape(dropout_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local m, prob = outs[1], p.p
  return function() K.dropout_mask(m, prob) end
end)lua");

  MF_REGISTER_OP(softmax_cross_entropy)
      .describe("-sum(labels * log_softmax(logits)) along dim: the loss of a softmax classifier, stable for any "
                "logits; its gradient is the fused softmax(logits) * sum(labels) - labels.")
      .inputs({"logits", "labels"})
      .strided()
      .param(Field::integer("dim", -1, "Class dim, 1-based (negative counts from the end)."))
      .infer_shape(xent_shape)
      .infer_type(xent_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, l = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, x._ndim)
  return function() K.softmax_xent(y, x, l, dim) end
end)lua")
      .gradient(R"lua(
function(x, labels, y, gy, p, needs)
  local g = mf.unreduce_like(gy, x, {p.dim}, false)
  return {needs[1] and (mf.softmax(x, p.dim) * mf.sum(labels, p.dim, true) - labels) * g or nil,
          needs[2] and -mf.log_softmax(x, p.dim) * g or nil}
end)lua");

  MF_REGISTER_OP(softmax)
      .describe("exp(x) / sum(exp(x)) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("0"))
      .gradient("function(x, y, gy, p) return {y * (gy - mf.sum(gy * y, p.dim, true))} end");

  MF_REGISTER_OP(log_softmax)
      .describe("x - log(sum(exp(x))) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("1"))
      .replaces("log", "softmax")
      .gradient("function(x, y, gy, p) return {gy - mf.exp(y) * mf.sum(gy, p.dim, true)} end");
}

}  // namespace mf
