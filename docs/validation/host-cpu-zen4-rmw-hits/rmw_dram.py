"""Restate a host-cpu.toml's rmw_bw_Bps as `stepcast sample` now writes it: the measured in-place
rate less the hits the file's own cache curve gives the micro's working set (134221832 bytes:
the embedding backward of 1 token over a 16384 x 1024 fp32 table), 1 / r = (1 / rmw - (1 - g0) /
cache_bw) / g0 (core/cli/sample.c, RMW_MICRO_WS). For the runs stored before the change
(docs/notes/0001-host-cpu-residuals.md, "The in-place rate without the cache's hits counted twice").

    python3 rmw_dram.py IN.toml > OUT.toml      # prints the old and new rate on stderr
"""
import bisect
import math
import re
import sys

W0 = 4.0 * 1024 + 8.0 + 16384.0 * 1024 * 8.0
lines = open(sys.argv[1]).read().split("\n")
rmw = cbw = None
curve = {}
sec = None
for line in lines:
    if line.startswith("["):
        sec = line.split("]")[0] + "]"
        continue
    m = re.match(r"^(\w+)\s*=\s*([0-9.e+-]+)", line)
    if not m:
        continue
    key, val = m.group(1), float(m.group(2))
    if sec == "[hardware]" and key == "rmw_bw_Bps":
        rmw = val
    if sec == "[hardware]" and key == "cache_bw_Bps":
        cbw = val
    if sec == "[hardware.cache_miss_share]":
        curve[int(key)] = val
ks = sorted(curve)


def share(x):  # log-linear between points, flat past the ends (sc_device_miss_share)
    if x <= ks[0]:
        return curve[ks[0]]
    if x >= ks[-1]:
        return curve[ks[-1]]
    i = bisect.bisect(ks, x)
    a, b = ks[i - 1], ks[i]
    w = (math.log(x) - math.log(a)) / (math.log(b) - math.log(a))
    return curve[a] + (curve[b] - curve[a]) * w


g0 = share(W0)
new = g0 / (1.0 / rmw - (1.0 - g0) / cbw)
sys.stderr.write("rmw_bw_Bps %.4g, miss share %.3f at %.0f bytes -> %.4g\n" % (rmw, g0, W0, new))
sec = None
for line in lines:
    if line.startswith("["):
        sec = line.split("]")[0] + "]"
    if sec == "[hardware]" and line.startswith("rmw_bw_Bps"):
        line = "rmw_bw_Bps = %.4g  # restated by rmw_dram.py from %.4g (miss share %.3f)" % (new, rmw, g0)
    print(line)
