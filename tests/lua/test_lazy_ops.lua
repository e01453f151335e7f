-- Ops are installed on first use (ops.lua): loading moonflow reads only the registry's names, and the
-- first lookup of an op's name or alias, in mf, mf._ops, mf._aliases, the tensor methods or
-- mf._ops_by_index, makes its function; modules other than the eager core load on the first lookup of
-- a name they define (init.lua). The first checks run before this file uses any op or module, so
-- they see the state loading left: a module that captured every op at load would fail them.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local C = require 'moonflow.ffi_abi'

local function installed()
  local n = 0
  for _ in pairs(mf._ops) do n = n + 1 end  -- pairs sees what is there; it installs nothing
  return n
end

T.test('loading moonflow installs few ops', function()
  local n = installed()
  assert(n < 16, ('%d of %d ops were installed at load'):format(n, tonumber(C.mf_op_count())))
  for _, name in ipairs{'cumprod', 'prod', 'outer', 'erf', 'logsumexp'} do
    T.eq(rawget(mf, name), nil, 'mf.' .. name .. ' before its first use')
    T.eq(rawget(mf._ops, name), nil, 'mf._ops.' .. name .. ' before its first use')
  end
end)

-- the names init.lua loads its modules by, and the keys each module adds to mf when it loads
local RAW_AT_LOAD = {}
for k in pairs(mf) do RAW_AT_LOAD[k] = true end

T.test('loading moonflow loads no module that init.lua lists as lazy', function()
  for m, names in pairs(mf._lazy_modules) do
    for _, k in ipairs(names) do T.eq(rawget(mf, k), nil, ('mf.%s (%s.lua) before its first use'):format(k, m)) end
  end
  T.eq(rawget(mf.nn, 'Linear'), nil, 'mf.nn.Linear before its first use')
  T.eq(mf.is_symbol({}), false, 'is_symbol before graph mode loads')
end)

T.test('first use loads a module: nn, optim, graph mode', function()
  local lin = mf.nn.Linear(3, 2)  -- loads nn.lua
  T.eq(#lin:parameters(), 2, 'Linear parameters')
  assert(mf.optim.SGD, 'mf.optim.SGD')  -- loads optim.lua
  local x = mf.placeholder('float32', {2}, 'x')  -- loads graph.lua
  T.eq(mf.is_symbol(x), true, 'is_symbol of a placeholder (the function nn.lua kept as a local too)')
  local y = x * 2 + 1
  T.tensor_eq(mf.Session():run(y, {[x] = mf.tensor{1, 2}}), {3, 5})  -- session.lua
end)

T.test('a method call installs the op, and mf then holds the same function', function()
  local x = mf.tensor{1, 2, 3, 4}
  T.tensor_eq(x:cumprod(1), {1, 2, 6, 24})
  assert(rawget(mf, 'cumprod') ~= nil, 'mf.cumprod after x:cumprod')
  T.eq(rawget(mf, 'cumprod'), rawget(mf.Tensor, 'cumprod'), 'the function mf and the methods hold')
  T.eq(mf._ops.cumprod.name, 'cumprod', 'its record')
end)

T.test('an alias installs its op under every name', function()
  local m = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(mf.reduce_prod(m, 2), {2, 12})  -- TensorFlow's name for prod, looked up first
  T.eq(rawget(mf, 'prod'), rawget(mf, 'reduce_prod'), 'prod and reduce_prod')
  T.eq(mf._aliases.reduce_prod, 'prod', 'the alias table')
  T.eq(mf._aliases.ger, 'outer', 'an alias read from the alias table installs its op')
  T.tensor_eq(mf.ger(mf.tensor{1, 2}, mf.tensor{3, 4}), {{3, 4}, {6, 8}})
end)

T.test('help and the op list see ops that are not installed yet', function()
  T.eq(rawget(mf._ops, 'erf'), nil, 'erf before help')
  local found = false
  for _, name in ipairs(mf.list_ops()) do found = found or name == 'erf' end
  assert(found, 'mf.list_ops() lists erf')
  T.eq(rawget(mf._ops, 'erf'), nil, 'listing installs nothing')
  assert(mf.help_text('erf'):find('mf.erf(x)', 1, true), mf.help_text('erf'))
  assert(mf.help_text('reduce_mean'):find('mf.mean(', 1, true), 'help of an alias: ' .. mf.help_text('reduce_mean'))
end)

T.test('an index installs its op; names that are no op stay missing', function()
  local i = C.mf_op_find('logsumexp')
  assert(i >= 0)
  T.eq(rawget(mf._ops_by_index, i), nil, 'logsumexp before its index is read')
  T.eq(mf._ops_by_index[i].name, 'logsumexp', 'the record at its index')
  T.eq(mf._ops_by_index[tonumber(C.mf_op_count())], nil, 'past the last index')
  T.eq(mf._ops_by_index[-1], nil, 'a negative index')
  T.eq(mf._ops_by_index[0.5], nil, 'a fraction')
  T.eq(mf.no_such_op, nil, 'mf.no_such_op')
  T.eq(mf._ops.no_such_op, nil, 'mf._ops.no_such_op')
  T.errors(function() return mf.tensor{1}:no_such_op() end, 'no_such_op')
end)

T.test('mf._load_all installs every op', function()
  mf._load_all()
  T.eq(installed(), tonumber(C.mf_op_count()), 'installed ops')
  for _, name in ipairs(mf.list_ops()) do assert(rawget(mf, name) ~= nil, 'mf.' .. name) end
end)

T.test('init.lua lists every name a lazy module adds to mf', function()
  mf._load_all()
  local listed = {}
  for _, names in pairs(mf._lazy_modules) do for _, k in ipairs(names) do listed[k] = true end end
  local ops = {}
  for _, name in ipairs(mf.list_ops()) do ops[name] = true end
  for a in pairs(mf._aliases) do ops[a] = true end
  local unlisted = {}
  for k in pairs(mf) do
    if not RAW_AT_LOAD[k] and not listed[k] and not ops[k] then unlisted[#unlisted + 1] = k end
  end
  table.sort(unlisted)
  T.eq(table.concat(unlisted, ' '), '', 'names in mf that no module lists (a first use would not find them)')
  for k in pairs(listed) do assert(rawget(mf, k) ~= nil, 'mf.' .. k .. ' listed but not defined by its module') end
end)

T.finish()
