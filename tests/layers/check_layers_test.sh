#!/usr/bin/env bash
# check_layers.sh refuses what it must: on a copy of core/ (which must pass as it is), each
# planted fault alone must fail, naming the planted file:line.
# Usage: check_layers_test.sh [--root DIR]   (DIR: the source tree, default this script's)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ "${1:-}" = "--root" ] && root="$2"
check="$here/check_layers.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0

fresh() {  # a clean copy of the tree's core/ in $tmp/t
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t/core"
  cp -R "$root/core/src" "$root/core/cli" "$root/core/include" "$tmp/t/core/"
}

# expect NAME REGEX: check_layers.sh on $tmp/t fails and prints a line matching REGEX
expect() {
  local out rc=0
  out="$(bash "$check" --root "$tmp/t" 2>&1)" || rc=$?
  if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -Eq "$2"; then
    printf 'FAIL %s: exit %d, wanted a line matching /%s/; output:\n%s\n' "$1" "$rc" "$2" "$out"
    failures=$((failures + 1))
  else
    printf 'ok   %s: %s\n' "$1" "$(printf '%s\n' "$out" | grep -E "$2" | head -1)"
  fi
}

fresh
if out="$(bash "$check" --root "$tmp/t" 2>&1)"; then
  printf 'ok   clean copy: %s\n' "$out"
else
  printf 'FAIL clean copy refused:\n%s\n' "$out"
  failures=$((failures + 1))
fi

# a lower layer including a public header a higher layer owns
fresh
printf '/* planted */\n#include "stepcast/predict.h"\n' > "$tmp/t/core/src/toml/planted.c"
expect upward_public '^core/src/toml/planted\.c:2: toml \(layer 1\) includes "stepcast/predict\.h", owned by predict'

# a lower layer including a higher layer's internal header
fresh
printf '#include <stdio.h>\n\n#include "trace/trace_int.h"\n' > "$tmp/t/core/src/report/planted.c"
expect upward_internal '^core/src/report/planted\.c:3: report \(layer 7\) includes "trace/trace_int\.h", owned by trace'

# an upward include inside a public header
fresh
printf '#include "stepcast/sweep.h"\n' >> "$tmp/t/core/include/stepcast/spec.h"
expect upward_header '^core/include/stepcast/spec\.h:[0-9]+: spec \(layer 2\) includes "stepcast/sweep\.h"'

# a public header, a subsystem or an included header the tables do not place
fresh
printf '/* planted */\n' > "$tmp/t/core/include/stepcast/planted.h"
expect unowned_header '^core/include/stepcast/planted\.h: public header with no owner'
fresh
mkdir "$tmp/t/core/src/planted"
printf '#include "stepcast/stepcast.h"\n' > "$tmp/t/core/src/planted/planted.c"
expect unplaced_subsystem '^core/src/planted/: subsystem with no layer'
fresh
printf '#include "nowhere.h"\n' > "$tmp/t/core/src/spec/planted.c"
expect unknown_include '^core/src/spec/planted\.c:1: #include "nowhere\.h": no owner known'

# an allow-list entry whose include is gone
fresh
sed -i 's|^#include "stepcast/schedule.h"|/* removed */|' "$tmp/t/core/src/common/parallel.c"
expect stale_allow 'allow-list entry core/src/common/parallel\.c:stepcast/schedule\.h matches no'

if [ "$failures" -ne 0 ]; then
  echo "check_layers_test: $failures of 8 cases failed"
  exit 1
fi
echo "check_layers_test: 8 cases passed"
