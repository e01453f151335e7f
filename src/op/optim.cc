// Stateful operators: assignment to variables and the fused optimizer updates. Each writes the
// variables among its inputs in place and returns the first one (a view), so it can be fetched.
// Kernels: src/kernels/cpu/optim.cc.
#include <cmath>

#include "registry.h"

namespace mf {

namespace {

// Inputs 1..nstate are the variables the op writes: one shape, and no two elements sharing memory
// (a stride-0 dim); inputs nstate+1..noperand must broadcast to that shape.
void check_vars(InferCtx& c, size_t nstate, size_t noperand) {
  const mf_tensor& v = c.input(0);
  for (size_t i = 0; i < noperand; ++i) {
    const mf_tensor& t = c.input(i);
    const std::string& name = c.op.inputs_[i];
    if (i >= nstate) {
      Shape b = broadcast_shapes(c.name(), shape_of(v), shape_of(t), c.op.inputs_[0].c_str(), name.c_str());
      if (b != shape_of(v))
        fail(c.name(), ": ", name, " is ", shape_str(t), "; it must broadcast to ", c.op.inputs_[0], " ", shape_str(v));
      continue;
    }
    if (shape_of(t) != shape_of(v))
      fail(c.name(), ": ", name, " is ", shape_str(t), "; it must have ", c.op.inputs_[0], "'s shape ", shape_str(v));
    for (int d = 0; d < t.ndim && t.count > 0; ++d)
      if (t.strides[d] == 0 && t.shape[d] > 1)
        fail(c.name(), ": ", name, " is an expanded view (stride 0 along dim ", d + 1,
             "); it cannot be written in place");
  }
  c.set_view(0, shape_of(v), Shape(v.strides, v.strides + v.ndim), 0);
}

void var_shape(InferCtx& c) { check_vars(c, 1, 2); }
void momentum_shape(InferCtx& c) { check_vars(c, 2, 3); }

void adam_shape(InferCtx& c) {
  check_vars(c, 3, 4);
  if (c.input(4).count != 1)
    fail("adam_update: step is ", shape_str(c.input(4)), "; expected one element (the step count t)");
}

void var_type(InferCtx& c) {
  for (size_t i = 1; i < c.in.size(); ++i)
    if (c.input(i).dtype_id != c.input(0).dtype_id)
      fail(c.name(), ": ", c.op.inputs_[i], " is ", dtype_name(c.input(i).dtype_id), ", ", c.op.inputs_[0], " is ",
           dtype_name(c.input(0).dtype_id));
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void float_var_type(InferCtx& c) {
  var_type(c);
  float_type(c);
}

void no_outputs(InferCtx& c) { c.out.clear(); }

}  // namespace

void register_optim_ops() {
  MF_REGISTER_OP(no_op)
      .describe("Does nothing; mf.group makes one with control edges to run several targets together.")
      .inputs({})
      .infer_shape(no_outputs)
      .lua_compute(MF_CPU, "function(ins, outs, p) return function() end end");

  MF_REGISTER_OP(assign)
      .describe("Writes value into the variable ref and returns ref.")
      .inputs({"ref", "value"})
      .view()
      .writes()
      .infer_shape(var_shape)
      .infer_type(var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, ref, v = mf.kernels, outs[1], ins[1], ins[2]
  return function() K.copy(ref, v); K.alias(y, ref, 0) end
end)lua");

  MF_REGISTER_OP(assign_add)
      .describe("Adds value to the variable ref in place and returns ref.")
      .inputs({"ref", "value"})
      .view()
      .writes()
      .infer_shape(var_shape)
      .infer_type(var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, ref, v = mf.kernels, outs[1], ins[1], ins[2]
  local add = K.B.add
  if ref.is_contig ~= 0 then return function() K.binary(add, ref, ref, v); K.alias(y, ref, 0) end end
  -- K.binary writes its output row-major: a strided ref takes the sum through a scratch buffer
  local sum = mf._new_like_meta(ref, 'assign_add')
  return function() K.binary(add, sum, ref, v); K.copy(ref, sum); K.alias(y, ref, 0) end
end)lua");

  MF_REGISTER_OP(sgd_update)
      .describe("Gradient descent in one pass: var -= lr * grad.")
      .inputs({"var", "grad"})
      .param(Field::number("lr", 0.01, "Learning rate.").range(0, INFINITY))
      .view()
      .writes()
      .infer_shape(var_shape)
      .infer_type(float_var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, var, g, lr = mf.kernels, outs[1], ins[1], ins[2], p.lr
  return function() K.sgd_update(var, g, lr); K.alias(y, var, 0) end
end)lua");

  MF_REGISTER_OP(momentum_update)
      .describe("Momentum in one pass: accum = momentum * accum + grad; var -= lr * accum "
                "(nesterov: var -= lr * (grad + momentum * accum)).")
      .inputs({"var", "accum", "grad"})
      .param(Field::number("lr", 0.01, "Learning rate.").range(0, INFINITY))
      .param(Field::number("momentum", 0.9, "Momentum factor.").range(0, INFINITY))
      .param(Field::boolean("nesterov", false, "Use Nesterov momentum."))
      .view()
      .writes()
      .infer_shape(momentum_shape)
      .infer_type(float_var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, var, acc, g = mf.kernels, outs[1], ins[1], ins[2], ins[3]
  local lr, mu, nest = p.lr, p.momentum, p.nesterov and 1 or 0
  return function() K.momentum_update(var, acc, g, lr, mu, nest); K.alias(y, var, 0) end
end)lua");

  MF_REGISTER_OP(adam_update)
      .describe("Adam in one pass: m, v moving averages of grad and grad^2; var -= lr_t * m / (sqrt(v) + epsilon) "
                "with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), t read from the step variable.")
      .inputs({"var", "m", "v", "grad", "step"})
      .param(Field::number("lr", 0.001, "Learning rate.").range(0, INFINITY))
      .param(Field::number("beta1", 0.9, "Decay of the first moment.").range(0, 1))
      .param(Field::number("beta2", 0.999, "Decay of the second moment.").range(0, 1))
      .param(Field::number("epsilon", 1e-8, "Added to sqrt(v).").range(0, INFINITY))
      .view()
      .writes()
      .infer_shape(adam_shape)
      .infer_type(float_var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p)
  local K, y, var, m, v, g, step = mf.kernels, outs[1], ins[1], ins[2], ins[3], ins[4], ins[5]
  local lr, b1, b2, eps = p.lr, p.beta1, p.beta2, p.epsilon
  return function()
    local t = step:item()
    local lr_t = lr * math.sqrt(1 - b2 ^ t) / (1 - b1 ^ t)
    K.adam_update(var, m, v, g, lr_t, b1, b2, eps)
    K.alias(y, var, 0)
  end
end)lua");
}

}  // namespace mf
