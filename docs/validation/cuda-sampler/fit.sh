#!/bin/bash
# The fits of docs/validation.md "The CUDA sampler on an H100", from the repository root with
# a release build in build-rel: the measured samples against hardware/h100-sxm5-80gb.toml as
# shipped (launch_s unstated: 0), written to hardware/h100-sxm5-80gb/residuals-measured, and
# the same samples against a copy that states the sampler's measured launch floor
# (micro.launch_s = 1.23 us, a one-element kernel back to back in a CUDA graph), to a scratch folder.
set -euo pipefail
sc=${SC:-build-rel/bin/stepcast}
d=docs/validation/cuda-sampler
s=hardware/h100-sxm5-80gb/samples.csv
$sc fit --samples $s --hardware hardware/h100-sxm5-80gb.toml \
  --out hardware/h100-sxm5-80gb/residuals-measured --rows $d/fit-rows.csv >$d/fit.txt 2>&1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^compute_units = 132 /launch_s = 1.23e-6\ncompute_units = 132 /' \
  hardware/h100-sxm5-80gb.toml >"$tmp/h100-sxm5-80gb.toml"
grep -q '^launch_s = 1.23e-6' "$tmp/h100-sxm5-80gb.toml"
$sc fit --samples $s --hardware "$tmp/h100-sxm5-80gb.toml" --out "$tmp/fit" >$d/fit-launch.txt 2>&1
sed -n '/^Active models/,$p' "$tmp/fit/report.md" >>$d/fit-launch.txt
