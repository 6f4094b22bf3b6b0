#!/bin/sh
# usage: interrupt.sh FILE COMMAND [ARG]...: FILE holds known bytes; COMMAND (a long
# stepcast sample --out FILE) is interrupted with SIGTERM after 2 s (a background job of a
# script ignores SIGINT; stepcast sample handles both alike). Passes when FILE is then
# as it was and no temporary is left beside it.
set -u
file=$1
shift
echo 'the old, good samples' > "$file" && cp "$file" "$file.orig" || exit 2
"$@" > /dev/null 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
wait "$pid"
cmp "$file" "$file.orig" || { echo "interrupt: $file changed"; exit 1; }
dir=$(dirname "$file") base=$(basename "$file")
for t in "$dir/.$base.tmp."*; do
  [ -e "$t" ] && { echo "interrupt: temporary $t left"; exit 1; }
done
rm -f "$file.orig"
echo "old file kept after SIGTERM"
