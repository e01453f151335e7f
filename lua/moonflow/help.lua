-- help(): docs for registered ops (from the registry) and for the Lua-level functions below.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local ops, fn_names = mf._ops, mf._fn_names

  -- one-line docs for the functions that are not registry ops
  local DOCS = {
    tensor = 'mf.tensor(data[, dtype]): a tensor from a number or nested table of numbers (float32 by default).',
    is_tensor = 'mf.is_tensor(x): true when x is a moonflow tensor.',
    Tensor = 'mf.Tensor(...): Torch7\'s constructor, float32: mf.Tensor(2, 3) or mf.Tensor(t:size()) a zeroed tensor of those sizes; mf.Tensor{{1, 2}} from data (as mf.tensor); mf.Tensor(t) shares t\'s storage; mf.Tensor() an empty 1-D tensor. Also the methods table of every tensor.',
    FloatTensor = 'mf.FloatTensor(...): mf.Tensor(...) as float32.',
    DoubleTensor = 'mf.DoubleTensor(...): mf.Tensor(...) as float64.',
    IntTensor = 'mf.IntTensor(...): mf.Tensor(...) as int32.',
    LongTensor = 'mf.LongTensor(...): mf.Tensor(...) as int64.',
    ByteTensor = 'mf.ByteTensor(...): mf.Tensor(...) as uint8.',
    Size = 'mf.Size{2, 3}: a size object as t:size() returns: a plain list of sizes (#, s[i], unpack, ipairs) that prints as 2x3 (scalar when empty), compares with ==, and has s:numel() and s:totable().',
    is_size = 'mf.is_size(x): true when x is a size object (t:size(), mf.Size).',
    clone = 'mf.clone(t) or t:clone(): a contiguous copy of t with its dtype.',
    apply = 't:apply(fn): calls fn(v) on every element (row-major) in place; a number returned replaces it, nil keeps it; returns t. Host memory, any dtype and view but an expanded one; not an op (no graph, no gradient).',
    map = 't:map(other, fn): calls fn(v, w) on every element v of t and the matching w of other (broadcast to t) in place, as apply; returns t.',
    memory_stats = 'mf.memory_stats([device]): {in_use, peak, cached, allocations, system_allocations, live_blocks} of the allocator of device (a name; default the CPU), in bytes, and gc_allowance: the bytes of new tensors after which the next garbage-collector cycle runs (README "Memory").',
    empty_cache = 'mf.empty_cache([device]): collects garbage and returns wholly free cached regions to the system.',
    devices = "mf.devices(): the names of the registered devices, the CPU ('cpu') first; t:to(name) moves a tensor to one.",
    set_num_threads = 'mf.set_num_threads(n): threads for OpenMP kernels and OpenBLAS (also MF_NUM_THREADS).',
    get_num_threads = 'mf.get_num_threads(): the current thread count.',
    blas_info = "mf.blas_info(): the OpenBLAS moonflow loaded: {core (openblas_get_corename(): 'SkylakeX', 'Haswell', ...), chosen (true: moonflow picked the AVX-512 kernels, OPENBLAS_CORETYPE=SKYLAKEX, because the CPU has AVX-512 F/BW/DQ/VL/CD and OPENBLAS_CORETYPE was unset), user_coretype (OPENBLAS_CORETYPE was set: it won), preloaded (the process had an OpenBLAS already: its choice held), library (the file), config (version and build), parallel ('openmp', 'pthreads', 'sequential'), loaded, error}.",
    clock = 'mf.clock(): seconds on a monotonic wall clock, for timing.',
    placeholder = 'mf.placeholder(dtype, shape, name): a graph input fed at run time; nil or -1 in shape means any size.',
    Variable = 'mf.Variable(tensor[, name][, {trainable = false}]): graph state kept by each session across runs.',
    constant = 'mf.constant(value[, name]): a tensor (or number, or nested table) baked into the graph.',
    Session = "mf.Session{device = 'cpu', fuse = true}: runs graphs; sess:run(fetches, feeds), sess:stats(), sess:close() (a closed session is an error to use). fuse = false turns elementwise fusion off.",
    gradients = 'mf.gradients(ys, xs[, grad_ys]): symbols for d(sum ys)/dx per x (nil where x does not reach ys).',
    -- eager autograd (lua/moonflow/tape.lua)
    backward = 'loss:backward([grad][, {retain_graph = false, create_graph = false}]): eager autograd: adds d(loss)/d(leaf) to the .grad of every leaf tensor that requires grad and that loss was computed from. grad (the gradient of loss, of its shape) may be left out for a 1-element loss. The tape is freed afterwards unless retain_graph; create_graph records the backward pass itself (grad of grad) and implies retain_graph.',
    requires_grad = "t:requires_grad(): true when t is a leaf that requires grad or was computed by recorded ops from one. Factories take the option too: mf.tensor(data, {requires_grad = true}), mf.zeros(2, 3, {requires_grad = true}) (ones, full, rand, randn, arange, eye ...).",
    requires_grad_ = 't:requires_grad_([flag = true]): makes the leaf t record the ops that use it (or stop); returns t. Floating dtypes only (float32, float64); a tensor computed from others cannot stop (use t:detach()).',
    shape = "t.shape: t:size(), read-only: a fresh size object of the sizes, 1-based (t.shape[1] == t:size(1), as PyTorch's x.shape == x.size()); writing t.shape[i] changes only that list. t.shape = v raises (use t:reshape or t:view). Graph symbols and nn.Parameters have it too (nil for a size unknown until run).",
    ndim = 't.ndim: t:dim(), read-only (t.ndim = v raises). The C header\'s fields are private in Lua (_ptr, _shape, ...): t.ptr, t.strides, t.count ... raise naming the method to use (t:data(), t:stride(), t:numel()).',
    out = "op(..., {out = t}) (as PyTorch's out=): writes the result into t and returns t, so a loop reuses one buffer instead of writing each result into fresh memory; for an op of several outputs, {out = {t1, t2}} and both are returned. t must have the result's size, dtype and device. A contiguous t that shares no memory with an input is written by the kernel itself; a strided view, or memory an input reads, receives the result through a copy after the kernel has read its inputs. Not for views (reshape, narrow, ...) nor in-place ops (add_, ...). Not recorded for autograd: in grad mode an input or t that requires grad is an error (use mf.no_grad, or the call without out=).",
    grad = 't.grad: the gradient backward accumulated into the leaf t (nil before the first backward); t.grad = nil clears it.',
    detach = 't:detach(): a tensor sharing t\'s storage with no autograd history (it does not require grad).',
    is_leaf = 't:is_leaf(): false when t was computed by recorded ops (it has a node on the tape), else true.',
    no_grad = 'mf.no_grad(fn, ...): runs fn(...) with grad mode off (no op is recorded) and returns its results; the mode is restored even when fn fails.',
    enable_grad = 'mf.enable_grad(fn, ...): runs fn(...) with grad mode on (inside mf.no_grad, say) and returns its results.',
    is_grad_enabled = 'mf.is_grad_enabled(): true while eager ops on tensors that require grad are recorded for backward.',
    set_grad_enabled = 'mf.set_grad_enabled(flag): turns grad mode on or off; returns the previous mode.',
    ['autograd.grad'] = 'mf.autograd.grad(outputs, inputs[, grad_outputs[, {retain_graph, create_graph, allow_unused}]]): the gradients of sum(outputs) (each weighted by its grad_output; implicit for 1-element outputs) with respect to each input tensor (or nn.Parameter), as a list; an input the outputs do not depend on is an error unless allow_unused = true (then nil for it); .grad is not touched. create_graph = true records the computation, so the results can be differentiated again (gradient penalties, meta-learning).',
    ['autograd.backward'] = 'mf.autograd.backward(t[, grad[, opts]]): the same as t:backward(grad, opts).',
    global_variables_initializer = 'mf.global_variables_initializer(): an operation that assigns every variable its initial value.',
    group = 'mf.group{...}: one operation that runs every listed symbol or operation.',
    assign = 'mf.assign(v, value): writes value into variable v when run; returns v.',
    get_default_graph = 'mf.get_default_graph(): the graph new symbols join.',
    reset_default_graph = 'mf.reset_default_graph(): starts a new, empty default graph.',
    global_variables = 'mf.global_variables(): every Variable of the default graph.',
    trainable_variables = 'mf.trainable_variables(): the Variables optimizers update by default.',
    is_symbol = 'mf.is_symbol(x): true when x is a graph symbol.',
    manual_seed = 'mf.manual_seed(seed): reseeds the counter-based generator behind rand/randn; same seed, same numbers.',
    initial_seed = 'mf.initial_seed(): the seed last set.',
    get_rng_state = 'mf.get_rng_state(): {seed, offset} of the generator, for checkpoints.',
    set_rng_state = 'mf.set_rng_state(s): restores a state from get_rng_state().',
    register_op = 'mf.register_op{name=, num_inputs=, doc=, lua_compute=, infer_shape=, params=, gradient=, strided=}: adds an op to the registry; it becomes mf.<name> and a tensor method, usable eagerly, in graphs and by autodiff. lua_compute is the CPU kernel string, or {cpu = src, cuda = src} (an op without a cuda string raises a clear error on cuda tensors). The kernel gets contiguous inputs (views are copied first) unless strided = true, and writes fresh contiguous outputs. gradient: function(x1, ..., xn, y, gy, params) return {g1, ..., gn} end, one gradient per input, of its shape and dtype, or nil. infer_shape: \'same\' (the default: input 1\'s shape and dtype) or function(in_shapes, p) return {out_shape, ...} end. The op is process-wide: every engine (Lua state) in the process can use it when its kernel, infer_shape and gradient are given as Lua source strings (as lua_compute is); a rule given as a Lua function lives only in the engine that registered the op, and other engines raise an error saying so. Block attributes: writes = n (or true: 1; inputs 1..n are written in place, so the kernel takes them strided), lends_shape = {i, ...} (inputs whose values the op never reads: no gradient flows to them, and an op all of whose inputs lend their shape takes no gradient), in_place_of = \'op\' (a write op\'s out-of-place form, named when a graph refuses the write).',
    help = "help(x): prints the docs of an op or function: help(mf.matmul), help('matmul'); returns nothing (mf.help_text(x) returns the text).",
    help_text = 'mf.help_text(x): the text help(x) prints, as a string.',
    list_ops = 'mf.list_ops(): sorted names of every registered op.',
    op_doc = 'mf.op_doc(name): the docs of a registered op as text (nil for an unknown name).',
    eager_stats = 'mf.eager_stats(): {calls, binds, factories}: eager op calls, shape-inference + bind events, kernel strings evaluated.',
    save = 'mf.save(path, tensors[, metadata]): writes a (nested) table of tensors as safetensors, names joined with "."; atomic (temp file + rename).',
    load = "mf.load(path[, {device = 'cuda'}]): reads a safetensors file; returns {name = tensor} (flat names, on device when given, else the CPU) and its string metadata table.",
    ['data.read_idx'] = 'mf.data.read_idx(path): an IDX file (gzip or plain, unsigned bytes) as a uint8 tensor of its declared shape.',
    ['data.fashion_mnist_raw'] = "mf.data.fashion_mnist_raw('train'|'test'): Fashion-MNIST images (N x 28 x 28 uint8) and labels (N uint8, 0..9).",
    ['data.fashion_mnist'] = 'mf.data.fashion_mnist(): train and test datasets (60000, 10000) from the Debian package dataset-fashion-mnist (files under mf.data.FASHION_MNIST_DIR: the environment variable MF_FASHION_MNIST_DIR when set, else /usr/share/datasets/fashion-mnist).',
    ['data.TensorDataset'] = 'mf.data.TensorDataset(inputs[, targets]): a dataset over the rows (dim 1) of tensors.',
    ['data.Dataset'] = 'a dataset: #ds, ds:get(i) -> input, label (1-based), ds:tensors() -> all inputs, all labels, ds:loader{...} -> a loader.',
    ['data.loader'] = 'ds:loader{batch = 1, shuffle = false, drop_last = false, seed = 0}: #loader batches; for bx, by in loader do ... end (or loader:iter()) runs one epoch.',
    ['data.set_epoch'] = 'loader:set_epoch(n): the epoch the next iter() runs (its shuffle order comes from seed and epoch); iter() advances it by one.',
    fit = "mf.fit{model, loss, optimizer, data, epochs, validate, scheduler, on_epoch, on_step, log, start_epoch, max_steps, quiet, mode}: trains; returns the history (one record per epoch). mode = 'graph' (the default: one training graph run by a session) or 'eager' (forward on tensors, loss:backward(), opt:step(): the tape); both give the same losses. It trains on the device of the model's parameters (after model:cuda(), on the GPU; host batches are copied up per step).",
    evaluate = 'mf.evaluate(model, loader[, loss]): {loss, accuracy, n} over the loader, model in evaluation mode, on the device of its parameters.',
    save_checkpoint = 'mf.save_checkpoint(path, {model, optimizer, scheduler, epoch}): model, optimizer state, RNG state and epoch in one safetensors file.',
    load_checkpoint = 'mf.load_checkpoint(path, {model, optimizer, scheduler}): restores them; returns the saved epoch.',
    Graph = 'mf.Graph(): a new, empty graph (mf.Session{graph = g} runs it); most code uses the default graph.',
    is_operation = 'mf.is_operation(x): true when x is a graph operation without a value (mf.group, an initializer).',
    update_ops = 'mf.update_ops([graph]): the side effects registered with mf.add_update_op.',
    ['nn.is_parameter'] = 'mf.nn.is_parameter(x): true when x is an mf.nn.Parameter.',
    add_update_op = 'mf.add_update_op(op): a side effect (batch-norm statistics) that optimizers run with each training step.',
    ['nn.Module'] = "mf.nn.Module('Name'): a module class; define Name:__init(...) and Name:forward(x); instances: Name(...). Fields that are modules or parameters register themselves.",
    ['nn.Parameter'] = 'mf.nn.Parameter(tensor): a trainable tensor with .data and .grad; it acts as its tensor in arithmetic, op calls and tensor methods (x * self.w, mf.matmul(x, self.w), self.w:t()), and as its graph Variable while a module builds a graph. p[{i, j}] reads and p[{i, j}] = v writes the tensor; #p is 0 (LuaJIT has no __len for tables): use p:numel() or p:size(1).',
    ['nn.Linear'] = 'mf.nn.Linear(in, out[, {bias = true}]): x W^T + b over the last dim; PyTorch initialisation.',
    ['nn.Conv2d'] = 'mf.nn.Conv2d(in, out, k[, {stride, padding, dilation, bias}]): 2-D convolution of N x C x H x W inputs.',
    ['nn.MaxPool2d'] = 'mf.nn.MaxPool2d(k[, {stride, padding}]): max over k x k windows (stride defaults to k).',
    ['nn.AvgPool2d'] = 'mf.nn.AvgPool2d(k[, {stride, padding, count_include_pad}]): mean over k x k windows.',
    ['nn.AdaptiveAvgPool2d'] = 'mf.nn.AdaptiveAvgPool2d(out): mean pooling to an out x out (or {h, w}) grid.',
    ['nn.ReLU'] = 'mf.nn.ReLU(): max(x, 0).',
    ['nn.LeakyReLU'] = 'mf.nn.LeakyReLU([slope = 0.01]).',
    ['nn.Tanh'] = 'mf.nn.Tanh().',
    ['nn.Sigmoid'] = 'mf.nn.Sigmoid().',
    ['nn.GELU'] = 'mf.nn.GELU(): x * Phi(x), exact.',
    ['nn.Softmax'] = 'mf.nn.Softmax([dim = -1]).',
    ['nn.LogSoftmax'] = 'mf.nn.LogSoftmax([dim = -1]).',
    ['nn.Dropout'] = 'mf.nn.Dropout([p = 0.5]): zeroes elements with probability p and scales the rest by 1/(1-p) in training; identity in evaluation.',
    ['nn.BatchNorm1d'] = 'mf.nn.BatchNorm1d(C[, {eps = 1e-5, momentum = 0.1}]): per-channel normalisation of N x C (x L) with running statistics.',
    ['nn.BatchNorm2d'] = 'mf.nn.BatchNorm2d(C[, {eps, momentum}]): per-channel normalisation of N x C x H x W with running statistics.',
    ['nn.Embedding'] = 'mf.nn.Embedding(num, dim): rows of a num x dim table by 1-based int64 indices.',
    ['nn.Flatten'] = 'mf.nn.Flatten(): N x ... to N x (product of the rest).',
    ['nn.Sequential'] = 'mf.nn.Sequential{m1, m2, ...} or Sequential(m1, m2, ...): applies the modules in order; children named 1, 2, ...; a module listed twice shares its parameters (listed once by parameters()).',
    ['nn.CrossEntropyLoss'] = "mf.nn.CrossEntropyLoss([{reduction = 'mean', weight, ignore_index}]): softmax cross-entropy of N x C logits (or N x C x d1 x ..., classes along dim 2) and 1-based int64 labels (N, or N x d1 x ...); weight: one per class ('mean' divides by the summed weights of the labels); ignore_index: a label that counts nothing.",
    ['nn.NLLLoss'] = 'mf.nn.NLLLoss([{reduction, weight, ignore_index}]): negative log-likelihood of N x C (or N x C x d1 x ...) log-probabilities and 1-based int64 labels, options as CrossEntropyLoss.',
    ['nn.Module:add'] = 'm:add(child) (Torch7: appended as the next position, 1, 2, ...) or m:add(name, child): registers a child module; returns m, so calls chain: Sequential():add(a):add(b).',
    ['nn.Module:get'] = 'm:get(i): the i-th child module, 1-based in the order added (-1 is the last); an error out of range.',
    ['nn.Module:size'] = 'm:size(): the number of child modules (#m is 0: LuaJIT has no __len for tables).',
    ['nn.Module:clone'] = 'm:clone(): a deep copy: new parameters, gradients and buffers with equal values and their own storage, new children, copied options; sharing inside m (a child used twice) is kept.',
    ['nn.Module:type'] = "m:type(dtype): converts every floating parameter and buffer (and gradient) to dtype ('float32', 'float64') in place: the Parameters stay the same objects, so optimizers holding them follow; returns m. m:type() returns the parameters' dtype.",
    ['nn.Module:double'] = "m:double(): m:type('float64').",
    ['nn.Module:float'] = "m:float(): m:type('float32').",
    ['nn.Module:backward'] = 'm:backward(input, grad_output) (Torch7): the gradient with respect to input of the module\'s output, given grad_output (its shape), through the tape (eager autograd); parameter gradients accumulate into their .grad. It reuses the tape the last m:forward(input) recorded in grad mode (same tensor; the forward is not run again, so Dropout\'s mask is the forward\'s); once per forward, while its output is alive.',
    ['nn.Module:getParameters'] = 'm:getParameters(): flat, gradFlat (Torch7): two 1-D tensors holding every parameter and gradient; afterwards each parameter\'s .data and .grad are views into them, so writing either side changes the other (eager steps, graph training and load_state_dict included). One dtype and device; call it once (a second call makes new flat tensors).',
    ['nn.Module:train'] = 'm:train([mode = true]): sets m.training on m and its children (Dropout, BatchNorm); returns m. m.training is the flag (PyTorch; a boolean); Torch7\'s m:training() also works (the same as m:train()).',
    ['nn.Module:evaluate'] = 'm:evaluate() (also m:eval()): evaluation mode, m:train(false); returns m.',
    ['nn.MSELoss'] = 'mf.nn.MSELoss([{reduction}]): mean squared error; input and target must have one shape.',
    ['nn.L1Loss'] = 'mf.nn.L1Loss([{reduction}]): mean absolute error; input and target must have one shape.',
    ['nn.BCELoss'] = 'mf.nn.BCELoss([{reduction}]): binary cross-entropy of probabilities in [0, 1] (logs clamped at -100).',
    ['nn.BCEWithLogitsLoss'] = 'mf.nn.BCEWithLogitsLoss([{reduction}]): binary cross-entropy on logits, stable for large |x|.',
    ['nn.softmax_cross_entropy_with_logits'] = 'mf.nn.softmax_cross_entropy_with_logits{labels =, logits =[, dim =]}: per-row loss (TensorFlow spelling).',
    ['optim.SGD'] = 'mf.optim.SGD(params, {lr, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false}) or SGD(params, lr[, {...}]): as PyTorch; duplicate params are updated once.',
    ['optim.Adam'] = 'mf.optim.Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0}).',
    ['optim.AdamW'] = 'mf.optim.AdamW(params, {lr = 1e-3, betas, eps, weight_decay = 0.01}): decoupled weight decay.',
    ['optim.StepLR'] = 'mf.optim.StepLR(opt, {step_size, gamma = 0.1}): lr = base * gamma^floor(epoch / step_size); :step() per epoch.',
    ['optim.CosineAnnealingLR'] = 'mf.optim.CosineAnnealingLR(opt, {T_max, eta_min = 0}): cosine decay over T_max epochs; :step() per epoch.',
    ['train.GradientDescentOptimizer'] = 'mf.train.GradientDescentOptimizer(lr): :minimize(loss[, var_list]), :compute_gradients, :apply_gradients.',
    ['train.MomentumOptimizer'] = 'mf.train.MomentumOptimizer(lr, momentum[, {nesterov = false}]).',
    ['train.AdamOptimizer'] = 'mf.train.AdamOptimizer([lr = 1e-3][, {beta1, beta2, epsilon}]): TensorFlow\'s Adam.',
  }
  mf._docs = DOCS

  -- help() finds functions and classes inside these tables as 'ns.name'
  local NAMESPACES = {'nn', 'optim', 'data', 'train', 'autograd', 'cuda'}

  function mf.list_ops()
    -- the registry's names, ops other engines registered since this one loaded among them; none is
    -- installed by being listed (ops.lua installs an op on first use)
    local names = {}
    for i = 0, C.mf_op_count() - 1 do names[#names + 1] = ffi.string(C.mf_op_name(i)) end
    table.sort(names)
    return names
  end

  -- The full text of an op's docs: signature, doc, inputs and params with kinds, defaults, docs.
  function mf.op_doc(name)
    local op = ops[name]
    if not op then return nil end
    local sig = {}
    if op.variadic then sig[1] = '{' .. op.inputs[1] .. '...}' else
      for i, n in ipairs(op.inputs) do sig[i] = n end
    end
    for _, p in ipairs(op.param_info) do sig[#sig + 1] = p.name end
    local lines = {('mf.%s(%s)'):format(name, table.concat(sig, ', ')), '  ' .. op.doc}
    if #op.param_info > 0 then
      lines[#lines + 1] = '  params:'
      for _, p in ipairs(op.param_info) do
        lines[#lines + 1] = ('    %-12s %-13s default %-10s %s'):format(p.name, p.type,
          p.default == '' and '(empty)' or p.default, p.doc)
      end
    end
    if not op.view and not op.writes then
      lines[#lines + 1] = "  out: a trailing {out = t} writes the result into t and returns t (help('out'))"
    end
    local aliases = {}
    for a, n in pairs(mf._aliases) do if n == name then aliases[#aliases + 1] = 'mf.' .. a end end
    table.sort(aliases)
    if #aliases > 0 then lines[#lines + 1] = '  also: ' .. table.concat(aliases, ', ') end
    if op.from_lua then lines[#lines + 1] = '  (registered from Lua)' end
    return table.concat(lines, '\n')
  end

  -- help_text(x): the docs of x as text; help(x) prints them.
  function mf.help_text(x)
    local text
    if x == nil then
      text = 'moonflow ' .. mf._VERSION .. "\nhelp('op') or help(mf.op) for an op; mf.list_ops() lists them:\n  "
        .. table.concat(mf.list_ops(), ' ')
    else
      local name = type(x) == 'string' and x:gsub('^mf%.', '') or fn_names[x]
      if (type(x) == 'function' or type(x) == 'table') and not name then
        for k, v in pairs(mf) do if v == x then name = k end end
        for _, ns in ipairs(NAMESPACES) do
          for k, v in pairs(mf[ns] or {}) do if v == x then name = ns .. '.' .. k end end
        end
      end
      if name and mf._aliases[name] then name = mf._aliases[name] end
      text = name and (mf.op_doc(name) or DOCS[name] and DOCS[name])
      -- a name a module not loaded yet documents (init.lua loads them on first use): load them all
      if not text and name and type(x) == 'string' and mf._load_all then
        mf._load_all()
        text = mf.op_doc(name) or DOCS[name]
      end
      if not text then
        text = ('help: no docs for %s'):format(type(x) == 'string' and ("'" .. x .. "'") or tostring(x))
      end
    end
    return text
  end
  -- Prints and returns nothing, so the REPL (which echoes values) shows the text once.
  function mf.help(x) print(mf.help_text(x)) end
end
