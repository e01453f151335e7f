-- matmul with one output row or column runs as a matrix-vector product (gemv, src/kernels/cpu/
-- matmul.cc): every transpose combination, operands that are views (a column of a matrix, a
-- transposed row, a narrowed block), batches that broadcast, float32 and float64, against a plain
-- Lua triple loop in double precision.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

-- op(x) as a Lua matrix: rows of numbers
local function mat(t, trans)
  local r = t:totable()
  if not trans then return r end
  local o = {}
  for i = 1, #r[1] do
    o[i] = {}
    for j = 1, #r do o[i][j] = r[j][i] end
  end
  return o
end

local function check(a, b, ta, tb, tol)
  local y = mf.matmul(a, b, ta, tb)
  local A, B = mat(a, ta), mat(b, tb)
  local m, k, n = #A, #B, #B[1]
  T.eq(#A[1], k)
  T.eq(y:size(1), m)
  T.eq(y:size(2), n)
  local Y = y:totable()
  for i = 1, m do
    for j = 1, n do
      local s = 0
      for p = 1, k do s = s + A[i][p] * B[p][j] end
      T.near(Y[i][j], s, tol * (1 + math.abs(s)))
    end
  end
end

T.test('one output column or row, every transpose combination, float32 and float64', function()
  mf.manual_seed(7)
  for _, dt in ipairs{'float32', 'float64'} do
    local tol = dt == 'float32' and 1e-5 or 1e-12
    for _, mk in ipairs{{1, 37}, {37, 1}, {1, 1}, {5, 1}, {1, 6}} do
      local m, n, k = mk[1], mk[2], 23
      for _, ta in ipairs{false, true} do
        for _, tb in ipairs{false, true} do
          local a = ta and mf.randn(k, m, {dtype = dt}) or mf.randn(m, k, {dtype = dt})
          local b = tb and mf.randn(n, k, {dtype = dt}) or mf.randn(k, n, {dtype = dt})
          check(a, b, ta, tb, tol)
        end
      end
    end
  end
end)

T.test('vector operands that are views: a column, a transposed row, a narrowed block', function()
  mf.manual_seed(8)
  local M = mf.randn(9, 11, {dtype = 'float64'})
  local col = M:narrow(2, 4, 1)              -- 9 x 1, stride 11 between elements
  local row = M:narrow(1, 3, 1)              -- 1 x 11
  check(mf.randn(5, 9, {dtype = 'float64'}), col, false, false, 1e-12)
  check(row, mf.randn(11, 6, {dtype = 'float64'}), false, false, 1e-12)
  check(mf.randn(4, 11, {dtype = 'float64'}), row, false, true, 1e-12)  -- row^T as the column
  check(col, mf.randn(9, 3, {dtype = 'float64'}), true, false, 1e-12)  -- col^T as the row
  check(M:narrow(1, 2, 6):narrow(2, 3, 5), M:narrow(2, 7, 1):narrow(1, 1, 5), false, false, 1e-12)
  check(M:t():narrow(2, 2, 4), M:narrow(1, 5, 1):narrow(2, 1, 4):t(), false, false, 1e-12)
end)

T.test('mv, dot and a batch of matrix-vector products (broadcast batch) match the loop', function()
  mf.manual_seed(9)
  local m, v = mf.randn(300, 200), mf.randn(200)
  local y, M, V = mf.mv(m, v):totable(), m:totable(), v:totable()
  for i = 1, 300 do
    local s = 0
    for p = 1, 200 do s = s + M[i][p] * V[p] end
    T.near(y[i], s, 1e-4 * (1 + math.abs(s)))
  end
  local a, b = mf.randn(1000), mf.randn(1000)
  local s, A, B = 0, a:totable(), b:totable()
  for i = 1, 1000 do s = s + A[i] * B[i] end
  T.near(mf.dot(a, b):item(), s, 1e-4 * (1 + math.abs(s)))
  local x, w = mf.randn(3, 1, 1, 7, {dtype = 'float64'}), mf.randn(2, 7, 1, {dtype = 'float64'})
  local z = mf.matmul(x, w)  -- 3 x 2 x 1 x 1: batches broadcast
  T.eq(tostring(z:size()), '3x2x1x1')
  local X, W = x:totable(), w:totable()
  for i = 1, 3 do
    for j = 1, 2 do
      local t = 0
      for p = 1, 7 do t = t + X[i][1][1][p] * W[j][p][1] end
      T.near(z:totable()[i][j][1][1], t, 1e-12)
    end
  end
end)

T.finish()
