#!/usr/bin/env python3
"""Writes baracuda-go's PyTorch test vectors (internal/torchvec).

For every (family, op, dtype) the library supports, it builds small tensors of
adversarial values (NaN and infinities in random places, -inf runs, ties,
signed zeros, one and several zeros, subnormals, magnitudes near the dtype's
largest value), runs PyTorch's forward and autograd's backward on them, and
writes inputs, the saved forward output and the gradients as one JSON file in
the format internal/torchvec/torchvec.go documents: each tensor as the dtype's
bit patterns in hex, PyTorch's version and the device in the header.

    usage: python3 scripts/torch_vectors.py [--out PATH] [--seed N] [--device cuda|cpu]
                                            [--skip-unsupported]

By default it writes internal/torchvec/vectors/torch_vectors.json of the
repository it sits in, which the tests embed. It uses
CUDA where torch.cuda.is_available(), else the CPU (the file records which).
The inputs depend only on the seed (Python's random module seeded per case),
so a rerun with the same seed, PyTorch and device writes the same file.

Each case also runs in float64 from the same rounded inputs; where PyTorch's
gradient in the dtype differs from that one (rounded to the dtype) in kind
(NaN, +-inf, zero, finite) or by more than two epsilons of the dtype, the
float64 value is kept in the case's "alt" entry, and the float64 forward
output, which produced it, in "y64": there PyTorch's answer depends on where
it rounds between the ops of its formula, and the library, which rounds once,
may give either.

How the library's ops map to PyTorch (docs/semantics.md):
  binary  add/sub: torch.add/sub(a, b, alpha=alpha); mul, div, maximum,
          minimum, pow (tensor exponent), atan2, hypot; lerp: torch.lerp(a, b, w)
  reduce  sum, mean, amax, amin, prod, linalg.vector_norm(x, 2), logsumexp,
          var/std(correction=c), each along one axis with keepdim
  scan    cumsum, cumprod, cummax(x)[0], cummin(x)[0], logcumsumexp; reverse
          is flip(op(flip(x)))
  lppool  F.lp_pool1d / F.lp_pool2d(x, p, kernel, stride, ceil_mode)
prod's zeros and the values whose y/x loses what a product of the others
keeps (inf, NaN, products that over- or underflow) go in separate tensors:
PyTorch chooses prod's formula for the whole tensor (any zero anywhere: the
product of the others for every slice), the library per slice.
"""
import argparse
import json
import math
import os
import random
import sys
import warnings

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
HEX_DIGITS = {torch.float32: 8, torch.float16: 4, torch.bfloat16: 4, torch.float64: 16}
INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16,
            torch.float64: torch.int64}
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "hypot", "lerp"]
REDUCE = ["sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"]
SCAN = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
LP_PS = [1.0, 2.0, 3.0, 0.5, 1.5]
DEFAULT_OUT = "internal/torchvec/vectors/torch_vectors.json"
nan, inf = math.nan, math.inf


class Unsupported(Exception):
    """A case PyTorch cannot run here (an op missing for a dtype or device)."""


class Range:
    """The dtype's landmarks: largest finite, smallest normal and subnormal."""

    def __init__(self, dt):
        fi = torch.finfo(dt)
        self.max, self.tiny, self.eps = fi.max, fi.tiny, fi.eps
        self.sub = fi.tiny * fi.eps


def hexbits(t):
    """The tensor's elements (row-major) as fixed-width hex bit patterns."""
    t = t.detach().contiguous().cpu().reshape(-1)
    w = HEX_DIGITS[t.dtype]
    mask = (1 << (4 * w)) - 1
    return "".join(format(v & mask, "0%dx" % w) for v in t.view(INT_VIEW[t.dtype]).tolist())


def kind(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return "zero" if v == 0 else "finite"


def alt_entry(g, g64):
    """Indices where g (the dtype's gradient) and g64 (float64's, rounded to
    the dtype) differ in kind or by more than two epsilons of the dtype,
    relative, and g64 there."""
    a = g.detach().double().cpu().reshape(-1).tolist()
    b64 = g64.detach().to(g.dtype)
    b = b64.double().cpu().reshape(-1).tolist()
    tol = 2 * torch.finfo(g.dtype).eps
    idx = [i for i, (u, v) in enumerate(zip(a, b))
           if kind(u) != kind(v) or (kind(u) == "finite" and abs(u - v) > tol * max(abs(u), abs(v)))]
    if not idx:
        return None
    return {"index": idx, "bits": hexbits(b64.cpu().reshape(-1)[idx])}


class Gen:
    """Draws the values of one case from its own seeded random stream."""

    def __init__(self, seed, name, dt):
        self.rng = random.Random("%d/%s" % (seed, name))
        self.r = Range(dt)

    def sign(self):
        return self.rng.choice((1.0, -1.0))

    def grad(self, n, specials=(0.0, nan, inf, -inf), rate=8):
        """Upstream gradients: N(0, 1), one in `rate` a special value."""
        out = []
        for _ in range(n):
            if self.rng.randrange(rate) == 0:
                out.append(self.rng.choice(specials))
            else:
                out.append(self.rng.gauss(0, 1))
        return out

    def row(self, kind, n, terms=1):
        """n values of one adversarial kind (see KINDS). terms > 1 scales
        "large" values down so that a sum of that many of them cannot
        overflow, whatever its order (see slices_fill)."""
        rng, r = self.rng, self.r
        v = [rng.gauss(0, 2) for _ in range(n)]
        at = lambda: rng.randrange(n)
        if kind == "ties":
            v = [float(rng.choice((-1, 1, 2, 3))) for _ in range(n)]
            hi, lo = rng.sample(range(n), 2), rng.sample(range(n), 2)
            for i in hi:
                v[i] = 5.0
            for i in lo:
                v[i] = -2.0
        elif kind == "nan":
            v[at()] = nan
        elif kind == "nan_late":
            v[n - 1 - rng.randrange(max(1, n // 3))] = nan
        elif kind == "posinf":
            v[at()] = inf
        elif kind == "posinf_late":
            v[n - 1 - rng.randrange(max(1, n // 3))] = inf
        elif kind == "neginf":
            v[at()] = -inf
        elif kind == "infs":
            i, j = rng.sample(range(n), 2) if n > 1 else (0, 0)
            v[i], v[j] = inf, -inf
        elif kind == "allneginf":
            v = [-inf] * n
        elif kind == "lead_neginf":
            for i in range(min(n, 1 + rng.randrange(3))):
                v[i] = -inf
        elif kind == "zero":
            v[at()] = 0.0
        elif kind == "zero_first":
            v[0] = 0.0
        elif kind == "zeros":
            for i in rng.sample(range(n), min(n, 2)):
                v[i] = rng.choice((0.0, -0.0))
        elif kind == "signed_zeros":
            v = [0.0 if i % 2 == 0 else -0.0 for i in range(n)]
        elif kind == "subnormal":
            v = [self.sign() * r.sub * rng.randint(1, 60) for _ in range(n)]
        elif kind == "large":
            v = [self.sign() * r.max / terms * rng.uniform(0.3, 0.9) for _ in range(n)]
        elif kind == "const":
            c = rng.gauss(0, 2)
            v = [c] * n
        elif kind == "near1":
            v = [1.0 + rng.gauss(0, 0.05) for _ in range(n)]
        elif kind != "normal":
            raise ValueError(kind)
        return v


def tensor(vals, shape, dt, dev):
    """vals (Python floats, row-major) rounded once to dt, on dev."""
    return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(dev).to(dt)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# ---- binary ----

def binary_forward(op, a, b, params):
    return {
        "add": lambda: torch.add(a, b, alpha=params.get("alpha", 1.0)),
        "sub": lambda: torch.sub(a, b, alpha=params.get("alpha", 1.0)),
        "mul": lambda: a * b, "div": lambda: a / b,
        "maximum": lambda: torch.maximum(a, b), "minimum": lambda: torch.minimum(a, b),
        "pow": lambda: torch.pow(a, b), "atan2": lambda: torch.atan2(a, b),
        "hypot": lambda: torch.hypot(a, b), "lerp": lambda: torch.lerp(a, b, params["weight"]),
    }[op]()


def binary_run(op, params, t):
    a = t["a"].detach().requires_grad_()
    b = t["b"].detach().requires_grad_()
    y = binary_forward(op, a, b, params)
    da, db = torch.autograd.grad(y, (a, b), t["dy"])
    return {"da": da, "db": db}


def binary_palette(g, op, second):
    r = g.r
    if op == "pow" and second:
        return [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 2.5, nan, inf, -inf, 7.0, -3.0]
    if op == "pow":
        # max/3, not max/2: at a = max/2, e = 2, da's e*a^(e-1) is the
        # largest finite value exactly, and the device pow's last-ulp error
        # decides between it and inf (CUDA's pow(max/2, 1) is 2^1023, one
        # ulp above max/2, so PyTorch's f64 da is -inf, the exact one
        # finite): rounding, not the formula.
        return [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, nan, inf, -inf, r.sub * 5, r.max / 3, 1.0 + r.eps, 1.5]
    return [0.0, -0.0, 1.0, -2.5, 0.5, 3.0, nan, inf, -inf, r.sub * 3, -r.tiny, r.max * 0.75, -r.max / 3,
            math.sqrt(r.max) * 2, 0.25]


def binary_cases(op, dt_name, seed):
    """grid: every pair of a palette of special values; mixed: random values
    with specials and ties; for add, sub and lerp also the default alpha 1
    and weight 0."""
    out = []
    for label in ("grid", "mixed", "default"):
        if label == "default" and op not in ("add", "sub", "lerp"):
            continue
        name = "binary/%s/%s/%s" % (op, dt_name, label)
        g = Gen(seed, name, DTYPES[dt_name])
        params = {}
        if op in ("add", "sub"):
            params["alpha"] = {"grid": 0.75, "mixed": -2.5, "default": 1.0}[label]
        if op == "lerp":
            params["weight"] = {"grid": 0.3, "mixed": 0.75, "default": 0.0}[label]
        if label == "grid":
            pa, pb = binary_palette(g, op, False), binary_palette(g, op, True)
            shape = [len(pa), len(pb)]
            a = [u for u in pa for _ in pb]
            b = [v for _ in pa for v in pb]
        else:
            shape = [3, 4, 5] if label == "mixed" else [7]
            n = numel(shape)
            pa, pb = binary_palette(g, op, False), binary_palette(g, op, True)
            a, b = [], []
            for _ in range(n):
                if op == "pow":
                    u = g.rng.uniform(-1, 3)
                    v = float(g.rng.randint(-3, 3)) if g.rng.randrange(3) == 0 else g.rng.uniform(-3, 3)
                else:
                    u, v = g.rng.gauss(0, 2), g.rng.gauss(0, 2)
                if g.rng.randrange(4) == 0:
                    u = g.rng.choice(pa)
                if g.rng.randrange(4) == 0:
                    v = g.rng.choice(pb)
                if g.rng.randrange(6) == 0:
                    v = u  # ties
                a.append(u)
                b.append(v)
        dy = g.grad(numel(shape), rate=12)
        out.append((name, "binary", op, dt_name, shape, params, {"dy": dy, "a": a, "b": b}))
    return out


# ---- reduce ----

REDUCE_KINDS = ["normal", "ties", "nan", "posinf", "neginf", "infs", "allneginf", "zero", "zeros",
                "signed_zeros", "subnormal", "large", "const", "near1"]
PROD_ZERO_KINDS = ["normal", "ties", "zero", "zeros", "signed_zeros", "const", "near1", "zero_first"]
PROD_SPECIAL_KINDS = ["normal", "ties", "nan", "posinf", "neginf", "infs", "subnormal", "large", "const", "near1"]


def reduce_forward(op, x, axis, keepdim, c):
    return {
        "sum": lambda: x.sum(axis, keepdim=keepdim), "mean": lambda: x.mean(axis, keepdim=keepdim),
        "max": lambda: x.amax(axis, keepdim=keepdim), "min": lambda: x.amin(axis, keepdim=keepdim),
        "prod": lambda: x.prod(axis, keepdim=keepdim),
        "norm2": lambda: torch.linalg.vector_norm(x, 2, dim=axis, keepdim=keepdim),
        "logsumexp": lambda: torch.logsumexp(x, axis, keepdim=keepdim),
        "var": lambda: torch.var(x, axis, correction=c, keepdim=keepdim),
        "std": lambda: torch.std(x, axis, correction=c, keepdim=keepdim),
    }[op]()


def correction(params):
    """var's and std's correction: an int where it is one (older PyTorch
    takes only ints), else the float."""
    c = params.get("correction", 1)
    return int(c) if c == int(c) else c


def reduce_run(op, params, t):
    x = t["x"].detach().requires_grad_()
    y = reduce_forward(op, x, params["axis"], params["keepdim"], correction(params))
    (dx,) = torch.autograd.grad(y, (x,), t["dy"])
    return {"y": y, "dx": dx}


def slices_fill(g, shape, axis, kinds, pick_random, terms=1):
    """Values of shape whose slices along axis are each one kind (in order,
    cycling, or drawn at random).

    terms: for an op whose gradient sums up to that many values of a slice
    (var's and std's mean, cumsum's reverse sum of dy), "large" values are
    at most 0.9*max/terms, so that no partial sum overflows in any order.
    Near the largest finite value a sum overflows or not depending on the
    order it is taken in (summed left to right, [-1.1, 1.3, -1.5, -0.9,
    1.5] * 1e308 reaches -2.2e308 and overflows; with four accumulators, as
    PyTorch's CUDA mean took it, it does not), and PyTorch's order (set by
    its reduction's and scan's launch configuration) is no part of the
    gradient's definition: no other implementation could match it."""
    axis %= len(shape)
    k = shape[axis]
    outer = numel(shape[:axis])
    inner = numel(shape[axis + 1:])
    vals = [0.0] * numel(shape)
    for s in range(outer * inner):
        o, i = divmod(s, inner)
        kd = g.rng.choice(kinds) if pick_random else kinds[s % len(kinds)]
        for j, v in enumerate(g.row(kd, k, terms)):
            vals[(o * k + j) * inner + i] = v
    return vals


def reduce_cases(op, dt_name, seed):
    """rows: a slice of each kind along the last axis; cols: along axis 0,
    keepdim; middle: a middle axis given as negative, slices of random kinds;
    unit: an axis of length 1; for var and std more corrections (N == c,
    N < c, a fraction)."""
    kinds = REDUCE_KINDS
    specs = []
    if op == "prod":
        specs += [("zeros", [len(PROD_ZERO_KINDS), 6], -1, False, PROD_ZERO_KINDS, False, 1),
                  ("specials", [7, len(PROD_SPECIAL_KINDS)], 0, True, PROD_SPECIAL_KINDS, False, 1),
                  ("middle", [2, 5, 3], -2, False, ["normal", "ties", "near1", "zero", "zeros"], True, 1)]
    else:
        specs += [("rows", [len(kinds), 6], -1, False, kinds, False, 1),
                  ("cols", [7, len(kinds)], 0, True, kinds, False, 0),
                  ("middle", [2, 5, 3], -2, False, kinds, True, 2.5)]
    specs.append(("unit", [3, 1, 2], 1, True, ["normal", "nan", "posinf"], True, 1))
    if op in ("var", "std"):
        specs += [("n-equals-c", [3, 4], 1, False, ["normal", "const", "ties"], False, 4),
                  ("n-below-c", [3, 4], 1, True, ["normal", "const", "ties"], False, 5.5)]
    out = []
    for label, shape, axis, keepdim, kd, rand, c in specs:
        name = "reduce/%s/%s/%s" % (op, dt_name, label)
        g = Gen(seed, name, DTYPES[dt_name])
        params = {"axis": axis, "keepdim": keepdim}
        if op in ("var", "std"):
            params["correction"] = c
        x = slices_fill(g, shape, axis, kd, rand, shape[axis] if op in ("var", "std") else 1)
        specials = (0.0, nan) if op in ("var", "std") else (0.0, nan, inf, -inf)
        out.append((name, "reduce", op, dt_name, shape, params, {"x": x}, specials))
    return out


# ---- scan ----

SCAN_KINDS = ["normal", "ties", "nan", "nan_late", "posinf", "posinf_late", "neginf", "lead_neginf", "zero",
              "zeros", "zero_first", "subnormal", "large", "signed_zeros", "near1"]


def scan_forward(op, x, axis):
    return {
        "cumsum": lambda: torch.cumsum(x, axis), "cumprod": lambda: torch.cumprod(x, axis),
        "cummax": lambda: torch.cummax(x, axis)[0], "cummin": lambda: torch.cummin(x, axis)[0],
        "logcumsumexp": lambda: torch.logcumsumexp(x, axis),
    }[op]()


def scan_run(op, params, t):
    x = t["x"].detach().requires_grad_()
    axis = params["axis"]
    if params["reverse"]:
        y = scan_forward(op, x.flip(axis), axis).flip(axis)
    else:
        y = scan_forward(op, x, axis)
    (dx,) = torch.autograd.grad(y, (x,), t["dy"])
    return {"y": y, "dx": dx}


def scan_cases(op, dt_name, seed):
    """rows: a slice of each kind along the last axis; cols: along axis 0;
    middle: a middle axis, random kinds; unit: an axis of length 1; each in
    both directions. cumsum's gradient depends on dy alone, so its kinds
    shape dy."""
    specs = [("rows", [len(SCAN_KINDS), 8], -1, SCAN_KINDS, False),
             ("cols", [8, len(SCAN_KINDS)], 0, SCAN_KINDS, False),
             ("middle", [2, 6, 3], 1, SCAN_KINDS, True),
             ("unit", [4, 1], 1, ["normal", "nan", "posinf", "zero"], False)]
    out = []
    for label, shape, axis, kinds, rand in specs:
        for reverse in (False, True):
            name = "scan/%s/%s/%s/%s" % (op, dt_name, label, "reverse" if reverse else "forward")
            g = Gen(seed, name, DTYPES[dt_name])
            params = {"axis": axis, "reverse": reverse}
            vals = slices_fill(g, shape, axis, kinds, rand, shape[axis] if op == "cumsum" else 1)
            if op == "cumsum":
                inputs = {"x": [g.rng.gauss(0, 1) for _ in vals], "dy": vals}
            else:
                inputs = {"x": vals, "dy": g.grad(len(vals), rate=10)}
            out.append((name, "scan", op, dt_name, shape, params, inputs))
    return out


# ---- lppool ----

LP_KINDS = ["positive", "normal", "zeros", "zero", "subnormal", "large", "specials", "negative"]


def lp_plane(g, kind, n, p):
    rng, r = g.rng, g.r
    if kind == "positive":
        return [abs(rng.gauss(0, 1)) + 0.1 for _ in range(n)]
    if kind == "zeros":
        return [0.0] * n
    if kind == "zero":
        return [0.0 if rng.randrange(3) == 0 else rng.gauss(0, 1) for _ in range(n)]
    if kind == "subnormal":
        return [r.sub * rng.randint(0, 60) for _ in range(n)]
    if kind == "large":
        # x^p overflows the dtype, so y is inf, while x^(p-1) does not.
        if p > 1:
            return [r.max ** (1 / p) * rng.uniform(1.5, 2) for _ in range(n)]
        return [r.max * rng.uniform(0.1, 0.5) for _ in range(n)]
    if kind == "specials":
        return [rng.choice((nan, inf, -inf)) if rng.randrange(4) == 0 else rng.gauss(0, 1) for _ in range(n)]
    if kind == "negative":
        return [-abs(rng.gauss(0, 1)) - 0.1 for _ in range(n)]
    return [rng.gauss(0, 1) for _ in range(n)]


def lp_forward(op, x, params):
    k, s, p = params["kernel"], params["stride"], params["p"]
    if op == "lp_pool1d":
        return F.lp_pool1d(x, p, k[0], stride=s[0], ceil_mode=params["ceil_mode"])
    return F.lp_pool2d(x, p, tuple(k), stride=tuple(s), ceil_mode=params["ceil_mode"])


def lppool_run(op, params, t):
    x = t["x"].detach().requires_grad_()
    y = lp_forward(op, x, params)
    (dx,) = torch.autograd.grad(y, (x,), t["dy"])
    return {"y": y, "dx": dx}


def lppool_cases(p, dt_name, seed):
    """Windows that overlap, tile and leave gaps, ceil mode's partial
    windows, each channel plane one kind of values."""
    specs = [("lp_pool1d", "overlap", [2, 4, 10], [3], [2], False),
             ("lp_pool1d", "ceil", [1, 4, 11], [4], [3], True),
             ("lp_pool1d", "gaps", [1, 4, 9], [2], [3], False),
             ("lp_pool2d", "ceil", [1, 4, 5, 7], [2, 3], [2, 2], True),
             ("lp_pool2d", "overlap", [2, 2, 4, 4], [2, 2], [1, 1], False)]
    out = []
    for op, label, shape, k, s, ceil in specs:
        name = "lppool/%s/%s/p%g/%s" % (op, dt_name, p, label)
        g = Gen(seed, name, DTYPES[dt_name])
        plane = numel(shape[2:])
        x = []
        for i in range(shape[0] * shape[1]):
            x += lp_plane(g, LP_KINDS[i % len(LP_KINDS)], plane, p)
        params = {"p": p, "kernel": k, "stride": s, "ceil_mode": ceil}
        out.append((name, "lppool", op, dt_name, shape, params, {"x": x}, (0.0, nan, inf)))
    return out


# ---- running a case ----

RUN = {"binary": binary_run, "reduce": reduce_run, "scan": scan_run, "lppool": lppool_run}
GRADS = {"binary": ["da", "db"], "reduce": ["dx"], "scan": ["dx"], "lppool": ["dx"]}


def out_shape_of(family, op, shape, params, dev):
    """The shape of y, from a forward on zeros (reduce, lppool)."""
    x = torch.zeros(shape, dtype=torch.float64, device=dev)
    if family == "reduce":
        return list(reduce_forward(op, x, params["axis"], params["keepdim"], correction(params)).shape)
    return list(lp_forward(op, x, params).shape)


def run_case(spec, seed, dev):
    try:
        return compute_case(spec, seed, dev)
    except (RuntimeError, TypeError) as exc:
        raise Unsupported("%s: %s" % (spec[0], str(exc).splitlines()[0])) from exc


def compute_case(spec, seed, dev):
    name, family, op, dt_name, shape, params, inputs = spec[:7]
    dt = DTYPES[dt_name]
    t = {k: tensor(v, shape, dt, dev) for k, v in inputs.items()}
    out_shape = None
    if "dy" not in t:
        # dy has y's shape; its values come from a stream of their own.
        out_shape = out_shape_of(family, op, shape, params, dev)
        g = Gen(seed, name + "/dy", dt)
        t["dy"] = tensor(g.grad(numel(out_shape), specials=spec[7]), out_shape, dt, dev)
    res = RUN[family](op, params, t)
    case = {"name": name, "family": family, "op": op, "dtype": dt_name, "shape": shape}
    if out_shape is not None:
        case["out_shape"] = out_shape
    case["params"] = params
    tensors = {k: hexbits(v) for k, v in t.items()}
    if "y" in res:
        tensors["y"] = hexbits(res["y"])
    for k in GRADS[family]:
        tensors[k] = hexbits(res[k])
    case["tensors"] = tensors
    if dt != torch.float64:
        res64 = RUN[family](op, params, {k: v.double() for k, v in t.items()})
        alt = {}
        for k in GRADS[family]:
            e = alt_entry(res[k], res64[k])
            if e is not None:
                alt[k] = e
        if alt:
            case["alt"] = alt
            if "y" in res64:
                # The float64 values come with their own saved output.
                case["y64"] = hexbits(res64["y"])
    return case


def all_specs(seed):
    for dt in ("f32", "f16", "bf16", "f64"):
        for op in BINARY:
            yield from binary_cases(op, dt, seed)
        for op in REDUCE:
            yield from reduce_cases(op, dt, seed)
        for op in SCAN:
            yield from scan_cases(op, dt, seed)
        for p in LP_PS:
            yield from lppool_cases(p, dt, seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(root, DEFAULT_OUT),
                    help="output file (default: %s in the repository)" % DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=39, help="seed of the inputs (default %(default)s)")
    ap.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda where available")
    ap.add_argument("--skip-unsupported", action="store_true",
                    help="leave out (and list in the file's notes) cases PyTorch cannot run here, "
                         "instead of failing: for trying the script on a CPU build")
    args = ap.parse_args()
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.use_deterministic_algorithms(True, warn_only=True)
    warnings.filterwarnings("ignore", message=".*deterministic.*")
    head = {"format": "baracuda-torch-vectors", "version": 1, "generator": "scripts/torch_vectors.py",
            "seed": args.seed, "torch": torch.__version__, "device": dev,
            "device_name": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"}
    cases, notes = [], []
    for spec in all_specs(args.seed):
        try:
            cases.append(run_case(spec, args.seed, dev))
        except Unsupported as exc:
            if not args.skip_unsupported:
                sys.exit("torch_vectors.py: %s (rerun with --skip-unsupported to leave such cases out)" % exc)
            notes.append("skipped " + str(exc))
    head["notes"] = notes
    text = json.dumps(head)[:-1] + ', "cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    alt = sum(len(e["index"]) for c in cases for e in c.get("alt", {}).values())
    print("wrote %s: %d cases, %d bytes, PyTorch %s on %s; %d gradient elements with a float64 alternative; "
          "%d cases skipped" % (args.out, len(cases), len(text), torch.__version__, head["device_name"], alt,
                                len(notes)))
    for n in notes:
        print("  " + n)


if __name__ == "__main__":
    main()
