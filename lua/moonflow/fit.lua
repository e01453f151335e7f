-- mf.fit: the training loop. It builds one training graph (model in train mode, loss, the
-- optimizer's fused updates) and one evaluation graph, runs them through a session whose
-- variables are the model's own tensors, and reports progress, validation and history.
local ffi = require 'ffi'

return function(mf)
  local raise = mf._raise
  local O = require 'moonflow.options'
  ffi.cdef 'int isatty(int fd);'

  -- loaders are userdata (so # works on them) with iter/set_epoch methods
  local function is_loader(x)
    local t = type(x)
    return (t == 'table' or t == 'userdata') and x.iter ~= nil
  end

  local function with_graph(g, f)
    local saved = mf.get_default_graph()
    mf._set_default_graph(g)
    local ok, a, b, c, d = pcall(f)
    mf._set_default_graph(saved)
    if not ok then error(a, 0) end
    return a, b, c, d
  end

  -- the device of a model's parameters (nil for a model without any): fit and evaluate run their
  -- sessions there, so a model moved with model:cuda() trains on the GPU; host batches fed to such a
  -- session are copied up by Session.run
  local function model_device(model)
    local p = model:parameters()[1]
    return p and p.data:device() or nil
  end

  local function placeholder_like(t, name)
    local shape = t:size()
    shape[1] = -1
    return mf.placeholder(t:dtype(), shape, name)
  end

  -- the evaluation graph of (model, loss) for batches like (bx, by): loss sum and correct count
  local function eval_graph(model, loss, bx, by)
    local g = mf.Graph()
    return with_graph(g, function()
      local x, y = placeholder_like(bx, 'x'), placeholder_like(by, 'y')
      local was = model.training
      model:evaluate()
      local out = model(x)
      if was then model:train() end
      local l = loss(out, y)
      local correct
      if out:dim() == 2 and by:dtype() == 'int64' and by:dim() == 1 then
        correct = mf.sum(mf.cast(mf.eq(mf.argmax(out, 2), y), 'float64'))
      end
      local device = model_device(model)
      return {g = g, x = x, y = y, loss = l, correct = correct, device = device,
              sess = mf.Session{graph = g, device = device}}
    end)
  end

  local eval_cache = setmetatable({}, {__mode = 'k'})

  -- mf.evaluate(model, loader[, loss]) -> {loss = mean loss, accuracy = fraction (classification), n}
  function mf.evaluate(model, loader, loss)
    if type(model) ~= 'table' or not model._is_module then raise(('evaluate(model, loader[, loss]): model is %s; expected an nn module'):format(O.show(model))) end
    if not is_loader(loader) then raise(('evaluate(model, loader[, loss]): loader is %s; expected a data loader (ds:loader{batch = 1000})'):format(O.show(loader))) end
    if loss ~= nil and (type(loss) ~= 'table' or not loss._is_module) then raise('evaluate: loss must be an nn criterion, e.g. mf.nn.CrossEntropyLoss()') end
    loss = loss or mf.nn.CrossEntropyLoss()
    local total, correct, n, eg = 0, 0, 0, nil
    for bx, by in loader:iter() do
      if not eg then
        local per_model = eval_cache[model] or setmetatable({}, {__mode = 'k'})
        eval_cache[model] = per_model
        eg = per_model[loss]
        if not eg or eg.device ~= model_device(model) then eg = eval_graph(model, loss, bx, by) end  -- moved since
        per_model[loss] = eg
      end
      local b = bx:size(1)
      local fetch = eg.correct and {eg.loss, eg.correct} or {eg.loss}
      local l, c = eg.sess:run(fetch, {[eg.x] = bx, [eg.y] = by})
      total = total + l:item() * b
      if c then correct = correct + c:item() end
      n = n + b
    end
    if n == 0 then raise('evaluate: the loader gave no batches') end
    return {loss = total / n, accuracy = eg.correct and correct / n or nil, n = n}
  end

  local function fmt_time(s)
    if s >= 3600 then return ('%dh%02dm'):format(math.floor(s / 3600), math.floor(s % 3600 / 60)) end
    if s >= 60 then return ('%dm%02ds'):format(math.floor(s / 60), math.floor(s % 60)) end
    return ('%.1fs'):format(s)
  end

  local FIT_ARGS = {model = {type = 'table', doc = 'an nn module'}, loss = {type = 'table', doc = 'an nn criterion'},
    optimizer = {type = 'table', doc = 'an mf.optim optimizer'}, data = 'any', epochs = O.posint,
    validate = 'any', on_epoch = 'callable', on_step = 'callable', log = 'string', scheduler = 'table',
    start_epoch = O.posint, quiet = 'boolean', max_steps = O.posint, history = 'table', mode = 'string',
    _hints = {criterion = 'loss', optim = 'optimizer', opt = 'optimizer', loader = 'data', train = 'data',
              val = 'validate', validation = 'validate', epoch = 'epochs', n_epochs = 'epochs', verbose = 'quiet'}, _noun = 'argument'}

  -- mf.fit{model =, loss =, optimizer =, data = loader, epochs = 1, validate = loader,
  --        on_epoch = f(epoch, record, history), on_step = f(step, loss), log = 'history.csv',
  --        scheduler = s, start_epoch = 1, quiet = false, max_steps = n, mode = 'graph' | 'eager'} -> history
  -- mode 'eager' trains with the tape (forward on tensors, loss:backward(), opt:step()) instead of
  -- one training graph. Both run on the device of the model's parameters (model_device).
  function mf.fit(args)
    if type(args) ~= 'table' then raise(('fit: expected a table of arguments {model =, loss =, optimizer =, data =}, got %s'):format(O.show(args))) end
    O.check('fit', args, FIT_ARGS)
    local model, loss, opt, data = args.model, args.loss, args.optimizer, args.data
    if type(model) ~= 'table' or not model._is_module then raise(('fit: model is %s; expected an nn module'):format(O.show(model))) end
    if type(loss) ~= 'table' or not loss._is_module then raise('fit: loss must be an nn criterion, e.g. mf.nn.CrossEntropyLoss()') end
    if type(opt) ~= 'table' or not opt.minimize then raise('fit: optimizer must be an mf.optim optimizer, e.g. mf.optim.SGD(model:parameters(), 0.1)') end
    if not is_loader(data) then raise('fit: data must be a loader (ds:loader{batch = 64})') end
    if args.validate ~= nil and not is_loader(args.validate) then raise('fit: validate must be a loader') end
    if args.scheduler ~= nil and (type(args.scheduler) ~= 'table' or type(args.scheduler.step) ~= 'function') then
      raise('fit: scheduler must be an mf.optim scheduler (StepLR, CosineAnnealingLR)')
    end
    if args.start_epoch and args.start_epoch > (args.epochs or 1) + 1 then
      raise(('fit: start_epoch %d is after the last epoch (epochs = %d)'):format(args.start_epoch, args.epochs or 1))
    end
    local mode = args.mode or 'graph'
    if mode ~= 'graph' and mode ~= 'eager' then
      raise(("fit: mode is '%s'; expected 'graph' (one training graph) or 'eager' (the tape)"):format(mode))
    end
    local epochs, first = args.epochs or 1, args.start_epoch or 1
    local tty = ffi.C.isatty(1) == 1 and not args.quiet
    local csv, csv_err
    if args.log then
      csv, csv_err = io.open(args.log, first > 1 and 'a' or 'w')
      if not csv then raise(('fit: cannot open the log file: %s'):format(tostring(csv_err))) end
    end
    if csv and first == 1 then csv:write('epoch,loss,val_loss,val_accuracy,seconds\n') end
    local train, history = nil, args.history or {}
    local steps_done = 0
    for epoch = first, epochs do
      if data.set_epoch then data:set_epoch(epoch) end
      model:train()
      local t0, seen, loss_sum, nb = mf.clock(), 0, 0, #data
      local step, device = 0, model_device(model)  -- eager batches from the host go there
      for bx, by in data:iter() do
        local l
        if mode == 'eager' then
          if device and bx:device() ~= device then bx, by = bx:to(device), by:to(device) end
          opt:zero_grad()
          l = loss(model(bx), by)
          l:backward()
          opt:step()
        elseif not train then  -- the graph, built once from the first batch's shapes
          local g = mf.Graph()
          train = with_graph(g, function()
            local x, y = placeholder_like(bx, 'x'), placeholder_like(by, 'y')
            local l = loss(model(x), y)
            return {x = x, y = y, loss = l, op = opt:minimize(l),
                    sess = mf.Session{graph = g, device = model_device(model)}}
          end)
        end
        if mode == 'graph' then
          l = select(2, train.sess:run({train.op, train.loss}, {[train.x] = bx, [train.y] = by}))
        end
        local lv, b = l:item(), bx:size(1)
        step, seen, loss_sum = step + 1, seen + b, loss_sum + lv * b
        steps_done = steps_done + 1
        if args.on_step then args.on_step(steps_done, lv) end
        if not args.quiet then
          local el = mf.clock() - t0
          if tty then
            local frac = nb > 0 and step / nb or 0
            local bar = ('='):rep(math.floor(frac * 30))
            io.write(('\repoch %d/%d [%-30s] %d/%d  loss %.4f  %.0f items/s  ETA %s '):format(epoch, epochs, bar, step, nb,
              loss_sum / seen, seen / math.max(el, 1e-9), fmt_time(el / math.max(frac, 1e-9) - el)))
            io.flush()
          elseif step % math.max(1, math.floor(nb / 5)) == 0 then
            print(('epoch %d/%d  step %d/%d  loss %.4f  %.0f items/s'):format(epoch, epochs, step, nb, loss_sum / seen,
              seen / math.max(el, 1e-9)))
          end
        end
        if args.max_steps and steps_done >= args.max_steps then break end
      end
      if seen == 0 then raise('fit: the data loader gave no batches') end
      local rec = {epoch = epoch, loss = loss_sum / seen, seconds = mf.clock() - t0, lr = opt:get_lr()}
      if args.validate then
        local v = mf.evaluate(model, args.validate, loss)
        rec.val_loss, rec.val_accuracy = v.loss, v.accuracy
      end
      if args.scheduler then args.scheduler:step() end
      history[#history + 1] = rec
      if not args.quiet then
        if tty then io.write('\n') end
        print(('epoch %d/%d  loss %.4f%s%s  %s'):format(epoch, epochs, rec.loss,
          rec.val_loss and ('  val_loss %.4f'):format(rec.val_loss) or '',
          rec.val_accuracy and ('  val_accuracy %.4f'):format(rec.val_accuracy) or '', fmt_time(rec.seconds)))
      end
      if csv then
        csv:write(('%d,%.6f,%s,%s,%.3f\n'):format(epoch, rec.loss, rec.val_loss and ('%.6f'):format(rec.val_loss) or '',
          rec.val_accuracy and ('%.6f'):format(rec.val_accuracy) or '', rec.seconds))
        csv:flush()
      end
      if args.on_epoch then args.on_epoch(epoch, rec, history) end
      if args.max_steps and steps_done >= args.max_steps then break end
    end
    if csv then csv:close() end
    return history
  end

  -- Training checkpoints: model and optimizer tensors plus epoch, RNG state and learning rate,
  -- in one safetensors file; loading restores them all so a resumed run repeats the same losses.
  function mf.save_checkpoint(path, c)
    if type(path) ~= 'string' then raise(('save_checkpoint(path, {model =, ...}): path is %s; expected a string'):format(O.show(path))) end
    if type(c) ~= 'table' or not c.model then raise('save_checkpoint: expected {model =, optimizer =, epoch =}') end
    O.check('save_checkpoint', c, {model = 'table', optimizer = 'table', scheduler = 'table', epoch = O.nonneg_int})
    local tensors = {}
    for k, t in pairs(c.model:state_dict()) do tensors['model.' .. k] = t end
    if c.optimizer then for k, t in pairs(c.optimizer:state_dict()) do tensors['optimizer.' .. k] = t end end
    local rng = mf.get_rng_state()
    local meta = {epoch = tostring(c.epoch or 0), rng_seed = ('%.0f'):format(rng.seed), rng_offset = ('%.0f'):format(rng.offset)}
    if c.scheduler then meta.scheduler_epoch = tostring(c.scheduler.epoch) end
    mf.save(path, tensors, meta)
  end

  -- Restores into {model =, optimizer =, scheduler =} and returns the saved epoch.
  function mf.load_checkpoint(path, c)
    if type(path) ~= 'string' then raise(('load_checkpoint(path, {model =, ...}): path is %s; expected a string'):format(O.show(path))) end
    if type(c) ~= 'table' or not c.model then raise('load_checkpoint: expected {model =, optimizer =}') end
    O.check('load_checkpoint', c, {model = 'table', optimizer = 'table', scheduler = 'table'})
    local tensors, meta = mf.load(path)
    local msd, osd = {}, {}
    for k, t in pairs(tensors) do
      local m = k:match('^model%.(.+)$')
      local o = k:match('^optimizer%.(.+)$')
      if m then msd[m] = t elseif o then osd[o] = t end
    end
    c.model:load_state_dict(msd)
    if c.optimizer then c.optimizer:load_state_dict(osd) end
    meta = meta or {}
    if meta.rng_seed then mf.set_rng_state({seed = tonumber(meta.rng_seed), offset = tonumber(meta.rng_offset)}) end
    if c.scheduler and meta.scheduler_epoch then c.scheduler:load_state_dict({epoch = tonumber(meta.scheduler_epoch)}) end
    return tonumber(meta.epoch) or 0
  end
end
