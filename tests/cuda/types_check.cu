// Compiled by nvcc when the build finds it (CMakeLists.txt, target mf_cuda_types): proves that the
// core types header compiles as CUDA, in host and device code, for the CUDA backend to build on.
// The build fails if it does not; nothing here runs.
#include <cstddef>

#include "core/types.h"

static_assert(offsetof(mf_tensor, ptr) == 0, "mf_tensor starts with its data pointer");
static_assert(sizeof(((mf_tensor*)nullptr)->shape) == MF_MAX_DIMS * sizeof(int64_t), "shape holds MF_MAX_DIMS sizes");

// Device code reads the struct as the kernels will: the size of the last dim of t.
__global__ void mf_cuda_types_last_dim(const mf_tensor* t, int64_t* out) {
  *out = t->ndim > 0 && t->dtype_id < MF_DTYPE_COUNT && t->device_id == MF_CUDA ? t->shape[t->ndim - 1] : 0;
}
