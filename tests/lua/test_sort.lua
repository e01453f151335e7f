-- max / min over a dim with indices, sort, topk, kthvalue, cumsum and cumprod against hand-computed
-- values and numbers recorded from PyTorch 1.13 (CPU; its 0-based indices shifted to 1-based):
-- ties, NaN, descending order, views, integer dtypes, bad k and dims, gradients (zeros in cumprod)
-- and graph mode with the results as intermediates.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local nan = 0 / 0
local function isnan(x) return x ~= x end

-- t's elements (row-major) against want, NaN matching NaN; and its dtype and shape
local function check(t, want, dtype, shape, what)
  what = what or 'tensor'
  if dtype then T.eq(t:dtype(), dtype, what .. ' dtype') end
  if shape then T.eq(table.concat(t:size(), 'x'), table.concat(shape, 'x'), what .. ' shape') end
  local flat = t:numel() == 0 and {} or t:contiguous():reshape(t:numel()):totable()
  T.eq(#flat, #want, what .. ' numel')
  for i = 1, #want do
    local g, w = flat[i], want[i]
    if not ((isnan(w) and isnan(g)) or g == w or math.abs(g - w) <= 1e-6 * math.max(1, math.abs(w))) then
      error(('%s[%d]: got %s, want %s'):format(what, i, tostring(g), tostring(w)), 2)
    end
  end
end

-- d(sum(f(x) * w))/dx in a graph, float64
local function grad(x, w, f)
  mf.reset_default_graph()
  local xs = mf.placeholder('float64', x:size(), 'x')
  local loss = mf.sum(f(xs) * mf.tensor(w, 'float64'))
  local g = mf.gradients(loss, {xs})[1]
  return mf.Session():run(g, {[xs] = x})
end

local X = {{3, 1, 2}, {1, 3, 3}, {2, 2, 0}}

T.test('max / min over one dim: values and 1-based indices, the first of ties (PyTorch)', function()
  local x = mf.tensor(X)
  local v, i = x:max(2)
  check(v, {3, 3, 2}, 'float32', {3}, 'max values')
  check(i, {1, 2, 1}, 'int64', {3}, 'max indices')  -- PyTorch: [0, 1, 0]
  v, i = x:min(1, true)
  check(v, {1, 1, 0}, 'float32', {1, 3}, 'min values keepdim')
  check(i, {2, 1, 3}, 'int64', {1, 3}, 'min indices keepdim')
  -- PyTorch: tensor([[1., 3., 3., 0.], [2., 2., 2., 2.]]).max(1) -> values [3, 2], indices [1, 0]
  v, i = mf.max(mf.tensor{{1, 3, 3, 0}, {2, 2, 2, 2}}, 2)
  check(v, {3, 2}, nil, nil, 'ties values'); check(i, {2, 1}, nil, nil, 'ties indices')
  -- min: [3, 0]
  v, i = mf.min(mf.tensor{{1, 3, 3, 0}, {2, 2, 2, 2}}, -1)
  check(v, {0, 2}); check(i, {4, 1})
end)

T.test('max / min: NaN wins, with the first NaN index (PyTorch)', function()
  -- PyTorch: [[1, nan, 3, nan], [2, 5, nan, 1]].max(1) and .min(1): values [nan, nan], indices [1, 2]
  local y = mf.tensor{{1, nan, 3, nan}, {2, 5, nan, 1}}
  local v, i = y:max(2)
  check(v, {nan, nan}); check(i, {2, 3}, 'int64')
  v, i = y:min(2)
  check(v, {nan, nan}); check(i, {2, 3}, 'int64')
  T.eq(isnan(y:max():item()), true, 'max over all')
end)

T.test('max / min: how many results each call form returns', function()
  local x = mf.tensor(X)
  T.eq(select('#', x:max()), 1, 'x:max()')
  T.eq(select('#', x:max(2)), 2, 'x:max(2)')
  T.eq(select('#', x:max({2})), 2, 'x:max({2}): one dim')
  T.eq(select('#', x:max({1, 2})), 1, 'x:max({1, 2}): several dims, values only')
  T.eq(select('#', mf.reduce_max(x, 1)), 2, 'reduce_max is max')
  T.eq(x:max():item(), 3)
  T.eq(x:min():item(), 0)
  check(x:max({1, 2}, true), {3}, nil, {1, 1}, 'max over both dims keepdim')
  -- a call used as an operand keeps only its first result
  check(x - x:max(2, true), {0, -2, -1, -2, 0, 0, 0, 0, -2}, nil, {3, 3}, 'x - max(x, 2, true)')
  -- a 0-dim tensor has one dim to name, as in PyTorch (dim 0 there)
  local v, i = mf.tensor(5):max(1)
  check(v, {5}, nil, {}, 'scalar max'); check(i, {1}, 'int64', {}, 'scalar index')
end)

-- The call syntax (src/op/sort.cc's adapter): positional dim and keepdim, a trailing table of named
-- params on its own or after them, trailing nils left out; the errors name the op and the rule.
T.test('max / min: positional, named and mixed params; bad calls refused', function()
  local x = mf.tensor(X)  -- row maxima 3, 3, 2 at 1, 2, 1; column minima 1, 1, 0
  local v, i = x:max(2, {keepdim = true})
  check(v, {3, 3, 2}, nil, {3, 1}, 'positional dim, named keepdim'); check(i, {1, 2, 1}, 'int64', {3, 1})
  v = x:min({dim = 1})
  check(v, {1, 1, 0}, nil, {3}, 'named dim only')
  v = mf.max(x, nil, true)
  check(v, {3}, nil, {1, 1}, 'no dim (all), keepdim positional')
  v, i = x:max(2, false, nil, nil)
  check(v, {3, 3, 2}, nil, {3}, 'trailing nils'); check(i, {1, 2, 1}, 'int64')
  v = x:max(1, true, {keepdim = false})
  check(v, {3, 3, 3}, nil, {3}, 'the named table wins over a positional value')
  T.errors(function() return x:max(1, true, 5) end, 'max: too many arguments (4)')
  T.errors(function() return x:max(1, true, 5, {keepdim = true}) end, 'max: too many arguments (5)')
  T.errors(function() return x:min(x) end, 'min: the second argument is a tensor', 'mf.minimum(a, b)')
  T.errors(function() return x:max({dimm = 1}) end, "unknown param 'dimm'")
  T.errors(function() return x:max(3) end, 'max: dim 3 out of range')
end)

T.test('max / min on integer dtypes and views', function()
  -- PyTorch: int32 [[3, -1, 2], [4, 0, -2]].max(1) -> values [3, 4], indices [0, 0]
  local n = mf.tensor({{3, -1, 2}, {4, 0, -2}}, 'int32')
  local v, i = n:max(2)
  check(v, {3, 4}, 'int32'); check(i, {1, 1}, 'int64')
  v, i = mf.tensor({200, 7, 255, 255}, 'uint8'):max(1)
  check(v, {255}, 'uint8'); check(i, {3})
  -- the transpose of X: max over its dim 2 is X's column maxima
  v, i = mf.tensor(X):t():max(2)
  check(v, {3, 3, 3}); check(i, {1, 2, 2})
  -- an expanded row: every element ties, so the first index
  v, i = mf.tensor({{4, 9}}):expand(3, 2):max(1)
  check(v, {4, 9}); check(i, {1, 1})
  -- a narrowed view
  v, i = mf.tensor(X):narrow(2, 2, 2):min(2)
  check(v, {1, 3, 0}); check(i, {1, 1, 2})
end)

T.test('sort: stable, NaN last ascending and first descending (PyTorch)', function()
  -- PyTorch: t = [3, 1, 2, 1, 3, nan, 0]; t.sort(stable=True) and t.sort(descending=True, stable=True)
  local t = mf.tensor{3, 1, 2, 1, 3, nan, 0}
  local v, i = t:sort()
  check(v, {0, 1, 1, 2, 3, 3, nan}); check(i, {7, 2, 4, 3, 1, 5, 6}, 'int64')
  v, i = t:sort(1, true)
  check(v, {nan, 3, 3, 2, 1, 1, 0}); check(i, {6, 1, 5, 3, 2, 4, 7})
  -- PyTorch: [[1, nan, 3, nan], [2, 5, nan, 1]].sort(1): indices [[0, 2, 1, 3], [3, 0, 1, 2]];
  -- descending: [[1, 3, 2, 0], [2, 1, 0, 3]]
  local y = mf.tensor{{1, nan, 3, nan}, {2, 5, nan, 1}}
  v, i = y:sort(2)
  check(v, {1, 3, nan, nan, 1, 2, 5, nan}); check(i, {1, 3, 2, 4, 4, 1, 2, 3})
  v, i = mf.sort(y, {descending = true})
  check(v, {nan, nan, 3, 1, nan, 5, 2, 1}); check(i, {2, 4, 3, 1, 3, 2, 1, 4})
end)

T.test('sort: views and integer dtypes (PyTorch)', function()
  -- PyTorch: X.t().sort(1) -> values [[1, 2, 3], [1, 2, 3], [0, 2, 3]], indices [[1, 2, 0], [0, 2, 1], [2, 0, 1]]
  local v, i = mf.tensor(X):t():sort(2)
  check(v, {1, 2, 3, 1, 2, 3, 0, 2, 3}, 'float32', {3, 3}); check(i, {2, 3, 1, 1, 3, 2, 3, 1, 2})
  -- sort along dim 1 of X is the same, transposed
  v, i = mf.tensor(X):sort(1)
  check(v, {1, 1, 0, 2, 2, 2, 3, 3, 3}); check(i, {2, 1, 3, 3, 3, 1, 1, 2, 2})
  -- PyTorch: int32 [[3, -1, 2], [4, 0, -2]].sort(1, descending=True) -> [[3, 2, -1], [4, 0, -2]],
  -- [[0, 2, 1], [0, 1, 2]]
  v, i = mf.tensor({{3, -1, 2}, {4, 0, -2}}, 'int32'):sort(2, true)
  check(v, {3, 2, -1, 4, 0, -2}, 'int32'); check(i, {1, 3, 2, 1, 2, 3})
  -- PyTorch: uint8 [200, 100, 7].sort() -> [7, 100, 200], [2, 1, 0]
  v, i = mf.tensor({200, 100, 7}, 'uint8'):sort()
  check(v, {7, 100, 200}, 'uint8'); check(i, {3, 2, 1})
  -- an expanded column: all equal, the stable order is the identity
  v, i = mf.tensor({{2}, {5}}):expand(2, 4):sort(2, true)
  check(v, {2, 2, 2, 2, 5, 5, 5, 5}); check(i, {1, 2, 3, 4, 1, 2, 3, 4})
end)

T.test('topk: largest, smallest, sorted or by position (PyTorch where it is not a tie choice)', function()
  -- PyTorch: [3, 1, 2, 1, 3, 0].topk(3) -> [3, 3, 2], [0, 4, 2]
  local t = mf.tensor{3, 1, 2, 1, 3, 0}
  local v, i = t:topk(3)
  check(v, {3, 3, 2}); check(i, {1, 5, 3}, 'int64')
  -- smallest: PyTorch gives [0, 1, 1] at [5, 3, 1] (its order among the tied 1s is its own); here
  -- equal values come in position order
  v, i = t:topk(3, 1, false)
  check(v, {0, 1, 1}); check(i, {6, 2, 4})
  -- not sorted: the chosen elements in their order along dim
  v, i = t:topk(3, 1, true, false)
  check(v, {3, 2, 3}); check(i, {1, 3, 5})
  -- PyTorch: X.topk(2, 0) -> values [[3, 3, 3], [2, 2, 2]], indices [[0, 1, 1], [2, 2, 0]]
  v, i = mf.tensor(X):topk(2, 1)
  check(v, {3, 3, 3, 2, 2, 2}, nil, {2, 3}); check(i, {1, 2, 2, 3, 3, 1})
  -- PyTorch: [3, 1, 2, 1, 3, nan, 0].topk(3) -> [nan, 3, 3], [5, 0, 4]
  v, i = mf.tensor{3, 1, 2, 1, 3, nan, 0}:topk(3)
  check(v, {nan, 3, 3}); check(i, {6, 1, 5})
  -- PyTorch: int32 [[3, -1, 2], [4, 0, -2]].topk(2, 1, largest=False) -> [[-1, 2], [-2, 0]], [[1, 2], [2, 1]]
  v, i = mf.tensor({{3, -1, 2}, {4, 0, -2}}, 'int32'):topk(2, 2, false)
  check(v, {-1, 2, -2, 0}, 'int32'); check(i, {2, 3, 3, 2})
  -- k = 0 and k = the size
  v, i = t:topk(0)
  check(v, {}, nil, {0}); check(i, {}, 'int64', {0})
  v = t:topk(6)
  check(v, {3, 3, 2, 1, 1, 0})
end)

T.test('topk of a few (k up to 16, one pass) and of more: ties, NaN, views, ints, against a Lua sort', function()
  -- the reference sorts each line's positions by the total order: NaN above every number, equal
  -- values by position; largest takes the top of that order, smallest the bottom
  local function ref(vals, k, largest, sorted)
    local pos = {}
    for j = 1, #vals do pos[j] = j end
    table.sort(pos, function(a, b)
      local x, y = vals[a], vals[b]
      local nx, ny = x ~= x, y ~= y
      if nx or ny then
        if nx == ny then return a < b end
        if largest then return nx end
        return ny
      end
      if x ~= y then if largest then return x > y end return x < y end
      return a < b
    end)
    local top = {}
    for j = 1, k do top[j] = pos[j] end
    if not sorted then table.sort(top) end
    return top
  end
  mf.manual_seed(11)
  for _, dt in ipairs{'float32', 'float64', 'int32', 'uint8'} do
    local x = mf.randn(23, 61):mul(2):floor()  -- many ties
    if dt == 'uint8' then x = x:abs() end
    x = x:cast(dt)
    if dt == 'float32' or dt == 'float64' then
      x = mf.where(mf.rand(23, 61):lt(0.05), mf.full({23, 61}, nan, {dtype = dt}), x)
    end
    for _, view in ipairs{'rows', 'columns'} do
      local src = view == 'rows' and x or x:t()  -- columns: lines of stride 61
      local lines, n = src:size(1), src:size(2)
      local tab = src:contiguous():totable()
      for _, k in ipairs{1, 3, 8, 16, 17, n - 1} do
        for _, largest in ipairs{true, false} do
          for _, sorted in ipairs{true, false} do
            local v, ix = src:topk(k, 2, largest, sorted)
            local vt, it = v:totable(), ix:totable()
            for l = 1, lines do
              local want = ref(tab[l], k, largest, sorted)
              for j = 1, k do
                local w = tab[l][want[j]]
                if it[l][j] ~= want[j] or not (vt[l][j] == w or (w ~= w and vt[l][j] ~= vt[l][j])) then
                  error(('%s %s k=%d largest=%s sorted=%s line %d item %d: got %s at %d, want %s at %d'):format(
                    dt, view, k, tostring(largest), tostring(sorted), l, j, tostring(vt[l][j]), it[l][j], tostring(w), want[j]))
                end
              end
            end
          end
        end
      end
    end
  end
end)

T.test('kthvalue (PyTorch where it is not a tie choice)', function()
  -- PyTorch: X.kthvalue(2, 1) -> values [2, 3, 2], indices [2, 1, 0]
  local v, i = mf.tensor(X):kthvalue(2, 2)
  check(v, {2, 3, 2}, 'float32', {3}); check(i, {3, 2, 1}, 'int64')
  -- PyTorch: [3, 1, 2, 1, 3].kthvalue(2) -> 1 at 3; kthvalue(4) -> 3 at 0 (here: the stable order's
  -- second 3, at 5)
  local t = mf.tensor{3, 1, 2, 1, 3}
  v, i = t:kthvalue(2)
  T.eq(v:item(), 1); T.eq(i:item(), 4)
  v, i = t:kthvalue(4)
  T.eq(v:item(), 3); T.eq(i:item(), 1)
  v, i = t:kthvalue(5)
  T.eq(v:item(), 3); T.eq(i:item(), 5)
  -- PyTorch: [3, 1, 2, 1, 3, nan, 0].kthvalue(7) -> nan at 5; [2, nan, 1].kthvalue(3) -> nan at 1
  v, i = mf.tensor{3, 1, 2, 1, 3, nan, 0}:kthvalue(7)
  T.eq(isnan(v:item()), true); T.eq(i:item(), 6)
  v, i = mf.tensor{2, nan, 1}:kthvalue(3)
  T.eq(isnan(v:item()), true); T.eq(i:item(), 2)
  v, i = mf.tensor({{5, 1, 4}, {0, 9, 3}}, 'int64'):kthvalue(2, -1, true)
  check(v, {4, 3}, 'int64', {2, 1}); check(i, {3, 3}, 'int64', {2, 1})
end)

T.test('cumsum / cumprod (PyTorch)', function()
  local x = mf.tensor(X)
  check(x:cumsum(1), {3, 1, 2, 4, 4, 5, 6, 6, 5}, 'float32', {3, 3}, 'cumsum dim 1')
  check(x:cumsum(2), {3, 4, 6, 1, 4, 7, 2, 4, 4}, 'float32', nil, 'cumsum dim 2')
  check(x:cumprod(2), {3, 3, 6, 1, 3, 9, 2, 4, 0}, 'float32', nil, 'cumprod dim 2')
  check(x:cumsum(-1, true), {6, 3, 2, 7, 6, 3, 4, 2, 0}, nil, nil, 'cumsum reverse (hand-computed)')
  check(x:t():cumsum(2), {3, 4, 6, 1, 4, 6, 2, 5, 5}, nil, nil, 'cumsum of a transposed view')
  -- PyTorch: int32 [[3, -1, 2], [4, 0, -2]]: cumsum(1) [[3, 2, 4], [4, 4, 2]], cumprod(1) [[3, -3, -6],
  -- [4, 0, 0]], int64
  local n = mf.tensor({{3, -1, 2}, {4, 0, -2}}, 'int32')
  check(n:cumsum(2), {3, 2, 4, 4, 4, 2}, 'int64')
  check(n:cumprod(2), {3, -3, -6, 4, 0, 0}, 'int64')
  -- PyTorch: uint8 [200, 100, 7].cumsum(0) -> int64 [200, 300, 307]
  check(mf.tensor({200, 100, 7}, 'uint8'):cumsum(1), {200, 300, 307}, 'int64')
  -- PyTorch: [2, nan, 1].cumsum(0) -> [2, nan, nan]
  check(mf.tensor{2, nan, 1}:cumsum(1), {2, nan, nan})
end)

T.test('gradients: to the chosen index (max over a dim, sort, topk, kthvalue) or shared (max over all)', function()
  local x = mf.tensor(X, 'float64')
  -- PyTorch: v, i = a.max(1); (v * [1, 2, 3]).sum().backward() -> [[1, 0, 0], [0, 2, 0], [3, 0, 0]]
  check(grad(x, {1, 2, 3}, function(s) return mf.max(s, 2) end), {1, 0, 0, 0, 2, 0, 3, 0, 0})
  -- PyTorch: a.max().backward() -> 1/3 at each of the three 3s
  check(grad(x, 1, function(s) return mf.max(s) end), {1 / 3, 0, 0, 0, 1 / 3, 1 / 3, 0, 0, 0})
  local s = mf.tensor({{0.5, -1, 2, 0}, {1, 1, -3, 4}}, 'float64')
  -- PyTorch: v, i = s.sort(1, descending=True); (v * [1, 2, 3, 4]).sum().backward() -> [[2, 4, 1, 3], [2, 3, 4, 1]]
  check(grad(s, {1, 2, 3, 4}, function(t) return mf.sort(t, 2, true) end), {2, 4, 1, 3, 2, 3, 4, 1})
  -- PyTorch: v, i = s.topk(2, 1); (v * [1, 2]).sum().backward() -> [[2, 0, 1, 0], [0, 2, 0, 1]]: row 2's
  -- second value is a tied 1, where PyTorch picks the later one and the stable order the earlier
  check(grad(s, {1, 2}, function(t) return mf.topk(t, 2) end), {2, 0, 1, 0, 2, 0, 0, 1})
  -- kthvalue(3) of row 2 [1, 1, -3, 4] is a tied 1: PyTorch picks position 1, the stable order
  -- position 2, and the gradient follows the index (hand-computed)
  local v, i = s:kthvalue(3)
  check(i, {1, 2})
  check(grad(s, {1, 2}, function(t) return mf.kthvalue(t, 3) end), {1, 0, 0, 0, 0, 2, 0, 0})
end)

T.test('gradients through scatter_add: a 0-dim x (one element, picked once or never) and a transposed x', function()
  local x = mf.tensor(5, 'float64')  -- PyTorch: the gradient of a 0-dim x is w wherever it is picked
  check(grad(x, 3, function(s) return mf.sort(s) end), {3})
  check(grad(x, 3, function(s) return mf.topk(s, 1) end), {3})
  check(grad(x, {}, function(s) return mf.topk(s, 0) end), {0})
  check(grad(x, 3, function(s) return mf.kthvalue(s, 1) end), {3})
  check(grad(x, 3, function(s) return mf.max(s, 1) end), {3})
  check(grad(x, 3, function(s) return mf.min(s, -1, true) end), {3})
  -- columns [0.5, -1, 2, 0] and [1, 1, -3, 4] of a transposed view; topk 2 along dim 1 weighted
  -- {{1, 2}, {3, 4}}: column 1 picks 2 then 0.5, column 2 picks 4 then the first tied 1 (hand-computed)
  local s = mf.tensor({{0.5, -1, 2, 0}, {1, 1, -3, 4}}, 'float64'):t()
  check(grad(s, {{1, 2}, {3, 4}}, function(t) return mf.topk(t, 2, 1) end), {3, 4, 0, 0, 1, 0, 0, 2})
end)

T.test('gradients of cumsum and cumprod, zeros included (PyTorch)', function()
  -- PyTorch: a = [2, 0, 3, 0, 5]; a.cumprod(0).backward([1, 2, 3, 4, 5]) -> [1, 22, 0, 0, 0]
  check(grad(mf.tensor({2, 0, 3, 0, 5}, 'float64'), {1, 2, 3, 4, 5}, function(t) return mf.cumprod(t, 1) end),
    {1, 22, 0, 0, 0})
  -- [2, 0, 3, 4] with [1, 2, 3, 4] -> [1, 118, 0, 0]
  check(grad(mf.tensor({2, 0, 3, 4}, 'float64'), {1, 2, 3, 4}, function(t) return mf.cumprod(t, 1) end),
    {1, 118, 0, 0})
  -- PyTorch: z = [[1, 2], [0, 3], [4, 0], [5, 6]]; z.cumprod(0).backward([[1, 1], [2, 1], [1, 3], [1, 1]])
  -- -> [[1, 4], [26, 2], [0, 54], [0, 0]]
  local z = mf.tensor({{1, 2}, {0, 3}, {4, 0}, {5, 6}}, 'float64')
  check(grad(z, {{1, 1}, {2, 1}, {1, 3}, {1, 1}}, function(t) return mf.cumprod(t, 1) end), {1, 4, 26, 2, 0, 54, 0, 0})
  -- cumsum: the reversed running sum of the weights (hand-computed)
  check(grad(mf.tensor({1, 2, 3}, 'float64'), {1, 10, 100}, function(t) return mf.cumsum(t, 1) end), {111, 110, 100})
  check(grad(mf.tensor({1, 2, 3}, 'float64'), {1, 10, 100}, function(t) return mf.cumsum(t, 1, true) end), {1, 11, 111})
end)

T.test('graph mode: results as intermediates, sizes unknown when built', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float32', {-1, 3}, 'x')
  local v, i = mf.max(x, 2)
  local sv, si = mf.sort(x, 2, true)
  local tv, ti = mf.topk(x * 2, 2)
  local kv, ki = mf.kthvalue(x, 1, 1)
  local y = v + mf.cast(i, 'float32') * 10      -- values and indices both feed further nodes
  local z = mf.sum(sv * mf.cast(si, 'float32'), 2)
  local c = mf.cumsum(mf.cumprod(x, 2), 1)
  local sess = mf.Session()
  local feed = {[x] = mf.tensor(X)}
  local ry, rz, rt, rti, rk, rki, rc = sess:run({y, z, tv, ti, kv, ki, c}, feed)
  check(ry, {13, 23, 12})
  check(rz, {3 * 1 + 2 * 3 + 1 * 2, 3 * 2 + 3 * 3 + 1 * 1, 2 * 1 + 2 * 2 + 0 * 3})
  check(rt, {6, 4, 6, 6, 4, 4}); check(rti, {1, 3, 2, 3, 1, 2}, 'int64')
  check(rk, {1, 1, 0}); check(rki, {2, 1, 3}, 'int64')
  check(rc, {3, 3, 6, 4, 6, 15, 6, 10, 15})
  -- another batch size through the same graph
  local ry2 = sess:run(y, {[x] = mf.tensor{{0, -1, 5}}})
  check(ry2, {35})
end)

T.test('errors name the op, the values and what was expected', function()
  local x = mf.tensor{{1, 2, 3, 4}, {5, 6, 7, 8}}
  T.errors(function() return x:topk(5) end, 'topk: k is 5; expected 0..4 (the size of dim 2 of x, 2x4)')
  T.errors(function() return x:topk(-1) end, 'topk: k is -1')
  T.errors(function() return x:kthvalue(0) end, 'kthvalue: k is 0; expected 1..4')
  T.errors(function() return x:kthvalue(3, 1) end, 'kthvalue: k is 3; expected 1..2')
  T.errors(function() return x:sort(3) end, 'sort: dim 3 out of range')
  T.errors(function() return x:max(-3) end, 'max: dim -3 out of range')
  T.errors(function() return mf.zeros(2, 0):max(2) end, 'max: cannot reduce over dim 2 of size 0')
  -- PyTorch's max(a, b) is the elementwise maximum: here that is mf.maximum, and max says so
  T.errors(function() return mf.max(x, x) end, 'max: the second argument is a tensor', 'mf.maximum(a, b)')
  T.errors(function() return x:min(mf.ones(2, 4)) end, 'min: the second argument is a tensor', 'mf.minimum(a, b)')
  T.errors(function() return x:max(1, true, 3) end, 'max: too many arguments (4)')
  T.errors(function() return x:cumsum() end, 'cumsum', 'dim')
  T.errors(function() return x:cumprod(0) end, 'cumprod: dim 0 out of range')
  -- in a graph, k is checked when the graph is built
  mf.reset_default_graph()
  local p = mf.placeholder('float32', {-1, 3}, 'p')
  T.errors(function() return mf.topk(p, 4) end, 'topk: k is 4; expected 0..3')
end)

T.finish()
