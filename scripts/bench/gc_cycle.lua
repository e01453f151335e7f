-- The Lua heap moonflow leaves after loading, and what one collector cycle over it costs: the
-- collector marks and sweeps the whole heap in every cycle, and an eager program runs one cycle per
-- allowance of fresh results (tensor.lua), so this is a cost every eager program pays. Ops are
-- installed on first use (ops.lua); --all-ops installs every op first, as loading did before.
-- usage: MF_NUM_THREADS=1 moonflow scripts/bench/gc_cycle.lua [--all-ops] [--cycles 2000]
local opts = {cycles = 2000}
local i = 1
while arg[i] do
  if arg[i] == '--all-ops' then opts.all = true
  elseif arg[i] == '--cycles' then opts.cycles = tonumber(arg[i + 1]); i = i + 1
  else error('gc_cycle.lua: unknown argument ' .. arg[i]) end
  i = i + 1
end
if opts.all then mf._load_all_ops() end
local installed = 0
for _ in pairs(mf._ops) do installed = installed + 1 end
collectgarbage(); collectgarbage()
local heap = collectgarbage('count')
local t = os.clock()  -- the process's CPU time: steadier than wall time on a busy machine
for _ = 1, opts.cycles do collectgarbage() end
print(('ops installed %d of %d; Lua heap %.0f KB; a full collector cycle %.1f us (CPU time, mean of %d)')
  :format(installed, #mf.list_ops(), heap, (os.clock() - t) / opts.cycles * 1e6, opts.cycles))
