// Values and 1-based indices along a dim (max / min over one dim, sort, topk, kthvalue), and running
// sums and products (cumsum, cumprod). Kernels: src/kernels/cpu/sort.cc.
#include <cstdio>
#include <string>

#include "reduce.h"
#include "registry.h"

namespace mf {

namespace {

// A dim of x, 1-based (negative from the end); a 0-dim x takes 1 or -1, as PyTorch takes 0 and -1.
int dim_of(const char* op, int64_t d, const mf_tensor& x) {
  if (x.ndim == 0 && (d == 1 || d == -1)) return 0;
  return normalize_dim(op, d, x.ndim);
}

// x's shape with dim d of size `along`, or dropped (keep false).
Shape along_shape(const mf_tensor& x, int d, int64_t along, bool keep) {
  Shape s;
  for (int k = 0; k < x.ndim; ++k) {
    if (k != d) s.push_back(x.shape[k]);
    else if (keep) s.push_back(along);
  }
  return s;
}

int64_t size_along(const mf_tensor& x, int d) { return x.ndim ? x.shape[d] : 1; }

// max / min: one dim gives values and indices along it; no dim (all) or several give the values only.
void extreme_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto& dims = c.p.get_list("dim");
  bool keep = c.p.get_bool("keepdim");
  if (dims.size() == 1) {
    int d = dim_of(c.name(), dims[0], x);
    if (size_along(x, d) == 0)
      fail(c.name(), ": cannot reduce over dim ", d + 1, " of size 0 (x is ", shape_str(x), ")");
    Shape s = along_shape(x, d, 1, keep);
    c.set_out(0, s);
    c.set_out(1, s);
    return;
  }
  reduce_out_shape(c, false);  // all dims or several: the reductions' rule (reduce.h)
}

// max / min return the indices too over exactly one dim
int extreme_outputs(const ParamValues& p) { return p.get_list("dim").size() == 1 ? 2 : 1; }

// values keep x's dtype; indices (output 2, when there is one) are int64
void values_indices_type(InferCtx& c) {
  c.out[0].dtype_id = c.input(0).dtype_id;
  if (c.out.size() > 1) c.out[1].dtype_id = MF_INT64;
}

void sort_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  dim_of(c.name(), c.p.get_int("dim"), x);
  c.set_out(0, shape_of(x));
  c.set_out(1, shape_of(x));
}

void topk_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = dim_of(c.name(), c.p.get_int("dim"), x);
  int64_t k = c.p.get_int("k"), n = size_along(x, d);
  if (k < 0 || k > n)
    fail("topk: k is ", k, "; expected 0..", n, " (the size of dim ", d + 1, " of x, ", shape_str(x), ")");
  Shape s = x.ndim ? along_shape(x, d, k, true) : k ? Shape{} : Shape{0};  // a 0-dim x is one element
  c.set_out(0, s);
  c.set_out(1, s);
}

void kthvalue_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = dim_of(c.name(), c.p.get_int("dim"), x);
  int64_t k = c.p.get_int("k"), n = size_along(x, d);
  if (k < 1 || k > n)
    fail("kthvalue: k is ", k, "; expected 1..", n, " (the size of dim ", d + 1, " of x, ", shape_str(x), ")");
  Shape s = along_shape(x, d, 1, c.p.get_bool("keepdim"));
  c.set_out(0, s);
  c.set_out(1, s);
}

void cumulate_shape(InferCtx& c) {
  dim_of(c.name(), c.p.get_int("dim"), c.input(0));
  c.set_out(0, c.in_shape(0));
}

// PyTorch's rule: integer (and uint8) running sums and products are int64; floats keep their dtype.
void cumulate_type(InferCtx& c) {
  int dt = c.input(0).dtype_id;
  c.out[0].dtype_id = dtype_is_float(dt) ? dt : int(MF_INT64);
}

void cumprod_grad_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &gy = c.input(1);
  dim_of(c.name(), c.p.get_int("dim"), x);
  bool same = x.ndim == gy.ndim;
  for (int d = 0; d < x.ndim && same; ++d) same = dims_match(x.shape[d], gy.shape[d]);
  if (!same)
    fail("cumprod_grad: x is ", shape_str(x), ", gy ", shape_str(gy), "; expected one shape");
  if (gy.dtype_id != x.dtype_id)
    fail("cumprod_grad: x is ", dtype_name(x.dtype_id), ", gy ", dtype_name(gy.dtype_id), "; expected one dtype");
  c.set_out(0, c.in_shape(0));
}

// The gradient of picking x's elements at 1-based indices i along dim (sort, topk, kthvalue, max / min
// over one dim): g added at i into zeros of x's shape, by the public scatter_add. A 0-dim x, which
// scatter_add refuses, is one element picked once (or never: topk with k = 0), so it gets g's sum.
// The rules are function(x, y, gy, p) with pick a local of theirs: a rule is one Lua chunk.
std::string pick_gradient(const char* body) {
  return std::string("function(x, y, gy, p)") + R"lua(
  local function pick(i, g, dim)
    if x:dim() == 0 then return mf.sum(g) end
    return mf.scatter_add(mf.zeros_like(x), i, g, dim)
  end
)lua" + body + "\nend";
}

}  // namespace

void register_sort_ops() {
  // max and min: over one dim the gradient goes to the index they return (PyTorch's rule for
  // max(dim)); over all dims or several, to every element equal to the extreme, shared evenly, and a
  // NaN extreme shares it among the NaNs (PyTorch's evenly_distribute_backward)
  static const char* kExtremeGrad = R"lua(
  if #p.dim == 1 then
    local _, i = mf.%s(x, p.dim, true)
    return {pick(i, mf.reshape_as(gy, i), p.dim[1])}
  end
  local yu = mf.unreduce_like(y, x, p.dim, p.keepdim)
  local m = mf.cast(mf.eq(x, yu) + mf.ne(x, x) * mf.ne(yu, yu), x:dtype())
  local share = mf.unreduce_like(gy, x, p.dim, p.keepdim) / mf.unreduce_like(mf.sum(m, p.dim, true), x, p.dim, true)
  return {m * share})lua";
  static const char* kExtremeKernel = R"lua(
function(ins, outs, p, K)
  local y, i, x = outs[1], outs[2], ins[1]
  if i then  -- one dim: values and indices in one pass
    local dim, is_min = K.dim0(p.dim[1], x._ndim), %d
    return function() K.max_dim(y, i, x, dim, is_min) end
  end
  local code, mask = K.R.%s, K.dim_mask(p.dim, x._ndim)
  return function() K.reduce(code, y, x, mask) end
end)lua";
  // the default call syntax (x, dim, keepdim, {named params}), and a clear word for max(a, b), which
  // in PyTorch is the elementwise maximum. Straight-line, no loop over the arguments, and the params
  // table it makes from positional values is exact (holds declared names only: ops.lua's fast_walk
  // then skips its count of the keys): a loop of one turn per x:max(2) and that count, run from a
  // caller LuaJIT was not compiling, aborted root traces on the way to a blacklist (test_jit_paths).
  static const char* kExtremeAdapter = R"lua(
function(op, x, ...)
  local n = select('#', ...)
  local a, b = ...
  if mf.is_tensor(a) or mf.is_symbol(a) or (type(a) == 'table' and a._data ~= nil) then
    mf._raise(op.name .. ': the second argument is a tensor; the elementwise %s of two tensors is '
      .. 'mf.%s(a, b) (cmax or cmin in Torch7)')
  end
  local named
  if n >= 1 then  -- a trailing {name = value} table of params
    local last = select(n, ...)
    if type(last) == 'table' and type(next(last)) == 'string' then named, n = last, n - 1 end
  end
  for k = 3, n do  -- (entered only past two positional values) trailing nils are left out, as before
    if select(k, ...) ~= nil then
      mf._raise(op.name .. ': too many arguments (' .. (select('#', ...) + 1) .. '); it takes 1 input and params dim, keepdim')
    end
  end
  local p
  if n >= 1 and a ~= nil then p = {dim = a} end
  if n >= 2 and b ~= nil then
    p = p or {}
    p.keepdim = b
  end
  if not named then return {x}, p, true end
  p = p or {}
  for name, val in pairs(named) do p[name] = val end
  return {x}, p, false
end)lua";
  struct Extreme {
    const char *name, *code, *doc, *alias;
    int is_min;
  };
  static const Extreme extremes[] = {
      {"max", "MAX",
       "Largest element over dims; over exactly one dim (x:max(2)) it returns the values and their 1-based int64 "
       "indices along that dim (the first of equal values; a NaN wins, with its first index), as Torch7 and "
       "PyTorch; with no dim (all) or several it returns the values only. The elementwise maximum of two tensors "
       "is mf.maximum.",
       "reduce_max", 0},
      {"min", "MIN",
       "Smallest element over dims; over exactly one dim (x:min(2)) it returns the values and their 1-based int64 "
       "indices along that dim (the first of equal values; a NaN wins, with its first index), as Torch7 and "
       "PyTorch; with no dim (all) or several it returns the values only. The elementwise minimum of two tensors "
       "is mf.minimum.",
       "reduce_min", 1},
  };
  for (const Extreme& e : extremes) {
    char grad[1200], kernel[600], adapter[2048];
    const char* full = e.is_min ? "minimum" : "maximum";
    std::snprintf(adapter, sizeof adapter, kExtremeAdapter, full, full);
    std::snprintf(grad, sizeof grad, kExtremeGrad, e.name);  // the rule's body, after pick
    std::snprintf(kernel, sizeof kernel, kExtremeKernel, e.is_min, e.code);
    Registry::get()
        .add(e.name)
        .describe(e.doc)
        .inputs({"x"})
        .strided()
        .param(Field::int_list("dim", "", "Dims to reduce, 1-based (negative counts from the end); empty: all. "
                                          "Exactly one dim also returns the indices."))
        .param(Field::boolean("keepdim", false, "Keep reduced dims with size 1."))
        .lua_adapter(adapter)
        .outputs(extreme_outputs)
        .infer_shape(extreme_shape)
        .infer_type(values_indices_type)
        .lua_compute(MF_CPU, kernel)
        .gradient(pick_gradient(grad))
        .alias(e.alias);
  }

  MF_REGISTER_OP(sort)
      .describe("The elements of x along dim in ascending (or descending) order, and their 1-based int64 indices "
                "along dim. Stable: equal values keep their order. NaN sorts above every number: last ascending, "
                "first descending, as PyTorch.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", -1, "Dim to sort along, 1-based (negative counts from the end)."))
      .param(Field::boolean("descending", false, "Largest first."))
      .outputs(2)
      .infer_shape(sort_shape)
      .infer_type(values_indices_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, i, x = outs[1], outs[2], ins[1]
  local dim, desc = K.dim0(p.dim, x._ndim), p.descending and 1 or 0
  return function() K.sort(y, i, x, dim, desc) end
end)lua")
      .gradient(pick_gradient(R"lua(
  local _, i = mf.sort(x, p.dim, p.descending)
  return {pick(i, gy, p.dim)})lua"));

  MF_REGISTER_OP(topk)
      .describe("The k largest (or smallest) elements of x along dim and their 1-based int64 indices, largest "
                "first (smallest first) when sorted, else in their order along dim. Equal values: the earlier "
                "position first; NaN counts as the largest.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("k", 1, "How many elements, 0 to the size of dim.").mandatory())
      .param(Field::integer("dim", -1, "Dim to select along, 1-based (negative counts from the end)."))
      .param(Field::boolean("largest", true, "The largest elements; false: the smallest."))
      .param(Field::boolean("sorted", true, "In order of value; false: in their order along dim."))
      .outputs(2)
      .infer_shape(topk_shape)
      .infer_type(values_indices_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, i, x = outs[1], outs[2], ins[1]
  local dim, k, largest, sorted = K.dim0(p.dim, x._ndim), p.k, p.largest and 1 or 0, p.sorted and 1 or 0
  return function() K.topk(y, i, x, dim, k, largest, sorted) end
end)lua")
      .gradient(pick_gradient(R"lua(
  local _, i = mf.topk(x, p.k, p.dim, p.largest, p.sorted)
  return {pick(i, gy, p.dim)})lua"));

  MF_REGISTER_OP(kthvalue)
      .describe("The k-th smallest element of x along dim and its 1-based int64 index. Equal values count in "
                "their order along dim (the index a stable sort gives them); NaN counts as the largest.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("k", 1, "Which element, 1 (the smallest) to the size of dim.").mandatory())
      .param(Field::integer("dim", -1, "Dim to select along, 1-based (negative counts from the end)."))
      .param(Field::boolean("keepdim", false, "Keep dim with size 1."))
      .outputs(2)
      .infer_shape(kthvalue_shape)
      .infer_type(values_indices_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, i, x = outs[1], outs[2], ins[1]
  local dim, k = K.dim0(p.dim, x._ndim), p.k
  return function() K.kthvalue(y, i, x, dim, k) end
end)lua")
      .gradient(pick_gradient(R"lua(
  local _, i = mf.kthvalue(x, p.k, p.dim, true)
  return {pick(i, mf.reshape_as(gy, i), p.dim)})lua"));

  MF_REGISTER_OP(cumsum)
      .describe("Running sum along dim: y[j] = x[1] + ... + x[j] (reverse: x[j] + ... + x[n]). Integers and "
                "uint8 give int64, as in PyTorch; floats accumulate in float64 and keep their dtype.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", 1, "Dim to accumulate along, 1-based (negative counts from the end).").mandatory())
      .param(Field::boolean("reverse", false, "Accumulate from the end (TensorFlow's reverse)."))
      .infer_shape(cumulate_shape)
      .infer_type(cumulate_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local dim, rev = K.dim0(p.dim, x._ndim), p.reverse and 1 or 0
  return function() K.cumulate(y, x, dim, 0, rev) end
end)lua")
      .gradient("function(x, y, gy, p) return {mf.cumsum(gy, p.dim, not p.reverse)} end");

  MF_REGISTER_OP(cumprod)
      .describe("Running product along dim: y[j] = x[1] * ... * x[j] (reverse: x[j] * ... * x[n]). Integers and "
                "uint8 give int64, as in PyTorch. Its gradient is exact where x holds zeros; it is differentiable once "
                "only (its gradient, cumprod_grad, has none).")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", 1, "Dim to accumulate along, 1-based (negative counts from the end).").mandatory())
      .param(Field::boolean("reverse", false, "Accumulate from the end (TensorFlow's reverse)."))
      .infer_shape(cumulate_shape)
      .infer_type(cumulate_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local dim, rev = K.dim0(p.dim, x._ndim), p.reverse and 1 or 0
  return function() K.cumulate(y, x, dim, 1, rev) end
end)lua")
      .gradient("function(x, y, gy, p) return {mf.cumprod_grad(x, gy, p.dim, p.reverse)} end");

  MF_REGISTER_OP(cumprod_grad)
      .describe("The gradient of cumprod(x, dim, reverse) for the output gradient gy, without division, so exact "
                "where x holds zeros. Has no gradient itself (cumprod's second derivative is not supported).")
      .gradient_of("cumprod")
      .inputs({"x", "gy"})
      .strided()
      .param(Field::integer("dim", 1, "The dim cumprod accumulated along, 1-based.").mandatory())
      .param(Field::boolean("reverse", false, "cumprod accumulated from the end."))
      .infer_shape(cumprod_grad_shape)
      .infer_type(float_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local gx, x, gy = outs[1], ins[1], ins[2]
  local dim, rev = K.dim0(p.dim, x._ndim), p.reverse and 1 or 0
  return function() K.cumprod_grad(gx, x, gy, dim, rev) end
end)lua");
}

}  // namespace mf
