// Shape arithmetic shared by shape inference and kernels.
#include "shape.h"

#include <limits>

#include "error.h"

namespace mf {

namespace {
thread_local int64_t t_unknown = 0;  // the sentinel of the active UnknownDims scope
}

UnknownDims::UnknownDims(int64_t sentinel) : prev_(t_unknown) { t_unknown = sentinel; }
UnknownDims::~UnknownDims() { t_unknown = prev_; }
bool is_unknown(int64_t d) { return t_unknown != 0 && d == t_unknown; }
int64_t unknown_dim() { return t_unknown; }
bool has_unknown(const mf_tensor& t) {
  for (int i = 0; i < t.ndim; ++i)
    if (is_unknown(t.shape[i])) return true;
  return false;
}
bool dims_match(int64_t a, int64_t b) { return a == b || is_unknown(a) || is_unknown(b); }
bool shapes_match(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!dims_match(a[i], b[i])) return false;
  return true;
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += "x";
    out += is_unknown(s[i]) ? std::string("?") : std::to_string(s[i]);
  }
  return out;
}

Shape shape_of(const mf_tensor& t) { return Shape(t.shape, t.shape + t.ndim); }
std::string shape_str(const mf_tensor& t) { return shape_str(shape_of(t)); }

int64_t checked_numel(int ndim, const int64_t* s, const char* what) {
  if (ndim < 0) fail(what, ": ", ndim, " dims requested");
  if (ndim > kMaxDims) fail(what, ": ", ndim, " dims requested; at most ", kMaxDims, " are supported");
  int64_t n = 1;
  bool empty = false;
  for (int i = 0; i < ndim; ++i) {
    if (s[i] < 0) fail(what, ": size ", s[i], " at dim ", i + 1, " is negative");
    empty = empty || s[i] == 0;
  }
  if (empty) return 0;
  for (int i = 0; i < ndim; ++i) {
    if (is_unknown(s[i])) continue;  // build-time inference: an unknown size counts as 1
    if (n > std::numeric_limits<int64_t>::max() / s[i])
      fail(what, ": shape ", shape_str(Shape(s, s + ndim)), " has too many elements");
    n *= s[i];
  }
  return n;
}

int64_t checked_numel(const Shape& s, const char* what) {
  if (s.size() > size_t(kMaxDims)) fail(what, ": ", s.size(), " dims requested; at most ", kMaxDims, " are supported");
  return checked_numel(int(s.size()), s.data(), what);
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

bool is_contiguous(const mf_tensor& t) {
  if (t.count == 0) return true;
  int64_t acc = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != acc) return false;
    acc *= t.shape[i];
  }
  return true;
}

// Pointer form: no vectors, so creating a tensor allocates nothing but its storage.
void set_meta(mf_tensor& t, int ndim, const int64_t* s, int dtype, int device) {
  t.count = checked_numel(ndim, s, "tensor");
  t.ndim = ndim;
  t.dtype_id = dtype;
  t.device_id = device;
  for (int i = kMaxDims - 1; i >= 0; --i) t.shape[i] = t.strides[i] = 0;
  int64_t acc = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    t.shape[i] = s[i];
    t.strides[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  t.offset = 0;
  t.is_contig = 1;
}

void set_meta(mf_tensor& t, const Shape& s, int dtype, int device) {
  if (s.size() > size_t(kMaxDims)) checked_numel(s, "tensor");  // throws the dims error
  set_meta(t, int(s.size()), s.data(), dtype, device);
}

void set_strided(mf_tensor& t, const Shape& s, const Shape& stride, int64_t offset) {
  t.ndim = int32_t(s.size());
  t.count = checked_numel(s, "tensor");
  for (int i = 0; i < kMaxDims; ++i) {
    t.shape[i] = i < t.ndim ? s[i] : 0;
    t.strides[i] = i < t.ndim ? stride[i] : 0;
  }
  t.offset = offset;
  t.is_contig = is_contiguous(t) ? 1 : 0;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b, const char* an, const char* bn) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (is_unknown(da) || is_unknown(db)) {  // build time: an unknown size is 1 or the other size
      int64_t other = is_unknown(da) ? db : da;
      out[i] = other == 1 ? unknown_dim() : other;
      continue;
    }
    if (da != db && da != 1 && db != 1)
      fail(op, ": ", an, " is ", shape_str(a), ", ", bn, " is ", shape_str(b), "; sizes ", da, " and ", db,
           " at dim ", i + 1, " of the broadcast shape differ and neither is 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const mf_tensor& t, const Shape& out) {
  Shape st(out.size(), 0);
  size_t lead = out.size() - size_t(t.ndim);
  for (int i = 0; i < t.ndim; ++i) st[lead + i] = t.shape[i] == 1 ? 0 : t.strides[i];
  return st;
}

int normalize_dim(const char* op, int64_t dim, int ndim, bool allow_end) {
  int hi = allow_end ? ndim + 1 : ndim;
  int64_t d = dim < 0 ? dim + hi + 1 : dim;
  if (d < 1 || d > hi) {
    if (hi == 0) fail(op, ": dim ", dim, " out of range for a 0-dim tensor");
    fail(op, ": dim ", dim, " out of range; expected 1..", hi, " (or -", hi, "..-1) for a ", ndim, "-dim tensor");
  }
  return int(d - 1);
}

}  // namespace mf
