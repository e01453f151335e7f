-- The everyday shape ops and draws of issue 21 as users call them: hand-worked values and numbers
-- recorded from PyTorch 2 (torch.roll, flip, repeat, tril, triu, stack, chunk, linspace, logspace),
-- views as inputs, integer dtypes, negative dims, wrong sizes and dims, graphs with each op as an
-- intermediate, and the draws (randperm, randint, multinomial) by seed, thread count and property.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local function m34(dtype) return mf.arange(1, 13, {dtype = dtype or 'int64'}):reshape(3, 4) end
local function shape(t) return table.concat(t:size(), 'x') end
local function sizes(list)
  local s = {}
  for i, t in ipairs(list) do s[i] = shape(t) end
  return table.concat(s, ' ')
end

T.test('roll, flip: PyTorch numbers on 3x4 (1..12)', function()
  local x = m34()
  -- torch.roll(x, 1) (flattened), torch.roll(x, (1, -1), (0, 1)), torch.roll(x, -5, 1)
  T.tensor_eq(mf.roll(x, 1), {{12, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}})
  T.tensor_eq(x:roll({1, -1}, {1, 2}), {{10, 11, 12, 9}, {2, 3, 4, 1}, {6, 7, 8, 5}})
  T.tensor_eq(x:roll(-5, 2), {{2, 3, 4, 1}, {6, 7, 8, 5}, {10, 11, 12, 9}})
  T.tensor_eq(x:roll(-5, -1), {{2, 3, 4, 1}, {6, 7, 8, 5}, {10, 11, 12, 9}})
  -- torch.flip(x, (0, 1)), torch.flip(x, (1,))
  T.tensor_eq(x:flip(1, 2), {{12, 11, 10, 9}, {8, 7, 6, 5}, {4, 3, 2, 1}})
  T.tensor_eq(mf.flip(x, {-1}), {{4, 3, 2, 1}, {8, 7, 6, 5}, {12, 11, 10, 9}})
  T.eq(mf.flip(x, 2):dtype(), 'int64')
end)

T.test('repeat (repeatTensor): PyTorch numbers; the keyword spellings', function()
  local v = mf.tensor({1, 2}, 'int32')
  -- torch.tensor([1, 2]).repeat(2, 3)
  T.tensor_eq(v:repeatTensor(2, 3), {{1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2}})
  T.tensor_eq(mf['repeat'](v, 2, 3), {{1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2}})
  T.tensor_eq(v['repeat'](v, {3}), {1, 2, 1, 2, 1, 2})
  T.tensor_eq(mf.repeatTensor(v, 1, 2), {{1, 2, 1, 2}})
  T.eq(v:repeatTensor(2, 3):dtype(), 'int32')
  T.eq(shape(m34()['repeat'](m34(), 2, 1, 2)), '2x3x8')  -- x.repeat(2, 1, 2).shape
  T.eq(shape(v:repeatTensor(0, 2)), '0x4')
  T.tensor_eq(mf.tensor(5):repeatTensor(3), {5, 5, 5})
  -- a size times its count that wraps int64 (4 x 2^62 = 2^64) is an error, not an empty tensor
  T.errors(function() return mf.ones(4):repeatTensor(2 ^ 62) end,
    'repeat: size 4 at dim 1 repeated 4611686018427387904 times has too many elements')
  T.errors(function() return mf.ones(2, 3):repeatTensor(2 ^ 61, 2 ^ 62) end, 'at dim 2', 'too many elements')
end)

T.test('tril, triu: PyTorch numbers, batched', function()
  local x = m34()
  T.tensor_eq(x:tril(1), {{1, 2, 0, 0}, {5, 6, 7, 0}, {9, 10, 11, 12}})
  T.tensor_eq(x:triu(-1), {{1, 2, 3, 4}, {5, 6, 7, 8}, {0, 10, 11, 12}})
  T.tensor_eq(mf.triu(x, 2), {{0, 0, 3, 4}, {0, 0, 0, 8}, {0, 0, 0, 0}})
  T.tensor_eq(mf.tril(x), {{1, 0, 0, 0}, {5, 6, 0, 0}, {9, 10, 11, 0}})
  local b = mf.stack({mf.ones(2, 2), mf.ones(2, 2) * 2})
  T.tensor_eq(b:triu(), {{{1, 1}, {0, 1}}, {{2, 2}, {0, 2}}})
  T.tensor_eq(b:tril(), {{{1, 0}, {1, 1}}, {{2, 0}, {2, 2}}})
end)

T.test('stack, chunk, unbind: PyTorch sizes and values', function()
  local a, b = mf.tensor({1, 2}), mf.tensor({3, 4})
  T.tensor_eq(mf.stack({a, b}), {{1, 2}, {3, 4}})
  T.tensor_eq(mf.stack({a, b}, 2), {{1, 3}, {2, 4}})   -- torch.stack([a, b], 1)
  T.tensor_eq(mf.stack({a, b}, -1), {{1, 3}, {2, 4}})
  T.eq(shape(mf.stack({m34(), m34()}, 3)), '3x4x2')
  -- torch.arange(6).chunk(4): three parts of 2; torch.arange(5).chunk(3): 2, 2, 1
  T.eq(sizes(mf.arange(6):chunk(4)), '2 2 2')
  T.eq(sizes(mf.arange(5):chunk(3)), '2 2 1')
  T.eq(sizes(mf.zeros(0, 2):chunk(3)), '0x2 0x2 0x2')  -- torch.empty(0, 2).chunk(3)
  local parts = m34():chunk(2, -1)
  T.tensor_eq(parts[2], {{3, 4}, {7, 8}, {11, 12}})
  local rows = m34():unbind()
  T.eq(#rows, 3); T.tensor_eq(rows[3], {9, 10, 11, 12})
  local cols = mf.unbind(m34(), -1)
  T.eq(#cols, 4); T.tensor_eq(cols[2], {2, 6, 10})
  -- torch.empty(0, 2).unbind(0) is (); .unbind(1) is two tensors of size 0
  local none = mf.zeros(0, 2):unbind(1)
  T.eq(type(none), 'table'); T.eq(#none, 0)
  T.eq(sizes(mf.zeros(0, 2):unbind(2)), '0 0')
  mf.reset_default_graph()
  local ph = mf.placeholder('float32', {0, 2})
  local u = mf.unbind(ph * 1, 1)
  T.eq(mf.is_symbol(u[1]), false); T.eq(getmetatable(u), nil, 'a plain list in a graph too'); T.eq(#u, 0)
end)

T.test('chunk and unbind return views; stack, repeat, flip, roll copy', function()
  local x = mf.zeros(4, 3)
  local parts, rows = x:chunk(2), x:unbind(1)
  local r, f = x:repeatTensor(1, 1), x:flip(1)
  x:set(3, 2, 7)
  T.eq(parts[2]:get(1, 2), 7)
  T.eq(rows[3]:get(2), 7)
  T.eq(r:get(3, 2), 0); T.eq(f:get(2, 2), 0)
end)

T.test('views as inputs: transposed, narrowed, expanded', function()
  local xt = m34():t()  -- 4x3: {{1,5,9},{2,6,10},{3,7,11},{4,8,12}}
  T.tensor_eq(xt:flip(1), {{4, 8, 12}, {3, 7, 11}, {2, 6, 10}, {1, 5, 9}})
  T.tensor_eq(xt:roll(1, 1), {{4, 8, 12}, {1, 5, 9}, {2, 6, 10}, {3, 7, 11}})
  T.tensor_eq(xt:roll(1), {{12, 1, 5}, {9, 2, 6}, {10, 3, 7}, {11, 4, 8}})  -- flattened in its own order
  T.tensor_eq(xt:tril(), {{1, 0, 0}, {2, 6, 0}, {3, 7, 11}, {4, 8, 12}})
  T.tensor_eq(xt:repeatTensor(1, 2):narrow(1, 2, 1), {{2, 6, 10, 2, 6, 10}})
  local n = m34():narrow(2, 2, 2)  -- {{2,3},{6,7},{10,11}}
  T.tensor_eq(n:triu(), {{2, 3}, {0, 7}, {0, 0}})
  T.tensor_eq(mf.stack({n, n}, 2), {{{2, 3}, {2, 3}}, {{6, 7}, {6, 7}}, {{10, 11}, {10, 11}}})
  local e = mf.tensor({1, 2, 3}):expand(2, 3)
  T.tensor_eq(e:flip(2), {{3, 2, 1}, {3, 2, 1}})
  T.tensor_eq(e:repeatTensor(1, 2), {{1, 2, 3, 1, 2, 3}, {1, 2, 3, 1, 2, 3}})
  T.tensor_eq(xt:chunk(2, 2)[1], {{1, 5}, {2, 6}, {3, 7}, {4, 8}})
  T.tensor_eq(xt:unbind(2)[3], {9, 10, 11, 12})
end)

T.test('wrong sizes, dims and params are clear errors', function()
  local x = m34()
  T.errors(function() return mf.stack({x, x:t()}) end, 'stack', '3x4', '4x3', 'one shape')
  T.errors(function() return mf.stack({x, mf.zeros(3, 4)}) end, 'stack', 'int64', 'float32')
  T.errors(function() return mf.stack({}) end, 'stack', 'at least one tensor')
  T.errors(function() return x:chunk(2, 3) end, 'chunk', 'dim 3 out of range')
  T.errors(function() return x:chunk(0) end, 'chunk', 'chunks')
  T.errors(function() return mf.zeros(65537):unbind() end, 'unbind', '65537 slices', 'at most 65536')
  T.errors(function() return mf.zeros(65537):chunk(65537) end, 'chunk', '65537 parts', 'at most 65536')
  T.errors(function() return mf.split(mf.zeros(65537), 1) end, 'split', '65537 parts', 'at most 65536')
  T.errors(function() return x:repeatTensor(2) end, 'repeat', 'sizes 2 must give at least 2 repeats')
  T.errors(function() return x:flip(3) end, 'flip', 'dim 3 out of range')
  T.errors(function() return x:flip(1, -2) end, 'flip', 'listed twice')
  T.errors(function() return x:roll({1, 2}) end, 'roll', 'without dims x rolls flattened')
  T.errors(function() return x:roll({1, 2}, {1}) end, 'roll', '2 shifts and 1 dims')
  T.errors(function() return mf.tensor({1, 2}):tril() end, 'tril', 'expected at least 2 dims')
  T.errors(function() return mf.linspace(0, 1) end, 'linspace', 'steps')
  T.errors(function() return mf.randint(5, 5, {2}) end, 'randint', 'low 5 must be less than high 5')
  T.errors(function() return mf.randint(0, 10) end, 'randint', 'no sizes')
  T.errors(function() return mf.randint(0, 300, {2}, {dtype = 'uint8'}) end, 'randint', 'does not fit uint8')
  T.errors(function() return mf.randperm(-1) end, 'randperm', 'n')
  T.errors(function() return mf.multinomial(mf.tensor({1, 2}), 3) end, 'cannot draw 3 of 2 categories')
  T.errors(function() return mf.multinomial(mf.tensor({1, -1, 2}), 1) end, 'multinomial', 'row 1', '-1',
    'category 2', 'finite and >= 0')
  T.errors(function() return mf.multinomial(mf.tensor({{1, 2}, {0, 0}}), 1) end, 'multinomial', 'row 2',
    'no positive weight')
  T.errors(function() return mf.multinomial(mf.tensor({1, 0 / 0}), 1) end, 'multinomial', 'nan')
  -- 0/0 is a NaN with its sign bit set: the message says 'nan', never the stream's '-nan'
  local nan_msg = T.errors(function() local r = mf.multinomial(mf.tensor({0 / 0, 1, 1}), 2, true); return r end,
    'multinomial: row 1 has weight nan at category 1; weights must be finite and >= 0')
  T.eq(nan_msg:find('-nan', 1, true), nil, 'no -nan in ' .. nan_msg)
  T.errors(function() local r = mf.multinomial(mf.tensor({0, 0, 0}, 'float64'), 1); return r end,
    'test_shape_ext.lua', 'row 1', 'no positive weight')
  T.errors(function() return mf.multinomial(mf.tensor({1, 0, 0}), 2) end, 'row 1 has 1 positive weights',
    'cannot draw 2')
  T.errors(function() return mf.multinomial(mf.tensor({1, 2}, 'int64'), 1) end, 'expected float32 or float64 weights')
end)

T.test('linspace, logspace: PyTorch numbers', function()
  T.tensor_eq(mf.linspace(-1, 2, 7), {-1, -0.5, 0, 0.5, 1, 1.5, 2})
  local t = mf.linspace(0, 1, 10, {dtype = 'float64'})  -- torch.linspace(0, 1, 10, dtype=float64)
  local want = {0.0, 0.1111111111111111, 0.2222222222222222, 0.3333333333333333, 0.4444444444444444,
                0.5555555555555556, 0.6666666666666666, 0.7777777777777777, 0.8888888888888888, 1.0}
  T.tensor_eq(t, want, 1e-15)
  T.tensor_eq(mf.linspace(0, 10, 4, {dtype = 'int64'}), {0, 3, 6, 10})
  T.tensor_eq(mf.linspace(5, 7, 1), {5})
  T.eq(shape(mf.linspace(5, 7, 0)), '0')
  T.tensor_eq(mf.logspace(0, 2, 5, {dtype = 'float64'}), {1.0, 3.1622776601683795, 10.0, 31.622776601683793, 100.0},
    1e-15)
  T.tensor_eq(mf.logspace(-1, 3, 5, 2, {dtype = 'float64'}), {0.5, 1, 2, 4, 8})
  T.tensor_eq(mf.logspace{start = -1, stop = 3, steps = 5, base = 2}, {0.5, 1, 2, 4, 8})
end)

T.test('linspace by halves, large: exact ends, symmetric, within 1 ulp of float64, any thread count', function()
  -- the first half steps up from start, the second down from stop (PyTorch's rule); 300001 values
  -- run on two threads, whose boundary falls away from the middle
  local n, a, b = 300001, -3.7, 11.1
  local step = (b - a) / (n - 1)
  local old = mf.get_num_threads()
  local got = {}
  for k, nt in ipairs{1, 2} do
    mf.set_num_threads(nt)
    got[k] = {mf.linspace(a, b, n, {dtype = 'float64'}), mf.linspace(a, b, n), mf.linspace(a, b, n, {dtype = 'int32'})}
  end
  mf.set_num_threads(old)
  local d64, d32, i32 = got[1][1]:data(), got[1][2]:data(), got[1][3]:data()
  T.eq(d64[0], a, 'first')
  T.eq(d64[n - 1], b, 'last')
  local ulp = 2 ^ -49  -- of values below 16
  for i = 0, n - 1 do
    local want = i < (n - 1) / 2 and a + i * step or b - (n - 1 - i) * step  -- float64, unfused
    if math.abs(d64[i] - want) > ulp then error(('float64 [%d]: %.17g, want %.17g'):format(i, d64[i], want)) end
    -- float32 is the float64 value rounded; int32 the float64 value truncated
    if math.abs(d32[i] - d64[i]) > 2 ^ -20 then error(('float32 [%d]: %.9g, want %.17g'):format(i, d32[i], d64[i])) end
    local tr = d64[i] < 0 and math.ceil(d64[i]) or math.floor(d64[i])
    if i32[i] ~= tr then error(('int32 [%d]: %d, want %d'):format(i, i32[i], tr)) end
    -- 1 and 2 threads: the same bits
    for j = 1, 3 do
      if got[1][j]:data()[i] ~= got[2][j]:data()[i] then error(('dtype %d [%d]: 1 and 2 threads differ'):format(j, i)) end
    end
  end
  -- symmetric about the middle: start and stop swapped give the values reversed
  local r = mf.linspace(b, a, n, {dtype = 'float64'}):data()
  for i = 0, n - 1, 997 do T.eq(r[i], d64[n - 1 - i], 'reversed ' .. i) end
end)

T.test('graphs: each op as an intermediate, fed views, sizes unknown where they may be', function()
  mf.reset_default_graph()
  local a = mf.placeholder('float64', {nil, 4}, 'a')
  local b = mf.placeholder('float64', {3, 4}, 'b')
  local parts = b:chunk(2, 2)
  local y = {
    roll = mf.roll(a * 1, {1}, {-1}) + 0,
    flip = mf.flip(a + 0, 1) * 2,
    rep = mf['repeat'](a, 1, 2) - 1,
    tril = mf.tril(a * 1, -1) + 0,
    stack = mf.stack({a, a * 2}, 2):sum(2),
    chunk = parts[1] + parts[2],
    unbind = mf.stack(mf.unbind(b * 1, 1), 2) + 0,   -- the transpose, by unbind and stack
  }
  local xt = m34('float64'):t():contiguous():t()  -- a transposed view, values 1..12 row-major
  local x = m34('float64')
  local out = mf.Session():run(y, {[a] = xt, [b] = xt})
  T.tensor_eq(out.roll, {{4, 1, 2, 3}, {8, 5, 6, 7}, {12, 9, 10, 11}})
  T.tensor_eq(out.flip, {{18, 20, 22, 24}, {10, 12, 14, 16}, {2, 4, 6, 8}})
  T.tensor_eq(out.rep, {{0, 1, 2, 3, 0, 1, 2, 3}, {4, 5, 6, 7, 4, 5, 6, 7}, {8, 9, 10, 11, 8, 9, 10, 11}})
  T.tensor_eq(out.tril, {{0, 0, 0, 0}, {5, 0, 0, 0}, {9, 10, 0, 0}})
  T.tensor_eq(out.stack, {{3, 6, 9, 12}, {15, 18, 21, 24}, {27, 30, 33, 36}})
  T.tensor_eq(out.chunk, {{4, 6}, {12, 14}, {20, 22}})
  T.tensor_eq(out.unbind, {{1, 5, 9}, {2, 6, 10}, {3, 7, 11}, {4, 8, 12}})
  T.tensor_eq(mf.Session():run(y.rep, {[a] = x:narrow(1, 2, 2)}),
    {{4, 5, 6, 7, 4, 5, 6, 7}, {8, 9, 10, 11, 8, 9, 10, 11}})
  -- build-time checks with known sizes
  T.errors(function() return mf.stack({b, b:t()}) end, 'stack', '3x4', '4x3')
  T.errors(function() return mf.tril(mf.sum(a, 2)) end, 'tril', 'expected at least 2 dims')
  T.errors(function() return mf.multinomial(a, 5) end, 'cannot draw 5 of 4 categories')
  local st = mf.stack({a, a}, 2)  -- an unknown size stays unknown
  T.eq(st:dim(), 3); T.eq(st:size(1), nil); T.eq(st:size(2), 2); T.eq(st:size(3), 4)
end)

T.test('stack and concat refuse a list with a nil in it (# stopped at the hole: {a, nil, b} gave a alone)', function()
  local a, b = mf.ones(2), mf.zeros(2)
  T.errors(function() return mf.concat({a, nil, b}) end, 'concat: item 2 of the list of tensors is nil (items up to 3 are given)')
  T.errors(function() return mf.stack({a, nil, b}, 1) end, 'stack: item 2 of the list of tensors is nil')
  local sparse = {}
  sparse[1], sparse[3] = a, b
  T.errors(function() return mf.concat(sparse) end, 'concat: item 2 of the list of tensors is nil')
  local x = mf.placeholder('float32', {2})
  T.errors(function() return mf.concat({x, nil, x}) end, 'concat: item 2 of the list of tensors is nil')
  T.tensor_eq(mf.concat({a, b}), {1, 1, 0, 0})
  -- list params too: {3, nil, 1} read as {3} would permute (or sum, flip, zeros ...) silently wrong
  T.errors(function() return mf.ones(2, 3, 4):permute({3, nil, 1}) end, "permute: param 'dims' item 2 is a nil")
  T.errors(function() return mf.zeros({2, nil, 4}) end, "zeros: param 'shape' item 2 is a nil")
end)

T.test('stack and concat of 300 tensors (more than any fixed input buffer): eager and in a graph', function()
  local l = {}
  for i = 1, 300 do l[i] = mf.full({2}, i, {dtype = 'float64'}) end
  local s = mf.stack(l, 1)
  T.eq(shape(s), '300x2'); T.eq(s:get(1, 1), 1); T.eq(s:get(257, 2), 257); T.eq(s:get(300, 1), 300)
  local c = mf.concat(l, 1)
  T.eq(shape(c), '600'); T.eq(c:get(513), 257); T.eq(c:get(600), 300)
  mf.reset_default_graph()
  local ps, feed = {}, {}
  for i = 1, 300 do
    ps[i] = mf.placeholder('float64', {2})
    feed[ps[i]] = l[i]
  end
  local ys = {}
  for i = 1, 300 do ys[i] = ps[i] * 1 end  -- intermediates, not only placeholders
  local out = mf.Session():run({s = mf.stack(ys, 2):sum(1), c = mf.concat(ys, 1) + 0}, feed)
  T.eq(shape(out.s), '300'); T.eq(out.s:get(1), 2); T.eq(out.s:get(257), 514); T.eq(out.s:get(300), 600)
  T.eq(shape(out.c), '600'); T.eq(out.c:get(514), 257); T.eq(out.c:get(599), 300)
end)

T.test('unbind, chunk, split into more than 64 parts (beyond the first output buffers): eager and in a graph', function()
  local x = mf.arange(1, 201, {dtype = 'int64'}):reshape(100, 2)
  local u = x:unbind(1)
  T.eq(#u, 100); T.tensor_eq(u[65], {129, 130}); T.tensor_eq(u[100], {199, 200})
  local c = mf.arange(1, 301):chunk(150)
  T.eq(#c, 150); T.tensor_eq(c[150], {299, 300})
  local s = mf.split(mf.arange(1, 101), 1)
  T.eq(#s, 100); T.tensor_eq(s[77], {77})
  mf.reset_default_graph()
  local p = mf.placeholder('int64', {100, 2})
  local parts = mf.unbind(p * 1, 1)
  T.eq(#parts, 100)
  local out = mf.Session():run({t = mf.stack(parts, 2) + 0, c = mf.chunk(p + 0, 100, 1)[70] * 1}, {[p] = x})
  T.eq(shape(out.t), '2x100'); T.eq(out.t:get(1, 65), 129); T.eq(out.t:get(2, 100), 200)
  T.tensor_eq(out.c, {{139, 140}})
end)

T.test('randperm: a permutation of 1..n that indexes; seeds and thread counts', function()
  mf.manual_seed(1)
  local p = mf.randperm(10)
  T.eq(p:dtype(), 'int64')
  local seen = {}
  for i = 1, 10 do seen[p:get(i)] = true end
  for i = 1, 10 do assert(seen[i], 'value ' .. i .. ' missing') end
  local x = mf.arange(10, {dtype = 'float64'}) * 10
  local shuffled = x:index_select(p, 1)  -- 1-based indices: usable as they are
  for i = 1, 10 do T.eq(shuffled:get(i), (p:get(i) - 1) * 10) end
  local function draw(nt)
    local old = mf.get_num_threads()
    mf.set_num_threads(nt)
    mf.manual_seed(42)
    local r = {mf.randperm(20000):totable(), mf.randint(-5, 5, 20000):totable(),
               mf.multinomial(mf.rand(300, 50), 10):reshape(3000):totable()}
    mf.set_num_threads(old)
    return r
  end
  local one, two = draw(1), draw(2)
  for k = 1, 3 do
    local same = #one[k] == #two[k]
    for i = 1, #one[k] do same = same and one[k][i] == two[k][i] end
    assert(same, ('draw %d differs between 1 and 2 threads'):format(k))
  end
end)

T.test('multinomial in a graph draws anew each run; its rows follow their weights', function()
  mf.reset_default_graph()
  local w = mf.placeholder('float32', {nil, 3}, 'w')
  local draws = mf.multinomial(w * 1, 6, {replacement = true}) + 0
  mf.manual_seed(9)
  local s = mf.Session()
  local feed = {[w] = mf.tensor({{0, 1, 0}, {1, 0, 1}})}
  local r1, r2 = s:run(draws, feed), s:run(draws, feed)
  T.eq(r1:dtype(), 'int64')
  local differ = false
  for j = 1, 6 do
    T.eq(r1:get(1, j), 2)
    assert(r1:get(2, j) ~= 2 and r2:get(2, j) ~= 2, 'a zero-weight category was drawn')
    differ = differ or r1:get(2, j) ~= r2:get(2, j)
  end
  assert(differ, 'two runs drew the same row of 6 from {1, 3}')
end)

T.test('two equal multinomial nodes in one graph are not merged (random ops escape CSE)', function()
  mf.reset_default_graph()
  local w = mf.placeholder('float32', {10}, 'w')
  local d1, d2 = mf.multinomial(w, 20, true), mf.multinomial(w, 20, true)
  mf.manual_seed(5)
  local r1, r2 = mf.Session():run({d1, d2}, {[w] = mf.ones(10)})
  local same = true
  for i = 1, 20 do same = same and r1:get(i) == r2:get(i) end
  assert(not same, 'the two draws are equal: the nodes were merged')
end)

T.test('help shows the new ops with their params', function()
  assert(mf.help_text('roll'):find('shifts', 1, true))
  assert(mf.help_text('repeat'):find('repeatTensor', 1, true))
  assert(mf.help_text('multinomial'):find('replacement', 1, true))
end)

T.finish()
