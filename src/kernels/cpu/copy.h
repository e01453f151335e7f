// The same-dtype copy behind copy_cpu (copy.cc), for routines that have already checked their
// operands: src broadcast to dst's shape, one dtype, dst without overlapping elements and not
// sharing memory with src (copy_cpu stages an overlapping source first).
#pragma once
#include "../../core/tensor.h"

namespace mf {

void copy_same_dtype(mf_tensor& dst, const mf_tensor& src);

}  // namespace mf
