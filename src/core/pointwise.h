// Pointwise ops: the scalar math of each (one functor, shared by every device's loops), the loops
// instantiated per functor and dtype, and the process-wide table of those loops. An op's registry
// block (src/op/elemwise.h) adds its functor's loops here and keeps the code it gets back; kernels
// and fused programs run a table entry by that code and never name an op.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

#include "dtype.h"
#include "vecmath.h"

// The functors' f compile for the host and, under nvcc, for the device too: the CUDA backend's
// elementwise kernels (src/kernels/cuda/elemwise.cu) call the same f as the CPU loops.
#if defined(__CUDACC__)
#define MF_HD __host__ __device__
#else
#define MF_HD
#endif

namespace mf {

// Compute type: float math for float32, double for everything else.
template <typename T>
using Acc = std::conditional_t<std::is_same<T, float>::value, float, double>;

// -- scalar functors ---------------------------------------------------------------------------
// A unary functor has `template <class A> static MF_HD A f(A x)` (or f(A x, A p1) / f(A x, A p1, A p2)
// for an op with number params), computed in Acc<T>. A binary functor has
// `template <class T> static R f(T x, T y)` on the element type (R: T, or uint8_t for a
// comparison); one that can meet an invalid element takes a third argument `bool& bad`, sets it,
// and names the fault in `static constexpr const char* fault`.
// A functor with a vector routine (vecmath.h) also has `static void run(const A* x, A* y, int64_t n)`
// (binary: run(x, y, z, n)) for float and double, which the CPU loops below call instead of f; f
// stays the definition (the CUDA loops, and the check the op harness makes of both).
namespace pw {

// run(x, y, n) = vm::fn(x, y, n), for the element types vm::fn takes. plain_stores: the op's
// results never go out by streaming stores (PointwiseKernels::stream).
#define MF_PW_RUN(fn)                                                                                               \
  template <class A> static auto run(const A* x, A* y, int64_t n) -> decltype(vm::fn(x, y, n)) { vm::fn(x, y, n); } \
  static constexpr bool plain_stores = true;

// Integers negate and multiply as unsigned (wrapping as PyTorch does, never signed-overflow UB)
template <class A> using Unsigned = std::make_unsigned_t<std::conditional_t<std::is_integral<A>::value, A, int>>;
struct Neg {
  template <class A> static MF_HD A f(A x) {
    if constexpr (std::is_integral<A>::value) return A(Unsigned<A>(0) - Unsigned<A>(x));
    else return -x;
  }
};
struct Abs {
  template <class A> static MF_HD A f(A x) {
    if constexpr (std::is_unsigned<A>::value) return x;  // uint8 (no x < 0: nvcc warns, pointless)
    else return x < 0 ? Neg::f(x) : x;
  }
};
// cost (PointwiseKernels::cost): work per element in parallel_for's units, abs's being 4. The
// transcendental functors below name theirs from their warm float32 time per element against abs's
// (1 thread: sigmoid 5x, log 7x, sin 8x, cos 10x, log1p 11x, tanh 23x, erf 35x), capped at 32, so
// 2 threads split them from 4096-6554 elements instead of 32768. At 64 KB, 2 threads, idle,
// interleaved (2026-11-27): tanh float32 17.0 -> 9.7 us, erf 25 -> 13.2, log1p 8.9 -> 5.6, log 5.4 ->
// 4.0, sin 6.7 -> 4.5, cos 8.2 -> 5.1, sigmoid float64 16.4 -> 9.8. exp (4x) keeps the default (not
// measured with a cost).
struct Exp { template <class A> static MF_HD A f(A x) { return std::exp(x); } MF_PW_RUN(exp) };
struct Log { template <class A> static MF_HD A f(A x) { return std::log(x); } MF_PW_RUN(log) static constexpr int cost = 28; };
struct Log1p { template <class A> static MF_HD A f(A x) { return std::log1p(x); } MF_PW_RUN(log1p) static constexpr int cost = 32; };
struct Sqrt { template <class A> static MF_HD A f(A x) { return std::sqrt(x); } };
// float64 keeps plain stores (PointwiseKernels::stream): 1 / sqrt takes long enough in float64
struct Rsqrt { template <class A> static MF_HD A f(A x) { return A(1) / std::sqrt(x); } static constexpr bool plain_stores_float64 = true; };
struct Sigmoid {  // stable for large |x|: exp of a non-positive number only
  template <class A> static MF_HD A f(A x) { return x >= 0 ? A(1) / (A(1) + std::exp(-x)) : std::exp(x) / (A(1) + std::exp(x)); }
  MF_PW_RUN(sigmoid)
  static constexpr int cost = 20;
};
struct Tanh { template <class A> static MF_HD A f(A x) { return std::tanh(x); } MF_PW_RUN(tanh) static constexpr int cost = 32; };
// NaN passes through relu, as in PyTorch (x != x is false for integers: folded away)
struct Relu { template <class A> static MF_HD A f(A x) { return (x > 0 || x != x) ? x : A(0); } };
struct Sin { template <class A> static MF_HD A f(A x) { return std::sin(x); } MF_PW_RUN(sin) static constexpr int cost = 32; };
struct Cos { template <class A> static MF_HD A f(A x) { return std::cos(x); } MF_PW_RUN(cos) static constexpr int cost = 32; };
struct Square {
  template <class A> static MF_HD A f(A x) {
    if constexpr (std::is_integral<A>::value) return A(Unsigned<A>(x) * Unsigned<A>(x));
    else return x * x;
  }
};
// NaN stays NaN (NumPy's rule; PyTorch 1.13 gives 0, its open bug pytorch#41245)
struct Sign {
  template <class A> static MF_HD A f(A x) {
    if constexpr (std::is_unsigned<A>::value) return x > 0 ? A(1) : A(0);
    else return x > 0 ? A(1) : x < 0 ? A(-1) : x == 0 ? A(0) : x;
  }
};
// integers are their own floor, ceil and rounding
// The CPU loops (run) compute floor and ceil from nearbyint, which GCC vectorizes (vrndscale):
// floor and ceil stay one scalar instruction per element under the default -ftrapping-math (issue
// 12: floor ran 8x slower than abs on 64 KB). The same bits as std::floor / std::ceil for every
// input in any rounding mode (every 7th float32 and 5e7 random float64 checked, each mode; a
// signaling NaN comes back quiet, as from the vrndscale that std::floor compiles to): nearbyint
// gives an integer within one of x, one step corrects it, and copysign keeps ceil(-0.5) at -0.
template <class A>
inline A floor_by_rint(A x) {
  A r = std::nearbyint(x);
  return r > x ? r - A(1) : r;
}
template <class A>
inline A ceil_by_rint(A x) {
  A r = std::nearbyint(x);
  return std::copysign(r < x ? r + A(1) : r, x);
}
struct Floor {
  template <class A> static MF_HD A f(A x) { if constexpr (std::is_integral<A>::value) return x; else return std::floor(x); }
  template <class A> static auto run(const A* x, A* y, int64_t n) -> std::enable_if_t<std::is_floating_point<A>::value> {
    for (int64_t i = 0; i < n; ++i) y[i] = floor_by_rint(x[i]);
  }
};
struct Ceil {
  template <class A> static MF_HD A f(A x) { if constexpr (std::is_integral<A>::value) return x; else return std::ceil(x); }
  template <class A> static auto run(const A* x, A* y, int64_t n) -> std::enable_if_t<std::is_floating_point<A>::value> {
    for (int64_t i = 0; i < n; ++i) y[i] = ceil_by_rint(x[i]);
  }
};
struct Round {  // half to even, as NumPy
  template <class A> static MF_HD A f(A x) { if constexpr (std::is_integral<A>::value) return x; else return std::nearbyint(x); }
};
struct Erf { template <class A> static MF_HD A f(A x) { return std::erf(x); } MF_PW_RUN(erf) static constexpr int cost = 32; };
// exact, as PyTorch's default: 0.5 x (1 + erf(x / sqrt 2)), as erfc so the negative tail keeps its digits
// cost: float32 gelu takes 10x abs's time an element (0.44 against 0.042 ns, warm, 1 thread), float64
// more, so 2 threads split it from 4096 elements (abs: 32768)
struct Gelu {
  template <class A> static MF_HD A f(A x) { return A(0.5) * x * std::erfc(x * A(-0.7071067811865476)); }
  MF_PW_RUN(gelu)
  static constexpr int cost = 32;
};
struct LeakyRelu { template <class A> static MF_HD A f(A x, A slope) { return x > 0 ? x : x * slope; } };
// NaN elements stay NaN (both comparisons are false); a NaN bound makes every element NaN, as in
// PyTorch (lo + hi is then NaN). The bound test is loop-invariant, so the loop stays a vector select.
struct Clamp {
  template <class A> static MF_HD A f(A x, A lo, A hi) { return (lo != lo || hi != hi) ? lo + hi : x < lo ? lo : x > hi ? hi : x; }
};

// The unary functors whose integer results stay integers (neg, abs, relu, square, sign, floor, ceil,
// round, clamp) compute integer tensors in their own type: through a double (Acc), int64 beyond
// 2^53 lost its low bits (abs(2^53 + 1) was 2^53). The others compute in Acc<T>.
template <class F> struct IntegerClosed : std::false_type {};
template <> struct IntegerClosed<Neg> : std::true_type {};
template <> struct IntegerClosed<Abs> : std::true_type {};
template <> struct IntegerClosed<Relu> : std::true_type {};
template <> struct IntegerClosed<Square> : std::true_type {};
template <> struct IntegerClosed<Sign> : std::true_type {};
template <> struct IntegerClosed<Floor> : std::true_type {};
template <> struct IntegerClosed<Ceil> : std::true_type {};
template <> struct IntegerClosed<Round> : std::true_type {};
template <> struct IntegerClosed<Clamp> : std::true_type {};
template <class F, class T>
using UnaryAcc = std::conditional_t<std::is_integral<T>::value && IntegerClosed<F>::value, T, Acc<T>>;
// A number param as A; an integer A saturates (clamp's default bounds are -inf and +inf; an integer
// tensor's bounds are integers, so anything inside the range converts exactly)
template <class A> MF_HD A param_as(double v) {
  if constexpr (std::is_integral<A>::value) {
    if (!(v > double(std::numeric_limits<A>::min()))) return std::numeric_limits<A>::min();
    if (!(v < double(std::numeric_limits<A>::max()))) return std::numeric_limits<A>::max();
    return A(v);
  } else {
    return A(v);
  }
}

struct Add { template <class T> static MF_HD T f(T x, T y) { return T(x + y); } };
struct Sub { template <class T> static MF_HD T f(T x, T y) { return T(x - y); } };
struct Mul { template <class T> static MF_HD T f(T x, T y) { return T(x * y); } };
struct Div {
  static constexpr const char* fault = "integer division by zero";
  template <class T> static MF_HD T f(T x, T y, bool& bad) {
    if constexpr (std::is_integral<T>::value) {
      if (y == 0) { bad = true; return T(0); }
      if (std::is_signed<T>::value && y == T(-1)) return T(0 - std::make_unsigned_t<T>(x));  // no INT_MIN / -1 trap
    }
    return T(x / y);
  }
};
// Integers: exact, by repeated squaring, wrapping on overflow as integer mul does (through double,
// 10^30 or 0^-1 became an out-of-range cast: INT64_MIN); a negative exponent gives PyTorch's powi
// values, the power truncated toward zero: 1 for 1, +-1 for -1, 0 for the rest (0 included)
struct Pow {
  template <class T> static MF_HD T f(T x, T y) {
    if constexpr (std::is_integral<T>::value) {
      if constexpr (std::is_signed<T>::value)
        if (y < T(0)) return x == T(1) ? T(1) : x == T(-1) ? ((y & T(1)) ? T(-1) : T(1)) : T(0);
      using U = std::make_unsigned_t<T>;
      U r = 1, b = U(x);
      for (T e = y; e != T(0); e = T(e >> 1)) {
        if (e & T(1)) r = U(r * b);
        b = U(b * b);
      }
      return T(r);
    } else {
      return T(std::pow(Acc<T>(x), Acc<T>(y)));
    }
  }
  template <class A> static auto run(const A* x, const A* y, A* z, int64_t n) -> decltype(vm::pow(x, y, z, n)) {
    vm::pow(x, y, z, n);
  }
  static constexpr bool plain_stores = true;
};
struct Maximum { template <class T> static MF_HD T f(T x, T y) { return T(x != x ? x : (x > y || y != y) ? (y != y ? y : x) : y); } };
struct Minimum { template <class T> static MF_HD T f(T x, T y) { return T(x != x ? x : (x < y || y != y) ? (y != y ? y : x) : y); } };
// x: gradient, y: relu's input or output; PyTorch's threshold_backward: 0 where y <= 0, so the
// gradient passes where y is NaN
struct ReluBackward {
  template <class T> static MF_HD T f(T x, T y) { return y <= T(0) ? T(0) : x; }
  template <class A> static auto run(const A* x, const A* y, A* z, int64_t n) -> decltype(vm::relu_backward(x, y, z, n)) {
    vm::relu_backward(x, y, z, n);
  }
};
struct Eq { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x == y); } };
struct Ne { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x != y); } };
struct Lt { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x < y); } };
struct Le { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x <= y); } };
struct Gt { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x > y); } };
struct Ge { template <class T> static MF_HD uint8_t f(T x, T y) { return uint8_t(x >= y); } };
// Predicates of one value (isnan, isfinite), run by the binary loops with x as both operands: a
// unary loop writes its input's dtype, these write uint8. Integers are never NaN, always finite.
struct IsNan { template <class T> static MF_HD uint8_t f(T x, T) { return uint8_t(x != x); } };
struct IsFinite {
  template <class T> static MF_HD uint8_t f(T x, T) {
    if constexpr (std::is_floating_point<T>::value) return uint8_t(std::isfinite(x));
    else return uint8_t(1);
  }
};

#undef MF_PW_RUN
}  // namespace pw

// -- the functors as CUDA C++ source ---------------------------------------------------------------
// The fused kernels a CUDA session runs are generated as source and compiled by NVRTC at bind time
// (src/kernels/cuda/fused_codegen.cc), so each fusable functor also exists as text: the body of
// `template <class A> A f(A x)` (binary: f(A x, A y)), the same math as its f above in CUDA's device
// math (exp, erfc, rint: the C names CUDA overloads for float and double). A functor without one is
// not fused on CUDA (its entry's cuda is nullptr; the code generator refuses it, naming the op).
template <class F>
struct CudaSrc {
  static constexpr const char* src = nullptr;
};
#define MF_PW_CUDA(F, body)                    \
  template <>                                  \
  struct CudaSrc<pw::F> {                      \
    static constexpr const char* src = body;   \
  };
MF_PW_CUDA(Neg, "return -x;")
MF_PW_CUDA(Abs, "return x < 0 ? -x : x;")
MF_PW_CUDA(Exp, "return exp(x);")
MF_PW_CUDA(Log, "return log(x);")
MF_PW_CUDA(Log1p, "return log1p(x);")
MF_PW_CUDA(Sqrt, "return sqrt(x);")
MF_PW_CUDA(Rsqrt, "return A(1) / sqrt(x);")
MF_PW_CUDA(Sigmoid, "return x >= 0 ? A(1) / (A(1) + exp(-x)) : exp(x) / (A(1) + exp(x));")
MF_PW_CUDA(Tanh, "return tanh(x);")
MF_PW_CUDA(Relu, "return (x > 0 || x != x) ? x : A(0);")
MF_PW_CUDA(Sin, "return sin(x);")
MF_PW_CUDA(Cos, "return cos(x);")
MF_PW_CUDA(Square, "return x * x;")
MF_PW_CUDA(Sign, "return x > 0 ? A(1) : x < 0 ? A(-1) : x == 0 ? A(0) : x;")
MF_PW_CUDA(Floor, "return floor(x);")
MF_PW_CUDA(Ceil, "return ceil(x);")
MF_PW_CUDA(Round, "return rint(x);")
MF_PW_CUDA(Erf, "return erf(x);")
MF_PW_CUDA(Gelu, "return A(0.5) * x * erfc(x * A(-0.7071067811865476));")
MF_PW_CUDA(Add, "return x + y;")
MF_PW_CUDA(Sub, "return x - y;")
MF_PW_CUDA(Mul, "return x * y;")
MF_PW_CUDA(Div, "return x / y;")  // fused programs hold floats only: no integer division fault
MF_PW_CUDA(Pow, "return pow(x, y);")
MF_PW_CUDA(Maximum, "return x != x ? x : (x > y || y != y) ? (y != y ? y : x) : y;")
MF_PW_CUDA(Minimum, "return x != x ? x : (x < y || y != y) ? (y != y ? y : x) : y;")
MF_PW_CUDA(ReluBackward, "return y <= A(0) ? A(0) : x;")
#undef MF_PW_CUDA

// -- loops ---------------------------------------------------------------------------------------
// A 2-D run of elements: `rows` rows of n; operand k (0 the output, 1 x, 2 y) steps s[k] elements
// within a row (0: one value repeated) and r[k] from row to row. A kernel calls a loop once per run
// (a thread's share of a dense tensor, a block of rows of a strided one), never once per element.
struct PwRun {
  int64_t n, rows;
  int64_t s[3], r[3];
};
template <class T>
using UnaryLoop = void (*)(T* y, const T* x, const PwRun& run, double p1, double p2);
// z holds the functor's result type; returns true when an element was invalid (see pw::Div).
template <class T>
using BinaryLoop = bool (*)(void* z, const T* x, const T* y, const PwRun& run);
// One loop per dtype; std::get<UnaryLoop<T>>(k.unary) picks it.
template <template <class> class L>
using PerDtype = std::tuple<L<float>, L<double>, L<int32_t>, L<int64_t>, L<uint8_t>>;

// A unique address per functor type (one definition in the library, whichever compiler saw it):
// entries made by g++-compiled registry blocks name their functor by it, and the CUDA backend,
// whose nvcc-compiled kernels instantiate the same functors, finds its loops by it.
template <class F>
struct FunctorId {
  static constexpr char tag = 0;
};

// One entry of the pointwise table.
struct PointwiseKernels {
  const char* name = nullptr;   // the op's name, for messages
  int arity = 0;                // 1: unary, 2: binary
  int nparams = 0;              // unary: how many of p1, p2 the functor reads
  bool to_uint8 = false;        // binary: the result is uint8 (a comparison)
  bool fusable = false;         // fused programs may hold it: unary without params, or binary to T
  const char* fault = nullptr;  // binary: what an invalid element is ("integer division by zero")
  const char* cuda = nullptr;   // fusable: the functor's CUDA source (CudaSrc), for NVRTC-compiled fused kernels
  const void* functor = nullptr;  // &FunctorId<F>::tag: which functor, for the CUDA backend's loops of it
  int cost = 4;                 // unary: work per element in parallel_for's units (kGrain, threads.h)
  // Bit d set: a fresh output of dtype id d, 16 MiB and more, may be written by streaming stores
  // (src/kernels/cpu/stream_out.h). None for the functors with plain_stores: the vector library's
  // math (exp, log, sigmoid, tanh, sin, cos, erf, gelu, pow) takes long enough a line that plain
  // stores' reads hide under it, and streaming stalled it (1 thread, CPU time, 16 MB float32, eager:
  // exp 811-820 -> 930-962 us, gelu 1981-2002 -> 2101-2132, sigmoid 1061 -> 1142-1184); not
  // float64 for those with plain_stores_float64 (rsqrt: 2M float64 1560-1630 -> 1800-1970 us, 1
  // thread; float32 614-642 against 649-690, and at 2 threads 890-950 against 1200).
  unsigned stream = ~0u;
  PerDtype<UnaryLoop> unary{};
  PerDtype<BinaryLoop> binary{};
};

namespace pw_detail {
template <int N> struct Rank : Rank<N - 1> {};
template <> struct Rank<0> {};

template <class F, class A> MF_HD auto unary(A x, A a, A b, Rank<2>) -> decltype(F::f(x, a, b)) { return F::f(x, a, b); }
template <class F, class A> MF_HD auto unary(A x, A a, A, Rank<1>) -> decltype(F::f(x, a)) { return F::f(x, a); }
template <class F, class A> MF_HD auto unary(A x, A, A, Rank<0>) -> decltype(F::f(x)) { return F::f(x); }
template <class F, class A> constexpr auto nparams(Rank<2>) -> decltype(F::f(A(), A(), A()), 0) { return 2; }
template <class F, class A> constexpr auto nparams(Rank<1>) -> decltype(F::f(A(), A()), 0) { return 1; }
template <class F, class A> constexpr int nparams(Rank<0>) { return 0; }

template <class F, class T> MF_HD auto binary(T x, T y, bool& bad, Rank<1>) -> decltype(F::f(x, y, bad)) { return F::f(x, y, bad); }
template <class F, class T> MF_HD auto binary(T x, T y, bool&, Rank<0>) -> decltype(F::f(x, y)) { return F::f(x, y); }
template <class F, class T> constexpr auto fault(Rank<1>) -> decltype(F::fault, (const char*)nullptr) { return F::fault; }
template <class F, class T> constexpr const char* fault(Rank<0>) { return nullptr; }

// A unary functor's work per element in parallel_for's units: F::cost where the functor names one
// (an op many times a copy's cost splits among threads at fewer elements), else 4.
template <class F> constexpr auto cost(Rank<1>) -> decltype(int(F::cost)) { return F::cost; }
template <class F> constexpr int cost(Rank<0>) { return 4; }
// The dtypes whose results of F may go out by streaming stores (PointwiseKernels::stream).
template <class F> constexpr auto streams(Rank<2>) -> decltype(unsigned(F::plain_stores)) { return F::plain_stores ? 0u : ~0u; }
template <class F> constexpr auto streams(Rank<1>) -> decltype(unsigned(F::plain_stores_float64)) {
  return F::plain_stores_float64 ? ~(1u << MF_FLOAT64) : ~0u;
}
template <class F> constexpr unsigned streams(Rank<0>) { return ~0u; }

// Whether F has a vector routine for T (float, double).
template <class F, class T> constexpr auto has_run(Rank<1>) -> decltype(F::run((const T*)0, (T*)0, int64_t()), true) { return true; }
template <class F, class T> constexpr bool has_run(Rank<0>) { return false; }
template <class F, class T> constexpr auto has_run2(Rank<1>) -> decltype(F::run((const T*)0, (const T*)0, (T*)0, int64_t()), true) { return true; }
template <class F, class T> constexpr bool has_run2(Rank<0>) { return false; }
// Strided or broadcast operands go through the vector routine in chunks of this many elements,
// gathered to and scattered from the stack: the same results as a dense run.
constexpr int64_t kVecChunk = 256;

template <class F, class T>
void unary_loop(T* y, const T* x, const PwRun& run, double p1, double p2) {
  if constexpr (has_run<F, T>(Rank<1>())) {  // every element, a lone one too, through F::run
    const int64_t n = run.n, ys = run.s[0], xs = run.s[1];
    for (int64_t r = 0; r < run.rows; ++r, y += run.r[0], x += run.r[1]) {
      if (ys == 1 && xs == 1) {
        F::run(x, y, n);
        continue;
      }
      T in[kVecChunk], out[kVecChunk];
      for (int64_t c = 0; c < n; c += kVecChunk) {
        const int64_t m = n - c < kVecChunk ? n - c : kVecChunk;
        for (int64_t i = 0; i < m; ++i) in[i] = x[(c + i) * xs];
        F::run(in, out, m);
        for (int64_t i = 0; i < m; ++i) y[(c + i) * ys] = out[i];
      }
    }
    return;
  }
  using A = pw::UnaryAcc<F, T>;
  const A a = pw::param_as<A>(p1), b = pw::param_as<A>(p2);
  const int64_t n = run.n, ys = run.s[0], xs = run.s[1];
  if (n == 1 && run.rows == 1) {  // one element: skip the vector loop's set-up
    *y = T(unary<F>(A(*x), a, b, Rank<2>()));
    return;
  }
  for (int64_t r = 0; r < run.rows; ++r, y += run.r[0], x += run.r[1]) {
    if (ys == 1 && xs == 1) {
      for (int64_t i = 0; i < n; ++i) y[i] = T(unary<F>(A(x[i]), a, b, Rank<2>()));
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * ys] = T(unary<F>(A(x[i * xs]), a, b, Rank<2>()));
    }
  }
}

template <class F, class T>
bool binary_loop(void* zv, const T* x, const T* y, const PwRun& run) {
  if constexpr (has_run2<F, T>(Rank<1>())) {  // as unary_loop: every element through F::run
    T* z = static_cast<T*>(zv);
    const int64_t n = run.n, zs = run.s[0], xs = run.s[1], ys = run.s[2];
    for (int64_t r = 0; r < run.rows; ++r, z += run.r[0], x += run.r[1], y += run.r[2]) {
      if (zs == 1 && xs == 1 && ys == 1) {
        F::run(x, y, z, n);
        continue;
      }
      T a[kVecChunk], b[kVecChunk], c[kVecChunk];
      for (int64_t k = 0; k < n; k += kVecChunk) {
        const int64_t m = n - k < kVecChunk ? n - k : kVecChunk;
        for (int64_t i = 0; i < m; ++i) a[i] = x[(k + i) * xs];
        for (int64_t i = 0; i < m; ++i) b[i] = y[(k + i) * ys];
        F::run(a, b, c, m);
        for (int64_t i = 0; i < m; ++i) z[(k + i) * zs] = c[i];
      }
    }
    return false;
  }
  bool bad = false;
  using R = decltype(binary<F>(T(), T(), bad, Rank<1>()));
  R* z = static_cast<R*>(zv);
  const int64_t n = run.n, zs = run.s[0], xs = run.s[1], ys = run.s[2];
  if (n == 1 && run.rows == 1) {  // one element (a graph's scalar nodes): skip the vector loops' set-up
    *z = binary<F>(*x, *y, bad, Rank<1>());
    return bad;
  }
  for (int64_t r = 0; r < run.rows; ++r, z += run.r[0], x += run.r[1], y += run.r[2]) {
    if (zs == 1 && xs == 1 && ys == 1) {
      for (int64_t i = 0; i < n; ++i) z[i] = binary<F>(x[i], y[i], bad, Rank<1>());
    } else if (zs == 1 && xs == 1 && ys == 0) {
      const T c = y[0];
      for (int64_t i = 0; i < n; ++i) z[i] = binary<F>(x[i], c, bad, Rank<1>());
    } else if (zs == 1 && xs == 0 && ys == 1) {
      const T c = x[0];
      for (int64_t i = 0; i < n; ++i) z[i] = binary<F>(c, y[i], bad, Rank<1>());
    } else {
      for (int64_t i = 0; i < n; ++i) z[i * zs] = binary<F>(x[i * xs], y[i * ys], bad, Rank<1>());
    }
  }
  return bad;
}
}  // namespace pw_detail

// The table entry of unary functor F (not yet added).
template <class F>
PointwiseKernels unary_kernels(const char* name) {
  using namespace pw_detail;
  PointwiseKernels k;
  k.name = name;
  k.arity = 1;
  k.nparams = nparams<F, double>(Rank<2>());
  k.fusable = k.nparams == 0;
  k.cost = cost<F>(Rank<1>());
  k.stream = streams<F>(Rank<2>());
  k.cuda = CudaSrc<F>::src;
  k.functor = &FunctorId<F>::tag;
  k.unary = {&unary_loop<F, float>, &unary_loop<F, double>, &unary_loop<F, int32_t>, &unary_loop<F, int64_t>,
             &unary_loop<F, uint8_t>};
  return k;
}

// The table entry of binary functor F (not yet added).
template <class F>
PointwiseKernels binary_kernels(const char* name) {
  using namespace pw_detail;
  PointwiseKernels k;
  k.name = name;
  k.arity = 2;
  bool bad = false;
  k.to_uint8 = std::is_same<decltype(binary<F>(1.0f, 1.0f, bad, Rank<1>())), uint8_t>::value;
  k.fusable = !k.to_uint8;
  k.cuda = CudaSrc<F>::src;
  k.functor = &FunctorId<F>::tag;
  k.fault = fault<F, float>(Rank<1>());
  k.stream = streams<F>(Rank<2>());
  k.binary = {&binary_loop<F, float>, &binary_loop<F, double>, &binary_loop<F, int32_t>, &binary_loop<F, int64_t>,
              &binary_loop<F, uint8_t>};
  return k;
}

// -- the table -----------------------------------------------------------------------------------
// Process-wide. Adding is for registry blocks (the built-in ops once at engine start; a test's op
// before the engines that use it start); entries never move and lookups take no lock.
constexpr int kMaxPointwise = 256;
// Adds k (name must outlive the process: the op's name) and returns its code; throws when full.
int pointwise_add(const PointwiseKernels& k);
// The entry of code, or nullptr when no entry has that code.
const PointwiseKernels* pointwise_at(int code);

// A fused program: nprog numbers, (code, a, b) triples over values 0..nin-1 (the inputs) and nin + s
// (step s's result); code is a fusable entry's; b is read by binary steps only. Throws naming the
// first bad step.
void check_fused_program(int nin, int nprog, const int64_t* prog);
constexpr int kFusedMaxInputs = 32;

// A checked program ready to run on any device: each step's table entry and operands, and the
// scratch register of its result (the CPU interpreter's; a generated CUDA kernel keeps values in
// registers of its own). fused_compile validates (check_fused_program) and assigns registers once,
// reusing one after its value's last reader (a chain of any length needs one or two).
struct FusedStep {
  const PointwiseKernels* k;  // the step's table entry
  int a, b;                   // operand values; b = -1 for unary steps
  int reg;                    // scratch register of the result; -1 for the last step (the output)
};
struct FusedProgram {
  int nin = 0, nregs = 0;
  std::vector<FusedStep> steps;
};
FusedProgram fused_compile(int nin, int nprog, const int64_t* prog);

}  // namespace mf

// The handle mf_fused_compile returns (opaque to Lua): the program, and each device's own form of it.
// cuda_kernel: the CUDA backend's compiled kernel per output dtype (float32, float64), set at its
// first run there (src/kernels/cuda/fused_jit.cc).
struct mf_fused {
  mf::FusedProgram prog;
  mutable void* cuda_kernel[2] = {nullptr, nullptr};
};
