#!/bin/sh
# usage: keep_old.sh BLOCKS FILE COMMAND [ARG]...
# FILE first holds known bytes (20 kB); COMMAND then runs with its file size limit at BLOCKS
# (ulimit -f; SIGXFSZ ignored, so that a write past it fails with EFBIG instead of killing
# it). Passes (prints "old file kept") when COMMAND fails and FILE is byte for byte as it
# was, with no temporary left beside it; a writer that truncates FILE first fails this.
set -u
blocks=$1 file=$2
shift 2
yes 'the old, good file' | head -c 20000 > "$file" || exit 2
cp "$file" "$file.orig" || exit 2
(trap '' XFSZ; ulimit -f "$blocks"; exec "$@")
rc=$?
if [ "$rc" -eq 0 ]; then echo "keep_old: the command succeeded under the limit"; exit 1; fi
cmp "$file" "$file.orig" || { echo "keep_old: $file changed"; exit 1; }
dir=$(dirname "$file") base=$(basename "$file")
for t in "$dir/.$base.tmp."*; do
  [ -e "$t" ] && { echo "keep_old: temporary $t left"; exit 1; }
done
rm -f "$file.orig"
echo "old file kept (exit $rc)"
