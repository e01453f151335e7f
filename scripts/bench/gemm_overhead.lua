-- mf.matmul against raw OpenBLAS sgemm/dgemm on the same input buffers (issue 12 item 7), interleaved in
-- one process: per round, a batch of each side, the side going first alternating by round; the min
-- and the median of the per-call times over rounds, and each side over raw (min, median).
--   raw      cblas_?gemm(A, B) into one preallocated C (the same C every call)
--   kernel   mf.kernels.matmul(c2, a, b): the op's native routine (layout checks, the BLAS call) into
--            one preallocated output, as raw: what matmul adds to BLAS itself
--   matmul   mf.matmul(a, b): the eager call, a fresh output from the caching allocator (outputs
--            freed by the collector, which runs when allocations outgrow the live bytes: 64 MiB
--            cycle through the cache, and each collection's cost is shared by the calls)
--   into     mf.matmul(a, b, {out = c3}): the eager call into one preallocated output (out=): what the
--            eager path adds to the kernel, without a fresh output's first writes
-- usage: MF_NUM_THREADS=1 moonflow scripts/bench/gemm_overhead.lua [--sizes 256,512] [--rounds 15]
--        [--dtype float32] [--clock wall|cpu]
-- --clock cpu times the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) instead of the wall clock: on
-- a machine shared with other work, time spent waiting for a core is left out (one thread only:
-- with more, OpenMP's spinning threads count too).
local ffi = require 'ffi'
pcall(ffi.cdef, [[
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double *a,
                 int lda, const double *b, int ldb, double beta, double *c, int ldc);
struct mf_bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct mf_bench_timespec *tp);
]])
local opts = {sizes = '256,512', rounds = 15, dtype = 'float32', clock = 'wall'}
local i = 1
while i <= #arg do
  local k = arg[i]:match('^%-%-(.*)')
  if not k or opts[k] == nil then error('gemm_overhead.lua: unknown argument ' .. arg[i]) end
  opts[k] = arg[i + 1]
  i = i + 2
end
local rounds = tonumber(opts.rounds)
local clock = mf.clock
if opts.clock == 'cpu' then
  local ts = ffi.new('struct mf_bench_timespec')
  clock = function()  -- CLOCK_PROCESS_CPUTIME_ID is 2 on Linux
    ffi.C.clock_gettime(2, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
  end
elseif opts.clock ~= 'wall' then
  error('gemm_overhead.lua: --clock is wall or cpu, not ' .. opts.clock)
end

-- seconds per call of f over a batch of calls taking about 20 ms
local function batch(f, n)
  collectgarbage()
  local t = clock()
  for _ = 1, n do f() end
  return (clock() - t) / n
end
local function calls_for(f)
  local t0, n = clock(), 0
  repeat f(); n = n + 1 until clock() - t0 > 0.02
  return n
end
local function stats(t)
  table.sort(t)
  return t[1], t[math.floor((#t + 1) / 2)]
end

print(('gemm overhead: %s, %d threads, %d rounds, %s clock (min / median us per call)'):format(opts.dtype,
  mf.get_num_threads(), rounds, opts.clock))
print('|    n | raw min | raw med | kernel min | kernel med | matmul min | matmul med | into min | into med '
  .. '| kernel/raw | matmul/raw | into/raw |')
print('|------|---------|---------|------------|------------|------------|------------|----------|----------'
  .. '|------------|------------|------------|')
for s in opts.sizes:gmatch('%d+') do
  local n = tonumber(s)
  local a, b = mf.randn({n, n}, {dtype = opts.dtype}), mf.randn({n, n}, {dtype = opts.dtype})
  local c, c2, c3 = mf.zeros({n, n}, {dtype = opts.dtype}), mf.zeros({n, n}, {dtype = opts.dtype}),
    mf.zeros({n, n}, {dtype = opts.dtype})
  local K = mf.kernels
  local gemm = opts.dtype == 'float64' and ffi.C.cblas_dgemm or ffi.C.cblas_sgemm
  local pa, pb, pc = a:data(), b:data(), c:data()
  local sides = {
    raw = function() gemm(101, 111, 111, n, n, n, 1, pa, n, pb, n, 0, pc, n) end,
    kernel = function() K.matmul(c2, a, b, 0, 0) end,
    matmul = function() return mf.matmul(a, b) end,
    into = function() return mf.matmul(a, b, {out = c3}) end,
  }
  local names = {'raw', 'kernel', 'matmul', 'into'}
  local counts, times = {}, {}
  for _, k in ipairs(names) do counts[k], times[k] = calls_for(sides[k]), {} end
  for r = 1, rounds do
    for j = 0, 3 do  -- rotate which side goes first
      local k = names[(r + j) % 4 + 1]
      times[k][r] = batch(sides[k], counts[k]) * 1e6
    end
  end
  local rmin, rmed = stats(times.raw)
  local kmin, kmed = stats(times.kernel)
  local mmin, mmed = stats(times.matmul)
  local imin, imed = stats(times.into)
  print(('| %4d | %7.1f | %7.1f | %10.1f | %10.1f | %10.1f | %10.1f | %8.1f | %8.1f | %4.3f %4.3f | %4.3f %4.3f '
    .. '| %4.3f %4.3f |'):format(n, rmin, rmed, kmin, kmed, mmin, mmed, imin, imed, kmin / rmin, kmed / rmed,
    mmin / rmin, mmed / rmed, imin / rmin, imed / rmed))
end
