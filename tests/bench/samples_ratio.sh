#!/bin/sh
# samples_ratio.sh: how two sets of `stepcast sample` runs of the same plan differ, per
# operator family and variant (docs/notes/0001-host-cpu-residuals.md, "Kernels out of line, staggered buffers and
# the attention tile"). For every shape in all four files, the geometric mean of B1 and B2's
# medians over that of A1 and A2's; per (family, variant) the median ratio, its range, and the
# run-to-run ratios A2/A1 and B2/B1 (medians) as the noise to read it against.
#
#   tests/bench/samples_ratio.sh A1.csv A2.csv B1.csv B2.csv
set -eu
[ $# -eq 4 ] || { echo "usage: $0 A1.csv A2.csv B1.csv B2.csv" >&2; exit 2; }
awk -F, '
  function med(s,    n, a, i, j, x) {   # median of the space-separated numbers in s
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  FNR == 1 { f++ }
  /^#/ || /^family/ || NF < 14 { next }
  { k = $1; for (i = 2; i <= 12; i++) k = k "," $i; t[f, k] = $14; keys[k] = $1 "." $2 }
  END {
    for (k in keys) {
      if (!((1, k) in t && (2, k) in t && (3, k) in t && (4, k) in t)) continue
      g = keys[k]; a = sqrt(t[1, k] * t[2, k]); b = sqrt(t[3, k] * t[4, k])
      r[g] = r[g] " " b / a; na[g] = na[g] " " t[2, k] / t[1, k]; nb[g] = nb[g] " " t[4, k] / t[3, k]
      if (!(g in n) || b / a < lo[g]) lo[g] = b / a
      if (!(g in n) || b / a > hi[g]) hi[g] = b / a
      n[g]++
    }
    printf "%-18s %5s %9s %15s %9s %9s\n", "family.variant", "rows", "B/A", "(range)", "A2/A1", "B2/B1"
    for (g in n) printf "%-18s %5d %9.3f  (%.3f-%.3f) %9.3f %9.3f\n", g, n[g], med(r[g]), lo[g], hi[g], med(na[g]), med(nb[g]) | "sort"
  }' "$1" "$2" "$3" "$4"
