-- Graph mode: symbols, placeholders, variables, constants and autodiff. The graph itself (nodes,
-- execution order, CSE, simplification, memory plan) lives in C++ (src/graph/); every op called on
-- a symbol adds a node through the same registry entry an eager call uses.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local K, T, SZ, raise = mf.kernels, mf._T, mf._SZ, mf._raise
  local is_tensor, ops = mf.is_tensor, mf._ops
  local DTYPE_NAME = mf._DTYPE_NAME
  local KIND_OP, KIND_PLACEHOLDER, KIND_VARIABLE, KIND_CONSTANT = C.MF_NODE_OP, C.MF_NODE_PLACEHOLDER,
    C.MF_NODE_VARIABLE, C.MF_NODE_CONSTANT
  local UNKNOWN, UNKNOWN2 = 1000003, 1000033   -- stand in for unknown dims at build time (static_infer)
  local buf_cap = 256  -- grows for nodes with more inputs (a stack of 300 symbols)
  local nodes_buf = ffi.new('int32_t[?]', 256)
  local index_buf = ffi.new('int32_t[?]', 256)

  -- graphs ------------------------------------------------------------------------------------
  local Graph = {}
  Graph.__index = Graph

  function mf.Graph()
    local h = C.mf_graph_new()
    if h == nil then raise(ffi.string(C.mf_last_error())) end
    return setmetatable({h = ffi.gc(h, C.mf_graph_free), nodes = {}, names = {}, variables = {},
                         trainable = {}, version = 0, passes_version = -1}, Graph)
  end

  local default_graph = mf.Graph()
  function mf.get_default_graph() return default_graph end
  function mf.reset_default_graph() default_graph = mf.Graph() return default_graph end
  function mf._set_default_graph(g) default_graph = g end

  function Graph:unique_name(base)
    base = base or 'node'
    local n = self.names[base]
    if not n then
      self.names[base] = 0
      return base
    end
    n = n + 1
    self.names[base] = n
    return base .. '_' .. n
  end

  -- Adds a node; info holds the Lua-side facts (op record, params record, static shapes).
  function Graph:add_node(kind, op, params_text, inputs, nout, name, info)
    local n = #inputs
    if n > buf_cap then
      buf_cap = n
      nodes_buf, index_buf = ffi.new('int32_t[?]', n), ffi.new('int32_t[?]', n)
    end
    for i, s in ipairs(inputs) do nodes_buf[i - 1], index_buf[i - 1] = s.node, s.index - 1 end
    local id = C.mf_graph_add(self.h, kind, op and op.index or -1, params_text or '', n, nodes_buf, index_buf, nout, name)
    if id < 0 then raise(ffi.string(C.mf_last_error())) end
    info.kind, info.op, info.name, info.inputs, info.nout = kind, op, name, inputs, nout
    self.nodes[id] = info
    self.version = self.version + 1
    return id
  end

  -- CSE and simplification, once per graph change; symbols keep their ids and resolve at bind
  function Graph:run_passes()
    if self.passes_version == self.version then return end
    if C.mf_graph_simplify(self.h) < 0 or C.mf_graph_cse(self.h) < 0 then raise(ffi.string(C.mf_last_error())) end
    self.passes_version = self.version
  end

  -- symbols -----------------------------------------------------------------------------------
  local Symbol = mf._symbol_mt  -- made empty by init.lua, whose mf.is_symbol compares with it
  local sym_methods = {}
  mf.Symbol = sym_methods

  local is_symbol = mf.is_symbol

  local function new_symbol(g, node, index, shape, dtype)
    -- _shape: the static sizes (-1 unknown until run; nil: rank unknown too); _dtype_id: the dtype code.
    -- Private names, as the tensor header's (src/core/types.h): s.shape and s.ndim are the public
    -- read-only properties below, and code that takes a tensor or a symbol reads x._dtype_id of either.
    return setmetatable({graph = g, node = node, index = index, _shape = shape, _dtype_id = dtype}, Symbol)
  end

  local function shape_text(shape)
    if not shape then return '?' end
    if #shape == 0 then return 'scalar' end
    local parts = {}
    for i, d in ipairs(shape) do parts[i] = d < 0 and '?' or tostring(d) end
    return table.concat(parts, 'x')
  end
  mf._shape_text = shape_text

  function sym_methods.name(s) return s.graph.nodes[s.node].name end
  function sym_methods.op_name(s)
    local info = s.graph.nodes[s.node]
    return info.op and info.op.name or ({[1] = 'placeholder', [2] = 'variable', [3] = 'constant'})[info.kind]
  end
  function sym_methods.dim(s) return s._shape and #s._shape or nil end
  function sym_methods.size(s, d)
    if not s._shape then return nil end
    if d then
      local n = #s._shape
      local dd = d < 0 and d + n + 1 or d
      local v = s._shape[dd]
      return v and v >= 0 and v or nil
    end
    local out = {}
    for i, v in ipairs(s._shape) do out[i] = v >= 0 and v or nil end
    return out
  end
  function sym_methods.dtype(s) return DTYPE_NAME[s._dtype_id] end
  function sym_methods.t(s) return mf.transpose(s, 1, 2) end
  function sym_methods.view(s, ...) return mf.reshape(s, ...) end
  local function converter(name) return function(s) return mf.cast(s, name) end end
  sym_methods.float, sym_methods.double = converter('float32'), converter('float64')
  sym_methods.long, sym_methods.int, sym_methods.byte = converter('int64'), converter('int32'), converter('uint8')

  Symbol.__index = function(s, k)
    local m = sym_methods[k]
    if m then return m end
    -- x.shape and x.ndim as on a tensor: x:size() (a fresh list, nil for a size unknown until run)
    -- and x:dim(); both nil while the rank is unknown
    if k == 'shape' then return sym_methods.size(s) end
    if k == 'ndim' then return sym_methods.dim(s) end
    if k == '_shape' or k == '_dtype_id' then return nil end  -- not known until the graph is bound
    local op = ops[k]
    if op and #op.inputs > 0 then return op.fn end
    local alias = mf._aliases[k]
    if alias then return ops[alias].fn end
    if type(k) == 'number' or type(k) == 'table' then  -- x[i], x[{i, j}] read values, which a symbol has not yet
      raise(('symbol[%s]: a graph symbol cannot be indexed; select in the graph with x:select(dim, i) '
        .. '(x:narrow(dim, start, length) for a range)'):format(type(k) == 'number' and tostring(k) or '{...}'))
    end
    raise(("symbol has no method '%s'"):format(tostring(k)))
  end
  -- the properties are read-only, as on a tensor (a symbol's other fields are its own business)
  Symbol.__newindex = function(s, k, v)
    if k == 'shape' or k == 'ndim' then mf._readonly_property(k) end
    rawset(s, k, v)
  end
  Symbol.__tostring = function(s)
    return ('Symbol %s (%s) %s %s'):format(s:name() .. (s.index > 1 and (':' .. s.index) or ''), s:op_name(),
      shape_text(s._shape), DTYPE_NAME[s._dtype_id])
  end
  local function binop(name) return function(a, b) return mf[name](a, b) end end
  Symbol.__add, Symbol.__sub, Symbol.__mul, Symbol.__div, Symbol.__pow =
    binop('add'), binop('sub'), binop('mul'), binop('div'), binop('pow')
  Symbol.__unm = function(a) return mf.neg(a) end

  -- An operation without a value (mf.group, an initializer): a target for sess:run.
  local Operation = {}
  Operation.__index = Operation
  Operation.__tostring = function(o) return ('Operation %s'):format(o.graph.nodes[o.node].name) end
  local function is_operation(x) return type(x) == 'table' and getmetatable(x) == Operation end
  mf.is_operation = is_operation

  -- source nodes ------------------------------------------------------------------------------
  local function check_name(name, what)
    if name ~= nil and type(name) ~= 'string' then raise(('%s: name must be a string'):format(what)) end
  end

  function mf.placeholder(dtype, shape, name)
    local code = mf._dtype_code(dtype or 'float32', 'placeholder')
    check_name(name, 'placeholder')
    local s = nil
    if shape ~= nil then
      if type(shape) ~= 'table' then raise('placeholder: shape must be a table of sizes (nil or -1 for any)') end
      s = {}
      for i = 1, table.maxn(shape) do
        local d = shape[i]
        if d == nil or d == -1 then s[i] = -1
        elseif type(d) ~= 'number' or d < 0 or d ~= math.floor(d) then
          raise(('placeholder: size %s at dim %d; expected a non-negative integer, or nil/-1 for any'):format(tostring(d), i))
        else s[i] = d end
      end
    end
    local g = default_graph
    name = g:unique_name(name or 'placeholder')
    local id = g:add_node(KIND_PLACEHOLDER, nil, '', {}, 1, name, {shape = s, dtype = code})
    return new_symbol(g, id, 1, s, code)
  end

  local function static_shape(t)
    local s = {}
    for i = 1, t._ndim do s[i] = tonumber(t._shape[i - 1]) end
    return s
  end

  function mf.Variable(init, name, opts)
    if type(name) == 'table' then name, opts = nil, name end
    check_name(name, 'Variable')
    if type(init) == 'number' then init = mf.tensor(init) end
    if not is_tensor(init) then raise('Variable: the initial value must be a tensor or a number') end
    local g = default_graph
    name = g:unique_name(name or 'Variable')
    local shape = static_shape(init)
    -- bind = true: the variable's storage is init itself (modules' parameters), always initialized
    local bound = opts and opts.bind and init or nil
    local id = g:add_node(KIND_VARIABLE, nil, '', {}, 1, name,
      {shape = shape, dtype = init._dtype_id, init = not bound and init:clone() or nil, bound = bound})
    local s = new_symbol(g, id, 1, shape, init._dtype_id)
    g.variables[#g.variables + 1] = s
    if not (opts and opts.trainable == false) then g.trainable[#g.trainable + 1] = s end
    return s
  end

  function mf.constant(value, name)
    if type(value) == 'number' or type(value) == 'table' and not is_tensor(value) then value = mf.tensor(value) end
    if not is_tensor(value) then raise('constant: expected a tensor, a number or a nested table') end
    local g = default_graph
    name = g:unique_name(name or 'Const')
    local shape = static_shape(value)
    local id = g:add_node(KIND_CONSTANT, nil, '', {}, 1, name, {shape = shape, dtype = value._dtype_id, value = value})
    return new_symbol(g, id, 1, shape, value._dtype_id)
  end

  function mf.global_variables() return {unpack(default_graph.variables)} end
  function mf.trainable_variables() return {unpack(default_graph.trainable)} end

  -- op nodes ----------------------------------------------------------------------------------
  -- Build-time shape inference. Unknown dims stand in as a large prime; the rules run twice with
  -- two different primes, and an output dim that differs between the runs depends on an unknown
  -- one (stride or division rules included). Native rules know the sentinel (mf_op_infer_partial):
  -- they check every size that is known, so a mismatch of known sizes is an error here, at the
  -- user's build line, with unknown sizes printed as '?'. Only a rule that cannot tell its output
  -- shape before the run ([unknown-output]), or a Lua-registered rule (which sees the sentinels as
  -- numbers) failing on unknown sizes, leaves the output shapes unknown.
  -- The headers of build-time inference are scratch (only the output shapes and dtypes are read,
  -- right after): input headers from one array, output headers from one pool per sentinel run
  -- (mf._infer's into; the first run's outputs are read after the second). One finalizable cdata
  -- per input and output of every node was collector work that grew with the graph. A rule that
  -- builds nodes itself (a Lua shape rule could) gets fresh headers: the scratch is in use.
  local scratch_ins, scratch_cap = ffi.new('mf_tensor[?]', 256), 256
  local pools = {[UNKNOWN] = mf._header_pool(), [UNKNOWN2] = mf._header_pool()}  -- rewound per node
  local scratch_busy = false

  local function infer_with(op, rec, ins, sentinel, has_unknown, into)
    local metas = {}
    if #ins > scratch_cap then scratch_cap = #ins; scratch_ins = ffi.new('mf_tensor[?]', #ins) end
    for i, s in ipairs(ins) do
      local m = into and scratch_ins[i - 1] or T()
      if into then ffi.fill(m, SZ) end
      m._dtype_id = s._dtype_id
      m._ndim = #s._shape
      local acc = 1  -- strides and count as if unknown sizes were 1: no overflow with many of them
      for d = #s._shape, 1, -1 do
        local v = s._shape[d]
        m._shape[d - 1] = v < 0 and sentinel or v
        m._strides[d - 1] = acc
        acc = acc * math.max(v, 1)
      end
      m._count = acc
      for d = 1, #s._shape do if s._shape[d] == 0 then m._count = 0 end end
      m._is_contig = 1
      metas[i] = m
    end
    if into then into:rewind() end
    return pcall(mf._infer, op, rec, metas, #metas, has_unknown and sentinel or nil, into)
  end

  -- a failed build-time inference: unknown output shapes (nil), or the rule's error raised again
  local function infer_failed(op, has_unknown, msg)
    msg = tostring(msg)
    if msg:find('[unknown-output]', 1, true) or (has_unknown and op.lua_infer) then return nil end
    msg = msg:gsub(tostring(UNKNOWN2), '?'):gsub(tostring(UNKNOWN), '?')
    error(msg, 0)  -- the message already names the user's line (K.raise skips moonflow's frames)
  end

  local function static_infer(op, rec, ins)
    local has_unknown = false
    for _, s in ipairs(ins) do
      if not s._shape then return nil end
      for _, v in ipairs(s._shape) do has_unknown = has_unknown or v < 0 end
    end
    local use_scratch = not scratch_busy
    scratch_busy = true
    local ok, outs = infer_with(op, rec, ins, UNKNOWN, has_unknown, use_scratch and pools[UNKNOWN])
    if not ok then
      if use_scratch then scratch_busy = false end
      return infer_failed(op, has_unknown, outs)
    end
    local outs2
    if has_unknown then
      local ok2, o2 = infer_with(op, rec, ins, UNKNOWN2, true, use_scratch and pools[UNKNOWN2])
      if not ok2 then
        if use_scratch then scratch_busy = false end
        return infer_failed(op, true, o2)
      end
      outs2 = o2
    end
    local res = {}
    for i, m in ipairs(outs) do
      local s = {}
      for d = 1, m._ndim do
        local v = tonumber(m._shape[d - 1])
        s[d] = (outs2 and v ~= tonumber(outs2[i]._shape[d - 1])) and -1 or v
      end
      res[i] = {shape = s, dtype = m._dtype_id}
    end
    if use_scratch then scratch_busy = false end
    return res
  end

  local check_write_target  -- (below) refuses a write into a placeholder or a constant

  local function same_known_shape(a, b)
    if not a._shape or not b._shape or #a._shape ~= #b._shape then return false end
    for i = 1, #a._shape do if a._shape[i] < 0 or a._shape[i] ~= b._shape[i] then return false end end
    return true
  end

  -- An op with the write attribute (in-place methods, assign, copy, fill, optimizer updates)
  -- writes its input 1. In a graph that must be a Variable, or a result the graph computed: a
  -- placeholder's storage is the caller's feed tensor and a constant's is the caller's tensor used
  -- every run, so a write there would change them. Views (narrow, the in-place ops' own results)
  -- are followed to the node whose storage they share. The one check for every write op.
  local SOURCE_WHAT = {[tonumber(KIND_PLACEHOLDER)] = 'a placeholder (its storage is the fed tensor)',
                       [tonumber(KIND_CONSTANT)] = 'a constant (its storage is the same tensor every run)'}
  function check_write_target(op, g, s)
    local node = s.node
    local info = g.nodes[node]
    while info and info.kind == KIND_OP and info.op and info.op.view and info.inputs[1] do
      node = info.inputs[1].node
      info = g.nodes[node]
    end
    local what = info and SOURCE_WHAT[tonumber(info.kind)]
    if what then
      local plain = op.in_place_of  -- its block's in_place_of: add for add_
      raise(("%s: %s is '%s', %s; in a graph an op that writes in place writes only a Variable "
        .. '(mf.Variable) or a result computed in the graph%s'):format(op.name, op.inputs[1] or 'input 1', info.name, what,
        plain and ('; ' .. plain .. ' returns a new result') or ''))
    end
  end

  -- Called by every op function when an input is a symbol.
  function mf._graph_call(op, ins, nin, ptable)
    local g
    for i = 1, nin do if is_symbol(ins[i]) then g = ins[i].graph break end end
    -- numbers become tensors as eager calls take them (ops.lua: PyTorch's promotion), and any other
    -- non-symbol input is refused there, so only symbols and tensors remain
    mf._number_operands(op, ins, nin)
    local syms = {}
    for i = 1, nin do
      local x = ins[i]
      if is_symbol(x) then
        if x.graph ~= g then raise(op.name .. ': inputs come from different graphs') end
      else
        x = mf.constant(x)
      end
      syms[i] = x
    end
    if op.writes then check_write_target(op, g, syms[1]) end
    -- gradients add sum_to / broadcast_like everywhere; skip them where shapes already agree
    if op.same_shape_identity and same_known_shape(syms[1], syms[2]) then
      return syms[1]
    end
    local rec = mf._params_record(op, ptable)
    local outs = static_infer(op, rec, syms)
    local nout = outs and #outs
    if not nout then
      if op.multi then
        raise(('%s: the number of outputs depends on sizes that are unknown when the graph is built'):format(op.name))
      end
      -- shapes unknown until run time: the count the op block declares for these params (sort: 2),
      -- or one where it declares none
      nout = C.mf_op_num_outputs(op.index, rec.h)
      if nout < 0 then nout = 1 end
    end
    local text = ffi.string(C.mf_params_canonical(rec.h))
    local name = g:unique_name(op.name)
    -- every field add_node and the lines below set, named here: the table is made at its final
    -- size (eight fields; a ninth, or growing one field at a time, doubles it). The params are
    -- rec.p (autodiff reads them there).
    local info = {kind = false, op = false, name = false, inputs = false, nout = false, rec = rec, outs = outs or false,
                  out_syms = false}
    local id = g:add_node(KIND_OP, op, text, syms, nout, name, info)
    local res = {}
    for i = 1, nout do
      res[i] = new_symbol(g, id, i, outs and outs[i].shape or nil, outs and outs[i].dtype or syms[1]._dtype_id)
    end
    g.nodes[id].out_syms = res
    if op.multi then return res end  -- a list, empty too (unbind of an empty dim)
    if nout == 0 then return setmetatable({graph = g, node = id}, Operation) end
    return unpack(res, 1, nout)
  end

  -- mf.group{...}: one target that runs all of them
  function mf.group(list, name)
    if type(list) ~= 'table' then raise('group: expected a list of symbols or operations') end
    local g = default_graph
    for _, x in ipairs(list) do
      if not (is_symbol(x) or is_operation(x)) then raise('group: every element must be a symbol or an operation') end
      g = x.graph
    end
    local id = g:add_node(KIND_OP, ops.no_op, '', {}, 0, g:unique_name(name or 'group'), {params = {}})
    for _, x in ipairs(list) do
      if C.mf_graph_add_control(g.h, id, x.node) ~= 0 then raise(ffi.string(C.mf_last_error())) end
    end
    return setmetatable({graph = g, node = id}, Operation)
  end

  -- Side effects that training must run with each step (batch-norm running statistics):
  -- optimizers' minimize groups them with the update.
  function mf.add_update_op(op)
    local g = op.graph
    g.update_ops = g.update_ops or {}
    g.update_ops[#g.update_ops + 1] = op
  end
  function mf.update_ops(g) return (g or default_graph).update_ops or {} end

  function mf.global_variables_initializer()
    local g = default_graph
    local assigns = {}
    for _, v in ipairs(g.variables) do
      local init = g.nodes[v.node].init
      if init then assigns[#assigns + 1] = mf.assign(v, mf.constant(init, v:name() .. '/initial_value')) end
    end
    return mf.group(assigns, 'init')
  end
end

