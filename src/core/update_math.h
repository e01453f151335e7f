// One element of each fused optimizer update: the definition the CPU loops (src/kernels/cpu/optim.cc)
// and the CUDA kernels (src/kernels/cuda/optim.cu) both run, so the CPU op harness checks the math
// the GPU runs. Compiled by g++ and nvcc (host and device). Formulas: src/kernels/cpu/kernels.h.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define MF_UPDATE_HD __host__ __device__ __forceinline__
#else
#define MF_UPDATE_HD inline
#endif

namespace mf {
namespace upd {

// sgd: w -= lr * (g + wd * w); without decay w = inf stays inf (0 * inf would be NaN)
template <typename T, bool DECAY>
MF_UPDATE_HD void sgd_step(T& w, T g, T a, T wd) {
  if (DECAY) g += wd * w;
  w -= a * g;
}

// momentum: g += wd * w; m = mu * m + c * g; w -= lr * (nesterov ? g + mu * m : m)
template <typename T, bool DECAY, bool NESTEROV>
MF_UPDATE_HD void momentum_step(T& w, T& m, T g, T a, T mu, T c, T wd) {
  if (DECAY) g += wd * w;
  T mi = mu * m + c * g;
  m = mi;
  w -= a * (NESTEROV ? g + mu * mi : mi);
}

// weight decay in adam_update: none, L2 (added to the gradient) or decoupled (AdamW: w scaled first)
enum AdamDecay { kNoDecay, kL2, kDecoupled };

// adam: the decay, m and v moving averages of g and g^2, then w -= step * m / (sqrt(v) * ds + eps)
template <typename T, int DECAY>
MF_UPDATE_HD void adam_step(T& w, T& m, T& v, T g, T b1, T b2, T c1, T c2, T step, T ds, T eps, T wd, T keep) {
  using std::sqrt;
  T wi = w;
  if (DECAY == kL2) g += wd * wi;
  if (DECAY == kDecoupled) wi *= keep;
  T mi = b1 * m + c1 * g;
  T vi = b2 * v + c2 * g * g;
  m = mi;
  v = vi;
  w = wi - step * mi / (sqrt(vi) * ds + eps);
}

// The value of a one-element float tensor the update reads lr or t from (float32 or float64).
MF_UPDATE_HD double scalar_at(const void* p, bool f64) {
  return f64 ? *static_cast<const double*>(p) : double(*static_cast<const float*>(p));
}

// adam_update's form bits (the table entry's form argument)
enum AdamForm { kAdamDecoupled = 1, kAdamTfEpsilon = 2 };

// The per-step scalars of adam_step from the step count t (>= 1), lr and the hyperparameters, in
// double: step = lr / bc1 and ds = 1 / sqrt(bc2) (PyTorch), or step = lr * sqrt(bc2) / bc1 and
// ds = 1 (TensorFlow's epsilon), with bc = 1 - beta^t; keep = 1 - lr * wd for AdamW. The CPU and
// the CUDA kernels compute them where lr and t are (the CUDA ones on the device, per thread).
struct AdamStep {
  double step, ds, keep;
};
MF_UPDATE_HD AdamStep adam_scalars(double t, double lr, double b1, double b2, double wd, int form) {
  using std::pow;
  using std::sqrt;
  double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
  AdamStep k{lr / bc1, 1 / sqrt(bc2), 1};
  if (form & kAdamTfEpsilon) {
    k.step = lr * sqrt(bc2) / bc1;
    k.ds = 1;
  }
  if (form & kAdamDecoupled) k.keep = 1 - lr * wd;
  return k;
}

// The adam_step DECAY the form and weight decay ask for.
inline int adam_decay(int form, double wd) { return wd == 0 ? kNoDecay : (form & kAdamDecoupled) ? kDecoupled : kL2; }

}  // namespace upd
}  // namespace mf
