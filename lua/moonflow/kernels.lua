-- mf.kernels: the native routines kernel strings call. Each wrapper makes one FFI call and turns a
-- failed status into a Lua error carrying the native message (which names the op and shapes).
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
       argmax = C.MF_R_ARGMAX, argmin = C.MF_R_ARGMIN}
do
  local up = {}
  for k, v in pairs(K.R) do up[k:upper()] = v end
  for k, v in pairs(up) do K.R[k] = v end
end

function K.unary(code, y, x, a, b) check(C.mf_k_unary(code, y, x, a, b)) end
function K.binary(code, z, x, y) check(C.mf_k_binary(code, z, x, y)) end
-- fused elementwise: compile a program (Lua list of (op, a, b) triples) once, run it per call
function K.fused_program(nin, list)
  local n = #list
  local arr = ffi.new('int64_t[?]', math.max(n, 1))
  for i = 1, n do arr[i - 1] = list[i] end
  local h = C.mf_fused_compile(nin, n, arr)
  if h == nil then raise(ffi.string(C.mf_last_error())) end
  return ffi.gc(h, C.mf_fused_free)
end
function K.fused(prog, out, n, list) check(C.mf_k_fused(prog, out, n, list)) end
function K.where(out, c, a, b) check(C.mf_k_where(out, c, a, b)) end
function K.copy(dst, src) check(C.mf_k_copy(dst, src)) end
function K.fill(t, v) check(C.mf_k_fill(t, v)) end
function K.arange(t, start, step) check(C.mf_k_arange(t, start, step)) end
function K.eye(t) check(C.mf_k_eye(t)) end
function K.reduce(code, y, x, mask) check(C.mf_k_reduce(code, y, x, mask)) end
function K.softmax(y, x, dim0, log) check(C.mf_k_softmax(y, x, dim0, log)) end
function K.matmul(c, a, b, ta, tb) check(C.mf_k_matmul(c, a, b, ta, tb)) end
function K.alias(view, base, offset) check(C.mf_k_alias(view, base, offset)) end
function K.concat(out, n, list, dim0) check(C.mf_k_concat(out, n, list, dim0)) end
function K.sum_to(y, g) check(C.mf_k_sum_to(y, g)) end
function K.pad_like(y, g, dim0, start0, step) check(C.mf_k_pad_like(y, g, dim0, start0, step)) end
function K.sgd_update(var, g, lr, wd) check(C.mf_k_sgd_update(var, g, lr, wd)) end
function K.momentum_update(var, acc, g, lr, mu, damp, wd, nesterov)
  check(C.mf_k_momentum_update(var, acc, g, lr, mu, damp, wd, nesterov))
end
-- adam: per-step scalars (see src/lua/abi.h): step_size, denom_scale, decay
function K.adam_update(var, m, v, g, b1, b2, step_size, denom_scale, eps, wd, decay)
  check(C.mf_k_adam_update(var, m, v, g, b1, b2, step_size, denom_scale, eps, wd, decay))
end
function K.softmax_xent(y, x, labels, dim0) check(C.mf_k_softmax_xent(y, x, labels, dim0)) end
-- convolution and pooling (NCHW): conv routines take the bind-time workspace ws (K.conv2d_workspace)
function K.conv2d(y, x, w, ws, sh, sw, ph, pw, dh, dw) check(C.mf_k_conv2d(y, x, w, ws, sh, sw, ph, pw, dh, dw)) end
function K.conv2d_backward_input(gx, gy, w, ws, sh, sw, ph, pw, dh, dw)
  check(C.mf_k_conv2d_backward_input(gx, gy, w, ws, sh, sw, ph, pw, dh, dw))
end
function K.conv2d_backward_weight(gw, gy, x, ws, sh, sw, ph, pw, dh, dw)
  check(C.mf_k_conv2d_backward_weight(gw, gy, x, ws, sh, sw, ph, pw, dh, dw))
end
function K.max_pool2d(y, x, kh, kw, sh, sw, ph, pw) check(C.mf_k_max_pool2d(y, x, kh, kw, sh, sw, ph, pw)) end
function K.max_pool2d_backward(gx, gy, x, kh, kw, sh, sw, ph, pw)
  check(C.mf_k_max_pool2d_backward(gx, gy, x, kh, kw, sh, sw, ph, pw))
end
function K.avg_pool2d(y, x, kh, kw, sh, sw, ph, pw, inc) check(C.mf_k_avg_pool2d(y, x, kh, kw, sh, sw, ph, pw, inc)) end
function K.avg_pool2d_backward(gx, gy, kh, kw, sh, sw, ph, pw, inc)
  check(C.mf_k_avg_pool2d_backward(gx, gy, kh, kw, sh, sw, ph, pw, inc))
end
function K.adaptive_avg_pool2d(y, x) check(C.mf_k_adaptive_avg_pool2d(y, x)) end
function K.adaptive_avg_pool2d_backward(gx, gy) check(C.mf_k_adaptive_avg_pool2d_backward(gx, gy)) end
function K.index_select(y, x, idx, dim0) check(C.mf_k_index_select(y, x, idx, dim0)) end
function K.index_add_like(y, g, idx, dim0) check(C.mf_k_index_add_like(y, g, idx, dim0)) end
function K.one_hot(y, labels) check(C.mf_k_one_hot(y, labels)) end
function K.batch_norm(y, x, w, b, eps) check(C.mf_k_batch_norm(y, x, w, b, eps)) end
function K.dropout_mask(m, p) check(C.mf_k_dropout_mask(m, K.rng, p)) end
-- rand draws from the state's generator, installed by the tensor module as K.rng
function K.rand(t, normal, a, b) check(C.mf_k_rand(t, K.rng, normal, a, b)) end

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

-- a borrowed header over y's memory with x's shape, contiguous (used to copy x into y row-major)
function K.header(y, x)
  local h = tensor_ct()
  ffi.copy(h, y, ffi.sizeof(tensor_ct))
  h.owns = 0
  h.ndim = x.ndim
  local acc = 1
  for i = x.ndim - 1, 0, -1 do
    h.shape[i] = x.shape[i]
    h.strides[i] = acc
    acc = acc * x.shape[i]
  end
  h.count = acc
  h.is_contig = 1
  return h
end

-- the (h, w) pair of a 1- or 2-value integer-list param; an empty list gives (dh, dw)
function K.pair(list, dh, dw)
  local n = #list
  if n == 0 then return dh, dw end
  return list[1], list[n]
end

-- bytes of the scratch a conv routine needs (kind 0 conv2d, 1 backward_input, 2 backward_weight),
-- at least 1: the factory allocates it once per bind
local bytes_buf = ffi.new('int64_t[1]')
function K.conv2d_workspace(kind, out, a, b, sh, sw, ph, pw, dh, dw)
  check(C.mf_k_conv2d_workspace(kind, out, a, b, sh, sw, ph, pw, dh, dw, bytes_buf))
  return math.max(tonumber(bytes_buf[0]), 1)
end

-- a C array of pointers to the given tensors (kept alive by the caller's closure)
function K.tensor_list(ts)
  local arr = list_ct(#ts)
  for i = 1, #ts do arr[i - 1] = ts[i] end
  return arr
end

return K
