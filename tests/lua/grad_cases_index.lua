-- Gradient cases of the indexing ops (loaded by test_gradients.lua). Index tensors and masks are
-- constants. With repeated destinations only scatter's last write reaches the output, so the other
-- writers' src elements get a zero gradient (PyTorch's gathers to every writer).
return function(case, _, K)
  local I = function(t) return K(t, 'int64') end
  case('gather', 'gather', {{{4, 3}}}, function(x) return mf.gather(x, I{{2, 4, 1}, {4, 4, 3}}, 1) end)
  case('gather dim 2, PyTorch order', 'gather', {{{3, 4}}},
    function(x) return mf.gather(x, 2, I{{1, 1}, {4, 2}, {3, 3}}) end)
  case('scatter', 'scatter', {{{3, 4}}, {{2, 4}}},
    function(x, s) return mf.scatter(x, I{{1, 3, 2, 1}, {2, 1, 3, 3}}, s, 1) end)
  case('scatter src larger than the index', 'scatter', {{{3, 4}}, {{3, 5}}},
    function(x, s) return mf.scatter(x, 2, I{{4, 1, 2}, {1, 2, 3}}, s) end)
  case('scatter number', 'scatter', {{{3, 4}}}, function(x) return mf.scatter(x, I{{1, 3, 2, 1}}, 0.5, 1) end)
  case('scatter repeated (the last write wins)', 'scatter', {{{3, 4}}, {{3, 4}}},
    function(x, s) return mf.scatter(x, I{{1, 1, 2, 3}, {1, 3, 2, 3}, {2, 1, 2, 1}}, s, 1) end)
  case('scatter repeated, 0-dim src', 'scatter', {{{3, 4}}, {{}}},
    function(x, s) return mf.scatter(x, I{{1, 4, 4}, {2, 2, 1}}, s, 2) end)
  case('scatter_add repeated', 'scatter_add', {{{3, 4}}, {{2, 4}}},
    function(x, s) return mf.scatter_add(x, I{{1, 1, 2, 1}, {1, 3, 2, 3}}, s, 1) end)
  case('scatter_add 0-dim src', 'scatter_add', {{{3, 4}}, {{}}},
    function(x, s) return mf.scatter_add(x, I{{1, 4}, {2, 2}, {3, 1}}, s, 2) end)
  case('index_add repeated', 'index_add', {{{3, 4}}, {{4, 4}}},
    function(x, s) return mf.index_add(x, I{3, 1, 3, 2}, s, 1) end)
  case('index_add dim 2', 'index_add', {{{2, 3}}, {{2, 2}}}, function(x, s) return mf.index_add(x, 2, I{3, 1}, s) end)
  local mask = K({{1, 0, 0, 1}, {0, 1, 0, 0}, {1, 1, 0, 1}}, 'uint8')
  case('masked_fill', 'masked_fill', {{{3, 4}}, {{}}}, function(x, v) return mf.masked_fill(x, mask, v) end)
  case('masked_fill broadcast number', 'masked_fill', {{{2, 3, 4}}},
    function(x) return mf.masked_fill(x, K({{1}, {0}, {1}}, 'uint8'), 2.5) end)
  case('masked_select (broadcast mask)', 'masked_select', {{{3, 4}}},
    function(x) return mf.masked_select(x, K({1, 0, 1, 1}, 'uint8')) end, {eager_only = true})
  -- with size, graph and tape alike: 6 selected, padded to 9 (the padding's weights reach nothing);
  -- x 3x1 broadcast against the mask, 9 selected, cut to 5 (the rest get no gradient)
  case('masked_select size, padded', 'masked_select', {{{3, 4}}},
    function(x) return mf.masked_select(x, mask, {size = 9, fill_value = 0.5}) end)
  case('masked_select size, cut, broadcast x', 'masked_select', {{{3, 1}}},
    function(x) return mf.exp(mf.masked_select(x, K({1, 0, 1, 1}, 'uint8'), {size = 5})) end)
end
