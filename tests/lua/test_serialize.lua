-- mf.save / mf.load: bit-exact round trips for every dtype, nested names, empty and 0-dim tensors,
-- metadata; a hand-built golden file; every kind of corrupt file; atomic writes.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'

local ITEMSIZE = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
local CTYPE = {float32 = 'uint32_t *', float64 = 'uint64_t *', int32 = 'int32_t *', int64 = 'int64_t *', uint8 = 'uint8_t *'}

local dir = io.popen('mktemp -d /tmp/mf_serialize.XXXXXX'):read('*l')
assert(dir and dir ~= '', 'mktemp -d failed')
local function path(name) return dir .. '/' .. name end

local function bytes(t)
  local c = t:is_contiguous() and t or t:contiguous()
  return ffi.string(c._ptr, c:numel() * ITEMSIZE[c:dtype()])
end
local function read_file(p)
  local f = assert(io.open(p, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end
local function write_file(p, s)
  local f = assert(io.open(p, 'wb'))
  f:write(s)
  f:close()
end
local function listdir()
  local names = {}
  for n in io.popen('ls -A ' .. dir):lines() do names[#names + 1] = n end
  table.sort(names)
  return table.concat(names, ' ')
end
-- little-endian bytes of an unsigned integer, independent of the code under test
local function le(v, n)
  local out = {}
  for i = 1, n do out[i] = string.char(v % 256); v = math.floor(v / 256) end
  return table.concat(out)
end
-- a safetensors file from a header string (padded to 8 unless pad == false) and raw data bytes
local function st_file(header, data, pad)
  if pad ~= false then header = header .. (' '):rep((8 - #header % 8) % 8) end
  return le(#header, 8) .. header .. (data or '')
end

local function same(a, b, what)
  T.eq(a:dtype(), b:dtype(), what .. ' dtype')
  T.eq(a:shape_str(), b:shape_str(), what .. ' shape')
  T.eq(bytes(a) == bytes(b), true, what .. ' bytes identical')
end

-- round trips --------------------------------------------------------------------------------

-- a tensor of each dtype holding its awkward values: NaNs with payloads, -0.0, infinities,
-- subnormals, integer extremes
local function awkward(dtype)
  if dtype == 'float32' then
    local t = mf.zeros(3, 3)
    local p = ffi.cast('uint32_t *', t._ptr)
    local bits = {0x7fc00001, 0xffa5a5a5, 0x7f800001, 0x80000000, 0x7f800000, 0xff800000, 0x00000001, 0x3f800000, 0xc0490fdb}
    for i, b in ipairs(bits) do p[i - 1] = b end
    return t
  elseif dtype == 'float64' then
    local t = mf.zeros(2, 3, {dtype = 'float64'})
    local p = ffi.cast('uint64_t *', t._ptr)
    local bits = {0x7ff8000000000123ULL, 0xfff4000000000001ULL, 0x8000000000000000ULL, 0x7ff0000000000000ULL,
                  0x0000000000000001ULL, 0x400921fb54442d18ULL}
    for i, b in ipairs(bits) do p[i - 1] = b end
    return t
  elseif dtype == 'int32' then
    return mf.tensor({-2147483648, 2147483647, 0, -1, 123456}, 'int32')
  elseif dtype == 'int64' then
    local t = mf.zeros(4, {dtype = 'int64'})
    local p = ffi.cast('int64_t *', t._ptr)
    p[0], p[1], p[2], p[3] = -9223372036854775807LL - 1, 9223372036854775807LL, -1, 4503599627370497LL
    return t
  else
    local t = mf.zeros(16, 16, {dtype = 'uint8'})
    local p = ffi.cast('uint8_t *', t._ptr)
    for i = 0, 255 do p[i] = i end
    return t
  end
end

T.test('round trip is bit-exact for every dtype', function()
  local src = {}
  for dt in pairs(ITEMSIZE) do src[dt] = awkward(dt) end
  mf.save(path('dtypes.safetensors'), src)
  local got, meta = mf.load(path('dtypes.safetensors'))
  for dt, t in pairs(src) do same(got[dt], t, dt) end
  local n = 0
  for _ in pairs(got) do n = n + 1 end
  T.eq(n, 5, 'tensor count')
  T.eq(next(meta), nil, 'no metadata gives an empty table')
  -- the NaN payloads survived as bits, not only as "some NaN"
  T.eq(ffi.cast('uint32_t *', got.float32._ptr)[1], 0xffa5a5a5, 'float32 NaN payload')
  T.eq(ffi.cast('uint32_t *', got.float32._ptr)[3], 0x80000000, 'float32 -0.0')
  T.eq(ffi.cast('uint64_t *', got.float64._ptr)[0] == 0x7ff8000000000123ULL, true, 'float64 NaN payload')
  T.eq(ffi.cast('int64_t *', got.int64._ptr)[0] == -9223372036854775807LL - 1, true, 'int64 min')
end)

T.test('nested tables flatten to dotted names', function()
  local w, b, l1, l2 = mf.randn(3, 2), mf.randn(3), mf.randn(2), mf.ones(1)
  mf.save(path('nested.safetensors'), {fc1 = {weight = w, bias = b}, layers = {{w = l1}, {w = l2}},
                                       ['flat.name'] = mf.ones(2)})
  local got = mf.load(path('nested.safetensors'))
  local names = {}
  for k in pairs(got) do names[#names + 1] = k end
  table.sort(names)
  T.eq(table.concat(names, ' '), 'fc1.bias fc1.weight flat.name layers.1.w layers.2.w', 'names')
  same(got['fc1.weight'], w, 'fc1.weight'); same(got['fc1.bias'], b, 'fc1.bias')
  same(got['layers.1.w'], l1, 'layers.1.w'); same(got['layers.2.w'], l2, 'layers.2.w')
end)

T.test('empty, 0-dim and high-rank tensors', function()
  local src = {e1 = mf.zeros(0), e2 = mf.zeros(0, 3, {dtype = 'int64'}), e3 = mf.zeros(2, 0, 4, {dtype = 'uint8'}),
               s = mf.tensor(3.25), si = mf.tensor(-7, 'int32'), r8 = mf.randn(1, 2, 1, 2, 1, 2, 1, 2)}
  mf.save(path('shapes.safetensors'), src)
  local got = mf.load(path('shapes.safetensors'))
  for k, t in pairs(src) do same(got[k], t, k) end
  T.eq(got.s:dim(), 0); T.eq(got.s:item(), 3.25); T.eq(got.si:item(), -7)
  T.eq(got.e3:size(3), 4)
  -- nothing but empty tensors: a data area of 0 bytes
  mf.save(path('only_empty.safetensors'), {a = mf.zeros(0), b = mf.zeros(5, 0)})
  local g2 = mf.load(path('only_empty.safetensors'))
  T.eq(g2.a:numel(), 0); T.eq(g2.b:shape_str(), '5x0')
  -- no tensors at all
  mf.save(path('none.safetensors'), {})
  T.eq(next((mf.load(path('none.safetensors')))), nil, 'empty table round trip')
end)

T.test('non-contiguous tensors are written contiguously', function()
  local a = mf.randn(4, 5)
  local views = {t = a:t(), n = a:narrow(2, 2, 3), s = a:select(2, 4), e = mf.tensor{{1}, {2}}:expand(2, 3),
                 p = mf.randn(2, 3, 4):permute(3, 1, 2)}
  mf.save(path('views.safetensors'), views)
  local got = mf.load(path('views.safetensors'))
  for k, v in pairs(views) do
    T.eq(got[k]:is_contiguous(), true, k .. ' contiguous')
    same(got[k], v:contiguous(), k)
  end
  T.tensor_eq(got.e, {{1, 1, 1}, {2, 2, 2}})
end)

T.test('metadata round trip, with characters JSON must escape', function()
  local meta = {format = 'pt', epoch = '12', note = 'quote " backslash \\ newline \n tab \t ctl \1 utf8 \226\130\172',
                empty = ''}
  mf.save(path('meta.safetensors'), {x = mf.ones(2)}, meta)
  local got, m = mf.load(path('meta.safetensors'))
  for k, v in pairs(meta) do T.eq(m[k], v, 'metadata ' .. k) end
  local n = 0
  for _ in pairs(m) do n = n + 1 end
  T.eq(n, 4, 'metadata count')
  T.tensor_eq(got.x, {1, 1})
end)

T.test('the file layout: length, padded JSON header, data in offset order', function()
  mf.save(path('layout.safetensors'), {b = mf.tensor({1, 2}, 'uint8'), a = mf.tensor({-1}, 'int32')}, {k = 'v'})
  local s = read_file(path('layout.safetensors'))
  local header = '{"__metadata__":{"k":"v"},"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},'
    .. '"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}'
  local padded = header .. (' '):rep((8 - #header % 8) % 8)
  T.eq(#padded % 8, 0)
  T.eq(s, le(#padded, 8) .. padded .. '\255\255\255\255\1\2', 'exact file bytes')
  -- wider items first, so every tensor's data starts aligned to its item size
  mf.save(path('align.safetensors'), {a = mf.tensor({1, 2, 3}, 'uint8'), b = mf.tensor{1}, c = mf.tensor({1}, 'float64'),
                                      d = mf.tensor({1}, 'int32')})
  local s2 = read_file(path('align.safetensors'))
  local n = s2:byte(1) + 256 * s2:byte(2)
  local h = mf._json_decode(s2:sub(9, 8 + n))
  local want = {c = '0,8', b = '8,12', d = '12,16', a = '16,19'}
  for k, v in pairs(want) do T.eq(table.concat(h[k].data_offsets, ','), v, k .. ' offsets') end
end)

T.test('a hand-built golden file loads', function()
  -- header keys in an order unlike the data order, whitespace, escapes, metadata last
  local header = ' { "w\\u00e9ight" : {"shape": [2], "dtype": "F32", "data_offsets": [8, 16]},\n'
    .. '"n": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]},'
    .. '"u": {"dtype": "U8", "shape": [1, 3], "data_offsets": [16, 19]},'
    .. '"d": {"dtype": "F64", "shape": [1], "data_offsets": [19, 27]},'
    .. '"i": {"dtype": "I32", "shape": [0, 2], "data_offsets": [27, 27]},'
    .. '"__metadata__": {"format": "pt", "q": "a\\"b\\\\c\\n\\u20ac\\ud83d\\ude00"}}'
  local data = '\253\255\255\255\255\255\255\255'   -- int64 -3
    .. '\0\0\192\63' .. '\0\0\0\192'                  -- float32 1.5, -2.0
    .. '\7\8\255'                                    -- uint8 7, 8, 255
    .. '\0\0\0\0\0\0\240\191'                        -- float64 -1.0
  write_file(path('golden.safetensors'), st_file(header, data, false))
  local got, meta = mf.load(path('golden.safetensors'))
  T.eq(got.n:dtype(), 'int64'); T.eq(got.n:dim(), 0); T.eq(got.n:item(), -3)
  local w = got['w\195\169ight']
  T.eq(w:dtype(), 'float32'); T.tensor_eq(w, {1.5, -2})
  T.eq(got.u:dtype(), 'uint8'); T.tensor_eq(got.u, {{7, 8, 255}})
  T.eq(got.d:dtype(), 'float64'); T.tensor_eq(got.d, {-1})
  T.eq(got.i:dtype(), 'int32'); T.eq(got.i:shape_str(), '0x2')
  T.eq(meta.format, 'pt'); T.eq(meta.q, 'a"b\\c\n\226\130\172\240\159\152\128')
end)

-- corrupt files ------------------------------------------------------------------------------

local function bad(name, content, ...)
  local p = path(name)
  write_file(p, content)
  return T.errors(function() mf.load(p) end, "mf.load: '" .. p .. "'", ...)
end
local GOOD = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
local DATA8 = '\0\0\128\63\0\0\0\64'

T.test('corrupt: missing, short, bad header length', function()
  T.errors(function() mf.load(path('does_not_exist.safetensors')) end, 'does_not_exist.safetensors', 'cannot open')
  bad('empty.st', '', 'shorter than the 8-byte header')
  bad('short.st', '\8\0\0', 'shorter than the 8-byte header')
  bad('toolong.st', le(200, 8) .. '{}', 'header length 200 is larger than the file')
  bad('absurd.st', le(2 ^ 40, 8) .. '{}      ', 'absurd')
  bad('absurd2.st', '\255\255\255\255\255\255\255\255{}', 'absurd')
  bad('zero_header.st', le(0, 8), 'not valid JSON')
end)

T.test('corrupt: header not valid JSON', function()
  for i, h in ipairs{'{"a":', 'not json', '{"a":{"dtype":"F32",}}', '{"a" {}}', '{"a":"\1"}', '{"a":1}x',
                     '{"a":01}', '{"a":"\\q"}', '{"a":[1 2]}', '{"a":"\\ud800"}', ('['):rep(100) .. (']'):rep(100)} do
    bad('json' .. i .. '.st', st_file(h), 'header is not valid JSON', 'at byte')
  end
  bad('dupkey.st', st_file('{"a":{},"a":{}}'), "duplicate key 'a'")
  bad('array.st', st_file('[1, 2]'), 'header is not a JSON object')
  bad('entry.st', st_file('{"a": 5}'), "tensor 'a' is not a JSON object")
end)

T.test('corrupt: dtype, shape and offsets', function()
  bad('dtype.st', st_file('{"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}}', DATA8), "unknown dtype 'Q7'")
  bad('f16.st', st_file('{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}', DATA8), "unsupported dtype 'F16'")
  bad('nodtype.st', st_file('{"a":{"shape":[2],"data_offsets":[0,8]}}', DATA8), "tensor 'a' lacks dtype")
  bad('noshape.st', st_file('{"a":{"dtype":"F32","data_offsets":[0,8]}}', DATA8), "tensor 'a' lacks shape")
  bad('shape_neg.st', st_file('{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', DATA8), 'shape[1] is -2', 'non-negative integer')
  bad('shape_frac.st', st_file('{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}}', DATA8), 'non-negative integer')
  bad('shape_str.st', st_file('{"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}', DATA8), 'non-negative integer')
  bad('shape_9d.st', st_file('{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}', DATA8), '9 dims')
  bad('offs_one.st', st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}', DATA8), 'two integers')
  bad('offs_neg.st', st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}', DATA8), 'data_offsets[1]', 'non-negative')
  bad('offs_rev.st', st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}', DATA8), 'end before they begin')
  bad('mismatch.st', st_file('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', DATA8),
    'shape/offset mismatch', 'needs 12 bytes', 'span 8')
  bad('mismatch64.st', st_file('{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}', DATA8), 'shape/offset mismatch')
  bad('outside.st', st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[100,108]}}', DATA8), 'outside the data area')
  bad('huge_off.st', st_file('{"a":{"dtype":"U8","shape":[0],"data_offsets":[1e300,1e300]}}'), 'non-negative integer')
  bad('meta_num.st', st_file('{"__metadata__":{"k":1}}'), 'not a string')
  bad('meta_arr.st', st_file('{"__metadata__":[]}'), '__metadata__ is not a JSON object')
end)

T.test('corrupt: overlaps, gaps, truncation', function()
  bad('overlap.st', st_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', DATA8),
    'overlapping', "'a'", "'b'")
  bad('gap.st', st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}', DATA8),
    'gap in the data', 'bytes [4, 6)')
  bad('gap_start.st', st_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', DATA8), 'gap in the data', 'bytes [0, 4)')
  bad('gap_end.st', st_file(GOOD, DATA8 .. 'xyz'), 'gap in the data', 'last 3 bytes')
  bad('trunc.st', st_file(GOOD, DATA8:sub(1, 5)), 'truncated data', '8 bytes', 'only 5')
  bad('trunc0.st', st_file(GOOD), 'truncated')
  -- a real file cut short at every possible length: always a clean error
  mf.save(path('cut_src.safetensors'), {a = mf.randn(3, 3), b = mf.tensor({1, 2}, 'int64')})
  local s = read_file(path('cut_src.safetensors'))
  for n = 0, #s - 1 do
    write_file(path('cut.st'), s:sub(1, n))
    T.errors(function() mf.load(path('cut.st')) end, 'cut.st')
  end
end)

T.test('random corruption never crashes', function()
  mf.save(path('fuzz_src.safetensors'), {a = mf.randn(2, 3), b = mf.tensor({1, 2, 3}, 'int32'), c = mf.zeros(0)}, {k = 'v'})
  local s = read_file(path('fuzz_src.safetensors'))
  local seed = 12345
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
  local errors = 0
  for _ = 1, 400 do
    local b = {s:byte(1, -1)}
    for _ = 1, 1 + rnd(3) do b[1 + rnd(#b)] = rnd(256) end
    write_file(path('fuzz.st'), string.char(unpack(b)))
    local ok, err = pcall(mf.load, path('fuzz.st'))
    if not ok then
      errors = errors + 1
      T.eq(type(err), 'string', 'error type')
      T.eq(err:find("mf.load: '", 1, true) ~= nil, true, 'error names mf.load: ' .. err)
    end
  end
  T.eq(errors > 0, true, 'some mutations are detected')
end)

-- saving: argument errors and atomicity ------------------------------------------------------

T.test('save argument errors', function()
  local p = path('args.safetensors')
  T.errors(function() mf.save(nil, {}) end, 'path must be a non-empty string')
  T.errors(function() mf.save(p, mf.ones(2)) end, 'got a tensor')
  T.errors(function() mf.save(p, 5) end, 'expected a table of named tensors')
  T.errors(function() mf.save(p, {a = 5}) end, "'a' is a number")
  T.errors(function() mf.save(p, {a = {b = 'x'}}) end, "'a.b' is a string")
  T.errors(function() mf.save(p, {[true] = mf.ones(1)}) end, 'names must be strings')
  T.errors(function() mf.save(p, {[''] = mf.ones(1)}) end, 'empty name')
  T.errors(function() mf.save(p, {__metadata__ = mf.ones(1)}) end, "'__metadata__' is reserved")
  T.errors(function() mf.save(p, {['a.b'] = mf.ones(1), a = {b = mf.ones(1)}}) end, "'a.b' occurs twice")
  local cyc = {}
  cyc.self = cyc
  T.errors(function() mf.save(p, cyc) end, 'cycle')
  T.errors(function() mf.save(p, {a = mf.ones(1)}, {k = 1}) end, 'metadata must map strings to strings')
  T.errors(function() mf.save(p, {a = mf.ones(1)}, 'meta') end, 'metadata must be a table')
  T.errors(function() mf.save(dir .. '/no/such/dir/x.safetensors', {a = mf.ones(1)}) end, 'cannot create the temporary file')
  T.eq(io.open(p, 'rb'), nil, 'nothing written')
end)

T.test('atomic writes: a failed save leaves the target intact and no temporary file', function()
  local p = path('atomic.safetensors')
  mf.save(p, {x = mf.tensor{1, 2, 3}}, {v = 'old'})
  local before, files = read_file(p), listdir()
  -- failures before anything is written
  T.errors(function() mf.save(p, {x = 'not a tensor'}) end, "'x' is a string")
  T.eq(read_file(p), before, 'intact after a bad argument')
  -- failures injected after the header, after a tensor, after fsync and before the rename
  for _, stage in ipairs{'header', 'tensor', 'sync', 'rename'} do
    mf._save_fault = function(s) if s == stage then error('injected failure at ' .. s, 0) end end
    local ok, err = pcall(mf.save, p, {x = mf.randn(1000), y = mf.ones(3)}, {v = 'new'})
    mf._save_fault = nil
    T.eq(ok, false, stage .. ' fails')
    T.eq(err:find('injected failure at ' .. stage, 1, true) ~= nil, true, 'message: ' .. err)
    T.eq(err:find('the target is unchanged', 1, true) ~= nil, true, 'message says target unchanged')
    T.eq(read_file(p), before, 'target intact after a failure at ' .. stage)
    T.eq(listdir(), files, 'no temporary file left after a failure at ' .. stage)
  end
  local _, m = mf.load(p)
  T.eq(m.v, 'old')
  -- the rename itself fails: the target is a directory
  os.execute('mkdir ' .. path('adir'))
  write_file(path('adir/keep'), 'k')
  files = listdir()
  T.errors(function() mf.save(path('adir'), {x = mf.ones(1)}) end, 'renaming the temporary file', 'the target is unchanged')
  T.eq(read_file(path('adir/keep')), 'k')
  T.eq(listdir(), files, 'no temporary file left after a failed rename')
  -- a successful save replaces the file and leaves nothing else behind
  mf.save(p, {z = mf.zeros(2)}, {v = 'new'})
  local got, m2 = mf.load(p)
  T.eq(m2.v, 'new'); T.eq(got.x, nil); T.tensor_eq(got.z, {0, 0})
  T.eq(listdir(), files)
end)

T.test('load argument errors and help', function()
  T.errors(function() mf.load(nil) end, 'path must be a string')
  T.errors(function() mf.load(dir) end, dir, 'cannot read the file')  -- a directory
  T.eq(mf._docs.save ~= nil and mf._docs.load ~= nil, true, 'save and load have help entries')
end)

T.test('load options: device, and unknown options named', function()
  local p = dir .. '/dev.safetensors'
  mf.save(p, {w = mf.tensor({{1, 2}, {3, 4}}, 'float64')})
  local t = mf.load(p, {device = 'cpu'})
  T.tensor_eq(t.w, {{1, 2}, {3, 4}})
  T.eq(t.w:device(), 'cpu')
  T.errors(function() mf.load(p, {devcie = 'cuda'}) end, "mf.load: unknown option 'devcie'; did you mean 'device'?")
  T.errors(function() mf.load(p, 'cuda') end, "mf.load: expected a table of options, got 'cuda'")
  T.errors(function() mf.load(p, {device = 'tpu'}) end, "mf.load: device 'tpu' is not registered")
  T.errors(function() mf.load(p, {device = 5}) end, 'mf.load: the device is a number; expected a device name')
  -- the device is checked before the file: a bad one fails the same for a missing file
  T.errors(function() mf.load(dir .. '/missing', {device = 'tpu'}) end, "device 'tpu' is not registered")
  if mf.cuda.is_available() then
    local g = mf.load(p, {device = 'cuda'})
    T.eq(g.w:device(), 'cuda')
    T.tensor_eq(g.w:to('cpu'), {{1, 2}, {3, 4}})
  else
    T.errors(function() mf.load(p, {device = 'cuda'}) end, 'mf.load: cuda: ' .. mf.cuda.reason())
  end
end)

os.execute('rm -rf ' .. dir)
T.finish()
