"""PyTorch eager baselines for bench/gpu/tensor.lua, timed the same way:
the median over REPS batches of BATCH operations, wall clock from the
first call to torch.cuda.synchronize(), divided by BATCH.

Prints `BASELINE key value unit` lines:
  chain_ms      z = (a*x + b).exp()*0.5 - y over 2^LOG2N float32 (5 kernels)
  add_GBps      x + y over 2^LOG2N float32 (3 x 4 bytes per element)
  small_add_us  x + y over 1024 float32, per operation (asynchronous, one
                synchronize per batch, as luagpu's dev:finish())
  small_add_sync_us  the same, synchronized after each operation
  sum1_ms       x.sum(0) of 8192 x 8192 float32 (luagpu's x:sum(1))
  sum2_ms       x.sum(1) (luagpu's x:sum(2))
  rand_ms       torch.rand(2^28) float32
Usage: python3 tensor_torch.py [LOG2N [REPS]]
"""
import sys

import torch

import cuda_timing

LOG2N = int(sys.argv[1]) if len(sys.argv) > 1 else 26
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 15
dev = torch.device("cuda")


def per_call(batch, fn):
    """Median over REPS batches of the wall time per call, in s."""
    return cuda_timing.wall_s(fn, REPS, batch)


def report(key, value, unit):
    print(f"BASELINE {key} {value:.3f} {unit}", flush=True)


n = 1 << LOG2N
x = torch.rand(n, device=dev)
y = torch.rand(n, device=dev)
report("chain_ms", per_call(10, lambda: (x * 2.0 + 0.5).exp() * 0.5 - y) * 1e3, "ms")
add_s = per_call(10, lambda: x + y)
report("add_GBps", 12 * n / add_s / 1e9, "GB/s")
sx, sy = torch.rand(1024, device=dev), torch.rand(1024, device=dev)
report("small_add_us", per_call(1000, lambda: sx + sy) * 1e6, "us")


def add_sync():
    z = sx + sy
    torch.cuda.synchronize()
    return z


report("small_add_sync_us", per_call(1000, add_sync) * 1e6, "us")
del x, y
m = torch.rand(8192, 8192, device=dev)
report("sum1_ms", per_call(10, lambda: m.sum(0)) * 1e3, "ms")
report("sum2_ms", per_call(10, lambda: m.sum(1)) * 1e3, "ms")
del m
torch.cuda.empty_cache()
report("rand_ms", per_call(5, lambda: torch.rand(1 << 28, device=dev)) * 1e3, "ms")
