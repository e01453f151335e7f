-- Cases of the ops that return values and 1-based indices along a dim (max and min over one dim or
-- more, sort, topk, kthvalue) and the running sums and products (cumsum, cumprod, cumprod_grad).
-- The references order each line in plain Lua: NaN above every number, equal values by position.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local huge, nan = math.huge, 0 / 0
local input = L.input
local ALL = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local TIES = {step = 0.5, ilo = 0, ihi = 4}  -- few distinct values: ties in every line
local TWO_NANS = {values = {1, nan, 3, nan, 5, 6, 7, 8, 9, -1, nan, nan, 2, 4, 6, 8, 10, 12}}

-- f(o, pos) for each line of shape along dim d (1-based): o counts lines row-major over the other
-- dims, pos lists the line's 1-based flat positions. A 0-dim shape is one line of one element.
local function each_line(shape, d, f)
  if #shape == 0 then return f(1, {1}) end
  local st, other, ost = L.strides(shape), {}, {}
  for k = 1, #shape do
    if k ~= d then other[#other + 1], ost[#ost + 1] = shape[k], st[k] end
  end
  L.walk(other, {ost}, function(o, off)
    local pos = {}
    for j = 1, shape[d] do pos[j] = off[1] + (j - 1) * st[d] + 1 end
    f(o, pos)
  end)
end

-- shape with dim d of size n, or dropped (n == nil)
local function with_dim(shape, d, n)
  local s = {}
  for k = 1, #shape do
    if k ~= d then s[#s + 1] = shape[k] elseif n then s[#s + 1] = n end
  end
  return s
end

-- the stable order: a, b are {value, position}
local function order(desc)
  return function(a, b)
    local na, nb = a[1] ~= a[1], b[1] ~= b[1]
    if na or nb then
      if na == nb then return a[2] < b[2] end
      if desc then return na end
      return nb
    end
    if a[1] ~= b[1] then
      if desc then return a[1] > b[1] end
      return a[1] < b[1]
    end
    return a[2] < b[2]
  end
end

-- each line of x along d, as {value, position} pairs in the stable order
local function sorted_lines(x, d, desc, f)
  each_line(x.shape, d, function(o, pos)
    local items = {}
    for j, p in ipairs(pos) do items[j] = {x.data[p], j} end
    table.sort(items, order(desc))
    f(o, items)
  end)
end

local function dim_of(p, x, default) return #x.shape == 0 and 1 or L.dim(p.dim or default, #x.shape) end

-- the first k of each line (all when k is nil) along dim d; values and int64 indices
local function first_k(x, d, desc, k, by_position)
  local n = #x.shape == 0 and 1 or x.shape[d]
  k = k or n
  local oshape = #x.shape == 0 and (k == 0 and {0} or {}) or with_dim(x.shape, d, k)
  local v, i, lines = {}, {}, {}
  each_line(#oshape == 0 and {1} or oshape, #oshape == 0 and 1 or d, function(o, pos) lines[o] = pos end)
  sorted_lines(x, d, desc, function(o, items)
    local top = {}
    for j = 1, k do top[j] = items[j] end
    if by_position then table.sort(top, function(a, b) return a[2] < b[2] end) end
    for j = 1, k do
      v[lines[o][j]], i[lines[o][j]] = top[j][1], top[j][2]
    end
  end)
  return {L.array(oshape, v), {shape = L.copy(oshape), data = i, dtype = 'int64'}}
end

-- one element per line: pick(items) -> the chosen {value, position}
local function per_line(x, d, keepdim, pick)
  local oshape = #x.shape == 0 and {} or with_dim(x.shape, d, keepdim and 1 or nil)
  local v, i = {}, {}
  each_line(x.shape, d, function(o, pos)
    local items = {}
    for j, p in ipairs(pos) do items[j] = {x.data[p], j} end
    local best = pick(items)
    v[o], i[o] = best[1], best[2]
  end)
  return {L.array(oshape, v), {shape = L.copy(oshape), data = i, dtype = 'int64'}}
end

-- max and min -------------------------------------------------------------------------------------
-- over one dim: the first NaN, else the first extreme; over none (all) or several: the value only
local function extreme(is_min)
  local function fold(v)
    local m = is_min and huge or -huge
    for j = 1, #v do
      if v[j] ~= v[j] then return nan end
      if (is_min and v[j] < m) or (not is_min and v[j] > m) then m = v[j] end
    end
    return m
  end
  return function(ins, p)
    local x, dims = ins[1], p.dim or {}
    if type(dims) == 'number' then dims = {dims} end
    if #dims ~= 1 then return L.reduce(x, dims, p.keepdim, fold) end
    return per_line(x, dim_of({dim = dims[1]}, x), p.keepdim, function(items)
      local best = items[1]
      for _, it in ipairs(items) do
        if it[1] ~= it[1] then return it end
        if (is_min and it[1] < best[1]) or (not is_min and it[1] > best[1]) then best = it end
      end
      return best
    end)
  end
end

-- suffix, input shape, args (as a user writes them), params (their meaning), empty variants
local VARIANTS = {
  {'', {2, 3, 4}, nil, {}},
  {'_dim2', {2, 3, 4}, {2}, {dim = {2}}, {{{0, 3, 4}}, {{2, 3, 0}}}},
  {'_dim1', {4, 5}, {1}, {dim = {1}}},
  {'_dims13_keepdim', {2, 3, 4}, nil, {dim = {1, 3}, keepdim = true}, {{{2, 0, 4}}}},
  {'_dim_neg_keepdim', {2, 3, 4}, {-1, true}, {dim = {-1}, keepdim = true}},
  {'_dims_list', {2, 3, 4}, {{3, 2}}, {dim = {3, 2}}, {{{0, 3, 4}}}},
  {'_1d', {7}, {1}, {dim = {1}}},
  {'_scalar', {}, nil, {}},
  {'_scalar_dim', {}, {1}, {dim = {1}}},
  {'_scalar_dim_keepdim', {}, {-1, true}, {dim = {-1}, keepdim = true}},
}
for _, name in ipairs{'max', 'min'} do
  local ref = extreme(name == 'min')
  for _, v in ipairs(VARIANTS) do
    add{name = name .. v[1], op = name, inputs = {input(v[2], TIES)}, args = v[3], params = v[4], dtypes = ALL,
        exact = true, ref = ref, empty = v[5]}
  end
  add{name = name .. '_of_empty', op = name, inputs = {input({3, 0})}, params = {dim = {2}},
      error = 'cannot reduce over dim 2 of size 0'}
  add{name = name .. '_all_of_empty', op = name, inputs = {input({0, 3})}, error = 'of size 0'}
  add{name = name .. '_nan', op = name, inputs = {input({4, 6}, {step = 0.5, nan = 9})}, params = {dim = {2}},
      exact = true, ref = ref}
  -- several NaNs in a line: the value is NaN, the index the first NaN's (PyTorch)
  add{name = name .. '_two_nans', op = name, inputs = {input({3, 6}, TWO_NANS)}, args = {2}, params = {dim = {2}},
      exact = true, ref = ref}
  add{name = name .. '_two_nans_dim1', op = name, inputs = {input({6, 3}, TWO_NANS)}, args = {1, true},
      params = {dim = {1}, keepdim = true}, exact = true, ref = ref}
  add{name = name .. '_all_nans', op = name, inputs = {input({3, 6}, TWO_NANS)}, exact = true, ref = ref}
  add{name = name .. '_threads', op = name, inputs = {input({200, 300}, TIES)}, args = {1}, params = {dim = {1}},
      exact = true, ref = ref}
  add{name = name .. '_bad_dim', op = name, inputs = {input({2, 3})}, args = {3}, error = 'dim 3 out of range'}
  add{name = name .. '_dim_twice', op = name, inputs = {input({2, 3})}, args = {{1, -2}}, error = 'listed twice'}
end

-- sort / topk / kthvalue --------------------------------------------------------------------------
local function sort_ref(ins, p)
  local x = ins[1]
  return first_k(x, dim_of(p, x, -1), p.descending)
end
local function topk_ref(ins, p)
  local x = ins[1]
  local largest = p.largest ~= false
  return first_k(x, dim_of(p, x, -1), largest, p.k, p.sorted == false)
end
local function kthvalue_ref(ins, p)
  local x = ins[1]
  return per_line(x, dim_of(p, x, -1), p.keepdim, function(items)
    table.sort(items, order(false))
    return items[p.k]
  end)
end

local SORTS = {  -- suffix, shape, args, params, empty variants
  {'', {3, 5}, nil, {}, {{{0, 5}}, {{3, 0}}}},
  {'_dim1', {5, 3}, {1}, {dim = 1}, {{{0, 3}}}},
  {'_desc', {2, 3, 4}, {2, true}, {dim = 2, descending = true}, {{{2, 0, 4}}}},
  {'_desc_last', {2, 3, 4}, {{descending = true}}, {descending = true}},
  {'_neg_dim', {2, 3, 4}, {-3}, {dim = -3}},
  {'_1d', {9}, nil, {}},
  {'_scalar', {}, nil, {}},
}
for _, v in ipairs(SORTS) do
  add{name = 'sort' .. v[1], op = 'sort', inputs = {input(v[2], TIES)}, args = v[3], params = v[4], dtypes = ALL,
      exact = true, ref = sort_ref, empty = v[5]}
end
add{name = 'sort_nan', op = 'sort', inputs = {input({3, 6}, TWO_NANS)}, exact = true, ref = sort_ref}
add{name = 'sort_nan_desc', op = 'sort', inputs = {input({6, 3}, TWO_NANS)}, args = {1, true},
    params = {dim = 1, descending = true}, exact = true, ref = sort_ref}
add{name = 'sort_infs', op = 'sort', inputs = {input({8}, {values = {huge, -huge, 0, nan, -0.5, huge, 3, -huge}})},
    exact = true, ref = sort_ref}
add{name = 'sort_threads', op = 'sort', inputs = {input({300, 40}, TIES)}, dtypes = {'float32', 'int32'},
    exact = true, ref = sort_ref}
add{name = 'sort_bad_dim', op = 'sort', inputs = {input({2, 3})}, args = {-3}, error = 'sort: dim -3 out of range'}

local TOPKS = {  -- suffix, shape, args, params, empty variants
  {'', {3, 5}, {2}, {k = 2}, {{{0, 5}}}},
  {'_dim1_smallest', {5, 3}, {3, 1, false}, {k = 3, dim = 1, largest = false}, {{{5, 0}}}},
  {'_unsorted', {2, 6, 3}, {4, 2, true, false}, {k = 4, dim = 2, sorted = false}},
  {'_unsorted_smallest', {2, 6}, {3, -1, false, false}, {k = 3, largest = false, sorted = false}},
  {'_all', {2, 4}, {4}, {k = 4}},
  {'_all_unsorted', {2, 4}, {4, 2, false, false}, {k = 4, dim = 2, largest = false, sorted = false}},
  {'_k0', {2, 4}, {0}, {k = 0}},
  {'_table', {4, 3}, {{k = 2, dim = 1}}, {k = 2, dim = 1}},
  {'_scalar', {}, {1}, {k = 1}},
  {'_scalar_k0', {}, {0}, {k = 0}},
}
for _, v in ipairs(TOPKS) do
  add{name = 'topk' .. v[1], op = 'topk', inputs = {input(v[2], TIES)}, args = v[3], params = v[4], dtypes = ALL,
      exact = true, ref = topk_ref, empty = v[5]}
end
add{name = 'topk_nan', op = 'topk', inputs = {input({3, 6}, TWO_NANS)}, args = {3}, params = {k = 3}, exact = true,
    ref = topk_ref}
add{name = 'topk_nan_smallest', op = 'topk', inputs = {input({3, 6}, TWO_NANS)}, args = {5, 2, false},
    params = {k = 5, dim = 2, largest = false}, exact = true, ref = topk_ref}
add{name = 'topk_k_too_big', op = 'topk', inputs = {input({2, 4})}, args = {5},
    error = 'topk: k is 5; expected 0..4 (the size of dim 2 of x, 2x4)'}
add{name = 'topk_k_negative', op = 'topk', inputs = {input({2, 4})}, args = {-1, 1}, error = 'topk: k is -1'}

local KTHS = {  -- suffix, shape, args, params
  {'', {3, 5}, {2}, {k = 2}},
  {'_dim1_keepdim', {5, 3}, {5, 1, true}, {k = 5, dim = 1, keepdim = true}},
  {'_first', {2, 3, 4}, {1, 2}, {k = 1, dim = 2}},
  {'_1d', {7}, {4}, {k = 4}},
  {'_scalar', {}, {1}, {k = 1}},
}
for _, v in ipairs(KTHS) do
  add{name = 'kthvalue' .. v[1], op = 'kthvalue', inputs = {input(v[2], TIES)}, args = v[3], params = v[4],
      dtypes = ALL, exact = true, ref = kthvalue_ref}
end
add{name = 'kthvalue_nan', op = 'kthvalue', inputs = {input({3, 6}, TWO_NANS)}, args = {5}, params = {k = 5},
    exact = true, ref = kthvalue_ref}
add{name = 'kthvalue_k0', op = 'kthvalue', inputs = {input({2, 4})}, args = {0},
    error = 'kthvalue: k is 0; expected 1..4'}
add{name = 'kthvalue_k_too_big', op = 'kthvalue', inputs = {input({2, 4})}, args = {3, 1},
    error = 'kthvalue: k is 3; expected 1..2 (the size of dim 1 of x, 2x4)'}
add{name = 'kthvalue_empty_dim', op = 'kthvalue', inputs = {input({2, 0})}, args = {1}, error = 'expected 1..0'}

-- cumsum / cumprod / cumprod_grad --------------------------------------------------------------
local function int64_accum(dtype) return (dtype == 'float32' or dtype == 'float64') and dtype or 'int64' end
local function cumulate_ref(prod)
  return function(ins, p)
    local x, out = ins[1], {}
    each_line(x.shape, dim_of(p, x, 1), function(_, pos)
      local a = prod and 1 or 0
      for s = 1, #pos do
        local j = p.reverse and #pos + 1 - s or s
        a = prod and a * x.data[pos[j]] or a + x.data[pos[j]]
        out[pos[j]] = a
      end
    end)
    return L.array(L.copy(x.shape), out)
  end
end
local CUMS = {  -- suffix, shape, args, params, empty variants
  {'', {3, 4}, {2}, {dim = 2}, {{{0, 4}}, {{3, 0}}}},
  {'_dim1', {4, 3, 2}, {1}, {dim = 1}, {{{0, 3, 2}}}},
  {'_dim2_of_3', {2, 5, 3}, {2}, {dim = 2}},
  {'_reverse', {3, 4}, {-1, true}, {dim = -1, reverse = true}},
  {'_reverse_dim1', {4, 3}, {1, {reverse = true}}, {dim = 1, reverse = true}},
  {'_1d', {6}, {1}, {dim = 1}},
  {'_scalar', {}, {1}, {dim = 1}},
}
local CUMDOM = {lo = -1.5, hi = 1.5, ilo = -3, ihi = 3}
for _, op in ipairs{'cumsum', 'cumprod'} do
  for _, v in ipairs(CUMS) do
    add{name = op .. v[1], op = op, inputs = {input(v[2], CUMDOM)}, args = v[3], params = v[4], dtypes = ALL,
        out_dtype = int64_accum, ref = cumulate_ref(op == 'cumprod'), empty = v[5]}
  end
  add{name = op .. '_nan', op = op, inputs = {input({3, 6}, TWO_NANS)}, args = {2}, params = {dim = 2},
      ref = cumulate_ref(op == 'cumprod')}
  add{name = op .. '_threads', op = op, inputs = {input({300, 100}, {lo = 0.9, hi = 1.1})}, args = {1},
      params = {dim = 1}, ref = cumulate_ref(op == 'cumprod')}
  add{name = op .. '_no_dim', op = op, inputs = {input({2, 3})}, error = 'dim'}
  add{name = op .. '_bad_dim', op = op, inputs = {input({2, 3})}, args = {3}, error = op .. ': dim 3 out of range'}
end
-- integer running sums do not wrap in the input's dtype (hand-computed: 255 * 4 = 1020; 2^30 * 4 = 2^32)
add{name = 'cumsum_uint8_past_255', op = 'cumsum', inputs = {input({4}, {ilo = 255, ihi = 255})}, args = {1},
    dtypes = {'uint8'}, exact = true, out_dtype = 'int64',
    ref = function() return L.array({4}, {255, 510, 765, 1020}) end}
add{name = 'cumprod_int32_past_2_31', op = 'cumprod', inputs = {input({3}, {ilo = 2 ^ 16, ihi = 2 ^ 16})}, args = {1},
    dtypes = {'int32'}, exact = true, out_dtype = 'int64',
    ref = function() return L.array({3}, {2 ^ 16, 2 ^ 32, 2 ^ 48}) end}

-- gx_i = sum_{j >= i} gy_j * prod_{k <= j, k ~= i} x_k, term by term (no division): zeros are exact
local function cumprod_grad_ref(ins, p)
  local x, gy, out = ins[1], ins[2], {}
  each_line(x.shape, dim_of(p, x, 1), function(_, pos)
    local n = #pos
    local at = function(t) return p.reverse and pos[n + 1 - t] or pos[t] end
    for i = 1, n do
      local s = 0
      for j = i, n do
        local term = gy.data[at(j)]
        for k = 1, j do if k ~= i then term = term * x.data[at(k)] end end
        s = s + term
      end
      out[at(i)] = s
    end
  end)
  return L.array(L.copy(x.shape), out)
end
local ZEROS = {values = {2, 0, 3, 0, 5, 1.5, -1, 0.5, 0, 2, -2, 1}}
add{name = 'cumprod_grad', op = 'cumprod_grad', inputs = {input({3, 4}), input({3, 4})}, args = {2}, params = {dim = 2},
    ref = cumprod_grad_ref, empty = {{{0, 4}, {0, 4}}}}
add{name = 'cumprod_grad_zeros', op = 'cumprod_grad', inputs = {input({3, 4}, ZEROS), input({3, 4})}, args = {2},
    params = {dim = 2}, ref = cumprod_grad_ref}
add{name = 'cumprod_grad_dim1_reverse', op = 'cumprod_grad', inputs = {input({4, 3}, ZEROS), input({4, 3})},
    args = {1, true}, params = {dim = 1, reverse = true}, ref = cumprod_grad_ref}
add{name = 'cumprod_grad_shapes', op = 'cumprod_grad', inputs = {input({3, 4}), input({4, 3})}, args = {1},
    error = 'cumprod_grad: x is 3x4, gy 4x3; expected one shape'}

return cases
