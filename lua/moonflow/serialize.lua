-- mf.save / mf.load: tensors in the safetensors format (a u64 header length, a JSON header, raw
-- little-endian bytes), written atomically, read with every field checked before memory is touched.
local ffi = require 'ffi'
local json = require 'moonflow.json'
local O = require 'moonflow.options'

return function(mf)
  local raise, is_tensor = mf._raise, mf.is_tensor
  local C = ffi.C

  local TAG_CODE = {F32 = C.MF_FLOAT32, F64 = C.MF_FLOAT64, I32 = C.MF_INT32, I64 = C.MF_INT64, U8 = C.MF_UINT8}
  local DTYPE_TAG, ITEMSIZE = {}, {}  -- by dtype code: the safetensors tag, the element size in bytes
  for tag, code in pairs(TAG_CODE) do DTYPE_TAG[code], ITEMSIZE[code] = tag, C.mf_dtype_size(code) end
  local CPU, MAX_DIMS = C.MF_CPU, C.MF_MAX_DIMS
  -- safetensors dtypes moonflow has no storage for: named in the error rather than called unknown
  local FOREIGN = {F16 = true, BF16 = true, BOOL = true, I8 = true, I16 = true, U16 = true, U32 = true,
                   U64 = true, F8_E4M3 = true, F8_E5M2 = true, C64 = true}
  local MAX_HEADER = 100000000  -- the limit the reference implementation enforces
  local MAX_INT = 2 ^ 53         -- integers above this are not exact in a Lua number
  local CHUNK = 2 ^ 24           -- bytes read per f:read when filling a tensor

  -- libc calls that Lua's io library lacks (fsync) or that need raw pointers (fwrite); declared
  -- only when no other module has declared them already
  local function declare(name, decl)
    if not pcall(function() return C[name] end) then ffi.cdef(decl) end
  end
  declare('fopen', 'void *fopen(const char *path, const char *mode);')
  declare('fwrite', 'size_t fwrite(const void *ptr, size_t size, size_t n, void *stream);')
  declare('fflush', 'int fflush(void *stream);')
  declare('fclose', 'int fclose(void *stream);')
  declare('fileno', 'int fileno(void *stream);')
  declare('fsync', 'int fsync(int fd);')
  declare('getpid', 'int getpid(void);')
  declare('open', 'int open(const char *path, int flags, ...);')
  declare('close', 'int close(int fd);')
  declare('strerror', 'char *strerror(int errnum);')

  local function errno_text() return ffi.string(C.strerror(ffi.errno())) end
  local KEYS, NULL, json_string = json.KEYS, json.NULL, json.string

  local function int_str(v) return ('%.0f'):format(v) end

  -- saving -------------------------------------------------------------------------------------

  -- Flattens nested tables of tensors into {name, tensor} pairs, names joined with '.'.
  local function flatten(tbl, prefix, out, visiting, where)
    local here = prefix == '' and 'the top' or "'" .. prefix .. "'"
    if visiting[tbl] then raise(('%s: the tensors table contains a cycle at %s'):format(where, here)) end
    visiting[tbl] = true
    for k, v in pairs(tbl) do
      local key
      if type(k) == 'string' then key = k
      elseif type(k) == 'number' and k == math.floor(k) and math.abs(k) < MAX_INT then key = int_str(k)
      else raise(('%s: key %s under %s is a %s; names must be strings'):format(where, tostring(k), here, type(k))) end
      if key == '' then raise(('%s: empty name under %s'):format(where, here)) end
      local name = prefix == '' and key or prefix .. '.' .. key
      if is_tensor(v) then
        out[#out + 1] = {name = name, t = v}
      elseif type(v) == 'table' then
        flatten(v, name, out, visiting, where)
      else
        raise(("%s: '%s' is a %s; expected a tensor or a table of tensors"):format(where, name, type(v)))
      end
    end
    visiting[tbl] = nil
  end

  local function is_dense(t)
    local expect = 1
    for d = t._ndim - 1, 0, -1 do
      local n = tonumber(t._shape[d])
      if n == 0 then return true end
      if n ~= 1 and tonumber(t._strides[d]) ~= expect then return false end
      expect = expect * n
    end
    return true
  end

  -- Step 1 of a save: the named tensors, flattened, checked and sorted by name.
  local function collect_entries(tensors, where)
    local entries = {}
    flatten(tensors, '', entries, {}, where)
    table.sort(entries, function(a, b) return a.name < b.name end)
    for i, e in ipairs(entries) do
      if e.name == '__metadata__' then raise(where .. ": the name '__metadata__' is reserved for metadata") end
      if i > 1 and entries[i - 1].name == e.name then
        raise(("%s: the name '%s' occurs twice after flattening nested tables"):format(where, e.name))
      end
    end
    return entries
  end

  -- Step 2: the "__metadata__" member of the header (keys sorted), or nil when there is none.
  local function metadata_json(metadata, where)
    if not metadata then return nil end
    local keys = {}
    for k, v in pairs(metadata) do
      if type(k) ~= 'string' or type(v) ~= 'string' then
        raise(('%s: metadata must map strings to strings; %s = %s is a %s -> %s'):format(where,
          tostring(k), tostring(v), type(k), type(v)))
      end
      keys[#keys + 1] = k
    end
    if #keys == 0 then return nil end
    table.sort(keys)
    local kv = {}
    for i, k in ipairs(keys) do kv[i] = json_string(k) .. ':' .. json_string(metadata[k]) end
    return '"__metadata__":{' .. table.concat(kv, ',') .. '}'
  end

  -- Step 3: the header text, padded to a multiple of 8 bytes. Lays the data out in order of
  -- decreasing item size, then name, so every tensor's bytes start aligned to its item size (as
  -- the reference writer does), and replaces each tensor by a dense CPU copy where it is not one,
  -- so nothing can fail once writing has begun; sets each entry's nbytes.
  local function header_json(entries, meta)
    table.sort(entries, function(a, b)
      local sa, sb = ITEMSIZE[a.t._dtype_id], ITEMSIZE[b.t._dtype_id]
      if sa ~= sb then return sa > sb end
      return a.name < b.name
    end)
    local parts, offset = {meta}, 0
    for _, e in ipairs(entries) do
      local t = e.t
      if t._device_id ~= CPU then t = t:cpu() end
      if not is_dense(t) then t = t:contiguous() end
      e.t = t
      local shape = {}
      for d = 0, t._ndim - 1 do shape[d + 1] = int_str(tonumber(t._shape[d])) end
      e.nbytes = tonumber(t._count) * ITEMSIZE[t._dtype_id]
      parts[#parts + 1] = ('%s:{"dtype":"%s","shape":[%s],"data_offsets":[%s,%s]}'):format(json_string(e.name),
        DTYPE_TAG[t._dtype_id], table.concat(shape, ','), int_str(offset), int_str(offset + e.nbytes))
      offset = offset + e.nbytes
    end
    local header = '{' .. table.concat(parts, ',') .. '}'
    return header .. (' '):rep((8 - #header % 8) % 8)
  end

  local tmp_counter = 0

  -- Step 4: writes the length, the header and the data to a temporary file beside path, flushes it
  -- to disk and renames it over path. Returns nil, or the reason it failed (the temporary file
  -- removed, the target unchanged). mf._save_fault, a test hook, fails a chosen stage.
  local function write_atomically(path, header, entries, where)
    local lenbuf, n = ffi.new('uint8_t[8]'), #header
    for i = 0, 7 do lenbuf[i] = n % 256; n = math.floor(n / 256) end
    tmp_counter = tmp_counter + 1
    local tmp = ('%s.tmp-%d-%d-%d'):format(path, C.getpid(), os.time(), tmp_counter)
    local f = C.fopen(tmp, 'wbx')
    if f == nil then raise(('%s: cannot create the temporary file %s: %s'):format(where, tmp, errno_text())) end
    local function put(ptr, nbytes, what)
      if nbytes > 0 and C.fwrite(ptr, 1, nbytes, f) ~= nbytes then
        error(('writing %s failed: %s'):format(what, errno_text()), 0)
      end
    end
    local hook = mf._save_fault
    local ok, err = pcall(function()
      put(lenbuf, 8, 'the header length')
      put(header, #header, 'the header')
      if hook then hook('header') end
      for _, e in ipairs(entries) do
        put(e.t._ptr, e.nbytes, ("tensor '%s'"):format(e.name))
        if hook then hook('tensor') end
      end
      if C.fflush(f) ~= 0 then error('flushing failed: ' .. errno_text(), 0) end
      if C.fsync(C.fileno(f)) ~= 0 then error('fsync failed: ' .. errno_text(), 0) end
      if hook then hook('sync') end
    end)
    local closed = C.fclose(f) == 0
    if ok and not closed then ok, err = false, 'closing failed: ' .. errno_text() end
    if ok and hook then ok, err = pcall(hook, 'rename') end
    if ok then
      local rok, rerr = os.rename(tmp, path)
      if not rok then ok, err = false, 'renaming the temporary file over the target failed: ' .. tostring(rerr) end
    end
    if ok then return nil end
    os.remove(tmp)
    return tostring(err)
  end

  -- Step 5: makes the rename itself durable (best effort: some file systems refuse fsync on
  -- directories).
  local function sync_directory(path)
    local dir = path:match('^(.*)/[^/]*$')
    local fd = C.open(dir == nil and '.' or dir == '' and '/' or dir, 0)
    if fd >= 0 then C.fsync(fd); C.close(fd) end
  end

  -- mf.save(path, tensors[, metadata]): see the file header; returns nothing.
  function mf.save(path, tensors, metadata)
    if type(path) ~= 'string' or path == '' then raise('mf.save: path must be a non-empty string') end
    local where = ("mf.save: '%s'"):format(path)
    if not ffi.abi('le') then raise(where .. ': only little-endian hosts are supported') end
    if is_tensor(tensors) then raise(where .. ": expected a table of named tensors, got a tensor (use {name = t})") end
    if type(tensors) ~= 'table' then raise(('%s: expected a table of named tensors, got a %s'):format(where, type(tensors))) end
    if metadata ~= nil and type(metadata) ~= 'table' then
      raise(('%s: metadata must be a table of strings, got a %s'):format(where, type(metadata)))
    end
    local entries = collect_entries(tensors, where)
    local header = header_json(entries, metadata_json(metadata, where))
    local err = write_atomically(path, header, entries, where)
    if err then raise(('%s: %s (the target is unchanged)'):format(where, err)) end
    sync_directory(path)
  end

  -- loading ------------------------------------------------------------------------------------

  local function fail(msg) error({load = msg}, 0) end

  local function check_int(v, what)
    if type(v) ~= 'number' or v ~= math.floor(v) or v < 0 or v > MAX_INT then
      local got = type(v) == 'number' and tostring(v) or 'a ' .. (v == NULL and 'null' or type(v))
      fail(('%s is %s; expected a non-negative integer'):format(what, got))
    end
    return v
  end

  -- Step 1 of a load: the file size, the header length and the header, decoded. Returns the header
  -- object, its length n and the size of the data area after it.
  local function read_header(f)
    local size = f:seek('end')
    if not size then fail('cannot determine the file size') end
    f:seek('set', 0)
    if size < 8 then fail(('the file is %d bytes, shorter than the 8-byte header length'):format(size)) end
    local lb, rerr = f:read(8)
    if not lb or #lb < 8 then fail('cannot read the file' .. (rerr and ': ' .. tostring(rerr) or '')) end
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + lb:byte(i) end
    if n > MAX_HEADER then
      fail(('header length %s is absurd (more than %d bytes); not a safetensors file?'):format(int_str(n), MAX_HEADER))
    end
    if n > size - 8 then
      fail(('header length %d is larger than the file (%d bytes after the length field)'):format(n, size - 8))
    end
    local hs = f:read(n) or ''
    if #hs ~= n then fail(('truncated header: read %d of %d bytes'):format(#hs, n)) end
    local ok, hdr = pcall(json.decode, hs)
    if not ok then
      if type(hdr) == 'table' and hdr.json then fail('header is not valid JSON: ' .. hdr.json) end
      error(hdr, 0)
    end
    if type(hdr) ~= 'table' or hdr[KEYS] == nil then fail('header is not a JSON object') end
    return hdr, n, size - 8 - n
  end

  -- Step 2a: the "__metadata__" member as a table of strings.
  local function parse_metadata(v)
    if type(v) ~= 'table' or v[KEYS] == nil then fail('__metadata__ is not a JSON object') end
    local meta = {}
    for _, k in ipairs(v[KEYS]) do
      if type(v[k]) ~= 'string' then
        fail(("__metadata__ value of '%s' is not a string; metadata maps strings to strings"):format(k))
      end
      meta[k] = v[k]
    end
    return meta
  end

  -- Step 2b: one tensor's member, every field checked: {name, code, dims, b, e} (data offsets).
  local function parse_spec(name, v, data_size)
    local what = ("tensor '%s'"):format(name)
    if type(v) ~= 'table' or v[KEYS] == nil then fail(what .. ' is not a JSON object') end
    local tag, shape, offs = v.dtype, v.shape, v.data_offsets
    if tag == nil or shape == nil or offs == nil then
      fail(what .. ' lacks ' .. (tag == nil and 'dtype' or shape == nil and 'shape' or 'data_offsets'))
    end
    if type(tag) ~= 'string' then fail(what .. ': dtype is not a string') end
    local code = TAG_CODE[tag]
    if not code then
      fail(("%s has %s dtype '%s'; moonflow reads F32, F64, I32, I64 and U8"):format(what,
        FOREIGN[tag] and 'the unsupported' or 'unknown', tag))
    end
    if type(shape) ~= 'table' or shape[KEYS] then fail(what .. ': shape is not a JSON array') end
    if #shape > MAX_DIMS then fail(('%s has %d dims; at most %d are supported'):format(what, #shape, MAX_DIMS)) end
    local numel, dims = 1, {}
    for i = 1, #shape do
      dims[i] = check_int(shape[i], ('%s: shape[%d]'):format(what, i))
      numel = numel * dims[i]
    end
    if type(offs) ~= 'table' or offs[KEYS] or #offs ~= 2 then fail(what .. ': data_offsets is not an array of two integers') end
    local b = check_int(offs[1], what .. ': data_offsets[1]')
    local e = check_int(offs[2], what .. ': data_offsets[2]')
    if e < b then fail(('%s: data_offsets [%s, %s] end before they begin'):format(what, int_str(b), int_str(e))) end
    local want = numel * ITEMSIZE[code]
    if e - b ~= want then
      fail(('%s: shape/offset mismatch: shape [%s] of %s needs %s bytes but data_offsets [%s, %s] span %s'):format(what,
        table.concat(dims, ', '), tag, int_str(want), int_str(b), int_str(e), int_str(e - b)))
    end
    if b > data_size or (b == data_size and e > b) then
      fail(('%s: data_offsets [%s, %s] lie outside the data area, which holds %d bytes (truncated file?)'):format(what,
        int_str(b), int_str(e), data_size))
    end
    return {name = name, code = code, dims = dims, b = b, e = e}
  end

  -- Step 3: the specs sorted by offset, checked to tile the data area exactly: each tensor starts
  -- where the last ended, and the last ends where the file does.
  local function check_tiling(specs, data_size)
    local sorted = {}
    for i, s in ipairs(specs) do sorted[i] = s end
    table.sort(sorted, function(x, y)
      if x.b ~= y.b then return x.b < y.b end
      if x.e ~= y.e then return x.e < y.e end
      return x.name < y.name
    end)
    local cursor, prev = 0, nil
    for _, s in ipairs(sorted) do
      if s.b < cursor then
        fail(("overlapping data: tensor '%s' [%s, %s] overlaps tensor '%s' [%s, %s]"):format(s.name, int_str(s.b),
          int_str(s.e), prev.name, int_str(prev.b), int_str(prev.e)))
      elseif s.b > cursor then
        fail(("gap in the data: bytes [%s, %s) of the data area belong to no tensor (before '%s')"):format(
          int_str(cursor), int_str(s.b), s.name))
      end
      cursor, prev = s.e, s
    end
    if cursor > data_size then
      fail(("truncated data: tensor '%s' [%s, %s] runs past the end of the file: the header describes %s bytes"
        .. ' of tensor data but only %d follow it'):format(prev.name, int_str(prev.b), int_str(prev.e), int_str(cursor),
        data_size))
    elseif cursor < data_size then
      fail(('gap in the data: the last %d bytes of the data area belong to no tensor'):format(data_size - cursor))
    end
    return sorted
  end

  -- Step 4: a new tensor holding one spec's bytes, read in chunks from the data area at data_start.
  local function read_tensor(f, data_start, s)
    local aok, t = pcall(mf._new_tensor, s.dims, s.code)
    if not aok then fail(("cannot allocate tensor '%s': %s"):format(s.name, tostring(t))) end
    local nbytes = s.e - s.b
    if nbytes == 0 then return t end
    f:seek('set', data_start + s.b)
    local p, got = ffi.cast('uint8_t *', t._ptr), 0
    while got < nbytes do
      local chunk = f:read(math.min(CHUNK, nbytes - got))
      if not chunk or #chunk == 0 then
        fail(("truncated data: tensor '%s' ends after %d of its %d bytes"):format(s.name, got, nbytes))
      end
      ffi.copy(p + got, chunk, #chunk)
      got = got + #chunk
    end
    return t
  end

  -- The whole load, raising {load = message}: every field is checked before any tensor is allocated.
  local function load_file(f)
    local hdr, n, data_size = read_header(f)
    local meta, specs = {}, {}
    for _, name in ipairs(hdr[KEYS]) do
      if name == '__metadata__' then meta = parse_metadata(hdr[name])
      else specs[#specs + 1] = parse_spec(name, hdr[name], data_size) end
    end
    local out = {}
    for _, s in ipairs(check_tiling(specs, data_size)) do out[s.name] = read_tensor(f, 8 + n, s) end
    return out, meta
  end

  -- mf.load(path[, {device = name}]) -> {name = tensor, ...}, metadata (a table of strings, empty when
  -- absent). The tensors are read on the CPU and moved to device when one is given; the device (an
  -- unknown one, or cuda without a GPU) and the options are checked before the file is opened.
  function mf.load(path, opts)
    if type(path) ~= 'string' then raise(('mf.load: path must be a string, got a %s'):format(type(path))) end
    opts = O.check('mf.load', opts, {device = 'any'})
    local device = opts.device
    if device ~= nil then mf._device_id(device, 'mf.load') end
    local where = ("mf.load: '%s'"):format(path)
    if not ffi.abi('le') then raise(where .. ': only little-endian hosts are supported') end
    local f, oerr = io.open(path, 'rb')
    if not f then raise(('%s: cannot open the file: %s'):format(where, tostring(oerr))) end
    local ok, res, meta = pcall(load_file, f)
    f:close()
    if not ok then
      if type(res) == 'table' and res.load then raise(where .. ': ' .. res.load) end
      raise(where .. ': ' .. tostring(res))
    end
    if device ~= nil then
      for name, t in pairs(res) do res[name] = t:to(device) end
    end
    return res, meta
  end

  mf._json_decode = json.decode  -- for tests and tools; objects carry their key order (lua/moonflow/json.lua)
end
