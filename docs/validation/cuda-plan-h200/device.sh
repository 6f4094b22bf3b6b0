#!/bin/bash
# Runs on the GPU machine (the device tool, from the repository root, with .gpu carried as
# docs/validation/cuda-sampler/pack.sh makes it): the cuda plugin's kernels against host
# references, the designed plan (`stepcast sample --device cuda`), then the H200 rows' own
# operators (make_plan.sh beside this file; attention left out: the sampler times the unfused
# path, the rows ran SDPA's fused kernels), with a once-a-second nvidia-smi log through both.
# Keeps in $OUT: env.txt, designed.csv, designed.log, samples.csv, sample.log, smi.csv.
# DESIGNED_SECONDS=0 skips the designed plan (run 3: the plan alone, its weight gradients in
# their own layout, SC_GEMM_TN).
set -u
: "${OUT:?}"
. docs/validation/cuda-sampler/unpack.sh
sc=/tmp/g/inst/bin/stepcast
{ nvidia-smi
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version \
    --format=csv
  echo "libcublas.so.13: ${cub:-not found}"; uname -r
  timeout 120 /tmp/g/inst/bin/test_cuda_kernels 2>&1 | tail -5; echo "kernels test rc $?"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt" | tail -12
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 1000 >"$OUT/smi.csv" 2>&1 &
smi=$!
if [ "${DESIGNED_SECONDS:-90}" != 0 ]; then
  timeout $((${DESIGNED_SECONDS:-90} + 120)) $sc sample --device cuda \
    --families gemm,attention,norm,softmax,elementwise,optimizer \
    --seconds "${DESIGNED_SECONDS:-90}" --passes 3 --out "$OUT/designed.csv" \
    >"$OUT/designed.log" 2>&1
  echo "designed rc $?"; tail -3 "$OUT/designed.log"
fi
timeout $((${PLAN_SECONDS:-150} + 120)) $sc sample --device cuda \
  --plan docs/validation/cuda-plan-h200/plan.csv --families gemm,norm,elementwise,softmax,optimizer \
  --seconds "${PLAN_SECONDS:-150}" --passes 3 --out "$OUT/samples.csv" >"$OUT/sample.log" 2>&1
echo "plan rc $?"; tail -3 "$OUT/sample.log"
kill $smi
grep '^# skipped\|^# passes.spread' "$OUT/samples.csv" "$OUT/designed.csv" | sort | uniq -c | head -20
