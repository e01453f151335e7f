// -- randperm / multinomial / masked_select / nonzero -------------------------------------------------
// multinomial copies its weights to the host (its checks need them there: one synchronisation) and
// draws there with the CPU's own row routine (src/core/multinomial.h), then copies the categories
// over: the same draws as the CPU's. randperm is the CPU's serial Fisher-Yates (src/kernels/cpu/sample.cc) on the same Philox counters,
// run on the host and copied over: the same permutation for the same seed on both devices (the shuffle
// is inherently serial; n is a dataset's size, so the copy is small). masked_select and nonzero count
// their selection first (one host synchronisation: where the padding starts), then write the first
// size of it (the output's length) in row-major order through an exclusive scan of the selection
// flags (CUB), and fill the rest, as the CPU does.
#include <climits>
#include <cub/cub.cuh>

#include <functional>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "../../core/kcheck.h"
#include "../../core/multinomial.h"
#include "../../core/rng.h"
#include "../../core/writes.h"
#include "layout.cuh"

namespace mf {
namespace cuda {

namespace {

template <class T>
__global__ void flags_kernel(int* flags, const T* x, Layout l, long long n) {
  for (long long i = global_index(); i < n; i += global_step()) flags[i] = x[offset_of(l, i)] != T(0) ? 1 : 0;
}

// pos: exclusive sums of flags; masked_select writes x's element, nonzero the 1-based coordinates,
// each only for the first size selected (the output's length)
template <class T>
__global__ void select_kernel(T* out, long long size, const T* x, Layout xl, const int* flags, const long long* pos,
                              long long n) {
  for (long long i = global_index(); i < n; i += global_step())
    if (flags[i] && pos[i] < size) out[pos[i]] = x[offset_of(xl, i)];
}

__global__ void coords_kernel(long long* out, long long size, Layout l, const int* flags, const long long* pos,
                              long long n) {
  for (long long i = global_index(); i < n; i += global_step()) {
    if (!flags[i] || pos[i] >= size) continue;
    long long* row = out + pos[i] * l.ndim, rem = i;
    for (int d = l.ndim - 1; d >= 0; --d) {
      row[d] = rem % l.shape[d] + 1;
      rem /= l.shape[d];
    }
  }
}

// out[i] = v for i in [from, to): the padding past the selection
template <class T>
__global__ void pad_kernel(T* out, long long from, long long to, T v) {
  for (long long i = from + global_index(); i < to; i += global_step()) out[i] = v;
}

template <class T>
void pad(T* out, long long from, long long to, T v) {
  if (to > from) pad_kernel<T><<<grid_for(to - from), kThreads, 0, stream()>>>(out, from, to, v);
}

// flags (1 where selected) and their exclusive sums over n elements; returns the count (host sync)
struct Selection {
  std::unique_ptr<Scratch> flags, pos;
  long long count = 0;
};

Selection select_flags(const char* op, long long n, const std::function<void(int*)>& mark) {
  // CUB's ExclusiveSum accumulates in its input's type (int here): past INT_MAX elements the
  // positions could wrap, so refuse rather than write out of place
  if (n > INT_MAX) fail(op, ": ", n, " elements; the cuda selection handles up to ", INT_MAX);
  Selection s;
  s.flags.reset(new Scratch(size_t(n) * sizeof(int)));
  s.pos.reset(new Scratch(size_t(n) * sizeof(long long)));
  int* flags = s.flags->as<int>();
  long long* pos = s.pos->as<long long>();
  mark(flags);
  check_launch(op);
  size_t tmp_bytes = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, tmp_bytes, flags, pos, n, stream()), op, "cub::DeviceScan");
  Scratch tmp(tmp_bytes > 0 ? tmp_bytes : 1);
  check(cub::DeviceScan::ExclusiveSum(tmp.get(), tmp_bytes, flags, pos, n, stream()), op, "cub::DeviceScan");
  long long last_pos = 0;
  int last_flag = 0;
  check(cudaMemcpyAsync(&last_pos, pos + n - 1, sizeof last_pos, cudaMemcpyDeviceToHost, stream()), op,
        "cudaMemcpyAsync");
  check(cudaMemcpyAsync(&last_flag, flags + n - 1, sizeof last_flag, cudaMemcpyDeviceToHost, stream()), op,
        "cudaMemcpyAsync");
  synchronize(op);
  s.count = last_pos + last_flag;
  return s;
}

}  // namespace

int randperm(mf_tensor* t, mf_rng* g) {
  return entry("randperm", [&] {
    kcheck::meta("randperm", "output", *t);
    kcheck::contiguous("randperm", "output", *t);
    if (!g) fail("randperm: no generator");
    if (t->ndim != 1) fail("randperm: output is ", shape_str(*t), "; expected 1 dim");
    int64_t n = t->count;
    if (n > 0) check_value_fits(double(n), t->dtype_id, "randperm");
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), int64_t(1));
    uint64_t seed = g->seed, base = g->offset;
    for (int64_t i = n - 1; i > 0; --i) {  // the CPU's steps (src/core/philox.h: randperm_partner)
      int64_t j = int64_t(randperm_partner(seed, base, uint64_t(i)));
      std::swap(perm[size_t(i)], perm[size_t(j)]);
    }
    g->offset = base + uint64_t((n + 1) / 2);
    if (n == 0) return;
    auto put = [&](auto zero) {
      using T = decltype(zero);
      std::vector<T> host(perm.begin(), perm.end());
      // from pageable memory the copy has read the buffer when it returns, so host may go
      check(cudaMemcpyAsync(t->ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream()),
            "randperm", "cudaMemcpyAsync");
    };
    switch (t->dtype_id) {
      case MF_FLOAT32: put(float()); break;
      case MF_FLOAT64: put(double()); break;
      case MF_INT32: put(int32_t()); break;
      case MF_INT64: put(int64_t()); break;
      case MF_UINT8: put(uint8_t()); break;
      default: fail("randperm: output has an unknown dtype");
    }
  });
}

int multinomial(mf_tensor* out, mf_rng* g, const mf_tensor* probs, int32_t replacement) {
  return entry("multinomial", [&] {
    const char* op = "multinomial";
    kcheck::meta(op, "out", *out);
    kcheck::meta(op, "probs", *probs);
    kcheck::contiguous(op, "out", *out);
    kcheck::contiguous(op, "probs", *probs);
    kcheck::float_dtype(op, "probs", *probs);
    kcheck::dtype(op, "out", *out, MF_INT64, " (1-based category indices)");
    if (!g) fail(op, ": no generator");
    const mf_tensor& p = *probs;
    if (p.ndim < 1 || p.ndim > 2 || out->ndim != p.ndim || (p.ndim == 2 && out->shape[0] != p.shape[0]))
      fail(op, ": probs is ", shape_str(p), ", out ", shape_str(*out), "; expected 1-D or 2-D probs and out of ",
           "(rows, n) or (n)");
    int64_t k = p.shape[p.ndim - 1], n = out->shape[out->ndim - 1], rows = p.ndim == 2 ? p.shape[0] : 1;
    if (out->count == 0) return;
    std::vector<double> w(size_t(p.count));
    if (p.dtype_id == MF_FLOAT64) {
      check(cudaMemcpyAsync(w.data(), p.ptr, w.size() * sizeof(double), cudaMemcpyDeviceToHost, stream()), op,
            "cudaMemcpyAsync");
      synchronize(op);
    } else {
      std::vector<float> f(size_t(p.count));
      check(cudaMemcpyAsync(f.data(), p.ptr, f.size() * sizeof(float), cudaMemcpyDeviceToHost, stream()), op,
            "cudaMemcpyAsync");
      synchronize(op);
      std::copy(f.begin(), f.end(), w.begin());
    }
    multinomial_check(op, w.data(), rows, k, n, replacement != 0, p);
    uint64_t seed = g->seed, base = g->offset, m = uint64_t(std::max(k, n));
    std::vector<int64_t> cats(size_t(out->count));
    std::vector<double> acc(static_cast<size_t>(k));
    std::vector<int64_t> order(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r)
      multinomial_row(seed, base + uint64_t(r) * m, w.data() + r * k, k, n, replacement != 0, cats.data() + r * n, acc,
                      order);
    g->offset = base + uint64_t(rows) * m;
    // from pageable memory the copy has read the buffer when it returns
    check(cudaMemcpyAsync(out->ptr, cats.data(), cats.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream()), op,
          "cudaMemcpyAsync");
  });
}

int masked_select(mf_tensor* out_p, const mf_tensor* x_p, const mf_tensor* mask_p, double fill) {
  return entry("masked_select", [&] {
    const char* op = "masked_select";
    mf_tensor& out = *out_p;
    const mf_tensor &x = *x_p, &mask = *mask_p;
    kcheck::meta(op, "x", x);
    kcheck::meta(op, "mask", mask);
    kcheck::meta(op, "output", out);
    kcheck::dtype(op, "mask", mask, MF_UINT8);
    kcheck::dtype(op, "output", out, x.dtype_id, " (x's dtype)");
    Shape s = broadcast_shapes(op, shape_of(x), shape_of(mask), "x", "mask");
    if (out.ndim != 1) fail(op, ": output is ", shape_str(out), "; expected 1-D");
    kcheck::contiguous(op, "output", out);
    check_value_fits(fill, x.dtype_id, "masked_select: fill_value");
    long long n = checked_numel(s, op), size = out.count;
    mf_tensor like{};  // the broadcast shape, for the layouts
    set_meta(like, s, x.dtype_id, x.device_id);
    Layout ml = broadcast_layout(mask, like), xl = broadcast_layout(x, like);
    long long count = 0;
    Selection sel;
    if (n > 0 && size > 0) {
      sel = select_flags(op, n, [&](int* flags) {
        flags_kernel<uint8_t><<<grid_for(n), kThreads, 0, stream()>>>(flags, static_cast<const uint8_t*>(mask.ptr), ml, n);
      });
      count = sel.count;
    }
    const long long kept = count < size ? count : size;
    const int* flags = count > 0 ? sel.flags->as<int>() : nullptr;
    const long long* pos = count > 0 ? sel.pos->as<long long>() : nullptr;
    // T: x's element type; the selected elements, then fill past them
#define MF_SELECT_(T)                                                                                              \
  do {                                                                                                             \
    if (count > 0)                                                                                                 \
      select_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(static_cast<T*>(out.ptr), size,                     \
                                                               static_cast<const T*>(x.ptr), xl, flags, pos, n);   \
    pad<T>(static_cast<T*>(out.ptr), kept, size, T(fill));                                                         \
  } while (0)
    switch (x.dtype_id) {
      case MF_FLOAT32: MF_SELECT_(float); break;
      case MF_FLOAT64: MF_SELECT_(double); break;
      case MF_INT32: MF_SELECT_(int32_t); break;
      case MF_INT64: MF_SELECT_(int64_t); break;
      case MF_UINT8: MF_SELECT_(uint8_t); break;
      default: fail(op, ": x has an unknown dtype");
    }
#undef MF_SELECT_
    check_launch(op);
  });
}

int nonzero(mf_tensor* out_p, const mf_tensor* x_p, int64_t fill) {
  return entry("nonzero", [&] {
    const char* op = "nonzero";
    mf_tensor& out = *out_p;
    const mf_tensor& x = *x_p;
    kcheck::meta(op, "x", x);
    kcheck::meta(op, "output", out);
    kcheck::dtype(op, "output", out, MF_INT64);
    if (out.ndim != 2 || out.shape[1] != x.ndim)
      fail(op, ": output is ", shape_str(out), "; x is ", shape_str(x), ", so n x ", x.ndim, " expected");
    kcheck::contiguous(op, "output", out);
    long long n = x.count, count = 0, size = out.shape[0];
    Layout xl = layout_of(x);
    Selection sel;
    if (n > 0 && size > 0 && x.ndim > 0) {
      sel = select_flags(op, n, [&](int* flags) {
        unsigned grid = grid_for(n);
        switch (x.dtype_id) {
          case MF_FLOAT32:
            flags_kernel<float><<<grid, kThreads, 0, stream()>>>(flags, static_cast<const float*>(x.ptr), xl, n);
            break;
          case MF_FLOAT64:
            flags_kernel<double><<<grid, kThreads, 0, stream()>>>(flags, static_cast<const double*>(x.ptr), xl, n);
            break;
          case MF_INT32:
            flags_kernel<int32_t><<<grid, kThreads, 0, stream()>>>(flags, static_cast<const int32_t*>(x.ptr), xl, n);
            break;
          case MF_INT64:
            flags_kernel<int64_t><<<grid, kThreads, 0, stream()>>>(flags, static_cast<const int64_t*>(x.ptr), xl, n);
            break;
          case MF_UINT8:
            flags_kernel<uint8_t><<<grid, kThreads, 0, stream()>>>(flags, static_cast<const uint8_t*>(x.ptr), xl, n);
            break;
          default: fail(op, ": x has an unknown dtype");
        }
      });
      count = sel.count;
    }
    long long* o = static_cast<long long*>(out.ptr);
    if (count > 0)
      coords_kernel<<<grid_for(n), kThreads, 0, stream()>>>(o, size, xl, sel.flags->as<int>(), sel.pos->as<long long>(),
                                                            n);
    pad<long long>(o, (count < size ? count : size) * x.ndim, size * x.ndim, static_cast<long long>(fill));
    check_launch(op);
  });
}

}  // namespace cuda
}  // namespace mf
