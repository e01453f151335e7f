-- Pointwise results of 16 MiB and more into a fresh output go out by streaming stores (src/kernels/
-- cpu/stream_out.h): unary, binary, broadcast-row, scalar and fused forms, in float32, float64 and
-- int32, at sizes whose rows and ends fall mid-line, at 1 and 2 threads. References are computed in
-- Lua (float64, every value exact in the tensor's dtype) from the inputs' own values through raw
-- pointers, and every element is checked, so a head, chunk or tail left unwritten fails.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local K = mf.kernels

local N32 = 4 * 1024 * 1024 + 37  -- float32 / int32: 16 MiB + 148 bytes
local N64 = 2 * 1024 * 1024 + 37  -- float64: 16 MiB + 296 bytes

-- a contiguous tensor of shape whose element i (0-based, row-major) is f(i)
local function filled(shape, dtype, f)
  local t = mf.empty(shape, {dtype = dtype})
  local p, n = t:data(), t:numel()
  for i = 0, n - 1 do p[i] = f(i) end
  return t
end
-- multiples of 1/64 in [-16, 16): sums, differences and halves of two are exact in float32
local function va(i) return ((i * 7919) % 2048 - 1024) / 64 end
local function vb(i) return ((i * 104729 + 3) % 2039 - 1019) / 64 end

-- every element of t (contiguous) equals want(i); stops at the first that does not
local function check(t, want, what)
  T.eq(t:is_contiguous(), true, what .. ': contiguous')
  local p, n = t:data(), t:numel()
  for i = 0, n - 1 do
    local w = want(i)
    if tonumber(p[i]) ~= w then T.eq(tonumber(p[i]), w, what .. ': element ' .. i .. ' of ' .. n) end
  end
end

local function threads(f)
  local old = mf.get_num_threads()
  for _, nt in ipairs({1, 2}) do
    mf.set_num_threads(nt)
    local ok, err = pcall(f, ' (' .. nt .. ' threads)')
    if not ok then
      mf.set_num_threads(old)
      error(err, 0)
    end
  end
  mf.set_num_threads(old)
end

T.test('unary, binary and scalar forms of 16 MiB and more, float32, odd size', function()
  local x = filled({N32}, 'float32', va)
  local y = filled({N32}, 'float32', vb)
  threads(function(th)
    check(mf.abs(x), function(i) return math.abs(va(i)) end, 'abs' .. th)
    check(mf.relu(x), function(i) return math.max(va(i), 0) end, 'relu' .. th)
    check(mf.clamp(x, -3, 3), function(i) return math.min(math.max(va(i), -3), 3) end, 'clamp' .. th)
    check(x + y, function(i) return va(i) + vb(i) end, 'add' .. th)
    check(mf.maximum(x, y), function(i) return math.max(va(i), vb(i)) end, 'maximum' .. th)
    check(x + 2, function(i) return va(i) + 2 end, 'add_scalar' .. th)
    check(x * 0.5, function(i) return va(i) * 0.5 end, 'mul_scalar' .. th)
  end)
end)

T.test('a row broadcast over 16 MiB and more, rows starting mid-line; a strided input', function()
  local r, c = 2049, 2053  -- 8212-byte rows
  local m = filled({r, c}, 'float32', va)
  local row = filled({1, c}, 'float32', vb)
  local mt = filled({c, r}, 'float32', va):t()  -- r x c, column-major
  threads(function(th)
    check(m + row, function(i) return va(i) + vb(i % c) end, 'add_row' .. th)
    check(row - m, function(i) return vb(i % c) - va(i) end, 'sub_row' .. th)
    check(mf.neg(mt), function(i) return -va((i % c) * r + math.floor(i / c)) end, 'neg of a transpose' .. th)
  end)
end)

T.test('float64 and int32 outputs of 16 MiB and more; integer division by zero still caught', function()
  local x = filled({N64}, 'float64', va)
  local y = filled({N64}, 'float64', vb)
  local xi = filled({N32}, 'int32', function(i) return (i * 7919) % 20011 - 10005 end)
  local yi = filled({N32}, 'int32', function(i) return (i * 31) % 97 + 1 end)
  threads(function(th)
    check(mf.abs(x), function(i) return math.abs(va(i)) end, 'abs float64' .. th)
    check(x - y, function(i) return va(i) - vb(i) end, 'sub float64' .. th)
    check(mf.square(x), function(i) return va(i) * va(i) end, 'square float64' .. th)
    check(xi * yi, function(i) return ((i * 7919) % 20011 - 10005) * ((i * 31) % 97 + 1) end, 'mul int32' .. th)
    local z = filled({N32}, 'int32', function(i) return i == N32 - 3 and 0 or 1 end)
    T.errors(function() return xi / z end, 'div', 'integer division by zero')
  end)
end)

T.test('fused programs into a fresh 16 MiB output', function()
  local x = filled({N32}, 'float32', va)
  local y = filled({N32}, 'float32', vb)
  local prog = K.fused_program(2, {K.B.mul, 0, 1, K.B.add, 2, 0})  -- x * y + x
  threads(function(th)
    local o = mf.empty({N32})
    K.fused(prog, o, 2, K.tensor_list{x, y})
    check(o, function(i) return va(i) * vb(i) + va(i) end, 'fused x * y + x' .. th)
  end)
end)

T.test('out= written twice and in-place ops (plain stores) give the same values', function()
  local x = filled({N32}, 'float32', va)
  local y = filled({N32}, 'float32', vb)
  local o = mf.empty({N32})
  threads(function(th)
    mf.add(x, y, {out = o})  -- the first write of a fresh out= tensor streams, the second does not
    check(o, function(i) return va(i) + vb(i) end, 'add into out=' .. th)
    mf.abs(x, {out = o})
    check(o, function(i) return math.abs(va(i)) end, 'abs into out= written before' .. th)
    local z = mf.empty({N32})  -- its own input: an in-place op keeps plain stores
    z:copy(x)
    K.unary(K.U.neg, z, z, 0, 0)
    check(z, function(i) return -va(i) end, 'neg in place' .. th)
  end)
end)

T.test('the same bits at 1 and 2 threads: streamed sqrt, gelu (plain), add_row', function()
  local x = filled({N32}, 'float32', function(i) return (i % 4093 + 1) / 17 end)
  local row = filled({1, 2053}, 'float32', vb)
  local m = filled({2049, 2053}, 'float32', va)
  local s = T.same_bits('sqrt', function() return mf.sqrt(x) end)
  local p, q = s:data(), x:data()
  for i = 0, N32 - 1, 997 do T.near(p[i], math.sqrt(q[i]), 4e-7 * math.sqrt(q[i]), 'sqrt ' .. i) end
  T.eq(tonumber(p[N32 - 1]), tonumber(mf.sqrt(x:narrow(1, N32, 1)):item()), 'sqrt: last element as alone')
  T.same_bits('gelu', function() return mf.gelu(x) end)
  T.same_bits('add_row', function() return m + row end)
end)

T.finish()
