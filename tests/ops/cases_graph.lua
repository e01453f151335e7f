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

-- ops that return a view of input 1 (its memory, not a copy)
local function views_input1(outs, ins)
  if outs[1].ptr ~= ins[1].ptr then return 'result is not a view of input 1' end
end

-- x's values broadcast (NumPy rules) to shape, as flat row-major data
local function spread(x, shape)
  local out, lead = {}, #shape - #x.shape
  for i = 1, L.numel(shape) do
    local idx, src = L.unravel(i, shape), {}
    for d = 1, #x.shape do src[d] = x.shape[d] == 1 and 1 or idx[d + lead] end
    out[i] = L.at(x, src)
  end
  return out
end

-- sum_to, broadcast_like -------------------------------------------------------------------------
local function sum_to_ref(ins)
  local x, shape = ins[1], L.copy(ins[2].shape)
  local out, lead = {}, #x.shape - #shape
  for i = 1, L.numel(shape) do out[i] = 0 end
  for i = 1, #x.data do  -- each element of x adds into the element of like it was broadcast from
    local idx, to = L.unravel(i, x.shape), {}
    for d = 1, #shape do to[d] = shape[d] == 1 and 1 or idx[d + lead] end
    local j = L.ravel(to, shape)
    out[j] = out[j] + x.data[i]
  end
  return L.array(shape, out)
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
  return L.array(L.copy(ins[2].shape), spread(ins[1], ins[2].shape))
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
  if ins[1].is_contig ~= 0 then return views_input1(outs, ins) end
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
  return updated{L.array(L.copy(ins[1].shape), spread(ins[2], ins[1].shape))}
end
local function assign_add_ref(ins)
  local r, v = ins[1], spread(ins[2], ins[1].shape)
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
-- Each reference gives an error scale: the sum of the magnitudes the result is computed from (what
-- one rounding per operation, in float32, is measured against where terms cancel).
local function scaled(shape, data, scale)
  local a = L.array(L.copy(shape), data)
  a.scale = scale
  return a
end
local function sgd_ref(ins, p)
  local w, g, lr = ins[1], spread(ins[2], ins[1].shape), p.lr or 0.01
  local out, sc = {}, {}
  for i = 1, #w.data do
    out[i] = w.data[i] - lr * g[i]
    sc[i] = abs(w.data[i]) + abs(lr * g[i])
  end
  return updated{scaled(w.shape, out, sc)}
end
local function momentum_ref(ins, p)
  local w, a, g = ins[1], ins[2], spread(ins[3], ins[1].shape)
  local lr, mu = p.lr or 0.01, p.momentum or 0.9
  local nw, na, sw, sa = {}, {}, {}, {}
  for i = 1, #w.data do
    na[i] = mu * a.data[i] + g[i]
    sa[i] = mu * abs(a.data[i]) + abs(g[i])
    if p.nesterov then
      nw[i] = w.data[i] - lr * (g[i] + mu * na[i])
      sw[i] = abs(w.data[i]) + lr * (abs(g[i]) + mu * sa[i])
    else
      nw[i] = w.data[i] - lr * na[i]
      sw[i] = abs(w.data[i]) + lr * sa[i]
    end
  end
  return updated{scaled(w.shape, nw, sw), scaled(w.shape, na, sa)}
end
local function adam_ref(ins, p)
  local w, m, v, g, t = ins[1], ins[2], ins[3], spread(ins[4], ins[1].shape), ins[5].data[1]
  local lr, b1, b2, eps = p.lr or 0.001, p.beta1 or 0.9, p.beta2 or 0.999, p.epsilon or 1e-8
  local lr_t = lr * sqrt(1 - b2 ^ t) / (1 - b1 ^ t)
  local nw, nm, nv, sw, sm = {}, {}, {}, {}, {}
  for i = 1, #w.data do
    nm[i] = b1 * m.data[i] + (1 - b1) * g[i]
    sm[i] = b1 * abs(m.data[i]) + (1 - b1) * abs(g[i])
    nv[i] = b2 * v.data[i] + (1 - b2) * g[i] * g[i]  -- no cancellation: v >= 0
    local den = sqrt(nv[i]) + eps
    nw[i] = w.data[i] - lr_t * nm[i] / den
    sw[i] = abs(w.data[i]) + lr_t * sm[i] / den
  end
  return updated{scaled(w.shape, nw, sw), scaled(w.shape, nm, sm), L.array(L.copy(w.shape), nv)}
end

local function update(c)
  c.check_out, c.dtypes = views_input1, c.dtypes or FLOATS
  add(c)
end
update{name = 'sgd_update', op = 'sgd_update', inputs = {input({3, 4}), input({3, 4})}, writes = {1},
       params = {lr = 0.1}, ref = sgd_ref, empty = {{{0, 4}, {0, 4}}, {{3, 0}, {1, 0}}}}
update{name = 'sgd_update_positional', op = 'sgd_update', inputs = {input({2, 3, 4}), input({2, 3, 4})}, writes = {1},
       params = {lr = 0.5}, args = {0.5}, ref = sgd_ref}
update{name = 'sgd_update_default_lr', op = 'sgd_update', inputs = {input({4, 3}), input({4, 3})}, writes = {1},
       ref = sgd_ref}
update{name = 'sgd_update_bcast', op = 'sgd_update', inputs = {input({3, 4}), input({4})}, writes = {1},
       params = {lr = 0.3}, ref = sgd_ref}
update{name = 'sgd_update_scalar', op = 'sgd_update', inputs = {input({}), input({})}, writes = {1},
       params = {lr = 0.25}, ref = sgd_ref}
update{name = 'sgd_update_threads', op = 'sgd_update', inputs = {input({300, 200}), input({300, 200})}, writes = {1},
       params = {lr = 0.1}, ref = sgd_ref}
add{name = 'sgd_update_bad_shapes', op = 'sgd_update', inputs = {input({2, 3}), input({3, 2})},
    error = 'sgd_update: var is 2x3, grad is 3x2'}
add{name = 'sgd_update_mixed_dtypes', op = 'sgd_update',
    inputs = {input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
    error = 'sgd_update: grad is float64, var is float32'}
add{name = 'sgd_update_int', op = 'sgd_update', inputs = {input({2}), input({2})}, dtypes = {'int32'},
    error = 'expected float32 or float64'}

local ACCUM = {lo = -1, hi = 1}
local function momentum(name, sv, sg, params, args, empty)
  update{name = name, op = 'momentum_update', inputs = {input(sv), input(sv, ACCUM), input(sg)}, writes = {1, 2},
         params = params, args = args, ref = momentum_ref, empty = empty}
end
momentum('momentum_update', {3, 4}, {3, 4}, {lr = 0.1, momentum = 0.9}, nil, {{{0, 4}, {0, 4}, {0, 4}}})
momentum('momentum_update_default', {2, 3, 4}, {2, 3, 4})
momentum('momentum_update_nesterov', {4, 3}, {4, 3}, {lr = 0.1, momentum = 0.8, nesterov = true})
momentum('momentum_update_positional', {3, 4}, {3, 4}, {lr = 0.05, momentum = 0.5, nesterov = true}, {0.05, 0.5, true})
momentum('momentum_update_bcast', {3, 4}, {1, 4}, {lr = 0.2})
momentum('momentum_update_scalar', {}, {}, {lr = 0.2, nesterov = true})
momentum('momentum_update_threads', {300, 200}, {300, 200}, {lr = 0.1})
add{name = 'momentum_update_bad_accum', op = 'momentum_update', inputs = {input({2, 3}), input({3}), input({2, 3})},
    error = "momentum_update: accum is 3; it must have var's shape 2x3"}
add{name = 'momentum_update_bad_grad', op = 'momentum_update', inputs = {input({2, 3}), input({2, 3}), input({2})},
    error = 'momentum_update: var is 2x3, grad is 2'}
add{name = 'momentum_update_mixed_dtypes', op = 'momentum_update',
    inputs = {input({2}, {dtype = 'float64'}), input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
    error = 'momentum_update: accum is float32, var is float64'}

-- m, v and grad; step is a 0-dim tensor holding t
local MOM, VAR = {lo = -0.5, hi = 0.5}, {lo = 0, hi = 1}
local function adam(name, sv, sg, t, params, args, more)
  local c = {name = name, op = 'adam_update', writes = {1, 2, 3}, params = params, args = args, ref = adam_ref,
             inputs = {input(sv), input(sv, MOM), input(sv, VAR), input(sg), input({}, {values = {t}})}}
  for k, v in pairs(more or {}) do c[k] = v end
  update(c)
end
adam('adam_update', {3, 4}, {3, 4}, 3, {lr = 0.01}, nil, {empty = {{{0, 4}, {0, 4}, {0, 4}, {0, 4}, {}}}})
adam('adam_update_default', {2, 3, 4}, {2, 3, 4}, 7)
adam('adam_update_params', {4, 3}, {4, 3}, 10, {lr = 0.05, beta1 = 0.8, beta2 = 0.99, epsilon = 1e-6})
adam('adam_update_positional', {3, 4}, {3, 4}, 2, {lr = 0.02, beta1 = 0.5, beta2 = 0.9, epsilon = 1e-4},
     {0.02, 0.5, 0.9, 1e-4})
adam('adam_update_bcast', {3, 4}, {4}, 5, {lr = 0.1})
-- the first step: m = v = 0, so v becomes (1 - beta2) g^2 alone (how 1 - beta2 is rounded shows)
adam('adam_update_first_step', {3, 4}, {3, 4}, 1, {lr = 0.1}, nil,
     {inputs = {input({3, 4}), input({3, 4}, {values = {0}}), input({3, 4}, {values = {0}}), input({3, 4}),
                input({}, {values = {1}})}})
adam('adam_update_scalar', {}, {}, 4, {lr = 0.1})
adam('adam_update_threads', {300, 200}, {300, 200}, 100, {lr = 0.01})
add{name = 'adam_update_bad_m', op = 'adam_update',
    inputs = {input({2, 3}), input({1, 3}), input({2, 3}), input({2, 3}), input({})},
    error = "adam_update: m is 1x3; it must have var's shape 2x3"}
add{name = 'adam_update_bad_step', op = 'adam_update',
    inputs = {input({3}), input({3}), input({3}), input({3}), input({3})},
    error = 'adam_update: step is 3; expected one element (the step count t)'}
add{name = 'adam_update_mixed_dtypes', op = 'adam_update',
    inputs = {input({2}), input({2}), input({2}), input({2}, {dtype = 'float64'}), input({})}, dtypes = {'float32'},
    error = 'adam_update: grad is float64, var is float32'}

return cases
