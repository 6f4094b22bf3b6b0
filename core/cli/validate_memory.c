/* stepcast validate --memory: predict the per-GPU memory of every row of a CSV of published
 * peak-memory measurements (docs/validation/memory.csv) and report the errors, comparing
 * each row's counter with the sum that counter holds (stepcast/memory.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "csvrow.h"
#include "job.h"
#include "stepcast/csv.h"
#include "stepcast/memory.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

#define GiB 1073741824.0

/* Required columns (docs/validation/memory-other.md, appendix). */
enum {
  M_ID, M_LAYERS, M_HIDDEN, M_FFN, M_HEADS, M_KV, M_VOCAB, M_ACT, M_GPUS, M_TP, M_PP, M_DP,
  M_CP, M_MB, M_GB, M_SEQ, M_SCHED, M_VS, M_RECOMP, M_SP, M_DOPT, M_ZERO, M_FA, M_DTYPE,
  M_MEASURED, M_COUNTER, M_STAGE, M_TOPOLOGY, M_HARDWARE, M_CAPACITY, M_STACK, M_COMPLETE,
  M_COUNT
};
static const char *const mcols[M_COUNT] = {
    "id", "layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "activation",
    "gpus", "tp", "pp", "dp", "cp", "micro_batch", "global_batch", "seq_len", "schedule",
    "virtual_stages", "recompute", "sequence_parallel", "distributed_optimizer", "zero_stage",
    "flash_attention", "dtype", "measured_gib", "counter", "stage_measured", "topology",
    "hardware", "capacity_bytes", "stepcast_stack", "config_complete"};

typedef enum { CNT_ALLOCATED = 0, CNT_RESERVED, CNT_DEVICE } counter_kind;
static const char *const counters[] = {"allocated", "reserved", "device", NULL};

typedef enum { ROW_OK = 0, ROW_SKIPPED, ROW_ERROR } row_status;

typedef struct mrow {
  char id[SC_NAME_MAX];
  uint32_t line;
  row_status status;
  int complete;
  counter_kind counter;
  int stage_last;           /* stage_measured = last (else the worst stage) */
  sc_model model;
  sc_cli_job job;
  int dev;                  /* index into the device cache */
  int topo;                 /* index into the topology cache, -1 = none */
  int stack;                /* index into the stack cache, -1 = none */
  double capacity_bytes;
  double measured_gib, predicted_gib, error_pct, device_gib;
  int refused;
  char assumed[256];
  char reason[SC_ERROR_MSG_MAX];
} mrow;

typedef struct cache {
  size_t ndev, ntopo, nstack;
  struct {
    char name[SC_PATH_MAX];
    sc_device dev;
  } *dev;
  struct {
    char name[SC_PATH_MAX];
    sc_topology topo;
  } *topo;
  sc_stack *stack;
} cache;

static void add_assumed(mrow *r, const char *what) {
  size_t n = strlen(r->assumed);
  snprintf(r->assumed + n, sizeof r->assumed - n, "%s%s", n ? ", " : "", what);
}

static void add_reason(mrow *r, const char *what) {
  size_t n = strlen(r->reason);
  snprintf(r->reason + n, sizeof r->reason - n, "%s%s", n ? ", " : "unknown: ", what);
}

/* A value through the job keys; an error becomes "file:line: column 'name': message". */
static int job_field(const sc_csv *c, size_t row, int col, mrow *r, const char *key,
                     const char *value, sc_error *err) {
  sc_error e;
  sc_error_clear(&e);
  if (sc_cli_job_set(&r->job, key, value, &e) != SC_OK)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %s", sc_csv_path(c),
                        sc_csv_line(c, row), mcols[col], e.msg);
  return SC_OK;
}

/* The device, topology and stack a row names, each loaded once. */
static int load_specs(const sc_csv *c, size_t row, const int *idx, mrow *r, cache *k,
                      sc_registry *reg, sc_error *err) {
  const char *path = sc_csv_path(c);
  uint32_t line = sc_csv_line(c, row);
  char topo[SC_PATH_MAX], hw[SC_PATH_MAX], stk[SC_PATH_MAX];
  sc_error e;
  sc__csv_text(c, row, idx[M_TOPOLOGY], topo, sizeof topo);
  sc__csv_text(c, row, idx[M_HARDWARE], hw, sizeof hw);
  sc__csv_text(c, row, idx[M_STACK], stk, sizeof stk);
  r->topo = r->stack = -1;
  int hw_of_topo = hw[0] == '\0';
  if (topo[0] == '\0' && hw[0] == '\0')
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'hardware': empty, and no topology "
                        "names the device", path, line);
  if (topo[0] != '\0') {
    for (size_t i = 0; i < k->ntopo; i++)
      if (strcmp(k->topo[i].name, topo) == 0) r->topo = (int)i;
    if (r->topo < 0) {
      void *n = realloc(k->topo, (k->ntopo + 1) * sizeof *k->topo);
      if (n == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
      k->topo = n;
      snprintf(k->topo[k->ntopo].name, sizeof k->topo[k->ntopo].name, "%s", topo);
      sc_error_clear(&e);
      if (sc_topology_load(topo, &k->topo[k->ntopo].topo, &e) != SC_OK)
        return sc_error_set(err, SC_EPARSE, "%s:%u: column 'topology': %s", path, line, e.msg);
      r->topo = (int)k->ntopo++;
    }
    if (hw[0] == '\0') snprintf(hw, sizeof hw, "%s", k->topo[r->topo].topo.hardware);
  }
  r->dev = -1;
  for (size_t i = 0; i < k->ndev; i++)
    if (strcmp(k->dev[i].name, hw) == 0) r->dev = (int)i;
  if (r->dev < 0) {
    void *n = realloc(k->dev, (k->ndev + 1) * sizeof *k->dev);
    if (n == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
    k->dev = n;
    snprintf(k->dev[k->ndev].name, sizeof k->dev[k->ndev].name, "%s", hw);
    sc_error_clear(&e);
    if (sc_hardware_load(reg, hw, &k->dev[k->ndev].dev, &e) != SC_OK)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %s", path, line,
                          hw_of_topo ? "topology" : "hardware", e.msg);
    r->dev = (int)k->ndev++;
  }
  sc__csv_text(c, row, idx[M_STACK], stk, sizeof stk);
  if (stk[0] != '\0') {
    for (size_t i = 0; i < k->nstack; i++)
      if (strcmp(k->stack[i].name, stk) == 0 || strcmp(k->stack[i].path, stk) == 0)
        r->stack = (int)i;
    if (r->stack < 0) {
      sc_stack *n = realloc(k->stack, (k->nstack + 1) * sizeof *n);
      if (n == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
      k->stack = n;
      sc_error_clear(&e);
      if (sc_stack_load(stk, &n[k->nstack], &e) != SC_OK)
        return sc_error_set(err, SC_EPARSE, "%s:%u: column 'stepcast_stack': %s", path, line,
                            e.msg);
      r->stack = (int)k->nstack++;
    }
  }
  return SC_OK;
}

/* Read one row into r. A malformed field is the file's error (the command fails); a field
 * a prediction needs left empty makes the row skipped, with the reason. */
static int read_row(const sc_csv *c, size_t row, const int *idx, int tied_col, mrow *r,
                    cache *k, sc_registry *reg, sc_error *err) {
  const char *path = sc_csv_path(c);
  uint32_t line = sc_csv_line(c, row);
  char buf[256];
  int64_t v[M_COUNT];
  int known[M_COUNT];
  static const int ints[] = {M_LAYERS, M_HIDDEN, M_FFN,  M_HEADS, M_KV, M_VOCAB, M_GPUS,
                             M_TP,     M_PP,     M_DP,   M_CP,    M_MB, M_GB,    M_SEQ,
                             M_VS,     M_ZERO,   M_COMPLETE};
  int rc;

  memset(r, 0, sizeof *r);
  memset(known, 0, sizeof known);
  memset(v, 0, sizeof v);
  r->line = line;
  sc_cli_job_init(&r->job);
  sc__csv_text(c, row, idx[M_ID], buf, sizeof buf);
  if (buf[0] == '\0')
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'id': empty", path, line);
  if (strlen(buf) >= sizeof r->id)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'id': longer than %zu characters", path,
                        line, sizeof r->id - 1);
  memcpy(r->id, buf, strlen(buf) + 1);

  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    int col = ints[i];
    rc = sc_csv_i64(c, row, (size_t)idx[col], &v[col], &known[col], err);
    if (rc != SC_OK) return rc;
    int64_t lo = (col == M_ZERO || col == M_COMPLETE) ? 0 : 1;
    int64_t hi = col == M_ZERO ? 3 : col == M_COMPLETE ? 1 : (int64_t)UINT32_MAX;
    if (known[col] && (v[col] < lo || v[col] > hi))
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %lld is not in [%lld, %lld]",
                          path, line, mcols[col], (long long)v[col], (long long)lo,
                          (long long)hi);
  }
  r->complete = known[M_COMPLETE] && v[M_COMPLETE] == 1;
  int mk = 0;
  rc = sc_csv_double(c, row, (size_t)idx[M_MEASURED], &r->measured_gib, &mk, err);
  if (rc != SC_OK) return rc;
  if (mk && !(r->measured_gib > 0 && r->measured_gib <= 1e6))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'measured_gib': must be in (0, 1e6] "
                        "GiB", path, line);
  int ck = 0;
  rc = sc_csv_double(c, row, (size_t)idx[M_CAPACITY], &r->capacity_bytes, &ck, err);
  if (rc != SC_OK) return rc;
  if (ck && !(r->capacity_bytes >= 1 && r->capacity_bytes <= 1e16))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'capacity_bytes': must be in [1, 1e16] "
                        "bytes", path, line);
  sc__csv_text(c, row, idx[M_COUNTER], buf, sizeof buf);
  int cnt = buf[0] ? sc__choice_of(counters, buf) : -1;
  if (buf[0] && cnt < 0)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'counter': '%s' is not allocated, "
                        "reserved or device", path, line, buf);
  r->counter = cnt < 0 ? CNT_ALLOCATED : (counter_kind)cnt;
  sc__csv_text(c, row, idx[M_STAGE], buf, sizeof buf);
  if (buf[0] && strcmp(buf, "last") != 0 && strcmp(buf, "max") != 0)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'stage_measured': '%s' is not max or "
                        "last", path, line, buf);
  r->stage_last = strcmp(buf, "last") == 0;

  rc = load_specs(c, row, idx, r, k, reg, err);
  if (rc != SC_OK) return rc;
  if (!ck) r->capacity_bytes = k->dev[r->dev].dev.mem_bytes;

  /* The model from its columns (GPT-style or Llama-style by the activation, as validate) */
  sc__csv_text(c, row, idx[M_ACT], buf, sizeof buf);
  if (buf[0] == '\0') {
    add_assumed(r, "activation=gelu");
    r->model.activation = SC_ACT_GELU;
  } else if ((rc = sc__csv_activation(path, line, buf, &r->model.activation, err)) != SC_OK) {
    return rc;
  }
  snprintf(r->model.name, sizeof r->model.name, "%s", r->id);
  r->model.layers = v[M_LAYERS];
  r->model.hidden = v[M_HIDDEN];
  r->model.heads = v[M_HEADS];
  r->model.vocab = v[M_VOCAB];
  r->model.max_seq = v[M_SEQ];
  r->model.ffn_hidden = known[M_FFN] ? v[M_FFN] : 4 * v[M_HIDDEN];
  if (!known[M_FFN]) add_assumed(r, "ffn_hidden=4*hidden");
  r->model.kv_heads = known[M_KV] ? v[M_KV] : v[M_HEADS];
  if (!known[M_KV]) add_assumed(r, "kv_heads=heads");
  sc__model_style_defaults(&r->model);
  if (tied_col >= 0) {
    sc__csv_text(c, row, tied_col, buf, sizeof buf);
    if (buf[0] != '\0') {
      static const char *const bools[] = {"false", "true", NULL};
      int b = 0;
      if ((rc = sc__csv_choice(path, line, "tied_embeddings", buf, bools, "true or false", &b,
                               err)) != SC_OK)
        return rc;
      r->model.tied_embeddings = b;
    }
  }

  /* The job through the job keys */
  static const struct { int col; const char *key; } pcols[] = {
      {M_GPUS, "gpus"}, {M_TP, "tp"}, {M_PP, "pp"}, {M_DP, "dp"}, {M_CP, "cp"},
      {M_MB, "micro_batch"}, {M_GB, "global_batch"}, {M_SEQ, "seq_len"},
      {M_VS, "virtual_stages"}, {M_ZERO, "zero_stage"}};
  for (size_t i = 0; i < sizeof pcols / sizeof pcols[0]; i++) {
    if (!known[pcols[i].col]) continue;
    snprintf(buf, sizeof buf, "%lld", (long long)v[pcols[i].col]);
    if ((rc = job_field(c, row, pcols[i].col, r, pcols[i].key, buf, err)) != SC_OK) return rc;
  }
  if (!known[M_CP]) {
    add_assumed(r, "cp=1");
    if ((rc = job_field(c, row, M_CP, r, "cp", "1", err)) != SC_OK) return rc;
  }
  sc__csv_text(c, row, idx[M_SCHED], buf, sizeof buf);
  if (strcmp(buf, "interleaved-1f1b") == 0) snprintf(buf, sizeof buf, "interleaved");
  if (buf[0] == '\0') snprintf(buf, sizeof buf, known[M_VS] && v[M_VS] > 1 ? "interleaved"
                                                                            : "1f1b");
  if ((rc = job_field(c, row, M_SCHED, r, "schedule", buf, err)) != SC_OK) return rc;
  int interleaved = strcmp(buf, "interleaved") == 0;
  sc__csv_text(c, row, idx[M_RECOMP], buf, sizeof buf);
  int recompute_known = buf[0] != '\0';
  if (recompute_known && (rc = job_field(c, row, M_RECOMP, r, "recompute", buf, err)) != SC_OK)
    return rc;
  sc__csv_text(c, row, idx[M_DTYPE], buf, sizeof buf);
  if (buf[0] == '\0') add_assumed(r, "dtype=bf16");
  else if ((rc = job_field(c, row, M_DTYPE, r, "dtype", buf, err)) != SC_OK) return rc;
  static const struct { int col; const char *key; const char *dflt; } bcols[] = {
      {M_SP, "sequence_parallel", NULL}, {M_DOPT, "distributed_optimizer", "false"},
      {M_FA, "flash_attention", "true"}};
  for (size_t i = 0; i < sizeof bcols / sizeof bcols[0]; i++) {
    const char *val = sc__csv_text(c, row, idx[bcols[i].col], buf, sizeof buf);
    char a[64];
    if (val[0] == '\0') {
      /* sequence parallelism: on whenever tp > 1, as Megatron-Core and NeMo run it */
      val = bcols[i].dflt ? bcols[i].dflt : (known[M_TP] && v[M_TP] > 1 ? "true" : "false");
      snprintf(a, sizeof a, "%s=%s", bcols[i].key, val);
      if (!(bcols[i].col == M_DOPT && known[M_ZERO])) add_assumed(r, a);
    }
    if ((rc = job_field(c, row, bcols[i].col, r, bcols[i].key, val, err)) != SC_OK) return rc;
  }

  /* What a prediction cannot do without */
  static const int needed[] = {M_LAYERS, M_HIDDEN, M_HEADS, M_VOCAB, M_SEQ, M_TP, M_PP, M_MB};
  for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
    if (!known[needed[i]]) add_reason(r, mcols[needed[i]]);
  if (!known[M_DP] && !known[M_GPUS]) add_reason(r, "dp and gpus");
  if (!recompute_known) add_reason(r, "recompute");
  if (interleaved && !known[M_VS]) add_reason(r, "virtual_stages (the schedule is interleaved)");
  if (!mk) add_reason(r, "measured_gib");
  if (cnt < 0) add_reason(r, "counter");
  if (!known[M_GB] && known[M_PP] && v[M_PP] > 1)
    add_reason(r, "global_batch (micro-batches in flight with pp > 1)");
  if (r->reason[0] != '\0') {
    r->status = ROW_SKIPPED;
    return SC_OK;
  }
  if (!known[M_GB]) {
    /* with pp = 1 one micro-batch is in flight whatever the batch */
    int64_t cp = known[M_CP] ? v[M_CP] : 1;
    int64_t dp = known[M_DP] ? v[M_DP] : v[M_GPUS] / (v[M_TP] * v[M_PP] * cp);
    if (dp < 1) dp = 1;
    snprintf(buf, sizeof buf, "%lld", (long long)(v[M_MB] * dp));
    add_assumed(r, "global_batch=micro_batch*dp");
    if ((rc = job_field(c, row, M_GB, r, "global_batch", buf, err)) != SC_OK) return rc;
  }
  return SC_OK;
}

/* Predict row r: its stage's model states and activations (stepcast/workload.h) and the
 * overhead (stepcast/memory.h), summed as its counter counts. */
static void predict_row(mrow *r, const cache *k) {
  sc_error e;
  sc_error_clear(&e);
  if (r->status != ROW_OK) return;
  const sc_device *dev = &k->dev[r->dev].dev;
  const sc_topology *topo = r->topo >= 0 ? &k->topo[r->topo].topo : NULL;
  const sc_stack *stk = r->stack >= 0 ? &k->stack[r->stack] : NULL;
  int rc = sc_model_finish(&r->model, &e);
  if (rc == SC_OK) rc = sc_cli_job_finish(&r->job, &r->model, &e);
  sc_parallel p = r->job.par;
  if (rc == SC_OK && stk != NULL) {
    char a[96];
    snprintf(a, sizeof a, "stack=%s", stk->name);
    add_assumed(r, a);
    sc_stack_overlap_defaults(stk, r->job.overlap_given, &p);
    if (stk->vocab_divisible_by != 0 && p.vocab_divisible_by == 0)
      p.vocab_divisible_by = stk->vocab_divisible_by;
    sc_stack_state_layout(stk, &p); /* PyTorch AMP's model states */
  }
  if (rc == SC_OK) rc = sc_workload_validate(&r->model, &p, &e);
  sc_memory worst, mem;
  memset(&worst, 0, sizeof worst);
  for (uint32_t s = 0; rc == SC_OK && s < p.pp; s++) {
    rc = sc_memory_per_gpu(&r->model, &p, s, &mem, &e);
    if (rc != SC_OK) break;
    if (s == 0 || mem.total_bytes > worst.total_bytes) worst = mem;
  }
  sc_memory_overhead ov;
  if (rc == SC_OK) rc = sc_memory_overhead_of(&r->model, &p, dev, stk, topo, &ov, &e);
  if (rc != SC_OK) {
    snprintf(r->reason, sizeof r->reason, "%s", e.msg[0] ? e.msg : sc_strerror(rc));
    r->status = ROW_ERROR;
    return;
  }
  const sc_memory *cmp = r->stage_last ? &mem : &worst; /* mem: the last stage's */
  if (r->stage_last) add_assumed(r, "stage=last");
  double b = r->counter == CNT_ALLOCATED  ? sc_memory_allocated_bytes(cmp, &ov)
             : r->counter == CNT_RESERVED ? sc_memory_reserved_bytes(cmp, &ov)
                                          : sc_memory_device_bytes(cmp, &ov);
  r->predicted_gib = b / GiB;
  r->error_pct = 100.0 * (r->predicted_gib - r->measured_gib) / r->measured_gib;
  /* the fit test predict and the sweep apply: the worst stage's device figure */
  r->device_gib = sc_memory_device_bytes(&worst, &ov) / GiB;
  r->refused = sc_memory_refused(r->device_gib * GiB, r->capacity_bytes);
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: stepcast validate --memory MEMORY.csv\n\n"
          "Predicts the memory per GPU of every row of a CSV of published peak-memory\n"
          "measurements (docs/validation/memory.csv; columns in docs/validation/\n"
          "memory-other.md) and prints, per row, the counter it measured, the measured and\n"
          "predicted GiB, the signed error (predicted - measured) / measured, the predicted\n"
          "device figure against the capacity of the GPU the row ran on, and whether\n"
          "predict would accept the configuration; then the MAPE overall, over the rows whose\n"
          "configuration is complete, and per counter. Like is compared with like:\n"
          "  allocated  torch max_memory_allocated: weights + gradients + optimizer states +\n"
          "             activations + workspaces\n"
          "  reserved   torch max_memory_reserved: allocated + the allocator's reserve\n"
          "  device     nvidia-smi: reserved + CUDA context + communication buffers\n"
          "Rows without a field a prediction needs are skipped; rows whose configuration is\n"
          "impossible are errors. Neither counts in the MAPE.\n");
}

int sc_cli_validate_memory(const char *file) {
  int rc = 1;
  sc_error err;
  sc_csv *csv = NULL;
  sc_registry *reg = NULL;
  mrow *rows = NULL;
  cache k;
  int idx[M_COUNT];
  size_t nrows = 0;

  memset(&k, 0, sizeof k);
  sc_error_clear(&err);
  if (file == NULL) {
    usage(stdout);
    return 0;
  }
  if (sc_csv_load(file, &csv, &err) != SC_OK) return sc_cli_fail(&err);
  if (sc_csv_require(csv, mcols, M_COUNT, idx, &err) != SC_OK) goto fail;
  int tied_col = sc_csv_column(csv, "tied_embeddings"); /* optional */
  if (sc_cli_registry_open(&reg, &err) != SC_OK) goto fail;
  nrows = sc_csv_nrows(csv);
  rows = calloc(nrows ? nrows : 1, sizeof *rows);
  if (rows == NULL) {
    sc_error_set(&err, SC_ENOMEM, "out of memory");
    goto fail;
  }
  /* Read every row first: a malformed file fails before anything is printed. */
  for (size_t i = 0; i < nrows; i++) {
    if (read_row(csv, i, idx, tied_col, &rows[i], &k, reg, &err) != SC_OK) goto fail;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(rows[j].id, rows[i].id) == 0) {
        sc_error_set(&err, SC_EPARSE, "%s:%u: column 'id': '%s' repeats line %u", file,
                     rows[i].line, rows[i].id, rows[j].line);
        goto fail;
      }
    }
  }
  for (size_t i = 0; i < nrows; i++) predict_row(&rows[i], &k);

  printf("%-48s %-9s %9s %9s %8s %9s %9s  %-8s  %s\n", "id", "counter", "measured",
         "predicted", "error_%", "device", "capacity", "verdict", "assumed");
  double sum = 0, sum_c = 0, sum_k[3] = {0, 0, 0};
  size_t n = 0, n_c = 0, n_k[3] = {0, 0, 0}, n_skip = 0, n_err = 0, n_ref_c = 0;
  for (size_t i = 0; i < nrows; i++) {
    const mrow *r = &rows[i];
    if (r->status == ROW_SKIPPED) { n_skip++; continue; }
    if (r->status == ROW_ERROR) { n_err++; continue; }
    printf("%-48s %-9s %9.2f %9.2f %+8.1f %9.2f %9.2f  %-8s  %s\n", r->id, counters[r->counter],
           r->measured_gib, r->predicted_gib, r->error_pct, r->device_gib,
           r->capacity_bytes / GiB, r->refused ? "refused" : "accepted",
           r->assumed[0] ? r->assumed : "-");
    double a = fabs(r->error_pct);
    sum += a;
    n++;
    sum_k[r->counter] += a;
    n_k[r->counter]++;
    if (r->complete) {
      sum_c += a;
      n_c++;
      if (r->refused) n_ref_c++;
    }
  }
  if (n_skip || n_err) {
    printf("\nnot in the MAPE:\n");
    for (size_t i = 0; i < nrows; i++) {
      const mrow *r = &rows[i];
      if (r->status == ROW_OK) continue;
      printf("  %-48s %-7s line %u: %s\n", r->id,
             r->status == ROW_SKIPPED ? "skipped" : "error", r->line, r->reason);
    }
  }
  printf("\nMAPE: ");
  if (n) printf("%.1f%% over %zu rows", sum / (double)n, n);
  else printf("no rows predicted");
  printf(" (%zu skipped, %zu errors)\n", n_skip, n_err);
  if (n_c)
    printf("  config_complete rows   %.1f%% over %zu rows; %zu of them refused\n",
           sum_c / (double)n_c, n_c, n_ref_c);
  for (int c = 0; c < 3; c++)
    if (n_k[c])
      printf("  %-22s %.1f%% over %zu rows\n", counters[c], sum_k[c] / (double)n_k[c], n_k[c]);
  printf("  (the refusal margin: %.0f %% of the capacity)\n", 100.0 * SC_MEMORY_REFUSE_MARGIN);
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  free(rows);
  free(k.dev);
  free(k.topo);
  free(k.stack);
  sc_registry_free(reg);
  sc_csv_free(csv);
  return rc;
}
