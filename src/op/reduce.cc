// Reductions over one or more dims, with keepdim. Kernel: src/kernels/cpu/reduce.cc.
#include "reduce.h"

namespace mf {

uint32_t dims_mask(const char* op, const std::vector<int64_t>& dims, int ndim) {
  uint32_t mask = 0;
  for (int64_t d : dims) {
    int nd = normalize_dim(op, d, ndim);
    if (mask & (1u << nd)) fail(op, ": dim ", d, " is listed twice");
    mask |= 1u << nd;
  }
  return mask;
}

uint32_t reduce_mask(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto& dims = c.p.get_list("dim");
  if (dims.empty()) return x.ndim ? (1u << x.ndim) - 1 : 0;
  return dims_mask(c.name(), dims, x.ndim);
}

void reduce_out_shape(InferCtx& c, bool allow_empty) {
  const mf_tensor& x = c.input(0);
  uint32_t mask = reduce_mask(c);
  bool keep = c.p.get_bool("keepdim");
  Shape out;
  for (int d = 0; d < x.ndim; ++d) {
    if (!(mask & (1u << d))) out.push_back(x.shape[d]);
    else if (keep) out.push_back(1);
  }
  if (!allow_empty)
    for (int d = 0; d < x.ndim; ++d)
      if ((mask & (1u << d)) && x.shape[d] == 0)
        fail(c.name(), ": cannot reduce over dim ", d + 1, " of size 0 (x is ", shape_str(x), ")");
  c.set_out(0, out);
}

namespace {

void reduce_shape(InferCtx& c) {
  std::string op = c.name();
  reduce_out_shape(c, op == "sum" || op == "prod" || op == "mean");
}

// PyTorch's rule: integer (and uint8) sums and products are int64, so they do not wrap in the
// input's dtype; float ones keep it.
void int64_accum_type(InferCtx& c) {
  int dt = c.input(0).dtype_id;
  c.out[0].dtype_id = dtype_is_float(dt) ? dt : int(MF_INT64);
}

}  // namespace

std::string reduce_kernel(const char* code, const char* number) {
  if (number)
    return std::string(R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local code, mask, number = K.R.)lua") + code + R"lua(, K.dim_mask(p.dim, x._ndim), )lua" + number + R"lua(
  return function() K.reduce_p(code, y, x, mask, number) end
end)lua";
  return std::string(R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local code, mask = K.R.)lua") + code + R"lua(, K.dim_mask(p.dim, x._ndim)
  return function() K.reduce(code, y, x, mask) end
end)lua";
}

// prod's gradient, exact where x has zeros (PyTorch's rule; y / x would be 0 / 0): an element's
// gradient is the product of the others: y / x in a group without zeros; at the one zero of a group
// with exactly one, the product of the group's nonzero elements, and elsewhere in that group that
// product times the zero itself (0, but its derivative is right, so second order is exact there too);
// 0 in a group with two zeros or more (exact at first order; its second order is not). An inf or NaN
// beside a lone zero gets 0, which PyTorch also gives unless another element is inf or NaN (NaN there)
const char* const kProdGrad = R"lua(function(x, y, gy, p)
  local opts = {dim = p.dim, keepdim = p.keepdim}
  local function back(r) return mf.unreduce_like(r, x, p.dim, p.keepdim) end
  local zero = mf.eq(x, 0)
  local nonzero_x = mf.where(zero, 1, x)
  local zeros = back(mf.sum(zero, opts))
  local others = back(gy * mf.prod(nonzero_x, opts))
  local lone_zero = back(mf.sum(mf.where(zero, x, 0), opts))
  -- others / x is the product of the rest only for finite x: at an inf or NaN beside the zero the
  -- product of the others holds the zero (0, PyTorch's value), where the division gave NaN
  local one_zero = mf.where(zero, others, lone_zero * mf.where(mf.isfinite(x), others / nonzero_x, 0))
  return {mf.where(mf.eq(zeros, 0), others / nonzero_x, mf.where(mf.eq(zeros, 1), one_zero, 0))}
end)lua";

void register_reduce_ops() {
  struct ReduceDef {
    const char* name;
    const char* code;
    const char* doc;
    InferFn type;
    const char* grad;   // function(x, y, gy, p) -> {gx}
    const char* alias;  // TensorFlow's name, or nullptr
  };
  // max and min (values and indices over one dim) are in src/op/sort.cc
  static const ReduceDef defs[] = {
      {"sum", "SUM", "Sum over dims (all when none given); accumulates in float64 (floats keep their dtype) or int64 (integers and uint8 give int64, as in PyTorch). Float error before the final rounding: at most (min(n, 16384) / 32 + 6 + log2(n / 16384)) * 2^-53 * sum |x| for n contiguous elements, n * 2^-53 * sum |x| for n along an outer dim; the same bits for any thread count.", int64_accum_type, "function(x, y, gy, p) return {mf.unreduce_like(gy, x, p.dim, p.keepdim)} end", "reduce_sum"},
      {"mean", "MEAN", "Arithmetic mean over dims (all when none given); float input only, as in PyTorch.", float_type, "function(x, y, gy, p) return {mf.unreduce_like(gy, x, p.dim, p.keepdim) / mf.reduced_count(x, p.dim)} end", "reduce_mean"},
      {"prod", "PROD", "Product over dims (all when none given); integers and uint8 give int64, as in PyTorch.", int64_accum_type, kProdGrad, "reduce_prod"},
      {"argmax", "ARGMAX", "1-based index of the largest element over dims (row-major within them; the first NaN if any), int64.", int64_type, nullptr, nullptr},
      {"argmin", "ARGMIN", "1-based index of the smallest element over dims (row-major within them; the first NaN if any), int64.", int64_type, nullptr, nullptr},
  };
  for (const ReduceDef& r : defs) {
    OpDef& op = Registry::get()
        .add(r.name)
        .describe(r.doc)
        .inputs({"x"})
        .strided()
        .param(Field::int_list("dim", "", "Dims to reduce, 1-based (negative counts from the end); empty: all."))
        .param(Field::boolean("keepdim", false, "Keep reduced dims with size 1."))
        .infer_shape(reduce_shape)
        .infer_type(r.type)
        .lua_compute(MF_CPU, reduce_kernel(r.code))
        .gradient(r.grad ? r.grad : "");
    if (r.alias) op.alias(r.alias);
  }
}

}  // namespace mf
