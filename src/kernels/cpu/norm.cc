// -- batch_norm / dropout_mask -----------------------------------------------------------------
// Batch normalisation with batch statistics (per channel = dim 2, in float64 accumulators) and the
// dropout mask drawn from the counter-based generator, so a mask depends only on (seed, offset).
#include <cmath>
#include <vector>

#include "../../core/allocator.h"
#include "../../core/error.h"
#include "../../core/nchw.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

template <typename T>
static void batch_norm_typed(mf_tensor& y, const mf_tensor& x, const mf_tensor& w, const mf_tensor& b, double eps) {
  int64_t N = x.shape[0], Cn = x.shape[1], inner = 1;
  for (int d = 2; d < x.ndim; ++d) inner *= x.shape[d];
  const T* xp = (const T*)x.ptr;
  const T* wp = (const T*)w.ptr;
  const T* bp = (const T*)b.ptr;
  T* yp = (T*)y.ptr;
  int64_t ws = w.strides[0], bs = b.strides[0];
  parallel_for(Cn, N * inner * 4, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* row = xp + (n * Cn + c) * inner;
        for (int64_t i = 0; i < inner; ++i) sum += double(row[i]);
      }
      double cnt = double(N * inner), mean = cnt > 0 ? sum / cnt : 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* row = xp + (n * Cn + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double d = double(row[i]) - mean;
          sq += d * d;
        }
      }
      double var = cnt > 0 ? sq / cnt : 0;  // biased, as normalisation uses
      double scale = double(wp[c * ws]) / std::sqrt(var + eps), shift = double(bp[c * bs]) - mean * scale;
      for (int64_t n = 0; n < N; ++n) {
        const T* row = xp + (n * Cn + c) * inner;
        T* out = yp + (n * Cn + c) * inner;
        for (int64_t i = 0; i < inner; ++i) out[i] = T(double(row[i]) * scale + shift);
      }
    }
  });
}

// batch_norm's block is not strided: the engine hands it a contiguous x (the kernel layout contract).
void batch_norm_cpu(mf_tensor& y, const mf_tensor& x, const mf_tensor& w, const mf_tensor& b, double eps) {
  kcheck::batch_norm("batch_norm", y, x, w, b, false);  // src/core/nchw.h, the CUDA entry's checks too
  MF_DISPATCH_FLOAT(x.dtype_id, T, "batch_norm", batch_norm_typed<T>(y, x, w, b, eps));
}

}  // namespace mf
