/* stepcast estimate: price any operator or collective with every estimator, and score the
 * estimates against measured times where a table has them (docs/cli.md, "stepcast
 * estimate"). A client of the library's sc_op_parse, sc_price_op, sc_price_coll and
 * sc_score. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "stepcast/comm.h"
#include "stepcast/csv.h"
#include "stepcast/estimate.h"
#include "stepcast/report.h"

#define CMD "estimate"

static void usage(FILE *out) {
  fprintf(out,
          "usage: stepcast estimate --hardware H [--stack S] [--topology T] [--residuals DIR]\n"
          "                         (--csv FILE | --samples FILE | --op FAMILY --variant V\n"
          "                          --dtype D --dims AxBx... | --coll KIND --bytes B\n"
          "                          --nranks N [--nodes K]) [--json]\n\n"
          "Prices every operator or collective a table lists with the analytical, hybrid and\n"
          "learned estimators, with the bound. Where the table has measured times, adds the\n"
          "signed error per row and the MAPE per family and overall.\n\n"
          "options:\n"
          "  --hardware H     the device (hardware/H.toml or a file)\n"
          "  --stack S        a software stack (stacks/S.toml or a file): its kernels and\n"
          "                   traffic per operator, and its attention kernel on the device\n"
          "  --topology T     the network, for collective rows (topologies/T.toml or a file;\n"
          "                   its collective residuals from topologies/<T>/residuals/)\n"
          "  --residuals DIR  operator residual models (default: hardware/<device>/residuals/\n"
          "                   where it exists; without any, hybrid and learned are analytical)\n"
          "  --csv FILE       a table with columns family, variant, dtype, dims (as `stepcast\n"
          "                   ops --csv` writes them); optional: kind (op | coll; collectives\n"
          "                   are rows of kind coll or whose family is a collective name, with\n"
          "                   bytes, nranks and optional nodes), measured_s (seconds), group\n"
          "                   (rows with the same group are one measurement: their estimates\n"
          "                   are summed and measured_s is given once or on every row alike)\n"
          "  --samples FILE   a samples file of stepcast sample (median_s is the measured time)\n"
          "                   or a measured table (family, variant, dtype, dims, measured_s;\n"
          "                   optional group and source), read by the samples reader\n"
          "  --op, --variant, --dtype, --dims   one operator on the command line\n"
          "  --coll KIND --bytes B --nranks N [--nodes K]   one collective (needs --topology)\n"
          "  --summary        the MAPE table only (no row per operator)\n"
          "  --json           machine-readable output\n\n"
          "Exit status: 0 ok, 1 bad input (one line naming the file, line and column), 2 usage\n"
          "error.\n");
}

/* One priced row. */
typedef struct row {
  unsigned line;
  int coll;
  char family[48], dtype[8], dims[96], group[48], algo[24];
  unsigned variant;
  sc_price pr;
  double measured_s; /* < 0: none */
} row;

typedef struct ctx {
  int summary; /* --summary: no row per operator */
  sc_registry *reg;
  sc_device dev;
  const sc_stack *stack; /* NULL: none */
  int have_topo;
  sc_topology topo;
  sc_residuals *ops_r, *coll_r;
  row *rows;
  size_t n, cap;
  const char *path;
} ctx;

static int push(ctx *c, row **out, sc_error *err) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 256;
    row *r = realloc(c->rows, cap * sizeof *r);
    if (r == NULL) return sc_error_set(err, SC_ENOMEM, "estimate: out of memory");
    c->rows = r;
    c->cap = cap;
  }
  *out = &c->rows[c->n++];
  memset(*out, 0, sizeof **out);
  (*out)->measured_s = -1.0;
  return SC_OK;
}

static int price_op_row(ctx *c, const sc_op_desc *op, row *r, sc_error *err) {
  snprintf(r->family, sizeof r->family, "%s", op->family);
  snprintf(r->dtype, sizeof r->dtype, "%s", sc_dtype_name(op->dtype));
  r->variant = op->variant;
  size_t k = 0;
  for (uint32_t j = 0; j < op->ndims && k < sizeof r->dims; j++)
    k += (size_t)snprintf(r->dims + k, sizeof r->dims - k, "%s%lld", j ? "x" : "",
                          (long long)op->dims[j]);
  /* with what the stack's kernels add on the GPU (sc_price_mode) */
  return sc_price_op_stack(c->reg, &c->dev, c->stack, c->ops_r, op, &r->pr, err);
}

static int price_coll_row(ctx *c, sc_coll_kind kind, double bytes, sc_dtype dt, uint32_t nranks,
                          uint32_t nodes, row *r, sc_error *err) {
  sc_coll_desc d;
  const char *algo = NULL, *proto = NULL;
  int rc;
  if (!c->have_topo)
    return sc_error_set(err, SC_EINVAL, "a collective row needs --topology (the network it "
                        "runs on)");
  if ((rc = sc_coll_place(&c->topo, kind, bytes, dt, nranks, nodes, &d, err)) != SC_OK) return rc;
  r->coll = 1;
  snprintf(r->family, sizeof r->family, "%s", sc_comm_kind_name(kind));
  snprintf(r->dtype, sizeof r->dtype, "%s", sc_dtype_name(dt));
  snprintf(r->dims, sizeof r->dims, "%.0fB/%ur/%un", bytes, nranks, sc_coll_resid_nodes(&d));
  rc = sc_price_coll(c->reg, &c->topo, c->coll_r, &d, &r->pr, &algo, &proto, err);
  if (rc == SC_OK) snprintf(r->algo, sizeof r->algo, "%s/%s", algo, proto ? proto : "?");
  return rc;
}

/* A numeric cell: empty → *known 0. */
static int cell_num(const sc_csv *t, size_t i, int col, double *v, int *known, sc_error *err) {
  *known = 0;
  if (col < 0) return SC_OK;
  return sc_csv_double(t, i, (size_t)col, v, known, err);
}

static int read_csv(ctx *c, const char *path, sc_error *err) {
  static const char *const need[] = {"family", "dtype"};
  int idx[4], rc;
  sc_csv *t = NULL;
  if ((rc = sc_csv_load(path, &t, err)) != SC_OK) return rc;
  const int kind = sc_csv_column(t, "kind"), meas = sc_csv_column(t, "measured_s"),
            grp = sc_csv_column(t, "group"), bytes = sc_csv_column(t, "bytes"),
            nranks = sc_csv_column(t, "nranks"), nodes = sc_csv_column(t, "nodes");
  if ((rc = sc_csv_require(t, need, 2, idx, err)) != SC_OK) goto out;
  /* variant and dims: operator rows only (a table of collectives may leave them out) */
  idx[3] = sc_csv_column(t, "dims");
  idx[2] = idx[1];
  idx[1] = sc_csv_column(t, "variant");
  for (size_t i = 0; i < sc_csv_nrows(t) && rc == SC_OK; i++) {
    const unsigned line = sc_csv_line(t, i);
    const char *fam = sc_csv_field(t, i, (size_t)idx[0]);
    const char *k = kind >= 0 ? sc_csv_field(t, i, (size_t)kind) : "";
    sc_coll_kind ck;
    row *r = NULL;
    double v;
    int known;
    sc_error e2;
    sc_error_clear(&e2);
    if ((rc = push(c, &r, err)) != SC_OK) break;
    r->line = line;
    if (strcmp(k, "coll") == 0 || (strcmp(k, "op") != 0 && sc_registry_op(c->reg, fam) == NULL &&
                                   sc_coll_kind_parse_loose(fam, &ck) == SC_OK)) {
      double b = 0, nr = 0, nn = 0;
      int kb = 0, kr = 0, kn = 0;
      sc_dtype dt;
      if (sc_coll_kind_parse_loose(fam, &ck) != SC_OK) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': '%.40s' is not a collective "
                          "kind (allreduce, allgather, reducescatter, alltoall, broadcast, "
                          "sendrecv)", path, line, fam);
        break;
      }
      if ((rc = cell_num(t, i, bytes, &b, &kb, err)) != SC_OK ||
          (rc = cell_num(t, i, nranks, &nr, &kr, err)) != SC_OK ||
          (rc = cell_num(t, i, nodes, &nn, &kn, err)) != SC_OK)
        break;
      if (!kb || !kr || nr != floor(nr) || nr < 1 || nr > 16777216.0 ||
          (kn && (nn != floor(nn) || nn < 0 || nn > nr))) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': a collective needs bytes and "
                          "nranks (a whole number of ranks, 1 to 2^24) and at most nranks "
                          "nodes", path, line, !kb ? "bytes" : !kr || nr != floor(nr) ||
                          nr < 1 || nr > 16777216.0 ? "nranks" : "nodes");
        break;
      }
      if (sc_dtype_parse(sc_csv_field(t, i, (size_t)idx[2]), &dt) != SC_OK) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'dtype': '%.32s' is not a dtype", path,
                          line, sc_csv_field(t, i, (size_t)idx[2]));
        break;
      }
      if (price_coll_row(c, ck, b, dt, (uint32_t)nr, kn ? (uint32_t)nn : 0, r, &e2) != SC_OK) {
        rc = sc_error_set(err, e2.code, "%s:%u: %s", path, line, e2.msg);
        break;
      }
    } else {
      sc_op_desc op;
      if (idx[1] < 0 || idx[3] < 0) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: an operator row needs the columns family, "
                          "variant, dtype and dims (the table has no '%s')", path, line,
                          idx[1] < 0 ? "variant" : "dims");
        break;
      }
      if (sc_op_parse(c->reg, fam, sc_csv_field(t, i, (size_t)idx[1]),
                      sc_csv_field(t, i, (size_t)idx[2]), sc_csv_field(t, i, (size_t)idx[3]),
                      &op, &e2) != SC_OK ||
          price_op_row(c, &op, r, &e2) != SC_OK) {
        rc = sc_error_set(err, e2.code == SC_EINVAL ? SC_EPARSE : e2.code, "%s:%u: %s", path,
                          line, e2.msg);
        break;
      }
    }
    if ((rc = cell_num(t, i, meas, &v, &known, err)) != SC_OK) break;
    if (known) {
      if (!(v > 0.0) || !isfinite(v)) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'measured_s': %g is not a time > 0",
                          path, line, v);
        break;
      }
      r->measured_s = v;
    }
    if (grp >= 0) {
      const char *g = sc_csv_field(t, i, (size_t)grp);
      if (strlen(g) >= sizeof r->group) {
        rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'group': longer than %zu characters",
                          path, line, sizeof r->group - 1);
        break;
      }
      snprintf(r->group, sizeof r->group, "%s", g);
    }
  }
out:
  sc_csv_free(t);
  return rc;
}

static int read_samples(ctx *c, const char *path, sc_error *err) {
  sc_sample_set set;
  int rc = sc_samples_read(path, &set, err);
  if (rc != SC_OK) return rc;
  for (size_t i = 0; i < set.n && rc == SC_OK; i++) {
    row *r = NULL;
    sc_op_desc op = set.rows[i].op;
    const sc_op_plugin *p = sc_registry_op(c->reg, op.family);
    sc_error e2;
    if (p == NULL) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': no operator plugin for '%s'",
                        path, set.rows[i].line, op.family);
      break;
    }
    op.family = p->hdr.name;
    if ((rc = push(c, &r, err)) != SC_OK) break;
    r->line = set.rows[i].line;
    r->measured_s = set.rows[i].m.median_s;
    if (set.rows[i].group != 0) /* a name of at most 47 characters (sc_samples_read) */
      snprintf(r->group, sizeof r->group, "%s", set.groups[set.rows[i].group - 1]);
    if (price_op_row(c, &op, r, &e2) != SC_OK)
      rc = sc_error_set(err, e2.code, "%s:%u: %s", path, r->line, e2.msg);
  }
  sc_samples_free(&set);
  return rc;
}

/* The measurements: a row without a group, or the rows of one group (first appearance). */
typedef struct meas {
  size_t first, count;
  double est[3], measured_s;
  char family[48]; /* the rows' family, or "mixed" */
} meas;

/* FNV-1a of a group name, for collect's table. */
static uint64_t group_hash(const char *g) {
  uint64_t h = 1469598103934665603ull;
  for (; *g; g++) h = (h ^ (unsigned char)*g) * 1099511628211ull;
  return h;
}

static int collect(ctx *c, meas **out, size_t *nout, sc_error *err) {
  meas *m = calloc(c->n ? c->n : 1, sizeof *m);
  size_t nm = 0, cap = 16;
  while (cap < 2 * c->n) cap *= 2;
  size_t *slot = malloc(cap * sizeof *slot); /* group -> measurement + 1 (0: empty) */
  if (m == NULL || slot == NULL) {
    free(m);
    free(slot);
    return sc_error_set(err, SC_ENOMEM, "estimate: out of memory");
  }
  memset(slot, 0, cap * sizeof *slot);
  for (size_t i = 0; i < c->n; i++) {
    const row *r = &c->rows[i];
    size_t j = nm, *s = NULL;
    if (r->group[0] != '\0') { /* open addressing on the group name */
      for (size_t h = group_hash(r->group) & (cap - 1);; h = (h + 1) & (cap - 1)) {
        if (slot[h] == 0 || strcmp(c->rows[m[slot[h] - 1].first].group, r->group) == 0) {
          s = &slot[h];
          break;
        }
      }
      if (*s != 0) j = *s - 1;
    }
    if (j == nm) {
      m[nm].first = i;
      m[nm].measured_s = -1.0;
      snprintf(m[nm].family, sizeof m[nm].family, "%s", r->family);
      nm++;
      if (s != NULL) *s = nm;
    } else if (strcmp(m[j].family, r->family) != 0) {
      snprintf(m[j].family, sizeof m[j].family, "mixed");
    }
    m[j].count++;
    for (int e = 0; e < 3; e++) m[j].est[e] += r->pr.time_s[e];
    if (r->measured_s > 0) {
      if (m[j].measured_s > 0 && fabs(m[j].measured_s - r->measured_s) > 1e-9 * r->measured_s) {
        int rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'measured_s': group '%s' was "
                              "measured as %g s on line %u: a group has one measured time",
                              c->path, r->line, r->group, m[j].measured_s,
                              c->rows[m[j].first].line);
        free(m);
        free(slot);
        return rc;
      }
      m[j].measured_s = r->measured_s;
    }
  }
  free(slot);
  *out = m;
  *nout = nm;
  return SC_OK;
}

static const char *const est_names[3] = {"analytical", "hybrid", "learned"};

/* A measurement's time and each estimator's signed error, in %, where it was measured. */
static void print_errors(const meas *m) {
  if (!(m->measured_s > 0)) return;
  printf(" %12.4e", m->measured_s);
  for (int e = 0; e < 3; e++) printf(" %+8.1f", 100 * (m->est[e] / m->measured_s - 1));
}

static void print_table(const ctx *c, const meas *m, size_t nm, const sc_score *s) {
  printf("# device %s; operator residuals: %s%s%s%s%s\n", c->dev.name,
         c->ops_r ? c->ops_r->dir : "none (hybrid and learned are the analytical estimate)",
         c->have_topo ? "; topology " : "", c->have_topo ? c->topo.name : "",
         c->stack ? "; stack " : "", c->stack ? c->stack->name : "");
  if (c->summary) {
    printf("# %zu rows of %s\n", c->n, c->path);
    for (size_t k = 0; k < s->n; k++) /* which estimators a fitted model corrects */
      for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].family, s->name[k]) == 0) {
          printf("# %-14s hybrid: %s, learned: %s\n", s->name[k],
                 c->rows[i].pr.corrected[1] ? "fitted model" : "roofline (no active model)",
                 c->rows[i].pr.corrected[2] ? "fitted model" : "roofline (no active model)");
          break;
        }
  }
  if (!c->summary)
  printf("%-6s %-14s %3s %-5s %-28s %-9s %12s %12s %12s %12s %8s %8s %8s\n", "line", "family",
         "var", "dtype", "dims", "bound", "analytical_s", "hybrid_s", "learned_s", "measured_s",
         "err_an%", "err_hy%", "err_le%");
  for (size_t k = 0; k < nm && !c->summary; k++) {
    for (size_t i = m[k].first, left = m[k].count; left > 0; i++) {
      const row *r = &c->rows[i];
      if (m[k].count > 1 && strcmp(r->group, c->rows[m[k].first].group) != 0) continue;
      left--;
      printf("%-6u %-14s %3u %-5s %-28s %-9s %12.4e %12.4e %12.4e", r->line, r->family,
             r->variant, r->dtype, r->dims, sc_bound_name(r->pr.an.bound),
             r->pr.time_s[0], r->pr.time_s[1], r->pr.time_s[2]);
      if (m[k].count == 1) print_errors(&m[k]);
      printf("\n");
    }
    if (m[k].count > 1) {
      printf("%-6s %-14s %3s %-5s %-28.28s %-9s %12.4e %12.4e %12.4e", "group", m[k].family,
             "", "", c->rows[m[k].first].group, "(sum)", m[k].est[0], m[k].est[1], m[k].est[2]);
      print_errors(&m[k]);
      printf("\n");
    }
  }
  if (s->count[SC_SCORE_MAX] == 0) return;
  printf("\nMAPE %% (mean signed error %%) by family, %zu measurements\n",
         s->count[SC_SCORE_MAX]);
  printf("%-16s %6s %18s %18s %18s\n", "family", "rows", est_names[0], est_names[1],
         est_names[2]);
  for (int i = -1; i < (int)s->n; i++) {
    const int k = i < 0 ? SC_SCORE_MAX : i;
    if (i < 0) continue;
    printf("%-16s %6zu", s->name[k], s->count[k]);
    for (int e = 0; e < 3; e++)
      printf("   %6.2f (%+7.2f)", 100 * sc_score_mape(s, i, e), 100 * sc_score_bias(s, i, e));
    printf("\n");
  }
  printf("%-16s %6zu", "all", s->count[SC_SCORE_MAX]);
  for (int e = 0; e < 3; e++)
    printf("   %6.2f (%+7.2f)", 100 * sc_score_mape(s, -1, e), 100 * sc_score_bias(s, -1, e));
  printf("\n");
}

static void json_num(double v) {
  if (isfinite(v)) printf("%.9g", v);
  else printf("null");
}

static void print_json(const ctx *c, const meas *m, size_t nm, const sc_score *s) {
  printf("{\"schema_version\": %d, \"command\": \"estimate\", \"device\": ",
         SC_REPORT_SCHEMA_VERSION);
  sc_json_string(stdout, c->dev.name);
  printf(", \"residuals\": ");
  if (c->ops_r) sc_json_string(stdout, c->ops_r->dir);
  else printf("null");
  printf(", \"topology\": ");
  if (c->have_topo) sc_json_string(stdout, c->topo.name);
  else printf("null");
  printf(", \"stack\": ");
  if (c->stack) sc_json_string(stdout, c->stack->name);
  else printf("null");
  printf(", \"rows\": [");
  for (size_t i = 0; i < c->n && !c->summary; i++) {
    const row *r = &c->rows[i];
    printf("%s\n  {\"line\": %u, \"kind\": \"%s\", \"family\": ", i ? "," : "", r->line,
           r->coll ? "coll" : "op");
    sc_json_string(stdout, r->family);
    printf(", \"variant\": %u, \"dtype\": \"%s\", \"dims\": ", r->variant, r->dtype);
    sc_json_string(stdout, r->dims);
    printf(", \"group\": ");
    sc_json_string(stdout, r->group);
    if (r->coll) { /* the algorithm and protocol NCCL's tuner would pick */
      printf(", \"algorithm\": ");
      sc_json_string(stdout, r->algo);
    }
    printf(", \"bound\": \"%s\", \"flops\": ", sc_bound_name(r->pr.an.bound));
    json_num(r->pr.an.flops);
    printf(", \"bytes\": ");
    json_num(r->pr.an.bytes);
    for (int e = 0; e < 3; e++) {
      printf(", \"%s_s\": ", est_names[e]);
      json_num(r->pr.time_s[e]);
    }
    printf(", \"hybrid_fitted\": %s, \"learned_fitted\": %s, \"measured_s\": ",
           r->pr.corrected[1] ? "true" : "false", r->pr.corrected[2] ? "true" : "false");
    if (r->measured_s > 0) json_num(r->measured_s);
    else printf("null");
    printf("}");
  }
  printf("],\n \"measurements\": [");
  for (size_t k = 0, first = 1; k < nm; k++) {
    if (!(m[k].measured_s > 0) || c->summary) continue;
    printf("%s\n  {\"line\": %u, \"family\": ", first ? "" : ",", c->rows[m[k].first].line);
    first = 0;
    sc_json_string(stdout, m[k].family);
    printf(", \"operators\": %zu, \"measured_s\": ", m[k].count);
    json_num(m[k].measured_s);
    for (int e = 0; e < 3; e++) {
      printf(", \"%s_s\": ", est_names[e]);
      json_num(m[k].est[e]);
      printf(", \"%s_error\": ", est_names[e]);
      json_num(m[k].est[e] / m[k].measured_s - 1);
    }
    printf("}");
  }
  printf("],\n \"mape\": {");
  for (int i = 0; i <= (int)s->n; i++) {
    const int g = i == (int)s->n ? -1 : i;
    printf("%s\n  ", i ? "," : "");
    sc_json_string(stdout, g < 0 ? "all" : s->name[g]);
    printf(": {\"rows\": %zu", s->count[g < 0 ? SC_SCORE_MAX : g]);
    for (int e = 0; e < 3; e++) {
      printf(", \"%s\": ", est_names[e]);
      json_num(sc_score_mape(s, g, e));
      printf(", \"%s_bias\": ", est_names[e]);
      json_num(sc_score_bias(s, g, e));
    }
    printf("}");
  }
  printf("}}\n");
}

/* The option values of one run. */
typedef struct opts {
  const char *hardware, *stack, *topology, *residuals, *csv, *samples;
  const char *op, *variant, *dtype, *dims, *coll, *bytes, *nranks, *nodes;
  int json, summary;
} opts;

static int parse_args(int argc, char **argv, opts *o) {
  static const struct { const char *flag; size_t off; } flags[] = {
      {"--hardware", offsetof(opts, hardware)}, {"--stack", offsetof(opts, stack)},
      {"--topology", offsetof(opts, topology)},
      {"--residuals", offsetof(opts, residuals)}, {"--csv", offsetof(opts, csv)},
      {"--samples", offsetof(opts, samples)},   {"--op", offsetof(opts, op)},
      {"--variant", offsetof(opts, variant)},   {"--dtype", offsetof(opts, dtype)},
      {"--dims", offsetof(opts, dims)},         {"--coll", offsetof(opts, coll)},
      {"--bytes", offsetof(opts, bytes)},       {"--nranks", offsetof(opts, nranks)},
      {"--nodes", offsetof(opts, nodes)}};
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    size_t f, nf = sizeof flags / sizeof flags[0];
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return -1;
    }
    if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--summary") == 0) {
      *(argv[i][2] == 'j' ? &o->json : &o->summary) = 1;
      continue;
    }
    for (f = 0; f < nf && strcmp(argv[i], flags[f].flag) != 0; f++) {}
    if (f == nf) return sc_cli_usage_error(CMD, "unknown option '%.64s'", argv[i]);
    if (i + 1 >= argc || argv[i + 1][0] == '\0')
      return sc_cli_usage_error(CMD, "option '%s' needs a value", argv[i]);
    *(const char **)((char *)o + flags[f].off) = argv[++i];
  }
  if (o->hardware == NULL) return sc_cli_usage_error(CMD, "--hardware is required");
  int forms = (o->csv != NULL) + (o->samples != NULL) + (o->op != NULL) + (o->coll != NULL);
  if (forms != 1)
    return sc_cli_usage_error(CMD, "give one of --csv, --samples, --op or --coll");
  if (o->op != NULL && (o->variant == NULL || o->dims == NULL))
    return sc_cli_usage_error(CMD, "--op needs --variant and --dims (--dtype: bf16)");
  if (o->coll != NULL && (o->bytes == NULL || o->nranks == NULL))
    return sc_cli_usage_error(CMD, "--coll needs --bytes and --nranks");
  if (o->coll != NULL && o->topology == NULL)
    return sc_cli_usage_error(CMD, "--coll needs --topology");
  if ((o->variant || o->dims) && o->op == NULL)
    return sc_cli_usage_error(CMD, "--variant and --dims are for --op");
  if ((o->bytes || o->nranks || o->nodes) && o->coll == NULL)
    return sc_cli_usage_error(CMD, "--bytes, --nranks and --nodes are for --coll");
  if (o->dtype && o->op == NULL && o->coll == NULL)
    return sc_cli_usage_error(CMD, "--dtype is for --op and --coll (a table states its own)");
  if (o->dtype == NULL) o->dtype = "bf16";
  return 0;
}

/* One collective from the command line. */
static int one_coll(ctx *c, const opts *o, sc_error *err) {
  sc_coll_kind k;
  sc_dtype dt;
  char *end;
  double b, nr, nn = 0;
  row *r = NULL;
  int rc;
  if (sc_coll_kind_parse_loose(o->coll, &k) != SC_OK)
    return sc_cli_usage_error(CMD, "--coll: '%.32s' is not a collective kind", o->coll);
  if (sc_dtype_parse(o->dtype, &dt) != SC_OK)
    return sc_cli_usage_error(CMD, "--dtype: '%.32s' is not a dtype", o->dtype);
  errno = 0;
  b = strtod(o->bytes, &end);
  if (errno || *end || !(b >= 0) || b > 1e15)
    return sc_cli_usage_error(CMD, "--bytes: '%.32s' is not a size in [0, 1e15]", o->bytes);
  nr = strtod(o->nranks, &end);
  if (errno || *end || nr != floor(nr) || nr < 1 || nr > 16777216.0)
    return sc_cli_usage_error(CMD, "--nranks: '%.32s' is not a whole number in [1, 2^24]",
                              o->nranks);
  if (o->nodes) {
    nn = strtod(o->nodes, &end);
    if (errno || *end || nn != floor(nn) || nn < 1 || nn > nr)
      return sc_cli_usage_error(CMD, "--nodes: '%.32s' is not a whole number in [1, nranks]",
                                o->nodes);
  }
  if ((rc = push(c, &r, err)) != SC_OK) return sc_cli_fail(err);
  if (price_coll_row(c, k, b, dt, (uint32_t)nr, (uint32_t)nn, r, err) != SC_OK)
    return sc_cli_fail(err);
  return 0;
}

int sc_cli_estimate(int argc, char **argv) {
  opts o;
  ctx c;
  sc_error err;
  sc_stack stack;
  meas *m = NULL;
  size_t nm = 0;
  sc_score s;
  int rc = parse_args(argc, argv, &o), ret = 1;
  if (rc != 0) return rc < 0 ? 0 : rc;
  memset(&c, 0, sizeof c);
  c.summary = o.summary;
  sc_error_clear(&err);
  c.path = o.csv ? o.csv : o.samples ? o.samples : "(command line)";
  if (sc_cli_registry_open(&c.reg, &err) != SC_OK ||
      sc_hardware_load(c.reg, o.hardware, &c.dev, &err) != SC_OK)
    goto fail;
  if (o.stack != NULL) {
    if (sc_stack_load(o.stack, &stack, &err) != SC_OK) goto fail;
    c.stack = &stack;
    sc_stack_device(&stack, &c.dev); /* its attention kernel on this device */
  }
  if (o.residuals != NULL) {
    if (sc_residuals_load(o.residuals, &c.ops_r, &err) != SC_OK ||
        sc_residuals_check(c.ops_r, c.dev.name, c.reg, &err) != SC_OK)
      goto fail;
  } else {
    rc = sc_residuals_for_hardware(o.hardware, c.dev.name, c.reg, SC_ESTIMATOR_HYBRID, &c.ops_r,
                                   &err);
    if (rc == SC_ENOTFOUND) {
      c.ops_r = NULL; /* none fitted: hybrid and learned are the analytical estimate */
      sc_error_clear(&err);
    } else if (rc != SC_OK) {
      goto fail;
    }
  }
  if (o.topology != NULL) {
    if (sc_topology_load(o.topology, &c.topo, &err) != SC_OK ||
        sc_residuals_for_topology(o.topology, c.topo.name, NULL, 0, SC_ESTIMATOR_HYBRID,
                                  &c.coll_r, &err) != SC_OK)
      goto fail;
    c.have_topo = 1;
  }
  if (o.csv != NULL) {
    if (read_csv(&c, o.csv, &err) != SC_OK) goto fail;
  } else if (o.samples != NULL) {
    if (read_samples(&c, o.samples, &err) != SC_OK) goto fail;
  } else if (o.coll != NULL) {
    if ((ret = one_coll(&c, &o, &err)) != 0) goto out;
  } else {
    sc_op_desc op;
    row *r = NULL;
    if (sc_op_parse(c.reg, o.op, o.variant, o.dtype, o.dims, &op, &err) != SC_OK) {
      /* "column 'dims': ..." names the flag here: "--dims: ..." ('family' is --op) */
      const char *q = strncmp(err.msg, "column '", 8) == 0 ? strchr(err.msg + 8, '\'') : NULL;
      if (q != NULL && q[1] == ':') {
        const int k = (int)(q - err.msg - 8);
        const int fam = k == 6 && strncmp(err.msg + 8, "family", 6) == 0;
        ret = sc_cli_usage_error(CMD, "--%.*s%s", fam ? 2 : k, fam ? "op" : err.msg + 8, q + 1);
      } else {
        ret = sc_cli_usage_error(CMD, "%s", err.msg);
      }
      goto out;
    }
    if (push(&c, &r, &err) != SC_OK || price_op_row(&c, &op, r, &err) != SC_OK) goto fail;
  }
  if (c.n == 0) {
    sc_error_set(&err, SC_EPARSE, "%s: no operator or collective to price", c.path);
    goto fail;
  }
  if (collect(&c, &m, &nm, &err) != SC_OK) goto fail;
  sc_score_init(&s);
  for (size_t k = 0; k < nm; k++)
    if (m[k].measured_s > 0 && sc_score_add(&s, m[k].family, m[k].est, m[k].measured_s, &err) != SC_OK)
      goto fail;
  if (o.json) print_json(&c, m, nm, &s);
  else print_table(&c, m, nm, &s);
  ret = 0;
  goto out;
fail:
  ret = sc_cli_fail(&err);
out:
  free(m);
  free(c.rows);
  sc_residuals_free(c.ops_r);
  sc_residuals_free(c.coll_r);
  sc_registry_free(c.reg);
  return ret;
}

/* stepcast fit --test FILE: the residual set of --residuals DIR (or, with --samples, the one
 * this fit writes to --out DIR) scored on the samples of FILE, without refitting: per family,
 * the MAPE of the analytical, hybrid and learned estimators and whether a fitted model
 * corrects each. FILE's hardware is --hardware (standalone) or X/<name>.toml beside it. */
/* sc_cli_fit with what it prints on stdout (its report) sent to stderr instead: fit --test
 * --json writes one JSON document on stdout and nothing else. */
static int fit_on_stderr(int argc, char **argv) {
  fflush(stdout);
  int keep = dup(STDOUT_FILENO);
  if (keep < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    if (keep >= 0) close(keep);
    fprintf(stderr, "stepcast fit: cannot send the fit's report to stderr: %s\n",
            strerror(errno));
    return 1;
  }
  int rc = sc_cli_fit(argc, argv);
  fflush(stdout);
  if (dup2(keep, STDOUT_FILENO) < 0) rc = 1;
  close(keep);
  return rc;
}

int sc_cli_fit_test(int argc, char **argv) {
  const char *test = NULL, *resid = NULL, *out = NULL, *hw = NULL, *samples = NULL;
  const char *stack = NULL; /* --stack */
  int json = 0, fargc = 0, rc;
  char hwbuf[SC_PATH_MAX];
  char **fargv = malloc(((size_t)argc + 1) * sizeof *fargv);
  if (fargv == NULL) {
    fprintf(stderr, "stepcast fit: out of memory\n");
    return 1;
  }
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = i > 0 && (strcmp(a, "--test") == 0 || strcmp(a, "--residuals") == 0 ||
                          strcmp(a, "--stack") == 0);
    if (takes && (v == NULL || v[0] == '\0')) {
      free(fargv);
      return sc_cli_usage_error("fit", "option '%s' needs a value", a);
    }
    if (i > 0 && strcmp(a, "--test") == 0) test = argv[++i];
    else if (i > 0 && strcmp(a, "--residuals") == 0) resid = argv[++i];
    else if (i > 0 && strcmp(a, "--stack") == 0) {
      stack = argv[i + 1]; /* the fit's (with --samples) and the scoring's */
      fargv[fargc++] = argv[i++];
      fargv[fargc++] = argv[i];
    }
    else if (i > 0 && strcmp(a, "--json") == 0) json = 1;
    else {
      if (i > 0 && v != NULL && strcmp(a, "--out") == 0) out = v;
      if (i > 0 && v != NULL && strcmp(a, "--hardware") == 0) hw = v;
      if (i > 0 && v != NULL && strcmp(a, "--samples") == 0) samples = v;
      fargv[fargc++] = argv[i];
    }
  }
  fargv[fargc] = NULL;
  if (samples != NULL && resid != NULL) rc = sc_cli_usage_error("fit", "--residuals is for "
                                                  "scoring without fitting; with --samples, "
                                                  "--test scores the set the fit writes to --out");
  else if (samples == NULL && resid == NULL)
    rc = sc_cli_usage_error("fit", "--test needs --residuals DIR (a fitted set) or --samples "
                            "and --out (fit, then score)");
  else if (samples == NULL && fargc > 1 + (hw != NULL ? 2 : 0) + (stack != NULL ? 2 : 0))
    rc = sc_cli_usage_error("fit", "--test with --residuals takes --hardware, --stack and "
                            "--json only");
  else if (samples != NULL && json)
    rc = fit_on_stderr(fargc, fargv); /* stdout holds the JSON document alone */
  else
    rc = samples != NULL ? sc_cli_fit(fargc, fargv) : 0;
  free(fargv);
  if (rc != 0) return rc;
  if (samples != NULL) {
    resid = out;
    if (!json) printf("\nscored on %s without refitting:\n", test);
  }
  /* the test file's own device beside it; else --hardware (the fitted samples', with them) */
  if (samples != NULL || hw == NULL) {
    if (sc_cli_hardware_beside(test, hwbuf, sizeof hwbuf)) hw = hwbuf;
    else if (hw == NULL)
      return sc_cli_usage_error("fit", "--hardware is required when the --test file is not in "
                                "a folder named after its device");
  }
  {
    char *eargv[12] = {"estimate", "--hardware", (char *)hw, "--samples", (char *)test,
                       "--residuals", (char *)resid, "--summary", NULL};
    int n = 8;
    if (stack != NULL) {
      eargv[n++] = "--stack";
      eargv[n++] = (char *)stack;
    }
    if (json) eargv[n++] = "--json";
    eargv[n] = NULL;
    return sc_cli_estimate(n, eargv);
  }
}
