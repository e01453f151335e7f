-- conv2d and conv2d_backward_input of 3x3, stride-1 layers on the Winograd path (src/kernels/cpu/
-- winograd.cc, chosen in conv.cc's wino_tile): values against float64 references computed here by
-- plain loops over the definition, on shapes that take the path (odd H and W, so tiles pass the
-- edges; padding 0, 1, 2 and 3, which the backward op turns into a cropped input; batch 1 and odd
-- batches; channel counts that are not multiples of 8; a narrowed, transposed view of x; float32
-- and float64), Inf and NaN where the direct convolution puts them, and the same bits at 1 and 2
-- threads. Run as it is (MF_CONV_WINOGRAD unset: the shape rule picks the tile), it also runs
-- itself with MF_CONV_WINOGRAD=2 and =4 (every case through that tile size) and checks, against a
-- run with MF_CONV_WINOGRAD=off, that the rule did take the Winograd path.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

local mode = os.getenv('MF_CONV_WINOGRAD') or 'auto'
local abs, huge = math.abs, math.huge
local RTOL = {float32 = 1e-5, float64 = 1e-12}  -- as tests/ops/harness.lua: of the sum of |terms|
local PTR = {float32 = 'const float *', float64 = 'const double *'}

-- the elements of t (any layout) as a pointer into a contiguous copy, kept alive by the caller
local function elems(t)
  local c = t:contiguous()
  return ffi.cast(PTR[c:dtype()], c:data()), c
end

-- y = conv2d(x, w, stride 1, padding p) in float64: values and sums of |terms| (flat, 0-based)
local function conv_ref(x, w, p)
  local N, C, H, W = x:size(1), x:size(2), x:size(3), x:size(4)
  local O = w:size(1)
  local Ho, Wo = H + 2 * p - 2, W + 2 * p - 2
  local xp, xk = elems(x)
  local wp, wk = elems(w)
  local n_out = N * O * Ho * Wo
  local y, sc = ffi.new('double[?]', n_out), ffi.new('double[?]', n_out)
  for n = 0, N - 1 do
    for o = 0, O - 1 do
      for c = 0, C - 1 do
        local xb, wb = (n * C + c) * H * W, (o * C + c) * 9
        for oh = 0, Ho - 1 do
          local yb = ((n * O + o) * Ho + oh) * Wo
          for i = 0, 2 do
            local h = oh - p + i
            if h >= 0 and h < H then
              for j = 0, 2 do
                local wv = wp[wb + i * 3 + j]
                local xr = xb + h * W - p + j
                local lo, hi = math.max(0, p - j), math.min(Wo - 1, W - 1 + p - j)
                for ow = lo, hi do
                  local v = xp[xr + ow] * wv
                  y[yb + ow] = y[yb + ow] + v
                  sc[yb + ow] = sc[yb + ow] + abs(v)
                end
              end
            end
          end
        end
      end
    end
  end
  return y, sc, {N, O, Ho, Wo}
end

-- gx = conv2d_backward_input(gy, w, like, stride 1, padding p) in float64: gx[n][c][h][wc] sums
-- gy[n][o][h + p - i][wc + p - j] * w[o][c][i][j] over the taps inside gy
local function bwd_ref(gy, w, like, p)
  local N, O, Ho, Wo = gy:size(1), gy:size(2), gy:size(3), gy:size(4)
  local C, H, W = w:size(2), like:size(3), like:size(4)
  local gp, gk = elems(gy)
  local wp, wk = elems(w)
  local n_out = N * C * H * W
  local gx, sc = ffi.new('double[?]', n_out), ffi.new('double[?]', n_out)
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for o = 0, O - 1 do
        local gb, wb = (n * O + o) * Ho * Wo, (o * C + c) * 9
        for h = 0, H - 1 do
          local xb = ((n * C + c) * H + h) * W
          for i = 0, 2 do
            local oh = h + p - i
            if oh >= 0 and oh < Ho then
              for j = 0, 2 do
                local wv = wp[wb + i * 3 + j]
                local gr = gb + oh * Wo + p - j
                local lo, hi = math.max(0, j - p), math.min(W - 1, Wo - 1 + j - p)
                for wc = lo, hi do
                  local v = gp[gr + wc] * wv
                  gx[xb + wc] = gx[xb + wc] + v
                  sc[xb + wc] = sc[xb + wc] + abs(v)
                end
              end
            end
          end
        end
      end
    end
  end
  return gx, sc, {N, C, H, W}
end

local function class(v)
  if v ~= v then return 'nan' elseif v == huge then return '+inf' elseif v == -huge then return '-inf' end
  return 'finite'
end

-- got (a tensor) against (ref, scale, shape): shape, Inf and NaN exactly, finite values within
-- rtol * their scale; returns the largest error / scale
local function check(what, got, ref, sc, shape, rtol)
  T.eq(table.concat(got:size(), 'x'), table.concat(shape, 'x'), what .. ': shape')
  local gp, keep = elems(got)
  local worst = 0
  for i = 0, got:numel() - 1 do
    local g, r = gp[i], ref[i]
    if class(g) ~= class(r) or class(r) ~= 'finite' then
      if class(g) ~= class(r) then
        error(('%s: element %d is %s, the reference %s'):format(what, i, tostring(g), tostring(r)), 2)
      end
    else
      local e = abs(g - r) / math.max(sc[i], 1e-6)
      if e > rtol then error(('%s: element %d: got %.9g, want %.9g (error %.3g of the scale, rtol %g)'):format(what, i, g, r, e, rtol), 2) end
      if e > worst then worst = e end
    end
  end
  return worst
end

-- the largest error of each case, as a fraction of its element's sum of |terms|
local function report(name, dtype, worst)
  io.write(('  [MF_CONV_WINOGRAD=%s] %-18s %s: largest error %.3g of the sum of |terms|\n'):format(mode, name, dtype, worst))
end

-- 1 and 2 threads give the same bits (MF_CONV_WINOGRAD=off: im2col + GEMM, which splits a batch of
-- one over OpenBLAS's threads and does not promise that)
local function same_bits(what, f)
  if mode == 'off' then return f() end
  return T.same_bits(what, f)
end

local function draw(seed, dtype, ...)
  mf.manual_seed(seed)
  local t = mf.randn(...)
  return dtype == 'float64' and t:double() or t
end

-- the bytes of the first forward case's float32 result, as a hex digest (FNV-1a, 32 bits)
local function digest()
  local x = draw(1, 'float32', 2, 17, 57, 61)
  local w = draw(101, 'float32', 19, 17, 3, 3)
  local s = T.bytes(mf.conv2d(x, w, 1, 1))
  local h = 2166136261
  for i = 1, #s do h = bit.tobit(bit.bxor(h, s:byte(i)) * 16777619) end
  return bit.tohex(h)
end

if arg[1] == '--digest' then
  io.write('digest ', digest(), '\n')
  os.exit(0)
end

-- forward cases: name, x, O, padding; every one takes the path under the shape rule (at least 16
-- channels each side, maps of 8 or more, 16M multiply-adds): F(2x2) in float32; in float64 F(4x4)
-- where both output sides are 28 or more, F(2x2) below
local FWD = {
  {'odd_57x61', {2, 17, 57, 61}, 19, 1},
  {'pad0_batch1', {1, 32, 59, 45}, 24, 0},
  {'pad2_21x23', {11, 17, 21, 23}, 18, 2},
  {'wide_30x300', {1, 16, 30, 300}, 16, 1},  -- 75 (F(4x4)) or 150 tiles a row: segments of at most 63
  {'wide_20x150', {3, 16, 20, 150}, 16, 1},
}
local BWD = {  -- name, like (x's shape), O, padding
  {'bwd_pad1', {5, 19, 33, 29}, 21, 1},
  {'bwd_pad0', {4, 16, 40, 36}, 20, 0},
  {'bwd_pad3_cropped', {9, 17, 30, 26}, 16, 3},  -- gy is 34x30: read from row and column 1 on
}

for _, dtype in ipairs{'float32', 'float64'} do
  for k, c in ipairs(FWD) do
    local name, xs, O, p = unpack(c)
    T.test(('conv2d %s %s'):format(name, dtype), function()
      local x = draw(k, dtype, unpack(xs))
      local w = draw(100 + k, dtype, O, xs[2], 3, 3)
      local y = same_bits(name, function() return mf.conv2d(x, w, 1, p) end)
      local ref, sc, shape = conv_ref(x, w, p)
      report(name, dtype, check(name, y, ref, sc, shape, RTOL[dtype]))
    end)
  end
  for k, c in ipairs(BWD) do
    local name, ls, O, p = unpack(c)
    T.test(('conv2d_backward_input %s %s'):format(name, dtype), function()
      local like = mf.zeros(unpack(ls))
      local w = draw(200 + k, dtype, O, ls[2], 3, 3)
      local gy = draw(300 + k, dtype, ls[1], O, ls[3] + 2 * p - 2, ls[4] + 2 * p - 2)
      local gx = same_bits(name, function() return mf.conv2d_backward_input(gy, w, like, 1, p) end)
      local ref, sc, shape = bwd_ref(gy, w, like, p)
      report(name, dtype, check(name, gx, ref, sc, shape, RTOL[dtype]))
    end)
  end
end

T.test('conv2d of a narrowed, transposed view of x', function()
  local base = draw(7, 'float32', 2, 18, 40, 70)
  local x = base:narrow(4, 3, 60):transpose(3, 4)  -- 2x18x60x40, not contiguous
  T.eq(x:is_contiguous(), false, 'x is a view')
  local w = draw(8, 'float32', 24, 18, 3, 3)
  local y = mf.conv2d(x, w, 1, 1)
  local ref, sc, shape = conv_ref(x, w, 1)
  check('view', y, ref, sc, shape, RTOL.float32)
end)

-- Inf and NaN in x: Winograd's transforms would turn an Inf into NaN and spread a NaN over its
-- tile; the outputs must be what the direct sum gives, the rest unchanged
T.test('conv2d with Inf and NaN in x', function()
  for _, dtype in ipairs{'float32', 'float64'} do
    local x = draw(1, dtype, 2, 17, 57, 61)
    x:set(1, 4, 11, 21, 0 / 0)     -- NaN inside
    x:set(2, 6, 1, 1, huge)        -- +Inf at a corner
    x:set(1, 8, 57, 61, -huge)     -- -Inf at the far corner
    x:set(2, 9, 30, 30, huge)      -- +Inf and -Inf side by side: NaN where a window holds both
    x:set(2, 9, 30, 31, -huge)
    local w = draw(101, dtype, 19, 17, 3, 3)
    local y = same_bits('nonfinite', function() return mf.conv2d(x, w, 1, 1) end)
    local ref, sc, shape = conv_ref(x, w, 1)
    check('nonfinite ' .. dtype, y, ref, sc, shape, RTOL[dtype])
    local yp, keep = elems(y)
    local seen = {}
    for i = 0, y:numel() - 1 do seen[class(yp[i])] = true end
    T.eq(seen.nan and seen['+inf'] and seen['-inf'] and seen.finite, true, 'every class of result present')
  end
end)

if mode == 'auto' then
  local buf = ffi.new('char[4096]')
  ffi.cdef[[long readlink(const char *path, char *buf, size_t size);]]
  local exe = ffi.string(buf, ffi.C.readlink('/proc/self/exe', buf, 4096))
  local function child(env, extra)
    local p = io.popen(('MF_CONV_WINOGRAD=%s %s %s %s 2>&1'):format(env, exe, arg[0], extra or ''))
    local out = p:read('*a')
    local ok = p:close()
    return ok, out
  end
  T.test('the shape rule takes the Winograd path (F(2x2) for float32)', function()
    local mine = digest()
    local ok, off = child('off', '--digest')
    T.eq(ok, true, 'the MF_CONV_WINOGRAD=off run: ' .. off)
    local ok2, two = child('2', '--digest')
    T.eq(ok2, true, 'the MF_CONV_WINOGRAD=2 run: ' .. two)
    local ok4, four = child('4', '--digest')
    T.eq(ok4, true, 'the MF_CONV_WINOGRAD=4 run: ' .. four)
    T.eq(mine ~= off:match('digest (%x+)'), true, 'the result differs from im2col + GEMM\'s')
    T.eq(mine ~= four:match('digest (%x+)'), true, 'the result differs from F(4x4)\'s')
    T.eq(mine, two:match('digest (%x+)'), 'the result is F(2x2)\'s')
  end)
  for _, m in ipairs{'2', '4'} do
    T.test('every case with MF_CONV_WINOGRAD=' .. m, function()
      local ok, out = child(m)
      io.write(out)
      if not ok then error('MF_CONV_WINOGRAD=' .. m .. ' run failed') end
    end)
  end
end

T.finish()
