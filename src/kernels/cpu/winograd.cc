// -- winograd ----------------------------------------------------------------------------------------
// A 3x3 convolution at stride 1 by Winograd's minimal filtering F(m x m, 3 x 3) (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016): the output is cut into m x m tiles;
// the (m+2) x (m+2) input patch under each tile is transformed (B^T d B) into A = (m+2)^2 numbers,
// each weight 3x3 once per call (G g G^T) into A numbers; then for each of the A positions e the
// products are summed over input channels by one GEMM, M_e (Co x tiles) = U_e (Co x Ci) * V_e
// (Ci x tiles), and each tile's output comes back by the inverse transform (A^T M A). Per output
// element that is (m+2)^2 / m^2 multiplies per input channel instead of 9: 4 at m = 2 (2.25x fewer),
// 2.25 at m = 4 (4x fewer), in exchange for transforms that cost additions and some accuracy.
//
// Tiles go through in blocks (runs of tile-row segments, at most g.T tiles) so that a block's
// transformed input V and products M stay near L2; threads take whole blocks, so each output
// element is written by one thread and is the same sum at any thread count (the plan never looks
// at the thread count). The GEMMs are single-threaded OpenBLAS calls inside the team.
//
// Inf and NaN: Winograd mixes every input of a patch into several products, so an Inf in x comes
// out NaN (Inf - Inf) where the direct sum gives Inf, and a NaN spreads over its whole tile at
// m = 4. wino_run therefore checks every output it writes; when one is not finite it reports
// false and the caller redoes the call by im2col + GEMM: non-finite inputs get exactly the direct
// convolution's answer.
#include "winograd.h"

#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "../../core/allocator.h"
#include "blas.h"

// The transforms are vector loops over a block's columns: 16-float vectors where AVX-512 is
// compiled in (GCC's tuning otherwise stays at 8).
#if defined(__AVX512F__)
#pragma GCC target("prefer-vector-width=512")
#endif

namespace mf {

namespace {

// Transform matrices of F(M x M, 3 x 3) (Toom-Cook at the points 0, 1, -1 for M = 2, Lavin and
// Gray's, and 0, 1, -1, 1/2, -2 for M = 4, plus infinity): BT is B^T (A x A), G (A x 3), AT is A^T
// (M x A). For M = 4 Lavin and Gray take 0, +-1, +-2; with 1/2 for 2 the float32 error, simulated
// over 400 64-channel tiles, fell from 1.6e-6 to 5.7e-7 of the sum of |terms| (measured here on
// conv2d: 4.5e-6 to 1.5e-6 at worst), for 26 nonzeros in B^T instead of 20. B^T was solved for
// from A^T and G (A^T diag(G g) B^T d is the correlation of d and g for every d, g).
template <int M>
struct Mat;
template <>
struct Mat<2> {
  static constexpr int A = 4;
  static constexpr double BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static constexpr double AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};
template <>
struct Mat<4> {
  static constexpr int A = 6;
  static constexpr double BT[6][6] = {{1, -1.5, -2, 1.5, 1, 0}, {0, -1, 0.5, 2.5, 1, 0},  {0, 1, -2.5, 0.5, 1, 0},
                                      {0, -2, -1, 2, 1, 0},     {0, 0.5, -1, -0.5, 1, 0}, {0, 1, -1.5, -2, 1.5, 1}};
  static constexpr double G[6][3] = {{1, 0, 0},
                                     {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                     {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                                     {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                     {1.0 / 15, -2.0 / 15, 4.0 / 15},
                                     {0, 0, 1}};
  static constexpr double AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5, -2, 0}, {0, 1, 1, 0.25, 4, 0}, {0, 1, -1, 0.125, -8, 1}};
};

// unroll<N>(f) calls f(std::integral_constant<int, i>) for i = 0 .. N-1: the transforms index their
// matrices with compile-time constants, so zero coefficients drop out and +-1 become additions.
// (always inlined, the lambdas too: GCC's inliner otherwise leaves some of them calls)
#define MF_INLINE __attribute__((always_inline))
template <typename F, int... I>
MF_INLINE inline void unroll_seq(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, typename F>
MF_INLINE inline void unroll(F&& f) {
  unroll_seq(f, std::make_integer_sequence<int, N>{});
}

inline void gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  blas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a, int(k), b, int(n), 0.0f, c, int(n));
}
inline void gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c) {
  blas().dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0, a, int(k), b, int(n), 0.0, c, int(n));
}

template <typename T>
inline bool finite(T v) {
  return std::abs(v) <= std::numeric_limits<T>::max();
}

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

// Bytes of transformed input and products (V and M) a block aims at. Measured at 1 thread on the
// bench's ResNet layer (32x64x56x56 by 64x64x3x3, F(4x4)): 768 KB (one core's L2 with room for U)
// 28 ms, 1.5 MB 22 ms, 2-3 MB 17-18 ms, 6 MB 19 ms: the GEMMs of a wider block run faster than the
// extra L2 misses cost; smaller shapes moved by under 5% between 768 KB and 3 MB.
constexpr int64_t kBlockBytes = int64_t(2) << 20;
constexpr int64_t kMaxCols = 512;   // most columns of a block
// fewest columns of a block, past kBlockBytes: at 1 thread, 4x512x16x16 by 512 channels by F(2x2)
// took 36 ms with 32 columns (im2col: 28), 23 with 64, 20 with 128; 8x256x14x14 by 256 5.5, 5.4
// and 6.5 ms; 32x128x28x28 by 128 by F(4x4) 15.4, 16.7 and 17.3
constexpr int64_t kMinCols = 64;
constexpr int64_t kMaxUnits = 256;  // most units of a block
constexpr int64_t kMaxSeg = 63;     // most tiles of a unit (a row's split is at most 4 chunks of 16)

// A block's columns: unit by unit, sw + 1 columns each (its tiles and one spare, which lets the
// pass across read tile k's patch as columns k and k + 1 of the phases without a bound), so that
// the transforms run over the whole block in long vector loops. The spare columns go through the
// GEMMs too (1/(seg+1) more work) and never reach y. g.T is the most columns of a block.
// The phase rows of the input transform hold ls(g) >= T + 1 columns (a multiple of 16).
inline int64_t ls_of(const WinoConv& g) { return (g.T + 1 + 15) / 16 * 16; }

// Elements of one thread's scratch: V (A x Ci x T), M (A x Co x T), and the row buffers of the
// input transform (A rows split into M phases, then the A rows after the pass down) or of the inverse
// one (M x A x T after the pass down): the larger.
struct Slot {
  int64_t v, m, buf;
};
Slot slot_of(const WinoConv& g) {
  const int64_t A = (g.m + 2) * (g.m + 2), a = g.m + 2, rows = 2 * a * g.m * ls_of(g);
  return {A * g.Ci * g.T, A * g.Co * g.T, std::max(rows, g.m * a * g.T)};
}

// The unit (tile-row segment) u: image n, tile row ty, first tile tx0, sw tiles.
struct Unit {
  int64_t n, ty, tx0, sw;
};
inline Unit unit_of(const WinoConv& g, int64_t u) {
  Unit r;
  r.n = u / (g.th * g.nseg);
  const int64_t rem = u % (g.th * g.nseg);
  r.ty = rem / g.nseg;
  r.tx0 = (rem % g.nseg) * g.seg;
  r.sw = std::min(g.seg, g.tw - r.tx0);
  return r;
}

// How a unit's rows are split into phases (split_row), worked out once per block: padded columns
// [lo, hi) of the unit's L*M lie inside x, and the masks of each 16-tile chunk of the AVX-512
// versions: ld[ch][q] the lanes of load q that lie inside x, st[ch] the tiles of the chunk.
struct RowSplit {
  int64_t lo, hi, L;
  uint16_t ld[kMaxSeg / 16 + 1][4], st[kMaxSeg / 16 + 1];
};
// lanes [a, b) of a 16-lane vector, clipped to [0, 16)
inline uint16_t lanes(int64_t a, int64_t b) {
  a = std::max<int64_t>(a, 0);
  b = std::min<int64_t>(b, 16);
  return a >= b ? uint16_t(0) : uint16_t(((1u << (b - a)) - 1u) << a);
}
template <int M>
RowSplit row_split(int64_t lo, int64_t hi, int64_t L) {
  RowSplit r{lo, hi, L, {}, {}};
  for (int64_t ch = 0; ch * 16 < L; ++ch) {
    for (int q = 0; q < M; ++q) r.ld[ch][q] = lanes(lo - 16 * (ch * M + q), hi - 16 * (ch * M + q));
    r.st[ch] = lanes(0, L - 16 * ch);
  }
  return r;
}

// One row of a unit's patches split into phases: d[r*Ls + k] = padded column M*k + r for k < L, which
// is src[M*k + r] where M*k + r lies in [lo, hi) and 0 outside (src may point before x's row: only
// [lo, hi) is read).
template <int M, typename T>
inline void split_row(const T* src, const RowSplit& rs, T* d, int64_t Ls) {
  for (int64_t k = 0; k < rs.L; ++k)
    for (int r = 0; r < M; ++r) {
      const int64_t p = M * k + r;
      d[r * Ls + k] = p >= rs.lo && p < rs.hi ? src[p] : T(0);
    }
}
#if defined(__AVX512F__)
// 16 tiles at a time: the row's 16*M floats in M masked loads (lanes outside [lo, hi) neither read
// nor kept), each phase picked out by two-source permutes.
template <>
inline void split_row<2, float>(const float* src, const RowSplit& rs, float* d, int64_t Ls) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t ch = 0, k0 = 0; k0 < rs.L; ++ch, k0 += 16) {
    const __m512 v0 = _mm512_maskz_loadu_ps(rs.ld[ch][0], src + 2 * k0);
    const __m512 v1 = _mm512_maskz_loadu_ps(rs.ld[ch][1], src + 2 * k0 + 16);
    _mm512_mask_storeu_ps(d + k0, rs.st[ch], _mm512_permutex2var_ps(v0, even, v1));
    _mm512_mask_storeu_ps(d + Ls + k0, rs.st[ch], _mm512_permutex2var_ps(v0, odd, v1));
  }
}
template <>
inline void split_row<4, float>(const float* src, const RowSplit& rs, float* d, int64_t Ls) {
  // phase r of tiles 0..7 from a pair of vectors (tiles 0..3, 4..7) into lanes 0..7
  const __m512i base = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i halves = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);  // a's 0..7, b's 0..7
  for (int64_t ch = 0, k0 = 0; k0 < rs.L; ++ch, k0 += 16) {
    __m512 v[4];
    for (int q = 0; q < 4; ++q) v[q] = _mm512_maskz_loadu_ps(rs.ld[ch][q], src + 4 * k0 + 16 * q);
    for (int r = 0; r < 4; ++r) {
      const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(r));
      const __m512 a = _mm512_permutex2var_ps(v[0], idx, v[1]), b = _mm512_permutex2var_ps(v[2], idx, v[3]);
      _mm512_mask_storeu_ps(d + r * Ls + k0, rs.st[ch], _mm512_permutex2var_ps(a, halves, b));
    }
  }
}
#endif

// U[e][o][c] (e = i*A + j) = (G g G^T)[i][j] of the 3x3 kernel that takes input channel c to output
// channel o, for o in [ob, oe); computed in double, rounded once, as vector loops over c: one o at a
// time, its taps gathered into taps (9 x Ci), G g into t (A x 3 x Ci), the result into tmp (A x A x
// Ci), then copied out row by row (written straight into U, the A rows 16 KB apart at 64 channels
// fell in one cache set).
template <int M, typename T>
void weights(const WinoConv& g, const T* w, T* U, int64_t ob, int64_t oe, double* taps, double* t, T* tmp) {
  using W = Mat<M>;
  constexpr int A = W::A;
  const int64_t Ci = g.Ci;
  for (int64_t o = ob; o < oe; ++o) {
    if (g.flip) {  // w is Ci x Co x 3 x 3, read flipped
      for (int64_t c = 0; c < Ci; ++c)
        for (int q = 0; q < 9; ++q) taps[q * Ci + c] = double(w[(c * g.Co + o) * 9 + 8 - q]);
    } else {
      for (int64_t c = 0; c < Ci; ++c)
        for (int q = 0; q < 9; ++q) taps[q * Ci + c] = double(w[(o * Ci + c) * 9 + q]);
    }
    unroll<A>([&](auto i) MF_INLINE {
      constexpr int I = decltype(i)::value;
      for (int b = 0; b < 3; ++b) {
        double* tb = t + (I * 3 + b) * Ci;
        const double *k0 = taps + b * Ci, *k1 = taps + (3 + b) * Ci, *k2 = taps + (6 + b) * Ci;
        for (int64_t c = 0; c < Ci; ++c) tb[c] = W::G[I][0] * k0[c] + W::G[I][1] * k1[c] + W::G[I][2] * k2[c];
      }
    });
    for (int i = 0; i < A; ++i) {
      const double *t0 = t + (i * 3) * Ci, *t1 = t0 + Ci, *t2 = t1 + Ci;
      unroll<A>([&](auto j) MF_INLINE {
        constexpr int J = decltype(j)::value;
        T* u = tmp + (i * A + J) * Ci;
        for (int64_t c = 0; c < Ci; ++c) u[c] = T(t0[c] * W::G[J][0] + t1[c] * W::G[J][1] + t2[c] * W::G[J][2]);
      });
    }
    for (int e = 0; e < A * A; ++e) std::copy(tmp + e * Ci, tmp + (e + 1) * Ci, U + (e * g.Co + o) * Ci);
  }
}

// The input transform of a block's units us[0 .. nu) (images of x) into V (element (e, c, col) at
// V[(e*Ci + c)*T + col], T the block's columns). Row a of a tile's patch is padded row M*ty + a; its
// columns M*k + b, k the tile and b < A, are read split into M phases (column M*k + r at phase r,
// index k), so that both passes of B^T d B run over the block's columns with unit stride: down the
// rows, then across, tile k's column b read at phase b % M, index k + b / M.
template <int M, typename T>
void in_block(const WinoConv& g, const T* x, const Unit* us, int64_t nu, T* V, int64_t T_, T* buf) {
  using W = Mat<M>;
  constexpr int A = W::A;
  const int64_t Ls = ls_of(g), len = M * Ls;
  T* D = buf;           // A rows, each M phases of Ls
  T* Ub = D + A * len;          // the same after the pass down
  for (int64_t i = 0; i < A * len; ++i) D[i] = T(0);  // the columns past T_ stay 0
  RowSplit rs[kMaxUnits];
  for (int64_t u = 0; u < nu; ++u) {
    const int64_t n = M * (us[u].sw + 1), c0 = M * us[u].tx0 - g.pw;  // c0: x column of padded column 0
    const int64_t lo = std::min(std::max<int64_t>(-c0, 0), n), hi = std::min(std::max(g.W - c0, lo), n);
    rs[u] = row_split<M>(lo, hi, us[u].sw + 1);
  }
  for (int64_t c = 0; c < g.Ci; ++c) {
    for (int64_t u = 0, off = 0; u < nu; off += us[u].sw + 1, ++u) {
      const Unit& un = us[u];
      const T* xc = x + (un.n * g.Ci + c) * g.H * g.W + M * un.tx0 - g.pw;
      for (int a = 0; a < A; ++a) {
        T* d = D + a * len + off;
        const int64_t h = M * un.ty - g.ph + a;
        if (h < 0 || h >= g.H) {
          for (int r = 0; r < M; ++r) std::fill(d + r * Ls, d + r * Ls + un.sw + 1, T(0));
          continue;
        }
        split_row<M>(xc + h * g.W, rs[u], d, Ls);
      }
      if (c + 1 < g.Ci) {  // the next channel's rows of this unit, from memory while this one computes
        const char* nx = (const char*)(xc + g.H * g.W);
        const int64_t bytes = rs[u].L * M * int64_t(sizeof(T));
        for (int a = 0; a < A; ++a) {
          const int64_t h = M * un.ty - g.ph + a;
          if (h < 0 || h >= g.H) continue;
          for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(nx + h * g.W * int64_t(sizeof(T)) + b);
        }
      }
    }
    unroll<A>([&](auto i) MF_INLINE {
      constexpr int I = decltype(i)::value;
      T* u = Ub + I * len;
      for (int64_t k = 0; k < len; ++k) {
        T s = T(-0.0);  // x + -0.0 is x: the first term's addition folds away
        unroll<A>([&](auto a) MF_INLINE {
          constexpr int Ai = decltype(a)::value;
          if constexpr (W::BT[I][Ai] != 0) s += T(W::BT[I][Ai]) * D[Ai * len + k];
        });
        u[k] = s;
      }
    });
    unroll<A>([&](auto i) MF_INLINE {
      constexpr int I = decltype(i)::value;
      const T* u = Ub + I * len;
      unroll<A>([&](auto j) MF_INLINE {
        constexpr int J = decltype(j)::value;
        T* v = V + ((I * A + J) * g.Ci + c) * T_;
        for (int64_t k = 0; k < T_; ++k) {
          T s = T(-0.0);
          unroll<A>([&](auto b) MF_INLINE {
            constexpr int B = decltype(b)::value;
            if constexpr (W::BT[J][B] != 0) s += T(W::BT[J][B]) * u[(B % M) * Ls + k + B / M];
          });
          v[k] = s;
        }
      });
    });
  }
}

// The pass across of the inverse transform for output row r of a unit's sw tiles: s holds A rows (row
// stride ls) of the unit's (A^T M)[r][j], tile by tile; yr[M*k + q] = sum_j AT[q][j] s[j][k], the first
// cols of them written. false if one written is not finite.
template <int M, typename T>
inline bool out_row(const T* s, int64_t ls, int64_t sw, T* yr, int64_t cols) {
  using W = Mat<M>;
  constexpr int A = W::A;
  int bad = 0;
  for (int64_t k = 0; k < sw; ++k)
    unroll<M>([&](auto q) MF_INLINE {
      constexpr int Q = decltype(q)::value;
      T v = T(-0.0);
      unroll<A>([&](auto j) MF_INLINE {
        constexpr int J = decltype(j)::value;
        if constexpr (W::AT[Q][J] != 0) v += T(W::AT[Q][J]) * s[J * ls + k];
      });
      if (M * k + Q < cols) {
        yr[M * k + Q] = v;
        bad |= !finite(v);
      }
    });
  return !bad;
}
#if defined(__AVX512F__)
// 16 tiles at a time: the M rows of results interleaved by two-source permutes, stored masked.
template <int M>
inline bool out_row_avx(const float* s, int64_t ls, int64_t sw, float* yr, int64_t cols) {
  using W = Mat<M>;
  constexpr int A = W::A;
  const __m512 big = _mm512_set1_ps(std::numeric_limits<float>::max());
  __mmask16 bad = 0;
  for (int64_t k0 = 0; k0 < sw; k0 += 16) {
    const __mmask16 in = lanes(0, sw - k0);
    __m512 sj[A], yq[M];
    for (int j = 0; j < A; ++j) sj[j] = _mm512_maskz_loadu_ps(in, s + j * ls + k0);
    unroll<M>([&](auto q) MF_INLINE {
      constexpr int Q = decltype(q)::value;
      __m512 v = _mm512_set1_ps(-0.0f);
      unroll<A>([&](auto j) MF_INLINE {
        constexpr int J = decltype(j)::value;
        if constexpr (W::AT[Q][J] == 1) v = _mm512_add_ps(v, sj[J]);
        else if constexpr (W::AT[Q][J] == -1) v = _mm512_sub_ps(v, sj[J]);
        else if constexpr (W::AT[Q][J] != 0) v = _mm512_fmadd_ps(_mm512_set1_ps(float(W::AT[Q][J])), sj[J], v);
      });
      yq[Q] = v;
    });
    __m512 out[M];  // out[i] holds the results of tiles k0 + 16*i/M ..., each tile's M side by side
    if constexpr (M == 2) {
      const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
      out[0] = _mm512_permutex2var_ps(yq[0], lo, yq[1]);
      out[1] = _mm512_permutex2var_ps(yq[0], hi, yq[1]);
    } else {
      const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
      const __m512i plo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), phi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
      const __m512d a = _mm512_castps_pd(_mm512_permutex2var_ps(yq[0], lo, yq[1]));  // q 0, 1 of tiles 0..7
      const __m512d b = _mm512_castps_pd(_mm512_permutex2var_ps(yq[2], lo, yq[3]));  // q 2, 3 of tiles 0..7
      const __m512d c = _mm512_castps_pd(_mm512_permutex2var_ps(yq[0], hi, yq[1]));  // tiles 8..15
      const __m512d d = _mm512_castps_pd(_mm512_permutex2var_ps(yq[2], hi, yq[3]));
      out[0] = _mm512_castpd_ps(_mm512_permutex2var_pd(a, plo, b));
      out[1] = _mm512_castpd_ps(_mm512_permutex2var_pd(a, phi, b));
      out[2] = _mm512_castpd_ps(_mm512_permutex2var_pd(c, plo, d));
      out[3] = _mm512_castpd_ps(_mm512_permutex2var_pd(c, phi, d));
    }
    for (int i = 0; i < M; ++i) {
      const int64_t at = M * k0 + 16 * i;
      const __mmask16 m = lanes(0, cols - at);
      if (!m) break;
      _mm512_mask_storeu_ps(yr + at, m, out[i]);
      bad |= _mm512_mask_cmp_ps_mask(m, _mm512_abs_ps(out[i]), big, _CMP_NLE_UQ);  // NaN or > max
    }
  }
  return !bad;
}
template <>
inline bool out_row<2, float>(const float* s, int64_t ls, int64_t sw, float* yr, int64_t cols) {
  return out_row_avx<2>(s, ls, sw, yr, cols);
}
template <>
inline bool out_row<4, float>(const float* s, int64_t ls, int64_t sw, float* yr, int64_t cols) {
  return out_row_avx<4>(s, ls, sw, yr, cols);
}
#endif

// The inverse transform of a block from Mm (element (e, o, col) at Mm[(e*Co + o)*T + col]) into y;
// false if an output it wrote is not finite.
template <int M, typename T>
bool out_block(const WinoConv& g, const T* Mm, int64_t T_, T* y, const Unit* us, int64_t nu, T* buf) {
  using W = Mat<M>;
  constexpr int A = W::A;
  T* S = buf;  // M x A x T_: A^T M, one output channel
  int bad = 0;
  for (int64_t o = 0; o < g.Co; ++o) {
    const T* mo = Mm + o * T_;
    unroll<M>([&](auto r) MF_INLINE {
      constexpr int R = decltype(r)::value;
      unroll<A>([&](auto j) MF_INLINE {
        constexpr int J = decltype(j)::value;
        T* s_ = S + (R * A + J) * T_;
        for (int64_t k = 0; k < T_; ++k) {
          T s = T(-0.0);
          unroll<A>([&](auto i) MF_INLINE {
            constexpr int I = decltype(i)::value;
            if constexpr (W::AT[R][I] != 0) s += T(W::AT[R][I]) * mo[(I * A + J) * g.Co * T_ + k];
          });
          s_[k] = s;
        }
      });
    });
    for (int64_t r = 0; r < M; ++r)
      for (int64_t u = 0, off = 0; u < nu; off += us[u].sw + 1, ++u) {
        const Unit& un = us[u];
        const int64_t oh = M * un.ty + r, ow0 = M * un.tx0;
        if (oh >= g.Ho) continue;
        T* yr = y + ((un.n * g.Co + o) * g.Ho + oh) * g.Wo + ow0;
        bad |= !out_row<M>(S + r * A * T_ + off, T_, un.sw, yr, std::min(M * un.sw, g.Wo - ow0));
      }
  }
  return !bad;
}

// One block of units [ub, ue): transform, GEMMs, inverse; false if an output is not finite.
template <int M, typename T>
bool run_block(const WinoConv& g, const T* x, const T* U, T* y, T* V, T* Mm, T* buf, int64_t ub, int64_t ue) {
  constexpr int64_t A = (M + 2) * (M + 2);
  Unit us[kMaxUnits];
  int64_t cols = 0;
  for (int64_t u = ub; u < ue; ++u) {
    us[u - ub] = unit_of(g, u);
    cols += us[u - ub].sw + 1;
  }
  in_block<M>(g, x, us, ue - ub, V, cols, buf);
  for (int64_t e = 0; e < A; ++e) gemm(g.Co, cols, g.Ci, U + e * g.Co * g.Ci, V + e * g.Ci * cols, Mm + e * g.Co * cols);
  return out_block<M>(g, Mm, cols, y, us, ue - ub, buf);
}

// Bytes of the transformed weights U and, per thread, the weight transform's buffers (taps, t, tmp):
// taken from the caching allocator for the call, not kept in the bind-time workspace (U of a
// 512-channel layer is 38 MB at F(4x4)).
struct WeightBytes {
  size_t u, per_thread;
};
WeightBytes weight_bytes(const WinoConv& g, int es) {
  const int64_t a = g.m + 2;
  return {round64(size_t(a * a * g.Co * g.Ci) * es),
          round64(size_t((9 + 3 * a) * g.Ci) * sizeof(double)) + round64(size_t(a * a * g.Ci) * es)};
}

template <int M, typename T>
bool run(const WinoConv& g, const T* x, const T* w, T* y, void* scratch, int nt) {
  char* base = (char*)scratch;
  const Slot sl = slot_of(g);
  const size_t slot_bytes = round64(size_t(sl.v) * sizeof(T)) + round64(size_t(sl.m) * sizeof(T)) + round64(size_t(sl.buf) * sizeof(T));
  const WeightBytes wb = weight_bytes(g, int(sizeof(T)));
  struct Owned {
    void* p;
    ~Owned() { cpu_allocator().free(p); }
  } owned{cpu_allocator().allocate(wb.u + wb.per_thread * size_t(std::max(nt, 1)))};
  T* U = (T*)owned.p;
  auto transform = [&](int tid, int64_t ob, int64_t oe) {
    char* p = (char*)owned.p + wb.u + size_t(tid) * wb.per_thread;
    double* taps = (double*)p;
    double* t = taps + 9 * g.Ci;
    T* tmp = (T*)(p + round64(size_t((9 + 3 * (M + 2)) * g.Ci) * sizeof(double)));
    weights<M>(g, w, U, ob, oe, taps, t, tmp);
  };
  const int64_t units = g.N * g.th * g.nseg;
  int bad = 0;
  auto thread_body = [&](int tid, bool team) {
    char* p = base + size_t(tid) * slot_bytes;
    T* V = (T*)p;
    T* Mm = (T*)(p + round64(size_t(sl.v) * sizeof(T)));
    T* buf = (T*)(p + round64(size_t(sl.v) * sizeof(T)) + round64(size_t(sl.m) * sizeof(T)));
    int mine = 0;
    auto block = [&](int64_t b) {
      mine |= !run_block<M>(g, x, U, y, V, Mm, buf, b * g.upb, std::min(units, (b + 1) * g.upb));
    };
    if (team) {
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t b = 0; b < g.nblk; ++b) block(b);
    } else {
      for (int64_t b = 0; b < g.nblk; ++b) block(b);
    }
    return mine;
  };
  if (nt <= 1) {
    transform(0, 0, g.Co);
    bad = thread_body(0, false);
  } else {
#pragma omp parallel num_threads(nt) reduction(| : bad)
    {
      const int tid = omp_get_thread_num(), team = omp_get_num_threads();
      const int64_t chunk = (g.Co + team - 1) / team, ob = std::min(g.Co, tid * chunk);
      transform(tid, ob, std::min(g.Co, ob + chunk));
#pragma omp barrier
      bad |= thread_body(tid, true);
    }
  }
  return !bad;
}

}  // namespace

bool wino_plan(WinoConv& g, int m, int es) {
  const int64_t a = m + 2;
  g.m = m;
  g.th = (g.Ho + m - 1) / m;
  g.tw = (g.Wo + m - 1) / m;
  const int64_t per_col = a * a * (g.Ci + g.Co) * es;
  const int64_t tiles = g.N * g.th * g.tw;
  int64_t T = std::max<int64_t>(kMinCols, std::min<int64_t>(kMaxCols, kBlockBytes / std::max<int64_t>(per_col, 1)));
  // at least 2 blocks where the tiles allow it (32 columns a block or more), so that two threads
  // share a small layer (a shape rule: the thread count never enters)
  T = std::min(T, std::max<int64_t>(32, tiles / 2));
  g.seg = std::max<int64_t>(1, std::min({g.tw, T - 1, kMaxSeg}));
  g.nseg = (g.tw + g.seg - 1) / g.seg;
  g.upb = std::max<int64_t>(1, std::min(kMaxUnits, T / (g.seg + 1)));
  g.T = g.upb * (g.seg + 1);
  const int64_t units = g.N * g.th * g.nseg;
  g.nblk = (units + g.upb - 1) / g.upb;
  const int64_t kMax = std::numeric_limits<int>::max();
  return g.Co <= kMax && g.Ci <= kMax && g.T <= kMax && g.Co > 0 && g.Ci > 0 && g.Ho > 0 && g.Wo > 0;
}

size_t wino_scratch_bytes(const WinoConv& g, int es, int nt) {
  const Slot sl = slot_of(g);
  const size_t slot = round64(size_t(sl.v) * es) + round64(size_t(sl.m) * es) + round64(size_t(sl.buf) * es);
  return slot * size_t(std::max(nt, 1));
}

template <typename T>
bool wino_run(const WinoConv& g, const T* x, const T* w, T* y, void* scratch, int nt) {
  return g.m == 4 ? run<4>(g, x, w, y, scratch, nt) : run<2>(g, x, w, y, scratch, nt);
}
template bool wino_run<float>(const WinoConv&, const float*, const float*, float*, void*, int);
template bool wino_run<double>(const WinoConv&, const double*, const double*, double*, void*, int);

}  // namespace mf
