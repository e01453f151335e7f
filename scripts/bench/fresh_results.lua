-- What a fresh eager result costs against the same op written into a given tensor (out=), by size:
-- the difference is the first writes into memory the allocator hands back after a collector cycle
-- (tensor.lua's allowance: whether those blocks are still in the caches), plus allocation and the
-- collector's share. Prints one JSON line per size: fresh and out= µs per call of neg and add (the
-- median of the batches, timing.lua's recipe) and the allowance memory_stats reported after.
-- Compare two builds with LD_LIBRARY_PATH=build-a ... / build-b ..., interleaved, on an idle machine.
-- usage: MF_NUM_THREADS=2 moonflow scripts/bench/fresh_results.lua [--sizes 16384,262144,...] [--batches 7]
local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]') or '.'
local T = dofile(here .. '/timing.lua')
local opts = {sizes = '16384,262144,1048576,2097152,4194304', batches = 7}
local i = 1
while arg[i] do
  local k = arg[i]:match('^%-%-(.+)$')
  if k and opts[k] ~= nil and arg[i + 1] then opts[k] = arg[i + 1]; i = i + 2
  else error('fresh_results.lua: unknown argument ' .. tostring(arg[i])) end
end
local tim = {batches = tonumber(opts.batches)}
for s in opts.sizes:gmatch('%d+') do
  local n = tonumber(s)
  local x, o = mf.randn(n), mf.empty(n)
  local row = {}
  row.neg_fresh = T.per_call_us(function(a) return mf.neg(a) end, tim, x)
  row.neg_out = T.per_call_us(function(a) return mf.neg(a, {out = o}) end, tim, x)
  row.add_fresh = T.per_call_us(function(a) return mf.add(a, a) end, tim, x)
  row.add_out = T.per_call_us(function(a) return mf.add(a, a, {out = o}) end, tim, x)
  print(('{"bytes":%d,"neg_fresh_us":%.4g,"neg_out_us":%.4g,"add_fresh_us":%.4g,"add_out_us":%.4g,'
    .. '"gc_allowance_mib":%g}'):format(n * 4, row.neg_fresh, row.neg_out, row.add_fresh, row.add_out,
    (mf.memory_stats().gc_allowance or 0) / 2 ^ 20))  -- 0: a build without the field
end
