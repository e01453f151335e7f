-- mf.fit and mf.evaluate run their sessions on the device of the model's parameters (so a model moved
-- with model:cuda() trains on the GPU; examples/*.lua --device cuda rely on it). Without a GPU the
-- plumbing is checked by recording the device each Session is asked for (the sessions themselves
-- run on the CPU): 'cpu' for a CPU model, the parameters' device when it is another (a model whose
-- parameters() reports one), none for a model without parameters; evaluate's cached graph is rebuilt
-- when the model has moved. scripts/gpu/examples.sh runs the real thing on a GPU.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local asked = {}
local real_session = mf.Session
mf.Session = function(opts)
  asked[#asked + 1] = opts.device or 'none'
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.device = nil  -- runs on the CPU whatever was asked
  return real_session(o)
end

mf.manual_seed(5)
local x = mf.randn(24, 4)
local labels = {}
for i = 1, 24 do labels[i] = (i - 1) % 3 + 1 end
local ds = mf.data.TensorDataset(x, mf.tensor(labels, 'int64'))

local crit = mf.nn.CrossEntropyLoss()  -- one criterion: evaluate caches its graph per (model, criterion)
local function train(model, mode)
  asked = {}
  return mf.fit{model = model, loss = crit, optimizer = mf.optim.SGD(model:parameters(), 0.1),
                data = ds:loader{batch = 8}, validate = ds:loader{batch = 12}, quiet = true, mode = mode}
end

T.test('fit and evaluate: sessions on the device of a CPU model', function()
  local m = mf.nn.Sequential{mf.nn.Linear(4, 3)}
  local h = train(m, 'graph')
  T.eq(#h, 1, 'one epoch')
  T.eq(table.concat(asked, ','), 'cpu,cpu', 'the training session, then the evaluation session')
  asked = {}
  mf.evaluate(m, ds:loader{batch = 12}, crit)
  T.eq(#asked, 0, 'evaluate reuses its cached graph and session')
  local h2 = train(m, 'eager')
  T.eq(table.concat(asked, ','), '', 'eager fit makes no session; evaluation reuses its graph')
  T.eq(#h2, 1, 'eager: one epoch')
end)

T.test('fit and evaluate follow the parameters to another device', function()
  local m = mf.nn.Sequential{mf.nn.Linear(4, 3)}
  asked = {}
  mf.evaluate(m, ds:loader{batch = 12}, crit)
  T.eq(table.concat(asked, ','), 'cpu', 'on the CPU first')
  local real = m:parameters()
  -- the parameters now say they are on 'elsewhere' (fit asks only their data's device)
  m.parameters = function() return {{data = {device = function() return 'elsewhere' end}}} end
  asked = {}
  mf.evaluate(m, ds:loader{batch = 12}, crit)
  T.eq(table.concat(asked, ','), 'elsewhere', 'evaluate rebuilds its graph when the model has moved')
  asked = {}
  mf.fit{model = m, loss = crit, optimizer = mf.optim.SGD(real, 0.1), data = ds:loader{batch = 8},
         validate = ds:loader{batch = 12}, quiet = true}
  T.eq(table.concat(asked, ','), 'elsewhere', 'the training session on the device; evaluation reuses its graph')
end)

T.test('fit: a model without parameters asks for no device', function()
  asked = {}
  local r = mf.evaluate(mf.nn.Sequential{mf.nn.Flatten()}, mf.data.TensorDataset(mf.randn(6, 3), mf.tensor({1, 2, 3, 1, 2, 3},
    'int64')):loader{batch = 6})
  T.eq(table.concat(asked, ','), 'none', 'the host session')
  T.eq(r.n, 6, 'six rows evaluated')
end)

mf.Session = real_session
T.finish()
