-- Every public function and class reachable from mf (and mf.nn, mf.optim, mf.data, mf.train) has
-- help() text: registry docs for ops, the DOCS table of lua/moonflow/help.lua for the rest.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'

local function doc_of(x)
  local ok, text = pcall(mf.help_text, x)
  assert(ok, text)
  return text
end

-- tables that are namespaces or method tables rather than public functions
local SKIP = {nn = true, optim = true, data = true, train = true, autograd = true, kernels = true, Tensor = true, Symbol = true}

T.test('every public function has help text', function()
  local missing = {}
  local function scan(tbl, prefix)
    for k, v in pairs(tbl) do
      if type(k) == 'string' and not k:match('^_') and not SKIP[k] and (type(v) == 'function' or
         (type(v) == 'table' and getmetatable(v) and getmetatable(v).__call)) then
        local text = doc_of(v)
        if text:match('^help: no docs') then missing[#missing + 1] = prefix .. k end
      end
    end
  end
  mf._load_all()  -- ops and modules load on first use; all of mf is listed once all are
  scan(mf, 'mf.')
  for _, ns in ipairs{'nn', 'optim', 'data', 'train', 'autograd'} do scan(mf[ns], 'mf.' .. ns .. '.') end
  table.sort(missing)
  T.eq(table.concat(missing, ', '), '', 'undocumented')
end)

T.test('help of an op prints its registry docs', function()
  assert(doc_of('matmul'):find('transpose_a', 1, true))
  assert(doc_of(mf.reduce_sum):find('mf.sum(x, dim, keepdim)', 1, true))
  assert(doc_of('no_such_thing'):match('^help: no docs'))
end)

T.test('help prints the text once and returns nothing (the REPL would echo a result)', function()
  local printed, real_print = {}, print
  print = function(...) printed[#printed + 1] = table.concat({...}, '\t') end
  local n = select('#', mf.help('matmul'))
  print = real_print
  T.eq(n, 0, 'values returned by help')
  T.eq(#printed, 1, 'print calls')
  T.eq(printed[1], mf.help_text('matmul'), 'printed text')
  assert(printed[1]:find('transpose_a', 1, true))
end)

T.finish()
