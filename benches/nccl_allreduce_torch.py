"""Reference for examples/nccl_data_parallel.rs: NCCL all-reduce bandwidth through PyTorch on the
same machine, in the same table format (sum, f32, in place, 5 warm-up and 20 timed calls, one
process per GPU; busbw = algbw * 2 (n - 1) / n as nccl-tests reports it).

Usage: python3 benches/nccl_allreduce_torch.py [MAX_GPUS]
"""
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES_MIB = [1, 16, 64, 256, 1024]


def worker(rank, world, init_file, queue):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world)
    for mib in SIZES_MIB:
        buf = torch.zeros(mib * (1 << 20) // 4, dtype=torch.float32, device="cuda")
        for _ in range(5):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(20):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) / 20
        times = [None] * world
        dist.all_gather_object(times, t)
        if rank == 0:
            worst = max(times)
            algbw = mib * (1 << 20) / worst / 1e9
            queue.put((world, mib, worst * 1e6, algbw, algbw * 2 * (world - 1) / world))
    dist.destroy_process_group()


def main():
    gpus = torch.cuda.device_count()
    if len(sys.argv) > 1:
        gpus = min(gpus, int(sys.argv[1]))
    print("PyTorch", torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))
    print("| GPUs | size | time us | algbw GB/s | busbw GB/s |")
    print("|---|---|---|---|---|")
    ctx = mp.get_context("spawn")
    world = 2
    while world <= gpus:
        queue = ctx.Queue()
        with tempfile.TemporaryDirectory() as d:
            procs = [ctx.Process(target=worker, args=(r, world, os.path.join(d, "init"), queue)) for r in range(world)]
            for p in procs:
                p.start()
            for _ in SIZES_MIB:
                w, mib, us, algbw, busbw = queue.get()
                print(f"| {w} | {mib} MiB | {us:.1f} | {algbw:.1f} | {busbw:.1f} |", flush=True)
            for p in procs:
                p.join()
        world *= 2


if __name__ == "__main__":
    main()
