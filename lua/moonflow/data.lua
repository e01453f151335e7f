-- mf.data: reading IDX files (gzip or plain) such as Fashion-MNIST's, through zlib via the FFI.
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local raise = mf._raise
  local UINT8, INT64 = C.MF_UINT8, C.MF_INT64
  mf.data = mf.data or {}
  -- where fashion_mnist reads its files: the environment's MF_FASHION_MNIST_DIR when set (the GPU
  -- machine of scripts/gpu/check.sh reads a subset carried in .gpu-deps/), else the Debian package's
  mf.data.FASHION_MNIST_DIR = os.getenv('MF_FASHION_MNIST_DIR') or '/usr/share/datasets/fashion-mnist'

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
      local t = mf._new_tensor(shape, UINT8)
      local got, p = 0, ffi.cast('uint8_t *', t._ptr)
      while got < total do
        local chunk = math.min(total - got, 2 ^ 30)
        local r = z().gzread(f, p + got, chunk)
        if r <= 0 then error(("read_idx: '%s' is truncated: %d of %d data bytes"):format(path, got, total), 0) end
        got = got + r
      end
      -- the header must describe the whole file: extra bytes mean a wrong shape, not spare data
      local extra = ffi.new('uint8_t[1]')
      if z().gzread(f, extra, 1) > 0 then
        error(("read_idx: '%s' has data past the %d elements its header declares (shape %s)"):format(path, total,
          table.concat(shape, 'x')), 0)
      end
      return t
    end)
    z().gzclose(f)
    if not ok then raise(res) end
    return res
  end

  -- Fashion-MNIST as tensors: images N x 28 x 28 uint8, labels N uint8 (0..9 as in the files).
  function mf.data.fashion_mnist_raw(split)
    if split ~= nil and split ~= 'train' and split ~= 'test' then
      raise(("fashion_mnist_raw: split is '%s'; expected 'train' or 'test'"):format(tostring(split)))
    end
    local prefix = split == 'test' and 't10k' or 'train'
    local dir = mf.data.FASHION_MNIST_DIR
    local files = {dir .. '/' .. prefix .. '-images-idx3-ubyte.gz', dir .. '/' .. prefix .. '-labels-idx1-ubyte.gz'}
    for _, path in ipairs(files) do
      local fh = io.open(path, 'rb')
      if not fh then
        raise(('mf.data: Fashion-MNIST not found (no %s); install it with: apt-get install dataset-fashion-mnist'):format(path))
      end
      fh:close()
    end
    local images = mf.data.read_idx(files[1])
    local labels = mf.data.read_idx(files[2])
    if images:dim() ~= 3 or labels:dim() ~= 1 or images:size(1) ~= labels:size(1) then
      raise(('mf.data: Fashion-MNIST files under %s disagree: images %s, labels %s'):format(dir,
        images:shape_str(), labels:shape_str()))
    end
    return images, labels
  end

  -- Datasets and loaders -------------------------------------------------------------------------
  -- A dataset or loader is a userdata proxy (so that #ds works in LuaJIT) whose fields and methods
  -- come from a per-object state table, which inherits from its class.
  local function object(class, state)
    setmetatable(state, {__index = class})
    local p = newproxy(true)
    local m = getmetatable(p)
    m.__index, m.__newindex = state, state
    m.__len = class.__len
    m.__tostring = class.__tostring
    m.__call = class.__call
    return p
  end

  local function check_index(i, n, what)
    if type(i) ~= 'number' or i ~= math.floor(i) then
      raise(('%s: index must be an integer, got %s'):format(what, type(i) == 'number' and tostring(i) or 'a ' .. type(i)))
    end
    if i < 1 or i > n then raise(('%s: index %d out of range 1..%d'):format(what, i, n)) end
  end

  local function is_posint(v) return type(v) == 'number' and v == math.floor(v) and v >= 1 and v < 2 ^ 53 end

  local Dataset = {}       -- methods every dataset shares (loader)
  local Loader = {}

  -- uint8 images (N x H x W) with 1-based int64 labels; converted to float32 in [0, 1] on access
  local ImageDataset = setmetatable({}, {__index = Dataset})
  function ImageDataset.__len(p) return p._n end
  function ImageDataset.__tostring(p)
    return ('%s: %d images of %dx%d, labels 1..10'):format(p.name, p._n, p._h, p._w)
  end
  local function check_self(self, call)
    if type(self) ~= 'userdata' or self._n == nil then raise(('%s (with a colon)'):format(call)) end
  end

  function ImageDataset:get(i)
    check_self(self, 'get: call it as ds:get(i)')
    check_index(i, self._n, self.name .. ':get')
    local img = mf.div(mf.cast(mf.narrow(self._images, 1, i, 1), 'float32'), 255)
    return img, self._labels:get(i)
  end
  function ImageDataset:tensors()
    local x = mf.div(mf.cast(self._images, 'float32'), 255)
    return mf.reshape(x, self._n, 1, self._h, self._w), self._labels:clone()
  end
  -- one batch from a 1-based int64 index tensor: a gather of uint8 rows, then one cast and divide
  function ImageDataset:_gather(idx)
    local x = mf.div(mf.cast(mf.index_select(self._images, idx, 1), 'float32'), 255)
    return mf.reshape(x, idx:size(1), 1, self._h, self._w), mf.index_select(self._labels, idx, 1)
  end

  local function image_dataset(name, images, labels)
    local n = images:size(1)
    local lab = mf.cast(labels, 'int64') + 1
    return object(ImageDataset, {name = name, _images = images, _labels = lab, _n = n,
                                 _h = images:size(2), _w = images:size(3)})
  end

  -- local train, test = mf.data.fashion_mnist()
  function mf.data.fashion_mnist()
    local tri, trl = mf.data.fashion_mnist_raw('train')
    local tei, tel = mf.data.fashion_mnist_raw('test')
    return image_dataset('fashion_mnist(train)', tri, trl), image_dataset('fashion_mnist(test)', tei, tel)
  end

  -- rows of tensors along dim 1; targets may be nil (batches are then inputs alone)
  local TensorDataset = setmetatable({}, {__index = Dataset})
  function TensorDataset.__len(p) return p._n end
  function TensorDataset.__tostring(p)
    return ('TensorDataset: %d rows, inputs %s%s'):format(p._n, p._inputs:shape_str(),
      p._targets and ', targets ' .. p._targets:shape_str() or '')
  end
  function TensorDataset:get(i)
    check_self(self, 'get: call it as ds:get(i)')
    check_index(i, self._n, 'TensorDataset:get')
    local x = mf.select(self._inputs, 1, i)
    local y = self._targets
    if y == nil then return x end
    if y:dim() == 1 then return x, y:get(i) end
    return x, mf.select(y, 1, i)
  end
  function TensorDataset:tensors() return self._inputs, self._targets end
  function TensorDataset:_gather(idx)
    local x = mf.index_select(self._inputs, idx, 1)
    if self._targets == nil then return x end
    return x, mf.index_select(self._targets, idx, 1)
  end

  function mf.data.TensorDataset(inputs, targets)
    if not mf.is_tensor(inputs) or inputs:dim() < 1 then
      raise('TensorDataset: inputs must be a tensor with at least one dim (rows along dim 1)')
    end
    if targets ~= nil then
      if not mf.is_tensor(targets) or targets:dim() < 1 then
        raise('TensorDataset: targets must be a tensor with at least one dim, or nil')
      end
      if targets:size(1) ~= inputs:size(1) then
        raise(('TensorDataset: inputs have %d rows (%s) but targets have %d (%s); size(1) must agree'):format(
          inputs:size(1), inputs:shape_str(), targets:size(1), targets:shape_str()))
      end
    end
    return object(TensorDataset, {_inputs = inputs, _targets = targets, _n = inputs:size(1)})
  end

  -- loaders --------------------------------------------------------------------------------------
  local O = require 'moonflow.options'
  local LOADER_OPTS = {batch = O.posint, shuffle = 'boolean', drop_last = 'boolean',
                       seed = {type = 'integer', min = 0, lt = 2 ^ 53},
                       _hints = {batch_size = 'batch', bs = 'batch', random_state = 'seed'}}

  -- ds:loader{batch = 64, shuffle = true, drop_last = false, seed = 0}
  function Dataset:loader(opts)
    check_self(self, 'loader: call it as ds:loader{batch = ...}')
    opts = O.check('loader', opts, LOADER_OPTS)
    local batch, seed = opts.batch or 1, opts.seed or 0
    return object(Loader, {dataset = self, batch = batch, shuffle = opts.shuffle == true,
                           drop_last = opts.drop_last == true, seed = seed, epoch = 1, _n = #self})
  end

  function Loader.__len(p)
    local n, b = p._n, p.batch
    return p.drop_last and math.floor(n / b) or math.ceil(n / b)
  end
  function Loader.__tostring(p)
    return ('DataLoader: %d batches of %d over %d samples%s, next epoch %d'):format(#p, p.batch, p._n,
      p.shuffle and ' (shuffled, seed ' .. p.seed .. ')' or '', p.epoch)
  end

  -- splitmix64: a small deterministic generator, independent of mf.rand's state
  local GOLDEN = 0x9E3779B97F4A7C15ULL
  local bxor, rshift = bit.bxor, bit.rshift
  local function mix64(z)
    z = bxor(z, rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
    z = bxor(z, rshift(z, 27)) * 0x94D049BB133111EBULL
    return bxor(z, rshift(z, 31))
  end

  -- the sample order of an epoch: 1..n, or a Fisher-Yates shuffle drawn from (seed, epoch)
  function Loader:_order(epoch)
    local n = self._n
    local order = mf._new_tensor({n}, INT64)
    local p = ffi.cast('int64_t *', order._ptr)
    for i = 0, n - 1 do p[i] = i + 1 end
    if self.shuffle then
      local state = mix64(mix64(0ULL + self.seed + GOLDEN) + epoch)
      for i = n - 1, 1, -1 do
        state = state + GOLDEN
        local j = tonumber(mix64(state) % (i + 1))
        p[i], p[j] = p[j], p[i]
      end
    end
    return order
  end

  -- for bx, by in loader:iter() do ... end: one epoch; each call advances the epoch counter
  function Loader:iter()
    if type(self) ~= 'userdata' or self.batch == nil then raise('iter: call it as loader:iter() (with a colon)') end
    local epoch = self.epoch
    self.epoch = epoch + 1
    local ds, order, nb, b, n = self.dataset, self:_order(epoch), #self, self.batch, self._n
    local k = 0
    return function()
      k = k + 1
      if k > nb then return nil end
      local start = (k - 1) * b + 1
      return ds:_gather(mf.narrow(order, 1, start, math.min(b, n - start + 1)))
    end
  end

  -- for bx, by in loader do ... end: the generic for calls loader(nil, last) until it returns nil.
  -- Each loop has its own state, found by the batch it returned last (a fresh tensor per batch), so
  -- loops nested over one loader each resume their own epoch. A call with last == nil (the first
  -- call of a loop), or with a value no running loop returned, starts a new epoch with iter(). The
  -- table is weak: a loop left early with break leaves nothing behind.
  function Loader.__call(p, _, last)
    local loops = p._loops
    if not loops then
      loops = setmetatable({}, {__mode = 'k'})
      p._loops = loops
    end
    local next_batch = last ~= nil and loops[last] or nil
    if next_batch then loops[last] = nil else next_batch = p:iter() end
    local x, y = next_batch()
    if x == nil then return nil end
    loops[x] = next_batch
    return x, y
  end

  -- the epoch the next iter() runs (1-based); set it when resuming to get that epoch's order
  function Loader:set_epoch(e)
    if type(self) ~= 'userdata' or self.batch == nil then raise('set_epoch: call it as loader:set_epoch(n) (with a colon)') end
    if not is_posint(e) then raise(('set_epoch: epoch must be a positive integer, got %s'):format(tostring(e))) end
    self.epoch = e
  end

  -- help(mf.data.x) finds these by value
  if mf._fn_names then
    for _, name in ipairs{'read_idx', 'fashion_mnist_raw', 'fashion_mnist', 'TensorDataset'} do
      mf._fn_names[mf.data[name]] = 'data.' .. name
    end
  end
end
