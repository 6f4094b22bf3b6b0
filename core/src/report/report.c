/* Reports: derived metrics, table, JSON, CSV (see stepcast/report.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report_int.h"
#include "stepcast/memory.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

/* ------------------------------------------------------------------------- */
/* Names                                                                     */

/* ------------------------------------------------------------------------- */
/* Derived quantities                                                        */

static int bad_nonneg(double x) { return !(x >= 0.0) || !isfinite(x); }

int sc_result_finish(sc_result *r, sc_error *err) {
  if (r == NULL) return sc_error_set(err, SC_EINVAL, "report: result is NULL");
  const sc_parallel *p = &r->parallel;
  if (!(r->iteration_s > 0.0) || !isfinite(r->iteration_s))
    return sc_error_set(err, SC_EINVAL, "report: iteration_s = %g must be finite and > 0",
                        r->iteration_s);
  uint64_t g = (uint64_t)p->tp * p->pp * p->dp * p->cp;
  if (r->gpus == 0 || g != r->gpus)
    return sc_error_set(err, SC_EINVAL,
                        "report: gpus = %u must equal tp*pp*dp*cp = %u*%u*%u*%u = %llu", r->gpus,
                        p->tp, p->pp, p->dp, p->cp, (unsigned long long)g);
  if (p->global_batch == 0 || p->seq_len == 0)
    return sc_error_set(err, SC_EINVAL, "report: parallel.global_batch and seq_len must be > 0");
  const struct {
    const char *name;
    double v;
  } nn[] = {{"model_flops", r->model_flops},
            {"hardware_flops", r->hardware_flops},
            {"peak_flops_per_s", r->peak_flops_per_s},
            {"token_budget", r->token_budget},
            {"board_power_w", r->board_power_w},
            {"price_per_gpu_hour", r->price_per_gpu_hour},
            {"memory.weights_bytes", r->memory.weights_bytes},
            {"memory.grads_bytes", r->memory.grads_bytes},
            {"memory.optimizer_bytes", r->memory.optimizer_bytes},
            {"memory.activations_bytes", r->memory.activations_bytes},
            {"memory.other_bytes", r->memory.other_bytes},
            {"memory.total_bytes", r->memory.total_bytes},
            {"memory.capacity_bytes", r->memory.capacity_bytes},
            {"memory.workspace_bytes", r->memory.workspace_bytes},
            {"memory.fragmentation_bytes", r->memory.fragmentation_bytes},
            {"memory.context_bytes", r->memory.context_bytes},
            {"memory.comm_bytes", r->memory.comm_bytes}};
  for (size_t i = 0; i < sizeof nn / sizeof nn[0]; i++)
    if (bad_nonneg(nn[i].v))
      return sc_error_set(err, SC_EINVAL, "report: %s = %g must be finite and >= 0", nn[i].name,
                          nn[i].v);
  sc_report_term terms[SC_REPORT_MAX_TERMS];
  size_t nt = sc_report_terms(&r->breakdown, terms, SC_REPORT_MAX_TERMS);
  double sum = 0.0;
  for (size_t i = 0; i < nt; i++) {
    if (bad_nonneg(terms[i].seconds))
      return sc_error_set(err, SC_EINVAL, "report: breakdown term '%s' = %g must be >= 0",
                          terms[i].key, terms[i].seconds);
    sum += terms[i].seconds;
  }
  if (fabs(sum - r->iteration_s) > 1e-9 * r->iteration_s)
    return sc_error_set(err, SC_EINVAL,
                        "report: breakdown terms sum to %.12g s, not iteration_s = %.12g s", sum,
                        r->iteration_s);

  r->microbatches = sc_parallel_microbatches(p);
  r->tokens_per_iteration = (double)p->global_batch * (double)p->seq_len;
  r->tokens_per_s = r->tokens_per_iteration / r->iteration_s;
  double denom = (double)r->gpus * r->iteration_s;
  r->model_tflops_per_gpu = r->model_flops / denom / 1e12;
  r->hardware_tflops_per_gpu = r->hardware_flops / denom / 1e12;
  r->mfu = r->peak_flops_per_s > 0 ? r->model_flops / denom / r->peak_flops_per_s : 0.0;
  r->hfu = r->peak_flops_per_s > 0 ? r->hardware_flops / denom / r->peak_flops_per_s : 0.0;
  if (r->memory.total_bytes == 0.0)
    r->memory.total_bytes = r->memory.weights_bytes + r->memory.grads_bytes +
                            r->memory.optimizer_bytes + r->memory.activations_bytes +
                            r->memory.other_bytes;
  if (r->power_fraction == 0.0) r->power_fraction = 1.0;
  if (r->pue == 0.0) r->pue = 1.0;
  if (!(r->power_fraction > 0.0 && r->power_fraction <= 1.0))
    return sc_error_set(err, SC_EINVAL, "power-fraction: %g is not in (0, 1] (the share of the "
                        "board's power drawn)", r->power_fraction);
  if (!(r->pue >= 1.0 && isfinite(r->pue)))
    return sc_error_set(err, SC_EINVAL, "pue: %g is not a power usage effectiveness (>= 1)",
                        r->pue);
  r->time_to_train_s = r->token_budget > 0 ? r->token_budget / r->tokens_per_s : 0.0;
  if (!isfinite(r->tokens_per_s) || !isfinite(r->time_to_train_s) ||
      !isfinite(r->model_tflops_per_gpu) || !isfinite(r->hardware_tflops_per_gpu))
    return sc_error_set(err, SC_ERANGE, "tokens: %g tokens at %g tokens/s (iteration %g s) "
                        "give a time to train of %g s, not a finite time: the token budget or "
                        "the iteration is out of range", r->token_budget, r->tokens_per_s,
                        r->iteration_s, r->time_to_train_s);
  r->gpu_hours = r->time_to_train_s * (double)r->gpus / 3600.0;
  r->energy_j = (double)r->gpus * r->board_power_w * r->power_fraction * r->pue *
                r->time_to_train_s;
  r->cost = r->gpu_hours * r->price_per_gpu_hour;
  if (!isfinite(r->gpu_hours) || !isfinite(r->energy_j) || !isfinite(r->cost))
    return sc_error_set(err, SC_ERANGE, "tokens: %g tokens give %g GPU-hours, %g J and a cost "
                        "of %g, not finite figures: the token budget or the price is out of "
                        "range", r->token_budget, r->gpu_hours, r->energy_j, r->cost);
  return SC_OK;
}

size_t sc_report_terms(const sc_sched_breakdown *b, sc_report_term *out, size_t cap) {
  size_t n = 0;
#define SC__TERM(k, l, v)                                                         \
  do {                                                                           \
    if (n < cap && out != NULL) {                                                \
      snprintf(out[n].key, sizeof out[n].key, "%s", (k));                        \
      snprintf(out[n].label, sizeof out[n].label, "%s", (l));                    \
      out[n].seconds = (v);                                                      \
    }                                                                            \
    n++;                                                                         \
  } while (0)
  if (b == NULL) return 0;
  if (b->nfamilies > 0) {
    for (uint32_t f = 0; f < b->nfamilies && f < SC_SCHED_MAX_FAMILIES; f++) {
      char k[48], l[48];
      snprintf(k, sizeof k, "compute.%.31s", b->family_names[f]);
      snprintf(l, sizeof l, "compute: %.31s", b->family_names[f]);
      SC__TERM(k, l, b->family_s[f]);
    }
  } else {
    SC__TERM("compute.forward", "compute: forward", b->compute_fwd_s);
    SC__TERM("compute.recompute", "compute: recomputation", b->compute_recompute_s);
    SC__TERM("compute.backward", "compute: backward", b->compute_bwd_s);
  }
  SC__TERM("tp_exposed", "TP comm (exposed)", b->tp_exposed_s);
  SC__TERM("cp_exposed", "CP comm (exposed)", b->cp_exposed_s);
  SC__TERM("dp_exposed", "DP comm (exposed)", b->dp_exposed_s);
  SC__TERM("p2p_exposed", "P2P comm (exposed)", b->p2p_exposed_s);
  SC__TERM("bubble", "pipeline bubble", b->bubble_s);
  SC__TERM("optimizer", "optimizer step", b->optimizer_s);
#undef SC__TERM
  return n;
}

/* ------------------------------------------------------------------------- */
/* Table                                                                     */

int sc__io_status(FILE *out, const char *who, sc_error *err) {
  errno = 0;
  if (fflush(out) != 0 || ferror(out)) {
    /* where the writes went: a file's own path is named by whoever renames it into place
     * (common/afile.h); the standard streams have none */
    const int e = errno;
    const char *where = out == stdout ? " on standard output" : out == stderr ? " on standard "
                        "error" : "";
    return sc_error_set(err, SC_EIO, "report: %s: write error%s%s%s", who, where,
                        e ? ": " : "", e ? strerror(e) : "");
  }
  return SC_OK;
}

int sc__result_check_finite(const sc_result *r, const char *who, sc_error *err) {
  const struct { const char *name; double v; } f[] = {
      {"iteration_s", r->iteration_s},
      {"model_flops", r->model_flops},
      {"hardware_flops", r->hardware_flops},
      {"peak_flops_per_s", r->peak_flops_per_s},
      {"token_budget", r->token_budget},
      {"tokens_per_iteration", r->tokens_per_iteration},
      {"tokens_per_s", r->tokens_per_s},
      {"model_tflops_per_gpu", r->model_tflops_per_gpu},
      {"hardware_tflops_per_gpu", r->hardware_tflops_per_gpu},
      {"mfu", r->mfu},
      {"hfu", r->hfu},
      {"time_to_train_s", r->time_to_train_s},
      {"gpu_hours", r->gpu_hours},
      {"energy_j", r->energy_j},
      {"cost", r->cost},
      {"memory.weights_bytes", r->memory.weights_bytes},
      {"memory.grads_bytes", r->memory.grads_bytes},
      {"memory.optimizer_bytes", r->memory.optimizer_bytes},
      {"memory.activations_bytes", r->memory.activations_bytes},
      {"memory.other_bytes", r->memory.other_bytes},
      {"memory.total_bytes", r->memory.total_bytes},
      {"memory.capacity_bytes", r->memory.capacity_bytes},
      {"memory.workspace_bytes", r->memory.workspace_bytes},
      {"memory.fragmentation_bytes", r->memory.fragmentation_bytes},
      {"memory.context_bytes", r->memory.context_bytes},
      {"memory.comm_bytes", r->memory.comm_bytes}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (!isfinite(f[i].v))
      return sc_error_set(err, SC_ERANGE, "report: %s: %s is %g, not a finite number", who,
                          f[i].name, f[i].v);
  sc_report_term terms[SC_REPORT_MAX_TERMS];
  size_t nt = sc_report_terms(&r->breakdown, terms, SC_REPORT_MAX_TERMS);
  for (size_t i = 0; i < nt && i < SC_REPORT_MAX_TERMS; i++)
    if (!isfinite(terms[i].seconds))
      return sc_error_set(err, SC_ERANGE, "report: %s: breakdown term '%s' is %g, not a finite "
                          "number", who, terms[i].key, terms[i].seconds);
  return SC_OK;
}

/* out and r given. The table has no spelling for a number that is not finite ("inf days"),
 * so it refuses before it writes; JSON writes null and CSV an empty field for one
 * (sc__json_number, csv_num), never inf or nan. */
static int check_args(FILE *out, const sc_result *r, const char *who, sc_error *err) {
  if (out == NULL || r == NULL)
    return sc_error_set(err, SC_EINVAL, "report: %s: %s is NULL", who,
                        out == NULL ? "out" : "result");
  return strcmp(who, "table") == 0 ? sc__result_check_finite(r, who, err) : SC_OK;
}

int sc_report_table(FILE *out, const sc_result *r, sc_error *err) {
  int rc = check_args(out, r, "table", err);
  if (rc) return rc;
  const sc_parallel *p = &r->parallel;
  const double GiB = 1024.0 * 1024.0 * 1024.0;
  fprintf(out, "stepcast %s prediction\n", sc_version());
  fprintf(out, "  %-26s %s\n", "model", r->model);
  fprintf(out, "  %-26s %s (%s)\n", "hardware / topology", r->hardware, r->topology);
  fprintf(out, "  %-26s %s%s%s%s\n", "estimator", r->estimator,
          r->coll_residuals ? " (and the topology's collective residuals, for the group "
                              "shapes they were fitted on)" : "",
          r->estimator_source[0] ? "; " : "", r->estimator_source);
  fprintf(out, "  %-26s %s\n", "software stack",
          r->stack[0] ? r->stack : "none (one kernel per operator, the host keeps up)");
  fprintf(out, "  %-26s %u GPUs = TP %u x PP %u x DP %u x CP %u\n", "parallelism", r->gpus, p->tp,
          p->pp, p->dp, p->cp);
  if (sc_parallel_ep(p) * sc_parallel_etp(p) > 1)
    fprintf(out, "  %-26s EP %u x ETP %u x EDP %u over the same GPUs\n", "experts (MoE layers)",
            sc_parallel_ep(p), sc_parallel_etp(p), sc_parallel_edp(p));
  fprintf(out, "  %-26s %s, virtual stages %u, %u micro-batches of %u\n", "schedule",
          sc_schedule_kind_name(p->schedule), p->virtual_stages, r->microbatches, p->micro_batch);
  if (p->stage_layers[0] != 0) { /* an uneven pipeline split */
    fprintf(out, "  %-26s", "layers per stage");
    for (uint32_t i = 0; i < p->pp && i < 256; i++)
      fprintf(out, "%s%u", i ? ", " : " ", p->stage_layers[i]);
    fputc('\n', out);
  }
  char shard[96] = "";
  uint32_t z = sc_parallel_zero(p), S = sc_parallel_shard_ranks(p), dpc = p->dp * p->cp;
  if (z == 1 && S == dpc) snprintf(shard, sizeof shard, ", distributed optimizer");
  else if (z >= 1)
    snprintf(shard, sizeof shard, ", ZeRO-%u%s over %u ranks%s", z, z == 3 ? " (FSDP)" : "", S,
             S < dpc ? " (HSDP: replicated across the rest)" : "");
  char grads[48] = "";
  if (p->grad_reduce_dtype != SC_DTYPE_FP32)
    snprintf(grads, sizeof grads, ", %s gradients", sc_dtype_name(p->grad_reduce_dtype));
  fprintf(out, "  %-26s global batch %u x seq %u, %s, recompute %s%s%s%s\n", "batch",
          p->global_batch, p->seq_len, sc_dtype_name(p->dtype), sc_recompute_name(p->recompute),
          p->sequence_parallel ? ", sequence parallel" : "", shard, grads);
  fprintf(out, "  %-26s gradient reduction %s, parameter gather %s, TP communication %s\n",
          "overlapped with compute", p->overlap_grad_reduce ? "yes" : "no",
          p->overlap_param_gather ? "yes" : "no", p->overlap_tp_comm ? "yes" : "no");
  fprintf(out, "\n  %-26s %12.3f ms\n", "iteration time", r->iteration_s * 1e3);
  fprintf(out, "  %-26s %12.1f tokens/s\n", "throughput", r->tokens_per_s);
  fprintf(out, "  %-26s %12.1f TFLOP/s  (hardware %.1f)\n", "model FLOP/s per GPU",
          r->model_tflops_per_gpu, r->hardware_tflops_per_gpu);
  if (r->peak_flops_per_s > 0)
    fprintf(out, "  %-26s %11.1f %%  (HFU %.1f %%)\n", "MFU", r->mfu * 100, r->hfu * 100);
  if (r->token_budget > 0) {
    fprintf(out, "  %-26s %12.2f days for %.3g tokens\n", "time to train",
            r->time_to_train_s / 86400.0, r->token_budget);
    fprintf(out, "  %-26s %12.0f GPU-hours\n", "GPU time", r->gpu_hours);
    if (r->board_power_w > 0)
      fprintf(out, "  %-26s %12.1f MWh  (%u GPUs x %.0f W x %.2f of it, PUE %.2f)\n", "energy",
              r->energy_j / 3.6e9, r->gpus, r->board_power_w, r->power_fraction, r->pue);
    else
      fprintf(out, "  %-26s %12s  (the hardware file states no board_power_W)\n", "energy",
              "-");
    if (r->price_per_gpu_hour > 0)
      fprintf(out, "  %-26s %12.0f  (%g a GPU-hour)\n", "cost", r->cost,
              r->price_per_gpu_hour);
  }

  fprintf(out, "\n  breakdown (pipeline stage %u, the last to finish)\n", r->breakdown.stage);
  fprintf(out, "  %-26s %12s %8s\n", "term", "time", "share");
  sc_report_term t[SC_REPORT_MAX_TERMS];
  size_t nt = sc_report_terms(&r->breakdown, t, SC_REPORT_MAX_TERMS);
  for (size_t i = 0; i < nt; i++)
    fprintf(out, "  %-26s %9.3f ms %7.2f %%\n", t[i].label, t[i].seconds * 1e3,
            100.0 * t[i].seconds / r->iteration_s);
  fprintf(out, "  %-26s %9.3f ms %7.2f %%\n", "total", r->iteration_s * 1e3, 100.0);

  const sc_memory_usage *m = &r->memory;
  fprintf(out, "\n  memory per GPU\n");
  const struct {
    const char *n;
    double v;
    uint32_t communicators; /* said beside the communication buffers */
  } mm[] = {{"weights", m->weights_bytes, 0},
            {"gradients", m->grads_bytes, 0},
            {"optimizer states", m->optimizer_bytes, 0},
            {"activations", m->activations_bytes, 0},
            {"other", m->other_bytes, 0},
            {"  workspaces", m->workspace_bytes, 0},
            {"  allocator reserve", m->fragmentation_bytes, 0},
            {"  CUDA context", m->context_bytes, 0},
            {"  communication buffers", m->comm_bytes, m->communicators},
            {"total", m->total_bytes, 0}};
  for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
    fprintf(out, "  %-26s %9.2f GiB", mm[i].n, mm[i].v / GiB);
    if (mm[i].communicators > 0)
      fprintf(out, " (%u NCCL communicator%s)", mm[i].communicators,
              mm[i].communicators > 1 ? "s" : "");
    fputc('\n', out);
  }
  if (m->capacity_bytes > 0) {
    double over = m->total_bytes - m->capacity_bytes;
    if (over <= 0)
      fprintf(out, "  %-26s %9.2f GiB (fits, headroom %.2f GiB)\n", "device capacity",
              m->capacity_bytes / GiB, -over / GiB);
    else if (!sc_memory_refused(m->total_bytes, m->capacity_bytes))
      fprintf(out, "  %-26s %9.2f GiB (over by %.2f GiB, within the %.0f %% margin: "
              "accepted)\n", "device capacity", m->capacity_bytes / GiB, over / GiB,
              100.0 * SC_MEMORY_REFUSE_MARGIN);
    else
      fprintf(out, "  %-26s %9.2f GiB (DOES NOT FIT, over by %.2f GiB, past the %.0f %% "
              "margin)\n", "device capacity", m->capacity_bytes / GiB, over / GiB,
              100.0 * SC_MEMORY_REFUSE_MARGIN);
  }
  return sc__io_status(out, "table", err);
}

/* ------------------------------------------------------------------------- */
/* JSON                                                                      */

void sc_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)(s != NULL ? s : ""); *c; c++) {
    switch (*c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    default:
      if (*c < 0x20 || *c == 0x7f)
        fprintf(out, "\\u%04x", *c);
      else
        fputc(*c, out);
    }
  }
  fputc('"', out);
}

void sc__json_number(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, "%.12g", v);
  else
    fputs("null", out);
}

static void jkey(FILE *out, const char *k, int *first) {
  if (!*first) fputc(',', out);
  *first = 0;
  fputs("\n    ", out);
  sc_json_string(out, k);
  fputs(": ", out);
}

static void jnum(FILE *out, const char *k, double v, int *first) {
  jkey(out, k, first);
  sc__json_number(out, v);
}

static void jint(FILE *out, const char *k, unsigned long long v, int *first) {
  jkey(out, k, first);
  fprintf(out, "%llu", v);
}

static void jstr(FILE *out, const char *k, const char *v, int *first) {
  jkey(out, k, first);
  sc_json_string(out, v);
}

static void jbool(FILE *out, const char *k, int v, int *first) {
  jkey(out, k, first);
  fputs(v ? "true" : "false", out);
}

/* A number, or null where it does not apply (known == 0). */
static void jnum_if(FILE *out, const char *k, int known, double v, int *first) {
  jkey(out, k, first);
  if (known) sc__json_number(out, v);
  else fputs("null", out);
}

/* A boolean, or null where it does not apply (known == 0). */
static void jbool_if(FILE *out, const char *k, int known, int v, int *first) {
  jkey(out, k, first);
  fputs(!known ? "null" : v ? "true" : "false", out);
}

int sc_report_json(FILE *out, const sc_result *r, sc_error *err) {
  int rc = check_args(out, r, "json", err);
  if (rc) return rc;
  const sc_parallel *p = &r->parallel;
  const sc_sched_breakdown *b = &r->breakdown;
  int f;
  fprintf(out, "{\n  \"schema_version\": %d,\n  \"stepcast_version\": ", SC_REPORT_SCHEMA_VERSION);
  sc_json_string(out, sc_version());
  fputs(",\n  \"inputs\": {", out);
  f = 1;
  jstr(out, "model", r->model, &f);
  jstr(out, "topology", r->topology, &f);
  jstr(out, "hardware", r->hardware, &f);
  jstr(out, "estimator", r->estimator, &f);
  jstr(out, "estimator_source", r->estimator_source, &f);
  jbool(out, "collective_residuals", r->coll_residuals, &f);
  if (r->stack[0] != '\0') jstr(out, "stack", r->stack, &f);
  else { jkey(out, "stack", &f); fputs("null", out); }
  jint(out, "gpus", r->gpus, &f);
  jint(out, "tp", p->tp, &f);
  jint(out, "pp", p->pp, &f);
  jint(out, "dp", p->dp, &f);
  jint(out, "cp", p->cp, &f);
  jint(out, "micro_batch", p->micro_batch, &f);
  jint(out, "global_batch", p->global_batch, &f);
  jint(out, "microbatches", r->microbatches, &f);
  jint(out, "seq_len", p->seq_len, &f);
  jstr(out, "schedule", sc_schedule_kind_name(p->schedule), &f);
  jint(out, "virtual_stages", p->virtual_stages, &f);
  jstr(out, "recompute", sc_recompute_name(p->recompute), &f);
  jbool(out, "sequence_parallel", p->sequence_parallel, &f);
  jbool(out, "distributed_optimizer", p->distributed_optimizer, &f);
  jint(out, "zero_stage", sc_parallel_zero(p), &f);
  jint(out, "shard_ranks", sc_parallel_shard_ranks(p), &f);
  jint(out, "ep", sc_parallel_ep(p), &f);
  jint(out, "etp", sc_parallel_etp(p), &f);
  jbool(out, "flash_attention", p->flash_attention, &f);
  jstr(out, "dtype", sc_dtype_name(p->dtype), &f);
  jstr(out, "grad_reduce_dtype", sc_dtype_name(p->grad_reduce_dtype), &f);
  jbool(out, "overlap_grad_reduce", p->overlap_grad_reduce, &f);
  jbool(out, "overlap_param_gather", p->overlap_param_gather, &f);
  jbool(out, "overlap_tp_comm", p->overlap_tp_comm, &f);
  jkey(out, "stage_layers", &f); /* null: an even split */
  if (p->stage_layers[0] == 0) {
    fputs("null", out);
  } else {
    fputc('[', out);
    for (uint32_t i = 0; i < p->pp && i < 256; i++)
      fprintf(out, "%s%u", i ? ", " : "", p->stage_layers[i]);
    fputc(']', out);
  }
  jint(out, "vocab_divisible_by", p->vocab_divisible_by ? p->vocab_divisible_by : 128, &f);
  fputs("\n  },\n  \"iteration_s\": ", out);
  sc__json_number(out, r->iteration_s);
  fputs(",\n  \"breakdown\": {", out);
  f = 1;
  jint(out, "stage", b->stage, &f);
  jnum(out, "compute_forward_s", b->compute_fwd_s, &f);
  jnum(out, "compute_recompute_s", b->compute_recompute_s, &f);
  jnum(out, "compute_backward_s", b->compute_bwd_s, &f);
  jkey(out, "compute_by_family_s", &f);
  fputc('{', out);
  for (uint32_t i = 0; i < b->nfamilies && i < SC_SCHED_MAX_FAMILIES; i++) {
    if (i) fputs(", ", out);
    sc_json_string(out, b->family_names[i]);
    fputs(": ", out);
    sc__json_number(out, b->family_s[i]);
  }
  fputc('}', out);
  jnum(out, "tp_exposed_s", b->tp_exposed_s, &f);
  jnum(out, "cp_exposed_s", b->cp_exposed_s, &f);
  jnum(out, "dp_exposed_s", b->dp_exposed_s, &f);
  jnum(out, "p2p_exposed_s", b->p2p_exposed_s, &f);
  jnum(out, "bubble_s", b->bubble_s, &f);
  jnum(out, "optimizer_s", b->optimizer_s, &f);
  fputs("\n  },\n  \"throughput\": {", out);
  f = 1;
  jnum(out, "tokens_per_iteration", r->tokens_per_iteration, &f);
  jnum(out, "tokens_per_s", r->tokens_per_s, &f);
  jnum(out, "model_flops_per_iteration", r->model_flops, &f);
  jnum(out, "hardware_flops_per_iteration", r->hardware_flops, &f);
  jnum(out, "model_tflops_per_gpu", r->model_tflops_per_gpu, &f);
  jnum(out, "hardware_tflops_per_gpu", r->hardware_tflops_per_gpu, &f);
  jnum(out, "peak_flops_per_s", r->peak_flops_per_s, &f);
  jnum(out, "mfu", r->mfu, &f);
  jnum(out, "hfu", r->hfu, &f);
  fputs("\n  },\n  \"memory_per_gpu\": {", out);
  f = 1;
  jnum(out, "weights_bytes", r->memory.weights_bytes, &f);
  jnum(out, "grads_bytes", r->memory.grads_bytes, &f);
  jnum(out, "optimizer_bytes", r->memory.optimizer_bytes, &f);
  jnum(out, "activations_bytes", r->memory.activations_bytes, &f);
  jnum(out, "other_bytes", r->memory.other_bytes, &f);
  jnum(out, "workspace_bytes", r->memory.workspace_bytes, &f);
  jnum(out, "fragmentation_bytes", r->memory.fragmentation_bytes, &f);
  jnum(out, "context_bytes", r->memory.context_bytes, &f);
  jnum(out, "comm_bytes", r->memory.comm_bytes, &f);
  jkey(out, "communicators", &f);
  fprintf(out, "%u", r->memory.communicators);
  jnum(out, "total_bytes", r->memory.total_bytes, &f);
  jnum(out, "capacity_bytes", r->memory.capacity_bytes, &f);
  /* what is left (negative: missing); 0 with no capacity stated */
  jnum(out, "headroom_bytes",
       r->memory.capacity_bytes > 0 ? r->memory.capacity_bytes - r->memory.total_bytes : 0.0, &f);
  jnum(out, "refuse_margin", SC_MEMORY_REFUSE_MARGIN, &f);
  const int cap = r->memory.capacity_bytes > 0;
  jbool_if(out, "fits", cap, r->memory.total_bytes <= r->memory.capacity_bytes, &f);
  jbool_if(out, "refused", cap,
           sc_memory_refused(r->memory.total_bytes, r->memory.capacity_bytes), &f);
  fputs("\n  },\n  \"training\": {", out);
  f = 1;
  const int budget = r->token_budget > 0;
  jnum(out, "token_budget", r->token_budget, &f);
  jnum_if(out, "time_to_train_s", budget, r->time_to_train_s, &f);
  jnum_if(out, "gpu_hours", budget, r->gpu_hours, &f);
  jnum(out, "board_power_w", r->board_power_w, &f);
  jnum(out, "power_fraction", r->power_fraction, &f);
  jnum(out, "pue", r->pue, &f);
  jnum_if(out, "energy_j", budget && r->board_power_w > 0, r->energy_j, &f);
  jnum(out, "price_per_gpu_hour", r->price_per_gpu_hour, &f);
  jnum_if(out, "cost", budget && r->price_per_gpu_hour > 0, r->cost, &f);
  fputs("\n  }\n}\n", out);
  return sc__io_status(out, "json", err);
}

/* ------------------------------------------------------------------------- */
/* CSV                                                                       */

static const char *const csv_cols[] = {
    "schema_version", "model", "topology", "hardware", "estimator", "gpus", "tp", "pp", "dp",
    "cp", "micro_batch", "global_batch", "microbatches", "seq_len", "schedule",
    "virtual_stages", "recompute", "sequence_parallel", "distributed_optimizer", "zero_stage",
    "shard_ranks", "flash_attention", "dtype", "overlap_grad_reduce", "overlap_param_gather",
    "overlap_tp_comm", "iteration_s", "critical_stage", "compute_forward_s",
    "compute_recompute_s", "compute_backward_s", "tp_exposed_s", "cp_exposed_s",
    "dp_exposed_s", "p2p_exposed_s", "bubble_s", "optimizer_s", "compute_by_family",
    "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu",
    "memory_total_bytes", "memory_weights_bytes", "memory_grads_bytes",
    "memory_optimizer_bytes", "memory_activations_bytes", "memory_other_bytes",
    "memory_capacity_bytes", "token_budget", "time_to_train_s", "memory_workspace_bytes",
    "memory_fragmentation_bytes", "memory_context_bytes", "memory_comm_bytes", "ep", "etp"};

size_t sc_report_csv_columns(void) { return sizeof csv_cols / sizeof csv_cols[0]; }

int sc_report_csv_header(FILE *out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "report: csv: out is NULL");
  for (size_t i = 0; i < sc_report_csv_columns(); i++)
    fprintf(out, "%s%s", i ? "," : "", csv_cols[i]);
  fputc('\n', out);
  return sc__io_status(out, "csv", err);
}

static void csv_str(FILE *out, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static void csv_num(FILE *out, double v) {
  if (isfinite(v)) fprintf(out, "%.12g", v);
}

int sc_report_csv_row(FILE *out, const sc_result *r, sc_error *err) {
  int rc = check_args(out, r, "csv", err);
  if (rc) return rc;
  const sc_parallel *p = &r->parallel;
  const sc_sched_breakdown *b = &r->breakdown;
  size_t ncol = 0;
#define C_SEP() (ncol++ ? (void)fputc(',', out) : (void)0)
#define C_U(v) (C_SEP(), (void)fprintf(out, "%llu", (unsigned long long)(v)))
#define C_D(v) (C_SEP(), csv_num(out, (v)))
#define C_S(v) (C_SEP(), csv_str(out, (v)))
  C_U(SC_REPORT_SCHEMA_VERSION);
  C_S(r->model);
  C_S(r->topology);
  C_S(r->hardware);
  C_S(r->estimator);
  C_U(r->gpus);
  C_U(p->tp);
  C_U(p->pp);
  C_U(p->dp);
  C_U(p->cp);
  C_U(p->micro_batch);
  C_U(p->global_batch);
  C_U(r->microbatches);
  C_U(p->seq_len);
  C_S(sc_schedule_kind_name(p->schedule));
  C_U(p->virtual_stages);
  C_S(sc_recompute_name(p->recompute));
  C_U(p->sequence_parallel != 0);
  C_U(p->distributed_optimizer != 0);
  C_U(sc_parallel_zero(p));
  C_U(sc_parallel_shard_ranks(p));
  C_U(p->flash_attention != 0);
  C_S(sc_dtype_name(p->dtype));
  C_U(p->overlap_grad_reduce != 0);
  C_U(p->overlap_param_gather != 0);
  C_U(p->overlap_tp_comm != 0);
  C_D(r->iteration_s);
  C_U(b->stage);
  C_D(b->compute_fwd_s);
  C_D(b->compute_recompute_s);
  C_D(b->compute_bwd_s);
  C_D(b->tp_exposed_s);
  C_D(b->cp_exposed_s);
  C_D(b->dp_exposed_s);
  C_D(b->p2p_exposed_s);
  C_D(b->bubble_s);
  C_D(b->optimizer_s);
  {
    char fam[SC_SCHED_MAX_FAMILIES * (SC_SCHED_FAMILY_NAME_MAX + 32)];
    size_t o = 0;
    fam[0] = '\0';
    for (uint32_t i = 0; i < b->nfamilies && i < SC_SCHED_MAX_FAMILIES; i++) {
      int w = snprintf(fam + o, sizeof fam - o, "%s%.31s=%.12g", i ? ";" : "",
                       b->family_names[i], b->family_s[i]);
      if (w < 0 || (size_t)w >= sizeof fam - o) break;
      o += (size_t)w;
    }
    C_S(fam);
  }
  C_D(r->tokens_per_s);
  C_D(r->model_tflops_per_gpu);
  C_D(r->hardware_tflops_per_gpu);
  C_D(r->mfu);
  C_D(r->hfu);
  C_D(r->memory.total_bytes);
  C_D(r->memory.weights_bytes);
  C_D(r->memory.grads_bytes);
  C_D(r->memory.optimizer_bytes);
  C_D(r->memory.activations_bytes);
  C_D(r->memory.other_bytes);
  C_D(r->memory.capacity_bytes);
  C_D(r->token_budget);
  C_D(r->time_to_train_s);
  C_D(r->memory.workspace_bytes);
  C_D(r->memory.fragmentation_bytes);
  C_D(r->memory.context_bytes);
  C_D(r->memory.comm_bytes);
  C_U(sc_parallel_ep(p));
  C_U(sc_parallel_etp(p));
#undef C_SEP
#undef C_U
#undef C_D
#undef C_S
  fputc('\n', out);
  if (ncol != sc_report_csv_columns())
    return sc_error_set(err, SC_EINVAL, "report: csv: wrote %zu columns, header has %zu (internal)",
                        ncol, sc_report_csv_columns());
  return sc__io_status(out, "csv", err);
}

int sc_report_csv(FILE *out, const sc_result *r, sc_error *err) {
  int rc = check_args(out, r, "csv", err);
  if (rc) return rc;
  if ((rc = sc_report_csv_header(out, err)) != SC_OK) return rc;
  return sc_report_csv_row(out, r, err);
}
