// Pointwise ops in one registry block each. unary_op<F>(name) and binary_op<F>(name) add functor
// F's loops (src/core/pointwise.h) to the pointwise table, keep the code they get as the op's
// pointwise attribute (what kernels, fusion and mf.kernels.U / .B read), and start the op's block
// with what every pointwise op shares: inputs, strided and in-place flags, shape and type rules, and
// the kernel string that runs the loops by that code. The block goes on with .describe, its params,
// .gradient and any rule it replaces (README, "Adding an operator").
#pragma once
#include <string>
#include <vector>

#include "../core/pointwise.h"
#include "registry.h"

namespace mf {

// The kernel strings: K.unary(code, y, x, p.<params[0]>, p.<params[1]>) and K.binary(code, z, x, y).
std::string unary_kernel(int code, const std::vector<std::string>& params);
std::string binary_kernel(int code);
void broadcast_shape(InferCtx& c);  // out 1: the NumPy broadcast of every input
void arith_type(InferCtx& c);       // one dtype in, the same out
void compare_type(InferCtx& c);     // one dtype in, uint8 out
// clamp's rule (clamp and clamp_): out 1 has x's shape; min <= max; integral bounds for an integer x.
void clamp_check(InferCtx& c);
// add and sub with their alpha param (x + alpha * y), src/op/inplace.cc: the kernel string, and
// arith_type plus an integral alpha that fits for integer operands.
std::string alpha_binary_kernel(const char* binop);
void alpha_binary_type(InferCtx& c);

// Unary op x -> F(x); params names the op's number params the functor reads as p1, p2, in order
// (declare each with .param). Defaults: same_shape, same_type (override with .infer_type(float_type)
// for float-only math). Throws when the name is taken or params does not match F.
template <class F>
OpDef& unary_op(const char* name, std::vector<std::string> params = {}) {
  OpDef& op = Registry::get().add(name);
  PointwiseKernels k = unary_kernels<F>(op.name_.c_str());
  if (int(params.size()) != k.nparams)
    fail(name, ": the functor reads ", k.nparams, " params; the block names ", params.size());
  op.pointwise_ = pointwise_add(k);
  return op.inputs({"x"}).strided().infer_shape(same_shape).infer_type(same_type).inplace().lua_compute(
      MF_CPU, unary_kernel(op.pointwise_, params));
}

// Binary op (a, b) -> F(a, b) with NumPy broadcasting; a comparison functor (uint8 result) gets
// compare_type, any other arith_type.
template <class F>
OpDef& binary_op(const char* name) {
  OpDef& op = Registry::get().add(name);
  PointwiseKernels k = binary_kernels<F>(op.name_.c_str());
  op.pointwise_ = pointwise_add(k);
  return op.inputs({"a", "b"}).strided().infer_shape(broadcast_shape).infer_type(k.to_uint8 ? compare_type : arith_type)
      .inplace().lua_compute(MF_CPU, binary_kernel(op.pointwise_));
}

}  // namespace mf
