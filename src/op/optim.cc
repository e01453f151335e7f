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
      if (!shapes_match(b, shape_of(v)))
        fail(c.name(), ": ", name, " is ", shape_str(t), "; it must broadcast to ", c.op.inputs_[0], " ", shape_str(v));
      continue;
    }
    if (!shapes_match(shape_of(t), shape_of(v)))
      fail(c.name(), ": ", name, " is ", shape_str(t), "; it must have ", c.op.inputs_[0], "'s shape ", shape_str(v));
    check_writable(c, t, name);
  }
  c.set_view(0, shape_of(v), Shape(v.strides, v.strides + v.ndim), 0);
}

// Inputs first.. are run-time scalars (lr, step): one element each, read by the kernel every step.
void check_scalars(InferCtx& c, size_t first) {
  for (size_t i = first; i < c.in.size(); ++i)
    if (c.input(i).count != 1)
      fail(c.name(), ": ", c.op.inputs_[i], " is ", shape_str(c.input(i)), "; expected one element (",
           c.op.inputs_[i] == "step" ? "the step count t" : "the learning rate", ")");
}

void var_shape(InferCtx& c) { check_vars(c, 1, 2); }
void sgd_shape(InferCtx& c) {
  check_vars(c, 1, 2);
  check_scalars(c, 2);
}
void momentum_shape(InferCtx& c) {
  check_vars(c, 2, 3);
  check_scalars(c, 3);
}
void adam_shape(InferCtx& c) {
  check_vars(c, 3, 4);
  check_scalars(c, 4);
}

// Inputs 1..n share input 1's dtype; output 1 takes it.
void same_dtype(InferCtx& c, size_t n) {
  for (size_t i = 1; i < n; ++i)
    if (c.input(i).dtype_id != c.input(0).dtype_id)
      fail(c.name(), ": ", c.op.inputs_[i], " is ", dtype_name(c.input(i).dtype_id), ", ", c.op.inputs_[0], " is ",
           dtype_name(c.input(0).dtype_id));
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void var_type(InferCtx& c) { same_dtype(c, c.in.size()); }

// The updates: var, its slots and grad share one float dtype; the scalars from input first on
// (lr, step) may be float32 or float64 whatever var's dtype is.
void update_type(InferCtx& c, size_t first) {
  same_dtype(c, first);
  float_type(c);
  for (size_t i = first; i < c.in.size(); ++i)
    if (!dtype_is_float(c.input(i).dtype_id))
      fail(c.name(), ": ", c.op.inputs_[i], " is ", dtype_name(c.input(i).dtype_id), "; expected float32 or float64");
}
void sgd_type(InferCtx& c) { update_type(c, 2); }
void momentum_type(InferCtx& c) { update_type(c, 3); }
void adam_type(InferCtx& c) { update_type(c, 4); }

void no_outputs(InferCtx& c) { c.out.clear(); }

}  // namespace

void register_optim_ops() {
  MF_REGISTER_OP(no_op)
      .describe("Does nothing; mf.group makes one with control edges to run several targets together.")
      .inputs({})
      .infer_shape(no_outputs)
      .lua_compute(MF_CPU, "function(ins, outs, p, K) return function() end end");

  MF_REGISTER_OP(assign)
      .describe("Writes value into the variable ref and returns ref.")
      .inputs({"ref", "value"})
      .view()
      .writes()
      .overwrites()
      .infer_shape(var_shape)
      .infer_type(var_type)
      .lua_compute(MF_CPU, kCopyKernel);

  MF_REGISTER_OP(assign_add)
      .describe("Adds value to the variable ref in place and returns ref.")
      .inputs({"ref", "value"})
      .view()
      .writes()
      .infer_shape(var_shape)
      .infer_type(var_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, ref, v = outs[1], ins[1], ins[2]
  local add = K.B.add
  return function() K.binary(add, ref, ref, v); K.alias(y, ref, 0) end
end)lua");

  // The updates read lr (and step) as 0-dim tensors when they run, so a schedule changes them
  // without rebuilding a graph; the native routine reads them where they live (on a GPU, in the
  // kernel: a step never waits for the device) and makes one loop over the parameter.
  MF_REGISTER_OP(sgd_update)
      .describe("SGD in one pass, PyTorch's rule: g = grad + weight_decay * var; var -= lr * g. "
                "lr is a one-element float tensor read at run time.")
      .inputs({"var", "grad", "lr"})
      .param(Field::number("weight_decay", 0, "L2 penalty: weight_decay * var is added to the gradient.")
                 .range(0, INFINITY))
      .view()
      .writes()
      .infer_shape(sgd_shape)
      .infer_type(sgd_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, var, g, lr = outs[1], ins[1], ins[2], ins[3]
  local wd = p.weight_decay
  return function() K.sgd_update(var, g, lr, wd); K.alias(y, var, 0) end
end)lua");

  MF_REGISTER_OP(momentum_update)
      .describe("SGD with momentum in one pass, PyTorch's rule: g = grad + weight_decay * var; "
                "accum = momentum * accum + (1 - dampening) * g; var -= lr * accum "
                "(nesterov: var -= lr * (g + momentum * accum)). lr is a one-element float tensor read at run time.")
      .inputs({"var", "accum", "grad", "lr"})
      .param(Field::number("momentum", 0.9, "Momentum factor.").range(0, INFINITY))
      .param(Field::number("dampening", 0, "Scales the gradient's share of accum by 1 - dampening.").range(0, 1))
      .param(Field::number("weight_decay", 0, "L2 penalty: weight_decay * var is added to the gradient.")
                 .range(0, INFINITY))
      .param(Field::boolean("nesterov", false, "Use Nesterov momentum."))
      .view()
      .writes(2)  // var and accum
      .infer_shape(momentum_shape)
      .infer_type(momentum_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, var, acc, g, lr = outs[1], ins[1], ins[2], ins[3], ins[4]
  local mu, damp, wd, nest = p.momentum, p.dampening, p.weight_decay, p.nesterov and 1 or 0
  return function() K.momentum_update(var, acc, g, lr, mu, damp, wd, nest); K.alias(y, var, 0) end
end)lua");

  MF_REGISTER_OP(adam_update)
      .describe("Adam in one pass. t is step's value; decoupled (AdamW): var *= 1 - lr * weight_decay, "
                "else g = grad + weight_decay * var; m = beta1 * m + (1 - beta1) * g; "
                "v = beta2 * v + (1 - beta2) * g^2; with bc1 = 1 - beta1^t, bc2 = 1 - beta2^t: "
                "var -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + epsilon) (PyTorch), or with tf_epsilon "
                "var -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + epsilon) (TensorFlow). "
                "step and lr are one-element float tensors read at run time.")
      .inputs({"var", "m", "v", "grad", "step", "lr"})
      .param(Field::number("beta1", 0.9, "Decay of the first moment.").range(0, 1))
      .param(Field::number("beta2", 0.999, "Decay of the second moment.").range(0, 1))
      .param(Field::number("epsilon", 1e-8, "Added to the denominator.").range(0, INFINITY))
      .param(Field::number("weight_decay", 0, "L2 penalty on the gradient, or with decoupled the AdamW decay rate.")
                 .range(0, INFINITY))
      .param(Field::boolean("decoupled", false, "AdamW: decay var by lr * weight_decay instead of an L2 gradient."))
      .param(Field::boolean("tf_epsilon", false, "TensorFlow's form: epsilon added to sqrt(v) before bias correction."))
      .view()
      .writes(3)  // var, m and v
      .infer_shape(adam_shape)
      .infer_type(adam_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, var, m, v, g, step, lr = outs[1], ins[1], ins[2], ins[3], ins[4], ins[5], ins[6]
  local b1, b2, eps, wd = p.beta1, p.beta2, p.epsilon, p.weight_decay
  local form = (p.decoupled and 1 or 0) + (p.tf_epsilon and 2 or 0)  -- src/core/update_math.h: AdamForm
  return function()
    K.adam_update(var, m, v, g, step, lr, b1, b2, eps, wd, form)  -- t and lr read where they live
    K.alias(y, var, 0)
  end
end)lua");
}

}  // namespace mf
