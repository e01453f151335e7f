-- The GPU benchmark of issue 16: moonflow against PyTorch on the same GPU, one table.
--   moonflow scripts/gpu/bench.lua [--quick] [--self-test] [--rounds N]
-- Cases (PyTorch's side in bench_torch.py, the co-process of scripts/bench/torch_twin.lua):
--   MLP 784-512-256-10 and the LeNet of examples/lenet_fashion.lua, batch 64, cross-entropy, SGD
--   lr 0.01 momentum 0.9: one training step in a graph (mf.Session, nothing fetched) and eagerly
--   (zero_grad, forward, backward, opt:step()), each against PyTorch's eager step;
--   sgemm n = 1024 and 4096 (mf.matmul against torch.matmul, TF32 off on both sides);
--   the fused SGD-momentum update of N float32 parameters (mf.momentum_update: reads w, buf, g and
--   writes w, buf: 20 N bytes) against PyTorch's SGD step, and both against a device-to-device copy
--   of the same bytes (2.5 N floats read and written), moonflow's dst:copy_(src) and PyTorch's.
-- Timing: calls per batch chosen so a batch takes about TARGET seconds, the device synchronised
-- before and after each batch (mf.cuda.synchronize, torch.cuda.synchronize), ROUNDS batches with
-- moonflow's and PyTorch's interleaved, the median of each side.
-- Targets (the issue's acceptance): a training step at most 0.8x PyTorch's eager step; the fused
-- update at 85% or more of the copy bandwidth (the faster of the two copies). Exit status: 0 when
-- every case ran and met its target, 1 otherwise, 2 without a GPU.
-- --quick: fewer, shorter batches (scripts/gpu/check.sh). --self-test: the same code with both sides
-- on the CPU at small sizes, targets shown but not judged (CTest: tests/sh/test_gpu_bench_selftest.sh).
-- The PyTorch twin runs with PYTHON (default /usr/bin/python3) and, when MF_TWIN_LD_LIBRARY_PATH is
-- set (check.sh sets it), that LD_LIBRARY_PATH instead of the one pointing at moonflow's libraries.
local mf = require 'moonflow'

local SELF, QUICK, ROUNDS = false, false, nil
for i = 1, #arg do
  if arg[i] == '--self-test' then SELF = true end
  if arg[i] == '--quick' then QUICK = true end
  if arg[i] == '--rounds' then ROUNDS = tonumber(arg[i + 1]) end
end
if not SELF and not mf.cuda.is_available() then
  print('bench.lua: no GPU (' .. mf.cuda.reason() .. '); nothing measured')
  os.exit(2, true)
end
local DEV = SELF and 'cpu' or 'cuda'
ROUNDS = ROUNDS or (SELF and 3 or QUICK and 5 or 11)
local TARGET = SELF and 0.005 or QUICK and 0.05 or 0.2      -- seconds a timed batch
local BATCH = SELF and 16 or 64
local GEMM = SELF and {64, 128} or {1024, 4096}
local NUPD = SELF and 65536 or 32 * 1024 * 1024           -- parameters of the fused update

local function sync() if DEV == 'cuda' then mf.cuda.synchronize() end end
-- on the CPU the two sides share the cores: one thread each (and the twin's OpenMP threads do not spin)
if SELF then mf.set_num_threads(1) end

-- seconds per call of f over n calls, the device idle before and drained after
local function per_call(f, n)
  sync()
  local t0 = mf.clock()
  for _ = 1, n do f() end
  sync()
  return (mf.clock() - t0) / n
end
-- warm-up (three calls, and at least TARGET seconds of calls: the eager steps' traces get compiled),
-- then the calls a batch needs to take about TARGET seconds
local function calibrate(f)
  local w0, k = mf.clock(), 0
  repeat f(); k = k + 1 until k >= 3 and mf.clock() - w0 >= TARGET
  local n = 1
  while true do
    local t = per_call(f, n) * n
    if t >= TARGET / 4 or n >= 2 ^ 20 then return math.max(1, math.ceil(n * TARGET / math.max(t, 1e-9))) end
    n = n * 2
  end
end
local function median(t)
  local s = {unpack(t)}
  table.sort(s)
  return s[math.floor((#s + 1) / 2)]
end

-- -- the moonflow side of each case -------------------------------------------------------------
local function random_batch(xshape)
  return mf.randn(xshape):to(DEV), mf.randint(1, 11, {xshape[1]}, {dtype = 'int64'}):to(DEV)
end
local function mlp()
  return mf.nn.Sequential{mf.nn.Linear(784, 512), mf.nn.ReLU(), mf.nn.Linear(512, 256), mf.nn.ReLU(),
    mf.nn.Linear(256, 10)}
end
local function lenet()
  return mf.nn.Sequential{
    mf.nn.Conv2d(1, 32, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Conv2d(32, 64, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Flatten(), mf.nn.Linear(1024, 128), mf.nn.ReLU(), mf.nn.Linear(128, 10)}
end
local NETS = {mlp = {make = mlp, x = {BATCH, 784}}, lenet = {make = lenet, x = {BATCH, 1, 28, 28}}}

-- a graph training step: one session on DEV, the batch already there, nothing fetched
local function graph_step(net)
  mf.manual_seed(1)
  local model = NETS[net].make():to(DEV)
  local bx, by = random_batch(NETS[net].x)
  local xs = {unpack(NETS[net].x)}
  mf.reset_default_graph()
  local x, y = mf.placeholder('float32', xs, 'x'), mf.placeholder('int64', {xs[1]}, 'y')
  local loss = mf.nn.CrossEntropyLoss()(model(x), y)
  local step = mf.optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9}):minimize(loss)
  local sess = mf.Session{device = DEV}
  local feed = {[x] = bx, [y] = by}
  return function() sess:run(step, feed) end
end

-- an eager training step through the tape
local function eager_step(net)
  mf.manual_seed(1)
  local model = NETS[net].make():to(DEV)
  local x, y = random_batch(NETS[net].x)
  local crit = mf.nn.CrossEntropyLoss()
  local opt = mf.optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9})
  return function()
    opt:zero_grad()
    crit(model(x), y):backward()
    opt:step()
  end
end

local function sgemm(n)
  mf.manual_seed(1)
  local a, b = mf.randn(n, n):to(DEV), mf.randn(n, n):to(DEV)
  return function() return mf.matmul(a, b) end
end

-- the fused update op of SGD with momentum, as opt:step() calls it
local function update(n)
  local w, buf, g = mf.randn(n):to(DEV), mf.zeros(n, {device = DEV}), mf.randn(n):to(DEV)
  local lr, p = mf.tensor(0.01, 'float64'):to(DEV), {momentum = 0.9}
  return function() mf.momentum_update(w, buf, g, lr, p) end
end

local function copy(n)  -- 2.5 n floats read and written: the update's 20 n bytes
  local m = math.floor(n * 5 / 2)
  local src, dst = mf.randn(m):to(DEV), mf.zeros(m, {device = DEV})
  return function() dst:copy_(src) end
end

-- -- the cases: name, moonflow's function, PyTorch's case, the unit of the figure ---------------------
local CASES = {}
local function add(c) CASES[#CASES + 1] = c end
for _, net in ipairs{'mlp', 'lenet'} do
  local title = net == 'mlp' and 'MLP 784-512-256-10' or 'LeNet'
  add{name = ('%s step, graph, b%d'):format(title, BATCH), make = function() return graph_step(net) end,
      pt = {case = net, batch = BATCH}, pt_name = 'eager', target = 0.8}
  add{name = ('%s step, eager, b%d'):format(title, BATCH), make = function() return eager_step(net) end,
      pt = {case = net, batch = BATCH}, pt_name = 'eager', target = 0.8}
end
for _, n in ipairs(GEMM) do
  add{name = ('sgemm n=%d'):format(n), make = function() return sgemm(n) end, pt = {case = 'sgemm', n = n},
      pt_name = 'torch.matmul', flop = 2 * n ^ 3}
end
add{name = ('copy of the same %.4g MB, device to device'):format(20 * NUPD / 1e6), make = function() return copy(NUPD) end,
    pt = {case = 'copy', n = NUPD}, pt_name = 'copy_', bytes = 20 * NUPD, is_copy = true}
add{name = ('fused SGD-momentum update, %.4gM params'):format(NUPD / 2 ^ 20),
    make = function() return update(NUPD) end, pt = {case = 'update', n = NUPD}, pt_name = 'SGD.step',
    bytes = 20 * NUPD, is_update = true}

-- -- the run ------------------------------------------------------------------------------------------
local here = arg[0]:match('^(.*)/[^/]*$') or '.'
local Twin = dofile(here .. '/../bench/torch_twin.lua')
local env = os.getenv('MF_TWIN_LD_LIBRARY_PATH') and 'LD_LIBRARY_PATH="$MF_TWIN_LD_LIBRARY_PATH" ' or ''
if SELF then env = env .. 'OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive ' end
local twin = Twin.start{script = here .. '/bench_torch.py', who = 'bench.lua', env = env,
                        hint = 'python3 with torch (with CUDA for the GPU run) is needed'}
local info = twin:call{cmd = 'init', device = DEV}
if info.error then twin:close() error('bench.lua: the PyTorch twin: ' .. info.error, 0) end

local errors = 0
for _, c in ipairs(CASES) do
  local ok, err = pcall(function()
    local f = c.make()
    local n = calibrate(f)
    local setup = twin:call{cmd = 'setup', case = c.pt, target = TARGET}
    if setup.error then error('PyTorch: ' .. setup.error, 0) end
    local mine, theirs = {}, {}
    for r = 1, ROUNDS do
      mine[r] = per_call(f, n)
      local a = twin:call{cmd = 'time'}
      if a.error then error('PyTorch: ' .. a.error, 0) end
      theirs[r] = a.s
    end
    c.mf, c.ptv = median(mine), median(theirs)
    collectgarbage()
  end)
  if not ok then c.err, errors = tostring(err), errors + 1 end
  io.stderr:write(('bench.lua: %s %s\n'):format(c.name, ok and 'done' or 'failed: ' .. tostring(err)))
end
twin:close()

-- -- the table ---------------------------------------------------------------------------------------
local function ms(s) return ('%.3f ms'):format(s * 1e3) end
local copy_bw
for _, c in ipairs(CASES) do
  if c.is_copy and c.mf then copy_bw = math.max(c.bytes / c.mf, c.bytes / c.ptv) end
end
local missed = 0
print(('GPU bench (%s, %s): medians of %d interleaved batches of about %g s, PyTorch %s%s'):format(
  SELF and 'self-test, both sides on the CPU' or 'cuda', QUICK and 'quick' or 'full', ROUNDS, TARGET,
  tostring(twin.version), info.name and (' on ' .. info.name) or ''))
print('| case | moonflow | PyTorch | mf/pt | target | verdict |')
print('|---|---|---|---|---|---|')
for _, c in ipairs(CASES) do
  if c.err then
    print(('| %s | error | | | | FAIL: %s |'):format(c.name, c.err:gsub('\n', ' ')))
  else
    local a, b = ms(c.mf), ms(c.ptv) .. ' (' .. c.pt_name .. ')'
    if c.flop then
      a = a .. (' %.1f TFLOP/s'):format(c.flop / c.mf / 1e12)
      b = b .. (' %.1f TFLOP/s'):format(c.flop / c.ptv / 1e12)
    elseif c.bytes then
      a = a .. (' %.0f GB/s'):format(c.bytes / c.mf / 1e9)
      b = b .. (' %.0f GB/s'):format(c.bytes / c.ptv / 1e9)
    end
    local target, verdict, ok = '', '', true
    if c.target then
      target = ('mf/pt <= %.1f'):format(c.target)
      ok = c.mf / c.ptv <= c.target
    elseif c.is_update and copy_bw then
      local frac = c.bytes / c.mf / copy_bw
      target = ('>= 85%% of copy (%.0f GB/s)'):format(copy_bw / 1e9)
      ok = frac >= 0.85
      verdict = ('%.0f%% of copy; '):format(frac * 100)
    end
    if target ~= '' then
      if SELF then verdict = verdict .. 'not judged (cpu)'
      else
        verdict = verdict .. (ok and 'met' or 'MISSED')
        if not ok then missed = missed + 1 end
      end
    end
    print(('| %s | %s | %s | %.2f | %s | %s |'):format(c.name, a, b, c.mf / c.ptv, target, verdict))
  end
end
print(('bench.lua: %d cases, %d errors, %d targets missed'):format(#CASES, errors, missed))
os.exit((errors == 0 and missed == 0) and 0 or 1, true)
