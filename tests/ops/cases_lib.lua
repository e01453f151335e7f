-- Pure-Lua reference helpers for the op cases. Arrays are {shape = {...}, data = {...}}: data is
-- flat, row-major and 1-based, holding Lua numbers (float64). Nothing here calls moonflow.
local L = {}

local floor, huge = math.floor, math.huge

function L.numel(shape)
  local n = 1
  for i = 1, #shape do n = n * shape[i] end
  return n
end

function L.array(shape, data) return {shape = shape, data = data or {}} end

-- Row-major strides (in elements) of a shape.
function L.strides(shape)
  local st, acc = {}, 1
  for d = #shape, 1, -1 do
    st[d] = acc
    acc = acc * shape[d]
  end
  return st
end

-- Flat 1-based position -> list of 1-based indices, and back.
function L.unravel(i, shape)
  local idx, rem = {}, i - 1
  for d = #shape, 1, -1 do
    idx[d] = rem % shape[d] + 1
    rem = floor(rem / shape[d])
  end
  return idx
end

function L.ravel(idx, shape)
  local off, acc = 0, 1
  for d = #shape, 1, -1 do
    off = off + (idx[d] - 1) * acc
    acc = acc * shape[d]
  end
  return off + 1
end

function L.at(a, idx) return a.data[L.ravel(idx, a.shape)] end

-- Walks shape in row-major order: calls f(i, offs) for i = 1..numel, where offs[k] is the 0-based
-- offset of element i through the k-th stride list of sts (offs is reused between calls).
function L.walk(shape, sts, f)
  local nd, n, offs, idx = #shape, L.numel(shape), {}, {}
  for k = 1, #sts do offs[k] = 0 end
  for d = 1, nd do idx[d] = 1 end
  for i = 1, n do
    f(i, offs)
    for d = nd, 1, -1 do
      if idx[d] < shape[d] then
        idx[d] = idx[d] + 1
        for k = 1, #sts do offs[k] = offs[k] + sts[k][d] end
        break
      end
      for k = 1, #sts do offs[k] = offs[k] - (shape[d] - 1) * sts[k][d] end
      idx[d] = 1
    end
  end
end

function L.copy(t)
  local c = {}
  for i = 1, #t do c[i] = t[i] end
  return c
end

-- 1-based dim (negative counts from the end) -> 1-based positive dim
function L.dim(d, ndim) return d < 0 and d + ndim + 1 or d end

-- Rounds a float64 to the nearest float32 (ties to even), as storing it in a float32 tensor does.
function L.f32(x)
  if x ~= x or x == 0 or x == huge or x == -huge then return x end
  local m, e = math.frexp(x)
  local s = m * 2 ^ 24
  local r = floor(s + 0.5)
  if r - s == 0.5 and r % 2 == 1 then r = r - 1 end
  return math.ldexp(r, e - 24)
end

function L.trunc(x) return x < 0 and -floor(-x) or floor(x) end

function L.round_half_even(x)
  local r = floor(x + 0.5)
  if r - x == 0.5 and r % 2 == 1 then r = r - 1 end
  return r
end

function L.isnan(x) return x ~= x end

-- elementwise ------------------------------------------------------------------------------------

function L.map(a, f)
  local out = {}
  for i = 1, #a.data do out[i] = f(a.data[i]) end
  return L.array(L.copy(a.shape), out)
end

-- NumPy broadcasting of shapes: align right, sizes must match or be 1.
function L.broadcast_shape(shapes)
  local n = 0
  for _, s in ipairs(shapes) do n = math.max(n, #s) end
  local out = {}
  for d = 1, n do
    local size = 1
    for _, s in ipairs(shapes) do
      local k = d - (n - #s)
      local v = k >= 1 and s[k] or 1
      if v ~= 1 then
        assert(size == 1 or size == v, 'reference: shapes do not broadcast')
        size = v
      end
    end
    out[d] = size
  end
  return out
end

-- f applied to the broadcast of the arrays' elements.
function L.bmap(arrays, f)
  local shapes = {}
  for i, a in ipairs(arrays) do shapes[i] = a.shape end
  local shape = L.broadcast_shape(shapes)
  local sts, datas, nd = {}, {}, #shape
  for k, a in ipairs(arrays) do  -- a's strides as seen from the broadcast shape: 0 where it repeats
    local own, st, lead = L.strides(a.shape), {}, nd - #a.shape
    for d = 1, nd do st[d] = (d <= lead or a.shape[d - lead] == 1) and 0 or own[d - lead] end
    sts[k], datas[k] = st, a.data
  end
  local out, narr = {}, #arrays
  local x1, x2, x3 = datas[1], datas[2], datas[3]
  L.walk(shape, sts, function(i, o)
    if narr == 1 then out[i] = f(x1[o[1] + 1])
    elseif narr == 2 then out[i] = f(x1[o[1] + 1], x2[o[2] + 1])
    else out[i] = f(x1[o[1] + 1], x2[o[2] + 1], x3[o[3] + 1]) end
  end)
  return L.array(shape, out)
end

-- reductions -----------------------------------------------------------------------------------

-- Reduces the listed dims (empty: all). fold(values) gets the reduced elements in row-major order
-- of the reduced dims and returns the result.
function L.reduce(a, dims, keepdim, fold)
  local nd = #a.shape
  local red = {}
  if dims == nil or #dims == 0 then
    for d = 1, nd do red[d] = true end
  else
    for _, d in ipairs(dims) do red[L.dim(d, nd)] = true end
  end
  local kept_shape, out_shape, red_shape = {}, {}, {}
  for d = 1, nd do
    if red[d] then
      red_shape[#red_shape + 1] = a.shape[d]
      if keepdim then out_shape[#out_shape + 1] = 1 end
    else
      kept_shape[#kept_shape + 1] = a.shape[d]
      out_shape[#out_shape + 1] = a.shape[d]
    end
  end
  local st = L.strides(a.shape)
  local kst, rst = {}, {}
  for d = 1, nd do
    if red[d] then rst[#rst + 1] = st[d] else kst[#kst + 1] = st[d] end
  end
  local out, data = {}, a.data
  L.walk(kept_shape, {kst}, function(o, ko)
    local base, vals = ko[1], {}
    L.walk(red_shape, {rst}, function(r, ro) vals[r] = data[base + ro[1] + 1] end)
    out[o] = fold(vals)
  end)
  return L.array(out_shape, out)
end

function L.fsum(v)
  local s = 0
  for i = 1, #v do s = s + v[i] end
  return s
end

-- index (1-based) of the first NaN, else of the first extreme element; better(x, y): x beats y
function L.arg_best(v, better)
  local best, bi = v[1], 1
  for i = 1, #v do
    if v[i] ~= v[i] then return i end
    if better(v[i], best) then best, bi = v[i], i end
  end
  return bi
end

-- views and layout ------------------------------------------------------------------------------

-- Output dim d is input dim perm[d] (1-based).
function L.permute(a, perm)
  local shape = {}
  for d = 1, #perm do shape[d] = a.shape[perm[d]] end
  local out = {}
  for i = 1, L.numel(shape) do
    local idx, src = L.unravel(i, shape), {}
    for d = 1, #perm do src[perm[d]] = idx[d] end
    out[i] = L.at(a, src)
  end
  return L.array(shape, out)
end

-- Elements start, start+step, ... (1-based, count n) along dim d.
function L.take(a, d, start, n, step)
  step = step or 1
  local shape = L.copy(a.shape)
  shape[d] = n
  local out = {}
  for i = 1, L.numel(shape) do
    local idx = L.unravel(i, shape)
    idx[d] = start + (idx[d] - 1) * step
    out[i] = L.at(a, idx)
  end
  return L.array(shape, out)
end

function L.drop_dim(a, d)
  local shape = L.copy(a.shape)
  table.remove(shape, d)
  return L.array(shape, L.copy(a.data))
end

-- Joins arrays along dim d.
function L.join(list, d)
  local shape = L.copy(list[1].shape)
  shape[d] = 0
  for _, a in ipairs(list) do shape[d] = shape[d] + a.shape[d] end
  local out = {}
  for i = 1, L.numel(shape) do
    local idx = L.unravel(i, shape)
    local k, at = 1, idx[d]
    while at > list[k].shape[d] do
      at = at - list[k].shape[d]
      k = k + 1
    end
    idx[d] = at
    out[i] = L.at(list[k], idx)
  end
  return L.array(shape, out)
end

-- matrix product of the last two dims with broadcast batch dims; also returns the error scale
-- sum |a_ik * b_kj| per element (the bound a summation's rounding is measured against)
function L.matmul(a, b, ta, tb)
  local na, nb = #a.shape, #b.shape
  local function mat_dims(x, n, t)
    local r, c = x.shape[n - 1], x.shape[n]
    if t then return c, r end
    return r, c
  end
  local m, k = mat_dims(a, na, ta)
  local _, n = mat_dims(b, nb, tb)
  local ba, bb = {}, {}
  for d = 1, na - 2 do ba[d] = a.shape[d] end
  for d = 1, nb - 2 do bb[d] = b.shape[d] end
  local batch = L.broadcast_shape({ba, bb})
  local shape = L.copy(batch)
  shape[#shape + 1], shape[#shape + 2] = m, n
  local function elem(x, nx, xbatch, bidx, i, j, t)
    local idx, lead = {}, #bidx - #xbatch
    for d = 1, #xbatch do idx[d] = xbatch[d] == 1 and 1 or bidx[d + lead] end
    if t then i, j = j, i end
    idx[nx - 1], idx[nx] = i, j
    return L.at(x, idx)
  end
  local out, scale = {}, {}
  for pos = 1, L.numel(shape) do
    local idx = L.unravel(pos, shape)
    local bidx = {}
    for d = 1, #batch do bidx[d] = idx[d] end
    local i, j = idx[#batch + 1], idx[#batch + 2]
    local s, sa = 0, 0
    for q = 1, k do
      local p = elem(a, na, ba, bidx, i, q, ta) * elem(b, nb, bb, bidx, q, j, tb)
      s, sa = s + p, sa + math.abs(p)
    end
    out[pos], scale[pos] = s, sa
  end
  local r = L.array(shape, out)
  r.scale = scale
  return r
end

-- case building ------------------------------------------------------------------------------------

-- An input spec: {shape = shape} plus the fields of each given domain table (later ones win).
function L.input(shape, ...)
  local s = {shape = shape}
  for i = 1, select('#', ...) do
    for k, v in pairs(select(i, ...) or {}) do s[k] = v end
  end
  return s
end

-- the deterministic input generator --------------------------------------------------------------

-- Park-Miller minimal standard generator seeded from a string: returns u() in [0, 1).
function L.rng(key)
  local s = 5381
  for i = 1, #key do s = (s * 33 + key:byte(i)) % 2147483647 end
  if s == 0 then s = 1 end
  return function()
    s = (s * 16807) % 2147483647
    return (s - 1) / 2147483646
  end
end

-- x's values broadcast (NumPy rules) to shape, as flat row-major data
function L.spread(x, shape)
  local out, lead = {}, #shape - #x.shape
  for i = 1, L.numel(shape) do
    local idx, src = L.unravel(i, shape), {}
    for d = 1, #x.shape do src[d] = x.shape[d] == 1 and 1 or idx[d + lead] end
    out[i] = L.at(x, src)
  end
  return out
end

-- a check_out for ops that return a view of input 1 (its memory, not a copy)
function L.views_input1(outs, ins)
  if outs[1]._ptr ~= ins[1]._ptr then return 'result is not a view of input 1' end
end

return L
