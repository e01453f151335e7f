-- Cases: fused_elementwise and fused_assign (the steps graph fusion builds). The reference runs the
-- program with plain Lua float64 functions, one per op, over the broadcast inputs, and carries an
-- error bound per element: every step may round once in float32, and a step passes its operands'
-- errors on scaled by its derivative.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end
local input = L.input
local abs, exp, sqrt, tanh = math.abs, math.exp, math.sqrt, math.tanh

-- pointwise codes as the registry assigned them (each op's pointwise attribute, mf.kernels.U / .B)
local U, B = require('moonflow').kernels.U, require('moonflow').kernels.B
local NEG, ABS, EXP, SQRT, TANH, RELU, SQUARE = U.neg, U.abs, U.exp, U.sqrt, U.tanh, U.relu, U.square
local ADD, SUB, MUL, DIV, MAXIMUM, RELU_BACKWARD = B.add, B.sub, B.mul, B.div, B.maximum, B.relu_backward
local CLAMP, LT = U.clamp, B.lt

-- value and error bound of each op from its operands (a, ea), (b, eb)
local OPS = {
  [NEG] = function(a, ea) return -a, ea end,
  [ABS] = function(a, ea) return abs(a), ea end,
  [EXP] = function(a, ea) local y = exp(a) return y, y * ea + y end,
  [SQRT] = function(a, ea) local y = sqrt(a) return y, ea / (2 * y) + y end,
  [TANH] = function(a, ea) local y = tanh(a) return y, ea + abs(y) end,
  [RELU] = function(a, ea) return (a > 0 or a ~= a) and a or 0, ea end,  -- NaN stays NaN
  [SQUARE] = function(a, ea) return a * a, 2 * abs(a) * ea + a * a end,
  [ADD] = function(a, ea, b, eb) local y = a + b return y, ea + eb + abs(y) end,
  [SUB] = function(a, ea, b, eb) local y = a - b return y, ea + eb + abs(y) end,
  [MUL] = function(a, ea, b, eb) local y = a * b return y, abs(b) * ea + abs(a) * eb + abs(y) end,
  [DIV] = function(a, ea, b, eb) local y = a / b return y, ea / abs(b) + abs(y / b) * eb + abs(y) end,
  [MAXIMUM] = function(a, ea, b, eb) return (a ~= a or b ~= b) and 0 / 0 or math.max(a, b), math.max(ea, eb) end,
  [RELU_BACKWARD] = function(a, ea, b) return b <= 0 and 0 or a, ea end,  -- NaN in b passes a
}

-- runs program prog on the inputs broadcast to the output shape; returns value array with scale
local function run_program(ins, prog)
  local shapes = {}
  for i, x in ipairs(ins) do shapes[i] = x.shape end
  local shape = L.broadcast_shape(shapes)
  local out, scale = {}, {}
  for i = 1, L.numel(shape) do
    local idx, v, e = L.unravel(i, shape), {}, {}
    for k, x in ipairs(ins) do
      local src, lead = {}, #shape - #x.shape
      for d = 1, #x.shape do src[d] = x.shape[d] == 1 and 1 or idx[d + lead] end
      v[k - 1], e[k - 1] = L.at(x, src), 0
    end
    local n = #ins
    for s = 0, #prog / 3 - 1 do
      local code, a, b = prog[3 * s + 1], prog[3 * s + 2], prog[3 * s + 3]
      v[n + s], e[n + s] = OPS[code](v[a], e[a], v[b], e[b])
    end
    out[i], scale[i] = v[n + #prog / 3 - 1], e[n + #prog / 3 - 1]
  end
  local r = L.array(shape, out)
  r.scale = scale
  return r
end

local function fused_ref(ins, p) return {run_program(ins, p.program)} end

-- ((a * b + c) -> tanh - a)^2: a row vector b and a 0-dim c broadcast; a value read twice
local CHAIN = {MUL, 0, 1, ADD, 3, 2, TANH, 4, 0, SUB, 5, 0, MUL, 6, 6}
add{name = 'fused_elementwise', op = 'fused_elementwise',
    inputs = {input({2, 3}), input({3}), input({})}, params = {program = CHAIN}, ref = fused_ref,
    empty = {{{0, 3}, {3}, {}}}}
-- unary chain with a division by a column: relu(-x) / y, then sqrt of the max with |x|
add{name = 'fused_elementwise_unary', op = 'fused_elementwise',
    inputs = {input({4, 5}), input({4, 1}, {nonzero = true})},
    params = {program = {NEG, 0, 0, RELU, 2, 0, DIV, 3, 1, ABS, 0, 0, MAXIMUM, 4, 5, SQRT, 6, 0}}, ref = fused_ref}
-- one input, one step; relu_backward reading its operands in either order
add{name = 'fused_elementwise_single', op = 'fused_elementwise', inputs = {input({3, 2})},
    params = {program = {EXP, 0, 0}}, ref = fused_ref}
add{name = 'fused_elementwise_relu_backward', op = 'fused_elementwise', inputs = {input({6}), input({6})},
    params = {program = {SQUARE, 0, 0, RELU_BACKWARD, 2, 1}}, ref = fused_ref}
-- NaN through the fused interpreter as through the unfused ops (the same functors): relu keeps
-- it, maximum propagates it from either side, relu_backward passes the gradient where b is NaN
add{name = 'fused_elementwise_nan', op = 'fused_elementwise',
    inputs = {input({4, 5}, {nan = 3}), input({5}, {nan = 4}), input({4, 5}, {nan = 7})},
    params = {program = {RELU, 0, 0, MAXIMUM, 3, 1, RELU_BACKWARD, 2, 0, ADD, 4, 5}}, ref = fused_ref}
-- clamp takes params and lt gives uint8: neither may join a program
add{name = 'fused_elementwise_bad_code', op = 'fused_elementwise', inputs = {input({2})},
    params = {program = {CLAMP, 0, 0}}, error = ('step 1 has op code %d (clamp); expected the code of a fusable'):format(CLAMP)}
add{name = 'fused_elementwise_compare_code', op = 'fused_elementwise', inputs = {input({2}), input({2})},
    params = {program = {LT, 0, 1}}, error = ('step 1 has op code %d (lt); expected the code of a fusable'):format(LT)}
add{name = 'fused_elementwise_unknown_code', op = 'fused_elementwise', inputs = {input({2})},
    params = {program = {100000, 0, 0}}, error = 'step 1 has op code 100000; expected the code of a fusable'}
add{name = 'fused_elementwise_bad_operand', op = 'fused_elementwise', inputs = {input({2}), input({2})},
    params = {program = {ADD, 0, 2}}, error = 'step 1 (add) reads value 2 as b; expected 0..1'}
add{name = 'fused_elementwise_bad_length', op = 'fused_elementwise', inputs = {input({2})},
    params = {program = {ADD, 0}}, error = 'program has 2 numbers; expected a non-empty list of (op, a, b) triples'}
add{name = 'fused_elementwise_no_broadcast', op = 'fused_elementwise', inputs = {input({2, 3}), input({2})},
    params = {program = {ADD, 0, 1}}, error = 'the broadcast of the earlier inputs is 2x3, input 2 is 2'}
add{name = 'fused_elementwise_int', op = 'fused_elementwise', inputs = {input({2})}, dtypes = {'int32'},
    params = {program = {NEG, 0, 0}}, error = 'input 1 is int32; expected float32 or float64'}
add{name = 'fused_elementwise_mixed', op = 'fused_elementwise',
    inputs = {input({2}, {dtype = 'float32'}), input({2}, {dtype = 'float64'})},
    params = {program = {ADD, 0, 1}}, error = 'input 2 is float64, input 1 is float32; expected one dtype'}

-- fused_assign: the program's result written into input 1, which it may read as value 0
local function fused_assign_ref(ins, p)
  local r = run_program(ins, p.program)
  local w = L.array(L.copy(ins[1].shape), r.data)
  w.scale = r.scale
  return {w, written = {w}}
end
local views_input1 = L.views_input1
-- w = -eta * (g + lam * w) with eta, lam as 0-dim inputs, and a bias-like row
add{name = 'fused_assign', op = 'fused_assign', inputs = {input({3, 4}), input({3, 4}), input({}), input({})},
    params = {program = {MUL, 3, 0, ADD, 1, 4, MUL, 2, 5, NEG, 6, 0}}, writes = {1}, ref = fused_assign_ref,
    check_out = views_input1, empty = {{{0, 4}, {0, 4}, {}, {}}}}
add{name = 'fused_assign_row', op = 'fused_assign', inputs = {input({2, 3}), input({3})},
    params = {program = {TANH, 1, 0, ADD, 0, 2}}, writes = {1}, ref = fused_assign_ref,
    check_out = views_input1}
add{name = 'fused_assign_expanded_ref', op = 'fused_assign', check = function(mf)
  local ok, err = pcall(mf.fused_assign, {mf.zeros(3, 1):expand(3, 4), mf.ones(3, 4)}, {program = {ADD, 0, 1}})
  if ok then return 'writing an expanded ref raised no error' end
  if not tostring(err):find('fused_assign: ref is an expanded view', 1, true) then return 'error lacks the rule: ' .. tostring(err) end
end}
add{name = 'fused_assign_bad_shape', op = 'fused_assign', inputs = {input({3}), input({2, 3})},
    params = {program = {ADD, 0, 1}}, error = 'input 2 is 2x3; it must broadcast to ref 3'}
return cases
