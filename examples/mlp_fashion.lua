-- A 784-512-256-10 ReLU MLP on Fashion-MNIST: SGD lr 0.05, momentum 0.9, batch 64, 3 epochs.
-- usage: moonflow examples/mlp_fashion.lua [--smoke] [--device cpu|cuda] [--save model.safetensors]
-- --device cuda trains on the GPU (model:to(device); mf.fit runs its sessions where the parameters
-- are and copies each host batch up). The last line, 'result: ...', is what scripts/gpu/examples.sh
-- compares between the CPU and the GPU.
local smoke, save, device = false, nil, 'cpu'
for i = 1, #arg do
  if arg[i] == '--smoke' then smoke = true end
  if arg[i] == '--save' then save = arg[i + 1] end
  if arg[i] == '--device' then device = arg[i + 1] end
end
-- --device cuda without a GPU (or without the CUDA backend) stops here, saying why
if device ~= 'cpu' and device ~= 'cuda' then
  io.stderr:write(("mlp_fashion: --device is '%s'; expected cpu or cuda\n"):format(tostring(device)))
  os.exit(1, true)
end
if device == 'cuda' and not mf.cuda.is_available() then
  io.stderr:write('mlp_fashion: --device cuda: ' .. mf.cuda.reason() .. '\n')
  os.exit(1, true)
end
mf.manual_seed(1)

local train, test = mf.data.fashion_mnist()
local model = mf.nn.Sequential{
  mf.nn.Flatten(),
  mf.nn.Linear(784, 512), mf.nn.ReLU(),
  mf.nn.Linear(512, 256), mf.nn.ReLU(),
  mf.nn.Linear(256, 10)}
model:to(device)
print(model)

local validate = test:loader{batch = 1000}
if smoke then  -- a slice of the test set keeps the smoke run short
  local tx, ty = test:tensors()
  validate = mf.data.TensorDataset(tx:narrow(1, 1, 500), ty:narrow(1, 1, 500)):loader{batch = 250}
end
local val_loss0 = mf.evaluate(model, validate).loss
local t0 = mf.clock()
local losses = {}
local history = mf.fit{
  model = model, loss = mf.nn.CrossEntropyLoss(),
  optimizer = mf.optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9}),
  data = train:loader{batch = 64, shuffle = true, seed = 1},
  epochs = 3, validate = validate, max_steps = smoke and 30 or nil,
  on_step = function(_, l) losses[#losses + 1] = l end}
local last = history[#history]
print(('test accuracy %.4f after %d epoch(s), %.1f s'):format(last.val_accuracy, #history, mf.clock() - t0))
if save then model:save(save) print('saved ' .. save) end
-- it learns, in the smoke run too: the validation loss well below its value before training
print(('validation loss %.4f before training, %.4f after'):format(val_loss0, last.val_loss))
if not (last.val_loss < 0.7 * val_loss0) then
  error(('mlp_fashion: validation loss %.4f after %d steps is not well below %.4f before'):format(last.val_loss, #losses, val_loss0))
end
print(('result: device %s, %d steps, accuracy %.4f, loss %.4f'):format(device, #losses, last.val_accuracy, last.val_loss))
if not smoke and last.val_accuracy < 0.85 then error(('mlp_fashion: accuracy %.4f below 0.85'):format(last.val_accuracy)) end
