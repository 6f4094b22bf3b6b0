#!/bin/bash
# Fits the H200's measured samples (hardware/h200-sxm-141gb/samples.csv: run 1's designed plan
# and run 3's H200 rows' own operators, device.sh beside this file) against
# hardware/h200-sxm-141gb.toml as shipped, into hardware/h200-sxm-141gb/residuals (the models
# --estimator hybrid uses), with the per-row held-out errors in fit-rows.csv; and, as a
# repeatability check, those models scored on run 2's samples without refitting (fit --test:
# another machine's designed plan, and the rows' operators with every GEMM in the plain
# layout, weight gradients too, as runs 1 and 2 measured them).
# Attention left out: its rows time the unfused path (two batched GEMMs and a softmax), while
# the estimate prices a fused kernel. From the repository root with a release build in build-rel.
set -euo pipefail
sc=${SC:-build-rel/bin/stepcast}
d=docs/validation/cuda-plan-h200
fams=gemm,norm,softmax,elementwise,optimizer
$sc fit --samples hardware/h200-sxm-141gb/samples.csv --hardware h200-sxm-141gb --families $fams \
  --hybrid-features all --out hardware/h200-sxm-141gb/residuals --rows $d/fit-rows.csv \
  >$d/fit.txt 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{ grep -v '^# end = ' $d/run2/designed.csv; grep -v '^#\|^family,' $d/run2/samples.csv; } >"$tmp/run2.csv"
echo "# end = $(($(grep -c '^[a-z]' "$tmp/run2.csv") - 1)) rows" >>"$tmp/run2.csv"
$sc fit --test "$tmp/run2.csv" --hardware h200-sxm-141gb \
  --residuals hardware/h200-sxm-141gb/residuals >$d/test-run2.txt 2>&1
