// Philox4x32-10 counter-based generator: value i of a draw depends only on (seed, offset + i),
// so results do not depend on the thread count and a GPU can reproduce them.
#pragma once
#include <cstdint>

struct mf_rng {
  uint64_t seed = 0;
  uint64_t offset = 0;  // counters consumed so far; each counter yields four 32-bit words
};

namespace mf {

struct Philox4 {
  uint32_t v[4];
};
Philox4 philox(uint64_t seed, uint64_t counter);
// Uniform in [0, 1) with 24 (float) random bits, from one 32-bit word.
inline float u32_to_unit_float(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
inline double u64_to_unit_double(uint32_t hi, uint32_t lo) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace mf
