-- Cases of the shape ops: views (reshape, transpose, permute, narrow, slice, select, expand,
-- squeeze, unsqueeze, split), contiguous, and concat. References move elements by index.
local L = ...
local cases = {}

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
-- A case of op on one input of the given shape, exact, in every dtype; more: extra fields.
local function add(name, op, shape, params, ref, more)
  local c = {name = name, op = op, inputs = {L.input(shape)}, params = params, ref = ref, dtypes = DT, exact = true}
  for k, v in pairs(more or {}) do c[k] = v end
  cases[#cases + 1] = c
end
local function same(ins) return L.array(L.copy(ins[1].shape), L.copy(ins[1].data)) end

-- reshape ----------------------------------------------------------------------------------------
local function reshape_ref(ins, p)
  local x, s = ins[1], L.copy(p.shape)
  local known, at = 1, nil
  for i = 1, #s do if s[i] == -1 then at = i else known = known * s[i] end end
  if at then s[at] = #x.data / known end
  return L.array(s, L.copy(x.data))
end
add('reshape', 'reshape', {2, 3, 4}, {shape = {4, 6}}, reshape_ref, {args = {4, 6}})
add('reshape_infer', 'reshape', {2, 3, 4}, {shape = {-1, 2, 3}}, reshape_ref, {args = {{-1, 2, 3}}})
add('reshape_named', 'reshape', {3, 4}, {shape = {12}}, reshape_ref)
add('reshape_empty', 'reshape', {0, 4, 6}, {shape = {4, 0, 6}}, reshape_ref, {args = {4, 0, 6}})
add('reshape_empty_infer', 'reshape', {3, 0, 4}, {shape = {-1, 4}}, reshape_ref)
add('reshape_to_scalar', 'reshape', {1, 1}, {shape = {}}, reshape_ref, {args = {{}}})
add('reshape_from_scalar', 'reshape', {}, {shape = {1, 1, 1}}, reshape_ref, {args = {1, 1, 1}})
add('reshape_bad', 'reshape', {2, 3}, {shape = {4, 2}}, nil, {error = 'shape 4x2 has 8'})

-- transpose, permute -------------------------------------------------------------------------------
local function transpose_ref(ins, p)
  local nd, perm = #ins[1].shape, {}
  for d = 1, nd do perm[d] = d end
  local a, b = L.dim(p.dim0 or 1, nd), L.dim(p.dim1 or 2, nd)
  perm[a], perm[b] = perm[b], perm[a]
  return L.permute(ins[1], perm)
end
add('transpose', 'transpose', {3, 4}, nil, transpose_ref, {empty = {{{0, 4}}}})
add('transpose_13', 'transpose', {2, 3, 4}, {dim0 = 1, dim1 = 3}, transpose_ref, {args = {1, 3}, empty = {{{2, 0, 4}}}})
add('transpose_neg', 'transpose', {2, 3, 4}, {dim0 = -1, dim1 = -2}, transpose_ref)
add('transpose_same', 'transpose', {2, 3}, {dim0 = 2, dim1 = 2}, transpose_ref)
local function permute_ref(ins, p)
  local perm = {}
  for d, v in ipairs(p.dims) do perm[d] = L.dim(v, #p.dims) end
  return L.permute(ins[1], perm)
end
add('permute', 'permute', {2, 3, 4}, {dims = {3, 1, 2}}, permute_ref, {args = {3, 1, 2}, empty = {{{2, 0, 4}}}})
add('permute_4d', 'permute', {2, 3, 1, 4}, {dims = {2, 4, 1, 3}}, permute_ref, {args = {{2, 4, 1, 3}}})
add('permute_8d', 'permute', {2, 1, 3, 2, 1, 2, 2, 1}, {dims = {8, 3, 1, 6, 2, 7, 5, 4}}, permute_ref)
add('permute_repeated', 'permute', {2, 3, 1, 4}, {dims = {4, 2, -1, 1}}, nil, {error = 'listed twice'})

-- narrow, slice, select ------------------------------------------------------------------------------
local function narrow_ref(ins, p)
  return L.take(ins[1], L.dim(p.dim or 1, #ins[1].shape), p.start, p.length)
end
add('narrow', 'narrow', {4, 5}, {dim = 2, start = 2, length = 3}, narrow_ref, {args = {2, 2, 3}, empty = {{{0, 5}}}})
add('narrow_dim1', 'narrow', {5, 2, 3}, {dim = 1, start = 3, length = 2}, narrow_ref)
add('narrow_to_empty', 'narrow', {3, 4}, {dim = -1, start = 5, length = 0}, narrow_ref)
add('narrow_out_of_range', 'narrow', {3, 4}, {dim = 2, start = 3, length = 3}, nil, {error = 'must lie in 1..4'})
local function slice_ref(ins, p)
  local x = ins[1]
  local d = L.dim(p.dim or 1, #x.shape)
  local n = x.shape[d]
  local start, stop, step = p.start or 1, p.stop or -1, p.step or 1
  if start < 0 then start = start + n + 1 end
  if stop < 0 then stop = stop + n + 1 end
  local len = stop >= start and math.floor((stop - start) / step) + 1 or 0
  return L.take(x, d, start, len, step)
end
add('slice', 'slice', {3, 7}, {dim = 2, start = 2, stop = 6, step = 2}, slice_ref,
    {args = {2, 2, 6, 2}, empty = {{{0, 7}}}})
add('slice_negative', 'slice', {6, 2}, {dim = 1, start = -4, stop = -1}, slice_ref)
add('slice_step3', 'slice', {2, 8, 3}, {dim = 2, step = 3}, slice_ref)
add('slice_to_empty', 'slice', {4, 3}, {dim = 1, start = 3, stop = 2}, slice_ref)
local function select_ref(ins, p)
  local x = ins[1]
  local d = L.dim(p.dim or 1, #x.shape)
  local i = p.index < 0 and p.index + x.shape[d] + 1 or p.index
  return L.drop_dim(L.take(x, d, i, 1), d)
end
add('select', 'select', {3, 4, 2}, {dim = 2, index = 3}, select_ref, {args = {2, 3}, empty = {{{0, 4, 2}}}})
add('select_negative', 'select', {3, 4}, {dim = 1, index = -1}, select_ref)
add('select_1d', 'select', {5}, {dim = 1, index = 4}, select_ref)
add('select_out_of_range', 'select', {3, 4}, {dim = 1, index = 4}, nil, {error = 'out of range 1..3'})

-- expand, squeeze, unsqueeze -------------------------------------------------------------------------
local function expand_ref(ins, p)
  local x, want = ins[1], L.copy(p.size)
  local lead = #want - #x.shape
  for d = 1, #x.shape do if want[d + lead] == -1 then want[d + lead] = x.shape[d] end end
  local out = {}
  for i = 1, L.numel(want) do
    local idx, src = L.unravel(i, want), {}
    for d = 1, #x.shape do src[d] = x.shape[d] == 1 and 1 or idx[d + lead] end
    out[i] = L.at(x, src)
  end
  return L.array(want, out)
end
add('expand', 'expand', {3, 1}, {size = {2, 3, 4}}, expand_ref, {args = {2, 3, 4}})
add('expand_keep', 'expand', {1, 4}, {size = {3, -1}}, expand_ref, {args = {{3, -1}}})
add('expand_scalar', 'expand', {}, {size = {2, 3}}, expand_ref)
add('expand_empty', 'expand', {0, 1}, {size = {2, -1, 4}}, expand_ref)
add('expand_to_zero', 'expand', {3, 1}, {size = {3, 0}}, expand_ref)
add('expand_bad', 'expand', {3, 2}, {size = {3, 4}}, nil, {error = 'only size-1 dims expand'})
local function squeeze_ref(ins, p)
  local x, listed, s = ins[1], {}, {}
  for _, d in ipairs(p.dim or {}) do listed[L.dim(d, #x.shape)] = true end
  for d = 1, #x.shape do
    if not (x.shape[d] == 1 and (next(listed) == nil or listed[d])) then s[#s + 1] = x.shape[d] end
  end
  return L.array(s, L.copy(x.data))
end
add('squeeze', 'squeeze', {2, 1, 3, 1}, nil, squeeze_ref, {empty = {{{0, 1, 3}}}})
add('squeeze_dim', 'squeeze', {2, 1, 3, 1}, {dim = {2}}, squeeze_ref, {args = {2}})
add('squeeze_dims', 'squeeze', {1, 3, 1}, {dim = {-1, 2}}, squeeze_ref)  -- dim 2 has size 3: kept
add('squeeze_all_ones', 'squeeze', {1, 1}, nil, squeeze_ref)
local function unsqueeze_ref(ins, p)
  local x = ins[1]
  local s = L.copy(x.shape)
  table.insert(s, p.dim < 0 and p.dim + #x.shape + 2 or p.dim, 1)
  return L.array(s, L.copy(x.data))
end
add('unsqueeze', 'unsqueeze', {3, 4}, {dim = 2}, unsqueeze_ref, {args = {2}, empty = {{{0, 4}}}})
add('unsqueeze_first', 'unsqueeze', {3, 4}, {dim = 1}, unsqueeze_ref)
add('unsqueeze_last', 'unsqueeze', {3, 4}, {dim = 3}, unsqueeze_ref)
add('unsqueeze_neg', 'unsqueeze', {2, 3, 2}, {dim = -1}, unsqueeze_ref)
add('unsqueeze_scalar', 'unsqueeze', {}, {dim = 1}, unsqueeze_ref)

-- contiguous -----------------------------------------------------------------------------------
local function is_row_major(outs)
  local t, acc = outs[1], 1
  if t._count == 0 then return nil end
  for d = t._ndim - 1, 0, -1 do
    if t._shape[d] ~= 1 and t._strides[d] ~= acc then return 'result is not contiguous' end
    acc = acc * tonumber(t._shape[d])
  end
end
add('contiguous', 'contiguous', {2, 3, 4}, nil, same, {check_out = is_row_major, empty = {{{3, 0}}}})
add('contiguous_scalar', 'contiguous', {}, nil, same, {check_out = is_row_major})

-- split, concat --------------------------------------------------------------------------------------
local function split_ref(ins, p)
  local x = ins[1]
  local d = L.dim(p.dim or 1, #x.shape)
  local n, sizes, parts, at = x.shape[d], p.size, {}, 1
  if #sizes == 1 then  -- chunks of one size, the last may be smaller
    sizes = {}
    for s = 1, n, p.size[1] do sizes[#sizes + 1] = math.min(p.size[1], n - s + 1) end
  end
  for i, s in ipairs(sizes) do
    parts[i] = L.take(x, d, at, s)
    at = at + s
  end
  return parts
end
add('split', 'split', {5, 3}, {size = {2}, dim = 1}, split_ref, {args = {2, 1}, empty = {{{5, 0}}}})
add('split_sizes', 'split', {3, 6}, {size = {1, 0, 5}, dim = 2}, split_ref, {args = {{1, 0, 5}, 2}, empty = {{{0, 6}}}})
add('split_even', 'split', {2, 6, 2}, {size = {3}, dim = 2}, split_ref, {args = {3, {dim = 2}}})
add('split_bad_sizes', 'split', {4}, {size = {1, 2}, dim = 1}, nil, {args = {{1, 2}, 1}, error = 'sizes add up to 3'})
local function concat_ref(ins, p) return L.join(ins, L.dim(p.dim or 1, #ins[1].shape)) end
local function concat(name, shapes, params, more)
  add(name, 'concat', shapes[1], params, concat_ref, more)
  local c = cases[#cases]
  for i, s in ipairs(shapes) do c.inputs[i] = L.input(s) end
end
concat('concat', {{2, 3}, {1, 3}, {0, 3}, {3, 3}}, nil, {empty = {{{0, 3}, {0, 3}, {0, 3}, {0, 3}}}})
concat('concat_dim2', {{2, 1, 2}, {2, 3, 2}}, {dim = 2}, {args = {2}, empty = {{{0, 1, 2}, {0, 3, 2}}}})
concat('concat_neg', {{2, 2}, {2, 3}}, {dim = -1})
concat('concat_one', {{3, 2}}, nil)
concat('concat_bad', {{2, 2}, {3, 3}}, {dim = 1}, {error = 'all sizes but dim 1 must match'})

return cases
