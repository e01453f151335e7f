-- The model examples/embed/main.cc runs: the 784-512-256-10 MLP of examples/mlp_fashion.lua, so
-- weights saved there (--save mlp.safetensors) load here. The host sets MODEL_WEIGHTS to load them
-- and gives us host_log; predict(x) takes N x 784 images in [0, 1] and returns the class
-- probabilities (N x 10) and the predicted classes (N, int64, 1-based).
mf.manual_seed(1)
model = mf.nn.Sequential{
  mf.nn.Flatten(),
  mf.nn.Linear(784, 512), mf.nn.ReLU(),
  mf.nn.Linear(512, 256), mf.nn.ReLU(),
  mf.nn.Linear(256, 10)}
if MODEL_WEIGHTS then model:load(MODEL_WEIGHTS) end
model:evaluate()
local log = host_log or print
log(('%d parameters, %s'):format(model:num_parameters(), MODEL_WEIGHTS or 'untrained'))

function predict(x)
  local probs = mf.softmax(model:forward(x), 2)
  return probs, mf.argmax(probs, 2)
end
