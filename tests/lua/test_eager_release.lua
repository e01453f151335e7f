-- The eager training step's costs (issue 11): params given positionally find their record without
-- tables (ops.lua), a params record checks several recent layouts before a signature, and the tape
-- frees spent gradients at once (tape.lua): gradients flowing between nodes when consumed, and a
-- .grad nobody read when zero_grad replaces it. Values are hand-computed; memory is read from
-- mf.memory_stats() with the collector stopped, so only explicit frees can lower it.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}

T.test('positional params: same values as the table form, every time', function()
  for _ = 1, 3 do  -- the first call fills the positional tree, the others read it
    T.tensor_eq(mf.matmul(a, a, false, true), {{14, 32}, {32, 77}})
    T.tensor_eq(mf.matmul(a, a, nil, true), {{14, 32}, {32, 77}})        -- a nil skips a param
    T.tensor_eq(mf.matmul(a, a, {transpose_b = true}), {{14, 32}, {32, 77}})
    T.tensor_eq(mf.matmul(a, a, true), {{17, 22, 27}, {22, 29, 36}, {27, 36, 45}})
    T.tensor_eq(mf.sum(a, 2, true), {{6}, {15}})
    T.tensor_eq(mf.sum(a, 2), {6, 15})
    T.tensor_eq(mf.sum(a, 2, {keepdim = true}), {{6}, {15}})           -- positional, then a table
    T.tensor_eq(mf.sum(a, 1, 'true'), {{5, 7, 9}})  -- a string: the text path's rule, as in a table
    local v, i = mf.max(mf.tensor{{1, 5, 3}, {4, 2, 6}}, 2)            -- both outputs come back
    T.tensor_eq(v, {5, 6})
    T.tensor_eq(i, {2, 3})
    T.tensor_eq(mf.matmul(mf.nn.Parameter(a), a, false, true), {{14, 32}, {32, 77}})  -- a holder input
  end
end)

T.test('positional params: refusals still name the op, before and after caching', function()
  for _ = 1, 2 do
    T.errors(function() return mf.sum(a, 0 / 0) end, "sum: param 'dim'", 'nan')
    T.errors(function() return mf.sum(a, 3) end, 'sum', '3')
    T.errors(function() return mf.matmul(a, a, 'x', true) end, 'matmul', 'transpose_a')
    T.errors(function() return mf.sum(a, 1, true, 5) end, 'sum: too many arguments')
    T.errors(function() return mf.sum(a, 1, {bogus = 1}) end, "sum: unknown param 'bogus'")
    T.errors(function() return mf.matmul(a, nil, false, true) end, 'matmul', 'missing')
    T.tensor_eq(mf.sum(a, 1), {5, 7, 9})
  end
end)

T.test('layouts: six layouts in turn under one params record bind once each', function()
  local xs, r = {}, {}
  for k = 1, 6 do xs[k] = mf.ones(k, 2) end
  local s0 = mf.eager_stats()
  for round = 1, 4 do
    for k = 1, 6 do r[6 * (round - 1) + k] = mf.sum(xs[k], 2, true) end
  end
  T.eq(mf.eager_stats().binds - s0.binds, 6, 'binds for six layouts')
  for j = 1, 24 do
    local k = (j - 1) % 6 + 1
    T.eq(r[j]:size(1), k, 'rows')
    T.eq(r[j][{k, 1}], 2, 'row sum')
  end
end)

T.test('gradients: values through shared uses, after spent gradients are freed', function()
  local w = mf.tensor({1, 2, 3}, {requires_grad = true})
  for round = 1, 2 do  -- the second backward accumulates
    local h = w * 2
    local z = (h * h + h):sum()  -- dz/dw = (2h + 1) * 2 = 8w + 2
    z:backward()
    T.tensor_eq(w.grad, {10 * round, 18 * round, 26 * round})
  end
end)

T.test('gradients: a .grad the caller read survives zero_grad; an unread one is freed at once', function()
  local n = 512 * 1024  -- 2 MiB of float32
  local w = mf.zeros(n, {requires_grad = true})
  local opt = mf.optim.SGD({w}, {lr = 0.1})
  local function step()
    opt:zero_grad()
    local loss = (w * 3):sum()
    loss:backward()
  end
  step()
  local g = w.grad  -- read: the caller may keep it
  collectgarbage('stop')
  opt:zero_grad()
  T.eq(g:numel(), n, 'a read .grad keeps its size')
  T.eq(g[1], 3, 'and its values')
  T.eq(g[n], 3, 'and its values')
  collectgarbage('restart')
  step()
  opt:step()  -- the optimizer's read does not count as the caller's
  T.near(w[1], -0.3, 1e-6, 'the step used the gradient')
  collectgarbage('stop')
  local before = mf.memory_stats().in_use
  opt:zero_grad()
  local freed = before - mf.memory_stats().in_use
  collectgarbage('restart')
  T.eq(freed >= 4 * n, true, ('zero_grad freed the unread gradient (%d bytes)'):format(freed))
end)

T.test('gradients: the ones flowing between nodes go back to the allocator during backward', function()
  local n = 512 * 1024
  local w = (mf.arange(1, n + 1) - n / 2):requires_grad_()  -- 1 - n/2 .. n/2
  local function chain() return mf.relu(mf.relu(mf.relu(w))):sum() end  -- each rule's result is fresh
  chain():backward()  -- binds every entry
  w.grad = nil
  local loss = chain()
  collectgarbage('stop')
  local before = mf.memory_stats().in_use
  loss:backward()
  local grown = mf.memory_stats().in_use - before
  collectgarbage('restart')
  T.eq(w.grad[1], 0, 'gradient where w < 0')
  T.eq(w.grad[n], 1, 'gradient where w > 0')
  -- kept: w.grad (4n bytes); the two gradients between the relus are freed as they are consumed
  T.eq(grown < 2 * 4 * n, true, ('backward kept %d bytes for a %d-byte gradient'):format(grown, 4 * n))
end)

T.test('gradients: a tensor a Lua-registered rule returns is never freed by the tape', function()
  local kept = mf.tensor{5, 6}
  mf.register_op{name = 'release_test_keep', num_inputs = 1, doc = 'identity; its gradient is a fixed tensor',
    lua_compute = [[function(ins, outs) return function()
      local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
      for i = 0, n - 1 do yp[i] = xp[i] end
    end end]],
    gradient = function() return {kept} end}
  local x = mf.tensor({1, 2}, {requires_grad = true})
  for _ = 1, 2 do
    local y = mf.release_test_keep(x * 1)
    y:backward(mf.ones(2))
  end
  T.tensor_eq(kept, {5, 6})
  T.tensor_eq(x.grad, {10, 12})
  -- straight into a leaf: .grad gets a copy, so neither accumulating nor zero_grad touches the rule's tensor
  local w = mf.tensor({1, 2}, {requires_grad = true})
  local opt = mf.optim.SGD({w}, {lr = 0.1})
  for _ = 1, 2 do
    opt:zero_grad()
    mf.release_test_keep(w):backward(mf.ones(2))
    mf.release_test_keep(w):backward(mf.ones(2))
    T.tensor_eq(w.grad, {10, 12})
    opt:zero_grad()
    T.tensor_eq(kept, {5, 6})
  end
end)

-- A binary op's fast path reuses one inputs list per op (ops.lua) and clears it after the call: it
-- keeps no tensor alive. (Holding them weakly instead, to save the clearing stores, is wrong: in a
-- compiled trace an operand dead after the call has no stack slot, and the collector freed tensors a
-- call was still reading: tried for issue 20.)
T.test('a binary op call keeps none of its operands alive', function()
  collectgarbage(); collectgarbage()
  local before = mf.memory_stats().in_use
  do
    local p, q = mf.ones(512, 512), mf.ones(512, 512)  -- 1 MB each
    local r = p + q
    T.eq(r[{512, 512}], 2, 'sum')
    mf.fill(p, 3)
    T.eq(p[{1, 1}], 3, 'fill')
  end
  collectgarbage(); collectgarbage()
  T.eq(mf.memory_stats().in_use - before, 0, 'bytes still in use after the operands are dropped')
end)

-- fill's value operand is one scratch tensor per (device, dtype), rewritten per call (tensor.lua):
-- each value lands, as the dtype holds it, after the same value and after another, and another
-- dtype has a scratch of its own.
T.test('fill after fill: each value as the dtype holds it', function()
  local a, b, c = mf.zeros(3), mf.zeros(2, {dtype = 'float64'}), mf.zeros(2, {dtype = 'int32'})
  for _, v in ipairs{1.5, 1.5, 0.1, 0.1, -2, 1.5} do
    a:fill(v)
    b:fill(v * 2)
    T.tensor_eq(a, {v, v, v}, 1e-7, 'float32 fill ' .. v)  -- 0.1 as float32: within 1.5e-9 of 0.1
    T.eq(b[{2}], v * 2, 'float64 fill ' .. v * 2)
  end
  c:fill(7)
  a:fill(0.25)
  T.eq(c[{1}], 7, 'int32 fill')
  T.eq(a[{3}], 0.25, 'float32 fill 0.25')
  a:fill(0.1)
  local f32 = require('ffi').new('float[1]', 0.1)[0]
  T.eq(a[{2}], f32, 'float32 fill 0.1 is 0.1 rounded to float32')
end)

T.finish()
