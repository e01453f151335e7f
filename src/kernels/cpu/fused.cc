// -- fused elementwise expressions ------------------------------------------------------------
// One pass over memory for a whole chain of pointwise ops: the output is cut into blocks of
// kBlock elements; per block every instruction runs as a tight (vectorisable) loop over L1-sized
// registers, inputs are read straight from their tensors when dense, and the last instruction
// writes straight into the output. A chain of k ops thus reads its inputs and writes its result
// once instead of k times, which is what memory-bound updates such as w = -eta * (g + lam * w)
// need to run near the STREAM limit.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "../../core/error.h"
#include "../../core/pointwise.h"
#include "../../core/threads.h"
#include "checks.h"
#include "kernels.h"
#include "stream_out.h"

namespace mf {

namespace {

constexpr int64_t kBlock = 512;

using Step = FusedStep;

// How the interpreter gets an input's values for a block.
enum class Source { Dense, Scalar, Gather };

struct Input {
  const char* base;
  Source src;
  int ndim;
  int64_t shape[8], bstride[8];  // Gather: the output's shape, the input's broadcast strides
};

// Fills buf with elements b0..b0+n-1 (row-major over the output) of a broadcast or strided input:
// whole runs along the innermost dim at a time (a repeated value, a contiguous copy or a strided
// walk), so a conv bias broadcast over H x W costs a fill per plane, not an index per element.
template <typename T>
void gather(T* buf, const Input& in, int64_t b0, int64_t n) {
  int nd = in.ndim, last = nd - 1;
  int64_t idx[8] = {0}, off = 0, rem = b0;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % in.shape[d];
    rem /= in.shape[d];
    off += idx[d] * in.bstride[d];
  }
  const T* base = reinterpret_cast<const T*>(in.base);
  int64_t st = in.bstride[last];
  for (int64_t i = 0; i < n;) {
    int64_t run = std::min(in.shape[last] - idx[last], n - i);
    const T* src = base + off;
    if (st == 0) std::fill(buf + i, buf + i + run, *src);
    else if (st == 1) std::memcpy(buf + i, src, size_t(run) * sizeof(T));
    else for (int64_t k = 0; k < run; ++k) buf[i + k] = src[k * st];
    i += run;
    off += run * st;
    idx[last] += run;
    for (int d = last; d > 0 && idx[d] == in.shape[d]; --d) {  // carry into the outer dims
      off += in.bstride[d - 1] - idx[d] * in.bstride[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <typename T>
void run_program(const FusedProgram& prog, mf_tensor& out, const Input* ins, bool stream) {
  int nin = prog.nin;
  T* dst = reinterpret_cast<T*>(out.ptr);
  const std::vector<Step>& steps = prog.steps;
  parallel_for(out.count, int64_t(steps.size()), [&](int64_t lo, int64_t hi) {
    // per-thread registers, kept between calls: one block per scratch register and per input
    thread_local std::vector<T> scratch;
    thread_local std::vector<const T*> val;
    // stream: one more block, the last step's results, then streamed to the output (stream_out.h)
    size_t need = size_t(kBlock) * size_t(prog.nregs + nin + (stream ? 1 : 0));
    if (scratch.size() < need) scratch.resize(need);
    if (val.size() < size_t(nin) + steps.size()) val.resize(size_t(nin) + steps.size());
    T* in_buf = scratch.data() + size_t(kBlock) * size_t(prog.nregs);
    T* out_buf = in_buf + size_t(kBlock) * size_t(nin);
    for (int i = 0; i < nin; ++i)  // scalars broadcast once per call
      if (ins[i].src == Source::Scalar)
        std::fill(in_buf + size_t(kBlock) * size_t(i), in_buf + size_t(kBlock) * size_t(i + 1),
                  *reinterpret_cast<const T*>(ins[i].base));
    for (int64_t b0 = lo; b0 < hi; b0 += kBlock) {
      int64_t n = std::min(kBlock, hi - b0);
      int64_t nn = std::min(kBlock, hi - b0 - n);  // the next block's size
      for (int i = 0; i < nin; ++i) {
        const Input& in = ins[i];
        T* buf = in_buf + size_t(kBlock) * size_t(i);
        if (in.src == Source::Dense) {
          val[size_t(i)] = reinterpret_cast<const T*>(in.base) + b0;
          // the steps stream one input at a time; prefetching every input's next block keeps
          // all streams in flight at once, as a hand-written loop over them would
          const char* next = reinterpret_cast<const char*>(val[size_t(i)] + n);
          for (int64_t off = 0; off < nn * int64_t(sizeof(T)); off += 64) __builtin_prefetch(next + off);
        } else {
          if (in.src == Source::Gather) gather(buf, in, b0, n);
          val[size_t(i)] = buf;
        }
      }
      for (size_t s = 0; s < steps.size(); ++s) {
        const Step& st = steps[s];
        T* d = st.reg >= 0 ? scratch.data() + size_t(kBlock) * size_t(st.reg) : stream ? out_buf : dst + b0;
        // one call per step and block: the entry's loop for T over one dense row
        const PwRun run{n, 1, {1, 1, 1}, {0, 0, 0}};
        if (st.b < 0) std::get<UnaryLoop<T>>(st.k->unary)(d, val[size_t(st.a)], run, 0, 0);
        else std::get<BinaryLoop<T>>(st.k->binary)(d, val[size_t(st.a)], val[size_t(st.b)], run);
        val[size_t(nin) + s] = d;
      }
      if (stream) stream_copy(reinterpret_cast<char*>(dst + b0), reinterpret_cast<const char*>(out_buf), n * int64_t(sizeof(T)));
    }
    if (stream) stream_out_fence();
  });
}

}  // namespace

void fused_cpu(const FusedProgram& fp, mf_tensor& out, int nin, const mf_tensor* const* ins) {
  const char* op = "fused_elementwise";
  if (nin != fp.nin) fail(op, ": the program reads ", fp.nin, " inputs; got ", nin);
  if (out.dtype_id != MF_FLOAT32 && out.dtype_id != MF_FLOAT64)
    fail(op, ": output is ", dtype_name(out.dtype_id), "; expected float32 or float64");
  kcheck::meta(op, "output", out);
  kcheck::contiguous(op, "output", out);
  if (!ins) fail(op, ": the input list is null");
  for (int i = 0; i < nin; ++i) {
    if (!ins[i]) fail(op, ": input ", i + 1, " is null");
    kcheck::meta(op, "input", *ins[i]);
  }
  kcheck::broadcast_out(op, "output", out, nin, ins, nullptr);
  Input inputs[kFusedMaxInputs];
  for (int i = 0; i < nin; ++i) {
    const mf_tensor& t = *ins[i];
    if (t.dtype_id != out.dtype_id)
      fail(op, ": input ", i + 1, " is ", dtype_name(t.dtype_id), "; expected ", dtype_name(out.dtype_id), " like the output");
    Input& in = inputs[i];
    in.base = static_cast<const char*>(t.ptr);
    if (t.count == out.count && t.is_contig && t.ndim <= out.ndim) {
      in.src = Source::Dense;
    } else if (t.count == 1) {
      in.src = Source::Scalar;
    } else {
      Shape bs = broadcast_strides(t, shape_of(out));  // throws when t does not broadcast to the output
      in.src = Source::Gather;
      in.ndim = 0;
      for (int d = 0; d < out.ndim; ++d) {
        if (out.shape[d] == 1) continue;  // a size-1 dim moves nothing
        int k = in.ndim - 1;
        if (k >= 0 && in.bstride[k] == bs[size_t(d)] * out.shape[d]) {  // merge with the dim before
          in.shape[k] *= out.shape[d];
          in.bstride[k] = bs[size_t(d)];
        } else {
          in.shape[in.ndim] = out.shape[d];
          in.bstride[in.ndim++] = bs[size_t(d)];
        }
      }
    }
  }
  if (out.count == 0) return;
  // a fresh output of 16 MiB and more by streaming stores (stream_out.h), unless a step's op keeps
  // plain stores (PointwiseKernels::stream) or an input shares the output's storage
  bool stream = pointwise_streams(out, dtype_size(out.dtype_id), {});
  for (const Step& st : fp.steps) stream = stream && ((st.k->stream >> out.dtype_id) & 1);
  for (int i = 0; i < nin && stream; ++i) stream = ins[i]->store != out.store;
  if (out.dtype_id == MF_FLOAT32) run_program<float>(fp, out, inputs, stream);
  else run_program<double>(fp, out, inputs, stream);
}

}  // namespace mf
