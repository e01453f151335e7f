-- The indexing ops (gather, scatter, scatter_add, index_add, masked_fill, masked_select, nonzero)
-- against numbers recorded from PyTorch 1.13 (its 0-based indices shifted to 1-based) and
-- hand-computed values: both call spellings, views as x, index and src, integer dtypes, repeated
-- indices, errors that name the op and the offending value, and graph mode with the ops as
-- intermediates.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local function I(t) return mf.tensor(t, 'int64') end
local X = mf.tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}})

T.test('gather: PyTorch numbers, both spellings', function()
  -- torch: x.gather(0, [[1,3,0],[3,3,2]]) = [[4,11,3],[10,11,9]]
  local want = {{4, 11, 3}, {10, 11, 9}}
  local idx = I{{2, 4, 1}, {4, 4, 3}}
  T.tensor_eq(X:gather(1, idx), want)
  T.tensor_eq(mf.gather(X, idx, 1), want)
  T.tensor_eq(mf.gather(X, idx, {dim = 1}), want)
  T.tensor_eq(mf.gather(X, 1, idx), want)
  -- torch: x.gather(1, [[2,0],[1,1],[0,2],[2,2]]) = [[3,1],[5,5],[7,9],[12,12]]
  T.tensor_eq(X:gather(2, I{{3, 1}, {2, 2}, {1, 3}, {3, 3}}), {{3, 1}, {5, 5}, {7, 9}, {12, 12}})
  T.tensor_eq(X:gather(-1, I{{3, 1}, {2, 2}, {1, 3}, {3, 3}}), {{3, 1}, {5, 5}, {7, 9}, {12, 12}})
  -- torch int64: [[1,2],[3,4]].gather(1, [[1,1],[0,1]]) = [[2,2],[3,4]]
  local r = I{{1, 2}, {3, 4}}:gather(2, I{{2, 2}, {1, 2}})
  T.eq(r:dtype(), 'int64')
  T.tensor_eq(r, {{2, 2}, {3, 4}})
end)

T.test('gather on views: transposed x, narrowed and expanded index', function()
  local xt = X:t()  -- 3x4: {{1,4,7,10},{2,5,8,11},{3,6,9,12}}
  T.tensor_eq(xt:gather(2, I{{4, 1}, {2, 2}, {3, 4}}), {{10, 1}, {5, 5}, {9, 12}})
  local big = I{{9, 9, 9}, {1, 2, 3}, {3, 2, 1}}
  T.tensor_eq(X:gather(1, big:narrow(1, 2, 2)), {{1, 5, 9}, {7, 5, 3}})
  T.tensor_eq(X:gather(1, I{{4, 1, 2}}:expand(3, 3)), {{10, 2, 6}, {10, 2, 6}, {10, 2, 6}})
end)

T.test('scatter: PyTorch numbers, number src, repeats (last write wins)', function()
  -- torch: zeros(3,5).scatter(0, [[0,1,2,0,0],[2,0,0,1,2]], arange(1,11).reshape(2,5))
  local src = mf.arange(1, 11):reshape(2, 5)
  local idx = I{{1, 2, 3, 1, 1}, {3, 1, 1, 2, 3}}
  local want = {{1, 7, 8, 4, 5}, {0, 2, 0, 9, 0}, {6, 0, 3, 0, 10}}
  T.tensor_eq(mf.zeros(3, 5):scatter(1, idx, src), want)
  T.tensor_eq(mf.scatter(mf.zeros(3, 5), idx, src, 1), want)
  -- torch: zeros(2,4).scatter(1, [[1],[3]], 1.23) (float32 1.23)
  local r = mf.zeros(2, 4):scatter(2, I{{2}, {4}}, 1.23)
  T.tensor_eq(r, {{0, 1.2300000190734863, 0, 0}, {0, 0, 0, 1.2300000190734863}})
  -- repeats: column 1 gets 1 then 3 (row-major order of the index), so 3 stays
  T.tensor_eq(mf.zeros(2, 2):scatter(1, I{{1, 2}, {1, 2}, {2, 2}}, mf.tensor{{1, 2}, {3, 4}, {5, 6}}),
              {{3, 0}, {5, 6}})
  -- x is not changed (out of place)
  local x = mf.ones(2, 2)
  x:scatter(1, I{{1, 1}}, 7)
  T.tensor_eq(x, {{1, 1}, {1, 1}})
end)

T.test('scatter_add and index_add: PyTorch numbers, repeats accumulate', function()
  -- torch: ones(3,5).scatter_add(0, [[0,1,2,0,0],[0,0,0,1,2]], arange(1,11).reshape(2,5))
  local src = mf.arange(1, 11):reshape(2, 5)
  T.tensor_eq(mf.ones(3, 5):scatter_add(1, I{{1, 2, 3, 1, 1}, {1, 1, 1, 2, 3}}, src),
              {{8, 8, 9, 5, 6}, {1, 3, 1, 10, 1}, {1, 1, 4, 1, 11}})
  -- torch: ones(5,3).index_add(0, [0,4,2], [[1,2,3],[4,5,6],[7,8,9]])
  local t = mf.tensor{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
  local want = {{2, 3, 4}, {1, 1, 1}, {8, 9, 10}, {1, 1, 1}, {5, 6, 7}}
  T.tensor_eq(mf.ones(5, 3):index_add(1, I{1, 5, 3}, t), want)
  T.tensor_eq(mf.index_add(mf.ones(5, 3), I{1, 5, 3}, t, 1), want)
  -- torch: zeros(3,2).index_add(0, [1,1,0,1], [[1,2],[3,4],[5,6],[7,8]]) = [[5,6],[11,14],[0,0]]
  T.tensor_eq(mf.zeros(3, 2):index_add(1, I{2, 2, 1, 2}, mf.tensor{{1, 2}, {3, 4}, {5, 6}, {7, 8}}),
              {{5, 6}, {11, 14}, {0, 0}})
end)

T.test('scatter_add and index_add on integer dtypes and views', function()
  local x = mf.tensor({{10, 20}, {30, 40}}, 'int32')
  local r = x:scatter_add(2, I{{1, 1, 1}, {2, 1, 2}}, mf.tensor({{1, 2, 3}, {4, 5, 6}}, 'int32'))
  T.eq(r:dtype(), 'int32')
  T.tensor_eq(r, {{16, 20}, {35, 50}})
  -- src a transposed view: src = {{1,3},{2,4}}:t() = {{1,2},{3,4}}
  local src = mf.tensor({{1, 3}, {2, 4}}, 'int64'):t()
  local r2 = mf.zeros(2, 3, {dtype = 'int64'}):index_add(2, I{3, 3}, src)
  T.tensor_eq(r2, {{0, 0, 3}, {0, 0, 7}})
  -- x a narrowed view, index a slice: only the view is read
  local base = mf.arange(1, 13):reshape(3, 4)
  local xv = base:narrow(2, 2, 2)  -- {{2,3},{6,7},{10,11}}
  local idx = I{3, 0, 1, 0}:slice(1, 1, -1, 2)  -- {3, 1}
  T.tensor_eq(xv:index_add(1, idx, mf.tensor{{100, 200}, {1000, 2000}}), {{1002, 2003}, {6, 7}, {110, 211}})
  T.tensor_eq(base:narrow(1, 1, 1), {{1, 2, 3, 4}})
  -- uint8 wraps as PyTorch's does
  T.tensor_eq(mf.tensor({250}, 'uint8'):scatter_add(1, I{1, 1}, mf.tensor({3, 4}, 'uint8')), {1})
end)

T.test('masked_fill: PyTorch numbers, broadcast mask, dtypes', function()
  local a = mf.tensor{{0.5, -1, 2}, {3, 0, -4}}
  T.tensor_eq(a:masked_fill(a:gt(0), -7.5), {{-7.5, -1, -7.5}, {-7.5, 0, -4}})
  T.tensor_eq(mf.masked_fill(a, mf.tensor({1, 0, 1}, 'uint8'), 9), {{9, -1, 9}, {9, 0, 9}})
  T.tensor_eq(a:masked_fill(mf.tensor({{1}, {0}}, 'uint8'), mf.tensor(5):reshape()), {{5, 5, 5}, {3, 0, -4}})
  local nan = a:masked_fill(a:lt(0), 0 / 0):totable()
  T.eq(nan[1][2] ~= nan[1][2], true, 'NaN written')
  local i = mf.tensor({1, 2, 3}, 'int64')
  local r = i:masked_fill(mf.tensor({0, 1, 0}, 'uint8'), -5)
  T.eq(r:dtype(), 'int64')
  T.tensor_eq(r, {1, -5, 3})
  -- a fractional number among integer tensors computes in float32 (the project's number rule)
  local f = i:masked_fill(mf.tensor({0, 1, 0}, 'uint8'), 0.5)
  T.eq(f:dtype(), 'float32')
  T.tensor_eq(f, {1, 0.5, 3})
  -- x a transposed view
  T.tensor_eq(mf.tensor{{1, 2}, {3, 4}}:t():masked_fill(mf.tensor({1, 0}, 'uint8'), 0), {{0, 3}, {0, 4}})
end)

T.test('masked_select and nonzero: PyTorch numbers, views, empty results', function()
  local a = mf.tensor{{0.5, -1, 2}, {3, 0, -4}}
  -- torch: a.masked_select(a < 1) = [0.5, -1, 0, -4]
  T.tensor_eq(a:masked_select(a:lt(1)), {0.5, -1, 0, -4})
  -- torch: a.masked_select([[True],[False]]) = [0.5, -1, 2]
  T.tensor_eq(mf.masked_select(a, mf.tensor({{1}, {0}}, 'uint8')), {0.5, -1, 2})
  T.tensor_eq(a:t():masked_select(a:t():gt(0)), {0.5, 3, 2})  -- row-major order of the transposed view
  local none = a:masked_select(a:gt(100))
  T.eq(none:dim(), 1)
  T.eq(none:numel(), 0)
  -- torch: nonzero([[0,1,0],[2,0,3]]) = [[0,1],[1,0],[1,2]]
  local nz = mf.nonzero(mf.tensor{{0, 1, 0}, {2, 0, 3}})
  T.eq(nz:dtype(), 'int64')
  T.tensor_eq(nz, {{1, 2}, {2, 1}, {2, 3}})
  -- torch: nonzero of int64 [[[0,1],[1,0]],[[0,0],[1,1]]] = [[0,0,1],[0,1,0],[1,1,0],[1,1,1]]
  T.tensor_eq(mf.tensor({{{0, 1}, {1, 0}}, {{0, 0}, {1, 1}}}, 'int64'):nonzero(),
              {{1, 1, 2}, {1, 2, 1}, {2, 2, 1}, {2, 2, 2}})
  T.tensor_eq(mf.tensor({0, 0 / 0, 0, 2}):nonzero(), {{2}, {4}})  -- NaN is nonzero
  local z = mf.zeros(2, 3):nonzero()
  T.eq(z:size(1), 0)
  T.eq(z:size(2), 2)
  T.tensor_eq(mf.tensor{{0, 1}, {2, 0}}:t():nonzero(), {{1, 2}, {2, 1}})
end)

T.test('in-place forms write x (through views) and return it; index and src sharing x are read first', function()
  local x = mf.zeros(3, 5)
  local r = x:scatter_(1, I{{1, 2, 3, 1, 1}, {3, 1, 1, 2, 3}}, mf.arange(1, 11):reshape(2, 5))
  T.eq(rawequal(r, x), true, 'scatter_ returns x itself')
  T.tensor_eq(x, {{1, 7, 8, 4, 5}, {0, 2, 0, 9, 0}, {6, 0, 3, 0, 10}})
  T.tensor_eq(mf.ones(3, 5):scatter_add_(1, I{{1, 2, 3, 1, 1}, {1, 1, 1, 2, 3}}, mf.arange(1, 11):reshape(2, 5)),
              {{8, 8, 9, 5, 6}, {1, 3, 1, 10, 1}, {1, 1, 4, 1, 11}})
  -- a narrowed view is written through, the rest of its base untouched
  local base = mf.zeros(3, 4)
  base:narrow(2, 2, 2):index_add_(1, I{1, 3, 1}, mf.ones(3, 2))
  T.tensor_eq(base, {{0, 2, 2, 0}, {0, 0, 0, 0}, {0, 1, 1, 0}})
  local t = mf.tensor{{1, 2}, {3, 4}}
  t:t():masked_fill_(mf.tensor({1, 0}, 'uint8'), 0)
  T.tensor_eq(t, {{0, 0}, {3, 4}})
  -- src is x: the values before any write are scattered (a row swap), as are index_add's rows
  local s = mf.tensor{{1, 2}, {3, 4}}
  s:scatter_(1, I{{2, 2}, {1, 1}}, s)
  T.tensor_eq(s, {{3, 4}, {1, 2}})
  local a = mf.tensor{{1, 2}, {3, 4}}
  a:index_add_(1, I{2, 1}, a)
  T.tensor_eq(a, {{4, 6}, {4, 6}})
  -- the index is x itself: the checked indices are the ones used, never a value written meanwhile
  local ix = I{{2, 1}, {1, 1}}
  ix:scatter_(1, ix, 7)
  T.tensor_eq(ix, {{7, 7}, {7, 1}})
  T.errors(function() mf.zeros(1, 3):expand(2, 3):scatter_(1, I{{1, 1, 1}}, 1) end, 'scatter_', 'expanded view')
  T.errors(function() mf.zeros(2):scatter_(1, I{3}, 1) end, 'scatter: index 3', 'out of range 1..2')
  T.errors(function() mf.zeros(2, {dtype = 'int32'}):masked_fill_(mf.tensor({1, 0}, 'uint8'), 0.5) end,
    'masked_fill_: the number 0.5', 'not an integer')
end)

T.test("Torch7's spellings: maskedSelect, and maskedFill and indexAdd, which write x as in Torch7", function()
  local a = mf.tensor{{1, -2}, {-3, 4}}
  T.tensor_eq(a:maskedSelect(a:lt(0)), {-2, -3})
  T.eq(rawequal(a:maskedFill(a:lt(0), 0), a), true, 'maskedFill returns x')
  T.tensor_eq(a, {{1, 0}, {0, 4}})
  a:indexAdd(2, I{2, 2}, mf.tensor{{1, 2}, {3, 4}})
  T.tensor_eq(a, {{1, 3}, {0, 11}})
  -- Torch7's nonzero gives 1-based coordinates too, and gather/scatter take the dim first
  T.tensor_eq(a:nonzero(), {{1, 1}, {1, 2}, {2, 2}})
end)

T.test('errors name the op, the value, the dim and its size; never a crash', function()
  T.errors(function() X:gather(1, I{{5, 1, 1}}) end,
    'gather: index 5 at position [1,1] of the index is out of range 1..4 along dim 1 of x (4x3)')
  T.errors(function() X:gather(2, I{{1, 0, 1}}) end, 'gather: index 0', 'out of range 1..3 along dim 2')
  T.errors(function() X:gather(1, mf.tensor({{1, 2, 3}}, 'int32')) end, 'gather: index is int32; expected int64')
  T.errors(function() X:gather(1, I{{1, 2, 3, 4}}) end, 'gather: x is 4x3, index 1x4')
  T.errors(function() X:gather(3, I{{1, 2, 3}}) end, 'gather')
  T.errors(function() mf.zeros(3):scatter(1, I{4}, 1) end, 'scatter: index 4', 'out of range 1..3 along dim 1')
  T.errors(function() mf.zeros(3):scatter_add(1, I{1, 2}, mf.zeros(1)) end, 'scatter_add: index is 2, src 1')
  T.errors(function() mf.zeros(3, 2):index_add(1, I{1, 9}, mf.zeros(2, 2)) end,
    'index_add: index 9 at position [2] of the index is out of range 1..3 along dim 1')
  T.errors(function() mf.zeros(3, 2):index_add(1, I{1, 2}, mf.zeros(3, 2)) end, 'index_add: x is 3x2, index 2, src 3x2')
  T.errors(function() mf.zeros(3, 2):masked_fill(mf.tensor({1, 0, 1}, 'uint8'), 1) end,
    'masked_fill: x is 3x2, mask 3; the mask must broadcast to x')
  T.errors(function() mf.zeros(3, 2):masked_fill(mf.zeros(3, 2), 1) end, 'masked_fill: mask is float32; expected uint8')
  T.errors(function() mf.zeros(3, 2):masked_select(mf.tensor({1, 0, 1}, 'uint8')) end,
      'masked_select: x is 3x2, mask is 3')
  T.errors(function() mf.zeros(3, 2):masked_select(mf.zeros(3, 2)) end,
      'masked_select: mask is float32; expected uint8')
  T.errors(function() mf.nonzero(mf.ones(2), 'x') end, 'nonzero: takes x, then size and fill_value', 'argument 2 is a string')
  T.errors(function() mf.masked_select(mf.ones(2), mf.ones(2):gt(0), 2, 0, 1) end,
    'masked_select: takes x, mask, then size and fill_value', 'argument 5 is a number')
  -- size is the output's length (the count is no param of its own any more)
  T.errors(function() mf.masked_select(mf.zeros(3), mf.tensor({1, 1, 0}, 'uint8'), {count = 3}) end,
    "masked_select: unknown param 'count'", 'size, fill_value')
  T.errors(function() mf.nonzero(mf.ones(2), {size = -1}) end, 'nonzero: size is -1; expected the output\'s length')
  T.errors(function() mf.nonzero(mf.ones(2), {size = 1.5}) end, 'nonzero', 'size')
  T.errors(function() mf.masked_select(mf.ones(2):long(), mf.ones(2):gt(0), {size = 3, fill_value = 0.5}) end,
    'masked_select: fill_value 0.5 is not an integer; x is int64')
  T.errors(function() mf.masked_select(mf.ones(2):byte(), mf.ones(2):gt(0), {size = 3, fill_value = 256}) end,
    'masked_select: fill_value: value 256 does not fit uint8 (0..255)')
  T.errors(function() mf.nonzero(mf.ones(2), {size = 3, fill_value = 0.5}) end, 'nonzero', 'fill_value')
  -- after the errors the engine keeps working, and the failed calls changed nothing
  T.tensor_eq(X:gather(1, I{{4, 3, 2}}), {{10, 8, 6}})
end)

T.test('graph mode: the ops as intermediates, fed views; masked_select and nonzero without size refused', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local idx = mf.placeholder('int64', {2, 3}, 'idx')
  local g = mf.gather(x, 1, idx)                      -- 2x3
  local s = mf.scatter_add(mf.zeros_like(x), idx, g * 10, 1)
  local m = mf.masked_fill(s, mf.gt(s, 100), -1)
  local y = mf.index_add(m, mf.constant(I{1, 1}), mf.narrow(m, 1, 1, 2), 1) + 0
  local sess = mf.Session()
  local xv = mf.tensor{{1, 4, 7, 10}, {2, 5, 8, 11}, {3, 6, 9, 12}}:t()  -- a transposed view: X
  local iv = I{{9, 9, 9}, {2, 4, 1}, {4, 4, 3}}:narrow(1, 2, 2)
  local got = sess:run(y, {[x] = xv, [idx] = iv})
  -- eager, step by step
  local ge = X:gather(1, I{{2, 4, 1}, {4, 4, 3}})
  local se = mf.zeros(4, 3):scatter_add(1, I{{2, 4, 1}, {4, 4, 3}}, ge * 10)
  local me = se:masked_fill(se:gt(100), -1)
  local want = me:index_add(1, I{1, 1}, me:narrow(1, 1, 2))
  T.tensor_eq(got, want:totable())
  -- by hand: gather {{4,11,3},{10,11,9}}; scatter_add of 10 times that into zeros(4,3): row 1 {0,0,30},
  -- row 2 {40,0,0}, row 3 {0,0,90}, row 4 {100,220,0}; > 100 -> -1: row 4 {100,-1,0}; index_add adds
  -- rows 1 and 2 (both at index 1) to row 1: {0,0,30} + {0,0,30} + {40,0,0}
  T.tensor_eq(got, {{40, 0, 60}, {40, 0, 0}, {0, 0, 90}, {100, -1, 0}})
  -- the graph is built without values: a size the values decide is refused, naming the way out
  T.errors(function() mf.masked_select(x, mf.gt(x, 0)) end,
    'masked_select: on graph symbols pass the output size, mf.masked_select(x, mask, {size = n})')
  T.errors(function() mf.masked_select(X, mf.gt(x, 0)) end, 'masked_select: on graph symbols pass the output size')
  T.errors(function() mf.nonzero(x) end, 'nonzero: on graph symbols pass the output size, mf.nonzero(x, {size = n})')
  T.errors(function() mf.nonzero(x, {fill_value = -1}) end, 'nonzero: on graph symbols pass the output size')
  T.errors(function() mf.gather(x, 1, mf.placeholder('int32', {2, 3})) end, 'gather: index is int32; expected int64')
  T.errors(function() mf.gather(x, 1, mf.placeholder('int64', {2, 4})) end, 'gather: x is ?x3, index 2x4')
end)

T.test('gradient of gather through a graph, by hand', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {3, 2}, 'x')
  local w = mf.constant(mf.tensor({{1, 2}, {3, 4}, {5, 6}}, 'float64'))
  local y = mf.sum(mf.gather(x, 1, mf.constant(I{{1, 3}, {1, 1}, {2, 3}})) * w)
  local gx = mf.gradients(y, {x})[1]
  -- d/dx[i][j] sums the weights where index[.][j] = i: column 1 {1+3, 5, 0}, column 2 {4, 0, 2+6}
  T.tensor_eq(mf.Session():run(gx, {[x] = mf.zeros(3, 2, {dtype = 'float64'})}), {{4, 4}, {5, 0}, {0, 8}})
end)

T.test('masked_select has a gradient in eager autograd: PyTorch numbers, broadcast x, views, empty', function()
  local m = mf.tensor({{1, 0, 1}, {0, 1, 1}}, 'uint8')
  local x = mf.tensor({{1, 2, 3}, {4, 5, 6}}, 'float64'):requires_grad_()
  ;(x:masked_select(m) * mf.tensor({1, 2, 3, 4}, 'float64')):sum():backward()
  T.tensor_eq(x.grad, {{1, 0, 2}, {0, 3, 4}})
  -- torch: x 2x1 broadcast against the 2x3 mask has grad [[3.], [7.]]; by hand, x of 3 gets 1, 3, 2 + 4
  local xb = mf.tensor({{1}, {2}}):requires_grad_()
  ;(xb:masked_select(m) * mf.tensor{1, 2, 3, 4}):sum():backward()
  T.tensor_eq(xb.grad, {{3}, {7}})
  local xr = mf.tensor({1, 2, 3}):requires_grad_()
  ;(xr:masked_select(m) * mf.tensor{1, 2, 3, 4}):sum():backward()
  T.tensor_eq(xr.grad, {1, 3, 6})
  -- through a transposed view of a leaf: the gradient lands on the leaf's layout
  local base = mf.tensor({{1, 4}, {2, 5}, {3, 6}}, 'float64'):requires_grad_()
  ;(base:t():masked_select(m) * mf.tensor({1, 2, 3, 4}, 'float64')):sum():backward()
  T.tensor_eq(base.grad, {{1, 0}, {0, 3}, {2, 4}})
  -- nothing selected: a zero gradient
  local xe = mf.tensor{1, 2}:requires_grad_()
  xe:masked_select(mf.zeros(2):byte()):sum():backward()
  T.tensor_eq(xe.grad, {0, 0})
  -- finite differences of sum(masked_select(x, m)^2) in float64: 2x where selected
  local x0 = mf.tensor({{0.5, -1, 2}, {3, -0.25, 1.5}}, 'float64')
  local xg = x0:clone():requires_grad_()
  mf.pow(xg:masked_select(m), 2):sum():backward()
  local h = 1e-6
  for i = 1, 2 do
    for j = 1, 3 do
      local xp, xn = x0:clone(), x0:clone()
      xp[{i, j}] = x0:get(i, j) + h
      xn[{i, j}] = x0:get(i, j) - h
      local fd = (mf.pow(xp:masked_select(m), 2):sum():item() - mf.pow(xn:masked_select(m), 2):sum():item()) / (2 * h)
      T.near(xg.grad:get(i, j), fd, 1e-6, ('d/dx[%d][%d]'):format(i, j))
    end
  end
end)

T.test('help names the spellings', function()
  for op, spelling in pairs{gather = 'x:gather(dim, index)', scatter = 'x:scatter(dim, index, src)',
                            scatter_add = 'mf.scatter_add(x, index, src, dim)',
                            index_add = 'x:index_add(dim, index, src)', masked_fill = 'x:masked_fill(mask, value)',
                            masked_select = 'x:masked_select(mask[, size[, fill_value]])',
                            nonzero = 'x:nonzero([size[, fill_value]])'} do
    T.eq(mf.op_doc(op):find(spelling, 1, true) ~= nil, true, op .. ' doc names ' .. spelling)
  end
  T.eq(mf.help_text('gather'):find('Dim the index addresses', 1, true) ~= nil, true, 'help lists the dim param')
  for _, op in ipairs{'masked_select', 'nonzero'} do
    local h = mf.help_text(op)
    T.eq(h:find('size', 1, true) ~= nil and h:find('fill_value', 1, true) ~= nil, true, op .. ' help lists size, fill_value')
    T.eq(mf.op_doc(op):find('Eager only', 1, true), nil, op .. ' doc no longer says eager only')
  end
end)

T.finish()
