-- Graph executor overhead: a chain of 1,000 scalar adds run through a session. Each node's kernel
-- touches one float, so the time per node is the executor's overhead (closure call, FFI call,
-- kernel dispatch) rather than arithmetic. Also reports the whole run and the bind cost.
-- usage: moonflow scripts/bench/executor_overhead.lua [--nodes 1000] [--reps 5] [--json]
local opts = {nodes = 1000, reps = 5, json = false}
local i = 1
while arg[i] do
  if arg[i] == '--nodes' then opts.nodes = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == '--reps' then opts.reps = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == '--json' then opts.json = true end
  i = i + 1
end

local x = mf.placeholder('float32', {}, 'x')
local one = mf.constant(mf.tensor(1))
local y = x
for _ = 1, opts.nodes do y = y + one end
local sess = mf.Session{fuse = false}  -- per-node dispatch: fusion would fold the chain
local feed = {[x] = mf.tensor(0)}
local t0 = mf.clock()
local first = sess:run(y, feed):item()
local bind_ms = (mf.clock() - t0) * 1e3
assert(first == opts.nodes, 'chain result ' .. first)

local runs = 2000
for _ = 1, 200 do sess:run(y, feed) end  -- warm
local per_node = {}
for r = 1, opts.reps do
  collectgarbage()
  local t = mf.clock()
  for _ = 1, runs do sess:run(y, feed) end
  per_node[r] = (mf.clock() - t) / runs / opts.nodes * 1e6
end
table.sort(per_node)
local med = per_node[math.floor((#per_node + 1) / 2)]
local st = sess:stats()
assert(st.binds == 1, 'the chain must bind once')
if opts.json then
  print(('{"bench":"executor_overhead","nodes":%d,"us_per_node":%.4f,"spread":%.4f,"bind_ms":%.2f}')
    :format(opts.nodes, med, per_node[#per_node] - per_node[1], bind_ms))
else
  print(('chain of %d scalar adds: %.4f us per node (median of %d x %d runs, spread %.4f)')
    :format(opts.nodes, med, opts.reps, runs, per_node[#per_node] - per_node[1]))
  print(('one run: %.1f us; first run with bind: %.1f ms; binds %d, cache hits %d'):format(med * opts.nodes,
    bind_ms, st.binds, st.cache_hits))
end
