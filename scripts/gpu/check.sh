#!/usr/bin/env bash
# Every GPU check of the CUDA backend (issue 16) in one command, on a machine with an NVIDIA GPU:
#   scripts/gpu/check.sh [build-dir]        (default build-gpu; MF_GPU_JOBS sets the build's -j)
# 1. builds with MF_CUDA=ON (the backend must compile: -Werror for its sources);
# 2. the GPU must be seen (mf.cuda.is_available);
# 3. tests/lua/test_cuda.lua (device tensors, factories, views, out=, mixed devices, memory) and the
#    allocator's bookkeeping test;
# 4. the op harness with every case on cuda against the CPU's float64 references
#    (float32 1e-5, float64 1e-12 relative; eager and inside a graph; MF_GPU_HARNESS_SHARDS
#    processes side by side, 4 by default), and the gradient checks
#    (tests/lua/test_gradients.lua --device cuda: graphs and the tape against finite differences);
# 5. scripts/gpu/kernels.lua: every kernel table entry, CPU vs GPU on the same operands;
# 6. scripts/gpu/train_step.lua: graph and eager MLP training on cuda against the CPU, device memory
#    flat over 1,000 steps, host waits per training step;
# 7. scripts/gpu/examples.sh: mlp_fashion, lenet_fashion and mlp_eager with --device cuda --smoke
#    against their CPU smoke runs (accuracy within 0.05, loss within 10%: see the script);
# 8. scripts/gpu/bench.lua --quick: training steps, sgemm and the fused update against PyTorch on
#    the same GPU, one table; it fails on an error or a missed target (a step above 0.8x PyTorch's
#    eager step, the fused update below 85% of device copy bandwidth).
# The summary ends with the tables of steps 7 and 8 in full.
# Prints one summary table; exits non-zero when any check failed (or when there is no GPU).
# Steps 3 to 7 run side by side (one GPU, 16 cores on the device tool's machine), each under
# MF_GPU_STEP_LIMIT seconds (400); the benchmark runs alone after them.
# MF_GPU_BUILD_ONLY=1: the dependency check and the build only (a first, separate device call).
# MF_GPU_CMAKE_ARGS: more CMake arguments (-DCMAKE_CUDA_ARCHITECTURES=90 builds for the H100/H200 only).
#
# Dependencies, checked first (step "deps", before any compiling): nvcc, cmake, g++, pkg-config and
# moonflow's libraries with headers: LuaJIT (pkg-config luajit), SLEEF (pkg-config sleef), the
# OpenMP OpenBLAS (openblas-openmp/{libopenblas.so,cblas.h}), libedit (editline/readline.h) and
# Catch2 2 (catch2/catch.hpp). The device tool's GPU machine has nvcc, CMake and PyTorch but none of
# these Debian packages and no network: scripts/gpu/prepare_deps.sh unpacks them on a development
# machine into .gpu-deps/ (ignored), sent with carry = [".gpu-deps"]; this script then points
# pkg-config, CMake and the loader at it (MF_GPU_DEPS names another folder). Without it the step
# names every missing piece and stops.
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
JOBS=${MF_GPU_JOBS:-$(nproc)}
STEP_LIMIT=${MF_GPU_STEP_LIMIT:-400}  # seconds for any one step
HARNESS_SHARDS=${MF_GPU_HARNESS_SHARDS:-4}
declare -a NAMES=() RESULTS=() TIMES=()
FAILED=0
rm -f "$BUILD/gpu-check/examples.log" "$BUILD/gpu-check/bench.log"  # summary() shows this run's tables only

step() {  # step NAME command...: runs it, logs to $BUILD/gpu-check/NAME.log, records the result
  start "$@"
  finish
}

# start NAME command...: runs it in the background (under `timeout $STEP_LIMIT`), logging to
# $BUILD/gpu-check/NAME.log; finish waits for every started step and records the results in order.
# The checks after the build share the one GPU side by side; the benchmark runs alone.
declare -a PIDS=() PNAMES=() PSTART=()
start() {
  local name=$1
  shift
  mkdir -p "$BUILD/gpu-check"
  echo "== $name: $*"
  if [ "$(type -t "$1")" = function ]; then  # deps, configure: this shell's functions, no limit
    "$@" >"$BUILD/gpu-check/$name.log" 2>&1 &
  else
    timeout "$STEP_LIMIT" "$@" >"$BUILD/gpu-check/$name.log" 2>&1 &
  fi
  PIDS+=($!)
  PNAMES+=("$name")
  PSTART+=("$SECONDS")
}
finish() {
  local i rc name log all=0
  for i in "${!PIDS[@]}"; do
    wait "${PIDS[$i]}"
    rc=$?
    name=${PNAMES[$i]}
    log="$BUILD/gpu-check/$name.log"
    echo "-- $name (exit $rc):"
    tail -n 5 "$log" | sed 's/^/   /'
    NAMES+=("$name")
    TIMES+=("$((SECONDS - PSTART[$i]))s")
    if [ $rc -eq 0 ]; then RESULTS+=("pass")
    elif [ $rc -eq 124 ]; then RESULTS+=("FAIL (over ${STEP_LIMIT}s, $log)"); FAILED=1; all=1
    else RESULTS+=("FAIL (exit $rc, $log)"); FAILED=1; all=1; fi
  done
  PIDS=() PNAMES=() PSTART=()
  return $all
}

summary() {
  echo
  local gpu
  gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
  echo "GPU check summary ($(date -u '+%Y-%m-%d %H:%M UTC'); ${gpu:-nvidia-smi found no GPU})"
  for i in "${!NAMES[@]}"; do printf '  %-14s %-6s %s\n' "${NAMES[$i]}" "${TIMES[$i]}" "${RESULTS[$i]}"; done
  # the tables of the examples (CPU against GPU) and of the benchmark against PyTorch, in full
  if [ -e "$BUILD/gpu-check/examples.log" ]; then
    echo; grep -E '^(example |mlp_|lenet_)' "$BUILD/gpu-check/examples.log"
  fi
  if [ -e "$BUILD/gpu-check/bench.log" ]; then
    echo; grep -E '^(GPU bench|\||bench.lua: [0-9])' "$BUILD/gpu-check/bench.log"
  fi
  exit $FAILED
}

configure() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMF_CUDA=ON "${MF_GPU_CMAKE_ARGS[@]}" &&
    cmake --build "$BUILD" -j "$JOBS"
}
read -r -a MF_GPU_CMAKE_ARGS <<<"${MF_GPU_CMAKE_ARGS:-}"

# .gpu-deps/ (Debian packages unpacked with dpkg -x, paths under usr/): pkg-config reads only its .pc
# files, rebased by the sysroot; CMake and the loader search it first.
DEPS=${MF_GPU_DEPS:-.gpu-deps}
if [ -d "$DEPS/usr" ]; then
  DEPS=$(cd "$DEPS" && pwd)
  ML=$DEPS/usr/lib/x86_64-linux-gnu
  export PATH="$DEPS/usr/bin:$PATH"
  export PKG_CONFIG_LIBDIR="$ML/pkgconfig:$DEPS/usr/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$DEPS"
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1  # -I$DEPS/usr/include too (sleef.h)
  # the PyTorch twin of bench.lua runs with the machine's own library path, not these libraries
  export MF_TWIN_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH="$ML/openblas-openmp:$ML:${LD_LIBRARY_PATH:-}"
  MF_GPU_CMAKE_ARGS+=("-DCMAKE_PREFIX_PATH=$DEPS/usr" "-DMF_OPENBLAS_DIR=$ML/openblas-openmp"
                      "-DMF_OPENBLAS_INCLUDE=$DEPS/usr/include/x86_64-linux-gnu/openblas-openmp"
                      "-DCMAKE_CXX_FLAGS=-idirafter $DEPS/usr/include -idirafter $DEPS/usr/include/x86_64-linux-gnu")
  # the Fashion-MNIST subset prepare_deps.sh writes there, unless the machine has the dataset
  if [ -z "${MF_FASHION_MNIST_DIR:-}" ] && [ ! -e /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] &&
    [ -d "$DEPS/fashion-mnist" ]; then
    export MF_FASHION_MNIST_DIR="$DEPS/fashion-mnist"
  fi
fi
# the PyTorch twin of bench.lua: PYTHON, else the first python3 that imports torch (with the library
# path the twin gets)
if [ -z "${PYTHON:-}" ]; then
  for py in "$(command -v python3)" /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python3; do
    if [ -x "$py" ] && LD_LIBRARY_PATH=${MF_TWIN_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}} "$py" -c 'import torch' 2>/dev/null; then
      export PYTHON=$py
      break
    fi
  done
fi

# cuDNN: CMake looks beside the CUDA toolkit; a machine whose cuDNN came with PyTorch's wheels
# (nvidia/cudnn/{include,lib}, libcudnn.so.9 without the unversioned name) is pointed at it here.
find_cudnn() {
  local d py
  for d in "${CUDA_HOME:-/usr/local/cuda}" /usr /usr/local; do
    [ -e "$d/include/cudnn.h" ] && return 0
  done
  [ -e /usr/include/x86_64-linux-gnu/cudnn.h ] && return 0
  py=${PYTHON:-python3}
  d=$("$py" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null) || return 0
  if [ -e "$d/include/cudnn.h" ]; then
    local lib
    lib=$(ls "$d"/lib/libcudnn.so* 2>/dev/null | head -n 1)
    MF_GPU_CMAKE_ARGS+=("-DMF_CUDNN_INCLUDE=$d/include" "-DMF_CUDNN=$lib")
    export LD_LIBRARY_PATH="$d/lib:${LD_LIBRARY_PATH:-}"
    echo "cuDNN from $d"
  fi
}
find_cudnn

deps() {  # every build dependency, each missing one named, before minutes of compiling
  local missing=() c inc
  for c in nvcc cmake g++ pkg-config; do command -v "$c" >/dev/null || missing+=("command $c"); done
  if command -v pkg-config >/dev/null; then
    pkg-config --exists luajit || missing+=("pkg-config luajit (libluajit-5.1-dev)")
    pkg-config --exists sleef || missing+=("pkg-config sleef (libsleef-dev)")
  fi
  inc=("${DEPS:-/nonexistent}/usr/include" /usr/include /usr/local/include)
  [ -e "${ML:-/usr/lib/x86_64-linux-gnu}/openblas-openmp/libopenblas.so" ] ||
    [ -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so ] || missing+=("libopenblas-openmp-dev")
  for c in x86_64-linux-gnu/openblas-openmp/cblas.h editline/readline.h catch2/catch.hpp; do
    [ -e "${inc[0]}/$c" ] || [ -e "${inc[1]}/$c" ] || [ -e "${inc[2]}/$c" ] || missing+=("header $c")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "missing build dependencies: ${missing[*]}"
    echo "make .gpu-deps/ with scripts/gpu/prepare_deps.sh on a development machine and send it with"
    echo "carry = [\".gpu-deps\"] (see the top of $0)"
    return 1
  fi
  echo "build dependencies found${ML:+ (from $DEPS)}"
}
step deps deps || summary
step build configure || summary
# A fresh machine's build (no ccache there) and the checks may not fit one 600 s device call: a first
# call with MF_GPU_BUILD_ONLY=1 builds and stops; the second finds the build up to date.
[ "${MF_GPU_BUILD_ONLY:-0}" = 1 ] && summary
MF="$BUILD/moonflow"
step gpu "$MF" -e "assert(mf.cuda.is_available(), 'no GPU: ' .. mf.cuda.reason()); print(mf.cuda.device_count() .. ' GPU(s)')" ||
  summary
start test_cuda "$MF" tests/lua/test_cuda.lua
start allocator "$BUILD/tests/mf_tests" '[cuda_allocator]'
start codegen "$BUILD/tests/mf_tests" '[cuda]'  # fused kernels from strings: every fusable op through NVRTC
for k in $(seq 1 "$HARNESS_SHARDS"); do
  start "harness-$k" "$MF" tests/ops/harness.lua --device cuda --shard "$k/$HARNESS_SHARDS"
done
start grad "$MF" tests/lua/test_gradients.lua --device cuda  # finite differences, graph and tape, on cuda
start kernels "$MF" scripts/gpu/kernels.lua
start train_step "$MF" scripts/gpu/train_step.lua --steps 1000
start examples scripts/gpu/examples.sh "$MF" cuda
finish
step bench "$MF" scripts/gpu/bench.lua --quick
summary
