// -- blas ----------------------------------------------------------------------------------------
// Loads OpenBLAS at library load (blas.h says which file and which kernels, and why).
#include "blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "../../core/error.h"
#include "../../core/threads.h"

#ifndef MF_OPENBLAS_PATH  // CMake passes the OpenMP OpenBLAS it found (real file) and its folder
#define MF_OPENBLAS_PATH ""
#endif
#ifndef MF_OPENBLAS_DIR
#define MF_OPENBLAS_DIR ""
#endif

namespace mf {

namespace {

// OpenBLAS's soname on Linux (Debian: libopenblas.so.0 in each build's folder and as the alternative).
constexpr const char* kSoname = "libopenblas.so.0";
// The kernels moonflow picks for an AVX-512 CPU: OpenBLAS's Skylake-X family (AVX-512 F/BW/DQ/VL/CD);
// its DYNAMIC_ARCH builds all carry it.
constexpr const char* kAvx512Core = "SKYLAKEX";

struct Loaded {
  BlasTable table{};
  BlasInfo info{};
  std::string error, library, core, config;
  std::once_flag described;  // core, config and parallel are read at the first blas_info()
};

// AVX-512 F, BW, DQ, VL and CD usable: libgcc's __builtin_cpu_supports reports an AVX-512 feature
// only when the OS saves the ZMM state (XCR0), so both CPU and OS support are checked.
bool cpu_has_avx512() {
  __builtin_cpu_init();  // this runs in a library constructor, maybe before libgcc's own
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
}

template <class F>
bool find(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

void load(Loaded& l) {
  BlasInfo& in = l.info;
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  std::string user = env ? env : "";
  in.user_coretype = !user.empty();
  const char* own = std::getenv("MF_BLAS_LIBRARY");
  // An OpenBLAS already in the process's global scope (a host linked it, LD_PRELOAD): use it, as
  // the linker would have. Its own constructor picks its kernels (it may run after this one:
  // nothing orders two libraries that do not depend on each other), so no choice applies.
  in.preloaded = !(own && *own) && dlsym(RTLD_DEFAULT, "openblas_get_corename") != nullptr;
  in.chosen = !in.user_coretype && !in.preloaded && cpu_has_avx512();

  std::vector<std::string> names;
  if (own && *own) {
    names.push_back(own);
  } else {
    if (*MF_OPENBLAS_PATH) names.push_back(MF_OPENBLAS_PATH);
    if (*MF_OPENBLAS_DIR) names.push_back(std::string(MF_OPENBLAS_DIR) + "/" + kSoname);
    names.push_back(kSoname);
  }
  void* h = nullptr;  // RTLD_DEFAULT (a null handle too) when preloaded
  bool found = in.preloaded;
  std::string tried;
  if (in.preloaded) {
    h = RTLD_DEFAULT;
    l.library = "(already loaded)";
  } else {
    if (in.chosen) setenv("OPENBLAS_CORETYPE", kAvx512Core, 1);
    for (const std::string& n : names) {
      dlerror();
      h = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (h) {
        found = true;
        l.library = n;
        break;
      }
      const char* e = dlerror();  // it names the file
      tried += "\n  " + (e ? std::string(e) : n + ": not found");
    }
    if (in.chosen) {  // the environment as it was: unset, or the empty value the user gave
      if (env) setenv("OPENBLAS_CORETYPE", user.c_str(), 1);
      else unsetenv("OPENBLAS_CORETYPE");
    }
  }
  if (!found) {
    in.chosen = false;
    l.error = std::string("moonflow: cannot load OpenBLAS (the OpenMP build, package libopenblas0-openmp)") +
              (own && *own ? " from MF_BLAS_LIBRARY" : "") + "; tried:" + tried;
  } else {
    BlasTable& t = l.table;
    const char* missing = !find(h, "cblas_sgemm", t.sgemm) ? "cblas_sgemm"
                          : !find(h, "cblas_dgemm", t.dgemm) ? "cblas_dgemm"
                          : !find(h, "cblas_sgemv", t.sgemv) ? "cblas_sgemv"
                          : !find(h, "cblas_dgemv", t.dgemv) ? "cblas_dgemv"
                          : !find(h, "openblas_set_num_threads", t.set_num_threads) ? "openblas_set_num_threads"
                                                                                    : nullptr;
    find(h, "openblas_get_corename", t.get_corename);  // for blas_info() only
    find(h, "openblas_get_config", t.get_config);
    find(h, "openblas_get_parallel", t.get_parallel);
    Dl_info where{};
    if (t.sgemm && dladdr(reinterpret_cast<void*>(t.sgemm), &where) && where.dli_fname && *where.dli_fname)
      l.library = where.dli_fname;
    if (missing) {
      in.chosen = false;
      l.error = "moonflow: the BLAS library " + l.library + " has no " + missing +
                " (moonflow needs OpenBLAS: cblas_sgemm, cblas_dgemm, cblas_sgemv, cblas_dgemv, "
                "openblas_set_num_threads)";
      t = BlasTable{};
    } else {
      in.loaded = true;
      set_blas_threads_hook(t.set_num_threads);
    }
  }
  in.error = l.error.c_str();
  in.library = l.library.c_str();
  in.core = in.config = "";
  in.parallel = -1;
}

// What OpenBLAS says about itself, asked after start-up: a preloaded OpenBLAS may not have run its
// own constructor yet when ours runs (nothing orders two libraries that do not depend on each
// other), and then it answers "Unknown".
void describe(Loaded& l) {
  const BlasTable& t = l.table;
  if (!l.info.loaded) return;
  if (t.get_corename && t.get_corename()) l.core = t.get_corename();
  if (t.get_config && t.get_config()) l.config = t.get_config();
  while (!l.config.empty() && l.config.back() == ' ') l.config.pop_back();
  l.info.core = l.core.c_str();
  l.info.config = l.config.c_str();
  l.info.parallel = t.get_parallel ? t.get_parallel() : -1;
}

// A function-local static, not namespace-scope objects: the constructor below may run before or
// after this file's static initializers. Never freed: the library stays loaded to the end.
Loaded& loaded() {
  static Loaded* l = [] {
    Loaded* p = new Loaded;
    load(*p);
    return p;
  }();
  return *l;
}

// Loads at library load, before any engine or host code: OpenBLAS's own constructor reads
// OPENBLAS_CORETYPE once, then. A failure is kept and raised by blas() (engine start calls it).
__attribute__((constructor)) void load_blas_at_start() { (void)loaded(); }

}  // namespace

const BlasTable& blas() {
  const Loaded& l = loaded();
  if (!l.info.loaded) fail(l.error);
  return l.table;
}

const BlasInfo& blas_info() {
  Loaded& l = loaded();
  std::call_once(l.described, describe, std::ref(l));
  return l.info;
}

}  // namespace mf
