-- Every registered op, timed eagerly against PyTorch in one run (issue 12): the coverage rule is
-- that each name in mf.list_ops() has a bench case below or an entry in EXEMPT saying through
-- which op it is timed or why it is not user-facing; otherwise the suite stops at the start with a
-- message naming the ops without one.
--
-- usage: moonflow scripts/bench/ops.lua [--rounds 5] [--sizes small,large] [--only PATTERN]
--          [--json FILE] [--no-torch] [--quick]
--   --rounds N    rounds over every case (default 5); figures are medians over rounds
--   --batches N   timed batches of about 20 ms per case and round (default 3; their median is the
--                 round's figure)
--   --sizes       small: about 64 KB of input (16K float32, cache-resident); large: 16 MB or more
--                 (4M float32, memory-bound); both by default
--   --only P      only cases whose op or name matches the Lua pattern P, or one of the patterns
--                 P1|P2|... (the coverage check still runs)
--   --json FILE   also write every figure (per-round times, limits, summary) as JSON
--   --no-torch    moonflow alone (no python)
--   --diff OLD NEW  compare two --json files (two builds, or before and after a change): per
--                 case moonflow new/old and both runs' mf/pt, and the geomean of new/old
--   --quick       smoke run: 1 round, 1 call per timing, tiny sizes (8 x 8) unless --sizes names
--                 others; checks that every case runs, times nothing meaningful
-- Env: PYTHON (default /usr/bin/python3). The PyTorch twin (ops_torch.py) runs as a co-process with
-- LD_LIBRARY_PATH on the OpenMP OpenBLAS and moonflow's thread count; run moonflow with MF_NUM_THREADS=2
-- (run.sh does both). In each round every case is timed on both sides back to back, the side
-- going first alternating by round, so a slow phase of the machine hits both alike.
--
-- A case: {op, ins = {input specs}, mf = function(S, a, b, ...), pt = 'python', ...}. An input
-- spec is 'kind:shape': kinds n (randn), p (uniform 0.5..2, for log, sqrt), u (uniform 0..1),
-- o (uniform 0.999..1.001: repeated in-place products stay finite), m (a uint8 / bool mask, half
-- set), i (int64 indices; 'i:SHAPE@HI' draws 1..S[HI] in moonflow, 0..S[HI]-1 in PyTorch), l (a
-- one-element lr tensor 1e-3), t (a one-element step count 1); shapes are keys of the size table
-- (M = r x c, V = n, ...: shape_of). pt is a Python expression over the inputs a, b, c, ... (torch
-- tensors), S (the same sizes, S.dtype a torch dtype), torch and F (torch.nn.functional); a pt
-- with newlines is a function body. Options: name (a variant, default the op), f64 (also timed in
-- float64: the math ops), limit ('view': no data moved, no limit; 'gemm': gemm(S) lists
-- {m, n, k[, count]} products timed on raw OpenBLAS), pt_setup (a Python expression computed
-- once per input set, passed to pt as P), dynamic (output sizes follow the values: only ranks are
-- compared), unread (a set of input positions the op does not read: a destination it only writes,
-- a tensor whose shape alone is used; left out of the bytes moved), into (an out= variant: reported
-- apart, see INTO). The PyTorch code must give outputs of moonflow's dtypes and shapes, or the case fails. Elsewhere than views and gemm cases,
-- the limit is bandwidth-bound: the bytes of every tensor input read and output written once,
-- over the copy bandwidth measured in the same run (large size only; a small input lives in the
-- caches).
local ffi = require 'ffi'
local json = require 'moonflow.json'
local here = debug.getinfo(1, 'S').source:match('^@(.*)[/\\]') or '.'
local T = dofile(here .. '/timing.lua')
pcall(ffi.cdef, [[
void *memcpy(void *dst, const void *src, size_t n);
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc);
void cblas_dgemm(int order, int transa, int transb, int m, int n, int k, double alpha, const double *a,
                 int lda, const double *b, int ldb, double beta, double *c, int ldc);
]])

-- sizes ------------------------------------------------------------------------------------------
-- n elements in the main input; M = r x c; IMG = N x C x H x W (a ResNet-style 3x3 layer at the
-- large size); B3 = batch x r x c for bmm; U = 8 x n/8 (unbind makes at most 64 views).
local SIZES = {
  small = {label = 'small', n = 16384, r = 128, c = 128, img = {4, 16, 16, 16}, b3 = {4, 64, 64}},
  large = {label = 'large', n = 4194304, r = 2048, c = 2048, img = {32, 64, 56, 56}, b3 = {16, 512, 512}},
  quick = {label = 'quick', n = 64, r = 8, c = 8, img = {1, 2, 4, 4}, b3 = {2, 4, 4}},
}
local function shape_of(S, key)
  local i = S.img
  local shapes = {
    M = {S.r, S.c}, V = {S.n}, ROW = {1, S.c}, COL = {S.r, 1}, R = {S.r}, C = {S.c},
    M3 = {S.r, S.c, 1}, IMG = i, POOL = {i[1], i[2], i[3] / 2, i[4] / 2}, POOL1 = {i[1], i[2], 1, 1},
    W = {i[2], i[2], 3, 3}, CH = {i[2]}, B3 = S.b3, ONE = {1}, U = {8, S.n / 8}, N4 = {S.r / 4, S.c, 4},
  }
  return assert(shapes[key], 'ops.lua: unknown shape key ' .. key)
end

-- cases, one table per op family ------------------------------------------------------------------
local function unary(op, kind, pt, extra)
  local c = {op, ins = {kind .. ':M'}, mf = function(_, a) return mf[op](a) end, pt = pt}
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
local F64 = {f64 = true}

local MATH = {  -- timed in float32 and float64
  unary('exp', 'n', 'torch.exp(a)', F64), unary('log', 'p', 'torch.log(a)', F64),
  unary('log1p', 'p', 'torch.log1p(a)', F64), unary('sqrt', 'p', 'torch.sqrt(a)', F64),
  unary('rsqrt', 'p', 'torch.rsqrt(a)', F64), unary('tanh', 'n', 'torch.tanh(a)', F64),
  unary('sigmoid', 'n', 'torch.sigmoid(a)', F64), unary('erf', 'n', 'torch.erf(a)', F64),
  unary('gelu', 'n', 'F.gelu(a)', F64), unary('sin', 'n', 'torch.sin(a)', F64),
  unary('cos', 'n', 'torch.cos(a)', F64),
  {'pow', ins = {'p:M'}, mf = function(_, a) return mf.pow(a, 1.5) end, pt = 'torch.pow(a, 1.5)', f64 = true},
  {'pow', name = 'pow_tensor', ins = {'p:M', 'n:M'}, mf = function(_, a, b) return mf.pow(a, b) end,
   pt = 'torch.pow(a, b)', f64 = true},
}

local ELEMWISE = {
  unary('abs', 'n', 'torch.abs(a)'), unary('neg', 'n', 'torch.neg(a)'), unary('sign', 'n', 'torch.sign(a)'),
  unary('square', 'n', 'torch.square(a)'), unary('relu', 'n', 'torch.relu(a)'),
  unary('floor', 'n', 'torch.floor(a)'), unary('ceil', 'n', 'torch.ceil(a)'), unary('round', 'n', 'torch.round(a)'),
  unary('isnan', 'n', 'torch.isnan(a)'), unary('isfinite', 'n', 'torch.isfinite(a)'),
  {'leaky_relu', ins = {'n:M'}, mf = function(_, a) return mf.leaky_relu(a, 0.01) end, pt = 'F.leaky_relu(a, 0.01)'},
  {'clamp', ins = {'n:M'}, mf = function(_, a) return a:clamp(-0.5, 0.5) end, pt = 'torch.clamp(a, -0.5, 0.5)'},
  {'cast', ins = {'n:M'}, mf = function(_, a) return a:cast('float64') end, pt = 'a.to(torch.float64)'},
  {'relu_backward', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.relu_backward(a, b) end,
   pt = 'torch.ops.aten.threshold_backward(a, b, 0)'},
  {'add', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return a + b end, pt = 'a + b'},
  {'add', name = 'add_row', ins = {'n:M', 'n:ROW'}, mf = function(_, a, b) return a + b end, pt = 'a + b'},
  {'add', name = 'add_scalar', ins = {'n:M'}, mf = function(_, a) return a + 2 end, pt = 'a + 2'},
  {'sub', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return a - b end, pt = 'a - b'},
  {'mul', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return a * b end, pt = 'a * b'},
  {'div', ins = {'n:M', 'p:M'}, mf = function(_, a, b) return a / b end, pt = 'a / b'},
  {'maximum', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.maximum(a, b) end, pt = 'torch.maximum(a, b)'},
  {'minimum', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.minimum(a, b) end, pt = 'torch.minimum(a, b)'},
  {'where', ins = {'m:M', 'n:M', 'n:M'}, mf = function(_, m, a, b) return mf.where(m, a, b) end,
   pt = 'torch.where(a, b, c)'},
}
for _, cmp in ipairs{'eq', 'ne', 'lt', 'le', 'gt', 'ge'} do
  ELEMWISE[#ELEMWISE + 1] = {cmp, ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf[cmp](a, b) end,
    pt = ('torch.%s(a, b)'):format(cmp)}
end

local INPLACE = {  -- ops that write their first input
  {'add_', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return a:add_(b) end, pt = 'a.add_(b)'},
  {'sub_', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return a:sub_(b) end, pt = 'a.sub_(b)'},
  {'mul_', ins = {'n:M', 'o:M'}, mf = function(_, a, b) return a:mul_(b) end, pt = 'a.mul_(b)'},
  {'div_', ins = {'n:M', 'o:M'}, mf = function(_, a, b) return a:div_(b) end, pt = 'a.div_(b)'},
  {'clamp_', ins = {'n:M'}, mf = function(_, a) return a:clamp_(-0.5, 0.5) end, pt = 'a.clamp_(-0.5, 0.5)'},
  {'masked_fill_', ins = {'n:M', 'm:M'}, mf = function(_, a, m) return a:masked_fill_(m, 0) end,
   pt = 'a.masked_fill_(b, 0.0)'},
  {'zero_', ins = {'n:M'}, mf = function(_, a) return a:zero_() end, pt = 'a.zero_()', unread = {true}},
  {'fill', ins = {'n:M'}, mf = function(_, a) return mf.fill(a, 1.5) end, pt = 'a.fill_(1.5)', unread = {true}},
  {'copy', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.copy(a, b) end, pt = 'a.copy_(b)',
   unread = {true}},
  {'copy', name = 'copy_t', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.copy(a, b:t()) end,
   pt = 'a.copy_(b.t())', unread = {true}},
  {'assign', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.assign(a, b) end, pt = 'a.copy_(b)',
   unread = {true}},
  {'assign_add', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.assign_add(a, b) end, pt = 'a.add_(b)'},
  {'uniform_', ins = {'n:M'}, mf = function(_, a) return mf.uniform_(a) end, pt = 'a.uniform_()', unread = {true}},
  {'normal_', ins = {'n:M'}, mf = function(_, a) return mf.normal_(a) end, pt = 'a.normal_()', unread = {true}},
  {'scatter_', ins = {'n:M', 'i:M@c', 'n:M'}, mf = function(_, a, i, s) return mf.scatter_(a, i, s, 2) end,
   pt = 'a.scatter_(1, b, c)'},
  {'scatter_add_', ins = {'n:M', 'i:M@c', 'n:M'}, mf = function(_, a, i, s) return mf.scatter_add_(a, i, s, 2) end,
   pt = 'a.scatter_add_(1, b, c)'},
  {'index_add_', ins = {'n:M', 'i:R@r', 'n:M'}, mf = function(_, a, i, s) return mf.index_add_(a, i, s, 1) end,
   pt = 'a.index_add_(0, b, c)'},
}

local function red(op, pt, dim, extra)  -- a reduction over dim (nil: all)
  local c = {op, name = dim and (op .. '_dim' .. dim) or op, ins = {'n:M'},
    mf = function(_, a) if dim then return mf[op](a, dim) end return mf[op](a) end, pt = pt}
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
local REDUCE = {
  red('sum', 'torch.sum(a)'), red('sum', 'torch.sum(a, 0)', 1), red('sum', 'torch.sum(a, 1)', 2),
  -- a middle dim over narrow rows: (r/4, c, 4) summed over dim 2 (the column path's narrow blocks)
  red('sum', 'torch.sum(a, 1)', 2, {name = 'sum_mid_narrow', ins = {'n:N4'}}),
  red('mean', 'torch.mean(a)'), red('mean', 'torch.mean(a, 1)', 2),
  red('max', 'torch.max(a)'), red('max', 'torch.max(a, 0)', 1), red('max', 'torch.max(a, 1)', 2),
  red('min', 'torch.min(a, 1)', 2),
  red('prod', 'torch.prod(a, 1)', 2, {ins = {'o:M'}}),
  red('argmax', 'torch.argmax(a, 1)', 2), red('argmin', 'torch.argmin(a, 1)', 2),
  red('logsumexp', 'torch.logsumexp(a, 1)', 2), red('norm', 'torch.linalg.vector_norm(a)'),
  red('cumsum', 'torch.cumsum(a, 1)', 2), red('cumprod', 'torch.cumprod(a, 1)', 2, {ins = {'o:M'}}),
  {'all', ins = {'m:M'}, mf = function(_, m) return mf.all(m, 2) end, pt = 'torch.all(a, 1)'},
  {'any', ins = {'m:M'}, mf = function(_, m) return mf.any(m, 2) end, pt = 'torch.any(a, 1)'},
  {'sum_to', ins = {'n:M', 'n:ROW'}, mf = function(_, a, b) return mf.sum_to(a, b) end,
   pt = 'torch.sum(a, 0, keepdim=True)', unread = {[2] = true}},
}

local STATS = {
  red('var', 'torch.var(a, 1)', 2), red('std', 'torch.std(a, 1)', 2), red('var', 'torch.var(a)'),
  {'kthvalue', ins = {'n:M'}, mf = function(_, a) return mf.kthvalue(a, 3, 2) end, pt = 'torch.kthvalue(a, 3, 1)'},
}

local SORT = {
  {'sort', ins = {'n:M'}, mf = function(_, a) return mf.sort(a, 2) end, pt = 'torch.sort(a, 1)'},
  {'topk', ins = {'n:M'}, mf = function(_, a) return mf.topk(a, 8, 2) end, pt = 'torch.topk(a, 8, 1)'},
}

local function view(op, ins, f, pt) return {op, ins = ins, mf = f, pt = pt, limit = 'view'} end
local SHAPE = {
  view('reshape', {'n:M'}, function(S, a) return a:reshape(S.c, S.r) end, 'a.reshape(S.c, S.r)'),
  view('reshape_as', {'n:M', 'n:M'}, function(_, a, b) return mf.reshape_as(a, b) end, 'a.reshape_as(b)'),
  view('transpose', {'n:M'}, function(_, a) return a:transpose(1, 2) end, 'a.transpose(0, 1)'),
  view('permute', {'n:M'}, function(_, a) return a:permute({2, 1}) end, 'a.permute(1, 0)'),
  view('narrow', {'n:M'}, function(S, a) return a:narrow(1, 2, S.r / 2) end, 'a.narrow(0, 1, S.r // 2)'),
  view('select', {'n:M'}, function(_, a) return a:select(1, 2) end, 'a.select(0, 1)'),
  view('slice', {'n:M'}, function(S, a) return mf.slice(a, 2, 1, S.c, 2) end, 'a[:, 0:S.c:2]'),
  view('squeeze', {'n:COL'}, function(_, a) return a:squeeze(2) end, 'a.squeeze(1)'),
  view('unsqueeze', {'n:M'}, function(_, a) return a:unsqueeze(1) end, 'a.unsqueeze(0)'),
  view('expand', {'n:ROW'}, function(S, a) return a:expand(S.r, S.c) end, 'a.expand(S.r, S.c)'),
  view('broadcast_like', {'n:ROW', 'n:M'}, function(_, a, b) return mf.broadcast_like(a, b) end, 'a.expand_as(b)'),
  view('unreduce_like', {'n:COL', 'n:M'}, function(_, a, b) return mf.unreduce_like(a, b, {2}, true) end,
    'a.expand_as(b)'),
  view('split', {'n:M'}, function(S, a) return mf.split(a, S.r / 4, 1) end, 'torch.split(a, S.r // 4, 0)'),
  view('chunk', {'n:M'}, function(_, a) return mf.chunk(a, 4, 1) end, 'torch.chunk(a, 4, 0)'),
  view('unbind', {'n:U'}, function(_, a) return mf.unbind(a, 1) end, 'torch.unbind(a, 0)'),
  view('to', {'n:M'}, function(_, a) return a:to('cpu') end, "a.to('cpu')"),
  {'contiguous', ins = {'n:M'}, mf = function(_, a) return a:t():contiguous() end, pt = 'a.t().contiguous()'},
  {'flip', ins = {'n:M'}, mf = function(_, a) return a:flip({2}) end, pt = 'torch.flip(a, (1,))'},
  {'roll', ins = {'n:M'}, mf = function(_, a) return a:roll(3, 2) end, pt = 'torch.roll(a, 3, 1)'},
  {'repeat', ins = {'n:M'}, mf = function(_, a) return mf['repeat'](a, {2, 1}) end, pt = 'a.repeat(2, 1)'},
  {'concat', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.concat({a, b}, 1) end, pt = 'torch.cat((a, b), 0)'},
  {'concat', name = 'concat_dim2', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.concat({a, b}, 2) end,
   pt = 'torch.cat((a, b), 1)'},
  {'stack', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.stack({a, b}, 1) end, pt = 'torch.stack((a, b), 0)'},
  {'tril', ins = {'n:M'}, mf = function(_, a) return a:tril() end, pt = 'torch.tril(a)'},
  {'triu', ins = {'n:M'}, mf = function(_, a) return a:triu() end, pt = 'torch.triu(a)'},
}

local INDEX = {
  {'index_select', ins = {'n:M', 'i:R@r'}, mf = function(_, a, i) return mf.index_select(a, i, 1) end,
   pt = 'torch.index_select(a, 0, b)'},
  {'gather', ins = {'n:M', 'i:M@c'}, mf = function(_, a, i) return mf.gather(a, i, 2) end,
   pt = 'torch.gather(a, 1, b)'},
  {'scatter', ins = {'n:M', 'i:M@c', 'n:M'}, mf = function(_, a, i, s) return mf.scatter(a, i, s, 2) end,
   pt = 'torch.scatter(a, 1, b, c)'},
  {'scatter_add', ins = {'n:M', 'i:M@c', 'n:M'}, mf = function(_, a, i, s) return mf.scatter_add(a, i, s, 2) end,
   pt = 'torch.scatter_add(a, 1, b, c)'},
  {'index_add', ins = {'n:M', 'i:R@r', 'n:M'}, mf = function(_, a, i, s) return mf.index_add(a, i, s, 1) end,
   pt = 'torch.index_add(a, 0, b, c)'},
  {'masked_fill', ins = {'n:M', 'm:M'}, mf = function(_, a, m) return mf.masked_fill(a, m, 0) end,
   pt = 'torch.masked_fill(a, b, 0.0)'},
  {'masked_select', ins = {'n:M', 'm:M'}, mf = function(_, a, m) return mf.masked_select(a, m) end,
   pt = 'torch.masked_select(a, b)', dynamic = true},
  {'nonzero', ins = {'m:M'}, mf = function(_, m) return mf.nonzero(m) end, pt = 'torch.nonzero(a)', dynamic = true},
  {'one_hot', ins = {'i:R@c'}, mf = function(S, i) return mf.one_hot(i, S.c, 'int64') end,  -- PyTorch's only dtype
   pt = 'F.one_hot(a, S.c)'},
}

local INIT = {  -- factories and random numbers (no inputs but the size)
  {'zeros', mf = function(S) return mf.zeros(S.r, S.c) end, pt = 'torch.zeros(S.r, S.c)'},
  {'ones', mf = function(S) return mf.ones(S.r, S.c) end, pt = 'torch.ones(S.r, S.c)'},
  {'full', mf = function(S) return mf.full({S.r, S.c}, 1.5) end, pt = 'torch.full((S.r, S.c), 1.5)'},
  {'empty', mf = function(S) return mf.empty(S.r, S.c) end, pt = 'torch.empty(S.r, S.c)'},
  {'eye', mf = function(S) return mf.eye(S.r) end, pt = 'torch.eye(S.r)'},
  {'arange', mf = function(S) return mf.arange(0, S.n) end, pt = 'torch.arange(0, S.n, dtype=torch.float32)'},
  {'linspace', mf = function(S) return mf.linspace(0, 1, S.n) end, pt = 'torch.linspace(0, 1, S.n)'},
  {'logspace', mf = function(S) return mf.logspace(0, 1, S.n) end, pt = 'torch.logspace(0, 1, S.n)'},
  {'zeros_like', ins = {'n:M'}, mf = function(_, a) return mf.zeros_like(a) end,
   pt = 'torch.zeros_like(a)', unread = {true}},
  {'ones_like', ins = {'n:M'}, mf = function(_, a) return mf.ones_like(a) end,
   pt = 'torch.ones_like(a)', unread = {true}},
  {'full_like', ins = {'n:M'}, mf = function(_, a) return mf.full_like(a, 2) end,
   pt = 'torch.full_like(a, 2)', unread = {true}},
  {'rand', mf = function(S) return mf.rand(S.r, S.c) end, pt = 'torch.rand(S.r, S.c)'},
  {'randn', mf = function(S) return mf.randn(S.r, S.c) end, pt = 'torch.randn(S.r, S.c)'},
  {'randint', mf = function(S) return mf.randint(1, 101, {S.r, S.c}) end, pt = 'torch.randint(0, 100, (S.r, S.c))'},
  {'randperm', mf = function(S) return mf.randperm(S.n) end, pt = 'torch.randperm(S.n)'},
  {'rand_like', ins = {'n:M'}, mf = function(_, a) return mf.rand_like(a) end,
   pt = 'torch.rand_like(a)', unread = {true}},
  {'randn_like', ins = {'n:M'}, mf = function(_, a) return mf.randn_like(a) end,
   pt = 'torch.randn_like(a)', unread = {true}},
  {'multinomial', ins = {'u:M'}, mf = function(_, a) return mf.multinomial(a, 8, true) end,
   pt = 'torch.multinomial(a, 8, True)'},
  {'dropout_mask', ins = {'n:M'}, mf = function(_, a) return mf.dropout_mask(a, 0.5) end,
   pt = 'torch.empty_like(a).bernoulli_(0.5).mul_(2.0)', unread = {true}},
}

local CONV_GEMM = function(S) local i = S.img return {{i[2], i[1] * i[3] * i[4], i[2] * 9}} end
local NN = {
  {'softmax', ins = {'n:M'}, mf = function(_, a) return mf.softmax(a, 2) end, pt = 'F.softmax(a, 1)'},
  {'log_softmax', ins = {'n:M'}, mf = function(_, a) return mf.log_softmax(a, 2) end, pt = 'F.log_softmax(a, 1)'},
  {'softmax_cross_entropy', ins = {'n:M', 'u:M'}, mf = function(_, a, b) return mf.softmax_cross_entropy(a, b, 2) end,
   pt = "F.cross_entropy(a, b, reduction='none')"},
  {'batch_norm', ins = {'n:IMG', 'n:CH', 'n:CH'}, mf = function(_, x, w, b) return mf.batch_norm(x, w, b) end,
   pt = 'F.batch_norm(a, None, None, b, c, training=True)'},
  {'conv2d', ins = {'n:IMG', 'n:W'}, mf = function(_, x, w) return mf.conv2d(x, w, 1, 1) end,
   pt = 'F.conv2d(a, b, None, 1, 1)', limit = 'gemm', gemm = CONV_GEMM},
  {'conv2d_backward_input', ins = {'n:IMG', 'n:W', 'n:IMG'},
   mf = function(_, gy, w, x) return mf.conv2d_backward_input(gy, w, x, 1, 1) end,
   pt = 'torch.ops.aten.convolution_backward(a, c, b, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, '
     .. '[True, False, False])[0]', limit = 'gemm', gemm = CONV_GEMM, unread = {[3] = true}},
  {'conv2d_backward_weight', ins = {'n:IMG', 'n:IMG', 'n:W'},
   mf = function(_, gy, x, w) return mf.conv2d_backward_weight(gy, x, w, 1, 1) end,
   pt = 'torch.ops.aten.convolution_backward(a, b, c, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, '
     .. '[False, True, False])[1]', limit = 'gemm', gemm = CONV_GEMM, unread = {[3] = true}},
  {'max_pool2d', ins = {'n:IMG'}, mf = function(_, x) return mf.max_pool2d(x, 2) end, pt = 'F.max_pool2d(a, 2)'},
  {'max_pool2d_backward', ins = {'n:POOL', 'n:IMG'},
   mf = function(_, gy, x) return mf.max_pool2d_backward(gy, x, 2) end,
   pt_setup = 'F.max_pool2d(b, 2, return_indices=True)[1]',
   pt = 'torch.ops.aten.max_pool2d_with_indices_backward(a, b, [2, 2], [2, 2], [0, 0], [1, 1], False, P)'},
  {'avg_pool2d', ins = {'n:IMG'}, mf = function(_, x) return mf.avg_pool2d(x, 2) end, pt = 'F.avg_pool2d(a, 2)'},
  {'avg_pool2d_backward', ins = {'n:POOL', 'n:IMG'},
   mf = function(_, gy, x) return mf.avg_pool2d_backward(gy, x, 2) end,
   pt = 'torch.ops.aten.avg_pool2d_backward(a, b, [2, 2], [2, 2], [0, 0], False, True, None)', unread = {[2] = true}},
  {'adaptive_avg_pool2d', ins = {'n:IMG'}, mf = function(_, x) return mf.adaptive_avg_pool2d(x, 1) end,
   pt = 'F.adaptive_avg_pool2d(a, 1)'},
  {'adaptive_avg_pool2d_backward', ins = {'n:POOL1', 'n:IMG'},
   mf = function(_, gy, x) return mf.adaptive_avg_pool2d_backward(gy, x, 1) end,
   pt = 'torch.ops.aten._adaptive_avg_pool2d_backward(a, b)', unread = {[2] = true}},
}

local MM_GEMM = function(S) return {{S.r, S.c, S.c}} end
local LINALG = {
  {'matmul', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.matmul(a, b) end, pt = 'torch.matmul(a, b)',
   limit = 'gemm', gemm = MM_GEMM},
  {'mm', ins = {'n:M', 'n:M'}, mf = function(_, a, b) return mf.mm(a, b) end, pt = 'torch.mm(a, b)',
   limit = 'gemm', gemm = MM_GEMM},
  {'addmm', ins = {'n:M', 'n:M', 'n:M'}, mf = function(_, c, a, b) return mf.addmm(c, a, b) end,
   pt = 'torch.addmm(a, b, c)', limit = 'gemm', gemm = MM_GEMM},
  {'bmm', ins = {'n:B3', 'n:B3'}, mf = function(_, a, b) return mf.bmm(a, b) end, pt = 'torch.bmm(a, b)',
   limit = 'gemm', gemm = function(S) local b = S.b3 return {{b[2], b[3], b[3], b[1]}} end},
  {'mv', ins = {'n:M', 'n:C'}, mf = function(_, m, v) return mf.mv(m, v) end, pt = 'torch.mv(a, b)'},
  {'dot', ins = {'n:V', 'n:V'}, mf = function(_, a, b) return mf.dot(a, b) end, pt = 'torch.dot(a, b)'},
  {'outer', ins = {'n:R', 'n:C'}, mf = function(_, a, b) return mf.outer(a, b) end, pt = 'torch.outer(a, b)'},
}

local OPTIM = {  -- one parameter tensor updated in place; PyTorch: its single-tensor optimizer code
  {'sgd_update', ins = {'n:M', 'n:M', 'l:ONE'}, mf = function(_, v, g, lr) return mf.sgd_update(v, g, lr) end,
   pt = 'a.add_(b, alpha=-1e-3)'},
  {'momentum_update', ins = {'n:M', 'n:M', 'n:M', 'l:ONE'},
   mf = function(_, v, acc, g, lr) return mf.momentum_update(v, acc, g, lr) end,
   pt = 'b.mul_(0.9).add_(c)\nreturn a.add_(b, alpha=-1e-3)'},
  {'adam_update', ins = {'n:M', 'n:M', 'u:M', 'n:M', 't:ONE', 'l:ONE'},
   mf = function(_, v, m, s, g, step, lr) return mf.adam_update(v, m, s, g, step, lr) end,
   pt = 'b.mul_(0.9).add_(d, alpha=0.1)\nc.mul_(0.999).addcmul_(d, d, value=0.001)\n'
     .. 'den = (c.sqrt() / 0.999 ** 0.5).add_(1e-8)\nreturn a.addcdiv_(b, den, value=-1e-3 / 0.9)'},
}

-- out= (both sides): the result written into a given tensor, so what is timed is the kernel without a
-- fresh result's first writes into cold memory (see README "Performance"). Flagged `into`: reported on a
-- line of their own and left out of the geomean and counts above, which time every op the plain way.
local function into(op, ins, mf_call, pt, extra)
  local c = {op, name = op .. '_out', ins = ins, into = true, unread = {[#ins] = true}, mf = mf_call, pt = pt}
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
-- the copy family into out=. Outputs of another shape or dtype than an input's are made at
-- the first call of an input set (out_for), PyTorch's by pt_setup; where PyTorch has no out=, the
-- twin times what its op does into the new result (repeat: a copy from an expanded view; roll: cat of
-- two narrows; one_hot: zeros, then scatter_)
local OUT_OF = setmetatable({}, {__mode = 'k'})  -- an input -> the out made for it
local function out_for(key, dtype, ...)
  local o = OUT_OF[key]
  if not o then
    o = mf.empty({...}, {dtype = dtype or key:dtype()})
    OUT_OF[key] = o
  end
  return o
end
local INTO_COPY = {
  into('cast', {'n:M'}, function(S, a) return a:cast('float64', {out = out_for(a, 'float64', S.r, S.c)}) end,
    'P.copy_(a)', {unread = {}, pt_setup = 'torch.empty(S.r, S.c, dtype=torch.float64)'}),
  into('concat', {'n:M', 'n:M'}, function(S, a, b) return mf.concat({a, b}, 1, {out = out_for(a, nil, 2 * S.r, S.c)}) end,
    'torch.cat((a, b), 0, out=P)', {unread = {}, pt_setup = 'torch.empty(2 * S.r, S.c)'}),
  into('concat', {'n:M', 'n:M'}, function(S, a, b) return mf.concat({a, b}, 2, {out = out_for(a, nil, S.r, 2 * S.c)}) end,
    'torch.cat((a, b), 1, out=P)', {name = 'concat_dim2_out', unread = {}, pt_setup = 'torch.empty(S.r, 2 * S.c)'}),
  into('stack', {'n:M', 'n:M'}, function(S, a, b) return mf.stack({a, b}, 1, {out = out_for(a, nil, 2, S.r, S.c)}) end,
    'torch.stack((a, b), 0, out=P)', {unread = {}, pt_setup = 'torch.empty(2, S.r, S.c)'}),
  into('repeat', {'n:M'}, function(S, a) return mf['repeat'](a, {2, 1}, {out = out_for(a, nil, 2 * S.r, S.c)}) end,
    'P.view(2, S.r, S.c).copy_(a.expand(2, S.r, S.c))\nreturn P', {unread = {}, pt_setup = 'torch.empty(2 * S.r, S.c)'}),
  into('roll', {'n:M', 'n:M'}, function(_, a, o) return a:roll(3, 2, {out = o}) end,
    'torch.cat((a[:, -3:], a[:, :-3]), 1, out=b)'),
  into('index_select', {'n:M', 'i:R@r', 'n:M'}, function(_, a, i, o) return mf.index_select(a, i, 1, {out = o}) end,
    'torch.index_select(a, 0, b, out=c)'),
  into('one_hot', {'i:R@c'}, function(S, i) return mf.one_hot(i, S.c, 'int64', {out = out_for(i, 'int64', S.r, S.c)}) end,
    'P.zero_().scatter_(1, a.unsqueeze(1), 1)', {unread = {}, pt_setup = 'torch.empty(S.r, S.c, dtype=torch.int64)'}),
  into('outer', {'n:R', 'n:C', 'n:M'}, function(_, a, b, o) return mf.outer(a, b, {out = o}) end,
    'torch.outer(a, b, out=c)'),
}
local INTO = {
  into('abs', {'n:M', 'n:M'}, function(_, a, o) return mf.abs(a, {out = o}) end, 'torch.abs(a, out=b)'),
  into('neg', {'n:M', 'n:M'}, function(_, a, o) return mf.neg(a, {out = o}) end, 'torch.neg(a, out=b)'),
  into('sqrt', {'p:M', 'n:M'}, function(_, a, o) return mf.sqrt(a, {out = o}) end, 'torch.sqrt(a, out=b)'),
  into('exp', {'n:M', 'n:M'}, function(_, a, o) return mf.exp(a, {out = o}) end, 'torch.exp(a, out=b)'),
  into('tanh', {'n:M', 'n:M'}, function(_, a, o) return mf.tanh(a, {out = o}) end, 'torch.tanh(a, out=b)'),
  into('sigmoid', {'n:M', 'n:M'}, function(_, a, o) return mf.sigmoid(a, {out = o}) end, 'torch.sigmoid(a, out=b)'),
  into('clamp', {'n:M', 'n:M'}, function(_, a, o) return a:clamp(-0.5, 0.5, {out = o}) end,
    'torch.clamp(a, -0.5, 0.5, out=b)'),
  into('add', {'n:M', 'n:M', 'n:M'}, function(_, a, b, o) return mf.add(a, b, {out = o}) end, 'torch.add(a, b, out=c)'),
  into('mul', {'n:M', 'n:M', 'n:M'}, function(_, a, b, o) return mf.mul(a, b, {out = o}) end, 'torch.mul(a, b, out=c)'),
  into('div', {'n:M', 'p:M', 'n:M'}, function(_, a, b, o) return mf.div(a, b, {out = o}) end, 'torch.div(a, b, out=c)'),
  into('maximum', {'n:M', 'n:M', 'n:M'}, function(_, a, b, o) return mf.maximum(a, b, {out = o}) end,
    'torch.maximum(a, b, out=c)'),
  into('sum', {'n:M', 'n:R'}, function(_, a, o) return mf.sum(a, 2, {out = o}) end, 'torch.sum(a, 1, out=b)',
    {name = 'sum_dim2_out'}),
  into('zeros', {'n:M'}, function(S, o) return mf.zeros(S.r, S.c, {out = o}) end, 'torch.zeros(S.r, S.c, out=a)'),
  into('matmul', {'n:M', 'n:M', 'n:M'}, function(_, a, b, o) return mf.matmul(a, b, {out = o}) end,
    'torch.matmul(a, b, out=c)', {limit = 'gemm', gemm = MM_GEMM}),
  into('rsqrt', {'p:M', 'n:M'}, function(_, a, o) return mf.rsqrt(a, {out = o}) end, 'torch.rsqrt(a, out=b)'),
  into('gelu', {'n:M', 'n:M'}, function(_, a, o) return mf.gelu(a, {out = o}) end,
    'torch.ops.aten.gelu.out(a, out=b)'),
  into('relu_backward', {'n:M', 'n:M', 'n:M'}, function(_, a, b, o) return mf.relu_backward(a, b, {out = o}) end,
    'torch.ops.aten.threshold_backward.grad_input(a, b, 0, grad_input=c)'),
  into('linspace', {'n:V'}, function(S, o) return mf.linspace(0, 1, S.n, {out = o}) end,
    'torch.linspace(0, 1, S.n, out=a)'),
  into('scatter', {'n:M', 'i:M@c', 'n:M', 'n:M'}, function(_, a, i, s, o) return mf.scatter(a, i, s, 2, {out = o}) end,
    'torch.scatter(a, 1, b, c, out=d)'),
  into('scatter_add', {'n:M', 'i:M@c', 'n:M', 'n:M'},
    function(_, a, i, s, o) return mf.scatter_add(a, i, s, 2, {out = o}) end, 'torch.scatter_add(a, 1, b, c, out=d)'),
  into('max_pool2d_backward', {'n:POOL', 'n:IMG', 'n:IMG'},
    function(_, gy, x, o) return mf.max_pool2d_backward(gy, x, 2, {out = o}) end,
    'torch.ops.aten.max_pool2d_with_indices_backward.grad_input(a, b, [2, 2], [2, 2], [0, 0], [1, 1], False, P, '
      .. 'grad_input=c)', {pt_setup = 'F.max_pool2d(b, 2, return_indices=True)[1]'}),
  into('adaptive_avg_pool2d_backward', {'n:POOL1', 'n:IMG', 'n:IMG'},
    function(_, gy, x, o) return mf.adaptive_avg_pool2d_backward(gy, x, 1, {out = o}) end,
    'torch.ops.aten._adaptive_avg_pool2d_backward.out(a, b, out=c)', {unread = {[2] = true, [3] = true}}),
}

local FAMILIES = {MATH, ELEMWISE, INPLACE, REDUCE, STATS, SORT, SHAPE, INDEX, INIT, NN, LINALG, OPTIM, INTO,
  INTO_COPY}

-- Ops with no case of their own. The reason must say 'timed through <op>' (the op whose case
-- runs this one's code) or 'not user-facing: <why>'.
local EXEMPT = {
  no_op = 'not user-facing: a graph control node, computes nothing',
  fused_elementwise = 'not user-facing: built by graph fusion (lua/moonflow/fusion.lua) from chains of '
    .. 'elementwise ops; eager calls run those ops',
  fused_assign = 'not user-facing: built by graph fusion, an assign of a fused_elementwise program',
  pad_like = 'not user-facing: the gradient of narrow, slice and select, built by autodiff',
  index_add_like = 'not user-facing: the gradient of index_select, built by autodiff',
  reduced_count = "not user-facing: a 0-dim element count for mean's gradient, moves no data",
  cumprod_grad = 'not user-facing: the gradient of cumprod, built by autodiff',
}

-- options -----------------------------------------------------------------------------------------
local opts = {rounds = 5, batches = 3, sizes = nil, json = nil, only = nil, torch = true, quick = false}
local argv = select('#', ...) > 0 and {...} or arg or {}  -- loadfile(...)('--lib') passes its own
do
  local i = 1
  while argv[i] do
    local a = argv[i]
    if a == '--no-torch' then opts.torch = false
    elseif a == '--quick' then opts.quick = true
    elseif a == '--lib' then opts.lib = true
    elseif a == '--diff' then
      opts.diff = {argv[i + 1], argv[i + 2]}
      if not (argv[i + 1] and argv[i + 2]) then error('ops.lua: --diff needs two JSON files') end
      i = i + 2
    elseif ({['--rounds'] = 1, ['--batches'] = 1, ['--sizes'] = 1, ['--json'] = 1, ['--only'] = 1})[a] then
      local v = argv[i + 1] or error('ops.lua: ' .. a .. ' needs a value')
      opts[a:sub(3)] = tonumber(v) or v
      i = i + 1
    else
      error('ops.lua: unknown argument ' .. a .. ' (see the usage at the top of scripts/bench/ops.lua)')
    end
    i = i + 1
  end
end

-- the cases, expanded per dtype, and the coverage check ---------------------------------------------
local function all_cases()
  local out = {}
  for _, fam in ipairs(FAMILIES) do
    for _, c in ipairs(fam) do
      c.name = c.name or c[1]
      out[#out + 1] = c
    end
  end
  return out
end

-- nil when every registered op has a case or a valid EXEMPT entry, else a message naming the rest
local function check_coverage(cases)
  local has, missing, bad = {}, {}, {}
  for _, c in ipairs(cases) do has[c[1]] = true end
  local registered = {}
  for _, op in ipairs(mf.list_ops()) do
    registered[op] = true
    local why = EXEMPT[op]
    if not has[op] then
      local through = why and why:match('^timed through ([%w_]+)')
      if not why then missing[#missing + 1] = op
      elseif through and not has[through] then
        bad[#bad + 1] = op .. " ('" .. why .. "': " .. through .. ' has no case)'
      elseif not (through or why:match('^not user%-facing: %S')) then
        bad[#bad + 1] = op .. " ('" .. why .. "')"
      end
    end
  end
  local stale = {}
  for op in pairs(has) do if not registered[op] then stale[#stale + 1] = op end end
  for op in pairs(EXEMPT) do if not registered[op] then stale[#stale + 1] = op .. ' (EXEMPT)' end end
  table.sort(stale)
  local msg = {}
  if #missing > 0 then
    msg[#msg + 1] = ('ops.lua: %d registered op(s) without a bench case: %s (add a case to the family table '
      .. 'in scripts/bench/ops.lua, or an EXEMPT entry "timed through <op>" / "not user-facing: <why>")')
      :format(#missing, table.concat(missing, ' '))
  end
  if #bad > 0 then
    msg[#msg + 1] = 'ops.lua: EXEMPT reasons must start "timed through <op with a case>" or "not user-facing: ": '
      .. table.concat(bad, ', ')
  end
  if #stale > 0 then msg[#msg + 1] = 'ops.lua: cases for ops that are not registered: ' .. table.concat(stale, ', ') end
  if #msg > 0 then return table.concat(msg, '\n') end
end

if opts.lib then
  return {check_coverage = check_coverage, cases = all_cases, EXEMPT = EXEMPT, SIZES = SIZES}
end

-- inputs -------------------------------------------------------------------------------------------
local function parse_spec(S, spec, dtype)
  local kind, key, hi = spec:match('^(%a):([%w]+)@?(%a*)$')
  assert(kind, 'ops.lua: bad input spec ' .. spec)
  local shape = shape_of(S, key)
  local d = {kind = kind, shape = shape, dtype = dtype}
  if kind == 'i' then d.hi, d.dtype = S[hi], 'int64' end
  if kind == 'm' then d.dtype = 'uint8' end
  if kind == 'l' or kind == 't' then d.dtype = 'float32' end
  return d
end

local function make_input(d)
  local k, sh = d.kind, d.shape
  if k == 'n' then return mf.randn(sh, {dtype = d.dtype}) end
  if k == 'p' then return mf.rand(sh, {low = 0.5, high = 2, dtype = d.dtype}) end
  if k == 'u' then return mf.rand(sh, {low = 0, high = 1, dtype = d.dtype}) end
  if k == 'o' then return mf.rand(sh, {low = 0.999, high = 1.001, dtype = d.dtype}) end
  if k == 'm' then return mf.rand(sh):gt(0.5) end
  if k == 'i' then return mf.randint(1, d.hi + 1, sh) end
  if k == 'l' then return mf.full(sh, 1e-3) end
  if k == 't' then return mf.full(sh, 1) end
  error('ops.lua: unknown input kind ' .. k)
end

-- the dtypes and shapes of every tensor in v (a tensor or a list of them), as 'float32:AxB'
local function shapes_of(v, acc)
  if mf.is_tensor(v) then
    local s = {}
    for d = 1, v:dim() do s[d] = v:size(d) end
    acc[#acc + 1] = v:dtype() .. ':' .. table.concat(s, 'x')
  elseif type(v) == 'table' then
    for _, x in ipairs(v) do shapes_of(x, acc) end
  end
  return acc
end

local ELEM_SIZE = {float32 = 4, float64 = 8, int32 = 4, int64 = 8, uint8 = 1}
-- bytes the op must move at least: every tensor input read once, every tensor output written once
local function tensor_bytes(v, acc)
  if type(v) == 'table' and not mf.is_tensor(v) then
    for _, x in ipairs(v) do acc = tensor_bytes(x, acc) end
    return acc
  end
  if mf.is_tensor(v) then return acc + v:numel() * ELEM_SIZE[v:dtype()] end
  return acc
end

-- the PyTorch co-process (scripts/bench/torch_twin.lua) ---------------------------------------------
local Twin = dofile(here .. '/torch_twin.lua')
local encode = Twin.encode  -- also writes the --json results
local Torch = {start = function()
  return Twin.start{script = here .. '/ops_torch.py', who = 'ops.lua',  -- PyTorch on moonflow's thread count
                    env = ('OMP_NUM_THREADS=%d '):format(mf.get_num_threads()),
                    hint = 'python3 with torch is needed; --no-torch runs moonflow alone'}
end}

-- machine limits ---------------------------------------------------------------------------------------
-- copy bandwidth: 64 MB copied (2 units moved: read + write) by memcpy
-- (one thread), and moonflow's own copy op (its threads): the better of the two, in GB/s
local function copy_bw_mf(tim)
  local n = opts.quick and 1024 or 16 * 1024 * 1024
  local a, b = mf.ones(n), mf.zeros(n)
  local bytes = n * 4
  local us = math.min(T.per_call_us(function() ffi.C.memcpy(b:data(), a:data(), bytes) end, tim),
    (T.per_call_us(function() b:copy(a) end, tim)))  -- one value: per_call_us also returns its call count
  return 2 * bytes / (us * 1e-6) / 1e9
end

-- µs of raw OpenBLAS gemm (C = A B, row-major, on fresh buffers) for each {m, n, k[, count]},
-- summed; cache (one per round) keeps a product measured once when several cases share it
local function gemm_us(list, dtype, tim, cache)
  local total = 0
  for _, g in ipairs(list) do
    local m, n, k, count = g[1], g[2], g[3], g[4] or 1
    local key = table.concat({dtype, m, n, k}, 'x')
    if not cache[key] then
      local a, b = mf.randn({m, k}, {dtype = dtype}), mf.randn({k, n}, {dtype = dtype})
      local c = mf.zeros({m, n}, {dtype = dtype})
      local f = dtype == 'float64' and ffi.C.cblas_dgemm or ffi.C.cblas_sgemm
      cache[key] = T.per_call_us(function()
        f(101, 111, 111, m, n, k, 1, a:data(), k, b:data(), n, 0, c:data(), n)
      end, tim)
    end
    total = total + cache[key] * count
  end
  return total
end

-- the run ----------------------------------------------------------------------------------------------
local function geomean(t)
  local s = 0
  for _, v in ipairs(t) do s = s + math.log(v) end
  return math.exp(s / #t)
end

-- --diff OLD NEW: two --json results compared case by case
local function diff(old_path, new_path)
  local function load(path)
    local f = assert(io.open(path), 'ops.lua: cannot open ' .. path)
    local d = json.decode(f:read('*a'))
    f:close()
    local by = {}
    for _, r in ipairs(d.rows) do by[r.case .. ' ' .. r.dtype .. ' ' .. r.size] = r end
    return d, by
  end
  local old, old_by = load(old_path)
  local new = load(new_path)
  local function num(v) return type(v) == 'number' and v or nil end
  local function f(v, fmt) return v and (fmt or '%.4g'):format(v) or '-' end
  print(('| %-40s | %10s | %10s | %7s | %9s | %9s |'):format('case dtype size', 'old mf us', 'new mf us',
    'new/old', 'old mf/pt', 'new mf/pt'))
  local ratios = {}
  for _, r in ipairs(new.rows) do
    local key = r.case .. ' ' .. r.dtype .. ' ' .. r.size
    local o = old_by[key] or {}
    local a, b = num(o.mf_us), num(r.mf_us)
    local q = a and b and b / a or nil
    if q then ratios[#ratios + 1] = q end
    print(('| %-40s | %10s | %10s | %7s | %9s | %9s |'):format(key, f(a), f(b), f(q, '%.2f'), f(num(o.ratio), '%.2f'),
      f(num(r.ratio), '%.2f')))
  end
  local function gm(t)
    local s = 0
    for _, v in ipairs(t) do s = s + math.log(v) end
    return math.exp(s / #t)
  end
  if #ratios > 0 then print(('geomean moonflow new/old over %d figures: %.3f'):format(#ratios, gm(ratios))) end
  local og, ng = num(old.summary.geomean), num(new.summary.geomean)
  if og and ng then print(('geomean mf/pt: old %.3f, new %.3f'):format(og, ng)) end
end

local function main()
  if opts.diff then return diff(opts.diff[1], opts.diff[2]) end
  local cases = all_cases()
  local err = check_coverage(cases)
  if err then io.stderr:write(err, '\n'); os.exit(1, true) end
  local size_list = {}
  if opts.quick then opts.rounds = 1 end
  if opts.quick and not opts.sizes then
    size_list = {SIZES.quick}
  else
    opts.sizes = opts.sizes or 'small,large'
    for s in tostring(opts.sizes):gmatch('[^,]+') do
      size_list[#size_list + 1] = SIZES[s] or error('ops.lua: --sizes takes small and large, not ' .. s)
    end
  end
  local tim = opts.quick and {calls = 1, batches = 1, warmup = 1} or {batches = opts.batches}
  local torch = opts.torch and Torch.start() or nil

  -- one instance per (case, dtype, size)
  local inst = {}  -- {case, S, dtype, mf = {µs per round}, pt = {...}, gemm = {...}, bytes, errors}
  for _, S in ipairs(size_list) do
    for _, c in ipairs(cases) do
      local hit = not opts.only
      for alt in tostring(opts.only or ''):gmatch('[^|]+') do  -- 'a|b': either Lua pattern
        hit = hit or c[1]:match(alt) or c.name:match(alt)
      end
      if hit then
        for _, dtype in ipairs(c.f64 and {'float32', 'float64'} or {'float32'}) do
          inst[#inst + 1] = {case = c, S = S, dtype = dtype, mf = {}, pt = {}}
        end
      end
    end
  end

  local bw_mf, bw_pt, failures = {}, {}, {}
  for round = 1, opts.rounds do
    io.stderr:write(('round %d/%d: %d cases\n'):format(round, opts.rounds, #inst))
    bw_mf[round] = copy_bw_mf(tim)
    if torch then bw_pt[round] = torch:call({cmd = 'copy_bw', quick = opts.quick}).gbps end
    local gemm_cache = {}
    for _, it in ipairs(inst) do
      local c, S = it.case, it.S
      local specs = {}
      for i, s in ipairs(c.ins or {}) do specs[i] = parse_spec(S, s, it.dtype) end
      local function run_mf()
        if it.mf_error then return end
        local ok, e = pcall(function()
          local ins = {}
          for i, d in ipairs(specs) do ins[i] = make_input(d) end
          local out = {c.mf(S, unpack(ins, 1, #specs))}  -- every result (max over a dim: values, indices)
          if not it.bytes then
            local read = {}  -- inputs the op reads (unread: only written, or only their shape is used)
            for i = 1, #ins do if not (c.unread and c.unread[i]) then read[#read + 1] = ins[i] end end
            it.bytes, it.shapes = tensor_bytes(read, tensor_bytes(out, 0)), shapes_of(out, {})
          end
          out = nil
          it.mf[#it.mf + 1] = T.per_call_us(c.mf, tim, S, unpack(ins, 1, #specs))
        end)
        if not ok then it.mf_error = tostring(e); failures[#failures + 1] = it end
      end
      local function run_pt()
        if not torch or it.pt_error then return end
        local Sx = {n = S.n, r = S.r, c = S.c, img = S.img, b3 = S.b3, dtype = it.dtype}
        local res = torch:call({cmd = 'time', expr = c.pt, setup = c.pt_setup, ins = specs, S = Sx,
          calls = tim.calls, batches = tim.batches, warmup = tim.warmup})
        if res.error then it.pt_error = res.error; return end
        it.pt[#it.pt + 1] = res.us
        -- the twin must compute the same thing: at least its outputs have moonflow's shapes
        local want, got = table.concat(it.shapes or {}, ' '), table.concat(res.shapes, ' ')
        if c.dynamic then want, got = want:gsub('%d+%f[x%s%z]', 'N'), got:gsub('%d+%f[x%s%z]', 'N') end
        if it.shapes and got ~= want then
          it.pt_error = ('the PyTorch code gives outputs [%s], moonflow [%s]'):format(
            table.concat(res.shapes, ' '), want)
        end
      end
      if round % 2 == 1 then run_mf(); run_pt() else run_pt(); run_mf() end
      if c.limit == 'gemm' then
        it.gemm = it.gemm or {}
        it.gemm[#it.gemm + 1] = gemm_us(c.gemm(S), it.dtype, tim, gemm_cache)
      end
      -- the case's traces go: they hold its timed loops, whose upvalues are its inputs, so without
      -- a flush every case's inputs stayed alive (1.5 GB by the end of the 16 MB cases), and the
      -- later cases ran with that much live, which a program timing one op would not have
      jit.flush()
      collectgarbage()
    end
  end
  if torch then torch:close() end

  -- the table
  local bw = T.median(bw_mf)
  if #bw_pt > 0 then bw = math.max(bw, T.median(bw_pt)) end
  local rows, ratios, worst, slow, slow_ops = {}, {}, nil, 0, {}
  local into_ratios, into_worst = {}, nil  -- the out= cases (INTO), summed up apart
  for _, it in ipairs(inst) do
    local c, S = it.case, it.S
    local row = {op = c[1], case = c.name, dtype = it.dtype, size = S.label, bytes = it.bytes,
      mf_runs = it.mf, pt_runs = it.pt, mf_error = it.mf_error, pt_error = it.pt_error}
    row.mf_us = #it.mf > 0 and T.median({unpack(it.mf)}) or nil
    row.pt_us = #it.pt > 0 and T.median({unpack(it.pt)}) or nil
    row.into = c.into
    if row.mf_us and row.pt_us and c.into then
      row.ratio = row.mf_us / row.pt_us
      into_ratios[#into_ratios + 1] = row.ratio
      if not into_worst or row.ratio > into_worst.ratio then into_worst = row end
    elseif row.mf_us and row.pt_us then
      row.ratio = row.mf_us / row.pt_us
      ratios[#ratios + 1] = row.ratio
      if not worst or row.ratio > worst.ratio then worst = row end
      if row.ratio > 1.2 then slow = slow + 1; slow_ops[c[1]] = true end
    end
    if c.limit == 'gemm' then
      row.limit_kind, row.limit_us = 'gemm', T.median({unpack(it.gemm)})
    elseif c.limit == 'view' then
      row.limit_kind = 'view'
    elseif S.label ~= 'small' and it.bytes then
      row.limit_kind, row.limit_us = 'bw', it.bytes / (bw * 1e9) * 1e6
    end
    if row.limit_us and row.mf_us then row.of_limit = row.limit_us / row.mf_us end
    rows[#rows + 1] = row
  end

  local function f(v, fmt) return v and (fmt or '%.4g'):format(v) or '-' end
  print(('moonflow per-op bench: %d rounds, %s, medians over rounds; torch %s; MF threads %d; '
    .. 'copy bandwidth %.3g GB/s (moonflow memcpy or copy %.3g%s)'):format(opts.rounds,
    opts.quick and 'QUICK (smoke, not timings)' or 'sizes ' .. opts.sizes, torch and torch.version or '-',
    mf.get_num_threads(), bw, T.median(bw_mf),
    #bw_pt > 0 and (', torch copy_ %.3g'):format(T.median(bw_pt)) or ''))
  print(('| %-30s | %-7s | %-5s | %10s | %10s | %6s | %10s | %-5s | %6s |'):format('case', 'dtype', 'size',
    'mf us', 'pt us', 'mf/pt', 'limit us', 'limit', 'lim/mf'))
  print('|' .. ('-'):rep(32) .. '|---------|-------|------------|------------|--------|------------|-------|--------|')
  for _, r in ipairs(rows) do
    print(('| %-30s | %-7s | %-5s | %10s | %10s | %6s | %10s | %-5s | %6s |'):format(r.case, r.dtype, r.size,
      r.mf_error and 'ERROR' or f(r.mf_us), r.pt_error and 'ERROR' or f(r.pt_us), f(r.ratio, '%.2f'),
      f(r.limit_us), r.limit_kind or '-', f(r.of_limit, '%.2f')))
  end
  local nslow_ops = 0
  for _ in pairs(slow_ops) do nslow_ops = nslow_ops + 1 end
  local summary = {cases = #rows, compared = #ratios, geomean = #ratios > 0 and geomean(ratios) or nil,
    worst_case = worst and worst.case, worst_size = worst and worst.size, worst_dtype = worst and worst.dtype,
    worst_ratio = worst and worst.ratio, slower_than_1_2 = slow, ops_slower_than_1_2 = nslow_ops,
    copy_gbps = bw, failures = #failures, into_compared = #into_ratios,
    into_geomean = #into_ratios > 0 and geomean(into_ratios) or nil,
    into_worst_case = into_worst and into_worst.case, into_worst_ratio = into_worst and into_worst.ratio}
  if #ratios > 0 then
    local sizes = {}
    for i, S in ipairs(size_list) do sizes[i] = S.label end
    print(('geomean mf/pt over %d figures (%s, sizes %s): %.3f'):format(#ratios,
      opts.only and 'cases matching ' .. opts.only or 'every op', table.concat(sizes, ' and '), summary.geomean))
    print(('worst: %s %s %s at %.2fx'):format(worst.case, worst.dtype, worst.size, worst.ratio))
    print(('slower than 1.2x PyTorch: %d figures, %d ops'):format(slow, nslow_ops))
  end
  if #into_ratios > 0 then
    print(('into out= (cases *_out, both sides given the output; not in the figures above): geomean %.3f over '
      .. '%d figures, worst %s %s at %.2fx'):format(summary.into_geomean, #into_ratios, into_worst.case,
      into_worst.size, into_worst.ratio))
  end
  -- issue 12's bandwidth line: memory-bound figures (limit 'bw') under 0.7 of the copy bandwidth
  local under = {}
  for _, r in ipairs(rows) do
    if r.limit_kind == 'bw' and r.of_limit and r.of_limit < 0.7 and not r.into then
      under[#under + 1] = ('%s %s %.2f'):format(r.case, r.dtype, r.of_limit)
    end
  end
  summary.under_0_7_of_bw = #under
  if #rows > 0 and not opts.quick then
    print(('memory-bound figures under 0.7 of the copy bandwidth: %d%s'):format(#under,
      #under > 0 and ' (' .. table.concat(under, ', ') .. ')' or ''))
  end
  for _, it in ipairs(inst) do
    for _, side in ipairs{'mf', 'pt'} do
      local e = it[side .. '_error']
      if e then
        io.stderr:write(('FAIL %s %s %s (%s): %s\n'):format(it.case.name, it.dtype, it.S.label,
          side == 'mf' and 'moonflow' or 'pytorch', e))
      end
    end
  end
  local covered = {}
  for _, c in ipairs(cases) do covered[c[1]] = true end
  if opts.json then
    local out = assert(io.open(opts.json, 'w'))
    out:write(encode({rows = rows, summary = summary, exempt = EXEMPT, rounds = opts.rounds, quick = opts.quick,
      ops = mf.list_ops(), torch = torch and torch.version or nil, threads = mf.get_num_threads(),
      copy_gbps_mf = bw_mf, copy_gbps_pt = bw_pt}), '\n')
    out:close()
  end
  local pt_fail = false
  for _, it in ipairs(inst) do if it.pt_error then pt_fail = true end end
  if #failures > 0 or pt_fail then os.exit(1, true) end
end

main()
