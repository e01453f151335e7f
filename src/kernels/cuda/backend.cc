// The CUDA backend's services (kernels.h) and its registration: the compute stream, the cuBLAS and
// cuDNN handles, error reporting, the caching allocator over cudaMalloc, and device "cuda" added to
// the device registry when the library loads and the runtime finds a GPU. Only the runtime API is
// used (libcudart), never the driver library directly, so the build and a GPU-less run need no
// driver.
#include <atomic>
#include <mutex>

#include "../../core/arena.h"
#include "../../core/device.h"
#include "backend.h"
#include "kernels.h"

namespace mf {
namespace cuda {

// -- errors ----------------------------------------------------------------------------------------

namespace {

[[noreturn]] void throw_text(const char* routine, const char* call, const std::string& text, bool oom) {
  std::string msg = std::string(routine) + ": " + call + ": " + text;
  if (oom) throw OutOfMemory("out of memory on cuda: " + msg, SIZE_MAX, msg);
  throw CudaError(msg);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

void throw_cuda(const char* routine, const char* call, cudaError_t e) {
  // A sticky error (an illegal address in a kernel) stays; others are cleared so later calls work.
  (void)cudaGetLastError();
  throw_text(routine, call, std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")",
             e == cudaErrorMemoryAllocation);
}

void throw_cublas(const char* routine, const char* call, cublasStatus_t s) {
  throw_text(routine, call, cublasGetStatusString(s), s == CUBLAS_STATUS_ALLOC_FAILED);
}

void throw_cudnn(const char* routine, const char* call, cudnnStatus_t s) {
  throw_text(routine, call, cudnnGetErrorString(s), s == CUDNN_STATUS_ALLOC_FAILED);
}

int record_failure(const char* routine) noexcept {
  int status = MF_ERR_INTERNAL;
  try {
    std::string msg;
    try {
      throw;
    } catch (const OutOfMemory& e) {
      status = MF_ERR_MEMORY;
      msg = e.what();
    } catch (const CudaError& e) {
      status = MF_ERR_INTERNAL;
      msg = e.what();
    } catch (const Error& e) {
      status = MF_ERR_ARG;
      msg = e.what();
    } catch (const std::bad_alloc&) {
      status = MF_ERR_MEMORY;
      msg = "out of host memory";
    } catch (const std::exception& e) {
      msg = std::string("internal error: ") + e.what();
    } catch (...) {
      msg = "internal error: unknown exception";
    }
    if (!starts_with(msg, routine) && !starts_with(msg, "K.")) msg = std::string("K.") + routine + ": " + msg;
    set_last_error(msg);
  } catch (...) {
    status = MF_ERR_MEMORY;
  }
  return status;
}

// -- stream and library handles --------------------------------------------------------------------

namespace {

std::once_flag g_stream_once, g_cublas_once, g_cudnn_once;
cudaStream_t g_stream = nullptr;
cublasHandle_t g_cublas = nullptr;
cudnnHandle_t g_cudnn = nullptr;
std::mutex g_cublas_mu;  // the math mode is set under it
std::atomic<bool> g_tf32{false};

}  // namespace

// Created once and never destroyed: storages freed during static teardown may still queue work, and
// the runtime may be gone by then.
cudaStream_t stream() {
  std::call_once(g_stream_once, [] { check(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking), "stream",
                                           "cudaStreamCreateWithFlags"); });
  if (!g_stream) fail("K.stream: the compute stream could not be created earlier");
  return g_stream;
}

static std::atomic<int64_t> g_syncs{0};

void synchronize(const char* routine) {
  g_syncs.fetch_add(1, std::memory_order_relaxed);
  check(cudaStreamSynchronize(stream()), routine, "cudaStreamSynchronize");
  raise_fault();
}

int64_t sync_count() { return g_syncs.load(std::memory_order_relaxed); }

cublasHandle_t cublas() {
  std::call_once(g_cublas_once, [] {
    cublasHandle_t h = nullptr;
    check(cublasCreate(&h), "cublas", "cublasCreate");
    check(cublasSetStream(h, stream()), "cublas", "cublasSetStream");
    check(cublasSetMathMode(h, g_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "cublas",
          "cublasSetMathMode");
    g_cublas = h;
  });
  if (!g_cublas) fail("K.cublas: cuBLAS could not be started earlier");
  return g_cublas;
}

cudnnHandle_t cudnn() {
  std::call_once(g_cudnn_once, [] {
    cudnnHandle_t h = nullptr;
    check(cudnnCreate(&h), "cudnn", "cudnnCreate");
    check(cudnnSetStream(h, stream()), "cudnn", "cudnnSetStream");
    g_cudnn = h;
  });
  if (!g_cudnn) fail("K.cudnn: cuDNN could not be started earlier");
  return g_cudnn;
}

void set_allow_tf32(bool allow) {
  std::lock_guard<std::mutex> lock(g_cublas_mu);
  g_tf32 = allow;
  if (g_cublas)
    check(cublasSetMathMode(g_cublas, allow ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "set_allow_tf32",
          "cublasSetMathMode");
}

bool allow_tf32() { return g_tf32; }

// -- the caching allocator -------------------------------------------------------------------------

namespace {

// Regions from cudaMalloc. cudaFree waits for the device to finish, which is why the arena calls it
// only from empty_cache (or to make room when cudaMalloc refuses). A wholly free region may still
// be read or written by work queued on the compute stream before its blocks were freed on the host;
// the compute stream is non-blocking, and cudaFree's wait is implicit, so free waits for that
// stream first, explicitly (never throws).
class CudaRaw final : public RawMemory {
 public:
  void* allocate(size_t nbytes) override {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, nbytes);
    if (e == cudaSuccess) return p;
    (void)cudaGetLastError();
    std::lock_guard<std::mutex> lock(mu_);
    why_ = std::string("cudaMalloc: ") + cudaGetErrorString(e);
    return nullptr;
  }
  void free(void* p) override {
    cudaStream_t s = nullptr;
    try {
      s = stream();
    } catch (...) {  // no stream: nothing was queued
    }
    if (s && cudaStreamSynchronize(s) != cudaSuccess) (void)cudaGetLastError();
    (void)cudaFree(p);
  }
  std::string why() override {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }

 private:
  std::mutex mu_;
  std::string why_;
};

class CudaAllocator final : public DeviceAllocator {
 public:
  void* allocate(size_t nbytes) override { return arena_.allocate(nbytes); }
  void free(void* p) override { arena_.free(p); }
  AllocatorStats stats() override { return arena_.stats(); }
  void empty_cache() override { arena_.empty_cache(); }

 private:
  CudaRaw raw_;
  BfcArena arena_{raw_, "cuda"};
};

CudaAllocator* g_allocator = nullptr;

}  // namespace

Scratch::Scratch(size_t nbytes) {
  if (!g_allocator) fail("K.scratch: no CUDA device is registered");
  p_ = g_allocator->allocate(nbytes);
}

Scratch::~Scratch() {
  if (p_) g_allocator->free(p_);
}

// -- the table and the registration ----------------------------------------------------------------

const mf_kernel_table& kernel_table() {
#define MF_CUDA_MEMBER_(name, params) &mf::cuda::name,
  static const mf_kernel_table table = {MF_KERNELS(MF_CUDA_MEMBER_)};
#undef MF_CUDA_MEMBER_
  return table;
}

namespace {

struct Registration {
  int id = -1;
  int gpus = 0;
  std::string reason;
};

// Asks the runtime for GPUs once, when the library loads; registers device "cuda" if it has any.
Registration register_backend() {
  Registration r;
  cudaError_t e = cudaGetDeviceCount(&r.gpus);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    r.gpus = 0;
    r.reason = std::string("no CUDA device: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
    return r;
  }
  if (r.gpus == 0) {
    r.reason = "no CUDA device: the CUDA runtime found no GPU";
    return r;
  }
  try {
    g_allocator = new CudaAllocator();  // never destroyed, like the registry that points at it
    r.id = register_device("cuda", g_allocator, &kernel_table(), MF_CUDA);
  } catch (const std::exception& e) {
    r.reason = std::string("the CUDA backend could not register: ") + e.what();
  }
  return r;
}

const Registration& registration() {
  static const Registration r = register_backend();
  return r;
}

// At library load (a static of this object file, linked into libmoonflow as an object, never dropped).
[[maybe_unused]] const bool kRegistered = (registration(), true);

}  // namespace

bool available() { return registration().id >= 0; }
const std::string& unavailable_reason() { return registration().reason; }
int device_count() { return registration().gpus; }
int device_id() { return registration().id; }

void on_device(const char* op, const char* name, const mf_tensor& t) {
  if (t.device_id != device_id())
    fail(op, ": ", name, " is on device ", t.device_id, "; expected the cuda device (", device_id(), ")");
}

void synchronize_all() {
  if (available()) synchronize("synchronize");
}

void set_tf32(bool allow) { set_allow_tf32(allow); }
bool tf32() { return allow_tf32(); }

}  // namespace cuda
}  // namespace mf
