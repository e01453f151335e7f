-- A small, strict JSON reader (RFC 8259) and the string writer the safetensors header needs.
-- Objects decode to Lua tables with their keys in document order in t[json.KEYS] (a duplicate key
-- is an error); arrays to lists; null to json.NULL. Errors are raised as {json = message}.
--
-- Why our own decoder rather than Debian's lua-cjson (whose 5.1 module LuaJIT can load): the engine
-- must stay embeddable with no files at run time, and lua-cjson is a shared object found on
-- package.cpath (Debian ships no static library to link in); the safetensors reader also needs what
-- cjson does not give: key order (errors and tensors in header order), duplicate keys refused, and
-- strict numbers (cjson accepts hex, inf and nan by default). Headers are small, so speed is moot.
local bit = require 'bit'

local json = {}
local KEYS, NULL = {}, setmetatable({}, {__tostring = function() return 'null' end})
json.KEYS, json.NULL = KEYS, NULL

local MAX_DEPTH = 64
local ESC = {[34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [102] = '\f', [110] = '\n', [114] = '\r',
             [116] = '\t'}

local function fail(pos, msg) error({json = ('%s at byte %d of the header'):format(msg, pos)}, 0) end

local function utf8(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then return string.char(0xC0 + bit.rshift(cp, 6), 0x80 + bit.band(cp, 0x3F)) end
  if cp < 0x10000 then
    return string.char(0xE0 + bit.rshift(cp, 12), 0x80 + bit.band(bit.rshift(cp, 6), 0x3F), 0x80 + bit.band(cp, 0x3F))
  end
  return string.char(0xF0 + bit.rshift(cp, 18), 0x80 + bit.band(bit.rshift(cp, 12), 0x3F),
    0x80 + bit.band(bit.rshift(cp, 6), 0x3F), 0x80 + bit.band(cp, 0x3F))
end

-- The decoder's state: the text s and the byte position pos of the next unread character.
local function skip_space(d) d.pos = d.s:find('[^ \t\r\n]', d.pos) or #d.s + 1 end

-- A \uXXXX escape starting at byte i (the backslash), surrogate pairs joined: its UTF-8 text.
local function read_unicode_escape(d, i)
  local s = d.s
  local hex = s:match('^%x%x%x%x', i + 2)
  if not hex then fail(i, 'bad \\u escape') end
  local cp = tonumber(hex, 16)
  d.pos = i + 6
  if cp >= 0xD800 and cp <= 0xDBFF then
    local lo = s:match('^\\u(%x%x%x%x)', d.pos)
    lo = lo and tonumber(lo, 16)
    if not lo or lo < 0xDC00 or lo > 0xDFFF then fail(i, 'unpaired surrogate in \\u escape') end
    cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
    d.pos = d.pos + 6
  elseif cp >= 0xDC00 and cp <= 0xDFFF then
    fail(i, 'unpaired surrogate in \\u escape')
  end
  return utf8(cp)
end

-- A string; d.pos is at its opening quote.
local function read_string(d)
  local s, out = d.s, {}
  d.pos = d.pos + 1
  while true do
    local i = s:find('["\\%c]', d.pos)
    if not i then fail(#s + 1, 'unterminated string') end
    out[#out + 1] = s:sub(d.pos, i - 1)
    local c = s:byte(i)
    if c == 34 then
      d.pos = i + 1
      return table.concat(out)
    end
    if c ~= 92 then fail(i, 'control character in a string') end
    local e = s:byte(i + 1)
    if ESC[e] then
      out[#out + 1] = ESC[e]
      d.pos = i + 2
    elseif e == 117 then
      out[#out + 1] = read_unicode_escape(d, i)
    else
      fail(i, 'bad escape in a string')
    end
  end
end

-- A number in the strict grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
local function read_number(d)
  local m = d.s:match('^-?%d+%.?%d*[eE]?[-+]?%d*', d.pos)
  if not m or not (m:match('^-?0$') or m:match('^-?0[.eE]') or m:match('^-?[1-9]'))
     or m:match('%.$') or m:match('%.[eE]') or m:match('[eE][-+]?$') then
    fail(d.pos, 'malformed number')
  end
  d.pos = d.pos + #m
  return tonumber(m)
end

local read_value

-- Opens a nested value (d.pos at its bracket), checking the depth; true when it is empty.
local function open(d, closer)
  d.depth = d.depth + 1
  if d.depth > MAX_DEPTH then fail(d.pos, ('nesting deeper than %d levels'):format(MAX_DEPTH)) end
  d.pos = d.pos + 1
  skip_space(d)
  if d.s:byte(d.pos) ~= closer then return false end
  d.pos = d.pos + 1
  d.depth = d.depth - 1
  return true
end

-- After an item of an array or object: true at its closing bracket, false after a comma.
local function next_item(d, closer, what)
  skip_space(d)
  local c = d.s:byte(d.pos)
  d.pos = d.pos + 1
  if c == closer then
    d.depth = d.depth - 1
    return true
  end
  if c ~= 44 then fail(d.pos - 1, ("expected ',' or '%s' in %s"):format(string.char(closer), what)) end
  return false
end

local function read_array(d)
  local arr = {}
  if open(d, 93) then return arr end
  repeat arr[#arr + 1] = read_value(d) until next_item(d, 93, 'an array')
  return arr
end

local function read_object(d)
  local obj, keys = {}, {}
  obj[KEYS] = keys
  if open(d, 125) then return obj end
  repeat
    skip_space(d)
    if d.s:byte(d.pos) ~= 34 then fail(d.pos, 'expected a string key') end
    local kpos = d.pos
    local k = read_string(d)
    skip_space(d)
    if d.s:byte(d.pos) ~= 58 then fail(d.pos, "expected ':' after a key") end
    d.pos = d.pos + 1
    if obj[k] ~= nil then fail(kpos, ("duplicate key '%s'"):format(k)) end
    obj[k] = read_value(d)
    keys[#keys + 1] = k
  until next_item(d, 125, 'an object')
  return obj
end

local LITERALS = {t = {'true', true}, f = {'false', false}, n = {'null', NULL}}

function read_value(d)
  skip_space(d)
  local s, pos = d.s, d.pos
  local c = s:byte(pos)
  if c == 123 then return read_object(d) end
  if c == 91 then return read_array(d) end
  if c == 34 then return read_string(d) end
  if c == 45 or (c and c >= 48 and c <= 57) then return read_number(d) end
  local lit = c and LITERALS[string.char(c)]
  if lit and s:sub(pos, pos + #lit[1] - 1) == lit[1] then
    d.pos = pos + #lit[1]
    return lit[2]
  end
  if c == nil then fail(pos, 'unexpected end') end
  fail(pos, ("unexpected character '%s'"):format((string.char(c):gsub('%c', '?'))))
end

-- json.decode(text) -> value; raises {json = "<what> at byte <n> of the header"}.
function json.decode(s)
  local d = {s = s, pos = 1, depth = 0}
  local v = read_value(d)
  skip_space(d)
  if d.pos <= #s then fail(d.pos, 'trailing characters after the JSON value') end
  return v
end

-- json.string(s) -> s as a JSON string literal (quotes, backslashes and control characters escaped).
function json.string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local b = c:byte()
    if b == 34 then return '\\"' elseif b == 92 then return '\\\\' end
    return ('\\u%04x'):format(b)
  end) .. '"'
end

return json
