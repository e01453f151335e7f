// -- gather / scatter / index_add / masked_select / nonzero --------------------------------------
// Element-wise indexing by 1-based int64 indices (PyTorch's semantics, Torch7's 1-based numbers).
// A bad index is an error naming it, never a read or write out of bounds: routines that write x
// itself (the in-place forms) check all of their indices before any write; gather and the scatters
// into a fresh output check each run of the index just before using it (one pass over the index,
// while its run is in L1, instead of a separate pass over all of it first), so an error may leave
// that output partly written, which the caller then discards. The loops run in the row-major order
// of the index (of src for index_add), split across threads only where no two threads share a
// destination (rows_parallel): repeated destinations are written in that order, whatever the thread
// count, so scatter's last write wins and accumulation is reproducible.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "../../core/error.h"
#include "../../core/threads.h"
#include "../../core/writes.h"
#include "checks.h"
#include "copy.h"
#include "kernels.h"

namespace mf {

namespace {

// Row-major walk over a shape, keeping the coordinates (an odometer; cheap next()).
struct Walk {
  int ndim;
  int64_t shape[kMaxDims], at[kMaxDims] = {};
  explicit Walk(const mf_tensor& t) : ndim(t.ndim) {
    for (int d = 0; d < ndim; ++d) shape[d] = t.shape[d];
  }
  explicit Walk(const Shape& s) : ndim(int(s.size())) {
    for (int d = 0; d < ndim; ++d) shape[d] = s[size_t(d)];
  }
  void next() {
    for (int d = ndim - 1; d >= 0; --d) {
      if (++at[d] < shape[d]) return;
      at[d] = 0;
    }
  }
  // element offset of the current position in a tensor of these strides
  int64_t offset(const int64_t* strides) const {
    int64_t o = 0;
    for (int d = 0; d < ndim; ++d) o += at[d] * strides[d];
    return o;
  }
  // from a row's start (at[ndim-1] == 0) to the next row's; returns false after the last row
  bool next_row() {
    for (int d = ndim - 2; d >= 0; --d) {
      if (++at[d] < shape[d]) return true;
      at[d] = 0;
    }
    return false;
  }
  std::string where() const {  // "[2,1]", 1-based
    std::string s = "[";
    for (int d = 0; d < ndim; ++d) s += (d ? "," : "") + std::to_string(at[d] + 1);
    return s + "]";
  }
};

int64_t index_at(const mf_tensor& idx, const Walk& w) { return ((const int64_t*)idx.ptr)[w.offset(idx.strides)]; }

// The walk over shape's rows, at the start of row r (row-major number).
Walk at_row(const Walk& shape, int64_t r) {
  Walk w = shape;
  for (int d = w.ndim - 2; d >= 0; --d) {
    w.at[d] = r % w.shape[d];
    r /= w.shape[d];
  }
  return w;
}

using One = std::integral_constant<int64_t, 1>;  // a unit stride known when the loop compiles

// Whether the len indices at row (stride s) all lie in 1..n: v - 1 as unsigned is >= n for v < 1
// too, so the run's largest such value tells (a max reduction vectorizes, a chain of compares did
// not). 32 running maxima (4 vectors) side by side, not one chain of dependent maxima.
template <typename S>
bool run_in_range(const int64_t* row, int64_t len, S s, uint64_t n) {
  constexpr int W = 32;
  uint64_t m[W] = {};
  int64_t j = 0;
  for (; j + W <= len; j += W)
    for (int k = 0; k < W; ++k) m[k] = std::max(m[k], uint64_t(row[(j + k) * s] - 1));
  uint64_t r = 0;
  for (; j < len; ++j) r = std::max(r, uint64_t(row[j * s] - 1));
  for (int k = 0; k < W; ++k) r = std::max(r, m[k]);
  return r < n;
}
bool run_in_range(const int64_t* row, int64_t len, int64_t s, uint64_t n) {
  return s == 1 ? run_in_range(row, len, One{}, n) : run_in_range<int64_t>(row, len, s, n);
}

// The index elements checked at a time before their rows are used (rows_parallel): 16 KB of int64,
// still in L1 when the rows read them again.
constexpr int64_t kCheckBlock = 2048;

// Fetches the bytes [p, p + n) into L1 ahead of a loop that addresses them out of order (gather's x
// row, scatter's destination row) or slowly in order (a row of src, read one element per scatter),
// which the hardware prefetchers left to be fetched a line at a time as the loop reached it (read
// prefetches: prefetchw gained nothing on the destination rows). Rows over kRowFetchMax bytes are
// left alone (they would not stay in L1). 2048 x 2048 float32 along dim 2, 1 thread, CPU time,
// interleaved: K.gather 3120 -> 2360 us, in-place scatter_ 3540 -> 2910, scatter_add_ 4340 -> 3060
// (destination rows), the fused scatter below 4530 -> 3910 (src rows). Always inlined: GCC 12's
// mod-ref analysis takes a call to a function of nothing but prefetches for one without effect and
// deletes the call (-O2 and up; -fno-ipa-modref keeps it), which left none of these in the code.
// Tensors under kLargeBytes (one core's L2) stay in the caches between calls, where neither fetch_row
// nor the fused copy in scatter_cpu gains (128 x 128 float32, 1 thread, interleaved: K.scatter 6.2 ->
// 6.9 us, in-place scatter_ 5.8 -> 6.2 with them): both are for larger ones.
constexpr int64_t kRowFetchMax = 16384, kLargeBytes = int64_t(1) << 20;
__attribute__((always_inline)) inline void fetch_row(const void* p, int64_t n) {
  if (n > kRowFetchMax) return;
  for (int64_t k = 0; k < n; k += 64) __builtin_prefetch((const char*)p + k, 0, 3);
}

// Copies n bytes between disjoint buffers 256 bytes a turn, loaded whole before they are stored (a
// dst a little above src modulo 4 KiB costs one aliased load a block, as copy_run's blocks): the
// fused scatter's row copy. 8 KB rows of a 16 MB x into a fresh output, 1 thread, CPU time,
// interleaved: eager scatter 3934 -> 3621 us, scatter_add 4219 -> 3943 against memcpy (copy_run).
// Not copy_run's own loop: copy_run with this loop for runs of 256 B to 64 KiB made its other users
// slower (eager, 2 threads, interleaved with copy_run as it is: copy 64 KB 0.57 -> 0.75 us, concat,
// stack, repeat 64 KB 1.3-1.45x, index_select 16 MB 1.12x; 2026-11-27), where memcpy wins.
// The whole 256-byte blocks by copy.h's copy_vec (where it is a vector loop), the tail by memcpy.
inline void copy_row(void* dst, const void* src, int64_t n) {
  const int64_t body = kHaveCopyVec ? n / 256 * 256 : 0;
  copy_vec(dst, src, size_t(body));
  std::memcpy((char*)dst + body, (const char*)src + body, size_t(n - body));
}

// Rows rb..re (w at rb's start) of idx, columns [jb, je): all in 1..n? Adjacent whole rows of a
// contiguous index are one run.
bool rows_in_range(const mf_tensor& idx, Walk w, int64_t rb, int64_t re, int64_t jb, int64_t je, uint64_t n) {
  const int L = idx.ndim - 1;
  const int64_t* ip = (const int64_t*)idx.ptr;
  const int64_t len = idx.shape[L], is = idx.strides[L];
  if (jb == 0 && je == len && is_contiguous(idx)) return run_in_range(ip + w.offset(idx.strides), (re - rb) * len, One{}, n);
  for (int64_t r = rb; r < re; ++r, w.next_row())
    if (!run_in_range(ip + w.offset(idx.strides) + jb * is, je - jb, is, n)) return false;
  return true;
}

// Calls f(w, r, jb, je) for every row r of w's shape (w at its start) over the columns [jb, je) of
// the last dim, split across threads so that no two threads ever write one destination, and each
// thread keeps the row-major order: gather, scatter and index_add write only destinations that
// share every coordinate but `dim` with the element read. So rows are split when dim is the last
// dim (rows then differ off dim), and otherwise the last dim's columns (which then differ off dim):
// the results are those of the serial loop, whatever the thread count.
// With idx (the index, of shape's shape), each block of rows (their columns [jb, je)) is checked to
// lie in 1..n just before f runs on it; a block that does not is skipped, and the call returns false
// (the caller then names the first bad index). Without idx (checked before), it returns true.
template <typename F>
bool rows_parallel(const Walk& shape, int dim, F&& f, const mf_tensor* idx = nullptr, int64_t n = 0) {
  const int L = shape.ndim - 1;
  int64_t len = shape.shape[L], rows = 1;
  for (int d = 0; d < L; ++d) rows *= shape.shape[d];
  if (len == 0 || rows == 0) return true;
  std::atomic<int> bad{0};
  if (dim == L) {
    parallel_for(rows, len, [&](int64_t rb, int64_t re) {
      Walk w = at_row(shape, rb);
      const int64_t B = std::max<int64_t>(1, kCheckBlock / len);
      for (int64_t b = rb; b < re; b += B) {
        const int64_t be = std::min(re, b + B);
        if (idx && !rows_in_range(*idx, w, b, be, 0, len, uint64_t(n))) {
          bad.store(1, std::memory_order_relaxed);
          return;
        }
        for (int64_t r = b; r < be; ++r, w.next_row()) f(w, r, int64_t(0), len);
      }
    });
  } else {
    parallel_for(len, rows, [&](int64_t jb, int64_t je) {
      Walk w = shape;
      const int64_t B = std::max<int64_t>(1, kCheckBlock / (je - jb));
      for (int64_t b = 0; b < rows; b += B) {
        const int64_t be = std::min(rows, b + B);
        if (idx && !rows_in_range(*idx, w, b, be, jb, je, uint64_t(n))) {
          bad.store(1, std::memory_order_relaxed);
          return;
        }
        for (int64_t r = b; r < be; ++r, w.next_row()) f(w, r, jb, je);
      }
    });
  }
  return bad.load() == 0;
}

// q[j] = xb[off(j)] for j in [jb, je). For 4- and 8-byte elements, each 32 bytes of them are loaded
// into a local group and stored by one memcpy, which GCC compiles to lane inserts and one 32-byte
// vector store: one scalar store per element was gather's bottleneck, the more so into a fresh, cold
// output, where each line took 8 or 16 of them while its read for ownership was pending. The loads
// go through float / double (bit copies: memcpy, no arithmetic), whose lane inserts GCC emits
// tighter than int64's (int64 gained nothing, uint8 lost: it keeps the plain loop). K.gather 128x128
// float32 along dim 2, 1 thread, load 1.2-1.7, interleaved: 5.68 -> 4.93 us, eager 8.3 -> 7.5 us.
// The same values in the same places: a gather's output never overlaps what it reads.
template <typename T, typename Off>
inline void gather_run(T* q, const T* xb, int64_t jb, int64_t je, Off&& off) {
  using C = std::conditional_t<sizeof(T) == 4, float, std::conditional_t<sizeof(T) == 8, double, T>>;
  constexpr int G = sizeof(T) == 4 || sizeof(T) == 8 ? int(32 / sizeof(T)) : 1;
  int64_t j = jb;
  if constexpr (G > 1) {
    for (; j + G <= je; j += G) {
      C g[G];
      for (int k = 0; k < G; ++k) std::memcpy(&g[k], xb + off(j + k), sizeof(C));
      std::memcpy(q + j, g, sizeof g);
    }
  }
  for (; j < je; ++j) q[j] = xb[off(j)];
}

// gather_run on a row with unit strides along dim (the common layout), as a function of its own: inlined
// into rows_parallel's loop it kept one offset on the stack, a store and a load per group (K.gather
// 128x128 float32 along dim 2, warm, 1 thread: 4.93 -> 4.77 us)
template <typename T>
__attribute__((noinline)) void gather_unit_row(T* q, const T* xb, const int64_t* ir, int64_t jb, int64_t je) {
  gather_run(q, xb, jb, je, [&](int64_t j) { return ir[j] - 1; });
}

// ob[off(j)] += val(j) for j in [jb, je), in order. For 4- and 8-byte elements, 8 offsets and values
// are read ahead into locals, then the 8 adds run in order (a repeated destination still sums in the
// index's order: the same result): the reads no longer wait behind the previous element's read-add-
// write of the output. With add_unit_row below, K.scatter 128x128 float32 along dim 2 with add, warm,
// 1 thread, interleaved: 10.1 -> 8.2 us, eager scatter_add 12.4 -> 10.3. uint8 lost by it and keeps
// the plain loop.
template <typename T, typename Off, typename Val>
inline void add_run(T* ob, int64_t jb, int64_t je, Off&& off, Val&& val) {
  constexpr int G = sizeof(T) == 4 || sizeof(T) == 8 ? 8 : 1;
  int64_t j = jb;
  if constexpr (G > 1) {
    for (; j + G <= je; j += G) {
      int64_t i[G];
      T v[G];
      for (int k = 0; k < G; ++k) {
        i[k] = off(j + k);
        v[k] = val(j + k);
      }
      for (int k = 0; k < G; ++k) {
        T& d = ob[i[k]];
        d = T(d + v[k]);
      }
    }
  }
  for (; j < je; ++j) {
    T& d = ob[off(j)];
    d = T(d + val(j));
  }
}

// scatter_add's rows with unit strides along the last dim (the common layout) as a function of its
// own, as gather_unit_row: ob[ir[j] - 1] += sr[j] for j in [jb, je), in order; a number src (scalar)
// is sr[0] throughout
template <typename T>
__attribute__((noinline)) void add_unit_row(T* ob, const int64_t* ir, const T* sr, bool scalar, int64_t jb,
                                            int64_t je) {
  if (scalar) {
    const T v = sr[0];
    add_run(ob, jb, je, [&](int64_t j) { return ir[j] - 1; }, [&](int64_t) { return v; });
  } else {
    add_run(ob, jb, je, [&](int64_t j) { return ir[j] - 1; }, [&](int64_t j) { return sr[j]; });
  }
}

// The fused scatter's rows (a fresh output along the last dim, unit strides) with the index checked
// as it is used instead of in a pass of its own over each block (rows_in_range): false, at the
// first index outside 1..n, before that element is written (the caller then names the first bad
// index; the output's other writes are those of an error). The separate pass read each 16 KB of the
// index from memory with nothing else to overlap it, then the row from L1; one pass, with a compare
// and a branch that is never taken, does the same checks while the row's stores go on. 2048 x 2048
// float32 into a warm out=, 1 thread, CPU time, interleaved: scatter 3600-4020 -> 3110-3290 us.
template <typename T>
__attribute__((noinline)) bool set_unit_row_checked(T* ob, const int64_t* ir, const T* sr, bool scalar,
                                                    int64_t jb, int64_t je, uint64_t n) {
  const int64_t s = scalar ? 0 : 1;
  for (int64_t j = jb; j < je; ++j) {
    const uint64_t k = uint64_t(ir[j] - 1);
    if (__builtin_expect(k >= n, 0)) return false;
    ob[k] = sr[j * s];
  }
  return true;
}
// scatter_add's: add_run's groups of 8, each group's offsets checked before its adds
template <typename T>
__attribute__((noinline)) bool add_unit_row_checked(T* ob, const int64_t* ir, const T* sr, bool scalar,
                                                    int64_t jb, int64_t je, uint64_t n) {
  constexpr int G = 8;
  const int64_t s = scalar ? 0 : 1;
  int64_t j = jb;
  for (; j + G <= je; j += G) {
    uint64_t i[G];
    T v[G];
    bool bad = false;
    for (int k = 0; k < G; ++k) {
      i[k] = uint64_t(ir[j + k] - 1);
      v[k] = sr[(j + k) * s];
      bad |= i[k] >= n;
    }
    if (__builtin_expect(bad, 0)) return false;
    for (int k = 0; k < G; ++k) {
      T& d = ob[i[k]];
      d = T(d + v[k]);
    }
  }
  for (; j < je; ++j) {
    const uint64_t k = uint64_t(ir[j] - 1);
    if (k >= n) return false;
    ob[k] = T(ob[k] + sr[j * s]);
  }
  return true;
}

// gather's source and scatter's destination: the element offset, in a tensor of these strides and
// ndim dims, of the index walk's position with its coordinate along dim replaced by the index there
// (a 0-dim tensor has its one element).
int64_t indexed_offset(const Walk& w, const mf_tensor& idx, const int64_t* strides, int ndim, int dim) {
  int64_t off = w.offset(strides);
  if (ndim) off += (index_at(idx, w) - 1 - w.at[dim]) * strides[dim];
  return off;
}

void index_dtype(const char* op, const mf_tensor& idx) {
  if (idx.dtype_id != MF_INT64) fail(op, ": index is ", dtype_name(idx.dtype_id), "; expected int64 (1-based)");
}

// Raises the error of the first index of idx (row-major) outside 1..n, if there is one.
void raise_first_bad(const char* op, const mf_tensor& idx, int dim, int64_t n, const mf_tensor& x);

// Every index of idx lies in 1..n (n = x's size along dim), checked before any write: a pass by rows,
// split across threads, then the walk that names the first bad index when there is one.
void check_range(const char* op, const mf_tensor& idx, int dim, int64_t n, const mf_tensor& x) {
  if (idx.ndim > 0) {
    Walk shape(idx);
    const int L = idx.ndim - 1;
    int64_t rows = 1;
    for (int d = 0; d < L; ++d) rows *= idx.shape[d];
    if (idx.shape[L] == 0 || rows == 0) return;
    std::atomic<int> bad{0};
    parallel_for(rows, idx.shape[L], [&](int64_t rb, int64_t re) {
      if (!rows_in_range(idx, at_row(shape, rb), rb, re, 0, idx.shape[L], uint64_t(n)))
        bad.store(1, std::memory_order_relaxed);
    });
    if (!bad.load()) return;
  }
  raise_first_bad(op, idx, dim, n, x);
}

void raise_first_bad(const char* op, const mf_tensor& idx, int dim, int64_t n, const mf_tensor& x) {
  Walk w(idx);
  for (int64_t i = 0; i < idx.count; ++i, w.next()) {
    int64_t v = index_at(idx, w);
    if (v < 1 || v > n)
      fail(op, ": index ", v, " at position ", w.where(), " of the index is out of range 1..", n, " along dim ",
           dim + 1, " of x (", shape_str(x), ")");
  }
}

// The index of gather and scatter: x's rank, no larger than x off dim nor than other (out, src).
void check_index_shape(const char* op, const mf_tensor& x, const mf_tensor& idx, int dim, const mf_tensor* other,
                       const char* oname) {
  bool ok = idx.ndim == x.ndim && dim >= 0 && dim < (x.ndim ? x.ndim : 1);
  for (int d = 0; ok && d < x.ndim; ++d) {
    if (d != dim && idx.shape[d] > x.shape[d]) ok = false;
    if (other && other->ndim && idx.shape[d] > other->shape[d]) ok = false;
  }
  if (other && other->ndim && other->ndim != idx.ndim) ok = false;
  if (!ok) {
    std::string o = other ? std::string(", ") + oname + " " + shape_str(*other) : "";
    fail(op, ": x is ", shape_str(x), ", index ", shape_str(idx), o, " along dim ", dim + 1,
         "; expected index of x's rank, no larger than x off dim", other ? std::string(" nor than ") + oname : "");
  }
}

// The in-place forms write x itself (out is x): an index or src sharing x's memory is read from a
// contiguous copy taken before any write, so the checked indices are the ones used.
mf_tensor detached(const mf_tensor& t, const mf_tensor& out, std::vector<char>& buf) {
  if (t.count == 0 || !memory_overlaps(t, out)) return t;
  mf_tensor c = t;
  set_meta(c, shape_of(t), t.dtype_id, t.device_id);
  buf.resize(size_t(t.count) * dtype_size(t.dtype_id));
  c.ptr = buf.data();
  c.store = nullptr;
  c.owns = 0;
  c.offset = 0;
  copy_cpu(c, t);
  return c;
}

bool same_view(const mf_tensor& a, const mf_tensor& b) {
  if (a.ptr != b.ptr || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d] || a.strides[d] != b.strides[d]) return false;
  return true;
}

}  // namespace

void gather_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, int dim) {
  kcheck::meta("gather", "x", x);
  kcheck::meta("gather", "index", idx);
  kcheck::meta("gather", "output", out);
  index_dtype("gather", idx);
  check_index_shape("gather", x, idx, dim, nullptr, "");
  kcheck::same_shape("gather", "output", out, "index", idx);
  kcheck::contiguous("gather", "output", out);
  kcheck::dtype("gather", "output", out, x.dtype_id, " (x's dtype)");
  int64_t n = x.ndim ? x.shape[dim] : 1;
  MF_DISPATCH(x.dtype_id, T, {
    const T* xp = (const T*)x.ptr;
    T* o = (T*)out.ptr;
    Walk w(idx);
    if (idx.ndim == 0) {
      check_range("gather", idx, dim, n, x);
      if (idx.count) o[0] = xp[indexed_offset(w, idx, x.strides, x.ndim, dim)];
    } else {  // row by row of the index: out's rows are contiguous
      const int L = idx.ndim - 1;
      const int64_t* ip = (const int64_t*)idx.ptr;
      const int64_t len = idx.shape[L], is = idx.strides[L], xl = x.strides[L], xd = x.strides[dim];
      // whole short rows (dim the last): their lines fetched ahead for writing (copy.h; eager gather
      // 128x128 float32 along dim 2, 1 thread, interleaved: 6.6 -> 6.05 us; 4.65 -> 4.8 us warm)
      const bool ahead = dim == L && len * int64_t(sizeof(T)) < kPrefetchRowMax;
      const bool large = x.count * int64_t(sizeof(T)) >= kLargeBytes;
      // each block of the index checked as it is used; a bad block is skipped, then named below
      bool ok = rows_parallel(w, dim, [&](const Walk& v, int64_t r, int64_t jb, int64_t je) {
        const int64_t* ir = ip + v.offset(idx.strides);
        const T* xb = xp + v.offset(x.strides) - v.at[dim] * xd;  // x's row with dim's coordinate at 0
        T* q = o + r * len;
        if (ahead) {
          uintptr_t next = 0;
          prefetch_ahead(q, q + len, o + out.count, next);
        }
        if (large && dim == L && xd == 1) fetch_row(xb, x.shape[L] * int64_t(sizeof(T)));  // read at random
        // the loops again with unit strides as constants, the common layouts, so they compile tight
        // (no multiply per element for a unit stride along dim)
        auto run = [&](auto s_i, auto s_x, auto s_d) {
          if (dim == L) {
            gather_run(q, xb, jb, je, [&](int64_t j) { return (ir[j * s_i] - 1) * s_d; });
          } else {
            gather_run(q, xb, jb, je, [&](int64_t j) { return j * s_x + (ir[j * s_i] - 1) * s_d; });
          }
        };
        if (is == 1 && dim == L && xd == 1) gather_unit_row(q, xb, ir, jb, je);
        else if (is == 1 && xl == 1) run(One{}, One{}, xd);
        else run(is, xl, xd);
      }, &idx, n);
      if (!ok) raise_first_bad("gather", idx, dim, n, x);
    }
  });
}

void scatter_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& index, const mf_tensor& source, int dim,
                 bool add) {
  const char* op = add ? "scatter_add" : "scatter";
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "index", index);
  kcheck::meta(op, "src", source);
  kcheck::meta(op, "output", out);
  index_dtype(op, index);
  check_index_shape(op, x, index, dim, &source, "src");
  kcheck::same_shape(op, "output", out, "x", x);
  kcheck::writable(op, "output", out);
  if (source.dtype_id != x.dtype_id || out.dtype_id != x.dtype_id)
    fail(op, ": x is ", dtype_name(x.dtype_id), ", src ", dtype_name(source.dtype_id), ", output ",
         dtype_name(out.dtype_id), "; expected one dtype");
  std::vector<char> ibuf, sbuf;
  mf_tensor idx = detached(index, out, ibuf), src = detached(source, out, sbuf);
  int64_t n = x.ndim ? x.shape[dim] : 1;
  // into x itself (the in-place forms): every index checked before any write; into a fresh output,
  // each run of the index as it is used (the output is x's copy first)
  const bool in_place = same_view(out, x) || memory_overlaps(out, x);
  if (in_place || idx.ndim == 0) check_range(op, idx, dim, n, x);
  // Into a fresh output along the last dim, with an index row for each of x's rows and unit strides
  // along it in x and the output, each output row is x's row copied just before its scatter (fused
  // below: the row stays in L1 between the two) instead of a copy of all of x first and a second
  // pass over the output (2048 x 2048 float32, 1 thread, CPU time, with fetch_row, interleaved:
  // K.scatter 4530 -> 3910 us, with add 5760 -> 4100); otherwise the copy first.
  const int Lx = x.ndim - 1;
  const bool large = x.count * int64_t(dtype_size(x.dtype_id)) >= kLargeBytes;
  bool fuse = large && !in_place && idx.ndim > 0 && dim == Lx && x.strides[Lx] == 1 && out.strides[Lx] == 1;
  for (int d = 0; fuse && d < Lx; ++d) fuse = idx.shape[d] == x.shape[d];
  if (!same_view(out, x) && !fuse) copy_cpu(out, x);
  bool scalar = src.ndim == 0;
  MF_DISPATCH(x.dtype_id, T, {
    const T* sp = (const T*)src.ptr;
    const T* xp = (const T*)x.ptr;
    T* o = (T*)out.ptr;
    Walk w(idx);
    if (idx.ndim == 0) {
      if (idx.count) {
        int64_t off = indexed_offset(w, idx, out.strides, x.ndim, dim);
        o[off] = add ? T(o[off] + sp[0]) : sp[0];
      }
    } else {  // row by row of the index, each row in order: the same row-major sequence of writes
      const int L = idx.ndim - 1;
      const int64_t* ip = (const int64_t*)idx.ptr;
      const int64_t is = idx.strides[L], ol = out.strides[L], od = out.strides[dim];
      const int64_t sl = scalar ? 0 : src.strides[L];
      const int64_t row_bytes = x.shape[L] * int64_t(sizeof(T));  // x's and the output's rows
      const bool ahead = fuse && row_bytes < kPrefetchRowMax && is_contiguous(out);
      // into a fresh output each block of the index is checked as it is used (rows_parallel); a bad
      // block is skipped, then named below. One instantiation per form (add a constant): with both
      // forms' loops in one body GCC ran short of registers and moved the index pointer between a
      // vector register and a general one on every element of scatter's plain loop. The fused copy
      // is a constant too (fuse_c): tested per row, it cost 128 x 128 float32 K.scatter 6.1 -> 6.3 us
      // the fused rows in the common layout check their index as they go (set/add_unit_row_checked)
      const bool check_inline = fuse && is == 1 && (sl == 1 || scalar) && od == 1 && sizeof(T) > 1;
      std::atomic<int> bad_inline{0};
      auto rows = [&](auto add_c, auto fuse_c) {
        constexpr bool kAdd = decltype(add_c)::value;
        constexpr bool kFuse = decltype(fuse_c)::value;
        // the row lambda always inlined into rows_parallel: called per row, it cost 128 x 128 float32
        // K.scatter 6.2 -> 6.7 us (a large frame set up each row) once the fused copy was in it
        auto row = [&](const Walk& v, int64_t, int64_t jb, int64_t je) __attribute__((always_inline)) {
          const int64_t* ir = ip + v.offset(idx.strides);
          const T* sr = scalar ? sp : sp + v.offset(src.strides);
          T* ob = o + v.offset(out.strides) - v.at[dim] * od;  // out's row with dim's coordinate at 0
          if constexpr (kFuse) {
            if (ahead) {  // short rows of a fresh output: lines 8 KB ahead fetched (copy.h), as gather
              uintptr_t next = 0;
              prefetch_ahead(ob, ob + x.shape[L], o + out.count, next);
            }
            if (!scalar && sl == 1) fetch_row(sr, (je - jb) * int64_t(sizeof(T)));
            copy_row(ob, xp + v.offset(x.strides), row_bytes);
          } else if (large && dim == L && od == 1) {
            fetch_row(ob, row_bytes);  // written at random
          }
          // unit strides as constants below (no multiply per element for a unit stride along dim)
          auto run = [&](auto s_i, auto s_s, auto s_l, auto s_d) {
            auto val = [&](int64_t j) { return sr[j * s_s]; };
            if (dim == L) {
              auto off = [&](int64_t j) { return (ir[j * s_i] - 1) * s_d; };
              if constexpr (kAdd) {
                add_run(ob, jb, je, off, val);
              } else {
                for (int64_t j = jb; j < je; ++j) ob[off(j)] = val(j);
              }
            } else {
              auto off = [&](int64_t j) { return j * s_l + (ir[j * s_i] - 1) * s_d; };
              if constexpr (kAdd) {
                add_run(ob, jb, je, off, val);
              } else {
                for (int64_t j = jb; j < je; ++j) ob[off(j)] = val(j);
              }
            }
          };
          if constexpr (kFuse) {
            if (check_inline) {
              const bool ok = kAdd ? add_unit_row_checked(ob, ir, sr, scalar, jb, je, uint64_t(n))
                                   : set_unit_row_checked(ob, ir, sr, scalar, jb, je, uint64_t(n));
              if (!ok) bad_inline.store(1, std::memory_order_relaxed);
              return;
            }
          }
          if (kAdd && is == 1 && (sl == 1 || scalar) && dim == L && od == 1) add_unit_row(ob, ir, sr, scalar, jb, je);
          else if (is == 1 && sl == 1 && dim == L && od == 1) run(One{}, One{}, One{}, One{});
          else if (is == 1 && sl == 1 && ol == 1) run(One{}, One{}, One{}, od);
          else run(is, sl, ol, od);
        };
        const bool ok = rows_parallel(w, dim, row, in_place || check_inline ? nullptr : &idx, n);
        return ok && bad_inline.load() == 0;
      };
      using Y = std::true_type;
      using N = std::false_type;
      bool ok = add ? (fuse ? rows(Y{}, Y{}) : rows(Y{}, N{})) : (fuse ? rows(N{}, Y{}) : rows(N{}, N{}));
      if (!ok) raise_first_bad(op, idx, dim, n, x);
    }
  });
}

namespace {

// index_add into a fresh contiguous output along a dim before the last, x and src contiguous (idx
// checked): each slice of the output (a run of `inner` elements: one outer position, one position k
// along dim) is written once, as x's slice plus src's slices whose index is k in increasing index
// position (found by a counting sort of the index), instead of a copy of all of x and then a pass
// that adds src's slices into the output in index order. Each destination sums the same terms in the
// same order as that pass (x's value first, then src's by index position), so the bits are the
// same; the slices are split across threads (no two share a destination). False, with nothing
// written, for any other case.
bool index_add_by_destination(mf_tensor& out, const mf_tensor& x, const mf_tensor& idx, const mf_tensor& src, int dim) {
  const int L = x.ndim - 1;
  if (dim >= L || same_view(out, x) || memory_overlaps(out, x) || !is_contiguous(out) || !is_contiguous(x) ||
      !is_contiguous(src))
    return false;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int d = dim + 1; d <= L; ++d) inner *= x.shape[d];
  const int64_t n = x.shape[dim], m = idx.shape[0], is = idx.strides[0];
  if (outer * n < 16 || inner < 16) return false;  // too few slices to split, or slices too short
  const int64_t* ip = (const int64_t*)idx.ptr;
  // start[k]..start[k+1]: the positions of order holding the index positions r with index k + 1
  std::vector<int64_t> start(size_t(n) + 1, 0), order(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) ++start[size_t(ip[r * is])];
  for (int64_t k = 0; k < n; ++k) start[size_t(k) + 1] += start[size_t(k)];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t r = 0; r < m; ++r) order[size_t(fill[size_t(ip[r * is] - 1)]++)] = r;
  }
  MF_DISPATCH(x.dtype_id, T, {
    const T* xp = (const T*)x.ptr;
    const T* sp = (const T*)src.ptr;
    T* o = (T*)out.ptr;
    const int64_t* st = start.data();
    const int64_t* ord = order.data();
    // short slices of a fresh output: lines 8 KB ahead fetched for writing (copy.h), as gather
    const bool ahead = inner * int64_t(sizeof(T)) < kPrefetchRowMax;
    // cost per slice: its copy plus its share of src's slices
    parallel_for(outer * n, inner + (m * inner) / std::max<int64_t>(1, n), [&](int64_t b, int64_t e) {
      uintptr_t next = 0;
      for (int64_t t = b; t < e; ++t) {
        const int64_t ou = t / n, k = t % n;
        T* q = o + t * inner;
        if (ahead) prefetch_ahead(q, q + inner, o + e * inner, next);
        const T* xr = xp + t * inner;
        const T* sb = sp + ou * m * inner;  // src's slices at this outer position
        int64_t a = st[k];
        const int64_t z = st[k + 1];
        if (a == z) {
          copy_run(q, xr, size_t(inner) * sizeof(T));
          continue;
        }
        const T* s0 = sb + ord[a++] * inner;
        for (int64_t j = 0; j < inner; ++j) q[j] = T(xr[j] + s0[j]);
        for (; a < z; ++a) {
          const T* s1 = sb + ord[a] * inner;
          for (int64_t j = 0; j < inner; ++j) q[j] = T(q[j] + s1[j]);
        }
      }
    });
  });
  return true;
}

}  // namespace

void index_add_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& index, const mf_tensor& source, int dim) {
  kcheck::meta("index_add", "x", x);
  kcheck::meta("index_add", "index", index);
  kcheck::meta("index_add", "src", source);
  kcheck::meta("index_add", "output", out);
  index_dtype("index_add", index);
  std::vector<char> ibuf, sbuf;
  mf_tensor idx = detached(index, out, ibuf), src = detached(source, out, sbuf);
  bool ok = idx.ndim == 1 && src.ndim == x.ndim && dim >= 0 && dim < x.ndim && src.shape[dim] == idx.shape[0];
  for (int d = 0; ok && d < x.ndim; ++d) ok = d == dim || src.shape[d] == x.shape[d];
  if (!ok)
    fail("index_add: x is ", shape_str(x), ", index ", shape_str(idx), ", src ", shape_str(src), " along dim ", dim + 1,
         "; expected a 1-D index and src of x's shape but for dim ", dim + 1, ", sized by the index");
  kcheck::same_shape("index_add", "output", out, "x", x);
  kcheck::writable("index_add", "output", out);
  if (src.dtype_id != x.dtype_id || out.dtype_id != x.dtype_id)
    fail("index_add: x is ", dtype_name(x.dtype_id), ", src ", dtype_name(src.dtype_id), ", output ",
         dtype_name(out.dtype_id), "; expected one dtype");
  check_range("index_add", idx, dim, x.shape[dim], x);
  if (index_add_by_destination(out, x, idx, src, dim)) return;
  if (!same_view(out, x)) copy_cpu(out, x);
  const int64_t* ip = (const int64_t*)idx.ptr;
  MF_DISPATCH(x.dtype_id, T, {
    const T* sp = (const T*)src.ptr;
    T* o = (T*)out.ptr;
    Walk w(src);  // row-major over src: for one destination, index positions add in increasing order
    const int L = src.ndim - 1;
    const int64_t sl = src.strides[L], ol = out.strides[L], od = out.strides[dim];
    const int64_t is = idx.strides[0];
    // one row of src at a time, in order (src has x's rank, at least 1)
    rows_parallel(w, dim, [&](const Walk& v, int64_t, int64_t jb, int64_t je) {
      const T* sr = sp + v.offset(src.strides);
      T* ob = o + v.offset(out.strides) - v.at[dim] * od;  // out's row with dim's coordinate at 0
      if (dim == L) {
        for (int64_t j = jb; j < je; ++j) {
          T& d = ob[(ip[j * is] - 1) * od];
          d = T(d + sr[j * sl]);
        }
      } else {
        T* orow = ob + (ip[v.at[dim] * is] - 1) * od;
        if (ol == 1 && sl == 1) {  // contiguous rows: a loop that vectorizes
          for (int64_t j = jb; j < je; ++j) orow[j] = T(orow[j] + sr[j]);
        } else {
          for (int64_t j = jb; j < je; ++j) orow[j * ol] = T(orow[j * ol] + sr[j * sl]);
        }
      }
    });
  });
}

// masked_select and nonzero take the first n selections for an output of n (elements, rows), in
// row-major order, then fill the rest: with n the count (what the call syntax passes eagerly) that
// is the whole selection; a graph passes a static n (the op's size param), as jnp.nonzero(size=).
void masked_select_cpu(mf_tensor& out, const mf_tensor& x, const mf_tensor& mask, double fill) {
  kcheck::meta("masked_select", "x", x);
  kcheck::meta("masked_select", "mask", mask);
  kcheck::meta("masked_select", "output", out);
  kcheck::dtype("masked_select", "mask", mask, MF_UINT8);
  kcheck::dtype("masked_select", "output", out, x.dtype_id, " (x's dtype)");
  Shape s = broadcast_shapes("masked_select", shape_of(x), shape_of(mask), "x", "mask");
  if (out.ndim != 1) fail("masked_select: output is ", shape_str(out), "; expected 1-D");
  kcheck::contiguous("masked_select", "output", out);
  check_value_fits(fill, x.dtype_id, "masked_select: fill_value");
  Shape xs = broadcast_strides(x, s), ms = broadcast_strides(mask, s);
  const uint8_t* mp = (const uint8_t*)mask.ptr;
  const int64_t size = out.count, n = checked_numel(s, "masked_select");
  MF_DISPATCH(x.dtype_id, T, {
    const T* xp = (const T*)x.ptr;
    T* o = (T*)out.ptr;
    int64_t k = 0;
    if (x.count == n && mask.count == n && is_contiguous(x) && is_contiguous(mask)) {  // flat
      int64_t i = 0;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
      // 16 (4-byte) or 8 (8-byte) elements a turn: the mask bytes' nonzero lanes select x's, which a
      // compress moves to the front of a vector stored whole at o + k while a whole one fits (the
      // lanes past the kept ones are written over next turn, or by the padding)
      if constexpr (sizeof(T) == 4) {
        for (; i + 16 <= n && k + 16 <= size; i += 16) {
          const __m128i mb = _mm_loadu_si128((const __m128i*)(mp + i));
          const __mmask16 m = _mm_test_epi8_mask(mb, mb);
          _mm512_storeu_si512((void*)(o + k), _mm512_maskz_compress_epi32(m, _mm512_loadu_si512((const void*)(xp + i))));
          k += __builtin_popcount(m);
        }
      } else if constexpr (sizeof(T) == 8) {
        for (; i + 8 <= n && k + 8 <= size; i += 8) {
          uint64_t bytes;
          std::memcpy(&bytes, mp + i, 8);
          const __m128i mb = _mm_cvtsi64_si128((long long)bytes);
          const __mmask8 m = __mmask8(_mm_test_epi8_mask(mb, mb));
          _mm512_storeu_si512((void*)(o + k), _mm512_maskz_compress_epi64(m, _mm512_loadu_si512((const void*)(xp + i))));
          k += __builtin_popcount(m);
        }
      }
#endif
      // branch-free: o[k] written always, kept (k advanced) only when selected; k < size throughout
      for (; i < n && k < size; ++i) {
        o[k] = xp[i];
        k += mp[i] != 0;
      }
    } else {
      Walk w(s);
      for (int64_t i = 0; i < n && k < size; ++i, w.next())
        if (mp[w.offset(ms.data())]) o[k++] = xp[w.offset(xs.data())];
    }
    for (const T f = T(fill); k < size; ++k) o[k] = f;  // padding (also over a last unkept write)
  });
}

void nonzero_cpu(mf_tensor& out, const mf_tensor& x, int64_t fill) {
  kcheck::meta("nonzero", "x", x);
  kcheck::meta("nonzero", "output", out);
  kcheck::dtype("nonzero", "output", out, MF_INT64);
  if (out.ndim != 2 || out.shape[1] != x.ndim)
    fail("nonzero: output is ", shape_str(out), "; x is ", shape_str(x), ", so n x ", x.ndim, " expected");
  kcheck::contiguous("nonzero", "output", out);
  const int64_t size = out.shape[0];
  int64_t* o = (int64_t*)out.ptr;
  int64_t k = 0;
  MF_DISPATCH(x.dtype_id, T, {
    const T* xp = (const T*)x.ptr;
    if (x.ndim == 0) {  // one element, rows of no coordinates
      if (x.count && size > 0 && xp[0] != T(0)) k = 1;
    } else if (x.count > 0) {
      // Row by row of the last dim. Branch-free: every position's coordinates are written, kept (o
      // advanced) only when nonzero (a random mask mispredicted a branch); the row's leading
      // coordinates sit in a local array (stores through o cannot change them, so they stay in
      // registers), and where the output has room for a whole row no bound is checked per element.
      const int nd = x.ndim, L = nd - 1;
      const int64_t len = x.shape[L], ls = x.strides[L];
      Walk w(x);
      do {
        const T* xr = xp + w.offset(x.strides);
        int64_t pre[kMaxDims];
        for (int d = 0; d < L; ++d) pre[d] = w.at[d] + 1;
        const bool room = size - k >= len;
        int64_t* o0 = o;
        auto run = [&](auto s, auto ndc) {  // ndc: the dim count when known at compile time, else 0
          const int n = ndc ? int(ndc) : nd;
          auto put = [&](int64_t j) {
            if (ndc == 2) {
              o[0] = pre[0];
            } else {
              for (int d = 0; d < n - 1; ++d) o[d] = pre[d];
            }
            o[n - 1] = j + 1;
            o += n * int64_t(xr[j * s] != T(0));
          };
          if (room) {
            for (int64_t j = 0; j < len; ++j) put(j);
          } else {
            for (int64_t j = 0; j < len && o < o0 + (size - k) * n; ++j) put(j);
          }
        };
        using C1 = std::integral_constant<int, 1>;
        using C2 = std::integral_constant<int, 2>;
        using C0 = std::integral_constant<int, 0>;
        if (ls == 1 && nd == 1) run(One{}, C1{});
        else if (ls == 1 && nd == 2) run(One{}, C2{});
        else if (ls == 1) run(One{}, C0{});
        else run(ls, C0{});
        k += (o - o0) / nd;
      } while (k < size && w.next_row());
    }
  });
  for (int64_t e = (size - k) * x.ndim; e > 0; --e) *o++ = fill;  // rows of padding
}

}  // namespace mf
