-- The eager dispatcher's caches (lua/moonflow/ops.lua): params tables found without building their
-- text (fast_walk), the two most recent layouts checked before a signature, and the optimizers'
-- refilled params tables. Each result is compared with hand-computed values, and every refusal the
-- text path makes must still happen once the same op has cached other values.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}

T.test('params: positional, table and repeated calls give the same values', function()
  for _ = 1, 3 do  -- the first call takes the text path, the others the tree
    T.tensor_eq(mf.sum(a, 1), {5, 7, 9})
    T.tensor_eq(mf.sum(a, {dim = 2}), {6, 15})
    T.tensor_eq(mf.sum(a, 2, true), {{6}, {15}})
    T.tensor_eq(mf.sum(a, {dim = 2, keepdim = true}), {{6}, {15}})
    T.tensor_eq(mf.sum(a, -1), {6, 15})  -- negative dims count from the end
    T.tensor_eq(a:narrow(2, 2, 2), {{2, 3}, {5, 6}})
    T.tensor_eq(a:narrow(2, 1, 2), {{1, 2}, {4, 5}})
    T.tensor_eq(mf.matmul(a, a, false, true), {{14, 32}, {32, 77}})
    T.tensor_eq(mf.matmul(a, a, true, false), {{17, 22, 27}, {22, 29, 36}, {27, 36, 45}})
  end
end)

T.test('params: a string and a boolean of the same text share a record', function()
  T.tensor_eq(mf.sum(a, {dim = 1, keepdim = 'true'}), {{5, 7, 9}})
  T.tensor_eq(mf.sum(a, {dim = 1, keepdim = true}), {{5, 7, 9}})
  T.tensor_eq(mf.sum(a, {dim = 1, keepdim = 'false'}), {5, 7, 9})
end)

T.test('params: lists of different lengths and values are told apart', function()
  local v = mf.arange(1, 13)
  for _ = 1, 2 do
    T.eq(tostring(mf.reshape(v, {3, 4}):size()), '3x4', 'reshape {3, 4}')
    T.eq(tostring(mf.reshape(v, {4, 3}):size()), '4x3', 'reshape {4, 3}')
    T.eq(tostring(mf.reshape(v, 2, 6):size()), '2x6', 'reshape 2, 6')
    T.eq(tostring(mf.reshape(v, {2, 2, 3}):size()), '2x2x3', 'reshape {2, 2, 3}')
    T.eq(tostring(mf.reshape(v, {12}):size()), '12', 'reshape {12}')
    T.eq(tostring(mf.reshape(v, mf.Size{6, 2}):size()), '6x2', 'reshape Size{6, 2}')
    T.eq(mf.reshape(v, {3, 4})[{2, 1}], 5, 'reshape {3, 4} element')
    T.eq(mf.reshape(v, {4, 3})[{2, 1}], 4, 'reshape {4, 3} element')
    T.tensor_eq(mf.sum(mf.reshape(v, 2, 2, 3), {1, 2}), {22, 26, 30})
    T.tensor_eq(mf.sum(mf.reshape(v, 2, 2, 3), {2, 3}), {21, 57})
  end
end)

T.test('params: refusals still happen after other values were cached', function()
  T.tensor_eq(mf.sum(a, {dim = 1}), {5, 7, 9})
  T.errors(function() return mf.sum(a, {dim = 1, bogus = 2}) end, "sum: unknown param 'bogus'", 'dim, keepdim')
  T.errors(function() return mf.sum(a, {dim = 0 / 0}) end, "sum: param 'dim'", 'nan')
  T.errors(function() return mf.sum(a, {dim = 'x'}) end, "sum: param 'dim'", "'x'")
  T.errors(function() return mf.sum(a, 3) end, 'sum', '3')
  T.errors(function() return a:narrow(2, 3, 2) end, 'narrow')
  local x = mf.placeholder('float32', {2})
  T.errors(function() return mf.reshape(a, {6, x}) end, "reshape: param 'shape' item 2 is a graph symbol")
  -- and the cached values still work afterwards
  T.tensor_eq(mf.sum(a, {dim = 1}), {5, 7, 9})
  T.tensor_eq(a:narrow(2, 2, 2), {{2, 3}, {5, 6}})
end)

T.test('params: many distinct values stay bounded and correct', function()
  local v = mf.arange(1, 1001)
  for k = 1, 600 do T.eq(v:narrow(1, k, 1):item(), k, 'narrow at ' .. k) end
  for k = 1, 600 do T.eq(v:narrow(1, k, 2):sum():item(), 2 * k + 1, 'narrow pair at ' .. k) end
end)

T.test('layouts: alternating input layouts bind once each and compute right', function()
  local b = mf.tensor{{1, 0}, {0, 1}, {1, 1}}  -- 3x2
  local c = mf.tensor{{2}, {3}}                  -- 2x1
  local at = a:t()
  local r = {}
  local s0 = mf.eager_stats()
  for k = 1, 5 do  -- three layouts in turn: the two most recent are checked, the third by signature
    r[k] = {mf.matmul(a, b), mf.matmul(b, c), mf.matmul(at, c)}
  end
  local s1 = mf.eager_stats()
  T.eq(s1.binds - s0.binds <= 3, true, 'binds for three layouts')
  T.eq(s1.calls - s0.calls, 15, 'calls')
  for k = 1, 5 do
    T.tensor_eq(r[k][1], {{4, 5}, {10, 11}})
    T.tensor_eq(r[k][2], {{2}, {3}, {5}})
    T.tensor_eq(r[k][3], {{14}, {19}, {24}})
  end
end)

-- the cache test (mf_tensor_same_layout) tells apart what shares a shape: strides (a transpose, a
-- narrow of a wider matrix), dtype, rank; called in turn, each computes its own values
T.test('layouts: the same shape with other strides, dtype or rank is another entry', function()
  local m = mf.tensor{{1, -2, 3}, {-4, 5, -6}, {7, -8, 9}}
  local mt, m64 = m:t(), m:cast('float64')
  local nar = m:narrow(2, 2, 2)                      -- 3x2, strides (3, 1)
  local packed = mf.tensor{{-2, 3}, {5, -6}, {-8, 9}}  -- 3x2, strides (2, 1)
  local flat = m:reshape(9)
  for _ = 1, 3 do
    T.tensor_eq(mf.abs(m), {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
    T.tensor_eq(mf.abs(mt), {{1, 4, 7}, {2, 5, 8}, {3, 6, 9}})
    local a64 = mf.abs(m64)
    T.eq(a64:dtype(), 'float64')
    T.tensor_eq(a64, {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
    T.tensor_eq(mf.abs(nar), {{2, 3}, {5, 6}, {8, 9}})
    T.tensor_eq(mf.abs(packed), {{2, 3}, {5, 6}, {8, 9}})
    T.tensor_eq(mf.abs(flat), {1, 2, 3, 4, 5, 6, 7, 8, 9})
    T.tensor_eq(mf.abs(m:t():t()), {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  end
end)

T.test('optimizers: refilled params tables keep each optimizer its own values', function()
  local w1, w2 = mf.tensor{1, 2}, mf.tensor{1, 2}
  local o1 = mf.optim.SGD({w1}, {lr = 0.5, momentum = 0.5})
  local o2 = mf.optim.SGD({w2}, {lr = 0.1, momentum = 0.9, weight_decay = 0.1})
  for _ = 1, 2 do
    w1.grad, w2.grad = mf.tensor{1, 1}, mf.tensor{1, 1}
    o1:step(); o2:step()
  end
  -- PyTorch's SGD: buf = g (first step), then momentum * buf + g; w -= lr * buf; g += wd * w first
  -- o1: buf 1 -> 1.5; w 1 -> 0.5 -> -0.25, 2 -> 1.5 -> 0.75
  T.tensor_eq(w1, {-0.25, 0.75}, 1e-6)
  -- o2: g = 1 + 0.1 w: (1.1, 1.2); buf (1.1, 1.2); w (0.89, 1.88); g (1.089, 1.188)
  -- buf 0.9 * (1.1, 1.2) + g = (2.079, 2.268); w (0.89 - 0.2079, 1.88 - 0.2268)
  T.tensor_eq(w2, {0.6821, 1.6532}, 1e-6)
  local w3 = mf.tensor{1, 2}
  local o3 = mf.optim.Adam({w3}, {lr = 0.1})
  w3.grad = mf.tensor{1, -1}
  o3:step()
  -- Adam's first step moves each element by lr * sign(g) (m_hat = g, v_hat = g^2; eps 1e-8)
  T.tensor_eq(w3, {0.9, 2.1}, 1e-6)
end)

-- dim_first ops (gather, scatter, index_add, index_select ...): PyTorch's order x:op(dim, ...) and the
-- inputs-then-dim order on the positional path, a table, and the general path's refusals, in turn, so
-- each finds the records the others made
T.test('dim_first: both orders, a params table and the refusals share records', function()
  local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  local I = function(t) return mf.tensor(t, 'int64') end
  local idx = I{{3, 1}, {2, 2}}
  for round = 1, 3 do
    -- gather along dim 2: {{x[1][3], x[1][1]}, {x[2][2], x[2][2]}}; along dim 1: x[idx[i][j]][j]
    T.tensor_eq(x:gather(2, idx), {{3, 1}, {5, 5}}, nil, 'gather(2, idx) round ' .. round)
    T.tensor_eq(mf.gather(x, idx, 2), {{3, 1}, {5, 5}}, nil, 'gather(x, idx, 2)')
    T.tensor_eq(mf.gather(x, idx, {dim = 2}), {{3, 1}, {5, 5}}, nil, 'gather(x, idx, {dim = 2})')
    T.tensor_eq(x:gather(-1, idx), {{3, 1}, {5, 5}}, nil, 'gather(-1, idx)')
    T.tensor_eq(mf.gather(x, I{{2, 1, 2}}), {{4, 2, 6}}, nil, 'gather(x, idx): dim 1 by default')
    T.tensor_eq(x:gather(1, I{{2, 1, 2}}), {{4, 2, 6}}, nil, 'gather(1, idx)')
    -- scatter along dim 2 into zeros: row 1 gets 10 at 3 and 20 at 1; row 2 writes 2 twice (the last, 40, wins)
    local z = mf.zeros(2, 3)
    local src = mf.tensor{{10, 20}, {30, 40}}
    T.tensor_eq(z:scatter(2, idx, src), {{20, 0, 10}, {0, 40, 0}}, nil, 'scatter(2, idx, src)')
    T.tensor_eq(mf.scatter(z, idx, src, 2), {{20, 0, 10}, {0, 40, 0}}, nil, 'scatter(z, idx, src, 2)')
    T.tensor_eq(z:scatter_add(2, idx, src), {{20, 0, 10}, {0, 70, 0}}, nil, 'scatter_add(2, idx, src)')
    T.tensor_eq(mf.scatter_add(z, idx, src, {dim = 2}), {{20, 0, 10}, {0, 70, 0}}, nil, 'scatter_add table')
    T.tensor_eq(z, {{0, 0, 0}, {0, 0, 0}}, nil, 'z unchanged')
    local w = mf.zeros(2, 3)
    T.eq(w:scatter_add_(2, idx, src), w, 'scatter_add_ returns x')
    T.eq(mf.scatter_add_(w, idx, src, 2), w, 'mf.scatter_add_ returns x')
    T.tensor_eq(w, {{40, 0, 20}, {0, 140, 0}}, nil, 'scatter_add_ twice')
    -- index_select / index_add along dim 1 with rows {2, 1, 2}
    local rows = I{2, 1, 2}
    T.tensor_eq(x:index_select(1, rows), {{4, 5, 6}, {1, 2, 3}, {4, 5, 6}}, nil, 'index_select(1, rows)')
    T.tensor_eq(mf.index_select(x, rows, 1), {{4, 5, 6}, {1, 2, 3}, {4, 5, 6}}, nil, 'index_select(x, rows, 1)')
    local ones = mf.ones(3, 3)
    T.tensor_eq(mf.zeros(2, 3):index_add(1, rows, ones), {{1, 1, 1}, {2, 2, 2}}, nil, 'index_add(1, rows, src)')
    T.tensor_eq(mf.index_add(mf.zeros(2, 3), rows, ones, 1), {{1, 1, 1}, {2, 2, 2}}, nil, 'index_add(x, rows, src, 1)')
    -- refusals: too many arguments in either order, a missing input, a number index
    T.errors(function() x:gather(2, idx, 5) end, 'gather: too many arguments (4)', 'gather(x, dim, index)')
    T.errors(function() mf.scatter(z, idx, src, 2, 7) end, 'scatter: too many arguments (5)')
    T.errors(function() x:gather(2) end, 'gather')
    T.errors(function() mf.gather(x, idx, 0) end, 'gather')
    T.tensor_eq(mf.gather(x, 2, idx), {{3, 1}, {5, 5}}, nil, 'mf.gather(x, 2, idx) is x:gather(2, idx)')
    T.errors(function() mf.gather(x, idx, idx) end, "gather: param 'dim' is a tensor")
    T.errors(function() x:gather(2.5, idx) end, 'gather', 'dim')
  end
  -- graph symbols in PyTorch's order: the general path builds the node
  local xs = mf.placeholder('float32', {2, 3}, 'x')
  local is = mf.placeholder('int64', {2, 2}, 'i')
  local g = xs:gather(2, is)
  T.tensor_eq(mf.Session():run(g, {[xs] = x, [is] = idx}), {{3, 1}, {5, 5}}, nil, 'graph gather(2, idx)')
end)

-- the positional path takes a list's first three items, and the first three values, without a loop:
-- lists and value runs past three must still be told apart item by item, and a bad item anywhere refused
T.test('params: long lists and value runs on the positional path', function()
  local v = mf.arange(1, 25)
  for _ = 1, 3 do
    T.eq(tostring(v:reshape(1, 2, 3, 4):size()), '1x2x3x4', 'reshape(1, 2, 3, 4)')
    T.eq(tostring(v:reshape(1, 2, 4, 3):size()), '1x2x4x3', 'reshape(1, 2, 4, 3)')
    T.eq(tostring(v:reshape{1, 2, 3, 4}:size()), '1x2x3x4', 'reshape{1, 2, 3, 4}')
    T.eq(tostring(v:reshape{1, 2, 4, 3}:size()), '1x2x4x3', 'reshape{1, 2, 4, 3}')
    T.eq(tostring(v:reshape(2, 1, 3, 1, 4):size()), '2x1x3x1x4', 'reshape(2, 1, 3, 1, 4)')
    T.eq(tostring(v:reshape{2, 1, 3, 4, 1}:size()), '2x1x3x4x1', 'reshape{2, 1, 3, 4, 1}')
    T.eq(v:reshape(1, 2, 4, 3)[{1, 2, 1, 3}], 15, 'reshape(1, 2, 4, 3) element')
    T.eq(v:reshape{1, 2, 3, 4}[{1, 2, 1, 3}], 15, 'reshape{1, 2, 3, 4} element')
    T.eq(v:reshape{1, 2, 3, 4}[{1, 1, 2, 4}], 8, 'reshape{1, 2, 3, 4} element 2')
    local p = v:reshape(1, 2, 3, 4):permute(4, 3, 2, 1)
    T.eq(tostring(p:size()), '4x3x2x1', 'permute(4, 3, 2, 1)')
    T.eq(p[{2, 3, 1, 1}], 10, 'permute(4, 3, 2, 1) element')
    T.eq(tostring(v:reshape(1, 2, 3, 4):permute{2, 1, 4, 3}:size()), '2x1x4x3', 'permute{2, 1, 4, 3}')
    T.tensor_eq(a:narrow(2, 2, 2), {{2, 3}, {5, 6}})  -- three values
    T.tensor_eq(a:narrow(1, 2, 1), {{4, 5, 6}})
  end
  T.errors(function() return v:reshape(1, 2, 3, 0 / 0) end, 'reshape')
  T.errors(function() return v:reshape{1, 2, 3, 0 / 0} end, 'reshape')
  T.errors(function() return v:reshape{1, 2, 3, 4, 'x'} end, "reshape: param 'shape' item 5 is a string")
  T.errors(function() return v:reshape(1, 2, 3, 5) end, 'reshape')
  T.errors(function() return v:reshape{2, nil, 3, 4} end, 'reshape')
end)

-- concat and stack take a list of tensors and positional params on a path of their own (no adapter,
-- the list itself is the inputs); everything else reaches the general path, whose answers must not change
T.test('variadic ops: the positional path and the general one agree', function()
  local b = mf.tensor{{7, 8, 9}, {10, 11, 12}}
  local c = mf.tensor{{-1, -2, -3}, {-4, -5, -6}}
  for _ = 1, 3 do  -- the first call takes the general path, the others the tree
    T.tensor_eq(mf.concat({a, b}, 1), {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}, nil, 'concat dim 1')
    T.tensor_eq(mf.concat({a, b}, 2), {{1, 2, 3, 7, 8, 9}, {4, 5, 6, 10, 11, 12}}, nil, 'concat dim 2')
    T.tensor_eq(mf.concat({a, b}), {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}, nil, 'concat default dim')
    T.tensor_eq(mf.concat({a, b}, -1), {{1, 2, 3, 7, 8, 9}, {4, 5, 6, 10, 11, 12}}, nil, 'concat dim -1')
    T.tensor_eq(mf.concat({a, b}, {dim = 2}), {{1, 2, 3, 7, 8, 9}, {4, 5, 6, 10, 11, 12}}, nil, 'concat {dim = 2}')
    T.tensor_eq(mf.concat({a}, 2), {{1, 2, 3}, {4, 5, 6}}, nil, 'concat of one')
    T.tensor_eq(mf.concat({a, b, c}, 2), {{1, 2, 3, 7, 8, 9, -1, -2, -3}, {4, 5, 6, 10, 11, 12, -4, -5, -6}}, nil,
      'concat of three')
    T.tensor_eq(mf.concat({a:t(), b:t()}, 2), {{1, 4, 7, 10}, {2, 5, 8, 11}, {3, 6, 9, 12}}, nil, 'concat of views')
    T.tensor_eq(mf.stack({a, b}, 1), {{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}}}, nil, 'stack dim 1')
    T.tensor_eq(mf.stack({a, b}, 3), {{{1, 7}, {2, 8}, {3, 9}}, {{4, 10}, {5, 11}, {6, 12}}}, nil, 'stack dim 3')
    T.tensor_eq(mf.stack({a, b, c}, 2), {{{1, 2, 3}, {7, 8, 9}, {-1, -2, -3}}, {{4, 5, 6}, {10, 11, 12}, {-4, -5, -6}}},
      nil, 'stack of three')
    T.tensor_eq(mf.stack({a:t(), b:t()}), {{{1, 4}, {2, 5}, {3, 6}}, {{7, 10}, {8, 11}, {9, 12}}}, nil, 'stack of views')
  end
  -- the same layout with other data: a bound entry re-points its inputs (stack's headers too)
  T.tensor_eq(mf.stack({b, a}, 1), {{{7, 8, 9}, {10, 11, 12}}, {{1, 2, 3}, {4, 5, 6}}}, nil, 'stack, inputs swapped')
  T.tensor_eq(mf.concat({c, a}, 2), {{-1, -2, -3, 1, 2, 3}, {-4, -5, -6, 4, 5, 6}}, nil, 'concat, other inputs')
  -- what only the general path takes, or refuses, after the tree has values cached
  T.errors(function() return mf.concat({a, nil, b}, 1) end, 'concat: item 2 of the list of tensors is nil')
  T.errors(function() return mf.concat({}, 1) end, 'concat: needs at least one tensor')
  T.errors(function() return mf.concat(a, 1) end, 'concat: expected a list of tensors')
  T.errors(function() return mf.concat({a, b}, 3) end, 'concat')
  T.errors(function() return mf.concat({a, b}, 1, 2) end, 'concat: too many arguments')
  T.errors(function() return mf.concat({a, b}, 0 / 0) end, "concat: param 'dim'")
  T.errors(function() return mf.concat({a, b}, a) end, "concat: param 'dim' is a tensor")
  T.errors(function() return mf.concat({a, b}, 1, nil, nil, nil, nil, 1) end, 'concat: too many arguments')
  -- inputs with autograd state: the tape keeps its own copy of the inputs, not the caller's list
  local ga, gb = mf.tensor({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true}), mf.tensor({{0, 0, 0}, {0, 0, 0}}, {requires_grad = true})
  local w = mf.tensor{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}}
  for _ = 1, 2 do
    ga.grad, gb.grad = nil, nil
    local list = {ga, gb}
    local y = mf.concat(list, 2)
    list[1], list[2] = nil, nil
    mf.sum(y * w):backward()
    T.tensor_eq(ga.grad, {{1, 2, 3}, {7, 8, 9}}, nil, 'concat: gradient of input 1')
    T.tensor_eq(gb.grad, {{4, 5, 6}, {10, 11, 12}}, nil, 'concat: gradient of input 2')
    ga.grad, gb.grad = nil, nil
    mf.sum(mf.stack({ga, gb}, 3) * mf.tensor{1, 10}):backward()
    T.tensor_eq(gb.grad, {{10, 10, 10}, {10, 10, 10}}, nil, 'stack: gradient of input 2')
  end
  -- a parameter (a holder) and graph symbols in the list: the general path's
  T.tensor_eq(mf.concat({mf.nn.Parameter(a), b}, 1), {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}}, nil,
    'concat of a parameter and a tensor')
  local xs, ys = mf.placeholder('float32', {2, 3}, 'x'), mf.placeholder('float32', {2, 3}, 'y')
  T.tensor_eq(mf.Session():run(mf.stack({xs, ys}, 3), {[xs] = a, [ys] = b}),
    {{{1, 7}, {2, 8}, {3, 9}}, {{4, 10}, {5, 11}, {6, 12}}}, nil, 'graph stack')
  T.tensor_eq(mf.concat({a, b}, 2), {{1, 2, 3, 7, 8, 9}, {4, 5, 6, 10, 11, 12}}, nil, 'concat dim 2 at the end')
end)

T.test('allocator: more scalars than one slab holds, freed and reused', function()
  mf.empty_cache()
  local base = mf.memory_stats().in_use
  local keep = {}
  for i = 1, 6000 do keep[i] = mf.tensor(i) end  -- 6000 single blocks: two slabs
  T.eq(keep[4097]:item(), 4097, 'a scalar in the second slab')
  T.eq(mf.memory_stats().in_use - base >= 6000 * 256, true, 'in use while held')
  keep = nil
  mf.empty_cache()
  T.eq(mf.memory_stats().in_use, base, 'in use after the scalars are freed')
  local again = {}
  for i = 1, 6000 do again[i] = mf.tensor(-i) end
  T.eq(again[5000]:item(), -5000, 'a reused block')
end)

T.finish()
