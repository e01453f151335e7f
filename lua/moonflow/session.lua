-- Sessions and executors. A session keeps variable storage across runs and caches one bound
-- executor per (fetch set, feed signature). Binding orders the needed nodes, infers shapes node by
-- node through the registry, plans memory (src/graph/graph.cc) and evaluates each op's kernel
-- factory once; a run copies feed headers into their slots and calls the prepared closures in order.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
local O = require 'moonflow.options'

return function(mf)
  local K, T, SZ, raise = mf.kernels, mf._T, mf._SZ, mf._raise
  local is_symbol, is_operation, is_tensor = mf.is_symbol, mf.is_operation, mf.is_tensor
  local DTYPE_NAME, shape_text = mf._DTYPE_NAME, mf._shape_text
  local OPF_WRITES, OPF_INPLACE, UINT8 = C.MF_OPF_WRITES, C.MF_OPF_INPLACE, C.MF_UINT8
  local KIND_OP, KIND_PLACEHOLDER, KIND_VARIABLE, KIND_CONSTANT = C.MF_NODE_OP, C.MF_NODE_PLACEHOLDER,
    C.MF_NODE_VARIABLE, C.MF_NODE_CONSTANT
  local r_node, r_index = ffi.new('int32_t[1]'), ffi.new('int32_t[1]')
  local in_scratch = {}  -- a node's input headers, for shape inference while binding

  local Session = {}
  Session.__index = Session

  -- Every method but close refuses a closed session: its variables and bound executors are gone.
  local function check_open(self, what)
    if getmetatable(self) ~= Session then raise(('Session.%s: call it as sess:%s(...)'):format(what, what)) end
    if self.closed then raise(('Session.%s: session is closed; create a new mf.Session()'):format(what)) end
  end

  function mf.Session(opts)
    opts = O.check('Session', opts, {device = 'string', fuse = 'boolean', graph = {type = 'table', doc = 'an mf.Graph()',
      check = function(g) return getmetatable(g) ~= getmetatable(mf.get_default_graph()) and 'is a table; expected an mf.Graph()' or nil end}})
    -- the device every variable, slot and kernel of the session lives on; K its kernel table
    local dev = opts.device and K.find_device(opts.device, 'Session') or K.HOST
    return setmetatable({graph = opts.graph or mf.get_default_graph(), device = K.device_name(dev), device_id = dev,
                         K = K.of_device(dev), fuse = opts.fuse ~= false,
                         vars = {}, initialized = {}, closed = false,
                         cache = {}, ncache = 0, counters = {binds = 0, cache_hits = 0, runs = 0}, plan = nil}, Session)
  end

  -- fetches: a symbol, an operation, or a (nested) table of them; results mirror the structure
  local function flatten(f, list)
    if is_symbol(f) or is_operation(f) then
      list[#list + 1] = f
      return #list
    elseif type(f) == 'table' and not is_tensor(f) then
      local shape = {}
      for k, v in pairs(f) do shape[k] = flatten(v, list) end
      return shape
    end
    raise(('Session.run: a fetch is a %s; expected a symbol, an operation or a table of them'):format(
      is_tensor(f) and 'tensor' or type(f)))
  end

  local function rebuild(shape, values)
    if type(shape) == 'number' then return values[shape] end
    local out = {}
    for k, v in pairs(shape) do out[k] = rebuild(v, values) end
    return out
  end

  local function resolve(g, node, index)
    if C.mf_graph_resolve(g.h, node, index, r_node, r_index) ~= 0 then raise(ffi.string(C.mf_last_error())) end
    return r_node[0], r_index[0]
  end

  -- A feed value as a tensor of the placeholder's dtype and a shape its static shape allows.
  local function check_feed(sym, info, v)
    local name = info.name
    if not is_tensor(v) then
      if type(v) == 'number' or type(v) == 'table' then v = mf.tensor(v, DTYPE_NAME[info.dtype])
      else raise(("Session.run: feed for placeholder '%s' is a %s; expected a tensor"):format(name, type(v))) end
    end
    local want = info.shape
    local ok = v._dtype_id == info.dtype
    if ok and want then
      ok = v._ndim == #want
      for d = 1, ok and #want or 0 do
        if want[d] >= 0 and tonumber(v._shape[d - 1]) ~= want[d] then ok = false end
      end
    end
    if not ok then
      raise(("Session.run: feed for placeholder '%s' is %s %s; expected %s %s"):format(name, v:shape_str(),
        DTYPE_NAME[v._dtype_id], shape_text(want), DTYPE_NAME[info.dtype]))
    end
    return v
  end

  -- The headers of a bound executor (every entry's mf_tensor: feeds, variables, constants, op
  -- outputs) come from a header pool (mf._header_pool, ops.lua): one finalizable cdata per header
  -- cost the collector a finalizer-table entry and a finalizer call per node, the main reason bind
  -- time grew faster than the graph; a pool header never owns storage (owns = 0), so it needs none.
  -- The executor keeps its pool (ex.pool): its closures hold references into it.
  local new_pool = mf._header_pool

  local function struct_of(pool, t)
    local s = pool:meta()
    ffi.copy(s, t, SZ)
    s._owns = 0
    return s
  end

  -- The kernel layout contract in graphs: a step that copies the non-contiguous entry e into a
  -- fresh contiguous one (the contiguous op), run at step `at` just before the consumer named name.
  local function contiguous_copy(ex, pentries, e, at, name)
    local op = mf._ops.contiguous
    local rec = mf._params_record_text(op, '')
    local metas = mf._infer(op, rec, {e.s}, 1, nil, ex.pool)
    local c = {s = metas[1], step = at, last_use = at}
    pentries[#pentries + 1] = c
    local st = {op = op, rec = rec, ins = {e.s}, in_entries = {e}, outs = {c}, name = name .. '/contiguous', step = at}
    c.producer = st
    ex.steps[#ex.steps + 1] = st
    return c
  end

  -- Binds an executor: order, shapes, memory plan, closures.
  function Session:bind(targets, feed_of)
    check_open(self, 'bind')
    local g = self.graph
    g:run_passes()
    local n_t = #targets
    local tbuf = ffi.new('int32_t[?]', math.max(n_t, 1))
    for i, t in ipairs(targets) do tbuf[i - 1] = t end
    local maxn = C.mf_graph_size(g.h)
    local obuf = ffi.new('int32_t[?]', maxn)
    local n = C.mf_graph_order(g.h, n_t, tbuf, obuf, maxn)
    if n < 0 then raise(ffi.string(C.mf_last_error())) end
    local pool = new_pool()
    local ex = {steps = {}, feeds = {}, writes = {}, bumps = {}, needs_init = {}, keep = {}, pool = pool}
    local ent = {}          -- node -> list of entry records {s = struct, step, plan index ...}
    local pentries = {}     -- plan entries (op outputs)
    local written = {}
    local clock = 0         -- step numbers of the memory plan: copies of views, then their consumer
    for step = 1, n do
      local id = obuf[step - 1]
      local info = g.nodes[id]
      local kind = info.kind
      if kind == KIND_PLACEHOLDER then
        local t = feed_of[id]
        if not t then
          raise(("Session.run: placeholder '%s' (%s %s) must be fed"):format(info.name, shape_text(info.shape),
            DTYPE_NAME[info.dtype]))
        end
        local e = {s = struct_of(pool, t), external = true}
        ent[id] = {e}
        ex.feeds[#ex.feeds + 1] = {node = id, s = e.s}
      elseif kind == KIND_VARIABLE then
        local v = self.vars[id]
        if not v or (info.bound and not rawequal(v, info.bound)) then  -- a parameter's .data may be rebound
          if info.bound and info.bound._device_id ~= self.device_id then
            raise(("Session.run: variable '%s' is on %s, the session on %s; move it with :to('%s')"):format(info.name,
              info.bound:device(), self.device, self.device))
          end
          v = info.bound or mf._new_tensor(info.shape, info.dtype, self.device_id)
          self.vars[id] = v
          if info.bound then self.initialized[id] = true end
        end
        ent[id] = {{s = struct_of(pool, v), external = true, var = id}}
      elseif kind == KIND_CONSTANT then
        local value = info.value:to(self.device)  -- a copy on the session's device, made once per bind
        ent[id] = {{s = struct_of(pool, value), external = true}}
        ex.keep[#ex.keep + 1] = value
      else
        local op = mf._ops_by_index[C.mf_graph_node_op(g.h, id)]  -- simplification may have rewritten it
        local copy_at = clock + 1
        clock = clock + 2
        local ins = {}
        for k = 1, C.mf_graph_node_num_inputs(g.h, id) do
          if C.mf_graph_node_input(g.h, id, k - 1, r_node, r_index) ~= 0 then raise(ffi.string(C.mf_last_error())) end
          local e = ent[r_node[0]][r_index[0] + 1]
          e.last_use = clock
          ins[k] = e
          if e.var and bit.band(op.flags, OPF_WRITES) == 0 and not written[e.var] then ex.needs_init[e.var] = true end
          if e.var and bit.band(op.flags, OPF_WRITES) ~= 0 then
            if not op.overwrites and not written[e.var] then ex.needs_init[e.var] = true end
            written[e.var] = true
            ex.writes[#ex.writes + 1] = e.var
            ex.bumps[#ex.bumps + 1] = {e.s, op.index}  -- the variable's storage counts the write (tape.lua)
          end
        end
        if not op.strided then  -- a kernel that does not take strides reads contiguous copies of views
          for k, e in ipairs(ins) do
            if e.s._is_contig ~= 1 then
              ins[k] = contiguous_copy(ex, pentries, e, copy_at, info.name)
              ins[k].last_use = clock
            end
          end
        end
        local rec = mf._params_record_text(op, ffi.string(C.mf_graph_node_params(g.h, id)))
        -- the step's own input list (st.ins) is made only for steps that survive fusion (run below)
        local nin = #ins
        for k = 1, nin do in_scratch[k] = ins[k].s end
        local ok, metas, alias = pcall(mf._infer, op, rec, in_scratch, nin, nil, pool)
        if not ok then raise(('Session.run: node %s: %s'):format(info.name, tostring(metas):gsub('^.-:%d+: ', ''))) end
        local outs = {}
        for k, m in ipairs(metas) do
          m._device_id = self.device_id  -- (ops without inputs infer the host)
          -- (producer and pi, set below and by the plan, and nuses and reader, fusion's counts, in
          -- the constructor: the table is made with room for them instead of growing twice)
          local e = {s = m, step = clock, last_use = clock, producer = false, pi = false, nuses = 0, reader = false}
          if alias[k] then
            local base = ins[1]
            e.view_of = base
            if base.external then e.external = true else e.alias_of = base end
            e.s._store = nil
          elseif bit.band(op.flags, OPF_INPLACE) ~= 0 then
            for _, x in ipairs(ins) do
              if not x.external and not x.alias_of and x.s._dtype_id == m._dtype_id and x.s._count == m._count
                 and x.s._ndim == m._ndim and x.s._is_contig == 1 then
                e.inplace_of = x
                break
              end
            end
          end
          pentries[#pentries + 1] = e
          outs[k] = e
        end
        ent[id] = outs
        local st = {op = op, rec = rec, ins = false, in_entries = ins, outs = outs, name = info.name, step = clock}
        for _, e in ipairs(outs) do e.producer = st end
        ex.steps[#ex.steps + 1] = st
      end
    end
    ex.ent, ex.written = ent, written
    return ex, pentries
  end

  -- Plans memory for the op outputs and allocates the slots.
  local function plan(ex, pentries, device)
    local np = #pentries
    local arr = ffi.new('mf_plan_entry[?]', math.max(np, 1))
    for i, e in ipairs(pentries) do e.pi = i - 1 end
    for i, e in ipairs(pentries) do
      local a = arr[i - 1]
      a.nbytes = tonumber(e.s._count) * C.mf_dtype_size(e.s._dtype_id)
      a.step, a.last_use = e.step, e.last_use
      a.alias_of = e.alias_of and e.alias_of.pi or -1
      a.inplace_of = e.inplace_of and e.inplace_of.pi or -1
      a.external = e.external and 1 or 0
    end
    local slots = ffi.new('int32_t[?]', math.max(np, 1))
    local sbytes = ffi.new('int64_t[?]', math.max(np, 1))
    local nslots, planned, naive, inplace = ffi.new('int32_t[1]'), ffi.new('int64_t[1]'), ffi.new('int64_t[1]'), ffi.new('int32_t[1]')
    if C.mf_plan_memory(np, arr, slots, sbytes, nslots, planned, naive, inplace) ~= 0 then
      raise(ffi.string(C.mf_last_error()))
    end
    ex.slots = {}
    for s = 1, nslots[0] do ex.slots[s] = mf._new_tensor({math.max(tonumber(sbytes[s - 1]), 1)}, UINT8, device) end
    for i, e in ipairs(pentries) do
      local sl = slots[i - 1]
      if sl >= 0 then
        local st = ex.slots[sl + 1]
        e.s._ptr, e.s._store, e.s._owns = st._ptr, st._store, 0
      end
    end
    ex.plan = {planned_bytes = tonumber(planned[0]), naive_bytes = tonumber(naive[0]), slots = nslots[0],
               inplace = inplace[0], entries = np, steps = #ex.steps, fused = ex.fused}
  end

  -- The result tensor of a fetched entry: its own per-run tensor, or a copy of shared storage (by
  -- the copy routine of its device: no eager dispatch per fetch and run). On a device whose memory
  -- the host cannot address (cuda), fetches cross to the host here: one copy, which waits.
  local function fetch_value(e)
    local d = e.fresh or e.s
    local h = mf._host_readable(d)
    if h ~= d then return h end
    if e.fresh then return e.fresh end
    local t = mf._new_like_meta(e.s, 'Session.run')
    K.of_device(e.s._device_id).copy(t, e.s)
    return t
  end

  -- A cache miss of Session:run: binds the executor of the fetches list (targets, their nodes) with
  -- the feeds feed_of, fuses, plans, makes the closures and caches the executor under key.
  local function bind_executor(self, g, list, targets, feed_of, key)
    local ex, pentries = self:bind(targets, feed_of)
    -- fetched op outputs get a fresh tensor every run instead of a planned slot
    ex.fetch = {}
    for i, f in ipairs(list) do
      if is_symbol(f) then
        local node, index = resolve(g, f.node, f.index - 1)
        local e = ex.ent[node][index + 1]
        if e.step and not e.alias_of and not e.external then e.external, e.per_run = true, true end
        -- a fetched view is copied out after the last step: its base's slot must live that long
        if e.alias_of then e.last_use = 2 ^ 30 end
        if e.var and not ex.written[e.var] then ex.needs_init[e.var] = true end
        ex.fetch[i] = e
      end
    end
    ex.fused = self.fuse and mf._fuse(ex, pentries) or 0
    plan(ex, pentries, self.device_id)
    for _, e in ipairs(pentries) do
      if e.per_run then
        local t = mf._new_like_meta(e.s, 'Session.run')
        e.s._ptr, e.s._store = t._ptr, t._store
        e.fresh = t
      end
    end
    ex.closures = {}
    for i, st in ipairs(ex.steps) do
      local in_structs, out_structs = st.ins, {}
      if not in_structs then
        in_structs = {}
        for k, e in ipairs(st.in_entries) do in_structs[k] = e.s end
      end
      for k, e in ipairs(st.outs) do out_structs[k] = e.s end
      local Kd = self.K
      local ok, f = pcall(mf._factory(st.op, Kd.strings), in_structs, out_structs, st.rec.p, Kd)
      if not ok then raise(('Session.run: node %s: kernel factory failed: %s'):format(st.name, tostring(f))) end
      ex.closures[i] = f
    end
    -- what a run needs is in place (closures, feeds, fetches, writes, ex.pool); the per-node
    -- records of binding would only make every later collection traverse them. A fetch keeps a
    -- record of its own (an entry reaches every other through its producer), one per entry.
    ex.steps, ex.ent, ex.written = nil, nil, nil
    local slim = {}
    for i, e in pairs(ex.fetch) do
      slim[e] = slim[e] or {s = e.s, per_run = e.per_run, fresh = e.fresh}
      ex.fetch[i] = slim[e]
    end
    if self.ncache >= 64 then self.cache, self.ncache = {}, 0 end
    self.cache[key] = ex
    self.ncache = self.ncache + 1
    self.counters.binds = self.counters.binds + 1
    self.plan = ex.plan
    return ex
  end

  function Session:run(fetches, feeds)
    check_open(self, 'run')
    local list = {}
    local shape = flatten(fetches, list)
    feeds = feeds or {}
    if type(feeds) ~= 'table' then raise('Session.run: feeds must be a table {[placeholder] = tensor}') end
    local g = self.graph
    -- feeds: validated, and keyed into the cache signature
    local feed_of, fkeys, uploaded = {}, {}, nil
    for k, v in pairs(feeds) do
      if not is_symbol(k) then raise(('Session.run: a feed key is a %s; expected a placeholder symbol'):format(type(k))) end
      if k.graph ~= g then raise("Session.run: a fed placeholder belongs to another graph") end
      local info = g.nodes[k.node]
      if info.kind ~= KIND_PLACEHOLDER then raise(("Session.run: '%s' is not a placeholder; only placeholders are fed"):format(info.name)) end
      v = check_feed(k, info, v)
      if v._device_id ~= self.device_id then  -- host data fed to a device session: copied there
        v = v:to(self.device)
        uploaded = uploaded or {}
        uploaded[#uploaded + 1] = v
      end
      feed_of[k.node] = v
      local layout = ''
      if v._is_contig ~= 1 then  -- executors are bound per feed layout (strided kernels hoist strides)
        for d = 0, v._ndim - 1 do layout = layout .. ':' .. tonumber(v._strides[d]) end
      end
      fkeys[#fkeys + 1] = k.node .. ':' .. v._dtype_id .. ':' .. v:shape_str() .. layout
    end
    table.sort(fkeys)
    local tkeys, targets, seen = {}, {}, {}
    for i, f in ipairs(list) do
      if f.graph ~= g then raise(('Session.run: fetch %d belongs to another graph'):format(i)) end
      tkeys[i] = f.node .. '.' .. (f.index or 0)
      if not seen[f.node] then seen[f.node] = true; targets[#targets + 1] = f.node end
    end
    local key = table.concat(tkeys, ',') .. '|' .. table.concat(fkeys, ',') .. '|' .. g.version
    local ex = self.cache[key]
    if ex then
      self.counters.cache_hits = self.counters.cache_hits + 1
    else
      -- The collector pauses while binding: nearly all a bind allocates (its per-node records,
      -- headers and closures) stays live until it ends, so a cycle run meanwhile only marks them
      -- and the graph again. Such a cycle costs time in proportion to the whole heap (the graph and
      -- everything else alive), one more reason bind time grew faster than the graph; a cycle after
      -- the bind frees its records in one pass. First run of 10k / 80k-node graphs
      -- (scripts/bench/graph_build.lua's shapes), 1 thread, CPU time, best of 3, load 3-8, two runs
      -- (2026-11-27): chain 40-41 -> 33-36 / 352-386 -> 283-294 ms, ladder 53-63 -> 35-39 /
      -- 568-604 -> 361-372, train 35-39 -> 28-29 / 676-706 -> 348-527; the bind and the two collector
      -- cycles after it 0.67-0.91x. A program that stopped the collector itself keeps it stopped.
      if collectgarbage('isrunning') then
        collectgarbage('stop')
        local ok, res = pcall(bind_executor, self, g, list, targets, feed_of, key)
        collectgarbage('restart')
        if not ok then error(res, 0) end
        ex = res
      else
        ex = bind_executor(self, g, list, targets, feed_of, key)
      end
    end
    -- run
    for var in pairs(ex.needs_init) do
      if not self.initialized[var] then
        raise(("Session.run: variable '%s' is not initialized; run mf.global_variables_initializer() first")
          :format(g.nodes[var].name))
      end
    end
    for _, f in ipairs(ex.feeds) do
      ffi.copy(f.s, feed_of[f.node], SZ)
      f.s._owns = 0
    end
    -- fetched outputs get a fresh tensor per run: the last run's results belong to the caller
    local fetch, nfetch = ex.fetch, #list
    for i = 1, nfetch do
      local e = fetch[i]
      if e and e.per_run and not e.fresh then
        local t = mf._new_like_meta(e.s, 'Session.run')
        e.s._ptr, e.s._store = t._ptr, t._store
        e.fresh = t
      end
    end
    local closures = ex.closures
    for i = 1, #closures do closures[i]() end
    for _, var in ipairs(ex.writes) do self.initialized[var] = true end
    -- the write steps count in their variables' storages, as eager writes do: the eager tape refuses a
    -- backward through a tensor a session run updated since it was recorded
    local bumps = ex.bumps
    for i = 1, #bumps do C.mf_storage_bump(bumps[i][1], bumps[i][2]) end
    self.counters.runs = self.counters.runs + 1
    local values = {}
    for i = 1, nfetch do
      local e = fetch[i]
      if e then
        values[i] = fetch_value(e)
        if e.per_run then e.fresh = nil end
      end
    end
    -- the uploaded copies go back to the device's allocator now (stream-ordered: the kernels queued
    -- to read them run first) rather than when the collector finds them: a training loop fed from
    -- the host would otherwise hold a batch of device memory per step until a cycle ran. A fetch
    -- that shares one's storage keeps it.
    if uploaded then
      for i = 1, #uploaded do
        if C.mf_storage_refcount(uploaded[i]) == 1 then mf._release_now(uploaded[i]) end
      end
    end
    local res = type(shape) == 'number' and values[shape] or rebuild(shape, values)
    if type(shape) == 'table' and #shape > 0 and next(shape, #shape) == nil then return unpack(res, 1, #shape) end
    return res
  end

  -- {binds, cache_hits, runs} and the last bind's plan: {steps (op nodes run), entries (their outputs),
  -- planned_bytes, naive_bytes (one buffer per output), slots, inplace (outputs that reused an input),
  -- fused (op nodes folded into fused elementwise steps)}
  function Session:stats()
    check_open(self, 'stats')
    local s = {binds = self.counters.binds, cache_hits = self.counters.cache_hits, runs = self.counters.runs}
    for k, v in pairs(self.plan or {}) do s[k] = v end
    return s
  end

  -- Releases the variables and bound executors; any later use of the session is an error
  -- ("run: session is closed"). Closing twice is allowed.
  function Session:close()
    if getmetatable(self) ~= Session then raise('Session.close: call it as sess:close()') end
    self.cache, self.ncache, self.vars, self.initialized, self.plan = {}, 0, {}, {}, nil
    self.closed = true
  end
end
