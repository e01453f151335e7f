-- The C boundary seen from Lua: each kind of exception injected behind the ABI (mf_test_inject)
-- and a real allocation failure arrive as clear Lua errors on the user's line, with the status the
-- ABI reports, and moonflow keeps computing afterwards.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

local function still_works()
  local a = mf.tensor{{1, 2}, {3, 4}}
  T.tensor_eq(mf.matmul(a, a) + 1, {{8, 11}, {16, 23}})
end

local THIS = arg[0]:match('[^/]*$')

-- mf.Graph() calls mf_graph_new before anything else, so the entry named in the message is known.
-- Graph mode loads on first use (init.lua), which calls other entries: it is loaded here, before
-- any fault is armed
local _ = mf.Graph
local kinds = {
  {C.MF_INJECT_ERROR, C.MF_ERR_ARG, 'injected error'},
  {C.MF_INJECT_OUT_OF_MEMORY, C.MF_ERR_MEMORY, 'out of memory: 123456789 bytes asked (injected)'},
  {C.MF_INJECT_BAD_ALLOC, C.MF_ERR_MEMORY, 'out of memory (in mf_graph_new; size not known)'},
  {C.MF_INJECT_STD_EXCEPTION, C.MF_ERR_INTERNAL, 'internal error in mf_graph_new: injected std::logic_error'},
  {C.MF_INJECT_UNKNOWN, C.MF_ERR_INTERNAL, 'internal error in mf_graph_new: unknown exception'},
}

for _, k in ipairs(kinds) do
  local kind, status, text = k[1], k[2], k[3]
  T.test('injected kind ' .. kind .. ' is a Lua error on the caller\'s line', function()
    T.eq(C.mf_test_inject(kind), 0, 'arming')
    local line = debug.getinfo(1, 'l').currentline + 1
    local err = T.errors(function() local g = mf.Graph(); return g end, text)
    T.eq(err, ('%s:%d: %s'):format(arg[0], line, text), 'whole message')
    T.eq(C.mf_last_status(), status, 'status')
    T.eq(mf.Graph() ~= nil, true, 'the next call works')
    still_works()
  end)
end

T.test('an injected fault inside an eager op and a session run leaves both usable', function()
  local a = mf.ones(2, 2)
  C.mf_test_inject(C.MF_INJECT_STD_EXCEPTION)
  local err = T.errors(function() local y = a + a; return y end, 'internal error in mf_', 'injected std::logic_error')
  T.eq(err:find(THIS, 1, true) ~= nil, true, 'blames this file: ' .. err)
  T.tensor_eq(a + a, {{2, 2}, {2, 2}})

  local x = mf.placeholder('float32', {2}, 'x')
  local y = mf.exp(x) * 2
  local sess = mf.Session()
  T.near(sess:run(y, {[x] = mf.zeros(2)}):sum():item(), 4, 1e-6)
  C.mf_test_inject(C.MF_INJECT_BAD_ALLOC)
  T.errors(function() local r = sess:run(y, {[x] = mf.zeros(2)}); return r end, 'out of memory (in mf_')
  T.near(sess:run(y, {[x] = mf.zeros(2)}):sum():item(), 4, 1e-6, 'the same executor runs again')
end)

T.test('disarming and refused kinds', function()
  C.mf_test_inject(C.MF_INJECT_ERROR)
  C.mf_test_inject(C.MF_INJECT_NONE)
  still_works()
  T.eq(C.mf_test_inject(77), C.MF_ERR_ARG, 'kind 77')
  T.eq(ffi.string(C.mf_last_error()):find('kind 77', 1, true) ~= nil, true, 'message names the kind')
  still_works()
end)

T.test('an absurd mf.zeros is an out-of-memory error naming the bytes', function()
  -- 4e15 bytes: more than the x86-64 user address space, refused whatever the overcommit policy
  local line = debug.getinfo(1, 'l').currentline + 1
  local err = T.errors(function() local z = mf.zeros(1e8, 1e7); return z end,
    'zeros', 'out of memory', '4000000000000000 bytes', '100000000x10000000', 'float32')
  T.eq(err:find(THIS .. ':' .. line .. ':', 1, true) ~= nil, true, 'names the line: ' .. err)
  T.eq(C.mf_last_status(), C.MF_ERR_MEMORY, 'status')
  T.errors(function() local z = mf.ones(1e9, 1e9, {dtype = 'float64'}); return z end, 'ones', 'out of memory',
    'more than can be addressed')
  still_works()
end)

T.finish()
