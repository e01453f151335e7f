#!/usr/bin/env bash
# The moonflow-vs-PyTorch suite (issue 5), one command:  scripts/bench/run.sh [results.jsonl]
# Runs every workload REPS times (default 5), interleaved moonflow, PyTorch, moonflow, ... in
# separate processes, plus the machine's limits (raw OpenBLAS sgemm in bench_mf.lua's sgemm
# workload, a STREAM triad built here), writes JSON lines to the results file and prints a table
# of medians, spreads (max - min) and ratios (summarize.py). Env: REPS, STEPS, WARMUP, MOONFLOW,
# PYTHON, BLAS_CORETYPE, OPS_ROUNDS, GRAPH_SIZES. Takes about 2.5 minutes (REPS=5) on the 2-core development
# machine, plus about 12 for ops.lua (every op against PyTorch) and about 3 for graph_build.lua
# (moonflow alone: graph build and bind time against size).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5} STEPS=${STEPS:-30} WARMUP=${WARMUP:-5}
MOONFLOW=${MOONFLOW:-./build/moonflow} PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${1:-/tmp/moonflow-bench-$(date +%Y%m%d-%H%M%S).jsonl}
# Both sides on 2 threads; PyTorch on the OpenMP OpenBLAS (the pthread one fights OpenMP for cores).
export MF_NUM_THREADS=2 OMP_NUM_THREADS=2
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# OpenBLAS picks kernels for the CPU unless OPENBLAS_CORETYPE forces a family. The development
# machine's environment forces Haswell (AVX2), about 1.3x slower GEMMs on its AVX-512 Xeon, for
# moonflow and PyTorch's linear layers alike (PyTorch's convolutions use oneDNN, unaffected). Both
# sides run with OpenBLAS's own choice unless BLAS_CORETYPE names one (BLAS_CORETYPE=Haswell:
# the forced setting). The table's header names the kernels used.
if [ -n "${BLAS_CORETYPE:-}" ]; then export OPENBLAS_CORETYPE=$BLAS_CORETYPE; else unset OPENBLAS_CORETYPE; fi

if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "installing python3-torch (Debian)..." >&2
  apt-get install -y python3-torch python3-numpy >&2
fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
cc -O3 -march=native -fopenmp scripts/bench/stream_triad.c -o "$TMP/triad"
: > "$OUT"
echo "results: $OUT" >&2

# mean wall ms per run of a command, over $1 runs (h: start-up)
startup() {
  local n=$1; shift
  "$@" >/dev/null 2>&1  # page cache warm
  local t0=$(date +%s%N)
  for ((k = 0; k < n; k++)); do "$@" >/dev/null 2>&1; done
  echo $(( ($(date +%s%N) - t0) / n / 1000 ))  # µs
}

for ((r = 1; r <= REPS; r++)); do
  echo "repetition $r/$REPS" >&2
  for w in add exec sgemm update mlp cnn rss; do
    "$MOONFLOW" scripts/bench/bench_mf.lua --workload $w --steps $STEPS --warmup $WARMUP >> "$OUT"
    "$PYTHON" scripts/bench/bench_torch.py --workload $w --steps $STEPS --warmup $WARMUP >> "$OUT"
  done
  "$TMP/triad" >> "$OUT"
  us=$(startup 20 "$MOONFLOW" -e '')
  echo "{\"workload\":\"h_startup\",\"impl\":\"moonflow\",\"value\":$(awk "BEGIN{print $us/1000}"),\"unit\":\"ms\",\"runs\":20}" >> "$OUT"
  us=$(startup 5 "$PYTHON" -c 'import torch')
  echo "{\"workload\":\"h_startup\",\"impl\":\"pytorch\",\"value\":$(awk "BEGIN{print $us/1000}"),\"unit\":\"ms\",\"runs\":5}" >> "$OUT"
done

"$PYTHON" scripts/bench/summarize.py "$OUT"
echo "results: $OUT"

# Every registered op, eager, against PyTorch at 64 KB and 16 MB (ops.lua, which runs its PyTorch
# twin ops_torch.py as a co-process and interleaves the two per case): OPS_ROUNDS rounds (default
# 5, about 12 minutes); OPS_ROUNDS=0 skips it. Table and JSON beside the results file.
OPS_ROUNDS=${OPS_ROUNDS:-5}
if [ "$OPS_ROUNDS" != 0 ]; then
  echo "per-op bench, $OPS_ROUNDS rounds (2 to 3 minutes a round)..." >&2
  PYTHON=$PYTHON "$MOONFLOW" scripts/bench/ops.lua --rounds "$OPS_ROUNDS" --json "${OUT%.jsonl}.ops.json" \
    | tee "${OUT%.jsonl}.ops.txt"
fi

# Graph build and bind against graph size (moonflow only; graph_build.lua): best of 3 at 10k and 80k
# nodes, one build-only run at 1M. GRAPH_SIZES overrides the sizes; GRAPH_SIZES=none skips it.
GRAPH_SIZES=${GRAPH_SIZES:-10000,80000,1000000}
if [ "$GRAPH_SIZES" != none ]; then
  echo "graph build and bind, sizes $GRAPH_SIZES (about 3 minutes)..." >&2
  "$MOONFLOW" scripts/bench/graph_build.lua --sizes "$GRAPH_SIZES" | tee "${OUT%.jsonl}.graph_build.txt"
fi
