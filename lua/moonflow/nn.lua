-- mf.nn: Torch7-style modules. A module called on a tensor computes; called on a symbol it builds
-- graph, its parameters appearing as Variables bound to the module's own tensors (a session
-- reads and updates those tensors in place), so eager use, graph training and checkpoints all
-- see one set of values.
return function(mf)
  local raise, is_tensor, is_symbol = mf._raise, mf.is_tensor, mf.is_symbol
  local nn = mf.nn

  -- parameters ----------------------------------------------------------------------------------
  local Parameter = {}
  Parameter.__index = Parameter
  Parameter.__tostring = function(p) return ('Parameter(%s, %s)'):format(p.data:shape_str(), p.data:dtype()) end
  function nn.Parameter(t)
    if not is_tensor(t) then raise('Parameter: expected a tensor') end
    return setmetatable({data = t, grad = nil, vars = setmetatable({}, {__mode = 'k'})}, Parameter)
  end
  function nn.is_parameter(x) return getmetatable(x) == Parameter end

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
    if type(v) == 'table' and v._is_module then self:add(k, v)
    elseif nn.is_parameter(v) then self:register_parameter(k, v)
    else rawset(self, k, v) end
  end

  -- mf.nn.Module(name): a new module class; instances come from Class(...), which calls __init.
  function nn.Module(name)
    if type(name) ~= 'string' then raise('nn.Module: expected a class name') end
    local cls = setmetatable({__name = name}, {__index = Module})
    local imeta = {__class = cls, __index = instance_index, __newindex = instance_newindex,
                   __tostring = function(m) return m:describe('') end,
                   __call = function(m, ...) return m:forward(...) end}
    setmetatable(cls, {__index = Module, __call = function(_, ...)
      local self = setmetatable({_is_module = true, training = true, _children = {}, _child_order = {},
                                 _params = {}, _param_order = {}, _buffers = {}, _buffer_order = {}}, imeta)
      if cls.__init then cls.__init(self, ...) end
      return self
    end})
    return cls
  end

  function Module:add(name, m)
    if type(m) ~= 'table' or not m._is_module then raise(('%s: add(%s): expected a module'):format(self.__name, tostring(name))) end
    name = tostring(name)
    if not self._children[name] then self._child_order[#self._child_order + 1] = name end
    self._children[name] = m
    return self
  end
  function Module:register_parameter(name, p)
    if is_tensor(p) then p = nn.Parameter(p) end
    if not self._params[name] then self._param_order[#self._param_order + 1] = name end
    self._params[name] = p
    return p
  end
  function Module:register_buffer(name, t)
    if not self._buffers[name] then self._buffer_order[#self._buffer_order + 1] = name end
    self._buffers[name] = {data = t, vars = setmetatable({}, {__mode = 'k'})}
    return t
  end

  -- the value of a parameter or buffer for input x: the tensor, or its bound Variable in x's graph
  function Module:value(name, x)
    local p = self._params[name] or self._buffers[name]
    if not p then raise(('%s: no parameter or buffer %s'):format(self.__name, name)) end
    if is_symbol(x) then return bound_variable(p, x.graph, self.__name .. '.' .. name, self._params[name] ~= nil) end
    return p.data
  end

  function Module:named_parameters(prefix, out)
    out, prefix = out or {}, prefix or ''
    for _, n in ipairs(self._param_order) do out[#out + 1] = {prefix .. n, self._params[n]} end
    for _, c in ipairs(self._child_order) do self._children[c]:named_parameters(prefix .. c .. '.', out) end
    return out
  end
  function Module:parameters()
    local out = {}
    for i, np in ipairs(self:named_parameters()) do out[i] = np[2] end
    return out
  end
  function Module:named_buffers(prefix, out)
    out, prefix = out or {}, prefix or ''
    for _, n in ipairs(self._buffer_order) do out[#out + 1] = {prefix .. n, self._buffers[n]} end
    for _, c in ipairs(self._child_order) do self._children[c]:named_buffers(prefix .. c .. '.', out) end
    return out
  end

  -- {name = tensor} of every parameter and buffer (the live tensors)
  function Module:state_dict()
    local sd = {}
    for _, np in ipairs(self:named_parameters()) do sd[np[1]] = np[2].data end
    for _, nb in ipairs(self:named_buffers()) do sd[nb[1]] = nb[2].data end
    return sd
  end

  -- Copies values in place (bound Variables stay valid); missing or extra keys and shape or dtype
  -- mismatches are errors that list every offender.
  function Module:load_state_dict(sd)
    if type(sd) ~= 'table' then raise('load_state_dict: expected a table name -> tensor') end
    local mine = self:state_dict()
    local missing, extra, bad = {}, {}, {}
    for k in pairs(mine) do if sd[k] == nil then missing[#missing + 1] = k end end
    for k in pairs(sd) do if mine[k] == nil then extra[#extra + 1] = tostring(k) end end
    for k, t in pairs(mine) do
      local v = sd[k]
      if v ~= nil and (not is_tensor(v) or v:shape_str() ~= t:shape_str() or v:dtype() ~= t:dtype()) then
        bad[#bad + 1] = ('%s (have %s %s, got %s)'):format(k, t:shape_str(), t:dtype(),
          is_tensor(v) and (v:shape_str() .. ' ' .. v:dtype()) or type(v))
      end
    end
    table.sort(missing); table.sort(extra); table.sort(bad)
    local msgs = {}
    if #missing > 0 then msgs[#msgs + 1] = 'missing keys: ' .. table.concat(missing, ', ') end
    if #extra > 0 then msgs[#msgs + 1] = 'unexpected keys: ' .. table.concat(extra, ', ') end
    if #bad > 0 then msgs[#msgs + 1] = 'mismatched: ' .. table.concat(bad, '; ') end
    if #msgs > 0 then raise(('load_state_dict (%s): %s'):format(self.__name, table.concat(msgs, '; '))) end
    for k, t in pairs(mine) do mf.kernels.copy(t, sd[k]) end
    return self
  end

  function Module:save(path) mf.save(path, self:state_dict()) end
  function Module:load(path) return self:load_state_dict((mf.load(path))) end

  function Module:train(on)
    self.training = on ~= false
    for _, c in ipairs(self._child_order) do self._children[c]:train(on) end
    return self
  end
  function Module:evaluate() return self:train(false) end
  Module.eval = Module.evaluate

  function Module:zeroGradParameters()
    for _, p in ipairs(self:parameters()) do if p.grad then p.grad = mf.zeros_like(p.data) end end
  end
  Module.zero_grad = Module.zeroGradParameters

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
  function Module:describe(indent)
    local head = self.__name .. (self:extra_repr() ~= '' and ('(' .. self:extra_repr() .. ')') or '')
    local own = 0
    for _, n in ipairs(self._param_order) do own = own + self._params[n].data:numel() end
    if #self._child_order == 0 then
      return head .. (own > 0 and ('  ' .. commas(own) .. ' params') or '')
    end
    local lines = {head .. ' (' .. commas(self:num_parameters()) .. ' params)'}
    for _, c in ipairs(self._child_order) do
      lines[#lines + 1] = indent .. '  (' .. c .. '): ' .. self._children[c]:describe(indent .. '  ')
    end
    return table.concat(lines, '\n')
  end

  function Module:forward() raise(self.__name .. ': forward is not implemented') end

  -- size of dim d of x, or nil when a symbol does not know it yet
  local function size_of(x, d) return x:size(d) end
  local function fail_input(self, x, want)
    raise(('%s: input is %s; expected %s'):format(self:describe(''):match('^[^\n]*'):gsub('  .*$', ''),
      is_symbol(x) and mf._shape_text(x.shape) or x:shape_str(), want))
  end

  -- init: PyTorch's defaults (kaiming_uniform with a = sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)))
  local function uniform(shape, bound)
    return mf.rand(shape, {low = -bound, high = bound})
  end

  -- layers ----------------------------------------------------------------------------------------
  local Linear = nn.Module('Linear')
  nn.Linear = Linear
  function Linear:__init(n_in, n_out, opts)
    if type(n_in) ~= 'number' or type(n_out) ~= 'number' or n_in < 1 or n_out < 1 then
      raise('Linear(in, out): sizes must be positive integers')
    end
    self.n_in, self.n_out = n_in, n_out
    local bound = 1 / math.sqrt(n_in)
    self:register_parameter('weight', uniform({n_out, n_in}, bound))
    if not (opts and opts.bias == false) then self:register_parameter('bias', uniform({n_out}, bound)) end
  end
  function Linear:extra_repr() return ('%d -> %d'):format(self.n_in, self.n_out) end
  function Linear:forward(x)
    local last = x:dim() and size_of(x, -1)
    if last ~= nil and last ~= self.n_in then fail_input(self, x, ('...x%d'):format(self.n_in)) end
    local y = mf.matmul(x, self:value('weight', x), false, true)
    if self._params.bias then y = y + self:value('bias', x) end
    return y
  end

  local function pair(v, what, name)
    if type(v) == 'number' then return {v, v} end
    if type(v) == 'table' and #v == 2 then return v end
    raise(('%s: %s must be a number or a pair'):format(name, what))
  end

  local Conv2d = nn.Module('Conv2d')
  nn.Conv2d = Conv2d
  function Conv2d:__init(c_in, c_out, k, opts)
    opts = opts or {}
    self.c_in, self.c_out, self.k = c_in, c_out, pair(k, 'kernel_size', 'Conv2d')
    self.stride, self.padding, self.dilation = pair(opts.stride or 1, 'stride', 'Conv2d'),
      pair(opts.padding or 0, 'padding', 'Conv2d'), pair(opts.dilation or 1, 'dilation', 'Conv2d')
    if (opts.groups or 1) ~= 1 then raise('Conv2d: only groups = 1 is supported') end
    local bound = 1 / math.sqrt(c_in * self.k[1] * self.k[2])
    self:register_parameter('weight', uniform({c_out, c_in, self.k[1], self.k[2]}, bound))
    if opts.bias ~= false then self:register_parameter('bias', uniform({c_out}, bound)) end
  end
  function Conv2d:extra_repr()
    return ('%d -> %d, %dx%d, stride %d'):format(self.c_in, self.c_out, self.k[1], self.k[2], self.stride[1])
  end
  function Conv2d:forward(x)
    if x:dim() ~= nil and (x:dim() ~= 4 or (size_of(x, 2) and size_of(x, 2) ~= self.c_in)) then
      fail_input(self, x, ('N x %d x H x W'):format(self.c_in))
    end
    local y = mf.conv2d(x, self:value('weight', x), {stride = self.stride, padding = self.padding, dilation = self.dilation})
    if self._params.bias then y = y + mf.reshape(self:value('bias', x), 1, self.c_out, 1, 1) end
    return y
  end

  local function pool_class(name, op, extra)
    local cls = nn.Module(name)
    function cls:__init(k, opts)
      opts = opts or {}
      self.k = pair(k, 'kernel_size', name)
      self.stride = opts.stride and pair(opts.stride, 'stride', name) or self.k
      self.padding = pair(opts.padding or 0, 'padding', name)
      self.opts = opts
    end
    function cls:extra_repr() return ('%dx%d, stride %d'):format(self.k[1], self.k[2], self.stride[1]) end
    function cls:forward(x)
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
  function Adaptive:__init(out) self.out = pair(out, 'output_size', 'AdaptiveAvgPool2d') end
  function Adaptive:extra_repr() return ('%dx%d'):format(self.out[1], self.out[2]) end
  function Adaptive:forward(x) return mf.adaptive_avg_pool2d(x, {output_size = self.out}) end

  -- activations
  local function activation(name, fn, repr)
    local cls = nn.Module(name)
    function cls:__init(a) self.a = a end
    function cls:forward(x) return fn(self, x) end
    if repr then cls.extra_repr = repr end
    nn[name] = cls
  end
  activation('ReLU', function(_, x) return mf.relu(x) end)
  activation('Tanh', function(_, x) return mf.tanh(x) end)
  activation('Sigmoid', function(_, x) return mf.sigmoid(x) end)
  activation('GELU', function(_, x) return mf.gelu(x) end)
  activation('LeakyReLU', function(self, x) return mf.leaky_relu(x, self.a or 0.01) end,
    function(self) return tostring(self.a or 0.01) end)
  activation('Softmax', function(self, x) return mf.softmax(x, self.a or -1) end)
  activation('LogSoftmax', function(self, x) return mf.log_softmax(x, self.a or -1) end)

  local Flatten = nn.Module('Flatten')
  nn.Flatten = Flatten
  function Flatten:forward(x)
    local n, rest = x:dim(), 1
    if not n then raise('Flatten: the input rank must be known') end
    for d = 2, n do
      local s = size_of(x, d)
      if not s then raise('Flatten: dims after the first must be known when the graph is built') end
      rest = rest * s
    end
    return mf.reshape(x, -1, rest)
  end

  local Dropout = nn.Module('Dropout')
  nn.Dropout = Dropout
  function Dropout:__init(p)
    p = p or 0.5
    if type(p) ~= 'number' or p < 0 or p > 1 then raise('Dropout: p must be in [0, 1]') end
    self.p = p
  end
  function Dropout:extra_repr() return 'p = ' .. self.p end
  function Dropout:forward(x)
    if not self.training or self.p == 0 then return x end
    return x * mf.dropout_mask(x, self.p)
  end

  local function batchnorm_class(name, dims_of)
    local cls = nn.Module(name)
    function cls:__init(c, opts)
      opts = opts or {}
      self.c, self.eps, self.momentum = c, opts.eps or 1e-5, opts.momentum or 0.1
      self:register_parameter('weight', mf.ones(c))
      self:register_parameter('bias', mf.zeros(c))
      self:register_buffer('running_mean', mf.zeros(c))
      self:register_buffer('running_var', mf.ones(c))
    end
    function cls:extra_repr() return tostring(self.c) end
    function cls:forward(x)
      local n = x:dim()
      local ok = dims_of(n)
      if not ok or (size_of(x, 2) and size_of(x, 2) ~= self.c) then
        fail_input(self, x, (name == 'BatchNorm2d' and 'N x %d x H x W' or 'N x %d (or N x %d x L)'):format(self.c, self.c))
      end
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
      local y = mf.batch_norm(x, w, b, self.eps)
      -- running statistics: (1 - momentum) * running + momentum * batch (unbiased variance)
      local mean = mf.mean(x, dims)
      local cnt = mf.reduced_count(x, dims)
      local var = mf.sum(mf.square(x - mf.reshape(mean, shape)), dims) / (cnt - 1)
      local m = self.momentum
      local new_mean, new_var = rm * (1 - m) + mean * m, rv * (1 - m) + var * m
      if is_symbol(x) then
        mf.add_update_op(mf.assign(rm, new_mean))
        mf.add_update_op(mf.assign(rv, new_var))
      else
        mf.kernels.copy(rm, new_mean)
        mf.kernels.copy(rv, new_var)
      end
      return y
    end
    nn[name] = cls
  end
  batchnorm_class('BatchNorm1d', function(n) return n == nil or n == 2 or n == 3 end)
  batchnorm_class('BatchNorm2d', function(n) return n == nil or n == 4 end)

  local Embedding = nn.Module('Embedding')
  nn.Embedding = Embedding
  function Embedding:__init(num, dim)
    self.num, self.dim = num, dim
    self:register_parameter('weight', mf.randn(num, dim))
  end
  function Embedding:extra_repr() return ('%d, %d'):format(self.num, self.dim) end
  function Embedding:forward(idx)
    if idx:dtype() ~= 'int64' then fail_input(self, idx, 'int64 indices in 1..' .. self.num) end
    local flat = mf.reshape(idx, -1)
    local rows = mf.index_select(self:value('weight', idx), flat, 1)
    local shape = {}
    for d = 1, idx:dim() do shape[d] = size_of(idx, d) or -1 end
    shape[#shape + 1] = self.dim
    return mf.reshape(rows, shape)
  end

  local Sequential = nn.Module('Sequential')
  nn.Sequential = Sequential
  function Sequential:__init(list)
    for i, m in ipairs(list or {}) do self:add(i, m) end
  end
  function Sequential:forward(x)
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
      self.reduction = opts and opts.reduction or 'mean'
      if not ({mean = 1, sum = 1, none = 1})[self.reduction] then
        raise(("%s: reduction '%s'; expected mean, sum or none"):format(name, tostring(self.reduction)))
      end
    end
    function cls:forward(input, target) return reduce(self, fn(self, input, target)) end
    nn[name] = cls
  end
  local function classes(self, input, target)
    if input:dim() ~= 2 or not size_of(input, 2) then fail_input(self, input, 'N x C scores with C known') end
    if target:dtype() ~= 'int64' then
      raise(('%s: targets are %s; expected int64 class labels in 1..%d'):format(self.__name, target:dtype(), size_of(input, 2)))
    end
    return mf.one_hot(target, size_of(input, 2), {dtype = input:dtype()})
  end
  loss_class('CrossEntropyLoss', function(self, logits, target)
    return mf.softmax_cross_entropy(logits, classes(self, logits, target), 2)
  end)
  loss_class('NLLLoss', function(self, logp, target)
    return -mf.sum(classes(self, logp, target) * logp, 2)
  end)
  loss_class('MSELoss', function(self, a, b) return mf.square(a - b) end)
  loss_class('BCEWithLogitsLoss', function(self, x, y)  -- max(x, 0) - x y + log(1 + e^-|x|): stable
    return mf.relu(x) - x * y + mf.log1p(mf.exp(-mf.abs(x)))
  end)
end
