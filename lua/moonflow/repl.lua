-- REPL helpers the moonflow executable calls (src/cli/repl.cc): formatting results and tab completion.
local mf = require 'moonflow'
local M = {}

local function short(v)
  if type(v) == 'string' then return ('%q'):format(v) end
  if mf.is_tensor(v) then return ('tensor(%s, %s)'):format(v:shape_str(), v:dtype()) end
  return tostring(v)
end

-- One value as the REPL shows it: tensors in full (elided when large), tables one level deep.
local function show_one(v)
  if mf.is_tensor(v) then return tostring(v) end
  if type(v) ~= 'table' or getmetatable(v) and getmetatable(v).__tostring then return short(v) end
  local parts, n = {}, 0
  for i = 1, #v do
    n = n + 1
    if n > 20 then parts[#parts + 1] = '...' break end
    parts[#parts + 1] = short(v[i])
  end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == 'number' and k >= 1 and k <= #v and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(keys) do
    if i > 20 then parts[#parts + 1] = ('... (%d more)'):format(#keys - 20) break end
    local ks = type(k) == 'string' and k:match('^[%a_][%w_]*$') and k or '[' .. short(k) .. ']'
    parts[#parts + 1] = ks .. ' = ' .. short(v[k])
  end
  return '{' .. table.concat(parts, ', ') .. '}'
end

function M.show(...)
  local out = {}
  for i = 1, select('#', ...) do out[i] = show_one((select(i, ...))) end
  return table.concat(out, '\t')
end

-- The names v offers: its own keys, and those of its metatable's __index tables (strings: the
-- string library; moonflow modules: their class chain, kept in __class, and their parameters,
-- buffers and children); tensors: their methods and properties.
local function names_of(v)
  local keys, seen = {}, {}
  -- ops and modules load on first use (ops.lua, init.lua): mf and tensors offer every name once all are
  if v == mf or mf.is_tensor(v) then mf._load_all() end
  local function collect(t, depth)
    if seen[t] or depth > 16 then return end
    if type(t) == 'table' then
      seen[t] = true
      for k in pairs(t) do if type(k) == 'string' then keys[k] = true end end
    end
    local mt = getmetatable(t)
    if type(mt) ~= 'table' then return end
    for _, via in ipairs{'__index', '__class'} do
      local nxt = rawget(mt, via)
      if type(nxt) == 'table' then collect(nxt, depth + 1) end
    end
  end
  if mf.is_tensor(v) then
    collect(mf.Tensor, 0)
    keys.shape, keys.ndim, keys.grad = true, true, true  -- its properties (tensor.lua's index)
  else
    collect(v, 0)
    if type(v) == 'table' and rawget(v, '_is_module') then
      for _, f in ipairs{'_params', '_buffers', '_children'} do
        if type(rawget(v, f)) == 'table' then for k in pairs(rawget(v, f)) do keys[tostring(k)] = true end end
      end
    end
  end
  return keys
end

-- Candidates for the word being completed: globals and keywords; after `a.b.` the fields of a.b;
-- after `obj:` only the methods (function values) obj offers, its own and its class's.
function M.complete(word)
  local prefix, sep, last = word:match('^(.*)([%.:])([%w_]*)$')
  local keys, lead, v = nil, '', nil
  if prefix then
    v = _G
    for part in prefix:gmatch('[^%.:]+') do
      if type(v) ~= 'table' and type(v) ~= 'string' and not mf.is_tensor(v) then return {} end
      local ok, nv = pcall(function() return v[part] end)
      if not ok or nv == nil then return {} end
      v = nv
    end
    keys = names_of(v)
    lead = prefix .. sep
  else
    last = word
    keys = {}
    for k in pairs(_G) do if type(k) == 'string' then keys[k] = true end end
  end
  local out = {}
  for k in pairs(keys) do
    if k:sub(1, #last) == last and k:sub(1, 1) ~= '_' then
      local keep = true
      if sep == ':' then
        local ok, val = pcall(function() return v[k] end)
        keep = ok and type(val) == 'function'
      end
      if keep then out[#out + 1] = lead .. k end
    end
  end
  if not prefix then
    local keywords = {'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'if', 'in',
                      'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while'}
    for _, k in ipairs(keywords) do if k:sub(1, #last) == last then out[#out + 1] = k end end
  end
  table.sort(out)
  local uniq = {}
  for i, c in ipairs(out) do if c ~= out[i - 1] then uniq[#uniq + 1] = c end end
  return uniq
end

return M
