-- mf.train: optimizers as graph rewrites. compute_gradients builds the gradient nodes;
-- apply_gradients adds one fused update op per variable (sgd_update, momentum_update,
-- adam_update: each a single pass over the parameter), grouped into one target.
local C = require 'moonflow.ffi_abi'

return function(mf)
  local raise = mf._raise
  local NODE_VARIABLE = C.MF_NODE_VARIABLE
  local O = require 'moonflow.options'
  mf.train = mf.train or {}

  local Optimizer = {}
  Optimizer.__index = Optimizer

  local function check_lr(what, lr)
    O.value('train.' .. what, 'learning rate', lr, O.rate)
  end

  -- {{grad, var}, ...} for the variables (default: every trainable variable of loss's graph)
  function Optimizer:compute_gradients(loss, var_list)
    if not mf.is_symbol(loss) then raise(self.name .. ':compute_gradients: loss must be a symbol') end
    var_list = var_list or loss.graph.trainable
    if type(var_list) ~= 'table' or mf.is_symbol(var_list) then
      raise(('%s: var_list is %s; expected a list of Variables'):format(self.name, mf.is_symbol(var_list) and 'a symbol' or O.show(var_list)))
    end
    if #var_list == 0 then raise(self.name .. ': no variables to optimise') end
    local unique, seen = {}, {}
    for i, v in ipairs(var_list) do
      if not mf.is_symbol(v) or v.graph ~= loss.graph or loss.graph.nodes[v.node].kind ~= NODE_VARIABLE then
        raise(('%s: var_list[%d] is not a Variable of the loss\'s graph'):format(self.name, i))
      end
      if not seen[v.node] then seen[v.node] = true; unique[#unique + 1] = v end   -- each variable updated once
    end
    var_list = unique
    -- the learning rate exists before the gradient nodes: graph order runs ready nodes lowest id
    -- first, so a constant made after them would hold every update (and the gradient buffer it
    -- frees) back until the whole backward pass had run
    self:lr_input(var_list[1])
    local grads = mf.gradients(loss, var_list)
    local pairs_ = {}
    for i, v in ipairs(var_list) do pairs_[i] = {grads[i], v} end
    return pairs_
  end

  -- One update op per (grad, var) with a gradient; returns the group that runs them all.
  function Optimizer:apply_gradients(grads_and_vars, name)
    if type(grads_and_vars) ~= 'table' then
      raise(('%s:apply_gradients: expected the list of {grad, var} pairs compute_gradients returns, got %s'):format(self.name,
        O.show(grads_and_vars)))
    end
    local updates = {}
    for _, gv in ipairs(grads_and_vars) do
      if gv[1] ~= nil then updates[#updates + 1] = self:update(gv[2], gv[1]) end
    end
    if #updates == 0 then raise(self.name .. ': no variable has a gradient') end
    return mf.group(updates, name or self.name)
  end

  function Optimizer:minimize(loss, var_list)
    return self:apply_gradients(self:compute_gradients(loss, var_list))
  end

  local function slot_like(var, suffix)
    local info = var.graph.nodes[var.node]
    return mf.Variable(mf.zeros(var:size(), {dtype = var:dtype()}), info.name .. '/' .. suffix, {trainable = false})
  end

  -- The update ops take the learning rate as an input: one 0-dim constant per optimizer and graph,
  -- of the first variable's dtype (the ops read lr in any float dtype, whatever the variable's).
  function Optimizer:lr_input(var)
    self.lr_nodes = self.lr_nodes or setmetatable({}, {__mode = 'k'})
    local c = self.lr_nodes[var.graph]
    if not c then
      c = mf.constant(mf.tensor(self.lr, var:dtype()), self.name .. '/learning_rate')
      self.lr_nodes[var.graph] = c
    end
    return c
  end

  O.guard_methods(Optimizer, function(o) return getmetatable(o) == Optimizer end,
    function(name) return ('opt:%s(...)'):format(name) end)

  local function new(name, fields)
    fields.name = name
    return setmetatable(fields, Optimizer)
  end

  function mf.train.GradientDescentOptimizer(lr)
    check_lr('GradientDescentOptimizer', lr)
    local o = new('GradientDescent', {lr = lr})
    function o:update(var, grad) return mf.sgd_update(var, grad, self:lr_input(var)) end
    return o
  end

  -- TensorFlow's rule: accum = momentum * accum + grad; var -= lr * accum (no dampening)
  function mf.train.MomentumOptimizer(lr, momentum, opts)
    check_lr('MomentumOptimizer', lr)
    O.value('train.MomentumOptimizer', 'momentum', momentum, O.prob)
    opts = O.check('train.MomentumOptimizer', opts, {nesterov = 'boolean', use_nesterov = 'boolean'})
    local o = new('Momentum', {lr = lr, momentum = momentum, nesterov = opts.nesterov or opts.use_nesterov or false})
    function o:update(var, grad)
      return mf.momentum_update(var, slot_like(var, 'Momentum'), grad, self:lr_input(var),
        {momentum = self.momentum, nesterov = self.nesterov})
    end
    return o
  end

  -- TensorFlow's Adam: epsilon added to sqrt(v) before bias correction (tf_epsilon)
  function mf.train.AdamOptimizer(lr, opts)
    lr = lr or 0.001
    check_lr('AdamOptimizer', lr)
    opts = O.check('train.AdamOptimizer', opts, {beta1 = {type = 'number', min = 0, lt = 1},
      beta2 = {type = 'number', min = 0, lt = 1}, epsilon = O.rate, _hints = {betas = 'beta1', eps = 'epsilon'}})
    local o = new('Adam', {lr = lr, beta1 = opts.beta1 or 0.9, beta2 = opts.beta2 or 0.999, epsilon = opts.epsilon or 1e-8})
    function o:apply_gradients(grads_and_vars, name)
      -- one step counter for the optimizer: incremented first, then read by every update
      local first = grads_and_vars[1] and grads_and_vars[1][2]
      if not first then raise('Adam: no variables') end
      self.step = self.step or mf.Variable(mf.zeros({}, {dtype = first:dtype()}), 'Adam/step', {trainable = false})
      local t = mf.assign_add(self.step, 1)
      local updates = {}
      for _, gv in ipairs(grads_and_vars) do
        local grad, var = gv[1], gv[2]
        if grad ~= nil then
          updates[#updates + 1] = mf.adam_update(var, slot_like(var, 'Adam_m'), slot_like(var, 'Adam_v'), grad, t,
            self:lr_input(var), {beta1 = self.beta1, beta2 = self.beta2, epsilon = self.epsilon, tf_epsilon = true})
        end
      end
      if #updates == 0 then raise('Adam: no variable has a gradient') end
      return mf.group(updates, name or 'Adam')
    end
    return o
  end
end
