#!/bin/sh
# The embedding of the CPU training step call by call (docs/notes/0001-host-cpu-residuals.md, "The embedding in
# the step"): train_step at the five shapes of host-cpu-zen4-gather/run.sh, three rounds,
# each printing its four embedding calls' measured times, and stepcast ops' estimate of the
# same four operators on the same hardware file. Run from the repository root after a
# release build (build-rel, with --target train_step); D = the output folder.
#   docs/validation/host-cpu-zen4-step-embedding/run.sh /tmp/run/s
set -e
D=${1:?usage: $0 OUTDIR}
B=${B:-build-rel/bin}
H=${H:-docs/validation/host-cpu-zen4-scatter/host-cpu.toml}
rm -rf "$D"
mkdir -p "$D"
i=0
for s in "--layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 256 --batch 1" \
         "--layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 512 --batch 1" \
         "--layers 2 --hidden 384 --heads 6 --ffn 1536 --vocab 8192 --seq 256 --batch 1" \
         "--layers 4 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 256 --batch 2" \
         "--layers 2 --hidden 512 --heads 8 --ffn 2048 --vocab 16384 --seq 256 --batch 1"; do
  i=$((i + 1))
  seq=$(echo "$s" | sed 's/.*--seq \([0-9]*\).*/\1/')
  mb=$(echo "$s" | sed 's/.*--batch \([0-9]*\).*/\1/')
  for r in 1 2 3; do
    echo "=== shape $i round $r: $s ($(date -u +%H:%M:%S))" >> "$D/train_step.txt"
    # shellcheck disable=SC2086
    OPENBLAS_NUM_THREADS=1 "$B/train_step" --steps 7 $s --hardware "$H" \
      --model-out "$D/model$i.toml" >> "$D/train_step.txt" 2>&1
  done
  echo "=== shape $i: $s" >> "$D/ops.txt"
  "$B/stepcast" ops --model "$D/model$i.toml" --hardware "$H" --dtype fp32 --seq-len "$seq" \
    --micro-batch "$mb" | grep -E '^ +(embed|embed_pos|embed_pos\.bwd|embed\.bwd) ' >> "$D/ops.txt"
done
