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

}  // namespace

void register_nn_ops() {
  MF_REGISTER_OP(softmax)
      .describe("exp(x) / sum(exp(x)) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("0"));

  MF_REGISTER_OP(log_softmax)
      .describe("x - log(sum(exp(x))) along dim, computed after subtracting the max.")
      .inputs({"x"})
      .param(Field::integer("dim", -1, "Dim to normalise over, 1-based (negative counts from the end)."))
      .infer_shape(softmax_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, softmax_kernel("1"));
}

}  // namespace mf
