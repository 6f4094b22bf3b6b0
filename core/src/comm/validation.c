/*
 * Reader of the published nccl-tests results (docs/validation/nccl-tests.csv).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_int.h"
#include "common/slurp.h"
#include "stepcast/stepcast.h"

#define SC__VCOLS 10
#define SC__VLINE_MAX 8192

static const char *const sc__vcols[SC__VCOLS] = {"id",   "source", "system",    "topology",
                                                 "gpus", "op",     "algo",      "bytes",
                                                 "busbw_GBps", "notes"};

/* Split one line into at most SC__VCOLS fields (in place in buf). Returns the number of
 * fields, or -1 on an unterminated quote, -2 on too many fields, -3 on text after a
 * closing quote. */
static int sc__split(char *line, char **f) {
  int n = 0;
  char *p = line;
  for (;;) {
    char *out, *start;
    if (n == SC__VCOLS) return -2;
    if (*p == '"') {
      p++;
      start = out = p;
      for (;;) {
        if (*p == '\0') return -1;
        if (*p == '"') {
          if (p[1] == '"') {
            *out++ = '"';
            p += 2;
            continue;
          }
          p++;
          break;
        }
        *out++ = *p++;
      }
      if (*p != ',' && *p != '\0') return -3;
      f[n++] = start;
      if (*p == '\0') {
        *out = '\0';
        return n;
      }
      *out = '\0';
      p++;
    } else {
      start = p;
      while (*p != ',' && *p != '\0') p++;
      f[n++] = start;
      if (*p == '\0') return n;
      *p++ = '\0';
    }
  }
}

static int sc__copyf(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap) return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

/* Bounds of a published row: a message of at most 2^50 bytes (1 PiB; nccl-tests sweeps stop
 * at tens of GiB) and a bus bandwidth of at most 10^6 GB/s (a thousand times any link's):
 * past them a typo would give an infinite time or a NaN error, not a refusal. */
#define SC__MAX_BYTES 1125899906842624.0
#define SC__MAX_GBPS 1e6

static int sc__row(const char *path, uint32_t line, char **f, sc_comm_vrow *r, sc_error *err) {
  char *end;
  double v;
  memset(r, 0, sizeof *r);
  r->line = line;
#define SC__TXT(col, field, required)                                                       \
  do {                                                                                      \
    if (sc__copyf(r->field, sizeof r->field, f[col]) != 0) {                                \
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': longer than %zu characters", \
                          path, (unsigned)line, sc__vcols[col], sizeof r->field - 1);        \
    }                                                                                       \
    if ((required) && r->field[0] == '\0') {                                                \
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': must not be empty", path,    \
                          (unsigned)line, sc__vcols[col]);                                   \
    }                                                                                       \
  } while (0)
  SC__TXT(0, id, 1);
  SC__TXT(1, source, 1);
  SC__TXT(2, system, 1);
  SC__TXT(3, topology, 1);
  SC__TXT(6, algo, 0);
  SC__TXT(9, notes, 0);
#undef SC__TXT
  if (r->algo[0] == '\0') memcpy(r->algo, "auto", 5);
  errno = 0;
  v = strtod(f[4], &end);
  if (f[4][0] == '\0' || *end != '\0' || errno != 0 || !(v >= 1.0) || v > 1e7 ||
      v != floor(v)) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'gpus': expected an integer >= 1, got '%s'",
                        path, (unsigned)line, f[4]);
  }
  r->gpus = (uint32_t)v;
  if (sc_comm_kind_parse(f[5], &r->op) != SC_OK) {
    return sc_error_set(err, SC_EPARSE,
                        "%s:%u: column 'op': unknown collective '%s' (allreduce, allgather, "
                        "reducescatter, alltoall, broadcast, sendrecv)",
                        path, (unsigned)line, f[5]);
  }
  errno = 0;
  v = strtod(f[7], &end);
  if (f[7][0] == '\0' || *end != '\0' || errno != 0 || !(v >= 1.0) || v > SC__MAX_BYTES ||
      v != floor(v)) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'bytes': expected an integer in [1, "
                        "2^50], got '%s'", path, (unsigned)line, f[7]);
  }
  r->bytes = v;
  errno = 0;
  v = strtod(f[8], &end);
  if (f[8][0] == '\0' || *end != '\0' || errno != 0 || !(v > 0.0) || v > SC__MAX_GBPS) {
    return sc_error_set(err, SC_EPARSE,
                        "%s:%u: column 'busbw_GBps': expected a number in (0, 1e6], got '%s'",
                        path, (unsigned)line, f[8]);
  }
  r->busbw_Bps = v * 1e9;
  return SC_OK;
}

int sc_comm_read_validation(const char *path, sc_comm_vrow **rows, size_t *n, sc_error *err) {
  FILE *fp;
  char *buf = NULL; /* getline's: it counts the bytes, so a NUL byte inside shows */
  size_t bufcap = 0;
  ssize_t got;
  uint32_t line = 0;
  int header = 0, rc = SC_OK;
  char *text = NULL;
  sc_comm_vrow *v = NULL;
  size_t cnt = 0, cap = 0;
  if (path == NULL || rows == NULL || n == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_read_validation: an argument is NULL");
  }
  *rows = NULL;
  *n = 0;
  fp = sc__fopen_text(path, &text, err); /* capped (common/slurp.h) */
  if (fp == NULL) return err != NULL ? err->code : SC_EIO;
  while ((got = getline(&buf, &bufcap, fp)) != -1) {
    char *f[SC__VCOLS];
    size_t len = strlen(buf);
    int nf;
    line++;
    if (len != (size_t)got) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: a NUL byte in the line (not a text file?)",
                        path, (unsigned)line);
      break;
    }
    if (len - (buf[len - 1] == '\n') > SC__VLINE_MAX - 2) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: line longer than %d characters", path,
                        (unsigned)line, SC__VLINE_MAX - 2);
      break;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
    if (len == 0 || buf[0] == '#') continue;
    nf = sc__split(buf, f);
    if (nf == -1) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: unterminated quoted field", path, (unsigned)line);
      break;
    }
    if (nf == -3) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: text after a closing quote", path,
                        (unsigned)line);
      break;
    }
    if (nf != SC__VCOLS) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: expected %d fields (%s), found %s", path,
                        (unsigned)line, SC__VCOLS,
                        "id,source,system,topology,gpus,op,algo,bytes,busbw_GBps,notes",
                        nf == -2 ? "more" : nf < SC__VCOLS ? "fewer" : "more");
      break;
    }
    if (!header) {
      for (int i = 0; i < SC__VCOLS; i++) {
        if (strcmp(f[i], sc__vcols[i]) != 0) {
          rc = sc_error_set(err, SC_EPARSE, "%s:%u: header column %d must be '%s', found '%s'",
                            path, (unsigned)line, i + 1, sc__vcols[i], f[i]);
          break;
        }
      }
      if (rc != SC_OK) break;
      header = 1;
      continue;
    }
    if (cnt == cap) {
      size_t nc = cap ? cap * 2 : 64;
      sc_comm_vrow *nv = realloc(v, nc * sizeof *nv);
      if (nv == NULL) {
        rc = sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
        break;
      }
      v = nv;
      cap = nc;
    }
    rc = sc__row(path, line, f, &v[cnt], err);
    if (rc != SC_OK) break;
    cnt++;
  }
  if (rc == SC_OK && (ferror(fp) || !feof(fp)))
    rc = sc_error_set(err, SC_EIO, "%s: read error", path);
  free(buf);
  fclose(fp);
  free(text);
  if (rc == SC_OK && !header) rc = sc_error_set(err, SC_EPARSE, "%s: no header line", path);
  if (rc == SC_OK && cnt == 0) rc = sc_error_set(err, SC_EPARSE, "%s: no data rows", path);
  if (rc != SC_OK) {
    free(v);
    return rc;
  }
  *rows = v;
  *n = cnt;
  return SC_OK;
}
