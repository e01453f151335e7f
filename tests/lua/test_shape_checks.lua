-- Build-time shape checks: every size a shape rule knows is checked when the graph is built, even
-- where other sizes are unknown (-1), and the error names the op and the shapes ('?' for unknown
-- sizes) and blames the user's build line. Valid graphs with unknown sizes keep every size they
-- can know, and run. Expected shapes are worked out by hand from each op's definition.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local here = arg[0]

-- Calls build() (not as a tail call, so its line stays on the stack) and checks the error text
-- and that it blames line `line` of this file.
local function build_error(line, build, ...)
  local err = T.errors(function() local s = build(); return s end, ...)
  T.eq(err:match('^(.-):%d+:'), here, 'blamed file of ' .. err)
  T.eq(tonumber(err:match('^.-:(%d+):')), line, 'blamed line of ' .. err)
  return err
end

local function line() return debug.getinfo(2, 'l').currentline end

local function shape_of(sym)
  local parts = {}
  for i, d in ipairs(sym._shape) do parts[i] = d < 0 and '?' or tostring(d) end
  return table.concat(parts, 'x')
end

T.test('matmul: known inner sizes must agree at build', function()
  local x = mf.placeholder('float32', {nil, 3}, 'x')
  build_error(line(), function() local y = mf.matmul(x, mf.ones(4, 4)); return y end,
    'matmul', 'a is ?x3, b is 4x4', 'a:size(2) = 3 must equal b:size(1) = 4')
  T.eq(shape_of(mf.matmul(x, mf.ones(3, 4))), '?x4', 'matmul shape')
  local w = mf.placeholder('float32', {-1, 5}, 'w')
  T.eq(shape_of(mf.matmul(x, w)), '?x5', 'unknown inner size: checked at run')
end)

T.test('broadcasting ops check known sizes', function()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  build_error(line(), function() local y = x + mf.ones(4); return y end,
    'add', 'a is ?x3, b is 4', 'sizes 3 and 4')
  build_error(line(), function() local y = mf.where(mf.gt(x, 0), x, mf.ones(2, 2)); return y end, 'where')
  T.eq(shape_of(x * mf.ones(5, 1, 3)), '5x?x3', 'broadcast with a leading dim')
  T.eq(shape_of(x + mf.ones(4, 1)), '4x3', 'an unknown size broadcasts with a known one (1 or 4)')
  local u = mf.placeholder('float32', {-1}, 'u')
  T.eq(shape_of(x - u), '?x3', 'unknown against 3: 3')
end)

T.test('concat, reshape, conv2d, index ops', function()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  build_error(line(), function() local y = mf.concat({x, mf.ones(2, 4)}, 1); return y end,
    'concat', 'tensor 1 is ?x3, tensor 2 is 2x4')
  T.eq(shape_of(mf.concat({x, mf.ones(2, 3)}, 1)), '?x3', 'concat along the unknown dim')
  T.eq(shape_of(mf.concat({x, mf.ones(2, 3)}, 2)), '2x6', 'concat: the other tensor knows dim 1')
  build_error(line(), function() local y = mf.reshape(x, 4, 5); return y end,
    'reshape', 'x is ?x3', 'shape 4x5 has 20, not a multiple of 3')
  T.eq(shape_of(mf.reshape(x, 6, 2)), '6x2', 'reshape to a known total that fits')
  T.eq(shape_of(mf.reshape(x, 2, -1)), '2x?', 'reshape with -1')
  local img = mf.placeholder('float32', {-1, 3, 28, 28}, 'img')
  build_error(line(), function() local y = mf.conv2d(img, mf.ones(8, 4, 5, 5)); return y end,
    'conv2d', 'x is ?x3x28x28, w is 8x4x5x5', 'input channels')
  T.eq(shape_of(mf.conv2d(img, mf.ones(8, 3, 5, 5))), '?x8x24x24', 'conv2d')
  local free = mf.placeholder('float32', {-1, 3, -1, -1}, 'free')
  T.eq(shape_of(mf.max_pool2d(free, 2)), '?x3x?x?', 'pooling an unknown height')
  local idx = mf.placeholder('int64', {-1}, 'idx')
  T.eq(shape_of(mf.index_select(x, idx, 1)), '?x3', 'index_select')
end)

T.test('labels: rank and sizes checked where known; a {nil} placeholder is a scalar', function()
  local logits = mf.placeholder('float32', {-1, 10}, 'logits')
  build_error(line(), function() local y = mf.softmax_cross_entropy(logits, mf.ones(4, 9)); return y end,
    'softmax_cross_entropy', 'logits are ?x10, labels 4x9')
  local scalar_labels = mf.placeholder('float32', {}, 'p')
  build_error(line(), function() local y = mf.softmax_cross_entropy(logits, scalar_labels); return y end,
    'labels are 0-dim', 'write {-1}')
  local y = mf.placeholder('int64', {nil}, 'y')  -- Lua drops the lone nil: a 0-dim placeholder
  build_error(line(), function() local l = mf.nn.CrossEntropyLoss()(logits, y); return l end,
    'CrossEntropyLoss', 'target is scalar', 'write {-1}')
  local y1 = mf.placeholder('int64', {-1}, 'y1')
  T.eq(shape_of(mf.nn.CrossEntropyLoss()(logits, y1)), '', 'the mean loss is a scalar')
end)

T.test('sizes unknown to a rule stay unknown and are checked at run', function()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  T.errors(function() local p = mf.split(x, 1, 1); return p end, 'split', 'number of outputs')
  local parts = mf.split(x, {1, 2}, 2)
  T.eq(#parts, 2, 'listed sizes')
  T.eq(shape_of(parts[2]), '?x2', 'second part')
  local sq = mf.squeeze(x)
  T.eq(sq._shape, nil, 'squeeze of an unknown size: rank unknown until run')
  local s = mf.slice(x, 1, 2, 4)
  T.eq(shape_of(s), '3x3', 'slice with positive bounds')
  local sess = mf.Session()
  local v = mf.tensor{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}
  T.tensor_eq(sess:run(sq + 0, {[x] = mf.tensor{{1, 2, 3}}}), {1, 2, 3})
  T.tensor_eq(sess:run(s, {[x] = v}), {{4, 5, 6}, {7, 8, 9}, {10, 11, 12}})
  T.tensor_eq(sess:run(mf.matmul(x, mf.ones(3, 1)), {[x] = v}), {{6}, {15}, {24}, {33}})
  -- five unknown sizes: no overflow in the sentinel arithmetic
  local u = mf.placeholder('float32', {-1, -1, -1, -1, -1}, 'u')
  T.eq(shape_of(mf.sum(u * 2, 2)), '?x?x?x?', 'reduction over unknown sizes')
  T.eq(sess:run(mf.sum(mf.reshape(u, -1)), {[u] = mf.ones(2, 1, 3, 1, 2)}):item(), 12, 'sum')
end)

T.finish()
