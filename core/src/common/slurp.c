/* Whole inputs read with a cap (slurp.h). */
#include "common/slurp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sc__slurp(const char *path, size_t max, char **text, size_t *len, sc_error *err) {
  FILE *f;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  if (path == NULL || text == NULL || len == NULL)
    return sc_error_set(err, SC_EINVAL, "sc__slurp: NULL argument");
  *text = NULL;
  *len = 0;
  f = fopen(path, "rb");
  if (f == NULL) return sc_error_set(err, SC_EIO, "%s: %s", path, strerror(errno));
  for (;;) {
    size_t got;
    if (n + 1 >= cap) {
      size_t ncap = cap ? 2 * cap : 65536;
      char *q;
      if (ncap > max + 2) ncap = max + 2; /* one byte past the cap tells it is exceeded */
      if (ncap <= cap) ncap = cap + 1;
      q = realloc(buf, ncap);
      if (q == NULL) {
        free(buf);
        fclose(f);
        return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
      }
      buf = q;
      cap = ncap;
    }
    got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (n > max) {
      free(buf);
      fclose(f);
      return sc_error_set(err, SC_ELIMIT, "%s: larger than %zu MiB, the cap on a text input "
                          "(SC_TEXT_INPUT_MAX; an endless stream such as /dev/zero?)", path,
                          max >> 20);
    }
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(buf);
    fclose(f);
    return sc_error_set(err, SC_EIO, "%s: read error: %s", path, e ? strerror(e) : "?");
  }
  fclose(f);
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return SC_OK;
}

FILE *sc__fopen_text(const char *path, char **text, sc_error *err) {
  size_t len = 0;
  FILE *f;
  if (sc__slurp(path, SC_TEXT_INPUT_MAX, text, &len, err) != SC_OK) return NULL;
  /* fmemopen of 0 bytes may fail: the NUL after the text is not read (size len) */
  f = fmemopen(*text, len ? len : 1, "r");
  if (f != NULL && len == 0) (void)fgetc(f); /* at the end at once */
  if (f == NULL) {
    free(*text);
    *text = NULL;
    sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  }
  return f;
}
