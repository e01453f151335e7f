#!/usr/bin/env bash
# Install and embedding: installs the build into a temporary prefix, moves the prefix (the CMake
# package and moonflow.pc are relocatable), then builds examples/embed against it twice, with
# find_package(moonflow) and with pkg-config (public headers warning-free under -Wall -Wextra
# -Wpedantic -Werror), and runs both hosts, and the CMake-built one installed, with an empty
# environment: no LD_LIBRARY_PATH, nothing is looked up at run time.
set -u
MF=${1:?usage: test_embed.sh path/to/moonflow}
build=$(cd "$(dirname "$MF")" && pwd)
src=$(pwd)
tmp=$(mktemp -d "$build/embed-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
# A sanitizer build of the library (scripts/sanitize.sh) needs its runtime loaded first: the hosts
# are built with the same -fsanitize flags then.
san=
if readelf -d "$build/libmoonflow.so" 2>/dev/null | grep -q 'libasan'; then san="-fsanitize=address,undefined"
elif readelf -d "$build/libmoonflow.so" 2>/dev/null | grep -q 'libtsan'; then san="-fsanitize=thread"; fi
check_run() {  # what, host executable
  local out
  if ! out=$(cd "$tmp" && env -i PATH=/usr/bin:/bin "$2" "$src/examples/embed/model.lua" 2>&1); then
    echo "FAIL: $1: the host failed:"; echo "$out" | head -20; fail=1; return
  fi
  if [ "$(grep -c '^image [1-4]: class' <<<"$out")" != 4 ] || ! grep -q '^\[model\] 535818 parameters' <<<"$out"; then
    echo "FAIL: $1: unexpected output:"; echo "$out"; fail=1
  fi
}

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { echo 'FAIL: cmake --install'; cat "$tmp/install.log"; exit 1; }
mv "$tmp/prefix" "$tmp/moved"
p=$tmp/moved
pc=$(find "$p" -name moonflow.pc)
for f in include/moonflow/moonflow.hpp include/moonflow/engine.hpp include/moonflow/tensor.hpp \
         include/moonflow/error.hpp share/moonflow/lua/moonflow/init.lua bin/moonflow; do
  [ -e "$p/$f" ] || { echo "FAIL: $f is not installed"; fail=1; }
done
[ -n "$pc" ] && [ -n "$(find "$p" -name moonflowConfig.cmake)" ] && [ -n "$(find "$p" -name 'libmoonflow.so')" ] ||
  { echo 'FAIL: library, CMake package or moonflow.pc missing'; find "$p"; exit 1; }
out=$(env -i PATH=/usr/bin:/bin "$p/bin/moonflow" -e 'print(mf.ones(3):sum():item())' 2>&1)
[ "$out" = 3 ] || { echo "FAIL: installed moonflow executable: $out"; fail=1; }

# CMake: find_package(moonflow CONFIG) -> moonflow::moonflow
if cmake -S "$src/examples/embed" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_CXX_FLAGS="$san" \
     -DCMAKE_EXE_LINKER_FLAGS="$san" >"$tmp/cmake.log" 2>&1 &&
   cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
  check_run 'CMake build' "$tmp/cmake/embed_host"
  if cmake --install "$tmp/cmake" --prefix "$tmp/host" >>"$tmp/cmake.log" 2>&1; then
    check_run 'installed host' "$tmp/host/bin/embed_host"
  else
    echo 'FAIL: installing examples/embed:'; tail -30 "$tmp/cmake.log"; fail=1
  fi
else
  echo 'FAIL: building examples/embed with CMake:'; tail -30 "$tmp/cmake.log"; fail=1
fi

# pkg-config
export PKG_CONFIG_PATH=$(dirname "$pc")
if flags=$(pkg-config --cflags moonflow) && libs=$(pkg-config --libs moonflow) &&
   ${CXX:-c++} -std=c++17 -Wall -Wextra -Wpedantic -Werror $san $flags "$src/examples/embed/main.cc" -o "$tmp/embed_pc" $libs \
     >"$tmp/pc.log" 2>&1; then
  check_run 'pkg-config build' "$tmp/embed_pc"
else
  echo 'FAIL: building examples/embed with pkg-config:'; tail -30 "$tmp/pc.log"; fail=1
fi
exit $fail
