-- Tensors: mf_tensor structs as FFI cdata with a metatype (methods, operators, printing) and a
-- __gc that drops the storage reference. Native bytes allocated nudge Lua's collector.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local K = mf.kernels
  local T = ffi.typeof('mf_tensor')
  local SZ = ffi.sizeof(T)
  -- every dtype, device and limit code is the C ABI's (src/core/types.h), read once here
  local F32, F64, I32, I64, U8 = C.MF_FLOAT32, C.MF_FLOAT64, C.MF_INT32, C.MF_INT64, C.MF_UINT8
  local HOST, MAX_DIMS = K.HOST, C.MF_MAX_DIMS
  local shape_buf = ffi.new('int64_t[?]', MAX_DIMS)
  local methods = {}
  mf.Tensor = methods

  local DTYPE = {float32 = F32, float64 = F64, int32 = I32, int64 = I64, uint8 = U8,
                 float = F32, double = F64, int = I32, long = I64, byte = U8}
  local DTYPE_NAME = {[F32] = 'float32', [F64] = 'float64', [I32] = 'int32', [I64] = 'int64', [U8] = 'uint8'}
  local PTR = {[F32] = ffi.typeof('float *'), [F64] = ffi.typeof('double *'), [I32] = ffi.typeof('int32_t *'),
               [I64] = ffi.typeof('int64_t *'), [U8] = ffi.typeof('uint8_t *')}
  local IS_FLOAT = {[F32] = true, [F64] = true}
  mf._DTYPE_NAME, mf._IS_FLOAT, mf._PTR = DTYPE_NAME, IS_FLOAT, PTR

  -- The number at element offset off of ptr (a tensor's data) of dtype. A float NaN is read as Lua's
  -- own NaN: LuaJIT keeps a double's bits as they are, and a NaN with the sign bit and a large payload
  -- is one of its tagged values (0xffffffffe0000000, what CUDA's double erf gives for NaN, reads as
  -- nil; other payloads as a string or table pointer, which crashes the collector). Such NaNs come
  -- from devices, files and float32 NaNs widened to double, so every read of element values in the
  -- library goes through here.
  local U32P, F64P, F32P = ffi.typeof('uint32_t *'), PTR[F64], PTR[F32]
  local NAN = 0 / 0
  local band = bit.band
  local function value_at(ptr, dtype, off)
    if dtype == F64 then
      local w = ffi.cast(U32P, ptr)
      local hi = w[off * 2 + 1]  -- little-endian: the sign, exponent and top of the mantissa
      if band(hi, 0x7ff00000) == 0x7ff00000 and (band(hi, 0xfffff) ~= 0 or w[off * 2] ~= 0) then return NAN end
      return ffi.cast(F64P, ptr)[off]
    elseif dtype == F32 then
      local b = ffi.cast(U32P, ptr)[off]
      if band(b, 0x7f800000) == 0x7f800000 and band(b, 0x7fffff) ~= 0 then return NAN end
      return tonumber(ffi.cast(F32P, ptr)[off])
    end
    return tonumber(ffi.cast(PTR[dtype], ptr)[off])
  end
  mf._value_at = value_at

  local raise = K.raise
  mf._raise = raise

  local function is_tensor(x) return type(x) == 'cdata' and ffi.istype(T, x) end

  -- The n = select('#', ...) values of ... as a list, for the varargs entry points (ops.lua's
  -- adapters, t:get, t:set, the tape's several outputs). `{...}` of four or more values compiles
  -- (LuaJIT 2.1.0-beta3, Debian 12's) to a trace that exits at every run, each exit 4.6-4.8 us:
  -- mf.zeros(2, 2, 2, 2) took 8-14 us against 0.6 for zeros(4, 2, 2), adam_update's six inputs
  -- 8.5 us of dispatch per call, t:get(i, j, k, l) 5.9 us. A table constructor of named values does
  -- not (0.07 us for six).
  local function pack_args(n, ...)
    local a1, a2, a3, a4, a5, a6, a7, a8 = ...
    local t = {a1, a2, a3, a4, a5, a6, a7, a8}
    if n > 8 then
      for i = 9, n do t[i] = (select(i, ...)) end
    end
    return t
  end
  mf._pack_args = pack_args
  mf.is_tensor = is_tensor

  function mf._dtype_code(name, what)
    if name == nil then return F32 end
    local code = type(name) == 'string' and DTYPE[name]
    if not code then
      raise(("%s: unknown dtype '%s'; expected one of float32, float64, int32, int64, uint8"):format(what or 'dtype', tostring(name)))
    end
    return code
  end

  -- GC nudging: Lua sees a 200-byte struct, not the storage behind it, so count native bytes and
  -- run a collector cycle when the bytes allocated since the last one pass an allowance. The cycle
  -- runs as incremental steps to its end (collectgarbage('step', 0) until one reports the cycle
  -- finished), not as collectgarbage('collect'), which first sweeps the whole heap to abandon the
  -- cycle in progress and then runs one of its own (mark and sweep again). Finishing the cycle in
  -- progress frees the same garbage (but for what died after its mark phase ended: the next cycle
  -- takes that) in about 0.65 of the time: empty(2048, 2048) 0.65x, zeros 0.8x at 1 thread
  -- (2026-11-27). The nudge comes before the allocation, so the blocks a cycle frees can serve the
  -- request.
  -- The allowance is GARBAGE bytes, or HEAP_FACTOR times the Lua heap left after the last cycle when
  -- that is more; it no longer grows with the native bytes live (it was max(64 MiB, in use)). What a
  -- cycle costs is the Lua heap's to mark and sweep (about 100 us per MB of it: 140 us with the
  -- library's own 1.5 MB), not the native bytes', so HEAP_FACTOR keeps the collector's time under
  -- about 6 us per MB allocated (0.4 us per 64 KB result, a fifth of writing it into cold memory)
  -- for a program with a large heap of its own, the floor keeps 64 MiB (2-3 us per MB) for the
  -- library's heap and an eager training step's (3.5 MB). The native bytes live say nothing about
  -- that cost, and each byte of allowance is a byte of reuse distance: with 1 GB of weights live,
  -- every eager result waited for a block last written 1 GB of allocations before (a DRAM miss on
  -- every line) and the garbage doubled the peak. Smaller allowances, so that the blocks reused are
  -- still in the 32 MB L3, did not pay on the 2-core EPYC: a cycle costs about what writing 8 MB into
  -- cold memory costs (1 thread, CPU time, load 8-13, 2026-11-27, allowance 64 / 16 / 32 MiB: zeros
  -- 64 KB 3.26 / 3.34 / 3.49 us, abs 3.36 / 3.31 / 3.75; zeros 16 MB 577 / 670 / 670 us, abs 894 /
  -- 1202 / 1028; empty 16 MB 45 / 212 / 105).
  -- GARBAGE_CAP bounds the heap's share: a program holding a large heap of its own (a data set read
  -- into Lua tables, 570 MB of them) was otherwise allowed 16x that, 9 GB of dead tensors, before a
  -- cycle (16 MB results with 16 MB live peaked at 2.4 GB of garbage in 150 steps): an OOM, where a
  -- cycle per GiB costs it about 60 us per MB allocated.
  -- LIVE_SHARE: and at least a quarter of the native bytes live. A cycle also marks and sweeps every
  -- live tensor's header (and runs the finalizers of the dead ones), so its cost grows with the
  -- tensors a program holds: the per-op bench holds 1.8 GB of inputs, and with a fixed 64 MiB a 16 MB
  -- abs, relu or add took 1.4-1.9x the time of the rule before (a cycle every 4 results; 2 threads,
  -- 2026-11-27 11:48 against 10:03). A quarter keeps that cost per byte allocated bounded while the
  -- garbage stays under 25% of what is live (the rule before allowed 100%).
  local GARBAGE, HEAP_FACTOR, GARBAGE_CAP, LIVE_SHARE = 64 * 2 ^ 20, 16, 2 ^ 30, 0.25
  local stats_buf = ffi.new('mf_memory_stats')
  local pending, threshold = 0, GARBAGE
  -- A collector cycle starts when the heap reaches pause% of what was live after the last one
  -- (LuaJIT's default 200). Results that die young (1-element tensors in an eager loop) are freed
  -- only by a cycle, so the default let thousands pile up per cycle, more as the library's own heap
  -- grew, and their headers went cold in cache before their finalizers ran: `a + b` on scalars
  -- took 1.2x longer with a 1.2 MB library heap than with 0.85 MB. 150 restores it; the MLP steps
  -- (eager and graph) and graph binding measured the same at 150 and 200 (2026-11-25). A program
  -- may set its own: collectgarbage('setpause', n).
  collectgarbage('setpause', 150)
  local gc = collectgarbage
  -- before a tensor of count elements of dtype is allocated (an estimate: the allocation checks the
  -- real size; no loop over the dims on this path of every eager result)
  -- A device's bytes (cuda) count against an allowance of their own: no cache to keep warm there, and
  -- an eager step on a GPU is host-bound, the cycles part of its host time (LeNet b64 through the tape
  -- on an H100, 2026-11-27: 25% of the step's samples in the collector with the host's 64 MiB, a
  -- cycle every 2-3 steps). A device allocation that fails runs a cycle and tries once more
  -- (alloc_retry below), so garbage never costs a program its device memory.
  local DEVICE_GARBAGE = 512 * 2 ^ 20
  local dev_pending, dev_threshold = 0, DEVICE_GARBAGE
  -- Warm allowance: the rule above stands for cycles that cost much; where they are cheap the
  -- allowance is WARM instead, so that the blocks a cycle frees are reused while still in the
  -- 32 MB L3, not after 64 MB more of allocations have pushed them out to DRAM. Writing 64 KB costs
  -- 0.66 us into the L2, 1.1 us into the L3, 2.2 us into DRAM (AVX-512 stores, 1 thread, EPYC with
  -- a 32 MB L3, blocks in turn through a pool of 1 MB / 16 MB / 64 MB, 2026-11-28), so each MB of
  -- results written into the L3 rather than DRAM saves ~17 us, against the collector's time, paid
  -- 4x as often as at 64 MiB. A cycle costs a part that grows with the Lua heap left after it (the
  -- mark and sweep, about 30 us with the library's 0.5 MB) and a part per dead tensor (its
  -- finalizer and free, 0.25-0.45 us), paid at either allowance; so cheap is a heap of at most
  -- WARM_HEAP_KB (~120 us: 7.5 us per MB at 16 MiB, 2 at 64) and, as a guard against a heap
  -- gone cold or a loaded machine, a last cycle of at most WARM_US_PER_MB per MB allocated since
  -- the one before (80-170 us per 16 MiB of 64 KB results here, 5-11 us per MB). Fresh eager
  -- results against out= (scripts/bench/fresh_results.lua, 2 threads, idle, the builds before and
  -- after interleaved twice, 2026-11-28), neg: 64 KB 2.4-2.8 -> 1.6-1.7 us (out= 0.74), 1 MB 27-28
  -- -> 13 (7.5-8.9), 4 MB 118-119 -> 59 (41), 8 MB 199-208 -> 141-153 (85-87); 16 MB unchanged.
  -- Results of STREAM_BYTES and more are written by streaming stores (src/kernels/cpu/copy.h's
  -- stream_into), which go to DRAM whatever the reuse: they count at WARM / GARBAGE of their bytes,
  -- so a loop of them still runs a cycle per 64 MiB, not one per result.
  local WARM, WARM_HEAP_KB, WARM_US_PER_MB, STREAM_BYTES = 16 * 2 ^ 20, 2048, 16, C.MF_STREAM_BYTES
  -- The allowance after a cycle that took us_per_mb (wall us per MB allocated since the one before;
  -- 0 when the collector is stopped) and left heap_kb of Lua heap, with live_bytes of tensors in use.
  function mf._gc_allowance(us_per_mb, heap_kb, live_bytes)
    if us_per_mb > 0 and us_per_mb <= WARM_US_PER_MB and heap_kb <= WARM_HEAP_KB then return WARM end
    return math.max(GARBAGE, math.min(HEAP_FACTOR * 1024 * heap_kb, GARBAGE_CAP), LIVE_SHARE * live_bytes)
  end
  -- a cycle to its end; returns its wall time in seconds (0 for a stopped collector)
  local function cycle()
    -- a stopped collector stays stopped (the program's collectgarbage('stop'), or Session.run's
    -- pause while it binds): in LuaJIT a 'step' restarts it
    if not gc('isrunning') then return 0 end
    local t0 = C.mf_clock()
    repeat until gc('step', 0)
    return C.mf_clock() - t0
  end
  local function nudge(count, dtype, device)
    local bytes = count * C.mf_dtype_size(dtype)
    if device ~= HOST then
      dev_pending, bytes = dev_pending + bytes, 0
      if dev_pending > dev_threshold then
        dev_pending, pending = 0, 0
        cycle()
        C.mf_memory_stats_get(device, stats_buf)
        dev_threshold = math.max(DEVICE_GARBAGE, LIVE_SHARE * tonumber(stats_buf.in_use))
        return
      end
    end
    if bytes >= STREAM_BYTES and threshold < GARBAGE then bytes = bytes * threshold / GARBAGE end
    pending = pending + math.max(bytes, 256) + 64
    if pending > threshold then
      local us_per_mb = cycle() * 1e6 / (pending / 2 ^ 20)
      pending = 0
      C.mf_memory_stats_get(HOST, stats_buf)
      threshold = mf._gc_allowance(us_per_mb, gc('count'), tonumber(stats_buf.in_use))
    end
  end
  -- mf_tensor_init failed on a device: a full cycle (twice: the tape's state of a tensor the first
  -- frees goes in the second) hands the dead tensors' blocks back, then one more try
  local function alloc_retry(t, ndim, shape, dtype, device)
    if device == HOST then return -1 end
    local running = gc('isrunning')
    gc('collect')
    gc('collect')
    if not running then gc('stop') end  -- LuaJIT's full cycle restarts a stopped collector
    dev_pending = 0
    return C.mf_tensor_init(t, ndim, shape, dtype, device)
  end

  -- Drops t's storage reference now instead of at its finalizer, for a tensor nothing else refers to
  -- (the tape's spent gradients and saved headers, tape.lua); bytes this frees come off the count
  -- above. t is left an empty header (0 elements, no storage): a stray use reads nothing instead of
  -- freed memory. Its finalizer is dropped too (with no autograd state it has nothing left to do):
  -- the collector calls each finalizer through the interpreter, most of its cost in an eager step.
  function mf._release_now(t)
    if t._owns ~= 0 then
      if C.mf_storage_refcount(t) == 1 then
        pending = math.max(0, pending - math.max(tonumber(t._count) * C.mf_dtype_size(t._dtype_id), 256) - 64)
      end
      C.mf_tensor_release(t)
    end
    t._ndim, t._count, t._offset, t._is_contig = 1, 0, 0, 1
    t._shape[0], t._strides[0] = 0, 1
    if t._autograd == 0 then ffi.gc(t, nil) end
  end

  -- A new contiguous tensor (uninitialised) with the shape, dtype and device of meta; what names
  -- the op in an allocation error.
  local function new_like_meta(meta, what)
    local device = meta._device_id
    nudge(tonumber(meta._count), meta._dtype_id, device)
    local t = T()
    if C.mf_tensor_init(t, meta._ndim, meta._shape, meta._dtype_id, device) ~= 0 and
      alloc_retry(t, meta._ndim, meta._shape, meta._dtype_id, device) ~= 0 then
      raise(what .. ': ' .. ffi.string(C.mf_last_error()))
    end
    return t
  end
  mf._new_like_meta = new_like_meta

  -- A new contiguous tensor (uninitialised) of shape (a list), dtype (default float32) on device
  -- (an id, default the host).
  local function new_tensor(shape, dtype, device)
    local n = #shape
    if n > MAX_DIMS then raise(('tensor: %d dims requested; at most %d are supported'):format(n, MAX_DIMS)) end
    local count = 1
    for i = 1, n do
      shape_buf[i - 1] = shape[i]
      count = count * tonumber(shape_buf[i - 1])
    end
    dtype, device = dtype or F32, device or HOST
    nudge(count, dtype, device)
    local t = T()
    if C.mf_tensor_init(t, n, shape_buf, dtype, device) ~= 0 then
      K.check(alloc_retry(t, n, shape_buf, dtype, device))
    end
    return t
  end
  mf._new_tensor = new_tensor

  -- mf.tensor{{1, 2}, {3, 4}}: shape from the nesting; ragged or non-numeric tables are errors
  local function walk_shape(v, shape, depth, path)
    if type(v) == 'table' and not is_tensor(v) then
      local n = #v
      if shape[depth] == nil then
        shape[depth] = n
      elseif shape[depth] ~= n then
        raise(('mf.tensor: ragged nested table: %s has %d elements, expected %d like its siblings')
          :format(path == '' and 'the table' or 'element ' .. path, n, shape[depth]))
      end
      for k in pairs(v) do
        if type(k) ~= 'number' or k < 1 or k > n or k ~= math.floor(k) then
          raise(('mf.tensor: %s has key %s; expected a list (keys 1..n)'):format(path == '' and 'the table' or 'element ' .. path, tostring(k)))
        end
      end
      for i = 1, n do walk_shape(v[i], shape, depth + 1, path .. '[' .. i .. ']') end
    elseif type(v) == 'number' or type(v) == 'boolean' then
      if shape[depth] ~= nil and depth <= #shape then
        raise(('mf.tensor: ragged nested table: element %s is a number where a table of %d was expected'):format(path, shape[depth]))
      end
      shape.leaf = shape.leaf or depth
      if shape.leaf ~= depth then raise(('mf.tensor: ragged nested table at element %s'):format(path)) end
    elseif is_tensor(v) then  -- torch.tensor([t1, t2]) spells mf.stack here
      raise(('mf.tensor: element %s is a tensor; expected a number (mf.stack({t1, t2, ...}) stacks tensors; '
        .. 't:item() is the number of a 1-element one)'):format(path))
    else
      raise(('mf.tensor: element %s is a %s; expected a number'):format(path, type(v)))
    end
  end

  function mf.tensor(data, opts)
    local dtype = F32
    if type(opts) == 'string' then dtype = mf._dtype_code(opts, 'mf.tensor')
    elseif type(opts) == 'table' then dtype = mf._dtype_code(opts.dtype, 'mf.tensor') end
    if type(opts) == 'table' and opts.requires_grad ~= nil then  -- mf.tensor(data, {requires_grad = true})
      local o = {}
      for k, v in pairs(opts) do if k ~= 'requires_grad' then o[k] = v end end
      -- a copy made under no_grad: a leaf even when data has history
      return methods.requires_grad_(mf.no_grad(mf.tensor, data, o), opts.requires_grad)
    end
    if type(opts) == 'table' and opts.device ~= nil then  -- mf.tensor(data, {device = 'cuda'}): made here, copied there
      K.find_device(opts.device, 'mf.tensor')
      local o = {}
      for k, v in pairs(opts) do if k ~= 'device' then o[k] = v end end
      return methods.to(mf.tensor(data, o), opts.device)
    end
    if is_tensor(data) then return mf.cast(data, DTYPE_NAME[dtype]) end
    if type(data) ~= 'table' and type(data) ~= 'number' then
      raise(('mf.tensor: expected a number or a nested table of numbers, got a %s'):format(type(data)))
    end
    local shape = {}
    walk_shape(data, shape, 1, '')
    if shape.leaf and shape.leaf <= #shape then raise('mf.tensor: ragged nested table (numbers at different depths)') end
    shape.leaf = nil
    local t = new_tensor(shape, dtype)
    local p, i = ffi.cast(PTR[dtype], t._ptr), 0
    local int = not IS_FLOAT[dtype]  -- integer dtypes: each number must fit (300 into uint8 is an error)
    local function fill(v)
      if type(v) == 'table' then
        for k = 1, #v do fill(v[k]) end
      else
        if type(v) == 'boolean' then v = v and 1 or 0 end
        if int and C.mf_check_value(v, dtype, 'mf.tensor') ~= 0 then raise(ffi.string(C.mf_last_error())) end
        p[i] = v
        i = i + 1
      end
    end
    fill(data)
    return t
  end

  -- element access ---------------------------------------------------------------------------
  local partial, write_view  -- t[{i, j}] with fewer indices than dims (metatype, below)
  local function elem_offset(t, idx, what, nidx)
    local nd = t._ndim
    nidx = nidx or #idx  -- the count given (t:get(1, nil): two, the nil refused below)
    if nidx ~= nd then raise(('%s: %d indices given for a %d-dim tensor'):format(what, nidx, nd)) end
    local off = 0
    for d = 1, nd do
      local i, n = idx[d], tonumber(t._shape[d - 1])
      if type(i) ~= 'number' then raise(('%s: index %d is a %s; expected a number'):format(what, d, type(i))) end
      if i ~= math.floor(i) then  -- NaN too
        raise(('%s: index %s at dim %d is not an integer'):format(what, tostring(i), d))
      end
      if i < 0 then i = i + n + 1 end
      if i < 1 or i > n then
        raise(('%s: index %s out of range 1..%d at dim %d'):format(what, tostring(idx[d]), n, d))
      end
      off = off + (i - 1) * tonumber(t._strides[d - 1])
    end
    return off
  end

  -- t, or a host copy of t when its device's memory is not host-addressable (a GPU's): element
  -- reads, printing and totable read device tensors through it (the copy waits for the device)
  -- mf._host_reads() counts the calls on tensors of another device than the host, including a device
  -- whose memory the host addresses (the test device): what a GPU would wait for (issue 16 item 5)
  local host_reads = 0
  local function host_readable(t)
    if t._device_id == HOST then return t end
    host_reads = host_reads + 1
    if K.of_device(t._device_id).strings == C.MF_CPU then return t end
    return mf.no_grad(mf.to, t, HOST)
  end
  mf._host_readable = host_readable
  function mf._host_reads() return host_reads end

  function methods.get(t, ...)
    local n = select('#', ...)
    local idx = pack_args(n, ...)
    local off = elem_offset(t, idx, 'get', n)
    local h = host_readable(t)
    if h ~= t then off = elem_offset(h, idx, 'get', n) end
    return value_at(h._ptr, h._dtype_id, off)
  end

  -- The write rule (README "Writes"; src/core/writes.h) for element and row assignment: the
  -- tensor written has no overlapping elements, a number fits its dtype, a tensor source broadcasts.
  local function check_writable(t, what)
    if C.mf_check_writable(t, what) ~= 0 then raise(ffi.string(C.mf_last_error())) end
  end
  -- the number a value stands for when written into one element: numbers, booleans, and tensors
  -- of one element whose dims are all 1 (PyTorch drops leading size-1 dims of an assigned value)
  local function scalar_value(v, dtype, what)
    if type(v) == 'boolean' then v = v and 1 or 0 end
    if is_tensor(v) then
      for d = 0, v._ndim - 1 do
        if v._shape[d] ~= 1 then
          raise(('%s: source %s does not broadcast to destination scalar (one element is written)'):format(what, methods.shape_str(v)))
        end
      end
      v = host_readable(v)
      v = value_at(v._ptr, v._dtype_id, 0)
    end
    if type(v) ~= 'number' then raise(('%s: the value is a %s; expected a number or a tensor'):format(what, type(v))) end
    if not IS_FLOAT[dtype] and C.mf_check_value(v, dtype, what) ~= 0 then raise(ffi.string(C.mf_last_error())) end
    return v
  end
  -- copy and fill through their registered ops, the message naming the caller's operation
  local function through(op, dst, x, what)
    local ok, err = pcall(mf[op], dst, x)
    if not ok then raise((tostring(err):gsub('^.-' .. op .. ':', what .. ':', 1))) end
  end
  local function copy_into(dst, src, what) through('copy', dst, src, what) end
  -- fill's value operand: one 0-dim tensor per (device, dtype), rewritten per call (the op only
  -- reads it while it runs), so a fill allocates nothing; on the host it is written through a pointer
  -- cast once (fill_ptr; false elsewhere): one store, no native call
  local fill_scratch, fill_ptr = {}, {}
  local function fill_value(t, v, what)
    local key = t._device_id * 64 + t._dtype_id
    local s = fill_scratch[key]
    if not s then
      s = new_tensor({}, t._dtype_id, t._device_id)
      fill_scratch[key] = s
      fill_ptr[key] = t._device_id == HOST and ffi.cast(PTR[t._dtype_id], s._ptr)
    end
    v = scalar_value(v, t._dtype_id, what)
    -- FFI converts as the fill kernel does: rounded to float, truncated to an integer dtype (whose
    -- range scalar_value has checked)
    local p = fill_ptr[key]
    if p then p[0] = v else K.of_device(t._device_id).fill(s, v) end
    return s
  end
  local function fill_into(dst, v, what) through('fill', dst, fill_value(dst, v, what), what) end

  -- Whether the in-place ops' operand src (broadcast to dst) shares memory with dst other than
  -- element for element (x:add_(x:t()), a row added into the next), so that writing dst while
  -- reading src would read values already written: the ops then read a copy of src (as copy does).
  local intptr = ffi.typeof('intptr_t')
  local function byte_range(t)
    local lo, hi, size = 0, 0, C.mf_dtype_size(t._dtype_id)
    for d = 0, t._ndim - 1 do
      local s = t._strides[d] * (t._shape[d] - 1)
      if s < 0 then lo = lo + s else hi = hi + s end
    end
    local base = ffi.cast(intptr, t._ptr)
    return base + lo * size, base + (hi + 1) * size
  end
  function mf._reads_overlap(dst, src)
    if dst._count == 0 or src._count == 0 or dst._store ~= src._store then return false end
    local a0, a1 = byte_range(dst)
    local b0, b1 = byte_range(src)
    if a1 <= b0 or b1 <= a0 then return false end
    if dst._ptr ~= src._ptr or dst._dtype_id ~= src._dtype_id then return true end
    local lead = dst._ndim - src._ndim  -- same start: element for element when the strides agree
    for d = 0, dst._ndim - 1 do
      if dst._shape[d] > 1 then
        local ss = (d < lead or src._shape[d - lead] == 1) and 0 or src._strides[d - lead]
        if ss ~= dst._strides[d] then return true end
      end
    end
    return false
  end

  function methods.set(t, ...)
    local n = select('#', ...)
    if n == 0 then raise('set: expected indices and a value: t:set(i, j, v)') end
    local args = pack_args(n, ...)
    local v = args[n]
    args[n] = nil
    local off = elem_offset(t, args, 'set', n - 1)
    check_writable(t, 'set')
    if t._autograd ~= 0 then mf._check_write_target(t, 'set') end  -- not into a recorded result (tape.lua)
    if host_readable(t) ~= t then  -- device memory: fill the one-element view of the position
      local e = t
      for d = 1, #args do
        local i = args[d] < 0 and args[d] + tonumber(t._shape[d - 1]) + 1 or args[d]
        e = mf.narrow(e, d, i, 1)
      end
      K.of_device(t._device_id).fill(e, scalar_value(v, t._dtype_id, 'set'))
      mf._bump_version(t, mf._WRITER.set)
      return t
    end
    ffi.cast(PTR[t._dtype_id], t._ptr)[off] = scalar_value(v, t._dtype_id, 'set')
    mf._bump_version(t, mf._WRITER.set)  -- the storage's version counter (tape.lua)
    return t
  end

  function methods.item(t)
    if t._count ~= 1 then
      raise(('item: tensor has %d elements (%s); expected exactly 1'):format(tonumber(t._count), methods.shape_str(t)))
    end
    local h = host_readable(t)
    return value_at(h._ptr, h._dtype_id, 0)
  end

  -- sizes and types ----------------------------------------------------------------------------
  local function dim_index(t, d, what)
    local nd = t._ndim
    if type(d) ~= 'number' then raise(('%s: dim is a %s; expected a number'):format(what, type(d))) end
    local dd = d < 0 and d + nd + 1 or d
    if dd < 1 or dd > nd then raise(('%s: dim %d out of range for a %d-dim tensor'):format(what, d, nd)) end
    return dd - 1
  end

  -- t:size() is a size object: a plain Lua list of the sizes (so #s, s[i], unpack(s) and ipairs work
  -- as on any list, LuaJIT ignoring __len on tables) with a metatable: it prints as 2x3 ('scalar' for
  -- a 0-dim tensor's empty size, as shape_str and error messages say), == compares two size objects,
  -- s:numel() is the product. Anything that takes a list of sizes (zeros, reshape, ...) takes one.
  local Size = {}
  local size_mt = {__index = Size}
  function size_mt.__tostring(s)
    if #s == 0 then return 'scalar' end
    return table.concat(s, 'x')
  end
  function size_mt.__concat(a, b) return tostring(a) .. tostring(b) end
  function size_mt.__eq(a, b)
    if #a ~= #b then return false end
    for i = 1, #a do if a[i] ~= b[i] then return false end end
    return true
  end
  function Size.numel(s)
    local n = 1
    for i = 1, #s do n = n * s[i] end
    return n
  end
  function Size.totable(s) return {unpack(s)} end
  -- mf.Size{2, 3} (or mf.Size(2, 3)): a size object from sizes, as t:size() returns
  function mf.Size(a, ...)
    local list = type(a) == 'table' and a or {a, ...}
    local s = {}
    for i = 1, #list do
      local v = list[i]
      if type(v) ~= 'number' or v < 0 or v ~= math.floor(v) then
        raise(('Size: size %s at position %d; expected a non-negative integer'):format(tostring(v), i))
      end
      s[i] = v
    end
    return setmetatable(s, size_mt)
  end
  function mf.is_size(x) return getmetatable(x) == size_mt end

  function methods.size(t, d)
    if d then return tonumber(t._shape[dim_index(t, d, 'size')]) end
    local s = {}
    for i = 0, t._ndim - 1 do s[i + 1] = tonumber(t._shape[i]) end
    return setmetatable(s, size_mt)
  end
  function methods.stride(t, d)
    if d then return tonumber(t._strides[dim_index(t, d, 'stride')]) end
    local s = {}
    for i = 0, t._ndim - 1 do s[i + 1] = tonumber(t._strides[i]) end
    return s
  end
  function methods.dim(t) return t._ndim end
  function methods.numel(t) return tonumber(t._count) end
  function methods.nElement(t) return tonumber(t._count) end
  function methods.dtype(t) return DTYPE_NAME[t._dtype_id] end
  function methods.device(t) return K.device_name(t._device_id) end
  function methods.is_contiguous(t) return t._is_contig == 1 end
  function methods.storage_offset(t) return tonumber(t._offset) + 1 end
  function methods.data(t)
    if host_readable(t) ~= t then
      raise(('data: the tensor is on %s, whose memory the host cannot address; use t:cpu():data()')
        :format(K.device_name(t._device_id)))
    end
    return ffi.cast(PTR[t._dtype_id], t._ptr)
  end
  function methods.shape_str(t)
    if t._ndim == 0 then return 'scalar' end
    local s = {}
    for i = 0, t._ndim - 1 do s[i + 1] = tostring(tonumber(t._shape[i])) end
    return table.concat(s, 'x')
  end

  -- conversions: return t itself when nothing changes (Torch7's rule)
  local function converter(name)
    return function(t) if DTYPE_NAME[t._dtype_id] == name then return t end return mf.cast(t, name) end
  end
  methods.float, methods.double = converter('float32'), converter('float64')
  methods.int, methods.long, methods.byte = converter('int32'), converter('int64'), converter('uint8')
  function methods.type(t, name)
    if name == nil then return DTYPE_NAME[t._dtype_id] end
    return converter(DTYPE_NAME[mf._dtype_code(name, 'type')])(t)
  end
  function methods.clone(t) return mf.cast(t, DTYPE_NAME[t._dtype_id]) end
  function methods.t(t)
    if t._ndim ~= 2 then raise(('t: tensor is %s; expected 2 dims (use transpose(d1, d2))'):format(methods.shape_str(t))) end
    return mf.transpose(t, 1, 2)
  end
  function methods.view(t, ...)
    if t._is_contig ~= 1 then raise('view: tensor is not contiguous; use reshape (copies) or :contiguous() first') end
    return mf.reshape(t, ...)
  end
  -- in place, as Torch7: copy src's values (broadcast to t's shape, converted to t's dtype) into t;
  -- the write rule (README "Writes") is the native one, so graph kernels and C++ hosts share it
  function methods.copy(t, src)
    if not is_tensor(src) then
      raise(('copy: the source is a %s; expected a tensor (fill(v) writes a number)'):format(type(src)))
    end
    mf.copy(t, src)
    return t
  end
  function methods.fill(t, v)
    mf.fill(t, fill_value(t, v, 'fill'))
    return t
  end
  -- t itself when it is on the device already, else a copy there (the to op)
  function methods.to(t, device)
    local id = K.find_device(device, 'to')
    if t._device_id == id then return t end
    return mf.to(t, id)
  end
  function methods.cpu(t) return t._device_id == HOST and t or mf.to(t, HOST) end
  function methods.cuda(t)
    if C.mf_device_find('cuda') < 0 then raise('cuda: ' .. ffi.string(C.mf_cuda_reason())) end
    return methods.to(t, 'cuda')
  end
  function methods.totable(t)
    t = host_readable(t)
    local function rec(x)
      if x._ndim == 0 then return x:item() end
      local out = {}
      for i = 1, tonumber(x._shape[0]) do
        if x._ndim == 1 then out[i] = x:get(i) else out[i] = rec(mf.select(x, 1, i)) end
      end
      return out
    end
    return rec(t)
  end

  -- printing ---------------------------------------------------------------------------------
  local function fmt_values(vals, is_float)
    if not is_float then  -- integers; int64 arrives as its int64_t (a double rounds beyond 2^53)
      local out, w = {}, 0
      for i, v in ipairs(vals) do
        out[i] = type(v) == 'number' and ('%.0f'):format(v) or (tostring(v):gsub('L+$', ''))
        w = math.max(w, #out[i])
      end
      return out, w
    end
    local all_int, maxabs = true, 0
    for _, v in ipairs(vals) do
      if v ~= v or v == math.huge or v == -math.huge then
      else
        if v ~= math.floor(v) then all_int = false end
        maxabs = math.max(maxabs, math.abs(v))
      end
    end
    local f
    if not is_float or all_int and maxabs < 1e9 then f = function(v) return ('%.0f'):format(v) end
    elseif maxabs >= 1e5 or (maxabs < 1e-3 and maxabs > 0) then f = function(v) return ('%.4e'):format(v) end
    else f = function(v) return ('%.4f'):format(v) end end
    local out, w = {}, 0
    for i, v in ipairs(vals) do
      local s = v ~= v and 'nan' or v == math.huge and 'inf' or v == -math.huge and '-inf' or f(v)
      out[i] = s
      w = math.max(w, #s)
    end
    return out, w
  end

  local EDGE, LIMIT = 3, 1000
  local function tostring_tensor(t)
    local nd, n = t._ndim, tonumber(t._count)
    local header = ('[%s tensor of size %s%s]'):format(DTYPE_NAME[t._dtype_id], methods.shape_str(t),
      t._device_id == HOST and '' or ' on ' .. K.device_name(t._device_id))
    if n == 0 then return header end
    t = host_readable(t)
    local elide = n > LIMIT
    -- the indices shown along a dim: all, or the first and last EDGE with a gap marker (false)
    local function shown(size)
      local idx = {}
      if elide and size > 2 * EDGE then
        for i = 1, EDGE do idx[#idx + 1] = i end
        idx[#idx + 1] = false
        for i = size - EDGE + 1, size do idx[#idx + 1] = i end
      else
        for i = 1, size do idx[i] = i end
      end
      return idx
    end
    local p = ffi.cast(PTR[t._dtype_id], t._ptr)
    local function at(ix)
      local off = 0
      for d = 1, nd do off = off + (ix[d] - 1) * tonumber(t._strides[d - 1]) end
      if t._dtype_id == I64 then return p[off] end
      return value_at(t._ptr, t._dtype_id, off)
    end
    if nd == 0 then
      local s = fmt_values({at({})}, IS_FLOAT[t._dtype_id])
      return s[1] .. '\n' .. header
    end
    -- collect every shown value first so all share one format and width
    local vals, blocks = {}, {}
    local rows = nd == 1 and {1} or shown(tonumber(t._shape[nd - 2]))
    local cols = shown(tonumber(t._shape[nd - 1]))
    local function each_matrix(prefix, d)
      if d > nd - 2 then
        blocks[#blocks + 1] = prefix
        return
      end
      for _, i in ipairs(shown(tonumber(t._shape[d - 1]))) do
        if i then
          local pre = {unpack(prefix)}
          pre[#pre + 1] = i
          each_matrix(pre, d + 1)
        else
          blocks[#blocks + 1] = false
        end
      end
    end
    each_matrix({}, 1)
    for _, pre in ipairs(blocks) do
      if pre then
        for _, r in ipairs(rows) do
          if r then
            for _, c in ipairs(cols) do
              if c then
                local ix = {unpack(pre)}
                if nd >= 2 then ix[#ix + 1] = r end
                ix[#ix + 1] = c
                vals[#vals + 1] = at(ix)
              end
            end
          end
        end
      end
    end
    local strs, w = fmt_values(vals, IS_FLOAT[t._dtype_id])
    local k, lines = 0, {}
    for _, pre in ipairs(blocks) do
      if not pre then
        lines[#lines + 1] = '...'
      else
        if nd > 2 then
          local lab = {}
          for _, i in ipairs(pre) do lab[#lab + 1] = tostring(i) end
          lines[#lines + 1] = ('(%s,.,.) = '):format(table.concat(lab, ','))
        end
        for _, r in ipairs(rows) do
          if not r then
            lines[#lines + 1] = ' ...'
          else
            local parts = {}
            for _, c in ipairs(cols) do
              if c then
                k = k + 1
                parts[#parts + 1] = (' '):rep(w - #strs[k]) .. strs[k]
              else
                parts[#parts + 1] = '...'
              end
            end
            lines[#lines + 1] = ' ' .. table.concat(parts, '  ')
          end
        end
        if nd > 2 then lines[#lines + 1] = '' end
      end
    end
    lines[#lines + 1] = header
    return table.concat(lines, '\n')
  end

  -- metatype -----------------------------------------------------------------------------------
  -- t[{i, j}] with fewer indices than t has dims: the view t:select(1, i):select(1, j) (Torch7's
  -- partial index); each index 1-based, negative counting from the end, checked against its dim
  function partial(t, idx, what)
    local v = t
    for d = 1, #idx do
      local i, n = idx[d], tonumber(t._shape[d - 1])
      if type(i) ~= 'number' then raise(('%s: index %d is a %s; expected a number'):format(what, d, type(i))) end
      if i ~= math.floor(i) then raise(('%s: index %s at dim %d is not an integer'):format(what, tostring(i), d)) end
      local j = i < 0 and i + n + 1 or i
      if j < 1 or j > n then
        raise(('%s: index %s out of range 1..%d at dim %d'):format(what, tostring(i), n, d))
      end
      v = mf.select(v, 1, j)
    end
    return v
  end

  -- t[i] = v and t[{i, j}] = v for a view of t: v a number (every element) or a tensor that
  -- broadcasts to the view (leading size-1 dims dropped, as PyTorch)
  function write_view(t, view, v)
    check_writable(t, 'index assignment')
    if t._autograd ~= 0 then mf._check_write_target(t, 'index assignment') end  -- the base, not the view
    if is_tensor(v) then
      while v._ndim > view._ndim and v._shape[0] == 1 do v = mf.select(v, 1, 1) end
      copy_into(view, v, 'index assignment')
    else
      fill_into(view, v, 'index assignment')
    end
  end

  -- Public properties: x.shape (x:size(): 1-based, a fresh list each read, so x.shape[1] = 5 edits
  -- that list only) and x.ndim (x:dim()), read-only, on tensors and graph symbols (graph.lua). The
  -- C header's fields are _ptr, _shape ... in Lua (src/core/types.h, MF_FIELD): their C names read
  -- as errors saying what to use, and a write to any string key but grad raises, so no script
  -- reaches the header by accident (x.shape[0] = 9 or x.ndim = 5 wrote it, and kernels then read
  -- out of bounds; x.shape[1] was the second size, the C arrays being 0-based).
  local PRIVATE = {ptr = 'x:data()', count = 'x:numel()', strides = 'x:stride() or x:stride(d)',
                   offset = 'x:storage_offset()', dtype_id = 'x:dtype()', device_id = 'x:device()',
                   is_contig = 'x:is_contiguous()', owns = 'x:clone() for a tensor with storage of its own',
                   store = 'x:data() and x:storage_offset()', autograd = 'x:requires_grad()'}
  local function readonly_property(k)
    if k == 'shape' then
      raise('cannot set x.shape: it is read-only (x:size()); use x:reshape(...) or x:view(...) for a tensor of '
        .. 'another shape (x.shape is a fresh list, so x.shape[i] = v changes only that list)')
    end
    raise('cannot set x.ndim: it is read-only (x:dim()); use x:reshape(...), x:unsqueeze(d) or x:squeeze(d) '
      .. 'for another number of dims')
  end
  mf._readonly_property = readonly_property

  local function index(t, k)
    local m = methods[k]
    if m ~= nil then return m end
    if type(k) == 'number' then
      if t._ndim == 1 then return methods.get(t, k) end
      if t._ndim == 0 then raise('index: cannot index a 0-dim tensor; use :item()') end
      return mf.select(t, 1, k)
    end
    if type(k) == 'table' then
      if #k >= t._ndim then return value_at(t._ptr, t._dtype_id, elem_offset(t, k, 'index t[{i, j, ...}]')) end
      return partial(t, k, 'index t[{i, j, ...}]')
    end
    if k == 'grad' then return mf._grad_of(t) end  -- t.grad: the tape's gradient (tape.lua)
    if k == 'shape' then return methods.size(t) end  -- PyTorch's x.shape == x.size(): a fresh size object
    if k == 'ndim' then return t._ndim end
    if type(k) ~= 'string' then
      raise(('index: the index is a %s; expected a number (t[i]: row i), a table (t[{i, j}]: one element) or a method name'):format(
        is_tensor(k) and 'tensor (use mf.index_select or mf.where)' or type(k)))
    end
    local instead = PRIVATE[k]
    if instead then raise(("tensor has no field '%s' (the C header is private in Lua); use %s"):format(k, instead)) end
    raise(("tensor has no method or field '%s'"):format(k))
  end

  -- t[i] = v: element i of a 1-D tensor, or the row t:select(1, i) of a larger one; v is a number
  -- (every element of the row) or a tensor that broadcasts to the row (leading size-1 dims dropped)
  local function newindex(t, k, v)
    if type(k) == 'table' then  -- t[{i, j}] = v: one element; fewer indices than dims: that view
      -- the view is taken unrecorded: the write concerns t (a parameter's row is not a 'select' result)
      if #k < t._ndim then
        local what = 'index assignment'
        local view = t._autograd ~= 0 and mf.no_grad(partial, t, k, what) or partial(t, k, what)
        return write_view(t, view, v)
      end
      local off = elem_offset(t, k, 'index assignment')
      check_writable(t, 'index assignment')
      if t._autograd ~= 0 then mf._check_write_target(t, 'index assignment') end
      ffi.cast(PTR[t._dtype_id], t._ptr)[off] = scalar_value(v, t._dtype_id, 'index assignment')
      mf._bump_version(t, mf._WRITER.index)
      return
    end
    if type(k) ~= 'number' then
      if k == 'grad' then return mf._set_grad(t, v) end
      if k == 'shape' or k == 'ndim' then readonly_property(k) end
      if type(k) == 'string' then
        raise(("cannot set field '%s' of a tensor%s"):format(k, PRIVATE[k] and ' (the C header is private in Lua; '
          .. 'write values with x:copy(src), x:fill(v) or x[i] = v)' or ''))
      end
      raise(('index assignment: the index is a %s; expected a number (t[i] = v: row i) or a table (t[{i, j}] = v)')
        :format(is_tensor(k) and 'tensor' or type(k)))
    end
    if t._ndim == 0 then raise('index assignment: cannot index a 0-dim tensor; use :fill(v) or :copy(src)') end
    if t._ndim == 1 then
      local off = elem_offset(t, {k}, 'index assignment')
      check_writable(t, 'index assignment')
      if t._autograd ~= 0 then mf._check_write_target(t, 'index assignment') end
      ffi.cast(PTR[t._dtype_id], t._ptr)[off] = scalar_value(v, t._dtype_id, 'index assignment')
      mf._bump_version(t, mf._WRITER.index)
      return
    end
    local n = tonumber(t._shape[0])
    if k ~= math.floor(k) then raise(('index assignment: index %s at dim 1 is not an integer'):format(tostring(k))) end
    local i = k < 0 and k + n + 1 or k
    if i < 1 or i > n then
      raise(('index assignment: index %s out of range 1..%d at dim 1'):format(tostring(k), n))
    end
    write_view(t, t._autograd ~= 0 and mf.no_grad(mf.select, t, 1, i) or mf.select(t, 1, i), v)
  end

  local function binop(name)
    return function(a, b) return mf[name](a, b) end
  end

  ffi.metatype(T, {
    __index = index,
    __newindex = newindex,
    __tostring = tostring_tensor,
    __add = binop('add'), __sub = binop('sub'), __mul = binop('mul'), __div = binop('div'),
    __pow = binop('pow'),
    __unm = function(a) return mf.neg(a) end,
    __len = function(t) return t._ndim == 0 and 0 or tonumber(t._shape[0]) end,
    -- the storage reference goes with the header, in C: a Lua finalizer costs 250 ns per dead tensor,
    -- the C routine 167 (2026-11-27, a probe of 300,000 objects); the tape gives the tensors it keeps
    -- state for a Lua finalizer of their own (tape.lua's flag_ag)
    __gc = C.mf_tensor_release,
  })

  mf._T, mf._SZ = T, SZ

  -- memory and threads ---------------------------------------------------------------------------
  -- the names of the registered devices (the CPU first)
  function mf.devices() return K.device_names() end
  mf._device_id = K.find_device

  function mf.memory_stats(device)
    local s, id = ffi.new('mf_memory_stats'), device == nil and HOST or K.find_device(device, 'memory_stats')
    K.check(C.mf_memory_stats_get(id, s))
    return {in_use = tonumber(s.in_use), peak = tonumber(s.peak), cached = tonumber(s.cached),
            allocations = tonumber(s.allocations), system_allocations = tonumber(s.system_allocations),
            live_blocks = tonumber(s.live_blocks), gc_allowance = id == HOST and threshold or dev_threshold}
  end
  function mf.empty_cache(device)
    collectgarbage('collect')
    collectgarbage('collect')  -- the tape's state of a tensor freed by the first (tape.lua) goes in the second
    K.check(C.mf_memory_empty_cache(device == nil and HOST or K.find_device(device, 'empty_cache')))
  end
  function mf.set_num_threads(n)
    if type(n) ~= 'number' then raise('set_num_threads: expected a number of threads') end
    K.check(C.mf_set_num_threads(n))
  end
  function mf.get_num_threads() return C.mf_get_num_threads() end
  -- the OpenBLAS libmoonflow loaded and the kernels it runs (src/kernels/cpu/blas.h)
  local PARALLEL = {[0] = 'sequential', [1] = 'pthreads', [2] = 'openmp'}
  function mf.blas_info()
    local b = ffi.new('mf_blas_info')
    K.check(C.mf_blas_info_get(b))
    return {loaded = b.loaded ~= 0, core = ffi.string(b.core), chosen = b.chosen ~= 0,
            user_coretype = b.user_coretype ~= 0, preloaded = b.preloaded ~= 0,
            library = ffi.string(b.library), config = ffi.string(b.config),
            parallel = PARALLEL[b.parallel] or 'unknown', error = ffi.string(b.error)}
  end
  function mf.clock() return C.mf_clock() end

  -- the state's generator --------------------------------------------------------------------
  K.rng = ffi.gc(C.mf_rng_new(0), C.mf_rng_free)
  function mf.manual_seed(seed)
    if type(seed) ~= 'number' or seed < 0 or seed ~= math.floor(seed) or seed >= 2 ^ 64 then
      raise(('manual_seed: seed is %s; expected a non-negative integer below 2^64')
        :format(type(seed) == 'number' and tostring(seed) or 'a ' .. type(seed)))
    end
    C.mf_rng_seed(K.rng, seed)
  end
  function mf.initial_seed() return tonumber(C.mf_rng_get_seed(K.rng)) end
  function mf.get_rng_state() return {seed = tonumber(C.mf_rng_get_seed(K.rng)), offset = tonumber(C.mf_rng_get_offset(K.rng))} end
  -- s: a table {seed = n, offset = n} as get_rng_state returns (non-negative integers)
  function mf.set_rng_state(s)
    if type(s) ~= 'table' or is_tensor(s) then
      raise(('set_rng_state: expected a table {seed = n, offset = n} as get_rng_state() returns, got a %s'):format(type(s)))
    end
    for _, k in ipairs{'seed', 'offset'} do
      local v = s[k]
      if type(v) ~= 'number' or v < 0 or v ~= math.floor(v) or v >= 2 ^ 64 then
        raise(('set_rng_state: %s is %s; expected a non-negative integer (the table get_rng_state() returns)')
          :format(k, type(v) == 'number' and tostring(v) or 'a ' .. type(v)))
      end
    end
    for k in pairs(s) do
      if k ~= 'seed' and k ~= 'offset' then
        raise(("set_rng_state: unknown key '%s'; expected seed and offset"):format(tostring(k)))
      end
    end
    C.mf_rng_seed(K.rng, s.seed)
    C.mf_rng_set_offset(K.rng, s.offset)
  end
end

