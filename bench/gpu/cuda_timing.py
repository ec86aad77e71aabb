"""What the PyTorch baselines of bench/gpu/ share: device times by CUDA events.

    from cuda_timing import median_ms     (the scripts run from bench/gpu/ or beside it)
"""
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
