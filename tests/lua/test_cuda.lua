-- The CUDA backend from Lua. The first half runs everywhere: without a GPU (or without the backend
-- in the build) every way of asking for cuda is a clear error saying why, never a crash, and
-- mf.cuda's status functions answer. The second half runs only where mf.cuda.is_available(): values
-- computed on the GPU against the CPU (and hand-computed references), views, mixed devices, memory.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local has_gpu = mf.cuda.is_available()
local reason = mf.cuda.reason()

-- -- status, everywhere -------------------------------------------------------------------------
-- cuBLAS and NVRTC are opened on first use (src/kernels/cuda/lazy_libs.cc): linked, their
-- initialisers made every start of a CUDA-enabled build 60-100 ms slower, GPU or not
T.test('cuBLAS and NVRTC are not loaded before a product or a fused kernel needs them', function()
  local maps = assert(io.open('/proc/self/maps')):read('*a')
  T.eq(maps:find('libcublas', 1, true), nil, 'libcublas mapped at start')
  T.eq(maps:find('libnvrtc', 1, true), nil, 'libnvrtc mapped at start')
end)

T.test('mf.cuda status functions agree', function()
  T.eq(type(has_gpu), 'boolean', 'is_available')
  T.eq(type(mf.cuda.device_count()), 'number', 'device_count')
  local listed = false
  for _, n in ipairs(mf.devices()) do listed = listed or n == 'cuda' end
  T.eq(listed, has_gpu, "'cuda' in mf.devices()")
  if has_gpu then
    T.eq(reason, '', 'reason when available')
    assert(mf.cuda.device_count() >= 1, 'a GPU is counted')
  else
    -- one of the two reasons, naming the runtime's error when the backend is built
    assert(reason == 'this build has no CUDA backend' or reason:find('^no CUDA device: ') ~= nil,
      'reason: ' .. reason)
  end
  mf.cuda.synchronize()  -- a no-op without a GPU; waits with one
  T.eq(type(mf.cuda.sync_count()), 'number', 'sync_count')
  if not has_gpu then T.eq(mf.cuda.sync_count(), 0, 'no waits without a GPU') end
end)

T.test('mf.cuda.set_allow_tf32 reads back and checks its argument', function()
  T.eq(mf.cuda.allow_tf32(), false, 'default')
  mf.cuda.set_allow_tf32(true)
  T.eq(mf.cuda.allow_tf32(), true, 'after set true')
  mf.cuda.set_allow_tf32(false)
  T.eq(mf.cuda.allow_tf32(), false, 'after set false')
  T.errors(function() mf.cuda.set_allow_tf32(1) end, 'set_allow_tf32', 'number', 'true or false')
end)

T.test('help knows mf.cuda', function()
  assert(mf.help_text(mf.cuda.is_available):find('GPU', 1, true), 'is_available has docs')
  assert(mf.help_text('cuda.synchronize'):find('waits', 1, true), 'synchronize has docs')
end)

if not has_gpu then
  -- -- asking for cuda without one: the reason, every way ---------------------------------------
  local function no_cuda(fn, ...)
    local err = T.errors(fn, 'cuda: ', reason, ...)
    assert(not err:find('internal error', 1, true), 'not an internal error: ' .. err)
  end
  T.test('t:cuda() without a GPU says why', function()
    no_cuda(function() return mf.ones(2):cuda() end)
    no_cuda(function() return mf.ones(2, 3):t():cuda() end)  -- a view
  end)
  T.test("t:to('cuda') without a GPU says why", function() no_cuda(function() return mf.ones(2):to('cuda') end, 'to') end)
  T.test("factories with {device = 'cuda'} say why", function()
    no_cuda(function() return mf.zeros(2, 3, {device = 'cuda'}) end, 'zeros')
    no_cuda(function() return mf.randn(4, {device = 'cuda'}) end, 'randn')
    no_cuda(function() return mf.zeros(2, {device = 'cuda', requires_grad = true}) end, 'zeros')
    no_cuda(function() return mf.tensor({1, 2}, {device = 'cuda'}) end, 'mf.tensor')
  end)
  T.test("mf.Session{device = 'cuda'} says why", function()
    no_cuda(function() return mf.Session{device = 'cuda'} end, 'Session')
  end)
  T.test('model:cuda() says why, with and without parameters', function()
    no_cuda(function() return mf.nn.Linear(2, 3):cuda() end)
    no_cuda(function() return mf.nn.ReLU():cuda() end)
  end)
  T.test("memory_stats('cuda') and empty_cache('cuda') say why", function()
    no_cuda(function() return mf.memory_stats('cuda') end, 'memory_stats')
    no_cuda(function() return mf.empty_cache('cuda') end, 'empty_cache')
  end)
  T.test('the CPU is unchanged: a cpu device option, t:cpu(), model:cpu()', function()
    local z = mf.zeros(2, {device = 'cpu', requires_grad = true})
    T.eq(z:device(), 'cpu', 'device')
    T.eq(z:requires_grad(), true, 'requires_grad kept')
    T.eq(z.grad, nil, 'a leaf')
    local t = mf.tensor({1, 2}, {device = 'cpu', dtype = 'float64'})
    T.eq(t:dtype(), 'float64', 'dtype kept')
    T.eq(t:cpu(), t, 't:cpu() of a cpu tensor is itself')
    local m = mf.nn.Linear(2, 3)
    T.eq(m:cpu(), m, 'model:cpu() returns the model')
    T.errors(function() return mf.zeros(2, {device = 'gpu'}) end, "device 'gpu' is not registered", 'cpu')
  end)
  print('GPU half skipped: ' .. reason)
  T.finish()
end

-- -- on a GPU ------------------------------------------------------------------------------------
local function cpu_table(t) return t:cpu():totable() end

T.test('round trips keep values and dtypes', function()
  for _, dt in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    local a = mf.tensor({{1, 2, 3}, {4, 5, 250}}, {dtype = dt})
    local g = a:cuda()
    T.eq(g:device(), 'cuda', dt .. ' device')
    T.eq(g:dtype(), dt, dt .. ' dtype')
    T.tensor_eq(g:cpu(), {{1, 2, 3}, {4, 5, 250}}, nil, dt)
    T.eq(g:cuda(), g, 'cuda of a cuda tensor is itself')
  end
  local e = mf.zeros(0, 3):cuda()
  T.eq(e:numel(), 0, 'empty')
  T.eq(mf.tensor(2.5):cuda():item(), 2.5, ':item() reads a 0-dim device tensor')
end)

T.test('views go to the device with their values (transpose, narrow, expand)', function()
  local a = mf.tensor({{1, 2, 3}, {4, 5, 6}})
  T.tensor_eq(a:t():cuda(), {{1, 4}, {2, 5}, {3, 6}}, nil, 'transpose')
  T.tensor_eq(a:narrow(2, 2, 2):cuda(), {{2, 3}, {5, 6}}, nil, 'narrow')
  T.tensor_eq(mf.tensor({7, 8}):expand(3, 2):cuda(), {{7, 8}, {7, 8}, {7, 8}}, nil, 'expand')
  local g = a:cuda()
  T.tensor_eq(g:t():contiguous(), {{1, 4}, {2, 5}, {3, 6}}, nil, 'transpose on the device')
  T.tensor_eq(g:t():cpu(), {{1, 4}, {2, 5}, {3, 6}}, nil, 'a device view to the host')
end)

T.test('factories on the device', function()
  T.tensor_eq(mf.zeros(2, 2, {device = 'cuda'}):cpu(), {{0, 0}, {0, 0}})
  T.tensor_eq(mf.full({2}, 3.5, {device = 'cuda'}):cpu(), {3.5, 3.5})
  T.tensor_eq(mf.arange(1, 5, {device = 'cuda'}):cpu(), {1, 2, 3, 4})
  T.tensor_eq(mf.eye(2, {device = 'cuda'}):cpu(), {{1, 0}, {0, 1}})
  local w = mf.zeros(3, {device = 'cuda', requires_grad = true})
  T.eq(w:device(), 'cuda', 'device')
  T.eq(w:requires_grad(), true, 'a requires-grad leaf on the device')
end)

T.test('elementwise ops agree with the CPU (float32 1e-5, float64 1e-12), broadcast and strided', function()
  mf.manual_seed(3)
  for _, dt in ipairs{'float32', 'float64'} do
    local tol = dt == 'float32' and 1e-5 or 1e-12
    local a, b = mf.randn(4, 5, {dtype = dt}), mf.randn(5, {dtype = dt})
    local ga, gb = a:cuda(), b:cuda()
    local cases = {
      {'add', a + b, ga + gb}, {'mul', a * b, ga * gb}, {'sub bcast', b - a, gb - ga}, {'div', a / 3, ga / 3},
      {'exp', mf.exp(a), mf.exp(ga)}, {'tanh', mf.tanh(a), mf.tanh(ga)}, {'sigmoid', mf.sigmoid(a), mf.sigmoid(ga)},
      {'relu', mf.relu(a), mf.relu(ga)}, {'neg t', -a:t(), -ga:t()}, {'abs narrow', mf.abs(a:narrow(2, 2, 3)),
      mf.abs(ga:narrow(2, 2, 3))}, {'where', mf.where(mf.gt(a, 0), a, b), mf.where(mf.gt(ga, 0), ga, gb)},
      {'maximum', mf.maximum(a, b), mf.maximum(ga, gb)}, {'pow', mf.pow(mf.abs(a), 1.5), mf.pow(mf.abs(ga), 1.5)}}
    for _, c in ipairs(cases) do
      T.eq(c[3]:device(), 'cuda', c[1] .. ' runs on cuda')
      T.tensor_eq(c[3], c[2]:totable(), tol, dt .. ' ' .. c[1])
    end
  end
  local i = mf.tensor({1, -2, 7}, {dtype = 'int64'}):cuda()
  T.tensor_eq(i * i + 1, {2, 5, 50}, nil, 'int64')
  local nan = mf.tensor({0 / 0, 1}):cuda()
  local r = (nan + 1):cpu()
  assert(r:get(1) ~= r:get(1), 'NaN propagates')
end)

T.test('in-place writes through a device view', function()
  local g = mf.zeros(2, 3, {device = 'cuda'})
  g:t():narrow(1, 2, 1):fill(5)
  T.tensor_eq(g, {{0, 5, 0}, {0, 5, 0}}, nil, 'column 2 filled through a transposed view')
  g:narrow(1, 1, 1):copy(mf.tensor({1, 2, 3}):cuda())
  T.tensor_eq(g, {{1, 2, 3}, {0, 5, 0}}, nil, 'row 1 copied')
end)

T.test('shape ops on the device: concat, index_select, one_hot', function()
  local a, b = mf.tensor({{1, 2}}):cuda(), mf.tensor({{3, 4}, {5, 6}}):cuda()
  T.tensor_eq(mf.concat({a, b}, 1), {{1, 2}, {3, 4}, {5, 6}}, nil, 'concat')
  T.tensor_eq(mf.index_select(b, 1, mf.tensor({2, 1, 2}, {dtype = 'int64'}):cuda()), {{5, 6}, {3, 4}, {5, 6}},
    nil, 'index_select')
  T.tensor_eq(mf.one_hot(mf.tensor({2, 1}, {dtype = 'int64'}):cuda(), 3), {{0, 1, 0}, {1, 0, 0}}, nil, 'one_hot')
end)

T.test('out= on the device: into a contiguous tensor, through a strided view, and its misuse', function()
  local a, b = mf.tensor({{1, -2}, {3, -4}}):cuda(), mf.tensor({{10, 20}, {30, 40}}):cuda()
  local o = mf.zeros(2, 2, {device = 'cuda'})
  T.eq(rawequal(mf.add(a, b, {out = o}), o), true, 'add returns out')
  T.tensor_eq(o, {{11, 18}, {33, 36}}, nil, 'add into out')
  T.tensor_eq(mf.matmul(a, b, {out = o}), {{-50, -60}, {-90, -100}}, nil, 'matmul into out')
  local big = mf.zeros(2, 4, {device = 'cuda'})
  mf.abs(a, {out = big:narrow(2, 2, 2)})
  T.tensor_eq(big, {{0, 1, 2, 0}, {0, 3, 4, 0}}, nil, 'abs into a narrowed view')
  T.errors(function() mf.abs(a, {out = mf.zeros(2, 2)}) end, 'abs: out is float32 on cpu; the result is float32 on cuda')
end)

T.test('mixing devices is a clear error', function()
  local a, g = mf.ones(2), mf.ones(2):cuda()
  T.errors(function() return a + g end, 'add', 'is on cpu', 'is on cuda', ':cuda() or :cpu()')
  T.errors(function() return mf.where(mf.gt(g, 0), a, g) end, 'where', 'cuda', 'cpu')
end)

T.test('model:cuda() and model:cpu() move parameters in place', function()
  local m = mf.nn.Linear(3, 2)
  local w = m.weight
  T.eq(m:cuda(), m, 'returns the model')
  T.eq(m.weight, w, 'same Parameter object')
  T.eq(m.weight.data:device(), 'cuda', 'weight on cuda')
  m:cpu()
  T.eq(m.weight.data:device(), 'cpu', 'weight back on cpu')
end)

T.test("mf.Session{device = 'cuda'}: host feeds go up, fetches come back to the host", function()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local w = mf.Variable(mf.tensor({{1}, {2}, {3}}), 'w')
  local y = mf.relu(mf.matmul(x, w) - 5)
  local s = mf.Session{device = 'cuda'}
  s:run(mf.global_variables_initializer())
  local r = s:run(y, {[x] = mf.tensor({{1, 1, 1}, {0, 0, 1}, {2, 2, 2}})})
  T.eq(r:device(), 'cpu', 'a fetch is on the host')
  T.tensor_eq(r, {{1}, {0}, {7}}, 1e-6, 'relu(x w - 5)')
end)

T.test('host waits: computing does not wait, reading does', function()
  local a, b = mf.randn(64):cuda(), mf.randn(64):cuda()
  local s0 = mf.cuda.sync_count()
  local c = mf.tanh(a * b + a)
  T.eq(mf.cuda.sync_count() - s0, 0, 'waits while computing')
  local _ = c:sum():item()
  assert(mf.cuda.sync_count() - s0 >= 1, 'item waits')
end)

T.test('index checks on the device: no wait, the error at the next host read', function()
  local labels = mf.tensor({2, 1, 7}, {dtype = 'int64'}):cuda()
  local s0 = mf.cuda.sync_count()
  local oh = mf.one_hot(labels, 4)               -- label 7 is out of range: recorded, not raised
  local sel = mf.index_select(mf.ones(3, 2):cuda(), 1, mf.tensor({1, 5}, {dtype = 'int64'}):cuda())
  T.eq(mf.cuda.sync_count() - s0, 0, 'checking waits for nothing')
  T.errors(function() return oh:cpu() end, 'one_hot: label 7 at position 3 is out of range 1..4')
  -- raised once (the first fault is kept: index_select's came after it); the device works on
  local _ = sel
  T.tensor_eq(mf.one_hot(mf.tensor({2, 1}, {dtype = 'int64'}):cuda(), 3), {{0, 1, 0}, {1, 0, 0}}, nil, 'after')
  T.errors(function()
    local y = mf.index_select(mf.ones(3, 2):cuda(), 1, mf.tensor({1, 5}, {dtype = 'int64'}):cuda())
    mf.cuda.synchronize()
    return y
  end, 'index_select: index 5 at position 2 is out of range 1..3')
end)

T.test('memory stats and empty_cache on cuda', function()
  collectgarbage(); collectgarbage()
  local s0 = mf.memory_stats('cuda')
  for _ = 1, 200 do local _ = mf.ones(1000, {device = 'cuda'}) * 2 end
  collectgarbage(); collectgarbage()
  local s1 = mf.memory_stats('cuda')
  T.eq(s1.in_use, s0.in_use, 'bytes in use return to where they were')
  assert(s1.system_allocations - s0.system_allocations <= 2, 'blocks are reused, not cudaMalloc-ed each time')
  mf.empty_cache('cuda')
  assert(mf.memory_stats('cuda').cached <= s1.cached, 'empty_cache gives cached memory back')
end)

-- Dead device tensors wait for a collector cycle (a larger allowance on a device, tensor.lua); with
-- the collector stopped, as a program may, only the retry after a failed allocation frees them:
-- 2 GiB results, 100 of them, more than any GPU holds.
T.test('garbage never runs the device out of memory (the collector stopped)', function()
  collectgarbage('stop')
  local ok, err = pcall(function()
    for _ = 1, 100 do local _ = mf.empty(2 ^ 29, {device = 'cuda'}) end
  end)
  collectgarbage('restart')
  collectgarbage(); collectgarbage()
  mf.empty_cache('cuda')
  assert(ok, err)
end)

T.finish()
