// Shape arithmetic on mf_tensor metadata: formatting, element counts, strides, broadcasting.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace mf {

constexpr int kMaxDims = MF_MAX_DIMS;
using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);          // "2x3", "scalar" for 0-dim
std::string shape_str(const mf_tensor& t);
Shape shape_of(const mf_tensor& t);
// Product of sizes; throws (naming what) on negative sizes, more than 8 dims or overflow.
int64_t checked_numel(const Shape& s, const char* what);
int64_t checked_numel(int ndim, const int64_t* s, const char* what);
Shape contiguous_strides(const Shape& s);
bool is_contiguous(const mf_tensor& t);
// Sets shape, contiguous strides, numel and the contiguous flag of t's metadata.
void set_meta(mf_tensor& t, const Shape& s, int dtype, int device);
void set_meta(mf_tensor& t, int ndim, const int64_t* s, int dtype, int device);
void set_strided(mf_tensor& t, const Shape& s, const Shape& stride, int64_t offset);
// NumPy broadcasting of two shapes; throws "<op>: a is AxB, b is CxD; ..." when they do not broadcast.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b, const char* an = "a", const char* bn = "b");
// Strides of t as seen from the (broadcast) shape out: 0 along broadcast dims.
Shape broadcast_strides(const mf_tensor& t, const Shape& out);
// Normalises a 1-based (negative counts from the end) dim to 0-based; throws naming op.
int normalize_dim(const char* op, int64_t dim, int ndim, bool allow_end = false);

// Build-time shape inference (graph mode) runs shape rules with sizes not known yet standing in as
// one sentinel value. While an UnknownDims scope is active on this thread, is_unknown(d) tells the
// sentinel apart, broadcasting and dims_match treat it as matching any size, shape_str prints it as
// '?' and checked_numel counts it as 1. Rules check every size they know and give an output size
// that depends on an unknown one as unknown_dim().
class UnknownDims {
 public:
  explicit UnknownDims(int64_t sentinel);
  ~UnknownDims();
  UnknownDims(const UnknownDims&) = delete;
  UnknownDims& operator=(const UnknownDims&) = delete;

 private:
  int64_t prev_;
};
bool is_unknown(int64_t d);
int64_t unknown_dim();                        // the active sentinel (0 outside a scope)
bool has_unknown(const mf_tensor& t);         // any size of t is unknown
bool dims_match(int64_t a, int64_t b);        // equal, or either unknown
bool shapes_match(const Shape& a, const Shape& b);  // same rank, dims_match throughout

}  // namespace mf
