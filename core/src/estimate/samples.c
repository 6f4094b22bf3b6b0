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

/* The columns of a measured table, and the optional trailing ones of the native form. */
enum { T_FAMILY, T_VARIANT, T_DTYPE, T_DIMS, T_MEASURED, T_GROUP, T_SOURCE, T_NCOLS };
static const char *const table_names[T_NCOLS] = {"family", "variant",    "dtype", "dims",
                                                 "measured_s", "group", "source"};
#define TABLE_COLUMNS "family, variant, dtype, dims, measured_s, group, source"
#define GROUP_NAME_MAX 47   /* characters of a group name (sc_sample.group's, estimate's) */
#define SOURCE_MAX 200      /* characters of a source cell */
#define MAX_FIELDS 32       /* fields a row is split into before it is refused */

/* What the column header makes of the rows. */
typedef struct layout {
  int table;             /* 0: native (SC_SAMPLES_COLUMNS ...), 1: a measured table */
  int nfields;           /* fields of every row */
  int col[T_NCOLS];      /* field of each column, -1 where absent; the native form sets
                            T_GROUP and T_SOURCE only */
} layout;

void sc_samples_free(sc_sample_set *s) {
  if (s == NULL) return;
  for (size_t i = 0; i < s->nfamilies; i++) free(s->families[i]);
  for (size_t i = 0; i < s->ngroups; i++) free(s->groups[i]);
  free(s->groups);
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

/* "AxBx...": 1 to SC_OP_MAX_DIMS whole numbers below 2^62 (as sc_op_parse reads them). */
static int parse_dims(const char *s, sc_op_desc *op) {
  const int64_t lim = (int64_t)1 << 62;
  op->ndims = 0;
  for (const char *p = s;; p++) {
    int64_t v = 0;
    if (*p < '0' || *p > '9' || op->ndims == SC_OP_MAX_DIMS) return 0;
    for (; *p >= '0' && *p <= '9'; p++) {
      const int d = *p - '0';
      if (v > (lim - 1 - d) / 10) return 0;
      v = 10 * v + d;
    }
    op->dims[op->ndims++] = v;
    if (*p == '\0') return 1;
    if (*p != 'x') return 0;
  }
}

/* Split line at its commas into trimmed fields; returns how many (max + 1: more than max). */
static int split(char *line, char **fields, int max) {
  int nf = 0;
  char *p = line;
  fields[nf++] = p;
  for (; *p; p++) {
    if (*p == ',') {
      *p = '\0';
      if (nf > max) break;
      fields[nf++] = p + 1;
    }
  }
  for (int i = 0; i < nf; i++) fields[i] = trim(fields[i]);
  return nf;
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

/* The column header: the native one (with its optional group and source columns) or a
 * measured table's. */
static int parse_header(char *line, const char *path, uint32_t lineno, layout *lo,
                        sc_error *err) {
  const size_t nl = strlen(SC_SAMPLES_COLUMNS);
  char *names[MAX_FIELDS + 1];
  int nf, table = 0;
  for (int c = 0; c < T_NCOLS; c++) lo->col[c] = -1;
  lo->table = 0;
  lo->nfields = NCOLS;
  if (strncmp(line, SC_SAMPLES_COLUMNS, nl) == 0) {
    const char *rest = line + nl;
    if (strcmp(rest, "") == 0) return SC_OK;
    if (strcmp(rest, ",group") == 0) {
      lo->col[T_GROUP] = NCOLS;
    } else if (strcmp(rest, ",group,source") == 0) {
      lo->col[T_GROUP] = NCOLS;
      lo->col[T_SOURCE] = NCOLS + 1;
    } else if (strcmp(rest, ",source") == 0) {
      lo->col[T_SOURCE] = NCOLS;
    } else {
      goto native;
    }
    lo->nfields = NCOLS + (lo->col[T_GROUP] >= 0) + (lo->col[T_SOURCE] >= 0);
    return SC_OK;
  }
  nf = split(line, names, MAX_FIELDS);
  for (int i = 0; i < nf && i < MAX_FIELDS; i++)
    if (strcmp(names[i], "dims") == 0 || strcmp(names[i], "measured_s") == 0) table = 1;
  if (!table) goto native;
  if (nf > MAX_FIELDS)
    return sc_error_set(err, SC_EPARSE, "%s:%u: more than %d columns: not a measured table "
                        "(%s)", path, lineno, MAX_FIELDS, TABLE_COLUMNS);
  for (int i = 0; i < nf; i++) {
    int c = 0;
    while (c < T_NCOLS && strcmp(names[i], table_names[c]) != 0) c++;
    if (c == T_NCOLS)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%.64s': not a column of a measured "
                          "table (%s)", path, lineno, names[i], TABLE_COLUMNS);
    if (lo->col[c] >= 0)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': named twice (columns %d and "
                          "%d)", path, lineno, names[i], lo->col[c] + 1, i + 1);
    lo->col[c] = i;
  }
  for (int c = 0; c <= T_MEASURED; c++)
    if (lo->col[c] < 0)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': missing (a measured table has "
                          "family, variant, dtype, dims and measured_s; group and source are "
                          "optional)", path, lineno, table_names[c]);
  lo->table = 1;
  lo->nfields = nf;
  return SC_OK;
native:
  return sc_error_set(err, SC_EPARSE, "%s:%u: expected the column header '%s' (optionally "
                      "followed by ',group', ',group,source' or ',source'), or a measured "
                      "table's (%s)", path, lineno, SC_SAMPLES_COLUMNS, TABLE_COLUMNS);
}

/* family, variant and dtype, the same in both forms. */
static int parse_op_head(char *const *fields, const char *path, uint32_t lineno, sc_sample *row,
                         char *family, size_t famcap, sc_error *err) {
  int64_t iv;
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
  return SC_OK;
}

/* A row of the native form: fields[0 .. NCOLS) (the group and source cells are the
 * caller's). */
static int parse_native(char *const *fields, const char *path, uint32_t lineno, sc_sample *row,
                        char *family, size_t famcap, sc_error *err) {
  int64_t iv;
  int rc = parse_op_head(fields, path, lineno, row, family, famcap, err);
  if (rc != SC_OK) return rc;
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

/* A row of a measured table: one time, which is every statistic of one repetition. */
static int parse_table(char *const *fields, const layout *lo, const char *path,
                       uint32_t lineno, sc_sample *row, char *family, size_t famcap,
                       sc_error *err) {
  char *head[3] = {fields[lo->col[T_FAMILY]], fields[lo->col[T_VARIANT]],
                   fields[lo->col[T_DTYPE]]};
  const char *dims = fields[lo->col[T_DIMS]], *meas = fields[lo->col[T_MEASURED]];
  double t;
  int rc = parse_op_head(head, path, lineno, row, family, famcap, err);
  if (rc != SC_OK) return rc;
  if (!parse_dims(dims, &row->op))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'dims': '%.64s' is not 1 to %d whole "
                        "numbers (each below 2^62) joined by 'x'", path, lineno, dims,
                        SC_OP_MAX_DIMS);
  if (!parse_time(meas, &t))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'measured_s': '%.64s' is not a finite "
                        "time > 0", path, lineno, meas);
  row->m.median_s = row->m.min_s = row->m.max_s = row->m.p10_s = row->m.p90_s = t;
  row->m.reps = 1;
  return SC_OK;
}

/* ---- groups: open addressing on FNV-1a of the name --------------------------------- */

typedef struct group_table {
  uint32_t *slot;   /* 1 + the group's index, 0: empty */
  size_t cap;       /* slots: a power of 2, at least twice the groups */
  size_t namecap;   /* of the set's groups array */
  double *median;   /* each group's measured time */
  uint32_t *line;   /* and the line that first gave it */
} group_table;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void group_table_free(group_table *g) {
  free(g->slot);
  free(g->median);
  free(g->line);
  memset(g, 0, sizeof *g);
}

/* The slot of name: its group's, or the empty one where it goes. */
static uint32_t *group_slot(const sc_sample_set *s, const group_table *g, const char *name) {
  size_t h = (size_t)fnv1a(name) & (g->cap - 1);
  while (g->slot[h] != 0 && strcmp(s->groups[g->slot[h] - 1], name) != 0)
    h = (h + 1) & (g->cap - 1);
  return &g->slot[h];
}

/* Room for one more group (slots rehashed, arrays grown): SC_OK or SC_ENOMEM. */
static int group_reserve(sc_sample_set *s, group_table *g) {
  if (2 * (s->ngroups + 1) > g->cap) {
    const size_t cap = g->cap ? 2 * g->cap : 1024;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (slot == NULL) return SC_ENOMEM;
    free(g->slot);
    g->slot = slot;
    g->cap = cap;
    for (size_t i = 0; i < s->ngroups; i++) *group_slot(s, g, s->groups[i]) = (uint32_t)i + 1;
  }
  if (s->ngroups == g->namecap) {
    const size_t cap = g->namecap ? 2 * g->namecap : 256;
    char **names = realloc(s->groups, cap * sizeof *names);
    if (names == NULL) return SC_ENOMEM;
    s->groups = names;
    double *med = realloc(g->median, cap * sizeof *med);
    if (med == NULL) return SC_ENOMEM;
    g->median = med;
    uint32_t *line = realloc(g->line, cap * sizeof *line);
    if (line == NULL) return SC_ENOMEM;
    g->line = line;
    g->namecap = cap;
  }
  return SC_OK;
}

/* The group and source cells of row (NULL: the file has no such column): row->group set,
 * the group's time checked against the row's. */
static int row_group(sc_sample_set *s, group_table *g, const char *name, const char *source,
                     const char *path, uint32_t lineno, sc_sample *row, sc_error *err) {
  uint32_t *slot;
  row->group = 0;
  if (source != NULL && strlen(source) > SOURCE_MAX)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'source': longer than %d characters",
                        path, lineno, SOURCE_MAX);
  if (name == NULL || name[0] == '\0') return SC_OK;
  if (strlen(name) > GROUP_NAME_MAX)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'group': '%.*s...' is longer than %d "
                        "characters", path, lineno, GROUP_NAME_MAX, name, GROUP_NAME_MAX);
  if (group_reserve(s, g) != SC_OK) return sc_error_set(err, SC_ENOMEM, "samples: out of memory");
  slot = group_slot(s, g, name);
  if (*slot != 0) {
    const uint32_t i = *slot - 1;
    const double t = row->m.median_s;
    if (fabs(g->median[i] - t) > 1e-9 * t)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column 'group': group '%s' was measured as "
                          "%g s on line %u: a group has one measured time", path, lineno, name,
                          g->median[i], g->line[i]);
    row->group = *slot;
    return SC_OK;
  }
  if (s->ngroups >= ((size_t)1 << 31) - 1)
    return sc_error_set(err, SC_ELIMIT, "%s:%u: column 'group': more than 2^31 groups", path,
                        lineno);
  if ((s->groups[s->ngroups] = strdup(name)) == NULL)
    return sc_error_set(err, SC_ENOMEM, "samples: out of memory");
  g->median[s->ngroups] = row->m.median_s;
  g->line[s->ngroups] = lineno;
  *slot = (uint32_t)++s->ngroups;
  row->group = *slot;
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
  layout lo;
  group_table groups;
  /* a file of stepcast sample (its first line SC_SAMPLES_LIVE) must end with the trailer
   * SC_SAMPLES_END "N rows": end_line is the last non-blank line's when it is the trailer */
  int live = 0;
  char *text = NULL;
  uint32_t end_line = 0;
  long long end_n = -1;
  if (path == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "samples: NULL argument");
  memset(out, 0, sizeof *out);
  memset(&lo, 0, sizeof lo);
  memset(&groups, 0, sizeof groups);
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
      if ((rc = parse_header(line, path, lineno, &lo, err)) != SC_OK) break;
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
      char *fields[MAX_FIELDS + 1];
      const char *interned = NULL;
      sc_sample *row = &out->rows[out->n];
      const int nf = split(line, fields, lo.nfields);
      if (nf != lo.nfields) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: expected %d comma-separated fields, found %d",
                          path, lineno, lo.nfields, nf);
        break;
      }
      memset(row, 0, sizeof *row);
      row->line = lineno;
      rc = lo.table ? parse_table(fields, &lo, path, lineno, row, family, sizeof family, err)
                    : parse_native(fields, path, lineno, row, family, sizeof family, err);
      if (rc != SC_OK) break;
      rc = row_group(out, &groups, lo.col[T_GROUP] >= 0 ? fields[lo.col[T_GROUP]] : NULL,
                     lo.col[T_SOURCE] >= 0 ? fields[lo.col[T_SOURCE]] : NULL, path, lineno,
                     row, err);
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
  group_table_free(&groups);
  /* the trailer is stepcast sample's, which writes the native form */
  if (lo.table) live = 0;
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
  if (ferror(f))
    return sc_error_set(err, SC_EIO, "samples: write error%s",
                        f == stdout ? " on standard output" : " (the samples file)");
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

int sc_op_same(const sc_op_desc *a, const sc_op_desc *b) {
  if (strcmp(a->family, b->family) != 0 || a->variant != b->variant || a->dtype != b->dtype ||
      a->ndims != b->ndims || a->flags != b->flags || a->ndims > SC_OP_MAX_DIMS)
    return 0;
  return memcmp(a->dims, b->dims, a->ndims * sizeof a->dims[0]) == 0;
}

const char *sc_bound_name(sc_bound b) {
  static const char *const names[SC_BOUND_COUNT] = {"compute", "memory", "latency",
                                                    "bandwidth"};
  return (unsigned)b < SC_BOUND_COUNT ? names[b] : "?";
}
