// The CUDA backend's native routines and the services they share (compiled by nvcc in .cu files
// and by g++ in the backend's .cc files; never included outside src/kernels/cuda and its tests).
//
// Every kernel table entry (src/core/kernel_table.h) is declared here as mf::cuda::<name> with the
// table's parameters; the backend's table (backend.cc) points at them, so a missing entry fails
// the link.
//
// Contract of an entry (the same as the CPU's): returns MF_OK, or a status with mf_last_error()
// set; nothing is thrown across it. The usual shape is
//
//   int unary(int32_t code, mf_tensor* y, const mf_tensor* x, double a, double b) {
//     return entry("unary", [&] { ...checks that throw mf::Error...; launch<<<..., stream()>>>(...);
//                                 check_launch("unary"); });
//   }
//
// All work goes on the one compute stream, stream(): entries never synchronise the device, except
// copy_to_host (the host reads the bytes when it returns) and the few whose output's size depends on
// device values (nonzero, masked_select) or that sample on the host (multinomial). Bad operand values
// only the device sees (indices, labels, adam's step, integer division by zero) are recorded there and raised at the next host
// read (fault.cuh), so checking them costs no wait. Memory an entry needs for itself comes
// from Scratch (the device's caching allocator; freed blocks are reused by later work on the same
// stream, which runs after the work that used them, so no synchronisation is needed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "../../core/allocator.h"
#include "../../core/error.h"
#include "../../core/kernel_table.h"

namespace mf {
namespace cuda {

// -- the kernel table entries ------------------------------------------------------------------
#define MF_CUDA_DECLARE_(name, params) int name params;
MF_KERNELS(MF_CUDA_DECLARE_)
#undef MF_CUDA_DECLARE_

// The table of the entries above (backend.cc).
const mf_kernel_table& kernel_table();

// -- errors --------------------------------------------------------------------------------------
// A failed CUDA runtime / cuBLAS / cuDNN call, as an mf::Error whose message names the routine and
// the library's own text: "K.matmul: cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED". status is what
// entry() returns for it (MF_ERR_INTERNAL; out of device memory throws OutOfMemory instead).
class CudaError : public Error {
 public:
  explicit CudaError(const std::string& message) : Error(message) {}
};

// Throws CudaError (OutOfMemory for cudaErrorMemoryAllocation) naming routine and call; the text
// comes from cudaGetErrorString. Clears the runtime's sticky last error where it can be cleared.
[[noreturn]] void throw_cuda(const char* routine, const char* call, cudaError_t e);
[[noreturn]] void throw_cublas(const char* routine, const char* call, cublasStatus_t s);
[[noreturn]] void throw_cudnn(const char* routine, const char* call, cudnnStatus_t s);

inline void check(cudaError_t e, const char* routine, const char* call) {
  if (e != cudaSuccess) throw_cuda(routine, call, e);
}
inline void check(cublasStatus_t s, const char* routine, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_cublas(routine, call, s);
}
inline void check(cudnnStatus_t s, const char* routine, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) throw_cudnn(routine, call, s);
}
// After a <<<...>>> launch: a bad configuration shows up here, not in the launch statement.
inline void check_launch(const char* routine) { check(cudaGetLastError(), routine, "kernel launch"); }

// The tensor lives on the CUDA device: host memory handed to a kernel or library call (a caller's
// bug, as the Lua layer checks devices first) is an error naming it, never a device fault.
void on_device(const char* op, const char* name, const mf_tensor& t);

// Stores the exception being handled for mf_last_error() (with "K.<routine>: " in front unless the
// message already starts with the routine's name) and returns its status: MF_ERR_MEMORY for
// OutOfMemory, MF_ERR_INTERNAL for CudaError and non-moonflow exceptions, MF_ERR_ARG for other
// mf::Errors (bad operands). Call only inside a catch block; never throws.
int record_failure(const char* routine) noexcept;

// Runs body() and returns MF_OK, or records what it threw (record_failure) and returns the status:
// the one wrapper every entry's body goes through, so no exception crosses the table.
template <typename F>
int entry(const char* routine, F&& body) noexcept {
  try {
    body();
    return MF_OK;
  } catch (...) {
    return record_failure(routine);
  }
}

// -- device, stream, library handles -------------------------------------------------------------
// The compute stream of the device (created on first use, non-blocking with respect to the legacy
// default stream). All entries, copies and library calls run on it, in order.
cudaStream_t stream();
// Blocks until everything queued on stream() has run; throws CudaError if any of it failed. Every
// host wait goes through it, so sync_count() (mf.cuda.sync_count()) counts them.
void synchronize(const char* routine = "synchronize");
// Raises (as mf::Error) the fault a kernel recorded on the device since the last one was raised, and
// clears it; synchronize() calls it once the stream has drained (fault.cuh, fault.cu).
void raise_fault();
// The cuBLAS and cuDNN handles, created on first use and bound to stream(); throw CudaError when the
// library cannot start. Math mode of cuBLAS: FP32 without TF32 unless set_allow_tf32(true).
cublasHandle_t cublas();
cudnnHandle_t cudnn();
void set_allow_tf32(bool allow);
bool allow_tf32();

// -- memory ----------------------------------------------------------------------------------------
// Temporary device memory from the device's caching allocator, valid for work queued on stream()
// while the Scratch lives (and after: the block returns to the cache, and only work queued later on
// the same stream can receive it). Throws OutOfMemory.
class Scratch {
 public:
  explicit Scratch(size_t nbytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// -- launch geometry ------------------------------------------------------------------------------
constexpr int kThreads = 256;  // threads per block of the elementwise kernels
// Blocks for n elements at kThreads per block with a grid-stride loop: capped, as each thread loops.
inline unsigned grid_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  const int64_t cap = 65535LL * 8;
  return static_cast<unsigned>(b < 1 ? 1 : b > cap ? cap : b);
}

}  // namespace cuda
}  // namespace mf
