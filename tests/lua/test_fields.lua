-- Tensor header fields in Lua: the mf_tensor struct's C fields have private names in the Lua view
-- (_shape, _ndim, _ptr, ...: src/core/types.h, MF_FIELD), so x.shape and x.ndim are read-only
-- properties (x:size(), 1-based as every Lua index, and x:dim()), the C names read as errors that
-- say what to use, and a write to any public name raises instead of corrupting the header. Graph
-- symbols and nn.Parameters answer x.shape and x.ndim the same way. Every expected size below is
-- worked out by hand from the constructor's arguments.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local mf = require 'moonflow'

-- x.shape against a hand-written list: length, each size, and what lies past either end
local function shape_is(x, want, what)
  local s = x.shape
  T.eq(#s, #want, what .. ': #x.shape')
  for i = 1, #want do
    T.eq(s[i], want[i], ('%s: x.shape[%d]'):format(what, i))
    T.eq(s[i], x:size(i), ('%s: x.shape[%d] vs x:size(%d)'):format(what, i, i))
  end
  T.eq(s[0], nil, what .. ': x.shape[0] (1-based: nothing at 0)')
  T.eq(s[#want + 1], nil, what .. ': past the last dim')
  T.eq(x.ndim, #want, what .. ': x.ndim')
  T.eq(x.ndim, x:dim(), what .. ': x.ndim vs x:dim()')
end

T.test('x.shape[i] is x:size(i), 1-based, on contiguous tensors and views', function()
  local x = mf.zeros(2, 3, 4)
  shape_is(x, {2, 3, 4}, 'contiguous 2x3x4')
  T.eq(mf.is_size(x.shape), true, 'a size object')
  T.eq(x.shape == x:size(), true, 'x.shape == x:size()')
  T.eq(tostring(x.shape), '2x3x4')
  T.eq(x.shape:numel(), 24)
  shape_is(x:transpose(1, 3), {4, 3, 2}, 'transpose(1, 3)')
  shape_is(x:permute(2, 3, 1), {3, 4, 2}, 'permute(2, 3, 1)')
  shape_is(x:narrow(2, 2, 2), {2, 2, 4}, 'narrow(2, 2, 2)')
  shape_is(x:select(1, 2), {3, 4}, 'select(1, 2)')
  shape_is(mf.ones(3, 1):expand(3, 5), {3, 5}, 'expand(3, 5)')
  shape_is(mf.ones(4):expand(2, 4), {2, 4}, 'expand of a 1-D tensor')
  shape_is(x:reshape(6, 4), {6, 4}, 'reshape(6, 4)')
  shape_is(mf.zeros(0, 3), {0, 3}, 'an empty 0x3 tensor')
  shape_is(mf.zeros(7), {7}, '1-D')
end)

T.test('a 0-dim tensor: x.shape is the empty size, x.ndim 0', function()
  local s = mf.tensor{1, 2, 3}:sum()
  shape_is(s, {}, '0-dim sum')
  T.eq(tostring(s.shape), 'scalar')
  T.eq(s.shape:numel(), 1)
  shape_is(mf.tensor(5), {}, 'mf.tensor(5)')
end)

T.test('x.shape is a fresh list: x.shape[1] = 5 leaves the tensor alone', function()
  local x = mf.zeros(2, 3)
  local s = x.shape
  s[1] = 5
  x.shape[2] = 9  -- edits a list nobody keeps
  T.eq(s[1], 5)
  shape_is(x, {2, 3}, 'after editing the lists')
  T.eq(x.shape ~= s, true, 'each read is a new list')
  T.eq(#mf.ones(x.shape):totable(), 2, 'the list still works as sizes')
end)

T.test('writing x.shape or x.ndim raises: read-only, and what to use instead', function()
  local x = mf.zeros(2, 3)
  T.errors(function() x.shape = {3, 2} end, 'x.shape', 'read-only', 'x:reshape', 'x:view')
  T.errors(function() x.shape = mf.Size{6} end, 'x.shape', 'read-only')
  T.errors(function() x.ndim = 5 end, 'x.ndim', 'read-only', 'x:dim()')
  T.errors(function() x.ndim = 0 end, 'x.ndim', 'read-only')
  shape_is(x, {2, 3}, 'after the refused writes')
end)

T.test('the C field names read as errors naming what to use', function()
  local x = mf.zeros(2, 3)
  T.errors(function() return x.ptr end, "'ptr'", 'x:data()')
  T.errors(function() return x.count end, "'count'", 'x:numel()')
  T.errors(function() return x.strides end, "'strides'", 'x:stride()')
  T.errors(function() return x.offset end, "'offset'", 'x:storage_offset()')
  T.errors(function() return x.dtype_id end, "'dtype_id'", 'x:dtype()')
  T.errors(function() return x.device_id end, "'device_id'", 'x:device()')
  T.errors(function() return x.is_contig end, "'is_contig'", 'x:is_contiguous()')
  T.errors(function() return x.nosuchfield end, "'nosuchfield'")
end)

-- a 3x4 float64 tensor 1..12 and its 3x2 view narrow(2, 2, 2): {{2, 3}, {6, 7}, {10, 11}}
local function victims()
  local base = mf.arange(1, 13):double():reshape(3, 4)
  return base, base:narrow(2, 2, 2)
end

T.test('a hostile write to each user-facing name cannot corrupt a tensor', function()
  local names = {'shape', 'ndim', 'strides', 'ptr', 'count', 'offset', 'dtype_id', 'device_id', 'is_contig',
                 'owns', 'autograd', 'store', 'dtype', 'device', 'size', 'data', 'numel', 'T'}
  local values = {9, 0, -1, 2 ^ 40, 'x', {}, {1, 2, 3}, mf.zeros(9), true}
  local base, view = victims()
  for _, t in ipairs{base, view} do
    for _, name in ipairs(names) do
      for _, v in ipairs(values) do
        T.errors(function() t[name] = v end, name)
      end
    end
  end
  collectgarbage()
  shape_is(base, {3, 4}, 'base after the writes')
  shape_is(view, {3, 2}, 'view after the writes')
  T.eq(view:stride(1), 4); T.eq(view:stride(2), 1); T.eq(view:storage_offset(), 2)
  T.eq(view:is_contiguous(), false); T.eq(view:dtype(), 'float64'); T.eq(view:device(), 'cpu')
  T.eq(base:numel(), 12); T.eq(view:numel(), 6)
  T.tensor_eq(view, {{2, 3}, {6, 7}, {10, 11}})
  T.tensor_eq(view + 1, {{3, 4}, {7, 8}, {11, 12}})
  T.eq(view:sum():item(), 39)
  T.eq(base:sum():item(), 78)
  view:fill(0)  -- still writes through its strides into base
  T.tensor_eq(base, {{1, 0, 0, 4}, {5, 0, 0, 8}, {9, 0, 0, 12}})
end)

T.test('x.grad stays writable (the one settable field), x.shape untouched by it', function()
  local w = mf.ones(2, 2, {requires_grad = true})
  w.grad = mf.full({2, 2}, 3)
  T.tensor_eq(w.grad, {{3, 3}, {3, 3}})
  w.grad = nil
  T.eq(w.grad, nil)
  shape_is(w, {2, 2}, 'w')
end)

T.test('graph symbols: x.shape and x.ndim as on tensors (nil for what is unknown until run)', function()
  mf.reset_default_graph()
  local p = mf.placeholder('float32', {-1, 3}, 'x')
  T.eq(p.ndim, 2)
  T.eq(p.shape[1], nil, 'unknown batch')
  T.eq(p.shape[2], 3)
  local c = mf.constant(mf.zeros(3, 4))
  T.eq(c.ndim, 2); T.eq(c.shape[1], 3); T.eq(c.shape[2], 4)
  local y = mf.matmul(p, c)
  T.eq(y.ndim, 2); T.eq(y.shape[1], nil); T.eq(y.shape[2], 4)
  local s = mf.sum(y)
  T.eq(s.ndim, 0); T.eq(#s.shape, 0)
  local open = mf.placeholder('float32', nil, 'any')
  T.eq(open.shape, nil, 'a placeholder of unknown rank'); T.eq(open.ndim, nil)
  T.errors(function() p.shape = {2, 3} end, 'x.shape', 'read-only')
  T.errors(function() p.ndim = 1 end, 'x.ndim', 'read-only')
  p.shape[2] = 99  -- a fresh list: the placeholder still takes ?x3
  T.eq(p:size(2), 3)
  local sess = mf.Session()
  local out = sess:run(y, {[p] = mf.ones(2, 3)})
  shape_is(out, {2, 4}, 'the run result')
  T.errors(function() sess:run(y, {[p] = mf.ones(2, 99)}) end, "'x'", '?x3')
  sess:close()
end)

T.test('nn.Parameter: p.shape and p.ndim are its tensor\'s', function()
  local lin = mf.nn.Linear(3, 2)
  shape_is(lin.weight, {2, 3}, 'Linear(3, 2).weight')
  shape_is(lin.bias, {2}, 'Linear(3, 2).bias')
  T.errors(function() lin.weight.shape = {3, 2} end, 'read-only')
  shape_is(lin.weight.data, {2, 3}, 'the tensor behind it')
end)

T.test('the private fields are the raw 0-based header (for kernel strings)', function()
  local x = mf.zeros(2, 3):t()
  T.eq(x._ndim, 2)
  T.eq(tonumber(x._shape[0]), 3); T.eq(tonumber(x._shape[1]), 2)
  T.eq(tonumber(x._strides[0]), 1); T.eq(tonumber(x._strides[1]), 3)
  T.eq(tonumber(x._count), 6); T.eq(x._is_contig, 0)
end)

T.test('help() documents the properties', function()
  T.eq(mf.help_text('shape'):find('read-only', 1, true) ~= nil, true, "help('shape')")
  T.eq(mf.help_text('shape'):find('t.shape[1] == t:size(1)', 1, true) ~= nil, true, "help('shape') 1-based")
  T.eq(mf.help_text('ndim'):find('t:dim()', 1, true) ~= nil, true, "help('ndim')")
end)

T.test('REPL completion offers the properties', function()
  _G.fields_x = mf.zeros(2)
  local got = require('moonflow.repl').complete('fields_x.nd')
  T.eq(table.concat(got, ','), 'fields_x.ndim')
  got = require('moonflow.repl').complete('fields_x.sha')
  table.sort(got)
  T.eq(table.concat(got, ','), 'fields_x.shape,fields_x.shape_str')
  _G.fields_x = nil
end)

T.finish()
