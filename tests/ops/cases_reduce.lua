-- Cases of the reductions (several dims, keepdim, 1-based arg indices), softmax / log_softmax
-- over a dim, and matmul (transposes, batched with broadcast batch dims).
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local FLOATS = {'float32', 'float64'}
local ALL = {'float32', 'float64', 'int32', 'int64'}
local huge, nan = math.huge, 0 / 0
local input = L.input

-- reductions ---------------------------------------------------------------------------------------
-- folds of the reduced values, in row-major order of the reduced dims
local function fprod(v)
  local p = 1
  for i = 1, #v do p = p * v[i] end
  return p
end
local function fmean(v) return #v > 0 and L.fsum(v) / #v or nan end
local function fargmax(v) return L.arg_best(v, function(a, b) return a > b end) end  -- first of ties
local function fargmin(v) return L.arg_best(v, function(a, b) return a < b end) end

local ARGDOM = {step = 0.5, ilo = -3, ihi = 3}  -- ties occur
-- PyTorch's rule: integer (and uint8) sums and products are int64; float ones keep their dtype
local function int64_accum(dtype) return (dtype == 'float32' or dtype == 'float64') and dtype or 'int64' end
local ALL8 = {'float32', 'float64', 'int32', 'int64', 'uint8'}
-- op, fold, dtypes, domain, exact, output dtype
local reductions = {
  {'sum', L.fsum, ALL8, {}, nil, int64_accum},
  {'mean', fmean, FLOATS, {}},
  -- max and min (values and indices over one dim): cases_sort.lua
  {'prod', fprod, ALL8, {lo = 0.5, hi = 1.6, ilo = -2, ihi = 2}, nil, int64_accum},
  {'argmax', fargmax, ALL, ARGDOM, true, 'int64'},
  {'argmin', fargmin, ALL, ARGDOM, true, 'int64'},
}
local ref_of, out_of = {}, {}
-- suffix, input shape, args (as a user writes them), params (their meaning), empty variants
local VARIANTS = {
  {'', {2, 3, 4}, nil, {}},
  {'_dim2', {2, 3, 4}, {2}, {dim = {2}}, {{{0, 3, 4}}, {{2, 3, 0}}}},
  {'_dims13_keepdim', {2, 3, 4}, nil, {dim = {1, 3}, keepdim = true}, {{{2, 0, 4}}}},
  {'_dim_neg_keepdim', {2, 3, 4}, {-1, true}, {dim = {-1}, keepdim = true}},
  {'_dims_list', {2, 3, 4}, {{3, 2}}, {dim = {3, 2}}, {{{0, 3, 4}}}},
  {'_1d', {7}, {1}, {dim = {1}}},
  {'_scalar', {}, nil, {}},
}
for _, r in ipairs(reductions) do
  local name, fold, dtypes, dom, exact, out = unpack(r)
  local function ref(ins, p) return L.reduce(ins[1], p.dim, p.keepdim, fold) end
  ref_of[name], out_of[name] = ref, out
  for _, v in ipairs(VARIANTS) do
    add{name = name .. v[1], op = name, inputs = {input(v[2], dom)}, args = v[3], params = v[4], dtypes = dtypes,
        exact = exact, out_dtype = out, ref = ref, empty = v[5]}
  end
end
-- reducing a size-0 dim: sum 0, prod 1, mean NaN; the extremes have no answer
for _, name in ipairs{'sum', 'prod', 'mean'} do
  add{name = name .. '_of_empty', op = name, inputs = {input({3, 0})}, params = {dim = {2}}, exact = true,
      ref = ref_of[name], empty = {{{0, 0}}}}
  add{name = name .. '_all_of_empty', op = name, inputs = {input({0, 3})}, exact = true, ref = ref_of[name]}
end
for _, name in ipairs{'argmax', 'argmin'} do
  add{name = name .. '_of_empty', op = name, inputs = {input({3, 0})}, params = {dim = {2}},
      error = 'cannot reduce over dim 2 of size 0'}
  -- NaN wins in argmax and argmin (max and min: cases_sort.lua)
  add{name = name .. '_nan', op = name, inputs = {input({4, 6}, {step = 0.5, nan = 9})}, params = {dim = {2}},
      exact = true, out_dtype = out_of[name], ref = ref_of[name]}
end
-- several NaNs in a row: the values are NaN, the indices point at the first one (PyTorch), over
-- one dim and over all
local TWO_NANS = {values = {1, nan, 3, nan, 5, 6, 7, 8, 9, -1, nan, nan, 2, 4, 6, 8, 10, 12}}
for _, name in ipairs{'argmax', 'argmin'} do
  add{name = name .. '_two_nans', op = name, inputs = {input({3, 6}, TWO_NANS)}, params = {dim = {2}}, exact = true,
      out_dtype = out_of[name], ref = ref_of[name]}
  add{name = name .. '_all_nans', op = name, inputs = {input({3, 6}, TWO_NANS)}, exact = true,
      out_dtype = out_of[name], ref = ref_of[name]}
end
add{name = 'sum_nan', op = 'sum', inputs = {input({3, 6}, TWO_NANS)}, params = {dim = {2}}, exact = true, ref = ref_of.sum}
add{name = 'sum_large', op = 'sum', inputs = {input({64, 33})}, params = {dim = {1}}, ref = ref_of.sum}
add{name = 'sum_8d', op = 'sum', inputs = {input({2, 1, 3, 2, 1, 2, 2, 3})}, params = {dim = {1, 3, 6, -1}},
    ref = ref_of.sum}
add{name = 'argmin_8d', op = 'argmin', inputs = {input({2, 2, 1, 2, 3, 1, 2, 2}, ARGDOM)},
    params = {dim = {2, 4, 5}, keepdim = true}, exact = true, out_dtype = 'int64', ref = ref_of.argmin}
-- big enough for the kernels to split the work across threads
add{name = 'sum_threads', op = 'sum', inputs = {input({300, 200})}, params = {dim = {2}}, ref = ref_of.sum}
add{name = 'argmax_threads', op = 'argmax', inputs = {input({200, 300})}, params = {dim = {1}}, exact = true,
    out_dtype = 'int64', ref = ref_of.argmax}
-- PyTorch's mean refuses integer input (it has no integer result to give)
add{name = 'mean_int', op = 'mean', inputs = {input({2, 3})}, dtypes = {'int64', 'int32', 'uint8'},
    error = 'expected float32 or float64'}
-- integer sums and products do not wrap in the input's dtype: 1000 uint8 ones sum to 1000; int32
-- values past 2^31 in total; a product past 2^31 (hand-computed: 4 * 2^30 = 2^32; 2^40)
add{name = 'sum_uint8_1000', op = 'sum', inputs = {input({1000}, {ilo = 1, ihi = 1})}, dtypes = {'uint8'},
    exact = true, out_dtype = 'int64', ref = function() return L.array({}, {1000}) end}
add{name = 'sum_uint8_dim', op = 'sum', inputs = {input({3, 300}, {ilo = 255, ihi = 255})}, params = {dim = {2}},
    dtypes = {'uint8'}, exact = true, out_dtype = 'int64', ref = function() return L.array({3}, {76500, 76500, 76500}) end}
add{name = 'sum_int32_past_2_31', op = 'sum', inputs = {input({2, 4}, {ilo = 2 ^ 30, ihi = 2 ^ 30})}, params = {dim = {2}},
    dtypes = {'int32'}, exact = true, out_dtype = 'int64', ref = function() return L.array({2}, {2 ^ 32, 2 ^ 32}) end}
add{name = 'prod_int32_past_2_31', op = 'prod', inputs = {input({40}, {ilo = 2, ihi = 2})}, dtypes = {'int32', 'uint8'},
    exact = true, out_dtype = 'int64', ref = function() return L.array({}, {2 ^ 40}) end}
add{name = 'sum_dim_twice', op = 'sum', inputs = {input({2, 3})}, params = {dim = {1, -2}}, error = 'listed twice'}

-- softmax / log_softmax ------------------------------------------------------------------------------
local function softmax_ref(log)
  return function(ins, p)
    local x = ins[1]
    local d = L.dim(p.dim or -1, #x.shape)
    local st, line_shape, line_st = L.strides(x.shape), {}, {}
    for k = 1, #x.shape do
      if k ~= d then line_shape[#line_shape + 1], line_st[#line_st + 1] = x.shape[k], st[k] end
    end
    local out, n, sd, data = {}, x.shape[d], st[d], x.data
    L.walk(line_shape, {line_st}, function(_, o)  -- one line along dim d per call
      local base, m, s = o[1] + 1, -huge, 0
      for j = 0, n - 1 do m = math.max(m, data[base + j * sd]) end
      for j = 0, n - 1 do s = s + math.exp(data[base + j * sd] - m) end
      for j = 0, n - 1 do
        local v = data[base + j * sd] - m
        out[base + j * sd] = log and v - math.log(s) or math.exp(v) / s
      end
    end)
    return L.array(L.copy(x.shape), out)
  end
end
local SOFT = {lo = -3, hi = 3}
for _, name in ipairs{'softmax', 'log_softmax'} do
  local ref = softmax_ref(name == 'log_softmax')
  add{name = name, op = name, inputs = {input({2, 3, 4}, SOFT)}, ref = ref, empty = {{{0, 4}}, {{3, 0}}}}
  add{name = name .. '_dim1', op = name, inputs = {input({3, 4, 2}, SOFT)}, params = {dim = 1}, args = {1}, ref = ref,
      empty = {{{0, 2}}}}
  add{name = name .. '_dim2', op = name, inputs = {input({3, 4, 2}, SOFT)}, params = {dim = 2}, ref = ref}
  add{name = name .. '_dim_neg2', op = name, inputs = {input({2, 5, 3}, SOFT)}, params = {dim = -2}, ref = ref}
  add{name = name .. '_1d', op = name, inputs = {input({6}, SOFT)}, ref = ref}
  -- exp(90) overflows float32: only the max-subtracted form gets these right
  add{name = name .. '_large', op = name, inputs = {input({3, 5}, {lo = 60, hi = 95})}, ref = ref}
  add{name = name .. '_special', op = name, ref = ref,
      inputs = {input({3, 4}, {values = {-huge, 0, 1, 2, -huge, -huge, -huge, -huge, nan, 1, 2, 3}})}}
  add{name = name .. '_threads', op = name, inputs = {input({150, 50}, SOFT)}, ref = ref}
  add{name = name .. '_int', op = name, inputs = {input({2, 3})}, dtypes = {'int32'},
      error = 'expected float32 or float64'}
end

-- matmul ---------------------------------------------------------------------------------------
-- float32 GEMM accumulates in float32: its error is measured against sum |a_ik b_kj| (the
-- reference's scale), at the default rtol.
local function mm_ref(ins, p) return L.matmul(ins[1], ins[2], p.transpose_a, p.transpose_b) end
local function mm(name, sa, sb, params, empty, args)
  add{name = name, op = 'matmul', inputs = {input(sa), input(sb)}, params = params or {}, args = args,
      ref = mm_ref, empty = empty}
end
mm('matmul', {3, 4}, {4, 5}, nil, {{{0, 4}, {4, 5}}, {{3, 0}, {0, 5}}, {{3, 4}, {4, 0}}})
mm('matmul_transpose_a', {4, 3}, {4, 5}, {transpose_a = true}, {{{0, 3}, {0, 5}}})
mm('matmul_transpose_b', {3, 4}, {5, 4}, {transpose_b = true}, {{{3, 0}, {5, 0}}}, {false, true})
mm('matmul_transpose_ab', {4, 3}, {5, 4}, {transpose_a = true, transpose_b = true})
mm('matmul_batched', {2, 3, 4}, {2, 4, 5}, nil, {{{0, 3, 4}, {0, 4, 5}}, {{2, 3, 0}, {2, 0, 5}}})
mm('matmul_bcast_b', {2, 3, 4}, {4, 5}, nil, {{{2, 0, 4}, {4, 5}}})
mm('matmul_bcast_a', {3, 4}, {2, 4, 5}, {transpose_b = false})
mm('matmul_bcast_batch', {2, 1, 3, 4}, {3, 4, 5}, nil, {{{2, 1, 3, 4}, {0, 4, 5}}})
mm('matmul_batched_transposes', {2, 1, 4, 3}, {1, 3, 5, 4}, {transpose_a = true, transpose_b = true})
mm('matmul_outer', {5, 1}, {1, 6})
mm('matmul_dot', {1, 7}, {7, 1})
mm('matmul_larger', {33, 65}, {65, 17})
add{name = 'matmul_bad_inner', op = 'matmul', inputs = {input({2, 3}), input({4, 5})},
    error = 'a:size(2) = 3 must equal b:size(1) = 4'}
add{name = 'matmul_1d', op = 'matmul', inputs = {input({3}), input({3, 2})}, error = 'both need at least 2 dims'}
add{name = 'matmul_int', op = 'matmul', inputs = {input({2, 2}), input({2, 2})}, dtypes = {'int32'},
    error = 'expected float32 or float64'}

return cases
