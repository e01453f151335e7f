// Reductions over any set of dims, and softmax / log_softmax along one dim.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"

namespace mf {

const char* reduce_name(int code) {
  static const char* names[] = {"sum", "mean", "max", "min", "prod", "argmax", "argmin",
                                "any", "all", "logsumexp", "var", "std", "norm"};
  static_assert(sizeof(names) / sizeof(names[0]) == MF_R_COUNT, "one name per reduce code");
  return code >= 0 && code < MF_R_COUNT ? names[code] : "reduce?";
}

// Splits x's dims into kept (outer loop, the output's order) and reduced (inner loop).
struct ReducePlan {
  int nk = 0, nr = 0;
  int64_t kshape[kMaxDims], kstride[kMaxDims], rshape[kMaxDims], rstride[kMaxDims];
  int64_t rcount = 1;
  // the reduced dims with neighbours that step contiguously merged: rows of mshape[nm-1] elements
  int nm = 0;
  int64_t mshape[kMaxDims], mstride[kMaxDims];
  ReducePlan(const mf_tensor& x, uint32_t mask) {
    for (int d = 0; d < x.ndim; ++d) {
      if (mask & (1u << d)) {
        rshape[nr] = x.shape[d];
        rstride[nr++] = x.strides[d];
        rcount *= x.shape[d];
      } else {
        kshape[nk] = x.shape[d];
        kstride[nk++] = x.strides[d];
      }
    }
    for (int d = 0; d < nr; ++d) {
      if (nm > 0 && mstride[nm - 1] == rstride[d] * rshape[d]) {
        mshape[nm - 1] *= rshape[d];
        mstride[nm - 1] = rstride[d];
      } else {
        mshape[nm] = rshape[d];
        mstride[nm++] = rstride[d];
      }
    }
  }
  // Calls row(offset, n, stride) for each row of the merged reduced dims (in no particular order).
  template <typename F>
  void for_rows(int64_t base, F&& row) const {
    if (nm == 0) {
      row(base, int64_t(1), int64_t(1));
      return;
    }
    if (rcount == 0) return;
    int64_t idx[kMaxDims] = {0};
    int64_t rows = rcount / mshape[nm - 1], off = base;
    for (int64_t r = 0; r < rows; ++r) {
      row(off, mshape[nm - 1], mstride[nm - 1]);
      for (int d = nm - 2; d >= 0; --d) {
        off += mstride[d];
        if (++idx[d] < mshape[d]) break;
        off -= mstride[d] * mshape[d];
        idx[d] = 0;
      }
    }
  }
  int64_t kept_offset(int64_t o) const {
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      off += (o % kshape[d]) * kstride[d];
      o /= kshape[d];
    }
    return off;
  }
  // Calls f(offset, j) for each reduced element j (row-major over the reduced dims).
  template <typename F>
  void for_reduced(int64_t base, F&& f) const {
    if (nr == 1) {
      for (int64_t j = 0; j < rshape[0]; ++j) f(base + j * rstride[0], j);
      return;
    }
    int64_t idx[kMaxDims] = {0};
    int64_t off = base;
    for (int64_t j = 0; j < rcount; ++j) {
      f(off, j);
      for (int d = nr - 1; d >= 0; --d) {
        off += rstride[d];
        if (++idx[d] < rshape[d]) break;
        off -= rstride[d] * rshape[d];
        idx[d] = 0;
      }
    }
  }
};

// Integer sums and products accumulate in uint64 (wrapping, as two's complement int64 does, with no
// signed-overflow UB) and are written as int64 (the sum and prod ops: PyTorch's rule) or as T
// (sum_to, whose result keeps its input's dtype); float ones accumulate in double, written as T.
template <typename T>
static void reduce_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan) {
  constexpr bool kInt = !std::is_floating_point<T>::value;
  using A = std::conditional_t<kInt, uint64_t, double>;
  const T* xp = (const T*)x.ptr;
  int64_t nout = out.count;
  parallel_for(nout, plan.rcount, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      int64_t base = plan.kept_offset(o);
      if (code == MF_R_SUM || code == MF_R_MEAN || code == MF_R_PROD) {
        A acc = code == MF_R_PROD ? A(1) : A(0);
        if (code == MF_R_PROD) {
          plan.for_reduced(base, [&](int64_t off, int64_t) { acc *= A(xp[off]); });
        } else {
          // row by row, four partial sums on unit stride: bias gradients reduce 1e6 elements per step
          plan.for_rows(base, [&](int64_t off, int64_t n, int64_t st) {
            const T* p = xp + off;
            if (st == 1) {
              A s0 = 0, s1 = 0, s2 = 0, s3 = 0;
              int64_t i = 0;
              for (; i + 4 <= n; i += 4) {
                s0 += A(p[i]);
                s1 += A(p[i + 1]);
                s2 += A(p[i + 2]);
                s3 += A(p[i + 3]);
              }
              for (; i < n; ++i) s0 += A(p[i]);
              acc += (s0 + s1) + (s2 + s3);
            } else {
              for (int64_t i = 0; i < n; ++i) acc += A(p[i * st]);
            }
          });
        }
        if (code == MF_R_MEAN) {  // floats only (checked by reduce_cpu)
          double m = plan.rcount ? double(acc) / double(plan.rcount) : std::numeric_limits<double>::quiet_NaN();
          ((T*)out.ptr)[o] = T(m);
        } else if (kInt && out.dtype_id == MF_INT64) {
          ((int64_t*)out.ptr)[o] = int64_t(acc);
        } else {
          ((T*)out.ptr)[o] = T(acc);
        }
      } else {
        bool want_max = code == MF_R_MAX || code == MF_R_ARGMAX;
        T best = xp[base];
        int64_t best_j = 0;
        bool nan_seen = false;
        plan.for_reduced(base, [&](int64_t off, int64_t j) {
          T v = xp[off];
          if (nan_seen) return;
          if (v != v) {  // NaN wins, as in PyTorch
            nan_seen = true;
            best = v;
            best_j = j;
          } else if (want_max ? v > best : v < best) {
            best = v;
            best_j = j;
          }
        });
        if (code == MF_R_MAX || code == MF_R_MIN) ((T*)out.ptr)[o] = best;
        else ((int64_t*)out.ptr)[o] = best_j + 1;  // 1-based, Torch7's convention
      }
    }
  });
}

// -- any / all -------------------------------------------------------------------------------------
// uint8 results: any element nonzero (NaN counts, as it is not 0) / every element nonzero; over an
// empty dim any is 0 and all is 1, their identities.
template <typename T>
static void any_all_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan) {
  const T* xp = (const T*)x.ptr;
  uint8_t* yp = (uint8_t*)out.ptr;
  bool want_any = code == MF_R_ANY;
  parallel_for(out.count, plan.rcount, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      bool found = false;  // any: a nonzero seen; all: a zero seen
      plan.for_rows(plan.kept_offset(o), [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t i = 0; i < n && !found; ++i) {
          bool zero = xp[off + i * st] == T(0);
          found = want_any ? !zero : zero;
        }
      });
      yp[o] = uint8_t(want_any ? found : !found);
    }
  });
}

// -- logsumexp, var, std, norm ----------------------------------------------------------------------
// Floats only, accumulated in double. logsumexp subtracts the max first (an infinite max is replaced
// by 0, as PyTorch does, so a line of -inf gives -inf and one holding +inf gives +inf, not NaN). var
// is two-pass: the mean, then the squared deviations from it, divided by max(0, n - correction)
// (so n <= correction gives NaN or inf, as PyTorch). norm of order p: p = 0 counts the nonzeros;
// inf / -inf take the largest / smallest |x|; else (sum |x|^p)^(1/p).
template <typename T>
static void stat_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan, double p) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)out.ptr;
  const double inf = std::numeric_limits<double>::infinity();
  parallel_for(out.count, plan.rcount * 4, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      int64_t base = plan.kept_offset(o);
      // f(v) for every element of the line, row by row
      auto each = [&](auto&& f) {
        plan.for_rows(base, [&](int64_t off, int64_t n, int64_t st) {
          for (int64_t i = 0; i < n; ++i) f(double(xp[off + i * st]));
        });
      };
      double r = 0;
      if (code == MF_R_LOGSUMEXP) {
        double m = -inf;
        each([&](double v) { m = v > m ? v : m; });
        if (m == inf || m == -inf) m = 0;
        double s = 0;
        each([&](double v) { s += std::exp(v - m); });
        r = std::log(s) + m;
      } else if (code == MF_R_VAR || code == MF_R_STD) {
        double s = 0;
        each([&](double v) { s += v; });
        double mean = s / double(plan.rcount), ss = 0;
        each([&](double v) { ss += (v - mean) * (v - mean); });
        r = ss / std::max(0.0, double(plan.rcount) - p);
        if (code == MF_R_STD) r = std::sqrt(r);
      } else if (p == 2) {  // norms
        each([&](double v) { r += v * v; });
        r = std::sqrt(r);
      } else if (p == 1) {
        each([&](double v) { r += std::fabs(v); });
      } else if (p == 0) {
        each([&](double v) { r += v != 0; });
      } else if (p == inf || p == -inf) {
        bool nan = false;
        r = p > 0 ? 0 : inf;
        each([&](double v) {
          double a = std::fabs(v);
          if (a != a) nan = true;
          else r = p > 0 ? std::max(r, a) : std::min(r, a);
        });
        if (nan) r = std::numeric_limits<double>::quiet_NaN();
      } else {
        each([&](double v) { r += std::pow(std::fabs(v), p); });
        r = std::pow(r, 1.0 / p);
      }
      yp[o] = T(r);
    }
  });
}

// Checks a reduction's operands and returns its plan: out must hold x's kept dims in order (size-1
// dims aside) in the code's result dtype.
static ReducePlan checked_plan(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask) {
  if (code < 0 || code >= MF_R_COUNT) fail("reduce: bad op code ", code);
  const char* op = reduce_name(code);
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "output", out);
  if (x.ndim < 32 && (dim_mask >> x.ndim) != 0)
    fail(op, ": dim mask ", dim_mask, " names a dim past x's ", x.ndim, " (x is ", shape_str(x), ")");
  kcheck::contiguous(op, "output", out);
  ReducePlan plan(x, dim_mask);
  {  // out holds x's kept dims in order, with any dims of size 1 dropped or inserted (keepdim, sum_to)
    int i = 0, k = 0;
    bool ok = true;
    while (ok) {
      while (i < out.ndim && out.shape[i] == 1) ++i;
      while (k < plan.nk && plan.kshape[k] == 1) ++k;
      if (i == out.ndim || k == plan.nk) break;
      ok = out.shape[i++] == plan.kshape[k++];
    }
    if (!ok || i != out.ndim || k != plan.nk) {
      std::string dims;
      for (int d = 0; d < x.ndim; ++d)
        if (dim_mask & (1u << d)) dims += (dims.empty() ? "" : ",") + std::to_string(d + 1);
      fail(op, ": output is ", shape_str(out), ", x is ", shape_str(x), " reduced over dim", dims.find(',') != std::string::npos ? "s " : " ",
           dims.empty() ? "(none)" : dims, "; expected the output to hold x's other dims in order (size-1 dims aside)");
    }
  }
  // the extremes and their indices have no value over nothing; every other code has an identity
  bool no_identity = code == MF_R_MAX || code == MF_R_MIN || code == MF_R_ARGMAX || code == MF_R_ARGMIN;
  if (plan.rcount == 0 && no_identity)
    fail(reduce_name(code), ": cannot reduce over an empty dim of a ", shape_str(x), " tensor");
  bool is_float = dtype_is_float(x.dtype_id);
  bool float_only =
      code == MF_R_MEAN || code == MF_R_LOGSUMEXP || code == MF_R_VAR || code == MF_R_STD || code == MF_R_NORM;
  if (float_only && !is_float) fail(op, ": x is ", dtype_name(x.dtype_id), "; expected float32 or float64");
  int want = code == MF_R_ARGMAX || code == MF_R_ARGMIN ? int(MF_INT64)
             : code == MF_R_ANY || code == MF_R_ALL   ? int(MF_UINT8)
                                                       : x.dtype_id;
  bool wide = !is_float && (code == MF_R_SUM || code == MF_R_PROD) && out.dtype_id == MF_INT64;
  if (out.dtype_id != want && !wide)
    fail(reduce_name(code), ": output is ", dtype_name(out.dtype_id), "; expected ", dtype_name(want),
         is_float || (code != MF_R_SUM && code != MF_R_PROD) ? "" : " or int64");
  return plan;
}

static bool takes_number(int code) { return code == MF_R_VAR || code == MF_R_STD || code == MF_R_NORM; }

void reduce_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask) {
  if (takes_number(code)) fail(reduce_name(code), ": takes a number (the correction or order); run it with reduce_p");
  ReducePlan plan = checked_plan(code, out, x, dim_mask);
  if (code == MF_R_ANY || code == MF_R_ALL) {
    MF_DISPATCH(x.dtype_id, T, any_all_typed<T>(code, out, x, plan));
  } else if (code == MF_R_LOGSUMEXP) {
    MF_DISPATCH_FLOAT(x.dtype_id, T, "logsumexp", stat_typed<T>(code, out, x, plan, 0));
  } else {
    MF_DISPATCH(x.dtype_id, T, reduce_typed<T>(code, out, x, plan));
  }
}

void reduce_p_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask, double p) {
  if (code >= 0 && code < MF_R_COUNT && !takes_number(code))
    fail(reduce_name(code), ": takes no number; run it with reduce");
  ReducePlan plan = checked_plan(code, out, x, dim_mask);
  const char* op = reduce_name(code);
  if (p != p) fail(op, ": the ", code == MF_R_NORM ? "order" : "correction", " is NaN");
  if (code != MF_R_NORM && p < 0) fail(op, ": the correction is ", p, "; expected 0 or more");
  if (code == MF_R_NORM && std::isinf(p) && p < 0 && plan.rcount == 0)
    fail("norm: the -inf norm over an empty dim of a ", shape_str(x), " tensor has no value (no identity)");
  MF_DISPATCH_FLOAT(x.dtype_id, T, op, stat_typed<T>(code, out, x, plan, p));
}

// -- softmax / log_softmax -----------------------------------------------------------------
template <typename T>
static void softmax_typed(mf_tensor& y, const mf_tensor& x, int dim, bool log) {
  int64_t n = x.shape[dim], xs = x.strides[dim], ys = y.strides[dim];
  // lines along dim: for every other index
  ReducePlan plan(x, 1u << dim);
  ReducePlan yplan(y, 1u << dim);
  int64_t lines = x.count / (n ? n : 1);
  if (n == 0) return;
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)y.ptr;
  parallel_for(lines, n * 8, [&](int64_t lb, int64_t le) {
    for (int64_t l = lb; l < le; ++l) {
      const T* xl = xp + plan.kept_offset(l);
      T* yl = yp + yplan.kept_offset(l);
      T m = xl[0];
      for (int64_t i = 1; i < n; ++i) m = xl[i * xs] > m ? xl[i * xs] : m;
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(double(xl[i * xs] - m));
      if (log) {
        double ls = std::log(s);
        for (int64_t i = 0; i < n; ++i) yl[i * ys] = T(double(xl[i * xs] - m) - ls);
      } else {
        double inv = 1.0 / s;
        for (int64_t i = 0; i < n; ++i) yl[i * ys] = T(std::exp(double(xl[i * xs] - m)) * inv);
      }
    }
  });
}

// -- softmax_cross_entropy -------------------------------------------------------------------
// loss = -sum(labels * log_softmax(x)) along dim, in one pass per line with the max subtracted.
template <typename T>
static void softmax_xent_typed(mf_tensor& loss, const mf_tensor& x, const mf_tensor& labels, int dim) {
  int64_t n = x.shape[dim], xs = x.strides[dim], ls = labels.strides[dim];
  ReducePlan xplan(x, 1u << dim), lplan(labels, 1u << dim);
  int64_t lines = loss.count;
  const T* xp = (const T*)x.ptr;
  const T* lp = (const T*)labels.ptr;
  T* out = (T*)loss.ptr;
  parallel_for(lines, n * 8, [&](int64_t lb, int64_t le) {
    for (int64_t l = lb; l < le; ++l) {
      const T* xl = xp + xplan.kept_offset(l);
      const T* ll = lp + lplan.kept_offset(l);
      if (n == 0) {
        out[l] = T(0);
        continue;
      }
      T m = xl[0];
      for (int64_t i = 1; i < n; ++i) m = xl[i * xs] > m ? xl[i * xs] : m;
      double s = 0, lsum = 0, dot = 0;
      for (int64_t i = 0; i < n; ++i) {
        double z = double(xl[i * xs] - m);
        s += std::exp(z);
        lsum += double(ll[i * ls]);
        dot += double(ll[i * ls]) * z;
      }
      out[l] = T(lsum * std::log(s) - dot);
    }
  });
}

void softmax_xent_cpu(mf_tensor& loss, const mf_tensor& x, const mf_tensor& labels, int dim) {
  if (dim < 0 || dim >= x.ndim) fail("softmax_cross_entropy: dim ", dim + 1, " out of range");
  const char* op = "softmax_cross_entropy";
  kcheck::meta(op, "logits", x);
  kcheck::meta(op, "labels", labels);
  kcheck::meta(op, "loss", loss);
  kcheck::dtype(op, "labels", labels, x.dtype_id, " like the logits");
  kcheck::dtype(op, "loss", loss, x.dtype_id, " like the logits");
  kcheck::contiguous(op, "loss", loss);
  {  // loss: logits' shape without dim (or with it kept as size 1)
    bool ok = loss.ndim == x.ndim || loss.ndim == x.ndim - 1;
    for (int d = 0, i = 0; d < x.ndim && ok; ++d) {
      if (d == dim) {
        if (loss.ndim == x.ndim) ok = loss.shape[i++] == 1;
        continue;
      }
      ok = loss.shape[i++] == x.shape[d];
    }
    if (!ok)
      fail(op, ": loss is ", shape_str(loss), ", logits ", shape_str(x), "; expected the logits' shape without dim ",
           dim + 1);
  }
  for (int d = 0; d < x.ndim; ++d)
    if (labels.ndim != x.ndim || labels.shape[d] != x.shape[d])
      fail("softmax_cross_entropy: labels are ", shape_str(labels), ", logits ", shape_str(x), "; expected one shape");
  MF_DISPATCH_FLOAT(x.dtype_id, T, "softmax_cross_entropy", softmax_xent_typed<T>(loss, x, labels, dim));
}

void softmax_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "y", y);
  if (dim < 0 || dim >= x.ndim) fail(op, ": dim ", dim + 1, " out of range for x of size ", shape_str(x));
  kcheck::same_shape(op, "y", y, "x", x);
  kcheck::dtype(op, "y", y, x.dtype_id, " like x");
  kcheck::writable(op, "y", y);
  MF_DISPATCH_FLOAT(x.dtype_id, T, log ? "log_softmax" : "softmax", softmax_typed<T>(y, x, dim, log));
}

}  // namespace mf
