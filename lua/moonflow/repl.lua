-- REPL helpers the moonflow executable calls: formatting results and tab completion.
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

-- Candidates for the word being completed: globals, a.b.c fields, and t:method names.
function M.complete(word)
  local prefix, sep, last = word:match('^(.*)([%.:])([%w_]*)$')
  local scope, lead = _G, ''
  if prefix then
    local v = _G
    for part in prefix:gmatch('[^%.:]+') do
      if type(v) ~= 'table' and not mf.is_tensor(v) then return {} end
      local ok, nv = pcall(function() return v[part] end)
      if not ok then return {} end
      v = nv
    end
    if mf.is_tensor(v) then scope = mf.Tensor
    elseif type(v) == 'table' then scope = v
    else return {} end
    lead = prefix .. sep
  else
    last = word
  end
  local out = {}
  local function add(t)
    for k in pairs(t) do
      if type(k) == 'string' and k:sub(1, #last) == last and k:sub(1, 1) ~= '_' then out[#out + 1] = lead .. k end
    end
  end
  add(scope)
  if scope == _G then
    local keywords = {'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'if', 'in',
                      'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while'}
    for _, k in ipairs(keywords) do if k:sub(1, #last) == last then out[#out + 1] = k end end
  end
  table.sort(out)
  local uniq = {}
  for i, v in ipairs(out) do if v ~= out[i - 1] then uniq[#uniq + 1] = v end end
  return uniq
end

return M
