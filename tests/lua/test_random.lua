-- The random factories against their distributions: mean, variance and a Kolmogorov-Smirnov
-- statistic against the exact CDF (normal for randn, uniform for rand), with fixed seeds and
-- thresholds derived from the sample size; the same seed gives the same bits whatever the thread
-- count (the draws are counter-based: value i depends only on seed and counter offset + i / P, P values
-- per counter: src/core/philox.h).
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


-- The element layout (src/core/philox.h): float32 rand/randn and dropout_mask take 4 values per
-- counter, float64 rand/randn and randint 2; randn is Box-Muller on word pairs (cosine, then sine).
-- The stream changed on 2026-11-25 (each element took a whole counter before). These values were
-- computed independently: Philox4x32-10 in Python integers and the layout's formulas in float64
-- (/usr/bin/python3, seed 2024, offset 0).
local GOLD = {
  rand32 = {0.6036898493766785, 0.26856327056884766, 0.984598696231842, 0.08359599113464355, 0.3462841510772705,
            0.435894250869751, 0.897896409034729, 0.4639272689819336, 0.5752686262130737, 0.049291014671325684},
  rand32_m2_3 = {1.018449306488037, -0.6571836471557617, 2.9229934215545654, -1.5820200443267822,
                 -0.26857924461364746, 0.17947125434875488},
  rand64 = {0.6036898762147322, 0.9845987393249748, 0.3462842068252838, 0.8978964468613098, 0.5752686453166629},
  randn32 = {-0.116917239, 0.997857493, 0.152437543, 0.0883456058, -1.33981186, 0.570872165, -0.452243124,
             0.104293688, 1.00155674, 0.320499963},
  randn64 = {1.3541920905069686, -0.13145435979650869, 0.73872119363163302, -0.55177547612667899,
             0.63447017366308034},
  randint = {60, 98, 34, 89, 57, 83, 66, 23, 1},
  randint_big = {207379752429464, 969197478649949, -307431586349433},
  dropout = {2, 0, 2, 0, 0, 0, 2, 0, 2},
}

T.test('draws equal independently computed values for seed 2024', function()
  local function check(name, t, want, tol)
    local got = t:double():totable()
    T.eq(#got, #want, name .. ' count')
    for i = 1, #want do
      if tol then T.near(got[i], want[i], tol, ('%s[%d]'):format(name, i))
      else T.eq(got[i], want[i], ('%s[%d]'):format(name, i)) end
    end
  end
  local function fresh() mf.manual_seed(2024) end
  fresh() check('rand float32', mf.rand(10), GOLD.rand32)
  fresh() check('rand float32 [-2, 3)', mf.rand(6, {low = -2, high = 3}), GOLD.rand32_m2_3)
  fresh() check('rand float64', mf.rand(5, {dtype = 'float64'}), GOLD.rand64)
  fresh() check('randn float32', mf.randn(10), GOLD.randn32, 2e-6)  -- the vector math is within a few ulps
  fresh() check('randn float64', mf.randn(5, {dtype = 'float64'}), GOLD.randn64, 1e-14)
  fresh() check('randint', mf.randint(0, 100, {9}), GOLD.randint)
  fresh() check('randint wide', mf.randint(-1e15, 1e15, {3}), GOLD.randint_big)
  fresh() check('dropout_mask', mf.dropout_mask(mf.ones(9), 0.5), GOLD.dropout)
  -- the like-factories and in-place fills draw the same way
  fresh() check('rand_like', mf.rand_like(mf.zeros(2, 5)):reshape(10), GOLD.rand32)
  fresh() check('uniform_', mf.zeros(10):uniform_(), GOLD.rand32)
  fresh() check('normal_', mf.zeros(2, 5):normal_():reshape(10), GOLD.randn32, 2e-6)
  fresh() check('randn_like float64', mf.randn_like(mf.zeros(5, {dtype = 'float64'})), GOLD.randn64, 1e-14)
end)

T.test('a draw advances the offset by the counters it used', function()
  mf.manual_seed(5)
  local function used(f) local o = mf.get_rng_state().offset; f(); return mf.get_rng_state().offset - o end
  T.eq(used(function() mf.rand(10) end), 3, 'rand float32: 4 a counter')
  T.eq(used(function() mf.randn(8) end), 2, 'randn float32')
  T.eq(used(function() mf.rand(5, {dtype = 'float64'}) end), 3, 'rand float64: 2 a counter')
  T.eq(used(function() mf.randn(1, {dtype = 'float64'}) end), 1, 'randn float64')
  T.eq(used(function() mf.randint(0, 3, {7}) end), 4, 'randint: 2 a counter')
  T.eq(used(function() mf.dropout_mask(mf.ones(13), 0.1) end), 4, 'dropout_mask: 4 a counter')
  T.eq(used(function() mf.rand(0) end), 0, 'an empty draw')
  -- two draws in a row continue the stream at the next counter
  mf.manual_seed(2024)
  mf.rand(4)
  local second = mf.rand(6):totable()
  mf.manual_seed(2024)
  local whole = mf.rand(10):totable()
  for i = 1, 6 do T.eq(second[i], whole[4 + i], 'second draw element ' .. i) end
end)

-- Philox4x32-10 in plain LuaJIT (64-bit cdata products), written from Salmon et al. (SC'11), to check
-- the vector lanes over long runs: partial blocks, both thread splits, a counter crossing 2^32.
local ffi = require 'ffi'
local bit = require 'bit'
local U64 = ffi.typeof('uint64_t')
local function u32(x) return tonumber(bit.band(x, 0xffffffffULL)) end
local function philox(seed, ctr)
  local c0, c1, c2, c3 = u32(ctr), u32(bit.rshift(ctr, 32)), 0, 0
  local k0, k1 = u32(seed), u32(bit.rshift(seed, 32))
  for r = 1, 10 do
    if r > 1 then k0, k1 = u32(U64(k0) + 0x9E3779B9), u32(U64(k1) + 0xBB67AE85) end
    local p0, p1 = U64(0xD2511F53) * c0, U64(0xCD9E8D57) * c2
    c0, c1, c2, c3 = bit.bxor(u32(bit.rshift(p1, 32)), c1, k0), u32(p1), bit.bxor(u32(bit.rshift(p0, 32)), c3, k1), u32(p0)
    c0, c2 = c0 % 2^32, c2 % 2^32  -- bit.bxor gives signed 32-bit results
  end
  return {c0, c1, c2, c3}
end

T.test('the vector lanes equal a plain Philox over long draws and a 2^32 counter carry', function()
  local seed, start = 0x243F6A88, 2^32 - 150   -- counters run across 2^32
  local n = 1001                                -- a partial last block
  local keep = ffi.new('float[1]', 1 / (1 - 0.3))[0]  -- the float32 mask's value
  local saved = mf.get_num_threads()
  local ok, err = pcall(function()
    for _, threads in ipairs{1, 2} do
      mf.set_num_threads(threads)
      mf.set_rng_state({seed = seed, offset = start})
      local r = mf.rand(n):totable()
      mf.set_rng_state({seed = seed, offset = start})
      local m = mf.dropout_mask(mf.ones(n), 0.3):totable()
      mf.set_rng_state({seed = seed, offset = start})
      local k = mf.randint(0, 1000, {n}):totable()
      mf.set_rng_state({seed = seed, offset = start})
      local z = mf.randn(n, {dtype = 'float64'}):totable()
      for e = 0, n - 1 do
        local w = philox(U64(seed), U64(start) + math.floor(e / 4))
        local word = w[e % 4 + 1]
        local u = math.floor(word / 256) / 2^24
        T.eq(r[e + 1], u, ('rand element %d (%d threads)'):format(e + 1, threads))
        T.eq(m[e + 1], word < 0.3 * 2^32 and 0 or keep, ('dropout element %d'):format(e + 1))
        local w2 = philox(U64(seed), U64(start) + math.floor(e / 2))
        local h = e % 2
        -- floor(x * 1000 / 2^64) from the 32-bit halves (no 128-bit products in Lua)
        local want = math.floor((w2[2 * h + 1] * 1000 + math.floor(w2[2 * h + 2] * 1000 / 2^32)) / 2^32)
        T.eq(k[e + 1], want, ('randint element %d'):format(e + 1))
        local u1 = 1 - tonumber(bit.rshift(U64(w2[1]) * 2^32 + w2[2], 11)) / 2^53
        local u2 = tonumber(bit.rshift(U64(w2[3]) * 2^32 + w2[4], 11)) / 2^53
        local rr, t = math.sqrt(-2 * math.log(u1)), 2 * math.pi * u2
        T.near(z[e + 1], rr * (h == 0 and math.cos(t) or math.sin(t)), 1e-13, ('randn float64 element %d'):format(e + 1))
      end
    end
  end)
  mf.set_num_threads(saved)
  if not ok then error(err, 0) end
end)

T.test('randperm is Fisher-Yates on two steps a counter, across its chunks of draws', function()
  -- step i (n - 1 down to 1, 0-based) swaps positions i and floor(x (i + 1) / 2^64), x the 64-bit
  -- integer of words (2h, 2h + 1) of counter offset + floor(i / 2), h = i % 2 (src/core/philox.h:
  -- randperm_partner); 2501 steps cross the kernel's chunks of precomputed partners (1024 steps,
  -- whole blocks of 128) and end on half a counter; every dtype shuffles the same way
  local seed, start, n = 99, 12345, 2501
  local want = {}
  for i = 1, n do want[i] = i end
  for i = n - 1, 1, -1 do
    local w = philox(U64(seed), U64(start) + math.floor(i / 2))
    local h, r = i % 2, i + 1
    local j = math.floor((w[2 * h + 1] * r + math.floor(w[2 * h + 2] * r / 2^32)) / 2^32)  -- exact: < 2^44
    want[i + 1], want[j + 1] = want[j + 1], want[i + 1]
  end
  for _, dtype in ipairs{'int64', 'int32', 'float64', 'float32'} do
    mf.set_rng_state({seed = seed, offset = start})
    local got = mf.randperm(n, {dtype = dtype}):totable()
    for i = 1, n do T.eq(got[i], want[i], dtype .. ' randperm element ' .. i) end
    T.eq(mf.get_rng_state().offset, start + 1251, 'offset after randperm: ceil(n / 2) counters')
  end
  -- uint8 (n <= 255): the same rule at n = 200
  mf.set_rng_state({seed = seed, offset = start})
  local got, ref = mf.randperm(200, {dtype = 'uint8'}):totable(), {}
  for i = 1, 200 do ref[i] = i end
  for i = 199, 1, -1 do
    local w = philox(U64(seed), U64(start) + math.floor(i / 2))
    local h, r = i % 2, i + 1
    local j = math.floor((w[2 * h + 1] * r + math.floor(w[2 * h + 2] * r / 2^32)) / 2^32)
    ref[i + 1], ref[j + 1] = ref[j + 1], ref[i + 1]
  end
  for i = 1, 200 do T.eq(got[i], ref[i], 'uint8 randperm element ' .. i) end
end)

T.test('randperm: each of the 24 permutations of 4 equally often (chi-squared)', function()
  -- 24,000 draws, 1,000 expected per permutation; chi-squared with 23 degrees of freedom stays under
  -- 49.7 with probability 0.999 (a fixed seed: it cannot flake; a biased shuffle exceeds it by far)
  mf.manual_seed(2026)
  local counts, draws = {}, 24000
  for _ = 1, draws do
    local v = mf.randperm(4):totable()
    local key = v[1] * 1000 + v[2] * 100 + v[3] * 10 + v[4]
    counts[key] = (counts[key] or 0) + 1
  end
  local kinds, chi2 = 0, 0
  for _, c in pairs(counts) do
    kinds = kinds + 1
    chi2 = chi2 + (c - 1000) ^ 2 / 1000
  end
  T.eq(kinds, 24, 'distinct permutations seen')
  assert(chi2 < 49.7, ('chi-squared %.1f over 23 degrees of freedom exceeds 49.7'):format(chi2))
end)

T.finish()
