#!/usr/bin/env python3
"""Compares `baracuda bench -json` runs of a baseline with runs of variants.

usage: python3 bench/ab.py BASE[,BASE...] VARIANT[,VARIANT...] [VARIANT...]

Each argument is one side: a comma-separated list of JSON-lines files from
`baracuda bench -json` (the same cases, run more than once). A case's time on
a side is the least of its runs there, which discounts a run disturbed by
something else on the host. The first side is the baseline; for every other
one it prints each case's time against the baseline's and their ratio
(variant / baseline: under 1 is faster), then the geometric mean of the
ratios and the cases that moved by 5% or more, the gain a kernel variant
must show on some case to be kept (CONTRIBUTING.md).
`run.sh --ab` makes the runs and calls this script.
"""
import math
import os
import re
import sys

from compare import load as load_file

THRESHOLD = 0.05


def load(paths):
    """The least time per case over the files in paths (comma-separated)."""
    best = {}
    for path in paths.split(","):
        rows, _ = load_file(path)
        for c, r in rows.items():
            if r.get("us"):
                best[c] = min(best.get(c, math.inf), r["us"])
    return best


def name(paths):
    """A side's label: "side N" for run.sh's ab-N-<round>.jsonl, else its first file's name."""
    first = os.path.basename(paths.split(",")[0])
    m = re.fullmatch(r"ab-(\d+)-\d+\.jsonl", first)
    if m:
        return "side " + m.group(1)
    return first[: -len(".jsonl")] if first.endswith(".jsonl") else first


def compare(base, variant, label):
    cases = [c for c in base if c in variant]
    if not cases:
        print(f"== {label}: no case in common with the baseline")
        return
    print(f"== {label} against the baseline ({len(cases)} cases)")
    print(f"{'case':<48} {'base us':>9} {'us':>9} {'ratio':>7}")
    ratio = {c: variant[c] / base[c] for c in cases}
    for c in cases:
        print(f"{c:<48} {base[c]:9.1f} {variant[c]:9.1f} {ratio[c]:7.3f}")
    gm = math.exp(sum(math.log(r) for r in ratio.values()) / len(cases))
    faster = [c for c in cases if ratio[c] <= 1 - THRESHOLD]
    slower = [c for c in cases if ratio[c] >= 1 + THRESHOLD]
    print(f"geometric mean ratio {gm:.3f}; {len(faster)} cases faster by 5% or more, {len(slower)} slower by 5% or more")
    for c in faster:
        print(f"  faster: {c} {ratio[c]:.3f}")
    for c in slower:
        print(f"  slower: {c} {ratio[c]:.3f}")
    missing = [c for c in base if c not in variant]
    if missing:
        print(f"  {len(missing)} baseline cases missing here, e.g. {missing[0]}")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    base = load(argv[1])
    for arg in argv[2:]:
        compare(base, load(arg), name(arg))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
