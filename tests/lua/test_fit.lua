-- Training loop and checkpoints: fit learns a separable problem, reports history/callbacks/CSV;
-- a saved model reloads bit-exactly and predicts identically; resuming a training checkpoint
-- (model, optimizer state, RNG, epoch) reproduces the next epoch's losses exactly.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local tmp = os.tmpname()

-- two Gaussian blobs per class in 8-D, labels 1..3; with flip_every, every such sample is labelled
-- as the next class (so no model reaches 100% and an accuracy count has something to count)
local function dataset(n, seed, flip_every)
  mf.manual_seed(seed)
  local x = mf.randn(n, 8)
  local labels = {}
  for i = 1, n do labels[i] = (i - 1) % 3 + 1 end
  local y = mf.tensor(labels, 'int64')
  local centers = mf.randn(3, 8) * 3
  x = x + mf.index_select(centers, y, 1)
  if flip_every then
    for i = flip_every, n, flip_every do labels[i] = labels[i] % 3 + 1 end
    y = mf.tensor(labels, 'int64')
  end
  return mf.data.TensorDataset(x, y), x, labels
end

-- accuracy by an independent count: the eval-mode model's eager outputs, argmax and comparison in
-- plain Lua (not mf.evaluate, not argmax/eq ops)
local function counted_accuracy(m, x, labels)
  m:evaluate()
  local out = m(x):double():totable()
  m:train()
  local right = 0
  for i, row in ipairs(out) do
    local best = 1
    for j = 2, #row do if row[j] > row[best] then best = j end end
    if best == labels[i] then right = right + 1 end
  end
  return right / #out
end

local function model()
  return mf.nn.Sequential{mf.nn.Linear(8, 16), mf.nn.ReLU(), mf.nn.Dropout(0.2), mf.nn.Linear(16, 3)}
end

local function same_bytes(a, b)
  T.eq(a:shape_str(), b:shape_str())
  T.eq(a:dtype(), b:dtype())
  local pa, pb = a:contiguous():data(), b:contiguous():data()
  local n = a:numel() * ({float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1})[a:dtype()]
  local ca, cb = require('ffi').cast('uint8_t *', pa), require('ffi').cast('uint8_t *', pb)
  for i = 0, n - 1 do if ca[i] ~= cb[i] then error('byte ' .. i .. ' differs', 2) end end
end

T.test('fit learns, with history, callbacks and a CSV log', function()
  local ds, xs, labels = dataset(600, 1, 10)
  mf.manual_seed(2)
  local m = model()
  local epochs_seen, steps, counted = {}, 0, {}
  local csv = tmp .. '.csv'
  local h = mf.fit{model = m, loss = mf.nn.CrossEntropyLoss(), optimizer = mf.optim.Adam(m:parameters(), {lr = 0.01}),
    data = ds:loader{batch = 32, shuffle = true, seed = 3}, epochs = 3, validate = ds:loader{batch = 100},
    on_epoch = function(e, rec)
      epochs_seen[#epochs_seen + 1] = e
      counted[e] = counted_accuracy(m, xs, labels)
    end, on_step = function() steps = steps + 1 end,
    log = csv, quiet = true}
  T.eq(#h, 3); T.eq(table.concat(epochs_seen, ','), '1,2,3'); T.eq(steps, 3 * 19)
  assert(h[3].loss < h[1].loss, 'training loss falls')
  for e = 1, 3 do T.near(h[e].val_accuracy, counted[e], 1e-12, 'fit val_accuracy vs counted, epoch ' .. e) end
  -- the blobs are learnt; the 60 flipped labels (a tenth) cannot be
  assert(counted[3] > 0.85 and counted[3] <= 0.9, 'separable blobs are learnt: counted accuracy ' .. counted[3])
  local lines = {}
  for l in io.lines(csv) do lines[#lines + 1] = l end
  os.remove(csv)
  T.eq(#lines, 4); T.eq(lines[1], 'epoch,loss,val_loss,val_accuracy,seconds')
  assert(lines[4]:match('^3,'), lines[4])
  T.errors(function() mf.fit{model = m, loss = mf.nn.MSELoss(), optimizer = 1, data = ds:loader{}} end, 'optimizer')
  T.errors(function() mf.fit{model = m, epoch = 2} end, "unknown argument 'epoch'")
end)

T.test('a saved model reloads bit-exactly and predicts identically', function()
  mf.manual_seed(5)
  local a = mf.nn.Sequential{mf.nn.Linear(8, 16), mf.nn.BatchNorm1d(16), mf.nn.Linear(16, 3)}
  a(mf.randn(10, 8))  -- training mode: moves the running statistics away from their defaults
  a:save(tmp)
  mf.manual_seed(6)
  local b = mf.nn.Sequential{mf.nn.Linear(8, 16), mf.nn.BatchNorm1d(16), mf.nn.Linear(16, 3)}
  b:load(tmp)
  local sa, sb = a:state_dict(), b:state_dict()
  for k, t in pairs(sa) do same_bytes(t, sb[k]) end
  a:evaluate(); b:evaluate()
  local x = mf.randn(7, 8)
  same_bytes(a(x), b(x))
end)

T.test('resuming a checkpoint reproduces the next epoch exactly', function()
  local ds = dataset(300, 11)
  local function run(resume)
    mf.manual_seed(21)
    local m = model()
    local opt = mf.optim.SGD(m:parameters(), {lr = 0.05, momentum = 0.9})
    local sched = mf.optim.StepLR(opt, {step_size = 1, gamma = 0.5})
    local loader = ds:loader{batch = 16, shuffle = true, seed = 4}
    local losses, first = {}, 1
    if resume then
      first = mf.load_checkpoint(tmp, {model = m, optimizer = opt, scheduler = sched}) + 1
    end
    mf.fit{model = m, loss = mf.nn.CrossEntropyLoss(), optimizer = opt, scheduler = sched, data = loader,
      epochs = 2, start_epoch = first, quiet = true,
      on_step = function(_, l) losses[#losses + 1] = l end,
      on_epoch = function(e)
        if e == 1 and not resume then mf.save_checkpoint(tmp, {model = m, optimizer = opt, scheduler = sched, epoch = 1}) end
      end}
    return losses, opt:get_lr()
  end
  local full, lr_full = run(false)
  local resumed, lr_resumed = run(true)
  local per_epoch = #full / 2
  T.eq(#resumed, per_epoch)
  for i = 1, per_epoch do
    if resumed[i] ~= full[per_epoch + i] then
      error(('step %d of epoch 2: resumed loss %.17g, uninterrupted %.17g'):format(i, resumed[i], full[per_epoch + i]))
    end
  end
  T.eq(lr_resumed, lr_full)
end)

T.test('schedulers follow their formulas', function()
  local p = mf.nn.Parameter(mf.zeros(1))
  local opt = mf.optim.SGD({p}, {lr = 0.1})
  local s = mf.optim.StepLR(opt, {step_size = 2, gamma = 0.5})
  local got = {}
  for e = 1, 5 do s:step(); got[e] = opt:get_lr() end
  local want = {0.1, 0.05, 0.05, 0.025, 0.025}
  for e = 1, 5 do T.near(got[e], want[e], 1e-15) end
  local opt2 = mf.optim.SGD({p}, {lr = 1})
  local c = mf.optim.CosineAnnealingLR(opt2, {T_max = 4, eta_min = 0.2})
  c:step(); T.near(opt2:get_lr(), 0.2 + 0.8 * (1 + math.cos(math.pi / 4)) / 2, 1e-15)
  c:step(); c:step(); c:step(); T.near(opt2:get_lr(), 0.2, 1e-15)
end)

os.remove(tmp)
T.finish()
