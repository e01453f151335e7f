-- Gradient mode of the op tests: for every op with a gradient rule, mf.gradients of
-- L = sum(op(inputs) * W) (W fixed, so no symmetry hides an error) is compared in float64 with
-- central finite differences of L computed through the session. Inputs avoid kinks (0 for relu
-- and abs, ties for max/min, clamp bounds). Error: |analytic - numeric| / max(1, |numeric|) <= 1e-6.
-- Usage: moonflow tests/lua/test_gradients.lua [--device NAME] [op or case name]. With --device (the
-- GPU check: cuda), every op runs there: graphs in mf.Session{device = NAME}, the tape on copies of
-- the host leaves made by :to(NAME) (whose gradient rule brings each gradient back); the finite
-- differences perturb the host leaves as before. Ops registered from Lua (no cuda kernel) are skipped.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local DEV, only = nil, arg[1]
if arg[1] == '--device' then DEV, only = arg[2], arg[3] end
if DEV then assert(mf.devices and mf._device_id(DEV, 'test_gradients'), 'no device ' .. tostring(DEV)) end
local function on_dev(t) return DEV and t:to(DEV) or t end
-- a case's constant (a mask, indices, signs) on the device its inputs are on
local function K(data, dtype) return on_dev(mf.tensor(data, dtype)) end

-- deterministic inputs in [lo, hi], spread so no two are equal
local seed = 1
local function values(n, lo, hi)
  local out = {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    local u = (seed / 2147483648 + i * 0.6180339887) % 1
    out[i] = lo + (hi - lo) * (0.05 + 0.9 * u)
  end
  return out
end

local function make(shape, lo, hi)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local t = mf.zeros(shape, {dtype = 'float64'})
  local flat = t:reshape(math.max(n, 1))
  for i, v in ipairs(values(n, lo or -1, hi or 1)) do flat:set(i, v) end
  return t
end

local POS = {0.5, 2}
-- case: {name, op, inputs = {{shape, lo, hi[, const = true]}, ...}, call = function(syms...) -> symbol(s)};
-- const inputs are fed but not differentiated
local cases = {}
-- opts.eager_only: the op refuses graph symbols (its output size depends on values: masked_select),
-- so only the tape checks it
local function case(name, op, ins, call, opts)
  cases[#cases + 1] = {name = name, op = op, ins = ins, call = call, eager_only = opts and opts.eager_only}
end
local function unary(op, lo, hi, extra)
  case(op, op, {{{2, 3}, lo, hi}}, function(x) return mf[op](x, extra) end)
end

for _, op in ipairs{'neg', 'exp', 'sigmoid', 'tanh', 'sin', 'cos', 'square'} do unary(op, -1, 1) end
for _, op in ipairs{'log', 'log1p', 'sqrt', 'rsqrt'} do unary(op, POS[1], POS[2]) end
-- kinked ops: values in [0.1, 1] with random signs keep clear of 0
case('abs', 'abs', {{{2, 3}, 0.1, 1}}, function(x) return mf.abs(x * K({1, -1, 1}, 'float64')) end)
case('relu', 'relu', {{{2, 3}, 0.1, 1}}, function(x) return mf.relu(x * K({1, -1, 1}, 'float64')) end)
case('relu_backward', 'relu_backward', {{{2, 3}}, {{2, 3}, 0.1, 1, const = true}},
  function(g, b) return mf.relu_backward(g, b * K({1, -1, 1}, 'float64')) end)
for _, op in ipairs{'sign', 'floor', 'ceil', 'round'} do unary(op, 0.1, 0.4) end
case('clamp', 'clamp', {{{2, 3}, -1, 1}}, function(x) return mf.clamp(x, -0.33, 0.41) end)

case('add broadcast', 'add', {{{2, 3}}, {{3}}}, function(a, b) return a + b end)
case('sub broadcast', 'sub', {{{2, 1, 3}}, {{4, 1}}}, function(a, b) return a - b end)
case('mul broadcast', 'mul', {{{2, 3}}, {{2, 1}}}, function(a, b) return a * b end)
-- a tensor used twice: both uses' gradients accumulate (graph mode and the tape)
case('mul same tensor twice', 'mul', {{{2, 3}}}, function(a) return a * a + a end)
case('div broadcast', 'div', {{{2, 3}}, {{3}, POS[1], POS[2]}}, function(a, b) return a / b end)
case('pow', 'pow', {{{2, 3}, POS[1], POS[2]}, {{2, 3}, -1, 1}}, function(a, b) return mf.pow(a, b) end)
case('maximum', 'maximum', {{{2, 3}}, {{3}}}, function(a, b) return mf.maximum(a, b) end)
case('minimum', 'minimum', {{{2, 3}}, {{3}}}, function(a, b) return mf.minimum(a, b) end)
case('where', 'where', {{{2, 3}}, {{3}}}, function(a, b)
  return mf.where(K({{1, 0, 1}, {0, 0, 1}}, 'uint8'), a, b) end)
unary('erf', -1.5, 1.5)
unary('gelu', -2, 2)
case('leaky_relu', 'leaky_relu', {{{2, 3}, 0.1, 1}}, function(x) return mf.leaky_relu(x * K({1, -1, 1}, 'float64'), 0.2) end)
case('batch_norm', 'batch_norm', {{{3, 2, 2, 2}}, {{2}, POS[1], POS[2]}, {{2}}},
  function(x, w, b) return mf.batch_norm(x, w, b, 1e-3) end)
case('batch_norm 2-D', 'batch_norm', {{{4, 3}}, {{3}, POS[1], POS[2]}, {{3}}},
  function(x, w, b) return mf.batch_norm(x, w, b) end)
-- dropout with a fixed mask (drawn once, eagerly): the gradient is the mask itself
mf.manual_seed(3)
local fixed_mask = on_dev(mf.dropout_mask(mf.ones(2, 3, {dtype = 'float64'}), 0.5))
case('dropout (fixed mask)', 'mul', {{{2, 3}}}, function(x) return x * fixed_mask end)
case('index_select', 'index_select', {{{4, 3}}}, function(x) return mf.index_select(x, K({2, 4, 2}, 'int64'), 1) end)
case('index_add_like', 'index_add_like', {{{2, 3}}, {{2, 4}, const = true}},
  function(x, like) return mf.index_add_like(x, K({4, 1, 4}, 'int64'), like, 2) end)
case('cast', 'cast', {{{2, 3}}}, function(x) return mf.cast(x, 'float64') end)
case('to', 'to', {{{2, 3}}}, function(x) return mf.to(x, 'cpu') end)

case('matmul', 'matmul', {{{3, 4}}, {{4, 2}}}, function(a, b) return mf.matmul(a, b) end)
case('matmul transpose_a', 'matmul', {{{4, 3}}, {{4, 2}}}, function(a, b) return mf.matmul(a, b, true, false) end)
case('matmul transpose_b', 'matmul', {{{3, 4}}, {{2, 4}}}, function(a, b) return mf.matmul(a, b, false, true) end)
case('matmul batched broadcast', 'matmul', {{{2, 3, 4}}, {{4, 2}}}, function(a, b) return mf.matmul(a, b) end)

case('sum over dims 1,3', 'sum', {{{2, 3, 4}}}, function(x) return mf.sum(x, {1, 3}) end)
case('sum keepdim', 'sum', {{{2, 3, 4}}}, function(x) return mf.sum(x, 2, true) end)
case('sum all', 'sum', {{{2, 3}}}, function(x) return mf.sum(x) end)
case('mean over dims', 'mean', {{{2, 3, 4}}}, function(x) return mf.mean(x, {2, 3}) end)
case('max', 'max', {{{3, 4}}}, function(x) return mf.max(x, 2) end)
case('min keepdim', 'min', {{{3, 4}}}, function(x) return mf.min(x, 1, true) end)
case('prod', 'prod', {{{2, 3}, POS[1], POS[2]}}, function(x) return mf.prod(x, 2) end)
case('softmax', 'softmax', {{{3, 4}}}, function(x) return mf.softmax(x, 2) end)
case('log_softmax dim 1', 'log_softmax', {{{3, 4}}}, function(x) return mf.log_softmax(x, 1) end)
case('softmax_cross_entropy', 'softmax_cross_entropy', {{{3, 4}}, {{3, 4}, 0, 1}},
  function(x, l) return mf.softmax_cross_entropy(x, l, 2) end)

case('reshape', 'reshape', {{{2, 3}}}, function(x) return mf.reshape(x, 3, 2) end)
case('transpose', 'transpose', {{{2, 3, 4}}}, function(x) return mf.transpose(x, 1, 3) end)
case('permute', 'permute', {{{2, 3, 4}}}, function(x) return mf.permute(x, 3, 1, 2) end)
case('narrow', 'narrow', {{{4, 3}}}, function(x) return mf.narrow(x, 1, 2, 2) end)
case('slice', 'slice', {{{5, 3}}}, function(x) return mf.slice(x, 1, 1, 5, 2) end)
case('select', 'select', {{{4, 3}}}, function(x) return mf.select(x, 2, -1) end)
-- a view's gradient is pad_like(gy): these go through its gradient rule in grad of grad
case('narrow then tanh', 'narrow', {{{4, 3}}}, function(x) return mf.tanh(mf.narrow(x, 1, 2, 2)) end)
case('slice then tanh', 'slice', {{{5, 3}}}, function(x) return mf.tanh(mf.slice(x, 1, 1, 5, 2)) end)
case('select then tanh', 'select', {{{4, 3}}}, function(x) return mf.tanh(mf.select(x, 2, -1)) end)
case('expand after narrow then tanh', 'expand', {{{3, 1}}},
  function(x) return mf.tanh(mf.expand(mf.narrow(x, 1, 2, 2), 2, 3)) end)
case('pad_like', 'pad_like', {{{2, 3}}, {{5, 3}, const = true}}, function(x, l) return mf.pad_like(x, l, 1, 2, 1) end)
case('pad_like step', 'pad_like', {{{2, 3}}, {{5, 3}, const = true}},
  function(x, l) return mf.pad_like(mf.tanh(x), l, 1, -4, 2) end)
case('expand', 'expand', {{{2, 1}}}, function(x) return mf.expand(x, 3, 2, 4) end)
case('squeeze', 'squeeze', {{{2, 1, 3}}}, function(x) return mf.squeeze(x) end)
case('unsqueeze', 'unsqueeze', {{{2, 3}}}, function(x) return mf.unsqueeze(x, 2) end)
case('contiguous', 'contiguous', {{{2, 3}}}, function(x) return mf.contiguous(mf.transpose(x, 1, 2)) end)
case('split', 'split', {{{5, 2}}}, function(x) return mf.split(x, 2, 1) end)
case('concat', 'concat', {{{2, 3}}, {{1, 3}}}, function(a, b) return mf.concat({a, b, a}, 1) end)
-- the like input only lends its shape: no gradient flows to it
case('sum_to', 'sum_to', {{{2, 3}}, {{3}, const = true}}, function(g, like) return mf.sum_to(g, like) end)
case('broadcast_like', 'broadcast_like', {{{3}}, {{2, 3}, const = true}}, function(x, like) return mf.broadcast_like(x, like) end)
case('unreduce_like', 'unreduce_like', {{{3}}, {{2, 3}, const = true}}, function(x, like) return mf.unreduce_like(x, like, 1) end)
case('reshape_as', 'reshape_as', {{{2, 3}}, {{6}, const = true}}, function(x, like) return mf.reshape_as(x, like) end)

-- more cases live next to this file as grad_cases_<family>.lua, each returning
-- function(case, POS, K) that adds its cases with the same case() helper (K: a constant on the device)
local dir = arg[0]:match('(.*/)') or './'
local p = io.popen('ls ' .. dir .. 'grad_cases_*.lua 2>/dev/null')
for file in p:lines() do dofile(file)(case, POS, K) end
p:close()

local function check(c)
  mf.reset_default_graph()
  local tensors, syms, feeds = {}, {}, {}
  for i, spec in ipairs(c.ins) do
    tensors[i] = make(spec[1], spec[2], spec[3])
    syms[i] = mf.placeholder('float64', tensors[i]:size(), 'x' .. i)
  end
  local outs = c.call(unpack(syms))
  if mf.is_symbol(outs) then outs = {outs} end
  -- L = sum_k sum(out_k * W_k), W_k fixed per output
  local terms = {}
  for k, o in ipairs(outs) do
    local w = make(o:size(), -1, 1)
    terms[k] = mf.sum(o * w)
  end
  local L = terms[1]
  for k = 2, #terms do L = L + terms[k] end
  local wrt = {}
  for i, spec in ipairs(c.ins) do if not spec.const then wrt[#wrt + 1] = i end end
  local xs = {}
  for k, i in ipairs(wrt) do xs[k] = syms[i] end
  local grads = mf.gradients(L, xs)
  local sess = mf.Session{device = DEV}
  local function feed()
    local f = {}
    for i, s in ipairs(syms) do f[s] = tensors[i] end
    return f
  end
  local fetch = {}
  for k = 1, #grads do fetch[k] = grads[k] end
  local analytic = {sess:run(fetch, feed())}
  local h, worst = 1e-6, 0
  for k, i in ipairs(wrt) do
    local x = tensors[i]
    assert(analytic[k], ('no gradient for input %d'):format(i))
    local a = analytic[k]:contiguous():reshape(x:numel())
    local flat = x:reshape(x:numel())
    for j = 1, x:numel() do
      local v = flat:get(j)
      flat:set(j, v + h)
      local lp = sess:run(L, feed()):item()
      flat:set(j, v - h)
      local lm = sess:run(L, feed()):item()
      flat:set(j, v)
      local num = (lp - lm) / (2 * h)
      local err = math.abs(a:get(j) - num) / math.max(1, math.abs(num))
      if err > worst then worst = err end
      if err > 1e-6 then
        error(('%s: d/dx%d[%d]: analytic %.12g, numeric %.12g (error %.3g)'):format(c.name, i, j, a:get(j), num, err))
      end
    end
  end
  return worst
end

-- a Lua-registered op with a gradient rule: checked in both modes like the built-in ops
mf.register_op{name = 'grad_test_cube', num_inputs = 1, doc = 'x^3 (test op)', infer_shape = 'same',
  gradient = 'function(x, y, gy) return {gy * x * x * 3} end',
  lua_compute = [[ function(ins, outs, p)
    return function()
      local n, xp, yp = ins[1]:numel(), ins[1]:data(), outs[1]:data()
      for i = 0, n - 1 do local v = xp[i]; yp[i] = v * v * v end
    end end ]]}
case('a Lua-registered op', 'grad_test_cube', {{{2, 3}}}, function(x) return mf.grad_test_cube(x) end)

-- Tape mode (eager autograd, lua/moonflow/tape.lua): the same cases on tensors that require grad,
-- L:backward() against central differences of L computed eagerly. strided: each input of 2 or more
-- dims is fed as the transposed view of a leaf (a non-contiguous input, its gradient reaching the
-- base through the view). A second forward and backward checks that .grad accumulates.
local function tape_loss(c, leaves, feeds, ws)
  local args = {}
  for i = 1, #leaves do args[i] = feeds[i](leaves[i]) end
  local outs = c.call(unpack(args, 1, #leaves))
  if mf.is_tensor(outs) then outs = {outs} end
  local L
  for k, o in ipairs(outs) do
    if o:dtype() == 'float64' then
      ws[k] = ws[k] or make(o:size(), -1, 1):to(o:device())  -- `to` cases bring o back to the host
      local term = mf.sum(o * ws[k])
      L = L and L + term or term
    end
  end
  return L
end

local function check_tape(c, strided)
  local leaves, feeds = {}, {}
  local any_strided = false
  for i, spec in ipairs(c.ins) do
    local shape = spec[1]
    if strided and #shape >= 2 then
      local rs = {unpack(shape)}
      rs[#rs], rs[#rs - 1] = rs[#rs - 1], rs[#rs]
      leaves[i] = make(rs, spec[2], spec[3])
      feeds[i] = function(l) return mf.transpose(on_dev(l), #rs - 1, #rs) end
      any_strided = true
    else
      leaves[i] = make(shape, spec[2], spec[3])
      feeds[i] = on_dev
    end
    if not spec.const then leaves[i]:requires_grad_() end
  end
  if strided and not any_strided then return end
  local ws = {}
  tape_loss(c, leaves, feeds, ws):backward()
  local analytic = {}
  for i, spec in ipairs(c.ins) do
    if not spec.const then
      assert(leaves[i].grad, ('no tape gradient for input %d'):format(i))
      analytic[i] = leaves[i].grad:clone():reshape(leaves[i]:numel())  -- a copy: backward accumulates in place
    end
  end
  tape_loss(c, leaves, feeds, ws):backward()
  local h = 1e-6
  mf.no_grad(function()
    for i, spec in ipairs(c.ins) do
      if not spec.const then
        local x, a = leaves[i], analytic[i]
        local twice = x.grad:contiguous():reshape(x:numel())
        local flat = x:reshape(x:numel())
        for j = 1, x:numel() do
          local v = flat:get(j)
          flat:set(j, v + h)
          local lp = tape_loss(c, leaves, feeds, ws):item()
          flat:set(j, v - h)
          local lm = tape_loss(c, leaves, feeds, ws):item()
          flat:set(j, v)
          local num = (lp - lm) / (2 * h)
          local err = math.abs(a:get(j) - num) / math.max(1, math.abs(num))
          if err > 1e-6 then
            error(('%s (tape%s): d/dx%d[%d]: analytic %.12g, numeric %.12g (error %.3g)'):format(c.name,
              strided and ', strided' or '', i, j, a:get(j), num, err))
          end
          if math.abs(twice:get(j) - 2 * a:get(j)) > 1e-12 * math.max(1, math.abs(a:get(j))) then
            error(('%s (tape): d/dx%d[%d] after two backward calls is %.17g; expected twice %.17g'):format(c.name,
              i, j, twice:get(j), a:get(j)))
          end
        end
      end
    end
  end)
end

-- Grad of grad: G(x) = sum(dL/dx * V) with dL/dx from autograd.grad{create_graph = true}; G's
-- tape gradient against central differences of G (each evaluated with a first-order autograd.grad).
local function check_grad_of_grad(c)
  local leaves, feeds = {}, {}
  for i, spec in ipairs(c.ins) do
    leaves[i] = make(spec[1], spec[2], spec[3])
    feeds[i] = on_dev
    if not spec.const then leaves[i]:requires_grad_() end
  end
  local ws, vs = {}, {}
  local function G(create)
    local wrt = {}
    for i, spec in ipairs(c.ins) do if not spec.const then wrt[#wrt + 1] = leaves[i] end end
    local gs = mf.autograd.grad(tape_loss(c, leaves, feeds, ws), wrt, nil, {create_graph = create})
    local s
    for k, g in ipairs(gs) do
      vs[k] = vs[k] or make(g:size(), -1, 1):to(g:device())  -- a host leaf's gradient is on the host
      local term = mf.sum(g * vs[k])
      s = s and s + term or term
    end
    return s
  end
  G(true):backward()
  local h = 1e-5
  for i, spec in ipairs(c.ins) do
    if not spec.const then
      local x = leaves[i]
      assert(x.grad, ('no second-order gradient for input %d'):format(i))
      local a = x.grad:contiguous():reshape(x:numel())
      local flat = mf.no_grad(function() return x:reshape(x:numel()) end)
      for j = 1, x:numel() do
        local v = flat:get(j)
        flat:set(j, v + h)
        local gp = G(false):item()
        flat:set(j, v - h)
        local gm = G(false):item()
        flat:set(j, v)
        local num = (gp - gm) / (2 * h)
        local err = math.abs(a:get(j) - num) / math.max(1, math.abs(num))
        if err > 1e-5 then
          error(('%s (grad of grad): d/dx%d[%d]: analytic %.12g, numeric %.12g (error %.3g)'):format(c.name, i, j,
            a:get(j), num, err))
        end
      end
    end
  end
end
local GRAD_OF_GRAD = {tanh = true, ['mul broadcast'] = true, matmul = true, ['matmul batched broadcast'] = true,
                      softmax = true, ['log_softmax dim 1'] = true, exp = true, sigmoid = true, ['div broadcast'] = true,
                      ['narrow then tanh'] = true, ['slice then tanh'] = true, ['select then tanh'] = true,
                      ['expand after narrow then tanh'] = true, ['pad_like step'] = true}

local covered = {}
for _, c in ipairs(cases) do
  covered[c.op] = true
  local lua_op = bit.band(mf._ops[c.op].flags, require('moonflow.ffi_abi').MF_OPF_LUA) ~= 0
  if (not only or c.op == only or c.name == only) and not (DEV and lua_op) then
    if not c.eager_only then T.test('gradient of ' .. c.name, function() check(c) end) end
    T.test('tape gradient of ' .. c.name, function() check_tape(c, false) end)
    T.test('tape gradient of ' .. c.name .. ' (strided inputs)', function() check_tape(c, true) end)
    if GRAD_OF_GRAD[c.name] then
      T.test('grad of grad of ' .. c.name, function() check_grad_of_grad(c) end)
    end
  end
end

T.test('every op with a gradient rule has a gradient case', function()
  local missing = {}
  for _, name in ipairs(mf.list_ops()) do
    local op = mf._ops[name]
    -- nothing to check where nothing flows back: inputs that lend only their shape (the registry's
    -- lends_shape), or a rule that gives no input a gradient even with no arguments (one_hot's labels)
    local rule = op.gradient_src and op.gradient_src ~= '' and mf._gradient_rule(op)
    local ok, res = pcall(rule or error)
    local nothing = op.shape_only or (ok and type(res) == 'table' and next(res) == nil)
    if rule and not nothing and not covered[name] then missing[#missing + 1] = name end
  end
  T.eq(table.concat(missing, ', '), '', 'ops with gradients but no case')
end)

T.test('a gradient through an op without one is a clear error', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {3}, 'x')
  local y = mf.sum(mf.cumprod_grad(x * 2, mf.constant(mf.ones(3, {dtype = 'float64'})), 1))
  T.errors(function() mf.gradients(y, {x}) end, "op 'cumprod_grad'", 'has no gradient')
end)

T.test('integer outputs (comparisons, argmax) carry no gradient; a mask from one still works', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {4}, 'x')
  local y = mf.sum(mf.cast(mf.gt(x, 0), 'float64') * x * x)
  local g = mf.gradients(y, {x})[1]
  local v = mf.Session():run(g, {[x] = mf.tensor({-1, 2, -3, 0.5}, 'float64')})
  T.tensor_eq(v, {0, 4, 0, 1})
  T.eq(mf.gradients(mf.sum(mf.cast(mf.argmax(x, 1), 'float64')), {x})[1], nil)
end)

T.finish()
