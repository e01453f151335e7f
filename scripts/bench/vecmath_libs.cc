// SLEEF (u10; erfc u15) against glibc's libmvec, their AVX-512 entry points called directly and
// interleaved in one process (issue 12 item 2: which library MF_VECMATH defaults to): ns per
// element, the minimum over 300 timings of 20 calls on 1024 L1-resident elements, three repetitions.
// The inputs are in [0.05, 3.05] (pow: y in [0.5, 1.5]); MF_VM_X0 and MF_VM_DX move the range, e.g.
// -DMF_VM_X0=-150 -DMF_VM_DX=50 for exp's underflow lanes, where libmvec takes a scalar path.
//   g++ -O2 -march=native scripts/bench/vecmath_libs.cc -lsleef -lmvec -lm -o /tmp/vecmath_libs && /tmp/vecmath_libs
#include <cstdint>
#include <cstdio>
#include <chrono>
#include <cmath>
#include <immintrin.h>
#include <sleef.h>
extern "C" {
__m512 _ZGVeN16v_expf(__m512); __m512d _ZGVeN8v_exp(__m512d);
__m512 _ZGVeN16v_logf(__m512); __m512d _ZGVeN8v_log(__m512d);
__m512 _ZGVeN16v_log1pf(__m512); __m512d _ZGVeN8v_log1p(__m512d);
__m512 _ZGVeN16v_tanhf(__m512); __m512d _ZGVeN8v_tanh(__m512d);
__m512 _ZGVeN16v_erff(__m512); __m512d _ZGVeN8v_erf(__m512d);
__m512 _ZGVeN16v_erfcf(__m512); __m512d _ZGVeN8v_erfc(__m512d);
__m512 _ZGVeN16v_sinf(__m512); __m512d _ZGVeN8v_sin(__m512d);
__m512 _ZGVeN16v_cosf(__m512); __m512d _ZGVeN8v_cos(__m512d);
__m512 _ZGVeN16vv_powf(__m512, __m512); __m512d _ZGVeN8vv_pow(__m512d, __m512d);
}
#ifndef MF_VM_X0
#define MF_VM_X0 0.05f
#endif
#ifndef MF_VM_DX
#define MF_VM_DX 3.0f
#endif
constexpr int N = 1024;
alignas(64) float xf[N], yf[N], zf[N]; alignas(64) double xd[N], yd[N], zd[N];
template <class F> double bench(F f) {
  double best = 1e9;
  for (int r = 0; r < 300; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 20; ++k) { f(); asm volatile("" ::: "memory"); }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (20.0 * N);
    if (ns < best) best = ns;
  }
  return best;
}
#define F1(fn) [&] { for (int i = 0; i < N; i += 16) _mm512_store_ps(yf + i, fn(_mm512_load_ps(xf + i))); }
#define D1(fn) [&] { for (int i = 0; i < N; i += 8) _mm512_store_pd(yd + i, fn(_mm512_load_pd(xd + i))); }
#define F2(fn) [&] { for (int i = 0; i < N; i += 16) _mm512_store_ps(yf + i, fn(_mm512_load_ps(xf + i), _mm512_load_ps(zf + i))); }
#define D2(fn) [&] { for (int i = 0; i < N; i += 8) _mm512_store_pd(yd + i, fn(_mm512_load_pd(xd + i), _mm512_load_pd(zd + i))); }
int main() {
  for (int i = 0; i < N; ++i) { xf[i] = MF_VM_X0 + MF_VM_DX * i / N; xd[i] = xf[i]; zf[i] = 1.5f - float(i) / N; zd[i] = zf[i]; }
  for (int rep = 0; rep < 3; ++rep) {
    printf("rep %d: ns/element, sleef / mvec (float32 | float64)\n", rep + 1);
#define ROW(nm, sf, mf, sd, md) { double a = bench(F1(sf)), b = bench(F1(mf)), c = bench(D1(sd)), d = bench(D1(md)); printf("%-6s f32 %.3f / %.3f = %.2f | f64 %.3f / %.3f = %.2f\n", nm, a, b, a / b, c, d, c / d); }
    ROW("exp", Sleef_expf16_u10avx512f, _ZGVeN16v_expf, Sleef_expd8_u10avx512f, _ZGVeN8v_exp)
    ROW("log", Sleef_logf16_u10avx512f, _ZGVeN16v_logf, Sleef_logd8_u10avx512f, _ZGVeN8v_log)
    ROW("log1p", Sleef_log1pf16_u10avx512f, _ZGVeN16v_log1pf, Sleef_log1pd8_u10avx512f, _ZGVeN8v_log1p)
    ROW("tanh", Sleef_tanhf16_u10avx512f, _ZGVeN16v_tanhf, Sleef_tanhd8_u10avx512f, _ZGVeN8v_tanh)
    ROW("erf", Sleef_erff16_u10avx512f, _ZGVeN16v_erff, Sleef_erfd8_u10avx512f, _ZGVeN8v_erf)
    ROW("erfc", Sleef_erfcf16_u15avx512f, _ZGVeN16v_erfcf, Sleef_erfcd8_u15avx512f, _ZGVeN8v_erfc)
    ROW("sin", Sleef_sinf16_u10avx512f, _ZGVeN16v_sinf, Sleef_sind8_u10avx512f, _ZGVeN8v_sin)
    ROW("cos", Sleef_cosf16_u10avx512f, _ZGVeN16v_cosf, Sleef_cosd8_u10avx512f, _ZGVeN8v_cos)
    { double a = bench(F2(Sleef_powf16_u10avx512f)), b = bench(F2(_ZGVeN16vv_powf)), c = bench(D2(Sleef_powd8_u10avx512f)), d = bench(D2(_ZGVeN8vv_pow)); printf("%-6s f32 %.3f / %.3f = %.2f | f64 %.3f / %.3f = %.2f\n", "pow", a, b, a / b, c, d, c / d); }
  }
  return yf[3] == 12345;
}
