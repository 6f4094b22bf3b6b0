/* For the libFuzzer targets of readers that take a path: the input written to a file in a
 * temporary folder of this process (created once, reused), so that the reader runs on it
 * exactly as on a user's file. */
#ifndef SC_FUZZ_FILE_H
#define SC_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The folder (mkdtemp under $TMPDIR or /tmp), or NULL. */
static inline const char *sc_fuzz_dir(void) {
  static char dir[512];
  if (dir[0] == '\0') {
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sc-fuzz-XXXXXX", t && t[0] ? t : "/tmp");
    if (mkdtemp(dir) == NULL) {
      dir[0] = '\0';
      return NULL;
    }
  }
  return dir;
}

/* Write data[0..size) to <dir>/<name> and return that path (static storage), NULL when it
 * cannot be written (the caller skips the input). */
static inline const char *sc_fuzz_write(const char *name, const uint8_t *data, size_t size) {
  static char path[2][600];
  static int k;
  const char *dir = sc_fuzz_dir();
  if (dir == NULL) return NULL;
  k ^= 1;
  snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
  FILE *f = fopen(path[k], "wb");
  if (f == NULL) return NULL;
  if (size > 0 && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return NULL;
  }
  if (fclose(f) != 0) return NULL;
  return path[k];
}

/* A refusal: a negative status and a message (NUL-terminated inside its buffer, not empty;
 * the CLI escapes what it carries from the input, core/cli/main.c). */
static inline void sc_fuzz_check_error(int rc, const char *msg, size_t cap) {
  if (rc >= 0 || msg[0] == '\0' || memchr(msg, '\0', cap) == NULL) __builtin_trap();
}

#endif
