"""What the PyTorch baselines of bench/gpu/ share: device times by CUDA events,
wall times per call by the clock around batches of calls.

    from cuda_timing import median_ms, wall_s   (the scripts run from bench/gpu/ or beside it)
"""
import time

import torch


def median_ms(fn, reps=20, warmup=3):
    """The median time of reps calls of fn, in ms, each between two CUDA events
    (after warmup calls and a synchronize); the upper middle for an even reps."""
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


def wall_s(fn, reps, batch=10, warmup=1):
    """The median wall time per call of fn, in s, over reps batches of batch calls, each
    batch from its first call to torch.cuda.synchronize() after its last (after warmup
    calls and a synchronize); the upper middle for an even reps."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / batch)
    times.sort()
    return times[len(times) // 2]
