#!/bin/bash
# Runs on the GPU machine (the device tool, from the repository root, with .gpu carried as
# docs/validation/cuda-sampler/pack.sh makes it): `stepcast sample --device cuda --plan` over
# the H100 rows' own operators (make_plan.sh), attention left out (the sampler times the
# unfused path; the runs used flash attention) and the optimizer too (a step over a stage's
# 1.7-6.7 billion weights: dims past the cuda plugin's 2^31, which ended the first try).
# Keeps in $OUT: samples.csv, hw.txt, sample.log.
set -u
: "${OUT:?}"
. docs/validation/cuda-sampler/unpack.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
timeout ${PLAN_TIMEOUT:-200} /tmp/g/inst/bin/stepcast sample --device cuda \
  --plan docs/validation/cuda-plan/plan.csv --families gemm,norm,elementwise,softmax \
  --seconds "${SECONDS_BUDGET:-120}" --passes 3 --out "$OUT/samples.csv" >"$OUT/hw.txt" \
  2>"$OUT/sample.log"
echo "sample rc $?"; tail -3 "$OUT/sample.log"
grep '^# plan\|^# skipped\|^# passes.spread' "$OUT/samples.csv" | sort | uniq -c | head -20
grep -c '^gemm,0,fp8' "$OUT/samples.csv"
