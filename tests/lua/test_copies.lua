-- Copies by layout (issue 12): the transposed-block, contiguous-run, broadcast-row and element paths
-- of copy, contiguous, concat, index_select, one_hot, flip / roll / repeat and tril / triu, on every
-- dtype width, with sizes that are not multiples of the 8 x 8 blocks and large enough to run on
-- several threads. References are index arithmetic in Lua over the source's own values, read
-- through raw pointers and strides (never through the copy under test).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local DTYPES = {'float32', 'float64', 'int32', 'int64', 'uint8'}

-- The values of t in row-major order of its shape, read through its strides.
-- idx (0-based, one per dim of shape) steps to the next element in row-major order
local function advance(idx, shape)
  for d = #shape, 1, -1 do
    idx[d] = idx[d] + 1
    if idx[d] < shape[d] then return end
    idx[d] = 0
  end
end

local function read(t)
  local nd, p, out = t:dim(), t:data(), {}
  if nd == 0 then return {tonumber(p[0])} end
  local shape, st, idx = {}, {}, {}
  for d = 1, nd do shape[d], st[d], idx[d] = tonumber(t._shape[d - 1]), tonumber(t._strides[d - 1]), 0 end
  local n = t:numel()
  for _ = 1, n do
    local off = 0
    for d = 1, nd do off = off + idx[d] * st[d] end
    out[#out + 1] = tonumber(p[off])
    advance(idx, shape)
  end
  return out
end

-- A contiguous tensor of shape whose element at row-major position i (0-based) is f(i) (default
-- i % 251, which every dtype holds exactly).
local function pattern(shape, dtype, f)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = f and f(i) or i % 251 end
  return mf.tensor(v, dtype):reshape(shape)
end

local function strides_of(shape)
  local st, acc = {}, 1
  for d = #shape, 1, -1 do st[d] = acc; acc = acc * shape[d] end
  return st
end

-- Row-major values of pattern(shape):permute(perm), by index arithmetic.
local function permuted_ref(shape, perm)
  local st, oshape = strides_of(shape), {}
  for j, p in ipairs(perm) do oshape[j] = shape[p] end
  local out, idx, n = {}, {}, 1
  for j = 1, #oshape do idx[j] = 0; n = n * oshape[j] end
  for _ = 1, n do
    local lin = 0
    for j = 1, #perm do lin = lin + idx[j] * st[perm[j]] end
    out[#out + 1] = lin % 251
    advance(idx, oshape)
  end
  return out, oshape
end

local function same(got, want, what)
  T.eq(#got, #want, what .. ': element count')
  for i = 1, #want do
    if got[i] ~= want[i] and not (got[i] ~= got[i] and want[i] ~= want[i]) then
      error(('%s: element %d is %s, want %s'):format(what, i, tostring(got[i]), tostring(want[i])), 2)
    end
  end
end

local function is_contiguous(t)
  local acc = 1
  for d = t:dim(), 1, -1 do
    if t:size(d) > 1 and tonumber(t._strides[d - 1]) ~= acc then return false end
    acc = acc * t:size(d)
  end
  return true
end

local function all_perms(n)
  local out = {}
  local function rec(pre, left)
    if #left == 0 then out[#out + 1] = pre return end
    for i = 1, #left do
      local p, l = {unpack(pre)}, {unpack(left)}
      p[#p + 1] = table.remove(l, i)
      rec(p, l)
    end
  end
  local l = {}
  for i = 1, n do l[i] = i end
  rec({}, l)
  return out
end

T.test('t():contiguous() of every dtype: block edges, thin and large matrices', function()
  for _, dtype in ipairs(DTYPES) do
    for _, sh in ipairs{{8, 8}, {9, 17}, {17, 9}, {7, 7}, {1, 50}, {50, 1}, {3, 1000}, {515, 300}} do
      local x = pattern(sh, dtype)
      local y = x:t():contiguous()
      local want = permuted_ref(sh, {2, 1})
      local what = ('%s %dx%d'):format(dtype, sh[1], sh[2])
      T.eq(is_contiguous(y), true, what .. ' contiguous')
      T.eq(y:dtype(), dtype, what .. ' dtype')
      same(read(y), want, what)
    end
  end
end)

T.test('permute then contiguous: every order of 3 and 4 dims', function()
  for _, case in ipairs{{{37, 41, 90}, {'float32', 'int64', 'uint8'}}, {{3, 5, 7, 9}, {'float64', 'int32'}},
                        {{2, 16, 9, 24}, {'float32'}}} do
    local shape, dtypes = case[1], case[2]
    for _, dtype in ipairs(dtypes) do
      local x = pattern(shape, dtype)
      for _, perm in ipairs(all_perms(#shape)) do
        local want, oshape = permuted_ref(shape, perm)
        local y = x:permute(perm):contiguous()
        local what = ('%s %s permute {%s}'):format(dtype, table.concat(shape, 'x'), table.concat(perm, ','))
        T.eq(table.concat(y:size(), 'x'), table.concat(oshape, 'x'), what)
        same(read(y), want, what)
      end
    end
  end
end)

T.test('copy into a transposed destination writes only the view', function()
  for _, dtype in ipairs{'float32', 'int64', 'uint8'} do
    local base = mf.full({40, 70}, 7, {dtype = dtype})
    local src = pattern({30, 40}, dtype)            -- lands in columns 3..32 of base's rows, transposed
    base:narrow(2, 3, 30):t():copy(src)
    local got, st = read(base), strides_of({30, 40})
    for r = 0, 39 do
      for c = 0, 69 do
        local want = 7
        if c >= 2 and c < 32 then want = ((c - 2) * st[1] + r * st[2]) % 251 end
        if got[r * 70 + c + 1] ~= want then error(('%s: base[%d][%d] is %s, want %s'):format(dtype, r + 1, c + 1,
          tostring(got[r * 70 + c + 1]), want)) end
      end
    end
  end
end)

T.test('views as sources: narrow, slice with a step, select, expand', function()
  local x = pattern({60, 50}, 'float32')
  -- narrow then transpose: rows 4..23, columns 6..40
  local y = x:narrow(1, 4, 20):narrow(2, 6, 35):t():contiguous()
  local want = {}
  for c = 5, 39 do for r = 3, 22 do want[#want + 1] = (r * 50 + c) % 251 end end
  same(read(y), want, 'narrow x narrow, transposed')
  -- every third column (a slice with step 3), then contiguous
  local s = mf.slice(x, 2, 2, 50, 3):contiguous()
  want = {}
  for r = 0, 59 do for c = 1, 49, 3 do want[#want + 1] = (r * 50 + c) % 251 end end
  same(read(s), want, 'slice step 3')
  -- expand: a row and a column materialised (broadcast rows, and one value per row)
  local row = pattern({1, 300}, 'int64')
  local e = row:expand(700, 300):contiguous()
  want = {}
  for _ = 1, 700 do for c = 0, 299 do want[#want + 1] = c % 251 end end
  same(read(e), want, 'expanded row')
  local col = pattern({700, 1}, 'float64')
  e = col:expand(700, 300):contiguous()
  want = {}
  for r = 0, 699 do for _ = 1, 300 do want[#want + 1] = r % 251 end end
  same(read(e), want, 'expanded column')
  -- a 1-element source broadcast to everything, and a column broadcast into a transposed view
  local dst = mf.zeros(300, 200, {dtype = 'int32'})
  dst:copy(mf.tensor({5}, 'int32'))
  want = {}
  for i = 1, 60000 do want[i] = 5 end
  same(read(dst), want, 'one value everywhere')
  dst:t():copy(pattern({200, 1}, 'int32'))
  want = {}
  for _ = 0, 299 do for c = 0, 199 do want[#want + 1] = c end end
  same(read(dst), want, 'a column into a transposed view')
end)

T.test('NaN, -0 and infinities move bit for bit', function()
  local v = {0 / 0, -0.0, math.huge, -math.huge, 1.5, -2.25, 3, 4, 5}
  for _, dtype in ipairs{'float32', 'float64'} do
    local x = pattern({9, 9}, dtype, function(i) return v[i % 9 + 1] end)
    local y = x:t():contiguous()
    local got = read(y)
    for i = 0, 8 do
      for j = 0, 8 do
        local g, w = got[i * 9 + j + 1], v[(j * 9 + i) % 9 + 1]
        T.eq(g ~= g, w ~= w, dtype .. ' NaN place')
        if w == w then T.eq(g, w, dtype .. ' value'); T.eq(1 / g, 1 / w, dtype .. ' sign of zero') end
      end
    end
  end
end)

T.test('a copy from a source sharing the destination memory (a:copy(a:t()))', function()
  local a = pattern({33, 33}, 'float32')
  a:copy(a:t())
  same(read(a), (permuted_ref({33, 33}, {2, 1})), 'in-place transpose')
end)

T.test('the same values with 1 and 2 threads', function()
  local old = mf.get_num_threads()
  local x = pattern({37, 41, 90}, 'float32')
  local r = {}
  for k, n in ipairs{1, 2} do
    mf.set_num_threads(n)
    r[k] = {read(x:permute({3, 1, 2}):contiguous()), read(mf.concat({x, x:narrow(2, 1, 5)}, 2)),
            read(x:narrow(3, 2, 80):transpose(1, 3):contiguous())}
  end
  mf.set_num_threads(old)
  for i = 1, 3 do same(r[1][i], r[2][i], 'result ' .. i) end
end)

T.test('concat and stack in one pass: every dim and dtype, empty parts, views, more than 64 parts, threads', function()
  -- the reference: output element (i1, .., ik) read from the input whose slab along dim holds it,
  -- at the same index shifted by the sizes before it (Lua arithmetic over read(), the input's values)
  local function concat_ref(xs, dim)
    local vals, shapes, offs, total = {}, {}, {}, 0
    for k, x in ipairs(xs) do
      vals[k], shapes[k], offs[k] = read(x), x:size(), total
      total = total + x:size(dim)
    end
    local oshape = {unpack(shapes[1])}
    oshape[dim] = total
    local out, idx, n = {}, {}, 1
    for d = 1, #oshape do idx[d] = 0; n = n * oshape[d] end
    for _ = 1, n do
      local k = #xs
      while idx[dim] < offs[k] or shapes[k][dim] == 0 do k = k - 1 end
      local st, lin = strides_of(shapes[k]), 0
      for d = 1, #oshape do lin = lin + (d == dim and idx[d] - offs[k] or idx[d]) * st[d] end
      out[#out + 1] = vals[k][lin + 1]
      advance(idx, oshape)
    end
    return out
  end
  local old = mf.get_num_threads()
  for _, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    for _, dtype in ipairs(DTYPES) do
      local base = {5, 7, 9}
      for dim = 1, 3 do
        local xs = {}
        for k, len in ipairs{2, 0, 3, 1} do
          local sh = {unpack(base)}
          sh[dim] = len
          xs[k] = pattern(sh, dtype, function(i) return (i * 7 + k * 31) % 251 end)
        end
        local what = ('%s concat dim %d, %d thread(s)'):format(dtype, dim, nt)
        same(read(mf.concat(xs, dim)), concat_ref(xs, dim), what)
        -- a strided part of base's shape (the copy per input)
        xs[2] = dim == 1 and pattern({9, 7, 5}, dtype):permute({3, 2, 1}) or pattern({5, 9, 7}, dtype):transpose(2, 3)
        same(read(mf.concat(xs, dim)), concat_ref(xs, dim), what .. ' with a strided part')
      end
      -- stack at every position: concat of the parts with a size-1 dim inserted there
      local ps = {pattern({4, 6}, dtype), pattern({4, 6}, dtype, function(i) return (i * 3) % 251 end)}
      for d = 1, 3 do
        local us = {ps[1]:unsqueeze(d), ps[2]:unsqueeze(d)}
        same(read(mf.stack(ps, d)), concat_ref(us, d), ('%s stack at %d'):format(dtype, d))
      end
    end
    -- large enough for two threads, each thread's range ending inside a row of one part
    local a = pattern({37, 41, 90}, 'float32')
    local b = pattern({37, 3, 90}, 'float32', function(i) return (i * 13) % 251 end)
    same(read(mf.concat({a, b, a}, 2)), concat_ref({a, b, a}, 2), 'large along dim 2, ' .. nt .. ' thread(s)')
    local c = pattern({37, 41, 7}, 'float32', function(i) return (i * 5) % 251 end)
    same(read(mf.concat({c, a}, 3)), concat_ref({c, a}, 3), 'large along dim 3, ' .. nt .. ' thread(s)')
  end
  mf.set_num_threads(old)
  -- more parts than the one-pass path takes (64)
  local parts = {}
  for k = 1, 70 do parts[k] = mf.full({2, 3}, k) end
  same(read(mf.concat(parts, 1)), concat_ref(parts, 1), '70 parts')
  -- contiguous parts that are views at offsets into one tensor, in reverse order
  local x = pattern({4, 5}, 'float64')
  local want = concat_ref({x:narrow(1, 3, 2), x:narrow(1, 1, 2)}, 1)
  local y = mf.concat({x:narrow(1, 3, 2), x:narrow(1, 1, 2)}, 1)
  same(read(y), want, 'parts that are views of one tensor')
end)

T.test('index_select by rows: every dim, repeated indices, views, large enough for threads', function()
  local shape = {30, 47, 130}
  local st = strides_of(shape)
  local idx = {5, 1, 5, 30, 2, 17, 17, 9}
  for _, dtype in ipairs{'float32', 'int64', 'uint8', 'float64'} do
    local x = pattern(shape, dtype)
    for dim = 1, 3 do
      local ix = {}
      for k, v in ipairs(idx) do ix[k] = math.min(v, shape[dim]) end
      local y = mf.index_select(x, mf.tensor(ix, 'int64'), dim)
      local want, oshape = {}, {shape[1], shape[2], shape[3]}
      oshape[dim] = #ix
      for a = 0, oshape[1] - 1 do
        for b = 0, oshape[2] - 1 do
          for c = 0, oshape[3] - 1 do
            local i = {a, b, c}
            i[dim] = ix[i[dim] + 1] - 1
            want[#want + 1] = (i[1] * st[1] + i[2] * st[2] + i[3] * st[3]) % 251
          end
        end
      end
      same(read(y), want, ('%s index_select dim %d'):format(dtype, dim))
    end
  end
  -- x a transposed view (the run after dim strided) and a permuted one (dims after dim do not merge)
  local x = pattern({200, 90}, 'float32')
  local y = mf.index_select(x:t(), mf.tensor({3, 90, 1, 3}, 'int64'), 1)
  local want = {}
  for _, r in ipairs{3, 90, 1, 3} do for c = 0, 199 do want[#want + 1] = (c * 90 + r - 1) % 251 end end
  same(read(y), want, 'rows of a transposed view')
  local x3 = pattern({6, 5, 4}, 'int32')
  y = mf.index_select(x3:permute({2, 3, 1}), mf.tensor({2, 2, 5}, 'int64'), 1)  -- 3x4x6
  want = {}
  for _, r in ipairs{2, 2, 5} do
    for c = 0, 3 do for k = 0, 5 do want[#want + 1] = (k * 20 + (r - 1) * 4 + c) % 251 end end
  end
  same(read(y), want, 'rows of a permuted view')
  T.errors(function() mf.index_select(x, mf.tensor({1, 201}, 'int64'), 1) end,
    'index_select: index 201 at position 2 is out of range 1..200')
end)

T.test('runs of 512 B to 2 KiB (copy_run inline): every tail length, unaligned ends, three users', function()
  -- byte lengths around the window's ends and 64-byte turns (whole turns, masked tails of 1..63
  -- bytes); sources and destinations at odd byte offsets; uint8 so a length is its byte count
  local lens = {500, 511, 512, 513, 575, 576, 577, 639, 700, 767, 768, 769, 1000, 1023, 1024, 1087, 1531,
                2000, 2047, 2048, 2049}
  for _, len in ipairs(lens) do
    for _, off in ipairs{0, 1, 3, 63} do
      local what = ('%d bytes at offset %d'):format(len, off)
      local a = pattern({3, len + 70}, 'uint8', function(i) return (i * 7 + off) % 251 end)
      local v = a:narrow(2, 1 + off, len)  -- rows of len bytes from odd addresses
      same(read(v:contiguous()), read(v), 'contiguous of a narrow, ' .. what)
      -- concat along dim 2: pieces of len and off + 1 bytes, so the second input's run starts unaligned
      local b = pattern({3, off + 1}, 'uint8', function(i) return (i * 3) % 251 end)
      local c = pattern({3, len}, 'uint8', function(i) return (i * 5 + 1) % 251 end)
      local y, want = read(mf.concat({b, c}, 2)), {}
      local rb, rc = read(b), read(c)
      for r = 0, 2 do
        for j = 1, off + 1 do want[#want + 1] = rb[r * (off + 1) + j] end
        for j = 1, len do want[#want + 1] = rc[r * len + j] end
      end
      same(y, want, 'concat along dim 2, ' .. what)
      -- index_select rows of len bytes, repeated, into rows one byte past alignment (a view of c's rows)
      local s = mf.index_select(c, mf.tensor({3, 1, 3}, 'int64'), 1)
      want = {}
      for _, r in ipairs{3, 1, 3} do for j = 1, len do want[#want + 1] = rc[(r - 1) * len + j] end end
      same(read(s), want, 'index_select rows, ' .. what)
    end
  end
end)

T.test('casts into 16 MB and more (streaming stores): values, line heads and tails, views, threads', function()
  local ffi = require 'ffi'
  -- n elements: not a whole number of 4 KiB chunks; the source one element into its storage
  local n = 2 * 1024 * 1024 + 37
  local big = mf.randn(n + 1)
  local x = big:narrow(1, 2, n)
  local xp = x:data()
  local function check(y, conv, what)
    local yp = y:data()
    local bad
    for i = 0, n - 1 do
      if yp[i] ~= conv(xp[i]) then bad = i break end
    end
    if bad then error(('%s: element %d is %s, want %s'):format(what, bad + 1, tostring(yp[bad]), tostring(conv(xp[bad])))) end
  end
  local d = ffi.typeof('double[1]')
  local f = ffi.typeof('float[1]')
  local old = mf.get_num_threads()
  for _, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    -- float32 -> float64 is exact; float32 -> int64 truncates toward zero (x scaled up first)
    check(x:cast('float64'), function(v) return d(v)[0] end, 'float32 -> float64, ' .. nt .. ' thread(s)')
    local xs = (x * 1000):contiguous()
    local y = xs:cast('int64')
    local yp, sp = y:data(), xs:data()
    for i = 0, n - 1 do
      local v = tonumber(sp[i])
      local want = v < 0 and math.ceil(v) or math.floor(v)
      if tonumber(yp[i]) ~= want then error(('float32 -> int64: element %d is %s, want %d'):format(i + 1, tostring(yp[i]), want)) end
    end
    -- float64 -> float32 rounds to nearest (the FFI's conversion is the reference)
    local x64 = x:cast('float64') * (1 / 3)
    local y32 = x64:cast('float32')
    local p64, p32 = x64:data(), y32:data()
    for i = 0, n - 1 do
      if p32[i] ~= f(p64[i])[0] then error(('float64 -> float32: element %d differs'):format(i + 1)) end
    end
    -- into a view whose rows are contiguous but start mid-line: columns 2..2049 of 1025 rows of 2050
    local rows = 1025
    local src = mf.randn(rows, 2048)
    local dst = mf.zeros({rows, 2050}, {dtype = 'float64'})
    dst:narrow(2, 2, 2048):copy(src)
    local dp, sp2 = dst:data(), src:data()
    for r = 0, rows - 1 do
      T.eq(dp[r * 2050], 0, 'column 1 untouched')
      T.eq(dp[r * 2050 + 2049], 0, 'column 2050 untouched')
      for c = 0, 2047, 97 do
        if dp[r * 2050 + 1 + c] ~= d(sp2[r * 2048 + c])[0] then error(('view row %d column %d differs'):format(r + 1, c + 2)) end
      end
    end
  end
  mf.set_num_threads(old)
end)

T.test('copies into 16 MB and more (streaming stores): concat, stack, copy, index_select, roll, repeat, threads', function()
  -- outputs of 16.8 MB with odd row lengths (runs starting mid-line, thread ranges ending mid-row);
  -- references read every element through raw pointers by index arithmetic
  local function check(y, want_at, what)
    local p, n = y:data(), y:numel()
    for i = 0, n - 1 do
      local w = want_at(i)
      if p[i] ~= w then error(('%s: element %d is %s, want %s'):format(what, i + 1, tostring(p[i]), tostring(w))) end
    end
  end
  local old = mf.get_num_threads()
  for _, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    local tag = (', %d thread(s)'):format(nt)
    local a, b = mf.randn(1025, 2051), mf.randn(1025, 2047)
    local ap, bp = a:data(), b:data()
    check(mf.concat({a, b}, 2), function(i)
      local r, c = math.floor(i / 4098), i % 4098
      return c < 2051 and ap[r * 2051 + c] or bp[r * 2047 + c - 2051]
    end, 'concat along dim 2' .. tag)
    local c1, c2 = mf.randn(2049, 1025), mf.randn(2047, 1025)
    local p1, p2 = c1:data(), c2:data()
    check(mf.concat({c1, c2}, 1), function(i) return i < 2049 * 1025 and p1[i] or p2[i - 2049 * 1025] end,
      'concat along dim 1' .. tag)
    local s1 = mf.randn(1025, 2049)
    local s2 = mf.randn(1025, 2049)
    local q1, q2 = s1:data(), s2:data()
    local half = 1025 * 2049
    check(mf.stack({s1, s2}, 1), function(i) return i < half and q1[i] or q2[i - half] end, 'stack' .. tag)
    check(mf['repeat'](s1, {2, 1}), function(i) return q1[i % half] end, 'repeat {2, 1}' .. tag)
    -- roll along dim 2 by 3 (runs 12 bytes off their source modulo 4 KiB) and along dim 1 by -5
    check(s1:roll(3, 2), function(i)
      local r, c = math.floor(i / 2049), i % 2049
      return q1[r * 2049 + (c - 3) % 2049]
    end, 'roll(3, 2)' .. tag)
    check(s1:roll(-5, 1), function(i)
      local r, c = math.floor(i / 2049), i % 2049
      return q1[((r + 5) % 1025) * 2049 + c]
    end, 'roll(-5, 1)' .. tag)
    -- copy: a whole tensor (one run split across threads) and the rows of a narrow (runs of 2047
    -- floats from a float past the source's line starts) into a view whose rows start mid-line
    local big = mf.randn(2050, 2049)
    local gp = big:data()
    check(big:clone(), function(i) return gp[i] end, 'clone' .. tag)
    local wide = mf.zeros(2050, 2051)
    wide:narrow(2, 3, 2047):copy(big:narrow(2, 2, 2047))
    check(wide, function(i)
      local r, c = math.floor(i / 2051), i % 2051
      return (c < 2 or c > 2048) and 0 or gp[r * 2049 + c - 1]
    end, 'copy of a narrow into a narrow' .. tag)
    -- index_select of rows of 2003 floats (8012 bytes), reversed with repeats
    local x = mf.randn(2101, 2003)
    local xp = x:data()
    local ix = {}
    for k = 1, 2101 do ix[k] = (k * 37) % 2101 + 1 end
    local function want_rows(i)
      local r, c = math.floor(i / 2003), i % 2003
      return xp[(ix[r + 1] - 1) * 2003 + c]
    end
    check(mf.index_select(x, mf.tensor(ix, 'int64'), 1), want_rows, 'index_select rows' .. tag)
    -- into out=: the first write into o streams (fresh storage), the second takes plain stores
    local o = mf.empty(2101, 2003)
    for k = 1, 2 do
      mf.index_select(x, mf.tensor(ix, 'int64'), 1, {out = o})
      check(o, want_rows, ('index_select into out=, write %d'):format(k) .. tag)
      o:fill(0)
    end
  end
  mf.set_num_threads(old)
end)

T.test("index_select in PyTorch's order, dim first, as gather (it was 'param dim is a tensor')", function()
  local x = mf.arange(6):reshape(2, 3)
  local i = mf.tensor({3, 1}, 'int64')
  -- torch.arange(6.).reshape(2, 3).index_select(1, [2, 0]) = [[2, 0], [5, 3]]
  T.tensor_eq(x:index_select(2, i), {{2, 0}, {5, 3}})
  T.tensor_eq(mf.index_select(x, 2, i), {{2, 0}, {5, 3}})
  T.tensor_eq(x:index_select(i, 2), {{2, 0}, {5, 3}})          -- the project's order stays
  T.tensor_eq(x:index_select(i, {dim = 2}), {{2, 0}, {5, 3}})
  T.tensor_eq(x:index_select(1, mf.tensor({2}, 'int64')), {{3, 4, 5}})
  T.errors(function() return x:index_select(2, i, 5) end, 'index_select: too many arguments (4)')
  local p = mf.placeholder('float32', {2, 3})
  T.tensor_eq(mf.Session():run(p:index_select(2, mf.constant(i)), {[p] = x}), {{2, 0}, {5, 3}})
end)

T.test('one_hot row by row: strided labels, every output dtype, a bad label before any write', function()
  local labs = {}
  for i = 1, 3000 do labs[i] = (i * 7) % 97 + 1 end
  local l = mf.tensor(labs, 'int32'):reshape(60, 50):t()  -- 50x60, transposed
  for _, dtype in ipairs{'float32', 'int64', 'uint8'} do
    local y = mf.one_hot(l, 97, dtype)
    T.eq(table.concat(y:size(), 'x'), '50x60x97')
    local got, k = read(y), 0
    for i = 0, 49 do
      for j = 0, 59 do
        local lab = labs[j * 50 + i + 1]
        for c = 1, 97 do
          k = k + 1
          if got[k] ~= (c == lab and 1 or 0) then error(('%s one_hot [%d][%d][%d] is %s'):format(dtype, i + 1, j + 1, c, got[k])) end
        end
      end
    end
  end
  T.errors(function() mf.one_hot(mf.tensor({1, 2, 98}, 'int64'), 97) end,
    'one_hot: label 98 at position 3 is out of range 1..97')
end)

T.test('flip, roll, repeat by runs; tril, triu by ranges: views, dtypes, large', function()
  local R, C = 300, 517
  for _, dtype in ipairs{'float32', 'int64', 'uint8'} do
    local x = pattern({R, C}, dtype)
    local function at(r, c) return (r * C + c) % 251 end  -- 0-based
    local cases = {
      {'flip 2', x:flip({2}), R, C, function(r, c) return at(r, C - 1 - c) end},
      {'flip 1, 2', x:flip({1, 2}), R, C, function(r, c) return at(R - 1 - r, C - 1 - c) end},
      {'roll 3 along 2', x:roll(3, 2), R, C, function(r, c) return at(r, (c - 3) % C) end},
      {'roll -200 along 2, 7 along 1', x:roll({7, -200}, {1, 2}), R, C,
       function(r, c) return at((r - 7) % R, (c + 200) % C) end},
      {'repeat 2, 3', mf['repeat'](x, {2, 3}), 2 * R, 3 * C, function(r, c) return at(r % R, c % C) end},
      {'tril 5', x:tril(5), R, C, function(r, c) return c - r <= 5 and at(r, c) or 0 end},
      {'tril -400', x:tril(-400), R, C, function(r, c) return c - r <= -400 and at(r, c) or 0 end},
      {'triu -3', x:triu(-3), R, C, function(r, c) return c - r >= -3 and at(r, c) or 0 end},
      {'triu 2^40', x:triu(2 ^ 40), R, C, function() return 0 end},
      {'tril -2^40', x:tril(-2 ^ 40), R, C, function() return 0 end},
    }
    for _, k in ipairs(cases) do
      local want = {}
      for r = 0, k[3] - 1 do for c = 0, k[4] - 1 do want[#want + 1] = k[5](r, c) end end
      same(read(k[2]), want, dtype .. ' ' .. k[1])
    end
  end
  -- one long row (a flattened roll: runs cut into pieces for threads), a short row repeated many
  -- times (the element table), and a roll of a transposed source (strided runs)
  local n = 100003
  local v = pattern({n}, 'float32')
  local want = {}
  for i = 0, n - 1 do want[i + 1] = ((i - 77) % n) % 251 end
  same(read(v:roll(77)), want, '1-D roll by 77')
  local m = pattern({20, 30}, 'int64')
  want = {}
  for i = 0, 599 do want[i + 1] = ((i + 5) % 600) % 251 end
  same(read(m:roll(-5)), want, 'flattened roll of a matrix')
  local thin = pattern({500, 3}, 'int32')
  want = {}
  for r = 0, 499 do for c = 0, 119 do want[#want + 1] = (r * 3 + c % 3) % 251 end end
  same(read(mf['repeat'](thin, {1, 40})), want, 'a 3-wide row repeated 40 times')
  want = {}
  for r = 0, 29 do for c = 0, 19 do want[#want + 1] = (((c - 4) % 20) * 30 + r) % 251 end end
  same(read(m:t():roll(4, 2)), want, 'roll of a transposed view')
  -- a transposed source (its last dim strided): the element loop, same values
  local x = pattern({40, 30}, 'int32')
  local want = {}
  for r = 0, 29 do for c = 0, 39 do want[#want + 1] = ((39 - c) * 30 + r) % 251 end end
  same(read(x:t():flip({2})), want, 'flip of a transposed view')
  want = {}
  for r = 0, 29 do for c = 0, 39 do want[#want + 1] = c - r >= 1 and (c * 30 + r) % 251 or 0 end end
  same(read(x:t():triu(1)), want, 'triu of a transposed view')
end)

T.test('repeat, roll and flip with merged trailing dims: tiles, leading dims, views, 3 and 4 dims', function()
  -- the reference maps each output index to x's: (i - shift) mod n along each dim of x, reversed
  -- where flipped; out's extra leading dims are ignored
  local function ref(x, oshape, shifts, flips)
    local xs, vals, lead = x:size(), read(x), #oshape - x:dim()
    local st = strides_of(xs)
    local out, idx, n = {}, {}, 1
    for d = 1, #oshape do idx[d] = 0; n = n * oshape[d] end
    for _ = 1, n do
      local lin = 0
      for d = lead + 1, #oshape do
        local nx, i = xs[d - lead], idx[d]
        if flips[d] then i = oshape[d] - 1 - i end
        lin = lin + ((i - (shifts[d] or 0)) % nx) * st[d - lead]
      end
      out[#out + 1] = vals[lin + 1]
      advance(idx, oshape)
    end
    return out
  end
  for _, dtype in ipairs{'float32', 'int64', 'uint8'} do
    local x = pattern({3, 4, 5}, dtype)
    local nar = x:narrow(2, 2, 2)  -- 3 x 2 x 5, rows 5 apart but slabs 20 apart: no tile merge
    local cases = {
      {'repeat 2, 1, 1', mf['repeat'](x, {2, 1, 1}), x, {6, 4, 5}, {}, {}},
      {'repeat 2, 3, 1, 1', mf['repeat'](x, {2, 3, 1, 1}), x, {2, 9, 4, 5}, {}, {}},
      {'repeat 1, 1, 1', mf['repeat'](x, {1, 1, 1}), x, {3, 4, 5}, {}, {}},
      {'repeat 1, 2, 1', mf['repeat'](x, {1, 2, 1}), x, {3, 8, 5}, {}, {}},
      {'repeat 2, 2, 1', mf['repeat'](x, {2, 2, 1}), x, {6, 8, 5}, {}, {}},
      {'repeat 3, 1, 1 of a narrow', mf['repeat'](nar, {3, 1, 1}), nar, {9, 2, 5}, {}, {}},
      {'repeat 2, 1, 1 of a transpose', mf['repeat'](x:transpose(2, 3), {2, 1, 1}), x:transpose(2, 3), {6, 5, 4}, {}, {}},
      {'roll 1 along 1', x:roll(1, 1), x, {3, 4, 5}, {1}, {}},
      {'roll 4 along 2 (a whole turn), 2 along 1', x:roll({4, 2}, {2, 1}), x, {3, 4, 5}, {2, 4}, {}},
      {'roll 2 along 3', x:roll(2, 3), x, {3, 4, 5}, {nil, nil, 2}, {}},
      {'flip 1', x:flip({1}), x, {3, 4, 5}, {}, {true}},
      {'flip 2', x:flip({2}), x, {3, 4, 5}, {}, {nil, true}},
      {'flip 1 of a narrow', nar:flip({1}), nar, {3, 2, 5}, {}, {true}},
    }
    for _, k in ipairs(cases) do
      same(read(k[2]), ref(k[3], k[4], k[5], k[6]), dtype .. ' ' .. k[1])
    end
  end
  -- large: the merged rows split across two threads
  local old = mf.get_num_threads()
  local big = pattern({2, 300, 517}, 'float32')
  for _, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    same(read(mf['repeat'](big, {3, 1, 1})), ref(big, {6, 300, 517}, {}, {}), 'large repeat, ' .. nt .. ' thread(s)')
    same(read(big:roll(1, 1)), ref(big, {2, 300, 517}, {1}, {}), 'large roll, ' .. nt .. ' thread(s)')
  end
  mf.set_num_threads(old)
end)

T.test('where and masked_fill on unit-stride rows: broadcast values, NaN, integers, large', function()
  local R, C = 400, 333
  for _, dtype in ipairs{'float32', 'int64', 'uint8'} do
    local a = pattern({R, C}, dtype)
    local b = pattern({R, C}, dtype, function(i) return (i * 7 + 3) % 251 end)
    local m = pattern({R, C}, 'uint8', function(i) return (i % 3 == 0 or i % 7 == 1) and 1 or 0 end)
    local wa, wb, wm = read(a), read(b), read(m)
    local want = {}
    for i = 1, R * C do want[i] = wm[i] ~= 0 and wa[i] or wb[i] end
    same(read(mf.where(m, a, b)), want, dtype .. ' where')
    for i = 1, R * C do want[i] = wm[i] ~= 0 and 9 or wa[i] end
    same(read(mf.masked_fill(a, m, 9)), want, dtype .. ' masked_fill')
    local row = pattern({1, C}, dtype)  -- b broadcast along rows
    local wr = read(row)
    for i = 1, R * C do want[i] = wm[i] ~= 0 and wa[i] or wr[(i - 1) % C + 1] end
    same(read(mf.where(m, a, row)), want, dtype .. ' where, b a broadcast row')
  end
  local x = mf.tensor({0 / 0, 1, 0 / 0, 2}, 'float32')
  local y = read(mf.where(mf.tensor({1, 1, 0, 0}, 'uint8'), x, mf.tensor({5, 6, 7, 0 / 0}, 'float32')))
  T.eq(y[1] ~= y[1], true, 'NaN chosen'); T.eq(y[2], 1); T.eq(y[3], 7); T.eq(y[4] ~= y[4], true, 'NaN from b')
end)

T.test('in a graph: a transposed copy as an intermediate', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float32', {-1, -1}, 'x')
  local y = mf.contiguous(mf.transpose(p, 1, 2)) * 2
  local x = pattern({19, 130}, 'float32')
  local got = read(mf.Session():run(y, {[p] = x}))
  local want = permuted_ref({19, 130}, {2, 1})
  for i = 1, #want do want[i] = want[i] * 2 end
  same(got, want, 'graph')
  mf.reset_default_graph()
end)

T.finish()
