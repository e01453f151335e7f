-- mf._options: one checker for every options table of the Lua API (sessions, optimizers, schedulers,
-- fit, loaders, modules, register_op, save). Unknown keys name the closest valid one; values are
-- checked against declared rules, and every error blames the user's line.
local raise = require('moonflow.kernels').raise

local O = {}

-- Optimal-string-alignment distance: Levenshtein plus adjacent transpositions ('devcie' -> 'device' is 1).
function O.distance(a, b)
  local la, lb = #a, #b
  if la == 0 then return lb end
  if lb == 0 then return la end
  local d = {}
  for i = 0, la do d[i] = {[0] = i} end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    local ai = a:byte(i)
    for j = 1, lb do
      local cost = ai == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and ai == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end

-- The valid name closest to key (case-insensitive), or nil when none is plausibly meant.
function O.closest(key, names)
  local best, bd
  local k = tostring(key):lower()
  for _, n in ipairs(names) do
    local dd = O.distance(k, n:lower())
    if not bd or dd < bd or (dd == bd and n < best) then best, bd = n, dd end
  end
  if not best then return nil end
  local limit = math.max(1, math.min(3, math.floor(math.max(#k, #best) / 3)))
  if bd <= limit then return best end
  -- a contained name (batch_size: batch) or a long shared prefix (reduce: reduction)
  local b = best:lower()
  if #k >= 3 and (b:find(k, 1, true) or k:find(b, 1, true)) then return best end
  local pre = 0
  while pre < math.min(#k, #b) and k:byte(pre + 1) == b:byte(pre + 1) do pre = pre + 1 end
  if pre >= 4 and pre >= 0.6 * math.min(#k, #b) then return best end
  return nil
end

local function sorted_keys(spec)
  local names = {}
  for n in pairs(spec) do if type(n) == 'string' and n:sub(1, 1) ~= '_' then names[#names + 1] = n end end
  table.sort(names)
  return names
end

-- "<what>: unknown option 'k'; did you mean 'x'? (options: a, b, c)"
function O.unknown_message(what, key, names, hints, noun)
  noun = noun or 'option'
  local shown = type(key) == 'string' and ("'" .. key .. "'") or ('[%s] (a %s key)'):format(tostring(key), type(key))
  local msg = ('%s: unknown %s %s'):format(what, noun, shown)
  local guess = hints and hints[key]
  if not guess and type(key) == 'string' then guess = O.closest(key, names) end
  if guess then msg = msg .. ("; did you mean '%s'?"):format(guess) end
  if #names == 0 then return msg .. ('; it takes no %ss'):format(noun) end
  return msg .. (' (%ss: %s)'):format(noun, table.concat(names, ', '))
end

local function show(v)
  if v == nil then return 'nil' end
  if type(v) == 'number' then
    if v ~= v then return 'nan' end
    if v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
    local s = ('%.15g'):format(v)
    if tonumber(s) ~= v then s = ('%.17g'):format(v) end
    return s
  elseif type(v) == 'string' then return ("'%s'"):format(v)
  elseif type(v) == 'table' and rawget(v, 1) ~= nil and #v <= 8 then
    local parts = {}
    for i = 1, #v do parts[i] = show(v[i]) end
    return '{' .. table.concat(parts, ', ') .. '}'
  end
  return 'a ' .. type(v)
end
O.show = show

-- True when v breaks the number rule r: {integer, min, max, gt, lt, inf = allowed}; NaN never passes.
local function bad_number(v, r)
  if type(v) ~= 'number' or v ~= v then return true end
  if not r.inf and (v == math.huge or v == -math.huge) then return true end
  if r.integer and v ~= math.floor(v) then return true end
  return (r.min and v < r.min) or (r.gt and v <= r.gt) or (r.max and v > r.max) or (r.lt and v >= r.lt) or false
end

-- What a rule expects, for messages
local function expectation(r)
  if r.doc then return r.doc end
  local t = r.type or 'any'
  if t == 'number' or t == 'integer' then
    local parts = {}
    if r.min then parts[#parts + 1] = '>= ' .. show(r.min) end
    if r.gt then parts[#parts + 1] = '> ' .. show(r.gt) end
    if r.max then parts[#parts + 1] = '<= ' .. show(r.max) end
    if r.lt then parts[#parts + 1] = '< ' .. show(r.lt) end
    return (t == 'integer' and 'an integer' or (r.inf and 'a number' or 'a finite number')) .. (#parts > 0 and (' ' .. table.concat(parts, ' and ')) or '')
  elseif t == 'boolean' then return 'true or false'
  elseif t == 'pair' then return 'a pair {a, b} of numbers'
  end
  return 'a ' .. t
end

-- Returns nil when v satisfies rule r, else the text after "option 'k' ".
function O.problem(v, r)
  if type(r) == 'string' then r = {type = r} end
  local t = r.type or 'any'
  if r.one_of then
    for _, ok in ipairs(r.one_of) do if v == ok then return nil end end
    local parts = {}
    for i, ok in ipairs(r.one_of) do parts[i] = show(ok) end
    return ('is %s; expected one of %s'):format(show(v), table.concat(parts, ', '))
  end
  if t == 'number' or t == 'integer' then
    local nr = r
    if t == 'integer' then nr = setmetatable({integer = true}, {__index = r}) end
    if bad_number(v, nr) then return ('is %s; expected %s'):format(show(v), expectation(r)) end
    return nil
  elseif t == 'pair' then
    if type(v) ~= 'table' or #v ~= 2 or bad_number(v[1], r) or bad_number(v[2], r) then
      return ('is %s; expected %s'):format(show(v), expectation(r))
    end
    return nil
  elseif t == 'any' then return nil
  elseif t == 'callable' then
    local mt = getmetatable(v)
    if type(v) == 'function' or (type(mt) == 'table' and mt.__call) then return nil end
    return ('is %s; expected a function'):format(show(v))
  elseif t == 'tensor' then
    if require('moonflow').is_tensor(v) then return nil end
    return ('is %s; expected a tensor'):format(show(v))
  elseif type(v) ~= t then
    return ('is %s; expected %s'):format(show(v), expectation(r))
  end
  if r.check then return r.check(v) end
  return nil
end

-- Validates an options table against spec {key = rule}; rule: a type name ('number', 'integer',
-- 'boolean', 'string', 'table', 'function', 'callable', 'tensor', 'pair', 'any') or a table
-- {type =, min =, max =, gt =, lt =, inf = true, one_of = {...}, doc = 'expected text',
-- check = function(v) return problem_text_or_nil end}. spec._hints maps common wrong names to the
-- right one (learning_rate -> lr); spec._noun replaces the word 'option'. nil opts is an empty table. Returns opts.
function O.check(what, opts, spec)
  if opts == nil then return {} end
  if type(opts) ~= 'table' then
    raise(('%s: expected a table of options, got %s'):format(what, show(opts)))
  end
  local names
  for k, v in pairs(opts) do
    local r = spec[k]
    if r == nil or (type(k) == 'string' and k:sub(1, 1) == '_') then
      names = names or sorted_keys(spec)
      raise(O.unknown_message(what, k, names, spec._hints, spec._noun))
    end
    local p = O.problem(v, r)
    if p then raise(("%s: %s '%s' %s"):format(what, spec._noun or 'option', k, p)) end
  end
  return opts
end

-- Checks one value (a positional argument) against a rule; name is how the message calls it.
function O.value(what, name, v, r)
  local p = O.problem(v, r)
  if p then raise(('%s: %s %s'):format(what, name, p)) end
  return v
end

-- Raises when opts[key] is missing: "<what>: option 'key' is required (expected ...)".
function O.required(what, opts, key, r)
  if opts[key] == nil then
    if type(r) == 'string' then r = {type = r} end
    raise(("%s: option '%s' is required (%s)"):format(what, key, expectation(r)))
  end
  return opts[key]
end

-- Checks only the keys of tbl against a list of valid names (for tables whose values are checked elsewhere).
function O.keys(what, tbl, names, noun)
  if type(tbl) ~= 'table' then return tbl end
  local set = {}
  for _, n in ipairs(names) do set[n] = true end
  for k in pairs(tbl) do
    if not set[k] then
      local sorted = {unpack(names)}
      table.sort(sorted)
      raise(O.unknown_message(what, k, sorted, nil, noun))
    end
  end
  return tbl
end

-- Wraps every function of a method table so that a call with a dot instead of a colon
-- (model.parameters() in Python style) is an error naming the method, not an internal one.
-- is_self(x) tells whether x is a proper receiver; what(name) is how the call should look.
function O.guard_methods(tbl, is_self, what)
  for name, f in pairs(tbl) do
    if type(f) == 'function' and type(name) == 'string' and name:sub(1, 1) ~= '_' then
      tbl[name] = function(self, ...)
        if not is_self(self) then
          raise(('%s: called on %s; call it as %s (with a colon)'):format(name, show(self), what(name)))
        end
        return f(self, ...)
      end
    end
  end
end

-- Common rules
O.rate = {type = 'number', min = 0, doc = 'a finite number >= 0'}
O.prob = {type = 'number', min = 0, max = 1}
O.posint = {type = 'integer', min = 1}
O.nonneg_int = {type = 'integer', min = 0}

-- The one report of a state-dict check (modules and optimizers): raises
-- "<what>: missing keys: a; unexpected keys: b; mismatched: c<suffix>" when any list is non-empty
-- (missing and unexpected count only when strict); sorts the lists in place.
function O.state_errors(what, missing, extra, bad, strict, suffix)
  table.sort(missing); table.sort(extra); table.sort(bad)
  local msgs = {}
  if strict and #missing > 0 then msgs[#msgs + 1] = 'missing keys: ' .. table.concat(missing, ', ') end
  if strict and #extra > 0 then msgs[#msgs + 1] = 'unexpected keys: ' .. table.concat(extra, ', ') end
  if #bad > 0 then msgs[#msgs + 1] = 'mismatched: ' .. table.concat(bad, '; ') end
  if #msgs > 0 then raise(('%s: %s%s'):format(what, table.concat(msgs, '; '), suffix or '')) end
end

return O
