// -- sgd_update / momentum_update / adam_update ----------------------------------------------------
// The fused optimizer updates on the device: one thread per variable element (grid-stride), the
// per-element math of src/core/update_math.h (the CPU's own), operands checked as the CPU checks them.
// Dense operands index directly; views and a broadcast gradient go through their layouts. lr and adam's
// step count are read by the kernels from their device tensors: an update never waits for the host.
#include "../../core/update_math.h"
#include "../../core/kcheck.h"
#include "../../core/optim_checks.h"
#include "fault.cuh"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

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

// A one-element float tensor the kernel reads lr or t from (kcheck::scalar checked it): each thread
// reads it once, so no step waits for the host to read it.
struct Scalar {
  const void* p;
  bool f64;
};

Scalar scalar_operand(const char* op, const char* name, const mf_tensor& t, const mf_tensor& var) {
  kcheck::scalar(op, name, t);
  if (t.device_id != var.device_id)
    fail(op, ": ", name, " is on device ", t.device_id, ", the variable on device ", var.device_id,
         "; expected one device");
  return Scalar{t.ptr, t.dtype_id == MF_FLOAT64};
}

__device__ __forceinline__ double value(const Scalar& s) { return upd::scalar_at(s.p, s.f64); }

template <typename T, bool DECAY>
__global__ void sgd_kernel(long long n, Operand w, Operand g, Scalar lr, T wd) {
  const T a = T(value(lr));
  for (long long i = global_index(); i < n; i += global_step()) upd::sgd_step<T, DECAY>(at<T>(w, i), at<T>(g, i), a, wd);
}

// The dense form of the plain and momentum updates: every operand packed and 16-byte aligned (the
// allocator's blocks are), each thread moves 16 bytes of each operand per load and store (4 floats or
// 2 doubles): scalar 4-byte accesses left the 32M-parameter momentum update at 63% of the device's copy
// bandwidth on an H200 (2026-11-27). The per-element math is the same upd:: step, so the bits match
// the strided kernels and the CPU; the elements past the last whole pack go one per thread.
template <typename T>
struct alignas(16) Pack {
  T v[16 / sizeof(T)];
};
constexpr int kPackBytes = 16;

bool packable(const Operand& o) { return o.dense && reinterpret_cast<uintptr_t>(o.p) % kPackBytes == 0; }

template <typename T, bool DECAY>
__global__ void sgd_packed_kernel(long long n, T* w, const T* g, Scalar lr, T wd) {
  constexpr int K = kPackBytes / sizeof(T);
  const T a = T(value(lr));
  const long long packs = n / K;
  for (long long i = global_index(); i < packs; i += global_step()) {
    Pack<T> pw = reinterpret_cast<Pack<T>*>(w)[i];
    const Pack<T> pg = reinterpret_cast<const Pack<T>*>(g)[i];
#pragma unroll
    for (int k = 0; k < K; ++k) upd::sgd_step<T, DECAY>(pw.v[k], pg.v[k], a, wd);
    reinterpret_cast<Pack<T>*>(w)[i] = pw;
  }
  const long long t = packs * K + global_index();
  if (t < n) upd::sgd_step<T, DECAY>(w[t], g[t], a, wd);
}

template <typename T, bool DECAY, bool NESTEROV>
__global__ void momentum_packed_kernel(long long n, T* w, T* m, const T* g, Scalar lr, T mu, T c, T wd) {
  constexpr int K = kPackBytes / sizeof(T);
  const T a = T(value(lr));
  const long long packs = n / K;
  for (long long i = global_index(); i < packs; i += global_step()) {
    Pack<T> pw = reinterpret_cast<Pack<T>*>(w)[i], pm = reinterpret_cast<Pack<T>*>(m)[i];
    const Pack<T> pg = reinterpret_cast<const Pack<T>*>(g)[i];
#pragma unroll
    for (int k = 0; k < K; ++k) upd::momentum_step<T, DECAY, NESTEROV>(pw.v[k], pm.v[k], pg.v[k], a, mu, c, wd);
    reinterpret_cast<Pack<T>*>(w)[i] = pw;
    reinterpret_cast<Pack<T>*>(m)[i] = pm;
  }
  const long long t = packs * K + global_index();
  if (t < n) upd::momentum_step<T, DECAY, NESTEROV>(w[t], m[t], g[t], a, mu, c, wd);
}

// blocks for the packed kernels: a thread per pack, and at least one per element of the tail
template <typename T>
unsigned packed_grid(long long n) {
  constexpr int K = kPackBytes / sizeof(T);
  return grid_for(n / K > n % K ? n / K : n % K);
}

template <typename T, bool DECAY, bool NESTEROV>
__global__ void momentum_kernel(long long n, Operand w, Operand m, Operand g, Scalar lr, T mu, T c, T wd) {
  const T a = T(value(lr));
  for (long long i = global_index(); i < n; i += global_step())
    upd::momentum_step<T, DECAY, NESTEROV>(at<T>(w, i), at<T>(m, i), at<T>(g, i), a, mu, c, wd);
}

// The per-step scalars come from t and lr on the device (upd::adam_scalars, the CPU's formula); a step
// count below 1 is recorded as a fault (raised at the next host read) and nothing is written.
// Adam's per-step scalars, from t and lr on the device (upd::adam_scalars, the CPU's formula); false
// (after recording the fault: raised at the next host read) for a step count below 1, when nothing
// is written.
template <typename T>
struct AdamConsts {
  T b1, b2, c1, c2, st, ds, wd, keep;
};
template <typename T>
__device__ bool adam_consts(AdamConsts<T>& c, Scalar step, Scalar lr, double beta1, double beta2,
                            double weight_decay, int form, FaultSlot fs, const char* op) {
  double t = value(step);
  if (!(t >= 1)) {
    if (global_index() == 0) {
      FaultInfo info{};
      info.op = op;
      info.kind = kFaultAdamStep;
      record_fault(fs, info, 0, 0, t);
    }
    return false;
  }
  upd::AdamStep k = upd::adam_scalars(t, value(lr), beta1, beta2, weight_decay, form);
  // 1 - beta in double, then rounded, as the CPU
  c = AdamConsts<T>{T(beta1), T(beta2), T(1 - beta1), T(1 - beta2), T(k.step), T(k.ds), T(weight_decay), T(k.keep)};
  return true;
}

template <typename T, int DECAY>
__global__ void adam_kernel(long long n, Operand w, Operand m, Operand v, Operand g, Scalar step, Scalar lr,
                            double beta1, double beta2, T eps, double weight_decay, int form, FaultSlot fs,
                            const char* op) {
  AdamConsts<T> c;
  if (!adam_consts(c, step, lr, beta1, beta2, weight_decay, form, fs, op)) return;
  for (long long i = global_index(); i < n; i += global_step())
    upd::adam_step<T, DECAY>(at<T>(w, i), at<T>(m, i), at<T>(v, i), at<T>(g, i), c.b1, c.b2, c.c1, c.c2, c.st, c.ds,
                             eps, c.wd, c.keep);
}

// the dense form, 16 bytes of each operand per access (as the momentum update's)
template <typename T, int DECAY>
__global__ void adam_packed_kernel(long long n, T* w, T* m, T* v, const T* g, Scalar step, Scalar lr, double beta1,
                                   double beta2, T eps, double weight_decay, int form, FaultSlot fs, const char* op) {
  AdamConsts<T> c;
  if (!adam_consts(c, step, lr, beta1, beta2, weight_decay, form, fs, op)) return;
  constexpr int K = kPackBytes / sizeof(T);
  const long long packs = n / K;
  for (long long i = global_index(); i < packs; i += global_step()) {
    Pack<T> pw = reinterpret_cast<Pack<T>*>(w)[i], pm = reinterpret_cast<Pack<T>*>(m)[i],
            pv = reinterpret_cast<Pack<T>*>(v)[i];
    const Pack<T> pg = reinterpret_cast<const Pack<T>*>(g)[i];
#pragma unroll
    for (int k = 0; k < K; ++k)
      upd::adam_step<T, DECAY>(pw.v[k], pm.v[k], pv.v[k], pg.v[k], c.b1, c.b2, c.c1, c.c2, c.st, c.ds, eps, c.wd,
                               c.keep);
    reinterpret_cast<Pack<T>*>(w)[i] = pw;
    reinterpret_cast<Pack<T>*>(m)[i] = pm;
    reinterpret_cast<Pack<T>*>(v)[i] = pv;
  }
  const long long t = packs * K + global_index();
  if (t < n)
    upd::adam_step<T, DECAY>(w[t], m[t], v[t], g[t], c.b1, c.b2, c.c1, c.c2, c.st, c.ds, eps, c.wd, c.keep);
}

template <typename T>
void sgd_typed(mf_tensor& var, const mf_tensor& grad, Scalar lr, double weight_decay) {
  long long n = var.count;
  Operand w = operand(var, var), g = operand(grad, var);
  if (packable(w) && packable(g)) {
    T* pw = static_cast<T*>(w.p);
    const T* pg = static_cast<const T*>(g.p);
    if (weight_decay != 0) sgd_packed_kernel<T, true><<<packed_grid<T>(n), kThreads, 0, stream()>>>(n, pw, pg, lr, T(weight_decay));
    else sgd_packed_kernel<T, false><<<packed_grid<T>(n), kThreads, 0, stream()>>>(n, pw, pg, lr, T(weight_decay));
    return;
  }
  if (weight_decay != 0) sgd_kernel<T, true><<<grid_for(n), kThreads, 0, stream()>>>(n, w, g, lr, T(weight_decay));
  else sgd_kernel<T, false><<<grid_for(n), kThreads, 0, stream()>>>(n, w, g, lr, T(weight_decay));
}

template <typename T>
void momentum_typed(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, Scalar a, double momentum,
                    double dampening, double weight_decay, bool nesterov) {
  long long n = var.count;
  Operand w = operand(var, var), m = operand(accum, var), g = operand(grad, var);
  T mu = T(momentum), c = T(1 - dampening), wd = T(weight_decay);  // 1 - dampening in double, as the CPU
  bool decay = weight_decay != 0;
  if (packable(w) && packable(m) && packable(g)) {
    T *pw = static_cast<T*>(w.p), *pm = static_cast<T*>(m.p);
    const T* pg = static_cast<const T*>(g.p);
    unsigned grid = packed_grid<T>(n);
    if (decay && nesterov) momentum_packed_kernel<T, true, true><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pg, a, mu, c, wd);
    else if (decay) momentum_packed_kernel<T, true, false><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pg, a, mu, c, wd);
    else if (nesterov) momentum_packed_kernel<T, false, true><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pg, a, mu, c, wd);
    else momentum_packed_kernel<T, false, false><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pg, a, mu, c, wd);
    return;
  }
  unsigned grid = grid_for(n);
  if (decay && nesterov) momentum_kernel<T, true, true><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else if (decay) momentum_kernel<T, true, false><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else if (nesterov) momentum_kernel<T, false, true><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
  else momentum_kernel<T, false, false><<<grid, kThreads, 0, stream()>>>(n, w, m, g, a, mu, c, wd);
}

template <typename T>
void adam_typed(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, Scalar step, Scalar lr,
                double beta1, double beta2, double epsilon, double weight_decay, int form, const char* op) {
  long long n = var.count;
  Operand w = operand(var, var), mo = operand(m, var), vo = operand(v, var), g = operand(grad, var);
  FaultSlot fs = fault_slot();
  T eps = T(epsilon);
  if (packable(w) && packable(mo) && packable(vo) && packable(g)) {
    T *pw = static_cast<T*>(w.p), *pm = static_cast<T*>(mo.p), *pv = static_cast<T*>(vo.p);
    const T* pg = static_cast<const T*>(g.p);
    unsigned grid = packed_grid<T>(n);
    switch (upd::adam_decay(form, weight_decay)) {
      case upd::kDecoupled:
        adam_packed_kernel<T, upd::kDecoupled><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pv, pg, step, lr, beta1,
                                                                                beta2, eps, weight_decay, form, fs, op);
        break;
      case upd::kL2:
        adam_packed_kernel<T, upd::kL2><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pv, pg, step, lr, beta1, beta2,
                                                                         eps, weight_decay, form, fs, op);
        break;
      default:
        adam_packed_kernel<T, upd::kNoDecay><<<grid, kThreads, 0, stream()>>>(n, pw, pm, pv, pg, step, lr, beta1,
                                                                              beta2, eps, weight_decay, form, fs, op);
    }
    return;
  }
  unsigned grid = grid_for(n);
  switch (upd::adam_decay(form, weight_decay)) {
    case upd::kDecoupled:
      adam_kernel<T, upd::kDecoupled><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, step, lr, beta1, beta2, eps,
                                                                        weight_decay, form, fs, op);
      break;
    case upd::kL2:
      adam_kernel<T, upd::kL2><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, step, lr, beta1, beta2, eps,
                                                                 weight_decay, form, fs, op);
      break;
    default:
      adam_kernel<T, upd::kNoDecay><<<grid, kThreads, 0, stream()>>>(n, w, mo, vo, g, step, lr, beta1, beta2, eps,
                                                                      weight_decay, form, fs, op);
  }
}

}  // namespace

int sgd_update(mf_tensor* var, const mf_tensor* grad, const mf_tensor* lr, double weight_decay) {
  return entry("sgd_update", [&] {
    kcheck::update("sgd_update", *var, *grad);
    Scalar a = scalar_operand("sgd_update", "lr", *lr, *var);
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32) sgd_typed<float>(*var, *grad, a, weight_decay);
    else sgd_typed<double>(*var, *grad, a, weight_decay);
    check_launch("sgd_update");
  });
}

int momentum_update(mf_tensor* var, mf_tensor* accum, const mf_tensor* grad, const mf_tensor* lr, double momentum,
                    double dampening, double weight_decay, int32_t nesterov) {
  return entry("momentum_update", [&] {
    const char* op = "momentum_update";
    kcheck::update(op, *var, *grad);
    kcheck::update(op, *accum, *grad);
    kcheck::slot(op, *var, *accum);
    Scalar a = scalar_operand(op, "lr", *lr, *var);
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32)
      momentum_typed<float>(*var, *accum, *grad, a, momentum, dampening, weight_decay, nesterov != 0);
    else momentum_typed<double>(*var, *accum, *grad, a, momentum, dampening, weight_decay, nesterov != 0);
    check_launch(op);
  });
}

int adam_update(mf_tensor* var, mf_tensor* m, mf_tensor* v, const mf_tensor* grad, const mf_tensor* step,
                const mf_tensor* lr, double beta1, double beta2, double epsilon, double weight_decay, int32_t form) {
  return entry("adam_update", [&] {
    const char* op = "adam_update";
    kcheck::update(op, *var, *grad);
    kcheck::slot(op, *var, *m);
    kcheck::slot(op, *var, *v);
    Scalar t = scalar_operand(op, "step", *step, *var), a = scalar_operand(op, "lr", *lr, *var);
    if (var->count == 0) return;
    if (var->dtype_id == MF_FLOAT32)
      adam_typed<float>(*var, *m, *v, *grad, t, a, beta1, beta2, epsilon, weight_decay, form, op);
    else adam_typed<double>(*var, *m, *v, *grad, t, a, beta1, beta2, epsilon, weight_decay, form, op);
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
