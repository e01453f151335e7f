-- Cases of the pointwise ops: unary math, clamp, binary arithmetic and comparisons with NumPy
-- broadcasting, where and cast. References are plain Lua on float64 numbers.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local FLOATS = {'float32', 'float64'}
local ALL = {'float32', 'float64', 'int32', 'int64'}
local floor, exp, huge, nan = math.floor, math.exp, math.huge, 0 / 0
local input = L.input

-- unary --------------------------------------------------------------------------------------------
local function log1p(x)  -- float64 log1p without the cancellation of log(1 + x)
  local y = 1 + x
  if y == 1 or y == huge then return x end
  return math.log(y) * x / (y - 1)
end
-- NaN stays NaN in sign (NumPy's rule; PyTorch 1.13 gives 0 there, its open bug pytorch#41245)
local function sign(x) return x > 0 and 1 or x < 0 and -1 or x == 0 and 0 or x end
-- relu keeps NaN (PyTorch: torch.relu(nan) is nan)
local function relu(x) return (x > 0 or x ~= x) and x or 0 end
local HALVES = {lo = -4, hi = 4, step = 0.25}  -- integers, halves and quarters, both signs
-- op, reference, domain, dtypes, exact, special values (where the docs promise a result)
local unary = {
  {'neg', function(x) return -x end, {}, ALL, true, {-huge, nan}},
  {'abs', math.abs, {}, ALL, true, {-huge, nan}},
  {'exp', exp, {lo = -4, hi = 4}, FLOATS, false, {-huge, huge, 1000, -1000, nan}},
  {'log', math.log, {lo = 0.01, hi = 5}, FLOATS, false, {0, -1, 1, huge, nan}},  -- -inf at 0, nan below
  {'log1p', log1p, {lo = -0.9, hi = 3}, FLOATS, false, {-1, -2, 0, huge}},
  {'sqrt', math.sqrt, {lo = 0, hi = 4}, FLOATS, false, {0, -1, huge}},
  {'rsqrt', function(x) return 1 / math.sqrt(x) end, {lo = 0.05, hi = 4}, FLOATS, false, {0, huge}},
  {'sigmoid', function(x) return 1 / (1 + exp(-x)) end, {lo = -20, hi = 20}, FLOATS, false,
   {-huge, huge, nan, -1000, 1000}},
  {'tanh', math.tanh, {lo = -4, hi = 4}, FLOATS, false, {-huge, huge, nan, 50}},
  {'relu', relu, {}, ALL, true, {nan, -huge, huge, 0, -0.5, 0.5}},
  {'sin', math.sin, {lo = -7, hi = 7}, FLOATS},
  {'cos', math.cos, {lo = -7, hi = 7}, FLOATS},
  {'square', function(x) return x * x end, {}, ALL},
  {'sign', sign, {lo = -2, hi = 2, step = 0.5, ilo = -2, ihi = 2}, ALL, true, {nan, -huge, huge, 0, -0.5}},
  {'floor', floor, HALVES, ALL, true, {-huge, huge, nan}},
  {'ceil', math.ceil, HALVES, ALL, true, {-huge, huge, nan}},
  {'round', L.round_half_even, HALVES, ALL, true, {-huge, huge, nan, -2.5, 0.5}},
}
for _, u in ipairs(unary) do
  local name, f, dom, dtypes, exact, special = unpack(u)
  local function ref(ins) return L.map(ins[1], f) end
  add{name = name, op = name, inputs = {input({2, 3, 4}, dom)}, dtypes = dtypes, exact = exact, ref = ref,
      empty = {{{0, 3}}, {{3, 0, 2}}}}
  add{name = name .. '_scalar', op = name, inputs = {input({}, dom)}, dtypes = dtypes, exact = exact, ref = ref}
  if special then
    add{name = name .. '_special', op = name, inputs = {input({#special}, {values = special})}, exact = true, ref = ref}
  end
end
add{name = 'sigmoid_extreme', op = 'sigmoid', inputs = {input({4, 5}, {lo = -800, hi = 800})},
    ref = function(ins) return L.map(ins[1], function(x) return 1 / (1 + exp(-x)) end) end}

local function clamp_ref(ins, p)
  local lo, hi = p.min or -huge, p.max or huge
  return L.map(ins[1], function(x) return x < lo and lo or x > hi and hi or x end)
end
add{name = 'clamp', op = 'clamp', inputs = {input({3, 4, 2}, {lo = -3, hi = 3})}, params = {min = -0.5, max = 1.25},
    dtypes = FLOATS, exact = true, ref = clamp_ref, empty = {{{0, 4}}}}
add{name = 'clamp_positional', op = 'clamp', inputs = {input({3, 4}, {lo = -4, hi = 7})}, params = {min = -2, max = 5},
    args = {-2, 5}, dtypes = ALL, exact = true, ref = clamp_ref}
add{name = 'clamp_min_only', op = 'clamp', inputs = {input({5, 3})}, params = {min = 0.25},
    dtypes = FLOATS, exact = true, ref = clamp_ref}
add{name = 'clamp_max_only', op = 'clamp', inputs = {input({5, 3})}, params = {max = -0.25},
    dtypes = FLOATS, exact = true, ref = clamp_ref}
add{name = 'clamp_bad_bounds', op = 'clamp', inputs = {input({2})}, params = {min = 1, max = 0},
    error = 'min 1 is greater than max 0'}
-- PyTorch 1.13: NaN elements stay NaN; a NaN bound makes every element NaN
add{name = 'clamp_nan', op = 'clamp', inputs = {input({4, 5}, {lo = -3, hi = 3, nan = 3})}, params = {min = -1, max = 1},
    exact = true, ref = clamp_ref}
add{name = 'clamp_nan_bound', op = 'clamp', inputs = {input({3, 2})}, params = {min = nan, max = 1}, exact = true,
    ref = function(ins) return L.map(ins[1], function() return nan end) end}
add{name = 'clamp_nan_max', op = 'clamp', inputs = {input({3, 2})}, args = {-1, nan}, params = {min = -1, max = nan},
    exact = true, ref = function(ins) return L.map(ins[1], function() return nan end) end}
add{name = 'clamp_int_fraction', op = 'clamp', inputs = {input({2})}, params = {min = 0.5}, dtypes = {'int64'},
    error = 'clamp: x is int64 and bound 0.5 is not an integer'}

-- binary -----------------------------------------------------------------------------------------
-- Each binary op runs on: equal shapes, 2x3 with 3, 4x1x3 with 2x1, a tensor with a Lua number
-- (either side), and a 0-dim tensor with a matrix; empty variants broadcast a size-0 dim.
local function bool(x) return x and 1 or 0 end
local function nan_max(a, b) return (a ~= a or b ~= b) and nan or math.max(a, b) end
local function nan_min(a, b) return (a ~= a or b ~= b) and nan or math.min(a, b) end
local TIES = {step = 1, ilo = -2, ihi = 2}  -- few distinct values, so equal pairs occur
local HALF = {step = 0.5}
local DIVISOR = {lo = 0.25, hi = 3, signed = true, ilo = -5, ihi = 5, nonzero = true}
-- op, reference, domain of a, domain of b, dtypes, exact, output dtype
local binary = {
  {'add', function(a, b) return a + b end, {}, {}, ALL},
  {'sub', function(a, b) return a - b end, {}, {}, ALL},
  {'mul', function(a, b) return a * b end, {}, {}, ALL},
  {'div', function(a, b) return a / b end, {ilo = -20, ihi = 20}, DIVISOR, FLOATS},
  {'pow', function(a, b) return a ^ b end, {lo = 0.1, hi = 3}, {lo = -2.5, hi = 2.5}, FLOATS},
  {'maximum', nan_max, HALF, HALF, ALL, true},
  {'minimum', nan_min, HALF, HALF, ALL, true},
  -- PyTorch's threshold_backward: 0 where relu's input (or output) is <= 0, so NaN there passes g
  {'relu_backward', function(g, x) return x <= 0 and 0 or g end, {}, TIES, ALL, true},
  {'eq', function(a, b) return bool(a == b) end, TIES, TIES, ALL, true, 'uint8'},
  {'ne', function(a, b) return bool(a ~= b) end, TIES, TIES, ALL, true, 'uint8'},
  {'lt', function(a, b) return bool(a < b) end, TIES, TIES, ALL, true, 'uint8'},
  {'le', function(a, b) return bool(a <= b) end, TIES, TIES, ALL, true, 'uint8'},
  {'gt', function(a, b) return bool(a > b) end, TIES, TIES, ALL, true, 'uint8'},
  {'ge', function(a, b) return bool(a >= b) end, TIES, TIES, ALL, true, 'uint8'},
}
-- suffix, shape of a, shape of b, empty variants, which side is a Lua number
local SHAPES = {
  {'', {2, 3, 4}, {2, 3, 4}, {{{0, 3}, {0, 3}}, {{2, 0, 4}, {2, 1, 4}}}},
  {'_bcast', {2, 3}, {3}, {{{0, 3}, {3}}, {{2, 0}, {1}}}},
  {'_bcast3d', {4, 1, 3}, {2, 1}, {{{4, 1, 3}, {0, 1}}}},
  {'_number', {2, 3}, {}, nil, 2},
  {'_number_first', {}, {3, 2}, nil, 1},
  {'_0dim', {}, {3, 2}, {{{}, {3, 0}}}},
}
local ref_of = {}
for _, b in ipairs(binary) do
  local name, f, da, db, dtypes, exact, out = unpack(b)
  local function ref(ins) return L.bmap(ins, f) end
  ref_of[name] = ref
  for _, s in ipairs(SHAPES) do
    local ins = {input(s[2], da), input(s[3], db)}
    if s[5] then ins[s[5]].number = true end
    add{name = name .. s[1], op = name, inputs = ins, dtypes = dtypes, exact = exact, out_dtype = out, ref = ref,
        empty = s[4]}
  end
end

-- integer division truncates toward zero; NaN rules of maximum, minimum and the comparisons
add{name = 'div_int', op = 'div',
    inputs = {input({4, 5}, {ilo = -20, ihi = 20}), input({5}, {ilo = -4, ihi = 4, nonzero = true})},
    dtypes = {'int32', 'int64'}, exact = true, empty = {{{0, 5}, {5}}},
    ref = function(ins) return L.bmap(ins, function(a, b) return L.trunc(a / b) end) end}
add{name = 'div_int_by_zero', op = 'div', inputs = {input({3}, {ilo = 1, ihi = 5}), input({3}, {ilo = 0, ihi = 0})},
    dtypes = {'int32'}, error = 'integer division by zero'}
add{name = 'div_special', op = 'div', exact = true, ref = ref_of.div,
    inputs = {input({4}, {values = {1, -1, 0, huge}}), input({4}, {values = {0, 0, 0, huge}})}}
add{name = 'pow_int_exponent', op = 'pow', ref = ref_of.pow,
    inputs = {input({3, 4}, {lo = -3, hi = 3, step = 0.5, nonzero = true}), input({4}, {lo = -2, hi = 4, step = 1})}}
add{name = 'pow_int', op = 'pow', inputs = {input({3, 4}, {ilo = -3, ihi = 3}), input({4}, {ilo = 0, ihi = 3})},
    dtypes = {'int32', 'int64'}, exact = true, ref = ref_of.pow}
add{name = 'pow_special', op = 'pow', ref = ref_of.pow,
    inputs = {input({6}, {values = {0, 0, -8, 2, huge, -2}}), input({6}, {values = {0, -1, 1 / 3, huge, -1, 0.5}})}}
-- relu_backward's vector routine (vecmath.cc) over whole vectors and a tail: 70 elements, g with -0, inf
-- and NaN, y with +-0, +-inf, NaN and both signs, in a cycle that puts each pair in every lane
do
  local G, Y = {1.5, -0.0, huge, -2, nan, 0.0, -huge, 3}, {0.0, -0.0, 1, -1, nan, huge, -huge, 0.5, -0.5}
  local g, y = {}, {}
  for i = 1, 70 do g[i], y[i] = G[(i - 1) % #G + 1], Y[(i - 1) % #Y + 1] end
  add{name = 'relu_backward_vectors', op = 'relu_backward', exact = true, ref = ref_of.relu_backward,
      dtypes = {'float32', 'float64'}, inputs = {input({70}, {values = g}), input({70}, {values = y})}}
end
for _, name in ipairs{'maximum', 'minimum', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'relu_backward'} do
  add{name = name .. '_nan', op = name, inputs = {input({3, 5}, HALF, {nan = 4}), input({5}, HALF, {nan = 3})},
      exact = true, out_dtype = not name:match('^m') and not name:match('^relu') and 'uint8' or nil, ref = ref_of[name]}
end
-- PyTorch's promotion of Python scalars: a number with a fractional part (or NaN, inf) among
-- integer operands makes the op compute in float32 (int64 {1, 2} + 0.5 is float32 {1.5, 2.5}; int64 1
-- < 1.5 is true); an integral number keeps the tensor's dtype (the _number cases above)
local INTS = {'int32', 'int64', 'uint8'}
local function frac(v) return input({}, {dtype = 'float64', values = {v}, number = true}) end
local function f32_ref(f)  -- float32 division rounds once, correctly: the float64 quotient rounded
  return function(ins) return L.map(L.bmap(ins, f), L.f32) end
end
for _, b in ipairs(binary) do
  local name, f, _, _, _, _, out = unpack(b)
  if name ~= 'relu_backward' and name ~= 'pow' then  -- pow: tests/lua/test_values.lua (powf rounds its own way)
    local v, ref = name == 'div' and -2.5 or 1.5, name == 'div' and f32_ref(f) or ref_of[name]
    add{name = name .. '_int_fraction', op = name, inputs = {input({3, 4}, {ilo = 0, ihi = 4}), frac(v)},
        dtypes = INTS, exact = true, out_dtype = out or 'float32', ref = ref}
    add{name = name .. '_int_fraction_first', op = name, inputs = {frac(v), input({4}, {ilo = 1, ihi = 4})},
        dtypes = INTS, exact = true, out_dtype = out or 'float32', ref = ref}
  end
end
for _, v in ipairs{{'nan', 0 / 0}, {'inf', huge}, {'neg_inf', -huge}} do
  add{name = 'add_int_' .. v[1], op = 'add', inputs = {input({5}, {ilo = 0}), frac(v[2])}, dtypes = INTS, exact = true,
      out_dtype = 'float32', ref = ref_of.add}
end
add{name = 'add_uint8_number_too_big', op = 'add', inputs = {input({2}), input({}, {dtype = 'int64', ilo = 300, ihi = 300, number = true})},
    dtypes = {'uint8'}, error = 'add: the number 300 (input 2, b) does not fit uint8'}
add{name = 'add_uint8', op = 'add', inputs = {input({3, 4}, {ilo = 0, ihi = 100}), input({4}, {ilo = 0, ihi = 100})},
    dtypes = {'uint8'}, ref = ref_of.add}
add{name = 'add_8d', op = 'add', inputs = {input({2, 2, 1, 2, 2, 1, 2, 2}), input({2, 1, 2, 1, 1, 2})},
    dtypes = ALL, ref = ref_of.add}
-- big enough for the kernels to split the work across threads (more than kGrain = 32768 elements)
add{name = 'exp_threads', op = 'exp', inputs = {input({130, 260})}, ref = function(ins) return L.map(ins[1], exp) end}
add{name = 'add_threads', op = 'add', inputs = {input({130, 300}), input({300})}, ref = ref_of.add}
add{name = 'mul_threads_1d', op = 'mul', inputs = {input({40000}), input({40000})}, ref = ref_of.mul}
add{name = 'add_bad_shapes', op = 'add', inputs = {input({2, 3}), input({2})}, error = 'add: a is 2x3, b is 2'}
add{name = 'add_mixed_dtypes', op = 'add', inputs = {input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
    error = 'expected one dtype'}

-- where ----------------------------------------------------------------------------------------------
local function where_ref(ins) return L.bmap(ins, function(c, a, b) return c ~= 0 and a or b end) end
local COND = {ilo = 0, ihi = 1, dtype = 'uint8'}
add{name = 'where', op = 'where', inputs = {input({2, 3, 4}, COND), input({2, 3, 4}), input({2, 3, 4})},
    dtypes = ALL, exact = true, ref = where_ref, empty = {{{0, 4}, {0, 4}, {0, 4}}}}
add{name = 'where_bcast', op = 'where', inputs = {input({2, 3, 1}, COND), input({3, 4}), input({2, 1, 4})},
    dtypes = ALL, exact = true, ref = where_ref, empty = {{{2, 0, 1}, {3}, {1}}}}
add{name = 'where_number', op = 'where', inputs = {input({3, 4}, COND), input({3, 4}), input({}, {number = true})},
    dtypes = ALL, exact = true, ref = where_ref}
add{name = 'where_threads', op = 'where', inputs = {input({200, 1}, COND), input({200, 200}), input({200})},
    exact = true, ref = where_ref}
-- numbers in where: a uint8 cond never decides their dtype; with no other tensor they are float32,
-- the default dtype; a fractional one among integer operands makes the result float32 (PyTorch)
add{name = 'where_numbers', op = 'where', inputs = {input({3, 4}, COND), frac(0.5), frac(-0.5)}, exact = true,
    dtypes = {'float32'}, ref = where_ref}
add{name = 'where_int_numbers', op = 'where', inputs = {input({5}, COND), input({}, {ilo = 3, ihi = 3, number = true}),
    input({}, {ilo = -2, ihi = -2, number = true})}, dtypes = {'int32'}, exact = true, out_dtype = 'float32', ref = where_ref}
add{name = 'where_int_fraction', op = 'where', inputs = {input({3, 4}, COND), input({3, 4}), frac(0.5)}, exact = true,
    dtypes = INTS, out_dtype = 'float32', ref = where_ref}
add{name = 'where_int_fraction_first', op = 'where', inputs = {input({4}, COND), frac(0 / 0), input({3, 4})}, exact = true,
    dtypes = INTS, out_dtype = 'float32', ref = where_ref}
add{name = 'where_nan', op = 'where', inputs = {input({3, 4}, COND), input({3, 4}, {nan = 2}), input({4}, {nan = 3})},
    exact = true, ref = where_ref}
add{name = 'where_float_cond', op = 'where', inputs = {input({2}), input({2}), input({2})}, error = 'expected uint8'}

-- cast -------------------------------------------------------------------------------------------------
local function cast_ref(ins, p)
  local to = p.dtype
  return L.map(ins[1], function(x)
    if to == 'float32' then return L.f32(x) end
    if to == 'float64' then return x end
    return L.trunc(x)  -- floats truncate toward zero into integers
  end)
end
local function cast(name, to, dom, more)
  local c = {name = name, op = 'cast', inputs = {input({3, 4}, dom)}, params = {dtype = to}, exact = true,
             out_dtype = function() return to end, ref = cast_ref}
  for k, v in pairs(more or {}) do c[k] = v end
  add(c)
end
cast('cast_to_int32', 'int32', {lo = -5, hi = 5}, {args = {'int32'}, empty = {{{0, 2}}}})
cast('cast_to_int64', 'int64', {lo = -1e6, hi = 1e6})
cast('cast_to_uint8', 'uint8', {lo = 0, hi = 255, ilo = 0, ihi = 127}, {dtypes = ALL})
cast('cast_to_float64', 'float64', {lo = -1e3, hi = 1e3},
     {args = {'float64'}, dtypes = {'float32', 'float64', 'int32', 'int64', 'uint8'}, empty = {{{2, 0}}}})
cast('cast_to_float32', 'float32', {lo = -1e3, hi = 1e3}, {dtypes = {'float64', 'float32', 'int64', 'uint8'}})
cast('cast_threads', 'int64', {lo = -100, hi = 100}, {inputs = {input({200, 200}, {lo = -100, hi = 100})}})

return cases
