-- Gradient cases of the values-and-indices ops (max / min over one dim or several, sort, topk,
-- kthvalue) and the running sums and products (loaded by test_gradients.lua). Inputs are distinct,
-- so no line holds a tie; a mask puts exact zeros into cumprod's input, where a gradient by division
-- would fail.
return function(case, _, K)
  case('max over all', 'max', {{{3, 4}}}, function(x) return mf.max(x) end)
  case('max over dims 1,3 keepdim', 'max', {{{2, 3, 4}}}, function(x) return mf.max(x, {1, 3}, true) end)
  case('min over dim -1', 'min', {{{2, 3, 4}}}, function(x) return mf.min(x, -1) end)
  case('max over dim 1 keepdim', 'max', {{{3, 4}}}, function(x) return mf.max(x, 1, true) end)
  case('max over the one dim of a 0-dim x', 'max', {{{}}}, function(x) return mf.max(x, 1) end)
  case('sort', 'sort', {{{3, 5}}}, function(x) return mf.sort(x) end)
  case('sort descending dim 1', 'sort', {{{4, 3}}}, function(x) return mf.sort(x, 1, true) end)
  case('topk', 'topk', {{{3, 5}}}, function(x) return mf.topk(x, 2) end)
  case('topk smallest unsorted dim 1', 'topk', {{{5, 2, 3}}}, function(x) return mf.topk(x, 3, 1, false, false) end)
  case('kthvalue', 'kthvalue', {{{3, 5}}}, function(x) return mf.kthvalue(x, 2) end)
  case('kthvalue keepdim dim 1', 'kthvalue', {{{5, 3}}}, function(x) return mf.kthvalue(x, 4, 1, true) end)
  case('cumsum', 'cumsum', {{{3, 4}}}, function(x) return mf.cumsum(x, 2) end)
  case('cumsum reverse dim 1', 'cumsum', {{{4, 3}}}, function(x) return mf.cumsum(x, 1, true) end)
  case('cumprod', 'cumprod', {{{3, 4}}}, function(x) return mf.cumprod(x, 2) end)
  case('cumprod reverse dim 1', 'cumprod', {{{4, 3}}}, function(x) return mf.cumprod(x, 1, true) end)
  case('cumprod through zeros', 'cumprod', {{{2, 5}}}, function(x)
    return mf.cumprod(x * K({{1, 0, 1, 1, 0}, {1, 1, 0, 1, 1}}, 'float64'), 2)
  end)
end
