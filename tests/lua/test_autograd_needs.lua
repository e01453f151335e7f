-- The gradient contract's needs argument (autodiff.lua, tape.lua): a rule learns which input
-- gradients are wanted, and the expensive rules (matmul, mm, conv2d, batch_norm ...) skip the others.
-- The tape must not compute the gradient of a network's input (an input leaf nobody collects) nor
-- of a tensor that requires no grad; graph mode passes what depends on xs. Counted through mf.matmul
-- calls made by the rules; expected values by hand.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

-- runs fn counting the calls of mf.<name> (the rules look the op up at call time)
local function counting(name, fn)
  local orig, n = mf[name], 0
  mf[name] = function(...) n = n + 1 return orig(...) end
  local ok, err = pcall(fn)
  mf[name] = orig
  if not ok then error(err, 0) end
  return n
end

T.test('the tape computes no gradient for an input that requires none', function()
  local x = mf.tensor({{1, 2}, {3, 4}}, 'float64')                       -- no grad
  local W = mf.tensor({{1, 0}, {0, 2}}, {dtype = 'float64', requires_grad = true})
  local loss = mf.sum(mf.matmul(x, W))
  T.eq(counting('matmul', function() loss:backward() end), 1, 'only the weight term')
  -- d/dW sum(x W) = x^T 1: column sums of x, per column of W
  T.tensor_eq(W.grad, {{4, 4}, {6, 6}})
end)

T.test("a module's eager forward: its input leaf gets no gradient unless m:backward collects it", function()
  mf.manual_seed(3)
  local m = mf.nn.Linear(3, 2)
  local x = mf.ones(4, 3)
  local loss = m(x):sum()
  T.eq(counting('matmul', function() loss:backward() end), 1, 'backward: the weight term only')
  T.tensor_eq(m.bias.grad, {4, 4})
  T.tensor_eq(m.weight.grad, {{4, 4, 4}, {4, 4, 4}})
  -- Torch7's m:backward wants the input's gradient: both terms; d/dx sum(x W^T + b) = 1 W
  local y = m:forward(x)
  local gx
  T.eq(counting('matmul', function() gx = m:backward(x, mf.ones(4, 2)) end), 2, 'm:backward: both terms')
  local w = m.weight.data
  local col = mf.sum(w, 1)
  for i = 1, 4 do for j = 1, 3 do T.near(gx[i][j], col[j], 1e-6) end end
  T.eq(y:size(1), 4)
end)

T.test('autograd.grad: only the targets (and the way to them) get gradient terms', function()
  local a = mf.tensor({{1, 2}}, {dtype = 'float64', requires_grad = true})
  local b = mf.tensor({{3}, {4}}, {dtype = 'float64', requires_grad = true})
  local y = mf.matmul(a, b)
  local g
  T.eq(counting('matmul', function() g = mf.autograd.grad(y, {b}, nil, {retain_graph = true}) end), 1)
  T.tensor_eq(g[1], {{1}, {2}})
  T.eq(counting('matmul', function() g = mf.autograd.grad(y, {a, b}) end), 2)
  T.tensor_eq(g[1], {{3, 4}})
  T.tensor_eq(g[2], {{1}, {2}})
end)

T.test('graph mode passes needs too: mf.gradients builds only the wanted terms', function()
  local a = mf.placeholder('float64', {2, 3}, 'a')
  local b = mf.placeholder('float64', {3, 2}, 'b')
  local y = mf.sum(mf.matmul(a, b))
  local gb
  T.eq(counting('matmul', function() gb = mf.gradients(y, {b})[1] end), 1, 'the term of b only')
  local out = mf.Session():run(gb, {[a] = mf.tensor({{1, 2, 3}, {4, 5, 6}}, 'float64'),
                                    [b] = mf.zeros({3, 2}, {dtype = 'float64'})})
  T.tensor_eq(out, {{5, 5}, {7, 7}, {9, 9}})
end)

T.test('conv2d and batch_norm skip the input term of an input that requires none', function()
  mf.manual_seed(5)
  local x = mf.randn(2, 1, 4, 4):double()
  local w = mf.randn(2, 1, 3, 3):double():requires_grad_()
  local loss = mf.sum(mf.conv2d(x, w))
  T.eq(counting('conv2d_backward_input', function() loss:backward() end), 0)
  -- d/dw sum(conv2d(x, w)) = the sum over the batch of each 2x2 window sum of x at each tap
  local ref = mf.zeros(2, 1, 3, 3):double()
  for o = 1, 2 do for i = 1, 3 do for j = 1, 3 do
    ref[o][1][i][j] = mf.sum(mf.narrow(mf.narrow(x, 3, i, 2), 4, j, 2)):item()
  end end end
  T.tensor_eq(w.grad, ref:totable(), 1e-9)
  local wt = mf.ones(1):double():requires_grad_()
  local bt = mf.zeros(1):double():requires_grad_()
  local l2 = mf.sum(mf.batch_norm(x, wt, bt) * 2)
  T.eq(counting('rsqrt', function() l2:backward() end), 1)  -- the rule's own statistics only
  T.near(bt.grad[1], 64, 1e-9)   -- d/db sum(2 y) = 2 * 32 elements
  T.near(wt.grad[1], 0, 1e-9)    -- sum(xhat) = 0
end)

T.finish()
