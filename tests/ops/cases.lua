-- THE op case table: every registered op has at least one case here (tests/ops/harness.lua checks
-- that, and runs them; tests/cpp/test_ops.cc drives them from Catch2, filterable by op name).
--
-- A case is a table:
--   name        unique; the op name, or op_<variant>
--   op          the registered op it calls, through mf.<op>
--   inputs      list of input specs: {shape = {...}} plus the value domain (see harness.lua:
--               lo, hi, step, signed, ilo, ihi, nonzero, nan, dtype, number)
--   params      named params; passed as a trailing table, unless args is given
--   args        the positional arguments after the inputs, as a user writes them (params still
--               tells the reference what they mean)
--   dtypes      dtypes to run (default float32 and float64); inputs without a fixed dtype take it
--   dtype_param creation ops: the run's dtype is passed as the dtype param
--   out_dtype   dtype of the outputs: a name or function(dtype, params); default the run's dtype
--               (an array the reference returns may name its own: {shape=, data=, dtype=})
--   ref         function(ins, params, dtype) -> array or list of arrays {shape=, data=[, scale=]}:
--               plain Lua on the input values (already rounded to the dtype); never calls mf.
--               With writes, the list also carries written = {[i] = array}: input i's new value
--   writes      inputs the op writes in place (the stateful ops), by index: each must then hold
--               the reference's written[i] and nothing outside its view may change, where other
--               inputs must come back unmodified; a written input never takes the expanded layout
--   exact       compare exactly (default: relative 1e-5 for float32, 1e-12 for float64, taken of
--               the reference's scale, else |value|, never below 1e-6)
--   rtol        per-dtype relative tolerance overriding the default (say why)
--   empty       list of alternative input shape lists with a size-0 dim, run in every layout too
--   error       the op must raise an error containing this text
--   check_out   function(outs, ins) -> nil or message: extra checks on the results
--   leaves_device  the outputs may be on another device than the inputs (to)
--   eager_only  run eagerly only, never in a graph (an output size that depends on the values)
--   check       function(mf, dtype, T) -> nil or message: for ops checked by properties (rand);
--               T holds the harness's op-free readers: T.read(t), T.shape(t), T.dtype(t)
local dir, L = ...
local cases = {}
for _, family in ipairs{'elemwise', 'reduce', 'shape', 'init', 'graph', 'nn', 'conv', 'fused', 'transfer', 'shape_ext', 'inplace', 'sort', 'index', 'stats', 'linalg'} do
  local chunk = assert(loadfile(dir .. '/cases_' .. family .. '.lua'))
  for _, c in ipairs(chunk(L)) do cases[#cases + 1] = c end
end
return cases
