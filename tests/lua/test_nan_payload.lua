-- NaNs of every bit pattern read back as NaN. LuaJIT keeps a double's bits in its values, and a NaN
-- with the sign bit and a large payload is one of its tagged values: 0xffffffffe0000000 (what CUDA's
-- double erf returns for a NaN, and any float32 NaN 0xffffffff widened to double) read as nil through
-- item(), totable() and printing, and other payloads would read as pointers. Each pattern below is
-- written through a uint32 view of the tensor's memory, so nothing in moonflow makes it, and every
-- read path must give a Lua number that is NaN.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

-- {high word, low word} of float64 NaNs, and float32 NaN words: the tagged-looking ones first
local F64_NANS = {{0xffffffff, 0xe0000000}, {0xfffffffb, 0x00001000}, {0xfffffff9, 0x12345678},
                  {0xfff80000, 0}, {0x7ff80000, 0}, {0x7fffffff, 0xe0000000}, {0xfff00000, 1}}
local F32_NANS = {0xffffffff, 0xffc00000, 0x7fc00000, 0x7fffffff, 0xff800001}

local function is_nan(v) return type(v) == 'number' and v ~= v end

-- a tensor of n elements whose element k (0-based) holds the bits set(words, k)
local function with_bits(dtype, list)
  local t = mf.zeros({#list + 1}, {dtype = dtype})  -- the last element stays 0: a plain neighbour
  local w = ffi.cast('uint32_t *', t:data())
  for k, bits in ipairs(list) do
    if dtype == 'float64' then w[(k - 1) * 2], w[(k - 1) * 2 + 1] = bits[2], bits[1]
    else w[k - 1] = bits end
  end
  return t
end

for _, case in ipairs{{'float64', F64_NANS}, {'float32', F32_NANS}} do
  local dtype, list = case[1], case[2]
  T.test(dtype .. ': item, get, t[i], totable and apply read every NaN pattern as NaN', function()
    local t = with_bits(dtype, list)
    local tab = t:totable()
    for k = 1, #list do
      T.eq(is_nan(t[k]), true, ('%s NaN %d: t[%d]'):format(dtype, k, k))
      T.eq(is_nan(t:narrow(1, k, 1):item()), true, ('%s NaN %d: narrow(1, %d, 1):item()'):format(dtype, k, k))
      T.eq(is_nan(t:get(k)), true, ('%s NaN %d: t:get(%d)'):format(dtype, k, k))
      T.eq(is_nan(tab[k]), true, ('%s NaN %d: totable()[%d] (a %s)'):format(dtype, k, k, type(tab[k])))
    end
    T.eq(tab[#list + 1], 0, dtype .. ': the zero after them')
    local seen = 0
    t:clone():apply(function(v) if is_nan(v) then seen = seen + 1 end end)
    T.eq(seen, #list, dtype .. ': apply saw each NaN as NaN')
  end)
  T.test(dtype .. ': printing shows nan for every pattern', function()
    local s = tostring(with_bits(dtype, list))
    local n = 0
    for _ in s:gmatch('nan') do n = n + 1 end
    T.eq(n, #list, dtype .. ': "nan" in ' .. s)
  end)
  T.test(dtype .. ': a reduction of a tagged-looking NaN is NaN through item()', function()
    local t = with_bits(dtype, {list[1]})
    T.eq(is_nan(t:sum():item()), true, dtype .. ': sum():item()')
    T.eq(is_nan(t:max():item()), true, dtype .. ': max():item()')
  end)
end

T.test('a float32 NaN widened to float64 by double() reads as NaN', function()
  local t = with_bits('float32', {0xffffffff}):double()
  T.eq(is_nan(t:get(1)), true, 'double() of float32 0xffffffff')
end)

T.test('finite values and infinities are read unchanged', function()
  local t = mf.tensor({1.5, -0.0, math.huge, -math.huge, 5e-324, -1.7976931348623157e308}, {dtype = 'float64'})
  local want = {1.5, -0.0, math.huge, -math.huge, 5e-324, -1.7976931348623157e308}
  for k = 1, #want do T.eq(t[k], want[k], 'float64 element ' .. k) end
  T.eq(1 / t:get(2), -math.huge, 'the sign of -0.0 is kept')
  local f = mf.tensor({1.5, math.huge, -math.huge, 1e-45}, {dtype = 'float32'})
  T.eq(f[2], math.huge, 'float32 inf')
  T.eq(f[3], -math.huge, 'float32 -inf')
  T.eq(f:get(4) > 0, true, 'float32 denormal')
end)

T.finish()
