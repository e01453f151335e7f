// -- blas ----------------------------------------------------------------------------------------
// OpenBLAS, loaded when libmoonflow loads (dlopen, RTLD_GLOBAL) instead of linked, so moonflow can
// choose its kernels: OpenBLAS 0.3.21 takes AVX-512 AMD CPUs (Zen 4/5) for Haswell (AVX2).
//
// Which library: MF_BLAS_LIBRARY when set (only it); else the OpenMP OpenBLAS CMake found
// (MF_OPENBLAS, its real file), the soname in that folder, then the soname on the loader's path.
// Which kernels: a user's OPENBLAS_CORETYPE always wins; when it is unset and the CPU and the OS
// support AVX-512 F, BW, DQ, VL and CD, OPENBLAS_CORETYPE=SKYLAKEX is set while OpenBLAS loads (its
// load-time constructor reads it) and removed right after. An OpenBLAS the process had already
// loaded (a host that links it) keeps the kernels it chose; blas_info() says so.
// RTLD_GLOBAL: scripts call cblas_sgemm and friends through ffi.C.
#pragma once
#include <cblas.h>  // the types and enums only: every call goes through blas()

namespace mf {

// The BLAS routines moonflow calls, checked against cblas.h's declarations.
struct BlasTable {
  decltype(&::cblas_sgemm) sgemm;
  decltype(&::cblas_dgemm) dgemm;
  decltype(&::cblas_sgemv) sgemv;
  decltype(&::cblas_dgemv) dgemv;
  decltype(&::openblas_set_num_threads) set_num_threads;
  decltype(&::openblas_get_corename) get_corename;
  decltype(&::openblas_get_config) get_config;
  decltype(&::openblas_get_parallel) get_parallel;
};

// The table; throws mf::Error with the load failure (no library, a missing symbol) when the library
// did not load, so no caller ever calls through a null pointer. Thread safe (filled before main).
const BlasTable& blas();

// What was loaded and chosen (mf.blas_info(), mf_blas_info_get).
struct BlasInfo {
  bool loaded;            // false: error says why
  const char* error;      // "" when loaded
  const char* library;    // the file the symbols came from (dladdr), or the name asked for
  const char* core;       // openblas_get_corename(): "SkylakeX", "Haswell", ...
  const char* config;     // openblas_get_config(): version and build options
  int parallel;           // openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP
  bool chosen;            // moonflow set OPENBLAS_CORETYPE for the load (the CPU has AVX-512)
  bool user_coretype;     // OPENBLAS_CORETYPE was set by the user (it won)
  bool preloaded;         // an OpenBLAS was in the process before moonflow's load (its choice held)
};
const BlasInfo& blas_info();

}  // namespace mf
