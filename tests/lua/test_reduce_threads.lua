-- Reductions and the softmax family on inputs large enough to take their parallel paths (fixed
-- blocks of a full reduction, split output rows, split output columns): bit-identical results with
-- 1 and 2 threads on every layout (rows, outer and middle dims, transposed and narrowed views), and
-- values against float64 references computed here element by element (sums, argmax positions,
-- NaN, first of ties, softmax rows).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

local nan = 0 / 0
local same_bits = T.same_bits  -- 1 and 2 threads, the same bytes (testlib)

mf.manual_seed(7)
local X32 = mf.randn(640, 1000)                 -- 640K elements: every path goes parallel
local X64 = X32:double()
local NEAR1 = X32 * 0.001 + 1                   -- products stay finite
local X3 = mf.randn(12, 96, 250)                -- a middle dim
local XI = mf.cast(X32 * 40, 'int32')

-- each layout: a name and the input
local function layouts(x)
  return {
    {'contiguous', x},
    {'transposed', x:t()},
    {'narrowed', x:narrow(2, 3, 997)},
  }
end

T.test('reductions give the same bits with 1 and 2 threads (every layout, full and per dim)', function()
  local ops = {'sum', 'mean', 'max', 'min', 'argmax', 'argmin', 'logsumexp', 'var', 'std', 'norm'}
  for _, base in ipairs({X32, X64}) do
    for _, lay in ipairs(layouts(base)) do
      local x = lay[2]
      for _, op in ipairs(ops) do
        local what = ('%s %s %s'):format(op, base:dtype(), lay[1])
        same_bits(what .. ' (all)', function() return mf[op](x) end)
        same_bits(what .. ' dim 1', function() return mf[op](x, 1) end)
        same_bits(what .. ' dim 2', function() return mf[op](x, 2) end)
      end
      same_bits('prod ' .. lay[1], function() return mf.prod(x * 0.001 + 1, 2), mf.prod(x * 0.001 + 1, 1) end)
      same_bits('norm p = 1, 3 ' .. lay[1], function() return mf.norm(x, {p = 1}), mf.norm(x, {p = 3, dim = {2}}) end)
    end
  end
  for _, op in ipairs({'sum', 'mean', 'max', 'argmin', 'var', 'logsumexp'}) do
    same_bits(op .. ' middle dim', function() return mf[op](X3, 2), mf[op](X3, {1, 3}), mf[op](X3, 3) end)
  end
  for _, op in ipairs({'sum', 'prod', 'max', 'argmax'}) do
    same_bits(op .. ' int32', function() return mf[op](XI), mf[op](XI, 1), mf[op](XI, 2) end)
  end
  same_bits('prod (all)', function() return mf.prod(NEAR1) end)
end)

T.test('max / min over one dim (values and indices), softmax family, sum_to: same bits', function()
  for _, base in ipairs({X32, X64}) do
    for _, lay in ipairs(layouts(base)) do
      local x = lay[2]
      local what = base:dtype() .. ' ' .. lay[1]
      same_bits('max(dim) ' .. what, function()
        local v1, i1 = mf.max(x, 1)
        local v2, i2 = mf.min(x, 2)
        return v1, i1, v2, i2
      end)
      same_bits('softmax ' .. what, function() return mf.softmax(x, 2), mf.softmax(x, 1) end)
      same_bits('log_softmax ' .. what, function() return mf.log_softmax(x, 2), mf.log_softmax(x, 1) end)
      local labels = mf.softmax(x * 0.5, 2)
      same_bits('softmax_cross_entropy ' .. what, function()
        return mf.softmax_cross_entropy(x, labels, 2), mf.softmax_cross_entropy(x, labels, 1)
      end)
    end
    same_bits('sum_to ' .. base:dtype(), function() return mf.sum_to(base, mf.zeros(1, 1000)) end)
  end
  same_bits('softmax middle dim', function() return mf.softmax(X3, 2), mf.log_softmax(X3, 2) end)
end)

-- |got - want| <= bound (T.near's tolerance is relative)
local function within(got, want, bound, what)
  if not (math.abs(got - want) <= bound) then
    error(('%s: got %.17g, want %.17g (bound %g)'):format(what, got, want, bound), 2)
  end
end

-- float64 references, element by element in Lua
local function lua_sums(x)  -- x: a 2-D tensor; its total, row sums and column sums in float64
  local r, c = x:size(1), x:size(2)
  local v = x:contiguous():double():reshape(r * c):totable()
  local total, rows, cols = 0, {}, {}
  for j = 1, c do cols[j] = 0 end
  for i = 1, r do
    local s = 0
    for j = 1, c do
      local e = v[(i - 1) * c + j]
      s = s + e
      cols[j] = cols[j] + e
    end
    rows[i] = s
    total = total + s
  end
  return total, rows, cols, v
end

T.test('large sums against float64 sums (full, rows, columns, transposed)', function()
  local total, rows, cols = lua_sums(X32)
  local abs = 0
  for _, e in ipairs(X32:abs():double():reshape(640000):totable()) do abs = abs + e end
  within(mf.sum(X32):item(), total, abs * 2 ^ -24, 'full sum')            -- one float32 rounding
  within(mf.sum(X64):item(), total, abs * 1e-13, 'full sum float64')
  within(mf.mean(X32):item(), total / 640000, abs / 640000 * 2 ^ -23, 'full mean')
  local rs, cs = mf.sum(X32, 2):totable(), mf.sum(X32, 1):totable()
  for i = 1, 640, 37 do T.near(rs[i], rows[i], 1e-3, 'row sum ' .. i) end
  for j = 1, 1000, 53 do T.near(cs[j], cols[j], 1e-3, 'column sum ' .. j) end
  local ts = mf.sum(X32:t(), 1):totable()                                   -- rows of x, by x:t()'s dim 1
  for i = 1, 640, 37 do T.near(ts[i], rows[i], 1e-3, 'transposed sum ' .. i) end
  local n2 = mf.norm(X64):item()
  local sq = 0
  for _, e in ipairs(X64:reshape(640000):totable()) do sq = sq + e * e end
  T.near(n2, math.sqrt(sq), 1e-9, 'norm')
end)

T.test('argmax / max on long runs: planted extremes, first of ties, the first NaN wins', function()
  local n = 1000003                                   -- 62 blocks and a partial one
  local x = mf.zeros(n)
  x[500001] = 5; x[900001] = 5; x[77] = -3            -- ties: the first wins
  T.eq(mf.argmax(x):item(), 500001)
  T.eq(mf.max(x):item(), 5)
  T.eq(mf.argmin(x):item(), 77)
  x[n] = 6
  T.eq(mf.argmax(x):item(), n, 'the last element')
  x[700000] = nan; x[800000] = nan
  T.eq(mf.argmax(x):item(), 700000, 'the first NaN')
  T.eq(mf.argmin(x):item(), 700000, 'the first NaN (argmin)')
  T.eq(mf.max(x):item() ~= mf.max(x):item(), true, 'max is NaN')
  x[700000] = 1 / 0; x[800000] = 0
  T.eq(mf.argmax(x):item(), 700000, 'inf beats 6')
  T.eq(mf.argmax(x:double()):item(), 700000)
  -- columns (outer dim): per column the first of ties, NaN first
  local m = mf.zeros(3000, 300)
  m[{2000, 7}] = 2; m[{2500, 7}] = 2; m[{10, 8}] = nan; m[{20, 8}] = 9
  local v, i = mf.max(m, 1)
  T.eq(i[7], 2000); T.eq(v[7], 2)
  T.eq(i[8], 10); T.eq(v[8] ~= v[8], true)
  T.eq(mf.argmax(m, 1)[9], 1, 'all zeros: the first')
  T.eq(mf.argmax(m:t(), 2)[7], 2000, 'rows of a transposed view')
end)

T.test('softmax and log_softmax on long rows and columns against float64', function()
  local x = X64:narrow(1, 1, 4)
  local v = x:reshape(4000):totable()
  local function ref(row, log)
    local m = -math.huge
    for j = 1, 1000 do m = math.max(m, v[(row - 1) * 1000 + j]) end
    local s = 0
    for j = 1, 1000 do s = s + math.exp(v[(row - 1) * 1000 + j] - m) end
    return function(j)
      local z = v[(row - 1) * 1000 + j] - m
      return log and z - math.log(s) or math.exp(z) / s
    end
  end
  for _, dtype in ipairs({'float32', 'float64'}) do
    local tol = dtype == 'float32' and 1e-6 or 1e-14
    local xs = mf.cast(x, dtype)
    local sm, lsm = mf.softmax(xs, 2), mf.log_softmax(xs, 2)
    local smc = mf.softmax(xs:t():contiguous(), 1)    -- the same lines as columns
    for row = 1, 4 do
      local f, g = ref(row, false), ref(row, true)
      for j = 1, 1000, 97 do
        T.near(sm[{row, j}], f(j), tol, 'softmax ' .. dtype)
        T.near(smc[{j, row}], f(j), tol, 'softmax over dim 1 ' .. dtype)
        T.near(lsm[{row, j}], g(j), tol * 20, 'log_softmax ' .. dtype)
      end
    end
  end
end)

-- dot sums fixed blocks of 65536 elements (src/kernels/cpu/matmul.cc, dot_blocks): 300001 elements
-- are five blocks, the last partial; a column of a matrix is a strided vector
T.test('dot on several blocks: same bits with 1 and 2 threads, float64 reference', function()
  for _, dtype in ipairs({'float32', 'float64'}) do
    local a, b = mf.randn(300001, 2):cast(dtype), mf.randn(300001):cast(dtype)
    local col = mf.select(a, 2, 2)  -- stride 2
    same_bits('dot ' .. dtype, function() return mf.dot(a:select(2, 1):contiguous(), b), mf.dot(col, b) end)
    local av, cv, bv = a:select(2, 1):contiguous():totable(), col:contiguous():totable(), b:totable()
    local s1, s2, m = 0, 0, 0
    for i = 1, #bv do
      s1, s2 = s1 + av[i] * bv[i], s2 + cv[i] * bv[i]
      m = m + math.abs(av[i] * bv[i])
    end
    local tol = (dtype == 'float32' and 2 ^ -20 or 2 ^ -48) * m
    T.near(mf.dot(a:select(2, 1):contiguous(), b):item(), s1, tol, 'dot ' .. dtype)
    T.near(mf.dot(col, b):item(), s2, tol, 'dot strided ' .. dtype)
  end
end)

T.finish()
