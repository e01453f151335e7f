-- A LeNet-style CNN on Fashion-MNIST: conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2,
-- fc 1024->128-relu, fc 128->10; SGD lr 0.02, momentum 0.9, batch 64, 2 epochs.
-- usage: moonflow examples/lenet_fashion.lua [--smoke] [--device cpu|cuda]
-- --device cuda trains on the GPU (mf.fit follows the model's device); the last line, 'result: ...',
-- is what scripts/gpu/examples.sh compares between the CPU and the GPU.
local smoke, device = false, 'cpu'
for i = 1, #arg do
  if arg[i] == '--smoke' then smoke = true end
  if arg[i] == '--device' then device = arg[i + 1] end
end
-- --device cuda without a GPU (or without the CUDA backend) stops here, saying why
if device ~= 'cpu' and device ~= 'cuda' then
  io.stderr:write(("lenet_fashion: --device is '%s'; expected cpu or cuda\n"):format(tostring(device)))
  os.exit(1, true)
end
if device == 'cuda' and not mf.cuda.is_available() then
  io.stderr:write('lenet_fashion: --device cuda: ' .. mf.cuda.reason() .. '\n')
  os.exit(1, true)
end
mf.manual_seed(1)

local train, test = mf.data.fashion_mnist()
local model = mf.nn.Sequential{
  mf.nn.Conv2d(1, 32, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
  mf.nn.Conv2d(32, 64, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
  mf.nn.Flatten(), mf.nn.Linear(1024, 128), mf.nn.ReLU(), mf.nn.Linear(128, 10)}
model:to(device)
print(model)

local validate = test:loader{batch = 500}
if smoke then
  local tx, ty = test:tensors()
  validate = mf.data.TensorDataset(tx:narrow(1, 1, 200), ty:narrow(1, 1, 200)):loader{batch = 100}
end
local val_loss0 = mf.evaluate(model, validate).loss
local t0 = mf.clock()
local losses = {}
local history = mf.fit{
  model = model, loss = mf.nn.CrossEntropyLoss(),
  optimizer = mf.optim.SGD(model:parameters(), {lr = 0.02, momentum = 0.9}),
  data = train:loader{batch = 64, shuffle = true, seed = 1},
  epochs = 2, validate = validate, max_steps = smoke and 60 or nil,
  on_step = function(_, l) losses[#losses + 1] = l end}
local last = history[#history]
print(('test accuracy %.4f after %d epoch(s), %.1f s'):format(last.val_accuracy, #history, mf.clock() - t0))
-- it learns, in the smoke run too: the validation loss well below its value before training
print(('validation loss %.4f before training, %.4f after'):format(val_loss0, last.val_loss))
if not (last.val_loss < 0.7 * val_loss0) then
  error(('lenet_fashion: validation loss %.4f after %d steps is not well below %.4f before'):format(last.val_loss, #losses, val_loss0))
end
print(('result: device %s, %d steps, accuracy %.4f, loss %.4f'):format(device, #losses, last.val_accuracy, last.val_loss))
if not smoke and last.val_accuracy < 0.87 then error(('lenet_fashion: accuracy %.4f below 0.87'):format(last.val_accuracy)) end
