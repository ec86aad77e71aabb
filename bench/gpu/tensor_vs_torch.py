# bench/gpu/tensor_vs_torch.py: PyTorch's side of bench/gpu/tensor_vs_torch.lua.
# Each op of the table timed on the wall clock from the call until the result
# is in hand (torch.cuda.synchronize(), or .item()), median of REPS after 3
# warm-up calls. Prints `BASELINE key microseconds` lines.
#   python3 bench/gpu/tensor_vs_torch.py [REPS [SET]] > torch.txt   (SET: array for issue 32's, topk)
import sys, time, statistics
import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
dev = torch.device("cuda")
torch.manual_seed(1)

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

x26 = torch.rand(1 << 26, device=dev); y26 = torch.rand(1 << 26, device=dev)
x1k = torch.rand(1024, device=dev); y1k = torch.rand(1024, device=dev)
M = torch.rand(8192, 8192, device=dev); row = torch.rand(1, 8192, device=dev)
x24 = torch.rand(1 << 24, device=dev)
u24 = torch.randint(0, 2**31 - 1, (1 << 24,), device=dev, dtype=torch.int64).to(torch.int32)
X = torch.rand(64, 256, 256, device=dev); Y = torch.rand(64, 256, 256, device=dev)
S = torch.rand(4096, 4096, device=dev)
S64 = torch.rand(65536, 64, device=dev)

def chain(x, y): return torch.exp(x * 1.5 + 0.25) * 0.5 - y
def softmax_by_hand(s):
    e = torch.exp(s - s.max(dim=1, keepdim=True).values)
    return e / e.sum(dim=1, keepdim=True)

rows = [
    ("chain_2^26", lambda: chain(x26, y26)),
    ("M+row_8192^2", lambda: M + row),
    ("M.t.contiguous_8192^2", lambda: M.t().contiguous()),
    ("M.sum1_8192^2", lambda: M.sum(0)),
    ("M.sum2_8192^2", lambda: M.sum(1)),
    ("cumsum_2^24", lambda: torch.cumsum(x24, 0)),
    ("sort_uint_2^24", lambda: torch.sort(u24).values),
    ("sort_float_2^24", lambda: torch.sort(x24).values),
    ("argsort_2^24", lambda: torch.argsort(x24)),
    ("bmm_64x256^3", lambda: torch.bmm(X, Y)),
    ("chain_1024", lambda: chain(x1k, y1k)),
    ("rand_2^26", lambda: torch.rand(1 << 26, device=dev)),
    ("randn_2^26", lambda: torch.randn(1 << 26, device=dev)),
    ("argmax2_4096^2", lambda: S.argmax(1)),
    ("argmax1_4096^2", lambda: S.argmax(0)),
    ("softmax_by_hand_4096^2", lambda: softmax_by_hand(S)),
    ("softmax_4096^2", lambda: torch.softmax(S, 1)),
    ("histogram_2^24", lambda: torch.histc(x24, bins=256, min=0, max=1)),
    ("sum_item_2^24", lambda: x24.sum().item()),
]
if len(sys.argv) > 2 and sys.argv[2] == "array":
    g = torch.Generator(device=dev).manual_seed(2)
    P24 = torch.randint(0, 1 << 24, (1 << 24,), device=dev, generator=g)
    P20 = torch.randint(0, 1 << 20, (1 << 24,), device=dev, generator=g)
    G = torch.randint(0, 4096, (4096, 4096), device=dev, generator=g)
    R = torch.randint(0, 4096, (4096,), device=dev, generator=g)
    u20 = torch.randint(0, 1000, (1 << 20,), device=dev, generator=g, dtype=torch.int32)
    zeros20 = torch.zeros(1 << 20, device=dev)
    rows = [
        ("gather2_4096^2", lambda: torch.gather(S, 1, G)),
        ("take_2^24", lambda: torch.take(x24, P24)),
        ("index_select1_4096^2", lambda: torch.index_select(S, 0, R)),
        ("scatter_add_2^24_into_2^20", lambda: zeros20.scatter_add(0, P20, x24)),
        ("masked_select_2^24", lambda: torch.masked_select(x24, x24 > 0.5)),
        ("cat_3x2^24", lambda: torch.cat((x24, x24, x24))),
        ("flip2_contiguous_8192^2", lambda: torch.flip(M, [1])),
        ("topk100_2^24", lambda: torch.topk(x24, 100)),
        ("topk16_rows_4096^2", lambda: torch.topk(S, 16, dim=1)),
        ("topk8_rows_65536x64", lambda: torch.topk(S64, 8, dim=1)),
        ("unique_2^20", lambda: torch.unique(u20, return_counts=True)),
        ("softmax2_4096^2", lambda: torch.softmax(S, 1)),
        ("var2_8192^2", lambda: torch.var(M, 1)),
        ("einsum_bmm_64x256^3", lambda: torch.einsum("bij,bjk->bik", X, Y)),
    ]
if len(sys.argv) > 2 and sys.argv[2] == "topk":
    R16 = torch.rand(64, 1 << 16, device=dev)
    rows = [
        ("topk100_2^24", lambda: torch.topk(x24, 100)),
        ("topk1000_2^24", lambda: torch.topk(x24, 1000)),
        ("topk1_2^24", lambda: torch.topk(x24, 1)),
        ("topk16_rows_4096^2", lambda: torch.topk(S, 16, dim=1)),
        ("topk128_rows_4096^2", lambda: torch.topk(S, 128, dim=1)),
        ("topk8_rows_65536x64", lambda: torch.topk(S64, 8, dim=1)),
        ("topk16_dim1_4096^2", lambda: torch.topk(S, 16, dim=0)),
        ("topk32_rows_64x2^16", lambda: torch.topk(R16, 32, dim=1)),
    ]
for key, f in rows:
    print("BASELINE %s %.1f" % (key, wall(f)), flush=True)
if len(sys.argv) > 2 and sys.argv[2] in ("array", "topk"):
    sys.exit(0)
try:
    cchain = torch.compile(chain)
    print("BASELINE chain_2^26_compiled %.1f" % wall(lambda: cchain(x26, y26)), flush=True)
except Exception as e:  # no compiler on the machine: say so
    print("# torch.compile failed: %s" % str(e).splitlines()[0], flush=True)
print("# torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()), flush=True)
