-- Eager dispatch overhead and GEMM throughput:
--   µs per eager `a + b` on 1-element tensors (the whole path: adapter, cache check, output
--   allocation, kernel call); µs per call of four or more arguments on 1-element tensors
--   (adam_update's six inputs, mf.zeros(1, 1, 1, 1), t:get(1, 1, 1, i): the varargs path that
--   `{...}` once made 5-14 µs, tensor.lua's pack_args); and GFLOP/s of an n x n sgemm through mf.matmul next to the same
--   sgemm called straight into OpenBLAS (the machine's limit for this shape).
-- usage: moonflow scripts/bench/eager_overhead.lua [--n 1024] [--reps 5] [--json]
local ffi = require 'ffi'
ffi.cdef [[
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
]]
local C = ffi.C

local opts = {n = 1024, reps = 5, json = false}
local i = 1
while arg[i] do
  if arg[i] == '--n' then opts.n = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == '--reps' then opts.reps = tonumber(arg[i + 1]); i = i + 1
  elseif arg[i] == '--json' then opts.json = true end
  i = i + 1
end

local clock = mf.clock

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) / 2] or (xs[n / 2] + xs[n / 2 + 1]) / 2
end
local function spread(xs) return xs[#xs] - xs[1] end  -- after median() sorted them

-- 1. eager a + b on 1-element tensors
local a, b = mf.ones(1), mf.ones(1)
for _ = 1, 2e5 do local _ = a + b end  -- warm: JIT traces, caches, allocator
local iters, add_us = 1e6, {}
for r = 1, opts.reps do
  collectgarbage()
  local t0 = clock()
  for _ = 1, iters do local _ = a + b end
  add_us[r] = (clock() - t0) / iters * 1e6
end

-- 1b. calls of four or more arguments (the general path's varargs), 1-element tensors
local w, m1, v1, g = mf.ones(1), mf.zeros(1), mf.zeros(1), mf.ones(1)
local step, lr = mf.tensor({1}), mf.tensor({1e-3})
local y4 = mf.tensor({{{{1, 2}}}})  -- 1 x 1 x 1 x 2
local c, sink = 1, 0  -- an index that changes and a kept result: nothing for the JIT to hoist
local MANY = {
  {'adam_update_6_inputs', function() return mf.adam_update(w, m1, v1, g, step, lr) end},
  {'zeros_4_sizes', function() return mf.zeros(1, 1, 1, 1) end},
  {'get_4_indices', function() c = 3 - c; sink = sink + y4:get(1, 1, 1, c) end},
}
local many_us = {}
for _, c in ipairs(MANY) do
  local f, runs = c[2], {}
  for _ = 1, 3e4 do f() end  -- warm, past the JIT's first traces
  for r = 1, opts.reps do
    collectgarbage()
    local t0 = clock()
    for _ = 1, 1e5 do f() end
    runs[r] = (clock() - t0) / 1e5 * 1e6
  end
  many_us[#many_us + 1] = {c[1], median(runs), spread(runs)}
end

-- 2. sgemm n x n through mf.matmul, and the same call into OpenBLAS directly
local n = opts.n
mf.manual_seed(1)
local x, y = mf.randn(n, n), mf.randn(n, n)
local out = mf.zeros(n, n)
local flop = 2 * n * n * n
local mf_gf, raw_gf = {}, {}
local function time_best(f, k)
  f()
  local t0 = clock()
  for _ = 1, k do f() end
  return (clock() - t0) / k
end
local k = math.max(1, math.floor(2e10 / flop))
for r = 1, opts.reps do  -- interleaved: moonflow, raw, moonflow, raw, ...
  mf_gf[r] = flop / time_best(function() local _ = mf.matmul(x, y) end, k) / 1e9
  raw_gf[r] = flop / time_best(function()
    C.cblas_sgemm(101, 111, 111, n, n, n, 1, x:data(), n, y:data(), n, 0, out:data(), n)
  end, k) / 1e9
end

local add_med, add_sp = median(add_us), spread(add_us)
local mf_med, mf_sp = median(mf_gf), spread(mf_gf)
local raw_med, raw_sp = median(raw_gf), spread(raw_gf)
if opts.json then
  print(('{"bench":"eager_add_1elem","us_per_op":%.4f,"spread":%.4f,"reps":%d}'):format(add_med, add_sp, opts.reps))
  for _, c in ipairs(many_us) do
    print(('{"bench":"eager_%s","us_per_op":%.4f,"spread":%.4f,"reps":%d}'):format(c[1], c[2], c[3], opts.reps))
  end
  print(('{"bench":"sgemm","n":%d,"moonflow_gflops":%.2f,"openblas_gflops":%.2f,"ratio":%.4f,"threads":%d}')
    :format(n, mf_med, raw_med, mf_med / raw_med, mf.get_num_threads()))
else
  print(('threads: %d (MF_NUM_THREADS / mf.set_num_threads)'):format(mf.get_num_threads()))
  print(('eager a + b, 1 element:   %.3f us/op   (median of %d runs of %d, spread %.3f)'):format(add_med, opts.reps, iters, add_sp))
  for _, c in ipairs(many_us) do
    print(('eager %-22s %.3f us/op   (spread %.3f)'):format(c[1] .. ':', c[2], c[3]))
  end
  print(('sgemm %dx%d mf.matmul:  %.1f GFLOP/s (spread %.1f)'):format(n, n, mf_med, mf_sp))
  print(('sgemm %dx%d OpenBLAS:   %.1f GFLOP/s (spread %.1f)'):format(n, n, raw_med, raw_sp))
  print(('mf.matmul / OpenBLAS:      %.3f'):format(mf_med / raw_med))
end
