#!/usr/bin/env bash
# scripts/gpu/kernels.lua, the GPU check of the CUDA compute kernels, in its --self-test mode (the CPU
# against itself): the script a GPU machine runs stays working where no GPU is lent.
set -u
out=$("$1" scripts/gpu/kernels.lua --self-test 2>&1)
rc=$?
echo "$out" | tail -3
if [ $rc -ne 0 ]; then echo "$out" | grep -v ' ok ' ; exit 1; fi
echo "$out" | grep -q 'checks, .* passed, 0 failed' || exit 1
