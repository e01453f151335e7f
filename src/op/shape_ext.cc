// The everyday shape ops of Torch7 and PyTorch (issue 21): stack, chunk and unbind (views, as in
// PyTorch), repeat (Torch7's repeatTensor), flip, roll, tril and triu (copies, by native routines).
#include <algorithm>

#include "reduce.h"
#include "registry.h"

namespace mf {

namespace {

void stack_shape(InferCtx& c) {
  if (c.in.empty()) fail("stack: needs at least one tensor");
  const mf_tensor& x = c.input(0);
  if (x.ndim >= kMaxDims)
    fail("stack: tensor 1 is ", shape_str(x), "; the result would have more than ", kMaxDims, " dims");
  int d = normalize_dim("stack", c.p.get_int("dim"), x.ndim, true);
  Shape s = shape_of(x);
  for (size_t i = 1; i < c.in.size(); ++i) {
    const mf_tensor& y = c.input(i);
    bool ok = y.ndim == x.ndim;
    for (int k = 0; ok && k < x.ndim; ++k) ok = dims_match(y.shape[k], x.shape[k]);
    if (!ok)
      fail("stack: tensor 1 is ", shape_str(x), ", tensor ", i + 1, " is ", shape_str(y), "; all must have one shape");
    for (int k = 0; k < x.ndim; ++k)
      if (is_unknown(s[size_t(k)])) s[size_t(k)] = y.shape[k];  // a size another tensor knows
    if (y.dtype_id != x.dtype_id)
      fail("stack: tensor 1 is ", dtype_name(x.dtype_id), ", tensor ", i + 1, " is ", dtype_name(y.dtype_id));
  }
  s.insert(s.begin() + d, int64_t(c.in.size()));
  c.set_out(0, s);
}

void chunk_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("chunk", c.p.get_int("dim"), x.ndim);
  int64_t chunks = c.p.get_int("chunks"), n = x.shape[d];
  if (is_unknown(n)) unknown_output(c);  // how many parts there are shows at run
  // As PyTorch: parts of ceil(n / chunks), the last smaller, so there may be fewer than chunks; an
  // empty dim gives chunks empty parts.
  int64_t size = (n + chunks - 1) / chunks;
  int64_t parts = n == 0 ? chunks : (n + size - 1) / size;
  if (parts > kMaxParts) fail("chunk: ", parts, " parts; at most ", kMaxParts, " are supported");
  for (int64_t i = 0; i < parts; ++i) {
    Shape s = shape_of(x);
    s[size_t(d)] = std::min(size, n - i * size);
    c.set_view(size_t(i), s, strides_of(x), i * size * x.strides[d]);
  }
}

void unbind_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("unbind", c.p.get_int("dim"), x.ndim);
  int64_t n = x.shape[d];
  if (is_unknown(n)) unknown_output(c);
  if (n > kMaxParts) fail("unbind: x is ", shape_str(x), "; ", n, " slices along dim ", d + 1, ", at most ", kMaxParts,
                          " are supported");
  Shape s = shape_of(x), st = strides_of(x);
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  for (int64_t i = 0; i < n; ++i) c.set_view(size_t(i), s, st, i * x.strides[d]);
}

void repeat_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto& r = c.p.get_list("sizes");
  if (int(r.size()) < x.ndim)
    fail(c.name(), ": x is ", shape_str(x), " (", x.ndim, " dims); sizes ", shape_str(r), " must give at least ",
         x.ndim, " repeats");
  if (int(r.size()) > kMaxDims) fail(c.name(), ": ", r.size(), " repeats; at most ", kMaxDims, " dims are supported");
  size_t lead = r.size() - size_t(x.ndim);
  Shape s(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0) fail(c.name(), ": repeat count ", r[i], " at dim ", i + 1, " is negative");
    int64_t have = i < lead ? 1 : x.shape[i - lead];
    if (is_unknown(have)) { s[i] = unknown_dim(); continue; }
    if (__builtin_mul_overflow(have, r[i], &s[i]))  // it would wrap (4 x 2^62 is 0), not fail
      fail(c.name(), ": size ", have, " at dim ", i + 1, " repeated ", r[i], " times has too many elements");
  }
  checked_numel(s, c.name());
  c.set_out(0, s);
}

void flip_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  dims_mask("flip", c.p.get_list("dims"), x.ndim);
  c.set_out(0, shape_of(x));
}

void roll_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto &shifts = c.p.get_list("shifts"), &dims = c.p.get_list("dims");
  if (dims.empty() && shifts.size() != 1)
    fail("roll: ", shifts.size(), " shifts and no dims; without dims x rolls flattened, by one shift");
  if (!dims.empty() && shifts.size() != dims.size())
    fail("roll: ", shifts.size(), " shifts and ", dims.size(), " dims; expected one shift per dim");
  for (int64_t d : dims) normalize_dim("roll", d, x.ndim);  // a dim may repeat: its shifts add up, as in PyTorch
  c.set_out(0, shape_of(x));
}

void tri_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  if (x.ndim < 2) fail(c.name(), ": x is ", shape_str(x), "; expected at least 2 dims (a matrix or a batch of them)");
  c.set_out(0, shape_of(x));
}

}  // namespace

void register_shape_ext_ops() {
  MF_REGISTER_OP(stack)
      .describe("Joins tensors of one shape and dtype along a new dim at position dim (PyTorch's stack).")
      .inputs({"tensors"})
      .strided()
      .variadic()
      .param(Field::integer("dim", 1, "Position of the new dim in the result, 1..ndim+1 (negative from the end)."))
      .infer_shape(stack_shape)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, n = outs[1], #ins
  local d = K.dim0(p.dim, y._ndim)
  local ct = ffi.typeof('mf_tensor')
  local size = ffi.sizeof(ct)
  -- input i as a header with a size-1 dim at d: stack is concat of those along d. The slots keep
  -- one layout (a bound entry serves one), so the headers are made here and a run sets only where
  -- each input's data lies (straight-line for two inputs: a loop of one or two turns per run
  -- aborted the caller's traces)
  local hs = {}
  for i = 1, n do
    local h, x = ct(), ins[i]
    ffi.copy(h, x, size)
    h._owns, h._autograd = 0, 0
    for k = x._ndim, d + 1, -1 do
      h._shape[k], h._strides[k] = x._shape[k - 1], x._strides[k - 1]
    end
    h._shape[d] = 1
    h._strides[d] = d < x._ndim and x._strides[d] * x._shape[d] or 1
    h._ndim = x._ndim + 1
    hs[i] = h
  end
  local list = K.tensor_list(hs)
  local h1, x1, h2, x2 = hs[1], ins[1], hs[2], ins[2]
  return function()
    h1._ptr, h1._offset, h1._store = x1._ptr, x1._offset, x1._store
    if n >= 2 then
      h2._ptr, h2._offset, h2._store = x2._ptr, x2._offset, x2._store
      for i = 3, n do
        local h, x = hs[i], ins[i]
        h._ptr, h._offset, h._store = x._ptr, x._offset, x._store
      end
    end
    K.concat(y, n, list, d)
  end
end)lua")
      .gradient("function(xs, y, gy, p) return mf.unbind(gy, p.dim) end");

  MF_REGISTER_OP(chunk)
      .describe("Cuts x along dim into views of ceil(size / chunks) each, the last smaller (as PyTorch: maybe fewer "
                "than chunks). At most 65536 parts.")
      .inputs({"x"})
      .param(Field::integer("chunks", 1, "Number of parts asked for.").range(1, 1e15).mandatory())
      .param(Field::integer("dim", 1, "Dim to cut, 1-based (negative from the end)."))
      .view()
      .list_output()
      .infer_shape(chunk_shape)
      .lua_compute(MF_CPU, kListViewKernel)
      .gradient("function(x, ys, gys, p) return {mf.concat(gys, p.dim)} end");

  MF_REGISTER_OP(unbind)
      .describe("The slices of x along dim as a list of views, that dim removed (select at 1, 2, ...). At most 65536 "
                "slices; an empty dim gives an empty list.")
      .inputs({"x"})
      .param(Field::integer("dim", 1, "Dim to take apart, 1-based (negative from the end)."))
      .view()
      .list_output()
      .infer_shape(unbind_shape)
      .lua_compute(MF_CPU, kListViewKernel)
      .gradient("function(x, ys, gys, p) return {mf.stack(gys, p.dim)} end");

  // repeat is a Lua keyword: x:repeatTensor(2, 3), mf['repeat'](x, 2, 3) or x['repeat'](x, 2, 3).
  MF_REGISTER_OP(repeat)
      .describe("x tiled sizes[i] times along dim i (PyTorch's repeat, Torch7's repeatTensor); extra leading "
                "sizes add dims. A copy. repeat is a Lua keyword: x:repeatTensor(2, 3) or mf['repeat'](x, 2, 3).")
      .alias("repeatTensor")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("sizes", "", "Repeats per dim, at least one per dim of x; leading extras add dims.")
                 .mandatory())
      .list_args()
      .infer_shape(repeat_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  return function() K.periodic_copy(y, x, nil, 0) end
end)lua")
      // Dim by dim, the tiles of dim d (its index is tile * size + i) are summed: a 3-D reshape
      // (dims before d, already folded; the tiles; the rest) and a sum over the tiles.
      .gradient(R"lua(
function(x, y, gy, p)
  local r, nd = p.sizes, #p.sizes
  local lead = nd - x:dim()
  local xs = {}
  for d = 1, nd do
    xs[d] = d > lead and x:size(d - lead) or 1
    if not xs[d] then error('repeat: its gradient needs every size of x known when the graph is built') end
    if r[d] == 0 then return {mf.zeros_like(x)} end
  end
  local g = gy
  for d = 1, nd do
    if r[d] ~= 1 then
      local before, after = 1, 1
      for k = 1, d - 1 do before = before * xs[k] end
      for k = d + 1, nd do after = after * xs[k] * r[k] end
      g = mf.sum(mf.reshape(g, before, r[d], xs[d] * after), 2)
    end
  end
  return {mf.reshape_as(g, x)}
end)lua");

  MF_REGISTER_OP(flip)
      .describe("x with the order of its elements reversed along each listed dim (a copy).")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("dims", "", "Dims to reverse, 1-based (negative from the end), each once.").mandatory())
      .list_args()
      .infer_shape(flip_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  local mask = 0
  for _, d in ipairs(p.dims) do mask = bit.bor(mask, bit.lshift(1, K.dim0(d, x._ndim))) end
  return function() K.periodic_copy(y, x, nil, mask) end
end)lua")
      .gradient("function(x, y, gy, p) return {mf.flip(gy, p.dims)} end");

  MF_REGISTER_OP(roll)
      .describe("x shifted circularly by shifts[i] along dims[i] (elements leaving one end come back at the "
                "other); without dims, x rolls flattened. A copy.")
      .inputs({"x"})
      .param(Field::int_list("shifts", "", "Shift per listed dim (positive towards higher indices).").mandatory())
      .param(Field::int_list("dims", "", "Dims to roll, 1-based; empty: roll the flattened x by one shift."))
      .infer_shape(roll_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  if #p.dims == 0 then  -- x is contiguous (roll is not strided): roll it as one row
    local ct = ffi.typeof('mf_tensor')
    local size = ffi.sizeof(ct)
    local yh, xh, shift = ct(), ct(), ffi.new('int64_t[1]', p.shifts[1])
    local function flat(h, t)
      ffi.copy(h, t, size)
      h._owns, h._ndim, h._shape[0], h._strides[0] = 0, 1, t._count, 1
    end
    return function()
      flat(yh, y)
      flat(xh, x)
      K.periodic_copy(yh, xh, shift, 0)
    end
  end
  local shift = ffi.new('int64_t[?]', math.max(x._ndim, 1))
  for i, d in ipairs(p.dims) do
    local k = K.dim0(d, x._ndim)
    shift[k] = shift[k] + p.shifts[i]
  end
  return function() K.periodic_copy(y, x, shift, 0) end
end)lua")
      .gradient(R"lua(
function(x, y, gy, p)
  local back = {}
  for i, s in ipairs(p.shifts) do back[i] = -s end
  return {mf.roll(gy, back, p.dims)}
end)lua");

  MF_REGISTER_OP(tril)
      .describe("The lower triangle of each trailing matrix of x: elements (i, j) with j - i <= diagonal; 0 elsewhere.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("diagonal", 0, "Last diagonal kept: 0 the main one, 1 above it, -1 below (Torch7's k)."))
      .infer_shape(tri_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, k = outs[1], ins[1], p.diagonal
  return function() K.tri(y, x, k, 0) end
end)lua")
      .gradient("function(x, y, gy, p) return {mf.tril(gy, p.diagonal)} end");

  MF_REGISTER_OP(triu)
      .describe("The upper triangle of each trailing matrix of x: elements (i, j) with j - i >= diagonal; 0 elsewhere.")
      .inputs({"x"})
      .strided()
      .param(Field::integer("diagonal", 0, "First diagonal kept: 0 the main one, 1 above it, -1 below (Torch7's k)."))
      .infer_shape(tri_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, k = outs[1], ins[1], p.diagonal
  return function() K.tri(y, x, k, 1) end
end)lua")
      .gradient("function(x, y, gy, p) return {mf.triu(gy, p.diagonal)} end");
}

}  // namespace mf
