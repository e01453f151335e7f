-- Identity and lifetimes of parameters: a shared module's parameters are listed, counted, updated
-- and saved consistently; p.data = t rebinds what eager code and graphs see; module and optimizer
-- state loading checks keys, shapes and dtypes before writing anything. References are computed
-- by hand in the comments.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local nn = mf.nn

-- a 1x1 Linear with weight w and bias b (float32)
local function unit_linear(w, b)
  local l = nn.Linear(1, 1)
  l.weight.data:fill(w)
  l.bias.data:fill(b)
  return l
end

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return table.concat(ks, ' ')
end

-- de-duplication ---------------------------------------------------------------------------------
T.test('a module used twice lists, counts and prints its parameters once', function()
  local l = nn.Linear(2, 3)
  local s = nn.Sequential{l, nn.Tanh(), l}
  T.eq(#s:parameters(), 2, 'parameters')
  T.eq(s:num_parameters(), 2 * 3 + 3, 'num_parameters')
  local names = {}
  for _, np in ipairs(s:named_parameters()) do names[#names + 1] = np[1] end
  T.eq(table.concat(names, ' '), '1.weight 1.bias', 'named_parameters: each once, under its first name')
  assert(tostring(s):find('Sequential (9 params)', 1, true), tostring(s))
  -- a parameter shared by two modules (weight tying) is listed once too
  local a, b = nn.Linear(2, 2), nn.Linear(2, 2)
  b.weight = a.weight
  local m = nn.Sequential{a, b}
  T.eq(#m:parameters(), 3, 'tied weight listed once')
  T.eq(m:num_parameters(), 4 + 2 + 2)
  -- PyTorch-style varargs build the same thing
  T.eq(#nn.Sequential(l, nn.Tanh(), l):parameters(), 2)
end)

T.test('one eager SGD step updates a shared parameter once', function()
  local l = unit_linear(2, 1)
  local s = nn.Sequential{l, l}
  local opt = mf.optim.SGD(s:parameters(), 0.1)
  l.weight.grad = mf.tensor{{1}}
  l.bias.grad = mf.tensor{0.5}
  opt:step()
  -- w = 2 - 0.1 * 1, b = 1 - 0.1 * 0.5 (a double update would give 1.8 and 0.9)
  T.near(l.weight.data:get(1, 1), 1.9, 1e-6, 'weight')
  T.near(l.bias.data:get(1), 0.95, 1e-6, 'bias')
  -- an optimizer given the same parameter (or tensor) twice keeps one copy
  local p = nn.Parameter(mf.tensor({1, 2}, 'float64'))
  local o2 = mf.optim.SGD({p, p, p.data}, {lr = 0.5})
  T.eq(#o2.params, 1, 'duplicates dropped')
  p.grad = mf.tensor({2, 2}, 'float64')
  o2:step()
  T.tensor_eq(p.data, {0, 1})  -- 1 - 0.5 * 2, 2 - 0.5 * 2
end)

T.test('a graph step through a shared module applies the summed gradient once', function()
  mf.reset_default_graph()
  local l = unit_linear(2, 1)
  local s = nn.Sequential{l, l}
  local x = mf.placeholder('float32', {-1, 1}, 'x')
  local t = mf.placeholder('float32', {-1, 1}, 't')
  local loss = nn.MSELoss()(s(x), t)
  local step = mf.optim.SGD(s:parameters(), {lr = 0.001}):minimize(loss)
  local sess = mf.Session()
  sess:run(step, {[x] = mf.tensor{{3}}, [t] = mf.tensor{{0}}})
  -- h = 2*3 + 1 = 7, y = 2*7 + 1 = 15, dL/dy = 30; dy/dw = h + w*x = 13, dy/db = 1 + w = 3
  -- w = 2 - 0.001 * 390 = 1.61, b = 1 - 0.001 * 90 = 0.91
  T.near(l.weight.data:get(1, 1), 1.61, 1e-5, 'weight')
  T.near(l.bias.data:get(1), 0.91, 1e-5, 'bias')
end)

T.test('state_dict keeps every name of a shared module; loading requires they agree', function()
  local l = unit_linear(2, 1)
  local s = nn.Sequential{l, nn.Tanh(), l}
  local sd = s:state_dict()
  T.eq(keys(sd), '1.bias 1.weight 3.bias 3.weight', 'each name, as PyTorch')
  -- a fresh model of the same structure loads it (both names carry the same values)
  local l2 = unit_linear(0, 0)
  local s2 = nn.Sequential{l2, nn.Tanh(), l2}
  s2:load_state_dict(sd)
  T.eq(l2.weight.data:get(1, 1), 2)
  -- values under the two names of one tensor that differ are an error, and nothing is written
  local bad = {['1.weight'] = mf.tensor{{5}}, ['1.bias'] = mf.tensor{1}, ['3.weight'] = mf.tensor{{6}}, ['3.bias'] = mf.tensor{1}}
  T.errors(function() s2:load_state_dict(bad) end, '1.weight and 3.weight name one shared tensor but hold different values')
  T.eq(l2.weight.data:get(1, 1), 2, 'unchanged after the failed load')
  -- through a file
  local path = os.tmpname()
  s:save(path)
  local s3 = nn.Sequential{unit_linear(0, 0), nn.Tanh(), unit_linear(0, 0)}   -- not shared: loads both names
  s3:load(path)
  T.eq(s3._children['3'].weight.data:get(1, 1), 2)
  os.remove(path)
end)

-- p.data = t -------------------------------------------------------------------------------------
T.test('p.data = t rebinds eager forward (the new tensor itself, as PyTorch)', function()
  local l = unit_linear(2, 1)
  local t = mf.tensor{{5}}
  l.weight.data = t
  T.near(l(mf.tensor{{1}}):item(), 6, 1e-6, 'w = 5')   -- 5 * 1 + 1
  t:fill(-1)                                             -- the parameter is t, not a copy of it
  T.near(l(mf.tensor{{1}}):item(), 0, 1e-6, 'w = -1')
  -- the PyTorch idiom p.data = p.data - lr * g, eagerly
  local p = l.weight
  p.data = p.data - 0.5 * mf.tensor{{2}}
  T.near(l.weight.data:get(1, 1), -2, 1e-6)
  -- before any graph binds it, a parameter may take any shape
  local q = nn.Parameter(mf.zeros(2))
  q.data = mf.ones(3, 3)
  T.eq(q.data:shape_str(), '3x3')
end)

T.test('p.data = t rebinds a graph already built and run: the Variable uses the new tensor', function()
  mf.reset_default_graph()
  local l = unit_linear(2, 0)
  local x = mf.placeholder('float32', {-1, 1}, 'x')
  local t = mf.placeholder('float32', {-1, 1}, 't')
  local y = l(x)
  local loss = nn.MSELoss()(y, t)
  local step = mf.optim.SGD(l:parameters(), {lr = 0.1}):minimize(loss)
  local sess = mf.Session()
  local feed = {[x] = mf.tensor{{1}}, [t] = mf.tensor{{0}}}
  T.near(sess:run(y, feed):item(), 2, 1e-6, 'before')
  local old = l.weight.data
  local p = l.weight
  p.data = p.data - 0.5 * mf.ones(1, 1)                  -- w = 1.5, a new tensor
  T.near(sess:run(y, feed):item(), 1.5, 1e-6, 'graph reads the new tensor')
  T.near(l(mf.tensor{{1}}):item(), 1.5, 1e-6, 'eager reads the new tensor')
  sess:run(step, feed)
  -- dL/dy = 2 * (1.5 - 0) = 3: w = 1.5 - 0.1 * 3 * 1 = 1.2 (written into the new tensor), b = 0 - 0.3
  T.near(p.data:get(1, 1), 1.2, 1e-6, 'the graph trains the new tensor')
  T.near(old:get(1, 1), 2, 1e-6, 'the old tensor is left alone')
  T.near(l(mf.tensor{{1}}):item(), 0.9, 1e-6, 'eager sees the trained value')
  -- a second session built afterwards sees it as well
  T.near(mf.Session():run(y, feed):item(), 0.9, 1e-6)
end)

T.test('p.data = t is an error where a graph cannot follow, or for a non-tensor', function()
  mf.reset_default_graph()
  local l = nn.Linear(2, 3)
  local x = mf.placeholder('float32', {-1, 2}, 'x')
  l(x)
  T.errors(function() l.weight.data = mf.ones(2, 2) end, 'Parameter.data = t', 't is 2x2 float32',
    'bound into a graph as 3x2 float32', ':copy(t)')
  T.errors(function() l.weight.data = mf.ones(3, 2, {dtype = 'float64'}) end, '3x2 float64', '3x2 float32')
  T.errors(function() l.weight.data = mf.ones(2, 3):t() end, 'non-contiguous', ':contiguous()')
  T.errors(function() l.weight.data = 3 end, 'Parameter.data = value', 'a number', 'expected a tensor')
  T.errors(function() l.weight.data = x end, 'a symbol')
  T.errors(function() l.weight.grad = 'g' end, 'Parameter.grad', 'a string')
  -- module fields: a tensor assigned over a parameter would silently be ignored, so it is refused
  T.errors(function() l.weight = mf.ones(3, 2) end, "cannot assign a 3x2 tensor to parameter 'weight'", 'm.weight.data = t')
  T.errors(function() nn.Sequential{l}['1'] = 5 end, "cannot replace child module '1'")
end)

T.test('an optimizer refuses a step after its parameter was rebound to another shape', function()
  local p = nn.Parameter(mf.zeros(2))
  local opt = mf.optim.SGD({p}, {lr = 0.1, momentum = 0.9})
  p.grad = mf.ones(2)
  opt:step()
  p.data = mf.zeros(3)
  p.grad = mf.ones(3)
  T.errors(function() opt:step() end, "state 'momentum_buffer' of params[1] is 2 float32 but the parameter is 3 float32")
end)

T.test('assigning a Parameter or a buffer tensor to a module field rebinds it', function()
  local l = nn.Linear(1, 1)
  local p = nn.Parameter(mf.tensor{{4}})
  l.weight = p
  T.eq(l:parameters()[1], p, 'the new parameter is registered')
  l.bias.data:fill(0)
  T.near(l(mf.tensor{{2}}):item(), 8, 1e-6)
  local bn = nn.BatchNorm1d(2)
  bn.running_mean = mf.tensor{1, 2}
  bn:evaluate()
  -- (x - mean) / sqrt(1 + eps): the new running mean is used
  T.near(bn(mf.tensor{{1, 2}}):get(1, 2), 0, 1e-6)
  T.eq(bn:state_dict().running_mean:get(2), 2)
  T.errors(function() bn.running_mean = 7 end, "buffer 'running_mean' must be a tensor")
end)

-- module load_state_dict ------------------------------------------------------------------------
T.test('module load_state_dict: strict keys, shapes, dtypes, atomic, {strict = false}', function()
  local m = nn.Sequential{nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)}
  local src = nn.Sequential{nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)}
  local sd = src:state_dict()
  local before = m._children['1'].weight.data:totable()
  -- missing
  local part = {['1.weight'] = sd['1.weight'], ['1.bias'] = sd['1.bias']}
  T.errors(function() m:load_state_dict(part) end, 'missing keys: 3.bias, 3.weight', '{strict = false}')
  T.tensor_eq(m._children['1'].weight.data, before, nil, 'nothing written by a failed load')
  -- unexpected
  local extra = {}
  for k, v in pairs(sd) do extra[k] = v end
  extra['4.weight'] = mf.ones(1)
  T.errors(function() m:load_state_dict(extra) end, 'unexpected keys: 4.weight')
  -- shape and dtype, naming the key and both
  local wrong = {}
  for k, v in pairs(sd) do wrong[k] = v end
  wrong['3.weight'] = mf.ones(2, 3)
  wrong['1.bias'] = mf.ones(3, {dtype = 'float64'})
  T.errors(function() m:load_state_dict(wrong) end, '3.weight (have 1x3 float32, got 2x3 float32)',
    '1.bias (have 3 float32, got 3 float64)')
  wrong['1.bias'] = 'x'
  T.errors(function() m:load_state_dict(wrong) end, '1.bias (have 3 float32, got a string)')
  -- strict = false: the matching keys load, the rest are reported
  local _, report = m:load_state_dict(part, {strict = false})
  T.eq(table.concat(report.missing, ' '), '3.bias 3.weight')
  T.eq(mf.eq(m._children['1'].weight.data, sd['1.weight']):min():item(), 1, 'loaded')
  local _, r2 = m:load_state_dict(extra, {strict = false})
  T.eq(table.concat(r2.unexpected, ' '), '4.weight')
  -- shapes are still checked without strict
  T.errors(function() m:load_state_dict({['3.weight'] = mf.ones(5)}, {strict = false}) end, '3.weight (have 1x3 float32, got 5 float32)')
  T.errors(function() m:load_state_dict(sd, {stict = false}) end, "unknown option 'stict'; did you mean 'strict'?")
  T.errors(function() m:load_state_dict(mf.ones(2)) end, 'expected a table name -> tensor')
end)

-- optimizer load_state_dict -------------------------------------------------------------------
T.test('optimizer load_state_dict restores moments, matched to params by position', function()
  local p = nn.Parameter(mf.tensor({1, 1}, 'float64'))
  local a = mf.optim.SGD({p}, {lr = 0.1, momentum = 0.9})
  p.grad = mf.tensor({1, 2}, 'float64')
  a:step()                                   -- buf = g1 = {1, 2}; w = 1 - 0.1 * buf = {0.9, 0.8}
  local saved = a:state_dict()
  local q = nn.Parameter(mf.tensor({0.9, 0.8}, 'float64'))
  local b = mf.optim.SGD({q}, {lr = 0.1, momentum = 0.9})
  b:load_state_dict(saved)
  q.grad = mf.tensor({1, 1}, 'float64')
  b:step()                                   -- buf = 0.9 * {1, 2} + {1, 1} = {1.9, 2.8}; w -= 0.1 * buf
  T.tensor_eq(q.data, {0.9 - 0.19, 0.8 - 0.28}, 1e-12)
end)

T.test("optimizer load_state_dict refuses another model's state, naming key and shapes", function()
  local m1, m2 = nn.Linear(2, 3), nn.Linear(4, 5)
  local o1, o2 = mf.optim.Adam(m1:parameters()), mf.optim.Adam(m2:parameters())
  local before = o1:state_dict()['exp_avg.1']:totable()
  T.errors(function() o1:load_state_dict(o2:state_dict()) end, 'optim.Adam:load_state_dict',
    "'exp_avg.1' is 5x4 float32 but params[1] is 3x2 float32", "'exp_avg_sq.2' is 5 float32 but params[2] is 3 float32")
  T.tensor_eq(o1:state_dict()['exp_avg.1'], before, nil, 'nothing written')
  -- another kind of optimizer: its keys do not match
  local sgd = mf.optim.SGD(m1:parameters(), {lr = 0.1, momentum = 0.5})
  T.errors(function() o1:load_state_dict(sgd:state_dict()) end, 'missing keys: exp_avg.1', 'unexpected keys: momentum_buffer.1')
  -- a model with more parameters
  local o3 = mf.optim.Adam(nn.Sequential{nn.Linear(2, 3), nn.Linear(3, 3)}:parameters())
  T.errors(function() o1:load_state_dict(o3:state_dict()) end, 'unexpected keys: exp_avg.3, exp_avg.4')
  -- strict = false loads what matches, still checking shapes
  local sd = o1:state_dict()
  sd['exp_avg.1'] = mf.full({3, 2}, 7)
  sd['exp_avg_sq.1'] = nil
  o1:load_state_dict(sd, {strict = false})
  T.eq(o1:state_dict()['exp_avg.1']:get(3, 2), 7)
  sd['exp_avg.2'] = mf.ones(3, {dtype = 'float64'})
  T.errors(function() o1:load_state_dict(sd, {strict = false}) end, "'exp_avg.2' is 3 float64 but params[2] is 3 float32")
  T.errors(function() o1:load_state_dict(42) end, 'expected a table name -> tensor')
end)

-- batch norm and losses -------------------------------------------------------------------------
T.test('BatchNorm in training needs more than one value per channel', function()
  T.errors(function() nn.BatchNorm1d(3)(mf.randn(1, 3)) end, 'BatchNorm1d(3)', 'more than 1 value per channel', 'input 1x3')
  T.errors(function() nn.BatchNorm1d(3)(mf.randn(1, 3, 1)) end, 'more than 1 value per channel', '1x3x1')
  T.errors(function() nn.BatchNorm2d(2)(mf.randn(1, 2, 1, 1)) end, 'BatchNorm2d(2)', '1x2x1x1')
  -- one sample with several positions per channel is fine; evaluation mode is fine
  local y = nn.BatchNorm1d(2)(mf.tensor{{{1, 3}, {0, 0}}})
  T.tensor_eq(y, {{{-1, 1}, {0, 0}}}, 1e-4)           -- (x - 2) / sqrt(1 + eps) for channel 1
  local bn = nn.BatchNorm1d(3)
  bn:evaluate()
  T.eq(bn(mf.ones(1, 3)):shape_str(), '1x3')
  -- a graph: known at build time, or caught by the op when the graph runs
  mf.reset_default_graph()
  T.errors(function() nn.BatchNorm1d(3)(mf.placeholder('float32', {1, 3})) end, 'more than 1 value per channel')
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local out = nn.BatchNorm1d(3)(x)
  T.errors(function() mf.Session():run(out, {[x] = mf.ones(1, 3)}) end, 'batch_norm', 'more than 1 value per channel')
end)

T.test('losses refuse input and target shapes that only broadcast by accident', function()
  local a, b = mf.zeros(4, 1), mf.zeros(4)
  for _, name in ipairs{'MSELoss', 'L1Loss', 'BCELoss', 'BCEWithLogitsLoss'} do
    T.errors(function() nn[name]()(a, b) end, name, 'input is 4x1 but target is 4', 'same shape')
    T.errors(function() nn[name]()(mf.zeros(3), mf.zeros(1)) end, 'input is 3 but target is 1')
    T.errors(function() nn[name]()(mf.zeros(2), mf.zeros(2, {dtype = 'float64'})) end, 'float32', 'float64')
  end
  T.errors(function() nn.MSELoss()(mf.zeros(2, {dtype = 'int64'}), mf.zeros(2, {dtype = 'int64'})) end, 'expected float32 or float64')
  local logits = mf.zeros(4, 3)
  T.errors(function() nn.CrossEntropyLoss()(logits, mf.ones(4, 1, {dtype = 'int64'})) end,
    'CrossEntropyLoss', 'target is 4x1', '1-D tensor of N class labels')
  T.errors(function() nn.NLLLoss()(logits, mf.ones(5, {dtype = 'int64'})) end, 'NLLLoss', 'input is 4x3 (4 rows) but target has 5 labels')
  T.errors(function() nn.CrossEntropyLoss()(mf.zeros(3), mf.ones(3, {dtype = 'int64'})) end, 'N x C scores')
  T.errors(function() nn.BCELoss()(mf.tensor{0.5, 1.5}, mf.tensor{0, 1}) end, 'probabilities in [0, 1]', 'max 1.5')
  -- in a graph: a rank difference is caught when the graph is built, unknown batch sizes allowed
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 1}, 'x')
  T.errors(function() nn.MSELoss()(x, mf.placeholder('float32', {-1}, 'y')) end, 'input is ?x1 but target is ?')
  T.eq(nn.MSELoss()(x, mf.placeholder('float32', {-1, 1}, 'y')):dim(), 0)
end)

T.test('L1Loss and BCELoss values', function()
  local a, b = mf.tensor({1, -2, 3}, 'float64'), mf.tensor({0, 0, 5}, 'float64')
  T.near(nn.L1Loss()(a, b):item(), (1 + 2 + 2) / 3, 1e-15)
  T.near(nn.L1Loss{reduction = 'sum'}(a, b):item(), 5, 1e-15)
  local p, y = mf.tensor({0.9, 0.2, 0, 1}, 'float64'), mf.tensor({1, 0, 0, 0}, 'float64')
  -- -log 0.9, -log 0.8, 0 (log 1), and log(1 - 1) clamped at -100 -> 100
  local want = (-math.log(0.9) - math.log(0.8) + 0 + 100) / 4
  T.near(nn.BCELoss()(p, y):item(), want, 1e-12)
end)

T.finish()
