#!/usr/bin/env python3
"""Times PyTorch's own backward for every benchmark case of baracuda-go.

Prints one JSON object per line: {"case", "op", "dtype", "us", "gbps"}, with the
same case names and the same minimal-traffic model as `baracuda bench`
(bench/README.md). Only the backward is timed: the forward graph is built once
and torch.autograd.grad replays it with retain_graph=True. Gradients PyTorch
returns as broadcast (stride-0) views are made contiguous inside the timed
region, because baracuda writes a dense dx.

usage: python3 bench/torch_ref.py [substring-filter]
       python3 bench/torch_ref.py --sweep [substring-filter]

With --sweep it times the sweep cases of `baracuda bench -sweep` instead: one op
of each family over sizes from 2^10 to 2^26 elements, each as back-to-back
backward calls waited for once (host work included, as a training loop sees
them), and prints {"case", "n", "torch_us"}.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "hypot", "lerp"]
REDUCE = ["sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"]
SCAN = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


# Every timed run is queued behind a write of a 256 MiB scratch buffer and a
# spin of about half a millisecond, exactly as `baracuda bench` queues its
# runs behind the same write: caches start cold, and autograd's host work
# is done while the GPU is still busy, so the events bracket PyTorch's GPU
# time alone (its kernels and the gaps between them).
FLUSH_BYTES = 256 << 20
SPIN_CYCLES = 1_000_000
_flush = None


def median_us(fn, iters=20, warmup=3):
    global _flush
    if _flush is None:
        _flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for i in range(iters):
        begin = torch.cuda.Event(enable_timing=True)
        finish = torch.cuda.Event(enable_timing=True)
        _flush.fill_(i & 0xFF)
        torch.cuda._sleep(SPIN_CYCLES)
        begin.record()
        fn()
        finish.record()
        finish.synchronize()
        samples.append(begin.elapsed_time(finish) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def backward_of(out, leaves, dense=False):
    grad_out = torch.randn_like(out)

    def step():
        grads = torch.autograd.grad(out, leaves, grad_out, retain_graph=True)
        if dense:
            grads = [g.contiguous() for g in grads]
        return grads

    return step


def positive(n, dt):
    return (torch.randn(n, device="cuda", dtype=dt).abs() + 0.5).requires_grad_()


def binary_case(op, dt):
    n = 1 << 24
    a, b = positive(n, dt), positive(n, dt)
    forward = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
        "maximum": lambda: torch.maximum(a, b), "minimum": lambda: torch.minimum(a, b),
        "pow": lambda: a.pow(b), "atan2": lambda: torch.atan2(a, b), "hypot": lambda: torch.hypot(a, b),
        "lerp": lambda: torch.lerp(a, b, 0.3),
    }[op]
    elems = 3 * n if op in ("add", "sub", "lerp") else 5 * n
    return backward_of(forward(), (a, b)), elems


def reduce_case(op, dt, axis):
    shape = (4096, 4096)
    x = torch.randn(*shape, device="cuda", dtype=dt)
    if op == "prod":
        x = 1.0 + 0.001 * x  # values near 1 (bench/README.md): the product stays finite
    x.requires_grad_()
    forward = {
        "sum": lambda: x.sum(axis, keepdim=True), "mean": lambda: x.mean(axis, keepdim=True),
        "max": lambda: x.amax(axis, keepdim=True), "min": lambda: x.amin(axis, keepdim=True),
        "prod": lambda: x.prod(axis, keepdim=True),
        "norm2": lambda: torch.linalg.vector_norm(x, 2, dim=axis, keepdim=True),
        "logsumexp": lambda: torch.logsumexp(x, axis, keepdim=True),
        "var": lambda: x.var(axis, keepdim=True), "std": lambda: x.std(axis, keepdim=True),
    }[op]
    out = forward()
    n, m = x.numel(), out.numel()
    elems = n + m if op in ("sum", "mean") else 2 * n + 2 * m
    return backward_of(out, (x,), dense=True), elems


def scan_case(op, dt, axis):
    x = torch.randn(4096, 4096, device="cuda", dtype=dt)
    if op == "cumprod":
        x = 1.0 + 0.001 * x
    x.requires_grad_()
    forward = {
        "cumsum": lambda: x.cumsum(axis), "cumprod": lambda: x.cumprod(axis),
        "cummax": lambda: x.cummax(axis)[0], "cummin": lambda: x.cummin(axis)[0],
        "logcumsumexp": lambda: torch.logcumsumexp(x, axis),
    }[op]
    per = {"cumsum": 2, "cummax": 3, "cummin": 3, "cumprod": 4, "logcumsumexp": 4}[op]
    return backward_of(forward(), (x,)), per * x.numel()


def lppool_case(dims, dt, shape, k, s):
    x = torch.randn(*shape, device="cuda", dtype=dt).requires_grad_()
    out = F.lp_pool2d(x, 2.0, k, s) if dims == 2 else F.lp_pool1d(x, 2.0, k, s)
    return backward_of(out, (x,)), 2 * x.numel() + 2 * out.numel()


def all_cases():
    for dt in ("f32", "bf16", "f16", "f64"):
        for op in BINARY:
            yield f"binary/{op}/{dt}/n{1 << 24}", op, dt, lambda op=op, dt=dt: binary_case(op, DTYPES[dt])
    for dt in ("f32", "bf16"):
        for axis in (1, 0):
            for op in REDUCE:
                yield (f"reduce/{op}/{dt}/4096x4096/axis{axis}", op, dt,
                       lambda op=op, dt=dt, axis=axis: reduce_case(op, DTYPES[dt], axis))
            for op in SCAN:
                yield (f"scan/{op}/{dt}/4096x4096/axis{axis}", op, dt,
                       lambda op=op, dt=dt, axis=axis: scan_case(op, DTYPES[dt], axis))
        for k in (2, 3):
            yield (f"lppool2d/p2/{dt}/32x64x128x128/k{k}s2", "lppool2d", dt,
                   lambda dt=dt, k=k: lppool_case(2, DTYPES[dt], (32, 64, 128, 128), k, 2))
        yield (f"lppool1d/p2/{dt}/64x256x4096/k4s4", "lppool1d", dt,
               lambda dt=dt: lppool_case(1, DTYPES[dt], (64, 256, 4096), 4, 4))


SWEEP_ITERS = 200


def back_to_back_us(fn, iters=SWEEP_ITERS):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e6


def sweep_cases():
    dt = torch.float32
    for p in range(10, 27, 2):
        n = 1 << p
        rows = n // 256

        def binary(n=n):
            a, b = positive(n, dt), positive(n, dt)
            return backward_of(a * b, (a, b))

        def reduce(rows=rows):
            x = torch.randn(rows, 256, device="cuda", dtype=dt).requires_grad_()
            return backward_of(x.sum(1), (x,), dense=True)

        def scan(rows=rows):
            x = torch.randn(rows, 256, device="cuda", dtype=dt).requires_grad_()
            return backward_of(x.cumsum(1), (x,))

        def pool(n=n):
            x = torch.randn(1, n // 1024, 32, 32, device="cuda", dtype=dt).requires_grad_()
            return backward_of(F.lp_pool2d(x, 2.0, 2, 2), (x,))

        yield f"sweep/binary/mul/f32/n{n}", n, binary
        yield f"sweep/reduce/sum/f32/{rows}x256/axis1", n, reduce
        yield f"sweep/scan/cumsum/f32/{rows}x256/axis1", n, scan
        yield f"sweep/lppool2d/p2/f32/1x{n // 1024}x32x32/k2s2", n, pool


def sweep_main(pattern):
    for name, n, build in sweep_cases():
        if pattern not in name:
            continue
        row = {"case": name, "n": n}
        try:
            row["torch_us"] = round(back_to_back_us(build()), 2)
        except Exception as exc:
            row["error"] = str(exc)[:200]
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--sweep":
        torch.manual_seed(0)
        sweep_main(sys.argv[2] if len(sys.argv) > 2 else "")
        return
    pattern = sys.argv[1] if len(sys.argv) > 1 else ""
    torch.manual_seed(0)
    for name, op, dt, build in all_cases():
        if pattern not in name:
            continue
        row = {"case": name, "op": op, "dtype": dt}
        try:
            step, elems = build()
            us = median_us(step)
            size = torch.tensor([], dtype=DTYPES[dt]).element_size()
            row.update(us=round(us, 2), gbps=round(elems * size / us / 1e3, 1))
        except Exception as exc:  # an op PyTorch lacks for a dtype is reported, not fatal
            row["error"] = str(exc)[:200]
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
