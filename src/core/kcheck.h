// Up-front operand checks of the native entries (issue 19): O(ndim) each, so the hot path pays a few
// comparisons. Every message names the routine, the shapes and the rule. Shared by every device's
// kernels (host code: the CUDA entries check their operands before they launch).
#pragma once
#include "dtype.h"
#include "error.h"
#include "shape.h"
#include "writes.h"

namespace mf {
namespace kcheck {

// t's metadata is self-consistent (check_meta: dims, count, dtype, data pointer, extents).
inline void meta(const char* op, const char* name, const mf_tensor& t) { check_meta(t, op, name); }

inline bool same_dims(const mf_tensor& a, const mf_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// "softmax: y is 2x3, x is 4x5; expected y of x's shape"
inline void same_shape(const char* op, const char* oname, const mf_tensor& out, const char* iname, const mf_tensor& in) {
  if (!same_dims(out, in))
    fail(op, ": ", oname, " is ", shape_str(out), ", ", iname, " is ", shape_str(in), "; expected ", oname, " of ",
         iname, "'s shape");
}

inline void dtype(const char* op, const char* name, const mf_tensor& t, int want, const char* why = "") {
  if (t.dtype_id != want)
    fail(op, ": ", name, " is ", dtype_name(t.dtype_id), "; expected ", dtype_name(want), why);
}

inline void float_dtype(const char* op, const char* name, const mf_tensor& t) {
  if (!dtype_is_float(t.dtype_id))
    fail(op, ": ", name, " is ", dtype_name(t.dtype_id), "; expected float32 or float64");
}

// A one-element float tensor a routine reads where it runs (an update's lr and step count: on a GPU
// the kernel reads it, so the host never waits for it): "sgd_update: lr is 2x2; expected one element".
inline void scalar(const char* op, const char* name, const mf_tensor& t) {
  meta(op, name, t);
  if (t.count != 1) fail(op, ": ", name, " is ", shape_str(t), "; expected one element");
  float_dtype(op, name, t);
}

// The routine indexes t row-major from t.ptr: its strides must be the dense ones.
inline void contiguous(const char* op, const char* name, const mf_tensor& t) {
  if (!is_contiguous(t))
    fail(op, ": ", name, " of size ", shape_str(t), " is not contiguous; this routine writes it row-major (pass a "
         "contiguous tensor)");
}

// A strided output written through its strides must not have overlapping elements.
inline void writable(const char* op, const char* name, const mf_tensor& t) {
  if (!is_contiguous(t)) check_writable(t, op, name);
}

// True when out has exactly the broadcast shape of the n inputs (dims align from the last).
inline bool is_broadcast_of(const mf_tensor& out, int n, const mf_tensor* const* ins) {
  int nd = 0;
  for (int i = 0; i < n; ++i) nd = ins[i]->ndim > nd ? ins[i]->ndim : nd;
  bool ok = out.ndim == nd;
  for (int i = 0; i < n && ok; ++i) {
    const mf_tensor& t = *ins[i];
    for (int k = 1; k <= t.ndim; ++k) {
      int64_t s = t.shape[t.ndim - k], o = out.shape[out.ndim - k];
      if (s != o && s != 1) ok = false;
    }
  }
  for (int d = 0; d < out.ndim && ok; ++d) {  // each output size is some input's (not a stretched 1)
    bool found = false;
    for (int i = 0; i < n && !found; ++i) {
      const mf_tensor& t = *ins[i];
      int k = d - (out.ndim - t.ndim);
      found = k >= 0 ? t.shape[k] == out.shape[d] : out.shape[d] == 1;
    }
    ok = found;
  }
  return ok;
}

// Throws unless is_broadcast_of(out, n, ins), naming every shape; names null: input 1..n.
inline void broadcast_out(const char* op, const char* oname, const mf_tensor& out, int n, const mf_tensor* const* ins,
                          const char* const* names) {
  if (is_broadcast_of(out, n, ins)) return;
  std::string got;
  for (int i = 0; i < n; ++i)
    got += std::string(i ? ", " : "") + (names ? std::string(names[i]) : "input " + std::to_string(i + 1)) + " is " +
           shape_str(*ins[i]);
  fail(op, ": ", oname, " is ", shape_str(out), ", ", got, "; expected ", oname,
       " of the inputs' broadcast shape (dims align from the last; each size equal or 1)");
}

}  // namespace kcheck
}  // namespace mf
