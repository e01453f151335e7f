-- nn modules, losses and optimizers against PyTorch's numbers, recorded by scripts/golden/record.py
-- into tests/golden/*.lua from inputs that the same script drew (both sides start from the same
-- float32 bits). Outputs compared eagerly and through a session; gradients through mf.gradients of
-- L = sum(y * R); batch-norm running statistics after a training forward; optimizers over several
-- steps, eagerly from given gradients and in a graph by opt:minimize.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local golden_dir = arg[0]:match('(.*/)') .. '../golden/'
local nn_cases = dofile(golden_dir .. 'nn.lua')
local loss_cases = dofile(golden_dir .. 'losses.lua')
local optim_cases = dofile(golden_dir .. 'optim.lua')

-- a recorded {shape, dtype, data} as a tensor
local function load(spec)
  local t = mf.tensor(spec.data, spec.dtype)
  if #spec.shape == 0 then return t:reshape({}) end
  return t:reshape(spec.shape)
end

-- float32 arithmetic on both sides, summed in different orders: |got - want| <= tol * max(1, |want|)
local function close(got, spec, tol, what)
  local shape = table.concat(spec.shape, 'x')
  local have = table.concat(got:size(), 'x')
  if have ~= shape then error(('%s: shape %s, PyTorch %s'):format(what, have, shape), 2) end
  local flat = got:double():reshape(math.max(got:numel(), 1)):totable()
  local worst, at = 0, nil
  for i, w in ipairs(spec.data) do
    local g = flat[i]
    local err = math.abs(g - w) / math.max(1, math.abs(w))
    if not (err <= tol) then
      if g ~= g or err > worst then worst, at = (g ~= g) and 1 / 0 or err, i end
    end
  end
  if at then
    error(('%s: element %d is %.9g, PyTorch %.9g (relative error %.3g > %g)'):format(what, at, flat[at],
      spec.data[at], worst, tol), 2)
  end
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

local function unpack_args(args) return (table.unpack or unpack)(args) end

-- modules ------------------------------------------------------------------------------------------
local function build_module(name, c)
  local cls = mf.nn[c.module]
  if not cls then error(('%s: mf.nn.%s does not exist'):format(name, c.module)) end
  local args = {}
  for i, a in ipairs(c.args or {}) do args[i] = a end
  if c.opts then args[#args + 1] = c.opts end
  local m = cls(unpack_args(args))
  local sd = {}
  for k, spec in pairs(c.params or {}) do sd[k] = load(spec) end
  for k, spec in pairs(c.buffers_before or {}) do sd[k] = load(spec) end
  m:load_state_dict(sd)
  if c.training == false then m:evaluate() end
  return m
end

-- a tolerance per case: sums over many float32 terms (convolutions, batch statistics) drift more
local function tol_of(name)
  if name:match('^conv') or name:match('^batchnorm') then return 1e-4 end
  return 2e-5
end

for _, name in ipairs(sorted_keys(nn_cases)) do
  local c = nn_cases[name]
  T.test('golden nn: ' .. name, function()
    local tol = tol_of(name)
    local x = load(c.x)
    -- eager
    local m = build_module(name, c)
    close(m(x), c.y, tol, name .. ' eager output')
    if c.buffers_after then
      local sd = m:state_dict()
      for _, k in ipairs(sorted_keys(c.buffers_after)) do
        close(sd[k], c.buffers_after[k], tol, name .. ' ' .. k .. ' after a forward')
      end
    end
    -- graph: output and gradients of L = sum(y * R)
    mf.reset_default_graph()
    m = build_module(name, c)
    local xs = mf.placeholder(x:dtype(), x:size(), 'x')
    local ys = m(xs)
    local loss = mf.sum(ys * mf.constant(load(c.r)))
    local wrt, what = {}, {}
    if c.gx then wrt[1], what[1] = xs, c.gx end
    local pnames = sorted_keys(c.grads or {})
    for _, k in ipairs(pnames) do
      wrt[#wrt + 1], what[#what + 1] = m:value(k, xs), c.grads[k]
    end
    local fetch = {ys}
    if #wrt > 0 then
      local gs = mf.gradients(loss, wrt)
      for i = 1, #wrt do
        if gs[i] == nil then error(('%s: no gradient reaches input %d'):format(name, i)) end
        fetch[#fetch + 1] = gs[i]
      end
    end
    local got = {mf.Session():run(fetch, {[xs] = x})}
    close(got[1], c.y, tol, name .. ' graph output')
    local labels = {}
    if c.gx then labels[1] = 'd/dx' end
    for _, k in ipairs(pnames) do labels[#labels + 1] = 'd/d' .. k end
    for i = 1, #what do close(got[i + 1], what[i], tol, name .. ' ' .. labels[i]) end
  end)
end

-- losses -----------------------------------------------------------------------------------------
for _, name in ipairs(sorted_keys(loss_cases)) do
  local c = loss_cases[name]
  T.test('golden loss: ' .. name, function()
    local cls = mf.nn[c.module]
    if not cls then error(('mf.nn.%s does not exist'):format(c.module)) end
    local crit = cls{reduction = c.reduction}
    local x, target = load(c.x), load(c.target)
    close(crit(x, target), c.y, 2e-5, name .. ' eager value')
    mf.reset_default_graph()
    local xs = mf.placeholder(x:dtype(), x:size(), 'x')
    local ls = crit(xs, mf.constant(target))
    local total = c.r and mf.sum(ls * mf.constant(load(c.r))) or ls
    local g = mf.gradients(total, {xs})[1]
    local v, gx = mf.Session():run({ls, g}, {[xs] = x})
    close(v, c.y, 2e-5, name .. ' graph value')
    close(gx, c.gx, 2e-5, name .. ' d/dx')
  end)
end

-- optimizers -------------------------------------------------------------------------------------
local function optim_case(name, c)
  if c.w0 then  -- eager: the recorded gradients, one step each
    local p = mf.nn.Parameter(load(c.w0))
    local opt = mf.optim[c.optimizer]({p}, c.opts)
    for k = 1, #c.grads do
      p.grad = load(c.grads[k])
      opt:step()
      close(p.data, c.after[k], 1e-5, ('%s step %d'):format(name, k))
    end
  else  -- graph: least squares on a Linear(4, 2) trained by opt:minimize
    mf.reset_default_graph()
    local m = mf.nn.Linear(4, 2)
    m:load_state_dict{weight = load(c.weight0), bias = load(c.bias0)}
    local x, t = load(c.x), load(c.t)
    local xs, ts = mf.placeholder('float32', x:size(), 'x'), mf.placeholder('float32', t:size(), 't')
    local loss = mf.mean(mf.square(m(xs) - ts))
    local opt = mf.optim[c.optimizer](m:parameters(), c.opts)
    local train = opt:minimize(loss)
    local s = mf.Session()
    for k = 1, #c.weights do
      local _, l = s:run({train, loss}, {[xs] = x, [ts] = t})
      T.near(l:item(), c.losses[k], 1e-5, ('%s loss at step %d'):format(name, k))
      close(m.weight.data, c.weights[k], 1e-5, ('%s weight after step %d'):format(name, k))
      close(m.bias.data, c.biases[k], 1e-5, ('%s bias after step %d'):format(name, k))
    end
  end
end

for _, name in ipairs(sorted_keys(optim_cases)) do
  local c = optim_cases[name]
  T.test('golden optim: ' .. name, function() optim_case(name, c) end)
end

T.finish()
