-- mf.optim: PyTorch-style optimizers over module parameters. The same optimizer updates tensors
-- eagerly (opt:step() with each parameter's .grad) or adds its fused update ops to a graph
-- (opt:minimize(loss)); either way its state (momentum buffers, Adam moments, the step count, the
-- learning rate) lives in tensors it owns, bound into graphs, so checkpoints see one state.
return function(mf)
  local raise, is_tensor, nn = mf._raise, mf.is_tensor, mf.nn
  local optim = {}
  mf.optim = optim

  local Optimizer = {}
  Optimizer.__index = Optimizer

  local function holder(t) return {data = t, vars = setmetatable({}, {__mode = 'k'})} end

  local function check_opts(kind, opts, allowed)
    for k in pairs(opts) do
      if not allowed[k] then
        local names = {}
        for n in pairs(allowed) do names[#names + 1] = n end
        table.sort(names)
        raise(("optim.%s: unknown option '%s'; expected %s"):format(kind, tostring(k), table.concat(names, ', ')))
      end
    end
  end

  local function new(kind, params, opts, defaults)
    if type(params) ~= 'table' or #params == 0 then raise(('optim.%s: expected a non-empty list of parameters'):format(kind)) end
    opts = opts or {}
    check_opts(kind, opts, defaults)
    local o = setmetatable({kind = kind, params = {}, state = {}, hp = {}}, Optimizer)
    for k, v in pairs(defaults) do o.hp[k] = v end
    for k, v in pairs(opts) do o.hp[k] = v end
    if type(o.hp.lr) ~= 'number' or o.hp.lr < 0 then raise(('optim.%s: lr must be a non-negative number'):format(kind)) end
    for i, p in ipairs(params) do
      if is_tensor(p) then p = nn.Parameter(p) end
      if not nn.is_parameter(p) then raise(('optim.%s: params[%d] is not a parameter or tensor'):format(kind, i)) end
      o.params[i] = p
    end
    o.lr_t = holder(mf.tensor(o.hp.lr, 'float64'))
    o.base_lr = o.hp.lr
    return o
  end

  function Optimizer:get_lr() return self.lr_t.data:item() end
  function Optimizer:set_lr(lr)
    if type(lr) ~= 'number' or lr < 0 then raise('set_lr: lr must be a non-negative number') end
    self.lr_t.data:set(lr)
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

  -- Eager update of every parameter that has a .grad.
  function Optimizer:step()
    if self.step_t then mf.kernels.fill(self.step_t.data, self.step_t.data:item() + 1) end
    for i, p in ipairs(self.params) do
      if p.grad ~= nil then
        if not is_tensor(p.grad) or p.grad:shape_str() ~= p.data:shape_str() then
          raise(('optim.%s: params[%d].grad must be a tensor shaped like the parameter (%s)'):format(self.kind, i, p.data:shape_str()))
        end
        local sl = {}
        for name, h in pairs(self:slots(i)) do sl[name] = h.data end
        self:update(p.data, p.grad, sl, self.lr_t.data, self.step_t and self.step_t.data)
      end
    end
  end

  -- Graph: gradients of loss for every parameter, one fused update each, plus the graph's update
  -- ops (batch-norm statistics), grouped into one target.
  function Optimizer:minimize(loss)
    if not mf.is_symbol(loss) then raise(('optim.%s:minimize: loss must be a symbol'):format(self.kind)) end
    local g = loss.graph
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

  -- {name = tensor} of the optimizer's state (slots by parameter index, lr, step), for checkpoints
  function Optimizer:state_dict()
    local sd = {lr = self.lr_t.data}
    if self.step_t then sd.step = self.step_t.data end
    for i = 1, #self.params do
      for name, h in pairs(self:slots(i)) do sd[('%s.%d'):format(name, i)] = h.data end
    end
    return sd
  end
  function Optimizer:load_state_dict(sd)
    local mine = self:state_dict()
    local missing = {}
    for k in pairs(mine) do if sd[k] == nil then missing[#missing + 1] = k end end
    if #missing > 0 then
      table.sort(missing)
      raise(('optim.%s:load_state_dict: missing keys: %s'):format(self.kind, table.concat(missing, ', ')))
    end
    for k, t in pairs(mine) do mf.kernels.copy(t, sd[k]) end
    self.hp.lr = self.lr_t.data:item()
  end

  -- SGD as PyTorch's: weight decay added to the gradient, momentum buffer with dampening,
  -- optional Nesterov; one fused op per parameter.
  function optim.SGD(params, opts)
    local o = new('SGD', params, opts, {lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false})
    local hp = o.hp
    if hp.nesterov and (hp.momentum <= 0 or hp.dampening ~= 0) then
      raise('optim.SGD: nesterov needs momentum > 0 and dampening 0')
    end
    o.slot_names = hp.momentum ~= 0 and {'momentum_buffer'} or {}
    function o:update(w, g, st, lr)
      if hp.momentum == 0 then return mf.sgd_update(w, g, lr, {weight_decay = hp.weight_decay}) end
      return mf.momentum_update(w, st.momentum_buffer, g, lr,
        {momentum = hp.momentum, dampening = hp.dampening, weight_decay = hp.weight_decay, nesterov = hp.nesterov})
    end
    return o
  end

  local function adam(kind, params, opts, decoupled, default_wd)
    local o = new(kind, params, opts, {lr = 0.001, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = default_wd})
    local hp = o.hp
    o.slot_names = {'exp_avg', 'exp_avg_sq'}
    o.step_t = holder(mf.tensor(0, 'float64'))
    function o:update(w, g, st, lr, step)
      return mf.adam_update(w, st.exp_avg, st.exp_avg_sq, g, step, lr, {beta1 = hp.betas[1], beta2 = hp.betas[2], epsilon = hp.eps,
        weight_decay = hp.weight_decay, decoupled = decoupled})
    end
    return o
  end
  function optim.Adam(params, opts) return adam('Adam', params, opts, false, 0) end
  function optim.AdamW(params, opts) return adam('AdamW', params, opts, true, 0.01) end

  -- learning-rate schedulers: call :step() once per epoch
  local Scheduler = {}
  Scheduler.__index = Scheduler
  function Scheduler:step()
    self.epoch = self.epoch + 1
    self.opt:set_lr(self:lr_at(self.epoch))
  end
  function Scheduler:state_dict() return {epoch = self.epoch} end
  function Scheduler:load_state_dict(s)
    self.epoch = s.epoch
    self.opt:set_lr(self:lr_at(self.epoch))
  end

  function optim.StepLR(opt, opts)
    opts = opts or {}
    if type(opts.step_size) ~= 'number' or opts.step_size < 1 then raise('optim.StepLR: step_size must be a positive integer') end
    local s = setmetatable({opt = opt, epoch = 0, base = opt.base_lr, step_size = opts.step_size, gamma = opts.gamma or 0.1}, Scheduler)
    function s:lr_at(e) return self.base * self.gamma ^ math.floor(e / self.step_size) end
    return s
  end

  function optim.CosineAnnealingLR(opt, opts)
    opts = opts or {}
    if type(opts.T_max) ~= 'number' or opts.T_max < 1 then raise('optim.CosineAnnealingLR: T_max must be a positive integer') end
    local s = setmetatable({opt = opt, epoch = 0, base = opt.base_lr, T_max = opts.T_max, eta_min = opts.eta_min or 0}, Scheduler)
    function s:lr_at(e)
      return self.eta_min + (self.base - self.eta_min) * (1 + math.cos(math.pi * e / self.T_max)) / 2
    end
    return s
  end
end
