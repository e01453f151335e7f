// -- rand / randn / randint / dropout_mask / randperm / multinomial ------------------------------
// Draws from the counter-based Philox generator (src/core/rng.h): every value comes from fixed
// counters (src/core/philox.h's element layout, or row and column), so the thread count never
// changes them. rand, randn, randint and dropout_mask run Philox in vector lanes, a block of
// counters at a time, and randn's Box-Muller through the vector math (src/core/vecmath.h).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "../../core/error.h"
#include "../../core/multinomial.h"
#include "../../core/threads.h"
#include "../../core/vecmath.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

namespace {

// -- Philox in vector lanes ----------------------------------------------------------------------
// kBlock consecutive counters at a time, words in element order: w[4j + k] = philox(seed, first + j).v[k].
constexpr int kBlock = 64;
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

// GCC 12 warns about the intrinsics headers' own undefined vectors (GCC bug 105593)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(__AVX512F__)
// One counter per 64-bit lane, 8 per register: a lane's low half holds the word, so vpmuludq gives
// the 32x32->64 products with no shuffles (their high halves are never read as words); four
// registers of each word in flight hide the multiply's latency (1.4 ns a counter against 3.6 for
// the scalar rounds, one core of the 2-core EPYC).
void philox_block(uint64_t seed, uint64_t first, uint32_t* w) {
  const __m512i m0 = _mm512_set1_epi64(kM0), m1 = _mm512_set1_epi64(kM1);
  const __m512i lane = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  const __m512i first_half = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i second_half = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  for (int s = 0; s < kBlock; s += 32) {
    __m512i c0[4], c1[4], c2[4], c3[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      __m512i c = _mm512_add_epi64(_mm512_set1_epi64(int64_t(first + uint64_t(s + 8 * q))), lane);
      c0[q] = c;
      c1[q] = _mm512_srli_epi64(c, 32);
      c2[q] = c3[q] = _mm512_setzero_si512();
    }
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      const __m512i key0 = _mm512_set1_epi64(k0), key1 = _mm512_set1_epi64(k1);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        __m512i p0 = _mm512_mul_epu32(c0[q], m0), p1 = _mm512_mul_epu32(c2[q], m1);
        c0[q] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1[q], key0, 0x96);  // a ^ b ^ c
        c2[q] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3[q], key1, 0x96);
        c1[q] = p1;
        c3[q] = p0;
      }
      k0 += kW0;
      k1 += kW1;
    }
    // element order: words (0, 1) and (2, 3) paired in 64-bit lanes, the pairs interleaved
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      __m512i a = _mm512_mask_blend_epi32(0xAAAA, c0[q], _mm512_slli_epi64(c1[q], 32));
      __m512i b = _mm512_mask_blend_epi32(0xAAAA, c2[q], _mm512_slli_epi64(c3[q], 32));
      _mm512_storeu_si512(w + 4 * (s + 8 * q), _mm512_permutex2var_epi64(a, first_half, b));
      _mm512_storeu_si512(w + 4 * (s + 8 * q) + 16, _mm512_permutex2var_epi64(a, second_half, b));
    }
  }
}
#elif defined(__AVX2__)
// The AVX-512 scheme at 4 counters per register.
void philox_block(uint64_t seed, uint64_t first, uint32_t* w) {
  const __m256i m0 = _mm256_set1_epi64x(kM0), m1 = _mm256_set1_epi64x(kM1);
  const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
  for (int s = 0; s < kBlock; s += 16) {
    __m256i c0[4], c1[4], c2[4], c3[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      __m256i c = _mm256_add_epi64(_mm256_set1_epi64x(int64_t(first + uint64_t(s + 4 * q))), lane);
      c0[q] = c;
      c1[q] = _mm256_srli_epi64(c, 32);
      c2[q] = c3[q] = _mm256_setzero_si256();
    }
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      const __m256i key0 = _mm256_set1_epi64x(k0), key1 = _mm256_set1_epi64x(k1);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        __m256i p0 = _mm256_mul_epu32(c0[q], m0), p1 = _mm256_mul_epu32(c2[q], m1);
        c0[q] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), c1[q]), key0);
        c2[q] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), c3[q]), key1);
        c1[q] = p1;
        c3[q] = p0;
      }
      k0 += kW0;
      k1 += kW1;
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      __m256i a = _mm256_blend_epi32(c0[q], _mm256_slli_epi64(c1[q], 32), 0xAA);
      __m256i b = _mm256_blend_epi32(c2[q], _mm256_slli_epi64(c3[q], 32), 0xAA);
      __m256i lo = _mm256_unpacklo_epi64(a, b), hi = _mm256_unpackhi_epi64(a, b);  // (a0 b0 a2 b2), (a1 b1 a3 b3)
      _mm256_storeu_si256((__m256i*)(w + 4 * (s + 4 * q)), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256((__m256i*)(w + 4 * (s + 4 * q) + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
}
#else
void philox_block(uint64_t seed, uint64_t first, uint32_t* w) {
  for (int j = 0; j < kBlock; ++j) std::memcpy(w + 4 * j, philox(seed, first + uint64_t(j)).v, 4 * sizeof(uint32_t));
}
#endif
#pragma GCC diagnostic pop

// A draw of t.count values, P per counter (philox.h's layout), a block of kBlock counters at a
// time over the threads: fill(w, dst) writes the block's P * kBlock values from its words (the last,
// partial block through a scratch buffer). cost: per value, in parallel_for's units.
template <int P, class T, class Fill>
void draw(mf_tensor& t, mf_rng& g, int64_t cost, Fill&& fill) {
  constexpr int64_t kValues = int64_t(P) * kBlock;
  int64_t n = t.count, counters = (n + P - 1) / P, blocks = (counters + kBlock - 1) / kBlock;
  uint64_t seed = g.seed, base = g.offset;
  T* p = (T*)t.ptr;
  parallel_for(blocks, cost * kValues, [&](int64_t lo, int64_t hi) {
    alignas(64) uint32_t w[4 * kBlock];
    alignas(64) T scratch[kValues];
    for (int64_t k = lo; k < hi; ++k) {
      philox_block(seed, base + uint64_t(k) * kBlock, w);
      int64_t e0 = k * kValues, m = std::min(kValues, n - e0);
      if (m == kValues) {
        fill(w, p + e0);
      } else {
        fill(w, scratch);
        std::memcpy(p + e0, scratch, size_t(m) * sizeof(T));
      }
    }
  });
  g.offset = base + uint64_t(counters);
}

inline uint64_t u64_at(const uint32_t* w, int64_t i) { return (uint64_t(w[2 * i]) << 32) | w[2 * i + 1]; }

// Box-Muller over a block (box_muller_float / box_muller_double in philox.h): n pairs from u1 in
// (0, 1] and angles t; z[2i] = a + b r cos t, z[2i + 1] = a + b r sin t.
template <class T>
void box_muller_block(T* u1, T* t, int64_t n, T a, T b, T* z) {
  alignas(64) T c[2 * kBlock], s[2 * kBlock];
  vm::log(u1, u1, n);
  vm::cos(t, c, n);
  vm::sin(t, s, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    T r = std::sqrt(T(-2) * u1[i]);
    z[2 * i] = a + b * (r * c[i]);
    z[2 * i + 1] = a + b * (r * s[i]);
  }
}

template <class T>
void dropout_typed(mf_tensor& mask, mf_rng& g, T keep, double cut) {
  draw<kDrawPerCounter32, T>(mask, g, 1, [&](const uint32_t* w, T* m) {
#pragma omp simd
    for (int64_t i = 0; i < 4 * kBlock; ++i) m[i] = double(w[i]) < cut ? T(0) : keep;
  });
}

}  // namespace

void rand_cpu(mf_tensor& t, mf_rng& g, bool normal, double a, double b) {
  const char* op = normal ? "randn" : "rand";
  kcheck::meta(op, "output", t);
  kcheck::float_dtype(op, "output", t);
  kcheck::contiguous(op, "output", t);
  if (t.dtype_id == MF_FLOAT32) {
    if (normal) {
      draw<kDrawPerCounter32, float>(t, g, 6, [&](const uint32_t* w, float* z) {
        constexpr int64_t n = 2 * kBlock;  // pairs
        alignas(64) float u1[n], th[n];
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
          u1[i] = float((w[2 * i] >> 8) + 1) * (1.0f / 16777216.0f);
          th[i] = 6.28318530717958648f * u32_to_unit_float(w[2 * i + 1]);
        }
        box_muller_block<float>(u1, th, n, float(a), float(b), z);
      });
    } else {
      draw<kDrawPerCounter32, float>(t, g, 2, [&](const uint32_t* w, float* z) {
        float hi = float(b);
#pragma omp simd
        for (int64_t i = 0; i < 4 * kBlock; ++i) {
          float v = float(a + (b - a) * double(u32_to_unit_float(w[i])));
          z[i] = v >= hi && b > a ? float(a) : v;  // rounding must not reach the open end
        }
      });
    }
  } else {
    if (normal) {
      draw<kDrawPerCounter64, double>(t, g, 10, [&](const uint32_t* w, double* z) {
        constexpr int64_t n = kBlock;
        alignas(64) double u1[n], th[n];
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
          u1[i] = 1.0 - double(u64_at(w, 2 * i) >> 11) * (1.0 / 9007199254740992.0);
          th[i] = 6.283185307179586477 * (double(u64_at(w, 2 * i + 1) >> 11) * (1.0 / 9007199254740992.0));
        }
        box_muller_block<double>(u1, th, n, a, b, z);
      });
    } else {
      draw<kDrawPerCounter64, double>(t, g, 2, [&](const uint32_t* w, double* z) {
#pragma omp simd
        for (int64_t i = 0; i < 2 * kBlock; ++i) {
          double v = a + (b - a) * (double(u64_at(w, i) >> 11) * (1.0 / 9007199254740992.0));
          z[i] = v >= b && b > a ? a : v;
        }
      });
    }
  }
}

void dropout_mask_cpu(mf_tensor& mask, mf_rng& g, double p) {
  kcheck::meta("dropout_mask", "mask", mask);
  kcheck::float_dtype("dropout_mask", "mask", mask);
  kcheck::contiguous("dropout_mask", "mask", mask);
  if (!(p >= 0 && p <= 1)) fail("dropout_mask: p is ", p, "; expected 0 <= p <= 1");
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0, cut = p * 4294967296.0;  // dropped: word < p 2^32
  MF_DISPATCH_FLOAT(mask.dtype_id, T, "dropout_mask", dropout_typed<T>(mask, g, T(scale), cut));
}

void randint_cpu(mf_tensor& t, mf_rng& g, double low, double high) {
  kcheck::meta("randint", "output", t);
  kcheck::contiguous("randint", "output", t);
  if (!(low < high) || low != std::floor(low) || high != std::floor(high) || std::fabs(low) > 9e15 ||
      std::fabs(high) > 9e15)
    fail("randint: low ", low, " and high ", high, " must be integers with low < high");
  if (t.count > 0) {
    check_value_fits(low, t.dtype_id, "randint");
    check_value_fits(high - 1, t.dtype_id, "randint");
  }
  uint64_t range = uint64_t(high - low);
  int64_t lo64 = int64_t(low);
  MF_DISPATCH(t.dtype_id, T, {
    draw<kDrawPerCounter64, T>(t, g, 2, [&](const uint32_t* w, T* z) {
      for (int64_t i = 0; i < 2 * kBlock; ++i) z[i] = T(lo64 + int64_t(scale_u64(u64_at(w, i), range)));
    });
  });
}

// Fisher-Yates on positions [0, n) of p (philox.h: randperm_partner): serial, so the same
// permutation whatever the thread count. A step's partner depends on its counter alone, not on the
// data, so a chunk's partners are drawn first (Philox in lanes, two steps a counter, scaled by a
// multiply instead of a division), and each swap's random access is prefetched kAhead steps early
// (a large n misses the caches on nearly every swap otherwise).
template <class T>
void shuffle(T* p, int64_t n, uint64_t seed, uint64_t base) {
  for (int64_t i = 0; i < n; ++i) p[i] = T(i + 1);
  constexpr int64_t kSteps = 2 * kBlock, kChunk = 8 * kSteps, kAhead = 16;  // steps a Philox block gives
  alignas(64) uint32_t w[4 * kBlock];
  int64_t partner[kChunk];
  for (int64_t hi = n - 1, lo; hi > 0; hi = lo - 1) {
    lo = std::max<int64_t>(1, hi - hi % kSteps - (kChunk - kSteps));  // steps hi down to lo: whole blocks
    for (int64_t b = lo - lo % kSteps; b <= hi; b += kSteps) {  // blocks of counters base + b / 2 ...
      philox_block(seed, base + uint64_t(b / 2), w);
      int64_t i0 = std::max(b, lo), i1 = std::min(b + kSteps - 1, hi);
      for (int64_t i = i0; i <= i1; ++i)
        partner[i - lo] = int64_t(scale_u64(u64_at(w, i - b), uint64_t(i + 1)));
    }
    for (int64_t i = hi; i >= lo; --i) {
      if (i - kAhead >= lo) __builtin_prefetch(p + partner[i - kAhead - lo], 1);
      std::swap(p[i], p[partner[i - lo]]);
    }
  }
}

void randperm_cpu(mf_tensor& t, mf_rng& g) {
  kcheck::meta("randperm", "output", t);
  kcheck::contiguous("randperm", "output", t);
  if (t.ndim != 1) fail("randperm: output is ", shape_str(t), "; expected 1 dim");
  int64_t n = t.count;
  if (n > 0) check_value_fits(double(n), t.dtype_id, "randperm");
  uint64_t seed = g.seed, base = g.offset;
  // shuffled in place in the output: a swap moves values, so each position ends with T(its start
  // position + 1), rounded as a copy from int64 would (float32 past 2^24)
  MF_DISPATCH(t.dtype_id, T, shuffle((T*)t.ptr, n, seed, base));
  g.offset = base + uint64_t((n + 1) / 2);
}

void multinomial_cpu(mf_tensor& out, mf_rng& g, const mf_tensor& probs, bool replacement) {
  const char* op = "multinomial";
  kcheck::meta(op, "out", out);
  kcheck::meta(op, "probs", probs);
  kcheck::contiguous(op, "out", out);
  kcheck::contiguous(op, "probs", probs);
  kcheck::float_dtype(op, "probs", probs);
  kcheck::dtype(op, "out", out, MF_INT64, " (1-based category indices)");
  if (probs.ndim < 1 || probs.ndim > 2 || out.ndim != probs.ndim || (probs.ndim == 2 && out.shape[0] != probs.shape[0]))
    fail(op, ": probs is ", shape_str(probs), ", out ", shape_str(out), "; expected 1-D or 2-D probs and out of ",
         "(rows, n) or (n)");
  int64_t k = probs.shape[probs.ndim - 1], n = out.shape[out.ndim - 1], rows = probs.ndim == 2 ? probs.shape[0] : 1;
  if (out.count == 0) return;
  // Row r, position j draws from counter offset + r * m + j (m = max(k, n)). Each row is checked
  // where it is drawn (in the parallel loop, where no error may be thrown): a failed row is only
  // counted, and multinomial_check then raises the first one's error (the RNG offset stays put).
  // The weights are read in place (an earlier float64 copy of a 16 MB probs cost more than the draws).
  uint64_t seed = g.seed, base = g.offset, m = uint64_t(std::max(k, n));
  int64_t* dst = (int64_t*)out.ptr;
  MF_DISPATCH_FLOAT(probs.dtype_id, T, op, {
    const T* w = (const T*)probs.ptr;
    std::atomic<int64_t> failed{0};
    parallel_for(rows, k * 8 + n * 16, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc(static_cast<size_t>(replacement ? 4 * k : k));
      std::vector<int64_t> order(replacement ? 0 : static_cast<size_t>(k));
      int64_t bad = 0, r = lo;
      if (replacement) {  // four rows at a time where all four pass
        for (; r + 4 <= hi; r += 4) {
          const T* w4 = w + r * k;
          if (!(multinomial_row_ok(w4, k, n, true) & multinomial_row_ok(w4 + k, k, n, true) &
                multinomial_row_ok(w4 + 2 * k, k, n, true) & multinomial_row_ok(w4 + 3 * k, k, n, true)))
            break;  // the row loop below takes them one by one
          multinomial_rows4(seed, base + uint64_t(r) * m, m, w4, k, n, dst + r * n, acc.data());
        }
      }
      for (; r < hi; ++r) {
        if (!multinomial_row_ok(w + r * k, k, n, replacement)) {
          ++bad;
          continue;
        }
        multinomial_row(seed, base + uint64_t(r) * m, w + r * k, k, n, replacement, dst + r * n, acc, order);
      }
      if (bad) failed.fetch_add(bad, std::memory_order_relaxed);
    });
    if (failed.load()) multinomial_check(op, w, rows, k, n, replacement, probs);
  });
  g.offset = base + uint64_t(rows) * m;
}

}  // namespace mf
