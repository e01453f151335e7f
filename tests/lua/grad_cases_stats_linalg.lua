-- Gradient cases of the statistics (var, std, norm, logsumexp) and the strict-shape products
-- (dot, mm, mv, bmm, addmm, outer), loaded by test_gradients.lua. Norms of odd order or at the
-- kinks (p = 1, +-inf) take inputs of magnitude 0.1..1 with mixed signs, all |x| distinct.
return function(case, POS, K)
  local function signed(x) return x * K({{1, -1, 1, -1}, {-1, 1, 1, -1}, {1, 1, -1, -1}}, 'float64') end
  case('var', 'var', {{{2, 3, 4}}}, function(x) return mf.var(x) end)
  case('var dim 2 biased keepdim', 'var', {{{2, 3, 4}}}, function(x) return mf.var(x, 2, false, true) end)
  case('var dims 1,3', 'var', {{{2, 3, 4}}}, function(x) return mf.var(x, {dim = {1, 3}}) end)
  case('std', 'std', {{{3, 4}}}, function(x) return mf.std(x) end)
  case('std dim -1 keepdim', 'std', {{{3, 4}}}, function(x) return mf.std(x, -1, true, true) end)
  case('std biased dim 1', 'std', {{{3, 4}}}, function(x) return mf.std(x, 1, false) end)
  case('norm', 'norm', {{{3, 4}}}, function(x) return mf.norm(x) end)
  case('norm p=2 dim 2 keepdim', 'norm', {{{3, 4}}}, function(x) return mf.norm(x, 2, 2, true) end)
  case('norm p=1', 'norm', {{{3, 4}, 0.1, 1}}, function(x) return mf.norm(signed(x), 1, 2) end)
  case('norm p=3', 'norm', {{{3, 4}}}, function(x) return mf.norm(x, 3, 1) end)
  case('norm p=0.5', 'norm', {{{3, 4}, 0.1, 1}}, function(x) return mf.norm(signed(x), 0.5) end)
  case('norm p=-1', 'norm', {{{3, 4}, 0.1, 1}}, function(x) return mf.norm(signed(x), -1, 2) end)
  case('norm p=inf', 'norm', {{{3, 4}, 0.1, 1}}, function(x) return mf.norm(signed(x), math.huge, 2) end)
  case('norm p=-inf', 'norm', {{{3, 4}, 0.1, 1}}, function(x) return mf.norm(signed(x), -math.huge, {1, 2}) end)
  case('logsumexp', 'logsumexp', {{{2, 3, 4}, -2, 2}}, function(x) return mf.logsumexp(x, 2) end)
  case('logsumexp all keepdim', 'logsumexp', {{{3, 4}, -2, 2}}, function(x) return mf.logsumexp(x, {}, true) end)

  case('dot', 'dot', {{{5}}, {{5}}}, function(a, b) return mf.dot(a, b) end)
  case('mm', 'mm', {{{3, 4}}, {{4, 2}}}, function(a, b) return mf.mm(a, b) end)
  case('mv', 'mv', {{{3, 4}}, {{4}}}, function(m, v) return mf.mv(m, v) end)
  case('bmm', 'bmm', {{{2, 3, 4}}, {{2, 4, 2}}}, function(a, b) return mf.bmm(a, b) end)
  case('addmm', 'addmm', {{{3, 2}}, {{3, 4}}, {{4, 2}}}, function(c, a, b) return mf.addmm(c, a, b) end)
  case('addmm broadcast c, beta, alpha', 'addmm', {{{2}}, {{3, 4}}, {{4, 2}}},
    function(c, a, b) return mf.addmm(c, a, b, 0.5, -2) end)
  case('addmm beta 0', 'addmm', {{{3, 2}}, {{3, 4}}, {{4, 2}}},
    function(c, a, b) return mf.addmm(c, a, b, {beta = 0}) end)
  case('outer', 'outer', {{{3}}, {{4}}}, function(a, b) return mf.outer(a, b) end)
end
