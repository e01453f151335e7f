// Vector math block routines (see vecmath.h): one library per build, chosen by CMake's MF_VECMATH
// (compile definition MF_VECMATH_SLEEF, MF_VECMATH_MVEC or neither) and one vector width, chosen
// by the compile-time ISA: the library is built with -march=native (MF_NATIVE), so the macros
// name what the build machine runs. AVX-512 (16 floats) where __AVX512F__ unless MF_VECMATH_256,
// else AVX2 + FMA (8 floats), else SSE (4 floats; SLEEF's dispatching entry points, which pick
// SSE2 or SSE4.1 at run time; libmvec's SSE4 ifuncs, which do the same).
#include "vecmath.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

#if defined(MF_VECMATH_SLEEF) || defined(MF_VECMATH_MVEC)
#include <immintrin.h>
#define MF_VM_VECTOR 1
#if defined(__AVX512F__) && !defined(MF_VECMATH_256)
#define MF_VM_ISA 512
#elif defined(__AVX2__) && defined(__FMA__)
#define MF_VM_ISA 256
#else
#define MF_VM_ISA 128
#endif
#endif

#if defined(MF_VECMATH_SLEEF)
#include <sleef.h>
// SF(exp, u10): the float function at this width, SD the double one
#if MF_VM_ISA == 512
#define SF(nm, u) Sleef_##nm##f16_##u##avx512f
#define SD(nm, u) Sleef_##nm##d8_##u##avx512f
#elif MF_VM_ISA == 256
#define SF(nm, u) Sleef_##nm##f8_##u##avx2
#define SD(nm, u) Sleef_##nm##d4_##u##avx2
#else
#define SF(nm, u) Sleef_##nm##f4_##u
#define SD(nm, u) Sleef_##nm##d2_##u
#endif
#elif defined(MF_VECMATH_MVEC)
// libmvec's entry points, by the x86-64 vector function ABI's names (_ZGV, ISA letter b/d/e for
// SSE4/AVX2/AVX-512, N = unmasked, lanes, one v per vector argument). glibc's math.h declares
// them only under -ffast-math, which would also drop the NaN and infinity semantics the op
// harness checks; declared here by hand, they are the same functions #pragma omp simd would call.
#if MF_VM_ISA == 512
#define MVF(nm) _ZGVeN16v_##nm##f
#define MVD(nm) _ZGVeN8v_##nm
#define MVPOWF _ZGVeN16vv_powf
#define MVPOWD _ZGVeN8vv_pow
#elif MF_VM_ISA == 256
#define MVF(nm) _ZGVdN8v_##nm##f
#define MVD(nm) _ZGVdN4v_##nm
#define MVPOWF _ZGVdN8vv_powf
#define MVPOWD _ZGVdN4vv_pow
#else
#define MVF(nm) _ZGVbN4v_##nm##f
#define MVD(nm) _ZGVbN2v_##nm
#define MVPOWF _ZGVbN4vv_powf
#define MVPOWD _ZGVbN2vv_pow
#endif
#endif

namespace mf {
namespace vm {

namespace {

#if MF_VM_VECTOR
#if MF_VM_ISA == 512
using VF = __m512;
using VD = __m512d;
#elif MF_VM_ISA == 256
using VF = __m256;
using VD = __m256d;
#else
using VF = __m128;
using VD = __m128d;
#endif
template <class T> struct Vec;
template <> struct Vec<float> { using type = VF; };
template <> struct Vec<double> { using type = VD; };

// x86's default NaN (sign set, quiet bit set): what an invalid operation on non-NaN operands
// gives in scalar code (log(-1), sin(inf)).
inline float default_nan(float) { return -__builtin_nanf(""); }
inline double default_nan(double) { return -__builtin_nan(""); }

// One vector of W lanes: z = fn(x[, y]) with every NaN result rewritten as the scalar functions give
// it: a NaN operand's own value, else the default NaN. The libraries build NaN by or-ing a mask in
// (SLEEF's tanh gives all bits set), and LuaJIT reads a float NaN with a full payload as a tagged
// value (nil), not as a number.
// Whether any lane of v is NaN: one compare, so vectors without NaN skip the lane-by-lane rewrite
// below (it cost more than the library function: vm::log 1.24 ns an element against SLEEF's 0.52).
#if MF_VM_ISA == 512
inline bool any_nan(__m512 v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }
inline bool any_nan(__m512d v) { return _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q) != 0; }
#elif MF_VM_ISA == 256
inline bool any_nan(__m256 v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }
inline bool any_nan(__m256d v) { return _mm256_movemask_pd(_mm256_cmp_pd(v, v, _CMP_UNORD_Q)) != 0; }
#else
inline bool any_nan(__m128 v) { return _mm_movemask_ps(_mm_cmpunord_ps(v, v)) != 0; }
inline bool any_nan(__m128d v) { return _mm_movemask_pd(_mm_cmpunord_pd(v, v)) != 0; }
#endif

template <class T, int64_t W, class Fn, class... In>
inline void lanes(Fn fn, T* z, const In*... x) {
  using V = typename Vec<T>::type;
  V v = fn([](const T* p) { V a; std::memcpy(&a, p, sizeof a); return a; }(x)...);
  if (!any_nan(v)) {
    std::memcpy(z, &v, sizeof v);
    return;
  }
  T out[W];
  std::memcpy(out, &v, sizeof v);
  for (int64_t k = 0; k < W; ++k) {
    T o = out[k];
    if (o != o) {
      o = default_nan(o);
      for (T a : {x[k]...}) if (a != a) { o = a; break; }
    }
    z[k] = o;
  }
}

// z = fn(x[, y]) over n elements, a vector at a time; the last partial vector is padded with zeros
// (a value every function here takes without a fault) so each element goes through the same code.
// z may be x or y (an in-place op): a vector is read whole before it is written.
template <class T, class Fn, class... In>
inline void map(Fn fn, T* z, int64_t n, const In*... x) {
  using V = typename Vec<T>::type;
  constexpr int64_t W = sizeof(V) / sizeof(T);
  int64_t i = 0;
  for (; i + W <= n; i += W) lanes<T, W>(fn, z + i, (x + i)...);
  if (i < n) {
    T buf[sizeof...(In)][W] = {}, out[W];
    int j = 0;
    for (const T* p : {x...}) std::memcpy(buf[j++], p + i, size_t(n - i) * sizeof(T));
    if constexpr (sizeof...(In) == 1) lanes<T, W>(fn, out, buf[0]);
    else lanes<T, W>(fn, out, buf[0], buf[1]);
    std::memcpy(z + i, out, size_t(n - i) * sizeof(T));
  }
}
template <class T, class Fn>
inline void map1(Fn fn, const T* x, T* y, int64_t n) { map(fn, y, n, x); }
template <class T, class Fn>
inline void map2(Fn fn, const T* x, const T* y, T* z, int64_t n) { map(fn, z, n, x, y); }
#endif

#if defined(MF_VECMATH_SLEEF)
#define MF_VM_DEF(name, u)                                                                       \
  void name##_f(const float* x, float* y, int64_t n) { map1([](VF v) { return SF(name, u)(v); }, x, y, n); } \
  void name##_d(const double* x, double* y, int64_t n) { map1([](VD v) { return SD(name, u)(v); }, x, y, n); }
MF_VM_DEF(exp, u10)
MF_VM_DEF(log, u10)
MF_VM_DEF(log1p, u10)
MF_VM_DEF(tanh, u10)
MF_VM_DEF(erf, u10)
MF_VM_DEF(erfc, u15)  // SLEEF has no 1-ulp erfc; 1.5 ulp
MF_VM_DEF(sin, u10)
MF_VM_DEF(cos, u10)
#undef MF_VM_DEF
void pow_f(const float* x, const float* y, float* z, int64_t n) {
  map2([](VF a, VF b) { return SF(pow, u10)(a, b); }, x, y, z, n);
}
void pow_d(const double* x, const double* y, double* z, int64_t n) {
  map2([](VD a, VD b) { return SD(pow, u10)(a, b); }, x, y, z, n);
}
#elif defined(MF_VECMATH_MVEC)
extern "C" {
#define MF_VM_DECL(name) VF MVF(name)(VF); VD MVD(name)(VD);
MF_VM_DECL(exp)
MF_VM_DECL(log)
MF_VM_DECL(log1p)
MF_VM_DECL(tanh)
MF_VM_DECL(erf)
MF_VM_DECL(erfc)
MF_VM_DECL(sin)
MF_VM_DECL(cos)
#undef MF_VM_DECL
VF MVPOWF(VF, VF);
VD MVPOWD(VD, VD);
}
#define MF_VM_DEF(name)                                                                          \
  void name##_f(const float* x, float* y, int64_t n) { map1([](VF v) { return MVF(name)(v); }, x, y, n); } \
  void name##_d(const double* x, double* y, int64_t n) { map1([](VD v) { return MVD(name)(v); }, x, y, n); }
MF_VM_DEF(exp)
MF_VM_DEF(log)
MF_VM_DEF(log1p)
MF_VM_DEF(tanh)
MF_VM_DEF(erf)
MF_VM_DEF(erfc)
MF_VM_DEF(sin)
MF_VM_DEF(cos)
#undef MF_VM_DEF
void pow_f(const float* x, const float* y, float* z, int64_t n) {
  map2([](VF a, VF b) { return MVPOWF(a, b); }, x, y, z, n);
}
void pow_d(const double* x, const double* y, double* z, int64_t n) {
  map2([](VD a, VD b) { return MVPOWD(a, b); }, x, y, z, n);
}
#else
// No library: the scalar functions, as the functors compute them.
#define MF_VM_DEF(name)                                                                     \
  void name##_f(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = std::name(x[i]); } \
  void name##_d(const double* x, double* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = std::name(x[i]); }
MF_VM_DEF(exp)
MF_VM_DEF(log)
MF_VM_DEF(log1p)
MF_VM_DEF(tanh)
MF_VM_DEF(erf)
MF_VM_DEF(erfc)
MF_VM_DEF(sin)
MF_VM_DEF(cos)
#undef MF_VM_DEF
void pow_f(const float* x, const float* y, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = std::pow(x[i], y[i]);
}
void pow_d(const double* x, const double* y, double* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = std::pow(x[i], y[i]);
}
#endif

inline void exp_(const float* x, float* y, int64_t n) { exp_f(x, y, n); }
inline void exp_(const double* x, double* y, int64_t n) { exp_d(x, y, n); }
inline void erfc_(const float* x, float* y, int64_t n) { erfc_f(x, y, n); }
inline void erfc_(const double* x, double* y, int64_t n) { erfc_d(x, y, n); }

// Ops composed of a library function and arithmetic go a chunk at a time through a stack buffer.
constexpr int64_t kChunk = 256;

// pw::Sigmoid's formula, as a select: exp(-|x|) (never overflows), then 1/(1+e) for x >= 0 and
// e/(1+e) below; both are one rounded division, so the result is the scalar functor's given the
// same exp. NaN stays NaN (exp(NaN) is NaN).
template <class T>
void sigmoid_t(const T* x, T* y, int64_t n) {
  for (int64_t c = 0; c < n; c += kChunk) {
    int64_t m = n - c < kChunk ? n - c : kChunk;
    T e[kChunk];
    for (int64_t i = 0; i < m; ++i) e[i] = -std::fabs(x[c + i]);
    exp_(e, e, m);
    for (int64_t i = 0; i < m; ++i) y[c + i] = (x[c + i] >= T(0) ? T(1) : e[i]) / (T(1) + e[i]);
  }
}

// pw::Gelu's formula: 0.5 x erfc(-x / sqrt 2), in the same order of operations.
template <class T>
void gelu_t(const T* x, T* y, int64_t n) {
  for (int64_t c = 0; c < n; c += kChunk) {
    int64_t m = n - c < kChunk ? n - c : kChunk;
    T e[kChunk];
    for (int64_t i = 0; i < m; ++i) e[i] = x[c + i] * T(-0.7071067811865476);
    erfc_(e, e, m);
    for (int64_t i = 0; i < m; ++i) y[c + i] = T(0.5) * x[c + i] * e[i];
  }
}

#if MF_VM_VECTOR
// float32 gelu without the library's erfc (SLEEF's erfcf computes in double-float pairs: 2.1 ns an
// element, 4x PyTorch's gelu; the fits: scripts/vecmath/fit_gelu_erfc.py, the accuracy:
// scripts/vecmath/gelu_accuracy.lua). With z = -x / sqrt 2 (rounded, as in pw::Gelu) and a = |z|:
//   a < 0.75: erfc(z) = 1 - z S(z^2), S a degree-5 fit of erf(z) / z on z^2 in [0, 0.5625]
//             (relative error 6e-8 with its float32 coefficients, as the degree-6 fit it replaced);
//   a >= 0.75: erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a / 2), P a degree-8 fit of
//             log(erfc(a) / t) + a^2 on a in [0.75, 10.5] (absolute error 4.7e-8 with its float32
//             coefficients, so relative in erfc; past 10.5 erfcf underflows anyway), and
//             erfc(-a) = 2 - erfc(a).
// Both fits are least squares on Chebyshev nodes against float64 erfc, each coefficient rounded to
// float32 in turn from the highest degree and the lower ones refitted (made for this file). The
// exp is the library's (exp_, a vector routine); the rest is plain arithmetic the compiler
// vectorizes: one pass before the exp (both fits, and the small-|z| result or the tail's sign in
// m), one after. -a^2 + P is one fused multiply-add where the ISA has it (the exponent's rounding
// sets the far tail's error). Every block, the last one padded with zeros, runs the same
// fixed-length loops, so an element's result never depends on where it falls (no scalar epilogue,
// no thread-count effect). NaN: z, t and the exponent are NaN and so is the result (x's own NaN: x
// is the product's first operand); +inf gives +inf (erfc -> 2); -inf gives NaN (-inf * 0), as
// pw::Gelu.
void gelu_f32_block(const float* x, float* y) {
  constexpr int64_t B = kChunk;
  float t[B], e[B], m[B];
  for (int64_t i = 0; i < B; ++i) {
    float z = x[i] * -0.70710678118654752f, s = z * z, a = std::fabs(z);
    float u = 1.0f / (1.0f + 0.5f * a);
    float p = -0.193826616f;
    p = p * u + 0.495043784f;
    p = p * u - 0.247106344f;
    p = p * u - 0.218324274f;
    p = p * u - 0.00387933338f;
    p = p * u + 0.0524387658f;
    p = p * u + 0.381034523f;
    p = p * u + 0.999390185f;
    p = p * u - 1.26548696f;
    float q = -0.000678730372f;
    q = q * s + 0.00511988858f;
    q = q * s - 0.0268375203f;
    q = q * s + 0.112834401f;
    q = q * s - 0.37612623f;
    q = q * s + 1.12837911f;
    t[i] = u;
#if defined(__FMA__)
    e[i] = std::fma(-a, a, p);
#else
    e[i] = p - a * a;
#endif
    // m: erfc(z) itself when a < 0.75 (in [0.3, 1.7], so > 0); else -2 (z < 0: 2 - tail) or 0 (tail)
    m[i] = a < 0.75f ? 1.0f - z * q : z < 0.0f ? -2.0f : 0.0f;
  }
  exp_(e, e, B);
  for (int64_t i = 0; i < B; ++i) {
    float tail = t[i] * e[i];
    float c = m[i] > 0.0f ? m[i] : m[i] < 0.0f ? 2.0f - tail : tail;
    y[i] = 0.5f * x[i] * c;
  }
}
// A fresh eager result is cold memory: each block's stores would wait for their lines' reads for
// ownership. The output's lines kAhead elements (8 KB) past each block are asked for first (a
// prefetch for writing; the first call asks for the first 8 KB too), so those reads overlap the
// blocks computed meanwhile; up to kAheadMax elements (1 MB): beyond, the hardware's stream
// prefetch does it and these cost 2-5%. A prefetch writes nothing: results are unchanged. 1 thread,
// eager mf.gelu float32: 16K 10.3 -> 9.0 us, 64K 38 -> 33 us; 256K and warm outputs unchanged.
constexpr int64_t kAhead = 2048, kAheadMax = 262144;
inline void prefetch_out(float* y, int64_t from, int64_t to, int64_t n) {
  for (int64_t i = from; i < (to < n ? to : n); i += 16) __builtin_prefetch(y + i, 1, 3);
}
void gelu_f32(const float* x, float* y, int64_t n) {
  int64_t c = 0;
  const bool ahead = n > kChunk && n <= kAheadMax;
  if (ahead) prefetch_out(y, 0, kAhead, n);
  for (; c + kChunk <= n; c += kChunk) {
    if (ahead) prefetch_out(y, c + kAhead, c + kAhead + kChunk, n);
    gelu_f32_block(x + c, y + c);
  }
  if (c < n) {
    float in[kChunk] = {}, out[kChunk];
    std::memcpy(in, x + c, size_t(n - c) * sizeof(float));
    gelu_f32_block(in, out);
    std::memcpy(y + c, out, size_t(n - c) * sizeof(float));
  }
}
#endif

}  // namespace

#define MF_VM_EXPORT(name)                                                            \
  void name(const float* x, float* y, int64_t n) { name##_f(x, y, n); }              \
  void name(const double* x, double* y, int64_t n) { name##_d(x, y, n); }
MF_VM_EXPORT(exp)
MF_VM_EXPORT(log)
MF_VM_EXPORT(log1p)
MF_VM_EXPORT(tanh)
MF_VM_EXPORT(erf)
MF_VM_EXPORT(sin)
MF_VM_EXPORT(cos)
#undef MF_VM_EXPORT
void sigmoid(const float* x, float* y, int64_t n) { sigmoid_t(x, y, n); }
void sigmoid(const double* x, double* y, int64_t n) { sigmoid_t(x, y, n); }
#if MF_VM_VECTOR
void gelu(const float* x, float* y, int64_t n) { gelu_f32(x, y, n); }
#else
void gelu(const float* x, float* y, int64_t n) { gelu_t(x, y, n); }
#endif
void gelu(const double* x, double* y, int64_t n) { gelu_t(x, y, n); }
void pow(const float* x, const float* y, float* z, int64_t n) { pow_f(x, y, z, n); }
void pow(const double* x, const double* y, double* z, int64_t n) { pow_d(x, y, z, n); }

// relu_backward: GCC compiles the functor's select (y <= 0 ? 0 : x) into a masked load of x whose
// mask is the compare of y, so no load of x leaves before y's has arrived, and a 16 MB run (out of
// the caches) went 20% slower than PyTorch's. Here x is loaded whole (the empty asm keeps GCC from
// folding the mask back into the load) and and-ed with the mask, in every library's build: the same
// bits as the functor (+0 where y <= 0, x where y > 0 or is NaN).
namespace {
#if defined(__AVX512F__)
constexpr int kReluBytes = 64;  // one register's width: the asm's "x" operand must fit in one
#elif defined(__AVX__)
constexpr int kReluBytes = 32;
#else
constexpr int kReluBytes = 16;
#endif
template <class T, class I>
void relu_backward_t(const T* x, const T* y, T* z, int64_t n) {
  constexpr int L = kReluBytes / int(sizeof(T));
  typedef T V __attribute__((vector_size(kReluBytes)));
  typedef I M __attribute__((vector_size(kReluBytes)));
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V a, b;
    std::memcpy(&a, x + i, kReluBytes);
    std::memcpy(&b, y + i, kReluBytes);
#if defined(__x86_64__)
    __asm__("" : "+x"(a));
#endif
    M r = M(a) & ~M(b <= V{});
    std::memcpy(z + i, &r, kReluBytes);
  }
  for (; i < n; ++i) z[i] = y[i] <= T(0) ? T(0) : x[i];
}
}  // namespace
void relu_backward(const float* x, const float* y, float* z, int64_t n) { relu_backward_t<float, int32_t>(x, y, z, n); }
void relu_backward(const double* x, const double* y, double* z, int64_t n) {
  relu_backward_t<double, int64_t>(x, y, z, n);
}

const char* backend() {
#if defined(MF_VECMATH_SLEEF)
#define MF_VM_LIB "sleef"
#elif defined(MF_VECMATH_MVEC)
#define MF_VM_LIB "mvec"
#endif
#if !MF_VM_VECTOR
  return "none (scalar libm)";
#elif MF_VM_ISA == 512
  return MF_VM_LIB " avx512 (16 x float32)";
#elif MF_VM_ISA == 256
  return MF_VM_LIB " avx2 (8 x float32)";
#else
  return MF_VM_LIB " sse (4 x float32)";
#endif
}

}  // namespace vm
}  // namespace mf

const char* mf_vecmath_backend(void) { return mf::vm::backend(); }
