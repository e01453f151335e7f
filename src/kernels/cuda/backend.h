// The CUDA backend as the rest of the library sees it (plain C++, no CUDA headers, so the C ABI in
// src/lua/capi_cuda.cc includes it in every build that has the backend). The backend registers
// device "cuda" when the library loads if the runtime finds a GPU; otherwise it registers nothing
// and keeps the reason.
#pragma once
#include <cstdint>
#include <string>

namespace mf {
namespace cuda {

// Whether device "cuda" is registered (a GPU was found when the library loaded).
bool available();
// Why it is not: "no CUDA device: <the runtime's error text>"; empty when available().
const std::string& unavailable_reason();
// GPUs the runtime reports (0 when it reports an error).
int device_count();
// The moonflow device id of "cuda", or -1.
int device_id();
// Waits for all work queued on the compute stream; throws mf::Error naming what failed. A no-op
// when no device is registered.
void synchronize_all();
// How many times the host has waited for the compute stream (synchronize calls), since load.
int64_t sync_count();
// TF32 in cuBLAS products (kernels.h's set_allow_tf32), off by default.
void set_tf32(bool allow);
bool tf32();
// cuBLAS and NVRTC are loaded on first use (lazy_libs.cc): loads both now and returns what is missing,
// a line per library that cannot be loaded or routine it lacks; empty when everything is there.
std::string lazy_libs_check();

}  // namespace cuda
}  // namespace mf
