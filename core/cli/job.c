/* Training job options shared by predict and validate: one key table drives the flags
 * (--micro-batch 2) and the TOML job files (micro_batch = 2). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/checked.h"
#include "job.h"

typedef enum { K_STR, K_U32, K_BOOL, K_DOUBLE, K_ENUM } key_type;

typedef struct job_key {
  const char *name;        /* with '-' */
  key_type type;
  const char *const *choices; /* K_ENUM */
  const char *help;
} job_key;

static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe",
                                           NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const dtype_names[] = {"fp32", "tf32", "bf16", "fp16", "fp8", "int8", NULL};
static const char *const grad_dtype_names[] = {"fp32", "bf16", "fp16", NULL};
static const sc_dtype grad_dtypes[] = {SC_DTYPE_FP32, SC_DTYPE_BF16, SC_DTYPE_FP16};
static const char *const estimator_names[] = {"analytical", "hybrid", "learned", NULL};

static const job_key keys[] = {
    {"model", K_STR, NULL, "model name or file"},
    {"topology", K_STR, NULL, "topology name or file"},
    {"hardware", K_STR, NULL, "hardware name or file (default: the topology's)"},
    {"stack", K_STR, NULL, "software stack name or file (stacks/; default: none)"},
    {"residuals", K_STR, NULL, "residual models folder for --estimator hybrid|learned "
                               "(default: hardware/<device>/residuals)"},
    {"gpus", K_U32, NULL, "GPUs in the job"},
    {"tp", K_U32, NULL, "tensor parallel"},
    {"pp", K_U32, NULL, "pipeline parallel"},
    {"dp", K_U32, NULL, "data parallel"},
    {"cp", K_U32, NULL, "context parallel"},
    {"ep", K_U32, NULL, "expert parallel (mixture-of-experts layers; ep*etp divides "
                        "tp*cp*dp; default 1)"},
    {"etp", K_U32, NULL, "expert tensor parallel (mixture-of-experts layers; default 1)"},
    {"micro-batch", K_U32, NULL, "sequences per micro-batch"},
    {"global-batch", K_U32, NULL, "sequences per iteration"},
    {"seq-len", K_U32, NULL, "tokens per sequence"},
    {"schedule", K_ENUM, sched_names, "pipeline schedule"},
    {"virtual-stages", K_U32, NULL, "model chunks per pipeline rank"},
    {"recompute", K_ENUM, recompute_names, "activation recomputation"},
    {"dtype", K_ENUM, dtype_names, "compute data type"},
    {"grad-reduce-dtype", K_ENUM, grad_dtype_names, "gradients accumulated and reduced in "
                                                    "(mixed precision; default fp32: "
                                                    "Megatron-LM's, 4 B a parameter; bf16 or "
                                                    "fp16: 2 B, Megatron-Core's "
                                                    "grad_reduce_in_fp32 = False)"},
    {"sequence-parallel", K_BOOL, NULL, "Megatron sequence parallelism"},
    {"distributed-optimizer", K_BOOL, NULL, "shard optimizer state over data parallel"},
    {"zero-stage", K_U32, NULL, "sharded data parallelism: ZeRO stage 0-3 (1 = the "
                                "distributed optimizer; 2 also the gradients; 3 = FSDP, also "
                                "the parameters; default 0)"},
    {"shard-size", K_U32, NULL, "ranks of the DP x CP group a shard spans (HSDP: replicated "
                                "across the rest; default all of them)"},
    {"flash-attention", K_BOOL, NULL, "fused flash attention (default on)"},
    {"overlap-grad-reduce", K_BOOL, NULL, "overlap DP gradient reduction with backward"},
    {"overlap-param-gather", K_BOOL, NULL, "overlap parameter all-gather with forward"},
    {"overlap-tp-comm", K_BOOL, NULL, "overlap TP communication with GEMMs"},
    {"stage-layers", K_STR, NULL, "layers of each pipeline stage, comma-separated, first "
                                  "stage first (pp entries summing to the layers; default: "
                                  "an even split)"},
    {"first-stage-layers", K_U32, NULL, "layers of the first pipeline stage, the others "
                                        "split evenly (Megatron-Core's "
                                        "--decoder-first-pipeline-num-layers)"},
    {"last-stage-layers", K_U32, NULL, "layers of the last pipeline stage, the others split "
                                       "evenly (Megatron-Core's "
                                       "--decoder-last-pipeline-num-layers)"},
    {"vocab-divisible-by", K_U32, NULL, "the vocabulary is padded to a multiple of this times "
                                        "tp (Megatron-LM's make_vocab_size_divisible_by; "
                                        "default the stack's, else 128)"},
    {"estimator", K_ENUM, estimator_names, "operator estimator"},
    {"algo", K_STR, NULL, "collective algorithm: auto, ring, tree, nvls"},
    {"tokens", K_DOUBLE, NULL, "token budget for time to train"},
    {"price-per-gpu-hour", K_DOUBLE, NULL, "price of a GPU-hour, for the cost of --tokens"},
    {"power-fraction", K_DOUBLE, NULL, "share of the board's power the GPUs draw on average, "
                                       "in (0, 1], for the energy of --tokens (default 1: the "
                                       "board's power limit, as Meta's model cards count)"},
    {"pue", K_DOUBLE, NULL, "data centre power usage effectiveness, >= 1, for the energy of "
                            "--tokens (default 1: the GPUs alone)"},
};
#define NKEYS (sizeof keys / sizeof keys[0])

void sc_cli_job_init(sc_cli_job *j) {
  memset(j, 0, sizeof *j);
  sc_parallel_defaults(&j->par);
  sc_predict_opts_defaults(&j->opts);
  snprintf(j->algo, sizeof j->algo, "auto");
  j->opts.coll_algo = j->algo;
  j->par.global_batch = 0; /* required */
}

/* "micro_batch" → "micro-batch" into buf. */
static void canon(const char *name, char *buf, size_t cap) {
  size_t i = 0;
  for (; name[i] != '\0' && i + 1 < cap; i++) buf[i] = (name[i] == '_') ? '-' : name[i];
  buf[i] = '\0';
}

static const job_key *find_key(const char *name, int *negated) {
  char c[64];
  canon(name, c, sizeof c);
  *negated = 0;
  for (size_t i = 0; i < NKEYS; i++) {
    if (strcmp(c, keys[i].name) == 0) return &keys[i];
  }
  if (strncmp(c, "no-", 3) == 0) {
    for (size_t i = 0; i < NKEYS; i++) {
      if (keys[i].type == K_BOOL && strcmp(c + 3, keys[i].name) == 0) {
        *negated = 1;
        return &keys[i];
      }
    }
  }
  return NULL;
}

int sc_cli_job_known(const char *name) {
  int neg;
  return find_key(name, &neg) != NULL;
}

int sc_cli_job_is_bool(const char *name) {
  int neg;
  const job_key *k = find_key(name, &neg);
  return k != NULL && k->type == K_BOOL;
}

/* A positive decimal integer into *out: 0, -1 when it is not one, -2 when it is one above
 * max (or beyond any integer type). */
static int parse_u32(const char *v, uint32_t max, uint32_t *out) {
  char *end = NULL;
  unsigned long long x;
  if (v == NULL || *v < '0' || *v > '9') return -1;
  errno = 0;
  x = strtoull(v, &end, 10);
  if (*end != '\0' || (errno != 0 && errno != ERANGE) || (errno == 0 && x == 0)) return -1;
  if (errno == ERANGE || x > max) return -2;
  *out = (uint32_t)x;
  return 0;
}

static int enum_index(const char *const *choices, const char *v) {
  for (int i = 0; choices[i] != NULL; i++) {
    if (strcmp(choices[i], v) == 0) return i;
  }
  return -1;
}

static void choices_str(const char *const *choices, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; choices[i] != NULL && n < cap; i++) {
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", choices[i]);
  }
}

int sc_cli_job_set(sc_cli_job *j, const char *name, const char *value, sc_error *err) {
  int neg;
  const job_key *k = find_key(name, &neg);
  uint32_t u = 0;
  if (k == NULL) return SC_ENOTFOUND;
  if (k->type == K_BOOL) {
    int b;
    if (value == NULL) b = 1;
    else if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0) b = 1;
    else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0) b = 0;
    else return sc_error_set(err, SC_EINVAL, "%s: '%s' is not true or false", k->name, value);
    if (neg) b = !b;
    if (strcmp(k->name, "sequence-parallel") == 0) j->par.sequence_parallel = b;
    else if (strcmp(k->name, "distributed-optimizer") == 0) j->par.distributed_optimizer = b;
    else if (strcmp(k->name, "flash-attention") == 0) j->par.flash_attention = b;
    else if (strcmp(k->name, "overlap-grad-reduce") == 0) {
      j->par.overlap_grad_reduce = b;
      j->overlap_given[0] = 1;
    } else if (strcmp(k->name, "overlap-param-gather") == 0) {
      j->par.overlap_param_gather = b;
      j->overlap_given[1] = 1;
    } else if (strcmp(k->name, "overlap-tp-comm") == 0) {
      j->par.overlap_tp_comm = b;
      j->overlap_given[2] = 1;
    }
    return SC_OK;
  }
  if (value == NULL) return sc_error_set(err, SC_EINVAL, "%s: needs a value", k->name);
  switch (k->type) {
  case K_STR: {
    char *dst = NULL;
    if (strcmp(k->name, "stage-layers") == 0) { /* "5,6,6,5" */
      uint32_t n = 0;
      const char *q = value;
      memset(j->par.stage_layers, 0, sizeof j->par.stage_layers);
      for (;;) {
        char item[16];
        size_t len = strcspn(q, ",");
        uint32_t v;
        if (len == 0 || len >= sizeof item ||
            n == sizeof j->par.stage_layers / sizeof j->par.stage_layers[0])
          return sc_error_set(err, SC_EINVAL, "stage-layers: '%s' is not at most 256 positive "
                              "integers joined by ','", value);
        memcpy(item, q, len);
        item[len] = '\0';
        if (parse_u32(item, SC_MAX_STAGE_LAYERS, &v) != 0)
          return sc_error_set(err, SC_EINVAL, "stage-layers: '%s' in '%s' is not a whole "
                              "number in [1, %u]", item, value, SC_MAX_STAGE_LAYERS);
        j->par.stage_layers[n++] = v;
        if (q[len] == '\0') break;
        q += len + 1;
      }
      j->nstage_layers = n;
      return SC_OK;
    }
    size_t cap = 0;
    int which = -1;
    if (strcmp(k->name, "model") == 0) { dst = j->model; cap = sizeof j->model; which = 0; }
    else if (strcmp(k->name, "topology") == 0) { dst = j->topology; cap = sizeof j->topology; which = 1; }
    else if (strcmp(k->name, "hardware") == 0) { dst = j->hardware; cap = sizeof j->hardware; which = 2; }
    else if (strcmp(k->name, "stack") == 0) { dst = j->stack; cap = sizeof j->stack; which = 3; }
    else if (strcmp(k->name, "residuals") == 0) { dst = j->residuals; cap = sizeof j->residuals; which = 4; }
    if (which >= 0) j->where[which][0] = '\0'; /* a flag's, until the job file says where */
    else if (dst == NULL) { dst = j->algo; cap = sizeof j->algo; }
    if (*value == '\0' || strlen(value) >= cap)
      return sc_error_set(err, SC_EINVAL, "%s: '%s' is empty or too long", k->name, value);
    memcpy(dst, value, strlen(value) + 1);
    if (dst == j->algo && strcmp(value, "auto") != 0 && strcmp(value, "ring") != 0 &&
        strcmp(value, "tree") != 0 && strcmp(value, "nvls") != 0)
      return sc_error_set(err, SC_EINVAL, "algo: '%s' is not auto, ring, tree or nvls", value);
    return SC_OK;
  }
  case K_U32: {
    /* every size is bounded where it is parsed (common/checked.h), so that no later
     * combination of them (2*cp, the product of the degrees, ...) can wrap */
    uint32_t max = sc__size_limit(k->name);
    if (strcmp(k->name, "zero-stage") == 0) { /* 0 is a stage */
      if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0 || strcmp(value, "2") == 0 ||
          strcmp(value, "3") == 0) {
        j->par.zero_stage = (uint32_t)(value[0] - '0');
        return SC_OK;
      }
      return sc_error_set(err, SC_EINVAL, "zero-stage: '%s' is not 0, 1, 2 or 3", value);
    }
    int st = parse_u32(value, max ? max : UINT32_MAX, &u);
    if (st == -2)
      return sc_error_set(err, SC_ERANGE, "%s: %s is out of range (at most %u)", k->name, value,
                          max ? max : UINT32_MAX);
    if (st != 0)
      return sc_error_set(err, SC_EINVAL, "%s: '%s' is not a positive integer", k->name, value);
    if (strcmp(k->name, "gpus") == 0) j->gpus = u;
    else if (strcmp(k->name, "tp") == 0) { j->par.tp = u; j->given[0] = 1; }
    else if (strcmp(k->name, "pp") == 0) { j->par.pp = u; j->given[1] = 1; }
    else if (strcmp(k->name, "dp") == 0) { j->par.dp = u; j->given[2] = 1; }
    else if (strcmp(k->name, "cp") == 0) { j->par.cp = u; j->given[3] = 1; }
    else if (strcmp(k->name, "micro-batch") == 0) j->par.micro_batch = u;
    else if (strcmp(k->name, "global-batch") == 0) j->par.global_batch = u;
    else if (strcmp(k->name, "seq-len") == 0) { j->par.seq_len = u; j->seq_given = 1; }
    else if (strcmp(k->name, "virtual-stages") == 0) j->par.virtual_stages = u;
    else if (strcmp(k->name, "vocab-divisible-by") == 0) j->par.vocab_divisible_by = u;
    else if (strcmp(k->name, "shard-size") == 0) j->par.shard_size = u;
    else if (strcmp(k->name, "ep") == 0) j->par.ep = u;
    else if (strcmp(k->name, "etp") == 0) j->par.etp = u;
    else if (strcmp(k->name, "first-stage-layers") == 0) j->first_layers = u;
    else if (strcmp(k->name, "last-stage-layers") == 0) j->last_layers = u;
    return SC_OK;
  }
  case K_DOUBLE: {
    char *end = NULL;
    double d;
    errno = 0;
    d = strtod(value, &end);
    if (errno != 0 || *end != '\0' || end == value || !isfinite(d) || d < 0)
      return sc_error_set(err, SC_EINVAL, "%s: '%s' is not a non-negative number", k->name,
                          value);
    if (strcmp(k->name, "price-per-gpu-hour") == 0) j->opts.price_per_gpu_hour = d;
    else if (strcmp(k->name, "power-fraction") == 0) {
      if (!(d > 0.0 && d <= 1.0))
        return sc_error_set(err, SC_EINVAL, "power-fraction: '%s' is not in (0, 1]", value);
      j->opts.power_fraction = d;
    } else if (strcmp(k->name, "pue") == 0) {
      if (d < 1.0)
        return sc_error_set(err, SC_EINVAL, "pue: '%s' is not a power usage effectiveness "
                            "(>= 1)", value);
      j->opts.pue = d;
    } else
      j->opts.token_budget = d;
    return SC_OK;
  }
  case K_ENUM: {
    int i = enum_index(k->choices, value);
    char list[128];
    if (i < 0) {
      choices_str(k->choices, list, sizeof list);
      return sc_error_set(err, SC_EINVAL, "%s: '%s' is not one of %s", k->name, value, list);
    }
    if (strcmp(k->name, "schedule") == 0) j->par.schedule = (sc_schedule_kind)i;
    else if (strcmp(k->name, "recompute") == 0) j->par.recompute = (sc_recompute)i;
    else if (strcmp(k->name, "dtype") == 0) j->par.dtype = (sc_dtype)i;
    else if (strcmp(k->name, "grad-reduce-dtype") == 0) j->par.grad_reduce_dtype = grad_dtypes[i];
    else {
      j->opts.estimator = (sc_estimator)i;
      j->estimator_given = 1;
    }
    return SC_OK;
  }
  default:
    break;
  }
  return SC_ENOTFOUND;
}

/* One key of a job file's [job] table (sc_spec_read_table). */
typedef struct job_load {
  sc_cli_job *j;
  const char *path;
} job_load;

static int job_key_of_file(void *ud, const sc_spec_scalar *v, sc_error *err) {
  job_load *jl = ud;
  const char *path = jl->path;
  int neg, rc;
  const job_key *k = find_key(v->key, &neg);
  if (k == NULL || neg || strchr(v->key, '-') != NULL)
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'job.%s': unknown key", path, v->key_line,
                        v->key_col, v->key);
  int want_str = (k->type == K_STR || k->type == K_ENUM);
  if (v->text == NULL || want_str != (v->kind == SC_SPEC_STRING) ||
      (k->type == K_BOOL) != (v->kind == SC_SPEC_BOOL) ||
      (k->type == K_U32 && v->kind != SC_SPEC_INTEGER))
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'job.%s': expected %s, found %s", path,
                        v->line, v->col, v->key,
                        k->type == K_BOOL ? "a boolean" : want_str ? "a string" :
                        k->type == K_U32 ? "an integer" : "a number",
                        v->type_name);
  rc = sc_cli_job_set(jl->j, v->key, v->text, err);
  if (rc != SC_OK) {
    char msg[SC_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'job.%s': %s", path, v->line, v->col,
                        v->key, msg);
  }
  static const char *const named[5] = {"model", "topology", "hardware", "stack", "residuals"};
  for (int w = 0; w < 5; w++)
    if (strcmp(v->key, named[w]) == 0)
      snprintf(jl->j->where[w], sizeof jl->j->where[w], "%s:%u:%u: key 'job.%s'", path, v->line,
               v->col, v->key);
  return SC_OK;
}

int sc_cli_job_load(sc_cli_job *j, const char *path, sc_error *err) {
  job_load jl = {j, path};
  return sc_spec_read_table(path, "job", job_key_of_file, &jl, err);
}

int sc_cli_job_finish(sc_cli_job *j, const sc_model *m, sc_error *err) {
  uint32_t *deg[4] = {&j->par.tp, &j->par.pp, &j->par.dp, &j->par.cp};
  static const char *const names[4] = {"tp", "pp", "dp", "cp"};
  uint64_t prod = 1;
  int missing = -1, nmissing = 0;
  for (int i = 0; i < 4; i++) {
    if (!j->given[i]) {
      nmissing++;
      if (missing < 0 || i == 2) missing = i; /* prefer deriving dp */
    }
  }
  if (j->gpus != 0 && nmissing > 0) {
    for (int i = 0; i < 4; i++) {
      if (i != missing && __builtin_mul_overflow(prod, (uint64_t)*deg[i], &prod))
        prod = UINT64_MAX; /* more than any gpus: not divisible, said below */
    }
    if (prod > j->gpus || j->gpus % prod != 0)
      return sc_error_set(err, SC_ECONFIG, "gpus: %u is not divisible by the product of the "
                          "other degrees (%llu), so %s cannot be derived", j->gpus,
                          (unsigned long long)prod, names[missing]);
    *deg[missing] = (uint32_t)(j->gpus / prod);
  }
  prod = 1;
  for (int i = 0; i < 4; i++) {
    if (__builtin_mul_overflow(prod, (uint64_t)*deg[i], &prod) || prod > SC_MAX_GPUS)
      return sc_error_set(err, SC_ECONFIG, "gpus: tp*pp*dp*cp (%u x %u x %u x %u) is more "
                          "than %u GPUs", j->par.tp, j->par.pp, j->par.dp, j->par.cp,
                          SC_MAX_GPUS);
  }
  if (j->gpus != 0 && prod != j->gpus)
    return sc_error_set(err, SC_ECONFIG, "gpus: %u but tp*pp*dp*cp = %llu", j->gpus,
                        (unsigned long long)prod);
  j->gpus = (uint32_t)prod;
  if ((j->first_layers || j->last_layers) && m != NULL) { /* Megatron-Core's split */
    uint32_t pp = j->par.pp, ends = (j->first_layers != 0) + (j->last_layers != 0), mid;
    int64_t rest = m->layers - (int64_t)j->first_layers - (int64_t)j->last_layers;
    if (j->nstage_layers != 0)
      return sc_error_set(err, SC_ECONFIG, "stage-layers: give the split or the first and last "
                          "stages' layers, not both");
    if (pp < ends + 1)
      return sc_error_set(err, SC_ECONFIG, "first-stage-layers, last-stage-layers: pp %u "
                          "leaves no stage for the other layers", pp);
    mid = pp - ends;
    if (rest < (int64_t)mid || rest % mid != 0)
      return sc_error_set(err, SC_ECONFIG, "first-stage-layers, last-stage-layers: the other "
                          "%lld layers of model '%s' do not split evenly over its other %u "
                          "stages", (long long)rest, m->name, mid);
    for (uint32_t i = 0; i < pp; i++) j->par.stage_layers[i] = (uint32_t)(rest / mid);
    if (j->first_layers) j->par.stage_layers[0] = j->first_layers;
    if (j->last_layers) j->par.stage_layers[pp - 1] = j->last_layers;
    j->nstage_layers = pp;
  }
  if (j->nstage_layers != 0 && j->nstage_layers != j->par.pp)
    return sc_error_set(err, SC_ECONFIG, "stage-layers: %u entr%s for pp %u (one per pipeline "
                        "stage)", j->nstage_layers, j->nstage_layers == 1 ? "y" : "ies",
                        j->par.pp);
  if (!j->seq_given && m != NULL) j->par.seq_len = (uint32_t)m->max_seq;
  /* a learned position table has max_seq rows: a longer sequence has no positions to add */
  if (m != NULL && m->position == SC_POS_LEARNED && (int64_t)j->par.seq_len > m->max_seq)
    return sc_error_set(err, SC_ECONFIG, "seq-len: %u is more than the max_seq of model '%s' "
                        "(%lld): "
                        "its learned position embeddings have no rows past position %lld",
                        j->par.seq_len, m->name, (long long)m->max_seq, (long long)m->max_seq);
  if (j->par.global_batch == 0)
    return sc_error_set(err, SC_ECONFIG, "global-batch: required (sequences per iteration)");
  if (j->par.virtual_stages > 1 && j->par.schedule != SC_SCHED_INTERLEAVED)
    return sc_error_set(err, SC_ECONFIG,
                        "virtual-stages: %u needs --schedule interleaved", j->par.virtual_stages);
  return SC_OK;
}

void sc_cli_job_help(FILE *out) {
  for (size_t i = 0; i < NKEYS; i++) {
    char list[128] = "";
    if (keys[i].type == K_ENUM) choices_str(keys[i].choices, list, sizeof list);
    fprintf(out, "  --%-22s %s%s%s%s\n", keys[i].name, keys[i].help,
            keys[i].type == K_ENUM ? " (" : "", list, keys[i].type == K_ENUM ? ")" : "");
  }
}

const char *sc_cli_schedule_name(sc_schedule_kind k) {
  return ((unsigned)k <= (unsigned)SC_SCHED_DUALPIPE) ? sched_names[k] : "?";
}

int sc_cli_job_blame(const sc_cli_job *j, int which, sc_error *err) {
  if (err == NULL) return SC_EINVAL;
  if (j == NULL || which < 0 || which > SC_CLI_JOB_RESIDUALS || j->where[which][0] == '\0')
    return err->code;
  char msg[SC_ERROR_MSG_MAX];
  snprintf(msg, sizeof msg, "%s", err->msg);
  return sc_error_set(err, err->code, "%s: %s", j->where[which], msg);
}

int sc_cli_residuals_apply(const sc_residuals *r, const char *stack_name) {
  return r->stack[0] == '\0' || (stack_name != NULL && strcmp(r->stack, stack_name) == 0);
}

int sc_cli_default_residuals(const char *hw_path, const sc_device *dev, const sc_registry *reg,
                             const char *stack_name, sc_residuals **ops, char *source,
                             size_t cap, sc_error *err) {
  int rc = sc_residuals_for_hardware(hw_path, dev->name, reg, SC_ESTIMATOR_HYBRID, ops, err);
  if (rc == SC_ENOTFOUND) {
    sc_error_clear(err);
    snprintf(source, cap, "the default: device '%.64s' has no fitted residuals", dev->name);
    return SC_OK;
  }
  if (rc != SC_OK) return rc;
  if (!sc_cli_residuals_apply(*ops, stack_name)) {
    snprintf(source, cap, "the default: the fitted residuals of device '%.64s' apply under "
             "stack '%.64s' only", dev->name, (*ops)->stack);
    sc_residuals_free(*ops);
    *ops = NULL;
    return SC_OK;
  }
  snprintf(source, cap, "the default where the device has fitted residuals: %.250s",
           (*ops)->dir);
  return SC_OK;
}

int sc_cli_job_residuals(sc_cli_job *j, const char *hw_path, const sc_topology *topo,
                         const sc_device *dev, const sc_registry *reg, const char *stack_name,
                         sc_residuals **ops, sc_residuals **coll, sc_error *err) {
  *ops = *coll = NULL;
  j->estimator_source[0] = '\0';
  if (j->residuals[0] != '\0' && j->estimator_given &&
      j->opts.estimator == SC_ESTIMATOR_ANALYTICAL) {
    sc_error_set(err, SC_EINVAL, "residuals: '%s' is for --estimator hybrid or learned (the "
                 "analytical estimator uses none)", j->residuals);
    return sc_cli_job_blame(j, SC_CLI_JOB_RESIDUALS, err);
  }
  if (!j->estimator_given && j->residuals[0] != '\0') {
    j->opts.estimator = SC_ESTIMATOR_HYBRID; /* the set the job names */
    snprintf(j->estimator_source, sizeof j->estimator_source,
             "the default with a residual set named: %.250s", j->residuals);
  } else if (!j->estimator_given) {
    int rc = sc_cli_default_residuals(hw_path, dev, reg, stack_name, ops, j->estimator_source,
                                      sizeof j->estimator_source, err);
    if (rc != SC_OK) return rc;
    j->opts.estimator = *ops != NULL ? SC_ESTIMATOR_HYBRID : SC_ESTIMATOR_ANALYTICAL;
  }
  if (j->opts.estimator == SC_ESTIMATOR_ANALYTICAL) return SC_OK;
  /* the operators' residuals: a set named by --residuals (or the job file), checked against
   * the device, else hardware/<device>/residuals/ (loaded above for the default) */
  if (*ops == NULL && j->residuals[0] != '\0') {
    if (sc_residuals_load(j->residuals, ops, err) != SC_OK ||
        sc_residuals_check(*ops, dev->name, reg, err) != SC_OK) {
      sc_residuals_free(*ops);
      *ops = NULL;
      return sc_cli_job_blame(j, SC_CLI_JOB_RESIDUALS, err);
    }
  } else if (*ops == NULL &&
             sc_residuals_for_hardware(hw_path, dev->name, reg, j->opts.estimator, ops, err) !=
                 SC_OK) {
    return err->code;
  }
  /* topologies/<name>/residuals/, when fitted (stepcast fit --comm) */
  if (sc_residuals_for_topology(topo->path, topo->name, NULL, 0, j->opts.estimator, coll, err) !=
      SC_OK) {
    sc_residuals_free(*ops);
    *ops = NULL;
    return err->code;
  }
  return SC_OK;
}
