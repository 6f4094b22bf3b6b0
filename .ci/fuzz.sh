#!/usr/bin/env bash
# CI: a short libFuzzer run of every fuzz target (tests/fuzz/, docs/fuzz.md), each from its
# committed seed corpus (tests/fuzz/corpus/<target>/) into a scratch corpus, bounded by time
# (SC_FUZZ_SECONDS, default 20 s) and by runs (SC_FUZZ_RUNS, default 200000), so that the
# whole step stays within a few minutes (12 targets). Builds with clang in build-fuzz/ (or
# SC_FUZZ_BUILD; .ci/deps.sh installs clang and its libFuzzer runtime). A crash, leak, UBSan
# report or timeout fails the step once every target has run; the input is kept as
# <build>/fuzz-artifacts/<target>-crash-... and printed (base64) for the log.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${SC_FUZZ_SECONDS:-20}
runs=${SC_FUZZ_RUNS:-200000}
b=${SC_FUZZ_BUILD:-build-fuzz}  # the build folder
targets=(toml trace model hardware topology stack job csv samples comm_validation ncclog residuals)
# the targets whose input is TOML get the TOML dictionary
with_dict=" toml model hardware topology stack job residuals "

CC=clang cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Debug -DSC_FUZZ=ON >/dev/null
cmake --build "$b" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]/#/fuzz_}"

rm -rf "$b/fuzz-corpus" "$b/fuzz-artifacts"
mkdir -p "$b/fuzz-artifacts"
failed=()
for t in "${targets[@]}"; do
  work="$b/fuzz-corpus/$t"
  mkdir -p "$work"
  args=(-max_total_time="$secs" -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$b/fuzz-artifacts/$t-")
  if [[ "$with_dict" == *" $t "* ]]; then args+=(-dict=tests/fuzz/toml.dict); fi
  echo "== fuzz_$t: ${secs} s or ${runs} runs"
  if ! "$b/tests/fuzz/fuzz_$t" "${args[@]}" "$work" "tests/fuzz/corpus/$t" > "$b/fuzz-$t.log" 2>&1
  then
    failed+=("$t")
    tail -n 60 "$b/fuzz-$t.log"
    for a in "$b/fuzz-artifacts/$t-"*; do
      [ -f "$a" ] || continue
      echo "-- reproducer $a (base64):"
      base64 "$a" | head -c 20000
      echo
    done
  fi
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|average_exec_per_sec))' \
    "$b/fuzz-$t.log" || true
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzzing found a failure in: ${failed[*]} (reproduce: $b/tests/fuzz/fuzz_<target> <file>)"
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets, no failure"
