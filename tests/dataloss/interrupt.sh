#!/bin/sh
# usage: interrupt.sh FILE COMMAND [ARG]...: FILE holds known bytes; COMMAND (a long
# stepcast sample --out FILE) is interrupted with SIGTERM once its temporary beside FILE
# exists (at most 120 s of waiting; a background job of a script ignores SIGINT; stepcast
# sample handles both alike), so that the interruption always falls mid-write, however fast
# the machine. Passes when FILE is then as it was and no temporary is left beside it.
set -u
file=$1
shift
echo 'the old, good samples' > "$file" && cp "$file" "$file.orig" || exit 2
"$@" > /dev/null 2>&1 &
pid=$!
dir=$(dirname "$file") base=$(basename "$file")
n=0
until ls "$dir/.$base.tmp."* > /dev/null 2>&1 || [ $n -ge 1200 ]; do
  sleep 0.1
  n=$((n + 1))
done
[ $n -lt 1200 ] || { kill -TERM "$pid"; echo "interrupt: no temporary beside $file"; exit 1; }
kill -TERM "$pid"
wait "$pid"
cmp "$file" "$file.orig" || { echo "interrupt: $file changed"; exit 1; }
for t in "$dir/.$base.tmp."*; do
  [ -e "$t" ] && { echo "interrupt: temporary $t left"; exit 1; }
done
rm -f "$file.orig"
echo "old file kept after SIGTERM"
