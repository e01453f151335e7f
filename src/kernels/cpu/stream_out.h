// Pointwise results into a fresh output by streaming stores: the unary and binary kernels
// (elemwise.cc: dense, scalar and broadcast-row forms, every dtype) and the fused interpreter
// (fused.cc) compute each 4 KiB of results by their plain loop into a buffer on the stack (in L1),
// then write it a line at a time without the line's read for ownership. A fresh eager result is
// memory no one has touched for 64 MB of allocations (tensor.lua's allowance), gone from the caches,
// and vector stores read every line of it from DRAM before overwriting it. Only outputs that
// copy.h's stream_into passes (16 MiB and more, storage never written: not out= written before)
// and that share no storage with an input (an in-place op reads its lines right before): copy13
// measured streaming lose where the output may sit in the L3. Same values: the loop is the plain
// one, over pieces of the same run (the loops are elementwise; vecmath's blocks pad their tails).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "copy.h"

namespace mf {

#if defined(__AVX512F__) || defined(__AVX__)
constexpr bool kPointwiseStreams = true;
#else
constexpr bool kPointwiseStreams = false;
#endif

// Whether a pointwise kernel writes out (es-byte elements) by streaming stores: see above. ins: the
// inputs' storages (an input's own storage, or nullptr for none).
inline bool pointwise_streams(const mf_tensor& out, int64_t es, std::initializer_list<const mf_tensor*> ins) {
  if (!kPointwiseStreams || !stream_into(out, out.count * es)) return false;
  for (const mf_tensor* t : ins)
    if (t && t->store == out.store) return false;
  return true;
}

// Strided kernels (a broadcast row, a unit-stride output row of a strided view) stream row by row,
// rows of this many bytes and more: a shorter row is mostly its partial end lines.
constexpr int64_t kStreamRowMin = 2048;

// Writes len bytes (a multiple of 64) from the 64-byte aligned buf to the 64-byte aligned d.
inline void stream_lines(char* d, const char* buf, int64_t len) {
#if defined(__AVX512F__)
  for (int64_t k = 0; k < len; k += 64) _mm512_stream_si512((__m512i*)(d + k), _mm512_load_si512((const void*)(buf + k)));
#elif defined(__AVX__)
  for (int64_t k = 0; k < len; k += 64) {
    _mm256_stream_si256((__m256i*)(d + k), _mm256_load_si256((const __m256i*)(buf + k)));
    _mm256_stream_si256((__m256i*)(d + k + 32), _mm256_load_si256((const __m256i*)(buf + k + 32)));
  }
#else
  std::memcpy(d, buf, size_t(len));
#endif
}

// n elements of es bytes at dst: compute(out, off, m) writes elements [off, off + m) to out, which
// is dst + off * es for the plain head (to dst's first line start), else a 4 KiB stack buffer whose
// whole lines are streamed to dst and whose last partial line is copied. The caller calls
// stream_out_fence() on each thread after its last stream_elems, before the threads join.
constexpr int64_t kStreamChunkBytes = 4096;
template <class Compute>
inline void stream_elems(char* dst, int es, int64_t n, Compute&& compute) {
  int64_t head = int64_t((64 - (uintptr_t(dst) & 63)) & 63);
  if (head % es != 0) {  // elements not aligned to their size: no whole lines of them
    if (n > 0) compute(dst, 0, n);
    return;
  }
  head = std::min(head / es, n);
  if (head > 0) compute(dst, 0, head);
  alignas(64) char buf[kStreamChunkBytes];
  const int64_t per = kStreamChunkBytes / es;
  for (int64_t i = head; i < n; i += per) {
    const int64_t m = std::min(per, n - i), bytes = m * es, whole = bytes & ~int64_t(63);
    compute(buf, i, m);
    char* d = dst + i * es;
    stream_lines(d, buf, whole);
    if (whole < bytes) std::memcpy(d + whole, buf + whole, size_t(bytes - whole));
  }
}

// Copies n bytes from src (any alignment; in L1: a block just computed) to dst, the whole 64-byte
// lines of dst by streaming stores, its partial first and last lines by memcpy.
inline void stream_copy(char* dst, const char* src, int64_t n) {
  int64_t head = std::min(n, int64_t((64 - (uintptr_t(dst) & 63)) & 63));
  std::memcpy(dst, src, size_t(head));
  int64_t k = head;
  for (; k + 64 <= n; k += 64) {
#if defined(__AVX512F__)
    _mm512_stream_si512((__m512i*)(dst + k), _mm512_loadu_si512((const void*)(src + k)));
#elif defined(__AVX__)
    _mm256_stream_si256((__m256i*)(dst + k), _mm256_loadu_si256((const __m256i*)(src + k)));
    _mm256_stream_si256((__m256i*)(dst + k + 32), _mm256_loadu_si256((const __m256i*)(src + k + 32)));
#else
    std::memcpy(dst + k, src + k, 64);
#endif
  }
  std::memcpy(dst + k, src + k, size_t(n - k));
}

inline void stream_out_fence() {
#if defined(__AVX512F__) || defined(__AVX__)
  _mm_sfence();  // streaming stores are weakly ordered: done before the threads join
#endif
}

}  // namespace mf
