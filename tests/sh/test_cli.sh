#!/usr/bin/env bash
# The moonflow command line: --version, --list-ops, --help-op, -e, scripts with arguments, and a
# script error that prints a traceback with file:line and exits non-zero, also when a tail call
# (`return f()`) removed the frames of the user's code.
set -u
MF=${1:?usage: test_cli.sh path/to/moonflow}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # what, command output, expected fixed string
  if ! grep -qF -- "$3" <<<"$2"; then echo "FAIL: $1: '$3' not in: $2"; fail=1; fi
}
check 'version' "$("$MF" --version)" 'moonflow 0.1.0'
ops=$("$MF" --list-ops)
for op in matmul add softmax sum reshape randn where cast; do check "--list-ops has $op" "$ops" "$op"; done
check '--help-op' "$("$MF" --help-op matmul)" 'Matrix product'
check '--help-op params' "$("$MF" --help-op sum)" 'keepdim'
if "$MF" --help-op nosuch >/dev/null 2>&1; then echo 'FAIL: --help-op of an unknown op should fail'; fail=1; fi
check '-e' "$("$MF" -e 'print((mf.ones(2, 2) * 3):sum():item())')" '12'
check 'help() in scripts' "$("$MF" -e "help('relu')")" 'max(x, 0)'
cat >"$tmp/args.lua" <<'LUA'
print(arg[0]:match('args.lua') ~= nil, arg[1], arg[2], #arg)
LUA
check 'script args' "$("$MF" "$tmp/args.lua" one two)" 'true	one	two	2'
cat >"$tmp/bad.lua" <<'LUA'
local function inner()
  return mf.ones(2, 3) + mf.ones(4)
end
inner()
LUA
out=$("$MF" "$tmp/bad.lua" 2>&1); st=$?
[ $st -ne 0 ] || { echo 'FAIL: a failing script must exit non-zero'; fail=1; }
check 'script error message' "$out" 'bad.lua:2: add: a is 2x3, b is 4'
check 'script traceback' "$out" 'stack traceback'
check 'traceback names the caller line' "$out" 'bad.lua:4'
cat >"$tmp/tail.lua" <<'LUA'
local a, b = mf.ones(2, 3), mf.ones(4, 5)
local function g() return mf.matmul(a, b) end
local function h()
  return g()
end
print(pcall(function()
  return h()
end))
return h()
LUA
out=$("$MF" "$tmp/tail.lua" 2>&1); st=$?
[ $st -eq 1 ] || { echo "FAIL: a failing script must exit 1, got $st"; fail=1; }
check 'a tail call inside a pcall-ed function names the pcall line' "$out" 'tail.lua:6: matmul: a is 2x3, b is 4x5'
check 'a tail call on the last line names that line' "$out" 'tail.lua:9: matmul: a is 2x3, b is 4x5'
cat >"$tmp/tail2.lua" <<'LUA'
local function f(x) return x:reshape(5) end
if #arg > 0 then return f(mf.ones(2)) end
return mf.ones(3):reshape(2)
LUA
out=$("$MF" "$tmp/tail2.lua" 2>&1)
check 'several tail calls: the candidates are named' "$out" 'tail2.lua:3: reshape'
check 'several tail calls: the others are listed' "$out" '(or the tail call on line 2)'
out=$("$MF" -e 'return mf.ones(2) + mf.ones(3)' 2>&1)
check 'no tail call: -e names its line' "$out" '(command line):1: add'
out=$("$MF" -e 't = mf.ones(2)' -e 'return t:reshape(3)' 2>&1)
check 'a tail call in -e code names its line' "$out" '(command line):1: reshape'
out=$("$MF" "$tmp/missing.lua" 2>&1); st=$?
[ $st -ne 0 ] || { echo 'FAIL: a missing script must exit non-zero'; fail=1; }
check 'missing script' "$out" 'missing.lua'
out=$("$MF" --bogus 2>&1); st=$?
[ $st -eq 2 ] || { echo "FAIL: unknown option should exit 2, got $st"; fail=1; }
exit $fail
