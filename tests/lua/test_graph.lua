-- Graph mode against hand-computed values: symbols, sessions and their executor cache, bad feeds
-- and fetches, CSE, the log(softmax) rewrite, the memory plan, variable read/assign order,
-- optimizers against float64 references of their update rules.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

T.test('symbols: shapes, printing, methods and operators', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {nil, 3}, 'x')
  T.eq(tostring(x), 'Symbol x (placeholder) ?x3 float32')
  T.eq(x:dim(), 2); T.eq(x:size(1), nil); T.eq(x:size(2), 3); T.eq(x:dtype(), 'float32')
  local W = mf.Variable(mf.ones(3, 2), 'W')
  local y = (x:matmul(W) + 1) * 2 - x:sum(2, true)
  assert(tostring(y):find('?x2 float32', 1, true), tostring(y))
  T.eq(tostring(mf.constant(mf.ones(2, 2), 'c')), 'Symbol c (constant) 2x2 float32')
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  local v = s:run(y, {[x] = mf.tensor{{1, 2, 3}, {0, 0, 1}}})
  -- x W + 1 = {7, 7} and {2, 2}; times 2 minus row sums {6, 1}
  T.tensor_eq(v, {{8, 8}, {3, 3}})
  T.errors(function() return mf.matmul(mf.placeholder('float32', {2, 3}), mf.placeholder('float32', {4, 5})) end,
    'matmul', '2x3', '4x5')   -- shapes known at build time are checked at build time
end)

T.test('session: fetch structures mirror, list fetches return several values', function()
  mf.reset_default_graph()
  local a = mf.placeholder('float64', {2}, 'a')
  local b = a * 2
  local c = a + 1
  local s = mf.Session()
  local feeds = {[a] = mf.tensor({1, 2}, 'float64')}
  local vb, vc = s:run({b, c}, feeds)
  T.tensor_eq(vb, {2, 4}); T.tensor_eq(vc, {2, 3})
  local nested = s:run({first = b, rest = {c, b}}, feeds)
  T.tensor_eq(nested.first, {2, 4}); T.tensor_eq(nested.rest[1], {2, 3}); T.tensor_eq(nested.rest[2], {2, 4})
  -- a fetched result is the caller's: the next run does not overwrite it (also beside an operation)
  local r1 = s:run(b, feeds)
  s:run(b, {[a] = mf.tensor({10, 20}, 'float64')})
  T.tensor_eq(r1, {2, 4})
  local op = mf.group{c}
  local _, r2 = s:run({op, b}, feeds)
  s:run({op, b}, {[a] = mf.tensor({10, 20}, 'float64')})
  T.tensor_eq(r2, {2, 4})
end)

T.test('executor cache: same shapes bind once, a new batch size rebinds once', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {nil, 4}, 'x')
  local y = mf.relu(x):sum(2)
  local s = mf.Session()
  s:run(y, {[x] = mf.ones(8, 4)})
  T.eq(s:stats().binds, 1)
  for _ = 1, 5 do s:run(y, {[x] = mf.ones(8, 4)}) end
  T.eq(s:stats().binds, 1); T.eq(s:stats().cache_hits, 5)
  local r = s:run(y, {[x] = mf.ones(3, 4)})
  T.tensor_eq(r, {4, 4, 4})
  T.eq(s:stats().binds, 2)
  s:run(y, {[x] = mf.ones(3, 4)}); s:run(y, {[x] = mf.ones(8, 4)})
  T.eq(s:stats().binds, 2); T.eq(s:stats().runs, 9)
end)

T.test('bad feeds and fetches: clear errors, and the session keeps working', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {nil, 3}, 'x')
  local W = mf.Variable(mf.ones(3, 1), 'W')
  local y = mf.matmul(x, W)
  local s = mf.Session()
  local good = {[x] = mf.ones(2, 3)}
  T.errors(function() s:run(y, good) end, "variable 'W' is not initialized", 'global_variables_initializer')
  s:run(mf.global_variables_initializer())
  T.errors(function() s:run(y, {[x] = mf.ones(2, 4)}) end, "placeholder 'x'", '2x4', 'expected ?x3 float32')
  T.errors(function() s:run(y, {[x] = mf.ones(2, 3, {dtype = 'float64'})}) end, "placeholder 'x'", 'float64', 'expected ?x3 float32')
  T.errors(function() s:run(y, {[x] = mf.ones(3)}) end, "placeholder 'x'", 'expected ?x3')
  T.errors(function() s:run(y) end, "placeholder 'x'", 'must be fed')
  T.errors(function() s:run(y, {[W] = mf.ones(3, 1)}) end, "'W' is not a placeholder")
  T.errors(function() s:run(42, good) end, 'a fetch is a number')
  T.errors(function() s:run(mf.ones(2), good) end, 'a fetch is a tensor')
  T.errors(function() s:run({y, 'loss'}, good) end, 'a fetch is a string')
  T.errors(function() s:run(y, {x = mf.ones(2, 3)}) end, 'feed key is a string')
  T.errors(function() s.run(y, good) end, 'sess:run')
  T.tensor_eq(s:run(y, good), {{3}, {3}})
end)

T.test('a fetched view keeps its storage until the run ends (later steps do not reuse it)', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {2, 3}, 'x')
  local a = mf.reshape(mf.sum(x, 1, true), 3)      -- a view of the 1x3 column sums
  local b = mf.reshape(mf.sum(x * x, 1, true), 3)  -- computed after a, in memory the plan may reuse
  for _, fuse in ipairs{false, true} do
    local va, vb = mf.Session{fuse = fuse}:run({a, b}, {[x] = mf.tensor{{1, 2, 3}, {4, 5, 6}}})
    T.tensor_eq(va, {5, 7, 9}); T.tensor_eq(vb, {17, 29, 45})
  end
end)

T.test('CSE: identical op, params and inputs are evaluated once', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {3}, 'x')
  local y = mf.exp(x) + mf.exp(x)
  local s = mf.Session{fuse = false}  -- (fusion would fold the two into one step either way)
  T.tensor_eq(s:run(y, {[x] = mf.tensor({0, 1, 2}, 'float64')}), {2, 2 * math.exp(1), 2 * math.exp(2)}, 1e-15)
  T.eq(s:stats().steps, 2)   -- one exp, one add
end)

T.test('fusion: an elementwise tree runs as one step; an assign of it writes the variable in the same pass', function()
  mf.reset_default_graph()
  local w0, g0 = {0.5, -2, 3, 0.25, 7}, {1, 2, -3, 4, -5}
  local w = mf.Variable(mf.tensor(w0, 'float64'), 'w')
  local g = mf.Variable(mf.tensor(g0, 'float64'), 'g')
  local eta, lam = 0.1, 0.01
  local upd = mf.assign(w, -eta * (g + lam * w))
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  s:run(mf.group{upd})
  -- mul, add, mul (eta) and the assign folded into one fused_assign step (the group's no_op remains)
  T.eq(s:stats().fused, 3); T.eq(s:stats().steps, 2)
  local want = {}
  for i = 1, 5 do want[i] = -eta * (g0[i] + lam * w0[i]) end
  T.tensor_eq(s:run(w), want, 1e-15)
  -- fetching the assign's result, or a bias-add + relu with a broadcast row
  local x = mf.placeholder('float64', {2, 3}, 'x')
  local b = mf.constant(mf.tensor({1, -1, 0.5}, 'float64'))
  local y = mf.relu(x * 2 + b) - x
  local xv = {{1, 2, -3}, {-0.5, 0.25, 4}}
  local yv = s:run(y, {[x] = mf.tensor(xv, 'float64')})
  T.eq(s:stats().steps, 1); T.eq(s:stats().fused, 3)
  local bv = {1, -1, 0.5}
  local expect = {}
  for i = 1, 2 do
    expect[i] = {}
    for j = 1, 3 do expect[i][j] = math.max(xv[i][j] * 2 + bv[j], 0) - xv[i][j] end
  end
  T.tensor_eq(yv, expect, 1e-15)
end)

T.test('fusion: fetched intermediates are kept, reads never move past an assign, fuse = false matches', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {3}, 'x')
  local y = mf.exp(x)
  local z = y * 2 + 1
  local s = mf.Session()
  local f = {[x] = mf.tensor({0, 1, -1}, 'float64')}
  local yv, zv = s:run({y, z}, f)
  T.tensor_eq(yv, {1, math.exp(1), math.exp(-1)}, 1e-15)
  T.tensor_eq(zv, {3, 2 * math.exp(1) + 1, 2 * math.exp(-1) + 1}, 1e-15)
  T.eq(s:stats().steps, 2)  -- exp stays (its value is fetched); mul + add fuse
  -- r reads v before the assign (the documented order); u = r + 1 is free to run after it, so
  -- folding r into u would read the new value: fusion must keep r where it is
  local v = mf.Variable(mf.tensor({1, 2}, 'float64'), 'v')
  local r = v * 2
  local a = mf.assign(v, mf.constant(mf.tensor({10, 20}, 'float64')))
  local u = mf.exp(r + 1)
  s:run(mf.global_variables_initializer())
  local uv = s:run({u, a})
  T.tensor_eq(uv, {math.exp(3), math.exp(5)}, 1e-14)
  T.eq(s:stats().fused, 1)  -- r + 1 and exp fuse; r itself stays before the assign
  -- the same graph without fusion gives the same numbers
  local s2 = mf.Session{fuse = false}
  T.tensor_eq(s2:run(z, f), {3, 2 * math.exp(1) + 1, 2 * math.exp(-1) + 1}, 1e-15)
  T.eq(s2:stats().fused, 0)
  T.errors(function() mf.Session{fuse = 1} end, "option 'fuse' is 1; expected true or false")
end)

T.test('fusion: many identical fused steps (one shared program) against a float64 loop', function()
  -- a ladder a, b = tanh(a + b), sigmoid(a - b): each rung fuses into two steps of two ops (the
  -- sums are read once); the first b = -x is read twice and stays. Every fused tanh step runs the
  -- same program, as does every sigmoid step, in both dtypes (issue 20: one compiled handle each)
  for _, dt in ipairs{'float32', 'float64'} do
    mf.reset_default_graph()
    local x = mf.placeholder(dt, {3}, 'x')
    local a, b = x, mf.neg(x)
    local rungs = 40
    for _ = 1, rungs do a, b = mf.tanh(a + b), mf.sigmoid(a - b) end
    local s = mf.Session()
    local av, bv = s:run({a, b}, {[x] = mf.tensor({0.5, -1, 2}, dt)})
    local ra, rb = {}, {}
    for i, v in ipairs{0.5, -1, 2} do
      local p, q = v, -v
      for _ = 1, rungs do p, q = math.tanh(p + q), 1 / (1 + math.exp(-(p - q))) end
      ra[i], rb[i] = p, q
    end
    local tol = dt == 'float32' and 1e-5 or 1e-13
    T.tensor_eq(av, ra, tol); T.tensor_eq(bv, rb, tol)
    T.eq(s:stats().fused, 2 * rungs); T.eq(s:stats().steps, 2 * rungs + 1)
  end
  -- the handle is kept per program list and input count: one program, one compile
  local K, C = mf.kernels, require 'moonflow.ffi_abi'
  local code = C.mf_op_pointwise(mf._ops.tanh.index, nil, require('ffi').new('int32_t[1]'))
  local list = {code, 0, 0}
  T.eq(rawequal(K.fused_program(1, list), K.fused_program(1, list)), true)
  T.eq(rawequal(K.fused_program(1, list), K.fused_program(2, list)), false)
  T.eq(rawequal(K.fused_program(1, list), K.fused_program(1, {code, 0, 0})), false)
end)

T.test('simplification: log(softmax(x)) runs as the stable log_softmax(x)', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {2}, 'x')
  local y = mf.log(mf.softmax(x))
  local s = mf.Session()
  -- exp(-1000) underflows: a literal log(softmax) would give -inf here
  T.tensor_eq(s:run(y, {[x] = mf.tensor{1000, 0}}), {0, -1000})
  T.eq(s:stats().steps, 1)
end)

T.test('memory plan of the MLP 784-512-256-10 training graph', function()
  mf.reset_default_graph()
  mf.manual_seed(1)
  local x = mf.placeholder('float32', {64, 784}, 'x')
  local y_ = mf.placeholder('float32', {64, 10}, 'y_')
  local function layer(n_in, n_out, h, act)
    local W = mf.Variable(mf.randn(n_in, n_out) * 0.05)
    local b = mf.Variable(mf.zeros(n_out))
    local z = mf.matmul(h, W) + b
    return act and mf.relu(z) or z
  end
  local logits = layer(256, 10, layer(512, 256, layer(784, 512, x, true), true), false)
  local loss = mf.mean(mf.softmax_cross_entropy(logits, y_, 2))
  local step = mf.train.GradientDescentOptimizer(0.1):minimize(loss)
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  local rows = {}
  for i = 1, 64 do
    rows[i] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
    rows[i][i % 10 + 1] = 1
  end
  local onehot = mf.tensor(rows)
  local bx = mf.rand(64, 784)  -- one fixed batch, so there is something to learn
  local _, l = s:run({step, loss}, {[x] = bx, [y_] = onehot})
  local st = s:stats()
  print(('MLP 784-512-256-10 training step, batch 64: %d op nodes, planned %d bytes vs naive %d bytes (%.2fx), %d slots, %d in place')
    :format(st.steps, st.planned_bytes, st.naive_bytes, st.naive_bytes / st.planned_bytes, st.slots, st.inplace))
  assert(st.planned_bytes < 0.75 * st.naive_bytes, 'the plan should reuse memory')
  assert(st.inplace > 0, 'some elementwise ops should run in place')
  assert(l:item() > 2 and l:item() < 2.6, 'initial loss near log(10): ' .. l:item())
  -- training on a fixed batch drives the loss down: 64 samples, 10 labels, memorised by the MLP
  local first, last = l:item(), nil
  for _ = 1, 30 do _, last = s:run({step, loss}, {[x] = bx, [y_] = onehot}) end
  last = last:item()
  assert(last < 0.5 * first, ('loss after 30 steps %.4f, not below half the first %.4f'):format(last, first))
  T.eq(s:stats().binds, 2)  -- the initializer and the training step
end)

T.test('variables: reads run before an assign in the same run; a dependent read sees the new value', function()
  mf.reset_default_graph()
  local v = mf.Variable(mf.tensor({1}, 'float64'), 'v')
  local before = v * 1
  local a = mf.assign(v, mf.constant(mf.tensor({5}, 'float64')))
  local after = a * 1
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  local rb, _, ra = s:run({before, a, after})
  T.tensor_eq(rb, {1}); T.tensor_eq(ra, {5})
  T.tensor_eq(s:run(v), {5})  -- state persists across runs
  local inc = mf.assign_add(v, mf.constant(mf.tensor({2}, 'float64')))
  s:run(inc); s:run(inc)
  T.tensor_eq(s:run(v), {9})
  -- a second session has its own variable storage
  local s2 = mf.Session()
  T.errors(function() s2:run(v) end, "variable 'v' is not initialized")
end)

T.test('gradients: contributions summed over consumers; grad_ys scales', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {3}, 'x')
  local y = x * x + x               -- dy/dx = 2x + 1, x feeds three consumers
  local g = mf.gradients(y, {x})[1]
  local g2 = mf.gradients(y, {x}, {mf.constant(mf.tensor({1, 2, 3}, 'float64'))})[1]
  local s = mf.Session()
  local f = {[x] = mf.tensor({1, 2, 3}, 'float64')}
  T.tensor_eq(s:run(g, f), {3, 5, 7})
  T.tensor_eq(s:run(g2, f), {3, 10, 21})
  local z = mf.placeholder('float64', {3}, 'z')
  T.eq(mf.gradients(y, {z})[1], nil)  -- z does not reach y
end)

-- float64 references of the update rules, on loss = sum((w - t)^2), gradient 2 (w - t)
local function reference(rule, w, t, steps)
  local state = {m = {0, 0}, v = {0, 0}, acc = {0, 0}}
  for step = 1, steps do
    for i = 1, 2 do
      local g = 2 * (w[i] - t[i])
      w[i] = rule(w[i], g, state, i, step)
    end
  end
  return w
end

local function run_optimizer(opt, steps)
  mf.reset_default_graph()
  local w = mf.Variable(mf.tensor({1, -2}, 'float64'), 'w')
  local t = mf.constant(mf.tensor({0.5, 0.25}, 'float64'))
  local loss = mf.sum(mf.square(w - t))
  local train = opt:minimize(loss)
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  for _ = 1, steps do s:run(train) end
  return s:run(w):totable()
end

T.test('GradientDescentOptimizer matches w -= lr g', function()
  local got = run_optimizer(mf.train.GradientDescentOptimizer(0.1), 3)
  local want = reference(function(w, g) return w - 0.1 * g end, {1, -2}, {0.5, 0.25}, 3)
  for i = 1, 2 do T.near(got[i], want[i], 1e-14) end
end)

T.test('MomentumOptimizer (and Nesterov) match their update rules', function()
  for _, nesterov in ipairs{false, true} do
    local got = run_optimizer(mf.train.MomentumOptimizer(0.1, 0.9, {nesterov = nesterov}), 4)
    local want = reference(function(w, g, st, i)
      st.acc[i] = 0.9 * st.acc[i] + g
      return w - 0.1 * (nesterov and g + 0.9 * st.acc[i] or st.acc[i])
    end, {1, -2}, {0.5, 0.25}, 4)
    for i = 1, 2 do T.near(got[i], want[i], 1e-14) end
  end
end)

T.test('AdamOptimizer matches the bias-corrected update rule', function()
  local got = run_optimizer(mf.train.AdamOptimizer(0.01), 5)
  local want = reference(function(w, g, st, i, t)
    st.m[i] = 0.9 * st.m[i] + 0.1 * g
    st.v[i] = 0.999 * st.v[i] + 0.001 * g * g
    local lr_t = 0.01 * math.sqrt(1 - 0.999 ^ t) / (1 - 0.9 ^ t)
    return w - lr_t * st.m[i] / (math.sqrt(st.v[i]) + 1e-8)
  end, {1, -2}, {0.5, 0.25}, 5)
  for i = 1, 2 do T.near(got[i], want[i], 1e-12) end
end)

T.test('group runs every member', function()
  mf.reset_default_graph()
  local a = mf.Variable(mf.tensor{0}, 'a')
  local b = mf.Variable(mf.tensor{0}, 'b')
  local both = mf.group{mf.assign_add(a, mf.constant(mf.tensor{1})), mf.assign_add(b, mf.constant(mf.tensor{2}))}
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  s:run(both); s:run(both)
  T.tensor_eq(s:run(a), {2}); T.tensor_eq(s:run(b), {4})
  T.errors(function() mf.Session{device = 'tpu'} end, "device 'tpu'")
end)

T.finish()
