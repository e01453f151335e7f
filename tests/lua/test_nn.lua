-- nn modules against float64 references computed in plain Lua: layers, activations, dropout,
-- batch norm, embedding, losses; eager and graph agree; state dicts; printing; custom modules.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local function rows(t) return t:double():totable() end

-- deterministic float64 inputs
local function input(shape, lo, hi)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = mf.zeros(shape, {dtype = 'float64'})
  local f = t:reshape(n)
  for i = 1, n do f:set(i, (lo or -1) + ((hi or 1) - (lo or -1)) * ((i * 0.6180339887) % 1)) end
  return t
end

local function near_table(got, want, tol, path)
  path = path or ''
  if type(want) == 'table' then
    T.eq(#got, #want, 'length at ' .. path)
    for i = 1, #want do near_table(got[i], want[i], tol, path .. '[' .. i .. ']') end
  else
    T.near(got, want, tol, 'value at ' .. path)
  end
end

-- the same module on a symbol, through a session, must give the eager result
local function graph_value(m, x)
  mf.reset_default_graph()
  local s = mf.placeholder(x:dtype(), x:size(), 'x')
  return mf.Session():run(m(s), {[s] = x})
end

T.test('Linear: x W^T + b, eager and in a graph', function()
  mf.manual_seed(3)
  local m = mf.nn.Linear(3, 2)
  m.weight.data:copy(mf.tensor({{1, 2, 3}, {-1, 0, 0.5}}))
  m.bias.data:copy(mf.tensor({0.25, -1}))
  local x = mf.tensor{{1, 1, 1}, {2, 0, -1}}
  local want = {{6.25, -1.5}, {-0.75, -3.5}}
  near_table(rows(m(x)), want, 1e-6)
  near_table(rows(graph_value(m, x)), want, 1e-6)
  T.errors(function() m(mf.ones(2, 4)) end, 'Linear(3 -> 2)', 'input is 2x4', 'expected ... x 3')
  local nb = mf.nn.Linear(3, 2, {bias = false})
  T.eq(#nb:parameters(), 1)
end)

T.test('default initialisation follows PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in))', function()
  mf.manual_seed(11)
  local m = mf.nn.Linear(400, 300)
  local w = m.weight.data
  local bound = 1 / math.sqrt(400)
  assert(w:max():item() <= bound and w:min():item() >= -bound)
  assert(w:max():item() > 0.95 * bound and w:min():item() < -0.95 * bound)
  T.near(w:mean():item(), 0, 2e-3)
  -- variance of U(-a, a) is a^2 / 3
  T.near((w * w):mean():item(), bound * bound / 3, 0.02 * bound * bound)
end)

T.test('Conv2d and pooling modules against direct loops', function()
  mf.manual_seed(8)
  local conv = mf.nn.Conv2d(2, 3, 3, {stride = 2, padding = 1})
  local x = input({2, 2, 5, 5}):float()
  local y = conv(x)
  T.eq(y:shape_str(), '2x3x3x3')
  local xv, w, b = x:double():totable(), conv.weight.data:double():totable(), conv.bias.data:double():totable()
  local yv = y:double():totable()
  for n = 1, 2 do for o = 1, 3 do for i = 1, 3 do for j = 1, 3 do
    local s = b[o]
    for c = 1, 2 do for ki = 1, 3 do for kj = 1, 3 do
      local r, q = (i - 1) * 2 - 1 + ki, (j - 1) * 2 - 1 + kj
      if r >= 1 and r <= 5 and q >= 1 and q <= 5 then s = s + xv[n][c][r][q] * w[o][c][ki][kj] end
    end end end
    T.near(yv[n][o][i][j], s, 1e-5)
  end end end end
  near_table(rows(graph_value(conv, x):reshape(-1)), rows(y:reshape(-1)), 1e-6)
  T.errors(function() conv(mf.ones(1, 3, 5, 5)) end, 'Conv2d', 'N x 2 x H x W')
  local p = mf.nn.MaxPool2d(2)(x)
  T.eq(p:shape_str(), '2x2x2x2')
  T.near(p:get(1, 2, 2, 2), math.max(xv[1][2][3][3], xv[1][2][3][4], xv[1][2][4][3], xv[1][2][4][4]), 1e-6)
  local a = mf.nn.AvgPool2d(2)(x)
  T.near(a:get(2, 1, 1, 2), (xv[2][1][1][3] + xv[2][1][1][4] + xv[2][1][2][3] + xv[2][1][2][4]) / 4, 1e-6)
  local g = mf.nn.AdaptiveAvgPool2d(1)(x)
  T.eq(g:shape_str(), '2x2x1x1')
  local s = 0
  for i = 1, 5 do for j = 1, 5 do s = s + xv[1][1][i][j] end end
  T.near(g:get(1, 1, 1, 1), s / 25, 1e-6)
end)

T.test('activations match their formulas', function()
  local x = input({2, 5}, -3, 3)
  local xs = rows(x)
  local function check(m, f)
    local want = {}
    for i, r in ipairs(xs) do
      want[i] = {}
      for j, v in ipairs(r) do want[i][j] = f(v, r) end
    end
    near_table(rows(m(x)), want, 1e-12)
    near_table(rows(graph_value(m, x)), want, 1e-12)
  end
  check(mf.nn.ReLU(), function(v) return math.max(v, 0) end)
  check(mf.nn.LeakyReLU(0.2), function(v) return v > 0 and v or 0.2 * v end)
  check(mf.nn.Tanh(), function(v) return math.tanh(v) end)
  check(mf.nn.Sigmoid(), function(v) return 1 / (1 + math.exp(-v)) end)
  -- GELU with erf from its series (independent of the C library's erf)
  local function erf(z)
    local s, term, n = 0, z, 0
    repeat
      s = s + term / (2 * n + 1)
      n = n + 1
      term = -term * z * z / n
    until math.abs(term) < 1e-17
    return 2 / math.sqrt(math.pi) * s
  end
  check(mf.nn.GELU(), function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end)
  check(mf.nn.Softmax(2), function(v, r)
    local m, s = -math.huge, 0
    for _, u in ipairs(r) do m = math.max(m, u) end
    for _, u in ipairs(r) do s = s + math.exp(u - m) end
    return math.exp(v - m) / s
  end)
  check(mf.nn.LogSoftmax(2), function(v, r)
    local s = 0
    for _, u in ipairs(r) do s = s + math.exp(u) end
    return v - math.log(s)
  end)
end)

T.test('Dropout: inverted scaling in training, identity in evaluation', function()
  mf.manual_seed(5)
  local d = mf.nn.Dropout(0.25)
  local y = d(mf.ones(100, 100, {dtype = 'float64'}))
  local zeros, scaled = 0, 0
  for _, r in ipairs(rows(y)) do
    for _, v in ipairs(r) do
      if v == 0 then zeros = zeros + 1 elseif math.abs(v - 1 / 0.75) < 1e-12 then scaled = scaled + 1 end
    end
  end
  T.eq(zeros + scaled, 10000, 'every element is 0 or 1/(1-p)')
  assert(zeros > 2300 and zeros < 2700, 'about p of the elements dropped: ' .. zeros)
  d:evaluate()
  near_table(rows(d(mf.ones(3, 3))), {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}, 0)
end)

T.test('BatchNorm2d: batch statistics in training, running statistics in evaluation', function()
  local bn = mf.nn.BatchNorm2d(2, {momentum = 0.1, eps = 1e-5})
  bn.weight.data:copy(mf.tensor{2, 0.5})
  bn.bias.data:copy(mf.tensor{1, -1})
  local x = input({3, 2, 2, 2}, -2, 4):float()
  local xv = x:double():totable()
  local y = bn(x):double():totable()
  for c = 1, 2 do
    local vals = {}
    for n = 1, 3 do for i = 1, 2 do for j = 1, 2 do vals[#vals + 1] = xv[n][c][i][j] end end end
    local mean, var = 0, 0
    for _, v in ipairs(vals) do mean = mean + v / #vals end
    for _, v in ipairs(vals) do var = var + (v - mean) ^ 2 / #vals end
    local w, b = ({2, 0.5})[c], ({1, -1})[c]
    for n = 1, 3 do for i = 1, 2 do for j = 1, 2 do
      T.near(y[n][c][i][j], (xv[n][c][i][j] - mean) / math.sqrt(var + 1e-5) * w + b, 1e-5)
    end end end
    -- running: 0.9 * initial + 0.1 * batch (unbiased variance)
    T.near(bn.running_mean.data:get(c), 0.1 * mean, 1e-6)
    T.near(bn.running_var.data:get(c), 0.9 + 0.1 * var * #vals / (#vals - 1), 1e-5)
  end
  bn:evaluate()
  local rm, rv = bn.running_mean.data:totable(), bn.running_var.data:totable()
  local ye = bn(x):double():totable()
  T.near(ye[2][1][2][1], (xv[2][1][2][1] - rm[1]) / math.sqrt(rv[1] + 1e-5) * 2 + 1, 1e-5)
  T.errors(function() bn(mf.ones(2, 3, 4, 4)) end, 'BatchNorm2d', 'input is 2x3x4x4', 'N x 2 x H x W')
  local bn1 = mf.nn.BatchNorm1d(3)
  local z = bn1(input({4, 3}):float())
  T.near(z:mean(1):abs():max():item(), 0, 1e-6)
end)

T.test('BatchNorm running statistics update through a training graph', function()
  mf.reset_default_graph()
  local bn = mf.nn.BatchNorm1d(2)
  local x = mf.placeholder('float32', {nil, 2}, 'x')
  local loss = mf.sum(bn(x))
  local step = mf.optim.SGD(bn:parameters(), {lr = 0}):minimize(loss)
  local s = mf.Session()
  s:run(step, {[x] = mf.tensor{{1, 10}, {3, 20}}})
  near_table(bn.running_mean.data:double():totable(), {0.2, 1.5}, 1e-6)
end)

T.test('Embedding gathers rows by 1-based int64 indices', function()
  local e = mf.nn.Embedding(5, 3)
  e.weight.data:copy(mf.arange(15):reshape(5, 3))
  local y = e(mf.tensor({{2, 5}, {1, 2}}, 'int64'))
  T.eq(y:shape_str(), '2x2x3')
  near_table(y:double():totable(), {{{3, 4, 5}, {12, 13, 14}}, {{0, 1, 2}, {3, 4, 5}}}, 0)
  T.errors(function() e(mf.tensor({6}, 'int64')) end, 'index 6', '1..5')
  T.errors(function() e(mf.tensor{1}) end, 'Embedding', 'int64')
end)

T.test('losses match their formulas', function()
  local logits = mf.tensor({{1, 2, 3}, {1000, 0, -1000}}, 'float64')
  local labels = mf.tensor({3, 2}, 'int64')
  local function lse(r) local m = math.max(unpack(r)); local s = 0; for _, v in ipairs(r) do s = s + math.exp(v - m) end; return m + math.log(s) end
  local l = logits:totable()
  local ce = ((lse(l[1]) - 3) + (lse(l[2]) - 0)) / 2
  T.near(mf.nn.CrossEntropyLoss()(logits, labels):item(), ce, 1e-12)
  T.near(mf.nn.CrossEntropyLoss{reduction = 'sum'}(logits, labels):item(), 2 * ce, 1e-12)
  local logp = mf.log_softmax(logits, 2)
  T.near(mf.nn.NLLLoss()(logp, labels):item(), ce, 1e-12)
  local a, b = mf.tensor({1, 2, 3}, 'float64'), mf.tensor({1, 0, 5}, 'float64')
  T.near(mf.nn.MSELoss()(a, b):item(), (0 + 4 + 4) / 3, 1e-15)
  local x, y = mf.tensor({-800, 0.5, 800}, 'float64'), mf.tensor({1, 0, 1}, 'float64')
  local want = (800 + (math.log(1 + math.exp(0.5))) + 0) / 3
  T.near(mf.nn.BCEWithLogitsLoss()(x, y):item(), want, 1e-12)
  T.errors(function() mf.nn.CrossEntropyLoss()(logits, mf.tensor{1, 2}) end, 'CrossEntropyLoss', 'int64')
  T.errors(function() mf.nn.CrossEntropyLoss{reduction = 'avg'} end, "option 'reduction' is 'avg'; expected one of 'mean', 'sum', 'none'")
end)

T.test('parameters, state_dict, load_state_dict, printing, train/evaluate', function()
  mf.manual_seed(2)
  local m = mf.nn.Sequential{mf.nn.Linear(4, 3), mf.nn.ReLU(), mf.nn.BatchNorm1d(3), mf.nn.Linear(3, 2)}
  T.eq(#m:parameters(), 6)
  T.eq(m:num_parameters(), 4 * 3 + 3 + 3 + 3 + 3 * 2 + 2)
  local names = {}
  for _, np in ipairs(m:named_parameters()) do names[#names + 1] = np[1] end
  T.eq(table.concat(names, ' '), '1.weight 1.bias 3.weight 3.bias 4.weight 4.bias')
  local sd = m:state_dict()
  assert(sd['3.running_mean'] and sd['3.running_var'], 'buffers are in the state dict')
  local text = tostring(m)
  assert(text:find('Sequential (29 params)', 1, true), text)
  assert(text:find('(1): Linear(4 -> 3, bias=true)  15 params', 1, true), text)
  local other = mf.nn.Sequential{mf.nn.Linear(4, 3), mf.nn.ReLU(), mf.nn.BatchNorm1d(3), mf.nn.Linear(3, 2)}
  other:load_state_dict(sd)
  local x = mf.randn(5, 4)
  m:evaluate(); other:evaluate()
  T.eq(mf.eq(m(x), other(x)):sum():item(), 10)
  T.eq(m.training, false); T.eq(m._children['3'].training, false)
  local bad = {}
  for k, v in pairs(sd) do bad[k] = v end
  bad['1.weight'], bad['9.bias'] = nil, mf.ones(1)
  bad['4.bias'] = mf.ones(5)
  T.errors(function() other:load_state_dict(bad) end, 'missing keys: 1.weight', 'unexpected keys: 9.bias',
    '4.bias (have 2 float32, got 5 float32)')
end)

T.test('a custom module is a Lua class with forward; modules build graphs that train', function()
  mf.manual_seed(4)
  local Net = mf.nn.Module('Net')
  function Net:__init(h)
    self.fc1 = mf.nn.Linear(2, h)
    self.fc2 = mf.nn.Linear(h, 1)
  end
  function Net:forward(x) return self.fc2(mf.tanh(self.fc1(x))) end
  local net = Net(8)
  T.eq(#net:parameters(), 4)
  assert(tostring(net):find('Net (33 params)', 1, true), tostring(net))
  -- graph training with the TensorFlow-style optimizer on the module's variables
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {nil, 2}, 'x')
  local y = mf.placeholder('float32', {nil, 1}, 'y')
  local loss = mf.nn.MSELoss()(net(x), y)
  local step = mf.train.GradientDescentOptimizer(0.1):minimize(loss)
  local s = mf.Session()
  local bx = mf.tensor{{0, 0}, {0, 1}, {1, 0}, {1, 1}}
  local by = mf.tensor{{0}, {1}, {1}, {0}}
  local l0 = s:run(loss, {[x] = bx, [y] = by}):item()
  for _ = 1, 300 do s:run(step, {[x] = bx, [y] = by}) end
  local l1 = s:run(loss, {[x] = bx, [y] = by}):item()
  assert(l1 < 0.5 * l0, ('loss %g -> %g'):format(l0, l1))
  -- the session trained the module's own tensors: eager evaluation sees the result
  T.near(mf.nn.MSELoss()(net(bx), by):item(), l1, 1e-5)
end)

T.test('mf.optim steps tensors eagerly with each parameter .grad', function()
  local p = mf.nn.Parameter(mf.tensor({1, -2}, 'float64'))
  local opt = mf.optim.SGD({p}, {lr = 0.1, momentum = 0.9, weight_decay = 0.01})
  local buf, w = {0, 0}, {1, -2}
  for _ = 1, 3 do
    p.grad = mf.tensor({0.5, 0.25}, 'float64')
    opt:step()
    for i = 1, 2 do
      local g = ({0.5, 0.25})[i] + 0.01 * w[i]
      buf[i] = 0.9 * buf[i] + g
      w[i] = w[i] - 0.1 * buf[i]
    end
  end
  near_table(p.data:totable(), w, 1e-14)
  T.errors(function() mf.optim.SGD({p}, {learning_rate = 1}) end, "unknown option 'learning_rate'")
end)

T.test('SGD with dampening starts its buffer at the gradient (PyTorch), eager and in a graph', function()
  -- reference: d_p = g + wd * w; buf = d_p at step 1, then mu * buf + (1 - d) * d_p; w = w - lr * buf
  local lr, mu, d, wd, grads = 0.1, 0.5, 0.5, 0.1, {1, 2, 4}
  local function reference()
    local w, buf, out = 1, nil, {}
    for k, g in ipairs(grads) do
      local dp = g + wd * w
      buf = buf and mu * buf + (1 - d) * dp or dp
      w = w - lr * buf
      out[k] = w
    end
    return out
  end
  local want = reference()
  T.near(want[1], 0.89, 1e-15)   -- by hand: 1 - 0.1 * (1 + 0.1)
  local opts = {lr = lr, momentum = mu, dampening = d, weight_decay = wd}
  local p = mf.nn.Parameter(mf.tensor({1}, 'float64'))
  local opt = mf.optim.SGD({p}, opts)
  for k, g in ipairs(grads) do
    p.grad = mf.tensor({g}, 'float64')
    opt:step()
    T.near(p.data:get(1), want[k], 1e-14, 'eager step ' .. k)
  end
  mf.reset_default_graph()
  local q = mf.nn.Parameter(mf.tensor({1}, 'float64'))
  local gin = mf.placeholder('float64', {1}, 'g')
  local m = mf.nn.Module('Lin')
  function m:forward(x) return mf.sum(self:value('w', x) * x) end
  local mod = m()
  mod:register_parameter('w', q)
  local train = mf.optim.SGD(mod:parameters(), opts):minimize(mod(gin))
  local s = mf.Session()
  for k, g in ipairs(grads) do
    s:run(train, {[gin] = mf.tensor({g}, 'float64')})
    T.near(q.data:get(1), want[k], 1e-14, 'graph step ' .. k)
  end
end)

T.finish()
