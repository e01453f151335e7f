-- mf.optim: PyTorch-style optimizers over module parameters. The same optimizer updates tensors
-- eagerly (opt:step() with each parameter's .grad) or adds its fused update ops to a graph
-- (opt:minimize(loss)); either way its state (momentum buffers, Adam moments, the step count, the
-- learning rate) lives in tensors it owns, bound into graphs, so checkpoints see one state.
return function(mf)
  local raise, is_tensor, nn = mf._raise, mf.is_tensor, mf.nn
  -- same sizes and dtype, compared without building strings (step() checks every slot, every step)
  local function same_meta(a, b)
    if a._ndim ~= b._ndim or a._dtype_id ~= b._dtype_id or a._device_id ~= b._device_id then return false end
    for d = 0, a._ndim - 1 do if a._shape[d] ~= b._shape[d] then return false end end
    return true
  end
  local O = require 'moonflow.options'
  local optim = {}
  mf.optim = optim

  local Optimizer = {}
  Optimizer.__index = Optimizer

  local holder = nn._holder

  local function describe(x)
    if type(x) == 'table' and x._is_module then return 'a module' end
    if is_tensor(x) then return ('a %s %s tensor'):format(x:shape_str(), x:dtype()) end
    if nn.is_parameter(x) then return 'a single parameter' end
    return O.show(x)
  end

  -- The parameter list: Parameters or tensors, de-duplicated by identity (a module used twice, or
  -- a list naming one parameter twice, is updated once per step, as PyTorch).
  local function param_list(kind, params)
    local what = 'optim.' .. kind
    if type(params) ~= 'table' or params._is_module or nn.is_parameter(params) or is_tensor(params) then
      raise(('%s: params is %s; expected a list of parameters, e.g. model:parameters()'):format(what, describe(params)))
    end
    if type(params[1]) == 'table' and params[1].params ~= nil then
      raise(('%s: parameter groups ({params = ..., lr = ...}) are not supported; make one optimizer per group'):format(what))
    end
    local n = #params
    if n == 0 and next(params) ~= nil then
      raise(('%s(params, opts): the first argument is an options table; pass the parameters first: %s(model:parameters(), {...})'):format(
        what, what))
    end
    for k in pairs(params) do
      if type(k) ~= 'number' or k < 1 or k > n or k ~= math.floor(k) then
        raise(('%s: params has key %s; expected a list {p1, p2, ...}'):format(what, O.show(k)))
      end
    end
    if n == 0 then raise(('%s: expected a non-empty list of parameters'):format(what)) end
    local out, seen = {}, {}
    for i = 1, n do
      local p = params[i]
      local t = is_tensor(p) and p or (nn.is_parameter(p) and p.data)
      if not t then raise(('%s: params[%d] is %s; expected an nn.Parameter or a tensor'):format(what, i, describe(p))) end
      if t:dtype() ~= 'float32' and t:dtype() ~= 'float64' then
        raise(('%s: params[%d] is %s; expected float32 or float64'):format(what, i, describe(t)))
      end
      if not seen[p] and not seen[t] then
        if is_tensor(p) then p = nn.Parameter(p) end
        seen[p], seen[t] = true, true
        out[#out + 1] = p
      end
    end
    return out
  end

  -- opts: a table, or PyTorch's positional lr (SGD(params, 0.1), optionally followed by a table)
  local function new(kind, params, opts, more, defaults, rules)
    local what = 'optim.' .. kind
    if type(opts) == 'number' then
      local lr = opts
      opts = {}
      if more ~= nil then
        if type(more) ~= 'table' then raise(('%s(params, lr, opts): opts is %s; expected a table'):format(what, O.show(more))) end
        if more.lr ~= nil then raise(('%s: lr given twice (positional and in the options)'):format(what)) end
        for k, v in pairs(more) do opts[k] = v end
      end
      opts.lr = lr
    elseif more ~= nil then
      raise(('%s: expected (params, opts) or (params, lr, opts), got a third argument after %s'):format(what, O.show(opts)))
    end
    opts = O.check(what, opts, rules)
    local o = setmetatable({kind = kind, params = param_list(kind, params), state = {}, hp = {}}, Optimizer)
    for k, v in pairs(defaults) do o.hp[k] = v end
    for k, v in pairs(opts) do o.hp[k] = v end
    o.lr_t = holder(mf.tensor(o.hp.lr, 'float64'))
    o.base_lr = o.hp.lr
    return o
  end

  -- The learning rate as a Lua number: hp.lr mirrors the tensor (set_lr and load_state_dict write
  -- both), so reading it never waits for a device.
  function Optimizer:get_lr() return self.hp.lr end
  function Optimizer:set_lr(lr)
    O.value(('optim.%s:set_lr'):format(self.kind), 'lr', lr, O.rate)
    self.lr_t.data:fill(lr)
    self.hp.lr = lr
  end

  -- per-parameter slots (zeros like the parameter), created on first use
  function Optimizer:slots(i)
    local st = self.state[i]
    if not st then
      st = {}
      local d = self.params[i].data
      for _, name in ipairs(self.slot_names) do st[name] = holder(mf.zeros_like(d)) end
      self.state[i] = st
    end
    return st
  end

  function Optimizer:zero_grad()
    for _, p in ipairs(self.params) do p.grad = nil end
  end

  -- Eager update of every parameter that has a .grad. It runs under mf.no_grad, as PyTorch's step:
  -- the updates write leaves that require grad, which the tape refuses in grad mode.
  -- The learning rate and step count live on the parameters' device (that of the first one), moved
  -- there once when the parameters move, so a step neither copies them nor reads them on the host.
  local function place_state(self, d)
    for _, h in ipairs({self.lr_t, self.step_t}) do
      if h.data._device_id ~= d._device_id then h.data = h.data:to(d:device()) end
    end
  end
  local eager_step
  function Optimizer:step() return mf.no_grad(eager_step, self) end
  function eager_step(self)
    local first = self.params[1].data
    if self.lr_t.data._device_id ~= first._device_id then place_state(self, first) end
    if self.step_t then mf.assign_add(self.step_t.data, 1) end
    for i, p in ipairs(self.params) do
      -- read without marking .grad as seen (tape.lua's mf._grad_peek): the next zero_grad frees it at once
      local d = p.data
      local grad = mf._grad_peek(d)
      if grad ~= nil then
        if not is_tensor(grad) or not same_meta(grad, d) then
          raise(('optim.%s: params[%d].grad is %s; expected a tensor shaped like the parameter (%s %s)'):format(self.kind, i,
            describe(grad), d:shape_str(), d:dtype()))
        end
        -- the slot tensors by name: one table per parameter, refilled each step (h.data may be rebound)
        local sls = self.slot_lists or {}
        self.slot_lists = sls
        local sl = sls[i] or {}
        sls[i] = sl
        for name, h in pairs(self:slots(i)) do
          if not same_meta(h.data, d) then
            raise(("optim.%s: state '%s' of params[%d] is %s %s but the parameter is %s %s (was its .data rebound to "
              .. 'another shape?)'):format(self.kind, name, i, h.data:shape_str(), h.data:dtype(), d:shape_str(), d:dtype()))
          end
          sl[name] = h.data
        end
        local lr, t = self.lr_t.data, self.step_t and self.step_t.data
        if lr._device_id ~= d._device_id then  -- a parameter on another device than the first reads copies there
          lr, t = lr:to(d:device()), t and t:to(d:device())
        end
        self:update(d, grad, sl, lr, t)
      end
    end
  end

  -- Graph: gradients of loss for every parameter, one fused update each, plus the graph's update
  -- ops (batch-norm statistics), grouped into one target.
  function Optimizer:minimize(loss)
    if not mf.is_symbol(loss) then
      raise(('optim.%s:minimize: loss is %s; expected a symbol (for tensors, set each .grad and call step())'):format(
        self.kind, describe(loss)))
    end
    local g = loss.graph
    place_state(self, self.params[1].data)
    local vars = {}
    for i, p in ipairs(self.params) do vars[i] = nn._bound_variable(p, g, 'param' .. i, true) end
    local grads = mf.gradients(loss, vars)
    local saved = mf.get_default_graph()
    mf._set_default_graph(g)
    local lr = nn._bound_variable(self.lr_t, g, self.kind .. '/lr', false)
    local step
    if self.step_t then step = mf.assign_add(nn._bound_variable(self.step_t, g, self.kind .. '/step', false), 1) end
    local ops = {}
    for i, v in ipairs(vars) do
      if grads[i] ~= nil then
        local st = self:slots(i)
        local sv = {}
        for name, h in pairs(st) do sv[name] = nn._bound_variable(h, g, self.kind .. '/' .. name .. i, false) end
        ops[#ops + 1] = self:update(v, grads[i], sv, lr, step)
      end
    end
    for _, u in ipairs(mf.update_ops(g)) do ops[#ops + 1] = u end
    mf._set_default_graph(saved)
    if #ops == 0 then raise(('optim.%s: no parameter reaches the loss'):format(self.kind)) end
    return mf.group(ops, self.kind)
  end

  -- {name = tensor} of the optimizer's state (slots by parameter position: 'exp_avg.2' belongs to
  -- params[2]; lr; step), for checkpoints
  function Optimizer:state_dict()
    local sd = {lr = self.lr_t.data}
    if self.step_t then sd.step = self.step_t.data end
    for i = 1, #self.params do
      for name, h in pairs(self:slots(i)) do sd[('%s.%d'):format(name, i)] = h.data end
    end
    return sd
  end

  -- Checked before anything is written: missing and unexpected keys (unless {strict = false}), and
  -- each tensor's shape and dtype against its slot (slots belong to parameters by position).
  function Optimizer:load_state_dict(sd, opts)
    local what = ('optim.%s:load_state_dict'):format(self.kind)
    if type(sd) ~= 'table' or is_tensor(sd) then raise(('%s: expected a table name -> tensor, got %s'):format(what, describe(sd))) end
    opts = O.check(what, opts, {strict = 'boolean'})
    local strict = opts.strict ~= false
    local mine = self:state_dict()
    local missing, extra, bad = {}, {}, {}
    for k in pairs(mine) do if sd[k] == nil then missing[#missing + 1] = k end end
    for k in pairs(sd) do if mine[k] == nil then extra[#extra + 1] = tostring(k) end end
    for k, t in pairs(mine) do
      local v = sd[k]
      if v ~= nil and (not is_tensor(v) or v:shape_str() ~= t:shape_str() or v:dtype() ~= t:dtype()) then
        local i = tonumber(k:match('%.(%d+)$'))
        bad[#bad + 1] = ("'%s' is %s but %s is %s %s"):format(k, is_tensor(v) and (v:shape_str() .. ' ' .. v:dtype()) or describe(v),
          i and ('params[' .. i .. ']') or 'the optimizer\'s', t:shape_str(), t:dtype())
      end
    end
    O.state_errors(what, missing, extra, bad, strict,
      ' (the state of another model or optimizer?)')
    local lr = self.hp.lr
    if sd.lr ~= nil then
      lr = sd.lr:item()
      O.value(what, "'lr'", lr, O.rate)
    end
    for k, t in pairs(mine) do
      if sd[k] ~= nil and not rawequal(sd[k], t) then mf.copy(t, sd[k]:to(t:device())) end
    end
    self.hp.lr = lr
    return self
  end

  O.guard_methods(Optimizer, function(o) return getmetatable(o) == Optimizer end,
    function(name) return ('opt:%s(...)'):format(name) end)

  local RATE, FRACTION = O.rate, O.prob

  -- SGD as PyTorch's: weight decay added to the gradient, momentum buffer with dampening,
  -- optional Nesterov; one fused op per parameter.
  function optim.SGD(params, opts, more)
    local o = new('SGD', params, opts, more, {lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false},
      {lr = RATE, momentum = FRACTION, dampening = FRACTION, weight_decay = RATE, nesterov = 'boolean',
       _hints = {learning_rate = 'lr', decay = 'weight_decay', wd = 'weight_decay'}})
    local hp = o.hp
    if hp.nesterov and (hp.momentum <= 0 or hp.dampening ~= 0) then
      raise('optim.SGD: nesterov needs momentum > 0 and dampening 0')
    end
    o.slot_names = hp.momentum ~= 0 and {'momentum_buffer'} or {}
    -- PyTorch starts the buffer at the (decayed) gradient: buf = d_p on the first step, then
    -- buf = momentum * buf + (1 - dampening) * d_p; with dampening the first step is told apart
    -- by a step count, as Adam's
    local damped = hp.momentum ~= 0 and hp.dampening ~= 0
    if damped then o.step_t = holder(mf.tensor(0, 'float64')) end
    -- the update ops' params tables, refilled per call rather than built (the op copies what it reads)
    local sgd_p, mom_p = {}, {}
    function o:update(w, g, st, lr, step)
      if hp.momentum == 0 then
        sgd_p.weight_decay = hp.weight_decay
        return mf.sgd_update(w, g, lr, sgd_p)
      end
      if not damped then
        mom_p.momentum, mom_p.dampening, mom_p.weight_decay, mom_p.nesterov = hp.momentum, 0, hp.weight_decay,
          hp.nesterov
        return mf.momentum_update(w, st.momentum_buffer, g, lr, mom_p)
      end
      local d_p = hp.weight_decay ~= 0 and g + w * hp.weight_decay or g
      local later = mf.minimum(step - 1, 1)                        -- 0 on the first step, 1 after
      local scale = mf.cast(1 - later * hp.dampening, w:dtype())   -- 1, then 1 - dampening
      return mf.momentum_update(w, st.momentum_buffer, d_p * scale, lr, {momentum = hp.momentum})
    end
    return o
  end

  local BETAS = {type = 'pair', min = 0, lt = 1, doc = 'a pair {beta1, beta2} of numbers in [0, 1)'}

  local function adam(kind, params, opts, more, decoupled, default_wd)
    local o = new(kind, params, opts, more, {lr = 0.001, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = default_wd},
      {lr = RATE, betas = BETAS, eps = RATE, weight_decay = RATE,
       _hints = {learning_rate = 'lr', beta1 = 'betas', beta2 = 'betas', epsilon = 'eps', decay = 'weight_decay', wd = 'weight_decay'}})
    local hp = o.hp
    o.slot_names = {'exp_avg', 'exp_avg_sq'}
    o.step_t = holder(mf.tensor(0, 'float64'))
    local adam_p = {decoupled = decoupled}  -- refilled per call, as SGD's
    function o:update(w, g, st, lr, step)
      adam_p.beta1, adam_p.beta2, adam_p.epsilon, adam_p.weight_decay = hp.betas[1], hp.betas[2], hp.eps,
        hp.weight_decay
      return mf.adam_update(w, st.exp_avg, st.exp_avg_sq, g, step, lr, adam_p)
    end
    return o
  end
  function optim.Adam(params, opts, more) return adam('Adam', params, opts, more, false, 0) end
  function optim.AdamW(params, opts, more) return adam('AdamW', params, opts, more, true, 0.01) end

  -- learning-rate schedulers: call :step() once per epoch
  local Scheduler = {}
  Scheduler.__index = Scheduler
  function Scheduler:step()
    self.epoch = self.epoch + 1
    self.opt:set_lr(self:lr_at(self.epoch))
  end
  function Scheduler:state_dict() return {epoch = self.epoch} end
  function Scheduler:load_state_dict(s)
    local what = ('optim.%s:load_state_dict'):format(self.kind)
    if type(s) ~= 'table' then raise(('%s: expected {epoch = n}, got %s'):format(what, O.show(s))) end
    O.check(what, s, {epoch = O.nonneg_int})
    if s.epoch == nil then raise(('%s: expected {epoch = n}; epoch is missing'):format(what)) end
    self.epoch = s.epoch
    self.opt:set_lr(self:lr_at(self.epoch))
  end

  O.guard_methods(Scheduler, function(s) return getmetatable(s) == Scheduler end,
    function(name) return ('scheduler:%s(...)'):format(name) end)

  local function scheduler(kind, opt, opts, spec, required)
    local what = 'optim.' .. kind
    if getmetatable(opt) ~= Optimizer then
      raise(('%s(opt, opts): opt is %s; expected an mf.optim optimizer'):format(what, describe(opt)))
    end
    opts = O.check(what, opts, spec)
    O.required(what, opts, required, spec[required])
    return setmetatable({kind = kind, opt = opt, epoch = 0, base = opt.base_lr}, Scheduler), opts
  end

  function optim.StepLR(opt, opts)
    local s
    s, opts = scheduler('StepLR', opt, opts, {step_size = O.posint, gamma = RATE}, 'step_size')
    s.step_size, s.gamma = opts.step_size, opts.gamma or 0.1
    function s:lr_at(e) return self.base * self.gamma ^ math.floor(e / self.step_size) end
    return s
  end

  function optim.CosineAnnealingLR(opt, opts)
    local s
    s, opts = scheduler('CosineAnnealingLR', opt, opts, {T_max = O.posint, eta_min = RATE, _hints = {t_max = 'T_max'}}, 'T_max')
    s.T_max, s.eta_min = opts.T_max, opts.eta_min or 0
    function s:lr_at(e)
      return self.eta_min + (self.base - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2
    end
    return s
  end
end
