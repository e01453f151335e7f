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

}  // namespace upd
}  // namespace mf
