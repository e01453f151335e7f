-- Every mf.kernels entry (issue 19): once with correct operands against a hand-computed value,
-- and once with a wrong output (too small, wrong dtype or layout), which must come back as a Lua
-- error naming the routine and the shapes, never a write past the output. The list of entries
-- is read from the table itself, so a new entry without a case fails here.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
local K = mf.kernels

local function z(...) return mf.zeros(...) end
local function t4(vals) return mf.tensor(vals):reshape(1, 1, 2, 2) end
local I64 = {dtype = 'int64'}
local L3 = math.log(3)

-- name -> {ok = function() ... end, bad = function() T.errors(...) end}
local cases = {
  unary = {ok = function() local y = z(2); K.unary(K.U.neg, y, mf.tensor{1, -2}, 0, 0); T.tensor_eq(y, {-1, 2}) end,
           bad = function() T.errors(function() K.unary(K.U.neg, z(1), mf.tensor{1, -2}, 0, 0) end, 'neg: output is 1, x is 2') end},
  binary = {ok = function() local y = z(2); K.binary(K.B.add, y, mf.tensor{1, 2}, mf.tensor{10, 20}); T.tensor_eq(y, {11, 22}) end,
            bad = function()
              T.errors(function() K.binary(K.B.add, z(1), mf.tensor{1, 2}, mf.tensor{10, 20}) end, 'add: output is 1, x is 2, y is 2', 'broadcast')
              T.errors(function() K.binary(K.B.lt, z(2), mf.tensor{1, 2}, mf.tensor{10, 20}) end, 'lt: output is float32; expected uint8')
            end},
  fused = {ok = function()
             local p = K.fused_program(2, {K.B.add, 0, 1})
             local y = z(2); K.fused(p, y, 2, K.tensor_list{mf.tensor{1, 2}, mf.tensor{10, 20}}); T.tensor_eq(y, {11, 22})
           end,
           bad = function()
             local p = K.fused_program(2, {K.B.add, 0, 1})
             T.errors(function() K.fused(p, z(1), 2, K.tensor_list{mf.tensor{1, 2}, mf.tensor{10, 20}}) end,
                      'fused_elementwise: output is 1, input 1 is 2')
           end},
  where = {ok = function()
             local y = z(2); K.where(y, mf.tensor({1, 0}, 'uint8'), mf.tensor{1, 2}, mf.tensor{3, 4}); T.tensor_eq(y, {1, 4})
           end,
           bad = function()
             T.errors(function() K.where(z(1), mf.tensor({1, 0}, 'uint8'), mf.tensor{1, 2}, mf.tensor{3, 4}) end, 'where: output is 1, cond is 2')
           end},
  copy = {ok = function() local y = z(2); K.copy(y, mf.tensor{5, 6}); T.tensor_eq(y, {5, 6}) end,
          bad = function() T.errors(function() K.copy(z(1), mf.tensor{5, 6}) end, 'copy: source 2 does not broadcast to destination 1') end},
  -- the host copies of a transfer (on the CPU, whose memory is the host's, plain copies)
  copy_from_host = {ok = function() local y = z(2); K.copy_from_host(y, mf.tensor{5, 6}); T.tensor_eq(y, {5, 6}) end,
                    bad = function() T.errors(function() K.copy_from_host(z(1), mf.tensor{5, 6}) end, 'does not broadcast to destination 1') end},
  copy_to_host = {ok = function() local y = z(2); K.copy_to_host(y, mf.tensor{5, 6}); T.tensor_eq(y, {5, 6}) end,
                  bad = function() T.errors(function() K.copy_to_host(z(1), mf.tensor{5, 6}) end, 'does not broadcast to destination 1') end},
  fill = {ok = function() local y = z(2); K.fill(y, 7); T.tensor_eq(y, {7, 7}) end,
          bad = function() T.errors(function() K.fill(z(2, {dtype = 'uint8'}), 300) end, 'fill: value 300 does not fit uint8') end},
  arange = {ok = function() local y = z(3); K.arange(y, 1, 2); T.tensor_eq(y, {1, 3, 5}) end,
            bad = function() T.errors(function() K.arange(z(2, 3):t(), 1, 2) end, 'arange: output of size 3x2 is not contiguous') end},
  eye = {ok = function() local y = z(2, 2); K.eye(y); T.tensor_eq(y, {{1, 0}, {0, 1}}) end,
         bad = function() T.errors(function() K.eye(z(3)) end, 'eye: output is 3; expected 2 dims') end},
  rand = {ok = function()
            local y = z(200); K.rand(y, 0, 2, 3)
            for _, v in ipairs(y:totable()) do T.eq(v >= 2 and v < 3, true, 'rand in [2, 3)') end
          end,
          bad = function() T.errors(function() K.rand(z(3, I64), 0, 0, 1) end, 'rand: output is int64; expected float32 or float64') end},
  reduce = {ok = function() local y = z(2); K.reduce(K.R.sum, y, mf.tensor{{1, 2}, {3, 4}}, 2); T.tensor_eq(y, {3, 7}) end,
            bad = function()
              T.errors(function() K.reduce(K.R.sum, z(1), mf.tensor{{1, 2}, {3, 4}}, 2) end, 'sum: output is 1, x is 2x2 reduced over dim 2')
              T.errors(function() K.reduce(K.R.max, z(2), mf.tensor{{1, 2}, {3, 4}}, 4) end, 'max: dim mask 4 names a dim past')
              T.errors(function() K.reduce(K.R.argmax, z(2), mf.tensor{{1, 2}, {3, 4}}, 2) end, 'argmax: output is float32; expected int64')
            end},
  -- var with correction 1 over dim 2: {1, 3} -> 2, {2, 6} -> 8; the number-less codes are refused
  reduce_p = {ok = function() local y = z(2); K.reduce_p(K.R.var, y, mf.tensor{{1, 3}, {2, 6}}, 2, 1); T.tensor_eq(y, {2, 8}) end,
              bad = function()
                T.errors(function() K.reduce_p(K.R.var, z(1), mf.tensor{{1, 3}, {2, 6}}, 2, 1) end, 'var: output is 1, x is 2x2 reduced over dim 2')
                T.errors(function() K.reduce_p(K.R.sum, z(2), mf.tensor{{1, 3}, {2, 6}}, 2, 1) end, 'sum: takes no number')
                T.errors(function() K.reduce(K.R.norm, z(2), mf.tensor{{1, 3}, {2, 6}}, 2) end, 'norm: takes a number')
                T.errors(function() K.reduce_p(K.R.std, z(2), mf.tensor{{1, 3}, {2, 6}}, 2, -1) end, 'std: the correction is -1')
                T.errors(function() K.reduce_p(K.R.norm, z(2, I64), mf.tensor({{1, 3}, {2, 6}}, 'int64'), 2, 1) end,
                         'norm: x is int64; expected float32 or float64')
              end},
  softmax = {ok = function() local y = z(2); K.softmax(y, mf.tensor{0, L3}, 0, 0); T.tensor_eq(y, {0.25, 0.75}, 1e-6) end,
             bad = function()
               T.errors(function() K.softmax(z(2, 3), z(4, 5), 1, 0) end, "softmax: y is 2x3, x is 4x5; expected y of x's shape")
               T.errors(function() K.softmax(z(4, 5), z(4, 5), 2, 1) end, 'log_softmax: dim 3 out of range for x of size 4x5')
             end},
  matmul = {ok = function() local c = z(1, 1); K.matmul(c, mf.tensor{{1, 2}}, mf.tensor{{3}, {4}}, 0, 0); T.tensor_eq(c, {{11}}) end,
            bad = function()
              T.errors(function() K.matmul(z(1, 1), z(2, 2), z(2, 2), 0, 0) end, 'matmul: output is 1x1, a 2x2, b 2x2')
              T.errors(function() K.matmul(z(2, 2), z(3, 2, 2), z(2, 2), 0, 0) end, 'matmul: output is 2x2, a 3x2x2')
            end},
  -- c = alpha a b + beta c through sgemm / dgemm, gemv (one column), the dot (1 x 1) and k = 0; beta 0
  -- never reads c (NaN there is ignored), as BLAS; a b = {{19, 22}, {43, 50}} by hand
  gemm = {ok = function()
            local a, b = mf.tensor{{1, 2}, {3, 4}}, mf.tensor{{5, 6}, {7, 8}}
            local c = mf.tensor{{1, 2}, {3, 4}}; K.gemm(c, a, b, 0, 0, 2, 0.5); T.tensor_eq(c, {{38.5, 45}, {87.5, 102}})
            c = mf.tensor({{1, 2}, {3, 4}}, 'float64')
            K.gemm(c, a:double(), b:double(), 1, 0, 1, 1); T.tensor_eq(c, {{27, 32}, {41, 48}})  -- a^T b + c
            c = mf.full({2, 2}, 0 / 0); K.gemm(c, a, b, 0, 0, 1, 0); T.tensor_eq(c, {{19, 22}, {43, 50}})
            c = mf.tensor{{1}, {2}}; K.gemm(c, a, mf.tensor{{1}, {1}}, 0, 0, 1, 1); T.tensor_eq(c, {{4}, {9}})
            c = mf.tensor{{10}}; K.gemm(c, mf.tensor{{1, 2}}, mf.tensor{{3}, {4}}, 0, 0, 2, 3); T.tensor_eq(c, {{52}})
            c = mf.tensor{{0 / 0}}; K.gemm(c, mf.tensor{{1, 2}}, mf.tensor{{3}, {4}}, 0, 0, 1, 0); T.tensor_eq(c, {{11}})
            c = mf.tensor{{1, 2}, {3, 4}}; K.gemm(c, z(2, 0), z(0, 2), 0, 0, 1, 3); T.tensor_eq(c, {{3, 6}, {9, 12}})
            c = mf.full({2, 2}, 0 / 0); K.gemm(c, z(2, 0), z(0, 2), 0, 0, 1, 0); T.tensor_eq(c, {{0, 0}, {0, 0}})
          end,
          bad = function()
            T.errors(function() K.gemm(z(1, 1), z(2, 2), z(2, 2), 0, 0, 1, 1) end, 'gemm: output is 1x1, a 2x2, b 2x2')
            T.errors(function() K.gemm(z(2, 2), z(2, 2), z({2, 2}, {dtype = 'float64'}), 0, 0, 1, 1) end,
                     'gemm: a, b and the output must share one dtype')
          end},
  alias = {ok = function()
             local base = mf.tensor{1, 2, 3, 4}
             local h = K.header(base, z(2))
             K.alias(h, base, 2)
             local p = ffi.cast('float *', h._ptr)
             T.eq(p[0], 3); T.eq(p[1], 4)
           end,
           bad = function()
             local base = mf.tensor{1, 2, 3, 4}
             T.errors(function() K.alias(K.header(base, z(2)), base, 3) end, 'alias: view of size 2', 'reaches outside its storage')
             local h = K.header(base, z(2)); h._dtype_id = C.MF_INT64
             T.errors(function() K.alias(h, base, 0) end, 'alias: view is int64, base float32')
           end},
  alias_whole = {ok = function()
                   -- y borrows x's memory at x's own offset: a narrowed x (offset 2) read through y
                   local base = mf.tensor{1, 2, 3, 4, 5}
                   local x = base:narrow(1, 3, 2)
                   local y = K.header(mf.zeros(2), x)  -- a borrowed header (owns 0), as the dispatcher's outputs of copy / fill
                   K.alias_whole(y, x)
                   T.eq(y._owns, 0)
                   T.tensor_eq(y, {3, 4})
                   mf.copy(y, mf.tensor{7, 9})
                   T.tensor_eq(base, {1, 2, 7, 9, 5}, nil, 'a write through y lands in x')
                 end},
  concat = {ok = function() local y = z(2, 3); K.concat(y, 2, K.tensor_list{mf.ones(1, 3), mf.zeros(1, 3)}, 0); T.tensor_eq(y, {{1, 1, 1}, {0, 0, 0}}) end,
            bad = function()
              T.errors(function() K.concat(z(2, 3), 1, K.tensor_list{mf.ones(3, 3)}, 0) end, 'concat: input 1 is 3x3')
              -- a size-1 dim off the concat dim is refused, never stretched
              T.errors(function() K.concat(z(4, 3), 2, K.tensor_list{mf.ones(2, 1), mf.ones(2, 3)}, 0) end,
                       'concat: input 1 is 2x1; it does not fit the output 4x3')
            end},
  sum_to = {ok = function() local y = z(1, 2); K.sum_to(y, mf.tensor{{1, 2}, {3, 4}}); T.tensor_eq(y, {{4, 6}}) end,
            bad = function() T.errors(function() K.sum_to(z(3), mf.tensor{{1, 2}, {3, 4}}) end, 'sum_to: output is 3, gradient 2x2') end},
  pad_like = {ok = function() local y = z(5); K.pad_like(y, mf.ones(3), 0, 0, 2); T.tensor_eq(y, {1, 0, 1, 0, 1}) end,
              bad = function() T.errors(function() K.pad_like(z(4), mf.ones(3), 0, 2, 1) end, 'pad_like: gradient 3 placed from index 3') end},
  sgd_update = {ok = function() local v = mf.tensor{1, 2}; K.sgd_update(v, mf.tensor{1, 1}, mf.tensor(0.5), 0); T.tensor_eq(v, {0.5, 1.5}) end,
                bad = function()
                  T.errors(function() K.sgd_update(mf.tensor{1, 2}, z(3), mf.tensor(0.5), 0) end, 'sgd_update')
                  T.errors(function() K.sgd_update(mf.tensor{1, 2}, z(2), mf.tensor{0.5, 0.5}, 0) end,
                           'sgd_update: lr is 2; expected one element')
                  T.errors(function() K.sgd_update(mf.tensor{1, 2}, z(2), mf.tensor(1, 'int64'), 0) end,
                           'sgd_update: lr is int64; expected float32 or float64')
                end},
  momentum_update = {ok = function()
                       local v, a = mf.tensor{1}, z(1); K.momentum_update(v, a, mf.tensor{1}, mf.tensor(0.5, 'float64'), 0.9, 0, 0, 0)
                       T.tensor_eq(a, {1}); T.tensor_eq(v, {0.5})
                     end,
                     bad = function()
                       T.errors(function() K.momentum_update(mf.tensor{1}, z(2), mf.tensor{1}, mf.tensor(0.5), 0.9, 0, 0, 0) end, 'momentum_update')
                       T.errors(function() K.momentum_update(mf.tensor{1, 2}, z(1), mf.tensor{1}, mf.tensor(0.5), 0.9, 0, 0, 0) end,
                                'momentum_update: slot is 1, variable 2')
                     end},
  adam_update = {ok = function()
                   -- t = 1, eps = 0: the first step moves by lr against the gradient's sign (bias-corrected
                   -- m / sqrt(v) = g / |g|), in PyTorch's form (0) and TensorFlow's (2)
                   for _, form in ipairs({0, 2}) do
                     local v, m, s = mf.tensor{1}, z(1), z(1)
                     K.adam_update(v, m, s, mf.tensor{2}, mf.tensor(1, 'float64'), mf.tensor(0.1), 0.9, 0.999, 0, 0, form)
                     T.tensor_eq(m, {0.2}, 1e-6); T.tensor_eq(s, {0.004}, 1e-5); T.tensor_eq(v, {0.9}, 1e-6)
                     -- t = 2, the same gradient (m 0.38, v 0.007996, bc1 0.19, bc2 0.001999): lr again;
                     -- a step count read as 1 would move it by 0.134
                     K.adam_update(v, m, s, mf.tensor{2}, mf.tensor(2, 'float64'), mf.tensor(0.1), 0.9, 0.999, 0, 0, form)
                     T.tensor_eq(m, {0.38}, 1e-6); T.tensor_eq(v, {0.8}, 1e-6, 'adam form ' .. form .. ', t = 2')
                   end
                   -- eps = 1 tells the forms apart: PyTorch adds it to sqrt(v / bc2) = 2, TensorFlow to
                   -- sqrt(v) = sqrt(0.004), with lr * sqrt(bc2) / bc1 = sqrt(0.001) as the step
                   for form, want in pairs({[0] = 1 - 0.2 / 3, [2] = 1 - math.sqrt(0.001) * 0.2 / (math.sqrt(0.004) + 1)}) do
                     local v, m, s = mf.tensor{1}, z(1), z(1)
                     K.adam_update(v, m, s, mf.tensor{2}, mf.tensor(1), mf.tensor(0.1), 0.9, 0.999, 1, 0, form)
                     T.tensor_eq(v, {want}, 1e-6, 'adam form ' .. form .. ', eps 1')
                   end
                   -- AdamW (form 1): w *= 1 - lr * wd first
                   local v, m, s = mf.tensor{1}, z(1), z(1)
                   K.adam_update(v, m, s, mf.tensor{2}, mf.tensor(1), mf.tensor(0.1), 0.9, 0.999, 0, 0.5, 1)
                   T.tensor_eq(v, {0.95 - 0.1}, 1e-6)
                 end,
                 bad = function()
                   T.errors(function() K.adam_update(mf.tensor{1}, z(2), z(1), mf.tensor{2}, mf.tensor(1), mf.tensor(0.1), 0.9, 0.999, 0, 0, 0) end,
                            'adam_update: slot is 2, variable 1')
                   T.errors(function() K.adam_update(mf.tensor{1}, z(1), z(1), mf.tensor{2}, mf.tensor(0), mf.tensor(0.1), 0.9, 0.999, 0, 0, 0) end,
                            'adam_update: step is 0; expected t >= 1 (count the step first)')
                 end},
  softmax_xent = {ok = function()
                    local y = z(1); K.softmax_xent(y, mf.tensor{{0, L3}}, mf.tensor{{0, 1}}, 1); T.tensor_eq(y, {-math.log(0.75)}, 1e-6)
                  end,
                  bad = function()
                    T.errors(function() K.softmax_xent(z(2), mf.tensor{{0, L3}}, mf.tensor{{0, 1}}, 1) end,
                             'softmax_cross_entropy: loss is 2, logits 1x2')
                  end},
  conv2d = {ok = function() local y = z(1, 1, 2, 2); K.conv2d(y, mf.ones(1, 1, 2, 2), mf.full({1, 1, 1, 1}, 2), nil, 1, 1, 0, 0, 1, 1)
              T.tensor_eq(y, {{{{2, 2}, {2, 2}}}}) end,
            bad = function()
              T.errors(function() K.conv2d(z(1, 1, 1, 1), mf.ones(1, 1, 2, 2), mf.ones(1, 1, 1, 1), nil, 1, 1, 0, 0, 1, 1) end,
                       'conv2d: the output is 1x1x1x1; expected 1x1x2x2')
            end},
  conv2d_backward_input = {ok = function()
                             local gx = z(1, 1, 2, 2)
                             K.conv2d_backward_input(gx, mf.ones(1, 1, 2, 2), mf.full({1, 1, 1, 1}, 3), nil, 1, 1, 0, 0, 1, 1)
                             T.tensor_eq(gx, {{{{3, 3}, {3, 3}}}})
                           end,
                           bad = function()
                             T.errors(function() K.conv2d_backward_input(z(1, 1, 3, 3), mf.ones(1, 1, 2, 2), mf.ones(1, 1, 1, 1), nil, 1, 1, 0, 0, 1, 1) end,
                                      'conv2d_backward_input')
                           end},
  conv2d_backward_weight = {ok = function()
                              local gw = z(1, 1, 1, 1)
                              K.conv2d_backward_weight(gw, mf.ones(1, 1, 2, 2), t4{1, 2, 3, 4}, nil, 1, 1, 0, 0, 1, 1)
                              T.tensor_eq(gw, {{{{10}}}})
                            end,
                            bad = function()
                              T.errors(function() K.conv2d_backward_weight(z(1, 1, 2, 2), mf.ones(1, 1, 2, 2), t4{1, 2, 3, 4}, nil, 1, 1, 0, 0, 1, 1) end,
                                       'conv2d_backward_weight')
                            end},
  max_pool2d = {ok = function() local y = z(1, 1, 1, 1); K.max_pool2d(y, t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0); T.tensor_eq(y, {{{{4}}}}) end,
                bad = function() T.errors(function() K.max_pool2d(z(1, 1, 2, 2), t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0) end,
                                          'max_pool2d: 1x1x2x2 is not the pooled size of 1x1x2x2') end},
  max_pool2d_backward = {ok = function()
                           local gx = z(1, 1, 2, 2); K.max_pool2d_backward(gx, mf.full({1, 1, 1, 1}, 5), t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0)
                           T.tensor_eq(gx, {{{{0, 0}, {0, 5}}}})
                         end,
                         bad = function() T.errors(function() K.max_pool2d_backward(z(1, 1, 1, 1), mf.ones(1, 1, 1, 1), t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0) end,
                                                   'max_pool2d_backward: the output is 1x1x1x1, x 1x1x2x2') end},
  avg_pool2d = {ok = function() local y = z(1, 1, 1, 1); K.avg_pool2d(y, t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0, 1); T.tensor_eq(y, {{{{2.5}}}}) end,
                bad = function() T.errors(function() K.avg_pool2d(z(1, 1, 2, 2), t4{1, 2, 3, 4}, 2, 2, 2, 2, 0, 0, 1) end, 'avg_pool2d: 1x1x2x2 is not the pooled size') end},
  avg_pool2d_backward = {ok = function()
                           local gx = z(1, 1, 2, 2); K.avg_pool2d_backward(gx, mf.full({1, 1, 1, 1}, 4), 2, 2, 2, 2, 0, 0, 1)
                           T.tensor_eq(gx, {{{{1, 1}, {1, 1}}}})
                         end,
                         bad = function() T.errors(function() K.avg_pool2d_backward(z(1, 1, 5, 5), mf.ones(1, 1, 1, 1), 2, 2, 2, 2, 0, 0, 1) end,
                                                   'avg_pool2d_backward: 1x1x1x1 is not the pooled size of 1x1x5x5') end},
  adaptive_avg_pool2d = {ok = function() local y = z(1, 1, 1, 1); K.adaptive_avg_pool2d(y, t4{1, 2, 3, 4}); T.tensor_eq(y, {{{{2.5}}}}) end,
                         bad = function() T.errors(function() K.adaptive_avg_pool2d(z(2, 1, 1, 1), t4{1, 2, 3, 4}) end,
                                                   'adaptive_avg_pool2d: 2x1x1x1 and 1x1x2x2 disagree in batch or channels') end},
  adaptive_avg_pool2d_backward = {ok = function()
                                    local gx = z(1, 1, 2, 2); K.adaptive_avg_pool2d_backward(gx, mf.full({1, 1, 1, 1}, 4))
                                    T.tensor_eq(gx, {{{{1, 1}, {1, 1}}}})
                                  end,
                                  bad = function() T.errors(function() K.adaptive_avg_pool2d_backward(z(1, 1, 2, 2), mf.ones(2, 1, 1, 1)) end,
                                                            'adaptive_avg_pool2d_backward: 2x1x1x1 and 1x1x2x2 disagree') end},
  index_select = {ok = function()
                    local y = z(2, 2); K.index_select(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({2, 1}, 'int64'), 0)
                    T.tensor_eq(y, {{3, 4}, {1, 2}})
                  end,
                  bad = function() T.errors(function() K.index_select(z(1, 2), mf.tensor{{1, 2}, {3, 4}}, mf.tensor({2, 1}, 'int64'), 0) end,
                                            'index_select: output has 1 slices along dim 1 for 2 indices') end},
  index_add_like = {ok = function()
                      local y = z(2, 2); K.index_add_like(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({2, 2}, 'int64'), 0)
                      T.tensor_eq(y, {{0, 0}, {4, 6}})
                    end,
                    bad = function()
                      T.errors(function() K.index_add_like(z(2, 3), mf.tensor{{1, 2}, {3, 4}}, mf.tensor({2, 1}, 'int64'), 0) end,
                               'index_add_like')
                      T.errors(function() K.index_add_like(z(2, 2), mf.tensor({{1, 2}, {3, 4}}, 'float64'), mf.tensor({2, 2}, 'int64'), 0) end,
                               'index_add_like: gradient is float64, output float32; expected one dtype')
                    end},
  one_hot = {ok = function() local y = z(2, 3); K.one_hot(y, mf.tensor({3, 1}, 'int64')); T.tensor_eq(y, {{0, 0, 1}, {1, 0, 0}}) end,
             bad = function() T.errors(function() K.one_hot(z(1, 3), mf.tensor({3, 1}, 'int64')) end, 'one_hot: output 1x3 does not hold') end},
  -- the indexing routines (src/kernels/cpu/scatter.cc): 0-based dim, 1-based indices
  gather = {ok = function()
              local y = z(1, 2); K.gather(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({{2, 1}}, 'int64'), 0)
              T.tensor_eq(y, {{3, 2}})
            end,
            bad = function()
              T.errors(function() K.gather(z(2, 2), mf.tensor{{1, 2}, {3, 4}}, mf.tensor({{2, 1}}, 'int64'), 0) end,
                       'gather: output is 2x2, index is 1x2')
              T.errors(function() K.gather(z(1, 2), mf.tensor{{1, 2}, {3, 4}}, mf.tensor({{3, 1}}, 'int64'), 0) end,
                       'gather: index 3 at position [1,1] of the index is out of range 1..2 along dim 1')
            end},
  scatter = {ok = function()
               local y = z(2, 2); K.scatter(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({{2, 1}}, 'int64'), mf.tensor{{8, 9}}, 0, 1)
               T.tensor_eq(y, {{1, 11}, {11, 4}})
             end,
             bad = function()
               T.errors(function() K.scatter(z(3), z(2), mf.tensor({1}, 'int64'), z(1), 0, 0) end, 'scatter: output is 3, x is 2')
               T.errors(function() K.scatter(z(2), z(2), mf.tensor({1}, 'int64'), z(1, I64), 0, 0) end,
                        'scatter: x is float32, src int64')
             end},
  index_add = {ok = function()
                 local y = z(2, 2); K.index_add(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({2, 2}, 'int64'), mf.tensor{{1, 1}, {2, 2}}, 0)
                 T.tensor_eq(y, {{1, 2}, {6, 7}})
               end,
               bad = function()
                 T.errors(function() K.index_add(z(2, 2), z(2, 2), mf.tensor({1}, 'int64'), z(2, 2), 0) end,
                          'index_add: x is 2x2, index 1, src 2x2')
               end},
  -- the first #out selected, then the fill value (size and fill_value of the ops)
  masked_select = {ok = function()
                     local y = z(2); K.masked_select(y, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({1, 0}, 'uint8'), -1)
                     T.tensor_eq(y, {1, 3})
                     local p = z(3); K.masked_select(p, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({1, 0}, 'uint8'), -1)
                     T.tensor_eq(p, {1, 3, -1})
                     local c = z(1); K.masked_select(c, mf.tensor{{1, 2}, {3, 4}}, mf.tensor({1, 0}, 'uint8'), -1)
                     T.tensor_eq(c, {1})
                   end,
                   bad = function()
                     T.errors(function() K.masked_select(z(1, 3), mf.tensor{{1, 2}, {3, 4}}, mf.tensor({1, 0}, 'uint8'), 0) end,
                              'masked_select: output is 1x3; expected 1-D')
                     T.errors(function()
                       K.masked_select(z(3, I64), mf.tensor({1, 2}, 'int64'), mf.tensor({1, 0}, 'uint8'), 0 / 0)
                     end, 'masked_select: fill_value: value nan does not fit int64')
                   end},
  nonzero = {ok = function()
               local y = z(2, 1, I64); K.nonzero(y, mf.tensor{0, 5, 0, 7}, 0); T.tensor_eq(y, {{2}, {4}})
               local p = z(3, 1, I64); K.nonzero(p, mf.tensor{0, 5, 0, 7}, -9); T.tensor_eq(p, {{2}, {4}, {-9}})
             end,
             bad = function()
               T.errors(function() K.nonzero(z(3, 2, I64), mf.tensor{0, 5, 0, 7}, 0) end, 'nonzero: output is 3x2; x is 4, so n x 1')
               T.errors(function() K.nonzero(z(2, 1), mf.tensor{0, 5, 0, 7}, 0) end, 'nonzero: output is float32; expected int64')
             end},
  -- values and indices along a dim, running sums and products (src/kernels/cpu/sort.cc)
  max_dim = {ok = function()
               local v, i = z(2), z(2, I64); K.max_dim(v, i, mf.tensor{{1, 5, 5}, {7, 0, 2}}, 1, 0)
               T.tensor_eq(v, {5, 7}); T.tensor_eq(i, {2, 1})
             end,
             bad = function()
               T.errors(function() K.max_dim(z(3), z(3, I64), mf.tensor{{1, 5, 5}, {7, 0, 2}}, 1, 1) end,
                        'min: values is 3, x is 2x3; expected x\'s shape with dim 2 reduced')
               T.errors(function() K.max_dim(z(2), z(2), mf.tensor{{1, 5, 5}, {7, 0, 2}}, 1, 0) end,
                        'max: indices is float32; expected int64')
             end},
  sort = {ok = function()
            local v, i = z(3), z(3, I64); K.sort(v, i, mf.tensor{2, 0, 2}, 0, 1)
            T.tensor_eq(v, {2, 2, 0}); T.tensor_eq(i, {1, 3, 2})
          end,
          bad = function()
            T.errors(function() K.sort(z(2), z(2, I64), mf.tensor{2, 0, 2}, 0, 0) end, 'sort: values is 2, x is 3')
            T.errors(function() K.sort(z(3), z(3, I64), mf.tensor{2, 0, 2}, 1, 0) end, 'sort: dim 2 out of range')
          end},
  topk = {ok = function()
            local v, i = z(2), z(2, I64); K.topk(v, i, mf.tensor{2, 0, 3}, 0, 2, 0, 1)
            T.tensor_eq(v, {0, 2}); T.tensor_eq(i, {2, 1})
          end,
          bad = function()
            T.errors(function() K.topk(z(4), z(4, I64), mf.tensor{2, 0, 3}, 0, 4, 1, 1) end,
                     'topk: k is 4; expected 0..3 (the size of dim 1 of x, 3)')
            T.errors(function() K.topk(z(1), z(1, I64), mf.tensor{2, 0, 3}, 0, 2, 1, 1) end, 'topk: values is 1, x is 3')
          end},
  kthvalue = {ok = function()
                local v, i = z(1, 1), z(1, 1, I64); K.kthvalue(v, i, mf.tensor{{2, 0, 3}}, 1, 2)
                T.tensor_eq(v, {{2}}); T.tensor_eq(i, {{1}})
              end,
              bad = function()
                T.errors(function() K.kthvalue(z(1), z(1, I64), mf.tensor{{2, 0, 3}}, 1, 0) end, 'kthvalue: k is 0; expected 1..3')
                T.errors(function() K.kthvalue(z(3), z(3, I64), mf.tensor{{2, 0, 3}}, 1, 1) end, 'kthvalue: values is 3')
              end},
  cumulate = {ok = function()
                local y = z(3); K.cumulate(y, mf.tensor{1, 2, 3}, 0, 0, 0); T.tensor_eq(y, {1, 3, 6})
                K.cumulate(y, mf.tensor{1, 2, 3}, 0, 1, 1); T.tensor_eq(y, {6, 6, 3})
                local n = z(2, I64); K.cumulate(n, mf.tensor({200, 100}, 'uint8'), 0, 0, 0); T.tensor_eq(n, {200, 300})
              end,
              bad = function()
                T.errors(function() K.cumulate(z(2), mf.tensor{1, 2, 3}, 0, 0, 0) end, 'cumsum: y is 2, x is 3')
                T.errors(function() K.cumulate(z(2), mf.tensor({1, 2}, 'int32'), 0, 1, 0) end,
                         'cumprod: y is float32; expected int64')
              end},
  cumprod_grad = {ok = function()
                    local g = z(3); K.cumprod_grad(g, mf.tensor{2, 0, 3}, mf.tensor{1, 2, 3}, 0, 0)
                    T.tensor_eq(g, {1, 2 * 2 + 3 * 2 * 3, 0})  -- y = 2, 0, 0: dy2/dx2 = 2, dy3/dx2 = 6
                  end,
                  bad = function()
                    T.errors(function() K.cumprod_grad(z(3), mf.tensor{2, 0, 3}, mf.tensor{1, 2}, 0, 0) end,
                             'cumprod_grad: gy is 2, x is 3')
                  end},
  batch_norm = {ok = function()
                  local y = z(2, 1); K.batch_norm(y, mf.tensor{{1}, {3}}, mf.tensor{1}, mf.tensor{0}, 0); T.tensor_eq(y, {{-1}, {1}}, 1e-6)
                end,
                bad = function()
                  T.errors(function() K.batch_norm(z(1, 1), mf.tensor{{1}, {3}}, mf.tensor{1}, mf.tensor{0}, 0) end,
                           "batch_norm: y is 1x1, x is 2x1; expected y of x's shape")
                  T.errors(function() K.batch_norm(z(2, 1), mf.tensor{{1}, {3}}, mf.tensor{1, 1}, mf.tensor{0}, 0) end,
                           'batch_norm: weight is 2, bias 1, x 2x1')
                end},
  dropout_mask = {ok = function() local m = z(50); K.dropout_mask(m, 0); for _, v in ipairs(m:totable()) do T.eq(v, 1) end end,
                  bad = function() T.errors(function() K.dropout_mask(z(3, I64), 0.5) end, 'dropout_mask: mask is int64') end},
  -- everyday shape ops and integer draws (issue 21)
  periodic_copy = {ok = function()  -- dim 1 flipped; dim 2 tiled twice, shifted by 1
                     local y = z(2, 4)
                     K.periodic_copy(y, mf.tensor{{1, 2}, {3, 4}}, ffi.new('int64_t[2]', {0, 1}), 1)
                     T.tensor_eq(y, {{4, 3, 4, 3}, {2, 1, 2, 1}})
                   end,
                   bad = function()
                     T.errors(function() K.periodic_copy(z(3), mf.tensor{1, 2}, nil, 0) end,
                              "periodic_copy: out is 3, x 2; out's dim 1 must be a multiple of x's")
                     T.errors(function() K.periodic_copy(z(2, I64), mf.tensor{1, 2}, nil, 0) end,
                              "periodic_copy: out is int64; expected float32 (x's dtype)")
                   end},
  tri = {ok = function() local y = z(2, 2); K.tri(y, mf.tensor{{1, 2}, {3, 4}}, 0, 1); T.tensor_eq(y, {{1, 2}, {0, 4}}) end,
         bad = function()
           T.errors(function() K.tri(z(3), mf.tensor{1, 2, 3}, 0, 0) end, 'tril: x is 3; expected at least 2 dims')
           T.errors(function() K.tri(z(2, 3), mf.tensor{{1, 2}, {3, 4}}, 0, 0) end, "tril: out is 2x3, x is 2x2; expected out of x's shape")
         end},
  linspace = {ok = function()
                local y = z(3); K.linspace(y, 0, 1, 0); T.tensor_eq(y, {0, 0.5, 1})
                K.linspace(y, 0, 2, 10); T.tensor_eq(y, {1, 10, 100})
              end,
              bad = function() T.errors(function() K.linspace(z(2, 2), 0, 1, 0) end, 'linspace: output is 2x2; expected 1 dim') end},
  randint = {ok = function()
               local y = z(100, I64); K.randint(y, 3, 5)
               for _, v in ipairs(y:totable()) do T.eq(v == 3 or v == 4, true, 'randint in [3, 5)') end
             end,
             bad = function()
               T.errors(function() K.randint(z(2, I64), 5, 5) end, 'randint: low 5 and high 5 must be integers with low < high')
               T.errors(function() K.randint(z(2, {dtype = 'uint8'}), 0, 300) end, 'randint: value 299 does not fit uint8')
             end},
  randperm = {ok = function()
                local y = z(5, I64); K.randperm(y)
                local v = y:totable(); table.sort(v); T.tensor_eq(mf.tensor(v), {1, 2, 3, 4, 5})
              end,
              bad = function() T.errors(function() K.randperm(z(2, 2, I64)) end, 'randperm: output is 2x2; expected 1 dim') end},
  multinomial = {ok = function()
                   local y = z(2, 3, I64); K.multinomial(y, mf.tensor{{0, 1, 0, 0}, {0, 0, 0, 2}}, 1)
                   T.tensor_eq(y, {{2, 2, 2}, {4, 4, 4}})
                   y = z(1, 2, I64); K.multinomial(y, mf.tensor{{0, 1, 0, 3}}, 0)
                   local v = y:totable()[1]; table.sort(v); T.tensor_eq(mf.tensor(v), {2, 4})
                 end,
                 bad = function()
                   T.errors(function() K.multinomial(z(2), mf.tensor{1, 2}, 1) end, 'multinomial: out is float32; expected int64')
                   T.errors(function() K.multinomial(z(3, 1, I64), mf.tensor{{1, 2}}, 1) end, 'multinomial: probs is 1x2, out 3x1')
                 end},
  -- bind-time helpers and plumbing
  raise = {ok = function() T.errors(function() K.raise('custom: boom') end, 'custom: boom') end},
  check = {ok = function() K.check(0); T.errors(function() K.check(C.mf_device_kernels(K.HOST).fill(z(2, {dtype = 'uint8'}), 300)) end, 'fill: value 300') end},
  fused_program = {ok = function() T.eq(type(K.fused_program(1, {K.U.neg, 0, -1})), 'cdata') end,
                   bad = function() T.errors(function() K.fused_program(1, {K.U.neg, 5, -1}) end, 'reads value 5') end},
  -- nothing to make on the CPU (on cuda: the kernel, compiled at bind time; scripts/gpu/kernels.lua)
  fused_prepare = {ok = function() K.fused_prepare(K.fused_program(1, {K.U.neg, 0, -1}), z(2)) end,
                   bad = function() T.errors(function() K.fused_prepare(nil, z(2)) end, 'fused_prepare', 'null program') end},
  dim0 = {ok = function() T.eq(K.dim0(-1, 3), 2); T.eq(K.dim0(1, 3), 0) end},
  dim_mask = {ok = function() T.eq(K.dim_mask({}, 3), 7); T.eq(K.dim_mask({1, 3}, 3), 5) end},
  header = {ok = function() local h = K.header(mf.tensor{1, 2, 3, 4}, z(2, 2)); T.eq(h._ndim, 2); T.eq(tonumber(h._strides[0]), 2) end},
  header_as = {ok = function()  -- column 2 of a 2x3 matrix as a 2x1 matrix: stride 3, not contiguous
                 local x = mf.tensor{{1, 2, 3}, {4, 5, 6}}
                 local h = K.header_as(x:select(2, 2), {2, 1}, {3, 1})
                 T.eq(h._ndim, 2); T.eq(tonumber(h._count), 2); T.eq(h._is_contig, 0); T.eq(h._owns, 0)
                 local y = z(1, 1); K.matmul(y, K.header_as(mf.tensor{1, 1}, {1, 2}, {2, 1}), h, 0, 0); T.tensor_eq(y, {{7}})
                 T.eq(K.header_as(x, {3, 2}, {2, 1})._is_contig, 1)
               end},
  pair = {ok = function() T.eq(select(2, K.pair({3, 4}, 1, 1)), 4); T.eq(K.pair({}, 7, 8), 7) end},
  conv2d_workspace = {ok = function() T.eq(K.conv2d_workspace(0, z(1, 1, 2, 2), z(1, 1, 2, 2), z(1, 1, 1, 1), 1, 1, 0, 0, 1, 1) >= 1, true) end,
                      bad = function() T.errors(function() K.conv2d_workspace(0, z(1, 1, 1, 1), z(1, 1, 2, 2), z(1, 1, 1, 1), 1, 1, 0, 0, 1, 1) end,
                                                'conv2d: the output is 1x1x1x1') end},
  tensor_list = {ok = function() local a = mf.ones(1); local l = K.tensor_list{a, a}; T.eq(l[1]._count, 1) end},
  -- the device registry (every device's K comes from K.of_device)
  of_device = {ok = function() T.eq(K.of_device(K.HOST) == K, true); T.eq(K.of_device(K.HOST).device, 'cpu') end,
               bad = function() T.errors(function() K.of_device(99) end, 'no device has id 99') end},
  device_name = {ok = function() T.eq(K.device_name(K.HOST), 'cpu') end,
                 bad = function() T.errors(function() K.device_name(99) end, 'no device has id 99') end},
  device_names = {ok = function() T.eq(K.device_names()[1], 'cpu') end},
  find_device = {ok = function() T.eq(K.find_device('cpu', 'test'), K.HOST) end,
                 bad = function() T.errors(function() K.find_device('tpu', 'test') end, "test: device 'tpu' is not registered") end},
}

T.test('every mf.kernels function has a case', function()
  local missing = {}
  for name, v in pairs(K) do
    if type(v) == 'function' and not cases[name] then missing[#missing + 1] = name end
  end
  table.sort(missing)
  T.eq(#missing, 0, 'entries without a case: ' .. table.concat(missing, ', '))
end)

local names = {}
for name in pairs(cases) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  T.test(name .. ': correct operands', cases[name].ok)
  if cases[name].bad then T.test(name .. ': wrong operands are refused', cases[name].bad) end
end

-- a kernel entry (one that writes a tensor: every entry but the helpers above) must have a refusal case
T.test('every kernel entry has a refusal case', function()
  local helpers = {raise = true, check = true, dim0 = true, dim_mask = true, header = true, header_as = true, pair = true, tensor_list = true,
                   device_names = true,
                   alias_whole = true}  -- no checks by design: the dispatcher calls it on a destination's own layout
  for name, c in pairs(cases) do
    if not helpers[name] then T.eq(c.bad ~= nil, true, name .. ' has a refusal case') end
  end
end)

T.finish()
