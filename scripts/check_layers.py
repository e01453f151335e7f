#!/usr/bin/env python3
"""The layering rule: includes under src/ run downwards only.

    include/moonflow  <-  core  <-  kernels/<device>, param  <-  op  <-  graph  <-  lua  <-  cli

include/moonflow, the installed public C++ headers, is self-contained (it includes nothing else
under src/), so every layer may include it: core implements mf::Error and mf::Tensor. Each layer
may include its own files and the layers the table below names. Every #include "..."
(and every #include <...> that names a file under src/) is resolved as the compiler would (the
including file's folder, then src/ and src/include/, the build's include paths); one that breaks
the rule, or that resolves to nothing, is reported as file:line with the rule it breaks, and the
exit status is 1. An allow-list entry no longer needed is an error too, so the list only shrinks.

usage: check_layers.py [SRC_DIR]   (default: src/ next to this script's folder)
       check_layers.py --self-test (checks the checker on a small fake tree)
"""
import os
import re
import sys
import tempfile

# layer -> the layers its files may include (besides its own). kernels/<device> is one layer per
# device: a device's kernels include core only, never another device's.
ALLOWED = {
    'include': set(),
    'core': {'include'},
    'kernels/*': {'include', 'core'},
    'param': {'include', 'core'},
    'op': {'include', 'core', 'param'},
    'graph': {'include', 'core', 'op', 'param'},
    'lua': {'include', 'core', 'kernels/*', 'param', 'op', 'graph'},
    'cli': {'include', 'core', 'kernels/*', 'param', 'op', 'graph', 'lua'},
}

# Known upward includes awaiting a design change, each with its owner. Entries are
# (including file, included file) relative to src/. Empty it as the fixes land.
ALLOW = {
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def layer_of(rel):
    """The layer of a path relative to src/, e.g. 'op', or 'kernels/cpu'; None outside every layer."""
    parts = rel.split('/')
    if parts[0] == 'kernels':
        return 'kernels/' + parts[1] if len(parts) > 2 else None
    return parts[0] if len(parts) > 1 and parts[0] in ALLOWED else None


def may_include(src_layer, dst_layer):
    if src_layer == dst_layer:
        return True
    rule = ALLOWED['kernels/*' if src_layer.startswith('kernels/') else src_layer]
    return dst_layer in rule or (dst_layer.startswith('kernels/') and 'kernels/*' in rule)


def rule_text(src_layer):
    rule = ALLOWED['kernels/*' if src_layer.startswith('kernels/') else src_layer]
    names = sorted(rule | {src_layer})
    if src_layer.startswith('kernels/'):
        names = sorted({src_layer, 'core', 'include'})
    return '%s may include only %s' % (src_layer, ', '.join(names))


def resolve(src, including, name, angle):
    """The file an include names, relative to src/, or None when it is not under src/."""
    bases = [] if angle else [os.path.dirname(including)]
    bases += [src, os.path.join(src, 'include')]
    for base in bases:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            rel = os.path.relpath(path, src)
            return None if rel.startswith('..') else rel.replace(os.sep, '/')
    return None


def check(src):
    """Returns the list of error lines for the tree under src."""
    errors, used = [], set()
    for root, _, files in sorted(os.walk(src)):
        for f in sorted(files):
            if not f.endswith(('.h', '.hpp', '.cc', '.cpp', '.c', '.cu', '.cuh')):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src).replace(os.sep, '/')
            src_layer = layer_of(rel)
            if src_layer is None:
                errors.append('src/%s: outside every layer (%s)' % (rel, ', '.join(sorted(ALLOWED))))
                continue
            with open(path, encoding='utf-8', errors='replace') as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    angle, name = m.group(1) == '<', m.group(2)
                    dst = resolve(src, path, name, angle)
                    if dst is None:
                        if not angle:
                            errors.append('src/%s:%d: #include "%s" resolves to no file under src/' % (rel, n, name))
                        continue
                    dst_layer = layer_of(dst)
                    if dst_layer is not None and may_include(src_layer, dst_layer):
                        continue
                    if (rel, dst) in ALLOW:
                        used.add((rel, dst))
                        continue
                    errors.append('src/%s:%d: includes src/%s, an upward include: %s' %
                                  (rel, n, dst, rule_text(src_layer)))
    for key in sorted(set(ALLOW) - used):
        errors.append('scripts/check_layers.py: allow-list entry %s -> %s is no longer needed; remove it' % key)
    return errors


def self_test():
    """Checks the checker on a fake tree: a clean one passes; each kind of fault is reported."""
    global ALLOW
    saved, ALLOW = ALLOW, {}  # the fake tree has no known exceptions
    failures = []
    top = tempfile.TemporaryDirectory(prefix='mf-layers-')

    def tree(files):
        d = tempfile.mkdtemp(dir=top.name)
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, 'w') as fh:
                fh.write(text)
        return d

    clean = {
        'core/types.h': '#include <stdint.h>\n',
        'core/tensor.h': '#include "types.h"\n#include <moonflow/tensor.hpp>\n',
        'kernels/cpu/k.cc': '#include "../../core/tensor.h"\n#include "k.h"\n',
        'kernels/cpu/k.h': '',
        'param/param.h': '#include "../core/types.h"\n',
        'op/registry.h': '#include "../param/param.h"\n#include "core/tensor.h"\n',
        'graph/graph.h': '#include "../op/registry.h"\n',
        'include/moonflow/engine.hpp': '#include "tensor.hpp"\n',
        'include/moonflow/tensor.hpp': '',
        'lua/capi.cc': '#include "../graph/graph.h"\n#include "../kernels/cpu/k.h"\n#include <moonflow/engine.hpp>\n',
        'cli/main.cc': '#include "../lua/capi.cc"\n',
    }
    got = check(tree(clean))
    if got:
        failures.append('a clean tree fails: %s' % got)
    cases = [
        ('core/tensor.h', '#include "types.h"\n#include "../lua/capi.cc"\n', 'src/core/tensor.h:2: includes src/lua/capi.cc'),
        ('kernels/cpu/k.h', '#include "../../param/param.h"\n', 'src/kernels/cpu/k.h:1: includes src/param/param.h'),
        ('param/param.h', '#include "../op/registry.h"\n', 'src/param/param.h:1: includes src/op/registry.h'),
        ('op/registry.h', '#include "graph/graph.h"\n', 'src/op/registry.h:1: includes src/graph/graph.h'),
        ('graph/graph.h', '#include <lua/capi.cc>\n', 'src/graph/graph.h:1: includes src/lua/capi.cc'),
        ('lua/capi.cc', '#include "../cli/main.cc"\n', 'src/lua/capi.cc:1: includes src/cli/main.cc'),
        ('include/moonflow/tensor.hpp', '#include "../../core/types.h"\n',
         'src/include/moonflow/tensor.hpp:1: includes src/core/types.h'),
        ('core/tensor.h', '#include "missing.h"\n', 'src/core/tensor.h:1: #include "missing.h" resolves to no file'),
    ]
    for rel, text, want in cases:
        files = dict(clean)
        files[rel] = text
        got = check(tree(files))
        if len(got) != 1 or not got[0].startswith(want):
            failures.append('%s with %r: expected one error starting %r, got %s' % (rel, text, want, got))
    files = dict(clean)
    files['kernels/cuda/c.cu'] = '#include "../cpu/k.h"\n'
    got = check(tree(files))
    if len(got) != 1 or 'kernels/cuda may include only core, include, kernels/cuda' not in got[0]:
        failures.append('one device including another: got %s' % got)
    ALLOW = {('core/tensor.h', 'lua/capi.cc'): 'test'}
    files = dict(clean)
    files['core/tensor.h'] = '#include "../lua/capi.cc"\n'
    if check(tree(files)):
        failures.append('an allowed include is reported')
    got = check(tree(clean))
    if len(got) != 1 or 'no longer needed' not in got[0]:
        failures.append('a stale allow-list entry is not reported: %s' % got)
    ALLOW = saved
    top.cleanup()
    for f in failures:
        print('self-test FAIL: ' + f)
    return not failures


def main(argv):
    if argv[1:] == ['--self-test']:
        ok = self_test()
        print('check_layers self-test: ' + ('ok' if ok else 'FAILED'))
        return 0 if ok else 1
    src = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src')
    errors = check(os.path.normpath(src))
    for e in errors:
        print(e)
    if errors:
        print('layering: %d error(s); see the rule at the top of scripts/check_layers.py' % len(errors))
        return 1
    print('layering: ok (%d allowed exception(s))' % len(ALLOW))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
