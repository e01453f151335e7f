-- Cases of the ops graph mode builds on: the autodiff helpers that take a "like" input (sum_to,
-- broadcast_like, unreduce_like, reshape_as, pad_like, reduced_count, ones_like, zeros_like),
-- softmax_cross_entropy, no_op, and the stateful ops that write their inputs in place (assign,
-- assign_add and the fused optimizer updates), checked through the harness's writes field.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local ALL = {'float32', 'float64', 'int32', 'int64'}
local FLOATS = {'float32', 'float64'}
local abs, sqrt, exp, log, huge = math.abs, math.sqrt, math.exp, math.log, math.huge
local input = L.input
local views_input1 = L.views_input1

-- sum_to, broadcast_like -------------------------------------------------------------------------
local function sum_to_ref(ins)
  local x, shape = ins[1], L.copy(ins[2].shape)
  local out, scale, lead = {}, {}, #x.shape - #shape
  for i = 1, L.numel(shape) do out[i], scale[i] = 0, 0 end
  for i = 1, #x.data do  -- each element of x adds into the element of like it was broadcast from
    local idx, to = L.unravel(i, x.shape), {}
    for d = 1, #shape do to[d] = shape[d] == 1 and 1 or idx[d + lead] end
    local j = L.ravel(to, shape)
    out[j] = out[j] + x.data[i]
    scale[j] = scale[j] + math.abs(x.data[i])
  end
  -- any summation order is right: the error bound scales with the sum of magnitudes
  local r = L.array(shape, out)
  r.scale = scale
  return r
end
local function sum_to(name, sx, slike, more)
  local c = {name = name, op = 'sum_to', inputs = {input(sx), input(slike)}, dtypes = ALL, ref = sum_to_ref}
  for k, v in pairs(more or {}) do c[k] = v end
  add(c)
end
sum_to('sum_to', {2, 3, 4}, {3, 1}, {empty = {{{2, 0, 4}, {0, 1}}, {{0, 3, 4}, {3, 1}}}})
sum_to('sum_to_leading', {4, 3}, {3}, {empty = {{{0, 3}, {3}}}})
sum_to('sum_to_size1', {2, 1, 3}, {1, 1, 3})
sum_to('sum_to_scalar', {2, 3}, {}, {empty = {{{2, 0}, {}}}})
sum_to('sum_to_same', {2, 3}, {2, 3})
sum_to('sum_to_from_empty', {0}, {1})  -- nothing to sum: zeros
sum_to('sum_to_like_dtype', {3, 4}, {1, 4}, {inputs = {input({3, 4}), input({1, 4}, {dtype = 'uint8'})}})
sum_to('sum_to_8d', {2, 2, 1, 2, 2, 1, 2, 2}, {1, 1, 2, 1, 1, 2})
sum_to('sum_to_threads', {300, 200}, {200})
add{name = 'sum_to_not_broadcast', op = 'sum_to', inputs = {input({2, 3}), input({4})},
    error = 'sum_to: x is 2x3, like is 4'}
add{name = 'sum_to_like_bigger', op = 'sum_to', inputs = {input({3}), input({2, 3})},
    error = 'sum_to: x is 3, like is 2x3; like must broadcast to x'}

local function broadcast_like_ref(ins)
  return L.array(L.copy(ins[2].shape), L.spread(ins[1], ins[2].shape))
end
local function broadcast_like(name, sx, slike, empty)
  add{name = name, op = 'broadcast_like', inputs = {input(sx), input(slike)}, dtypes = DT, exact = true,
      ref = broadcast_like_ref, check_out = views_input1, empty = empty}
end
broadcast_like('broadcast_like', {3, 1}, {2, 3, 4}, {{{3, 1}, {3, 0}}, {{0, 1}, {2, 0, 4}}})
broadcast_like('broadcast_like_leading', {4}, {3, 4})
broadcast_like('broadcast_like_scalar', {}, {2, 3}, {{{}, {0, 3}}})
broadcast_like('broadcast_like_same', {2, 3}, {2, 3})
add{name = 'broadcast_like_bad', op = 'broadcast_like', inputs = {input({2, 3}), input({3})},
    error = 'broadcast_like: x is 2x3, like is 3; x must broadcast to like'}

-- unreduce_like, reshape_as ------------------------------------------------------------------------
local function unreduce_like_ref(ins, p)
  local x, shape = ins[1], L.copy(ins[2].shape)
  local nd, red = #shape, {}
  if p.dim == nil or #p.dim == 0 then
    for d = 1, nd do red[d] = true end
  else
    for _, d in ipairs(p.dim) do red[L.dim(d, nd)] = true end
  end
  local out = {}
  for i = 1, L.numel(shape) do
    local idx, src = L.unravel(i, shape), {}
    for d = 1, nd do
      if not red[d] then src[#src + 1] = idx[d] elseif p.keepdim then src[#src + 1] = 1 end
    end
    out[i] = L.at(x, src)
  end
  return L.array(shape, out)
end
local function unreduce_like(name, sx, slike, params, args, empty)
  add{name = name, op = 'unreduce_like', inputs = {input(sx), input(slike)}, params = params, args = args,
      dtypes = DT, exact = true, ref = unreduce_like_ref, check_out = views_input1, empty = empty}
end
unreduce_like('unreduce_like', {2, 4}, {2, 3, 4}, {dim = {2}}, {{2}}, {{{2, 4}, {2, 0, 4}}, {{0, 4}, {0, 3, 4}}})
unreduce_like('unreduce_like_keepdim', {1, 3, 1}, {2, 3, 4}, {dim = {1, 3}, keepdim = true}, {{1, 3}, true},
              {{{1, 0, 1}, {2, 0, 4}}})
unreduce_like('unreduce_like_neg', {2, 3}, {2, 3, 4}, {dim = {-1}})
unreduce_like('unreduce_like_all', {}, {2, 3}, {}, nil, {{{}, {0, 3}}})
unreduce_like('unreduce_like_all_keepdim', {1, 1}, {2, 3}, {keepdim = true})
unreduce_like('unreduce_like_size1', {3}, {3, 1}, {dim = {2}})
add{name = 'unreduce_like_bad', op = 'unreduce_like', inputs = {input({2, 5}), input({2, 3, 4})}, params = {dim = {2}},
    error = 'unreduce_like: x is 2x5; does not match a reduction of 2x3x4'}

local function reshape_as_ref(ins) return L.array(L.copy(ins[2].shape), L.copy(ins[1].data)) end
-- a view when x is contiguous, else a copy
local function reshape_as_out(outs, ins)
  if ins[1]._is_contig ~= 0 then return views_input1(outs, ins) end
end
local function reshape_as(name, sx, slike, empty)
  add{name = name, op = 'reshape_as', inputs = {input(sx), input(slike)}, dtypes = DT, exact = true,
      ref = reshape_as_ref, check_out = reshape_as_out, empty = empty}
end
reshape_as('reshape_as', {2, 3, 4}, {4, 6}, {{{0, 3, 4}, {4, 0}}})
reshape_as('reshape_as_1d', {6}, {2, 3})
reshape_as('reshape_as_to_scalar', {1, 1}, {})
reshape_as('reshape_as_from_scalar', {}, {1, 1})
add{name = 'reshape_as_bad', op = 'reshape_as', inputs = {input({2, 3}), input({4})},
    error = 'reshape_as: x is 2x3, like is 4; element counts differ'}

-- pad_like ---------------------------------------------------------------------------------------
local function pad_like_ref(ins, p)
  local x, shape = ins[1], L.copy(ins[2].shape)
  local d = L.dim(p.dim or 1, #shape)
  local start, step = p.start or 1, p.step or 1
  if start < 0 then start = start + shape[d] + 1 end
  local out = {}
  for i = 1, L.numel(shape) do out[i] = 0 end
  for i = 1, #x.data do
    local idx = L.unravel(i, x.shape)
    idx[d] = start + (idx[d] - 1) * step
    out[L.ravel(idx, shape)] = x.data[i]
  end
  return L.array(shape, out)
end
local function pad_like(name, sx, slike, params, args, empty)
  add{name = name, op = 'pad_like', inputs = {input(sx), input(slike)}, params = params, args = args, dtypes = DT,
      exact = true, ref = pad_like_ref, empty = empty}
end
pad_like('pad_like', {2, 2}, {2, 5}, {dim = 2, start = 2, step = 2}, {2, 2, 2}, {{{0, 2}, {0, 5}}, {{2, 0}, {2, 5}}})
pad_like('pad_like_dim1', {2, 3}, {5, 3}, {dim = 1, start = 3})
pad_like('pad_like_from_end', {2, 3}, {5, 3}, {start = -2})  -- the last two rows
pad_like('pad_like_neg_dim', {3, 2, 1}, {3, 2, 4}, {dim = -1, start = -1})
pad_like('pad_like_step3', {2, 2, 3}, {2, 7, 3}, {dim = 2, start = 2, step = 3})
pad_like('pad_like_whole', {3, 4}, {3, 4}, {dim = 2})
pad_like('pad_like_1d', {1}, {4}, {start = -1})
add{name = 'pad_like_does_not_fit', op = 'pad_like', inputs = {input({2, 3}), input({2, 4})},
    params = {dim = 2, start = 3}, error = 'pad_like: x is 2x3, like is 2x4; x must fit into like along dim 2'}

-- reduced_count, ones_like, zeros_like --------------------------------------------------------------
local function reduced_count_ref(ins, p)
  local shape, n, red = ins[1].shape, 1, {}
  if p.dim == nil or #p.dim == 0 then
    for d = 1, #shape do red[d] = true end
  else
    for _, d in ipairs(p.dim) do red[L.dim(d, #shape)] = true end
  end
  for d = 1, #shape do if red[d] then n = n * shape[d] end end
  return L.array({}, {n})
end
local function reduced_count(name, shape, params, args, empty)
  add{name = name, op = 'reduced_count', inputs = {input(shape)}, params = params, args = args, dtypes = DT,
      exact = true, ref = reduced_count_ref, empty = empty}
end
reduced_count('reduced_count', {2, 3, 4}, nil, nil, {{{0, 3, 4}}})
reduced_count('reduced_count_dim', {2, 3, 4}, {dim = {2}}, {{2}}, {{{2, 0, 4}}, {{0, 3, 4}}})
reduced_count('reduced_count_dims', {2, 3, 4}, {dim = {1, -1}})
reduced_count('reduced_count_scalar', {}, nil)

local function const_like(v)
  return function(ins)
    local data = {}
    for i = 1, #ins[1].data do data[i] = v end
    return L.array(L.copy(ins[1].shape), data)
  end
end
for _, o in ipairs{{'ones_like', 1}, {'zeros_like', 0}} do
  local name, v = o[1], o[2]
  add{name = name, op = name, inputs = {input({2, 3, 4})}, dtypes = DT, exact = true, ref = const_like(v),
      empty = {{{0, 3}}}}
  add{name = name .. '_scalar', op = name, inputs = {input({})}, dtypes = DT, exact = true, ref = const_like(v)}
end

-- softmax_cross_entropy --------------------------------------------------------------------------
-- -sum_i labels_i * log_softmax(x)_i along dim, with log_softmax(x)_i = x_i - m - log(sum_j exp(x_j - m))
-- and m the line's max; labels are non-negative, so every term has one sign and nothing cancels
local function xent_ref(ins, p)
  local x, lab = ins[1], ins[2]
  local nd = #x.shape
  local d = L.dim(p.dim or -1, nd)
  local st, line_shape, line_st, shape = L.strides(x.shape), {}, {}, {}
  for k = 1, nd do
    if k ~= d then
      line_shape[#line_shape + 1], line_st[#line_st + 1] = x.shape[k], st[k]
      shape[#shape + 1] = x.shape[k]
    end
  end
  local out, n, sd = {}, x.shape[d], st[d]
  L.walk(line_shape, {line_st}, function(i, o)  -- one line along dim d per call
    local base, m, s, loss = o[1] + 1, -huge, 0, 0
    for j = 0, n - 1 do m = math.max(m, x.data[base + j * sd]) end
    for j = 0, n - 1 do s = s + exp(x.data[base + j * sd] - m) end
    for j = 0, n - 1 do
      local k = base + j * sd
      loss = loss - lab.data[k] * (x.data[k] - m - log(s))
    end
    out[i] = loss
  end)
  return L.array(shape, out)
end
local SOFT, LABELS = {lo = -3, hi = 3}, {lo = 0, hi = 1}
local function xent(name, shape, params, args, logits, labels, empty)
  add{name = name, op = 'softmax_cross_entropy',
      inputs = {input(shape, logits or SOFT), input(shape, labels or LABELS)}, params = params, args = args,
      ref = xent_ref, empty = empty}
end
xent('softmax_cross_entropy', {2, 3, 4}, nil, nil, nil, nil, {{{0, 4}, {0, 4}}, {{3, 0}, {3, 0}}})
xent('softmax_cross_entropy_dim1', {3, 4, 2}, {dim = 1}, {1}, nil, nil, {{{0, 2}, {0, 2}}})
xent('softmax_cross_entropy_dim2', {3, 4, 2}, {dim = 2})
xent('softmax_cross_entropy_neg2', {2, 5, 3}, {dim = -2})
xent('softmax_cross_entropy_1d', {6})
-- exp(1000) overflows even float64: only the max-subtracted form gets these right
xent('softmax_cross_entropy_large', {3, 5}, nil, nil, {lo = 995, hi = 1005})
xent('softmax_cross_entropy_one_hot', {3, 4}, nil, nil,
     {values = {1000, -1000, 0, 999, -1000, 1000, 1000, 0, 0.5, -2000, -1000, 1000.5}},
     {values = {1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}})
xent('softmax_cross_entropy_threads', {150, 50})
add{name = 'softmax_cross_entropy_bad_shapes', op = 'softmax_cross_entropy', inputs = {input({2, 3}), input({2, 4})},
    error = 'softmax_cross_entropy: logits are 2x3, labels 2x4; expected one shape'}
add{name = 'softmax_cross_entropy_mixed_dtypes', op = 'softmax_cross_entropy',
    inputs = {input({2, 3}, {dtype = 'float32'}), input({2, 3}, {dtype = 'float64'})},
    error = 'logits are float32, labels float64; expected one dtype'}
add{name = 'softmax_cross_entropy_int', op = 'softmax_cross_entropy', inputs = {input({2, 3}), input({2, 3})},
    dtypes = {'int32'}, error = 'expected float32 or float64'}

-- no_op: no inputs, no outputs --------------------------------------------------------------------
add{name = 'no_op', op = 'no_op', inputs = {}, ref = function() return {} end}

-- assign, assign_add: write ref, return it --------------------------------------------------------
-- A stateful op's reference: the new values of the inputs it writes, by index; its one output is
-- a view of input 1, so it equals input 1's new value.
local function updated(written) return {written[1], written = written} end
local function assign_ref(ins)
  return updated{L.array(L.copy(ins[1].shape), L.spread(ins[2], ins[1].shape))}
end
local function assign_add_ref(ins)
  local r, v = ins[1], L.spread(ins[2], ins[1].shape)
  local out = {}
  for i = 1, #r.data do out[i] = r.data[i] + v[i] end
  return updated{L.array(L.copy(r.shape), out)}
end
-- suffix, shape of ref, shape of value, empty variants, value is a Lua number
local ASSIGN_SHAPES = {
  {'', {2, 3, 4}, {2, 3, 4}, {{{0, 3}, {0, 3}}, {{2, 0, 4}, {2, 1, 4}}}},
  {'_bcast', {3, 4}, {4}, {{{0, 4}, {4}}}},
  {'_number', {2, 3}, {}, nil, true},
  {'_scalar', {}, {}},
}
for _, o in ipairs{{'assign', assign_ref}, {'assign_add', assign_add_ref}} do
  local name, ref = o[1], o[2]
  for _, s in ipairs(ASSIGN_SHAPES) do
    local ins = {input(s[2]), input(s[3])}
    ins[2].number = s[5]
    add{name = name .. s[1], op = name, inputs = ins, writes = {1}, dtypes = DT, ref = ref,
        check_out = views_input1, empty = s[4]}
  end
  add{name = name .. '_bad_shapes', op = name, inputs = {input({2, 3}), input({3, 2})},
      error = name .. ': ref is 2x3, value is 3x2'}
  add{name = name .. '_value_bigger', op = name, inputs = {input({3}), input({2, 3})},
      error = name .. ': value is 2x3; it must broadcast to ref 3'}
  add{name = name .. '_mixed_dtypes', op = name,
      inputs = {input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
      error = name .. ': value is float64, ref is float32'}
  -- an expanded ref has elements sharing memory: writing it in place is refused
  add{name = name .. '_expanded_ref', op = name, check = function(mf)
    local ok, err = pcall(mf[name], mf.zeros(3, 1):expand(3, 4), mf.ones(3, 4))
    if ok then return 'writing an expanded ref raised no error' end
    if not tostring(err):find(name .. ': ref is an expanded view', 1, true) then
      return 'error lacks the rule: ' .. tostring(err)
    end
  end}
end

-- sgd_update, momentum_update, adam_update ------------------------------------------------------------
-- lr (and adam's step) are inputs: one-element float tensors of either float dtype, whatever var's
-- is, read when the op runs. Each reference follows the op's documented formula in float64 and
-- gives an error scale: the sum of the magnitudes the result is computed from (what one rounding
-- per operation, in float32, is measured against where terms cancel).
local function scaled(shape, data, scale)
  local a = L.array(L.copy(shape), data)
  a.scale = scale
  return a
end
-- g = grad + weight_decay * var; var -= lr * g
local function sgd_ref(ins, p)
  local w, g, lr, wd = ins[1], L.spread(ins[2], ins[1].shape), ins[3].data[1], p.weight_decay or 0
  local out, sc = {}, {}
  for i = 1, #w.data do
    local wi = w.data[i]
    out[i] = wi - lr * (g[i] + wd * wi)
    sc[i] = abs(wi) + lr * (abs(g[i]) + wd * abs(wi))
  end
  return updated{scaled(w.shape, out, sc)}
end
-- g = grad + wd * var; accum = momentum * accum + (1 - dampening) * g;
-- var -= lr * (nesterov ? g + momentum * accum : accum)
local function momentum_ref(ins, p)
  local w, a, g, lr = ins[1], ins[2], L.spread(ins[3], ins[1].shape), ins[4].data[1]
  local mu, damp, wd = p.momentum or 0.9, p.dampening or 0, p.weight_decay or 0
  local nw, na, sw, sa = {}, {}, {}, {}
  for i = 1, #w.data do
    local wi = w.data[i]
    local gi, sg = g[i] + wd * wi, abs(g[i]) + wd * abs(wi)
    na[i] = mu * a.data[i] + (1 - damp) * gi
    sa[i] = mu * abs(a.data[i]) + (1 - damp) * sg
    if p.nesterov then
      nw[i] = wi - lr * (gi + mu * na[i])
      sw[i] = abs(wi) + lr * (sg + mu * sa[i])
    else
      nw[i] = wi - lr * na[i]
      sw[i] = abs(wi) + lr * sa[i]
    end
  end
  return updated{scaled(w.shape, nw, sw), scaled(w.shape, na, sa)}
end
-- t = step; decoupled: var *= 1 - lr * wd, else g = grad + wd * var; m, v moving averages of g,
-- g^2; bc1 = 1 - beta1^t, bc2 = 1 - beta2^t; PyTorch: var -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),
-- TensorFlow (tf_epsilon): var -= lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps)
local function adam_ref(ins, p)
  local w, m, v, g = ins[1], ins[2], ins[3], L.spread(ins[4], ins[1].shape)
  local t, lr = ins[5].data[1], ins[6].data[1]
  local b1, b2, eps, wd = p.beta1 or 0.9, p.beta2 or 0.999, p.epsilon or 1e-8, p.weight_decay or 0
  local bc1, bc2 = 1 - b1 ^ t, 1 - b2 ^ t
  local nw, nm, nv, sw, sm, sv = {}, {}, {}, {}, {}, {}
  for i = 1, #w.data do
    local wi, gi, sg = w.data[i], g[i], abs(g[i])
    if p.decoupled then
      wi = wi * (1 - lr * wd)
    else
      gi, sg = gi + wd * wi, sg + wd * abs(wi)
    end
    nm[i] = b1 * m.data[i] + (1 - b1) * gi
    sm[i] = b1 * abs(m.data[i]) + (1 - b1) * sg
    nv[i] = b2 * v.data[i] + (1 - b2) * gi * gi
    sv[i] = b2 * v.data[i] + (1 - b2) * sg * sg
    local step, den
    if p.tf_epsilon then
      step, den = lr * sqrt(bc2) / bc1, sqrt(nv[i]) + eps
    else
      step, den = lr / bc1, sqrt(nv[i]) / sqrt(bc2) + eps
    end
    nw[i] = wi - step * nm[i] / den
    sw[i] = abs(wi) + step * sm[i] / den
  end
  return updated{scaled(w.shape, nw, sw), scaled(w.shape, nm, sm), scaled(w.shape, nv, sv)}
end

local function update(c)
  c.check_out, c.dtypes = views_input1, c.dtypes or FLOATS
  add(c)
end
-- a run-time scalar input holding value: 0-dim unless shape says otherwise; more fixes its dtype
-- (else the run's) or makes it a Lua number
local function scalar(value, more, shape) return input(shape or {}, {values = {value}}, more) end
local F32, F64, NUMBER = {dtype = 'float32'}, {dtype = 'float64'}, {number = true}

local function sgd(name, sv, sg, lr, params, args, more)
  local c = {name = name, op = 'sgd_update', inputs = {input(sv), input(sg), lr}, writes = {1}, params = params,
             args = args, ref = sgd_ref}
  for k, v in pairs(more or {}) do c[k] = v end
  update(c)
end
sgd('sgd_update', {3, 4}, {3, 4}, scalar(0.1), nil, nil, {empty = {{{0, 4}, {0, 4}, {}}, {{3, 0}, {1, 0}, {}}}})
sgd('sgd_update_weight_decay', {2, 3, 4}, {2, 3, 4}, scalar(0.5), {weight_decay = 0.1})
sgd('sgd_update_positional', {3, 4}, {3, 4}, scalar(0.25), {weight_decay = 0.05}, {0.05})
sgd('sgd_update_bcast', {3, 4}, {4}, scalar(0.3), {weight_decay = 0.2})
sgd('sgd_update_scalar', {}, {}, scalar(0.25), {weight_decay = 0.5})
-- lr's dtype is its own: float64 beside a float32 variable, float32 beside a float64 one
sgd('sgd_update_lr_float64', {4, 3}, {4, 3}, scalar(0.1, F64), {weight_decay = 0.01})
sgd('sgd_update_lr_float32', {4, 3}, {4, 3}, scalar(0.1, F32))
-- a 1x1 lr takes the transposed, strided and narrowed layouts too
sgd('sgd_update_lr_1x1', {3, 4}, {3, 4}, scalar(0.2, nil, {1, 1}), {weight_decay = 0.1})
sgd('sgd_update_lr_number', {2, 3}, {2, 3}, scalar(0.1, NUMBER))
sgd('sgd_update_threads', {300, 200}, {300, 200}, scalar(0.1), {weight_decay = 0.01})
add{name = 'sgd_update_bad_shapes', op = 'sgd_update', inputs = {input({2, 3}), input({3, 2}), scalar(0.1)},
    error = 'sgd_update: var is 2x3, grad is 3x2'}
add{name = 'sgd_update_mixed_dtypes', op = 'sgd_update',
    inputs = {input({2}, F32), input({2}, F64), scalar(0.1)},
    error = 'sgd_update: grad is float64, var is float32'}
add{name = 'sgd_update_int', op = 'sgd_update', inputs = {input({2}), input({2}), scalar(0.1, F32)},
    dtypes = {'int32'}, error = 'sgd_update: input var is int32; expected float32 or float64'}
add{name = 'sgd_update_lr_elements', op = 'sgd_update', inputs = {input({2, 3}), input({2, 3}), input({3})},
    error = 'sgd_update: lr is 3; expected one element (the learning rate)'}
add{name = 'sgd_update_lr_int', op = 'sgd_update',
    inputs = {input({2, 3}), input({2, 3}), input({}, {dtype = 'int32'})},
    error = 'sgd_update: lr is int32; expected float32 or float64'}

local ACCUM = {lo = -1, hi = 1}
local function momentum(name, sv, sg, lr, params, args, empty)
  update{name = name, op = 'momentum_update', inputs = {input(sv), input(sv, ACCUM), input(sg), lr}, writes = {1, 2},
         params = params, args = args, ref = momentum_ref, empty = empty}
end
momentum('momentum_update', {3, 4}, {3, 4}, scalar(0.1), {momentum = 0.9}, nil, {{{0, 4}, {0, 4}, {0, 4}, {}}})
momentum('momentum_update_default', {2, 3, 4}, {2, 3, 4}, scalar(0.01))
momentum('momentum_update_nesterov', {4, 3}, {4, 3}, scalar(0.1), {momentum = 0.8, nesterov = true})
momentum('momentum_update_dampening', {3, 4}, {3, 4}, scalar(0.1),
         {momentum = 0.9, dampening = 0.5, weight_decay = 0.05})
momentum('momentum_update_nesterov_wd', {2, 3, 4}, {2, 3, 4}, scalar(0.05),
         {momentum = 0.7, weight_decay = 0.1, nesterov = true})
momentum('momentum_update_positional', {3, 4}, {3, 4}, scalar(0.05),
         {momentum = 0.5, dampening = 0.1, weight_decay = 0.01, nesterov = true}, {0.5, 0.1, 0.01, true})
momentum('momentum_update_bcast', {3, 4}, {1, 4}, scalar(0.2), {weight_decay = 0.1})
momentum('momentum_update_scalar', {}, {}, scalar(0.2), {nesterov = true, weight_decay = 0.3})
momentum('momentum_update_lr_float64', {4, 3}, {4, 3}, scalar(0.1, F64), {dampening = 0.2})
momentum('momentum_update_lr_float32', {4, 3}, {4, 3}, scalar(0.1, F32), {nesterov = true})
momentum('momentum_update_lr_1x1', {3, 4}, {3, 4}, scalar(0.1, nil, {1, 1}), {weight_decay = 0.1})
momentum('momentum_update_lr_number', {2, 3}, {2, 3}, scalar(0.1, NUMBER))
momentum('momentum_update_threads', {300, 200}, {300, 200}, scalar(0.1),
         {momentum = 0.9, dampening = 0.1, weight_decay = 0.01, nesterov = false})
add{name = 'momentum_update_bad_accum', op = 'momentum_update',
    inputs = {input({2, 3}), input({3}), input({2, 3}), scalar(0.1)},
    error = "momentum_update: accum is 3; it must have var's shape 2x3"}
add{name = 'momentum_update_bad_grad', op = 'momentum_update',
    inputs = {input({2, 3}), input({2, 3}), input({2}), scalar(0.1)},
    error = 'momentum_update: var is 2x3, grad is 2'}
add{name = 'momentum_update_mixed_dtypes', op = 'momentum_update',
    inputs = {input({2}, F64), input({2}, F32), input({2}, F64), scalar(0.1)},
    error = 'momentum_update: accum is float32, var is float64'}
add{name = 'momentum_update_lr_elements', op = 'momentum_update',
    inputs = {input({2}), input({2}), input({2}), input({2, 1})},
    error = 'momentum_update: lr is 2x1; expected one element (the learning rate)'}
add{name = 'momentum_update_lr_int', op = 'momentum_update',
    inputs = {input({2}), input({2}), input({2}), input({}, {dtype = 'int64'})},
    error = 'momentum_update: lr is int64; expected float32 or float64'}

-- m, v and grad; step holds t
local MOM, VAR = {lo = -0.5, hi = 0.5}, {lo = 0, hi = 1}
local function adam(name, sv, sg, step, lr, params, args, more)
  local c = {name = name, op = 'adam_update', writes = {1, 2, 3}, params = params, args = args, ref = adam_ref,
             inputs = {input(sv), input(sv, MOM), input(sv, VAR), input(sg), step, lr}}
  for k, v in pairs(more or {}) do c[k] = v end
  update(c)
end
adam('adam_update', {3, 4}, {3, 4}, scalar(3), scalar(0.01), nil, nil,
     {empty = {{{0, 4}, {0, 4}, {0, 4}, {0, 4}, {}, {}}}})
adam('adam_update_default', {2, 3, 4}, {2, 3, 4}, scalar(7), scalar(0.001))
adam('adam_update_params', {4, 3}, {4, 3}, scalar(10), scalar(0.05), {beta1 = 0.8, beta2 = 0.99, epsilon = 1e-6})
adam('adam_update_tf_epsilon', {3, 4}, {3, 4}, scalar(4), scalar(0.02), {epsilon = 1e-3, tf_epsilon = true})
adam('adam_update_weight_decay', {3, 4}, {3, 4}, scalar(5), scalar(0.01), {weight_decay = 0.1})
adam('adam_update_decoupled', {2, 3, 4}, {2, 3, 4}, scalar(6), scalar(0.05), {weight_decay = 0.1, decoupled = true})
adam('adam_update_decoupled_tf', {4, 3}, {4, 3}, scalar(2), scalar(0.1),
     {weight_decay = 0.2, decoupled = true, tf_epsilon = true, epsilon = 1e-4})
adam('adam_update_positional', {3, 4}, {3, 4}, scalar(2), scalar(0.02),
     {beta1 = 0.5, beta2 = 0.9, epsilon = 1e-4, weight_decay = 0.05, decoupled = true, tf_epsilon = false},
     {0.5, 0.9, 1e-4, 0.05, true, false})
adam('adam_update_bcast', {3, 4}, {4}, scalar(5), scalar(0.1), {weight_decay = 0.01})
-- the first step: m = v = 0, so v becomes (1 - beta2) g^2 alone (how 1 - beta2 is rounded shows)
adam('adam_update_first_step', {3, 4}, {3, 4}, scalar(1), scalar(0.1), nil, nil,
     {inputs = {input({3, 4}), input({3, 4}, {values = {0}}), input({3, 4}, {values = {0}}), input({3, 4}),
                scalar(1), scalar(0.1)}})
adam('adam_update_scalar', {}, {}, scalar(4), scalar(0.1), {tf_epsilon = true})
-- step and lr in their own dtypes, in the layouts a 1x1 tensor takes, and as Lua numbers
adam('adam_update_scalars_float64', {3, 4}, {3, 4}, scalar(3, F64), scalar(0.01, F64), {weight_decay = 0.01})
adam('adam_update_scalars_float32', {3, 4}, {3, 4}, scalar(3, F32), scalar(0.01, F32), {tf_epsilon = true})
adam('adam_update_scalars_1x1', {3, 4}, {3, 4}, scalar(8, nil, {1, 1}), scalar(0.01, nil, {1, 1}), {decoupled = true,
     weight_decay = 0.1})
adam('adam_update_scalars_number', {2, 3}, {2, 3}, scalar(3, NUMBER), scalar(0.01, NUMBER))
adam('adam_update_threads', {300, 200}, {300, 200}, scalar(100), scalar(0.01), {weight_decay = 0.01})
add{name = 'adam_update_bad_m', op = 'adam_update',
    inputs = {input({2, 3}), input({1, 3}), input({2, 3}), input({2, 3}), scalar(1), scalar(0.1)},
    error = "adam_update: m is 1x3; it must have var's shape 2x3"}
add{name = 'adam_update_step_elements', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), input({3}), scalar(0.1)},
    error = 'adam_update: step is 3; expected one element (the step count t)'}
add{name = 'adam_update_step_int', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), input({}, {dtype = 'int32'}), scalar(0.1)},
    error = 'adam_update: step is int32; expected float32 or float64'}
add{name = 'adam_update_lr_elements', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), scalar(1), input({2, 2})},
    error = 'adam_update: lr is 2x2; expected one element (the learning rate)'}
add{name = 'adam_update_lr_int', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), scalar(1), input({}, {dtype = 'uint8'})},
    error = 'adam_update: lr is uint8; expected float32 or float64'}
add{name = 'adam_update_step_zero', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), scalar(0), scalar(0.1)},
    error = 'adam_update: step is 0; expected t >= 1'}
add{name = 'adam_update_mixed_dtypes', op = 'adam_update',
    inputs = {input({2}), input({2}), input({2}), input({2}, F64), scalar(1), scalar(0.1)}, dtypes = {'float32'},
    error = 'adam_update: grad is float64, var is float32'}

return cases
