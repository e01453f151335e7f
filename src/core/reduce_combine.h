// Reduction combiners shared by the CPU and CUDA reductions (g++ and nvcc, host and device): the
// rule that picks an extreme and its position when partial results meet in any order. The CPU's
// sequential scans (src/kernels/cpu/reduce.cc) give the same answers; the CUDA kernels
// (src/kernels/cuda/reduce.cu) combine per-thread partials with it, and tests/cpp/test_core.cc
// checks it against those scans.
#pragma once
#include <type_traits>

#if defined(__CUDACC__)
#define MF_COMBINE_HD __host__ __device__ __forceinline__
#else
#define MF_COMBINE_HD inline
#endif

namespace mf {

// An extreme seen so far: its value and its 0-based position; j < 0: none yet.
template <class T>
struct ArgBest {
  T v;
  long long j;
};

// The winner of two partials: the first NaN if either holds one (NaN wins, as in PyTorch), else the
// larger (want_max) or smaller value, and of equal values the earlier position. Associative and
// commutative, so any grouping of a line gives the sequential scan's answer.
template <class T>
MF_COMBINE_HD ArgBest<T> arg_combine(ArgBest<T> a, ArgBest<T> b, bool want_max) {
  if (a.j < 0) return b;
  if (b.j < 0) return a;
  bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) {
    if (an && bn) return a.j < b.j ? a : b;
    return an ? a : b;
  }
  if (a.v == b.v) return a.j < b.j ? a : b;
  return (want_max ? a.v > b.v : a.v < b.v) ? a : b;
}

template <class T>
MF_COMBINE_HD constexpr bool is_float_type() {
  return std::is_floating_point<T>::value;
}

}  // namespace mf
