// Indexing operators with PyTorch's semantics and Torch7's 1-based numbers: gather, scatter,
// scatter_add, index_add, masked_fill, masked_select, nonzero. All are out of place (a new tensor).
// Kernels: src/kernels/cpu/scatter.cc (masked_fill runs the where routine).
#include "registry.h"

namespace mf {

namespace {

// PyTorch's argument order x:gather(dim, index), x:scatter(dim, index, src), x:index_add(dim, index,
// src) beside the project's inputs-then-params order mf.gather(x, index[, dim]); a trailing table
// of named params works with either. A number second argument followed by exactly the remaining
// inputs is PyTorch's order (in the project's order the second argument is the index tensor).
const char* const kDimFirstAdapter = R"lua(
function(op, ...)
  local n, args, nin = select('#', ...), {...}, #op.inputs
  local p = {}
  local last = args[n]
  if n > 0 and type(last) == 'table' and not mf.is_tensor(last) and not mf.is_symbol(last) then
    for k, v in pairs(last) do p[k] = v end
    n = n - 1
  end
  local ins = {args[1]}
  if type(args[2]) == 'number' and n == nin + 1 then
    p.dim = args[2]
    for i = 2, nin do ins[i] = args[i + 1] end
  else
    for i = 2, nin do ins[i] = args[i] end
    if n > nin + 1 then
      mf._raise(('%s: too many arguments (%d); call it as %s(x, dim, %s) or mf.%s(x, %s, dim)'):format(op.name, n,
        op.name, table.concat(op.inputs, ', ', 2), op.name, table.concat(op.inputs, ', ', 2)))
    end
    if n == nin + 1 then p.dim = args[n] end
  end
  return ins, next(p) ~= nil and p or nil
end)lua";

void index_type_of(InferCtx& c, size_t i) {
  if (c.input(i).dtype_id != MF_INT64)
    fail(c.name(), ": index is ", dtype_name(c.input(i).dtype_id), "; expected int64 (1-based; convert with :long())");
}

// gather, scatter, scatter_add: x, index (x's rank), and for the scatters src (a 0-dim value, or
// a tensor no smaller than the index in any dim).
void gather_like_shape(InferCtx& c, bool has_src) {
  const mf_tensor &x = c.input(0), &idx = c.input(1);
  if (x.ndim == 0) fail(c.name(), ": x is a 0-dim tensor; expected at least one dim");
  int d = normalize_dim(c.name(), c.p.get_int("dim"), x.ndim);
  auto le = [](int64_t a, int64_t b) { return is_unknown(a) || is_unknown(b) || a <= b; };
  bool ok = idx.ndim == x.ndim;
  for (int k = 0; ok && k < x.ndim; ++k) ok = k == d || le(idx.shape[k], x.shape[k]);
  if (!ok)
    fail(c.name(), ": x is ", shape_str(x), ", index ", shape_str(idx), "; expected an index of x's rank (",
         x.ndim, ") no larger than x in every dim but dim ", d + 1);
  if (has_src) {
    const mf_tensor& src = c.input(2);
    bool sok = src.ndim == 0 || src.ndim == idx.ndim;
    for (int k = 0; sok && src.ndim && k < idx.ndim; ++k) sok = le(idx.shape[k], src.shape[k]);
    if (!sok)
      fail(c.name(), ": index is ", shape_str(idx), ", src ", shape_str(src),
           "; expected src to be a number (0-dim) or of the index's rank and no smaller than it in any dim");
    c.set_out(0, shape_of(x));
  } else {
    c.set_out(0, shape_of(idx));
  }
}

void gather_shape(InferCtx& c) { gather_like_shape(c, false); }
void scatter_shape(InferCtx& c) { gather_like_shape(c, true); }

void gather_type(InferCtx& c) {
  index_type_of(c, 1);
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void scatter_type(InferCtx& c) {
  index_type_of(c, 1);
  if (c.input(2).dtype_id != c.input(0).dtype_id)
    fail(c.name(), ": x is ", dtype_name(c.input(0).dtype_id), ", src ", dtype_name(c.input(2).dtype_id),
         "; expected one dtype");
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void index_add_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &idx = c.input(1), &src = c.input(2);
  if (x.ndim == 0) fail("index_add: x is a 0-dim tensor; expected at least one dim");
  int d = normalize_dim("index_add", c.p.get_int("dim"), x.ndim);
  bool ok = idx.ndim == 1 && src.ndim == x.ndim && dims_match(src.shape[d], idx.shape[0]);
  for (int k = 0; ok && k < x.ndim; ++k) ok = k == d || dims_match(src.shape[k], x.shape[k]);
  if (!ok)
    fail("index_add: x is ", shape_str(x), ", index ", shape_str(idx), ", src ", shape_str(src),
         "; expected a 1-D index and src of x's shape but along dim ", d + 1, ", where it has one slice per index");
  c.set_out(0, shape_of(x));
}

// mask (uint8) broadcasts to x: dims align from the last, each mask size equals x's or is 1
void check_mask_to(InferCtx& c, const mf_tensor& x, const mf_tensor& mask) {
  bool ok = mask.ndim <= x.ndim;
  for (int k = 1; ok && k <= mask.ndim; ++k) {
    int64_t m = mask.shape[mask.ndim - k], s = x.shape[x.ndim - k];
    ok = dims_match(m, s) || m == 1;
  }
  if (!ok)
    fail(c.name(), ": x is ", shape_str(x), ", mask ", shape_str(mask), "; the mask must broadcast to x (dims align ",
         "from the last; each mask size equals x's or is 1)");
}

void mask_type(InferCtx& c) {
  if (c.input(1).dtype_id != MF_UINT8)
    fail(c.name(), ": mask is ", dtype_name(c.input(1).dtype_id),
         "; expected uint8 (the result of a comparison such as x:gt(0))");
}

void masked_fill_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &value = c.input(2);
  check_mask_to(c, x, c.input(1));
  if (value.ndim != 0)
    fail("masked_fill: value is ", shape_str(value), "; expected a number or a 0-dim tensor");
  c.set_out(0, shape_of(x));
}

void masked_fill_type(InferCtx& c) {
  mask_type(c);
  if (c.input(2).dtype_id != c.input(0).dtype_id)
    fail("masked_fill: x is ", dtype_name(c.input(0).dtype_id), ", value ", dtype_name(c.input(2).dtype_id),
         "; expected one dtype");
  c.out[0].dtype_id = c.input(0).dtype_id;
}

int64_t given_count(InferCtx& c) {
  int64_t n = c.p.get_int("count");
  if (n < 0)
    fail(c.name(), ": count is not given; mf.", c.name(), " fills it in from the values (call it on tensors)");
  return n;
}

void masked_select_shape(InferCtx& c) {
  mask_type(c);  // before the count: a mask of another dtype is why the call syntax could not count
  broadcast_shapes("masked_select", c.in_shape(0), c.in_shape(1), "x", "mask");
  c.set_out(0, {given_count(c)});
}

void masked_select_type(InferCtx& c) {
  mask_type(c);
  c.out[0].dtype_id = c.input(0).dtype_id;
}

// The in-place forms (scatter_ ...): the rule of the op, then write_x (registry.h).
void scatter_inplace_shape(InferCtx& c) {
  scatter_shape(c);
  write_x(c);
}
void index_add_inplace_shape(InferCtx& c) {
  index_add_shape(c);
  write_x(c);
}
void masked_fill_inplace_shape(InferCtx& c) {
  masked_fill_shape(c);
  write_x(c);
}

void nonzero_shape(InferCtx& c) { c.set_out(0, {given_count(c), c.input(0).ndim}); }

// Gradient w.r.t. src of scatter and scatter_add: the gradient gathered at the index, placed at
// the start of each dim of src (src may be larger than the index); summed for a 0-dim src.
const char* const kScatterGradient = R"lua(
(function()
  local function pad_to(g, idx, src)
    for d = 1, src:dim() do
      if idx:size(d) ~= src:size(d) then
        local like = src
        for k = d + 1, src:dim() do
          if idx:size(k) ~= src:size(k) then like = mf.narrow(like, k, 1, idx:size(k)) end
        end
        g = mf.pad_like(g, like, d, 1, 1)
      end
    end
    return g
  end
  return function(x, idx, src, y, gy, p, add)
    local gs = mf.gather(gy, idx, p.dim)
    gs = src:dim() == 0 and mf.sum(gs) or pad_to(gs, idx, src)
    return {add and gy or mf.scatter(gy, idx, 0, p.dim), nil, gs}
  end
end)())lua";

// Call syntax of masked_select and nonzero: the output size is the number of selected elements,
// which no shape rule can see (rules read shapes, not values). The adapter counts them first with
// registered ops (ne, expand, sum) and passes the count as a param; the shape rule sizes the
// output from it and the kernel checks it before writing. A graph plans every size before it runs,
// so on symbols the adapter refuses at graph build.
const char* const kMaskedSelectAdapter = R"lua(
function(op, x, mask, opts, extra)
  if (opts ~= nil and type(opts) ~= 'table') or extra ~= nil then
    mf._raise('masked_select: takes x and mask (and an optional table of params); got more arguments')
  end
  if mf.is_symbol(x) or mf.is_symbol(mask) then
    mf._raise('masked_select: its output size is the number of nonzero mask elements, known only from the values, '
      .. 'and a graph plans every size when it is bound, before it runs; call masked_select on tensors (eagerly), '
      .. 'or keep the shape in a graph with mf.where(mask, x, 0)')
  end
  local p = {}
  if type(opts) == 'table' then for k, v in pairs(opts) do p[k] = v end end
  if p.count == nil and mf.is_tensor(x) and mf.is_tensor(mask) and mask:dtype() == 'uint8' then
    local nx, nm = x:dim(), mask:dim()
    local nd, shape = math.max(nx, nm), {}
    for k = 1, nd do  -- the broadcast shape, from the last dim; nil when they do not broadcast
      local a, b = k <= nx and x:size(nx - k + 1) or 1, k <= nm and mask:size(nm - k + 1) or 1
      if a ~= b and a ~= 1 and b ~= 1 then shape = nil break end
      shape[nd - k + 1] = a == 1 and b or a
    end
    if shape then p.count = mf.expand(mf.ne(mask, 0), shape):sum():item() end
  end
  return {x, mask}, p
end)lua";

const char* const kNonzeroAdapter = R"lua(
function(op, x, opts, extra)
  if (opts ~= nil and type(opts) ~= 'table') or extra ~= nil then
    mf._raise('nonzero: takes x (and an optional table of params); got more arguments')
  end
  if mf.is_symbol(x) then
    mf._raise('nonzero: its output size is the number of nonzero elements, known only from the values, and a graph '
      .. 'plans every size when it is bound, before it runs; call nonzero on tensors (eagerly)')
  end
  local p = {}
  if type(opts) == 'table' then for k, v in pairs(opts) do p[k] = v end end
  if p.count == nil and mf.is_tensor(x) then p.count = mf.ne(x, 0):sum():item() end
  return {x}, p
end)lua";

Field dim_field() {
  return Field::integer("dim", 1, "Dim the index addresses, 1-based (negative counts from the end).");
}

Field count_field(const char* what) {
  return Field::integer("count", -1, std::string("Number of ") + what +
                                         "; the call syntax counts them from the values (leave it out).")
      .range(-1, 1e15);
}

}  // namespace

void register_index_ops() {
  MF_REGISTER_OP(gather)
      .describe("out[i][j] = x[index[i][j]][j] along dim 1 (x[i][index[i][j]] along dim 2, and so on): the values of "
                "x at the 1-based int64 index, which has x's rank and gives the output's shape. Spellings: "
                "x:gather(dim, index) (PyTorch's order), mf.gather(x, index, dim), mf.gather(x, index, {dim = d}).")
      .inputs({"x", "index"})
      .strided()
      .param(dim_field())
      .lua_adapter(kDimFirstAdapter)
      .infer_shape(gather_shape)
      .infer_type(gather_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.gather(y, x, idx, dim) end
end)lua")
      .gradient("function(x, idx, y, gy, p) return {mf.scatter_add(mf.zeros_like(x), idx, gy, p.dim)} end");

  // scatter and scatter_add, and their in-place forms scatter_ and scatter_add_: one rule, but for
  // whether src replaces or adds (the kernel's add flag)
  struct Scatter {
    const char *name, *doc, *inplace_doc;
    bool add;
  };
  static const Scatter scatters[] = {
      {"scatter",
       "A copy of x with src written at the 1-based int64 index along dim: out[index[i][j]][j] = src[i][j] along dim "
       "1. src is a tensor no smaller than the index, or a number. Where the index repeats a destination the last "
       "write in the index's row-major order wins (PyTorch leaves it unspecified). Spellings: x:scatter(dim, index, "
       "src), mf.scatter(x, index, src, dim).",
       "scatter written into x in place; returns x. Spellings: x:scatter_(dim, index, src), "
       "mf.scatter_(x, index, src, dim). Not differentiable: it writes x (scatter is).",
       false},
      {"scatter_add",
       "A copy of x with src added at the 1-based int64 index along dim: out[index[i][j]][j] += src[i][j] along dim "
       "1; repeated destinations accumulate, in the index's row-major order. src is a tensor no smaller than the "
       "index, or a number. Spellings: x:scatter_add(dim, index, src), mf.scatter_add(x, index, src, dim).",
       "scatter_add written into x in place; returns x. Spellings: x:scatter_add_(dim, index, src), "
       "mf.scatter_add_(x, index, src, dim). Not differentiable: it writes x (scatter_add is).",
       true},
  };
  for (const Scatter& s : scatters) {
    const std::string add = s.add ? "1" : "0";  // the kernel's flag
    Registry::get()
        .add(s.name)
        .describe(s.doc)
        .inputs({"x", "index", "src"})
        .strided()
        .mask_input(2)  // the index never decides a number src's dtype, nor is it cast with x
        .param(dim_field())
        .lua_adapter(kDimFirstAdapter)
        .infer_shape(scatter_shape)
        .infer_type(scatter_type)
        .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.scatter(y, x, idx, src, dim, )lua" + add + R"lua() end
end)lua")
        .gradient(std::string("function(x, idx, src, y, gy, p) return ") + kScatterGradient +
                  "(x, idx, src, y, gy, p, " + (s.add ? "true" : "false") + ") end");
    // in place: x is written and returned (no gradient: it writes x; the form without _ has one)
    Registry::get()
        .add(std::string(s.name) + "_")
        .in_place_of(s.name)
        .describe(s.inplace_doc)
        .inputs({"x", "index", "src"})
        .mask_input(2)
        .param(dim_field())
        .lua_adapter(kDimFirstAdapter)
        .view()
        .writes()
        .infer_shape(scatter_inplace_shape)
        .infer_type(scatter_type)
        .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.scatter(x, x, idx, src, dim, )lua" + add + R"lua(); K.alias(y, x, 0) end
end)lua");
  }

  MF_REGISTER_OP(index_add)
      .describe("A copy of x with slice j of src (along dim) added at slice index[j], a 1-D 1-based int64 index; "
                "repeated indices accumulate, in index order. src has x's shape but along dim, where it has one "
                "slice per index. Spellings: x:index_add(dim, index, src), mf.index_add(x, index, src, dim).")
      .inputs({"x", "index", "src"})
      .strided()
      .mask_input(2)
      .param(dim_field())
      .lua_adapter(kDimFirstAdapter)
      .infer_shape(index_add_shape)
      .infer_type(scatter_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.index_add(y, x, idx, src, dim) end
end)lua")
      .gradient("function(x, idx, src, y, gy, p) return {gy, nil, mf.index_select(gy, idx, p.dim)} end");

  MF_REGISTER_OP(masked_fill)
      .describe("A copy of x with value wherever the uint8 mask (broadcast to x) is nonzero. value is a number "
                "(it takes x's dtype) or a 0-dim tensor. Spellings: x:masked_fill(mask, value), "
                "mf.masked_fill(x, mask, value).")
      .inputs({"x", "mask", "value"})
      .strided()
      .mask_input(2)
      .infer_shape(masked_fill_shape)
      .infer_type(masked_fill_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, mask, value = outs[1], ins[1], ins[2], ins[3]
  return function() K.where(y, mask, value, x) end
end)lua")
      .gradient(R"lua(
function(x, mask, value, y, gy)
  local gx = mf.masked_fill(gy, mask, 0)
  return {gx, nil, mf.sum(gy - gx)}
end)lua");

  // In-place forms, PyTorch's trailing underscore: x is written and returned (no gradient: they
  // write x; the forms without _ have one).
  MF_REGISTER_OP(index_add_)
      .in_place_of("index_add")
      .describe("index_add written into x in place; returns x. Spellings: x:index_add_(dim, index, src), "
                "mf.index_add_(x, index, src, dim), Torch7's x:indexAdd(dim, index, src). Not differentiable: it "
                "writes x (index_add is).")
      .alias("indexAdd")  // Torch7's, which writes x too
      .inputs({"x", "index", "src"})
      .mask_input(2)
      .param(dim_field())
      .lua_adapter(kDimFirstAdapter)
      .view()
      .writes()
      .infer_shape(index_add_inplace_shape)
      .infer_type(scatter_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x.ndim)
  return function() K.index_add(x, x, idx, src, dim); K.alias(y, x, 0) end
end)lua");

  MF_REGISTER_OP(masked_fill_)
      .in_place_of("masked_fill")
      .describe("masked_fill written into x in place; returns x. Spellings: x:masked_fill_(mask, value), "
                "mf.masked_fill_(x, mask, value), Torch7's x:maskedFill(mask, value). Not differentiable: it writes x "
                "(masked_fill is).")
      .alias("maskedFill")  // Torch7's, which writes x too
      .inputs({"x", "mask", "value"})
      .mask_input(2)
      .view()
      .writes()
      .infer_shape(masked_fill_inplace_shape)
      .infer_type(masked_fill_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, mask, value = outs[1], ins[1], ins[2], ins[3]
  return function() K.where(x, mask, value, x); K.alias(y, x, 0) end
end)lua");

  MF_REGISTER_OP(masked_select)
      .describe("The elements of x where the uint8 mask is nonzero, as a 1-D tensor in row-major order (x and mask "
                "broadcast together). Eager only: the output size depends on the mask's values, so mf.masked_select "
                "counts them first (with ne and sum) and passes the count; on graph symbols it is an error when the "
                "graph is built. Differentiable in eager autograd (x's gradient is gy at the selected elements, 0 elsewhere, "
                "summed where x was broadcast). Spellings: x:masked_select(mask), "
                "mf.masked_select(x, mask), Torch7's x:maskedSelect(mask).")
      .alias("maskedSelect")
      .inputs({"x", "mask"})
      .strided()
      .mask_input(2)
      .param(count_field("selected elements"))
      .lua_adapter(kMaskedSelectAdapter)
      .infer_shape(masked_select_shape)
      .infer_type(masked_select_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, mask = outs[1], ins[1], ins[2]
  return function() K.masked_select(y, x, mask) end
end)lua")
      // eager only (the adapter refuses symbols), so the rule sees tensors: gy goes back to the
      // selected positions of the broadcast shape, in row-major order (nonzero's order), by a
      // scatter_add into a flat zero tensor, then sums over the dims where x was broadcast
      .gradient(R"lua(
function(x, mask, y, gy, p)
  local zb = mf.zeros_like(x) + mf.zeros_like(mask):type(x:dtype())
  local shape, n = zb:size(), zb:numel()
  local pos = mf.nonzero(mf.ne(mf.expand(mask, shape):contiguous():reshape(n), 0)):reshape(gy:numel())
  local gx = mf.scatter_add(zb:reshape(n), pos, gy, 1):reshape(shape)
  return {mf.sum_to(gx, x), nil}
end)lua");

  MF_REGISTER_OP(nonzero)
      .describe("The 1-based coordinates of x's nonzero elements (NaN counts as nonzero): an int64 N x ndim "
                "tensor, one row per element in row-major order (Torch7's and PyTorch's nonzero, 1-based). Eager "
                "only: N depends on the values, so mf.nonzero counts them first (with ne and sum) and passes the "
                "count; on graph symbols it is an error when the graph is built. Spellings: x:nonzero(), "
                "mf.nonzero(x).")
      .inputs({"x"})
      .strided()
      .param(count_field("nonzero elements"))
      .lua_adapter(kNonzeroAdapter)
      .infer_shape(nonzero_shape)
      .infer_type(int64_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.nonzero(y, x) end
end)lua");
}

}  // namespace mf
