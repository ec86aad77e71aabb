"""bench/gpu/nccl_allreduce.py: the baseline of bench/gpu/mpi_allreduce.lua.

torch.distributed's all_reduce (sum) of float32 tensors on each rank's own
GPU (backend nccl), at the same sizes and with the same columns: the median
over REPS of the slowest rank's wall time (CUDA synchronized), algbw =
bytes / time, busbw = algbw * 2 (n - 1) / n. Also, through gloo on the host
(torch's own host-staged path): all_reduce of CPU tensors alone ("gloo
host"), and the copy to the host, gloo's all_reduce and the copy back
("gloo staged"), for where a host-staged allreduce's time goes.

    python3 bench/gpu/nccl_allreduce.py [LOG2_SIZES [REPS [NPROCS]]]

One process per GPU (python multiprocessing; torchrun is not needed).
Rank 0 prints the table and writes it to $OUT/nccl_allreduce.txt when OUT
is set. NO_GLOO=1 leaves the gloo rows out.
"""
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def timed(fn, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        dist.barrier(group=worker.gloo)
        t0 = time.perf_counter()
        fn()
        sync()
        t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=worker.gloo)   # the slowest rank's
        times.append(t.item())
    return statistics.median(times)


def worker(rank, size, port, logs, reps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=size)
    worker.gloo = dist.new_group(backend="gloo")
    dev = torch.device("cuda", rank)
    sync = torch.cuda.synchronize
    lines = []

    def out(s):
        if rank == 0:
            print(s, flush=True)
            lines.append(s)

    names = [None] * size
    dist.all_gather_object(names, torch.cuda.get_device_name(dev), group=worker.gloo)
    for r, name in enumerate(names):
        out(f"# rank {r}: {name}")
    v = torch.cuda.nccl.version()
    v = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    out(f"# torch {torch.__version__}, nccl {v}, "
        f"{size} processes, float sum, median of {reps}; busbw = algbw * 2(n-1)/n")
    out(f"{'method':<16} {'floats':>10} {'MiB':>8} {'time_ms':>10} {'algbw_GB/s':>10} "
        f"{'busbw_GB/s':>10}")

    def row(method, n, s):
        algbw = n * 4 / s / 1e9
        out(f"{method:<16} {n:>10} {n * 4 / 2**20:>8.1f} {s * 1e3:>10.3f} {algbw:>10.2f} "
            f"{algbw * 2 * (size - 1) / size:>10.2f}")

    for lg in logs:
        n = 1 << lg
        x = torch.full((n,), float(rank + 1), device=dev)
        row("nccl", n, timed(lambda: dist.all_reduce(x), reps, sync))
        del x
        if not os.environ.get("NO_GLOO"):
            h = torch.full((n,), float(rank + 1))
            row("gloo host", n, timed(lambda: dist.all_reduce(h, group=worker.gloo), reps, sync))
            x = torch.full((n,), float(rank + 1), device=dev)

            def staged():
                c = x.cpu()
                dist.all_reduce(c, group=worker.gloo)
                x.copy_(c)
            row("gloo staged", n, timed(staged, reps, sync))
            del x, h
        torch.cuda.empty_cache()
    dist.barrier(group=worker.gloo)
    if rank == 0:
        d = os.environ.get("OUT")
        if d:
            with open(os.path.join(d, "nccl_allreduce.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


def main():
    logs = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "20,22,24,26,28").split(",")]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    if torch.cuda.device_count() < size:
        sys.exit(f"nccl_allreduce.py: {size} GPUs needed, {torch.cuda.device_count()} found")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(size, port, logs, reps), nprocs=size, join=True)


if __name__ == "__main__":
    main()
