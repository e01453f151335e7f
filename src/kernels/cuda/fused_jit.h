// Fused kernels from strings: NVRTC compiles the generated source (fused_codegen.h) to PTX, cached by
// (architecture, text); on a GPU the driver loads the PTX and the fused entry launches it. NVRTC
// needs no GPU, so compiling and the cache are tested on any machine with the toolkit
// (tests/cpp/test_cuda_codegen.cc). The driver (libcuda) is opened with dlopen at the first load,
// never linked: a build machine has only a stub of it.
#pragma once
#include <string>

#include "../../core/pointwise.h"

namespace mf {
namespace cuda {

// One compiled source: its text, the PTX and NVRTC's log. Lives as long as the process (the cache
// owns it), so callers may keep the pointer; function() loads the PTX into the current context at
// first call (thread-safe) and throws mf::Error naming the driver's error when that fails.
class FusedModule {
 public:
  FusedModule(std::string source, std::string ptx, std::string log, int arch)
      : source_(std::move(source)), ptx_(std::move(ptx)), log_(std::move(log)), arch_(arch) {}
  const std::string& source() const { return source_; }
  const std::string& ptx() const { return ptx_; }
  const std::string& log() const { return log_; }
  int arch() const { return arch_; }
  void* function() const;  // the CUfunction of kFusedKernelName

 private:
  std::string source_, ptx_, log_;
  int arch_;
  mutable void* module_ = nullptr;
  mutable void* function_ = nullptr;
};

// The module of source for compute capability arch (90: compute_90), compiling it with NVRTC on the
// first request; the same (arch, text) always returns the same module. Thread-safe. Throws mf::Error
// with NVRTC's log when the source does not compile.
const FusedModule& fused_module(const std::string& source, int arch);
// How many distinct sources the cache holds (for tests).
size_t fused_cache_size();
// The compute capability of the current device as major * 10 + minor (throws without a GPU).
int device_arch();
// Bind time: generates p's kernel for dtype (MF_FLOAT32 or MF_FLOAT64), compiles it (or finds it in
// the cache) and loads it, so the first run launches at once. Throws mf::Error naming what failed.
void fused_prepare(const mf_fused* p, int dtype);

}  // namespace cuda
}  // namespace mf
