-- Cases: the in-place ops (add_ sub_ mul_ div_ zero_ clamp_ uniform_ normal_: input 1 written and
-- returned), add and sub with alpha, and the factories empty, full_like, rand_like, randn_like.
-- References are plain Lua on the input values: other broadcast to x's shape, then the arithmetic.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end
local input = L.input
local views_input1 = L.views_input1
local ALL = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local FLOATS = {'float32', 'float64'}
local INTS = {'int32', 'int64'}

-- x's new value, which the output (x itself) also holds
local function written(shape, data)
  local w = L.array(L.copy(shape), data)
  return {w, written = {w}}
end
-- x op= alpha * other, other (a tensor or a 0-dim array from a number) spread to x's shape
local function inplace_ref(f)
  return function(ins, p, dtype)
    local x, o = ins[1], L.spread(ins[2], ins[1].shape)
    local out, alpha = {}, p.alpha or 1
    for i = 1, #x.data do
      local v = f(x.data[i], o[i], alpha)
      if dtype == 'float32' then v = L.f32(v) end
      out[i] = v
    end
    return written(x.shape, out)
  end
end
local ARITH = {
  add_ = function(a, b, alpha) return a + alpha * b end,
  sub_ = function(a, b, alpha) return a - alpha * b end,
  mul_ = function(a, b) return a * b end,
  div_ = function(a, b) return a / b end,
}
local DIVISOR = {lo = 0.25, hi = 3, signed = true, ilo = -5, ihi = 5, nonzero = true}
local SMALL = {ilo = 0, ihi = 15}  -- uint8 sums and products stay in range
local number = input({}, SMALL, {number = true})

for _, name in ipairs{'add_', 'sub_', 'mul_', 'div_'} do
  local ref, dom, dtypes = inplace_ref(ARITH[name]), name == 'div_' and DIVISOR or SMALL, ALL
  if name == 'div_' then dtypes = FLOATS end
  local base = name == 'sub_' and {ilo = 100, ihi = 120} or SMALL  -- uint8 differences stay >= 0
  add{name = name, op = name, inputs = {input({2, 3, 4}, base), input({2, 3, 4}, dom)}, writes = {1}, dtypes = dtypes,
      ref = ref, check_out = views_input1, empty = {{{0, 3}, {0, 3}}, {{2, 0}, {1}}}}
  add{name = name .. '_bcast', op = name, inputs = {input({2, 3}, base), input({3}, dom)}, writes = {1},
      dtypes = dtypes, ref = ref, check_out = views_input1}
  add{name = name .. '_bcast_leading', op = name, inputs = {input({4, 1, 3}, base), input({1, 3}, dom)}, writes = {1},
      ref = ref, check_out = views_input1}
  add{name = name .. '_number', op = name, inputs = {input({2, 3}, base), name == 'div_' and input({}, DIVISOR, {number = true}) or number},
      writes = {1}, dtypes = dtypes, ref = ref, check_out = views_input1}
  add{name = name .. '_0dim', op = name, inputs = {input({}, base), input({}, dom)}, writes = {1}, ref = ref,
      check_out = views_input1}
  -- the destination's shape never changes: a source that would grow it is an error naming both
  add{name = name .. '_grows_x', op = name, inputs = {input({3}), input({2, 3})},
      error = name .. ': other is 2x3; it must broadcast to x 3'}
  add{name = name .. '_bad_shapes', op = name, inputs = {input({2, 3}), input({2})}, error = name .. ': x is 2x3, other is 2'}
  add{name = name .. '_mixed_dtypes', op = name, inputs = {input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
      dtypes = {'float32'}, error = name .. ': x is float32, other is float64; expected one dtype'}
end
-- integers divide truncating toward zero (PyTorch's trunc rounding; C's division)
add{name = 'div__int', op = 'div_', inputs = {input({3, 4}, {ilo = -20, ihi = 20}), input({4}, DIVISOR)}, writes = {1},
    dtypes = INTS, exact = true, check_out = views_input1,
    ref = inplace_ref(function(a, b) return L.trunc(a / b) end)}

-- alpha: x + alpha * other (in place and not)
add{name = 'add__alpha', op = 'add_', inputs = {input({2, 3}), input({3})}, params = {alpha = -2.5}, writes = {1},
    ref = inplace_ref(ARITH.add_), check_out = views_input1}
add{name = 'sub__alpha_int', op = 'sub_', inputs = {input({2, 3}), input({2, 3})}, params = {alpha = 3}, writes = {1},
    dtypes = INTS, exact = true, ref = inplace_ref(ARITH.sub_), check_out = views_input1}
add{name = 'add__alpha_fraction_int', op = 'add_', inputs = {input({2}, {dtype = 'int32'}), input({2}, {dtype = 'int32'})},
    params = {alpha = 0.5}, dtypes = {'float32'}, error = 'add_: alpha 0.5 is not an integer; x is int32'}
add{name = 'add__number_fraction_int', op = 'add_', inputs = {input({2}, {dtype = 'int64'}), input({}, {number = true})},
    dtypes = {'float32'}, error = 'is not an integer; the int64 it is written into holds integers only'}

local function alpha_ref(f)
  return function(ins, p, dtype)
    local alpha = p.alpha or 1
    local out = L.bmap(ins, function(a, b) return f(a, b, alpha) end)
    if dtype == 'float32' then out = L.map(out, L.f32) end
    return out
  end
end
add{name = 'add_alpha', op = 'add', inputs = {input({2, 3, 4}), input({3, 4})}, params = {alpha = 2.5},
    ref = alpha_ref(ARITH.add_), empty = {{{0, 3, 4}, {3, 4}}}}
add{name = 'add_alpha_bcast_both', op = 'add', inputs = {input({3}), input({2, 1})}, params = {alpha = -1},
    ref = alpha_ref(ARITH.add_)}
add{name = 'sub_alpha', op = 'sub', inputs = {input({2, 3}), input({2, 3})}, params = {alpha = 0.5},
    ref = alpha_ref(ARITH.sub_)}
add{name = 'sub_alpha_int', op = 'sub', inputs = {input({2, 3}), input({3})}, params = {alpha = -4}, dtypes = INTS,
    exact = true, ref = alpha_ref(ARITH.sub_)}
add{name = 'sub_alpha_number', op = 'sub', inputs = {input({2, 3}), input({}, {number = true})}, args = {2},
    params = {alpha = 2}, ref = alpha_ref(ARITH.sub_)}
add{name = 'add_alpha_fraction_int', op = 'add', inputs = {input({2}), input({2})}, params = {alpha = 1.5},
    dtypes = {'int32'}, error = 'add: alpha 1.5 is not an integer; the operands are int32'}

-- zero_, clamp_
add{name = 'zero_', op = 'zero_', inputs = {input({2, 3, 4})}, writes = {1}, dtypes = ALL, check_out = views_input1,
    ref = function(ins) return written(ins[1].shape, L.map(ins[1], function() return 0 end).data) end,
    empty = {{{0, 3}}}}
local function clamp_ref(ins, p)
  return written(ins[1].shape, L.map(ins[1], function(v)
    if v ~= v then return v end
    return math.min(math.max(v, p.min or -math.huge), p.max or math.huge)
  end).data)
end
add{name = 'clamp_', op = 'clamp_', inputs = {input({3, 4, 2}, {lo = -3, hi = 3, nan = 7})}, params = {min = -0.5, max = 1.25},
    writes = {1}, ref = clamp_ref, check_out = views_input1, empty = {{{0, 2}}}}
add{name = 'clamp__int', op = 'clamp_', inputs = {input({3, 4})}, args = {-2, 3}, params = {min = -2, max = 3},
    writes = {1}, dtypes = INTS, exact = true, ref = clamp_ref, check_out = views_input1}
add{name = 'clamp__min_only', op = 'clamp_', inputs = {input({5})}, params = {min = 0}, writes = {1}, ref = clamp_ref,
    check_out = views_input1}
add{name = 'clamp__bad_bounds', op = 'clamp_', inputs = {input({2})}, params = {min = 2, max = 1},
    error = 'clamp_: min 2 is greater than max 1'}

-- uniform_, normal_: by property (the draws' range and moments; x written through its view)
local function drawn(mf, dtype, T, name, args, lo, hi, mean, sd)
  local base = mf.full({6, 500}, 99, {dtype = dtype})
  local x = base:narrow(1, 2, 3):t()  -- a strided view: 500x3
  local r = mf[name](x, unpack(args))
  if r ~= x then return name .. ' did not return x itself' end
  local v = T.read(x)
  local s, s2 = 0, 0
  for i = 1, #v do
    if not (v[i] >= lo and v[i] < hi) then return ('element %d is %.17g, outside [%g, %g)'):format(i, v[i], lo, hi) end
    s = s + v[i]
  end
  local m = s / #v
  for i = 1, #v do s2 = s2 + (v[i] - m) ^ 2 end
  local sdv = math.sqrt(s2 / (#v - 1))
  if math.abs(m - mean) > 4 * sd / math.sqrt(#v) then return ('mean %g, want %g'):format(m, mean) end
  if math.abs(sdv - sd) > 0.1 * sd then return ('std %g, want %g'):format(sdv, sd) end
  local all = T.read(base)  -- rows 1, 5, 6 keep their 99s
  for j = 1, 500 do
    for _, i in ipairs{1, 5, 6} do
      if all[(i - 1) * 500 + j] ~= 99 then return ('wrote row %d of the base, outside the view'):format(i) end
    end
  end
  mf.manual_seed(3)
  local a = T.read(mf[name](mf.zeros({7}, {dtype = dtype}), unpack(args)))
  mf.manual_seed(3)
  local b = T.read(mf[name](mf.zeros({7}, {dtype = dtype}), unpack(args)))
  for i = 1, 7 do if a[i] ~= b[i] then return 'manual_seed(3) twice gave different draws' end end
  local ok, err = pcall(mf[name], mf.zeros({2}, {dtype = 'int32'}))
  if ok or not tostring(err):find(name .. ': input x is int32; expected float32 or float64', 1, true) then
    return 'an int32 x: ' .. tostring(err)
  end
  ok, err = pcall(mf[name], mf.zeros({3, 1}, {dtype = dtype}):expand(3, 4))
  if ok or not tostring(err):find('expanded view', 1, true) then return 'an expanded x: ' .. tostring(err) end
end
add{name = 'uniform_', op = 'uniform_', check = function(mf, dtype, T)
  return drawn(mf, dtype, T, 'uniform_', {-2, 3}, -2, 3, 0.5, 5 / math.sqrt(12))
end}
add{name = 'uniform__bad_range', op = 'uniform_', inputs = {input({2})}, params = {from = 1, to = 0},
    error = 'uniform_: from 1 is greater than to 0'}
add{name = 'normal_', op = 'normal_', check = function(mf, dtype, T)
  return drawn(mf, dtype, T, 'normal_', {{mean = 5, std = 2}}, -math.huge, math.huge, 5, 2)
end}

-- factories: empty (contents unspecified: its shape and dtype are checked; no tensor input, so
-- eager only), full_like, rand_like, randn_like
add{name = 'empty', op = 'empty', dtypes = ALL, check = function(mf, dtype, T)
  for _, sizes in ipairs{{2, 3}, {0, 4}, {}, {64, 1024}} do
    local e = mf.empty(sizes, {dtype = dtype})
    if T.dtype(e) ~= dtype or table.concat(T.shape(e), 'x') ~= table.concat(sizes, 'x') then
      return ('empty(%s): got %s of %s'):format(table.concat(sizes, 'x'), T.dtype(e), table.concat(T.shape(e), 'x'))
    end
  end
  if #T.read(mf.empty({1000, 3}, {dtype = dtype})) ~= 3000 then return 'empty(1000x3): not 3000 elements' end
end}
add{name = 'full_like', op = 'full_like', inputs = {input({2, 3, 4})}, params = {value = 7}, dtypes = ALL,
    ref = function(ins) return L.map(ins[1], function() return 7 end) end, empty = {{{0, 3}}}}
add{name = 'full_like_nan', op = 'full_like', inputs = {input({3})}, params = {value = 0 / 0},
    ref = function(ins) return L.map(ins[1], function() return 0 / 0 end) end}
add{name = 'full_like_too_big', op = 'full_like', inputs = {input({2})}, params = {value = 300}, dtypes = {'uint8'},
    error = 'full_like: value 300 does not fit uint8'}
local function like_check(name, args, lo, hi)
  return function(mf, dtype, T)
    local x = mf.zeros({40, 50}, {dtype = dtype}):t()
    local r = mf[name](x, unpack(args))
    if table.concat(T.shape(r), 'x') ~= '50x40' or T.dtype(r) ~= dtype then return 'wrong shape or dtype' end
    for i, v in ipairs(T.read(r)) do
      if not (v >= lo and v < hi) then return ('element %d is %g, outside [%g, %g)'):format(i, v, lo, hi) end
    end
    if T.read(x)[1] ~= 0 then return 'x was written' end
    local ok, err = pcall(mf[name], mf.zeros({2}, {dtype = 'int64'}))
    if ok or not tostring(err):find('expected float32 or float64', 1, true) then return 'int64 x: ' .. tostring(err) end
  end
end
add{name = 'rand_like', op = 'rand_like', check = like_check('rand_like', {{low = -1, high = 4}}, -1, 4)}
add{name = 'randn_like', op = 'randn_like', check = like_check('randn_like', {}, -math.huge, math.huge)}
return cases
