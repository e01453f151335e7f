// -- conv2d ------------------------------------------------------------------------------------------
// 2-D convolution (NCHW) as im2col + GEMM and its two gradients (GEMM + col2im, GEMM against the
// columns); 3x3 stride-1 layers with enough channels, forward and backward to the input, by
// Winograd's F(2x2, 3x3) or F(4x4, 3x3) instead (winograd.cc; the choice: wino_tile). Pooling lives
// in pool.cc.
#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "../../core/allocator.h"
#include "../../core/error.h"
#include "../../core/nchw.h"
#include "../../core/threads.h"
#include "blas.h"
#include "kernels.h"
#include "winograd.h"

namespace mf {

namespace {

// -- shared helpers --------------------------------------------------------------------------------

void need_contiguous_out(const char* op, const mf_tensor& t) {
  if (!t.is_contig) fail(op, ": the output must be contiguous (it is ", shape_str(t), " with other strides)");
}

// ow in [lo, hi) are the outputs whose input column ow * s + off lies in [0, n).
inline void valid_range(int64_t off, int64_t s, int64_t n, int64_t outs, int64_t* lo, int64_t* hi) {
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t h = n - 1 - off < 0 ? 0 : (n - 1 - off) / s + 1;
  *lo = std::min(l, outs);
  *hi = std::max(*lo, std::min(h, outs));
}

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// Scratch memory carved from the bind-time workspace, 64-byte aligned pieces; when the workspace
// is missing or too small (a caller that did not size it) the routine borrows from the allocator.
class Scratch {
 public:
  Scratch(mf_tensor* ws, size_t need) {
    size_t have = ws && ws->ptr ? size_t(tensor_nbytes(*ws)) : 0;
    if (need <= have && have > 0) {  // (a null ws with nothing needed leaves base_ null: never read)
      base_ = (char*)ws->ptr;
    } else if (need > 0) {
      owned_ = cpu_allocator().allocate(need);
      base_ = (char*)owned_;
    }
  }
  ~Scratch() { cpu_allocator().free(owned_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* take(int64_t n) {
    T* p = (T*)(base_ + used_);
    used_ += round(size_t(n) * sizeof(T));
    return p;
  }
  static size_t round(size_t b) { return (b + 63) / 64 * 64; }

 private:
  char* base_ = nullptr;
  size_t used_ = 0;
  void* owned_ = nullptr;
};

// A contiguous view of t: t itself, or a copy packed into scratch.
template <typename T>
const T* packed(const mf_tensor& t, Scratch& s) {
  if (t.is_contig) return (const T*)t.ptr;
  T* p = s.take<T>(t.count);
  mf_tensor dst{};
  set_meta(dst, shape_of(t), t.dtype_id, MF_CPU);
  dst.ptr = p;
  copy_cpu(dst, t);
  return p;
}

size_t pack_bytes(const mf_tensor& t) { return t.is_contig ? 0 : Scratch::round(size_t(tensor_nbytes(t))); }

// Runs f(slot, begin, end) over images [0, n): one contiguous range per thread when nt > 1.
template <typename F>
void for_images(int64_t n, int nt, F&& f) {
  if (nt <= 1) {
    f(0, int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), team = omp_get_num_threads();
    int64_t chunk = (n + team - 1) / team;
    int64_t b = std::min(n, int64_t(t) * chunk), e = std::min(n, b + chunk);
    f(t, b, e);
  }
}

// -- row moves --------------------------------------------------------------------------------------
// Output rows are short (8 to 56 elements, often 15 or 16 after the padding is cut off), so a loop
// per row with a runtime length spends most of its time in scalar tails. These move `rows` rows
// (d advancing by dstep, s by sstep) in 16-float masked vectors where AVX-512 is compiled in, the
// masks computed once when a row fits one vector: pad_rows writes d[0, n) = s over [lo, hi), 0
// elsewhere (im2col's padded row); add_rows adds d[0, n) += s[0, n) (col2im's row). Plain loops
// otherwise, and for double.
template <typename T>
inline void pad_rows(T* d, int64_t dstep, const T* s, int64_t sstep, int64_t rows, int64_t lo, int64_t hi, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep) {
    for (int64_t i = 0; i < lo; ++i) d[i] = T(0);
    for (int64_t i = lo; i < hi; ++i) d[i] = s[i];
    for (int64_t i = hi; i < n; ++i) d[i] = T(0);
  }
}
template <typename T>
inline void add_rows(T* d, int64_t dstep, const T* s, int64_t sstep, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
}
#if defined(__AVX512F__)
// lanes [a, b) of a 16-lane vector, clipped to [0, 16)
inline __mmask16 lanes(int64_t a, int64_t b) {
  a = std::max<int64_t>(a, 0);
  b = std::min<int64_t>(b, 16);
  return a >= b ? __mmask16(0) : __mmask16(((1u << (b - a)) - 1u) << a);
}
template <>
inline void pad_rows<float>(float* d, int64_t dstep, const float* s, int64_t sstep, int64_t rows, int64_t lo,
                            int64_t hi, int64_t n) {
  if (lo == 0 && hi == n && n % 8 == 0) {  // whole 8-float vectors, unmasked (masked ones cost more here)
    for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
      for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(d + i, _mm256_loadu_ps(s + i));
    return;
  }
  if (n <= 16) {  // lanes outside [lo, hi) are neither read nor kept
    const __mmask16 in = lanes(lo, hi), out = lanes(0, n);
    for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
      _mm512_mask_storeu_ps(d, out, _mm512_maskz_loadu_ps(in, s));
    return;
  }
  for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
    for (int64_t k = 0; k < n; k += 16)
      _mm512_mask_storeu_ps(d + k, lanes(0, n - k), _mm512_maskz_loadu_ps(lanes(lo - k, hi - k), s + k));
}
template <>
inline void add_rows<float>(float* d, int64_t dstep, const float* s, int64_t sstep, int64_t rows, int64_t n) {
  if (n % 8 == 0) {  // whole 8-float vectors, unmasked (masked ones cost more here)
    for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
      for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(d + i), _mm256_loadu_ps(s + i)));
    return;
  }
  if (n <= 16) {
    const __mmask16 m = lanes(0, n);
    for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
      _mm512_mask_storeu_ps(d, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), _mm512_maskz_loadu_ps(m, s)));
    return;
  }
  for (int64_t r = 0; r < rows; ++r, d += dstep, s += sstep)
    for (int64_t k = 0; k < n; k += 16) {
      const __mmask16 m = lanes(0, n - k);
      _mm512_mask_storeu_ps(d + k, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + k), _mm512_maskz_loadu_ps(m, s + k)));
    }
}
#endif

// -- convolution geometry ----------------------------------------------------------------------------
struct Conv {
  const char* op;
  int64_t N, C, H, W, O, kh, kw, Ho, Wo;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t K() const { return C * kh * kw; }  // rows of the column matrix
  int64_t P() const { return Ho * Wo; }      // its columns: output positions of one image
  int64_t HW() const { return H * W; }
  // a 1x1 kernel at stride 1 without padding reads x as it is: no columns to build
  bool direct() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

Conv conv_geom(const char* op, const int64_t* xs, const int64_t* ws, const int32_t* hp) {
  Conv g{op, xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], 0, 0, hp[0], hp[1], hp[2], hp[3], hp[4], hp[5]};
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0) fail(op, ": bad stride, padding or dilation");
  int64_t eh = g.dh * (g.kh - 1) + 1, ew = g.dw * (g.kw - 1) + 1;
  if (g.kh < 1 || g.kw < 1 || eh > g.H + 2 * g.ph || ew > g.W + 2 * g.pw)
    fail(op, ": the kernel does not fit the padded input (x ", g.N, "x", g.C, "x", g.H, "x", g.W, ", kernel ", g.kh, "x", g.kw, ")");
  g.Ho = (g.H + 2 * g.ph - eh) / g.sh + 1;
  g.Wo = (g.W + 2 * g.pw - ew) / g.sw + 1;
  return g;
}

void check_dims(const Conv& g, const mf_tensor& t, const char* what, int64_t a, int64_t b, int64_t c, int64_t d) {
  if (t.shape[0] != a || t.shape[1] != b || t.shape[2] != c || t.shape[3] != d)
    fail(g.op, ": ", what, " is ", shape_str(t), "; expected ", a, "x", b, "x", c, "x", d);
}

void check_float(const char* op, const mf_tensor& a, const mf_tensor& b, const mf_tensor& out) {
  if (a.dtype_id != b.dtype_id || out.dtype_id != a.dtype_id)
    fail(op, ": inputs and output must share one dtype (got ", dtype_name(a.dtype_id), ", ", dtype_name(b.dtype_id),
         " -> ", dtype_name(out.dtype_id), ")");
  if (!dtype_is_float(a.dtype_id)) fail(op, ": dtype ", dtype_name(a.dtype_id), " not supported; expected float32 or float64");
}

// How a conv routine splits its work: nt threads take contiguous ranges of the batch (each with
// its own scratch slot, and single-threaded GEMMs), and each thread handles its images g at a
// time, their columns side by side in one K x (g*P) matrix, so that one GEMM is at least
// kGemmCols wide: with few output positions per image (P = 64 in LeNet's second layer) a GEMM
// per image is too narrow for OpenBLAS's kernels; with many, chunks only add copies. When the
// batch is smaller than the thread count, images run one chunk at a time and the threads go to
// im2col/col2im (over channels) and to OpenBLAS's own GEMM threads. An image whose column
// matrix outgrows kTileBytes (a ResNet 3x3 layer: 576 x 3136, 7 MB) goes through it in tiles of
// `rows` output rows instead: im2col writes a tile that stays in L2 (or near), OpenBLAS packs it from
// there, and the GEMM reads gy / writes y in place (leading dimension P): no chunk copies.
struct ConvPlan {
  int nt;        // threads splitting the batch (1: none)
  int64_t g;     // images per GEMM
  int64_t rows;  // output rows per tile (Ho: whole images)
  int64_t cols;  // elements of the column matrix (K x g*P, or K x rows*Wo), 0 for a direct 1x1 conv
  int64_t buf;   // elements of the gathered gy / the GEMM result before it is scattered (O x g*P)
  int64_t acc;   // elements of a per-thread weight-gradient accumulator (O x K)
  int64_t tacc;  // elements of the weight gradient as the GEMM gives it (K x O, see conv_plan)
  size_t slot_bytes(int es) const { return Scratch::round(size_t(cols + buf + acc + tacc) * size_t(es)); }
};

constexpr int64_t kGemmCols = 256;                 // target GEMM width, in output positions
constexpr int64_t kSlotBudget = int64_t(1) << 20;  // bytes of columns per chunk, beyond one image
// largest column tile, about one core's L2 (1 MB on the EPYC this was tuned on): a ResNet layer
// (576 x 3136 a image) in tiles of 7 output rows ran 0.87-0.96x the time of 2-row tiles (384 KB)
// at 1 thread with OpenBLAS's AVX-512 kernels (flat from 1 to 2 MB)
constexpr int64_t kTileBytes = int64_t(1) << 20;

ConvPlan conv_plan(int kind, const Conv& g, int es) {
  ConvPlan pl{};
  int threads = get_num_threads();
  pl.nt = threads > 1 && g.N >= threads ? threads : 1;
  int64_t per_thread = pl.nt > 1 ? (g.N + pl.nt - 1) / pl.nt : g.N;
  int64_t P = std::max<int64_t>(g.P(), 1), per_image = (g.K() + g.O) * P * es;
  int64_t want = (kGemmCols + P - 1) / P, fits = kSlotBudget / std::max<int64_t>(per_image, 1);
  pl.g = g.direct() ? 1 : std::max<int64_t>(1, std::min({want, fits, per_thread}));
  pl.rows = g.Ho;
  const int64_t row_bytes = g.K() * g.Wo * es;
  if (!g.direct() && g.Ho > 1 && row_bytes * g.Ho > kTileBytes) {
    pl.g = 1;
    pl.rows = std::max<int64_t>(1, std::min(g.Ho, kTileBytes / std::max<int64_t>(row_bytes, 1)));
  }
  pl.cols = g.direct() ? 0 : pl.rows < g.Ho ? g.K() * pl.rows * g.Wo : g.K() * pl.g * g.P();
  pl.buf = pl.g > 1 ? g.O * pl.g * g.P() : 0;
  pl.acc = kind == 2 && pl.nt > 1 ? g.O * g.K() : 0;
  // The weight gradient is computed as cols * gy^T (K x O), then transposed: OpenBLAS packs the
  // column matrix far faster as that GEMM's left operand than as the right one of gy * cols^T
  // (16x144x256 a GEMM, 1 thread: 0.5-0.7x the time; a ResNet layer ~0.95x)
  pl.tacc = kind == 2 ? g.O * g.K() : 0;
  // BLAS takes int dims and leading dims
  const int64_t kMax = std::numeric_limits<int>::max();
  if (g.K() > kMax || g.O > kMax || pl.g * g.P() > kMax || g.C * g.HW() > kMax)
    fail(g.op, ": a ", g.N, "x", g.C, "x", g.H, "x", g.W, " input with ", g.O, " filters exceeds BLAS's int sizes");
  return pl;
}

// Output rows [oa, ob) of an image's tiles that read row offset hoff inside x: [*lo, *hi).
inline void rows_inside(const Conv& g, int64_t hoff, int64_t oa, int64_t ob, int64_t* lo, int64_t* hi) {
  int64_t l, h;
  valid_range(hoff, g.sh, g.H, g.Ho, &l, &h);
  *lo = std::min(std::max(l, oa), ob);
  *hi = std::min(std::max(h, *lo), ob);
}

// Columns of output rows [oa, ob) of one image x (C x H x W, contiguous) into col, a matrix with
// row stride ld: row (c, i, j) holds x[c][oh*sh - ph + i*dh][ow*sw - pw + j*dw] at column
// (oh - oa)*Wo + ow, 0 where that falls in the padding. Output rows are often short (8 or 12
// elements), so the padding tests are hoisted out of the row loop and a whole-row copy has its
// own tight loop.
template <typename T>
void im2col(const T* x, T* col, int64_t ld, const Conv& g, bool par, int64_t oa, int64_t ob) {
  const int64_t Wo = g.Wo;
  auto rows = [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c)
      for (int64_t i = 0; i < g.kh; ++i) {
        int64_t hoff = i * g.dh - g.ph, ohl, ohh;  // output rows [ohl, ohh) read inside x
        rows_inside(g, hoff, oa, ob, &ohl, &ohh);
        for (int64_t j = 0; j < g.kw; ++j) {
          T* dst = col + ((c * g.kh + i) * g.kw + j) * ld - oa * Wo;  // at output row 0
          int64_t woff = j * g.dw - g.pw, lo, hi;
          valid_range(woff, g.sw, g.W, Wo, &lo, &hi);
          std::fill(dst + oa * Wo, dst + ohl * Wo, T(0));
          std::fill(dst + ohh * Wo, dst + ob * Wo, T(0));
          const T* src = x + (c * g.H + ohl * g.sh + hoff) * g.W + woff;  // at ow = 0
          const int64_t step = g.sh * g.W;
          if (g.sw == 1 && lo == 0 && hi == Wo && step == Wo) {  // the rows lie end to end on both sides
            std::memcpy(dst + ohl * Wo, src, size_t(std::max<int64_t>(ohh - ohl, 0) * Wo) * sizeof(T));
            continue;
          }
          if (g.sw == 1) {
            pad_rows(dst + ohl * Wo, Wo, src, step, ohh - ohl, lo, hi, Wo);
            continue;
          }
          for (int64_t oh = ohl; oh < ohh; ++oh, src += step) {
            T* d = dst + oh * Wo;
            for (int64_t ow = 0; ow < lo; ++ow) d[ow] = T(0);
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * g.sw];
            for (int64_t ow = hi; ow < Wo; ++ow) d[ow] = T(0);
          }
        }
      }
  };
  if (par) parallel_for(g.C, g.kh * g.kw * (ob - oa) * Wo, rows);
  else rows(0, g.C);
}

// The adjoint of im2col for output rows [oa, ob): adds every column entry into gx (one image,
// C x H x W) at the input position it was read from; zero: gx's planes are zeroed first.
template <typename T>
void col2im(const T* col, int64_t ld, T* gx, const Conv& g, bool par, int64_t oa, int64_t ob, bool zero) {
  const int64_t Wo = g.Wo;
  auto planes = [&](int64_t cb, int64_t ce) {
    if (zero) std::fill(gx + cb * g.HW(), gx + ce * g.HW(), T(0));
    for (int64_t c = cb; c < ce; ++c)
      for (int64_t i = 0; i < g.kh; ++i) {
        int64_t hoff = i * g.dh - g.ph, ohl, ohh;
        rows_inside(g, hoff, oa, ob, &ohl, &ohh);
        for (int64_t j = 0; j < g.kw; ++j) {
          const T* src = col + ((c * g.kh + i) * g.kw + j) * ld - oa * Wo;  // at output row 0
          int64_t woff = j * g.dw - g.pw, lo, hi;
          valid_range(woff, g.sw, g.W, Wo, &lo, &hi);
          T* dst = gx + (c * g.H + ohl * g.sh + hoff) * g.W + woff;  // at ow = 0
          const int64_t step = g.sh * g.W;
          if (g.sw == 1) {
            add_rows(dst + lo, step, src + ohl * Wo + lo, Wo, ohh - ohl, hi - lo);
          } else {
            for (int64_t oh = ohl; oh < ohh; ++oh, dst += step) {
              const T* s = src + oh * Wo;
              for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw] += s[ow];
            }
          }
        }
      }
  };
  if (par) parallel_for(g.C, g.kh * g.kw * (ob - oa) * Wo, planes);
  else planes(0, g.C);
}

// Moves images [n, n + cnt) between the batch layout (cnt x O x P, contiguous) and a chunk
// matrix (O x cnt*P): gathering gy before a GEMM, scattering a GEMM's result into y.
template <typename T>
void to_chunk(const T* batch, T* chunk, int64_t cnt, int64_t O, int64_t P) {
  for (int64_t i = 0; i < cnt; ++i)
    for (int64_t o = 0; o < O; ++o) std::memcpy(chunk + o * cnt * P + i * P, batch + (i * O + o) * P, size_t(P) * sizeof(T));
}
template <typename T>
void from_chunk(const T* chunk, T* batch, int64_t cnt, int64_t O, int64_t P) {
  for (int64_t i = 0; i < cnt; ++i)
    for (int64_t o = 0; o < O; ++o) std::memcpy(batch + (i * O + o) * P, chunk + o * cnt * P + i * P, size_t(P) * sizeof(T));
}

// -- Winograd ----------------------------------------------------------------------------------------
// Which layers go through winograd.cc instead of im2col + GEMM: a 3x3 kernel at stride 1, dilation 1
// (any padding), forward (kind 0) or backward to the input (kind 1: the convolution of gy, padded by
// 2 - padding, with the flipped, transposed weights), when the channels are enough for the transforms
// to pay (see wino_tile). MF_CONV_WINOGRAD (read once): "off" never, "2" or "4" forces that tile
// wherever the geometry allows (tests, comparisons); unset or "auto": the rule below.
int wino_env() {
  static const int v = [] {
    const char* e = std::getenv("MF_CONV_WINOGRAD");
    if (!e || !*e || !std::strcmp(e, "auto")) return -1;
    if (!std::strcmp(e, "off") || !std::strcmp(e, "0")) return 0;
    if (!std::strcmp(e, "2")) return 2;
    if (!std::strcmp(e, "4")) return 4;
    return -1;
  }();
  return v;
}

// The tile side for w's Winograd path (2 or 4), 0 where im2col + GEMM is the better choice. Measured
// at 1 thread (CPU time, F(2x2) / F(4x4) / im2col, ms): 4x16x16x16 by 16 channels 0.047 / 0.095 /
// 0.029 (the bench's small case: im2col); 4x8x16x16 by 8 0.027 / 0.040 / 0.010; 16x16x32x32 by 16
// 0.47 / 0.44 / 0.80; 16x32x16x16 by 32 0.34 / 0.50 / 0.51; 8x64x14x14 by 64 0.39 / 0.63 / 0.63;
// 8x128x7x7 by 128 0.87 / 1.0 / 0.64, and 32x128x7x7 2.57 / 3.3 / 2.58 (7x7 maps: im2col);
// 1x64x56x56 by 64 0.65 / 0.69 / 1.29; 32x32x28x28 by 32 1.9 / 1.6 / 3.4; 32x64x56x56 by 64 (the
// bench's large case) 21 / 18 / 44. F(4x4) pays where rows are long (short rows leave its 16-tile
// vectors part empty), but its float32 error is 5-25x the direct sum's (README, "Convolution"):
// float32 takes F(2x2), as accurate as im2col, unless MF_CONV_WINOGRAD=4; float64 (F(4x4) error
// under 1e-14 of the sum of |terms|) takes F(4x4) on maps of 28 or more (the bench's layer 46 ms by
// F(2x2), 36 by F(4x4), 98 by im2col, loaded machine).
int wino_tile(const WinoConv& w, int es) {
  const double macs = double(w.N) * double(w.Ho) * double(w.Wo) * double(w.Ci) * double(w.Co) * 9;
  if (w.Ci < 16 || w.Co < 16 || std::min(w.Ho, w.Wo) < 8 || macs < 16e6) return 0;
  // the weights are transformed on every call: 1x512x16x16 by 512 (256 outputs a map) took 12 ms by
  // F(2x2) against im2col's 6.8 before that transform ran as vector loops, and still needs more
  // outputs than that to pay
  if (w.N * w.Ho * w.Wo < 512) return 0;
  // (F(4x4) mixes a whole 6x6 patch into each output: with padding 3 or more, windows wholly in the
  // padding would come out near 0 rather than 0)
  const int m = es == 8 && std::min(w.Ho, w.Wo) >= 28 && w.ph <= 2 && w.pw <= 2 ? 4 : 2;
  // the transformed weights, (m+2)^2 x Co x Ci, are a buffer of the call: at most 128 MB of it
  // (1024 x 1024 channels at F(2x2) in float32 take 64 MiB: 2x1024x16x16 by 1024 ran 55 ms against
  // im2col's 121; 2048 x 2048 would take 256 MiB)
  if (double((m + 2) * (m + 2)) * double(w.Co) * double(w.Ci) * es > 128e6) return 0;
  return m;
}

// Fills w with the Winograd geometry of routine kind on g; false where the path does not apply.
bool wino_of(int kind, const Conv& g, int es, WinoConv* w) {
  if (kind == 2 || g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.dh != 1 || g.dw != 1) return false;
  if (g.N == 0 || g.C == 0 || g.O == 0) return false;
  WinoConv& v = *w;
  v = WinoConv{};
  if (kind == 0) {
    v.N = g.N, v.Ci = g.C, v.H = g.H, v.W = g.W, v.Co = g.O, v.Ho = g.Ho, v.Wo = g.Wo, v.ph = g.ph, v.pw = g.pw, v.flip = false;
  } else {  // gx (N x C x H x W) = gy (N x O x Ho x Wo) convolved with w^T flipped, padding 2 - p
    v.N = g.N, v.Ci = g.O, v.H = g.Ho, v.W = g.Wo, v.Co = g.C, v.Ho = g.H, v.Wo = g.W, v.ph = 2 - g.ph, v.pw = 2 - g.pw;
    v.flip = true;
  }
  const int env = wino_env();
  const int m = env >= 0 ? env : wino_tile(v, es);
  return m != 0 && wino_plan(v, m, es);
}

// kind 0: y = conv2d(x, w); 1: gx = conv2d_backward_input(gy, w); 2: gw = conv2d_backward_weight(gy, x).
// a and b are the routine's two data inputs in that order.
template <typename T>
void conv_run(int kind, const Conv& g, mf_tensor& out, const mf_tensor& a, const mf_tensor& b, mf_tensor* ws) {
  const int64_t K = g.K(), P = g.P(), O = g.O, CHW = g.C * g.HW(), OP = O * P;
  T* op = (T*)out.ptr;
  bool empty = kind == 0 ? (K == 0 || O == 0) : kind == 1 ? (O == 0 || K == 0) : (g.N == 0 || O == 0 || K == 0);
  if (empty) {  // nothing to sum: zeros (or an empty output)
    std::fill(op, op + out.count, T(0));
    return;
  }
  WinoConv wg;
  if (wino_of(kind, g, int(sizeof(T)), &wg)) {
    const int wt = get_num_threads();
    const size_t need = wino_scratch_bytes(wg, int(sizeof(T)), wt);
    Scratch s(ws, pack_bytes(a) + pack_bytes(b) + need);
    const T* ap = packed<T>(a, s);
    const T* bp = packed<T>(b, s);
    if (wino_run<T>(wg, ap, bp, op, s.take<char>(int64_t(need)), wt)) return;
    // an output came out Inf or NaN: the direct path below gives the direct convolution's answer
  }
  ConvPlan pl = conv_plan(kind, g, int(sizeof(T)));
  int nt = pl.nt;
  bool par = nt == 1 && get_num_threads() > 1;
  size_t slot_bytes = pl.slot_bytes(int(sizeof(T)));
  Scratch s(ws, pack_bytes(a) + pack_bytes(b) + slot_bytes * size_t(nt));
  const T* ap = packed<T>(a, s);
  const T* bp = packed<T>(b, s);
  T* slots = s.take<T>(int64_t(slot_bytes / sizeof(T)) * nt);
  const int64_t slot = int64_t(slot_bytes / sizeof(T));
  for_images(g.N, nt, [&](int t, int64_t nb, int64_t ne) {
    T* col = slots + t * slot;
    T* buf = col + pl.cols;
    T* acc = kind == 2 && nt > 1 ? buf + pl.buf : op;
    if (kind == 2 && nb >= ne) std::fill(acc, acc + O * K, T(0));
    T* tacc = buf + pl.buf + pl.acc;  // kind 2: the thread's gradient, K x O
    // tacc (K x O) += cols (K x len, leading dimension lc) * gy^T (len x O, gy leading dimension lg)
    auto wgrad = [&](const T* gyp, int64_t lg, const T* cm, int64_t lc, int64_t len, T beta) {
      gemm(CblasNoTrans, CblasTrans, K, O, len, cm, lc, gyp, lg, beta, tacc, O);
    };
    auto finish = [&] {  // acc = tacc^T
      if (kind != 2 || nb >= ne) return;
      for (int64_t o = 0; o < O; ++o)
        for (int64_t k = 0; k < K; ++k) acc[o * K + k] = tacc[k * O + o];
    };
    if (pl.rows < g.Ho) {  // image by image, tile by tile: gy and y in place, leading dimension P
      for (int64_t n = nb; n < ne; ++n)
        for (int64_t oa = 0; oa < g.Ho; oa += pl.rows) {
          const int64_t ob = std::min(g.Ho, oa + pl.rows), ld = (ob - oa) * g.Wo;
          if (kind == 0) {  // y tile (O x ld) = w (O x K) * cols (K x ld)
            im2col(ap + n * CHW, col, ld, g, par, oa, ob);
            gemm(CblasNoTrans, CblasNoTrans, O, ld, K, bp, K, col, ld, T(0), op + n * OP + oa * g.Wo, P);
          } else if (kind == 1) {  // cols (K x ld) = w^T (K x O) * gy tile, added into gx
            gemm(CblasTrans, CblasNoTrans, K, ld, O, bp, K, ap + n * OP + oa * g.Wo, P, T(0), col, ld);
            col2im(col, ld, op + n * CHW, g, par, oa, ob, oa == 0);
          } else {  // acc (O x K) += gy tile (O x ld) * cols^T (ld x K), as its transpose
            im2col(bp + n * CHW, col, ld, g, par, oa, ob);
            const T beta = n == nb && oa == 0 ? T(0) : T(1);
            wgrad(ap + n * OP + oa * g.Wo, P, col, ld, ld, beta);
          }
        }
      finish();
      return;
    }
    for (int64_t n0 = nb; n0 < ne; n0 += pl.g) {
      const int64_t cnt = std::min(pl.g, ne - n0), ld = cnt * P;
      if (kind == 0) {  // y_chunk (O x cnt*P) = w (O x K) * cols (K x cnt*P)
        const T* cm = ap + n0 * CHW;  // a direct conv reads x as its own columns
        if (!g.direct()) {
          for (int64_t i = 0; i < cnt; ++i) im2col(ap + (n0 + i) * CHW, col + i * P, ld, g, par, 0, g.Ho);
          cm = col;
        }
        T* dst = cnt > 1 ? buf : op + n0 * OP;
        gemm(CblasNoTrans, CblasNoTrans, O, ld, K, bp, K, cm, ld, T(0), dst, ld);
        if (cnt > 1) from_chunk(buf, op + n0 * OP, cnt, O, P);
      } else {
        const T* gyc = ap + n0 * OP;  // gy of the chunk as O x cnt*P
        if (cnt > 1) {
          to_chunk(gyc, buf, cnt, O, P);
          gyc = buf;
        }
        if (kind == 1) {  // cols (K x cnt*P) = w^T (K x O) * gy_chunk, then col2im image by image
          if (g.direct()) {
            gemm(CblasTrans, CblasNoTrans, K, P, O, bp, K, gyc, P, T(0), op + n0 * CHW, P);
          } else {
            gemm(CblasTrans, CblasNoTrans, K, ld, O, bp, K, gyc, ld, T(0), col, ld);
            for (int64_t i = 0; i < cnt; ++i) col2im(col + i * P, ld, op + (n0 + i) * CHW, g, par, 0, g.Ho, true);
          }
        } else {  // acc (O x K) += gy_chunk (O x cnt*P) * cols^T (cnt*P x K), as its transpose
          const T* cm = bp + n0 * CHW;
          if (!g.direct()) {
            for (int64_t i = 0; i < cnt; ++i) im2col(bp + (n0 + i) * CHW, col + i * P, ld, g, par, 0, g.Ho);
            cm = col;
          }
          wgrad(gyc, ld, cm, ld, ld, n0 == nb ? T(0) : T(1));
        }
      }
    }
    finish();
  });
  if (kind == 2 && nt > 1) {  // sum the per-thread accumulators
    const int64_t at = pl.cols + pl.buf;
    parallel_for(O * K, nt, [&](int64_t ib, int64_t ie) {
      for (int64_t i = ib; i < ie; ++i) {
        T v = 0;
        for (int t = 0; t < nt; ++t) v += slots[t * slot + at + i];
        op[i] = v;
      }
    });
  }
}

// The geometry of one conv routine from its tensors; checks what the shape rules checked, so a
// direct caller of the C ABI gets an error rather than a stray write.
Conv conv_of(int kind, const mf_tensor& out, const mf_tensor& a, const mf_tensor& b, const int32_t* hp) {
  static const char* names[] = {"conv2d", "conv2d_backward_input", "conv2d_backward_weight"};
  const char* op = names[kind];
  kcheck::nchw(op, "output", out);
  kcheck::nchw(op, "input 1", a);
  kcheck::nchw(op, "input 2", b);
  // x and w shapes as the forward conv saw them
  const int64_t* xs = kind == 0 ? a.shape : kind == 1 ? out.shape : b.shape;
  const int64_t* wsh = kind == 0 ? b.shape : kind == 1 ? b.shape : out.shape;
  Conv g = conv_geom(op, xs, wsh, hp);
  if (xs[1] != wsh[1]) fail(op, ": x has ", xs[1], " channels, w expects ", wsh[1]);
  const mf_tensor& y = kind == 0 ? out : a;
  check_dims(g, y, kind == 0 ? "the output" : "gy", g.N, g.O, g.Ho, g.Wo);
  return g;
}

}  // namespace

int64_t conv2d_workspace_cpu(int kind, const mf_tensor& out, const mf_tensor& a, const mf_tensor& b, const int32_t* hp) {
  if (kind < 0 || kind > 2) fail("conv2d: bad routine code ", kind);
  Conv g = conv_of(kind, out, a, b, hp);
  int es = dtype_size(out.dtype_id);
  ConvPlan pl = conv_plan(kind, g, es);
  size_t need = pl.slot_bytes(es) * size_t(pl.nt);
  WinoConv wg;  // the Winograd path, and im2col + GEMM where an output comes out Inf or NaN
  if (wino_of(kind, g, es, &wg)) need = std::max(need, wino_scratch_bytes(wg, es, get_num_threads()));
  return int64_t(pack_bytes(a) + pack_bytes(b) + need);
}

void conv2d_cpu(mf_tensor& y, const mf_tensor& x, const mf_tensor& w, mf_tensor* ws, const int32_t* hp) {
  check_float("conv2d", x, w, y);
  need_contiguous_out("conv2d", y);
  Conv g = conv_of(0, y, x, w, hp);
  MF_DISPATCH_FLOAT(x.dtype_id, T, "conv2d", conv_run<T>(0, g, y, x, w, ws));
}

void conv2d_backward_input_cpu(mf_tensor& gx, const mf_tensor& gy, const mf_tensor& w, mf_tensor* ws, const int32_t* hp) {
  check_float("conv2d_backward_input", gy, w, gx);
  need_contiguous_out("conv2d_backward_input", gx);
  Conv g = conv_of(1, gx, gy, w, hp);
  MF_DISPATCH_FLOAT(gy.dtype_id, T, "conv2d_backward_input", conv_run<T>(1, g, gx, gy, w, ws));
}

void conv2d_backward_weight_cpu(mf_tensor& gw, const mf_tensor& gy, const mf_tensor& x, mf_tensor* ws, const int32_t* hp) {
  check_float("conv2d_backward_weight", gy, x, gw);
  need_contiguous_out("conv2d_backward_weight", gw);
  Conv g = conv_of(2, gw, gy, x, hp);
  MF_DISPATCH_FLOAT(gy.dtype_id, T, "conv2d_backward_weight", conv_run<T>(2, g, gw, gy, x, ws));
}

}  // namespace mf
