-- The random factories against their distributions: mean, variance and a Kolmogorov-Smirnov
-- statistic against the exact CDF (normal for randn, uniform for rand), with fixed seeds and
-- thresholds derived from the sample size; the same seed gives the same bits whatever the thread
-- count (the draws are counter-based: value i depends only on seed and offset + i).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

-- Standard normal CDF by its Taylor series (Marsaglia, "Evaluating the normal distribution", 2004):
-- Phi(x) = 1/2 + phi(x) (x + x^3/3 + x^5/(3*5) + ...), absolute error ~1e-15 for |x| <= 8.
local function Phi(x)
  if x < -8 then return 0 elseif x > 8 then return 1 end
  local s, prev, term, q, i = x, 0, x, x * x, 1
  while s ~= prev do
    prev = s
    i = i + 2
    term = term * q / i
    s = s + term
  end
  return 0.5 + s * math.exp(-0.5 * q - 0.91893853320467274178)  -- log(sqrt(2 pi))
end

-- D = sup |F_n(x) - F(x)| over the sorted sample
local function ks(values, cdf)
  table.sort(values)
  local n, d = #values, 0
  for i, v in ipairs(values) do
    local f = cdf(v)
    d = math.max(d, i / n - f, f - (i - 1) / n)
  end
  return d
end

-- The asymptotic KS critical value at level alpha: sqrt(-log(alpha / 2) / 2) / sqrt(n) (1.95/sqrt(n) at
-- 0.001). The seeds are fixed, so this cannot flake; a wrong distribution exceeds it by far.
local function ks_limit(n, alpha) return math.sqrt(-math.log((alpha or 1e-3) / 2) / 2) / math.sqrt(n) end

local function moments(values)
  local n, s, s2 = #values, 0, 0
  for _, v in ipairs(values) do s = s + v end
  local mean = s / n
  for _, v in ipairs(values) do s2 = s2 + (v - mean) ^ 2 end
  return mean, s2 / (n - 1)
end

local function flat(t) return t:double():reshape(t:numel()):totable() end

local N = 100000

T.test('randn: mean 0, variance 1, normal CDF by Kolmogorov-Smirnov', function()
  for _, dtype in ipairs{'float32', 'float64'} do
    mf.manual_seed(12345)
    local v = flat(mf.randn(N, {dtype = dtype}))
    local mean, var = moments(v)
    -- 5 standard errors: sd(mean) = 1/sqrt(n), sd(variance) = sqrt(2/n) for a normal sample
    T.near(mean, 0, 5 / math.sqrt(N), dtype .. ' mean')
    T.near(var, 1, 5 * math.sqrt(2 / N), dtype .. ' variance')
    local d = ks(v, Phi)
    assert(d < ks_limit(N), ('%s: KS statistic %.5f over the limit %.5f'):format(dtype, d, ks_limit(N)))
  end
end)

T.test('randn with mean and std; the KS check rejects a shifted or scaled sample', function()
  mf.manual_seed(7)
  local v = flat(mf.randn(N, {mean = 3, std = 2}))
  local mean, var = moments(v)
  T.near(mean, 3, 5 * 2 / math.sqrt(N), 'mean')
  T.near(var, 4, 5 * 4 * math.sqrt(2 / N), 'variance')
  local d = ks(v, function(x) return Phi((x - 3) / 2) end)
  assert(d < ks_limit(N), ('KS statistic %.5f over %.5f'):format(d, ks_limit(N)))
  -- the same sample against a 5% shift or a 5% wider normal: the statistic must see the difference
  local d_shift = ks(v, function(x) return Phi((x - 3.1) / 2) end)
  local d_scale = ks(v, function(x) return Phi((x - 3) / 2.1) end)
  assert(d_shift > 2 * ks_limit(N), 'KS misses a shift of 0.05 sd: ' .. d_shift)
  assert(d_scale > 2 * ks_limit(N), 'KS misses a 5% scale error: ' .. d_scale)
end)

T.test('rand: uniform on [low, high) by moments, bounds and Kolmogorov-Smirnov', function()
  for _, case in ipairs{{0, 1, 'float32'}, {-2, 3, 'float32'}, {0, 1, 'float64'}} do
    local lo, hi, dtype = case[1], case[2], case[3]
    mf.manual_seed(99)
    local v = flat(mf.rand(N, {low = lo, high = hi, dtype = dtype}))
    local w = hi - lo
    local mean, var = moments(v)
    local what = ('%s U(%g, %g)'):format(dtype, lo, hi)
    -- sd(mean) = w / sqrt(12 n); sd(variance) = w^2 sqrt(1/180 + ...) / sqrt(n), bounded by w^2 0.09 / sqrt(n)
    T.near(mean, (lo + hi) / 2, 5 * w / math.sqrt(12 * N) / math.max(1, math.abs((lo + hi) / 2)), what .. ' mean')
    T.near(var, w * w / 12, 5 * 0.09 * w * w / math.sqrt(N) / math.max(1, w * w / 12), what .. ' variance')
    local mn, mx = math.huge, -math.huge
    for _, x in ipairs(v) do mn, mx = math.min(mn, x), math.max(mx, x) end
    assert(mn >= lo and mx < hi, ('%s: values in [%g, %g]'):format(what, mn, mx))
    local d = ks(v, function(x) return (x - lo) / w end)
    assert(d < ks_limit(N), ('%s: KS statistic %.5f over %.5f'):format(what, d, ks_limit(N)))
  end
end)

T.test('a seed gives the same numbers whatever the thread count', function()
  local saved = mf.get_num_threads()
  -- 300001 draws: above the size at which kernels split work across threads, and odd, so the
  -- chunk edges fall inside the generator's 4-word blocks
  local n = 300001
  local function draw(threads)
    mf.set_num_threads(threads)
    mf.manual_seed(2024)
    local a, b = mf.randn(n), mf.rand(n, {dtype = 'float64'})
    local m = mf.dropout_mask(mf.ones(n), 0.3)
    return a:totable(), b:totable(), m:totable()
  end
  -- element by element in plain Lua (no moonflow op in the comparison)
  local function first_difference(x, y)
    for i = 1, #x do if x[i] ~= y[i] then return i end end
  end
  local ok, err = pcall(function()
    local a1, b1, m1 = draw(1)
    for _, threads in ipairs{2, 3, 4} do
      local a, b, m = draw(threads)
      T.eq(first_difference(a, a1), nil, ('randn with %d threads: first element that differs'):format(threads))
      T.eq(first_difference(b, b1), nil, ('rand with %d threads: first element that differs'):format(threads))
      T.eq(first_difference(m, m1), nil, ('dropout mask with %d threads: first element that differs'):format(threads))
    end
  end)
  mf.set_num_threads(saved)  -- restored whether or not a check failed
  if not ok then error(err, 0) end
end)

T.finish()
