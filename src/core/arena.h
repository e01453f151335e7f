// A best-fit-with-coalescing (BFC) arena over an abstract source of raw memory: the bookkeeping of
// a device's caching allocator (the CUDA one draws its regions from cudaMalloc) kept apart from
// the memory itself, so that a CPU test drives the same bins, splits and merges with host memory
// (tests/cpp/test_cuda_allocator.cc). The bookkeeping is the CPU allocator's: one BfcPool (bfc.h)
// serves both; the arena adds the source and has no scalar slabs. Requests round up to kAlign; free
// blocks sit in size bins, best fit first; the tail of a block larger than asked is split off and
// stays free; a freed block merges with free neighbours of its region; regions go back to the source
// only in empty_cache() (or when the source refuses a new region: the arena then gives back what is
// wholly free and asks once more).
//
// Ordering: the arena hands a freed block to the next request at once. For device memory that is
// safe when all work using the memory runs in issue order on one stream (the CUDA backend's
// compute stream): work queued before the free has run before any work queued after it, which is
// the only work that can receive the block. The host never touches the memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "allocator.h"
#include "bfc.h"

namespace mf {

// Where an arena's regions come from. allocate returns nullptr when the memory is not there
// (never throws for that); why() then says why, for the out-of-memory message.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void free(void* p) = 0;
  virtual std::string why() { return "the system refused"; }
};

class BfcArena {
 public:
  static constexpr size_t kAlign = 512;        // block granularity and alignment (cudaMalloc gives 256+)
  static constexpr size_t kSmall = 1u << 20;   // requests up to this share kRegion-sized regions
  static constexpr size_t kRegion = 2u << 20;  // smallest region asked of the source
  static constexpr size_t kLargeRound = 2u << 20;  // a larger request's own region rounds up to this

  // name: the device, for messages ("out of memory on cuda: ...").
  BfcArena(RawMemory& raw, std::string name) : raw_(raw), name_(std::move(name)) {}
  ~BfcArena();  // gives every region back to the source, in use or not
  BfcArena(const BfcArena&) = delete;
  BfcArena& operator=(const BfcArena&) = delete;

  // nbytes of kAlign-aligned memory, nullptr for 0 bytes; throws OutOfMemory when the source has none.
  void* allocate(size_t nbytes);
  // Returns a block from allocate(); nullptr and pointers it did not hand out are ignored.
  void free(void* p);
  // Gives every wholly free region back to the source; returns how many bytes went back.
  size_t empty_cache();
  AllocatorStats stats();
  // Introspection for tests: the number of free blocks, and the number of regions held.
  size_t free_blocks();
  size_t regions();

 private:
  void* new_region_block(size_t size, size_t asked);  // a fresh region, size bytes taken from it
  size_t release_free_regions();

  RawMemory& raw_;
  std::string name_;
  std::mutex mu_;
  BfcPool<kAlign, 40> pool_;
};

}  // namespace mf
