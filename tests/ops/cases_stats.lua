-- Cases of the statistics (var, std, norm, logsumexp over dims, with keepdim), the uint8
-- reductions any / all and the predicates isnan / isfinite. References fold the reduced values in
-- plain Lua float64 (two-pass variance, the p-norm formulas as PyTorch defines them).
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local huge, nan = math.huge, 0 / 0
local input = L.input
local ALL8 = {'float32', 'float64', 'int32', 'int64', 'uint8'}

-- folds ------------------------------------------------------------------------------------------
local function fvar(v, correction)
  local n, s = #v, 0
  for i = 1, n do s = s + v[i] end
  local mean, ss = s / n, 0
  for i = 1, n do ss = ss + (v[i] - mean) ^ 2 end
  return ss / math.max(0, n - correction)
end
local function fnorm(v, p)
  local r = 0
  if p == huge or p == -huge then
    r = p > 0 and 0 or huge
    for i = 1, #v do
      local a = math.abs(v[i])
      if a ~= a then return nan end
      r = p > 0 and math.max(r, a) or math.min(r, a)
    end
    return r
  end
  for i = 1, #v do
    if p == 0 then r = r + (v[i] ~= 0 and 1 or 0) else r = r + math.abs(v[i]) ^ p end
  end
  if p == 0 or p == 1 then return r end
  return r ^ (1 / p)
end
local function flogsumexp(v)
  local m = -huge
  for i = 1, #v do if v[i] > m then m = v[i] end end
  if m == huge or m == -huge then m = 0 end
  local s = 0
  for i = 1, #v do s = s + math.exp(v[i] - m) end
  return math.log(s) + m
end
local function fany(v)
  for i = 1, #v do if v[i] ~= 0 then return 1 end end
  return 0
end
local function fall(v)
  for i = 1, #v do if v[i] == 0 then return 0 end end
  return 1
end

local function unbiased(p) return p.unbiased == nil or p.unbiased end
-- The rounding error of a std grows with the values' magnitude as well as the spread: of n equal
-- values (the expanded layout) the exact std is 0, and summation orders leave noise near eps * |x|
-- (the float64 reference gave 2.4e-16 where the CUDA kernel gave 0). So each std's tolerance is
-- taken of max(|std|, 0.01 max |x|) over its reduced values (y.scale, harness.lua's compare): for the
-- float64 rtol 1e-12 that allows 1e-14 |x|. The float32 offset case (values 1e4 .. 1e4 + 1) then
-- allows 1e-3 against a std near 0.29; a one-pass E[x^2] - E[x]^2 there is off by about 2.
local function fmaxabs(v)
  local m = 0
  for i = 1, #v do local a = math.abs(v[i]); if a == a and a ~= huge then m = math.max(m, a) end end
  return m
end
local function std_of(ins, p)
  local y = L.reduce(ins[1], p.dim, p.keepdim, function(v) return math.sqrt(fvar(v, unbiased(p) and 1 or 0)) end)
  local s = L.reduce(ins[1], p.dim, p.keepdim, fmaxabs).data
  for i = 1, #s do s[i] = math.max(0.01 * s[i], math.abs(y.data[i])) end
  y.scale = s
  return y
end
local REF = {
  var = function(ins, p)
    return L.reduce(ins[1], p.dim, p.keepdim, function(v) return fvar(v, unbiased(p) and 1 or 0) end)
  end,
  std = std_of,
  norm = function(ins, p) return L.reduce(ins[1], p.dim, p.keepdim, function(v) return fnorm(v, p.p or 2) end) end,
  logsumexp = function(ins, p) return L.reduce(ins[1], p.dim, p.keepdim, flogsumexp) end,
  any = function(ins, p) return L.reduce(ins[1], p.dim, p.keepdim, fany) end,
  all = function(ins, p) return L.reduce(ins[1], p.dim, p.keepdim, fall) end,
}

-- var / std ----------------------------------------------------------------------------------------
-- suffix, input shape, args (as a user writes them), params (their meaning), empty variants
for _, name in ipairs{'var', 'std'} do
  local function v(suffix, shape, args, params, empty, dom)
    add{name = name .. suffix, op = name, inputs = {input(shape, dom)}, args = args, params = params, ref = REF[name],
        empty = empty}
  end
  v('', {2, 3, 4}, nil, {})
  v('_dim2_biased', {2, 3, 4}, {2, false}, {dim = {2}, unbiased = false}, {{{2, 0, 4}}, {{0, 3, 4}}})
  v('_dims13_keepdim', {2, 3, 4}, nil, {dim = {1, 3}, keepdim = true}, {{{0, 3, 4}}})
  v('_dim_neg', {3, 5}, {-1}, {dim = {-1}})
  v('_1d', {7}, {1, true, true}, {dim = {1}, unbiased = true, keepdim = true})
  v('_scalar', {}, nil, {})                                        -- one element, unbiased: NaN
  v('_scalar_biased', {}, nil, {unbiased = false})                  -- 0
  v('_one_row', {1, 4}, {1}, {dim = {1}})                           -- n = 1 along dim 1: NaN
  v('_nan', {3, 6}, {2}, {dim = {2}}, nil, {nan = 4})
  v('_inf', {2, 3}, {2}, {dim = {2}}, nil, {values = {huge, 1, 2, 3, -huge, 4}})
  -- a large offset: one pass (E[x^2] - E[x]^2) in float32 would lose every digit of the spread
  v('_offset', {4, 6}, {2}, {dim = {2}}, nil, {lo = 1e4, hi = 1e4 + 1})
  v('_threads', {300, 200}, {2}, {dim = {2}})
  add{name = name .. '_int', op = name, inputs = {input({2, 3})}, dtypes = {'int32', 'int64', 'uint8'},
      error = 'expected float32 or float64'}
  add{name = name .. '_bad_dim', op = name, inputs = {input({2, 3})}, params = {dim = {3}}, error = 'dim 3'}
end

-- norm -----------------------------------------------------------------------------------------------
local function norm(suffix, shape, args, params, empty, dom)
  add{name = 'norm' .. suffix, op = 'norm', inputs = {input(shape, dom)}, args = args, params = params, ref = REF.norm,
      empty = empty}
end
norm('', {2, 3, 4}, nil, {}, {{{0, 3, 4}}})
norm('_p1_dim2', {2, 3, 4}, {1, 2}, {p = 1, dim = {2}}, {{{2, 0, 4}}})
norm('_p3_dims_keepdim', {2, 3, 4}, {3, {1, 3}, true}, {p = 3, dim = {1, 3}, keepdim = true})
norm('_p_half', {3, 4}, nil, {p = 0.5, dim = {2}})
norm('_p_neg1', {3, 4}, nil, {p = -1, dim = {2}}, nil, {lo = 0.5, hi = 2, signed = true})
norm('_p0', {4, 5}, {0, 2}, {p = 0, dim = {2}}, {{{4, 0}}}, {step = 1, lo = -1, hi = 1.9})
norm('_inf', {3, 4}, {huge, 2}, {p = huge, dim = {2}}, {{{3, 0}}})
norm('_neg_inf', {3, 4}, {-huge, 1}, {p = -huge, dim = {1}})
norm('_zeros', {2, 3}, nil, {dim = {2}}, nil, {values = {0}})
norm('_nan', {3, 6}, {huge, 2}, {p = huge, dim = {2}}, nil, {nan = 4})
norm('_1d', {7}, nil, {})
norm('_scalar', {}, nil, {p = 1})
norm('_large', {64, 33}, nil, {dim = {1}})
add{name = 'norm_neg_inf_empty', op = 'norm', inputs = {input({3, 0})}, params = {p = -huge, dim = {2}},
    error = 'the -inf norm over an empty dim'}
add{name = 'norm_int', op = 'norm', inputs = {input({2, 3})}, dtypes = {'int64'}, error = 'expected float32 or float64'}
add{name = 'norm_nan_order', op = 'norm', inputs = {input({2, 3})}, params = {p = nan},
    error = "param 'p' expects a number"}

-- logsumexp ----------------------------------------------------------------------------------------
local function lse(suffix, shape, args, params, empty, dom)
  add{name = 'logsumexp' .. suffix, op = 'logsumexp', inputs = {input(shape, dom or {lo = -3, hi = 3})}, args = args,
      params = params, ref = REF.logsumexp, empty = empty}
end
lse('', {2, 3, 4}, {2}, {dim = {2}}, {{{2, 0, 4}}, {{0, 3, 4}}})
lse('_all', {2, 3, 4}, nil, {}, {{{2, 0, 4}}})
lse('_dims_keepdim', {2, 3, 4}, {{1, -1}, true}, {dim = {1, -1}, keepdim = true})
lse('_1d', {6}, {1}, {dim = {1}})
lse('_scalar', {}, nil, {})
-- exp(90) overflows float32: only the max-subtracted form gets these right
lse('_large', {3, 5}, {2}, {dim = {2}}, nil, {lo = 60, hi = 95})
-- a row of -inf gives -inf, a row with +inf gives +inf, NaN gives NaN (PyTorch)
lse('_special', {4, 3}, {2}, {dim = {2}}, nil,
    {values = {-huge, -huge, -huge, huge, 0, 1, nan, 1, 2, -huge, 0, 1}})
lse('_threads', {150, 50}, {2}, {dim = {2}})
add{name = 'logsumexp_int', op = 'logsumexp', inputs = {input({2, 3})}, dtypes = {'int32'},
    error = 'expected float32 or float64'}

-- any / all ------------------------------------------------------------------------------------------
local ZEROS = {step = 1, lo = -1, hi = 1.9, ilo = 0, ihi = 2}  -- many zeros in every dtype
for _, name in ipairs{'any', 'all'} do
  local function v(suffix, shape, args, params, empty, dom)
    add{name = name .. suffix, op = name, inputs = {input(shape, dom or ZEROS)}, args = args, params = params,
        dtypes = ALL8, exact = true, out_dtype = 'uint8', ref = REF[name], empty = empty}
  end
  v('', {2, 3, 4}, nil, {}, {{{2, 0, 4}}})
  v('_dim2', {2, 3, 4}, {2}, {dim = {2}}, {{{2, 0, 4}}, {{0, 3, 4}}})
  v('_dims_keepdim', {2, 3, 4}, {{1, 3}, true}, {dim = {1, 3}, keepdim = true})
  v('_1d', {7}, {1}, {dim = {1}})
  v('_scalar', {}, nil, {})
  v('_all_zero', {3, 4}, {2}, {dim = {2}}, nil, {values = {0}, ilo = 0, ihi = 0})
  v('_all_one', {3, 4}, {2}, {dim = {2}}, nil, {values = {1}, ilo = 1, ihi = 1})
  v('_threads', {300, 200}, {1}, {dim = {1}})
  -- NaN is not 0: it counts as true
  add{name = name .. '_nan', op = name,
      inputs = {input({3, 4}, {values = {nan, 0, 0, 0, nan, nan, nan, nan, 0, 0, 0, 0}})},
      params = {dim = {2}}, exact = true, out_dtype = 'uint8', ref = REF[name]}
end

-- isnan / isfinite -----------------------------------------------------------------------------------
local SPECIAL = {values = {nan, huge, -huge, 0, 1.5, -2, -0.0}}
local function pred(f) return function(ins) return L.map(ins[1], f) end end
local PRED = {
  isnan = pred(function(x) return x ~= x and 1 or 0 end),
  isfinite = pred(function(x) return (x == x and x ~= huge and x ~= -huge) and 1 or 0 end),
}
for _, name in ipairs{'isnan', 'isfinite'} do
  add{name = name, op = name, inputs = {input({3, 7}, SPECIAL)}, dtypes = ALL8, exact = true, out_dtype = 'uint8',
      ref = PRED[name], empty = {{{0, 7}}}}
  add{name = name .. '_scalar', op = name, inputs = {input({}, {values = {nan}})}, exact = true, out_dtype = 'uint8',
      ref = PRED[name]}
  add{name = name .. '_3d', op = name, inputs = {input({2, 3, 4}, {nan = 3})}, exact = true, out_dtype = 'uint8',
      ref = PRED[name]}
end

return cases
