#!/usr/bin/env bash
# scripts/gpu/check.sh on a machine without moonflow's build dependencies (simulated: MF_GPU_DEPS
# names an empty dependency folder, so pkg-config sees only its missing .pc files) stops at its
# first step, naming what is missing, before configuring or compiling anything. Also a syntax check
# of the GPU scripts, which only a GPU machine runs in full.
set -u
for s in scripts/gpu/check.sh scripts/gpu/prepare_deps.sh; do
  bash -n "$s" || { echo "syntax error in $s"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/deps/usr"
out=$(MF_GPU_DEPS="$tmp/deps" scripts/gpu/check.sh "$tmp/build" 2>&1)
rc=$?
echo "$out" | tail -4
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
[ $rc -ne 0 ] || fail "check.sh exited 0 without its dependencies"
echo "$out" | grep -q 'missing build dependencies: .*luajit (libluajit-5.1-dev).*sleef (libsleef-dev)' ||
  fail "the deps step did not name LuaJIT and SLEEF"
echo "$out" | grep -Eq '^  deps +[0-9]+s +FAIL' || fail "the summary does not show the deps step failing"
echo "$out" | grep -q '== build' && fail "check.sh went on to the build"
[ ! -e "$tmp/build/CMakeCache.txt" ] || fail "check.sh configured a build"
echo "ok: check.sh stops at its deps step"
