/* stepcast ops: the operators and collectives of each pipeline stage, with their shapes and
 * analytical estimates, and the memory per GPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "stepcast/estimate.h"
#include "stepcast/report.h"
#include "stepcast/workload.h"

static void ops_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast ops --model M --hardware H [options]\n\n"
          "Lists, per pipeline stage (and virtual chunk) and phase, every operator of one\n"
          "micro-batch with its per-GPU shape, FLOPs, bytes, bound and estimated time (the\n"
          "operator plugins' roofline, or --estimator hybrid|learned: the device's fitted\n"
          "residual models), the collectives it implies (kind, group, bytes per\n"
          "rank; their times are stepcast predict's business), the per-iteration optimizer\n"
          "step and data-parallel collectives, then totals and the memory per GPU.\n\n"
          "options:\n"
          "  --model M                 model name (models/M.toml) or file\n"
          "  --hardware H              hardware name (hardware/H.toml) or file\n"
          "  --tp N --pp N --dp N --cp N   parallel degrees (default 1)\n"
          "  --ep N --etp N            expert parallel degrees of a mixture of experts (default 1)\n"
          "  --micro-batch N           sequences per micro-batch (default 1)\n"
          "  --global-batch N          sequences per iteration (default micro-batch*dp*pp)\n"
          "  --seq-len N               tokens per sequence (default: the model's max_seq)\n"
          "  --virtual-stages N        model chunks per pipeline rank (> 1: interleaved 1F1B)\n"
          "  --schedule S              gpipe | 1f1b | interleaved | zb-h1 | dualpipe (default\n"
          "                            1f1b; the memory of a rank of dualpipe: both its stages)\n"
          "  --recompute R             none | selective | full (default none)\n"
          "  --sequence-parallel       Megatron sequence parallelism\n"
          "  --distributed-optimizer   shard optimizer states over data parallel\n"
          "  --no-flash                unfused attention instead of flash attention\n"
          "  --dtype D                 fp32 | bf16 | fp16 | fp8 (default bf16)\n"
          "  --stack S                 software stack (stacks/S.toml or a file): each time is its\n"
          "                            kernels' GPU time; the host's is kernels x its time a kernel\n"
          "  --estimator E             analytical | hybrid | learned (default: hybrid where\n"
          "                            the device has fitted residuals, as predict; the\n"
          "                            others need hardware/<device>/residuals/)\n"
          "  --stage N                 only pipeline stage N\n"
          "  --json | --csv            machine-readable output (default: a table)\n\n"
          "Exit status: 0 ok, 1 impossible configuration or unreadable spec (one line naming\n"
          "the parameter), 2 usage error. Operator families: docs/operators.md.\n");
}

static const char *const coll_names[SC_COLL_COUNT] = {"all-reduce", "all-gather",
                                                      "reduce-scatter", "all-to-all",
                                                      "broadcast", "send-recv"};
static const char *const group_names[SC_GROUP_ALL] = {"tp",  "cp", "dp", "pp",
                                                      "etp", "ep", "edp"};

typedef enum { FMT_TABLE = 0, FMT_JSON, FMT_CSV } out_format;

static void shape_string(const sc_op_desc *d, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < d->ndims && n + 1 < cap; i++) {
    int w = snprintf(buf + n, cap - n, "%s%lld", i ? "x" : "", (long long)d->dims[i]);
    if (w < 0) break;
    n += (size_t)w;
  }
}

/* The descriptor's flags (SC_OP_*) as names, sep between them, each in quote (the table:
 * "cold", "ordered"; the JSON: "\"cold\"", "\"rows_in_order\""); "" for none. */
static void flags_string(uint32_t flags, int json, char *buf, size_t cap) {
  static const struct {
    uint32_t bit;
    const char *word, *json;
  } names[] = {{SC_OP_COLD, "cold", "cold"}, {SC_OP_ROWS_IN_ORDER, "ordered", "rows_in_order"}};
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0] && n < cap; i++) {
    if (!(flags & names[i].bit)) continue;
    int w = json ? snprintf(buf + n, cap - n, "%s\"%s\"", n ? ", " : "", names[i].json)
                 : snprintf(buf + n, cap - n, "%s%s", n ? "," : "", names[i].word);
    if (w < 0) break;
    n += (size_t)w;
  }
}

typedef struct ctx {
  sc_registry *reg;
  const sc_device *dev;
  out_format fmt;
  int first_json_item;
  sc_estimator estimator;
  const sc_residuals *resid; /* NULL with the analytical estimator */
  const sc_stack *stack;     /* NULL: none */
} ctx;

/* Estimate every op of a list; prints rows; adds to *time_s and *flops (x repeat). */
static int print_list(ctx *c, const sc_stage_work *w, const sc_work_list *l, const char *phase,
                      double *time_s, double *flops, sc_error *err) {
  *time_s = 0.0;
  *flops = 0.0;
  if (c->fmt == FMT_JSON) printf("\"ops\": [");
  for (uint32_t i = 0; i < l->nops; i++) {
    const sc_work_op *o = &l->ops[i];
    sc_estimate e;
    int rc = sc_registry_estimate_op(c->reg, c->dev, &o->desc, &e, err);
    if (rc != SC_OK) return rc;
    { /* the estimator's time under the stack, by the one rule predict prices by */
      double t;
      rc = sc_price_mode(c->estimator != SC_ESTIMATOR_ANALYTICAL ? c->resid : NULL, c->stack,
                         c->dev, c->estimator, &o->desc, &e, &t, err);
      if (rc != SC_OK) return rc;
      e.time_s = t;
    }
    char shape[160];
    shape_string(&o->desc, shape, sizeof shape);
    double total = e.time_s * o->repeat;
    *time_s += total;
    *flops += e.flops * o->repeat;
    char fl[64];
    flags_string(o->desc.flags, c->fmt == FMT_JSON, fl, sizeof fl);
    if (c->fmt == FMT_TABLE) {
      char shown[sizeof shape + sizeof fl + 4];
      snprintf(shown, sizeof shown, "%s%s%s%s", shape, fl[0] ? " (" : "", fl, fl[0] ? ")" : "");
      printf("    %-22s %-13s %-26s %5u %12.3f %10.2f  %-8s %11.2f %11.2f\n", o->label,
             o->desc.family, shown, o->repeat, e.flops / 1e9, e.bytes / 1e6,
             sc_bound_name(e.bound), e.time_s * 1e6, total * 1e6);
    } else if (c->fmt == FMT_JSON) {
      printf("%s{\"label\": \"%s\", \"family\": \"%s\", \"variant\": %u, \"dtype\": \"%s\", "
             "\"dims\": [",
             i ? ", " : "", o->label, o->desc.family, o->desc.variant,
             sc_dtype_name(o->desc.dtype));
      for (uint32_t k = 0; k < o->desc.ndims; k++) {
        printf("%s%lld", k ? ", " : "", (long long)o->desc.dims[k]);
      }
      printf("], \"flags\": [%s], \"repeat\": %u, \"where\": \"%s\", \"flops\": %.17g, "
             "\"bytes\": %.17g, \"bound\": \"%s\", \"time_s\": %.17g, \"total_time_s\": %.17g}",
             fl, o->repeat, o->where == SC_WHERE_LAYER ? "layer" : "stage", e.flops, e.bytes,
             sc_bound_name(e.bound), e.time_s, total);
    } else {
      printf("%u,%u,%s,op,%s,%s,%u,%s,%s,%u,%.17g,%.17g,%s,%.17g,%.17g,,\n", w->stage, w->chunk,
             phase, o->label, o->desc.family, o->desc.variant, sc_dtype_name(o->desc.dtype), shape,
             o->repeat, e.flops, e.bytes, sc_bound_name(e.bound), e.time_s, total);
    }
  }
  if (c->fmt == FMT_JSON) printf("], \"colls\": [");
  for (uint32_t i = 0; i < l->ncolls; i++) {
    const sc_work_coll *k = &l->colls[i];
    if (c->fmt == FMT_TABLE) {
      printf("    %-22s %-13s %-26s %5u %12s %10.2f  %-8s %s(%u)%s\n", k->label,
             coll_names[k->kind], "", k->repeat, "", k->bytes / 1e6, "", group_names[k->group],
             k->nranks, k->overlappable ? " overlappable" : "");
    } else if (c->fmt == FMT_JSON) {
      printf("%s{\"label\": \"%s\", \"kind\": \"%s\", \"group\": \"%s\", \"nranks\": %u, "
             "\"bytes\": %.17g, \"dtype\": \"%s\", \"phase\": \"%s\", \"repeat\": %u, "
             "\"overlappable\": %s}",
             i ? ", " : "", k->label, coll_names[k->kind], group_names[k->group], k->nranks,
             k->bytes, sc_dtype_name(k->dtype), sc_phase_name(k->phase), k->repeat,
             k->overlappable ? "true" : "false");
    } else {
      printf("%u,%u,%s,coll,%s,%s,,%s,,%u,,%.17g,,,,%s,%u\n", w->stage, w->chunk, phase,
             k->label, coll_names[k->kind], sc_dtype_name(k->dtype), k->repeat, k->bytes,
             group_names[k->group], k->nranks);
    }
  }
  if (c->fmt == FMT_JSON) printf("]");
  return SC_OK;
}

static void table_header(void) {
  printf("    %-22s %-13s %-26s %5s %12s %10s  %-8s %11s %11s\n", "operator", "family", "shape",
         "rep", "GFLOP", "MB", "bound", "time_us", "total_us");
}

static int print_stage(ctx *c, const sc_stage_work *w, sc_error *err) {
  static const sc_phase phases[] = {SC_PHASE_FWD, SC_PHASE_RECOMPUTE, SC_PHASE_BWD};
  double t[SC_PHASE_COUNT] = {0}, fl[SC_PHASE_COUNT] = {0};
  int rc;
  if (c->fmt == FMT_TABLE) {
    printf("\nstage %u chunk %u: layers %u-%u (%u)%s%s, %.3f M parameters per GPU\n", w->stage,
           w->chunk, w->layer_first, w->layer_first + w->layers - 1, w->layers,
           w->has_embedding ? ", embedding" : "", w->has_output ? ", output layer" : "",
           (double)w->params / 1e6);
  } else if (c->fmt == FMT_JSON) {
    printf("%s{\"stage\": %u, \"chunk\": %u, \"layer_first\": %u, \"layers\": %u, "
           "\"has_embedding\": %s, \"has_output\": %s, \"params\": %lld, ",
           c->first_json_item ? "" : ", ", w->stage, w->chunk, w->layer_first, w->layers,
           w->has_embedding ? "true" : "false", w->has_output ? "true" : "false",
           (long long)w->params);
    c->first_json_item = 0;
  }
  for (size_t i = 0; i < 3; i++) {
    sc_phase ph = phases[i];
    const sc_work_list *l = &w->per_micro[ph];
    if (l->nops == 0 && l->ncolls == 0 && ph == SC_PHASE_RECOMPUTE) continue;
    if (c->fmt == FMT_TABLE) {
      printf("  %s, per micro-batch\n", sc_phase_name(ph));
      table_header();
    } else if (c->fmt == FMT_JSON) {
      printf("\"%s\": {", sc_phase_name(ph));
    }
    rc = print_list(c, w, l, sc_phase_name(ph), &t[ph], &fl[ph], err);
    if (rc != SC_OK) return rc;
    if (c->fmt == FMT_JSON) {
      printf(", \"time_s\": %.17g, \"flops\": %.17g, \"model_flops\": %.17g}, ", t[ph], fl[ph],
             w->flops[ph]);
    }
  }
  if (c->fmt == FMT_TABLE) {
    printf("  per iteration\n");
    table_header();
  } else if (c->fmt == FMT_JSON) {
    printf("\"per_iteration\": {");
  }
  rc = print_list(c, w, &w->per_iter, "iteration", &t[SC_PHASE_OPTIMIZER],
                  &fl[SC_PHASE_OPTIMIZER], err);
  if (rc != SC_OK) return rc;
  if (c->fmt == FMT_TABLE) {
    printf("  compute per micro-batch: fwd %.3f ms, bwd %.3f ms, recompute %.3f ms; "
           "optimizer %.3f ms per iteration\n",
           t[SC_PHASE_FWD] * 1e3, t[SC_PHASE_BWD] * 1e3, t[SC_PHASE_RECOMPUTE] * 1e3,
           t[SC_PHASE_OPTIMIZER] * 1e3);
    printf("  model FLOPs per micro-batch: fwd %.3f TFLOP, bwd %.3f TFLOP, recompute %.3f TFLOP\n",
           w->flops[SC_PHASE_FWD] / 1e12, w->flops[SC_PHASE_BWD] / 1e12,
           w->flops[SC_PHASE_RECOMPUTE] / 1e12);
    printf("  pipeline messages per micro-batch: send fwd %.2f MB, recv fwd %.2f MB, "
           "send bwd %.2f MB, recv bwd %.2f MB\n",
           w->p2p_send_fwd_bytes / 1e6, w->p2p_recv_fwd_bytes / 1e6,
           w->p2p_send_bwd_bytes / 1e6, w->p2p_recv_bwd_bytes / 1e6);
  } else if (c->fmt == FMT_JSON) {
    printf(", \"time_s\": %.17g}, \"p2p\": {\"send_fwd_bytes\": %.17g, \"recv_fwd_bytes\": "
           "%.17g, \"send_bwd_bytes\": %.17g, \"recv_bwd_bytes\": %.17g}}",
           t[SC_PHASE_OPTIMIZER], w->p2p_send_fwd_bytes, w->p2p_recv_fwd_bytes,
           w->p2p_send_bwd_bytes, w->p2p_recv_bwd_bytes);
  }
  return SC_OK;
}

static void print_memory(ctx *c, uint32_t stage, const sc_memory *m) {
  if (c->fmt == FMT_TABLE) {
    printf("  memory per GPU (stage %u): weights %.2f GB, gradients %.2f GB, optimizer %.2f GB, "
           "activations %.2f GB (%.3f GB x %.2f micro-batches in flight), total %.2f GB of "
           "%.2f GB%s\n",
           stage, m->weights_bytes / 1e9, m->grads_bytes / 1e9, m->optimizer_bytes / 1e9,
           m->activations_bytes / 1e9, m->activation_per_micro_bytes / 1e9, m->inflight_micro,
           m->total_bytes / 1e9, c->dev->mem_bytes / 1e9,
           m->total_bytes > c->dev->mem_bytes ? " (DOES NOT FIT)" : "");
  } else if (c->fmt == FMT_JSON) {
    printf("%s{\"stage\": %u, \"params\": %lld, \"weights_bytes\": %.17g, \"grads_bytes\": "
           "%.17g, \"optimizer_bytes\": %.17g, \"activation_per_micro_bytes\": %.17g, "
           "\"inflight_micro\": %.17g, \"activations_bytes\": %.17g, \"total_bytes\": %.17g, "
           "\"fits\": %s}",
           c->first_json_item ? "" : ", ", stage, (long long)m->params, m->weights_bytes, m->grads_bytes, m->optimizer_bytes,
           m->activation_per_micro_bytes, m->inflight_micro, m->activations_bytes,
           m->total_bytes, m->total_bytes <= c->dev->mem_bytes ? "true" : "false");
  } else {
    printf("%u,,memory,memory,weights,,,,,,,%.17g,,,,,\n", stage, m->weights_bytes);
    printf("%u,,memory,memory,grads,,,,,,,%.17g,,,,,\n", stage, m->grads_bytes);
    printf("%u,,memory,memory,optimizer,,,,,,,%.17g,,,,,\n", stage, m->optimizer_bytes);
    printf("%u,,memory,memory,activations,,,,,,,%.17g,,,,,\n", stage, m->activations_bytes);
    printf("%u,,memory,memory,total,,,,,,,%.17g,,,,,\n", stage, m->total_bytes);
  }
}

/* The job keys ops accepts (a subset of predict's: no topology, timing or overlap). */
static int ops_key(const char *name) {
  static const char *const allowed[] = {
      "model", "hardware", "tp", "pp", "dp", "cp", "ep", "etp", "micro-batch", "global-batch",
      "seq-len",
      "virtual-stages", "schedule", "recompute", "dtype", "sequence-parallel",
      "distributed-optimizer", "flash-attention", "no-flash-attention", "estimator", "stack",
      NULL};
  for (int i = 0; allowed[i] != NULL; i++) {
    if (strcmp(name, allowed[i]) == 0) return 1;
  }
  return 0;
}

int sc_cli_ops(int argc, char **argv) {
  sc_cli_job job;
  uint32_t stage_only = 0;
  int have_stage = 0, schedule_given = 0;
  out_format fmt = FMT_TABLE;
  sc_error perr;
  sc_cli_job_init(&job);

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *eq, *val = NULL;
    char name[64];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      ops_usage(stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0) return sc_cli_usage_error("ops", "unknown option '%s'", a);
    eq = strchr(a, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
    if (eq) val = eq + 1;
    if (strcmp(name, "no-flash") == 0) snprintf(name, sizeof name, "no-flash-attention");
    int is_bool = strcmp(name, "json") == 0 || strcmp(name, "csv") == 0 ||
                  (ops_key(name) && sc_cli_job_is_bool(name));
    if (is_bool && val != NULL)
      return sc_cli_usage_error("ops", "option '--%s' takes no value", name);
    if (strcmp(name, "json") == 0) { fmt = FMT_JSON; continue; }
    if (strcmp(name, "csv") == 0) { fmt = FMT_CSV; continue; }
    if (strcmp(name, "stage") != 0 && !ops_key(name))
      return sc_cli_usage_error("ops", "unknown option '%s'", a);
    if (!is_bool && val == NULL) {
      if (i + 1 >= argc) return sc_cli_usage_error("ops", "option '--%s' needs a value", name);
      val = argv[++i];
    }
    if (strcmp(name, "stage") == 0) {
      char *end = NULL;
      errno = 0;
      unsigned long v = strtoul(val, &end, 10);
      if (errno != 0 || *end != '\0' || *val == '\0' || *val == '-' || v > 0xffffffffUL)
        return sc_cli_usage_error("ops", "--stage: '%s' is not a non-negative integer", val);
      stage_only = (uint32_t)v;
      have_stage = 1;
      continue;
    }
    schedule_given |= strcmp(name, "schedule") == 0;
    if (sc_cli_job_set(&job, name, val, &perr) != SC_OK)
      return sc_cli_usage_error("ops", "%s", perr.msg);
  }
  if (job.model[0] == '\0') return sc_cli_usage_error("ops", "--model is required");
  if (job.hardware[0] == '\0') return sc_cli_usage_error("ops", "--hardware is required");
  sc_parallel p = job.par;
  const char *model = job.model, *hardware = job.hardware;
  if (p.virtual_stages > 1 && !schedule_given) p.schedule = SC_SCHED_INTERLEAVED;
  uint32_t seq = job.seq_given ? p.seq_len : 0, gb = p.global_batch;

  sc_error err;
  sc_error_clear(&err);
  sc_model m;
  if (sc_model_load(model, &m, &err) != SC_OK) return sc_cli_fail(&err);
  sc_stack stack;
  if (job.stack[0] != '\0') {
    if (sc_stack_load(job.stack, &stack, &err) != SC_OK) return sc_cli_fail(&err);
    if (stack.vocab_divisible_by && p.vocab_divisible_by == 0)
      p.vocab_divisible_by = stack.vocab_divisible_by; /* the job's own padding first */
    sc_stack_state_layout(&stack, &p);
  }
  p.seq_len = seq ? seq : (uint32_t)m.max_seq;
  if (gb) {
    p.global_batch = gb;
  } else {
    uint64_t d = (uint64_t)p.micro_batch * p.dp * p.pp;
    if (d > 0xffffffffULL) {
      sc_error_set(&err, SC_ECONFIG, "global_batch: micro_batch*dp*pp exceeds 2^32-1");
      return sc_cli_fail(&err);
    }
    p.global_batch = (uint32_t)d;
  }
  if (sc_workload_validate(&m, &p, &err) != SC_OK) return sc_cli_fail(&err);
  if (have_stage && stage_only >= p.pp) {
    sc_error_set(&err, SC_ECONFIG, "stage: %u out of range (pp = %u)", stage_only, p.pp);
    return sc_cli_fail(&err);
  }

  sc_registry *reg = NULL;
  int rc = sc_cli_registry_open(&reg, &err);
  sc_device dev;
  if (rc == SC_OK) rc = sc_hardware_load(reg, hardware, &dev, &err);
  if (rc == SC_OK && job.stack[0] != '\0') sc_stack_device(&stack, &dev);
  sc_residuals *resid = NULL;
  int by_default = 0; /* hybrid as predict's default: the device's residuals apply here */
  if (rc == SC_OK && !job.estimator_given) {
    rc = sc_cli_default_residuals(hardware, &dev, reg, job.stack[0] ? stack.name : NULL, &resid,
                                  job.estimator_source, sizeof job.estimator_source, &err);
    if (rc == SC_OK && resid != NULL) {
      job.opts.estimator = SC_ESTIMATOR_HYBRID;
      by_default = 1;
    }
  } else if (rc == SC_OK && job.opts.estimator != SC_ESTIMATOR_ANALYTICAL) {
    rc = sc_residuals_for_hardware(hardware, dev.name, reg, job.opts.estimator, &resid, &err);
  }
  if (rc != SC_OK) {
    sc_residuals_free(resid);
    sc_registry_free(reg);
    return sc_cli_fail(&err);
  }
  sc_stage_work *w = malloc(sizeof *w);
  if (w == NULL) {
    sc_residuals_free(resid);
    sc_registry_free(reg);
    sc_error_set(&err, SC_ENOMEM, "out of memory");
    return sc_cli_fail(&err);
  }

  ctx c = {reg, &dev, fmt, 1, job.opts.estimator, resid, job.stack[0] ? &stack : NULL};
  uint32_t mb = sc_parallel_microbatches(&p);
  if (fmt == FMT_TABLE) {
    printf("%s on %s: tp %u pp %u dp %u cp %u (%u GPUs), micro-batch %u, global batch %u "
           "(%u micro-batches), seq %u, %s, %s schedule%s, recompute %s, %s attention, "
           "sequence parallel %s, distributed optimizer %s, %s estimator%s\n",
           m.name, dev.name, p.tp, p.pp, p.dp, p.cp, p.tp * p.pp * p.dp * p.cp, p.micro_batch,
           p.global_batch, mb, p.seq_len, sc_dtype_name(p.dtype), sc_cli_schedule_name(p.schedule),
           p.virtual_stages > 1 ? " (virtual stages)" : "", sc_recompute_name(p.recompute),
           p.flash_attention ? "flash" : "unfused", p.sequence_parallel ? "on" : "off",
           p.distributed_optimizer ? "on" : "off", sc_estimator_name(c.estimator),
           by_default ? " (the default where the device has fitted residuals)" : "");
    if (c.stack != NULL)
      printf("stack %s: each time is its kernels' on the GPU; the host's is kernels x %.2f us\n",
             c.stack->name, c.stack->host_per_kernel_s * 1e6);
  } else if (fmt == FMT_JSON) {
    printf("{\"schema_version\": %d, \"model\": ", SC_REPORT_SCHEMA_VERSION);
    sc_json_string(stdout, m.name);
    printf(", \"hardware\": ");
    sc_json_string(stdout, dev.name);
    printf(", \"estimator\": \"%s\", \"stack\": ", sc_estimator_name(c.estimator));
    if (c.stack != NULL) sc_json_string(stdout, c.stack->name);
    else printf("null");
    printf(", \"parallel\": "
           "{\"tp\": %u, \"pp\": %u, \"dp\": %u, \"cp\": %u, \"micro_batch\": %u, "
           "\"global_batch\": %u, \"microbatches\": %u, \"seq_len\": %u, \"virtual_stages\": %u, "
           "\"schedule\": \"%s\", \"recompute\": \"%s\", \"sequence_parallel\": %s, "
           "\"distributed_optimizer\": %s, \"flash_attention\": %s, \"dtype\": \"%s\"}, "
           "\"stages\": [",
           p.tp, p.pp, p.dp, p.cp, p.micro_batch, p.global_batch, mb,
           p.seq_len, p.virtual_stages, sc_cli_schedule_name(p.schedule), sc_recompute_name(p.recompute),
           p.sequence_parallel ? "true" : "false", p.distributed_optimizer ? "true" : "false",
           p.flash_attention ? "true" : "false", sc_dtype_name(p.dtype));
  } else {
    printf("stage,chunk,phase,kind,label,family,variant,dtype,dims,repeat,flops,bytes,bound,"
           "time_s,total_time_s,group,nranks\n");
  }
  for (uint32_t s = 0; s < p.pp && rc == SC_OK; s++) {
    if (have_stage && s != stage_only) continue;
    for (uint32_t k = 0; k < p.virtual_stages && rc == SC_OK; k++) {
      rc = sc_workload_stage(&m, &p, s, k, w, &err);
      if (rc == SC_OK) rc = print_stage(&c, w, &err);
    }
    sc_memory mem;
    if (rc == SC_OK) rc = sc_memory_per_gpu(&m, &p, s, &mem, &err);
    if (rc == SC_OK && fmt != FMT_JSON) print_memory(&c, s, &mem);
  }
  if (rc == SC_OK && fmt == FMT_JSON) {
    /* Memory per GPU, one object per stage, after the stages. */
    printf("], \"memory\": [");
    c.first_json_item = 1;
    for (uint32_t s = 0; s < p.pp && rc == SC_OK; s++) {
      if (have_stage && s != stage_only) continue;
      sc_memory mem;
      rc = sc_memory_per_gpu(&m, &p, s, &mem, &err);
      if (rc == SC_OK) print_memory(&c, s, &mem);
      c.first_json_item = 0;
    }
    if (rc == SC_OK) printf("]}\n");
  }
  free(w);
  sc_residuals_free(resid);
  sc_registry_free(reg);
  if (rc != SC_OK) {
    fflush(stdout);
    return sc_cli_fail(&err);
  }
  return 0;
}
