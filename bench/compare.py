#!/usr/bin/env python3
"""Joins `baracuda bench --json` and torch_ref.py output into one table.

usage: python3 bench/compare.py ours.jsonl torch.jsonl [markdown]
With the output of `baracuda bench -nccl -json` and torch_nccl.py it prints the
NCCL all-reduce table instead: per size, our time and bus bandwidth, PyTorch's,
and ours as a share of PyTorch's (target: at least 95% at every size).
With the output of `baracuda bench -sweep -json` and `torch_ref.py --sweep` it
prints the sweep table instead: per case and size, our eager Run, our Run
replayed from a CUDA graph and PyTorch's backward, in microseconds per call.
Prints: case, ours (us, GB/s, % of copy bandwidth), PyTorch (us, GB/s), speed-up,
then the geometric-mean speed-up, the median % of copy bandwidth and the cases
that miss the targets (slower than PyTorch, or under 60% of copy bandwidth).

With the output of `baracuda bench -shapes -json` and `torch_ref.py --shapes` the
same table ends with the shapes set's summary instead (bench/README.md, "Shapes
and data"): the median % of copy bandwidth and the cases under 50% of it, the
cases slower than PyTorch, the grid and clamp cases over 1.5x the time of the
same case on normal data, and the cases missing a target of the set.
"""
import json
import math
import sys


def load(path):
    rows, meta = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "case" in r:
                rows[r["case"]] = r
            else:
                meta.update(r)
    return rows, meta


def main():
    ours, meta = load(sys.argv[1])
    torch_rows, torch_meta = load(sys.argv[2])
    md = len(sys.argv) > 3 and sys.argv[3] == "markdown"
    if any("busbw_gbps" in r for r in ours.values()):
        nccl_table(ours, meta, torch_rows, torch_meta, md)
        return
    if any("eager_us" in r for r in ours.values()):
        sweep_table(ours, torch_rows, md)
        return
    head = ["case", "ours us", "ours GB/s", "% copy", "torch us", "torch GB/s", "speed-up"]
    lines = []
    speedups, pcts, misses = [], [], []
    for name, r in ours.items():
        t = torch_rows.get(name, {})
        if "error" in r:
            lines.append([name, "error: " + r["error"][:60], "", "", "", "", ""])
            misses.append(f"{name}: error")
            continue
        su = ""
        if t.get("us"):
            s = t["us"] / r["us"]
            speedups.append(s)
            su = f"{s:.2f}x"
            if s < 1:
                misses.append(f"{name}: slower than PyTorch ({s:.2f}x)")
        pcts.append(r["copy_pct"])
        if r["copy_pct"] < 60:
            misses.append(f"{name}: {r['copy_pct']:.0f}% of copy bandwidth")
        lines.append([name, f"{r['us']:.1f}", f"{r['gbps']:.0f}", f"{r['copy_pct']:.0f}%",
                      f"{t['us']:.1f}" if t.get("us") else t.get("error", "-")[:30],
                      f"{t['gbps']:.0f}" if t.get("gbps") else "-", su])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        for l in [head] + lines:
            print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(l, widths))))
    print()
    if meta:
        print(f"device: {meta.get('device')}; copy bandwidth {meta.get('copy_gbps')} GB/s (read + write)")
    if speedups:
        gm = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        print(f"geometric-mean speed-up over PyTorch: {gm:.2f}x over {len(speedups)} cases")
    if any(name.startswith("shapes/") for name in ours):
        shapes_summary(ours, torch_rows)
        return
    if pcts:
        p = sorted(pcts)
        print(f"median share of copy bandwidth: {p[len(p) // 2]:.0f}% (min {p[0]:.0f}%)")
    print(f"cases missing a target: {len(misses)}")
    for m in misses:
        print("  " + m)


# Targets of the shapes set (bench/README.md, "Shapes and data").
SHAPES_MIN_COPY_PCT = 50
SHAPES_MEDIAN_COPY_PCT = 70
SHAPES_MAX_TIE_RATIO = 1.5


def shapes_summary(ours, torch_rows):
    ok = {n: r for n, r in ours.items() if "error" not in r}
    reasons = {}

    def miss(name, why):
        reasons.setdefault(name, []).append(why)

    for name, r in ours.items():
        if "error" in r:
            miss(name, "error: " + r["error"][:60])

    # (1) share of copy bandwidth
    pcts = sorted(r["copy_pct"] for r in ok.values())
    under = [n for n, r in ok.items() if r["copy_pct"] < SHAPES_MIN_COPY_PCT]
    for n in under:
        miss(n, f"{ok[n]['copy_pct']:.0f}% of copy bandwidth")
    median = pcts[len(pcts) // 2] if pcts else None
    if median is None:
        print("shapes: no case ran")
    else:
        print(f"shapes: median share of copy bandwidth {median:.0f}% (target >= {SHAPES_MEDIAN_COPY_PCT}%), "
              f"min {pcts[0]:.0f}%; {len(under)} of {len(ok)} cases under {SHAPES_MIN_COPY_PCT}%")

    # (2) against PyTorch
    timed = slower = 0
    for n, r in ok.items():
        tu = torch_rows.get(n, {}).get("us")
        if not tu:
            continue
        timed += 1
        s = tu / r["us"]
        if s < 1:
            slower += 1
            miss(n, f"{s:.2f}x PyTorch ({r['us']:.1f} us, PyTorch {tu:.1f} us)")
    print(f"shapes: {slower} cases slower than PyTorch (of the {timed} it timed)")

    # (3) tie-heavy data against normal data, per (op, dtype, shape, axis)
    groups = {}
    for n, r in ok.items():
        key, data = n.rsplit("/", 1)
        groups.setdefault(key, {})[data] = r["us"]
    over, worst = [], (0.0, "")
    for key, g in groups.items():
        if "normal" not in g:
            continue
        ratios = {d: g[d] / g["normal"] for d in ("grid", "clamp") if d in g}
        for d, x in ratios.items():
            worst = max(worst, (x, f"{key}/{d}"))
            if x > SHAPES_MAX_TIE_RATIO:
                miss(f"{key}/{d}", f"{x:.2f}x the time on normal data")
        if any(x > SHAPES_MAX_TIE_RATIO for x in ratios.values()):
            over.append(f"{key}: " + ", ".join(f"{d} {x:.2f}x" for d, x in ratios.items()))
    print(f"shapes: {len(over)} of {len(groups)} (op, dtype, shape, axis) with grid or clamp data over "
          f"{SHAPES_MAX_TIE_RATIO}x the normal data's time" + (f" (worst {worst[0]:.2f}x, {worst[1]})" if worst[1] else ""))
    for line in over:
        print("  " + line)

    print()
    print(f"targets: every case >= 1x PyTorch and >= {SHAPES_MIN_COPY_PCT}% of copy bandwidth, grid and clamp "
          f"within {SHAPES_MAX_TIE_RATIO}x of normal, median >= {SHAPES_MEDIAN_COPY_PCT}% of copy bandwidth")
    if median is not None and median < SHAPES_MEDIAN_COPY_PCT:
        print(f"median share of copy bandwidth misses its target: {median:.0f}%")
    print(f"cases missing a target: {len(reasons)}")
    for name in ours:
        if name in reasons:
            print(f"  {name}: " + "; ".join(reasons[name]))


# Target of the NCCL all-reduce (bench/README.md, "NCCL all-reduce"): our bus
# bandwidth at least this share of PyTorch's at every size.
NCCL_MIN_RATIO = 0.95


def nccl_table(ours, meta, torch_rows, torch_meta, md):
    head = ["bytes", "ours us", "ours busBW GB/s", "torch us", "torch busBW GB/s", "ours/torch"]
    lines, ratios, misses = [], [], []
    for name, r in ours.items():
        t = torch_rows.get(name, {})
        if "error" in r:
            lines.append([str(r.get("bytes", name)), "error: " + r["error"][:60], "", "", "", ""])
            misses.append(f"{name}: error")
            continue
        ratio = ""
        if t.get("busbw_gbps"):
            x = r["busbw_gbps"] / t["busbw_gbps"]
            ratios.append((r["bytes"], x))
            ratio = f"{100 * x:.1f}%"
            if x < NCCL_MIN_RATIO:
                misses.append(f"{name}: {100 * x:.1f}% of PyTorch's bus bandwidth")
        lines.append([str(r["bytes"]), f"{r['us']:.1f}", f"{r['busbw_gbps']:.1f}",
                      f"{t['us']:.1f}" if t.get("us") else t.get("error", "-")[:30],
                      f"{t['busbw_gbps']:.1f}" if t.get("busbw_gbps") else "-", ratio])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        for l in [head] + lines:
            print("  ".join(str(x).rjust(w) for x, w in zip(l, widths)))
    print()
    for who, m in (("ours", meta), ("torch", torch_meta)):
        if m:
            print(f"{who}: " + ", ".join(f"{k} {v}" for k, v in m.items()))
    if ratios:
        lo = min(ratios, key=lambda br: br[1])
        print(f"ours/torch bus bandwidth: lowest {100 * lo[1]:.1f}% (at {lo[0]} bytes), "
              f"at {ratios[-1][0]} bytes {100 * ratios[-1][1]:.1f}%")
    print(f"sizes missing the target (>= {100 * NCCL_MIN_RATIO:.0f}% of PyTorch): {len(misses)}")
    for m in misses:
        print("  " + m)


def sweep_table(ours, torch_rows, md):
    head = ["case", "elements", "eager us", "graph us", "torch us", "eager vs torch"]
    lines = []
    for name, r in ours.items():
        t = torch_rows.get(name, {})
        if "error" in r:
            lines.append([name, str(r.get("n", "")), "error: " + r["error"][:60], "", "", ""])
            continue
        tu = t.get("torch_us")
        lines.append([name, str(r["n"]), f"{r['eager_us']:.2f}", f"{r['graph_us']:.2f}",
                      f"{tu:.2f}" if tu else t.get("error", "-")[:30],
                      f"{tu / r['eager_us']:.2f}x" if tu else "-"])
    if md:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in lines:
            print("| " + " | ".join(l) + " |")
        return
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    for l in [head] + lines:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(l, widths))))


if __name__ == "__main__":
    main()
