// -- gather / scatter / index_add / index_add_like ------------------------------------------------
// Indexing by 1-based int64 indices with the CPU's semantics (src/kernels/cpu/scatter.cc, gather.cc):
// every index is checked on the device without a host wait: a search for the first bad position, whose
// fault (named as the CPU names it) the next host read raises (fault.cuh); the kernels skip bad
// indices (gather writes 0 there), so nothing outside the tensors is touched meanwhile. The
// writes keep the CPU's order where it matters: destinations of different lines (all coordinates but
// dim) never meet, so one thread per line walks dim in order and repeated destinations get the last
// write (scatter) or the sums in index order (index_add), bit for bit.
#include <memory>
#include <string>

#include "../../core/kcheck.h"
#include "../../core/writes.h"
#include "fault.cuh"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

#define MF_CUDA_DISPATCH(dt, T, op, ...)                 \
  switch (dt) {                                          \
    case MF_FLOAT32: { using T = float; __VA_ARGS__; } break;    \
    case MF_FLOAT64: { using T = double; __VA_ARGS__; } break;   \
    case MF_INT32: { using T = int32_t; __VA_ARGS__; } break;    \
    case MF_INT64: { using T = int64_t; __VA_ARGS__; } break;    \
    case MF_UINT8: { using T = uint8_t; __VA_ARGS__; } break;    \
    default: fail(op, ": unknown dtype");                \
  }

void index_dtype(const char* op, const mf_tensor& idx) {
  if (idx.dtype_id != MF_INT64) fail(op, ": index is ", dtype_name(idx.dtype_id), "; expected int64 (1-based)");
}

// -- the range check ------------------------------------------------------------------------------
// Every index of idx lies in 1..n (n = x's size along dim), or the next host read raises an error naming
// the first that does not (fault.cuh); the host does not wait here. flat: the CPU's gather.cc message (a
// position counted from 1) instead of scatter.cc's coordinates.
void check_range(const char* op, const mf_tensor& idx, int dim, long long n, const mf_tensor& x, bool flat) {
  check_indices(index_fault(op, "index", idx, n, dim, flat, &x), idx);
}

// The index of gather and scatter: x's rank, no larger than x off dim nor than other (src).
void check_index_shape(const char* op, const mf_tensor& x, const mf_tensor& idx, int dim, const mf_tensor* other,
                       const char* oname) {
  bool ok = idx.ndim == x.ndim && dim >= 0 && dim < (x.ndim ? x.ndim : 1);
  for (int d = 0; ok && d < x.ndim; ++d) {
    if (d != dim && idx.shape[d] > x.shape[d]) ok = false;
    if (other && other->ndim && idx.shape[d] > other->shape[d]) ok = false;
  }
  if (other && other->ndim && other->ndim != idx.ndim) ok = false;
  if (!ok) {
    std::string o = other ? std::string(", ") + oname + " " + shape_str(*other) : "";
    fail(op, ": x is ", shape_str(x), ", index ", shape_str(idx), o, " along dim ", dim + 1,
         "; expected index of x's rank, no larger than x off dim", other ? std::string(" nor than ") + oname : "");
  }
}

bool same_view(const mf_tensor& a, const mf_tensor& b) {
  if (a.ptr != b.ptr || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d] || a.strides[d] != b.strides[d]) return false;
  return true;
}

// t, or a contiguous copy of it in keep when it shares memory with out (the in-place forms read
// their index and src as they were before any write)
mf_tensor detached(const mf_tensor& t, const mf_tensor& out, std::unique_ptr<Scratch>& keep, const char* op) {
  if (t.count == 0 || !memory_overlaps(t, out)) return t;
  keep.reset(new Scratch(size_t(t.count) * size_t(dtype_size(t.dtype_id))));
  mf_tensor c{};
  set_meta(c, shape_of(t), t.dtype_id, t.device_id);
  c.ptr = keep->get();
  if (copy(&c, &t) != MF_OK) fail(op, ": copying an operand that shares the output's memory failed: ", last_error());
  return c;
}

void copy_into(mf_tensor& out, const mf_tensor& x, const char* op) {
  if (same_view(out, x) || out.count == 0) return;
  if (copy(&out, &x) != MF_OK) fail(op, ": copying x into the output failed: ", last_error());
}

// Lines of a walk: every coordinate but dim (l: row-major over them), n positions along dim.
struct LineWalk {
  Layout rest;  // the shape off dim (strides unused)
  long long n, count;
};
LineWalk line_walk(const mf_tensor& t, int dim) {
  LineWalk w{};
  w.n = t.ndim ? t.shape[dim] : 1;
  w.count = 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (d == dim) continue;
    w.rest.shape[w.rest.ndim++] = t.shape[d];
    w.count *= t.shape[d];
  }
  return w;
}
// The strides of t off dim, in LineWalk order, and its stride along dim.
struct LineStrides {
  long long s[MF_MAX_DIMS];
  long long along;
};
LineStrides line_strides(const mf_tensor& t, int dim) {
  LineStrides r{};
  int k = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (d == dim) r.along = t.strides[d];
    else r.s[k++] = t.strides[d];
  }
  return r;
}
__device__ __forceinline__ long long line_offset(const LineWalk& w, const LineStrides& st, long long l) {
  long long off = 0;
  for (int d = w.rest.ndim - 1; d >= 0; --d) {
    off += (l % w.rest.shape[d]) * st.s[d];
    l /= w.rest.shape[d];
  }
  return off;
}

// -- kernels ---------------------------------------------------------------------------------------------
// gather: out (index's shape, contiguous) element i reads x at i's coordinates with dim's replaced
template <class T>
__global__ void gather_kernel(T* out, const T* x, const long long* idx, Layout xl, Layout il, int dim, long long count) {
  for (long long i = global_index(); i < count; i += global_step()) {
    long long xo = 0, io = 0, rem = i, at = 0;
    for (int d = il.ndim - 1; d >= 0; --d) {
      long long c = rem % il.shape[d];
      rem /= il.shape[d];
      xo += c * xl.stride[d];
      io += c * il.stride[d];
      if (d == dim) at = c;
    }
    if (il.ndim) {
      long long v = idx[io];
      if (v < 1 || v > xl.shape[dim]) {  // check_range has recorded it: the output is not used
        out[i] = T(0);
        continue;
      }
      xo += (v - 1 - at) * xl.stride[dim];
    }
    out[i] = x[xo];
  }
}

// scatter (add: scatter_add) and index_add: one thread per line of the walk, positions along dim in order
template <class T, bool ADD, bool SCALAR_SRC>
__global__ void scatter_kernel(T* out, const T* src, const long long* idx, LineWalk w, LineStrides os, LineStrides ss,
                               LineStrides is, long long idx_len_stride, bool by_position, long long limit) {
  for (long long l = global_index(); l < w.count; l += global_step()) {
    long long ob = line_offset(w, os, l), sb = SCALAR_SRC ? 0 : line_offset(w, ss, l);
    long long ib = by_position ? 0 : line_offset(w, is, l);
    for (long long j = 0; j < w.n; ++j) {
      // scatter: the index has the walk's shape (its own element); index_add: a 1-D index by position
      long long target = by_position ? idx[j * idx_len_stride] - 1 : idx[ib + j * is.along] - 1;
      if (target < 0 || target >= limit) continue;  // recorded by check_range; never written out of bounds
      long long o = ob + target * os.along;
      T v = SCALAR_SRC ? src[0] : src[sb + j * ss.along];
      if (ADD) out[o] = T(out[o] + v);
      else out[o] = v;
    }
  }
}

template <class T>
void launch_gather(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, int dim) {
  Layout xl = layout_of(x), il = layout_of(idx);
  gather_kernel<T><<<grid_for(out.count), kThreads, 0, stream()>>>(static_cast<T*>(out.ptr),
                                                                   static_cast<const T*>(x.ptr),
                                                                   static_cast<const long long*>(idx.ptr), xl, il, dim,
                                                                   out.count);
}

// walk: the tensor whose shape the loop covers (the index for scatter, src for index_add)
template <class T, bool ADD>
void launch_scatter(mf_tensor& out, const mf_tensor& src, const mf_tensor& idx, const mf_tensor& walk, int dim,
                    bool by_position) {
  LineWalk w = line_walk(walk, dim);
  if (w.count == 0 || w.n == 0) return;
  int d = walk.ndim ? dim : -1;
  LineStrides os = line_strides(out, d), ss = line_strides(src, d), is = line_strides(idx, by_position ? -1 : d);
  if (walk.ndim == 0) os.along = ss.along = is.along = 0;
  long long ist = by_position && idx.ndim ? idx.strides[0] : 0;
  long long limit = out.ndim ? out.shape[dim] : 1;
  unsigned grid = grid_for(w.count);
  if (src.ndim == 0 && !by_position)
    scatter_kernel<T, ADD, true><<<grid, kThreads, 0, stream()>>>(static_cast<T*>(out.ptr),
                                                                  static_cast<const T*>(src.ptr),
                                                                  static_cast<const long long*>(idx.ptr), w, os, ss,
                                                                  is, ist, by_position, limit);
  else
    scatter_kernel<T, ADD, false><<<grid, kThreads, 0, stream()>>>(static_cast<T*>(out.ptr),
                                                                   static_cast<const T*>(src.ptr),
                                                                   static_cast<const long long*>(idx.ptr), w, os, ss,
                                                                   is, ist, by_position, limit);
}

}  // namespace

int gather(mf_tensor* out_p, const mf_tensor* x_p, const mf_tensor* idx_p, int32_t dim) {
  return entry("gather", [&] {
    mf_tensor& out = *out_p;
    const mf_tensor &x = *x_p, &idx = *idx_p;
    for (const mf_tensor* t : {(const mf_tensor*)out_p, x_p, idx_p}) on_device("gather", "an operand", *t);
    kcheck::meta("gather", "x", x);
    kcheck::meta("gather", "index", idx);
    kcheck::meta("gather", "output", out);
    index_dtype("gather", idx);
    check_index_shape("gather", x, idx, dim, nullptr, "");
    kcheck::same_shape("gather", "output", out, "index", idx);
    kcheck::contiguous("gather", "output", out);
    kcheck::dtype("gather", "output", out, x.dtype_id, " (x's dtype)");
    check_range("gather", idx, dim, x.ndim ? x.shape[dim] : 1, x, false);
    if (out.count == 0) return;
    MF_CUDA_DISPATCH(x.dtype_id, T, "gather", launch_gather<T>(out, x, idx, dim));
    check_launch("gather");
  });
}

int scatter(mf_tensor* out_p, const mf_tensor* x_p, const mf_tensor* index_p, const mf_tensor* source_p, int32_t dim,
            int32_t add) {
  const char* op = add ? "scatter_add" : "scatter";
  return entry(op, [&] {
    mf_tensor& out = *out_p;
    const mf_tensor &x = *x_p, &index = *index_p, &source = *source_p;
    for (const mf_tensor* t : {(const mf_tensor*)out_p, x_p, index_p, source_p}) on_device(op, "an operand", *t);
    kcheck::meta(op, "x", x);
    kcheck::meta(op, "index", index);
    kcheck::meta(op, "src", source);
    kcheck::meta(op, "output", out);
    index_dtype(op, index);
    check_index_shape(op, x, index, dim, &source, "src");
    kcheck::same_shape(op, "output", out, "x", x);
    kcheck::writable(op, "output", out);
    if (source.dtype_id != x.dtype_id || out.dtype_id != x.dtype_id)
      fail(op, ": x is ", dtype_name(x.dtype_id), ", src ", dtype_name(source.dtype_id), ", output ",
           dtype_name(out.dtype_id), "; expected one dtype");
    std::unique_ptr<Scratch> ik, sk;
    mf_tensor idx = detached(index, out, ik, op), src = detached(source, out, sk, op);
    check_range(op, idx, dim, x.ndim ? x.shape[dim] : 1, x, false);
    copy_into(out, x, op);
    if (add) MF_CUDA_DISPATCH(x.dtype_id, T, op, (launch_scatter<T, true>(out, src, idx, idx, dim, false)))
    else MF_CUDA_DISPATCH(x.dtype_id, T, op, (launch_scatter<T, false>(out, src, idx, idx, dim, false)))
    check_launch(op);
  });
}

int index_add(mf_tensor* out_p, const mf_tensor* x_p, const mf_tensor* index_p, const mf_tensor* source_p,
              int32_t dim) {
  return entry("index_add", [&] {
    const char* op = "index_add";
    mf_tensor& out = *out_p;
    const mf_tensor &x = *x_p, &index = *index_p, &source = *source_p;
    for (const mf_tensor* t : {(const mf_tensor*)out_p, x_p, index_p, source_p}) on_device(op, "an operand", *t);
    kcheck::meta(op, "x", x);
    kcheck::meta(op, "index", index);
    kcheck::meta(op, "src", source);
    kcheck::meta(op, "output", out);
    index_dtype(op, index);
    std::unique_ptr<Scratch> ik, sk;
    mf_tensor idx = detached(index, out, ik, op), src = detached(source, out, sk, op);
    bool ok = idx.ndim == 1 && src.ndim == x.ndim && dim >= 0 && dim < x.ndim && src.shape[dim] == idx.shape[0];
    for (int d = 0; ok && d < x.ndim; ++d) ok = d == dim || src.shape[d] == x.shape[d];
    if (!ok)
      fail(op, ": x is ", shape_str(x), ", index ", shape_str(idx), ", src ", shape_str(src), " along dim ", dim + 1,
           "; expected a 1-D index and src of x's shape but for dim ", dim + 1, ", sized by the index");
    kcheck::same_shape(op, "output", out, "x", x);
    kcheck::writable(op, "output", out);
    if (src.dtype_id != x.dtype_id || out.dtype_id != x.dtype_id)
      fail(op, ": x is ", dtype_name(x.dtype_id), ", src ", dtype_name(src.dtype_id), ", output ",
           dtype_name(out.dtype_id), "; expected one dtype");
    check_range(op, idx, dim, x.shape[dim], x, false);
    copy_into(out, x, op);
    MF_CUDA_DISPATCH(x.dtype_id, T, op, (launch_scatter<T, true>(out, src, idx, src, dim, true)));
    check_launch(op);
  });
}

int index_add_like(mf_tensor* out_p, const mf_tensor* g_p, const mf_tensor* idx_p, int32_t dim) {
  return entry("index_add_like", [&] {
    const char* op = "index_add_like";
    mf_tensor& out = *out_p;
    const mf_tensor &g = *g_p, &idx = *idx_p;
    for (const mf_tensor* t : {(const mf_tensor*)out_p, g_p, idx_p}) on_device(op, "an operand", *t);
    kcheck::meta(op, "gradient", g);
    kcheck::meta(op, "output", out);
    if (dim < 0 || dim >= g.ndim || g.ndim != out.ndim || idx.ndim != 1)
      fail(op, ": gradient is ", shape_str(g), ", output ", shape_str(out), ", indices ", shape_str(idx), " along dim ",
           dim + 1, "; expected equal ranks and 1-D indices");
    for (int d = 0; d < g.ndim; ++d)
      if (d != dim && g.shape[d] != out.shape[d])
        fail(op, ": gradient is ", shape_str(g), ", output ", shape_str(out), "; sizes off dim ", dim + 1,
             " must match");
    if (g.shape[dim] != idx.count)
      fail(op, ": gradient has ", g.shape[dim], " slices along dim ", dim + 1, " for ", idx.count, " indices");
    if (g.dtype_id != out.dtype_id)
      fail(op, ": gradient is ", dtype_name(g.dtype_id), ", output ", dtype_name(out.dtype_id), "; expected one dtype");
    if (idx.dtype_id != MF_INT64) fail(op, ": indices are ", dtype_name(idx.dtype_id), "; expected int64");
    check_range(op, idx, dim, out.shape[dim], out, true);
    if (fill(&out, 0) != MF_OK) fail(op, ": zeroing the output failed: ", last_error());
    MF_CUDA_DISPATCH(out.dtype_id, T, op, (launch_scatter<T, true>(out, g, idx, g, dim, true)));
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
