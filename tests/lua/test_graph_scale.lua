-- Deep graphs through the public API: building, differentiating, binding (order, CSE, fusion,
-- memory plan) and running chains tens of thousands of nodes deep touch neither the C stack nor
-- Lua's recursion limit, and give the values worked out by hand.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

T.test('a 40k-node chain binds and runs, fused and not', function()
  mf.reset_default_graph()
  local n = 40000
  local x = mf.placeholder('float64', {2}, 'x')
  local one = mf.constant(mf.tensor({1, 1}, 'float64'))
  local y = x
  for _ = 1, n do y = y + one end
  for _, fuse in ipairs{true, false} do
    local sess = mf.Session{fuse = fuse}
    T.tensor_eq(sess:run(y, {[x] = mf.tensor({0, 0.5}, 'float64')}), {n, n + 0.5})
    T.eq(sess:stats().steps, fuse and math.ceil(n / 24) or n, 'steps with fuse = ' .. tostring(fuse))
  end
end)

T.test('gradients through a 10k-step chain that reads one variable at every step', function()
  mf.reset_default_graph()
  local n = 10000
  local x = mf.placeholder('float64', {}, 'x')
  local W = mf.Variable(mf.tensor(1, 'float64'), 'W')
  local y = x
  for _ = 1, n do y = y * W end
  -- y = x W^n: dy/dW = n x W^(n-1) = n x at W = 1, summed from n contributions
  local gW = mf.gradients(y, {W})[1]
  local step = mf.assign(W, W - 0.5 * gW / n)  -- reads of W in y and gW run before this write
  local sess = mf.Session()
  sess:run(mf.global_variables_initializer())
  local yv, gv = sess:run({y, gW}, {[x] = mf.tensor(3, 'float64')})
  T.eq(yv:item(), 3, 'y')
  T.eq(gv:item(), 3 * n, 'dy/dW')
  local y1, g1 = sess:run({y, gW, step}, {[x] = mf.tensor(2, 'float64')})
  T.eq(y1:item(), 2, 'y is read before the assign in the same run')
  T.eq(g1:item(), 2 * n, 'so is the gradient')
  T.eq(sess:run(W):item(), 1 - 0.5 * 2, 'then W takes the new value')
end)

-- Session.run pauses the collector while it binds (session.lua): nearly all a bind allocates stays
-- live until it ends. A Lua-registered op's shape rule runs during the bind and notes the state.
T.test('binding pauses the collector, and restarts it after a bind, a failed one too; one the program stopped stays stopped', function()
  local seen, fail = nil, false
  mf.register_op{name = 'gc_probe', num_inputs = 1, doc = 'x; notes whether the collector runs when its shape is inferred',
    infer_shape = function(s)
      seen = collectgarbage('isrunning')
      if fail then error('asked to fail') end
      return {s[1]}
    end,
    lua_compute = [[ function(ins, outs, p)
      return function()
        local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
        for i = 0, n - 1 do yp[i] = xp[i] end
      end end ]]}
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {2}, 'x')
  local y = mf.gc_probe(x) * 2
  local feed = {[x] = mf.tensor({1, 2}, 'float64')}
  T.eq(collectgarbage('isrunning'), true, 'the collector runs before')
  seen = nil
  T.tensor_eq(mf.Session():run(y, feed), {2, 4})
  T.eq(seen, false, 'it is paused while the shape rule runs in the bind')
  T.eq(collectgarbage('isrunning'), true, 'and runs again after the bind')
  fail = true
  T.errors(function() return mf.Session():run(y, feed) end, 'gc_probe', 'asked to fail')
  T.eq(collectgarbage('isrunning'), true, 'a failed bind restarts it too')
  fail = false
  collectgarbage('stop')
  T.tensor_eq(mf.Session():run(y, feed), {2, 4})
  local stopped = not collectgarbage('isrunning')
  collectgarbage('restart')
  T.eq(stopped, true, 'a collector the program stopped stays stopped after a bind')
end)

T.finish()
