// Values-and-indices along one dim (max / min over a dim, sort, topk, kthvalue), running sums and
// products along a dim (cumsum, cumprod and cumprod's gradient). Indices are 1-based int64, Torch7's
// convention.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"
#include "strided.h"

namespace mf {

namespace {

// The total order every routine here sorts by (value_before, src/core/lines.h, the CUDA kernels' too):
// by value, NaN above every number, equal values by their position along the dim.
template <typename T, bool Descending>
struct ByValue {
  const T* v;
  bool operator()(int64_t a, int64_t b) const { return value_before<T, Descending>(v[a], v[b], a, b); }
};

}  // namespace

// -- max_dim / min_dim ----------------------------------------------------------------------------
// Checked here; computed by the reductions' arg paths (max_dim_lines, reduce.cc): the first of equal
// extremes, or the first NaN (PyTorch's CPU choices).
void max_dim_cpu(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, bool is_min) {
  kcheck::max_dim(is_min ? "min" : "max", values, indices, x, dim);  // src/core/lines.h
  max_dim_lines(values, indices, x, dim, is_min);
}

// -- sort / topk / kthvalue -----------------------------------------------------------------------
// Each line's positions are ordered by the total order above: all of them (sort), the first k
// (topk; in position order when not sorted), or only the k-th (kthvalue, one value per line).
// topk with k up to this many takes the one-pass selection (sort_typed)
constexpr int64_t kSmallK = 16;

template <typename T>
static void sort_typed(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, int64_t k, int mode,
                       bool descending, bool sorted) {
  Lines lx(x, dim);
  const bool kth = mode == kSortKth;
  // outputs are contiguous: x's shape with dim of size k (or dropped for kthvalue)
  int64_t ostride = 1;
  if (!kth)
    for (int d = dim + 1; d < x.ndim; ++d) ostride *= x.shape[d];
  int64_t inner = ostride, olen = kth ? 1 : k;
  const T* xp = (const T*)x.ptr;
  T* vp = (T*)values.ptr;
  int64_t* ip = (int64_t*)indices.ptr;
  const int64_t n = lx.n, st = lx.stride;
  int64_t cost = n * (1 + int64_t(std::log2(double(n) + 1)));
  parallel_for(lx.count, cost, [&](int64_t lb, int64_t le) {
    std::vector<T> v(size_t(n > 0 ? n : 1));
    std::vector<int64_t> pos(size_t(n > 0 ? n : 1));
    int64_t bp[kSmallK];  // the small-k path's best positions so far, best first
    for (int64_t l = lb; l < le; ++l) {
      const T* p = xp + lx.offset(l);
      // output line l: row-major over the other dims, so (outer, inner) split around dim
      int64_t o = (l / inner) * olen * inner + l % inner;
      if (!kth && k >= 1 && k <= kSmallK && k < n) {  // (k = 0 would write bp[-1])
        // a few of many (topk(x, 8) of 2048): one pass keeping the k best in order, each element
        // tested against the k-th best and only a better one inserted, instead of partial_sort's
        // heap over every position (issue 12: 128 rows of 128 took 51 us, PyTorch 27). The order is
        // the total order above (positions break ties), so the same k in the same order.
        auto pass = [&](auto before) {
          int64_t m = 0, tp = 0;  // tv, tp: the k-th best's value and position, once there are k
          T tv{};
          for (int64_t j = 0; j < n; ++j) {
            T x = p[j * st];
            if (m == k && !before(x, j, tv, tp)) continue;
            int64_t at = m < k ? m++ : k - 1;
            while (at > 0 && before(x, j, p[bp[at - 1] * st], bp[at - 1])) {
              bp[at] = bp[at - 1];
              --at;
            }
            bp[at] = j;
            if (m == k) {
              tp = bp[k - 1];
              tv = p[tp * st];
            }
          }
        };
        if (descending) pass([](T a, int64_t i, T b, int64_t j) { return value_before<T, true>(a, b, i, j); });
        else pass([](T a, int64_t i, T b, int64_t j) { return value_before<T, false>(a, b, i, j); });
        if (!sorted) std::sort(bp, bp + k);  // the chosen k in position order
        for (int64_t j = 0; j < k; ++j) {
          vp[o + j * ostride] = p[bp[j] * st];
          ip[o + j * ostride] = bp[j] + 1;
        }
        continue;
      }
      for (int64_t j = 0; j < n; ++j) {
        v[size_t(j)] = p[j * st];
        pos[size_t(j)] = j;
      }
      auto order = [&](auto cmp) {
        if (kth) {
          std::nth_element(pos.begin(), pos.begin() + (k - 1), pos.begin() + n, cmp);
        } else if (!sorted) {  // the chosen k in position order
          if (k < n) std::nth_element(pos.begin(), pos.begin() + k, pos.begin() + n, cmp);
          std::sort(pos.begin(), pos.begin() + k);
        } else if (k == n) {
          std::sort(pos.begin(), pos.begin() + n, cmp);
        } else {
          std::partial_sort(pos.begin(), pos.begin() + k, pos.begin() + n, cmp);
        }
      };
      if (descending) order(ByValue<T, true>{v.data()});
      else order(ByValue<T, false>{v.data()});
      if (kth) {
        vp[l] = v[size_t(pos[size_t(k - 1)])];
        ip[l] = pos[size_t(k - 1)] + 1;
      } else {
        for (int64_t j = 0; j < k; ++j) {
          vp[o + j * ostride] = v[size_t(pos[size_t(j)])];
          ip[o + j * ostride] = pos[size_t(j)] + 1;
        }
      }
    }
  });
}

void sort_cpu(mf_tensor& values, mf_tensor& indices, const mf_tensor& x, int dim, int64_t k, int mode, bool descending,
              bool sorted) {
  static const char* names[] = {"sort", "topk", "kthvalue"};
  if (mode < kSortAll || mode > kSortKth) fail("sort: bad mode ", mode);
  k = kcheck::sort_k(names[mode], values, indices, x, dim, k, mode);  // modes as kSortAll..kSortKth
  if (values.count == 0) return;
  MF_DISPATCH(x.dtype_id, T, sort_typed<T>(values, indices, x, dim, k, mode, descending, sorted));
}

// -- cumsum / cumprod -----------------------------------------------------------------------------
// Integers accumulate in uint64 (wrapping as two's complement, no signed-overflow UB) written as
// int64; floats accumulate in double. When dim is not the innermost, the lines of a contiguous x
// are walked a row at a time, so the reads and writes stream.
template <typename T, typename O>
static void cumulate_typed(mf_tensor& y, const mf_tensor& x, int dim, bool prod, bool reverse) {
  using A = std::conditional_t<std::is_floating_point<T>::value, double, uint64_t>;
  Lines lx(x, dim);
  const int64_t n = lx.n, st = lx.stride;
  int64_t inner = 1;
  for (int d = dim + 1; d < x.ndim; ++d) inner *= x.shape[d];
  const T* xp = (const T*)x.ptr;
  O* yp = (O*)y.ptr;
  auto put = [](A a) { return O(std::conditional_t<std::is_floating_point<T>::value, A, int64_t>(a)); };
  if (inner > 1 && is_contiguous(x) && n > 0) {  // rows of `inner` elements, one accumulator each
    int64_t outer = lx.count / inner;
    parallel_for(outer, n * inner, [&](int64_t ob, int64_t oe) {
      std::vector<A> acc(static_cast<size_t>(inner));
      for (int64_t o = ob; o < oe; ++o) {
        std::fill(acc.begin(), acc.end(), prod ? A(1) : A(0));
        for (int64_t s = 0; s < n; ++s) {
          int64_t j = reverse ? n - 1 - s : s;
          const T* xr = xp + (o * n + j) * inner;
          O* yr = yp + (o * n + j) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            A& a = acc[size_t(i)];
            a = prod ? A(a * A(xr[i])) : A(a + A(xr[i]));
            yr[i] = put(a);
          }
        }
      }
    });
    return;
  }
  parallel_for(lx.count, n, [&](int64_t lb, int64_t le) {
    for (int64_t l = lb; l < le; ++l) {
      const T* p = xp + lx.offset(l);
      O* q = yp + (l / inner) * n * inner + l % inner;
      A a = prod ? A(1) : A(0);
      for (int64_t s = 0; s < n; ++s) {
        int64_t j = reverse ? n - 1 - s : s;
        a = prod ? A(a * A(p[j * st])) : A(a + A(p[j * st]));
        q[j * inner] = put(a);
      }
    }
  });
}

void cumulate_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool prod, bool reverse) {
  const char* op = prod ? "cumprod" : "cumsum";
  kcheck::cumulate(op, y, x, dim);
  if (x.count == 0) return;
  if (dtype_is_float(x.dtype_id)) {
    MF_DISPATCH_FLOAT(x.dtype_id, T, op, cumulate_typed<T, T>(y, x, dim, prod, reverse));
  } else {
    MF_DISPATCH(x.dtype_id, T, cumulate_typed<T, int64_t>(y, x, dim, prod, reverse));
  }
}

// -- cumprod_grad ---------------------------------------------------------------------------------
// y_j = prod_{i<=j} x_i, so dL/dx_i = prod_{k<i} x_k * S_i with S_i = sum_{j>=i} gy_j prod_{i<k<=j} x_k,
// and S_i = gy_i + x_{i+1} S_{i+1}: one backward and one forward sweep, no division, so zeros in x
// are exact (reverse swaps the directions).
template <typename T>
static void cumprod_grad_typed(mf_tensor& gx, const mf_tensor& x, const mf_tensor& gy, int dim, bool reverse) {
  Lines lx(x, dim), lg(gy, dim);
  const int64_t n = lx.n, xs = lx.stride, gs = lg.stride;
  int64_t inner = 1;
  for (int d = dim + 1; d < x.ndim; ++d) inner *= x.shape[d];
  const T* xp = (const T*)x.ptr;
  const T* gp = (const T*)gy.ptr;
  T* op = (T*)gx.ptr;
  parallel_for(lx.count, 3 * n, [&](int64_t lb, int64_t le) {
    std::vector<double> s(static_cast<size_t>(n));
    for (int64_t l = lb; l < le; ++l) {
      const T* p = xp + lx.offset(l);
      const T* g = gp + lg.offset(l);
      T* q = op + (l / inner) * n * inner + l % inner;
      // position t in accumulation order is element at(t) along dim
      auto at = [&](int64_t t) { return reverse ? n - 1 - t : t; };
      double acc = 0;
      for (int64_t t = n - 1; t >= 0; --t) {
        acc = t + 1 < n ? double(g[at(t) * gs]) + double(p[at(t + 1) * xs]) * acc : double(g[at(t) * gs]);
        s[size_t(t)] = acc;
      }
      double pre = 1;
      for (int64_t t = 0; t < n; ++t) {
        q[at(t) * inner] = T(pre * s[size_t(t)]);
        pre *= double(p[at(t) * xs]);
      }
    }
  });
}

void cumprod_grad_cpu(mf_tensor& gx, const mf_tensor& x, const mf_tensor& gy, int dim, bool reverse) {
  const char* op = "cumprod_grad";
  kcheck::cumprod_grad(op, gx, x, gy, dim);
  kcheck::dtype(op, "gy", gy, x.dtype_id, " like x");
  kcheck::dtype(op, "gx", gx, x.dtype_id, " like x");
  if (x.count == 0) return;
  MF_DISPATCH_FLOAT(x.dtype_id, T, op, cumprod_grad_typed<T>(gx, x, gy, dim, reverse));
}

}  // namespace mf
