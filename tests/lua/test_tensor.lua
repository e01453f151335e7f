-- Eager tensor API against hand-computed values: construction, indexing, views sharing storage,
-- operators, dtypes, printing, seeding, and the eager closure cache.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'
local C = ffi.C

T.test('construction and sizes', function()
  local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(a:dim(), 2); T.eq(a:numel(), 6); T.eq(a:dtype(), 'float32'); T.eq(a:device(), 'cpu')
  T.eq(a:size(1), 2); T.eq(a:size(2), 3); T.eq(a:size(-1), 3)
  T.eq(#a:size(), 2); T.eq(a:size()[2], 3); T.eq(#a, 2)
  T.eq(a:stride(1), 3); T.eq(a:stride(2), 1)
  T.eq(mf.tensor(5):dim(), 0); T.eq(mf.tensor(5):item(), 5)
  T.eq(mf.tensor({1, 2}, 'int64'):dtype(), 'int64')
  T.eq(mf.tensor({1, 2}, {dtype = 'float64'}):dtype(), 'float64')
  T.eq(mf.tensor{}:numel(), 0)
end)

T.test('element access, 1-based and negative', function()
  local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(a[1][2], 2); T.eq(a[2][3], 6); T.eq(a:get(2, 1), 4); T.eq(a:get(-1, -1), 6)
  a:set(1, 1, 10); T.eq(a:get(1, 1), 10)
  a[2][2] = 50; T.eq(a:get(2, 2), 50)
  local v = mf.tensor{7, 8, 9}
  T.eq(v[3], 9); v[1] = 70; T.eq(v:get(1), 70)
  a[1] = 0
  T.tensor_eq(a, {{0, 0, 0}, {4, 50, 6}})
end)

-- four and more indices or sizes go through mf._pack_args (tensor.lua), not {...}: the values
-- against hand-computed ones, the count with nils and past eight
T.test('element access and sizes with many arguments', function()
  local rows = {}
  for i = 1, 2 do
    rows[i] = {}
    for j = 1, 3 do
      rows[i][j] = {}
      for k = 1, 2 do rows[i][j][k] = {1000 * i + 100 * j + 10 * k + 1, 1000 * i + 100 * j + 10 * k + 2} end
    end
  end
  local y = mf.tensor(rows)
  T.eq(y:get(2, 3, 1, 2), 2312); T.eq(y:get(1, 2, 2, 1), 1221); T.eq(y:get(-1, -1, -1, -1), 2322)
  y:set(1, 3, 2, 1, -5)
  T.eq(y:get(1, 3, 2, 1), -5); T.eq(y:get(1, 3, 2, 2), 1322)
  T.errors(function() return y:get(1, nil, 1, 1) end, 'get: index 2 is a nil; expected a number')
  T.errors(function() return y:set(1, 1, nil, 1, 0) end, 'set: index 3 is a nil; expected a number')
  T.errors(function() return y:get(1, 1, 1, 1, 1, 1, 1, 1, 1, 1) end, 'get: 10 indices given for a 4-dim tensor')
  T.errors(function() return y:get(1, 1, 1) end, 'get: 3 indices given for a 4-dim tensor')
  local z = mf.zeros(2, 1, 3, 1, 2)
  T.eq(z:dim(), 5); T.eq(z:size(3), 3); T.eq(z:size(5), 2); T.eq(z:sum():item(), 0)
  local o = mf.ones(1, 1, 1, 1, 1, 1, 1, 2)
  T.eq(o:dim(), 8); T.eq(o:sum():item(), 2)
  T.errors(function() return mf.zeros(1, 1, 1, 1, 1, 1, 1, 1, 2) end, 'zeros: 9 dims requested; at most 8 are supported')
  T.eq(mf.randn(24):reshape(2, 3, 2, 2):size(2), 3)
end)

T.test('views share storage', function()
  local a = mf.zeros(3, 4)
  local n = a:narrow(1, 2, 2); n:set(1, 1, 7); T.eq(a:get(2, 1), 7)
  local s = a:select(2, 3); s:set(3, 9); T.eq(a:get(3, 3), 9)
  local t = a:t(); t:set(4, 1, 5); T.eq(a:get(1, 4), 5)
  T.eq(t:is_contiguous(), false); T.eq(a:is_contiguous(), true)
  local r = a:reshape(12); r:set(12, 1); T.eq(a:get(3, 4), 1)
  local r2 = a:reshape(2, -1); T.eq(r2:size(2), 6)
  local p = a:permute(2, 1); T.eq(p:size(1), 4); T.eq(p:get(3, 3), 9)
  local e = mf.tensor{{1}, {2}}:expand(2, 3); T.tensor_eq(e, {{1, 1, 1}, {2, 2, 2}}); T.eq(e:stride(2), 0)
  local u = a:unsqueeze(1); T.eq(u:dim(), 3); T.eq(u:squeeze():dim(), 2)
  local sl = mf.arange(10):slice(1, 2, 8, 3); T.tensor_eq(sl, {1, 4, 7})
  -- three handles on one storage: the refcount says so, and dropping the views releases them
  local base = mf.ones(4)
  local v1, v2 = base:narrow(1, 1, 2), base:reshape(2, 2)
  T.eq(C.mf_storage_refcount(base), 3)
  v1, v2 = nil, nil
  collectgarbage(); collectgarbage()
  T.eq(C.mf_storage_refcount(base), 1)
  -- a non-contiguous reshape copies: writes to it do not reach the source
  local tt = mf.tensor{{1, 2}, {3, 4}}:t()
  local flat = tt:reshape(4)
  T.tensor_eq(flat, {1, 3, 2, 4})
  T.errors(function() tt:view(4) end, 'view', 'not contiguous')
  local c = tt:contiguous(); T.eq(c:is_contiguous(), true); T.tensor_eq(c, {{1, 3}, {2, 4}})
end)

T.test('operators and scalars', function()
  local a, b = mf.tensor{{1, 2}, {3, 4}}, mf.tensor{10, 20}
  T.tensor_eq(a + b, {{11, 22}, {13, 24}})
  T.tensor_eq(a - 1, {{0, 1}, {2, 3}})
  T.tensor_eq(2 * a, {{2, 4}, {6, 8}})
  T.tensor_eq(1 / mf.tensor{2, 4}, {0.5, 0.25})
  T.tensor_eq(-a, {{-1, -2}, {-3, -4}})
  T.tensor_eq(a ^ 2, {{1, 4}, {9, 16}})
  T.tensor_eq(a * a, {{1, 4}, {9, 16}})
  T.tensor_eq(mf.matmul(a, a), {{7, 10}, {15, 22}})
  T.tensor_eq(mf.matmul(a, a, true, false), {{10, 14}, {14, 20}})
  T.tensor_eq(a:sum(2), {3, 7}); T.tensor_eq(a:sum(1, true), {{4, 6}})
  T.eq(a:sum():item(), 10); T.eq(a:sum():dim(), 0); T.eq(a:mean():item(), 2.5)
  T.tensor_eq(a:argmax(2), {2, 2}); T.eq(a:argmax(2):dtype(), 'int64')
  T.tensor_eq(mf.reduce_sum(a, {1, 2}), 10)
  T.tensor_eq(mf.equal(a, a), {{1, 1}, {1, 1}})
  T.tensor_eq(mf.cast(mf.tensor{1.7, -1.7}, 'int64'), {1, -1})
  T.tensor_eq(mf.concat({a, a}, 2), {{1, 2, 1, 2}, {3, 4, 3, 4}})
  local parts = mf.split(mf.arange(5), 2)
  T.eq(#parts, 3); T.tensor_eq(parts[3], {4})
end)

T.test('dtype conversions and clone', function()
  local a = mf.tensor{1.5, 2.5}
  T.eq(a:float(), a)                       -- no-op returns the same tensor (Torch7's rule)
  T.eq(a:double():dtype(), 'float64')
  T.tensor_eq(a:long(), {1, 2})
  local c = a:clone(); c:set(1, 9); T.eq(a:get(1), 1.5)
  T.errors(function() return a + a:double() end, 'add', 'float32', 'float64')
end)

T.test('printing shows values, shape and dtype, elided when large', function()
  local s = tostring(mf.tensor{{1, 2}, {3, 4}})
  T.eq(s, ' 1  2\n 3  4\n[float32 tensor of size 2x2]')
  local big = tostring(mf.zeros(100, 100))
  assert(big:find('...', 1, true), 'large tensors elide the middle')
  assert(#big < 2000, 'elided print stays short')
  assert(tostring(mf.tensor{0.5, 0.25}):find('0.2500', 1, true))
  assert(tostring(mf.zeros(2, 2, 2)):find('(2,.,.)', 1, true))
end)

T.test('seeded generator: same seed, same numbers', function()
  mf.manual_seed(42); local a = mf.randn(100)
  mf.manual_seed(42); local b = mf.randn(100)
  mf.manual_seed(43); local c = mf.randn(100)
  T.eq(mf.eq(a, b):sum():item(), 100)
  assert(mf.eq(a, c):sum():item() < 100)
  local u = mf.rand(1000)
  assert(u:min():item() >= 0 and u:max():item() < 1)
end)

T.test('eager cache: a loop of calls binds once', function()
  local a, b = mf.ones(3), mf.ones(3)
  local s0 = mf.eager_stats()
  for _ = 1, 1000 do local _ = a + b end
  local s1 = mf.eager_stats()
  T.eq(s1.calls - s0.calls, 1000)
  assert(s1.binds - s0.binds <= 1, 'at most one bind for one layout')
  T.eq(s1.factories, s0.factories)        -- no kernel string evaluated again
  local c = mf.ones(4)
  local _ = c + c
  T.eq(mf.eager_stats().binds - s1.binds, 1)   -- a new shape binds once
end)

T.test('memory stats and threads', function()
  local st = mf.memory_stats()
  for _, k in ipairs{'in_use', 'peak', 'cached', 'allocations', 'system_allocations', 'live_blocks'} do
    assert(type(st[k]) == 'number', k)
  end
  collectgarbage(); collectgarbage()
  local before = mf.memory_stats().in_use
  local big = mf.zeros(1024, 1024)
  T.eq(mf.memory_stats().in_use - before, 4 * 1024 * 1024)
  big = nil
  collectgarbage(); collectgarbage()
  T.eq(mf.memory_stats().in_use, before)
  local n = mf.get_num_threads()
  mf.set_num_threads(1); T.eq(mf.get_num_threads(), 1)
  mf.set_num_threads(n)
  T.errors(function() mf.set_num_threads(0) end, 'set_num_threads')
end)

T.finish()
