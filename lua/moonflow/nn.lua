-- mf.nn: Torch7-style modules. A module called on a tensor computes; called on a symbol it builds
-- graph, its parameters appearing as Variables bound to the module's own tensors (a session
-- reads and updates those tensors in place), so eager use, graph training and checkpoints all
-- see one set of values.
return function(mf)
  local raise, is_tensor, is_symbol = mf._raise, mf.is_tensor, mf.is_symbol
  local nn = mf.nn

  local O = require 'moonflow.options'

  -- parameters and buffers ------------------------------------------------------------------------
  -- A holder keeps a tensor in .data and, per graph, the Variable bound to it. Assigning .data
  -- rebinds: eager code and every graph the holder is bound into then use the new tensor (graph
  -- shapes are fixed when built, so there the new tensor must match the old shape and dtype).
  local function shape_of(x)
    if is_symbol(x) then return mf._shape_text(x._shape) end
    if is_tensor(x) then return x:shape_str() end
    return 'a ' .. type(x)
  end

  local function rebind(h, t, what)
    if not is_tensor(t) then
      raise(('%s.data = value: value is %s; expected a tensor'):format(what, mf.is_symbol(t) and 'a symbol' or 'a ' .. type(t)))
    end
    for g, v in pairs(h.vars) do
      local info = g.nodes[v.node]
      local same = t._ndim == #info.shape and t._dtype_id == info.dtype
      for d = 1, same and #info.shape or 0 do same = same and tonumber(t._shape[d - 1]) == info.shape[d] end
      if not same then
        raise(('%s.data = t: t is %s %s but the %s is bound into a graph as %s %s (graph shapes are fixed when '
          .. 'the graph is built); copy values with .data:copy(t), or build a new graph'):format(what, t:shape_str(),
          t:dtype(), what:lower(), mf._shape_text(info.shape), mf._DTYPE_NAME[info.dtype]))
      end
      if not t:is_contiguous() then
        raise(('%s.data = t: t (%s) is a non-contiguous view; a graph-bound %s needs its own dense tensor: use t:contiguous()'):format(
          what, t:shape_str(), what:lower()))
      end
    end
    for g, v in pairs(h.vars) do
      g.nodes[v.node].bound = t
      g.version = g.version + 1   -- sessions rebind their executors to the new storage
    end
    -- the eager autograd state (tape.lua) lives on the tensor: the new one requires grad and keeps
    -- the gradient as the old one did
    local old = rawget(h, '_data')
    if old ~= nil and old ~= t then
      if old:requires_grad() and mf._IS_FLOAT[t._dtype_id] then
        if not t:is_leaf() then t = t:detach() end
        t:requires_grad_()
      end
      local g = old.grad
      if g ~= nil and t.grad == nil and g:shape_str() == t:shape_str() and g._dtype_id == t._dtype_id then t.grad = g end
    end
    rawset(h, '_data', t)
  end

  -- A holder stands for its tensor as an operand: in arithmetic (x * self.w), in op calls
  -- (mf.matmul(x, self.w)) and in tensor method calls (self.w:t()). operand (set below, after
  -- bound_variable) gives the tensor, or in graph mode the holder's Variable in that graph.
  local operand
  local TENSOR_METHODS = mf.Tensor
  local function holder_binop(name) return function(a, b) return mf[name](a, b) end end
  -- the method k of a holder, calling the tensor's (a closure made once per name and class, here:
  -- a closure made inside __index kept the JIT from compiling every p.data and p.grad read)
  local function forwarder(k)
    return function(self, ...)
      local v = operand(self)
      return v[k](v, ...)
    end
  end
  local function holder_class(what, methods)
    methods = methods or {}
    local mt = {__holder = what}
    local forwarders = {}
    mt.__index = function(h, k)
      if k == 'data' then return rawget(h, '_data') end
      if k == 'grad' then return rawget(h, '_data').grad end  -- the tensor's (eager autograd, tape.lua)
      if k == 'shape' or k == 'ndim' then return operand(h)[k] end  -- the tensor's (or the Variable's) properties
      local m = methods[k]
      if m ~= nil then return m end
      -- a tensor method: called on the tensor (or, while a module builds a graph, the Variable)
      if type(k) == 'string' and type(TENSOR_METHODS[k]) == 'function' then
        local f = forwarders[k]
        if not f then
          f = forwarder(k)
          forwarders[k] = f
        end
        return f
      end
      -- p[{i, j}], p[i]: the tensor's indexing. (#p cannot be forwarded: LuaJIT ignores __len on
      -- tables, so #p is 0; p:numel() and p:size(1) are the tensor's.)
      if type(k) ~= 'string' then return operand(h)[k] end
      return nil
    end
    mt.__add, mt.__sub, mt.__mul, mt.__div, mt.__pow =
      holder_binop('add'), holder_binop('sub'), holder_binop('mul'), holder_binop('div'), holder_binop('pow')
    mt.__unm = function(a) return mf.neg(a) end
    mt.__newindex = function(h, k, v)
      if k == 'data' then return rebind(h, v, what) end
      if k == 'grad' then
        if v ~= nil and not is_tensor(v) then
          raise(('%s.grad = value: value is a %s; expected a tensor or nil'):format(what, type(v)))
        end
        rawget(h, '_data').grad = v
        return
      end
      if k == 'shape' or k == 'ndim' then mf._readonly_property(k) end
      if type(k) ~= 'string' then  -- p[{i, j}] = v writes the tensor, as t[{i, j}] = v
        rawget(h, '_data')[k] = v
        return
      end
      rawset(h, k, v)
    end
    local function new(t)
      local h = setmetatable({vars = setmetatable({}, {__mode = 'k'})}, mt)
      rawset(h, '_data', t)
      return h
    end
    return mt, new
  end

  local Parameter, new_parameter = holder_class('Parameter')
  Parameter.__tostring = function(p) return ('Parameter(%s, %s)'):format(p.data:shape_str(), p.data:dtype()) end
  function nn.Parameter(t)
    if not is_tensor(t) then raise(('Parameter: expected a tensor, got %s'):format(shape_of(t))) end
    -- a floating parameter is a leaf that requires grad (eager autograd): loss:backward() fills .grad
    if mf._IS_FLOAT[t._dtype_id] then
      if not t:is_leaf() then t = t:detach() end
      t:requires_grad_()
    end
    return new_parameter(t)
  end
  function nn.is_parameter(x) return type(x) == 'table' and getmetatable(x) == Parameter end
  local Buffer, new_buffer = holder_class('Buffer')
  Buffer.__tostring = function(b) return ('Buffer(%s, %s)'):format(b.data:shape_str(), b.data:dtype()) end
  -- a rebindable tensor holder (optimizer state, learning rates)
  nn._holder = new_buffer

  -- The Variable standing for t in graph g (one per graph), bound to t's storage.
  local function bound_variable(holder, g, name, trainable)
    local v = holder.vars[g]
    if not v then
      local saved = mf.get_default_graph()
      mf._set_default_graph(g)
      v = mf.Variable(holder.data, name, {bind = true, trainable = trainable})
      mf._set_default_graph(saved)
      holder.vars[g] = v
    end
    return v
  end
  nn._bound_variable = bound_variable

  -- The graph a module's forward is building (set while a forward runs on a symbol, see
  -- forward_wrapper): there a parameter used on its own (self.w * 2, self.w:t()) stands for its
  -- Variable; elsewhere it stands for its tensor.
  local forward_graph = nil
  local HOLDER_KIND = {[Parameter] = true, [Buffer] = false}   -- metatable -> trainable
  operand = function(h, g)
    g = g or forward_graph
    if g then
      return bound_variable(h, g, rawget(h, '_name') or tostring(h), HOLDER_KIND[getmetatable(h)])
    end
    return rawget(h, '_data')
  end
  -- ops.lua calls this on an op's inputs when one is a holder: each holder becomes its tensor, or
  -- its Variable in the graph of a symbol among the inputs (else of the forward being built)
  function mf._holder_operands(ins, nin)
    local g
    for i = 1, nin do
      if is_symbol(ins[i]) then g = ins[i].graph break end
    end
    for i = 1, nin do
      local h = ins[i]
      if type(h) == 'table' and HOLDER_KIND[getmetatable(h)] ~= nil then ins[i] = operand(h, g) end
    end
    return ins
  end

  local function keep_error(e) return e end
  local function pack(...)  -- not {n = ..., ...} (tensor.lua's pack_args says why)
    local n = select('#', ...)
    local t = mf._pack_args(n, ...)
    t.n = n
    return t
  end
  -- A module's forward, run with forward_graph set to the graph of its input (nil for a tensor).
  -- Only a change of graph costs an xpcall (which restores the previous graph on an error).
  -- The graph of a forward's first argument: a symbol's, a list's first symbol's; a tensor runs
  -- eagerly; anything else (nil, a table of numbers) keeps the graph being built.
  local function graph_of(x)
    if is_symbol(x) then return x.graph end
    if is_tensor(x) then return nil end
    if type(x) == 'table' and getmetatable(x) == nil then
      for _, v in ipairs(x) do
        if is_symbol(v) then return v.graph end
        if is_tensor(v) then return nil end
      end
    end
    return forward_graph
  end
  -- Torch7's m:backward(input, grad_output) reuses the tape of the last eager forward: an outermost
  -- forward in grad mode on a floating tensor without autograd state runs on an input leaf (a header
  -- of x that requires grad, whose gradient plain backward() never stores: tape.lua's input leaves),
  -- and the module keeps {x, leaf, output} for its backward, weakly: the tape goes when the caller
  -- drops the output, as PyTorch's does.
  local WEAK_VALUES = {__mode = 'v'}
  -- (the results pass through as varargs: no table to pack them, and no unpack, which LuaJIT does not
  -- compile, so each training step's forward left its trace here)
  local function remember(self, x, leaf, ...)
    if select('#', ...) == 1 then
      local y = ...
      if is_tensor(y) then
        rawset(self, '_last_forward', setmetatable({x, leaf, y}, WEAK_VALUES))
        if rawequal(y, leaf) then return x end  -- Identity and the like return the caller's tensor
      end
    end
    return ...
  end
  local function eager_forward(fn, self, x, ...)
    local leaf = mf._input_leaf(x)
    return remember(self, x, leaf, fn(self, leaf, ...))
  end
  local function forward_wrapper(fn)
    return function(self, x, ...)
      if is_tensor(x) and x._autograd == 0 and mf._IS_FLOAT[x._dtype_id] and mf.is_grad_enabled() then
        return eager_forward(fn, self, x, ...)
      end
      local g = graph_of(x)
      if g == forward_graph then return fn(self, x, ...) end
      local saved = forward_graph
      forward_graph = g
      local r = pack(xpcall(fn, keep_error, self, x, ...))
      forward_graph = saved
      if not r[1] then error(r[2], 0) end
      return unpack(r, 2, r.n)
    end
  end

  -- modules -------------------------------------------------------------------------------------
  local Module = {}
  nn.ModuleBase = Module

  local function instance_index(self, k)
    local c = rawget(self, '_children')[k]
    if c then return c end
    local p = rawget(self, '_params')[k]
    if p then return p end
    local b = rawget(self, '_buffers')[k]
    if b then return b end
    return getmetatable(self).__class[k]
  end

  local function instance_newindex(self, k, v)
    if type(v) == 'table' and v._is_module then return self:add(k, v) end
    if nn.is_parameter(v) then return self:register_parameter(k, v) end
    local params, buffers, children = rawget(self, '_params'), rawget(self, '_buffers'), rawget(self, '_children')
    if params and params[k] then
      -- PyTorch refuses a plain tensor here too: the module would silently keep the old parameter
      raise(("%s: cannot assign %s to parameter '%s'; assign values with m.%s.data:copy(t), rebind with "
        .. 'm.%s.data = t, or assign an nn.Parameter'):format(self.__name, is_tensor(v) and ('a ' .. v:shape_str() .. ' tensor')
        or shape_of(v), tostring(k), tostring(k), tostring(k)))
    end
    if buffers and buffers[k] then
      if not is_tensor(v) then raise(("%s: buffer '%s' must be a tensor, got %s"):format(self.__name, tostring(k), shape_of(v))) end
      buffers[k].data = v
      return
    end
    if children and children[k] then
      raise(("%s: cannot replace child module '%s' with %s; expected a module"):format(self.__name, tostring(k), shape_of(v)))
    end
    rawset(self, k, v)
  end

  -- mf.nn.Module(name): a new module class; instances come from Class(...), which calls __init.
  function nn.Module(name)
    if type(name) ~= 'string' then raise('nn.Module: expected a class name') end
    local cls = setmetatable({__name = name}, {__index = Module})
    local imeta = {__class = cls, __index = instance_index, __newindex = instance_newindex,
                   __tostring = function(m) return m:describe('') end,
                   __call = function(m, ...) return m:forward(...) end}
    setmetatable(cls, {__index = Module, __newindex = function(c, k, v)
      if k == 'forward' and type(v) == 'function' then v = forward_wrapper(v) end
      rawset(c, k, v)
    end, __call = function(_, ...)
      local self = setmetatable({_is_module = true, training = true, _children = {}, _child_order = {},
                                 _params = {}, _param_order = {}, _buffers = {}, _buffer_order = {}}, imeta)
      if cls.__init then cls.__init(self, ...) end
      return self
    end})
    return cls
  end

  local function check_name(self, what, name)
    if type(name) == 'number' and name == math.floor(name) then return tostring(name) end
    if type(name) ~= 'string' or name == '' or name:find('.', 1, true) then
      raise(("%s: %s: the name must be a non-empty string without '.', got %s"):format(self.__name, what, O.show(name)))
    end
    return name
  end

  -- m:add(name, child) (PyTorch's add_module), or m:add(child) (Torch7): appended under the next
  -- free position name ('1', '2', ...). Returns m, so calls chain.
  function Module:add(name, m)
    if m == nil and type(name) == 'table' and name._is_module then
      m, name = name, #self._child_order + 1
      while self._children[tostring(name)] do name = name + 1 end
    end
    if m == nil then
      raise(('%s: add(m): m is %s; expected a module (m:add(child) or m:add(name, child))%s'):format(self.__name,
        O.show(name), type(name) == 'table' and rawget(name, '__name')
          and ('; the class ' .. name.__name .. ' needs calling: nn.' .. name.__name .. '()') or ''))
    end
    if type(m) ~= 'table' or not m._is_module then
      raise(('%s: add(%s, m): m is %s; expected a module%s'):format(self.__name, O.show(name), shape_of(m),
        type(m) == 'table' and rawget(m, '__name')
          and ('; the class ' .. m.__name .. ' needs calling: nn.' .. m.__name .. '()') or ''))
    end
    name = check_name(self, 'add', name)
    -- a cycle (self under itself, or under one of its own children) makes forward, print and
    -- parameters() recurse without end: refuse it while the call names the culprit
    local function reaches(c, seen)
      if c == self then return true end
      if seen[c] then return false end
      seen[c] = true
      for _, k in ipairs(rawget(c, '_child_order')) do if reaches(rawget(c, '_children')[k], seen) then return true end end
      return false
    end
    if reaches(m, {}) then
      raise(("%s: add('%s', m): m is %s; a module cannot contain itself (the modules would form a cycle)"):format(
        self.__name, name, m == self and 'the module itself' or ('a ' .. m.__name .. ' that contains this ' .. self.__name)))
    end
    if not self._children[name] then self._child_order[#self._child_order + 1] = name end
    self._children[name] = m
    return self
  end
  -- Torch7's container access: m:get(i) is the i-th child (1-based, in the order added), m:size()
  -- the number of children (LuaJIT has no __len for tables, so #m is 0).
  function Module:get(i)
    local n = #self._child_order
    if type(i) ~= 'number' or i ~= math.floor(i) then
      raise(('%s:get(i): i is %s; expected an integer position 1..%d'):format(self.__name, O.show(i), n))
    end
    if i < 0 then i = n + i + 1 end   -- -1 is the last child
    if i < 1 or i > n then
      raise(('%s:get(%d): index out of range; it has %d child module%s (1..%d)'):format(self.__name, i, n,
        n == 1 and '' or 's', n))
    end
    return self._children[self._child_order[i]]
  end
  function Module:size() return #self._child_order end

  function Module:register_parameter(name, p)
    name = check_name(self, 'register_parameter', name)
    if is_tensor(p) then p = nn.Parameter(p) end
    if not nn.is_parameter(p) then
      raise(("%s: register_parameter('%s'): expected a tensor or an nn.Parameter, got %s"):format(self.__name, name, shape_of(p)))
    end
    if not self._params[name] then self._param_order[#self._param_order + 1] = name end
    self._params[name] = p
    if rawget(p, '_name') == nil then rawset(p, '_name', self.__name .. '.' .. name) end
    return p
  end
  function Module:register_buffer(name, t)
    name = check_name(self, 'register_buffer', name)
    if not is_tensor(t) then raise(("%s: register_buffer('%s'): expected a tensor, got %s"):format(self.__name, name, shape_of(t))) end
    if self._buffers[name] then self._buffers[name].data = t return t end
    self._buffer_order[#self._buffer_order + 1] = name
    self._buffers[name] = new_buffer(t)
    rawset(self._buffers[name], '_name', self.__name .. '.' .. name)
    return t
  end

  -- the value of a parameter or buffer for input x: the tensor, or its bound Variable in x's graph
  function Module:value(name, x)
    local p = self._params[name] or self._buffers[name]
    if not p then raise(('%s: no parameter or buffer %s'):format(self.__name, name)) end
    if is_symbol(x) then return bound_variable(p, x.graph, self.__name .. '.' .. name, self._params[name] ~= nil) end
    return p.data
  end

  -- Every {name, holder} of parameters (kind '_params') or buffers ('_buffers'), in registration
  -- order; with all = true a holder reached through several names (a module used twice) is listed
  -- under each, else once, under its first name (as PyTorch).
  local function named(self, kind, order, all)
    local out, seen, seen_mod = {}, {}, {}
    local function walk(m, prefix)
      if not all then
        if seen_mod[m] then return end
        seen_mod[m] = true
      end
      for _, n in ipairs(m[order]) do
        local h = m[kind][n]
        if all or not seen[h] then
          seen[h] = true
          out[#out + 1] = {prefix .. n, h}
        end
      end
      for _, c in ipairs(m._child_order) do walk(m._children[c], prefix .. c .. '.') end
    end
    walk(self, '')
    return out
  end

  function Module:named_parameters() return named(self, '_params', '_param_order', false) end
  function Module:parameters()
    local out = {}
    for i, np in ipairs(self:named_parameters()) do out[i] = np[2] end
    return out
  end
  function Module:named_buffers() return named(self, '_buffers', '_buffer_order', false) end

  -- Moves every parameter and buffer (and a parameter's .grad) to the named device (mf.devices()),
  -- in place: the holders stay the same, so optimizers and graphs holding them follow. Returns self.
  function Module:to(device)
    for _, kind in ipairs{{'_params', '_param_order'}, {'_buffers', '_buffer_order'}} do
      for _, nh in ipairs(named(self, kind[1], kind[2], false)) do
        local h = nh[2]
        h.data = h.data:to(device)
        if h.grad ~= nil then h.grad = h.grad:to(device) end
      end
    end
    return self
  end
  -- m:cuda(), m:cpu(): m:to('cuda'), m:to('cpu')
  function Module:cuda()
    if not mf.cuda.is_available() then raise('cuda: ' .. mf.cuda.reason()) end
    return self:to('cuda')
  end
  function Module:cpu() return self:to('cpu') end

  -- {name = tensor} of every parameter and buffer (the live tensors). A module used twice appears
  -- under each of its names (as PyTorch); load_state_dict requires those entries to agree.
  function Module:state_dict()
    local sd = {}
    for _, np in ipairs(named(self, '_params', '_param_order', true)) do sd[np[1]] = np[2].data end
    for _, nb in ipairs(named(self, '_buffers', '_buffer_order', true)) do sd[nb[1]] = nb[2].data end
    return sd
  end

  local function same_values(a, b)
    local d = mf.ne(a, b)
    return d:numel() == 0 or d:max():item() == 0
  end

  local function entry_text(v)
    if is_tensor(v) then return v:shape_str() .. ' ' .. v:dtype() end
    return 'a ' .. type(v)
  end

  -- Copies values in place (bound Variables stay valid). Checked before anything is written: missing
  -- and unexpected keys (unless {strict = false}), the shape and dtype of every tensor, and that
  -- names of one shared tensor carry equal values. Returns self and {missing = {...}, unexpected = {...}}.
  function Module:load_state_dict(sd, opts)
    local what = ('%s:load_state_dict'):format(self.__name)
    if type(sd) ~= 'table' then raise(('%s: expected a table name -> tensor, got %s'):format(what, shape_of(sd))) end
    opts = O.check(what, opts, {strict = 'boolean'})
    local strict = opts.strict ~= false
    local entries = {}
    for _, np in ipairs(named(self, '_params', '_param_order', true)) do entries[#entries + 1] = np end
    for _, nb in ipairs(named(self, '_buffers', '_buffer_order', true)) do entries[#entries + 1] = nb end
    local mine = {}
    for _, e in ipairs(entries) do mine[e[1]] = e[2] end
    local missing, extra, bad = {}, {}, {}
    for _, e in ipairs(entries) do if sd[e[1]] == nil then missing[#missing + 1] = e[1] end end
    for k in pairs(sd) do if mine[k] == nil then extra[#extra + 1] = tostring(k) end end
    local first_of = {}   -- holder -> first name with a value, to compare aliases
    for _, e in ipairs(entries) do
      local k, t, v = e[1], e[2].data, sd[e[1]]
      if v ~= nil then
        if not is_tensor(v) or v:shape_str() ~= t:shape_str() or v:dtype() ~= t:dtype() then
          bad[#bad + 1] = ('%s (have %s %s, got %s)'):format(k, t:shape_str(), t:dtype(), entry_text(v))
        else
          local f = first_of[e[2]]
          if f == nil then first_of[e[2]] = k
          elseif not rawequal(sd[f], v) and not same_values(sd[f], v) then
            bad[#bad + 1] = ('%s and %s name one shared tensor but hold different values'):format(f, k)
          end
        end
      end
    end
    O.state_errors(what, missing, extra, bad, strict,
      strict and (#missing > 0 or #extra > 0) and ' (pass {strict = false} to load the keys that match)' or '')
    mf.no_grad(function()  -- values, not history: sd's tensors may require grad (another model's parameters)
      for _, e in ipairs(entries) do
        local v = sd[e[1]]
        if v ~= nil and v ~= e[2].data then mf.copy(e[2].data, v:to(e[2].data:device())) end
      end
    end)
    return self, {missing = missing, unexpected = extra}
  end

  function Module:save(path) mf.save(path, self:state_dict()) end
  function Module:load(path) return self:load_state_dict((mf.load(path))) end

  function Module:train(on)
    if on ~= nil and type(on) ~= 'boolean' then raise(('%s:train(mode): mode is %s; expected true, false or nothing'):format(self.__name, O.show(on))) end
    self.training = on ~= false
    for _, c in ipairs(self._child_order) do self._children[c]:train(on) end
    return self
  end
  function Module:evaluate() return self:train(false) end
  Module.eval = Module.evaluate
  -- Torch7's m:training() beside PyTorch's flag m.training: the flag stays a boolean (Dropout,
  -- BatchNorm and custom modules test it), and m:training() calls that boolean with m as its
  -- argument. Booleans share one metatable per Lua state: its __call routes a module argument to
  -- m:train(true) and raises Lua's own error for every other call of a boolean.
  local bool_mt = debug.getmetatable(true)
  if bool_mt == nil then
    bool_mt = {}
    debug.setmetatable(true, bool_mt)
  end
  if bool_mt.__call == nil then
    bool_mt.__call = function(flag, m, ...)
      if type(m) == 'table' and rawget(m, '_is_module') then
        if select('#', ...) > 0 then
          raise(('%s:training(): takes no argument (Torch7\'s spelling of m:train(true)); use m:train(mode) for a mode'):format(m.__name))
        end
        return m:train(true)
      end
      error('attempt to call a boolean value', 2)
    end
  end

  -- in place where a gradient exists, so gradients that are views of getParameters()'s flat
  -- gradient stay views
  function Module:zeroGradParameters()
    for _, p in ipairs(self:parameters()) do
      if p.grad then mf.copy(p.grad, mf.zeros_like(p.grad)) end
    end
  end
  Module.zero_grad = Module.zeroGradParameters

  -- Converts every floating parameter and buffer to dtype in place: the holders stay the same (so
  -- optimizers and graphs holding them follow), parameters keep requiring grad, gradients convert too.
  function Module:type(dtype)
    if dtype == nil then
      local p = self:parameters()[1]
      return p and p.data:dtype() or nil
    end
    mf._dtype_code(dtype, self.__name .. ':type')
    if not mf._IS_FLOAT[mf._dtype_code(dtype)] then
      raise(('%s:type(%s): parameters convert to a floating dtype only (float32, float64)'):format(self.__name, dtype))
    end
    mf.no_grad(function()
      for _, kind in ipairs{{'_params', '_param_order'}, {'_buffers', '_buffer_order'}} do
        for _, nh in ipairs(named(self, kind[1], kind[2], false)) do
          local h = nh[2]
          if mf._IS_FLOAT[h.data._dtype_id] and h.data:dtype() ~= dtype then
            local g = h.grad
            h.data = mf.cast(h.data, dtype)
            if g ~= nil then h.grad = mf.cast(g, dtype) end
          end
        end
      end
    end)
    return self
  end
  function Module:double() return self:type('float64') end
  function Module:float() return self:type('float32') end

  -- Torch7's backward: the gradient of the module's output (for input) with respect to input, given
  -- grad_output, through the tape the last forward(input) recorded (in grad mode); parameter
  -- gradients accumulate into their .grad. The forward is not run again: Dropout's mask and
  -- BatchNorm's running statistics are the forward's. Once per forward (the tape is freed).
  function Module:backward(input, grad_output)
    if not is_tensor(input) then
      raise(('%s:backward(input, grad_output): input is %s; expected a tensor'):format(self.__name, shape_of(input)))
    end
    local last = rawget(self, '_last_forward')
    if not (last and rawequal(last[1], input) and last[2] ~= nil and last[3] ~= nil) then
      raise(('%s:backward(input, grad_output): no recorded forward for this input; call %s:forward(input) (in grad '
        .. 'mode, with a floating input) just before, with the same tensor, and keep its output until backward')
        :format(self.__name, self.__name))
    end
    rawset(self, '_last_forward', nil)
    return mf._input_leaf_backward(last[2], last[3], grad_output)
  end

  -- A deep copy (Torch7's clone, PyTorch's copy.deepcopy): new parameters, gradients and buffers
  -- with equal values and their own storage, new child modules, copied option tables. Sharing
  -- inside the module (a child used twice, a tied parameter) is kept in the copy.
  function Module:clone()
    local memo = {}
    local function copy(v)
      if is_tensor(v) then
        if memo[v] == nil then  -- a copy with no history, requiring grad and holding a gradient as v does
          local c = mf.no_grad(v.clone, v)
          if v:requires_grad() then c:requires_grad_() end
          if v.grad ~= nil then c.grad = mf.no_grad(v.grad.clone, v.grad) end
          memo[v] = c
        end
        return memo[v]
      end
      if type(v) ~= 'table' then return v end
      if memo[v] then return memo[v] end
      local mt = getmetatable(v)
      -- a class, a graph, a symbol: shared, not copied
      if mt ~= nil and HOLDER_KIND[mt] == nil and not rawget(v, '_is_module') then return v end
      local out = {}
      memo[v] = out
      if mt ~= nil and HOLDER_KIND[mt] ~= nil then
        rawset(out, 'vars', setmetatable({}, {__mode = 'k'}))   -- the copy is bound into no graph yet
        for k, x in pairs(v) do if k ~= 'vars' then rawset(out, k, copy(x)) end end
      else
        for k, x in pairs(v) do rawset(out, copy(k), copy(x)) end
      end
      return setmetatable(out, mt)
    end
    return copy(self)
  end

  -- Torch7's getParameters(): one flat tensor holding every parameter and one holding every
  -- gradient. Afterwards each parameter's .data (and .grad) IS a view into that storage, so writing
  -- the flat tensor changes the parameters and training the parameters (eagerly, in a graph,
  -- load_state_dict) changes the flat tensor. Parameters must share a dtype and device. Call it
  -- once: a second call makes new flat tensors (the earlier ones no longer alias the parameters).
  -- A gradient set later by assignment (p.grad = t, opt:zero_grad()) replaces the view.
  function Module:getParameters()
    local ps = self:parameters()
    local total, first = 0, ps[1] and ps[1].data
    for i, p in ipairs(ps) do
      local d = p.data
      if d:dtype() ~= first:dtype() or d:device() ~= first:device() then
        raise(('%s:getParameters: parameter %d is %s on %s but parameter 1 is %s on %s; one flat tensor needs one '
          .. 'dtype and device'):format(self.__name, i, d:dtype(), d:device(), first:dtype(), first:device()))
      end
      total = total + d:numel()
    end
    local opts = first and {dtype = first:dtype()} or nil
    local flat, gflat = mf.zeros(total, opts), mf.zeros(total, opts)
    if first and first:device() ~= flat:device() then
      flat, gflat = flat:to(first:device()), gflat:to(first:device())
    end
    local off = 1
    for _, p in ipairs(ps) do
      local d, n = p.data, p.data:numel()
      local shape = {}
      for k = 1, d:dim() do shape[k] = d:size(k) end
      local view = mf.reshape(mf.narrow(flat, 1, off, n), shape)
      local gview = mf.reshape(mf.narrow(gflat, 1, off, n), shape)
      -- unrecorded copies (the tape refuses a write reading a tensor that requires grad)
      if n > 0 then mf.no_grad(mf.copy, view, d) end
      if is_tensor(p.grad) and n > 0 then mf.no_grad(mf.copy, gview, p.grad) end
      p.data = view       -- rebinds: graphs the parameter is bound into follow the view
      p.grad = gview
      off = off + n
    end
    return flat, gflat
  end

  function Module:num_parameters()
    local n = 0
    for _, p in ipairs(self:parameters()) do n = n + p.data:numel() end
    return n
  end

  local function commas(n)
    local s = tostring(n)
    local out = s:reverse():gsub('(%d%d%d)', '%1,'):reverse()
    return (out:gsub('^,', ''))
  end

  function Module:extra_repr() return '' end
  -- A leaf prints as Name(options) (every constructor option, PyTorch's key=value style; in -> out
  -- for layers), a container as Name (n params) with one line per child.
  function Module:describe(indent)
    local head = self.__name .. '(' .. self:extra_repr() .. ')'
    local own = 0
    for _, n in ipairs(self._param_order) do own = own + self._params[n].data:numel() end
    if #self._child_order == 0 then
      return head .. (own > 0 and ('  ' .. commas(own) .. ' params') or '')
    end
    head = self.__name .. (self:extra_repr() ~= '' and ('(' .. self:extra_repr() .. ')') or '')
    local lines = {head .. ' (' .. commas(self:num_parameters()) .. ' params)'}
    for _, c in ipairs(self._child_order) do
      lines[#lines + 1] = indent .. '  (' .. c .. '): ' .. self._children[c]:describe(indent .. '  ')
    end
    return table.concat(lines, '\n')
  end

  function Module:forward() raise(self.__name .. ': forward is not implemented') end

  -- m.parameters() for m:parameters() is an error that says so
  O.guard_methods(Module, function(m) return type(m) == 'table' and rawget(m, '_is_module') == true end,
    function(name) return ('m:%s(...)'):format(name) end)
  -- help(m.clone) finds these by value (docs in help.lua)
  if mf._fn_names then
    for _, name in ipairs{'add', 'get', 'size', 'clone', 'getParameters', 'train', 'evaluate', 'type', 'double',
                          'float', 'backward'} do
      mf._fn_names[Module[name]] = 'nn.Module:' .. name
    end
    mf._fn_names[Module.eval] = 'nn.Module:evaluate'
  end

  -- size of dim d of x, or nil when a symbol does not know it yet
  local function size_of(x, d) return x:size(d) end
  -- a module in error messages: its sizes (_short) where print's full options would be noise
  local function label(self)
    return self.__name .. '(' .. (self._short and self:_short() or self:extra_repr()) .. ')'
  end
  local function hw(p) return ('%dx%d'):format(p[1], p[2]) end
  -- m.forward(x) (a dot for a colon) passes x as self
  local function check_self(self)
    if type(self) ~= 'table' or not rawget(self, '_is_module') then
      raise(('forward: called on %s; call it as m:forward(x) or m(x) (with a colon)'):format(
        is_tensor(self) and ('a ' .. self:shape_str() .. ' tensor') or shape_of(self)))
    end
  end
  local function fail_input(self, x, want)
    raise(('%s: input is %s; expected %s'):format(label(self), shape_of(x), want))
  end
  -- x must be a tensor or a symbol (a Lua table of numbers is a common slip)
  local function check_x(self, x, want, which)
    if is_tensor(x) or is_symbol(x) then return x end
    local got = type(x) == 'table' and (x._is_module and 'a module' or 'a Lua table (wrap data with mf.tensor{...})')
      or ('a ' .. type(x))
    raise(('%s: %s is %s; expected a tensor or a symbol%s'):format(label(self), which or 'input', got,
      want and (' of shape ' .. want) or ''))
  end

  -- constructor arguments
  local function size_arg(what, name, v) return O.value(what, name, v, O.posint) end
  local function no_args(name, ...)
    if select('#', ...) > 0 then
      raise(('nn.%s takes no arguments, got %d (first: %s)'):format(name, select('#', ...), O.show((...))))
    end
  end

  -- init: PyTorch's defaults (kaiming_uniform with a = sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)))
  local function uniform(shape, bound)
    return mf.rand(shape, {low = -bound, high = bound})
  end

  -- layers ----------------------------------------------------------------------------------------
  local Linear = nn.Module('Linear')
  nn.Linear = Linear
  function Linear:__init(n_in, n_out, opts)
    size_arg('nn.Linear(in, out)', 'in', n_in)
    size_arg('nn.Linear(in, out)', 'out', n_out)
    opts = O.check('nn.Linear', opts, {bias = 'boolean'})
    self.n_in, self.n_out = n_in, n_out
    local bound = 1 / math.sqrt(n_in)
    self:register_parameter('weight', uniform({n_out, n_in}, bound))
    if opts.bias ~= false then self:register_parameter('bias', uniform({n_out}, bound)) end
  end
  function Linear:_short() return ('%d -> %d'):format(self.n_in, self.n_out) end
  function Linear:extra_repr()
    return ('%d -> %d, bias=%s'):format(self.n_in, self.n_out, tostring(self._params.bias ~= nil))
  end
  function Linear:forward(x)
    check_self(self)
    if not is_tensor(x) then check_x(self, x, ('... x %d'):format(self.n_in)) end  -- the text only for the error
    local n = x:dim()
    local last = n and n > 0 and size_of(x, -1)
    if n == 0 or (last ~= nil and last ~= self.n_in) then fail_input(self, x, ('... x %d (the last dim is the features)'):format(self.n_in)) end
    local vec = n == 1
    if vec then x = mf.reshape(x, 1, self.n_in) end   -- a single sample, as PyTorch allows
    local y = mf.matmul(x, self:value('weight', x), false, true)
    if self._params.bias then y = y + self:value('bias', x) end
    if vec then y = mf.reshape(y, self.n_out) end
    return y
  end

  local function pair(v, what, name)
    if type(v) == 'number' then v = {v, v} end
    if type(v) ~= 'table' or #v ~= 2 or type(v[1]) ~= 'number' or type(v[2]) ~= 'number' then
      raise(('%s: %s is %s; expected a number or a pair {h, w}'):format(name, what, O.show(v)))
    end
    return v
  end
  local function int_pair(v, what, name, min)
    v = pair(v, what, name)
    for i = 1, 2 do
      if v[i] ~= math.floor(v[i]) or v[i] < min then
        raise(('%s: %s is %s; expected integers >= %d'):format(name, what, O.show(v), min))
      end
    end
    return v
  end

  local Conv2d = nn.Module('Conv2d')
  nn.Conv2d = Conv2d
  function Conv2d:__init(c_in, c_out, k, opts)
    local what = 'nn.Conv2d(in, out, k)'
    size_arg(what, 'in', c_in)
    size_arg(what, 'out', c_out)
    opts = O.check('nn.Conv2d', opts, {stride = 'any', padding = 'any', dilation = 'any', groups = 'integer', bias = 'boolean'})
    self.c_in, self.c_out, self.k = c_in, c_out, int_pair(k, 'kernel_size', 'nn.Conv2d', 1)
    self.stride, self.padding, self.dilation = int_pair(opts.stride or 1, 'stride', 'nn.Conv2d', 1),
      int_pair(opts.padding or 0, 'padding', 'nn.Conv2d', 0), int_pair(opts.dilation or 1, 'dilation', 'nn.Conv2d', 1)
    if (opts.groups or 1) ~= 1 then raise('nn.Conv2d: only groups = 1 is supported') end
    local bound = 1 / math.sqrt(c_in * self.k[1] * self.k[2])
    self:register_parameter('weight', uniform({c_out, c_in, self.k[1], self.k[2]}, bound))
    if opts.bias ~= false then self:register_parameter('bias', uniform({c_out}, bound)) end
  end
  function Conv2d:_short() return ('%d -> %d, %s'):format(self.c_in, self.c_out, hw(self.k)) end
  function Conv2d:extra_repr()
    return ('%d -> %d, kernel_size=%s, stride=%s, padding=%s, dilation=%s, bias=%s'):format(self.c_in, self.c_out,
      hw(self.k), hw(self.stride), hw(self.padding), hw(self.dilation), tostring(self._params.bias ~= nil))
  end
  function Conv2d:forward(x)
    check_self(self)
    if not is_tensor(x) then check_x(self, x, ('N x %d x H x W'):format(self.c_in)) end
    if x:dim() ~= nil and (x:dim() ~= 4 or (size_of(x, 2) and size_of(x, 2) ~= self.c_in)) then
      fail_input(self, x, ('N x %d x H x W'):format(self.c_in))
    end
    local y = mf.conv2d(x, self:value('weight', x), {stride = self.stride, padding = self.padding, dilation = self.dilation})
    if self._params.bias then y = y + mf.reshape(self:value('bias', x), 1, self.c_out, 1, 1) end
    return y
  end

  local function pool_class(name, op, extra)
    local cls = nn.Module(name)
    local spec = {stride = 'any', padding = 'any'}
    if extra then spec.count_include_pad = 'boolean' end
    function cls:__init(k, opts)
      opts = O.check('nn.' .. name, opts, spec)
      self.k = int_pair(k, 'kernel_size', 'nn.' .. name, 1)
      self.stride = opts.stride and int_pair(opts.stride, 'stride', 'nn.' .. name, 1) or self.k
      self.padding = int_pair(opts.padding or 0, 'padding', 'nn.' .. name, 0)
      self.opts = opts
    end
    function cls:extra_repr()
      local r = ('kernel_size=%s, stride=%s, padding=%s'):format(hw(self.k), hw(self.stride), hw(self.padding))
      if extra then r = r .. ', count_include_pad=' .. tostring(self.opts.count_include_pad ~= false) end
      return r
    end
    function cls:forward(x)
      check_self(self)
      check_x(self, x, 'N x C x H x W')
      if x:dim() ~= nil and x:dim() ~= 4 then fail_input(self, x, 'N x C x H x W') end
      local p = {kernel_size = self.k, stride = self.stride, padding = self.padding}
      if extra then extra(self, p) end
      return mf[op](x, p)
    end
    return cls
  end
  nn.MaxPool2d = pool_class('MaxPool2d', 'max_pool2d')
  nn.AvgPool2d = pool_class('AvgPool2d', 'avg_pool2d', function(self, p)
    if self.opts.count_include_pad ~= nil then p.count_include_pad = self.opts.count_include_pad end
  end)

  local Adaptive = nn.Module('AdaptiveAvgPool2d')
  nn.AdaptiveAvgPool2d = Adaptive
  function Adaptive:__init(out, ...)
    if select('#', ...) > 0 then raise('nn.AdaptiveAvgPool2d takes one argument (output_size)') end
    self.out = int_pair(out, 'output_size', 'nn.AdaptiveAvgPool2d', 1) end
  function Adaptive:extra_repr() return 'output_size=' .. hw(self.out) end
  function Adaptive:forward(x)
    check_self(self)
    check_x(self, x, 'N x C x H x W')
    if x:dim() ~= nil and x:dim() ~= 4 then fail_input(self, x, 'N x C x H x W') end
    return mf.adaptive_avg_pool2d(x, {output_size = self.out})
  end

  -- activations: check(a) validates the one optional argument (nil: none allowed)
  local function activation(name, fn, check, repr)
    local cls = nn.Module(name)
    function cls:__init(...)
      if check then self.a = check(...) else no_args(name, ...) end
    end
    function cls:forward(x)
      check_self(self)
      check_x(self, x)
      return fn(self, x)
    end
    if repr then cls.extra_repr = repr end
    nn[name] = cls
  end
  local function opt_number(name, what)
    return function(a, ...)
      if select('#', ...) > 0 then raise(('nn.%s takes at most one argument (%s)'):format(name, what)) end
      if a ~= nil then O.value('nn.' .. name, what, a, 'number') end
      return a
    end
  end
  local function opt_dim(name)
    return function(a, ...)
      if select('#', ...) > 0 then raise(('nn.%s takes at most one argument (dim)'):format(name)) end
      if a ~= nil then O.value('nn.' .. name, 'dim', a, 'integer') end
      return a
    end
  end
  activation('ReLU', function(_, x) return mf.relu(x) end)
  activation('Tanh', function(_, x) return mf.tanh(x) end)
  activation('Sigmoid', function(_, x) return mf.sigmoid(x) end)
  activation('GELU', function(_, x) return mf.gelu(x) end)
  activation('LeakyReLU', function(self, x) return mf.leaky_relu(x, self.a or 0.01) end, opt_number('LeakyReLU', 'negative_slope'),
    function(self) return 'negative_slope=' .. tostring(self.a or 0.01) end)
  local function dim_repr(self) return 'dim=' .. tostring(self.a or -1) end
  activation('Softmax', function(self, x) return mf.softmax(x, self.a or -1) end, opt_dim('Softmax'), dim_repr)
  activation('LogSoftmax', function(self, x) return mf.log_softmax(x, self.a or -1) end, opt_dim('LogSoftmax'),
    dim_repr)

  local Flatten = nn.Module('Flatten')
  nn.Flatten = Flatten
  function Flatten:__init(...) no_args('Flatten', ...) end
  function Flatten:forward(x)
    check_self(self)
    check_x(self, x)
    local n, rest = x:dim(), 1
    if not n then raise('Flatten: the input rank must be known') end
    if n == 0 then fail_input(self, x, 'N x ... (at least 1 dim)') end
    for d = 2, n do
      local s = size_of(x, d)
      if not s then raise('Flatten: dims after the first must be known when the graph is built') end
      rest = rest * s
    end
    return mf.reshape(x, -1, rest)
  end

  local Dropout = nn.Module('Dropout')
  nn.Dropout = Dropout
  function Dropout:__init(p, ...)
    if select('#', ...) > 0 then raise('nn.Dropout takes one argument (p)') end
    p = p == nil and 0.5 or p
    O.value('nn.Dropout', 'p', p, O.prob)
    self.p = p
  end
  function Dropout:extra_repr() return 'p=' .. tostring(self.p) end
  function Dropout:forward(x)
    check_self(self)
    check_x(self, x)
    if not self.training or self.p == 0 then return x end
    return x * mf.dropout_mask(x, self.p)
  end

  local function batchnorm_class(name, dims_of, want)
    local cls = nn.Module(name)
    function cls:__init(c, opts)
      size_arg('nn.' .. name .. '(C)', 'C', c)
      opts = O.check('nn.' .. name, opts, {eps = {type = 'number', gt = 0}, momentum = O.prob})
      self.c, self.eps, self.momentum = c, opts.eps or 1e-5, opts.momentum or 0.1
      self:register_parameter('weight', mf.ones(c))
      self:register_parameter('bias', mf.zeros(c))
      self:register_buffer('running_mean', mf.zeros(c))
      self:register_buffer('running_var', mf.ones(c))
    end
    function cls:_short() return tostring(self.c) end
    function cls:extra_repr()
      return ('%d, eps=%s, momentum=%s'):format(self.c, tostring(self.eps), tostring(self.momentum))
    end
    function cls:forward(x)
      check_self(self)
      local shape_want = want:format(self.c, self.c)
      check_x(self, x, shape_want)
      local n = x:dim()
      local ok = dims_of(n)
      if not ok or (size_of(x, 2) and size_of(x, 2) ~= self.c) then fail_input(self, x, shape_want) end
      local dims = {1}
      for d = 3, n do dims[#dims + 1] = d end
      local shape = {1, self.c}
      for _ = 3, n do shape[#shape + 1] = 1 end
      local w, b = self:value('weight', x), self:value('bias', x)
      local rm, rv = self:value('running_mean', x), self:value('running_var', x)
      if not self.training then
        return (x - mf.reshape(rm, shape)) * mf.rsqrt(mf.reshape(rv, shape) + self.eps) * mf.reshape(w, shape)
          + mf.reshape(b, shape)
      end
      -- statistics of one value per channel are meaningless (PyTorch raises the same error); for
      -- unknown dims the batch_norm op checks when the graph runs
      local per = 1
      for _, d in ipairs(dims) do per = per and size_of(x, d) and per * size_of(x, d) end
      if per == 1 then
        raise(('%s: expected more than 1 value per channel when training, got input %s; use a batch of more than one '
          .. 'sample, or m:evaluate() to use the running statistics'):format(label(self), shape_of(x)))
      end
      local y = mf.batch_norm(x, w, b, self.eps)
      -- running statistics: (1 - momentum) * running + momentum * batch (unbiased variance)
      local m = self.momentum
      local function running()
        local mean = mf.mean(x, dims)
        local cnt = mf.reduced_count(x, dims)
        local var = mf.sum(mf.square(x - mf.reshape(mean, shape)), dims) / (cnt - 1)
        return rm * (1 - m) + mean * m, rv * (1 - m) + var * m
      end
      if is_symbol(x) then
        local new_mean, new_var = running()
        mf.add_update_op(mf.assign(rm, new_mean))
        mf.add_update_op(mf.assign(rv, new_var))
      else  -- eagerly unrecorded: the statistics are no part of the output's gradient
        mf.no_grad(function()
          local new_mean, new_var = running()
          mf.copy(rm, new_mean)
          mf.copy(rv, new_var)
        end)
      end
      return y
    end
    nn[name] = cls
  end
  batchnorm_class('BatchNorm1d', function(n) return n == nil or n == 2 or n == 3 end, 'N x %d (or N x %d x L)')
  batchnorm_class('BatchNorm2d', function(n) return n == nil or n == 4 end, 'N x %d x H x W')

  local Embedding = nn.Module('Embedding')
  nn.Embedding = Embedding
  function Embedding:__init(num, dim, opts)
    O.check('nn.Embedding', opts, {})   -- PyTorch's padding_idx, max_norm ... are not supported
    size_arg('nn.Embedding(num, dim)', 'num', num)
    size_arg('nn.Embedding(num, dim)', 'dim', dim)
    self.num, self.dim = num, dim
    self:register_parameter('weight', mf.randn(num, dim))
  end
  function Embedding:extra_repr() return ('%d, %d'):format(self.num, self.dim) end
  function Embedding:forward(idx)
    check_self(self)
    check_x(self, idx, 'int64 indices in 1..' .. self.num)
    if idx:dtype() ~= 'int64' then
      raise(('%s: indices are %s %s; expected int64 indices in 1..%d'):format(label(self), shape_of(idx), idx:dtype(), self.num))
    end
    if idx:dim() == nil then raise(('%s: the rank of the indices must be known'):format(label(self))) end
    local flat = mf.reshape(idx, -1)
    local rows = mf.index_select(self:value('weight', idx), flat, 1)
    local shape = {}
    for d = 1, idx:dim() do shape[d] = size_of(idx, d) or -1 end
    shape[#shape + 1] = self.dim
    return mf.reshape(rows, shape)
  end

  local Sequential = nn.Module('Sequential')
  nn.Sequential = Sequential
  -- Sequential{m1, m2, ...} (Torch7) or Sequential(m1, m2, ...) (PyTorch)
  function Sequential:__init(list, ...)
    if type(list) == 'table' and list._is_module then list = {list, ...}
    elseif select('#', ...) > 0 then raise('nn.Sequential: expected Sequential{m1, m2, ...} or Sequential(m1, m2, ...)') end
    if list == nil then list = {} end
    if type(list) ~= 'table' then raise(('nn.Sequential: expected a list of modules, got %s'):format(O.show(list))) end
    local n = table.maxn(list)  -- {a, nil, b}: ipairs would stop at the hole and drop b unseen
    for k in pairs(list) do
      if type(k) ~= 'number' or k < 1 or k > n or k ~= math.floor(k) then
        raise(('nn.Sequential: expected a list of modules; key %s is not a position 1..%d'):format(O.show(k), n))
      end
    end
    for i = 1, n do
      local m = list[i]
      if type(m) ~= 'table' or not m._is_module then
        raise(('nn.Sequential: element %d is %s; expected a module (a class needs calling: nn.ReLU(), not nn.ReLU)'):format(i,
          type(m) == 'table' and getmetatable(m) and rawget(m, '__name') and ('the class ' .. m.__name) or O.show(m)))
      end
      self:add(i, m)
    end
  end
  function Sequential:forward(x)
    check_self(self)
    for _, c in ipairs(self._child_order) do x = self._children[c]:forward(x) end
    return x
  end

  -- losses ----------------------------------------------------------------------------------------
  local function reduce(self, v)
    local r = self.reduction or 'mean'
    if r == 'mean' then return mf.mean(v) elseif r == 'sum' then return mf.sum(v) end
    return v
  end
  local function loss_class(name, fn)
    local cls = nn.Module(name)
    function cls:__init(opts)
      opts = O.check('nn.' .. name, opts, {reduction = {type = 'string', one_of = {'mean', 'sum', 'none'}}})
      self.reduction = opts.reduction or 'mean'
    end
    function cls:extra_repr() return ("reduction='%s'"):format(self.reduction) end
    function cls:forward(input, target, ...)
      check_self(self)
      if select('#', ...) > 0 then raise(('%s: expected (input, target), got %d arguments'):format(name, 2 + select('#', ...))) end
      check_x(self, input, nil, 'input')
      check_x(self, target, nil, 'target')
      return reduce(self, fn(self, input, target))
    end
    nn[name] = cls
  end

  -- input and target must have one shape: broadcasting them (Nx1 against N gives NxN) is never
  -- what a loss means; unknown dims of symbols are checked where known
  local function same_shape(self, a, b)
    local ra, rb = a:dim(), b:dim()
    if ra ~= nil and rb ~= nil then
      local ok = ra == rb
      for d = 1, ok and ra or 0 do
        local sa, sb = size_of(a, d), size_of(b, d)
        if sa and sb and sa ~= sb then ok = false end
      end
      if not ok then
        raise(('%s: input is %s but target is %s; they must have the same shape (broadcasting them would compare '
          .. 'every input with every target): reshape one, e.g. target:reshape(%s)'):format(self.__name, shape_of(a),
          shape_of(b), shape_of(a):gsub('x', ', ')))
      end
    end
    if a:dtype() ~= b:dtype() then
      raise(('%s: input is %s but target is %s; expected one floating-point dtype (convert with :float() or :double())'):format(
        self.__name, a:dtype(), b:dtype()))
    end
    if a:dtype() ~= 'float32' and a:dtype() ~= 'float64' then
      raise(('%s: input and target are %s; expected float32 or float64'):format(self.__name, a:dtype()))
    end
  end

  -- N x C (x d1 ... dk) scores and N (x d1 ... dk) 1-based labels (PyTorch's layout: classes
  -- along dim 2) as rows: (N d1 ... dk) x C scores (the class dim moved last) and the labels
  -- flattened; shape is the labels' shape (for reduction 'none'), nil for N x C.
  -- the labels' shape an N x C x d1 x ... input asks for (for messages; a function of its own, as a
  -- closure in class_rows kept the JIT from compiling it)
  local function labels_shape(input, n)
    local sh = {size_of(input, 1) or -1}
    for k = 3, n do sh[#sh + 1] = size_of(input, k) or -1 end
    return sh
  end
  local function class_rows(self, input, target)
    local n = input:dim()
    local want = 'N x C scores (or N x C x d1 x ... for per-position labels) with C known'
    if n == nil or n < 2 or not size_of(input, 2) then fail_input(self, input, want) end
    local c = size_of(input, 2)
    if target:dtype() ~= 'int64' then
      raise(('%s: targets are %s; expected int64 class labels in 1..%d'):format(self.__name, target:dtype(), c))
    end
    local rt = target:dim()
    local lab_want = n == 2 and 'a 1-D tensor of N class labels (one per row' or
      ('N x d1 x ... labels: the input\'s shape without its class dim 2 (one label per position')
    if rt ~= nil and rt ~= n - 1 then
      raise(('%s: target is %s; expected %s of the %s input)%s'):format(self.__name, shape_of(target), lab_want,
        shape_of(input), rt == 0 and mf.is_symbol(target)
          and ("; a placeholder declared with shape {nil} is 0-dim (Lua drops a lone nil): write {-1}") or ''))
    end
    for d = 1, rt and n - 1 or 0 do
      local si, st = size_of(input, d == 1 and 1 or d + 1), size_of(target, d)
      if si and st and si ~= st then
        if n == 2 then
          raise(('%s: input is %s (%d rows) but target has %d labels; expected one label per row'):format(self.__name,
            shape_of(input), si, st))
        end
        raise(('%s: input is %s but target is %s; expected target %s (the input without its class dim 2)'):format(
          self.__name, shape_of(input), shape_of(target), mf._shape_text(labels_shape(input, n))))
      end
    end
    if n == 2 then return input, target, nil end
    local perm, shape, unknown = {1}, {}, 0
    for d = 3, n do perm[#perm + 1] = d end
    perm[#perm + 1] = 2
    for d = 1, n - 1 do
      shape[d] = size_of(target, d) or (d == 1 and size_of(input, 1)) or (d > 1 and size_of(input, d + 1)) or -1
      if shape[d] == -1 then unknown = unknown + 1 end
    end
    if unknown > 1 then
      raise(('%s: input is %s; with per-position labels at most one dim may be unknown when the graph is built'):format(
        self.__name, shape_of(input)))
    end
    return mf.reshape(mf.permute(input, perm), -1, c), mf.reshape(target, -1), shape
  end

  -- CrossEntropyLoss and NLLLoss: per_row(rows, onehot) is the loss of each row. Options as
  -- PyTorch: weight (a C tensor: row i counts weight[label i], and 'mean' divides by the sum of
  -- those weights), ignore_index (rows with that label count nothing; labels are 1-based, so
  -- PyTorch's default -100 is no label here either).
  local function class_loss(name, per_row)
    local cls = nn.Module(name)
    function cls:__init(opts, ...)
      if select('#', ...) > 0 then raise(('nn.%s takes one argument (an options table)'):format(name)) end
      opts = O.check('nn.' .. name, opts, {reduction = {type = 'string', one_of = {'mean', 'sum', 'none'}},
                                             weight = 'any', ignore_index = 'integer'})
      self.reduction, self.ignore_index = opts.reduction or 'mean', opts.ignore_index
      local w = opts.weight
      if w ~= nil then
        if not is_tensor(w) or w:dim() ~= 1 or (w:dtype() ~= 'float32' and w:dtype() ~= 'float64') then
          raise(('nn.%s: weight is %s; expected a 1-D float32 or float64 tensor of one weight per class'):format(name,
            is_tensor(w) and (w:shape_str() .. ' ' .. w:dtype()) or O.show(w)))
        end
        self:register_buffer('weight', w)
      end
    end
    function cls:extra_repr()
      local r = ("reduction='%s'"):format(self.reduction)
      if self._buffers.weight then r = r .. ', weight=' .. self._buffers.weight.data:shape_str() end
      if self.ignore_index ~= nil then r = r .. ', ignore_index=' .. tostring(self.ignore_index) end
      return r
    end
    function cls:forward(input, target, ...)
      check_self(self)
      if select('#', ...) > 0 then
        raise(('%s: expected (input, target), got %d arguments'):format(name, 2 + select('#', ...)))
      end
      check_x(self, input, nil, 'input')
      check_x(self, target, nil, 'target')
      local rows, labels, shape = class_rows(self, input, target)
      local c = size_of(input, 2)
      local keep
      if self.ignore_index ~= nil then
        local m = mf.ne(labels, self.ignore_index)
        labels = mf.where(m, labels, mf.ones_like(labels))   -- any valid class: the row is masked below
        keep = mf.cast(m, rows:dtype())
      end
      local onehot = mf.one_hot(labels, {num_classes = c, dtype = rows:dtype()})  -- one table: no adapter
      local l, w = per_row(rows, onehot), nil
      if self._buffers.weight then
        local wt = self:value('weight', input)
        if wt:size(1) ~= c then
          raise(('%s: weight has %d entries but the input has %d classes (%s); expected one weight per class'):format(
            label(self), wt:size(1), c, shape_of(input)))
        end
        if wt:dtype() ~= rows:dtype() then wt = mf.cast(wt, rows:dtype()) end
        w = mf.sum(onehot * mf.reshape(wt, 1, c), 2)
        l = l * w
      end
      if keep then
        l = l * keep
        w = w and w * keep or keep
      end
      local r = self.reduction
      if r == 'none' then return shape and mf.reshape(l, shape) or l end
      if r == 'sum' then return mf.sum(l) end
      if w then return mf.sum(l) / mf.sum(w) end
      return mf.mean(l)
    end
    nn[name] = cls
  end
  class_loss('CrossEntropyLoss', function(logits, onehot) return mf.softmax_cross_entropy(logits, onehot, 2) end)
  class_loss('NLLLoss', function(logp, onehot) return -mf.sum(onehot * logp, 2) end)
  loss_class('MSELoss', function(self, a, b)
    same_shape(self, a, b)
    return mf.square(a - b)
  end)
  loss_class('L1Loss', function(self, a, b)
    same_shape(self, a, b)
    return mf.abs(a - b)
  end)
  loss_class('BCELoss', function(self, p, y)   -- -(y log p + (1 - y) log(1 - p)), logs clamped at -100 as PyTorch
    same_shape(self, p, y)
    if is_tensor(p) and p:numel() > 0 then
      local pmin, pmax = p:min():item(), p:max():item()  -- NaN propagates into both
      if pmin < 0 or pmax > 1 or pmax ~= pmax then
        raise(('%s: input values must be probabilities in [0, 1] (got min %g, max %g); use BCEWithLogitsLoss on scores'):format(
          self.__name, pmin, pmax))
      end
    end
    local lo = -100
    return -(y * mf.clamp(mf.log(p), lo, math.huge) + (1 - y) * mf.clamp(mf.log(1 - p), lo, math.huge))
  end)
  loss_class('BCEWithLogitsLoss', function(self, x, y)  -- max(x, 0) - x y + log(1 + e^-|x|): stable
    same_shape(self, x, y)
    return mf.relu(x) - x * y + mf.log1p(mf.exp(-mf.abs(x)))
  end)
end
