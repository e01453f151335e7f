-- Eager autograd (lua/moonflow/tape.lua): gradients of tensor code through loss:backward() and
-- mf.autograd.grad, against hand-computed values; grad mode, detach, misuse errors (int tensors,
-- backward twice, in-place writes to saved tensors), accumulation, grad of grad. Every op's tape
-- gradient against finite differences is test_gradients.lua's tape mode.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local function f64(data) return mf.tensor(data, {dtype = 'float64', requires_grad = true}) end
local function c64(data) return mf.tensor(data, 'float64') end

T.test('d/dx of sum(x*x + 3x) is 2x + 3', function()
  local x = f64({1, 2, -3})
  T.eq(x:requires_grad(), true)
  T.eq(x.grad, nil, 'grad before backward')
  local loss = mf.sum(x * x + x * 3)
  T.eq(loss:requires_grad(), true)
  T.eq(loss:is_leaf(), false)
  loss:backward()
  T.tensor_eq(x.grad, {5, 7, -3})
end)

T.test('broadcast add of 2x3 and 3: the 3-vector gets column sums', function()
  local a = f64({{1, 2, 3}, {4, 5, 6}})
  local b = f64({10, 20, 30})
  local w = c64({{1, 2, 3}, {4, 5, 6}})
  mf.sum((a + b) * w):backward()
  T.tensor_eq(a.grad, {{1, 2, 3}, {4, 5, 6}})
  T.tensor_eq(b.grad, {5, 7, 9})
end)

T.test('two leaves handed one shared gradient get tensors of their own', function()
  local a, b = f64({1, 2}), f64({3, 4})
  local seed = c64(5)
  mf.sum(a + b):backward(seed)
  a.grad:add_(10)  -- must not show in b.grad or in the caller's seed
  T.tensor_eq(a.grad, {15, 15})
  T.tensor_eq(b.grad, {5, 5})
  T.eq(seed:item(), 5)
end)

T.test('matmul gradients against hand values', function()
  local A = f64({{1, 2}, {3, 4}})
  local B = f64({{5, 6}, {7, 8}})
  mf.sum(mf.matmul(A, B)):backward()
  T.tensor_eq(A.grad, {{11, 15}, {11, 15}})  -- ones @ B^T: row sums of B
  T.tensor_eq(B.grad, {{4, 4}, {6, 6}})      -- A^T @ ones: column sums of A
end)

T.test('a tensor used twice, views and float32', function()
  local x = mf.tensor({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true})
  -- y = sum(x^T * x^T) + sum(narrow(x, 2, 2, 2)): 2x, plus 1 on columns 2..3
  local y = mf.sum(x:t() * x:t()) + mf.sum(mf.narrow(x, 2, 2, 2))
  y:backward()
  T.tensor_eq(x.grad, {{2, 5, 7}, {8, 11, 13}})
  T.eq(x.grad:dtype(), 'float32')
end)

T.test('gradients accumulate over two backward calls', function()
  local x = f64({1, 2})
  mf.sum(x * x):backward()
  mf.sum(x * 5):backward()
  T.tensor_eq(x.grad, {7, 9})
  x.grad = nil
  T.eq(x.grad, nil)
  mf.sum(x * 5):backward()
  T.tensor_eq(x.grad, {5, 5})
  T.errors(function() x.grad = c64({1, 2, 3}) end, 't.grad = value', 'value is 3', "tensor's shape and dtype, 2 float64")
  T.errors(function() x.grad = 5 end, 'value is a number')
  T.eq(c64({1}).grad, nil, '.grad of a tensor that never required grad')
  T.errors(function() return x.no_such_field end, "no method or field 'no_such_field'")
end)

T.test('multi-output ops: sort values and max over a dim', function()
  local x = f64({3, 1, 2})
  local v, idx = mf.sort(x)
  T.eq(idx:requires_grad(), false, 'indices require grad')
  mf.sum(v * c64({10, 20, 30})):backward()
  T.tensor_eq(x.grad, {30, 10, 20})
  local m = f64({{1, 5}, {7, 2}})
  local mx = mf.max(m, 2)
  mf.sum(mx):backward()
  T.tensor_eq(m.grad, {{0, 1}, {1, 0}})
end)

T.test('a Lua-registered op with a gradient is differentiated on the tape', function()
  mf.register_op{name = 'tape_cube', num_inputs = 1, doc = 'x^3 (test op)', infer_shape = 'same',
    gradient = 'function(x, y, gy) return {gy * x * x * 3} end',
    lua_compute = [[ function(ins, outs, p)
      return function()
        local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do local v = xp[i]; yp[i] = v * v * v end
      end end ]]}
  local x = f64({1, -2})
  mf.sum(mf.tape_cube(x)):backward()
  T.tensor_eq(x.grad, {3, 12})
  -- a gradient given as a Lua function (held by this engine)
  mf.register_op{name = 'tape_twice', num_inputs = 1, doc = '2x (test op)', infer_shape = 'same',
    gradient = function(_, _, gy) return {gy * 2} end,
    lua_compute = [[ function(ins, outs, p)
      return function()
        local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do yp[i] = 2 * xp[i] end
      end end ]]}
  local z = f64({1, 2})
  mf.sum(mf.tape_twice(z) * z):backward()  -- d/dz sum(2 z^2) = 4z
  T.tensor_eq(z.grad, {4, 8})
end)

T.test('no_grad, set_grad_enabled, detach', function()
  local x = f64({1, 2})
  local y, flag = mf.no_grad(function(a) return a * 2, mf.is_grad_enabled() end, x)
  T.eq(flag, false, 'grad mode inside no_grad')
  T.eq(mf.is_grad_enabled(), true, 'grad mode after no_grad')
  T.eq(y:requires_grad(), false)
  T.errors(function() mf.no_grad(function() error('boom') end) end, 'boom')
  T.eq(mf.is_grad_enabled(), true, 'grad mode after a failing no_grad')
  T.eq(mf.set_grad_enabled(false), true)
  T.eq((x * 2):requires_grad(), false)
  mf.set_grad_enabled(true)
  T.eq((x * 2):requires_grad(), true)
  local d = x:detach()
  T.eq(d:requires_grad(), false)
  T.tensor_eq(d, {1, 2})
  d:set(1, 9)  -- shares storage
  T.eq(x:get(1), 9)
  x:requires_grad_(false)
  T.eq(x:requires_grad(), false)
  T.eq((x * 2):requires_grad(), false)
end)

T.test('requires_grad on factories; integer tensors refuse it', function()
  for _, t in ipairs{mf.zeros(2, 3, {requires_grad = true}), mf.ones({2}, {requires_grad = true, dtype = 'float64'}),
                     mf.randn(2, {requires_grad = true}), mf.rand(2, {requires_grad = true}),
                     mf.arange(0, 5, {requires_grad = true}), mf.eye(3, {requires_grad = true}),
                     mf.full({2, 2}, 3, {requires_grad = true})} do
    T.eq(t:requires_grad(), true)
  end
  T.eq(mf.zeros(2, {requires_grad = false}):requires_grad(), false)
  T.errors(function() mf.tensor({1, 2}, {dtype = 'int64', requires_grad = true}) end, 'requires_grad',
    'only floating-point', 'this one is int64 of size 2')
  T.errors(function() mf.zeros(2, {dtype = 'int32', requires_grad = true}) end, 'only floating-point', 'int32')
  T.errors(function() mf.tensor({1, 2}, 'int32'):requires_grad_() end, 'only floating-point')
end)

T.test('backward misuse: non-scalar without grad, wrong grad shape, no history', function()
  local x = f64({1, 2})
  local y = x * 2
  T.errors(function() y:backward() end, 'backward', 'implicit only for a 1-element output', '2 elements')
  T.errors(function() y:backward(c64({1, 2, 3})) end, 'backward', 'gradient for output 1 is 3',
    "expected the output's shape 2")
  y:backward(c64({1, 10}))
  T.tensor_eq(x.grad, {2, 20})
  T.errors(function() c64({1}):backward() end, 'does not require grad')
  T.near((x * 1):sum():item(), 3)  -- the engine keeps working
end)

T.test('a second backward through a freed tape names retain_graph', function()
  local x = f64({0.5})
  local y = mf.sum(mf.tanh(x))
  y:backward()
  T.errors(function() y:backward() end, 'backward', "op 'sum'", 'freed', 'retain_graph = true')
  local z = mf.sum(mf.tanh(x))
  x.grad = nil
  z:backward({retain_graph = true})
  z:backward()
  local th = math.tanh(0.5)
  T.near(x.grad:item(), 2 * (1 - th * th), 1e-12)
end)

T.test('an in-place write to a saved tensor is an error at backward naming both ops', function()
  local x = f64({1, 2})
  local c = c64({3, 4})
  local y = mf.sum(x * c)
  c:fill(7)
  T.errors(function() y:backward() end, 'backward', "op 'mul'", "modified in place by op 'fill'", 'input 2')
  local y2 = mf.sum(mf.sin(x))  -- sin's rule reads x
  x[1] = 5
  T.errors(function() y2:backward() end, "op 'sin'", "by 'index assignment'")
  local y3 = mf.sum(mf.sin(x))
  mf.no_grad(function() mf.narrow(x, 1, 2, 1):copy(c64({1})) end)  -- a write through a view counts for the base
  T.errors(function() y3:backward() end, "op 'sin'", "by op 'copy'")
  local y4 = mf.sum(x * x)  -- recorded after the writes: fine
  y4:backward()
  T.tensor_eq(x.grad, {10, 2})
  local h = x * 2
  T.errors(function() h:add_(1) end, 'add_', "computed by op 'mul'", 'mf.no_grad')
end)

T.test('autograd.grad returns gradients without touching .grad', function()
  local x, w = f64({1, 2}), f64({3, 4})
  local g = mf.autograd.grad(mf.sum(x * w), {x, w})
  T.tensor_eq(g[1], {3, 4})
  T.tensor_eq(g[2], {1, 2})
  T.eq(x.grad, nil)
  local h = x * 3
  local gh = mf.autograd.grad(mf.sum(h * h), h)  -- a non-leaf input
  T.tensor_eq(gh[1], {6, 12})
  local y = f64({1}) * 2
  T.errors(function() mf.autograd.grad(mf.sum(x), {x, y}) end, 'inputs[2] (1) is not used', 'allow_unused = true')
  T.eq(mf.autograd.grad(mf.sum(x), {x, y}, {allow_unused = true})[2], nil, 'an input the outputs do not reach')
end)

T.test('grad of grad with create_graph: x^3 and tanh', function()
  local x = f64({2})
  local g = mf.autograd.grad(mf.sum(x * x * x), x, nil, {create_graph = true})[1]
  T.near(g:item(), 12, 1e-12)
  T.eq(g:requires_grad(), true)
  local gg = mf.autograd.grad(mf.sum(g), x)[1]
  T.near(gg:item(), 12, 1e-12)  -- 6x
  local t = f64({0.3})
  local g1 = mf.autograd.grad(mf.sum(mf.tanh(t)), t, nil, {create_graph = true})[1]
  mf.sum(g1):backward()
  local th = math.tanh(0.3)
  T.near(t.grad:item(), -2 * th * (1 - th * th), 1e-12)
  -- a gradient penalty: d/dw of |d(w.x)/dx|^2 = d/dw |w|^2 = 2w
  local w, xx = f64({1, -2}), f64({0.5, 0.5})
  local gx = mf.autograd.grad(mf.sum(w * xx), xx, nil, {create_graph = true})[1]
  mf.sum(gx * gx):backward()
  T.tensor_eq(w.grad, {2, -4}, 1e-12)
end)

T.test('a gradient penalty through a ReLU layer (relu_backward has a gradient) against finite differences', function()
  local w0 = {{0.5, -1.2, 0.3}, {0.8, 0.4, -0.7}}
  local x = c64({{1.0, 2.0}, {-0.5, 1.5}})
  local c = c64({{1, -2, 0.5}, {0.3, 1, -1}})
  local function penalty(w, create)
    local xr = x:detach():requires_grad_()
    local y = mf.sum(mf.relu(mf.matmul(xr, w)) * c)
    local gx = mf.autograd.grad(y, xr, nil, {create_graph = create})[1]
    return mf.sum(gx * gx)
  end
  local w = f64(w0)
  penalty(w, true):backward()
  local h = 1e-6
  for i = 1, 2 do
    for j = 1, 3 do
      local wp, wm = c64(w0), c64(w0)
      wp:set(i, j, w0[i][j] + h)
      wm:set(i, j, w0[i][j] - h)
      local num = (penalty(wp:requires_grad_(), false):item() - penalty(wm:requires_grad_(), false):item()) / (2 * h)
      T.near(w.grad:get(i, j), num, 1e-6, ('d penalty / d w[%d][%d]'):format(i, j))
    end
  end
end)

T.test('an unrecorded call after a recorded one keeps no flag on its outputs', function()
  local x = f64({1, 2})
  local v = mf.narrow(x, 1, 1, 1)  -- a view op bound with a flagged input
  T.eq(v:requires_grad(), true)
  local p = c64({1, 2})
  T.eq(mf.narrow(p, 1, 1, 1):requires_grad(), false)
  T.eq(mf.no_grad(mf.narrow, x, 1, 1, 1):requires_grad(), false)
end)

T.test('modules: parameters require grad; backward fills .grad; zero_grad; opt:step reads .grad', function()
  local l = mf.nn.Linear(2, 1):double()
  l.weight.data:copy(c64({{1, 2}}))
  l.bias.data:copy(c64({0.5}))
  T.eq(l.weight.data:requires_grad(), true)
  T.eq(l.weight.data:dtype(), 'float64')
  local x = c64({{1, 1}, {2, 3}})
  -- loss = sum(x W^T + b) over 2 rows: dW = column sums of x = {3, 4}, db = 2
  mf.sum(l(x)):backward()
  T.tensor_eq(l.weight.grad, {{3, 4}})
  T.tensor_eq(l.bias.grad, {2})
  local opt = mf.optim.SGD(l:parameters(), {lr = 0.1})
  opt:step()
  T.tensor_eq(l.weight.data, {{0.7, 1.6}}, 1e-12)
  T.tensor_eq(l.bias.data, {0.3}, 1e-12)
  l:zero_grad()
  T.tensor_eq(l.weight.grad, {{0, 0}})
  opt:zero_grad()
  T.eq(l.weight.grad, nil)
  opt:step()  -- no gradients: nothing moves
  T.tensor_eq(l.bias.data, {0.3}, 1e-12)
end)

T.test('model:double()/float()/type() convert in place, keeping each Parameter and its grad', function()
  local m = mf.nn.Sequential{mf.nn.Linear(3, 2), mf.nn.ReLU(), mf.nn.Linear(2, 1)}
  local w = m:parameters()[1]
  mf.sum(m(mf.ones(4, 3))):backward()
  m:double()
  T.eq(m:parameters()[1], w, 'the same Parameter')
  T.eq(w.data:dtype(), 'float64')
  T.eq(w.grad:dtype(), 'float64')
  T.eq(w.data:requires_grad(), true)
  T.eq(m:type(), 'float64')
  mf.sum(m(mf.ones(4, 3, {dtype = 'float64'}))):backward()
  m:float()
  T.eq(w.data:dtype(), 'float32')
  T.errors(function() m:type('int32') end, 'floating dtype only')
end)

T.test('getParameters: backward accumulates into the flat gradient', function()
  local l = mf.nn.Linear(2, 1):double()
  local flat, gflat = l:getParameters()
  flat:copy(c64({1, 2, 0.5}))
  l:zeroGradParameters()
  mf.sum(l(c64({{1, 1}, {2, 3}}))):backward()
  T.tensor_eq(gflat, {3, 4, 2})
  mf.sum(l(c64({{1, 0}}))):backward()
  T.tensor_eq(gflat, {4, 4, 3})
end)

T.test('module:backward(input, grad_output) returns the input gradient (Torch7)', function()
  local l = mf.nn.Linear(2, 3, {bias = false}):double()
  l.weight.data:copy(c64({{1, 2}, {3, 4}, {5, 6}}))
  local x = c64({{1, 1}})
  T.errors(function() l:backward(x, c64({{1, 0, 2}})) end, 'no recorded forward', 'Linear:forward(input)')
  l:forward(x)
  local gx = l:backward(x, c64({{1, 0, 2}}))
  T.tensor_eq(gx, {{11, 14}})               -- gy W
  T.tensor_eq(l.weight.grad, {{1, 1}, {0, 0}, {2, 2}})  -- gy^T x
end)

T.test('10,000 forward+backward steps of a small MLP keep memory flat', function()
  mf.manual_seed(5)
  local m = mf.nn.Sequential{mf.nn.Linear(8, 16), mf.nn.ReLU(), mf.nn.Linear(16, 3)}
  local opt = mf.optim.SGD(m:parameters(), {lr = 0.01, momentum = 0.9})
  local crit = mf.nn.CrossEntropyLoss()
  local x, y = mf.randn(4, 8), mf.tensor({1, 2, 3, 1}, 'int64')
  local function step()
    opt:zero_grad()
    local loss = crit(m(x), y)
    loss:backward()
    opt:step()
    return loss
  end
  -- warm-up: bind caches fill and (bounded) turn over once in the first few hundred steps
  for _ = 1, 1000 do step() end
  collectgarbage(); collectgarbage()
  local s0, l0 = mf.memory_stats(), collectgarbage('count')
  for _ = 1, 10000 do step() end
  collectgarbage(); collectgarbage()
  local s1 = mf.memory_stats()
  assert(s1.in_use <= s0.in_use, ('allocator bytes in use grew from %d to %d'):format(s0.in_use, s1.in_use))
  assert(s1.live_blocks <= s0.live_blocks, ('live blocks grew from %d to %d'):format(s0.live_blocks, s1.live_blocks))
  assert(collectgarbage('count') < l0 + 2048, ('Lua heap grew from %d to %d KB'):format(l0, collectgarbage('count')))
  assert(step():item() < 0.05, 'the MLP fits its 4 samples')
end)

T.test("mf.fit mode = 'eager' gives the losses of mode = 'graph'", function()
  mf.manual_seed(11)
  local xs = mf.randn(64, 6)
  local ys = mf.argmax(mf.narrow(xs, 2, 1, 3), 2)  -- learnable labels 1..3
  local function run(mode)
    mf.manual_seed(3)
    local m = mf.nn.Sequential{mf.nn.Linear(6, 8), mf.nn.Tanh(), mf.nn.Linear(8, 3)}
    local opt = mf.optim.SGD(m:parameters(), {lr = 0.1, momentum = 0.9})
    local losses = {}
    mf.fit{model = m, loss = mf.nn.CrossEntropyLoss(), optimizer = opt, epochs = 2, quiet = true, mode = mode,
           data = mf.data.TensorDataset(xs, ys):loader{batch = 16},
           on_step = function(_, l) losses[#losses + 1] = l end}
    return losses
  end
  local g, e = run('graph'), run('eager')
  T.eq(#e, 8)
  for i = 1, #g do T.near(e[i], g[i], 1e-5, 'loss at step ' .. i) end
  assert(e[5] + e[6] + e[7] + e[8] < e[1] + e[2] + e[3] + e[4], 'the loss goes down')
  local m = mf.nn.Linear(1, 1)
  T.errors(function() mf.fit{model = m, loss = mf.nn.MSELoss(), optimizer = mf.optim.SGD(m:parameters(), 0.1),
    data = mf.data.TensorDataset(mf.zeros(2, 1), mf.zeros(2, 1)):loader{batch = 1}, mode = 'tape'} end,
    "mode is 'tape'")
end)

T.test('pow gradients at the removable singularities are 0, as PyTorch (not NaN)', function()
  -- PyTorch 1.13: d/dx x^0 = 0 everywhere; d/dy x^y at x = 0, y >= 0 is 0; at x = 0, y = -1 -inf
  local x = mf.tensor({0, 2, -1}, {requires_grad = true})
  mf.sum(mf.pow(x, 0)):backward()
  T.tensor_eq(x.grad, {0, 0, 0})
  local a = mf.tensor({0, 2, 0, 0}, {requires_grad = true, dtype = 'float64'})
  local b = mf.tensor({2, 3, 0, -1}, {requires_grad = true, dtype = 'float64'})
  mf.sum(mf.pow(a, b)):backward()
  T.tensor_eq(a.grad, {0, 12, 0, -1 / 0})
  T.tensor_eq(b.grad, {0, 8 * math.log(2), 0, -1 / 0}, 1e-12)
  -- broadcast exponent, and the graph path through the same rule
  local p = mf.placeholder('float32', {2}, 'p')
  local g = mf.gradients(mf.sum(mf.pow(p, mf.constant(mf.tensor{{0}, {1}}))), {p})[1]
  T.tensor_eq(mf.Session():run(g, {[p] = mf.tensor{0, 2}}), {1, 1})
end)

T.test('prod gradient where x has zeros is the product of the others (PyTorch), not NaN', function()
  -- rows with no zero, one zero, two zeros; first and second order recorded from PyTorch 1.13
  local x = mf.tensor({{2, 0, 3}, {1, 2, 3}, {0, 0, 1}, {0, 5, -1}}, {requires_grad = true, dtype = 'float64'})
  mf.sum(mf.prod(x, 2) * mf.tensor({1, 2, 3, 4}, 'float64')):backward()
  T.tensor_eq(x.grad, {{0, 6, 0}, {12, 6, 4}, {0, 0, 0}, {-20, 0, 0}})
  local f = mf.tensor({{2, 1, 3}, {1, 2, 3}}, {requires_grad = true})
  f:t():prod():backward()  -- all dims, through a transposed view
  T.tensor_eq(f.grad, {{18, 36, 12}, {36, 18, 12}})
  -- one zero per row: the second order is exact too
  local z = mf.tensor({{2, 0, 3}, {1, 2, 3}, {0.5, 7, 1}, {4, 5, -1}}, {requires_grad = true, dtype = 'float64'})
  local g = mf.autograd.grad(mf.sum(mf.prod(z, -1) * mf.tensor({1, 2, 3, 4}, 'float64')), z, nil, {create_graph = true})[1]
  T.tensor_eq(g, {{0, 6, 0}, {12, 6, 4}, {21, 1.5, 10.5}, {-20, -16, 80}})
  mf.sum(g * mf.arange(1, 13, {dtype = 'float64'}):reshape(4, 3)):backward()
  T.tensor_eq(z.grad, {{6, 9, 4}, {54, 36, 26}, {213, 34.5, 159}, {196, 152, 376}})
  -- the graph path runs the same rule
  local p = mf.placeholder('float32', {2, 3}, 'p')
  local gp = mf.gradients(mf.sum(mf.prod(p, 2)), {p})[1]
  T.tensor_eq(mf.Session():run(gp, {[p] = mf.tensor{{2, 0, 3}, {1, 2, 3}}}), {{0, 6, 0}, {6, 3, 2}})
  -- an inf or NaN beside a lone zero: PyTorch 1.13 gives {0, inf} and {nan, nan, 0} (the product of
  -- the others holds the zero), not NaN from dividing by the non-finite element
  local q = mf.tensor({math.huge, 0}, {requires_grad = true, dtype = 'float64'})
  q:prod():backward()
  T.eq(q.grad:totable()[1], 0)
  T.eq(q.grad:totable()[2], math.huge)
  local r = mf.tensor({2, 0, 0 / 0}, {requires_grad = true, dtype = 'float64'})
  r:prod():backward()
  local rg = r.grad:totable()
  T.eq(rg[1] ~= rg[1] and rg[2] ~= rg[2] and rg[3] == 0, true, 'prod grad of {2, 0, nan}')
end)

T.test('mf.autograd.backward takes lists, as torch.autograd.backward; lists with a nil hole are errors', function()
  local a, b = mf.ones(2, {requires_grad = true}), mf.tensor({1, 2}, {requires_grad = true})
  mf.autograd.backward({mf.sum(a * b), mf.sum(b * 3)})          -- a list raised a raw 'field ndim' error
  T.tensor_eq(a.grad, {1, 2}); T.tensor_eq(b.grad, {4, 4})
  a.grad, b.grad = nil, nil
  mf.autograd.backward({a * b}, {mf.tensor{1, 10}})
  T.tensor_eq(a.grad, {1, 20}); T.tensor_eq(b.grad, {1, 10})
  a.grad = nil
  local y = a * 2
  mf.autograd.backward({mf.sum(y), mf.sum(y * y)})             -- one pass through the shared y
  T.tensor_eq(a.grad, {10, 10})
  T.errors(function() mf.autograd.backward({mf.sum(a), nil, mf.sum(b)}) end, 'autograd.backward: tensors: item 2 is a nil')
  T.errors(function() mf.autograd.backward({}) end, 'autograd.backward: tensors is empty')
  T.errors(function() mf.autograd.grad(mf.sum(a * b), {a, nil, b}) end, 'autograd.grad: inputs: item 2 is a nil')
  local sparse = {}
  sparse[1], sparse[3] = a, b
  T.errors(function() mf.autograd.grad(mf.sum(a * b), sparse) end, 'autograd.grad: inputs: item 2 is a nil')
  -- graph mode and modules alike
  local x = mf.placeholder('float32', {2})
  local W = mf.Variable(mf.ones(2))
  T.errors(function() mf.gradients(mf.sum(x * W), {W, nil, x}) end, 'gradients: xs[2] is nil')
  T.errors(function() mf.nn.Sequential{mf.nn.Linear(2, 2), nil, mf.nn.ReLU()} end, 'nn.Sequential: element 2 is nil')
end)

T.finish()
