#!/usr/bin/env bash
# The examples on the GPU against the CPU (issue 16, check.sh's step "examples"):
#   scripts/gpu/examples.sh path/to/moonflow [device [example ...]]
# runs each example (default: mlp_fashion lenet_fashion mlp_eager) with --smoke on the CPU and with
# --device DEVICE --smoke (default cuda), reads the 'result: device D, N steps, accuracy A, loss L'
# line each prints last, and prints one table row per example.
# Criterion: both runs exit 0 (each example's own check: its validation loss falls well below the
# untrained one), the same number of steps, and the device's accuracy within ACC_TOL (0.05 absolute:
# 25 of mlp's 500 validation images, 10 of lenet's 200) and its loss within LOSS_TOL (10% relative)
# of the CPU's. The same seed, initial values and batches reach both devices; what differs is float32
# rounding (other summation orders in cuBLAS/cuDNN and the reductions), which training amplifies:
# on the CPU, initial weights scaled by 1 + 1e-6 * randn (seven draws) moved lenet's smoke result
# from accuracy 0.560, loss 1.120 to 0.540-0.580 and 1.063-1.149 (-5% to +3%); mlp's moved by at
# most 0.002 and 0.2%. The tolerances are about twice that spread; the op harness and kernels.lua
# check the kernels themselves to 1e-5.
# 'scripts/gpu/examples.sh MF cpu' compares the CPU with itself: the script's own check on any
# machine (CTest runs it with one example, tests/sh/test_examples_device.sh).
# Exits 0 when every example passes, 1 otherwise.
set -u
MF=${1:?usage: examples.sh path/to/moonflow [device [example ...]]}
DEVICE=${2:-cuda}
shift $(($# < 2 ? $# : 2))
EXAMPLES=("$@")
[ ${#EXAMPLES[@]} -gt 0 ] || EXAMPLES=(mlp_fashion lenet_fashion mlp_eager)
ACC_TOL=0.05
LOSS_TOL=0.10
case $MF in /*) ;; */*) MF=$(cd "$(dirname "$MF")" && pwd)/$(basename "$MF") ;; esac
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME DEVICE: the example's result line (empty when it failed; its output is kept in $tmp)
run() {
  local log="$tmp/$1.$2.log"
  if "$MF" "examples/$1.lua" --device "$2" --smoke >"$log" 2>&1; then
    grep '^result: ' "$log" | tail -n 1
  else
    echo "   $1 --device $2 failed (exit $?):" >&2
    tail -n 8 "$log" | sed 's/^/     /' >&2
  fi
}

failed=0
printf '%-14s %-26s %-26s %s\n' example "cpu (acc, loss)" "$DEVICE (acc, loss)" verdict
for ex in "${EXAMPLES[@]}"; do
  a=$(run "$ex" cpu)
  b=$(run "$ex" "$DEVICE")
  verdict=$(awk -v a="$a" -v b="$b" -v at="$ACC_TOL" -v lt="$LOSS_TOL" 'BEGIN {
    # "result: device cpu, 30 steps, accuracy 0.5600, loss 1.1347"
    if (split(a, x, /[ ,]+/) < 9 || split(b, y, /[ ,]+/) < 9) { print "FAIL (a run failed or printed no result line)"; exit }
    da = y[7] - x[7]; if (da < 0) da = -da
    dl = (y[9] - x[9]) / x[9]; if (dl < 0) dl = -dl
    if (x[4] != y[4]) print "FAIL (steps " x[4] " vs " y[4] ")"
    else if (da > at) printf "FAIL (accuracy differs by %.4f > %.2f)\n", da, at
    else if (dl > lt) printf "FAIL (loss differs by %.2f%% > %.0f%%)\n", 100 * dl, 100 * lt
    else printf "ok (accuracy %+.4f, loss %+.2f%%)\n", y[7] - x[7], 100 * (y[9] - x[9]) / x[9]
  }')
  printf '%-14s %-26s %-26s %s\n' "$ex" "$(echo "$a" | awk -F'[ ,]+' '{print $7", "$9}')" \
    "$(echo "$b" | awk -F'[ ,]+' '{print $7", "$9}')" "$verdict"
  case $verdict in ok*) ;; *) failed=1 ;; esac
done
echo "examples.sh: cpu vs $DEVICE, ${#EXAMPLES[@]} example(s), $([ $failed -eq 0 ] && echo 'all passed' || echo 'FAILED')"
exit $failed
