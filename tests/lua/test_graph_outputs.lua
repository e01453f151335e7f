-- Graph nodes get the number of outputs their op block declares (OpDef::outputs, mf_op_num_outputs)
-- when the input shapes are unknown until run time: a placeholder with no shape at all. Values are
-- hand-computed for x = {{3, 1, 2}, {0, 5, 4}}.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local C = require 'moonflow.ffi_abi'

local X = {{3, 1, 2}, {0, 5, 4}}

-- f applied to every number of a nested table
local function map(t, f)
  if type(t) ~= 'table' then return f(t) end
  local r = {}
  for k, v in ipairs(t) do r[k] = map(v, f) end
  return r
end

T.test('an unshaped placeholder: sort, max / min over a dim, topk and kthvalue give values and indices', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float32', nil, 'p')
  local calls = {
    {'sort', function() return mf.sort(p) end, {{1, 2, 3}, {0, 4, 5}}, {{2, 3, 1}, {1, 3, 2}}},
    {'max over dim 2', function() return mf.max(p, 2) end, {3, 5}, {1, 2}},
    {'min over dim 1 keepdim', function() return p:min(1, true) end, {{0, 1, 2}}, {{2, 1, 1}}},
    {'topk 2', function() return mf.topk(p, 2) end, {{3, 2}, {5, 4}}, {{1, 3}, {2, 3}}},
    {'kthvalue 1 along dim 2', function() return mf.kthvalue(p, 1, 2) end, {1, 0}, {2, 1}},
  }
  for _, c in ipairs(calls) do
    local v, i = c[2]()
    T.eq(mf.is_symbol(v) and mf.is_symbol(i), true, c[1] .. ': two symbols')
    T.eq(v._shape, nil, c[1] .. ': values shape unknown at build')
    -- both as intermediates: the values doubled, the indices added as floats
    local w, j = v * 2, mf.cast(i, 'float32') + 0.5
    local r = {mf.Session():run({v, i, w, j}, {[p] = mf.tensor(X)})}
    T.tensor_eq(r[1], c[3], 0, c[1] .. ' values')
    T.eq(r[2]:dtype(), 'int64', c[1] .. ' indices dtype')
    T.tensor_eq(r[2], c[4], 0, c[1] .. ' indices')
    T.tensor_eq(r[3], map(c[3], function(a) return a * 2 end), 0, c[1] .. ' values as an intermediate')
    T.tensor_eq(r[4], map(c[4], function(a) return a + 0.5 end), 0, c[1] .. ' indices as an intermediate')
  end
end)

T.test('an unshaped placeholder: max over all dims or several gives one symbol', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float32', nil, 'p')
  local a, none = mf.max(p)
  T.eq(none, nil, 'max over all: one output')
  local b, none2 = mf.min(p, {1, 2}, true)
  T.eq(none2, nil, 'min over two dims: one output')
  local r = {mf.Session():run({a, b}, {[p] = mf.tensor(X)})}
  T.tensor_eq(r[1], 5, 0, 'max over all')
  T.tensor_eq(r[2], {{0}}, 0, 'min over both dims, kept')
end)

T.test('an unshaped placeholder: gradients through sort and max over a dim', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float64', nil, 'p')
  local x = mf.tensor(X, 'float64')
  local v = mf.sort(p, 2, true)
  local m = mf.max(p, 2)
  -- d sum(v * v) / dx = 2x (every element sorted once); d sum(m * {1, 2}) / dx: 1 at (1, 1), 2 at (2, 2)
  local g1 = mf.gradients(mf.sum(v * v), {p})[1]
  local g2 = mf.gradients(mf.sum(m * mf.tensor({1, 2}, 'float64')), {p})[1]
  local r = {mf.Session():run({g1, g2}, {[p] = x})}
  T.tensor_eq(r[1], {{6, 2, 4}, {0, 10, 8}}, 0, 'gradient through sort')
  T.tensor_eq(r[2], {{1, 0, 0}, {0, 2, 0}}, 0, 'gradient through max over dim 2')
end)

T.test('list-output ops keep their rule; the ABI query gives the declared counts', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float32', nil, 'p')
  T.errors(function() return mf.unbind(p, 1) end, 'unbind: the number of outputs depends on sizes')
  local function count(name, params)
    local op = mf._ops[name]
    return C.mf_op_num_outputs(op.index, params and mf._params_record(op, params).h)
  end
  T.eq(count('sort'), 2, 'sort')
  T.eq(count('topk', {k = 2}), 2, 'topk')
  T.eq(count('max', {dim = {2}}), 2, 'max over one dim')
  T.eq(count('max', {dim = {1, 2}}), 1, 'max over two dims')
  T.eq(count('max'), 1, 'max over all')
  T.eq(count('add'), -1, 'add: undeclared (its shape rule decides)')
  T.eq(count('split', {size = {1}}), -1, 'split: a list, decided by shapes')
end)

T.finish()
