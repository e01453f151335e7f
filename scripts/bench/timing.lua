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

-- The loops that call f, compiled afresh for each per_call_us call, so that each f gets traces of
-- its own (in one shared loop the trace served the first f timed, and later ones ran through its side
-- exits). f's arguments are locals: f(...) is a vararg call, which LuaJIT does not compile (NYI:
-- VARG), so the loop ran in the interpreter, entering f's traces from it, and a figure depended on
-- which callee had got a trace first (eager_ops.lua's narrow read 1.2 or 9 µs from run to run).
local LOOPS = [[
local f, a1, a2, a3, a4, a5, a6, a7, a8 = ...
local function calibrate(clock, target)
  local t0, n = clock(), 0
  repeat f(a1, a2, a3, a4, a5, a6, a7, a8); n = n + 1 until clock() - t0 > target
  return n
end
local function run(n) for _ = 1, n do f(a1, a2, a3, a4, a5, a6, a7, a8) end end
return calibrate, run
]]

-- µs per call of f(...) (at most 8 arguments): warm-up calls (`warmup`, default 3, but none past
-- `target` seconds: a 100 ms call is warm after one), calibration to about target seconds a batch
-- (default 0.02), the median of `batches` (default 7) batches. opts.calls fixes the calls per batch
-- (1 in a smoke run) and skips the calibration. opts.clock replaces mf.clock (wall time): os.clock,
-- the process's CPU time, is steadier for one-thread runs on a busy machine.
function T.per_call_us(f, opts, ...)
  opts = opts or {}
  if select('#', ...) > 8 then error('per_call_us: f takes at most 8 arguments here') end
  local calibrate, run = assert(loadstring(LOOPS, '=timing.lua loops'))(f, ...)
  local clock, n, target = opts.clock or mf.clock, opts.calls, opts.target or 0.02
  local w0 = clock()
  for _ = 1, opts.warmup or 3 do
    f(...)
    if clock() - w0 > target then break end
  end
  if not n then n = calibrate(clock, target) end
  local times = {}
  for k = 1, opts.batches or 7 do
    collectgarbage()
    local t = clock()
    run(n)
    times[k] = (clock() - t) / n * 1e6
  end
  return T.median(times), n
end

return T
