// Convolution and pooling over NCHW tensors, with the backward ops their gradient rules build.
// Kernels: src/kernels/cpu/conv.cc (im2col + OpenBLAS GEMM; Winograd for 3x3 stride-1 layers,
// winograd.cc) and pool.cc (pooling over (N, C) planes).
#include <sstream>

#include "registry.h"

namespace mf {

namespace {

struct Pair {
  int64_t h, w;
};

std::string pair_str(const Pair& p) { return std::to_string(p.h) + "x" + std::to_string(p.w); }

// The kernels take the geometry as int32 (hp / kp in src/kernels/cpu/kernels.h): the largest value of
// a geometry param, so an out-of-range one fails here, named, instead of wrapping in the kernel
// factory or overflowing the output-size arithmetic.
constexpr int64_t kGeomMax = 2147483647;

// The (h, w) pair of an integer-list param of 1 or 2 values (one value means both dims), each in
// [lo, kGeomMax]; an empty list gives *dflt where the param has that meaning.
Pair pair_param(InferCtx& c, const char* name, int64_t lo, const Pair* dflt = nullptr) {
  const auto& l = c.p.get_list(name);
  if (l.empty() && dflt) return *dflt;
  if (l.empty() || l.size() > 2)
    fail(c.name(), ": ", name, " has ", l.size(), " values; give 1 or 2 integers (one value means both dims)");
  for (int64_t v : l)
    if (v < lo || v > kGeomMax) {
      std::ostringstream s;
      for (size_t i = 0; i < l.size(); ++i) s << (i ? ", " : "") << l[i];
      fail(c.name(), ": ", name, " is {", s.str(), "}; each value must be at least ", lo, " and at most ", kGeomMax);
    }
  return {l[0], l.back()};
}

void need_4d(InferCtx& c, const mf_tensor& t, const char* what, const char* layout) {
  if (t.ndim != 4) fail(c.name(), ": ", what, " is ", shape_str(t), "; expected 4 dims (", layout, ")");
}

// -- convolution -------------------------------------------------------------------------------------

// conv2d's output shape for input x (named xn) and weight w (named wn), with the rule's errors.
Shape conv_out(InferCtx& c, const mf_tensor& x, const char* xn, const mf_tensor& w, const char* wn) {
  need_4d(c, x, xn, "N x C x H x W");
  need_4d(c, w, wn, "O x C x kh x kw");
  if (!dims_match(x.shape[1], w.shape[1]))
    fail(c.name(), ": ", xn, " is ", shape_str(x), ", ", wn, " is ", shape_str(w), "; ", xn, ":size(2) = ", x.shape[1],
         " (input channels) must equal ", wn, ":size(2) = ", w.shape[1]);
  Pair s = pair_param(c, "stride", 1), p = pair_param(c, "padding", 0), d = pair_param(c, "dilation", 1);
  int64_t kh = w.shape[2], kw = w.shape[3];
  if (kh < 1 || kw < 1) fail(c.name(), ": ", wn, " is ", shape_str(w), "; the kernel must be at least 1x1");
  int64_t eh = d.h * (kh - 1) + 1, ew = d.w * (kw - 1) + 1;
  int64_t ph = x.shape[2] + 2 * p.h, pw = x.shape[3] + 2 * p.w;
  bool uh = is_unknown(x.shape[2]), uw = is_unknown(x.shape[3]);  // graph build: sizes known at run
  if ((eh > ph && !uh) || (ew > pw && !uw)) {
    // floor division, so a too-large kernel shows the output size it would give
    auto out = [](int64_t n, int64_t e, int64_t st) { return (n - e >= 0 ? (n - e) / st : -((e - n + st - 1) / st)) + 1; };
    fail(c.name(), ": ", xn, " is ", shape_str(x), ", ", wn, " is ", shape_str(w), "; the ", kh, "x", kw, " kernel (dilation ",
         pair_str(d), ") spans ", eh, "x", ew, ", larger than the input padded by ", pair_str(p), " (", ph, "x", pw,
         "): the output size floor((H + 2*padding - dilation*(k-1) - 1)/stride) + 1 would be ", out(ph, eh, s.h), "x",
         out(pw, ew, s.w), ", not positive");
  }
  return {x.shape[0], w.shape[0], uh ? unknown_dim() : (ph - eh) / s.h + 1, uw ? unknown_dim() : (pw - ew) / s.w + 1};
}

void conv2d_shape(InferCtx& c) { c.set_out(0, conv_out(c, c.input(0), "x", c.input(1), "w")); }

// gy must be what conv2d of (x, w) gives; the output takes like's shape
void check_gy(InferCtx& c, const Shape& want, const char* how) {
  const mf_tensor& gy = c.input(0);
  if (!shapes_match(shape_of(gy), want))
    fail(c.name(), ": gy is ", shape_str(gy), ", but ", how, " gives ", shape_str(want), "; gy must have that shape");
}

void conv2d_backward_input_shape(InferCtx& c) {
  const mf_tensor &w = c.input(1), &like = c.input(2);
  need_4d(c, c.input(0), "gy", "N x O x Ho x Wo");
  Shape want = conv_out(c, like, "like", w, "w");
  check_gy(c, want, ("conv2d of like " + shape_str(like) + " by w " + shape_str(w)).c_str());
  c.set_out(0, shape_of(like));
}

void conv2d_backward_weight_shape(InferCtx& c) {
  const mf_tensor &x = c.input(1), &like = c.input(2);
  need_4d(c, c.input(0), "gy", "N x O x Ho x Wo");
  Shape want = conv_out(c, x, "x", like, "like");
  check_gy(c, want, ("conv2d of x " + shape_str(x) + " by a weight like " + shape_str(like)).c_str());
  c.set_out(0, shape_of(like));
}

// the first two inputs hold data: one float dtype; like (if any) lends only its shape
void two_float_type(InferCtx& c) {
  if (c.input(0).dtype_id != c.input(1).dtype_id)
    fail(c.name(), ": ", c.op.inputs_[0], " is ", dtype_name(c.input(0).dtype_id), ", ", c.op.inputs_[1], " is ",
         dtype_name(c.input(1).dtype_id), "; expected one dtype");
  float_type(c);
}

// The conv kernels: hoist the geometry and allocate the routine's workspace once per bind.
std::string conv_kernel(const char* routine, int kind) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local out, a, b = outs[1], ins[1], ins[2]
  local sh, sw = K.pair(p.stride)
  local ph, pw = K.pair(p.padding)
  local dh, dw = K.pair(p.dilation)
  local ws = mf._new_tensor({K.conv2d_workspace()lua") + std::to_string(kind) + R"lua(, out, a, b, sh, sw, ph, pw, dh, dw)}, ffi.C.MF_UINT8,
                          out._device_id)  -- the routine's scratch, on its device (cuDNN's workspace)
  return function() K.)lua" + routine + R"lua((out, a, b, ws, sh, sw, ph, pw, dh, dw) end
end)lua";
}

const char* kStrideDoc = "Step between windows: 1 or 2 integers (h, w; one means both).";
const char* kPaddingDoc = "Zeros added on both sides of H and W: 1 or 2 integers.";
const char* kDilationDoc = "Spacing between kernel taps: 1 or 2 integers.";

// -- pooling -----------------------------------------------------------------------------------------

Shape pool_out(InferCtx& c, const mf_tensor& x, const char* xn) {
  need_4d(c, x, xn, "N x C x H x W");
  Pair k = pair_param(c, "kernel_size", 1);
  Pair s = pair_param(c, "stride", 1, &k);
  Pair p = pair_param(c, "padding", 0);
  if (2 * p.h > k.h || 2 * p.w > k.w)
    fail(c.name(), ": padding ", pair_str(p), " is more than half of kernel_size ", pair_str(k),
         " (a window could hold nothing but padding)");
  int64_t H = x.shape[2], W = x.shape[3];
  if (H < 1 || W < 1) fail(c.name(), ": ", xn, " is ", shape_str(x), "; its height and width must be at least 1");
  int64_t ph = H + 2 * p.h, pw = W + 2 * p.w;
  bool uh = is_unknown(H), uw = is_unknown(W);  // graph build: sizes known at run
  if ((k.h > ph && !uh) || (k.w > pw && !uw))
    fail(c.name(), ": ", xn, " is ", shape_str(x), "; kernel_size ", pair_str(k), " is larger than the input padded by ",
         pair_str(p), " (", ph, "x", pw, "): the output size floor((H + 2*padding - kernel_size)/stride) + 1 would not be positive");
  return {x.shape[0], x.shape[1], uh ? unknown_dim() : (ph - k.h) / s.h + 1, uw ? unknown_dim() : (pw - k.w) / s.w + 1};
}

void pool_shape(InferCtx& c) { c.set_out(0, pool_out(c, c.input(0), "x")); }

void pool_backward_shape(InferCtx& c) {
  const mf_tensor& x = c.input(1);
  const char* xn = c.op.inputs_[1].c_str();
  need_4d(c, c.input(0), "gy", "N x C x Ho x Wo");
  Shape want = pool_out(c, x, xn);
  std::string fwd = c.op.name_.substr(0, c.op.name_.rfind("_backward"));
  check_gy(c, want, (fwd + " of " + xn + " " + shape_str(x)).c_str());
  c.set_out(0, shape_of(x));
}

Shape adaptive_out(InferCtx& c, const mf_tensor& x, const char* xn) {
  need_4d(c, x, xn, "N x C x H x W");
  Pair o = pair_param(c, "output_size", 1);
  if (x.shape[2] < 1 || x.shape[3] < 1)
    fail(c.name(), ": ", xn, " is ", shape_str(x), "; its height and width must be at least 1");
  return {x.shape[0], x.shape[1], o.h, o.w};
}

void adaptive_shape(InferCtx& c) { c.set_out(0, adaptive_out(c, c.input(0), "x")); }

void adaptive_backward_shape(InferCtx& c) {
  const mf_tensor& like = c.input(1);
  need_4d(c, c.input(0), "gy", "N x C x Ho x Wo");
  Shape want = adaptive_out(c, like, "like");
  check_gy(c, want, ("adaptive_avg_pool2d of like " + shape_str(like)).c_str());
  c.set_out(0, shape_of(like));
}

// The pooling kernels: window geometry hoisted to bind time. ARGS are the routine's tensors;
// avg pooling adds count_include_pad.
std::string pool_kernel(const char* routine, const char* args, bool avg) {
  return std::string(R"lua(
function(ins, outs, p, K)
  local out, a, b = outs[1], ins[1], ins[2]
  local kh, kw = K.pair(p.kernel_size)
  local sh, sw = K.pair(p.stride, kh, kw)
  local ph, pw = K.pair(p.padding)
  local inc = p.count_include_pad and 1 or 0
  return function() K.)lua") + routine + "(" + args + ", kh, kw, sh, sw, ph, pw" + (avg ? ", inc" : "") + R"lua() end
end)lua";
}

const char* kKernelDoc = "Window size: 1 or 2 integers (h, w; one means both).";
const char* kPoolStrideDoc = "Step between windows: 1 or 2 integers; empty (the default): kernel_size.";
const char* kPoolPaddingDoc = "Padding on both sides of H and W, at most half of kernel_size: 1 or 2 integers.";
const char* kIncludePadDoc = "Count padded zeros in each window's divisor (PyTorch's default).";

}  // namespace

void register_conv_ops() {
  MF_REGISTER_OP(conv2d)
      .describe("2-D convolution (cross-correlation, as in PyTorch) of x (N x C x H x W) with w (O x C x kh x kw), "
                "no bias: N x O x Ho x Wo, Ho = floor((H + 2*padding - dilation*(kh-1) - 1)/stride) + 1.")
      .inputs({"x", "w"})
      .strided()
      .param(Field::int_list("stride", "1", kStrideDoc))
      .param(Field::int_list("padding", "0", kPaddingDoc))
      .param(Field::int_list("dilation", "1", kDilationDoc))
      .infer_shape(conv2d_shape)
      .infer_type(two_float_type)
      .lua_compute(MF_CPU, conv_kernel("conv2d", 0))
      .gradient(R"lua(
function(x, w, y, gy, p, needs)
  -- a term nobody wants is skipped (needs: the gradient contract): a network's input gets none
  return {needs[1] and mf.conv2d_backward_input(gy, w, x, p.stride, p.padding, p.dilation) or nil,
          needs[2] and mf.conv2d_backward_weight(gy, x, w, p.stride, p.padding, p.dilation) or nil}
end)lua");

  MF_REGISTER_OP(conv2d_backward_input)
      .describe("Gradient of conv2d with respect to x: gy (N x O x Ho x Wo) through w (O x C x kh x kw) back to "
                "like's shape (N x C x H x W), the transposed convolution.")
      .inputs({"gy", "w", "like"})
      .strided()
      .param(Field::int_list("stride", "1", kStrideDoc))
      .param(Field::int_list("padding", "0", kPaddingDoc))
      .param(Field::int_list("dilation", "1", kDilationDoc))
      .infer_shape(conv2d_backward_input_shape)
      .infer_type(two_float_type)
      .lua_compute(MF_CPU, conv_kernel("conv2d_backward_input", 1))
      .gradient(R"lua(
function(gy, w, like, gx, g, p, needs)
  return {needs[1] and mf.conv2d(g, w, p.stride, p.padding, p.dilation) or nil,
          needs[2] and mf.conv2d_backward_weight(gy, g, w, p.stride, p.padding, p.dilation) or nil}
end)lua");

  MF_REGISTER_OP(conv2d_backward_weight)
      .describe("Gradient of conv2d with respect to w: gy (N x O x Ho x Wo) correlated with x (N x C x H x W), "
                "summed over the batch, in like's shape (O x C x kh x kw).")
      .inputs({"gy", "x", "like"})
      .strided()
      .param(Field::int_list("stride", "1", kStrideDoc))
      .param(Field::int_list("padding", "0", kPaddingDoc))
      .param(Field::int_list("dilation", "1", kDilationDoc))
      .infer_shape(conv2d_backward_weight_shape)
      .infer_type(two_float_type)
      .lua_compute(MF_CPU, conv_kernel("conv2d_backward_weight", 2))
      .gradient(R"lua(
function(gy, x, like, gw, g, p, needs)
  return {needs[1] and mf.conv2d(x, g, p.stride, p.padding, p.dilation) or nil,
          needs[2] and mf.conv2d_backward_input(gy, g, x, p.stride, p.padding, p.dilation) or nil}
end)lua");

  MF_REGISTER_OP(max_pool2d)
      .describe("Largest element of each kernel_size window of x (N x C x H x W), padding counting as -inf; NaN wins. "
                "Ho = floor((H + 2*padding - kernel_size)/stride) + 1.")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("kernel_size", "", kKernelDoc).mandatory())
      .param(Field::int_list("stride", "", kPoolStrideDoc))
      .param(Field::int_list("padding", "0", kPoolPaddingDoc))
      .infer_shape(pool_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, pool_kernel("max_pool2d", "out, a", false))
      .gradient(R"lua(
function(x, y, gy, p) return {mf.max_pool2d_backward(gy, x, p.kernel_size, p.stride, p.padding)} end)lua");

  MF_REGISTER_OP(max_pool2d_backward)
      .describe("Gradient of max_pool2d: each gy element added at the first maximum of its window of x "
                "(recomputed from x), zeros elsewhere; x's shape.")
      .inputs({"gy", "x"})
      .strided()
      .param(Field::int_list("kernel_size", "", kKernelDoc).mandatory())
      .param(Field::int_list("stride", "", kPoolStrideDoc))
      .param(Field::int_list("padding", "0", kPoolPaddingDoc))
      .infer_shape(pool_backward_shape)
      .infer_type(two_float_type)
      .lua_compute(MF_CPU, pool_kernel("max_pool2d_backward", "out, a, b", false));

  MF_REGISTER_OP(avg_pool2d)
      .describe("Mean of each kernel_size window of x (N x C x H x W); padding counts as zeros. "
                "Ho = floor((H + 2*padding - kernel_size)/stride) + 1.")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("kernel_size", "", kKernelDoc).mandatory())
      .param(Field::int_list("stride", "", kPoolStrideDoc))
      .param(Field::int_list("padding", "0", kPoolPaddingDoc))
      .param(Field::boolean("count_include_pad", true, kIncludePadDoc))
      .infer_shape(pool_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, pool_kernel("avg_pool2d", "out, a", true))
      .gradient(R"lua(
function(x, y, gy, p)
  return {mf.avg_pool2d_backward(gy, x, p.kernel_size, p.stride, p.padding, p.count_include_pad)}
end)lua");

  MF_REGISTER_OP(avg_pool2d_backward)
      .describe("Gradient of avg_pool2d: each gy element spread evenly over its window, in like's shape.")
      .inputs({"gy", "like"})
      .strided()
      .param(Field::int_list("kernel_size", "", kKernelDoc).mandatory())
      .param(Field::int_list("stride", "", kPoolStrideDoc))
      .param(Field::int_list("padding", "0", kPoolPaddingDoc))
      .param(Field::boolean("count_include_pad", true, kIncludePadDoc))
      .infer_shape(pool_backward_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, pool_kernel("avg_pool2d_backward", "out, a", true))
      .gradient(R"lua(
function(gy, like, gx, g, p)
  return {mf.avg_pool2d(g, p.kernel_size, p.stride, p.padding, p.count_include_pad)}
end)lua");

  MF_REGISTER_OP(adaptive_avg_pool2d)
      .describe("Mean over windows that tile x (N x C x H x W) into output_size (PyTorch's rule: output row i "
                "covers rows floor(i*H/Ho) to ceil((i+1)*H/Ho)).")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("output_size", "", "Output Ho, Wo: 1 or 2 integers (one means both).").mandatory())
      .infer_shape(adaptive_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.adaptive_avg_pool2d(y, x) end
end)lua")
      .gradient(R"lua(function(x, y, gy, p) return {mf.adaptive_avg_pool2d_backward(gy, x, p.output_size)} end)lua");

  MF_REGISTER_OP(adaptive_avg_pool2d_backward)
      .describe("Gradient of adaptive_avg_pool2d: each gy element spread evenly over its window, in like's shape.")
      .inputs({"gy", "like"})
      .strided()
      .param(Field::int_list("output_size", "", "Output Ho, Wo of the forward op: 1 or 2 integers.").mandatory())
      .infer_shape(adaptive_backward_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local gx, gy = outs[1], ins[1]
  return function() K.adaptive_avg_pool2d_backward(gx, gy) end
end)lua")
      .gradient(R"lua(function(gy, like, gx, g, p) return {mf.adaptive_avg_pool2d(g, p.output_size)} end)lua");
}

}  // namespace mf
