// Reductions over any set of dims. Every path streams memory contiguously and gives results that
// do not depend on the thread count:
//   rows     the reduced elements of an output are contiguous runs (x's stride-1 dim is reduced):
//            each run is folded with lane accumulators (reduce_rows.h); a full reduction of one
//            run is cut into fixed kBlock blocks folded on the pool and combined in block order;
//   columns  x's stride-1 dim is kept (an outer or middle dim is reduced): each output row
//            accumulates whole contiguous input rows, one reduced index after the other, so no
//            column is ever walked; threads split the output columns, which never changes an
//            element's order of operations;
//   generic  any other layout (a permuted view): one output at a time, element by element.
// Softmax and its kin are in softmax.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "../../core/error.h"
#include "../../core/reduce_checks.h"
#include "../../core/threads.h"
#include "../../core/vecmath.h"
#include "checks.h"
#include "kernels.h"
#include "reduce_rows.h"

namespace mf {

namespace {

enum class Path { kGeneric, kRows, kColumns };

// Output columns per work item of the column path: its accumulators (16 KB of double) stay in L1.
constexpr int64_t kTile = 2048;
// Narrow columns (K <= kNarrow, contiguous [rows x K] blocks): sums run in kLaneCols lanes, whole
// rows at a time (m = kLaneCols / K rows a step), instead of K adds and the row walk's overhead per
// reduced row (a (2048, 2048, 3) sum over dim 2: 2.6x PyTorch's time before).
constexpr int64_t kNarrow = 32, kLaneCols = 64;

// Splits x's dims into kept (outer loop, the output's order) and reduced (inner loop).
struct ReducePlan {
  int nk = 0, nr = 0;
  int64_t kshape[kMaxDims], kstride[kMaxDims], rshape[kMaxDims], rstride[kMaxDims];
  int64_t rcount = 1;
  // the reduced dims of size other than 1, neighbours that step contiguously merged: rows of
  // mshape[nm-1] elements mstride[nm-1] apart, in row-major order of the reduced dims
  int nm = 0;
  int64_t mshape[kMaxDims], mstride[kMaxDims];
  // the kept dims of size other than 1, merged alike: the output is row-major over them
  int nkm = 0;
  int64_t kmshape[kMaxDims], kmstride[kMaxDims];
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
    merge(nr, rshape, rstride, nm, mshape, mstride);
    merge(nk, kshape, kstride, nkm, kmshape, kmstride);
    ostep = nkm == 1 ? kmstride[0] : 0;
  }
  // x's offset of output o's elements: one multiply when the kept dims merge into one (or none)
  int64_t ostep = 0;
  int64_t base(int64_t o) const { return nkm <= 1 ? o * ostep : kept_offset(o); }
  static void merge(int n, const int64_t* shape, const int64_t* stride, int& nmerged, int64_t* ms, int64_t* mst) {
    for (int d = 0; d < n; ++d) {
      if (shape[d] == 1) continue;
      if (nmerged > 0 && mst[nmerged - 1] == stride[d] * shape[d]) {
        ms[nmerged - 1] *= shape[d];
        mst[nmerged - 1] = stride[d];
      } else {
        ms[nmerged] = shape[d];
        mst[nmerged++] = stride[d];
      }
    }
  }
  Path path() const {
    if (nm >= 1 && mstride[nm - 1] == 1) return Path::kRows;
    if (nm >= 1 && nkm >= 1 && kmstride[nkm - 1] == 1) return Path::kColumns;
    return Path::kGeneric;
  }
  // one contiguous run holds every reduced element of an output
  bool one_run() const { return nm == 1 && mstride[0] == 1; }
  // the column path over narrow rows: each output row's reduced elements are one contiguous
  // [rows x K] block (the reduced dims merge into one of stride K, the kept stride-1 dim has K <=
  // kNarrow columns), as a middle-dim sum of a (B, T, 3) tensor
  bool narrow_block() const {
    return nm == 1 && nkm >= 1 && kmshape[nkm - 1] <= kNarrow && mstride[0] == kmshape[nkm - 1];
  }
  // Calls row(offset, n, stride) for each row of the merged reduced dims, in row-major order.
  template <typename F>
  void for_rows(int64_t base, F&& row) const {
    if (nm == 0) {
      row(base, int64_t(1), int64_t(1));
      return;
    }
    if (rcount == 0) return;
    if (nm == 1) {
      row(base, mshape[0], mstride[0]);
      return;
    }
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
  // The column path: f(x_offset, out_offset, len) for each tile of len output columns of each
  // output row (row-major over the kept dims but the last merged one, whose K columns are
  // contiguous in x and in the output). The tiling only balances threads: an output element's
  // order of operations is the same for any tiling.
  template <typename F>
  void for_column_tiles(F&& f) const {
    int64_t K = kmshape[nkm - 1], outer = 1;
    for (int d = 0; d < nkm - 1; ++d) outer *= kmshape[d];
    int64_t tile = std::min(kTile, K), nt = get_num_threads();
    if (outer < nt && K > 256) tile = std::min(tile, std::max<int64_t>(256, (K * outer + nt - 1) / nt + 15) & ~int64_t(15));
    int64_t ntiles = (K + tile - 1) / tile;
    parallel_for(outer * ntiles, std::max<int64_t>(rcount, 1) * tile, [&](int64_t b, int64_t e) {
      for (int64_t it = b; it < e; ++it) {
        int64_t o = it / ntiles, c0 = (it % ntiles) * tile, xo = 0;
        int64_t r = o;
        for (int d = nkm - 2; d >= 0; --d) {
          xo += (r % kmshape[d]) * kmstride[d];
          r /= kmshape[d];
        }
        f(xo + c0, o * K + c0, std::min(tile, K - c0));
      }
    });
  }
};

// -- sum, mean, prod ---------------------------------------------------------------------------
// Integer sums and products accumulate in uint64 (wrapping, as two's complement int64 does) and are
// written as int64 (the sum and prod ops: PyTorch's rule) or as T (sum_to, whose result keeps its
// input's dtype); float ones accumulate in double, written as T. Error bound of a float sum: a row
// folds in 32 double lanes (rr::sum_map), and a full reduction's kBlock blocks are added pairwise,
// so |error| <= (min(n, kBlock) / 32 + 6 + log2(n / kBlock)) * 2^-53 * sum |x| before the final
// rounding to T (for float32, within one rounding of the exact sum below n = 2^30); a column sum
// adds its rows in order: |error| <= n * 2^-53 * sum |x| (narrow columns: m lanes of n / m rows
// each, then the lanes in order, no worse).
template <typename T>
static void sum_prod_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan) {
  using A = rr::Acc<T>;
  constexpr bool kInt = !std::is_floating_point<T>::value;
  const T* xp = (const T*)x.ptr;
  const bool prod = code == MF_R_PROD;
  const A one = prod ? A(1) : A(0);
  auto put = [&](int64_t o, A acc) {
    if (code == MF_R_MEAN)  // floats only (checked by reduce_cpu)
      ((T*)out.ptr)[o] = T(plan.rcount ? double(acc) / double(plan.rcount) : std::numeric_limits<double>::quiet_NaN());
    else if (kInt && out.dtype_id == MF_INT64)
      ((int64_t*)out.ptr)[o] = int64_t(acc);
    else
      ((T*)out.ptr)[o] = T(acc);
  };
  auto fold = [&](const T* p, int64_t n) { return prod ? rr::prod(p, n) : rr::sum(p, n); };
  switch (plan.path()) {
    case Path::kRows:
      if (out.count == 1 && plan.one_run()) {  // one run: fixed blocks on the pool
        const T* p = xp + plan.base(0);
        auto parts = rr::per_block<A>(plan.rcount, 1, [&](int64_t b, int64_t e) { return fold(p + b, e - b); });
        A acc = one;
        if (prod) for (A v : parts) acc *= v;
        else acc = rr::pairwise(parts);
        put(0, acc);
        return;
      }
      parallel_for(out.count, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          A acc = one;
          plan.for_rows(plan.base(o), [&](int64_t off, int64_t n, int64_t) {
            A v = fold(xp + off, n);
            acc = prod ? acc * v : acc + v;
          });
          put(o, acc);
        }
      });
      return;
    case Path::kColumns:
      if (!prod && plan.narrow_block()) {  // [rows x K] contiguous blocks, K <= kNarrow: lanes
        plan.for_column_tiles([&](int64_t xo, int64_t oo, int64_t len) {
          // w lanes, a multiple of K and of 8 (lcm(K, 8), times what fits in kLaneCols)
          const int64_t lcm = len / std::gcd(len, int64_t(8)) * 8, w = lcm >= kLaneCols ? lcm : lcm * (kLaneCols / lcm);
          const int64_t rows = plan.mshape[0], m = w / len, steps = rows / m;
          A acc[kNarrow * 8], tot[kNarrow];
          std::fill(acc, acc + w, one);
          std::fill(tot, tot + len, one);
          const T* p = xp + xo;
          bool done = false;
          if constexpr (std::is_floating_point<T>::value) {
            if (w == 64) {  // K a power of two: 8 vectors of 8 lanes held in registers, converted at once
              rr::V8d v[8] = {};
              for (int64_t st = 0; st < steps; ++st, p += 64)
                for (int q = 0; q < 8; ++q) v[q] += rr::to_v8d(rr::load8(p + 8 * q));
              std::memcpy(acc, v, sizeof v);
              done = true;
            }
          }
          if (!done)
            for (int64_t st = 0; st < steps; ++st, p += w)
              for (int64_t l = 0; l < w; ++l) acc[l] += A(p[l]);
          for (int64_t l = 0; l < w; l += len)  // lane l holds column l % len (no division per lane)
            for (int64_t c = 0; c < len; ++c) tot[c] += acc[l + c];
          for (int64_t r = steps * m; r < rows; ++r, p += len)
            for (int64_t c = 0; c < len; ++c) tot[c] += A(p[c]);
          for (int64_t c = 0; c < len; ++c) put(oo + c, tot[c]);
        });
        return;
      }
      plan.for_column_tiles([&](int64_t xo, int64_t oo, int64_t len) {
        A acc[kTile];
        std::fill(acc, acc + len, one);
        plan.for_reduced(xo, [&](int64_t off, int64_t) {
          const T* r = xp + off;
          if (prod)
            for (int64_t i = 0; i < len; ++i) acc[i] *= A(r[i]);
          else
            for (int64_t i = 0; i < len; ++i) acc[i] += A(r[i]);
        });
        for (int64_t i = 0; i < len; ++i) put(oo + i, acc[i]);
      });
      return;
    case Path::kGeneric:
      parallel_for(out.count, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          A acc = one;
          plan.for_reduced(plan.base(o), [&](int64_t off, int64_t) {
            acc = prod ? acc * A(xp[off]) : acc + A(xp[off]);
          });
          put(o, acc);
        }
      });
      return;
  }
}

// -- max, min ----------------------------------------------------------------------------------
// NaN wins (PyTorch): the result is NaN when any reduced element is.
template <typename T, bool Max>
static void extreme_typed(mf_tensor& out, const mf_tensor& x, const ReducePlan& plan) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)out.ptr;
  // b, then v: v when v is NaN or better and b is not NaN (b > NaN is false: a NaN b stays)
  auto better = [](T v, T b) { return (Max ? v > b : v < b) || rr::is_nan(v) ? v : b; };
  switch (plan.path()) {
    case Path::kRows:
      if (out.count == 1 && plan.one_run()) {
        const T* p = xp + plan.base(0);
        auto parts = rr::per_block<T>(plan.rcount, 1, [&](int64_t b, int64_t e) {
          return rr::extreme_nan<T, Max>(p + b, e - b);
        });
        T r = parts[0];
        for (T v : parts) r = rr::is_nan(r) ? r : better(v, r);
        yp[0] = r;
        return;
      }
      parallel_for(out.count, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          bool first = true;
          T r{};
          plan.for_rows(plan.base(o), [&](int64_t off, int64_t n, int64_t) {
            T v = rr::extreme_nan<T, Max>(xp + off, n);
            r = first ? v : rr::is_nan(r) ? r : better(v, r);
            first = false;
          });
          yp[o] = r;
        }
      });
      return;
    case Path::kColumns:
      plan.for_column_tiles([&](int64_t xo, int64_t oo, int64_t len) {
        T* y = yp + oo;
        plan.for_reduced(xo, [&](int64_t off, int64_t j) {
          const T* r = xp + off;
          if (j == 0) std::copy(r, r + len, y);
          else
            for (int64_t i = 0; i < len; ++i) y[i] = rr::is_nan(y[i]) ? y[i] : better(r[i], y[i]);
        });
      });
      return;
    case Path::kGeneric:
      parallel_for(out.count, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          T r{};
          plan.for_reduced(plan.base(o), [&](int64_t off, int64_t j) {
            r = j == 0 ? xp[off] : rr::is_nan(r) ? r : better(xp[off], r);
          });
          yp[o] = r;
        }
      });
      return;
  }
}

// -- argmax, argmin, and max / min over one dim (values and indices) -------------------------
// The first of equal extremes, or the first NaN (PyTorch's CPU choices); positions are row-major
// over the reduced dims, written 1-based (Torch7). vals, when not null, gets the extremes.
template <typename T, bool Max>
static void arg_typed(T* vals, int64_t* idx, int64_t nout, const mf_tensor& x, const ReducePlan& plan) {
  const T* xp = (const T*)x.ptr;
  auto put = [&](int64_t o, const rr::Best<T>& b) {
    if (vals) vals[o] = b.v;
    idx[o] = b.i + 1;
  };
  switch (plan.path()) {
    case Path::kRows:
      if (nout == 1 && plan.one_run()) {
        const T* p = xp + plan.base(0);
        auto parts = rr::per_block<rr::Best<T>>(plan.rcount, 1, [&](int64_t b, int64_t e) {
          rr::Best<T> r = rr::arg<T, Max>(p + b, e - b);
          r.i += b;
          return r;
        });
        rr::Best<T> r = parts[0];
        for (const auto& v : parts) r = rr::first_best<T, Max>(r, v);
        put(0, r);
        return;
      }
      parallel_for(nout, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          rr::Best<T> r{};
          int64_t at = 0;
          plan.for_rows(plan.base(o), [&](int64_t off, int64_t n, int64_t) {
            if (at > 0 && r.nan) return;
            rr::Best<T> v = rr::arg<T, Max>(xp + off, n);
            v.i += at;
            r = at == 0 ? v : rr::first_best<T, Max>(r, v);
            at += n;
          });
          put(o, r);
        }
      });
      return;
    case Path::kColumns:
      plan.for_column_tiles([&](int64_t xo, int64_t oo, int64_t len) {
        T bv_local[kTile];
        T* bv = vals ? vals + oo : bv_local;
        int64_t* bi = idx + oo;
        plan.for_reduced(xo, [&](int64_t off, int64_t j) {
          const T* r = xp + off;
          if (j == 0) {
            std::copy(r, r + len, bv);
            std::fill(bi, bi + len, int64_t(1));
            return;
          }
          for (int64_t i = 0; i < len; ++i) {
            T v = r[i], b = bv[i];
            bool take = !rr::is_nan(b) && ((Max ? v > b : v < b) || rr::is_nan(v));
            bv[i] = take ? v : b;
            bi[i] = take ? j + 1 : bi[i];
          }
        });
      });
      return;
    case Path::kGeneric:
      parallel_for(nout, plan.rcount, [&](int64_t ob, int64_t oe) {
        for (int64_t o = ob; o < oe; ++o) {
          rr::Best<T> r{};
          plan.for_reduced(plan.base(o), [&](int64_t off, int64_t j) {
            rr::Best<T> v{xp[off], j, rr::is_nan(xp[off])};
            r = j == 0 ? v : rr::first_best<T, Max>(r, v);
          });
          put(o, r);
        }
      });
      return;
  }
}

template <typename T>
static void reduce_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan) {
  switch (code) {
    case MF_R_MAX: return extreme_typed<T, true>(out, x, plan);
    case MF_R_MIN: return extreme_typed<T, false>(out, x, plan);
    case MF_R_ARGMAX: return arg_typed<T, true>(nullptr, (int64_t*)out.ptr, out.count, x, plan);
    case MF_R_ARGMIN: return arg_typed<T, false>(nullptr, (int64_t*)out.ptr, out.count, x, plan);
    default: return sum_prod_typed<T>(code, out, x, plan);
  }
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
      plan.for_rows(plan.base(o), [&](int64_t off, int64_t n, int64_t st) {
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
// The fast path of stat_typed where each output's elements are one contiguous run (a full
// reduction of it in kBlock blocks on the pool, added pairwise): logsumexp, var, std and the 1- and
// 2-norms, folded in double lanes (reduce_rows.h). Returns false for the other cases.
template <typename T>
static bool stat_runs(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan, double p) {
  bool fast = code == MF_R_LOGSUMEXP || code == MF_R_VAR || code == MF_R_STD || (code == MF_R_NORM && (p == 1 || p == 2));
  if (!fast || plan.path() != Path::kRows || !plan.one_run() || plan.rcount == 0) return false;
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)out.ptr;
  const int64_t n = plan.rcount;
  const bool whole = out.count == 1;
  // the sum of f(q, b, e) over [0, n): in blocks when the run is the whole reduction
  auto total = [&](const T* q, auto f) -> double {
    if (!whole) return f(q, int64_t(0), n);
    return rr::pairwise(rr::per_block<double>(n, 4, [&](int64_t b, int64_t e) { return f(q, b, e); }));
  };
  auto one = [&](const T* q) -> double {
    if (code == MF_R_LOGSUMEXP) {
      T m;
      if (whole) {
        auto parts = rr::per_block<T>(n, 1, [&](int64_t b, int64_t e) { return rr::extreme_nan<T, true>(q + b, e - b); });
        m = parts[0];
        for (T v : parts) m = rr::is_nan(m) ? m : rr::is_nan(v) || v > m ? v : m;
      } else {
        m = rr::extreme_nan<T, true>(q, n);
      }
      if (std::isinf(m)) m = 0;  // NaN stays: the sum is NaN too
      double s = total(q, [m](const T* r, int64_t b, int64_t e) { return rr::exp_sum(r + b, e - b, m); });
      return std::log(s) + double(m);
    }
    if (code == MF_R_NORM) {
      double s = total(q, [p](const T* r, int64_t b, int64_t e) {
        if (p == 2) return rr::sum_map(r + b, e - b, [](auto v) { return v * v; });
        return rr::sum_map(r + b, e - b, [](auto v) { return v < 0 ? -v : v; });
      });
      return p == 2 ? std::sqrt(s) : s;
    }
    double mean = total(q, [](const T* r, int64_t b, int64_t e) { return double(rr::sum(r + b, e - b)); }) / double(n);
    double ss = total(q, [mean](const T* r, int64_t b, int64_t e) {
      return rr::sum_map(r + b, e - b, [mean](auto v) { return (v - mean) * (v - mean); });
    });
    double v = ss / std::max(0.0, double(n) - p);
    return code == MF_R_STD ? std::sqrt(v) : v;
  };
  if (whole) {
    yp[0] = T(one(xp + plan.base(0)));
    return true;
  }
  parallel_for(out.count, n * 4, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) yp[o] = T(one(xp + plan.base(o)));
  });
  return true;
}

template <typename T>
static void stat_typed(int code, mf_tensor& out, const mf_tensor& x, const ReducePlan& plan, double p) {
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)out.ptr;
  const double inf = std::numeric_limits<double>::infinity();
  if (stat_runs<T>(code, out, x, plan, p)) return;
  parallel_for(out.count, plan.rcount * 4, [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      int64_t base = plan.base(o);
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

}  // namespace

void reduce_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask) {
  kcheck::reduce_call(code, out, x, dim_mask, false, 0);  // src/core/reduce_checks.h, the CUDA entry's too
  ReducePlan plan(x, dim_mask);
  if (out.count == 0) return;  // nothing to write (and a kept dim of size 0 would divide by 0)
  if (code == MF_R_ANY || code == MF_R_ALL) {
    MF_DISPATCH(x.dtype_id, T, any_all_typed<T>(code, out, x, plan));
  } else if (code == MF_R_LOGSUMEXP) {
    MF_DISPATCH_FLOAT(x.dtype_id, T, "logsumexp", stat_typed<T>(code, out, x, plan, 0));
  } else {
    MF_DISPATCH(x.dtype_id, T, reduce_typed<T>(code, out, x, plan));
  }
}

void reduce_p_cpu(int code, mf_tensor& out, const mf_tensor& x, uint32_t dim_mask, double p) {
  kcheck::reduce_call(code, out, x, dim_mask, true, p);
  ReducePlan plan(x, dim_mask);
  const char* op = reduce_op_name(code);
  if (out.count == 0) return;
  MF_DISPATCH_FLOAT(x.dtype_id, T, op, stat_typed<T>(code, out, x, plan, p));
}


// -- max / min over one dim: values and indices --------------------------------------------------
// Called by max_dim_cpu (sort.cc) once it has checked the operands: values and indices are
// contiguous, shaped as x without dim (or with it kept as size 1).
void max_dim_lines(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, bool is_min) {
  if (values.count == 0) return;
  ReducePlan plan(x, x.ndim ? 1u << dim : 0u);
  MF_DISPATCH(x.dtype_id, T, {
    if (is_min) arg_typed<T, false>((T*)values.ptr, (int64_t*)indices.ptr, values.count, x, plan);
    else arg_typed<T, true>((T*)values.ptr, (int64_t*)indices.ptr, values.count, x, plan);
  });
}

}  // namespace mf
