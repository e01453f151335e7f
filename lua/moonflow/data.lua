-- mf.data: reading IDX files (gzip or plain) such as Fashion-MNIST's, through zlib via the FFI.
local ffi = require 'ffi'

return function(mf)
  local raise = mf._raise
  mf.data = mf.data or {}
  mf.data.FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist'

  ffi.cdef [[
    typedef struct gzFile_s *gzFile;
    gzFile gzopen(const char *path, const char *mode);
    int gzread(gzFile file, void *buf, unsigned len);
    int gzclose(gzFile file);
  ]]
  local zlib
  local function z()
    if not zlib then
      local ok, lib = pcall(ffi.load, 'libz.so.1')
      if not ok then raise('mf.data: zlib (libz.so.1) is not available: ' .. tostring(lib)) end
      zlib = lib
    end
    return zlib
  end

  -- Reads a whole IDX file (gzip-compressed or not) into a uint8 tensor of its declared shape.
  -- Only the unsigned-byte element type (0x08) is supported, as in the MNIST family.
  function mf.data.read_idx(path)
    if type(path) ~= 'string' then raise('read_idx: path must be a string') end
    local f = z().gzopen(path, 'rb')
    if f == nil then raise(("read_idx: cannot open '%s'"):format(path)) end
    local ok, res = pcall(function()
      local head = ffi.new('uint8_t[4]')
      if z().gzread(f, head, 4) ~= 4 then error(("read_idx: '%s' is shorter than an IDX header"):format(path), 0) end
      if head[0] ~= 0 or head[1] ~= 0 or head[2] ~= 8 or head[3] < 1 or head[3] > 4 then
        error(("read_idx: '%s' is not an unsigned-byte IDX file (magic %02x%02x%02x%02x)"):format(path,
          head[0], head[1], head[2], head[3]), 0)
      end
      local nd = head[3]
      local dims = ffi.new('uint8_t[?]', 4 * nd)
      if z().gzread(f, dims, 4 * nd) ~= 4 * nd then error(("read_idx: '%s' has a truncated header"):format(path), 0) end
      local shape, total = {}, 1
      for d = 0, nd - 1 do
        local v = dims[4 * d] * 2 ^ 24 + dims[4 * d + 1] * 2 ^ 16 + dims[4 * d + 2] * 2 ^ 8 + dims[4 * d + 3]
        shape[d + 1] = v
        total = total * v
      end
      if total > 2 ^ 34 then error(("read_idx: '%s' declares %d elements"):format(path, total), 0) end
      local t = mf._new_tensor(shape, 4)
      local got, p = 0, ffi.cast('uint8_t *', t.ptr)
      while got < total do
        local chunk = math.min(total - got, 2 ^ 30)
        local r = z().gzread(f, p + got, chunk)
        if r <= 0 then error(("read_idx: '%s' is truncated: %d of %d data bytes"):format(path, got, total), 0) end
        got = got + r
      end
      return t
    end)
    z().gzclose(f)
    if not ok then raise(res) end
    return res
  end

  -- Fashion-MNIST as tensors: images N x 784 uint8, labels N uint8 (0..9 as in the files).
  function mf.data.fashion_mnist_raw(split)
    local prefix = split == 'test' and 't10k' or 'train'
    local dir = mf.data.FASHION_MNIST_DIR
    local fh = io.open(dir .. '/' .. prefix .. '-images-idx3-ubyte.gz')
    if not fh then
      raise(('mf.data: Fashion-MNIST not found under %s; install it with: apt-get install dataset-fashion-mnist'):format(dir))
    end
    fh:close()
    local images = mf.data.read_idx(dir .. '/' .. prefix .. '-images-idx3-ubyte.gz')
    local labels = mf.data.read_idx(dir .. '/' .. prefix .. '-labels-idx1-ubyte.gz')
    return images, labels
  end
end
