// Caching allocator in the BFC manner: size bins, best fit, split on allocate, coalesce on free.
// Memory taken from the system stays cached for reuse until empty_cache(); all methods are thread safe.
// In AddressSanitizer builds, bytes not handed out (free and cached blocks, the rounding tail past
// each request) are poisoned, so an access past a tensor's bytes is reported like a heap overflow.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

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

struct AllocatorStats {
  int64_t in_use = 0;              // bytes handed out and not yet freed (rounded block sizes)
  int64_t peak = 0;                // high-water mark of in_use
  int64_t cached = 0;              // bytes held from the system (in use + free for reuse)
  int64_t allocations = 0;         // allocate() calls that returned memory
  int64_t system_allocations = 0;  // regions taken from the system
  int64_t live_blocks = 0;         // blocks currently in use
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
  struct Chunk {
    char* ptr;
    size_t size;
    bool in_use;
    Chunk* prev;   // neighbours within the same region, by address
    Chunk* next;
    void* region;  // base address of the region the chunk lives in
  };
  struct BySize {
    bool operator()(const Chunk* a, const Chunk* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  static constexpr int kBins = 48;
  static int bin_of(size_t size);
  void insert_free(Chunk* c);
  void erase_free(Chunk* c);
  Chunk* find_best_fit(size_t size);
  Chunk* new_region(size_t size, size_t asked);
  void release_free_regions();
  void* slab_allocate(size_t nbytes);

  std::mutex mu_;
  std::set<Chunk*, BySize> bins_[kBins];
  std::unordered_map<void*, Chunk*> in_use_;
  std::map<void*, size_t> regions_;  // region base -> bytes
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
  AllocatorStats stats_;
};

// The process-wide CPU allocator behind every CPU storage.
CachingAllocator& cpu_allocator();

}  // namespace mf
