-- Ops registered from Lua (mf.register_op) run through the same harness as the built-ins: eager and
-- in graphs, in every memory layout. harness_cube's kernel is a plain loop over x:data(), so it
-- relies on the kernel layout contract (contiguous inputs); harness_fma declares strided = true and
-- walks its inputs through their sizes and strides itself; harness_identity is the op the harness
-- feeds every graph output into (so each output is an intermediate, not only a fetch).
local mf, L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end
local input = L.input

-- mf.register_op once per process (the registry is process-wide: a second harness engine in the
-- same process finds the ops already there, so every rule is a source string, which every engine
-- compiles for itself; a Lua function would stay in the engine that registered the op)
local function register(def)
  if not mf._ops[def.name] then mf.register_op(def) end
end

register{
  name = 'harness_cube', num_inputs = 1, doc = 'x^3, elementwise: a plain loop over contiguous data',
  infer_shape = 'same',
  gradient = [[ function(x, y, gy) return {gy * x * x * 3} end ]],
  lua_compute = [[ function(ins, outs, p)
    local x, y = ins[1], outs[1]
    return function()
      local n, xp, yp = x:numel(), x:data(), y:data()
      for i = 0, n - 1 do local v = xp[i]; yp[i] = v * v * v end
    end
  end ]]}

register{
  name = 'harness_fma', num_inputs = 2, doc = 'scale * a * b + shift for a and b of one shape, read through their strides',
  strided = true,
  params = {scale = {type = 'number', default = 1, doc = 'factor of the product'},
            shift = {type = 'number', default = 0, doc = 'added to every element'}},
  infer_shape = [[ function(s)
    local a, b = s[1], s[2]
    local same = #a == #b
    for d = 1, #a do same = same and a[d] == b[d] end
    if not same then error('harness_fma: a and b must have one shape') end
    return {a}
  end ]],
  gradient = [[ function(a, b, y, gy, p) return {gy * b * p.scale, gy * a * p.scale} end ]],
  lua_compute = [[ function(ins, outs, p)
    local a, b, y = ins[1], ins[2], outs[1]
    local nd, scale, shift = a:dim(), p.scale, p.shift
    local size, sa, sb = {}, {}, {}
    for d = 1, nd do size[d], sa[d], sb[d] = a:size(d), a:stride(d), b:stride(d) end
    local idx = {}
    return function()
      local n = y:numel()
      if n == 0 then return end
      local ap, bp, yp = a:data(), b:data(), y:data()   -- data() is element 1 of the view (offset applied)
      for d = 1, nd do idx[d] = 0 end
      local oa, ob = 0, 0
      for i = 0, n - 1 do
        yp[i] = scale * ap[oa] * bp[ob] + shift
        for d = nd, 1, -1 do                             -- odometer over the view's sizes
          if idx[d] + 1 < size[d] then
            idx[d], oa, ob = idx[d] + 1, oa + sa[d], ob + sb[d]
            break
          end
          oa, ob, idx[d] = oa - idx[d] * sa[d], ob - idx[d] * sb[d], 0
        end
      end
    end
  end ]]}

register{
  name = 'harness_identity', num_inputs = 1,
  doc = 'a copy of x (any dtype), by a plain loop on the CPU and the device copy on cuda',
  infer_shape = 'same',
  lua_compute = {cpu = [[ function(ins, outs, p)
    local x, y = ins[1], outs[1]
    return function()
      local n, xp, yp = x:numel(), x:data(), y:data()
      for i = 0, n - 1 do yp[i] = xp[i] end
    end
  end ]], cuda = [[ function(ins, outs, p, K)
    local x, y = ins[1], outs[1]
    return function() K.copy(y, x) end
  end ]]}}

local FLOATS = {'float32', 'float64'}
add{name = 'harness_cube', op = 'harness_cube', inputs = {input({3, 4, 2})}, dtypes = FLOATS,
    ref = function(ins) return L.map(ins[1], function(x) return x * x * x end) end, empty = {{{0, 3}}}}
add{name = 'harness_cube_scalar', op = 'harness_cube', inputs = {input({})}, dtypes = FLOATS,
    ref = function(ins) return L.map(ins[1], function(x) return x * x * x end) end}

local function fma_ref(ins, p)
  local a, b, out = ins[1], ins[2], {}
  for i = 1, #a.data do out[i] = (p.scale or 1) * a.data[i] * b.data[i] + (p.shift or 0) end
  return L.array(L.copy(a.shape), out)
end
add{name = 'harness_fma', op = 'harness_fma', inputs = {input({2, 3, 4}), input({2, 3, 4})},
    params = {scale = 1.5, shift = -0.25}, dtypes = FLOATS, ref = fma_ref, empty = {{{2, 0}, {2, 0}}}}
add{name = 'harness_fma_defaults', op = 'harness_fma', inputs = {input({5, 2}), input({5, 2})}, dtypes = FLOATS,
    ref = fma_ref}
add{name = 'harness_fma_scalar', op = 'harness_fma', inputs = {input({}), input({})}, params = {scale = 2},
    dtypes = FLOATS, ref = fma_ref}
add{name = 'harness_fma_shapes', op = 'harness_fma', inputs = {input({2, 3}), input({3, 2})},
    error = 'a and b must have one shape'}

add{name = 'harness_identity', op = 'harness_identity', inputs = {input({4, 3})},
    dtypes = {'float32', 'float64', 'int32', 'int64', 'uint8'}, exact = true,
    ref = function(ins) return L.map(ins[1], function(x) return x end) end}

return cases
