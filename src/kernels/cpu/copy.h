// The same-dtype copy behind copy_cpu (copy.cc), for routines that have already checked their
// operands: src broadcast to dst's shape, one dtype, dst without overlapping elements and not
// sharing memory with src (copy_cpu stages an overlapping source first). copy_run: one run of
// bytes, for every routine that copies contiguous runs.
#pragma once
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

}  // namespace mf
