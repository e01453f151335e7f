// Scalar pointwise functions shared by the elementwise kernels and the fused-expression
// interpreter: one definition of every op's arithmetic.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../../lua/capi.h"

namespace mf {

// Compute type: float math for float32, double for everything else.
template <typename T>
using Acc = std::conditional_t<std::is_same<T, float>::value, float, double>;

template <typename T>
inline T unary_op(int code, T v, Acc<T> lo, Acc<T> hi) {
  using A = Acc<T>;
  A x = A(v);
  switch (code) {
    case MF_U_NEG: return T(-x);
    case MF_U_ABS: return T(x < 0 ? -x : x);
    case MF_U_EXP: return T(std::exp(x));
    case MF_U_LOG: return T(std::log(x));
    case MF_U_LOG1P: return T(std::log1p(x));
    case MF_U_SQRT: return T(std::sqrt(x));
    case MF_U_RSQRT: return T(A(1) / std::sqrt(x));
    case MF_U_SIGMOID: return T(x >= 0 ? A(1) / (A(1) + std::exp(-x)) : std::exp(x) / (A(1) + std::exp(x)));
    case MF_U_TANH: return T(std::tanh(x));
    // NaN passes through relu, as in PyTorch (x != x is false for integers: folded away)
    case MF_U_RELU: return T((x > 0 || x != x) ? x : A(0));
    case MF_U_SIN: return T(std::sin(x));
    case MF_U_COS: return T(std::cos(x));
    case MF_U_SQUARE: return T(x * x);
    // NaN stays NaN (NumPy's rule; PyTorch 1.13 gives 0, its open bug pytorch#41245)
    case MF_U_SIGN: return T(x > 0 ? A(1) : x < 0 ? A(-1) : x == 0 ? A(0) : x);
    case MF_U_FLOOR: return T(std::floor(x));
    case MF_U_CEIL: return T(std::ceil(x));
    case MF_U_ROUND: return T(std::nearbyint(x));  // half to even, as NumPy and PyTorch
    // NaN elements stay NaN (both comparisons are false); a NaN bound, which makes every element
    // NaN as in PyTorch, is handled by unary_cpu before the loop so this stays a vectorized select
    case MF_U_CLAMP: return T(x < lo ? lo : x > hi ? hi : x);
    case MF_U_ERF: return T(std::erf(x));
    // exact, as PyTorch's default: 0.5 x (1 + erf(x / sqrt 2)), as erfc so the negative tail keeps its digits
    case MF_U_GELU: return T(A(0.5) * x * std::erfc(x * A(-0.7071067811865476)));
    case MF_U_LEAKY_RELU: return T(x > 0 ? x : x * lo);
  }
  return v;
}

template <typename T, int CODE>
inline auto binary_op(T x, T y, std::atomic<bool>& div0) {
  using A = Acc<T>;
  if constexpr (CODE == MF_B_ADD) return T(x + y);
  if constexpr (CODE == MF_B_SUB) return T(x - y);
  if constexpr (CODE == MF_B_MUL) return T(x * y);
  if constexpr (CODE == MF_B_DIV) {
    if constexpr (std::is_integral<T>::value) {
      if (y == 0) { div0.store(true, std::memory_order_relaxed); return T(0); }
      if (std::is_signed<T>::value && y == T(-1)) return T(0 - std::make_unsigned_t<T>(x));  // no INT_MIN / -1 trap
      return T(x / y);
    } else {
      return T(x / y);
    }
  }
  if constexpr (CODE == MF_B_POW) return T(std::pow(A(x), A(y)));
  if constexpr (CODE == MF_B_MAXIMUM) return T(x != x ? x : (x > y || y != y) ? (y != y ? y : x) : y);
  if constexpr (CODE == MF_B_MINIMUM) return T(x != x ? x : (x < y || y != y) ? (y != y ? y : x) : y);
  // x: gradient, y: relu's input or output; PyTorch's threshold_backward: 0 where y <= 0, so the
  // gradient passes where y is NaN
  if constexpr (CODE == MF_B_RELU_BACKWARD) return T(y <= T(0) ? T(0) : x);
  if constexpr (CODE == MF_B_EQ) return uint8_t(x == y);
  if constexpr (CODE == MF_B_NE) return uint8_t(x != y);
  if constexpr (CODE == MF_B_LT) return uint8_t(x < y);
  if constexpr (CODE == MF_B_LE) return uint8_t(x <= y);
  if constexpr (CODE == MF_B_GT) return uint8_t(x > y);
  if constexpr (CODE == MF_B_GE) return uint8_t(x >= y);
}

}  // namespace mf
