-- Cases of the neural-network ops: erf, gelu and leaky_relu; batch_norm with batch statistics;
-- dropout_mask by its value set, drop fraction and seed; the gathers index_select, index_add_like
-- and one_hot. References are plain Lua on float64 numbers (erf by series and continued fraction).
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local FLOATS = {'float32', 'float64'}
local INT = {'int64', 'int32', 'uint8'}
local abs, exp, sqrt, huge, nan = math.abs, math.exp, math.sqrt, math.huge, 0 / 0
local input = L.input

-- erf, erfc ---------------------------------------------------------------------------------------
local SQRT_PI = sqrt(math.pi)

-- erf(x), x >= 0, by the series 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)), whose
-- terms are all positive: no cancellation (the Maclaurin series alternates and loses digits)
local function erf_series(x)
  local x2, term, sum, n = x * x, x, x, 0
  repeat
    n = n + 1
    term = term * 2 * x2 / (2 * n + 1)
    sum = sum + term
  until term <= sum * 1e-17
  return 2 / SQRT_PI * exp(-x2) * sum
end

-- erfc(x), x >= 1, by Laplace's continued fraction exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x +
-- (3/2)/(x + ...)))), evaluated from its tail (300 terms: within 1e-15 of erfc from x = 1 on)
local function erfc_cf(x)
  local f = x
  for n = 300, 1, -1 do f = x + n / 2 / f end
  return exp(-x * x) / SQRT_PI / f
end

local function erf(x)
  if x ~= x then return x end
  if x < 0 then return -erf(-x) end
  if x < 3 then return erf_series(x) end
  return 1 - erfc_cf(x)
end

-- erfc accurate relative to its own value, also in the tail where 1 - erf(x) would cancel
local function erfc(x)
  if x ~= x then return x end
  if x >= 1 then return erfc_cf(x) end
  if x <= -1 then return 2 - erfc_cf(-x) end
  return 1 - erf(x)
end

-- 0.5 x (1 + erf(x / sqrt 2)), written with erfc so that it keeps its digits for negative x
local function gelu(x) return 0.5 * x * erfc(-x / sqrt(2)) end

-- erf, gelu, leaky_relu ------------------------------------------------------------------------------
local function unary_ref(f) return function(ins) return L.map(ins[1], f) end end
local function leaky_ref(ins, p)
  local slope = p.negative_slope or 0.01
  return L.map(ins[1], function(x) return x > 0 and x or slope * x end)
end

-- op, reference, domain, special values
local unary = {
  {'erf', unary_ref(erf), {lo = -4, hi = 4}, {0, huge, -huge, nan, 1e-8, -1e-8, 0.5, 3, -6, 30}},
  -- below about -3, 1 + erf(x / sqrt 2) cancels: these values check the tail keeps its digits
  {'gelu', unary_ref(gelu), {lo = -6, hi = 4},
   {0, huge, nan, 1e-8, -1e-8, -2.5, -3, -4, -5, -6, -7, -8, -10, -40, 8, 40}},
  {'leaky_relu', leaky_ref, {lo = -3, hi = 3}, {0, huge, -huge, nan, -1e-30, 1e-30}},
}
for _, u in ipairs(unary) do
  local name, ref, dom, special = unpack(u)
  add{name = name, op = name, inputs = {input({2, 3, 4}, dom)}, ref = ref, empty = {{{0, 3}}, {{3, 0, 2}}}}
  add{name = name .. '_scalar', op = name, inputs = {input({}, dom)}, ref = ref}
  add{name = name .. '_special', op = name, inputs = {input({#special}, {values = special})}, ref = ref}
  -- big enough for the kernels to split the work across threads
  add{name = name .. '_threads', op = name, inputs = {input({130, 260}, dom)}, ref = ref}
  add{name = name .. '_int', op = name, inputs = {input({2, 3})}, dtypes = {'int32'},
      error = name .. ': input x is int32; expected float32 or float64'}
end
add{name = 'gelu_tail', op = 'gelu', inputs = {input({4, 25}, {lo = -9, hi = -2})}, ref = unary_ref(gelu)}
add{name = 'erf_tails', op = 'erf', inputs = {input({4, 25}, {lo = 2, hi = 7, signed = true})}, ref = unary_ref(erf)}
add{name = 'leaky_relu_slope', op = 'leaky_relu', inputs = {input({3, 4})}, params = {negative_slope = 0.2},
    ref = leaky_ref, empty = {{{0, 4}}}}
add{name = 'leaky_relu_positional', op = 'leaky_relu', inputs = {input({3, 4})}, params = {negative_slope = 0.3},
    args = {0.3}, ref = leaky_ref}
add{name = 'leaky_relu_negative_slope', op = 'leaky_relu', inputs = {input({2, 3, 4})},
    params = {negative_slope = -0.5}, ref = leaky_ref}
-- slope 0 is relu, slope 1 the identity: both exact
add{name = 'leaky_relu_slope0', op = 'leaky_relu', inputs = {input({3, 4})}, params = {negative_slope = 0},
    exact = true, ref = leaky_ref}
add{name = 'leaky_relu_slope1', op = 'leaky_relu', inputs = {input({3, 4})}, params = {negative_slope = 1},
    exact = true, ref = leaky_ref}

-- batch_norm -----------------------------------------------------------------------------------
-- Per channel c (dim 2): mean and biased variance over every element with index c along dim 2,
-- y = (x - mean) / sqrt(var + eps) * w[c] + b[c]. Elements are measured against the size of the
-- terms, (|x| + |mean|) * rstd * |w| + |b|, as matmul's against sum |a * b|: rounding the batch
-- mean, as any implementation must, moves each output by about u * |mean| * rstd * |w| (u the unit
-- roundoff), and an output near 0 (where w * xhat and b cancel) keeps only the terms' digits.
local function batch_norm_ref(ins, p)
  local x, w, b, eps = ins[1], ins[2], ins[3], p.eps or 1e-5
  local C, n = x.shape[2], #x.data
  local sum, cnt, sq = {}, {}, {}
  for c = 1, C do sum[c], cnt[c], sq[c] = 0, 0, 0 end
  local chan = {}
  for i = 1, n do
    local c = L.unravel(i, x.shape)[2]
    chan[i] = c
    sum[c], cnt[c] = sum[c] + x.data[i], cnt[c] + 1
  end
  local mean, rstd = {}, {}
  for c = 1, C do mean[c] = sum[c] / cnt[c] end
  for i = 1, n do
    local c = chan[i]
    sq[c] = sq[c] + (x.data[i] - mean[c]) ^ 2
  end
  for c = 1, C do rstd[c] = 1 / sqrt(sq[c] / cnt[c] + eps) end
  local out, scale = {}, {}
  for i = 1, n do
    local c = chan[i]
    out[i] = (x.data[i] - mean[c]) * rstd[c] * w.data[c] + b.data[c]
    scale[i] = (abs(x.data[i]) + abs(mean[c])) * rstd[c] * abs(w.data[c]) + abs(b.data[c])
  end
  local r = L.array(L.copy(x.shape), out)
  r.scale = scale
  return r
end
local function batch_norm(name, sx, params, args, more)
  local C = sx[2]
  local c = {name = name, op = 'batch_norm', inputs = {input(sx), input({C}), input({C})}, params = params,
             args = args, ref = batch_norm_ref}
  for k, v in pairs(more or {}) do c[k] = v end
  add(c)
end
batch_norm('batch_norm', {4, 3, 5}, nil, nil,
           {empty = {{{0, 3, 5}, {3}, {3}}, {{4, 0, 5}, {0}, {0}}, {{4, 3, 0}, {3}, {3}}}})
batch_norm('batch_norm_2d', {6, 4})
batch_norm('batch_norm_4d', {2, 3, 4, 5}, nil, nil, {empty = {{{2, 3, 0, 5}, {3}, {3}}}})
batch_norm('batch_norm_eps', {5, 2, 3}, {eps = 0.5}, {0.5})
batch_norm('batch_norm_eps_table', {3, 4, 2}, {eps = 1e-3})
batch_norm('batch_norm_eps0', {4, 3, 2}, {eps = 0})
-- one element per channel: batch statistics are meaningless, an error as in PyTorch
add{name = 'batch_norm_single', op = 'batch_norm', inputs = {input({1, 3}), input({3}), input({3})},
    error = 'batch_norm: x is 1x3; expected more than 1 value per channel when training'}
add{name = 'batch_norm_single_spatial', op = 'batch_norm', inputs = {input({1, 2, 1, 1}), input({2}), input({2})},
    error = 'batch_norm: x is 1x2x1x1; expected more than 1 value per channel'}
-- one sample, several positions per channel: fine
batch_norm('batch_norm_one_sample', {1, 3, 4})
-- the mean far from zero against the spread
batch_norm('batch_norm_offset', {5, 3, 4}, nil, nil,
           {inputs = {input({5, 3, 4}, {lo = 10, hi = 11}), input({3}), input({3})}})
batch_norm('batch_norm_threads', {32, 16, 100})
add{name = 'batch_norm_bad_weight', op = 'batch_norm', inputs = {input({2, 3, 4}), input({2}), input({3})},
    error = 'batch_norm: x is 2x3x4, weight 2, bias 3; weight and bias need 3 elements (one per channel, dim 2)'}
add{name = 'batch_norm_bad_bias', op = 'batch_norm', inputs = {input({2, 3}), input({3}), input({1, 3})},
    error = 'batch_norm: x is 2x3, weight 3, bias 1x3; weight and bias need 3 elements'}
add{name = 'batch_norm_1d', op = 'batch_norm', inputs = {input({3}), input({3}), input({3})},
    error = 'batch_norm: x is 3; expected N x C x ... (at least 2 dims)'}
add{name = 'batch_norm_mixed_dtypes', op = 'batch_norm',
    inputs = {input({2, 3}, {dtype = 'float32'}), input({3}, {dtype = 'float64'}), input({3}, {dtype = 'float32'})},
    error = 'batch_norm: weight is float64, x float32'}
add{name = 'batch_norm_int', op = 'batch_norm', inputs = {input({2, 3}), input({3}), input({3})}, dtypes = {'int32'},
    error = 'expected float32 or float64'}
add{name = 'batch_norm_negative_eps', op = 'batch_norm', inputs = {input({2, 3}), input({3}), input({3})},
    params = {eps = -1}, error = "batch_norm: param 'eps' is -1"}

-- dropout_mask -----------------------------------------------------------------------------------
local function same(a, b)
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return #a == #b
end

-- The mask for like under seed, p passed as style says ('table', 'positional' or 'default': 0.5):
-- checks shape and dtype, that every value is 0 or 1 / (1 - p) (as the dtype stores it), and that
-- the count dropped is n p within 6 standard deviations, also in each half of the mask, and so is
-- the count of neighbouring pairs both dropped; returns the values, or nil and a message.
local function mask_of(mf, T, like, p, seed, dtype, style)
  mf.manual_seed(seed)
  local m
  if style == 'table' then m = mf.dropout_mask(like, {p = p})
  elseif style == 'default' then m, p = mf.dropout_mask(like), 0.5
  else m = mf.dropout_mask(like, p) end
  local what = ('p = %g, like %s'):format(p, table.concat(T.shape(like), 'x'))
  if table.concat(T.shape(m), 'x') ~= table.concat(T.shape(like), 'x') then
    return nil, ('%s: shape %s'):format(what, table.concat(T.shape(m), 'x'))
  end
  if T.dtype(m) ~= dtype then return nil, ('%s: dtype %s, want %s'):format(what, T.dtype(m), dtype) end
  local v, keep = T.read(m), p < 1 and 1 / (1 - p) or 0
  if dtype == 'float32' then keep = L.f32(keep) end
  local n, half, dropped, first, both = #v, math.floor(#v / 2), 0, 0, 0
  for i = 1, n do
    if v[i] ~= 0 and v[i] ~= keep then
      return nil, ('%s: element %d is %.17g, want 0 or %.17g'):format(what, i, v[i], keep)
    end
    if v[i] == 0 then
      dropped = dropped + 1
      if i <= half then first = first + 1 end
      if i > 1 and v[i - 1] == 0 then both = both + 1 end
    end
  end
  local function near(count, mean, var, label)
    if abs(count - mean) > 6 * sqrt(var) then
      return ('%s: %s %d of %d, want %g +- %g'):format(what, label, count, n, mean, 6 * sqrt(var))
    end
  end
  local q, m = p * (1 - p), math.max(n - 1, 0)
  -- the m = n - 1 overlapping pairs: each both dropped with p^2, neighbours covary by p^3 - p^4
  local err = near(dropped, n * p, n * q, 'dropped') or near(first, half * p, half * q, 'dropped in the first half')
      or near(dropped - first, (n - half) * p, (n - half) * q, 'dropped in the second half')
      or near(both, m * p * p, m * (p * p * (1 - p * p) + 2 * p * p * q), 'neighbouring pairs both dropped')
  if err then return nil, err end
  return v
end

add{name = 'dropout_mask', op = 'dropout_mask', check = function(mf, dtype, T)
  local like = mf.zeros(100, 120, {dtype = dtype})
  for _, p in ipairs{0.5, 0.1, 0.25, 0.9} do
    local _, err = mask_of(mf, T, like, p, 5, dtype, 'table')
    if err then return err end
    _, err = mask_of(mf, T, like, p, 6, dtype, 'positional')
    if err then return err end
  end
  local _, err = mask_of(mf, T, like, nil, 7, dtype, 'default')
  if err then return err end
  -- p = 0 keeps everything (mask 1), p = 1 drops everything (mask 0)
  for _, p in ipairs{0, 1} do
    local v, err0 = mask_of(mf, T, like, p, 8, dtype, 'table')
    if not v then return err0 end
    for i = 1, #v do
      if v[i] ~= 1 - p then return ('p = %g: element %d is %.17g, want %g'):format(p, i, v[i], 1 - p) end
    end
  end
  -- like's values and layout do not matter; empty, 0-dim and small likes
  local a, err1 = mask_of(mf, T, like, 0.3, 9, dtype)
  if not a then return err1 end
  local b, err2 = mask_of(mf, T, mf.randn(120, 100, {dtype = dtype}):t(), 0.3, 9, dtype)
  if not b then return err2 end
  if not same(a, b) then return 'like = zeros and like = a transposed randn gave different masks' end
  for _, shape in ipairs{{0, 3}, {}, {7}} do
    _, err = mask_of(mf, T, mf.zeros(shape, {dtype = dtype}), 0.4, 10, dtype)
    if err then return err end
  end
  -- the same seed gives the same mask; the next draw and another seed give others
  mf.manual_seed(21)
  local m1, m2 = T.read(mf.dropout_mask(like, 0.5)), T.read(mf.dropout_mask(like, 0.5))
  mf.manual_seed(21)
  if not same(m1, T.read(mf.dropout_mask(like, 0.5))) then return 'manual_seed(21) twice gave different masks' end
  if not same(m2, T.read(mf.dropout_mask(like, 0.5))) then return 'manual_seed(21) twice: second masks differ' end
  if same(m1, m2) then return 'two draws after one seed gave the same mask' end
  mf.manual_seed(22)
  if same(m1, T.read(mf.dropout_mask(like, 0.5))) then return 'manual_seed(21) and (22) gave the same mask' end
  -- the thread count does not change the mask
  local threads = mf.get_num_threads()
  mf.manual_seed(23)
  local many = T.read(mf.dropout_mask(like, 0.2))
  mf.set_num_threads(1)
  mf.manual_seed(23)
  local one = T.read(mf.dropout_mask(like, 0.2))
  mf.set_num_threads(threads)
  if not same(many, one) then return 'the mask depends on the thread count' end
end}
add{name = 'dropout_mask_int', op = 'dropout_mask', inputs = {input({2, 3})}, dtypes = {'int32'},
    error = 'dropout_mask: input like is int32; expected float32 or float64'}
add{name = 'dropout_mask_bad_p', op = 'dropout_mask', inputs = {input({2, 3})}, params = {p = 1.5},
    error = "dropout_mask: param 'p' is 1.5; expected a value in [0, 1]"}

-- index_select, index_add_like ---------------------------------------------------------------------
-- 1-based int64 indices into a dim of size n
local function indices(n, more) return L.input({n}, {dtype = 'int64', ilo = 1}, more) end

local function index_select_ref(ins, p)
  local x, idx = ins[1], ins[2].data
  local d = L.dim(p.dim or 1, #x.shape)
  local shape = L.copy(x.shape)
  shape[d] = #idx
  local out = {}
  for i = 1, L.numel(shape) do
    local at = L.unravel(i, shape)
    at[d] = idx[at[d]]
    out[i] = L.at(x, at)
  end
  return L.array(shape, out)
end
-- sx: x's shape; k: how many indices, drawn in 1..size of the dim params.dim names (default 1)
local function index_select(name, sx, k, params, args, more)
  local d = L.dim(params and params.dim or 1, #sx)
  local c = {name = name, op = 'index_select', inputs = {input(sx), indices(k, {ihi = sx[d]})}, params = params,
             args = args, dtypes = DT, exact = true, ref = index_select_ref}
  for key, v in pairs(more or {}) do c[key] = v end
  add(c)
end
index_select('index_select', {5, 3, 4}, 7, nil, nil, {empty = {{{5, 3, 4}, {0}}, {{5, 0, 4}, {7}}}})
index_select('index_select_dim2', {3, 5, 4}, 8, {dim = 2}, {2}, {empty = {{{0, 5, 4}, {8}}}})
index_select('index_select_last', {3, 4, 6}, 4, {dim = -1}, {-1})
index_select('index_select_1d', {6}, 10, {dim = 1})
index_select('index_select_same', {4, 3}, 5, {dim = 1}, nil,
             {inputs = {input({4, 3}), indices(5, {ilo = 3, ihi = 3})}})
index_select('index_select_threads', {300, 200}, 150, {dim = 1})
add{name = 'index_select_out_of_range', op = 'index_select', inputs = {input({3, 4}), indices(3, {ilo = 5, ihi = 5})},
    params = {dim = 2}, error = 'index_select: index 5 at position 1 is out of range 1..4'}
add{name = 'index_select_zero', op = 'index_select', inputs = {input({3, 4}), indices(2, {ilo = 0, ihi = 0})},
    error = 'index_select: index 0 at position 1 is out of range 1..3'}
add{name = 'index_select_int32', op = 'index_select', inputs = {input({3, 4}), input({2}, {dtype = 'int32'})},
    error = 'index_select: indices are int32; expected int64 (1-based)'}
add{name = 'index_select_float', op = 'index_select', inputs = {input({3, 4}), input({2}, {dtype = 'float64'})},
    error = 'index_select: indices are float64; expected int64 (1-based)'}
add{name = 'index_select_2d_indices', op = 'index_select',
    inputs = {input({3, 4}), L.input({1, 2}, {dtype = 'int64', ilo = 1, ihi = 3})},
    error = 'index_select: indices are 1x2; expected a 1-D int64 tensor'}
add{name = 'index_select_bad_dim', op = 'index_select', inputs = {input({3, 4}), indices(2, {ihi = 3})},
    params = {dim = 3}, error = 'index_select: dim 3 out of range; expected 1..2'}

-- slice j of x added at indices[j] along dim into zeros of like's shape, in order
local function index_add_like_ref(ins, p)
  local x, idx, shape = ins[1], ins[2].data, L.copy(ins[3].shape)
  local d = L.dim(p.dim or 1, #shape)
  local out, scale = {}, {}
  for i = 1, L.numel(shape) do out[i], scale[i] = 0, 0 end
  for i = 1, #x.data do
    local at = L.unravel(i, x.shape)
    at[d] = idx[at[d]]
    local j = L.ravel(at, shape)
    out[j], scale[j] = out[j] + x.data[i], scale[j] + abs(x.data[i])
  end
  local r = L.array(shape, out)
  r.scale = scale
  return r
end
-- Values on a grid of quarters, so that every sum is exact in every dtype.
local QUARTERS = {lo = -4, hi = 4, step = 0.25, ilo = 0, ihi = 9}
-- sx: x's shape; n: like's size along the dim params.dim names (default 1), which the indices address
local function index_add_like(name, sx, n, params, args, more)
  local d = L.dim(params and params.dim or 1, #sx)
  local slike = L.copy(sx)
  slike[d] = n
  local c = {name = name, op = 'index_add_like', params = params, args = args, dtypes = DT, exact = true,
             inputs = {input(sx, QUARTERS), indices(sx[d], {ihi = n}), input(slike)}, ref = index_add_like_ref}
  for key, v in pairs(more or {}) do c[key] = v end
  add(c)
end
index_add_like('index_add_like', {7, 3, 4}, 5, nil, nil,
               {empty = {{{0, 3, 4}, {0}, {5, 3, 4}}, {{7, 0, 4}, {7}, {5, 0, 4}}, {{0, 3, 4}, {0}, {0, 3, 4}}}})
index_add_like('index_add_like_dim2', {3, 6, 4}, 2, {dim = 2}, {2})  -- many repeats: they accumulate
index_add_like('index_add_like_last', {2, 3, 5}, 4, {dim = -1}, {-1}, {empty = {{{2, 3, 0}, {0}, {2, 3, 4}}}})
index_add_like('index_add_like_1d', {9}, 4, {dim = 1})
-- every slice into one place
index_add_like('index_add_like_same', {5, 3}, 3, nil, nil,
               {inputs = {input({5, 3}, QUARTERS), indices(5, {ilo = 2, ihi = 2}), input({3, 3})}})
-- like's dtype does not matter: the result takes x's
index_add_like('index_add_like_like_dtype', {4, 3}, 2, nil, nil,
               {inputs = {input({4, 3}, QUARTERS), indices(4, {ihi = 2}), input({2, 3}, {dtype = 'uint8'})}})
-- not uint8: the expanded layout repeats one index 150 times, and the sums would wrap
index_add_like('index_add_like_threads', {150, 300}, 100, nil, nil,
               {dtypes = {'float32', 'float64', 'int32', 'int64'}})
-- general values: float sums round, so measured against the sum of |terms|
index_add_like('index_add_like_values', {8, 5}, 3, {dim = 1}, nil,
               {dtypes = FLOATS, exact = false,
                inputs = {input({8, 5}), indices(8, {ihi = 3}), input({3, 5})}})
add{name = 'index_add_like_out_of_range', op = 'index_add_like',
    inputs = {input({2, 3}), indices(2, {ilo = 6, ihi = 6}), input({5, 3})},
    error = 'index_add_like: index 6 at position 1 is out of range 1..5'}
add{name = 'index_add_like_negative', op = 'index_add_like',
    inputs = {input({3, 2}), indices(2, {ilo = -1, ihi = -1}), input({3, 4})}, params = {dim = 2},
    error = 'index_add_like: index -1 at position 1 is out of range 1..4'}
add{name = 'index_add_like_int32', op = 'index_add_like',
    inputs = {input({2, 3}), input({2}, {dtype = 'int32', ilo = 1, ihi = 2}), input({5, 3})},
    error = 'index_add_like: indices are int32; expected int64 (1-based)'}
add{name = 'index_add_like_bad_shapes', op = 'index_add_like',
    inputs = {input({2, 3}), indices(2, {ihi = 5}), input({5, 5})},
    error = 'index_add_like: x is 2x3, indices 2, like 5x5; x must be like with dim 1 sized by the indices'}

-- one_hot ----------------------------------------------------------------------------------------
local function one_hot_ref(ins, p)
  local lab, C = ins[1], p.num_classes
  local shape = L.copy(lab.shape)
  shape[#shape + 1] = C
  local out = {}
  for i = 1, L.numel(shape) do out[i] = 0 end
  for i = 1, #lab.data do out[(i - 1) * C + lab.data[i]] = 1 end
  return L.array(shape, out)
end
local function labels(shape, C, more) return L.input(shape, {ilo = 1, ihi = C}, more) end
-- labels in the run's dtype (int64, int32, uint8); the result float32 unless the params say
local function one_hot(name, shape, params, args, more)
  local c = {name = name, op = 'one_hot', inputs = {labels(shape, params.num_classes)}, params = params, args = args,
             dtypes = INT, exact = true, out_dtype = params.dtype or 'float32', ref = one_hot_ref}
  for key, v in pairs(more or {}) do c[key] = v end
  add(c)
end
one_hot('one_hot', {2, 3}, {num_classes = 5}, {5}, {empty = {{{0, 3}}, {{2, 0}}}})
one_hot('one_hot_1d', {7}, {num_classes = 3}, nil, {empty = {{{0}}}})
one_hot('one_hot_scalar', {}, {num_classes = 4})
one_hot('one_hot_3d', {2, 3, 2}, {num_classes = 6})
one_hot('one_hot_one_class', {3, 4}, {num_classes = 1})
one_hot('one_hot_positional_dtype', {4, 3}, {num_classes = 4, dtype = 'float64'}, {4, 'float64'})
one_hot('one_hot_threads', {200, 200}, {num_classes = 3})
-- every result dtype, from int64 labels
add{name = 'one_hot_dtypes', op = 'one_hot', inputs = {labels({4, 3}, 4, {dtype = 'int64'})},
    params = {num_classes = 4}, dtypes = DT, dtype_param = true, exact = true, ref = one_hot_ref,
    empty = {{{0, 3}}}}
add{name = 'one_hot_out_of_range', op = 'one_hot', inputs = {labels({2, 3}, 6, {ilo = 6})}, params = {num_classes = 5},
    dtypes = INT, error = 'one_hot: label 6 at position 1 is out of range 1..5'}
add{name = 'one_hot_zero', op = 'one_hot', inputs = {labels({3}, 0, {ilo = 0})}, params = {num_classes = 2},
    dtypes = INT, error = 'one_hot: label 0 at position 1 is out of range 1..2'}
add{name = 'one_hot_float_labels', op = 'one_hot', inputs = {input({3})}, params = {num_classes = 2},
    dtypes = {'float32'}, error = 'one_hot: labels are float32; expected an integer dtype'}
add{name = 'one_hot_no_classes', op = 'one_hot', inputs = {labels({3}, 2)}, dtypes = {'int64'},
    error = "one_hot: param 'num_classes' is required"}
add{name = 'one_hot_zero_classes', op = 'one_hot', inputs = {labels({3}, 1)}, params = {num_classes = 0},
    dtypes = {'int64'}, error = "one_hot: param 'num_classes' is 0; expected a value in [1, 1e+09]"}

return cases
