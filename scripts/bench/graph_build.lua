-- Graph build and bind time against graph size (issue 20, item 7): every graph pass should be
-- linear in nodes plus edges, so 8x the nodes should take about 8x the time (the acceptance bar
-- is 10x). Three shapes of graph, each at several sizes, all scalar (the arithmetic is nothing):
--   chain  y = y + 1, n times: one long path (fusion folds it into fused steps)
--   ladder two interleaved paths, a, b = tanh(a + b), sigmoid(a - b): every value read twice
--   train  y = tanh(y * W), n/4 times, then GradientDescentOptimizer:minimize(y): every step reads
--          the variable W that the update writes (the read-before-assign ordering rule), and
--          autodiff adds the backward chain
-- Per size it prints the wall time of: build (the Lua calls that add the nodes, minimize included),
-- bind (the first sess:run: passes, order, shape inference, fusion, memory plan, kernel factories,
-- plus one run), bind8 (above the smallest size: 8 graphs of an eighth of the nodes, all alive,
-- bound in one loop; see measure_bind8) and, timed alone on the same graph, order (mf_graph_order),
-- cse (mf_graph_cse) and plan (mf_plan_memory on a chain-shaped plan of as many entries); then the
-- ratio of each figure to the one at the size before, which linear passes keep near the ratio of
-- the sizes, and bind / bind8, which linear binding keeps near 1.
-- Each figure is the best of --reps runs (default 3; 1 for sizes above --bind-max), the runs of the
-- sizes interleaved, so that other load on the machine inflates a ratio as little as possible.
-- usage: moonflow scripts/bench/graph_build.lua [--sizes 10000,80000,1000000] [--shapes chain,ladder,train]
--        [--reps 3] [--bind-max N] [--json]
-- --bind-max (default 80000): sizes above it are built and their passes timed, but not bound
-- (binding adds about 1.6 KB per node: some 1.6 GB at 1M nodes, on top of the graph).
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

local opts = {sizes = {10000, 80000, 1000000}, shapes = {'chain', 'ladder', 'train'}, bind_max = 80000, reps = 3,
              json = false}
local i = 1
local function list(s, num)
  local out = {}
  for v in s:gmatch('[^,]+') do out[#out + 1] = num and assert(tonumber(v), 'bad number ' .. v) or v end
  return out
end
while arg[i] do
  local a = arg[i]
  if a == '--sizes' then opts.sizes = list(arg[i + 1], true); i = i + 1
  elseif a == '--shapes' then opts.shapes = list(arg[i + 1]); i = i + 1
  elseif a == '--bind-max' then opts.bind_max = tonumber(arg[i + 1]); i = i + 1
  elseif a == '--reps' then opts.reps = tonumber(arg[i + 1]); i = i + 1
  elseif a == '--json' then opts.json = true
  else error('unknown option ' .. a) end
  i = i + 1
end

-- builders: return the fetch, the feed and the node count aimed at (the graph reports the real one)
local build = {}
function build.chain(n)
  local x = mf.placeholder('float32', {}, 'x')
  local one = mf.constant(mf.tensor(1))
  local y = x
  for _ = 1, n - 2 do y = y + one end
  return y, {[x] = mf.tensor(0)}
end
function build.ladder(n)
  local x = mf.placeholder('float32', {}, 'x')
  local a, b = x, mf.neg(x)
  for _ = 1, math.floor((n - 2) / 4) do a, b = mf.tanh(a + b), mf.sigmoid(a - b) end
  return {a, b}, {[x] = mf.tensor(0.5)}
end
function build.train(n)
  local x = mf.placeholder('float32', {}, 'x')
  local W = mf.Variable(mf.tensor(0.9), 'W')
  local y = x
  for _ = 1, math.floor(n / 8) do y = mf.tanh(y * W) end  -- about 8 nodes per step with the backward pass
  local step = mf.train.GradientDescentOptimizer(0.01):minimize(y)
  return {y, step}, {[x] = mf.tensor(0.5)}, mf.global_variables_initializer()
end

local function clock() return mf.clock() end

-- the passes alone, on the built graph: order of every node, CSE, and a plan of n chained entries
local function passes(g, targets)
  local n = C.mf_graph_size(g.h)
  local tbuf = ffi.new('int32_t[?]', #targets)
  for k, t in ipairs(targets) do tbuf[k - 1] = t end
  local obuf = ffi.new('int32_t[?]', n)
  local t0 = clock()
  assert(C.mf_graph_order(g.h, #targets, tbuf, obuf, n) >= 0, ffi.string(C.mf_last_error()))
  local t_order = clock() - t0
  t0 = clock()
  assert(C.mf_graph_cse(g.h) >= 0, ffi.string(C.mf_last_error()))
  local t_cse = clock() - t0
  local e = ffi.new('mf_plan_entry[?]', n)
  for k = 0, n - 1 do
    e[k].nbytes, e[k].step, e[k].last_use = 256 * (1 + k % 3), k, k + 1
    e[k].alias_of, e[k].inplace_of, e[k].external = -1, k % 2 == 1 and k - 1 or -1, 0
  end
  local slots, sbytes = ffi.new('int32_t[?]', n), ffi.new('int64_t[?]', n)
  local ns, pb, nb, ip = ffi.new('int32_t[1]'), ffi.new('int64_t[1]'), ffi.new('int64_t[1]'), ffi.new('int32_t[1]')
  t0 = clock()
  assert(C.mf_plan_memory(n, e, slots, sbytes, ns, pb, nb, ip) == 0, ffi.string(C.mf_last_error()))
  return t_order, t_cse, clock() - t0
end

local function measure(shape, n)
  mf.reset_default_graph()
  collectgarbage()
  collectgarbage()
  local t0 = clock()
  local fetch, feed, init = build[shape](n)
  local t_build = clock() - t0
  local g = mf.get_default_graph()
  local nodes = C.mf_graph_size(g.h)
  local r = {shape = shape, n = n, nodes = nodes, build = t_build}
  if n <= opts.bind_max then
    local sess = mf.Session()
    if init then sess:run(init) end
    collectgarbage()
    t0 = clock()
    sess:run(fetch, feed)
    r.bind = clock() - t0
    assert(sess:stats().binds == (init and 2 or 1))
    sess:close()
  end
  local targets = {}
  for id = 0, nodes - 1 do targets[#targets + 1] = id end  -- everything: order walks the whole graph
  r.order, r.cse, r.plan = passes(g, targets)
  return r
end

-- The control for bind: 8 graphs of n/8 nodes, built first and all alive, bound one after the
-- other in one timed loop. Same node count and about the same Lua heap as one graph of n nodes, so
-- bind / bind8 near 1 says binding is linear, and a bind ratio above 8 between sizes comes from the
-- heap's size (collector traversals, caches) rather than from the passes.
local function measure_bind8(shape, n)
  local parts = {}
  for k = 1, 8 do
    mf.reset_default_graph()
    local fetch, feed, init = build[shape](math.floor(n / 8))
    parts[k] = {g = mf.get_default_graph(), fetch = fetch, feed = feed, init = init, sess = mf.Session()}
    if init then parts[k].sess:run(init) end
  end
  collectgarbage()
  local t0 = clock()
  for _, p in ipairs(parts) do
    mf._set_default_graph(p.g)
    p.sess:run(p.fetch, p.feed)
  end
  local t = clock() - t0
  for _, p in ipairs(parts) do p.sess:close() end
  mf.reset_default_graph()
  return t
end

local FIELDS = {'build', 'bind', 'bind8', 'order', 'cse', 'plan'}
for _, shape in ipairs(opts.shapes) do
  assert(build[shape], 'unknown shape ' .. shape)
  local best = {}
  for rep = 1, opts.reps do
    for _, n in ipairs(opts.sizes) do
      if rep == 1 or n <= opts.bind_max then
        local r = measure(shape, n)
        if n <= opts.bind_max and n > opts.sizes[1] then r.bind8 = measure_bind8(shape, n) end
        local b = best[n]
        if not b then best[n] = r
        else for _, f in ipairs(FIELDS) do if r[f] then b[f] = math.min(b[f], r[f]) end end end
      end
    end
  end
  local prev
  for _, n in ipairs(opts.sizes) do
    local r = best[n]
    if opts.json then
      local parts = {('"bench":"graph_build","shape":"%s","n":%d,"nodes":%d'):format(shape, n, r.nodes)}
      for _, f in ipairs(FIELDS) do if r[f] then parts[#parts + 1] = ('"%s_ms":%.3f'):format(f, r[f] * 1e3) end end
      print('{' .. table.concat(parts, ',') .. '}')
    else
      local line = {('%-6s %8d nodes'):format(shape, r.nodes)}
      for _, f in ipairs(FIELDS) do
        line[#line + 1] = r[f] and ('%s %9.1f ms'):format(f, r[f] * 1e3) or ('%s %9s   '):format(f, '-')
      end
      print(table.concat(line, '  '))
      if prev then
        local x = r.nodes / prev.nodes
        local rl = {('  %.1fx the nodes:'):format(x)}
        for _, f in ipairs(FIELDS) do
          if r[f] and prev[f] then rl[#rl + 1] = ('%s %.1fx'):format(f, r[f] / prev[f]) end
        end
        if r.bind8 then rl[#rl + 1] = ('| bind / bind8 %.2f'):format(r.bind / r.bind8) end
        print(table.concat(rl, '  '))
      end
    end
    prev = r
  end
end
