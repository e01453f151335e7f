-- A small test library for the Lua tests: named tests, comparisons against references, expected
-- errors. Each test file ends with T.finish(), which exits non-zero when anything failed.
local T = {passed = 0, failed = 0}

function T.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    T.passed = T.passed + 1
  else
    T.failed = T.failed + 1
    io.stderr:write(('FAIL %s\n  %s\n'):format(name, tostring(err)))
  end
end

function T.eq(got, want, what)
  if got ~= want then
    error(('%s: got %s, want %s'):format(what or 'value', tostring(got), tostring(want)), 2)
  end
end

function T.near(got, want, tol, what)
  tol = tol or 1e-6
  local ok = got == want or math.abs(got - want) <= tol * math.max(1, math.abs(want))
  if not ok then error(('%s: got %.17g, want %.17g (tol %g)'):format(what or 'value', got, want, tol), 2) end
end

-- Checks that fn raises an error whose message contains every given plain-text fragment.
-- With MF_MESSAGES_LOG set, each message is appended to that file with its caller's file (for
-- test_messages.lua, which checks that no raw internal message reaches users).
local messages_log = os.getenv('MF_MESSAGES_LOG')
function T.errors(fn, ...)
  local ok, err = pcall(fn)
  if ok then error('expected an error, got none', 2) end
  err = tostring(err)
  if messages_log then
    local f = io.open(messages_log, 'a')
    if f then
      local src = debug.getinfo(2, 'S').short_src:match('[^/]*$')
      f:write(src, '\t', (err:gsub('\n', '\\n')), '\n')
      f:close()
    end
  end
  for _, frag in ipairs{...} do
    if not err:find(frag, 1, true) then
      error(("error message %q lacks %q"):format(err, frag), 2)
    end
  end
  return err
end

-- Element-wise comparison of a tensor with a nested Lua table of numbers.
function T.tensor_eq(t, want, tol, what)
  local got = t:totable()
  local function rec(g, w, path)
    if type(w) == 'table' then
      if type(g) ~= 'table' or #g ~= #w then error(('%s%s: shape differs'):format(what or 'tensor', path), 3) end
      for i = 1, #w do rec(g[i], w[i], path .. '[' .. i .. ']') end
    else
      local ok = g == w or (tol and math.abs(g - w) <= tol * math.max(1, math.abs(w)))
      if not ok then error(('%s%s: got %.17g, want %.17g'):format(what or 'tensor', path, g, w), 3) end
    end
  end
  rec(got, want, '')
end

function T.finish()
  print(('%d passed, %d failed'):format(T.passed, T.failed))
  os.exit(T.failed == 0 and 0 or 1, true)  -- closing the state runs the finalizers (LeakSanitizer)
end

-- The bytes of t's elements in row-major order (a contiguous copy first when t is a view).
local BYTES = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
function T.bytes(t)
  local ffi = require 'ffi'
  local c = t:contiguous()
  return ffi.string(ffi.cast('const char *', c:data()), c:numel() * BYTES[c:dtype()])
end

-- f() run with 1 and then 2 threads (mf.set_num_threads) must give the same dtype and bytes in each
-- of its results; returns the 1-thread results.
function T.same_bits(what, f)
  local mf = require 'moonflow'
  local before = mf.get_num_threads()
  mf.set_num_threads(1)
  local one = {f()}
  mf.set_num_threads(2)
  local two = {f()}
  mf.set_num_threads(before)
  T.eq(#one, #two, what .. ': result count')
  for k = 1, #one do
    T.eq(one[k]:dtype(), two[k]:dtype(), what .. ': dtype')
    T.eq(T.bytes(one[k]) == T.bytes(two[k]), true, what .. ': result ' .. k .. ' differs between 1 and 2 threads')
  end
  return unpack(one)
end

return T
