"""The PyTorch twin of scripts/bench/ops.lua, run by it as a co-process: ops.lua writes one JSON
request per line to this process's stdin and reads one JSON answer per line from the FIFO named on
the command line. The cases live in ops.lua only: a request carries the case's Python code, its
input specs (kind, shape, dtype, index range) and the sizes; this side makes inputs of the same
kinds and shapes and times the code with ops.lua's recipe (timing.lua: warm-up calls, calls per
batch calibrated to about 20 ms, the median of the batches ops.lua asks for, a collection before
each).
usage (ops.lua does it): python3 scripts/bench/ops_torch.py FIFO
Run with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp; OMP_NUM_THREADS threads (ops.lua
sets moonflow's count; 2 when unset)."""
import os
# the FIFO, the torch import, the timing recipe and the request loop: torch_twin.py's, shared with conv_torch.py
from torch_twin import per_call_us, serve, start
out, torch, F = start('install python3-torch, or run ops.lua --no-torch')  # first: ops.lua waits on the FIFO

torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '2')))  # ops.lua passes its own count
DTYPES = {'float32': torch.float32, 'float64': torch.float64, 'int64': torch.int64, 'uint8': torch.bool}


class Sizes:
    def __init__(self, d):
        self.__dict__.update(d)
        self.dtype = DTYPES[d['dtype']]


def make_input(d):
    """One input of a spec (ops.lua's parse_spec); indices are 0-based here, 1-based in moonflow."""
    k, shape = d['kind'], tuple(int(s) for s in d['shape'])
    dt = DTYPES[d['dtype']]
    if k == 'n':
        return torch.randn(shape, dtype=dt)
    if k == 'p':
        return torch.rand(shape, dtype=dt) * 1.5 + 0.5
    if k == 'u':
        return torch.rand(shape, dtype=dt)
    if k == 'o':
        return torch.rand(shape, dtype=dt) * 0.002 + 0.999
    if k == 'm':
        return torch.rand(shape) > 0.5
    if k == 'i':
        return torch.randint(0, int(d['hi']), shape)
    if k == 'l':
        return torch.full(shape, 1e-3)
    if k == 't':
        return torch.full(shape, 1.0)
    raise ValueError('unknown input kind ' + k)


def compile_case(expr, nargs):
    """The case's code as a function of S, P and the inputs a, b, c, ..."""
    names = ', '.join('abcdefgh'[:nargs])
    body = expr if '\n' in expr else 'return (' + expr + ')'
    src = 'def _case(S, P%s):\n' % (', ' + names if names else '')
    src += ''.join('    ' + line + '\n' for line in body.split('\n'))
    ns = {'torch': torch, 'F': F}
    exec(src, ns)
    return ns['_case']


def shapes_of(v, acc):
    """ops.lua's shapes_of: every tensor's dtype and shape as 'float32:AxB', lists and tuples flattened;
    bool is moonflow's uint8"""
    if isinstance(v, torch.Tensor):
        dt = 'uint8' if v.dtype == torch.bool else str(v.dtype).replace('torch.', '')
        acc.append(dt + ':' + 'x'.join(str(d) for d in v.shape))
    elif isinstance(v, (list, tuple)):
        for x in v:
            shapes_of(x, acc)
    return acc


def handle(req):
    cmd = req['cmd']
    if cmd == 'copy_bw':  # dst.copy_(src) of 64 MB: 2 units moved
        n = 1024 if req.get('quick') else 16 * 1024 * 1024
        a, b = torch.ones(n), torch.zeros(n)
        us = per_call_us(lambda: b.copy_(a), (), calls=1 if req.get('quick') else None,
                         batches=1 if req.get('quick') else 7)
        return {'gbps': 2 * 4 * n / (us * 1e-6) / 1e9}
    if cmd == 'time':
        S = Sizes(req['S'])
        ins = [make_input(d) for d in req['ins']]
        P = None
        if req.get('setup'):
            P = eval(req['setup'], {'torch': torch, 'F': F, 'S': S, 'a': ins[0] if ins else None,
                                    'b': ins[1] if len(ins) > 1 else None})
        f = compile_case(req['expr'], len(ins))
        shapes = shapes_of(f(S, P, *ins), [])
        us = per_call_us(f, [S, P] + ins, calls=req.get('calls'), batches=req.get('batches') or 7,
                         warmup=req.get('warmup') or 3)
        return {'us': us, 'shapes': shapes}
    raise ValueError('unknown request ' + cmd)


if __name__ == '__main__':
    serve(out, torch, handle)
