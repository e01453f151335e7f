-- Helpers for the C++ embedding API (src/lua/engine.cc), which calls them through the Lua C API
-- under lua_pcall: tensors cross zero-copy (C++ fills the empty structs made here with
-- mf_tensor_share), and dotted names resolve here, where a failed lookup is an ordinary Lua error.
local ffi = require 'ffi'
local mf = require 'moonflow'

local T = mf._T
local E = {}

-- An empty mf_tensor cdata (owns = 0, no storage) with the tensor metatype and its __gc.
function E.new_tensor() return T() end

-- What a cdata value is to C++: true for a tensor, a number for a boxed 64-bit integer, else nil.
function E.cdata_kind(v)
  if ffi.istype(T, v) then return true end
  local ok, n = pcall(tonumber, v)
  return ok and n or nil
end

local function split(path, what)
  local head, method = path:match('^(.-):([%a_][%w_]*)$')
  head = head or path
  local keys = {}
  for k in (head .. '.'):gmatch('([^.]*)%.') do
    if not k:match('^[%a_][%w_]*$') then
      error(("%s: '%s' is not a name (expected name, a.b.c or a.b:method)"):format(what, path), 0)
    end
    keys[#keys + 1] = k
  end
  return keys, method
end

-- The value at path (nil when a table on the way is missing).
function E.get(path)
  local keys = split(path, 'get')
  local v = _G
  for _, k in ipairs(keys) do
    if v == nil then return nil end
    v = v[k]
  end
  return v
end

-- Sets the value at path; the tables on the way must exist.
function E.set(path, value)
  local keys = split(path, 'set')
  local t = _G
  for i = 1, #keys - 1 do
    t = t[keys[i]]
    if type(t) ~= 'table' then
      error(("set: '%s' is %s, so '%s' cannot be set"):format(table.concat(keys, '.', 1, i),
            t == nil and 'nil' or 'a ' .. type(t), path), 0)
    end
  end
  t[keys[#keys]] = value
end

-- The function at path and, for a.b:m, the object a.b to pass as self (with a flag saying so).
function E.callee(path)
  local keys, method = split(path, 'call')
  local fn = E.get(table.concat(keys, '.'))
  local self = nil
  if method then
    if fn == nil then error(("call: '%s' is nil"):format(table.concat(keys, '.')), 0) end
    self, fn = fn, fn[method]
  end
  local tf = type(fn)
  if tf ~= 'function' and tf ~= 'table' and tf ~= 'userdata' and tf ~= 'cdata' then
    error(("call: '%s' is %s; expected a function"):format(path, fn == nil and 'not defined (nil)' or 'a ' .. tf), 0)
  end
  return fn, method ~= nil, self
end

return E
