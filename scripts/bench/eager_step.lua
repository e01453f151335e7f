-- The eager (tape) MLP training step against the same step in graph mode, in one process: bench_mf.lua's
-- workload e (784-512-256-10, batch 64, SGD lr 0.01 momentum 0.9, cross-entropy, random data), the two
-- interleaved in rounds, the median of the rounds for each and their ratio (issue 11's target: at most
-- 1.3). With --cpu the clock is os.clock, the process's CPU time: steadier on a busy machine, but only
-- meaningful at 1 thread (MF_NUM_THREADS=1), where it is the step's time.
-- --optim adam: both steps with Adam (lr 1e-3) instead of SGD with momentum.
-- usage: moonflow scripts/bench/eager_step.lua [--rounds 10] [--steps 40] [--warmup 30] [--cpu] [--optim sgd|adam]
local opts = {rounds = 10, steps = 40, warmup = 30, cpu = false, optim = 'sgd'}
local i = 1
while arg[i] do
  local k = arg[i]:match('^%-%-(.+)$')
  if k == 'cpu' then opts.cpu = true
  elseif k == 'optim' and (arg[i + 1] == 'sgd' or arg[i + 1] == 'adam') then opts.optim = arg[i + 1]; i = i + 1
  elseif k and opts[k] ~= nil then opts[k] = tonumber(arg[i + 1]); i = i + 1
  else error('eager_step.lua: unknown argument ' .. arg[i]) end
  i = i + 1
end
local clock = opts.cpu and os.clock or mf.clock

mf.manual_seed(1); math.randomseed(1)
local function labels(b)
  local t = {}
  for j = 1, b do t[j] = math.random(10) end
  return mf.tensor(t, 'int64')
end
local function mlp()
  return mf.nn.Sequential{mf.nn.Linear(784, 512), mf.nn.ReLU(), mf.nn.Linear(512, 256), mf.nn.ReLU(),
    mf.nn.Linear(256, 10)}
end
local xv, yv = mf.randn(64, 784), labels(64)

local function optimizer(params)
  if opts.optim == 'adam' then return mf.optim.Adam(params, {lr = 1e-3}) end
  return mf.optim.SGD(params, {lr = 0.01, momentum = 0.9})
end
local m1, crit = mlp(), mf.nn.CrossEntropyLoss()
local opt = optimizer(m1:parameters())
local function eager()
  opt:zero_grad()
  local loss = crit(m1(xv), yv)
  loss:backward()
  opt:step()
end

local x, y = mf.placeholder('float32', {64, 784}, 'x'), mf.placeholder('int64', {64}, 'y')
local m2 = mlp()
local loss = mf.nn.CrossEntropyLoss()(m2(x), y)
local train = optimizer(m2:parameters()):minimize(loss)
local sess, feed = mf.Session(), {[x] = xv, [y] = yv}
local function graph() sess:run({train, loss}, feed) end

for _ = 1, opts.warmup do eager(); graph() end
local te, tg = {}, {}
for r = 1, opts.rounds do
  local t0 = clock()
  for _ = 1, opts.steps do eager() end
  te[r] = (clock() - t0) / opts.steps * 1e3
  t0 = clock()
  for _ = 1, opts.steps do graph() end
  tg[r] = (clock() - t0) / opts.steps * 1e3
end
table.sort(te); table.sort(tg)
local me, mg = te[math.ceil(opts.rounds / 2)], tg[math.ceil(opts.rounds / 2)]
print(('{"workload":"e_mlp_eager_vs_graph_b64","optim":"%s","threads":%d,"clock":"%s","eager_ms":%.4f,"graph_ms":%.4f,'
  .. '"eager_over_graph":%.3f}'):format(opts.optim, mf.get_num_threads(), opts.cpu and 'cpu' or 'wall', me, mg, me / mg))
