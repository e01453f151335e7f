// softmax / log_softmax along a dim and the softmax cross-entropy, a few passes per line with the
// vector exp (vecmath.h): each line's max, then exp(x - max) and its sum in double lanes, then the
// scaling. A line is contiguous when the dim is x's stride-1 dim; otherwise, when x and y are
// contiguous, lines are handled a tile of them at a time, along whole contiguous rows (never a
// column walk). Results do not depend on the thread count: threads split lines, never a line.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "../../core/vecmath.h"
#include "checks.h"
#include "kernels.h"
#include "strided.h"
#include "reduce_rows.h"

namespace mf {

namespace {


// Lines side by side per tile of the column form (dims after dim): their elements of one index
// along dim are contiguous, so a tile of 512 lines reads rows of 2 KB (float).
constexpr int64_t kCols = 512;

// One contiguous line of n >= 1: y = softmax(x) or log_softmax(x). A NaN makes the line NaN, as the
// sum is NaN; a line of -inf or one holding +inf gives NaN too (inf - inf), as in PyTorch.
template <typename T>
void softmax_line(T* y, const T* x, int64_t n, bool log) {
  T m = rr::extreme_nan<T, true>(x, n);
  if (log) {
    T ls = T(std::log(rr::exp_sum(x, n, m)));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
    return;
  }
  // exp(x - m) and its sum a chunk at a time, so the sum reads the chunk exp wrote while in L1
  constexpr int64_t kChunk = 512;
  double s = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    int64_t len = std::min(kChunk, n - c);
    for (int64_t i = c; i < c + len; ++i) y[i] = x[i] - m;
    vm::exp(y + c, y + c, len);
    s += rr::sum(y + c, len);
  }
  T inv = T(1.0 / s);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// Lines of n elements, inner of them side by side (x and y contiguous; outer blocks of n x inner):
// cols lines starting at column c of outer block o, along whole rows of cols elements.
template <typename T>
void softmax_cols(T* y, const T* x, int64_t n, int64_t inner, int64_t cols, bool log) {
  T m[kCols], buf[kCols];
  double s[kCols];
  std::copy(x, x + cols, m);
  for (int64_t j = 1; j < n; ++j) {
    const T* r = x + j * inner;
    for (int64_t i = 0; i < cols; ++i) m[i] = rr::is_nan(m[i]) || !(r[i] > m[i] || rr::is_nan(r[i])) ? m[i] : r[i];
  }
  std::fill(s, s + cols, 0.0);
  for (int64_t j = 0; j < n; ++j) {
    const T* r = x + j * inner;
    T* e = log ? buf : y + j * inner;
    for (int64_t i = 0; i < cols; ++i) e[i] = r[i] - m[i];
    vm::exp(e, e, cols);
    for (int64_t i = 0; i < cols; ++i) s[i] += double(e[i]);
  }
  if (log) {
    for (int64_t i = 0; i < cols; ++i) buf[i] = T(std::log(s[i]));
    for (int64_t j = 0; j < n; ++j) {
      const T* r = x + j * inner;
      T* yr = y + j * inner;
      for (int64_t i = 0; i < cols; ++i) yr[i] = (r[i] - m[i]) - buf[i];
    }
    return;
  }
  for (int64_t i = 0; i < cols; ++i) buf[i] = T(1.0 / s[i]);
  for (int64_t j = 0; j < n; ++j) {
    T* yr = y + j * inner;
    for (int64_t i = 0; i < cols; ++i) yr[i] *= buf[i];
  }
}

template <typename T>
void softmax_typed(mf_tensor& y, const mf_tensor& x, int dim, bool log) {
  Lines lx(x, dim), ly(y, dim);
  const int64_t n = lx.n;
  if (n == 0 || lx.count == 0) return;  // nothing to write (and an empty inner dim would divide by 0 below)
  const T* xp = (const T*)x.ptr;
  T* yp = (T*)y.ptr;
  if (lx.stride == 1 && ly.stride == 1) {  // contiguous lines
    parallel_for(lx.count, n * 8, [&](int64_t lb, int64_t le) {
      for (int64_t l = lb; l < le; ++l) softmax_line(yp + ly.offset(l), xp + lx.offset(l), n, log);
    });
    return;
  }
  if (is_contiguous(x) && is_contiguous(y)) {  // dim is not the last: tiles of side-by-side lines
    int64_t inner = 1;
    for (int d = dim + 1; d < x.ndim; ++d) inner *= x.shape[d];
    int64_t outer = lx.count / inner, tiles = (inner + kCols - 1) / kCols;
    parallel_for(outer * tiles, n * std::min(inner, kCols) * 8, [&](int64_t b, int64_t e) {
      for (int64_t it = b; it < e; ++it) {
        int64_t o = it / tiles, c = (it % tiles) * kCols;
        softmax_cols(yp + o * n * inner + c, xp + o * n * inner + c, n, inner, std::min(kCols, inner - c), log);
      }
    });
    return;
  }
  // any other layout: element by element, in double
  const int64_t xs = lx.stride, ys = ly.stride;
  parallel_for(lx.count, n * 8, [&](int64_t lb, int64_t le) {
    for (int64_t l = lb; l < le; ++l) {
      const T* xl = xp + lx.offset(l);
      T* yl = yp + ly.offset(l);
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
// loss = -sum(labels * log_softmax(x)) along dim = sum(labels) * log(sum(exp(x - m))) -
// sum(labels * (x - m)), per line: the max, then one pass for the three sums.
template <typename T>
void softmax_xent_typed(mf_tensor& loss, const mf_tensor& x, const mf_tensor& labels, int dim) {
  Lines lx(x, dim), ll(labels, dim);
  const int64_t n = lx.n, xs = lx.stride, ls = ll.stride;
  const T* xp = (const T*)x.ptr;
  const T* lp = (const T*)labels.ptr;
  T* out = (T*)loss.ptr;
  parallel_for(loss.count, n * 8, [&](int64_t lb, int64_t le) {
    for (int64_t l = lb; l < le; ++l) {
      const T* xl = xp + lx.offset(l);
      const T* tl = lp + ll.offset(l);
      if (n == 0) {
        out[l] = T(0);
        continue;
      }
      if (xs == 1 && ls == 1) {
        T m = rr::extreme_nan<T, true>(xl, n);
        double s = rr::exp_sum(xl, n, m);
        double lsum = double(rr::sum(tl, n)), dot = rr::dot_shifted(tl, xl, n, m);
        out[l] = T(lsum * std::log(s) - dot);
        continue;
      }
      T m = xl[0];
      for (int64_t i = 1; i < n; ++i) m = xl[i * xs] > m ? xl[i * xs] : m;
      double s = 0, lsum = 0, dot = 0;
      for (int64_t i = 0; i < n; ++i) {
        double z = double(xl[i * xs] - m);
        s += std::exp(z);
        lsum += double(tl[i * ls]);
        dot += double(tl[i * ls]) * z;
      }
      out[l] = T(lsum * std::log(s) - dot);
    }
  });
}

}  // namespace

void softmax_xent_cpu(mf_tensor& loss, const mf_tensor& x, const mf_tensor& labels, int dim) {
  kcheck::softmax_xent("softmax_cross_entropy", loss, x, labels, dim, false);  // src/core/lines.h
  MF_DISPATCH_FLOAT(x.dtype_id, T, "softmax_cross_entropy", softmax_xent_typed<T>(loss, x, labels, dim));
}

void softmax_cpu(mf_tensor& y, const mf_tensor& x, int dim, bool log) {
  kcheck::softmax(log ? "log_softmax" : "softmax", y, x, dim, false);  // src/core/lines.h
  MF_DISPATCH_FLOAT(x.dtype_id, T, log ? "log_softmax" : "softmax", softmax_typed<T>(y, x, dim, log));
}

}  // namespace mf
