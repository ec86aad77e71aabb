"""PyTorch baselines for bench/gpu/algo.lua, timed with CUDA events.

Prints `BASELINE key value unit` lines (medians of 20 after warm-up):
  copy_gbs        y.copy_(x) over 2^28 int32, GB/s counting one read and one write
  cumsum_ms       torch.cumsum(x, 0, dtype=torch.int32) over 2^28 int32 (exclusive
                  and inclusive cost the same here: one read, one write)
  sort_ms         torch.sort over 2^26 int32 keys (CUB's radix sort, keys and int64
                  indices; torch has no keys-only sort)
  sort_kv_ms      the same, then the int32 values gathered by the indices (what a
                  key-value sort costs in PyTorch)
Usage: python3 algo_torch.py [LOG2N_SCAN [LOG2N_SORT]]
"""
import sys

import torch

from cuda_timing import median_ms


def main():
    log2_scan = int(sys.argv[1]) if len(sys.argv) > 1 else 28
    log2_sort = int(sys.argv[2]) if len(sys.argv) > 2 else 26
    dev = torch.device("cuda")
    print("BASELINE device", torch.cuda.get_device_name(0).replace(" ", "_"), "name")
    n = 1 << log2_scan
    x = torch.randint(0, 4, (n,), device=dev, dtype=torch.int32)
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x))
    print(f"BASELINE copy_gbs {2 * n * 4 / (ms * 1e-3) / 1e9:.1f} GB/s")
    ms = median_ms(lambda: torch.cumsum(x, 0, dtype=torch.int32, out=y))
    print(f"BASELINE cumsum_ms {ms:.4f} ms")
    print(f"BASELINE cumsum_gbs {2 * n * 4 / (ms * 1e-3) / 1e9:.1f} GB/s")
    del x, y
    torch.cuda.empty_cache()
    n = 1 << log2_sort
    keys = torch.randint(-2**31, 2**31 - 1, (n,), device=dev, dtype=torch.int32)
    vals = torch.arange(n, device=dev, dtype=torch.int32)
    s, i = torch.sort(keys)
    assert bool((s[1:] >= s[:-1]).all())
    ms = median_ms(lambda: torch.sort(keys))
    print(f"BASELINE sort_ms {ms:.4f} ms")

    def kv():
        s, i = torch.sort(keys)
        return vals[i]
    ms = median_ms(kv)
    print(f"BASELINE sort_kv_ms {ms:.4f} ms")


if __name__ == "__main__":
    main()
