// Neural-network operators: softmax and log_softmax along a dim (max-subtracted, so stable).
#include "registry.h"

namespace mf {

namespace {

void softmax_shape(InferCtx& c) {
  normalize_dim(c.name(), c.p.get_int("dim"), c.input(0).ndim);
  same_shape(c);
}

std::string softmax_kernel(const char* log) {
  return std::string(R"lua(
function(ins, outs, p)
  local K, y, x = mf.kernels, outs[1], ins[1]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.softmax(y, x, dim, )lua") + log + R"lua() end
end)lua";
}

void xent_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &l = c.input(1);
  int d = normalize_dim("softmax_cross_entropy", c.p.get_int("dim"), x.ndim);
  if (shape_of(x) != shape_of(l))
    fail("softmax_cross_entropy: logits are ", shape_str(x), ", labels ", shape_str(l), "; expected one shape");
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

}  // namespace

void register_nn_ops() {
  MF_REGISTER_OP(softmax_cross_entropy)
      .describe("-sum(labels * log_softmax(logits)) along dim: the loss of a softmax classifier, stable for any "
                "logits; its gradient is the fused softmax(logits) * sum(labels) - labels.")
      .inputs({"logits", "labels"})
      .param(Field::integer("dim", -1, "Class dim, 1-based (negative counts from the end)."))
      .infer_shape(xent_shape)
      .infer_type(xent_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, x, l = mf.kernels, outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.softmax_xent(y, x, l, dim) end
end)lua")
      .gradient(R"lua(
function(x, labels, y, gy, p)
  local g = mf.unreduce_like(gy, x, {p.dim}, false)
  return {(mf.softmax(x, p.dim) * mf.sum(labels, p.dim, true) - labels) * g, -mf.log_softmax(x, p.dim) * g}
end)lua");

  MF_REGISTER_OP(softmax)
      .describe("exp(x) / sum(exp(x)) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("0"))
      .gradient("function(x, y, gy, p) return {y * (gy - mf.sum(gy * y, p.dim, true))} end");

  MF_REGISTER_OP(log_softmax)
      .describe("x - log(sum(exp(x))) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("1"))
      .gradient("function(x, y, gy, p) return {gy - mf.exp(y) * mf.sum(gy, p.dim, true)} end");
}

}  // namespace mf
