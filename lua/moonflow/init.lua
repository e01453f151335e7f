-- moonflow: require 'moonflow' returns the mf table (also the global `mf` in the moonflow executable).
local mf = {_VERSION = '0.1.0'}
package.loaded['moonflow'] = mf

local C = require 'moonflow.ffi_abi'
-- Room for the JIT's traces: an eager training step runs a few hundred distinct paths (dispatch,
-- tape, gradient rules, modules), and with LuaJIT's defaults (1000 traces, 512 KB of machine code)
-- the traces filled the area every few hundred steps; each full area flushed every trace and
-- compiled them all again (9% of a small MLP's eager step went to the compiler). A host may set
-- its own limits after loading moonflow.
if jit and jit.opt then jit.opt.start('maxtrace=8000', 'maxmcode=8192') end
mf._VERSION = require('ffi').string(C.mf_version())
mf.kernels = require 'moonflow.kernels'
require('moonflow.tensor')(mf)
require('moonflow.ops')(mf)
require('moonflow.torch7')(mf)
require('moonflow.tape')(mf)
require('moonflow.help')(mf)

-- The other modules load on first use, as ops do (ops.lua): the first lookup of a name one of them
-- defines (mf.nn.Linear, mf.optim, mf.placeholder, mf.save, ...) loads it. An eager program carries
-- only the Lua heap it uses, and every collector cycle marks and sweeps the whole heap:
-- scripts/bench/gc_cycle.lua. LAZY lists each module's names in mf; tests/lua/test_lazy_ops.lua
-- checks the list against what loading every module defines. A module's own lookups load the modules
-- it needs. Until graph mode loads, no value is a graph symbol.
local LAZY = {
  graph = {'Graph', 'Symbol', 'Variable', '_graph_call', '_set_default_graph', '_shape_text', 'add_update_op',
           'constant', 'get_default_graph', 'global_variables', 'global_variables_initializer', 'group',
           'is_operation', 'placeholder', 'reset_default_graph', 'trainable_variables', 'update_ops'},
  autodiff = {'_gradient_rule', '_no_gradient_error', 'gradients'},
  fusion = {'_fuse'},
  session = {'Session'},
  train = {'train'},
  data = {'data'},
  serialize = {'_json_decode', 'load', 'save'},
  nn = {'_holder_operands'},  -- and what mf.nn lacks (below)
  optim = {'optim'},
  fit = {'evaluate', 'fit', 'load_checkpoint', 'save_checkpoint'},
  linalg = {'allclose', 'einsum'},
  cuda = {'cuda'},
}
mf._lazy_modules = LAZY
-- a graph symbol's metatable: made here, filled by graph.lua, so that mf.is_symbol is right before
-- and after graph mode loads (modules keep it in locals)
local symbol_mt = {}
mf._symbol_mt = symbol_mt
function mf.is_symbol(x) return type(x) == 'table' and getmetatable(x) == symbol_mt end  -- getmetatable of a cdata (a tensor) aborts a trace
local loaded, module_of = {}, {}
for m, names in pairs(LAZY) do for _, k in ipairs(names) do module_of[k] = m end end
local function load_module(m)
  if loaded[m] then return false end
  loaded[m] = true  -- first: the module's own lookups may come back here
  local ok, err = pcall(require('moonflow.' .. m), mf)
  if not ok then  -- out of memory half way, say: the next lookup tries again
    loaded[m] = nil
    error(err, 0)
  end
  return true
end
-- loads every module and installs every op: for what lists all of mf (help's search, REPL completion).
-- Any order: a module's own lookups load what it needs first
function mf._load_all()
  for m in pairs(LAZY) do load_module(m) end
  mf._load_all_ops()
end
local mt = getmetatable(mf)
local op_index = mt.__index
mt.__index = function(t, k)
  local v = op_index(t, k)
  if v ~= nil then return v end
  local m = module_of[k]
  if m and load_module(m) then return rawget(t, k) end
end
-- mf.nn exists from the start (ops.lua puts softmax and the like in it): a name it lacks loads nn.lua
setmetatable(mf.nn, {__index = function(t, k)
  if load_module('nn') then return rawget(t, k) end
end})
return mf
