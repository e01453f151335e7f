-- GPU check of graph training on cuda (issue 16): an MLP's graph (matmul, bias, relu, softmax
-- cross-entropy, the gradient pass, SGD updates) trained from the same initial values on the CPU and
-- in mf.Session{device = 'cuda'}; the losses must agree step for step (float32: 1e-4 relative, the
-- sums run in another order), 1,000 more steps on cuda must leave the device's bytes in use flat,
-- and a step must make no host synchronisation (mf.cuda.sync_count, feeds uploaded, nothing fetched).
-- Eager too: the same steps with the tape on cuda tensors against the CPU, and one eager step with
-- SGD momentum and with Adam must make no host synchronisation either.
-- Usage (repository root, GPU machine): ./build/moonflow scripts/gpu/train_step.lua [--steps N]
-- Prints one line per check and a summary; exits 1 on a failure, 2 without a GPU. --self-test runs
-- the CPU against itself (the script's own check, on any machine; the host-wait count is skipped).
local mf = require 'moonflow'

local STEPS, SELF = 1000, false
for i = 1, #arg do
  if arg[i] == '--steps' then STEPS = tonumber(arg[i + 1]) end
  if arg[i] == '--self-test' then SELF = true end
end
if not SELF and not mf.cuda.is_available() then
  print('train_step.lua: no GPU (' .. mf.cuda.reason() .. '); nothing checked')
  os.exit(2, true)
end
local DEV = SELF and 'cpu' or 'cuda'

local results, failed = {}, 0
local function check(name, ok, detail)
  results[#results + 1] = ('%-4s %-48s %s'):format(ok and 'ok' or 'FAIL', name, detail or '')
  if not ok then failed = failed + 1 end
  print(results[#results])
end

local N, D, H, K = 64, 784, 128, 10
mf.manual_seed(7)
local bx = mf.randn(N, D)
local by = mf.randint(1, K + 1, {N}, {dtype = 'int64'})
local W1, b1 = mf.randn(D, H) * 0.05, mf.zeros(H)
local W2, b2 = mf.randn(H, K) * 0.05, mf.zeros(K)

-- one graph; each session holds its own variable values, initialised from the same tensors
local x = mf.placeholder('float32', {-1, D}, 'x')
local y = mf.placeholder('int64', {-1}, 'y')
local V = {mf.Variable(W1, 'W1'), mf.Variable(b1, 'b1'), mf.Variable(W2, 'W2'), mf.Variable(b2, 'b2')}
local hidden = mf.relu(mf.matmul(x, V[1]) + V[2])
local logits = mf.matmul(hidden, V[3]) + V[4]
local LOSS = mf.nn.CrossEntropyLoss():forward(logits, y)
local STEP = mf.train.GradientDescentOptimizer(0.1):minimize(LOSS)

local function session(device)
  local s = mf.Session{device = device}
  s:run(mf.global_variables_initializer())
  return s, {x = x, y = y}, LOSS, STEP
end

local ok, err = pcall(function()
  local sc, vc, lc, stc = session(nil)
  local sg, vg, lg, stg = session(DEV)
  local worst = 0
  for i = 1, 20 do
    local a = sc:run({lc, stc}, {[vc.x] = bx, [vc.y] = by}):item()
    local b = sg:run({lg, stg}, {[vg.x] = bx, [vg.y] = by}):item()
    worst = math.max(worst, math.abs(a - b) / math.max(1, math.abs(a)))
  end
  check('graph MLP: 20 steps, losses cpu vs ' .. DEV, worst <= 1e-4, ('max rel diff %.2e'):format(worst))

  -- host synchronisations of one step: feeds go up, nothing is fetched
  local s0 = mf.cuda.sync_count()
  sg:run(stg, {[vg.x] = bx, [vg.y] = by})
  local syncs = mf.cuda.sync_count() - s0
  if not SELF then check('graph MLP: host waits in one training step', syncs == 0, ('%d waits'):format(syncs)) end

  -- memory flat over many steps
  for _ = 1, 100 do sg:run(stg, {[vg.x] = bx, [vg.y] = by}) end
  collectgarbage(); collectgarbage()
  local m0 = mf.memory_stats(DEV)
  for _ = 1, STEPS do sg:run(stg, {[vg.x] = bx, [vg.y] = by}) end
  collectgarbage(); collectgarbage()
  mf.cuda.synchronize()
  local m1 = mf.memory_stats(DEV)
  check(('graph MLP: %d steps, device memory flat'):format(STEPS), m1.in_use == m0.in_use and m1.cached == m0.cached,
    ('in use %d -> %d, cached %d -> %d bytes'):format(m0.in_use, m1.in_use, m0.cached, m1.cached))
end)
if not ok then check('graph MLP on ' .. DEV, false, tostring(err)) end

-- eager: the tape over cuda tensors, against the CPU
ok, err = pcall(function()
  local function eager(device)
    local p = {W1:clone(), b1:clone(), W2:clone(), b2:clone()}
    for i, t in ipairs(p) do p[i] = (device and t:to(device) or t):requires_grad_() end
    local x, y = device and bx:to(device) or bx, device and by:to(device) or by
    local opt = mf.optim.SGD(p, {lr = 0.1})
    local losses = {}
    for i = 1, 10 do
      opt:zero_grad()
      local h = mf.relu(mf.matmul(x, p[1]) + p[2])
      local loss = mf.nn.CrossEntropyLoss():forward(mf.matmul(h, p[3]) + p[4], y)
      loss:backward()
      opt:step()
      losses[i] = loss:item()
    end
    return losses
  end
  local a, b = eager(nil), eager(DEV)
  local worst = 0
  for i = 1, #a do worst = math.max(worst, math.abs(a[i] - b[i]) / math.max(1, math.abs(a[i]))) end
  check('eager MLP: 10 steps, losses cpu vs ' .. DEV, worst <= 1e-4, ('max rel diff %.2e'):format(worst))
end)
if not ok then check('eager MLP on ' .. DEV, false, tostring(err)) end

-- host synchronisations of one eager step (forward, loss, backward, opt:step(), zero_grad) with SGD
-- momentum and with Adam, after warm-up: none (lr and the step count are read by the update kernels,
-- the labels' range by the one_hot kernel; the loss is not read)
for _, kind in ipairs({'momentum', 'adam'}) do
  ok, err = pcall(function()
    local p = {W1:clone(), b1:clone(), W2:clone(), b2:clone()}
    for i, t in ipairs(p) do p[i] = t:to(DEV):requires_grad_() end
    local x, y = bx:to(DEV), by:to(DEV)
    local opt = kind == 'adam' and mf.optim.Adam(p, {lr = 1e-3}) or mf.optim.SGD(p, {lr = 0.1, momentum = 0.9})
    local crit = mf.nn.CrossEntropyLoss()
    local function step()
      local h = mf.relu(mf.matmul(x, p[1]) + p[2])
      local loss = crit:forward(mf.matmul(h, p[3]) + p[4], y)
      loss:backward()
      opt:step()
      opt:zero_grad()
      return loss
    end
    local first = step():item()
    for _ = 1, 3 do step() end
    local s0 = mf.cuda.sync_count()
    step()
    local syncs = mf.cuda.sync_count() - s0
    local last = step():item()
    check(('eager MLP (%s): the loss falls'):format(kind), last < first, ('%.4f -> %.4f'):format(first, last))
    if not SELF then check(('eager MLP (%s): host waits in one step'):format(kind), syncs == 0, ('%d waits'):format(syncs)) end
  end)
  if not ok then check(('eager MLP (%s) on %s'):format(kind, DEV), false, tostring(err)) end
end

print(('train_step.lua: %d checks, %d failed'):format(#results, failed))
os.exit(failed == 0 and 0 or 1, true)  -- closing the state runs the finalizers (LeakSanitizer)
