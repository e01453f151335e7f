-- masked_select and nonzero with a static size (issue 21; JAX's jnp.nonzero(size=, fill_value=)):
-- the output has exactly size elements (rows), the first size selected in row-major order, then
-- fill_value. Eager with size and a graph give the same values; a graph without size is refused
-- when it is built. Every expected value below is worked out by hand from the inputs.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

local NAN = 0 / 0
-- T.tensor_eq with NaN equal to NaN (a selected NaN, a NaN fill_value)
local function same(t, want, what)
  local got = t:totable()
  local function rec(g, w, path)
    if type(w) == 'table' then
      if type(g) ~= 'table' or #g ~= #w then error(('%s%s: shape differs'):format(what or 'tensor', path), 3) end
      for i = 1, #w do rec(g[i], w[i], path .. '[' .. i .. ']') end
    elseif not (g == w or (g ~= g and w ~= w)) then
      error(('%s%s: got %.17g, want %.17g'):format(what or 'tensor', path, g, w), 3)
    end
  end
  rec(got, want, '')
end

-- X: 2x4 with a zero and a NaN; X > 0 selects 5, 2 (row 1), 4, 1 (row 2): 4 elements
local X = mf.tensor{{5, -1, 0, 2}, {-3, 4, NAN, 1}}

T.test('eager with size: padding, cutting, NaN, the fill value, sizes 0 and exact', function()
  same(X:masked_select(X:gt(0), {size = 6, fill_value = -9}), {5, 2, 4, 1, -9, -9})
  same(X:masked_select(X:gt(0), {size = 6}), {5, 2, 4, 1, 0, 0})  -- fill_value defaults to 0
  same(X:masked_select(X:gt(0), {size = 2}), {5, 2})              -- the first 2 in row-major order
  same(X:masked_select(X:gt(0), {size = 4}), {5, 2, 4, 1})
  T.eq(X:masked_select(X:gt(0), {size = 0}):numel(), 0)
  T.eq(X:masked_select(X:gt(0), {size = 0}):dim(), 1)
  -- NaN ~= 0, so X:ne(0) selects it: 5, -1, 2, -3, 4, NaN, 1
  same(mf.masked_select(X, X:ne(0), {size = 8, fill_value = 7}), {5, -1, 2, -3, 4, NAN, 1, 7})
  same(mf.masked_select(X, X:lt(0), {size = 4, fill_value = NAN}), {-1, -3, NAN, NAN})
  -- nothing selected: all padding
  same(X:masked_select(X:gt(100), {size = 3, fill_value = 1.5}), {1.5, 1.5, 1.5})
  -- nonzero: (1,1) (1,2) (1,4) (2,1) (2,2) (2,3: NaN) (2,4), then rows of fill_value
  same(mf.nonzero(X, {size = 9}), {{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {0, 0}, {0, 0}})
  same(X:nonzero({size = 3, fill_value = -1}), {{1, 1}, {1, 2}, {1, 4}})
  same(X:nonzero({size = 8, fill_value = -1}), {{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {-1, -1}})
  local e = mf.zeros(3):nonzero({size = 2, fill_value = 5})
  T.eq(e:dtype(), 'int64')
  same(e, {{5}, {5}})
  -- size and fill_value as numbers after the inputs, as help() lists them
  same(X:masked_select(X:gt(0), 6, -9), {5, 2, 4, 1, -9, -9})
  same(mf.masked_select(X, X:gt(0), nil, -9), {5, 2, 4, 1})  -- fill_value alone: counted, nothing to pad
  same(X:nonzero(2, -1), {{1, 1}, {1, 2}})
  same(mf.nonzero(mf.zeros(2), 1, 3), {{3}})
  -- without size: the count, as before
  same(X:masked_select(X:gt(0)), {5, 2, 4, 1})
  T.eq(mf.nonzero(X):size(1), 7)
end)

T.test('eager with size on views: transposed, narrowed, expanded mask, broadcast x', function()
  -- X:t() is 4x2, rows {5,-3} {-1,4} {0,NaN} {2,1}: > 0 in its row-major order: 5, 4, 2, 1
  same(X:t():masked_select(X:t():gt(0), {size = 5, fill_value = -9}), {5, 4, 2, 1, -9})
  same(X:t():nonzero({size = 3}), {{1, 1}, {1, 2}, {2, 1}})
  -- columns 2..3 of X: {{-1, 0}, {4, NaN}}; ne 0 picks -1, 4, NaN
  same(X:narrow(2, 2, 2):masked_select(X:narrow(2, 2, 2):ne(0), {size = 4}), {-1, 4, NAN, 0})
  -- a mask expanded over rows (stride 0): columns 1 and 3 of both rows
  local m = mf.tensor({1, 0, 1}, 'uint8'):reshape(1, 3):expand(2, 3)
  local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  same(x:masked_select(m, {size = 3}), {1, 3, 4})
  -- x 2x1 broadcast against a 2x3 mask: row 1 gives x[1] twice, row 2 x[2] twice
  same(mf.tensor{{7}, {8}}:masked_select(m, {size = 6, fill_value = -1}), {7, 7, 8, 8, -1, -1})
end)

T.test('eager with size on integers and uint8', function()
  local i = mf.tensor({0, 7, -2, 0, 3}, 'int64')
  same(i:masked_select(i:ne(0), {size = 5, fill_value = -1}), {7, -2, 3, -1, -1})
  same(i:nonzero({size = 4, fill_value = -1}), {{2}, {3}, {5}, {-1}})
  local i32 = mf.tensor({{0, 7}, {-2, 0}}, 'int32')
  local s = i32:masked_select(i32:ne(0), {size = 3, fill_value = 9})
  T.eq(s:dtype(), 'int32')
  same(s, {7, -2, 9})
  local b = mf.tensor({0, 200, 3}, 'uint8')
  same(b:masked_select(b:gt(1), {size = 3, fill_value = 255}), {200, 3, 255})
end)

T.test('graph: masked_select with size as an intermediate, fed views, rerun with another count', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 2}, 'x')
  local sel = mf.masked_select(x, mf.gt(x, 0), {size = 5, fill_value = -9})
  T.eq(sel:size(1), 5)  -- known when the graph is built
  local y = sel * 2 + 1
  local z = mf.sum(sel)
  local sess = mf.Session()
  -- X:t(), a transposed view: sel {5, 4, 2, 1, -9}
  local yv, zv = sess:run({y, z}, {[x] = X:t()})
  same(yv, {11, 9, 5, 3, -17})
  T.eq(zv:item(), 3)
  -- rows 2..5 of a 5x2 tensor (a narrowed view), 8 positive: the first 5 are 3..7
  local B = mf.tensor{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}}:narrow(1, 2, 4)
  yv, zv = sess:run({y, z}, {[x] = B})
  same(yv, {7, 9, 11, 13, 15})
  T.eq(zv:item(), 25)
  -- nothing positive: all padding
  yv = sess:run(y, {[x] = -mf.ones(3, 2)})
  same(yv, {-17, -17, -17, -17, -17})
end)

T.test('graph: expanded mask placeholder, broadcast x, result through a product', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {2, 3}, 'x')
  local m = mf.placeholder('uint8', {2, 3}, 'm')
  local w = mf.constant(mf.tensor{1, 10, 100})
  local d = mf.sum(mf.masked_select(x, m, {size = 3}) * w)
  local mv = mf.tensor({1, 0, 1}, 'uint8'):reshape(1, 3):expand(2, 3)
  -- selected 1, 3, 4 (6 cut off): 1 + 30 + 400
  T.eq(mf.Session():run(d, {[x] = mf.tensor{{1, 2, 3}, {4, 5, 6}}, [m] = mv}):item(), 431)
  mf.reset_default_graph()
  local xb = mf.placeholder('float32', {2, 1}, 'xb')
  local sb = mf.masked_select(xb, mf.constant(mf.tensor({{1, 0, 1}, {0, 1, 1}}, 'uint8')), {size = 5})
  -- row 1 selects columns 1, 3 (x[1] twice), row 2 columns 2, 3 (x[2] twice), then the 0 padding
  same(mf.Session():run(sb, {[xb] = mf.tensor{{7}, {8}}}), {7, 7, 8, 8, 0})
end)

T.test('graph: nonzero with size as an intermediate; integer and NaN inputs', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 4}, 'x')
  local nz = mf.nonzero(x, {size = 8, fill_value = -1})
  T.eq(nz:size(1), 8)
  local f = mf.cast(nz, 'float32') * 10 + 1
  local rows = mf.sum(nz, 2)  -- int64, row + column of each
  local sess = mf.Session()
  local fv, rv = sess:run({f, rows}, {[x] = X})
  same(fv, {{11, 11}, {11, 21}, {11, 41}, {21, 11}, {21, 21}, {21, 31}, {21, 41}, {-9, -9}})
  same(rv, {2, 3, 5, 3, 4, 5, 6, -2})
  -- fill_value 1 keeps the padding a valid index: gather the selected values back, padding x[1][1]
  mf.reset_default_graph()
  local xi = mf.placeholder('int64', {5}, 'xi')
  local nzi = mf.nonzero(xi, {size = 4, fill_value = 1})
  local back = mf.gather(xi, mf.reshape(nzi, 4), 1) + 1
  local sel = mf.masked_select(xi, mf.ne(xi, 0), {size = 2}) * 3
  local bv, sv = mf.Session():run({back, sel}, {[xi] = mf.tensor({0, 7, -2, 0, 3}, 'int64')})
  T.eq(bv:dtype(), 'int64')
  same(bv, {8, -1, 4, 1})  -- x[2], x[3], x[5], then x[1] = 0 for the padding row, each + 1
  same(sv, {21, -6})
end)

T.test('eager with size gives what the graph gives', function()
  local m = X:ne(0)
  for _, size in ipairs{0, 3, 7, 10} do
    mf.reset_default_graph()
    local x = mf.placeholder('float32', {2, 4}, 'x')
    local g1 = mf.masked_select(x, mf.ne(x, 0), {size = size, fill_value = -5})
    local g2 = mf.nonzero(x, {size = size, fill_value = -5})
    local a, b = mf.Session():run({g1, g2}, {[x] = X})
    same(a, X:masked_select(m, {size = size, fill_value = -5}):totable(), 'masked_select size ' .. size)
    same(b, X:nonzero({size = size, fill_value = -5}):totable(), 'nonzero size ' .. size)
  end
end)

T.test('graph without size: an error when the graph is built, naming the way out', function()
  mf.reset_default_graph()
  local m = mf.placeholder('uint8', {2, 4}, 'm')
  T.errors(function() mf.masked_select(X, m) end, 'masked_select: on graph symbols pass the output size',
    '{size = n}', 'padded with fill_value')
  T.errors(function() mf.masked_select(X, m, {fill_value = 1}) end, 'masked_select: on graph symbols pass the output size')
  T.errors(function() mf.nonzero(mf.placeholder('float32', {3}, 'v')) end,
    'nonzero: on graph symbols pass the output size', 'rows of fill_value')
  -- shape and type rules still check at build
  T.errors(function() mf.masked_select(mf.placeholder('float32', {3, 2}), m, {size = 2}) end, 'masked_select: x is 3x2')
  T.errors(function() mf.masked_select(mf.placeholder('int64', {2, 4}), m, {size = 2, fill_value = 0.5}) end,
    'masked_select: fill_value 0.5 is not an integer; x is int64')
  T.errors(function() mf.masked_select(mf.placeholder('float32', {2, 4}), mf.placeholder('float32', {2, 4}), {size = 2}) end,
    'masked_select: mask is float32; expected uint8')
end)

T.test('gradient with size, by hand: the same in a graph and on the tape; padding sends nothing back', function()
  local m = mf.tensor({1, 0, 1}, 'uint8')  -- broadcast over rows: (1,1) (1,3) (2,1) (2,3)
  local xv = mf.tensor({{1, 2, 3}, {4, 5, 6}}, 'float64')
  local w = mf.tensor({10, 20, 30, 40, 50}, 'float64')
  for _, c in ipairs{{5, {{10, 0, 20}, {30, 0, 40}}}, {3, {{10, 0, 20}, {30, 0, 0}}}, {0, {{0, 0, 0}, {0, 0, 0}}}} do
    local size, want = c[1], c[2]
    local ws = w:narrow(1, 1, math.max(size, 1))
    mf.reset_default_graph()
    local x = mf.placeholder('float64', {2, 3}, 'x')
    local s = mf.masked_select(x, m, {size = size, fill_value = 100})
    local l = size > 0 and mf.sum(s * mf.constant(ws)) or mf.sum(s)
    same(mf.Session():run(mf.gradients(l, {x})[1], {[x] = xv}), want, 'graph size ' .. size)
    local xt = xv:clone():requires_grad_()
    local st = xt:masked_select(m, {size = size, fill_value = 100})
    ;(size > 0 and (st * ws):sum() or st:sum()):backward()
    same(xt.grad, want, 'tape size ' .. size)
  end
  -- through a transposed leaf on the tape: {{1, 4}, {2, 5}, {3, 6}}:t() is xv
  local base = mf.tensor({{1, 4}, {2, 5}, {3, 6}}, 'float64'):requires_grad_()
  ;(base:t():masked_select(m, {size = 5}) * w):sum():backward()
  same(base.grad, {{10, 30}, {0, 0}, {20, 40}})
end)

T.test('help and docs describe size and fill_value', function()
  for _, op in ipairs{'masked_select', 'nonzero'} do
    local h = mf.help_text(op)
    for _, frag in ipairs{'size', 'fill_value', 'graph'} do
      T.eq(h:find(frag, 1, true) ~= nil, true, op .. ' help names ' .. frag)
    end
  end
end)

T.finish()
