-- The statistics (var, std, norm, logsumexp, any, all, isnan, isfinite, allclose) and the linear
-- algebra (dot, mm, mv, bmm, addmm, outer/ger, einsum) of issue 21, against hand-computed values and
-- numbers recorded from PyTorch 1.13 (torch.var, torch.norm, torch.logsumexp, torch.einsum, ...):
-- on views, with NaN and infinities, integer dtypes, wrong shapes, and inside graphs.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

local inf, nan = math.huge, 0 / 0
local function isnan(v) return v ~= v end
-- x = [[1.5, -2, 3.25], [0.5, 4, -1]], the input of the recorded PyTorch numbers below
local function X(dtype) return mf.tensor({{1.5, -2, 3.25}, {0.5, 4, -1}}, dtype or 'float64') end

T.test('var and std match PyTorch (unbiased by default, dims, keepdim)', function()
  T.near(mf.var(X()):item(), 5.510416666666667, 1e-14)
  T.tensor_eq(mf.var(X(), 2), {7.145833333333333, 6.583333333333334}, 1e-14)
  T.tensor_eq(mf.var(X(), 1, false), {0.25, 9.0, 4.515625}, 1e-14)
  T.tensor_eq(mf.var(X(), {dim = 1, unbiased = false}), {0.25, 9.0, 4.515625}, 1e-14)
  T.near(mf.std(X()):item(), 2.3474276701672125, 1e-14)
  local s = mf.std(X(), 2, true, true)
  T.eq(table.concat(s:size(), 'x'), '2x1')
  T.tensor_eq(s, {{2.6731691553909065}, {2.565800719723442}}, 1e-14)
  T.eq(mf.var(X('float32')):dtype(), 'float32')
  T.near(mf.var(X('float32')):item(), 5.510416666666667, 1e-6)
  -- hand-computed: {1, 3} -> mean 2, squared deviations 1 + 1, / (2 - 1) = 2
  T.eq(mf.var(mf.tensor{1, 3}):item(), 2)
  T.eq(mf.var(mf.tensor{1, 3}, {unbiased = false}):item(), 1)
end)

T.test('var is two-pass: a large offset keeps its spread (float32, PyTorch 0.0625, 0.12935)', function()
  T.near(mf.var(mf.tensor{1e4 + 0.25, 1e4 + 0.5, 1e4 + 0.75}):item(), 0.0625, 1e-6)
  T.near(mf.std(mf.tensor{10000.1, 10000.2, 10000.3, 10000.4}):item(), 0.12935183942317963, 1e-5)
end)

T.test('var / std edge cases: one element, empty, NaN, inf (as PyTorch)', function()
  T.eq(isnan(mf.var(mf.tensor{5}):item()), true, 'unbiased var of one element is NaN')
  T.eq(mf.var(mf.tensor{5}, {unbiased = false}):item(), 0)
  T.eq(isnan(mf.std(mf.zeros(0)):item()), true, 'std of nothing is NaN')
  T.eq(isnan(mf.var(mf.tensor{1, nan, 3}):item()), true)
  T.eq(isnan(mf.var(mf.tensor{1, inf}):item()), true, 'inf - inf')
  T.eq(table.concat(mf.var(mf.zeros(3, 0), 2):size(), 'x'), '3')
end)

T.test('norm matches PyTorch for p = 2, 1, inf, -inf, 3, 0.5, 0', function()
  T.near(mf.norm(X()):item(), 5.836308764964376, 1e-14)
  T.tensor_eq(mf.norm(X(), 1, 2), {6.75, 5.5}, 1e-14)
  T.eq(mf.norm(X(), inf):item(), 4)
  T.tensor_eq(mf.norm(X(), -inf, 1), {0.5, 2.0, 1.0})
  T.near(mf.norm(X(), 3):item(), 4.803413731899232, 1e-14)
  T.tensor_eq(mf.norm(X(), {p = 0.5, dim = 2}), {19.729001561894467, 13.742640687119284}, 1e-13)
  T.eq(mf.norm(mf.tensor{1, 0, -1, 0, 2}, 0):item(), 3, 'p = 0 counts nonzeros')
  T.eq(mf.norm(mf.tensor{3, 4}):item(), 5, 'hand-computed 3-4-5')
  T.eq(mf.norm(mf.zeros(0)):item(), 0)
  T.eq(table.concat(mf.norm(X(), 2, 2, true):size(), 'x'), '2x1')
  T.errors(function() mf.norm(mf.zeros(3, 0), -inf, 2) end, 'norm: the -inf norm over an empty dim')
  T.errors(function() mf.norm(mf.tensor({1, 2}, 'int64')) end, 'norm: input x is int64; expected float32 or float64')
end)

-- d sum(f(x)) / dx at the float64 values given, through mf.gradients and a session
local function grad(f, values)
  mf.reset_default_graph()
  local t = mf.tensor(values, 'float64')
  local x = mf.placeholder('float64', t:size(), 'x')
  return mf.Session():run(mf.gradients(mf.sum(f(x)), {x})[1], {[x] = t})
end

T.test('norm of p = 2 has gradient 0 at zero, not NaN (PyTorch)', function()
  T.tensor_eq(grad(function(x) return mf.norm(x) end, {0, 0, 0}), {0, 0, 0})
  T.tensor_eq(grad(function(x) return mf.norm(x, 2, 2) end, {{3, 4}, {0, 0}}), {{0.6, 0.8}, {0, 0}}, 1e-15)
  -- PyTorch: norm([0, 1, -2], p=3) grads [0, 0.23112042, -0.9244817]; p=0.5: [0, 2.41421356, -1.70710678];
  -- p=inf over [1, -3, 3]: [0, -0.5, 0.5] (shared among the ties)
  T.tensor_eq(grad(function(x) return mf.norm(x, 3) end, {0, 1, -2}), {0, 0.23112042, -0.9244817}, 1e-7)
  T.tensor_eq(grad(function(x) return mf.norm(x, 0.5) end, {0, 1, -2}), {0, 2.41421356, -1.70710678}, 1e-8)
  T.tensor_eq(grad(function(x) return mf.norm(x, inf) end, {1, -3, 3}), {0, -0.5, 0.5})
  -- std of a constant line: gradient 0 (PyTorch), var's 2 (x - mean) / (n - 1)
  local r = 0.70710678118654746
  T.tensor_eq(grad(function(x) return mf.std(x, 1) end, {{2, 2}, {2, 5}}), {{0, -r}, {0, r}}, 1e-15)
  T.tensor_eq(grad(function(x) return mf.var(x, 1) end, {{2, 2}, {2, 5}}), {{0, -3}, {0, 3}})
end)

T.test('logsumexp matches PyTorch; no overflow; -inf rows stay -inf', function()
  T.tensor_eq(mf.logsumexp(X(), 2), {3.414684824824351, 4.036269565124779}, 1e-14)
  T.near(mf.logsumexp(X(), {1, 2}):item(), 4.466162281936079, 1e-14)
  T.near(mf.logsumexp(X()):item(), 4.466162281936079, 1e-14)
  T.tensor_eq(mf.logsumexp(mf.tensor{{1000, 1000}, {-1000, -1001}}, 2), {1000.6931762695312, -999.686767578125}, 1e-7)
  local r = mf.logsumexp(mf.tensor{{-inf, -inf}, {inf, 1}, {nan, 1}}, 2):totable()
  T.eq(r[1], -inf)
  T.eq(r[2], inf)
  T.eq(isnan(r[3]), true)
  T.eq(mf.logsumexp(mf.zeros(0), 1):item(), -inf, 'empty: -inf')
  -- the gradient is softmax * gy: hand-computed for {0, log 3}: {0.25, 0.75}
  T.tensor_eq(grad(function(x) return mf.logsumexp(x, 1) end, {0, math.log(3)}), {0.25, 0.75}, 1e-15)
  -- PyTorch: an all -inf line has a NaN gradient (exp(-inf - -inf))
  T.eq(isnan(grad(function(x) return mf.logsumexp(x, 1) end, {-inf, -inf}):totable()[1]), true)
end)

T.test('any / all: uint8, NaN counts as true, integer dtypes, empty identities', function()
  local m = mf.tensor{{0, 0, 1}, {1, 2, 3}, {0, 0, 0}}
  T.tensor_eq(mf.any(m, 2), {1, 1, 0})
  T.tensor_eq(mf.all(m, 2), {0, 1, 0})
  T.eq(mf.any(m):dtype(), 'uint8')
  T.eq(mf.any(m):item(), 1)
  T.eq(mf.all(m):item(), 0)
  T.tensor_eq(mf.all(m, 1, true), {{0, 0, 0}})
  T.tensor_eq(mf.any(mf.tensor{nan, 0}, 1), 1)
  T.eq(mf.all(mf.tensor{nan, nan}):item(), 1)
  for _, dt in ipairs{'int32', 'int64', 'uint8'} do
    T.tensor_eq(mf.any(mf.tensor({{0, 0}, {0, 7}}, dt), 2), {0, 1}, nil, dt)
    T.tensor_eq(mf.all(mf.tensor({{5, 0}, {9, 7}}, dt), 2), {0, 1}, nil, dt)
  end
  T.eq(mf.any(mf.zeros(0)):item(), 0)
  T.eq(mf.all(mf.zeros(0)):item(), 1)
  -- a comparison feeds them: are all of x's elements above -3?
  T.eq(mf.all(X():gt(-3)):item(), 1)
end)

T.test('isnan / isfinite: uint8, integers never NaN and always finite', function()
  local x = mf.tensor{nan, inf, -inf, 0, -1.5}
  T.tensor_eq(mf.isnan(x), {1, 0, 0, 0, 0})
  T.tensor_eq(mf.isfinite(x), {0, 0, 0, 1, 1})
  T.eq(mf.isnan(x):dtype(), 'uint8')
  T.tensor_eq(x:isnan(), {1, 0, 0, 0, 0})
  for _, dt in ipairs{'int32', 'int64', 'uint8'} do
    T.tensor_eq(mf.isnan(mf.tensor({1, 0, 255}, dt)), {0, 0, 0}, nil, dt)
    T.tensor_eq(mf.isfinite(mf.tensor({1, 0, 255}, dt)), {1, 1, 1}, nil, dt)
  end
end)

T.test('statistics read views: transposed, narrowed, expanded', function()
  local x = X()
  T.tensor_eq(mf.var(x:t(), 1), {7.145833333333333, 6.583333333333334}, 1e-14)
  T.tensor_eq(mf.norm(x:t(), 1, 1), {6.75, 5.5}, 1e-14)
  T.tensor_eq(mf.logsumexp(x:t(), 1), {3.414684824824351, 4.036269565124779}, 1e-14)
  -- the narrowed columns hold -2, 3.25, 4, -1: mean 1.0625, biased var 6.76171875 (hand-computed)
  T.near(mf.std(x:narrow(2, 2, 2), {unbiased = false}):item(), math.sqrt(6.76171875), 1e-14)
  T.tensor_eq(mf.var(mf.tensor({1, 3}, 'float64'):expand(4, 2), 1), {0, 0})
  T.tensor_eq(mf.any(mf.tensor{0, 1}:expand(3, 2), 1), {0, 1})
  T.tensor_eq(mf.isnan(mf.tensor{{nan, 1}, {2, 3}}:t()), {{1, 0}, {0, 0}})
end)

T.test('statistics refuse integer input and bad dims with clear messages', function()
  T.errors(function() mf.var(mf.tensor({1, 2}, 'int64')) end, 'var: input x is int64; expected float32 or float64')
  T.errors(function() mf.std(mf.tensor({1, 2}, 'uint8')) end, 'std: input x is uint8')
  T.errors(function() mf.logsumexp(mf.tensor({1, 2}, 'int32'), 1) end, 'logsumexp: input x is int32')
  T.errors(function() mf.var(X(), 3) end, 'var', 'dim 3')
  T.errors(function() mf.any(X(), {1, 1}) end, 'any: dim 1 is listed twice')
end)

T.test('allclose: PyTorch semantics, a Lua boolean', function()
  -- recorded: torch.allclose gives False, True, False, True, True, False for these
  T.eq(mf.allclose(mf.tensor{1, nan}, mf.tensor{1, nan}), false)
  T.eq(mf.allclose(mf.tensor{1, nan}, mf.tensor{1, nan}, {equal_nan = true}), true)
  T.eq(mf.allclose(mf.tensor{1e10}, mf.tensor{1.00001e10}), false)
  T.eq(mf.allclose(mf.tensor{1e-8}, mf.tensor{2e-8}), true)
  T.eq(mf.allclose(mf.tensor{inf}, mf.tensor{inf}), true)
  T.eq(mf.allclose(mf.tensor{100}, mf.tensor{100.002}), false)
  T.eq(mf.allclose(mf.tensor{100}, mf.tensor{100.002}, {rtol = 1e-4}), true)
  T.eq(mf.allclose(mf.tensor{1, 2}, mf.tensor{1.5, 2}, {atol = 0.5}), true)
  T.eq(mf.allclose(mf.tensor({250, 3}, 'uint8'), mf.tensor({3, 250}, 'uint8')), false, 'uint8 differences do not wrap')
  T.eq(mf.allclose(mf.ones(2, 3), mf.ones(3)), true, 'broadcasts')
  T.errors(function() mf.allclose(mf.ones(2), mf.ones(3)) end, 'broadcast')
  T.errors(function() mf.allclose(mf.ones(2), mf.ones(2), {rtoll = 1}) end, 'rtoll')
  T.errors(function() mf.allclose(mf.placeholder('float32', {2}), mf.ones(2)) end, 'allclose: returns a Lua boolean')
end)

T.test('allclose errors name allclose: one dtype, broadcasting shapes (PyTorch refuses both too)', function()
  T.errors(function() return mf.allclose(mf.tensor({1, 2}, 'int64'), mf.tensor{1, 2}) end,
    'allclose: a is int64, b is float32', 'one dtype')
  T.errors(function() return mf.allclose(mf.tensor{1, 2}, mf.tensor({1, 2}, 'float64')) end,
    'allclose: a is float32, b is float64')
  T.errors(function() return mf.allclose(mf.tensor{1, 2}, mf.tensor{1, 2, 3}) end,
    'allclose: a is 2, b is 3', 'must broadcast')
  T.errors(function() return mf.allclose(mf.ones(2, 3), mf.ones(4, 3)) end, 'allclose: a is 2x3, b is 4x3')
  T.eq(mf.allclose(mf.ones(2, 1), mf.ones(3)), true, 'torch.allclose(ones(2, 1), ones(3)) is True')
  T.eq(mf.allclose(mf.tensor({1, 2}, 'int32'), mf.tensor({1, 3}, 'int32')), false)
end)

T.test('reductions drop the reduced dim unless keepdim (PyTorch; Torch7 kept it, README)', function()
  local x = mf.tensor{{1, 5, 3}, {7, 2, 4}}
  local v, i = x:max(2)
  T.tensor_eq(v, {5, 7}); T.tensor_eq(i, {2, 1})
  local vk, ik = x:max(2, {keepdim = true})
  T.tensor_eq(vk, {{5}, {7}}); T.tensor_eq(ik, {{2}, {1}})
  T.eq(x:sum(2):dim(), 1); T.eq(x:std(1):dim(), 1); T.eq(x:sum(2, {keepdim = true}):size(2), 1)
end)

T.test('dot, mm, mv, bmm, addmm, outer/ger: hand-computed and PyTorch values', function()
  local a, b = mf.tensor{{1, 2, 3}, {4, 5, 6}}, mf.tensor{{1, 0}, {0, 1}, {2, 2}}
  T.eq(mf.dot(mf.tensor{1, 2, 3}, mf.tensor{4, -5, 6}):item(), 12)
  T.eq(mf.dot(mf.tensor{1, 2, 3}, mf.tensor{4, -5, 6}):dim(), 0)
  T.tensor_eq(mf.mm(a, b), {{7, 8}, {16, 17}})
  T.tensor_eq(mf.mv(a, mf.tensor{1, 0, -1}), {-2, -2})
  T.tensor_eq(mf.bmm(a:reshape(1, 2, 3), b:reshape(1, 3, 2)), {{{7, 8}, {16, 17}}})
  -- torch.addmm(tensor([1., -1]), a, b, beta=0.5, alpha=2) = [[14.5, 15.5], [32.5, 33.5]]
  T.tensor_eq(mf.addmm(mf.tensor{1, -1}, a, b, 0.5, 2), {{14.5, 15.5}, {32.5, 33.5}})
  T.tensor_eq(mf.addmm(mf.tensor{{nan, 1}, {1, 1}}, a, b, {beta = 0}), {{7, 8}, {16, 17}}, nil,
              'beta = 0 ignores NaN in c')
  T.tensor_eq(mf.outer(mf.tensor{1, 2}, mf.tensor{3, 4, 5}), {{3, 4, 5}, {6, 8, 10}})
  T.tensor_eq(mf.ger(mf.tensor({1, 2}, 'int64'), mf.tensor({3, 4}, 'int64')), {{3, 4}, {6, 8}})
  T.eq(mf.ger(mf.tensor({1, 2}, 'int64'), mf.tensor({3, 4}, 'int64')):dtype(), 'int64')
  T.tensor_eq(a:mm(b), {{7, 8}, {16, 17}}, nil, 'as a method')
end)

T.test('the products read views without copying wrong strides', function()
  local a = mf.tensor{{1, 2, 3}, {4, 5, 6}}
  T.eq(mf.dot(a:select(2, 1), a:select(2, 3)):item(), 1 * 3 + 4 * 6)
  T.tensor_eq(mf.mv(a:t(), mf.tensor{1, -1}), {-3, -3, -3})
  T.tensor_eq(mf.mv(a, a:select(1, 1)), {14, 32})
  T.tensor_eq(mf.outer(a:select(2, 2), a:select(1, 2)), {{8, 10, 12}, {20, 25, 30}})
  T.tensor_eq(mf.mm(a:t(), a), {{17, 22, 27}, {22, 29, 36}, {27, 36, 45}})
  T.eq(mf.dot(mf.tensor{2}:expand(3), mf.tensor{1, 2, 3}):item(), 12)
  T.tensor_eq(mf.addmm(mf.tensor{{1}}:expand(2, 2), a, a:t()), {{15, 33}, {33, 78}})
end)

T.test('the products refuse wrong shapes and dtypes, naming op, shapes and rule', function()
  local a = mf.ones(2, 3)
  T.errors(function() mf.dot(a, mf.ones(3)) end, 'dot: a is 2x3, b is 3; expected a to be 1-D')
  T.errors(function() mf.dot(mf.ones(3), mf.ones(4)) end, 'dot: a is 3, b is 4; a:size(1) = 3 must equal b:size(1) = 4')
  T.errors(function() mf.mm(a, mf.ones(3)) end, 'mm: a is 2x3, b is 3; expected b to be a 2-D matrix')
  T.errors(function() mf.mm(a, a) end, 'mm: a is 2x3, b is 2x3; a:size(2) = 3 must equal b:size(1) = 2')
  T.errors(function() mf.mv(a, mf.ones(2)) end, 'mv: m is 2x3, v is 2; m:size(2) = 3 must equal v:size(1) = 2')
  T.errors(function() mf.bmm(mf.ones(2, 2, 3), mf.ones(3, 3, 2)) end,
           'bmm: a is 2x2x3, b is 3x3x2; a:size(1) = 2 must equal b:size(1) = 3')
  T.errors(function() mf.bmm(a, a) end, 'bmm: a is 2x3, b is 2x3; expected a to be 3-D')
  T.errors(function() mf.addmm(mf.ones(3), a, a:t()) end,
           'addmm: c is 3, a is 2x3, b is 3x2; expected c to broadcast to 2x2')
  T.errors(function() mf.outer(a, mf.ones(2)) end, 'outer: a is 2x3, b is 2; expected a to be 1-D')
  local i64, f64 = {dtype = 'int64'}, {dtype = 'float64'}
  T.errors(function() mf.mm(mf.ones(2, 2, i64), mf.ones(2, 2, i64)) end, 'mm: input a is int64')
  T.errors(function() mf.mm(a, mf.ones(3, 2, f64)) end, 'mm: a is float32, b is float64; expected one dtype')
end)

T.test('einsum: the usual equations against hand-computed values and the ops', function()
  local a, b = mf.tensor{{1, 2, 3}, {4, 5, 6}}, mf.tensor{{1, 0}, {0, 1}, {2, 2}}
  T.tensor_eq(mf.einsum('ij,jk->ik', a, b), {{7, 8}, {16, 17}})  -- PyTorch: [[7, 8], [16, 17]]
  T.tensor_eq(mf.einsum('ij,jk', a, b), {{7, 8}, {16, 17}}, nil, 'implicit output')
  T.tensor_eq(mf.einsum('ij -> ji', a), {{1, 4}, {2, 5}, {3, 6}})
  T.tensor_eq(mf.einsum('ji', a), {{1, 4}, {2, 5}, {3, 6}}, nil, 'implicit: alphabetical order')
  T.tensor_eq(mf.einsum('i,j->ij', mf.tensor{1, 2}, mf.tensor{3, 4, 5}), {{3, 4, 5}, {6, 8, 10}})
  T.eq(mf.einsum('ij,ij->', a, a):item(), 91)
  T.eq(mf.einsum('i,i', mf.tensor{1, 2, 3}, mf.tensor{4, -5, 6}):item(), 12)
  local sq = mf.tensor{{1, 2}, {3, 4}}
  T.eq(mf.einsum('ii', sq):item(), 5, 'trace')
  T.eq(mf.einsum('ii->', sq):item(), 5)
  T.tensor_eq(mf.einsum('ii->i', sq), {1, 4}, nil, 'diagonal')
  T.tensor_eq(mf.einsum('ij->j', a), {5, 7, 9})
  T.tensor_eq(mf.einsum('ij->', a), 21)
  mf.manual_seed(5)
  local A, B, C = mf.randn(2, 3, 4), mf.randn(2, 4, 5), mf.randn(5, 3)
  T.eq(mf.allclose(mf.einsum('bij,bjk->bik', A, B), mf.bmm(A, B), {atol = 1e-6}), true, 'bij,bjk->bik')
  T.eq(mf.allclose(mf.einsum('bij,bjk->bki', A, B), mf.bmm(A, B):transpose(2, 3), {atol = 1e-6}), true,
       'permuted output')
  T.eq(mf.allclose(mf.einsum('...ij,...jk->...ik', A, B), mf.bmm(A, B), {atol = 1e-6}), true, 'ellipsis')
  T.eq(mf.allclose(mf.einsum('bij,jk->bik', A, B[1]), mf.matmul(A, B[1]), {atol = 1e-6}), true, 'broadcast operand')
  -- three operands, contracted left to right: trace(A1 B1 C)
  local want = 0
  local p = mf.mm(mf.mm(A[1], B[1]), C)
  for i = 1, 3 do want = want + p:get(i, i) end
  T.near(mf.einsum('ij,jk,ki->', A[1], B[1], C):item(), want, 1e-5)
  T.eq(mf.allclose(mf.einsum('ij,jk->ik', {A[1], B[1]}), mf.mm(A[1], B[1])), true, 'operands as a list')
  T.tensor_eq(mf.einsum('ij->ji', mf.tensor({{1, 2}}, 'int64')), {{1}, {2}}, nil, 'integers where no product is needed')
  -- PyTorch: an output without '...' sums the dims it covers (einsum('...ij->ij', ones(2, 3, 4)) is 3x4 of 2)
  T.tensor_eq(mf.einsum('...ij->ij', mf.ones(2, 3, 4)), {{2, 2, 2, 2}, {2, 2, 2, 2}, {2, 2, 2, 2}})
  T.tensor_eq(mf.einsum('i...->...', a), {5, 7, 9})
  T.tensor_eq(mf.einsum('ij,k->k', a, mf.tensor{1, 10}), {21, 210})  -- PyTorch: [21, 210]
end)

T.test('einsum refuses malformed equations with clear messages', function()
  local a, b = mf.ones(2, 3), mf.ones(3, 4)
  T.errors(function() mf.einsum('ij,jk>ik', a, b) end, "einsum: 'ij,jk>ik'", "'>' in term 'jk>ik' is not a letter")
  T.errors(function() mf.einsum('ij,jk->ik', a) end, "einsum: 'ij,jk->ik' has 2 input terms; 1 operand given")
  -- a nil operand is named, not counted as the end of the list
  T.errors(function() mf.einsum('ij,jk,kl->il', a, nil, b) end,
    "einsum: operand 2 (argument 3) is nil; 'ij,jk,kl->il' has 3 input terms")
  T.errors(function() mf.einsum('ij,jk->ik', a, nil) end, 'einsum: operand 2 (argument 3) is nil')
  T.errors(function() mf.einsum('ij,jk->ik', nil, b) end, 'einsum: operand 1 (argument 2) is nil')
  T.errors(function() mf.einsum('ij,jk->ik', {a, nil, b}) end, 'einsum: operand 2 is nil')
  T.errors(function() mf.einsum('ijk->i', a) end, "term 'ijk' names 3 dims; operand 1 has 2")
  T.errors(function() mf.einsum('ij->iz', a) end, "output letter 'z' is in no input term")
  T.errors(function() mf.einsum('ij->ii', a) end, "output letter 'i' appears twice")
  T.errors(function() mf.einsum('ij,jk->ik', a, a) end, "letter 'j' has size 3 in one operand and 2 in another")
  T.errors(function() mf.einsum('ij->i->j', a) end, "has more than one '->'")
  T.errors(function() mf.einsum('ii', a) end, "letter 'i' repeats over sizes 2 and 3")
  T.errors(function() mf.einsum(42, a) end, 'einsum: the equation is a number')
  T.errors(function() mf.einsum('i...j...', a) end, "has '...' twice")
  T.errors(function() mf.einsum('ij,jk', mf.ones(2, 2, {dtype = 'int64'}), mf.ones(2, 2, {dtype = 'int64'})) end,
           "einsum: 'ij,jk': operand 1 is int64; a product of operands needs float32 or float64")
  -- mixed float dtypes: einsum names them (matmul, inside, named itself)
  T.errors(function() mf.einsum('i,i->', mf.ones(3, {dtype = 'float64'}), mf.ones(3)) end,
           "einsum: 'i,i->': operand 1 is float64, operand 2 is float32; expected one dtype")
end)

T.test('in a graph: each op as an intermediate, fed views, and gradients through einsum', function()
  mf.reset_default_graph()
  local x = mf.placeholder('float64', {-1, 3}, 'x')
  local v = mf.placeholder('float64', {3}, 'v')
  local outs = {
    mf.var(x, 2) * 2, mf.std(x) + 1, mf.norm(x, 1, 1) - 1, mf.logsumexp(x, 2) * 1,
    mf.cast(mf.any(mf.gt(x, 3), 2), 'float64'),
    mf.cast(mf.all(mf.isfinite(x)), 'float64'), mf.mv(x, v) * 1, mf.dot(v, v) + 0, mf.mm(x, mf.outer(v, v)) * 1,
    mf.addmm(v, x, mf.outer(v, v)) * 1, mf.einsum('bi,i->b', x, v) * 1,
  }
  local sess = mf.Session()
  local xv, vv = X(), mf.tensor({1, 0, -1}, 'float64')
  local r = {sess:run(outs, {[x] = xv:t():contiguous():t(), [v] = vv})}
  T.tensor_eq(r[1], {2 * 7.145833333333333, 2 * 6.583333333333334}, 1e-14)
  T.near(r[2]:item(), 1 + 2.3474276701672125, 1e-14)
  T.tensor_eq(r[3], {2 - 1, 6 - 1, 4.25 - 1}, 1e-14)
  T.tensor_eq(r[4], {3.414684824824351, 4.036269565124779}, 1e-14)
  T.tensor_eq(r[5], {1, 1})
  T.eq(r[6]:item(), 1)
  T.tensor_eq(r[7], {1.5 - 3.25, 0.5 + 1})
  T.eq(r[8]:item(), 2)
  T.tensor_eq(r[9], {{-1.75, 0, 1.75}, {1.5, 0, -1.5}})
  T.tensor_eq(r[10], {{-0.75, 0, 0.75}, {2.5, 0, -2.5}})
  T.tensor_eq(r[11], {1.5 - 3.25, 0.5 + 1})
  -- d/dx sum(einsum('ij,jk->ik', x, w)) = ones * w^T (the sums of w's rows)
  local w = mf.constant(mf.tensor({{1, 2}, {3, 4}, {5, 6}}, 'float64'))
  local g = mf.gradients(mf.sum(mf.einsum('ij,jk->ik', x, w)), {x})[1]
  T.tensor_eq(sess:run(g, {[x] = xv}), {{3, 7, 11}, {3, 7, 11}})
  local gt = mf.gradients(mf.einsum('ii', mf.reshape(mf.slice(x, 1, 1, 3), 3, 3)), {x})[1]
  T.tensor_eq(sess:run(gt, {[x] = mf.ones(3, 3, {dtype = 'float64'})}), {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
end)

T.test('help covers the ops and the Lua functions', function()
  for _, name in ipairs{'var', 'std', 'norm', 'logsumexp', 'any', 'all', 'isnan', 'isfinite', 'dot', 'mm', 'mv', 'bmm',
                        'addmm', 'outer'} do
    T.eq(mf.help_text(name):find('help: no docs', 1, true), nil, name)
  end
  T.eq(mf.help_text(mf.ger):find('Outer product', 1, true) ~= nil, true, 'ger is outer')
  T.eq(mf.help_text(mf.einsum):find('Einstein summation', 1, true) ~= nil, true)
  T.eq(mf.help_text('allclose'):find('equal_nan', 1, true) ~= nil, true)
end)

T.finish()
