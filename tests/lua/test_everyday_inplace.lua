-- The everyday in-place API (issue 21): add_ sub_ mul_ div_ fill_ zero_ clamp_ uniform_ normal_
-- copy_ (x written and returned), add/sub with alpha, the factories empty/full_like/rand_like/
-- randn_like, mf.Tensor(...), t:apply / t:map, t[{i, j}] reads and writes, and the size object.
-- Expected values are hand-computed (PyTorch 1.13 gives the same: torch.add(x, y, alpha=a) is
-- x + a * y; the destination of an in-place op keeps its shape).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local nan = 0 / 0

-- in-place arithmetic ---------------------------------------------------------------------------
T.test('add_ sub_ mul_ div_ write x and return x itself', function()
  local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  local r = x:add_(mf.tensor{10, 20, 30})
  T.eq(rawequal(r, x), true, 'add_ returns x')
  T.tensor_eq(x, {{11, 22, 33}, {14, 25, 36}})
  T.tensor_eq(x:sub_(1), {{10, 21, 32}, {13, 24, 35}})
  T.tensor_eq(x:mul_(mf.tensor{{2}, {-1}}), {{20, 42, 64}, {-13, -24, -35}})
  T.tensor_eq(x:div_(4), {{5, 10.5, 16}, {-3.25, -6, -8.75}})
  T.tensor_eq(mf.add_(x, 1), {{6, 11.5, 17}, {-2.25, -5, -7.75}}, nil, 'mf.add_')
  T.tensor_eq(x:zero_(), {{0, 0, 0}, {0, 0, 0}})
  T.tensor_eq(x:fill_(2.5), {{2.5, 2.5, 2.5}, {2.5, 2.5, 2.5}})
  T.tensor_eq(x:copy_(mf.tensor{1, 2, 3}), {{1, 2, 3}, {1, 2, 3}})
  T.eq(rawequal(x:zero(), x), true, "Torch7's zero is zero_")
end)

T.test('alpha: x + alpha * y, in place and not, broadcasting, integers exact', function()
  local x = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(mf.add(x, mf.tensor{10, 20}, {alpha = 0.5}), {{6, 12}, {8, 14}})
  T.tensor_eq(x:sub(mf.tensor{{1}, {2}}, {alpha = 3}), {{-2, -1}, {-3, -2}})
  T.tensor_eq(mf.add(1, x, {alpha = -1}), {{0, -1}, {-2, -3}}, nil, 'number first')
  T.tensor_eq(x:add_(mf.tensor{1, 1}, {alpha = 2}), {{3, 4}, {5, 6}})
  T.tensor_eq(x:sub_(x, {alpha = 0.5}), {{1.5, 2}, {2.5, 3}}, nil, 'x -= 0.5 x')
  T.tensor_eq(x + x, {{3, 4}, {5, 6}}, nil, 'a + b unchanged')
  local big = mf.tensor({2 ^ 40, 1}, 'int64')  -- int64 stays exact (no float round trip)
  big:add_(mf.tensor({1, 1}, 'int64'), {alpha = 3})
  T.eq(big:get(1), 2 ^ 40 + 3, 'int64 alpha')
  T.tensor_eq(mf.sub(mf.tensor({5, 7}, 'int32'), mf.tensor({1, 2}, 'int32'), {alpha = -2}), {7, 11})
  T.errors(function() mf.add(mf.tensor({1}, 'int32'), mf.tensor({1}, 'int32'), {alpha = 0.5}) end,
    'add: alpha 0.5 is not an integer; the operands are int32')
  T.errors(function() mf.tensor({1}, 'uint8'):add_(1, {alpha = 300}) end, 'add_', '300', 'uint8')
  T.errors(function() mf.add(x, x, {beta = 1}) end, 'add', 'beta')
  T.errors(function() mf.mul(x, x, {alpha = 2}) end, 'mul: takes 2 inputs and no params')
end)

T.test('the other operand broadcasts to x, whose shape never changes; dtypes must match', function()
  local x = mf.zeros(3)
  T.errors(function() x:add_(mf.ones(2, 3)) end, 'add_: other is 2x3; it must broadcast to x 3')
  T.errors(function() mf.zeros(2, 3):mul_(mf.ones(2)) end, 'mul_: x is 2x3, other is 2')
  T.errors(function() x:div_(mf.ones(3, {dtype = 'float64'})) end, 'div_: x is float32, other is float64')
  T.errors(function() mf.zeros(2, 1):expand(2, 3):add_(1) end, 'add_', 'expanded view', 'stride 0 along dim 2')
  T.errors(function() mf.zeros(2, 1):expand(2, 3):zero_() end, 'zero_', 'expanded view')
  T.errors(function() mf.zeros(2, 1):expand(2, 3):fill_(1) end, 'fill', 'expanded view')
end)

T.test('views as destinations and sources: only the view is written', function()
  local base = mf.tensor{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}
  local v = base:narrow(2, 2, 2)           -- 3x2, columns 2 and 3
  v:add_(mf.tensor{100, 200})
  T.tensor_eq(base, {{1, 102, 203, 4}, {5, 106, 207, 8}, {9, 110, 211, 12}})
  base:t():mul_(mf.tensor{1, -1, 1})       -- 4x3 transposed view: row 2 of base negated
  T.tensor_eq(base, {{1, 102, 203, 4}, {-5, -106, -207, -8}, {9, 110, 211, 12}})
  local src = mf.tensor{{1, 2}, {3, 4}}:t()  -- a transposed source
  local d = mf.zeros(2, 2)
  d:add_(src)
  T.tensor_eq(d, {{1, 3}, {2, 4}})
  d:sub_(mf.tensor{1, 2}:expand(2, 2))     -- an expanded source is fine (it is only read)
  T.tensor_eq(d, {{0, 1}, {1, 2}})
  base:select(1, 1):clamp_(0, 150)
  T.tensor_eq(base:select(1, 1), {1, 102, 150, 4})
  local e = mf.zeros(4, 3)
  e:narrow(1, 2, 2):fill_(7)
  T.tensor_eq(e, {{0, 0, 0}, {7, 7, 7}, {7, 7, 7}, {0, 0, 0}})
  e:narrow(1, 2, 2):t():zero_()
  T.tensor_eq(e, {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
end)

T.test('a source sharing memory with x is read whole first (as copy)', function()
  local a = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(a:add_(a:t()), {{2, 5}, {5, 8}}, nil, 'a += a^T')
  local c = mf.tensor{1, 2, 3, 4}
  c:narrow(1, 2, 3):add_(c:narrow(1, 1, 3))  -- each element plus its old left neighbour
  T.tensor_eq(c, {1, 3, 5, 7})
  local e = mf.tensor{1, 2, 3, 6}
  e:narrow(1, 2, 3):div_(e:narrow(1, 1, 3))
  T.tensor_eq(e, {1, 2, 1.5, 2})
  local f = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(f:mul_(f[1]), {{1, 4}, {3, 8}}, nil, 'row 1 broadcast over f, row 1 included')
  local g = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(g:sub_(g:t(), {alpha = 2}), {{-1, -4}, {-1, -4}})
  local h = mf.tensor{5, 6}
  T.tensor_eq(h:mul_(h), {25, 36}, nil, 'element for element: no copy needed, same result')
end)

T.test('integer dtypes: exact, truncating division, numbers must be integral', function()
  local x = mf.tensor({7, -7, 9}, 'int32')
  T.tensor_eq(x:div_(2), {3, -3, 4})
  T.tensor_eq(x:mul_(mf.tensor({2, 3, -1}, 'int32')), {6, -9, -4})
  T.tensor_eq(x:clamp_(-5, 5), {5, -5, -4})
  local b = mf.tensor({250, 3}, 'uint8')
  T.tensor_eq(b:add_(5), {255, 8})
  T.errors(function() x:add_(1.5) end, 'add_: the number 1.5', 'is not an integer', 'int32')
  T.errors(function() x:clamp_(0.5, 2) end, 'clamp_: x is int32 and bound 0.5 is not an integer')
  T.errors(function() mf.tensor({1}, 'int64'):div_(0) end, 'div_: integer division by zero (int64)')
  T.errors(function() mf.tensor({1}, 'int32'):div_(mf.tensor({0}, 'int32')) end, 'div_: integer division by zero')
  T.errors(function() mf.tensor({1}, 'int32'):div(0) end, 'div: integer division by zero')
  T.errors(function() mf.tensor({1}, 'int32'):uniform_() end, 'uniform_: input x is int32; expected float32 or float64')
end)

T.test('clamp_: bounds, NaN stays NaN, one-sided', function()
  local x = mf.tensor{-3, -0.5, 0.25, 2, nan}
  x:clamp_(-1, 1)
  local t = x:totable()
  T.eq(t[1], -1); T.eq(t[2], -0.5); T.eq(t[3], 0.25); T.eq(t[4], 1); T.eq(t[5] ~= t[5], true, 'NaN kept')
  T.tensor_eq(mf.tensor{-2, 3}:clamp_{min = 0}, {0, 3})
  T.tensor_eq(mf.tensor{-2, 3}:clamp_{max = 0}, {-2, 0})
  T.errors(function() mf.zeros(2):clamp_(2, 1) end, 'clamp_: min 2 is greater than max 1')
  -- the bounds are numbers (as the README says): a tensor bound is named as a tensor, not a cdata
  T.errors(function() mf.zeros(2):clamp_(0, mf.ones(2)) end, "clamp_: param 'max' is a tensor; expected a number")
  T.errors(function() mf.zeros(2):clamp_{min = mf.ones(2)} end, "clamp_: param 'min' is a tensor; expected a number")
  T.errors(function() mf.roll(mf.zeros(2), {mf.ones(1)}) end, "roll: param 'shifts' item 1 is a tensor")
  -- the article agrees with the kind ('expected a integer' before)
  T.errors(function() mf.narrow(mf.zeros(2), mf.ones(2)) end, "narrow: param 'dim' is a tensor; expected an integer")
  T.errors(function() mf.sum(mf.zeros(2), mf.ones(2)) end, "sum: param 'dim' is a tensor; expected an integer list")
end)

T.test('uniform_ and normal_: seeded, in range, through views', function()
  mf.manual_seed(5)
  local a = mf.zeros(2, 500):uniform_(-3, -1)
  mf.manual_seed(5)
  local b = mf.zeros(2, 500):uniform_(-3, -1)
  T.tensor_eq(a, b:totable(), nil, 'same seed, same draws')
  local lo, hi = a:min():item(), a:max():item()
  assert(lo >= -3 and hi < -1, ('uniform_ range %g..%g'):format(lo, hi))
  local base = mf.full({4, 300}, 9)
  base:narrow(1, 2, 2):t():normal_{mean = 10, std = 0.5}
  T.eq(base:select(1, 1):sum():item(), 2700, 'row 1 untouched')
  T.eq(base:select(1, 4):sum():item(), 2700, 'row 4 untouched')
  local m = base:narrow(1, 2, 2):mean():item()
  T.near(m, 10, 0.01, 'normal_ mean')
  T.tensor_eq(mf.zeros(3):normal_(4, 0), {4, 4, 4}, nil, 'std 0')
  T.tensor_eq(mf.zeros(2):uniform(1, 1), {1, 1}, nil, "Torch7's uniform, empty range")
  T.errors(function() mf.zeros(2):uniform_(1, 0) end, 'uniform_: from 1 is greater than to 0')
  T.errors(function() mf.zeros(2):normal_(0, -1) end, 'normal_', 'std')
end)

T.test('in-place ops in a graph: on variables, as intermediates', function()
  mf.reset_default_graph()
  local v = mf.Variable(mf.tensor{1, 2, 3}, 'v')
  local p = mf.placeholder('float32', {3}, 'p')
  local upd = v:add_(p, {alpha = 2})
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  T.tensor_eq(s:run(upd, {[p] = mf.tensor{1, 1, 1}}), {3, 4, 5})
  T.tensor_eq(s:run(upd * 2, {[p] = mf.tensor{1, 0, 1}}), {10, 8, 14}, nil, 'an intermediate')
  T.tensor_eq(s:run(v:clamp_(0, 6)), {5, 4, 6})
  T.tensor_eq(s:run(v:mul_(-1)), {-5, -4, -6})
  T.tensor_eq(s:run(v:zero_()), {0, 0, 0})
  T.errors(function() v:add_(mf.placeholder('float32', {2, 3}, 'q')) end, 'add_: other is 2x3; it must broadcast to x 3')
  -- add with alpha in a graph, fused and not: alpha ~= 1 is not a plain fused add
  local y = mf.add(p, p * 3, {alpha = -2}) * 2 + 1
  for _, fuse in ipairs{true, false} do
    T.tensor_eq(mf.Session{fuse = fuse}:run(y, {[p] = mf.tensor{1, 2, 3}}), {-9, -19, -29}, nil, 'fuse ' .. tostring(fuse))
  end
  -- the gradient of sub with alpha
  local w = mf.Variable(mf.tensor{1, 2}, 'w')
  local g = mf.gradients(mf.sum(mf.sub(w * w, w, {alpha = 3})), {w})[1]
  s:run(mf.global_variables_initializer())
  T.tensor_eq(s:run(g), {-1, 1}, nil, 'd/dw (w^2 - 3w) = 2w - 3')
  mf.reset_default_graph()
end)

T.test('in a graph, ops that write in place refuse placeholders and constants (the caller\'s tensors)', function()
  mf.reset_default_graph()
  local fed, data = mf.tensor{1, 2, 3}, mf.tensor{5, 6, 7}
  local p = mf.placeholder('float32', {3}, 'p')
  local c = mf.constant(data, 'c')
  T.errors(function() return p:add_(1) end, "add_: x is 'p', a placeholder", 'only a Variable', 'add returns a new result')
  T.errors(function() return mf.narrow(p, 1, 2, 2):mul_(2) end, "mul_: x is 'p', a placeholder")  -- through a view
  T.errors(function() return p:add_(1):mul_(2) end, "add_: x is 'p'")
  T.errors(function() return c:clamp_(0, 1) end, "clamp_: x is 'c', a constant")
  T.errors(function() return c:fill_(0) end, "x is 'c', a constant")
  T.errors(function() return c:zero_() end, "x is 'c', a constant")
  T.errors(function() return c:uniform_() end, "x is 'c', a constant")
  T.errors(function() return mf.assign(c, p) end, "assign: ref is 'c', a constant")
  T.errors(function() return mf.assign_add(p, c) end, "assign_add", "'p', a placeholder")
  T.errors(function() return mf.copy_(data, p) end, 'a constant')  -- a tensor operand becomes a constant
  T.errors(function() return mf.sgd_update(c, p, mf.constant(mf.tensor{0.1})) end, "sgd_update: var is 'c'")
  -- written through anything else the graph computed: allowed, and the caller's tensors stay
  local v = mf.Variable(mf.zeros(3), 'v')
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  local out = s:run({v = v:add_(p), z = (p * 1):add_(c), n = mf.narrow(p + 0, 1, 2, 2):mul_(10)}, {[p] = fed})
  T.tensor_eq(out.v, {1, 2, 3}) T.tensor_eq(out.z, {6, 8, 10}) T.tensor_eq(out.n, {20, 30})
  T.tensor_eq(fed, {1, 2, 3}) T.tensor_eq(data, {5, 6, 7})
  mf.reset_default_graph()
end)

-- factories -------------------------------------------------------------------------------------
T.test('empty, full_like, rand_like, randn_like', function()
  local e = mf.empty(2, 3)
  T.eq(tostring(e:size()), '2x3'); T.eq(e:dtype(), 'float32')
  -- contents unspecified: only the shape and dtype are promised
  T.eq(mf.empty({4}, {dtype = 'int64'}):dtype(), 'int64')
  local x = mf.tensor({{1, 2}, {3, 4}}, 'int32'):t()
  local f = mf.full_like(x, 7)
  T.eq(f:dtype(), 'int32'); T.tensor_eq(f, {{7, 7}, {7, 7}})
  T.errors(function() mf.full_like(mf.zeros(2, {dtype = 'uint8'}), -1) end, 'full_like: value -1 does not fit uint8')
  mf.manual_seed(2)
  local r = mf.rand_like(mf.zeros(3, 4, {dtype = 'float64'}))
  T.eq(r:dtype(), 'float64'); T.eq(tostring(r:size()), '3x4')
  assert(r:min():item() >= 0 and r:max():item() < 1)
  local n = mf.randn_like(mf.zeros(1000), {mean = 3, std = 0})
  T.eq(n:min():item(), 3); T.eq(n:max():item(), 3)
  T.errors(function() mf.rand_like(mf.zeros(2, {dtype = 'int32'})) end, 'rand_like', 'expected float32 or float64')
end)

T.test('mf.Tensor: sizes, a size object, data, a tensor, nothing', function()
  local a = mf.Tensor(2, 3)
  T.eq(tostring(a:size()), '2x3'); T.eq(a:dtype(), 'float32'); T.eq(a:sum():item(), 0)
  T.eq(tostring(mf.Tensor(a:size()):size()), '2x3', 'a size object is sizes')
  T.tensor_eq(mf.Tensor{{1, 2}, {3, 4}}, {{1, 2}, {3, 4}}, nil, 'a table is data (torch.Tensor(table))')
  T.tensor_eq(mf.Tensor{2, 3}, {2, 3}, nil, 'a flat table is data too')
  local e = mf.Tensor()
  T.eq(e:dim(), 1); T.eq(e:numel(), 0)
  local s = mf.Tensor(a)  -- shares a's storage
  s:fill(5)
  T.eq(a:sum():item(), 30, 'shared storage')
  T.eq(mf.DoubleTensor(2):dtype(), 'float64'); T.eq(mf.LongTensor{1, 2}:dtype(), 'int64')
  T.eq(mf.ByteTensor(3):dtype(), 'uint8'); T.eq(mf.IntTensor(1):dtype(), 'int32')
  T.errors(function() mf.Tensor(2, -1) end, 'Tensor: size -1 at position 2; expected non-negative integer sizes')
  T.errors(function() mf.Tensor(2, 'x') end, 'Tensor: size x at position 2')
  T.errors(function() mf.Tensor('2') end, 'Tensor: the argument is a string')
  T.errors(function() mf.Tensor(1e300) end, 'Tensor: size 1e+300 at position 1 is too large')
  T.errors(function() mf.LongTensor(2, 2 ^ 62) end, 'LongTensor: size', 'at position 2 is too large')
  T.errors(function() mf.DoubleTensor(mf.zeros(2)) end, 'DoubleTensor: the tensor is float32')
  T.eq(mf.is_tensor(mf.clone(a)), true)
end)

-- apply / map -------------------------------------------------------------------------------------
T.test('apply and map: per element, in place, on views and every dtype', function()
  local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(rawequal(x:apply(function(v) return v * v end), x), true, 'apply returns x')
  T.tensor_eq(x, {{1, 4, 9}, {16, 25, 36}})
  local order = {}
  x:t():apply(function(v) order[#order + 1] = v end)  -- nil keeps the element; row-major of the view
  T.eq(table.concat(order, ','), '1,16,4,25,9,36', 'view order')
  x:narrow(2, 2, 2):apply(function(v) return -v end)
  T.tensor_eq(x, {{1, -4, -9}, {16, -25, -36}})
  x:map(mf.tensor{10, 20, 30}, function(v, w) return v + w end)
  T.tensor_eq(x, {{11, 16, 21}, {26, -5, -6}})
  for _, dt in ipairs{'float64', 'int32', 'int64', 'uint8'} do
    local t = mf.tensor({1, 2, 3}, dt)
    t:apply(function(v) return v + 1 end)
    t:map(mf.tensor({{1, 0}, {1, 0}, {2, 0}}, dt):select(2, 1), function(v, w) return v * w end)  -- a strided other
    T.tensor_eq(t, {2, 3, 8}, nil, dt)
  end
  local z = mf.tensor(5)  -- 0-dim
  z:apply(function(v) return v / 2 end)
  T.eq(z:item(), 2.5)
  T.tensor_eq(mf.tensor{1, 2}:apply(function(v) return v > 1 end), {0, 1}, nil, 'booleans')
  T.errors(function() x:apply(function() return 'x' end) end, 'apply: the function returned a string')
  T.errors(function() x:apply(3) end, 'apply: expected a function, got a number')
  T.errors(function() mf.tensor({1}, 'uint8'):apply(function() return 256 end) end, 'apply: value 256 does not fit uint8')
  T.errors(function() mf.zeros(2, 1):expand(2, 3):apply(function() end) end, 'apply', 'expanded view')
  T.errors(function() x:map(mf.zeros(3, 2), function() end) end, 'map: other is 3x2; it must broadcast to the tensor 2x3')
  -- integer dtypes refuse a fractional value, as fill_(3.7) does, and values out of range
  local xi = mf.tensor({1, 2}, 'int32')
  T.errors(function() xi:apply(function() return 3.7 end) end, 'apply: the function returned 3.7, not an integer',
    'int32')
  T.errors(function() xi:map(xi, function() return 0 / 0 end) end, 'map: the function returned', 'not an integer')
  T.errors(function() xi:apply(function() return 2 ^ 40 end) end, 'apply: value 1099511627776 does not fit int32')
  T.tensor_eq(xi, {1, 2}, nil, 'unchanged by the refused calls')
  T.tensor_eq(mf.tensor({1, 2}, 'int64'):apply(function(v) return v * 2 ^ 40 end), {2 ^ 40, 2 ^ 41})
end)

-- indexing ----------------------------------------------------------------------------------------
T.test('a[{i, j}]: a number for a full index, a view for a partial one, negative indices, bounds', function()
  local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(a[{2, 3}], 6); T.eq(a[{-1, -3}], 4); T.eq(a[{1, -1}], 3)
  local row = a[{2}]
  T.tensor_eq(row, {4, 5, 6})
  row[1] = 40  -- a view: writes through to a
  T.eq(a[{2, 1}], 40)
  local c = mf.tensor{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}
  T.tensor_eq(c[{2, 1}], {5, 6}); T.tensor_eq(c[{-1}], {{5, 6}, {7, 8}})
  T.eq(c[{2, 2, 1}], 7)
  T.errors(function() return a[{3, 1}] end, 'index t[{i, j, ...}]: index 3 out of range 1..2 at dim 1')
  T.errors(function() return a[{1, 4}] end, 'index 4 out of range 1..3 at dim 2')
  T.errors(function() return a[{1, 0}] end, 'index 0 out of range 1..3 at dim 2')
  T.errors(function() return a[{1.5, 1}] end, 'index t[{i, j, ...}]: index 1.5 at dim 1 is not an integer')
  T.errors(function() return a[{1.5}] end, 'index 1.5 at dim 1 is not an integer')
  T.errors(function() return a[{1, 0 / 0}] end, 'at dim 2 is not an integer')
  T.errors(function() return a:get(1, 2.5) end, 'get: index 2.5 at dim 2 is not an integer')
  T.errors(function() a[{2, 1.5}] = 0 end, 'index assignment: index 1.5 at dim 2 is not an integer')
  T.errors(function() a[1.5] = 0 end, 'index assignment: index 1.5 at dim 1 is not an integer')
  T.errors(function() return a[{-3}] end, 'index -3 out of range 1..2 at dim 1')
  T.errors(function() return a[{1, 1, 1}] end, '3 indices given for a 2-dim tensor')
  T.errors(function() return a[{'x'}] end, 'index 1 is a string; expected a number')
end)

T.test('a[{i, j}] = v: one element, or a view filled or copied into', function()
  local a = mf.zeros(2, 3)
  a[{1, 2}] = 5; a[{-1, -1}] = 7
  T.tensor_eq(a, {{0, 5, 0}, {0, 0, 7}})
  a[{1}] = 9
  T.tensor_eq(a, {{9, 9, 9}, {0, 0, 7}})
  a[{2}] = mf.tensor{{1, 2, 3}}  -- leading size-1 dims dropped, as PyTorch
  T.tensor_eq(a, {{9, 9, 9}, {1, 2, 3}})
  local c = mf.zeros(2, 2, 2)
  c[{2, 1}] = mf.tensor{3, 4}
  T.tensor_eq(c, {{{0, 0}, {0, 0}}, {{3, 4}, {0, 0}}})
  local v = a:t()  -- a transposed destination
  v[{3, 2}] = -1
  T.eq(a[{2, 3}], -1)
  local i = mf.zeros(2, 2, {dtype = 'int32'})
  i[{2}] = 4
  T.tensor_eq(i, {{0, 0}, {4, 4}})
  T.errors(function() i[{1, 1}] = 2 ^ 31 end, 'index assignment', 'does not fit int32')
  T.errors(function() i[{1}] = 2 ^ 31 end, 'index assignment', 'does not fit int32')
  T.errors(function() a[{3}] = 1 end, 'index assignment: index 3 out of range 1..2 at dim 1')
  T.errors(function() a[{1}] = mf.ones(2) end, 'index assignment: source 2 does not broadcast to destination 3')
  T.errors(function() mf.zeros(2, 1):expand(2, 3)[{1}] = 1 end, 'index assignment', 'expanded view')
end)

-- the size object ------------------------------------------------------------------------------------
T.test(':size() is a size object: a list that prints 2x3, compares, and feeds factories', function()
  local a = mf.zeros(2, 3)
  local s = a:size()
  T.eq(tostring(s), '2x3'); T.eq(#s, 2); T.eq(s[1], 2); T.eq(s[2], 3)
  local x, y = unpack(s)
  T.eq(x * 10 + y, 23, 'unpack')
  local n = 0
  for _, v in ipairs(s) do n = n + v end
  T.eq(n, 5, 'ipairs')
  T.eq(table.concat(s, ','), '2,3', 'table.concat')
  T.eq(s == mf.Size{2, 3}, true); T.eq(s == mf.zeros(3, 2):size(), false); T.eq(s == mf.zeros(2, 3, 1):size(), false)
  T.eq(s:numel(), 6); T.eq('size ' .. s, 'size 2x3')
  T.eq(tostring(mf.tensor(1):size()), 'scalar'); T.eq(#mf.tensor(1):size(), 0)
  T.eq(tostring(mf.zeros(0, 4):size()), '0x4')
  T.eq(mf.is_size(s), true); T.eq(mf.is_size({2, 3}), false)
  T.eq(getmetatable(s:totable()), nil, 'totable is a plain list')
  -- factories and shape ops take it wherever they take a list of sizes
  T.eq(tostring(mf.zeros(s):size()), '2x3'); T.eq(tostring(mf.ones(s, {dtype = 'int32'}):size()), '2x3')
  T.eq(tostring(mf.full(s, 2):size()), '2x3'); T.eq(tostring(mf.rand(s):size()), '2x3')
  T.eq(tostring(mf.empty(s):size()), '2x3'); T.eq(tostring(mf.zeros(mf.tensor(1):size()):size()), 'scalar')
  T.eq(tostring(mf.arange(6):reshape(s):size()), '2x3')
  T.eq(tostring(mf.placeholder('float32', s, 'p'):size() and 'ok'), 'ok')
  T.errors(function() mf.Size{2, -1} end, 'Size: size -1 at position 2')
end)

T.finish()
