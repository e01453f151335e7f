// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) and the
// conversions of its words to floats: one definition that g++ (rng.h, the CPU draws) and nvcc (the
// CUDA draws) both compile, so mf.manual_seed(s) gives the same numbers on every device.
// Counter layout: value i of a draw reads counter offset + i (low word c0, high word c1; c2 = c3 = 0)
// under the key (seed low, seed high).
#pragma once
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
// The 64-bit integer of a draw's first two words (randint, randperm, multinomial).
MF_PHILOX_HD uint64_t u64_of(const Philox4& r) { return (uint64_t(r.v[0]) << 32) | r.v[1]; }

}  // namespace mf
