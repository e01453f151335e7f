-- gather, scatter, scatter_add and index_add on inputs large enough to take their parallel paths
-- (rows split when dim is the last dim, the last dim's columns split otherwise): values against
-- references computed here element by element in plain Lua (repeated destinations: scatter's last
-- write in the index's row-major order wins), and bit-identical float results with 1 and 2 threads,
-- on every dim, with transposed and narrowed views as x, index and src; masked_select and nonzero
-- on their flat paths (contiguous x and mask) against plain-Lua references; bad indices deep in the
-- parallel paths (checked a block at a time into a fresh output, all first in place).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'

local SIZE = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
local CT = {float32 = 'const float *', float64 = 'const double *', int32 = 'const int32_t *', int64 = 'const int64_t *',
            uint8 = 'const uint8_t *'}

local bytes = T.bytes

-- a tensor's elements, row-major, as a flat Lua array of numbers
local function flat(t)
  local c = t:contiguous()
  local p = ffi.cast(CT[c:dtype()], c:data())
  local out = {}
  for i = 0, c:numel() - 1 do out[i + 1] = tonumber(p[i]) end
  return out
end

local function same_flat(got, want, what)
  T.eq(#got, #want, what .. ': element count')
  for i = 1, #want do
    if got[i] ~= want[i] then T.eq(got[i], want[i], what .. ': element ' .. i) end
  end
end

-- row-major strides of a shape table, and the coordinates (1-based) of flat position i (1-based)
local function strides_of(s)
  local st, acc = {}, 1
  for d = #s, 1, -1 do st[d] = acc; acc = acc * s[d] end
  return st
end
local function coords(i, s)
  local c, rem = {}, i - 1
  for d = #s, 1, -1 do c[d] = rem % s[d] + 1; rem = math.floor(rem / s[d]) end
  return c
end
local function pos(c, st)
  local p = 1
  for d = 1, #c do p = p + (c[d] - 1) * st[d] end
  return p
end

-- the references: flat arrays in, flat array out
local function ref_gather(x, xs, idx, is, dim)
  local xst, out = strides_of(xs), {}
  for i = 1, #idx do
    local c = coords(i, is)
    c[dim] = idx[i]
    out[i] = x[pos(c, xst)]
  end
  return out
end
local function ref_scatter(x, xs, idx, is, src, ss, dim, add)
  local xst, sst, out = strides_of(xs), strides_of(ss), {}
  for i = 1, #x do out[i] = x[i] end
  for i = 1, #idx do
    local c = coords(i, is)
    local v = src[pos(c, sst)]
    c[dim] = idx[i]
    local p = pos(c, xst)
    out[p] = add and out[p] + v or v
  end
  return out
end
local function ref_index_add(x, xs, idx, src, ss, dim)
  local xst, out = strides_of(xs), {}
  for i = 1, #x do out[i] = x[i] end
  for i = 1, #src do
    local c = coords(i, ss)
    c[dim] = idx[c[dim]]
    local p = pos(c, xst)
    out[p] = out[p] + src[i]
  end
  return out
end

local same_bits = T.same_bits  -- 1 and 2 threads, the same bytes (testlib)

local S = {3, 200, 250}  -- 150,000 elements: past the one-thread limit (kGrain, 131,072)

T.test('gather/scatter/scatter_add, every dim, parallel: reference values and 1 vs 2 threads', function()
  for dim = 1, 3 do
    local tag = 'dim ' .. dim
    -- few distinct indices: every destination is hit many times, in an order the result shows
    local idx = mf.randint(1, math.min(4, S[dim]) + 1, S)
    -- integers whose sums stay below 2^24 (exact in float32, so in any order); src's nearly all
    -- distinct, so a wrong write order shows
    local x = mf.arange(1, 150001):reshape(S[1], S[2], S[3]):float()
    local src = mf.randint(1, 100001, S):float()
    local fx, fi, fs = flat(x), flat(idx), flat(src)
    local sevens = {}
    for i = 1, #fi do sevens[i] = 7 end
    mf.set_num_threads(2)
    same_flat(flat(mf.gather(x, idx, dim)), ref_gather(fx, S, fi, S, dim), tag .. ' gather')
    same_flat(flat(mf.scatter(x, idx, src, dim)), ref_scatter(fx, S, fi, S, fs, S, dim, false), tag .. ' scatter')
    same_flat(flat(mf.scatter_add(x, idx, src, dim)), ref_scatter(fx, S, fi, S, fs, S, dim, true),
              tag .. ' scatter_add')
    same_flat(flat(mf.scatter(x, idx, 7, dim)), ref_scatter(fx, S, fi, S, sevens, S, dim, false),
              tag .. ' scatter of a number')
    -- random floats: the accumulation order shows in the bits
    local rx, rs = mf.randn(S[1], S[2], S[3]), mf.randn(S[1], S[2], S[3])
    same_bits(tag .. ' gather', function() return mf.gather(rx, idx, dim) end)
    same_bits(tag .. ' scatter', function() return mf.scatter(rx, idx, rs, dim) end)
    same_bits(tag .. ' scatter_add', function() return mf.scatter_add(rx, idx, rs, dim) end)
    same_bits(tag .. ' scatter_add_', function() return mf.scatter_add_(rx:clone(), idx, rs, dim) end)
  end
end)

T.test('index_add, every dim, parallel: reference values and 1 vs 2 threads', function()
  for dim = 1, 3 do
    local tag = 'dim ' .. dim
    local ss = {S[1], S[2], S[3]}
    ss[dim] = ss[dim] * 2  -- twice as many source slices as destinations: each is hit twice or more
    local idx = mf.randint(1, S[dim] + 1, {ss[dim]})
    local x = mf.arange(1, 150001):reshape(S[1], S[2], S[3]):float()
    local src = mf.arange(1, 300001):reshape(ss[1], ss[2], ss[3]):float()
    mf.set_num_threads(2)
    same_flat(flat(mf.index_add(x, idx, src, dim)), ref_index_add(flat(x), S, flat(idx), flat(src), ss, dim),
              tag .. ' index_add')
    local rs = mf.randn(ss[1], ss[2], ss[3])
    same_bits(tag .. ' index_add', function() return mf.index_add(x, idx, rs, dim) end)
  end
end)

T.test('views as x, index and src on the parallel paths', function()
  mf.set_num_threads(2)
  local n = 400  -- 160,000 elements
  local x = mf.arange(1, n * n + 1):reshape(n, n):float()
  local xt = x:t()  -- a transposed x; the output is contiguous
  local idx = mf.randint(1, 9, {n, n + 10}):narrow(2, 6, n)  -- a narrowed index
  local src = mf.arange(1, n * n + 1):reshape(n, n):float():t()  -- a transposed src
  local fxt, fi, fs = flat(xt), flat(idx), flat(src)
  for dim = 1, 2 do
    local tag = 'dim ' .. dim
    same_flat(flat(mf.gather(xt, idx, dim)), ref_gather(fxt, {n, n}, fi, {n, n}, dim), tag .. ' gather, views')
    same_flat(flat(mf.scatter(xt, idx, src, dim)), ref_scatter(fxt, {n, n}, fi, {n, n}, fs, {n, n}, dim, false),
              tag .. ' scatter, views')
    -- in place into the transposed view itself: the output has x's strides
    local base = x:clone()
    mf.scatter_add_(base:t(), idx, src, dim)
    same_flat(flat(base:t()), ref_scatter(fxt, {n, n}, fi, {n, n}, fs, {n, n}, dim, true),
              tag .. ' scatter_add_ into a transposed x')
    local base2 = x:clone()
    local ii = mf.randint(1, n + 1, {n})
    mf.index_add_(base2:t(), ii, src, dim)
    same_flat(flat(base2:t()), ref_index_add(fxt, {n, n}, flat(ii), fs, {n, n}, dim),
              tag .. ' index_add_ into a transposed x')
  end
end)

-- Into a fresh output the index is checked a block at a time as it is used (each thread its own
-- blocks); the in-place forms check all of it first. Bad indices placed in late blocks, one per
-- thread's half, and in a transposed index: the error names the first in row-major order, and an
-- in-place x is left as it was.
T.test('bad indices deep in the parallel paths: the first is named, x in place untouched', function()
  local n = 400  -- 160,000 elements: two threads
  for _, threads in ipairs{1, 2} do
    mf.set_num_threads(threads)
    for dim = 1, 2 do
      local tag = ('%d thread(s), dim %d'):format(threads, dim)
      local x = mf.arange(1, n * n + 1):reshape(n, n):float()
      local idx = mf.randint(1, n + 1, {n, n})
      idx[{390, 7}] = n + 1        -- late in the second half of the rows (and of the columns)
      idx[{300, 391}] = 0          -- earlier in row-major order: this one is named
      for _, op in ipairs{'gather', 'scatter', 'scatter_add'} do
        local ok, err = pcall(function()
          if op == 'gather' then return mf.gather(x, idx, dim) end
          return mf[op](x, idx, x, dim)
        end)
        T.eq(ok, false, tag .. ' ' .. op .. ' fails')
        T.eq(tostring(err):find(op .. ': index 0 at position [300,391] of the index is out of range 1..400 along dim '
          .. dim, 1, true) ~= nil, true, tag .. ' ' .. op .. ' names index 0 at [300,391]: ' .. tostring(err))
      end
      local before = flat(x)
      local ok, err = pcall(mf.scatter_add_, x, idx, x, dim)
      T.eq(ok, false, tag .. ' scatter_add_ fails')
      T.eq(tostring(err):find('index 0 at position [300,391]', 1, true) ~= nil, true, tag .. ' scatter_add_: ' .. tostring(err))
      same_flat(flat(x), before, tag .. ' scatter_add_ left x as it was')
      -- a transposed index (rows checked one by one): index (i, j) is idx[j][i], so [391,300] is named
      local ok2, err2 = pcall(mf.gather, x, idx:t(), dim)
      T.eq(ok2, false, tag .. ' gather with a transposed index fails')
      T.eq(tostring(err2):find('index ' .. (n + 1) .. ' at position [7,390]', 1, true) ~= nil, true,
        tag .. ' transposed index names [7,390]: ' .. tostring(err2))
    end
  end
end)

-- From 1 MB of x on, the fused scatter rows (a fresh output along the last dim) check their index as
-- they go, scatter_add's in groups of 8 and a tail: a bad index inside a group, one in a row's tail,
-- each with a valid later one in its thread's half, for a tensor src and a number, every float and
-- integer dtype of 4 and 8 bytes, 1 and 2 threads: the first in row-major order is named.
T.test('bad indices in the fused scatter rows from 1 MB: the first is named', function()
  local R, C, W = 2, 540, 250  -- 2 x 540 rows of 250: groups of 8 and a tail of 2
  for _, threads in ipairs{1, 2} do
    mf.set_num_threads(threads)
    for _, dt in ipairs{'float32', 'float64', 'int32', 'int64'} do
      local x = mf.zeros({R, C, W}, {dtype = dt})
      local src = mf.ones({R, C, W}, {dtype = dt})
      for _, bad in ipairs{{{2, 300, 13}, 0, {2, 500, 249}, W + 1}, {{1, 400, 250}, W + 1, {2, 10, 3}, -1}} do
        local idx = mf.randint(1, W + 1, {R, C, W})
        idx[bad[1]] = bad[2]  -- the first in row-major order: named
        idx[bad[3]] = bad[4]
        local at = table.concat(bad[1], ',')
        for _, op in ipairs{'scatter', 'scatter_add'} do
          for _, s in ipairs{src, 2} do
            local tag = ('%s %s %d thread(s), %s src, bad at [%s]'):format(op, dt, threads, type(s) == 'number' and 'number'
              or 'tensor', at)
            local ok, err = pcall(mf[op], x, idx, s, 3)
            T.eq(ok, false, tag .. ' fails')
            local want = ('%s: index %d at position [%s] of the index is out of range 1..%d along dim 3'):format(op, bad[2],
              at, W)
            T.eq(tostring(err):find(want, 1, true) ~= nil, true, tag .. ': ' .. tostring(err))
          end
        end
      end
    end
  end
  mf.set_num_threads(2)
end)

T.test('masked_select and nonzero, flat paths (contiguous x and mask): plain-Lua references', function()
  local x = mf.arange(1, 3 * 50 * 70 + 1):reshape(3, 50, 70):float()
  local m = mf.randint(0, 2, {3, 50, 70}):type('uint8')
  local fx, fm = flat(x), flat(m)
  for _, case in ipairs({{'random mask', fm}, {'last selected', nil}, {'last unselected', nil}}) do
    local tag, want_m = case[1], case[2]
    local mm = m
    if not want_m then  -- a mask set but for the last element, or only the last one
      local v = {}
      for i = 1, #fm do v[i] = (tag == 'last selected') == (i == #fm) and 1 or 0 end
      if tag == 'last unselected' then for i = 1, #fm do v[i] = i == #fm and 0 or 1 end end
      want_m = v
      mm = mf.tensor(v, 'uint8'):reshape(3, 50, 70)
    end
    local want = {}
    for i = 1, #fx do if want_m[i] ~= 0 then want[#want + 1] = fx[i] end end
    same_flat(flat(mf.masked_select(x, mm)), want, 'masked_select ' .. tag)
    local nz, s = {}, {3, 50, 70}
    for i = 1, #want_m do
      if want_m[i] ~= 0 then for _, c in ipairs(coords(i, s)) do nz[#nz + 1] = c end end
    end
    same_flat(flat(mf.nonzero(mm)), nz, 'nonzero ' .. tag)
  end
  T.eq(mf.masked_select(x, mf.zeros(3, 50, 70):type('uint8')):numel(), 0, 'masked_select of an empty mask')
end)

-- Along the last dim with an index row for every row of x, for fewer rows, and x with strided rows,
-- by hand: x is 3x4 of 1..12.
T.test('scatter along the last dim: an index row per row of x or fewer, x kept elsewhere', function()
  local x = mf.arange(1, 13):reshape(3, 4):float()
  local src = mf.tensor{{10, 20}, {30, 40}, {50, 60}}
  local full = mf.tensor({{4, 1}, {2, 2}, {3, 4}}, 'int64')
  T.tensor_eq(mf.scatter(x, full, src, 2), {{20, 2, 3, 10}, {5, 40, 7, 8}, {9, 10, 50, 60}}, nil, 'one index row per row')
  T.tensor_eq(mf.scatter_add(x, full, src, 2), {{21, 2, 3, 14}, {5, 76, 7, 8}, {9, 10, 61, 72}}, nil, 'scatter_add, same')
  T.tensor_eq(mf.scatter(x:t():contiguous():t(), full, src, 2), {{20, 2, 3, 10}, {5, 40, 7, 8}, {9, 10, 50, 60}}, nil,
    'x with strided rows')
  local short = mf.tensor({{4, 1}}, 'int64')  -- one index row: rows 2 and 3 are x's
  T.tensor_eq(mf.scatter(x, short, src, 2), {{20, 2, 3, 10}, {5, 6, 7, 8}, {9, 10, 11, 12}}, nil, 'fewer index rows')
  T.tensor_eq(x, {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, nil, 'x unchanged')
end)

-- gather moves 4- and 8-byte elements 32 bytes of them a store (loaded as float / double bit copies),
-- then one at a time: every dtype, rows of 37 (groups and a tail), along either dim, x filled with
-- random bytes (NaN payloads, int64 past 2^53 included), against the bytes picked here by hand
T.test('gather: every dtype, grouped stores and tails, bit patterns kept', function()
  math.randomseed(7)
  for _, dt in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    local es = SIZE[dt]
    local x = mf.empty(6, 37, {dtype = dt})
    local xp = ffi.cast('uint8_t *', x:data())
    for i = 0, 6 * 37 * es - 1 do xp[i] = math.random(0, 255) end
    local xb = bytes(x)
    for dim = 1, 2 do
      local ishape = dim == 1 and {4, 37} or {6, 37}
      local idx = mf.randint(1, (dim == 1 and 6 or 37) + 1, ishape):type('int64')
      local fi, want = flat(idx), {}
      for i = 1, #fi do
        local r, c = math.floor((i - 1) / 37), (i - 1) % 37  -- 0-based row and column of the index
        if dim == 1 then r = fi[i] - 1 else c = fi[i] - 1 end
        local at = (r * 37 + c) * es
        want[i] = xb:sub(at + 1, at + es)
      end
      T.eq(bytes(mf.gather(x, idx, dim)) == table.concat(want), true, ('gather %s along dim %d: bytes'):format(dt, dim))
    end
  end
end)

-- scatter_add reads 8 offsets and values ahead, then adds them in order (4- and 8-byte dtypes):
-- every dtype, rows of 37, both dims, an index full of repeats, the plain and in-place forms and a number src,
-- against sums taken here in the index's row-major order (float32 rounded at each add through a
-- float cell, float64 in Lua's doubles: a different order would change the bits)
T.test('scatter_add: every dtype, repeated destinations summed in index order', function()
  math.randomseed(11)
  local cell = ffi.new('float[1]')
  for _, dt in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    local int = dt ~= 'float32' and dt ~= 'float64'
    local function draw(n)
      local v = {}
      for i = 1, n do v[i] = int and math.random(0, 5) or (math.random() - 0.5) * 10 ^ math.random(-3, 3) end
      return v
    end
    local function round(v)
      if dt ~= 'float32' then return v end
      cell[0] = v
      return cell[0]
    end
    local xv, sv = draw(6 * 37), draw(6 * 37)
    local x = mf.tensor(xv, dt):reshape(6, 37)
    local src = mf.tensor(sv, dt):reshape(6, 37)
    for dim = 1, 2 do
      local idx = mf.randint(1, (dim == 1 and 6 or 5) + 1, {6, 37}):type('int64')
      local fi, fx, fs = flat(idx), flat(x), flat(src)
      local want = {}
      for i = 1, #fx do want[i] = fx[i] end
      for i = 1, #fi do
        local r, c = math.floor((i - 1) / 37), (i - 1) % 37
        if dim == 1 then r = fi[i] - 1 else c = fi[i] - 1 end
        local at = r * 37 + c + 1
        want[at] = round(want[at] + fs[i])
      end
      local tag = ('scatter_add %s along dim %d'):format(dt, dim)
      same_flat(flat(mf.scatter_add(x, idx, src, dim)), want, tag)
      local y = x:clone()
      mf.scatter_add_(y, idx, src, dim)
      same_flat(flat(y), want, tag .. ', in place')
      local wantn = {}  -- a number src: 3 added at each index position
      for i = 1, #fx do wantn[i] = fx[i] end
      for i = 1, #fi do
        local r, c = math.floor((i - 1) / 37), (i - 1) % 37
        if dim == 1 then r = fi[i] - 1 else c = fi[i] - 1 end
        local at = r * 37 + c + 1
        wantn[at] = round(wantn[at] + 3)
      end
      same_flat(flat(mf.scatter_add(x, idx, 3, dim)), wantn, tag .. ', a number src')
    end
  end
end)

-- From 1 MB of x on, scatter and scatter_add into a fresh output along the last dim copy each of x's
-- rows just before scattering into it (when the index has a row for each of x's rows), and gather and
-- the scatters prefetch rows: x of 2x540x250 float32 (1.08 MB) with index rows as long as x's, shorter,
-- longer (src as long) and fewer index rows than x has (x's copy first), the in-place forms, against
-- row-by-row references in plain Lua (few distinct indices: repeats; random float src, whose sums
-- rounded at each add show their order), and random floats with the same bits at 1 and 2 threads.
T.test('scatter, gather along the last dim from 1 MB: reference values and 1 vs 2 threads', function()
  local R, C, W = 2, 540, 250  -- rows of 1000 bytes: whole 256-byte turns of the row copy and a tail
  local cell = ffi.new('float[1]')
  local x = mf.arange(1, R * C * W + 1):reshape(R, C, W):float()
  local fx = flat(x)
  for _, case in ipairs{{C, W, W, 'index as x'}, {C, 100, 128, 'shorter index rows'},
                        {C, 320, 320, 'longer index rows'}, {C - 20, W, W, 'fewer index rows'}} do
    local rows, len, slen, what = case[1], case[2], case[3], case[4]
    local idx = mf.randint(1, 6, {R, rows, len})
    local src = mf.randn(R, rows, slen)
    local fi, fs = flat(idx), flat(src)
    local want, wadd = {}, {}
    for i = 1, #fx do want[i], wadd[i] = fx[i], fx[i] end
    for r = 0, R * rows - 1 do  -- index row r: x's row (r // rows) * C + r % rows
      local xr = (math.floor(r / rows) * C + r % rows) * W
      for j = 1, len do
        local p, v = xr + fi[r * len + j], fs[r * slen + j]
        cell[0] = wadd[p] + v  -- float32, rounded at each add: the order shows in the bits
        want[p], wadd[p] = v, cell[0]
      end
    end
    mf.set_num_threads(2)
    local tag = what .. ': '
    same_flat(flat(mf.scatter(x, idx, src, 3)), want, tag .. 'scatter')
    same_flat(flat(mf.scatter_add(x, idx, src, 3)), wadd, tag .. 'scatter_add')
    local y = x:clone()
    mf.scatter_(y, idx, src, 3)
    same_flat(flat(y), want, tag .. 'scatter_')
    y = x:clone()
    mf.scatter_add_(y, idx, src, 3)
    same_flat(flat(y), wadd, tag .. 'scatter_add_')
    local rx, rs = mf.randn(R, C, W), mf.randn(R, rows, slen)
    same_bits(tag .. 'scatter', function() return mf.scatter(rx, idx, rs, 3) end)
    same_bits(tag .. 'scatter_add', function() return mf.scatter_add(rx, idx, rs, 3) end)
    same_bits(tag .. 'scatter_add_', function() return mf.scatter_add_(rx:clone(), idx, rs, 3) end)
    if len <= W then
      local g, gi = {}, 0
      for r = 0, R * rows - 1 do
        local xr = (math.floor(r / rows) * C + r % rows) * W
        for j = 1, len do
          gi = gi + 1
          g[gi] = fx[xr + fi[gi]]
        end
      end
      same_flat(flat(mf.gather(x, idx, 3)), g, tag .. 'gather')
      same_bits(tag .. 'gather', function() return mf.gather(rx, idx, 3) end)
    end
  end
end)

-- index_add into a fresh output along a dim before the last (x and src contiguous, 16 or more
-- slices of 16 or more elements) writes each output slice once: x's slice plus src's slices whose
-- index is its own, in increasing index position. Every dtype, along dim 1 of 20x37 and dim 2 of
-- 3x8x37 (that path) and the last dim (the pass over src), an index full of repeats that leaves some
-- slices without any, the plain and in-place forms, against sums taken here in src's row-major order
-- (float32 rounded at each add: another order would change the bits; uint8 wraps as a byte).
T.test('index_add: every dtype, repeated destinations summed in index order', function()
  math.randomseed(13)
  local cell = ffi.new('float[1]')
  for _, dt in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    local int = dt ~= 'float32' and dt ~= 'float64'
    local function draw(n)
      local v = {}
      for i = 1, n do v[i] = int and math.random(0, 90) or (math.random() - 0.5) * 10 ^ math.random(-3, 3) end
      return v
    end
    local function round(v)
      if dt == 'float32' then
        cell[0] = v
        return cell[0]
      end
      return dt == 'uint8' and v % 256 or v
    end
    for _, case in ipairs{{{20, 37}, 1}, {{3, 8, 37}, 2}, {{3, 8, 37}, 3}} do
      local xs, dim = case[1], case[2]
      local ss = {unpack(xs)}
      ss[dim] = xs[dim] * 2 + 3  -- more src slices than destinations: repeats
      local nx, ns = 1, 1
      for d = 1, #xs do nx, ns = nx * xs[d], ns * ss[d] end
      local x = mf.tensor(draw(nx), dt):reshape(unpack(xs))
      local src = mf.tensor(draw(ns), dt):reshape(unpack(ss))
      local iv = {}
      for r = 1, ss[dim] do iv[r] = math.random(1, xs[dim] - 2) end  -- the last two slices get none
      local idx = mf.tensor(iv, 'int64')
      local fx, fs, want = flat(x), flat(src), {}
      for i = 1, #fx do want[i] = fx[i] end
      local xst = strides_of(xs)
      for i = 1, #fs do
        local c = coords(i, ss)
        c[dim] = iv[c[dim]]
        local p = pos(c, xst)
        want[p] = round(want[p] + fs[i])
      end
      local tag = ('index_add %s %s along dim %d'):format(dt, table.concat(xs, 'x'), dim)
      same_flat(flat(mf.index_add(x, idx, src, dim)), want, tag)
      local y = x:clone()
      mf.index_add_(y, idx, src, dim)
      same_flat(flat(y), want, tag .. ', in place')
      same_flat(flat(x), fx, tag .. ': x unchanged')
    end
  end
end)

-- masked_select's flat path takes 16 (4-byte dtypes) or 8 (8-byte) elements a turn while a whole
-- vector fits the output, then one at a time: every dtype, and sizes short of the count, exact, past it
T.test('masked_select flat path: every dtype, sizes below and past the count', function()
  local x0 = mf.arange(1, 1001):reshape(10, 100)
  local m = mf.randint(0, 2, {10, 100}):type('uint8')
  local fm = flat(m)
  for _, dt in ipairs{'float32', 'float64', 'int32', 'int64', 'uint8'} do
    local x = dt == 'uint8' and mf.arange(1, 1001):reshape(10, 100):div(4):floor():type(dt) or x0:type(dt)
    local fx, want = flat(x), {}
    for i = 1, #fx do if fm[i] ~= 0 then want[#want + 1] = fx[i] end end
    for _, size in ipairs{#want, 0, 5, 17, #want - 3, #want + 7} do
      local exp = {}
      for r = 1, size do exp[r] = want[r] or 9 end
      same_flat(flat(mf.masked_select(x, m, size, 9)), exp, ('masked_select %s, size %d'):format(dt, size))
    end
  end
end)

-- nonzero row by row of the last dim: ranks 1 to 4, a transposed x (strided rows), and output sizes
-- short of the count (stops mid-row), exact and past it (padding rows of fill_value)
T.test('nonzero by rows: ranks 1-4, transposed, sizes below and past the count', function()
  for _, s in ipairs{{7}, {5, 9}, {3, 4, 5}, {2, 3, 2, 4}, {40, 33}} do
    for _, transposed in ipairs{false, true} do
      local x = mf.randint(0, 3, s):float()
      if transposed and #s >= 2 then x = x:transpose(1, #s) end
      local xs, fx, want = x:size(), flat(x), {}
      local shape = {}
      for d = 1, x:dim() do shape[d] = xs[d] end
      for i = 1, #fx do
        if fx[i] ~= 0 then want[#want + 1] = coords(i, shape) end
      end
      for _, size in ipairs{#want, 0, 3, #want + 4} do
        local exp = {}
        for r = 1, size do
          for d = 1, #shape do exp[#exp + 1] = want[r] and want[r][d] or -1 end
        end
        same_flat(flat(mf.nonzero(x, size, -1)), exp,
          ('nonzero %s%s, size %d'):format(table.concat(s, 'x'), transposed and ' transposed' or '', size))
      end
    end
  end
end)

T.finish()
