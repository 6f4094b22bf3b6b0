/* stepcast check FILE...: validate spec files and print what they say. */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "cli.h"
#include "stepcast/estimate.h"
#include "job.h"

static void check_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast check FILE...\n\n"
          "Validates model, hardware, topology and stack spec files (recognised by their\n"
          "top-level table: [model], [hardware], [topology] or [stack]; also [job] files\n"
          "and residual sets, DIR/residuals.toml) and prints what was understood; a\n"
          "hardware file's fitted residuals (hardware/<device>/residuals/) are checked with\n"
          "it.\n"
          "Exit status: 0 when every file is valid, 1 otherwise (one line\n"
          "'file:line:col: key 'x': problem' per bad file on stderr), 2 on usage errors.\n"
          "Schemas: docs/formats.md.\n");
}

static const char *const act_names[] = {"gelu", "swiglu", "relu", "squared_relu", "geglu"};
static const char *const norm_names[] = {"layernorm", "rmsnorm"};
static const char *const pos_names[] = {"learned", "rope", "alibi", "none"};

static void print_model(const sc_model *m) {
  printf("model %s (%s)\n", m->name, m->path);
  printf("  layers           %lld\n", (long long)m->layers);
  printf("  hidden           %lld\n", (long long)m->hidden);
  printf("  ffn_hidden       %lld\n", (long long)m->ffn_hidden);
  printf("  heads            %lld\n", (long long)m->heads);
  printf("  kv_heads         %lld\n", (long long)m->kv_heads);
  printf("  head_dim         %lld\n", (long long)m->head_dim);
  printf("  vocab            %lld\n", (long long)m->vocab);
  printf("  max_seq          %lld\n", (long long)m->max_seq);
  printf("  activation       %s\n", act_names[m->activation]);
  printf("  norm             %s\n", norm_names[m->norm]);
  printf("  position         %s\n", pos_names[m->position]);
  printf("  tied_embeddings  %s\n", m->tied_embeddings ? "true" : "false");
  printf("  linear_bias      %s\n", m->linear_bias ? "true" : "false");
  if (m->kv_lora_rank > 0) {
    printf("  q_lora_rank      %lld\n", (long long)m->q_lora_rank);
    printf("  kv_lora_rank     %lld\n", (long long)m->kv_lora_rank);
    printf("  qk_nope_head_dim %lld\n", (long long)m->qk_nope_head_dim);
    printf("  qk_rope_head_dim %lld\n", (long long)m->qk_rope_head_dim);
    printf("  v_head_dim       %lld\n", (long long)m->v_head_dim);
  }
  if (m->num_experts > 0) {
    printf("  num_experts      %lld\n", (long long)m->num_experts);
    printf("  shared_experts   %lld\n", (long long)m->shared_experts);
    printf("  top_k            %lld\n", (long long)m->top_k);
    printf("  expert_ffn_hidden %lld\n", (long long)m->expert_ffn_hidden);
    printf("  moe_layer_freq   %lld\n", (long long)m->moe_layer_freq);
    printf("  first_dense_layers %lld\n", (long long)m->first_dense_layers);
    printf("  moe_layers       %lld\n", (long long)sc_model_moe_layers(m, 0, m->layers));
    printf("  capacity_factor  %g%s\n", m->capacity_factor,
           m->capacity_factor > 0.0 ? "" : " (dropless)");
    printf("  moe_imbalance    %g\n", m->moe_imbalance);
  }
  printf("  params           %.1f B (%lld)\n", (double)m->params / 1e9, (long long)m->params);
  if (m->num_experts > 0)
    printf("  active params    %.1f B (%lld)\n", (double)m->active_params / 1e9,
           (long long)m->active_params);
}

/* One line per family of a per-kernel table of the device (kernel_rates, row_exposure):
 * "<what> <family>: <variant> <value x scale><unit>, ..." for the stated variants. */
static void print_kernel_table(const char *fam0, const double *val0, size_t stride,
                               const char *what, double scale, const char *unit) {
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES; i++) {
    const char *fam = fam0 + (size_t)i * stride;
    const double *v = (const double *)(const void *)((const char *)val0 + (size_t)i * stride);
    int n = 0;
    if (fam[0] == '\0') break;
    printf("  %-16s %s:", what, fam);
    for (int j = 0; j < SC_KERNEL_RATE_VARIANTS; j++)
      if (v[j] > 0) printf("%s %d %.4g%s", n++ ? "," : "", j, v[j] * scale, unit);
    printf("\n");
  }
}

static void print_device(const sc_device *d, const char *path) {
  printf("hardware %s (%s), kind %s\n", d->name, path, d->kind);
  for (int i = 0; i < SC_DTYPE_COUNT; i++) {
    if (d->peak_flops_per_s[i] > 0) {
      printf("  peak %-5s       %.1f TFLOP/s\n", sc_dtype_name((sc_dtype)i), d->peak_flops_per_s[i] / 1e12);
    } else {
      printf("  peak %-5s       unsupported\n", sc_dtype_name((sc_dtype)i));
    }
  }
  printf("  memory           %.1f GB\n", d->mem_bytes / 1e9);
  printf("  bandwidth        %.1f GB/s\n", d->mem_bw_Bps / 1e9);
  printf("  l2               %.1f MB\n", d->l2_bytes / 1e6);
  printf("  compute units    %u\n", d->compute_units);
  printf("  flops efficiency %.3f\n", d->flops_efficiency);
  for (int i = 0; i < SC_DTYPE_COUNT; i++) {
    if (d->matmul_efficiency[i] > 0)
      printf("    matmul %-5s    %.3f\n", sc_dtype_name((sc_dtype)i), d->matmul_efficiency[i]);
  }
  if (d->attention_fwd_efficiency > 0)
    printf("  attention fwd    %.3f\n", d->attention_fwd_efficiency);
  if (d->attention_bwd_efficiency > 0)
    printf("  attention bwd    %.3f\n", d->attention_bwd_efficiency);
  if (d->attention_block_q > 0 || d->attention_block_k > 0)
    printf("  attention tile   %u query rows x %u keys\n",
           d->attention_block_q > 0 ? d->attention_block_q : 1u,
           d->attention_block_k > 0 ? d->attention_block_k : 1u);
  if (d->vector_flops_per_s > 0)
    printf("  vector kernels   %.2f GFLOP/s\n", d->vector_flops_per_s / 1e9);
  if (d->cache_bw_Bps > 0)
    printf("  cache bandwidth  %.1f GB/s\n", d->cache_bw_Bps / 1e9);
  if (d->rmw_bw_Bps > 0)
    printf("  in-place rate    %.1f GB/s\n", d->rmw_bw_Bps / 1e9);
  printf("  mem efficiency   %.3f\n", d->mem_efficiency);
  printf("  launch           %.2f us\n", d->launch_s * 1e6);
  printf("  tile             %ux%ux%u\n", d->tile_m, d->tile_n, d->tile_k);
  if (d->write_allocate) printf("  write allocate   yes\n");
  if (d->l1_bytes > 0) printf("  l1               %.1f KB\n", d->l1_bytes / 1e3);
  if (d->gemm_exposed_bw_Bps > 0)
    printf("  gemm exposed     %.2f GB/s, half at %.2f MB\n", d->gemm_exposed_bw_Bps / 1e9,
           d->gemm_exposed_knee_bytes / 1e6);
  if (d->cache_miss_points > 0) {
    printf("  %-16s (MB: share at the DRAM rate):", "cache miss");
    for (uint32_t j = 0; j < d->cache_miss_points && j < SC_CACHE_CURVE_POINTS; j++)
      printf("%s %.3g %.3f", j ? "," : "", d->cache_miss_ws_bytes[j] / 1e6,
             d->cache_miss_share[j]);
    printf("\n");
  }
  if (d->fill_points > 0) {
    printf("  %-16s (MB: GB/s):", "zero-fill");
    for (uint32_t j = 0; j < d->fill_points && j < SC_CACHE_CURVE_POINTS; j++)
      printf("%s %.3g %.1f", j ? "," : "", d->fill_bytes[j] / 1e6, d->fill_bw_Bps[j] / 1e9);
    printf("\n");
  }
  if (d->fill_cold_points > 0) {
    printf("  %-16s (MB: GB/s):", "cold zero-fill");
    for (uint32_t j = 0; j < d->fill_cold_points && j < SC_CACHE_CURVE_POINTS; j++)
      printf("%s %.3g %.1f", j ? "," : "", d->fill_cold_bytes[j] / 1e6,
             d->fill_cold_bw_Bps[j] / 1e9);
    printf("\n");
  }
  if (d->gather_points > 0) {
    printf("  %-16s (MB: ns per row):", "gather rows");
    for (uint32_t j = 0; j < d->gather_points && j < SC_CACHE_CURVE_POINTS; j++)
      printf("%s %.3g %.1f", j ? "," : "", d->gather_ws_bytes[j] / 1e6, d->gather_row_s[j] * 1e9);
    printf("\n");
  }
  print_kernel_table(d->kernel_rates[0].family, d->kernel_rates[0].flops_per_s,
                     sizeof d->kernel_rates[0], "kernel rate", 1e-9, " GFLOP/s");
  print_kernel_table(d->row_exposure[0].family, d->row_exposure[0].multiple,
                     sizeof d->row_exposure[0], "row exposure", 1.0, "");
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES && d->row_rate[i].family[0] != '\0'; i++) {
    for (int v = 0; v < SC_KERNEL_RATE_VARIANTS; v++) {
      const double *m = d->row_rate[i].multiple[v];
      int any = 0;
      for (int w = 0; w < SC_ROW_RATE_WIDTHS; w++) any |= m[w] > 0;
      if (!any) continue;
      printf("  %-16s %s.%d (columns: x the kernel rate):", "row rate", d->row_rate[i].family,
             v);
      for (int w = 0, n = 0; w < SC_ROW_RATE_WIDTHS; w++)
        if (m[w] > 0)
          printf("%s %.0f %.3f", n++ ? "," : "", SC_ROW_RATE_COLS0 * (double)(1 << w), m[w]);
      printf("\n");
    }
  }
}

static void print_topology(const sc_topology *t) {
  printf("topology %s (%s)\n", t->name, t->path);
  printf("  hardware         %s\n", t->hardware);
  printf("  gpus per node    %u\n", t->gpus_per_node);
  printf("  nics per node    %u\n", t->nics_per_node);
  if (t->max_gpus) {
    printf("  nodes            %u (%u GPUs)\n", t->max_gpus / t->gpus_per_node, t->max_gpus);
  } else {
    printf("  nodes            unbounded\n");
  }
  for (uint32_t i = 0; i < t->ntiers; i++) {
    const sc_tier *r = &t->tiers[i];
    char scope[32];
    if (r->scope_gpus) snprintf(scope, sizeof scope, "%u GPUs", r->scope_gpus);
    else snprintf(scope, sizeof scope, "all GPUs");
    printf("  tier %u %-10s scope %-10s bw %.1f GB/s  latency %.2f us  oversubscription %.2f%s",
           i, r->name, scope, r->bw_Bps / 1e9, r->latency_s * 1e6, r->oversubscription,
           r->nvls ? "  nvls" : "");
    if (r->efficiency > 0) printf("  efficiency %.3f", r->efficiency);
    if (r->p2p_efficiency > 0) printf("  p2p efficiency %.3f", r->p2p_efficiency);
    if (r->pair_bw_Bps > 0) printf("  pair %.1f GB/s", r->pair_bw_Bps / 1e9);
    printf("\n");
  }
}

/* A job file (predict --job), beside the three spec kinds. */
#define CHECK_JOB 100
#define CHECK_RESIDUALS 101

/* A residual set (dir/residuals.toml and the tree files it names), loaded and checked
 * against the operator plugins' features and, where dev is not NULL (the hardware file the
 * set sits beside), that device's name and the roofline its models were fitted against;
 * what it holds is printed. */
static int check_residuals(sc_registry *reg, const char *dir, const sc_device *dev,
                           sc_error *err) {
  sc_residuals *r = NULL;
  int rc = sc_residuals_load(dir, &r, err);
  if (rc == SC_OK) rc = sc_residuals_check(r, dev ? dev->name : NULL, reg, err);
  if (rc == SC_OK && dev != NULL) rc = sc_residuals_check_roofline(r, reg, dev, err);
  if (rc == SC_OK) {
    size_t active = 0;
    for (size_t i = 0; i < r->n; i++) active += r->models[i].active != 0;
    printf("residuals %s (device %s%s%s): %zu models, %zu active\n", dir, r->device,
           r->stack[0] ? ", stack " : "", r->stack, r->n, active);
    for (size_t i = 0; i < r->n; i++) {
      const sc_resid_model *m = &r->models[i];
      if (!m->active) continue;
      printf("  %-16s %-7s %-6s", m->family, sc_resid_target_name(m->target),
             sc_resid_kind_name(m->kind));
      if (m->dom_hi > 0)
        printf(" analytical %.3g to %.3g s, beyond: %s", m->dom_lo, m->dom_hi,
               m->beyond ? "analytical" : "model");
      else
        printf(" used everywhere");
      printf("\n");
    }
  }
  sc_residuals_free(r);
  return rc;
}

/* A job file: its keys, the model and topology it names loading, the degrees derived. */
/* A job file: what it names must load as predict loads it (model, topology, the hardware,
 * the stack, the residual sets its estimator uses), and its parallel layout must hold. */
static int check_job(const char *path, sc_registry **reg, sc_error *err) {
  sc_cli_job j;
  sc_model m;
  sc_topology t;
  sc_device d;
  sc_residuals *ops = NULL, *coll = NULL;
  const char *hw;
  int rc;
  sc_cli_job_init(&j);
  if ((rc = sc_cli_job_load(&j, path, err)) != SC_OK) return rc;
  if (j.model[0] == '\0' || j.topology[0] == '\0')
    return sc_error_set(err, SC_ESPEC, "%s: [job] needs 'model' and 'topology'", path);
  if ((rc = sc_model_load(j.model, &m, err)) != SC_OK)
    return sc_cli_job_blame(&j, SC_CLI_JOB_MODEL, err);
  if ((rc = sc_topology_load(j.topology, &t, err)) != SC_OK)
    return sc_cli_job_blame(&j, SC_CLI_JOB_TOPOLOGY, err);
  char st_name[64] = "";
  if (j.stack[0] != '\0') { /* a stack the job names must load too */
    sc_stack st;
    if ((rc = sc_stack_load(j.stack, &st, err)) != SC_OK)
      return sc_cli_job_blame(&j, SC_CLI_JOB_STACK, err);
    snprintf(st_name, sizeof st_name, "%s", st.name);
  }
  if ((rc = sc_cli_job_finish(&j, &m, err)) != SC_OK) {
    char msg[SC_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return sc_error_set(err, rc, "%s: %s", path, msg);
  }
  if (*reg == NULL && (rc = sc_cli_registry_open(reg, err)) != SC_OK) return rc;
  hw = j.hardware[0] ? j.hardware : t.hardware;
  if ((rc = sc_hardware_load(*reg, hw, &d, err)) != SC_OK)
    return j.hardware[0] ? sc_cli_job_blame(&j, SC_CLI_JOB_HARDWARE, err) : rc;
  if ((rc = sc_cli_job_residuals(&j, hw, &t, &d, *reg, j.stack[0] ? st_name : NULL, &ops, &coll,
                                 err)) != SC_OK)
    return rc;
  printf("job (%s)\n  model            %s\n  topology         %s\n", path, m.name, t.name);
  printf("  hardware         %s\n", d.name);
  printf("  gpus             %u = tp %u x pp %u x dp %u x cp %u\n", j.gpus, j.par.tp, j.par.pp,
         j.par.dp, j.par.cp);
  printf("  batch            micro %u, global %u, seq %u, %s\n", j.par.micro_batch,
         j.par.global_batch, j.par.seq_len, sc_dtype_name(j.par.dtype));
  printf("  schedule         %s, virtual stages %u, recompute %s\n",
         sc_cli_schedule_name(j.par.schedule), j.par.virtual_stages,
         sc_recompute_name(j.par.recompute));
  printf("  estimator        %s", sc_estimator_name(j.opts.estimator));
  if (ops != NULL) printf(", operator residuals %s", j.residuals[0] ? j.residuals : "of the device");
  if (coll != NULL) printf(", collective residuals of the topology");
  if (j.estimator_source[0] != '\0') printf(" (%s)", j.estimator_source);
  printf("\n");
  sc_residuals_free(ops);
  sc_residuals_free(coll);
  return SC_OK;
}

/* A stack's rules, one a line: "family: value" or "family.variant: value", then unit. */
static void print_stack_rules(const char *what, const char *unit, const sc_stack_rule *r,
                              uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    char name[48];
    if (r[i].variant < 0) snprintf(name, sizeof name, "%s", r[i].family);
    else snprintf(name, sizeof name, "%s.%d", r[i].family, (int)r[i].variant);
    printf("  %-16s %s: %g%s\n", what, name, r[i].value, unit);
  }
}

static void print_stack(const sc_stack *s) {
  printf("stack %s (%s)\n", s->name, s->path);
  printf("  host per kernel  %.2f us\n", s->host_per_kernel_s * 1e6);
  if (s->vocab_divisible_by)
    printf("  vocabulary       padded to a multiple of %u (times tp)\n", s->vocab_divisible_by);
  printf("  pipeline sends   %s\n", s->p2p_blocking ? "blocking" : "beside the compute");
  if (s->overlap_grad_reduce || s->overlap_param_gather || s->overlap_tp_comm)
    printf("  overlap          %s%s%s (unless a job states otherwise)\n",
           s->overlap_grad_reduce ? "gradient reduction" : "",
           s->overlap_param_gather ? (s->overlap_grad_reduce ? ", parameter gather"
                                                             : "parameter gather") : "",
           s->overlap_tp_comm ? ((s->overlap_grad_reduce || s->overlap_param_gather)
                                     ? ", TP communication" : "TP communication") : "");
  print_stack_rules("kernels", "", s->kernels, s->nkernels);
  print_stack_rules("traffic", "x", s->traffic, s->ntraffic);
  for (uint32_t i = 0; i < s->nattention; i++) {
    const sc_stack_attention *a = &s->attention[i];
    if (a->n == 1) {
      printf("  attention        on %s: forward %.3f, backward %.3f of peak\n", a->device,
             a->fwd[0], a->bwd[0]);
      continue;
    }
    for (uint32_t k = 0; k < a->n; k++)
      printf("  attention        on %s, head dim %g: forward %.3f, backward %.3f of peak\n",
             a->device, a->head_dim[k], a->fwd[k], a->bwd[k]);
  }
}

/* Which spec a file is (sc_spec_file_kind); -1 with err set when none. */
static int detect_kind(const char *path, sc_error *err) {
  const char *k = sc_spec_file_kind(path, err);
  if (k == NULL) return -1;
  if (strcmp(k, "residuals") == 0) return CHECK_RESIDUALS;
  if (strcmp(k, "model") == 0) return SC_SPEC_MODEL;
  if (strcmp(k, "hardware") == 0) return SC_SPEC_HARDWARE;
  if (strcmp(k, "topology") == 0) return SC_SPEC_TOPOLOGY;
  if (strcmp(k, "job") == 0) return CHECK_JOB;
  return SC_SPEC_STACK;
}

int sc_cli_check(int argc, char **argv) {
  sc_registry *reg = NULL;
  int nfiles = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      check_usage(stdout);
      return 0;
    }
    if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return sc_cli_usage_error("check", "unknown option '%s'", argv[i]);
    }
    nfiles++;
  }
  if (nfiles == 0) return sc_cli_usage_error("check", "no FILE given");
  for (int i = 1; i < argc; i++) {
    sc_error err;
    int kind, rc = SC_OK;
    const char *path = argv[i];
    sc_error_clear(&err);
    kind = detect_kind(path, &err);
    if (kind == SC_SPEC_MODEL) {
      sc_model m;
      rc = sc_model_load(path, &m, &err);
      if (rc == SC_OK) print_model(&m);
    } else if (kind == SC_SPEC_TOPOLOGY) {
      sc_topology t;
      rc = sc_topology_load(path, &t, &err);
      if (rc == SC_OK) print_topology(&t);
    } else if (kind == SC_SPEC_STACK) {
      sc_stack st;
      rc = sc_stack_load(path, &st, &err);
      if (rc == SC_OK) print_stack(&st);
    } else if (kind == CHECK_JOB) {
      rc = check_job(path, &reg, &err);
    } else if (kind == SC_SPEC_HARDWARE) {
      sc_device d;
      if (reg == NULL) {
        rc = sc_cli_registry_open(&reg, &err);
      }
      if (rc == SC_OK) rc = sc_hardware_load(reg, path, &d, &err);
      if (rc == SC_OK) print_device(&d, path);
      if (rc == SC_OK) { /* its fitted residuals, where there are some */
        char dir[SC_PATH_MAX + 80], man[SC_PATH_MAX + 100];
        struct stat st;
        rc = sc_residuals_dir(path, d.name, dir, sizeof dir, &err);
        snprintf(man, sizeof man, "%s/residuals.toml", dir);
        if (rc == SC_OK && stat(man, &st) == 0) rc = check_residuals(reg, dir, &d, &err);
      }
    } else if (kind == CHECK_RESIDUALS) {
      const char *slash = strrchr(path, '/');
      char dir[SC_PATH_MAX];
      if (strcmp(slash ? slash + 1 : path, "residuals.toml") != 0) {
        rc = sc_error_set(&err, SC_EINVAL, "%s: a residual set is checked as its folder's "
                          "residuals.toml (the file that names its models)", path);
      } else {
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        if (reg == NULL) rc = sc_cli_registry_open(&reg, &err);
        if (rc == SC_OK) rc = check_residuals(reg, dir, NULL, &err);
      }
    } else {
      rc = err.code != SC_OK ? err.code : SC_ESPEC;
    }
    if (rc != SC_OK) {
      sc_cli_eprintf("%s", err.msg[0] ? err.msg : sc_strerror(rc));
      bad++;
    }
    fflush(stdout);
  }
  sc_registry_free(reg);
  return bad ? 1 : 0;
}
