// Indexing operators with PyTorch's semantics and Torch7's 1-based numbers: gather, scatter,
// scatter_add, index_add, masked_fill, masked_select, nonzero. All are out of place (a new tensor).
// Kernels: src/kernels/cpu/scatter.cc (masked_fill runs the where routine).
#include <cmath>

#include "../core/writes.h"
#include "registry.h"

namespace mf {

// PyTorch's argument order x:gather(dim, index), x:scatter(dim, index, src), x:index_add(dim, index,
// src) beside the project's inputs-then-params order mf.gather(x, index[, dim]): the blocks declare
// dim_first() (registry.h), which the eager dispatcher reads.

namespace {

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

// masked_select's and nonzero's static output length (elements, rows): the size param, which the
// call syntax fills in on tensors by counting when it is left out
int64_t given_size(InferCtx& c) {
  int64_t n = c.p.get_int("size");
  if (n < 0)
    fail(c.name(), ": size is ", n, "; expected the output's length, 0 or more (leave it out on tensors: mf.",
         c.name(), " counts the selection then)");
  return n;
}

void masked_select_shape(InferCtx& c) {
  mask_type(c);  // before the size: a mask of another dtype is why the call syntax could not count
  broadcast_shapes("masked_select", c.in_shape(0), c.in_shape(1), "x", "mask");
  c.set_out(0, {given_size(c)});
}

// the padding takes x's dtype: into integers only an integral value that fits
void masked_select_type(InferCtx& c) {
  mask_type(c);
  int dt = c.input(0).dtype_id;
  double f = c.p.get_float("fill_value");
  if (!dtype_is_float(dt) && std::floor(f) != f)  // NaN and infinities too
    fail("masked_select: fill_value ", f, " is not an integer; x is ", dtype_name(dt), " (convert x with :float())");
  check_value_fits(f, dt, "masked_select: fill_value");
  c.out[0].dtype_id = dt;
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

void nonzero_shape(InferCtx& c) { c.set_out(0, {given_size(c), c.input(0).ndim}); }

// Gradient w.r.t. src of scatter and scatter_add: the gradient gathered at the index (scatter's:
// zero where a later write to the same destination overwrote it), placed at the start of each dim
// of src (src may be larger than the index); summed for a 0-dim src.
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
  -- scatter's repeats: only the write that won (the last in the index's row-major order) reaches
  -- the output, so a 1 where element i of the index wrote last: positions 1..n scattered (the last
  -- wins there too) and gathered back equal their own
  local function winners(idx, y, dim)
    local n = 1
    for d = 1, idx:dim() do n = n * idx:size(d) end
    -- on idx's device in the tape (a graph moves the constant to its session's device)
    local dev = mf.is_tensor(idx) and idx:device() or nil
    local pos = mf.arange(1, n + 1, 1, {dtype = 'float64', device = dev}):reshape(idx:size())
    local won = mf.scatter(mf.cast(mf.zeros_like(y), 'float64'), idx, pos, dim)
    return mf.eq(mf.gather(won, idx, dim), pos)
  end
  return function(x, idx, src, y, gy, p, add)
    local gs = mf.gather(gy, idx, p.dim)
    if not add then gs = mf.where(winners(idx, y, p.dim), gs, 0) end
    gs = src:dim() == 0 and mf.sum(gs) or pad_to(gs, idx, src)
    return {add and gy or mf.scatter(gy, idx, 0, p.dim), nil, gs}
  end
end)())lua";

// Call syntax of masked_select and nonzero: the inputs, then size and fill_value as numbers or in
// a trailing table ({size = n, fill_value = v}). The output has size elements (rows), the first
// size selected in row-major order, then fill_value (jnp.nonzero(size=, fill_value=) under jit).
// Without size on tensors the adapter counts the selection first with registered ops (ne, expand,
// sum) and passes the count as size: the whole selection, no padding. A graph plans every size when
// it is built, before any value exists, so on symbols size must be given; leaving it out is an error
// at build. kSizedCall wraps a function(op, ins, p, symbolic) that fills in size (or refuses).
std::string sized_call(const char* body) {
  return std::string(R"lua(
(function()
  local fill_size = )lua") + body + R"lua(
  return function(op, ...)
    local nin, n, p = #op.inputs, select('#', ...), {}
    local args = mf._pack_args(n, ...)  -- not {...} (tensor.lua's pack_args says why)
    local ins, symbolic = {}, false
    for i = 1, nin do
      ins[i] = args[i]
      symbolic = symbolic or mf.is_symbol(args[i])
    end
    for i = nin + 1, n do
      local v, name = args[i], op.param_list[i - nin]
      if i == n and type(v) == 'table' and not mf.is_tensor(v) and not mf.is_symbol(v) then
        for k, w in pairs(v) do p[k] = w end
      elseif v ~= nil and not (name and type(v) == 'number') then
        mf._raise(('%s: takes %s, then size and fill_value (numbers, or a table {size = n, fill_value = v}); '
          .. 'argument %d is a %s'):format(op.name, table.concat(op.inputs, ', '), i,
          mf.is_tensor(v) and 'tensor' or mf.is_symbol(v) and 'symbol' or type(v)))
      elseif v ~= nil then
        p[name] = v
      end
    end
    if p.size == nil then fill_size(op, ins, p, symbolic) end
    return ins, p
  end
end)())lua";
}

const char* const kMaskedSelectSize = R"lua(function(op, ins, p, symbolic)
    local x, mask = ins[1], ins[2]
    if symbolic then
      mf._raise('masked_select: on graph symbols pass the output size, mf.masked_select(x, mask, {size = n}): the '
        .. 'number of selected elements is known only from the mask\'s values, and a graph plans every size when '
        .. 'it is built; the output then has exactly n elements, the first n selected in row-major order, padded '
        .. 'with fill_value (default 0)')
    end
    if not (mf.is_tensor(x) and mf.is_tensor(mask) and mask:dtype() == 'uint8') then return end  -- the rules say why
    local nx, nm = x:dim(), mask:dim()
    local nd, shape = math.max(nx, nm), {}
    for k = 1, nd do  -- the broadcast shape, from the last dim; nil when they do not broadcast
      local a, b = k <= nx and x:size(nx - k + 1) or 1, k <= nm and mask:size(nm - k + 1) or 1
      if a ~= b and a ~= 1 and b ~= 1 then return end
      shape[nd - k + 1] = a == 1 and b or a
    end
    p.size = mf.expand(mf.ne(mask, 0), shape):sum():item()
  end)lua";

const char* const kNonzeroSize = R"lua(function(op, ins, p, symbolic)
    if symbolic then
      mf._raise('nonzero: on graph symbols pass the output size, mf.nonzero(x, {size = n}): the number of nonzero '
        .. 'elements is known only from the values, and a graph plans every size when it is built; the output '
        .. 'then has exactly n rows, the first n nonzero elements\' coordinates in row-major order, padded with '
        .. 'rows of fill_value (default 0)')
    end
    if mf.is_tensor(ins[1]) then p.size = mf.ne(ins[1], 0):sum():item() end
  end)lua";

Field dim_field() {
  return Field::integer("dim", 1, "Dim the index addresses, 1-based (negative counts from the end).");
}

// size: the output's length; -1 (left out) only reaches the shape rule when a caller bypasses the
// call syntax, which counts on tensors and refuses symbols
Field size_field(const char* what) {
  return Field::integer("size", -1, std::string("Output length: the first size ") + what +
                                        " in row-major order, then fill_value (required on graph symbols; left "
                                        "out on tensors, the count of them).")
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
      .dim_first()
      .infer_shape(gather_shape)
      .infer_type(gather_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, x._ndim)
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
       "write in the index's row-major order wins (PyTorch leaves it unspecified), and only its src element gets a "
       "gradient. Spellings: x:scatter(dim, index, "
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
        .dim_first()
        .infer_shape(scatter_shape)
        .infer_type(scatter_type)
        .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x._ndim)
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
        .dim_first()
        .view()
        .writes()
        .infer_shape(scatter_inplace_shape)
        .infer_type(scatter_type)
        .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x._ndim)
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
      .dim_first()
      .infer_shape(index_add_shape)
      .infer_type(scatter_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x._ndim)
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
      .dim_first()
      .view()
      .writes()
      .infer_shape(index_add_inplace_shape)
      .infer_type(scatter_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx, src = outs[1], ins[1], ins[2], ins[3]
  local dim = K.dim0(p.dim, x._ndim)
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
                "broadcast together). With size (JAX's jnp.nonzero(size=) rule) the output has exactly size "
                "elements: the first size selected, then fill_value where fewer are; that is how it runs in a "
                "graph, whose sizes are planned before any value exists (on graph symbols size is required: an "
                "error at graph build without it). Without size, on tensors, it counts the selection first (ne, "
                "sum) and returns all of it. Differentiable, eager and in graphs: x's gradient is gy at the "
                "selected elements, 0 elsewhere (padding sends none back), summed where x was broadcast. "
                "Spellings: x:masked_select(mask[, size[, fill_value]]), x:masked_select(mask, {size = n, "
                "fill_value = v}), mf.masked_select(x, mask, ...), Torch7's x:maskedSelect(mask).")
      .alias("maskedSelect")
      .inputs({"x", "mask"})
      .strided()
      .mask_input(2)
      .param(size_field("selected elements"))
      .param(Field::number("fill_value", 0, "Value of the padding past the selection (x's dtype: integral for "
                                            "integer x).")
                 .allow_nan())
      .lua_adapter(sized_call(kMaskedSelectSize))
      .infer_shape(masked_select_shape)
      .infer_type(masked_select_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, mask, fill = outs[1], ins[1], ins[2], p.fill_value
  return function() K.masked_select(y, x, mask, fill) end
end)lua")
      // one rule for symbols and tensors, of registered ops whose sizes follow x's and mask's: over
      // the flat broadcast shape, the running sum of the selection flags is each selected element's
      // 1-based rank among the selected (row-major, the forward's order); one of rank <= size takes
      // gy[rank], every other element 0, so gy's padding reaches nothing; summed where x was broadcast
      .gradient(R"lua(
function(x, mask, y, gy, p)
  local size = p.size
  if size == 0 then return {mf.zeros_like(x), nil} end
  local flags = mf.where(mask, 1, mf.cast(mf.zeros_like(x), 'int64'))
  local flat = mf.reshape(flags, -1)
  local rank = mf.cumsum(flat, 1)
  local keep = mf.where(mf.ne(flat, 0), mf.le(rank, size), 0)
  local g = mf.where(keep, mf.gather(gy, mf.clamp(rank, 1, size), 1), 0)
  return {mf.sum_to(mf.reshape_as(g, flags), x), nil}
end)lua");

  MF_REGISTER_OP(nonzero)
      .describe("The 1-based coordinates of x's nonzero elements (NaN counts as nonzero): an int64 N x ndim "
                "tensor, one row per element in row-major order (Torch7's and PyTorch's nonzero, 1-based). With "
                "size (JAX's jnp.nonzero(size=, fill_value=)) N is size: the first size rows, then rows of "
                "fill_value (default 0, never a 1-based coordinate) where fewer are; that is how it runs in a "
                "graph, whose sizes are planned before any value exists (on graph symbols size is required: an "
                "error at graph build without it). Without size, on tensors, it counts the nonzeros first (ne, "
                "sum) and returns them all. Spellings: x:nonzero([size[, fill_value]]), x:nonzero({size = n, "
                "fill_value = v}), mf.nonzero(x, ...).")
      .inputs({"x"})
      .strided()
      .param(size_field("nonzero elements' coordinate rows"))
      .param(Field::integer("fill_value", 0, "Value of every coordinate in the padding rows past the nonzeros."))
      .lua_adapter(sized_call(kNonzeroSize))
      .infer_shape(nonzero_shape)
      .infer_type(int64_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, fill = outs[1], ins[1], p.fill_value
  return function() K.nonzero(y, x, fill) end
end)lua");
}

}  // namespace mf
