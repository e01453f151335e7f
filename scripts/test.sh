#!/usr/bin/env bash
# Builds moonflow and runs every test through CTest: Catch2 C++ tests, Lua tests, shell tests
# (REPL and CLI), and the examples in --smoke mode.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j"$(nproc)"
