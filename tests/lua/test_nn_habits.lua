-- The nn and data habits of Torch7 and PyTorch users (issue 21, item 2): Sequential:add/get/size,
-- clone, getParameters (flat views), custom-module parameters as operands (eager and graph),
-- Linear on 1-D and 3-D inputs, CrossEntropyLoss on N x C x H x W against recorded PyTorch
-- numbers, `for bx, by in loader do`, and the printed form of every module class.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local nn = mf.nn

local function flat_values(t)
  local out, f = {}, t:double():contiguous():reshape(t:numel())
  for i = 1, t:numel() do out[i] = f:get(i) end
  return out
end
local function near_list(got, want, tol, what)
  T.eq(#got, #want, (what or 'list') .. ' length')
  for i = 1, #want do T.near(got[i], want[i], tol, ('%s[%d]'):format(what or 'list', i)) end
end

-- a 3 -> 2 -> 1 network with hand-set parameters (values 1..11 in parameter order)
local function small_net()
  local net = nn.Sequential():add(nn.Linear(3, 2)):add(nn.Tanh()):add(nn.Linear(2, 1))
  net:get(1).weight.data:copy(mf.tensor{{1, 2, 3}, {4, 5, 6}})
  net:get(1).bias.data:copy(mf.tensor{7, 8})
  net:get(3).weight.data:copy(mf.tensor{{9, 10}})
  net:get(3).bias.data:copy(mf.tensor{11})
  return net
end

T.test('Sequential:add(module) chains (Torch7); get(i) and size()', function()
  local a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
  local s = nn.Sequential()
  T.eq(s:add(a), s, 'add returns the Sequential')
  s:add(b):add(c)
  T.eq(s:size(), 3, 'size')
  T.eq(s:get(1), a) T.eq(s:get(2), b) T.eq(s:get(3), c) T.eq(s:get(-1), c, 'get(-1) is the last')
  T.eq(#s:parameters(), 4)
  -- names continue after the constructor's list and after named children
  local s2 = nn.Sequential{nn.Tanh()}:add(nn.ReLU())
  T.eq(s2._child_order[2], '2')
  local net = nn.Module('Net')()
  net:add('head', nn.ReLU()):add(nn.Tanh())
  T.eq(net._child_order[2], '2')
  -- computes as the listed modules in order
  s:get(1).weight.data:copy(mf.tensor{{1, 0}, {0, 1}, {1, -1}})
  s:get(1).bias.data:copy(mf.tensor{0, 0, 0})
  s:get(3).weight.data:copy(mf.tensor{{1, 1, 1}})
  s:get(3).bias.data:copy(mf.tensor{0.5})
  T.tensor_eq(s(mf.tensor{{2, 3}}), {{2 + 3 + 0 + 0.5}})   -- relu(2 - 3) = 0
  T.errors(function() s:get(4) end, 'Sequential:get(4)', 'out of range', '3 child modules (1..3)')
  T.errors(function() s:get(0) end, 'Sequential:get(0)', 'out of range')
  T.errors(function() s:get('1') end, 'Sequential:get(i)', 'expected an integer position 1..3')
  T.errors(function() nn.Sequential():get(1) end, 'it has 0 child modules')
  T.errors(function() s:add(nn.ReLU) end, 'expected a module')
end)

T.test('add refuses a cycle: the module itself or one that contains it (print and forward would recurse)', function()
  local s = nn.Sequential()
  T.errors(function() s:add(s) end, "Sequential: add('1', m)", 'the module itself', 'cannot contain itself')
  T.errors(function() s:add('me', s) end, "add('me', m)", 'the module itself')
  T.errors(function() s.me = s end, 'the module itself')
  local inner = nn.Sequential():add(nn.ReLU())
  local outer = nn.Sequential():add(nn.Tanh()):add(inner)
  T.errors(function() inner:add(outer) end, 'a Sequential that contains this Sequential')
  local deep = nn.Sequential():add(nn.Sequential():add(inner))
  T.errors(function() inner:add(deep) end, 'cannot contain itself')
  T.errors(function() nn.Sequential{nn.ReLU(), outer}:get(2):get(2):add(outer) end, 'cannot contain itself')
  T.eq(inner:size(), 1, 'a refused add leaves the children as they were') T.eq(s:size(), 0)
  -- one module in two places is no cycle (PyTorch allows sharing)
  local shared = nn.ReLU()
  local twice = nn.Sequential():add(shared):add(nn.Sequential():add(shared))
  T.eq(twice:size(), 2)
  T.tensor_eq(twice(mf.tensor{-1, 2}), {0, 2})
  assert(tostring(outer):find('Tanh', 1, true))
end)

T.test('a Parameter indexes as its tensor: p[{i, j}] reads and writes the tensor, not the holder', function()
  local p = nn.Parameter(mf.tensor{{1, 2}, {3, 4}})
  T.eq(p[{1, 2}], 2) T.eq(p[{2, 1}], 3) T.eq(p[{-1, -1}], 4)
  T.tensor_eq(p[{2}], {3, 4}) T.tensor_eq(p[1], {1, 2})
  p[{1, 1}] = 9
  p[{2}] = 0
  T.tensor_eq(p.data, {{9, 2}, {0, 0}})
  T.eq(rawget(p, 1), nil) T.eq(next(p, nil) ~= nil, true)
  for k in pairs(p) do assert(type(k) == 'string', 'a non-string key stored on the holder') end
  local b = nn.Parameter(mf.tensor({{1, 2}, {3, 4}}, 'int64'))
  b[{2, 1}] = 7
  T.tensor_eq(b.data, {{1, 2}, {7, 4}})
  T.errors(function() return p[{3, 1}] end, 'out of range')
  T.eq(p:numel(), 4) T.eq(p:size(1), 2)  -- (#p is 0: LuaJIT ignores __len on tables)
  assert(mf.help_text('nn.Parameter'):find('#p is 0', 1, true))
end)

T.test('clone: a deep copy with equal values and independent storage (buffers and sharing too)', function()
  local bn = nn.BatchNorm1d(2)
  local lin = nn.Linear(2, 2)
  local s = nn.Sequential{lin, bn, nn.Tanh(), lin}   -- lin used twice
  bn.running_mean:copy(mf.tensor{1, 2})
  local c = s:clone()
  T.tensor_eq(c:get(1).weight.data, lin.weight.data:totable())
  T.tensor_eq(c:get(2).running_mean, {1, 2})
  T.eq(c:get(1), c:get(4), 'the shared child stays shared in the copy')
  T.eq(#c:parameters(), 4)
  assert(c:get(1) ~= lin and c:get(1).weight ~= lin.weight)
  c:get(1).weight.data:fill(7)
  c:get(2).running_mean:fill(9)
  assert(lin.weight.data:get(1, 1) ~= 7, 'the original parameter is unchanged')
  T.tensor_eq(bn.running_mean, {1, 2}, nil, 'the original buffer is unchanged')
  lin.bias.data:fill(-3)
  assert(c:get(1).bias.data:get(1) ~= -3, 'the copy does not follow the original')
  -- options and mode are copied; the copy computes as the original did
  local d = nn.Dropout(0.25):evaluate():clone()
  T.eq(d.p, 0.25) T.eq(d.training, false)
  local conv = nn.Conv2d(1, 2, 3, {stride = 2, padding = 1})
  local cc = conv:clone()
  T.eq(tostring(cc), tostring(conv))
  local x = mf.rand(1, 1, 5, 5)
  T.tensor_eq(cc(x), conv(x):totable())
  cc.stride[1] = 1
  T.eq(conv.stride[1], 2, 'option tables are copied, not shared')
  -- a clone can be trained in a graph without touching the original
  local w0 = lin.weight.data:clone()
  mf.reset_default_graph()
  local xs = mf.placeholder('float32', {-1, 2}, 'x')
  local c1 = c:get(1)
  local step = mf.optim.SGD(c1:parameters(), 0.5):minimize(mf.sum(c1(xs)))
  mf.Session():run(step, {[xs] = mf.tensor{{1, 2}}})
  T.tensor_eq(lin.weight.data, w0:totable(), nil, 'original after training the clone')
  T.errors(function() s.clone() end, 'clone', 'with a colon')
end)

T.test('getParameters: each parameter is a view of one flat tensor, both ways', function()
  local net = small_net()
  local flat, gflat = net:getParameters()
  T.eq(flat:shape_str(), '11') T.eq(gflat:shape_str(), '11')
  T.tensor_eq(flat, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
  T.tensor_eq(gflat, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
  -- writing the flat tensor changes the parameters
  flat:copy(mf.arange(11) * 10)   -- 0, 10, ..., 100
  T.tensor_eq(net:get(1).weight.data, {{0, 10, 20}, {30, 40, 50}})
  T.tensor_eq(net:get(3).bias.data, {100})
  -- and writing a parameter changes the flat tensor
  net:get(3).weight.data:copy(mf.tensor{{-1, -2}})
  T.tensor_eq(flat, {0, 10, 20, 30, 40, 50, 60, 70, -1, -2, 100})
  -- gradients are views of the flat gradient
  net:get(1).bias.grad:copy(mf.tensor{0.5, 0.25})
  T.eq(gflat:get(7), 0.5) T.eq(gflat:get(8), 0.25)
  gflat:fill(1)
  T.tensor_eq(net:get(3).weight.grad, {{1, 1}})
  net:zeroGradParameters()
  T.tensor_eq(gflat, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil, 'zeroGradParameters writes in place')
  -- an eager optimizer step on the views moves the flat tensor: p <- p - 0.5 * grad
  net:get(1).weight.grad:fill(2)
  mf.optim.SGD(net:parameters(), 0.5):step()
  T.tensor_eq(flat, {-1, 9, 19, 29, 39, 49, 60, 70, -1, -2, 100})
  -- a module without parameters gives empty tensors
  local e1, e2 = nn.ReLU():getParameters()
  T.eq(e1:numel(), 0) T.eq(e2:numel(), 0)
  -- one dtype for all
  local mixed = nn.Sequential{nn.Linear(1, 1), nn.Linear(1, 1)}
  mixed:get(2).weight.data = mf.zeros(1, 1, {dtype = 'float64'})
  T.errors(function() mixed:getParameters() end, 'getParameters', 'parameter 3 is float64', 'one dtype and device')
end)

T.test('getParameters survives graph training, state_dict save/load and a tied parameter', function()
  -- y = w . tanh(W x + b) + c trained one SGD step in a graph; the flat tensor sees the update
  local net = small_net()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local out = net(x)                       -- parameters bound into the graph before flattening
  local loss = mf.sum(out)
  local step = mf.optim.SGD(net:parameters(), 0.1):minimize(loss)
  local flat = net:getParameters()          -- rebinds the bound Variables to the views
  flat:copy(mf.tensor{0.1, 0.2, 0.3, -0.1, 0.0, 0.1, 0, 0, 1, 2, 0})
  local sess = mf.Session()
  local xv = mf.tensor{{1, 2, 3}}
  -- forward with the new values: h = tanh(1.4), tanh(0.2); out = h1 + 2 h2
  local h1, h2 = math.tanh(1.4), math.tanh(0.2)
  T.near(sess:run(out, {[x] = xv}):get(1, 1), h1 + 2 * h2, 1e-6, 'graph reads the flat storage')
  sess:run(step, {[x] = xv})
  -- d loss / d W[1, :] = w1 (1 - h1^2) x; d/db1 = w1 (1 - h1^2); d/dw = h; d/dc = 1
  local g1, g2 = 1 - h1 * h1, 2 * (1 - h2 * h2)
  local want = {0.1 - 0.1 * g1, 0.2 - 0.2 * g1, 0.3 - 0.3 * g1, -0.1 - 0.1 * g2, 0 - 0.2 * g2, 0.1 - 0.3 * g2,
                -0.1 * g1, -0.1 * g2, 1 - 0.1 * h1, 2 - 0.1 * h2, -0.1}
  near_list(flat_values(flat), want, 1e-5, 'flat after a graph step')
  -- save the state dict (views) and load it into a fresh net: values equal
  local path = os.tmpname()
  net:save(path)
  local other = small_net()
  other:load(path)
  near_list(flat_values(other:getParameters()), want, 1e-6, 'loaded copy')
  -- loading into a flattened net writes through the views into its flat tensor
  local flat2 = small_net():getParameters()
  local n3 = small_net()
  local f3 = n3:getParameters()
  n3:load(path)
  near_list(flat_values(f3), want, 1e-6, 'load_state_dict writes the flat storage')
  T.eq(flat2:get(1), 1)
  os.remove(path)
  -- a parameter shared by two modules takes one slot
  local lin = nn.Linear(2, 2)
  local tied = nn.Sequential{lin, lin}
  local ft = tied:getParameters()
  T.eq(ft:numel(), 6)
end)

T.test('Linear on a 1-D input and on N x L x in inputs (the last dim), eager and in a graph', function()
  local m = nn.Linear(3, 2)
  m.weight.data:copy(mf.tensor{{1, 2, 3}, {-1, 0, 0.5}})
  m.bias.data:copy(mf.tensor{0.25, -1})
  T.tensor_eq(m(mf.tensor{1, 1, 1}), {6.25, -1.5})
  local x3 = mf.tensor{{{1, 1, 1}, {2, 0, -1}}, {{0, 0, 0}, {0, 1, 0}}}   -- 2 x 2 x 3
  local want = {{{6.25, -1.5}, {-0.75, -3.5}}, {{0.25, -1}, {2.25, -1}}}
  T.tensor_eq(m(x3), want)
  T.tensor_eq(m(x3:transpose(1, 2)), {{want[1][1], want[2][1]}, {want[1][2], want[2][2]}}, nil, 'a transposed view')
  mf.reset_default_graph()
  local s = mf.placeholder('float32', {-1, 2, 3}, 'x')
  local y = m(s)
  local sess = mf.Session()
  T.tensor_eq(sess:run(y, {[s] = x3}), want)
  -- the weight gradient sums over every leading dim: d sum(y) / dW[j, :] = sum of x rows
  local gw = mf.gradients(mf.sum(y), {mf.nn._bound_variable(m.weight, s.graph)})[1]
  T.tensor_eq(sess:run(gw, {[s] = x3}), {{3, 2, 0}, {3, 2, 0}})
  local v = mf.placeholder('float32', {3}, 'v')
  T.tensor_eq(sess:run(m(v), {[v] = mf.tensor{1, 1, 1}}), {6.25, -1.5})
  T.errors(function() m(mf.ones(2, 2, 4)) end, 'Linear(3 -> 2): input is 2x2x4', '... x 3')
  T.errors(function() m(mf.tensor(1)) end, 'Linear(3 -> 2): input is scalar')
end)

-- PyTorch 2.x, float64: x = 2 sin(1.3 i), i = 0..23, as 2 x 3 x 2 x 2; labels (0-based)
-- [[[0,2],[1,1]],[[2,0],[0,1]]]; F.cross_entropy(x, y[, weight][, ignore_index][, reduction])
local CE = {
  mean = 1.76908566789276, sum = 14.15268534314208,
  none = {0.30882760247232877, 3.678648881645003, 0.5277277564029091, 1.5963132606188224, 0.9799557927057858,
          3.681495618418145, 1.173599351038535, 2.206117079840552},
  grad = {-0.03321158101415424, 0.09955879700689835, 0.028064404618536876, 0.003381337812216842,
          0.015682992162224768, 0.02228406835655171, -0.051257006973252944, -0.09966972104753556,
          0.017528588851929476, -0.12184286536345004, 0.023192602354716065, 0.0962883832353187,
          0.012663810366346196, -0.12185184011428019, -0.08634352128300984, 0.1069111621203687,
          0.06542022829536553, 0.01624512645780496, 0.018003189107377592, -0.11123407057141665,
          -0.07808403866171174, 0.10560671365647521, 0.06834033217563225, 0.004322908451047954},
  w_mean = 1.673777068846301,            -- weight = {0.5, 2, 1}
  ign_mean = 1.9645054492559595,         -- ignore_index = 1 (2 here)
  w_ign_mean = 1.6648651085094195,       -- weight and ignore_index = 0 (1 here)
  ign_none = {0.30882760247232877, 3.678648881645003, 0, 0, 0.9799557927057858, 3.681495618418145,
              1.173599351038535, 0},
}
local function ce_input()
  local v = {}
  for i = 0, 23 do v[i + 1] = 2 * math.sin(1.3 * i) end
  return mf.tensor(v, 'float64'):reshape(2, 3, 2, 2), mf.tensor({1, 3, 2, 2, 3, 1, 1, 2}, 'int64'):reshape(2, 2, 2)
end

T.test('CrossEntropyLoss on N x C x H x W logits with N x H x W labels: PyTorch numbers, eager', function()
  local x, y = ce_input()
  T.near(nn.CrossEntropyLoss()(x, y):item(), CE.mean, 1e-12, 'mean')
  T.near(nn.CrossEntropyLoss{reduction = 'sum'}(x, y):item(), CE.sum, 1e-12, 'sum')
  local none = nn.CrossEntropyLoss{reduction = 'none'}(x, y)
  T.eq(none:shape_str(), '2x2x2')
  near_list(flat_values(none), CE.none, 1e-12, 'none')
  local w = mf.tensor({0.5, 2, 1}, 'float64')
  T.near(nn.CrossEntropyLoss{weight = w}(x, y):item(), CE.w_mean, 1e-12, 'weight')
  T.near(nn.CrossEntropyLoss{ignore_index = 2}(x, y):item(), CE.ign_mean, 1e-12, 'ignore_index')
  T.near(nn.CrossEntropyLoss{weight = w, ignore_index = 1}(x, y):item(), CE.w_ign_mean, 1e-12, 'weight + ignore')
  near_list(flat_values(nn.CrossEntropyLoss{ignore_index = 2, reduction = 'none'}(x, y)), CE.ign_none, 1e-12, 'ign none')
  -- a view: the logits as a permuted N x H x W x C tensor brought back to N x C x H x W
  local nhwc = x:permute{1, 3, 4, 2}:contiguous()
  T.near(nn.CrossEntropyLoss()(nhwc:permute{1, 4, 2, 3}, y):item(), CE.mean, 1e-12, 'permuted view')
  -- the N x C form still works, and equals the flattened positions
  local rows = x:permute{1, 3, 4, 2}:reshape(8, 3)
  T.near(nn.CrossEntropyLoss()(rows, y:reshape(8)):item(), CE.mean, 1e-12, 'N x C')
  -- NLLLoss on log_softmax over dim 2 agrees
  T.near(nn.NLLLoss()(mf.log_softmax(x, 2), y):item(), CE.mean, 1e-12, 'NLLLoss')
  -- a NaN logit makes its position's loss NaN and leaves the others as they were
  local xn = x:clone()
  xn:set(1, 1, 1, 1, 0 / 0)
  local ln = flat_values(nn.CrossEntropyLoss{reduction = 'none'}(xn, y))
  assert(ln[1] ~= ln[1], 'NaN at the NaN position')
  near_list({unpack(ln, 2)}, {unpack(CE.none, 2)}, 1e-12, 'other positions')
  -- wrong shapes and options
  T.errors(function() nn.CrossEntropyLoss()(x, y:reshape(2, 4)) end, 'CrossEntropyLoss', 'target is 2x4',
    'the input\'s shape without its class dim 2')
  T.errors(function() nn.CrossEntropyLoss()(x, mf.ones(2, 2, 3, {dtype = 'int64'})) end, 'input is 2x3x2x2',
    'target is 2x2x3', 'expected target 2x2x2')
  T.errors(function() nn.CrossEntropyLoss{weight = mf.ones(4, {dtype = 'float64'})}(x, y) end,
    'weight has 4 entries but the input has 3 classes')
  T.errors(function() nn.CrossEntropyLoss{weight = {1, 2, 3}} end, 'weight is', 'expected a 1-D float32 or float64 tensor')
  T.errors(function() nn.CrossEntropyLoss{ignore_index = 1.5} end, 'ignore_index')
  T.errors(function() nn.CrossEntropyLoss()(x, y:double()) end, 'targets are float64', 'int64 class labels in 1..3')
end)

T.test('CrossEntropyLoss on N x C x H x W in a graph: value and gradient as PyTorch', function()
  local x, y = ce_input()
  for _, opts in ipairs{{}, {weight = mf.tensor({0.5, 2, 1}, 'float64'), ignore_index = 1}} do
    mf.reset_default_graph()
    local xs = mf.placeholder('float64', {-1, 3, 2, 2}, 'x')
    local ys = mf.placeholder('int64', {-1, 2, 2}, 'y')
    local h = xs * 1   -- an intermediate, not the fed symbol itself
    local loss = nn.CrossEntropyLoss(opts)(h, ys)
    local g = mf.gradients(loss, {xs})[1]
    local lv, gv = mf.Session():run({loss, g}, {[xs] = x, [ys] = y})
    T.near(lv:item(), opts.weight and CE.w_ign_mean or CE.mean, 1e-12, 'graph loss')
    if not opts.weight then near_list(flat_values(gv), CE.grad, 1e-12, 'graph gradient') end
  end
  mf.reset_default_graph()
  local xs = mf.placeholder('float64', {-1, 3, 2, 2}, 'x')
  local ys = mf.placeholder('int64', {-1, 2, 2}, 'y')
  local none = nn.CrossEntropyLoss{reduction = 'none'}(xs, ys)
  local nv = mf.Session():run(none, {[xs] = x, [ys] = y})
  T.eq(nv:shape_str(), '2x2x2')
  near_list(flat_values(nv), CE.none, 1e-12, 'graph none')
end)

T.test('custom module parameters work as tensors in forward: eager and a graph training step', function()
  local Affine = nn.Module('Affine')
  function Affine:__init()
    self.w = nn.Parameter(mf.tensor{2, 3})
    self.b = nn.Parameter(mf.tensor{0.5, -1})
  end
  function Affine:forward(x) return x * self.w + self.b end
  local m = Affine()
  T.tensor_eq(m(mf.tensor{{1, 1}, {2, 3}}), {{2.5, 2}, {4.5, 8}})
  -- a Parameter on the left, in op calls, in methods and unary minus
  local p = m.w
  T.tensor_eq(p * 2, {4, 6}) T.tensor_eq(2 - p, {0, -1}) T.tensor_eq(-p, {-2, -3}) T.tensor_eq(p / p, {1, 1})
  T.tensor_eq(mf.add(p, m.b), {2.5, 2}) T.tensor_eq(mf.exp(p * 0), {1, 1}) T.eq(p:sum():item(), 5)
  T.tensor_eq(mf.concat({p, m.b}, 1), {2, 3, 0.5, -1}) T.tensor_eq(p:reshape(2, 1), {{2}, {3}})
  T.eq(p:size(1), 2) T.eq(p:dim(), 1) T.eq(p:dtype(), 'float32')
  T.eq(tostring(p), 'Parameter(2, float32)')
  local pt = nn.Parameter(mf.tensor{{1, 2}, {3, 4}}:t())   -- a transposed view
  T.tensor_eq(pt * 1, {{1, 3}, {2, 4}}) T.tensor_eq(mf.matmul(pt, mf.tensor{{1}, {0}}), {{1}, {2}})
  -- a graph step: loss = sum((x w + b)^2) at x = {1, 1}: y = {2.5, 2}, dw = 2 y x = {5, 4}, db = {5, 4}
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 2}, 'x')
  local loss = mf.sum(mf.square(m(x)))
  local step = mf.optim.SGD(m:parameters(), 0.1):minimize(loss)
  local sess = mf.Session()
  T.near(sess:run(loss, {[x] = mf.tensor{{1, 1}}}):item(), 10.25, 1e-6)
  sess:run(step, {[x] = mf.tensor{{1, 1}}})
  T.tensor_eq(m.w.data, {1.5, 2.6}, 1e-6) T.tensor_eq(m.b.data, {0, -1.4}, 1e-6)
  T.tensor_eq(m(mf.tensor{{1, 1}}), {{1.5, 1.2}}, 1e-6, 'eager sees the trained values')
  -- a parameter used with no symbol beside it (self.w * 2, self.w:sum()) is its Variable while a
  -- forward builds a graph: d/dw sum(x * sum(2 w)) = 2 sum(x) per element
  local Scale = nn.Module('Scale')
  function Scale:__init() self.w = nn.Parameter(mf.tensor{2, 1}) end
  function Scale:forward(v) return v * (self.w * 2):sum() + mf.relu(self.w):sum() end
  local sc = Scale()
  T.tensor_eq(sc(mf.tensor{1, 2}), {6 + 3, 12 + 3})
  mf.reset_default_graph()
  local v = mf.placeholder('float32', {-1}, 'v')
  local out = mf.sum(sc(v))
  local st = mf.optim.SGD(sc:parameters(), 0.25):minimize(out)
  mf.Session():run(st, {[v] = mf.tensor{1, 2}})
  -- d out / d w_k = 2 * (1 + 2) + 2 (relu term, counted per element of v) = 8
  T.tensor_eq(sc.w.data, {2 - 0.25 * 8, 1 - 0.25 * 8})
  -- a module taking a list of inputs builds in the graph of its first symbol
  local Pair = nn.Module('Pair')
  function Pair:__init() self.w = nn.Parameter(mf.tensor{3}) end
  function Pair:forward(xs) return xs[1] * self.w:sum() + xs[2] end
  local pm = Pair()
  T.tensor_eq(pm{mf.tensor{1}, mf.tensor{1}}, {4})
  mf.reset_default_graph()
  local a, b = mf.placeholder('float32', {1}, 'a'), mf.placeholder('float32', {1}, 'b')
  local po = pm{a, b}
  local gw = mf.gradients(mf.sum(po), {mf.nn._bound_variable(pm.w, a.graph)})[1]
  T.tensor_eq(mf.Session():run(gw, {[a] = mf.tensor{5}, [b] = mf.tensor{1}}), {5}, nil, 'gradient reaches w')
  -- a failing graph forward leaves no graph behind: eager use afterwards is eager
  local Bad = nn.Module('Bad')
  function Bad:__init() self.w = nn.Parameter(mf.ones(2)) end
  function Bad:forward() error('boom') end
  T.errors(function() Bad()(v) end, 'boom')
  T.eq(mf.is_tensor(sc.w * 1), true, 'no graph left set after an error')
end)

T.test('for bx, by in loader do: one epoch per loop, as loader:iter()', function()
  local ds = mf.data.TensorDataset(mf.arange(1, 8):reshape(7, 1), mf.arange(11, 18))
  local loader = ds:loader{batch = 3}
  local seen, ys = {}, {}
  for bx, by in loader do
    seen[#seen + 1] = bx:numel()
    ys[#ys + 1] = by:get(1)
  end
  T.eq(table.concat(seen, ','), '3,3,1') T.eq(table.concat(ys, ','), '11,14,17')
  T.eq(loader.epoch, 2, 'one epoch ran')
  -- the same shuffled order as iter() gives for that epoch
  local a = ds:loader{batch = 2, shuffle = true, seed = 5}
  local b = ds:loader{batch = 2, shuffle = true, seed = 5}
  local oa, ob = {}, {}
  for _, y in a do for i = 1, y:numel() do oa[#oa + 1] = y:get(i) end end
  for _, y in b:iter() do for i = 1, y:numel() do ob[#ob + 1] = y:get(i) end end
  T.eq(table.concat(oa, ','), table.concat(ob, ','))
  -- the order recorded for seed 5, epochs 1 and 2 (a Python transcription of Loader:_order's
  -- splitmix64 Fisher-Yates gives samples 7,5,4,2,1,3,6 and 5,7,1,3,4,6,2): shuffled, not 1..7
  T.eq(table.concat(oa, ','), '17,15,14,12,11,13,16')
  local oa2 = {}
  for _, y in a do for i = 1, y:numel() do oa2[#oa2 + 1] = y:get(i) end end
  T.eq(table.concat(oa2, ','), '15,17,11,13,14,16,12', 'epoch 2 has its own order')
  -- a loop left with break: the next loop starts a fresh epoch
  local l2 = ds:loader{batch = 2}
  for _ in l2 do break end
  local n = 0
  for bx in l2 do n = n + 1 if n == 1 then T.eq(bx:get(1, 1), 1, 'fresh epoch from the start') end end
  T.eq(n, 4) T.eq(l2.epoch, 3)
  -- nested loops over one loader: each loop resumes its own epoch (the inner one runs 3 epochs)
  local l3 = ds:loader{batch = 3}
  local pairs_seen = {}
  for bx in l3 do
    for by in l3 do pairs_seen[#pairs_seen + 1] = bx:get(1, 1) .. ':' .. by:get(1, 1) end
  end
  T.eq(table.concat(pairs_seen, ' '), '1:1 1:4 1:7 4:1 4:4 4:7 7:1 7:4 7:7')
  T.eq(l3.epoch, 5, 'one outer and three inner epochs')
  -- inputs without targets
  local k = 0
  for bx, by in mf.data.TensorDataset(mf.ones(4, 2)):loader{batch = 4} do
    k = k + 1
    T.eq(bx:shape_str(), '4x2') T.eq(by, nil)
  end
  T.eq(k, 1)
end)

T.test('mf.fit and checkpoints on a custom module whose forward uses its parameters, after getParameters', function()
  -- y = X (1, -2, 0.5)^T + 0.25 exactly: training recovers those values in the flat tensor
  mf.manual_seed(2)
  local Affine = nn.Module('Affine')
  function Affine:__init() self.w = nn.Parameter(mf.randn(3, 1)) self.b = nn.Parameter(mf.zeros(1)) end
  function Affine:forward(x) return mf.matmul(x, self.w) + self.b end
  local m = Affine()
  local flat = m:getParameters()
  local X = mf.randn(32, 3)
  local Y = mf.matmul(X, mf.tensor{{1}, {-2}, {0.5}}) + 0.25
  local opt = mf.optim.SGD(m:parameters(), {lr = 0.1})
  mf.fit{model = m, loss = nn.MSELoss(), optimizer = opt, data = mf.data.TensorDataset(X, Y):loader{batch = 8},
         epochs = 30, quiet = true}
  near_list(flat_values(flat), {1, -2, 0.5, 0.25}, 1e-4, 'trained flat parameters')
  local path = os.tmpname()
  mf.save_checkpoint(path, {model = m, optimizer = opt, epoch = 3})
  local m2 = Affine()
  local f2 = m2:getParameters()
  T.eq(mf.load_checkpoint(path, {model = m2, optimizer = mf.optim.SGD(m2:parameters(), {lr = 0.1})}), 3)
  os.remove(path)
  near_list(flat_values(f2), flat_values(flat), 0, 'checkpoint loaded into the flat storage')
end)

T.test("Torch7's m:training() beside PyTorch's boolean flag m.training", function()
  local m = nn.Sequential():add(nn.Linear(3, 3)):add(nn.Dropout(0.5))
  m:evaluate()
  T.eq(m.training, false) T.eq(m:get(2).training, false)
  T.eq(m:training(), m, 'returns the module, as m:train() does')
  T.eq(m.training, true) T.eq(m:get(2).training, true)
  T.eq(type(m.training), 'boolean', 'the flag stays a boolean: if self.training tests it')
  -- in training mode Dropout zeroes about half of a large input; in evaluation mode it is the identity
  local x = mf.ones(1, 4000)
  local d = m:get(2)
  local zeros = d(x):eq(0):sum():item()
  assert(zeros > 1600 and zeros < 2400, 'Dropout in training mode after m:training(): ' .. zeros .. ' zeros of 4000')
  m:eval()
  T.eq(d(x):eq(0):sum():item(), 0, 'Dropout is the identity after m:eval()')
  -- m:training() again from evaluation mode, on a leaf module too
  T.eq(d:training(), d) T.eq(d.training, true)
  T.errors(function() m:training(false) end, 'Sequential:training(): takes no argument')
  -- calling any other boolean is still Lua's own error (pcall, not T.errors: test_messages keeps
  -- Lua's raw messages out of moonflow's errors, and this one is Lua's, on purpose)
  local b = true
  local ok, err = pcall(function() b(1) end)
  assert(not ok and tostring(err):find('attempt to call a boolean value', 1, true), tostring(err))
  ok, err = pcall(function() local f = false; f() end)
  assert(not ok and tostring(err):find('attempt to call a boolean value', 1, true), tostring(err))
end)

T.test('help() documents the new methods', function()
  local m = nn.Sequential()
  for name, frag in pairs{add = 'calls chain', get = '1-based', size = 'number of child modules', clone = 'deep copy',
                          getParameters = 'views', train = 'm.training', evaluate = 'evaluation mode', eval = 'evaluation mode'} do
    assert(mf.help_text(m[name]):find(frag, 1, true), name .. ': ' .. mf.help_text(m[name]))
  end
  assert(mf.help_text(nn.CrossEntropyLoss):find('ignore_index', 1, true))
  assert(mf.help_text('data.loader'):find('for bx, by in loader do', 1, true))
end)

T.test('print(module) shows every constructor option', function()
  local cases = {
    {nn.Linear(784, 512), 'Linear(784 -> 512, bias=true)  401,920 params'},
    {nn.Linear(784, 512, {bias = false}), 'Linear(784 -> 512, bias=false)  401,408 params'},
    {nn.Conv2d(1, 6, 5), 'Conv2d(1 -> 6, kernel_size=5x5, stride=1x1, padding=0x0, dilation=1x1, bias=true)  156 params'},
    {nn.Conv2d(3, 4, {3, 1}, {stride = {2, 1}, padding = 1, dilation = 2, bias = false}),
     'Conv2d(3 -> 4, kernel_size=3x1, stride=2x1, padding=1x1, dilation=2x2, bias=false)  36 params'},
    {nn.MaxPool2d(2), 'MaxPool2d(kernel_size=2x2, stride=2x2, padding=0x0)'},
    {nn.MaxPool2d(3, {stride = 1, padding = 1}), 'MaxPool2d(kernel_size=3x3, stride=1x1, padding=1x1)'},
    {nn.AvgPool2d(2), 'AvgPool2d(kernel_size=2x2, stride=2x2, padding=0x0, count_include_pad=true)'},
    {nn.AvgPool2d(3, {padding = 1, count_include_pad = false}),
     'AvgPool2d(kernel_size=3x3, stride=3x3, padding=1x1, count_include_pad=false)'},
    {nn.AdaptiveAvgPool2d({7, 5}), 'AdaptiveAvgPool2d(output_size=7x5)'},
    {nn.ReLU(), 'ReLU()'}, {nn.Tanh(), 'Tanh()'}, {nn.Sigmoid(), 'Sigmoid()'}, {nn.GELU(), 'GELU()'},
    {nn.LeakyReLU(), 'LeakyReLU(negative_slope=0.01)'}, {nn.LeakyReLU(0.2), 'LeakyReLU(negative_slope=0.2)'},
    {nn.Softmax(), 'Softmax(dim=-1)'}, {nn.LogSoftmax(2), 'LogSoftmax(dim=2)'},
    {nn.Flatten(), 'Flatten()'},
    {nn.Dropout(), 'Dropout(p=0.5)'}, {nn.Dropout(0.1), 'Dropout(p=0.1)'},
    {nn.BatchNorm1d(16), 'BatchNorm1d(16, eps=1e-05, momentum=0.1)  32 params'},
    {nn.BatchNorm2d(8, {eps = 1e-3, momentum = 0.01}), 'BatchNorm2d(8, eps=0.001, momentum=0.01)  16 params'},
    {nn.Embedding(1000, 64), 'Embedding(1000, 64)  64,000 params'},
    {nn.CrossEntropyLoss(), "CrossEntropyLoss(reduction='mean')"},
    {nn.CrossEntropyLoss{reduction = 'sum', weight = mf.ones(10), ignore_index = 0},
     "CrossEntropyLoss(reduction='sum', weight=10, ignore_index=0)"},
    {nn.NLLLoss{reduction = 'none'}, "NLLLoss(reduction='none')"},
    {nn.MSELoss(), "MSELoss(reduction='mean')"}, {nn.L1Loss{reduction = 'sum'}, "L1Loss(reduction='sum')"},
    {nn.BCELoss(), "BCELoss(reduction='mean')"}, {nn.BCEWithLogitsLoss(), "BCEWithLogitsLoss(reduction='mean')"},
  }
  local classes = {}
  for _, c in ipairs(cases) do
    T.eq(tostring(c[1]), c[2])
    classes[c[1].__name] = true
  end
  -- every module class of mf.nn is covered above
  for k, v in pairs(nn) do
    if type(v) == 'table' and rawget(v, '__name') and k ~= 'Sequential' and k ~= 'ModuleBase' then
      assert(classes[k], 'no print case for nn.' .. k)
    end
  end
  local s = nn.Sequential():add(nn.Linear(4, 3)):add(nn.ReLU())
  T.eq(tostring(s), 'Sequential (15 params)\n  (1): Linear(4 -> 3, bias=true)  15 params\n  (2): ReLU()')
  local Net = nn.Module('Net')
  function Net:__init() self.w = nn.Parameter(mf.ones(3)) end
  T.eq(tostring(Net()), 'Net()  3 params')
end)

T.finish()
