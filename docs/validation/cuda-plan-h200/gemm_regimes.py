#!/usr/bin/env python3
"""The analytical GEMM error of a stepcast build on a samples file, split by whether the
product's output tiles fill the SMs (batch * ceil(m/tile_m) * ceil(n/tile_n) >= SMs: the
regime split-K changes) and by layout (variant). Usage:
    gemm_regimes.py STEPCAST HARDWARE SAMPLES [TILE_M TILE_N SMS]
(tile 256 x 128 and 132 SMs by default: the H100 and H200 files). Prints rows, MAPE and
mean signed error (%) of the analytical estimate per group; docs/notes/0006 quotes them."""
import json, subprocess, sys

sc, hw, samples = sys.argv[1:4]
tm, tn, sms = (int(x) for x in (sys.argv[4:7] or (256, 128, 132)))
out = subprocess.run([sc, "estimate", "--hardware", hw, "--samples", samples, "--json"],
                     check=True, capture_output=True, text=True).stdout
groups = {}
for r in json.loads(out)["rows"]:
    if r["family"] != "gemm" or r.get("measured_s") is None:
        continue
    b, m, n, k = (int(x) for x in r["dims"].split("x"))
    fill = "fills the SMs" if b * -(-m // tm) * -(-n // tn) >= sms else "leaves SMs idle"
    err = (r["analytical_s"] - r["measured_s"]) / r["measured_s"]
    for g in ("all", fill, "variant %d" % r["variant"]):
        groups.setdefault(g, []).append(err)
for g, e in groups.items():
    print("%-16s %4d rows  MAPE %6.1f %%  mean signed %+6.1f %%"
          % (g, len(e), 100 * sum(map(abs, e)) / len(e), 100 * sum(e) / len(e)))
