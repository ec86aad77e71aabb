# bench/gpu/rows_torch.py: PyTorch's side of bench/gpu/rows.lua (issue 30:
# row softmax family and row sorts). For each op: the wall clock from the
# call until the result is in hand (torch.cuda.synchronize()), median of REPS
# after 3 warm-up calls, and the device time between two CUDA events
# (cuda_timing.median_ms). Prints `BASELINE key us` (wall) and
# `BASELINE key.device us` lines; SIZES picks the shapes, as rows.lua's.
#   python3 bench/gpu/rows_torch.py [full|small] [REPS] > rows_torch.txt
import os, sys, time, statistics
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_timing import median_ms

sizes = sys.argv[1] if len(sys.argv) > 1 else "full"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
dev = torch.device("cuda")
torch.manual_seed(1)

# the shapes of bench/gpu/rows.lua (keep the two lists the same)
SHAPES = {
    "full": {"softmax": [(8192, 8192), (4096, 4096)],
             "sort": [(4096, 1024), (65536, 64), (64, 65536)]},
    "small": {"softmax": [(256, 512), (64, 3000)],
              "sort": [(64, 1024), (512, 64), (2, 65536)]},
}[sizes]


def wall(f):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
        del r
    return statistics.median(ts) * 1e6


rows = []
for (r, c) in SHAPES["softmax"]:
    x = torch.randn(r, c, device=dev)
    s = "%dx%d" % (r, c)
    rows += [("softmax_" + s, lambda x=x: torch.softmax(x, 1)),
             ("log_softmax_" + s, lambda x=x: torch.log_softmax(x, 1)),
             ("logsumexp_" + s, lambda x=x: torch.logsumexp(x, 1))]
for (r, c) in SHAPES["sort"]:
    x = torch.rand(r, c, device=dev)
    s = "%dx%d" % (r, c)
    rows += [("sort_" + s, lambda x=x: torch.sort(x, dim=1).values),
             ("sort_stable_" + s, lambda x=x: torch.sort(x, dim=1, stable=True).values),
             ("argsort_" + s, lambda x=x: torch.argsort(x, dim=1))]

for key, f in rows:
    print("BASELINE %s %.1f" % (key, wall(f)), flush=True)
    print("BASELINE %s.device %.1f" % (key, median_ms(f, reps) * 1e3), flush=True)
print("# torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()), flush=True)
