# bench/gpu/to_device.py: torch's side of bench/gpu/to_device.lua:
# x.to("cuda:1").sum().item() of x on cuda:0 (the copy and a sum of it on
# the second GPU, as the Lua side measures), wall clock.
import sys, time, statistics
import torch
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
for n in (1 << 20, 1 << 24, 1 << 26):
    x = torch.rand(n, device="cuda:0")
    y1 = torch.rand(n, device="cuda:1")
    def f():
        return x.to("cuda:1").sum().item()
    for _ in range(2):
        f(); torch.cuda.synchronize(0); torch.cuda.synchronize(1)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        y = f()
        torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        ts.append(time.perf_counter() - t0)
    s = statistics.median(ts)
    print("BASELINE to_%d %.1f us %.2f GB/s" % (n, s * 1e6, n * 4 / s / 1e9), flush=True)
