"""Vendor baselines on the GPU machine, timed with CUDA events.

Prints one line per measurement, `BASELINE name value unit`, for
bench/gpu/report.lua to put beside luagpu's figures:
  torch.sum over 2^20 and 2^28 float32 (GB/s and microseconds),
  cuBLAS SGEMM through torch.matmul with TF32 off (TFLOP/s) at the sizes given,
  device-to-device copy bandwidth (GB/s),
  and on the wall clock (what a user waits for; medians of 50, time.perf_counter):
  `x.sum().item()` over 2^20 and 2^28 floats, `A @ B; torch.cuda.synchronize()`
  at 256, 1024 and 4096, and the enqueue alone of each.
Usage: python3 torch_baseline.py [M,N,K ...]
"""
import sys
import time

import torch

from cuda_timing import median_ms


torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def wall_us(fn, reps=50, warmup=5, settle=None):
    """Median wall-clock microseconds of fn() (which must block), or of fn()
    alone with settle() after each, outside the time."""
    for _ in range(warmup):
        fn()
        if settle:
            settle()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if settle:
            settle()
    times.sort()
    return times[len(times) // 2] * 1e6


def wall_clock(dev):
    for log2n in (20, 28):
        x = torch.rand(1 << log2n, device=dev, dtype=torch.float32)
        print(f"BASELINE wall_sum_2^{log2n}_us {wall_us(lambda: x.sum().item()):.2f} us")
        print(f"BASELINE enqueue_sum_2^{log2n}_us "
              f"{wall_us(lambda: x.sum(), settle=torch.cuda.synchronize):.2f} us")
        del x
    for n in (256, 1024, 4096):
        a = torch.rand(n, n, device=dev, dtype=torch.float32)
        b = torch.rand(n, n, device=dev, dtype=torch.float32)
        c = torch.empty(n, n, device=dev, dtype=torch.float32)

        def mm():
            torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
        print(f"BASELINE wall_mm_{n}_us {wall_us(mm):.2f} us")
        print(f"BASELINE enqueue_mm_{n}_us "
              f"{wall_us(lambda: torch.matmul(a, b, out=c), settle=torch.cuda.synchronize):.2f} us")
        del a, b, c


def main():
    dev = torch.device("cuda")
    print("BASELINE device", torch.cuda.get_device_name(0).replace(" ", "_"), "name")
    wall_clock(dev)
    for log2n in (20, 28):
        n = 1 << log2n
        x = torch.rand(n, device=dev, dtype=torch.float32)
        ref = x.double().sum().item()
        got = torch.sum(x).item()
        assert abs(got - ref) <= 1e-4 * abs(ref), (got, ref)
        ms = median_ms(lambda: torch.sum(x))
        print(f"BASELINE sum_2^{log2n}_us {ms * 1e3:.2f} us")
        print(f"BASELINE sum_2^{log2n}_gbs {n * 4 / (ms * 1e-3) / 1e9:.1f} GB/s")
        del x
    n = 1 << 28
    a = torch.rand(n, device=dev, dtype=torch.float32)
    b = torch.empty_like(a)
    ms = median_ms(lambda: b.copy_(a))
    print(f"BASELINE copy_gbs {2 * n * 4 / (ms * 1e-3) / 1e9:.1f} GB/s")
    del a, b
    sizes = sys.argv[1:] or ["1024,1024,1024", "2048,2048,2048", "4096,4096,4096",
                             "8192,8192,8192", "4095,4095,4095", "4097,4097,4097", "8193,8193,8193",
                             "3000,5000,1000"]
    for s in sizes:
        m, n, k = (int(v) for v in s.split(","))
        a = torch.rand(m, k, device=dev, dtype=torch.float32)
        b = torch.rand(k, n, device=dev, dtype=torch.float32)
        c = torch.matmul(a, b)
        ref = (a[:64].double() @ b.double())
        err = ((c[:64].double() - ref).abs().max() / ref.abs().max()).item()
        assert err < 1e-4, err
        ms = median_ms(lambda: torch.matmul(a, b, out=c), reps=10)
        print(f"BASELINE sgemm_{m}x{n}x{k}_tflops {2 * m * n * k / (ms * 1e-3) / 1e12:.2f} TFLOP/s")
        del a, b, c
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
