#!/usr/bin/env python3
"""Times torch.distributed's NCCL all-reduce over the sizes of `baracuda bench -nccl`.

Starts one process per GPU (torch.multiprocessing, the NCCL backend, rendezvous
through a file), all-reduces (sum, f32, in place) 1 MiB, 2 MiB, ..., 1 GiB of
zeros, and prints one JSON object per line as `baracuda bench -nccl -json` does:
first {"device", "ranks", "layout", "torch", "nccl", "nvls_enable"}, then per
size {"case", "bytes", "ranks", "us", "algbw_gbps", "busbw_gbps"}. Each size is
5 warm-up all-reduces, then `--iters` back to back between CUDA events on the
current stream; the time per all-reduce is the slowest rank's. Bus bandwidth is
nccl-tests': bytes / time * 2(n-1)/n for n ranks.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0) unless that variable is set, as
in `baracuda bench -nccl`.

usage: python3 bench/torch_nccl.py [--procs N] [--iters 20] [substring-filter]
"""
import argparse
import json
import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [(1 << 20) << k for k in range(11)]  # 1 MiB .. 1 GiB


def case_name(nbytes):
    return f"nccl/allreduce/sum/f32/{nbytes}"


def worker(rank, nranks, init_file, sizes, iters):
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank,
                            world_size=nranks, device_id=dev)
    if rank == 0:
        print(json.dumps({"device": torch.cuda.get_device_name(dev), "ranks": nranks,
                          "layout": f"{nranks} processes (torch.distributed)",
                          "torch": torch.__version__,
                          "nccl": ".".join(str(x) for x in torch.cuda.nccl.version()),
                          "nvls_enable": os.environ.get("NCCL_NVLS_ENABLE", "")}), flush=True)
    buf = torch.zeros(max(sizes) // 4, dtype=torch.float32, device=dev)
    for nbytes in sizes:
        t = buf[: nbytes // 4]
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_reduce(t)
        end.record()
        end.synchronize()
        us = torch.tensor([start.elapsed_time(end) * 1e3 / iters], dtype=torch.float64, device=dev)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        us = us.item()
        t.zero_()
        if rank == 0:
            alg = nbytes / us / 1e3
            print(json.dumps({"case": case_name(nbytes), "bytes": nbytes, "ranks": nranks,
                              "us": round(us, 2), "algbw_gbps": round(alg, 2),
                              "busbw_gbps": round(alg * 2 * (nranks - 1) / nranks, 2)}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=0, help="processes (GPUs); 0: every visible GPU")
    ap.add_argument("--iters", type=int, default=20, help="timed all-reduces per size")
    ap.add_argument("filter", nargs="?", default="", help="run only the sizes whose case name contains this")
    args = ap.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    nranks = args.procs or torch.cuda.device_count()
    if nranks < 2:
        raise SystemExit(f"torch_nccl.py: {nranks} GPU(s); an all-reduce benchmark needs 2 or more")
    sizes = [s for s in SIZES if args.filter in case_name(s)]
    if not sizes:
        raise SystemExit(f"torch_nccl.py: no size matches {args.filter!r}")
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(nranks, os.path.join(d, "rendezvous"), sizes, args.iters),
                 nprocs=nranks, join=True)


if __name__ == "__main__":
    main()
