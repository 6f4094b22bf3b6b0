#!/bin/bash
# The operators of the H100 rows of docs/validation/runs.csv (NeMo and Megatron-Bridge fp8
# runs on DGX-H100), one pipeline stage each (a stage's layers repeat the same shapes), as
# `stepcast ops --csv` lists them: the plan that `stepcast sample --plan` measures on an H100
# (docs/notes/0002-cuda-sampler-h100.md, "The H100 rows' own operators"). From the repository root with a
# release build in build-rel; writes docs/validation/cuda-plan/plan.csv.
set -euo pipefail
sc=${SC:-build-rel/bin/stepcast}
out=docs/validation/cuda-plan/plan.csv
# model tp cp seq (sequence parallelism wherever tp > 1, as validate assumes for these rows)
configs="llama2-7b 1 1 4096
llama2-13b 1 1 4096
llama2-70b 4 1 4096
llama3-8b 1 2 8192
llama3-70b 4 2 8192
llama2-7b 1 1 8192
llama2-7b 2 1 16384
llama2-7b 2 2 32768
llama2-7b 4 2 65536
llama2-7b 4 4 131072
llama2-7b 4 8 262144
llama2-7b 8 16 524288
llama3-8b 1 1 8192
llama3-70b 4 1 8192"
first=1
while read -r model tp cp seq; do
  sp=""
  [ "$tp" -gt 1 ] && sp=--sequence-parallel
  $sc ops --model "$model" --hardware h100-sxm5-80gb --tp "$tp" --cp "$cp" --seq-len "$seq" \
    --micro-batch 1 --dtype fp8 $sp --csv >/tmp/plan-part.csv
  if [ $first = 1 ]; then cat /tmp/plan-part.csv; first=0; else tail -n +2 /tmp/plan-part.csv; fi
done <<<"$configs" >"$out"
echo "$(($(wc -l <"$out") - 1)) rows -> $out"
