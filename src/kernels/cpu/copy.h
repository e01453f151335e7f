// The same-dtype copy behind copy_cpu (copy.cc), for routines that have already checked their
// operands: src broadcast to dst's shape, one dtype, dst without overlapping elements and not
// sharing memory with src (copy_cpu stages an overlapping source first). copy_run: one run of
// bytes, for every routine that copies contiguous runs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "../../core/tensor.h"

namespace mf {

void copy_same_dtype(mf_tensor& dst, const mf_tensor& src);

// concat_cpu's one-pass path: out (contiguous) filled along dim by n inputs that its caller has
// checked to tile it. False, with nothing written, unless out and every input are contiguous, of
// out's dtype and clear of out's memory, and n is at most 64: concat_cpu then copies per input.
bool concat_contiguous(mf_tensor& out, int n, const mf_tensor* const* ins, int dim);

// Runs of [kVecRunMin, kVecRunMax) bytes: copy_vec's loop, not a call of memcpy (below).
constexpr size_t kVecRunMin = 512, kVecRunMax = 2048;

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Copies n bytes (n >= 64) between disjoint buffers inline, 256 bytes a turn loaded whole before
// they are stored, then 64 at a time, the last partial 64 by masked moves. For runs of 512 B to
// 2 KiB a call of glibc's memcpy lost to it (Zen 5, 1 thread, CPU time, 128 KB copied in pieces of
// two interleaved sources as concat along dim 2 does: 512 B pieces warm 1.84 -> 1.38 us, into
// outputs in turn (cold) 5.6 -> 5.1; 1 KiB warm 1.9 -> 1.35, cold 6.9 -> 4.8. In moonflow, K-level,
// 128 x 128 float32: concat along dim 2 1.98 -> 1.75 us, index_select 1.05 -> 0.89). Not from
// 2 KiB: K.copy of a 1024 x 1024 narrow to 512 columns (2 KiB rows, L3-resident) lost 9% with it;
// from 4 KiB memcpy's string moves write cold lines without reading them first (8 KiB pieces cold
// 3.8 us against 4.7, 64 KiB 2.9 against 5.0); under 512 B the two tie. A dst a little above src
// modulo 4 KiB costs one aliased load a turn (see copy_run).
inline void copy_vec(void* dst, const void* src, size_t n) {
  char* d = (char*)dst;
  const char* s = (const char*)src;
  size_t k = 0;
  for (; k + 256 <= n; k += 256) {
    const __m512i a0 = _mm512_loadu_si512(s + k), a1 = _mm512_loadu_si512(s + k + 64);
    const __m512i a2 = _mm512_loadu_si512(s + k + 128), a3 = _mm512_loadu_si512(s + k + 192);
    _mm512_storeu_si512(d + k, a0);
    _mm512_storeu_si512(d + k + 64, a1);
    _mm512_storeu_si512(d + k + 128, a2);
    _mm512_storeu_si512(d + k + 192, a3);
  }
  for (; k + 64 <= n; k += 64) _mm512_storeu_si512(d + k, _mm512_loadu_si512(s + k));
  if (k < n) {
    const __mmask64 m = _bzhi_u64(~uint64_t(0), unsigned(n - k));
    _mm512_mask_storeu_epi8(d + k, m, _mm512_maskz_loadu_epi8(m, s + k));
  }
}
constexpr bool kHaveCopyVec = true;
#else
inline void copy_vec(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
constexpr bool kHaveCopyVec = false;
#endif

// Copies n bytes between disjoint buffers. When dst lies a little above src modulo 4 KiB (a roll,
// a narrow by a few elements), memcpy's loads keep matching the low address bits of its own recent
// stores (4K aliasing) and ran 4-6x slower: 512-byte blocks loaded whole before they are stored
// leave one aliased load a block, as fast as memcpy at the best alignment. Runs of 512 B up to 2 KiB
// take copy_vec where the CPU has AVX-512 (its comment says why).
inline void copy_run(void* dst, const void* src, size_t n) {
  if (kHaveCopyVec && n >= kVecRunMin && n < kVecRunMax) {
    copy_vec(dst, src, n);
    return;
  }
  size_t skew = (uintptr_t(dst) - uintptr_t(src)) & 4095;
  if (skew == 0 || skew >= 1024 || n < 2048) {
    std::memcpy(dst, src, n);
    return;
  }
  char* d = (char*)dst;
  const char* s = (const char*)src;
  size_t k = 0;
#if defined(__AVX512F__)
  // the block in eight registers: through a stack buffer GCC kept some of the buffer's stores
  // (roll(3, 2) of 2048 x 2048 float32 into a written output, K-level, 1 thread, CPU time, 4
  // interleaved runs: 790-888 -> 743-785 us)
  for (; k + 512 <= n; k += 512) {
    const __m512i a0 = _mm512_loadu_si512(s + k), a1 = _mm512_loadu_si512(s + k + 64);
    const __m512i a2 = _mm512_loadu_si512(s + k + 128), a3 = _mm512_loadu_si512(s + k + 192);
    const __m512i a4 = _mm512_loadu_si512(s + k + 256), a5 = _mm512_loadu_si512(s + k + 320);
    const __m512i a6 = _mm512_loadu_si512(s + k + 384), a7 = _mm512_loadu_si512(s + k + 448);
    _mm512_storeu_si512(d + k, a0);
    _mm512_storeu_si512(d + k + 64, a1);
    _mm512_storeu_si512(d + k + 128, a2);
    _mm512_storeu_si512(d + k + 192, a3);
    _mm512_storeu_si512(d + k + 256, a4);
    _mm512_storeu_si512(d + k + 320, a5);
    _mm512_storeu_si512(d + k + 384, a6);
    _mm512_storeu_si512(d + k + 448, a7);
  }
#endif
  for (; k + 512 <= n; k += 512) {
    char block[512];
    std::memcpy(block, s + k, 512);
    std::memcpy(d + k, block, 512);
  }
  std::memcpy(d + k, s + k, n - k);
}

// Copies into a fresh output of kStreamBytes or more (stream_into) write it by streaming stores
// (copy_stream), without each line's read for ownership: a fresh eager result is memory no one has
// touched for 64 MB of allocations (tensor.lua's allowance), gone from the caches, and vector or
// string stores read every line of it from DRAM before overwriting it. Zen 5, 1 thread, CPU time,
// microbench, outputs in turn (cold): 2048 x 2048 float32 pairs joined along dim 2 1251 -> 801 us;
// two 16 MB runs (repeat {2, 1}) 1204 -> 632; 2048 rows of 8 KB gathered (index_select) 691-746 ->
// 317-354. ops.lua, 2 threads, load 1, eager, the builds before and after interleaved twice:
// index_select 16 MB 655-667 -> 457-463 us, roll 830-841 -> 475-509, concat 1717-1729 ->
// 1161-1210, stack 1536-1616 -> 1118-1139, repeat 1301-1347 -> 898-937, cast 1420-1521 -> 890-943.
// An output written before (an out= tensor) may be in the L3 with its source, where plain stores
// won at 2 threads (index_select into out= 239-251 us plain against 404-405 streamed; cast 636-644
// against 781-786), so only fresh storage streams. An output a pure write fills (outer: nothing
// read) stays in the L3 and keeps plain stores (streaming lost there: 225 -> 400 us, 1 thread).
constexpr int64_t kStreamBytes = MF_STREAM_BYTES;  // 16 MiB (src/core/types.h, which Lua reads too)

// Whether a copy of `bytes` into t streams: t is that large and its storage fresh, no recorded write
// since it was made (storage version 0: a new eager result, or a tensor made empty and not yet
// written; an out= write, a write op, a session's write count one). The graph executor's buffers
// count none, so those of kStreamBytes and more stream too. Wrapped caller memory does not.
inline bool stream_into(const mf_tensor& t, int64_t bytes) {
  return bytes >= kStreamBytes && t.store != nullptr && t.store->version.load(std::memory_order_relaxed) == 0;
}

// As copy_run, the whole 64-byte lines of dst written by streaming stores (AVX-512; other builds
// copy_run). The caller calls stream_fence() after its last copy_stream on each thread, before
// the threads join: streaming stores are weakly ordered.
inline void copy_stream(void* dst, const void* src, size_t n) {
#if defined(__AVX512F__)
  char* d = (char*)dst;
  const char* s = (const char*)src;
  const size_t head = (64 - (uintptr_t(d) & 63)) & 63;
  if (n < head + 256) {
    copy_run(dst, src, n);
    return;
  }
  std::memcpy(d, s, head);
  size_t k = head;
  for (; k + 256 <= n; k += 256) {
    const __m512i a0 = _mm512_loadu_si512(s + k), a1 = _mm512_loadu_si512(s + k + 64);
    const __m512i a2 = _mm512_loadu_si512(s + k + 128), a3 = _mm512_loadu_si512(s + k + 192);
    _mm512_stream_si512((__m512i*)(d + k), a0);
    _mm512_stream_si512((__m512i*)(d + k + 64), a1);
    _mm512_stream_si512((__m512i*)(d + k + 128), a2);
    _mm512_stream_si512((__m512i*)(d + k + 192), a3);
  }
  for (; k + 64 <= n; k += 64) _mm512_stream_si512((__m512i*)(d + k), _mm512_loadu_si512(s + k));
  std::memcpy(d + k, s + k, n - k);
#else
  copy_run(dst, src, n);
#endif
}
inline void stream_fence() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
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
