-- Gradient cases of convolution and pooling (loaded by test_gradients.lua). The backward ops are
-- linear in gy (and the conv ones in their second input), so their own rules are checked too; a
-- like input only lends its shape. Inputs are distinct, so no max-pool window holds a tie.
return function(case, POS)
  case('conv2d', 'conv2d', {{{2, 3, 5, 4}}, {{4, 3, 3, 2}}}, function(x, w) return mf.conv2d(x, w) end)
  case('conv2d stride padding dilation', 'conv2d', {{{1, 2, 7, 6}}, {{3, 2, 3, 2}}},
    function(x, w) return mf.conv2d(x, w, {2, 1}, {1, 2}, {2, 1}) end)
  case('conv2d 1x1', 'conv2d', {{{2, 3, 3, 2}}, {{2, 3, 1, 1}}}, function(x, w) return mf.conv2d(x, w) end)
  case('conv2d_backward_input', 'conv2d_backward_input', {{{2, 4, 3, 3}}, {{4, 3, 3, 2}}, {{2, 3, 5, 4}, const = true}},
    function(gy, w, like) return mf.conv2d_backward_input(gy, w, like) end)
  case('conv2d_backward_input strided', 'conv2d_backward_input',
    {{{1, 2, 4, 3}}, {{2, 2, 3, 3}}, {{1, 2, 7, 6}, const = true}},
    function(gy, w, like) return mf.conv2d_backward_input(gy, w, like, 2, 1) end)
  case('conv2d_backward_weight', 'conv2d_backward_weight', {{{2, 4, 3, 3}}, {{2, 3, 5, 4}}, {{4, 3, 3, 2}, const = true}},
    function(gy, x, like) return mf.conv2d_backward_weight(gy, x, like) end)
  case('conv2d_backward_weight dilated', 'conv2d_backward_weight',
    {{{1, 2, 6, 2}}, {{1, 2, 5, 6}}, {{2, 2, 2, 3}, const = true}},
    function(gy, x, like) return mf.conv2d_backward_weight(gy, x, like, {1, 2}, 1, {1, 2}) end)
  case('max_pool2d', 'max_pool2d', {{{2, 2, 4, 6}}}, function(x) return mf.max_pool2d(x, 2) end)
  case('max_pool2d overlapping padded', 'max_pool2d', {{{1, 2, 5, 4}}},
    function(x) return mf.max_pool2d(x, {3, 2}, 1, 1) end)
  case('avg_pool2d', 'avg_pool2d', {{{2, 2, 5, 6}}}, function(x) return mf.avg_pool2d(x, 3, 2, 1) end)
  case('avg_pool2d exclude pad', 'avg_pool2d', {{{1, 2, 5, 6}}},
    function(x) return mf.avg_pool2d(x, {kernel_size = 3, stride = 2, padding = 1, count_include_pad = false}) end)
  case('avg_pool2d_backward', 'avg_pool2d_backward', {{{1, 2, 3, 3}}, {{1, 2, 5, 6}, const = true}},
    function(gy, like) return mf.avg_pool2d_backward(gy, like, 3, 2, 1) end)
  case('adaptive_avg_pool2d', 'adaptive_avg_pool2d', {{{2, 2, 5, 7}}},
    function(x) return mf.adaptive_avg_pool2d(x, {3, 2}) end)
  case('adaptive_avg_pool2d_backward', 'adaptive_avg_pool2d_backward', {{{2, 2, 3, 2}}, {{2, 2, 5, 7}, const = true}},
    function(gy, like) return mf.adaptive_avg_pool2d_backward(gy, like, {3, 2}) end)
end
