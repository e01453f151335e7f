// Strided operands on the device: a Layout (shape and element strides, by value in a kernel's
// parameters) and the offset of element i of a row-major walk over it. Host helpers build one from
// a tensor, or from a tensor broadcast to another's shape. For the kernels of cuda2 (.cu files).
#pragma once
#include "../../core/shape.h"
#include "../../core/tensor.h"
#include "kernels.h"

namespace mf {
namespace cuda {

struct Layout {
  int ndim;
  long long shape[MF_MAX_DIMS];
  long long stride[MF_MAX_DIMS];
};

// t's own shape and strides.
inline Layout layout_of(const mf_tensor& t) {
  Layout l{};
  l.ndim = t.ndim;
  for (int d = 0; d < t.ndim; ++d) {
    l.shape[d] = t.shape[d];
    l.stride[d] = t.strides[d];
  }
  return l;
}

// t read at the shape of like (NumPy broadcast: size-1 and missing dims step 0); throws when t does
// not broadcast to it.
inline Layout broadcast_layout(const mf_tensor& t, const mf_tensor& like) {
  Shape s = shape_of(like);
  Shape bs = broadcast_strides(t, s);
  Layout l{};
  l.ndim = like.ndim;
  for (int d = 0; d < like.ndim; ++d) {
    l.shape[d] = like.shape[d];
    l.stride[d] = bs[size_t(d)];
  }
  return l;
}

// The element offset of the i-th element (row-major over l.shape).
__device__ __forceinline__ long long offset_of(const Layout& l, long long i) {
  long long off = 0;
  for (int d = l.ndim - 1; d >= 0; --d) {
    long long q = i / l.shape[d];
    off += (i - q * l.shape[d]) * l.stride[d];
    i = q;
  }
  return off;
}

// Grid-stride loop bounds as 64-bit numbers.
__device__ __forceinline__ long long global_index() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long global_step() { return (long long)gridDim.x * blockDim.x; }

}  // namespace cuda
}  // namespace mf
