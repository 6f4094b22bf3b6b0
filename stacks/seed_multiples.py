#!/usr/bin/env python3
"""The figures of stacks/gpt-neox.toml from the seed's measured A100 operators.

    python3 stacks/seed_multiples.py [--stepcast build/bin/stepcast]

Prices hardware/a100-sxm4-80gb/seed/ops.csv with `stepcast estimate` on the shipped A100
80 GB file (no stack, no residuals used: the analytical column) and prints, per operator
family and variant, the median of measured / analytical over the rows measured alone (no
group) and above 100 us: the traffic multiples of memory-bound kernels; and, per head
dimension, the attention kernels' fraction of the fp16 peak (the device's efficiency times
analytical / measured). Standard library only.
"""
import argparse
import collections
import csv
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stepcast", default=os.path.join(ROOT, "build", "bin", "stepcast"))
    a = ap.parse_args()
    ops = os.path.join(ROOT, "hardware", "a100-sxm4-80gb", "seed", "ops.csv")
    out = subprocess.run([a.stepcast, "estimate", "--hardware", "a100-sxm4-80gb", "--csv", ops],
                         capture_output=True, text=True, check=True).stdout
    est = [l.split() for l in out.splitlines() if l[:1].isdigit()]
    rows = list(csv.DictReader(open(ops)))
    if len(est) != len(rows):
        sys.exit("seed_multiples: %d estimates for %d rows" % (len(est), len(rows)))
    eff = 0.869  # hardware/a100-sxm4-80gb.toml flops_efficiency: its attention's rate
    mult = collections.defaultdict(list)
    attn = collections.defaultdict(list)
    for r, e in zip(rows, est):
        if r["group"]:
            continue
        m, an, bound = float(r["measured_s"]), float(e[6]), e[5]
        if m <= 100e-6:
            continue
        if r["family"] == "attention":
            hd = int(r["dims"].split("x")[5])
            attn[(int(r["variant"]), hd)].append(eff * an / m)
        elif bound == "memory":
            mult[(r["family"], int(r["variant"]))].append(m / an)
    print("family variant rows median(measured/analytical)")
    for k in sorted(mult):
        print("%s %d %d %.2f" % (k[0], k[1], len(mult[k]), statistics.median(mult[k])))
    print("attention variant head_dim rows median(fraction of peak)")
    for k in sorted(attn):
        print("attention %d %d %d %.3f" % (k[0], k[1], len(attn[k]), statistics.median(attn[k])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
