// BFC arena over a RawMemory source (arena.h): the CPU allocator's bins, splits and merges, for
// memory the host does not address.
#include "arena.h"

namespace mf {

BfcArena::~BfcArena() {
  for (auto& [base, bytes] : regions_) raw_.free(base);
  for (auto& bin : bins_)
    for (Chunk* c : bin) delete c;
  for (auto& [p, c] : in_use_) delete c;
}

int BfcArena::bin_of(size_t size) {
  int b = 0;
  size_t s = size / kAlign;
  while (s > 1 && b < kBins - 1) {
    s >>= 1;
    ++b;
  }
  return b;
}

BfcArena::Chunk* BfcArena::find_best_fit(size_t size) {
  Chunk key{nullptr, size, false, nullptr, nullptr, nullptr};
  for (int b = bin_of(size); b < kBins; ++b) {
    auto it = bins_[b].lower_bound(&key);
    if (it != bins_[b].end()) return *it;  // smallest chunk >= size in the smallest bin that has one
  }
  return nullptr;
}

BfcArena::Chunk* BfcArena::new_region(size_t size, size_t asked) {
  size_t bytes = size <= kSmall ? kRegion : (size + kLargeRound - 1) / kLargeRound * kLargeRound;
  void* base = raw_.allocate(bytes);
  if (!base && release_free_regions() > 0) base = raw_.allocate(bytes);  // cached but idle memory first
  if (!base) {
    std::string why = name_ + " refused a region of " + std::to_string(bytes) + " bytes (" + raw_.why() + "; " +
                      std::to_string(stats_.cached) + " bytes cached, " + std::to_string(stats_.in_use) + " in use)";
    throw OutOfMemory("out of memory on " + name_ + ": " + std::to_string(asked) + " bytes asked; " + why, asked,
                      why);
  }
  regions_[base] = bytes;
  stats_.cached += int64_t(bytes);
  stats_.system_allocations++;
  return new Chunk{static_cast<char*>(base), bytes, false, nullptr, nullptr, base};
}

void* BfcArena::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > (size_t(1) << 62))
    throw OutOfMemory("out of memory on " + name_ + ": " + std::to_string(nbytes) +
                          " bytes asked; more than can be addressed",
                      nbytes, "more than can be addressed");
  size_t size = (nbytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* c = find_best_fit(size);
  if (c) erase_free(c);
  else c = new_region(size, nbytes);
  if (c->size - size >= kAlign) {  // split: the tail stays free for later requests
    Chunk* rest = new Chunk{c->ptr + size, c->size - size, false, c, c->next, c->region};
    if (c->next) c->next->prev = rest;
    c->next = rest;
    c->size = size;
    insert_free(rest);
  }
  c->in_use = true;
  in_use_[c->ptr] = c;
  stats_.in_use += int64_t(c->size);
  if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
  stats_.allocations++;
  stats_.live_blocks++;
  return c->ptr;
}

void BfcArena::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(p);
  if (it == in_use_.end()) return;  // not ours (or freed twice): ignored
  Chunk* c = it->second;
  in_use_.erase(it);
  c->in_use = false;
  stats_.in_use -= int64_t(c->size);
  stats_.live_blocks--;
  if (c->prev && !c->prev->in_use) {  // coalesce with the free block before
    Chunk* pr = c->prev;
    erase_free(pr);
    pr->size += c->size;
    pr->next = c->next;
    if (c->next) c->next->prev = pr;
    delete c;
    c = pr;
  }
  if (c->next && !c->next->in_use) {  // and with the free block after
    Chunk* nx = c->next;
    erase_free(nx);
    c->size += nx->size;
    c->next = nx->next;
    if (nx->next) nx->next->prev = c;
    delete nx;
  }
  insert_free(c);
}

size_t BfcArena::release_free_regions() {
  size_t freed = 0;
  for (auto& bin : bins_) {
    for (auto it = bin.begin(); it != bin.end();) {
      Chunk* c = *it;
      if (!c->prev && !c->next) {  // the chunk spans its whole region
        regions_.erase(c->region);
        stats_.cached -= int64_t(c->size);
        freed += c->size;
        raw_.free(c->region);
        delete c;
        it = bin.erase(it);
      } else {
        ++it;
      }
    }
  }
  return freed;
}

size_t BfcArena::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  return release_free_regions();
}

AllocatorStats BfcArena::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t BfcArena::free_blocks() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto& bin : bins_) n += bin.size();
  return n;
}

size_t BfcArena::regions() {
  std::lock_guard<std::mutex> lock(mu_);
  return regions_.size();
}

}  // namespace mf
