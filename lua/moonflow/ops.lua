-- Operators: every registered op (C++ or Lua) becomes mf.<name> and a tensor method. An eager
-- call validates params, infers shapes once, binds the op's kernel factory to borrowed slot
-- tensors, and caches that closure per (op, params, input layout); a repeated call only copies
-- the inputs' headers into the slots, allocates outputs and runs the closure.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
pcall(ffi.cdef, 'int memcmp(const void *a, const void *b, size_t n);')  -- out='s size check (call_out)

return function(mf)
  local K, T, SZ, raise = mf.kernels, mf._T, mf._SZ, mf._raise
  local is_tensor, methods = mf.is_tensor, mf.Tensor
  local MAXOUT = 64
  local meta_buf = ffi.new('mf_tensor[?]', MAXOUT)
  local alias_buf = ffi.new('int[?]', MAXOUT)
  local out_cap = MAXOUT  -- meta_buf and alias_buf grow for list outputs beyond it (infer_native)
  local nout_buf = ffi.new('int[1]')
  local in_ptrs, in_cap = ffi.new('const mf_tensor *[?]', 256), 256  -- grows for variadic ops (stack of 300)
  local OPF_VIEW, OPF_VARIADIC, OPF_LUA, OPF_RANDOM = C.MF_OPF_VIEW, C.MF_OPF_VARIADIC, C.MF_OPF_LUA, C.MF_OPF_RANDOM
  local OPF_WRITES = C.MF_OPF_WRITES
  local F32, I32, I64, U8 = C.MF_FLOAT32, C.MF_INT32, C.MF_INT64, C.MF_UINT8
  local CPU, CUDA, MAX_DIMS = C.MF_CPU, C.MF_CUDA, C.MF_MAX_DIMS
  local HOST = K.HOST

  -- counters behind mf.eager_stats(): shape inference + binding happens once per layout
  local stats = {calls = 0, binds = 0, factories = 0}
  local ops = {}         -- name -> op record
  local ops_by_index = {}
  mf._ops, mf._ops_by_index = ops, ops_by_index
  local fn_names = setmetatable({}, {__mode = 'k'})  -- op function -> op name, for help()
  mf._fn_names = fn_names
  local pack_args = mf._pack_args  -- {...} without its trace exits (tensor.lua)

  local function cstr(p) return p ~= nil and ffi.string(p) or nil end

  -- kernel strings ---------------------------------------------------------------------------
  local KERNEL_GLOBALS = {'math', 'bit', 'ffi', 'string', 'table', 'ipairs', 'pairs', 'error', 'assert',
                          'tonumber', 'tostring', 'type', 'select', 'unpack', 'print', 'pcall', 'next'}
  local kernel_base = {ffi = ffi, bit = require 'bit'}
  for _, k in ipairs(KERNEL_GLOBALS) do kernel_base[k] = kernel_base[k] or _G[k] end

  -- Loads a kernel string in a restricted environment: reading or writing an undeclared global
  -- is an error naming the op; a syntax error names the op and line.
  local function compile_kernel(name, device, src)
    local env = setmetatable({mf = mf}, {
      __index = function(_, k)
        if kernel_base[k] ~= nil then return kernel_base[k] end
        error(("op %s: %s kernel reads undeclared global '%s' (declare it local, or reach it through mf)")
          :format(name, device, tostring(k)), 2)
      end,
      __newindex = function(_, k)
        error(("op %s: %s kernel assigns global '%s'; declare it local"):format(name, device, tostring(k)), 2)
      end})
    local chunk, err = loadstring('return ' .. src, '=' .. name .. ' (' .. device .. ' kernel)')
    if not chunk then raise(('op %s: %s kernel does not load: %s'):format(name, device, err)) end
    setfenv(chunk, env)
    local ok, factory = pcall(chunk)
    if not ok then raise(('op %s: %s kernel failed to evaluate: %s'):format(name, device, tostring(factory))) end
    if type(factory) ~= 'function' then
      raise(('op %s: %s kernel must evaluate to a factory function(ins, outs, p, K), got a %s'):format(name, device, type(factory)))
    end
    return factory
  end

  -- params -----------------------------------------------------------------------------------
  -- what a wrong param value is, in the user's words ('cdata' says nothing): a tensor, a symbol
  local function kind_of(v)
    if is_tensor(v) then return 'tensor' end
    if type(v) == 'table' and mf.is_symbol and mf.is_symbol(v) then return 'graph symbol' end
    return type(v)
  end
  local function encode_value(op, k, v)
    local tv = type(v)
    if tv == 'number' then
      if v == 0 and 1 / v < 0 then return '-0' end  -- %d drops the sign: full(s, -0.0) filled +0
      if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end
      return ('%.17g'):format(v)
    elseif tv == 'boolean' or tv == 'string' then
      local s = tostring(v)
      if s:find('[;=]') then raise(("%s: param '%s' is '%s'; ';' and '=' are not allowed"):format(op.name, k, s)) end
      return s
    elseif tv == 'table' and not is_tensor(v) and not (mf.is_symbol and mf.is_symbol(v)) then
      local parts = {}
      for i = 1, table.maxn(v) do  -- {1, nil, 3}: # may stop at the hole and drop 3 unseen
        if type(v[i]) ~= 'number' then
          raise(("%s: param '%s' item %d is a %s; expected a number"):format(op.name, k, i, kind_of(v[i])))
        end
        parts[i] = ('%d'):format(v[i])
        if v[i] ~= math.floor(v[i]) then parts[i] = tostring(v[i]) end
      end
      for key in pairs(v) do  -- {2, 1, foo = 1} or a [0] entry: maxn does not see it, so it was ignored
        if type(key) ~= 'number' or key < 1 or key ~= math.floor(key) then
          raise(("%s: param '%s' has the key '%s'; expected a plain list of numbers (named params go in a table of their own)")
            :format(op.name, k, tostring(key)))
        end
      end
      return table.concat(parts, ',')
    end
    local want = op.param_kind[k] or 'known param'
    raise(("%s: param '%s' is a %s; expected %s %s"):format(op.name, tostring(k), kind_of(v),
      want:find('^[aeiou]') and 'an' or 'a', want))
  end

  local P_BOOL, P_INT, P_FLOAT, P_ENUM, P_DTYPE = C.MF_PARAM_BOOL, C.MF_PARAM_INT, C.MF_PARAM_FLOAT, C.MF_PARAM_ENUM,
    C.MF_PARAM_DTYPE
  local function decode_params(h)
    local p = {}
    for i = 0, C.mf_params_count(h) - 1 do
      local key, kind = ffi.string(C.mf_params_key(h, i)), C.mf_params_kind(h, i)
      if kind == P_BOOL then p[key] = C.mf_params_number(h, i) ~= 0
      elseif kind == P_INT or kind == P_FLOAT then p[key] = C.mf_params_number(h, i)
      elseif kind == P_ENUM or kind == P_DTYPE then p[key] = ffi.string(C.mf_params_string(h, i))
      else
        local l = {}
        for j = 0, C.mf_params_list_len(h, i) - 1 do l[j + 1] = tonumber(C.mf_params_list_item(h, i, j)) end
        p[key] = l
      end
    end
    return p
  end

  -- The parsed-params record for a params table: C handle, decoded values, and the bound-closure
  -- cache that hangs off it. Keyed by the encoded text; bounded so varying params cannot grow it.
  local function params_record_text(op, text)
    local rec = op.params[text]
    if rec then return rec end
    local h = C.mf_params_parse(op.index, text)
    if h == nil then raise(ffi.string(C.mf_last_error())) end
    h = ffi.gc(h, C.mf_params_free)
    -- last: the entry used most recently; recent: up to 8 entries used before it, a ring (call's layout
    -- checks before a signature)
    rec = {h = h, p = decode_params(h), entries = {}, nentries = 0, last = false, recent = {}, rpos = 0}
    if op.nparams_cached > 256 then op.params, op.nparams_cached, op.pfast, op.nfast = {}, 0, {}, 0 end
    op.params[text] = rec
    op.nparams_cached = op.nparams_cached + 1
    return rec
  end

  -- A params table of numbers, booleans, strings and lists of numbers finds its record without
  -- building the canonical text (pairs, string.format, sort, concat: most of an eager call with
  -- params, and its garbage): op.pfast is a tree keyed by the values in declared param order (a
  -- param left out: NONE; a list: LIST, its length, its items) whose leaves are the records the
  -- text path gave for those values, so both paths share records. Only values that went through
  -- the text path once (and were accepted) are ever found here.
  local NONE, LIST, REC = {}, {}, {}  -- REC: make_function's op.ppos keeps a record under it
  local function fast_key(v)  -- v as a tree key, or nil when only the text path may take it
    if v == nil then return NONE end
    local tv = type(v)
    -- NaN is no table key, and -0 is the key 0 (the text path keeps them apart)
    if tv == 'number' then if v == v and not (v == 0 and 1 / v < 0) then return v end return nil end
    if tv == 'boolean' or tv == 'string' then return v end
    return nil
  end
  -- make_function's positional path: one step down op.ppos for the value v, node[k] (make: grown).
  -- A number, boolean or string is one key (fast_key); a plain list of numbers (or a Size) is LIST,
  -- its length, its items, as in fast_walk (no loop over the table's keys: pairs here made every
  -- caller's trace abort). false: a value only the general path takes (checked with node nil too).
  local function ppos_key(node, k, make)
    local nxt = node[k]
    if nxt == nil and make then nxt = {}; node[k] = nxt end
    return nxt
  end
  local function ppos_item(node, kj, make)  -- a list item's step: false unless a number (not NaN)
    if type(kj) ~= 'number' or kj ~= kj then return false end
    return node and ppos_key(node, kj, make)
  end
  -- node stepped through vals[j0 .. last] by step (ppos_item or ppos_step); false once a step refuses. The
  -- first three straight-line, a loop only past them: a loop of one to three turns (repeat's {2, 1}, roll's
  -- two values) inside every caller's trace made LuaJIT abort those traces ('inner loop in root trace'), and
  -- the call ran partly interpreted
  local function ppos_walk(step, node, vals, j0, last, make)
    if last < j0 then return node end
    node = step(node, vals[j0], make)
    if last >= j0 + 1 and node ~= false then node = step(node, vals[j0 + 1], make) end
    if last >= j0 + 2 and node ~= false then node = step(node, vals[j0 + 2], make) end
    for j = j0 + 3, last do
      if node == false then return false end
      node = step(node, vals[j], make)
    end
    return node
  end
  local function ppos_step(node, v, make)
    local k = fast_key(v)
    if k ~= nil then return node and ppos_key(node, k, make) end
    if type(v) ~= 'table' or (getmetatable(v) ~= nil and not mf.is_size(v)) then return false end
    local n = #v
    -- a hole or a named key; [0] too, which LuaJIT keeps in the array part, before 1, where next does not see it
    if next(v, n > 0 and n or nil) ~= nil or v[0] ~= nil then return false end
    node = node and ppos_key(node, LIST, make)
    node = node and ppos_key(node, n, make)
    return ppos_walk(ppos_item, node, v, 1, n, make)
  end

  -- fast_walk's step for one param: the node that holds v's key, and the key (a list first steps down
  -- LIST, its length and all its items but the last, as ppos_step); nil when only the text path may take v
  local function fast_param(node, v, make)
    local k = fast_key(v)
    if k ~= nil then return node, k end
    if type(v) ~= 'table' or (getmetatable(v) ~= nil and not mf.is_size(v)) then return nil end
    local n = #v
    -- a key past n: a hole ({2, nil, 4}, whose # may be 1, would find {2}'s record); the text path names it
    -- [0] too, which LuaJIT keeps in the array part, before 1, where next does not see it
    if next(v, n > 0 and n or nil) ~= nil or v[0] ~= nil then return nil end
    node = ppos_key(node, LIST, make)
    node = node and ppos_key(node, n, make)
    node = node and ppos_walk(ppos_item, node, v, 1, n - 1, make)
    if not node then return nil end
    k = n > 0 and v[n] or NONE
    if n > 0 and (type(k) ~= 'number' or k ~= k) then return nil end
    return node, k
  end
  -- fast_walk past its third param: into node[k], then param name's node and key
  local function fast_next(node, k, ptable, name, make)
    node = ppos_key(node, k, make)
    if not node then return nil end
    return fast_param(node, ptable[name], make)
  end
  -- walks (or with make, grows) the tree for ptable; returns the leaf's parent and key. exact: ptable
  -- holds declared param names only (an adapter or make_function built it from positional values).
  -- The first three params straight-line, a loop only past them (ppos_walk says why: this loop of one
  -- to three turns started root traces that left it, and was blacklisted as the adapter's was). The
  -- unused `...` (here and in params_record) makes a vararg function, where LuaJIT starts no root
  -- trace: those that began here met the pairs loop below ('inner loop in root trace'), and enough of
  -- them would blacklist the entry for every call with a table of params (test_jit_paths)
  local function fast_walk(op, ptable, make, exact, ...)
    local names = op.param_list
    local np = #names
    if np == 0 then return nil end
    local v = ptable[names[1]]
    local found = v ~= nil and 1 or 0  -- the params given (false is given)
    local node, k = fast_param(op.pfast, v, make)
    if np >= 2 then
      if ptable[names[2]] ~= nil then found = found + 1 end
      if node then node, k = fast_next(node, k, ptable, names[2], make) end
    end
    if np >= 3 then
      if ptable[names[3]] ~= nil then found = found + 1 end
      if node then node, k = fast_next(node, k, ptable, names[3], make) end
    end
    for i = 4, np do
      if not node then return nil end
      if ptable[names[i]] ~= nil then found = found + 1 end
      node, k = fast_next(node, k, ptable, names[i], make)
    end
    if not node then return nil end
    -- a key that is no param: the text path says so. An exact table skips this loop over its keys, an inner
    -- loop in the caller's trace (LuaJIT aborted that trace on every call: mf.concat({a, b}, 2)). Counting by
    -- next instead, straight-line, made no abort here, but next compiled into traces crashed this LuaJIT
    -- (2.1.0-beta3, Debian's 2022 snapshot) in the same rewrite of the adapters' table copies
    -- (test_gradients: a segfault in compiled code in 5 runs of 6), so pairs stays
    if not exact then
      for _ in pairs(ptable) do found = found - 1 end
      if found ~= 0 then return nil end
    end
    return node, k
  end

  local function params_record(op, ptable, exact, ...)  -- vararg: no root traces (fast_walk)
    if ptable then
      local parent, key = fast_walk(op, ptable, false, exact)
      local rec = parent and parent[key]
      if rec then return rec end
    end
    local text = ''
    if ptable then
      local parts = {}
      for k, v in pairs(ptable) do
        if type(k) ~= 'string' then raise(('%s: params table has a non-string key %s'):format(op.name, tostring(k))) end
        parts[#parts + 1] = k .. '=' .. encode_value(op, k, v)
      end
      table.sort(parts)
      text = table.concat(parts, ';')
    end
    local rec = params_record_text(op, text)
    if ptable and op.nfast < 256 then
      local parent, key = fast_walk(op, ptable, true, exact)
      if parent then parent[key], op.nfast = rec, op.nfast + 1 end
    end
    return rec
  end
  -- graph mode builds nodes from params tables and binds them from the canonical text
  mf._params_record, mf._params_record_text = params_record, params_record_text

  -- shape inference --------------------------------------------------------------------------
  -- A header pool (mf._header_pool()): pool:meta() hands out a zeroed mf_tensor from arrays of 8 to
  -- 256 headers, each element a reference: it owns nothing and has no finalizer (a finalizable cdata
  -- per node made the collector's work on big graphs grow faster than the graph). Headers live as
  -- long as the pool; pool:rewind() lets the next meta() calls hand the same headers out again
  -- (scratch inference: graph building, fusion's check). pool.metas and pool.alias are mf._infer's
  -- scratch lists when it takes headers from the pool (its into), valid until the pool's next use.
  local Headers = ffi.typeof('mf_tensor[?]')
  local HeaderPool = {}
  HeaderPool.__index = HeaderPool
  function HeaderPool:meta()
    local n = self.n
    if n == self.size then  -- the current array is used up: the next one (kept from before a rewind, or new)
      local k = self.k + 1
      if not self.arrays[k] then
        self.sizes[k] = k == 1 and 8 or math.min(2 * self.sizes[k - 1], 256)
        self.arrays[k] = Headers(self.sizes[k])  -- zero-filled
      end
      self.k, self.cur, self.size, n = k, self.arrays[k], self.sizes[k], 0
    end
    self.n = n + 1
    local m = self.cur[n]
    if self.rewound then ffi.fill(m, SZ) end  -- a header handed out before
    return m
  end
  function HeaderPool:rewind() self.k, self.n, self.size, self.cur, self.rewound = 0, 0, 0, false, true end
  function mf._header_pool()
    return setmetatable({arrays = {}, sizes = {}, k = 0, n = 0, size = 0, cur = false, rewound = false,
                         metas = {}, alias = {}}, HeaderPool)
  end

  -- Output headers and their lists: fresh ones, or (graph binding) from into, a header pool
  -- (mf._header_pool above; its metas/alias lists are reused).
  local function out_lists(into)
    if not into then return {}, {} end
    local metas, alias = into.metas, into.alias
    for i = #metas, 1, -1 do metas[i], alias[i] = nil, nil end
    return metas, alias
  end

  local function infer_native(op, rec, ins, nin, unknown, into)
    if nin > in_cap then in_cap = nin; in_ptrs = ffi.new('const mf_tensor *[?]', nin) end
    for i = 1, nin do in_ptrs[i - 1] = ins[i] end
    local st
    for _ = 1, 2 do
      if unknown then  -- graph building: sizes equal to unknown are not known yet (graph.lua)
        st = C.mf_op_infer_partial(op.index, rec.h, nin, in_ptrs, unknown, out_cap, meta_buf, alias_buf, nout_buf)
      else
        st = C.mf_op_infer(op.index, rec.h, nin, in_ptrs, out_cap, meta_buf, alias_buf, nout_buf)
      end
      -- more outputs than the buffers hold (unbind of 100 slices): nout_buf has the count; grow and retry
      if st ~= 0 or nout_buf[0] <= out_cap then break end
      out_cap = nout_buf[0]
      meta_buf, alias_buf = ffi.new('mf_tensor[?]', out_cap), ffi.new('int[?]', out_cap)
    end
    if st ~= 0 then raise(ffi.string(C.mf_last_error())) end
    if nout_buf[0] > out_cap then raise(('%s: its shape rule gave a changing output count'):format(op.name)) end
    local metas, alias = out_lists(into)
    for i = 1, nout_buf[0] do
      local m = into and into:meta() or T()
      ffi.copy(m, meta_buf[i - 1], SZ)
      m._owns, m._autograd = 0, 0  -- no autograd flag copied from an input (tape.lua)
      metas[i], alias[i] = m, alias_buf[i - 1] ~= 0
    end
    return metas, alias
  end

  -- Lua-registered ops with a Lua shape rule: function(in_shapes, p) -> {out_shape, ...} ('same' is native)
  local function infer_lua(op, rec, ins, nin, into)
    local in_shapes = {}
    for i = 1, nin do in_shapes[i] = ins[i]:size() end
    local ok, shapes = pcall(op.lua_infer, in_shapes, rec.p)
    if not ok then raise(('%s: infer_shape failed: %s'):format(op.name, tostring(shapes))) end
    if type(shapes) ~= 'table' or type(shapes[1]) ~= 'table' then
      raise(op.name .. ': infer_shape must return a list of output shapes, e.g. {{2, 3}}')
    end
    local dtype = nin > 0 and ins[1]._dtype_id or F32
    local device = nin > 0 and ins[1]._device_id or CPU
    local metas, alias = out_lists(into)
    for i, s in ipairs(shapes) do
      if type(s) ~= 'table' then
        raise(('%s: infer_shape gave output %d as a %s; expected a list of sizes'):format(op.name, i, type(s)))
      end
      if #s > MAX_DIMS then
        raise(('%s: infer_shape gave output %d with %d dims; at most %d are supported'):format(op.name, i, #s, MAX_DIMS))
      end
      -- a complete contiguous header: executors size and plan outputs by count and strides
      local m = into and into:meta() or T()
      m._ndim, m._dtype_id, m._device_id, m._is_contig, m._offset = #s, dtype, device, 1, 0
      local acc = 1
      for d = #s, 1, -1 do
        if type(s[d]) ~= 'number' or s[d] < 0 or s[d] ~= math.floor(s[d]) then
          raise(('%s: infer_shape gave output %d size %s at dim %d; expected a non-negative integer'):format(op.name, i, tostring(s[d]), d))
        end
        m._shape[d - 1], m._strides[d - 1] = s[d], acc
        acc = acc * math.max(s[d], 1)
      end
      local count = 1
      for d = 1, #s do count = count * s[d] end
      if count >= 2 ^ 53 then raise(('%s: infer_shape gave output %d with %.0f elements; too many'):format(op.name, i, count)) end
      m._count = count
      metas[i], alias[i] = m, false
    end
    return metas, alias
  end

  -- output metadata (shape, dtype, strides) and alias flags of op on inputs ins: eager and graph
  -- binding both come through here; unknown (graph building only) is the sentinel of unknown sizes;
  -- into (graph binding only): the header pool the outputs come from (out_lists above)
  function mf._infer(op, rec, ins, nin, unknown, into)
    if op.lua_infer then return infer_lua(op, rec, ins, nin, into) end
    if op.local_shape then raise(mf._local_rule_error(op, 'infer_shape')) end
    return infer_native(op, rec, ins, nin, unknown, into)
  end

  -- A Lua-registered op whose rule was given as a Lua function: that function lives in the engine
  -- (Lua state) that registered the op, so this engine cannot run it.
  function mf._local_rule_error(op, field)
    return ("%s: its %s was given to mf.register_op as a Lua function, which lives in the engine that "
      .. "registered it; to use the op in every engine of the process, register it with %s as a source "
      .. "string (like lua_compute)"):format(op.name, field, field)
  end

  -- binding ------------------------------------------------------------------------------------
  local function signature(ins, nin)
    local parts = {}
    for i = 1, nin do
      local t = ins[i]
      local s = {t._dtype_id, t._device_id, t._ndim}
      for d = 0, t._ndim - 1 do s[#s + 1] = tonumber(t._shape[d]) .. ':' .. tonumber(t._strides[d]) end
      parts[i] = table.concat(s, ',')
    end
    return table.concat(parts, '|')
  end

  -- Does slot s have t's layout? In C (mf_tensor_same_layout): in Lua, a field read per dim made it
  -- 19% of a small eager LeNet step's time (jit.p, 1 thread), most of it interpreted after the traces
  -- through it aborted (side traces from its many guards: 'register coalescing too complex')
  local same_layout_c = C.mf_tensor_same_layout
  local function same_slot(s, t) return same_layout_c(s, t) ~= 0 end

  -- Does the cached entry's slot layout match these inputs? (no allocation: the hot path)
  local function same_layout(e, ins, nin)
    if e.nin ~= nin then return false end
    local slots = e.ins
    -- straight-line to eight inputs (run_entry says why: momentum_update's four and adam_update's six
    -- made the loop past two abort root traces)
    if nin >= 1 and not same_slot(slots[1], ins[1]) then return false end
    if nin >= 2 and not same_slot(slots[2], ins[2]) then return false end
    if nin >= 3 then
      if not same_slot(slots[3], ins[3]) then return false end
      if nin >= 4 and not same_slot(slots[4], ins[4]) then return false end
      if nin >= 5 and not same_slot(slots[5], ins[5]) then return false end
      if nin >= 6 and not same_slot(slots[6], ins[6]) then return false end
      if nin >= 7 and not same_slot(slots[7], ins[7]) then return false end
      if nin >= 8 and not same_slot(slots[8], ins[8]) then return false end
      if nin >= 9 then
        for i = 9, nin do
          if not same_slot(slots[i], ins[i]) then return false end
        end
      end
    end
    return true
  end

  -- the factory of op's kernel string for a device's strings slot (K.strings), evaluated once per op
  local function factory_of(op, strings)
    local f = op.factories[strings]
    if f then return f end
    local src, label = op.src[strings], K.STRINGS[strings]
    if not src or src == '' then
      local how = bit.band(op.flags, OPF_LUA) ~= 0 and
        ("; register_op{lua_compute = {cpu = ..., %s = ...}} gives one, or move the inputs with :cpu()"):format(label) or ''
      raise(('%s: no %s kernel is registered%s'):format(op.name, label, how))
    end
    f = compile_kernel(op.name, label, src)
    stats.factories = stats.factories + 1
    op.factories[strings] = f
    return f
  end
  mf._factory, mf._compile_lua = factory_of, compile_kernel

  function mf.eager_stats()
    return {calls = stats.calls, binds = stats.binds, factories = stats.factories}
  end

  -- input k's name in messages (a closure made in device_of's loop compiled to UCLO, which LuaJIT's
  -- traces do not handle: every trace through an op's first bind aborted there)
  local function input_name(op, k) return op.variadic and ('input %d'):format(k) or op.inputs[k] end
  -- The device an op's inputs live on (the host for an op without inputs); inputs on two devices
  -- are an error naming both.
  local function device_of(op, ins, nin)
    local dev = nin > 0 and ins[1]._device_id or HOST
    for i = 2, nin do
      local d = ins[i]._device_id
      if d ~= dev then
        local n1, ni = K.device_name(dev), K.device_name(d)
        local cuda_cpu = (n1 == 'cpu' and ni == 'cuda') or (n1 == 'cuda' and ni == 'cpu')
        local how = cuda_cpu and ':cuda() or :cpu()' or ':to(...)'
        raise(('%s: %s is on %s, %s is on %s; move one with %s'):format(op.name, input_name(op, 1), n1, input_name(op, i),
          ni, how))
      end
    end
    return dev
  end

  local function bind(op, rec, ins, nin)
    stats.binds = stats.binds + 1
    local Kd = K.of_device(device_of(op, ins, nin))
    local metas, alias = mf._infer(op, rec, ins, nin)
    -- copy_in and held are present from the start (false): a lookup of a missing key costs the
    -- compiled hot path a hash probe and measurably slowed every eager call
    -- K: the kernel table of the inputs' device, picked once per entry
    local e = {nin = nin, nout = #metas, ins = {}, outs = {}, metas = metas, alias = alias, run = false,
               copy_in = false, held = false, K = Kd, self_out = false}
    -- an op that writes its input 1 and returns all of it (copy, fill, assign, the optimizer
    -- updates) returns that tensor itself, as PyTorch's in-place ops return self: no new header
    if bit.band(op.flags, OPF_WRITES) ~= 0 and alias[1] and nin > 0 then
      local m, x = metas[1], ins[1]
      local same = m._ndim == x._ndim and m._offset == 0 and m._dtype_id == x._dtype_id
      for d = 0, m._ndim - 1 do
        if m._shape[d] ~= x._shape[d] or m._strides[d] ~= x._strides[d] then same = false end
      end
      e.self_out = same
    end
    for i = 1, nin do
      local s = T()
      ffi.copy(s, ins[i], SZ)  -- the whole header once; run_entry sets what differs per call
      s._owns, s._autograd = 0, 0  -- a borrowed header, with no autograd state of its own
      e.ins[i] = s
      -- the kernel layout contract: a kernel that does not take strides gets a contiguous copy
      -- of a non-contiguous input (entries are per layout, so this is decided once)
      if not op.strided and ins[i]._is_contig ~= 1 then
        e.copy_in = e.copy_in or {}
        e.held = e.held or {}  -- the copies of one call, kept alive until its kernel has run
        e.copy_in[#e.copy_in + 1] = i
      end
    end
    for i = 1, e.nout do
      local s = T()
      ffi.copy(s, metas[i], SZ)
      s._owns = 0
      e.outs[i] = s
    end
    return e
  end

  -- dst (out=, call_out below): a list whose item i, when a tensor, receives output i instead of a new one
  -- run_entry's output i of several, before the run: a fresh (or the given) tensor's storage in its slot;
  -- results (made on first need) holds it
  local function fresh_out(e, op, dst, outs, i, results)
    if e.alias[i] then return results end
    local t = dst and dst[i] or mf._new_like_meta(e.metas[i], op.name)
    local o = outs[i]
    o._ptr, o._store = t._ptr, t._store
    results = results or {}
    results[i] = t
    return results
  end
  -- after the run: a view output i as a tensor of its own (input 1 itself for a self_out op)
  local function view_out(e, ins, outs, i, results)
    if not e.alias[i] then return results end
    local t
    if i == 1 and e.self_out then
      t = ins[1]
    else
      t = T()
      C.mf_tensor_share(t, outs[i])
    end
    results = results or {}
    results[i] = t
    return results
  end

  -- run_entry's rebinding of slot i to input i
  local function bind_slot(slots, ins, i)
    local s, t = slots[i], ins[i]
    s._ptr, s._offset, s._store = t._ptr, t._offset, t._store
  end
  local function run_entry(op, rec, e, ins, nin, dst)
    local slots, outs = e.ins, e.outs
    -- an entry serves one layout (same_layout, signature: dtype, device, shape, strides), so of a slot's
    -- header only where the data lies changes from call to call: three stores, not a 184-byte copy.
    -- Straight-line code for the first eight inputs, a loop only past them: a loop of one or two turns
    -- run by the interpreter becomes hot, its root traces leave it at once and abort, and LuaJIT then
    -- blacklists it, which aborts every trace that reaches it (each op call of a user's loop then runs
    -- interpreted: 64 KB fill 0.36 -> 1.0 us, copy 0.57 -> 1.8 us after a dozen other ops had run;
    -- the loop past three inputs did it for momentum_update's four and adam_update's six)
    if nin >= 1 then
      bind_slot(slots, ins, 1)
      if nin >= 2 then bind_slot(slots, ins, 2) end
      if nin >= 3 then bind_slot(slots, ins, 3) end
      if nin >= 4 then
        bind_slot(slots, ins, 4)
        if nin >= 5 then bind_slot(slots, ins, 5) end
        if nin >= 6 then bind_slot(slots, ins, 6) end
        if nin >= 7 then bind_slot(slots, ins, 7) end
        if nin >= 8 then bind_slot(slots, ins, 8) end
        for i = 9, nin do bind_slot(slots, ins, i) end
      end
    end
    local copy_in = e.copy_in
    if copy_in then  -- contiguous copies of views, held by the entry until the kernel has run
      local held = e.held
      for k = 1, #copy_in do
        local i = copy_in[k]
        local t = mf._new_like_meta(ins[i], op.name)
        e.K.copy(t, ins[i])
        ffi.copy(slots[i], t, SZ)
        slots[i]._owns = 0
        held[k] = t
      end
    end
    local nout = e.nout
    local r1, results
    if nout == 1 then  -- the common case without a loop (see above)
      if not e.alias[1] then
        r1 = dst and dst[1] or mf._new_like_meta(e.metas[1], op.name)
        local o = outs[1]  -- bound from metas[1]: a fresh tensor of it differs in its storage only
        o._ptr, o._store = r1._ptr, r1._store
      end
    else  -- several: the first two straight-line (a loop of two turns started root traces that left it: ppos_walk)
      if nout >= 2 then
        results = fresh_out(e, op, dst, outs, 1, results)
        results = fresh_out(e, op, dst, outs, 2, results)
      end
      if nout >= 3 then  -- straight-line to four as well (split and chunk in three or four)
        results = fresh_out(e, op, dst, outs, 3, results)
        if nout >= 4 then results = fresh_out(e, op, dst, outs, 4, results) end
        if nout >= 5 then
          for i = 5, nout do results = fresh_out(e, op, dst, outs, i, results) end
        end
      end
    end
    local run = e.run
    if not run then  -- first use: the factory sees real shapes and storage
      local Kd = e.K
      local ok, res = pcall(factory_of(op, Kd.strings), slots, outs, rec.p, Kd)
      if not ok then raise(('%s: kernel factory failed: %s'):format(op.name, tostring(res))) end
      if type(res) ~= 'function' then raise(op.name .. ': kernel factory must return the run closure') end
      run = res
      e.run = run
    end
    run()
    if copy_in then for k = 1, #copy_in do e.held[k] = nil end end
    if nout == 1 then
      if e.alias[1] then
        if e.self_out then
          r1 = ins[1]
        else
          r1 = T()
          C.mf_tensor_share(r1, outs[1])
        end
      end
    elseif nout >= 2 then
      results = view_out(e, ins, outs, 1, results)
      results = view_out(e, ins, outs, 2, results)
      if nout >= 3 then  -- straight-line to four (split or chunk in three or four: see all_tensors)
        results = view_out(e, ins, outs, 3, results)
        if nout >= 4 then results = view_out(e, ins, outs, 4, results) end
        if nout >= 5 then
          for i = 5, nout do results = view_out(e, ins, outs, i, results) end
        end
      end
    end
    if op.multi then
      if nout == 1 then return {r1} end
      return results or {}  -- no outputs (unbind of an empty dim): an empty list, as PyTorch's ()
    end
    if nout == 1 then return r1 end
    if nout == 0 then return end
    return unpack(results, 1, nout)
  end

  -- The entry for inputs that miss rec.last (e, or nil): one of the entries used before it (a training step
  -- calls matmul with one params record in three or four layouts in turn, sum_to in six), else the one for
  -- the inputs' signature (a string, built only here), bound on first use. Only a call that misses last
  -- comes here: workload (a) always hits it
  local function find_entry(op, rec, ins, nin, e)
    local recent, found = rec.recent, nil
    for k = 1, #recent do
      local ek = recent[k]
      if same_layout(ek, ins, nin) then
        recent[k], found = e, ek
        break
      end
    end
    if found then
      e = found
    else
      local sig = signature(ins, nin)
      if e then
        local k = rec.rpos % 8 + 1
        recent[k], rec.rpos = e, k
      end
      e = rec.entries[sig]
      if not e then
        e = bind(op, rec, ins, nin)
        if rec.nentries >= 64 then rec.entries, rec.nentries, rec.recent, rec.rpos = {}, 0, {}, 0 end
        rec.entries[sig] = e
        rec.nentries = rec.nentries + 1
      end
    end
    rec.last = e
    return e
  end

  -- Whether any of ins[1..nin] has autograd state (tape.lua's write path asks too). Straight-line to
  -- eight (run_entry says why: the loop it was aborted root traces for where's and addmm's three
  -- inputs, 3 runs of 12 of test_jit_paths on a loaded machine, and tape.lua's for the optimizer updates)
  local function any_autograd(ins, nin)
    if nin >= 1 and ins[1]._autograd ~= 0 then return true end
    if nin >= 2 and ins[2]._autograd ~= 0 then return true end
    if nin >= 3 and ins[3]._autograd ~= 0 then return true end
    if nin >= 4 then
      if ins[4]._autograd ~= 0 then return true end
      if nin >= 5 and ins[5]._autograd ~= 0 then return true end
      if nin >= 6 and ins[6]._autograd ~= 0 then return true end
      if nin >= 7 and ins[7]._autograd ~= 0 then return true end
      if nin >= 8 and ins[8]._autograd ~= 0 then return true end
      for i = 9, nin do if ins[i]._autograd ~= 0 then return true end end
    end
    return false
  end
  mf._any_autograd = any_autograd

  -- The eager path of every op: ins is a list of tensors (scalars already converted).
  local interrupt = C.mf_interrupt_flag()
  local function tape_call(...) return mf._tape_call(...) end
  local call_rec
  local function call(op, ins, nin, ptable, exact)
    local rec = op.default
    if ptable then rec = params_record(op, ptable, exact) elseif not rec then rec = params_record(op, nil); op.default = rec end
    return call_rec(op, rec, ins, nin)
  end
  -- the same with the params record found (make_function's positional path)
  function call_rec(op, rec, ins, nin)
    stats.calls = stats.calls + 1
    if interrupt[0] ~= 0 then  -- Ctrl-C in the REPL (a load: free on the hot path)
      interrupt[0] = 0
      raise('interrupted')  -- blames the user's line
    end
    local e = rec.last
    if not (e and same_layout(e, ins, nin)) then e = find_entry(op, rec, ins, nin, e) end
    -- autograd (tape.lua): autograd ~= 0 flags a tensor that may have autograd state, and a write op
    -- bumps its target's version counter; a call on plain tensors pays these field tests only
    if op.writes then
      -- a write on plain tensors (copy, fill: two inputs, one written, one output) runs here and counts
      -- its write as tape.lua's write path does (after the kernel: a failed op wrote nothing);
      -- any other write goes through the tape, which also checks what grad mode forbids
      if nin == 2 and op.num_written == 1 and e.nout == 1 and ins[1]._autograd == 0 and ins[2]._autograd == 0 then
        local r = run_entry(op, rec, e, ins, nin)
        C.mf_storage_bump(ins[1], op.index)
        return r
      end
      return tape_call(op, rec, e, ins, nin, run_entry)
    end
    -- one and two inputs unrolled: a loop here would be an inner loop in the caller's trace, and
    -- LuaJIT would leave the trace for it on every call (workload (a) was 1.3x slower)
    if nin == 2 then
      if ins[1]._autograd ~= 0 or ins[2]._autograd ~= 0 then return tape_call(op, rec, e, ins, nin, run_entry) end
    elseif nin == 1 then
      if ins[1]._autograd ~= 0 then return tape_call(op, rec, e, ins, nin, run_entry) end
    elseif nin >= 3 and any_autograd(ins, nin) then
      return tape_call(op, rec, e, ins, nin, run_entry)
    end
    return run_entry(op, rec, e, ins, nin)
  end

  -- out= (PyTorch's): op(..., {out = t}) computes into t instead of a new tensor and returns t (a list of
  -- tensors for an op of several outputs, returned as the op returns them), so a loop can reuse one
  -- buffer instead of writing each result into fresh memory. t must have the result's shape, dtype and
  -- device. A contiguous t that shares no storage with an input is the kernel's output itself; any other
  -- (a view with other strides, or memory an input reads) gets the result through a copy after the
  -- kernel has run, so the inputs are read whole first. Not for views (reshape, narrow ...: their result
  -- is the input's memory) nor in-place ops (add_ ...), and not recorded by the tape: in grad mode, an
  -- input or t that requires grad is an error. Counts a write of t (tape.lua's versions).
  local function out_list(op, dst, nout)
    local one = is_tensor(dst)
    if one and nout == 1 then return {dst} end
    if one or type(dst) ~= 'table' or getmetatable(dst) ~= nil or #dst ~= nout then
      raise(('%s: out= takes %s; got %s'):format(op.name, nout == 1 and 'a tensor' or
        ('a list of %d tensors (one per output)'):format(nout), one and 'one tensor' or
        type(dst) == 'table' and ('a table of %d items'):format(#dst) or type(dst)))
    end
    return dst
  end
  -- out= given alone in a trailing table ({out = t}, nothing else, no metatable): t, else nil. Every
  -- fast path asks this before taking out= (a table with more in it goes to the general path)
  local function out_alone(v)
    if type(v) == 'table' and v.out ~= nil and getmetatable(v) == nil and next(v) == 'out'
        and next(v, 'out') == nil then
      return v.out
    end
  end
  local dst1 = {}  -- call_out's one-output list (set just before each use)
  local call_out_rec
  local function call_out(op, ins, nin, ptable, exact, dst)
    local rec = ptable and params_record(op, ptable, exact) or op.default
    if not rec then rec = params_record(op, nil); op.default = rec end
    return call_out_rec(op, rec, ins, nin, dst)
  end
  -- the same with the params record found (make_function's positional path: mf.cast(x, 'float64', {out = o}))
  function call_out_rec(op, rec, ins, nin, dst)
    stats.calls = stats.calls + 1
    if interrupt[0] ~= 0 then interrupt[0] = 0; raise('interrupted') end
    if op.writes then
      raise(('%s: writes its input in place; out= is for ops that compute a new result'):format(op.name))
    end
    local e = rec.last
    if not (e and same_layout(e, ins, nin)) then e = find_entry(op, rec, ins, nin, e) end
    local nout = e.nout
    -- the common case straight-line (no loop of one or two turns for LuaJIT to abort its trace on): one
    -- output into a contiguous tensor of its size that shares no memory with the inputs, no autograd
    -- flags; anything else takes the general code below, which also names what is wrong
    if nout == 1 and nin <= 2 and not op.multi and is_tensor(dst) and not e.alias[1] then
      local t, m = dst, e.metas[1]
      local ok = t._is_contig == 1 and t._autograd == 0 and t._dtype_id == m._dtype_id
        and t._device_id == m._device_id and t._ndim == m._ndim
        and ffi.C.memcmp(t._shape, m._shape, 8 * m._ndim) == 0
      if ok and nin >= 1 then ok = ins[1]._autograd == 0 and ins[1]._store ~= t._store end
      if ok and nin == 2 then ok = ins[2]._autograd == 0 and ins[2]._store ~= t._store end
      if ok then
        dst1[1] = t
        run_entry(op, rec, e, ins, nin, dst1)
        dst1[1] = nil
        C.mf_storage_bump(t, op.index)
        return t
      end
    end
    if nout == 0 then raise(('%s: has no output for out= to receive'):format(op.name)) end
    dst = out_list(op, dst, nout)
    local direct = {}
    local flagged = false
    for i = 1, nin do if ins[i]._autograd ~= 0 then flagged = true end end
    for i = 1, nout do
      local t, m = dst[i], e.metas[i]
      if not is_tensor(t) then raise(('%s: out item %d is a %s; expected a tensor'):format(op.name, i, type(t))) end
      if e.alias[i] then
        raise(('%s: returns a view of its input (no new memory), so out= does not apply; write it with '
          .. 'out:copy(...) instead'):format(op.name))
      end
      if t._dtype_id ~= m._dtype_id or t._device_id ~= m._device_id then
        raise(('%s: out%s is %s on %s; the result is %s on %s'):format(op.name, nout > 1 and ' item ' .. i or '',
          methods.dtype(t), K.device_name(t._device_id), methods.dtype(m), K.device_name(m._device_id)))
      end
      local same = t._ndim == m._ndim
      for d = 0, m._ndim - 1 do if t._shape[d] ~= m._shape[d] then same = false end end
      if not same then
        raise(('%s: out%s has size %s; the result has size %s'):format(op.name, nout > 1 and ' item ' .. i or '',
          methods.shape_str(t), methods.shape_str(m)))
      end
      for d = 0, t._ndim - 1 do
        if t._strides[d] == 0 and t._shape[d] > 1 then
          raise(('%s: out%s is expanded (dim %d repeats one element), so it cannot be written; give a tensor '
            .. 'of its own (out:contiguous())'):format(op.name, nout > 1 and ' item ' .. i or '', d + 1))
        end
      end
      local shared = false
      for j = 1, i - 1 do  -- views of one tensor (its columns, say) go through copies
        if dst[j]._store == t._store and t._count > 0 then
          if dst[j]._ptr == t._ptr then
            raise(('%s: out items %d and %d are the same memory; each output needs its own'):format(op.name, j, i))
          end
          shared, direct[j] = true, false
        end
      end
      for k = 1, nin do if ins[k]._store == t._store then shared = true end end
      direct[i] = t._is_contig == 1 and not shared and t
      if t._autograd ~= 0 then flagged = true end
    end
    if flagged then mf._check_out(op, ins, nin, dst, nout) end
    local results = {run_entry(op, rec, e, ins, nin, direct)}
    if op.multi then results = results[1] end
    for i = 1, nout do
      if direct[i] then C.mf_storage_bump(dst[i], op.index)
      else methods.copy(dst[i], results[i]) end  -- a strided or overlapping out: copy counts its write
    end
    if op.multi then return dst end
    return unpack(dst, 1, nout)
  end

  -- argument adapters: Lua call syntax -> (input tensors, params table) -----------------------
  -- Integer dtypes: [lo, hi) of the values a number converted into them must lie in.
  local INT_RANGE = {[I32] = {-2 ^ 31, 2 ^ 31, 'int32', '-2147483648..2147483647'},
                     [I64] = {-2 ^ 63, 2 ^ 63, 'int64', '-2^63..2^63-1'}, [U8] = {0, 256, 'uint8', '0..255'}}
  -- a number operand becomes a 0-dim tensor of like_dtype (chosen by number_operands below); one
  -- that does not fit an integer dtype is an error, never a wrapped value
  local function as_tensor(v, like_dtype, op, i, device)
    if is_tensor(v) then return v end
    if type(v) == 'number' or type(v) == 'boolean' then
      if type(v) == 'boolean' then v = v and 1 or 0 end
      local r = INT_RANGE[like_dtype]
      if r and not (v % 1 == 0 and v >= r[1] and v < r[2]) then
        local what = ('%s: the number %s (input %d, %s)'):format(op.name, tostring(v), i, op.inputs[i] or op.inputs[1] or '?')
        if v % 1 ~= 0 then  -- only ops that write their integer inputs get here (number_operands)
          raise(('%s is not an integer; the %s it is written into holds integers only'):format(what, r[3]))
        end
        raise(('%s does not fit %s, the dtype of the other operands (%s)'):format(what, r[3], r[4]))
      end
      local t = mf._new_tensor({}, like_dtype, device)
      K.of_device(device).fill(t, v)
      return t
    end
    raise(('%s: input %d (%s) is a %s; expected a tensor or a number'):format(op.name, i,
      op.inputs[i] or op.inputs[1] or '?', type(v)))
  end

  local function is_options(v) return type(v) == 'table' and not is_tensor(v) and not mf.is_symbol(v) end
  -- symbols (graph mode, lua/moonflow/graph.lua) are tables with the Symbol metatable
  local function is_sym(x) return type(x) == 'table' and mf.is_symbol(x) end
  -- an nn.Parameter or buffer (lua/moonflow/nn.lua) stands for its tensor, or its graph Variable
  local function is_holder(x) return type(x) == 'table' and rawget(x, '_data') ~= nil end

  -- the device of the first tensor among ins[1..nin] (the host when none is): numbers become
  -- tensors there
  local function operands_device(ins, nin)
    for i = 1, nin do
      if is_tensor(ins[i]) then return ins[i]._device_id end
    end
    return HOST
  end

  -- Lua numbers among an op's inputs, PyTorch's rule for Python scalars. A number takes the dtype
  -- of the first tensor (or symbol) operand, passing over the op's mask input (mask_input in its
  -- block: where's uint8 cond), or float32, the default dtype, when there is none. A number with a fractional part (or
  -- NaN, inf) among integer operands makes the op compute in float32: those operands are cast to
  -- float32 first (int64 {1, 2} + 0.5 is float32 {1.5, 2.5}; lt(int64 1, 1.5) is true). Tensors
  -- of different dtypes are left to the op's type rule (an error naming both).
  -- Converts ins[1..nin] in place and returns it.
  local function number_operands(op, ins, nin)
    local like, frac
    for i = 1, nin do
      local x = ins[i]
      if type(x) == 'number' then
        if x % 1 ~= 0 then frac = true end  -- NaN and inf too: x % 1 is NaN
      elseif like == nil and i ~= op.mask_input and (is_tensor(x) or is_sym(x)) then
        like = x._dtype_id
      end
    end
    like = like or F32
    -- an op that writes its inputs (assign_add) must write them, not float copies: no promotion,
    -- so a fractional number for an integer variable is an error (as_tensor)
    if frac and INT_RANGE[like] and bit.band(op.flags or 0, OPF_WRITES) == 0 then
      like = F32
      for i = 1, nin do
        local x = ins[i]
        if i ~= op.mask_input and (is_tensor(x) or is_sym(x)) and INT_RANGE[x._dtype_id] then
          ins[i] = mf.cast(x, 'float32')
        end
      end
    end
    local device = operands_device(ins, nin)
    for i = 1, nin do
      local x = ins[i]
      if not is_tensor(x) and not is_sym(x) then ins[i] = as_tensor(x, like, op, i, device) end
    end
    return ins
  end
  mf._number_operands = number_operands  -- graph mode (graph.lua) converts numbers the same way

  -- true when ins[1..nin] are all tensors: the general path then skips its loops over them (holders,
  -- symbols, holes, numbers). Straight-line for four (ppos_walk says why: those loops of one or two turns
  -- on every call started root traces of their own that left them)
  local function all_tensors(ins, nin)
    if nin >= 1 and not is_tensor(ins[1]) then return false end
    if nin >= 2 and not is_tensor(ins[2]) then return false end
    if nin >= 3 and not is_tensor(ins[3]) then return false end
    if nin >= 4 and not is_tensor(ins[4]) then return false end
    if nin >= 5 then  -- adam_update's six: a loop of two turns per call aborted as above
      if not is_tensor(ins[5]) then return false end
      if nin >= 6 and not is_tensor(ins[6]) then return false end
      if nin >= 7 and not is_tensor(ins[7]) then return false end
      if nin >= 8 and not is_tensor(ins[8]) then return false end
      for i = 9, nin do
        if not is_tensor(ins[i]) then return false end
      end
    end
    return true
  end

  -- default_adapter's argument i of n (after nin inputs): a trailing {name = value} table's params, or
  -- the next declared param's positional value (param i - nin; a nil skips it). Returns ptable, named.
  local function default_arg(op, args, i, n, nin, ptable, named)
    local v = args[i]
    if i == n and is_options(v) and type(next(v)) == 'string' then  -- trailing {name = value} params
      ptable, named = ptable or {}, true
      for k, x in pairs(v) do ptable[k] = x end  -- pairs: next straight-line crashed this LuaJIT (fast_walk)
    elseif v ~= nil then
      local name = op.param_list[i - nin]
      if not name then
        raise(('%s: too many arguments (%d); it takes %d input%s and params %s'):format(op.name, n, nin,
          nin == 1 and '' or 's', #op.param_list > 0 and table.concat(op.param_list, ', ') or '(none)'))
      end
      ptable = ptable or {}
      ptable[name] = v
    end
    return ptable, named
  end

  -- Default adapter: inputs first, then params positionally in declared order, then an optional
  -- table of named params. Each adapter returns the inputs, the params table and whether that table
  -- holds declared param names only (no named table given: fast_walk's exact).
  local function default_adapter(op, ...)
    local n = select('#', ...)
    local args = pack_args(n, ...)  -- not {...} (tensor.lua's pack_args says why)
    local nin = #op.inputs
    local ins = {}
    if op.variadic then
      local list = args[1]
      if not is_options(list) then raise(op.name .. ': expected a list of tensors as the first argument') end
      local len = table.maxn(list)  -- {a, nil, b}: # may stop at the hole, or count past it
      for i = 1, len do
        if list[i] == nil then
          raise(('%s: item %d of the list of tensors is nil (items up to %d are given)'):format(op.name, i, len))
        end
        ins[i] = list[i]
      end
      nin = 1
    else  -- straight-line for four inputs, then the first three arguments after them (ppos_walk says why)
      if nin >= 1 then ins[1] = args[1] end
      if nin >= 2 then ins[2] = args[2] end
      if nin >= 3 then ins[3] = args[3] end
      if nin >= 4 then ins[4] = args[4] end
      if nin >= 5 then  -- and on to eight (adam_update takes six: see all_tensors)
        ins[5] = args[5]
        if nin >= 6 then ins[6] = args[6] end
        if nin >= 7 then ins[7] = args[7] end
        if nin >= 8 then ins[8] = args[8] end
        for i = 9, nin do ins[i] = args[i] end
      end
    end
    local ptable, named
    if n > nin then ptable, named = default_arg(op, args, nin + 1, n, nin, nil, false) end
    if n > nin + 1 then ptable, named = default_arg(op, args, nin + 2, n, nin, ptable, named) end
    if n > nin + 2 then ptable, named = default_arg(op, args, nin + 3, n, nin, ptable, named) end
    for i = nin + 4, n do ptable, named = default_arg(op, args, i, n, nin, ptable, named) end
    return ins, ptable, not named
  end

  -- args[i], args[i + 1], ... while they are numbers, appended to list; returns the index past them.
  -- Straight-line for MAX_DIMS of them (more are refused later, as too many dims): the loop this was
  -- (zeros(16384): one turn per call) started root traces of its own that left it, LuaJIT blacklisted
  -- it after some ten such aborts, and then every trace through it aborted too: each call ran
  -- interpreted, zeros(16384) 9.5 us instead of 2.4 (1 thread, 2026-11-27), from one run to the next
  -- as LuaJIT's hot counters happened to fall
  local function take_numbers(args, i, list)
    local a = args[i]; if type(a) ~= 'number' then return i end; list[1] = a
    a = args[i + 1]; if type(a) ~= 'number' then return i + 1 end; list[2] = a
    a = args[i + 2]; if type(a) ~= 'number' then return i + 2 end; list[3] = a
    a = args[i + 3]; if type(a) ~= 'number' then return i + 3 end; list[4] = a
    a = args[i + 4]; if type(a) ~= 'number' then return i + 4 end; list[5] = a
    a = args[i + 5]; if type(a) ~= 'number' then return i + 5 end; list[6] = a
    a = args[i + 6]; if type(a) ~= 'number' then return i + 6 end; list[7] = a
    a = args[i + 7]; if type(a) ~= 'number' then return i + 7 end; list[8] = a
    i = i + 8
    while type(args[i]) == 'number' do
      list[#list + 1] = args[i]
      i = i + 1
    end
    return i
  end

  -- MF_OPF_LIST_ARGS: the leading integer-list param may also be given as separate numbers after
  -- the inputs (reshape(x, 2, 3), zeros(2, 3)); other params come in a trailing table
  local function list_adapter(op, ...)
    local n = select('#', ...)
    local args = pack_args(n, ...)
    local ninputs, field = #op.inputs, op.param_list[1]
    local ins = {}
    for i = 1, ninputs do ins[i] = args[i] end
    local list, ptable, named = {}, {}, false
    local i = ninputs + 1
    if is_options(args[i]) and args[i][1] ~= nil or (is_options(args[i]) and next(args[i]) == nil) then
      list = args[i]
      i = i + 1
    else
      i = take_numbers(args, i, list)
    end
    ptable[field] = list
    for j = i, n do
      if is_options(args[j]) then
        named = true
        for k, v in pairs(args[j]) do ptable[k] = v end
      elseif args[j] == nil then  -- zeros(2, nil, 3): a hole, not the end of the sizes (a trailing nil is)
        for k = j + 1, n do
          if args[k] ~= nil then
            raise(('%s: argument %d is nil; expected a number (an entry of %s) or a table of params'):format(op.name, j, field))
          end
        end
      else
        raise(('%s: unexpected argument %d (%s); pass other params in a table, e.g. {dtype = "float64"}'):format(op.name, j, tostring(args[j])))
      end
    end
    return ins, ptable, not named
  end

  -- MF_OPF_DIM_FIRST (the block's dim_first()): PyTorch's order x:gather(dim, index), x:scatter(dim,
  -- index, src) beside the default's mf.gather(x, index[, dim]); a trailing table of named params
  -- works with either. A number second argument followed by exactly the other inputs is PyTorch's
  -- order (in the default order argument 2 is an input). make_function's positional path takes the
  -- common calls of both orders without coming here.
  local function dim_first_adapter(op, ...)
    local n, nin, pname = select('#', ...), #op.inputs, op.param_list[1]
    local args = pack_args(n, ...)
    local p = {}
    local last = args[n]
    if n > 0 and is_options(last) and not is_holder(last) then
      for k, v in pairs(last) do p[k] = v end
      n = n - 1
    end
    local ins = {args[1]}
    if type(args[2]) == 'number' and n == nin + 1 then
      p[pname] = args[2]
      for i = 2, nin do ins[i] = args[i + 1] end
    else
      for i = 2, nin do ins[i] = args[i] end
      if n > nin + 1 then
        local rest = table.concat(op.inputs, ', ', 2)
        raise(('%s: too many arguments (%d); call it as %s(x, %s, %s) or mf.%s(x, %s, %s)'):format(op.name, n,
          op.name, pname, rest, op.name, rest, pname))
      end
      if n == nin + 1 then p[pname] = args[n] end
    end
    return ins, next(p) ~= nil and p or nil
  end

  -- op records and functions -------------------------------------------------------------------
  local function make_function(op)
    local adapter = op.adapter or (op.list_args and list_adapter) or (op.dim_first and dim_first_adapter)
      or default_adapter
    local nin_fixed = #op.inputs
    -- a binary op with one param (add's alpha) keeps the fast path for calls that leave it out
    local fast2 = not op.variadic and nin_fixed == 2 and #op.param_list <= 1 and adapter == default_adapter
    local fast1 = not op.variadic and nin_fixed == 1 and #op.param_list == 0 and adapter == default_adapter
    local pair, one = {}, {}
    local function clear1(...) one[1] = nil; return ... end
    local function clear2(...) pair[1], pair[2] = nil, nil; return ... end
    local f
    if fast2 then
      -- binary ops called without params: no varargs, no tables on the common path
      f = function(a, b, extra)
        if extra ~= nil then
          local dst = is_tensor(a) and is_tensor(b) and out_alone(extra)
          if dst then  -- mf.add(a, b, {out = c}): nothing else in the table
            pair[1], pair[2] = a, b
            return clear2(call_out(op, pair, 2, nil, nil, dst))  -- every output (several: a list given)
          end
          if #op.param_list == 0 and not (type(extra) == 'table' and extra.out ~= nil) then
            raise(op.name .. ': takes 2 inputs and no params (a table may give out = t)')
          end
          return op.general(a, b, extra)
        end
        local ta, tb = is_tensor(a), is_tensor(b)
        if (not ta and is_holder(a)) or (not tb and is_holder(b)) then
          pair[1], pair[2] = a, b
          mf._holder_operands(pair, 2)
          a, b = pair[1], pair[2]
          pair[1], pair[2] = nil, nil
          ta, tb = is_tensor(a), is_tensor(b)
        end
        if (not ta and is_sym(a)) or (not tb and is_sym(b)) then return mf._graph_call(op, {a, b}, 2, nil) end
        if not tb and ta and not INT_RANGE[a._dtype_id] then  -- float tensor and number: its dtype
          b = as_tensor(b, a._dtype_id, op, 2, a._device_id)
        elseif not ta and tb and not INT_RANGE[b._dtype_id] then
          a = as_tensor(a, b._dtype_id, op, 1, b._device_id)
        elseif not (ta and tb) then
          pair[1], pair[2] = a, b
          number_operands(op, pair, 2)
          a, b = pair[1], pair[2]
        end
        pair[1], pair[2] = a, b
        local r = call(op, pair, 2, nil)
        pair[1], pair[2] = nil, nil
        return r
      end
    elseif fast1 then
      f = function(a, extra)
        if extra ~= nil then
          if type(extra) == 'table' and extra.out ~= nil then  -- x:abs({out = y}): nothing else in the table
            local dst = is_tensor(a) and out_alone(extra)
            if dst then
              one[1] = a
              return clear1(call_out(op, one, 1, nil, nil, dst))  -- every output (several: a list given)
            end
            return op.general(a, extra)
          end
          raise(op.name .. ': takes 1 input and no params (a table may give out = t)')
        end
        if not is_tensor(a) then
          if is_holder(a) then
            one[1] = a
            a = mf._holder_operands(one, 1)[1]
            one[1] = nil
          end
          if is_sym(a) then return mf._graph_call(op, {a}, 1, nil) end
          a = as_tensor(a, 0, op, 1, HOST)
        end
        one[1] = a
        local r = call(op, one, 1, nil)
        one[1] = nil
        return r
      end
    end
    local general
    do
      general = function(...)
        local ins, ptable, exact = adapter(op, ...)
        local dst = ptable and not op.param_kind.out and ptable.out or nil  -- out= (call_out); nil, never false
        local nin = op.variadic and #ins or nin_fixed
        if op.variadic and nin == 0 then raise(op.name .. ': needs at least one tensor') end
        if not all_tensors(ins, nin) then
          for i = 1, nin do
            if is_holder(ins[i]) then mf._holder_operands(ins, nin) break end
          end
          for i = 1, nin do
            if is_sym(ins[i]) then
              if dst ~= nil then raise(op.name .. ': out= is for eager calls; a graph computes into its own buffers') end
              return mf._graph_call(op, ins, nin, ptable)
            end
          end
          for i = 1, nin do
            if ins[i] == nil then
              raise(('%s: input %d (%s) is missing'):format(op.name, i, op.inputs[i] or op.inputs[1]))
            end
          end
          number_operands(op, ins, nin)  -- numbers become tensors of the operands' dtype
        end
        local rg = ptable and ptable.requires_grad
        if rg ~= nil and op.param_kind.requires_grad then rg = nil end
        local dev = ptable and ptable.device  -- zeros(2, 3, {device = 'cuda'}): made, then moved there
        if dev ~= nil and op.param_kind.device then dev = nil end
        if dst ~= nil then
          if rg ~= nil or dev ~= nil then
            raise(op.name .. ': out= takes no requires_grad or device option (the out tensor fixes its device; '
              .. 'out= results are not recorded)')
          end
          local pt = {}
          for k, v in pairs(ptable) do if k ~= 'out' then pt[k] = v end end
          return call_out(op, ins, nin, next(pt) ~= nil and pt or nil, exact, dst)
        end
        if rg ~= nil or dev ~= nil then  -- zeros(2, 3, {requires_grad = true})
          if dev ~= nil then K.find_device(dev, op.name) end  -- an unknown or absent device fails first
          local pt = {}
          for k, v in pairs(ptable) do
            if (k ~= 'requires_grad' or rg == nil) and (k ~= 'device' or dev == nil) then pt[k] = v end
          end
          local r = call(op, ins, nin, next(pt) ~= nil and pt or nil)
          if dev ~= nil then r = mf.no_grad(methods.to, r, dev) end
          return rg ~= nil and methods.requires_grad_(r, rg) or r
        end
        return call(op, ins, nin, ptable, exact)
      end
      op.general = general  -- fast2's path for calls that give params, fast1's for out=
      f = f or general
    end
    -- Calls with tensor inputs and params given positionally (mf.matmul(a, b, false, true), mf.sum(x, 2, true))
    -- or as one trailing table ({momentum = 0.9}): no varargs and no tables made (the general path builds
    -- three per call, and its adapter's loop kept LuaJIT compiling side traces without end in a training step).
    -- op.ppos finds the record from the positional values, a tree as fast_walk's (nil: NONE, a list of numbers:
    -- LIST, its length, its items; the record under REC), grown from the general path's record for those values,
    -- so both paths share records and the first call validates. A list_args op's list comes as one table or as
    -- numbers (x:permute{2, 1}, x:expand(4, 3)): both find one branch, op.ppos[1]. Anything else (numbers or
    -- holders as inputs, a table after positional params, requires_grad or device in the table, too many
    -- arguments, a list_args op's named params) takes the general path. A dim_first op's PyTorch order
    -- (x:scatter(dim, index, src): a number second, then exactly the other inputs) is moved into the
    -- default order here (dim_first_adapter's rule).
    local npar = #op.param_list
    local dim_first, list_args = adapter == dim_first_adapter, adapter == list_adapter
    if f == general and not op.variadic and (adapter == default_adapter or list_args or (dim_first and nin_fixed <= 3))
        and nin_fixed >= 1 and nin_fixed <= 4 and npar >= 1 and nin_fixed + npar <= 8 then
      local A, pins, names = {}, {}, op.param_list
      op.ppos, op.nppos = {}, 0
      -- the general path with the arguments given (A holds them; a trailing table must stay last)
      local function slow(a1, a2, a3, a4, a5, a6, a7, a8)
        local n = 8
        while n > 0 and A[n] == nil do n = n - 1 end
        for j = 1, 8 do A[j] = nil end
        local args = {a1, a2, a3, a4, a5, a6, a7, a8}
        return general(unpack(args, 1, n))
      end
      local function done(...)
        pins[1], pins[2], pins[3], pins[4] = nil, nil, nil, nil  -- nin_fixed <= 4: no loop (see below)
        return ...
      end
      -- a10: no call of ten arguments is valid (at most 8 dims in a list, nin_fixed + npar <= 8 and a
      -- table), so general's error names it; without it x:reshape(1, 1, 1, 1, 1, 1, 1, 2, 1) went on
      -- with its ninth size dropped, an 8-dim result where 9 dims are refused. The unused `...` makes f a
      -- vararg function, where LuaJIT starts no root trace of its own (it still compiles f inside its
      -- callers' traces): every op's f shares this prototype, so the root traces that began at its entry
      -- for any op, and aborted on returning below it ('leaving loop in root trace'), blacklisted the
      -- entry for every op after about ten, and then every trace through any op's f aborted (matmul in
      -- tests/lua/test_jit_paths.lua, 2 runs of 6)
      f = function(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, ...)
        if a9 ~= nil or a10 ~= nil then return general(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) end
        A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8] = a1, a2, a3, a4, a5, a6, a7, a8
        if dim_first and type(a2) == 'number' then  -- straight-line moves (ops of 2 or 3 inputs)
          if nin_fixed == 2 and a4 == nil then A[2], A[3] = a3, a2
          elseif nin_fixed == 3 and a5 == nil then A[2], A[3], A[4] = a3, a4, a2
          else return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
        end
        -- the inputs are tensors: straight-line (nin_fixed <= 4). Here and below, a loop of one or two turns
        -- (one input, one or two values) left the caller's trace on every call ('leaving loop in root trace')
        if not is_tensor(A[1]) or (nin_fixed >= 2 and not is_tensor(A[2])) or (nin_fixed >= 3 and not is_tensor(A[3]))
            or (nin_fixed >= 4 and not is_tensor(A[4])) then
          return slow(a1, a2, a3, a4, a5, a6, a7, a8)
        end
        -- the last argument given (inputs are tensors, so at least nin_fixed): no while loop, which would be an
        -- inner loop in the caller's trace (LuaJIT aborts that trace on every call)
        local last = a8 ~= nil and 8 or a7 ~= nil and 7 or a6 ~= nil and 6 or a5 ~= nil and 5 or a4 ~= nil and 4
          or a3 ~= nil and 3 or a2 ~= nil and 2 or 1
        -- out= after the positional params (mf.cast(x, 'float64', {out = o})): a last table holding out
        -- alone is set aside and the params before it found as without it (A keeps it for slow)
        local dst
        if not list_args and last > nin_fixed and not op.param_kind.out then
          dst = out_alone(A[last])
          if dst ~= nil then
            last = last - 1
            local w = A[last]  -- a table of named params before it: the general path says what it makes of that
            if last > nin_fixed and type(w) == 'table' and type(next(w)) == 'string' then
              return slow(a1, a2, a3, a4, a5, a6, a7, a8)
            end
          end
        end
        local rec
        if list_args then  -- x:permute{2, 1} or x:reshape(4, 8): the first param's list, nothing else
          local v, root, node = A[nin_fixed + 1], op.ppos[1], nil
          if last == nin_fixed then return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
          if type(v) == 'number' then  -- the list given as numbers: the same branch as the table
            node = root and root[LIST]
            node = node and node[last - nin_fixed]
            node = ppos_walk(ppos_item, node, A, nin_fixed + 1, last, false)
            if node == false then return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
          else
            if last ~= nin_fixed + 1 then return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
            node = ppos_step(root, v, false)
            if node == false then return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
          end
          rec = node and node[REC]
          if not rec then
            if type(v) == 'number' then
              v = {}
              for j = nin_fixed + 1, last do v[j - nin_fixed] = A[j] end
            end
            rec = params_record(op, {[names[1]] = v}, true)  -- validates, and raises naming the op
            if op.nppos < 256 then
              op.ppos[1] = root or {}
              ppos_step(op.ppos[1], v, true)[REC], op.nppos = rec, op.nppos + 1
            end
          end
        elseif last == nin_fixed then
          rec = op.default
          if not rec then rec = params_record(op, nil); op.default = rec end
        elseif last > nin_fixed + npar then
          return slow(a1, a2, a3, a4, a5, a6, a7, a8)
        else
          local v = A[last]
          if type(v) == 'table' and type(next(v)) == 'string' then  -- one trailing table of named params, nothing
            -- positional before it (a list is a positional param, below)
            if last ~= nin_fixed + 1 or getmetatable(v) ~= nil or v.requires_grad ~= nil or v.device ~= nil
                or v.out ~= nil then
              return slow(a1, a2, a3, a4, a5, a6, a7, a8)
            end
            rec = params_record(op, v)
          else
            -- false for tensors, NaN, -0, named tables: the general path's
            local node = ppos_walk(ppos_step, op.ppos[last - nin_fixed], A, nin_fixed + 1, last, false)
            if node == false then return slow(a1, a2, a3, a4, a5, a6, a7, a8) end
            rec = node and node[REC]
            if not rec then
              local pt = {}
              for j = nin_fixed + 1, last do pt[names[j - nin_fixed]] = A[j] end
              rec = params_record(op, pt, true)  -- validates, and raises naming the op
              if op.nppos < 256 then
                local n = last - nin_fixed
                local t = op.ppos[n] or {}
                op.ppos[n] = t
                for j = nin_fixed + 1, last do t = ppos_step(t, A[j], true) end
                t[REC], op.nppos = rec, op.nppos + 1
              end
            end
          end
        end
        pins[1] = A[1]
        if nin_fixed >= 2 then pins[2] = A[2] end
        if nin_fixed >= 3 then pins[3] = A[3] end
        if nin_fixed >= 4 then pins[4] = A[4] end
        A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8] = nil, nil, nil, nil, nil, nil, nil, nil
        if dst ~= nil then return done(call_out_rec(op, rec, pins, nin_fixed, dst)) end
        return done(call_rec(op, rec, pins, nin_fixed))
      end
    end
    -- A variadic op (concat, stack) called with a plain list of tensors and its params given positionally
    -- (mf.concat({a, b}, 2), mf.stack({a, b})): the list itself is the inputs (nothing here keeps it or
    -- writes it; bind and the tape copy what they keep), and the record comes from op.ppos as above. The
    -- general path built three tables and a vararg call per call: 0.5 us of a 64 KB concat's (issue 12).
    -- Anything else (holders, symbols or numbers in the list, a named params table, a hole) goes there.
    if f == general and op.variadic and adapter == default_adapter and npar >= 1 and npar <= 4 then
      op.ppos, op.nppos = {}, 0
      -- the general path with the arguments given, their count kept (a trailing table must stay last)
      local function vslow(list, a2, a3, a4, a5, a6, a7, a8)
        if a8 ~= nil then return general(list, a2, a3, a4, a5, a6, a7, a8) end
        if a7 ~= nil then return general(list, a2, a3, a4, a5, a6, a7) end
        if a6 ~= nil then return general(list, a2, a3, a4, a5, a6) end
        if a5 ~= nil then return general(list, a2, a3, a4, a5) end
        if a4 ~= nil then return general(list, a2, a3, a4) end
        if a3 ~= nil then return general(list, a2, a3) end
        if a2 ~= nil then return general(list, a2) end
        return general(list)
      end
      f = function(list, a2, a3, a4, a5, a6, a7, a8)
        if type(list) ~= 'table' or getmetatable(list) ~= nil or a6 ~= nil or a7 ~= nil or a8 ~= nil then
          return vslow(list, a2, a3, a4, a5, a6, a7, a8)
        end
        local n = #list
        -- an empty list, a hole or a named key (general names them or ignores them, as before); inputs that are
        -- not tensors. Straight-line for the first two, a loop only past them (run_entry says why)
        if n == 0 or next(list, n) ~= nil or not is_tensor(list[1]) or (n >= 2 and not is_tensor(list[2])) then
          return vslow(list, a2, a3, a4, a5, a6, a7, a8)
        end
        for i = 3, n do
          if not is_tensor(list[i]) then return vslow(list, a2, a3, a4, a5, a6, a7, a8) end
        end
        local last = a5 ~= nil and 5 or a4 ~= nil and 4 or a3 ~= nil and 3 or a2 ~= nil and 2 or 1
        -- out= last (mf.concat({a, b}, 2, {out = o})): set aside, the params before it found as without it
        local dst
        if last >= 2 and not op.param_kind.out then
          dst = out_alone(last == 5 and a5 or last == 4 and a4 or last == 3 and a3 or a2)
          if dst ~= nil then last = last - 1 end
        end
        local rec
        if last == 1 then
          rec = op.default
          if not rec then rec = params_record(op, nil); op.default = rec end
        else
          if last > npar + 1 then return vslow(list, a2, a3, a4, a5) end
          -- one step per value, unrolled (a loop of one turn here aborted the caller's traces)
          local node = ppos_step(op.ppos[last - 1], a2, false)
          if node ~= false and last >= 3 then node = ppos_step(node, a3, false) end
          if node ~= false and last >= 4 then node = ppos_step(node, a4, false) end
          if node ~= false and last >= 5 then node = ppos_step(node, a5, false) end
          if node == false then return vslow(list, a2, a3, a4, a5) end  -- a named table, a tensor, NaN, -0
          rec = node and node[REC]
          if not rec then
            local vals, pt = {a2, a3, a4, a5}, {}
            for j = 1, last - 1 do pt[op.param_list[j]] = vals[j] end
            rec = params_record(op, pt, true)  -- validates, and raises naming the op
            if op.nppos < 256 then
              local t = op.ppos[last - 1] or {}
              op.ppos[last - 1] = t
              for j = 1, last - 1 do t = ppos_step(t, vals[j], true) end
              t[REC], op.nppos = rec, op.nppos + 1
            end
          end
        end
        if dst ~= nil then return call_out_rec(op, rec, list, n, dst) end
        return call_rec(op, rec, list, n)
      end
    end
    return f
  end

  local function load_op(index)
    local op = {index = index, name = cstr(C.mf_op_name(index)), doc = cstr(C.mf_op_doc(index)),
                inputs = {}, param_list = {}, param_kind = {}, param_info = {}, params = {}, nparams_cached = 0,
                pfast = {}, nfast = 0,  -- params_record's tree (fast_walk)
                src = {[CPU] = cstr(C.mf_op_lua_compute(index, CPU)), [CUDA] = cstr(C.mf_op_lua_compute(index, CUDA))},
                gradient_src = cstr(C.mf_op_lua_gradient(index)), factories = {}}
    local flags = C.mf_op_flags(index)
    op.flags = flags
    op.view = bit.band(flags, OPF_VIEW) ~= 0
    op.variadic = bit.band(flags, OPF_VARIADIC) ~= 0
    op.from_lua = bit.band(flags, OPF_LUA) ~= 0
    op.random = bit.band(flags, OPF_RANDOM) ~= 0
    op.strided = bit.band(flags, C.MF_OPF_STRIDED) ~= 0  -- kernel takes views as they are
    op.multi = bit.band(flags, C.MF_OPF_LIST_OUTPUT) ~= 0       -- returns its outputs as one list
    op.list_args = bit.band(flags, C.MF_OPF_LIST_ARGS) ~= 0
    op.dim_first = bit.band(flags, C.MF_OPF_DIM_FIRST) ~= 0  -- also x:op(dim, other inputs) (dim_first_adapter)
    op.overwrites = bit.band(flags, C.MF_OPF_OVERWRITES) ~= 0   -- writes input 1 without reading it
    op.writes = bit.band(flags, OPF_WRITES) ~= 0  -- writes input 1 in place: bumps its version (tape.lua)
    op.num_written = op.writes and C.mf_op_num_written(op.index) or 0  -- inputs 1..n it writes (writes(n))
    op.same_shape_identity = bit.band(flags, C.MF_OPF_SAME_SHAPE_IDENTITY) ~= 0
    op.local_shape = bit.band(flags, C.MF_OPF_LOCAL_SHAPE) ~= 0  -- rules held by the registering engine
    op.local_gradient = bit.band(flags, C.MF_OPF_LOCAL_GRADIENT) ~= 0
    local adapter_src = cstr(C.mf_op_lua_adapter(index))
    if adapter_src and adapter_src ~= '' then op.adapter = compile_kernel(op.name, 'call syntax', adapter_src) end
    local shape_src = cstr(C.mf_op_lua_shape(index))
    if shape_src and shape_src ~= '' then op.lua_infer = compile_kernel(op.name, 'infer_shape', shape_src) end
    for i = 0, C.mf_op_num_inputs(index) - 1 do op.inputs[i + 1] = cstr(C.mf_op_input_name(index, i)) end
    -- inputs whose values the op never reads (lends_shape): [i] = true; shape_only when that is all of
    -- them (zeros_like, rand_like): the tape records no node, nothing can flow back
    op.lends_shape = {}
    local nlend = 0
    for i = 1, #op.inputs do
      if C.mf_op_lends_shape(index, i - 1) == 1 then op.lends_shape[i], nlend = true, nlend + 1 end
    end
    op.shape_only = nlend > 0 and nlend == #op.inputs
    local twin = cstr(C.mf_op_in_place_of(index))
    op.in_place_of = twin ~= '' and twin or nil  -- add for add_ (in_place_of)
    local of = cstr(C.mf_op_gradient_of(index))
    op.gradient_of = of ~= '' and of or nil  -- cumprod for cumprod_grad (gradient_of)
    -- the input that is a uint8 selection mask (where's cond): it never decides a number's dtype
    op.mask_input = C.mf_op_mask_input(index)
    op.aliases = {}
    for i = 0, C.mf_op_num_aliases(index) - 1 do op.aliases[i + 1] = cstr(C.mf_op_alias(index, i)) end
    for i = 0, C.mf_op_num_params(index) - 1 do
      local name = cstr(C.mf_op_param_name(index, i))
      op.param_list[i + 1] = name
      op.param_kind[name] = cstr(C.mf_op_param_type(index, i))
      op.param_info[i + 1] = {name = name, type = op.param_kind[name], default = cstr(C.mf_op_param_default(index, i)),
                              doc = cstr(C.mf_op_param_doc(index, i))}
    end
    ops[op.name] = op
    ops_by_index[index] = op
    return op
  end

  -- other names of op functions (their blocks' alias(): TensorFlow and Torch7 spellings) -> op name
  local aliases = {}
  mf._aliases = aliases
  local pending = {}  -- name or alias -> registry index, for the ops not installed yet (below)
  local function install(op)
    local f = make_function(op)
    op.fn = f
    for _, name in ipairs{op.name, unpack(op.aliases)} do
      mf[name] = f
      if #op.inputs > 0 and rawget(methods, name) == nil then methods[name] = f end
      pending[name] = nil
    end
    for _, a in ipairs(op.aliases) do aliases[a] = op.name end
    fn_names[f] = op.name
  end

  -- Ops are installed on first use: the first lookup of an op's name (or alias) in mf, mf._ops or the
  -- tensor methods, or of its index in mf._ops_by_index, reads its block from the registry and makes
  -- its function; later lookups find the function itself (no cost on the call path). A record and its
  -- closures are about 4 KB of Lua heap per op, 570 KB for the registry's 156, and the collector
  -- marks and sweeps the whole heap in every cycle: with all of them installed at load a cycle took
  -- 172 us, with 25 of them 95 us (1 thread, 2026-11-27), and an eager program runs one cycle per
  -- allowance of fresh results (tensor.lua). The registry is process-wide: another engine may
  -- register ops after this one loaded, so a name not yet seen first reads the names added since
  -- (a miss costs one registry count). mf._load_all_ops() installs every op, for what lists mf.
  local nseen = 0
  local function scan_new()
    local n = C.mf_op_count()
    if n == nseen then return false end
    for i = nseen, n - 1 do
      nseen = i + 1
      if not rawget(ops_by_index, i) then
        pending[cstr(C.mf_op_name(i))] = i
        for a = 0, C.mf_op_num_aliases(i) - 1 do pending[cstr(C.mf_op_alias(i, a))] = i end
      end
    end
    return true
  end
  local function install_index(i)
    local op = rawget(ops_by_index, i)
    if op then return op end
    op = load_op(i)
    install(op)
    return op
  end
  -- installs the op named (or aliased) k; false when no op has that name
  local function install_name(k)
    if type(k) ~= 'string' then return false end
    local i = pending[k]
    if i == nil and scan_new() then i = pending[k] end
    if i == nil then return false end
    install_index(i)
    return true
  end
  function mf._load_all_ops()
    scan_new()
    for i = 0, nseen - 1 do install_index(i) end
  end
  scan_new()
  local function lookup_new(t, k)
    if install_name(k) then return rawget(t, k) end
  end
  setmetatable(ops, {__index = lookup_new})
  setmetatable(methods, {__index = lookup_new})
  setmetatable(mf, {__index = lookup_new})
  setmetatable(aliases, {__index = lookup_new})
  setmetatable(ops_by_index, {__index = function(_, i)
    if type(i) == 'number' and i >= 0 and i < C.mf_op_count() and i == math.floor(i) then return install_index(i) end
  end})

  mf.nn = mf.nn or {}
  mf.nn.softmax, mf.nn.log_softmax, mf.nn.relu, mf.nn.sigmoid, mf.nn.tanh =
    mf.softmax, mf.log_softmax, mf.relu, mf.sigmoid, mf.tanh
  -- TensorFlow's spelling: softmax_cross_entropy_with_logits{labels =, logits =[, dim =]}
  function mf.nn.softmax_cross_entropy_with_logits(args)
    if type(args) ~= 'table' or args.labels == nil or args.logits == nil then
      raise('softmax_cross_entropy_with_logits: expected {labels = ..., logits = ...}')
    end
    return mf.softmax_cross_entropy(args.logits, args.labels, args.dim or -1)
  end

  -- registering ops from Lua -----------------------------------------------------------------
  local PARAM_KINDS = {boolean = true, integer = true, number = true, dtype = true, ['integer list'] = true}

  function mf.register_op(def)
    if type(def) ~= 'table' then raise('register_op: expected a table {name=, num_inputs=, doc=, lua_compute=, ...}') end
    require('moonflow.options').keys('register_op ' .. tostring(def.name), def,
      {'name', 'num_inputs', 'doc', 'lua_compute', 'infer_shape', 'gradient', 'params', 'strided', 'writes',
       'lends_shape', 'in_place_of'}, 'field')
    local name = def.name
    if type(name) ~= 'string' or not name:match('^[%a_][%w_]*$') then
      raise(('register_op: name %s must be an identifier'):format(tostring(name)))
    end
    if ops[name] then raise(("register_op: an op named '%s' is already registered"):format(name)) end
    local nin = def.num_inputs
    if type(nin) ~= 'number' or nin < 0 or nin ~= math.floor(nin) then
      raise(('register_op %s: num_inputs must be a non-negative integer'):format(name))
    end
    if type(def.doc) ~= 'string' or def.doc == '' then raise(('register_op %s: doc is required'):format(name)) end
    -- lua_compute: the CPU kernel string, or {cpu = string, cuda = string} (cuda optional)
    local cpu_src, cuda_src = def.lua_compute, nil
    if type(cpu_src) == 'table' then
      require('moonflow.options').keys('register_op ' .. name .. ': lua_compute', cpu_src, {'cpu', 'cuda'}, 'device')
      cpu_src, cuda_src = cpu_src.cpu, cpu_src.cuda
      if cuda_src ~= nil and type(cuda_src) ~= 'string' then
        raise(('register_op %s: lua_compute.cuda must be a kernel string'):format(name))
      end
    end
    if type(cpu_src) ~= 'string' then
      raise(('register_op %s: lua_compute must be a kernel string or {cpu = string, cuda = string}'):format(name))
    end
    -- rules given as source strings go into the registry and serve every engine of the process;
    -- rules given as Lua functions stay in this engine (other engines get a clear error)
    local infer = def.infer_shape or 'same'
    if infer ~= 'same' and type(infer) ~= 'function' and type(infer) ~= 'string' then
      raise(("register_op %s: infer_shape must be 'same', the source of function(in_shapes, p), or that "
        .. "function"):format(name))
    end
    if infer == 'same' and nin == 0 then raise(("register_op %s: infer_shape 'same' needs an input; give a shape rule"):format(name)) end
    if def.strided ~= nil and type(def.strided) ~= 'boolean' then
      raise(('register_op %s: strided must be true (the kernel takes views with their strides) or false'):format(name))
    end
    -- block attributes (src/op/registry.h): writes = n (or true: 1), lends_shape = {input, ...},
    -- in_place_of = 'op'; the registry checks them against the op
    local nw = def.writes == true and 1 or def.writes or 0
    if type(nw) ~= 'number' or nw ~= math.floor(nw) then
      raise(('register_op %s: writes must be true or the number n of inputs 1..n it writes in place'):format(name))
    end
    local lends = def.lends_shape or {}
    if type(lends) ~= 'table' then
      raise(('register_op %s: lends_shape must be a list of the inputs (1-based) it reads only the shape of')
        :format(name))
    end
    for i = 1, #lends do
      if type(lends[i]) ~= 'number' then
        raise(('register_op %s: lends_shape item %d is a %s; expected an input number'):format(name, i, type(lends[i])))
      end
    end
    if def.in_place_of ~= nil and type(def.in_place_of) ~= 'string' then
      raise(('register_op %s: in_place_of must be the name of the out-of-place op'):format(name))
    end
    local grad = def.gradient
    if grad ~= nil and type(grad) ~= 'function' and type(grad) ~= 'string' then
      raise(('register_op %s: gradient must be the source of function(x1, ..., xn, y, gy, params) returning the '
        .. 'list {g1, ..., gn} of input gradients (nil for none), or that function'):format(name))
    end
    -- sources load here, so their errors surface before registering
    if type(infer) == 'string' and infer ~= 'same' then compile_kernel(name, 'infer_shape', infer) end
    if type(grad) == 'string' then compile_kernel(name, 'gradient', grad) end
    -- params are checked before registering, so a failed registration leaves nothing behind
    if def.params ~= nil and type(def.params) ~= 'table' then
      raise(('register_op %s: params must be a table {name = {type =, default =, doc =}}, got a %s'):format(name, type(def.params)))
    end
    local pnames, pspecs = {}, {}
    for k in pairs(def.params or {}) do
      if type(k) ~= 'string' then raise(('register_op %s: param names must be strings, got a %s'):format(name, type(k))) end
      pnames[#pnames + 1] = k
    end
    table.sort(pnames)
    for _, k in ipairs(pnames) do
      local spec = def.params[k]
      if type(spec) ~= 'table' then raise(("register_op %s: param '%s' must be a table {type=, default=, doc=}"):format(name, k)) end
      require('moonflow.options').keys(("register_op %s: param '%s'"):format(name, k), spec, {'type', 'default', 'doc'}, 'field')
      local kind = spec.type or 'number'
      if not PARAM_KINDS[kind] and not tostring(kind):match('^enum:') then
        raise(("register_op %s: param '%s' has type '%s'"):format(name, k, tostring(kind)))
      end
      pspecs[k] = {kind = kind, doc = spec.doc or '',
                   dflt = spec.default ~= nil and encode_value({name = name, param_kind = {}}, k, spec.default) or nil}
    end
    local factory = compile_kernel(name, K.STRINGS[CPU], cpu_src)  -- load errors surface before registering
    local cuda_factory = cuda_src and compile_kernel(name, K.STRINGS[CUDA], cuda_src)
    -- a write op takes its inputs as they are (strided): a contiguous copy of a view would take the write
    local flags = bit.bor((def.strided or nw ~= 0) and C.MF_OPF_STRIDED or 0, nw ~= 0 and OPF_WRITES or 0,
                          type(infer) == 'function' and C.MF_OPF_LOCAL_SHAPE or 0,
                          type(grad) == 'function' and C.MF_OPF_LOCAL_GRADIENT or 0)
    local attrs = ffi.new('mf_op_lua_attrs')
    local lend_arr = ffi.new('int32_t[?]', #lends + 1)  -- alive until the call returns
    for i = 1, #lends do lend_arr[i - 1] = lends[i] end
    attrs.num_written, attrs.num_shape_inputs, attrs.shape_inputs = nw, #lends, lend_arr
    attrs.in_place_of = def.in_place_of
    attrs.cuda_src = cuda_src
    local np = #pnames
    local pn, pk, pd, pdoc = ffi.new('const char *[?]', np + 1), ffi.new('const char *[?]', np + 1),
                             ffi.new('const char *[?]', np + 1), ffi.new('const char *[?]', np + 1)
    for i, k in ipairs(pnames) do  -- the Lua strings stay alive in pnames and pspecs during the call
      local s = pspecs[k]
      pn[i - 1], pk[i - 1], pd[i - 1], pdoc[i - 1] = k, s.kind, s.dflt, s.doc
    end
    local index = C.mf_op_register_lua(name, def.doc, nin, cpu_src, type(grad) == 'string' and grad or nil,
                                       type(infer) == 'string' and infer ~= 'same' and infer or nil, flags,
                                       np, pn, pk, pd, pdoc, attrs)
    if index < 0 then raise(ffi.string(C.mf_last_error())) end
    local op = load_op(index)
    op.factories[CPU] = factory
    if cuda_factory then op.factories[CUDA] = cuda_factory end
    if type(infer) == 'function' then op.lua_infer = infer end
    if type(grad) == 'function' then op.lua_gradient = grad end
    install(op)
    return mf[name]
  end
end
