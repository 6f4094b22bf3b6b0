/*
 * fgets that knows how many bytes it read: a line with a NUL byte in it (a binary file, a
 * corrupted copy) would otherwise look shorter than it is to strlen, and its tail would be
 * dropped without a word. The line readers of the samples and published-results CSVs use it
 * to refuse such a line.
 */
#ifndef SC_COMMON_READLINE_H
#define SC_COMMON_READLINE_H

#include <stdio.h>
#include <string.h>

/* fgets(buf, cap, f); *len = the bytes it stored before its terminating NUL. Returns 0 at
 * end of file. *len != strlen(buf) means the line holds a NUL byte. */
static inline int sc__read_line(char *buf, size_t cap, FILE *f, size_t *len) {
  size_t i;
  memset(buf, 'x', cap); /* fgets leaves what follows its terminator untouched */
  if (fgets(buf, (int)cap, f) == NULL) return 0;
  for (i = cap; i > 0 && buf[i - 1] != '\0'; i--) {
  }
  *len = i > 0 ? i - 1 : 0;
  return 1;
}

#endif
