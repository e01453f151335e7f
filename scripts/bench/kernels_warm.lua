-- Copy-like ops and reductions three ways (issue 12): fresh (the eager op, its result in new
-- memory), warm (the op's own native routine through mf.kernels, into an output allocated once)
-- and the copy limit (memcpy of as many bytes as the op moves, between two warm buffers). fresh/warm
-- is what the result's new memory and the eager call cost; warm/limit is the kernel's own distance
-- from the copy speed. Float32, 128 x 128 (small, 64 KB, cache-resident) and 2048 x 2048 (large, 16 MB).
--
-- usage: moonflow scripts/bench/kernels_warm.lua [--sizes small,large] [--only PATTERN] [--cpu]
--   --only P  cases whose name matches the Lua pattern P
--   --cpu     time the process's CPU time (os.clock) instead of wall time: steadier on a busy
--             machine at MF_NUM_THREADS=1; with more threads it adds up every thread's time
-- Run with MF_NUM_THREADS=1 for kernel-only figures, 2 for the threaded ones (on an idle machine).
local ffi = require 'ffi'
local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]') or '.'
local T = dofile(here .. '/timing.lua')
pcall(ffi.cdef, 'void *memcpy(void *dst, const void *src, size_t n);')
local K = mf.kernels

local opts = {sizes = 'small,large'}
do
  local argv, i = arg or {}, 1
  while argv[i] do
    local a = argv[i]
    if a == '--cpu' then opts.cpu = true
    elseif a == '--only' or a == '--sizes' then
      opts[a:sub(3)] = argv[i + 1] or error('kernels_warm.lua: ' .. a .. ' needs a value')
      i = i + 1
    else error('kernels_warm.lua: unknown argument ' .. a .. ' (see the usage at the top of the file)') end
    i = i + 1
  end
end
local tim = {clock = opts.cpu and os.clock or mf.clock, batches = 5}
local function us(f) return (T.per_call_us(f, tim)) end

-- one case: name, fresh and warm functions, bytes moved (inputs read + outputs written once)
local function cases(r)
  local n = r * r
  local a, b = mf.randn(r, r), mf.randn(r, r)
  local y, y2, yt = mf.empty(r, r), mf.empty(2 * r, r), mf.empty(r, 2 * r)
  local y64 = mf.empty({r, r}, {dtype = 'float64'})
  local list = K.tensor_list({a, b})
  local shift = ffi.new('int64_t[2]', 0, 3)
  local yl = mf.empty(n)
  local col, row, one = mf.empty(r), mf.empty(r), mf.empty({})
  local tv, ti = mf.empty(r, 8), mf.empty({r, 8}, {dtype = 'int64'})
  local va, vb = mf.randn(r), mf.randn(r)
  local va2, vb2 = K.header_as(va, {r, 1}, {1, 1}), K.header_as(vb, {1, r}, {r, 1})
  -- the warm outputs written once first, as an out= tensor is: a storage's first write from 16 MiB
  -- takes streaming stores (copy.h's stream_into: fresh memory is cold), later ones plain stores
  for _, t in ipairs{y, y2, yt, y64, yl, col, row, tv} do t:fill(0) end
  local c = {}
  local function add(name, fresh, warm, bytes) c[#c + 1] = {name, fresh, warm, bytes} end
  for _, op in ipairs{'abs', 'floor', 'ceil', 'round'} do
    local code = K.U[op]
    add(op, function() return mf[op](a) end, function() K.unary(code, y, a, 0, 0) end, 8 * n)
  end
  add('cast f32->f64', function() return a:cast('float64') end, function() K.copy(y64, a) end, 12 * n)
  add('concat', function() return mf.concat({a, b}, 1) end, function() K.concat(y2, 2, list, 0) end, 16 * n)
  add('concat_dim2', function() return mf.concat({a, b}, 2) end, function() K.concat(yt, 2, list, 1) end, 16 * n)
  add('repeat', function() return mf['repeat'](a, {2, 1}) end, function() K.periodic_copy(y2, a, nil, 0) end, 12 * n)
  add('roll', function() return a:roll(3, 2) end, function() K.periodic_copy(y, a, shift, 0) end, 8 * n)
  add('flip', function() return a:flip({2}) end, function() K.periodic_copy(y, a, nil, 2) end, 8 * n)
  add('eye', function() return mf.eye(r) end, function() K.eye(y) end, 4 * n)
  add('linspace', function() return mf.linspace(0, 1, n) end, function() K.linspace(yl, 0, 1, 0) end, 4 * n)
  add('outer', function() return mf.outer(va, vb) end, function() K.binary(K.B.mul, y, va2, vb2) end, 4 * n)
  add('sum', function() return a:sum() end, function() K.reduce(K.R.sum, one, a, 3) end, 4 * n)
  add('sum_dim2', function() return a:sum(2) end, function() K.reduce(K.R.sum, col, a, 2) end, 4 * n)
  add('sum_dim1', function() return a:sum(1) end, function() K.reduce(K.R.sum, row, a, 1) end, 4 * n)
  add('mean_dim2', function() return a:mean(2) end, function() K.reduce(K.R.mean, col, a, 2) end, 4 * n)
  add('prod_dim2', function() return a:prod(2) end, function() K.reduce(K.R.prod, col, a, 2) end, 4 * n)
  add('max', function() return a:max() end, function() K.reduce(K.R.max, one, a, 3) end, 4 * n)
  add('topk 8', function() return mf.topk(a, 8, 2) end, function() K.topk(tv, ti, a, 1, 8, true, true) end, 4 * n)
  return c
end

print(('threads %d, clock %s'):format(mf.get_num_threads(), opts.cpu and 'CPU time' or 'wall'))
print(('%-14s %-5s %10s %10s %10s %11s %11s'):format('case', 'size', 'fresh us', 'warm us', 'limit us',
  'fresh/warm', 'warm/limit'))
for size in opts.sizes:gmatch('[^,]+') do
  local r = ({small = 128, large = 2048})[size] or error('kernels_warm.lua: unknown size ' .. size)
  local src, dst = mf.empty(4 * r * r), mf.empty(4 * r * r)  -- 16 bytes per element: the largest case
  for _, k in ipairs(cases(r)) do
    if not opts.only or k[1]:match(opts.only) then
      local bytes = k[4] / 2  -- memcpy moves each byte twice (read, write)
      local f, w = us(k[2]), us(k[3])
      local m = us(function() ffi.C.memcpy(dst:data(), src:data(), bytes) end)
      print(('%-14s %-5s %10.2f %10.2f %10.2f %11.2f %11.2f'):format(k[1], size, f, w, m, f / w, w / m))
    end
  end
end
