// -- sum_to / pad_like / optimizer updates ----------------------------------------------------
// Backward helpers of broadcasting and slicing, and single-pass parameter updates: each update
// reads and writes every parameter element once (w -= lr * (m = mu * m + g) is one loop, not four).
#include <cmath>

#include "../../core/error.h"
#include "kernels.h"
#include "strided.h"

namespace mf {

void sum_to_cpu(mf_tensor& out, const mf_tensor& g) {
  if (out.ndim > g.ndim) fail("sum_to: target has more dims than the gradient");
  uint32_t mask = 0;
  int lead = g.ndim - out.ndim;
  for (int d = 0; d < g.ndim; ++d)
    if (d < lead || (out.shape[d - lead] == 1 && g.shape[d] != 1)) mask |= 1u << d;
  // out is contiguous and its non-1 dims are g's kept dims in order, so the reduce writes it row-major
  reduce_cpu(MF_R_SUM, out, g, mask);
}

void pad_like_cpu(mf_tensor& out, const mf_tensor& g, int dim, int64_t start, int64_t step) {
  fill_cpu(out, 0);
  if (g.count == 0) return;
  mf_tensor view = out;
  for (int d = 0; d < kMaxDims; ++d) view.shape[d] = d < g.ndim ? g.shape[d] : 0;
  view.strides[dim] = out.strides[dim] * step;
  view.ptr = (char*)out.ptr + start * out.strides[dim] * dtype_size(out.dtype_id);
  view.count = g.count;
  copy_cpu(view, g);
}

namespace {

Shape dims(const mf_tensor& t) { return shape_of(t); }
Shape strides(const mf_tensor& t) { return Shape(t.strides, t.strides + t.ndim); }

void check_update(const char* op, const mf_tensor& var, const mf_tensor& grad) {
  if (!dtype_is_float(var.dtype_id)) fail(op, ": variable is ", dtype_name(var.dtype_id), "; expected float32 or float64");
  if (grad.dtype_id != var.dtype_id)
    fail(op, ": gradient is ", dtype_name(grad.dtype_id), ", variable ", dtype_name(var.dtype_id));
  broadcast_shapes(op, dims(var), dims(grad), "variable", "gradient");
}

// a slot the update writes beside the variable (accum, m, v): the loops index it by var's shape
void check_slot(const char* op, const mf_tensor& var, const mf_tensor& slot) {
  if (dims(slot) != dims(var))
    fail(op, ": slot is ", shape_str(slot), ", variable ", shape_str(var), "; expected one shape");
}

}  // namespace

void sgd_update_cpu(mf_tensor& var, const mf_tensor& grad, double lr) {
  check_update("sgd_update", var, grad);
  Shape s = dims(var);
  StridedIter<2> it(s, {strides(var), broadcast_strides(grad, s)});
  MF_DISPATCH_FLOAT(var.dtype_id, T, "sgd_update", {
    T a = T(lr);
    it.run({(char*)var.ptr, (char*)grad.ptr}, {int(sizeof(T)), int(sizeof(T))}, 2, [&](auto p, int64_t n, auto st) {
      T* w = (T*)p[0];
      const T* g = (const T*)p[1];
      for (int64_t i = 0; i < n; ++i) w[i * st[0]] -= a * g[i * st[1]];
    });
  });
}

void momentum_update_cpu(mf_tensor& var, mf_tensor& accum, const mf_tensor& grad, double lr, double momentum,
                         bool nesterov) {
  check_update("momentum_update", var, grad);
  check_update("momentum_update", accum, grad);
  check_slot("momentum_update", var, accum);
  Shape s = dims(var);
  StridedIter<3> it(s, {strides(var), strides(accum), broadcast_strides(grad, s)});
  MF_DISPATCH_FLOAT(var.dtype_id, T, "momentum_update", {
    T a = T(lr), mu = T(momentum);
    int es = int(sizeof(T));
    it.run({(char*)var.ptr, (char*)accum.ptr, (char*)grad.ptr}, {es, es, es}, 4, [&](auto p, int64_t n, auto st) {
      T* w = (T*)p[0];
      T* m = (T*)p[1];
      const T* g = (const T*)p[2];
      for (int64_t i = 0; i < n; ++i) {
        T gi = g[i * st[2]];
        T mi = mu * m[i * st[1]] + gi;
        m[i * st[1]] = mi;
        w[i * st[0]] -= a * (nesterov ? gi + mu * mi : mi);
      }
    });
  });
}

void adam_update_cpu(mf_tensor& var, mf_tensor& m, mf_tensor& v, const mf_tensor& grad, double lr_t, double beta1,
                     double beta2, double epsilon) {
  check_update("adam_update", var, grad);
  check_slot("adam_update", var, m);
  check_slot("adam_update", var, v);
  Shape s = dims(var);
  StridedIter<4> it(s, {strides(var), strides(m), strides(v), broadcast_strides(grad, s)});
  MF_DISPATCH_FLOAT(var.dtype_id, T, "adam_update", {
    // 1 - beta in double, then rounded: 1 - float(0.999) is 1.3e-5 off in float32
    T a = T(lr_t), b1 = T(beta1), b2 = T(beta2), c1 = T(1 - beta1), c2 = T(1 - beta2), eps = T(epsilon);
    int es = int(sizeof(T));
    it.run({(char*)var.ptr, (char*)m.ptr, (char*)v.ptr, (char*)grad.ptr}, {es, es, es, es}, 8,
           [&](auto p, int64_t n, auto st) {
             T* w = (T*)p[0];
             T* mp = (T*)p[1];
             T* vp = (T*)p[2];
             const T* g = (const T*)p[3];
             for (int64_t i = 0; i < n; ++i) {
               T gi = g[i * st[3]];
               T mi = b1 * mp[i * st[1]] + c1 * gi;
               T vi = b2 * vp[i * st[2]] + c2 * gi * gi;
               mp[i * st[1]] = mi;
               vp[i * st[2]] = vi;
               w[i * st[0]] -= a * mi / (std::sqrt(vi) + eps);
             }
           });
  });
}

}  // namespace mf
