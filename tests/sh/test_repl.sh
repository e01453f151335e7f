#!/usr/bin/env bash
# The REPL fed through a pipe: results print, multi-line statements continue, help() prints once,
# `=expr` prints, every bad input reports its error naming its input line while the session goes on,
# and the exit status says whether everything ran: 1 after any error or an unfinished statement at
# the end of input, 0 for a clean run, n for exit(n). (tests/sh/repl_pty.py drives a real terminal.)
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
=a:get(1, 2) * 10
mf.matmul(a, mf.ones(3, 3))
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
expect "$err" 'stdin:3: matmul: a is 2x3, b is 4x5' 'error names the input line'
expect "$err" 'stdin:19: unexpected symbol' 'syntax error names the input line'
expect "$out" '20' '=expr printed'
expect "$err" 'stdin:22: matmul: a is 2x2, b is 3x3' 'an expression that is a call (no tail call) names its line'
n=$(grep -c 'Matrix product of the last two dims' "$out")
[ "$n" -eq 1 ] || { echo "FAIL: help('matmul') printed its text $n times, expected once"; fail=1; }
[ "$status" -eq 1 ] || { echo "FAIL: piped input with errors must exit 1, got $status"; fail=1; }

run() {  # stdin text; sets out, err, status
  printf '%s' "$1" | "$MF" >"$out" 2>"$err"; status=$?
}
run $'x = 1\nfor i = 1, 2 do\n  x = x + i\n'
[ "$status" -eq 1 ] || { echo "FAIL: input ending inside a statement must exit 1, got $status"; fail=1; }
expect "$err" "'end' expected (to close 'for' at line 2)" 'unfinished statement reported'
expect "$err" 'input ended inside an unfinished statement (line 2)' 'unfinished statement named'
run $'x = 2\n\nprint(x * 21)\n'
[ "$status" -eq 0 ] || { echo "FAIL: clean piped input must exit 0, got $status"; fail=1; }
expect "$out" '42' 'clean input ran'
run $'print("before")\nexit(7)\nprint("after")\n'
[ "$status" -eq 7 ] || { echo "FAIL: exit(7) must exit 7, got $status"; fail=1; }
if grep -q after "$out"; then echo 'FAIL: input after exit() ran'; fail=1; fi
run $'error("x")\nquit()\n'
[ "$status" -eq 0 ] || { echo "FAIL: quit() after an error must exit 0 (explicit status), got $status"; fail=1; }
run $'pcall(exit, 3)\nprint("after")\n'
[ "$status" -eq 3 ] || { echo "FAIL: exit() caught by pcall must still exit 3, got $status"; fail=1; }
run $'exit("x")\n'
expect "$err" 'exit: expected an integer status, got string' 'bad exit status reported'
[ "$status" -eq 1 ] || { echo "FAIL: a bad exit() argument is an error (status 1), got $status"; fail=1; }
if [ $fail -ne 0 ]; then echo '--- stdout'; cat "$out"; echo '--- stderr'; cat "$err"; fi
exit $fail
