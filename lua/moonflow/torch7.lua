-- Torch7 habits that are not ops: the mf.Tensor(...) constructor (and FloatTensor, DoubleTensor, ...),
-- and t:apply(fn) / t:map(other, fn), which call a Lua function per element of host memory, so they
-- cannot be registry ops with kernels (a graph cannot hold them either).
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local K, raise, is_tensor, methods = mf.kernels, mf._raise, mf.is_tensor, mf.Tensor
  local HOST = K.HOST
  local PTR = mf._PTR  -- element pointer type per dtype (tensor.lua)
  local value_at = mf._value_at  -- an element as a Lua number, NaNs made canonical (tensor.lua)

  -- mf.Tensor(...): Torch7's constructor, one rule per argument kind --------------------------------
  --   mf.Tensor()            an empty 1-D tensor (0 elements)
  --   mf.Tensor(2, 3)        sizes: a 2x3 tensor, zeroed (mf.empty)
  --   mf.Tensor(t:size())    a size object: those sizes
  --   mf.Tensor({{1, 2}})    a (nested) table of numbers: that data, as torch.Tensor(table)
  --   mf.Tensor(t)           a new tensor sharing t's storage, sizes and strides (torch.Tensor(tensor))
  -- float32; FloatTensor, DoubleTensor, IntTensor, LongTensor, ByteTensor take the same arguments.
  local function construct(dtype, what, a, ...)
    local n = select('#', ...)
    if a == nil and n == 0 then return mf.empty({0}, {dtype = dtype}) end
    if type(a) == 'number' then
      local sizes = {a, ...}
      for i = 1, n + 1 do
        local v = sizes[i]
        if type(v) ~= 'number' or v < 0 or v ~= math.floor(v) then
          raise(('%s: size %s at position %d; expected non-negative integer sizes, e.g. %s(2, 3)')
            :format(what, tostring(v), i, what))
        end
        if v >= 2 ^ 53 then  -- (1e300 reached empty as a wrapped int64)
          raise(('%s: size %.15g at position %d is too large; sizes are below 2^53'):format(what, v, i))
        end
      end
      return mf.zeros(sizes, {dtype = dtype})  -- zeroed (mf.empty's contents are unspecified)
    end
    if n > 0 then
      raise(('%s: %d arguments; expected sizes (numbers), a size object, a nested table of numbers or a tensor')
        :format(what, n + 1))
    end
    if mf.is_size(a) then return mf.zeros(a, {dtype = dtype}) end
    if is_tensor(a) then
      if mf._DTYPE_NAME[a._dtype_id] ~= dtype then
        raise(('%s: the tensor is %s; %s shares storage, so the dtype must match (convert with :type(%q))')
          :format(what, mf._DTYPE_NAME[a._dtype_id], what, dtype))
      end
      return a:detach()  -- a new header of the same storage, with no autograd state
    end
    if type(a) == 'table' then return mf.tensor(a, dtype) end
    raise(('%s: the argument is a %s; expected sizes (numbers), a size object, a nested table of numbers or a tensor')
      :format(what, type(a)))
  end
  getmetatable(methods).__call = function(_, ...) return construct('float32', 'Tensor', ...) end
  for name, dtype in pairs{FloatTensor = 'float32', DoubleTensor = 'float64', IntTensor = 'int32', LongTensor = 'int64',
                           ByteTensor = 'uint8'} do
    mf[name] = function(...) return construct(dtype, name, ...) end
  end

  -- clone as a function too (t:clone() is the tensor method): a contiguous copy, same dtype
  function mf.clone(t) return methods.clone(t) end

  -- apply / map ----------------------------------------------------------------------------------
  local function host_only(t, what)
    if not is_tensor(t) then raise(('%s: expected a tensor, got a %s'):format(what, type(t))) end
    if t._device_id ~= HOST then
      raise(('%s: the tensor is on %s; %s calls a Lua function on each element in host memory: move it with '
        .. ':cpu() first'):format(what, K.device_name(t._device_id), what))
    end
  end

  local function check_fn(fn, what)
    local mt = getmetatable(fn)
    if type(fn) ~= 'function' and not (type(mt) == 'table' and mt.__call) then
      raise(('%s: expected a function, got a %s'):format(what, type(fn)))
    end
  end

  -- The value fn returned, for an element of dtype: numbers and booleans; integers must fit.
  local function stored(v, dtype, what)
    if type(v) == 'boolean' then v = v and 1 or 0 end
    if type(v) ~= 'number' then
      raise(('%s: the function returned a %s; expected a number (or nil to keep the element)'):format(what, type(v)))
    end
    if not mf._IS_FLOAT[dtype] then
      -- as fill_(3.7) on integers: a fractional value is an error, not truncated (nor NaN, inf)
      if v % 1 ~= 0 then
        raise(('%s: the function returned %s, not an integer; the %s tensor holds integers only (convert it with '
          .. ':double() first)'):format(what, tostring(v), mf._DTYPE_NAME[dtype]))
      end
      if C.mf_check_value(v, dtype, what) ~= 0 then raise(ffi.string(C.mf_last_error())) end
    end
    return v
  end

  -- Calls visit(off_t, off_o) for every element of t in row-major order: off_t its offset in t's
  -- storage, off_o that of the matching element of o (broadcast to t's shape), or nil without o.
  local function each(t, o, visit)
    local nd, n = t._ndim, tonumber(t._count)
    if n == 0 then return end
    local size, st, ost, idx = {}, {}, {}, {}
    local lead = o and nd - o._ndim or 0
    for d = 1, nd do
      size[d], st[d], idx[d] = tonumber(t._shape[d - 1]), tonumber(t._strides[d - 1]), 1
      ost[d] = 0
      if o and d > lead and o._shape[d - lead - 1] ~= 1 then ost[d] = tonumber(o._strides[d - lead - 1]) end
    end
    local off, ooff = 0, 0
    for _ = 1, n do
      visit(off, o and ooff)
      for d = nd, 1, -1 do  -- the next index, row-major
        if idx[d] < size[d] then
          idx[d] = idx[d] + 1
          off, ooff = off + st[d], ooff + ost[d]
          break
        end
        off, ooff = off - (size[d] - 1) * st[d], ooff - (size[d] - 1) * ost[d]
        idx[d] = 1
      end
    end
  end

  -- t:apply(fn): fn(v) for every element v of t (row-major), in place; a number returned replaces
  -- the element, nil keeps it. Returns t. Any dtype, any view but an expanded one (its elements
  -- share memory); host memory only.
  function methods.apply(t, fn)
    host_only(t, 'apply')
    check_fn(fn, 'apply')
    if C.mf_check_writable(t, 'apply') ~= 0 then raise(ffi.string(C.mf_last_error())) end
    if t._autograd ~= 0 then mf._check_write_target(t, 'apply') end  -- not into a recorded result (tape.lua)
    local p, dt = ffi.cast(PTR[t._dtype_id], t._ptr), t._dtype_id
    each(t, nil, function(off)
      local r = fn(value_at(t._ptr, dt, off))
      if r ~= nil then p[off] = stored(r, dt, 'apply') end
    end)
    mf._bump_version(t, mf._WRITER.apply)  -- the storage's version counter (tape.lua)
    return t
  end

  -- t:map(other, fn): fn(v, w) for every element v of t and the matching element w of other (which
  -- broadcasts to t's shape), in place as apply. Returns t.
  function methods.map(t, other, fn)
    host_only(t, 'map')
    host_only(other, 'map')
    check_fn(fn, 'map')
    if C.mf_check_writable(t, 'map') ~= 0 then raise(ffi.string(C.mf_last_error())) end
    if t._autograd ~= 0 then mf._check_write_target(t, 'map') end
    local ok = other._ndim <= t._ndim
    for i = 1, other._ndim do
      local s, d = other._shape[other._ndim - i], t._shape[t._ndim - i]
      if ok and s ~= d and s ~= 1 then ok = false end
    end
    if not ok then
      raise(('map: other is %s; it must broadcast to the tensor %s (map writes the tensor, whose shape stays)')
        :format(other:shape_str(), t:shape_str()))
    end
    local p, dt = ffi.cast(PTR[t._dtype_id], t._ptr), t._dtype_id
    each(t, other, function(off, ooff)
      local r = fn(value_at(t._ptr, dt, off), value_at(other._ptr, other._dtype_id, ooff))
      if r ~= nil then p[off] = stored(r, dt, 'map') end
    end)
    mf._bump_version(t, mf._WRITER.map)
    return t
  end
end
