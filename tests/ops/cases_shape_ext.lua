-- Cases of the everyday shape ops and ranges (issue 21): stack, chunk, unbind, repeat, flip, roll,
-- tril, triu (references move elements by index), linspace and logspace (float64 formulas), and
-- randperm, randint, multinomial by their properties (a permutation, a range, frequencies).
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local FLOATS = {'float32', 'float64'}
local function one(name, op, shape, params, ref, more)
  local c = {name = name, op = op, inputs = {L.input(shape)}, params = params, ref = ref, dtypes = DT, exact = true}
  for k, v in pairs(more or {}) do c[k] = v end
  add(c)
end

-- out[idx] = x[src(idx)]: the reference of every copy below
local function remap(x, shape, src_of)
  local out = {}
  for i = 1, L.numel(shape) do out[i] = L.at(x, src_of(L.unravel(i, shape))) end
  return L.array(shape, out)
end

-- stack, chunk, unbind -------------------------------------------------------------------------------
local function stack_ref(ins, p)
  local nd = #ins[1].shape
  local d = L.dim(p.dim or 1, nd + 1)
  local shape = L.copy(ins[1].shape)
  table.insert(shape, d, #ins)
  local out = {}
  for i = 1, L.numel(shape) do
    local idx = L.unravel(i, shape)
    local k = table.remove(idx, d)
    out[i] = L.at(ins[k], idx)
  end
  return L.array(shape, out)
end
local function stack(name, shapes, params, more)
  one(name, 'stack', shapes[1], params, stack_ref, more)
  for i, s in ipairs(shapes) do cases[#cases].inputs[i] = L.input(s) end
end
stack('stack', {{2, 3}, {2, 3}, {2, 3}}, nil, {empty = {{{0, 3}, {0, 3}, {0, 3}}}})
stack('stack_dim2', {{2, 3}, {2, 3}}, {dim = 2}, {args = {2}})
stack('stack_last', {{2, 3, 2}, {2, 3, 2}}, {dim = -1})  -- -1: the new last dim
stack('stack_end', {{4}, {4}, {4}}, {dim = 2})
stack('stack_scalars', {{}, {}}, nil)
stack('stack_one', {{3, 2}}, {dim = 2})
stack('stack_bad_shape', {{2, 3}, {3, 2}}, nil, {error = 'all must have one shape'})
stack('stack_bad_dim', {{2, 3}, {2, 3}}, {dim = 4}, {error = 'out of range; expected 1..3'})

local function chunk_ref(ins, p)
  local x = ins[1]
  local d = L.dim(p.dim or 1, #x.shape)
  local n = x.shape[d]
  local size, parts = math.ceil(n / p.chunks), {}
  if n == 0 then
    for i = 1, p.chunks do parts[i] = L.take(x, d, 1, 0) end
    return parts
  end
  for at = 1, n, size do parts[#parts + 1] = L.take(x, d, at, math.min(size, n - at + 1)) end
  return parts
end
one('chunk', 'chunk', {5, 3}, {chunks = 3}, chunk_ref, {args = {3}, check_out = L.views_input1, empty = {{{0, 3}}}})
one('chunk_fewer', 'chunk', {2, 6}, {chunks = 4, dim = 2}, chunk_ref, {args = {4, 2}})  -- 3 parts of 2, as PyTorch
one('chunk_neg_dim', 'chunk', {2, 3, 7}, {chunks = 2, dim = -1}, chunk_ref)
one('chunk_more_than_size', 'chunk', {2, 2}, {chunks = 5}, chunk_ref)
one('chunk_zero', 'chunk', {3}, {chunks = 0}, nil, {error = 'chunks'})

local function unbind_ref(ins, p)
  local x = ins[1]
  local d = L.dim(p.dim or 1, #x.shape)
  local parts = {}
  for i = 1, x.shape[d] do parts[i] = L.drop_dim(L.take(x, d, i, 1), d) end
  return parts
end
one('unbind', 'unbind', {3, 4}, nil, unbind_ref, {check_out = L.views_input1, empty = {{{3, 0}}}})
one('unbind_dim2', 'unbind', {2, 3, 2}, {dim = 2}, unbind_ref, {args = {2}})
one('unbind_last', 'unbind', {2, 3}, {dim = -1}, unbind_ref)
one('unbind_1d', 'unbind', {4}, nil, unbind_ref)
one('unbind_empty_dim', 'unbind', {0, 3}, nil, unbind_ref)  -- torch.empty(0, 3).unbind(0) is ()

-- repeat, flip, roll ---------------------------------------------------------------------------------
local function repeat_ref(ins, p)
  local x, r = ins[1], p.sizes
  local lead = #r - #x.shape
  local shape = {}
  for d = 1, #r do shape[d] = (d > lead and x.shape[d - lead] or 1) * r[d] end
  return remap(x, shape, function(idx)
    local src = {}
    for d = 1, #x.shape do src[d] = (idx[d + lead] - 1) % x.shape[d] + 1 end
    return src
  end)
end
one('repeat', 'repeat', {2, 3}, {sizes = {2, 2}}, repeat_ref, {args = {2, 2}, empty = {{{0, 3}}}})
one('repeat_new_dims', 'repeat', {2, 1, 3}, {sizes = {2, 1, 3, 2}}, repeat_ref, {args = {{2, 1, 3, 2}}})
one('repeat_ones', 'repeat', {3, 2}, {sizes = {1, 1}}, repeat_ref)
one('repeat_zero', 'repeat', {3, 2}, {sizes = {2, 0}}, repeat_ref)
one('repeat_scalar', 'repeat', {}, {sizes = {3}}, repeat_ref)
one('repeat_threads', 'repeat', {70, 33}, {sizes = {3, 4}}, repeat_ref, {dtypes = {'float32'}})
one('repeat_too_few', 'repeat', {2, 3}, {sizes = {2}}, nil, {error = 'must give at least 2 repeats'})
one('repeat_negative', 'repeat', {2, 3}, {sizes = {2, -1}}, nil, {error = 'repeat count -1 at dim 2 is negative'})

local function flip_ref(ins, p)
  local x, flip = ins[1], {}
  for _, d in ipairs(p.dims) do flip[L.dim(d, #x.shape)] = true end
  return remap(x, L.copy(x.shape), function(idx)
    local src = {}
    for d = 1, #x.shape do src[d] = flip[d] and x.shape[d] + 1 - idx[d] or idx[d] end
    return src
  end)
end
one('flip', 'flip', {3, 4}, {dims = {1}}, flip_ref, {args = {1}, empty = {{{0, 4}}}})
one('flip_both', 'flip', {2, 3, 4}, {dims = {-1, 1}}, flip_ref, {args = {{-1, 1}}})
one('flip_none', 'flip', {2, 3}, {dims = {}}, flip_ref)
one('flip_repeated', 'flip', {2, 3}, {dims = {2, -1}}, nil, {error = 'dim -1 is listed twice'})

local function roll_ref(ins, p)
  local x = ins[1]
  local nd = #x.shape
  if #(p.dims or {}) == 0 then  -- flattened
    local n, out = #x.data, {}
    for i = 1, n do out[i] = x.data[(i - 1 - p.shifts[1]) % n + 1] end
    return L.array(L.copy(x.shape), out)
  end
  local shift = {}
  for d = 1, nd do shift[d] = 0 end
  for i, d in ipairs(p.dims) do shift[L.dim(d, nd)] = shift[L.dim(d, nd)] + p.shifts[i] end
  return remap(x, L.copy(x.shape), function(idx)
    local src = {}
    for d = 1, nd do src[d] = (idx[d] - 1 - shift[d]) % x.shape[d] + 1 end
    return src
  end)
end
one('roll', 'roll', {3, 4}, {shifts = {1}, dims = {2}}, roll_ref, {args = {1, 2}, empty = {{{0, 4}}}})
one('roll_two_dims', 'roll', {3, 4, 2}, {shifts = {2, -5}, dims = {1, -2}}, roll_ref, {args = {{2, -5}, {1, -2}}})
one('roll_flat', 'roll', {3, 4}, {shifts = {5}}, roll_ref, {args = {5}, empty = {{{3, 0}}}})
one('roll_same_dim', 'roll', {6}, {shifts = {4, 3}, dims = {1, 1}}, roll_ref)
one('roll_large', 'roll', {5, 2}, {shifts = {-13}, dims = {1}}, roll_ref)
one('roll_mismatch', 'roll', {3, 4}, {shifts = {1, 2}, dims = {1}}, nil, {error = '2 shifts and 1 dims'})

-- tril, triu -----------------------------------------------------------------------------------------
local function tri_ref(upper)
  return function(ins, p)
    local x, k = ins[1], p.diagonal or 0
    local nd, out = #x.shape, {}
    for i = 1, #x.data do
      local idx = L.unravel(i, x.shape)
      local off = idx[nd] - idx[nd - 1]
      local keep = upper and off >= k or (not upper and off <= k)
      out[i] = keep and x.data[i] or 0
    end
    return L.array(L.copy(x.shape), out)
  end
end
for _, op in ipairs{'tril', 'triu'} do
  local ref = tri_ref(op == 'triu')
  one(op, op, {3, 4}, nil, ref, {empty = {{{0, 4}}}})
  one(op .. '_diagonal', op, {4, 3}, {diagonal = 1}, ref, {args = {1}})
  one(op .. '_below', op, {4, 4}, {diagonal = -2}, ref)
  one(op .. '_batched', op, {2, 3, 3, 2}, {diagonal = -1}, ref)
  one(op .. '_far', op, {3, 3}, {diagonal = 5}, ref)
  one(op .. '_1d', op, {3}, nil, nil, {error = 'expected at least 2 dims'})
end

-- linspace, logspace ---------------------------------------------------------------------------------
local function is_int(dtype) return dtype ~= 'float32' and dtype ~= 'float64' end
local function space_ref(log)
  return function(_, p, dtype)
    local n, out, scale = p.steps, {}, {}
    for i = 1, n do
      local v = n == 1 and p.start or p.start + (p.stop - p.start) * (i - 1) / (n - 1)
      -- a value's rounding error is relative to the ends (a value near 0 between -5 and 5)
      scale[i] = math.max(math.abs(p.start), math.abs(p.stop))
      if log then v = (p.base or 10) ^ v; scale[i] = math.abs(v) end
      out[i] = is_int(dtype) and L.trunc(v) or v
    end
    local r = L.array({n}, out)
    r.scale = scale
    return r
  end
end
local function creation(c)
  c.dtypes, c.dtype_param = c.dtypes or FLOATS, true
  add(c)
end
creation{name = 'linspace', op = 'linspace', params = {start = -1, stop = 2, steps = 7}, args = {-1, 2, 7},
         ref = space_ref(false)}
creation{name = 'linspace_tenths', op = 'linspace', params = {start = 0, stop = 1, steps = 10}, ref = space_ref(false)}
creation{name = 'linspace_down', op = 'linspace', params = {start = 3, stop = -3, steps = 5}, args = {3, -3, 5},
         ref = space_ref(false), dtypes = {'float32', 'float64', 'int32', 'int64'}, exact = true}  -- ints truncate
creation{name = 'linspace_one', op = 'linspace', params = {start = 4, stop = 9, steps = 1}, ref = space_ref(false)}
creation{name = 'linspace_empty', op = 'linspace', params = {start = 4, stop = 9, steps = 0}, ref = space_ref(false)}
creation{name = 'linspace_threads', op = 'linspace', params = {start = -5, stop = 5, steps = 30001},
         ref = space_ref(false)}
add{name = 'linspace_negative', op = 'linspace', params = {start = 0, stop = 1, steps = -1}, error = 'steps'}
creation{name = 'logspace', op = 'logspace', params = {start = 0, stop = 2, steps = 5}, args = {0, 2, 5},
         ref = space_ref(true)}
creation{name = 'logspace_base2', op = 'logspace', params = {start = -1, stop = 3, steps = 5, base = 2},
         args = {-1, 3, 5, 2}, ref = space_ref(true), dtypes = {'float32', 'float64', 'int32', 'int64'}}
add{name = 'logspace_base0', op = 'logspace', params = {start = 0, stop = 1, steps = 3, base = 0}, error = 'base is 0'}

-- randperm, randint, multinomial ---------------------------------------------------------------------
-- seed s twice gives the same values; another seed differs; 1 thread and 2 give the same values
local function reproducible(mf, draw, read)
  local function key(t) return table.concat(read(t), ',') end
  mf.manual_seed(7)
  local a, a2 = key(draw()), key(draw())
  mf.manual_seed(7)
  if key(draw()) ~= a or key(draw()) ~= a2 then return 'manual_seed(7) twice gave different values' end
  if a == a2 then return 'two draws after one seed are equal' end
  mf.manual_seed(8)
  if key(draw()) == a then return 'manual_seed(7) and manual_seed(8) gave the same values' end
  local threads = mf.get_num_threads()
  local per = {}
  for _, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    mf.manual_seed(11)
    per[nt] = key(draw())
  end
  mf.set_num_threads(threads)
  if per[1] ~= per[2] then return 'the draws depend on the thread count' end
end

local function shape_dtype(t, shape, dtype, T)
  local got = table.concat(T.shape(t), 'x')
  if got ~= table.concat(shape, 'x') then return ('shape %s, want %s'):format(got, table.concat(shape, 'x')) end
  if T.dtype(t) ~= dtype then return ('dtype %s, want %s'):format(T.dtype(t), dtype) end
end

local function is_perm(v, n)
  local seen = {}
  for i = 1, #v do
    if v[i] < 1 or v[i] > n or v[i] % 1 ~= 0 or seen[v[i]] then return false end
    seen[v[i]] = true
  end
  return #v == n
end

add{name = 'randperm', op = 'randperm', dtypes = {'int64', 'int32', 'float64'}, check = function(mf, dtype, T)
  mf.manual_seed(5)
  for _, n in ipairs{0, 1, 2, 10, 1000} do
    local t = mf.randperm(n, {dtype = dtype})
    local err = shape_dtype(t, {n}, dtype, T)
    if err then return err end
    if not is_perm(T.read(t), n) then return ('randperm(%d) is not a permutation of 1..%d'):format(n, n) end
  end
  -- every position takes each value about equally often: 3000 draws of 4, 750 expected per cell
  local counts = {}
  for _ = 1, 3000 do
    local v = T.read(mf.randperm(4, {dtype = dtype}))
    for pos = 1, 4 do counts[pos * 10 + v[pos]] = (counts[pos * 10 + v[pos]] or 0) + 1 end
  end
  for pos = 1, 4 do
    for val = 1, 4 do
      local c = counts[pos * 10 + val] or 0  -- sd = sqrt(3000 * 1/4 * 3/4) = 23.7: 5 sigma is 119
      if math.abs(c - 750) > 119 then
        return ('value %d at position %d: %d times, want 750 +- 119'):format(val, pos, c)
      end
    end
  end
  return reproducible(mf, function() return mf.randperm(500, {dtype = dtype}) end, T.read)
end}
add{name = 'randperm_uint8_too_big', op = 'randperm', params = {n = 300, dtype = 'uint8'}, error = 'uint8'}

add{name = 'randint', op = 'randint', dtypes = {'int64', 'int32', 'uint8', 'float32'}, check = function(mf, dtype, T)
  mf.manual_seed(3)
  local t = mf.randint(2, 8, 3000, {dtype = dtype})
  local err = shape_dtype(t, {3000}, dtype, T)
  if err then return err end
  local counts = {}
  for _, v in ipairs(T.read(t)) do
    if v < 2 or v >= 8 or v % 1 ~= 0 then return ('value %g outside the integers of [2, 8)'):format(v) end
    counts[v] = (counts[v] or 0) + 1
  end
  for v = 2, 7 do  -- 500 expected each; sd = sqrt(3000 / 6 * 5 / 6) = 20.4: 5 sigma is 102
    if math.abs((counts[v] or 0) - 500) > 102 then
      return ('value %d: %d times, want 500 +- 102'):format(v, counts[v] or 0)
    end
  end
  err = shape_dtype(mf.randint(5, {2, 3}, {dtype = dtype}), {2, 3}, dtype, T)
  if err then return 'randint(high, {sizes}): ' .. err end
  err = shape_dtype(mf.randint(0, 5, {}, {dtype = dtype}), {}, dtype, T)
  if err then return 'randint(low, high, {}): ' .. err end
  err = shape_dtype(mf.randint(0, 5, 0, 4, {dtype = dtype}), {0, 4}, dtype, T)
  if err then return 'randint(low, high, 0, 4): ' .. err end
  return reproducible(mf, function() return mf.randint(0, 100, 300, {dtype = dtype}) end, T.read)
end}
add{name = 'randint_negative_range', op = 'randint', dtypes = {'int64'}, check = function(mf, dtype, T)
  mf.manual_seed(4)
  local lo, hi = -3, 2
  for _, v in ipairs(T.read(mf.randint(lo, hi, 500))) do
    if v < lo or v >= hi then return ('value %g outside [-3, 2)'):format(v) end
  end
  local one = T.read(mf.randint(7, 8, 20))  -- a range of one value
  for _, v in ipairs(one) do if v ~= 7 then return ('randint(7, 8): got %g'):format(v) end end
end}
add{name = 'randint_empty_range', op = 'randint', params = {low = 3, high = 3, shape = {2}},
    error = 'must be less than high'}
add{name = 'randint_uint8_range', op = 'randint', params = {low = -1, high = 3, shape = {2}, dtype = 'uint8'},
    error = 'uint8'}

-- frequencies of categories 1..k over all draws of t (a list of counts)
local function freq(v, k)
  local c = {}
  for j = 1, k do c[j] = 0 end
  for _, x in ipairs(v) do c[x] = c[x] + 1 end
  return c
end
add{name = 'multinomial', op = 'multinomial', check = function(mf, dtype, T)
  mf.manual_seed(21)
  local w = mf.tensor({1, 0, 3, 4}, dtype)  -- probabilities 1/8, 0, 3/8, 4/8
  local t = mf.multinomial(w, 4000, {replacement = true})
  local err = shape_dtype(t, {4000}, 'int64', T)
  if err then return err end
  local c = freq(T.read(t), 4)
  if c[2] ~= 0 then return ('a zero-weight category was drawn %d times'):format(c[2]) end
  for j, p in pairs{[1] = 1 / 8, [3] = 3 / 8, [4] = 4 / 8} do
    local sd = math.sqrt(4000 * p * (1 - p))
    if math.abs(c[j] - 4000 * p) > 5 * sd then
      return ('category %d: %d draws, want %g +- %.0f'):format(j, c[j], 4000 * p, 5 * sd)
    end
  end
  -- rows of a 2-D probs draw from their own weights; without replacement nothing repeats in a row
  local rows = mf.tensor({{0, 0, 5}, {2, 0, 2}, {1, 1, 1}}, dtype)
  local v = T.read(mf.multinomial(rows, 1))
  if v[1] ~= 3 or v[2] == 2 then return ('2-D rows: got %s'):format(table.concat(v, ',')) end
  for _ = 1, 50 do
    local d = T.read(mf.multinomial(mf.tensor({5, 0, 1, 2, 0.5}, dtype), 4))
    local seen = {}
    for _, x in ipairs(d) do
      if seen[x] then return 'without replacement a category repeated: ' .. table.concat(d, ',') end
      if x == 2 then return 'without replacement a zero-weight category was drawn' end
      seen[x] = true
    end
  end
  -- without replacement, the first draw follows the weights: category 1 first with probability 5/8.5
  local first = 0
  local w5 = mf.tensor({5, 0, 1, 2, 0.5}, dtype)
  for _ = 1, 2000 do
    if T.read(mf.multinomial(w5, 2))[1] == 1 then first = first + 1 end
  end
  local p = 5 / 8.5
  if math.abs(first - 2000 * p) > 5 * math.sqrt(2000 * p * (1 - p)) then
    return ('without replacement: category 1 first %d of 2000 times, want %.0f'):format(first, 2000 * p)
  end
  return reproducible(mf, function() return mf.multinomial(mf.rand(40, 30, {dtype = dtype}), 8) end, T.read)
end}
add{name = 'multinomial_too_many', op = 'multinomial', inputs = {L.input({3})}, params = {num_samples = 4},
    error = 'cannot draw 4 of 3 categories without replacement'}
add{name = 'multinomial_3d', op = 'multinomial', inputs = {L.input({2, 2, 2})}, params = {num_samples = 1},
    error = 'expected 1-D weights or 2-D rows'}
add{name = 'multinomial_int', op = 'multinomial', inputs = {L.input({3})}, params = {num_samples = 1},
    dtypes = {'int64'}, error = 'expected float32 or float64 weights'}

return cases
