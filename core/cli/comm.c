/*
 * stepcast comm: predicted nccl-tests output for a collective over a topology, and
 * validation against published nccl-tests results (docs/comm.md; docs/validation.md, "Collectives: published nccl-tests runs").
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/report.h"

static const char *const CMD = "comm";

/* The most rows (sizes) one table may have. nccl-tests steps by a factor from minbytes to
 * maxbytes too and refuses a step that makes no progress; a factor just above 1 would ask
 * for hundreds of millions of rows, so the count is bounded (docs/cli.md). */
#define SC_COMM_MAX_ROWS 10000

static void comm_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast comm --topology T --gpus N [--op OP] [--algo A]\n"
          "                     [--minbytes B] [--maxbytes B] [--factor F] [--dtype D]\n"
          "                     [--estimator E [--residuals DIR]] [--json | --csv]\n"
          "       stepcast comm --validate FILE.csv\n"
          "       stepcast comm --import LOG --system S --topology T [--gpus N] [--op OP]\n"
          "                     [--algo A] [--id PREFIX] [--source TEXT]\n\n"
          "Predicts what nccl-tests (<op>_perf) would print for a group of N GPUs placed in\n"
          "order on topology T (a name in topologies/ or a path).\n\n"
          "  --topology T     topology (required unless --validate)\n"
          "  --gpus N         GPUs in the group; a multiple of the GPUs per node beyond one node\n"
          "  --op OP          allreduce (default), allgather, reducescatter, alltoall,\n"
          "                   broadcast, sendrecv\n"
          "  --algo A         auto (default: the cheapest per size, as NCCL's tuner), ring,\n"
          "                   tree, direct, nvls (NVLink SHARP: topologies whose node tier\n"
          "                   sets nvls = true)\n"
          "  -b, --minbytes B smallest size (default 8); suffixes K, M, G (powers of 1024)\n"
          "  -e, --maxbytes B largest size (default 8G)\n"
          "  -f, --factor F   size multiplier between rows (default 2); it must take\n"
          "                   minbytes to maxbytes in at most %d rows\n"
          "  -d, --dtype D    float (default), half, bfloat16, int8, fp8\n"
          "  --estimator E    analytical (default), hybrid (analytical x exp(residual)) or\n"
          "                   learned (a regressor on the collective's features alone), with\n"
          "                   the models stepcast fit --comm fitted on measured nccl-tests\n"
          "                   rows; a collective without an active model stays analytical\n"
          "  --residuals DIR  those models (default: topologies/<name>/residuals beside the\n"
          "                   topology file)\n"
          "  --json, --csv    machine-readable output instead of the nccl-tests table\n"
          "  --validate FILE  compare with published results (columns id,source,system,\n"
          "                   topology,gpus,op,algo,bytes,busbw_GBps,notes): per row measured,\n"
          "                   predicted and signed error; MAPE overall, for >= 64 MiB, per system\n"
          "  --import LOG     print an nccl-tests run's output (LOG) as rows of that CSV, one\n"
          "                   per size: busbw from the out-of-place time; the collective and\n"
          "                   the ranks from the log where it states them (else --op, --gpus);\n"
          "                   --system names the cluster, --id prefixes the row ids (default\n"
          "                   the log's file name), --source the rows' source (default the\n"
          "                   log's path). For stepcast fit --comm and comm --validate.\n",
          SC_COMM_MAX_ROWS);
}

/* nccl-tests' parsesize: an integer with an optional K, M or G suffix (1024-based). */
static int parse_size(const char *s, double *out) {
  char *end;
  double mult = 1.0, v;
  size_t len = strlen(s);
  char buf[64];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len + 1);
  switch (buf[len - 1]) {
  case 'G': case 'g': mult = 1024.0 * 1024.0 * 1024.0; buf[--len] = '\0'; break;
  case 'M': case 'm': mult = 1024.0 * 1024.0; buf[--len] = '\0'; break;
  case 'K': case 'k': mult = 1024.0; buf[--len] = '\0'; break;
  default: break;
  }
  if (len == 0) return -1;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] < '0' || buf[i] > '9') return -1;
  }
  errno = 0;
  v = strtod(buf, &end);
  if (*end != '\0' || errno != 0) return -1;
  v *= mult;
  if (v > 1e15) return -1;
  *out = v;
  return 0;
}

static int parse_uint(const char *s, uint32_t *out) {
  char *end;
  unsigned long v;
  if (s[0] < '0' || s[0] > '9') return -1;
  errno = 0;
  v = strtoul(s, &end, 10);
  if (*end != '\0' || errno != 0 || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

typedef struct dtype_row {
  const char *name;
  sc_dtype dt;
  uint32_t size;
} dtype_row;

static const dtype_row dtypes[] = {
    {"float", SC_DTYPE_FP32, 4}, {"half", SC_DTYPE_FP16, 2}, {"bfloat16", SC_DTYPE_BF16, 2},
    {"int8", SC_DTYPE_INT8, 1},  {"fp8", SC_DTYPE_FP8, 1},
};

static int open_registry(sc_registry **reg, sc_error *err) {
  return sc_cli_registry_open(reg, err);
}

/* Load and check a topology and the flat group of gpus on it. */
static int setup(const char *topo, uint32_t gpus, sc_topology *t, sc_coll_desc *c,
                 sc_error *err) {
  int rc = sc_topology_load(topo, t, err);
  if (rc != SC_OK) return rc;
  rc = sc_comm_check_topology(t, err);
  if (rc != SC_OK) return rc;
  rc = sc_comm_check_gpus(t, gpus, err);
  if (rc != SC_OK) return rc;
  memset(c, 0, sizeof *c);
  return sc_comm_group_flat(t, gpus, c, err);
}

/* ------------------------------------------------------------------------- */
/* --validate                                                                */

typedef struct vsys {
  char name[128];
  double sum;
  size_t n;
} vsys;

static int run_validate(const char *file) {
  sc_error err = {0};
  sc_comm_vrow *rows = NULL;
  size_t n = 0, nbig = 0, nsys = 0;
  double sum = 0.0, sumbig = 0.0;
  vsys *sys = NULL;
  sc_registry *reg = NULL;
  int rc = sc_comm_read_validation(file, &rows, &n, &err);
  if (rc != SC_OK) return sc_cli_fail(&err);
  rc = open_registry(&reg, &err);
  if (rc != SC_OK) {
    free(rows);
    return sc_cli_fail(&err);
  }
  sys = calloc(n, sizeof *sys);
  if (sys == NULL) {
    free(rows);
    sc_registry_free(reg);
    fprintf(stderr, "stepcast: out of memory\n");
    return 1;
  }
  printf("# stepcast comm --validate %s\n", file);
  printf("# %-10s %-24s %-20s %5s %-13s %-5s %12s %9s %9s %8s %-6s\n", "id", "system",
         "topology", "gpus", "op", "algo", "bytes", "meas", "pred", "err%", "chosen");
  printf("# %-10s %-24s %-20s %5s %-13s %-5s %12s %9s %9s %8s\n", "", "", "", "", "", "", "",
         "(GB/s)", "(GB/s)", "");
  for (size_t i = 0; i < n; i++) {
    const sc_comm_vrow *r = &rows[i];
    sc_topology t;
    sc_coll_desc c;
    sc_estimate e;
    const sc_coll_plugin *chosen = NULL;
    const char *proto = NULL;
    char pick[48];
    double e_pct;
    size_t k;
    rc = setup(r->topology, r->gpus, &t, &c, &err);
    if (rc == SC_OK) {
      c.kind = r->op;
      c.bytes = r->bytes;
      c.dtype = SC_DTYPE_FP32;
      rc = sc_comm_estimate_proto(reg, &t, &c, r->algo, &e, &chosen, &proto, &err);
    }
    if (rc != SC_OK) {
      sc_cli_eprintf("stepcast: %s:%u (row '%s'): %s", file, (unsigned)r->line, r->id,
              err.msg);
      free(rows);
      free(sys);
      sc_registry_free(reg);
      return 1;
    }
    e_pct = (e.busbw_Bps - r->busbw_Bps) / r->busbw_Bps * 100.0;
    snprintf(pick, sizeof pick, "%s/%s", chosen ? chosen->algorithm : "?", proto ? proto : "?");
    printf("  %-10s %-24s %-20s %5u %-13s %-5s %12.0f %9.2f %9.2f %+8.1f %s\n", r->id,
           r->system, t.name, (unsigned)r->gpus, sc_comm_kind_name(r->op), r->algo, r->bytes,
           r->busbw_Bps / 1e9, e.busbw_Bps / 1e9, e_pct, pick);
    sum += fabs(e_pct);
    if (r->bytes >= 64.0 * 1024 * 1024) {
      sumbig += fabs(e_pct);
      nbig++;
    }
    for (k = 0; k < nsys; k++) {
      if (strcmp(sys[k].name, r->system) == 0) break;
    }
    if (k == nsys) {
      snprintf(sys[k].name, sizeof sys[k].name, "%s", r->system);
      nsys++;
    }
    sys[k].sum += fabs(e_pct);
    sys[k].n++;
  }
  printf("#\n# MAPE, all %zu rows          : %6.1f %%\n", n, sum / (double)n);
  if (nbig > 0) {
    printf("# MAPE, %zu rows >= 64 MiB     : %6.1f %%\n", nbig, sumbig / (double)nbig);
  } else {
    printf("# MAPE, rows >= 64 MiB       :    n/a (no such row)\n");
  }
  for (size_t k = 0; k < nsys; k++) {
    printf("# MAPE, %-24s: %6.1f %% (%zu rows)\n", sys[k].name, sys[k].sum / (double)sys[k].n,
           sys[k].n);
  }
  free(rows);
  free(sys);
  sc_registry_free(reg);
  return 0;
}

/* ------------------------------------------------------------------------- */
/* --import                                                                  */

/* A CSV field, quoted (quotes doubled). */
static void put_quoted(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

/* nccl-tests' busbw of a row, GB/s: size / time x the bus factor. */
static double row_busbw(const sc_nccl_log_row *r, sc_coll_kind kind, uint32_t gpus) {
  return r->bytes / r->time_s * sc_comm_bus_factor(kind, gpus) / 1e9;
}

static int run_import(const char *log, const char *system, const char *topo_name,
                      uint32_t gpus, int op_flag, const char *algo, const char *id_prefix,
                      const char *source) {
  sc_error err = {0};
  sc_nccl_log lg;
  sc_topology t;
  sc_coll_kind kind;
  char prefix[40], src[600];
  int rc = sc_comm_read_nccl_log(log, &lg, &err);
  if (rc != SC_OK) return sc_cli_fail(&err);
  if (lg.have_kind && op_flag >= 0 && (sc_coll_kind)op_flag != lg.kind) {
    sc_cli_eprintf("stepcast: %s: the log ran %s, not --op %s", log,
            sc_comm_kind_name(lg.kind), sc_comm_kind_name((sc_coll_kind)op_flag));
    sc_comm_nccl_log_free(&lg);
    return 1;
  }
  if (!lg.have_kind && op_flag < 0) {
    sc_comm_nccl_log_free(&lg);
    return sc_cli_usage_error(CMD, "%s does not say which collective it ran (no '# Collective "
                                   "test starting' line): pass --op", log);
  }
  kind = lg.have_kind ? lg.kind : (sc_coll_kind)op_flag;
  if (lg.ranks > 0 && gpus > 0 && lg.ranks != gpus) {
    sc_cli_eprintf("stepcast: %s: the log lists %u ranks, not --gpus %u", log,
            (unsigned)lg.ranks, (unsigned)gpus);
    sc_comm_nccl_log_free(&lg);
    return 1;
  }
  if (lg.ranks == 0 && gpus == 0) {
    sc_comm_nccl_log_free(&lg);
    return sc_cli_usage_error(CMD, "%s lists no ranks ('#  Rank  N Group ...' lines): pass "
                                   "--gpus", log);
  }
  if (gpus == 0) gpus = lg.ranks;
  if ((rc = sc_topology_load(topo_name, &t, &err)) != SC_OK ||
      (rc = sc_comm_check_topology(&t, &err)) != SC_OK ||
      (rc = sc_comm_check_gpus(&t, gpus, &err)) != SC_OK) {
    sc_comm_nccl_log_free(&lg);
    return sc_cli_fail(&err);
  }
  if (id_prefix == NULL) { /* the log's file name without its extension */
    const char *b = strrchr(log, '/');
    const char *dot;
    b = b ? b + 1 : log;
    dot = strrchr(b, '.');
    snprintf(prefix, sizeof prefix, "%.*s", (int)(dot && dot != b ? dot - b : (long)strlen(b)),
             b);
  } else {
    snprintf(prefix, sizeof prefix, "%s", id_prefix);
  }
  if (strchr(prefix, ',') != NULL || strchr(prefix, '"') != NULL || prefix[0] == '\0') {
    sc_comm_nccl_log_free(&lg);
    return sc_cli_usage_error(CMD, "--id: '%s' must be a non-empty name without commas or "
                                   "quotes", prefix);
  }
  snprintf(src, sizeof src, "%s", source ? source : log);
  for (size_t i = 0; i < lg.n; i++) { /* the bounds comm --validate reads rows with */
    const sc_nccl_log_row *r = &lg.rows[i];
    double busbw = row_busbw(r, kind, gpus);
    if (!(busbw > 0.0) || busbw > 1e6) {
      sc_cli_eprintf("stepcast: %s:%u: column 'time': %.0f bytes in %g us is a bus bandwidth "
              "of %g GB/s, outside (0, 1e6]: not a measurement", log, (unsigned)r->line,
              r->bytes, r->time_s * 1e6, busbw);
      sc_comm_nccl_log_free(&lg);
      return 1;
    }
  }
  printf("id,source,system,topology,gpus,op,algo,bytes,busbw_GBps,notes\n");
  for (size_t i = 0; i < lg.n; i++) {
    const sc_nccl_log_row *r = &lg.rows[i];
    char note[160];
    printf("%s-%.0f,", prefix, r->bytes);
    put_quoted(src);
    putchar(',');
    put_quoted(system);
    putchar(',');
    put_quoted(topo_name);
    printf(",%u,%s,%s,%.0f,%.6g,", (unsigned)gpus, sc_comm_kind_name(kind), algo, r->bytes,
           row_busbw(r, kind, gpus));
    snprintf(note, sizeof note, "imported by stepcast comm --import from line %u: out-of-place "
             "time %.6g us", (unsigned)r->line, r->time_s * 1e6);
    put_quoted(note);
    putchar('\n');
  }
  sc_comm_nccl_log_free(&lg);
  return 0;
}

/* ------------------------------------------------------------------------- */
/* The sweep                                                                 */

int sc_cli_comm(int argc, char **argv) {
  const char *topo = NULL, *algo = "auto", *validate = NULL, *resid_dir = NULL;
  const char *import = NULL, *system = NULL, *id_prefix = NULL, *source = NULL;
  int have_op = 0, have_algo = 0;
  sc_estimator mode = SC_ESTIMATOR_ANALYTICAL;
  int have_mode = 0;
  sc_residuals *res = NULL;
  const char *op_name = "allreduce";
  const dtype_row *dt = &dtypes[0];
  uint32_t gpus = 0;
  int have_gpus = 0, json = 0, csv = 0;
  double minb = 8.0, maxb = 8.0 * 1024 * 1024 * 1024, factor = 2.0;
  sc_coll_kind op = SC_COLL_ALLREDUCE;
  sc_error err = {0};
  sc_topology t;
  sc_coll_desc c;
  sc_registry *reg = NULL;
  int rc, first = 1;
  double sum_bus = 0.0;
  size_t nrows = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    char flag[32];
    const char *eq = strchr(a, '=');
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      comm_usage(stdout);
      return 0;
    }
    if (strcmp(a, "--json") == 0) { json = 1; continue; }
    if (strcmp(a, "--csv") == 0) { csv = 1; continue; }
    if (a[0] != '-') return sc_cli_usage_error(CMD, "unexpected argument '%s'", a);
    if (a[1] == '-' && eq != NULL) {
      size_t fl = (size_t)(eq - a);
      if (fl >= sizeof flag) return sc_cli_usage_error(CMD, "unknown option '%s'", a);
      memcpy(flag, a, fl);
      flag[fl] = '\0';
      val = eq + 1;
    } else {
      snprintf(flag, sizeof flag, "%s", a);
      if (strlen(a) >= sizeof flag) return sc_cli_usage_error(CMD, "unknown option '%s'", a);
    }
#define TAKE()                                                                      \
  do {                                                                              \
    if (val == NULL) {                                                              \
      if (i + 1 >= argc) return sc_cli_usage_error(CMD, "%s needs a value", flag); \
      val = argv[++i];                                                              \
    }                                                                               \
  } while (0)
    if (strcmp(flag, "--topology") == 0) {
      TAKE();
      topo = val;
    } else if (strcmp(flag, "--gpus") == 0) {
      TAKE();
      if (parse_uint(val, &gpus) != 0 || gpus == 0) {
        return sc_cli_usage_error(CMD, "--gpus: expected an integer >= 1, got '%s'", val);
      }
      have_gpus = 1;
    } else if (strcmp(flag, "--op") == 0) {
      TAKE();
      if (sc_comm_kind_parse(val, &op) != SC_OK) {
        return sc_cli_usage_error(CMD,
                                  "--op: unknown collective '%s' (allreduce, allgather, "
                                  "reducescatter, alltoall, broadcast, sendrecv)",
                                  val);
      }
      op_name = sc_comm_kind_name(op);
      have_op = 1;
    } else if (strcmp(flag, "--algo") == 0) {
      TAKE();
      if (val[0] == '\0') return sc_cli_usage_error(CMD, "--algo: empty value");
      algo = val;
      have_algo = 1;
    } else if (strcmp(flag, "--import") == 0) {
      TAKE();
      import = val;
    } else if (strcmp(flag, "--system") == 0 || strcmp(flag, "--id") == 0 ||
               strcmp(flag, "--source") == 0) {
      TAKE();
      if (val[0] == '\0') return sc_cli_usage_error(CMD, "%s: empty value", flag);
      if (strcmp(flag, "--system") == 0) system = val;
      else if (strcmp(flag, "--id") == 0) id_prefix = val;
      else source = val;
    } else if (strcmp(flag, "--minbytes") == 0 || strcmp(flag, "-b") == 0) {
      TAKE();
      if (parse_size(val, &minb) != 0) {
        return sc_cli_usage_error(CMD, "%s: expected a size like 8, 64K, 1M, 8G, got '%s'",
                                  flag, val);
      }
    } else if (strcmp(flag, "--maxbytes") == 0 || strcmp(flag, "-e") == 0) {
      TAKE();
      if (parse_size(val, &maxb) != 0) {
        return sc_cli_usage_error(CMD, "%s: expected a size like 8, 64K, 1M, 8G, got '%s'",
                                  flag, val);
      }
    } else if (strcmp(flag, "--factor") == 0 || strcmp(flag, "-f") == 0) {
      char *end;
      TAKE();
      errno = 0;
      factor = strtod(val, &end);
      if (*end != '\0' || errno != 0 || !(factor > 1.0) || !isfinite(factor)) {
        return sc_cli_usage_error(CMD, "%s: expected a number > 1, got '%s'", flag, val);
      }
    } else if (strcmp(flag, "--dtype") == 0 || strcmp(flag, "-d") == 0) {
      size_t k;
      TAKE();
      for (k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        if (strcmp(val, dtypes[k].name) == 0) break;
      }
      if (k == sizeof dtypes / sizeof dtypes[0]) {
        return sc_cli_usage_error(CMD, "--dtype: unknown type '%s' (float, half, bfloat16, "
                                       "int8, fp8)", val);
      }
      dt = &dtypes[k];
    } else if (strcmp(flag, "--validate") == 0) {
      TAKE();
      validate = val;
    } else if (strcmp(flag, "--estimator") == 0) {
      TAKE();
      if (sc_estimator_parse(val, &mode) != SC_OK) {
        return sc_cli_usage_error(CMD, "--estimator: '%s' is not analytical, hybrid or learned",
                                  val);
      }
      have_mode = 1;
    } else if (strcmp(flag, "--residuals") == 0) {
      TAKE();
      if (val[0] == '\0') return sc_cli_usage_error(CMD, "--residuals: empty value");
      resid_dir = val;
    } else {
      return sc_cli_usage_error(CMD, "unknown option '%s'", a);
    }
#undef TAKE
  }
  if (json && csv) return sc_cli_usage_error(CMD, "--json and --csv exclude each other");
  if (import == NULL && (system != NULL || id_prefix != NULL || source != NULL))
    return sc_cli_usage_error(CMD, "--system, --id and --source are for --import");
  if (import != NULL) {
    if (validate != NULL || have_mode || json || csv)
      return sc_cli_usage_error(CMD, "--import prints CSV rows; it takes no --validate, "
                                     "--estimator, --json or --csv");
    if (system == NULL) return sc_cli_usage_error(CMD, "--import needs --system (the cluster)");
    if (topo == NULL) return sc_cli_usage_error(CMD, "--import needs --topology");
    return run_import(import, system, topo, have_gpus ? gpus : 0, have_op ? (int)op : -1,
                      have_algo ? algo : "", id_prefix, source);
  }
  if (resid_dir != NULL && mode == SC_ESTIMATOR_ANALYTICAL)
    return sc_cli_usage_error(CMD, "--residuals needs --estimator hybrid or learned");
  if (validate != NULL) {
    if (have_mode) {
      return sc_cli_usage_error(CMD, "--validate compares the analytical estimate with every "
                                     "row; stepcast fit --comm reports the residuals' "
                                     "cross-validated and held-out errors on a system's rows");
    }
    if (topo != NULL || have_gpus) {
      return sc_cli_usage_error(CMD, "--validate takes its topologies and GPU counts from "
                                     "the file");
    }
    return run_validate(validate);
  }
  if (topo == NULL) return sc_cli_usage_error(CMD, "--topology is required");
  if (!have_gpus) return sc_cli_usage_error(CMD, "--gpus is required");
  if (minb < 1.0 || maxb < minb) {
    return sc_cli_usage_error(CMD, "sizes must satisfy 1 <= minbytes <= maxbytes");
  }
  {
    /* the rows the loop below prints, counted the same way (a step that does not grow the
     * size, as 1 + 1e-17 would, counts until the bound) */
    long nsizes = 0;
    for (double size = minb; size <= maxb && nsizes <= SC_COMM_MAX_ROWS; size *= factor)
      nsizes++;
    if (nsizes > SC_COMM_MAX_ROWS)
      return sc_cli_usage_error(CMD, "--factor: %.10g from %.0f to %.0f bytes gives more than %d "
                                "rows (at most %d): use a larger factor or a narrower range",
                                factor, minb, maxb, SC_COMM_MAX_ROWS, SC_COMM_MAX_ROWS);
  }

  rc = setup(topo, gpus, &t, &c, &err);
  if (rc != SC_OK) return sc_cli_fail(&err);
  rc = open_registry(&reg, &err);
  if (rc != SC_OK) return sc_cli_fail(&err);
  if (mode != SC_ESTIMATOR_ANALYTICAL) {
    rc = sc_residuals_for_topology(topo, t.name, resid_dir, 1, mode, &res, &err);
    if (rc != SC_OK) {
      sc_registry_free(reg);
      return sc_cli_fail(&err);
    }
  }

  if (json) {
    /* names from files and flags go through the JSON string writer (quotes, controls) */
    printf("{\"schema_version\":%d,\"command\":\"comm\",\"topology\":", SC_REPORT_SCHEMA_VERSION);
    sc_json_string(stdout, t.name);
    printf(",\"gpus\":%u,\"gpus_per_node\":%u,\"op\":", (unsigned)gpus, (unsigned)t.gpus_per_node);
    sc_json_string(stdout, op_name);
    printf(",\"algo\":");
    sc_json_string(stdout, algo);
    printf(",\"dtype\":\"%s\",\"estimator\":\"%s\",\"rows\":[", dt->name,
           sc_estimator_name(mode));
  } else if (csv) {
    printf("bytes,count,type,time_us,algbw_GBps,busbw_GBps,algo,bound,bound_tier\n");
  } else {
    uint32_t nodes = gpus > t.gpus_per_node ? gpus / t.gpus_per_node : 1;
    printf("# stepcast comm: predicted %s_perf (nccl-tests) on %s\n",
           op == SC_COLL_ALLREDUCE ? "all_reduce" : op == SC_COLL_ALLGATHER ? "all_gather"
           : op == SC_COLL_REDUCESCATTER ? "reduce_scatter" : op_name, t.name);
    printf("# nRanks %u (%u node%s x %u GPU%s) minBytes %.0f maxBytes %.0f step: %g(factor) "
           "algo: %s\n",
           (unsigned)gpus, (unsigned)nodes, nodes == 1 ? "" : "s",
           (unsigned)(gpus < t.gpus_per_node ? gpus : t.gpus_per_node),
           t.gpus_per_node == 1 ? "" : "s", minb, maxb, factor, algo);
    if (res != NULL) {
      c.kind = op;
      if (sc_residuals_find_coll(res, mode, &c) != NULL)
        printf("# estimator: %s (residuals %s; algo and bound are the analytical estimate's)\n",
               sc_estimator_name(mode), res->dir);
      else
        printf("# estimator: %s, but %s has no active %s model of %s over %u ranks on %u "
               "node%s: analytical\n", sc_estimator_name(mode), res->dir,
               sc_estimator_name(mode), op_name, (unsigned)c.nranks,
               (unsigned)sc_coll_resid_nodes(&c), sc_coll_resid_nodes(&c) == 1 ? "" : "s");
    }
    printf("#\n");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %-6s %s\n", "size", "count", "type",
           "redop", "root", "time", "algbw", "busbw", "algo", "bound");
    printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)");
  }
  for (double size = minb; size <= maxb; size *= factor) {
    /* nccl-tests rounds the size down to whole elements for every rank. */
    int per_rank = op == SC_COLL_ALLGATHER || op == SC_COLL_REDUCESCATTER ||
                   op == SC_COLL_ALLTOALL;
    double unit = (double)dt->size * (per_rank ? (double)gpus : 1.0);
    double count = floor(floor(size) / unit);
    double bytes = count * unit;
    sc_estimate e;
    const sc_coll_plugin *chosen = NULL;
    const char *proto = NULL;
    double algbw, busbw;
    const char *tier;
    c.kind = op;
    c.bytes = bytes;
    c.dtype = dt->dt;
    rc = sc_comm_estimate_proto(reg, &t, &c, algo, &e, &chosen, &proto, &err);
    if (rc == SC_OK && res != NULL)
      rc = sc_residuals_apply_coll(res, mode, &c, &e, &e.time_s, &err);
    if (rc != SC_OK) {
      if (json) printf("]}\n");
      sc_residuals_free(res);
      sc_registry_free(reg);
      return sc_cli_fail(&err);
    }
    algbw = e.time_s > 0.0 ? bytes / e.time_s : 0.0;
    busbw = algbw * sc_comm_bus_factor(op, gpus);
    tier = e.bound_tier >= 0 && (uint32_t)e.bound_tier < t.ntiers ? t.tiers[e.bound_tier].name
                                                                   : "-";
    sum_bus += busbw;
    nrows++;
    if (json) {
      printf("%s{\"bytes\":%.0f,\"count\":%.0f,\"time_s\":%.9g,\"algbw_Bps\":%.6g,"
             "\"busbw_Bps\":%.6g,\"algorithm\":\"%s\",\"protocol\":\"%s\",\"plugin\":\"%s\","
             "\"bound\":\"%s\",\"bound_tier\":\"%s\"}",
             first ? "" : ",", bytes, count, e.time_s, algbw, busbw,
             chosen ? chosen->algorithm : "", proto ? proto : "", chosen ? chosen->hdr.name : "",
             sc_bound_name(e.bound), tier);
    } else if (csv) {
      printf("%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s,%s,%s\n", bytes, count, dt->name, e.time_s * 1e6,
             algbw / 1e9, busbw / 1e9, chosen ? chosen->algorithm : "", sc_bound_name(e.bound),
             tier);
    } else {
      double us = e.time_s * 1e6;
      const char *redop = (op == SC_COLL_ALLREDUCE || op == SC_COLL_REDUCESCATTER) ? "sum"
                                                                                    : "none";
      int root = op == SC_COLL_BROADCAST ? 0 : -1;
      printf("%12.0f  %12.0f  %8s  %6s  %6d  ", bytes, count, dt->name, redop, root);
      if (us >= 10000.0) printf("%7.0f", us);
      else if (us >= 100.0) printf("%7.1f", us);
      else printf("%7.2f", us);
      printf("  %6.2f  %6.2f  %s/%-6s %s@%s\n", algbw / 1e9, busbw / 1e9,
             chosen ? chosen->algorithm : "?", proto ? proto : "?", sc_bound_name(e.bound),
             tier);
    }
    first = 0;
  }
  if (json) {
    printf("],\"avg_busbw_Bps\":%.6g}\n", nrows ? sum_bus / (double)nrows : 0.0);
  } else if (!csv) {
    printf("# Avg bus bandwidth    : %g \n#\n", nrows ? sum_bus / (double)nrows / 1e9 : 0.0);
  }
  sc_residuals_free(res);
  sc_registry_free(reg);
  return 0;
}
