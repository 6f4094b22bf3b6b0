#!/bin/sh
# The full host run of this folder (docs/notes/0001-host-cpu-residuals.md, "In-place updates and gathers"):
# sample (600 s, 7 repetitions, 3 passes), fit with the rows written out, then the real
# training step at five shapes, three rounds, against the hardware file just written.
# Run from the repository root after a release build (build-rel); D = the output folder.
#   docs/validation/host-cpu-zen4-gather/run.sh /tmp/run/d
set -e
D=${1:?usage: $0 OUTDIR}
B=${B:-build-rel/bin}
rm -rf "$D"
mkdir -p "$D/host-cpu"
OPENBLAS_NUM_THREADS=1 "$B/stepcast" sample --device cpu --out "$D/host-cpu/samples.csv" \
  --seconds 600 --min-reps 7 --hardware-out "$D/host-cpu.toml" > /dev/null 2> "$D/sample.err"
"$B/stepcast" fit --samples "$D/host-cpu/samples.csv" --out "$D/host-cpu/residuals" \
  --rows "$D/rows.csv" > "$D/fit.txt" 2>&1
for r in 1 2 3; do
  for s in "--layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 256 --batch 1" \
           "--layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 512 --batch 1" \
           "--layers 2 --hidden 384 --heads 6 --ffn 1536 --vocab 8192 --seq 256 --batch 1" \
           "--layers 4 --hidden 256 --heads 4 --ffn 1024 --vocab 8192 --seq 256 --batch 2" \
           "--layers 2 --hidden 512 --heads 8 --ffn 2048 --vocab 16384 --seq 256 --batch 1"; do
    echo "=== round $r: $s ($(date -u +%H:%M:%S))" >> "$D/train_step.txt"
    # shellcheck disable=SC2086
    OPENBLAS_NUM_THREADS=1 "$B/train_step" --steps 7 $s --hardware "$D/host-cpu.toml" \
      >> "$D/train_step.txt" 2>&1
  done
done
