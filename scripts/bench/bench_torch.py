"""One repetition of one workload, in PyTorch: the same workloads as bench_mf.lua, one JSON line each.
usage: python3 scripts/bench/bench_torch.py --workload add|exec|sgemm|update|mlp|cnn|rss
           [--warmup 5] [--steps 30] [--limit N]
Run with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp (run.sh sets it); 2 threads."""
import argparse, gzip, json, os, time
import numpy as np
import torch
from torch import nn

# BENCH_THREADS (default 2, as run.sh) and BENCH_CPU_CLOCK=1 (process CPU time: steadier at 1 thread on a busy
# machine, as eager_step.lua --cpu) serve one-off comparisons; run.sh sets neither
torch.set_num_threads(int(os.environ.get('BENCH_THREADS', '2')))
p = argparse.ArgumentParser()
p.add_argument('--workload', required=True)
p.add_argument('--warmup', type=int, default=5)
p.add_argument('--steps', type=int, default=30)
p.add_argument('--limit', type=int, default=0)
opts = p.parse_args()
clock = time.process_time if os.environ.get('BENCH_CPU_CLOCK') == '1' else time.perf_counter


def emit(workload, value, unit, **extra):
    print(json.dumps(dict(workload=workload, impl='pytorch', value=value, unit=unit, **extra)), flush=True)


def bench_add():  # (a) eager a + b on 1-element tensors
    a, b = torch.ones(1), torch.ones(1)
    for _ in range(20000):
        a + b
    iters = 200000
    t0 = clock()
    for _ in range(iters):
        a + b
    emit('a_eager_add_1elem', (clock() - t0) / iters * 1e6, 'us/op')


def bench_exec():  # (b) a 1,000-node chain of scalar adds, as a TorchScript graph (torch.jit.trace)
    nodes = 1000
    one = torch.tensor(1.0)

    def chain(x):
        for _ in range(nodes):
            x = x + one
        return x
    with torch.no_grad():
        g = torch.jit.trace(chain, torch.tensor(0.0))
        assert g(torch.tensor(0.0)).item() == nodes
        x = torch.tensor(0.0)
        for _ in range(20):
            g(x)
        runs = 200
        t0 = clock()
        for _ in range(runs):
            g(x)
    emit('b_graph_exec_per_node', (clock() - t0) / runs / nodes * 1e6, 'us/node')


def bench_sgemm():  # (c)
    torch.manual_seed(1)
    for n in (256, 512, 1024, 2048):
        x, y = torch.randn(n, n), torch.randn(n, n)
        flop = 2 * n ** 3
        k = max(3, int(2e10 // flop))
        best = 0
        for _ in range(5):  # best of 5 trials of about 0.1 s, as bench_mf.lua
            torch.mm(x, y)
            t0 = clock()
            for _ in range(k):
                torch.mm(x, y)
            best = max(best, flop * k / (clock() - t0) / 1e9)
        emit('c_sgemm_%d' % n, best, 'GFLOP/s')


def bench_update():  # (d) written plainly, eager; GB/s counting 2 reads + 1 write
    n, eta, lam = 16 * 1024 * 1024, 0.01, 1e-4
    g, w = torch.rand(n), torch.rand(n)
    iters = 20
    for _ in range(3):
        w = -eta * (g + lam * w)
    t0 = clock()
    for _ in range(iters):
        w = -eta * (g + lam * w)
    emit('d_update_16M_eager', 3 * 4 * n * iters / (clock() - t0) / 1e9, 'GB/s')


def time_steps(model, xshape, name):
    b = xshape[0]
    x, y = torch.randn(*xshape), torch.randint(0, 10, (b,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    for _ in range(opts.warmup):
        step()
    t0 = clock()
    for _ in range(opts.steps):
        step()
    emit(name, (clock() - t0) / opts.steps * 1e3, 'ms/step')


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def bench_mlp():  # (e)
    torch.manual_seed(1)
    for b in (64, 256):
        time_steps(mlp(), (b, 784), 'e_mlp_step_b%d' % b)
    # the row moonflow's eager (tape) step is compared with: PyTorch's step is eager in both rows
    time_steps(mlp(), (64, 784), 'e_mlp_eager_step_b64')


def bench_cnn():  # (f)
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1024, 128), nn.ReLU(), nn.Linear(128, 10))
    time_steps(model, (64, 1, 28, 28), 'f_cnn_step_b64')


def read_idx(path):  # gzip IDX: magic (dtype, ndim), big-endian dims, raw uint8 data
    with gzip.open(path, 'rb') as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], 'big') for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def bench_rss():  # (g) one MLP epoch on Fashion-MNIST, batch 64, shuffled; uint8 kept, converted per batch
    torch.manual_seed(1)
    d = '/usr/share/datasets/fashion-mnist/'
    xs, ys = read_idx(d + 'train-images-idx3-ubyte.gz'), read_idx(d + 'train-labels-idx1-ubyte.gz')
    if opts.limit > 0:
        xs, ys = xs[:opts.limit], ys[:opts.limit]
    model = nn.Sequential(nn.Flatten(), mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    perm = np.random.default_rng(1).permutation(len(xs))
    t0 = clock()
    for s in range(0, len(xs), 64):
        idx = perm[s:s + 64]
        bx = torch.from_numpy(xs[idx].astype(np.float32) / 255)
        by = torch.from_numpy(ys[idx].astype(np.int64))
        opt.zero_grad()
        loss_fn(model(bx), by).backward()
        opt.step()
    secs = clock() - t0
    with open('/proc/self/status') as f:
        kb = int(next(l for l in f if l.startswith('VmHWM')).split()[1])
    emit('g_mlp_epoch_peak_rss', kb / 1024, 'MiB', images=len(xs), epoch_s=round(secs, 2))


dict(add=bench_add, exec=bench_exec, sgemm=bench_sgemm, update=bench_update, mlp=bench_mlp,
     cnn=bench_cnn, rss=bench_rss)[opts.workload]()
