-- Gradient cases of the everyday shape ops (loaded by test_gradients.lua): list outputs (chunk,
-- unbind) are each weighted, so every part's gradient is checked; repeat folds its tiles back.
return function(case)
  case('stack', 'stack', {{{2, 3}}, {{2, 3}}}, function(a, b) return mf.stack({a, b, a}, 2) end)
  case('stack last dim', 'stack', {{{3}}, {{3}}}, function(a, b) return mf.stack({a, b}, -1) end)
  case('chunk', 'chunk', {{{5, 2}}}, function(x) return mf.chunk(x, 3, 1) end)
  case('chunk one part used', 'chunk', {{{2, 6}}}, function(x) return mf.chunk(x, 3, 2)[2] end)
  case('unbind', 'unbind', {{{3, 2}}}, function(x) return mf.unbind(x, 2) end)
  case('unbind one slice used', 'unbind', {{{3, 2, 2}}}, function(x) return mf.unbind(x, -1)[1] * 3 end)
  case('repeat', 'repeat', {{{2, 3}}}, function(x) return mf['repeat'](x, 2, 2) end)
  case('repeat new dims', 'repeat', {{{3, 1}}}, function(x) return x:repeatTensor(2, 1, 4) end)
  case('flip', 'flip', {{{3, 4}}}, function(x) return mf.flip(x, 1, -1) end)
  case('roll', 'roll', {{{3, 4}}}, function(x) return mf.roll(x, {1, -2}, {1, 2}) end)
  case('roll flat', 'roll', {{{3, 4}}}, function(x) return mf.roll(x, 5) end)
  case('tril', 'tril', {{{2, 3, 3}}}, function(x) return mf.tril(x, -1) end)
  case('triu', 'triu', {{{3, 4}}}, function(x) return mf.triu(x, 1) end)
end
