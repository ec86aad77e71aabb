# bench/gpu/tiny_op_torch.py: the floor of one op's wall clock in PyTorch on
# this card, for bench/gpu/finish_latency.lua's beside it: a tiny in-place
# add then torch.cuda.synchronize(), and a 4096-float op then .item()
# (medians of REPS, microseconds).
#   python3 bench/gpu/tiny_op_torch.py [REPS]
import sys, time
import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
x = torch.zeros(1024, device="cuda")
y = torch.rand(4096, device="cuda")

def median(f):
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e6)
    t.sort()
    return t[len(t) // 2]

def add_sync():
    x.add_(1.0)
    torch.cuda.synchronize()

print("# torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()))
print("torch tiny add_ + synchronize: %.1f us" % median(add_sync))
print("torch y.sum().item() of 4096 floats: %.1f us" % median(lambda: y.sum().item()))
