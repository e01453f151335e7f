-- Timing helpers shared by the per-op benches (eager_ops.lua, ops.lua): a median, and the cost of
-- one call of f measured the way eager_ops.lua always has: calls per batch chosen so a batch takes
-- about `target` seconds, then `batches` timed batches with a collection before each, the median.
-- ops_torch.py repeats the same recipe on the PyTorch side. Load with dofile(dir .. '/timing.lua').
local T = {}

-- the median of a list of numbers (the lower middle one for an even count); sorts t
function T.median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

-- µs per call of f(...): warm-up calls (`warmup`, default 3, but none past `target` seconds: a
-- 100 ms call is warm after one), calibration to about target seconds a batch (default 0.02), the
-- median of `batches` (default 7) batches. opts.calls fixes the calls per batch (1 in a smoke run)
-- and skips the calibration. opts.clock replaces mf.clock (wall time): os.clock, the process's CPU
-- time, is steadier for one-thread runs on a busy machine.
function T.per_call_us(f, opts, ...)
  opts = opts or {}
  local clock, n, target = opts.clock or mf.clock, opts.calls, opts.target or 0.02
  local w0 = clock()
  for _ = 1, opts.warmup or 3 do
    f(...)
    if clock() - w0 > target then break end
  end
  if not n then
    local t0 = clock()
    n = 0
    repeat f(...); n = n + 1 until clock() - t0 > target
  end
  local times = {}
  for k = 1, opts.batches or 7 do
    collectgarbage()
    local t = clock()
    for _ = 1, n do f(...) end
    times[k] = (clock() - t) / n * 1e6
  end
  return T.median(times), n
end

return T
