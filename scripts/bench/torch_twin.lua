-- The PyTorch co-process of a bench script (ops.lua runs ops_torch.py, conv.lua conv_torch.py): the
-- twin reads one JSON request a line on stdin and answers one JSON line on a fifo, so its own prints
-- (stdout sent to stderr) never mix with answers. Usage:
--   local Twin = dofile(here .. '/torch_twin.lua')
--   local t = Twin.start{script = here .. '/ops_torch.py', who = 'ops.lua', env = 'OMP_NUM_THREADS=2 ',
--                        hint = 'python3 with torch is needed'}
--   local ans = t:call{cmd = ...}; t:close()
local json = require 'moonflow.json'

local Twin = {}
Twin.__index = Twin

-- a tiny JSON writer for requests (numbers, strings, booleans, lists, string-keyed tables)
local function encode(v)
  local t = type(v)
  if t == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then return 'null' end
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ('%d'):format(v) end  -- sizes stay ints
    return ('%.6g'):format(v)
  end
  if t == 'string' then return json.string(v) end
  if t == 'boolean' then return tostring(v) end
  if t == 'nil' then return 'null' end
  if #v > 0 or next(v) == nil then
    local parts = {}
    for i = 1, #v do parts[i] = encode(v[i]) end
    return '[' .. table.concat(parts, ',') .. ']'
  end
  local keys, parts = {}, {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = json.string(k) .. ':' .. encode(v[k]) end
  return '{' .. table.concat(parts, ',') .. '}'
end
Twin.encode = encode

function Twin.start(o)
  local fifo = os.tmpname()
  os.remove(fifo)
  local made = os.execute('mkfifo ' .. fifo)
  if made ~= 0 and made ~= true then error(o.who .. ': mkfifo ' .. fifo .. ' failed') end
  local py = os.getenv('PYTHON') or '/usr/bin/python3'
  -- if the twin cannot start (no python, no torch), the shell writes the answer the caller would
  -- otherwise wait for forever
  local fatal = ('the PyTorch twin (%s %s) could not start%s'):format(py, o.script, o.hint and ': ' .. o.hint or '')
  local cmd = ('LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} '
    .. '%s%s %s %s 1>&2 || echo %s > %s'):format(o.env or '', py, o.script, fifo, "'" .. encode({fatal = fatal}) .. "'", fifo)
  local w = assert(io.popen(cmd, 'w'))
  local r = assert(io.open(fifo, 'r'))  -- blocks until the twin (or the shell) opens it for writing
  local self = setmetatable({w = w, r = r, fifo = fifo, who = o.who, script = o.script}, Twin)
  local line = r:read('*l')  -- the twin says hello first, unasked
  local hello = line and json.decode(line) or {fatal = 'the PyTorch twin stopped before saying hello'}
  if hello.fatal then
    r:close(); w:close(); os.remove(fifo)
    error(o.who .. ': ' .. hello.fatal, 0)
  end
  self.version = hello.torch
  return self
end

-- sends req, returns the decoded answer (an answer with .error is the caller's to read)
function Twin:call(req)
  self.w:write(encode(req), '\n')
  self.w:flush()
  local line = self.r:read('*l')
  if not line then error(('%s: the PyTorch twin (%s) stopped; see its message above'):format(self.who, self.script)) end
  return json.decode(line)
end

function Twin:close()
  pcall(function() self.w:write('{"cmd":"quit"}\n'); self.w:flush() end)
  self.r:close()
  self.w:close()
  os.remove(self.fifo)
end

return Twin
