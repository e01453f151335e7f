// cuBLAS and NVRTC loaded on first use. Linked, their libraries' static initialisers (cuBLASLt's
// above all: about 27,000 pages faulted in) ran at every start of every program of a CUDA-enabled
// build, GPU or not: 80-120 ms against 10-20 ms without them (2026-11-27). libmoonflow defines the
// routines it calls itself, with the headers' prototypes (a mismatch does not compile), hidden so they
// serve only libmoonflow's own calls; each opens its library the first time one is called and
// forwards. The library is found as the loader finds a linked one (its soname through the RUNPATH and
// LD_LIBRARY_PATH), then in the toolkit's library folder CMake found. When it cannot be loaded, every
// routine returns its library's "not initialized" status and the status string says why, so the
// caller's error names the missing library (cuDNN stays linked: its loader opens its sub-libraries on
// first use by itself, about 1 ms).
#include <dlfcn.h>

#include <mutex>
#include <string>

#include <cublas_v2.h>
#include <nvrtc.h>

#include "kernels/cuda/backend.h"

namespace {

struct LazyLib {
  const char* soname;
  std::once_flag once;
  void* handle = nullptr;
  std::string error;
};

LazyLib g_cublas{MF_CUBLAS_SONAME, {}, nullptr, {}};
LazyLib g_nvrtc{MF_NVRTC_SONAME, {}, nullptr, {}};

void* open_lib(LazyLib& lib) {
  std::call_once(lib.once, [&lib] {
    lib.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle) return;
    const char* first = dlerror();
    std::string why = first ? first : "not found";
    std::string path = std::string(MF_CUDA_LIBDIR) + "/" + lib.soname;
    lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) lib.error = "moonflow could not load " + std::string(lib.soname) + " (" + why + "; nor " + path + ")";
  });
  return lib.handle;
}

void* lazy_sym(LazyLib& lib, const char* name) {
  void* h = open_lib(lib);
  return h ? dlsym(h, name) : nullptr;
}

}  // namespace

#define MF_HIDDEN __attribute__((visibility("hidden")))

// A routine of lib returning status type ST (fail: what it returns when lib cannot be loaded).
#define MF_LAZY(lib, ST, fail, name, params, args)                                  \
  extern "C" MF_HIDDEN ST name params {                                             \
    using Fn = ST(*) params;                                                        \
    static const Fn f = reinterpret_cast<Fn>(lazy_sym(lib, #name));                 \
    return f ? f args : fail;                                                       \
  }

// The routines that return their library's status: (name, parameters, arguments), one list per
// library, which both defines them and names them for lazy_libs_check below
#define MF_CUBLAS_ROUTINES(X)                                                                                   \
  X(cublasCreate_v2, (cublasHandle_t * handle), (handle))                                                      \
  X(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))                         \
  X(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))                              \
  X(cublasSgemm_v2,                                                                                             \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,     \
     const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc),                   \
    (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                                                  \
  X(cublasDgemm_v2,                                                                                             \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha,    \
     const double* A, int lda, const double* B, int ldb, const double* beta, double* C, int ldc),               \
    (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                                                  \
  X(cublasSgemmStridedBatched,                                                                                  \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,     \
     const float* A, int lda, long long int sA, const float* B, int ldb, long long int sB, const float* beta,    \
     float* C, int ldc, long long int sC, int batch),                                                           \
    (h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch))                               \
  X(cublasDgemmStridedBatched,                                                                                  \
    (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha,    \
     const double* A, int lda, long long int sA, const double* B, int ldb, long long int sB,                    \
     const double* beta, double* C, int ldc, long long int sC, int batch),                                      \
    (h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch))                               \
  X(cublasSscal_v2, (cublasHandle_t h, int n, const float* alpha, float* x, int incx), (h, n, alpha, x, incx))  \
  X(cublasDscal_v2, (cublasHandle_t h, int n, const double* alpha, double* x, int incx), (h, n, alpha, x, incx))

#define MF_NVRTC_ROUTINES(X)                                                                                    \
  X(nvrtcCreateProgram,                                                                                         \
    (nvrtcProgram * prog, const char* src, const char* name, int numHeaders, const char* const* headers,        \
     const char* const* includeNames),                                                                          \
    (prog, src, name, numHeaders, headers, includeNames))                                                       \
  X(nvrtcCompileProgram, (nvrtcProgram prog, int numOptions, const char* const* options),                       \
    (prog, numOptions, options))                                                                                \
  X(nvrtcDestroyProgram, (nvrtcProgram * prog), (prog))                                                         \
  X(nvrtcGetPTX, (nvrtcProgram prog, char* ptx), (prog, ptx))                                                   \
  X(nvrtcGetPTXSize, (nvrtcProgram prog, size_t* size), (prog, size))                                           \
  X(nvrtcGetProgramLog, (nvrtcProgram prog, char* log), (prog, log))                                            \
  X(nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t* size), (prog, size))

#define MF_CUBLAS(name, params, args) MF_LAZY(g_cublas, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, name, params, args)
#define MF_NVRTC(name, params, args) MF_LAZY(g_nvrtc, nvrtcResult, NVRTC_ERROR_INTERNAL_ERROR, name, params, args)
MF_CUBLAS_ROUTINES(MF_CUBLAS)
MF_NVRTC_ROUTINES(MF_NVRTC)

// The status strings: the library's, or why it could not be loaded
extern "C" MF_HIDDEN const char* cublasGetStatusString(cublasStatus_t status) {
  using Fn = const char* (*)(cublasStatus_t);
  static const Fn f = reinterpret_cast<Fn>(lazy_sym(g_cublas, "cublasGetStatusString"));
  return f ? f(status) : g_cublas.error.c_str();
}

extern "C" MF_HIDDEN const char* nvrtcGetErrorString(nvrtcResult result) {
  using Fn = const char* (*)(nvrtcResult);
  static const Fn f = reinterpret_cast<Fn>(lazy_sym(g_nvrtc, "nvrtcGetErrorString"));
  return f ? f(result) : g_nvrtc.error.c_str();
}

namespace mf::cuda {

std::string lazy_libs_check() {
#define MF_NAME(name, params, args) #name,
  static const char* const kCublas[] = {MF_CUBLAS_ROUTINES(MF_NAME) "cublasGetStatusString"};
  static const char* const kNvrtc[] = {MF_NVRTC_ROUTINES(MF_NAME) "nvrtcGetErrorString"};
#undef MF_NAME
  std::string missing;
  for (LazyLib* lib : {&g_cublas, &g_nvrtc}) {
    if (!open_lib(*lib)) missing += lib->error + "\n";
  }
  for (const char* n : kCublas)
    if (g_cublas.handle && !dlsym(g_cublas.handle, n)) missing += std::string(MF_CUBLAS_SONAME) + " has no " + n + "\n";
  for (const char* n : kNvrtc)
    if (g_nvrtc.handle && !dlsym(g_nvrtc.handle, n)) missing += std::string(MF_NVRTC_SONAME) + " has no " + n + "\n";
  return missing;
}

}  // namespace mf::cuda
