-- Values as PyTorch (1.13) defines them, against hand-computed numbers: NaN through activations,
-- clamps, extremes and pooling (eager, graph, fused and unfused); the promotion of Lua numbers
-- among integer tensors; integer sums and products in int64.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local nan, inf = 0 / 0, math.huge
local function isnan(x) return x ~= x end

-- t's elements (flattened, row-major) against want, NaN matching NaN; and its dtype
local function check(t, want, dtype, what)
  what = what or 'tensor'
  if dtype then T.eq(t:dtype(), dtype, what .. ' dtype') end
  local flat = t:contiguous():reshape(t:numel()):totable()
  T.eq(#flat, #want, what .. ' numel')
  for i = 1, #want do
    local g, w = flat[i], want[i]
    if not ((isnan(w) and isnan(g)) or g == w) then
      error(('%s[%d]: got %s, want %s'):format(what, i, tostring(g), tostring(w)), 2)
    end
  end
end

-- the issue's three examples -----------------------------------------------------------------------
T.test('issue 19: relu(NaN), where with numbers, counting matches', function()
  check(mf.relu(mf.tensor{nan, -1, 2}), {nan, 0, 2}, 'float32', 'relu')
  local mask = mf.gt(mf.tensor{1, -1, 3}, 0)
  check(mf.where(mask, 0.5, -0.5), {0.5, -0.5, 0.5}, 'float32', 'where(mask, 0.5, -0.5)')
  local a = mf.ones(1000)
  local s = mf.eq(a, a):sum()
  T.eq(s:dtype(), 'int64'); T.eq(s:item(), 1000)
end)

-- NaN ------------------------------------------------------------------------------------------------
T.test('NaN through pointwise ops, as PyTorch', function()
  local x = mf.tensor{nan, -2, 0, 3}
  check(mf.relu(x), {nan, 0, 0, 3}, nil, 'relu')
  check(mf.leaky_relu(x, 0.5), {nan, -1, 0, 3}, nil, 'leaky_relu')
  check(mf.gelu(mf.tensor{nan}), {nan}, nil, 'gelu')
  check(mf.clamp(x, -1, 1), {nan, -1, 0, 1}, nil, 'clamp')
  check(mf.clamp(x, nan, 1), {nan, nan, nan, nan}, nil, 'clamp with a NaN min')  -- PyTorch: all NaN
  check(mf.clamp(x, {max = nan}), {nan, nan, nan, nan}, nil, 'clamp with a NaN max')
  check(mf.maximum(x, mf.tensor{1, nan, -1, 5}), {nan, nan, 0, 5}, nil, 'maximum')
  check(mf.minimum(mf.tensor{1, nan, -1, 5}, x), {nan, nan, -1, 3}, nil, 'minimum')
  check(mf.maximum(x, 0), {nan, 0, 0, 3}, nil, 'maximum with a number')
  -- sign: NumPy's rule (PyTorch 1.13 gives 0 for NaN, its open bug pytorch#41245)
  check(mf.sign(mf.tensor{nan, -inf, -0.5, 0, 2}), {nan, -1, -1, 0, 1}, nil, 'sign')
  check(mf.relu(mf.tensor({nan, -1}, 'float64')), {nan, 0}, 'float64', 'relu float64')
  -- long enough for the dense and threaded loops
  local big = mf.full({70000}, nan)
  T.eq(mf.relu(big):ne(mf.relu(big)):sum():item(), 70000, 'relu of 70000 NaNs are NaN')
end)

T.test('NaN wins max and min; argmax and argmin point at the first NaN', function()
  local x = mf.tensor{{1, nan, 3, nan}, {4, 2, 8, 6}}
  check(mf.max(x, 2), {nan, 8}, 'float32', 'max')
  check(mf.min(x, 2), {nan, 2}, 'float32', 'min')
  check(mf.argmax(x, 2), {2, 3}, 'int64', 'argmax')
  check(mf.argmin(x, 2), {2, 2}, 'int64', 'argmin')
  T.eq(mf.argmax(x):item(), 2, 'argmax over all')
  if not isnan(mf.max(x):item()) then error('max over all is not NaN') end
  check(mf.max(x, 1), {4, nan, 8, nan}, nil, 'max along dim 1')
  check(mf.argmin(x, 1), {1, 1, 1, 1}, nil, 'argmin along dim 1: NaN in row 1 first')
end)

T.test('max_pool2d: a window holding NaN gives NaN, and its gradient goes to the NaN', function()
  -- 1x1x2x4: windows {1, nan; 5, 2} and {3, 4; 0, 7}
  local x = mf.tensor{{{{1, nan, 3, 4}, {5, 2, 0, 7}}}}
  check(mf.max_pool2d(x, 2), {nan, 7}, nil, 'max_pool2d')
  local gx = mf.max_pool2d_backward(mf.tensor{{{{10, 20}}}}, x, {kernel_size = 2})
  check(gx, {0, 10, 0, 0, 0, 0, 0, 20}, nil, 'max_pool2d_backward')
  -- overlapping 3x3 windows (stride 1, padding 1) over 3x3 with NaN in the centre: all NaN
  local y = mf.max_pool2d(mf.tensor{{{{1, 2, 3}, {4, nan, 6}, {7, 8, 9}}}}, 3, 1, 1)
  check(y, {nan, nan, nan, nan, nan, nan, nan, nan, nan}, nil, 'overlapping windows')
end)

T.test('graph mode: relu of NaN fused and unfused agree, and its gradient passes NaN positions', function()
  local x = mf.placeholder('float32', {4}, 'x')
  local y = mf.relu(x * 2 + 1)
  local g = mf.gradients(mf.sum(y), {x})[1]
  local feed = mf.tensor{nan, -3, 1, 0.5}
  for _, fuse in ipairs{true, false} do
    local sess = mf.Session{fuse = fuse}
    local yv, gv = sess:run({y, g}, {[x] = feed})
    check(yv, {nan, 0, 3, 2}, 'float32', 'relu (fuse ' .. tostring(fuse) .. ')')
    -- PyTorch's threshold_backward: 0 where relu's result <= 0, so NaN passes the gradient (2)
    check(gv, {2, 0, 2, 2}, 'float32', 'gradient (fuse ' .. tostring(fuse) .. ')')
  end
end)

T.test('gradients: max/min share among NaNs; maximum/minimum split ties, NaN feeds both', function()
  local x = mf.placeholder('float64', {4}, 'x')
  local b = mf.placeholder('float64', {4}, 'b')
  local gmax = mf.gradients(mf.max(x), {x})[1]
  local gmx = mf.gradients(mf.sum(mf.maximum(x, b)), {x, b})
  local gmn = mf.gradients(mf.sum(mf.minimum(x, b)), {x, b})
  local sess = mf.Session()
  local xv, bv = mf.tensor({1, nan, 3, nan}, 'float64'), mf.tensor({1, 0, 4, 2}, 'float64')
  -- PyTorch's evenly_distribute_backward: a NaN max sends the gradient to the NaNs, evenly
  check(sess:run(gmax, {[x] = xv}), {0, 0.5, 0, 0.5}, 'float64', 'max gradient')
  check(sess:run(gmax, {[x] = mf.tensor({1, 3, 3, 2}, 'float64')}), {0, 0.5, 0.5, 0}, nil, 'max gradient, tie')
  local ga, gb = sess:run({gmx[1], gmx[2]}, {[x] = xv, [b] = bv})
  check(ga, {0.5, 1, 0, 1}, nil, 'maximum: a'); check(gb, {0.5, 1, 1, 1}, nil, 'maximum: b')
  ga, gb = sess:run({gmn[1], gmn[2]}, {[x] = xv, [b] = bv})
  check(ga, {0.5, 1, 1, 1}, nil, 'minimum: a'); check(gb, {0.5, 1, 0, 1}, nil, 'minimum: b')
end)

-- numbers among integer tensors --------------------------------------------------------------------
T.test('a fractional number promotes integer operands to float32 (PyTorch)', function()
  local i64 = mf.tensor({1, 2}, 'int64')
  check(i64 + 0.5, {1.5, 2.5}, 'float32', 'int64 + 0.5')
  check(0.5 + mf.tensor({1, 2}, 'int32'), {1.5, 2.5}, 'float32', '0.5 + int32')
  check(mf.tensor({1, 2}, 'uint8') * 1.5, {1.5, 3}, 'float32', 'uint8 * 1.5')
  check(i64 - 0.25, {0.75, 1.75}, 'float32', 'int64 - 0.25')
  check(i64 / 0.5, {2, 4}, 'float32', 'int64 / 0.5')
  check(mf.pow(mf.tensor({4, 9}, 'int64'), 0.5), {2, 3}, 'float32', 'int64 ^ 0.5')
  check(mf.maximum(i64, 1.5), {1.5, 2}, 'float32', 'maximum(int64, 1.5)')
  check(i64 + nan, {nan, nan}, 'float32', 'int64 + NaN')
  check(i64 + inf, {inf, inf}, 'float32', 'int64 + inf')
  -- an integral number keeps the tensor's dtype; integer division truncates (documented)
  check(i64 * 2, {2, 4}, 'int64', 'int64 * 2')
  check(mf.tensor({7, -7}, 'int32') / 2, {3, -3}, 'int32', 'int32 / 2')
  check(mf.tensor({1.5}) + 1, {2.5}, 'float32', 'float32 + 1')
  check(mf.tensor({1.5}, 'float64') + 0.1, {1.6}, 'float64', 'float64 + 0.1')
end)

T.test('int64 beyond 2^53 keeps its low bits through abs, neg, clamp, square, relu, floor ...', function()
  -- these computed through a double: abs(2^53 + 1) was 2^53; square wraps as PyTorch's (2^53+1)^2 mod 2^64
  local function bits(t) local o, c = {}, t:contiguous(); for i = 0, c:numel() - 1 do o[#o + 1] = tostring(c:data()[i]) end return table.concat(o, ' ') end
  local x = mf.tensor({2 ^ 53, -2 ^ 53, 5}, 'int64') + mf.tensor({1, -1, 0}, 'int64')
  T.eq(bits(x:abs()), '9007199254740993LL 9007199254740993LL 5LL', 'abs')
  T.eq(bits(-x), '-9007199254740993LL 9007199254740993LL -5LL', 'neg')
  T.eq(bits(x:clamp(0, 2 ^ 62)), '9007199254740993LL 0LL 5LL', 'clamp')
  T.eq(bits(x:clamp(-2 ^ 53)), '9007199254740993LL -9007199254740992LL 5LL', 'clamp min only')
  T.eq(bits(x:relu()), '9007199254740993LL 0LL 5LL', 'relu')
  for _, op in ipairs{'floor', 'ceil', 'round'} do T.eq(bits(x[op](x)), bits(x), op) end
  T.eq(bits(x:narrow(1, 1, 1):square()), '18014398509481985LL', 'square wraps')
  T.eq(bits(mf.tensor({2 ^ 27}, 'int64'):add(1):square()), '18014398777917441LL', 'square exact')
  check(mf.tensor({-5, 300}, 'int32'):square(), {25, 90000}, 'int32', 'int32 square')
  check(mf.tensor({200, 3}, 'uint8'):clamp(-1, 100), {100, 3}, 'uint8', 'uint8 clamp with a bound below 0')
  -- and print shows them: through a double it showed 9007199254740992
  T.eq(tostring(x), '  9007199254740993  -9007199254740993                  5\n[int64 tensor of size 3]', 'print')
  T.eq(tostring(x:narrow(1, 2, 1):reshape({})), '-9007199254740993\n[int64 tensor of size scalar]', 'print 0-dim')
end)

T.test('integer pow is exact, wraps on overflow and truncates negative powers (PyTorch powi)', function()
  -- torch.pow of the same int tensors (through double, 10^30 and 0^-1 became INT64_MIN)
  check(mf.pow(mf.tensor({2, 0, 1, -1, -1, 3, 5}, 'int64'), mf.tensor({-1, -1, -5, -3, -2, 0, 3}, 'int64')),
        {0, 0, 1, -1, 1, 1, 125}, 'int64', 'negative powers')
  T.eq(tostring(mf.pow(mf.tensor({10}, 'int64'), 30):data()[0]), '5076944270305263616LL', '10^30 wraps')
  check(mf.pow(mf.tensor({3}, 'int32'), 25), {1180052131}, 'int32', '3^25 wraps in int32')
  check(mf.pow(mf.tensor({200}, 'uint8'), 2), {64}, 'uint8', '200^2 wraps in uint8')
  check(mf.pow(mf.tensor({-3, 7}, 'int32'), mf.tensor({3, 2}, 'int32')), {-27, 49}, 'int32', 'odd and even powers')
  -- (2^27 + 1)^2 = 2^54 + 2^28 + 1: a double would round off the 1
  T.eq(tostring(mf.pow(mf.tensor({2 ^ 27 + 1}, 'int64'), 2):data()[0]), '18014398777917441LL', 'past 2^53 exactly')
end)

T.test('comparisons of integer tensors with fractional numbers', function()
  local x = mf.tensor({0, 1, 2}, 'int64')
  check(mf.lt(x, 1.5), {1, 1, 0}, 'uint8', 'lt 1.5')
  check(mf.le(x, 1.5), {1, 1, 0}, 'uint8', 'le 1.5')
  check(mf.gt(x, 1.5), {0, 0, 1}, 'uint8', 'gt 1.5')
  check(mf.ge(x, 0.5), {0, 1, 1}, 'uint8', 'ge 0.5')
  check(mf.eq(x, 1.5), {0, 0, 0}, 'uint8', 'eq 1.5')
  check(mf.ne(x, 1.5), {1, 1, 1}, 'uint8', 'ne 1.5')
  check(mf.lt(x, nan), {0, 0, 0}, 'uint8', 'lt NaN')
  check(mf.lt(-0.5, x), {1, 1, 1}, 'uint8', '-0.5 lt x')
  check(mf.eq(x, 1), {0, 1, 0}, 'uint8', 'eq 1')
end)

T.test('where: a uint8 mask never decides the dtype of numbers', function()
  local mask = mf.tensor({1, 0, 1}, 'uint8')
  check(mf.where(mask, 0.5, -0.5), {0.5, -0.5, 0.5}, 'float32', 'two numbers')
  check(mf.where(mask, 3, -2), {3, -2, 3}, 'float32', 'two integral numbers: the default dtype')
  check(mf.where(mask, mf.tensor({7, 8, 9}, 'int64'), 0.5), {7, 0.5, 9}, 'float32', 'int64 tensor and 0.5')
  check(mf.where(mask, nan, mf.tensor({7, 8, 9}, 'int32')), {nan, 8, nan}, 'float32', 'NaN and int32 tensor')
  check(mf.where(mask, mf.tensor({7, 8, 9}, 'int64'), 0), {7, 0, 9}, 'int64', 'int64 tensor and 0')
  check(mf.where(mask, mf.tensor({1, 2, 3}, 'float64'), 0.1), {1, 0.1, 3}, 'float64', 'float64 tensor and 0.1')
  check(mf.where(mask, mf.tensor({1, 2, 3}, 'uint8'), 2), {1, 2, 3}, 'uint8', 'uint8 values and 2')
end)

T.test('numbers that do not fit an integer dtype, and mixed tensor dtypes, are errors', function()
  T.errors(function() local _ = mf.tensor({1}, 'uint8') + 300 end, 'add: the number 300', 'does not fit uint8', '0..255')
  T.errors(function() local _ = mf.tensor({1}, 'uint8') - -1 end, 'sub: the number -1', 'does not fit uint8')
  T.errors(function() local _ = mf.tensor({1}, 'int32') * 2 ^ 31 end, 'mul: the number 2147483648', 'does not fit int32')
  T.errors(function() local _ = mf.tensor({1}, 'int64') + 2 ^ 63 end, 'does not fit int64', '-2^63..2^63-1')
  -- an op writing an integer input in place writes it, never a float32 copy: a fractional number is
  -- an error there, and the variable keeps its values
  local v = mf.tensor({1, 2}, 'int64')
  T.errors(function() mf.assign_add(v, 0.5) end, 'assign_add: the number 0.5', 'is not an integer', 'int64')
  T.errors(function() mf.assign(v, 0 / 0) end, 'assign: the number', 'is not an integer')
  check(v, {1, 2}, 'int64', 'variable after refused writes')
  mf.assign_add(v, 2)
  check(v, {3, 4}, 'int64', 'assign_add 2')
  -- tensors of two dtypes: an error naming both (no silent conversion)
  T.errors(function() local _ = mf.tensor({1}, 'int64') + mf.tensor({1}) end, 'add', 'int64', 'float32', 'expected one dtype')
  T.errors(function() local _ = mf.where(mf.tensor({1}, 'uint8'), mf.tensor({1}, 'int64'), mf.tensor({0.5})) end,
    'where', 'int64', 'float32')
  T.errors(function() local _ = mf.clamp(mf.tensor({1, 5}, 'int64'), 0.5, 3) end, 'clamp: x is int64 and bound 0.5 is not an integer')
end)

T.test('graph mode promotes numbers as eager calls do', function()
  local x = mf.placeholder('int64', {2}, 'x')
  local y, c = x + 0.5, mf.lt(x, 1.5)
  T.eq(y:dtype(), 'float32', 'symbol dtype at build time')
  local mask = mf.placeholder('uint8', {2}, 'mask')
  local w = mf.where(mask, 0.5, -0.5)
  T.eq(w:dtype(), 'float32', 'where symbol dtype')
  local s = mf.sum(mf.eq(x, x))
  T.eq(s:dtype(), 'int64', 'sum of uint8 symbol dtype')
  local sess = mf.Session()
  local yv, cv, wv, sv = sess:run({y, c, w, s}, {[x] = mf.tensor({1, 2}, 'int64'), [mask] = mf.tensor({0, 1}, 'uint8')})
  check(yv, {1.5, 2.5}, 'float32', 'x + 0.5')
  check(cv, {1, 0}, 'uint8', 'x < 1.5')
  check(wv, {-0.5, 0.5}, 'float32', 'where')
  check(sv, {2}, 'int64', 'sum')
  T.errors(function() local _ = mf.placeholder('uint8', {2}) + 256 end, 'the number 256', 'does not fit uint8')
end)

-- integer reductions ---------------------------------------------------------------------------------
T.test('integer sums and products are int64 and do not wrap in the input dtype', function()
  local ones = mf.ones(1000, {dtype = 'uint8'})
  local s = ones:sum()
  T.eq(s:dtype(), 'int64'); T.eq(s:item(), 1000, '1000 uint8 ones')
  local big = mf.full({4}, 2 ^ 30, {dtype = 'int32'})  -- 4 * 2^30 = 2^32
  T.eq(big:sum():item(), 2 ^ 32, 'int32 sum past 2^31')
  check(mf.full({2, 3}, 2 ^ 30, {dtype = 'int32'}):sum(2), {3 * 2 ^ 30, 3 * 2 ^ 30}, 'int64', 'int32 sum along dim 2')
  check(mf.full({2, 3}, 200, {dtype = 'uint8'}):sum(1, true), {400, 400, 400}, 'int64', 'uint8 sum keepdim')
  T.eq(mf.full({40}, 2, {dtype = 'int32'}):prod():item(), 2 ^ 40, 'int32 product 2^40')
  local p = mf.full({3}, 200, {dtype = 'uint8'}):prod()
  T.eq(p:dtype(), 'int64'); T.eq(p:item(), 8e6, 'uint8 product 200^3')
  check(mf.tensor({{-3, 4}, {5, -6}}, 'int64'):prod(2), {-12, -30}, 'int64', 'int64 prod along dim 2')
  -- int64 itself wraps two's complement, as PyTorch: 4 * 2^62 = 2^64 = 0 (no UB: unsigned sums)
  T.eq(mf.full({4}, 2 ^ 62, {dtype = 'int64'}):sum():item(), 0, 'int64 wraps')
  -- floats keep their dtype
  T.eq(mf.ones(3):sum():dtype(), 'float32'); T.eq(mf.ones(3, {dtype = 'float64'}):prod():dtype(), 'float64')
  -- PyTorch's mean refuses integers
  T.errors(function() local _ = mf.tensor({1, 2}, 'int64'):mean() end, 'mean', 'int64', 'expected float32 or float64')
  T.errors(function() local _ = mf.ones(3, {dtype = 'uint8'}):mean() end, 'mean', 'uint8')
end)

T.test('float sums still carry their gradients', function()
  local x = mf.placeholder('float32', {2, 3}, 'x')
  local g = mf.gradients(mf.sum(mf.sum(x, 2) * mf.tensor{1, 2}), {x})[1]
  local gp = mf.gradients(mf.prod(x), {x})[1]
  local sess = mf.Session()
  local xv = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  check(sess:run(g, {[x] = xv}), {1, 1, 1, 2, 2, 2}, 'float32', 'sum gradient')
  check(sess:run(gp, {[x] = xv}), {720, 360, 240, 180, 144, 120}, 'float32', 'prod gradient')
end)

T.test('floor, ceil and round at the edges: halves, -0, 2^23 and 2^52 neighbours, inf, NaN (float32 and float64)', function()
  -- the CPU loops compute floor and ceil through nearbyint (issue 12); the reference is Lua's own
  -- math.floor / math.ceil on the same double, and the sign of a zero is read through 1 / x
  local vals = {0, -0.0, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 1, -1, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5,
    8388607.5, -8388607.5, 8388608, 8388609, 2 ^ 52 - 0.5, -(2 ^ 52 - 0.5), 2 ^ 52 + 1, 1e-40, -1e-40,
    1e300, -1e300, inf, -inf, nan}
  local function half_even(v)
    local f = math.floor(v)
    if v == f then return v end  -- (v + 0.5 rounds beyond 2^52)
    if v - f ~= 0.5 then return math.floor(v + 0.5) end
    return f % 2 == 0 and f or f + 1
  end
  local refs = {
    floor = math.floor,
    ceil = function(v) local c = math.ceil(v) if c == 0 and (v < 0 or 1 / v < 0) then return -0.0 end return c end,
    round = function(v)
      if v ~= v or v == inf or v == -inf then return v end
      local r = half_even(v)
      if r == 0 and (v < 0 or 1 / v < 0) then return -0.0 end
      return r
    end,
  }
  for _, dt in ipairs{'float32', 'float64'} do
    -- 33 copies side by side: runs longer than a vector, and a strided view (every other column)
    local rows = {}
    for i, v in ipairs(vals) do rows[i] = {} for j = 1, 33 do rows[i][j] = v end end
    local x = mf.tensor(rows, dt)
    local exact = mf.tensor(vals, 'float64'):cast(dt):totable()  -- the values as dt holds them
    for op, ref in pairs(refs) do
      for _, form in ipairs{'contiguous', 'strided'} do
        local y = form == 'contiguous' and mf[op](x) or mf[op](mf.slice(x, 2, 1, 33, 2))
        local got = y:contiguous():totable()
        for i, v in ipairs(exact) do
          local w = v ~= v and v or ref(v)
          for j = 1, #got[i] do
            local g = got[i][j]
            local same = (w ~= w and g ~= g) or (g == w and (g ~= 0 or 1 / g == 1 / w))
            if not same then
              error(('%s %s %s(%.17g) at column %d: got %.17g, want %.17g'):format(dt, form, op, v, j, g, w))
            end
          end
        end
      end
    end
  end
end)

T.finish()
