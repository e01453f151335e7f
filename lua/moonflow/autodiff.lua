-- Reverse-mode autodiff: mf.gradients walks the graph backwards from ys, calling each op's
-- registered gradient rule (a Lua function building nodes from other registered ops) and summing
-- the contributions where a value feeds several consumers. Integer outputs (comparisons, argmax)
-- carry no gradient, so nothing flows back through them.
local C = require 'moonflow.ffi_abi'

return function(mf)
  local raise = mf._raise
  local NODE_OP = C.MF_NODE_OP
  -- an op's gradient rule, compiled once per engine and kept on its record; false when it has none
  local function rule_of(op)
    if op.lua_gradient then return op.lua_gradient end
    local r = op.gradient_rule
    if r ~= nil then return r end
    if op.local_gradient then raise(mf._local_rule_error(op, 'gradient')) end
    local src = op.gradient_src
    r = src and src ~= '' and mf._compile_lua(op.name, 'gradient', src) or false
    op.gradient_rule = r
    return r
  end
  mf._gradient_rule = rule_of  -- the tape (tape.lua) calls the same rules on tensors

  -- The message for an op with no gradient rule met on a gradient path (what: 'gradients', ...; where:
  -- {node = text after the op's name, path = the path's text}). An op that is what another op's
  -- gradient rule builds (its block's gradient_of: cumprod for cumprod_grad) names that op, which is
  -- differentiable once only.
  function mf._no_gradient_error(what, op, where)
    local msg = ("%s: op '%s'%s has no gradient, and %s runs through it"):format(what, op.name, where.node or '', where.path)
    local of = op.gradient_of
    if of then
      msg = msg .. ("; it is what the gradient of %s builds, so %s is differentiable once only: a second-order"
        .. " gradient (a gradient of a gradient) through %s is not supported"):format(of, of, of)
    end
    return msg
  end

  local function as_list(x)
    if mf.is_symbol(x) then return {x} end
    if type(x) ~= 'table' then return nil end
    return x
  end

  local shape_text, DTYPE_NAME, IS_FLOAT = mf._shape_text, mf._DTYPE_NAME, mf._IS_FLOAT

  local function describe(shape, dtype)
    return ('%s %s'):format(shape_text(shape), DTYPE_NAME[dtype] or '?')
  end

  -- Shapes agree where both are known (a -1 dim or an unknown rank matches anything).
  local function shapes_agree(a, b)
    if not a or not b then return true end
    if #a ~= #b then return false end
    for d = 1, #a do
      if a[d] >= 0 and b[d] >= 0 and a[d] ~= b[d] then return false end
    end
    return true
  end

  -- The gradient contract: rule(x1, ..., xn, y, gy, params, needs) returns a list {g1, ..., gn}; each gk
  -- is nil (no gradient) or a symbol (or tensor) of input k's shape and dtype. needs[k] is false where
  -- no gradient of input k is wanted: a rule may then skip that term (return nil for it); the tape
  -- (tape.lua) passes the same list, so the first layer's input gradient is never computed.
  local function check_result(op, info, res)
    local where = ("gradients: the rule of op '%s' (node '%s')"):format(op.name, info.name)
    if type(res) ~= 'table' or mf.is_symbol(res) or mf.is_tensor(res) then
      raise(('%s returned a %s; expected a list {g1, ..., gn} of input gradients (nil for none), as in '
        .. 'function(x1, ..., xn, y, gy, params) return {g1, ..., gn} end'):format(where,
        mf.is_symbol(res) and 'symbol' or mf.is_tensor(res) and 'tensor' or type(res)))
    end
    local n = #info.inputs
    for k in pairs(res) do
      if type(k) ~= 'number' or k < 1 or k > n or k ~= math.floor(k) then
        raise(('%s returned a gradient at key %s; the op has %d input%s'):format(where, tostring(k), n,
          n == 1 and '' or 's'))
      end
    end
    for k, s in ipairs(info.inputs) do
      local gk = res[k]
      if gk ~= nil then
        if mf.is_tensor(gk) then gk = mf.constant(gk) end
        if not mf.is_symbol(gk) then
          raise(('%s returned a %s for input %d (%s); expected a symbol of its shape and dtype, or nil')
            :format(where, type(gk), k, op.inputs[k] or op.inputs[1] or '?'))
        end
        if not shapes_agree(gk._shape, s._shape) or gk._dtype_id ~= s._dtype_id then
          raise(('%s returned a gradient of %s for input %d (%s), which is %s; each gradient must have its '
            .. "input's shape and dtype"):format(where, describe(gk._shape, gk._dtype_id), k,
            op.inputs[k] or op.inputs[1] or '?', describe(s._shape, s._dtype_id)))
        end
        res[k] = gk
      end
    end
  end

  local function add_all(list)
    local s = list[1]
    for i = 2, #list do s = mf.add(s, list[i]) end
    return s
  end

  -- mf.gradients(ys, xs[, grad_ys]) -> list: d(sum of ys)/d(x) for every x (nil where x does not reach ys)
  function mf.gradients(ys, xs, grad_ys)
    ys, xs = as_list(ys), as_list(xs)
    if not ys or #ys == 0 then raise('gradients: ys must be a symbol or a list of symbols') end
    if not xs or #xs == 0 then raise('gradients: xs must be a symbol or a list of symbols') end
    for _, l in ipairs{{ys, 'ys'}, {xs, 'xs'}} do  -- {W, nil, b}: ipairs would stop at the hole
      for i = 1, table.maxn(l[1]) do
        if l[1][i] == nil then raise(('gradients: %s[%d] is nil; expected a symbol'):format(l[2], i)) end
      end
    end
    grad_ys = grad_ys and as_list(grad_ys) or {}
    for i, y in ipairs(ys) do
      if not mf.is_symbol(y) then raise(('gradients: ys[%d] is not a symbol'):format(i)) end
    end
    for i, x in ipairs(xs) do
      if not mf.is_symbol(x) then raise(('gradients: xs[%d] is not a symbol'):format(i)) end
      if x.graph ~= ys[1].graph then raise(('gradients: xs[%d] is from another graph'):format(i)) end
    end
    local g = ys[1].graph
    local nodes = g.nodes
    -- which nodes depend on an x (ids grow along edges, so one ascending sweep settles it)
    local is_x, depends = {}, {}
    for _, x in ipairs(xs) do is_x[x.node] = true end
    local maxid = 0
    for _, y in ipairs(ys) do maxid = math.max(maxid, y.node) end
    for id = 0, maxid do
      local info = nodes[id]
      local d = is_x[id] or false
      if not d and info.inputs then
        for _, s in ipairs(info.inputs) do if depends[s.node] then d = true break end end
      end
      depends[id] = d
    end
    -- output gradients, keyed by node then output index
    local grads = {}
    local function push(node, index, gsym)
      grads[node] = grads[node] or {}
      local l = grads[node][index] or {}
      l[#l + 1] = gsym
      grads[node][index] = l
    end
    for i, y in ipairs(ys) do
      local seed = grad_ys[i]
      if seed == nil then seed = mf.ones_like(y) end
      push(y.node, y.index, seed)
    end
    for id = maxid, 0, -1 do
      local gl = grads[id]
      local info = nodes[id]
      local int_out = info.out_syms and info.out_syms[1] and not IS_FLOAT[info.out_syms[1]._dtype_id]
      if gl and depends[id] and info.kind == NODE_OP and not is_x[id] and not int_out then
        local op = info.op
        local rule = rule_of(op)
        if not rule then
          raise(mf._no_gradient_error('gradients', op, {node = (" (node '%s')"):format(info.name),
            path = 'the path from xs to ys'}))
        end
        local outs, gouts = info.out_syms, {}
        for k = 1, info.nout do
          gouts[k] = gl[k] and add_all(gl[k]) or mf.zeros_like(outs[k])
        end
        local args = {}
        if op.variadic then args[1] = info.inputs else for k, s in ipairs(info.inputs) do args[k] = s end end
        local n = #args
        if op.multi then args[n + 1], args[n + 2] = outs, gouts
        else args[n + 1], args[n + 2] = outs[1], gouts[1] end
        args[n + 3] = info.rec and info.rec.p or info.params
        -- which inputs want a gradient (those depending on an xs): a rule may return nil for the others
        local needs = {}
        for k, s in ipairs(info.inputs) do needs[k] = depends[s.node] or false end
        args[n + 4] = needs
        local ok, res = pcall(rule, unpack(args, 1, n + 4))
        if not ok then raise(('gradients: the rule of %s (node %s) failed: %s'):format(op.name, info.name, tostring(res))) end
        check_result(op, info, res)
        for k, s in ipairs(info.inputs) do
          local gk = res[k]
          if gk ~= nil and depends[s.node] then
            push(s.node, s.index, gk)
          end
        end
      end
    end
    local out = {}
    for i, x in ipairs(xs) do
      local l = grads[x.node] and grads[x.node][x.index]
      out[i] = l and add_all(l) or nil
    end
    return out
  end
end
