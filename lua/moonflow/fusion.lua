-- Elementwise fusion, a bind-time pass of sessions (issue 5). Once a session has ordered the nodes
-- and inferred every shape, each maximal tree of pointwise ops whose intermediate results nobody
-- else reads becomes one fused_elementwise step (src/op/fused.cc): the chain then reads its inputs
-- and writes its result once instead of once per op, and its intermediates need no memory at all.
-- A tree whose only reader is mf.assign to a contiguous variable becomes one fused_assign step that
-- writes the variable in the same pass (w = -eta * (g + lam * w): 2 reads + 1 write instead of 7).
local bit = require 'bit'

return function(mf)
  local K = mf.kernels
  local OPF_WRITES = 16
  local FUSED_BINARY = 64    -- MF_FUSED_BINARY
  local MAX_STEPS = 24       -- at most 25 inputs: within the kernel's limit of 32

  -- op name -> program code: parameterless unary ops and the arithmetic binary ops
  local CODE = {}
  for name, code in pairs(K.U) do
    if name == name:lower() and name ~= 'clamp' and name ~= 'leaky_relu' then CODE[name] = code end
  end
  for _, name in ipairs{'add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'relu_backward'} do
    CODE[name] = FUSED_BINARY + K.B[name]
  end

  local function same_shape(a, b)
    if a.ndim ~= b.ndim then return false end
    for d = 0, a.ndim - 1 do
      if a.shape[d] ~= b.shape[d] then return false end
    end
    return true
  end

  -- the program code of a step that can join a group: float, one dtype throughout
  local function code_of(st)
    local c = CODE[st.op.name]
    if not c then return nil end
    local dt = st.outs[1].s.dtype_id
    if dt ~= 0 and dt ~= 1 then return nil end
    for _, e in ipairs(st.in_entries) do
      if e.s.dtype_id ~= dt then return nil end
    end
    return c
  end

  local function base_of(e)
    while e.view_of do e = e.view_of end
    return e
  end

  -- ex: the executor being bound (steps with in_entries/outs entries, see session.lua); pentries:
  -- the planned entries. Rewrites both; returns how many op nodes were folded into others.
  function mf._fuse(ex, pentries)
    local steps = ex.steps
    local uses, reader, wcount, w = {}, {}, {}, 0
    for i, st in ipairs(steps) do
      st.pos = i
      for _, e in ipairs(st.in_entries) do
        uses[e] = (uses[e] or 0) + 1
        reader[e] = st
      end
      if bit.band(st.op.flags, OPF_WRITES) ~= 0 then w = w + 1 end
      wcount[i] = w
    end
    -- writer steps strictly between positions i < j: moving a read across one could change its value
    local function writers_between(i, j) return wcount[j - 1] - wcount[i] end

    local gone, folded = {}, 0
    for i = #steps, 1, -1 do
      local root = steps[i]
      if not gone[root] and code_of(root) then
        local out = root.outs[1]
        local g = {inputs = {}, index = {}, members = {}, prog = {}, value = {}, count = 1, first = i}
        local function input_value(e)
          local k = g.index[e]
          if not k then
            k = #g.inputs + 1
            g.inputs[k], g.index[e] = e, k
          end
          return {input = e}
        end
        local function absorb(st)  -- post-order: operands first, so steps come out in run order
          local ops = {}
          for k, e in ipairs(st.in_entries) do
            local v = g.value[e]
            if not v then
              local p, own = e.producer, 0
              for _, x in ipairs(st.in_entries) do if x == e then own = own + 1 end end
              if p and not gone[p] and uses[e] == own and not e.external and not e.view_of and code_of(p)
                 and same_shape(e.s, out.s) and g.count < MAX_STEPS and writers_between(p.pos, i) == 0 then
                g.count = g.count + 1
                gone[p] = true
                if p.pos < g.first then g.first = p.pos end
                v = absorb(p)
              else
                v = input_value(e)
              end
              g.value[e] = v
            end
            ops[k] = v
          end
          g.members[#g.members + 1] = st
          g.prog[#g.members] = {code_of(st), ops[1], ops[2] or ops[1]}
          return {step = #g.members}
        end
        absorb(root)

        -- fold an assign that is the only reader into the same pass
        local ref, at = nil, root
        local a = uses[out] == 1 and reader[out]
        if a and a.op.name == 'assign' and a.in_entries[2] == out and not out.external then
          local v = a.in_entries[1]
          local ok = v.var and v.s.is_contig == 1 and v.s.dtype_id == out.s.dtype_id and same_shape(v.s, out.s)
            and writers_between(g.first, a.pos) == 0
          for _, e in ipairs(g.inputs) do  -- another view of the variable would see it half written
            local b = base_of(e)
            if e ~= v and (b == v or (b.s.store ~= nil and b.s.store == v.s.store)) then ok = false end
          end
          if ok then ref, at = v, a end
        end
        if #g.members >= 2 or ref then
          local ins = {}
          if ref then ins[1] = ref end
          for _, e in ipairs(g.inputs) do
            if e ~= ref then ins[#ins + 1] = e end
          end
          local nin, vidx = #ins, {}
          for k, e in ipairs(ins) do vidx[e] = k - 1 end
          local function val(o) return o.step and nin + o.step - 1 or vidx[o.input] end
          local prog = {}
          for _, t in ipairs(g.prog) do
            prog[#prog + 1], prog[#prog + 2], prog[#prog + 3] = t[1], val(t[2]), val(t[3])
          end
          local op = mf._ops[ref and 'fused_assign' or 'fused_elementwise']
          local rec = mf._params_record(op, {program = prog})
          local structs = {}
          for k, e in ipairs(ins) do
            structs[k] = e.s
            if e.last_use < at.step then e.last_use = at.step end  -- inputs now live until the fused step
          end
          local ok, err = pcall(mf._infer, op, rec, structs, nin)
          if not ok then error(('fusion of %s: %s'):format(root.name, tostring(err)), 0) end
          if not ref then  -- the output may take over an input that dies here, like any elementwise op
            out.inplace_of = nil
            for _, x in ipairs(ins) do
              if not x.external and not x.alias_of and x.s.dtype_id == out.s.dtype_id and x.s.count == out.s.count
                 and x.s.ndim == out.s.ndim and x.s.is_contig == 1 then
                out.inplace_of = x
                break
              end
            end
          else
            gone[root] = true
          end
          steps[at.pos] = {op = op, rec = rec, ins = structs, in_entries = ins, outs = at.outs, step = at.step,
                           pos = at.pos, name = at.name}
          folded = folded + #g.members - 1 + (ref and 1 or 0)
        end
      end
    end

    local kept, dead = {}, {}
    for _, st in ipairs(steps) do
      if gone[st] then
        for _, e in ipairs(st.outs) do dead[e] = true end
      else
        kept[#kept + 1] = st
      end
    end
    ex.steps = kept
    local n = 0
    for _, e in ipairs(pentries) do
      if not dead[e] then
        n = n + 1
        pentries[n] = e
      end
    end
    for k = #pentries, n + 1, -1 do pentries[k] = nil end
    return folded
  end
end
