#!/usr/bin/env python3
"""How far any bandwidth law can come to the seed's NCCL rows, group by group.

For each group of nccl.csv (collective, nodes, GPUs a node) it prints the rows, the spread of
the measured time at one size (the median over size deciles of p90/p10 of time per byte),
and the least mean absolute percentage error that ANY law t = c + bytes / rate (c >= 0, rate
> 0: a fixed cost and a bandwidth, the form every collective model prices) reaches on the
group. That least error is exact: for a fixed c the best rate is a weighted median, and the
error is convex in c, so a ternary search over c finds the minimum. A group whose least
error is over 10 % cannot be predicted within 10 % by any topology file or residual-free
model; its spread is the reason (docs/validation.md, "Collectives: the seed's Perlmutter
NCCL runs"). Standard library only. Usage, from the repository root:
    python3 hardware/a100-sxm4-80gb/seed/nccl_spread.py [hardware/a100-sxm4-80gb/seed/nccl.csv]
"""
import csv
import sys
from collections import defaultdict


def weighted_median(vals, weights):
    order = sorted(range(len(vals)), key=lambda i: vals[i])
    half = sum(weights) / 2.0
    acc = 0.0
    for i in order:
        acc += weights[i]
        if acc >= half:
            return vals[i]
    return vals[order[-1]]


def mape_at(c, xs, ys):
    """Least MAPE of t = c + s * x over s > 0, and that s (seconds per byte)."""
    # sum_i |c + s x_i - y_i| / y_i = sum_i (x_i / y_i) |s - (y_i - c) / x_i|
    vals = [(y - c) / x for x, y in zip(xs, ys)]
    w = [x / y for x, y in zip(xs, ys)]
    s = max(weighted_median(vals, w), 1e-18)
    return sum(abs(c + s * x - y) / y for x, y in zip(xs, ys)) / len(xs), s


def least_mape(xs, ys):
    lo, hi = 0.0, min(ys)  # c above the smallest time only adds error
    for _ in range(100):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if mape_at(m1, xs, ys)[0] <= mape_at(m2, xs, ys)[0]:
            hi = m2
        else:
            lo = m1
    c = (lo + hi) / 2
    err, s = mape_at(c, xs, ys)
    return err, c, s


def spread(xs, ys):
    pts = sorted(zip(xs, ys))
    n = len(pts)
    ratios = []
    for d in range(10):
        chunk = [y / x for x, y in pts[d * n // 10:(d + 1) * n // 10]]
        if len(chunk) < 10:
            continue
        chunk.sort()
        ratios.append(chunk[9 * len(chunk) // 10] / chunk[len(chunk) // 10])
    ratios.sort()
    return ratios[len(ratios) // 2] if ratios else float("nan")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "hardware/a100-sxm4-80gb/seed/nccl.csv"
    groups = defaultdict(lambda: ([], []))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            nodes, nranks = int(row["nodes"]), int(row["nranks"])
            key = (row["family"], nodes, nranks // nodes)
            groups[key][0].append(float(row["bytes"]))
            groups[key][1].append(float(row["measured_s"]))
    print("| family | nodes x GPUs a node | rows | p90/p10 at one size | least MAPE of any "
          "c + bytes/rate | its rate (GB/s of bytes) |")
    print("|---|---|---:|---:|---:|---:|")
    for (fam, nodes, gpn), (xs, ys) in sorted(groups.items()):
        err, c, s = least_mape(xs, ys)
        print("| %s | %d x %d | %d | %.2f | %.1f %% | %.2f |"
              % (fam, nodes, gpn, len(xs), spread(xs, ys), 100 * err, 1e-9 / s))


if __name__ == "__main__":
    main()
