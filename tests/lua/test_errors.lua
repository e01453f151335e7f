-- Bad input: every error names the op, the shapes or values and the rule, blames the caller's
-- line, and leaves the engine working.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

-- after every error, the engine must still compute correctly
local function still_works()
  local a = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(mf.matmul(a, a) + 1, {{8, 11}, {16, 23}})
end

local cases = {
  {'shape mismatch in matmul', function() return mf.matmul(mf.ones(2, 3), mf.ones(4, 5)) end,
   'matmul', '2x3', '4x5', 'must equal'},
  {'broadcast mismatch', function() return mf.ones(2, 3) + mf.ones(4) end, 'add', '2x3', '4', 'neither is 1'},
  {'dim out of range', function() return mf.ones(2, 3):sum(3) end, 'sum', 'dim 3 out of range', '1..2'},
  {'dim out of range in softmax', function() return mf.softmax(mf.ones(2), 2) end, 'softmax', 'dim 2'},
  {'narrow past the end', function() return mf.ones(4):narrow(1, 3, 5) end, 'narrow', 'length 5'},
  {'select index out of range', function() return mf.ones(3, 2)[4] end, 'select', 'index 4', '1..3'},
  {'get index out of range', function() return mf.ones(3, 2):get(1, 3) end, 'get', 'index 3', '1..2'},
  {'negative size', function() return mf.zeros(-3, 2) end, 'zeros', 'size -3', 'negative'},
  {'absurd size', function() return mf.zeros(1e14) end, 'zeros', '100000000000000', 'allocate'},
  {'absurd size through a product', function() return mf.ones(1e7, 1e7) end, 'ones', 'allocate'},
  {'too many dims', function() return mf.zeros(1, 1, 1, 1, 1, 1, 1, 1, 1) end, 'zeros', '9 dims', 'at most 8'},
  {'ragged table', function() return mf.tensor{{1, 2}, {3}} end, 'mf.tensor', 'ragged'},
  {'ragged depth', function() return mf.tensor{{1, 2}, 3} end, 'mf.tensor', 'ragged'},
  {'non-numeric element', function() return mf.tensor{{1, 'x'}} end, 'mf.tensor', 'element [1][2]', 'string'},
  {'non-list table', function() return mf.tensor{a = 1} end, 'mf.tensor', 'key a'},
  {'bad dtype name', function() return mf.zeros(2, {dtype = 'float16'}) end, 'zeros', "unknown dtype 'float16'"},
  {'bad dtype in cast', function() return mf.cast(mf.ones(2), 'complex') end, 'cast', "unknown dtype 'complex'"},
  {'unknown param', function() return mf.sum(mf.ones(2), {dims = 1}) end, 'sum', "unknown param 'dims'", 'dim, keepdim'},
  {'wrong param type', function() return mf.clamp(mf.ones(2), 'low') end, 'clamp', "'min'", 'expects a number'},
  {'integer param given a fraction', function() return mf.narrow(mf.ones(4), 1, 1.5, 2) end, 'narrow', "'start'", 'integer'},
  {'param out of range', function() return mf.slice(mf.ones(4), 1, 1, 4, 0) end, 'slice', "'step'", '[1,'},
  {'clamp bounds reversed', function() return mf.clamp(mf.ones(2), 3, 1) end, 'clamp', 'min 3', 'max 1'},
  {'float-only op on integers', function() return mf.exp(mf.ones(2, {dtype = 'int64'})) end, 'exp', 'int64', 'float32 or float64'},
  {'mixed dtypes', function() return mf.ones(2) + mf.ones(2, {dtype = 'float64'}) end, 'add', 'float32', 'float64'},
  {'where needs uint8', function() return mf.where(mf.ones(2), mf.ones(2), mf.ones(2)) end, 'where', 'cond is float32', 'uint8'},
  {'integer division by zero', function() return mf.div(mf.tensor({1, 2}, 'int32'), mf.tensor({1, 0}, 'int32')) end,
   'div', 'division by zero'},
  {'item of many elements', function() return mf.ones(3):item() end, 'item', '3 elements'},
  {'reshape to the wrong count', function() return mf.ones(2, 3):reshape(4, 2) end, 'reshape', '6 elements', '4x2'},
  {'expand a non-1 dim', function() return mf.ones(2, 3):expand(4, 3) end, 'expand', 'dim 1 of size 2'},
  {'concat mismatch', function() return mf.concat({mf.ones(2, 3), mf.ones(2, 4)}, 1) end, 'concat', '2x3', '2x4'},
  {'split sizes that do not add up', function() return mf.split(mf.ones(5), {2, 2}) end, 'split', 'add up to 4'},
  {'permute with a repeated dim', function() return mf.ones(2, 3):permute(1, 1) end, 'permute', 'listed twice'},
  {'max over an empty dim', function() return mf.ones(0, 3):max(1) end, 'max', 'size 0'},
  {'string as an input', function() return mf.add('a', mf.ones(2)) end, 'add', 'input 1', 'string'},
  {'too many arguments', function() return mf.exp(mf.ones(2), 3) end, 'exp', '1 input'},
  {'arange that never arrives', function() return mf.arange(0, 5, -1) end, 'arange', 'never arrives'},
  {'unknown method', function() return mf.ones(2):frobnicate() end, 'frobnicate'},
  {'matmul of vectors', function() return mf.matmul(mf.ones(3), mf.ones(3)) end, 'matmul', 'at least 2 dims'},
  -- a nil between sizes is a hole, named; a trailing nil (an absent options table) is not
  {'nil between sizes', function() return mf.zeros(2, nil, 3) end,
   'zeros: argument 2 is nil; expected a number (an entry of shape) or a table of params'},
  {'nil before a size', function() return mf.rand(nil, 3) end, 'rand: argument 1 is nil'},
  {'nil between sizes of reshape', function() return mf.ones(6):reshape(2, nil, 3) end, 'reshape: argument 3 is nil'},
  {'nil between sizes and params', function() return mf.zeros(2, nil, {dtype = 'float64'}) end, 'zeros: argument 2 is nil'},
  -- conv geometry beyond the kernels' int32 range fails in the shape rule, naming the param and its range
  {'conv2d stride 2^62', function() return mf.conv2d(mf.ones(1, 1, 4, 4), mf.ones(1, 1, 3, 3), 2 ^ 62) end,
   'conv2d: stride is {4611686018427387904}; each value must be at least 1 and at most 2147483647'},
  {'conv2d padding 2^62', function() return mf.conv2d(mf.ones(1, 1, 4, 4), mf.ones(1, 1, 3, 3), 1, {1, 2 ^ 62}) end,
   'conv2d: padding is {1, 4611686018427387904}; each value must be at least 0 and at most 2147483647'},
  {'conv2d dilation 2^31', function() return mf.conv2d(mf.ones(1, 1, 4, 4), mf.ones(1, 1, 3, 3), 1, 0, 2 ^ 31) end,
   'conv2d: dilation is {2147483648}; each value must be at least 1 and at most 2147483647'},
  {'max_pool2d kernel_size 2^40', function() return mf.max_pool2d(mf.ones(1, 1, 4, 4), 2 ^ 40) end,
   'max_pool2d: kernel_size is {1099511627776}; each value must be at least 1 and at most 2147483647'},
  {'cumprod twice differentiated', function()
     local x = mf.tensor({1, 2, 3}, {requires_grad = true})
     local g = mf.autograd.grad(mf.sum(mf.cumprod(x, 1)), x, {create_graph = true})[1]
     return mf.autograd.grad(mf.sum(g), x)
   end, "op 'cumprod_grad' has no gradient", 'it is what the gradient of cumprod builds, so cumprod is differentiable once only',
   'a second-order gradient (a gradient of a gradient) through cumprod is not supported'},
}

for _, c in ipairs(cases) do
  T.test(c[1], function()
    -- called from a frame of this file (the cases' own `return f()` are tail calls, which drop theirs)
    local msg = T.errors(function() local r = c[2]() return r end, select(3, unpack(c)))
    -- the user's line (this file), not moonflow's internals, is blamed
    assert(msg:find('test_errors.lua', 1, true), 'error should blame the caller: ' .. msg)
    still_works()
  end)
end

T.test('register_op: bad definitions', function()
  local good = [[function(ins, outs, p) local y = outs[1]; return function() mf.kernels.fill(y, 1) end end]]
  T.errors(function() mf.register_op{name = 'add', num_inputs = 2, doc = 'x', lua_compute = good} end, "'add' is already registered")
  T.errors(function() mf.register_op{name = 'nodoc', num_inputs = 1, lua_compute = good} end, 'nodoc', 'doc is required')
  T.errors(function() mf.register_op{name = 'bad name', num_inputs = 1, doc = 'x', lua_compute = good} end, 'identifier')
  T.errors(function() mf.register_op{name = 'extra', num_inputs = 1, doc = 'x', lua_compute = good, colour = 1} end,
    "unknown field 'colour'")
  T.errors(function() mf.register_op{name = 'syntax', num_inputs = 1, doc = 'x',
    lua_compute = 'function(ins, outs, p)\n  local y =\nend'} end, 'op syntax', 'syntax (cpu kernel):3')
  T.eq(mf.syntax, nil)                       -- a failed registration leaves nothing behind
  mf.register_op{name = 'stray', num_inputs = 1, doc = 'x',
    lua_compute = 'function(ins, outs, p)\n  helper = 1\n  return function() end\nend'}
  T.errors(function() return mf.stray(mf.ones(2)) end, 'op stray', "assigns global 'helper'")
  still_works()
end)


T.test('a trailing nil is an absent options table, not a hole', function()
  local opts = nil
  T.eq(mf.zeros(2, 3, opts):size(2), 3)
  T.eq(mf.ones(6):reshape(2, 3, opts):size(1), 2)
  T.tensor_eq(mf.einsum('ij->ji', mf.tensor{{1, 2}}), {{1}, {2}})
end)

T.finish()
