-- Eager calls with more arguments than the positional path's nine (make_function, ops.lua): the
-- extras reach the general path and its errors, never dropped. x:reshape(1, 1, 1, 1, 1, 1, 1, 2, 1)
-- asks for 9 dims (8 at most) and returned an 8-dim 1x1x1x1x1x1x1x2 with the ninth size dropped;
-- x:expand and x:permute the same.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

T.test('nine sizes after x: refused as 9 dims, whichever spelling', function()
  local x = mf.ones(2)
  T.errors(function() return x:reshape(1, 1, 1, 1, 1, 1, 1, 2, 1) end, 'reshape', '9 dims')
  T.errors(function() return mf.reshape(x, 1, 1, 1, 1, 1, 1, 1, 2, 1) end, 'reshape', '9 dims')
  T.errors(function() return x:reshape{1, 1, 1, 1, 1, 1, 1, 2, 1} end, 'reshape', '9 dims')
  T.errors(function() return mf.ones(1):expand(1, 1, 1, 1, 1, 1, 1, 2, 3) end, 'expand', '9 dims')
  T.errors(function() return mf.ones(1, 1, 1, 1, 1, 1, 1, 1):permute(1, 2, 3, 4, 5, 6, 7, 8, 9) end, 'permute', '9')
end)

T.test('ten arguments: too many, counted', function()
  local x = mf.ones(2, 3)
  T.errors(function() return mf.sum(x, 1, true, 1, 1, 1, 1, 1, 1, 1) end, 'sum', 'too many arguments (10)')
end)

T.test('eight sizes still work on the positional path', function()
  local y = mf.ones(2):reshape(1, 1, 1, 1, 1, 1, 1, 2)
  T.eq(table.concat(y:size(), 'x'), '1x1x1x1x1x1x1x2', 'shape')
  local z = mf.ones(1, 1, 1, 1, 1, 1, 1, 2):permute(8, 1, 2, 3, 4, 5, 6, 7)
  T.eq(table.concat(z:size(), 'x'), '2x1x1x1x1x1x1x1', 'permuted shape')
end)

T.finish()
