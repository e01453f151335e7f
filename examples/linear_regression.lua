-- Linear regression, as in the TensorFlow whitepaper: learn y = W x + b from noisy samples with
-- SGD and recover the known W and b.
-- usage: moonflow examples/linear_regression.lua [--smoke]
local smoke = arg[1] == '--smoke'
mf.manual_seed(7)

local W_true = mf.tensor{{2.0, -3.4, 0.5}}
local b_true = 4.2
local n = 1024
local X = mf.randn(n, 3)
local Y = mf.matmul(X, W_true, false, true) + b_true + mf.randn(n, 1, {std = 0.01})

local model = mf.nn.Linear(3, 1)
local losses = {}
local history = mf.fit{
  model = model, loss = mf.nn.MSELoss(),
  optimizer = mf.optim.SGD(model:parameters(), {lr = 0.05}),
  data = mf.data.TensorDataset(X, Y):loader{batch = 32, shuffle = true, seed = 1},
  epochs = smoke and 2 or 10, quiet = smoke, on_step = function(_, l) losses[#losses + 1] = l end}

local W, b = model.weight.data, model.bias.data:item()
print(('learned W = %s  b = %.4f   (true W = 2.0 -3.4 0.5, b = 4.2)'):format(
  table.concat({('%.4f'):format(W:get(1, 1)), ('%.4f'):format(W:get(1, 2)), ('%.4f'):format(W:get(1, 3))}, ' '), b))
local err = math.max((W - W_true):abs():max():item(), math.abs(b - b_true))
print(('final loss %.6f, max parameter error %.4f'):format(history[#history].loss, err))
if err > (smoke and 0.5 or 0.01) then error('linear_regression: did not recover W and b') end
-- it learns: the last epoch's loss far below the first step's (noise variance 1e-4 is the floor)
if not (history[#history].loss < 0.01 * losses[1]) then
  error(('linear_regression: loss %.6f after %d steps is not well below the first %.4f'):format(
    history[#history].loss, #losses, losses[1]))
end
