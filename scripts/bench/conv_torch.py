"""The PyTorch twin of scripts/bench/conv.lua, run by it as a co-process: conv.lua writes one JSON
request per line to this process's stdin and reads one JSON answer per line from the FIFO named on
the command line. A request names the routine (conv2d, conv2d_backward_input, conv2d_backward_weight,
max_pool2d, max_pool2d_backward, avg_pool2d, avg_pool2d_backward, adaptive_avg_pool2d,
adaptive_avg_pool2d_backward), the x and w shapes and the geometry; this side times PyTorch's
routine for it with timing.lua's recipe (per_call_us) and answers {"us": median, "shape": [...]}.
usage (conv.lua does it): python3 scripts/bench/conv_torch.py FIFO
Run with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp. The FIFO, the torch import, the
timing recipe and the request loop are torch_twin.py's, shared with ops_torch.py."""
import json, time
from torch_twin import per_call_us, serve, start
out, torch, F = start('install python3-torch')  # first: conv.lua waits on the FIFO

cache = {}  # the inputs of the last case: rounds repeat a case, its tensors are made once


def make_case(req):
    op, xs, dt = req['op'], tuple(req['x']), torch.float64 if req.get('f64') else torch.float32
    torch.manual_seed(1)
    x = torch.randn(xs, dtype=dt)
    if op.startswith('conv2d'):
        w = torch.randn(tuple(req['w']), dtype=dt)
        s, p, d = req['stride'], req['padding'], req['dilation']
        y = F.conv2d(x, w, None, s, p, d)
        gy = torch.randn(y.shape, dtype=dt)
        if op == 'conv2d':
            return lambda: F.conv2d(x, w, None, s, p, d)
        mask = [op == 'conv2d_backward_input', op == 'conv2d_backward_weight', False]
        k = 0 if mask[0] else 1
        return lambda: torch.ops.aten.convolution_backward(gy, x, w, None, s, p, d, False, [0, 0], 1, mask)[k]
    k, s = req.get('kernel', 2), req.get('stride', 2)
    if op == 'max_pool2d':
        return lambda: F.max_pool2d(x, k, s)
    if op == 'max_pool2d_backward':
        y, idx = F.max_pool2d(x, k, s, return_indices=True)
        gy = torch.randn(y.shape, dtype=dt)
        return lambda: torch.ops.aten.max_pool2d_with_indices_backward(gy, x, [k, k], [s, s], [0, 0], [1, 1], False, idx)
    if op == 'avg_pool2d':
        return lambda: F.avg_pool2d(x, k, s)
    if op == 'avg_pool2d_backward':
        gy = torch.randn(F.avg_pool2d(x, k, s).shape, dtype=dt)
        return lambda: torch.ops.aten.avg_pool2d_backward(gy, x, [k, k], [s, s], [0, 0], False, True, None)
    if op == 'adaptive_avg_pool2d':
        return lambda: F.adaptive_avg_pool2d(x, req['out'])
    if op == 'adaptive_avg_pool2d_backward':
        gy = torch.randn(F.adaptive_avg_pool2d(x, req['out']).shape, dtype=dt)
        return lambda: torch.ops.aten._adaptive_avg_pool2d_backward(gy, x)
    raise ValueError('unknown op ' + op)


def handle(req):
    if req['cmd'] == 'threads':
        torch.set_num_threads(int(req['n']))
        return {'threads': torch.get_num_threads()}
    if req['cmd'] == 'time':
        key = json.dumps(req['case'], sort_keys=True)
        if key not in cache:
            cache.clear()
            cache[key] = make_case(req['case'])
        f = cache[key]
        shape = list(f().shape)
        clock = time.process_time if req.get('cpu') else time.perf_counter  # conv.lua --clock
        us = per_call_us(f, (), calls=req.get('calls'), batches=req.get('batches') or 7, target=req.get('target') or 0.02,
                         clock=clock)
        return {'us': us, 'shape': shape}
    raise ValueError('unknown request ' + req['cmd'])


if __name__ == '__main__':
    serve(out, torch, handle)
