// -- reduce / reduce_p / sum_to / max_dim / softmax / softmax_xent -------------------------------
// Reductions on the device with the CPU's results (src/kernels/cpu/reduce.cc): one group of threads
// per output element (a warp, or a whole block when few outputs reduce many elements); each thread
// folds a strided share of the reduced elements, then the group combines the partial results. Float
// sums accumulate in double, integer sums and products in wrapping uint64 (exact, so any order
// gives the CPU's value); extremes and their indices combine (value, position) pairs so the first
// NaN, else the first of equal extremes, wins (src/core/reduce_combine.h, the CPU's rule).
#include <cmath>

#include "../../core/lines.h"
#include "../../core/optim_checks.h"
#include "../../core/reduce_checks.h"
#include "../../core/reduce_combine.h"
#include "../../core/kcheck.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

// -- group reductions --------------------------------------------------------------------------
__device__ __forceinline__ double shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ unsigned long long shfl(unsigned long long v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
__device__ __forceinline__ int shfl(int v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ long long shfl(long long v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ long shfl(long v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }  // int64_t
__device__ __forceinline__ unsigned char shfl(unsigned char v, int o) {
  return (unsigned char)__shfl_xor_sync(0xffffffffu, int(v), o);
}
template <class T>
__device__ __forceinline__ ArgBest<T> shfl(ArgBest<T> v, int o) {
  ArgBest<T> r;
  r.v = shfl(v.v, o);
  r.j = shfl(v.j, o);
  return r;
}

// G threads (32: a warp; kThreads: the block) combine v; every thread gets the result. Block groups
// use shared memory, which the next call may reuse (the leading barrier guards it).
template <int G, class V, class F>
__device__ V group_reduce(V v, F f) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, shfl(v, o));
  if (G == 32) return v;
  constexpr int kWarps = G / 32;
  __shared__ unsigned long long raw[kWarps * 2];  // room for the largest V, ArgBest<double>
  static_assert(sizeof(V) <= 2 * sizeof(unsigned long long), "group_reduce: V too large");
  V* tmp = reinterpret_cast<V*>(raw);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) tmp[threadIdx.x >> 5] = v;
  __syncthreads();
  v = tmp[0];
  for (int i = 1; i < kWarps; ++i) v = f(v, tmp[i]);
  return v;
}

struct Plus {
  template <class V> __device__ V operator()(V a, V b) const { return a + b; }
};
struct Times {
  template <class V> __device__ V operator()(V a, V b) const { return a * b; }
};
struct Or {
  __device__ int operator()(int a, int b) const { return a | b; }
};
struct MaxNum {  // NaN skipped (a > b is false for NaN): the CPU's running max of logsumexp
  __device__ double operator()(double a, double b) const { return b > a ? b : a; }
};
struct MinNum {
  __device__ double operator()(double a, double b) const { return b < a ? b : a; }
};
struct Best {
  bool want_max;
  template <class T> __device__ ArgBest<T> operator()(ArgBest<T> a, ArgBest<T> b) const { return arg_combine(a, b, want_max); }
};

// The group of the calling thread: its index among the groups of the grid, its lane, how many.
template <int G>
struct Group {
  long long id, count;
  int lane;
  __device__ Group() {
    if (G == 32) {
      id = (long long)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
      count = (long long)gridDim.x * (blockDim.x / 32);
      lane = threadIdx.x & 31;
    } else {
      id = blockIdx.x;
      count = gridDim.x;
      lane = threadIdx.x;
    }
  }
};

// -- reduce ------------------------------------------------------------------------------------
// x's kept dims (the output's order) and reduced dims (row-major over them).
struct Plan {
  Layout kept, red;
  long long nout, rcount;
};

template <class T, int G>
__global__ void reduce_kernel(int code, const T* x, Plan pl, void* out, int out_int64, double p) {
  Group<G> g;
  for (long long o = g.id; o < pl.nout; o += g.count) {
    const T* base = x + offset_of(pl.kept, o);
    auto at = [&](long long j) { return base[offset_of(pl.red, j)]; };
    double r = 0;
    if (code == MF_R_SUM || code == MF_R_MEAN || code == MF_R_PROD) {
      if (!is_float_type<T>()) {  // wrapping uint64, as the CPU
        unsigned long long acc = code == MF_R_PROD ? 1ull : 0ull;
        for (long long j = g.lane; j < pl.rcount; j += G)
          acc = code == MF_R_PROD ? acc * (unsigned long long)(long long)at(j) : acc + (unsigned long long)(long long)at(j);
        acc = code == MF_R_PROD ? group_reduce<G>(acc, Times()) : group_reduce<G>(acc, Plus());
        if (g.lane == 0) {
          if (out_int64) static_cast<long long*>(out)[o] = (long long)acc;
          else static_cast<T*>(out)[o] = T(acc);
        }
        continue;
      }
      double acc = code == MF_R_PROD ? 1.0 : 0.0;
      for (long long j = g.lane; j < pl.rcount; j += G) acc = code == MF_R_PROD ? acc * double(at(j)) : acc + double(at(j));
      acc = code == MF_R_PROD ? group_reduce<G>(acc, Times()) : group_reduce<G>(acc, Plus());
      r = code == MF_R_MEAN ? acc / double(pl.rcount) : acc;  // 0 / 0 is NaN, as the CPU's empty mean
    } else if (code == MF_R_MAX || code == MF_R_MIN || code == MF_R_ARGMAX || code == MF_R_ARGMIN) {
      bool want_max = code == MF_R_MAX || code == MF_R_ARGMAX;
      ArgBest<T> b{T(0), -1};
      for (long long j = g.lane; j < pl.rcount; j += G) b = arg_combine(b, ArgBest<T>{at(j), j}, want_max);
      b = group_reduce<G>(b, Best{want_max});
      if (g.lane == 0) {
        if (code == MF_R_MAX || code == MF_R_MIN) static_cast<T*>(out)[o] = b.v;
        else static_cast<long long*>(out)[o] = b.j + 1;  // 1-based
      }
      continue;
    } else if (code == MF_R_ANY || code == MF_R_ALL) {
      int found = 0;  // any: a nonzero seen; all: a zero seen
      for (long long j = g.lane; j < pl.rcount && !found; j += G) {
        bool zero = at(j) == T(0);
        found = code == MF_R_ANY ? !zero : zero;
      }
      found = group_reduce<G>(found, Or());
      if (g.lane == 0) static_cast<unsigned char*>(out)[o] = (unsigned char)(code == MF_R_ANY ? found : !found);
      continue;
    } else if (code == MF_R_LOGSUMEXP) {
      double m = -INFINITY;
      for (long long j = g.lane; j < pl.rcount; j += G) m = MaxNum()(m, double(at(j)));
      m = group_reduce<G>(m, MaxNum());
      if (isinf(m)) m = 0;
      double s = 0;
      for (long long j = g.lane; j < pl.rcount; j += G) s += exp(double(at(j)) - m);
      s = group_reduce<G>(s, Plus());
      r = log(s) + m;
    } else if (code == MF_R_VAR || code == MF_R_STD) {
      double s = 0;
      for (long long j = g.lane; j < pl.rcount; j += G) s += double(at(j));
      double mean = group_reduce<G>(s, Plus()) / double(pl.rcount), ss = 0;
      for (long long j = g.lane; j < pl.rcount; j += G) {
        double d = double(at(j)) - mean;
        ss += d * d;
      }
      ss = group_reduce<G>(ss, Plus());
      double c = double(pl.rcount) - p;
      r = ss / (c > 0 ? c : 0.0);
      if (code == MF_R_STD) r = sqrt(r);
    } else if (isinf(p)) {  // norm of order +-inf: the largest / smallest |x|, NaN if any is NaN
      double acc = p > 0 ? 0.0 : INFINITY;
      int nan = 0;
      for (long long j = g.lane; j < pl.rcount; j += G) {
        double a = fabs(double(at(j)));
        if (a != a) nan = 1;
        else acc = p > 0 ? fmax(acc, a) : fmin(acc, a);
      }
      acc = p > 0 ? group_reduce<G>(acc, MaxNum()) : group_reduce<G>(acc, MinNum());
      nan = group_reduce<G>(nan, Or());
      r = nan ? NAN : acc;
    } else {  // norms of finite order
      double acc = 0;
      for (long long j = g.lane; j < pl.rcount; j += G) {
        double v = double(at(j));
        acc += p == 2 ? v * v : p == 1 ? fabs(v) : p == 0 ? double(v != 0) : pow(fabs(v), p);
      }
      acc = group_reduce<G>(acc, Plus());
      r = p == 2 ? sqrt(acc) : (p == 1 || p == 0) ? acc : pow(acc, 1.0 / p);
    }
    if (g.lane == 0) static_cast<T*>(out)[o] = T(r);
  }
}

template <class T>
void launch_reduce(int code, const mf_tensor& x, const Plan& pl, void* out, bool out_int64, double p) {
  if (pl.nout == 0) return;
  // a block per output when few outputs each reduce many elements; a warp per output otherwise
  if (pl.rcount >= 4096 && pl.nout < 1024) {
    unsigned grid = unsigned(pl.nout);
    reduce_kernel<T, kThreads><<<grid, kThreads, 0, stream()>>>(code, static_cast<const T*>(x.ptr), pl, out,
                                                                out_int64, p);
  } else {
    long long blocks = (pl.nout + kThreads / 32 - 1) / (kThreads / 32);
    unsigned grid = unsigned(blocks > 65535LL * 8 ? 65535LL * 8 : blocks);
    reduce_kernel<T, 32><<<grid, kThreads, 0, stream()>>>(code, static_cast<const T*>(x.ptr), pl, out, out_int64, p);
  }
  check_launch(reduce_op_name(code));
}

Plan make_plan(const mf_tensor& x, uint32_t mask) {
  Plan pl{};
  pl.rcount = 1;
  pl.nout = 1;
  for (int d = 0; d < x.ndim; ++d) {
    Layout& l = (mask & (1u << d)) ? pl.red : pl.kept;
    l.shape[l.ndim] = x.shape[d];
    l.stride[l.ndim++] = x.strides[d];
    ((mask & (1u << d)) ? pl.rcount : pl.nout) *= x.shape[d];
  }
  return pl;
}

void run_reduce(int code, mf_tensor& out, const mf_tensor& x, const Plan& pl, double p) {
  bool wide = out.dtype_id == MF_INT64 && x.dtype_id != MF_INT64;
  switch (x.dtype_id) {
    case MF_FLOAT32: launch_reduce<float>(code, x, pl, out.ptr, wide, p); break;
    case MF_FLOAT64: launch_reduce<double>(code, x, pl, out.ptr, wide, p); break;
    case MF_INT32: launch_reduce<int32_t>(code, x, pl, out.ptr, wide, p); break;
    case MF_INT64: launch_reduce<int64_t>(code, x, pl, out.ptr, wide, p); break;
    case MF_UINT8: launch_reduce<uint8_t>(code, x, pl, out.ptr, wide, p); break;
    default: fail(reduce_op_name(code), ": x has an unknown dtype");
  }
}

// -- max_dim -----------------------------------------------------------------------------------
template <class T, int G>
__global__ void max_dim_kernel(const T* x, Plan pl, T* values, long long* indices, bool want_max) {
  Group<G> g;
  for (long long o = g.id; o < pl.nout; o += g.count) {
    const T* base = x + offset_of(pl.kept, o);
    ArgBest<T> b{T(0), -1};
    for (long long j = g.lane; j < pl.rcount; j += G) b = arg_combine(b, ArgBest<T>{base[offset_of(pl.red, j)], j}, want_max);
    b = group_reduce<G>(b, Best{want_max});
    if (g.lane == 0) {
      values[o] = b.v;
      indices[o] = b.j + 1;
    }
  }
}

template <class T>
void launch_max_dim(const mf_tensor& x, const Plan& pl, mf_tensor& values, mf_tensor& indices, bool want_max) {
  long long blocks = (pl.nout + kThreads / 32 - 1) / (kThreads / 32);
  unsigned grid = unsigned(blocks > 65535LL * 8 ? 65535LL * 8 : blocks);
  max_dim_kernel<T, 32><<<grid, kThreads, 0, stream()>>>(static_cast<const T*>(x.ptr), pl,
                                                         static_cast<T*>(values.ptr),
                                                         static_cast<long long*>(indices.ptr), want_max);
}

// -- softmax / log_softmax / softmax_cross_entropy ------------------------------------------------
// One warp per line along dim: the max, the sum of exp(x - max) in double, then the writes (or the
// loss). The CPU computes x - max in T, then widens: so does this.
template <class T>
__global__ void softmax_kernel(const T* x, T* y, Layout xl, Layout yl, long long lines, long long n, long long xs,
                               long long ys, int log_out) {
  Group<32> g;
  for (long long l = g.id; l < lines; l += g.count) {
    const T* xr = x + offset_of(xl, l);
    T* yr = y + offset_of(yl, l);
    double m = -INFINITY;
    for (long long i = g.lane; i < n; i += 32) m = MaxNum()(m, double(xr[i * xs]));
    const T mt = T(group_reduce<32>(m, MaxNum()));
    double s = 0;
    for (long long i = g.lane; i < n; i += 32) s += exp(double(T(xr[i * xs] - mt)));
    s = group_reduce<32>(s, Plus());
    if (log_out) {
      double ls = log(s);
      for (long long i = g.lane; i < n; i += 32) yr[i * ys] = T(double(T(xr[i * xs] - mt)) - ls);
    } else {
      double inv = 1.0 / s;
      for (long long i = g.lane; i < n; i += 32) yr[i * ys] = T(exp(double(T(xr[i * xs] - mt))) * inv);
    }
  }
}

template <class T>
__global__ void softmax_xent_kernel(const T* x, const T* lab, T* loss, Layout xl, Layout ll, long long lines,
                                    long long n, long long xs, long long ls) {
  Group<32> g;
  for (long long l = g.id; l < lines; l += g.count) {
    const T* xr = x + offset_of(xl, l);
    const T* lr = lab + offset_of(ll, l);
    double m = -INFINITY;
    for (long long i = g.lane; i < n; i += 32) m = MaxNum()(m, double(xr[i * xs]));
    const T mt = T(group_reduce<32>(m, MaxNum()));
    double s = 0, lsum = 0, dot = 0;
    for (long long i = g.lane; i < n; i += 32) {
      double z = double(T(xr[i * xs] - mt)), lv = double(lr[i * ls]);
      s += exp(z);
      lsum += lv;
      dot += lv * z;
    }
    s = group_reduce<32>(s, Plus());
    lsum = group_reduce<32>(lsum, Plus());
    dot = group_reduce<32>(dot, Plus());
    if (g.lane == 0) loss[l] = n == 0 ? T(0) : T(lsum * log(s) - dot);
  }
}

// x without dim, as the layout of its lines
Layout lines_of(const mf_tensor& t, int dim) {
  Layout l{};
  for (int d = 0; d < t.ndim; ++d) {
    if (d == dim) continue;
    l.shape[l.ndim] = t.shape[d];
    l.stride[l.ndim++] = t.strides[d];
  }
  return l;
}

unsigned warp_grid(long long groups) {
  long long blocks = (groups + kThreads / 32 - 1) / (kThreads / 32);
  if (blocks < 1) blocks = 1;
  return unsigned(blocks > 65535LL * 8 ? 65535LL * 8 : blocks);
}

}  // namespace

int reduce(int32_t code, mf_tensor* out, const mf_tensor* x, uint32_t dim_mask) {
  return entry("reduce", [&] {
    kcheck::reduce_call(code, *out, *x, dim_mask, false, 0);  // the CPU's checks (src/core/reduce_checks.h)
    Plan pl = make_plan(*x, dim_mask);
    run_reduce(code, *out, *x, pl, 0);
  });
}

int reduce_p(int32_t code, mf_tensor* out, const mf_tensor* x, uint32_t dim_mask, double p) {
  return entry("reduce_p", [&] {
    kcheck::reduce_call(code, *out, *x, dim_mask, true, p);
    Plan pl = make_plan(*x, dim_mask);
    const char* op = reduce_op_name(code);
    if (!dtype_is_float(x->dtype_id)) fail(op, ": x is ", dtype_name(x->dtype_id), "; expected float32 or float64");
    run_reduce(code, *out, *x, pl, p);
  });
}

int sum_to(mf_tensor* out_p, const mf_tensor* g_p) {
  return entry("sum_to", [&] {
    mf_tensor& out = *out_p;
    const mf_tensor& g = *g_p;
    uint32_t mask = kcheck::sum_to(out, g);  // the CPU's checks (src/core/optim_checks.h)
    kcheck::reduce(MF_R_SUM, out, g, mask);
    Plan pl = make_plan(g, mask);
    run_reduce(MF_R_SUM, out, g, pl, 0);
  });
}

int max_dim(mf_tensor* values, mf_tensor* indices, const mf_tensor* x, int32_t dim, int32_t is_min) {
  return entry("max_dim", [&] {
    const char* op = is_min ? "min" : "max";
    kcheck::max_dim(op, *values, *indices, *x, dim);  // the CPU's checks (src/core/lines.h)
    if (values->count == 0) return;
    Plan pl = make_plan(*x, x->ndim ? 1u << dim : 0u);
    switch (x->dtype_id) {
      case MF_FLOAT32: launch_max_dim<float>(*x, pl, *values, *indices, !is_min); break;
      case MF_FLOAT64: launch_max_dim<double>(*x, pl, *values, *indices, !is_min); break;
      case MF_INT32: launch_max_dim<int32_t>(*x, pl, *values, *indices, !is_min); break;
      case MF_INT64: launch_max_dim<int64_t>(*x, pl, *values, *indices, !is_min); break;
      case MF_UINT8: launch_max_dim<uint8_t>(*x, pl, *values, *indices, !is_min); break;
      default: fail(op, ": x has an unknown dtype");
    }
    check_launch(op);
  });
}

int softmax(mf_tensor* y_p, const mf_tensor* x_p, int32_t dim, int32_t log) {
  return entry("softmax", [&] {
    mf_tensor& y = *y_p;
    const mf_tensor& x = *x_p;
    const char* op = log ? "log_softmax" : "softmax";
    kcheck::softmax(op, y, x, dim, true);  // the CPU's checks, and x of a float dtype (src/core/lines.h)
    long long n = x.shape[dim];
    if (n == 0 || x.count == 0) return;
    long long lines = x.count / n;
    Layout xl = lines_of(x, dim), yl = lines_of(y, dim);
    unsigned grid = warp_grid(lines);
    if (x.dtype_id == MF_FLOAT32)
      softmax_kernel<float><<<grid, kThreads, 0, stream()>>>(static_cast<const float*>(x.ptr), static_cast<float*>(y.ptr),
                                                             xl, yl, lines, n, x.strides[dim], y.strides[dim], log);
    else
      softmax_kernel<double><<<grid, kThreads, 0, stream()>>>(static_cast<const double*>(x.ptr),
                                                              static_cast<double*>(y.ptr), xl, yl, lines, n,
                                                              x.strides[dim], y.strides[dim], log);
    check_launch(op);
  });
}

int softmax_xent(mf_tensor* loss_p, const mf_tensor* x_p, const mf_tensor* labels_p, int32_t dim) {
  return entry("softmax_xent", [&] {
    mf_tensor& loss = *loss_p;
    const mf_tensor& x = *x_p;
    const mf_tensor& labels = *labels_p;
    const char* op = "softmax_cross_entropy";
    kcheck::softmax_xent(op, loss, x, labels, dim, true);  // the CPU's checks, and logits of a float dtype
    long long lines = loss.count, n = x.shape[dim];
    if (lines == 0) return;
    Layout xl = lines_of(x, dim), ll = lines_of(labels, dim);
    unsigned grid = warp_grid(lines);
    if (x.dtype_id == MF_FLOAT32)
      softmax_xent_kernel<float><<<grid, kThreads, 0, stream()>>>(static_cast<const float*>(x.ptr),
                                                                  static_cast<const float*>(labels.ptr),
                                                                  static_cast<float*>(loss.ptr), xl, ll, lines, n,
                                                                  x.strides[dim], labels.strides[dim]);
    else
      softmax_xent_kernel<double><<<grid, kThreads, 0, stream()>>>(static_cast<const double*>(x.ptr),
                                                                   static_cast<const double*>(labels.ptr),
                                                                   static_cast<double*>(loss.ptr), xl, ll, lines, n,
                                                                   x.strides[dim], labels.strides[dim]);
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
