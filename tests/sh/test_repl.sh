#!/usr/bin/env bash
# The REPL fed through a pipe: results print, multi-line statements continue, help() works, and
# every bad input reports its error while the session goes on to the next line.
set -u
MF=${1:?usage: test_repl.sh path/to/moonflow}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$MF" >"$out" 2>"$err" <<'LUA'
a = mf.tensor{{1, 2}, {3, 4}}
a + a
mf.matmul(mf.ones(2, 3), mf.ones(4, 5))
x = a:sum(3)
mf.zeros(1e14)
mf.tensor{{1, 2}, {3}}
mf.zeros(2, {dtype = 'float16'})
mf.sum(a, {bogus = 1})
for i = 1, 2 do
  print('loop', i)
end
function f(x)
  return x * 10
end
f(a):sum():item()
{1, 2, k = 'v'}
help('matmul')
error('custom failure')
local y = = 2
'still alive', a:get(2, 2)
LUA
status=$?
fail=0
expect() {  # file, fixed string, what
  if ! grep -qF -- "$2" "$1"; then echo "FAIL: $3: '$2' not in $(basename "$1")"; fail=1; fi
}
expect "$out" ' 2  4' 'expression result printed'
expect "$out" '[float32 tensor of size 2x2]' 'tensor printed with dtype and shape'
expect "$err" 'matmul: a is 2x3, b is 4x5' 'shape mismatch reported'
expect "$err" 'sum: dim 3 out of range' 'dim out of range reported'
expect "$err" 'zeros: cannot allocate' 'absurd size reported'
expect "$err" 'ragged nested table' 'ragged table reported'
expect "$err" "unknown dtype 'float16'" 'bad dtype reported'
expect "$err" "unknown param 'bogus'" 'bad param reported'
expect "$out" 'loop	2' 'multi-line statement ran'
expect "$out" '100' 'function defined over several lines and called'
expect "$out" 'k = "v"' 'table printed shallowly'
expect "$out" 'mf.matmul(a, b, transpose_a, transpose_b)' 'help printed op docs'
expect "$err" 'custom failure' 'runtime error reported'
expect "$err" "unexpected symbol near '='" 'syntax error reported'
expect "$out" '"still alive"	4' 'session survived every error'
[ "$status" -eq 0 ] || { echo "FAIL: REPL exit status $status"; fail=1; }
if [ $fail -ne 0 ]; then echo '--- stdout'; cat "$out"; echo '--- stderr'; cat "$err"; fi
exit $fail
