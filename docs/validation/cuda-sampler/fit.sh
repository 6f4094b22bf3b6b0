#!/bin/bash
# The fits of docs/notes/0002-cuda-sampler-h100.md "The CUDA sampler on an H100", from the repository root with
# a release build in build-rel: the measured H100 samples (the designed plan of run 6 and the
# H100 rows' own operators of docs/validation/cuda-plan, one file) against
# hardware/h100-sxm5-80gb.toml as shipped (launch_s 1.89 us: PyTorch's queued launches),
# written to hardware/h100-sxm5-80gb/residuals (the models --estimator hybrid uses), and the
# same samples against a copy that states the sampler's own launch floor instead
# (micro.launch_s = 1.23 us, a one-element kernel back to back in a CUDA graph), to a scratch
# folder; and run 6's samples alone (run6/samples.csv: the designed plan), with their rows
# (run6/rows.csv). Every fit with --hybrid-features all, as first made when the H100 file had
# no launch floor and a small kernel's residual was a size effect that only the scale
# features carry (docs/learned.md, "Scale and shape features").
set -euo pipefail
sc=${SC:-build-rel/bin/stepcast}
d=docs/validation/cuda-sampler
s=hardware/h100-sxm5-80gb/samples.csv
# attention left out: its rows time the unfused path (two batched GEMMs and a softmax),
# while the estimate prices a fused (flash) kernel
fams=gemm,norm,softmax,elementwise,optimizer
$sc fit --samples $s --hardware h100-sxm5-80gb --families $fams --hybrid-features all \
  --out hardware/h100-sxm5-80gb/residuals --rows $d/fit-rows.csv >$d/fit.txt 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^launch_s = [0-9.e-]* /launch_s = 1.23e-6 /' \
  hardware/h100-sxm5-80gb.toml >"$tmp/h100-sxm5-80gb.toml"
grep -q '^launch_s = 1.23e-6' "$tmp/h100-sxm5-80gb.toml"
$sc fit --samples $s --hardware "$tmp/h100-sxm5-80gb.toml" --families $fams --out "$tmp/fit" \
  --hybrid-features all \
  >$d/fit-launch.txt 2>&1
sed -n '/^Active models/,$p' "$tmp/fit/report.md" >>$d/fit-launch.txt
$sc fit --samples $d/run6/samples.csv --hardware h100-sxm5-80gb --out "$tmp/run6" \
  --hybrid-features all \
  --rows $d/run6/rows.csv >$d/run6/fit.txt 2>&1
sed -n '/^Active models/,$p' "$tmp/run6/report.md" >>$d/run6/fit.txt
