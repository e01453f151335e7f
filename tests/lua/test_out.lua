-- out= (PyTorch's): op(..., {out = t}) computes into t and returns t. Expected values are
-- hand-computed; each case also checks that t itself (same storage) received the result, that no
-- new tensor was made for a contiguous out, and the refusals (wrong size, dtype, views, in-place
-- ops, graph symbols, gradients) name the op and what was expected.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local nan = 0 / 0

T.test('unary, binary and positional-param ops write out and return it', function()
  local x = mf.tensor({-1, 2, -3, 4})
  local y = mf.full({4}, 7)
  local r = mf.abs(x, {out = y})
  T.eq(rawequal(r, y), true, 'abs returns out itself')
  T.tensor_eq(y, {1, 2, 3, 4})
  T.tensor_eq(x:neg({out = y}), {1, -2, 3, -4})
  T.tensor_eq(mf.add(x, x, {out = y}), {-2, 4, -6, 8})
  T.tensor_eq(mf.add(x, 1, {out = y, alpha = 2}), {1, 4, -1, 6})   -- x + 2 * 1
  T.tensor_eq(mf.mul(x, mf.tensor({2, 2, 2, 2}), {out = y}), {-2, 4, -6, 8})
  local m = mf.tensor({{1, 2}, {3, 4}})
  local s = mf.full({2}, nan)
  T.eq(rawequal(mf.sum(m, 2, {out = s}), s), true, 'sum returns out')
  T.tensor_eq(s, {3, 7})
  T.tensor_eq(m:sum(1, {out = s}), {4, 6})
  local o = mf.full({2, 2}, nan)
  T.tensor_eq(mf.matmul(m, m, {out = o}), {{7, 10}, {15, 22}})
  T.tensor_eq(mf.matmul(m, m, false, true, {out = o}), {{5, 11}, {11, 25}})  -- m * m^T
  T.tensor_eq(mf.concat({mf.tensor({1}), mf.tensor({2, 3})}, 1, {out = mf.empty(3)}), {1, 2, 3})
end)

T.test('positional params before out: the same results, checks and refusals as the general path', function()
  local x = mf.tensor({1.5, -2, 3})
  local o = mf.full({3}, nan, {dtype = 'float64'})
  for i = 1, 3 do  -- the first call finds the params record, later ones reuse it (new values each time)
    T.eq(rawequal(mf.cast(x, 'float64', {out = o}), o), true, 'cast returns out')
    T.tensor_eq(o, {1.5 * i, -2 * i, 3 * i})
    T.eq(o:dtype(), 'float64', 'dtype of out')
    x:mul_(2)
    T.tensor_eq(x:cast('float64', {out = o}), {3 * i, -4 * i, 6 * i})
    x:div_(2):mul_((i + 1) / i)
  end
  local m = mf.tensor({{1, 2}, {3, 4}})
  local k = mf.full({2, 1}, nan)
  T.tensor_eq(mf.sum(m, 2, true, {out = k}), {{3}, {7}})  -- two positional params, then out
  T.errors(function() mf.cast(x, 'float64', {out = mf.empty(3)}) end, 'cast', 'float32', 'float64')
  T.errors(function() mf.sum(m, {dim = 2}, {out = mf.empty(2)}) end, 'sum')  -- a table of params, then out
  local w = mf.tensor({{1, 2}}, {requires_grad = true})
  T.errors(function() mf.sum(w, 2, {out = mf.empty(1)}) end, 'sum: input 1 (1x2) requires grad')
  local c = mf.full({2, 3}, nan)
  for i = 1, 3 do  -- a list of inputs, a positional dim, then out (new values each time)
    local a, b = mf.full({2, 1}, i), mf.tensor({{10, 20}, {30, 40}})
    T.eq(rawequal(mf.concat({a, b}, 2, {out = c}), c), true, 'concat returns out')
    T.tensor_eq(c, {{i, 10, 20}, {i, 30, 40}})
  end
  T.tensor_eq(mf.stack({mf.tensor({1, 2}), mf.tensor({3, 4})}, {out = mf.empty(2, 2)}), {{1, 2}, {3, 4}})
  T.errors(function() mf.concat({x, x}, 1, {out = mf.empty(5)}) end, 'concat', '5', '6')
  -- into a warm out: no allocation (as the table form)
  local y = mf.empty(3, {dtype = 'float64'})
  mf.cast(x, 'float64', {out = y})
  collectgarbage(); collectgarbage()
  local before = mf.memory_stats().allocations
  for _ = 1, 50 do mf.cast(x, 'float64', {out = y}) end
  T.eq(mf.memory_stats().allocations - before, 0, 'allocations in 50 positional calls into out')
end)

T.test('a contiguous out is the kernel output itself: no new storage', function()
  local x = mf.randn(256, 256)
  local y = mf.empty(256, 256)
  mf.abs(x, {out = y})  -- warm (the entry is bound)
  collectgarbage(); collectgarbage()
  local before = mf.memory_stats().allocations
  for _ = 1, 50 do mf.abs(x, {out = y}) end
  T.eq(mf.memory_stats().allocations - before, 0, 'allocations in 50 calls into out')
  T.near(y:sum():item(), x:abs():sum():item(), 1e-5, 'sum of |x|')
end)

T.test('factories and random ops fill out', function()
  local t = mf.full({2, 3}, nan)
  T.tensor_eq(mf.zeros(2, 3, {out = t}), {{0, 0, 0}, {0, 0, 0}})
  T.tensor_eq(mf.full({2, 3}, 2.5, {out = t}), {{2.5, 2.5, 2.5}, {2.5, 2.5, 2.5}})
  T.tensor_eq(mf.arange(1, 4, {out = mf.empty(3)}), {1, 2, 3})
  mf.manual_seed(5)
  local a = mf.rand(1000)
  mf.manual_seed(5)
  local b = mf.rand(1000, {out = mf.empty(1000)})
  T.eq(a:eq(b):all():item(), 1, 'rand into out draws the same numbers')
end)

T.test('outputs of several: a list, returned as the op returns them', function()
  local m = mf.tensor({{1, 5, 2}, {7, 3, 9}})
  local v, i = mf.empty(2), mf.empty(2, {dtype = 'int64'})
  local rv, ri = mf.max(m, 2, {out = {v, i}})
  T.eq(rawequal(rv, v) and rawequal(ri, i), true, 'max returns the out tensors')
  T.tensor_eq(v, {5, 9})
  T.tensor_eq(i, {2, 3})
  T.errors(function() mf.max(m, 2, {out = v}) end, 'max', 'out= takes a list of 2 tensors', 'one tensor')
  T.errors(function() mf.max(m, 2, {out = {v, v}}) end, 'max: out item 2 is float32', 'the result is int64')
end)

-- an op registered from Lua with two outputs of one dtype: x + 1 and x - 1 by plain loops
mf.register_op{name = 'plus_minus', num_inputs = 1, doc = 'x + 1 and x - 1 (two outputs)',
  infer_shape = function(s) return {s[1], s[1]} end,
  lua_compute = [[ function(ins, outs, p)
    return function()
      local n, xp, a, b = ins[1]:numel(), ins[1]:data(), outs[1]:data(), outs[2]:data()
      for i = 0, n - 1 do a[i] = xp[i] + 1; b[i] = xp[i] - 1 end
    end end ]]}

T.test('an op registered from Lua takes out= too', function()
  local x = mf.tensor({1, 2, 3})
  local a, b = mf.empty(3), mf.empty(3)
  local ra, rb = mf.plus_minus(x, {out = {a, b}})
  T.eq(rawequal(ra, a) and rawequal(rb, b), true, 'returns the out tensors')
  T.tensor_eq(a, {2, 3, 4})
  T.tensor_eq(b, {0, 1, 2})
  T.errors(function() mf.plus_minus(x, {out = {a, a}}) end, 'plus_minus: out items 1 and 2 are the same memory')
  -- strided outs (two columns of one matrix): the plain-loop kernel writes fresh contiguous results,
  -- then each is copied into its column
  local m = mf.zeros(3, 2)
  mf.plus_minus(x, {out = {m:select(2, 1), m:select(2, 2)}})
  T.tensor_eq(m, {{2, 0}, {3, 1}, {4, 2}})
end)

T.test('views and memory the inputs read: written through a copy after the kernel', function()
  local big = mf.zeros(2, 4)
  mf.abs(mf.tensor({{-1, -2}, {-3, -4}}), {out = big:narrow(2, 2, 2)})
  T.tensor_eq(big, {{0, 1, 2, 0}, {0, 3, 4, 0}})
  local tt = mf.zeros(2, 2)
  mf.add(mf.tensor({{1, 2}, {3, 4}}), 10, {out = tt:t()})  -- a transposed out
  T.tensor_eq(tt, {{11, 13}, {12, 14}})
  -- out is an input: the product reads a whole before a is written
  local a = mf.tensor({{1, 2}, {3, 4}})
  T.tensor_eq(mf.matmul(a, a, {out = a}), {{7, 10}, {15, 22}})
  -- out overlaps an input through a view: x[2..4] = x[1..3] + 1 reads x[1..3] first
  local x = mf.tensor({1, 2, 3, 4})
  mf.add(x:narrow(1, 1, 3), 1, {out = x:narrow(1, 2, 3)})
  T.tensor_eq(x, {1, 2, 3, 4})
  local c = mf.tensor({1, 2, 3})
  T.tensor_eq(mf.cumsum(c, 1, {out = c}), {1, 3, 6})
  -- selected rows (contiguous, at an offset: written directly) and columns (strided: a copy)
  local g = mf.zeros(3, 2)
  mf.neg(mf.tensor({1, 2}), {out = g:select(1, 2)})
  mf.add(mf.tensor({1, 2, 3}), 1, {out = g:select(2, 2)})
  T.tensor_eq(g, {{0, 2}, {-1, 3}, {0, 4}})
end)

T.test('wrong size, dtype, device or kind of out: clear errors, out untouched', function()
  local x = mf.tensor({-1, 2, -3, 4})
  local y = mf.tensor({9, 9, 9})
  T.errors(function() mf.abs(x, {out = y}) end, 'abs: out has size 3; the result has size 4')
  T.tensor_eq(y, {9, 9, 9})
  T.errors(function() mf.abs(x, {out = mf.empty(4, {dtype = 'float64'})}) end,
    'abs: out is float64 on cpu; the result is float32 on cpu')
  T.errors(function() mf.add(x, x, {out = mf.empty(2, 2)}) end, 'add: out has size 2x2; the result has size 4')
  T.errors(function() mf.abs(x, {out = 3}) end, 'abs: out= takes a tensor; got number')
  T.errors(function() mf.abs(x, {out = mf.empty(1):expand(4)}) end, 'abs: out is expanded (dim 1')
  T.errors(function() mf.reshape(x, {2, 2}, {out = mf.empty(2, 2)}) end, 'reshape: returns a view of its input')
  T.errors(function() x:narrow(1, 1, 2, {out = mf.empty(2)}) end, 'narrow: returns a view')
  T.errors(function() mf.add_(mf.empty(4), x, {out = mf.empty(4)}) end, 'add_: writes its input in place')
  T.errors(function() mf.zeros(2, {out = mf.empty(2), requires_grad = true}) end, 'zeros: out= takes no requires_grad')
  T.errors(function() mf.abs(x, {out = mf.empty(4), bogus = 1}) end, 'abs')
  local p = mf.placeholder('float32', {4}, 'p')
  T.errors(function() mf.abs(p, {out = mf.empty(4)}) end, 'abs: out= is for eager calls')
end)

T.test('gradients: refused in grad mode, allowed under no_grad; out counts a write', function()
  local w = mf.tensor({-1, 2}, {requires_grad = true})
  local y = mf.empty(2)
  T.errors(function() mf.abs(w, {out = y}) end, 'abs: input 1 (2) requires grad', 'not recorded by the tape')
  T.errors(function() mf.abs(mf.tensor({1, 2}), {out = w}) end, 'abs: out (2) requires grad')
  T.tensor_eq(mf.no_grad(function() return mf.abs(w, {out = y}) end), {1, 2})
  -- a tensor a recorded op saved, then overwritten through out=: backward names the write
  local a = mf.tensor({1, 2}, {requires_grad = true})
  local b = mf.tensor({3, 4})
  local loss = (a * b):sum()
  mf.neg(mf.tensor({5, 6}), {out = b})
  T.errors(function() loss:backward() end, "modified in place by op 'neg'")
end)

T.test('integer dtypes and NaN flow through out', function()
  local i = mf.tensor({-3, 4}, {dtype = 'int32'})
  local o = mf.empty(2, {dtype = 'int32'})
  T.tensor_eq(mf.abs(i, {out = o}), {3, 4})
  local f = mf.tensor({nan, 1})
  local r = mf.exp(f, {out = mf.empty(2)})
  T.eq(r:totable()[1] ~= r:totable()[1], true, 'exp(NaN) is NaN')
  T.near(r:totable()[2], math.exp(1), 1e-6)
end)

T.finish()
