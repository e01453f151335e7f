-- Cases of the creation ops: zeros, ones, full, arange and eye against exact values in every
-- dtype; rand and randn by shape, range, loose moments and seed reproducibility.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local FLOATS = {'float32', 'float64'}
local function is_int(dtype) return dtype ~= 'float32' and dtype ~= 'float64' end

local function const_ref(value)
  return function(_, p, dtype)
    local v = value or p.value
    if is_int(dtype) then v = L.trunc(v) end
    local data = {}
    for i = 1, L.numel(p.shape) do data[i] = v end
    return L.array(L.copy(p.shape), data)
  end
end
local function creation(c)
  c.dtypes, c.dtype_param, c.exact = c.dtypes or DT, true, c.exact ~= false
  add(c)
end

creation{name = 'zeros', op = 'zeros', params = {shape = {2, 3}}, args = {2, 3}, ref = const_ref(0)}
creation{name = 'zeros_table', op = 'zeros', params = {shape = {3, 1, 2}}, args = {{3, 1, 2}}, ref = const_ref(0)}
creation{name = 'zeros_scalar', op = 'zeros', params = {shape = {}}, args = {{}}, ref = const_ref(0)}
creation{name = 'zeros_empty', op = 'zeros', params = {shape = {0, 3}}, args = {0, 3}, ref = const_ref(0)}
creation{name = 'zeros_threads', op = 'zeros', params = {shape = {300, 200}}, ref = const_ref(0)}
creation{name = 'ones', op = 'ones', params = {shape = {4, 2}}, args = {4, 2}, ref = const_ref(1)}
creation{name = 'ones_empty', op = 'ones', params = {shape = {2, 0}}, ref = const_ref(1)}
creation{name = 'full', op = 'full', params = {shape = {2, 3}, value = 7.5}, args = {{2, 3}, 7.5}, ref = const_ref()}
creation{name = 'full_negative', op = 'full', params = {shape = {3}, value = -2.25}, args = {{3}, -2.25},
         dtypes = {'float32', 'float64', 'int32', 'int64'}, ref = const_ref()}
creation{name = 'full_empty', op = 'full', params = {shape = {0}, value = 1}, args = {{0}, 1}, ref = const_ref()}

local function arange_ref(_, p, dtype)
  local start, stop, step = p.start or 0, p.stop, p.step or 1
  local data = {}
  for i = 1, math.ceil((stop - start) / step) do
    data[i] = start + (i - 1) * step
    if is_int(dtype) then data[i] = L.trunc(data[i]) end
  end
  return L.array({#data}, data)
end
creation{name = 'arange', op = 'arange', params = {stop = 5}, args = {5}, ref = arange_ref}
creation{name = 'arange_start_stop', op = 'arange', params = {start = -3, stop = 4}, args = {-3, 4},
         dtypes = {'float32', 'float64', 'int32', 'int64'}, ref = arange_ref}
creation{name = 'arange_fraction', op = 'arange', params = {start = 1, stop = 4, step = 0.5}, args = {1, 4, 0.5},
         dtypes = FLOATS, ref = arange_ref}
creation{name = 'arange_negative_step', op = 'arange', params = {start = 5, stop = 0, step = -1.5}, args = {5, 0, -1.5},
         dtypes = FLOATS, ref = arange_ref}
creation{name = 'arange_uneven', op = 'arange', params = {start = 0, stop = 1, step = 0.3}, ref = arange_ref,
         dtypes = FLOATS, exact = false}
creation{name = 'arange_empty', op = 'arange', params = {start = 2, stop = 2}, args = {2, 2}, ref = arange_ref}
creation{name = 'arange_threads', op = 'arange', params = {start = -20000, stop = 20000}, args = {-20000, 20000},
         dtypes = {'float32', 'float64', 'int32', 'int64'}, ref = arange_ref}
add{name = 'arange_wrong_way', op = 'arange', params = {start = 0, stop = 5, step = -1}, error = 'never arrives'}
add{name = 'arange_zero_step', op = 'arange', params = {start = 0, stop = 5, step = 0}, error = 'step is 0'}

local function eye_ref(_, p)
  local n = p.n
  local m = (p.m == nil or p.m < 0) and n or p.m
  local data = {}
  for i = 1, n do
    for j = 1, m do data[(i - 1) * m + j] = i == j and 1 or 0 end
  end
  return L.array({n, m}, data)
end
creation{name = 'eye', op = 'eye', params = {n = 3}, args = {3}, ref = eye_ref}
creation{name = 'eye_wide', op = 'eye', params = {n = 2, m = 4}, args = {2, 4}, ref = eye_ref}
creation{name = 'eye_tall', op = 'eye', params = {n = 4, m = 3}, ref = eye_ref}
creation{name = 'eye_empty', op = 'eye', params = {n = 0}, ref = eye_ref}
creation{name = 'eye_no_cols', op = 'eye', params = {n = 2, m = 0}, ref = eye_ref}

-- rand, randn ----------------------------------------------------------------------------------
local function moments(v)
  local s, s2 = 0, 0
  for i = 1, #v do s = s + v[i] end
  local mean = s / #v
  for i = 1, #v do s2 = s2 + (v[i] - mean) ^ 2 end
  return mean, math.sqrt(s2 / (#v - 1))
end

-- Checks shape, dtype and that every value lies in [lo, hi); returns the values or nil, message.
-- T: the harness's op-free readers (read, shape, dtype).
local function values(t, shape, dtype, lo, hi, T)
  local got = table.concat(T.shape(t), 'x')
  if got ~= table.concat(shape, 'x') then return nil, ('shape %s, want %s'):format(got, table.concat(shape, 'x')) end
  if T.dtype(t) ~= dtype then return nil, ('dtype %s, want %s'):format(T.dtype(t), dtype) end
  local v = T.read(t)
  for i = 1, #v do
    if not (v[i] >= lo and v[i] < hi) then
      return nil, ('element %d is %.17g, outside [%g, %g)'):format(i, v[i], lo, hi)
    end
  end
  return v
end

local function same(a, b)
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return #a == #b
end
local function count_equal(a, b)
  local n = 0
  for i = 1, #a do if a[i] == b[i] then n = n + 1 end end
  return n
end

-- seed s twice gives the same draws; another seed and the next draw differ; the thread count
-- does not change the draws
local function reproducible(mf, draw, read)
  mf.manual_seed(7)
  local a, a2 = read(draw(64)), read(draw(64))
  mf.manual_seed(7)
  local b, b2 = read(draw(64)), read(draw(64))
  if not (same(a, b) and same(a2, b2)) then return 'manual_seed(7) twice gave different values' end
  if count_equal(a, a2) > 2 then return 'two draws after one seed are equal' end
  mf.manual_seed(8)
  if count_equal(a, read(draw(64))) > 2 then return 'manual_seed(7) and manual_seed(8) gave the same values' end
  local threads = mf.get_num_threads()
  mf.manual_seed(11)
  local many = read(draw(100000))
  mf.set_num_threads(1)
  mf.manual_seed(11)
  local one = read(draw(100000))
  mf.set_num_threads(threads)
  if not same(many, one) then return 'the draws depend on the thread count' end
end

add{name = 'rand', op = 'rand', check = function(mf, dtype, T)
  mf.manual_seed(1234)
  local v, err = values(mf.rand(4000, {dtype = dtype}), {4000}, dtype, 0, 1, T)
  if not v then return err end
  local mean, sd = moments(v)
  if math.abs(mean - 0.5) > 0.03 then return ('mean %g, want 0.5 +- 0.03'):format(mean) end
  if math.abs(sd - math.sqrt(1 / 12)) > 0.02 then return ('std %g, want 0.2887 +- 0.02'):format(sd) end
  v, err = values(mf.rand({3, 500}, {low = -2, high = 3, dtype = dtype}), {3, 500}, dtype, -2, 3, T)
  if not v then return err end
  mean = moments(v)
  if math.abs(mean - 0.5) > 0.2 then return ('low -2, high 3: mean %g, want 0.5 +- 0.2'):format(mean) end
  v, err = values(mf.rand({}, {dtype = dtype}), {}, dtype, 0, 1, T)
  if not v then return err end
  v, err = values(mf.rand(0, 3, {dtype = dtype}), {0, 3}, dtype, 0, 1, T)
  if not v then return err end
  return reproducible(mf, function(n) return mf.rand(n, {dtype = dtype}) end, T.read)
end}
add{name = 'rand_int', op = 'rand', params = {shape = {2}, dtype = 'int32'}, error = 'expected float32 or float64'}

add{name = 'randn', op = 'randn', check = function(mf, dtype, T)
  mf.manual_seed(99)
  local v, err = values(mf.randn(4000, {dtype = dtype}), {4000}, dtype, -8, 8, T)
  if not v then return err end
  local mean, sd = moments(v)
  if math.abs(mean) > 0.07 then return ('mean %g, want 0 +- 0.07'):format(mean) end
  if math.abs(sd - 1) > 0.05 then return ('std %g, want 1 +- 0.05'):format(sd) end
  v, err = values(mf.randn(2, 2000, {mean = 3, std = 0.5, dtype = dtype}), {2, 2000}, dtype, -1, 7, T)
  if not v then return err end
  mean, sd = moments(v)
  if math.abs(mean - 3) > 0.04 then return ('mean 3: got %g +- 0.04'):format(mean) end
  if math.abs(sd - 0.5) > 0.03 then return ('std 0.5: got %g +- 0.03'):format(sd) end
  v, err = values(mf.randn(3, 0, {dtype = dtype}), {3, 0}, dtype, 0, 1, T)
  if not v then return err end
  return reproducible(mf, function(n) return mf.randn(n, {dtype = dtype}) end, T.read)
end}
add{name = 'randn_negative_std', op = 'randn', params = {shape = {2}, std = -1}, error = 'std'}

return cases
