-- Options tables: every one rejects unknown keys naming the closest valid one, and invalid values
-- naming the option, the value and what was expected; PyTorch's positional lr is accepted.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local nn, optim = mf.nn, mf.optim

local function params() return nn.Linear(2, 2):parameters() end
local good_kernel = [[function(ins, outs, p) local y = outs[1]; return function() mf.kernels.fill(y, 1) end end]]

local cases = {
  -- sessions
  {'Session: misspelt key', function() return mf.Session{devcie = 'cpu'} end,
   "Session: unknown option 'devcie'; did you mean 'device'? (options: device, fuse, graph)"},
  {'Session: fuse not boolean', function() return mf.Session{fuse = 'yes'} end, "Session: option 'fuse' is 'yes'; expected true or false"},
  {'Session: graph not a graph', function() return mf.Session{graph = {}} end, "option 'graph'", 'mf.Graph()'},
  {'Session: not a table', function() return mf.Session(5) end, 'Session: expected a table of options, got 5'},
  -- optimizers
  {'SGD: NaN lr', function() return optim.SGD(params(), {lr = 0 / 0}) end, "optim.SGD: option 'lr' is nan; expected a finite number >= 0"},
  {'SGD: negative lr', function() return optim.SGD(params(), {lr = -1}) end, "option 'lr' is -1"},
  {'SGD: infinite lr', function() return optim.SGD(params(), {lr = math.huge}) end, "option 'lr' is inf"},
  {'SGD: positional NaN lr', function() return optim.SGD(params(), 0 / 0) end, "option 'lr' is nan"},
  {'SGD: momentum above 1', function() return optim.SGD(params(), {lr = 0.1, momentum = 1.5}) end,
   "option 'momentum' is 1.5; expected a finite number >= 0 and <= 1"},
  {'SGD: negative momentum', function() return optim.SGD(params(), {lr = 0.1, momentum = -0.1}) end, "option 'momentum' is -0.1"},
  {'SGD: negative weight decay', function() return optim.SGD(params(), {lr = 0.1, weight_decay = -1}) end, "option 'weight_decay' is -1"},
  {'SGD: learning_rate', function() return optim.SGD(params(), {learning_rate = 0.1}) end,
   "optim.SGD: unknown option 'learning_rate'; did you mean 'lr'?"},
  {'SGD: misspelt momentum', function() return optim.SGD(params(), {lr = 0.1, momentun = 0.9}) end, "did you mean 'momentum'?"},
  {'SGD: nesterov not boolean', function() return optim.SGD(params(), {lr = 0.1, nesterov = 1}) end, "option 'nesterov' is 1; expected true or false"},
  {'SGD: lr twice', function() return optim.SGD(params(), 0.1, {lr = 0.2}) end, 'lr given twice'},
  {'SGD: a module instead of its parameters', function() return optim.SGD(nn.Linear(2, 2), 0.1) end,
   'optim.SGD: params is a module; expected a list of parameters, e.g. model:parameters()'},
  {'SGD: a single tensor', function() return optim.SGD(mf.ones(2), 0.1) end, 'params is a 2 float32 tensor'},
  {'SGD: empty list', function() return optim.SGD({}, 0.1) end, 'non-empty list'},
  {'SGD: integer parameter', function() return optim.SGD({mf.ones(2, {dtype = 'int64'})}, 0.1) end, 'params[1] is a 2 int64 tensor', 'float32 or float64'},
  {'SGD: a number in the list', function() return optim.SGD({1, 2}, 0.1) end, 'params[1] is 1; expected an nn.Parameter or a tensor'},
  {'SGD: options in place of the parameters', function() return optim.SGD{lr = 0.1} end, 'the first argument is an options table',
   'optim.SGD(model:parameters(), {...})'},
  {'Adam: options in place of the parameters', function() return optim.Adam{betas = 0.9} end, 'the first argument is an options table'},
  {'SGD: param groups', function() return optim.SGD({{params = params(), lr = 0.1}}) end, 'parameter groups'},
  {'Adam: scalar betas', function() return optim.Adam(params(), {betas = 0.9}) end,
   "optim.Adam: option 'betas' is 0.9; expected a pair {beta1, beta2} of numbers in [0, 1)"},
  {'Adam: one beta', function() return optim.Adam(params(), {betas = {0.9}}) end, "option 'betas' is {0.9}"},
  {'Adam: beta of 1', function() return optim.Adam(params(), {betas = {0.9, 1}}) end, "option 'betas' is {0.9, 1}"},
  {'Adam: negative eps', function() return optim.Adam(params(), {eps = -1e-8}) end, "option 'eps' is -1e-08"},
  {'Adam: beta1 as PyTorch names it in state', function() return optim.Adam(params(), {beta1 = 0.8}) end, "did you mean 'betas'?"},
  {'AdamW: epsilon', function() return optim.AdamW(params(), {epsilon = 1e-6}) end, "optim.AdamW: unknown option 'epsilon'; did you mean 'eps'?"},
  {'set_lr NaN', function() return optim.SGD(params(), 0.1):set_lr(0 / 0) end, 'optim.SGD:set_lr: lr is nan'},
  {'StepLR: step_size 0', function() return optim.StepLR(optim.SGD(params(), 0.1), {step_size = 0}) end,
   "optim.StepLR: option 'step_size' is 0; expected an integer >= 1"},
  {'StepLR: missing step_size', function() return optim.StepLR(optim.SGD(params(), 0.1), {gamma = 0.5}) end,
   "option 'step_size' is required"},
  {'StepLR: misspelt', function() return optim.StepLR(optim.SGD(params(), 0.1), {setp_size = 2}) end, "did you mean 'step_size'?"},
  {'StepLR: NaN gamma', function() return optim.StepLR(optim.SGD(params(), 0.1), {step_size = 1, gamma = 0 / 0}) end, "option 'gamma' is nan"},
  {'StepLR: not an optimizer', function() return optim.StepLR(params(), {step_size = 1}) end, 'opt is', 'expected an mf.optim optimizer'},
  {'CosineAnnealingLR: t_max', function() return optim.CosineAnnealingLR(optim.SGD(params(), 0.1), {t_max = 10}) end, "did you mean 'T_max'?"},
  {'train: NaN rate', function() return mf.train.GradientDescentOptimizer(0 / 0) end, 'train.GradientDescentOptimizer: learning rate is nan'},
  {'train: momentum out of range', function() return mf.train.MomentumOptimizer(0.1, 2) end, 'momentum is 2'},
  {'train: Adam beta1 of 1', function() return mf.train.AdamOptimizer(0.1, {beta1 = 1}) end, "option 'beta1' is 1"},
  {'train: Adam betas', function() return mf.train.AdamOptimizer(0.1, {betas = {0.9, 0.99}}) end, "unknown option 'betas'; did you mean 'beta1'?"},
  -- modules
  {'Linear: misspelt bias', function() return nn.Linear(2, 2, {bais = false}) end, "nn.Linear: unknown option 'bais'; did you mean 'bias'?"},
  {'Linear: zero size', function() return nn.Linear(0, 2) end, 'nn.Linear(in, out): in is 0; expected an integer >= 1'},
  {'Linear: fractional size', function() return nn.Linear(2, 2.5) end, 'out is 2.5'},
  {'Linear: string size', function() return nn.Linear('2', 2) end, "in is '2'"},
  {'Conv2d: misspelt stride', function() return nn.Conv2d(1, 1, 3, {strid = 2}) end, "did you mean 'stride'?"},
  {'Conv2d: zero kernel', function() return nn.Conv2d(1, 1, 0) end, 'kernel_size is {0, 0}; expected integers >= 1'},
  {'Conv2d: negative padding', function() return nn.Conv2d(1, 1, 3, {padding = -1}) end, 'padding is {-1, -1}'},
  {'MaxPool2d: zero stride', function() return nn.MaxPool2d(2, {stride = 0}) end, 'stride is {0, 0}'},
  {'MaxPool2d: count_include_pad', function() return nn.MaxPool2d(2, {count_include_pad = true}) end, "unknown option 'count_include_pad'"},
  {'AvgPool2d: not boolean', function() return nn.AvgPool2d(2, {count_include_pad = 'yes'}) end, "option 'count_include_pad' is 'yes'"},
  {'BatchNorm1d: misspelt momentum', function() return nn.BatchNorm1d(3, {momentun = 0.1}) end, "did you mean 'momentum'?"},
  {'BatchNorm1d: eps 0', function() return nn.BatchNorm1d(3, {eps = 0}) end, "option 'eps' is 0; expected a finite number > 0"},
  {'BatchNorm2d: momentum 2', function() return nn.BatchNorm2d(3, {momentum = 2}) end, "option 'momentum' is 2"},
  {'Dropout: p above 1', function() return nn.Dropout(1.5) end, 'nn.Dropout: p is 1.5; expected a finite number >= 0 and <= 1'},
  {'Dropout: NaN', function() return nn.Dropout(0 / 0) end, 'p is nan'},
  {'ReLU: an argument', function() return nn.ReLU(0.1) end, 'nn.ReLU takes no arguments'},
  {'LeakyReLU: a string', function() return nn.LeakyReLU('x') end, "negative_slope is 'x'"},
  {'Softmax: fractional dim', function() return nn.Softmax(1.5) end, 'dim is 1.5'},
  {'Embedding: an unsupported option', function() return nn.Embedding(10, 3, {padding_idx = 1}) end,
   "nn.Embedding: unknown option 'padding_idx'; it takes no options"},
  {'Embedding: zero rows', function() return nn.Embedding(0, 3) end, 'num is 0'},
  {'Sequential: a class', function() return nn.Sequential{nn.ReLU} end, 'element 1 is the class ReLU', 'nn.ReLU()'},
  {'Sequential: a number', function() return nn.Sequential{nn.ReLU(), 3} end, 'element 2 is 3; expected a module'},
  {'MSELoss: reduce', function() return nn.MSELoss{reduce = 'sum'} end, "nn.MSELoss: unknown option 'reduce'; did you mean 'reduction'?"},
  {'CrossEntropyLoss: avg', function() return nn.CrossEntropyLoss{reduction = 'avg'} end, "option 'reduction' is 'avg'; expected one of 'mean', 'sum', 'none'"},
  {'Linear on a Lua table', function() return nn.Linear(2, 2)({{1, 2}}) end,
   'Linear(2 -> 2): input is a Lua table', 'mf.tensor{...}', 'expected a tensor or a symbol of shape ... x 2'},
  {'Linear on a 0-dim tensor', function() return nn.Linear(2, 2)(mf.tensor(1)) end, 'input is scalar; expected ... x 2'},
  {'Linear on the wrong width', function() return nn.Linear(2, 2)(mf.ones(3, 5)) end, 'input is 3x5; expected ... x 2'},
  {'Conv2d on a 3-D tensor', function() return nn.Conv2d(1, 4, 3)(mf.ones(1, 8, 8)) end, 'input is 1x8x8; expected N x 1 x H x W'},
  -- data, fit, checkpoints
  {'loader: misspelt batch', function() return mf.data.TensorDataset(mf.ones(4, 2)):loader{bacth = 2} end, "did you mean 'batch'?"},
  {'loader: batch 0', function() return mf.data.TensorDataset(mf.ones(4, 2)):loader{batch = 0} end, "option 'batch' is 0"},
  {'TensorDataset: row counts', function() return mf.data.TensorDataset(mf.ones(3, 2), mf.ones(4)) end, 'inputs have 3 rows', 'targets have 4'},
  {'fit: epoch', function() return mf.fit{epoch = 2} end, "fit: unknown argument 'epoch'; did you mean 'epochs'?"},
  {'fit: criterion', function() return mf.fit{criterion = nn.MSELoss()} end, "unknown argument 'criterion'; did you mean 'loss'?"},
  {'fit: epochs 0', function() return mf.fit{epochs = 0} end, "fit: argument 'epochs' is 0; expected an integer >= 1"},
  {'fit: quiet', function() return mf.fit{quiet = 'yes'} end, "argument 'quiet' is 'yes'"},
  {'fit: on_step', function() return mf.fit{on_step = 5} end, "argument 'on_step' is 5; expected a function"},
  {'fit: not a table', function() return mf.fit(5) end, 'fit: expected a table of arguments'},
  {'save_checkpoint: epoc', function() return mf.save_checkpoint('/tmp/x.safetensors', {model = nn.Linear(1, 1), epoc = 1}) end,
   "did you mean 'epoch'?"},
  {'evaluate: no loader', function() return mf.evaluate(nn.Linear(1, 1), {}) end, 'loader is', 'expected a data loader'},
  {'load_state_dict: stict', function() return nn.Linear(1, 1):load_state_dict({}, {stict = false}) end, "did you mean 'strict'?"},
  -- ops, random factories, register_op
  {'rand: low above high', function() return mf.rand({2}, {low = 1, high = 0}) end, 'rand: low 1 is greater than high 0'},
  {'rand: misspelt low', function() return mf.rand({2}, {lo = 1}) end, "rand: unknown param 'lo'; did you mean 'low'?"},
  {'sum: dims', function() return mf.sum(mf.ones(2), {dims = 1}) end, "did you mean 'dim'?"},
  {'register_op: misspelt field', function() return mf.register_op{name = 'opt_typo', num_inputs = 1, doc = 'x', lua_compute = good_kernel,
    infer_shap = 'same'} end, "register_op opt_typo: unknown field 'infer_shap'; did you mean 'infer_shape'?"},
}

for _, c in ipairs(cases) do
  T.test(c[1], function()
    local msg = T.errors(function() local r = c[2]() return r end, select(3, unpack(c)))
    assert(msg:find('test_options.lua', 1, true), 'error should blame the caller: ' .. msg)
  end)
end

T.test('PyTorch positional lr and a following options table', function()
  local o = optim.SGD(params(), 0.1)
  T.eq(o:get_lr(), 0.1)
  local m = optim.SGD(params(), 0.05, {momentum = 0.9})
  T.eq(m.hp.momentum, 0.9)
  T.eq(m:get_lr(), 0.05)
  local a = optim.Adam(params(), 1e-3)
  T.near(a:get_lr(), 1e-3, 1e-15)
  T.eq(optim.AdamW(params(), 2e-3).hp.weight_decay, 0.01)
  -- and it trains: one step of w - lr * g
  local p = nn.Parameter(mf.tensor({1}, 'float64'))
  local s = optim.SGD({p}, 0.25)
  p.grad = mf.tensor({2}, 'float64')
  s:step()
  T.eq(p.data:get(1), 0.5)
end)

T.test('the closest-name rule', function()
  local O = require 'moonflow.options'
  T.eq(O.distance('devcie', 'device'), 1, 'a transposition is one edit')
  T.eq(O.distance('', 'abc'), 3)
  T.eq(O.distance('kitten', 'sitting'), 3)
  T.eq(O.closest('devcie', {'device', 'fuse', 'graph'}), 'device')
  T.eq(O.closest('zzz', {'device', 'fuse', 'graph'}), nil, 'nothing plausible')
  T.eq(O.closest('batch_size', {'batch', 'seed'}), 'batch', 'a name contained in the key')
  T.eq(O.closest('LR', {'lr', 'momentum'}), 'lr', 'case-insensitive')
end)

T.test('a valid options table passes unchanged', function()
  local s = mf.Session{device = 'cpu', fuse = false}
  T.eq(s.fuse, false)
  local bn = nn.BatchNorm1d(3, {eps = 1e-3, momentum = 0.2})
  T.eq(bn.eps, 1e-3)
  local l = nn.Linear(2, 3, {bias = false})
  T.eq(#l:parameters(), 1)
  -- a single sample through Linear, as PyTorch allows
  l.weight.data:copy(mf.tensor{{1, 0}, {0, 1}, {1, 1}})
  T.tensor_eq(l(mf.tensor{2, 3}), {2, 3, 5})
  local r = mf.rand({1000}, {low = 2, high = 2})
  T.eq(r:min():item(), 2, 'low == high is a valid (empty-width) range')
end)

T.finish()
