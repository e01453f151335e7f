-- Gradient cases of add and sub with alpha (a + alpha * b), broadcasting included (loaded by
-- test_gradients.lua, checked against finite differences in float64). The in-place ops (add_, ...)
-- write their input and have no gradient rule; their out-of-place forms are these.
return function(case, POS)
  case('add alpha', 'add', {{{2, 3}}, {{3}}}, function(a, b) return mf.add(a, b, {alpha = -2.5}) end)
  case('sub alpha', 'sub', {{{2, 1}}, {{2, 3}}}, function(a, b) return mf.sub(a, b, {alpha = 0.75}) end)
  case('add alpha 1', 'add', {{{3}}, {{3}}}, function(a, b) return mf.add(a, b, {alpha = 1}) end)
end
