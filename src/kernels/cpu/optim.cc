// -- sum_to / pad_like / optimizer updates ----------------------------------------------------
// Backward helpers of broadcasting and slicing, and single-pass parameter updates: each update
// reads and writes every parameter element once (w -= lr * (m = mu * m + g) is one loop, not four).
#include <cmath>

#include "../../core/error.h"
#include "../../core/optim_checks.h"
#include "../../core/update_math.h"
#include "checks.h"
#include "kernels.h"
#include "strided.h"

namespace mf {

void sum_to_cpu(mf_tensor& out, const mf_tensor& g) {
  uint32_t mask = kcheck::sum_to(out, g);  // src/core/optim_checks.h, the CUDA entry's checks too
  // out is contiguous and its non-1 dims are g's kept dims in order, so the reduce writes it row-major
  reduce_cpu(MF_R_SUM, out, g, mask);
}

void pad_like_cpu(mf_tensor& out, const mf_tensor& g, int dim, int64_t start, int64_t step) {
  // g lands at start, start + step, ... along dim: every slice must fall inside out
  bool fits = dim >= 0 && dim < out.ndim && g.ndim == out.ndim && start >= 0 && step >= 1;
  for (int d = 0; fits && d < g.ndim; ++d) fits = d == dim || g.shape[d] == out.shape[d];
  if (fits && g.shape[dim] > 0) fits = start + (g.shape[dim] - 1) * step < out.shape[dim];
  if (!fits)
    fail("pad_like: gradient ", shape_str(g), " placed from index ", start + 1, " by step ", step, " along dim ", dim + 1,
         " does not fit inside ", shape_str(out));
  fill_cpu(out, 0);
  if (g.count == 0) return;
  mf_tensor view = out;
  for (int d = 0; d < kMaxDims; ++d) view.shape[d] = d < g.ndim ? g.shape[d] : 0;
  view.strides[dim] = out.strides[dim] * step;
  view.ptr = (char*)out.ptr + start * out.strides[dim] * dtype_size(out.dtype_id);
  view.count = g.count;
  view.is_contig = is_contiguous(view) ? 1 : 0;
  copy_cpu(view, g);
}

namespace {

Shape dims(const mf_tensor& t) { return shape_of(t); }
Shape strides(const mf_tensor& t) { return Shape(t.strides, t.strides + t.ndim); }

}  // namespace

// The update loops below take every per-step scalar from the caller (the op's kernel string
// computes them once per step); each keeps a unit-stride loop the compiler vectorises, and a
// strided one for views and a broadcast gradient. The loop bodies capture the scalars by value:
// captured by reference, every store through w might write them, which keeps the loops slow.
void sgd_update_cpu(mf_tensor& var, const mf_tensor& grad, double lr, double weight_decay) {
  kcheck::update("sgd_update", var, grad);
  Shape s = dims(var);
  StridedIter<2> it(s, {strides(var), broadcast_strides(grad, s)});
  MF_DISPATCH_FLOAT(var.dtype_id, T, "sgd_update", {
    const T a = T(lr), wd = T(weight_decay);
    const bool decay = weight_decay != 0;  // without it w = inf stays inf (0 * inf would be NaN)
    int es = int(sizeof(T));
    it.run({(char*)var.ptr, (char*)grad.ptr}, {es, es}, 2, [a, wd, decay](auto p, int64_t n, auto st) {
      T* w = (T*)p[0];
      const T* g = (const T*)p[1];
      if (st[0] == 1 && st[1] == 1) {
        if (decay) {
          for (int64_t i = 0; i < n; ++i) w[i] -= a * (g[i] + wd * w[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) w[i] -= a * g[i];
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          T& wi = w[i * st[0]];
          T gi = g[i * st[1]];
          if (decay) gi += wd * wi;
          wi -= a * gi;
        }
      }
    });
  });
}

namespace {

// one element: upd::momentum_step (src/core/update_math.h, shared with the CUDA kernels)
using upd::momentum_step;

template <typename T, bool DECAY, bool NESTEROV>
void momentum_loop(const StridedIter<3>& it, mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, T a, T mu, T c,
                   T wd) {
  int es = int(sizeof(T));
  it.run({(char*)var.ptr, (char*)accum.ptr, (char*)grad.ptr}, {es, es, es}, 4, [=](auto p, int64_t n, auto st) {
    T* w = (T*)p[0];
    T* m = (T*)p[1];
    const T* g = (const T*)p[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) momentum_step<T, DECAY, NESTEROV>(w[i], m[i], g[i], a, mu, c, wd);
    } else {
      for (int64_t i = 0; i < n; ++i)
        momentum_step<T, DECAY, NESTEROV>(w[i * st[0]], m[i * st[1]], g[i * st[2]], a, mu, c, wd);
    }
  });
}

}  // namespace

void momentum_update_cpu(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, double lr, double momentum,
                         double dampening, double weight_decay, bool nesterov) {
  kcheck::update("momentum_update", var, grad);
  kcheck::update("momentum_update", accum, grad);
  kcheck::slot("momentum_update", var, accum);
  Shape s = dims(var);
  StridedIter<3> it(s, {strides(var), strides(accum), broadcast_strides(grad, s)});
  MF_DISPATCH_FLOAT(var.dtype_id, T, "momentum_update", {
    // 1 - dampening in double, then rounded once
    T a = T(lr), mu = T(momentum), c = T(1 - dampening), wd = T(weight_decay);
    bool decay = weight_decay != 0;
    if (decay && nesterov) momentum_loop<T, true, true>(it, var, accum, grad, a, mu, c, wd);
    else if (decay) momentum_loop<T, true, false>(it, var, accum, grad, a, mu, c, wd);
    else if (nesterov) momentum_loop<T, false, true>(it, var, accum, grad, a, mu, c, wd);
    else momentum_loop<T, false, false>(it, var, accum, grad, a, mu, c, wd);
  });
}

namespace {

// one element: upd::adam_step (src/core/update_math.h, shared with the CUDA kernels)
using upd::adam_step;
using upd::kNoDecay;
using upd::kL2;
using upd::kDecoupled;

template <typename T, int DECAY>
void adam_loop(const StridedIter<4>& it, mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad,
               double beta1, double beta2, double epsilon, double weight_decay, const upd::AdamStep& k) {
  // 1 - beta in double, then rounded: 1 - float(0.999) is 1.3e-5 off in float32
  const T b1 = T(beta1), b2 = T(beta2), c1 = T(1 - beta1), c2 = T(1 - beta2), step = T(k.step), ds = T(k.ds),
          eps = T(epsilon), wd = T(weight_decay), keep = T(k.keep);
  int es = int(sizeof(T));
  it.run({(char*)var.ptr, (char*)m.ptr, (char*)v.ptr, (char*)grad.ptr}, {es, es, es, es}, 8,
         [=](auto p, int64_t n, auto st) {
           T* w = (T*)p[0];
           T* mp = (T*)p[1];
           T* vp = (T*)p[2];
           const T* g = (const T*)p[3];
           if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
             for (int64_t i = 0; i < n; ++i)
               adam_step<T, DECAY>(w[i], mp[i], vp[i], g[i], b1, b2, c1, c2, step, ds, eps, wd, keep);
           } else {
             for (int64_t i = 0; i < n; ++i)
               adam_step<T, DECAY>(w[i * st[0]], mp[i * st[1]], vp[i * st[2]], g[i * st[3]], b1, b2, c1, c2, step, ds,
                                   eps, wd, keep);
           }
         });
}

}  // namespace

void adam_update_cpu(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, double t, double lr,
                     double beta1, double beta2, double epsilon, double weight_decay, int form) {
  kcheck::update("adam_update", var, grad);
  kcheck::slot("adam_update", var, m);
  kcheck::slot("adam_update", var, v);
  if (!(t >= 1)) fail("adam_update: step is ", t, "; expected t >= 1 (count the step first)");
  Shape s = dims(var);
  StridedIter<4> it(s, {strides(var), strides(m), strides(v), broadcast_strides(grad, s)});
  const upd::AdamStep k = upd::adam_scalars(t, lr, beta1, beta2, weight_decay, form);
  MF_DISPATCH_FLOAT(var.dtype_id, T, "adam_update", {
    switch (upd::adam_decay(form, weight_decay)) {
      case kDecoupled: adam_loop<T, kDecoupled>(it, var, m, v, grad, beta1, beta2, epsilon, weight_decay, k); break;
      case kL2: adam_loop<T, kL2>(it, var, m, v, grad, beta1, beta2, epsilon, weight_decay, k); break;
      default: adam_loop<T, kNoDecay>(it, var, m, v, grad, beta1, beta2, epsilon, weight_decay, k);
    }
  });
}

}  // namespace mf
