-- batch_norm and the pooling gradients on inputs large enough to take their parallel and vector
-- paths: bit-identical results with 1 and 2 threads, and values against float64 references
-- computed here element by element (batch statistics by two passes in Lua numbers; each window's
-- gradient by hand).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

local PTR = {float32 = 'const float *', float64 = 'const double *'}

-- a pointer to a contiguous tensor's elements
local function elems(t) return ffi.cast(PTR[t:dtype()], t:data()) end

local same_bits = T.same_bits  -- 1 and 2 threads, the same bytes (testlib)

-- batch_norm of x (N x C x inner...) against Lua's float64 two-pass statistics
local function check_batch_norm(x, tol, what)
  local N, C = x:size(1), x:size(2)
  local inner = x:numel() / (N * C)
  local w, b = mf.randn(C):cast(x:dtype()), mf.randn(C):cast(x:dtype())
  local y = same_bits(what, function() return mf.batch_norm(x, w, b) end)
  local xp, yp, wp, bp = elems(x), elems(y), elems(w), elems(b)
  local worst = 0
  for c = 0, C - 1 do
    local s = 0
    for n = 0, N - 1 do for i = 0, inner - 1 do s = s + xp[(n * C + c) * inner + i] end end
    local cnt = N * inner
    local mean, sq = s / cnt, 0
    for n = 0, N - 1 do
      for i = 0, inner - 1 do
        local d = xp[(n * C + c) * inner + i] - mean
        sq = sq + d * d
      end
    end
    local rstd = 1 / math.sqrt(sq / cnt + 1e-5)
    for n = 0, N - 1 do
      for i = 0, inner - 1 do
        local k = (n * C + c) * inner + i
        local want = (xp[k] - mean) * rstd * wp[c] + bp[c]
        worst = math.max(worst, math.abs(yp[k] - want) / math.max(1, math.abs(want)))
      end
    end
  end
  T.eq(worst <= tol, true, ('%s: worst relative error %g over %g'):format(what, worst, tol))
end

mf.manual_seed(11)

T.test('batch_norm: float64 statistics, 1 and 2 threads alike (vector runs and their tails)', function()
  -- inner 1023 = 63 runs of 16 + 3 of 4 + 3 left; 2 x 3 x 7 = 42: two runs of 16, two of 4, two left
  local big = mf.randn(8, 16, 33, 31)
  check_batch_norm(big, 2e-6, 'float32 8x16x33x31')
  check_batch_norm(big:double(), 1e-12, 'float64 8x16x33x31')
  check_batch_norm(mf.randn(2, 5, 3, 7), 2e-6, 'float32 2x5x3x7')
  -- a mean 3000 times the spread: one-pass sum-of-squares would lose the variance in float32
  check_batch_norm(mf.randn(16, 4, 1000) + 3000, 2e-6, 'float32 mean 3000')
  check_batch_norm(mf.randn(64, 3), 2e-6, 'float32 2-d (inner 1)')
end)

-- the gradient of avg_pool2d (square kernel k, stride s, padding p) or adaptive_avg_pool2d
-- (k = nil, output Ho x Wo) by hand in Lua numbers: each gy element over its window's count
local function pool_grad_ref(gy, H, W, k, s, p, include_pad)
  local N, C, Ho, Wo = gy:size(1), gy:size(2), gy:size(3), gy:size(4)
  local g = elems(gy)
  local ref = {}
  for i = 0, N * C * H * W - 1 do ref[i] = 0 end
  local function win(o, n, out)
    if not k then return math.floor(o * n / out), math.floor(((o + 1) * n + out - 1) / out), nil end
    local b = o * s - p
    local e = b + k
    local div = include_pad and math.min(e, n + p) - b or nil
    return math.max(b, 0), math.min(e, n), div
  end
  for pl = 0, N * C - 1 do
    for oh = 0, Ho - 1 do
      local h0, h1, hd = win(oh, H, Ho)
      for ow = 0, Wo - 1 do
        local w0, w1, wd = win(ow, W, Wo)
        local v = g[(pl * Ho + oh) * Wo + ow] / ((hd or h1 - h0) * (wd or w1 - w0))
        for r = h0, h1 - 1 do
          for c = w0, w1 - 1 do
            local i = (pl * H + r) * W + c
            ref[i] = ref[i] + v
          end
        end
      end
    end
  end
  return ref
end

local function check_near(got, ref, tol, what)
  local gp = elems(got)
  for i = 0, got:numel() - 1 do
    local want = ref[i]
    if math.abs(gp[i] - want) > tol * math.max(1, math.abs(want)) then
      error(('%s: element %d is %.9g, want %.9g'):format(what, i + 1, gp[i], want), 2)
    end
  end
end

T.test('pooling gradients: 1 and 2 threads alike, values by hand', function()
  local x = mf.randn(8, 16, 36, 35)  -- odd width: a column no 2x2 window covers
  local gy = mf.randn(8, 16, 18, 17)
  same_bits('max_pool2d_backward 2x2', function() return mf.max_pool2d_backward(gy, x, 2) end)
  local g3 = mf.randn(8, 16, 18, 18)
  same_bits('max_pool2d_backward 3/2 pad 1', function() return mf.max_pool2d_backward(g3, x, 3, 2, 1) end)
  local g1 = mf.randn(8, 16, 1, 1)
  local y = same_bits('adaptive_avg_pool2d_backward 1x1', function() return mf.adaptive_avg_pool2d_backward(g1, x, 1) end)
  check_near(y, pool_grad_ref(g1, 36, 35), 1e-6, 'adaptive 1x1')
  local g5 = mf.randn(8, 16, 5, 5)  -- 36 and 35 rows over 5: overlapping windows
  y = same_bits('adaptive_avg_pool2d_backward 5x5', function() return mf.adaptive_avg_pool2d_backward(g5, x, 5) end)
  check_near(y, pool_grad_ref(g5, 36, 35), 1e-6, 'adaptive 5x5')
  y = same_bits('avg_pool2d_backward 2x2', function() return mf.avg_pool2d_backward(gy, x, 2) end)
  check_near(y, pool_grad_ref(gy, 36, 35, 2, 2, 0), 1e-6, 'avg 2x2')
  -- every window form: overlapping rows (3/2), gaps between windows (2/3), padding counted or not
  local xs = mf.randn(2, 3, 11, 13)
  for _, f in ipairs{{2, 2, 0}, {3, 2, 1}, {2, 3, 0}, {3, 3, 1}, {4, 2, 2}, {1, 2, 0}} do
    local k, s, p = f[1], f[2], f[3]
    local Ho, Wo = math.floor((11 + 2 * p - k) / s) + 1, math.floor((13 + 2 * p - k) / s) + 1
    local g = mf.randn(2, 3, Ho, Wo)
    for _, inc in ipairs{true, false} do
      local what = ('avg k %d s %d p %d include_pad %s'):format(k, s, p, tostring(inc))
      check_near(mf.avg_pool2d_backward(g, xs, k, s, p, inc), pool_grad_ref(g, 11, 13, k, s, p, inc), 1e-6, what)
      check_near(mf.avg_pool2d_backward(g:double(), xs:double(), k, s, p, inc),
                 pool_grad_ref(g:double(), 11, 13, k, s, p, inc), 1e-14, what .. ' float64')
    end
  end
  for _, o in ipairs{3, 4, 7} do
    local g = mf.randn(2, 3, o, o)
    check_near(mf.adaptive_avg_pool2d_backward(g, xs, o), pool_grad_ref(g, 11, 13), 1e-6, 'adaptive ' .. o)
  end
end)

-- Global pooling's gradient from 16 MiB of gx on is written by streaming stores (pool.cc stream_fill):
-- 16x65 planes of 61 x 67 (4087 elements, odd: each plane starts off a vector's alignment, a plain
-- head and tail around the streamed middle; 17 MB in float32), float32 and float64, every element
-- exactly gy / 4087 (one division, correctly rounded in the dtype: the float64 quotient rounded to
-- float32 for float32), the same bits with 1 and 2 threads
T.test('adaptive_avg_pool2d_backward 1x1 from 16 MiB: every element gy / (H W), 1 and 2 threads', function()
  local cell = ffi.new('float[1]')
  for _, dt in ipairs{'float32', 'float64'} do
    local x = mf.zeros({16, 65, 61, 67}, {dtype = dt})
    local gy = mf.randn(16, 65, 1, 1):type(dt)
    local y = same_bits('adaptive 1x1 streamed ' .. dt, function() return mf.adaptive_avg_pool2d_backward(gy, x, 1) end)
    local g, p = elems(gy), elems(y)
    for pl = 0, 16 * 65 - 1 do
      local want = g[pl] / 4087
      if dt == 'float32' then cell[0] = want; want = cell[0] end
      for i = pl * 4087, pl * 4087 + 4086 do
        if p[i] ~= want then error(('%s plane %d element %d: %.9g, want %.9g'):format(dt, pl + 1, i - pl * 4087 + 1, p[i], want)) end
      end
    end
  end
end)

T.test('avg pooling gradients: a -0 gradient spreads as +0, as the zeroed gradient plus it gives', function()
  local x = mf.randn(1, 2, 6, 40)
  local gy = mf.full({1, 2, 3, 20}, -0.0)
  for _, y in ipairs{mf.avg_pool2d_backward(gy, x, 2), mf.avg_pool2d_backward(gy:double(), x:double(), 2),
                     mf.adaptive_avg_pool2d_backward(mf.full({1, 2, 3, 20}, -0.0), x, {3, 20})} do
    local p = elems(y)
    for i = 0, y:numel() - 1 do
      T.eq(1 / p[i], math.huge, ('%s element %d sign'):format(y:dtype(), i + 1))
    end
  end
end)

T.finish()
