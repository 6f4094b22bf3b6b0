#!/bin/sh
# one_line.sh STATUS COMMAND [ARG]...: run COMMAND and check that it exits with STATUS and
# writes exactly one line on stderr (ending in a line break), with no control character
# (below 0x20 or 0x7f) but that line break. Prints "stderr: <the line>" and, when every
# check holds, "one line, status STATUS" (the test's regex asks for both).
want=$1
shift
err=$(mktemp) || exit 1
"$@" > /dev/null 2> "$err"
rc=$?
printf 'stderr: '
cat "$err"
lines=$(wc -l < "$err")
# bytes after the last line break (a message without one), and raw control bytes
tail=$(tail -c 1 "$err" | od -An -c | tr -d ' ')
ctl=$(tr -d '\n' < "$err" | LC_ALL=C tr -d '\040-\176\200-\377' | wc -c)
rm -f "$err"
if [ "$rc" != "$want" ]; then
  echo "exit status $rc, not $want"
elif [ "$lines" -ne 1 ] || [ "$tail" != '\n' ]; then
  echo "$lines line breaks on stderr, not one at its end"
elif [ "$ctl" -ne 0 ]; then
  echo "$ctl raw control bytes on stderr"
else
  echo "one line, status $want"
fi
