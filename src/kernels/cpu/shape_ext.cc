// -- periodic_copy / tri / linspace ------------------------------------------------------------
// Native routines of the everyday shape ops and ranges (issue 21): one index-remapping copy serves
// repeat, roll and flip; tri masks a triangle (tril, triu); linspace fills linear or log ranges.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../core/error.h"
#include "../../core/shape.h"
#include "../../core/threads.h"
#include "checks.h"
#include "copy.h"
#include "kernels.h"

namespace mf {

namespace {

// Offset (in elements) of row r of t, a row being one index of all dims before the last `keep`.
int64_t row_offset(const mf_tensor& t, int64_t r, int lead) {
  int64_t off = 0;
  for (int d = lead - 1; d >= 0; --d) {
    int64_t n = t.shape[d];
    off += (r % n) * t.strides[d];
    r /= n;
  }
  return off;
}

// A run of an output row read from x: dst[at + k] = src[from + step * k] for k < len (elements).
struct Run {
  int64_t at, len, from, step;
};

// Runs are cut at this length so that one long row (a 1-D roll) still splits across threads.
constexpr int64_t kRunPiece = 32768;

// The source of the last dim, index i of out reading index j of x (j = flip ? no-1-i : i-shift,
// modulo nx), as runs where j steps by one: one run for a copy or a flip, two for a roll, one a
// period for a repeat. Empty when x's last dim is so short that the runs would be a few elements
// each (a repeat of a narrow row): the element table serves better then.
std::vector<Run> last_dim_runs(int64_t no, int64_t nx, int64_t sx, int64_t shift, bool flip) {
  std::vector<Run> runs;
  if (nx < 16 && no > nx) return runs;
  for (int64_t i = 0; i < no;) {
    int64_t j = ((flip ? no - 1 - i : i - shift) % nx + nx) % nx;
    int64_t len = std::min({no - i, flip ? j + 1 : nx - j, kRunPiece});
    runs.push_back({i, len, j * sx, flip ? -sx : sx});
    i += len;
  }
  return runs;
}

// Copies elements of W bytes along out's rows, a row's source found per dim through tab (the
// element offsets in x of each index of out's dims before the last); within a row by runs (a
// memcpy-like run copy forward, a reversed or strided loop otherwise), or, when runs is empty, by
// inner, the element offsets of the last dim. Work items are (row, run) pairs.
template <typename W>
void gather_rows(const mf_tensor& out, const mf_tensor& x, const std::vector<std::vector<int64_t>>& tab,
                 const std::vector<Run>& runs, const std::vector<int64_t>& inner) {
  int nd = out.ndim;
  W* dst = (W*)out.ptr;
  const W* src = (const W*)x.ptr;
  if (nd == 0) {
    dst[0] = src[0];
    return;
  }
  int64_t last = out.shape[nd - 1], rows = out.count / last;
  int64_t nruns = runs.empty() ? 1 : int64_t(runs.size());
  const bool stream = stream_into(out, out.count * int64_t(sizeof(W)));  // streaming stores (copy.h)
  const bool ahead = !stream && last * int64_t(sizeof(W)) < kPrefetchRowMax;  // short rows: lines fetched ahead (copy.h)
  parallel_for(rows * nruns, last / nruns + 8, [&](int64_t lo, int64_t hi) {
    // the row's index over the dims before the last, and its source offset, found by division
    // once per thread and then stepped like an odometer (issue 12: the divisions per item were
    // a third of a small repeat's time)
    int64_t idx[kMaxDims], r = lo / nruns, k = lo % nruns, base = 0, q = r;
    uintptr_t next = uintptr_t(dst + r * last);
    W* end = dst + std::min(out.count, ((hi - 1) / nruns + 1) * last);  // past this range's last row
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = q % out.shape[d];
      q /= out.shape[d];
      base += tab[size_t(d)][size_t(idx[d])];
    }
    for (int64_t item = lo; item < hi; ++item) {
      if (k == nruns) {  // the next row
        k = 0;
        ++r;
        for (int d = nd - 2; d >= 0; --d) {
          const std::vector<int64_t>& t = tab[size_t(d)];
          base -= t[size_t(idx[d])];
          if (++idx[d] < out.shape[d]) {
            base += t[size_t(idx[d])];
            break;
          }
          idx[d] = 0;
          base += t[0];
        }
      }
      const int64_t j = k++;
      W* o = dst + r * last;
      if (ahead && j == 0) prefetch_ahead(o, o + last, end, next);
      if (runs.empty()) {
        for (int64_t c = 0; c < last; ++c) o[c] = src[base + inner[size_t(c)]];
        continue;
      }
      const Run& u = runs[size_t(j)];
      W* d = o + u.at;
      const W* s = src + base + u.from;
      if (u.step == 1 && u.len * int64_t(sizeof(W)) >= 128) {
        if (stream) {
          copy_stream(d, s, size_t(u.len) * sizeof(W));
        } else {
          copy_run(d, s, size_t(u.len) * sizeof(W));
        }
      } else if (u.step == 1) {
        for (int64_t c = 0; c < u.len; ++c) d[c] = s[c];
      } else if (u.step == -1) {
        for (int64_t c = 0; c < u.len; ++c) d[c] = s[-c];
      } else {
        for (int64_t c = 0; c < u.len; ++c) d[c] = s[c * u.step];
      }
    }
    if (stream) stream_fence();
  });
}

// periodic_copy with fewer, longer rows: the trailing dims that out and x share unshifted and
// unflipped, x row-major across them, merged into one last dim of L elements; and when the dim
// before them only tiles x (a repeat) and x is row-major across it too, that dim's x slab of nx * L
// elements becomes the row, tiled along a size-1 dim of x (repeat {2, 1} of 128 x 128: 2 runs of
// 64 KB instead of 256 rows of 512 bytes). Fills o2, x2, shift2 (0 for the new dims) and flip2
// and returns true when anything merged; the caller has checked that x's dims divide out's.
bool merge_trailing(const mf_tensor& out, const mf_tensor& x, const int64_t* shift, uint32_t flip, mf_tensor& o2,
                    mf_tensor& x2, int64_t* shift2, uint32_t& flip2) {
  const int lead = out.ndim - x.ndim;
  auto plain = [&](int d) {  // dim d of out reads x's dim unshifted and unflipped
    int64_t nx = x.shape[d - lead];
    return !((flip >> d) & 1u) && (!shift || shift[d] % nx == 0);
  };
  int s = out.ndim;
  int64_t L = 1;
  while (s > lead && out.shape[s - 1] == x.shape[s - 1 - lead] && plain(s - 1) &&
         (x.strides[s - 1 - lead] == L || x.shape[s - 1 - lead] == 1)) {
    L *= out.shape[s - 1];
    --s;
  }
  bool tile = s > lead && s < out.ndim && plain(s - 1) && x.strides[s - 1 - lead] == L;
  if (s >= out.ndim - 1 && !tile) return false;  // nothing merges
  int keep = tile ? s - 1 : s;                   // out's dims kept as they are
  o2 = out;
  x2 = x;
  o2.ndim = keep + (tile ? 2 : 1);
  x2.ndim = o2.ndim - lead;  // keep >= lead: every dim merged is one of x's
  for (int d = 0; d < keep; ++d) shift2[d] = shift ? shift[d] : 0;
  flip2 = flip & ((1u << keep) - 1u);
  if (tile) {
    int64_t nx = x.shape[keep - lead];
    o2.shape[keep] = out.shape[keep] / nx;
    o2.strides[keep] = nx * L;
    x2.shape[keep - lead] = 1;
    x2.strides[keep - lead] = 0;
    shift2[keep] = 0;
    L *= nx;
  }
  o2.shape[o2.ndim - 1] = L;
  o2.strides[o2.ndim - 1] = 1;
  x2.shape[x2.ndim - 1] = L;
  x2.strides[x2.ndim - 1] = 1;
  shift2[o2.ndim - 1] = 0;
  return true;
}

}  // namespace

void periodic_copy_cpu(mf_tensor& out, const mf_tensor& x, const int64_t* shift, uint32_t flip_mask) {
  const char* op = "periodic_copy";
  kcheck::meta(op, "out", out);
  kcheck::meta(op, "x", x);
  kcheck::contiguous(op, "out", out);
  kcheck::dtype(op, "out", out, x.dtype_id, " (x's dtype)");
  if (x.ndim > out.ndim)
    fail(op, ": x is ", shape_str(x), ", out ", shape_str(out), "; expected out to have at least x's dims");
  int lead = out.ndim - x.ndim;
  for (int d = 0; d < out.ndim; ++d) {
    int64_t nx = d >= lead ? x.shape[d - lead] : 1, no = out.shape[d];
    if (nx == 0 ? no != 0 : no % nx != 0)
      fail(op, ": out is ", shape_str(out), ", x ", shape_str(x), "; out's dim ", d + 1, " must be a multiple of x's");
  }
  if (out.count == 0) return;
  mf_tensor o2, x2;
  int64_t shift2[kMaxDims];
  uint32_t flip2 = 0;
  if (merge_trailing(out, x, shift, flip_mask, o2, x2, shift2, flip2))
    return periodic_copy_cpu(o2, x2, shift2, flip2);  // ends: a merge leaves fewer dims or a stride-0 tile
  std::vector<std::vector<int64_t>> tab(size_t(out.ndim));
  std::vector<Run> runs;
  std::vector<int64_t> inner;
  for (int d = 0; d < out.ndim; ++d) {
    int xd = d - lead;
    int64_t nx = xd >= 0 ? x.shape[xd] : 1, sx = xd >= 0 ? x.strides[xd] : 0, no = out.shape[d];
    int64_t s = shift ? shift[d] % nx : 0;
    bool flip = (flip_mask >> d) & 1u;
    if (d == out.ndim - 1) {
      runs = last_dim_runs(no, nx, sx, s, flip);
      if (!runs.empty()) break;
    }
    std::vector<int64_t>& t = d == out.ndim - 1 ? inner : tab[size_t(d)];
    t.resize(size_t(no));
    for (int64_t i = 0; i < no; ++i) {
      int64_t j = flip ? no - 1 - i : i - s;
      j %= nx;
      if (j < 0) j += nx;
      t[size_t(i)] = j * sx;
    }
  }
  switch (dtype_size(x.dtype_id)) {
    case 1: gather_rows<uint8_t>(out, x, tab, runs, inner); break;
    case 4: gather_rows<uint32_t>(out, x, tab, runs, inner); break;
    case 8: gather_rows<uint64_t>(out, x, tab, runs, inner); break;
    default: fail(op, ": invalid dtype code ", x.dtype_id);
  }
}

void tri_cpu(mf_tensor& out, const mf_tensor& x, int64_t k, bool upper) {
  const char* op = upper ? "triu" : "tril";
  kcheck::meta(op, "out", out);
  kcheck::meta(op, "x", x);
  kcheck::contiguous(op, "out", out);
  kcheck::same_shape(op, "out", out, "x", x);
  kcheck::dtype(op, "out", out, x.dtype_id, " (x's dtype)");
  if (x.ndim < 2) fail(op, ": x is ", shape_str(x), "; expected at least 2 dims (a matrix or a batch of them)");
  if (out.count == 0) return;
  int64_t m = x.shape[x.ndim - 1], n = x.shape[x.ndim - 2], rows = x.count / m;
  int64_t sr = x.strides[x.ndim - 2], sc = x.strides[x.ndim - 1];
  MF_DISPATCH(x.dtype_id, T, {
    T* dst = (T*)out.ptr;
    const T* src = (const T*)x.ptr;
    parallel_for(rows, m, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t i = r % n;  // row within its matrix
        const T* s = src + row_offset(x, r / n, x.ndim - 2) + i * sr;
        T* o = dst + r * m;
        // the kept columns are one range: j <= i + k (tril) or j >= i + k (triu); the rest are zeros
        int64_t kk = std::max(-n - 1, std::min(k, m + 1));  // same result, and i + kk cannot overflow
        int64_t cut = std::min(m, std::max(int64_t(0), upper ? i + kk : i + kk + 1));
        int64_t keep_lo = upper ? cut : 0, keep_hi = upper ? m : cut;
        for (int64_t j = upper ? 0 : cut; j < (upper ? cut : m); ++j) o[j] = T(0);
        if (sc == 1) {
          for (int64_t j = keep_lo; j < keep_hi; ++j) o[j] = s[j];
        } else {
          for (int64_t j = keep_lo; j < keep_hi; ++j) o[j] = s[j * sc];
        }
      }
    });
  });
}

void linspace_cpu(mf_tensor& t, double start, double stop, double base) {
  const char* op = base != 0 ? "logspace" : "linspace";
  kcheck::meta(op, "output", t);
  kcheck::contiguous(op, "output", t);
  if (t.ndim != 1) fail(op, ": output is ", shape_str(t), "; expected 1 dim");
  int64_t n = t.count;
  // As PyTorch: the first half steps up from start and the second down from stop, so both ends
  // are exact and the values are symmetric about the middle.
  double step = n > 1 ? (stop - start) / double(n - 1) : 0;
  auto value = [&](int64_t i) {
    double v = i < n / 2 ? start + double(i) * step : stop - double(n - 1 - i) * step;
    if (n == 1) v = start;
    return base != 0 ? std::pow(base, v) : v;
  };
  if (n > 0 && !dtype_is_float(t.dtype_id)) {  // monotonic: the ends bound the values
    check_value_fits(std::trunc(value(0)), t.dtype_id, op);
    check_value_fits(std::trunc(value(n - 1)), t.dtype_id, op);
  }
  if (base != 0 || n == 1) {
    MF_DISPATCH(t.dtype_id, T, {
      T* p = (T*)t.ptr;
      parallel_for(n, 20, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) p[i] = T(value(i));
      });
    });
    return;
  }
  // linspace: value(i) as two branch-free loops, one per half, which vectorize (one loop with the
  // half test in it stayed scalar: 16K float32 took 4.4 us, now 0.93; 4M 1040 -> 260 us, one thread)
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    const int64_t half = n / 2;
    parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
      const double a = start, b = stop, s = step;  // locals: p's stores cannot alias them
      const int64_t m = std::min(hi, half), last = n - 1;
      for (int64_t i = lo; i < m; ++i) p[i] = T(a + double(i) * s);
      for (int64_t i = std::max(lo, half); i < hi; ++i) p[i] = T(b - double(last - i) * s);
    });
  });
}

}  // namespace mf
