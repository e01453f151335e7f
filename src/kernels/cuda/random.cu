// -- rand / randn / randint / dropout_mask -----------------------------------------------------
// The CPU's draws, value for value: one thread per Philox counter (src/core/philox.h: the round
// function, the word conversions and the element layout, compiled here as device code) writes the
// P values of its counter, so mf.manual_seed(s) gives the same numbers on both devices (randn
// within the few ulps by which the CPU's vector log/sin/cos differ from CUDA's). The generator
// state lives on the host: the entry reads seed and offset and advances the offset as the CPU does.
#include <cmath>

#include "../../core/rng.h"
#include "../../core/writes.h"
#include "../../core/kcheck.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

__device__ __forceinline__ unsigned long long u64_words(const Philox4& q, int h) {
  return ((unsigned long long)q.v[2 * h] << 32) | q.v[2 * h + 1];
}

// kind: 0 rand, 1 randn
__global__ void draw_float(float* z, long long n, unsigned long long seed, unsigned long long base, int kind, float a,
                           float b, double ad, double bd) {
  long long counters = (n + 3) / 4;
  for (long long c = global_index(); c < counters; c += global_step()) {
    Philox4 q = philox(seed, base + (unsigned long long)c);
    float v[4];
    if (kind == 1) {
      box_muller_float(q.v[0], q.v[1], v);
      box_muller_float(q.v[2], q.v[3], v + 2);
      for (int k = 0; k < 4; ++k) v[k] = a + b * v[k];
    } else {
      for (int k = 0; k < 4; ++k) {
        float x = float(ad + (bd - ad) * double(u32_to_unit_float(q.v[k])));
        v[k] = x >= b && bd > ad ? a : x;  // rounding must not reach the open end
      }
    }
    long long e0 = c * 4;
    for (int k = 0; k < 4 && e0 + k < n; ++k) z[e0 + k] = v[k];
  }
}

__global__ void draw_double(double* z, long long n, unsigned long long seed, unsigned long long base, int kind,
                            double a, double b) {
  long long counters = (n + 1) / 2;
  for (long long c = global_index(); c < counters; c += global_step()) {
    Philox4 q = philox(seed, base + (unsigned long long)c);
    double v[2];
    if (kind == 1) {
      box_muller_double(q, v);
      v[0] = a + b * v[0];
      v[1] = a + b * v[1];
    } else {
      for (int h = 0; h < 2; ++h) {
        double x = a + (b - a) * u64_to_unit_double(q.v[2 * h], q.v[2 * h + 1]);
        v[h] = x >= b && b > a ? a : x;
      }
    }
    long long e0 = c * 2;
    for (int k = 0; k < 2 && e0 + k < n; ++k) z[e0 + k] = v[k];
  }
}

template <class T>
__global__ void draw_int(T* z, long long n, unsigned long long seed, unsigned long long base, long long lo,
                         unsigned long long range) {
  long long counters = (n + 1) / 2;
  for (long long c = global_index(); c < counters; c += global_step()) {
    Philox4 q = philox(seed, base + (unsigned long long)c);
    long long e0 = c * 2;
    for (int h = 0; h < 2 && e0 + h < n; ++h) z[e0 + h] = T(lo + (long long)scale_u64(u64_words(q, h), range));
  }
}

template <class T>
__global__ void draw_dropout(T* m, long long n, unsigned long long seed, unsigned long long base, T keep, double cut) {
  long long counters = (n + 3) / 4;
  for (long long c = global_index(); c < counters; c += global_step()) {
    Philox4 q = philox(seed, base + (unsigned long long)c);
    long long e0 = c * 4;
    for (int k = 0; k < 4 && e0 + k < n; ++k) m[e0 + k] = double(q.v[k]) < cut ? T(0) : keep;
  }
}

// counters a draw of n values at P per counter spends
unsigned long long counters_of(long long n, int per) { return (unsigned long long)((n + per - 1) / per); }

}  // namespace

int rand(mf_tensor* t, mf_rng* g, int32_t normal, double a, double b) {
  const char* op = normal ? "randn" : "rand";
  return entry(op, [&] {
    kcheck::meta(op, "output", *t);
    kcheck::float_dtype(op, "output", *t);
    kcheck::contiguous(op, "output", *t);
    if (!g) fail(op, ": no generator");
    long long n = t->count;
    unsigned long long seed = g->seed, base = g->offset;
    if (n > 0) {
      if (t->dtype_id == MF_FLOAT32) {
        draw_float<<<grid_for(counters_of(n, kDrawPerCounter32)), kThreads, 0, stream()>>>(
            static_cast<float*>(t->ptr), n, seed, base, normal ? 1 : 0, float(a), float(b), a, b);
      } else {
        draw_double<<<grid_for(counters_of(n, kDrawPerCounter64)), kThreads, 0, stream()>>>(
            static_cast<double*>(t->ptr), n, seed, base, normal ? 1 : 0, a, b);
      }
      check_launch(op);
    }
    g->offset = base + counters_of(n, t->dtype_id == MF_FLOAT32 ? kDrawPerCounter32 : kDrawPerCounter64);
  });
}

int randint(mf_tensor* t, mf_rng* g, double low, double high) {
  return entry("randint", [&] {
    kcheck::meta("randint", "output", *t);
    kcheck::contiguous("randint", "output", *t);
    if (!g) fail("randint: no generator");
    if (!(low < high) || low != std::floor(low) || high != std::floor(high) || std::fabs(low) > 9e15 ||
        std::fabs(high) > 9e15)
      fail("randint: low ", low, " and high ", high, " must be integers with low < high");
    long long n = t->count;
    if (n > 0) {
      check_value_fits(low, t->dtype_id, "randint");
      check_value_fits(high - 1, t->dtype_id, "randint");
    }
    unsigned long long range = (unsigned long long)(high - low), seed = g->seed, base = g->offset;
    long long lo = (long long)low;
    if (n > 0) {
      unsigned grid = grid_for(counters_of(n, kDrawPerCounter64));
      switch (t->dtype_id) {
        case MF_FLOAT32:
          draw_int<float><<<grid, kThreads, 0, stream()>>>(static_cast<float*>(t->ptr), n, seed, base, lo, range);
          break;
        case MF_FLOAT64:
          draw_int<double><<<grid, kThreads, 0, stream()>>>(static_cast<double*>(t->ptr), n, seed, base, lo, range);
          break;
        case MF_INT32:
          draw_int<int32_t><<<grid, kThreads, 0, stream()>>>(static_cast<int32_t*>(t->ptr), n, seed, base, lo, range);
          break;
        case MF_INT64:
          draw_int<int64_t><<<grid, kThreads, 0, stream()>>>(static_cast<int64_t*>(t->ptr), n, seed, base, lo, range);
          break;
        case MF_UINT8:
          draw_int<uint8_t><<<grid, kThreads, 0, stream()>>>(static_cast<uint8_t*>(t->ptr), n, seed, base, lo, range);
          break;
        default: fail("randint: output has an unknown dtype");
      }
      check_launch("randint");
    }
    g->offset = base + counters_of(n, kDrawPerCounter64);
  });
}

int dropout_mask(mf_tensor* mask, mf_rng* g, double p) {
  return entry("dropout_mask", [&] {
    kcheck::meta("dropout_mask", "mask", *mask);
    kcheck::float_dtype("dropout_mask", "mask", *mask);
    kcheck::contiguous("dropout_mask", "mask", *mask);
    if (!g) fail("dropout_mask: no generator");
    if (!(p >= 0 && p <= 1)) fail("dropout_mask: p is ", p, "; expected 0 <= p <= 1");
    double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0, cut = p * 4294967296.0;  // dropped: word < p 2^32
    long long n = mask->count;
    unsigned long long seed = g->seed, base = g->offset;
    if (n > 0) {
      unsigned grid = grid_for(counters_of(n, kDrawPerCounter32));
      if (mask->dtype_id == MF_FLOAT32)
        draw_dropout<float><<<grid, kThreads, 0, stream()>>>(static_cast<float*>(mask->ptr), n, seed, base,
                                                             float(scale), cut);
      else
        draw_dropout<double><<<grid, kThreads, 0, stream()>>>(static_cast<double*>(mask->ptr), n, seed, base, scale,
                                                              cut);
      check_launch("dropout_mask");
    }
    g->offset = base + counters_of(n, kDrawPerCounter32);
  });
}

}  // namespace cuda
}  // namespace mf
