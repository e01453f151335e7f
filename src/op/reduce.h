// The rules the reductions share (src/op/reduce.cc), for other families whose ops reduce over a
// "dim" int list with "keepdim" (src/op/stats.cc, max / min in src/op/sort.cc) or take a dims list
// (flip in src/op/shape_ext.cc).
#pragma once
#include "registry.h"

namespace mf {

// A list of 1-based dims (negative from the end) of a tensor of ndim dims as a bit mask of 0-based
// dims; a dim out of range or listed twice is an error naming op (flip's dims use it too).
uint32_t dims_mask(const char* op, const std::vector<int64_t>& dims, int ndim);
// Bit i set: dim i (0-based) of input 1 is reduced, from the "dim" param (1-based, negative from the
// end); an empty list reduces every dim. A dim out of range or listed twice is an error.
uint32_t reduce_mask(InferCtx& c);
// Output 1: input 1 without the reduced dims (size 1 with "keepdim"). allow_empty: reducing a size-0
// dim gives the op's identity; else it is an error naming the dim.
void reduce_out_shape(InferCtx& c, bool allow_empty);
// The kernel string of a reduction over p.dim: K.reduce(K.R.<code>, y, x, mask), or with number
// (the Lua expression of its number, e.g. "p.p") K.reduce_p(K.R.<code>, y, x, mask, number).
std::string reduce_kernel(const char* code, const char* number = nullptr);

}  // namespace mf
