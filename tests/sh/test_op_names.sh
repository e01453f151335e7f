#!/usr/bin/env bash
# Attributes, not names: what a pass or the dispatcher needs to know about an op is an attribute of
# its MF_REGISTER_OP block (src/op/registry.h), so no code outside src/op tests an op's name. This
# finds the usual forms of such a test in the Lua library and the C++ layers above src/op:
#   Lua: op.name == 'x' / 'x' ~= op.name, a table indexed by an op's name (other than the op
#        tables themselves: ops, mf, methods), mf_op_find('x'), a pattern over an op's name
#        (op.name:match('_$') guessing an in-place op) and a comparison of a rule's source text;
#   C++: index_of("x"), mf_op_find("x"), Registry::get().find("x"), name_ == "x".
# Using an op by name (mf._ops.contiguous, mf.assign(...)) is not a test of a name, and is allowed.
set -u
cd "$(dirname "$0")/../.."
fail=0

lua_pattern='(\bop\.name\s*[=~]=)|([=~]=\s*[\w.]*\bop\.name\b)|((?<!\bops)(?<!\bmf)(?<!methods)\[\s*[\w.]*\bop\.name\s*\])|(mf_op_find\s*\(\s*['"'"'"])'
lua_pattern+='|(\bop\.name\s*:\s*(match|find|sub|gsub)\b)|(\b(gradient|shape)_src\s*[=~]=\s*['"'"'"][^'"'"'"])'
cxx_pattern='((index_of|mf_op_find)\s*\(\s*")|(Registry::get\(\)\s*\.\s*find\s*\(\s*")|(\bname_\s*[!=]=\s*")'

# the patterns themselves must catch what they are for (a check that cannot fail is no check)
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf '%s\n' "if op.name == 'assign' then" "local a = adapters[op.name]" "x = CODE[st.op.name]" \
  "if 'split' ~= a.op.name then" "local plain = op.name:match('^(.-)_\$')" \
  "local none = op.gradient_src == 'function() return {} end'" >"$probe"
n=$(grep -cP "$lua_pattern" "$probe")
[ "$n" -eq 6 ] || { echo "FAIL: the Lua pattern caught $n of 6 known name tests"; fail=1; }
printf '%s\n' "ops[op.name] = op" "methods[op.name] = f" "mf[op.name] = f" "raise(op.name .. ': bad')" >"$probe"
n=$(grep -cP "$lua_pattern" "$probe")
[ "$n" -eq 0 ] || { echo "FAIL: the Lua pattern caught $n of 4 lines that test no name"; fail=1; }
printf '%s\n' 'int a = reg.index_of("log");' 'if (op.name_ == "softmax") {' 'Registry::get().find("assign")' >"$probe"
n=$(grep -cP "$cxx_pattern" "$probe")
[ "$n" -eq 3 ] || { echo "FAIL: the C++ pattern caught $n of 3 known name tests"; fail=1; }

hits=$(grep -nP "$lua_pattern" lua/moonflow/*.lua; grep -rnP "$cxx_pattern" src --include='*.cc' --include='*.h' \
  --include='*.cu' --include='*.cuh' | grep -v '^src/op/')
if [ -n "$hits" ]; then
  echo "FAIL: code outside src/op tests an op's name. Declare what it needs as an attribute of the op's"
  echo "MF_REGISTER_OP block (a builder method in src/op/registry.h, read once at load: see"
  echo "README 'Adding an operator') instead:"
  echo "$hits"
  fail=1
fi
[ "$fail" -eq 0 ] && echo 'ok: no op name tests outside src/op'
exit "$fail"
