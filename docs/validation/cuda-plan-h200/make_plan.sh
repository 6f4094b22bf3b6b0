#!/bin/bash
# The operators of the H200 rows of docs/validation/torch-steps.csv (single-GPU PyTorch eager
# and torch.compile steps, bf16, sequence 2048, micro-batch 1-8), as `stepcast ops --csv`
# lists them under the rows' stacks: the plan that `stepcast sample --device cuda --plan`
# measures on an H200 (device.sh beside this file). The models are the rows' columns, written
# as model files the way `stepcast validate` reads a row (GPT rows: learned positions,
# LayerNorm, biases; the TinyLlama row: RoPE, RMSNorm, no biases; untied embeddings, as a row
# without the column). From the repository root
# with a release build in build-rel; writes docs/validation/cuda-plan-h200/plan.csv.
set -euo pipefail
sc=${SC:-build-rel/bin/stepcast}
out=docs/validation/cuda-plan-h200/plan.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name layers hidden ffn heads kv vocab activation stack
shapes="gpt-125m 12 768 3072 12 12 50257 gelu pytorch-eager
gpt-350m 24 1024 4096 16 16 50257 gelu pytorch-eager
gpt-760m 24 1536 6144 16 16 50257 gelu pytorch-eager
gpt-1.3b 24 2048 8192 32 32 50257 gelu pytorch-eager
tinyllama 22 2048 5632 32 4 32000 swiglu pytorch-eager
gpt-125m 12 768 3072 12 12 50257 gelu pytorch-compile
gpt-350m 24 1024 4096 16 16 50257 gelu pytorch-compile"
first=1
while read -r name layers hidden ffn heads kv vocab act stack; do
  if [ "$act" = gelu ]; then pos=learned; norm=layernorm; bias=true
  else pos=rope; norm=rmsnorm; bias=false; fi
  cat >"$tmp/$name.toml" <<TOML
[model]
name = "$name"
layers = $layers
hidden = $hidden
ffn_hidden = $ffn
heads = $heads
kv_heads = $kv
vocab = $vocab
max_seq = 2048
activation = "$act"
norm = "$norm"
position = "$pos"
linear_bias = $bias
tied_embeddings = false
TOML
  for mb in 1 2 4 8; do
    $sc ops --model "$tmp/$name.toml" --hardware h200-sxm-141gb --stack "$stack" --seq-len 2048 \
      --micro-batch "$mb" --dtype bf16 --csv >"$tmp/part.csv"
    if [ $first = 1 ]; then cat "$tmp/part.csv"; first=0; else tail -n +2 "$tmp/part.csv"; fi
  done
done <<<"$shapes" >"$out"
echo "$(($(wc -l <"$out") - 1)) rows -> $out"
