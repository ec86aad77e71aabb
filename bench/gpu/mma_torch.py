"""cuBLAS baselines for bench/gpu/mma.lua (issue 15), timed with CUDA events.

Prints `BASELINE key value unit` lines (medians of 20 after warm-up):
  fp32_N_ms    torch.matmul of N x N float32, TF32 off (cuBLAS SGEMM)
  tf32_N_ms    the same with torch.backends.cuda.matmul.allow_tf32 = True
  fp32_err / tf32_err   largest |C - R| / (|A| |B|) over the elements of a
               4096^3 product of uniform [-1, 1] inputs, R in float64
Usage: python3 mma_torch.py [N,N,...]
"""
import sys

import torch

from cuda_timing import median_ms


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "4096,8192").split(",")]
    dev = torch.device("cuda")
    print("BASELINE device", torch.cuda.get_device_name(0).replace(" ", "_"), "name")
    for n in sizes:
        a = torch.rand(n, n, device=dev) * 2 - 1
        b = torch.rand(n, n, device=dev) * 2 - 1
        c = torch.empty(n, n, device=dev)
        for mode, tf32 in (("fp32", False), ("tf32", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ms = median_ms(lambda: torch.matmul(a, b, out=c))
            print(f"BASELINE {mode}_{n}_ms {ms:.4f} ms")
            print(f"BASELINE {mode}_{n}_tflops {2 * n ** 3 / (ms * 1e-3) / 1e12:.2f} TFLOP/s")
        del a, b, c
    n = 4096
    a = torch.rand(n, n, device=dev) * 2 - 1
    b = torch.rand(n, n, device=dev) * 2 - 1
    ref = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    for mode, tf32 in (("fp32", False), ("tf32", True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        c = (a @ b).double()
        err = ((c - ref).abs() / scale).max().item()
        print(f"BASELINE {mode}_err {err:.3e} rel")
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
