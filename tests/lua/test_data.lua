-- mf.data: Fashion-MNIST datasets checked against bytes read from the IDX files independently
-- (gzip -dc), TensorDataset, and loaders: batch counts, conversion, seeded reproducible shuffles.
package.path = arg[0]:match('(.*/)') .. '?.lua;' .. package.path
local T = require 'testlib'
local ffi = require 'ffi'

local DIR = mf.data.FASHION_MNIST_DIR

-- bytes [offset, offset + len) of the decompressed file, read with gzip and coreutils
local function idx_bytes(file, offset, len)
  local cmd = ("gzip -dc '%s/%s' | tail -c +%d | head -c %d | od -An -v -tu1"):format(DIR, file, offset + 1, len)
  local out = {}
  for v in io.popen(cmd):read('*a'):gmatch('%d+') do out[#out + 1] = tonumber(v) end
  assert(#out == len, ('reading %d bytes of %s at %d gave %d'):format(len, file, offset, #out))
  return out
end
local function be32(b, i) return ((b[i] * 256 + b[i + 1]) * 256 + b[i + 2]) * 256 + b[i + 3] end

local train, test
T.test('fashion_mnist loads both splits', function()
  train, test = mf.data.fashion_mnist()
  T.eq(#train, 60000, '#train'); T.eq(#test, 10000, '#test')
  T.eq(tostring(train):find('60000', 1, true) ~= nil, true, 'tostring')
end)
if not train then
  io.stderr:write('the Fashion-MNIST dataset could not be loaded (apt-get install dataset-fashion-mnist)\n')
  T.finish()
end

T.test('sizes agree with the IDX headers', function()
  local h = idx_bytes('train-images-idx3-ubyte.gz', 0, 16)
  T.eq(be32(h, 1), 2051, 'image magic'); T.eq(be32(h, 5), 60000); T.eq(be32(h, 9), 28); T.eq(be32(h, 13), 28)
  local l = idx_bytes('t10k-labels-idx1-ubyte.gz', 0, 8)
  T.eq(be32(l, 1), 2049, 'label magic'); T.eq(be32(l, 5), 10000)
end)

T.test('get: images and labels equal the file bytes', function()
  for _, case in ipairs{{train, 'train', 1}, {train, 'train', 12345}, {train, 'train', 60000},
                        {test, 't10k', 1}, {test, 't10k', 10000}} do
    local ds, prefix, i = case[1], case[2], case[3]
    local img, label = ds:get(i)
    T.eq(img:dtype(), 'float32'); T.eq(img:shape_str(), '1x28x28')
    T.eq(type(label), 'number', 'label is a Lua number')
    local px = idx_bytes(prefix .. '-images-idx3-ubyte.gz', 16 + (i - 1) * 784, 784)
    local lb = idx_bytes(prefix .. '-labels-idx1-ubyte.gz', 8 + (i - 1), 1)
    T.eq(label, lb[1] + 1, prefix .. ' label ' .. i .. ' (1-based)')
    local p = ffi.cast('float *', img:contiguous()._ptr)
    for k = 1, 784 do
      local v = p[k - 1]
      if math.abs(v - px[k] / 255) > 1e-7 or math.floor(v * 255 + 0.5) ~= px[k] then
        error(('%s sample %d pixel %d: got %.9g, want %d/255'):format(prefix, i, k, v, px[k]))
      end
    end
  end
  -- a documented fact of Fashion-MNIST: the first training image is an ankle boot (class 9, 10 here)
  local _, l1 = train:get(1)
  T.eq(l1, 10, 'train[1] is an ankle boot')
end)

T.test('tensors: shapes, dtypes, pixel and label ranges', function()
  local x, y = test:tensors()
  T.eq(x:dtype(), 'float32'); T.eq(x:shape_str(), '10000x1x28x28')
  T.eq(y:dtype(), 'int64'); T.eq(y:shape_str(), '10000')
  T.eq(x:min():item(), 0, 'min pixel'); T.eq(x:max():item(), 1, 'max pixel')
  T.eq(y:min():item(), 1, 'min label'); T.eq(y:max():item(), 10, 'max label')
  -- the test split holds 1000 images of each class
  local counts = {}
  local p = ffi.cast('int64_t *', y._ptr)
  for i = 0, 9999 do local c = tonumber(p[i]); counts[c] = (counts[c] or 0) + 1 end
  for c = 1, 10 do T.eq(counts[c], 1000, 'images of class ' .. c) end
  -- the same values as get()
  local img, label = test:get(777)
  T.eq(ffi.string(mf.select(x, 1, 777):contiguous()._ptr, 784 * 4) == ffi.string(img:contiguous()._ptr, 784 * 4), true, 'row 777')
  T.eq(y:get(777), label)
  local tx, ty = train:tensors()
  T.eq(tx:shape_str(), '60000x1x28x28'); T.eq(ty:numel(), 60000)
  T.eq(tx:max():item(), 1); T.eq(ty:min():item(), 1); T.eq(ty:max():item(), 10)
end)

T.test('get: bad indices', function()
  T.errors(function() train:get(0) end, 'index 0 out of range 1..60000')
  T.errors(function() train:get(60001) end, 'index 60001 out of range 1..60000')
  T.errors(function() test:get(1.5) end, 'index must be an integer')
  T.errors(function() test:get('1') end, 'index must be an integer')
end)

T.test('a missing dataset names the package to install', function()
  local saved = mf.data.FASHION_MNIST_DIR
  mf.data.FASHION_MNIST_DIR = '/nonexistent/fashion-mnist'
  local ok, err = pcall(mf.data.fashion_mnist)
  mf.data.FASHION_MNIST_DIR = saved
  T.eq(ok, false)
  T.eq(err:find('apt-get install dataset-fashion-mnist', 1, true) ~= nil, true, err)
  T.eq(err:find('/nonexistent/fashion-mnist', 1, true) ~= nil, true, err)
end)

T.test('loader: batch counts, shapes, conversion', function()
  T.eq(#train:loader{batch = 64}, 938); T.eq(#train:loader{batch = 64, drop_last = true}, 937)
  T.eq(#test:loader{batch = 1000}, 10); T.eq(#test:loader{batch = 1000, drop_last = true}, 10)
  T.eq(#test:loader{batch = 10000}, 1); T.eq(#test:loader{batch = 20000}, 1)
  T.eq(#test:loader{batch = 20000, drop_last = true}, 0); T.eq(#test:loader(), 10000)
  local x, y = test:tensors()
  local n, sizes, seen = 0, {}, 0
  for bx, by in test:loader{batch = 3000}:iter() do
    n = n + 1
    sizes[n] = bx:size(1)
    T.eq(bx:dtype(), 'float32'); T.eq(by:dtype(), 'int64'); T.eq(bx:size(2), 1); T.eq(bx:size(4), 28)
    T.eq(by:size(1), bx:size(1))
    -- unshuffled batches are the rows in order, bit for bit
    local rows = x:narrow(1, seen + 1, bx:size(1)):contiguous()
    T.eq(ffi.string(bx._ptr, bx:numel() * 4) == ffi.string(rows._ptr, rows:numel() * 4), true, 'batch ' .. n .. ' images')
    T.eq(ffi.string(by._ptr, by:numel() * 8) == ffi.string(y:narrow(1, seen + 1, by:size(1)):contiguous()._ptr, by:numel() * 8), true, 'batch ' .. n .. ' labels')
    seen = seen + bx:size(1)
  end
  T.eq(table.concat(sizes, ','), '3000,3000,3000,1000')
  n = 0
  for bx in test:loader{batch = 3000, drop_last = true}:iter() do n = n + 1; T.eq(bx:size(1), 3000) end
  T.eq(n, 3, 'drop_last batches')
  local last
  for bx in train:loader{batch = 64}:iter() do last = bx end
  T.eq(last:size(1), 60000 % 64, 'the last, partial batch')
end)

-- the sample order a loader over TensorDataset(1..n) produces, epoch by epoch
local function orders(loader, epochs)
  local out = {}
  for e = 1, epochs do
    local o = {}
    for bx, by in loader:iter() do
      for i = 1, bx:size(1) do o[#o + 1] = bx:get(i) end
      T.eq(by:get(1), bx:get(1) * 10, 'targets follow their inputs')
    end
    out[e] = o
  end
  return out
end
local function key(o) return table.concat(o, ',') end

T.test('shuffle: every sample once per epoch, reproducible per seed, new order each epoch', function()
  local N = 1000
  local idx = mf.arange(1, N + 1):long()
  local ds = mf.data.TensorDataset(idx, idx * 10)
  local a = orders(ds:loader{batch = 64, shuffle = true, seed = 7}, 3)
  local b = orders(ds:loader{batch = 64, shuffle = true, seed = 7}, 3)
  local c = orders(ds:loader{batch = 64, shuffle = true, seed = 8}, 1)
  local plain = orders(ds:loader{batch = 64}, 2)
  for e = 1, 3 do
    T.eq(#a[e], N, 'epoch size')
    local seen = {}
    for _, v in ipairs(a[e]) do
      T.eq(seen[v], nil, 'sample ' .. v .. ' repeated in epoch ' .. e)
      seen[v] = true
    end
    for v = 1, N do T.eq(seen[v], true, 'sample ' .. v .. ' in epoch ' .. e) end
    T.eq(key(a[e]), key(b[e]), 'same seed, same order in epoch ' .. e)
  end
  T.eq(key(a[1]) ~= key(a[2]) and key(a[2]) ~= key(a[3]), true, 'a new order each epoch')
  T.eq(key(a[1]) ~= key(c[1]), true, 'another seed, another order')
  T.eq(key(a[1]) ~= key(plain[1]), true, 'shuffled differs from sequential')
  T.eq(key(plain[1]), key(plain[2]), 'unshuffled order is fixed')
  T.eq(plain[1][1], 1); T.eq(plain[1][N], N)
  -- resuming: set_epoch gives that epoch's order on a fresh loader
  local r = ds:loader{batch = 64, shuffle = true, seed = 7}
  T.eq(r.epoch, 1)
  r:set_epoch(3)
  T.eq(key(orders(r, 1)[1]), key(a[3]), 'set_epoch(3) reproduces epoch 3')
  T.eq(r.epoch, 4, 'iter advances the epoch')
  -- drop_last with shuffling: full batches only, no sample twice
  local d = orders(ds:loader{batch = 64, shuffle = true, seed = 7, drop_last = true}, 1)[1]
  T.eq(#d, 15 * 64)
  local seen = {}
  for _, v in ipairs(d) do T.eq(seen[v], nil, 'no repeats with drop_last'); seen[v] = true end
  -- shuffling leaves mf.rand's generator alone
  local st = mf.get_rng_state()
  orders(ds:loader{batch = 100, shuffle = true, seed = 1}, 1)
  local st2 = mf.get_rng_state()
  T.eq(st2.seed, st.seed); T.eq(st2.offset, st.offset)
end)

T.test('shuffled Fashion-MNIST batches hold the images of their indices', function()
  local loader = test:loader{batch = 500, shuffle = true, seed = 3}
  local order = loader:_order(1)
  local k = 0
  for bx, by in loader:iter() do
    k = k + 1
    if k == 2 then
      for _, j in ipairs{1, 250, 500} do
        local i = order:get(500 + j)
        local img, label = test:get(i)
        T.eq(ffi.string(mf.select(bx, 1, j):contiguous()._ptr, 784 * 4) == ffi.string(img:contiguous()._ptr, 784 * 4), true,
          'image of sample ' .. i)
        T.eq(by:get(j), label, 'label of sample ' .. i)
      end
    end
  end
  T.eq(k, 20)
end)

T.test('TensorDataset', function()
  local x = mf.tensor{{1, 2}, {3, 4}, {5, 6}}
  local ds = mf.data.TensorDataset(x, mf.tensor({3, 1, 2}, 'int64'))
  T.eq(#ds, 3)
  local r, l = ds:get(2)
  T.tensor_eq(r, {3, 4}); T.eq(l, 1)
  local ds2 = mf.data.TensorDataset(x, x * 2)
  local _, t2 = ds2:get(3)
  T.tensor_eq(t2, {10, 12})
  local only = mf.data.TensorDataset(x)
  local n = 0
  for bx, by in only:loader{batch = 2}:iter() do n = n + 1; T.eq(by, nil); T.eq(bx:size(2), 2) end
  T.eq(n, 2)
  local ax, ay = ds:tensors()
  T.eq(ax, x); T.eq(ay:get(1), 3)
  local empty = mf.data.TensorDataset(mf.zeros(0, 3))
  T.eq(#empty, 0); T.eq(#empty:loader{batch = 4}, 0)
  for _ in empty:loader{batch = 4, shuffle = true}:iter() do error('an empty dataset yields no batch') end
  T.errors(function() mf.data.TensorDataset(x, mf.ones(2)) end, 'inputs have 3 rows', 'targets have 2')
  T.errors(function() mf.data.TensorDataset({1, 2}) end, 'inputs must be a tensor')
  T.errors(function() mf.data.TensorDataset(mf.tensor(1)) end, 'at least one dim')
  T.errors(function() ds:get(4) end, 'index 4 out of range 1..3')
end)

T.test('loader: bad arguments', function()
  local ds = mf.data.TensorDataset(mf.ones(5, 2))
  T.errors(function() ds:loader{batch = 0} end, "loader: option 'batch' is 0; expected an integer >= 1")
  T.errors(function() ds:loader{batch = -3} end, "option 'batch' is -3")
  T.errors(function() ds:loader{batch = 2.5} end, "option 'batch' is 2.5; expected an integer")
  T.errors(function() ds:loader{batch = '64'} end, "option 'batch' is '64'; expected an integer >= 1")
  T.errors(function() ds:loader{batch_size = 64} end, "unknown option 'batch_size'; did you mean 'batch'?")
  T.errors(function() ds:loader{bach = 64} end, "unknown option 'bach'; did you mean 'batch'?")
  T.errors(function() ds:loader{batch = 2, shuffle = 1} end, "option 'shuffle' is 1; expected true or false")
  T.errors(function() ds:loader{batch = 2, drop_last = 'yes'} end, "option 'drop_last' is 'yes'; expected true or false")
  T.errors(function() ds:loader{batch = 2, seed = -1} end, "option 'seed' is -1")
  T.errors(function() ds:loader(64) end, 'expected a table of options')
  T.errors(function() ds.loader{batch = 2} end, 'call it as ds:loader')
  T.errors(function() ds.get(2) end, 'call it as ds:get(i)')
  T.errors(function() ds:loader{batch = 2}:set_epoch(0) end, 'epoch must be a positive integer')
end)

T.test('help entries', function()
  for _, k in ipairs{'data.fashion_mnist', 'data.TensorDataset', 'data.loader', 'data.set_epoch'} do
    T.eq(type(mf._docs[k]), 'string', 'docs for ' .. k)
  end
end)

T.finish()
