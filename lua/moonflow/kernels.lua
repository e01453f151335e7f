-- mf.kernels: the native routines kernel strings call, as K, one table per device (K.of_device):
-- each wrapper makes one FFI call through the device's kernel table and turns a failed status into
-- a Lua error carrying the native message (which names the op and shapes). mf.kernels is the host's.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

local K = {}
local tensor_ct = ffi.typeof('mf_tensor')
local list_ct = ffi.typeof('const mf_tensor *[?]')

-- When only moonflow frames are left, a tail call (`return f(...)`) replaced the frame of the chunk
-- the host started: the script, the -e code or the REPL statement, which the CLI registers as
-- registry['moonflow.entry']. Its own tail calls (CALLT/CALLMT bytecodes, found with jit.util) are
-- the only ways out of it, so their lines name the user's line. Returns 'src:line: ' or nil.
local tail_ops  -- opcodes of CALLT and CALLMT, read from two probe functions (false: no jit.util)
local function tail_call_site()
  local co, is_main = coroutine.running()
  if co and not is_main then return nil end  -- a coroutine's body: not the entry chunk
  local fn = debug.getregistry()['moonflow.entry']
  if type(fn) ~= 'function' then return nil end
  if tail_ops == nil then
    local ok, ju = pcall(require, 'jit.util')
    tail_ops = false
    if ok then
      local bit = require 'bit'
      tail_ops = {}
      for _, probe in ipairs{loadstring('return f()'), loadstring('return f(...)')} do
        tail_ops[bit.band(ju.funcbc(probe, ju.funcinfo(probe).bytecodes - 1), 0xff)] = true
      end
    end
  end
  if not tail_ops then return nil end
  local ju, bit = require 'jit.util', require 'bit'
  local info = ju.funcinfo(fn)
  if not info.source then return nil end  -- a C function
  local lines, seen = {}, {}
  for pc = 1, info.bytecodes - 1 do
    local ins = ju.funcbc(fn, pc)
    if ins and tail_ops[bit.band(ins, 0xff)] then
      local line = ju.funcinfo(fn, pc).currentline
      if line and not seen[line] then seen[line] = true; lines[#lines + 1] = line end
    end
  end
  if #lines == 0 then return nil end
  local src = info.source:gsub('^[@=]', '')
  if #lines == 1 then return ('%s:%d: '):format(src, lines[1]) end
  return ('%s:%d: '):format(src, lines[#lines]), (' (or the tail call on line %s)'):format(
    table.concat(lines, ', ', 1, #lines - 1))
end

-- Raises msg blaming the first caller outside moonflow's own Lua files and kernel strings, so
-- the user's line is the one reported.
local function raise(msg)
  local level = 2  -- debug.getinfo(1) is raise itself; error() counts levels the same way
  while true do
    local info = debug.getinfo(level, 'S')
    if not info then  -- only internal frames (a tail call hid the caller)
      local where, others = tail_call_site()
      if where then error(where .. msg .. (others or ''), 0) end
      level = 0
      break
    end
    local src = info.source
    if info.what ~= 'C' and not src:find('^@lua/moonflow/') and not src:find('kernel%)$') then break end
    level = level + 1
  end
  error(msg, level)
end
K.raise = raise

local function check(st)
  if st ~= 0 then raise(ffi.string(C.mf_last_error())) end
end
K.check = check

-- pointwise codes by op name, read from the registry (each pointwise op's block assigns its own, see
-- src/op/elemwise.h): U the unary ops, B the binary ones; K.unary, K.binary and fused programs take them
K.U, K.B = {}, {}
do
  local arity = ffi.new('int32_t[1]')
  for i = 0, C.mf_op_count() - 1 do
    local code = C.mf_op_pointwise(i, arity, nil)
    if code >= 0 then (arity[0] == 1 and K.U or K.B)[ffi.string(C.mf_op_name(i))] = code end
  end
end
-- reduction codes of the native dispatch table, by op name and upper-case as the C++ blocks write them
K.R = {sum = C.MF_R_SUM, mean = C.MF_R_MEAN, max = C.MF_R_MAX, min = C.MF_R_MIN, prod = C.MF_R_PROD,
       argmax = C.MF_R_ARGMAX, argmin = C.MF_R_ARGMIN, any = C.MF_R_ANY, all = C.MF_R_ALL,
       logsumexp = C.MF_R_LOGSUMEXP, var = C.MF_R_VAR, std = C.MF_R_STD, norm = C.MF_R_NORM}
do
  local up = {}
  for k, v in pairs(K.R) do up[k:upper()] = v end
  for k, v in pairs(up) do K.R[k] = v end
end

-- fused elementwise: compile a program (Lua list of (op, a, b) triples) once, run it per call. The
-- handle is kept per list (a weak key: the list of a cached params record, ops.lua, which every
-- step of that program shares; the list must not change afterwards) and number of inputs, so the
-- fused steps of one program share one handle: binding a graph that fuses into thousands of
-- identical steps (a ladder of tanh(a + b), sigmoid(a - b)) made as many compiled programs, each
-- a finalizable cdata, whose finalizer-table entries grew the collector's work faster than the
-- graph (issue 20). A handle is read-only once compiled but for its per-dtype CUDA kernels, which
-- fused_prepare fills once each; sharing it is safe within the engine that owns it.
local compiled = setmetatable({}, {__mode = 'k'})
function K.fused_program(nin, list)
  local by_nin = compiled[list]
  local h = by_nin and by_nin[nin]
  if h then return h end
  local n = #list
  local arr = ffi.new('int64_t[?]', math.max(n, 1))
  for i = 1, n do arr[i - 1] = list[i] end
  h = C.mf_fused_compile(nin, n, arr)
  if h == nil then raise(ffi.string(C.mf_last_error())) end
  h = ffi.gc(h, C.mf_fused_free)
  if not by_nin then by_nin = {}; compiled[list] = by_nin end
  by_nin[nin] = h
  return h
end
-- a program's device form, made at bind time for an output like out (on cuda: its kernel, generated and
-- compiled by NVRTC; nothing on the CPU)
function K.fused_prepare(prog, out) check(C.mf_fused_prepare(prog, out._device_id, out._dtype_id)) end

-- The native routines of one device: a wrapper per member of its mf_kernel_table (abi.h), each one
-- call through the table's function pointer (read once, here) and one status check. Added to Kd.
local function add_routines(Kd, tbl)
  local k_unary, k_binary, k_fused, k_where, k_copy = tbl.unary, tbl.binary, tbl.fused, tbl.where, tbl.copy
  local k_fill, k_arange, k_eye, k_reduce, k_softmax = tbl.fill, tbl.arange, tbl.eye, tbl.reduce, tbl.softmax
  local k_matmul, k_alias, k_concat, k_sum_to = tbl.matmul, tbl.alias, tbl.concat, tbl.sum_to
  local k_pad_like, k_sgd_update, k_momentum_update = tbl.pad_like, tbl.sgd_update, tbl.momentum_update
  local k_adam_update, k_softmax_xent, k_conv2d = tbl.adam_update, tbl.softmax_xent, tbl.conv2d
  local k_conv2d_backward_input = tbl.conv2d_backward_input
  local k_conv2d_backward_weight, k_max_pool2d = tbl.conv2d_backward_weight, tbl.max_pool2d
  local k_max_pool2d_backward, k_avg_pool2d = tbl.max_pool2d_backward, tbl.avg_pool2d
  local k_avg_pool2d_backward, k_adaptive_avg_pool2d = tbl.avg_pool2d_backward, tbl.adaptive_avg_pool2d
  local k_adaptive_avg_pool2d_backward, k_index_select = tbl.adaptive_avg_pool2d_backward, tbl.index_select
  local k_index_add_like, k_one_hot, k_batch_norm = tbl.index_add_like, tbl.one_hot, tbl.batch_norm
  local k_dropout_mask, k_rand, k_conv2d_workspace = tbl.dropout_mask, tbl.rand, tbl.conv2d_workspace
  local k_copy_from_host, k_copy_to_host = tbl.copy_from_host, tbl.copy_to_host
  function Kd.unary(code, y, x, a, b) check(k_unary(code, y, x, a, b)) end
  function Kd.binary(code, z, x, y) check(k_binary(code, z, x, y)) end
  function Kd.fused(prog, out, n, list) check(k_fused(prog, out, n, list)) end
  function Kd.where(out, c, a, b) check(k_where(out, c, a, b)) end
  function Kd.copy(dst, src) check(k_copy(dst, src)) end
  -- the host copies of a transfer: dst on this device and src on the host (CPU), or the reverse
  function Kd.copy_from_host(dst, src) check(k_copy_from_host(dst, src)) end
  function Kd.copy_to_host(dst, src) check(k_copy_to_host(dst, src)) end
  function Kd.fill(t, v) check(k_fill(t, v)) end
  function Kd.arange(t, start, step) check(k_arange(t, start, step)) end
  function Kd.eye(t) check(k_eye(t)) end
  function Kd.reduce(code, y, x, mask) check(k_reduce(code, y, x, mask)) end
  local k_reduce_p = tbl.reduce_p
  function Kd.reduce_p(code, y, x, mask, p) check(k_reduce_p(code, y, x, mask, p)) end
  function Kd.softmax(y, x, dim0, log) check(k_softmax(y, x, dim0, log)) end
  function Kd.matmul(c, a, b, ta, tb) check(k_matmul(c, a, b, ta, tb)) end
  -- c = alpha op(a) op(b) + beta c: one GEMM accumulating into c (read unless beta is 0)
  local k_gemm = tbl.gemm
  function Kd.gemm(c, a, b, ta, tb, alpha, beta) check(k_gemm(c, a, b, ta, tb, alpha, beta)) end
  function Kd.alias(view, base, offset) check(k_alias(view, base, offset)) end
  function Kd.concat(out, n, list, dim0) check(k_concat(out, n, list, dim0)) end
  function Kd.sum_to(y, g) check(k_sum_to(y, g)) end
  function Kd.pad_like(y, g, dim0, start0, step) check(k_pad_like(y, g, dim0, start0, step)) end
  -- values and indices along a dim, running sums and products (src/kernels/cpu/sort.cc)
  local k_max_dim, k_sort, k_topk, k_kthvalue = tbl.max_dim, tbl.sort, tbl.topk, tbl.kthvalue
  local k_cumulate, k_cumprod_grad = tbl.cumulate, tbl.cumprod_grad
  function Kd.max_dim(v, i, x, dim0, is_min) check(k_max_dim(v, i, x, dim0, is_min)) end
  function Kd.sort(v, i, x, dim0, descending) check(k_sort(v, i, x, dim0, descending)) end
  function Kd.topk(v, i, x, dim0, k, largest, sorted) check(k_topk(v, i, x, dim0, k, largest, sorted)) end
  function Kd.kthvalue(v, i, x, dim0, k) check(k_kthvalue(v, i, x, dim0, k)) end
  function Kd.cumulate(y, x, dim0, prod, reverse) check(k_cumulate(y, x, dim0, prod, reverse)) end
  function Kd.cumprod_grad(gx, x, gy, dim0, reverse) check(k_cumprod_grad(gx, x, gy, dim0, reverse)) end
  function Kd.sgd_update(var, g, lr, wd) check(k_sgd_update(var, g, lr, wd)) end
  function Kd.momentum_update(var, acc, g, lr, mu, damp, wd, nesterov)
    check(k_momentum_update(var, acc, g, lr, mu, damp, wd, nesterov))
  end
  -- the updates read lr and adam's step from one-element tensors; form: src/core/update_math.h AdamForm
  function Kd.adam_update(var, m, v, g, step, lr, b1, b2, eps, wd, form)
    check(k_adam_update(var, m, v, g, step, lr, b1, b2, eps, wd, form))
  end
  function Kd.softmax_xent(y, x, labels, dim0) check(k_softmax_xent(y, x, labels, dim0)) end
  -- convolution and pooling (NCHW): conv routines take the bind-time workspace ws (K.conv2d_workspace)
  function Kd.conv2d(y, x, w, ws, sh, sw, ph, pw, dh, dw) check(k_conv2d(y, x, w, ws, sh, sw, ph, pw, dh, dw)) end
  function Kd.conv2d_backward_input(gx, gy, w, ws, sh, sw, ph, pw, dh, dw)
    check(k_conv2d_backward_input(gx, gy, w, ws, sh, sw, ph, pw, dh, dw))
  end
  function Kd.conv2d_backward_weight(gw, gy, x, ws, sh, sw, ph, pw, dh, dw)
    check(k_conv2d_backward_weight(gw, gy, x, ws, sh, sw, ph, pw, dh, dw))
  end
  function Kd.max_pool2d(y, x, kh, kw, sh, sw, ph, pw) check(k_max_pool2d(y, x, kh, kw, sh, sw, ph, pw)) end
  function Kd.max_pool2d_backward(gx, gy, x, kh, kw, sh, sw, ph, pw)
    check(k_max_pool2d_backward(gx, gy, x, kh, kw, sh, sw, ph, pw))
  end
  function Kd.avg_pool2d(y, x, kh, kw, sh, sw, ph, pw, inc) check(k_avg_pool2d(y, x, kh, kw, sh, sw, ph, pw, inc)) end
  function Kd.avg_pool2d_backward(gx, gy, kh, kw, sh, sw, ph, pw, inc)
    check(k_avg_pool2d_backward(gx, gy, kh, kw, sh, sw, ph, pw, inc))
  end
  function Kd.adaptive_avg_pool2d(y, x) check(k_adaptive_avg_pool2d(y, x)) end
  function Kd.adaptive_avg_pool2d_backward(gx, gy) check(k_adaptive_avg_pool2d_backward(gx, gy)) end
  function Kd.index_select(y, x, idx, dim0) check(k_index_select(y, x, idx, dim0)) end
  function Kd.index_add_like(y, g, idx, dim0) check(k_index_add_like(y, g, idx, dim0)) end
  function Kd.one_hot(y, labels) check(k_one_hot(y, labels)) end
  local k_gather, k_scatter, k_index_add = tbl.gather, tbl.scatter, tbl.index_add
  local k_masked_select, k_nonzero = tbl.masked_select, tbl.nonzero
  function Kd.gather(y, x, idx, dim0) check(k_gather(y, x, idx, dim0)) end
  function Kd.scatter(y, x, idx, src, dim0, add) check(k_scatter(y, x, idx, src, dim0, add)) end
  function Kd.index_add(y, x, idx, src, dim0) check(k_index_add(y, x, idx, src, dim0)) end
  -- the first y:size(1) selected, then fill (masked_select: x's dtype; nonzero: rows of it)
  function Kd.masked_select(y, x, mask, fill) check(k_masked_select(y, x, mask, fill)) end
  function Kd.nonzero(y, x, fill) check(k_nonzero(y, x, fill)) end
  function Kd.batch_norm(y, x, w, b, eps) check(k_batch_norm(y, x, w, b, eps)) end
  function Kd.dropout_mask(m, p) check(k_dropout_mask(m, K.rng, p)) end
  -- rand draws from the state's generator, installed by the tensor module as K.rng
  function Kd.rand(t, normal, a, b) check(k_rand(t, K.rng, normal, a, b)) end
  -- everyday shape ops and integer draws (src/kernels/cpu/kernels.h); shift: an int64_t[ndim] or nil
  local k_periodic_copy, k_tri, k_linspace = tbl.periodic_copy, tbl.tri, tbl.linspace
  local k_randint, k_randperm, k_multinomial = tbl.randint, tbl.randperm, tbl.multinomial
  function Kd.periodic_copy(y, x, shift, flip_mask) check(k_periodic_copy(y, x, shift, flip_mask)) end
  function Kd.tri(y, x, k, upper) check(k_tri(y, x, k, upper)) end
  function Kd.linspace(t, start, stop, base) check(k_linspace(t, start, stop, base)) end
  function Kd.randint(t, low, high) check(k_randint(t, K.rng, low, high)) end
  function Kd.randperm(t) check(k_randperm(t, K.rng)) end
  function Kd.multinomial(y, probs, replacement) check(k_multinomial(y, K.rng, probs, replacement)) end
  -- bytes of the scratch a conv routine needs (kind 0 conv2d, 1 backward_input, 2 backward_weight),
  -- at least 1: the factory allocates it once per bind
  local bytes_buf = ffi.new('int64_t[1]')
  function Kd.conv2d_workspace(kind, out, a, b, sh, sw, ph, pw, dh, dw)
    check(k_conv2d_workspace(kind, out, a, b, sh, sw, ph, pw, dh, dw, bytes_buf))
    return math.max(tonumber(bytes_buf[0]), 1)
  end
end

-- bind-time helpers ------------------------------------------------------------------------------

-- 1-based dim (negative from the end) to 0-based
function K.dim0(d, ndim)
  if d < 0 then d = d + ndim + 1 end
  return d - 1
end

-- bit mask of the 0-based dims a list of 1-based dims names; an empty list means every dim
function K.dim_mask(dims, ndim)
  if #dims == 0 then return ndim > 0 and 2 ^ ndim - 1 or 0 end
  local m = 0
  for _, d in ipairs(dims) do m = m + 2 ^ K.dim0(d, ndim) end
  return m
end

-- y, the output of an op that writes x and returns it (copy, fill: infer_shape gave y x's shape
-- and strides at offset 0), becomes a borrowed view of x: what K.alias(y, x, 0) does, without the
-- native call and its bounds check, which a view of x's own layout always passes
function K.alias_whole(y, x)
  y._ptr, y._store, y._offset, y._owns = x._ptr, x._store, x._offset, 0
end

-- a borrowed header over y's memory with x's shape, contiguous (used to copy x into y row-major)
function K.header(y, x)
  local h = tensor_ct()
  ffi.copy(h, y, ffi.sizeof(tensor_ct))
  h._owns = 0
  h._ndim = x._ndim
  local acc = 1
  for i = x._ndim - 1, 0, -1 do
    h._shape[i] = x._shape[i]
    h._strides[i] = acc
    acc = acc * x._shape[i]
  end
  h._count = acc
  h._is_contig = 1
  return h
end

-- a borrowed header over t's memory with other sizes and element strides (a vector seen as a 1 x n
-- or n x 1 matrix); bind time only: the closure re-points its ._ptr to t._ptr on every run
function K.header_as(t, sizes, strides)
  local h = tensor_ct()
  ffi.copy(h, t, ffi.sizeof(tensor_ct))
  h._owns = 0
  h._ndim = #sizes
  local count, contig, want = 1, true, 1
  for i = #sizes, 1, -1 do
    h._shape[i - 1], h._strides[i - 1] = sizes[i], strides[i]
    count = count * sizes[i]
    if sizes[i] ~= 1 then
      contig = contig and strides[i] == want
      want = want * sizes[i]
    end
  end
  h._count, h._is_contig = count, contig and 1 or 0
  return h
end

-- the (h, w) pair of a 1- or 2-value integer-list param; an empty list gives (dh, dw)
function K.pair(list, dh, dw)
  local n = #list
  if n == 0 then return dh, dw end
  return list[1], list[n]
end

-- a C array of pointers to the given tensors (kept alive by the caller's closure)
function K.tensor_list(ts)
  local arr = list_ct(#ts)
  for i = 1, #ts do arr[i - 1] = ts[i] end
  return arr
end

-- devices (the registry of src/core/device.h) ----------------------------------------------------

K.HOST = C.MF_CPU  -- the id of the host, the device whose memory Lua and host copies address
-- which kernel strings a device runs (mf_device_strings), by the name messages give them
K.STRINGS = {[C.MF_CPU] = 'cpu', [C.MF_CUDA] = 'cuda'}

-- the names of the registered devices, in id order
function K.device_names()
  local names = {}
  for id = 0, C.mf_device_count() - 1 do names[id + 1] = ffi.string(C.mf_device_name(id)) end
  return names
end

-- the name of the device with this id
function K.device_name(id)
  local p = C.mf_device_name(id)
  if p == nil then raise(ffi.string(C.mf_last_error())) end
  return ffi.string(p)
end

-- the id of the device called name; what names the caller in the error for an unknown name
function K.find_device(name, what)
  if type(name) ~= 'string' then
    local kind = ffi.istype(tensor_ct, name) and 'tensor' or type(name)  -- 'cdata' says nothing
    raise(("%s: the device is a %s; expected a device name (%s)"):format(what, kind, table.concat(K.device_names(), ', ')))
  end
  local id = C.mf_device_find(name)
  if id < 0 and name == 'cuda' then  -- the backend's own reason: no GPU, or no backend in this build
    raise(('%s: cuda: %s'):format(what, ffi.string(C.mf_cuda_reason())))
  end
  if id < 0 then
    raise(("%s: device '%s' is not registered; the devices are %s"):format(what, name, table.concat(K.device_names(), ', ')))
  end
  return id
end

-- One K per device, built on first use from the device's table (mf_device_kernels): the helpers
-- and codes above, shared, plus that device's routines, its name, id and kernel strings (strings).
-- K.of_device(id) is what factories receive; K itself is the host's.
local by_device = {}
function K.of_device(id)
  local Kd = by_device[id]
  if Kd then return Kd end
  local t = C.mf_device_kernels(id)
  if t == nil then raise(ffi.string(C.mf_last_error())) end
  Kd = id == K.HOST and K or setmetatable({}, {__index = K})  -- later K fields (K.rng) stay visible
  if Kd ~= K then for k, v in pairs(K) do Kd[k] = v end end
  add_routines(Kd, t)
  Kd.device, Kd.device_id, Kd.strings = ffi.string(C.mf_device_name(id)), id, C.mf_device_strings(id)
  by_device[id] = Kd
  return Kd
end
K.of_device(K.HOST)

return K
