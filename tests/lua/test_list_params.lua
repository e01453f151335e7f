-- Ops called with list params (issue 12): make_function's positional path finds their record in op.ppos
-- (a list: LIST, its length, its items) without the general path. Each call is repeated so that the
-- first takes the text path and the others the tree; results are hand-computed, and every refusal
-- the general path makes must still happen once the same op has cached other values.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}

T.test('list params: a list_args op takes its list as a table or as numbers, alike', function()
  for _ = 1, 3 do
    T.tensor_eq(a:permute{2, 1}, {{1, 4}, {2, 5}, {3, 6}})
    T.tensor_eq(a:permute(2, 1), {{1, 4}, {2, 5}, {3, 6}})
    T.tensor_eq(a:permute{1, 2}, {{1, 2, 3}, {4, 5, 6}})
    T.tensor_eq(a:reshape(3, 2), {{1, 2}, {3, 4}, {5, 6}})
    T.tensor_eq(a:reshape{3, 2}, {{1, 2}, {3, 4}, {5, 6}})
    T.tensor_eq(a:reshape{6}, {1, 2, 3, 4, 5, 6})
    T.tensor_eq(a:reshape(-1), {1, 2, 3, 4, 5, 6})
    T.tensor_eq(a:view{2, 3}, {{1, 2, 3}, {4, 5, 6}})
    T.tensor_eq(a:reshape(a:permute{2, 1}:size()), {{1, 2}, {3, 4}, {5, 6}})  -- a Size is a list
    T.tensor_eq(mf.tensor{{1, 2}}:expand(3, 2), {{1, 2}, {1, 2}, {1, 2}})
    T.tensor_eq(mf.tensor{{1, 2}}:expand{2, 2}, {{1, 2}, {1, 2}})
    T.tensor_eq(a:flip{1}, {{4, 5, 6}, {1, 2, 3}})
    T.tensor_eq(a:flip{2}, {{3, 2, 1}, {6, 5, 4}})
    T.tensor_eq(a:flip(1, 2), {{6, 5, 4}, {3, 2, 1}})
  end
end)

T.test('list params: lists among positional params (default adapter)', function()
  local col = mf.tensor{{1}, {2}}
  for _ = 1, 3 do
    T.tensor_eq(mf.roll(a, {1}, {2}), {{3, 1, 2}, {6, 4, 5}})
    T.tensor_eq(mf.roll(a, {1}, {1}), {{4, 5, 6}, {1, 2, 3}})
    T.tensor_eq(mf.roll(a, {1, 2}, {1, 2}), {{5, 6, 4}, {2, 3, 1}})
    T.tensor_eq(mf.roll(a, 1, 2), {{3, 1, 2}, {6, 4, 5}})
    T.tensor_eq(mf.roll(a, {-1}, {2}), {{2, 3, 1}, {5, 6, 4}})
    T.tensor_eq(mf.unreduce_like(col, a, {2}, true), {{1, 1, 1}, {2, 2, 2}})
    -- a named table after a list still goes to the general path, which merges it
    T.tensor_eq(mf.roll(a, {1}, {dims = {1}}), {{4, 5, 6}, {1, 2, 3}})
    T.tensor_eq(mf.sum(a, 2, {keepdim = true}), {{6}, {15}})
  end
end)

T.test('list params: lists that differ only in length or a later item find different records', function()
  for _ = 1, 2 do
    T.tensor_eq(a:reshape{6}, {1, 2, 3, 4, 5, 6})
    T.tensor_eq(a:reshape{6, 1}, {{1}, {2}, {3}, {4}, {5}, {6}})
    T.tensor_eq(a:reshape(6, 1, 1):reshape(1, 6), {{1, 2, 3, 4, 5, 6}})
    T.tensor_eq(mf.roll(a, {1, 1}, {1, 2}), {{6, 4, 5}, {3, 1, 2}})
    T.tensor_eq(mf.roll(a, {1, 0}, {1, 2}), {{4, 5, 6}, {1, 2, 3}})
  end
end)

T.test('list params: refusals still name the op once the tree holds other values', function()
  for _ = 1, 2 do
    a:reshape(3, 2); a:permute{2, 1}; mf.roll(a, {1}, {2})
  end
  T.errors(function() return a:reshape{4, 2} end, 'reshape')
  T.errors(function() return a:reshape(4, 2) end, 'reshape')
  T.errors(function() return a:permute{1, 1} end, 'permute')
  T.errors(function() return a:reshape{3, 'x'} end, 'reshape', "param 'shape' item 2")
  for _ = 1, 2 do a:reshape{6}; mf.roll(a, {6}, {2}) end
  local holed = {6}
  holed[3] = 1  -- {6, nil, 1}: # says 1 (item 3 is in the hash part), and must not find {6}'s record
  T.eq(#holed, 1, 'the test needs # to stop at the hole')
  T.errors(function() return a:reshape(holed) end, 'reshape')
  T.errors(function() return mf.roll(a, holed, {2}) end, 'roll')
  T.errors(function() return mf.roll(a, {1}, {0 / 0}) end, 'roll')
  T.errors(function() return mf.roll(a, {1}, {2}, 5) end, 'roll', 'too many arguments')
  -- the refused values left no record: the good calls still give the right values
  T.tensor_eq(a:reshape{3, 2}, {{1, 2}, {3, 4}, {5, 6}})
  T.tensor_eq(mf.roll(a, {1}, {2}), {{3, 1, 2}, {6, 4, 5}})
end)

T.test('list params: a named table with a key that is no param is refused once the tree holds its values', function()
  for _ = 1, 2 do  -- the general path's tables of positional values skip fast_walk's key count
    T.tensor_eq(mf.concat({a, a}, 2), {{1, 2, 3, 1, 2, 3}, {4, 5, 6, 4, 5, 6}})
    T.tensor_eq(mf.sum(a, 1), {5, 7, 9})
    T.tensor_eq(a:permute{2, 1}, {{1, 4}, {2, 5}, {3, 6}})
  end
  T.errors(function() return mf.concat({a, a}, 2, {bogus = 1}) end, 'concat', 'bogus')
  T.errors(function() return mf.concat({a, a}, {dim = 2, bogus = 1}) end, 'concat', 'bogus')
  T.errors(function() return mf.sum(a, 1, {bogus = true}) end, 'sum', 'bogus')
  T.errors(function() return a:permute({2, 1}, {bogus = 1}) end, 'permute', 'bogus')
  T.errors(function() return a:permute(2, 1, {bogus = 1}) end, 'permute', 'bogus')
end)

T.test('a list with a named key is refused, not read as the list alone', function()
  local x = mf.randn(2, 3)
  for _ = 1, 2 do  -- the second call finds the first's records
    T.errors(function() return x:permute{2, 1, foo = 1} end,
      "permute: param 'dims' has the key 'foo'; expected a plain list of numbers")
    T.errors(function() return x:reshape{3, 2, foo = 1} end, "reshape: param 'shape' has the key 'foo'")
    T.errors(function() return x:permute{2, 1, [0] = 5} end, "permute: param 'dims' has the key '0'")
  end
  -- ops whose list params are not their leading list (roll's shifts and dims, sum's dim): the same
  for _ = 1, 2 do
    T.errors(function() return mf.roll(x, {1, foo = 1}, {1}) end, "roll: param 'shifts' has the key 'foo'")
    T.errors(function() return mf.roll(x, {1, [0] = 3}, {1}) end, "roll: param 'shifts' has the key '0'")
    T.errors(function() return mf.sum(x, {1, foo = 2}) end, "sum: param 'dim' has the key 'foo'")
  end
  T.eq(x:permute{2, 1}:size(1), 3, 'a plain list still works')
end)

T.finish()
