// Strided N-operand iteration over a broadcast shape: dims that are contiguous for every operand
// are merged, rows of the innermost dim are split across threads, and the caller's functor runs
// the tight inner loop (so the compiler vectorises the unit-stride case).
#pragma once
#include <algorithm>
#include <array>

#include "../../core/lines.h"  // Lines: the lines of a tensor along a dim
#include "../../core/shape.h"
#include "../../core/threads.h"

namespace mf {

template <int N>
struct StridedIter {
  int ndim = 0;
  int64_t shape[kMaxDims];
  int64_t stride[N][kMaxDims];  // in elements

  StridedIter(const Shape& s, const std::array<Shape, N>& st) {
    // drop size-1 dims, then merge dim d into d+1 when every operand steps contiguously across them
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;
      shape[ndim] = s[d];
      for (int k = 0; k < N; ++k) stride[k][ndim] = st[k][d];
      ++ndim;
    }
    int m = 0;
    for (int d = 0; d < ndim; ++d) {
      if (m > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k) merge = merge && stride[k][m - 1] == stride[k][d] * shape[d];
        if (merge) {
          shape[m - 1] *= shape[d];
          for (int k = 0; k < N; ++k) stride[k][m - 1] = stride[k][d];
          continue;
        }
      }
      shape[m] = shape[d];
      for (int k = 0; k < N; ++k) stride[k][m] = stride[k][d];
      ++m;
    }
    ndim = m;
    if (ndim == 0) {  // a single element
      ndim = 1;
      shape[0] = 1;
      for (int k = 0; k < N; ++k) stride[k][0] = 0;
    }
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }

  // f(ptrs, n, inner_strides) handles one row; ptrs are byte pointers, strides in elements.
  template <typename F>
  void run(const std::array<char*, N>& base, const std::array<int, N>& esize, int64_t cost, F&& f) const {
    run_rows(base, esize, cost, [&](std::array<char*, N> p, int64_t n, const std::array<int64_t, N>& ist,
                                    int64_t rows, const std::array<int64_t, N>& rst) {
      for (int64_t r = 0; r < rows; ++r) {
        f(p, n, ist);
        for (int k = 0; k < N; ++k) p[k] += rst[k] * esize[k];
      }
    });
  }

  // As run, but f(ptrs, n, inner_strides, rows, row_strides) handles `rows` consecutive rows along
  // the second-innermost dim at once (row_strides in elements; 0 when there is one dim), so a
  // caller that goes through a function pointer makes one call per block of rows, not per row.
  template <typename F>
  void run_rows(const std::array<char*, N>& base, const std::array<int, N>& esize, int64_t cost, F&& f) const {
    int64_t total = numel();
    if (total == 0) return;
    int64_t inner = shape[ndim - 1];
    std::array<int64_t, N> ist, rst{};
    for (int k = 0; k < N; ++k) ist[k] = stride[k][ndim - 1];
    if (ndim == 1) {  // one long row: split the row itself across threads
      parallel_for(total, cost, [&](int64_t b, int64_t e) {
        std::array<char*, N> p = base;
        for (int k = 0; k < N; ++k) p[k] += b * ist[k] * esize[k];
        f(p, e - b, ist, int64_t(1), rst);
      });
      return;
    }
    for (int k = 0; k < N; ++k) rst[k] = stride[k][ndim - 2];
    int64_t rows = total / inner, run = shape[ndim - 2];
    parallel_for(rows, inner * cost, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re;) {
        std::array<char*, N> p = base;
        int64_t rem = r;
        for (int d = ndim - 2; d >= 0; --d) {
          int64_t i = rem % shape[d];
          rem /= shape[d];
          for (int k = 0; k < N; ++k) p[k] += i * stride[k][d] * esize[k];
        }
        int64_t m = std::min(re - r, run - r % run);  // rows left before dim ndim-2 wraps
        f(p, inner, ist, m, rst);
        r += m;
      }
    });
  }
};

}  // namespace mf
