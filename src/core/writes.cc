// The checks every write into existing storage makes (copy, fill, in-place ops, row assignment).
// They work on the raw metadata without allocating, so the dense paths stay as fast as before.
#include "writes.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dtype.h"
#include "error.h"
#include "tensor.h"

namespace mf {

namespace {

std::string strides_str(const mf_tensor& t) {
  std::string s;
  for (int d = 0; d < t.ndim; ++d) s += (d ? "," : "") + std::to_string(t.strides[d]);
  return "(" + s + ")";
}

std::string number_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (v == std::trunc(v) && std::fabs(v) < 1e20) snprintf(buf, sizeof buf, "%.0f", v);
  else snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Largest element offset |stride| * (size - 1) summed over dims, or -1 on int64 overflow.
int64_t abs_extent(const mf_tensor& t) {
  int64_t ext = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] <= 1) continue;
    int64_t st = t.strides[d] < 0 ? -t.strides[d] : t.strides[d], span;
    if (t.strides[d] == INT64_MIN || __builtin_mul_overflow(st, t.shape[d] - 1, &span) ||
        __builtin_add_overflow(ext, span, &ext))
      return -1;
  }
  return ext;
}

}  // namespace

// check_meta's messages, out of its hot path: runs the checks again and throws at the first that
// fails (the caller found one).
[[gnu::cold, gnu::noinline]] static void meta_failure(const mf_tensor& t, const char* what, const char* name) {
  if (t.ndim < 0 || t.ndim > kMaxDims) fail(what, ": ", name, " has ", t.ndim, " dims; expected 0..", kMaxDims);
  if (!dtype_valid(t.dtype_id)) fail(what, ": ", name, " has invalid dtype code ", t.dtype_id);
  int64_t n = 1;
  bool empty = false;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) fail(what, ": ", name, " has negative size ", t.shape[d], " at dim ", d + 1);
    empty = empty || t.shape[d] == 0;
  }
  for (int d = 0; d < t.ndim && !empty; ++d)
    if (__builtin_mul_overflow(n, t.shape[d], &n)) fail(what, ": ", name, " of size ", shape_str(t), " has too many elements");
  if (empty) n = 0;
  if (t.count != n)
    fail(what, ": ", name, " claims ", t.count, " elements but its size ", shape_str(t), " holds ", n);
  if (n == 0) return;
  if (!t.ptr) fail(what, ": ", name, " of size ", shape_str(t), " has no data");
  int64_t ext = abs_extent(t), bytes;
  if (ext < 0 || __builtin_mul_overflow(ext + 1, int64_t(dtype_size(t.dtype_id)), &bytes))
    fail(what, ": ", name, " of size ", shape_str(t), " has strides ", strides_str(t), " that overflow");
  fail(what, ": ", name, " has inconsistent metadata");  // (not reached: the caller saw a check fail)
}

// The same checks without building a message: every kernel call makes them for each operand, and
// with the messages' frame in the same function a scalar graph node paid 26 instructions each.
void check_meta(const mf_tensor& t, const char* what, const char* name) {
  if (t.ndim < 0 || t.ndim > kMaxDims || !dtype_valid(t.dtype_id)) return meta_failure(t, what, name);
  int64_t n = 1;
  bool empty = false, bad = false;
  for (int d = 0; d < t.ndim; ++d) {
    bad = bad || t.shape[d] < 0;
    empty = empty || t.shape[d] == 0;
  }
  for (int d = 0; d < t.ndim && !empty && !bad; ++d) bad = __builtin_mul_overflow(n, t.shape[d], &n);
  if (empty) n = 0;
  if (bad || t.count != n) return meta_failure(t, what, name);
  if (n == 0) return;
  int64_t ext = t.ptr ? abs_extent(t) : -1, bytes;
  if (ext < 0 || __builtin_mul_overflow(ext + 1, int64_t(dtype_size(t.dtype_id)), &bytes))
    return meta_failure(t, what, name);
}

void check_broadcast(const mf_tensor& src, const mf_tensor& dst, const char* what) {
  if (src.ndim > dst.ndim)
    fail(what, ": source ", shape_str(src), " does not broadcast to destination ", shape_str(dst), " (the source has ",
         src.ndim, " dims, the destination ", dst.ndim, "; a source may have fewer dims, never more)");
  for (int i = 1; i <= src.ndim; ++i) {
    int64_t s = src.shape[src.ndim - i], d = dst.shape[dst.ndim - i];
    if (s != d && s != 1)
      fail(what, ": source ", shape_str(src), " does not broadcast to destination ", shape_str(dst), " (at dim ",
           dst.ndim - i + 1, " of the destination the source has size ", s,
           "; dims align from the last and each source size must equal the destination's or be 1)");
  }
}

int internal_overlap(const mf_tensor& t) {
  if (t.count <= 1) return -1;
  struct Dim {
    int64_t st, n;
  } dims[kMaxDims];
  int k = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] <= 1) continue;
    if (t.strides[d] == 0) return d;
    dims[k++] = {t.strides[d] < 0 ? -t.strides[d] : t.strides[d], t.shape[d]};
  }
  for (int i = 1; i < k; ++i)  // insertion sort by |stride|: at most 8 dims
    for (int j = i; j > 0 && dims[j].st < dims[j - 1].st; --j) std::swap(dims[j], dims[j - 1]);
  // Sufficient: each stride steps past everything the smaller dims reach (every dense or
  // transposed, narrowed, selected, stepped or permuted view passes here).
  int64_t ext = 0;
  bool proven = true;
  for (int i = 0; i < k && proven; ++i) {
    if (dims[i].st <= ext) proven = false;
    else ext += dims[i].st * (dims[i].n - 1);
  }
  if (proven) return -1;
  // Exact for the rest (as_strided views such as sizes 3,2 strides 2,3): mark every offset.
  int64_t span = abs_extent(t) + 1;
  if (span <= 0 || span > (int64_t(1) << 34)) return -2;  // cannot prove it distinct: refuse
  std::vector<uint64_t> seen(size_t(span / 64 + 1), 0);
  int64_t idx[kMaxDims] = {0};
  int64_t off = 0;
  for (int64_t e = 0; e < t.count; ++e) {
    uint64_t bit = uint64_t(1) << (off & 63);
    if (seen[size_t(off >> 6)] & bit) return -2;
    seen[size_t(off >> 6)] |= bit;
    for (int i = 0; i < k; ++i) {  // odometer over the non-trivial dims
      if (++idx[i] < dims[i].n) { off += dims[i].st; break; }
      off -= dims[i].st * (dims[i].n - 1);
      idx[i] = 0;
    }
  }
  return -1;
}

void check_writable(const mf_tensor& t, const char* what, const char* name) {
  int d = internal_overlap(t);
  if (d >= 0)
    fail(what, ": ", name, " is an expanded view (stride 0 along dim ", d + 1, " of size ", t.shape[d],
         "); it cannot be written in place: its elements share memory (clone() it first)");
  if (d == -2)
    fail(what, ": ", name, " of size ", shape_str(t), " with strides ", strides_str(t),
         " has overlapping elements; it cannot be written in place (clone() it first)");
}

// The bytes [lo, hi) a non-empty tensor with checked metadata addresses.
static void byte_range(const mf_tensor& t, uintptr_t& lo, uintptr_t& hi) {
  int64_t es = dtype_size(t.dtype_id), neg = 0, pos = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] <= 1) continue;
    int64_t span = t.strides[d] * (t.shape[d] - 1);
    (span < 0 ? neg : pos) += span;
  }
  lo = uintptr_t(t.ptr) + uintptr_t(neg * es);
  hi = uintptr_t(t.ptr) + uintptr_t((pos + 1) * es);
}

void check_in_storage(const mf_tensor& t, const char* what, const char* name) {
  check_meta(t, what, name);
  if (!t.store || t.count == 0) return;
  uintptr_t lo, hi, base = uintptr_t(t.store->ptr);
  byte_range(t, lo, hi);
  if (lo < base || hi > base + uintptr_t(t.store->nbytes))
    fail(what, ": ", name, " of size ", shape_str(t), " with strides ", strides_str(t),
         " reaches outside its storage of ", t.store->nbytes, " bytes");
}

bool memory_overlaps(const mf_tensor& a, const mf_tensor& b) {
  if (a.count == 0 || b.count == 0) return false;
  auto range = byte_range;
  uintptr_t alo, ahi, blo, bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

void check_value_fits(double v, int dtype, const char* what) {
  const char* range;
  double lo, hi;  // [lo, hi)
  switch (dtype) {
    case MF_UINT8: lo = 0, hi = 256, range = "0..255"; break;
    case MF_INT32: lo = -2147483648.0, hi = 2147483648.0, range = "-2147483648..2147483647"; break;
    case MF_INT64: lo = -9223372036854775808.0, hi = 9223372036854775808.0, range = "-2^63..2^63-1"; break;
    default: return;  // float dtypes hold every number (out-of-range magnitudes round to inf)
  }
  double tv = std::trunc(v);
  if (!(tv >= lo && tv < hi))
    fail(what, ": value ", number_str(v), " does not fit ", dtype_name(dtype), " (", range,
         std::isnan(v) ? "; NaN has no integer value" : "", ")");
}

bool reads_own_position(const mf_tensor& dst, const mf_tensor& src) {
  if (dst.ptr != src.ptr || dtype_size(dst.dtype_id) != dtype_size(src.dtype_id)) return false;
  int lead = dst.ndim - src.ndim;
  for (int d = 0; d < dst.ndim; ++d) {
    if (dst.shape[d] <= 1) continue;
    int64_t ss = d < lead || src.shape[d - lead] == 1 ? 0 : src.strides[d - lead];
    if (ss != dst.strides[d]) return false;
  }
  return true;
}

}  // namespace mf
