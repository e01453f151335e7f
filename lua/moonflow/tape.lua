-- Eager autograd (the tape). An eager op call whose inputs include a tensor that requires grad
-- (grad mode on) records a node: the op, its params, its input tensors and a data-only header of
-- each output. loss:backward() and mf.autograd.grad walk the nodes newest first (a node is always
-- newer than the nodes of its inputs) and call each op's registered gradient rule on tensors: the
-- same rule graph mode calls on symbols (autodiff.lua's mf._gradient_rule), so one rule serves both.
--
-- Per-tensor state lives in AG, a weak-keyed table keyed by the tensor cdata (one struct cdata is
-- one key: identity is per object, and a header copied into another cdata has no state). The
-- struct's autograd field (src/core/types.h) is the cheap flag the dispatcher tests on every call:
-- autograd ~= 0 means "may have autograd state", so calls on plain tensors cost one field load per
-- input. A node holds data headers of its inputs and outputs and its inputs' states (never a
-- tensor whose state holds a node: see new_node), so the collector frees a tape nobody reaches, in
-- two collections (Engine::collect_garbage and mf.empty_cache collect twice).
--
-- Version counters count writes per storage (views share their base's). The count lives in the
-- native storage (mf_storage_version / mf_storage_bump), so writes by graph sessions and by other
-- engines count too. A node remembers the versions of what its gradient rule reads, and backward
-- refuses a node whose saved tensors were written since, naming both ops.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
local tnew = require 'table.new'

return function(mf)
  local raise, is_tensor, T, IS_FLOAT, DTYPE_NAME = mf._raise, mf.is_tensor, mf._T, mf._IS_FLOAT, mf._DTYPE_NAME
  local methods = mf.Tensor
  local AG = setmetatable({}, {__mode = 'k'})  -- tensor -> {leaf = true, grad = t} | {node = n, index = k}
  local enabled = true                          -- grad mode (mf.set_grad_enabled)
  local seq = 0                                 -- node creation count: a topological order

  local function shape_str(t) return methods.shape_str(t) end
  local function version(t) return tonumber(C.mf_storage_version(t, nil)) end
  -- who wrote a storage last (mf_storage_bump's writer): an op index, or one of these codes
  local WRITER_NAME = {[-2] = 'set', [-3] = 'index assignment', [-4] = 'apply', [-5] = 'map'}
  mf._WRITER = {set = -2, index = -3, apply = -4, map = -5}
  local wbuf = ffi.new('int32_t[1]')
  local function writer_of(t)
    wbuf[0] = -1
    C.mf_storage_version(t, wbuf)
    local w = wbuf[0]
    if w >= 0 then
      local op = mf._ops_by_index[w]
      return "op '" .. (op and op.name or ('#' .. w)) .. "'"
    end
    return "'" .. (WRITER_NAME[w] or '?') .. "'"
  end
  -- element writes (tensor.lua's set and t[i] = v, torch7.lua's apply and map) count here; write ops
  -- in the dispatcher (mf._tape_call) and the graph session's write steps count themselves
  function mf._bump_version(t, code) C.mf_storage_bump(t, code) end

  -- a header sharing t's storage, with no autograd state
  local function data_of(t)
    local c = T()
    C.mf_tensor_share(c, t)
    c._autograd = 0
    return c
  end

  local function state(t) return t._autograd ~= 0 and AG[t] or nil end
  -- A tensor the tape keeps state for gets a finalizer of its own (ffi.gc), which drops that state at
  -- once: a key being finalized counts as alive for that collection, so the weak table alone would
  -- keep the state (and the tape behind it) one collection longer. Every other tensor's finalizer is
  -- the C routine of tensor.lua's metatype, without a Lua call.
  local function ag_finalize(t)
    AG[t] = nil
    if t._owns ~= 0 then C.mf_tensor_release(t) end
  end
  local function flag_ag(t)
    t._autograd = 1
    ffi.gc(t, ag_finalize)
  end

  function mf.is_grad_enabled() return enabled end
  function mf.set_grad_enabled(flag)
    if type(flag) ~= 'boolean' then raise(('set_grad_enabled: flag is a %s; expected a boolean'):format(type(flag))) end
    local was = enabled
    enabled = flag
    return was
  end
  local function restore(was, ok, ...)
    enabled = was
    if not ok then error(..., 0) end
    return ...
  end
  -- runs fn with grad mode set to flag, restoring the mode even when fn fails
  local function with_grad_mode(flag, fn, ...)
    local was = enabled
    enabled = flag
    return restore(was, pcall(fn, ...))
  end
  function mf.no_grad(fn, ...)
    if type(fn) ~= 'function' then raise(('no_grad: expected a function, got a %s'):format(type(fn))) end
    return with_grad_mode(false, fn, ...)
  end
  function mf.enable_grad(fn, ...)
    if type(fn) ~= 'function' then raise(('enable_grad: expected a function, got a %s'):format(type(fn))) end
    return with_grad_mode(true, fn, ...)
  end

  -- tensor methods -----------------------------------------------------------------------------
  function methods.requires_grad(t)
    local s = state(t)
    return s ~= nil and (s.node ~= nil or s.leaf == true)
  end
  function methods.requires_grad_(t, flag)
    if flag == nil then flag = true end
    if type(flag) ~= 'boolean' then raise(('requires_grad_: flag is a %s; expected a boolean'):format(type(flag))) end
    local s = AG[t]
    if s and s.node then
      if flag then return t end
      raise(('requires_grad_(false): this %s tensor was computed by op \'%s\' from tensors that require grad; only '
        .. 'leaves can stop requiring grad (use t:detach() for a tensor without history)'):format(shape_str(t),
        s.node.op.name))
    end
    if flag and not IS_FLOAT[t._dtype_id] then
      raise(('requires_grad: only floating-point tensors (float32, float64) can require gradients; this one is %s '
        .. 'of size %s (convert it with :double() or :float() first)'):format(DTYPE_NAME[t._dtype_id], shape_str(t)))
    end
    -- the state table is kept (nodes recorded from t refer to it), only its flag changes
    if flag then
      if s then s.leaf = true else AG[t] = {leaf = true} end
      flag_ag(t)
    else
      if s then s.leaf = false end  -- keeps .grad; no longer a leaf that requires grad
      t._autograd = 0
    end
    return t
  end
  function methods.detach(t) return data_of(t) end
  -- An input leaf (nn.lua: the input of a module's eager forward, for Torch7's m:backward): a header
  -- of x that requires grad; backward() stores no .grad for it, only mf._input_leaf_backward returns it.
  function mf._input_leaf(x)
    local c = data_of(x)
    AG[c] = {leaf = true, input = true}
    flag_ag(c)
    return c
  end
  function methods.is_leaf(t)
    local s = state(t)
    return not (s and s.node)
  end

  local function same_shape(a, b)
    if a._ndim ~= b._ndim then return false end
    for d = 0, a._ndim - 1 do if a._shape[d] ~= b._shape[d] then return false end end
    return true
  end

  -- t.grad (tensor.lua's __index and __newindex come here)
  function mf._grad_of(t)
    local s = AG[t]
    if not s then return nil end
    s.private = false  -- the caller may keep it: never freed early
    return s.grad
  end
  -- the optimizers' read: the gradient stays private (freed when replaced)
  function mf._grad_peek(t)
    local s = AG[t]
    return s and s.grad
  end
  function mf._set_grad(t, g)
    if g ~= nil and not is_tensor(g) then
      raise(('t.grad = value: value is a %s; expected a tensor or nil'):format(type(g)))
    end
    if g ~= nil and (not same_shape(g, t) or g._dtype_id ~= t._dtype_id) then
      raise(('t.grad = value: value is %s %s; expected the tensor\'s shape and dtype, %s %s'):format(shape_str(g),
        DTYPE_NAME[g._dtype_id], shape_str(t), DTYPE_NAME[t._dtype_id]))
    end
    local s = AG[t]
    if not s then
      if g == nil then return end
      s = {}
      AG[t] = s
    end
    local old = s.grad
    if s.private and old ~= nil and not rawequal(old, g) then mf._release_now(old) end
    s.grad, s.private = g, false
  end

  -- recording ------------------------------------------------------------------------------------
  -- A node: op, p (params), seq, nin, nout and one array (one table per node: a recorded call's
  -- garbage is what the collector must keep up with): [i] input i's data, [nin + i] its state (false
  -- for none), [2 nin + k] a data header of output k, [2 nin + nout + j] the version of the j-th of
  -- those inputs and outputs when recorded. A node never refers
  -- to a tensor computed by recorded ops (a key of AG whose value is a node): LuaJIT's weak tables
  -- are not ephemerons, so a chain of such keys held by values would take a collection per link.
  -- Leaves (their state holds no node) are referred to as they are.
  local rule_reads  -- op -> which saved tensors its gradient rule reads (below)
  local function new_node(op, rec, ins, nin, outs, nout)
    -- versions only of what the rule reads (check_versions): fewer native calls. The cached answer is
    -- read here: rule_reads itself (string patterns, closures) is not compiled by the JIT
    local reads = op.rule_reads
    if reads == nil then reads = rule_reads(op) end
    seq = seq + 1
    local n = tnew(3 * nin + 2 * nout, 6)  -- sized once: filling an empty array part grows it a few times
    n.op, n.p, n.seq, n.nin, n.nout, n.freed = op, rec.p, seq, nin, nout, false
    local vo = 2 * nin + nout
    for i = 1, nin do
      local x = ins[i]
      local sx = state(x)
      if sx and sx.node then
        n[i], n[nin + i] = data_of(x), sx
      else
        n[i], n[nin + i] = x, sx and sx.leaf == true and sx or false
      end
      n[vo + i] = (not reads or reads.all_ins or reads.ins[i]) and version(x) or 0
    end
    local out_read = not reads or reads.out
    for k = 1, nout do
      local y = data_of(outs[k])
      n[2 * nin + k] = y
      n[vo + nin + k] = out_read and version(y) or 0
    end
    return n
  end

  local function attach(y, node, k)
    AG[y] = {node = node, index = k}
    flag_ag(y)
  end

  -- the result of a call whose inputs have autograd set: outputs get a clean flag (a view's header may
  -- have copied its input's), then a node when recording
  local function finish_list(op, rec, ins, nin, record, outs)
    local node
    for k = 1, #outs do
      local y = outs[k]
      local own = is_tensor(y)
      for i = 1, nin do if ins[i] == y then own = false end end  -- an in-place op returns its input
      if own then
        y._autograd = 0
        if record and IS_FLOAT[y._dtype_id] then
          node = node or new_node(op, rec, ins, nin, outs, #outs)
          attach(y, node, k)
        end
      end
    end
  end
  local one = {}
  local function finish(op, rec, ins, nin, record, ...)
    local y, n = ..., select('#', ...)
    if op.multi then
      finish_list(op, rec, ins, nin, record, y)
    elseif n == 1 and is_tensor(y) then  -- the common case: one output, no list
      local own = true
      for i = 1, nin do if ins[i] == y then own = false end end
      if own then
        y._autograd = 0
        if record and IS_FLOAT[y._dtype_id] then
          one[1] = y
          local node = new_node(op, rec, ins, nin, one, 1)
          one[1] = nil
          attach(y, node, 1)
        end
      end
      return y  -- not `return ...`: a side trace starting below finish aborted there (NYI: VARG of a
                -- frame its parent set up), 10 times in 2 s of eager LeNet steps
    elseif n > 0 then
      finish_list(op, rec, ins, nin, record, mf._pack_args(n, ...))
    end
    return ...
  end

  -- counts the writes after the op has run (a failed op wrote nothing): inputs 1..nw of op.
  -- Straight-line for the usual one to three (a write op, the optimizer updates' state buffers): a
  -- loop of one turn per call became hot, its root trace left the loop at once ('leaving loop in
  -- root trace'), and after a few such aborts LuaJIT blacklisted the loop; every trace that then
  -- reached it aborted ('blacklisted at tape.lua'), which blacklisted the dispatcher's shared entries
  -- too (ops.lua's call, call_rec): from a few hundred calls of fill or zero_ on, every eager op ran
  -- interpreted (ops.lua's bench: zero_ 64 KB 0.40 us in its first round, 0.72 in the next ones).
  -- Not a vararg function passing the results through either: _tape_call's tail call into one
  -- aborted every root trace started at _tape_call (the same 'leaving loop' abort, on the return
  -- through the vararg frame). tests/lua/test_jit_paths.lua holds both.
  local any_autograd = mf._any_autograd  -- ops.lua (loaded first)
  local function bump_writes(ins, nw, op)
    local id = op.index
    if nw >= 1 then C.mf_storage_bump(ins[1], id) end
    if nw >= 2 then C.mf_storage_bump(ins[2], id) end
    if nw >= 3 then C.mf_storage_bump(ins[3], id) end
    if nw >= 4 then
      for i = 4, nw do C.mf_storage_bump(ins[i], id) end
    end
  end

  -- The tape does not record in-place ops. In grad mode a write may neither overwrite a tensor computed
  -- by recorded ops (its history would describe values it no longer holds) nor read a tensor that
  -- requires grad (the result would silently lack that dependence: y:add_(W) then (y * W):sum() would
  -- give W half its gradient). Leaves may be written (initialisation); optimizers step under no_grad.
  -- the out-of-place op to use instead: its block's in_place_of (mf.add for add_), or any
  local function out_of_place(op)
    return op and op.in_place_of and ('mf.' .. op.in_place_of) or 'the out-of-place op'
  end
  local function refuse_target(what, t, s, op)
    raise(("%s: writes in place into a tensor of size %s computed by op '%s' that requires grad; the tape does not "
      .. 'record in-place ops: use %s, or write under mf.no_grad (or into t:detach())')
      :format(what, shape_str(t), s.node.op.name, out_of_place(op)))
  end
  -- element writes (tensor.lua, torch7.lua) check their target here
  function mf._check_write_target(t, what)
    if not enabled then return end
    local s = state(t)
    if s and s.node then refuse_target(what, t, s) end
  end
  local function check_write(op, ins, nin, nw)
    for i = 1, nin do
      local s = state(ins[i])
      if s then
        if i <= nw then
          if s.node then refuse_target(op.name, ins[i], s, op) end
        elseif s.input then  -- a module's input leaf (nn.lua): only m:backward needs its history
          s.tainted = s.tainted or op.name
        elseif s.node or s.leaf then
          raise(("%s: input %d (%s, %s) requires grad, and the tape does not record in-place ops: the result would "
            .. 'not depend on it for backward; use %s (x:clone() or x * 1 instead of copy), or pass it:detach() under '
            .. 'mf.no_grad if no gradient should flow'):format(op.name, i, op.inputs[i] or op.inputs[1] or '?',
            shape_str(ins[i]), op.in_place_of and ('mf.' .. op.in_place_of .. ' instead of ' .. op.name)
            or 'the out-of-place op (for example mf.add instead of add_)'))
        end
      end
    end
  end

  -- out= (ops.lua's call_out) on flagged tensors: in grad mode the tape records nothing written into a
  -- given tensor, so an input that requires grad (the result would lack that dependence) and an out
  -- that requires grad (a leaf, or computed by recorded ops) are errors; under no_grad anything goes
  function mf._check_out(op, ins, nin, dst, nout)
    if not enabled then return end
    for i = 1, nin do
      local s = state(ins[i])
      if s and (s.node or s.leaf) then
        raise(("%s: input %d (%s) requires grad, and out= results are not recorded by the tape; call "
          .. '%s without out= (or under mf.no_grad if no gradient should flow)'):format(op.name, i,
          shape_str(ins[i]), op.name))
      end
    end
    for i = 1, nout do
      local s = state(dst[i])
      if s and (s.node or s.leaf) then
        raise(("%s: out%s (%s) requires grad; out= writes in place, which the tape does not record: "
          .. 'give a tensor without history (t:detach()) or call under mf.no_grad'):format(op.name,
          nout > 1 and ' item ' .. i or '', shape_str(dst[i])))
      end
    end
  end

  -- The dispatcher (ops.lua's call) comes here for a write op, or when an input has autograd set.
  function mf._tape_call(op, rec, e, ins, nin, run)
    if op.writes then
      -- the one place an eager write op's writes are counted: inputs 1..nw (the registry's writes(n):
      -- the optimizer updates write their state buffers too)
      local nw = op.num_written  -- read from the registry once, at load (ops.lua)
      if nw > nin then nw = nin end
      -- a write op has one result, the tensor it wrote (its first input)
      if not any_autograd(ins, nin) then
        local r = run(op, rec, e, ins, nin)
        bump_writes(ins, nw, op)
        return r
      end
      if enabled then check_write(op, ins, nin, nw) end
      -- an output's header may have copied a flagged input's: cleaned in finish
      local r = finish(op, rec, ins, nin, false, run(op, rec, e, ins, nin))
      bump_writes(ins, nw, op)
      return r
    end
    local record = false
    -- every input lends only its shape (zeros_like, rand_like: the registry's lends_shape): the outputs
    -- do not depend on input values, so nothing is recorded
    if enabled and not op.shape_only then
      for i = 1, nin do
        local s = state(ins[i])
        if s and (s.node or s.leaf) then record = true break end
      end
    end
    return finish(op, rec, ins, nin, record, run(op, rec, e, ins, nin))
  end

  -- backward -------------------------------------------------------------------------------------
  -- an nn.Parameter (m:parameters()) stands for its tensor
  local function unwrap(x)
    if type(x) == 'table' and mf.nn and mf.nn.is_parameter and mf.nn.is_parameter(x) then return x.data end
    return x
  end
  local function as_list(x, what)
    x = unwrap(x)
    if is_tensor(x) then return {x} end
    if type(x) ~= 'table' then raise(('%s: expected a tensor or a list of tensors, got a %s'):format(what, type(x))) end
    local out = {}
    for i = 1, table.maxn(x) do  -- {a, nil, b}: # may stop at the hole and drop b unseen
      local v = unwrap(x[i])
      if not is_tensor(v) then raise(('%s: item %d is a %s; expected a tensor'):format(what, i, type(v))) end
      out[i] = v
    end
    return out
  end

  -- Which saved tensors an op's gradient rule reads the values of, from the rule's Lua source (the
  -- registry's gradient_src): a parameter counts where the body names it, except where only its shape
  -- is used: passed to an op at an input that lends only its shape (the called op's block declares
  -- lends_shape: sum_to's like, zeros_like's x, pad_like's like), or read through x.shape, x:size() ...
  -- A rule with no source or with varargs reads everything. {ins = {bool per input}, out = bool}, per op.
  local SHAPE_FIELD = {shape = true, ndim = true, _shape = true, _ndim = true, _count = true, _dtype_id = true,
                       _device_id = true, size = true,
                       dim = true, nDimension = true, dtype = true, shape_str = true, nElement = true, numel = true}
  local BRACKET = {['('] = 1, ['{'] = 1, ['['] = 1, [')'] = -1, ['}'] = -1, [']'] = -1}
  -- the arguments of a call, split at the commas outside brackets (args: the text inside its parens)
  local function split_args(args)
    local parts, depth, from = {}, 0, 1
    for k = 1, #args do
      local ch = args:sub(k, k)
      depth = depth + (BRACKET[ch] or 0)
      if ch == ',' and depth == 0 then
        parts[#parts + 1] = args:sub(from, k - 1)
        from = k + 1
      end
    end
    parts[#parts + 1] = args:sub(from)
    return parts
  end
  local function called_op(name)
    local op = rawget(mf._ops, name)
    if not op and mf._aliases[name] then op = rawget(mf._ops, mf._aliases[name]) end
    return op
  end
  -- body with every bare name passed at an input that lends only its shape replaced by _; first is the
  -- argument number of the first parenthesised argument (2 for a method call: the receiver is 1)
  local hide_lent
  local function hide_in_call(name, args, first, receiver)
    args = hide_lent(args:sub(2, -2))  -- calls nested in the arguments first
    local op = called_op(name)
    local lends = op and op.lends_shape
    if not lends or next(lends) == nil then return nil, args end
    if receiver and lends[1] then receiver = '_' end
    local parts = split_args(args)
    for k, a in ipairs(parts) do
      if lends[first + k - 1] and a:match('^%s*[%a_][%w_]*%s*$') then parts[k] = '_' end
    end
    return receiver, table.concat(parts, ',')
  end
  function hide_lent(body)
    -- method calls x:op(...) (the receiver, when a bare name, is argument 1), then calls mf.op(...)
    body = body:gsub('([%w_]*)(%s*:%s*)([%a_][%w_]*)(%s*)(%b())', function(recv, colon, name, sp, args)
      local r, a = hide_in_call(name, args, 2, recv ~= '' and recv or nil)
      return (r or recv) .. colon .. name .. sp .. '(' .. a .. ')'
    end)
    return (body:gsub('(mf%s*%.%s*)([%a_][%w_]*)(%s*)(%b())', function(prefix, name, sp, args)
      local _, a = hide_in_call(name, args, 1)
      return prefix .. name .. sp .. '(' .. a .. ')'
    end))
  end
  function rule_reads(op)
    local r = op.rule_reads
    if r ~= nil then return r end
    r = false
    local params, body = (op.gradient_src or ''):match('^%s*function%s*%(([^)]*)%)(.*)$')
    if params and not params:find('...', 1, true) then
      local names = {}
      for nm in params:gmatch('[%w_]+') do names[#names + 1] = nm end
      body = body:gsub("'[^'\n]*'", "''"):gsub('"[^"\n]*"', '""')  -- string contents hold no names
      body = hide_lent(body)
      body = body:gsub('([%w_]+)(%s*[.:]%s*)([%w_]+)', function(nm, sep, f)
        if SHAPE_FIELD[f] then return '_' .. sep .. f end
      end)
      local function uses(nm) return nm ~= nil and body:find('%f[%w_]' .. nm .. '%f[^%w_]') ~= nil end
      local nx = op.variadic and 1 or #op.inputs
      r = {ins = {}, out = uses(names[nx + 1])}
      for i = 1, nx do r.ins[i] = uses(names[i]) end
      if op.variadic then r.all_ins = r.ins[1] end
    end
    op.rule_reads = r
    return r
  end

  -- saved tensor j of node (input j, or output j - nin) has version now, not the recorded v
  local function version_error(node, j, now, v)
    local nin, t = node.nin, node[j <= node.nin and j or node.nin + j]
    local what = j <= nin and ('input %d (%s)'):format(j, node.op.inputs[j] or node.op.inputs[1] or '?')
      or ('output %d'):format(j - nin)
    raise(("backward: %s of op '%s' (%s %s), which its gradient needs, was modified in place by %s after "
      .. 'it was recorded (version %d, expected %d); clone() it before writing, or use the out-of-place op')
      :format(what, node.op.name, shape_str(t), DTYPE_NAME[t._dtype_id], writer_of(t), now, v))
  end
  -- (no closure and no message built per check: this runs for every node of every backward)
  local function check_versions(node)
    local nin, nout = node.nin, node.nout
    local vo = 2 * nin + nout
    local r = node.op.rule_reads
    if r == nil then r = rule_reads(node.op) end
    for i = 1, nin do
      if not r or (r.all_ins or r.ins[i]) then
        local now = version(node[i])
        if now ~= node[vo + i] then version_error(node, i, now, node[vo + i]) end
      end
    end
    if not r or r.out then
      for k = 1, nout do
        local now = version(node[2 * nin + k])
        if now ~= node[vo + nin + k] then version_error(node, nin + k, now, node[vo + nin + k]) end
      end
    end
  end

  local NO_GRADS = {}  -- a node none of whose inputs wants a gradient: its rule is not called
  -- roots, seeds: lists; targets: nil (backward: accumulate into every leaf's .grad) or a list of
  -- tensors (autograd.grad: return their gradients)
  local function run_backward(what, roots, seeds, targets, retain, create)
    -- nodes reachable from the roots
    local nodes, seen, stack = {}, {}, {}
    for i, r in ipairs(roots) do
      local s = state(r)
      if not (s and (s.node or s.leaf)) then
        raise(('%s: output %d (%s) does not require grad and has no history: no input of the ops that computed it '
          .. 'requires grad, or it was computed under mf.no_grad'):format(what, i, shape_str(r)))
      end
      if s.node then stack[#stack + 1] = s.node end
    end
    while #stack > 0 do
      local n = table.remove(stack)
      if not seen[n] then
        seen[n] = true
        nodes[#nodes + 1] = n
        if n.freed then
          raise(("%s: the tape through op '%s' was freed by an earlier backward; pass {retain_graph = true} to the "
            .. 'first backward (or autograd.grad) to go through it twice'):format(what, n.op.name))
        end
        for i = n.nin + 1, 2 * n.nin do
          local s = n[i]
          if s and s.node and not seen[s.node] then stack[#stack + 1] = s.node end
        end
      end
    end
    table.sort(nodes, function(a, b) return a.seq > b.seq end)
    -- targets: leaf states, or (node, output index) pairs
    local tleaf, tout, useful
    if targets then
      tleaf, tout = {}, {}
      for i, x in ipairs(targets) do
        local s = state(x)
        if not s then raise(('%s: inputs[%d] (%s) does not require grad'):format(what, i, shape_str(x))) end
        if s.node then
          tout[s.node] = tout[s.node] or {}
          tout[s.node][s.index] = true
        else tleaf[s] = true end
      end
      -- which nodes lead to a target (oldest first: a node's inputs come from older nodes)
      useful = {}
      for j = #nodes, 1, -1 do
        local n = nodes[j]
        for i = n.nin + 1, 2 * n.nin do
          local s = n[i]
          if s and (tleaf[s] or s.node and (useful[s.node] or tout[s.node] and tout[s.node][s.index])) then
            useful[n] = true
            break
          end
        end
      end
    end
    local gnode, gleaf = {}, {}
    -- Spent gradients go back to the allocator at once, as PyTorch's refcounts free them: left to the
    -- collector, each step would write fresh, cold memory. held[g]: how many slots (a node output's or a
    -- leaf's sum) hold gradient g; a gradient no slot holds any more is released, unless keep[g]: a seed,
    -- a saved tensor a rule passed on, anything a Lua-registered rule returned (it may keep a reference),
    -- and every gradient of a recorded pass (create_graph: the new tape refers to them).
    local held, keep, release_now = {}, {}, mf._release_now
    for i = 1, #seeds do keep[seeds[i]] = true end
    local function drop(g)
      local h = (held[g] or 1) - 1
      held[g] = h
      if h <= 0 and not create and not keep[g] then release_now(g) end
    end
    local function push(s, g)
      local l, k = gleaf, s
      if s.node then
        l, k = gnode[s.node], s.index
        if not l then l = {}; gnode[s.node] = l end
      end
      local old = l[k]
      if old == nil then
        l[k] = g
        held[g] = (held[g] or 0) + 1
      else
        local sum = mf.add(old, g)
        l[k] = sum
        held[sum] = 1
        drop(old)  -- g itself is settled by the caller, once every result of its rule is pushed
      end
    end
    for i, r in ipairs(roots) do push(state(r), seeds[i]) end
    local was = enabled
    enabled = create
    -- per-node lists, refilled for each node (the rules read them during the call only)
    local ys, gys, needs, xs = {}, {}, {}, {}
    local ok, err = pcall(function()
      for _, n in ipairs(nodes) do
        local gl = gnode[n]
        if gl and (not useful or useful[n]) then
          check_versions(n)
          local op = n.op
          local rule = mf._gradient_rule(op)
          if not rule then
            raise(mf._no_gradient_error(what, op, {path = 'the path from the inputs to the outputs'}))
          end
          local nin = n.nin
          for k = n.nout + 1, #ys do ys[k], gys[k] = nil, nil end
          for i = nin + 1, #xs do xs[i], needs[i] = nil, nil end
          for k = 1, n.nout do
            local y0 = n[2 * nin + k]
            local y = y0
            if create and IS_FLOAT[y._dtype_id] then  -- a fresh header with this node as history
              y = data_of(y)
              flag_ag(y)
              AG[y] = {node = n, index = k}
            end
            ys[k] = y
            gys[k] = gl[k] or mf.zeros_like(y0)
          end
          -- which inputs want a gradient (the rule's needs argument: it may skip the others' terms, such as
          -- the first layer's input gradient): a node's output on the way to a target, a leaf that takes
          -- one (a target of autograd.grad; for backward a leaf, or the input leaf m:backward collects)
          local any = false
          for i = 1, nin do
            local s, need = n[nin + i], false
            if s then
              if s.node then
                need = not useful or useful[s.node] or (tout[s.node] and tout[s.node][s.index]) or false
              elseif s.leaf then
                if tleaf then need = tleaf[s] or false else need = not s.input or s.collect == true end
              end
            end
            needs[i] = need
            any = any or need
          end
          for i = 1, nin do
            local x, sx = n[i], n[nin + i]
            if create then  -- inputs with their history, so the rule's ops are recorded
              if sx and sx.node then  -- a leaf is kept as itself (new_node)
                x = data_of(x)
                flag_ag(x)
                AG[x] = sx
              end
            end
            xs[i] = x
          end
          -- the rule's arguments: x1 .. xn (or the list), y (or the list), gy (or the list), params, needs;
          -- the common arities are passed as they are (unpack is not compiled: a trace would stop there)
          local ok2, res
          if not any then
            ok2, res = true, NO_GRADS
          elseif op.variadic or op.multi or nin > 3 then
            local args = {}
            if op.variadic then args[1] = xs else for i = 1, nin do args[i] = xs[i] end end
            local na = #args
            if op.multi then args[na + 1], args[na + 2] = ys, gys
            else args[na + 1], args[na + 2] = ys[1], gys[1] end
            args[na + 3], args[na + 4] = n.p, needs
            ok2, res = pcall(rule, unpack(args, 1, na + 4))
          elseif nin == 1 then
            ok2, res = pcall(rule, xs[1], ys[1], gys[1], n.p, needs)
          elseif nin == 2 then
            ok2, res = pcall(rule, xs[1], xs[2], ys[1], gys[1], n.p, needs)
          else
            ok2, res = pcall(rule, xs[1], xs[2], xs[3], ys[1], gys[1], n.p, needs)
          end
          if not ok2 then
            raise(("%s: the gradient rule of op '%s' failed: %s"):format(what, op.name, tostring(res)))
          end
          if type(res) ~= 'table' or is_tensor(res) then
            raise(("%s: the gradient rule of op '%s' returned a %s; expected a list {g1, ..., gn}"):format(what,
              op.name, type(res)))
          end
          for i = 1, nin do
            local x, g, s = n[i], res[i], n[nin + i]
            if g ~= nil and needs[i] then
              if not is_tensor(g) or not same_shape(g, x) then
                raise(("%s: the gradient rule of op '%s' gave input %d (%s) a gradient of %s; expected %s")
                  :format(what, op.name, i, shape_str(x), is_tensor(g) and shape_str(g) or type(g), shape_str(x)))
              end
              if g._dtype_id ~= x._dtype_id then g = mf.cast(g, DTYPE_NAME[x._dtype_id]) end
              if op.from_lua then keep[g] = true end
              for j = 1, nin do if rawequal(g, xs[j]) or rawequal(g, n[j]) then keep[g] = true end end
              for k = 1, n.nout do if rawequal(g, ys[k]) or rawequal(g, n[2 * nin + k]) then keep[g] = true end end
              push(s, g)
            end
          end
          -- results no slot took (added into an existing sum) and this node's spent output gradients go
          for i = 1, nin do
            local g = res[i]
            if g ~= nil and needs[i] and is_tensor(g) and not held[g] then drop(g) end
          end
          if not (tout and tout[n]) then  -- a target's gradient is returned
            gnode[n] = nil
            for k = 1, n.nout do if gl[k] ~= nil then drop(gl[k]) end end
          end
          if not retain then  -- saved tensors go; a later backward through n says so
            n.freed = true
            -- the headers only this node holds (data_of's, not a leaf or a constant input, which are the
            -- caller's) are freed now, unless a rule passed one on as a gradient
            for i = 1, nin do
              local sx = n[nin + i]
              if sx and sx.node and not keep[n[i]] then release_now(n[i]) end
            end
            for k = 1, n.nout do
              local y = n[2 * nin + k]
              if not keep[y] then release_now(y) end
            end
            for i = 1, 3 * nin + 2 * n.nout do n[i] = nil end
          end
        end
      end
    end)
    enabled = was
    if not ok then error(err, 0) end
    return gnode, gleaf, drop, keep
  end

  local function seeds_for(what, roots, grads)
    local seeds = {}
    for i, r in ipairs(roots) do
      local g = grads and grads[i]
      if g == nil then
        if r._count ~= 1 then
          local s = state(r)
          raise(('%s: output %d is %s (%d elements, %s); a gradient is implicit only for a 1-element output: pass '
            .. 'one of its shape (or reduce it first, e.g. :sum())'):format(what, i, shape_str(r), tonumber(r._count),
            s and s.node and ("computed by op '" .. s.node.op.name .. "'") or 'a leaf'))
        end
        g = mf.ones_like(r)
      elseif not is_tensor(g) then
        raise(('%s: the gradient for output %d is a %s; expected a tensor of shape %s'):format(what, i, type(g),
          shape_str(r)))
      elseif not same_shape(g, r) then
        raise(('%s: the gradient for output %d is %s; expected the output\'s shape %s'):format(what, i, shape_str(g),
          shape_str(r)))
      elseif g._dtype_id ~= r._dtype_id then
        raise(('%s: the gradient for output %d is %s; expected the output\'s dtype %s (convert it with :type(%q))')
          :format(what, i, DTYPE_NAME[g._dtype_id], DTYPE_NAME[r._dtype_id], DTYPE_NAME[r._dtype_id]))
      end
      seeds[i] = g
    end
    return seeds
  end

  local OPT_KEYS = {'retain_graph', 'create_graph'}
  local GRAD_OPT_KEYS = {'retain_graph', 'create_graph', 'allow_unused'}
  local function options(what, opts, keys)
    if opts == nil then return false, false end  -- the usual loss:backward(): no table, no check
    require('moonflow.options').keys(what, opts, keys or OPT_KEYS, 'option')
    local create = opts.create_graph == true
    local retain = opts.retain_graph
    if retain == nil then retain = create end
    return retain, create
  end

  -- one backward pass from roots (seeded by grads[i], or implicit for 1-element roots) into .grad
  local function backward_from(what, roots, grads, opts)
    local retain, create = options(what, opts)
    local seeds = seeds_for(what, roots, grads)
    local _, gleaf, drop, keep = run_backward(what, roots, seeds, nil, retain, create)
    local taken = {}  -- the caller's gradients are never taken over
    for i = 1, #seeds do taken[seeds[i]] = true end
    for s, g in pairs(gleaf) do
      if s.input then
        if s.collect then s.collected = g end
      elseif s.leaf then
        -- private: .grad is a tensor only the tape refers to (no one read it through t.grad), so
        -- replacing it (opt:zero_grad(), t.grad = nil) frees it at once (mf._set_grad)
        if s.grad == nil then
          -- a gradient may be a tensor the rules share (add passes gy on, views of the seed): .grad
          -- takes it over only when nothing else refers to its storage, else gets a copy
          -- (nor one the tape keeps: a seed, a saved tensor or a Lua rule's result, which others hold)
          if not create and not taken[g] and not keep[g] and g._is_contig == 1 and g._offset == 0
              and C.mf_storage_refcount(g) == 1 then
            s.grad = g
          else
            s.grad = mf.cast(g, DTYPE_NAME[g._dtype_id])
            if not create then drop(g) end
          end
          s.private = not create
          taken[g] = true
        elseif create then
          s.grad = mf.add(s.grad, g)
          s.private = false
        else  -- in place, as PyTorch: a gradient that is a view (getParameters' flat one) stays one
          mf.add_(s.grad, g)
          drop(g)
        end
      end
    end
  end

  -- loss:backward([grad [, {retain_graph =, create_graph =}]])
  function methods.backward(t, grad, opts)
    if type(grad) == 'table' and not is_tensor(grad) and opts == nil then grad, opts = nil, grad end
    return backward_from('backward', {t}, {grad}, opts)
  end

  -- Torch7's m:backward (nn.lua): backward from y with grad_output, returning the input leaf's gradient
  function mf._input_leaf_backward(leaf, y, grad_output)
    local s = AG[leaf]
    if s.tainted then
      raise(("backward(input, grad_output): the forward read its input with the in-place op '%s', which the tape does "
        .. 'not record, so the gradient with respect to input would be incomplete; use the out-of-place op in the '
        .. 'forward'):format(s.tainted))
    end
    if not methods.requires_grad(y) then return nil end  -- no parameter and no input on its path
    s.collect, s.collected = true, nil
    local ok, err = pcall(methods.backward, y, grad_output)
    local g = s.collected
    s.collect, s.collected = nil, nil
    if not ok then error(err, 0) end
    return g
  end

  mf.autograd = mf.autograd or {}
  -- mf.autograd.grad(outputs, inputs [, grad_outputs [, {retain_graph =, create_graph =, allow_unused =}]]) -> list
  -- inputs may be nn.Parameters (m:parameters()). An input the outputs do not depend on is an error,
  -- unless allow_unused = true: then its gradient is nil (a hole in the list).
  function mf.autograd.grad(outputs, inputs, grad_outputs, opts)
    if opts == nil and type(grad_outputs) == 'table' and not is_tensor(grad_outputs) and #grad_outputs == 0
      and next(grad_outputs) ~= nil then
      grad_outputs, opts = nil, grad_outputs
    end
    local roots = as_list(outputs, 'autograd.grad: outputs')
    local xs = as_list(inputs, 'autograd.grad: inputs')
    if #roots == 0 then raise('autograd.grad: outputs is empty') end
    if grad_outputs ~= nil then grad_outputs = as_list(grad_outputs, 'autograd.grad: grad_outputs') end
    local retain, create = options('autograd.grad', opts, GRAD_OPT_KEYS)
    local allow_unused = opts and opts.allow_unused == true
    local gnode, gleaf = run_backward('autograd.grad', roots, seeds_for('autograd.grad', roots, grad_outputs), xs,
      retain, create)
    local out = {}
    for i, x in ipairs(xs) do
      local s = state(x)
      if s.node then
        local l = gnode[s.node]
        out[i] = l and l[s.index]
      else
        out[i] = gleaf[s]
      end
      if out[i] == nil and not allow_unused then
        raise(('autograd.grad: inputs[%d] (%s) is not used to compute the outputs (no path from it to them); '
          .. 'pass {allow_unused = true} to get nil for it'):format(i, shape_str(x)))
      end
    end
    return out
  end
  -- mf.autograd.backward(t[, grad][, opts]) is t:backward; with lists, torch.autograd.backward(tensors,
  -- grad_tensors): one pass from all of them (a tape they share is walked once)
  mf.autograd.backward = function(t, grad, opts)
    if is_tensor(unwrap(t)) then return methods.backward(unwrap(t), grad, opts) end
    local roots = as_list(t, 'autograd.backward: tensors')
    if #roots == 0 then raise('autograd.backward: tensors is empty') end
    if type(grad) == 'table' and not is_tensor(grad) and opts == nil and #grad == 0 and next(grad) ~= nil then
      grad, opts = nil, grad
    end
    if grad ~= nil then grad = as_list(grad, 'autograd.backward: grad_tensors') end
    return backward_from('autograd.backward', roots, grad, opts)
  end
  -- help(t.backward) and the like find their docs (help.lua) under these names
  for _, k in ipairs{'backward', 'requires_grad', 'requires_grad_', 'detach', 'is_leaf'} do
    mf._fn_names[methods[k]] = k
  end
end
