-- mf.einsum and mf.allclose: Lua functions built on registered ops (no kernels of their own), so
-- einsum works on tensors and graph symbols alike and its gradient comes from the ops it builds
-- (permute, reshape, mul, sum, matmul); allclose returns a Lua boolean, so it is eager only.
return function(mf)
  local raise = mf._raise

  -- einsum -------------------------------------------------------------------------------------------
  local ELLIPSIS_LETTERS = '01234567'  -- stand-ins for the dims '...' covers (never valid letters)

  -- x's sizes as a list (-1: unknown until a graph runs)
  local function sizes_of(x, k)
    if mf.is_symbol(x) then
      if not x._shape then raise(('einsum: operand %d has a shape unknown when the graph is built'):format(k)) end
      return x._shape
    end
    if not mf.is_tensor(x) then
      raise(('einsum: operand %d is a %s; expected a tensor or symbol'):format(k, type(x)))
    end
    return x:size()
  end

  -- The letters of one term as a list; '...' becomes one stand-in per dim it covers, right-aligned
  -- (the last dim it covers is '0'), so operands with fewer dims there broadcast as in NumPy.
  local function term_letters(eq, term, ndim, k)
    local letters, has_ellipsis = {}, false
    local i = 1
    while i <= #term do
      local ch = term:sub(i, i)
      if term:sub(i, i + 2) == '...' then
        if has_ellipsis then raise(("einsum: '%s': term '%s' has '...' twice"):format(eq, term)) end
        has_ellipsis = true
        letters[#letters + 1] = '...'
        i = i + 3
      elseif ch:match('%a') then
        letters[#letters + 1] = ch
        i = i + 1
      else
        raise(("einsum: '%s': '%s' in term '%s' is not a letter (terms are letters a-z, A-Z and at most one '...')")
          :format(eq, ch, term))
      end
    end
    if not ndim then return letters, has_ellipsis end  -- the output term
    local named = #letters - (has_ellipsis and 1 or 0)
    if (has_ellipsis and named > ndim) or (not has_ellipsis and named ~= ndim) then
      raise(("einsum: '%s': term '%s' names %d dims; operand %d has %d"):format(eq, term, named, k, ndim))
    end
    local out = {}
    for _, l in ipairs(letters) do
      if l == '...' then
        for j = ndim - named, 1, -1 do out[#out + 1] = ELLIPSIS_LETTERS:sub(j, j) end
      else
        out[#out + 1] = l
      end
    end
    return out, has_ellipsis
  end

  local function index_of(list, v)
    for i, x in ipairs(list) do if x == v then return i end end
  end

  -- x with its dims in the order of want (a permutation of have); returns x unchanged when in order
  local function permute_to(x, have, want)
    local perm, same = {}, true
    for i, l in ipairs(want) do
      perm[i] = index_of(have, l)
      same = same and perm[i] == i
    end
    if same then return x end
    return mf.permute(x, perm)
  end

  -- x summed over the dims whose letters keep() rejects; returns x and its remaining letters
  local function sum_unneeded(x, letters, keep)
    local dims, rest = {}, {}
    for i, l in ipairs(letters) do
      if keep(l) then rest[#rest + 1] = l else dims[#dims + 1] = i end
    end
    if #dims == 0 then return x, letters end
    return mf.sum(x, dims), rest
  end

  -- a term with a repeated letter reads a diagonal: x * eye over those two dims, summed over the later one
  local function take_diagonals(eq, x, letters, sizes, dtype)
    local i = 1
    while i <= #letters do
      local j = nil
      for q = i + 1, #letters do if letters[q] == letters[i] then j = q; break end end
      if j then
        local n, m = sizes[i], sizes[j]
        if n ~= m and n >= 0 and m >= 0 then
          raise(("einsum: '%s': letter '%s' repeats over sizes %d and %d"):format(eq, letters[i], n, m))
        end
        if n < 0 then raise(("einsum: '%s': the diagonal of '%s' needs a known size"):format(eq, letters[i])) end
        local shape = {}
        for d = 1, #letters do shape[d] = (d == i or d == j) and n or 1 end
        local mask = mf.eye(n, {dtype = dtype}):reshape(shape)
        x = mf.sum(x * mask, j)
        table.remove(letters, j)
        table.remove(sizes, j)
      else
        i = i + 1
      end
    end
    return x, letters, sizes
  end

  -- product of sizes, or -1 when one is unknown
  local function prod(list)
    local p = 1
    for _, v in ipairs(list) do
      if v < 0 then return -1 end
      p = p * v
    end
    return p
  end

  -- a reshape target with at most one unknown (-1) size
  local function reshape(eq, x, shape)
    local unknown = 0
    for _, v in ipairs(shape) do if v < 0 then unknown = unknown + 1 end end
    if unknown > 1 then
      raise(("einsum: '%s': more than one size of a product is unknown when the graph is built"):format(eq))
    end
    return mf.reshape(x, shape)
  end

  -- the size a batch dim of sizes s and t broadcasts to (1 against n; -1: unknown until run)
  local function bcast(s, t)
    if s == 1 then return t end
    if t == 1 or s >= 0 then return s end
    return t
  end

  -- A (letters la, sizes sa) times B over their shared letters: batch letters (still needed later)
  -- stay as matmul's (broadcasting) batch dims, contracted ones (needed nowhere else) become its
  -- inner dim, the others its rows (A's) and columns (B's). Returns the product, its letters, sizes.
  local function contract(eq, a, la, sa, b, lb, sb, needed)
    local size_a, size_b = {}, {}
    for i, l in ipairs(la) do size_a[l] = sa[i] end
    for i, l in ipairs(lb) do size_b[l] = sb[i] end
    local batch, con, aonly, bonly = {}, {}, {}, {}
    for _, l in ipairs(la) do
      if not size_b[l] then
        aonly[#aonly + 1] = l
      elseif needed(l) then
        batch[#batch + 1] = l
      else
        local s, t = size_a[l], size_b[l]
        if s ~= t and s >= 0 and t >= 0 then
          raise(("einsum: '%s': letter '%s' has size %d in one operand and %d in another"):format(eq, l, s, t))
        end
        con[#con + 1] = l
      end
    end
    for _, l in ipairs(lb) do if not size_a[l] then bonly[#bonly + 1] = l end end
    local function sizes(list, map)
      local out = {}
      for i, l in ipairs(list) do out[i] = map[l] end
      return out
    end
    local function cat(...)
      local out = {}
      for _, list in ipairs{...} do for _, v in ipairs(list) do out[#out + 1] = v end end
      return out
    end
    for _, l in ipairs(batch) do
      local s, t = size_a[l], size_b[l]
      if s ~= t and s ~= 1 and t ~= 1 and s >= 0 and t >= 0 then
        raise(("einsum: '%s': letter '%s' has sizes %d and %d, which do not broadcast"):format(eq, l, s, t))
      end
    end
    local m, k, n = prod(sizes(aonly, size_a)), prod(sizes(con, size_a)), prod(sizes(bonly, size_b))
    local pa = reshape(eq, permute_to(a, la, cat(batch, aonly, con)), cat(sizes(batch, size_a), {m, k}))
    local pb = reshape(eq, permute_to(b, lb, cat(batch, con, bonly)), cat(sizes(batch, size_b), {k, n}))
    local letters = cat(batch, aonly, bonly)
    local out_sizes = {}
    for i, l in ipairs(letters) do
      out_sizes[i] = size_a[l] and size_b[l] and bcast(size_a[l], size_b[l]) or size_a[l] or size_b[l]
    end
    return reshape(eq, mf.matmul(pa, pb), out_sizes), letters, out_sizes
  end

  function mf.einsum(eq, ...)
    local nargs, listed = select('#', ...), false
    local ops = mf._pack_args(nargs, ...)
    if type(ops[1]) == 'table' and not mf.is_tensor(ops[1]) and not mf.is_symbol(ops[1]) then
      ops, nargs, listed = ops[1], table.maxn(ops[1]), true
    end
    if type(eq) ~= 'string' then raise(('einsum: the equation is a %s; expected a string'):format(type(eq))) end
    local src = eq:gsub('%s', '')
    local lhs, rhs = src:match('^(.-)%->(.*)$')
    if not lhs then lhs = src end
    if rhs and rhs:find('->', 1, true) then raise(("einsum: '%s' has more than one '->'"):format(eq)) end
    local terms = {}
    for t in (lhs .. ','):gmatch('([^,]*),') do terms[#terms + 1] = t end
    -- einsum(eq, a, nil, b) or einsum(eq, a, nil): name the hole (einsum takes no trailing options)
    for k = 1, nargs do
      if ops[k] == nil then
        raise(("einsum: operand %d%s is nil; '%s' has %d input term%s, each needing a tensor or symbol"):format(k,
          listed and '' or (' (argument %d)'):format(k + 1), eq, #terms, #terms == 1 and '' or 's'))
      end
    end
    if #terms ~= #ops then
      raise(("einsum: '%s' has %d input term%s; %d operand%s given"):format(eq, #terms, #terms == 1 and '' or 's', #ops,
        #ops == 1 and '' or 's'))
    end
    -- each operand's letters, sizes and count of uses
    local xs, ls, ss, count, ell_dims = {}, {}, {}, {}, 0
    for k, x in ipairs(ops) do
      local sz = sizes_of(x, k)
      local letters, has_ell = term_letters(eq, terms[k], #sz, k)
      if has_ell then
        local named = 0
        for _, l in ipairs(letters) do if not ELLIPSIS_LETTERS:find(l, 1, true) then named = named + 1 end end
        ell_dims = math.max(ell_dims, #sz - named)
      end
      for _, l in ipairs(letters) do count[l] = (count[l] or 0) + 1 end  -- 'ii' counts i twice: a trace
      local sizes = {}
      for i = 1, #sz do sizes[i] = sz[i] end
      xs[k], ls[k], ss[k] = take_diagonals(eq, x, letters, sizes, x:dtype())
    end
    -- the output: explicit, or (NumPy's rule) '...' then the letters used once, in alphabetical order
    local out = {}
    if rhs then
      -- an output without '...' sums the dims '...' covers, as PyTorch does
      for _, l in ipairs(term_letters(eq, rhs)) do
        if l == '...' then
          for j = ell_dims, 1, -1 do out[#out + 1] = ELLIPSIS_LETTERS:sub(j, j) end
        else
          if index_of(out, l) then raise(("einsum: '%s': output letter '%s' appears twice"):format(eq, l)) end
          if not count[l] then raise(("einsum: '%s': output letter '%s' is in no input term"):format(eq, l)) end
          out[#out + 1] = l
        end
      end
    else
      for j = ell_dims, 1, -1 do out[#out + 1] = ELLIPSIS_LETTERS:sub(j, j) end
      local once = {}
      for l, c in pairs(count) do
        if c == 1 and not ELLIPSIS_LETTERS:find(l, 1, true) then once[#once + 1] = l end
      end
      table.sort(once)
      for _, l in ipairs(once) do out[#out + 1] = l end
    end
    -- left to right: sum what no later term and not the output needs, then contract with the next
    local function needed_after(k)
      return function(l)
        if index_of(out, l) then return true end
        for q = k + 1, #ls do if index_of(ls[q], l) then return true end end
        return false
      end
    end
    local function drop_sizes(sizes, letters, rest)
      local r = {}
      for i, l in ipairs(rest) do r[i] = sizes[index_of(letters, l)] end
      return r
    end
    local y, ly, sy = xs[1], ls[1], ss[1]
    local rest
    y, rest = sum_unneeded(y, ly, needed_after(1))
    sy, ly = drop_sizes(sy, ly, rest), rest
    for k = 2, #xs do
      local b, lb, sb = xs[k], ls[k], ss[k]
      for q = k - 1, k do  -- products go through matmul: floats only
        local dt = ops[q]:dtype()
        if dt ~= 'float32' and dt ~= 'float64' then
          raise(("einsum: '%s': operand %d is %s; a product of operands needs float32 or float64 "
            .. "(cast it with :float())"):format(eq, q, dt))
        end
      end
      if ops[k]:dtype() ~= ops[1]:dtype() then  -- else matmul, inside, would name itself
        raise(("einsum: '%s': operand 1 is %s, operand %d is %s; expected one dtype (convert with :float() "
          .. "or :double())"):format(eq, ops[1]:dtype(), k, ops[k]:dtype()))
      end
      local keep = function(l) return needed_after(k)(l) or index_of(ly, l) end
      b, rest = sum_unneeded(b, lb, keep)
      sb, lb = drop_sizes(sb, lb, rest), rest
      y, ly, sy = contract(eq, y, ly, sy, b, lb, sb, needed_after(k))
    end
    y, rest = sum_unneeded(y, ly, function(l) return index_of(out, l) end)
    return permute_to(y, rest, out)
  end

  -- allclose ------------------------------------------------------------------------------------------
  function mf.allclose(a, b, opts)
    opts = opts or {}
    require('moonflow.options').keys('allclose', opts, {'rtol', 'atol', 'equal_nan'})
    if not mf.is_tensor(a) or not mf.is_tensor(b) then
      raise('allclose: returns a Lua boolean, so it takes tensors (on symbols use mf.all over a comparison)')
    end
    -- PyTorch's rules, checked here so the errors name allclose (not the sub inside): one dtype,
    -- shapes that broadcast
    if a:dtype() ~= b:dtype() then
      raise(('allclose: a is %s, b is %s; expected one dtype (convert one, e.g. b:type(\'%s\'))'):format(a:dtype(),
        b:dtype(), a:dtype()))
    end
    local na, nb = a:dim(), b:dim()
    for k = 0, math.min(na, nb) - 1 do
      local da, db = a:size(na - k), b:size(nb - k)
      if da ~= db and da ~= 1 and db ~= 1 then
        raise(('allclose: a is %s, b is %s; the shapes must broadcast (dim %d from the end: %d vs %d)'):format(
          a:shape_str(), b:shape_str(), k + 1, da, db))
      end
    end
    local rtol, atol = opts.rtol or 1e-5, opts.atol or 1e-8
    -- integers compare in float64: a difference of uint8 values would wrap
    if a:dtype() ~= 'float32' and a:dtype() ~= 'float64' then a = a:double() end
    if b:dtype() ~= 'float32' and b:dtype() ~= 'float64' then b = b:double() end
    -- equal values (infinities of one sign too) are close; NaN is close to NaN only with equal_nan
    local close = mf.maximum(mf.le(mf.abs(a - b), atol + rtol * mf.abs(b)), mf.eq(a, b))
    if opts.equal_nan then close = mf.maximum(close, mf.isnan(a) * mf.isnan(b)) end
    return mf.all(close):item() == 1
  end

  mf._docs.einsum = "mf.einsum(equation, x1, x2, ...) or einsum(equation, {x1, ...}): Einstein summation, "
    .. "NumPy/PyTorch style: 'ij,jk->ik', 'bij,bjk->bik', 'i,j->ij', 'ij->ji', 'ij,ij->', traces and diagonals "
    .. "('ii', 'ii->i': a repeated letter in one term), '...' for leading dims (size 1 broadcasts where they stay "
    .. "in the output; an output without '...' sums them, as PyTorch). Without '->' the output is '...' then the "
    .. "letters used once, in alphabetical order. Built from permute, reshape, sum, mul and matmul, so it works on "
    .. "tensors and graph symbols and has gradients; a product of operands needs floats (matmul's rule)."
  mf._docs.allclose = "mf.allclose(a, b[, {rtol = 1e-5, atol = 1e-8, equal_nan = false}]): true when every "
    .. "|a - b| <= atol + rtol * |b| (a and b broadcast; equal values, infinities included, are close; NaN only "
    .. "with equal_nan), as PyTorch. A Lua boolean, so tensors only; built on registered ops."
end
