// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// conversions of its words to floats: one definition that g++ (rng.h, the CPU draws) and nvcc (the
// CUDA draws) both compile, so mf.manual_seed(s) gives the same numbers on every device.
// Counter layout: a counter's low word is c0, its high word c1 (c2 = c3 = 0), under the key
// (seed low, seed high); which counter each value of a draw reads: the element layout below.
#pragma once
#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MF_PHILOX_HD __host__ __device__ __forceinline__
#else
#define MF_PHILOX_HD inline
#endif

namespace mf {

struct Philox4 {
  uint32_t v[4];
};

MF_PHILOX_HD Philox4 philox(uint64_t seed, uint64_t counter) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n1 = uint32_t(p1);
    uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1, n3 = uint32_t(p0);
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 (float) random bits, from one 32-bit word.
MF_PHILOX_HD float u32_to_unit_float(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
// Uniform in [0, 1) with 53 random bits, from two words.
MF_PHILOX_HD double u64_to_unit_double(uint32_t hi, uint32_t lo) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}
// The 64-bit integer of a counter's first two words.
MF_PHILOX_HD uint64_t u64_of(const Philox4& r) { return (uint64_t(r.v[0]) << 32) | r.v[1]; }

// -- how a draw spends its counters (the element layout) ----------------------------------------
// rand, randn, randint and dropout_mask take P values from each counter: a draw of n values from
// offset o reads counters o .. o + ceil(n / P) - 1, leaves the offset at o + ceil(n / P), and
// element e reads counter o + e / P:
//   P = 4  rand float32: word e % 4, 24 bits (u32_to_unit_float); dropout_mask: word e % 4, the
//          element is dropped when word < p * 2^32; randn float32: Box-Muller on the word pair
//          (2h, 2h + 1), h = (e % 4) / 2, elements 4j + 2h and 4j + 2h + 1 (box_muller_float)
//   P = 2  rand float64: words (2h, 2h + 1), h = e % 2 (u64_to_unit_double); randint: the 64-bit
//          integer of those words scaled to the range (scale_u64); randn float64: Box-Muller on u1
//          from words (0, 1) and u2 from words (2, 3), elements 2j and 2j + 1 (box_muller_double)
// Box-Muller: r = sqrt(-2 log u1) with u1 in (0, 1], t = 2 pi u2 with u2 in [0, 1); the even
// element is r cos t, the odd one r sin t. The functions below are the definition; the CPU
// computes the same in vector lanes (src/kernels/cpu/sample.cc) with the build's vector math,
// within a few ulps of these scalar forms (bit-equal for rand, randint and dropout_mask).
// (Until 2026-11-25 every element took a whole counter: one word for rand float32, Box-Muller's
// cosine alone from four words for randn; the same seed gives other numbers since.)
constexpr int kDrawPerCounter32 = 4;  // float32 rand / randn, dropout_mask
constexpr int kDrawPerCounter64 = 2;  // float64 rand / randn, randint

// (r cos t, r sin t) from two words, in float: u1 = (w0 >> 8) + 1 over 2^24, u2 from w1's top 24 bits
MF_PHILOX_HD void box_muller_float(uint32_t w0, uint32_t w1, float* z) {
  float u1 = float((w0 >> 8) + 1) * (1.0f / 16777216.0f);
  float t = 6.28318530717958648f * u32_to_unit_float(w1);
  float r = sqrtf(-2.0f * logf(u1));
  z[0] = r * cosf(t);
  z[1] = r * sinf(t);
}
// (r cos t, r sin t) from four words, in double: u1 = 1 - u64_to_unit_double(w0, w1), u2 from (w2, w3)
MF_PHILOX_HD void box_muller_double(const Philox4& q, double* z) {
  double u1 = 1.0 - u64_to_unit_double(q.v[0], q.v[1]);
  double t = 6.283185307179586477 * u64_to_unit_double(q.v[2], q.v[3]);
  double r = sqrt(-2.0 * log(u1));
  z[0] = r * cos(t);
  z[1] = r * sin(t);
}
// floor(x * range / 2^64): an integer in [0, range), biased by at most range / 2^64 (as x % range
// is, without the division)
MF_PHILOX_HD uint64_t scale_u64(uint64_t x, uint64_t range) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(x, range);
#else
  return uint64_t((unsigned __int128)x * range >> 64);
#endif
}

// randperm(n) from offset o: Fisher-Yates from the last position down; step i (n - 1 down to 1,
// 0-based) swaps positions i and randperm_partner(seed, o, i), an integer in [0, i]: element i of a
// P = 2 draw (counter o + i / 2, words (2h, 2h + 1), h = i % 2) scaled to i + 1 (scale_u64). The
// offset is left at o + ceil(n / 2). The CPU draws the same words in vector lanes, a chunk ahead.
// (Until 2026-11-27 step i took the first two words of counter o + i and x % (i + 1), the offset
// moved by n: the same seed gives other permutations since.)
MF_PHILOX_HD uint64_t randperm_partner(uint64_t seed, uint64_t offset, uint64_t i) {
  Philox4 r = philox(seed, offset + i / 2);
  int h = int(i % 2);
  return scale_u64((uint64_t(r.v[2 * h]) << 32) | r.v[2 * h + 1], i + 1);
}

}  // namespace mf
