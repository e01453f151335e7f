-- The accuracy of float32 gelu (its own erfc: src/core/vecmath.cc), the figures README "Why SLEEF"
-- quotes: on 2M evenly spaced float32 points in [-14, 10], the worst error as a share of
-- tests/lua/test_elemwise_vecmath.lua's gelu bound (2^-23 (4 + 2 x^2) relative, floor 1), and in
-- ulps of float32 against 0.5 x erfc(fl(-x / sqrt 2)) in float64 (the kernel's own rounded argument),
-- for |x| < 1.06 and beyond.
-- usage: moonflow scripts/vecmath/gelu_accuracy.lua
local mf = require 'moonflow'
local ffi = require 'ffi'
ffi.cdef 'double erfc(double); float nextafterf(float, float);'
local C = ffi.C
local n = 2000000
local xs = {}
local f = ffi.new('float[1]')
for i = 0, n - 1 do f[0] = -14 + 24 * i / (n - 1); xs[i + 1] = f[0] end
local ys = mf.gelu(mf.tensor(xs)):totable()
local worst, wx, us, ul = 0, 0, 0, 0
f[0] = -0.70710678118654752; local cf = f[0]
local ux, lx = 0, 0
for i = 1, n do
  local x, y = xs[i], ys[i]
  local want = 0.5 * x * C.erfc(-x * math.sqrt(0.5))
  local tol = 2 ^ -23 * (4 + 2 * x * x)
  local r = math.abs(y - want) / (tol * math.max(1, math.abs(want)))
  if r > worst then worst, wx = r, x end
  f[0] = x * cf  -- the kernel's float product, rounded
  local w2 = 0.5 * x * C.erfc(f[0])
  if math.abs(w2) >= 1e-30 then
    f[0] = math.abs(w2); local fw = f[0]
    local ulp = C.nextafterf(fw, math.huge) - fw
    local u = math.abs(y - w2) / ulp
    if math.abs(x) < 1.0607 then if u > us then us, ux = u, x end elseif u > ul then ul, lx = u, x end
  end
end
print(('worst/bound %.3f at %.6g; ulps |x|<1.06 %.2f at %.6g, else %.2f at %.6g'):format(worst, wx, us, ux, ul, lx))
