/* stepcast validate: predict every row of a CSV of measured runs and report the errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "csvrow.h"
#include "common/checked.h"
#include "stepcast/estimate.h"
#include "job.h"
#include "stepcast/csv.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"

static void validate_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast validate RUNS.csv [--json] [--estimator NAME] [--algo auto]\n"
          "       stepcast validate --memory MEMORY.csv   (memory per GPU: --memory --help)\n\n"
          "Predicts every row of a CSV of measured training runs (docs/validation/README.md)\n"
          "and prints, per row, its id, the GPU type, the measured and predicted iteration\n"
          "time, the signed error (predicted - measured) / measured, and what was assumed for\n"
          "fields the row leaves empty; then the mean absolute percentage error (MAPE)\n"
          "overall and per GPU type. Rows whose tp or pp (or shape, batch or measurement) is\n"
          "unknown are listed as skipped; rows whose configuration is impossible (does not\n"
          "fit, does not divide) are listed as errors. Neither counts in the MAPE.\n\n"
          "options:\n"
          "  --json                   one JSON object instead of a table\n"
          "  --estimator NAME         operator estimator (analytical, hybrid, learned; default:\n"
          "                           hybrid for a row whose device has fitted residuals that\n"
          "                           apply under its stack, said as estimator=hybrid, else\n"
          "                           analytical)\n"
          "  --algo NAME              collective algorithm (auto, ring, tree, nvls)\n"
          "  --allow-oom              predict rows even when memory exceeds the device\n\n"
          "An optional column 'stack' names a software stack per row (stacks/, a name or a\n"
          "file); empty or absent: none (one kernel per operator, a host that keeps up).\n"
          "Optional columns overlap_grad_reduce, overlap_param_gather, overlap_tp_comm\n"
          "(true/false; default false), position (learned, rope, alibi, none), norm\n"
          "(layernorm, rmsnorm; both default from the activation: gelu, relu, squared_relu\n"
          "→ learned and layernorm, swiglu, geglu → rope and rmsnorm), tied_embeddings\n"
          "(default false),\n"
          "stage_layers (layers per pipeline stage, \"10,14\"; default an even split) or\n"
          "first_stage_layers and last_stage_layers (the others split evenly), and\n"
          "vocab_divisible_by (default the stack's, else 128), zero_stage (0-3; 3 = FSDP;\n"
          "default 0: the distributed_optimizer column alone) and shard_size (HSDP: ranks\n"
          "a shard spans; default the whole DP x CP group) and grad_reduce_dtype (fp32,\n"
          "bf16 or fp16: the gradients' precision; default fp32) state what a run did.\n"
          "A mixture of experts: optional columns num_experts, top_k, expert_ffn_hidden,\n"
          "shared_experts, moe_layer_freq, first_dense_layers, capacity_factor and\n"
          "moe_imbalance (the model keys of docs/formats.md; empty: a dense model) and ep,\n"
          "etp (expert parallel degrees; default 1). head_dim: the attention heads' width\n"
          "where heads x head_dim is not hidden (default hidden/heads).\n\n"
          "Empty fields default to: micro_batch=1, dtype=bf16, schedule=1f1b (interleaved\n"
          "when virtual_stages>1), virtual_stages=1, sequence_parallel=true when tp>1,\n"
          "flash_attention=true, cp=1, kv_heads=heads, ffn_hidden=4*hidden, activation=gelu;\n"
          "dp is derived from gpus. Empty recompute and distributed_optimizer take the first\n"
          "setting that fits in memory: none before selective before full, off before on.\n");
}

/* Columns, in the order of docs/validation/README.md. */
enum {
  C_ID, C_SOURCE, C_TOPOLOGY, C_GPUS, C_LAYERS, C_HIDDEN, C_FFN, C_HEADS, C_KV, C_VOCAB,
  C_SEQ, C_ACT, C_TP, C_PP, C_DP, C_CP, C_MB, C_GB, C_SCHED, C_VS, C_RECOMP, C_SP, C_DOPT,
  C_FA, C_DTYPE, C_MEASURED, C_NOTES, C_COUNT
};
static const char *const colnames[C_COUNT] = {
    "id", "source", "topology", "gpus", "layers", "hidden", "ffn_hidden", "heads", "kv_heads",
    "vocab", "seq_len", "activation", "tp", "pp", "dp", "cp", "micro_batch", "global_batch",
    "schedule", "virtual_stages", "recompute", "sequence_parallel", "distributed_optimizer",
    "flash_attention", "dtype", "measured_iteration_s", "notes"};

typedef enum { ROW_OK = 0, ROW_SKIPPED, ROW_ERROR } row_status;

typedef struct vrow {
  char id[SC_NAME_MAX];
  int topo;                 /* index into the topology cache */
  uint32_t line;
  sc_model model;
  sc_cli_job job;
  double measured_s, predicted_s, error_pct;
  row_status status;
  char assumed[256];        /* "micro_batch=1, dtype=bf16, ..." */
  int recompute_unknown;    /* empty cells that predict_row settles: the first setting */
  int dopt_unknown;         /* that fits in memory, in the order none/off first */
  int stack;                /* index into the stack cache; -1 = no stack column or empty */
  char reason[SC_ERROR_MSG_MAX];
} vrow;

/* Optional columns that state what a run did beyond the required ones (docs/validation/
 * README.md): the overlap switches (job keys), and the model's position embedding, norm and
 * tied embeddings; absent or empty, today's documented assumptions stand (no overlap; from
 * the activation: gelu → learned positions and LayerNorm, swiglu → rope and RMSNorm;
 * untied embeddings). */
enum {
  O_OVL_GRAD, O_OVL_PARAM, O_OVL_TP, O_STAGE_LAYERS, O_FIRST_LAYERS, O_LAST_LAYERS,
  O_VOCAB_DIV, O_POSITION, O_NORM, O_TIED, O_ZERO, O_SHARD, O_GRAD_DTYPE,
  /* a mixture of experts: the model's keys (docs/formats.md) and the job's degrees */
  O_NEXP, O_TOPK, O_EFFN, O_SHARED, O_MOEFREQ, O_FIRSTDENSE, O_CAPF, O_IMBAL, O_EP, O_ETP,
  O_HEADDIM,
  O_COUNT
};
static const char *const optnames[O_COUNT] = {"overlap_grad_reduce", "overlap_param_gather",
                                              "overlap_tp_comm", "stage_layers",
                                              "first_stage_layers", "last_stage_layers",
                                              "vocab_divisible_by", "position", "norm",
                                              "tied_embeddings", "zero_stage", "shard_size",
                                              "grad_reduce_dtype", "num_experts", "top_k",
                                              "expert_ffn_hidden", "shared_experts",
                                              "moe_layer_freq", "first_dense_layers",
                                              "capacity_factor", "moe_imbalance", "ep", "etp",
                                              "head_dim"};

/* The software stacks the rows name (the optional column 'stack'), each loaded once; and
 * the optional columns above. */
typedef struct vstacks {
  int col;                  /* the column's index, -1 when the file has none */
  size_t n;
  sc_stack *s;
  int opt[O_COUNT];         /* the optional columns' indices, -1 where absent */
} vstacks;

typedef struct vtopo {
  char name[SC_PATH_MAX];
  sc_topology topo;
  sc_device dev;
  int dev_loaded;
  char dev_err[SC_ERROR_MSG_MAX];
  /* Fitted residuals of the device, loaded at the first row that needs them (estimator
   * hybrid or learned); resid_err holds why they could not be. */
  sc_residuals *resid;
  sc_residuals *cresid; /* the topology's collective residuals, when fitted */
  int resid_tried;
  char resid_err[SC_ERROR_MSG_MAX];
} vtopo;

static void add_assumed(vrow *r, const char *what) {
  size_t n = strlen(r->assumed);
  snprintf(r->assumed + n, sizeof r->assumed - n, "%s%s", n ? ", " : "", what);
}

/* Pass a non-empty field to the job parser under the column's name; an error becomes
 * "file:line: column 'name': message". */
static int job_field(const sc_csv *c, size_t row, int col, vrow *r, const char *value,
                     sc_error *err) {
  sc_error e;
  sc_error_clear(&e);
  if (sc_cli_job_set(&r->job, colnames[col], value, &e) != SC_OK)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %s", sc_csv_path(c),
                        sc_csv_line(c, row), colnames[col], e.msg);
  return SC_OK;
}

/* Read one row into r. Malformed fields → error (the whole command fails). Unknown
 * fields needed for a prediction → r->status = ROW_SKIPPED with the reason. */
static int read_row(const sc_csv *c, size_t row, const int *idx, vrow *r, vtopo **topos,
                    size_t *ntopos, vstacks *stacks, sc_registry *reg, sc_error *err) {
  const char *path = sc_csv_path(c);
  uint32_t line = sc_csv_line(c, row);
  char buf[256];
  int64_t v[C_COUNT];
  int known[C_COUNT];
  static const int ints[] = {C_GPUS, C_LAYERS, C_HIDDEN, C_FFN, C_HEADS, C_KV, C_VOCAB,
                             C_SEQ, C_TP, C_PP, C_DP, C_CP, C_MB, C_GB, C_VS};
  static const int bools[] = {C_SP, C_DOPT, C_FA};
  int rc;

  memset(r, 0, sizeof *r);
  memset(known, 0, sizeof known);
  r->line = line;
  sc_cli_job_init(&r->job);
  char idbuf[4 * SC_NAME_MAX];
  sc__csv_text(c, row, idx[C_ID], idbuf, sizeof idbuf);
  if (idbuf[0] == '\0')
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'id': empty", path, line);
  if (strlen(idbuf) >= sizeof r->id)
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'id': longer than %zu characters", path,
                        line, sizeof r->id - 1);
  memcpy(r->id, idbuf, strlen(idbuf) + 1);

  char range[SC_ERROR_MSG_MAX] = ""; /* a size out of range: this row's error, not the file's */
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    int col = ints[k];
    rc = sc_csv_i64(c, row, (size_t)idx[col], &v[col], &known[col], err);
    if (rc != SC_OK) return rc;
    if (known[col] && v[col] < 0)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': '%lld' is not a non-negative "
                          "integer", path, line, colnames[col], (long long)v[col]);
    if (known[col] && v[col] == 0 && col != C_KV && col != C_FFN)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': must be > 0", path, line,
                          colnames[col]);
    /* the parallel sizes to the bounds of common/checked.h, the model's sizes to 32 bits
     * (sc_model_finish holds them to its own, smaller bounds) */
    uint32_t max = sc__size_limit(colnames[col]);
    if (known[col] && v[col] > (int64_t)(max ? max : UINT32_MAX)) {
      if (range[0] == '\0')
        snprintf(range, sizeof range, "column '%s': %lld is out of range (at most %u)",
                 colnames[col], (long long)v[col], max ? max : UINT32_MAX);
      known[col] = 0;
    }
  }
  rc = sc_csv_double(c, row, (size_t)idx[C_MEASURED], &r->measured_s, &known[C_MEASURED], err);
  if (rc != SC_OK) return rc;
  /* at most a million seconds (11.6 days) per iteration: past it a typo, not a run */
  if (known[C_MEASURED] && !(r->measured_s > 0 && r->measured_s <= 1e6))
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'measured_iteration_s': must be in "
                        "(0, 1e6] seconds", path, line);

  /* Topology (cached with its device). */
  sc__csv_text(c, row, idx[C_TOPOLOGY], buf, sizeof buf);
  if (buf[0] == '\0')
    return sc_error_set(err, SC_EPARSE, "%s:%u: column 'topology': empty", path, line);
  r->topo = -1;
  for (size_t k = 0; k < *ntopos; k++) {
    if (strcmp((*topos)[k].name, buf) == 0) r->topo = (int)k;
  }
  if (r->topo < 0) {
    vtopo *nt = realloc(*topos, (*ntopos + 1) * sizeof **topos);
    sc_error e;
    if (nt == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
    *topos = nt;
    vtopo *t = &nt[*ntopos];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", buf);
    sc_error_clear(&e);
    if (sc_topology_load(buf, &t->topo, &e) != SC_OK)
      return sc_error_set(err, SC_EPARSE, "%s:%u: column 'topology': %s", path, line, e.msg);
    if (sc_hardware_load(reg, t->topo.hardware, &t->dev, &e) == SC_OK) t->dev_loaded = 1;
    else snprintf(t->dev_err, sizeof t->dev_err, "%s", e.msg);
    r->topo = (int)(*ntopos)++;
  }

  /* The software stack, when the file has the column and the row names one. */
  r->stack = -1;
  if (stacks->col >= 0) {
    sc__csv_text(c, row, stacks->col, buf, sizeof buf);
    if (buf[0] != '\0') {
      for (size_t k = 0; k < stacks->n; k++)
        if (strcmp(stacks->s[k].name, buf) == 0 || strcmp(stacks->s[k].path, buf) == 0)
          r->stack = (int)k;
      if (r->stack < 0) {
        sc_stack *ns = realloc(stacks->s, (stacks->n + 1) * sizeof *ns);
        sc_error e;
        if (ns == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
        stacks->s = ns;
        sc_error_clear(&e);
        if (sc_stack_load(buf, &ns[stacks->n], &e) != SC_OK)
          return sc_error_set(err, SC_EPARSE, "%s:%u: column 'stack': %s", path, line, e.msg);
        r->stack = (int)stacks->n++;
      }
    }
  }

  /* Enumerations and booleans: parsed by the job keys (which accept '_' spellings). */
  sc__csv_text(c, row, idx[C_ACT], buf, sizeof buf);
  if (buf[0] == '\0') {
    add_assumed(r, "activation=gelu");
    r->model.activation = SC_ACT_GELU;
  } else if ((rc = sc__csv_activation(path, line, buf, &r->model.activation, err)) != SC_OK) {
    return rc;
  }
  sc__csv_text(c, row, idx[C_SCHED], buf, sizeof buf);
  if (strcmp(buf, "interleaved-1f1b") == 0) snprintf(buf, sizeof buf, "interleaved");
  if (buf[0] != '\0' && (rc = job_field(c, row, C_SCHED, r, buf, err)) != SC_OK) return rc;
  int sched_known = buf[0] != '\0';
  sc__csv_text(c, row, idx[C_RECOMP], buf, sizeof buf);
  if (buf[0] == '\0') r->recompute_unknown = 1;
  else if ((rc = job_field(c, row, C_RECOMP, r, buf, err)) != SC_OK) return rc;
  sc__csv_text(c, row, idx[C_DTYPE], buf, sizeof buf);
  if (buf[0] == '\0') add_assumed(r, "dtype=bf16");
  else if ((rc = job_field(c, row, C_DTYPE, r, buf, err)) != SC_OK) return rc;
  int sp_unknown = 0;
  for (size_t k = 0; k < sizeof bools / sizeof bools[0]; k++) {
    int col = bools[k];
    sc__csv_text(c, row, idx[col], buf, sizeof buf);
    if (buf[0] == '\0' && col == C_SP) {
      sp_unknown = 1; /* decided below, once tp is known */
    } else if (buf[0] == '\0' && col == C_DOPT) {
      r->dopt_unknown = 1;
      if ((rc = job_field(c, row, col, r, "false", err)) != SC_OK) return rc;
    } else if (buf[0] == '\0') {
      char a[64];
      snprintf(a, sizeof a, "%s=%s", colnames[col], col == C_FA ? "true" : "false");
      add_assumed(r, a);
      if ((rc = job_field(c, row, col, r, col == C_FA ? "true" : "false", err)) != SC_OK)
        return rc;
    } else if ((rc = job_field(c, row, col, r, buf, err)) != SC_OK) {
      return rc;
    }
  }

  /* Parallel degrees and batch through the job keys. */
  static const int pcols[] = {C_GPUS, C_TP, C_PP, C_DP, C_CP, C_MB, C_GB, C_SEQ, C_VS};
  for (size_t k = 0; k < sizeof pcols / sizeof pcols[0]; k++) {
    int col = pcols[k];
    if (!known[col]) continue;
    snprintf(buf, sizeof buf, "%lld", (long long)v[col]);
    if ((rc = job_field(c, row, col, r, buf, err)) != SC_OK) return rc;
  }
  if (sp_unknown) {
    /* Megatron-Core and NeMo turn sequence parallelism on whenever tp > 1: it costs no
     * extra communication (reduce-scatter + all-gather move what the all-reduce moved)
     * and saves activation memory. */
    const char *sp = known[C_TP] && v[C_TP] > 1 ? "true" : "false";
    char a[64];
    snprintf(a, sizeof a, "sequence_parallel=%s", sp);
    add_assumed(r, a);
    if ((rc = job_field(c, row, C_SP, r, sp, err)) != SC_OK) return rc;
  }
  if (!known[C_MB]) add_assumed(r, "micro_batch=1");
  if (!known[C_CP]) {
    add_assumed(r, "cp=1");
    if ((rc = job_field(c, row, C_CP, r, "1", err)) != SC_OK) return rc;
  }
  int vs_needed = sched_known && r->job.par.schedule == SC_SCHED_INTERLEAVED && !known[C_VS];
  if (!known[C_VS] && !vs_needed) add_assumed(r, "virtual_stages=1");
  if (!sched_known) {
    int inter = known[C_VS] && v[C_VS] > 1;
    add_assumed(r, inter ? "schedule=interleaved" : "schedule=1f1b");
    if ((rc = job_field(c, row, C_SCHED, r, inter ? "interleaved" : "1f1b", err)) != SC_OK)
      return rc;
  }

  /* The model, built from the columns. */
  snprintf(r->model.name, sizeof r->model.name, "%s", r->id);
  r->model.layers = v[C_LAYERS];
  r->model.hidden = v[C_HIDDEN];
  r->model.heads = v[C_HEADS];
  r->model.vocab = v[C_VOCAB];
  r->model.max_seq = v[C_SEQ];
  if (known[C_FFN]) r->model.ffn_hidden = v[C_FFN];
  else if (known[C_HIDDEN]) {
    add_assumed(r, "ffn_hidden=4*hidden");
    r->model.ffn_hidden = 4 * v[C_HIDDEN];
  }
  if (known[C_KV]) r->model.kv_heads = v[C_KV];
  else if (known[C_HEADS]) {
    add_assumed(r, "kv_heads=heads");
    r->model.kv_heads = v[C_HEADS];
  }
  sc__model_style_defaults(&r->model);
  for (int o = 0; o < O_COUNT; o++) { /* the optional columns the file has */
    static const char *const pos[] = {"learned", "rope", "alibi", "none", NULL};
    static const char *const norms[] = {"layernorm", "rmsnorm", NULL};
    static const char *const bools[] = {"false", "true", NULL};
    int k;
    if (stacks->opt[o] < 0) continue;
    sc__csv_text(c, row, stacks->opt[o], buf, sizeof buf);
    if (buf[0] == '\0') continue;
    if (o == O_POSITION) {
      if ((rc = sc__csv_choice(path, line, "position", buf, pos, "learned, rope, alibi or none",
                               &k, err)) != SC_OK)
        return rc;
      r->model.position = (sc_pos_embedding)k;
    } else if (o == O_NORM) {
      if ((rc = sc__csv_choice(path, line, "norm", buf, norms, "layernorm or rmsnorm", &k,
                               err)) != SC_OK)
        return rc;
      r->model.norm = (sc_norm_kind)k;
    } else if (o == O_TIED) {
      if ((rc = sc__csv_choice(path, line, "tied_embeddings", buf, bools, "true or false", &k,
                               err)) != SC_OK)
        return rc;
      r->model.tied_embeddings = k;
    } else if (o == O_HEADDIM) {
      /* the attention heads' width when heads x head_dim is not hidden (Qwen3: 32 x 128 over
       * a hidden of 2048); checked by sc_model_finish */
      int64_t x = 0;
      int known = 0;
      if ((rc = sc_csv_i64(c, row, (size_t)stacks->opt[o], &x, &known, err)) != SC_OK) return rc;
      if (x < 1 || x > 65536)
        return sc_error_set(err, SC_EPARSE, "%s:%u: column 'head_dim': %lld is not in [1, 65536]",
                            path, line, (long long)x);
      r->model.head_dim = x;
    } else if (o >= O_NEXP && o <= O_IMBAL) {
      /* a model key: checked with the others by sc_model_finish (a bad one refuses the row) */
      int known = 0;
      if (o == O_CAPF || o == O_IMBAL) {
        double x = 0.0;
        if ((rc = sc_csv_double(c, row, (size_t)stacks->opt[o], &x, &known, err)) != SC_OK)
          return rc;
        if (!(x >= 0.0))
          return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': must be >= 0", path, line,
                              optnames[o]);
        if (o == O_CAPF) r->model.capacity_factor = x;
        else r->model.moe_imbalance = x;
      } else {
        int64_t x = 0;
        if ((rc = sc_csv_i64(c, row, (size_t)stacks->opt[o], &x, &known, err)) != SC_OK)
          return rc;
        if (x < 0 || x > 100000000)
          return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %lld is not in [0, 1e8]",
                              path, line, optnames[o], (long long)x);
        int64_t *f[] = {&r->model.num_experts, &r->model.top_k, &r->model.expert_ffn_hidden,
                        &r->model.shared_experts, &r->model.moe_layer_freq,
                        &r->model.first_dense_layers};
        *f[o - O_NEXP] = x;
      }
    } else {
      sc_error e;
      sc_error_clear(&e);
      if (sc_cli_job_set(&r->job, optnames[o], buf, &e) != SC_OK)
        return sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': %s", path, line, optnames[o],
                            e.msg);
    }
  }

  /* What a prediction cannot do without. */
  static const int needed[] = {C_TP, C_PP, C_LAYERS, C_HIDDEN, C_HEADS, C_VOCAB, C_SEQ, C_GB,
                               C_MEASURED};
  for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++) {
    if (!known[needed[k]]) {
      size_t n = strlen(r->reason);
      snprintf(r->reason + n, sizeof r->reason - n, "%s%s", n ? ", " : "", colnames[needed[k]]);
    }
  }
  if (vs_needed) {
    size_t n = strlen(r->reason);
    snprintf(r->reason + n, sizeof r->reason - n,
             "%svirtual_stages (the schedule is interleaved)", n ? ", " : "");
  }
  if (!known[C_DP] && !known[C_GPUS]) {
    size_t n = strlen(r->reason);
    snprintf(r->reason + n, sizeof r->reason - n, "%sdp and gpus", n ? ", " : "");
  }
  if (r->reason[0]) {
    char tmp[SC_ERROR_MSG_MAX];
    snprintf(tmp, sizeof tmp, "%s", r->reason);
    snprintf(r->reason, sizeof r->reason, "unknown: %.400s", tmp);
    r->status = ROW_SKIPPED;
  }
  if (range[0] != '\0') {
    snprintf(r->reason, sizeof r->reason, "%s", range);
    r->status = ROW_ERROR;
  }
  return SC_OK;
}

static void predict_row(vrow *r, vtopo *t, const vstacks *stacks, const sc_registry *reg,
                        sc_predictor *pr, const sc_cli_job *opts) {
  sc_error e;
  sc_result res;

  sc_error_clear(&e);
  if (r->status != ROW_OK) return;
  r->job.opts = opts->opts;
  snprintf(r->job.algo, sizeof r->job.algo, "%s", opts->algo);
  r->job.opts.coll_algo = r->job.algo;
  if (!t->dev_loaded) {
    snprintf(r->reason, sizeof r->reason, "%s", t->dev_err);
    r->status = ROW_ERROR;
    return;
  }
  if (!opts->estimator_given) {
    /* the default: hybrid where the row's device has fitted residuals that apply under the
     * row's stack (as predict), else analytical */
    if (!t->resid_tried) {
      t->resid_tried = 1;
      int rc = sc_residuals_for_hardware(t->topo.hardware, t->dev.name, reg,
                                         SC_ESTIMATOR_HYBRID, &t->resid, &e);
      if (rc == SC_OK) rc = sc_residuals_for_topology(t->topo.path, t->topo.name, NULL, 0,
                                                      SC_ESTIMATOR_HYBRID, &t->cresid, &e);
      if (rc != SC_OK && rc != SC_ENOTFOUND) snprintf(t->resid_err, sizeof t->resid_err, "%s",
                                                      e.msg);
      if (rc != SC_OK) {
        sc_residuals_free(t->resid);
        t->resid = NULL;
      }
      sc_error_clear(&e);
    }
    if (t->resid_err[0] != '\0') {
      snprintf(r->reason, sizeof r->reason, "%s", t->resid_err);
      r->status = ROW_ERROR;
      return;
    }
    if (t->resid != NULL &&
        sc_cli_residuals_apply(t->resid, r->stack >= 0 ? stacks->s[r->stack].name : NULL)) {
      r->job.opts.estimator = SC_ESTIMATOR_HYBRID;
      add_assumed(r, "estimator=hybrid");
    }
  }
  if (r->job.opts.estimator != SC_ESTIMATOR_ANALYTICAL) {
    if (!t->resid_tried) {
      t->resid_tried = 1;
      if (sc_residuals_for_hardware(t->topo.hardware, t->dev.name, reg, r->job.opts.estimator,
                                    &t->resid, &e) != SC_OK ||
          sc_residuals_for_topology(t->topo.path, t->topo.name, NULL, 0, r->job.opts.estimator,
                                    &t->cresid, &e) != SC_OK) {
        snprintf(t->resid_err, sizeof t->resid_err, "%s", e.msg);
        sc_residuals_free(t->resid);
        t->resid = NULL;
      }
      sc_error_clear(&e);
    }
    if (t->resid == NULL) {
      snprintf(r->reason, sizeof r->reason, "%s", t->resid_err);
      r->status = ROW_ERROR;
      return;
    }
    r->job.opts.residuals = t->resid;
    r->job.opts.coll_residuals = t->cresid;
  }
  if (r->stack >= 0) { /* the row's stack (sc_predict prices its attention kernel) */
    const sc_stack *stk = &stacks->s[r->stack];
    r->job.opts.stack = stk;
    char a[96];
    snprintf(a, sizeof a, "stack=%s", stk->name);
    add_assumed(r, a);
  }
  /* Settings the source leaves empty that decide whether the run fits: the cheapest
   * combination that fits, tried in order (no distributed optimizer before one; no
   * recomputation before selective before full), as a practitioner would configure it. */
  static const struct { int dopt; sc_recompute rc; } tries[] = {
      {0, SC_RECOMPUTE_NONE}, {1, SC_RECOMPUTE_NONE}, {0, SC_RECOMPUTE_SELECTIVE},
      {1, SC_RECOMPUTE_SELECTIVE}, {0, SC_RECOMPUTE_FULL}, {1, SC_RECOMPUTE_FULL}};
  int st = sc_model_finish(&r->model, &e);
  if (st == SC_OK) st = sc_cli_job_finish(&r->job, &r->model, &e);
  if (st == SC_OK && r->stack >= 0) { /* the switches the row leaves to its stack */
    sc_parallel before = r->job.par;
    if (sc_stack_overlap_defaults(&stacks->s[r->stack], r->job.overlap_given, &r->job.par)) {
      char a[96];
      snprintf(a, sizeof a, "the stack's overlap of%s%s%s",
               r->job.par.overlap_grad_reduce != before.overlap_grad_reduce ? " grad_reduce" : "",
               r->job.par.overlap_param_gather != before.overlap_param_gather ? " param_gather"
                                                                              : "",
               r->job.par.overlap_tp_comm != before.overlap_tp_comm ? " tp_comm" : "");
      add_assumed(r, a);
    }
  }
  /* a stated ZeRO stage says what the optimizer states do: nothing to assume about them */
  if (r->job.par.zero_stage > 0) r->dopt_unknown = 0;
  if (st == SC_OK) {
    sc_parallel given = r->job.par;
    for (size_t k = 0; k < sizeof tries / sizeof tries[0]; k++) {
      if (!r->dopt_unknown && tries[k].dopt) continue;
      if (!r->recompute_unknown && tries[k].rc != SC_RECOMPUTE_NONE) continue;
      r->job.par = given;
      if (r->dopt_unknown) r->job.par.distributed_optimizer = tries[k].dopt;
      if (r->recompute_unknown) r->job.par.recompute = tries[k].rc;
      sc_error_clear(&e);
      st = sc_predict(pr, &r->model, &t->topo, &t->dev, &r->job.par, &r->job.opts, &res, NULL,
                      &e);
      if (st != SC_ENOFIT) break;
    }
    if (r->recompute_unknown) {
      char a[64];
      snprintf(a, sizeof a, "recompute=%s", sc_recompute_name(r->job.par.recompute));
      add_assumed(r, a);
    }
    if (r->dopt_unknown)
      add_assumed(r, r->job.par.distributed_optimizer ? "distributed_optimizer=true"
                                                      : "distributed_optimizer=false");
  }
  if (st != SC_OK) {
    snprintf(r->reason, sizeof r->reason, "%s", e.msg[0] ? e.msg : sc_strerror(e.code));
    r->status = ROW_ERROR;
    return;
  }
  r->predicted_s = res.iteration_s;
  r->error_pct = 100.0 * ((r->predicted_s - r->measured_s) / r->measured_s);
}

typedef struct group {
  char gpu[64];
  double sum_abs;
  size_t n;
} group;

int sc_cli_validate(int argc, char **argv) {
  const char *file = NULL;
  int json = 0, rc = 1, memory = 0, other = 0, help = 0;
  sc_cli_job opts;
  sc_error err;
  sc_csv *csv = NULL;
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  vrow *rows = NULL;
  vtopo *topos = NULL;
  size_t ntopos = 0, nrows = 0;
  int idx[C_COUNT];
  vstacks stacks = {-1, 0, NULL, {0}};
  group *groups = NULL;
  size_t ngroups = 0;

  sc_cli_job_init(&opts);
  sc_error_clear(&err);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { help = 1; continue; }
    if (strcmp(a, "--memory") == 0) { memory = 1; continue; }
    if (strcmp(a, "--json") == 0) { json = other = 1; continue; }
    if (strcmp(a, "--allow-oom") == 0) { opts.opts.allow_oom = other = 1; continue; }
    if (strncmp(a, "--estimator", 11) == 0 || strncmp(a, "--algo", 6) == 0) {
      const char *eq = strchr(a, '=');
      const char *name = strncmp(a, "--algo", 6) == 0 ? "algo" : "estimator";
      const char *val;
      if (strcmp(a + 2, name) != 0 && eq == NULL)
        return sc_cli_usage_error("validate", "unknown option '%s'", a);
      if (eq) val = eq + 1;
      else if (i + 1 < argc) val = argv[++i];
      else return sc_cli_usage_error("validate", "option '--%s' needs a value", name);
      if (sc_cli_job_set(&opts, name, val, &err) != SC_OK)
        return sc_cli_usage_error("validate", "%s", err.msg);
      other = 1;
      continue;
    }
    if (strncmp(a, "--", 2) == 0) return sc_cli_usage_error("validate", "unknown option '%s'", a);
    if (file != NULL) return sc_cli_usage_error("validate", "one CSV file only ('%s')", a);
    file = a;
  }
  if (help) {
    if (memory) return sc_cli_validate_memory(NULL);
    validate_usage(stdout);
    return 0;
  }
  if (memory) {
    /* memory is not timed: no estimator, algorithm or JSON output there */
    if (other)
      return sc_cli_usage_error("validate", "--memory takes a CSV file only (no --json, "
                                "--estimator, --algo or --allow-oom)");
    if (file == NULL)
      return sc_cli_usage_error("validate", "--memory: a CSV file of measured memory is "
                                "required");
    return sc_cli_validate_memory(file);
  }
  if (file == NULL)
    return sc_cli_usage_error("validate", "a CSV file of measured runs is required");

  if (sc_csv_load(file, &csv, &err) != SC_OK) return sc_cli_fail(&err);
  if (sc_csv_require(csv, colnames, C_COUNT, idx, &err) != SC_OK) goto fail;
  stacks.col = sc_csv_column(csv, "stack"); /* optional */
  for (int o = 0; o < O_COUNT; o++) stacks.opt[o] = sc_csv_column(csv, optnames[o]);
  if (sc_cli_registry_open(&reg, &err) != SC_OK) goto fail;
  if (sc_predictor_new(reg, &pr, &err) != SC_OK) goto fail;
  nrows = sc_csv_nrows(csv);
  rows = calloc(nrows ? nrows : 1, sizeof *rows);
  if (rows == NULL) {
    sc_error_set(&err, SC_ENOMEM, "out of memory");
    goto fail;
  }
  /* Read every row first: a malformed file fails before anything is printed. */
  for (size_t k = 0; k < nrows; k++) {
    if (read_row(csv, k, idx, &rows[k], &topos, &ntopos, &stacks, reg, &err) != SC_OK) goto fail;
    for (size_t m = 0; m < k; m++) {
      if (strcmp(rows[m].id, rows[k].id) == 0) {
        sc_error_set(&err, SC_EPARSE, "%s:%u: column 'id': '%s' repeats line %u", file,
                     rows[k].line, rows[k].id, rows[m].line);
        goto fail;
      }
    }
  }
  for (size_t k = 0; k < nrows; k++)
    predict_row(&rows[k], &topos[rows[k].topo], &stacks, reg, pr, &opts);

  /* Aggregate by GPU type. */
  double sum_abs = 0;
  size_t n_ok = 0, n_skip = 0, n_err = 0;
  for (size_t k = 0; k < nrows; k++) {
    const vrow *r = &rows[k];
    if (r->status == ROW_SKIPPED) { n_skip++; continue; }
    if (r->status == ROW_ERROR) { n_err++; continue; }
    const char *gpu = topos[r->topo].dev.name;
    size_t g;
    for (g = 0; g < ngroups; g++) {
      if (strcmp(groups[g].gpu, gpu) == 0) break;
    }
    if (g == ngroups) {
      group *ng = realloc(groups, (ngroups + 1) * sizeof *groups);
      if (ng == NULL) {
        sc_error_set(&err, SC_ENOMEM, "out of memory");
        goto fail;
      }
      groups = ng;
      memset(&groups[g], 0, sizeof groups[g]);
      snprintf(groups[g].gpu, sizeof groups[g].gpu, "%s", gpu);
      ngroups++;
    }
    groups[g].sum_abs += fabs(r->error_pct);
    groups[g].n++;
    sum_abs += fabs(r->error_pct);
    n_ok++;
  }

  if (json) {
    printf("{\n  \"schema_version\": %d,\n  \"file\": ", SC_REPORT_SCHEMA_VERSION);
    sc_json_string(stdout, file);
    printf(",\n  \"estimator\": \"%s\",\n  \"algo\": ",
           opts.estimator_given ? sc_estimator_name(opts.opts.estimator) : "default");
    sc_json_string(stdout, opts.algo);
    printf(",\n  \"rows\": [");
    for (size_t k = 0; k < nrows; k++) {
      const vrow *r = &rows[k];
      const vtopo *t = &topos[r->topo];
      static const char *const st[] = {"ok", "skipped", "error"};
      printf("%s\n    {\"id\": ", k ? "," : "");
      sc_json_string(stdout, r->id);
      printf(", \"line\": %u, \"status\": \"%s\", \"topology\": ", r->line, st[r->status]);
      sc_json_string(stdout, t->topo.name);
      printf(", \"gpu\": ");
      if (t->dev_loaded) sc_json_string(stdout, t->dev.name);
      else printf("null");
      printf(", \"measured_s\": ");
      if (r->measured_s > 0) printf("%.6g", r->measured_s);
      else printf("null");
      if (r->status == ROW_OK)
        printf(", \"predicted_s\": %.6g, \"error_pct\": %.4f", r->predicted_s, r->error_pct);
      else printf(", \"predicted_s\": null, \"error_pct\": null");
      printf(", \"assumed\": [");
      /* The assumed list as an array of "key=value" strings. */
      const char *s = r->assumed;
      int first = 1;
      while (*s) {
        const char *e = strstr(s, ", ");
        size_t n = e ? (size_t)(e - s) : strlen(s);
        char item[64];
        snprintf(item, sizeof item, "%.*s", (int)n, s);
        printf("%s", first ? "" : ", ");
        sc_json_string(stdout, item);
        first = 0;
        s += n;
        if (e) s += 2;
      }
      printf("], \"reason\": ");
      if (r->status == ROW_OK) printf("null");
      else sc_json_string(stdout, r->reason);
      printf("}");
    }
    printf("\n  ],\n  \"predicted\": %zu, \"skipped\": %zu, \"errors\": %zu,\n", n_ok, n_skip,
           n_err);
    printf("  \"mape_pct\": ");
    if (n_ok) printf("%.4f", sum_abs / (double)n_ok);
    else printf("null");
    printf(",\n  \"by_gpu\": [");
    for (size_t g = 0; g < ngroups; g++) {
      printf("%s\n    {\"gpu\": ", g ? "," : "");
      sc_json_string(stdout, groups[g].gpu);
      printf(", \"rows\": %zu, \"mape_pct\": %.4f}", groups[g].n,
             groups[g].sum_abs / (double)groups[g].n);
    }
    printf("\n  ]\n}\n");
  } else {
    printf("%-22s %-18s %12s %12s %9s  %s\n", "id", "gpu", "measured_s", "predicted_s",
           "error_%", "assumed");
    for (size_t k = 0; k < nrows; k++) {
      const vrow *r = &rows[k];
      if (r->status != ROW_OK) continue;
      printf("%-22s %-18s %12.4g %12.4g %+9.1f  %s\n", r->id, topos[r->topo].dev.name,
             r->measured_s, r->predicted_s, r->error_pct, r->assumed[0] ? r->assumed : "-");
    }
    if (n_skip || n_err) {
      printf("\nnot in the MAPE:\n");
      for (size_t k = 0; k < nrows; k++) {
        const vrow *r = &rows[k];
        if (r->status == ROW_OK) continue;
        printf("  %-22s %-7s line %u: %s\n", r->id,
               r->status == ROW_SKIPPED ? "skipped" : "error", r->line, r->reason);
      }
    }
    if (opts.estimator_given)
      printf("\nMAPE (%s estimator, algo %s): ", sc_estimator_name(opts.opts.estimator),
             opts.algo);
    else
      printf("\nMAPE (default estimator: hybrid where the device has fitted residuals, else "
             "analytical; algo %s): ", opts.algo);
    if (n_ok) printf("%.1f%% over %zu rows", sum_abs / (double)n_ok, n_ok);
    else printf("no rows predicted");
    printf(" (%zu skipped, %zu errors)\n", n_skip, n_err);
    for (size_t g = 0; g < ngroups; g++)
      printf("  %-18s %.1f%% over %zu rows\n", groups[g].gpu,
             groups[g].sum_abs / (double)groups[g].n, groups[g].n);
  }
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  free(groups);
  free(rows);
  for (size_t i = 0; i < ntopos; i++) {
    sc_residuals_free(topos[i].resid);
    sc_residuals_free(topos[i].cresid);
  }
  free(topos);
  free(stacks.s);
  sc_predictor_free(pr);
  sc_registry_free(reg);
  sc_csv_free(csv);
  return rc;
}
