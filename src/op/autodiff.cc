// Operators that gradient rules are built from: they take a "like" input whose shape is known only
// when the graph is bound, so gradients stay correct whatever the feed shapes turn out to be.
#include "registry.h"

namespace mf {

namespace {

void first_type(InferCtx& c) { c.out[0].dtype_id = c.input(0).dtype_id; }

void sum_to_shape(InferCtx& c) {
  Shape g = c.in_shape(0), like = c.in_shape(1);
  Shape b = broadcast_shapes("sum_to", g, like, "x", "like");
  if (!shapes_match(b, g)) fail("sum_to: x is ", shape_str(g), ", like is ", shape_str(like), "; like must broadcast to x");
  // nothing to sum when the shapes agree (the common case once batch sizes are known): a view
  if (g == like) c.set_view(0, like, strides_of(c.input(0)), 0);
  else c.set_out(0, like);
}

void broadcast_like_shape(InferCtx& c) {
  const mf_tensor& g = c.input(0);
  Shape like = c.in_shape(1);
  Shape b = broadcast_shapes("broadcast_like", shape_of(g), like, "x", "like");
  if (!shapes_match(b, like))
    fail("broadcast_like: x is ", shape_str(g), ", like is ", shape_str(like), "; x must broadcast to like");
  c.set_view(0, like, broadcast_strides(g, like), 0);
}

// g is the result of a reduction of like over dim (keepdim or not): put the reduced dims back
// as size 1 and broadcast them (a view with stride 0).
void unreduce_like_shape(InferCtx& c) {
  const mf_tensor& g = c.input(0);
  const mf_tensor& like = c.input(1);
  const auto& dims = c.p.get_list("dim");
  bool keep = c.p.get_bool("keepdim");
  uint32_t mask = 0;
  if (dims.empty()) mask = like.ndim ? (1u << like.ndim) - 1 : 0;
  for (int64_t d : dims) mask |= 1u << normalize_dim("unreduce_like", d, like.ndim);
  Shape st(size_t(like.ndim), 0);
  int k = 0;
  for (int d = 0; d < like.ndim; ++d) {
    bool reduced = mask & (1u << d);
    if (reduced && !keep) continue;
    if (k >= g.ndim) fail("unreduce_like: x is ", shape_str(g), "; does not match a reduction of ", shape_str(like));
    if (!reduced && !dims_match(g.shape[k], like.shape[d]))
      fail("unreduce_like: x is ", shape_str(g), "; does not match a reduction of ", shape_str(like));
    st[size_t(d)] = reduced ? 0 : g.strides[k];
    ++k;
  }
  if (k != g.ndim) fail("unreduce_like: x is ", shape_str(g), "; does not match a reduction of ", shape_str(like));
  c.set_view(0, shape_of(like), st, 0);
}

void reshape_as_shape(InferCtx& c) {
  const mf_tensor& g = c.input(0);
  Shape like = c.in_shape(1);
  // (at graph build, counts with unknown sizes are not compared)
  if (!has_unknown(g) && !has_unknown(c.input(1)) && checked_numel(like, "reshape_as") != g.count)
    fail("reshape_as: x is ", shape_str(g), ", like is ", shape_str(like), "; element counts differ");
  if (g.is_contig) c.set_view(0, like, contiguous_strides(like), 0);
  else c.set_out(0, like);
}

void pad_like_shape(InferCtx& c) {
  const mf_tensor& g = c.input(0);
  const mf_tensor& like = c.input(1);
  int d = normalize_dim("pad_like", c.p.get_int("dim"), like.ndim);
  int64_t start = c.p.get_int("start"), step = c.p.get_int("step"), n = like.shape[d];
  if (start < 0) start += n + 1;
  bool ok = g.ndim == like.ndim && start >= 1;
  for (int k = 0; ok && k < like.ndim; ++k) ok = k == d || dims_match(g.shape[k], like.shape[k]);
  if (ok && g.shape[d] > 0 && !is_unknown(g.shape[d]) && !is_unknown(n)) ok = start + (g.shape[d] - 1) * step <= n;
  if (!ok)
    fail("pad_like: x is ", shape_str(g), ", like is ", shape_str(like), "; x must fit into like along dim ", d + 1,
         " from ", c.p.get_int("start"), " by ", step);
  c.set_out(0, shape_of(like));
}

void reduced_count_shape(InferCtx& c) { c.set_out(0, {}); }

}  // namespace

void register_autodiff_ops() {
  MF_REGISTER_OP(sum_to)
      .describe("Sums x over the dims where it was broadcast from like's shape (the gradient of broadcasting).")
      .inputs({"x", "like"})
      .lends_shape(2)
      .view()
      .identity_if_same_shape()
      .infer_shape(sum_to_shape)
      .infer_type(first_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, g = outs[1], ins[1]
  if y._store == nil then return function() K.alias(y, g, 0) end end
  return function() K.sum_to(y, g) end
end)lua")
      .gradient(R"lua(function(x, like, y, gy) return {mf.broadcast_like(gy, x)} end)lua");

  MF_REGISTER_OP(broadcast_like)
      .describe("x broadcast (NumPy rules) to like's shape, as a view.")
      .inputs({"x", "like"})
      .lends_shape(2)
      .view()
      .identity_if_same_shape()
      .infer_shape(broadcast_like_shape)
      .infer_type(first_type)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient(R"lua(function(x, like, y, gy) return {mf.sum_to(gy, x)} end)lua");

  MF_REGISTER_OP(unreduce_like)
      .describe("Undoes a reduction's shape: x (like reduced over dim) broadcast back to like's shape, as a view.")
      .inputs({"x", "like"})
      .lends_shape(2)
      .strided()
      .param(Field::int_list("dim", "", "The reduction's dims, 1-based; empty: all."))
      .param(Field::boolean("keepdim", false, "Whether the reduction kept its dims."))
      .view()
      .infer_shape(unreduce_like_shape)
      .infer_type(first_type)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient(R"lua(function(x, like, y, gy, p) return {mf.sum(gy, p.dim, p.keepdim)} end)lua");

  MF_REGISTER_OP(reshape_as)
      .describe("x with like's shape (same element count); a view when x is contiguous.")
      .inputs({"x", "like"})
      .lends_shape(2)
      .view()
      .infer_shape(reshape_as_shape)
      .infer_type(first_type)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient(R"lua(function(x, like, y, gy) return {mf.reshape_as(gy, x)} end)lua");

  MF_REGISTER_OP(pad_like)
      .describe("Zeros of like's shape with x written at start, start+step, ... along dim (the gradient of narrow/slice/select).")
      .inputs({"x", "like"})
      .lends_shape(2)
      .strided()
      .param(Field::integer("dim", 1, "Dim x is placed along, 1-based."))
      .param(Field::integer("start", 1, "First index, 1-based (negative counts from the end)."))
      .param(Field::integer("step", 1, "Stride between indices.").range(1, 1e15))
      .infer_shape(pad_like_shape)
      .infer_type(first_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, like = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, y._ndim)
  local start = p.start < 0 and p.start + like._shape[dim] or p.start - 1
  local step = p.step
  return function() K.pad_like(y, x, dim, start, step) end
end)lua")
      // pad_like is linear in x: its gradient picks x's positions out of gy (narrow, or slice when
      // step > 1), so grad-of-grad works through narrow, slice and select; like lends only its shape
      .gradient(R"lua(
function(x, like, y, gy, p)
  local n = like:dim()
  local d = p.dim < 0 and p.dim + n + 1 or p.dim
  local start = p.start < 0 and p.start + like:size(d) + 1 or p.start
  local len = x:size(d)
  if p.step == 1 then return {mf.narrow(gy, d, start, len)} end
  return {mf.slice(gy, d, start, start + (len - 1) * p.step, p.step)}
end)lua");

  MF_REGISTER_OP(reduced_count)
      .describe("Number of elements a reduction of x over dim combines, as a 0-dim tensor of x's dtype.")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .param(Field::int_list("dim", "", "The reduction's dims, 1-based; empty: all."))
      .infer_shape(reduced_count_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local mask, n = K.dim_mask(p.dim, x._ndim), 1
  for d = 0, x._ndim - 1 do
    if math.floor(mask / 2 ^ d) % 2 == 1 then n = n * tonumber(x._shape[d]) end
  end
  return function() K.fill(y, n) end
end)lua");

  MF_REGISTER_OP(ones_like)
      .describe("Ones with x's shape and dtype (the seed of a gradient).")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .infer_shape(same_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, fill_kernel("1"));

  MF_REGISTER_OP(zeros_like)
      .describe("Zeros with x's shape and dtype.")
      .inputs({"x"})
      .lends_shape(1)
      .strided()
      .infer_shape(same_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, fill_kernel("0"));
}

}  // namespace mf
