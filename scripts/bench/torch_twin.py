"""What the PyTorch twins of the bench scripts share (ops_torch.py for ops.lua, conv_torch.py for
conv.lua; torch_twin.lua starts them): opening the answer FIFO and importing torch, with the fatal
answer when torch is missing; timing.lua's per_call_us recipe; and the request loop (one JSON request
a line on stdin, one JSON answer a line on the FIFO)."""
import gc, json, sys, time, traceback


def start(hint):
    """Opens the FIFO named on the command line (first: the Lua side waits on it, and should hear why
    torch is missing) and imports torch. Returns (out, torch, F); without torch it answers
    {'fatal': ...} naming hint and exits 0 (the Lua side's fallback answer, for a python that cannot
    start at all, must not follow)."""
    out = open(sys.argv[1], 'w')
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        out.write(json.dumps({'fatal': 'PyTorch twin: %s (%s)' % (e, hint)}) + '\n')
        out.close()
        sys.exit(0)
    return out, torch, F


def per_call_us(f, args=(), calls=None, batches=7, warmup=3, target=0.02, clock=time.perf_counter):
    """timing.lua's per_call_us: µs per call of f(*args), the median of batches (calls per batch
    calibrated to about target seconds unless given; a collection before each batch)."""
    w0 = clock()
    for _ in range(warmup):
        f(*args)
        if clock() - w0 > target:
            break
    n = calls
    if not n:
        t0, n = clock(), 0
        while True:
            f(*args)
            n += 1
            if clock() - t0 > target:
                break
    times = []
    for _ in range(batches):
        gc.collect()
        t = clock()
        for _ in range(n):
            f(*args)
        times.append((clock() - t) / n * 1e6)
    times.sort()
    return times[(len(times) - 1) // 2]


def serve(out, torch, handle):
    """Answers {'torch': version}, then handle(request) for each request line until {'cmd': 'quit'}
    or the end of stdin. A request's exception goes back as {'error': ...} (the Lua side reports it
    by the case's name); with 'debug' in the request its traceback goes to stderr too."""
    out.write(json.dumps({'torch': torch.__version__}) + '\n')
    out.flush()
    for line in iter(sys.stdin.readline, ''):
        req = json.loads(line)
        if req.get('cmd') == 'quit':
            break
        try:
            ans = handle(req)
        except Exception as e:
            ans = {'error': '%s: %s' % (type(e).__name__, str(e).split('\n')[0][:300])}
            if req.get('debug'):
                traceback.print_exc()
        out.write(json.dumps(ans) + '\n')
        out.flush()
