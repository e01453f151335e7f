-- The write rule (README "Writes") by property: random views of random tensors are written by copy,
-- fill, row and element assignment; each result is checked against index arithmetic on plain Lua
-- tables (untouched elements unchanged), or the write must raise the rule's error exactly when the
-- rule says so (a source that does not broadcast, a destination whose elements overlap).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'
local C = ffi.C

local seed = 20261123
local function rnd(n)  -- 1..n, a fixed LCG so every run draws the same trials
  seed = (seed * 1103515245 + 12345) % 2147483648
  return math.floor(seed / 65536) % n + 1
end
local DTYPES = {'float32', 'float64', 'int32', 'int64', 'uint8'}
local BAD_VALUE = {int32 = {2 ^ 31, -2 ^ 31 - 1, 0 / 0}, int64 = {2 ^ 63, -2 ^ 64, 0 / 0}, uint8 = {300, -1, 256, 0 / 0}}
local RAW = {'attempt to', 'bad argument', 'cannot convert', 'lua/moonflow/'}

-- models: a flat table of values (1-based) and a view of it: offset (0-based), sizes, strides ------
local function model(vals, off, sz, st) return {vals = vals, off = off, sz = sz, st = st} end
local function copy_list(l) local o = {} for i, v in ipairs(l) do o[i] = v end return o end
local function contiguous_strides(sz)
  local st, acc = {}, 1
  for d = #sz, 1, -1 do st[d] = acc; acc = acc * sz[d] end
  return st
end
local function numel(sz) local n = 1 for _, s in ipairs(sz) do n = n * s end return n end
-- calls f(idx, pos) for every index tuple (1-based) of m, pos its 1-based place in m.vals
local function each(m, f)
  local nd, idx = #m.sz, {}
  for d = 1, nd do idx[d] = 1 end
  for _ = 1, numel(m.sz) do
    local pos = m.off
    for d = 1, nd do pos = pos + (idx[d] - 1) * m.st[d] end
    f(idx, pos + 1)
    for d = nd, 1, -1 do
      if idx[d] < m.sz[d] then idx[d] = idx[d] + 1 break end
      idx[d] = 1
    end
  end
end
local function overlaps(m)  -- the views built here overlap only through expand's zero strides
  for d = 1, #m.sz do if m.st[d] == 0 and m.sz[d] > 1 then return true end end
  return false
end
-- PyTorch's rule: src dims align from the last; each equals dst's or is 1; src has no more dims
local function broadcasts(ssz, dsz)
  if #ssz > #dsz then return false end
  for i = 1, #ssz do
    local s, d = ssz[#ssz - i + 1], dsz[#dsz - i + 1]
    if s ~= d and s ~= 1 then return false end
  end
  return true
end
-- the value src supplies to destination index idx under broadcasting
local function src_at(src, idx)
  local lead, pos = #idx - #src.sz, src.off
  for d = 1, #src.sz do
    if src.sz[d] > 1 then pos = pos + (idx[lead + d] - 1) * src.st[d] end
  end
  return src.vals[pos + 1]
end
local function shape_str(sz) return #sz == 0 and 'scalar' or table.concat(sz, 'x') end
local function same(a, b) return a == b or (a ~= a and b ~= b) end

-- random tensors and views --------------------------------------------------------------------------
local function base_tensor(dtype)
  local sz = {}
  for d = 1, rnd(4) do sz[d] = rnd(4) end
  local vals = {}
  for k = 1, numel(sz) do vals[k] = (k * 37) % 250 + 1 end
  local flat = mf.tensor(vals, dtype)
  local t = #sz == 1 and flat or flat:reshape(unpack(sz))
  return flat, t, model(vals, 0, sz, contiguous_strides(sz))
end

-- applies one random view op to tensor v and its model m (modified in place); returns the new view
local function transform(v, m)
  local nd, k = #m.sz, rnd(7)
  if k == 1 and nd >= 2 then
    local a, b = rnd(nd), rnd(nd)
    m.sz[a], m.sz[b], m.st[a], m.st[b] = m.sz[b], m.sz[a], m.st[b], m.st[a]
    return v:transpose(a, b)
  elseif k == 2 and nd >= 1 then
    local d = rnd(nd)
    local len = rnd(m.sz[d])
    local start = rnd(m.sz[d] - len + 1)
    m.off, m.sz[d] = m.off + (start - 1) * m.st[d], len
    return v:narrow(d, start, len)
  elseif k == 3 and nd >= 1 then
    local d = rnd(nd)
    local i = rnd(m.sz[d])
    m.off = m.off + (i - 1) * m.st[d]
    table.remove(m.sz, d); table.remove(m.st, d)
    return v:select(d, i)
  elseif k == 4 and nd >= 1 then
    local d, step = rnd(nd), rnd(3)
    local start = rnd(m.sz[d])
    local stop = start + rnd(m.sz[d] - start + 1) - 1
    m.off = m.off + (start - 1) * m.st[d]
    m.sz[d], m.st[d] = math.floor((stop - start) / step) + 1, m.st[d] * step
    return mf.slice(v, d, start, stop, step)
  elseif k == 5 and nd >= 2 then
    local p = {}
    for i = 1, nd do p[i] = i end
    for i = nd, 2, -1 do local j = rnd(i); p[i], p[j] = p[j], p[i] end
    local sz, st = copy_list(m.sz), copy_list(m.st)
    for i = 1, nd do m.sz[i], m.st[i] = sz[p[i]], st[p[i]] end
    return v:permute(unpack(p))
  elseif k == 6 then
    local ones = {}
    for d = 1, nd do if m.sz[d] == 1 then ones[#ones + 1] = d end end
    if #ones > 0 then
      local d = ones[rnd(#ones)]
      m.sz[d], m.st[d] = rnd(3) + 1, 0
    elseif nd < 4 then
      table.insert(m.sz, 1, rnd(3) + 1); table.insert(m.st, 1, 0)
    else
      return v
    end
    return v:expand(unpack(m.sz))
  end
  return v
end

local function random_view(t, m)
  for _ = 1, rnd(4) - 1 do t = transform(t, m) end
  return t
end

-- a fresh source of shape sz (values 0..100 fit every dtype), sometimes a transposed view
local function fresh_source(sz)
  local dtype = DTYPES[rnd(#DTYPES)]
  local n, vals = numel(sz), {}
  for k = 1, n do vals[k] = rnd(101) - 1 end
  local nd = #sz
  if nd >= 2 and rnd(2) == 1 then  -- stored with the last two dims swapped, then transposed back
    local ssz = copy_list(sz)
    ssz[nd - 1], ssz[nd] = sz[nd], sz[nd - 1]
    local st = contiguous_strides(ssz)
    st[nd - 1], st[nd] = st[nd], st[nd - 1]
    local t = mf.tensor(vals, dtype):reshape(unpack(ssz)):transpose(nd - 1, nd)
    return t, model(vals, 0, copy_list(sz), st)
  end
  local t = mf.tensor(vals, dtype)
  if nd == 0 then t = t:reshape() elseif nd > 1 then t = t:reshape(unpack(sz)) end
  return t, model(vals, 0, copy_list(sz), contiguous_strides(sz))
end

-- a source shape for destination size dsz: broadcastable, or (bad) not
local function source_shape(dsz)
  local sz = {}
  local drop = rnd(#dsz + 1) - 1
  for d = drop + 1, #dsz do sz[#sz + 1] = rnd(3) == 1 and 1 or dsz[d] end
  if rnd(4) == 1 then  -- usually not broadcastable: a size that differs, or one dim too many
    if #sz > 0 and rnd(2) == 1 then
      local d = rnd(#sz)
      sz[d] = dsz[#dsz - #sz + d] + 1
    else
      sz = copy_list(dsz)
      table.insert(sz, 1, rnd(3))
    end
  end
  return sz, broadcasts(sz, dsz)
end

-- running one write and judging it ------------------------------------------------------------------
local trials, errors_seen, writes_seen = 0, 0, 0

-- fn performs the write; want: the expected flat values, or nil when an error must come, whose
-- message must then contain one of frags
local function judge(label, flat, before, fn, want, frags)
  trials = trials + 1
  local ok, err = pcall(fn)
  local n = flat:numel()
  if want then
    if not ok then error(label .. ': unexpected error: ' .. tostring(err), 2) end
    writes_seen = writes_seen + 1
    for k = 1, n do
      local got = flat:get(k)
      if not same(got, want[k]) then
        error(('%s: element %d of the base is %s, want %s'):format(label, k, tostring(got), tostring(want[k])), 2)
      end
    end
    return
  end
  if ok then error(label .. ': expected an error (' .. table.concat(frags, ' or ') .. '), got none', 2) end
  errors_seen = errors_seen + 1
  err = tostring(err)
  local found = false
  for _, f in ipairs(frags) do found = found or err:find(f, 1, true) ~= nil end
  if not found then error(('%s: error %q names none of: %s'):format(label, err, table.concat(frags, ' | ')), 2) end
  if not err:find('test_writes.lua:', 1, true) then error(label .. ': error does not blame the caller: ' .. err, 2) end
  for _, raw in ipairs(RAW) do
    if err:find(raw, 1, true) then error(('%s: raw internal text %q in %q'):format(label, raw, err), 2) end
  end
  for k = 1, n do  -- a refused write writes nothing
    if not same(flat:get(k), before[k]) then error(('%s: refused write changed element %d'):format(label, k), 2) end
  end
end

local function check_view(label, v, m)
  local got = v:size()
  if shape_str(got) ~= shape_str(m.sz) then
    error(('%s: view is %s, the model says %s'):format(label, shape_str(got), shape_str(m.sz)), 2)
  end
end

local function value_fits(v, dtype)
  for _, b in ipairs(BAD_VALUE[dtype] or {}) do if same(v, b) then return false end end
  return true
end
local function random_value(dtype)
  if BAD_VALUE[dtype] and rnd(5) == 1 then local l = BAD_VALUE[dtype]; return l[rnd(#l)] end
  if not BAD_VALUE[dtype] and rnd(8) == 1 then return 0 / 0 end
  return rnd(101) - 1
end

local function one_trial(i)
  local dtype = DTYPES[rnd(#DTYPES)]
  local flat, base, bm = base_tensor(dtype)
  local dm = model(bm.vals, bm.off, copy_list(bm.sz), copy_list(bm.st))
  local dst = random_view(base, dm)
  local label = ('trial %d (%s %s view of %s)'):format(i, dtype, shape_str(dm.sz), shape_str(bm.sz))
  check_view(label, dst, dm)
  local before = copy_list(bm.vals)
  local op = rnd(4)
  if op == 1 then  -- copy
    local src, sm, ok
    if rnd(3) == 1 then  -- another view of the same storage: may overlap the destination
      sm = model(before, 0, copy_list(bm.sz), copy_list(bm.st))
      src = random_view(base, sm)
      ok = broadcasts(sm.sz, dm.sz)
    else
      local sz
      sz, ok = source_shape(dm.sz)
      src, sm = fresh_source(sz)
    end
    label = label .. ' copy from ' .. shape_str(sm.sz)
    check_view(label, src, sm)
    local want
    if ok and not overlaps(dm) then
      want = copy_list(before)
      each(dm, function(idx, pos) want[pos] = src_at(sm, idx) end)
    end
    judge(label, flat, before, function() dst:copy(src) end, want,
      {not ok and 'copy: source ' .. shape_str(sm.sz) .. ' does not broadcast to destination ' .. shape_str(dm.sz)
       or 'copy: destination is an expanded view'})
  elseif op == 2 then  -- fill
    local v = random_value(dtype)
    label = label .. ' fill ' .. tostring(v)
    local want
    if value_fits(v, dtype) and not overlaps(dm) then
      want = copy_list(before)
      each(dm, function(_, pos) want[pos] = v end)
    end
    judge(label, flat, before, function() dst:fill(v) end, want, {'fill: value', 'fill: tensor is an expanded view'})
  elseif op == 3 then  -- row or element assignment t[i] = v
    if #dm.sz == 0 then
      judge(label .. ' t[1] = 1', flat, before, function() dst[1] = 1 end, nil, {'cannot index a 0-dim tensor'})
      return
    end
    local r = rnd(dm.sz[1])
    local rm = model(before, dm.off + (r - 1) * dm.st[1], {unpack(dm.sz, 2)}, {unpack(dm.st, 2)})
    local frags, want, v, ok = {'index assignment: tensor is an expanded view'}, nil, nil, true
    if #dm.sz == 1 or rnd(2) == 1 then
      v = random_value(dtype)
      ok = value_fits(v, dtype)
      frags[2] = 'index assignment: value'
      if ok and not overlaps(dm) then
        want = copy_list(before)
        each(rm, function(_, pos) want[pos] = v end)
      end
    else
      local sz
      sz, ok = source_shape(rm.sz)
      for _ = 1, rnd(3) - 1 do table.insert(sz, 1, 1) end  -- leading size-1 dims are dropped
      local sm
      v, sm = fresh_source(sz)
      local stripped = copy_list(sm.sz)
      while #stripped > #rm.sz and stripped[1] == 1 do table.remove(stripped, 1) end
      ok = broadcasts(stripped, rm.sz)
      frags[2] = 'index assignment: source ' .. shape_str(stripped) .. ' does not broadcast to destination ' .. shape_str(rm.sz)
      if ok and not overlaps(dm) then
        want = copy_list(before)
        local sv = model(sm.vals, sm.off, {unpack(sm.sz, #sm.sz - #stripped + 1)}, {unpack(sm.st, #sm.st - #stripped + 1)})
        each(rm, function(idx, pos) want[pos] = src_at(sv, idx) end)
      end
    end
    label = ('%s [%d] = %s'):format(label, r, type(v) == 'number' and tostring(v) or shape_str(v:size()))
    judge(label, flat, before, function() dst[r] = v end, want, frags)
  else  -- one element: t:set(i, j, ..., v) or t[{i, j, ...}] = v
    local idx, pos = {}, dm.off
    for d = 1, #dm.sz do idx[d] = rnd(dm.sz[d]); pos = pos + (idx[d] - 1) * dm.st[d] end
    local v = random_value(dtype)
    local want
    if value_fits(v, dtype) and not overlaps(dm) then want = copy_list(before); want[pos + 1] = v end
    local use_set = #idx == 0 or rnd(2) == 1
    local what = use_set and 'set' or 'index assignment'
    label = ('%s %s{%s} = %s'):format(label, what, table.concat(idx, ','), tostring(v))
    local args = copy_list(idx)
    args[#args + 1] = v
    judge(label, flat, before, function()
      if use_set then dst:set(unpack(args, 1, #idx + 1)) else dst[idx] = v end
    end, want, {what .. ': value', what .. ': tensor is an expanded view'})
  end
end

T.test('property: random writes into random views match the reference or raise the rule', function()
  for i = 1, 800 do one_trial(i) end
  -- the draw covered both outcomes well (a test that never errs or never writes proves little)
  T.eq(trials, 800, 'trials')
  assert(errors_seen > 100 and writes_seen > 300, ('errors %d, writes %d'):format(errors_seen, writes_seen))
end)

-- as_strided views (mf_tensor_restride) overlap in ways expand cannot: the exact check --------------
T.test('property: fill through arbitrary strides writes exactly its elements or names the overlap', function()
  local shape_buf, stride_buf = ffi.new('int64_t[8]'), ffi.new('int64_t[8]')
  local N, overlapping, distinct = 64, 0, 0
  for trial = 1, 300 do
    local vals = {}
    for k = 1, N do vals[k] = k end
    local base = mf.tensor(vals, 'float64')
    local nd, sz, st, off = rnd(3), {}, {}, rnd(N) - 1
    for d = 1, nd do
      sz[d], st[d] = rnd(4), rnd(9) - 5
      shape_buf[d - 1], stride_buf[d - 1] = sz[d], st[d]
    end
    local lo, hi = off, off
    for d = 1, nd do
      local span = (sz[d] - 1) * st[d]
      if span < 0 then lo = lo + span else hi = hi + span end
    end
    local v = ffi.new('mf_tensor')
    C.mf_tensor_share(v, base)
    local rc = C.mf_tensor_restride(v, nd, shape_buf, stride_buf, off)
    if lo < 0 or hi >= N then
      T.eq(rc ~= 0, true, 'restride outside the storage is refused')
      T.eq(ffi.string(C.mf_last_error()):find('reaches outside the storage', 1, true) ~= nil, true, 'restride message')
    else
      T.eq(rc, 0, 'restride inside the storage')
      local m, seen, dup = model(vals, off, sz, st), {}, false
      each(m, function(_, pos) dup = dup or seen[pos]; seen[pos] = true end)
      local ok, err = pcall(function() v:fill(-1) end)
      if dup then
        overlapping = overlapping + 1
        T.eq(ok, false, ('trial %d: overlapping strides accepted'):format(trial))
        assert(tostring(err):find('expanded view', 1, true) or tostring(err):find('overlapping elements', 1, true), err)
        for k = 1, N do T.eq(base:get(k), k, 'refused fill wrote') end
      else
        distinct = distinct + 1
        T.eq(ok, true, ('trial %d: %s'):format(trial, tostring(err)))
        for k = 1, N do T.eq(base:get(k), seen[k] and -1 or k, ('trial %d element %d'):format(trial, k)) end
      end
    end
  end
  assert(overlapping > 20 and distinct > 20, ('overlapping %d, distinct %d'):format(overlapping, distinct))
end)

-- the examples of issue 19, one by one ------------------------------------------------------------------
T.test('copy: a source that does not broadcast is an error naming both shapes', function()
  T.errors(function() mf.zeros(2):copy(mf.ones(100, 100)) end, 'copy: source 100x100 does not broadcast to destination 2')
  T.errors(function() mf.zeros(3):copy(mf.ones(2)) end, 'copy: source 2 does not broadcast to destination 3')
  T.errors(function() mf.zeros(2, 3):copy(mf.ones(3, 2)) end, 'copy: source 3x2 does not broadcast to destination 2x3')
  T.errors(function() mf.zeros(2):copy(mf.ones(1, 2)) end, 'source 1x2 does not broadcast to destination 2', 'never more')
  T.errors(function() mf.zeros(2):copy(5) end, 'copy: the source is a number; expected a tensor')
  -- broadcasting sources, converted to the destination's dtype
  T.tensor_eq(mf.zeros(2, 3):copy(mf.tensor{1, 2, 3}), {{1, 2, 3}, {1, 2, 3}})
  T.tensor_eq(mf.zeros(2, 3, {dtype = 'int64'}):copy(mf.tensor{{7}, {8}}), {{7, 7, 7}, {8, 8, 8}})
  T.tensor_eq(mf.zeros(2):copy(mf.tensor(4)), {4, 4})
end)

T.test('row assignment checks shapes; leading size-1 dims of the value are dropped', function()
  local b = mf.zeros(2, 2)
  T.errors(function() b[1] = mf.tensor{{1, 2}, {3, 4}} end, 'index assignment: source 2x2 does not broadcast to destination 2')
  T.errors(function() b[1] = mf.tensor{1, 2, 3} end, 'source 3 does not broadcast to destination 2')
  T.tensor_eq(b, {{0, 0}, {0, 0}})
  b[1] = mf.tensor{{1, 2}}
  b[2] = mf.tensor{5}
  T.tensor_eq(b, {{1, 2}, {5, 5}})
  b[-1] = 9
  T.tensor_eq(b, {{1, 2}, {9, 9}})
  T.errors(function() b[3] = 1 end, 'index assignment: index 3 out of range 1..2')
  T.errors(function() b[1] = 'x' end, 'index assignment: the value is a string')
  T.errors(function() b[mf.tensor{1}] = 1 end, 'index assignment: the index is a tensor')
  T.errors(function() mf.tensor(3)[1] = 1 end, 'cannot index a 0-dim tensor')
  local v = mf.zeros(3)
  v[2] = mf.tensor{{4}}
  v[{3}] = true
  T.tensor_eq(v, {0, 4, 1})
  T.errors(function() v[1] = mf.tensor{1, 2} end, 'source 2 does not broadcast to destination scalar')
  local m = mf.zeros(2, 3)
  m[{2, 3}] = 6
  m:set(1, 2, mf.tensor(5))
  T.tensor_eq(m, {{0, 5, 0}, {0, 0, 6}})
end)

T.test('writes into expanded views are errors, wherever they come from', function()
  local base = mf.tensor{{1}, {2}, {3}}
  local e = base:expand(3, 4)
  T.errors(function() e:copy(mf.ones(3, 4)) end, 'copy: destination is an expanded view (stride 0 along dim 2 of size 4)')
  T.errors(function() e:fill(7) end, 'fill: tensor is an expanded view (stride 0 along dim 2')
  T.errors(function() e:set(1, 1, 7) end, 'set: tensor is an expanded view')
  T.errors(function() e[1] = 7 end, 'index assignment: tensor is an expanded view')
  T.errors(function() e[{2, 2}] = 7 end, 'index assignment: tensor is an expanded view')
  T.errors(function() mf.tensor{5}:expand(3):fill(1) end, 'fill: tensor is an expanded view (stride 0 along dim 1 of size 3)')
  T.tensor_eq(base, {{1}, {2}, {3}})
  -- size-1 dims and selections that drop the expanded dim are fine
  local one = mf.zeros(1):expand(1)
  one:fill(2)
  T.tensor_eq(one, {2})
  e:select(2, 1):copy(mf.tensor{4, 5, 6})
  T.tensor_eq(base, {{4}, {5}, {6}})
end)

T.test('fill honours strides: narrow, transpose, select, slice, permute', function()
  local a = mf.zeros(3, 4)
  a:narrow(2, 2, 2):fill(7)
  T.tensor_eq(a, {{0, 7, 7, 0}, {0, 7, 7, 0}, {0, 7, 7, 0}})
  a:t():select(1, 4):fill(1)
  T.tensor_eq(a, {{0, 7, 7, 1}, {0, 7, 7, 1}, {0, 7, 7, 1}})
  mf.slice(a, 2, 1, 4, 3):narrow(1, 2, 2):fill(5)
  T.tensor_eq(a, {{0, 7, 7, 1}, {5, 7, 7, 5}, {5, 7, 7, 5}})
  local c = mf.zeros(2, 3, 2, {dtype = 'int32'})
  c:permute(3, 1, 2):select(1, 2):fill(-3)
  T.tensor_eq(c, {{{0, -3}, {0, -3}, {0, -3}}, {{0, -3}, {0, -3}, {0, -3}}})
  -- the fill of a 0-dim view and of an empty view
  local s = mf.zeros(2, 2)
  s:select(1, 2):select(1, 1):fill(8)
  s:narrow(1, 1, 0):fill(9)
  T.tensor_eq(s, {{0, 0}, {8, 0}})
end)

T.test('copy reads a source that overlaps its destination before writing', function()
  local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  a:copy(a[1])
  T.tensor_eq(a, {{1, 2, 3}, {1, 2, 3}})
  local b = mf.tensor{{1, 2}, {3, 4}}
  b:copy(b:t())
  T.tensor_eq(b, {{1, 3}, {2, 4}})
  local c = mf.tensor{1, 2, 3, 4, 5}
  c:narrow(1, 2, 4):copy(c:narrow(1, 1, 4))
  T.tensor_eq(c, {1, 1, 2, 3, 4})
  c:copy(c)
  T.tensor_eq(c, {1, 1, 2, 3, 4})
end)

T.test('numbers that do not fit an integer dtype are errors naming value and dtype', function()
  T.errors(function() mf.tensor({2 ^ 63}, 'int64') end, 'mf.tensor: value 9223372036854775808 does not fit int64')
  T.errors(function() mf.tensor({300}, 'uint8') end, 'mf.tensor: value 300 does not fit uint8 (0..255)')
  T.errors(function() mf.tensor({{1, 2}, {-1, 0}}, 'uint8') end, 'value -1 does not fit uint8')
  T.errors(function() mf.tensor({2 ^ 31}, 'int32') end, 'value 2147483648 does not fit int32')
  T.errors(function() mf.tensor({0 / 0}, 'int32') end, 'value nan does not fit int32')
  T.errors(function() mf.full({2}, 300, {dtype = 'uint8'}) end, 'full: value 300 does not fit uint8')
  T.errors(function() mf.full({2}, 0 / 0, {dtype = 'int64'}) end, 'full: value nan does not fit int64')
  T.errors(function() mf.zeros(2, {dtype = 'uint8'}):fill(256) end, 'fill: value 256 does not fit uint8')
  T.errors(function() mf.zeros(2, {dtype = 'int32'}):set(1, 2 ^ 31) end, 'set: value 2147483648 does not fit int32')
  T.errors(function() local t = mf.zeros(2, {dtype = 'int64'}); t[1] = 2 ^ 63 end, 'index assignment: value 9223372036854775808 does not fit int64')
  T.errors(function() local t = mf.zeros(2, 2, {dtype = 'uint8'}); t[1] = 300 end, 'index assignment: value 300 does not fit uint8')
  T.errors(function() mf.arange(0, 300, {dtype = 'uint8'}) end, 'arange: value 299 does not fit uint8')
  -- the edges that do fit, and fractions truncating toward zero (as PyTorch converts)
  T.tensor_eq(mf.tensor({255, 0, 2.9, -0.5}, 'uint8'), {255, 0, 2, 0})
  T.tensor_eq(mf.tensor({-2 ^ 31, 2 ^ 31 - 1}, 'int32'), {-2 ^ 31, 2 ^ 31 - 1})
  local big = mf.tensor({-2 ^ 63, 2 ^ 62}, 'int64')
  T.eq(tostring(ffi.cast('int64_t *', big:data())[0]), '-9223372036854775808LL')
  T.eq(tostring(ffi.cast('int64_t *', big:data())[1]), '4611686018427387904LL')
  T.tensor_eq(mf.full({2}, 255, {dtype = 'uint8'}), {255, 255})
end)

T.test('NaN fills float tensors wherever PyTorch accepts it', function()
  local n = mf.full({2}, 0 / 0)
  T.eq(n:dtype(), 'float32')
  assert(n:get(1) ~= n:get(1) and n:get(2) ~= n:get(2), 'full(NaN) holds NaN')
  local d = mf.full({1}, 0 / 0, {dtype = 'float64'})
  assert(d:get(1) ~= d:get(1), 'float64 NaN')
  local z = mf.zeros(3)
  z:fill(0 / 0); assert(z:get(3) ~= z:get(3), 'fill NaN')
  z[2] = 1 / 0; T.eq(z:get(2), math.huge)
  T.tensor_eq(mf.full({1}, -1 / 0), {-1 / 0})
end)

T.test('set_rng_state says what it expects', function()
  T.errors(function() mf.set_rng_state('x') end, 'set_rng_state: expected a table {seed = n, offset = n}', 'got a string')
  T.errors(function() mf.set_rng_state({seed = 1}) end, 'set_rng_state: offset is a nil; expected a non-negative integer')
  T.errors(function() mf.set_rng_state({seed = -1, offset = 0}) end, 'seed is -1')
  T.errors(function() mf.set_rng_state({seed = 1, offset = 0.5}) end, 'offset is 0.5')
  T.errors(function() mf.set_rng_state({seed = 1, offset = 0, sede = 2}) end, "unknown key 'sede'")
  T.errors(function() mf.manual_seed(2 ^ 64) end, 'manual_seed: seed is 1.844', 'below 2^64')
  T.errors(function() mf.manual_seed('7') end, 'manual_seed: seed is a string')
  mf.manual_seed(7)
  local s = mf.get_rng_state()
  local a = mf.rand(4)
  mf.set_rng_state(s)
  T.tensor_eq(mf.rand(4), a:totable())
end)

-- the C ABI that LuaJIT (and C hosts) call with pointers and lengths ----------------------------------
T.test('C ABI: inconsistent pointers, shapes and strides are refused with a message', function()
  local shape, strides = ffi.new('int64_t[8]'), ffi.new('int64_t[8]')
  local t = ffi.new('mf_tensor')
  T.eq(C.mf_tensor_init(t, 2, nil, 0, 0) ~= 0, true, 'init with a null shape')
  T.eq(ffi.string(C.mf_last_error()):find('shape array is null', 1, true) ~= nil, true)
  T.eq(C.mf_tensor_init(t, 9, shape, 0, 0) ~= 0, true, 'init with 9 dims')
  shape[0] = 2
  T.eq(C.mf_tensor_wrap(t, nil, 1, shape, 0) ~= 0, true, 'wrap of null data')
  T.eq(ffi.string(C.mf_last_error()):find('data is null', 1, true) ~= nil, true)
  local base = mf.zeros(4)
  local v = ffi.new('mf_tensor')
  C.mf_tensor_share(v, base)
  shape[0], strides[0] = 4, 2 ^ 62
  T.eq(C.mf_tensor_restride(v, 1, shape, strides, 0) ~= 0, true, 'restride overflow')
  T.eq(ffi.string(C.mf_last_error()):find('overflows', 1, true) ~= nil, true)
  T.eq(C.mf_tensor_restride(v, 1, shape, nil, 0) ~= 0, true, 'restride with null strides')
  shape[0], strides[0] = 2, 1
  T.eq(C.mf_tensor_restride(v, 1, shape, strides, -1) ~= 0, true, 'negative offset')
  T.eq(C.mf_tensor_restride(v, 1, shape, strides, 3) ~= 0, true, 'past the end')
  T.eq(ffi.string(C.mf_last_error()):find('reaches outside the storage of 4 elements', 1, true) ~= nil, true)
  T.eq(C.mf_tensor_restride(v, 1, shape, strides, 2), 0, 'the last two elements')
  v:fill(3)
  T.tensor_eq(base, {0, 0, 3, 3})
  -- metadata that lies about its element count is refused by the kernels
  local liar = ffi.new('mf_tensor')
  C.mf_tensor_share(liar, base)
  liar._count = 100
  T.eq(C.mf_device_kernels(C.MF_CPU).fill(liar, 1) ~= 0, true, 'fill of a tensor whose count lies')
  T.eq(ffi.string(C.mf_last_error()):find('claims 100 elements', 1, true) ~= nil, true)
  T.eq(C.mf_device_kernels(C.MF_CPU).copy(base, liar) ~= 0, true, 'copy from a tensor whose count lies')
  T.tensor_eq(base, {0, 0, 3, 3})
  -- kernel routines that custom kernels may call check what they write: concat's inputs tile its output
  local out, K = mf.zeros(2, 3), mf.kernels
  local parts = {mf.ones(2, 3), mf.ones(1, 3)}
  T.errors(function() K.concat(out, 2, K.tensor_list(parts), 0) end, 'concat: input 2 is 1x3; it does not fit the output 2x3')
  T.errors(function() K.concat(out, 1, K.tensor_list({mf.ones(1, 3)}), 0) end, 'the inputs fill 1 of the output')
  T.errors(function() K.concat(out, 1, K.tensor_list({mf.ones(2, 2)}), 0) end, 'concat: input 1 is 2x2; it does not fit the output 2x3')
  T.errors(function() K.concat(out, 1, K.tensor_list(parts), 5) end, 'concat: dim 6 out of range')
  local idx = mf.tensor({1, 2, 1}, 'int64')
  T.errors(function() K.index_select(mf.zeros(2, 3), mf.ones(2, 3), idx, 0) end, 'index_select: output has 2 slices along dim 1 for 3 indices')
  T.errors(function() K.index_select(mf.zeros(3, 2), mf.ones(2, 3), idx, 0) end, 'sizes off dim 1 must match')
  T.errors(function() K.index_add_like(mf.zeros(2, 3), mf.ones(2, 3), idx, 0) end, 'index_add_like: gradient has 2 slices')
  T.errors(function() K.one_hot(mf.zeros(2, 4), idx) end, 'one_hot: output 2x4 does not hold one contiguous row per label of 3')
  T.errors(function() K.pad_like(mf.zeros(4), mf.ones(3), 0, 2, 1) end, 'pad_like: gradient 3 placed from index 3 by step 1 along dim 1 does not fit inside 4')
  local padded = mf.zeros(5)
  K.pad_like(padded, mf.ones(3), 0, 0, 2)
  T.tensor_eq(padded, {1, 0, 1, 0, 1})
  T.eq(C.mf_check_value(300, 4, 'probe') ~= 0, true)
  T.eq(ffi.string(C.mf_last_error()), 'probe: value 300 does not fit uint8 (0..255)')
end)

T.test('read_idx: a file with more data than its header declares is an error', function()
  local dir = os.getenv('TMPDIR') or '/tmp'
  local p = dir .. '/moonflow_test_writes_' .. tostring(os.time()) .. '.idx'
  local f = assert(io.open(p, 'wb'))
  f:write('\0\0\8\1', '\0\0\0\3', '\1\2\3\4')  -- declares 3 bytes, holds 4
  f:close()
  T.errors(function() mf.data.read_idx(p) end, "read_idx: '" .. p .. "' has data past the 3 elements", 'shape 3')
  f = assert(io.open(p, 'wb'))
  f:write('\0\0\8\1', '\0\0\0\3', '\1\2')  -- declares 3 bytes, holds 2
  f:close()
  T.errors(function() mf.data.read_idx(p) end, 'is truncated: 2 of 3 data bytes')
  f = assert(io.open(p, 'wb'))
  f:write('\0\0\8\1', '\0\0\0\3', '\1\2\3')
  f:close()
  T.tensor_eq(mf.data.read_idx(p), {1, 2, 3})
  os.remove(p)
end)

T.test('mf.load: offsets past the file or a shape that is not its byte count name file and tensor', function()
  local p = (os.getenv('TMPDIR') or '/tmp') .. '/moonflow_test_writes_' .. tostring(os.time()) .. '.safetensors'
  local function st_file(header, data)
    local n, len = #header, {}
    for i = 1, 8 do len[i] = string.char(n % 256); n = math.floor(n / 256) end
    local f = assert(io.open(p, 'wb'))
    f:write(table.concat(len), header, data)
    f:close()
  end
  local four = '\0\0\128\63\0\0\0\64\0\0\64\64\0\0\128\64'  -- float32 1, 2, 3, 4
  st_file('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', four:sub(1, 10))
  T.errors(function() mf.load(p) end, "mf.load: '" .. p .. "'", "tensor 'w' [0, 16] runs past the end of the file")
  st_file('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4000]}}', four)
  T.errors(function() mf.load(p) end, "mf.load: '" .. p .. "'", "tensor 'w'", 'needs 8 bytes', 'span 4000')
  st_file('{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}}', four)
  T.errors(function() mf.load(p) end, "tensor 'w': shape/offset mismatch", 'needs 24 bytes')
  st_file('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', four)
  T.tensor_eq(mf.load(p).w, {1, 2, 3, 4})
  os.remove(p)
end)

T.finish()
