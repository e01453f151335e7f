"""Table of medians, spreads (max - min) and ratios from run.sh's JSON lines; checks issue 5's targets.
usage: python3 scripts/bench/summarize.py results.jsonl"""
import json, os, platform, statistics, subprocess, sys, time
from collections import defaultdict

runs = defaultdict(list)  # (workload, impl) -> values
units = {}
cores = set()  # OpenBLAS kernel families the runs used
for line in open(sys.argv[1]):
    if line.startswith('{'):
        d = json.loads(line)
        if 'openblas_core' in d:
            cores.add(d['openblas_core'])
        runs[d['workload'], d['impl']].append(d['value'])
        units[d['workload']] = d['unit']


def med(w, impl):
    v = runs.get((w, impl))
    return (statistics.median(v), max(v) - min(v), len(v)) if v else None


def cell(m):
    return '%.4g ± %.2g' % (m[0], m[1]) if m else '-'


cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
print('\n%s · %s · nproc %d · %s · OpenBLAS %s kernels · medians of %d runs, spread = max - min' % (
    time.strftime('%Y-%m-%d %H:%M'), cpu, os.cpu_count(), platform.platform(), '/'.join(sorted(cores)) or '?',
    max((len(v) for v in runs.values()), default=0)))
triad = med('d_stream_triad_16M', 'machine')
rows = []
for w in sorted(units, key=lambda w: (w[0], int(w.rsplit('_', 1)[-1]) if w.rsplit('_', 1)[-1].isdigit() else 0, w)):
    if w == 'd_stream_triad_16M':
        continue
    m, p, x = med(w, 'moonflow'), med(w, 'pytorch'), med(w, 'machine')
    if w.startswith('d_') and triad:
        x = triad
    r_pt = '%.2f' % (m[0] / p[0]) if m and p else '-'
    r_x = '%.2f' % (m[0] / x[0]) if m and x else '-'
    rows.append((w, units[w], cell(m), cell(p), cell(x), r_pt, r_x, m, p, x))

# issue 5's targets: (workload, what is compared, test on (moonflow, pytorch, machine) medians)
targets = {
    'a_eager_add_1elem': ('<= 0.25 us', lambda m, p, x: m <= 0.25),
    'b_graph_exec_per_node': ('<= 0.05 us/node', lambda m, p, x: m <= 0.05),
    'c_sgemm_512': ('>= 0.97 x OpenBLAS', lambda m, p, x: m / x >= 0.97),
    'c_sgemm_1024': ('>= 0.97 x OpenBLAS', lambda m, p, x: m / x >= 0.97),
    'c_sgemm_2048': ('>= 0.97 x OpenBLAS', lambda m, p, x: m / x >= 0.97),
    'd_update_16M_eager': ('>= 0.5 x triad', lambda m, p, x: m / x >= 0.5),
    'd_update_16M_graph': ('>= 0.8 x triad', lambda m, p, x: m / x >= 0.8),
    'e_mlp_step_b64': ('<= 0.8 x PyTorch', lambda m, p, x: m / p <= 0.8),
    'f_cnn_step_b64': ('<= 0.7 x PyTorch', lambda m, p, x: m / p <= 0.7),
    'g_mlp_epoch_peak_rss': ('<= 150 MiB', lambda m, p, x: m <= 150),
    'h_startup': ('<= 20 ms', lambda m, p, x: m <= 20),
}
hdr = ('workload', 'unit', 'moonflow', 'pytorch', 'machine limit', 'mf/pt', 'mf/machine', 'target', 'met?')
table = []
for w, u, cm, cp, cx, rp, rx, m, p, x in rows:
    t, ok = targets.get(w, ('', None))
    met = ''
    if ok:
        try:
            met = 'met' if ok(m[0], p and p[0], x and x[0]) else 'NOT met'
        except TypeError:
            met = '?'
    table.append((w, u, cm, cp, cx, rp, rx, t, met))
widths = [max(len(str(r[i])) for r in table + [hdr]) for i in range(len(hdr))]
for r in [hdr, tuple('-' * n for n in widths)] + table:
    print('| ' + ' | '.join(str(c).ljust(n) for c, n in zip(r, widths)) + ' |')
if triad:
    print('STREAM triad (machine limit for d): %s GB/s (best of 10 passes per run)' % cell(triad))
print('machine limit for c: cblas_sgemm called through the FFI on the same buffers; for d: STREAM triad; '
      'ratios are of medians; lower is better for us, ms and MiB, higher for GFLOP/s and GB/s')
