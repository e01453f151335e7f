// Pointwise kernels: the loops of a pointwise table entry run densely or by StridedIter; where,
// copy, fill and the generators.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "../../core/error.h"
#include "../../core/pointwise.h"
#include "../../core/writes.h"
#include "checks.h"
#include "copy.h"
#include "kernels.h"
#include "stream_out.h"
#include "strided.h"

namespace mf {

// Outputs are written through their own strides (a strided view written in place, as assign_add
// does, stays right); StridedIter merges contiguous dims, so the unit-stride loops still run.
static Shape strides_of(const mf_tensor& t) { return Shape(t.strides, t.strides + t.ndim); }

// -- unary and binary: a pointwise table entry's loops (src/core/pointwise.h) ----------------
// The strided paths live in functions of their own (noinline): a graph's small nodes take the dense
// path, and with the iterator's set-up in the same frame every call paid its prologue (six saved
// registers, a 760-byte frame). A dense run below the threading grain calls the loop directly: the
// parallel_for closure (its captures stored to the stack) cost a one-element node about a quarter
// of binary_typed's instructions (callgrind, graph exec bench).
template <typename T>
__attribute__((noinline)) static void unary_strided(UnaryLoop<T> loop, mf_tensor& y, const mf_tensor& x, double a,
                                                    double b, int cost, bool can_stream) {
  StridedIter<2> it(shape_of(y), {strides_of(y), broadcast_strides(x, shape_of(y))});
  const bool stream = can_stream && pointwise_streams(y, sizeof(T), {&x});
  it.run_rows({(char*)y.ptr, (char*)x.ptr}, {int(sizeof(T)), int(sizeof(T))}, cost,
              [&](auto p, int64_t n, auto st, int64_t rows, auto rst) {
                if (stream && st[0] == 1 && n * int64_t(sizeof(T)) >= kStreamRowMin) {  // row by row (stream_out.h)
                  for (int64_t r = 0; r < rows; ++r) {
                    const T* xr = (const T*)p[1] + r * rst[1];
                    stream_elems((char*)((T*)p[0] + r * rst[0]), int(sizeof(T)), n, [&](char* o, int64_t off, int64_t m) {
                      loop((T*)o, xr + off * st[1], PwRun{m, 1, {1, st[1], 0}, {0, 0, 0}}, a, b);
                    });
                  }
                  return stream_out_fence();
                }
                PwRun run{n, rows, {st[0], st[1], 0}, {rst[0], rst[1], 0}};
                loop((T*)p[0], (const T*)p[1], run, a, b);
              });
}

// cost: the table entry's work per element (PointwiseKernels::cost), which sets where threads start
template <typename T>
static void unary_typed(UnaryLoop<T> loop, mf_tensor& y, const mf_tensor& x, double a, double b, int cost,
                        bool can_stream) {
  if (!(x.count == y.count && y.is_contig && x.is_contig)) return unary_strided<T>(loop, y, x, a, b, cost, can_stream);
  // dense: one flat loop, no iterator set-up
  T* yp = (T*)y.ptr;
  const T* xp = (const T*)x.ptr;
  if (can_stream && pointwise_streams(y, sizeof(T), {&x})) {  // a fresh output of 16 MiB and more (stream_out.h)
    auto piece = [&](int64_t b0, int64_t e0) {
      stream_elems((char*)(yp + b0), int(sizeof(T)), e0 - b0, [&](char* o, int64_t off, int64_t m) {
        loop((T*)o, xp + b0 + off, PwRun{m, 1, {1, 1, 0}, {0, 0, 0}}, a, b);
      });
      stream_out_fence();
    };
    if (get_num_threads() == 1) piece(0, y.count);
    else parallel_for(y.count, cost, piece);
    return;
  }
  // parallel_for's serial case, without its closure (see above); one thread skips the OpenMP region
  // too (entering it cost gelu 0.35 us at 6000 and 16384 elements, which its cost now sends there)
  if (y.count * cost < kGrain || get_num_threads() == 1) {
    PwRun run{y.count, 1, {1, 1, 0}, {0, 0, 0}};
    if (y.count > 0) loop(yp, xp, run, a, b);
    return;
  }
  parallel_for(y.count, cost, [&](int64_t b0, int64_t e0) {
    PwRun run{e0 - b0, 1, {1, 1, 0}, {0, 0, 0}};
    loop(yp + b0, xp + b0, run, a, b);
  });
}

void unary_cpu(int code, mf_tensor& y, const mf_tensor& x, double a, double b) {
  const PointwiseKernels* k = pointwise_at(code);
  if (!k || k->arity != 1) fail("unary: op code ", code, " is not a unary pointwise op's (mf.kernels.U)");
  const char* op = k->name;
  if (x.dtype_id != y.dtype_id) fail(op, ": input is ", dtype_name(x.dtype_id), ", output ", dtype_name(y.dtype_id));
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "output", y);
  const mf_tensor* ins[] = {&x};
  static const char* const names[] = {"x"};
  kcheck::broadcast_out(op, "output", y, 1, ins, names);
  kcheck::writable(op, "output", y);
  if (k->nparams > 0 && !dtype_is_float(y.dtype_id) && (a != a || b != b))
    fail(op, ": a NaN parameter needs a float tensor; x is ", dtype_name(y.dtype_id));
  MF_DISPATCH(x.dtype_id, T, unary_typed<T>(std::get<UnaryLoop<T>>(k->unary), y, x, a, b, k->cost, (k->stream >> x.dtype_id) & 1));
}

// Returns whether a loop reported its fault (integer division by zero).
template <typename T>
__attribute__((noinline)) static bool binary_strided(BinaryLoop<T> loop, mf_tensor& z, const mf_tensor& x,
                                                     const mf_tensor& y, bool can_stream) {
  std::atomic<bool> bad{false};
  Shape s = shape_of(z);
  StridedIter<3> it(s, {strides_of(z), broadcast_strides(x, s), broadcast_strides(y, s)});
  const int zsize = dtype_size(z.dtype_id);
  const bool stream = can_stream && pointwise_streams(z, zsize, {&x, &y});
  it.run_rows({(char*)z.ptr, (char*)x.ptr, (char*)y.ptr}, {zsize, int(sizeof(T)), int(sizeof(T))}, 1,
              [&](auto p, int64_t n, auto st, int64_t rows, auto rst) {
                if (stream && st[0] == 1 && n * zsize >= kStreamRowMin) {  // row by row (stream_out.h)
                  bool any = false;
                  for (int64_t r = 0; r < rows; ++r) {
                    const T* xr = (const T*)p[1] + r * rst[1];
                    const T* yr = (const T*)p[2] + r * rst[2];
                    stream_elems(p[0] + r * rst[0] * zsize, zsize, n, [&](char* o, int64_t off, int64_t m) {
                      any |= loop(o, xr + off * st[1], yr + off * st[2], PwRun{m, 1, {1, st[1], st[2]}, {0, 0, 0}});
                    });
                  }
                  stream_out_fence();
                  if (any) bad.store(true, std::memory_order_relaxed);
                  return;
                }
                PwRun run{n, rows, {st[0], st[1], st[2]}, {rst[0], rst[1], rst[2]}};
                if (loop(p[0], (const T*)p[1], (const T*)p[2], run)) bad.store(true, std::memory_order_relaxed);
              });
  return bad.load();
}

template <typename T>
static void binary_typed(const PointwiseKernels& k, mf_tensor& z, const mf_tensor& x, const mf_tensor& y) {
  BinaryLoop<T> loop = std::get<BinaryLoop<T>>(k.binary);
  const bool can_stream = (k.stream >> x.dtype_id) & 1;  // PointwiseKernels::stream
  bool bad;
  // dense operands of z's size, or one of them a single element: flat loops without iterator
  // set-up (the eager a + b path, and most elementwise nodes of a graph)
  if ((x.count == z.count || x.count == 1) && (y.count == z.count || y.count == 1) && x.ndim <= z.ndim &&
      y.ndim <= z.ndim && z.is_contig && x.is_contig && y.is_contig) {
    const T* xp = (const T*)x.ptr;
    const T* yp = (const T*)y.ptr;
    int64_t xs = x.count == 1 && z.count != 1 ? 0 : 1, ys = y.count == 1 && z.count != 1 ? 0 : 1;
    const int zsize = dtype_size(z.dtype_id);
    if (can_stream && pointwise_streams(z, zsize, {&x, &y})) {  // a fresh output of 16 MiB and more (stream_out.h)
      std::atomic<bool> any{false};
      auto piece = [&](int64_t b0, int64_t e0) {
        bool f = false;
        stream_elems((char*)z.ptr + b0 * zsize, zsize, e0 - b0, [&](char* o, int64_t off, int64_t m) {
          f |= loop(o, xp + (b0 + off) * xs, yp + (b0 + off) * ys, PwRun{m, 1, {1, xs, ys}, {0, 0, 0}});
        });
        stream_out_fence();
        if (f) any.store(true, std::memory_order_relaxed);
      };
      if (get_num_threads() == 1) piece(0, z.count);
      else parallel_for(z.count, 1, piece);
      bad = any.load();
    } else if (z.count < kGrain) {  // parallel_for's serial case, without its closure (see unary_strided)
      PwRun run{z.count, 1, {1, xs, ys}, {0, 0, 0}};
      bad = z.count > 0 && loop(z.ptr, xp, yp, run);
    } else {
      std::atomic<bool> any{false};
      parallel_for(z.count, 1, [&](int64_t b0, int64_t e0) {
        PwRun run{e0 - b0, 1, {1, xs, ys}, {0, 0, 0}};
        if (loop((char*)z.ptr + b0 * zsize, xp + b0 * xs, yp + b0 * ys, run)) any.store(true, std::memory_order_relaxed);
      });
      bad = any.load();
    }
  } else {
    bad = binary_strided<T>(loop, z, x, y, can_stream);
  }
  if (bad) fail(k.name, ": ", k.fault, " (", dtype_name(x.dtype_id), ")");
}

void binary_cpu(int code, mf_tensor& z, const mf_tensor& x, const mf_tensor& y) {
  const PointwiseKernels* k = pointwise_at(code);
  if (!k || k->arity != 2) fail("binary: op code ", code, " is not a binary pointwise op's (mf.kernels.B)");
  const char* op = k->name;
  if (x.dtype_id != y.dtype_id)
    fail(op, ": operands are ", dtype_name(x.dtype_id), " and ", dtype_name(y.dtype_id), "; expected one dtype");
  int want = k->to_uint8 ? MF_UINT8 : x.dtype_id;
  if (z.dtype_id != want) fail(op, ": output is ", dtype_name(z.dtype_id), "; expected ", dtype_name(want));
  kcheck::meta(op, "x", x);
  kcheck::meta(op, "y", y);
  kcheck::meta(op, "output", z);
  const mf_tensor* ins[] = {&x, &y};
  static const char* const names[] = {"x", "y"};
  kcheck::broadcast_out(op, "output", z, 2, ins, names);
  kcheck::writable(op, "output", z);
  MF_DISPATCH(x.dtype_id, T, binary_typed<T>(*k, z, x, y));
}

void add_cpu(mf_tensor& z, const mf_tensor& x, const mf_tensor& y) {
  static const PointwiseKernels add = binary_kernels<pw::Add>("add");
  MF_DISPATCH(x.dtype_id, T, binary_typed<T>(add, z, x, y));
}

// -- where ---------------------------------------------------------------------------------
// One unit-stride row of where; SX, SY: the strides of a and b (0: one broadcast value). Not
// inlined: inside where_cpu's dispatch GCC compiled the (1, 1) loop as scalar code with a branch per
// element (2x slower than the strided loop on a random mask); alone it vectorises, as the others did.
template <typename T, int SX, int SY>
__attribute__((noinline)) static void select_run(T* o, const uint8_t* m, const T* x, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T u = x[i * SX], v = y[i * SY];
    o[i] = m[i] ? u : v;
  }
}

void where_cpu(mf_tensor& out, const mf_tensor& c, const mf_tensor& a, const mf_tensor& b) {
  if (c.dtype_id != MF_UINT8) fail("where: cond is ", dtype_name(c.dtype_id), "; expected uint8");
  if (a.dtype_id != b.dtype_id || a.dtype_id != out.dtype_id)
    fail("where: a is ", dtype_name(a.dtype_id), ", b ", dtype_name(b.dtype_id), ", output ", dtype_name(out.dtype_id),
         "; a and b must share the output dtype");
  kcheck::meta("where", "cond", c);
  kcheck::meta("where", "a", a);
  kcheck::meta("where", "b", b);
  kcheck::meta("where", "output", out);
  const mf_tensor* ins[] = {&c, &a, &b};
  static const char* const names[] = {"cond", "a", "b"};
  kcheck::broadcast_out("where", "output", out, 3, ins, names);
  kcheck::writable("where", "output", out);
  Shape s = shape_of(out);
  StridedIter<4> it(s, {strides_of(out), broadcast_strides(c, s), broadcast_strides(a, s), broadcast_strides(b, s)});
  MF_DISPATCH(out.dtype_id, T, {
    int es = int(sizeof(T));
    it.run({(char*)out.ptr, (char*)c.ptr, (char*)a.ptr, (char*)b.ptr}, {es, 1, es, es}, 1,
           [&](auto p, int64_t n, auto st) {
             T* o = (T*)p[0];
             const uint8_t* m = (const uint8_t*)p[1];
             const T *x = (const T*)p[2], *y = (const T*)p[3];
             // unit-stride rows (a or b may be one broadcast value, masked_fill's): both sides read
             // unconditionally, so the select vectorises
             if (st[0] == 1 && st[1] == 1 && st[2] >= 0 && st[2] <= 1 && st[3] >= 0 && st[3] <= 1) {
               switch (st[2] * 2 + st[3]) {
                 case 3: return select_run<T, 1, 1>(o, m, x, y, n);
                 case 2: return select_run<T, 1, 0>(o, m, x, y, n);
                 case 1: return select_run<T, 0, 1>(o, m, x, y, n);
                 default: return select_run<T, 0, 0>(o, m, x, y, n);
               }
             }
             for (int64_t i = 0; i < n; ++i) o[i * st[0]] = m[i * st[1]] ? x[i * st[2]] : y[i * st[3]];
           });
  });
}

// -- copy / cast ---------------------------------------------------------------------------
// A cast into a fresh output of 16 MiB or more (copy.h's stream_into) goes out by streaming stores:
// each 4 KiB of results converted by the plain loop into a buffer on the stack (in L1), then written
// to the output a line at a time without its read for ownership. Vector stores read every line
// first, and an eager result's lines are cold (see fill_span). float32 -> float64, 4M elements (32
// MB), 1 thread, CPU time (microbench), into outputs in turn (cold): 1254 -> 978 us; 2M elements
// 660 -> 417; under 16 MB a warm output lost (1M: 153 -> 198 us), and at 2 threads so did a warm
// 32 MB one (cast into out=, ops.lua, load 1: 636-644 -> 781-786 us), hence fresh outputs only.
// Same values: the conversion is the plain loop's.

#if defined(__AVX512F__) || defined(__AVX__)
template <typename D, typename S>
static void cast_streamed(D* dp, const S* sp, int64_t n) {
  int64_t i = 0;
  for (; i < n && (uintptr_t(dp + i) & 63) != 0; ++i) dp[i] = D(sp[i]);  // to a line's start
  constexpr int64_t kChunk = 4096 / int64_t(sizeof(D));
  alignas(64) D buf[kChunk];
  for (; i + kChunk <= n; i += kChunk) {
    for (int64_t k = 0; k < kChunk; ++k) buf[k] = D(sp[i + k]);
    char* d = (char*)(dp + i);
    const char* b = (const char*)buf;
    for (int k = 0; k < 4096; k += 64) {
#if defined(__AVX512F__)
      _mm512_stream_si512((__m512i*)(d + k), _mm512_load_si512((const void*)(b + k)));
#else
      _mm256_stream_si256((__m256i*)(d + k), _mm256_load_si256((const __m256i*)(b + k)));
      _mm256_stream_si256((__m256i*)(d + k + 32), _mm256_load_si256((const __m256i*)(b + k + 32)));
#endif
    }
  }
  for (; i < n; ++i) dp[i] = D(sp[i]);
  _mm_sfence();  // streaming stores are weakly ordered: done before the threads join
}
constexpr bool kCastStreams = true;
#else
template <typename D, typename S>
static void cast_streamed(D* dp, const S* sp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dp[i] = D(sp[i]);
}
constexpr bool kCastStreams = false;
#endif

template <typename D, typename S>
static void copy_typed(mf_tensor& dst, const mf_tensor& src) {
  Shape s = shape_of(dst);
  StridedIter<2> it(s, {strides_of(dst), broadcast_strides(src, s)});
  const bool stream = kCastStreams && stream_into(dst, dst.count * int64_t(sizeof(D)));
  it.run({(char*)dst.ptr, (char*)src.ptr}, {int(sizeof(D)), int(sizeof(S))}, 1, [&](auto p, int64_t n, auto st) {
    D* dp = (D*)p[0];
    const S* sp = (const S*)p[1];
    if (st[0] == 1 && st[1] == 1 && stream) {
      cast_streamed(dp, sp, n);
    } else if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) dp[i] = D(sp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = D(sp[i * st[1]]);
    }
  });
}

// reads_own_position (src/core/writes.h): a copy onto itself needs no staging.

// The write rule (src/core/writes.h): src broadcasts to dst, dst has no overlapping elements. A
// source that shares memory with dst (a:copy(a:t()), a:copy(a[1])) is read whole before any write.
void copy_cpu(mf_tensor& dst, const mf_tensor& src) {
  check_meta(dst, "copy", "destination");
  check_meta(src, "copy", "source");
  check_broadcast(src, dst, "copy");
  check_writable(dst, "copy", "destination");
  if (dst.count == 0) return;
  if (memory_overlaps(dst, src) && !reads_own_position(dst, src)) {
    mf_tensor staged{};
    tensor_init(staged, shape_of(src), src.dtype_id, MF_CPU);
    try {
      copy_same_dtype(staged, src);
      if (dst.dtype_id == src.dtype_id) {
        copy_same_dtype(dst, staged);
      } else {
        MF_DISPATCH(dst.dtype_id, D, { MF_DISPATCH(src.dtype_id, S, copy_typed<D, S>(dst, staged)); });
      }
    } catch (...) {
      tensor_release(staged);
      throw;
    }
    tensor_release(staged);
    return;
  }
  if (dst.dtype_id == src.dtype_id) return copy_same_dtype(dst, src);  // by layout (copy.cc)
  MF_DISPATCH(dst.dtype_id, D, { MF_DISPATCH(src.dtype_id, S, copy_typed<D, S>(dst, src)); });
}

// -- fill, arange, eye, rand ---------------------------------------------------------------
// Dense tensors take one flat loop (as fast as before); views are written through their strides
// after the write rule's checks (an expanded view is refused, not written past its storage).
//
// A dense span of 4 KiB or more is written by string stores where every byte of the value is the same
// (memset), a span of 1 MiB or more by rep stosl / stosq for the other 4- and 8-byte values on x86-64: an eager result is
// usually a block last written 64 MiB of allocations before (tensor.lua's collector allowance), gone
// from the caches, and string stores over a long span write whole lines without reading them from
// DRAM first, where vector stores fetch every line before overwriting it (read for ownership).
// Eager, 1 thread, CPU time, medians of 4 interleaved runs, load 13 (2026-11-27), string / loop:
// zeros 64 KB 2.87 / 3.52 us, 16 MB 447 / 572; zeros_like 16 MB 413 / 595; eye 2048 420 / 610;
// ones and full (rep stosl) 0.87-0.89x at 64 KB (given back: a warm t:fill at 64 KB lost 12%), 0.95x at 16 MB; t:fill in place (warm) 64 KB the
// same, 16 MB 134 / 163. memset reaches rep stosb through glibc, which this Zen 5 runs fastest. The
// cost: at 16 MB a read right after finds part of the lines outside the cache (zeros then sum: the
// sum 1.17x slower), zeros + sum 0.90x in all; at 64 KB the read costs the same.
template <typename T>
static void fill_span(T* p, int64_t n, T v) {
  constexpr int64_t kStringBytes = 4096;  // below: rep's start-up costs more than it saves
  // rep stosl / stosq only past L2's size: on a warm 64 KB span they lose to the vector loop
  // (t:fill(1.5), 1 thread, CPU time: 0.38-0.39 us against 0.34), where glibc's memset picks its
  // own method by size
  constexpr int64_t kRepBytes = int64_t(1) << 20;
  const int64_t bytes_n = n * int64_t(sizeof(T));
  if (bytes_n >= kStringBytes) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    bool uniform = true;
    for (size_t k = 1; k < sizeof(T); ++k) uniform = uniform && bytes[k] == bytes[0];
    if (uniform) {
      std::memset(p, bytes[0], size_t(n) * sizeof(T));
      return;
    }
  }
  if (bytes_n >= kRepBytes) {
#if defined(__x86_64__)
    void* d = p;
    if constexpr (sizeof(T) == 4) {
      uint32_t w;
      std::memcpy(&w, &v, 4);
      size_t c = size_t(n);
      __asm__ volatile("rep stosl" : "+D"(d), "+c"(c) : "a"(w) : "memory");
      return;
    } else if constexpr (sizeof(T) == 8) {
      uint64_t w;
      std::memcpy(&w, &v, 8);
      size_t c = size_t(n);
      __asm__ volatile("rep stosq" : "+D"(d), "+c"(c) : "a"(w) : "memory");
      return;
    }
#endif
  }
  for (int64_t i = 0; i < n; ++i) p[i] = v;
}

void fill_cpu(mf_tensor& t, double value) {
  check_meta(t, "fill", "tensor");
  check_value_fits(value, t.dtype_id, "fill");
  if (is_contiguous(t)) {
    MF_DISPATCH(t.dtype_id, T, {
      T v = T(value);
      T* p = (T*)t.ptr;
      parallel_for(t.count, 1, [&](int64_t b, int64_t e) { fill_span(p + b, e - b, v); });
    });
    return;
  }
  check_writable(t, "fill", "tensor");
  StridedIter<1> it(shape_of(t), {strides_of(t)});
  MF_DISPATCH(t.dtype_id, T, {
    T v = T(value);
    it.run({(char*)t.ptr}, {int(sizeof(T))}, 1, [&](auto p, int64_t n, auto st) {
      T* q = (T*)p[0];
      if (st[0] == 1) {
        for (int64_t i = 0; i < n; ++i) q[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) q[i * st[0]] = v;
      }
    });
  });
}

void arange_cpu(mf_tensor& t, double start, double step) {
  kcheck::meta("arange", "output", t);
  kcheck::contiguous("arange", "output", t);
  if (t.count > 0) {  // the values run monotonically: the ends bound them
    check_value_fits(start, t.dtype_id, "arange");
    check_value_fits(start + double(t.count - 1) * step, t.dtype_id, "arange");
  }
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    parallel_for(t.count, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = T(start + double(i) * step);
    });
  });
}

void eye_cpu(mf_tensor& t) {
  kcheck::meta("eye", "output", t);
  if (t.ndim != 2) fail("eye: output is ", shape_str(t), "; expected 2 dims");
  kcheck::contiguous("eye", "output", t);
  fill_cpu(t, 0);
  int64_t n = t.shape[0] < t.shape[1] ? t.shape[0] : t.shape[1];
  MF_DISPATCH(t.dtype_id, T, {
    T* p = (T*)t.ptr;
    for (int64_t i = 0; i < n; ++i) p[i * t.shape[1] + i] = T(1);
  });
}

}  // namespace mf
