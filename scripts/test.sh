#!/usr/bin/env bash
# Builds moonflow and runs every test: through CTest the Catch2 C++ tests (the op harness
# included), Lua tests, shell tests (REPL, CLI, docs, the embedding example) and the examples in
# --smoke mode; then the sanitizer stage (scripts/sanitize.sh): that whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, and the embedding tests under
# ThreadSanitizer with OpenMP teams of 4. It prints the stage's wall time (8.3 minutes from clean
# on 2 cores, its two builds included). MF_QUICK=1 skips the sanitizer stage for a fast local loop.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
echo "test: build and tests $((SECONDS - start)) s"
if [ "${MF_QUICK:-0}" != 1 ]; then bash scripts/sanitize.sh; fi
echo "test: total $((SECONDS - start)) s wall"
