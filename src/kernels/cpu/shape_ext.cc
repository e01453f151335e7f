// -- periodic_copy / tri / linspace ------------------------------------------------------------
// Native routines of the everyday shape ops and ranges (issue 21): one index-remapping copy serves
// repeat, roll and flip; tri masks a triangle (tril, triu); linspace fills linear or log ranges.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "checks.h"
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

// A run of an output row read from one run of x: dst[at + k] = src[from + dir * k] for k < len.
struct Run {
  int64_t at, len, from, dir;
};

// The last dim's source offsets cut into runs of unit steps, forward or backward (one run for a copy
// or a flip, two for a roll, one per period for a repeat); empty when x's last dim is not unit-stride
// and the runs would be single elements.
std::vector<Run> runs_of(const std::vector<int64_t>& inner) {
  std::vector<Run> runs;
  int64_t n = int64_t(inner.size());
  for (int64_t j = 0; j < n;) {
    int64_t dir = j + 1 < n && inner[size_t(j + 1)] - inner[size_t(j)] == -1 ? -1 : 1, k = j + 1;
    while (k < n && inner[size_t(k)] - inner[size_t(k - 1)] == dir) ++k;
    runs.push_back({j, k - j, inner[size_t(j)], dir});
    j = k;
  }
  if (int64_t(runs.size()) * 4 > n) runs.clear();  // mostly single elements: the gather loop is better
  return runs;
}

// Copies elements of W bytes: dst[i] = src[tab[i]] along out's rows, the row's source found per dim;
// within a row by runs (memcpy forward, a reversed loop backward) when runs_of finds them.
template <typename W>
void gather_rows(const mf_tensor& out, const mf_tensor& x, const std::vector<std::vector<int64_t>>& tab) {
  int nd = out.ndim;
  W* dst = (W*)out.ptr;
  const W* src = (const W*)x.ptr;
  if (nd == 0) {
    dst[0] = src[0];
    return;
  }
  int64_t last = out.shape[nd - 1], rows = out.count / last;
  const int64_t* inner = tab[size_t(nd - 1)].data();
  std::vector<Run> runs = runs_of(tab[size_t(nd - 1)]);
  parallel_for(rows, last, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t base = 0, q = r;
      for (int d = nd - 2; d >= 0; --d) {
        base += tab[size_t(d)][size_t(q % out.shape[d])];
        q /= out.shape[d];
      }
      W* o = dst + r * last;
      if (runs.empty()) {
        for (int64_t j = 0; j < last; ++j) o[j] = src[base + inner[j]];
        continue;
      }
      for (const Run& u : runs) {
        W* d = o + u.at;
        const W* s = src + base + u.from;
        if (u.dir > 0 && u.len * int64_t(sizeof(W)) >= 128) {
          std::memcpy(d, s, size_t(u.len) * sizeof(W));
        } else if (u.dir > 0) {
          for (int64_t k = 0; k < u.len; ++k) d[k] = s[k];
        } else {
          for (int64_t k = 0; k < u.len; ++k) d[k] = s[-k];
        }
      }
    }
  });
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
  if (out.count == 0) return;
  int lead = out.ndim - x.ndim;
  std::vector<std::vector<int64_t>> tab(size_t(out.ndim));
  for (int d = 0; d < out.ndim; ++d) {
    int xd = d - lead;
    int64_t nx = xd >= 0 ? x.shape[xd] : 1, sx = xd >= 0 ? x.strides[xd] : 0, no = out.shape[d];
    if (nx == 0 || no % nx != 0)
      fail(op, ": out is ", shape_str(out), ", x ", shape_str(x), "; out's dim ", d + 1, " must be a multiple of x's");
    int64_t s = shift ? shift[d] % nx : 0;
    bool flip = (flip_mask >> d) & 1u;
    tab[size_t(d)].resize(size_t(no));
    for (int64_t i = 0; i < no; ++i) {
      int64_t j = flip ? no - 1 - i : i - s;
      j %= nx;
      if (j < 0) j += nx;
      tab[size_t(d)][size_t(i)] = j * sx;
    }
  }
  switch (dtype_size(x.dtype_id)) {
    case 1: gather_rows<uint8_t>(out, x, tab); break;
    case 4: gather_rows<uint32_t>(out, x, tab); break;
    case 8: gather_rows<uint64_t>(out, x, tab); break;
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
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    parallel_for(n, 20, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) p[i] = T(value(i));
    });
  });
}

}  // namespace mf
