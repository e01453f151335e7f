// The operand checks of the optimizer family's native entries (sum_to, sgd / momentum / adam updates),
// shared by the CPU (src/kernels/cpu/optim.cc) and CUDA (src/kernels/cuda/optim.cu, reduce.cu) entries so
// both refuse the same operands with the same words. Host code only.
#pragma once
#include <cstdint>

#include "kcheck.h"
#include "shape.h"

namespace mf {
namespace kcheck {

// sum_to: out broadcasts to the gradient g and has its dtype. Returns the mask of g's dims summed away
// (the dims out lacks, and those where out has size 1 and g does not).
inline uint32_t sum_to(const mf_tensor& out, const mf_tensor& g) {
  meta("sum_to", "output", out);
  meta("sum_to", "gradient", g);
  bool fits = out.ndim <= g.ndim;
  for (int k = 1; k <= out.ndim && fits; ++k) {
    int64_t o = out.shape[out.ndim - k];
    fits = o == 1 || o == g.shape[g.ndim - k];
  }
  if (!fits)
    fail("sum_to: output is ", shape_str(out), ", gradient ", shape_str(g),
         "; expected an output that broadcasts to the gradient (dims align from the last; each size equal or 1)");
  dtype("sum_to", "output", out, g.dtype_id, " like the gradient");
  uint32_t mask = 0;
  int lead = g.ndim - out.ndim;
  for (int d = 0; d < g.ndim; ++d)
    if (d < lead || (out.shape[d - lead] == 1 && g.shape[d] != 1)) mask |= 1u << d;
  return mask;
}

// An update's variable: writable, float32 or float64; the gradient of its dtype, broadcasting to it.
inline void update(const char* op, const mf_tensor& var, const mf_tensor& grad) {
  meta(op, "variable", var);
  meta(op, "gradient", grad);
  writable(op, "variable", var);
  if (!dtype_is_float(var.dtype_id)) fail(op, ": variable is ", dtype_name(var.dtype_id), "; expected float32 or float64");
  if (grad.dtype_id != var.dtype_id)
    fail(op, ": gradient is ", dtype_name(grad.dtype_id), ", variable ", dtype_name(var.dtype_id));
  broadcast_shapes(op, shape_of(var), shape_of(grad), "variable", "gradient");
}

// A slot the update writes beside the variable (accum, m, v): writable, of the variable's dtype and
// shape (the loops index it by the variable's shape).
inline void slot(const char* op, const mf_tensor& var, const mf_tensor& slot) {
  meta(op, "slot", slot);
  dtype(op, "slot", slot, var.dtype_id, " like the variable");
  writable(op, "slot", slot);
  if (shape_of(slot) != shape_of(var))
    fail(op, ": slot is ", shape_str(slot), ", variable ", shape_str(var), "; expected one shape");
}

}  // namespace kcheck
}  // namespace mf
