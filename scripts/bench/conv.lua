-- Convolution and pooling against PyTorch (oneDNN), interleaved in one run (issue 12 item 6): the
-- forward conv and its two backward routines timed separately at the LeNet shapes (bench workload
-- f: 64x1x28x28 by 32x1x5x5, 64x32x12x12 by 64x32x5x5) and a ResNet-style 3x3 layer (32x64x56x56
-- by 64x64x3x3, padding 1), and the pooling routines on the maps those layers give.
--
-- usage: moonflow scripts/bench/conv.lua [--rounds 5] [--threads 1,2] [--only PATTERN] [--batches 3]
--          [--target 0.03] [--clock wall|cpu] [--no-torch]
--   --rounds N     rounds over every case (default 5); in each, moonflow and PyTorch time the case
--                  back to back, the side going first alternating by round
--   --threads L    thread counts to run at, comma-separated (default 1,2); both sides use the same
--   --only P       only cases whose name matches the Lua pattern P (e.g. 'resnet', 'bwd_w', 'pool')
--   --batches N    timed batches per case and round (timing.lua's per_call_us; their median)
--   --target S     seconds per batch (default 0.03)
--   --clock C      wall (default) or cpu: the process's CPU time on both sides, steadier than wall
--                  time at 1 thread on a busy machine (meaningless at 2: idle threads spin)
-- Prints per case the min and median over rounds of each side's µs per call, and mf/pt of both.
-- The PyTorch twin (conv_torch.py) runs with LD_LIBRARY_PATH on the OpenMP OpenBLAS (PYTHON
-- overrides /usr/bin/python3).
local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]') or '.'
local T = dofile(here .. '/timing.lua')

local opts = {rounds = 5, threads = '1,2', only = nil, batches = 3, target = 0.03, clock = 'wall', ['no-torch'] = false}
do
  local i = 1
  while arg[i] do
    local k = arg[i]:match('^%-%-(.+)$')
    if k == 'no-torch' then opts[k] = true
    elseif k and opts[k] ~= nil or k == 'only' then opts[k] = tonumber(arg[i + 1]) or arg[i + 1]; i = i + 1
    else error('conv.lua: unknown argument ' .. tostring(arg[i])) end
    i = i + 1
  end
end

-- cases -------------------------------------------------------------------------------------------
local LAYERS = {
  {name = 'lenet1', x = {64, 1, 28, 28}, w = {32, 1, 5, 5}, stride = {1, 1}, padding = {0, 0}},
  {name = 'lenet2', x = {64, 32, 12, 12}, w = {64, 32, 5, 5}, stride = {1, 1}, padding = {0, 0}},
  {name = 'resnet', x = {32, 64, 56, 56}, w = {64, 64, 3, 3}, stride = {1, 1}, padding = {1, 1}},
}
local POOLS = {  -- the maps the layers above give (LeNet pools 24x24 and 8x8 maps)
  {name = 'lenet1', x = {64, 32, 24, 24}},
  {name = 'lenet2', x = {64, 64, 8, 8}},
  {name = 'resnet', x = {32, 64, 56, 56}},
}

local cases = {}
for _, l in ipairs(LAYERS) do
  local geo = {l.stride, l.padding, {1, 1}}
  local function spec(op)
    return {op = op, x = l.x, w = l.w, stride = l.stride, padding = l.padding, dilation = {1, 1}}
  end
  cases[#cases + 1] = {name = l.name .. ' fwd', pt = spec('conv2d'), setup = function()
    local x, w = mf.randn(unpack(l.x)), mf.randn(unpack(l.w))
    return function() return mf.conv2d(x, w, unpack(geo)) end
  end}
  cases[#cases + 1] = {name = l.name .. ' bwd_in', pt = spec('conv2d_backward_input'), setup = function()
    local x, w = mf.randn(unpack(l.x)), mf.randn(unpack(l.w))
    local gy = mf.randn_like(mf.conv2d(x, w, unpack(geo)))
    return function() return mf.conv2d_backward_input(gy, w, x, unpack(geo)) end
  end}
  cases[#cases + 1] = {name = l.name .. ' bwd_w', pt = spec('conv2d_backward_weight'), setup = function()
    local x, w = mf.randn(unpack(l.x)), mf.randn(unpack(l.w))
    local gy = mf.randn_like(mf.conv2d(x, w, unpack(geo)))
    return function() return mf.conv2d_backward_weight(gy, x, w, unpack(geo)) end
  end}
end
for _, p in ipairs(POOLS) do
  local function add(op, setup, extra)
    local s = {op = op, x = p.x}
    for k, v in pairs(extra or {}) do s[k] = v end
    cases[#cases + 1] = {name = p.name .. ' ' .. op, pt = s, setup = setup}
  end
  local function x() return mf.randn(unpack(p.x)) end
  add('max_pool2d', function() local a = x() return function() return mf.max_pool2d(a, 2) end end)
  add('max_pool2d_backward', function()
    local a = x()
    local gy = mf.randn_like(mf.max_pool2d(a, 2))
    return function() return mf.max_pool2d_backward(gy, a, 2) end
  end)
  add('avg_pool2d', function() local a = x() return function() return mf.avg_pool2d(a, 2) end end)
  add('avg_pool2d_backward', function()
    local a = x()
    local gy = mf.randn_like(mf.avg_pool2d(a, 2))
    return function() return mf.avg_pool2d_backward(gy, a, 2) end
  end)
  add('adaptive_avg_pool2d', function() local a = x() return function() return mf.adaptive_avg_pool2d(a, 1) end end,
    {out = 1})
  add('adaptive_avg_pool2d_backward', function()
    local a = x()
    local gy = mf.randn_like(mf.adaptive_avg_pool2d(a, 1))
    return function() return mf.adaptive_avg_pool2d_backward(gy, a, 1) end
  end, {out = 1})
end

-- the PyTorch co-process (scripts/bench/torch_twin.lua); an answer with .error stops the run
local Twin = dofile(here .. '/torch_twin.lua')
local Torch = {start = function()
  local t = Twin.start{script = here .. '/conv_torch.py', who = 'conv.lua'}
  local call = t.call
  function t:call(req)
    local ans = call(self, req)
    if ans.error then error('conv.lua: PyTorch: ' .. ans.error, 0) end
    return ans
  end
  return t
end}

-- the run -------------------------------------------------------------------------------------------
local torch = not opts['no-torch'] and Torch.start() or nil
local cpu = opts.clock == 'cpu'
local tim = {batches = opts.batches, target = opts.target, clock = cpu and os.clock or nil}
local function fmt(us) return us and (us >= 1e4 and ('%9.0f'):format(us) or ('%9.1f'):format(us)) or '        -' end
local function ratio(a, b) return (a and b) and ('%6.2f'):format(a / b) or '     -' end
local function min(t) local m = math.huge for _, v in ipairs(t) do m = math.min(m, v) end return m end

print(('conv.lua: moonflow vs PyTorch %s, %d rounds, per-call µs of %s time (min / median over rounds)')
  :format(torch and torch.version or '(none)', opts.rounds, cpu and 'CPU' or 'wall'))
for th in tostring(opts.threads):gmatch('%d+') do
  local n = tonumber(th)
  mf.set_num_threads(n)
  if torch then torch:call{cmd = 'threads', n = n} end
  print(('\n-- %d thread%s'):format(n, n > 1 and 's' or ''))
  print(('%-36s %9s %9s %9s %9s %6s %6s'):format('case', 'mf min', 'mf med', 'pt min', 'pt med', 'min', 'med'))
  local logs = {}
  for _, c in ipairs(cases) do
    if not opts.only or c.name:match(opts.only) then
      local f = c.setup()
      local mt, pt = {}, {}
      for r = 1, opts.rounds do
        local function side_mf() mt[#mt + 1] = T.per_call_us(f, tim) end
        local function side_pt()
          if not torch then return end
          pt[#pt + 1] = torch:call{cmd = 'time', case = c.pt, batches = opts.batches, target = opts.target, cpu = cpu}.us
        end
        if r % 2 == 1 then side_mf(); side_pt() else side_pt(); side_mf() end
      end
      local mmin, mmed = min(mt), T.median(mt)
      local pmin, pmed = #pt > 0 and min(pt) or nil, #pt > 0 and T.median(pt) or nil
      if pmed then logs[#logs + 1] = math.log(mmed / pmed) end
      print(('%-36s %s %s %s %s %s %s'):format(c.name, fmt(mmin), fmt(mmed), fmt(pmin), fmt(pmed), ratio(mmin, pmin),
        ratio(mmed, pmed)))
      io.stdout:flush()
      f = nil
      collectgarbage()
    end
  end
  if #logs > 0 then
    local s = 0
    for _, v in ipairs(logs) do s = s + v end
    print(('geomean mf/pt (medians) over %d cases: %.2f'):format(#logs, math.exp(s / #logs)))
  end
end
if torch then torch:close() end
