// Fused elementwise programs as CUDA C++ source (issue 16, item 4): on a CUDA device each fused group
// of a graph becomes a kernel born from a string, compiled by NVRTC at bind time (fused_jit.h).
// Pure C++: this file and fused_codegen.cc need neither nvcc nor a GPU, so the CPU tests cover them.
#pragma once
#include <cstdint>
#include <string>

#include "../../core/pointwise.h"

// The one parameter of every generated kernel, by value. The macro is the single definition: host
// code expands it to fill the block, and the generator pastes its text into the source, so the two
// layouts cannot drift. mode[k] of input k: 0 dense (element i), 1 one value, 2 strided (the output
// index unravelled over shape, dotted with stride[k]; broadcast dims have stride 0). 2.5 KB: under
// the 4 KB a kernel parameter may take on every architecture.
#define MF_FUSED_ARGS_DECL                                                                           \
  struct MfFusedArgs {                                                                               \
    long long n;                                                                                     \
    int ndim;                                                                                        \
    int nin;                                                                                         \
    long long shape[8];                                                                              \
    const void* in[32];                                                                              \
    long long stride[32][8];                                                                         \
    int mode[32];                                                                                    \
    void* out;                                                                                       \
  };

MF_FUSED_ARGS_DECL

namespace mf {
namespace cuda {

static_assert(kFusedMaxInputs == 32, "MF_FUSED_ARGS_DECL holds kFusedMaxInputs inputs");
static_assert(MF_MAX_DIMS == 8, "MF_FUSED_ARGS_DECL holds MF_MAX_DIMS dims");

// The entry point every generated source defines (extern "C", so its name is not mangled).
constexpr const char* kFusedKernelName = "mf_fused";

// The CUDA C++ source of fp's kernel over elements of dtype (MF_FLOAT32 or MF_FLOAT64): one
// templated device function per distinct op (its functor's CudaSrc text), then the kernel, a
// grid-stride loop that loads each input once per element, runs the steps in registers and stores
// the last one. Deterministic: the same program and dtype give the same text (the cache key).
// Throws mf::Error naming the op when a step's functor has no CUDA source, or for another dtype.
std::string fused_source(const FusedProgram& fp, int dtype);

}  // namespace cuda
}  // namespace mf
