#!/usr/bin/env python3
"""The A100's achievable matmul rate from the seed's measured GEMMs (hardware/a100-sxm4-80gb.toml,
flops_efficiency). Prices ops.csv with `stepcast estimate --json` (the gpt-neox stack, as the
table ran) and takes, over the single compute-bound fp16 GEMMs of at least 100 GFLOP, the
median of measured / analytical time; the efficiency that makes that median 1 is the file's
efficiency divided by it (for a compute-bound GEMM the analytical time is inversely
proportional to the efficiency, tile and wave quantisation apart, so the result does not
depend on the efficiency the file states when this runs). Usage, from the repository root
with a release build: hardware/a100-sxm4-80gb/seed/gemm_rate.py [STEPCAST]"""
import json
import re
import statistics
import subprocess
import sys

sc = sys.argv[1] if len(sys.argv) > 1 else "build-rel/bin/stepcast"
hw = open("hardware/a100-sxm4-80gb.toml").read()
eff = float(re.search(r"^flops_efficiency = ([0-9.]+)", hw, re.M).group(1))
out = subprocess.run([sc, "estimate", "--hardware", "a100-sxm4-80gb", "--stack", "gpt-neox",
                      "--csv", "hardware/a100-sxm4-80gb/seed/ops.csv", "--json"],
                     check=True, capture_output=True, text=True)
d = json.loads(out.stdout)
meas = {m["line"]: m for m in d["measurements"]}
ratio = []
for r in d["rows"]:
    m = meas.get(r["line"])
    if r["family"] != "gemm" or m is None or m["operators"] != 1 or r["bound"] != "compute":
        continue
    b, mm, n, k = (int(x) for x in r["dims"].split("x"))
    if 2 * b * mm * n * k >= 1e11:
        ratio.append(m["measured_s"] / r["analytical_s"])
med = statistics.median(ratio)
print("%d compute-bound GEMMs of >= 100 GFLOP: median measured/analytical %.4f at "
      "flops_efficiency %.3f -> %.3f" % (len(ratio), med, eff, eff / med))
