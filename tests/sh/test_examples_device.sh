#!/usr/bin/env bash
# The examples' --device option where no GPU is seen: `--device cuda` stops at once with exit 1 and a
# message naming the example and mf.cuda.reason() (no crash, no traceback, no data read); an unknown
# device is refused by name. Skipped (exit 77) on a machine with a GPU, where scripts/gpu/check.sh
# runs the examples on it. Also scripts/gpu/examples.sh, check.sh's comparison of the CPU and GPU
# runs: the CPU against itself on mlp_eager, and its criterion on made-up result lines.
set -u
MF=${1:?usage: test_examples_device.sh path/to/moonflow}
MF=$(cd "$(dirname "$MF")" && pwd)/$(basename "$MF")
if "$MF" -e "os.exit(mf.cuda.is_available() and 0 or 1)"; then
  echo "skipped: a GPU is available (scripts/gpu/check.sh runs the examples on it)"
  exit 77
fi
reason=$("$MF" -e "io.write(mf.cuda.reason())")
[ -n "$reason" ] || { echo "FAIL: mf.cuda.reason() is empty without a GPU"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }

for ex in mlp_fashion lenet_fashion mlp_eager; do
  # a nonexistent data dir: had the example read data before checking the device, the message differs
  out=$(MF_FASHION_MNIST_DIR=/nonexistent "$MF" "examples/$ex.lua" --device cuda --smoke 2>&1)
  rc=$?
  [ $rc -eq 1 ] || no "$ex --device cuda exited $rc, expected 1: $out"
  [ "$out" = "$ex: --device cuda: $reason" ] || no "$ex --device cuda said '$out'; expected '$ex: --device cuda: $reason'"
  out=$("$MF" "examples/$ex.lua" --device tpu 2>&1)
  rc=$?
  [ $rc -eq 1 ] && [ "$out" = "$ex: --device is 'tpu'; expected cpu or cuda" ] || no "$ex --device tpu: exit $rc, '$out'"
done

# examples.sh, the CPU against itself: the same figures, a table row, exit 0
out=$(scripts/gpu/examples.sh "$MF" cpu mlp_eager 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || no "examples.sh cpu mlp_eager exited $rc"
echo "$out" | grep -Eq '^mlp_eager +0\.[0-9]{4}, [0-9.]+ +0\.[0-9]{4}, [0-9.]+ +ok \(accuracy \+0\.0000, loss \+0\.00%\)' ||
  no "examples.sh cpu mlp_eager: no passing row with equal figures"

# its criterion, on a stand-in moonflow printing chosen result lines: FAKE_<device> is "steps acc loss"
cat >"$tmp/fake" <<'EOF'
#!/usr/bin/env bash
dev=$3
v=FAKE_$dev
[ -n "${!v:-}" ] || { echo "fake: no run on $dev" >&2; exit 1; }
read -r steps acc loss <<<"${!v}"
echo "result: device $dev, $steps steps, accuracy $acc, loss $loss"
EOF
chmod +x "$tmp/fake"
verdict() { FAKE_cpu="$1" FAKE_gpu="$2" scripts/gpu/examples.sh "$tmp/fake" gpu mlp_eager 2>/dev/null | grep '^mlp_eager'; }
expect() {  # expect CPU GPU RC PATTERN
  local v rc
  v=$(verdict "$1" "$2")
  FAKE_cpu="$1" FAKE_gpu="$2" scripts/gpu/examples.sh "$tmp/fake" gpu mlp_eager >/dev/null 2>&1
  rc=$?
  [ $rc -eq "$3" ] && echo "$v" | grep -q "$4" || no "examples.sh with cpu '$1', gpu '$2': exit $rc, '$v'; expected $3, $4"
}
expect "30 0.5600 1.1347" "30 0.6000 1.2400" 0 'ok (accuracy +0.0400, loss +9.28%)'
expect "30 0.5600 1.1347" "30 0.5000 1.1347" 1 'FAIL (accuracy differs by 0.0600 > 0.05)'
expect "30 0.5600 1.1347" "30 0.5600 1.0000" 1 'FAIL (loss differs by 11.87% > 10%)'
expect "30 0.5600 1.1347" "29 0.5600 1.1347" 1 'FAIL (steps 30 vs 29)'
expect "30 0.5600 1.1347" "" 1 'FAIL (a run failed or printed no result line)'

[ $fail -eq 0 ] && echo "test_examples_device: ok"
exit $fail
