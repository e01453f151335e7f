-- Edge cases of the rewritten CPU kernels found by the cpurev review: empty tensors, tails, views,
-- NaN and infinities, each against a reference computed here (plain Lua loops or values by hand).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

T.test('softmax / log_softmax over a non-last dim of a tensor with an empty other dim', function()
  -- 2x0x4 along dim 1: the tiled (dim not last) path computed outer = count / inner with inner 0
  -- (SIGFPE); now an empty result of x's shape, as PyTorch
  for _, f in ipairs({'softmax', 'log_softmax'}) do
    for _, sh in ipairs({{2, 0, 4}, {0, 3, 5}, {3, 4, 0}}) do
      for dim = 1, 3 do
        local x = mf.zeros(sh[1], sh[2], sh[3])
        local y = mf[f](x, dim)
        T.eq(y:numel(), 0, f .. ' numel')
        T.eq(y:size(1) .. 'x' .. y:size(2) .. 'x' .. y:size(3), sh[1] .. 'x' .. sh[2] .. 'x' .. sh[3], f .. ' shape')
      end
    end
  end
end)

local nan, inf = 0 / 0, math.huge
mf.manual_seed(2026)
local function same(a, b) return a == b or (a ~= a and b ~= b) end

-- runs f with 1, 2 and 3 threads, restoring the count
local function each_threads(f)
  local before = mf.get_num_threads()
  for th = 1, 3 do
    mf.set_num_threads(th)
    f(th)
  end
  mf.set_num_threads(before)
end

T.test('max / min / argmax / argmin / sum: tails, an odd offset, NaN and ties, 1-3 threads', function()
  -- sizes around the 8-lane vectors, the 32-element folds, argmax's 2048-element sub-blocks and the
  -- 16384-element blocks of a full reduction; x starts one element into its storage (unaligned)
  local sizes = {1, 7, 8, 9, 15, 16, 17, 33, 63, 65, 2049, 16383, 16385}
  for _, dt in ipairs({'float32', 'float64', 'int32', 'int64', 'uint8'}) do
    local isf = dt:match('float') ~= nil
    for _, n in ipairs(sizes) do
      for _, special in ipairs(isf and {'none', 'nan', 'nanlast', 'inf', 'ties'} or {'none', 'ties'}) do
        local base = mf.rand(n + 1) * 200  -- within uint8's range
        base = isf and mf.cast(base - 100, dt) or mf.cast(base, dt)
        local x = base:narrow(1, 2, n)
        local mid = math.floor(n / 2) + 1
        if special == 'nan' then x:set(mid, nan)
        elseif special == 'nanlast' then x:set(n, nan)
        elseif special == 'inf' then x:set(mid, inf)
        elseif special == 'ties' then x:fill_(3); if n > 2 then x:set(n - 1, 9); x:set(n, 9) end end
        local v = {}
        for i = 1, n do v[i] = x:get(i) end
        local mx, mn, amx, amn, s = v[1], v[1], 1, 1, 0
        for i = 2, n do
          if v[i] > mx then mx, amx = v[i], i end
          if v[i] < mn then mn, amn = v[i], i end
        end
        for i = 1, n do s = s + v[i] end
        for i = n, 1, -1 do if v[i] ~= v[i] then mx, mn, amx, amn = nan, nan, i, i end end  -- the first NaN wins
        local what = ('%s n=%d %s'):format(dt, n, special)
        each_threads(function(th)
          local w = what .. ' threads ' .. th
          T.eq(same(x:max():item(), mx), true, w .. ' max')
          T.eq(same(x:min():item(), mn), true, w .. ' min')
          T.eq(x:argmax():item(), amx, w .. ' argmax')
          T.eq(x:argmin():item(), amn, w .. ' argmin')
          if isf then
            local got = x:sum():item()
            T.eq(same(got, s) or math.abs(got - s) <= 1e-5 * math.abs(s) + 1e-3, true, w .. ' sum')
          else
            T.eq(x:sum():item(), s, w .. ' sum')
          end
          -- the transposed column form: n x 3 with strides (1, n), reduced over dim 1
          local t = mf.cat({x:reshape(1, n), x:reshape(1, n), x:reshape(1, n)}, 1):t()
          local vals, idx = t:max(1)
          for j = 1, 3 do
            T.eq(same(vals:get(j), mx), true, w .. ' t:max(1)')
            T.eq(idx:get(j), amx, w .. ' t:max(1) index')
          end
        end)
      end
    end
  end
end)

T.test('transposed copies of every width: odd offsets, edges past the 8x8 blocks, in place', function()
  for _, dt in ipairs({'float32', 'float64', 'int32', 'int64', 'uint8'}) do
    for _, r in ipairs({1, 7, 9, 17, 65}) do
      for _, c in ipairs({8, 9, 17}) do
        local a0 = mf.arange(1, (r + 2) * (c + 3) + 1):reshape(r + 2, c + 3)
        local v = mf.cast(a0 - mf.floor(a0 / 250) * 250, dt):narrow(1, 2, r):narrow(2, 2, c)
        local want = {}
        for i = 1, r do want[i] = {}; for j = 1, c do want[i][j] = v:get(i, j) end end
        each_threads(function(th)
          local what = ('%s %dx%d threads %d'):format(dt, r, c, th)
          local dbase = mf.zeros(c + 1, r + 5, {dtype = dt})
          local d = dbase:narrow(2, 3, r):narrow(1, 2, c)
          d:copy_(v:t())
          for i = 1, r do for j = 1, c do T.eq(d:get(j, i), want[i][j], what .. ' copy_ into a narrowed view') end end
          T.eq(dbase:narrow(1, 1, 1):abs():sum():item(), 0, what .. ': no write outside the view')
          if r == c then
            local q = v:clone()
            q:copy_(q:t())
            for i = 1, r do for j = 1, c do T.eq(q:get(i, j), want[j][i], what .. ' q:copy_(q:t())') end end
          end
        end)
      end
    end
  end
end)

T.test('softmax / log_softmax along a non-last dim with more than one tile of lines, NaN and infinities', function()
  -- 5 x 700 along dim 1: lines side by side in tiles of 512 columns; a NaN, +inf and -inf in
  -- columns of the second tile; reference: float64 per column
  local x = mf.randn(5, 700) * 4
  x:set(2, 700, nan); x:set(3, 600, inf); x:set(1, 513, -inf)
  for _, log in ipairs({false, true}) do
    local y = (log and mf.log_softmax or mf.softmax)(x, 1)
    for c = 1, 700 do
      local m, hasnan, s = -inf, false, 0
      for r = 1, 5 do local v = x:get(r, c); if v ~= v then hasnan = true elseif v > m then m = v end end
      for r = 1, 5 do s = s + math.exp(x:get(r, c) - m) end
      for r = 1, 5 do
        local v = x:get(r, c)
        local want = hasnan and nan or (log and (v - m) - math.log(s) or math.exp(v - m) / s)
        local got = y:get(r, c)
        T.eq(same(got, want) or math.abs(got - want) <= 3e-6 * math.max(1, math.abs(want)), true,
             ('%s column %d row %d: got %s, want %s'):format(log and 'log_softmax' or 'softmax', c, r, got, want))
      end
    end
  end
end)

T.test('a -0 param keeps its sign, and records for -0 and 0 stay apart', function()
  -- the params text wrote -0 with %d ("0") and the fast tree keyed it as 0: full(s, -0.0) filled +0
  -- (PyTorch: -0); clamp's min -0.0 clamped to +0
  local function sign(v) return 1 / v < 0 and '-' or '+' end
  for _, dt in ipairs({'float32', 'float64'}) do
    T.eq(sign(mf.full({3}, -0.0, {dtype = dt}):get(2)), '-', dt .. ' full -0')
    T.eq(sign(mf.full({3}, 0, {dtype = dt}):get(2)), '+', dt .. ' full 0 after -0')
    T.eq(sign(mf.full({3}, -0.0, {dtype = dt}):get(2)), '-', dt .. ' full -0 after 0')
  end
  T.eq(sign(mf.clamp(mf.full({2}, -5), -0.0, 1):get(1)), '-', 'clamp min -0')
  T.eq(mf.full({2}, -0.0, {dtype = 'int64'}):get(1), 0, 'int64 full -0')
end)

T.finish()
