-- The op test harness: runs each case of tests/ops/cases.lua (and of cases_custom.lua: ops
-- registered from Lua) through the public mf.<op> function on float32 and float64 (and integer
-- dtypes where the case lists them), in several memory layouts, eagerly and in a graph (placeholders
-- fed the same views, each output read by another op), and compares every element with the case's
-- pure-Lua float64 reference.
--
-- Load with loadfile('tests/ops/harness.lua')(dir) (dir: this folder); it returns
--   H.op_names()          every registered op, sorted
--   H.cases_of(op)        names of the cases of one op
--   H.case_names()        every case name, in table order
--   H.run_case(name)      nil on success, else a message naming case, dtype, layout and element
--   H.check_coverage()    nil when every op has a case checking values, a doc and param docs,
--                         else a message listing what is missing
--   H.time_case(name, n)  CPU microseconds per call: the case's first dtype, contiguous inputs
--   H.set_device(name)    run later cases with their inputs made on that device and graphs in a
--                         session on it; its memory need not be host-addressable (cuda: inputs are
--                         written on the host and copied there; results are read through :cpu())
-- Run as a script, `moonflow tests/ops/harness.lua [--time] [--device NAME] [--shard K/N] [op or case ...]`
-- runs (or times) the cases, all or the named ones, on the CPU or that device, against the same
-- float64 references, and exits non-zero on a failure; --shard K/N keeps every Nth case from the Kth
-- (N processes side by side cover every case once; shard 1 also checks coverage).
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
local mf = require 'moonflow'

local script = debug.getinfo(1, 'S').source:match('^@(.*)$')
local as_script = script ~= nil and type(arg) == 'table' and arg[0] == script
local dir = not as_script and select(1, ...) or nil
if type(dir) ~= 'string' then dir = script and script:match('^(.*)[/\\]') or '.' end
local L = dofile(dir .. '/cases_lib.lua')
local CASES = assert(loadfile(dir .. '/cases.lua'))(dir, L)
for _, c in ipairs(assert(loadfile(dir .. '/cases_custom.lua'))(mf, L)) do CASES[#CASES + 1] = c end

local H = {}
local floor = math.floor

-- dtypes ---------------------------------------------------------------------------------------
local CODE = {float32 = 0, float64 = 1, int32 = 2, int64 = 3, uint8 = 4}
local NAME = {[0] = 'float32', 'float64', 'int32', 'int64', 'uint8'}
local PTR = {[0] = ffi.typeof('float *'), ffi.typeof('double *'), ffi.typeof('int32_t *'),
             ffi.typeof('int64_t *'), ffi.typeof('uint8_t *')}
local IS_FLOAT = {float32 = true, float64 = true}
local RTOL = {float32 = 1e-5, float64 = 1e-12}
local FLOOR = 1e-6  -- the smallest magnitude a relative tolerance is taken of
local shape_buf, stride_buf = ffi.new('int64_t[8]'), ffi.new('int64_t[8]')
local DEVICE, DEVICE_ID = nil, C.MF_CPU  -- where inputs are made and graphs run (H.set_device)
-- whether DEVICE's memory is host-addressable; if not (cuda), inputs are written on the host, then copied
local DEVICE_HOST = true

-- tensors built and read without any op --------------------------------------------------------
local function alloc(shape, dtype, device_id)
  for i = 1, #shape do shape_buf[i - 1] = shape[i] end
  local t = ffi.new('mf_tensor')
  if C.mf_tensor_init(t, #shape, shape_buf, CODE[dtype], device_id or DEVICE_ID) ~= 0 then
    error(ffi.string(C.mf_last_error()))
  end
  return t
end

-- A view of base with the given shape, strides (elements) and offset (elements).
local function strided_view(base, shape, strides, offset)
  local v = ffi.new('mf_tensor')
  C.mf_tensor_share(v, base)
  for i = 1, #shape do shape_buf[i - 1], stride_buf[i - 1] = shape[i], strides[i] end
  if C.mf_tensor_restride(v, #shape, shape_buf, stride_buf, offset) ~= 0 then error(ffi.string(C.mf_last_error())) end
  return v
end

local function shape_of(t)
  local s = {}
  for d = 0, t._ndim - 1 do s[d + 1] = tonumber(t._shape[d]) end
  return s
end

-- every element of t in row-major order of its shape, read through its strides (on the host: a
-- tensor on another device is copied there first)
local function read(t)
  if t._device_id ~= C.MF_CPU then t = t:cpu() end
  -- (through mf._value_at: a NaN with the sign bit and a large payload, as CUDA's double erf gives,
  -- would otherwise read as nil)
  local shape, ptr, dt, out, st = shape_of(t), t._ptr, t._dtype_id, {}, {}
  for d = 1, #shape do st[d] = tonumber(t._strides[d - 1]) end
  L.walk(shape, {st}, function(i, o) out[i] = mf._value_at(ptr, dt, o[1]) end)
  return out
end

-- what property checks (c.check) read tensors with
local TOOLS = {read = read, shape = shape_of, dtype = function(t) return NAME[t._dtype_id] end}

local function shape_str(s)
  if #s == 0 then return 'scalar' end
  return table.concat(s, 'x')
end

-- layouts: where the same logical values live in memory ------------------------------------------
-- contiguous: row-major. transposed: the last two dims swapped in memory. permuted: every dim
-- reversed in memory (3+ dims). narrowed: a window at offset 1 in every dim of a buffer padded by
-- 1 before and 2 after (a 0-dim tensor: the middle of 3 elements). sliced: every other element
-- along the last dim (a slice with step 2). selected: index 2 of a trailing dim of size 3 (a
-- select: every stride tripled, offset 1). expanded: stride 0 along the first dim longer than 1
-- (its values are made equal along that dim). Padding holds NaN (or 99 for integers), so reading
-- outside the view shows up in the result, and writing outside it (ops that write inputs) is
-- caught by padding_intact. Inputs a layout does not apply to (too few dims) stay contiguous.
local LAYOUTS = {'contiguous', 'transposed', 'permuted', 'narrowed', 'sliced', 'selected', 'expanded'}

local function expand_dim(shape)
  for d = 1, #shape do if shape[d] > 1 then return d end end
end

local function layout_applies(layout, shape)
  local nd = #shape
  if layout == 'contiguous' then return true end
  if layout == 'transposed' then return nd >= 2 end
  if layout == 'permuted' then return nd >= 3 end
  if layout == 'expanded' then return expand_dim(shape) ~= nil end
  if layout == 'sliced' then return nd >= 1 end
  if layout == 'selected' then return nd < 8 end  -- its buffer has one more dim
  return true  -- narrowed, selected: a 0-dim tensor becomes one element inside a 3-element buffer
end

-- Values equal along the dim the expanded layout repeats (others unchanged).
local function repeat_along(values, shape)
  local d, out = expand_dim(shape), {}
  for i = 1, #values do
    local idx = L.unravel(i, shape)
    idx[d] = 1
    out[i] = values[L.ravel(idx, shape)]
  end
  return out
end

local function make_input(shape, dtype, values, layout)
  local nd = #shape
  if not layout_applies(layout, shape) then layout = 'contiguous' end
  local pad = IS_FLOAT[dtype] and 0 / 0 or 99
  local base_shape, perm, offset = {}, {}, 0
  for d = 1, nd do base_shape[d], perm[d] = shape[d], d end
  if layout == 'transposed' then
    perm[nd - 1], perm[nd] = nd, nd - 1
  elseif layout == 'permuted' then
    for d = 1, nd do perm[d] = nd + 1 - d end
  elseif layout == 'narrowed' then
    for d = 1, nd do base_shape[d] = shape[d] + 3 end
  elseif layout == 'sliced' then
    base_shape[nd] = 2 * shape[nd]
  elseif layout == 'expanded' then
    base_shape[expand_dim(shape)] = 1
  end
  -- memory order: base dim k holds logical dim perm[k]
  local mem_shape = {}
  for k = 1, nd do mem_shape[k] = base_shape[perm[k]] end
  if layout == 'selected' then mem_shape[nd + 1], offset = 3, 1 end  -- index 2 of a trailing dim of 3
  if nd == 0 and layout == 'narrowed' then mem_shape, offset = {3}, 1 end
  local base = alloc(mem_shape, dtype, DEVICE_HOST and DEVICE_ID or C.MF_CPU)
  local p, total = ffi.cast(PTR[CODE[dtype]], base._ptr), L.numel(mem_shape)
  for i = 0, total - 1 do p[i] = pad end
  local mem_st = L.strides(mem_shape)
  local st = {}
  for k = 1, nd do st[perm[k]] = mem_st[k] end
  if layout == 'narrowed' then for d = 1, nd do offset = offset + st[d] end end
  if layout == 'sliced' then st[nd] = st[nd] * 2 end
  if layout == 'expanded' then st[expand_dim(shape)] = 0 end
  L.walk(shape, {st}, function(i, o) p[offset + o[1]] = values[i] end)
  if not DEVICE_HOST then base = base:to(DEVICE) end  -- the whole buffer, padding too, then the same view
  local mem = {base = base, numel = total, pad = pad, offset = offset, strides = st}
  if layout == 'contiguous' then return base, layout, mem end
  return strided_view(base, shape, st, offset), layout, mem
end

-- nil when every element of make_input's buffer outside the view still holds the padding
local function padding_intact(mem, shape, dtype)
  local b = mem.base._device_id == C.MF_CPU and mem.base or mem.base:cpu()
  local p, inside = ffi.cast(PTR[CODE[dtype]], b._ptr), {}
  L.walk(shape, {mem.strides}, function(_, o) inside[mem.offset + o[1]] = true end)
  for k = 0, mem.numel - 1 do
    local v = tonumber(p[k])
    if not inside[k] and not (v == mem.pad or (v ~= v and mem.pad ~= mem.pad)) then
      return ('wrote %.17g outside the view, at element %d of its buffer'):format(v, k + 1)
    end
  end
end

-- inputs -------------------------------------------------------------------------------------------
-- An input spec: shape, and optionally dtype (fixed, else the run's dtype), lo/hi (float range,
-- default -2..2), step (values are multiples of it from lo), signed (random sign), ilo/ihi
-- (integer range, default -9..9), nonzero, nan (every nan-th element is NaN, floats only),
-- values (a list of float values repeated in order: special values), number (pass a Lua number,
-- not a tensor).
local function gen_values(spec, shape, dtype, key)
  local u, out = L.rng(key), {}
  local int = not IS_FLOAT[dtype]
  for i = 1, L.numel(shape) do
    local v
    if int then
      local lo, hi = spec.ilo or -9, spec.ihi or 9
      if dtype == 'uint8' then lo, hi = math.max(lo, 0), math.min(hi, 255) end
      v = lo + floor((hi - lo + 1) * u())
    else
      local lo, hi = spec.lo or -2, spec.hi or 2
      v = lo + (hi - lo) * u()
      if spec.step then v = lo + floor((v - lo) / spec.step) * spec.step end
      if spec.signed and u() < 0.5 then v = -v end
      if spec.nan and i % spec.nan == 0 then v = 0 / 0 end
      if spec.values then v = spec.values[(i - 1) % #spec.values + 1] end
      if dtype == 'float32' then v = L.f32(v) end
    end
    if spec.nonzero and v == 0 then v = 1 end
    out[i] = v
  end
  return out
end

-- call and compare ---------------------------------------------------------------------------------
local function pack(...) return {n = select('#', ...), ...} end

local function near(got, want, rtol, scale)
  if got == want then return true end
  if got ~= got and want ~= want then return true end
  if got ~= got or want ~= want or got == math.huge or got == -math.huge then return false end
  return math.abs(got - want) <= rtol * math.max(scale, FLOOR)
end

local function compare(what, t, want, want_dtype, rtol)
  if not mf.is_tensor(t) then return ('%s: returned a %s, not a tensor'):format(what, type(t)) end
  local got_shape = shape_of(t)
  if shape_str(got_shape) ~= shape_str(want.shape) then
    return ('%s: shape %s, want %s'):format(what, shape_str(got_shape), shape_str(want.shape))
  end
  if NAME[t._dtype_id] ~= want_dtype then return ('%s: dtype %s, want %s'):format(what, NAME[t._dtype_id], want_dtype) end
  local got = read(t)
  for i = 1, #want.data do
    local scale = want.scale and want.scale[i] or math.abs(want.data[i])
    if not near(got[i], want.data[i], rtol, scale) then
      return ('%s: element [%s] of %s: got %.17g, want %.17g (rtol %g)'):format(what,
        table.concat(L.unravel(i, want.shape), ','), shape_str(want.shape), got[i], want.data[i], rtol)
    end
  end
end

local by_name, op_cases, op_checked, names = {}, {}, {}, {}
for _, c in ipairs(CASES) do
  if by_name[c.name] then error('cases: two cases are named ' .. c.name) end
  if not (c.ref or c.check or c.error) then error('cases: ' .. c.name .. ' has no ref, check or error') end
  by_name[c.name] = c
  names[#names + 1] = c.name
  op_cases[c.op] = op_cases[c.op] or {}
  table.insert(op_cases[c.op], c.name)
  if not c.error then op_checked[c.op] = true end
end

local function dtypes_of(c) return c.dtypes or {'float32', 'float64'} end

-- the call: inputs (a list for variadic ops), then c.args positionally, or c.params as a table
local function call_op(c, ins, dtype)
  local f = mf[c.op]
  if not f then error(('no function mf.%s'):format(c.op), 0) end
  local args, n = {}, 0
  local op = mf._ops[c.op]
  if op and op.variadic then
    n = 1
    args[1] = ins
  else
    for i = 1, #ins do args[i] = ins[i] end
    n = #ins
  end
  local params = c.params
  if c.dtype_param then
    params = {}
    for k, v in pairs(c.params or {}) do params[k] = v end
    params.dtype = dtype
  end
  if c.args then
    for i = 1, #c.args do args[n + i] = c.args[i] end
    n = n + #c.args
    if c.dtype_param then n = n + 1; args[n] = {dtype = dtype} end
  elseif params and next(params) ~= nil then
    n = n + 1
    args[n] = params
  end
  local r = pack(f(unpack(args, 1, n)))
  if r.n == 1 and type(r[1]) == 'table' and not mf.is_symbol(r[1]) then return r[1] end  -- split's list
  return r
end

-- The input values of one (dtype, shapes, run) as reference arrays, and the reference's answer
-- (computed once, on first need). The expanded layout gets its own values.
local function reference_for(c, dtype, shapes, run, expanded)
  local ref_ins = {}
  for i, spec in ipairs(c.inputs or {}) do
    local idt = spec.dtype or dtype
    local vals = gen_values(spec, shapes[i], idt, ('%s/%d/%s/%d'):format(c.name, i, idt, run))
    if expanded and not spec.number and layout_applies('expanded', shapes[i]) then
      vals = repeat_along(vals, shapes[i])
    end
    ref_ins[i] = L.array(L.copy(shapes[i]), vals)
  end
  local r = {ins = ref_ins}
  function r.want()
    if not r.out then
      r.out = c.ref(ref_ins, c.params or {}, dtype)
      if r.out.shape then r.out = {r.out} end
    end
    return r.out
  end
  function r.written(i) return r.want().written[i] end
  return r
end

local function rtol_of(c, dtype)
  if c.exact or not IS_FLOAT[dtype] then return 0 end
  return c.rtol and c.rtol[dtype] or RTOL[dtype]
end

-- Compares the op's outputs with the reference's.
-- nil when tensor t still holds orig (a list of numbers; NaN equals NaN), else a message naming input i
local function unchanged(t, orig, what, i)
  local got = read(t)
  for j = 1, #orig do
    if not (got[j] == orig[j] or (got[j] ~= got[j] and orig[j] ~= orig[j])) then
      return ('%s: input %d was modified at element %d'):format(what, i, j)
    end
  end
end

local function check_outputs(c, dtype, outs, r, what)
  local want = r.want()
  if #outs ~= #want then return ('%s: %d outputs, want %d'):format(what, #outs, #want) end
  local rtol = rtol_of(c, dtype)
  local out_dtype = c.out_dtype
  if type(out_dtype) == 'function' then out_dtype = out_dtype(dtype, c.params or {}) end
  for k = 1, #want do
    local err = compare(#want > 1 and ('%s output %d'):format(what, k) or what, outs[k], want[k],
      want[k].dtype or out_dtype or dtype, rtol)
    if err then return err end
  end
end

-- One call of the op on r's inputs in one layout, compared with the reference; also returns the
-- outputs.
local function run_once(c, dtype, layout, r, what)
  local ins, mems, written, used = {}, {}, {}, 'contiguous'
  for _, i in ipairs(c.writes or {}) do written[i] = true end
  for i, spec in ipairs(c.inputs or {}) do
    local a = r.ins[i]
    if spec.number then
      assert(#a.shape == 0, 'a number input has shape {}')
      ins[i] = a.data[1]
    else
      -- a written input is never expanded: elements sharing memory cannot be written in place
      local lay, in_layout = nil, (written[i] and layout == 'expanded') and 'contiguous' or layout
      ins[i], lay, mems[i] = make_input(a.shape, spec.dtype or dtype, a.data, in_layout)
      if lay ~= 'contiguous' then used = lay end
    end
  end
  if layout ~= 'contiguous' and used == 'contiguous' then return nil, 'skip' end
  local ok, outs = pcall(call_op, c, ins, dtype)
  if ok and c.error and DEVICE_ID ~= C.MF_CPU then
    -- a GPU records the bad values only it sees (indices, labels) and raises them at the next wait
    local synced, err = pcall(mf.cuda.synchronize)
    if not synced then ok, outs = false, err end
  end
  if c.error then
    if ok then return ('%s: expected an error containing %q, got none'):format(what, c.error) end
    if not tostring(outs):find(c.error, 1, true) then
      return ('%s: error %q lacks %q'):format(what, tostring(outs), c.error)
    end
    return nil
  end
  if not ok then return ('%s: raised %s'):format(what, tostring(outs)) end
  for k = 1, #outs do  -- an op computes on its inputs' device
    if mf.is_tensor(outs[k]) and next(mems) ~= nil and not c.leaves_device and outs[k]._device_id ~= DEVICE_ID then
      return ('%s: output %d is on %s; its inputs are on %s'):format(what, k, outs[k]:device(), DEVICE or 'cpu')
    end
  end
  local err = check_outputs(c, dtype, outs, r, what)
  if err then return err end
  if c.check_out then
    local err = c.check_out(outs, ins)
    if err then return ('%s: %s'):format(what, err) end
  end
  -- written inputs must hold the reference's new values and nothing outside their view may
  -- change; the other inputs must come back untouched
  for i, t in ipairs(ins) do
    if written[i] then
      local idt = c.inputs[i].dtype or dtype
      local err = compare(('%s: written input %d'):format(what, i), t, r.written(i), idt, rtol_of(c, dtype))
      if err then return err end
      err = padding_intact(mems[i], r.ins[i].shape, idt)
      if err then return ('%s: written input %d %s'):format(what, i, err) end
    elseif mf.is_tensor(t) then
      local err = unchanged(t, r.ins[i].data, what, i)
      if err then return err end
    end
  end
  return nil, nil, outs
end

-- Graph mode: the op on placeholders (of the inputs' shapes, or with every size unknown) fed the
-- same inputs in the same layout; each output feeds harness_identity (cases_custom.lua), so it is
-- an intermediate of the graph, planned and bound like any other, and the identity is fetched.
-- Cases of ops that write their inputs, draw random numbers (check), take no tensor input, or are
-- marked eager_only (an output size that depends on the values: masked_select) run eagerly only.
local function graph_applies(c)
  if c.error or c.check or c.writes or c.eager_only then return false end
  for _, spec in ipairs(c.inputs or {}) do
    if not spec.number then return true end
  end
  return false
end

local function run_graph(c, dtype, layout, r, what, unknown)
  local ins = {}
  for i, spec in ipairs(c.inputs) do
    local a = r.ins[i]
    if spec.number then ins[i] = a.data[1] else ins[i] = make_input(a.shape, spec.dtype or dtype, a.data, layout) end
  end
  local old = mf.get_default_graph()
  mf._set_default_graph(mf.Graph())
  local ok, outs = pcall(function()
    local syms, feeds = {}, {}
    for i, spec in ipairs(c.inputs) do
      if spec.number then
        syms[i] = ins[i]
      else
        local shape = {}
        for d = 1, #r.ins[i].shape do shape[d] = unknown and -1 or r.ins[i].shape[d] end
        syms[i] = mf.placeholder(spec.dtype or dtype, shape, 'in' .. i)
        feeds[syms[i]] = ins[i]
      end
    end
    local res, fetch = call_op(c, syms, dtype), {}
    for k = 1, #res do fetch[k] = mf.harness_identity(res[k]) end
    if #fetch == 0 then return {} end  -- an empty list output (unbind of an empty dim): nothing to run
    return {mf.Session{device = DEVICE}:run(fetch, feeds)}
  end)
  mf._set_default_graph(old)
  what = ('%s in a graph%s'):format(what, unknown and ' (sizes unknown when built)' or '')
  if not ok then
    -- an op whose number of outputs depends on its input sizes (split in chunks) cannot be built
    -- with them unknown: that error is the expected result
    if unknown and tostring(outs):find('number of outputs depends on sizes that are unknown', 1, true) then return nil end
    return ('%s: raised %s'):format(what, tostring(outs))
  end
  local err = check_outputs(c, dtype, outs, r, what)
  if err then return err end
  for i, t in ipairs(ins) do
    if mf.is_tensor(t) then
      local err = unchanged(t, r.ins[i].data, what, i)
      if err then return err end
    end
  end
end

-- Every dtype x (declared shapes, then each empty variant) x layout, each run twice with new
-- values: the second call reuses the closure bound by the first, and must leave the first call's
-- results as they were. Each layout runs once in a graph too, the contiguous one also with every
-- placeholder size unknown when the graph is built.
function H.run_case(name)
  local c = by_name[name]
  if not c then return 'no case named ' .. tostring(name) end
  if c.check then  -- cases that check properties rather than values (rand, randn)
    for _, dtype in ipairs(dtypes_of(c)) do
      local ok, err = pcall(c.check, mf, dtype, TOOLS)
      if not ok then return ('case %s (%s): raised %s'):format(name, dtype, tostring(err)) end
      if err then return ('case %s (%s): %s'):format(name, dtype, err) end
    end
    return nil
  end
  local shapes = {}
  for i, spec in ipairs(c.inputs or {}) do shapes[i] = spec.shape end
  -- an op registered from Lua without a kernel for this device: the call must say so, naming the op
  local op = mf._ops[c.op]
  local strings = mf.kernels.of_device(DEVICE_ID).strings
  if op and (op.src[strings] or '') == '' and not c.error then
    local ins = {}
    for i, spec in ipairs(c.inputs or {}) do
      ins[i] = spec.number and 1 or mf.zeros(shapes[i], {dtype = dtypes_of(c)[1], device = DEVICE})
    end
    local ok, err = pcall(call_op, c, ins, dtypes_of(c)[1])
    local want = ('%s: no %s kernel is registered'):format(c.op, mf.kernels.STRINGS[strings])
    if ok or not tostring(err):find(want, 1, true) then
      return ('case %s on %s: expected the error "%s", got %s'):format(name, DEVICE, want,
        ok and 'a result' or tostring(err))
    end
    return nil
  end
  local variants = {{'', shapes}}
  for k, s in ipairs(c.empty or {}) do variants[#variants + 1] = {' empty#' .. k, s} end
  for _, dtype in ipairs(dtypes_of(c)) do
    for _, v in ipairs(variants) do
      local refs = {}
      for run = 1, 2 do
        refs[run] = reference_for(c, dtype, v[2], run, false)
        refs[run + 2] = reference_for(c, dtype, v[2], run, true)
      end
      for _, layout in ipairs(c.error and {'contiguous'} or LAYOUTS) do
        local first
        for run = 1, 2 do
          local r = refs[layout == 'expanded' and run + 2 or run]
          local what = ('case %s (%s, %s layout%s, run %d)'):format(name, dtype, layout, v[1], run)
          local err, skip, outs = run_once(c, dtype, layout, r, what)
          if skip then break end
          if err then return err end
          if run == 1 and graph_applies(c) then
            err = run_graph(c, dtype, layout, r, what, false)
            if not err and layout == 'contiguous' then err = run_graph(c, dtype, layout, r, what, true) end
            if err then return err end
          end
          if run == 1 then
            first = {outs = outs, r = r, what = what}
          elseif not c.error then
            err = check_outputs(c, dtype, first.outs, first.r, first.what .. ' after run 2')
            if err then return err end
          end
        end
      end
    end
  end
  return nil
end

function H.set_device(name)
  DEVICE, DEVICE_ID = name, mf._device_id(name, 'H.set_device')
  DEVICE_HOST = mf.kernels.of_device(DEVICE_ID).strings == C.MF_CPU
end

function H.case_names() return L.copy(names) end
function H.cases_of(op) return L.copy(op_cases[op] or {}) end
function H.op_names() return mf.list_ops() end

function H.check_coverage()
  local problems = {}
  for _, name in ipairs(mf.list_ops()) do
    local op = mf._ops[name]
    if not op_cases[name] then
      problems[#problems + 1] = name .. ': no case in tests/ops/cases.lua'
    elseif not op_checked[name] then
      problems[#problems + 1] = name .. ': only error cases; no case checks its values'
    end
    if type(op.doc) ~= 'string' or op.doc:match('^%s*$') then problems[#problems + 1] = name .. ': no doc' end
    for _, p in ipairs(op.param_info) do
      if type(p.doc) ~= 'string' or p.doc:match('^%s*$') then
        problems[#problems + 1] = ('%s: param %s has no doc'):format(name, p.name)
      end
    end
  end
  for op in pairs(op_cases) do
    if not mf._ops[op] then problems[#problems + 1] = op .. ': has cases but is not a registered op' end
  end
  table.sort(problems)
  if #problems > 0 then return table.concat(problems, '\n') end
end

function H.time_case(name, n)
  local c = by_name[name]
  local shapes = {}
  for i, spec in ipairs(c.inputs or {}) do shapes[i] = spec.shape end
  local ins, dtype = {}, dtypes_of(c)[1]
  for i, spec in ipairs(c.inputs or {}) do
    local vals = gen_values(spec, shapes[i], spec.dtype or dtype, c.name)
    ins[i] = spec.number and vals[1] or make_input(shapes[i], spec.dtype or dtype, vals, 'contiguous')
  end
  call_op(c, ins, dtype)
  local t0 = os.clock()
  for _ = 1, n do call_op(c, ins, dtype) end
  return (os.clock() - t0) / n * 1e6
end

if as_script then
  local want, timing, failed, ran = {}, false, 0, 0
  local shard, nshards = 1, 1  -- --shard K/N: every Nth case from the Kth (parallel processes)
  local i = 1
  while i <= #arg do
    if arg[i] == '--time' then timing = true
    elseif arg[i] == '--device' then H.set_device(arg[i + 1]); i = i + 1
    elseif arg[i] == '--shard' then
      shard, nshards = (arg[i + 1] or ''):match('^(%d+)/(%d+)$')
      shard, nshards = tonumber(shard), tonumber(nshards)
      assert(shard and shard >= 1 and shard <= nshards, 'harness: --shard wants K/N with 1 <= K <= N')
      i = i + 1
    else want[arg[i]] = true end
    i = i + 1
  end
  local all = next(want) == nil
  if all and not timing and shard == 1 then
    local err = H.check_coverage()
    if err then io.stderr:write('FAIL coverage\n', err, '\n'); failed = failed + 1 end
  end
  for k, name in ipairs(names) do
    local c = by_name[name]
    if (all or want[c.op] or want[name]) and (k - shard) % nshards == 0 then
      if timing then
        if not (c.error or c.check) then print(('%-36s %10.2f us'):format(name, H.time_case(name, 200))) end
      else
        ran = ran + 1
        if os.getenv('MF_HARNESS_TRACE') then io.stderr:write('case ', name, '\n') end  -- before a crash
        local okc, e = pcall(H.run_case, name)  -- an error in the harness itself fails this case only
        if not okc then e = ('case %s: the harness raised %s'):format(name, tostring(e)) end
        if e then io.stderr:write('FAIL ', e, '\n'); failed = failed + 1 end
      end
    end
  end
  if not timing then print(('%d cases, %d failed'):format(ran, failed)) end
  os.exit(failed == 0 and 0 or 1)
end

return H
