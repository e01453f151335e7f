-- Cases of the indexing ops (src/op/index.cc): gather, scatter, scatter_add, index_add,
-- masked_fill, masked_select, nonzero. References move elements by 1-based coordinates, writing
-- repeated destinations in the index's row-major order (scatter: the last write wins).
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local function input(shape, ...) return L.input(shape, ...) end
-- an int64 index with values in lo..hi (the harness draws them; repeats happen)
local function index(shape, lo, hi) return input(shape, {dtype = 'int64', ilo = lo, ihi = hi}) end
local MASK = {dtype = 'uint8', ilo = 0, ihi = 1}

-- gather ---------------------------------------------------------------------------------------
local function gather_ref(ins, p)
  local x, idx = ins[1], ins[2]
  local d, out = L.dim(p.dim or 1, #x.shape), {}
  for i = 1, L.numel(idx.shape) do
    local c = L.unravel(i, idx.shape)
    c[d] = idx.data[i]
    out[i] = L.at(x, c)
  end
  return L.array(L.copy(idx.shape), out)
end
add{name = 'gather', op = 'gather', inputs = {input({4, 3}), index({5, 3}, 1, 4)}, params = {dim = 1}, args = {1},
    ref = gather_ref, dtypes = DT, exact = true, empty = {{{4, 3}, {0, 3}}, {{0, 3}, {0, 2}}}}
add{name = 'gather_dim2', op = 'gather', inputs = {input({3, 5}), index({3, 2}, 1, 5)}, params = {dim = 2},
    ref = gather_ref, dtypes = DT, exact = true}
-- an index smaller than x off dim (PyTorch allows it), 3-D, dim counted from the end
add{name = 'gather_3d_neg', op = 'gather', inputs = {input({2, 4, 3}), index({2, 3, 2}, 1, 3)}, params = {dim = -1},
    args = {-1}, ref = gather_ref, exact = true}
add{name = 'gather_nan', op = 'gather', inputs = {input({3, 4}, {nan = 3}), index({2, 4}, 1, 3)}, params = {dim = 1},
    ref = gather_ref, exact = true}
add{name = 'gather_out_of_range', op = 'gather', inputs = {input({4, 3}), index({2, 3}, 5, 5)}, params = {dim = 1},
    error = 'gather: index 5 at position [1,1] of the index is out of range 1..4 along dim 1 of x (4x3)'}
add{name = 'gather_zero_index', op = 'gather', inputs = {input({4, 3}), index({2, 3}, 0, 0)}, params = {dim = 2},
    error = 'index 0 at position [1,1] of the index is out of range 1..3 along dim 2'}
add{name = 'gather_int32_index', op = 'gather', inputs = {input({4, 3}),
    input({2, 3}, {dtype = 'int32', ilo = 1, ihi = 3})},
    error = 'gather: index is int32; expected int64'}
add{name = 'gather_index_too_big', op = 'gather', inputs = {input({4, 3}), index({2, 4}, 1, 3)}, params = {dim = 1},
    error = "gather: x is 4x3, index 2x4; expected an index of x's rank (2) no larger than x in every dim but dim 1"}
add{name = 'gather_index_rank', op = 'gather', inputs = {input({4, 3}), index({6}, 1, 3)},
    error = "expected an index of x's rank"}
add{name = 'gather_bad_dim', op = 'gather', inputs = {input({4, 3}), index({2, 3}, 1, 3)}, params = {dim = 3},
    error = 'gather'}

-- scatter, scatter_add -----------------------------------------------------------------------------
local function scatter_ref(accumulate)
  return function(ins, p)
    local x, idx, src = ins[1], ins[2], ins[3]
    local d, out = L.dim(p.dim or 1, #x.shape), L.copy(x.data)
    for i = 1, L.numel(idx.shape) do
      local c = L.unravel(i, idx.shape)
      local s = #src.shape == 0 and src.data[1] or L.at(src, c)
      c[d] = idx.data[i]
      local k = L.ravel(c, x.shape)
      out[k] = accumulate and out[k] + s or s
    end
    return L.array(L.copy(x.shape), out)
  end
end
for _, v in ipairs{{'scatter', false}, {'scatter_add', true}} do
  local op, ref = v[1], scatter_ref(v[2])
  -- 5 indices into 3 rows: repeats in every column (the last write wins / they accumulate)
  add{name = op, op = op, inputs = {input({3, 4}), index({5, 4}, 1, 3), input({5, 4})}, params = {dim = 1}, args = {1},
      ref = ref, dtypes = DT, exact = not v[2], empty = {{{3, 4}, {0, 4}, {0, 4}}, {{3, 0}, {2, 0}, {2, 0}}}}
  add{name = op .. '_dim2', op = op, inputs = {input({2, 3, 4}), index({2, 3, 6}, 1, 4), input({2, 3, 6})},
      params = {dim = 3}, ref = ref, dtypes = DT, exact = not v[2]}
  -- src larger than the index (only its leading block is used); an index smaller than x off dim
  add{name = op .. '_src_larger', op = op, inputs = {input({4, 5}), index({2, 3}, 1, 5), input({3, 4})},
      params = {dim = -1}, args = {-1}, ref = ref, exact = not v[2]}
  add{name = op .. '_number', op = op, inputs = {input({3, 4}), index({2, 4}, 1, 3), input({}, {number = true})},
      params = {dim = 1}, ref = ref, dtypes = DT, exact = not v[2]}
  add{name = op .. '_scalar_tensor', op = op, inputs = {input({3, 4}), index({3, 2}, 1, 4), input({})},
      params = {dim = 2}, ref = ref, exact = not v[2]}
  add{name = op .. '_nan', op = op, inputs = {input({3, 4}, {nan = 2}), index({2, 4}, 1, 3), input({2, 4}, {nan = 3})},
      params = {dim = 1}, ref = ref, exact = not v[2]}
  add{name = op .. '_out_of_range', op = op, inputs = {input({3, 4}), index({2, 4}, -1, -1), input({2, 4})},
      params = {dim = 1},
      error = op .. ': index -1 at position [1,1] of the index is out of range 1..3 along dim 1 of x (3x4)'}
  add{name = op .. '_src_too_small', op = op, inputs = {input({3, 4}), index({2, 4}, 1, 3), input({2, 3})},
      params = {dim = 1}, error = op .. ': index is 2x4, src 2x3; expected src to be a number (0-dim) or of the index'}
  add{name = op .. '_dtypes', op = op, inputs = {input({3, 4}), index({2, 4}, 1, 3),
      input({2, 4}, {dtype = 'float64'})},
      dtypes = {'float32'}, error = op .. ': x is float32, src float64; expected one dtype'}
  add{name = op .. '_float_index', op = op, inputs = {input({3, 4}), input({2, 4}), input({2, 4})},
      dtypes = {'float32'}, error = op .. ': index is float32; expected int64'}
end

-- index_add ------------------------------------------------------------------------------------------
local function index_add_ref(ins, p)
  local x, idx, src = ins[1], ins[2], ins[3]
  local d, out = L.dim(p.dim or 1, #x.shape), L.copy(x.data)
  for i = 1, L.numel(src.shape) do
    local c = L.unravel(i, src.shape)
    c[d] = idx.data[c[d]]
    local k = L.ravel(c, x.shape)
    out[k] = out[k] + src.data[i]
  end
  return L.array(L.copy(x.shape), out)
end
-- 6 indices into 3 slices: repeats accumulate
add{name = 'index_add', op = 'index_add', inputs = {input({3, 4}), index({6}, 1, 3), input({6, 4})}, params = {dim = 1},
    args = {1}, ref = index_add_ref, dtypes = DT, empty = {{{3, 4}, {0}, {0, 4}}, {{3, 0}, {2}, {2, 0}}}}
add{name = 'index_add_dim2', op = 'index_add', inputs = {input({2, 5, 3}), index({4}, 1, 5), input({2, 4, 3})},
    params = {dim = 2}, ref = index_add_ref, dtypes = DT}
add{name = 'index_add_neg_dim', op = 'index_add', inputs = {input({2, 3}), index({5}, 1, 3), input({2, 5})},
    params = {dim = -1}, ref = index_add_ref}
add{name = 'index_add_out_of_range', op = 'index_add', inputs = {input({3, 4}), index({2}, 4, 4), input({2, 4})},
    params = {dim = 1}, error = 'index_add: index 4 at position [1] of the index is out of range 1..3 along dim 1'}
add{name = 'index_add_bad_src', op = 'index_add', inputs = {input({3, 4}), index({2}, 1, 3), input({3, 4})},
    params = {dim = 1}, error = 'index_add: x is 3x4, index 2, src 3x4; expected a 1-D index and src of x'}
add{name = 'index_add_2d_index', op = 'index_add', inputs = {input({3, 4}), index({2, 1}, 1, 3), input({2, 4})},
    error = 'expected a 1-D index'}

-- masked_fill ----------------------------------------------------------------------------------------
local function masked_fill_ref(ins)
  local x, m, v = ins[1], L.spread(ins[2], ins[1].shape), ins[3].data[1]
  local out = {}
  for i = 1, #x.data do out[i] = m[i] ~= 0 and v or x.data[i] end
  return L.array(L.copy(x.shape), out)
end
add{name = 'masked_fill', op = 'masked_fill', inputs = {input({3, 4}), input({3, 4}, MASK), input({}, {number = true})},
    ref = masked_fill_ref, dtypes = DT, exact = true, empty = {{{0, 4}, {0, 4}, {}}}}
add{name = 'masked_fill_bcast', op = 'masked_fill', inputs = {input({2, 3, 4}), input({3, 1}, MASK), input({})},
    ref = masked_fill_ref, dtypes = DT, exact = true}
add{name = 'masked_fill_nan', op = 'masked_fill', inputs = {input({3, 4}, {nan = 2}), input({4}, MASK),
    input({}, {number = true, values = {0 / 0}})}, ref = masked_fill_ref, exact = true}
add{name = 'masked_fill_not_bcast', op = 'masked_fill', inputs = {input({3, 4}), input({3}, MASK),
    input({}, {number = true})},
    error = 'masked_fill: x is 3x4, mask 3; the mask must broadcast to x'}
add{name = 'masked_fill_mask_larger', op = 'masked_fill', inputs = {input({4}), input({3, 4}, MASK),
    input({}, {number = true})},
    error = 'the mask must broadcast to x'}
add{name = 'masked_fill_float_mask', op = 'masked_fill', inputs = {input({3, 4}), input({3, 4}),
    input({}, {number = true})},
    dtypes = {'float32'}, error = 'masked_fill: mask is float32; expected uint8'}
add{name = 'masked_fill_value_shape', op = 'masked_fill', inputs = {input({3, 4}), input({3, 4}, MASK), input({4})},
    error = 'masked_fill: value is 4; expected a number or a 0-dim tensor'}

-- in-place forms: input 1 written through its strides (every layout but expanded) and returned --------
local function inplace(ref)
  return function(ins, p, dtype)
    local r = ref(ins, p, dtype)
    return {r, written = {r}}
  end
end
add{name = 'scatter_', op = 'scatter_', inputs = {input({3, 4}), index({5, 4}, 1, 3), input({5, 4})},
    params = {dim = 1},
    args = {1}, writes = {1}, ref = inplace(scatter_ref(false)), check_out = L.views_input1, dtypes = DT, exact = true,
    empty = {{{3, 4}, {0, 4}, {0, 4}}}}
add{name = 'scatter__number', op = 'scatter_', inputs = {input({3, 4}), index({3, 2}, 1, 4),
    input({}, {number = true})},
    params = {dim = 2}, writes = {1}, ref = inplace(scatter_ref(false)), check_out = L.views_input1, dtypes = DT,
    exact = true}
add{name = 'scatter_add_', op = 'scatter_add_', inputs = {input({2, 3, 4}), index({2, 3, 6}, 1, 4), input({2, 3, 6})},
    params = {dim = 3}, writes = {1}, ref = inplace(scatter_ref(true)), check_out = L.views_input1, dtypes = DT}
add{name = 'index_add_', op = 'index_add_', inputs = {input({3, 4}), index({6}, 1, 3), input({6, 4})},
    params = {dim = 1},
    args = {1}, writes = {1}, ref = inplace(index_add_ref), check_out = L.views_input1, dtypes = DT,
    empty = {{{3, 4}, {0}, {0, 4}}}}
add{name = 'index_add__dim2', op = 'index_add_', inputs = {input({2, 5, 3}), index({4}, 1, 5), input({2, 4, 3})},
    params = {dim = 2}, writes = {1}, ref = inplace(index_add_ref), check_out = L.views_input1}
add{name = 'masked_fill_', op = 'masked_fill_', inputs = {input({3, 4}), input({4}, MASK), input({}, {number = true})},
    writes = {1}, ref = inplace(masked_fill_ref), check_out = L.views_input1, dtypes = DT, exact = true,
    empty = {{{0, 4}, {4}, {}}}}
add{name = 'masked_fill__tensor', op = 'masked_fill_', inputs = {input({2, 3, 4}), input({3, 1}, MASK), input({})},
    writes = {1}, ref = inplace(masked_fill_ref), check_out = L.views_input1, exact = true}
add{name = 'scatter__out_of_range', op = 'scatter_', inputs = {input({3, 4}), index({2, 4}, 4, 4), input({2, 4})},
    params = {dim = 1}, error = 'scatter: index 4 at position [1,1] of the index is out of range 1..3 along dim 1'}
add{name = 'masked_fill__not_bcast', op = 'masked_fill_', inputs = {input({4}), input({3, 4}, MASK),
    input({}, {number = true})},
    error = 'masked_fill_: x is 4, mask 3x4; the mask must broadcast to x'}
-- x keeps its dtype in place: a fraction cannot go into an integer x (masked_fill promotes instead)
add{name = 'masked_fill__int_fraction', op = 'masked_fill_', inputs = {input({3}, {dtype = 'int64'}), input({3}, MASK),
    input({}, {number = true, dtype = 'float64', values = {0.5}})}, dtypes = {'float32'},
    error = 'masked_fill_: the number 0.5 (input 3, value) is not an integer'}

-- masked_select, nonzero: without size eager only (the output size depends on the values); with
-- size (the first size selected, then fill_value) in graphs too, placeholders' sizes known or not
local function masked_select_ref(ins)
  local x, m = ins[1], ins[2]
  local s = L.broadcast_shape({x.shape, m.shape})
  local xs, ms, out = L.spread(x, s), L.spread(m, s), {}
  for i = 1, #xs do if ms[i] ~= 0 then out[#out + 1] = xs[i] end end
  return L.array({#out}, out)
end
add{name = 'masked_select', op = 'masked_select', inputs = {input({3, 4}), input({3, 4}, MASK)}, eager_only = true,
    ref = masked_select_ref, dtypes = DT, exact = true, empty = {{{0, 4}, {0, 4}}, {{3, 0}, {1}}}}
add{name = 'masked_select_bcast', op = 'masked_select', inputs = {input({2, 1, 4}), input({3, 1}, MASK)},
    eager_only = true, ref = masked_select_ref, dtypes = DT, exact = true}
add{name = 'masked_select_none', op = 'masked_select', inputs = {input({3, 4}), input({4}, {dtype = 'uint8', ilo = 0,
    ihi = 0})},
    eager_only = true, ref = masked_select_ref, exact = true}
add{name = 'masked_select_nan', op = 'masked_select', inputs = {input({5, 2}, {nan = 2}), input({5, 1}, MASK)},
    eager_only = true, ref = masked_select_ref, exact = true}
-- the reference's selection cut to size, or padded with the fill value to it (width: values per row)
local function sized(ref, width)
  return function(ins, p)
    local a, n = ref(ins), p.size
    local w = width and width(ins) or 1
    local fill = p.fill_value or 0
    local out = {}
    for i = 1, n * w do out[i] = a.data[i] == nil and fill or a.data[i] end
    return L.array(width and {n, w} or {n}, out)
  end
end
-- 12 elements, a random 0/1 mask: size 5 cuts some selections, pads others; 26 pads every one of 24
add{name = 'masked_select_size', op = 'masked_select', inputs = {input({3, 4}), input({3, 4}, MASK)},
    params = {size = 5, fill_value = 7}, ref = sized(masked_select_ref), dtypes = DT, exact = true,
    empty = {{{0, 4}, {0, 4}}, {{3, 0}, {1}}}}
add{name = 'masked_select_size_pad', op = 'masked_select', inputs = {input({2, 1, 4}), input({3, 1}, MASK)},
    params = {size = 26}, ref = sized(masked_select_ref), dtypes = DT, exact = true}
add{name = 'masked_select_size_0', op = 'masked_select', inputs = {input({3, 4}), input({4}, MASK)},
    params = {size = 0}, ref = sized(masked_select_ref), exact = true}
add{name = 'masked_select_size_nan', op = 'masked_select', inputs = {input({5, 2}, {nan = 2}), input({5, 1}, MASK)},
    params = {size = 8, fill_value = 0 / 0}, ref = sized(masked_select_ref), exact = true}
add{name = 'masked_select_size_fraction_int', op = 'masked_select', inputs = {input({3}, {dtype = 'int32'}),
    input({3}, MASK)}, params = {size = 2, fill_value = 0.5}, dtypes = {'float32'},
    error = 'masked_select: fill_value 0.5 is not an integer; x is int32'}
add{name = 'masked_select_not_bcast', op = 'masked_select', inputs = {input({3, 4}), input({3}, MASK)},
    error = 'masked_select: x is 3x4, mask is 3'}
add{name = 'masked_select_int_mask', op = 'masked_select', inputs = {input({3, 4}), input({3, 4}, {dtype = 'int64'})},
    error = 'masked_select: mask is int64; expected uint8'}

local function nonzero_ref(ins)
  local x, out, n = ins[1], {}, 0
  for i = 1, #x.data do
    if x.data[i] ~= 0 then  -- NaN too
      n = n + 1
      for _, c in ipairs(L.unravel(i, x.shape)) do out[#out + 1] = c end
    end
  end
  return L.array({n, #x.shape}, out)
end
-- values -2..2 in steps of 1: zeros in every layout
add{name = 'nonzero', op = 'nonzero', inputs = {input({3, 4}, {lo = -2, hi = 2, step = 1, ilo = -2, ihi = 2})},
    eager_only = true,
    ref = nonzero_ref, dtypes = DT, out_dtype = 'int64', exact = true, empty = {{{0, 4}}}}
add{name = 'nonzero_3d', op = 'nonzero', inputs = {input({2, 3, 2}, {lo = -1, hi = 1, step = 1, ilo = -1, ihi = 1})},
    eager_only = true,
    ref = nonzero_ref, dtypes = DT, out_dtype = 'int64', exact = true}
add{name = 'nonzero_1d_nan', op = 'nonzero', inputs = {input({7}, {values = {0, 1, 0 / 0, 0, -3}})}, eager_only = true,
    ref = nonzero_ref, out_dtype = 'int64', exact = true}
local function ndim(ins) return #ins[1].shape end
-- 12 elements in -2..2 by 1: zeros in every layout; size 4 cuts, 13 always pads
add{name = 'nonzero_size', op = 'nonzero', inputs = {input({3, 4}, {lo = -2, hi = 2, step = 1, ilo = -2, ihi = 2})},
    params = {size = 4, fill_value = -1}, ref = sized(nonzero_ref, ndim), dtypes = DT, out_dtype = 'int64', exact = true,
    empty = {{{0, 4}}}}
add{name = 'nonzero_size_pad', op = 'nonzero', inputs = {input({2, 3, 2}, {lo = -1, hi = 1, step = 1, ilo = -1,
    ihi = 1})}, params = {size = 13}, ref = sized(nonzero_ref, ndim), dtypes = DT, out_dtype = 'int64', exact = true}
add{name = 'nonzero_size_nan', op = 'nonzero', inputs = {input({7}, {values = {0, 1, 0 / 0, 0, -3}})},
    params = {size = 5, fill_value = 99}, ref = sized(nonzero_ref, ndim), out_dtype = 'int64', exact = true}
add{name = 'nonzero_scalar', op = 'nonzero', inputs = {input({}, {values = {5}})}, eager_only = true,
    ref = nonzero_ref, out_dtype = 'int64', exact = true}

return cases
