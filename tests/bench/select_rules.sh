#!/bin/sh
# select_rules.sh: how well `stepcast fit`'s rule for the active residual does on shapes it
# never saw (docs/notes/0001-host-cpu-residuals.md, "The selection rule"). Fits the twenty-eight CPU sample sets kept
# in the repository (the Zen 5 host and its repeat, the two single-pass Zen 4 runs, the three
# Zen 4 runs in passes, the Zen 4 run with the attention tile and its four rounds, the two with
# the row exposures off powers of two, the second with the measured zero-fill, the one with the
# inline row maxima, the two with the kernels compiled once, the first fitted under the
# chained rule, the two with the in-place rate and the gather curve, and the one with the
# in-place rate stated as the DRAM rate, the first with the scale features unread and the
# four with 96 GEMM and 48 embedding shapes, the second on a busy machine, the fourth in five
# passes, and the two with the softmax's row rates) with
# the fit options given
# (e.g. --select either, --select both --margin 3, --gain 1, --read gemm.log2_k; none: fit's
# default, the chained rule), and
# compares, per family, the hybrid the rule selects on the training rows alone with the
# roofline, both scored on the held-out rows (the report's "hybrid, selected" column); then,
# per family, the roofline's and the selected hybrid's mean, and the means of a hybrid linear
# and gbdt model used always (the report's two hybrid columns), with how often each beat the
# roofline.
#
#   tests/bench/select_rules.sh [STEPCAST] [fit options...]
#
# STEPCAST defaults to build-rel/bin/stepcast; run from the repository root.
set -eu
bin=build-rel/bin/stepcast
case "${1:-}" in -*|"") ;; *) bin=$1; shift ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
d=docs/validation
i=0
for s in hardware/host-cpu:hardware/host-cpu.toml \
         $d/host-cpu-repeat:$d/host-cpu-repeat/host-cpu.toml \
         $d/host-cpu-zen4:$d/host-cpu-zen4/host-cpu.toml \
         $d/host-cpu-zen4/repeat:$d/host-cpu-zen4/repeat/host-cpu.toml \
         $d/host-cpu-zen4-passes/run1/host-cpu:$d/host-cpu-zen4-passes/run1/host-cpu.toml \
         $d/host-cpu-zen4-passes/run2/host-cpu:$d/host-cpu-zen4-passes/run2/host-cpu.toml \
         $d/host-cpu-zen4-passes/host-cpu:$d/host-cpu-zen4-passes/host-cpu.toml \
         $d/host-cpu-zen4-tile/host-cpu:$d/host-cpu-zen4-tile/host-cpu.toml \
         $d/host-cpu-zen4-expo/host-cpu:$d/host-cpu-zen4-expo/host-cpu.toml \
         $d/host-cpu-zen4-fill/host-cpu:$d/host-cpu-zen4-fill/host-cpu.toml \
         $d/host-cpu-zen4-maxf/host-cpu:$d/host-cpu-zen4-maxf/host-cpu.toml \
         $d/host-cpu-zen4-obj/host-cpu:$d/host-cpu-zen4-obj/host-cpu.toml \
         $d/host-cpu-zen4-obj/run2/host-cpu:$d/host-cpu-zen4-obj/run2/host-cpu.toml \
         $d/host-cpu-zen4-tile/r0057/host-cpu:$d/host-cpu-zen4-tile/r0057/host-cpu.toml \
         $d/host-cpu-zen4-tile/r0113/host-cpu:$d/host-cpu-zen4-tile/r0113/host-cpu.toml \
         $d/host-cpu-zen4-tile/r0124/host-cpu:$d/host-cpu-zen4-tile/r0124/host-cpu.toml \
         $d/host-cpu-zen4-tile/r0207/host-cpu:$d/host-cpu-zen4-tile/r0207/host-cpu.toml \
         $d/host-cpu-zen4-chain/host-cpu:$d/host-cpu-zen4-chain/host-cpu.toml \
         $d/host-cpu-zen4-gather/host-cpu:$d/host-cpu-zen4-gather/host-cpu.toml \
         $d/host-cpu-zen4-gather/noisy/host-cpu:$d/host-cpu-zen4-gather/noisy/host-cpu.toml \
         $d/host-cpu-zen4-rmw-hits/host-cpu:$d/host-cpu-zen4-rmw-hits/host-cpu.toml \
         $d/host-cpu-zen4-shape/host-cpu:$d/host-cpu-zen4-shape/host-cpu.toml \
         $d/host-cpu-zen4-more/host-cpu:$d/host-cpu-zen4-more/host-cpu.toml \
         $d/host-cpu-zen4-more/noisy/host-cpu:$d/host-cpu-zen4-more/noisy/host-cpu.toml \
         $d/host-cpu-zen4-more/run3/host-cpu:$d/host-cpu-zen4-more/run3/host-cpu.toml \
         $d/host-cpu-zen4-more/passes5/host-cpu:$d/host-cpu-zen4-more/passes5/host-cpu.toml \
         $d/host-cpu-zen4-softmax-rate/host-cpu:$d/host-cpu-zen4-softmax-rate/host-cpu.toml \
         $d/host-cpu-zen4-softmax-rate/run2/host-cpu:$d/host-cpu-zen4-softmax-rate/run2/host-cpu.toml; do
  i=$((i + 1))
  "$bin" fit --samples "${s%%:*}/samples.csv" --hardware "${s##*:}" --out "$out/$i" "$@" \
      > "$out/$i.txt"
  # the held-out table: family | train | test | analytical | 4 kinds | hybrid, selected | ...
  # -> set family roofline selected (kind) hybrid-linear hybrid-gbdt
  sed -n '/^## Held out/,/^The rule/p' "$out/$i.txt" | grep '^| [a-z]' | grep -v '^| family' |
      awk -F'|' -v set="${s%%:*}" '{ split($10, a, " "); printf "%s %s %.1f %.1f %s %.1f %.1f\n",
          set, $2, $5, a[1], a[2], $6, $7 }' | sed 's/  */ /g'
done | awk '{ print; n++; r += $3; s += $4; d = $4 - $3
              if (d < -0.05) { w++; g -= d } if (d > 0.05) { l++; L += d }
              if (d > worst) worst = d; u += ($4 < 5); ur += ($3 < 5)
              f = $2; if (!(f in fn)) order[++nf] = f
              fn[f]++; fr[f] += $3; fs[f] += $4; fl[f] += $6; fg[f] += $7
              fb[f] += ($4 < $3 - 0.05); fw[f] += ($4 > $3 + 0.05)
              flb[f] += ($6 < $3 - 0.05); fgb[f] += ($7 < $3 - 0.05)
              lb += ($6 < $3 - 0.05); gb += ($7 < $3 - 0.05) }
            END { for (i = 1; i <= nf; i++) { f = order[i]
                    printf "# %-13s roofline %5.2f %%, selected %5.2f %% (better in %d, worse " \
                           "in %d); always hybrid linear %5.2f %% (better in %d), gbdt %5.2f " \
                           "%% (better in %d) of %d\n", f, fr[f] / fn[f], fs[f] / fn[f], fb[f],
                           fw[f], fl[f] / fn[f], flb[f], fg[f] / fn[f], fgb[f], fn[f] }
                  printf "# always hybrid linear: better than the roofline in %d cases, gbdt in " \
                         "%d\n", lb, gb
                  printf "# %d cases: held-out MAPE, selected hybrid %.2f %% against %.2f " \
                  "%% for the roofline; better in %d (by %.1f points in all), worse in %d (by " \
                  "%.1f, at most %.1f); under 5 %%: %d (roofline %d)\n", n, s / n, r / n, w, g,
                  l, L, worst, u, ur }'
