/*
 * The `cpu` hardware plugin: the host CPU as a device.
 *
 * describe() turns a hardware file with kind = "cpu" (hardware/host-cpu.toml) into an
 * sc_device. Its figures are measured, not published: peak_flops_per_s.fp32 is the rate a
 * large cblas_sgemm achieves, mem_bw_Bps the STREAM-Add rate, launch_s the time of the
 * smallest kernel call, vector_flops_per_s (optional) the rate of the C kernels of the vector
 * families (a cache-resident layer-norm forward, in the norm plugin's FLOP count);
 * `stepcast sample` measures all four and writes them into the header
 * of its samples file (docs/learned.md). A CPU has no tensor-core tile; compute_units is the
 * number of BLAS threads the figures were measured with (key `threads`).
 *
 * measure() times one operator on this machine with the fp32 kernels of cpu_kernels.h (the
 * same code tests/bench/train_step.c trains with): GEMM through OpenBLAS, C kernels for the
 * norm, softmax, elementwise, attention, optimizer, embedding and cross-entropy families. Buffers are allocated and
 * filled once, one warm-up call runs, then each timed sample repeats the call enough times to
 * last at least 20 µs (so that clock resolution does not matter) and reports the time per
 * call; samples are taken until min_reps are done and budget_s is spent (at most 255). A
 * cold operator (op->flags & SC_OP_COLD) is timed one call per sample, each after reading an
 * eviction buffer of twice the device's last-level cache (l2_bytes; 32 to 512 MiB), untimed:
 * its buffers then come from memory, clean, as a training step leaves its parameters.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stepcast/ops.h"
#include "stepcast/plugin.h"

#include "cpu_kernels.h"
#include "hw_common.h"

/* OpenBLAS's own controls (declared in its cblas.h; repeated for other CBLAS headers). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

static const char *const cpu_keys[] = {"name", "kind", "cpu_model", "mem_bytes", "mem_bw_Bps",
                                       "l2_bytes", "threads", "flops_efficiency",
                                       "mem_efficiency", "launch_s", "peak_flops_per_s",
                                       "vector_flops_per_s", "attention_fwd_efficiency",
                                       "attention_bwd_efficiency", "cache_bw_Bps",
                                       "kernel_flops_per_s", "write_allocate", "l1_bytes",
                                       "row_exposure", "row_rate", "gemm_exposed_bw_Bps",
                                       "gemm_exposed_knee_bytes", "cache_miss_share",
                                       "attention_block_q", "attention_block_k", "fill_bw_Bps",
                                       "rmw_bw_Bps", "gather_row_s", "fill_cold_bw_Bps",
                                       NULL};

#define CPU_MAX_BYTES (1.5 * 1024 * 1024 * 1024) /* largest working set measure() accepts */
#define CPU_MAX_SAMPLES 255
#define CPU_MIN_SAMPLE_S 20e-6

static int cpu_describe(void *state, const sc_host *host, const sc_table *file, sc_device *dev,
                        sc_error *err) {
  const sc_table *t = NULL, *peak = NULL;
  double v = 0;
  int rc;
  (void)state;
  if ((rc = sc__hw_open(host, file, "cpu", cpu_keys, dev, &t, err)) != SC_OK) return rc;
  if ((rc = sc__hw_number(host, t, "", "mem_bytes", 1, 0, &dev->mem_bytes, err)) != SC_OK) return rc;
  if ((rc = sc__hw_number(host, t, "", "mem_bw_Bps", 1, 0, &dev->mem_bw_Bps, err)) != SC_OK) return rc;
  if ((rc = sc__hw_number(host, t, "", "l2_bytes", 1, 0, &dev->l2_bytes, err)) != SC_OK) return rc;
  if ((rc = sc__hw_number(host, t, "", "threads", 1, 0, &v, err)) != SC_OK) return rc;
  if (!(v >= 1 && v <= 4096 && v == floor(v))) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'threads': must be a whole number in "
                          "[1, 4096] (is %g)", host->table_where(t, "threads"), v);
  }
  dev->compute_units = (uint32_t)v;
  if ((rc = sc__hw_fraction(host, t, "flops_efficiency", &dev->flops_efficiency, err)) != SC_OK) return rc;
  if ((rc = sc__hw_fraction(host, t, "mem_efficiency", &dev->mem_efficiency, err)) != SC_OK) return rc;
  if ((rc = sc__hw_opt_number(host, t, "launch_s", 1, &dev->launch_s, err)) != SC_OK) return rc;
  rc = host->table_table(t, "peak_flops_per_s", &peak, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC,
                          "%s: key 'peak_flops_per_s': missing required table in [hardware]",
                          host->table_where(t, NULL));
  }
  if (rc != SC_OK) return rc;
  {
    static const char *const fp32_only[] = {"fp32", NULL};
    if ((rc = sc__hw_check_keys(host, peak, "peak_flops_per_s.", fp32_only, err)) != SC_OK)
      return rc;
  }
  rc = sc__hw_number(host, peak, "peak_flops_per_s.", "fp32", 1, 0,
                  &dev->peak_flops_per_s[SC_DTYPE_FP32], err);
  if (rc != SC_OK) return rc;
  /* absent: 0, the vector kernels at the fp32 peak, no cache rate */
  if ((rc = sc__hw_opt_number(host, t, "vector_flops_per_s", 0, &dev->vector_flops_per_s,
                              err)) != SC_OK ||
      (rc = sc__hw_opt_number(host, t, "cache_bw_Bps", 0, &dev->cache_bw_Bps, err)) != SC_OK)
    return rc;
  /* absent: 0, in-place traffic at 4/3 of mem_bw_Bps on a write-allocate device */
  if ((rc = sc__hw_opt_number(host, t, "rmw_bw_Bps", 0, &dev->rmw_bw_Bps, err)) != SC_OK)
    return rc;
  /* The attention kernel's fraction of the fp32 peak (the sgemm rate), forward and backward,
   * as for a GPU (no flops_efficiency_by_dtype on a CPU: its one peak is measured). */
  if ((rc = sc__hw_attention_efficiencies(host, t, dev, err)) != SC_OK) return rc;
  /* The rate of each vector kernel on a cache-resident shape ([hardware.kernel_flops_per_s];
   * vector_flops_per_s stands for the kernels without one). */
  if ((rc = sc__hw_kernel_rates(host, t, dev, err)) != SC_OK) return rc;
  /* Write-allocate caches, with mem_bw_Bps as STREAM Add's count (docs/operators.md). */
  rc = host->table_bool(t, "write_allocate", &dev->write_allocate, err);
  if (rc == SC_ENOTFOUND) dev->write_allocate = 0;
  else if (rc != SC_OK) return rc;
  /* The L1 data cache and the row kernels' exposed share past it (docs/operators.md). */
  if ((rc = sc__hw_row_exposure(host, t, dev, err)) != SC_OK) return rc;
  /* The row kernels' rate by row width, of their stated rate (docs/operators.md). */
  if ((rc = sc__hw_row_rate(host, t, dev, err)) != SC_OK) return rc;
  /* The GEMM's operand traffic that the BLAS does not overlap (docs/operators.md). */
  if ((rc = sc__hw_gemm_exposure(host, t, dev, err)) != SC_OK) return rc;
  /* The measured share of traffic that misses the caches, by working set. */
  if ((rc = sc__hw_cache_miss_share(host, t, dev, err)) != SC_OK) return rc;
  /* The measured zero-fill rate, by buffer size. */
  if ((rc = sc__hw_fill_bw(host, t, dev, 0, err)) != SC_OK) return rc;
  /* ... and of a cold buffer. */
  if ((rc = sc__hw_fill_bw(host, t, dev, 1, err)) != SC_OK) return rc;
  /* The measured time per row of a gather past its roofline, by working set. */
  if ((rc = sc__hw_gather_row(host, t, dev, err)) != SC_OK) return rc;
  return SC_OK; /* tile_m/n/k = 0: no tile quantisation on a CPU */
}

/* ---- measurement -------------------------------------------------------------------- */

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Buffers of one operator instance. */
typedef struct cpu_bufs {
  float *f[10];
  size_t nf[10];
  uint8_t *mask;
  void *raw[11]; /* the blocks behind f[] and mask (sc__cpu_buf_alloc) */
  sc_op_desc op;
  int64_t nbias;
} cpu_bufs;

static void cpu_fill(float *p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = 0; i < n; i++) {
    float u = (float)sc__cpu_hash(seed, i) * (1.0f / 4294967296.0f);
    p[i] = lo + (hi - lo) * u;
  }
}

static void cpu_bufs_free(cpu_bufs *b) {
  for (int i = 0; i < 11; i++) free(b->raw[i]);
}

static void cpu_run(cpu_bufs *b);

/* Allocate (and fill) the float buffers of sizes n[0..count); SC_ELIMIT / SC_ENOMEM. */
static int cpu_alloc(cpu_bufs *b, const double *n, int count, double mask_bytes, sc_error *err) {
  double total = mask_bytes;
  for (int i = 0; i < count; i++) total += 4.0 * n[i];
  if (total > CPU_MAX_BYTES) {
    return sc_plugin_fail(err, SC_ELIMIT, "cpu: %s needs %.2f GiB of buffers, more than the "
                          "%.1f GiB measure() allows", b->op.family, total / 1073741824.0,
                          CPU_MAX_BYTES / 1073741824.0);
  }
  for (int i = 0; i < count; i++) {
    b->nf[i] = (size_t)n[i] > 0 ? (size_t)n[i] : 1;
    b->f[i] = sc__cpu_buf_alloc(b->nf[i] * sizeof(float), (unsigned)i, &b->raw[i]);
    if (b->f[i] == NULL) return sc_plugin_fail(err, SC_ENOMEM, "cpu: out of memory");
    cpu_fill(b->f[i], b->nf[i], 0x5eedull + (uint64_t)i, -1.0f, 1.0f);
  }
  if (mask_bytes > 0) {
    b->mask = sc__cpu_buf_alloc((size_t)mask_bytes, 10, &b->raw[10]);
    if (b->mask == NULL) return sc_plugin_fail(err, SC_ENOMEM, "cpu: out of memory");
    memset(b->mask, 0, (size_t)mask_bytes);
  }
  return SC_OK;
}

static int cpu_setup(cpu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const char *fam = b->op.family;
  if (strcmp(fam, SC_OP_GEMM) == 0) {
    double n[3] = {(double)d[0] * d[1] * d[3], (double)d[0] * d[3] * d[2],
                   (double)d[0] * d[1] * d[2]};
    return cpu_alloc(b, n, 3, 0, err);
  }
  if (strcmp(fam, SC_OP_ATTENTION) == 0) {
    double q = (double)d[0] * d[1] * d[3] * d[5], kv = (double)d[0] * d[2] * d[4] * d[5];
    double n[10] = {q, kv, kv, q, (double)d[0] * d[1] * d[3],
                    (double)sc__cpu_attn_scratch_floats(d[4]), q, q, kv, kv};
    int bwd = b->op.variant == SC_ATTN_FLASH_BWD;
    int rc;
    if (d[1] % d[2] != 0)
      return sc_plugin_fail(err, SC_EINVAL, "cpu: attention: kv_heads (%lld) must divide heads "
                            "(%lld)", (long long)d[2], (long long)d[1]);
    if (d[3] > d[4])
      return sc_plugin_fail(err, SC_EINVAL, "cpu: attention: seq_q (%lld) must be <= seq_k "
                            "(%lld)", (long long)d[3], (long long)d[4]);
    rc = cpu_alloc(b, n, bwd ? 10 : 6, 0, err);
    if (rc == SC_OK && bwd) { /* O and lse of a real forward */
      sc__cpu_attn_fwd(d[0], d[1], d[2], d[3], d[4], d[5], (int)d[6], b->f[0], b->f[1],
                       b->f[2], b->f[3], b->f[4], b->f[5]);
    }
    return rc;
  }
  if (strcmp(fam, SC_OP_NORM) == 0) {
    double nn = (double)d[0] * d[1];
    double n[9] = {nn, nn, nn, (double)d[1], (double)d[1], (double)d[1], (double)d[1],
                   (double)d[0], (double)d[0]};
    int rc = cpu_alloc(b, n, 9, 0, err);
    if (rc == SC_OK) { /* statistics of a real forward for the backward */
      sc__cpu_layernorm_fwd(d[0], d[1], b->f[0], b->f[3], b->f[4], b->f[1], b->f[7], b->f[8]);
    }
    return rc;
  }
  if (strcmp(fam, SC_OP_SOFTMAX) == 0) {
    double nn = (double)d[0] * d[1];
    double n[3] = {nn, nn, nn};
    int rc = cpu_alloc(b, n, 3, 0, err);
    if (rc == SC_OK) sc__cpu_softmax_fwd(d[0], d[1], 0.125f, b->f[0], b->f[1]);
    return rc;
  }
  if (strcmp(fam, SC_OP_ELEMENTWISE) == 0) {
    double nn = (double)d[0];
    double n[7] = {nn, nn, nn, nn, 4096, 4096, nn};
    int rc;
    b->nbias = d[0] < 4096 ? d[0] : 4096;
    rc = cpu_alloc(b, n, 7, nn, err);
    if (rc == SC_OK) {
      for (int64_t i = 0; i < d[0]; i++) b->mask[i] = (uint8_t)(sc__cpu_hash(7, (uint64_t)i) & 1);
      for (int64_t j = 0; j < 2048; j++) { /* RoPE table: cos, sin of angle j / 2048 */
        b->f[5][2 * j] = cosf((float)j / 2048.0f);
        b->f[5][2 * j + 1] = sinf((float)j / 2048.0f);
      }
    }
    return rc;
  }
  if (strcmp(fam, SC_OP_EMBEDDING) == 0) { /* ids kept in f[3] as int64 (2 floats each) */
    double th = (double)d[0] * d[1], vh = (double)d[2] * d[1];
    double n[5] = {vh, th, th, 2.0 * (double)d[0], vh};
    int rc = cpu_alloc(b, n, 5, 0, err);
    if (rc == SC_OK) {
      int64_t *ids = (int64_t *)(void *)b->f[3];
      for (int64_t t = 0; t < d[0]; t++) ids[t] = (int64_t)(sc__cpu_hash(3, (uint64_t)t) % (uint64_t)d[2]);
    }
    return rc;
  }
  if (strcmp(fam, SC_OP_CROSS_ENTROPY) == 0) {
    double n[4] = {(double)d[0] * d[1], (double)d[0] * d[1], 2.0 * (double)d[0], (double)d[0]};
    int rc = cpu_alloc(b, n, 4, 0, err);
    if (rc == SC_OK) {
      int64_t *lab = (int64_t *)(void *)b->f[2];
      for (int64_t t = 0; t < d[0]; t++) lab[t] = (int64_t)(sc__cpu_hash(5, (uint64_t)t) % (uint64_t)d[1]);
      memcpy(b->f[1], b->f[0], b->nf[0] * sizeof(float));
    }
    return rc;
  }
  if (strcmp(fam, SC_OP_OPTIMIZER) == 0) {
    double nn = (double)d[0];
    double n[4] = {nn, nn, nn, nn};
    int rc = cpu_alloc(b, n, 4, 0, err);
    if (rc == SC_OK) cpu_fill(b->f[3], b->nf[3], 11, 0.0f, 1e-3f); /* v >= 0 */
    return rc;
  }
  if (strcmp(fam, SC_OP_MEMCPY) == 0) { /* dims[0] bytes: f[0] the source or the buffer */
    double nn = ceil((double)d[0] / (double)sizeof(float));
    double n[2] = {nn, nn};
    return cpu_alloc(b, n, b->op.variant == SC_MEMCPY_FILL ? 1 : 2, 0, err);
  }
  return sc_plugin_fail(err, SC_EUNSUPPORTED, "cpu: no kernel for operator family '%s' "
                        "(gemm, attention, norm, softmax, elementwise, optimizer, embedding, "
                        "cross_entropy, memcpy)", fam);
}

static void cpu_run(cpu_bufs *b) {
  const int64_t *d = b->op.dims;
  const char *fam = b->op.family;
  float **f = b->f;
  uint32_t v = b->op.variant;
  if (strcmp(fam, SC_OP_GEMM) == 0) {
    if (v == SC_GEMM_TN) /* C = A^T B, A stored k x m (a weight gradient's layout) */
      for (int64_t i = 0; i < d[0]; i++)
        sc__cpu_gemm_t(1, 0, d[1], d[2], d[3], f[0] + i * d[1] * d[3], d[1],
                       f[1] + i * d[3] * d[2], d[2], 0.0f, f[2] + i * d[1] * d[2], d[2]);
    else
      sc__cpu_gemm(d[0], d[1], d[2], d[3], f[0], f[1], f[2]);
  } else if (strcmp(fam, SC_OP_ATTENTION) == 0) {
    if (v == SC_ATTN_FLASH_FWD)
      sc__cpu_attn_fwd(d[0], d[1], d[2], d[3], d[4], d[5], (int)d[6], f[0], f[1], f[2], f[3],
                       f[4], f[5]);
    else
      sc__cpu_attn_bwd(d[0], d[1], d[2], d[3], d[4], d[5], (int)d[6], f[0], f[1], f[2], f[3],
                       f[6], f[4], f[7], f[8], f[9], f[5]);
  } else if (strcmp(fam, SC_OP_NORM) == 0) {
    switch (v) {
    case SC_NORM_OP_LAYERNORM_FWD:
      sc__cpu_layernorm_fwd(d[0], d[1], f[0], f[3], f[4], f[1], f[7], f[8]); break;
    case SC_NORM_OP_LAYERNORM_BWD:
      sc__cpu_layernorm_bwd(d[0], d[1], f[2], f[0], f[3], f[7], f[8], f[1], f[5], f[6]); break;
    case SC_NORM_OP_RMSNORM_FWD:
      sc__cpu_rmsnorm_fwd(d[0], d[1], f[0], f[3], f[1], f[8]); break;
    default:
      sc__cpu_rmsnorm_bwd(d[0], d[1], f[2], f[0], f[3], f[8], f[1], f[5]); break;
    }
  } else if (strcmp(fam, SC_OP_SOFTMAX) == 0) {
    if (v == SC_SOFTMAX_FWD) sc__cpu_softmax_fwd(d[0], d[1], 0.125f, f[0], f[1]);
    else sc__cpu_softmax_bwd(d[0], d[1], 0.125f, f[2], f[1], f[0]);
  } else if (strcmp(fam, SC_OP_ELEMENTWISE) == 0) {
    int64_t n = d[0];
    switch (v) {
    case SC_EW_GELU_FWD: sc__cpu_gelu_fwd(n, f[0], f[4], b->nbias, f[1]); break;
    case SC_EW_GELU_BWD: sc__cpu_gelu_bwd(n, f[2], f[0], f[4], b->nbias, f[1]); break;
    case SC_EW_SWIGLU_FWD: sc__cpu_swiglu_fwd(n, f[0], f[1], f[2]); break;
    case SC_EW_SWIGLU_BWD: sc__cpu_swiglu_bwd(n, f[2], f[0], f[1], f[3], f[6]); break;
    case SC_EW_DROPOUT_FWD: sc__cpu_dropout_fwd(n, 0.1f, 1, f[0], f[1], b->mask); break;
    case SC_EW_DROPOUT_BWD:
    case SC_EW_BIAS_DROPOUT_ADD_BWD: sc__cpu_dropout_bwd(n, 0.1f, f[2], b->mask, f[1]); break;
    case SC_EW_BIAS_DROPOUT_ADD_FWD:
      sc__cpu_bda_fwd(n, 0.1f, 1, f[0], f[4], b->nbias, f[2], f[1], b->mask); break;
    case SC_EW_ADD: sc__cpu_add(n, f[0], f[2], f[1]); break;
    case SC_EW_ROPE_FWD: sc__cpu_rope(n, f[0], f[5], 2048, 1.0f, f[1]); break;
    default: sc__cpu_rope(n, f[2], f[5], 2048, -1.0f, f[1]); break;
    }
  } else if (strcmp(fam, SC_OP_EMBEDDING) == 0) {
    const int64_t *ids = (const int64_t *)(const void *)f[3];
    if (v == SC_EMBED_FWD) sc__cpu_embed_fwd(d[0], d[1], ids, f[0], f[1]);
    else sc__cpu_embed_bwd(d[0], d[1], d[2], ids, f[2], f[4], f[0]);
  } else if (strcmp(fam, SC_OP_CROSS_ENTROPY) == 0) {
    const int64_t *lab = (const int64_t *)(const void *)f[2];
    if (v == SC_CE_FWD) { /* in place on the previous call's output: finite logits */
      sc__cpu_xent_fwd(d[0], d[1], lab, f[1], f[3]);
    } else {
      sc__cpu_xent_bwd(d[0], d[1], lab, 1.0f / (float)d[0], f[1]);
    }
  } else if (strcmp(fam, SC_OP_MEMCPY) == 0) { /* the C library's, as the kernels call it */
    if (v == SC_MEMCPY_FILL) memset(f[0], 0, (size_t)d[0]);
    else memcpy(f[1], f[0], (size_t)d[0]);
  } else { /* optimizer */
    sc__cpu_adam(d[0], 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, f[0], f[1], f[2], f[3]);
  }
}

static int cpu_measure(void *state, const sc_device *dev, const sc_op_desc *op, uint32_t min_reps,
                       double budget_s, sc_measurement *out, sc_error *err) {
  /* gemm attention norm elementwise softmax optimizer embedding cross_entropy memcpy */
  static const uint32_t ndims_of[] = {4, 7, 2, 1, 2, 1, 3, 2, 1};
  static const char *const fams[] = {SC_OP_GEMM,    SC_OP_ATTENTION, SC_OP_NORM,
                                     SC_OP_ELEMENTWISE, SC_OP_SOFTMAX, SC_OP_OPTIMIZER,
                                     SC_OP_EMBEDDING, SC_OP_CROSS_ENTROPY, SC_OP_MEMCPY};
  static const uint32_t nvariants[] = {SC_GEMM_VARIANT_COUNT,    SC_ATTN_VARIANT_COUNT,
                                       SC_NORM_OP_VARIANT_COUNT, SC_EW_SAMPLED,
                                       SC_SOFTMAX_SAMPLED, SC_OPTIM_VARIANT_COUNT,
                                       SC_EMBED_VARIANT_COUNT,   SC_CE_VARIANT_COUNT,
                                       SC_MEMCPY_VARIANT_COUNT};
  double samples[CPU_MAX_SAMPLES];
  cpu_bufs b;
  uint32_t n = 0, inner = 1;
  int rc, fi = -1;
  double t0, t1, start;
  (void)state;
  if (dev == NULL || op == NULL || out == NULL || op->family == NULL)
    return sc_plugin_fail(err, SC_EINVAL, "cpu: measure: NULL argument");
  if (op->dtype != SC_DTYPE_FP32)
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "cpu: measure: dtype %s: the CPU kernels are "
                          "fp32 only", sc_dtype_name(op->dtype));
  if (min_reps < 1 || min_reps > CPU_MAX_SAMPLES || !(budget_s >= 0) || !isfinite(budget_s))
    return sc_plugin_fail(err, SC_EINVAL, "cpu: measure: min_reps must be in [1, %d] and "
                          "budget_s finite and >= 0", CPU_MAX_SAMPLES);
  for (int i = 0; i < (int)(sizeof fams / sizeof fams[0]); i++)
    if (strcmp(op->family, fams[i]) == 0) fi = i;
  if (fi < 0)
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "cpu: no kernel for operator family '%s' "
                          "(gemm, attention, norm, softmax, elementwise, optimizer, embedding, "
                          "cross_entropy, memcpy)", op->family);
  if (op->ndims != ndims_of[fi])
    return sc_plugin_fail(err, SC_EINVAL, "cpu: %s: ndims must be %u (got %u)", op->family,
                          ndims_of[fi], op->ndims);
  for (uint32_t i = 0; i < op->ndims; i++) {
    int ok = op->dims[i] > 0 && op->dims[i] <= ((int64_t)1 << 31);
    if (fi == 1 && i == 6) ok = op->dims[i] == 0 || op->dims[i] == 1;
    if (!ok)
      return sc_plugin_fail(err, SC_EINVAL, "cpu: %s: dims[%u] = %lld out of range", op->family,
                            i, (long long)op->dims[i]);
  }
  if (op->variant >= nvariants[fi])
    return sc_plugin_fail(err, SC_EINVAL, "cpu: %s: variant %u unknown or not measured here", op->family,
                          op->variant);
  if (dev->compute_units >= 1 && openblas_get_num_threads() != (int)dev->compute_units)
    openblas_set_num_threads((int)dev->compute_units);

  memset(&b, 0, sizeof b);
  b.op = *op;
  rc = cpu_setup(&b, err);
  if (rc != SC_OK) {
    cpu_bufs_free(&b);
    return rc;
  }
  t0 = cpu_now();
  cpu_run(&b); /* warm-up: caches, pages, BLAS buffers */
  t1 = cpu_now() - t0;
  if (t1 < CPU_MIN_SAMPLE_S) {
    double c = ceil(CPU_MIN_SAMPLE_S / (t1 > 1e-9 ? t1 : 1e-9));
    inner = c > 100000 ? 100000 : (uint32_t)c;
  }
  /* Cold (SC_OP_COLD): each call timed alone after reading an eviction buffer of twice the
   * last-level cache (at least 32 MiB, at most 512 MiB; untimed), so that the operator's
   * buffers come from memory, clean, as a step leaves its parameters; the budget counts the
   * eviction too. */
  unsigned char *evict = NULL;
  size_t nevict = 0;
  if (op->flags & SC_OP_COLD) {
    double want = 2.0 * dev->l2_bytes;
    if (!(want >= 32.0 * 1048576.0)) want = 32.0 * 1048576.0;
    if (want > 512.0 * 1048576.0) want = 512.0 * 1048576.0;
    nevict = (size_t)want;
    if ((evict = malloc(nevict)) == NULL) {
      cpu_bufs_free(&b);
      return sc_plugin_fail(err, SC_ENOMEM, "cpu: measure: out of memory (%zu-byte eviction "
                            "buffer)", nevict);
    }
    memset(evict, 1, nevict);
    inner = 1;
  }
  start = cpu_now();
  while (n < CPU_MAX_SAMPLES) {
    if (evict != NULL) { /* one read per line, through a volatile view: not optimised away */
      const volatile unsigned char *v = evict;
      unsigned sum = 0;
      for (size_t i = 0; i < nevict; i += 64) sum += v[i];
      (void)sum;
    }
    t0 = cpu_now();
    for (uint32_t r = 0; r < inner; r++) cpu_run(&b);
    t1 = cpu_now();
    samples[n++] = (t1 - t0) / (double)inner;
    if (n >= min_reps && (t1 - start) + (t1 - t0) > budget_s) break;
  }
  free(evict);
  cpu_bufs_free(&b);
  sc__hw_summarise(samples, n, out);
  return SC_OK;
}

static const sc_hw_plugin cpu_plugin = {
  .hdr = SC_PLUGIN_HEADER(sc_hw_plugin, SC_PLUGIN_KIND_HARDWARE, "cpu", "1.0.0"),
  .describe = cpu_describe,
  .measure = cpu_measure,
};

SC_PLUGIN_ENTRY(hardware_cpu) { return &cpu_plugin.hdr; }
