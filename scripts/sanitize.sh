#!/usr/bin/env bash
# The sanitizer stage of the test command (scripts/test.sh runs it); any report fails the run.
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover: every report is fatal)
#         with LeakSanitizer at exit, one build in build-asan/, running the WHOLE CTest suite: the
#         Catch2 tests (the op harness "ops: every case" and the allocator's poisoning tests
#         included), the Lua tests, the shell tests (CLI, REPL, docs, the embedding example) and the
#         examples in --smoke mode. The caching allocator poisons every byte it holds but has not
#         handed out, so overflows past a tensor and reads of freed tensors are reported.
#   tsan  ThreadSanitizer in build-tsan/: the embedding tests (tests/cpp/test_embed*.cc), whose
#         threaded cases run 4 std::threads (an engine each, or one shared in locking mode) while
#         OpenMP runs teams of MF_NUM_THREADS=4 inside their kernels (test_embed_parallel.cc opens
#         such regions from 3 threads at once). libgomp is not built with TSan, so its fork and join
#         are invisible to it: a TSan build wraps GOMP_parallel to declare exactly those two edges
#         (src/core/threads.cc); races between a team's threads, or between std::threads, are still
#         reported. No suppressions.
# Usage: scripts/sanitize.sh [asan|tsan|all] (default all). MF_JOBS sets the parallelism (default nproc).
# Prints the wall time of each build and run, and of the whole stage.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=${MF_JOBS:-$(nproc)}
stage_start=$SECONDS

build() {  # dir, sanitizer flags, targets...
  local dir=$1 san=$2
  shift 2
  local flags="-O1 -g -fno-omit-frame-pointer $san"
  # MF_CUDA=OFF: nvcc-compiled code is not instrumented, and the CUDA runtime wants ASan's shadow
  # gap unprotected; the Release build compiles the backend, and its host-side logic is in core
  cmake -S . -B "$dir" -DMF_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" >/dev/null
  cmake --build "$dir" -j"$jobs" "$@" >/dev/null
}

if [ "$what" = asan ] || [ "$what" = all ]; then
  start=$SECONDS
  build build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  echo "sanitize: asan build $((SECONDS - start)) s"
  start=$SECONDS
  # allocator_may_return_null: tests check that an absurd request becomes an mf::Error, which needs
  # the system allocator to return null as glibc does, not ASan's default abort.
  # Nothing is excluded: every test of build-asan runs. (lua.test_memory gets a small quarantine,
  # tests/CMakeLists.txt says why.)
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900
  echo "sanitize: asan tests $((SECONDS - start)) s"
fi
if [ "$what" = tsan ] || [ "$what" = all ]; then
  start=$SECONDS
  build build-tsan "-fsanitize=thread" --target mf_embed_tests
  echo "sanitize: tsan build $((SECONDS - start)) s"
  start=$SECONDS
  MF_NUM_THREADS=4 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/mf_embed_tests
  echo "sanitize: tsan tests $((SECONDS - start)) s"
fi
echo "sanitize: stage $((SECONDS - stage_start)) s wall"
