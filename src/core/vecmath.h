// Vector math for the CPU pointwise loops: block routines over dense float32/float64 runs,
// computed by a maintained vector library chosen at configure time (CMake MF_VECMATH):
//   sleef  SLEEF's 1-ulp (u10) functions (erfc: u15, sqrt: the exact instruction),
//   mvec   glibc's libmvec (the vector variants GCC calls under #pragma omp simd),
//   none   the scalar functors of pointwise.h, one element at a time.
// pointwise.h's functors stay the definition of each op (the CUDA loops use them); a functor with
// a vector routine names it in `static void run(const A* x, A* y, int64_t n)`, which the CPU loops
// call instead of f for float and double.
//
// An element's result never depends on where it falls in a run: the last partial vector is padded
// and computed by the same vector function, so results are the same for any thread count, block
// size, view or fused program.
#pragma once
#include <cstdint>

namespace mf {
namespace vm {

#define MF_VM_UNARY(name)                              \
  void name(const float* x, float* y, int64_t n);     \
  void name(const double* x, double* y, int64_t n);
MF_VM_UNARY(exp)
MF_VM_UNARY(log)
MF_VM_UNARY(log1p)
MF_VM_UNARY(tanh)
MF_VM_UNARY(sigmoid)
MF_VM_UNARY(erf)
MF_VM_UNARY(gelu)
MF_VM_UNARY(sin)
MF_VM_UNARY(cos)
#undef MF_VM_UNARY
// z[i] = x[i] ^ y[i]
void pow(const float* x, const float* y, float* z, int64_t n);
void pow(const double* x, const double* y, double* z, int64_t n);
// z[i] = y[i] <= 0 ? 0 : x[i] (relu_backward): plain vector code in every build, see vecmath.cc
void relu_backward(const float* x, const float* y, float* z, int64_t n);
void relu_backward(const double* x, const double* y, double* z, int64_t n);

// Which library and vector width this build uses, e.g. "sleef avx2 (8 x float32)": for help and
// the benchmark's header.
const char* backend();

}  // namespace vm
}  // namespace mf

// vm::backend() for C callers: the vector-math test reads it through LuaJIT's FFI to know which
// library's error bounds apply (not part of the public ABI in src/lua/abi.h).
extern "C" const char* mf_vecmath_backend(void);
