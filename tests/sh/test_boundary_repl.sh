#!/usr/bin/env bash
# The REPL after failures behind the C boundary: an injected internal error (mf_test_inject), an
# injected std::bad_alloc and a real allocation failure each print their message and the session
# goes on computing.
set -u
MF=${1:?usage: test_boundary_repl.sh path/to/moonflow}
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$MF" >"$out" 2>"$err" <<'LUA'
C = require 'moonflow.ffi_abi'; _ = mf.Graph  -- graph mode loads on first use (init.lua): before any fault
C.mf_test_inject(C.MF_INJECT_STD_EXCEPTION)
g = mf.Graph()
C.mf_test_inject(C.MF_INJECT_BAD_ALLOC)
g = mf.Graph()
z = mf.zeros(1e8, 1e7)
'alive', mf.ones(3):sum():item()
LUA
status=$?
fail=0
expect() {  # file, fixed string, what
  if ! grep -qF -- "$2" "$1"; then echo "FAIL: $3: '$2' not in $(basename "$1")"; fail=1; fi
}
expect "$err" 'stdin:3: internal error in mf_graph_new: injected std::logic_error' 'injected std::exception'
expect "$err" 'stdin:5: out of memory (in mf_graph_new; size not known)' 'injected bad_alloc'
expect "$err" 'stdin:6: zeros: cannot allocate tensor 100000000x10000000 of float32 (4000000000000000 bytes): out of memory' 'real OOM'
expect "$out" '"alive"	3' 'the session computes afterwards'

[ "$status" -eq 1 ] || { echo "FAIL: exit status $status, want 1 (errors were reported)"; fail=1; }
if [ $fail -ne 0 ]; then echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fi
exit $fail
