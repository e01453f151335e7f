// The same-dtype copy behind copy_cpu (copy.cc), for routines that have already checked their
// operands: src broadcast to dst's shape, one dtype, dst without overlapping elements and not
// sharing memory with src (copy_cpu stages an overlapping source first). copy_run: one run of
// bytes, for every routine that copies contiguous runs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../../core/tensor.h"

namespace mf {

void copy_same_dtype(mf_tensor& dst, const mf_tensor& src);

// concat_cpu's one-pass path: out (contiguous) filled along dim by n inputs that its caller has
// checked to tile it. False, with nothing written, unless out and every input are contiguous, of
// out's dtype and clear of out's memory, and n is at most 64: concat_cpu then copies per input.
bool concat_contiguous(mf_tensor& out, int n, const mf_tensor* const* ins, int dim);

// Copies n bytes between disjoint buffers. When dst lies a little above src modulo 4 KiB (a roll,
// a narrow by a few elements), memcpy's loads keep matching the low address bits of its own recent
// stores (4K aliasing) and ran 4-6x slower: 512-byte blocks loaded whole before they are stored
// leave one aliased load a block, as fast as memcpy at the best alignment.
inline void copy_run(void* dst, const void* src, size_t n) {
  size_t skew = (uintptr_t(dst) - uintptr_t(src)) & 4095;
  if (skew == 0 || skew >= 1024 || n < 2048) {
    std::memcpy(dst, src, n);
    return;
  }
  char* d = (char*)dst;
  const char* s = (const char*)src;
  size_t k = 0;
  for (; k + 512 <= n; k += 512) {
    char block[512];
    std::memcpy(block, s + k, 512);
    std::memcpy(d + k, block, 512);
  }
  std::memcpy(d + k, s + k, n - k);
}

// A routine that writes an output in order, in rows shorter than kPrefetchRowMax bytes (pieces that
// memcpy writes with vector stores), stalls on a fresh eager result: its lines are cold, and each
// store waits for the line's read for ownership. prefetch_ahead, called before each row, asks for the
// lines from kPrefetchAhead bytes past the row's start to as far past its end, never at or past end
// (the routine's own range), each line once (next: where the last call stopped). 1 thread, issue 12:
// two 128 x 128 float32 joined along dim 2 (K.concat into 300 outputs in turn) 6.1-7.0 -> 3.4-3.8 us,
// into one warm output 1.65 -> 1.95 (the prefetches of lines already there); roll of one by 3 along
// dim 2 (K.periodic_copy into 1000 outputs in turn) 4.5 -> 2.6 us, warm 1.57 -> 1.81.
constexpr int64_t kPrefetchRowMax = 4096, kPrefetchAhead = 8192;
inline void prefetch_ahead(const void* row, const void* row_end, const void* end, uintptr_t& next) {
  uintptr_t p = std::max(next, uintptr_t(row) + kPrefetchAhead);  // addresses as integers: no pointer past
  uintptr_t stop = std::min(uintptr_t(end), uintptr_t(row_end) + kPrefetchAhead);  // the buffer is formed
  for (; p < stop; p += 64) __builtin_prefetch(reinterpret_cast<const void*>(p), 1, 3);
  if (p > next) next = p;
}

}  // namespace mf
