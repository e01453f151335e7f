// The bookkeeping that both caching allocators share (the CPU one in allocator.h, the device arena in
// arena.h): regions carved into blocks, free blocks in size bins, best fit, split on take, coalesce on give.
// Not thread safe and never touches the memory: the owner holds its lock, gets regions from its source
// (aligned_alloc, cudaMalloc), poisons or not, and words its own out-of-memory message. allocator.h
// includes this header (AllocatorStats, the statistics every allocator reports, is defined here).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>

namespace mf {

struct AllocatorStats {
  int64_t in_use = 0;              // bytes handed out and not yet freed (rounded block sizes)
  int64_t peak = 0;                // high-water mark of in_use
  int64_t cached = 0;              // bytes held from the system (in use + free for reuse)
  int64_t allocations = 0;         // allocate() calls that returned memory
  int64_t system_allocations = 0;  // regions taken from the system
  int64_t live_blocks = 0;         // blocks currently in use
};

// Align: block granularity (every size handed in is a multiple of it); Bins: power-of-two size classes.
template <size_t Align, int Bins>
class BfcPool {
 public:
  BfcPool() = default;
  ~BfcPool() {  // the chunk records only: the owner gives the regions back (for_each_region)
    for (auto& bin : bins_)
      for (Chunk* c : bin) delete c;
    for (auto& [p, c] : in_use_) delete c;
  }
  BfcPool(const BfcPool&) = delete;
  BfcPool& operator=(const BfcPool&) = delete;

  // A block of `size` bytes (a multiple of Align) from the free blocks, the smallest that fits (lowest
  // address among equals); the tail past size stays free. nullptr when none fits.
  char* take(size_t size) {
    Chunk key{nullptr, size, false, nullptr, nullptr, nullptr};
    for (int b = bin_of(size); b < Bins; ++b) {
      auto it = bins_[b].lower_bound(&key);
      if (it != bins_[b].end()) {
        Chunk* c = *it;
        bins_[b].erase(it);
        return hand_out(c, size);
      }
    }
    return nullptr;
  }
  // Adds a region of `bytes` at base, fresh from the source, and takes `size` bytes from its start.
  char* take_from_region(void* base, size_t bytes, size_t size) {
    regions_[base] = bytes;
    stats.cached += int64_t(bytes);
    stats.system_allocations++;
    return hand_out(new Chunk{static_cast<char*>(base), bytes, false, nullptr, nullptr, base}, size);
  }
  // Returns a block from take(): merges it with free neighbours and bins it. Returns its size, or 0 for
  // a pointer that is not a block in use (foreign, or freed twice), which is left alone.
  size_t give(void* p) {
    auto it = in_use_.find(p);
    if (it == in_use_.end()) return 0;
    Chunk* c = it->second;
    in_use_.erase(it);
    size_t size = c->size;
    c->in_use = false;
    stats.in_use -= int64_t(size);
    stats.live_blocks--;
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
    return size;
  }
  // Drops every wholly free region, calling release(base, bytes) for each; returns the bytes dropped.
  template <class Release>
  size_t release_free_regions(Release&& release) {
    size_t freed = 0;
    for (auto& bin : bins_) {
      for (auto it = bin.begin(); it != bin.end();) {
        Chunk* c = *it;
        if (!c->prev && !c->next) {  // the chunk spans its whole region
          regions_.erase(c->region);
          stats.cached -= int64_t(c->size);
          freed += c->size;
          release(c->region, c->size);
          delete c;
          it = bin.erase(it);
        } else {
          ++it;
        }
      }
    }
    return freed;
  }
  // Calls f(base, bytes) for every region held, free or not (for the owner's destructor).
  template <class F>
  void for_each_region(F&& f) const {
    for (auto& [base, bytes] : regions_) f(base, bytes);
  }
  size_t free_blocks() const {
    size_t n = 0;
    for (auto& bin : bins_) n += bin.size();
    return n;
  }
  size_t regions() const { return regions_.size(); }

  // in_use, peak, allocations and live_blocks of the blocks handed out, cached and system_allocations
  // of the regions; an owner with memory of its own beside the pool (the CPU slabs) adds to them.
  AllocatorStats stats;

 private:
  struct Chunk {
    char* ptr;
    size_t size;
    bool in_use;
    Chunk* prev;  // neighbours within the same region, by address
    Chunk* next;
    void* region;  // base address of the region the chunk lives in
  };
  struct BySize {
    bool operator()(const Chunk* a, const Chunk* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  static int bin_of(size_t size) {
    int b = 0;
    size_t s = size / Align;
    while (s > 1 && b < Bins - 1) {
      s >>= 1;
      ++b;
    }
    return b;
  }
  void insert_free(Chunk* c) { bins_[bin_of(c->size)].insert(c); }
  void erase_free(Chunk* c) { bins_[bin_of(c->size)].erase(c); }
  // c (out of the bins) goes in use for size bytes; a tail of Align or more is split off and binned.
  char* hand_out(Chunk* c, size_t size) {
    if (c->size - size >= Align) {
      Chunk* rest = new Chunk{c->ptr + size, c->size - size, false, c, c->next, c->region};
      if (c->next) c->next->prev = rest;
      c->next = rest;
      c->size = size;
      insert_free(rest);
    }
    c->in_use = true;
    in_use_[c->ptr] = c;
    stats.in_use += int64_t(c->size);
    if (stats.in_use > stats.peak) stats.peak = stats.in_use;
    stats.allocations++;
    stats.live_blocks++;
    return c->ptr;
  }

  std::set<Chunk*, BySize> bins_[Bins];
  std::unordered_map<void*, Chunk*> in_use_;
  std::map<void*, size_t> regions_;  // region base -> bytes
};

}  // namespace mf
