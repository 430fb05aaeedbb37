#!/usr/bin/env python3
"""Joins `baracuda bench --json` and torch_ref.py output into one table.

usage: python3 bench/compare.py ours.jsonl torch.jsonl [markdown]
With the output of `baracuda bench -sweep -json` and `torch_ref.py --sweep` it
prints the sweep table instead: per case and size, our eager Run, our Run
replayed from a CUDA graph and PyTorch's backward, in microseconds per call.
Prints: case, ours (us, GB/s, % of copy bandwidth), PyTorch (us, GB/s), speed-up,
then the geometric-mean speed-up, the median % of copy bandwidth and the cases
that miss the targets (slower than PyTorch, or under 60% of copy bandwidth).
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
    torch_rows, _ = load(sys.argv[2])
    md = len(sys.argv) > 3 and sys.argv[3] == "markdown"
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
    if pcts:
        p = sorted(pcts)
        print(f"median share of copy bandwidth: {p[len(p) // 2]:.0f}% (min {p[0]:.0f}%)")
    print(f"cases missing a target: {len(misses)}")
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
