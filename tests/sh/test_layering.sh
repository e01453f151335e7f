#!/usr/bin/env bash
# Includes run downwards only (scripts/check_layers.py states the rule): the checker passes its own
# self-test on a small fake tree (a clean tree passes, each kind of upward include fails), then
# finds no upward include in src/. Takes the moonflow path for symmetry with the other shell tests.
set -u
fail=0
python3 scripts/check_layers.py --self-test || fail=1
python3 scripts/check_layers.py src || fail=1
exit $fail
