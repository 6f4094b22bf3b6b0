/*
 * The samples CSV of `stepcast sample`: reader (strict, file:line errors) and row writer.
 * Format: stepcast/estimate.h and docs/learned.md.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ident.h"
#include "common/slurp.h"
#include "common/median.h"
#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"

#define NCOLS 18
static const char *const col_names[NCOLS] = {
    "family", "variant", "dtype", "ndims", "d0", "d1", "d2", "d3", "d4",
    "d5", "d6", "d7", "reps", "median_s", "min_s", "max_s", "p10_s", "p90_s"};

void sc_samples_free(sc_sample_set *s) {
  if (s == NULL) return;
  for (size_t i = 0; i < s->nfamilies; i++) free(s->families[i]);
  free(s->rows);
  for (size_t i = 0; i < s->nmeta; i++) {
    free(s->meta_key[i]);
    free(s->meta_value[i]);
  }
  memset(s, 0, sizeof *s);
}

const char *sc_samples_meta(const sc_sample_set *s, const char *key) {
  for (size_t i = 0; s != NULL && i < s->nmeta; i++) {
    if (strcmp(s->meta_key[i], key) == 0) return s->meta_value[i];
  }
  return NULL;
}

static char *trim(char *s) {
  char *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = '\0';
  return s;
}

static int parse_int(const char *s, int64_t *out) {
  char *end;
  long long v;
  if (*s == '\0') return 0;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = v;
  return 1;
}

static int parse_time(const char *s, double *out) {
  char *end;
  double v;
  if (*s == '\0') return 0;
  errno = 0;
  v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v) || !(v > 0)) return 0;
  *out = v;
  return 1;
}

static int add_meta(sc_sample_set *s, const char *line) {
  const char *eq = strchr(line, '=');
  char key[128];
  size_t kl;
  if (eq == NULL || s->nmeta >= SC_SAMPLES_MAX_META) return SC_OK; /* plain comment */
  snprintf(key, sizeof key, "%.*s", (int)(eq - line) < 127 ? (int)(eq - line) : 127, line);
  kl = strlen(trim(key));
  if (kl == 0) return SC_OK;
  {
    char *k = strdup(trim(key));
    char *vbuf = strdup(eq + 1);
    char *v = vbuf != NULL ? strdup(trim(vbuf)) : NULL;
    free(vbuf);
    if (k == NULL || v == NULL) {
      free(k);
      free(v);
      return SC_ENOMEM;
    }
    s->meta_key[s->nmeta] = k;
    s->meta_value[s->nmeta] = v;
    s->nmeta++;
  }
  return SC_OK;
}

static int parse_row(char *line, const char *path, uint32_t lineno, sc_sample *row,
                     char *family, size_t famcap, sc_error *err) {
  char *fields[NCOLS + 1];
  int nf = 0;
  char *p = line;
  int64_t iv;
  fields[nf++] = p;
  for (; *p; p++) {
    if (*p == ',') {
      *p = '\0';
      if (nf > NCOLS) break;
      fields[nf++] = p + 1;
    }
  }
  if (nf != NCOLS) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: expected %d comma-separated fields, found %d",
                        path, lineno, NCOLS, nf);
  }
  for (int i = 0; i < NCOLS; i++) fields[i] = trim(fields[i]);
  memset(row, 0, sizeof *row);
  row->line = lineno;
  /* family */
  if (fields[0][0] == '\0' || strlen(fields[0]) >= famcap) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': must have 1 to %zu characters",
                        path, lineno, famcap - 1);
  }
  /* an operator plugin's name (the registry's rule), so a third-party family samples and
   * fits like a built-in one */
  if (!sc__is_identifier(fields[0]))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': '%s' is not a family name "
                        "(an operator plugin's, [A-Za-z0-9_.-]+)", path, lineno, fields[0]);
  snprintf(family, famcap, "%s", fields[0]);
  if (!parse_int(fields[1], &iv) || iv < 0 || iv > 255) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'variant': '%s' is not an integer in "
                        "[0, 255]", path, lineno, fields[1]);
  }
  row->op.variant = (uint32_t)iv;
  {
    int found = 0;
    for (int d = 0; d < SC_DTYPE_COUNT; d++) {
      if (strcmp(fields[2], sc_dtype_name((sc_dtype)d)) == 0) {
        row->op.dtype = (sc_dtype)d;
        found = 1;
      }
    }
    if (!found) {
      return sc_error_set(err, SC_EPARSE, "%s:%u: column 'dtype': '%s' is not a dtype (fp32, "
                          "tf32, bf16, fp16, fp8, int8)", path, lineno, fields[2]);
    }
  }
  if (!parse_int(fields[3], &iv) || iv < 1 || iv > SC_OP_MAX_DIMS) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'ndims': '%s' is not an integer in [1, %d]",
                        path, lineno, fields[3], SC_OP_MAX_DIMS);
  }
  row->op.ndims = (uint32_t)iv;
  for (uint32_t d = 0; d < SC_OP_MAX_DIMS; d++) {
    if (!parse_int(fields[4 + d], &iv) || iv < 0) {
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': '%s' is not an integer >= 0",
                          path, lineno, col_names[4 + d], fields[4 + d]);
    }
    if (d >= row->op.ndims && iv != 0) {
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': must be 0 past ndims (%u)", path,
                          lineno, col_names[4 + d], row->op.ndims);
    }
    row->op.dims[d] = iv;
  }
  if (!parse_int(fields[12], &iv) || iv < 1 || iv > 1000000) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'reps': '%s' is not an integer in "
                        "[1, 1000000]", path, lineno, fields[12]);
  }
  row->m.reps = (uint32_t)iv;
  {
    double *t[5] = {&row->m.median_s, &row->m.min_s, &row->m.max_s, &row->m.p10_s,
                    &row->m.p90_s};
    for (int i = 0; i < 5; i++) {
      if (!parse_time(fields[13 + i], t[i])) {
        return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': '%s' is not a finite time > 0",
                            path, lineno, col_names[13 + i], fields[13 + i]);
      }
    }
  }
  if (!(row->m.min_s <= row->m.p10_s && row->m.p10_s <= row->m.median_s &&
        row->m.median_s <= row->m.p90_s && row->m.p90_s <= row->m.max_s)) {
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'median_s': times must satisfy "
                        "min <= p10 <= median <= p90 <= max", path, lineno);
  }
  return SC_OK;
}

#define SC__SAMPLES_LINE_MAX 4094 /* characters of a line, its newline not counted */

int sc_samples_read(const char *path, sc_sample_set *out, sc_error *err) {
  FILE *f;
  char *buf = NULL; /* getline's: it counts the bytes, so a NUL byte inside shows */
  size_t bufcap = 0;
  ssize_t got;
  uint32_t lineno = 0;
  int have_header = 0, rc = SC_OK;
  size_t cap = 0;
  /* a file of stepcast sample (its first line SC_SAMPLES_LIVE) must end with the trailer
   * SC_SAMPLES_END "N rows": end_line is the last non-blank line's when it is the trailer */
  int live = 0;
  char *text = NULL;
  uint32_t end_line = 0;
  long long end_n = -1;
  if (path == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "samples: NULL argument");
  memset(out, 0, sizeof *out);
  f = sc__fopen_text(path, &text, err); /* capped (common/slurp.h) */
  if (f == NULL) return err != NULL ? err->code : SC_EIO;
  while ((got = getline(&buf, &bufcap, f)) != -1) {
    char *line;
    lineno++;
    if (strlen(buf) != (size_t)got) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: a NUL byte in the line (not a text file?)",
                        path, lineno);
      break;
    }
    if ((size_t)got - (buf[got - 1] == '\n') > SC__SAMPLES_LINE_MAX) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: line longer than %d characters", path, lineno,
                        SC__SAMPLES_LINE_MAX);
      break;
    }
    line = trim(buf);
    if (lineno == 1 && strcmp(line, SC_SAMPLES_LIVE) == 0) live = 1;
    if (line[0] == '\0') continue;
    end_line = 0;
    if (strncmp(line, SC_SAMPLES_END, strlen(SC_SAMPLES_END)) == 0) {
      const char *p = line + strlen(SC_SAMPLES_END);
      char *e;
      end_line = lineno;
      errno = 0;
      end_n = (*p >= '0' && *p <= '9') ? strtoll(p, &e, 10) : -1;
      if (end_n < 0 || errno != 0 || strcmp(e, " rows") != 0) end_n = -1;
    }
    if (line[0] == '#') {
      if (!have_header && (rc = add_meta(out, line + 1)) != SC_OK) {
        sc_error_set(err, rc, "samples: out of memory");
        break;
      }
      continue;
    }
    if (!have_header) {
      if (strcmp(line, SC_SAMPLES_COLUMNS) != 0) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: expected the column header '%s'", path, lineno,
                          SC_SAMPLES_COLUMNS);
        break;
      }
      have_header = 1;
      continue;
    }
    if (out->n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      sc_sample *r = realloc(out->rows, nc * sizeof *r);
      if (r == NULL) {
        rc = sc_error_set(err, SC_ENOMEM, "samples: out of memory");
        break;
      }
      out->rows = r;
      cap = nc;
    }
    {
      char family[32];
      const char *interned = NULL;
      sc_sample *row = &out->rows[out->n];
      rc = parse_row(line, path, lineno, row, family, sizeof family, err);
      if (rc != SC_OK) break;
      for (size_t i = 0; i < out->nfamilies; i++) {
        if (strcmp(out->families[i], family) == 0) interned = out->families[i];
      }
      if (interned == NULL) {
        const size_t maxf = sizeof out->families / sizeof out->families[0];
        char *dup;
        if (out->nfamilies == maxf) {
          rc = sc_error_set(err, SC_ELIMIT, "%s:%u: column 'family': more than %zu families",
                            path, lineno, maxf);
          break;
        }
        dup = strdup(family);
        if (dup == NULL) {
          rc = sc_error_set(err, SC_ENOMEM, "samples: out of memory");
          break;
        }
        out->families[out->nfamilies++] = dup;
        interned = dup;
      }
      row->op.family = interned;
      out->n++;
    }
  }
  if (rc == SC_OK && (ferror(f) || !feof(f)))
    rc = sc_error_set(err, SC_EIO, "%s: read error", path);
  free(buf);
  fclose(f);
  free(text);
  if (rc == SC_OK && !have_header)
    rc = sc_error_set(err, SC_EPARSE, "%s:%u: no column header line", path, lineno);
  if (rc == SC_OK && out->n == 0)
    rc = sc_error_set(err, SC_EPARSE, "%s:%u: no sample rows", path, lineno);
  if (rc == SC_OK && live && end_line == 0)
    rc = sc_error_set(err, SC_EPARSE, "%s:%u: no '%sN rows' line at the end: a file of stepcast "
                      "sample cut short (%zu rows read)", path, lineno, SC_SAMPLES_END, out->n);
  if (rc == SC_OK && live && end_n < 0)
    rc = sc_error_set(err, SC_EPARSE, "%s:%u: expected '%sN rows' (N the rows above)", path,
                      end_line, SC_SAMPLES_END);
  if (rc == SC_OK && live && (unsigned long long)end_n != (unsigned long long)out->n)
    rc = sc_error_set(err, SC_EPARSE, "%s:%u: says %lld rows, the file has %zu (cut short?)",
                      path, end_line, end_n, out->n);
  if (rc != SC_OK) sc_samples_free(out);
  return rc;
}

int sc_samples_write_row(FILE *f, const sc_op_desc *op, const sc_measurement *m, sc_error *err) {
  if (f == NULL || op == NULL || m == NULL || op->family == NULL)
    return sc_error_set(err, SC_EINVAL, "samples: NULL argument");
  fprintf(f, "%s,%u,%s,%u", op->family, op->variant, sc_dtype_name(op->dtype), op->ndims);
  for (uint32_t d = 0; d < SC_OP_MAX_DIMS; d++)
    fprintf(f, ",%lld", d < op->ndims ? (long long)op->dims[d] : 0LL);
  fprintf(f, ",%u,%.6g,%.6g,%.6g,%.6g,%.6g\n", m->reps, m->median_s, m->min_s, m->max_s,
          m->p10_s, m->p90_s);
  if (ferror(f)) return sc_error_set(err, SC_EIO, "samples: write error");
  return SC_OK;
}

int sc_gemm_exposure_solve(double f_big, double ws_big, double t_big, const double *f,
                           const double *ws, const double *t, int n, double *peak_flops_per_s,
                           double *bw_Bps, double *knee_bytes) {
  double P = 0, X = 0, K = 0;
  if (n < 2 || n > 16 || f == NULL || ws == NULL || t == NULL || peak_flops_per_s == NULL ||
      bw_Bps == NULL || knee_bytes == NULL)
    return SC_EINVAL;
  if (!(f_big > 0 && ws_big > 0 && t_big > 0 && isfinite(f_big) && isfinite(ws_big) &&
        isfinite(t_big)))
    return SC_EINVAL;
  for (int j = 0; j < n; j++) {
    if (!(f[j] > 0 && ws[j] > 0 && t[j] > 0 && isfinite(f[j]) && isfinite(ws[j]) &&
          isfinite(t[j])))
      return SC_EINVAL;
  }
  const int last = n - 1;
  for (int it = 0; it < 50; it++) {
    /* 1/P and 1/X from the square GEMM and the last one, linear in the two */
    double gb = ws_big / (ws_big + K), gs = ws[last] / (ws[last] + K);
    double det = f_big * gs * ws[last] - f[last] * gb * ws_big;
    double a, b, ks[16], k2;
    int nk = 0;
    if (!(det != 0.0)) return SC_ENOTFOUND;
    a = (t_big * gs * ws[last] - t[last] * gb * ws_big) / det;
    b = (f_big * t[last] - f[last] * t_big) / det;
    if (!(a > 0 && b > 0 && isfinite(1.0 / a) && isfinite(1.0 / b))) return SC_ENOTFOUND;
    P = 1.0 / a;
    X = 1.0 / b;
    for (int j = 0; j < last; j++) { /* the knee that puts GEMM j on the model */
      double g = (t[j] - f[j] / P) * X / ws[j];
      if (g > 0 && g < 1) ks[nk++] = ws[j] * (1.0 / g - 1.0);
    }
    if (nk == 0) return SC_ENOTFOUND;
    k2 = sc__median(ks, (size_t)nk);
    if (fabs(k2 - K) <= 1e-9 * k2) {
      K = k2;
      break;
    }
    K = k2;
  }
  *peak_flops_per_s = P;
  *bw_Bps = X;
  *knee_bytes = K;
  return SC_OK;
}

int sc_cache_miss_curve(const double *rate, int n, double cache_Bps, double dram_Bps,
                        double *share) {
  double val[SC_CACHE_CURVE_POINTS];
  int len[SC_CACHE_CURVE_POINTS], nb = 0;
  if (rate == NULL || share == NULL || n < 1 || n > SC_CACHE_CURVE_POINTS ||
      !(isfinite(cache_Bps) && isfinite(dram_Bps) && dram_Bps > 0 && cache_Bps > dram_Bps))
    return SC_EINVAL;
  for (int j = 0; j < n; j++)
    if (!(isfinite(rate[j]) && rate[j] > 0)) return SC_EINVAL;
  for (int j = 0; j < n; j++) {
    double g = (1.0 / rate[j] - 1.0 / cache_Bps) / (1.0 / dram_Bps - 1.0 / cache_Bps);
    g = g < 0.0 ? 0.0 : (g > 1.0 ? 1.0 : g);
    /* pool adjacent violators: a block whose mean falls below the one before merges with it */
    val[nb] = g;
    len[nb++] = 1;
    while (nb > 1 && val[nb - 2] > val[nb - 1]) {
      val[nb - 2] = (val[nb - 2] * len[nb - 2] + val[nb - 1] * len[nb - 1]) /
                    (double)(len[nb - 2] + len[nb - 1]);
      len[nb - 2] += len[nb - 1];
      nb--;
    }
  }
  for (int b = 0, j = 0; b < nb; b++)
    for (int k = 0; k < len[b]; k++) share[j++] = val[b];
  return SC_OK;
}
