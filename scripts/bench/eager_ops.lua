-- Eager per-call cost of common ops on contiguous float32 inputs, at a cache-resident size (16K
-- elements, 64 KB) and a memory-bound one (4M elements, 16 MB): one JSON line per (op, size) with
-- the median of 7 timed batches, in µs per call. It uses only the public API, so two builds can be
-- compared call for call: scripts/bench/compare_builds.sh OLD_MOONFLOW NEW_MOONFLOW.
-- usage: moonflow scripts/bench/eager_ops.lua [--only name]
local only
for i = 1, #arg do if arg[i] == '--only' then only = arg[i + 1] end end

local SIZES = {{'64KB', 128, 128}, {'16MB', 2048, 2048}}
local CASES = {
  {'add', function(a, b) return a + b end},
  {'mul_scalar', function(a) return a * 2 end},
  {'relu', function(a) return a:relu() end},
  {'exp', function(a) return a:exp() end},
  {'tanh', function(a) return a:tanh() end},
  {'clamp', function(a) return a:clamp(-0.5, 0.5) end},
  {'maximum', function(a, b) return mf.maximum(a, b) end},
  {'where', function(a, b, m) return mf.where(m, a, b) end},
  {'gt', function(a, b) return a:gt(b) end},
  {'sum', function(a) return a:sum() end},
  {'sum_dim2', function(a) return a:sum(2) end},
  {'max_dim2', function(a) return a:max(2) end},
  {'softmax', function(a) return mf.softmax(a, 2) end},
  {'copy', function(a, b, m, d) return d:copy(a) end},
  {'fill', function(a, b, m, d) return d:fill(1.5) end},
  {'clone', function(a) return a:clone() end},
  {'transpose_contig', function(a) return a:t():contiguous() end},
  {'narrow', function(a) return a:narrow(1, 2, 8) end},
  {'matmul_128', function(a, b, m, d, s1, s2) return mf.matmul(s1, s2) end},
}

local T = dofile((debug.getinfo(1, 'S').source:match('^@(.*)[/\\]') or '.') .. '/timing.lua')

mf.manual_seed(1)
local s1, s2 = mf.randn(128, 128), mf.randn(128, 128)
for _, sz in ipairs(SIZES) do
  local label, r, c = sz[1], sz[2], sz[3]
  local a, b, d = mf.randn(r, c), mf.randn(r, c), mf.zeros(r, c)
  local m = a:gt(0)
  for _, case in ipairs(CASES) do
    local name, f = case[1], case[2]
    if not only or only == name then
      -- calls per batch: about 20 ms of work at the measured cost; the median of 7 batches
      local us = T.per_call_us(f, nil, a, b, m, d, s1, s2)
      print(('{"op":"%s","size":"%s","us":%.4g}'):format(name, label, us))
      io.stdout:flush()
    end
  end
end
