-- One repetition of one workload of the moonflow-vs-PyTorch suite (run.sh drives it; bench_torch.py
-- has the same workloads). Prints one JSON line per measurement:
--   {"workload":..., "impl":"moonflow"|"machine", "value":..., "unit":...}
-- usage: moonflow scripts/bench/bench_mf.lua --workload add|exec|sgemm|update|mlp|cnn|rss
--          [--warmup 5] [--steps 30] [--limit N (rss: first N training images)]
local ffi = require 'ffi'
ffi.cdef [[
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
char *openblas_get_corename(void);
]]

local opts = {workload = nil, warmup = 5, steps = 30, limit = 0}
local i = 1
while arg[i] do
  local k = arg[i]:match('^%-%-(.+)$')
  if k and opts[k] ~= nil or k == 'workload' then
    opts[k] = tonumber(arg[i + 1]) or arg[i + 1]; i = i + 1
  end
  i = i + 1
end
local clock = mf.clock

local function emit(workload, impl, value, unit, extra)
  print(('{"workload":"%s","impl":"%s","value":%.6g,"unit":"%s"%s}'):format(workload, impl, value, unit,
    extra or ''))
  io.stdout:flush()
end

-- (a) eager a + b on 1-element tensors
local function bench_add()
  local a, b = mf.ones(1), mf.ones(1)
  for _ = 1, 2e5 do local _ = a + b end  -- warm: JIT traces, closure cache, allocator
  local iters = 1e6
  collectgarbage()
  local t0 = clock()
  for _ = 1, iters do local _ = a + b end
  emit('a_eager_add_1elem', 'moonflow', (clock() - t0) / iters * 1e6, 'us/op')
end

-- (b) graph executor: a chain of 1,000 scalar adds run through a session; fusion off, since it
-- would fold the chain into a few fused steps and this measures the per-node dispatch cost
local function bench_exec()
  local nodes = 1000
  local x = mf.placeholder('float32', {}, 'x')
  local one = mf.constant(mf.tensor(1))
  local y = x
  for _ = 1, nodes do y = y + one end
  local sess, feed = mf.Session{fuse = false}, {[x] = mf.tensor(0)}
  assert(sess:run(y, feed):item() == nodes)
  for _ = 1, 200 do sess:run(y, feed) end
  local runs = 2000
  collectgarbage()
  local t0 = clock()
  for _ = 1, runs do sess:run(y, feed) end
  emit('b_graph_exec_per_node', 'moonflow', (clock() - t0) / runs / nodes * 1e6, 'us/node')
end

-- (c) sgemm n x n through mf.matmul, and the same sgemm straight into OpenBLAS (the machine limit):
-- 5 trials of about 0.1 s each, the two interleaved, best trial of each (the STREAM convention for
-- a throughput limit: other tenants only ever slow a trial down)
local function bench_sgemm()
  mf.manual_seed(1)
  for _, n in ipairs{256, 512, 1024, 2048} do
    local x, y, out = mf.randn(n, n), mf.randn(n, n), mf.zeros(n, n)
    local flop = 2 * n * n * n
    local k = math.max(3, math.floor(2e10 / flop))
    local function rate(f)
      f()
      local t0 = clock()
      for _ = 1, k do f() end
      return flop * k / (clock() - t0) / 1e9
    end
    local mm = function() local _ = mf.matmul(x, y) end
    local raw = function() ffi.C.cblas_sgemm(101, 111, 111, n, n, n, 1, x:data(), n, y:data(), n, 0, out:data(), n) end
    local best_mf, best_raw = 0, 0
    for _ = 1, 5 do
      best_mf = math.max(best_mf, rate(mm))
      best_raw = math.max(best_raw, rate(raw))
    end
    emit('c_sgemm_' .. n, 'moonflow', best_mf, 'GFLOP/s')
    emit('c_sgemm_' .. n, 'machine', best_raw, 'GFLOP/s',
      (',"openblas_core":"%s"'):format(ffi.string(ffi.C.openblas_get_corename())))
  end
end

-- (d) w = -eta * (g + lam * w) on 16M floats, written plainly; GB/s counting 2 reads + 1 write
local function bench_update()
  local n, eta, lam = 16 * 1024 * 1024, 0.01, 1e-4
  local bytes = 3 * 4 * n
  local g, w = mf.rand(n), mf.rand(n)
  local iters = 20
  for _ = 1, 3 do w = -eta * (g + lam * w) end
  collectgarbage()
  local t0 = clock()
  for _ = 1, iters do w = -eta * (g + lam * w) end
  emit('d_update_16M_eager', 'moonflow', bytes * iters / (clock() - t0) / 1e9, 'GB/s')

  -- the same expression in a graph, assigned back to the variable
  local wv, gv = mf.Variable(mf.rand(n), 'w'), mf.Variable(mf.rand(n), 'g')
  local upd = mf.assign(wv, -eta * (gv + lam * wv))
  local sess = mf.Session()
  sess:run(mf.global_variables_initializer())
  local target = mf.group{upd}
  for _ = 1, 3 do sess:run(target) end
  collectgarbage()
  t0 = clock()
  for _ = 1, iters do sess:run(target) end
  emit('d_update_16M_graph', 'moonflow', bytes * iters / (clock() - t0) / 1e9, 'GB/s')
end

local function random_labels(b)
  local t = {}
  for j = 1, b do t[j] = math.random(10) end
  return mf.tensor(t, 'int64')
end

-- one graph-mode training step (SGD momentum 0.9, cross-entropy) on random data: ms/step
local function time_steps(model, xshape, b, name)
  local xs = {unpack(xshape)}
  local x = mf.placeholder('float32', xs, 'x')
  local y = mf.placeholder('int64', {b}, 'y')
  local loss = mf.nn.CrossEntropyLoss()(model(x), y)
  local step = mf.optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9}):minimize(loss)
  local sess = mf.Session()
  local feed = {[x] = mf.randn(unpack(xshape)), [y] = random_labels(b)}
  for _ = 1, opts.warmup do sess:run({step, loss}, feed) end
  collectgarbage()
  local t0 = clock()
  for _ = 1, opts.steps do sess:run({step, loss}, feed) end
  emit(name, 'moonflow', (clock() - t0) / opts.steps * 1e3, 'ms/step')
end

-- the same step eagerly, through the tape (eager autograd): zero_grad, forward, backward, step
local function time_eager_steps(model, xshape, b, name)
  local x, y = mf.randn(unpack(xshape)), random_labels(b)
  local crit = mf.nn.CrossEntropyLoss()
  local opt = mf.optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9})
  local function step()
    opt:zero_grad()
    local loss = crit(model(x), y)
    loss:backward()
    opt:step()
    return loss
  end
  for _ = 1, opts.warmup do step() end
  collectgarbage()
  local t0 = clock()
  for _ = 1, opts.steps do step() end
  emit(name, 'moonflow', (clock() - t0) / opts.steps * 1e3, 'ms/step')
end

local function mlp()
  return mf.nn.Sequential{mf.nn.Linear(784, 512), mf.nn.ReLU(), mf.nn.Linear(512, 256), mf.nn.ReLU(),
    mf.nn.Linear(256, 10)}
end

-- (e) MLP 784-512-256-10 step, batch 64 and 256
local function bench_mlp()
  mf.manual_seed(1); math.randomseed(1)
  for _, b in ipairs{64, 256} do
    mf.reset_default_graph()
    time_steps(mlp(), {b, 784}, b, 'e_mlp_step_b' .. b)
  end
  mf.reset_default_graph()
  time_eager_steps(mlp(), {64, 784}, 64, 'e_mlp_eager_step_b64')
end

-- (f) LeNet-style CNN step, batch 64
local function bench_cnn()
  mf.manual_seed(1); math.randomseed(1)
  local model = mf.nn.Sequential{
    mf.nn.Conv2d(1, 32, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Conv2d(32, 64, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
    mf.nn.Flatten(), mf.nn.Linear(1024, 128), mf.nn.ReLU(), mf.nn.Linear(128, 10)}
  time_steps(model, {64, 1, 28, 28}, 64, 'f_cnn_step_b64')
end

-- (g) peak RSS of one MLP epoch on Fashion-MNIST (batch 64, shuffled), read at the end
local function bench_rss()
  mf.manual_seed(1)
  local train = mf.data.fashion_mnist()
  if opts.limit > 0 then
    local tx, ty = train:tensors()
    train = mf.data.TensorDataset(tx:narrow(1, 1, opts.limit), ty:narrow(1, 1, opts.limit))
  end
  local model = mf.nn.Sequential{mf.nn.Flatten(), mf.nn.Linear(784, 512), mf.nn.ReLU(),
    mf.nn.Linear(512, 256), mf.nn.ReLU(), mf.nn.Linear(256, 10)}
  local t0 = clock()
  mf.fit{model = model, loss = mf.nn.CrossEntropyLoss(),
    optimizer = mf.optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9}),
    data = train:loader{batch = 64, shuffle = true, seed = 1}, epochs = 1, quiet = true}
  local secs = clock() - t0
  local f = assert(io.open('/proc/self/status'))
  local kb = tonumber(f:read('*a'):match('VmHWM:%s*(%d+)'))
  f:close()
  emit('g_mlp_epoch_peak_rss', 'moonflow', kb / 1024, 'MiB',
    (',"images":%d,"epoch_s":%.2f'):format(#train, secs))
end

local benches = {add = bench_add, exec = bench_exec, sgemm = bench_sgemm, update = bench_update,
  mlp = bench_mlp, cnn = bench_cnn, rss = bench_rss}
local f = benches[opts.workload]
if not f then error('--workload must be one of add exec sgemm update mlp cnn rss') end
f()
