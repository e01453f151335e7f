-- Where an eager training step's host time goes: the LeNet of scripts/gpu/bench.lua (batch 64,
-- cross-entropy, SGD momentum) stepped through the tape on DEV, timed (wall and host CPU time per step,
-- the device synchronised around the batch, host waits per step) and then sampled by LuaJIT's profiler
-- (jit.p in MODE: v for VM states, F functions, l lines, Fl both) and watched by jit.v (trace aborts).
-- Usage: MF_NUM_THREADS=1 moonflow scripts/gpu/profile_step.lua [cuda|cpu] [lenet|mlp] [seconds] [out-dir] [MODE]
-- (out-dir gets prof-MODE.txt and jitv.txt; default: the current folder; one thread, as the profiler's
-- timer signal may land on a worker thread and go uncounted). A diagnosis tool, not a check:
-- it prints figures and exits 0 unless the step itself fails.
local DEV, NET, SECS, OUTDIR = arg[1] or 'cuda', arg[2] or 'lenet', tonumber(arg[3]) or 2, arg[4] or '.'
local MODE = arg[5] or 'Fl'
local BATCH = 64
local function sync() if DEV == 'cuda' then mf.cuda.synchronize() end end

local function make()
  if NET == 'mlp' then
    return mf.nn.Sequential{mf.nn.Linear(784, 512), mf.nn.ReLU(), mf.nn.Linear(512, 256), mf.nn.ReLU(),
      mf.nn.Linear(256, 10)}, {BATCH, 784}
  end
  return mf.nn.Sequential{
    mf.nn.Conv2d(1, 32, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Conv2d(32, 64, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Flatten(), mf.nn.Linear(1024, 128), mf.nn.ReLU(), mf.nn.Linear(128, 10)}, {BATCH, 1, 28, 28}
end

mf.manual_seed(1)
local net, xs = make()
local model = net:to(DEV)
local x, y = mf.randn(xs):to(DEV), mf.randint(1, 11, {BATCH}, {dtype = 'int64'}):to(DEV)
local crit = mf.nn.CrossEntropyLoss()
local opt = mf.optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9})
local function step()
  opt:zero_grad()
  crit(model(x), y):backward()
  opt:step()
end

local function run_for(secs)
  sync()
  local t0, c0, w0 = mf.clock and mf.clock() or os.time(), os.clock(), mf.cuda.sync_count()
  local n = 0
  local deadline = t0 + secs
  repeat
    for _ = 1, 20 do step() end
    n = n + 20
  until (mf.clock and mf.clock() or os.time()) >= deadline
  sync()
  local t1, c1, w1 = mf.clock and mf.clock() or os.time(), os.clock(), mf.cuda.sync_count()
  return n, (t1 - t0) / n, (c1 - c0) / n, (w1 - w0) / n
end

for _ = 1, 50 do step() end
local n, wall, cpu, waits = run_for(SECS)
print(('%s eager step on %s: %d steps, wall %.3f ms, host CPU %.3f ms, host waits %.2f per step'):format(NET, DEV,
  n, wall * 1e3, cpu * 1e3, waits))

-- one profile per process: a second jit.p.start in the same process collected no samples here
local prof = require('jit.p')
prof.start(MODE, OUTDIR .. '/prof-' .. MODE .. '.txt')
run_for(SECS)
prof.stop()
require('jit.v').start(OUTDIR .. '/jitv.txt')
run_for(SECS / 2)
require('jit.v').off()
local h = io.open(OUTDIR .. '/prof-' .. MODE .. '.txt')
local k = 0
for line in h:lines() do
  k = k + 1
  if k <= 45 then print(line) end
end
h:close()
