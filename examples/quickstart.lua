-- A tour of moonflow's eager API: tensors, broadcasting, reductions, views, a custom operator
-- written in Lua, and a least-squares fit by hand-written gradient descent.
-- usage: moonflow examples/quickstart.lua [--smoke]
local smoke = arg and arg[1] == '--smoke'
mf.manual_seed(42)

-- tensors follow Torch7: 1-based indices and dims, float32 by default
local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
print('a =') print(a)
print(('a:size(2) = %d, a[2][3] = %g, a:sum() = %g'):format(a:size(2), a[2][3], a:sum():item()))
print('row sums, keepdim:') print(a:sum(2, true))
print('a + bias (broadcast over rows):') print(a + mf.tensor{10, 20, 30})
print('softmax over dim 2:') print(mf.softmax(a, 2))

-- views share storage: writing through a narrow changes a
local col = a:narrow(2, 2, 1)
col:set(1, 1, 0)
print('after zeroing a[1][2] through a view:') print(a)

-- a custom op in plain Lua, compiled by LuaJIT; it joins the registry like a built-in one
mf.register_op{
  name = 'swish', num_inputs = 1, doc = 'x * sigmoid(x), elementwise (float32 input)',
  infer_shape = 'same',
  lua_compute = [[ function(ins, outs, p)
    local x, y, n = ins[1], outs[1], ins[1]:numel()
    return function()
      local xp, yp = x:data(), y:data()          -- raw float* via the FFI, read per run
      for i = 0, n - 1 do local v = xp[i]; yp[i] = v / (1 + math.exp(-v)) end
    end
  end ]]}
print('swish(a):') print(a:float():swish())

-- least squares by gradient descent: recover w_true from noisy y = X w_true
local n, d = 512, 4
local X = mf.randn(n, d)
local w_true = mf.tensor{{2}, {-3}, {0.5}, {1}}
local y = mf.matmul(X, w_true) + mf.randn(n, 1, {std = 0.01})
local w = mf.zeros(d, 1)
local lr = 0.1
local first, loss
for step = 1, smoke and 20 or 200 do
  local r = mf.matmul(X, w) - y                        -- residuals, n x 1
  local grad = mf.matmul(X, r, true, false) * (2 / n)  -- X^T r, without materialising X^T
  w = w - lr * grad
  loss = (r * r):mean():item()
  first = first or loss
  if step % 50 == 0 then print(('step %3d  loss %.6f'):format(step, loss)) end
end
-- it learns, in the smoke run too: the last step's loss far below the first's
if not (loss < 0.1 * first) then error(('quickstart: loss %.6f is not well below the first %.4f'):format(loss, first)) end
print('recovered w (want 2, -3, 0.5, 1):') print(w:t())
local err = (w - w_true):abs():max():item()
print(('max |w - w_true| = %.4f'):format(err))
if not smoke and err > 0.01 then error('quickstart: the fit did not converge') end
