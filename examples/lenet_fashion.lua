-- A LeNet-style CNN on Fashion-MNIST: conv5x5x32-relu-maxpool2, conv5x5x64-relu-maxpool2,
-- fc 1024->128-relu, fc 128->10; SGD lr 0.02, momentum 0.9, batch 64, 2 epochs.
-- usage: moonflow examples/lenet_fashion.lua [--smoke]
local smoke = arg[1] == '--smoke'
mf.manual_seed(1)

local train, test = mf.data.fashion_mnist()
local model = mf.nn.Sequential{
  mf.nn.Conv2d(1, 32, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
  mf.nn.Conv2d(32, 64, 5), mf.nn.ReLU(), mf.nn.MaxPool2d(2),
  mf.nn.Flatten(), mf.nn.Linear(1024, 128), mf.nn.ReLU(), mf.nn.Linear(128, 10)}
print(model)

local validate = test:loader{batch = 500}
if smoke then
  local tx, ty = test:tensors()
  validate = mf.data.TensorDataset(tx:narrow(1, 1, 200), ty:narrow(1, 1, 200)):loader{batch = 100}
end
local t0 = mf.clock()
local history = mf.fit{
  model = model, loss = mf.nn.CrossEntropyLoss(),
  optimizer = mf.optim.SGD(model:parameters(), {lr = 0.02, momentum = 0.9}),
  data = train:loader{batch = 64, shuffle = true, seed = 1},
  epochs = 2, validate = validate, max_steps = smoke and 10 or nil}
local last = history[#history]
print(('test accuracy %.4f after %d epoch(s), %.1f s'):format(last.val_accuracy, #history, mf.clock() - t0))
if not smoke and last.val_accuracy < 0.87 then error(('lenet_fashion: accuracy %.4f below 0.87'):format(last.val_accuracy)) end
