// -- batch_norm / dropout_mask -----------------------------------------------------------------
// Batch normalisation with batch statistics (per channel = dim 2, in float64 accumulators) and the
// dropout mask drawn from the counter-based generator, so a mask depends only on (seed, offset).
#include <cmath>
#include <cstring>
#include <vector>

#include "../../core/allocator.h"
#include "../../core/error.h"
#include "../../core/nchw.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

// Per-channel sums in float64 vector lanes: element i of a run goes to lane i mod 16 (four 4-wide
// accumulators, unaligned loads), a run's last n mod 4 to one scalar; the order depends on the shape
// alone, never on the pointer or the thread count. A serial double sum bound the loop (one add's
// latency an element): 64 KB took 19 us, most of it here.
namespace {
typedef double D4 __attribute__((vector_size(32)));
typedef float F4 __attribute__((vector_size(16)));
inline D4 load_d4(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, D4);
}
inline D4 load_d4(const double* p) {
  D4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct LaneSum {
  D4 a[4] = {};
  double tail = 0;
  double total() const {
    D4 v = (a[0] + a[1]) + (a[2] + a[3]);
    return ((v[0] + v[1]) + (v[2] + v[3])) + tail;
  }
};

// acc += f(x) over the n values of row (f: x - mean squared, or x itself)
template <bool kSquares, typename T>
inline void lane_sum(LaneSum& acc, const T* row, int64_t n, double mean) {
  const D4 m = {mean, mean, mean, mean};
  auto f = [&](D4 v) {
    if (kSquares) v = (v - m) * (v - m);
    return v;
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc.a[0] += f(load_d4(row + i));
    acc.a[1] += f(load_d4(row + i + 4));
    acc.a[2] += f(load_d4(row + i + 8));
    acc.a[3] += f(load_d4(row + i + 12));
  }
  for (; i + 4 <= n; i += 4) acc.a[0] += f(load_d4(row + i));
  for (; i < n; ++i) {
    double d = kSquares ? double(row[i]) - mean : double(row[i]);
    acc.tail += kSquares ? d * d : d;
  }
}
}  // namespace

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
      LaneSum sum, sq;
      for (int64_t n = 0; n < N; ++n) lane_sum<false>(sum, xp + (n * Cn + c) * inner, inner, 0.0);
      double cnt = double(N * inner), mean = cnt > 0 ? sum.total() / cnt : 0;
      for (int64_t n = 0; n < N; ++n) lane_sum<true>(sq, xp + (n * Cn + c) * inner, inner, mean);
      double var = cnt > 0 ? sq.total() / cnt : 0;  // biased, as normalisation uses
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
