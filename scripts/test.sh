#!/usr/bin/env bash
# Builds moonflow and runs every test: through CTest the Catch2 C++ tests, Lua tests, shell tests
# (REPL, CLI, docs, the embedding example) and the examples in --smoke mode; then the embedding
# tests under ThreadSanitizer and AddressSanitizer/LeakSanitizer (scripts/sanitize.sh, about
# 6 minutes on 2 cores; MF_QUICK=1 skips them for a fast local loop).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${MF_QUICK:-0}" != 1 ]; then bash scripts/sanitize.sh; fi
