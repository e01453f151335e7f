#!/usr/bin/env bash
# Every GPU check of the CUDA backend (issue 16) in one command, on a machine with an NVIDIA GPU:
#   scripts/gpu/check.sh [build-dir]        (default build-gpu; MF_GPU_JOBS sets the build's -j)
# 1. builds with MF_CUDA=ON (the backend must compile: -Werror for its sources);
# 2. the GPU must be seen (mf.cuda.is_available);
# 3. tests/lua/test_cuda.lua (device tensors, factories, views, mixed devices, memory) and the
#    allocator's bookkeeping test;
# 4. the op harness with every case on cuda against the CPU's float64 references
#    (float32 1e-5, float64 1e-12 relative; eager and inside a graph);
# 5. scripts/gpu/kernels.lua: every kernel table entry, CPU vs GPU on the same operands;
# 6. scripts/gpu/train_step.lua: graph and eager MLP training on cuda against the CPU, device memory
#    flat over 1,000 steps, host waits per training step.
# Prints one summary table; exits non-zero when any check failed (or when there is no GPU).
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
JOBS=${MF_GPU_JOBS:-$(nproc)}
declare -a NAMES=() RESULTS=() TIMES=()
FAILED=0

step() {  # step NAME command...: runs it, logs to $BUILD/gpu-check/NAME.log, records the result
  local name=$1
  shift
  local log="$BUILD/gpu-check/$name.log" t0=$SECONDS rc
  mkdir -p "$BUILD/gpu-check"
  echo "== $name: $*"
  "$@" >"$log" 2>&1
  rc=$?
  tail -n 5 "$log" | sed 's/^/   /'
  NAMES+=("$name")
  TIMES+=("$((SECONDS - t0))s")
  if [ $rc -eq 0 ]; then RESULTS+=("pass"); else RESULTS+=("FAIL (exit $rc, $log)"); FAILED=1; fi
  return $rc
}

summary() {
  echo
  local gpu
  gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
  echo "GPU check summary ($(date -u '+%Y-%m-%d %H:%M UTC'); ${gpu:-nvidia-smi found no GPU})"
  for i in "${!NAMES[@]}"; do printf '  %-14s %-6s %s\n' "${NAMES[$i]}" "${TIMES[$i]}" "${RESULTS[$i]}"; done
  exit $FAILED
}

configure() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMF_CUDA=ON "${MF_GPU_CMAKE_ARGS[@]}" &&
    cmake --build "$BUILD" -j "$JOBS"
}
read -r -a MF_GPU_CMAKE_ARGS <<<"${MF_GPU_CMAKE_ARGS:-}"
step build configure || summary
MF="$BUILD/moonflow"
step gpu "$MF" -e "assert(mf.cuda.is_available(), 'no GPU: ' .. mf.cuda.reason()); print(mf.cuda.device_count() .. ' GPU(s)')" ||
  summary
step test_cuda "$MF" tests/lua/test_cuda.lua
step allocator "$BUILD/tests/mf_tests" '[cuda_allocator]'
step codegen "$BUILD/tests/mf_tests" '[cuda]'  # fused kernels from strings: every fusable op through NVRTC
step harness "$MF" tests/ops/harness.lua --device cuda
step kernels "$MF" scripts/gpu/kernels.lua
step train_step "$MF" scripts/gpu/train_step.lua --steps 1000
summary
