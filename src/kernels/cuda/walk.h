// Strided, broadcasting element walks for the elementwise CUDA kernels, several operands at once
// (layout.cuh is the one-operand form): a Walk holds the output's sizes and, per operand, its
// element strides aligned to the output's dims (0 along a broadcast dim), with adjacent dims merged
// where every operand steps through them as one. A kernel maps a flat output
// index to each operand's element offset (offsets()); a dense walk collapses to one dim, so its
// offsets are the index itself after one division. Compiled by nvcc only.
#pragma once
#include <cstdint>

#include "../../core/types.h"

namespace mf {
namespace cuda {

template <int N>
struct Walk {
  int ndim = 0;
  int64_t size[MF_MAX_DIMS];
  int64_t st[N][MF_MAX_DIMS];
};

// The walk of out and ops[0..N-2] (each broadcast to out's shape, dims aligned at the end). keep_dims:
// one walk dim per output dim, unmerged (for kernels that need an output coordinate, such as the
// position along an indexed dim).
template <int N>
Walk<N> make_walk(const mf_tensor& out, const mf_tensor* const* ops, bool keep_dims = false) {
  Walk<N> L;
  int nd = 0;
  for (int d = 0; d < out.ndim; ++d) {
    if (out.shape[d] == 1 && !keep_dims) continue;  // size-1 dims add nothing to any offset
    L.size[nd] = out.shape[d];
    L.st[0][nd] = out.strides[d];
    for (int k = 1; k < N; ++k) {
      const mf_tensor& t = *ops[k - 1];
      int td = d - (out.ndim - t.ndim);
      L.st[k][nd] = td >= 0 && t.shape[td] != 1 ? t.strides[td] : 0;
    }
    ++nd;
  }
  if (keep_dims) {
    L.ndim = nd;
    return L;
  }
  // merge dim d into d - 1 where every operand's step over d - 1 equals a whole run of d
  int m = 0;
  for (int d = 0; d < nd; ++d) {
    bool merge = m > 0;
    for (int k = 0; k < N && merge; ++k) merge = L.st[k][m - 1] == L.st[k][d] * L.size[d];
    if (merge) {
      L.size[m - 1] *= L.size[d];
      for (int k = 0; k < N; ++k) L.st[k][m - 1] = L.st[k][d];
    } else {
      L.size[m] = L.size[d];
      for (int k = 0; k < N; ++k) L.st[k][m] = L.st[k][d];
      ++m;
    }
  }
  L.ndim = m;
  return L;
}

#ifdef __CUDACC__
// off[k]: operand k's element offset for flat output index i (row-major over L.size).
template <int N>
__device__ __forceinline__ void offsets(const Walk<N>& L, int64_t i, int64_t* off) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = L.ndim - 1; d >= 0; --d) {
    int64_t s = L.size[d], c = i % s;
    i /= s;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += c * L.st[k][d];
  }
}

// for (i = this thread's first; i < n; i += the grid's threads)
#define MF_CUDA_GRID_LOOP(i, n)                                                                         \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
#endif

}  // namespace cuda
}  // namespace mf
