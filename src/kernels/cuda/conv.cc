// -- conv2d / conv2d_backward_input / conv2d_backward_weight / conv2d_workspace -------------------
// Convolution (NCHW, one group) on cuDNN with the CPU's operand rules (src/kernels/cpu/conv.cc).
// conv2d_workspace runs cuDNN's heuristic at bind time and remembers the algorithm it chose per
// geometry, so every run of that node takes the same algorithm and the workspace sized for it.
// Float32 convolutions use FMA math (no TF32) unless mf.cuda.allow_tf32(true). Inputs that are
// views are packed first (cuDNN's algorithms are fastest, and all available, on packed tensors).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "../../core/tensor.h"
#include "../../core/kcheck.h"
#include "../../core/nchw.h"
#include "kernels.h"

namespace mf {
namespace cuda {

namespace {

const char* const kNames[] = {"conv2d", "conv2d_backward_input", "conv2d_backward_weight"};

// The forward geometry of routine kind: x, w and y shapes as the forward convolution sees them.
struct Geom {
  int64_t x[4], w[4], y[4];
  int32_t hp[6];  // stride h, w, padding h, w, dilation h, w
  int dtype;
};

Geom geom_of(int kind, const mf_tensor& out, const mf_tensor& a, const mf_tensor& b, const int32_t* hp) {
  const char* op = kNames[kind];
  kcheck::nchw(op, "output", out);
  kcheck::nchw(op, "input 1", a);
  kcheck::nchw(op, "input 2", b);
  const mf_tensor& x = kind == 0 ? a : kind == 1 ? out : b;
  const mf_tensor& w = kind == 0 ? b : kind == 1 ? b : out;
  const mf_tensor& y = kind == 0 ? out : a;
  Geom g{};
  for (int d = 0; d < 4; ++d) {
    g.x[d] = x.shape[d];
    g.w[d] = w.shape[d];
    g.y[d] = y.shape[d];
  }
  for (int i = 0; i < 6; ++i) g.hp[i] = hp[i];
  g.dtype = out.dtype_id;
  if (hp[0] < 1 || hp[1] < 1 || hp[2] < 0 || hp[3] < 0 || hp[4] < 1 || hp[5] < 1)
    fail(op, ": stride ", hp[0], "x", hp[1], ", padding ", hp[2], "x", hp[3], ", dilation ", hp[4], "x", hp[5],
         "; expected strides and dilations of 1 or more and paddings of 0 or more");
  if (g.x[1] != g.w[1]) fail(op, ": x has ", g.x[1], " channels, w expects ", g.w[1]);
  int64_t eh = int64_t(hp[4]) * (g.w[2] - 1) + 1, ew = int64_t(hp[5]) * (g.w[3] - 1) + 1;
  int64_t ho = (g.x[2] + 2 * hp[2] - eh) / hp[0] + 1, wo = (g.x[3] + 2 * hp[3] - ew) / hp[1] + 1;
  if (g.x[2] + 2 * hp[2] < eh || g.x[3] + 2 * hp[3] < ew)
    fail(op, ": the kernel ", g.w[2], "x", g.w[3], " (dilated ", eh, "x", ew, ") does not fit the padded input ",
         g.x[2] + 2 * hp[2], "x", g.x[3] + 2 * hp[3]);
  if (g.y[0] != g.x[0] || g.y[1] != g.w[0] || g.y[2] != ho || g.y[3] != wo)
    fail(op, ": ", kind == 0 ? "the output" : "gy", " is ", shape_str(y), "; expected ", g.x[0], "x", g.w[0], "x", ho,
         "x", wo, " (batch x out channels x the convolved size)");
  return g;
}

void check_float(const char* op, const mf_tensor& a, const mf_tensor& b, const mf_tensor& out) {
  kcheck::meta(op, "input 1", a);
  kcheck::meta(op, "input 2", b);
  kcheck::meta(op, "output", out);
  kcheck::float_dtype(op, "input 1", a);
  if (b.dtype_id != a.dtype_id || out.dtype_id != a.dtype_id) fail(op, ": inputs and output must share one dtype");
  if (!out.is_contig) fail(op, ": the output must be contiguous (it is ", shape_str(out), " with other strides)");
}

// -- descriptors --------------------------------------------------------------------------------------
cudnnDataType_t data_type(int dtype) { return dtype == MF_FLOAT32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE; }

struct Descs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit Descs(const Geom& g) {
    try {
      make(g);
    } catch (...) {  // a throwing constructor runs no destructor: free what was created
      destroy();
      throw;
    }
  }
  ~Descs() { destroy(); }
  Descs(const Descs&) = delete;
  Descs& operator=(const Descs&) = delete;

 private:
  void make(const Geom& g) {
    const char* op = "conv2d";
    cudnnDataType_t dt = data_type(g.dtype);
    check(cudnnCreateTensorDescriptor(&x), op, "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&y), op, "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&w), op, "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), op, "cudnnCreateConvolutionDescriptor");
    check(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, dt, int(g.x[0]), int(g.x[1]), int(g.x[2]), int(g.x[3])), op,
          "cudnnSetTensor4dDescriptor");
    check(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, dt, int(g.y[0]), int(g.y[1]), int(g.y[2]), int(g.y[3])), op,
          "cudnnSetTensor4dDescriptor");
    check(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NCHW, int(g.w[0]), int(g.w[1]), int(g.w[2]), int(g.w[3])), op,
          "cudnnSetFilter4dDescriptor");
    check(cudnnSetConvolution2dDescriptor(conv, g.hp[2], g.hp[3], g.hp[0], g.hp[1], g.hp[4], g.hp[5],
                                          CUDNN_CROSS_CORRELATION, dt),
          op, "cudnnSetConvolution2dDescriptor");
    // FMA math unless TF32 is allowed: float32 results stay within float32 rounding of the CPU's
    check(cudnnSetConvolutionMathType(conv, g.dtype == MF_FLOAT32 && allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
          op, "cudnnSetConvolutionMathType");
  }
  void destroy() noexcept {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    conv = nullptr, w = nullptr, y = nullptr, x = nullptr;
  }
};

// -- the algorithm of a geometry, chosen once ------------------------------------------------------------
// Its workspace is the larger of the heuristic's figure and cuDNN's own size query for that
// algorithm (the figure the convolution call checks its workspace against).
struct Choice {
  int algo;
  size_t bytes;
};
using Key = std::tuple<int, int, bool, std::vector<int64_t>>;
std::mutex g_mu;
std::map<Key, Choice> g_choices;

Key key_of(int kind, const Geom& g) {
  std::vector<int64_t> v(g.x, g.x + 4);
  v.insert(v.end(), g.w, g.w + 4);
  v.insert(v.end(), g.hp, g.hp + 6);
  return Key(kind, g.dtype, allow_tf32(), v);
}

// cuDNN's fastest-first heuristic list; the first entry that succeeded. Tensor-op entries are passed
// over unless TF32 is allowed: the FMA math type set on the descriptor should already exclude them,
// but the list reports each entry's own math type, and a tensor-op algorithm would round float32
// inputs to TF32 (the CPU comparison's 1e-5 would fail).
template <class Perf>
Choice first_ok(const Perf* p, int n, const char* op) {
  for (int i = 0; i < n; ++i) {
    if (p[i].status != CUDNN_STATUS_SUCCESS) continue;
    bool tensor_op = p[i].mathType == CUDNN_TENSOR_OP_MATH || p[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (tensor_op && !allow_tf32()) continue;
    return Choice{int(p[i].algo), p[i].memory};
  }
  fail(op, ": cuDNN offers no algorithm for this convolution", allow_tf32() ? "" : " without tensor-op (TF32) math");
}

Choice choose(int kind, const Geom& g) {
  Key k = key_of(kind, g);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_choices.find(k);
    if (it != g_choices.end()) return it->second;
  }
  const char* op = kNames[kind];
  Descs d(g);
  Choice c{};
  int n = 0;
  if (kind == 0) {
    cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(cudnn(), d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, p),
          op, "cudnnGetConvolutionForwardAlgorithm_v7");
    c = first_ok(p, n, op);
    size_t bytes = 0;
    check(cudnnGetConvolutionForwardWorkspaceSize(cudnn(), d.x, d.w, d.conv, d.y, cudnnConvolutionFwdAlgo_t(c.algo),
                                                  &bytes),
          op, "cudnnGetConvolutionForwardWorkspaceSize");
    c.bytes = std::max(c.bytes, bytes);
  } else if (kind == 1) {
    cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn(), d.w, d.y, d.conv, d.x,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, p),
          op, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    c = first_ok(p, n, op);
    size_t bytes = 0;
    check(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn(), d.w, d.y, d.conv, d.x,
                                                       cudnnConvolutionBwdDataAlgo_t(c.algo), &bytes),
          op, "cudnnGetConvolutionBackwardDataWorkspaceSize");
    c.bytes = std::max(c.bytes, bytes);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn(), d.x, d.y, d.conv, d.w,
                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, p),
          op, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    c = first_ok(p, n, op);
    size_t bytes = 0;
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn(), d.x, d.y, d.conv, d.w,
                                                         cudnnConvolutionBwdFilterAlgo_t(c.algo), &bytes),
          op, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
    c.bytes = std::max(c.bytes, bytes);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_choices.emplace(k, c);
  return c;
}

// A packed (contiguous) form of t: t itself, or a copy in scratch memory held by keep.
const void* packed(const mf_tensor& t, std::vector<std::unique_ptr<Scratch>>& keep, const char* op) {
  if (t.is_contig) return t.ptr;
  keep.emplace_back(new Scratch(size_t(std::max<int64_t>(tensor_nbytes(t), 1))));
  mf_tensor dst{};
  set_meta(dst, shape_of(t), t.dtype_id, t.device_id);
  dst.ptr = keep.back()->get();
  if (copy(&dst, &t) != MF_OK) fail(op, ": packing a strided input failed: ", last_error());
  return dst.ptr;
}

void run(int kind, mf_tensor& out, const mf_tensor& a, const mf_tensor& b, mf_tensor* ws, const int32_t* hp) {
  const char* op = kNames[kind];
  on_device(op, "the output", out);
  on_device(op, "input 1", a);
  on_device(op, "input 2", b);
  if (ws && ws->ptr) on_device(op, "the workspace", *ws);
  check_float(op, a, b, out);
  Geom g = geom_of(kind, out, a, b, hp);
  if (out.count == 0) return;
  if (a.count == 0 || b.count == 0) {  // an empty sum (no batch or channels to read): zeros
    check(cudaMemsetAsync(out.ptr, 0, size_t(tensor_nbytes(out)), stream()), op, "cudaMemsetAsync");
    return;
  }
  Choice c = choose(kind, g);
  std::vector<std::unique_ptr<Scratch>> keep;
  const void* pa = packed(a, keep, op);
  const void* pb = packed(b, keep, op);
  void* work = nullptr;
  if (c.bytes > 0) {
    if (ws && ws->ptr && size_t(tensor_nbytes(*ws)) >= c.bytes) {
      work = ws->ptr;
    } else {
      keep.emplace_back(new Scratch(c.bytes));
      work = keep.back()->get();
    }
  }
  Descs d(g);
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = g.dtype == MF_FLOAT32 ? static_cast<const void*>(&one_f) : static_cast<const void*>(&one_d);
  const void* zero = g.dtype == MF_FLOAT32 ? static_cast<const void*>(&zero_f) : static_cast<const void*>(&zero_d);
  if (kind == 0) {
    check(cudnnConvolutionForward(cudnn(), one, d.x, pa, d.w, pb, d.conv, cudnnConvolutionFwdAlgo_t(c.algo), work,
                                  c.bytes, zero, d.y, out.ptr),
          op, "cudnnConvolutionForward");
  } else if (kind == 1) {
    check(cudnnConvolutionBackwardData(cudnn(), one, d.w, pb, d.y, pa, d.conv, cudnnConvolutionBwdDataAlgo_t(c.algo),
                                       work, c.bytes, zero, d.x, out.ptr),
          op, "cudnnConvolutionBackwardData");
  } else {
    check(cudnnConvolutionBackwardFilter(cudnn(), one, d.x, pb, d.y, pa, d.conv,
                                         cudnnConvolutionBwdFilterAlgo_t(c.algo), work, c.bytes, zero, d.w, out.ptr),
          op, "cudnnConvolutionBackwardFilter");
  }
}

}  // namespace

int conv2d_workspace(int32_t kind, const mf_tensor* out, const mf_tensor* a, const mf_tensor* b, int32_t sh, int32_t sw,
                     int32_t ph, int32_t pw, int32_t dh, int32_t dw, int64_t* bytes) {
  return entry("conv2d_workspace", [&] {
    if (kind < 0 || kind > 2) fail("conv2d: bad routine code ", kind);
    if (!bytes) fail("conv2d_workspace: null result pointer");
    const int32_t hp[] = {sh, sw, ph, pw, dh, dw};
    Geom g = geom_of(kind, *out, *a, *b, hp);
    int64_t n = 1;
    for (int d = 0; d < 4; ++d) n *= g.x[d] * g.w[d];
    *bytes = n == 0 ? 0 : int64_t(choose(kind, g).bytes);
  });
}

int conv2d(mf_tensor* y, const mf_tensor* x, const mf_tensor* w, mf_tensor* ws, int32_t sh, int32_t sw, int32_t ph,
           int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[] = {sh, sw, ph, pw, dh, dw};
  return entry("conv2d", [&] { run(0, *y, *x, *w, ws, hp); });
}

int conv2d_backward_input(mf_tensor* gx, const mf_tensor* gy, const mf_tensor* w, mf_tensor* ws, int32_t sh,
                          int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[] = {sh, sw, ph, pw, dh, dw};
  return entry("conv2d_backward_input", [&] { run(1, *gx, *gy, *w, ws, hp); });
}

int conv2d_backward_weight(mf_tensor* gw, const mf_tensor* gy, const mf_tensor* x, mf_tensor* ws, int32_t sh,
                           int32_t sw, int32_t ph, int32_t pw, int32_t dh, int32_t dw) {
  const int32_t hp[] = {sh, sw, ph, pw, dh, dw};
  return entry("conv2d_backward_weight", [&] { run(2, *gw, *gy, *x, ws, hp); });
}

}  // namespace cuda
}  // namespace mf
