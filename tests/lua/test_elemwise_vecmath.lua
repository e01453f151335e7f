-- The vectorized math of the pointwise ops (src/core/vecmath.h: SLEEF, libmvec or scalar libm, as
-- configured): accuracy in ulps against glibc's float64 functions, IEEE special values (NaN, inf,
-- zero, denormals) in float32 and float64, and results that do not depend on where an element
-- falls (offset, view, tail of a vector, thread count).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'
local mf = require 'moonflow'

ffi.cdef [[
double erf(double); double erfc(double); double log1p(double); double tanh(double);
const char *mf_vecmath_backend(void);
]]
local C = ffi.C
local BACKEND = ffi.string(C.mf_vecmath_backend())  -- "sleef avx2 (8 x float32)", "mvec ...", "none ..."
local SLEEF = BACKEND:match('^sleef') ~= nil
local nan, inf = 0 / 0, math.huge
local bits32 = ffi.new('union { float f; int32_t i; }')
local bits64 = ffi.new('union { double f; int64_t i; }')

-- float32 rounding of a Lua number
local f32buf = ffi.new('float[1]')
local function f32(x) f32buf[0] = x return f32buf[0] end
-- position of a float on the number line in units of its dtype's ulp (monotonic, -0 = +0)
local function ord32(x)
  bits32.f = x
  local i = bits32.i
  return i < 0 and -(i + 2 ^ 31) or i
end
local MIN64 = -9223372036854775807LL - 1
local function ord64(x)  -- an int64 cdata: the distance is taken before it becomes a Lua number
  bits64.f = x
  local i = bits64.i
  if i < 0 then i = MIN64 - i end
  return i
end
local function ulps(got, want, dtype)
  if got == want then return 0 end
  if dtype == 'float32' then return math.abs(ord32(got) - ord32(f32(want))) end
  local d = ord64(got) - ord64(want)
  return math.abs(tonumber(d))
end

local function values(t) return t:contiguous():reshape(t:numel()):totable() end

-- accuracy ----------------------------------------------------------------------------------------
-- Reference: glibc's float64 functions (correctly rounded or within 1 ulp in float64, so exact for
-- a float32 result). Bounds, measured on a grid of 6007 points: with SLEEF, its promise (u10: 1
-- ulp; float64 results against another library's float64 value may differ by 2); with libmvec or
-- scalar libm, glibc's documented bound for libmvec, 4 ulps (seen: 4 for erff, 3 for float64 exp,
-- sin, cos and tanh; scalar libm: at most 2).
local s2 = math.sqrt(0.5)
local unary = {
  -- op, reference, lo, hi, max ulps {float32, float64} with SLEEF, {float32, float64} otherwise
  {'exp', math.exp, -87, 88, {1, 2}, {4, 4}},
  {'log', math.log, 1e-30, 1e30, {1, 2}, {4, 4}},
  {'log1p', function(x) return C.log1p(x) end, -0.99, 1e6, {1, 2}, {4, 4}},
  {'tanh', function(x) return C.tanh(x) end, -9, 9, {1, 2}, {4, 4}},
  {'erf', function(x) return C.erf(x) end, -4, 4, {1, 2}, {4, 4}},
  {'sin', math.sin, -100, 100, {1, 2}, {4, 4}},
  {'cos', math.cos, -100, 100, {1, 2}, {4, 4}},
  {'sqrt', math.sqrt, 0, 1e6, {0, 0}, {0, 0}},  -- the exact instruction, whatever the library
  {'rsqrt', function(x) return 1 / math.sqrt(x) end, 1e-6, 1e6, {1, 1}, {1, 1}},
  -- a composition: exp(-|x|), then one division (each rounded)
  {'sigmoid', function(x) return 1 / (1 + math.exp(-x)) end, -80, 80, {2, 2}, {4, 4}},
}
local N = 6007  -- not a multiple of any vector width
local function grid(lo, hi, dtype)
  local xs = {}
  for i = 0, N - 1 do
    local x = lo + (hi - lo) * i / (N - 1)
    xs[#xs + 1] = dtype == 'float32' and f32(x) or x
  end
  return xs
end

for _, u in ipairs(unary) do
  local op, ref, lo, hi = u[1], u[2], u[3], u[4]
  for k, dtype in ipairs({'float32', 'float64'}) do
    local bound = (SLEEF and u[5] or u[6])[k]
    T.test(('%s %s within %d ulps of float64 glibc (%s)'):format(op, dtype, bound, BACKEND), function()
      local xs = grid(lo, hi, dtype)
      local ys = values(mf[op](mf.tensor(xs, dtype)))
      local worst, at = 0, nil
      for i = 1, #xs do
        local e = ulps(ys[i], ref(xs[i]), dtype)
        if e > worst then worst, at = e, xs[i] end
      end
      if worst > bound then
        error(('%s(%.9g): %d ulps from the reference (%.17g, want %.17g)'):format(op, at, worst,
          values(mf[op](mf.tensor({at}, dtype)))[1], ref(at)))
      end
    end)
  end
end

-- gelu: 0.5 x erfc(-x / sqrt 2); the product x / sqrt 2 is rounded before erfc, whose slope turns
-- that half ulp into up to 2 x^2 ulps in the tail, so the bound is relative, not in ulps
T.test('gelu float32 and float64 against float64 glibc erfc', function()
  for _, dtype in ipairs({'float32', 'float64'}) do
    local xs = grid(-9, 6, dtype)
    local ys = values(mf.gelu(mf.tensor(xs, dtype)))
    for i = 1, #xs do
      local x = xs[i]
      local want = 0.5 * x * C.erfc(-x * s2)
      local tol = (dtype == 'float32' and 2 ^ -23 or 2 ^ -52) * (4 + 2 * x * x)
      T.near(ys[i], want, tol, ('gelu(%.9g) %s'):format(x, dtype))
    end
  end
end)

T.test('pow float32 and float64 within 1 / 2 ulps of float64 glibc', function()
  for k, dtype in ipairs({'float32', 'float64'}) do
    local xs, es = {}, {}
    for i = 0, 2999 do
      local x, e = 0.01 + 20 * i / 2999, -6 + 12 * ((i * 7919) % 3000) / 2999
      xs[#xs + 1] = dtype == 'float32' and f32(x) or x
      es[#es + 1] = dtype == 'float32' and f32(e) or e
    end
    local ys = values(mf.pow(mf.tensor(xs, dtype), mf.tensor(es, dtype)))
    for i = 1, #xs do
      local e = ulps(ys[i], xs[i] ^ es[i], dtype)
      if e > k then error(('pow(%.9g, %.9g) %s: %d ulps'):format(xs[i], es[i], dtype, e)) end
    end
  end
end)

-- special values ------------------------------------------------------------------------------------
-- op, inputs, wanted outputs (both dtypes; tiny: a float32 denormal)
local tiny = f32(1e-40)
local special = {
  {'exp', {-inf, inf, nan, 1000, -1000, 0, -0.0}, {0, inf, nan, inf, 0, 1, 1}},
  {'log', {0, -0.0, -1, -inf, inf, nan, 1}, {-inf, -inf, nan, nan, inf, nan, 0}},
  {'log1p', {-1, -2, inf, nan, 0}, {-inf, nan, inf, nan, 0}},
  {'sqrt', {0, -1, inf, nan, -inf}, {0, nan, inf, nan, nan}},
  {'rsqrt', {0, inf, nan, -1}, {inf, 0, nan, nan}},
  {'tanh', {-inf, inf, nan, 0, 50, -50}, {-1, 1, nan, 0, 1, -1}},
  {'sigmoid', {-inf, inf, nan, 0, -1000, 1000}, {0, 1, nan, 0.5, 0, 1}},
  {'erf', {-inf, inf, nan, 0, 30, -30}, {-1, 1, nan, 0, 1, -1}},
  {'gelu', {inf, nan, 0, 30, -0.0}, {inf, nan, 0, 30, -0.0}},
  {'sin', {inf, -inf, nan, 0}, {nan, nan, nan, 0}},
  {'cos', {inf, -inf, nan, 0}, {nan, nan, nan, 1}},
}
for _, s in ipairs(special) do
  for _, dtype in ipairs({'float32', 'float64'}) do
    T.test(('%s %s special values'):format(s[1], dtype), function()
      local got = values(mf[s[1]](mf.tensor(s[2], dtype)))
      for i, w in ipairs(s[3]) do
        local g = got[i]
        T.eq(type(g), 'number', ('%s(%s) is a Lua number (a NaN LuaJIT can read)'):format(s[1], s[2][i]))
        if not ((w ~= w and g ~= g) or g == w) then
          error(('%s(%s) %s: got %s, want %s'):format(s[1], s[2][i], dtype, tostring(g), tostring(w)))
        end
      end
    end)
  end
end

T.test('pow special values (C99 Annex F)', function()
  local x = {0, 0, -8, 2, nan, 1, -2, -inf, inf, 0.5, 2, -1}
  local e = {-1, 2, 1 / 3, nan, 0, nan, 3, 3, -1, inf, -inf, inf}
  local w = {inf, 0, nan, nan, 1, 1, -8, -inf, 0, 0, 0, 1}
  for _, dtype in ipairs({'float32', 'float64'}) do
    local got = values(mf.pow(mf.tensor(x, dtype), mf.tensor(e, dtype)))
    for i = 1, #w do
      local g = got[i]
      T.eq(type(g), 'number', 'pow result is a Lua number')
      if not ((w[i] ~= w[i] and g ~= g) or g == w[i]) then
        error(('pow(%s, %s) %s: got %s, want %s'):format(x[i], e[i], dtype, tostring(g), tostring(w[i])))
      end
    end
  end
end)

T.test('float32 denormal inputs and results', function()
  local x = mf.tensor({tiny, -tiny, -100, 1e-38}, 'float32')
  local e = values(mf.exp(x))
  T.eq(e[1], 1, 'exp(denormal)')
  T.near(e[3], f32(math.exp(-100)), 1e-6, 'exp(-100): a denormal result')
  T.eq(values(mf.tanh(x))[1], tiny, 'tanh(denormal)')
  T.eq(values(mf.sin(x))[2], -tiny, 'sin(-denormal)')
  T.near(values(mf.log(x))[1], math.log(tiny), 1e-6, 'log(denormal)')
  T.near(values(mf.erf(x))[1], f32(tiny * 2 / math.sqrt(math.pi)), 1e-5, 'erf(denormal)')
end)

-- position independence -----------------------------------------------------------------------------
-- The same element gives the same bits wherever it sits: at any offset (the vector tail), in a
-- strided view, as one element, and with 1 or 2 threads.
local ops = {'exp', 'log', 'log1p', 'tanh', 'sigmoid', 'erf', 'gelu', 'sin', 'cos'}
for _, dtype in ipairs({'float32', 'float64'}) do
  T.test('results independent of position, view and threads (' .. dtype .. ')', function()
    local n = 1000
    local xs = {}
    for i = 1, n do xs[i] = 0.05 + 3 * ((i * 37) % n) / n end
    local x = mf.tensor(xs, dtype)
    for _, op in ipairs(ops) do
      local full = values(mf[op](x))
      for off = 1, 19, 3 do
        for _, len in ipairs({1, 5, 17, 33}) do
          local part = values(mf[op](x:narrow(1, off, len)))
          for i = 1, len do T.eq(part[i], full[off + i - 1], ('%s at offset %d of %d'):format(op, i, off)) end
        end
      end
      local m = x:reshape(40, 25)
      local tv = values(mf[op](m:t()))  -- strided input
      local tc = values(mf[op](m:t():contiguous()))
      for i = 1, n do T.eq(tv[i], tc[i], op .. ' on a transposed view') end
      local before = mf.get_num_threads and mf.get_num_threads() or 2
      mf.set_num_threads(1)
      local one = values(mf[op](x))
      mf.set_num_threads(2)
      local two = values(mf[op](x))
      mf.set_num_threads(before)
      for i = 1, n do
        T.eq(one[i], full[i], op .. ' with 1 thread')
        T.eq(two[i], full[i], op .. ' with 2 threads')
      end
    end
    local y = mf.tensor({0.5, 2, 3, 0.25, 7}, dtype)
    local e = mf.tensor({1.5, -2, 0.5, 3, 0.1}, dtype)
    local pw = values(mf.pow(y, e))
    for i = 1, 5 do
      T.eq(values(mf.pow(y:narrow(1, i, 1), e:narrow(1, i, 1)))[1], pw[i], 'pow of one element')
    end
    local ps = values(mf.pow(y, 1.5))  -- a scalar exponent: the broadcast path
    local pv = values(mf.pow(y, mf.tensor({1.5, 1.5, 1.5, 1.5, 1.5}, dtype)))
    for i = 1, 5 do T.eq(ps[i], pv[i], 'pow with a scalar exponent') end
  end)
end

-- gelu, log, log1p, sigmoid, tanh, sin, cos and erf name a cost (src/core/pointwise.h) that splits
-- them between 2 threads from 4096-6554 elements, not 32768: at 8000 the halves meet at element
-- 4000, inside a 256-element block of a 1-thread run (gelu's), and each element keeps the bits it
-- has alone (gelu: and against float64 erfc within the bound above)
T.test('ops split between threads early: the same bits as with 1 thread and as one element', function()
  for _, op in ipairs({'gelu', 'log', 'log1p', 'sigmoid', 'tanh', 'sin', 'cos', 'erf'}) do
    for _, dtype in ipairs({'float32', 'float64'}) do
      local n, xs = 8000, {}
      local lo = ({log = 0.01, log1p = -0.99})[op] or -9  -- in each op's domain: NaN never equals NaN
      for i = 1, n do xs[i] = lo + 15 * ((i * 7919) % n) / n end
      local x = mf.tensor(xs, dtype)
      local before = mf.get_num_threads()
      mf.set_num_threads(1)
      local one = values(mf[op](x))
      mf.set_num_threads(2)
      local two = values(mf[op](x))
      mf.set_num_threads(before)
      for i = 1, n do T.eq(two[i], one[i], ('%s %s element %d with 2 threads'):format(op, dtype, i)) end
      for _, i in ipairs({1, 3999, 4000, 4001, 4002, 7999, 8000}) do
        local alone = values(mf[op](x:narrow(1, i, 1)))[1]
        T.eq(two[i], alone, ('%s %s element %d alone'):format(op, dtype, i))
        if op == 'gelu' then
          local v = values(x:narrow(1, i, 1))[1]
          T.near(two[i], 0.5 * v * C.erfc(-v * s2), (dtype == 'float32' and 2 ^ -23 or 2 ^ -52) * (4 + 2 * v * v),
            ('gelu(%.9g) %s'):format(v, dtype))
        end
      end
    end
  end
end)

-- relu_backward's routine (vecmath.cc: x loaded whole and and-ed with the mask of y > 0 or NaN):
-- bit for bit the functor's y <= 0 ? +0 : g (a -0 gradient passes as -0, +-0 in y gives +0, NaN in
-- y passes g), over whole vectors and tails, at offsets, through the strided and broadcast path
local function same_bits(got, want, dtype)
  if dtype == 'float32' then
    bits32.f = got
    local a = bits32.i
    bits32.f = want
    return a == bits32.i
  end
  bits64.f = got
  local a = bits64.i
  bits64.f = want
  return a == bits64.i
end
T.test('relu_backward: the functor\'s bits, -0 and NaN included', function()
  local G, Y = {1.5, -0.0, inf, -2, nan, 0.0, -inf, 3}, {0.0, -0.0, 1, -1, nan, inf, -inf, 0.5, -0.5}
  local gs, ys = {}, {}
  for i = 1, 70 do gs[i], ys[i] = G[(i - 1) % #G + 1], Y[(i - 1) % #Y + 1] end
  local function want(g, y) return y <= 0 and 0 or g end
  for _, dtype in ipairs({'float32', 'float64'}) do
    local g, y = mf.tensor(gs, dtype), mf.tensor(ys, dtype)
    local check = function(got, off, what)
      for i = 1, #got do
        local w = want(gs[off + i], ys[off + i])
        T.eq(same_bits(got[i], w, dtype), true, ('relu_backward %s %s element %d: %s, want %s'):format(dtype, what, off + i,
          tostring(got[i]), tostring(w)))
      end
    end
    check(values(mf.relu_backward(g, y)), 0, 'whole')
    for off = 1, 17, 4 do check(values(mf.relu_backward(g:narrow(1, off, 40), y:narrow(1, off, 40))), off - 1, 'narrowed') end
    local gt = g:reshape(7, 10):t()  -- strided operands: the chunked path
    local yt = y:reshape(7, 10):t()
    local st = values(mf.relu_backward(gt, yt):t():contiguous())
    check(st, 0, 'transposed')
    local b = values(mf.relu_backward(g, mf.tensor({-0.0}, dtype)))  -- y broadcast: every element +0
    for i = 1, 70 do T.eq(same_bits(b[i], 0, dtype), true, 'relu_backward with y = -0 broadcast gives +0') end
  end
end)

T.finish()
