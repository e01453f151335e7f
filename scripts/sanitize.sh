#!/usr/bin/env bash
# Builds libmoonflow and the embedding tests (tests/cpp/test_embed*.cc) with sanitizers and runs them:
#   tsan  ThreadSanitizer in build-tsan/, the 4-thread tests included
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer, with LeakSanitizer at exit, in build-asan/
# Usage: scripts/sanitize.sh [tsan|asan|all] (default all). Any report fails the run.
# OpenMP's runtime is not TSAN-instrumented, so the TSAN run keeps every computation on one thread
# (MF_NUM_THREADS=1; the tests' tensors are too small to open a parallel region anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=${MF_JOBS:-$(nproc)}

build() {  # dir, sanitizer flags
  local flags="-O1 -g -fno-omit-frame-pointer $2"
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2" >/dev/null
  cmake --build "$1" --target mf_embed_tests -j"$jobs" >/dev/null
}

if [ "$what" = tsan ] || [ "$what" = all ]; then
  start=$SECONDS
  build build-tsan "-fsanitize=thread"
  echo "sanitize: tsan build $((SECONDS - start)) s"
  start=$SECONDS
  MF_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/mf_embed_tests
  echo "sanitize: tsan tests $((SECONDS - start)) s"
fi
if [ "$what" = asan ] || [ "$what" = all ]; then
  start=$SECONDS
  build build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  echo "sanitize: asan build $((SECONDS - start)) s"
  start=$SECONDS
  ASAN_OPTIONS="detect_leaks=1 halt_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" build-asan/tests/mf_embed_tests
  echo "sanitize: asan tests $((SECONDS - start)) s"
fi
