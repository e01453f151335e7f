-- A program that stops Lua's collector keeps it stopped: the eager GC nudge (tensor.lua), which
-- finishes a collector cycle by collectgarbage('step', 0) once 64 MiB of tensors were allocated,
-- restarted it (in LuaJIT a 'step' resets the threshold that 'stop' set), so collectgarbage('stop')
-- before a timing-critical loop, or Session.run's own pause while it binds, lasted only until the
-- next 64 MiB of eager results.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

T.test('eager allocations past the allowance leave a stopped collector stopped', function()
  collectgarbage('collect')
  local live = mf.memory_stats().in_use
  collectgarbage('stop')
  for _ = 1, 12 do local t = mf.empty(1024, 1024, 4) end  -- 12 x 16 MiB, dropped at once
  local running = collectgarbage('isrunning')
  local held = mf.memory_stats().in_use - live
  collectgarbage('restart')
  T.eq(running, false, 'collector running after 192 MiB of eager results with it stopped')
  -- nothing collected while stopped: every dropped result still holds its block
  T.eq(held >= 12 * 16 * 2 ^ 20, true, ('bytes held while stopped (%d)'):format(held))
  collectgarbage('collect')
  collectgarbage('collect')
  T.eq(mf.memory_stats().in_use - live < 16 * 2 ^ 20, true, 'blocks freed once restarted and collected')
end)

T.test('the nudge still collects with the collector running', function()
  collectgarbage('collect')
  local live = mf.memory_stats().in_use
  local peak = 0
  for _ = 1, 12 do
    local t = mf.empty(1024, 1024, 4)
    peak = math.max(peak, mf.memory_stats().in_use - live)
  end
  T.eq(collectgarbage('isrunning'), true, 'collector running')
  T.eq(peak <= 96 * 2 ^ 20, true, ('garbage peak %d bytes, want at most the 64 MiB allowance and a block or two'):format(peak))
end)

T.test('a stopped collector stays stopped through a Session bind that allocates past the allowance', function()
  mf.reset_default_graph()
  local xs = mf.placeholder('float32', {1024, 1024}, 'x')
  local fetches = {}
  for i = 1, 6 do fetches[i] = xs * i end  -- 6 fetched results of 4 MiB each, fresh per run
  local x = mf.ones(1024, 1024)
  collectgarbage('stop')
  local s = mf.Session()
  for _ = 1, 4 do s:run(fetches, {[xs] = x}) end  -- 96 MiB of results with the collector stopped
  local running = collectgarbage('isrunning')
  collectgarbage('restart')
  T.eq(running, false, 'collector running after Session runs with it stopped')
end)

-- The allowance grows with the Lua heap (16x it) but not past 1 GiB: a program holding 100 MB of Lua
-- tables was allowed 1.6 GB of dead tensors between cycles (16x a 570 MB heap: 9 GB, an OOM).
T.test('the garbage allowed stops at 1 GiB however large the Lua heap', function()
  local big = {}
  for i = 1, 1100000 do big[i] = {i} end  -- about 100 MB of Lua heap
  local a = mf.randn(1024, 1024)  -- 4 MiB
  collectgarbage(); collectgarbage()
  local heap, live = collectgarbage('count') * 1024, mf.memory_stats().in_use
  assert(16 * heap > 1.3 * 2 ^ 30, ('expected a Lua heap over 87 MB, have %.1f MB'):format(heap / 2 ^ 20))
  local peak = 0
  for _ = 1, 340 do  -- 1.33 GiB of 4 MiB results
    local _ = a:neg()
    peak = math.max(peak, mf.memory_stats().in_use)
  end
  local garbage = peak - live
  big = nil
  collectgarbage(); collectgarbage()
  assert(garbage > 512 * 2 ^ 20, ('garbage peaked at %.1f MiB: the allowance did not grow with the heap'):format(garbage / 2 ^ 20))
  assert(garbage <= 2 ^ 30 + 2 ^ 23, ('garbage peaked at %.1f MiB, past the 1 GiB cap'):format(garbage / 2 ^ 20))
end)

T.finish()
