-- Error text: every misuse of the public API below is a Lua error whose message names what went
-- wrong in the API's own terms and blames this file's line, never a raw internal message
-- (`attempt to`, `bad argument #`, `cannot convert`, `table: 0x`, `cdata<`, `a cdata`) or a library file.
-- A second test replays the expected-error cases of the whole Lua suite (through testlib's
-- MF_MESSAGES_LOG) and applies the same rule to each.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local nn, optim = mf.nn, mf.optim

local RAW = {'cannot convert', 'bad argument #', 'attempt to', 'table: 0x', 'cdata<', 'a cdata', 'lua/moonflow/', 'stack traceback'}

-- the reason a message is not fit for a user, or nil
local function raw_problem(msg, file)
  for _, pat in ipairs(RAW) do
    if msg:find(pat, 1, true) then return ("contains '%s'"):format(pat) end
  end
  if file and not msg:find(file, 1, true) then return 'does not blame ' .. file end
  return nil
end

local tmpdir = os.tmpname()
os.remove(tmpdir)
os.execute('mkdir -p ' .. tmpdir)
local function tmp(name) return tmpdir .. '/' .. name end
do  -- a corrupt safetensors file and a truncated IDX file
  local f = io.open(tmp('corrupt.safetensors'), 'wb'); f:write('\255\255\255\255\255\255\255\127garbage'); f:close()
  f = io.open(tmp('short.idx'), 'wb'); f:write('\0\0\8'); f:close()
end

local a = mf.tensor{{1, 2}, {3, 4}}
local good_kernel = [[function(ins, outs, p) local y = outs[1]; return function() mf.kernels.fill(y, 1) end end]]
local function graph()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 2}, 'x')
  local W = mf.Variable(mf.ones(2, 2), 'W')
  return x, W, mf.matmul(x, W)
end
local function dataset() return mf.data.TensorDataset(mf.ones(4, 2), mf.tensor({1, 2, 1, 2}, 'int64')) end

-- {name, f}: f must raise; each message is checked by raw_problem
local cases = {
  -- tensors
  {'tensor from a string', function() return mf.tensor('abc') end},
  {'tensor from a ragged table', function() return mf.tensor{{1, 2}, {3}} end},
  {'tensor with a function element', function() return mf.tensor{print} end},
  {'zeros of a string size', function() return mf.zeros('a') end},
  {'zeros with an unknown dtype', function() return mf.zeros(2, {dtype = 'float16'}) end},
  {'ones with a table size holding a string', function() return mf.ones({2, 'x'}) end},
  {'get with too many indices', function() return a:get(1, 2, 3) end},
  {'get with a string index', function() return a:get(1, 'x') end},
  {'element index of the wrong length', function() return a[{1, 2, 3}] end},
  {'element index with a string', function() return a[{1, 'x'}] end},
  {'index by a tensor', function() return a[mf.ones(2)] end},
  {'index by a boolean', function() return a[true] end},
  {'unknown field', function() return a.frobnicate end},
  {'row out of range', function() return a[3] end},
  {'reshape to a string', function() return a:reshape('x') end},
  {'narrow a missing dim', function() return a:narrow(3, 1, 1) end},
  {'view of the wrong count', function() return a:view(5) end},
  {'copy from a number', function() return a:clone():copy(5) end},
  {'copy from a mismatched shape', function() return mf.zeros(2, 3):copy(mf.ones(3, 2)) end},
  {'fill with a string', function() return a:clone():fill('x') end},
  {'set with a string value', function() return a:clone():set(1, 1, 'x') end},
  {'set a field', function() local b = a:clone(); b.foo = 1 end},
  {'item of four elements', function() return a:item() end},
  {'size of a missing dim', function() return a:size(5) end},
  {'size with a string', function() return a:size('x') end},
  {'type with an unknown name', function() return a:type('torch.FloatTensor') end},
  {'add a string', function() return a + 'x' end},
  {'add nil', function() return a + nil end},
  {'add a Lua table', function() return a + {1, 2} end},
  {'matmul with one argument', function() return mf.matmul(a) end},
  {'matmul of mismatched shapes', function() return mf.matmul(mf.ones(2, 3), mf.ones(2, 3)) end},
  {'transpose of a 3-D tensor', function() return mf.ones(2, 2, 2):t() end},
  {'cast to a number', function() return mf.cast(a, 5) end},
  {'concat of a tensor', function() return mf.concat(a, 1) end},
  {'concat of nothing', function() return mf.concat({}, 1) end},
  {'set_rng_state of a string', function() return mf.set_rng_state('x') end},
  {'set_rng_state of an empty table', function() return mf.set_rng_state({}) end},
  {'manual_seed negative', function() return mf.manual_seed(-1) end},
  {'set_num_threads of a string', function() return mf.set_num_threads('x') end},
  {'arange of a string', function() return mf.arange('a') end},
  {'eye of a negative size', function() return mf.eye(-1) end},
  {'full with a string value', function() return mf.full({2}, 'x') end},
  {'rand with low above high', function() return mf.rand({2}, {low = 1, high = 0}) end},
  {'randn with a negative std', function() return mf.randn({2}, {std = -1}) end},
  {'index_select with float indices', function() return mf.index_select(a, mf.tensor{1.5}, 1) end},
  {'one_hot of float labels', function() return mf.one_hot(mf.tensor{1}, 3) end},
  {'one_hot label out of range', function() return mf.one_hot(mf.tensor({4}, 'int64'), 3) end},
  {'softmax over a missing dim', function() return mf.softmax(a, 3) end},
  {'sum with an unknown param', function() return mf.sum(a, {dims = 1}) end},
  -- graph mode
  {'placeholder of an unknown dtype', function() return mf.placeholder('float33', {2}) end},
  {'placeholder with a string shape', function() return mf.placeholder('float32', 'x') end},
  {'placeholder with a fractional size', function() return mf.placeholder('float32', {2.5}) end},
  {'Variable of a string', function() return mf.Variable('x') end},
  {'constant of a string', function() return mf.constant('x') end},
  {'matmul shapes known at build time', function() return mf.matmul(mf.placeholder('float32', {-1, 3}), mf.ones(4, 4)) end},
  {'Linear on a symbol of the wrong width', function() return nn.Linear(3, 2)(mf.placeholder('float32', {-1, 4})) end},
  {'CrossEntropyLoss on a {nil} label placeholder', function()
    return nn.CrossEntropyLoss()(mf.placeholder('float32', {-1, 3}), mf.placeholder('int64', {nil})) end},
  {'matmul of a placeholder and a Lua table', function() return mf.matmul(mf.placeholder('float32', {-1, 3}), {1, 2}) end},
  {'run a number', function() graph(); return mf.Session():run(5) end},
  {'run with a string feed', function() local x, _, y = graph(); return mf.Session():run(y, {[x] = 'abc'}) end},
  {'run without a feed', function() local _, _, y = graph(); local s = mf.Session(); s:run(mf.global_variables_initializer()); return s:run(y) end},
  {'run with a wrong feed shape', function() local x, _, y = graph(); return mf.Session():run(y, {[x] = mf.ones(3, 3)}) end},
  {'run called with a dot', function() local _, _, y = graph(); local s = mf.Session(); return s.run(y) end},
  {'run an uninitialized variable', function() local x, _, y = graph(); return mf.Session():run(y, {[x] = mf.ones(1, 2)}) end},
  {'run a closed session', function() local _, _, y = graph(); local s = mf.Session(); s:close(); return s:run(y) end},
  {'feed keyed by a string', function() local _, _, y = graph(); return mf.Session():run(y, {x = mf.ones(1, 2)}) end},
  {'gradients of a number', function() local _, W = graph(); return mf.gradients(5, {W}) end},
  {'gradients with respect to a number', function() local _, _, y = graph(); return mf.gradients(mf.sum(y), 5) end},
  {'group of a number', function() return mf.group(5) end},
  {'placeholder fed from another graph', function() local x = mf.placeholder('float32', {2}); local _, _, y = graph(); return mf.Session():run(y, {[x] = mf.ones(2)}) end},
  {'Session with a misspelt option', function() return mf.Session{devcie = 'cpu'} end},
  -- nn
  {'Linear on a Lua table', function() return nn.Linear(2, 2)({{1, 2}}) end},
  {'Linear on the wrong width', function() return nn.Linear(2, 2)(mf.ones(3, 5)) end},
  {'Linear forward called with a dot', function() local l = nn.Linear(2, 2); return l.forward(mf.ones(1, 2)) end},
  {'parameters called with a dot', function() local l = nn.Linear(2, 2); return l.parameters() end},
  {'state_dict called with a dot', function() local l = nn.Linear(2, 2); return l.state_dict() end},
  {'load_state_dict called with a dot', function() local l = nn.Linear(2, 2); return l.load_state_dict(l:state_dict()) end},
  {'optimizer step called with a dot', function() local o = optim.SGD(nn.Linear(2, 2):parameters(), 0.1); return o.step() end},
  {'scheduler step called with a dot', function() local s = optim.StepLR(optim.SGD(nn.Linear(2, 2):parameters(), 0.1), {step_size = 1}); return s.step() end},
  {'train optimizer minimize called with a dot', function() local _, _, y = graph(); local o = mf.train.GradientDescentOptimizer(0.1); return o.minimize(mf.sum(y)) end},
  {'apply_gradients of a number', function() return mf.train.GradientDescentOptimizer(0.1):apply_gradients(5) end},
  {'dataset get called with a dot', function() local ds = dataset(); return ds.get(1) end},
  {'loader iter called with a dot', function() local l = dataset():loader{batch = 2}; return l.iter() end},
  {'Conv2d on a 2-D tensor', function() return nn.Conv2d(1, 1, 3)(mf.ones(2, 2)) end},
  {'MaxPool2d on a number', function() return nn.MaxPool2d(2)(3) end},
  {'Module with a number name', function() return nn.Module(5) end},
  {'Sequential of a class', function() return nn.Sequential{nn.ReLU} end},
  {'forward not implemented', function() local M = nn.Module('M'); return M()(mf.ones(2)) end},
  {'CrossEntropyLoss with float labels', function() return nn.CrossEntropyLoss()(mf.ones(2, 3), mf.tensor{1, 2}) end},
  {'MSELoss of Nx1 against N', function() return nn.MSELoss()(mf.ones(4, 1), mf.ones(4)) end},
  {'MSELoss of a Lua table', function() return nn.MSELoss()(mf.ones(2), {1, 2}) end},
  {'Embedding of float indices', function() return nn.Embedding(5, 3)(mf.tensor{1}) end},
  {'Embedding index out of range', function() return nn.Embedding(5, 3)(mf.tensor({6}, 'int64')) end},
  {'load_state_dict of a string', function() return nn.Linear(1, 1):load_state_dict('x') end},
  {'load_state_dict of the wrong shapes', function() return nn.Linear(1, 1):load_state_dict(nn.Linear(2, 2):state_dict()) end},
  {'Parameter of a number', function() return nn.Parameter(5) end},
  {'add a non-module child', function() return nn.Sequential{}:add('x', 5) end},
  {'register_parameter of a string', function() return nn.Sequential{}:register_parameter('w', 'x') end},
  {'BatchNorm1d on one sample', function() return nn.BatchNorm1d(3)(mf.ones(1, 3)) end},
  {'Dropout with p = 2', function() return nn.Dropout(2) end},
  {'assign a tensor over a parameter', function() local l = nn.Linear(1, 1); l.weight = mf.ones(1, 1) end},
  {'rebind .data to a number', function() local l = nn.Linear(1, 1); l.weight.data = 3 end},
  -- optim and train
  {'SGD with a string lr', function() return optim.SGD(nn.Linear(1, 1):parameters(), 'x') end},
  {'SGD without parameters', function() return optim.SGD(nil, 0.1) end},
  {'SGD of a module', function() return optim.SGD(nn.Linear(1, 1), 0.1) end},
  {'Adam with scalar betas', function() return optim.Adam(nn.Linear(1, 1):parameters(), {betas = 0.9}) end},
  {'step with a wrong-shaped grad', function()
    local p = nn.Parameter(mf.ones(2)); local o = optim.SGD({p}, 0.1); p.grad = mf.ones(3); o:step() end},
  {'minimize a tensor', function() return optim.SGD({nn.Parameter(mf.ones(2))}, 0.1):minimize(mf.ones(1)) end},
  {'optimizer load_state_dict of a number', function() return optim.SGD({nn.Parameter(mf.ones(2))}, 0.1):load_state_dict(5) end},
  {"optimizer state of another model", function()
    local o = optim.Adam(nn.Linear(2, 2):parameters()); return o:load_state_dict(optim.Adam(nn.Linear(3, 3):parameters()):state_dict()) end},
  {'StepLR without step_size', function() return optim.StepLR(optim.SGD({nn.Parameter(mf.ones(1))}, 0.1)) end},
  {'GradientDescentOptimizer of a string', function() return mf.train.GradientDescentOptimizer('x') end},
  {'GradientDescentOptimizer minimize a number', function() return mf.train.GradientDescentOptimizer(0.1):minimize(5) end},
  {'var_list of a symbol', function() local _, W, y = graph(); return mf.train.GradientDescentOptimizer(0.1):minimize(mf.sum(y), W) end},
  -- data
  {'read_idx of a number', function() return mf.data.read_idx(5) end},
  {'read_idx of a missing file', function() return mf.data.read_idx(tmp('missing.idx')) end},
  {'read_idx of a truncated file', function() return mf.data.read_idx(tmp('short.idx')) end},
  {'TensorDataset of a Lua table', function() return mf.data.TensorDataset({1, 2}) end},
  {'TensorDataset of mismatched rows', function() return mf.data.TensorDataset(mf.ones(3, 2), mf.ones(4)) end},
  {'get index 0', function() return dataset():get(0) end},
  {'get a string index', function() return dataset():get('x') end},
  {'loader batch 0', function() return dataset():loader{batch = 0} end},
  {'loader with a misspelt option', function() return dataset():loader{bacth = 2} end},
  {'set_epoch 0', function() return dataset():loader{batch = 2}:set_epoch(0) end},
  {'loader called with a dot', function() local ds = dataset(); return ds.loader{batch = 2} end},
  -- fit
  {'fit with nothing', function() return mf.fit{} end},
  {'fit of a number model', function() return mf.fit{model = 5} end},
  {'fit with a misspelt argument', function() return mf.fit{epoch = 3} end},
  {'fit with a log file in a missing directory', function()
    local m = nn.Linear(2, 2)
    return mf.fit{model = m, loss = nn.CrossEntropyLoss(), optimizer = optim.SGD(m:parameters(), 0.1),
                  data = dataset():loader{batch = 2}, quiet = true, log = tmp('no/such/dir/log.csv')} end},
  {'fit with mismatched loss shapes', function()
    local m = nn.Linear(2, 1)
    return mf.fit{model = m, loss = nn.MSELoss(), optimizer = optim.SGD(m:parameters(), 0.1),
                  data = mf.data.TensorDataset(mf.ones(4, 2), mf.ones(4)):loader{batch = 2}, quiet = true} end},
  {'evaluate of a number', function() return mf.evaluate(5) end},
  {'save_checkpoint of a number', function() return mf.save_checkpoint(5) end},
  {'load_checkpoint of a missing file', function() return mf.load_checkpoint(tmp('missing.ckpt'), {model = nn.Linear(1, 1)}) end},
  -- serialize
  {'save to a number path', function() return mf.save(5, {}) end},
  {'save a number', function() return mf.save(tmp('x.safetensors'), 5) end},
  {'save a table holding a number', function() return mf.save(tmp('x.safetensors'), {a = 5}) end},
  {'save into a missing directory', function() return mf.save(tmp('no/such/dir/x.safetensors'), {a = mf.ones(2)}) end},
  {'save with number metadata', function() return mf.save(tmp('x.safetensors'), {a = mf.ones(2)}, {meta = 5}) end},
  {'load a missing file', function() return mf.load(tmp('missing.safetensors')) end},
  {'load a number', function() return mf.load(5) end},
  {'load a corrupt file', function() return mf.load(tmp('corrupt.safetensors')) end},
  -- register_op
  {'register_op of a number', function() return mf.register_op(5) end},
  {'register_op without num_inputs', function() return mf.register_op{name = 'msg_a', doc = 'x', lua_compute = good_kernel} end},
  {'register_op with a kernel that is not Lua', function()
    return mf.register_op{name = 'msg_b', num_inputs = 1, doc = 'x', lua_compute = 'not lua at all'} end},
  {'register_op with a number infer_shape', function()
    return mf.register_op{name = 'msg_c', num_inputs = 1, doc = 'x', lua_compute = good_kernel, infer_shape = 5} end},
  {'register_op with a number param spec', function()
    return mf.register_op{name = 'msg_d', num_inputs = 1, doc = 'x', lua_compute = good_kernel, params = {a = 5}} end},
  {'register_op with a number gradient', function()
    return mf.register_op{name = 'msg_e', num_inputs = 1, doc = 'x', lua_compute = good_kernel, gradient = 5} end},
  {'register_op with a misspelt field', function()
    return mf.register_op{name = 'msg_f', num_inputs = 1, doc = 'x', lua_compute = good_kernel, gradiant = 5} end},
  {'register_op with params not a table', function()
    return mf.register_op{name = 'msg_g', num_inputs = 1, doc = 'x', lua_compute = good_kernel, params = 5} end},
  {'register_op with a misspelt param field', function()
    return mf.register_op{name = 'msg_h', num_inputs = 1, doc = 'x', lua_compute = good_kernel, params = {a = {typ = 'number'}}} end},
  {'register_op again after a failed registration', function()
    pcall(mf.register_op, {name = 'msg_i', num_inputs = 1, doc = 'x', lua_compute = good_kernel, params = {a = 5}})
    mf.register_op{name = 'msg_i', num_inputs = 1, doc = 'x', lua_compute = good_kernel}   -- the fixed definition registers
    return mf.msg_i(mf.ones(2), mf.ones(2)) end},
  {'a registered op given the wrong input count', function()
    if not mf.msg_ok then mf.register_op{name = 'msg_ok', num_inputs = 1, doc = 'x', lua_compute = good_kernel} end
    return mf.msg_ok(mf.ones(2), mf.ones(2)) end},
  -- a tensor where a number or name belongs is called a tensor, not a cdata
  {'randint with a tensor bound', function() return mf.randint(mf.ones(2), mf.ones(2)) end},
  {'a tensor as the device', function() return mf.ones(2):to(mf.ones(1)) end},
  {'a tensor as a dim', function() return mf.narrow(mf.ones(2), mf.ones(1), 1, 1) end},
  -- a symbol indexed as a tensor ('symbol has no method table: 0x...' before)
  {'a graph symbol indexed by a table', function() local _, _, y = graph(); return y[{1, 2}] end},
  {'a graph symbol indexed by a number', function() local _, _, y = graph(); return y[1] end},
  {'mf.tensor of a list of tensors', function() return mf.tensor{mf.ones(2), mf.zeros(2)} end},
}

T.test('t[{i, j}] reads one element, as Torch7', function()
  local t = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(t[{2, 1}], 4)
  T.eq(t[{1, -1}], 3)   -- negative indices count from the end
  T.eq(t:t()[{3, 2}], 6)
end)

T.test('at least 60 misuse cases, across the API', function()
  assert(#cases >= 60, #cases .. ' cases')
end)

for _, c in ipairs(cases) do
  T.test(c[1], function()
    -- called from a frame of this file (a case's own `return f()` is a tail call, which drops it)
    local ok, err = pcall(function() local r = c[2]() return r end)
    if ok then error('expected an error, got none', 0) end
    err = tostring(err)
    local why = raw_problem(err, 'test_messages.lua:')
    if why then error(('message %s: %s'):format(why, err), 0) end
  end)
end

-- The expected errors of the other test files: testlib's T.errors appends each message, with the
-- file and line of its caller, to the file named by MF_MESSAGES_LOG.
T.test('every expected error of the Lua suite is fit for a user', function()
  local dir = arg[0]:match('(.*/)') or './'
  local ffi = require 'ffi'
  pcall(ffi.cdef, 'long readlink(const char *path, char *buf, size_t size);')
  local buf = ffi.new('char[4096]')
  local len = ffi.C.readlink('/proc/self/exe', buf, 4096)
  assert(len > 0, 'cannot find the moonflow executable')
  local exe = ffi.string(buf, len)   -- this moonflow executable
  local log = tmp('messages.log')
  local p = io.popen('ls ' .. dir .. 'test_*.lua')
  local files = {}
  for f in p:lines() do
    -- the files with expected errors (others, such as the memory soak, have none to replay)
    local fh = io.open(f, 'r')
    local text = fh:read('*a')
    fh:close()
    if not f:find('test_messages.lua', 1, true) and text:find('T.errors(', 1, true) then files[#files + 1] = f end
  end
  p:close()
  for _, f in ipairs(files) do
    os.execute(('MF_MESSAGES_LOG=%s %s %s >/dev/null 2>&1'):format(log, exe, f))
  end
  local bad, n = {}, 0
  local fh = io.open(log, 'r')
  assert(fh, 'no messages were logged: is MF_MESSAGES_LOG handled by testlib?')
  for line in fh:lines() do
    local file, msg = line:match('^(.-)\t(.*)$')
    n = n + 1
    -- blamed on the test file, or on testlib's own call when a case passes an API function itself
    local m = msg:gsub('\\n', '\n')
    local why = raw_problem(m, file)
    if why and m:find('^[^:]*testlib%.lua:%d+:') then why = raw_problem(m) end
    if why then bad[#bad + 1] = ('%s: %s: %s'):format(file, why, msg) end
  end
  fh:close()
  assert(n >= 150, ('only %d messages logged'):format(n))
  if #bad > 0 then error(('%d of %d messages are not fit for a user:\n  %s'):format(#bad, n, table.concat(bad, '\n  ')), 0) end
end)

os.execute('rm -rf ' .. tmpdir)
T.finish()
