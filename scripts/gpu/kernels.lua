-- GPU check of the CUDA compute kernels (issue 16): every entry the cuda2 work implements runs on the
-- CPU and on the GPU with the same operands (random values, strided and broadcast views built as
-- headers over the same memory on both devices) and the results must agree: float32 within 1e-5
-- (relative, absolute below 1), float64 within 1e-12, integers and indices exactly, random draws
-- from the same seed and offset identical (randn within a few float32 ulps). Then the same through
-- the API: cuBLAS matmul, a fused graph on cuda against the CPU, mf.manual_seed on both devices.
-- Usage (from the repository root, on a GPU machine): ./build/moonflow scripts/gpu/kernels.lua
-- Prints one line per check and a summary; exits 1 when any check fails, 2 without a GPU.
-- --self-test runs the CPU against itself (the script's own check, on any machine; the API checks
-- that need cuda are skipped).
local mf = require 'moonflow'
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

local self_test = arg[1] == '--self-test'
if not self_test and not mf.cuda.is_available() then
  print('kernels.lua: no GPU (' .. mf.cuda.reason() .. '); nothing checked')
  os.exit(2, true)
end

local Kc = mf.kernels
local Kg = self_test and Kc or mf.kernels.of_device(C.mf_device_find('cuda'))
local DEV = not self_test and 'cuda' or nil
local results, failed = {}, 0

-- -- helpers -------------------------------------------------------------------------------------
-- every device copy stays referenced to the end: headers made by view() borrow its memory
local KEEP = {}
local function gpu(t)
  local g = self_test and t:clone() or t:cuda()
  KEEP[#KEEP + 1] = g
  return g
end
local function zeros(shape, dtype, device)
  return mf.zeros(shape, {dtype = dtype or 'float32', device = device and DEV})
end
local function pair_zeros(shape, dtype) return zeros(shape, dtype), zeros(shape, dtype, 'cuda') end
local function randn(shape, dtype) return mf.randn(shape):type(dtype or 'float32') end
-- a header over t's memory with other sizes and element strides (the same on both devices)
local function view(t, sizes, strides) return Kc.header_as(t, sizes, strides) end

-- a contiguous float64 CPU copy, a reader of its elements (NaNs made canonical: mf._value_at) and
-- its element count
local function values(t)
  local c = t:cpu():double():contiguous()
  local p, f64 = c._ptr, c._dtype_id
  return c, function(i) return mf._value_at(p, f64, i) end, tonumber(c._count)
end

local TOL = {float32 = 1e-5, float64 = 1e-12}
-- worst |g - c| / max(1, |c|) and, when the shapes differ or NaN meets a number, why they differ
local function worst_error(g, c)
  if g:dim() ~= c:dim() or g:numel() ~= c:numel() then
    return 0, ('shapes %s and %s'):format(g:shape_str(), c:shape_str())
  end
  local worst = 0
  local gc, gv, n = values(g)
  local cc, cv = values(c)
  for i = 0, n - 1 do
    local a, b = gv(i), cv(i)
    if a ~= a or b ~= b then
      if not (a ~= a and b ~= b) then return worst, ('element %d: %s vs %s'):format(i + 1, a, b) end
    elseif a ~= b then
      local e = math.abs(a - b) / math.max(1, math.abs(b))
      if e ~= e then e = math.huge end  -- inf against a finite number
      worst = math.max(worst, e)
    end
  end
  return worst, nil
end

-- g against c: NaN must meet NaN; tol from c's dtype unless given (0: exact)
local function compare(name, g, c, tol)
  tol = tol or TOL[c:dtype()] or 0
  local worst, why = worst_error(g, c)
  if not why and worst > tol then why = ('max error %.3g > %.3g'):format(worst, tol) end
  local ok = why == nil
  results[#results + 1] = {name = name, ok = ok, err = worst, why = why or ''}
  if not ok then failed = failed + 1 end
  print(('%-58s %-4s %10.3g  %s'):format(name, ok and 'ok' or 'FAIL', worst, why or ''))
end

local function check(name, fn)  -- a check that errors counts as failed, naming the error
  local okc, err = pcall(fn)
  if not okc then
    failed = failed + 1
    results[#results + 1] = {name = name, ok = false, err = 0, why = tostring(err)}
    print(('%-58s FAIL  %s'):format(name, tostring(err)))
  end
end

mf.manual_seed(2026)

-- -- matmul --------------------------------------------------------------------------------------
for _, dt in ipairs({'float32', 'float64'}) do
  check('matmul ' .. dt, function()
    local a, b = randn({37, 64}, dt), randn({64, 29}, dt)
    local yc, yg = pair_zeros({37, 29}, dt)
    Kc.matmul(yc, a, b, 0, 0)
    Kg.matmul(yg, gpu(a), gpu(b), 0, 0)
    compare('matmul ' .. dt .. ' 37x64 * 64x29', yg, yc)
    -- transposed operands by flag and by view (a 64x37 buffer read as its transpose)
    local at = randn({64, 37}, dt)
    local atg = gpu(at)
    Kc.matmul(yc, view(at, {37, 64}, {1, 37}), b, 0, 0)
    Kg.matmul(yg, view(atg, {37, 64}, {1, 37}), gpu(b), 0, 0)
    compare('matmul ' .. dt .. ' transposed view', yg, yc)
    Kc.matmul(yc, at, b, 1, 0)
    Kg.matmul(yg, atg, gpu(b), 1, 0)
    compare('matmul ' .. dt .. ' trans_a flag', yg, yc)
    -- batched, b broadcast over the batch
    local ba, bb = randn({3, 5, 7, 16}, dt), randn({5, 16, 9}, dt)
    local bc, bg = pair_zeros({3, 5, 7, 9}, dt)
    Kc.matmul(bc, ba, view(bb, {1, 5, 16, 9}, {0, 144, 9, 1}), 0, 0)
    Kg.matmul(bg, gpu(ba), view(gpu(bb), {1, 5, 16, 9}, {0, 144, 9, 1}), 0, 0)
    compare('matmul ' .. dt .. ' batched, broadcast b', bg, bc)
    -- a doubly strided operand (packed first)
    local big = randn({40, 70}, dt)
    local sa = view(big, {37, 16}, {70, 2})
    local sc, sg = pair_zeros({37, 29}, dt)
    local b16 = randn({16, 29}, dt)
    Kc.matmul(sc, sa, b16, 0, 0)
    Kg.matmul(sg, view(gpu(big), {37, 16}, {70, 2}), gpu(b16), 0, 0)
    compare('matmul ' .. dt .. ' doubly strided a', sg, sc)
  end)
end

-- -- gemm (c = alpha a b + beta c: addmm's one GEMM) ------------------------------------------------
for _, dt in ipairs({'float32', 'float64'}) do
  check('gemm ' .. dt, function()
    local a, b, c0 = randn({37, 64}, dt), randn({64, 29}, dt), randn({37, 29}, dt)
    local yc, yg = c0:clone(), gpu(c0)
    Kc.gemm(yc, a, b, 0, 0, 0.5, 2)
    Kg.gemm(yg, gpu(a), gpu(b), 0, 0, 0.5, 2)
    compare('gemm ' .. dt .. ' alpha 0.5, beta 2', yg, yc)
    local nc, ng = pair_zeros({37, 29}, dt)  -- beta 0: c is not read (NaN there is ignored)
    Kc.fill(nc, 0 / 0); Kg.fill(ng, 0 / 0)
    Kc.gemm(nc, a, b, 0, 0, 1, 0)
    Kg.gemm(ng, gpu(a), gpu(b), 0, 0, 1, 0)
    compare('gemm ' .. dt .. ' beta 0 over NaN', ng, nc)
    local ec, eg = c0:clone(), gpu(c0)  -- k = 0: beta c alone
    Kc.gemm(ec, mf.zeros({37, 0}, {dtype = dt}), mf.zeros({0, 29}, {dtype = dt}), 0, 0, 1, 3)
    Kg.gemm(eg, gpu(mf.zeros({37, 0}, {dtype = dt})), gpu(mf.zeros({0, 29}, {dtype = dt})), 0, 0, 1, 3)
    compare('gemm ' .. dt .. ' k = 0, beta 3', eg, ec)
  end)
end

-- -- reductions ----------------------------------------------------------------------------------
local R = Kc.R
local function reduce_case(code, name, x, mask, out_shape, out_dtype, p)
  local oc, og = pair_zeros(out_shape, out_dtype)
  local xg = gpu(x)
  if p then
    Kc.reduce_p(code, oc, x, mask, p)
    Kg.reduce_p(code, og, xg, mask, p)
  else
    Kc.reduce(code, oc, x, mask)
    Kg.reduce(code, og, xg, mask)
  end
  compare(name, og, oc)
end
check('reduce', function()
  local x = randn({6, 130, 5})
  x:set(2, 3, 1, 0 / 0)  -- a NaN: max/argmax must report it (its first position)
  for _, c in ipairs({{'sum', 'float32'}, {'mean', 'float32'}, {'max', 'float32'}, {'min', 'float32'},
                      {'prod', 'float32'}, {'argmax', 'int64'}, {'argmin', 'int64'}, {'any', 'uint8'},
                      {'all', 'uint8'}, {'logsumexp', 'float32'}}) do
    reduce_case(R[c[1]], 'reduce ' .. c[1] .. ' over dim 2 (NaN in one line)', x, 2, {6, 5}, c[2])
    reduce_case(R[c[1]], 'reduce ' .. c[1] .. ' over dims 1,3', x, 5, {130}, c[2])
  end
  local big = randn({3, 50000}, 'float64')  -- a block per output
  reduce_case(R.sum, 'reduce sum float64 over 50000 (block groups)', big, 2, {3}, 'float64')
  reduce_case(R.sum, 'reduce sum float64 full', big, 3, {}, 'float64')
  -- a strided x: the transpose of a 130x6 buffer
  local buf = randn({130, 6})
  local xc = view(buf, {6, 130}, {1, 6})
  local oc, og = pair_zeros({6}, 'float32')
  Kc.reduce(R.sum, oc, xc, 2)
  Kg.reduce(R.sum, og, view(gpu(buf), {6, 130}, {1, 6}), 2)
  compare('reduce sum over a transposed view', og, oc)
  -- integers: wrapping int64 sums and products, exact
  local xi = mf.randint(-50, 50, {4, 33}, {dtype = 'int32'})
  reduce_case(R.sum, 'reduce sum int32 -> int64', xi, 2, {4}, 'int64')
  reduce_case(R.prod, 'reduce prod int32 -> int64', xi, 2, {4}, 'int64')
  reduce_case(R.max, 'reduce max int32', xi, 2, {4}, 'int32')
  reduce_case(R.argmin, 'reduce argmin int32', xi, 1, {33}, 'int64')
  for _, c in ipairs({{'var', 1}, {'std', 0}, {'norm', 2}, {'norm', 1}, {'norm', 0}, {'norm', 3},
                      {'norm', math.huge}, {'norm', -math.huge}}) do
    reduce_case(R[c[1]], ('reduce_p %s p=%s'):format(c[1], c[2]), randn({7, 300}), 2, {7}, 'float32', c[2])
  end
end)

check('sum_to', function()
  local g = randn({4, 5, 6})
  local oc, og = pair_zeros({5, 1}, 'float32')
  Kc.sum_to(oc, g)
  Kg.sum_to(og, gpu(g))
  compare('sum_to 4x5x6 -> 5x1', og, oc)
end)

check('max_dim', function()
  local x = randn({9, 40})
  x:set(3, 7, 0 / 0)
  x:set(5, 2, 5)
  x:set(5, 9, 5)  -- a tie: the first wins
  for _, is_min in ipairs({0, 1}) do
    local vc, vg = pair_zeros({9}, 'float32')
    local ic, ig = pair_zeros({9}, 'int64')
    Kc.max_dim(vc, ic, x, 1, is_min)
    Kg.max_dim(vg, ig, gpu(x), 1, is_min)
    compare('max_dim values is_min=' .. is_min, vg, vc)
    compare('max_dim indices is_min=' .. is_min, ig, ic, 0)
  end
end)

check('softmax', function()
  local buf = randn({70, 12})
  for _, log in ipairs({0, 1}) do
    local yc, yg = pair_zeros({12, 70}, 'float32')
    Kc.softmax(yc, view(buf, {12, 70}, {1, 12}), 1, log)
    Kg.softmax(yg, view(gpu(buf), {12, 70}, {1, 12}), 1, log)
    compare('softmax log=' .. log .. ' along dim 2 of a transposed view', yg, yc)
    local x = randn({5, 3000}, 'float64')
    local zc, zg = pair_zeros({5, 3000}, 'float64')
    Kc.softmax(zc, x, 1, log)
    Kg.softmax(zg, gpu(x), 1, log)
    compare('softmax log=' .. log .. ' float64 rows of 3000', zg, zc)
  end
end)

check('softmax_xent', function()
  local x, lab = randn({33, 10}), mf.rand({33, 10})
  local lc, lg = pair_zeros({33}, 'float32')
  Kc.softmax_xent(lc, x, lab, 1)
  Kg.softmax_xent(lg, gpu(x), gpu(lab), 1)
  compare('softmax_xent 33x10', lg, lc)
end)

check('cumulate', function()
  local buf = randn({9, 6, 40})
  local xv = view(buf, {40, 6, 9}, {1, 40, 240})  -- a fully transposed view
  for _, d in ipairs({0, 1, 2}) do
    for _, pr in ipairs({{0, 0}, {1, 0}, {0, 1}, {1, 1}}) do
      local yc, yg = pair_zeros({40, 6, 9}, 'float32')
      Kc.cumulate(yc, xv, d, pr[1], pr[2])
      Kg.cumulate(yg, view(gpu(buf), {40, 6, 9}, {1, 40, 240}), d, pr[1], pr[2])
      compare(('cumulate dim %d prod=%d reverse=%d of a view'):format(d + 1, pr[1], pr[2]), yg, yc)
    end
  end
  local xi = mf.randint(-3, 4, {5, 30}, {dtype = 'int32'})
  local yc, yg = pair_zeros({5, 30}, 'int64')
  Kc.cumulate(yc, xi, 1, 1, 0)
  Kg.cumulate(yg, gpu(xi), 1, 1, 0)
  compare('cumprod int32 -> int64', yg, yc, 0)
  local x, gy = randn({7, 12}, 'float64'), randn({7, 12}, 'float64')
  x:set(2, 5, 0)  -- a zero: the gradient stays exact
  for _, rev in ipairs({0, 1}) do
    local gc, gg = pair_zeros({7, 12}, 'float64')
    Kc.cumprod_grad(gc, x, gy, 1, rev)
    Kg.cumprod_grad(gg, gpu(x), gpu(gy), 1, rev)
    compare('cumprod_grad float64 reverse=' .. rev .. ' (a zero in x)', gg, gc)
  end
end)

check('indexing', function()
  local x = randn({6, 9})
  local idx = mf.randint(1, 7, {4, 9}, {dtype = 'int64'})  -- along dim 1: rows 1..6, repeats likely
  local oc, og = pair_zeros({4, 9}, 'float32')
  Kc.gather(oc, x, idx, 0)
  Kg.gather(og, gpu(x), gpu(idx), 0)
  compare('gather along dim 1', og, oc, 0)
  local src = randn({4, 9})
  for _, add in ipairs({0, 1}) do
    local sc, sg = pair_zeros({6, 9}, 'float32')
    Kc.scatter(sc, x, idx, src, 0, add)
    Kg.scatter(sg, gpu(x), gpu(idx), gpu(src), 0, add)
    compare('scatter add=' .. add .. ' (repeated destinations: last write / sums in order)', sg, sc, 0)
  end
  local i1 = mf.tensor({3, 1, 3, 6, 3}):type('int64')
  local s2 = randn({6, 5})
  local ac, ag = pair_zeros({6, 6}, 'float32')
  local x66 = randn({6, 6})
  Kc.index_add(ac, x66, i1, s2, 1)
  Kg.index_add(ag, gpu(x66), gpu(i1), gpu(s2), 1)
  compare('index_add along dim 2, repeated indices', ag, ac, 0)
  local lc, lg = pair_zeros({6, 6}, 'float32')
  Kc.index_add_like(lc, s2, i1, 1)
  Kg.index_add_like(lg, gpu(s2), gpu(i1), 1)
  compare('index_add_like along dim 2', lg, lc, 0)
  -- a bad index: the same message on both devices (cuda: recorded on the device, raised at the next
  -- host wait, here mf.cuda.synchronize), and the device goes on working after it
  local bad = mf.tensor({{1, 2}, {7, 1}}):type('int64')
  local okc, ec = pcall(Kc.gather, zeros({2, 2}), x, bad, 0)
  local okg, eg = pcall(function()
    Kg.gather(zeros({2, 2}, 'float32', 'cuda'), gpu(x), gpu(bad), 0)
    mf.cuda.synchronize()
  end)
  local again = pcall(mf.cuda.synchronize)
  okg = okg or not again
  local same = not okc and not okg and tostring(ec):match('index 7 at position %[2,1%]') ~= nil and
               tostring(eg):match('index 7 at position %[2,1%]') ~= nil
  results[#results + 1] = {name = 'gather: a bad index is named on both devices', ok = same, err = 0,
                           why = same and '' or tostring(eg)}
  if not same then failed = failed + 1 end
  print(('%-58s %-4s'):format('gather: a bad index is named on both devices', same and 'ok' or 'FAIL'))
end)

check('selection', function()
  local x = randn({7, 13})
  local xv = view(x, {13, 7}, {1, 13})
  local mask = mf.rand({13, 1}):gt(0.4):type('uint8')  -- broadcast along dim 2
  local m = 0
  for i = 1, 13 do if mask:get(i, 1) ~= 0 then m = m + 1 end end
  local sc, sg = pair_zeros({m * 7}, 'float32')
  Kc.masked_select(sc, xv, mask, 0)
  Kg.masked_select(sg, view(gpu(x), {13, 7}, {1, 13}), gpu(mask), 0)
  compare('masked_select of a view by a broadcast mask', sg, sc, 0)
  -- a static size (graph mode): padded with the fill value past the selection, or cut short
  local pc, pg = pair_zeros({m * 7 + 5}, 'float32')
  Kc.masked_select(pc, xv, mask, -3.5)
  Kg.masked_select(pg, view(gpu(x), {13, 7}, {1, 13}), gpu(mask), -3.5)
  compare('masked_select padded with a fill value', pg, pc, 0)
  local cc, cg = pair_zeros({math.floor(m * 7 / 2)}, 'float32')
  Kc.masked_select(cc, xv, mask, 0)
  Kg.masked_select(cg, view(gpu(x), {13, 7}, {1, 13}), gpu(mask), 0)
  compare('masked_select cut to half the selection', cg, cc, 0)
  local xi = mf.randint(0, 3, {4, 5, 6}, {dtype = 'int32'})
  local nz = 0
  for _, v in ipairs(xi:reshape(120):totable()) do if v ~= 0 then nz = nz + 1 end end
  local nc, ng = pair_zeros({nz, 3}, 'int64')
  Kc.nonzero(nc, xi, 0)
  Kg.nonzero(ng, gpu(xi), 0)
  compare('nonzero int32 4x5x6', ng, nc, 0)
  local npc, npg = pair_zeros({nz + 4, 3}, 'int64')
  Kc.nonzero(npc, xi, -1)
  Kg.nonzero(npg, gpu(xi), -1)
  compare('nonzero padded with rows of a fill value', npg, npc, 0)
  local ncc, ncg = pair_zeros({math.floor(nz / 3), 3}, 'int64')
  Kc.nonzero(ncc, xi, 0)
  Kg.nonzero(ncg, gpu(xi), 0)
  compare('nonzero cut to a third of the rows', ncg, ncc, 0)
  local state = mf.get_rng_state()
  local pc = zeros({1000}, 'int64')
  Kc.randperm(pc)
  mf.set_rng_state(state)
  local pg = zeros({1000}, 'int64', 'cuda')
  Kg.randperm(pg)
  compare('randperm 1000 from the same state', pg, pc, 0)
  local probs = mf.rand({4, 9})
  probs:set(2, 3, 0)
  for _, rep in ipairs({0, 1}) do
    local st = mf.get_rng_state()
    local mc = zeros({4, 5}, 'int64')
    Kc.multinomial(mc, probs, rep)
    mf.set_rng_state(st)
    local mg = zeros({4, 5}, 'int64', 'cuda')
    Kg.multinomial(mg, gpu(probs), rep)
    compare('multinomial 4x9 -> 5, replacement=' .. rep, mg, mc, 0)
  end
end)

check('sort', function()
  local x = mf.randint(0, 6, {5, 40}, {dtype = 'int32'}):float()  -- many ties: positions decide
  x:set(2, 3, 0 / 0)
  x:set(2, 30, 0 / 0)
  local xv = view(x, {40, 5}, {1, 40})
  local xg = view(gpu(x), {40, 5}, {1, 40})
  for _, desc in ipairs({0, 1}) do
    local vc, vg = pair_zeros({40, 5}, 'float32')
    local ic, ig = pair_zeros({40, 5}, 'int64')
    Kc.sort(vc, ic, xv, 0, desc)
    Kg.sort(vg, ig, xg, 0, desc)
    compare('sort dim 1 of a view, descending=' .. desc .. ' (values)', vg, vc, 0)
    compare('sort dim 1 of a view, descending=' .. desc .. ' (indices)', ig, ic, 0)
  end
  for _, so in ipairs({0, 1}) do
    local vc, vg = pair_zeros({5, 7}, 'float32')
    local ic, ig = pair_zeros({5, 7}, 'int64')
    Kc.topk(vc, ic, x, 1, 7, 1, so)
    Kg.topk(vg, ig, gpu(x), 1, 7, 1, so)
    compare('topk 7 of 40, sorted=' .. so .. ' (indices)', ig, ic, 0)
    compare('topk 7 of 40, sorted=' .. so .. ' (values)', vg, vc, 0)
  end
  local vc, vg = pair_zeros({5}, 'float32')
  local ic, ig = pair_zeros({5}, 'int64')
  Kc.kthvalue(vc, ic, x, 1, 11)
  Kg.kthvalue(vg, ig, gpu(x), 1, 11)
  compare('kthvalue 11 of 40 (indices)', ig, ic, 0)
end)

-- -- optimizer updates -----------------------------------------------------------------------------
check('updates', function()
  for _, dt in ipairs({'float32', 'float64'}) do
    local w, g, m, v = randn({31, 17}, dt), randn({31, 17}, dt), randn({31, 17}, dt), mf.rand({31, 17}):type(dt)
    local b = randn({17}, dt)  -- a broadcast gradient
    local wg, mg, vg = gpu(w), gpu(m), gpu(v)
    -- lr and adam's step count are one-element tensors the routines read where they live
    local lr, lr32, t = mf.tensor(0.1, 'float64'), mf.tensor(0.001, 'float32'), mf.tensor(3, 'float64')
    Kc.sgd_update(w, g, lr, 0.01)
    Kg.sgd_update(wg, gpu(g), gpu(lr), 0.01)
    compare('sgd_update ' .. dt, wg, w)
    Kc.momentum_update(w, m, b, lr, 0.9, 0.1, 0.01, 1)
    Kg.momentum_update(wg, mg, gpu(b), gpu(lr), 0.9, 0.1, 0.01, 1)
    compare('momentum_update ' .. dt .. ' nesterov, broadcast grad (var)', wg, w)
    compare('momentum_update ' .. dt .. ' (accum)', mg, m)
    Kc.adam_update(w, m, v, g, t, lr32, 0.9, 0.999, 1e-8, 0.5, 1)
    Kg.adam_update(wg, mg, vg, gpu(g), gpu(t), gpu(lr32), 0.9, 0.999, 1e-8, 0.5, 1)
    compare('adam_update ' .. dt .. ' decoupled decay, t = 3 (var)', wg, w)
    compare('adam_update ' .. dt .. ' (v)', vg, v)
    Kc.adam_update(w, m, v, g, t, lr, 0.9, 0.999, 1e-8, 0.01, 2)
    Kg.adam_update(wg, mg, vg, gpu(g), gpu(t), gpu(lr), 0.9, 0.999, 1e-8, 0.01, 2)
    compare('adam_update ' .. dt .. ' L2 decay, TensorFlow epsilon (var)', wg, w)
  end
  -- a step count below 1: the CPU raises at once; cuda records it and the next host read raises
  local w = randn({4})
  local okc, ec = pcall(Kc.adam_update, w, zeros({4}), zeros({4}), randn({4}), mf.tensor(0, 'float64'),
    mf.tensor(0.1), 0.9, 0.999, 1e-8, 0, 0)
  local okg, eg = pcall(function()
    Kg.adam_update(gpu(w), gpu(zeros({4})), gpu(zeros({4})), gpu(randn({4})), gpu(mf.tensor(0, 'float64')),
      gpu(mf.tensor(0.1)), 0.9, 0.999, 1e-8, 0, 0)
    mf.cuda.synchronize()
  end)
  local same = not okc and not okg and tostring(ec):find('adam_update: step is 0', 1, true) ~= nil and
               tostring(eg):find('adam_update: step is 0', 1, true) ~= nil
  results[#results + 1] = {name = 'adam_update: a step count of 0 is named on both devices', ok = same, err = 0,
                           why = same and '' or tostring(eg)}
  if not same then failed = failed + 1 end
  print(('%-58s %-4s'):format('adam_update: a step count of 0 is named on both devices', same and 'ok' or 'FAIL'))
end)

-- -- random draws: the same counters on both devices -----------------------------------------------
check('rng', function()
  local rng = Kc.rng
  local function same_draw(name, fn_c, fn_g, tol)
    local state = mf.get_rng_state()
    local c = fn_c()
    local after = mf.get_rng_state()
    mf.set_rng_state(state)
    local g = fn_g()
    local after_g = mf.get_rng_state()
    compare(name, g, c, tol)
    compare(name .. ' (offset after)', mf.tensor({after_g.offset}), mf.tensor({after.offset}), 0)
  end
  for _, n in ipairs({1, 7, 4096 + 3}) do
    for _, dt in ipairs({'float32', 'float64'}) do
      same_draw(('rand %s n=%d'):format(dt, n), function() local t = zeros({n}, dt); Kc.rand(t, 0, -2, 3); return t end,
                function() local t = zeros({n}, dt, 'cuda'); Kg.rand(t, 0, -2, 3); return t end, 0)
      same_draw(('randn %s n=%d'):format(dt, n), function() local t = zeros({n}, dt); Kc.rand(t, 1, 1, 2); return t end,
                function() local t = zeros({n}, dt, 'cuda'); Kg.rand(t, 1, 1, 2); return t end,
                dt == 'float32' and 1e-5 or 1e-12)
      same_draw(('dropout_mask %s n=%d'):format(dt, n),
                function() local t = zeros({n}, dt); Kc.dropout_mask(t, 0.3); return t end,
                function() local t = zeros({n}, dt, 'cuda'); Kg.dropout_mask(t, 0.3); return t end, 0)
    end
    for _, dt in ipairs({'int64', 'int32', 'uint8'}) do
      same_draw(('randint %s n=%d'):format(dt, n), function() local t = zeros({n}, dt); Kc.randint(t, 0, 200); return t end,
                function() local t = zeros({n}, dt, 'cuda'); Kg.randint(t, 0, 200); return t end, 0)
    end
  end
  -- through the API: mf.manual_seed gives the same numbers on both devices
  mf.manual_seed(7)
  local a = mf.randn(1000)
  mf.manual_seed(7)
  local b = mf.randn(1000, {device = DEV})
  compare('mf.manual_seed(7); randn(1000) on cpu and cuda', b, a, 1e-5)
  assert(rng ~= nil)
end)

-- -- batch_norm, convolution, pooling --------------------------------------------------------------------
check('batch_norm', function()
  local x, w, b = randn({8, 6, 5, 5}), randn({6}), randn({6})
  local yc, yg = pair_zeros({8, 6, 5, 5}, 'float32')
  Kc.batch_norm(yc, x, w, b, 1e-5)
  Kg.batch_norm(yg, gpu(x), gpu(w), gpu(b), 1e-5)
  compare('batch_norm 8x6x5x5', yg, yc)
end)

check('conv2d', function()
  for _, dt in ipairs({'float32', 'float64'}) do
    for _, hp in ipairs({{1, 1, 0, 0, 1, 1}, {2, 1, 1, 2, 1, 1}, {1, 2, 1, 0, 2, 1}}) do
      local sh, sw, ph, pw, dh, dw = unpack(hp)
      local x, w = randn({4, 3, 13, 11}, dt), randn({5, 3, 3, 3}, dt)
      local ho = math.floor((13 + 2 * ph - dh * 2 - 1) / sh) + 1
      local wo = math.floor((11 + 2 * pw - dw * 2 - 1) / sw) + 1
      local tag = ('%s s%dx%d p%dx%d d%dx%d'):format(dt, sh, sw, ph, pw, dh, dw)
      local yc, yg = pair_zeros({4, 5, ho, wo}, dt)
      local xg, wg = gpu(x), gpu(w)
      local nbytes = Kg.conv2d_workspace(0, yg, xg, wg, sh, sw, ph, pw, dh, dw)
      local ws = zeros({nbytes}, 'uint8', 'cuda')
      Kc.conv2d(yc, x, w, nil, sh, sw, ph, pw, dh, dw)
      Kg.conv2d(yg, xg, wg, ws, sh, sw, ph, pw, dh, dw)
      compare('conv2d ' .. tag, yg, yc)
      local gy = randn({4, 5, ho, wo}, dt)
      local gxc, gxg = pair_zeros({4, 3, 13, 11}, dt)
      Kc.conv2d_backward_input(gxc, gy, w, nil, sh, sw, ph, pw, dh, dw)
      Kg.conv2d_backward_input(gxg, gpu(gy), wg, nil, sh, sw, ph, pw, dh, dw)
      compare('conv2d_backward_input ' .. tag, gxg, gxc)
      local gwc, gwg = pair_zeros({5, 3, 3, 3}, dt)
      Kc.conv2d_backward_weight(gwc, gy, x, nil, sh, sw, ph, pw, dh, dw)
      Kg.conv2d_backward_weight(gwg, gpu(gy), xg, nil, sh, sw, ph, pw, dh, dw)
      compare('conv2d_backward_weight ' .. tag, gwg, gwc)
    end
  end
  -- a strided input: channels last in memory (N, H, W, C buffer read as N, C, H, W)
  local buf = randn({2, 9, 9, 3})
  local xs = {2, 3, 9, 9}
  local st = {243, 1, 27, 3}
  local w = randn({4, 3, 3, 3})
  local yc, yg = pair_zeros({2, 4, 7, 7}, 'float32')
  Kc.conv2d(yc, view(buf, xs, st), w, nil, 1, 1, 0, 0, 1, 1)
  Kg.conv2d(yg, view(gpu(buf), xs, st), gpu(w), nil, 1, 1, 0, 0, 1, 1)
  compare('conv2d of a channels-last view', yg, yc)
end)

check('pooling', function()
  local x = randn({3, 4, 11, 10})
  x:set(1, 1, 2, 2, 0 / 0)
  local xg = gpu(x)
  for _, kp in ipairs({{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}}) do
    local kh, kw, sh, sw, ph, pw = unpack(kp)
    local ho, wo = math.floor((11 + 2 * ph - kh) / sh) + 1, math.floor((10 + 2 * pw - kw) / sw) + 1
    local tag = ('k%dx%d s%dx%d p%dx%d'):format(kh, kw, sh, sw, ph, pw)
    local yc, yg = pair_zeros({3, 4, ho, wo}, 'float32')
    Kc.max_pool2d(yc, x, kh, kw, sh, sw, ph, pw)
    Kg.max_pool2d(yg, xg, kh, kw, sh, sw, ph, pw)
    compare('max_pool2d ' .. tag .. ' (a NaN)', yg, yc)
    local gy = randn({3, 4, ho, wo})
    local gxc, gxg = pair_zeros({3, 4, 11, 10}, 'float32')
    Kc.max_pool2d_backward(gxc, gy, x, kh, kw, sh, sw, ph, pw)
    Kg.max_pool2d_backward(gxg, gpu(gy), xg, kh, kw, sh, sw, ph, pw)
    compare('max_pool2d_backward ' .. tag, gxg, gxc)
    for _, inc in ipairs({0, 1}) do
      local x2 = randn({3, 4, 11, 10})
      Kc.avg_pool2d(yc, x2, kh, kw, sh, sw, ph, pw, inc)
      Kg.avg_pool2d(yg, gpu(x2), kh, kw, sh, sw, ph, pw, inc)
      compare(('avg_pool2d %s include_pad=%d'):format(tag, inc), yg, yc)
      Kc.avg_pool2d_backward(gxc, gy, kh, kw, sh, sw, ph, pw, inc)
      Kg.avg_pool2d_backward(gxg, gpu(gy), kh, kw, sh, sw, ph, pw, inc)
      compare(('avg_pool2d_backward %s include_pad=%d'):format(tag, inc), gxg, gxc)
    end
  end
  for _, o in ipairs({{1, 1}, {3, 4}, {5, 7}}) do
    local x2 = randn({2, 3, 11, 10})
    local yc, yg = pair_zeros({2, 3, o[1], o[2]}, 'float32')
    Kc.adaptive_avg_pool2d(yc, x2)
    Kg.adaptive_avg_pool2d(yg, gpu(x2))
    compare(('adaptive_avg_pool2d to %dx%d'):format(o[1], o[2]), yg, yc)
    local gy = randn({2, 3, o[1], o[2]})
    local gxc, gxg = pair_zeros({2, 3, 11, 10}, 'float32')
    Kc.adaptive_avg_pool2d_backward(gxc, gy)
    Kg.adaptive_avg_pool2d_backward(gxg, gpu(gy))
    compare(('adaptive_avg_pool2d_backward from %dx%d'):format(o[1], o[2]), gxg, gxc)
  end
end)

-- -- fused kernels from strings -----------------------------------------------------------------------
check('fused', function()
  local U, B = Kc.U, Kc.B
  -- every fusable op once: a chain over x (and y as every binary step's b)
  local prog, last, steps = {}, 0, 0
  for _, name in ipairs({'neg', 'abs', 'exp', 'log1p', 'sqrt', 'rsqrt', 'sigmoid', 'tanh', 'relu', 'sin', 'cos',
                         'square', 'sign', 'floor', 'ceil', 'round', 'erf', 'gelu'}) do
    prog[#prog + 1], prog[#prog + 2], prog[#prog + 3] = U[name], last, 0
    last, steps = 2 + steps, steps + 1
  end
  for _, name in ipairs({'add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'relu_backward'}) do
    prog[#prog + 1], prog[#prog + 2], prog[#prog + 3] = B[name], last, 1
    last, steps = 2 + steps, steps + 1
  end
  for _, dt in ipairs({'float32', 'float64'}) do
    local x, y = mf.rand({64, 33}):type(dt), (mf.rand({33}) + 0.5):type(dt)  -- y broadcast along dim 1
    local p = Kc.fused_program(2, prog)
    local oc, og = pair_zeros({64, 33}, dt)
    Kc.fused(p, oc, 2, Kc.tensor_list({x, y}))
    Kg.fused(p, og, 2, Kc.tensor_list({gpu(x), gpu(y)}))
    compare('fused: every op once, ' .. dt .. ', broadcast input', og, oc)
    -- a strided input (a transposed view) and a scalar
    local buf = mf.rand({33, 64}):type(dt)
    local s = mf.tensor({0.25}):type(dt)
    local p2 = Kc.fused_program(2, {B.mul, 0, 1, U.exp, 2, 0})
    Kc.fused(p2, oc, 2, Kc.tensor_list({view(buf, {64, 33}, {1, 64}), s}))
    Kg.fused(p2, og, 2, Kc.tensor_list({view(gpu(buf), {64, 33}, {1, 64}), gpu(s)}))
    compare('fused: exp(view * scalar) ' .. dt, og, oc)
  end
  -- a fused graph on cuda against the CPU (the session's fusion pass, then NVRTC at the first run)
  local xs = mf.placeholder('float32', {-1, 50}, 'x')
  local w = mf.Variable(mf.randn(50), 'w')
  local out = mf.tanh(xs * w + 1) * 0.5 - mf.exp(-xs)
  local feed = mf.randn(40, 50)
  local sc, sg = mf.Session(), mf.Session{device = DEV}
  sc:run(mf.global_variables_initializer())
  sg:run(mf.global_variables_initializer())
  compare('fused graph: tanh(x * w + 1) * 0.5 - exp(-x), cuda vs cpu', sg:run(out, {[xs] = feed}),
          sc:run(out, {[xs] = feed}))
end)

-- -- through the API: cuBLAS matmul ----------------------------------------------------------------------
check('api matmul', function()
  -- float32 sums of 256 products in two orders differ by more than 1e-5 of the result (the first
  -- GPU run: 1.5e-5), so both devices are held to the float64 product: cuBLAS (TF32 off) within
  -- 1e-5 or twice the CPU's own error, whichever is larger
  local a, b = mf.randn(128, 256), mf.randn(256, 64)
  local ref = mf.matmul(a:double(), b:double())
  local cpu_err = worst_error(mf.matmul(a, b):double(), ref)
  compare('mf.matmul 128x256 * 256x64 on cuda vs float64', mf.matmul(gpu(a), gpu(b)):double(), ref,
          math.max(1e-5, 2 * cpu_err))
  local ba, bb = mf.randn(4, 32, 48):double(), mf.randn(4, 48, 16):double()
  compare('mf.matmul batched float64 on cuda', mf.matmul(gpu(ba), gpu(bb)), mf.matmul(ba, bb))
end)

local n_ok = 0
for _, r in ipairs(results) do if r.ok then n_ok = n_ok + 1 end end
print(('kernels.lua: %d checks, %d passed, %d failed'):format(#results, n_ok, failed))
os.exit(failed == 0 and 0 or 1, true)  -- closing the state runs the finalizers (LeakSanitizer)
