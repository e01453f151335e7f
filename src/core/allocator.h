// Caching allocator in the BFC manner: size bins, best fit, split on allocate, coalesce on free.
// Memory taken from the system stays cached for reuse until empty_cache(); all methods are thread safe.
// In AddressSanitizer builds, bytes not handed out (free and cached blocks, the rounding tail past
// each request) are poisoned, so an access past a tensor's bytes is reported like a heap overflow.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "bfc.h"  // BfcPool, AllocatorStats
#include "error.h"

namespace mf {

// Thrown when memory cannot be had: an mf::Error (so hosts catching mf::Error see it) whose message,
// "out of memory: ...", says how many bytes were asked; the C boundary maps it to MF_ERR_MEMORY.
class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& message, size_t bytes, const std::string& reason = std::string())
      : Error(message), bytes_(bytes), reason_(reason) {}
  size_t bytes() const noexcept { return bytes_; }  // the request that failed; SIZE_MAX if beyond size_t
  // Why it failed ("the system refused ..."), for a caller that rewords the request in its own terms.
  const std::string& reason() const noexcept { return reason_; }

 private:
  size_t bytes_;
  std::string reason_;
};

class CachingAllocator {
 public:
  static constexpr size_t kAlign = 256;          // every block is a multiple of this and aligned to it
  static constexpr size_t kRegion = 2u << 20;    // smallest region requested from the system
  static constexpr size_t kSlabBlocks = 4096;    // blocks in one small-block slab (1 MiB)
  static constexpr size_t kMaxSlabs = 32;        // slabs at most (32 MiB of scalars); then the BFC path

  // small_slab: serve single-kAlign requests from the slab below (the process allocator does;
  // tests of the BFC geometry turn it off).
  explicit CachingAllocator(bool small_slab = true) : use_slab_(small_slab) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns nbytes of 256-aligned memory, nullptr for 0 bytes; throws OutOfMemory when the system refuses.
  void* allocate(size_t nbytes);
  // Returns a block from allocate() to the cache; nullptr is ignored.
  void free(void* p);
  // Gives every wholly free region back to the system.
  void empty_cache();
  AllocatorStats stats();

 private:
  void* new_region_block(size_t size, size_t asked);  // a fresh region, size bytes taken from it
  void release_free_regions();
  void* slab_allocate(size_t nbytes);

  std::mutex mu_;
  BfcPool<kAlign, 48> pool_;  // its stats also count the slabs below
  // Single-kAlign blocks (scalars, 1-element results) come from slabs with one free stack and an
  // in-use bitmap: allocate and free cost a pop/push and a bit flip instead of a split, set and
  // hash-map updates and Chunk new/delete, which makes creating a scalar tensor about 3x cheaper.
  // How many scalars are alive at once depends on when Lua's collector runs (thousands in an eager
  // loop), so slabs are added as needed, up to kMaxSlabs; block i lives in slab i / kSlabBlocks.
  // empty_cache() gives back every slab none of whose blocks is in use.
  int slab_of(const char* q) const;  // the slab holding q, or -1
  void add_slab();
  void index_slabs();  // rebuilds slab_bases_ from slabs_
  bool use_slab_;
  std::vector<char*> slabs_;            // slot s: slab s, or nullptr once given back
  std::vector<uint32_t> slab_free_;     // free block indices (slot * kSlabBlocks + block)
  std::vector<bool> slab_used_;         // per block index
  std::vector<uint32_t> slab_live_;     // blocks in use per slot
  // (base, slot) of each held slab, sorted by base: free() finds a pointer's slab by binary search
  // (it scanned every slab, for every free, slab or not)
  std::vector<std::pair<const char*, int>> slab_bases_;
};

// The process-wide CPU allocator behind every CPU storage.
CachingAllocator& cpu_allocator();

}  // namespace mf
