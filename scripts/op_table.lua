-- Prints the README's operator table (markdown) from the registry, so the docs cannot drift:
-- tests/sh/test_docs.sh checks that README.md contains exactly this output.
-- usage: moonflow scripts/op_table.lua
print('| op | inputs | params | doc |')
print('|---|---|---|---|')
for _, name in ipairs(mf.list_ops()) do
  local op = mf._ops[name]
  local ins = op.variadic and ('{' .. op.inputs[1] .. '...}') or table.concat(op.inputs, ', ')
  local ps = {}
  for _, p in ipairs(op.param_info) do
    ps[#ps + 1] = p.default == '(required)' and p.name or (p.name .. '=' .. (p.default == '' and '{}' or p.default))
  end
  print(('| `%s` | %s | %s | %s |'):format(name, ins, table.concat(ps, ', '), op.doc:gsub('|', '\\|')))
end
