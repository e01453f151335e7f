#!/usr/bin/env bash
# Two moonflow builds compared op by op on contiguous inputs (eager_ops.lua), interleaved
# (old, new, old, new, ... REPS times in fresh processes) so a slow phase of the machine hits both;
# prints per (op, size) the median µs of each and new/old. Run it on an otherwise idle machine.
# usage: scripts/bench/compare_builds.sh OLD_MOONFLOW NEW_MOONFLOW   (env: REPS, default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=${1:?usage: compare_builds.sh OLD_MOONFLOW NEW_MOONFLOW} NEW=${2:?usage: compare_builds.sh OLD_MOONFLOW NEW_MOONFLOW}
REPS=${REPS:-3}
export MF_NUM_THREADS=${MF_NUM_THREADS:-2}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for ((r = 1; r <= REPS; r++)); do
  "$OLD" scripts/bench/eager_ops.lua | sed 's/^/old /' >> "$TMP/all"
  "$NEW" scripts/bench/eager_ops.lua | sed 's/^/new /' >> "$TMP/all"
done
/usr/bin/python3 - "$TMP/all" <<'PY'
import json, sys, statistics
runs = {}
for line in open(sys.argv[1]):
    which, js = line.split(' ', 1)
    d = json.loads(js)
    runs.setdefault((d['op'], d['size']), {'old': [], 'new': []})[which].append(d['us'])
print(f"{'op':18} {'size':5} {'old us':>10} {'new us':>10} {'new/old':>8}")
ratios = []
for (op, size), v in runs.items():
    o, n = statistics.median(v['old']), statistics.median(v['new'])
    ratios.append(n / o)
    print(f"{op:18} {size:5} {o:10.3f} {n:10.3f} {n / o:8.2f}")
g = statistics.geometric_mean(ratios)
print(f"geometric mean new/old over {len(ratios)} figures: {g:.3f}")
PY
