#!/usr/bin/env bash
# The per-op bench (scripts/bench/ops.lua) cannot forget an op: its smoke mode (--quick --no-torch:
# one call per case at 8 x 8, moonflow alone) runs every case, and its JSON names a row for every
# registered op that is not exempted, each with a time; an op registered without a case, or exempted
# without a reason of the two allowed forms, stops the suite with a message naming it. No timing is
# judged here.
set -u
MF=${1:?usage: test_bench_ops.sh path/to/moonflow}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

if ! "$MF" scripts/bench/ops.lua --quick --no-torch --json "$tmp/ops.json" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: ops.lua --quick --no-torch exited non-zero:"; cat "$tmp/err"; fail=1
fi
grep -q '^| case ' "$tmp/out" || { echo "FAIL: no table header in the output:"; head -5 "$tmp/out"; fail=1; }

# the JSON parses, every registered op has a row or an exemption, every row has a moonflow time
"$MF" -e "
local json = require 'moonflow.json'
local f = assert(io.open('$tmp/ops.json'))
local d = json.decode(f:read('*a'))
f:close()
local has, bad = {}, {}
for _, r in ipairs(d.rows) do
  has[r.op] = true
  if type(r.mf_us) ~= 'number' or r.mf_us <= 0 then bad[#bad + 1] = r.case .. ' has no moonflow time' end
  for _, k in ipairs{'case', 'dtype', 'size'} do
    if type(r[k]) ~= 'string' then bad[#bad + 1] = r.op .. ' row without ' .. k end
  end
end
for _, op in ipairs(mf.list_ops()) do
  local why = d.exempt[op]
  if not has[op] and type(why) ~= 'string' then bad[#bad + 1] = op .. ' neither timed nor exempted' end
end
if d.summary.cases ~= #d.rows or d.summary.failures ~= 0 then bad[#bad + 1] = 'summary does not match the rows' end
if #bad > 0 then print('FAIL: ' .. table.concat(bad, '; ')); os.exit(1) end
" || fail=1

# --diff of a result with itself: every figure unchanged
d=$("$MF" scripts/bench/ops.lua --diff "$tmp/ops.json" "$tmp/ops.json" 2>&1)
if ! grep -qE '^geomean moonflow new/old over [0-9]+ figures: 1\.000$' <<<"$d"; then
  echo "FAIL: --diff of a result with itself:"; tail -3 <<<"$d"; fail=1
fi

# the coverage check fails, naming the op, for an op registered without a case; and it refuses an
# exemption whose reason is neither 'timed through <op with a case>' nor 'not user-facing: <why>',
# and one of an op that is not registered
"$MF" -e "
local B = assert(loadfile('scripts/bench/ops.lua'))('--lib')
local e = B.check_coverage(B.cases())
if e then print('FAIL: coverage fails on the tree as it is: ' .. e); os.exit(1) end
mf.register_op{name = 'bench_probe_op', num_inputs = 1, doc = 'probe', infer_shape = 'same',
  lua_compute = 'function(ins, outs) return function() end end'}
e = B.check_coverage(B.cases())
if not (e and e:find('bench_probe_op', 1, true) and e:find('without a bench case', 1, true)) then
  print('FAIL: an op without a case passed the coverage check: ' .. tostring(e)); os.exit(1)
end
B.EXEMPT.bench_probe_op = 'rarely used'
e = B.check_coverage(B.cases())
if not (e and e:find('bench_probe_op', 1, true) and e:find('must start', 1, true)) then
  print('FAIL: an exemption without an allowed reason passed: ' .. tostring(e)); os.exit(1)
end
B.EXEMPT.bench_probe_op = 'timed through no_such_op'
e = B.check_coverage(B.cases())
if not (e and e:find('no_such_op has no case', 1, true)) then
  print('FAIL: timed through an op without a case passed: ' .. tostring(e)); os.exit(1)
end
for _, why in ipairs{'not user-facing: a probe of this test', 'timed through matmul'} do
  B.EXEMPT.bench_probe_op = why
  e = B.check_coverage(B.cases())
  if e then print('FAIL: a valid exemption was refused: ' .. e); os.exit(1) end
end
B.EXEMPT.bench_gone_op = 'not user-facing: not registered at all'
e = B.check_coverage(B.cases())
if not (e and e:find('bench_gone_op (EXEMPT)', 1, true)) then
  print('FAIL: an exemption of an op that is not registered passed: ' .. tostring(e)); os.exit(1)
end
" || fail=1

[ $fail -eq 0 ] && echo "test_bench_ops: ok"
exit $fail
