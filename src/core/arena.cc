// BFC arena over a RawMemory source (arena.h): the CPU allocator's bins, splits and merges (BfcPool,
// bfc.h), for memory the host does not address.
#include "arena.h"

namespace mf {

BfcArena::~BfcArena() {
  pool_.for_each_region([this](void* base, size_t) { raw_.free(base); });
}

void* BfcArena::new_region_block(size_t size, size_t asked) {
  size_t bytes = size <= kSmall ? kRegion : (size + kLargeRound - 1) / kLargeRound * kLargeRound;
  void* base = raw_.allocate(bytes);
  if (!base && release_free_regions() > 0) base = raw_.allocate(bytes);  // cached but idle memory first
  if (!base) {
    const AllocatorStats& st = pool_.stats;
    std::string why = name_ + " refused a region of " + std::to_string(bytes) + " bytes (" + raw_.why() + "; " +
                      std::to_string(st.cached) + " bytes cached, " + std::to_string(st.in_use) + " in use)";
    throw OutOfMemory("out of memory on " + name_ + ": " + std::to_string(asked) + " bytes asked; " + why, asked,
                      why);
  }
  return pool_.take_from_region(base, bytes, size);
}

void* BfcArena::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > (size_t(1) << 62))
    throw OutOfMemory("out of memory on " + name_ + ": " + std::to_string(nbytes) +
                          " bytes asked; more than can be addressed",
                      nbytes, "more than can be addressed");
  size_t size = (nbytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(mu_);
  if (char* p = pool_.take(size)) return p;  // best fit; the tail past size stays free
  return new_region_block(size, nbytes);
}

void BfcArena::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  pool_.give(p);  // not ours (or freed twice): ignored
}

size_t BfcArena::release_free_regions() {
  return pool_.release_free_regions([this](void* base, size_t) { raw_.free(base); });
}

size_t BfcArena::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  return release_free_regions();
}

AllocatorStats BfcArena::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.stats;
}

size_t BfcArena::free_blocks() {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.free_blocks();
}

size_t BfcArena::regions() {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.regions();
}

}  // namespace mf
