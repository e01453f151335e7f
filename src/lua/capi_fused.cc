// mf_fused_prepare (abi.h): a fused program's device form made at bind time. On a CUDA device that is
// the generated kernel compiled by NVRTC and loaded (src/kernels/cuda/fused_jit.h); the CPU runs the
// program as it is, so there it does nothing. Compiled in every build.
#include "../core/device.h"
#include "../core/error.h"
#include "../core/pointwise.h"
#include "capi.h"
#include "guard.h"
#ifdef MF_HAVE_CUDA
#include "../kernels/cuda/fused_jit.h"
#endif

extern "C" int mf_fused_prepare(const mf_fused* p, int32_t device, int32_t dtype) {
  return mf::guard(__func__, [&] {
    if (!p) mf::fail("fused_prepare: null program");
    // only the CUDA backend's device compiles programs (NVRTC); another device that takes the cuda
    // slot of kernel strings (a test device over host memory) runs them through its kernel table
    if (mf::device(device).strings != MF_CUDA || device != mf::find_device("cuda")) return;
#ifdef MF_HAVE_CUDA
    mf::cuda::fused_prepare(p, dtype);
#else
    (void)dtype;
#endif
  });
}
