"""The PyTorch twin of scripts/gpu/bench.lua, run by it as a co-process (scripts/bench/torch_twin.lua):
one JSON request per line on stdin, one JSON answer per line on the FIFO named on the command line.
Requests:
  {"cmd": "init", "device": "cuda"|"cpu"}   -> {"name": the GPU's name (cuda)}; TF32 off for matmul
                                               and cuDNN, as moonflow's default
  {"cmd": "setup", "case": {...}, "target": s} builds the case and chooses the calls per batch:
      {"case": "mlp"|"lenet", "batch": b}     one eager training step (zero_grad, forward,
                                               cross-entropy, backward, SGD lr 0.01 momentum 0.9)
      {"case": "sgemm", "n": n}               torch.matmul of two n x n float32 matrices
      {"case": "update", "n": n}              SGD(momentum 0.9).step() of one n-element parameter
      {"case": "copy", "n": n}                dst.copy_(src) of 2.5 n floats (the update's bytes)
  {"cmd": "time"}                             -> {"s": seconds per call over one batch}
bench.lua's recipe: warm-up (three calls and at least the target's time), calls doubled until a
batch takes a quarter of the target, then scaled to it; every batch synchronises the device before
and after (torch.cuda.synchronize).
usage (bench.lua does it): python3 scripts/gpu/bench_torch.py FIFO"""
import math, os, sys, time
# the FIFO, the torch import and the request loop: scripts/bench/torch_twin.py's, shared with the CPU twins
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'bench'))
from torch_twin import serve, start
out, torch, F = start('install torch')
nn = torch.nn

state = {'device': 'cpu', 'f': None, 'n': 1}


def sync():
    if state['device'] == 'cuda':
        torch.cuda.synchronize()


def per_call(f, n):
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    sync()
    return (time.perf_counter() - t0) / n


def calibrate(f, target):
    w0, k = time.perf_counter(), 0
    while k < 3 or time.perf_counter() - w0 < target:
        f()
        k += 1
    n = 1
    while True:
        t = per_call(f, n) * n
        if t >= target / 4 or n >= 2 ** 20:
            return max(1, math.ceil(n * target / max(t, 1e-9)))
        n *= 2


def net(kind):
    if kind == 'mlp':
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1024, 128), nn.ReLU(), nn.Linear(128, 10))


def make(c):
    dev = state['device']
    torch.manual_seed(1)
    kind = c['case']
    if kind in ('mlp', 'lenet'):
        b = c['batch']
        model = net(kind).to(dev)
        x = torch.randn((b, 784) if kind == 'mlp' else (b, 1, 28, 28), device=dev)
        y = torch.randint(0, 10, (b,), device=dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return step
    if kind == 'sgemm':
        n = c['n']
        a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
        return lambda: torch.matmul(a, b)
    if kind == 'update':
        p = torch.nn.Parameter(torch.randn(c['n'], device=dev))
        p.grad = torch.randn(c['n'], device=dev)
        opt = torch.optim.SGD([p], lr=0.01, momentum=0.9)
        return opt.step
    if kind == 'copy':
        m = c['n'] * 5 // 2
        src, dst = torch.randn(m, device=dev), torch.empty(m, device=dev)
        return lambda: dst.copy_(src)
    raise ValueError('unknown case ' + kind)


def handle(req):
    cmd = req['cmd']
    if cmd == 'init':
        state['device'] = req['device']
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if req['device'] == 'cuda':
            if not torch.cuda.is_available():
                raise RuntimeError('torch.cuda.is_available() is false')
            return {'name': torch.cuda.get_device_name(0)}
        torch.set_num_threads(1)  # the self-test: moonflow runs one thread beside it
        return {}
    if cmd == 'setup':
        state['f'] = None
        if state['device'] == 'cuda':
            torch.cuda.empty_cache()  # the last case's memory, as bench.lua frees its own
        f = make(req['case'])
        state['n'] = calibrate(f, req['target'])
        state['f'] = f
        return {'n': state['n']}
    if cmd == 'time':
        return {'s': per_call(state['f'], state['n'])}
    raise ValueError('unknown request ' + cmd)


if __name__ == '__main__':
    serve(out, torch, handle)
