-- mlp_fashion.lua's recipe (a 784-512-256-10 ReLU MLP on Fashion-MNIST: SGD lr 0.05, momentum 0.9,
-- batch 64, 3 epochs) trained by a hand-written loop with eager autograd: forward on tensors, the
-- loss, loss:backward() filling each parameter's .grad, opt:step(), opt:zero_grad(). No graph.
-- usage: moonflow examples/mlp_eager.lua [--smoke] [--device cpu|cuda]
-- --device cuda: the model and the test tensors move to the GPU once, each batch as it comes; the
-- last line, 'result: ...', is what scripts/gpu/examples.sh compares between the CPU and the GPU.
local smoke, device = false, 'cpu'
for i = 1, #arg do
  if arg[i] == '--smoke' then smoke = true end
  if arg[i] == '--device' then device = arg[i + 1] end
end
-- --device cuda without a GPU (or without the CUDA backend) stops here, saying why
if device ~= 'cpu' and device ~= 'cuda' then
  io.stderr:write(("mlp_eager: --device is '%s'; expected cpu or cuda\n"):format(tostring(device)))
  os.exit(1, true)
end
if device == 'cuda' and not mf.cuda.is_available() then
  io.stderr:write('mlp_eager: --device cuda: ' .. mf.cuda.reason() .. '\n')
  os.exit(1, true)
end
mf.manual_seed(1)

local train, test = mf.data.fashion_mnist()
local model = mf.nn.Sequential{
  mf.nn.Flatten(),
  mf.nn.Linear(784, 512), mf.nn.ReLU(),
  mf.nn.Linear(512, 256), mf.nn.ReLU(),
  mf.nn.Linear(256, 10)}
model:to(device)  -- before the optimizer: its state is made like the parameters, on their device
local criterion = mf.nn.CrossEntropyLoss()
local opt = mf.optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9})

local tx, ty = test:tensors()
if smoke then tx, ty = tx:narrow(1, 1, 500), ty:narrow(1, 1, 500) end
tx, ty = tx:to(device), ty:to(device)
-- loss and accuracy on the test set, recording nothing
local function evaluate()
  return mf.no_grad(function()
    model:evaluate()
    local loss, correct, n = 0, 0, tx:size(1)
    for s = 1, n, 1000 do
      local b = math.min(1000, n - s + 1)
      local x, y = tx:narrow(1, s, b), ty:narrow(1, s, b)
      local out = model(x)
      loss = loss + criterion(out, y):item() * b
      correct = correct + mf.eq(mf.argmax(out, 2), mf.cast(y, 'int64')):sum():item()
    end
    model:train()
    return loss / n, correct / n
  end)
end

local loss0 = evaluate()
local t0, steps = mf.clock(), 0
local loader = train:loader{batch = 64, shuffle = true, seed = 1}
for epoch = 1, 3 do
  local sum, seen = 0, 0
  for x, y in loader:iter() do
    x, y = x:to(device), y:to(device)
    local loss = criterion(model(x), y)
    loss:backward()
    opt:step()
    opt:zero_grad()
    sum, seen, steps = sum + loss:item() * x:size(1), seen + x:size(1), steps + 1
    if smoke and steps >= 30 then break end
  end
  local vl, va = evaluate()
  print(('epoch %d  train loss %.4f  test loss %.4f  test accuracy %.4f  %.1f s'):format(epoch, sum / seen, vl, va,
    mf.clock() - t0))
  if smoke then break end
end
local loss1, acc = evaluate()
print(('test loss %.4f before training, %.4f after; accuracy %.4f'):format(loss0, loss1, acc))
if not (loss1 < 0.7 * loss0) then
  error(('mlp_eager: test loss %.4f after %d steps is not well below %.4f before'):format(loss1, steps, loss0))
end
print(('result: device %s, %d steps, accuracy %.4f, loss %.4f'):format(device, steps, acc, loss1))
if not smoke and acc < 0.85 then error(('mlp_eager: accuracy %.4f below 0.85'):format(acc)) end
