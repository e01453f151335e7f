-- Elementwise fusion, a bind-time pass of sessions (issue 5). Once a session has ordered the nodes
-- and inferred every shape, each maximal tree of pointwise ops whose intermediate results nobody
-- else reads becomes one fused_elementwise step (src/op/fused.cc): the chain then reads its inputs
-- and writes its result once instead of once per op, and its intermediates need no memory at all.
-- A tree whose only reader is mf.assign to a contiguous variable becomes one fused_assign step that
-- writes the variable in the same pass (w = -eta * (g + lam * w): 2 reads + 1 write instead of 7).
-- Which ops join a tree is each op's pointwise attribute (mf_op_pointwise: code and fusable).
local bit = require 'bit'
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'

return function(mf)
  local OPF_WRITES = C.MF_OPF_WRITES
  local MAX_STEPS = 24       -- at most 25 inputs: within the kernel's limit of 32

  -- mf._infer's header pool for emit_fused's check (rewound per check: its headers are scratch)
  local scratch = mf._header_pool()

  -- the program code of op when fused programs may hold it, else false; read once per op
  local fuse_codes, fusable = {}, ffi.new('int32_t[1]')
  local function fuse_code(op)
    local c = fuse_codes[op]
    if c == nil then
      local code = C.mf_op_pointwise(op.index, nil, fusable)
      c = code >= 0 and fusable[0] ~= 0 and code
      fuse_codes[op] = c
    end
    return c
  end

  local function same_shape(a, b)
    if a._ndim ~= b._ndim then return false end
    for d = 0, a._ndim - 1 do
      if a._shape[d] ~= b._shape[d] then return false end
    end
    return true
  end

  -- the program code of a step that can join a group: a fusable op, float, one dtype throughout
  local function code_of(st)
    local c = fuse_code(st.op)
    if not c then return nil end
    -- add and sub with alpha ~= 1 (a + alpha * b) are not the plain step a program holds
    local alpha = st.rec and st.rec.p.alpha
    if alpha and alpha ~= 1 then return nil end
    local dt = st.outs[1].s._dtype_id
    if dt ~= C.MF_FLOAT32 and dt ~= C.MF_FLOAT64 then return nil end
    for _, e in ipairs(st.in_entries) do
      if e.s._dtype_id ~= dt then return nil end
    end
    return c
  end

  local function base_of(e)
    while e.view_of do e = e.view_of end
    return e
  end

  -- Step 1. Who reads what: e.nuses (readers of entry e), e.reader (its last reader), each step's
  -- position st.pos, gone[pos] (the step at pos was folded into another: false for now), and
  -- writers_between(i, j): writer steps strictly between positions i < j (moving a read across one
  -- could change its value). The counts live in the entries (records of this bind only, made with
  -- room for them, session.lua) and gone in an array by position, not in tables keyed by entry or
  -- step: such a table has a slot per node, scattered over a heap that grows with the graph, and
  -- its lookups and rehashes were the part of binding that grew faster than the graph (issue 20).
  local function index_steps(steps)
    local wcount, gone, w = {}, {}, 0
    for i, st in ipairs(steps) do
      st.pos = i
      for _, e in ipairs(st.in_entries) do
        e.nuses = (e.nuses or 0) + 1
        e.reader = st
      end
      if bit.band(st.op.flags, OPF_WRITES) ~= 0 then w = w + 1 end
      wcount[i], gone[i] = w, false
    end
    local function writers_between(i, j) return wcount[j - 1] - wcount[i] end
    return {steps = steps, writers_between = writers_between, gone = gone,
            group = {inputs = {}, index = {}, members = {}, prog = {}, value = {}}}
  end

  -- Step 2. The group rooted at steps[i]: its producers, recursively, while each result has no other
  -- reader, has the root's shape, and no writer runs between producer and root. Returns
  -- {inputs (entries read from outside, first-read order), members (steps, run order),
  -- prog (code, operand, operand per member, flat; an operand is the input's entry or the member's
  -- number), first (earliest member position)}; absorbed producers are marked in cx.gone.
  -- (Plain functions over cx and g, not closures per group: binding a big graph makes thousands.)
  local function joins(cx, g, p, e, own)
    return p and not cx.gone[p.pos] and e.nuses == own and not e.external and not e.view_of and code_of(p)
      and same_shape(e.s, g.out.s) and g.count < MAX_STEPS and cx.writers_between(p.pos, g.root_pos) == 0
  end

  local function input_value(g, e)
    if not g.index[e] then
      g.inputs[#g.inputs + 1] = e
      g.index[e] = #g.inputs
    end
    return e
  end

  local function absorb(cx, g, st)  -- post-order: operands first, so steps come out in run order
    local ins = st.in_entries
    local op1, op2
    for k, e in ipairs(ins) do
      local v = g.value[e]
      if not v then
        local own = 0  -- how often st itself reads e
        for _, x in ipairs(ins) do if x == e then own = own + 1 end end
        local p = e.producer
        if joins(cx, g, p, e, own) then
          g.count = g.count + 1
          cx.gone[p.pos] = true
          if p.pos < g.first then g.first = p.pos end
          v = absorb(cx, g, p)
        else
          v = input_value(g, e)
        end
        g.value[e] = v
      end
      if k == 1 then op1 = v else op2 = v end
    end
    local members, prog = g.members, g.prog
    members[#members + 1] = st
    prog[#prog + 1], prog[#prog + 2], prog[#prog + 3] = code_of(st), op1, op2 or op1
    return #members
  end

  local function clear(t)
    for k in pairs(t) do t[k] = nil end
  end

  -- One group record per pass, cleared for each root (most roots form no group, and the tables
  -- would be garbage right after): a group's tables are read only until emit_fused returns.
  local function grow_group(cx, i)
    local root, g = cx.steps[i], cx.group
    clear(g.inputs); clear(g.index); clear(g.members); clear(g.prog); clear(g.value)
    g.count, g.first, g.out, g.root_pos = 1, i, root.outs[1], i
    absorb(cx, g, root)
    return g
  end

  -- Step 3. The variable the group's result may be written into: when the root's only reader
  -- assigns it to a contiguous variable of its shape and dtype, no writer runs in between, and no
  -- other input of the group views that variable (it would see it half written). Returns the
  -- variable's entry and the assign step, or nil.
  local function assign_target(cx, g, root)
    local out = root.outs[1]
    local a = out.nuses == 1 and out.reader
    if not (a and a.op.overwrites and a.in_entries[2] == out and not out.external) then return nil end
    local v = a.in_entries[1]
    if not (v.var and v.s._is_contig == 1 and v.s._dtype_id == out.s._dtype_id and same_shape(v.s, out.s)
            and cx.writers_between(g.first, a.pos) == 0) then
      return nil
    end
    for _, e in ipairs(g.inputs) do
      local b = base_of(e)
      if e ~= v and (b == v or (b.s._store ~= nil and b.s._store == v.s._store)) then return nil end
    end
    return v, a
  end

  -- Step 4. The fused step's inputs (ref first when writing a variable) and its flat program.
  local function build_program(g, ref)
    local ins = {}
    if ref then ins[1] = ref end
    for _, e in ipairs(g.inputs) do
      if e ~= ref then ins[#ins + 1] = e end
    end
    local nin, vidx = #ins, g.index  -- (g.index is done with: it becomes the value numbers)
    for k, e in ipairs(ins) do vidx[e] = k - 1 end
    local prog = g.prog
    for j = 1, #prog, 3 do
      for q = j + 1, j + 2 do
        local o = prog[q]
        prog[q] = type(o) == 'number' and nin + o - 1 or vidx[o]
      end
    end
    return ins, prog
  end

  -- A fused_elementwise output may take over an input that dies here, like any elementwise op's.
  local function pick_inplace(out, ins)
    out.inplace_of = nil
    for _, x in ipairs(ins) do
      if not x.external and not x.alias_of and x.s._dtype_id == out.s._dtype_id and x.s._count == out.s._count
         and x.s._ndim == out.s._ndim and x.s._is_contig == 1 then
        out.inplace_of = x
        return
      end
    end
  end

  -- Step 5. Replaces step `at` (the root, or the assign it folds) by the fused step; its inputs now
  -- live until it runs. Returns how many op nodes it folded.
  local function emit_fused(cx, g, root, ref, at)
    local ins, prog = build_program(g, ref)
    local op = mf._ops[ref and 'fused_assign' or 'fused_elementwise']
    -- the canonical params text of {program = prog} (mf._params_record's), built directly
    local rec = mf._params_record_text(op, 'program=' .. table.concat(prog, ','))
    local structs = {}
    for k, e in ipairs(ins) do
      structs[k] = e.s
      if e.last_use < at.step then e.last_use = at.step end
    end
    -- a check only: the step keeps at's outputs, so the headers inferred here are scratch
    scratch:rewind()
    local ok, err = pcall(mf._infer, op, rec, structs, #ins, nil, scratch)
    if not ok then error(('fusion of %s: %s'):format(root.name, tostring(err)), 0) end
    if ref then cx.gone[root.pos] = true else pick_inplace(root.outs[1], ins) end
    cx.steps[at.pos] = {op = op, rec = rec, ins = structs, in_entries = ins, outs = at.outs, step = at.step,
                        pos = at.pos, name = at.name}
    return #g.members - 1 + (ref and 1 or 0)
  end

  -- Step 6. Drops the folded steps from ex.steps and their outputs from pentries (in place). Every
  -- planned entry has its producer in ex.steps (an op's output, or a contiguous copy's), and a
  -- replaced step keeps its position (emit_fused), so an entry is dead when its producer's is gone.
  local function drop_folded(ex, pentries, gone)
    local kept = {}
    for i, st in ipairs(ex.steps) do
      if not gone[i] then kept[#kept + 1] = st end
    end
    ex.steps = kept
    local n = 0
    for _, e in ipairs(pentries) do
      if not gone[e.producer.pos] then
        n = n + 1
        pentries[n] = e
      end
    end
    for k = #pentries, n + 1, -1 do pentries[k] = nil end
  end

  -- ex: the executor being bound (steps with in_entries/outs entries, see session.lua); pentries:
  -- the planned entries. Rewrites both; returns how many op nodes were folded into others. Roots
  -- are taken from the last step back, so each group is the largest tree ending at its root.
  function mf._fuse(ex, pentries)
    local cx = index_steps(ex.steps)
    local folded = 0
    for i = #cx.steps, 1, -1 do
      local root = cx.steps[i]
      if not cx.gone[i] and code_of(root) then
        local g = grow_group(cx, i)
        local ref, at = assign_target(cx, g, root)
        if #g.members >= 2 or ref then folded = folded + emit_fused(cx, g, root, ref, at or root) end
      end
    end
    drop_folded(ex, pentries, cx.gone)
    return folded
  end
end
