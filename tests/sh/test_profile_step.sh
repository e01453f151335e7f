#!/usr/bin/env bash
# scripts/gpu/profile_step.lua, the eager step's profile (a diagnosis tool for the GPU machine), run on
# the CPU: it times the step (one figure line) and writes the profiler's and the trace log's files,
# the profile with samples. No timing is judged here.
set -u
MF=${1:?usage: test_profile_step.sh path/to/moonflow}
fail=0
no() { echo "FAIL: $*"; fail=1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

out=$(MF_NUM_THREADS=1 "$MF" scripts/gpu/profile_step.lua cpu mlp 0.5 "$dir" F 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || no "profile_step.lua exited $rc"
echo "$out" | grep -Eq '^mlp eager step on cpu: [0-9]+ steps, wall [0-9.]+ ms, host CPU [0-9.]+ ms, host waits 0\.00 per step$' ||
  no "no step figures line"
grep -Eq '^ *[0-9]+%  [a-z_]+\.lua:' "$dir/prof-F.txt" 2>/dev/null || no "prof-F.txt has no function samples"
[ -s "$dir/jitv.txt" ] || no "jitv.txt missing or empty"
[ $fail -eq 0 ] && echo "test_profile_step: ok"
exit $fail
