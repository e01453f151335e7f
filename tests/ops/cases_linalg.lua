-- Cases of the strict-shape products dot, mm, mv, bmm, addmm and outer (ger). References: L.matmul
-- on the operands seen as matrices (its scale, sum |a_ik b_kj|, sets the float32 tolerance), and
-- plain Lua loops for outer and addmm's scaled sum.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local input = L.input
local ALL8 = {'float32', 'float64', 'int32', 'int64', 'uint8'}

-- x (a vector) as a rows x cols matrix array
local function as(x, rows, cols) return {shape = {rows, cols}, data = x.data} end
local function with_shape(r, shape)
  local out = L.array(shape, r.data)
  out.scale = r.scale
  return out
end

local REF = {
  dot = function(ins)
    local n = ins[1].shape[1]
    return with_shape(L.matmul(as(ins[1], 1, n), as(ins[2], n, 1)), {})
  end,
  mm = function(ins) return L.matmul(ins[1], ins[2]) end,
  bmm = function(ins) return L.matmul(ins[1], ins[2]) end,
  mv = function(ins)
    local n, k = ins[1].shape[1], ins[1].shape[2]
    return with_shape(L.matmul(ins[1], as(ins[2], k, 1)), {n})
  end,
  outer = function(ins, p, dtype)
    local a, b = ins[1], ins[2]
    local out = {}
    for i = 1, a.shape[1] do
      for j = 1, b.shape[1] do
        local v = a.data[i] * b.data[j]
        out[#out + 1] = dtype == 'float32' and L.f32(v) or v  -- one rounding, as the kernel's product
      end
    end
    return L.array({a.shape[1], b.shape[1]}, out)
  end,
  addmm = function(ins, p)
    local alpha, beta = p.alpha or 1, p.beta or 1
    local prod = L.matmul(ins[2], ins[3])
    local c = L.spread(ins[1], prod.shape)
    local out, scale = {}, {}
    for i = 1, #prod.data do
      -- beta = 0 ignores c, NaN and all (PyTorch)
      out[i] = alpha * prod.data[i] + (beta ~= 0 and beta * c[i] or 0)
      scale[i] = math.abs(alpha) * prod.scale[i] + (beta ~= 0 and math.abs(beta * c[i]) or 0)
    end
    local r = L.array(prod.shape, out)
    r.scale = scale
    return r
  end,
}

local function case(name, op, shapes, params, empty, args, extra)
  local ins = {}
  for i, s in ipairs(shapes) do ins[i] = input(s, extra and extra[i]) end
  add{name = name, op = op, inputs = ins, params = params or {}, args = args, ref = REF[op], empty = empty}
end

case('dot', 'dot', {{5}, {5}}, nil, {{{0}, {0}}})
case('dot_long', 'dot', {{300}, {300}})
case('mm', 'mm', {{3, 4}, {4, 5}}, nil, {{{0, 4}, {4, 5}}, {{3, 0}, {0, 5}}, {{3, 4}, {4, 0}}})
case('mm_larger', 'mm', {{33, 65}, {65, 17}})
case('mv', 'mv', {{3, 4}, {4}}, nil, {{{0, 4}, {4}}, {{3, 0}, {0}}})
case('mv_larger', 'mv', {{40, 70}, {70}})
case('bmm', 'bmm', {{2, 3, 4}, {2, 4, 5}}, nil, {{{0, 3, 4}, {0, 4, 5}}, {{2, 3, 0}, {2, 0, 5}}})
case('bmm_one_batch', 'bmm', {{1, 6, 2}, {1, 2, 3}})
case('addmm', 'addmm', {{3, 5}, {3, 4}, {4, 5}}, nil, {{{0, 5}, {0, 4}, {4, 5}}, {{3, 5}, {3, 0}, {0, 5}}})
case('addmm_bcast_row', 'addmm', {{5}, {3, 4}, {4, 5}}, {beta = 0.5, alpha = 2}, nil, {0.5, 2})
case('addmm_bcast_col', 'addmm', {{3, 1}, {3, 4}, {4, 5}}, {alpha = -1})
case('addmm_scalar_c', 'addmm', {{}, {3, 4}, {4, 5}}, {beta = 3})
case('addmm_beta0_alpha1', 'addmm', {{3, 5}, {3, 4}, {4, 5}}, {beta = 0}, nil, nil, {{nan = 2}})
case('addmm_beta0_nan_c', 'addmm', {{3, 5}, {3, 4}, {4, 5}}, {beta = 0, alpha = 0.25}, nil, nil, {{nan = 2}})
add{name = 'outer', op = 'outer', inputs = {input({4}), input({3})}, dtypes = ALL8, exact = true, ref = REF.outer,
    empty = {{{0}, {3}}, {{4}, {0}}}}
add{name = 'outer_float', op = 'outer', inputs = {input({5}), input({6})}, ref = REF.outer}

-- shapes and dtypes each op refuses, with messages naming the op, the shapes and the rule
local function bad(name, op, shapes, err, dtypes)
  local ins = {}
  for i, s in ipairs(shapes) do ins[i] = input(s) end
  add{name = name, op = op, inputs = ins, error = err, dtypes = dtypes}
end
bad('dot_2d', 'dot', {{2, 3}, {3}}, 'dot: a is 2x3, b is 3; expected a to be 1-D')
bad('dot_lengths', 'dot', {{3}, {4}}, 'dot: a is 3, b is 4; a:size(1) = 3 must equal b:size(1) = 4')
bad('dot_int', 'dot', {{3}, {3}}, 'expected float32 or float64', {'int64'})
bad('mm_3d', 'mm', {{2, 3, 4}, {4, 5}}, 'mm: a is 2x3x4, b is 4x5; expected a to be a 2-D matrix')
bad('mm_1d', 'mm', {{3, 4}, {4}}, 'expected b to be a 2-D matrix')
bad('mm_inner', 'mm', {{2, 3}, {4, 5}}, 'mm: a is 2x3, b is 4x5; a:size(2) = 3 must equal b:size(1) = 4')
bad('mm_int', 'mm', {{2, 2}, {2, 2}}, 'expected float32 or float64', {'int32'})
bad('mv_inner', 'mv', {{2, 3}, {4}}, 'mv: m is 2x3, v is 4; m:size(2) = 3 must equal v:size(1) = 4')
bad('mv_matrix_v', 'mv', {{2, 3}, {3, 1}}, 'mv: m is 2x3, v is 3x1; expected v to be 1-D')
bad('bmm_2d', 'bmm', {{3, 4}, {2, 4, 5}}, 'bmm: a is 3x4, b is 2x4x5; expected a to be 3-D')
bad('bmm_batches', 'bmm', {{2, 3, 4}, {3, 4, 5}}, 'bmm: a is 2x3x4, b is 3x4x5; a:size(1) = 2 must equal b:size(1) = 3')
bad('bmm_inner', 'bmm', {{2, 3, 4}, {2, 5, 5}}, 'a:size(3) = 4 must equal b:size(2) = 5')
bad('addmm_c', 'addmm', {{4, 5}, {3, 4}, {4, 5}}, 'addmm: c is 4x5, a is 3x4, b is 4x5; expected c to broadcast to 3x5')
bad('addmm_inner', 'addmm', {{3, 5}, {3, 4}, {3, 5}},
    'addmm: c is 3x5, a is 3x4, b is 3x5; a:size(2) = 4 must equal b:size(1) = 3')
bad('outer_2d', 'outer', {{2, 2}, {3}}, 'outer: a is 2x2, b is 3; expected a to be 1-D')
add{name = 'outer_dtypes', op = 'outer', inputs = {input({2}, {dtype = 'int64'}), input({2})},
    error = 'outer: a is int64, b is float'}

return cases
