#!/bin/bash
# Runs on the GPU machine (the device tool, from the repository root, with .gpu carried; see
# pack.sh): what the GPU is, a smoke run of every family the cuda plugin measures, a PyTorch
# cross-check of the microbenchmarks (torch_check.py), then the sampler. Everything it keeps
# goes to $OUT: env.txt, kernels.txt (the kernels against host references), smoke.log,
# torch.txt, samples.csv, hw.txt (the [hardware] lines), sample.log, smi.csv (clocks, power
# and temperature each second through the sampler). SECONDS_BUDGET (default 180) and PASSES
# (default 5) are the sampler's --seconds and --passes.
set -u
: "${OUT:?}"
budget=${SECONDS_BUDGET:-180}
passes=${PASSES:-5}
here=docs/validation/cuda-sampler
. docs/validation/cuda-sampler/unpack.sh
sc=/tmp/g/inst/bin/stepcast
{ nvidia-smi
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version \
    --format=csv
  echo "libcublas.so.13: ${cub:-not found}"; uname -r; } >"$OUT/env.txt" 2>&1
head -40 "$OUT/env.txt"
$sc plugins 2>&1 | grep -i cuda
timeout 120 /tmp/g/inst/bin/test_cuda_kernels >"$OUT/kernels.txt" 2>&1
echo "kernels test rc $?"; tail -5 "$OUT/kernels.txt"
fams=gemm,attention,norm,softmax,elementwise,optimizer
if ! timeout 120 $sc sample --device cuda --quick --passes 1 --seconds 10 --out /tmp/smoke.csv \
    >/tmp/smoke.hw 2>"$OUT/smoke.log"; then
  echo "smoke (all families) failed:"; tail -3 "$OUT/smoke.log"
  fams=""
  for f in gemm attention norm softmax elementwise optimizer; do
    if timeout 60 $sc sample --device cuda --quick --passes 1 --seconds 3 --families $f \
        --out /tmp/smoke-$f.csv >/dev/null 2>>"$OUT/smoke.log"; then fams=$fams${fams:+,}$f
    else echo "smoke $f failed: $(tail -1 "$OUT/smoke.log")"; fi
  done
  [ -n "$fams" ] || exit 1
fi
echo "smoke ok: $fams"; grep -c '^[a-z]' /tmp/smoke*.csv
timeout 120 python3 $here/torch_check.py >"$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 1000 >"$OUT/smi.csv" 2>&1 &
smi=$!
timeout $((budget + 150)) $sc sample --device cuda --families $fams --seconds "$budget" \
  --passes "$passes" --out "$OUT/samples.csv" >"$OUT/hw.txt" 2>"$OUT/sample.log"
echo "sample rc $?"; kill $smi; tail -5 "$OUT/sample.log"; cat "$OUT/hw.txt"
grep '^# micro\|^# skipped\|^# pass' "$OUT/samples.csv" | head -30
