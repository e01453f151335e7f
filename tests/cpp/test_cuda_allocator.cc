// The CUDA caching allocator's bookkeeping (src/core/arena.h, the BfcArena the backend puts over
// cudaMalloc) driven by host memory, so it runs without a GPU: hand-computed layouts of best fit,
// splitting, coalescing, region sizes, stats, empty_cache, a source that refuses (out of memory,
// and the retry after giving idle regions back), and a random stress checking that live blocks
// never overlap and that everything returns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/arena.h"

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kBlock = 512;  // the arena's granularity, spelled out independently

uintptr_t addr(void* p) { return reinterpret_cast<uintptr_t>(p); }

// Host memory standing in for cudaMalloc: records every region, can be told to refuse.
class HostRaw final : public mf::RawMemory {
 public:
  void* allocate(size_t nbytes) override {
    asked.push_back(nbytes);
    if (refuse_above && live_bytes + nbytes > refuse_above) return nullptr;
    void* p = std::aligned_alloc(4096, nbytes);
    live[p] = nbytes;
    live_bytes += nbytes;
    return p;
  }
  void free(void* p) override {
    REQUIRE(live.count(p) == 1);  // only regions it handed out, once each
    live_bytes -= live[p];
    live.erase(p);
    freed++;
    std::free(p);
  }
  std::string why() override { return "host test source is full"; }

  std::vector<size_t> asked;
  std::map<void*, size_t> live;
  size_t live_bytes = 0, refuse_above = 0;
  int freed = 0;
};

}  // namespace

TEST_CASE("cuda arena: small requests share a 2 MiB region, split in address order", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  void* p = a.allocate(100);   // one block of 512
  void* q = a.allocate(1000);  // two blocks
  void* r = a.allocate(512);
  REQUIRE(raw.asked == std::vector<size_t>{2 * kMiB});
  CHECK(addr(p) % kBlock == 0);
  CHECK(addr(q) == addr(p) + kBlock);
  CHECK(addr(r) == addr(q) + 2 * kBlock);
  mf::AllocatorStats s = a.stats();
  CHECK(s.in_use == int64_t(4 * kBlock));
  CHECK(s.cached == int64_t(2 * kMiB));
  CHECK(s.live_blocks == 3);
  CHECK(s.allocations == 3);
  CHECK(s.system_allocations == 1);
  CHECK(a.allocate(0) == nullptr);
  a.free(p);
  a.free(q);
  a.free(r);
  CHECK(a.stats().in_use == 0);
  CHECK(a.stats().peak == int64_t(4 * kBlock));
  CHECK(a.free_blocks() == 1);  // all three merged with the region's free tail
}

TEST_CASE("cuda arena: best fit picks the smallest hole, and a freed block is reused at once", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  void* p1 = a.allocate(4 * kBlock);
  void* sep1 = a.allocate(kBlock);
  void* p2 = a.allocate(2 * kBlock);
  void* sep2 = a.allocate(kBlock);
  a.free(p1);  // a hole of 4 blocks
  a.free(p2);  // a hole of 2 blocks
  void* x = a.allocate(2 * kBlock);
  CHECK(x == p2);  // the 2-block hole, not the 4-block one nor the tail
  void* y = a.allocate(3 * kBlock);
  CHECK(y == p1);  // splits the 4-block hole
  void* z = a.allocate(kBlock);
  CHECK(addr(z) == addr(p1) + 3 * kBlock);  // the rest of that hole
  for (void* v : {sep1, sep2, x, y, z}) a.free(v);
  CHECK(a.free_blocks() == 1);
  CHECK(a.stats().live_blocks == 0);
}

TEST_CASE("cuda arena: coalescing with both neighbours", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  void* p = a.allocate(kBlock);
  void* q = a.allocate(kBlock);
  void* r = a.allocate(kBlock);
  void* keep = a.allocate(kBlock);  // keeps the tail apart from r
  a.free(p);
  a.free(r);
  CHECK(a.free_blocks() == 3);  // p, r, the tail
  a.free(q);                    // merges p, q, r into one
  CHECK(a.free_blocks() == 2);
  void* big = a.allocate(3 * kBlock);
  CHECK(big == p);
  a.free(big);
  a.free(keep);
  CHECK(a.free_blocks() == 1);
}

TEST_CASE("cuda arena: large requests get a region of their own, rounded to 2 MiB", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  void* big = a.allocate(5 * kMiB + 1);
  REQUIRE(raw.asked == std::vector<size_t>{6 * kMiB});
  void* small = a.allocate(10);  // the big region's tail (1 MiB - 512) serves it
  CHECK(raw.asked.size() == 1);
  CHECK(addr(small) == addr(big) + 5 * kMiB + kBlock);
  a.free(small);
  a.free(big);
  CHECK(a.regions() == 1);
  CHECK(a.empty_cache() == 6 * kMiB);
  CHECK(a.regions() == 0);
  CHECK(a.stats().cached == 0);
  CHECK(raw.live.empty());
}

TEST_CASE("cuda arena: empty_cache gives back only wholly free regions", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  void* p = a.allocate(3 * kMiB);  // region A (4 MiB)
  void* q = a.allocate(3 * kMiB);  // region B (4 MiB): A's 1 MiB tail is too small
  REQUIRE(raw.asked.size() == 2);
  a.free(q);
  CHECK(a.empty_cache() == 4 * kMiB);
  CHECK(raw.freed == 1);
  CHECK(a.stats().cached == int64_t(4 * kMiB));
  CHECK(a.stats().in_use == int64_t(3 * kMiB));
  a.free(p);
  a.empty_cache();
  CHECK(raw.live.empty());
  a.free(p);  // freed twice: ignored
  int x = 0;
  a.free(&x);  // not the arena's: ignored
  CHECK(a.stats().in_use == 0);
}

TEST_CASE("cuda arena: a refusing source is out of memory, after idle regions are given back", "[cuda_allocator]") {
  HostRaw raw;
  mf::BfcArena a(raw, "cuda");
  raw.refuse_above = 10 * kMiB;
  void* p = a.allocate(4 * kMiB);
  void* q = a.allocate(4 * kMiB);
  a.free(q);  // 4 MiB idle in the cache
  // a 6 MiB region does not fit beside the 8 held: the arena gives the idle one back and asks again
  void* r = a.allocate(5 * kMiB);
  CHECK(r != nullptr);
  CHECK(raw.freed == 1);
  try {
    a.allocate(7 * kMiB);
    FAIL("expected OutOfMemory");
  } catch (const mf::OutOfMemory& e) {
    std::string m = e.what();
    CHECK(m.find("out of memory on cuda") != std::string::npos);
    CHECK(m.find(std::to_string(7 * kMiB)) != std::string::npos);
    CHECK(m.find("host test source is full") != std::string::npos);
    CHECK(e.bytes() == 7 * kMiB);
  }
  CHECK_THROWS_AS(a.allocate(size_t(1) << 63), mf::OutOfMemory);
  a.free(p);
  a.free(r);
  // the arena still works after refusals
  void* s = a.allocate(kBlock);
  CHECK(s != nullptr);
  a.free(s);
}

TEST_CASE("cuda arena: random stress keeps live blocks disjoint and returns everything", "[cuda_allocator]") {
  HostRaw raw;
  std::vector<std::pair<uintptr_t, size_t>> live;  // address, bytes asked
  {
    mf::BfcArena a(raw, "cuda");
    std::mt19937 rng(7);
    std::vector<void*> ptrs;
    int64_t asked_in_use = 0;
    for (int i = 0; i < 20000; ++i) {
      if (ptrs.empty() || (ptrs.size() < 300 && rng() % 2 == 0)) {
        size_t n = rng() % 16 == 0 ? 1 + rng() % (3 * kMiB) : 1 + rng() % 8192;
        void* p = a.allocate(n);
        REQUIRE(addr(p) % kBlock == 0);
        ptrs.push_back(p);
        live.push_back({addr(p), n});
        asked_in_use += int64_t((n + kBlock - 1) / kBlock * kBlock);
      } else {
        size_t k = rng() % ptrs.size();
        asked_in_use -= int64_t((live[k].second + kBlock - 1) / kBlock * kBlock);
        a.free(ptrs[k]);
        ptrs[k] = ptrs.back();
        ptrs.pop_back();
        live[k] = live.back();
        live.pop_back();
      }
      if (i % 1000 == 999) {
        std::vector<std::pair<uintptr_t, size_t>> s = live;
        std::sort(s.begin(), s.end());
        for (size_t j = 1; j < s.size(); ++j) REQUIRE(s[j - 1].first + s[j - 1].second <= s[j].first);
        REQUIRE(a.stats().in_use == asked_in_use);
        REQUIRE(a.stats().live_blocks == int64_t(ptrs.size()));
      }
    }
    for (void* p : ptrs) a.free(p);
    CHECK(a.stats().in_use == 0);
    CHECK(a.free_blocks() == a.regions());  // each region is one free block again
    a.empty_cache();
    CHECK(raw.live.empty());
  }
}

TEST_CASE("cuda arena: the destructor returns regions still in use", "[cuda_allocator]") {
  HostRaw raw;
  {
    mf::BfcArena a(raw, "cuda");
    a.allocate(100);
    a.allocate(3 * kMiB);
  }
  CHECK(raw.live.empty());
}
