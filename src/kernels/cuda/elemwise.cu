// CUDA entries of the elementwise family: unary, binary and where run the pointwise functors of
// src/core/pointwise.h (the same f the CPU loops call) over strided, broadcast operands; copy (any
// dtypes, broadcast), the host copies, fill, arange, eye and linspace. Operand rules and messages
// are the CPU's (src/kernels/cpu/elemwise.cc); outputs are written through their strides.
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../core/device.h"
#include "../../core/dtype.h"
#include "../../core/kcheck.h"
#include "../../core/pointwise.h"
#include "../../core/shape.h"
#include "../../core/writes.h"
#include "backend.h"
#include "fault.cuh"
#include "kernels.h"
#include "walk.h"

namespace mf {
namespace cuda {

namespace {

// -- unary, binary: the functor loops ------------------------------------------------------------

// A: the functor's compute type, as the CPU loop's (pointwise.h UnaryAcc: integer tensors stay in T
// through neg, abs, clamp ..., so int64 beyond 2^53 keeps its low bits)
template <class F, class T>
__global__ void unary_k(T* y, const T* x, Walk<2> L, int64_t n, pw::UnaryAcc<F, T> a, pw::UnaryAcc<F, T> b) {
  using A = pw::UnaryAcc<F, T>;
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t o[2];
    offsets(L, i, o);
    y[o[0]] = T(pw_detail::unary<F>(A(x[o[1]]), a, b, pw_detail::Rank<2>()));
  }
}

template <class F, class T, class R>
__global__ void binary_k(R* z, const T* x, const T* y, Walk<3> L, int64_t n, unsigned long long* scan) {
  bool fault = false;
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t o[3];
    offsets(L, i, o);
    z[o[0]] = pw_detail::binary<F>(x[o[1]], y[o[2]], fault, pw_detail::Rank<1>());
  }
  if (fault && scan) atomicMin(scan, 0ull);  // the fault slot's scan word (fault.cuh): reported below
}

template <class F>
void unary_launch(mf_tensor& y, const mf_tensor& x, double a, double b) {
  const mf_tensor* ops[1] = {&x};
  Walk<2> L = make_walk<2>(y, ops);
  MF_DISPATCH(x.dtype_id, T, {
    using A = pw::UnaryAcc<F, T>;
    unary_k<F, T><<<grid_for(y.count), kThreads, 0, stream()>>>((T*)y.ptr, (const T*)x.ptr, L, y.count,
                                                                 pw::param_as<A>(a), pw::param_as<A>(b));
  });
  check_launch("unary");
}

// Integer division by zero (the functor's fault) is found on the device and recorded there (fault.cuh):
// the next host read raises "div: integer division by zero"; the host does not wait for it here.
template <class F>
void binary_launch(const PointwiseKernels& k, mf_tensor& z, const mf_tensor& x, const mf_tensor& y) {
  const mf_tensor* ops[2] = {&x, &y};
  Walk<3> L = make_walk<3>(z, ops);
  bool watch = k.fault && !dtype_is_float(x.dtype_id);
  FaultSlot fs = watch ? fault_slot() : FaultSlot{};
  std::unique_lock<std::mutex> lock;  // the kernel and its report, with no other check between (fault.cuh)
  if (watch) lock = scan_lock();
  MF_DISPATCH(x.dtype_id, T, {
    bool dummy = false;
    using R = decltype(pw_detail::binary<F>(T(), T(), dummy, pw_detail::Rank<1>()));
    binary_k<F, T, R><<<grid_for(z.count), kThreads, 0, stream()>>>((R*)z.ptr, (const T*)x.ptr, (const T*)y.ptr, L,
                                                                    z.count, fs.scan);
  });
  check_launch("binary");
  if (watch) {
    FaultInfo info{};
    info.op = k.name;
    info.what = k.fault;
    info.kind = kFaultMessage;
    report_bad(fs, info, nullptr);
  }
}

using UnaryFn = void (*)(mf_tensor&, const mf_tensor&, double, double);
using BinaryFn = void (*)(const PointwiseKernels&, mf_tensor&, const mf_tensor&, const mf_tensor&);
struct Loops {
  const void* functor;
  UnaryFn unary;
  BinaryFn binary;
};

// Every functor of pointwise.h; a table entry whose functor is not here (an op registered with a
// functor of its own) has no CUDA loop and says so.
#define MF_CUDA_UNARY_(F) {&FunctorId<pw::F>::tag, &unary_launch<pw::F>, nullptr},
#define MF_CUDA_BINARY_(F) {&FunctorId<pw::F>::tag, nullptr, &binary_launch<pw::F>},
const Loops kLoops[] = {
    MF_CUDA_UNARY_(Neg) MF_CUDA_UNARY_(Abs) MF_CUDA_UNARY_(Exp) MF_CUDA_UNARY_(Log) MF_CUDA_UNARY_(Log1p)
    MF_CUDA_UNARY_(Sqrt) MF_CUDA_UNARY_(Rsqrt) MF_CUDA_UNARY_(Sigmoid) MF_CUDA_UNARY_(Tanh) MF_CUDA_UNARY_(Relu)
    MF_CUDA_UNARY_(Sin) MF_CUDA_UNARY_(Cos) MF_CUDA_UNARY_(Square) MF_CUDA_UNARY_(Sign) MF_CUDA_UNARY_(Floor)
    MF_CUDA_UNARY_(Ceil) MF_CUDA_UNARY_(Round) MF_CUDA_UNARY_(Erf) MF_CUDA_UNARY_(Gelu) MF_CUDA_UNARY_(LeakyRelu)
    MF_CUDA_UNARY_(Clamp)
    MF_CUDA_BINARY_(Add) MF_CUDA_BINARY_(Sub) MF_CUDA_BINARY_(Mul) MF_CUDA_BINARY_(Div) MF_CUDA_BINARY_(Pow)
    MF_CUDA_BINARY_(Maximum) MF_CUDA_BINARY_(Minimum) MF_CUDA_BINARY_(ReluBackward) MF_CUDA_BINARY_(Eq)
    MF_CUDA_BINARY_(Ne) MF_CUDA_BINARY_(Lt) MF_CUDA_BINARY_(Le) MF_CUDA_BINARY_(Gt) MF_CUDA_BINARY_(Ge)
    MF_CUDA_BINARY_(IsNan) MF_CUDA_BINARY_(IsFinite)};
#undef MF_CUDA_UNARY_
#undef MF_CUDA_BINARY_

// The loops of a table entry, found once per code and remembered.
const Loops* loops_of(const PointwiseKernels& k, int code) {
  static std::atomic<const Loops*> cache[kMaxPointwise];
  const Loops* l = cache[code].load(std::memory_order_acquire);
  if (l) return l;
  for (const Loops& c : kLoops)
    if (c.functor == k.functor) l = &c;
  if (!l) fail(k.name, ": its pointwise functor has no CUDA loop (an op registered with a functor of its own runs on "
               "the CPU only)");
  cache[code].store(l, std::memory_order_release);
  return l;
}

// -- where, copy, fill ---------------------------------------------------------------------------

template <class T>
__global__ void where_k(T* out, const uint8_t* c, const T* a, const T* b, Walk<4> L, int64_t n) {
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t o[4];
    offsets(L, i, o);
    out[o[0]] = c[o[1]] ? a[o[2]] : b[o[3]];
  }
}

template <class D, class S>
__global__ void copy_k(D* dst, const S* src, Walk<2> L, int64_t n) {
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t o[2];
    offsets(L, i, o);
    dst[o[0]] = D(src[o[1]]);
  }
}

template <class T>
__global__ void fill_k(T* p, Walk<1> L, int64_t n, T v) {
  MF_CUDA_GRID_LOOP(i, n) {
    int64_t o[1];
    offsets(L, i, o);
    p[o[0]] = v;
  }
}

// reads_own_position (src/core/writes.h): a copy onto itself needs no staging.

// A contiguous header over memory p holding t's shape in dtype dt, on the cuda device.
mf_tensor dense_like(const mf_tensor& t, int dt, void* p) {
  mf_tensor h = t;
  h.ptr = p;
  h.dtype_id = dt;
  h.device_id = device_id();
  h.offset = 0;
  h.owns = 0;
  h.store = nullptr;
  h.autograd = 0;
  int64_t s = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    h.strides[d] = s;
    s *= t.shape[d];
  }
  h.is_contig = 1;
  return h;
}

// dst = src (src broadcast to dst, converted to dst's dtype), both on the device, checked already.
void copy_device(mf_tensor& dst, const mf_tensor& src) {
  if (dst.count == 0) return;
  if (memory_overlaps(dst, src) && !reads_own_position(dst, src)) {  // read src whole before writing
    Scratch staged(size_t(src.count) * dtype_size(src.dtype_id));
    mf_tensor s = dense_like(src, src.dtype_id, staged.get());
    copy_device(s, src);
    copy_device(dst, s);
    return;
  }
  if (dst.dtype_id == src.dtype_id && dst.count == src.count && is_contiguous(dst) && is_contiguous(src)) {
    check(cudaMemcpyAsync(dst.ptr, src.ptr, size_t(dst.count) * dtype_size(dst.dtype_id), cudaMemcpyDeviceToDevice,
                          stream()),
          "copy", "cudaMemcpyAsync");
    return;
  }
  const mf_tensor* ops[1] = {&src};
  Walk<2> L = make_walk<2>(dst, ops);
  MF_DISPATCH(dst.dtype_id, D, {
    MF_DISPATCH(src.dtype_id, S, {
      copy_k<D, S><<<grid_for(dst.count), kThreads, 0, stream()>>>((D*)dst.ptr, (const S*)src.ptr, L, dst.count);
    });
  });
  check_launch("copy");
}

void check_copy(const mf_tensor& dst, const mf_tensor& src, const char* what) {
  check_meta(dst, what, "destination");
  check_meta(src, what, "source");
  check_broadcast(src, dst, what);
  check_writable(dst, what, "destination");
}

// The element range [lo, hi] that t addresses, relative to t.ptr (strides may be negative).
void extent(const mf_tensor& t, int64_t& lo, int64_t& hi) {
  lo = hi = 0;
  for (int d = 0; d < t.ndim; ++d) {
    int64_t span = (t.shape[d] - 1) * t.strides[d];
    if (span < 0) lo += span;
    else hi += span;
  }
}

// Writes the dense bytes of t's shape (row-major) into host tensor t through its strides.
void scatter_host(const mf_tensor& t, const char* dense) {
  size_t es = size_t(dtype_size(t.dtype_id));
  int64_t idx[MF_MAX_DIMS] = {0};
  for (int64_t i = 0; i < t.count; ++i) {
    int64_t off = 0;
    for (int d = 0; d < t.ndim; ++d) off += idx[d] * t.strides[d];
    std::memcpy((char*)t.ptr + off * int64_t(es), dense + size_t(i) * es, es);
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
}

// -- arange, eye, linspace -----------------------------------------------------------------------

template <class T>
__global__ void arange_k(T* p, int64_t n, double start, double step) {
  MF_CUDA_GRID_LOOP(i, n) p[i] = T(start + double(i) * step);
}

template <class T>
__global__ void eye_k(T* p, int64_t n, int64_t cols) {
  MF_CUDA_GRID_LOOP(i, n) p[i * cols + i] = T(1);
}

// As the CPU (and PyTorch): the first half steps up from start, the second down from stop.
__host__ __device__ inline double linspace_value(int64_t i, int64_t n, double start, double stop, double base) {
  double step = n > 1 ? (stop - start) / double(n - 1) : 0;
  double v = i < n / 2 ? start + double(i) * step : stop - double(n - 1 - i) * step;
  if (n == 1) v = start;
  return base != 0 ? pow(base, v) : v;
}

template <class T>
__global__ void linspace_k(T* p, int64_t n, double start, double stop, double base) {
  MF_CUDA_GRID_LOOP(i, n) p[i] = T(linspace_value(i, n, start, stop, base));
}

}  // namespace

// -- the entries ---------------------------------------------------------------------------------

int unary(int32_t code, mf_tensor* y, const mf_tensor* x, double a, double b) {
  return entry("unary", [&] {
    const PointwiseKernels* k = pointwise_at(code);
    if (!k || k->arity != 1) fail("unary: op code ", code, " is not a unary pointwise op's (mf.kernels.U)");
    const char* op = k->name;
    if (x->dtype_id != y->dtype_id)
      fail(op, ": input is ", dtype_name(x->dtype_id), ", output ", dtype_name(y->dtype_id));
    kcheck::meta(op, "x", *x);
    kcheck::meta(op, "output", *y);
    on_device(op, "x", *x);
    on_device(op, "output", *y);
    const mf_tensor* ins[1] = {x};
    const char* names[1] = {"x"};
    kcheck::broadcast_out(op, "output", *y, 1, ins, names);
    kcheck::writable(op, "output", *y);
    if (k->nparams > 0 && !dtype_is_float(y->dtype_id) && (a != a || b != b))
      fail(op, ": a NaN parameter needs a float tensor; x is ", dtype_name(y->dtype_id));
    const Loops* l = loops_of(*k, code);
    if (y->count > 0) l->unary(*y, *x, a, b);
  });
}

int binary(int32_t code, mf_tensor* z, const mf_tensor* x, const mf_tensor* y) {
  return entry("binary", [&] {
    const PointwiseKernels* k = pointwise_at(code);
    if (!k || k->arity != 2) fail("binary: op code ", code, " is not a binary pointwise op's (mf.kernels.B)");
    const char* op = k->name;
    if (x->dtype_id != y->dtype_id)
      fail(op, ": operands are ", dtype_name(x->dtype_id), " and ", dtype_name(y->dtype_id), "; expected one dtype");
    int want = k->to_uint8 ? MF_UINT8 : x->dtype_id;
    if (z->dtype_id != want) fail(op, ": output is ", dtype_name(z->dtype_id), "; expected ", dtype_name(want));
    kcheck::meta(op, "x", *x);
    kcheck::meta(op, "y", *y);
    kcheck::meta(op, "output", *z);
    on_device(op, "x", *x);
    on_device(op, "y", *y);
    on_device(op, "output", *z);
    const mf_tensor* ins[2] = {x, y};
    const char* names[2] = {"x", "y"};
    kcheck::broadcast_out(op, "output", *z, 2, ins, names);
    kcheck::writable(op, "output", *z);
    const Loops* l = loops_of(*k, code);
    if (z->count > 0) l->binary(*k, *z, *x, *y);
  });
}

int where(mf_tensor* out, const mf_tensor* c, const mf_tensor* a, const mf_tensor* b) {
  return entry("where", [&] {
    if (c->dtype_id != MF_UINT8) fail("where: cond is ", dtype_name(c->dtype_id), "; expected uint8");
    if (a->dtype_id != b->dtype_id || a->dtype_id != out->dtype_id)
      fail("where: a is ", dtype_name(a->dtype_id), ", b ", dtype_name(b->dtype_id), ", output ",
           dtype_name(out->dtype_id), "; a and b must share the output dtype");
    kcheck::meta("where", "cond", *c);
    kcheck::meta("where", "a", *a);
    kcheck::meta("where", "b", *b);
    kcheck::meta("where", "output", *out);
    for (const mf_tensor* t : {c, a, b, (const mf_tensor*)out}) on_device("where", "an operand", *t);
    const mf_tensor* ins[3] = {c, a, b};
    const char* names[3] = {"cond", "a", "b"};
    kcheck::broadcast_out("where", "output", *out, 3, ins, names);
    kcheck::writable("where", "output", *out);
    if (out->count == 0) return;
    Walk<4> L = make_walk<4>(*out, ins);
    MF_DISPATCH(out->dtype_id, T, {
      where_k<T><<<grid_for(out->count), kThreads, 0, stream()>>>((T*)out->ptr, (const uint8_t*)c->ptr,
                                                                  (const T*)a->ptr, (const T*)b->ptr, L, out->count);
    });
    check_launch("where");
  });
}

int copy(mf_tensor* dst, const mf_tensor* src) {
  return entry("copy", [&] {
    check_copy(*dst, *src, "copy");
    on_device("copy", "destination", *dst);
    on_device("copy", "source", *src);
    copy_device(*dst, *src);
  });
}

// The bytes of src's extent go up as they are (one cudaMemcpyAsync, which returns once the host
// memory has been read); a layout or dtype change then happens on the device.
int copy_from_host(mf_tensor* dst, const mf_tensor* src) {
  return entry("copy_from_host", [&] {
    check_copy(*dst, *src, "copy_from_host");
    on_device("copy_from_host", "destination", *dst);
    if (src->device_id != MF_CPU) fail("copy_from_host: the source is on device ", src->device_id, "; expected the host");
    if (dst->count == 0) return;
    size_t es = size_t(dtype_size(src->dtype_id));
    if (dst->dtype_id == src->dtype_id && dst->count == src->count && is_contiguous(*dst) && is_contiguous(*src)) {
      check(cudaMemcpyAsync(dst->ptr, src->ptr, size_t(dst->count) * es, cudaMemcpyHostToDevice, stream()),
            "copy_from_host", "cudaMemcpyAsync");
      return;
    }
    int64_t lo, hi;
    extent(*src, lo, hi);
    size_t bytes = size_t(hi - lo + 1) * es;
    Scratch up(bytes);
    check(cudaMemcpyAsync(up.get(), (const char*)src->ptr + lo * int64_t(es), bytes, cudaMemcpyHostToDevice, stream()),
          "copy_from_host", "cudaMemcpyAsync");
    mf_tensor s = *src;
    s.ptr = up.as<char>() - lo * int64_t(es);
    s.device_id = device_id();
    s.store = nullptr;
    s.owns = 0;
    copy_device(*dst, s);
  });
}

// Returns when the host has the values: the one entry that waits for the stream.
int copy_to_host(mf_tensor* dst, const mf_tensor* src) {
  return entry("copy_to_host", [&] {
    check_copy(*dst, *src, "copy_to_host");
    on_device("copy_to_host", "source", *src);
    if (dst->device_id != MF_CPU) fail("copy_to_host: the destination is on device ", dst->device_id, "; expected the host");
    if (dst->count == 0) return;
    size_t bytes = size_t(dst->count) * dtype_size(dst->dtype_id);
    if (dst->dtype_id == src->dtype_id && dst->count == src->count && is_contiguous(*dst) && is_contiguous(*src)) {
      check(cudaMemcpyAsync(dst->ptr, src->ptr, bytes, cudaMemcpyDeviceToHost, stream()), "copy_to_host",
            "cudaMemcpyAsync");
      synchronize("copy_to_host");
      return;
    }
    // lay the values out densely in dst's dtype on the device, bring them down, place them
    Scratch dense(bytes);
    mf_tensor d = dense_like(*dst, dst->dtype_id, dense.get());
    copy_device(d, *src);
    if (is_contiguous(*dst)) {
      check(cudaMemcpyAsync(dst->ptr, dense.get(), bytes, cudaMemcpyDeviceToHost, stream()), "copy_to_host",
            "cudaMemcpyAsync");
      synchronize("copy_to_host");
      return;
    }
    std::vector<char> host(bytes);
    check(cudaMemcpyAsync(host.data(), dense.get(), bytes, cudaMemcpyDeviceToHost, stream()), "copy_to_host",
          "cudaMemcpyAsync");
    synchronize("copy_to_host");
    scatter_host(*dst, host.data());
  });
}

int fill(mf_tensor* t, double value) {
  return entry("fill", [&] {
    check_meta(*t, "fill", "tensor");
    on_device("fill", "tensor", *t);
    check_value_fits(value, t->dtype_id, "fill");
    check_writable(*t, "fill", "tensor");
    if (t->count == 0) return;
    Walk<1> L = make_walk<1>(*t, nullptr);
    MF_DISPATCH(t->dtype_id, T, {
      fill_k<T><<<grid_for(t->count), kThreads, 0, stream()>>>((T*)t->ptr, L, t->count, T(value));
    });
    check_launch("fill");
  });
}

int arange(mf_tensor* t, double start, double step) {
  return entry("arange", [&] {
    kcheck::meta("arange", "output", *t);
    kcheck::contiguous("arange", "output", *t);
    on_device("arange", "output", *t);
    if (t->count == 0) return;
    check_value_fits(start, t->dtype_id, "arange");  // monotonic: the ends bound the values
    check_value_fits(start + double(t->count - 1) * step, t->dtype_id, "arange");
    MF_DISPATCH(t->dtype_id, T, {
      arange_k<T><<<grid_for(t->count), kThreads, 0, stream()>>>((T*)t->ptr, t->count, start, step);
    });
    check_launch("arange");
  });
}

int eye(mf_tensor* t) {
  return entry("eye", [&] {
    kcheck::meta("eye", "output", *t);
    if (t->ndim != 2) fail("eye: output is ", shape_str(*t), "; expected 2 dims");
    kcheck::contiguous("eye", "output", *t);
    on_device("eye", "output", *t);
    if (t->count == 0) return;
    check(cudaMemsetAsync(t->ptr, 0, size_t(t->count) * dtype_size(t->dtype_id), stream()), "eye", "cudaMemsetAsync");
    int64_t n = t->shape[0] < t->shape[1] ? t->shape[0] : t->shape[1];
    MF_DISPATCH(t->dtype_id, T, {
      eye_k<T><<<grid_for(n), kThreads, 0, stream()>>>((T*)t->ptr, n, t->shape[1]);
    });
    check_launch("eye");
  });
}

int linspace(mf_tensor* t, double start, double stop, double base) {
  const char* op = base != 0 ? "logspace" : "linspace";
  return entry(op, [&] {
    kcheck::meta(op, "output", *t);
    kcheck::contiguous(op, "output", *t);
    on_device(op, "output", *t);
    if (t->ndim != 1) fail(op, ": output is ", shape_str(*t), "; expected 1 dim");
    int64_t n = t->count;
    if (n == 0) return;
    if (!dtype_is_float(t->dtype_id)) {  // monotonic: the ends bound the values
      check_value_fits(std::trunc(linspace_value(0, n, start, stop, base)), t->dtype_id, op);
      check_value_fits(std::trunc(linspace_value(n - 1, n, start, stop, base)), t->dtype_id, op);
    }
    MF_DISPATCH(t->dtype_id, T, {
      linspace_k<T><<<grid_for(n), kThreads, 0, stream()>>>((T*)t->ptr, n, start, stop, base);
    });
    check_launch(op);
  });
}

// Metadata only (the view's pointer into base's storage): the CPU's entry serves every device.
int alias(mf_tensor* view, const mf_tensor* base, int64_t offset) {
  return device_kernels(MF_CPU).alias(view, base, offset);
}

}  // namespace cuda
}  // namespace mf
