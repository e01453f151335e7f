-- Edge cases of the rewritten CPU kernels found by the cpurev review: empty tensors, tails, views,
-- NaN and infinities, each against a reference computed here (plain Lua loops or values by hand).
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

T.test('softmax / log_softmax over a non-last dim of a tensor with an empty other dim', function()
  -- 2x0x4 along dim 1: the tiled (dim not last) path computed outer = count / inner with inner 0
  -- (SIGFPE); now an empty result of x's shape, as PyTorch
  for _, f in ipairs({'softmax', 'log_softmax'}) do
    for _, sh in ipairs({{2, 0, 4}, {0, 3, 5}, {3, 4, 0}}) do
      for dim = 1, 3 do
        local x = mf.zeros(sh[1], sh[2], sh[3])
        local y = mf[f](x, dim)
        T.eq(y:numel(), 0, f .. ' numel')
        T.eq(y:size(1) .. 'x' .. y:size(2) .. 'x' .. y:size(3), sh[1] .. 'x' .. sh[2] .. 'x' .. sh[3], f .. ' shape')
      end
    end
  end
end)

T.finish()
