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
       python3 bench/torch_ref.py --shapes [substring-filter]

With --sweep it times the sweep cases of `baracuda bench -sweep` instead: one op
of each family over sizes from 2^10 to 2^26 elements, each as back-to-back
backward calls waited for once (host work included, as a training loop sees
them), and prints {"case", "n", "torch_us"}.

With --shapes it times the cases of `baracuda bench -shapes` (bench/README.md,
"Shapes and data"): every reduce and scan op over seven (shape, axis) layouts of
2^24 elements with normal, grid and clamp data, timed as the default cases, and
prints {"case", "op", "dtype", "data", "us", "gbps"}. A case whose first call
takes over 20 ms is timed over 3 calls instead of 20.
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

# With adaptive timing, a case whose first warm-up call takes longer than
# this is timed over SLOW_ITERS calls, the rest of its warm-up skipped.
SLOW_SECONDS = 0.020
SLOW_ITERS = 3


def median_us(fn, iters=20, warmup=3, adaptive=False):
    global _flush
    if _flush is None:
        _flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    if adaptive:
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        warmup -= 1
        if time.perf_counter() - start > SLOW_SECONDS:
            iters, warmup = SLOW_ITERS, 0
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


# Broadcast cases: dy and a of [8192, 4096], b of [4096], [8192, 1] or 0-d
# (named by b's shape). PyTorch's backward is the elementwise gradient, then
# sum_to_size of b's gradient to b's shape.
# Shapes go to torch.randn as one tuple: randn(*()) would pass no size at
# all, which randn rejects, where randn(()) makes a 0-d tensor.
BCAST_SHAPES = {"b4096": (4096,), "b8192x1": (8192, 1), "b0d": ()}


def bcast_case(op, dt, bname):
    shape, bshape = (8192, 4096), BCAST_SHAPES[bname]
    a = (torch.randn(tuple(shape), device="cuda", dtype=dt).abs() + 0.5).requires_grad_()
    b = (torch.randn(tuple(bshape), device="cuda", dtype=dt).abs() + 0.5).requires_grad_()
    out = a * b if op == "mul" else a + b
    n, m = a.numel(), b.numel()
    elems = 3 * n + 2 * m if op == "mul" else 2 * n + m
    return backward_of(out, (a, b)), elems


# The forwards, as (x, axis) -> y; reductions keep the axis as 1.
REDUCE_FORWARD = {
    "sum": lambda x, a: x.sum(a, keepdim=True), "mean": lambda x, a: x.mean(a, keepdim=True),
    "max": lambda x, a: x.amax(a, keepdim=True), "min": lambda x, a: x.amin(a, keepdim=True),
    "prod": lambda x, a: x.prod(a, keepdim=True),
    "norm2": lambda x, a: torch.linalg.vector_norm(x, 2, dim=a, keepdim=True),
    "logsumexp": lambda x, a: torch.logsumexp(x, a, keepdim=True),
    "var": lambda x, a: x.var(a, keepdim=True), "std": lambda x, a: x.std(a, keepdim=True),
}
SCAN_FORWARD = {
    "cumsum": lambda x, a: x.cumsum(a), "cumprod": lambda x, a: x.cumprod(a),
    "cummax": lambda x, a: x.cummax(a)[0], "cummin": lambda x, a: x.cummin(a)[0],
    "logcumsumexp": lambda x, a: torch.logcumsumexp(x, a),
}
SCAN_PER = {"cumsum": 2, "cummax": 3, "cummin": 3, "cumprod": 4, "logcumsumexp": 4}


def reduce_backward(op, x, axis):
    """The backward of reduction op over x (requiring grad), and its traffic."""
    out = REDUCE_FORWARD[op](x, axis)
    n, m = x.numel(), out.numel()
    elems = n + m if op in ("sum", "mean") else 2 * n + 2 * m
    return backward_of(out, (x,), dense=True), elems


def scan_backward(op, x, axis):
    """The backward of scan op over x (requiring grad), and its traffic."""
    return backward_of(SCAN_FORWARD[op](x, axis), (x,)), SCAN_PER[op] * x.numel()


def reduce_case(op, dt, axis):
    x = torch.randn(4096, 4096, device="cuda", dtype=dt)
    if op == "prod":
        x = 1.0 + 0.001 * x  # values near 1 (bench/README.md): the product stays finite
    return reduce_backward(op, x.requires_grad_(), axis)


# Reductions over several axes (bench/README.md): x.sum(dims), x.mean(dims),
# x.var(dims), x.amax(dims) with keepdim, backward timed as the other cases.
AXES_SHAPES = (((32, 256, 56, 56), (0, 2, 3)), ((256, 2048, 7, 7), (0, 2, 3)), ((64, 128, 64, 64), (2, 3)))
AXES_OPS = ("sum", "mean", "var", "max")


def reduce_axes_case(op, dt, shape, axes):
    x = torch.randn(*shape, device="cuda", dtype=dt)
    return reduce_backward(op, x.requires_grad_(), axes)


def scan_case(op, dt, axis):
    x = torch.randn(4096, 4096, device="cuda", dtype=dt)
    if op == "cumprod":
        x = 1.0 + 0.001 * x
    return scan_backward(op, x.requires_grad_(), axis)


def lppool_case(dims, dt, shape, k, s):
    x = torch.randn(tuple(shape), device="cuda", dtype=dt).requires_grad_()
    out = F.lp_pool2d(x, 2.0, k, s) if dims == 2 else F.lp_pool1d(x, 2.0, k, s)
    return backward_of(out, (x,)), 2 * x.numel() + 2 * out.numel()


def all_cases():
    for dt in ("f32", "bf16", "f16", "f64"):
        for op in BINARY:
            yield f"binary/{op}/{dt}/n{1 << 24}", op, dt, lambda op=op, dt=dt: binary_case(op, DTYPES[dt])
    for dt in ("f32", "bf16"):
        for op in ("mul", "add"):
            for bname in BCAST_SHAPES:
                yield (f"bcast/{op}/{dt}/8192x4096/{bname}", op, dt,
                       lambda op=op, dt=dt, bname=bname: bcast_case(op, DTYPES[dt], bname))
    for dt in ("f32", "bf16"):
        for axis in (1, 0):
            for op in REDUCE:
                yield (f"reduce/{op}/{dt}/4096x4096/axis{axis}", op, dt,
                       lambda op=op, dt=dt, axis=axis: reduce_case(op, DTYPES[dt], axis))
            for op in SCAN:
                yield (f"scan/{op}/{dt}/4096x4096/axis{axis}", op, dt,
                       lambda op=op, dt=dt, axis=axis: scan_case(op, DTYPES[dt], axis))
        for shape, axes in AXES_SHAPES:
            for op in AXES_OPS:
                name = "x".join(map(str, shape)) + "/axes" + ",".join(map(str, axes))
                yield (f"reduce/{op}/{dt}/{name}", op, dt,
                       lambda op=op, dt=dt, shape=shape, axes=axes: reduce_axes_case(op, DTYPES[dt], shape, axes))
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


# The shapes set of `baracuda bench -shapes`, in its order: (shape, axis)
# layouts of 2^24 elements, and the kinds of data.
SHAPES_LAYOUTS = [((1 << 24,), 0), ((4, 1 << 22), 1), ((1 << 22, 4), 0), ((1 << 22, 4), 1),
                  ((4, 1 << 22), 0), ((4096, 4096), 0), ((4096, 4096), 1)]
SHAPES_DATA = ["normal", "grid", "clamp"]


def shapes_x(op, dt, shape, axis, data):
    """x of a shapes case, made as `baracuda bench -shapes` makes it.

    normal is N(0,1); grid is N(0,1) rounded to multiples of 1/8; clamp clamps
    each slice at the value a sort puts at index floor(0.9*(k-1)), so that at
    least 10% of every slice equals its max. prod and cumprod take 1 + 0.001*v
    for those v (normal, grid) and, for clamp, the normal ones with positions
    j % 10 == 3 of every slice set to 0.
    """
    v = torch.randn(tuple(shape), device="cuda", dtype=torch.float32)
    if data == "grid":
        v = torch.round(v * 8) / 8
    k = shape[axis]
    if op in ("prod", "cumprod"):
        x = (1.0 + 0.001 * v).to(dt)
        if data == "clamp":
            view = [1] * len(shape)
            view[axis] = k
            zero = (torch.arange(k, device="cuda") % 10 == 3).view(view)
            x = x.masked_fill(zero, 0)
        return x
    x = v.to(dt)
    if data == "clamp":
        q = x.sort(dim=axis).values.narrow(axis, 9 * (k - 1) // 10, 1)
        x = torch.minimum(x, q)
    return x


def shapes_cases():
    for dt in ("f32", "bf16"):
        for shape, axis in SHAPES_LAYOUTS:
            for data in SHAPES_DATA:
                for family, names in (("reduce", REDUCE), ("scan", SCAN)):
                    for op in names:
                        name = f"shapes/{family}/{op}/{dt}/{'x'.join(map(str, shape))}/axis{axis}/{data}"
                        yield name, family, op, dt, shape, axis, data


def shapes_main(pattern):
    for name, family, op, dt, shape, axis, data in shapes_cases():
        if pattern not in name:
            continue
        row = {"case": name, "op": op, "dtype": dt, "data": data}
        try:
            x = shapes_x(op, DTYPES[dt], shape, axis, data).requires_grad_()
            backward = reduce_backward if family == "reduce" else scan_backward
            step, elems = backward(op, x, axis)
            us = median_us(step, adaptive=True)
            size = torch.tensor([], dtype=DTYPES[dt]).element_size()
            row.update(us=round(us, 2), gbps=round(elems * size / us / 1e3, 1))
        except Exception as exc:
            row["error"] = str(exc)[:200]
        print(json.dumps(row), flush=True)
        x = step = None
        torch.cuda.empty_cache()


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--sweep", "--shapes"):
        torch.manual_seed(0)
        run = sweep_main if sys.argv[1] == "--sweep" else shapes_main
        run(sys.argv[2] if len(sys.argv) > 2 else "")
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
