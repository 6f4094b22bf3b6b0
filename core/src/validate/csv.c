/* RFC 4180 CSV reader (see stepcast/csv.h). */
#include "stepcast/csv.h"
#include "common/slurp.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"

struct sc_csv {
  char path[SC_PATH_MAX];
  char *buf;          /* every field's text, NUL-terminated, one after another */
  size_t *fields;     /* offsets into buf: header fields, then row by row */
  size_t nfields;
  size_t ncols;
  size_t nrows;
  uint32_t *lines;    /* line of each data row */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return SC_OK;
  size_t ncap = *cap ? *cap : 64;
  while (ncap < need) ncap *= 2;
  void *q = realloc(*p, ncap * elem);
  if (q == NULL) return SC_ENOMEM;
  *p = q;
  *cap = ncap;
  return SC_OK;
}

void sc_csv_free(sc_csv *c) {
  if (c == NULL) return;
  free(c->buf);
  free(c->fields);
  free(c->lines);
  free(c);
}

/* Name of column col for messages while parsing (the header may be incomplete). */
static const char *colname_or(const sc_csv *c, size_t col, char *tmp, size_t cap) {
  if (c->ncols > 0 && col < c->ncols) return c->buf + c->fields[col];
  snprintf(tmp, cap, "#%zu", col + 1);
  return tmp;
}

int sc_csv_parse(const char *path, const char *text, size_t len, sc_csv **out, sc_error *err) {
  sc_csv *c = calloc(1, sizeof *c);
  size_t bcap = 0, fcap = 0, lcap = 0, blen = 0;
  size_t i = 0, rowfields = 0;
  uint32_t line = 1, rowline = 1;
  int rc = SC_ENOMEM;
  char tmp[32];
  *out = NULL;
  if (c == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  snprintf(c->path, sizeof c->path, "%s", path);
  { /* a NUL byte would end a field early without a word: a binary or corrupted file */
    const char *nul = memchr(text, '\0', len);
    if (nul != NULL) {
      uint32_t at = 1;
      for (const char *p = text; p < nul; p++) at += *p == '\n';
      sc_csv_free(c);
      return sc_error_set(err, SC_EPARSE, "%s:%u: a NUL byte in the line (not a text file?)",
                          path, at);
    }
  }
  if (grow((void **)&c->buf, &bcap, len + 1, 1) != SC_OK) goto nomem;

  while (i < len) {
    /* At the start of a record: skip blank lines. */
    if (rowfields == 0 && (text[i] == '\n' || (text[i] == '\r' && i + 1 < len &&
                                                 text[i + 1] == '\n'))) {
      i += text[i] == '\r' ? 2 : 1;
      line++;
      continue;
    }
    if (rowfields == 0) rowline = line;
    /* One field. */
    size_t start = blen;
    uint32_t qline = line;
    if (text[i] == '"') {
      i++;
      for (;;) {
        if (i >= len) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': unterminated quoted field "
                            "(the quote opened on line %u is never closed)", path, qline,
                            colname_or(c, rowfields, tmp, sizeof tmp), qline);
          goto fail;
        }
        if (text[i] == '"') {
          if (i + 1 < len && text[i + 1] == '"') {
            c->buf[blen++] = '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (text[i] == '\n') line++;
        c->buf[blen++] = text[i++];
      }
      if (i < len && text[i] != ',' && text[i] != '\n' &&
          !(text[i] == '\r' && i + 1 < len && text[i + 1] == '\n') &&
          !(text[i] == '\r' && i + 1 == len)) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': text after the closing quote",
                          path, line, colname_or(c, rowfields, tmp, sizeof tmp));
        goto fail;
      }
    } else {
      while (i < len && text[i] != ',' && text[i] != '\n' &&
             !(text[i] == '\r' && (i + 1 == len || text[i + 1] == '\n'))) {
        if (text[i] == '"') {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': quote inside an unquoted "
                            "field (quote the whole field and double the quote)", path, line,
                            colname_or(c, rowfields, tmp, sizeof tmp));
          goto fail;
        }
        c->buf[blen++] = text[i++];
      }
    }
    c->buf[blen++] = '\0';
    if (grow((void **)&c->fields, &fcap, c->nfields + 1, sizeof *c->fields) != SC_OK)
      goto nomem;
    c->fields[c->nfields++] = start;
    rowfields++;
    /* Field separator or record end. */
    int end_of_record = 0;
    if (i >= len) {
      end_of_record = 1;
    } else if (text[i] == ',') {
      i++;
      if (i >= len) {
        /* "a,b," at the end of the file: one more, empty field. */
        c->buf[blen++] = '\0';
        if (grow((void **)&c->fields, &fcap, c->nfields + 1, sizeof *c->fields) != SC_OK)
          goto nomem;
        c->fields[c->nfields++] = blen - 1;
        rowfields++;
        end_of_record = 1;
      }
    } else {
      i += text[i] == '\r' ? 2 : 1;
      if (i > len) i = len;
      line++;
      end_of_record = 1;
    }
    if (end_of_record) {
      if (c->ncols == 0) {
        c->ncols = rowfields;
      } else {
        if (rowfields != c->ncols) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: row has %zu fields, the header has %zu "
                            "(column '%s' %s)", path, rowline, rowfields, c->ncols,
                            colname_or(c, rowfields < c->ncols ? rowfields : c->ncols - 1,
                                       tmp, sizeof tmp),
                            rowfields < c->ncols ? "and later are missing" :
                                                   "is followed by extra fields");
          goto fail;
        }
        if (grow((void **)&c->lines, &lcap, c->nrows + 1, sizeof *c->lines) != SC_OK)
          goto nomem;
        c->lines[c->nrows++] = rowline;
      }
      rowfields = 0;
    }
  }
  if (c->ncols == 0) {
    rc = sc_error_set(err, SC_EPARSE, "%s:1: no header row", path);
    goto fail;
  }
  /* Trim spaces around header names; reject empty and duplicate names. */
  for (size_t k = 0; k < c->ncols; k++) {
    char *h = c->buf + c->fields[k];
    size_t n = strlen(h);
    while (n > 0 && isspace((unsigned char)h[n - 1])) h[--n] = '\0';
    while (*h && isspace((unsigned char)*h)) h++;
    c->fields[k] = (size_t)(h - c->buf);
    if (*h == '\0') {
      rc = sc_error_set(err, SC_EPARSE, "%s:1: header column %zu has no name", path, k + 1);
      goto fail;
    }
    for (size_t m = 0; m < k; m++) {
      if (strcmp(c->buf + c->fields[m], h) == 0) {
        rc = sc_error_set(err, SC_EPARSE, "%s:1: column '%s' appears twice in the header",
                          path, h);
        goto fail;
      }
    }
  }
  *out = c;
  return SC_OK;
nomem:
  rc = sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
fail:
  sc_csv_free(c);
  return rc;
}

int sc_csv_load(const char *path, sc_csv **out, sc_error *err) {
  char *text = NULL;
  size_t len = 0;
  int rc;
  *out = NULL;
  /* capped at SC_TEXT_INPUT_MAX (common/slurp.h): /dev/zero is an error, not all memory */
  if ((rc = sc__slurp(path, SC_TEXT_INPUT_MAX, &text, &len, err)) != SC_OK) return rc;
  rc = sc_csv_parse(path, text, len, out, err);
  free(text);
  return rc;
}

size_t sc_csv_nrows(const sc_csv *c) { return c->nrows; }
size_t sc_csv_ncols(const sc_csv *c) { return c->ncols; }
const char *sc_csv_path(const sc_csv *c) { return c->path; }

const char *sc_csv_colname(const sc_csv *c, size_t col) {
  return col < c->ncols ? c->buf + c->fields[col] : NULL;
}

int sc_csv_column(const sc_csv *c, const char *name) {
  for (size_t k = 0; k < c->ncols; k++) {
    if (strcmp(c->buf + c->fields[k], name) == 0) return (int)k;
  }
  return -1;
}

int sc_csv_require(const sc_csv *c, const char *const *names, size_t n, int *idx,
                   sc_error *err) {
  for (size_t k = 0; k < n; k++) {
    idx[k] = sc_csv_column(c, names[k]);
    if (idx[k] < 0)
      return sc_error_set(err, SC_ESPEC, "%s:1: required column '%s' is missing from the "
                          "header", c->path, names[k]);
  }
  return SC_OK;
}

const char *sc_csv_field(const sc_csv *c, size_t row, size_t col) {
  if (row >= c->nrows || col >= c->ncols) return NULL;
  return c->buf + c->fields[(row + 1) * c->ncols + col];
}

uint32_t sc_csv_line(const sc_csv *c, size_t row) { return row < c->nrows ? c->lines[row] : 0; }

/* The field trimmed into tmp; returns 0 when empty. */
static int trimmed(const sc_csv *c, size_t row, size_t col, char *tmp, size_t cap) {
  const char *s = sc_csv_field(c, row, col);
  size_t n;
  if (s == NULL) s = "";
  while (*s && isspace((unsigned char)*s)) s++;
  n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
  if (n >= cap) n = cap - 1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  return n > 0;
}

static int bad(const sc_csv *c, size_t row, size_t col, const char *text, const char *what,
               sc_error *err) {
  return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': '%s' is not %s", c->path,
                      sc_csv_line(c, row), sc_csv_colname(c, col) ? sc_csv_colname(c, col) : "?",
                      text, what);
}

int sc_csv_i64(const sc_csv *c, size_t row, size_t col, int64_t *out, int *known,
               sc_error *err) {
  char tmp[64], *end;
  long long v;
  *known = 0;
  if (!trimmed(c, row, col, tmp, sizeof tmp)) return SC_OK;
  errno = 0;
  v = strtoll(tmp, &end, 10);
  if (*end != '\0' || errno == ERANGE || end == tmp)
    return bad(c, row, col, tmp, "an integer", err);
  *out = (int64_t)v;
  *known = 1;
  return SC_OK;
}

int sc_csv_u32(const sc_csv *c, size_t row, size_t col, uint32_t *out, int *known,
               sc_error *err) {
  int64_t v = 0;
  int rc = sc_csv_i64(c, row, col, &v, known, err);
  if (rc != SC_OK) {
    char tmp[64];
    trimmed(c, row, col, tmp, sizeof tmp);
    return bad(c, row, col, tmp, "a non-negative integer", err);
  }
  if (!*known) return SC_OK;
  if (v < 0 || v > (int64_t)UINT32_MAX) {
    char tmp[64];
    *known = 0;
    trimmed(c, row, col, tmp, sizeof tmp);
    return bad(c, row, col, tmp, "a non-negative integer below 2^32", err);
  }
  *out = (uint32_t)v;
  return SC_OK;
}

int sc_csv_double(const sc_csv *c, size_t row, size_t col, double *out, int *known,
                  sc_error *err) {
  char tmp[64], *end;
  double v;
  *known = 0;
  if (!trimmed(c, row, col, tmp, sizeof tmp)) return SC_OK;
  errno = 0;
  v = strtod(tmp, &end);
  if (*end != '\0' || end == tmp || !isfinite(v) || errno == ERANGE)
    return bad(c, row, col, tmp, "a finite number", err);
  *out = v;
  *known = 1;
  return SC_OK;
}
