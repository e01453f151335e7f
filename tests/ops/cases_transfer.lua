-- Cases: copy and fill (write input 1 in place and return it) and to (a copy on a device). The
-- references are plain Lua: the source's values broadcast to the destination, converted to its dtype.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end
local input = L.input
local views_input1 = L.views_input1
local DT = {'float32', 'float64', 'int32', 'int64', 'uint8'}

-- input 1's new value, which the output (a view of it) also holds
local function written(shape, data)
  local w = L.array(L.copy(shape), data)
  return {w, written = {w}}
end
local function copy_ref(ins) return written(ins[1].shape, L.spread(ins[2], ins[1].shape)) end

add{name = 'copy', op = 'copy', inputs = {input({2, 3, 4}), input({2, 3, 4})}, writes = {1}, dtypes = DT,
    ref = copy_ref, check_out = views_input1, empty = {{{0, 3}, {0, 3}}}}
add{name = 'copy_bcast', op = 'copy', inputs = {input({3, 4}), input({4})}, writes = {1}, ref = copy_ref,
    check_out = views_input1}
-- float64 values into int32: truncated toward zero
add{name = 'copy_convert', op = 'copy', inputs = {input({2, 3}, {dtype = 'int32'}), input({2, 3}, {dtype = 'float64', lo = -50, hi = 50})},
    writes = {1}, dtypes = {'float32'}, out_dtype = 'int32', check_out = views_input1,
    ref = function(ins)
      local out = {}
      for i, v in ipairs(L.spread(ins[2], ins[1].shape)) do out[i] = L.trunc(v) end
      return written(ins[1].shape, out)
    end}
add{name = 'copy_bad_shapes', op = 'copy', inputs = {input({3}), input({2, 3})},
    error = 'copy: source 2x3 does not broadcast to destination 3'}

local function fill_ref(ins)
  local out = {}
  for i = 1, L.numel(ins[1].shape) do out[i] = ins[2].data[1] end
  return written(ins[1].shape, out)
end
local value = input({})
value.number = true
add{name = 'fill', op = 'fill', inputs = {input({2, 3}), value}, writes = {1}, dtypes = DT, ref = fill_ref,
    check_out = views_input1, empty = {{{0, 3}, {}}}}
add{name = 'fill_tensor', op = 'fill', inputs = {input({3, 2}), input({1})}, writes = {1}, ref = fill_ref,
    check_out = views_input1}
add{name = 'fill_bad_value', op = 'fill', inputs = {input({3}), input({2})},
    error = 'fill: value is 2; expected one element (or a number)'}

-- to: the values, unchanged, on the named device (the host here, whatever device the inputs are on)
add{name = 'to', op = 'to', inputs = {input({2, 3})}, args = {'cpu'}, dtypes = DT, leaves_device = true,
    ref = function(ins) return L.array(L.copy(ins[1].shape), L.copy(ins[1].data)) end, empty = {{{0, 3}}}}
add{name = 'to_unknown', op = 'to', inputs = {input({2})}, args = {'tpu'}, error = "to: device 'tpu' is not registered"}
return cases
