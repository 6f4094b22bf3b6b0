#!/bin/sh
# compare.sh CMD_A... -- CMD_B...
# Runs both commands and fails unless their standard outputs are byte-identical and both
# exit 0 (stepcast sweep's serial, threaded and MPI runs must print the same thing).
# COMPARE_IGNORE (an extended regex), when set, drops matching lines from both first
# (the timing line, and the predicted/pruned split, which depends on how work is shared).
set -u
a=""
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do a="$a '$1'"; shift; done
[ "$#" -gt 0 ] || { echo "compare.sh: missing --" >&2; exit 2; }
shift
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
eval "$a" > "$tmp/a" || { echo "compare.sh: first command failed" >&2; exit 1; }
"$@" > "$tmp/b" || { echo "compare.sh: second command failed" >&2; exit 1; }
[ -s "$tmp/a" ] || { echo "compare.sh: empty output" >&2; exit 1; }
if [ -n "${COMPARE_IGNORE:-}" ]; then
  grep -Ev "$COMPARE_IGNORE" "$tmp/a" > "$tmp/a2"; mv "$tmp/a2" "$tmp/a"
  grep -Ev "$COMPARE_IGNORE" "$tmp/b" > "$tmp/b2"; mv "$tmp/b2" "$tmp/b"
fi
if cmp -s "$tmp/a" "$tmp/b"; then
  echo "identical: $(wc -l < "$tmp/a") lines"
  exit 0
fi
echo "outputs differ:" >&2
diff "$tmp/a" "$tmp/b" | head -20 >&2
exit 1
