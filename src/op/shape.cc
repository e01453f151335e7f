// Shape operators. Views (reshape of contiguous input, transpose, permute, narrow, select, slice,
// expand, squeeze, unsqueeze, split) share the input's storage; concat and non-viewable reshapes copy.
#include <algorithm>
#include <cmath>

#include "registry.h"

namespace mf {

namespace {

}  // namespace

// Shared factory of the view ops: alias when the binder made the output a view, copy otherwise.
const char* const kViewKernel = R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  if y._store == nil then
    local off = y._offset
    return function() K.alias(y, x, off) end
  end
  local yv = K.header(y, x)
  return function() yv._ptr = y._ptr; K.copy(yv, x) end
end)lua";

const char* const kListViewKernel = R"lua(
function(ins, outs, p, K)
  local x, n = ins[1], #outs
  local offs = {}
  for i = 1, n do offs[i] = outs[i]._offset end
  return function()
    for i = 1, n do K.alias(outs[i], x, offs[i]) end
  end
end)lua";

namespace {

Shape resolve_reshape(InferCtx& c, const Shape& want) {
  const mf_tensor& x = c.input(0);
  Shape s = want;
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer_at >= 0) fail(c.name(), ": shape ", shape_str(want), " has more than one -1");
      infer_at = int(i);
    } else if (s[i] < 0) {
      fail(c.name(), ": size ", s[i], " at dim ", i + 1, " is negative");
    } else {
      known *= s[i];
    }
  }
  if (has_unknown(x)) {  // graph build: x's count is (product of its known sizes) * unknown
    int64_t xk = 1;
    for (int d = 0; d < x.ndim; ++d)
      if (!is_unknown(x.shape[d])) xk *= x.shape[d];
    if (infer_at >= 0) {
      s[size_t(infer_at)] = unknown_dim();
    } else if (xk != 0 && known % xk != 0) {
      fail(c.name(), ": x is ", shape_str(x), " (a multiple of ", xk, " elements); shape ", shape_str(s), " has ", known,
           ", not a multiple of ", xk);
    }
    return s;
  }
  if (infer_at >= 0) {
    if (known == 0 || x.count % known != 0)
      fail(c.name(), ": x is ", shape_str(x), " (", x.count, " elements); cannot infer the -1 in ", shape_str(want));
    s[size_t(infer_at)] = x.count / known;
  }
  if (checked_numel(s, c.name()) != x.count)
    fail(c.name(), ": x is ", shape_str(x), " (", x.count, " elements); shape ", shape_str(s), " has ",
         checked_numel(s, c.name()));
  return s;
}

void reshape_shape(InferCtx& c) {
  Shape s = resolve_reshape(c, c.p.get_list("shape"));
  if (c.input(0).is_contig) c.set_view(0, s, contiguous_strides(s), 0);
  else c.set_out(0, s);
}

void transpose_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d0 = normalize_dim(c.name(), c.p.get_int("dim0"), x.ndim), d1 = normalize_dim(c.name(), c.p.get_int("dim1"), x.ndim);
  Shape s = shape_of(x), st = strides_of(x);
  std::swap(s[size_t(d0)], s[size_t(d1)]);
  std::swap(st[size_t(d0)], st[size_t(d1)]);
  c.set_view(0, s, st, 0);
}

void permute_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto& dims = c.p.get_list("dims");
  if (int(dims.size()) != x.ndim)
    fail("permute: x is ", shape_str(x), " (", x.ndim, " dims); dims lists ", dims.size());
  Shape s, st;
  uint32_t seen = 0;
  for (int64_t d : dims) {
    int nd = normalize_dim("permute", d, x.ndim);
    if (seen & (1u << nd)) fail("permute: dim ", d, " is listed twice");
    seen |= 1u << nd;
    s.push_back(x.shape[nd]);
    st.push_back(x.strides[nd]);
  }
  c.set_view(0, s, st, 0);
}

void narrow_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("narrow", c.p.get_int("dim"), x.ndim);
  int64_t start = c.p.get_int("start"), len = c.p.get_int("length");
  if (start < 1 || len < 0 || (start - 1 + len > x.shape[d] && !is_unknown(x.shape[d])))
    fail("narrow: x is ", shape_str(x), "; start ", start, " and length ", len, " must lie in 1..", x.shape[d],
         " along dim ", d + 1);
  Shape s = shape_of(x);
  s[size_t(d)] = len;
  c.set_view(0, s, strides_of(x), (start - 1) * x.strides[d]);
}

void slice_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("slice", c.p.get_int("dim"), x.ndim);
  int64_t n = x.shape[d], start = c.p.get_int("start"), stop = c.p.get_int("stop"), step = c.p.get_int("step");
  if (is_unknown(n)) {  // graph build: the length is known only from positive start and stop
    bool from_end = start < 0 || stop < 0;  // counted from the unknown end: the length shows at run
    if (start == 0 || (!from_end && stop < start - 1))
      fail("slice: x is ", shape_str(x), "; start ", start, " and stop ", stop, " must satisfy 1 <= start <= stop + 1");
    Shape s = shape_of(x);
    s[size_t(d)] = from_end ? unknown_dim() : stop >= start ? (stop - start) / step + 1 : 0;
    c.set_out(0, s);
    return;
  }
  if (start < 0) start += n + 1;
  if (stop < 0) stop += n + 1;
  if (start < 1 || start > n + 1 || stop > n || stop < start - 1)
    fail("slice: x is ", shape_str(x), "; start ", c.p.get_int("start"), " and stop ", c.p.get_int("stop"),
         " must satisfy 1 <= start <= stop + 1 <= ", n + 1, " along dim ", d + 1);
  int64_t len = stop >= start ? (stop - start) / step + 1 : 0;
  Shape s = shape_of(x), st = strides_of(x);
  s[size_t(d)] = len;
  st[size_t(d)] *= step;
  c.set_view(0, s, st, len ? (start - 1) * x.strides[d] : 0);
}

void select_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("select", c.p.get_int("dim"), x.ndim);
  int64_t i = c.p.get_int("index");
  if (is_unknown(x.shape[d])) i = i < 0 ? 1 : i;  // graph build: the range is checked at run
  if (i < 0) i += x.shape[d] + 1;
  if (i < 1 || (i > x.shape[d] && !is_unknown(x.shape[d])))
    fail("select: index ", c.p.get_int("index"), " out of range 1..", x.shape[d], " along dim ", d + 1, " of ", shape_str(x));
  Shape s = shape_of(x), st = strides_of(x);
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  c.set_view(0, s, st, (i - 1) * x.strides[d]);
}

void expand_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  Shape want = c.p.get_list("size");
  if (int(want.size()) < x.ndim)
    fail("expand: x is ", shape_str(x), "; size ", shape_str(want), " has fewer dims than x");
  size_t lead = want.size() - size_t(x.ndim);
  Shape st(want.size(), 0);
  for (size_t i = 0; i < want.size(); ++i) {
    if (i < lead) {
      if (want[i] < 0) fail("expand: size ", want[i], " at new leading dim ", i + 1, " must be given");
      continue;
    }
    int64_t have = x.shape[i - lead];
    if (want[i] == -1) want[i] = have;
    if (want[i] == have || is_unknown(have)) st[i] = x.strides[i - lead];  // unknown: 1 or want[i], told at run
    else if (have != 1)
      fail("expand: x is ", shape_str(x), "; cannot expand dim ", i - lead + 1, " of size ", have, " to ", want[i],
           " (only size-1 dims expand)");
  }
  checked_numel(want, "expand");
  c.set_view(0, want, st, 0);
}

void squeeze_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  const auto& dims = c.p.get_list("dim");
  uint32_t mask = 0;
  for (int64_t d : dims) mask |= 1u << normalize_dim("squeeze", d, x.ndim);
  Shape s, st;
  for (int d = 0; d < x.ndim; ++d) {
    bool listed = dims.empty() || (mask & (1u << d));
    if (listed && is_unknown(x.shape[d])) unknown_output(c);  // whether it is dropped shows at run
    bool drop = x.shape[d] == 1 && listed;
    if (!drop) {
      s.push_back(x.shape[d]);
      st.push_back(x.strides[d]);
    }
  }
  c.set_view(0, s, st, 0);
}

void unsqueeze_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("unsqueeze", c.p.get_int("dim"), x.ndim, true);
  if (x.ndim >= kMaxDims) fail("unsqueeze: x already has ", kMaxDims, " dims");
  Shape s = shape_of(x), st = strides_of(x);
  int64_t inner = d < x.ndim ? x.strides[d] * x.shape[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, inner);
  c.set_view(0, s, st, 0);
}

void contiguous_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  if (x.is_contig) c.set_view(0, shape_of(x), strides_of(x), 0);
  else c.set_out(0, shape_of(x));
}


void split_shape(InferCtx& c) {
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("split", c.p.get_int("dim"), x.ndim);
  const auto& sizes = c.p.get_list("size");
  int64_t n = x.shape[d];
  Shape parts;
  if (is_unknown(n)) {  // graph build: the listed sizes are the parts; chunks of one size are not known
    if (sizes.size() == 1) unknown_output(c);
    int64_t at = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) fail("split: size ", sizes[i], " is negative");
      Shape s = shape_of(x);
      s[size_t(d)] = sizes[i];
      c.set_view(i, s, strides_of(x), at * x.strides[d]);
      at += sizes[i];
    }
    return;
  }
  if (sizes.size() == 1) {
    if (sizes[0] < 1) fail("split: size ", sizes[0], " must be at least 1");
    if ((n + sizes[0] - 1) / sizes[0] > kMaxParts)
      fail("split: ", (n + sizes[0] - 1) / sizes[0], " parts; at most ", kMaxParts, " are supported");
    for (int64_t at = 0; at < n; at += sizes[0]) parts.push_back(std::min(sizes[0], n - at));
  } else {
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) fail("split: size ", s, " is negative");
      total += s;
      parts.push_back(s);
    }
    if (total != n) fail("split: sizes add up to ", total, "; x is ", shape_str(x), " with ", n, " along dim ", d + 1);
  }
  if (parts.empty()) fail("split: x has size 0 along dim ", d + 1, "; nothing to split");
  if (int64_t(parts.size()) > kMaxParts)
    fail("split: ", parts.size(), " parts; at most ", kMaxParts, " are supported");
  int64_t at = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    Shape s = shape_of(x);
    s[size_t(d)] = parts[i];
    c.set_view(i, s, strides_of(x), at * x.strides[d]);
    at += parts[i];
  }
}

void concat_shape(InferCtx& c) {
  if (c.in.empty()) fail("concat: needs at least one tensor");
  const mf_tensor& x = c.input(0);
  int d = normalize_dim("concat", c.p.get_int("dim"), x.ndim);
  Shape s = shape_of(x);
  for (size_t i = 1; i < c.in.size(); ++i) {
    const mf_tensor& y = c.input(i);
    bool ok = y.ndim == x.ndim;
    for (int k = 0; ok && k < x.ndim; ++k) ok = k == d || dims_match(y.shape[k], x.shape[k]);
    for (int k = 0; ok && k < x.ndim; ++k)
      if (k != d && is_unknown(s[size_t(k)])) s[size_t(k)] = y.shape[k];  // a size another tensor knows
    if (!ok)
      fail("concat: tensor 1 is ", shape_str(x), ", tensor ", i + 1, " is ", shape_str(y), "; all sizes but dim ", d + 1,
           " must match");
    if (y.dtype_id != x.dtype_id)
      fail("concat: tensor 1 is ", dtype_name(x.dtype_id), ", tensor ", i + 1, " is ", dtype_name(y.dtype_id));
    s[size_t(d)] = is_unknown(s[size_t(d)]) || is_unknown(y.shape[d]) ? unknown_dim() : s[size_t(d)] + y.shape[d];
  }
  c.set_out(0, s);
}

void index_select_shape(InferCtx& c) {
  const mf_tensor &x = c.input(0), &idx = c.input(1);
  int d = normalize_dim("index_select", c.p.get_int("dim"), x.ndim);
  if (idx.ndim != 1) fail("index_select: indices are ", shape_str(idx), "; expected a 1-D int64 tensor");
  Shape s = shape_of(x);
  s[size_t(d)] = idx.shape[0];
  c.set_out(0, s);
}

void index_type(InferCtx& c) {
  if (c.input(1).dtype_id != MF_INT64)
    fail(c.name(), ": indices are ", dtype_name(c.input(1).dtype_id), "; expected int64 (1-based)");
  c.out[0].dtype_id = c.input(0).dtype_id;
}

void index_add_like_shape(InferCtx& c) {
  const mf_tensor &g = c.input(0), &idx = c.input(1), &like = c.input(2);
  int d = normalize_dim("index_add_like", c.p.get_int("dim"), like.ndim);
  bool ok = idx.ndim == 1 && g.ndim == like.ndim && dims_match(g.shape[d], idx.shape[0]);
  for (int k = 0; ok && k < like.ndim; ++k) ok = k == d || dims_match(g.shape[k], like.shape[k]);
  if (!ok)
    fail("index_add_like: x is ", shape_str(g), ", indices ", shape_str(idx), ", like ", shape_str(like),
         "; x must be like with dim ", d + 1, " sized by the indices");
  c.set_out(0, shape_of(like));
}

void one_hot_shape(InferCtx& c) {
  Shape s = c.in_shape(0);
  s.push_back(c.p.get_int("num_classes"));
  c.set_out(0, s);
}

void one_hot_type(InferCtx& c) { c.out[0].dtype_id = int(c.p.get("dtype").num); }

}  // namespace

void register_shape_ops() {
  MF_REGISTER_OP(index_select)
      .describe("The slices of x at the given 1-based int64 indices along dim (a gather; indices may repeat). "
                "Spellings: x:index_select(dim, indices) (PyTorch's order), mf.index_select(x, indices, dim).")
      .inputs({"x", "indices"})
      .dim_first()
      .strided()
      .param(Field::integer("dim", 1, "Dim to index, 1-based."))
      .infer_shape(index_select_shape)
      .infer_type(index_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, idx = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, x._ndim)
  return function() K.index_select(y, x, idx, dim) end
end)lua")
      .gradient("function(x, idx, y, gy, p) return {mf.index_add_like(gy, idx, x, p.dim)} end");

  MF_REGISTER_OP(index_add_like)
      .describe("Zeros of like's shape with slice j of x added at index indices[j] along dim (the gradient of index_select).")
      .inputs({"x", "indices", "like"})
      .lends_shape(3)
      .strided()
      .param(Field::integer("dim", 1, "Dim the indices address, 1-based."))
      .infer_shape(index_add_like_shape)
      .infer_type(index_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, g, idx = outs[1], ins[1], ins[2]
  local dim = K.dim0(p.dim, y._ndim)
  return function() K.index_add_like(y, g, idx, dim) end
end)lua")
      .gradient("function(x, idx, like, y, gy, p) return {mf.index_select(gy, idx, p.dim)} end");

  MF_REGISTER_OP(one_hot)
      .describe("A trailing dim of num_classes with 1 at each (1-based) label and 0 elsewhere.")
      .inputs({"labels"})
      .strided()
      .param(Field::integer("num_classes", 1, "Number of classes.").range(1, 1e9).mandatory())
      .param(Field::dtype("dtype", "float32", "Element type of the result."))
      .infer_shape(one_hot_shape)
      .infer_type(one_hot_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, labels = outs[1], ins[1]
  return function() K.one_hot(y, labels) end
end)lua")
      .gradient(kNoInputGradient);  // integer labels

  MF_REGISTER_OP(reshape)
      .describe("Same elements in a new shape (one size may be -1); a view when x is contiguous, else a copy.")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("shape", "", "New sizes; -1 once to infer.").mandatory())
      .list_args()
      .view()
      .infer_shape(reshape_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy) return {mf.reshape_as(gy, x)} end");

  MF_REGISTER_OP(transpose)
      .describe("Swaps two dims (a view).")
      .inputs({"x"})
      .param(Field::integer("dim0", 1, "First dim, 1-based."))
      .param(Field::integer("dim1", 2, "Second dim, 1-based."))
      .view()
      .infer_shape(transpose_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy, p) return {mf.transpose(gy, p.dim0, p.dim1)} end");

  MF_REGISTER_OP(permute)
      .describe("Reorders all dims: output dim i is input dim dims[i] (a view).")
      .inputs({"x"})
      .param(Field::int_list("dims", "", "A permutation of 1..ndim.").mandatory())
      .list_args()
      .view()
      .infer_shape(permute_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient(R"lua(
function(x, y, gy, p)
  local n, inv = #p.dims, {}
  for i, d in ipairs(p.dims) do
    if d < 0 then d = d + n + 1 end
    inv[d] = i
  end
  return {mf.permute(gy, inv)}
end)lua");

  MF_REGISTER_OP(narrow)
      .describe("length elements along dim starting at start, 1-based (a view).")
      .inputs({"x"})
      .param(Field::integer("dim", 1, "Dim to narrow, 1-based."))
      .param(Field::integer("start", 1, "First index kept, 1-based.").mandatory())
      .param(Field::integer("length", 1, "Number of indices kept.").mandatory())
      .view()
      .infer_shape(narrow_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy, p) return {mf.pad_like(gy, x, p.dim, p.start, 1)} end");

  MF_REGISTER_OP(slice)
      .describe("Indices start..stop (inclusive, 1-based, negative from the end) by step along dim (a view).")
      .inputs({"x"})
      .strided()
      .param(Field::integer("dim", 1, "Dim to slice, 1-based."))
      .param(Field::integer("start", 1, "First index, 1-based."))
      .param(Field::integer("stop", -1, "Last index, inclusive; -1 is the end."))
      .param(Field::integer("step", 1, "Stride between kept indices.").range(1, 1e15))
      .view()
      .infer_shape(slice_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy, p) return {mf.pad_like(gy, x, p.dim, p.start, p.step)} end");

  MF_REGISTER_OP(select)
      .describe("The slice at index along dim, with that dim removed (a view).")
      .inputs({"x"})
      .param(Field::integer("dim", 1, "Dim to index, 1-based."))
      .param(Field::integer("index", 1, "Index, 1-based (negative counts from the end).").mandatory())
      .view()
      .infer_shape(select_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient(R"lua(
function(x, y, gy, p)
  local n = x:dim()
  local d = p.dim < 0 and p.dim + n + 1 or p.dim
  return {mf.pad_like(mf.unsqueeze(gy, d), x, d, p.index, 1)}
end)lua");

  MF_REGISTER_OP(expand)
      .describe("Repeats size-1 dims (and adds leading ones) without copying: a view with stride 0.")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("size", "", "Target sizes; -1 keeps a dim.").mandatory())
      .list_args()
      .view()
      .infer_shape(expand_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy) return {mf.sum_to(gy, x)} end");

  MF_REGISTER_OP(squeeze)
      .describe("Removes size-1 dims: the listed ones, or all when none are listed (a view).")
      .inputs({"x"})
      .strided()
      .param(Field::int_list("dim", "", "Dims to remove if their size is 1; empty: every size-1 dim."))
      .view()
      .infer_shape(squeeze_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy) return {mf.reshape_as(gy, x)} end");

  MF_REGISTER_OP(unsqueeze)
      .describe("Inserts a size-1 dim at position dim (a view).")
      .inputs({"x"})
      .param(Field::integer("dim", 1, "Position of the new dim, 1..ndim+1.").mandatory())
      .view()
      .infer_shape(unsqueeze_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy) return {mf.reshape_as(gy, x)} end");

  MF_REGISTER_OP(contiguous)
      .describe("x itself when already contiguous, else a row-major copy.")
      .inputs({"x"})
      .view()
      .infer_shape(contiguous_shape)
      .lua_compute(MF_CPU, kViewKernel)
      .gradient("function(x, y, gy) return {gy} end");

  MF_REGISTER_OP(split)
      .describe("Cuts x along dim into views: chunks of one size (the last may be smaller) or the listed sizes. At "
                "most 65536 parts.")
      .inputs({"x"})
      .param(Field::int_list("size", "", "One chunk size, or the size of every part.").mandatory())
      .param(Field::integer("dim", 1, "Dim to split, 1-based."))
      .view()
      .list_output()
      .infer_shape(split_shape)
      .lua_compute(MF_CPU, kListViewKernel)
      .gradient("function(x, ys, gys, p) return {mf.concat(gys, p.dim)} end");

  MF_REGISTER_OP(concat)
      .describe("Joins tensors of one dtype along dim; all other sizes must match.")
      .alias("cat")
      .inputs({"tensors"})
      .strided()
      .variadic()
      .param(Field::integer("dim", 1, "Dim to join along, 1-based."))
      .infer_shape(concat_shape)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y = outs[1]
  local list, dim = K.tensor_list(ins), K.dim0(p.dim, y._ndim)
  local n = #ins
  return function() K.concat(y, n, list, dim) end
end)lua")
      .gradient(R"lua(
function(xs, y, gy, p)
  local res, at = {}, 1
  for i, x in ipairs(xs) do
    local n = x:size(p.dim)
    if not n then error('concat: its gradient needs every size along dim ' .. p.dim .. ' known when the graph is built') end
    res[i] = mf.narrow(gy, p.dim, at, n)
    at = at + n
  end
  return res
end)lua");
}

}  // namespace mf
