/*
 * Reader of an nccl-tests run's standard output (all_reduce_perf and the others), for
 * `stepcast comm --import`: the out-of-place time of every size of its results table, the
 * collective it ran and its ranks where the log says them. docs/comm.md, "Importing an
 * nccl-tests log".
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_int.h"
#include "common/slurp.h"
#include "stepcast/stepcast.h"

#define SC__LOG_TOKENS 32

/* A separator: blanks and every other control character (so no token, nor an error message
 * quoting one, holds a control character). */
static int sc__sep(char c) { return (unsigned char)c <= ' ' || c == 0x7f; }

/* Split s in place on separators into at most cap tokens; returns how many. */
static int sc__tokens(char *s, char **tok, int cap) {
  int n = 0;
  char *p = s;
  while (*p != '\0' && n < cap) {
    while (*p != '\0' && sc__sep(*p)) p++;
    if (*p == '\0') break;
    tok[n++] = p;
    while (*p != '\0' && !sc__sep(*p)) p++;
    if (*p != '\0') *p++ = '\0';
  }
  return n;
}

static int sc__all_digits(const char *s) {
  if (*s == '\0') return 0;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s)) return 0;
  return 1;
}

/* 1 when the line of tokens tok[0..nt) is no results row: it neither starts as a number
 * does (a digit, a sign, a point) nor has a whole count and a type name in columns 2 and 3
 * as nccl-tests prints them; or it is NCCL's own (a "NCCL" token: INFO, WARN lines). */
static int sc__not_a_row(char *const *tok, int nt) {
  static const char *const types[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                      "half", "float", "double", "bfloat16", "fp8_e4m3",
                                      "fp8_e5m2", NULL};
  int typed = 0;
  for (int i = 0; i < nt; i++)
    if (strcmp(tok[i], "NCCL") == 0) return 1;
  if (nt >= 3 && sc__all_digits(tok[1]))
    for (int i = 0; types[i] != NULL; i++)
      if (strcmp(tok[2], types[i]) == 0) typed = 1;
  return !(isdigit((unsigned char)tok[0][0]) || strchr("+-.", tok[0][0]) != NULL || typed);
}

void sc_comm_nccl_log_free(sc_nccl_log *log) {
  if (log == NULL) return;
  free(log->rows);
  memset(log, 0, sizeof *log);
}

int sc_comm_read_nccl_log(const char *path, sc_nccl_log *out, sc_error *err) {
  FILE *fp;
  char *buf = NULL;
  size_t bufcap = 0, cap = 0;
  ssize_t got;
  uint32_t line = 0, header_line = 0;
  int isize = -1, itime = -1, rc = SC_OK;
  char *text = NULL;
  if (path == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_comm_read_nccl_log: an argument is NULL");
  memset(out, 0, sizeof *out);
  fp = sc__fopen_text(path, &text, err); /* capped (common/slurp.h) */
  if (fp == NULL) return err != NULL ? err->code : SC_EIO;
  while ((got = getline(&buf, &bufcap, fp)) != -1) {
    char *tok[SC__LOG_TOKENS];
    size_t len = strlen(buf);
    int nt;
    line++;
    if (len != (size_t)got) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: a NUL byte in the line (not a text file?)",
                        path, (unsigned)line);
      break;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
    if (buf[0] == '#') {
      unsigned rank;
      char stem[64];
      if (sscanf(buf, "# Rank %u Group", &rank) == 1) { /* "#  Rank  3 Group  0 Pid ..." */
        out->ranks++;
        continue;
      }
      if (sscanf(buf, "# Collective test starting: %63s", stem) == 1) {
        size_t sl = strlen(stem);
        for (size_t k = 0; k < sl; k++)
          if (sc__sep(stem[k])) stem[k] = '?'; /* quoted below: no control characters */
        if (sl > 5 && strcmp(stem + sl - 5, "_perf") == 0) stem[sl - 5] = '\0';
        if (sc_comm_kind_parse(stem, &out->kind) != SC_OK) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: collective '%s' is none of all_reduce, "
                            "all_gather, reduce_scatter, alltoall, broadcast, sendrecv", path,
                            (unsigned)line, stem);
          break;
        }
        out->have_kind = 1;
        continue;
      }
      nt = sc__tokens(buf + 1, tok, SC__LOG_TOKENS);
      {
        int s = -1, t = -1, b = -1;
        for (int i = 0; i < nt; i++) {
          if (s < 0 && strcmp(tok[i], "size") == 0) s = i;
          if (t < 0 && strcmp(tok[i], "time") == 0) t = i;
          if (b < 0 && strcmp(tok[i], "busbw") == 0) b = i;
        }
        if (s < 0 || t < 0 || b < 0) continue; /* another comment */
        if (header_line != 0) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: a second results table (the first at line "
                            "%u): import one run per log", path, (unsigned)line,
                            (unsigned)header_line);
          break;
        }
        header_line = line;
        isize = s;
        itime = t; /* the first time column: out-of-place */
      }
      continue;
    }
    nt = sc__tokens(buf, tok, SC__LOG_TOKENS);
    /* a results row starts with the size; anything else (NCCL INFO lines, warnings) is not
     * nccl-tests' own output. A line that looks like a row (it starts as a number does, or
     * its count and type columns are there) but does not parse is an error, never skipped:
     * a size dropped without a word is a curve with a hole. */
    if (header_line == 0 || nt == 0 || sc__not_a_row(tok, nt)) continue;
    if (!sc__all_digits(tok[isize < nt ? isize : 0])) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'size': '%.40s' is not a whole number "
                        "of bytes (a results row of the table at line %u)", path,
                        (unsigned)line, tok[isize < nt ? isize : 0], (unsigned)header_line);
      break;
    }
    if (nt <= itime || nt <= isize) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: a results row with %d columns, the header "
                        "(line %u) puts 'time' in column %d", path, (unsigned)line, nt,
                        (unsigned)header_line, itime + 1);
      break;
    }
    {
      char *end;
      double bytes, us;
      errno = 0;
      bytes = strtod(tok[isize], &end);
      if (*end != '\0' || errno != 0 || !(bytes >= 1.0) || bytes > 1125899906842624.0) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'size': '%s' is not a size in "
                          "[1, 2^50] bytes", path, (unsigned)line, tok[isize]);
        break;
      }
      errno = 0;
      us = strtod(tok[itime], &end);
      if (*end != '\0' || errno != 0 || !(us > 0.0) || !isfinite(us) || us > 1e12) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'time': '%s' is not a time in "
                          "microseconds > 0", path, (unsigned)line, tok[itime]);
        break;
      }
      for (size_t i = 0; i < out->n; i++) {
        if (out->rows[i].bytes == bytes) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: size %.0f again (line %u): import one run "
                            "per log", path, (unsigned)line, bytes,
                            (unsigned)out->rows[i].line);
          break;
        }
      }
      if (rc != SC_OK) break;
      if (out->n == cap) {
        size_t nc = cap ? 2 * cap : 32;
        sc_nccl_log_row *nr = realloc(out->rows, nc * sizeof *nr);
        if (nr == NULL) {
          rc = sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
          break;
        }
        out->rows = nr;
        cap = nc;
      }
      out->rows[out->n].line = line;
      out->rows[out->n].bytes = bytes;
      out->rows[out->n].time_s = us * 1e-6;
      out->n++;
    }
  }
  if (rc == SC_OK && ferror(fp)) rc = sc_error_set(err, SC_EIO, "%s: read error", path);
  free(buf);
  fclose(fp);
  free(text);
  if (rc == SC_OK && header_line == 0)
    rc = sc_error_set(err, SC_EPARSE, "%s: no results table (a '#  size  count  type ... "
                      "time  algbw  busbw' header line, as nccl-tests prints)", path);
  if (rc == SC_OK && out->n == 0)
    rc = sc_error_set(err, SC_EPARSE, "%s: the results table (line %u) has no rows", path,
                      (unsigned)header_line);
  if (rc != SC_OK) sc_comm_nccl_log_free(out);
  return rc;
}
