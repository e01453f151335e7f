-- A 784-512-256-10 ReLU MLP on Fashion-MNIST: SGD lr 0.05, momentum 0.9, batch 64, 3 epochs.
-- usage: moonflow examples/mlp_fashion.lua [--smoke] [--save model.safetensors]
local smoke, save = false, nil
for i = 1, #arg do
  if arg[i] == '--smoke' then smoke = true end
  if arg[i] == '--save' then save = arg[i + 1] end
end
mf.manual_seed(1)

local train, test = mf.data.fashion_mnist()
local model = mf.nn.Sequential{
  mf.nn.Flatten(),
  mf.nn.Linear(784, 512), mf.nn.ReLU(),
  mf.nn.Linear(512, 256), mf.nn.ReLU(),
  mf.nn.Linear(256, 10)}
print(model)

local validate = test:loader{batch = 1000}
if smoke then  -- a slice of the test set keeps the smoke run short
  local tx, ty = test:tensors()
  validate = mf.data.TensorDataset(tx:narrow(1, 1, 500), ty:narrow(1, 1, 500)):loader{batch = 250}
end
local t0 = mf.clock()
local history = mf.fit{
  model = model, loss = mf.nn.CrossEntropyLoss(),
  optimizer = mf.optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9}),
  data = train:loader{batch = 64, shuffle = true, seed = 1},
  epochs = 3, validate = validate, max_steps = smoke and 30 or nil}
local last = history[#history]
print(('test accuracy %.4f after %d epoch(s), %.1f s'):format(last.val_accuracy, #history, mf.clock() - t0))
if save then model:save(save) print('saved ' .. save) end
if not smoke and last.val_accuracy < 0.85 then error(('mlp_fashion: accuracy %.4f below 0.85'):format(last.val_accuracy)) end
