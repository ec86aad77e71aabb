"""PyTorch baselines for bench/gpu/blas.lua: torch.bmm, torch.mv and a copy,
each the median of REPS runs timed with CUDA events (and the wall clock of
batches of 10 calls, as the Lua bench times its own).

Prints `BASELINE key value unit` lines, which bench/gpu/blas.lua reads:
  bmm_us        torch.bmm of BATCH x SIZE^3 float32 (CUDA events)
  bmm_wall_us   the same, wall clock per call
  copy_GBps     dst.copy_(src) over N x N float32 (bytes read and written)
  gemv_GBps     torch.mv(A, x), A N x N float32 (bytes of A, x and y)
  gemv_t_GBps   torch.mv(A.t(), x)
Usage: python3 bench/gpu/blas_torch.py [N [BATCH [SIZE [REPS]]]] > torch.txt
"""
import sys

import torch

import cuda_timing

N = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
BATCH = int(sys.argv[2]) if len(sys.argv) > 2 else 64
SIZE = int(sys.argv[3]) if len(sys.argv) > 3 else 256
REPS = int(sys.argv[4]) if len(sys.argv) > 4 else 20
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False   # fp32 products, as luagpu's


def device_ms(fn):
    """Median of REPS runs of fn, in ms, by CUDA events."""
    return cuda_timing.median_ms(fn, REPS)


def wall_s(fn, batch=10):
    """Median over REPS batches of the wall time per call, in s."""
    return cuda_timing.wall_s(fn, REPS, batch)


def report(key, value, unit):
    print(f"BASELINE {key} {value:.3f} {unit}", flush=True)


print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
a = torch.rand(BATCH, SIZE, SIZE, device=dev)
b = torch.rand(BATCH, SIZE, SIZE, device=dev)
c = torch.empty(BATCH, SIZE, SIZE, device=dev)
bmm = lambda: torch.bmm(a, b, out=c)
report("bmm_us", device_ms(bmm) * 1e3, "us")
report("bmm_wall_us", wall_s(bmm) * 1e6, "us")
del a, b, c

A = torch.rand(N, N, device=dev)
dst = torch.empty_like(A)
x = torch.rand(N, device=dev)
y = torch.empty(N, device=dev)
report("copy_GBps", 2 * 4 * N * N / (device_ms(lambda: dst.copy_(A)) * 1e6), "GB/s")
gemv_bytes = 4 * (N * N + 2 * N)
report("gemv_GBps", gemv_bytes / (device_ms(lambda: torch.mv(A, x, out=y)) * 1e6), "GB/s")
At = A.t()
report("gemv_t_GBps", gemv_bytes / (device_ms(lambda: torch.mv(At, x, out=y)) * 1e6), "GB/s")
