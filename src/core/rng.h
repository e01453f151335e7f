// Philox4x32-10 counter-based generator: value i of a draw depends only on (seed, offset + i / P),
// P values per counter (philox.h's element layout),
// so results do not depend on the thread count and a GPU can reproduce them (the round function
// and the conversions: philox.h, compiled by g++ and nvcc alike).
#pragma once
#include <cstdint>

#include "philox.h"

struct mf_rng {
  uint64_t seed = 0;
  uint64_t offset = 0;  // counters consumed so far; each counter yields four 32-bit words
};
