-- Eager autograd and in-place writes (lua/moonflow/tape.lua): writes that would drop history are
-- errors, the storage's native version counter sees every writer (write ops and their state buffers,
-- element writes, apply/map, graph sessions), only what a gradient rule reads is checked, views for
-- row writes are not recorded, Torch7's m:backward reuses the forward's tape, grad of grad through
-- views, and the argument checks of .grad, backward and autograd.grad. Expected values by hand.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local C = require 'moonflow.ffi_abi'

local function f64(data) return mf.tensor(data, {dtype = 'float64', requires_grad = true}) end
local function c64(data) return mf.tensor(data, 'float64') end

T.test('an in-place op reading a tensor that requires grad is an error naming the op and the input', function()
  local W = f64({1, 2, 3})
  local y = mf.zeros({3}, {dtype = 'float64'})
  T.errors(function() y:add_(W) end, 'add_', 'input 2', 'requires grad')
  T.errors(function() y:copy(W * 1) end, 'copy', 'input 2', 'requires grad')
  local z = mf.zeros({2, 3}, {dtype = 'float64'})
  T.errors(function() z[1] = W end, 'index assignment', 'input 2', 'requires grad')
  T.tensor_eq(y, {0, 0, 0}, 0, 'nothing written')
  -- the out-of-place form gives the right gradient: d/dW sum((0 + W) * W) = 2W
  local y2 = y + W
  mf.sum(y2 * W):backward()
  T.tensor_eq(W.grad, {2, 4, 6})
  -- under no_grad the write is a plain value copy
  mf.no_grad(function() y:add_(W) end)
  T.tensor_eq(y, {1, 2, 3})
end)

T.test('optimizer steps write parameters in grad mode (they run under no_grad)', function()
  for _, case in ipairs{{'SGD', {lr = 0.5, momentum = 0.9}, {{0.5, 1.5, 2.5}}},
                        {'Adam', {lr = 0.1}, {{0.9, 1.9, 2.9}}}} do
    local lin = mf.nn.Linear(3, 1, {bias = false}):double()
    mf.no_grad(function() lin.weight.data:copy(c64({{1, 2, 3}})) end)
    local opt = mf.optim[case[1]](lin:parameters(), case[2])
    mf.sum(lin(c64({{1, 1, 1}}))):backward()  -- grad {{1, 1, 1}}
    opt:step()
    -- SGD: buf = g, w -= 0.5 g; Adam's first step moves each weight by lr (m_hat / sqrt(v_hat) = 1)
    T.tensor_eq(lin.weight.data, case[3], 1e-6, case[1])
  end
end)

T.test('an optimizer update counts the writes of its state buffers (momentum, Adam moments)', function()
  local x = f64({3, 4})
  local acc = c64({1, 2})                 -- read by mul's rule as input 2
  local y = mf.sum(x * acc)
  local w, g, lr = c64({0, 0}), c64({1, 1}), c64({0.1})
  mf.no_grad(function() mf.momentum_update(w, acc, g, lr, {momentum = 0.9}) end)
  T.errors(function() y:backward() end, "op 'mul'", "by op 'momentum_update'", 'input 2')
  local m2 = c64({1, 2})
  local y2 = mf.sum(x * m2)
  mf.no_grad(function()
    mf.adam_update(c64({0, 0}), c64({0, 0}), m2, c64({1, 1}), c64({1}), c64({0.1}))  -- m2 is v
  end)
  T.errors(function() y2:backward() end, "op 'mul'", "by op 'adam_update'")
end)

T.test('the version counter lives in the storage: views, apply, map and element writes count', function()
  local base = c64({1, 2, 3})
  local v = base:narrow(1, 2, 2)
  local n0 = tonumber(C.mf_storage_version(base, nil))
  v:fill(0)
  T.eq(tonumber(C.mf_storage_version(base, nil)), n0 + 1, 'a write through a view counts for the base')
  base:set(1, 7)
  T.eq(tonumber(C.mf_storage_version(v, nil)), n0 + 2, 'set counts, seen from the view')
  local x = f64({1, 2, 3})
  local y = mf.sum(mf.sin(x))
  mf.no_grad(function() x:apply(function() return 0 end) end)
  T.errors(function() y:backward() end, "op 'sin'", "by 'apply'")
  local y2 = mf.sum(mf.sin(x))
  mf.no_grad(function() x:map(c64({1, 1, 1}), function(a, b) return a + b end) end)
  T.errors(function() y2:backward() end, "op 'sin'", "by 'map'")
end)

T.test('a graph session that updates a parameter makes a recorded backward through it an error', function()
  mf.manual_seed(3)
  local m = mf.nn.Linear(2, 1)
  local x, t = mf.randn(4, 2), mf.randn(4, 1)
  local hx = x:clone():requires_grad_()
  local out = mf.sum(m(hx))
  mf.fit{model = m, loss = mf.nn.MSELoss(), optimizer = mf.optim.SGD(m:parameters(), 0.5), epochs = 1, quiet = true,
    mode = 'graph', data = mf.data.TensorDataset(x, t):loader{batch = 4}}
  T.errors(function() out:backward() end, 'modified in place', "by op 'sgd_update'")
end)

T.test('only what a gradient rule reads is checked', function()
  local x = f64({1, 2})
  local y = x + 1
  y:detach():fill(0)              -- add's rule reads neither its inputs' values nor its output
  mf.sum(y * 1):backward()
  T.tensor_eq(x.grad, {1, 1})
  local b = f64({1, 2})
  local out = mf.ones({2}, {dtype = 'float64'}) + b
  mf.no_grad(function() b:add_(1) end)  -- a bias updated under no_grad
  mf.sum(out):backward()
  T.tensor_eq(b.grad, {1, 1})
  local e = f64({0, 1})
  local ye = mf.sum(mf.exp(e))   -- exp's rule reads its output only
  mf.no_grad(function() e:fill(5) end)
  ye:backward()
  T.tensor_eq(e.grad, {1, math.exp(1)}, 1e-12)
  -- narrow's rule uses x for its shape only (pad_like's like): a write to x after narrow is fine
  local x2 = f64({1, 5, 2})
  local n = mf.narrow(x2, 1, 2, 2)
  mf.no_grad(function() x2:fill(7) end)
  mf.sum(n * 2):backward()
  T.tensor_eq(x2.grad, {0, 2, 2})
  -- max's rule reads its output (broadcast_like(y, x) reads y's values): still checked
  local x3 = f64({1, 5, 2})
  local m = mf.max(x3)
  m:detach():fill(0)
  T.errors(function() mf.sum(m * 1):backward() end, "output 1 of op 'max'", "by op 'fill'")
end)

T.test('row writes on a parameter are plain writes; on a recorded result they name the base op', function()
  local W = f64({{1, 2}, {3, 4}})
  W[1] = 0
  W[{2}] = 5
  T.tensor_eq(W, {{0, 0}, {5, 5}})
  local lin = mf.nn.Linear(2, 2):double()
  lin.weight.data[1] = 0
  T.tensor_eq(lin.weight.data[1], {0, 0})
  T.eq(lin.weight.data:requires_grad(), true)
  local h = W * 2
  T.errors(function() h[1] = 0 end, 'index assignment', "computed by op 'mul'")
  T.errors(function() h[{1, 1}] = 0 end, 'index assignment', "computed by op 'mul'")
  T.errors(function() h:set(1, 1, 0) end, 'set', "computed by op 'mul'")
  mf.no_grad(function() h[1] = 0 end)  -- allowed under no_grad; the version counter sees it
  T.tensor_eq(h, {{0, 0}, {10, 10}})
end)

T.test('mf.tensor(t, {requires_grad = true}) of a tensor with history is a new leaf', function()
  local x = f64({1, 2})
  local t = mf.tensor(x * 2, {requires_grad = true})
  T.eq(t:is_leaf(), true)
  T.eq(t:requires_grad(), true)
  mf.sum(t * t):backward()
  T.tensor_eq(t.grad, {4, 8})
  T.eq(x.grad, nil)
end)

T.test("Torch7's m:backward reuses the forward's tape (Dropout's mask, BatchNorm's statistics once)", function()
  mf.manual_seed(7)
  local d = mf.nn.Dropout(0.5)
  local x = mf.ones({200}, {dtype = 'float64'})
  local y = d:forward(x)
  local gx = d:backward(x, mf.ones({200}, {dtype = 'float64'}))
  T.tensor_eq(gx, y:totable(), 0, 'the gradient uses the forward mask (x = 1: y is mask / (1 - p))')
  local bn = mf.nn.BatchNorm1d(2):double()
  local xb = c64({{1, 2}, {3, 4}})
  bn:forward(xb)
  bn:backward(xb, mf.ones({2, 2}, {dtype = 'float64'}))
  T.tensor_eq(bn.running_mean.data, {0.2, 0.3}, 1e-12, 'running_mean = 0.9 * 0 + 0.1 * {2, 3}, once')
  T.errors(function() bn:backward(xb, mf.ones({2, 2}, {dtype = 'float64'})) end, 'no recorded forward')  -- once
  bn:forward(xb)  -- the output is dropped: the tape goes with it
  collectgarbage()
  collectgarbage()
  T.errors(function() bn:backward(xb, mf.ones({2, 2}, {dtype = 'float64'})) end, 'keep its output until backward')
  -- a forward that reads its input in place still runs; only m:backward refuses, naming the op
  local Keep = mf.nn.Module('KeepInput')
  function Keep:forward(x)
    self.buf = mf.zeros_like(x)
    self.buf:copy(x)
    return self.buf * 2
  end
  local k = Keep()
  local xk = c64({1, 2})
  T.tensor_eq(k:forward(xk), {2, 4})
  T.errors(function() k:backward(xk, c64({1, 1})) end, "in-place op 'copy'", 'incomplete')
  local Same = mf.nn.Module('Same')
  function Same:forward(x) return x end
  T.eq(rawequal(Same():forward(xk), xk), true, 'a module returning its input returns the caller\'s tensor')
end)

T.test('grad of grad through narrow, select and slice (pad_like has a gradient)', function()
  local x = f64({1, 2, 3})
  local s = mf.sum(mf.pow(mf.narrow(x, 1, 2, 2), 3))
  local g = mf.autograd.grad(s, x, nil, {create_graph = true})[1]
  T.tensor_eq(g, {0, 12, 27})                     -- 3 x^2 at positions 2, 3
  mf.sum(g):backward()
  T.tensor_eq(x.grad, {0, 12, 18})                -- 6 x there
  local z = f64({{1, 2}, {3, 4}})
  local gz = mf.autograd.grad(mf.sum(mf.pow(mf.select(z, 1, 2), 2)), z, nil, {create_graph = true})[1]
  T.tensor_eq(gz, {{0, 0}, {6, 8}})
  mf.sum(gz):backward()
  T.tensor_eq(z.grad, {{0, 0}, {2, 2}})
  local w = f64({1, 2, 3, 4, 5})
  local gw = mf.autograd.grad(mf.sum(mf.pow(mf.slice(w, 1, 1, 5, 2), 2)), w, nil, {create_graph = true})[1]
  T.tensor_eq(gw, {2, 0, 6, 0, 10})
  mf.sum(gw):backward()
  T.tensor_eq(w.grad, {2, 0, 2, 0, 2})
  -- an op without a gradient rule on the second-order path is a clear error
  local c = f64({1, 2, 3})
  local gc = mf.autograd.grad(mf.sum(mf.cumprod(c, 1)), c, nil, {create_graph = true})[1]
  T.errors(function() mf.sum(gc):backward() end, "op 'cumprod_grad'", 'has no gradient')
end)

T.test('.grad, seeds and autograd.grad check their arguments', function()
  local x = f64({{1, 2, 3}, {4, 5, 6}})
  T.errors(function() x.grad = mf.zeros({3, 2}, {dtype = 'float64'}) end, 'value is 3x2', 'expected', '2x3 float64')
  T.errors(function() x.grad = mf.zeros({2, 3}) end, 'value is 2x3 float32', '2x3 float64')
  local y = x * 2
  T.errors(function() y:backward(mf.ones({2, 3})) end, 'float32', "output's dtype float64")
  T.errors(function() y:backward() end, '6 elements', "computed by op 'mul'")
  local lin = mf.nn.Linear(2, 1, {bias = false}):double()
  mf.no_grad(function() lin.weight.data:copy(c64({{1, 2}})) end)
  local l = mf.sum(lin(c64({{3, 4}})))
  local gs = mf.autograd.grad(l, lin:parameters())  -- Parameters stand for their tensors
  T.tensor_eq(gs[1], {{3, 4}})
  local a, b = f64({1}), f64({2})
  T.errors(function() mf.autograd.grad(mf.sum(a * 3), {a, b}) end, 'inputs[2]', 'allow_unused = true')
  local r = mf.autograd.grad(mf.sum(a * 3), {a, b}, {allow_unused = true})
  T.tensor_eq(r[1], {3})
  T.eq(r[2], nil)
end)

T.test('a header shared into a fresh tensor carries no autograd flag', function()
  local x = mf.tensor({1, 2}, {requires_grad = true})
  T.eq(x._autograd, 1)
  local t = mf.Tensor(x)
  T.eq(t._autograd, 0)
  T.eq(t:requires_grad(), false)
  T.eq(x:detach()._autograd, 0)
end)

T.finish()
