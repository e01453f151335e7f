-- Sums and means over an outer or middle dim whose kept stride-1 dim is narrow (K <= 32 columns:
-- a (B, T, K) tensor summed over T): the column path folds whole [rows x K] blocks in lanes
-- (src/kernels/cpu/reduce.cc, narrow_block). Against float64 references summed here element by
-- element, for every K from 1 to 33 (33 takes the general column path), row counts that leave a
-- remainder of rows after the lane steps, every dtype, sum and mean, dims given as lists; the same
-- bits with 1 and 2 threads; and views that must not take the narrow path (a transposed or narrowed
-- input) give the same values.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

local SIZE = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
local function bytes(t)
  local c = t:contiguous()
  return ffi.string(ffi.cast('const char *', c:data()), c:numel() * SIZE[c:dtype()])
end

-- x[b][r][k] = a value exact in every dtype, varied enough that a lost or doubled row shows
local function val(b, r, k, dtype)
  local v = ((b * 131 + r * 17 + k * 7) % 97) - 40
  if dtype == 'uint8' then v = (b * 31 + r * 13 + k * 5) % 7 end
  if dtype == 'float32' or dtype == 'float64' then v = v + 0.25 * (r % 4) end
  return v
end

local function build(B, R, K, dtype)
  local x = mf.empty(B, R, K, {dtype = dtype})
  for b = 1, B do for r = 1, R do for k = 1, K do x[{b, r, k}] = val(b, r, k, dtype) end end end
  return x
end

local function check(x, B, R, K, dtype, what)
  local s, m = x:sum(2), dtype:match('float') and x:mean(2) or nil
  T.eq(s:dim(), 2, what .. ': sum dims')
  for b = 1, B do
    for k = 1, K do
      local ref = 0
      for r = 1, R do ref = ref + val(b, r, k, dtype) end
      local got = s[{b, k}]
      local tol = dtype == 'float32' and 1e-6 * math.max(1, math.abs(ref)) or 0
      if math.abs(got - ref) > tol then
        error(('%s: sum[%d][%d] = %s, want %s'):format(what, b, k, tostring(got), tostring(ref)))
      end
      if m then
        local mg, mr = m[{b, k}], ref / R
        if math.abs(mg - mr) > (dtype == 'float32' and 1e-6 * math.max(1, math.abs(mr)) or 1e-15 * math.abs(mr)) then
          error(('%s: mean[%d][%d] = %s, want %s'):format(what, b, k, tostring(mg), tostring(mr)))
        end
      end
    end
  end
end

T.test('narrow columns: every K from 1 to 33, remainders of rows, every dtype', function()
  for _, dtype in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    for K = 1, 33 do
      for _, R in ipairs{1, 2, 5, 64, 67} do
        local x = build(3, R, K, dtype)
        check(x, 3, R, K, dtype, ('%s B=3 R=%d K=%d'):format(dtype, R, K))
      end
    end
  end
end)

T.test('narrow columns: the same bits with 1 and 2 threads, big enough to split', function()
  local x = mf.randn(512, 300, 3)
  local before = mf.get_num_threads()
  mf.set_num_threads(1)
  local a, am = bytes(x:sum(2)), bytes(x:mean({2}))
  mf.set_num_threads(2)
  local b, bm = bytes(x:sum(2)), bytes(x:mean({2}))
  mf.set_num_threads(before)
  assert(a == b, 'sum over dim 2: 1 and 2 threads differ')
  assert(am == bm, 'mean over dim 2: 1 and 2 threads differ')
end)

T.test('narrow columns: views that leave the narrow path give the same values', function()
  local B, R, K = 4, 37, 5
  local x = build(B, R, K, 'float64')
  -- the same numbers laid out otherwise: (B, K, R) transposed back, and a narrowed wider tensor
  local xt = x:transpose(2, 3):contiguous():transpose(2, 3)
  check(xt, B, R, K, 'float64', 'transposed view')
  local wide = mf.zeros(B, R, K + 3, {dtype = 'float64'})
  wide:narrow(3, 2, K):copy(x)
  check(wide:narrow(3, 2, K), B, R, K, 'float64', 'narrowed view')
  -- a sum over dims 1 and 2 together of a (B, R, K) tensor: one merged reduced dim of stride K
  local s = x:sum({1, 2})
  for k = 1, K do
    local ref = 0
    for b = 1, B do for r = 1, R do ref = ref + val(b, r, k, 'float64') end end
    T.eq(s[k], ref, 'sum over dims 1 and 2, column ' .. k)
  end
end)

T.finish()
