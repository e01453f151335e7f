#!/usr/bin/env bash
# scripts/bench/fresh_results.lua (a bench: fresh results against out=, and the collector's allowance)
# runs and prints one well-formed line per size: every figure a positive number and the allowance one
# of the collector's rules (16 MiB warm, or 64 MiB and more). No timing is judged here.
set -u
MF=${1:?usage: test_fresh_results.sh path/to/moonflow}
fail=0
no() { echo "FAIL: $*"; fail=1; }
out=$(MF_NUM_THREADS=1 "$MF" scripts/bench/fresh_results.lua --sizes 1024,16384 --batches 1 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || no "fresh_results.lua exited $rc"
n=$(echo "$out" | grep -Ec '^\{"bytes":(4096|65536),"neg_fresh_us":[0-9.e+-]+,"neg_out_us":[0-9.e+-]+,"add_fresh_us":[0-9.e+-]+,"add_out_us":[0-9.e+-]+,"gc_allowance_mib":(16|6[4-9]|[7-9][0-9]|[1-9][0-9][0-9]+)\}$')
[ "$n" = 2 ] || no "expected 2 result lines, found $n"
bad=$("$MF" scripts/bench/fresh_results.lua --sizes 1024 --bogus 1 2>&1)
[ $? -ne 0 ] && echo "$bad" | grep -q 'unknown argument' || no "an unknown argument is not refused: $bad"
[ $fail -eq 0 ] && echo "test_fresh_results: ok"
exit $fail
