"""Vendor baselines on the GPU machine, timed with CUDA events.

Prints one line per measurement, `BASELINE name value unit`, for
bench/gpu/report.lua to put beside luagpu's figures:
  torch.sum over 2^20 and 2^28 float32 (GB/s and microseconds),
  cuBLAS SGEMM through torch.matmul with TF32 off (TFLOP/s) at the sizes given,
  device-to-device copy bandwidth (GB/s).
Usage: python3 torch_baseline.py [M,N,K ...]
"""
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
REPS = 20


def median_ms(fn, reps=REPS, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    print("BASELINE device", torch.cuda.get_device_name(0).replace(" ", "_"), "name")
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
