-- Op attributes instead of op names: call syntaxes that follow from an op's params and its
-- MF_OPF_LIST_ARGS / lua_adapter attributes, graph skips and rewrites declared in op blocks, and
-- Lua-registered ops whose rules are source strings (process-wide; test_embed_engines.cc runs them
-- in a second engine). References are hand-computed.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local m = mf.tensor{{1, 2, 3}, {4, 5, 6}}

T.test('reductions take dims from their declared params: a number, a list, keepdim, a table', function()
  T.tensor_eq(mf.sum(m, 2), {6, 15})
  T.tensor_eq(m:sum(1), {5, 7, 9})
  T.eq(mf.sum(m, {1, 2}):item(), 21)
  T.tensor_eq(mf.sum(m, 2, true), {{6}, {15}})
  T.tensor_eq(mf.max(m, {dim = 1, keepdim = true}), {{4, 5, 6}})
  T.tensor_eq(mf.sum(m, 2, {keepdim = true}), {{6}, {15}})
  T.eq(mf.sum(m, nil, true):size(1), 1)
  T.tensor_eq(mf.argmax(m, 2), {3, 3})
  T.errors(function() mf.sum(m, 2, true, 4) end, 'sum: too many arguments (4)')
end)

T.test('list_args ops take sizes as separate numbers or a list; others by declared params', function()
  T.eq(mf.zeros(2, 3):size(2), 3)
  T.eq(mf.ones({4}, {dtype = 'float64'}):dtype(), 'float64')
  T.eq(mf.reshape(m, 3, 2)[{3, 1}], 5)
  T.eq(m:permute(2, 1)[{3, 2}], 6)
  T.errors(function() mf.zeros(2, 'x') end, 'zeros: unexpected argument 2 (x)')
  T.tensor_eq(mf.full({2}, 7), {7, 7})
  T.eq(mf.full({2}, 7, 'float64'):dtype(), 'float64')       -- value comes before dtype
  T.eq(mf.full({2}, 7, {dtype = 'int32'}):dtype(), 'int32')
  T.tensor_eq(mf.squeeze(mf.ones(2, 1), 2), {1, 1})
  local a, b = unpack(mf.split(mf.tensor{1, 2, 3}, 2))      -- list output: one table
  T.tensor_eq(a, {1, 2})
  T.tensor_eq(b, {3})
  T.eq(#mf.split(m, 1, {dim = 2}), 3)
  T.eq(mf.cast(m, 'int64'):dtype(), 'int64')
end)

T.test('other spellings come from the blocks (alias): functions, methods, help', function()
  T.eq(mf.reduce_sum, mf.sum)
  T.eq(mf.cat, mf.concat)
  T.eq(m.cmul, mf.mul)
  T.eq(mf.greater_equal(m, 3):sum():item(), 4)
  T.eq(mf._aliases.reduce_mean, 'mean')
  T.eq(mf._aliases.argmax, nil)
  T.eq(mf.op_doc('div'):match('also: ([^\n]*)'), 'mf.cdiv, mf.divide')
end)

T.test("arange's call syntax comes from its block (lua_adapter)", function()
  T.tensor_eq(mf.arange(3), {0, 1, 2})
  T.tensor_eq(mf.arange(2, 5), {2, 3, 4})
  T.tensor_eq(mf.arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75})
  T.eq(mf.arange(3, {dtype = 'int64'}):dtype(), 'int64')
  T.tensor_eq(mf.arange{start = 4, stop = 0, step = -2}, {4, 2})
end)

T.test('where: the mask input never decides a number operand dtype', function()
  local c = mf.cast(mf.tensor{1, 0}, 'uint8')
  local r = mf.where(c, mf.tensor({1.5, 2.5}, 'float64'), 0)
  T.eq(r:dtype(), 'float64')
  T.tensor_eq(r, {1.5, 0})
end)

T.test('sum_to and broadcast_like of one shape add no graph node (identity_if_same_shape)', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {2, 3}, 'x')
  T.eq(rawequal(mf.sum_to(x, x), x), true)
  T.eq(rawequal(mf.broadcast_like(x, x), x), true)
  local y = mf.placeholder('float32', {3}, 'y')
  T.eq(mf.broadcast_like(y, x):op_name(), 'broadcast_like')
  T.tensor_eq(mf.Session():run(mf.sum_to(x, y), {[x] = m, [y] = mf.zeros(3)}), {5, 7, 9})
end)

T.test('assign overwrites: its variable needs no initial value; assign_add reads it', function()
  mf.reset_default_graph()
  local v = mf.Variable(mf.zeros(2), 'v')
  local s = mf.Session()
  T.tensor_eq(s:run(mf.assign(v, mf.constant(mf.tensor{3, 4}))), {3, 4})
  mf.reset_default_graph()
  local w = mf.Variable(mf.zeros(2), 'w')
  T.errors(function() mf.Session():run(mf.assign_add(w, mf.constant(mf.tensor{1, 1}))) end, "variable 'w' is not initialized")
end)

-- rules as source strings: stored in the registry, compiled by each engine on first use
mf.register_op{name = 'attrs_outer', num_inputs = 2, doc = 'outer product of two vectors',
  infer_shape = [[ function(s) return {{s[1][1], s[2][1]}} end ]],
  gradient = [[ function(a, b, y, gy) return {mf.sum(gy * mf.unsqueeze(b, 1), 2), mf.sum(gy * mf.unsqueeze(a, 2), 1)} end ]],
  lua_compute = [[ function(ins, outs)
    local n, k = ins[1]:numel(), ins[2]:numel()
    return function()
      local a, b, y = ins[1]:data(), ins[2]:data(), outs[1]:data()
      for i = 0, n - 1 do for j = 0, k - 1 do y[i * k + j] = a[i] * b[j] end end
    end end ]]}

T.test('a Lua op with source-string rules: eager, graph with unknown sizes, gradient', function()
  T.tensor_eq(mf.attrs_outer(mf.tensor{1, 2}, mf.tensor{3, 4, 5}), {{3, 4, 5}, {6, 8, 10}})
  mf.reset_default_graph()
  local a = mf.placeholder('float32', {-1}, 'a')
  local b = mf.placeholder('float32', {3}, 'b')
  local y = mf.attrs_outer(a, b)
  T.eq(y._shape[1], -1)
  T.eq(y._shape[2], 3)
  -- loss = sum(y * w): d/da_i = sum_j w_ij b_j, d/db_j = sum_i w_ij a_i
  local w = mf.constant(mf.tensor{{1, 0, 2}, {0, 1, 1}})
  local ga, gb = unpack(mf.gradients(mf.sum(y * w), {a, b}))
  local va, vb = mf.Session():run({ga, gb}, {[a] = mf.tensor{1, 2}, [b] = mf.tensor{3, 4, 5}})
  T.tensor_eq(va, {13, 9})
  T.tensor_eq(vb, {1, 2, 4})
end)

T.test('register_op: rule sources and the same rule are checked before registering', function()
  local k = 'function(ins, outs) return function() end end'
  T.errors(function() mf.register_op{name = 'attrs_bad_shape', num_inputs = 1, doc = 'x', lua_compute = k,
    infer_shape = 'function(s) return {s[1]'} end, 'attrs_bad_shape', 'infer_shape')
  T.errors(function() mf.register_op{name = 'attrs_bad_grad', num_inputs = 1, doc = 'x', lua_compute = k,
    gradient = 'not lua'} end, 'attrs_bad_grad', 'gradient')
  T.errors(function() mf.register_op{name = 'attrs_no_input', num_inputs = 0, doc = 'x', lua_compute = k} end,
    "register_op attrs_no_input: infer_shape 'same' needs an input")
  T.eq(mf._ops.attrs_bad_shape, nil)  -- nothing left behind
  mf.register_op{name = 'attrs_bad_shape', num_inputs = 1, doc = 'x', lua_compute = k}
end)

T.test('built-in blocks declare lends_shape and in_place_of; Lua reads them at load', function()
  local ops = mf._ops
  T.eq(ops.zeros_like.shape_only, true)
  T.eq(ops.rand_like.shape_only, true)
  T.eq(ops.sum_to.lends_shape[2], true)
  T.eq(ops.sum_to.lends_shape[1], nil)
  T.eq(ops.sum_to.shape_only, false)
  T.eq(ops.index_add_like.lends_shape[3], true)
  T.eq(ops.add_.in_place_of, 'add')
  T.eq(ops.masked_fill_.in_place_of, 'masked_fill')
  T.eq(ops.scatter_.in_place_of, 'scatter')
  T.eq(ops.add.in_place_of, nil)
  T.eq(ops.cumprod_grad.gradient_of, 'cumprod')  -- gradient_of: a gradient-less op some gradient rule builds
  T.eq(ops.cumprod.gradient_of, nil)
  -- an op whose inputs all lend their shape has the registry's empty rule (nothing flows back)
  T.eq(#mf._gradient_rule(ops.ones_like)(), 0)
  local w = mf.randn(2, 3, {requires_grad = true})
  T.eq(mf.zeros_like(w):requires_grad(), false)
  T.eq(mf.sum_to(w, mf.zeros(3)):requires_grad(), true)
  T.errors(function() mf.add_(mf.ones(3), mf.ones(2, 3)) end, 'add_: other is 2x3', 'use add for a new tensor')
end)

-- Lua ops declaring the attributes. attrs_twice_like(x, like) = 2 x; like lends only its shape.
local k2 = [[ function(ins, outs)
  return function()
    local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
    for i = 0, n - 1 do y[i] = 2 * x[i] end
  end end ]]
mf.register_op{name = 'attrs_twice_like', num_inputs = 2, doc = '2 x (like lends its shape)', lua_compute = k2,
  lends_shape = {2}, gradient = 'function(x, like, y, gy) return {gy * 2} end'}
-- attrs_double(x) = 2 x twice over: its rule passes x only where attrs_twice_like reads the shape
mf.register_op{name = 'attrs_double', num_inputs = 1, doc = '2 x', lua_compute = k2,
  gradient = 'function(x, y, gy) return {mf.attrs_twice_like(gy, x)} end'}
mf.register_op{name = 'attrs_double_reads', num_inputs = 1, doc = '2 x', lua_compute = k2,
  gradient = 'function(x, y, gy) return {mf.attrs_twice_like(gy, x) + x * 0} end'}
-- attrs_fives(x): 5 in every element; x lends only its shape, so the op declares no gradient
mf.register_op{name = 'attrs_fives', num_inputs = 1, doc = 'fives shaped like x', lends_shape = {1},
  lua_compute = [[ function(ins, outs)
    return function() local y = outs[1]:data(); for i = 0, outs[1]:numel() - 1 do y[i] = 5 end end end ]]}
-- attrs_double_(x): writes 2 x into x (and returns a copy); the in-place form of attrs_double
mf.register_op{name = 'attrs_double_', num_inputs = 1, doc = 'x = 2 x in place', writes = true,
  in_place_of = 'attrs_double', lua_compute = [[ function(ins, outs)
    return function()
      local n, x, y = ins[1]:numel(), ins[1]:data(), outs[1]:data()
      for i = 0, n - 1 do x[i] = 2 * x[i]; y[i] = x[i] end
    end end ]]}

T.test('a Lua op lending every input its shape: nothing recorded, nothing flows back', function()
  local ops = mf._ops
  T.eq(ops.attrs_fives.shape_only, true)
  local w = mf.tensor({1, 2, 3}, {requires_grad = true})
  local f = mf.attrs_fives(w)
  T.tensor_eq(f, {5, 5, 5})
  T.eq(f:requires_grad(), false)
  -- d/dx sum(fives(x) * x) = 5 (the fives are constant), eager and in a graph
  local l = mf.sum(mf.attrs_fives(w) * w)
  l:backward()
  T.tensor_eq(w.grad, {5, 5, 5})
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {3}, 'x')
  local g = mf.gradients(mf.sum(mf.attrs_fives(x) * x), {x})[1]
  T.tensor_eq(mf.Session():run(g, {[x] = mf.tensor{1, 2, 3}}), {5, 5, 5})
end)

T.test("the tape checks versions only of what a rule reads: a lent shape is not read", function()
  local ops = mf._ops
  T.eq(ops.attrs_twice_like.lends_shape[2], true)
  -- attrs_double's rule passes x only as attrs_twice_like's like: writing x after the call is fine
  local w = mf.tensor({1, 2, 3}, {requires_grad = true})
  local y = mf.attrs_double(w)
  mf.no_grad(function() w:add_(10) end)
  mf.sum(y):backward()
  T.tensor_eq(w.grad, {2, 2, 2})  -- d(sum 2w)/dw, by hand
  -- attrs_double_reads also reads x's values (x * 0): the same write is refused at backward
  local v = mf.tensor({1, 2, 3}, {requires_grad = true})
  local z = mf.attrs_double_reads(v)
  mf.no_grad(function() v:add_(10) end)
  T.errors(function() mf.sum(z):backward() end, "op 'attrs_double_reads'", 'modified in place')
  -- graph mode calls the same rules on symbols
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {3}, 'x')
  local g = mf.gradients(mf.sum(mf.attrs_double(x)), {x})[1]
  T.tensor_eq(mf.Session():run(g, {[x] = mf.tensor{1, 2, 3}}), {2, 2, 2})
end)

T.test('a Lua write op names its out-of-place form (in_place_of) when a graph refuses it', function()
  local x = mf.tensor{1, 2, 3}
  T.tensor_eq(mf.attrs_double_(x), {2, 4, 6})
  T.tensor_eq(x, {2, 4, 6})
  T.eq(mf._ops.attrs_double_.in_place_of, 'attrs_double')
  -- the tape's refusals name the out-of-place form too
  local w = mf.tensor({1, 2, 3}, {requires_grad = true})
  T.errors(function() mf.attrs_double_(w * 1) end, 'attrs_double_: writes in place', 'use mf.attrs_double,')
  T.errors(function() (w * 1):add_(1) end, 'add_: writes in place', 'use mf.add,')
  T.errors(function() mf.zeros(3):add_(w) end, 'add_: input 2 (other', 'use mf.add instead of add_')
  mf.reset_default_graph()
  local p = mf.placeholder('float32', {3}, 'p')
  T.errors(function() mf.attrs_double_(p) end, "attrs_double_: x1 is 'p', a placeholder",
    'attrs_double returns a new result')
  -- as an intermediate: a write into a result the graph computed runs
  local v = mf.Variable(mf.tensor{1, 1, 1}, 'v')
  local s = mf.Session()
  s:run(mf.global_variables_initializer())
  T.tensor_eq(s:run(mf.attrs_double_(v * 3) + 1), {7, 7, 7})
end)

T.test('register_op: the attributes are checked against the op', function()
  local k = 'function(ins, outs) return function() end end'
  T.errors(function() mf.register_op{name = 'attrs_bad_lend', num_inputs = 1, doc = 'x', lua_compute = k,
    lends_shape = {2}} end, 'attrs_bad_lend: lends_shape(2), but the op has 1 fixed input')
  T.errors(function() mf.register_op{name = 'attrs_bad_lend', num_inputs = 1, doc = 'x', lua_compute = k,
    lends_shape = {1}, gradient = 'function(x, y, gy) return {gy} end'} end, 'attrs_bad_lend',
    'every input lends only its shape')
  T.errors(function() mf.register_op{name = 'attrs_bad_twin', num_inputs = 1, doc = 'x', lua_compute = k,
    in_place_of = 'attrs_double'} end, "attrs_bad_twin: in_place_of('attrs_double') on an op that writes nothing")
  T.errors(function() mf.register_op{name = 'attrs_bad_twin', num_inputs = 1, doc = 'x', lua_compute = k,
    writes = true, in_place_of = 'attrs_no_such_op'} end, "in_place_of('attrs_no_such_op'), an unknown op")
  T.errors(function() mf.register_op{name = 'attrs_bad_twin', num_inputs = 1, doc = 'x', lua_compute = k,
    writes = 2} end, 'attrs_bad_twin: writes 2 inputs; expected 1..1')
  T.errors(function() mf.register_op{name = 'attrs_bad_twin', num_inputs = 1, doc = 'x', lua_compute = k,
    lends_shape = 1} end, 'lends_shape must be a list')
  T.eq(mf._ops.attrs_bad_lend, nil)
  T.eq(mf._ops.attrs_bad_twin, nil)
end)

T.finish()
