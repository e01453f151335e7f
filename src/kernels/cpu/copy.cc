// -- copy of one dtype, by layout; concat ---------------------------------------------------------
// copy_cpu's same-dtype path (issue 12): elements move as W-byte words, and after StridedIter has
// merged the dims the layout picks the loop: contiguous runs by memcpy, a broadcast source by row
// fills, a transposed pair of dims by cache-blocked 8 x 8 tiles (AVX shuffles for 4- and 8-byte
// words), anything else element by element.
#include <algorithm>
#include <cstring>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/shape.h"
#include "../../core/writes.h"
#include "copy.h"
#include "kernels.h"
#include "strided.h"

namespace mf {

namespace {

Shape strides_of(const mf_tensor& t) { return Shape(t.strides, t.strides + t.ndim); }

// A run below this many bytes is copied by a loop: memcpy's call and size dispatch cost more.
constexpr int64_t kMemcpyMin = 128;

template <typename W>
inline void run_copy(W* d, const W* s, int64_t n) {
  if (n * int64_t(sizeof(W)) >= kMemcpyMin) {
    copy_run(d, s, size_t(n) * sizeof(W));
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  }
}

// d[j * ld + i] = s[i * ls + j] for i, j < 8: an 8 x 8 block read along s's rows and written along
// d's rows. 4- and 8-byte words go through AVX registers (shuffles move bits, so NaN payloads
// survive); the plain loop is the other widths' and non-AVX builds' (a copy through a local 8 x 8
// array, tried first, ran 6x slower than this loop on cache-resident data, and 20x slower than AVX).
template <typename W>
inline void transpose8(W* d, int64_t ld, const W* s, int64_t ls) {
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 8; ++i) d[j * ld + i] = s[i * ls + j];
}

#if defined(__AVX__)
template <>
inline void transpose8<uint32_t>(uint32_t* dw, int64_t ld, const uint32_t* sw, int64_t ls) {
  float* d = (float*)dw;
  const float* s = (const float*)sw;
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ls), r2 = _mm256_loadu_ps(s + 2 * ls),
         r3 = _mm256_loadu_ps(s + 3 * ls), r4 = _mm256_loadu_ps(s + 4 * ls), r5 = _mm256_loadu_ps(s + 5 * ls),
         r6 = _mm256_loadu_ps(s + 6 * ls), r7 = _mm256_loadu_ps(s + 7 * ls);
  // pairs of rows interleaved, then quads, then the 128-bit halves exchanged
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ld, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ld, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ld, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ld, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ld, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ld, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ld, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// d[j * ld + i] = s[i * ls + j] for i, j < 4, 8-byte words
inline void transpose4x64(double* d, int64_t ld, const double* s, int64_t ls) {
  __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ls), r2 = _mm256_loadu_pd(s + 2 * ls),
          r3 = _mm256_loadu_pd(s + 3 * ls);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
          t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ld, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ld, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ld, _mm256_permute2f128_pd(t1, t3, 0x31));
}

template <>
inline void transpose8<uint64_t>(uint64_t* dw, int64_t ld, const uint64_t* sw, int64_t ls) {
  double* d = (double*)dw;
  const double* s = (const double*)sw;
  transpose4x64(d, ld, s, ls);
  transpose4x64(d + 4, ld, s + 4 * ls, ls);
  transpose4x64(d + 4 * ld, ld, s + 4, ls);
  transpose4x64(d + 4 * ld + 4, ld, s + 4 * ls + 4, ls);
}
#endif

// A transposed pair of dims: x, along which src is unit-stride (dst steps dx), and y, along which dst
// is unit-stride (src steps sy): d[a * dx + b] = s[a + b * sy] for a < nx, b < ny. Blocks of
// kBlockX x kBlockY: kBlockX along x is four cache lines of each src row, and 8 rows of src are read
// per step of y, so the lines a block touches stay in L1 even when the row strides are powers of two
// (which map every row to one cache set: 32 x 32 tiles of a 2048-wide matrix ran 6x slower).
constexpr int64_t kBlockX = 64, kBlockY = 16;

template <typename W>
void transpose_block(W* d, const W* s, int64_t nx, int64_t ny, int64_t dx, int64_t sy) {
  for (int64_t b0 = 0; b0 < ny; b0 += kBlockY) {
    int64_t b1 = std::min(ny, b0 + kBlockY), b8 = b0 + (b1 - b0) / 8 * 8, a8 = nx / 8 * 8;
    for (int64_t b = b0; b < b8; b += 8)
      for (int64_t a = 0; a < a8; a += 8) transpose8(d + a * dx + b, dx, s + a + b * sy, sy);
    for (int64_t a = 0; a < nx; ++a) {  // the edges: columns past b8, then rows past a8
      int64_t from = a < a8 ? b8 : b0;
      for (int64_t b = from; b < b1; ++b) d[a * dx + b] = s[a + b * sy];
    }
  }
}

template <typename W>
void copy_transposed(const StridedIter<2>& it, int x, int y, char* dbase, const char* sbase) {
  int nd = it.ndim;
  int64_t nx = it.shape[x], ny = it.shape[y], dx = it.stride[0][x], sy = it.stride[1][y];
  int64_t outer = it.numel() / (nx * ny), xblocks = (nx + kBlockX - 1) / kBlockX;
  parallel_for(outer * xblocks, kBlockX * ny, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      int64_t o = item / xblocks, a0 = (item % xblocks) * kBlockX;
      int64_t doff = a0 * dx, soff = a0;  // in elements
      for (int d = nd - 1; d >= 0; --d) {  // the outer index o over the dims other than x and y
        if (d == x || d == y) continue;
        int64_t i = o % it.shape[d];
        o /= it.shape[d];
        doff += i * it.stride[0][d];
        soff += i * it.stride[1][d];
      }
      transpose_block<W>((W*)dbase + doff, (const W*)sbase + soff, std::min(kBlockX, nx - a0), ny, dx, sy);
    }
  });
}

template <typename W>
void copy_words(mf_tensor& dst, const mf_tensor& src) {
  Shape s = shape_of(dst);
  StridedIter<2> it(s, {strides_of(dst), broadcast_strides(src, s)});
  int nd = it.ndim;
  int64_t ds = it.stride[0][nd - 1], ss = it.stride[1][nd - 1];
  char* dp = (char*)dst.ptr;
  const char* sp = (const char*)src.ptr;
  const std::array<int, 2> es{int(sizeof(W)), int(sizeof(W))};
  if (ds == 1 && ss == 1) {  // contiguous runs (the whole tensor, or rows: narrow, concat parts)
    // a large fresh destination by streaming stores (copy.h). 2048 x 2048 float32, 1 thread, CPU
    // time, 3 interleaved runs: K.copy into 4 destinations in turn 649-673 -> 422-431 us, from a
    // narrow (rows 8 KB, the source's start a float past a line) 660-703 -> 483-499; clone then sum,
    // eager, no slower (1364-2178 -> 1389-1918, load 3-4)
    const bool stream = stream_into(dst, dst.count * int64_t(sizeof(W)));
    if (nd == 1) {
      parallel_for(it.shape[0], 1, [&](int64_t b, int64_t e) {
        if (stream) {
          copy_stream((W*)dp + b, (const W*)sp + b, size_t(e - b) * sizeof(W));
          stream_fence();
        } else {
          run_copy((W*)dp + b, (const W*)sp + b, e - b);
        }
      });
      return;
    }
    it.run_rows({dp, (char*)sp}, es, 1, [&](auto p, int64_t n, auto, int64_t rows, auto rst) {
      if (stream && n * int64_t(sizeof(W)) >= 128) {
        for (int64_t r = 0; r < rows; ++r)
          copy_stream((W*)p[0] + r * rst[0], (const W*)p[1] + r * rst[1], size_t(n) * sizeof(W));
        stream_fence();
      } else {
        for (int64_t r = 0; r < rows; ++r) run_copy((W*)p[0] + r * rst[0], (const W*)p[1] + r * rst[1], n);
      }
    });
    return;
  }
  if (ds == 1 && ss == 0) {  // a broadcast source (expand materialised): each row one value
    it.run_rows({dp, (char*)sp}, es, 1, [&](auto p, int64_t n, auto, int64_t rows, auto rst) {
      for (int64_t r = 0; r < rows; ++r) {
        W v = *((const W*)p[1] + r * rst[1]), *q = (W*)p[0] + r * rst[0];
        for (int64_t i = 0; i < n; ++i) q[i] = v;
      }
    });
    return;
  }
  // a transpose: dst unit-stride along y, src along another dim x (both at least 8 long, or the
  // blocks are all edge and the plain loop below does as well)
  int x = -1, y = -1;
  for (int d = nd - 1; d >= 0; --d) {
    if (y < 0 && it.stride[0][d] == 1) y = d;
    if (x < 0 && it.stride[1][d] == 1) x = d;
  }
  if (x >= 0 && y >= 0 && x != y && it.shape[x] >= 8 && it.shape[y] >= 8) {
    copy_transposed<W>(it, x, y, dp, sp);
    return;
  }
  it.run({dp, (char*)sp}, es, 1, [&](auto p, int64_t n, auto st) {
    W* d = (W*)p[0];
    const W* q = (const W*)p[1];
    for (int64_t i = 0; i < n; ++i) d[i * st[0]] = q[i * st[1]];
  });
}

// -- concat of contiguous inputs -------------------------------------------------------------------
// The output, row-major, is `outer` rows of R elements; input i fills columns [at[i], at[i] + len[i])
// of every row from its own contiguous rows of len[i]. One pass over the flat output split across
// threads: each thread copies the pieces of every input that fall in its range (issue 12: a copy
// per input forked the pool once per input; two 128 x 128 float32 joined along dim 2 took 2.0 us,
// now 1.65, a memcpy of the output's bytes 1.0, one thread, warm buffers).
template <typename W>
void concat_rows(W* out, int64_t outer, int64_t R, int n, const W* const* src, const int64_t* at,
                 const int64_t* len, bool stream) {  // stream: by streaming stores (copy.h)
  parallel_for(outer * R, 1, [&](int64_t b, int64_t e) {
    // rows of a join along an inner dim: their lines fetched ahead (copy.h)
    const bool ahead = !stream && R * int64_t(sizeof(W)) < kPrefetchRowMax;
    uintptr_t next = uintptr_t(out + b);
    auto copy = [&](W* d, const W* s, int64_t m) {
      if (stream) {
        copy_stream(d, s, size_t(m) * sizeof(W));
      } else {
        run_copy(d, s, m);
      }
    };
    // the pieces of row o within [lo0, hi0): a row cut by the range's ends. Whole rows (below) copy
    // each piece without clipping it to the range (128 x 128 float32 pairs along dim 2, warm, 1
    // thread: 1.74 -> 1.70 us)
    auto part = [&](int64_t o, int64_t lo0, int64_t hi0) {
      int64_t row = o * R;
      for (int i = 0; i < n; ++i) {
        int64_t lo = std::max(lo0, row + at[i]), hi = std::min(hi0, row + at[i] + len[i]);
        if (lo < hi) copy(out + lo, src[i] + o * len[i] + (lo - row - at[i]), hi - lo);
      }
    };
    int64_t o = b / R, oe = e / R;
    if (b % R != 0) {
      if (ahead) prefetch_ahead(out + b, out + std::min(e, (o + 1) * R), out + e, next);
      part(o, b, std::min(e, (o + 1) * R));
      ++o;
    }
    for (; o < oe; ++o) {  // whole rows
      W* row = out + o * R;
      if (ahead) prefetch_ahead(row, row + R, out + e, next);
      for (int i = 0; i < n; ++i) copy(row + at[i], src[i] + o * len[i], len[i]);
    }
    if (oe * R < e && oe * R >= b) {
      if (ahead) prefetch_ahead(out + oe * R, out + e, out + e, next);
      part(oe, oe * R, e);
    }
    if (stream) stream_fence();
  });
}

}  // namespace

bool concat_contiguous(mf_tensor& out, int n, const mf_tensor* const* ins, int dim) {
  constexpr int kMaxParts = 64;  // more inputs take the copy per input (concat_cpu)
  if (n > kMaxParts || !is_contiguous(out)) return false;
  int64_t after = 1, outer = 1;
  for (int d = dim + 1; d < out.ndim; ++d) after *= out.shape[d];
  for (int d = 0; d < dim; ++d) outer *= out.shape[d];
  const void* src[kMaxParts];
  int64_t at[kMaxParts], len[kMaxParts], col = 0;
  for (int i = 0; i < n; ++i) {
    const mf_tensor& x = *ins[i];
    if (x.dtype_id != out.dtype_id || !is_contiguous(x) || (x.count > 0 && memory_overlaps(out, x))) return false;
    src[i] = x.ptr;
    at[i] = col;
    len[i] = x.shape[dim] * after;
    col += len[i];
  }
  if (out.count == 0) return true;
  const bool st = stream_into(out, tensor_nbytes(out));
  switch (dtype_size(out.dtype_id)) {
    case 1: concat_rows((uint8_t*)out.ptr, outer, col, n, (const uint8_t* const*)src, at, len, st); break;
    case 2: concat_rows((uint16_t*)out.ptr, outer, col, n, (const uint16_t* const*)src, at, len, st); break;
    case 4: concat_rows((uint32_t*)out.ptr, outer, col, n, (const uint32_t* const*)src, at, len, st); break;
    case 8: concat_rows((uint64_t*)out.ptr, outer, col, n, (const uint64_t* const*)src, at, len, st); break;
    default: fail("concat: invalid dtype code ", out.dtype_id);
  }
  return true;
}

void copy_same_dtype(mf_tensor& dst, const mf_tensor& src) {
  switch (dtype_size(dst.dtype_id)) {
    case 1: copy_words<uint8_t>(dst, src); break;
    case 2: copy_words<uint16_t>(dst, src); break;
    case 4: copy_words<uint32_t>(dst, src); break;
    case 8: copy_words<uint64_t>(dst, src); break;
    default: fail("copy: invalid dtype code ", dst.dtype_id);
  }
}

// -- concat ----------------------------------------------------------------------------------
// The inputs must tile out along dim exactly and match it in every other dim: a kernel string that
// passes mismatched tensors gets an error, never a write past out or a silent broadcast. Every
// input is checked before anything is written; contiguous inputs are then copied in one pass
// (concat_contiguous), others one copy_cpu each (strided views, a cast, memory shared with out).
void concat_cpu(mf_tensor& out, int n, const mf_tensor* const* ins, int dim) {
  if (dim < 0 || dim >= out.ndim) fail("concat: dim ", dim + 1, " out of range for a ", out.ndim, "-dim output");
  int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    const mf_tensor& x = *ins[i];
    bool fits = x.ndim == out.ndim && x.shape[dim] >= 0 && x.shape[dim] <= out.shape[dim] - at;
    for (int d = 0; fits && d < out.ndim; ++d) fits = d == dim || x.shape[d] == out.shape[d];
    if (!fits)
      fail("concat: input ", i + 1, " is ", shape_str(x), "; it does not fit the output ", shape_str(out),
           " after ", at, " slices along dim ", dim + 1);
    at += x.shape[dim];
  }
  if (at != out.shape[dim])
    fail("concat: the inputs fill ", at, " of the output's ", out.shape[dim], " slices along dim ", dim + 1);
  if (concat_contiguous(out, n, ins, dim)) return;
  int es = dtype_size(out.dtype_id);
  at = 0;
  for (int i = 0; i < n; ++i) {
    const mf_tensor& x = *ins[i];
    mf_tensor part = out;  // a narrow of out along dim
    part.shape[dim] = x.shape[dim];
    part.count = checked_numel(part.ndim, part.shape, "concat");
    part.is_contig = is_contiguous(part) ? 1 : 0;
    part.ptr = (char*)out.ptr + at * out.strides[dim] * es;
    copy_cpu(part, x);
    at += x.shape[dim];
  }
}

}  // namespace mf
