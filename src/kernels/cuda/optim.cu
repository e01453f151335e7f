// -- sgd_update / momentum_update / adam_update ----------------------------------------------------
// The fused optimizer updates on the device: one thread per variable element (grid-stride), the
// per-element math of src/core/update_math.h (the CPU's own), operands checked as the CPU checks them.
// Dense operands index directly; views and a broadcast gradient go through their layouts.
#include "../../core/update_math.h"
#include "../../core/kcheck.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

void check_update(const char* op, const mf_tensor& var, const mf_tensor& grad) {
  kcheck::meta(op, "variable", var);
  kcheck::meta(op, "gradient", grad);
  kcheck::writable(op, "variable", var);
  if (!dtype_is_float(var.dtype_id)) fail(op, ": variable is ", dtype_name(var.dtype_id), "; expected float32 or float64");
  if (grad.dtype_id != var.dtype_id)
    fail(op, ": gradient is ", dtype_name(grad.dtype_id), ", variable ", dtype_name(var.dtype_id));
  broadcast_shapes(op, shape_of(var), shape_of(grad), "variable", "gradient");
}

void check_slot(const char* op, const mf_tensor& var, const mf_tensor& slot) {
  kcheck::meta(op, "slot", slot);
  kcheck::dtype(op, "slot", slot, var.dtype_id, " like the variable");
  kcheck::writable(op, "slot", slot);
  if (shape_of(slot) != shape_of(var))
    fail(op, ": slot is ", shape_str(slot), ", variable ", shape_str(var), "; expected one shape");
}

// Operand k of an update: dense (index i) or through its layout.
struct Operand {
  void* p;
  int dense;
  Layout l;
};

Operand operand(const mf_tensor& t, const mf_tensor& var) {
  Operand o{t.ptr, 0, Layout{}};
  if (t.is_contig && t.count == var.count && t.ndim == var.ndim) o.dense = 1;
  else o.l = broadcast_layout(t, var);
  return o;
}

template <typename T>
__device__ __forceinline__ T& at(const Operand& o, long long i) {
  return static_cast<T*>(o.p)[o.dense ? i : offset_of(o.l, i)];
}

template <typename T, bool DECAY>
__global__ void sgd_kernel(long long n, Operand w, Operand g, T a, T wd) {
  for (long long i = global_index(); i < n; i += global_step()) upd::sgd_step<T, DECAY>(at<T>(w, i), at<T>(g, i), a, wd);
}

template <typename T, bool DECAY, bool NESTEROV>
__global__ void momentum_kernel(long long n, Operand w, Operand m, Operand g, T a, T mu, T c, T wd) {
  for (long long i = global_index(); i < n; i += global_step())
    upd::momentum_step<T, DECAY, NESTEROV>(at<T>(w, i), at<T>(m, i), at<T>(g, i), a, mu, c, wd);
}

template <typename T, int DECAY>
__global__ void adam_kernel(long long n, Operand w, Operand m, Operand v, Operand g, T b1, T b2, T c1, T c2, T step,
                            T ds, T eps, T wd, T keep) {
  for (long long i = global_index(); i < n; i += global_step())
    upd::adam_step<T, DECAY>(at<T>(w, i), at<T>(m, i), at<T>(v, i), at<T>(g, i), b1, b2, c1, c2, step, ds, eps, wd,
                             keep);
}

template <typename T>
void sgd_typed(mf_tensor& var, const mf_tensor& grad, double lr, double weight_decay) {
  long long n = var.count;
  Operand w = operand(var, var), g = operand(grad, var);
  if (weight_decay != 0) sgd_kernel<T, true><<<grid_for(n), kThreads, 0, stream()>>>(n, w, g, T(lr), T(weight_decay));
  else sgd_kernel<T, false><<<grid_for(n), kThreads, 0, stream()>>>(n, w, g, T(lr), T(weight_decay));
}

template <typename T>
void momentum_typed(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, double lr, double momentum,
                    double dampening, double weight_decay, bool nesterov) {
  long long n = var.count;
  Operand w = operand(var, var), m = operand(accum, var), g = operand(grad, var);
  T a = T(lr), mu = T(momentum), c = T(1 - dampening), wd = T(weight_decay);  // 1 - dampening in double, as the CPU
  unsigned grid = grid_for(n);
  bool decay = weight_decay != 0;
  if (decay && nesterov) momentum_kernel<T, true, true><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else if (decay) momentum_kernel<T, true, false><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else if (nesterov) momentum_kernel<T, false, true><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else momentum_kernel<T, false, false><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
}

template <typename T>
void adam_typed(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, double beta1, double beta2,
                double step_size, double denom_scale, double epsilon, double weight_decay, double decay) {
  long long n = var.count;
  Operand w = operand(var, var), mo = operand(m, var), vo = operand(v, var), g = operand(grad, var);
  // 1 - beta in double, then rounded, as the CPU
  const T b1 = T(beta1), b2 = T(beta2), c1 = T(1 - beta1), c2 = T(1 - beta2), st = T(step_size), ds = T(denom_scale),
          eps = T(epsilon), wd = T(weight_decay), keep = T(decay);
  unsigned grid = grid_for(n);
  if (decay != 1)
    adam_kernel<T, upd::kDecoupled><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, b1, b2, c1, c2, st, ds, eps, wd,
                                                                      keep);
  else if (weight_decay != 0)
    adam_kernel<T, upd::kL2><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, b1, b2, c1, c2, st, ds, eps, wd, keep);
  else
    adam_kernel<T, upd::kNoDecay><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, b1, b2, c1, c2, st, ds, eps, wd,
                                                                    keep);
}

}  // namespace

int sgd_update(mf_tensor* var, const mf_tensor* grad, double lr, double weight_decay) {
  return entry("sgd_update", [&] {
    check_update("sgd_update", *var, *grad);
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32) sgd_typed<float>(*var, *grad, lr, weight_decay);
    else sgd_typed<double>(*var, *grad, lr, weight_decay);
    check_launch("sgd_update");
  });
}

int momentum_update(mf_tensor* var, mf_tensor* accum, const mf_tensor* grad, double lr, double momentum,
                    double dampening, double weight_decay, int32_t nesterov) {
  return entry("momentum_update", [&] {
    const char* op = "momentum_update";
    check_update(op, *var, *grad);
    check_update(op, *accum, *grad);
    check_slot(op, *var, *accum);
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32)
      momentum_typed<float>(*var, *accum, *grad, lr, momentum, dampening, weight_decay, nesterov != 0);
    else momentum_typed<double>(*var, *accum, *grad, lr, momentum, dampening, weight_decay, nesterov != 0);
    check_launch(op);
  });
}

int adam_update(mf_tensor* var, mf_tensor* m, mf_tensor* v, const mf_tensor* grad, double beta1, double beta2,
                double step_size, double denom_scale, double epsilon, double weight_decay, double decay) {
  return entry("adam_update", [&] {
    const char* op = "adam_update";
    check_update(op, *var, *grad);
    check_slot(op, *var, *m);
    check_slot(op, *var, *v);
    if (decay != 1 && weight_decay != 0) fail("adam_update: decay and weight_decay are both set; expected one");
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32)
      adam_typed<float>(*var, *m, *v, *grad, beta1, beta2, step_size, denom_scale, epsilon, weight_decay, decay);
    else adam_typed<double>(*var, *m, *v, *grad, beta1, beta2, step_size, denom_scale, epsilon, weight_decay, decay);
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
