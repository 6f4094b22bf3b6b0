#!/bin/sh
# Speed of `stepcast estimate` on a table of 100k operators (issue: "a benchmark prints the
# speed of estimate on 100k rows"). A program, not a test: run it on a Release build,
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build
#   sh tests/bench/bench_estimate.sh build/bin/stepcast [ROWS]
# The table holds distinct shapes (no two rows alike, so the estimate memo never answers) of
# six families, each with a measured time, so that the scoring runs too. Prints rows, seconds
# and rows per second of the whole command (reading, pricing, scoring, printing the summary).
set -eu
bin=${1:-build/bin/stepcast}
rows=${2:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v n="$rows" 'BEGIN {
  print "family,variant,dtype,dims,measured_s";
  for (i = 0; i < n; i++) {
    k = i % 6; s = 64 + int(i / 6);
    if (k == 0) printf "gemm,0,bf16,1x%dx4096x4096,1e-3\n", s;
    else if (k == 1) printf "attention,%d,bf16,1x16x16x%dx%d,128,1,1e-3\n", i % 2, s, s;
    else if (k == 2) printf "norm,%d,bf16,%dx4096,1e-4\n", i % 4, s;
    else if (k == 3) printf "elementwise,%d,bf16,%d,1e-4\n", i % 11, s * 1024;
    else if (k == 4) printf "softmax,%d,bf16,%dx2048,1e-4\n", i % 2, s;
    else printf "optimizer,0,bf16,%d,1e-3\n", s * 65536;
  } }' > "$tmp/table.csv"
# attention dims are 7 numbers joined by x: fix the awk line's commas
sed -i 's/^\(attention,[01],bf16,[0-9x]*\),128,1,/\1x128x1,/' "$tmp/table.csv"
start=$(date +%s.%N)
"$bin" estimate --hardware a100-sxm4-80gb --csv "$tmp/table.csv" --summary > "$tmp/out.txt"
end=$(date +%s.%N)
tail -9 "$tmp/out.txt"
awk -v n="$rows" -v a="$start" -v b="$end" 'BEGIN {
  printf "estimate: %d rows in %.3f s: %.0f rows/s (one core)\n", n, b - a, n / (b - a) }'
