#!/usr/bin/env bash
# The REPL in a real terminal (Ctrl-C, completion, history, exit): tests/sh/repl_pty.py does the
# driving with Python 3's standard pty module; scripts/setup.sh installs python3.
set -u
MF=${1:?usage: test_repl_pty.sh path/to/moonflow}
PY=$(command -v python3 || true)
if [ -z "$PY" ]; then echo 'FAIL: python3 is needed to drive the REPL through a pty (scripts/setup.sh installs it)'; exit 1; fi
exec "$PY" "$(dirname "$0")/repl_pty.py" "$MF"
