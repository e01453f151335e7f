// The names and operand checks of the reductions (the reduce / reduce_p entries: sum, mean, max, min,
// prod, argmax, argmin, any, all, logsumexp, var, std, norm over a dim mask), shared by the CPU
// (src/kernels/cpu/reduce.cc) and CUDA (src/kernels/cuda/reduce.cu) entries so both refuse the same
// operands with the same words. Host code only.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "kcheck.h"
#include "shape.h"

namespace mf {

// The op name of a reduction code, for messages ("reduce?" for a code out of range).
inline const char* reduce_op_name(int code) {
  static const char* names[] = {"sum", "mean", "max", "min", "prod", "argmax", "argmin",
                                "any", "all", "logsumexp", "var", "std", "norm"};
  static_assert(sizeof(names) / sizeof(names[0]) == MF_R_COUNT, "one name per reduce code");
  return code >= 0 && code < MF_R_COUNT ? names[code] : "reduce?";
}

// var and std take a correction, norm an order: they run through reduce_p, the others through reduce.
inline bool reduce_takes_number(int code) { return code == MF_R_VAR || code == MF_R_STD || code == MF_R_NORM; }

namespace kcheck {

// A reduction over the dims in dim_mask (bit d: 0-based dim d): out contiguous, holding x's kept dims
// in order (size-1 dims dropped or inserted: keepdim, sum_to), in the code's result dtype (int64
// indices for argmax / argmin, uint8 for any / all, else x's; int64 also for integer sums and
// products); float x for mean, logsumexp, var, std and norm; the extremes need a reduced dim that is
// not empty. Returns the number of elements each output reduces.
inline int64_t reduce(int code, const mf_tensor& out, const mf_tensor& x, uint32_t dim_mask) {
  if (code < 0 || code >= MF_R_COUNT) fail("reduce: bad op code ", code);
  const char* op = reduce_op_name(code);
  meta(op, "x", x);
  meta(op, "output", out);
  if (x.ndim < 32 && (dim_mask >> x.ndim) != 0)
    fail(op, ": dim mask ", dim_mask, " names a dim past x's ", x.ndim, " (x is ", shape_str(x), ")");
  contiguous(op, "output", out);
  int64_t kshape[kMaxDims], rcount = 1;
  int nk = 0;
  for (int d = 0; d < x.ndim; ++d) {
    if (dim_mask & (1u << d)) rcount *= x.shape[d];
    else kshape[nk++] = x.shape[d];
  }
  int i = 0, k = 0;
  bool ok = true;
  while (ok) {
    while (i < out.ndim && out.shape[i] == 1) ++i;
    while (k < nk && kshape[k] == 1) ++k;
    if (i == out.ndim || k == nk) break;
    ok = out.shape[i++] == kshape[k++];
  }
  if (!ok || i != out.ndim || k != nk) {
    std::string dims;
    for (int d = 0; d < x.ndim; ++d)
      if (dim_mask & (1u << d)) dims += (dims.empty() ? "" : ",") + std::to_string(d + 1);
    fail(op, ": output is ", shape_str(out), ", x is ", shape_str(x), " reduced over dim",
         dims.find(',') != std::string::npos ? "s " : " ", dims.empty() ? "(none)" : dims,
         "; expected the output to hold x's other dims in order (size-1 dims aside)");
  }
  // the extremes and their indices have no value over nothing; every other code has an identity
  bool no_identity = code == MF_R_MAX || code == MF_R_MIN || code == MF_R_ARGMAX || code == MF_R_ARGMIN;
  if (rcount == 0 && no_identity) fail(op, ": cannot reduce over an empty dim of a ", shape_str(x), " tensor");
  bool is_float = dtype_is_float(x.dtype_id);
  bool float_only =
      code == MF_R_MEAN || code == MF_R_LOGSUMEXP || code == MF_R_VAR || code == MF_R_STD || code == MF_R_NORM;
  if (float_only && !is_float) fail(op, ": x is ", dtype_name(x.dtype_id), "; expected float32 or float64");
  int want = code == MF_R_ARGMAX || code == MF_R_ARGMIN ? int(MF_INT64)
             : code == MF_R_ANY || code == MF_R_ALL   ? int(MF_UINT8)
                                                       : x.dtype_id;
  bool wide = !is_float && (code == MF_R_SUM || code == MF_R_PROD) && out.dtype_id == MF_INT64;
  if (out.dtype_id != want && !wide)
    fail(op, ": output is ", dtype_name(out.dtype_id), "; expected ", dtype_name(want),
         is_float || (code != MF_R_SUM && code != MF_R_PROD) ? "" : " or int64");
  return rcount;
}

// The reduce entry (with_number false) or reduce_p (true, with the correction or order p): the code
// goes through the right one, the operands pass reduce() above, and p is a number the code takes.
inline void reduce_call(int code, const mf_tensor& out, const mf_tensor& x, uint32_t dim_mask, bool with_number,
                        double p) {
  if (!with_number && reduce_takes_number(code))
    fail(reduce_op_name(code), ": takes a number (the correction or order); run it with reduce_p");
  if (with_number && code >= 0 && code < MF_R_COUNT && !reduce_takes_number(code))
    fail(reduce_op_name(code), ": takes no number; run it with reduce");
  int64_t rcount = reduce(code, out, x, dim_mask);
  if (!with_number) return;
  const char* op = reduce_op_name(code);
  if (p != p) fail(op, ": the ", code == MF_R_NORM ? "order" : "correction", " is NaN");
  if (code != MF_R_NORM && p < 0) fail(op, ": the correction is ", p, "; expected 0 or more");
  if (code == MF_R_NORM && std::isinf(p) && p < 0 && rcount == 0)
    fail("norm: the -inf norm over an empty dim of a ", shape_str(x), " tensor has no value (no identity)");
}

}  // namespace kcheck
}  // namespace mf
