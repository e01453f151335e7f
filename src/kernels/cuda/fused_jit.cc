// NVRTC compile cache of generated fused kernels, the driver calls that load and launch them (libcuda
// through dlopen: a build machine has only its stub), and the fused table entry.
#include "fused_jit.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <cuda.h>
#include <nvrtc.h>

#include "../../core/kcheck.h"
#include "backend.h"
#include "fused_codegen.h"
#include "kernels.h"

namespace mf {
namespace cuda {

namespace {

// -- NVRTC -------------------------------------------------------------------------------------------
std::mutex g_cache_mu;
std::map<std::pair<int, std::string>, std::unique_ptr<FusedModule>> g_cache;

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) fail("fused_elementwise: ", call, ": ", nvrtcGetErrorString(r));
}

std::unique_ptr<FusedModule> compile(const std::string& source, int arch) {
  nvrtcProgram prog;
  check_nvrtc(nvrtcCreateProgram(&prog, source.c_str(), "mf_fused.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  // IEEE division and square root (NVRTC's defaults, stated): the CPU functors round them exactly
  std::string gpu = "--gpu-architecture=compute_" + std::to_string(arch);
  const char* opts[] = {gpu.c_str(), "--std=c++17", "--prec-div=true", "--prec-sqrt=true", "--fmad=false"};
  nvrtcResult r = nvrtcCompileProgram(prog, int(sizeof(opts) / sizeof(opts[0])), opts);
  size_t log_size = 0;
  std::string log;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, &log[0]);
    log.resize(log_size - 1);
  }
  if (r != NVRTC_SUCCESS)
    fail("fused_elementwise: NVRTC could not compile the generated kernel (", nvrtcGetErrorString(r), "):\n", log,
         "\n-- source --\n", source);
  size_t ptx_size = 0;
  check_nvrtc(nvrtcGetPTXSize(prog, &ptx_size), "nvrtcGetPTXSize");
  std::string ptx(ptx_size, '\0');
  check_nvrtc(nvrtcGetPTX(prog, &ptx[0]), "nvrtcGetPTX");
  if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return std::unique_ptr<FusedModule>(new FusedModule(source, std::move(ptx), std::move(log), arch));
}

// -- the driver, opened at first use ---------------------------------------------------------------
struct Driver {
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void**, void**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  std::string why;  // set when the library or a symbol is missing
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      r.why = std::string("cannot open libcuda.so.1 (") + (e ? e : "unknown") + ")";
      return r;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(h, name);
      if (!p && r.why.empty()) r.why = std::string("libcuda.so.1 has no ") + name;
      return p;
    };
    r.module_load_data = reinterpret_cast<decltype(r.module_load_data)>(sym("cuModuleLoadData"));
    r.module_get_function = reinterpret_cast<decltype(r.module_get_function)>(sym("cuModuleGetFunction"));
    r.launch_kernel = reinterpret_cast<decltype(r.launch_kernel)>(sym("cuLaunchKernel"));
    r.get_error_string = reinterpret_cast<decltype(r.get_error_string)>(sym("cuGetErrorString"));
    return r;
  }();
  if (!d.why.empty()) fail("fused_elementwise: the CUDA driver is needed to load a generated kernel: ", d.why);
  return d;
}

void check_cu(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  if (driver().get_error_string) driver().get_error_string(r, &msg);
  fail("fused_elementwise: ", call, ": ", msg ? msg : "unknown CUDA driver error", " (", int(r), ")");
}

std::mutex g_load_mu;

// The driver calls act on the calling thread's current context, which the runtime makes current
// only on a thread's first runtime call that needs one: cudaFree(nullptr) is such a call (it frees,
// allocates and waits for nothing). Once per thread, since a program prepared on one thread may
// launch on another.
void make_context_current() {
  thread_local bool done = false;
  if (done) return;
  check(cudaFree(nullptr), "fused", "cudaFree");
  done = true;
}

}  // namespace

void* FusedModule::function() const {
  std::lock_guard<std::mutex> lock(g_load_mu);
  if (!function_) {
    const Driver& d = driver();
    make_context_current();
    CUmodule m = nullptr;
    check_cu(d.module_load_data(&m, ptx_.c_str()), "cuModuleLoadData");
    CUfunction f = nullptr;
    check_cu(d.module_get_function(&f, m, kFusedKernelName), "cuModuleGetFunction");
    module_ = m;
    function_ = f;
  }
  return function_;
}

const FusedModule& fused_module(const std::string& source, int arch) {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  auto key = std::make_pair(arch, source);
  auto it = g_cache.find(key);
  if (it != g_cache.end()) return *it->second;
  std::unique_ptr<FusedModule> m = compile(source, arch);
  const FusedModule& ref = *m;
  g_cache.emplace(std::move(key), std::move(m));
  return ref;
}

size_t fused_cache_size() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  return g_cache.size();
}

int device_arch() {
  static const int arch = [] {
    int dev = 0, major = 0, minor = 0;
    check(cudaGetDevice(&dev), "fused", "cudaGetDevice");
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "fused", "cudaDeviceGetAttribute");
    check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "fused", "cudaDeviceGetAttribute");
    return major * 10 + minor;
  }();
  return arch;
}

void fused_prepare(const mf_fused* p, int dtype) {
  if (!p) fail("fused_elementwise: null program");
  if (dtype != MF_FLOAT32 && dtype != MF_FLOAT64)
    fail("fused_elementwise: output is ", dtype_name(dtype), "; expected float32 or float64");
  const int slot = dtype == MF_FLOAT32 ? 0 : 1;
  if (!p->cuda_kernel[slot]) p->cuda_kernel[slot] = fused_module(fused_source(p->prog, dtype), device_arch()).function();
}

// -- fused ---------------------------------------------------------------------------------------------
// The checks of fused_cpu, then one launch of the program's kernel (generated and compiled at its
// first run, once per program and dtype in the process; the handle keeps the module after that).
int fused(const mf_fused* p, mf_tensor* out_p, int32_t nin, const mf_tensor* const* ins) {
  return entry("fused", [&] {
    const char* op = "fused_elementwise";
    if (!p || !out_p) fail(op, ": null program or output");
    const FusedProgram& fp = p->prog;
    mf_tensor& out = *out_p;
    if (nin != fp.nin) fail(op, ": the program reads ", fp.nin, " inputs; got ", nin);
    if (out.dtype_id != MF_FLOAT32 && out.dtype_id != MF_FLOAT64)
      fail(op, ": output is ", dtype_name(out.dtype_id), "; expected float32 or float64");
    kcheck::meta(op, "output", out);
    kcheck::contiguous(op, "output", out);
    if (!ins) fail(op, ": the input list is null");
    // a host pointer in a kernel is an illegal address, which poisons the context for every later
    // call: refuse operands of another device here, as the elementwise entries do
    if (out.device_id != device_id())
      fail(op, ": the output is on device ", out.device_id, "; expected the cuda device (", device_id(), ")");
    for (int i = 0; i < nin; ++i) {
      if (!ins[i]) fail(op, ": input ", i + 1, " is null");
      kcheck::meta(op, "input", *ins[i]);
      if (ins[i]->device_id != device_id())
        fail(op, ": input ", i + 1, " is on device ", ins[i]->device_id, "; expected the cuda device (", device_id(),
             ")");
    }
    kcheck::broadcast_out(op, "output", out, nin, ins, nullptr);
    MfFusedArgs a{};
    a.n = out.count;
    a.ndim = out.ndim;
    a.nin = nin;
    for (int d = 0; d < out.ndim; ++d) a.shape[d] = out.shape[d];
    for (int i = 0; i < nin; ++i) {
      const mf_tensor& t = *ins[i];
      if (t.dtype_id != out.dtype_id)
        fail(op, ": input ", i + 1, " is ", dtype_name(t.dtype_id), "; expected ", dtype_name(out.dtype_id),
             " like the output");
      a.in[i] = t.ptr;
      if (t.count == out.count && t.is_contig && t.ndim <= out.ndim) {
        a.mode[i] = 0;
      } else if (t.count == 1) {
        a.mode[i] = 1;
      } else {
        Shape bs = broadcast_strides(t, shape_of(out));
        a.mode[i] = 2;
        for (int d = 0; d < out.ndim; ++d) a.stride[i][d] = bs[size_t(d)];
      }
    }
    a.out = out.ptr;
    if (out.count == 0) return;
    const int slot = out.dtype_id == MF_FLOAT32 ? 0 : 1;
    if (!p->cuda_kernel[slot]) fused_prepare(p, out.dtype_id);  // a program run without its bind-time prepare
    void* fn = p->cuda_kernel[slot];
    void* params[] = {&a};
    make_context_current();
    check_cu(driver().launch_kernel(static_cast<CUfunction>(fn), grid_for(a.n), 1, 1, kThreads, 1, 1, 0,
                                    static_cast<CUstream>(stream()), params, nullptr),
             "cuLaunchKernel");
  });
}

}  // namespace cuda
}  // namespace mf
