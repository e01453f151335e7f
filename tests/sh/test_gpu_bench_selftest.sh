#!/usr/bin/env bash
# scripts/gpu/bench.lua, the GPU benchmark against PyTorch, in its --self-test mode (both sides on the
# CPU, small sizes): every case runs on both sides and gets a row with both times and their ratio,
# the targets are shown but not judged; without a GPU the real run stops with exit 2 saying why, and
# a PyTorch twin that cannot start is a clear error. No timing is judged here.
set -u
MF=${1:?usage: test_gpu_bench_selftest.sh path/to/moonflow}
fail=0
no() { echo "FAIL: $*"; fail=1; }

out=$("$MF" scripts/gpu/bench.lua --self-test 2>/dev/null)
rc=$?
echo "$out"
[ $rc -eq 0 ] || no "bench.lua --self-test exited $rc"
echo "$out" | grep -q '^| case | moonflow | PyTorch | mf/pt | target | verdict |$' || no "no table header"
for c in 'MLP 784-512-256-10 step, graph' 'MLP 784-512-256-10 step, eager' 'LeNet step, graph' 'LeNet step, eager' \
         'sgemm n=64' 'sgemm n=128' 'copy of the same' 'fused SGD-momentum update'; do
  row=$(echo "$out" | grep -F "| $c")
  # | name | 0.123 ms ... | 0.456 ms ... (..) ... | 0.27 | target | verdict |
  echo "$row" | grep -Eq '^\| [^|]+ \| [0-9]+\.[0-9]{3} ms[^|]* \| [0-9]+\.[0-9]{3} ms \([^)]+\)[^|]* \| [0-9]+\.[0-9]{2} \|' ||
    no "no row with both times and a ratio for '$c': '$row'"
done
[ "$(echo "$out" | grep -c 'mf/pt <= 0.8 | not judged (cpu)')" -eq 4 ] || no "the four training steps do not show their target"
echo "$out" | grep -Eq '>= 85% of copy \([0-9]+ GB/s\) \| [0-9]+% of copy; not judged \(cpu\)' || no "the update row lacks its copy target"
echo "$out" | grep -q '^bench.lua: 8 cases, 0 errors, 0 targets missed$' || no "no summary line"

if ! "$MF" -e "os.exit(mf.cuda.is_available() and 0 or 1)"; then
  out=$("$MF" scripts/gpu/bench.lua --quick 2>&1)
  rc=$?
  [ $rc -eq 2 ] && echo "$out" | grep -q '^bench.lua: no GPU (.\+); nothing measured$' || no "without a GPU: exit $rc, '$out'"
fi

out=$(PYTHON=/nonexistent/python3 "$MF" scripts/gpu/bench.lua --self-test 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'bench.lua: the PyTorch twin (/nonexistent/python3 .*bench_torch.py) could not start' ||
  no "a missing python: exit $rc, '$(echo "$out" | tail -3)'"

[ $fail -eq 0 ] && echo "test_gpu_bench_selftest: ok"
exit $fail
