-- Lua-registered ops as first-class ops: in graphs as intermediates (fusion on and off), on views
-- (the kernel layout contract), with checked gradient rules (the gradient contract); closed
-- sessions. References are hand-computed values and central finite differences.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

-- x^3 by a plain loop over x:data(): correct only on contiguous input, as a new user writes it
mf.register_op{name = 'cube', num_inputs = 1, doc = 'x^3, elementwise (a plain loop)', infer_shape = 'same',
  gradient = function(x, y, gy) return {gy * x * x * 3} end,
  lua_compute = [[ function(ins, outs, p)
    return function()
      local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
      for i = 0, n - 1 do local v = xp[i]; yp[i] = v * v * v end
    end end ]]}

-- row sums of a matrix: an output shape different from the input's
mf.register_op{name = 'rowsum', num_inputs = 1, doc = 'sum of each row of a matrix',
  infer_shape = function(s) return {{s[1][1]}} end,
  lua_compute = [[ function(ins, outs, p)
    local rows, cols = ins[1]:size(1), ins[1]:size(2)
    return function()
      local xp, yp = ins[1]:data(), outs[1]:data()
      for r = 0, rows - 1 do
        local acc = 0
        for c = 0, cols - 1 do acc = acc + xp[r * cols + c] end
        yp[r] = acc
      end
    end end ]]}

local function run(fetch, feeds, fuse) return mf.Session{fuse = fuse}:run(fetch, feeds) end

T.test('a Lua op in a graph: fetched, reduced, combined and chained (fusion on and off)', function()
  for _, fuse in ipairs{true, false} do
    local what = fuse and 'fused' or 'unfused'
    local x = mf.placeholder('float32', {3}, 'x')
    T.eq(run(mf.sum(mf.cube(x)), {[x] = mf.tensor{1, 2, 3}}, fuse):item(), 36, what .. ' sum(cube(x))')
    T.tensor_eq(run(mf.cube(x) * 1, {[x] = mf.tensor{2, 3, 4}}, fuse), {8, 27, 64}, nil, what .. ' cube(x) * 1')
    T.tensor_eq(run(mf.cube(mf.cube(x)), {[x] = mf.tensor{2, 3, 4}}, fuse), {512, 19683, 262144}, nil,
      what .. ' cube(cube(x))')
    T.tensor_eq(run(mf.cube(x + 1) - mf.cube(x), {[x] = mf.tensor{0, 1, 2}}, fuse), {1, 7, 19}, nil,
      what .. ' cube(x + 1) - cube(x)')
    local m = mf.placeholder('float64', {-1, 3}, 'm')
    local r = mf.rowsum(mf.cube(m)) * 2
    T.eq(tostring(r._shape[1]), '-1', 'rowsum of an unknown batch')
    T.tensor_eq(run(r, {[m] = mf.tensor({{1, 2, 3}, {0, -1, 1}}, 'float64')}, fuse), {72, 0}, nil, what .. ' rowsum')
  end
end)

T.test('a closed session is an error to use', function()
  local x = mf.placeholder('float32', {2}, 'x')
  local v = mf.Variable(mf.ones(2), 'v')
  local sess = mf.Session()
  sess:run(mf.global_variables_initializer())
  T.tensor_eq(sess:run(v + x, {[x] = mf.tensor{1, 2}}), {2, 3})
  sess:close()
  local err = T.errors(function() sess:run(v + x, {[x] = mf.tensor{1, 2}}) end, 'run: session is closed')
  T.eq(err:match('^[^:]+'), arg[0], 'blamed file')
  T.errors(function() sess:run(mf.global_variables_initializer()) end, 'run: session is closed')
  T.errors(function() sess:stats() end, 'stats: session is closed')
  sess:close()  -- closing twice is fine
end)

-- the kernel layout contract -------------------------------------------------------------------
-- README's swish: a plain loop over x:data(), right only on contiguous input
mf.register_op{name = 'swish_t', num_inputs = 1, doc = 'x * sigmoid(x)', infer_shape = 'same',
  lua_compute = [[ function(ins, outs, p)
    local x, y, n = ins[1], outs[1], ins[1]:numel()
    mf._seen_ptr, mf._seen_contig = x._ptr, x._is_contig
    return function()
      mf._run_ptr = x._ptr
      local xp, yp = x:data(), y:data()
      for i = 0, n - 1 do local v = xp[i]; yp[i] = v / (1 + math.exp(-v)) end
    end end ]]}

local function swish_ref(t)
  local out = {}
  for i, row in ipairs(t:totable()) do
    out[i] = {}
    for j, v in ipairs(row) do out[i][j] = v / (1 + math.exp(-v)) end
  end
  return out
end

T.test('a plain kernel gets contiguous inputs: transposed, narrowed, expanded views', function()
  local a = mf.tensor({{1, -2, 3}, {-4, 5, -6}}, 'float64')
  for _, v in ipairs{a:t(), a:narrow(2, 2, 2), mf.tensor({{0.5}, {-1.5}}, 'float64'):expand(2, 4), a:select(1, 2):reshape(3, 1)} do
    T.tensor_eq(mf.swish_t(v), swish_ref(v), 1e-12, 'swish of a ' .. v:shape_str() .. ' view')
    T.eq(mf._seen_contig, 1, 'the kernel saw a contiguous input')
  end
  -- a contiguous input is passed as it is: no copy
  local c = mf.randn(3, 4, {dtype = 'float64'})
  mf.swish_t(c)
  T.eq(tostring(mf._run_ptr), tostring(c._ptr), 'contiguous input handed over without a copy')
end)

T.test('a plain kernel in a graph: views of placeholders and fed views become contiguous', function()
  for _, fuse in ipairs{true, false} do
    local x = mf.placeholder('float64', {2, 3}, 'x')
    local a = mf.tensor({{1, -2, 3}, {-4, 5, -6}}, 'float64')
    local sess = mf.Session{fuse = fuse}
    T.tensor_eq(sess:run(mf.swish_t(mf.transpose(x, 1, 2)) * 1, {[x] = a}), swish_ref(a:t()), 1e-12, 'transpose in the graph')
    T.tensor_eq(sess:run(mf.swish_t(mf.narrow(x, 2, 2, 2)) + 0, {[x] = a}), swish_ref(a:narrow(2, 2, 2)), 1e-12, 'narrow')
    local wide = mf.tensor({{1, 2}, {3, 4}, {5, 6}}, 'float64')
    T.tensor_eq(sess:run(mf.swish_t(x), {[x] = wide:t()}), swish_ref(wide:t()), 1e-12, 'a transposed feed')
    T.tensor_eq(sess:run(mf.swish_t(x), {[x] = a}), swish_ref(a), 1e-12, 'then a contiguous feed of that shape')
  end
end)

T.test('strided = true: the kernel receives views with sizes, strides and offset', function()
  mf.register_op{name = 'strided_probe', num_inputs = 1, doc = 'x, read through its strides; records the layout',
    strided = true, infer_shape = 'same',
    lua_compute = [[ function(ins, outs, p)
      local x, y = ins[1], outs[1]
      mf._probe = {x:stride(1), x:stride(2), x:storage_offset(), x._is_contig}
      local rows, cols, s1, s2 = x:size(1), x:size(2), x:stride(1), x:stride(2)
      return function()
        local xp, yp = x:data(), y:data()
        for r = 0, rows - 1 do for c = 0, cols - 1 do yp[r * cols + c] = xp[r * s1 + c * s2] end end
      end end ]]}
  local base = mf.tensor({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, 'float64')
  local v = base:narrow(2, 2, 2):t()  -- 2x3, strides 1 and 4, offset 1 (0-based)
  T.tensor_eq(mf.strided_probe(v), {{2, 6, 10}, {3, 7, 11}})
  T.eq(mf._probe[1], 1, 'stride 1')
  T.eq(mf._probe[2], 4, 'stride 2')
  T.eq(mf._probe[3], 2, 'storage offset (1-based)')
  T.eq(mf._probe[4], 0, 'not contiguous')
  T.errors(function() mf.register_op{name = 'strided_bad', num_inputs = 1, doc = 'x', strided = 1,
    lua_compute = [[ function() return function() end end ]]} end, 'strided must be true')
end)

-- gradients ------------------------------------------------------------------------------------
local function finite_diff(f, x0, eps)
  local g = {}
  for i = 1, #x0 do
    local xp, xm = {unpack(x0)}, {unpack(x0)}
    xp[i], xm[i] = x0[i] + eps, x0[i] - eps
    g[i] = (f(xp) - f(xm)) / (2 * eps)
  end
  return g
end

T.test('a correct Lua gradient rule matches finite differences', function()
  mf.register_op{name = 'scaled_cube', num_inputs = 2, doc = 'a * x^3 (a broadcast scalar)',
    infer_shape = function(s) return {s[2]} end,
    params = {k = {type = 'number', default = 1, doc = 'extra factor'}},
    gradient = function(a, x, y, gy, p)
      return {mf.sum(gy * x * x * x) * p.k, gy * a * x * x * (3 * p.k)}
    end,
    lua_compute = [[ function(ins, outs, p)
      return function()
        local a, n, xp, yp = ins[1]:data()[0], ins[2]:numel(), ins[2]:data(), outs[1]:data()
        for i = 0, n - 1 do local v = xp[i]; yp[i] = p.k * a * v * v * v end
      end end ]]}
  local a = mf.placeholder('float64', {}, 'a')
  local x = mf.placeholder('float64', {4}, 'x')
  local w = mf.constant(mf.tensor({1, -2, 0.5, 3}, 'float64'))
  local loss = mf.sum(mf.scaled_cube(a, x, {k = 1.5}) * w)
  local ga, gx = unpack(mf.gradients(loss, {a, x}))
  local sess = mf.Session()
  local a0, x0 = 0.7, {0.3, -1.2, 0.8, 1.1}
  local function L(av, xv) return sess:run(loss, {[a] = mf.tensor(av, 'float64'), [x] = mf.tensor(xv, 'float64')}):item() end
  local got_a, got_x = sess:run({ga, gx}, {[a] = mf.tensor(a0, 'float64'), [x] = mf.tensor(x0, 'float64')})
  local want_x = finite_diff(function(xv) return L(a0, xv) end, x0, 1e-6)
  local want_a = finite_diff(function(av) return L(av[1], x0) end, {a0}, 1e-6)
  T.near(got_a:item(), want_a[1], 1e-7, 'd/da')
  for i = 1, 4 do T.near(got_x[i], want_x[i], 1e-7, 'd/dx' .. i) end
end)

T.test('a gradient of the wrong shape or dtype is an error naming op, node, input and shapes', function()
  mf.register_op{name = 'bad_grad_shape', num_inputs = 1, doc = 'identity with a wrong gradient',
    gradient = function(x, y, gy) return {mf.sum(gy)} end,
    lua_compute = [[ function(ins, outs, p) return function() end end ]]}
  local x = mf.placeholder('float32', {2, 3}, 'x')
  local y = mf.bad_grad_shape(x)
  T.errors(function() mf.gradients(mf.sum(y), x) end, "op 'bad_grad_shape'", "node 'bad_grad_shape'",
    'input 1', 'scalar float32', '2x3 float32', "input's shape and dtype")
  mf.register_op{name = 'bad_grad_dtype', num_inputs = 1, doc = 'identity with a float64 gradient',
    gradient = function(x, y, gy) return {mf.cast(gy, 'float64')} end,
    lua_compute = [[ function(ins, outs, p) return function() end end ]]}
  T.errors(function() mf.gradients(mf.sum(mf.bad_grad_dtype(x)), x) end, "op 'bad_grad_dtype'",
    '2x3 float64', '2x3 float32')
end)

T.test('a gradient rule must return a list', function()
  mf.register_op{name = 'bare_grad', num_inputs = 1, doc = 'identity whose rule returns a bare symbol',
    gradient = function(x, y, gy) return gy end,
    lua_compute = [[ function(ins, outs, p) return function() end end ]]}
  local x = mf.placeholder('float32', {3}, 'x')
  T.errors(function() mf.gradients(mf.sum(mf.bare_grad(x)), x) end, "op 'bare_grad'", 'returned a symbol',
    'function(x1, ..., xn, y, gy, params) return {g1, ..., gn} end')
  mf.register_op{name = 'number_grad', num_inputs = 1, doc = 'identity whose rule returns a number',
    gradient = function(x, y, gy) return 1 end,
    lua_compute = [[ function(ins, outs, p) return function() end end ]]}
  T.errors(function() mf.gradients(mf.sum(mf.number_grad(x)), x) end, 'returned a number', 'expected a list')
  T.errors(function()
    mf.register_op{name = 'grad_not_fn', num_inputs = 1, doc = 'x', gradient = 3,
      lua_compute = [[ function(ins, outs, p) return function() end end ]]}
  end, 'function(x1, ..., xn, y, gy, params)', '{g1, ..., gn}')
end)

T.finish()
