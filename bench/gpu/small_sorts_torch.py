# bench/gpu/small_sorts_torch.py: torch's wall and device times for the
# sorts of bench/gpu/small_sorts.lua (the same inputs' kinds), to print
# beside them: python3 bench/gpu/small_sorts_torch.py
import torch, time
dev = "cuda"
x20 = torch.rand(1 << 20, device=dev)
u20 = (torch.rand(1 << 20, device=dev) * 1000).floor().int()
f20 = (torch.rand(1 << 20, device=dev) * 2**31).floor().int()
u22 = (torch.rand(1 << 22, device=dev) * 1000).floor().int()
f22 = (torch.rand(1 << 22, device=dev) * 2**31).floor().int()
x24 = torch.rand(1 << 24, device=dev)
u24 = (torch.rand(1 << 24, device=dev) * 1000).floor().int()
l24 = (torch.rand(1 << 24, device=dev) * 70000).floor().long()
def t(name, f, reps=50):
    for _ in range(5): f()
    torch.cuda.synchronize()
    ws, ds = [], []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter(); s.record(); r = f(); e.record(); torch.cuda.synchronize()
        ws.append((time.perf_counter() - t0) * 1e6); ds.append(s.elapsed_time(e) * 1e3)
    ws.sort(); ds.sort()
    print(f"torch {name:22s} wall {ws[len(ws)//2]:8.1f} us  device(events) {ds[len(ds)//2]:8.1f} us")
t("sort_2^20", lambda: torch.sort(x20))
t("argsort_2^20", lambda: torch.argsort(x20))
t("unique_2^20", lambda: torch.unique(u20, return_counts=True))
t("sort_int<1000_2^20", lambda: torch.sort(u20))
t("argsort_int<1000_2^20", lambda: torch.argsort(u20))
t("argsort_int_2^20", lambda: torch.argsort(f20))
t("unique_2^22", lambda: torch.unique(u22, return_counts=True))
t("sort_int<1000_2^22", lambda: torch.sort(u22))
t("argsort_int_2^22", lambda: torch.argsort(f22))
t("sort_2^24", lambda: torch.sort(x24))
t("argsort_2^24", lambda: torch.argsort(x24))
t("sort_int<1000_2^24", lambda: torch.sort(u24))
t("argsort_int<1000_2^24", lambda: torch.argsort(u24))
t("sort_long<70000_2^24", lambda: torch.sort(l24))
