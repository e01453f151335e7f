-- Dense fills (fill, zeros, ones, full, eye, the *_like factories) write spans of 4 KiB or more by
-- memset for values whose bytes are all alike, spans of 1 MiB or more by rep stosl / stosq for the
-- other 4- and 8-byte values (src/kernels/cpu/elemwise.cc): every element of every dtype, on both
-- sides of the 4 KiB and 1 MiB thresholds and of each thread's share, holds the value's exact bits, and the elements just
-- outside a filled span keep theirs. The references are the values themselves, read back one by
-- one through the element pointer.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'

local DTYPES = {'float32', 'float64', 'int32', 'int64', 'uint8'}
-- element counts around the thresholds for each element size (4096 bytes = 1024 float32; 1 MiB),
-- odd lengths that leave a remainder for rep stosq, and spans large enough to be split between threads
local function counts(esize)
  local k, m = 4096 / esize, 2 ^ 20 / esize
  return {1, 7, k - 1, k, k + 1, 2 * k + 3, 100003, m - 1, m, m + 1, 2 * m + 5}
end
local ESIZE = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
-- values per dtype: zero, one, values whose bytes differ (the stos path), -0.0 (one byte set), NaN
local VALUES = {
  float32 = {0, 1, 2.5, -3.75, -0.0, 0 / 0}, float64 = {0, 1, 2.5, -3.75, -0.0, 0 / 0, 1e300},
  int32 = {0, 1, -1, 16909060, -7}, int64 = {0, 1, -1, 4503599627383841, -7}, uint8 = {0, 1, 255, 37},
}

-- the same number, bit for bit as stored (NaN matches NaN; -0.0 does not match 0.0)
local function same(dtype, got, want)
  if want ~= want then return got ~= got end
  if want == 0 and (dtype == 'float32' or dtype == 'float64') then return got == 0 and 1 / got == 1 / want end
  return got == want
end

local function check_span(t, dtype, first, n, want, what)
  local p = ffi.cast(mf._PTR[mf._dtype_code(dtype)], t:data())
  for i = first, first + n - 1 do
    local v = tonumber(p[i])
    if not same(dtype, v, want) then
      error(('%s: element %d is %s, want %s'):format(what, i + 1, tostring(v), tostring(want)), 2)
    end
  end
end

for _, threads in ipairs{1, 2} do
  T.test(('fill, full and t:fill write every element, %d thread(s)'):format(threads), function()
    local old = mf.get_num_threads()
    mf.set_num_threads(threads)
    for _, dtype in ipairs(DTYPES) do
      for _, n in ipairs(counts(ESIZE[dtype])) do
        for _, v in ipairs(VALUES[dtype]) do
          local what = ('%s, %d elements, value %s'):format(dtype, n, tostring(v))
          check_span(mf.full({n}, v, {dtype = dtype}), dtype, 0, n, v, 'full: ' .. what)
          local t = mf.empty(n, {dtype = dtype})
          t:fill(v)
          check_span(t, dtype, 0, n, v, 't:fill: ' .. what)
        end
        check_span(mf.zeros(n, {dtype = dtype}), dtype, 0, n, 0, ('zeros: %s, %d elements'):format(dtype, n))
        check_span(mf.ones(n, {dtype = dtype}), dtype, 0, n, 1, ('ones: %s, %d elements'):format(dtype, n))
      end
    end
    mf.set_num_threads(old)
  end)
end

T.test('a filled span inside a tensor leaves its neighbours alone', function()
  for _, dtype in ipairs(DTYPES) do
    local k = 4096 / ESIZE[dtype]
    for _, n in ipairs{k - 1, k, 3 * k + 1, 2 ^ 20 / ESIZE[dtype] + 1} do
      for _, first in ipairs{1, 3} do  -- 0-based offset of the span: elements before it stay
        local base = mf.full({n + first + 2}, 7, {dtype = dtype})
        local span = base:narrow(1, first + 1, n)
        span:fill(VALUES[dtype][3])
        local what = ('%s, %d elements at offset %d'):format(dtype, n, first)
        check_span(base, dtype, 0, first, 7, 'before the span: ' .. what)
        check_span(base, dtype, first, n, VALUES[dtype][3], 'the span: ' .. what)
        check_span(base, dtype, first + n, 2, 7, 'after the span: ' .. what)
      end
    end
  end
end)

T.test('zeros_like, ones_like, full_like and eye at the string-store sizes', function()
  local x = mf.randn(64, 100)  -- 25600 bytes
  check_span(mf.zeros_like(x), 'float32', 0, 6400, 0, 'zeros_like')
  check_span(mf.ones_like(x), 'float32', 0, 6400, 1, 'ones_like')
  check_span(mf.full_like(x, -1.25), 'float32', 0, 6400, -1.25, 'full_like')
  local e = mf.eye(70, 90, {dtype = 'float64'})  -- zeroed by the string path, then the diagonal
  local p = ffi.cast('double *', e:data())
  for i = 0, 69 do
    for j = 0, 89 do
      local want = i == j and 1 or 0
      if p[i * 90 + j] ~= want then
        error(('eye: (%d, %d) is %g, want %g'):format(i + 1, j + 1, p[i * 90 + j], want))
      end
    end
  end
end)

T.finish()
