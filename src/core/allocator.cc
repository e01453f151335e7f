// BFC caching allocator: blocks are carved from large regions; free blocks sit in size bins and
// merge with free neighbours, so a training loop reuses the same memory instead of calling malloc.
#include "allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "error.h"

// Under AddressSanitizer every byte the allocator holds but has not handed out is poisoned: free
// and cached blocks, the unused slab blocks, and the rounding tail of each block past the bytes
// requested. A read or write through a tensor or view past its own bytes is then reported, as it
// would be with one malloc per tensor. Elsewhere the macros cost nothing.
#if defined(__SANITIZE_ADDRESS__)
#define MF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MF_ASAN 1
#endif
#endif
#ifdef MF_ASAN
#include <sanitizer/asan_interface.h>
#define MF_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MF_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MF_POISON(p, n) ((void)(p), (void)(n))
#define MF_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace mf {

// A block of `size` bytes handed out for `nbytes`: exactly the requested bytes become addressable.
static void expose(char* p, size_t nbytes, size_t size) {
  MF_POISON(p, size);  // (the block was poisoned while free; this also clears any partial granule)
  MF_UNPOISON(p, nbytes);
}

CachingAllocator::~CachingAllocator() {
  for (char* s : slabs_) {
    if (s) MF_UNPOISON(s, kSlabBlocks * kAlign);
    std::free(s);
  }
  pool_.for_each_region([](void* base, size_t bytes) {
    MF_UNPOISON(base, bytes);
    std::free(base);
  });
}

void* CachingAllocator::new_region_block(size_t size, size_t asked) {
  size_t bytes = (size + kRegion - 1) / kRegion * kRegion;
  void* base = std::aligned_alloc(kRegion, bytes);
  if (!base) {
    release_free_regions();
    base = std::aligned_alloc(kRegion, bytes);
  }
#if defined(MADV_HUGEPAGE)
  // Transparent huge pages where the system gives them on request ('madvise' mode): a fresh region
  // is first touched by 2 MiB faults, not 4 KiB ones (an eager loop's pool grows to the collector's
  // threshold, 64 MiB, and each 256x256 matmul output cost ~60 page faults until it had), and big
  // operands take fewer TLB misses. Advice only: ignored where unsupported.
  if (base) madvise(base, bytes, MADV_HUGEPAGE);
#endif
  if (!base) {
    std::string why = "the system refused a region of " + std::to_string(bytes) + " bytes (" +
                      std::to_string(pool_.stats.cached) + " bytes already cached)";
    throw OutOfMemory("out of memory: " + std::to_string(asked) + " bytes asked; " + why, asked, why);
  }
  MF_POISON(base, bytes);
  return pool_.take_from_region(base, bytes, size);
}

void* CachingAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > (size_t(1) << 62))
    throw OutOfMemory("out of memory: " + std::to_string(nbytes) + " bytes asked; more than can be addressed", nbytes,
                      "more than can be addressed");
  size_t size = (nbytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(mu_);
  if (size == kAlign && use_slab_)
    if (void* p = slab_allocate(nbytes)) return p;
  char* p = pool_.take(size);  // best fit; the tail past size stays free for later requests
  if (!p) p = static_cast<char*>(new_region_block(size, nbytes));
  expose(p, nbytes, size);
  return p;
}

// The slab holding q, or -1 (lock held): the last slab starting at or below q, if q lies inside it.
int CachingAllocator::slab_of(const char* q) const {
  auto it = std::upper_bound(slab_bases_.begin(), slab_bases_.end(), q,
                             [](const char* p, const std::pair<const char*, int>& e) { return p < e.first; });
  if (it == slab_bases_.begin()) return -1;
  --it;
  return q < it->first + kSlabBlocks * kAlign ? it->second : -1;
}

// (lock held) after a slab is added or given back
void CachingAllocator::index_slabs() {
  slab_bases_.clear();
  for (size_t s = 0; s < slabs_.size(); ++s)
    if (slabs_[s]) slab_bases_.emplace_back(slabs_[s], int(s));
  std::sort(slab_bases_.begin(), slab_bases_.end());
}

// One more slab in the first free slot; its blocks go on the free stack, lowest address on top
// (lock held; leaves the stack unchanged when the system refuses).
void CachingAllocator::add_slab() {
  size_t s = 0;
  while (s < slabs_.size() && slabs_[s]) ++s;
  if (s == kMaxSlabs) return;
  char* slab = static_cast<char*>(std::aligned_alloc(kAlign, kSlabBlocks * kAlign));
  if (!slab) return;
  MF_POISON(slab, kSlabBlocks * kAlign);
  if (s == slabs_.size()) {
    slabs_.push_back(nullptr);
    slab_live_.push_back(0);
    slab_used_.resize(slabs_.size() * kSlabBlocks, false);
  }
  slabs_[s] = slab;
  index_slabs();
  pool_.stats.cached += int64_t(kSlabBlocks * kAlign);
  pool_.stats.system_allocations++;
  for (size_t i = kSlabBlocks; i-- > 0;) slab_free_.push_back(uint32_t(s * kSlabBlocks + i));
}

// A block from the slabs, nullptr when they are full and no more may be added (lock held).
void* CachingAllocator::slab_allocate(size_t nbytes) {
  if (slab_free_.empty()) add_slab();
  if (slab_free_.empty()) return nullptr;
  uint32_t i = slab_free_.back();
  slab_free_.pop_back();
  slab_used_[i] = true;
  slab_live_[i / kSlabBlocks]++;
  AllocatorStats& st = pool_.stats;
  st.in_use += int64_t(kAlign);
  if (st.in_use > st.peak) st.peak = st.in_use;
  st.allocations++;
  st.live_blocks++;
  char* p = slabs_[i / kSlabBlocks] + size_t(i % kSlabBlocks) * kAlign;
  expose(p, nbytes, kAlign);
  return p;
}

void CachingAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  char* q = static_cast<char*>(p);
  int s = slab_of(q);
  if (s >= 0) {
    size_t b = size_t(q - slabs_[s]) / kAlign, i = size_t(s) * kSlabBlocks + b;
    if (!slab_used_[i]) return;  // already freed: ignored like a foreign pointer
    slab_used_[i] = false;
    slab_live_[s]--;
    slab_free_.push_back(uint32_t(i));
    MF_POISON(slabs_[s] + b * kAlign, kAlign);
    pool_.stats.in_use -= int64_t(kAlign);
    pool_.stats.live_blocks--;
    return;
  }
  // not ours (an internal invariant, ignored in release builds) when give() returns 0
  if (size_t size = pool_.give(p)) MF_POISON(q, size);
}

void CachingAllocator::release_free_regions() {
  bool gave_back = false;
  for (size_t s = 0; s < slabs_.size(); ++s) {
    if (!slabs_[s] || slab_live_[s] != 0) continue;
    MF_UNPOISON(slabs_[s], kSlabBlocks * kAlign);
    std::free(slabs_[s]);
    slabs_[s] = nullptr;
    pool_.stats.cached -= int64_t(kSlabBlocks * kAlign);
    gave_back = true;
  }
  if (gave_back) {  // the free stack keeps only blocks of slabs still held
    index_slabs();
    size_t k = 0;
    for (uint32_t i : slab_free_)
      if (slabs_[i / kSlabBlocks]) slab_free_[k++] = i;
    slab_free_.resize(k);
  }
  pool_.release_free_regions([](void* base, size_t bytes) {
    MF_UNPOISON(base, bytes);
    std::free(base);
  });
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_free_regions();
}

AllocatorStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.stats;
}

CachingAllocator& cpu_allocator() {
  static CachingAllocator* a = new CachingAllocator();  // never destroyed: storages may outlive static teardown
  return *a;
}

}  // namespace mf
