// extern "C" entry points of the CUDA backend's status (abi.h): compiled in every build; without the
// backend (no nvcc at build time) they say so instead of failing to link.
#include "../core/error.h"
#include "capi.h"
#include "guard.h"
#ifdef MF_HAVE_CUDA
#include "../kernels/cuda/backend.h"
#endif

extern "C" {

#ifdef MF_HAVE_CUDA

int mf_cuda_available(void) { return mf::cuda::available() ? 1 : 0; }
const char* mf_cuda_reason(void) { return mf::cuda::unavailable_reason().c_str(); }
int mf_cuda_device_count(void) { return mf::cuda::device_count(); }
int mf_cuda_synchronize(void) { return mf::guard(__func__, [] { mf::cuda::synchronize_all(); }); }
int mf_cuda_set_allow_tf32(int32_t allow) {
  return mf::guard(__func__, [&] { mf::cuda::set_tf32(allow != 0); });
}
int mf_cuda_allow_tf32(void) { return mf::cuda::tf32() ? 1 : 0; }
int64_t mf_cuda_sync_count(void) { return mf::cuda::sync_count(); }

#else

int mf_cuda_available(void) { return 0; }
const char* mf_cuda_reason(void) { return "this build has no CUDA backend"; }
int mf_cuda_device_count(void) { return 0; }
int mf_cuda_synchronize(void) { return MF_OK; }
// Remembered so that the setting reads back the same in every build (nothing uses it here).
static int g_allow_tf32 = 0;
int mf_cuda_set_allow_tf32(int32_t allow) {
  g_allow_tf32 = allow != 0;
  return MF_OK;
}
int mf_cuda_allow_tf32(void) { return g_allow_tf32; }
int64_t mf_cuda_sync_count(void) { return 0; }

#endif

}  // extern "C"
