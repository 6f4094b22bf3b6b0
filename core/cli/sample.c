/* stepcast sample: measure the operator families on the live device (the host CPU through
 * the cpu hardware plugin's measure()) over a space-filling plan of shapes, and write the
 * samples CSV that stepcast fit reads. docs/learned.md describes the plan and the file. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "stepcast/afile.h"
#include "cpu_attn_block.h" /* the cpu plugin's attention tile */
#include "common/median.h"
#include "plugin/registry_int.h"
#include "stepcast/csv.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/parallel.h"
#include "stepcast/sample.h"

/* OpenBLAS's controls (libstepcast links OpenBLAS; its cblas.h declares them too). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char *openblas_get_config(void);

static void sample_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast sample --device KIND --out FILE [options]\n\n"
          "Measures, on this machine, the operator families gemm (cblas_sgemm, plain and\n"
          "batched), attention, norm, softmax, elementwise, optimizer, embedding and\n"
          "cross_entropy over a space-filling\n"
          "plan of shapes (Halton points over the log-ranges of real transformer layers,\n"
          "scaled to what a CPU runs in reasonable time), after microbenchmarks that\n"
          "describe the device for the analytical estimate: a 2048^3 sgemm (achievable\n"
          "FLOP/s), STREAM Add over 3 x 64 MiB (memory bandwidth) and 3 x 16 KiB (cache\n"
          "bandwidth), a one-element kernel call (launch overhead) and, on the CPU, each\n"
          "vector kernel's rate on a cache-resident shape, attention's matmul and\n"
          "softmax parts (head dims 32 and 128), the operand traffic sgemm does not\n"
          "overlap (GEMMs with one dimension of 16), STREAM Add and a zero-fill (memset)\n"
          "at 14 sizes up to 4 x the last-level cache, an in-place a += b over 2^24\n"
          "floats (before, through and after the plan, as STREAM Add), and, after the\n"
          "plan, the norm and softmax kernels' exposed memory time past that cache and\n"
          "the time per row of gathers of 1 KiB rows at the 14 sizes; it prints them as\n"
          "[hardware] lines to copy. Each row holds repetitions, median and spread.\n\n"
          "options:\n"
          "  --device KIND      hardware plugin that measures (cpu; cuda where the cuda\n"
          "                     plugin is built: bf16, GEMMs and sequences up to 8192, a\n"
          "                     bf16 8192^3 GEMM and STREAM Add over 2^28 elements as\n"
          "                     microbenchmarks; families it lacks are skipped with a comment)\n"
          "  --out FILE         samples CSV to write (e.g. hardware/host-cpu/samples.csv)\n"
          "  --seconds S        time budget for the whole plan (default 240); the plan stops\n"
          "                     early, saying so in the file, when it is spent (the\n"
          "                     microbenchmarks, about 15-20 s on a CPU, run before it);\n"
          "                     0: no budget, every planned measurement runs, each with\n"
          "                     --min-reps repetitions (rows that do not depend on the\n"
          "                     machine's speed, for tests)\n"
          "  --threads N        BLAS threads (default 1; OPENBLAS_NUM_THREADS is recorded)\n"
          "  --min-reps N       timed repetitions per shape and pass at least (default 5)\n"
          "  --passes N         measure every shape N times, a whole pass over the plan\n"
          "                     apart, and keep its median pass (default 3, at most 9): a\n"
          "                     slow spell of a shared machine then costs no row\n"
          "  --families LIST    comma-separated subset of the families (default all)\n"
          "  --hardware-out F   also write the complete hardware file the CPU measurements\n"
          "                     imply to F = <dir>/<name>.toml (the device is <name>; stepcast\n"
          "                     fit finds it beside <dir>/<name>/samples.csv); stdout gets\n"
          "                     the same file named host-cpu without it\n"
          "  --plan FILE        measure the operators FILE lists instead of the designed\n"
          "                     plan: a CSV with columns family, variant, dtype and dims\n"
          "                     (AxBx...), as `stepcast ops --csv` writes it (rows whose\n"
          "                     kind is not op are passed over); each distinct operator\n"
          "                     once, in its own dtype; --families still filters\n"
          "  --quick            a plan of 1/4 the points and shorter microbenchmarks (for\n"
          "                     tests; with --plan, the microbenchmarks only)\n\n"
          "A progress bar goes to stderr when it is a terminal. Exit status: 0 ok, 1 failure,\n"
          "2 usage error.\n");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The per-kernel microbenchmarks of a CPU (the [hardware.kernel_flops_per_s] tables): every
 * variant of the vector families on one cache-resident shape (arrays of 64 to 256 KiB, inside
 * a core's L2), timed, its rate = the operator plugin's FLOP count / the median time (less
 * the zero-fill its plugin prices apart, LESS_FILL). */
typedef struct kernel_micro {
  const char *family;
  uint32_t variant;
  uint32_t ndims;
  int64_t dims[3];
  const char *what;
  int row; /* ROW_RATE | ROW_EXPOSURE: what else is measured of a multi-pass row kernel;
            * LESS_FILL: how its rate is taken */
} kernel_micro;
#define ROW_RATE 1     /* its rate by row width, in cache (measure_row_rates) */
#define ROW_EXPOSURE 2 /* its exposure past the last-level cache (measure_row_exposure) */
#define ROW_RAMP 4     /* that exposure ramps with the row's working set over the L1
                        * (sc_device_row_exposure): measured on rows past it */
#define NORM_ROW (ROW_RATE | ROW_EXPOSURE | ROW_RAMP)
#define LESS_FILL 8    /* the kernel zero-fills a dims[2] x dims[1] fp32 table first, which
                        * its plugin prices apart at the device's fill rate (the embedding
                        * backward, sc__op_fill_s): that time, at the measured fill curve, is
                        * taken off the median before the rate is taken */
#define ROW_HEADS 16   /* its rows come in causal heads of as many rows as columns (the
                        * causal softmax forward: the first rows of a head are nearly all
                        * masked): its row rates are measured on whole heads */
#define SOFTMAX_ROW (ROW_RATE | ROW_EXPOSURE)

static const kernel_micro kernel_micros[] = {
    {"norm", SC_NORM_OP_LAYERNORM_FWD, 2, {32, 1024, 0}, "layer-norm forward", NORM_ROW},
    {"norm", SC_NORM_OP_LAYERNORM_BWD, 2, {32, 1024, 0}, "layer-norm backward", NORM_ROW},
    {"norm", SC_NORM_OP_RMSNORM_FWD, 2, {32, 1024, 0}, "RMSNorm forward", NORM_ROW},
    {"norm", SC_NORM_OP_RMSNORM_BWD, 2, {32, 1024, 0}, "RMSNorm backward", NORM_ROW},
    {"softmax", SC_SOFTMAX_FWD, 2, {256, 256, 0}, "causal softmax forward",
     SOFTMAX_ROW | ROW_HEADS},
    {"softmax", SC_SOFTMAX_BWD, 2, {256, 256, 0}, "softmax backward", SOFTMAX_ROW},
    {"elementwise", SC_EW_GELU_FWD, 1, {32768, 0, 0}, "bias + GeLU forward", 0},
    {"elementwise", SC_EW_GELU_BWD, 1, {32768, 0, 0}, "bias + GeLU backward", 0},
    {"elementwise", SC_EW_SWIGLU_FWD, 1, {32768, 0, 0}, "SwiGLU forward", 0},
    {"elementwise", SC_EW_SWIGLU_BWD, 1, {32768, 0, 0}, "SwiGLU backward", 0},
    {"elementwise", SC_EW_DROPOUT_FWD, 1, {32768, 0, 0}, "dropout forward", 0},
    {"elementwise", SC_EW_DROPOUT_BWD, 1, {32768, 0, 0}, "dropout backward", 0},
    {"elementwise", SC_EW_BIAS_DROPOUT_ADD_FWD, 1, {32768, 0, 0}, "bias-dropout-add forward", 0},
    {"elementwise", SC_EW_BIAS_DROPOUT_ADD_BWD, 1, {32768, 0, 0}, "bias-dropout-add backward", 0},
    {"elementwise", SC_EW_ADD, 1, {32768, 0, 0}, "add", 0},
    {"elementwise", SC_EW_ROPE_FWD, 1, {32768, 0, 0}, "rotary embedding forward", 0},
    {"elementwise", SC_EW_ROPE_BWD, 1, {32768, 0, 0}, "rotary embedding backward", 0},
    {"optimizer", SC_OPTIM_ADAM, 1, {16384, 0, 0}, "AdamW step", 0},
    {"embedding", SC_EMBED_BWD, 3, {64, 256, 128}, "embedding backward", LESS_FILL},
    {"cross_entropy", SC_CE_FWD, 2, {8, 4096, 0}, "cross-entropy forward", 0},
    {"cross_entropy", SC_CE_BWD, 2, {8, 4096, 0}, "cross-entropy backward", 0},
};
#define NKERNEL_MICROS (sizeof kernel_micros / sizeof kernel_micros[0])

/* " d0 x d1 ..." of a kernel microbenchmark's shape. */
static void print_dims(FILE *o, const kernel_micro *km) {
  for (uint32_t j = 0; j < km->ndims; j++)
    fprintf(o, "%s%lld", j ? " x " : " ", (long long)km->dims[j]);
}

/* Measure every kernel_micros entry of a family in families (NULL = all) on hw; rate[i] is 0
 * for the skipped ones. FLOPs come from the operator plugins (on dev with its fp32 rate); a
 * LESS_FILL entry's table fill is taken off at dev's fill curve (none stated: nothing). The
 * micros are measured in MICRO_ROUNDS interleaved rounds (measure_rounds; budget_s each,
 * split over the rounds): a slow spell of a shared machine moves one round of the kernels it
 * falls on, not their rate (on the Zen 4 guest one run's embedding backward came out at
 * 4.3 GFLOP/s against 7.3 in the runs before it, its median of 255 calls inside one such
 * spell, and the family's small backwards predicted 1.4-1.6x slow:
 * docs/notes/0001-host-cpu-residuals.md, "The embedding in the step"). */
static int measure_rounds(const sc_hw_plugin *hw, void *st, const sc_device *dev,
                          const sc_op_desc *ops, size_t n, uint32_t min_reps, double budget_s,
                          sc_measurement **out, sc_error *err);
static int measure_kernel_rates(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *dev,
                                const char *families, double budget_s, double *rate,
                                sc_measurement *meas, sc_error *err) {
  sc_op_desc ops[NKERNEL_MICROS];
  sc_measurement *out[NKERNEL_MICROS];
  double flops[NKERNEL_MICROS];
  size_t idx[NKERNEL_MICROS], n = 0;
  for (size_t i = 0; i < NKERNEL_MICROS; i++) {
    const kernel_micro *k = &kernel_micros[i];
    sc_op_desc op = {0};
    sc_estimate e;
    sc_error e2;
    rate[i] = 0.0;
    if (!sc_name_in_list(families, k->family)) continue;
    op.family = k->family;
    op.variant = k->variant;
    op.dtype = SC_DTYPE_FP32;
    op.ndims = k->ndims;
    for (uint32_t j = 0; j < k->ndims; j++) op.dims[j] = k->dims[j];
    if (sc_registry_estimate_op(reg, dev, &op, &e, &e2) != SC_OK)
      return sc_error_set(err, e2.code, "sample: kernel microbenchmark %s: %s", k->what, e2.msg);
    ops[n] = op;
    out[n] = &meas[i];
    flops[n] = e.flops;
    idx[n++] = i;
  }
  if (n == 0) return SC_OK;
  int rc = measure_rounds(hw, sc_registry_state(reg, &hw->hdr), dev, ops, n, 3, budget_s, out,
                          err);
  if (rc != SC_OK) return rc;
  for (size_t j = 0; j < n; j++) {
    const kernel_micro *k = &kernel_micros[idx[j]];
    double t = meas[idx[j]].median_s;
    if (k->row & LESS_FILL) {
      const double table = 4.0 * (double)k->dims[2] * (double)k->dims[1];
      const double fbw = sc_device_fill_bw(dev, table);
      if (fbw > 0.0 && t > 2.0 * table / fbw) t -= table / fbw; /* a fill of at most half */
    }
    if (flops[j] > 0 && t > 0) rate[idx[j]] = flops[j] / t;
  }
  return SC_OK;
}

/* The entry of family in one of sc_device's per-kernel tables (kernel_rates, row_rate:
 * SC_KERNEL_RATE_FAMILIES entries stride bytes apart, each starting with char family[32],
 * the layout sc__hw_kernel_table reads): the one naming it, else the first empty one,
 * claimed for it; -1 when the table is full. */
static int family_slot(char *family0, size_t stride, const char *family) {
  for (int i = 0; i < SC_KERNEL_RATE_FAMILIES; i++) {
    char *f = family0 + (size_t)i * stride;
    if (f[0] == '\0') snprintf(f, sizeof ((sc_device *)0)->kernel_rates[0].family, "%s", family);
    if (strcmp(f, family) == 0) return i;
  }
  return -1;
}

/* dev's kernel_rates from the measured krate (by kernel_micros; 0 = not measured). */
static void set_kernel_rates(sc_device *dev, const double *krate) {
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    if (!(krate[k] > 0)) continue;
    int i = family_slot(dev->kernel_rates[0].family, sizeof dev->kernel_rates[0], km->family);
    if (i >= 0) dev->kernel_rates[i].flops_per_s[km->variant] = krate[k];
  }
}

/* The row rate of the kernel_micros entries marked row (sc_device_row_rate): each timed on
 * cache-resident rows of SC_ROW_RATE_COLS0 x 2^i columns over ROW_RATE_ELEMS elements, its
 * FLOP rate at each width over its rate in the same sweep at the width of its
 * kernel_flops_per_s shape (dims[1]: 1024 columns for the norms, 256 for the softmax).
 * Marked ROW_HEADS, on whole heads instead (rows a multiple of the columns, at least
 * ROW_RATE_ELEMS elements) up to ROW_HEADS_MAX columns, the wider widths left unstated.
 * rr[k][i] stays 0 for the others; mm[k][i] gets each measurement. */
#define ROW_RATE_ELEMS 32768 /* 32 x 1024, as the per-kernel rates: 128 KiB per fp32 array */
#define ROW_HEADS_MAX 256 /* a 256-column head: 256 KiB per fp32 array, inside a core's L2 (a
                          * 1024-column one, 4 MiB, ran 0.905x the 256-column rate on the Zen
                          * 4 guest: the L3 in it, which the roofline's memory term prices) */

/* The rows of a row-rate measurement of km at cols columns; 0 when it takes none there. */
static int64_t row_rate_rows(const kernel_micro *km, int64_t cols) {
  if (!(km->row & ROW_HEADS)) return ROW_RATE_ELEMS / cols;
  if (cols > ROW_HEADS_MAX) return 0;
  int64_t heads = ROW_RATE_ELEMS / (cols * cols);
  return (heads < 1 ? 1 : heads) * cols;
}
static int measure_row_rates(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *dev,
                             const char *families, double budget_s,
                             double (*rr)[SC_ROW_RATE_WIDTHS],
                             sc_measurement (*mm)[SC_ROW_RATE_WIDTHS], sc_error *err) {
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    sc_op_desc ops[SC_ROW_RATE_WIDTHS];
    sc_measurement *out[SC_ROW_RATE_WIDTHS];
    double flops[SC_ROW_RATE_WIDTHS], ref = 0.0;
    size_t n = 0;
    for (int i = 0; i < SC_ROW_RATE_WIDTHS; i++) {
      rr[k][i] = 0.0;
      memset(&mm[k][i], 0, sizeof mm[k][i]);
    }
    if (!(km->row & ROW_RATE) || !sc_name_in_list(families, km->family)) continue;
    for (int i = 0; i < SC_ROW_RATE_WIDTHS; i++) { /* the widths measured, narrowest first */
      sc_estimate e;
      sc_error e2;
      int64_t cols = (int64_t)SC_ROW_RATE_COLS0 << i, rows = row_rate_rows(km, cols);
      if (rows == 0) break;
      memset(&ops[n], 0, sizeof ops[n]);
      ops[n].family = km->family;
      ops[n].variant = km->variant;
      ops[n].dtype = SC_DTYPE_FP32;
      ops[n].ndims = 2;
      ops[n].dims[0] = rows;
      ops[n].dims[1] = cols;
      if (sc_registry_estimate_op(reg, dev, &ops[n], &e, &e2) != SC_OK)
        return sc_error_set(err, e2.code, "sample: row rate of the %s: %s", km->what, e2.msg);
      flops[n] = e.flops;
      out[n] = &mm[k][i];
      n++;
    }
    /* the widths in interleaved rounds, as the kernel rates: a slow spell moves one round */
    int rc = measure_rounds(hw, sc_registry_state(reg, &hw->hdr), dev, ops, n, 3, budget_s, out,
                            err);
    if (rc != SC_OK) return rc;
    double rate[SC_ROW_RATE_WIDTHS];
    for (size_t i = 0; i < n; i++) {
      rate[i] = flops[i] > 0 && mm[k][i].median_s > 0 ? flops[i] / mm[k][i].median_s : 0.0;
      if (ops[i].dims[1] == km->dims[1]) ref = rate[i];
    }
    for (size_t i = 0; i < n && ref > 0; i++) rr[k][i] = rate[i] / ref;
  }
  return SC_OK;
}

/* dev's row_rate from the measured rr (by kernel_micros; 0 = not measured). */
static void set_row_rates(sc_device *dev, const double (*rr)[SC_ROW_RATE_WIDTHS]) {
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    if (!(rr[k][0] > 0)) continue;
    int i = family_slot(dev->row_rate[0].family, sizeof dev->row_rate[0], km->family);
    for (int w = 0; w < SC_ROW_RATE_WIDTHS && i >= 0; w++)
      dev->row_rate[i].multiple[km->variant][w] = rr[k][w];
  }
}

/* Whether n is within 1 % of a power of two. */
static int near_pow2(double n) {
  double l = log2(n);
  return fabs(l - nearbyint(l)) < log2(1.01);
}

/* The row exposure of the kernel_micros entries marked ROW_EXPOSURE (sc_device_exposure):
 * each timed over data of about 4 x the last-level cache (at most 2^26 elements) on rows of
 * EXPO_COLS columns, or, marked ROW_RAMP, on rows whose working set is well past the L1
 * (cols the power of two >= l1 / 4, at least 1024: 12 bytes and more per fp32 column put
 * every norm variant past 5 l1 / 4, where the ramp is full); rows are then added, 16 at a
 * time, until the arrays are at least 1 % away from a power of two in size (arrays a power
 * of two apart in memory made the norm backwards' exposure 2.1-2.6 on the Zen 4 guest
 * against 0.96-1.15 with 16 rows more, a placement the plan's shapes and a training step's
 * tensors rarely have; docs/operators.md). Each against the roofline of the same shape on
 * kd (the measured rates, no exposure): (measured - max(tc, tm)) / min(tc, tm), at least 0.
 * tc is the FLOPs at the kernel's rate at that width (its stated rate times kd's row rate);
 * tm the roofline with that rate made 10^9 times faster. expo[k] stays 0 for the others;
 * dims[k] gets the shape, mm[k] the measurement and roof[k] = {max, min}. */
#define EXPO_COLS 1024 /* the middle of the CPU plan's softmax widths (64 to 2048) */
static int measure_row_exposure(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *kd,
                                const double *krate, double l1, double llc,
                                const char *families, double budget_s, double *expo,
                                int64_t (*dims)[2], sc_measurement *mm, double (*roof)[2],
                                sc_error *err) {
  int64_t wide = 1024;
  while ((double)wide < l1 / 4.0 && wide < 65536) wide *= 2;
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    sc_op_desc op = {0};
    sc_estimate eo, em;
    sc_error e2;
    sc_device fast = *kd;
    expo[k] = 0.0;
    dims[k][0] = dims[k][1] = 0;
    roof[k][0] = roof[k][1] = 0.0;
    if (!(km->row & ROW_EXPOSURE) || !sc_name_in_list(families, km->family) || !(krate[k] > 0))
      continue;
    const int64_t cols = (km->row & ROW_RAMP) ? wide : EXPO_COLS;
    /* 4 x llc bytes of fp32 per array, at most 2^26 elements (256 MiB) */
    int64_t rows = (int64_t)ceil(fmin(llc, 67108864.0) / (double)cols / 16.0) * 16;
    if (rows < 16) rows = 16;
    while (near_pow2((double)rows * (double)cols)) rows += 16;
    op.family = km->family;
    op.variant = km->variant;
    op.dtype = SC_DTYPE_FP32;
    op.ndims = 2;
    op.dims[0] = rows;
    op.dims[1] = cols;
    /* the registry memoises estimates by device name: each device its own */
    snprintf(fast.name, sizeof fast.name, "%.40s-memory-only", kd->name);
    for (int i = 0; i < SC_KERNEL_RATE_FAMILIES; i++)
      if (strcmp(fast.kernel_rates[i].family, km->family) == 0)
        fast.kernel_rates[i].flops_per_s[km->variant] *= 1e9;
    if (sc_registry_estimate_op(reg, kd, &op, &eo, &e2) != SC_OK ||
        sc_registry_estimate_op(reg, &fast, &op, &em, &e2) != SC_OK)
      return sc_error_set(err, e2.code, "sample: row exposure of the %s: %s", km->what, e2.msg);
    int rc = hw->measure(sc_registry_state(reg, &hw->hdr), kd, &op, 5, budget_s, &mm[k], err);
    if (rc != SC_OK) return rc;
    double tc = eo.flops / (krate[k] * sc_device_row_rate(kd, km->family, km->variant,
                                                          (double)cols));
    double tm = em.time_s, lo = tc < tm ? tc : tm;
    dims[k][0] = rows;
    dims[k][1] = cols;
    roof[k][0] = eo.time_s;
    roof[k][1] = lo;
    if (lo > 0) expo[k] = fmax(0.0, (mm[k].median_s - eo.time_s) / lo);
  }
  return SC_OK;
}

/* Attention measured at two head dims d1 < d2 with the same scores: t(d) = a W(d) + b S,
 * where W is the plugin's matmul FLOP count and S the unmasked scores. The matmul part's
 * efficiency is 1 / (a x the sgemm rate), the softmax part's rate 5 S / (b S) (the attention
 * plugin's 5 flops per score). When the two times do not separate (a or b S not positive,
 * or an efficiency above 1: noise), the efficiency of the d2 run alone, and no softmax rate. */
static void attn_split(double w1, double w2, double scores, double t1, double t2,
                       double gemm_rate, double *eff, double *sm_rate) {
  double a = (t2 - t1) / (w2 - w1), bs = t1 - a * w1;
  if (a > 0 && bs > 0 && a * gemm_rate >= 1.0) {
    *eff = 1.0 / (a * gemm_rate);
    *sm_rate = 5.0 * scores / bs;
  } else {
    *eff = w2 / (t2 * gemm_rate);
    if (*eff > 1.0) *eff = 1.0;
    *sm_rate = 0.0;
  }
}

static void progress(size_t done, size_t total, double elapsed, double budget) {
  int w = 40, fill = total ? (int)((double)w * (double)done / (double)total) : w;
  fprintf(stderr, "\r[%.*s%*s] %zu/%zu  %.0f/%.0f s", fill,
          "########################################", w - fill, "", done, total, elapsed, budget);
  fflush(stderr);
}

static void cpu_model(char *out, size_t cap) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512], name[256] = "unknown", family[32] = "?", model[32] = "?";
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    char *colon = strchr(line, ':');
    if (colon == NULL) continue;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    v[strcspn(v, "\n")] = '\0';
    if (strncmp(line, "model name", 10) == 0 && strcmp(name, "unknown") == 0)
      snprintf(name, sizeof name, "%s", v);
    else if (strncmp(line, "cpu family", 10) == 0 && family[0] == '?')
      snprintf(family, sizeof family, "%s", v);
    else if (strncmp(line, "model\t", 6) == 0 && model[0] == '?')
      snprintf(model, sizeof model, "%s", v);
  }
  if (f != NULL) fclose(f);
  snprintf(out, cap, "%s (cpu family %s, model %s; /proc/cpuinfo)", name, family, model);
}

/* MemTotal of /proc/meminfo in bytes, 0 when unknown. */
static double mem_total_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  double kb = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "MemTotal:", 9) == 0) {
      kb = strtod(line + 9, NULL);
      break;
    }
  }
  if (f != NULL) fclose(f);
  return kb > 0 ? kb * 1024.0 : 0.0;
}

/* A sysfs cache size ("32768K", "1M") in bytes, 0 when unreadable. */
static double sysfs_size(const char *buf) {
  char *end = NULL;
  double v = strtod(buf, &end);
  if (end != NULL && (*end == 'K' || *end == 'k')) v *= 1024.0;
  else if (end != NULL && (*end == 'M' || *end == 'm')) v *= 1024.0 * 1024.0;
  return v > 0 ? v : 0.0;
}

/* CPU 0's caches from sysfs: the size of the highest level (*level gets it) and of the level-1
 * data cache (*l1d); 0 when unknown. */
static double cache_bytes(int *level, double *l1d) {
  double best = 0;
  *level = 0;
  *l1d = 0;
  for (int i = 0; i < 16; i++) {
    char path[128], buf[64], type[32] = "";
    int lv = 0;
    double v = 0;
    FILE *f;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fgets(buf, sizeof buf, f) != NULL) lv = atoi(buf);
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fgets(buf, sizeof buf, f) != NULL) v = sysfs_size(buf);
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if ((f = fopen(path, "r")) != NULL) {
      if (fgets(type, sizeof type, f) == NULL) type[0] = '\0';
      fclose(f);
    }
    if (v > 0 && lv >= *level) {
      best = v;
      *level = lv;
    }
    if (v > 0 && lv == 1 && (strncmp(type, "Data", 4) == 0 || strncmp(type, "Unified", 7) == 0))
      *l1d = v;
  }
  return best;
}

/* This machine's capacities, read once: memory, the last-level and L1 data caches (0 =
 * unknown). */
typedef struct host_caps {
  double mem, llc, l1d;
  int llc_level;
} host_caps;

static host_caps read_host_caps(void) {
  host_caps c;
  c.mem = mem_total_bytes();
  c.llc = cache_bytes(&c.llc_level, &c.l1d);
  return c;
}

#define SAMPLE_MAX_BW_RUNS 12
#define SAMPLE_MAX_PASSES 9 /* --passes */
#define GEMM_EXPO_SIZES 4 /* the skinny GEMMs' sizes: 512, 1024, 2048, past the LLC */
/* The cache curve's working sets, in 1/512ths of the last-level cache: 64 KiB to 4 x it on a
 * 32 MiB one, dense where the share turns (measure_cache_curve). */
static const int cache_curve_512ths[] = {1, 4, 16, 32, 64, 128, 192, 256, 320, 384, 512, 768,
                                         1024, 2048};
#define CACHE_CURVE_N ((int)(sizeof cache_curve_512ths / sizeof cache_curve_512ths[0]))
_Static_assert(sizeof cache_curve_512ths / sizeof cache_curve_512ths[0] <= SC_CACHE_CURVE_POINTS,
               "the cache curve must fit sc_device.cache_miss_share");

/* The microbenchmarks of a run: what they timed and the rates they give. */
typedef struct micro_run {
  int gpu;
  sc_dtype dtype;
  int64_t gn;  /* GEMM micro: 2048^3 sgemm; gpu: 8192^3 bf16 */
  double esz;  /* bytes per element of the dtype */
  sc_op_desc g, add, one, ln, af, ab, af2, ab2, addc;
  sc_measurement mg, ma, m1, mln, maf, mab, maf2, mab2, mc;
  sc_measurement kmeas[NKERNEL_MICROS], rmeas[NKERNEL_MICROS];
  double krate[NKERNEL_MICROS], rexpo[NKERNEL_MICROS], rroof[NKERNEL_MICROS][2];
  int64_t rdims[NKERNEL_MICROS][2];
  double rrate[NKERNEL_MICROS][SC_ROW_RATE_WIDTHS]; /* row rate by width (the row kernels) */
  sc_measurement rrmeas[NKERNEL_MICROS][SC_ROW_RATE_WIDTHS];
  double gemm_rate, cache_bw, vector_rate, attn_eff[2], attn_sm[2];
  /* CPU: GEMMs with one dimension of 16 (in each of the three places) and two of gsn[j],
   * from below the level-2 cache to past the last-level one (measure_gemm_exposure); the
   * exposed rate and knee they give (0 = none measurable) and the 2048^3 sgemm's raw rate
   * (gemm_rate then excludes its own exposed traffic) */
  int64_t gsn[GEMM_EXPO_SIZES];
  sc_measurement mgs[GEMM_EXPO_SIZES][3];
  double gemm_exposed_bw, gemm_exposed_knee, gemm_raw_rate;
  /* CPU: STREAM Add at working sets from inside the level-2 cache to past the last-level
   * one (measure_cache_curve): each curve_ws bytes (3 arrays), its timing, its rate in
   * STREAM's count; ncurve = 0 when not measured */
  int ncurve;
  double curve_ws[CACHE_CURVE_N], curve_rate[CACHE_CURVE_N];
  sc_measurement mcurve[CACHE_CURVE_N];
  /* their shares (sc_cache_miss_curve) once the run's DRAM rate is known; nshare = ncurve
   * then, 0 while not known or when the cache rate is not above the DRAM rate */
  int nshare;
  double curve_share[CACHE_CURVE_N];
  /* CPU: the zero-fill (memset) of one buffer of fill_bytes[j] at the same sizes
   * (measure_fill_curve), its timing and its rate; nfill = 0 when not measured */
  int nfill;
  double fill_bytes[CACHE_CURVE_N], fill_rate[CACHE_CURVE_N];
  sc_measurement mfill[CACHE_CURVE_N];
  /* ... and of a cold buffer (each call after an eviction: measure_fill_curve with cold);
   * nfill_cold = 0 when not measured */
  int nfill_cold;
  double fill_cold_bytes[CACHE_CURVE_N], fill_cold_rate[CACHE_CURVE_N];
  sc_measurement mfill_cold[CACHE_CURVE_N];
  double bw_runs[SAMPLE_MAX_BW_RUNS + 1]; /* STREAM Add: before, through and after the plan */
  int nbw;
  /* CPU: the in-place read-modify-write rate (rmw_rate) at the same points: rmw[0] the
   * embedding backward that accumulates, rmw[1] its table's fill alone; 0 = not measurable */
  sc_op_desc rmw[2];
  sc_measurement mrmw[2];
  double rmw_runs[SAMPLE_MAX_BW_RUNS + 1], rmw_bw;
  /* the runs' median before rmw_bw takes out the cache curve's hits at the micro's working
   * set (RMW_MICRO_WS), and that set's miss share; rmw_g0 = 0: not corrected */
  double rmw_raw, rmw_g0;
  int nrmw;
  /* CPU, after the plan: the gather curve (measure_gather_curve): at each working set
   * gather_ws, the lookup of gather_tokens rows, its timing, the roofline it is measured
   * against and the time per row past it (made non-decreasing); ngather = 0 when not
   * measured */
  int ngather;
  int64_t gather_tokens[CACHE_CURVE_N];
  double gather_ws[CACHE_CURVE_N], gather_roof[CACHE_CURVE_N], gather_row[CACHE_CURVE_N];
  sc_measurement mgather[CACHE_CURVE_N];
  double mem_bw; /* the median of bw_runs once the plan is done */
  sc_device kd;  /* dev with the measured rates (FLOP counts, the row kernels) */
} micro_run;

/* Write a complete hardware file for the cpu plugin named name: every measured figure with
 * the microbenchmark it comes from, the capacities with the file of this machine they come
 * from. SC_ENOTFOUND when the machine does not tell its memory or cache size. */
static int write_cpu_hardware(FILE *o, const char *name, const char *model, long threads,
                              const host_caps *hc, const micro_run *r, const char *cmd,
                              const char *stamp, sc_error *err) {
  double mem = hc->mem, llc = hc->llc;
  int llc_level = hc->llc_level;
  if (!(mem > 0) || !(llc > 0))
    return sc_error_set(err, SC_ENOTFOUND, "sample: this machine does not give its %s "
                        "(/proc/meminfo MemTotal, /sys/devices/system/cpu/cpu0/cache/)",
                        !(mem > 0) ? "memory size" : "cache sizes");
  fprintf(o, "# The host CPU as the cpu hardware plugin sees it: %ld BLAS thread%s. Written by\n"
             "#   %s\n# (%s): every rate is MEASURED by the microbenchmark named on its line\n"
             "# (the samples file's header keeps each median and spread); the capacities come\n"
             "# from this machine's /proc and /sys. Re-measure on another machine.\n",
          threads, threads == 1 ? "" : "s", cmd, stamp);
  fprintf(o, "[hardware]\nname = \"%s\"\nkind = \"cpu\"\n", name);
  fprintf(o, "cpu_model = \"");
  for (const char *c = model; *c; c++) fputc(*c == '"' || *c == '\\' ? '\'' : *c, o);
  fprintf(o, "\"\n");
  fprintf(o, "threads = %ld  # OPENBLAS_NUM_THREADS of the measurement\n", threads);
  fprintf(o, "mem_bytes = %.0f  # MemTotal, /proc/meminfo\n", mem);
  fprintf(o, "l2_bytes = %.0f  # the last-level cache (level %d), "
             "/sys/devices/system/cpu/cpu0/cache\n", llc, llc_level);
  if (hc->l1d > 0)
    fprintf(o, "l1_bytes = %.0f  # the level-1 data cache of one core, "
               "/sys/devices/system/cpu/cpu0/cache\n", hc->l1d);
  fprintf(o, "mem_bw_Bps = %.4g  # MEASURED: STREAM Add c = a + b over 2^24 floats, 12 B per "
             "element, the median of %d runs before, through and after the plan "
             "(micro.stream_add_bw_Bps)\n", r->mem_bw, r->nbw);
  fprintf(o, "cache_bw_Bps = %.4g  # MEASURED: STREAM Add over 3 x 16 KiB, cache resident "
             "(micro.stream_add_cache_bw_Bps)\n", r->cache_bw);
  if (r->rmw_bw > 0 && r->rmw_g0 > 0)
    fprintf(o, "rmw_bw_Bps = %.4g  # MEASURED: in place, main_grad += G over 2^24 floats, 12 B "
               "per element, the median of %d runs before, through and after the plan "
               "(micro.rmw_bw_Bps, %.4g), less the hits the cache curve gives its working set "
               "(miss share %.3f; micro.rmw_dram_bw_Bps)\n", r->rmw_bw, r->nrmw, r->rmw_raw,
            r->rmw_g0);
  else if (r->rmw_bw > 0)
    fprintf(o, "rmw_bw_Bps = %.4g  # MEASURED: in place, main_grad += G over 2^24 floats, 12 B "
               "per element, the median of %d runs before, through and after the plan "
               "(micro.rmw_bw_Bps)\n", r->rmw_bw, r->nrmw);
  if (r->gemm_exposed_bw > 0) {
    fprintf(o, "gemm_exposed_bw_Bps = %.4g  # MEASURED: the rate of the operand traffic sgemm "
               "does not overlap, from GEMMs with one dimension of 16 and two of %lld against "
               "the 2048^3 one (micro.gemm_exposed_bw_Bps)\n", r->gemm_exposed_bw,
            (long long)r->gsn[GEMM_EXPO_SIZES - 1]);
    fprintf(o, "gemm_exposed_knee_bytes = %.4g  # MEASURED: the operand working set at which "
               "half of it is exposed, from the same GEMMs with two dimensions of 512 to 2048 "
               "(micro.gemm_exposed_knee_bytes)\n", r->gemm_exposed_knee);
  }
  fprintf(o, "launch_s = %.4g  # MEASURED: a one-element add kernel call (micro.launch_s)\n",
          r->m1.median_s);
  fprintf(o, "flops_efficiency = 1.0  # the peak below is the achieved sgemm rate\n");
  fprintf(o, "mem_efficiency = 1.0  # the bandwidth above is the achieved STREAM rate\n");
  fprintf(o, "write_allocate = true  # a store to a line not in cache reads it first, so STREAM "
             "Add moves 16 bytes per element of the 12 it counts (STREAM reference page, "
             "\"Counting Bytes and FLOPS\", https://www.cs.virginia.edu/stream/ref.html)\n");
  fprintf(o, "vector_flops_per_s = %.4g  # MEASURED: layer-norm forward 256 x 1024, 7 flops per "
             "element: vector kernels without a rate below (micro.vector_flops_per_s)\n",
          r->vector_rate);
  for (int d = 0; d < 2; d++) {
    if (r->attn_eff[d] > 0)
      fprintf(o, "attention_%s_efficiency = %.4g  # MEASURED: causal attention 8 x 512^2 at "
                 "head dims 32 and 128, the matmul part, of the sgemm rate "
                 "(micro.attention_%s_efficiency)\n", d ? "bwd" : "fwd", r->attn_eff[d],
              d ? "bwd" : "fwd");
  }
  fprintf(o, "attention_block_q = %d  # the cpu plugin's attention kernel computes blocks of %d "
             "query rows against the keys the block's last row sees, diagonal blocks whole "
             "(SC__CPU_ATTN_BLOCK, plugins/hardware/cpu_attn_block.h)\n", SC__CPU_ATTN_BLOCK,
          SC__CPU_ATTN_BLOCK);
  if (r->nshare > 0) {
    fprintf(o, "\n[hardware.cache_miss_share]  # MEASURED: the share of STREAM Add's traffic "
               "at each working set (bytes, 3 arrays) that goes at mem_bw_Bps, the rest at "
               "cache_bw_Bps, made non-decreasing (micro.cache_curve)\n");
    for (int j = 0; j < r->nshare; j++)
      fprintf(o, "%.0f = %.3f  # %.4g B/s\n", r->curve_ws[j], r->curve_share[j],
              r->curve_rate[j]);
  }
  if (r->ngather > 0) {
    fprintf(o, "\n[hardware.gather_row_s]  # MEASURED: embedding lookups of 1 KiB rows at random, "
               "the time per row past the roofline of this file at each working set (bytes), "
               "made non-decreasing (micro.gather)\n");
    for (int j = 0; j < r->ngather; j++)
      fprintf(o, "%.0f = %.4g  # %.4g s measured, %.4g s roofline, %lld rows\n", r->gather_ws[j],
              r->gather_row[j], r->mgather[j].median_s, r->gather_roof[j],
              (long long)r->gather_tokens[j]);
  }
  if (r->nfill > 0) {
    fprintf(o, "\n[hardware.fill_bw_Bps]  # MEASURED: the zero-fill (memset) of one buffer of "
               "each size (bytes), bytes per second (micro.fill_curve)\n");
    for (int j = 0; j < r->nfill; j++)
      fprintf(o, "%.0f = %.4g\n", r->fill_bytes[j], r->fill_rate[j]);
  }
  if (r->nfill_cold > 0) {
    fprintf(o, "\n[hardware.fill_cold_bw_Bps]  # MEASURED: the zero-fill (memset) of one cold "
               "buffer of each size (bytes; each call after reading twice the last-level "
               "cache), bytes per second (micro.fill_cold_curve)\n");
    for (int j = 0; j < r->nfill_cold; j++)
      fprintf(o, "%.0f = %.4g\n", r->fill_cold_bytes[j], r->fill_cold_rate[j]);
  }
  fprintf(o, "\n[hardware.peak_flops_per_s]\nfp32 = %.4g  # MEASURED: cblas_sgemm 2048^3%s "
             "(micro.sgemm_flops_per_s)\n", r->gemm_rate,
          r->gemm_exposed_bw > 0 ? ", less its exposed operand traffic" : "");
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    int first = 1;
    if (!(r->krate[k] > 0)) continue;
    for (size_t j = 0; j < k; j++)
      if (strcmp(kernel_micros[j].family, km->family) == 0 && r->krate[j] > 0) first = 0;
    if (first) fprintf(o, "\n[hardware.kernel_flops_per_s.%s]\n", km->family);
    fprintf(o, "%u = %.4g  # MEASURED: %s", km->variant, r->krate[k], km->what);
    print_dims(o, km);
    if ((km->row & LESS_FILL) && r->nfill > 0) fprintf(o, ", less its table's zero-fill");
    fprintf(o, " (micro.kernel.%s.%u_flops_per_s)\n", km->family, km->variant);
  }
  if (hc->l1d > 0) {
    for (size_t k = 0; k < NKERNEL_MICROS; k++) {
      const kernel_micro *km = &kernel_micros[k];
      int first = 1;
      if (!(r->rdims[k][0] > 0)) continue;
      for (size_t j = 0; j < k; j++)
        if (strcmp(kernel_micros[j].family, km->family) == 0 && r->rdims[j][0] > 0) first = 0;
      if (first)
        fprintf(o, "\n[hardware.row_exposure.%s]  # the multiple of min(compute, memory) time "
                   "a row kernel adds %s\n", km->family,
                (km->row & ROW_RAMP) ? "once a row outgrows the L1 (l1_bytes)"
                                     : "at every row width (its rows measured at one width)");
      fprintf(o, "%u = %.3f  # MEASURED: %s %lld x %lld, about 4 x the last-level cache "
                 "(micro.row_exposure.%s.%u)\n", km->variant, r->rexpo[k], km->what,
              (long long)r->rdims[k][0], (long long)r->rdims[k][1], km->family, km->variant);
    }
  }
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    if (!(r->rrate[k][0] > 0)) continue;
    char on[96];
    if (km->row & ROW_HEADS)
      snprintf(on, sizeof on, "on whole causal heads of %d elements or more in cache, to %d "
               "columns", ROW_RATE_ELEMS, ROW_HEADS_MAX);
    else
      snprintf(on, sizeof on, "%d elements in cache", ROW_RATE_ELEMS);
    fprintf(o, "\n[hardware.row_rate.%s.%u]  # MEASURED: the %s's rate at each row width over "
               "its rate at %lld columns, %s (micro.row_rate.%s.%u)\n", km->family,
            km->variant, km->what, (long long)km->dims[1], on, km->family, km->variant);
    for (int w = 0; w < SC_ROW_RATE_WIDTHS; w++)
      if (r->rrate[k][w] > 0) /* a width not measured stays unstated */
        fprintf(o, "%lld = %.3f\n", (long long)SC_ROW_RATE_COLS0 << w, r->rrate[k][w]);
  }
  if (r->attn_sm[0] > 0 || r->attn_sm[1] > 0) {
    fprintf(o, "\n[hardware.kernel_flops_per_s.attention]\n");
    for (int d = 0; d < 2; d++) {
      if (r->attn_sm[d] > 0)
        fprintf(o, "%d = %.4g  # MEASURED: the softmax part of causal attention, %s, 5 flops "
                   "per unmasked score (micro.kernel.attention.%d_flops_per_s)\n", d,
                r->attn_sm[d], d ? "backward" : "forward", d);
    }
  }
  return ferror(o) ? sc_error_set(err, SC_EIO, "sample: write error on the hardware file")
                   : SC_OK;
}

/* STREAM Add on the micro's shape add (esz bytes per element), at least min_reps timed
 * repetitions: its bandwidth in STREAM's count of 12 (fp32) bytes per element into *bw. */
static int stream_bw(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *dev,
                     const sc_op_desc *add, double esz, uint32_t min_reps, double budget_s,
                     double *bw, sc_measurement *m, sc_error *err) {
  int rc = hw->measure(sc_registry_state(reg, &hw->hdr), dev, add, min_reps, budget_s, m, err);
  if (rc == SC_OK) *bw = 3.0 * esz * (double)add->dims[0] / m->median_s;
  return rc;
}

/* The working set of the in-place micro's embedding backward (1 token, hidden 1024, 16384
 * rows, fp32): the op's own, e*t*h + 8*t + v*h*(e + 4) (plugins/ops/embedding.c). */
#define RMW_MICRO_WS (4.0 * 1024 + 8.0 + 16384.0 * 1024 * 8.0)

/* The in-place read-modify-write rate (sc_device.rmw_bw_Bps) in *rate: ops[0] is the
 * embedding backward of one token over a table of n = dims[1] x dims[2] fp32 (it zero-fills
 * its gradient table, scatters the one row, then accumulates main_grad += G over the n
 * floats), ops[1] the zero-fill of that table alone, both in `rounds` interleaved rounds
 * (one: each measured once) of at least min_reps repetitions (m gets their timings); the
 * accumulate's 12 bytes per element (read G, read and write main_grad: STREAM's count of an
 * Add) over the difference of the medians. 0 when the fill is not less than the whole
 * (nothing measurable). */
static int rmw_rate(const sc_hw_plugin *hw, void *st, const sc_device *dev,
                    const sc_op_desc *ops, int rounds, uint32_t min_reps, double budget_s,
                    double *rate, sc_measurement *m, sc_error *err) {
  sc_measurement *out[2] = {&m[0], &m[1]};
  int rc = SC_OK;
  if (rounds > 1) {
    rc = measure_rounds(hw, st, dev, ops, 2, min_reps, budget_s, out, err);
  } else {
    for (int i = 0; i < 2 && rc == SC_OK; i++)
      rc = hw->measure(st, dev, &ops[i], min_reps, budget_s / 2.0, &m[i], err);
  }
  if (rc != SC_OK) return rc;
  const double dt = m[0].median_s - m[1].median_s;
  *rate = dt > 0 ? 12.0 * (double)ops[0].dims[1] * (double)ops[0].dims[2] / dt : 0.0;
  return SC_OK;
}

/* The in-place rate again, through and after the plan: one round of three repetitions each,
 * as STREAM Add's reruns. */
static int rmw_again(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *dev,
                     const sc_op_desc *ops, double *rate, sc_error *err) {
  sc_measurement m[2];
  return rmw_rate(hw, sc_registry_state(reg, &hw->hdr), dev, ops, 1, 3, 0.1, rate, m, err);
}

/* The pass of a shape whose median to keep: the median of the pass medians (the lower of
 * two), so that one slow spell of a shared machine (a whole burst 1.3-1.8x slow) does not
 * become the shape's time. m[0..n) are the passes' measurements, n >= 1. */
static size_t median_pass(const sc_measurement *m, size_t n) {
  size_t order[SAMPLE_MAX_PASSES];
  for (size_t i = 0; i < n; i++) order[i] = i;
  for (size_t i = 1; i < n; i++) /* insertion sort by median, n <= SAMPLE_MAX_PASSES */
    for (size_t j = i; j > 0 && m[order[j]].median_s < m[order[j - 1]].median_s; j--) {
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  return order[(n - 1) / 2];
}

/* Measure the plan's shapes into f within seconds (the progress bar on a tty), in passes:
 * every shape once per pass, pass after pass, so that a shape's passes lie a pass's length
 * apart (minutes on a CPU), and each row is the shape's median pass (median_pass). Each
 * measurement gets an equal share of what is left of the budget, less the overheads
 * expected around the measurements ahead (as much as each took so far), at most
 * 2 / passes s. A
 * shared machine's memory bandwidth drifts over a run by 10 % and more, and the
 * memory-bound samples follow it: STREAM Add (add, esz bytes per element) runs again after
 * every tenth of the measurements, into bw[*nbw...] (at most SAMPLE_MAX_BW_RUNS in all), so
 * that the hardware file can state the rate of the whole run; with rmw (2 ops, rmw_rate),
 * the in-place rate too, into rmwr[*nrmw...]. *done gets the shapes
 * measured (in at least one pass). The rows are written once the passes are done, then a
 * comment with how far the passes disagreed. */
static int run_plan(sc_registry *reg, const sc_hw_plugin *hw, const sc_device *dev,
                    const sc_sample_plan *pl, FILE *f, double seconds, long min_reps, int passes,
                    int tty,
                    const sc_op_desc *add, double esz, double *bw, int *nbw,
                    const sc_op_desc *rmw, double *rmwr, int *nrmw, size_t *done,
                    sc_error *err) {
  const size_t n = pl->n, total = n * (size_t)passes;
  const size_t every = total >= 10 ? (total + 9) / 10 : total + 1;
  sc_measurement *ms = calloc(total ? total : 1, sizeof *ms);
  unsigned char *got = calloc(n ? n : 1, 1), *skip = calloc(n ? n : 1, 1);
  double *spread = calloc(n ? n : 1, sizeof *spread);
  double start = now_s(), last_bar = 0.0;
  /* wall time past the measurements' own budgets so far (allocation, fill, warm-up, a last
   * sample that overruns, the STREAM runs between them), and in how many measurements: the
   * shares ahead leave room for as much again, so that the last pass is not cut short */
  double over = 0.0;
  size_t nover = 0;
  size_t k = 0, measured = 0, nspread = 0;
  int rc = SC_OK;
  if (ms == NULL || got == NULL || skip == NULL || spread == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "sample: out of memory");
    goto out;
  }
  for (k = 0; k < total; k++) {
    const size_t i = k % n, p = k / n;
    sc_measurement m;
    double t_iter = now_s(), elapsed = t_iter - start, left = seconds - elapsed;
    double ahead = (double)(total - k), reserve = nover ? over / (double)nover * ahead : 0.0;
    double per = (left - reserve) / ahead;
    if (seconds == 0) { /* no budget: every measurement, each its min_reps repetitions */
      per = 0.0;
    } else {
      if (left <= 0) break;
      if (per < 0.1 * left / ahead) per = 0.1 * left / ahead; /* overheads beyond the budget */
      if (per > 2.0 / passes) per = 2.0 / passes;
    }
    if (tty && (elapsed - last_bar > 0.2 || k == 0)) {
      progress(k, total, elapsed, seconds);
      last_bar = elapsed;
    }
    if (k > 0 && k % every == 0 && *nbw < SAMPLE_MAX_BW_RUNS) {
      if ((rc = stream_bw(reg, hw, dev, add, esz, 5, 0.3, &bw[*nbw], &m, err)) != SC_OK)
        goto out;
      (*nbw)++;
      if (rmw != NULL) {
        if ((rc = rmw_again(reg, hw, dev, rmw, &rmwr[*nrmw], err)) != SC_OK) goto out;
        (*nrmw)++;
      }
    }
    if (skip[i]) continue;
    int mrc = hw->measure(sc_registry_state(reg, &hw->hdr), dev, &pl->ops[i],
                          (uint32_t)min_reps, per * 0.8, &ms[i * (size_t)passes + p], err);
    /* a family or variant this device's sampler lacks, or a shape its memory cannot hold
     * (a plan file's operators are a real job's, an optimizer step over all its weights) */
    if (mrc == SC_EUNSUPPORTED || mrc == SC_ELIMIT) {
      fprintf(f, "# skipped = %s\n", err->msg);
      sc_error_clear(err);
      skip[i] = 1;
      continue;
    }
    if (mrc != SC_OK) {
      rc = mrc;
      goto out;
    }
    got[i]++;
    over += fmax(0.0, now_s() - t_iter - per * 0.8);
    nover++;
  }
  if (tty) {
    progress(k, total, now_s() - start, seconds);
    fprintf(stderr, "\n");
  }
  for (size_t i = 0; i < n; i++) {
    const sc_measurement *mi = &ms[i * (size_t)passes];
    if (got[i] == 0) continue;
    if (sc_samples_write_row(f, &pl->ops[i], &mi[median_pass(mi, got[i])], err) != SC_OK) {
      rc = err->code;
      goto out;
    }
    measured++;
    if (got[i] >= 2) {
      double lo = mi[0].median_s, hi = mi[0].median_s;
      for (size_t q = 1; q < got[i]; q++) {
        if (mi[q].median_s < lo) lo = mi[q].median_s;
        if (mi[q].median_s > hi) hi = mi[q].median_s;
      }
      spread[nspread++] = hi / lo - 1.0;
    }
  }
  if (nspread > 0) {
    size_t over10 = 0;
    for (size_t i = 0; i < nspread; i++) over10 += spread[i] > 0.1;
    double med = sc__median(spread, nspread); /* sorts spread */
    fprintf(f, "# passes.spread = the slowest pass's median over the fastest's, less 1, of the "
               "%zu shapes measured in 2 or more passes: median %.1f %%, 90th percentile "
               "%.1f %%, largest %.1f %%; %zu over 10 %%\n", nspread, 100.0 * med,
            100.0 * spread[(size_t)(0.9 * (double)(nspread - 1))], 100.0 * spread[nspread - 1],
            over10);
  }
  if (k < total)
    fprintf(f, "# stopped = budget of %g s spent after %zu of %zu planned measurements "
               "(%zu shapes x %d passes)\n", seconds, k, total, n, passes);
  *done = measured;
out:
  free(ms);
  free(got);
  free(skip);
  free(spread);
  return rc;
}

/* Measure ops[0..n) in MICRO_ROUNDS rounds, each measuring every op once (min_reps, a
 * MICRO_ROUNDS-th of budget_s): a slow spell of a shared machine shorter than a round then
 * moves one of an op's rounds, not its result. *out[i] gets the median of op i's round
 * medians, with p10/p90 the lowest and highest round median, min and max over every
 * repetition and reps their sum. The microbenchmarks whose ratios set hardware figures
 * (attention's two head dims, the skinny GEMMs against each other) use it. */
#define MICRO_ROUNDS 3
static int measure_rounds(const sc_hw_plugin *hw, void *st, const sc_device *dev,
                          const sc_op_desc *ops, size_t n, uint32_t min_reps, double budget_s,
                          sc_measurement **out, sc_error *err) {
  sc_measurement m[32][MICRO_ROUNDS];
  if (n > 32) return sc_error_set(err, SC_EINVAL, "sample: at most 32 ops per round");
  for (int k = 0; k < MICRO_ROUNDS; k++)
    for (size_t i = 0; i < n; i++) {
      int rc = hw->measure(st, dev, &ops[i], min_reps, budget_s / MICRO_ROUNDS, &m[i][k], err);
      if (rc != SC_OK) return rc;
    }
  for (size_t i = 0; i < n; i++) {
    double med[MICRO_ROUNDS];
    sc_measurement *o = out[i];
    memset(o, 0, sizeof *o);
    o->min_s = m[i][0].min_s;
    o->max_s = m[i][0].max_s;
    for (int k = 0; k < MICRO_ROUNDS; k++) {
      med[k] = m[i][k].median_s;
      o->reps += m[i][k].reps;
      if (m[i][k].min_s < o->min_s) o->min_s = m[i][k].min_s;
      if (m[i][k].max_s > o->max_s) o->max_s = m[i][k].max_s;
    }
    o->median_s = sc__median(med, MICRO_ROUNDS); /* sorts med */
    o->p10_s = med[0];
    o->p90_s = med[MICRO_ROUNDS - 1];
  }
  return SC_OK;
}

/* A microbenchmark by size: proto with dims[0] = n for each size llc x cache_curve_512ths[j]
 * / 512 of unit bytes per n (n rounded down to a multiple of quantum, at least minimum;
 * sizes that coincide on a tiny cache measured once), in MICRO_ROUNDS interleaved rounds;
 * bytes[j] = unit x n, rate[j] = bytes[j] / its median, m[j] its timing. Returns the count in
 * *np. */
static int measure_by_size(const sc_hw_plugin *hw, void *st, const sc_device *dev,
                           const sc_op_desc *proto, double llc, double unit, int64_t quantum,
                           int64_t minimum, double budget_s, double *bytes, double *rate,
                           sc_measurement *m, int *np, sc_error *err) {
  sc_op_desc ops[CACHE_CURVE_N];
  sc_measurement *out[CACHE_CURVE_N];
  int k = 0;
  for (int j = 0; j < CACHE_CURVE_N; j++) {
    int64_t n = (int64_t)(llc * cache_curve_512ths[j] / 512.0 / unit);
    n = n < minimum ? minimum : n - n % quantum;
    if (k > 0 && n <= ops[k - 1].dims[0]) continue; /* a tiny cache: sizes that coincide */
    ops[k] = *proto;
    ops[k].dims[0] = n;
    out[k] = &m[k];
    k++;
  }
  int rc = measure_rounds(hw, st, dev, ops, (size_t)k, 5, budget_s, out, err);
  if (rc != SC_OK) return rc;
  for (int j = 0; j < k; j++) {
    bytes[j] = unit * (double)ops[j].dims[0];
    rate[j] = bytes[j] / m[j].median_s;
  }
  *np = k;
  return SC_OK;
}

/* The share of traffic that misses the caches by working set (sc_device_miss_share):
 * STREAM Add over three arrays of ws / 3 bytes each, for ws from llc / 512 to 4 llc
 * (cache_curve_512ths), in MICRO_ROUNDS interleaved rounds. A shared or virtualised
 * last-level cache holds less than its nominal size, and the smooth hit rate
 * ws / (ws + llc) still gives a STREAM-sized working set 15 % of cache hits; the measured
 * curve ends at the STREAM rate. The shares themselves need the run's DRAM rate, known after
 * the plan (write_cpu_hardware, sc_cache_miss_curve). */
static int measure_cache_curve(micro_run *r, const sc_hw_plugin *hw, void *st,
                               const sc_device *dev, double llc, double budget_s,
                               sc_error *err) {
  return measure_by_size(hw, st, dev, &r->add, llc, 3.0 * r->esz, 16, 16, budget_s,
                         r->curve_ws, r->curve_rate, r->mcurve, &r->ncurve, err);
}

/* The zero-fill rate by buffer size (sc_device_fill_bw): the memcpy family's FILL (the C
 * library's memset, as the embedding backward's gradient table is cleared) of one buffer of
 * llc / 512 to 4 llc bytes (cache_curve_512ths), in MICRO_ROUNDS interleaved rounds. A C
 * library switches memset to non-temporal stores near the last-level cache's size, so the
 * rate is not STREAM's: on the Zen 4 guest 95-116 GB/s up to 8 MiB, 42-47 at 20-24 MiB and
 * 70-76 from 32 MiB on (docs/operators.md, "Zero-fills").
 * With cold, the rate of a cold buffer (sc_device_fill_cold_bw): the same fills with
 * SC_OP_COLD, which the cpu plugin times one call at a time, each after reading an eviction
 * buffer of twice the last-level cache: the buffer's lines in memory, clean, as a training
 * step leaves a gradient table it last cleared a step before. Below the C library's
 * non-temporal threshold memset's ordinary stores then read each line first (docs/
 * operators.md, "Cold parameters"). */
static int measure_fill_curve(micro_run *r, const sc_hw_plugin *hw, void *st,
                              const sc_device *dev, double llc, int cold, double budget_s,
                              sc_error *err) {
  sc_op_desc fill = {0};
  fill.family = SC_OP_MEMCPY;
  fill.variant = SC_MEMCPY_FILL;
  fill.dtype = SC_DTYPE_FP32;
  fill.ndims = 1;
  fill.flags = cold ? SC_OP_COLD : 0;
  return measure_by_size(hw, st, dev, &fill, llc, 1.0, 64, 4096, budget_s,
                         cold ? r->fill_cold_bytes : r->fill_bytes,
                         cold ? r->fill_cold_rate : r->fill_rate, cold ? r->mfill_cold : r->mfill,
                         cold ? &r->nfill_cold : &r->nfill, err);
}

/* The operand traffic a CPU BLAS does not overlap with its arithmetic (packing, C between
 * blocks; sc_device_gemm_exposed_s). Times GEMMs with one dimension of 16 and two of n, for
 * n = 512, 1024, 2048 and one n >= 4096 whose 4 n^2 bytes are at least twice the last-level
 * cache (each the median over the 16 as m, n and k): their traffic per FLOP is 64 to 512
 * times the 2048^3 GEMM's. With the model
 *     t = F / P + g ws / X,   g = ws / (ws + K),   ws = e (m k + k n + m n),
 * sc_gemm_exposure_solve gives P (r->gemm_rate), X (r->gemm_exposed_bw) and K
 * (r->gemm_exposed_knee) from the 2048^3 GEMM and these, the 2048^3 one timed in the same
 * interleaved rounds (into r->mg, r->gemm_raw_rate). When they show no exposure, X and K
 * stay 0 and P is the raw 2048^3 rate. */
static int measure_gemm_exposure(micro_run *r, sc_registry *reg, const sc_hw_plugin *hw,
                                 const sc_device *dev, double llc, double budget_s,
                                 sc_error *err) {
  void *st = sc_registry_state(reg, &hw->hdr);
  double t[GEMM_EXPO_SIZES], F[GEMM_EXPO_SIZES], W[GEMM_EXPO_SIZES];
  const double fb = 2.0 * (double)r->gn * (double)r->gn * (double)r->gn;
  const double wb = r->esz * 3.0 * (double)r->gn * (double)r->gn;
  double P = 0, X = 0, K = 0;
  const int last = GEMM_EXPO_SIZES - 1;
  sc_op_desc ops[GEMM_EXPO_SIZES * 3 + 1];
  sc_measurement *outs[GEMM_EXPO_SIZES * 3 + 1], big;
  for (int j = 0; j < GEMM_EXPO_SIZES; j++) {
    int64_t n = (int64_t)512 << j;
    if (j == last)
      while (4.0 * (double)n * (double)n < 2.0 * llc && n < 16384) n *= 2;
    r->gsn[j] = n;
    for (int i = 0; i < 3; i++) {
      ops[3 * j + i] = r->g;
      for (int d = 1; d <= 3; d++) ops[3 * j + i].dims[d] = d == i + 1 ? 16 : n;
      outs[3 * j + i] = &r->mgs[j][i];
    }
  }
  /* the 2048^3 GEMM in the same rounds, so that a slow spell moves P and X alike */
  ops[GEMM_EXPO_SIZES * 3] = r->g;
  outs[GEMM_EXPO_SIZES * 3] = &big;
  int rc = measure_rounds(hw, st, dev, ops, GEMM_EXPO_SIZES * 3 + 1, 5, budget_s, outs, err);
  if (rc != SC_OK) return rc;
  r->mg = big; /* the header's micro.sgemm */
  r->gemm_rate = r->gemm_raw_rate = fb / big.median_s;
  for (int j = 0; j < GEMM_EXPO_SIZES; j++) {
    double ts[3] = {r->mgs[j][0].median_s, r->mgs[j][1].median_s, r->mgs[j][2].median_s};
    const double n = (double)r->gsn[j];
    t[j] = sc__median(ts, 3);
    F[j] = 2.0 * 16.0 * n * n;
    W[j] = r->esz * (2.0 * 16.0 * n + n * n);
  }
  if (sc_gemm_exposure_solve(fb, wb, big.median_s, F, W, t, GEMM_EXPO_SIZES, &P, &X, &K) !=
      SC_OK)
    return SC_OK; /* nothing exposed: not stated */
  r->gemm_rate = P;
  r->gemm_exposed_bw = X;
  r->gemm_exposed_knee = K;
  return SC_OK;
}

/* The attention micros' matmul efficiency and softmax rate (attn_split) from r's timings
 * and its GEMM rate. The matmul work counts the scores the kernel's blocks compute (the
 * attention plugin's count on a device stating attention_block_q, as the hardware file
 * written does), the softmax work the unmasked ones. */
static void attn_rates(micro_run *r) {
  sc_device tile;
  memset(&tile, 0, sizeof tile);
  tile.attention_block_q = SC__CPU_ATTN_BLOCK;
  const double sq = (double)r->af.dims[3], sk = (double)r->af.dims[4];
  const double heads = (double)r->af.dims[0] * (double)r->af.dims[1];
  const double scores = 0.5 * heads * sq * sk; /* unmasked */
  const double computed = sc_device_attention_causal_share(&tile, sq, sk) * heads * sq * sk;
  attn_split(4.0 * computed * 32, 4.0 * computed * 128, scores, r->maf.median_s,
             r->maf2.median_s, r->gemm_rate, &r->attn_eff[0], &r->attn_sm[0]);
  attn_split(10.0 * computed * 32, 10.0 * computed * 128, scores, r->mab.median_s,
             r->mab2.median_s, r->gemm_rate, &r->attn_eff[1], &r->attn_sm[1]);
}

/* The microbenchmarks before the plan: sgemm (or the device's GEMM), STREAM Add, a kernel
 * call; on the CPU also the cache-resident STREAM Add, the layer-norm rate, the attention
 * kernel split into its two parts, the GEMM's exposed operand traffic (where sysfs gives the
 * last-level cache) and every vector kernel's own rate. */
static int measure_micros(micro_run *r, sc_registry *reg, const sc_hw_plugin *hw,
                          const sc_device *dev, const host_caps *caps, const char *families,
                          int quick, int tty, sc_error *err) {
  void *st = sc_registry_state(reg, &hw->hdr);
  const int gpu = r->gpu;
  r->gn = gpu ? 8192 : 2048;
  r->esz = gpu ? 2.0 : 4.0;
  r->g.family = SC_OP_GEMM; r->g.dtype = r->dtype; r->g.ndims = 4;
  r->g.dims[0] = 1; r->g.dims[1] = r->gn; r->g.dims[2] = r->gn; r->g.dims[3] = r->gn;
  r->add.family = SC_OP_ELEMENTWISE; r->add.variant = SC_EW_ADD; r->add.dtype = r->dtype;
  r->add.ndims = 1; r->add.dims[0] = (int64_t)1 << (gpu ? 28 : 24);
  r->one = r->add;
  r->one.dims[0] = 1;
  /* CPU: STREAM Add on 3 x 16 KiB arrays, which stay in the core's L1/L2: the bandwidth of
   * cache-resident operators (cache_bw_Bps). */
  r->addc = r->add;
  r->addc.dims[0] = 4096;
  /* CPU: the vector families' arithmetic rate, a layer-norm forward of 256 x 1024 fp32
   * (1 MiB, cache resident), in the norm plugin's count of 7 flops per element. */
  r->ln.family = SC_OP_NORM; r->ln.variant = SC_NORM_OP_LAYERNORM_FWD; r->ln.dtype = r->dtype;
  r->ln.ndims = 2; r->ln.dims[0] = 256; r->ln.dims[1] = 1024;
  /* CPU: the attention kernel's rate, forward and backward, on one causal head block of
   * b 1, 8 heads, 512 x 512, head dim 32 ... */
  r->af.family = SC_OP_ATTENTION; r->af.variant = SC_ATTN_FLASH_FWD; r->af.dtype = r->dtype;
  r->af.ndims = 7;
  r->af.dims[0] = 1; r->af.dims[1] = 8; r->af.dims[2] = 8; r->af.dims[3] = 512;
  r->af.dims[4] = 512; r->af.dims[5] = 32; r->af.dims[6] = 1;
  r->ab = r->af;
  r->ab.variant = SC_ATTN_FLASH_BWD;
  /* ... and at head dim 128: the matmul work grows 4x, the softmax work on the scores does
   * not, which separates the two (attn_split). */
  r->af2 = r->af;
  r->af2.dims[5] = 128;
  r->ab2 = r->ab;
  r->ab2.dims[5] = 128;
  const sc_op_desc attn[4] = {r->af, r->af2, r->ab, r->ab2};
  sc_measurement *attn_m[4] = {&r->maf, &r->maf2, &r->mab, &r->mab2};
  if (tty) fprintf(stderr, gpu ? "microbenchmarks (bf16 GEMM 8192^3, STREAM Add 3 x 512 MiB, "
                                 "launch)..."
                             : "microbenchmarks (sgemm 2048^3, STREAM Add 3 x 64 MiB, launch, "
                               "layer-norm, attention, STREAM Add in cache)...");
  /* on a CPU whose last-level cache sysfs gives, the 2048^3 sgemm is timed with the skinny
   * GEMMs instead (measure_gemm_exposure) */
  const int gemm_in_rounds = !gpu && caps->llc > 0;
  if ((!gemm_in_rounds && hw->measure(st, dev, &r->g, 5, 3.0, &r->mg, err) != SC_OK) ||
      stream_bw(reg, hw, dev, &r->add, r->esz, 5, 2.0, &r->bw_runs[0], &r->ma, err) != SC_OK ||
      hw->measure(st, dev, &r->one, 9, 0.5, &r->m1, err) != SC_OK ||
      (!gpu && (hw->measure(st, dev, &r->ln, 9, 1.0, &r->mln, err) != SC_OK ||
                measure_rounds(hw, st, dev, attn, 4, 5, 1.0, attn_m, err) != SC_OK ||
                stream_bw(reg, hw, dev, &r->addc, r->esz, 9, 1.0, &r->cache_bw, &r->mc, err) !=
                    SC_OK)))
    return err->code;
  if (tty) fprintf(stderr, "\n");
  /* The rates the microbenchmarks give (attention's below, with its kernel's tile). */
  if (!gemm_in_rounds) {
    r->gemm_rate = 2.0 * (double)r->gn * (double)r->gn * (double)r->gn / r->mg.median_s;
    r->gemm_raw_rate = r->gemm_rate;
  }
  r->nbw = 1;
  r->mem_bw = r->bw_runs[0];
  r->kd = *dev;
  if (gpu) return SC_OK;
  /* CPU: the in-place read-modify-write rate over 2^24 floats, STREAM Add's size (rmw_rate);
   * again through and after the plan */
  r->rmw[0].family = SC_OP_EMBEDDING; r->rmw[0].variant = SC_EMBED_BWD;
  r->rmw[0].dtype = SC_DTYPE_FP32; r->rmw[0].ndims = 3;
  r->rmw[0].dims[0] = 1; r->rmw[0].dims[1] = 1024; r->rmw[0].dims[2] = 16384;
  r->rmw[1].family = SC_OP_MEMCPY; r->rmw[1].variant = SC_MEMCPY_FILL;
  r->rmw[1].dtype = SC_DTYPE_FP32; r->rmw[1].ndims = 1;
  r->rmw[1].dims[0] = 4 * 1024 * 16384;
  if (tty) fprintf(stderr, "in-place a += b over 2^24 floats...");
  int wrc = quick ? rmw_rate(hw, st, dev, r->rmw, 1, 2, 0.1, &r->rmw_runs[0], r->mrmw, err)
                  : rmw_rate(hw, st, dev, r->rmw, MICRO_ROUNDS, 5, 1.0, &r->rmw_runs[0], r->mrmw,
                             err);
  if (wrc != SC_OK) return wrc;
  r->nrmw = 1;
  if (gemm_in_rounds) {
    if (tty) fprintf(stderr, "\nSTREAM Add from 1/512 to 4 x the last-level cache...");
    int crc = measure_cache_curve(r, hw, st, dev, caps->llc, quick ? 0.3 : 1.5, err);
    if (crc != SC_OK) return crc;
    if (tty) fprintf(stderr, "\nzero-fills from 1/512 to 4 x the last-level cache...");
    crc = measure_fill_curve(r, hw, st, dev, caps->llc, 0, quick ? 0.2 : 1.0, err);
    if (crc != SC_OK) return crc;
    if (tty) fprintf(stderr, "\ncold zero-fills from 1/512 to 4 x the last-level cache...");
    crc = measure_fill_curve(r, hw, st, dev, caps->llc, 1, quick ? 0.2 : 1.5, err);
    if (crc != SC_OK) return crc;
    if (tty) fprintf(stderr, "\nGEMMs with a dimension of 16 (exposed operand traffic)...");
    int grc = measure_gemm_exposure(r, reg, hw, dev, caps->llc, quick ? 0.15 : 0.6, err);
    if (grc != SC_OK) return grc;
  }
  attn_rates(r);
  r->vector_rate = 7.0 * (double)r->ln.dims[0] * (double)r->ln.dims[1] / r->mln.median_s;
  /* each vector kernel's own rate (FLOP counts need an fp32 rate on the device) */
  r->kd.peak_flops_per_s[SC_DTYPE_FP32] = r->gemm_rate;
  r->kd.mem_bw_Bps = r->mem_bw;
  r->kd.flops_efficiency = r->kd.mem_efficiency = 1.0;
  r->kd.fill_points = (uint32_t)r->nfill; /* for the LESS_FILL kernels */
  for (int j = 0; j < r->nfill; j++) {
    r->kd.fill_bytes[j] = r->fill_bytes[j];
    r->kd.fill_bw_Bps[j] = r->fill_rate[j];
  }
  if (tty) fprintf(stderr, "per-kernel rates (%zu kernels)...", NKERNEL_MICROS);
  int rc = measure_kernel_rates(reg, hw, &r->kd, families, quick ? 0.05 : 0.3, r->krate,
                                r->kmeas, err);
  if (rc != SC_OK) return rc;
  if (tty) fprintf(stderr, "\nrow kernels by row width...");
  rc = measure_row_rates(reg, hw, &r->kd, families, quick ? 0.02 : 0.2, r->rrate, r->rrmeas,
                         err);
  if (tty && rc == SC_OK) fprintf(stderr, "\n");
  return rc;
}

/* The samples file's header: the run and the microbenchmarks before the plan. */
static void write_samples_header(FILE *f, const micro_run *r, const char *device,
                                 const char *model, const char *cmd, const char *stamp,
                                 double seconds, long min_reps, int passes) {
  const char *env = getenv("OPENBLAS_NUM_THREADS");
  fprintf(f, "%s\n", SC_SAMPLES_LIVE);
  fprintf(f, "# device_kind = %s\n# cpu_model = %s\n", device, model);
  fprintf(f, "# OPENBLAS_NUM_THREADS = %d\n", openblas_get_num_threads());
  fprintf(f, "# OPENBLAS_NUM_THREADS_env = %s\n", env ? env : "(unset; set by --threads)");
  fprintf(f, "# openblas_config = %s\n", openblas_get_config());
  fprintf(f, "# command = %s\n# date = %s\n", cmd, stamp);
  fprintf(f, "# seconds_budget = %g\n# min_reps = %ld\n# dtype = %s\n", seconds, min_reps,
          sc_dtype_name(r->dtype));
  fprintf(f, "# passes = %d  (each shape measured once per pass, a pass's length apart; its "
             "row is the pass with the median median, the lower of two)\n", passes);
  if (!r->gpu) {
    fprintf(f, "# micro.sgemm_flops_per_s = %.4g\n", r->gemm_rate);
    fprintf(f, "# micro.sgemm = cblas_sgemm 2048x2048x2048 fp32: median %.4g s of %u (min "
               "%.4g, max %.4g), %.4g FLOP/s%s\n", r->mg.median_s, r->mg.reps, r->mg.min_s,
            r->mg.max_s, r->gemm_raw_rate,
            r->gemm_exposed_bw > 0 ? "; the rate above excludes its exposed operand traffic"
                                   : "");
    if (r->gsn[0] > 0) {
      fprintf(f, "# micro.gemm_exposed_bw_Bps = %.4g%s\n", r->gemm_exposed_bw,
              r->gemm_exposed_bw > 0 ? "" : "  (none measurable: not stated)");
      fprintf(f, "# micro.gemm_exposed_knee_bytes = %.4g\n", r->gemm_exposed_knee);
      fprintf(f, "# micro.gemm_exposed = cblas_sgemm fp32 with one dimension of 16 (as m, n, k) "
                 "and two of n: medians");
      for (int j = 0; j < GEMM_EXPO_SIZES; j++)
        fprintf(f, "%s n %lld: %.4g, %.4g, %.4g s", j ? ";" : "", (long long)r->gsn[j],
                r->mgs[j][0].median_s, r->mgs[j][1].median_s, r->mgs[j][2].median_s);
      fprintf(f, "\n");
    }
    fprintf(f, "# micro.stream_add_bw_Bps.first = %.4g\n", r->bw_runs[0]);
    fprintf(f, "# micro.stream_add = c = a + b over 2^24 floats (12 bytes per element, STREAM's "
               "count), before the plan: median %.4g s of %u (min %.4g, max %.4g); run again "
               "through the plan (the trailer)\n",
            r->ma.median_s, r->ma.reps, r->ma.min_s, r->ma.max_s);
    if (r->nrmw > 0) {
      fprintf(f, "# micro.rmw_bw_Bps.first = %.4g\n", r->rmw_runs[0]);
      fprintf(f, "# micro.rmw = main_grad += G over 2^24 floats (12 bytes per element): the "
                 "embedding backward 1 x 1024 x 16384 fp32 (zero-fill, one row, accumulate) "
                 "median %.4g s of %u less the zero-fill of its 64 MiB table median %.4g s of "
                 "%u, in %d interleaved rounds, before the plan; run again through the plan "
                 "(the trailer)\n", r->mrmw[0].median_s, r->mrmw[0].reps, r->mrmw[1].median_s,
              r->mrmw[1].reps, MICRO_ROUNDS);
    }
    fprintf(f, "# micro.attention_fwd_efficiency = %.4g\n", r->attn_eff[0]);
    fprintf(f, "# micro.attention_bwd_efficiency = %.4g\n", r->attn_eff[1]);
    fprintf(f, "# micro.kernel.attention.0_flops_per_s = %.4g\n", r->attn_sm[0]);
    fprintf(f, "# micro.kernel.attention.1_flops_per_s = %.4g\n", r->attn_sm[1]);
    fprintf(f, "# micro.attention = causal attention b 1, 8 heads, 512 x 512, fp32, head dim 32 "
               "and 128, split into the matmul part (efficiency, of the sgemm rate) and the "
               "softmax part (5 flops per unmasked score): forward median %.4g s of %u and "
               "%.4g s of %u, backward %.4g s of %u and %.4g s of %u\n", r->maf.median_s,
            r->maf.reps, r->maf2.median_s, r->maf2.reps, r->mab.median_s, r->mab.reps,
            r->mab2.median_s, r->mab2.reps);
    fprintf(f, "# micro.stream_add_cache_bw_Bps = %.4g\n", r->cache_bw);
    fprintf(f, "# micro.stream_add_cache = c = a + b over 4096 floats (3 x 16 KiB, cache "
               "resident): median %.4g s of %u (min %.4g, max %.4g)\n",
            r->mc.median_s, r->mc.reps, r->mc.min_s, r->mc.max_s);
    for (int j = 0; j < r->ncurve; j++)
      fprintf(f, "# micro.cache_curve.%.0f = STREAM Add over 3 x %.0f bytes: median %.4g s of "
                 "%u (round medians %.4g to %.4g), %.4g B/s\n", r->curve_ws[j],
              r->curve_ws[j] / 3.0, r->mcurve[j].median_s, r->mcurve[j].reps,
              r->mcurve[j].p10_s, r->mcurve[j].p90_s, r->curve_rate[j]);
    for (int j = 0; j < r->nfill; j++)
      fprintf(f, "# micro.fill_curve.%.0f = memset of %.0f bytes to zero: median %.4g s of %u "
                 "(round medians %.4g to %.4g), %.4g B/s\n", r->fill_bytes[j], r->fill_bytes[j],
              r->mfill[j].median_s, r->mfill[j].reps, r->mfill[j].p10_s, r->mfill[j].p90_s,
              r->fill_rate[j]);
    for (int j = 0; j < r->nfill_cold; j++)
      fprintf(f, "# micro.fill_cold_curve.%.0f = memset of %.0f cold bytes to zero (each call "
                 "after reading twice the last-level cache): median %.4g s of %u (round medians "
                 "%.4g to %.4g), %.4g B/s\n", r->fill_cold_bytes[j], r->fill_cold_bytes[j],
              r->mfill_cold[j].median_s, r->mfill_cold[j].reps, r->mfill_cold[j].p10_s,
              r->mfill_cold[j].p90_s, r->fill_cold_rate[j]);
    fprintf(f, "# micro.vector_flops_per_s = %.4g\n", r->vector_rate);
    fprintf(f, "# micro.vector = layer-norm forward 256 x 1024 fp32 (7 flops per element, the "
               "norm plugin's count): median %.4g s of %u (min %.4g, max %.4g)\n",
            r->mln.median_s, r->mln.reps, r->mln.min_s, r->mln.max_s);
    for (size_t k = 0; k < NKERNEL_MICROS; k++) {
      const kernel_micro *km = &kernel_micros[k];
      if (!(r->krate[k] > 0)) continue;
      fprintf(f, "# micro.kernel.%s.%u_flops_per_s = %.4g\n", km->family, km->variant,
              r->krate[k]);
      fprintf(f, "# micro.kernel.%s.%u = %s", km->family, km->variant, km->what);
      print_dims(f, km);
      fprintf(f, " fp32 (the %s plugin's FLOP count): median %.4g s of %u (round medians "
              "%.4g to %.4g; min %.4g, max %.4g)%s\n", km->family, r->kmeas[k].median_s,
              r->kmeas[k].reps, r->kmeas[k].p10_s, r->kmeas[k].p90_s, r->kmeas[k].min_s,
              r->kmeas[k].max_s,
              (km->row & LESS_FILL) && r->nfill > 0
                  ? "; the rate over the median less its table's zero-fill at the fill curve"
                  : "");
    }
    for (size_t k = 0; k < NKERNEL_MICROS; k++) {
      const kernel_micro *km = &kernel_micros[k];
      if (!(r->rrate[k][0] > 0)) continue;
      int nw = 0;
      while (nw < SC_ROW_RATE_WIDTHS && r->rrate[k][nw] > 0) nw++;
      fprintf(f, "# micro.row_rate.%s.%u =", km->family, km->variant);
      for (int w = 0; w < nw; w++) fprintf(f, " %.4g", r->rrate[k][w]);
      const long long c0 = (long long)SC_ROW_RATE_COLS0, c1 = c0 << (nw - 1);
      fprintf(f, "  (of the rate at %lld columns, at %lld to %lld columns)\n",
              (long long)km->dims[1], c0, c1);
      fprintf(f, "# micro.row_rate.%s.%u = %s fp32, %s%d elements %s %lld to %lld columns: "
                 "medians", km->family, km->variant, km->what,
              (km->row & ROW_HEADS) ? "whole causal heads of " : "", ROW_RATE_ELEMS,
              (km->row & ROW_HEADS) ? "or more, of" : "as rows of", c0, c1);
      for (int w = 0; w < nw; w++)
        fprintf(f, "%s %.4g s of %u", w ? "," : "", r->rrmeas[k][w].median_s,
                r->rrmeas[k][w].reps);
      fprintf(f, "\n");
    }
  } else {
    fprintf(f, "# micro.gemm_flops_per_s = %.4g\n", r->gemm_rate);
    fprintf(f, "# micro.gemm = %s GEMM %lldx%lldx%lld on the %s plugin: median %.4g s of %u "
            "(min %.4g, max %.4g)\n", sc_dtype_name(r->dtype), (long long)r->gn,
            (long long)r->gn, (long long)r->gn, device, r->mg.median_s, r->mg.reps,
            r->mg.min_s, r->mg.max_s);
    fprintf(f, "# micro.stream_add_bw_Bps.first = %.4g\n", r->bw_runs[0]);
    fprintf(f, "# micro.stream_add = c = a + b over 2^28 %s elements (3 x %g bytes each), "
            "before the plan: median %.4g s of %u (min %.4g, max %.4g); run again through the "
            "plan (the trailer)\n", sc_dtype_name(r->dtype), r->esz,
            r->ma.median_s, r->ma.reps, r->ma.min_s, r->ma.max_s);
  }
  fprintf(f, "# micro.launch_s = %.4g\n", r->m1.median_s);
  fprintf(f, "# micro.launch = one-element add kernel call: median of %u\n", r->m1.reps);
  fprintf(f, "# note = times are medians of repeated calls on warm buffers; the machine may be "
             "shared, so expect noise (p10/p90 give the spread)\n");
  fprintf(f, "%s\n", SC_SAMPLES_COLUMNS);
}

/* The gather curve (sc_device.gather_row_s): embedding lookups of tokens rows of 1 KiB
 * (GATHER_COLS fp32) from a table of 2 x tokens rows, at working sets (the rows touched, the
 * expected distinct ones, and the output: the embedding plugin's count) from llc / 512 to
 * 4 llc (cache_curve_512ths), in MICRO_ROUNDS interleaved rounds (one round of 2 repetitions
 * with quick: a test's instrumented build); each time per row is the
 * median's excess over the plugin's estimate on kd (the file's device without the curve),
 * over the tokens, at least 0 and made non-decreasing (a larger working set does not cost
 * less per row: a dip is a quiet spell of a shared machine). */
#define GATHER_COLS 256
static int measure_gather_curve(micro_run *r, sc_registry *reg, const sc_hw_plugin *hw,
                                const sc_device *kd, double llc, int quick, double budget_s,
                                sc_error *err) {
  sc_op_desc ops[CACHE_CURVE_N];
  sc_measurement *out[CACHE_CURVE_N];
  const double row = 4.0 * GATHER_COLS;
  /* bytes of working set per token: a row of output, about 0.79 of a distinct row read
   * (2 (1 - e^-1/2) for a table of twice the tokens) and 8 bytes of id */
  const double per = row * (1.0 + 2.0 * -expm1(-0.5)) + 8.0;
  int k = 0;
  r->ngather = 0;
  for (int j = 0; j < CACHE_CURVE_N; j++) {
    int64_t n = (int64_t)(llc * cache_curve_512ths[j] / 512.0 / per);
    if (n < 16) n = 16;
    if (k > 0 && n <= ops[k - 1].dims[0]) continue; /* a tiny cache: sizes that coincide */
    memset(&ops[k], 0, sizeof ops[k]);
    ops[k].family = SC_OP_EMBEDDING;
    ops[k].variant = SC_EMBED_FWD;
    ops[k].dtype = SC_DTYPE_FP32;
    ops[k].ndims = 3;
    ops[k].dims[0] = n;
    ops[k].dims[1] = GATHER_COLS;
    ops[k].dims[2] = 2 * n;
    out[k] = &r->mgather[k];
    k++;
  }
  void *st = sc_registry_state(reg, &hw->hdr);
  int rc = SC_OK;
  if (quick) {
    for (int j = 0; j < k && rc == SC_OK; j++)
      rc = hw->measure(st, kd, &ops[j], 2, budget_s / k, out[j], err);
  } else {
    rc = measure_rounds(hw, st, kd, ops, (size_t)k, 5, budget_s, out, err);
  }
  if (rc != SC_OK) return rc;
  double floor_s = 0.0;
  for (int j = 0; j < k; j++) {
    sc_estimate e;
    sc_error e2;
    const double t = (double)ops[j].dims[0];
    if (sc_registry_estimate_op(reg, kd, &ops[j], &e, &e2) != SC_OK)
      return sc_error_set(err, e2.code, "sample: gather curve: %s", e2.msg);
    r->gather_tokens[j] = ops[j].dims[0];
    r->gather_ws[j] = row * (sc_expected_distinct(t, 2.0 * t) + t) + 8.0 * t;
    r->gather_roof[j] = e.time_s;
    double c = (r->mgather[j].median_s - e.time_s) / t;
    if (c > floor_s) floor_s = c;
    r->gather_row[j] = floor_s;
  }
  r->ngather = k;
  return SC_OK;
}

/* The measured cache curve (r->curve_ws, r->curve_share; r->nshare points) into d. */
static void set_cache_curve(sc_device *d, const micro_run *r) {
  d->cache_miss_points = (uint32_t)r->nshare;
  for (int j = 0; j < r->nshare; j++) {
    d->cache_miss_ws_bytes[j] = r->curve_ws[j];
    d->cache_miss_share[j] = r->curve_share[j];
  }
}

/* After the plan: the run's memory bandwidth (the median of the STREAM runs) and, on a CPU
 * whose caches sysfs gives, the row kernels past the L1 against the device the file will
 * describe; both into the samples file's trailer. */
static int measure_after_plan(micro_run *r, FILE *f, sc_registry *reg, const sc_hw_plugin *hw,
                              const host_caps *caps, const char *device,
                              const char *families, int quick, int tty, sc_error *err) {
  fprintf(f, "# micro.stream_add_bw_Bps.runs =");
  for (int k = 0; k < r->nbw; k++) fprintf(f, " %.4g", r->bw_runs[k]);
  fprintf(f, "  (before, through and after the plan)\n");
  r->mem_bw = sc__median(r->bw_runs, r->nbw);
  fprintf(f, "# micro.stream_add_bw_Bps = %.4g  (their median: the hardware file's mem_bw_Bps)\n",
          r->mem_bw);
  if (r->ncurve > 0 && sc_cache_miss_curve(r->curve_rate, r->ncurve, r->cache_bw, r->mem_bw,
                                           r->curve_share) == SC_OK)
    r->nshare = r->ncurve;
  if (r->nrmw > 0) {
    double pos[SAMPLE_MAX_BW_RUNS + 1];
    int npos = 0;
    fprintf(f, "# micro.rmw_bw_Bps.runs =");
    for (int k = 0; k < r->nrmw; k++) {
      fprintf(f, " %.4g", r->rmw_runs[k]);
      if (r->rmw_runs[k] > 0) pos[npos++] = r->rmw_runs[k];
    }
    fprintf(f, "  (before, through and after the plan; 0 = the fill took as long)\n");
    r->rmw_bw = npos > 0 ? sc__median(pos, (size_t)npos) : 0.0;
    r->rmw_raw = r->rmw_bw;
    /* The estimate prices in-place traffic at the miss share g of its working set at
     * rmw_bw_Bps and the rest at cache_bw_Bps (op_common.h); the micro's own working set
     * (G and main_grad, 128 MiB) has a miss share g0 < 1 on the curve, so the rate it gives
     * already holds those hits: the DRAM rate is the one that, so split, takes the micro's
     * time, 1 / r = (1 / rmw - (1 - g0) / cache_bw) / g0. */
    if (r->rmw_bw > 0 && r->nshare > 0 && r->cache_bw > r->rmw_bw) {
      sc_device cd;
      memset(&cd, 0, sizeof cd);
      cd.cache_bw_Bps = r->cache_bw;
      set_cache_curve(&cd, r);
      const double g0 = sc_device_miss_share(&cd, RMW_MICRO_WS);
      const double inv = (1.0 / r->rmw_bw - (1.0 - g0) / r->cache_bw) / g0;
      if (g0 > 0.0 && g0 < 1.0 && inv > 0.0 && isfinite(inv)) {
        r->rmw_g0 = g0;
        r->rmw_bw = 1.0 / inv;
      }
    }
    fprintf(f, "# micro.rmw_bw_Bps = %.4g  (their median%s)\n", r->rmw_raw,
            npos > 0 ? "" : "; none measurable, not stated");
    if (r->rmw_g0 > 0)
      fprintf(f, "# micro.rmw_dram_bw_Bps = %.4g  (the hardware file's rmw_bw_Bps: the median's "
                 "time with the cache curve's hits at the micro's working set, %.0f bytes, "
                 "miss share %.3f, at cache_bw_Bps)\n", r->rmw_bw, RMW_MICRO_WS, r->rmw_g0);
  }
  if (r->gpu || !(caps->l1d > 0 && caps->llc > 0)) return SC_OK;
  r->kd.mem_bw_Bps = r->mem_bw;
  r->kd.cache_bw_Bps = r->cache_bw;
  r->kd.l2_bytes = caps->llc;
  r->kd.write_allocate = 1;
  r->kd.rmw_bw_Bps = r->rmw_bw;
  r->kd.vector_flops_per_s = r->vector_rate;
  set_kernel_rates(&r->kd, r->krate);
  set_row_rates(&r->kd, (const double(*)[SC_ROW_RATE_WIDTHS])r->rrate);
  /* the exposures are the time the roofline misses, so the roofline they are measured
   * against must be the file's: with its cache curve (write_cpu_hardware writes the same) */
  set_cache_curve(&r->kd, r);
  snprintf(r->kd.name, sizeof r->kd.name, "live-%.24s-measured", device);
  if (tty) fprintf(stderr, "row kernels past the last-level cache...");
  int rc = measure_row_exposure(reg, hw, &r->kd, r->krate, caps->l1d, caps->llc, families,
                                quick ? 0.05 : 0.3, r->rexpo, r->rdims, r->rmeas, r->rroof, err);
  if (rc != SC_OK) return rc;
  if (tty) fprintf(stderr, "\ngathers of 1 KiB rows from 1/512 to 4 x the last-level cache...");
  /* against the file's device: the kernel rates, the cache curve and the in-place rate, no
   * gather curve */
  rc = measure_gather_curve(r, reg, hw, &r->kd, caps->llc, quick, quick ? 0.1 : 1.5, err);
  if (rc != SC_OK) return rc;
  if (tty) fprintf(stderr, "\n");
  for (int j = 0; j < r->ngather; j++)
    fprintf(f, "# micro.gather.%.0f = embedding lookup %lld x %d x %lld fp32 (1 KiB rows at "
               "random from a table of twice the tokens; working set %.0f bytes): median %.4g "
               "s of %u (round medians %.4g to %.4g), the roofline %.4g s: %.4g s per row "
               "past it (made non-decreasing)\n", r->gather_ws[j],
            (long long)r->gather_tokens[j], GATHER_COLS, 2LL * (long long)r->gather_tokens[j],
            r->gather_ws[j], r->mgather[j].median_s, r->mgather[j].reps, r->mgather[j].p10_s,
            r->mgather[j].p90_s, r->gather_roof[j], r->gather_row[j]);
  for (size_t k = 0; k < NKERNEL_MICROS; k++) {
    const kernel_micro *km = &kernel_micros[k];
    if (!(r->rdims[k][0] > 0)) continue;
    fprintf(f, "# micro.row_exposure.%s.%u = %.4g\n", km->family, km->variant, r->rexpo[k]);
    fprintf(f, "# micro.row_exposure.%s.%u = %s %lld x %lld fp32 (about 4 x the last-level "
               "cache%s): median %.4g s of %u (min %.4g, max %.4g); the roofline "
               "max(compute, memory) %.4g s, min %.4g s\n", km->family, km->variant, km->what,
            (long long)r->rdims[k][0], (long long)r->rdims[k][1],
            (km->row & ROW_RAMP) ? ", rows past the L1" : "", r->rmeas[k].median_s,
            r->rmeas[k].reps, r->rmeas[k].min_s, r->rmeas[k].max_s, r->rroof[k][0],
            r->rroof[k][1]);
  }
  return SC_OK;
}

/* The temporaries of --out and --hardware-out while they are written (common/afile.h): an
 * interrupt (Ctrl-C, SIGTERM, SIGHUP) removes them and leaves the old files as they were. */
static char sample_tmp[2][4096];

static void sample_on_signal(int sig) {
  for (int i = 0; i < 2; i++)
    if (sample_tmp[i][0] != '\0') unlink(sample_tmp[i]); /* async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

static void sample_guard(int i, const sc_afile *af) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  const char *t = sc_afile_tmp(af);
  struct sigaction sa;
  sigset_t block, old;
  sigemptyset(&block);
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) sigaddset(&block, sigs[k]);
  sigprocmask(SIG_BLOCK, &block, &old); /* no handler runs on a half-copied name */
  if (t == NULL || strlen(t) >= sizeof sample_tmp[i])
    sample_tmp[i][0] = '\0';
  else
    memcpy(sample_tmp[i], t, strlen(t) + 1);
  sigprocmask(SIG_SETMASK, &old, NULL);
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = sample_on_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
    struct sigaction cur;
    /* a signal the shell ignores (a background job's SIGINT) stays ignored */
    if (sigaction(sigs[k], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
      sigaction(sigs[k], &sa, NULL);
  }
}

/* The name the hardware file is checked under: --hardware-out's, else this. */
#define SAMPLE_HW_UNNAMED "the measured hardware file"

/* The hardware file written by write_cpu_hardware, as text (*text, malloc'd; *len bytes),
 * checked by the hardware loader under the name file: SC_ERANGE with the loader's own
 * message in err (and *text kept, for the line it names) when the loader refuses it, so
 * that a figure a loaded machine got wrong is measured again or refused, never written;
 * other errors leave *text NULL. */
static int render_cpu_hardware(sc_registry *reg, const char *name, const char *model,
                               long threads, const host_caps *hc, const micro_run *r,
                               const char *cmd, const char *stamp, const char *file,
                               char **text, size_t *len, sc_error *err) {
  sc_device chk;
  FILE *m;
  int rc;
  *text = NULL;
  *len = 0;
  m = open_memstream(text, len);
  if (m == NULL) return sc_error_set(err, SC_ENOMEM, "sample: out of memory");
  rc = write_cpu_hardware(m, name, model, threads, hc, r, cmd, stamp, err);
  if (fclose(m) != 0 && rc == SC_OK) rc = sc_error_set(err, SC_ENOMEM, "sample: out of memory");
  if (rc != SC_OK) {
    free(*text);
    *text = NULL;
    return rc;
  }
  if (sc_hardware_load_text(reg, *text, *len, file, &chk, err) != SC_OK) {
    err->code = SC_ERANGE;
    return SC_ERANGE;
  }
  return SC_OK;
}

/* How many times the microbenchmarks are measured at most when the hardware loader refuses
 * the file they imply (the plan is measured once). */
#define SAMPLE_ATTEMPTS 3

/* STEPCAST_SAMPLE_FAULT=<key>:<n>, a testing aid (docs/cli.md): the first n measurements of
 * the microbenchmark behind key come out as value, which the hardware loader refuses, so
 * that a test sees the retry and the refusal on any machine. The keys are the [hardware]
 * figures of one micro_run field each. */
static const struct {
  const char *key;
  size_t off;
  double value;
} sample_faults[] = {
    {"gemm_exposed_bw_Bps", offsetof(micro_run, gemm_exposed_bw), 0.0028}, /* issue 34 */
    {"mem_bw_Bps", offsetof(micro_run, mem_bw), 0.0028},
    {"cache_bw_Bps", offsetof(micro_run, cache_bw), 0.0028},
    {"rmw_bw_Bps", offsetof(micro_run, rmw_bw), 0.0028},
    {"launch_s", offsetof(micro_run, m1.median_s), 2.8}, /* over SC_RANGE_SECONDS_MAX */
    {"vector_flops_per_s", offsetof(micro_run, vector_rate), 0.0028},
    {"peak_flops_per_s.fp32", offsetof(micro_run, gemm_rate), 0.0028},
};
#define SAMPLE_NFAULTS (sizeof sample_faults / sizeof sample_faults[0])

/* The value of STEPCAST_SAMPLE_FAULT (spec, not NULL) into *which (an index of
 * sample_faults) and *n (0 to 1000); -1 when it is not KEY:N. */
static int sample_fault_parse(const char *spec, size_t *which, long *n) {
  const char *colon = strrchr(spec, ':');
  char *end;
  if (colon == NULL) return -1;
  for (size_t i = 0; i < SAMPLE_NFAULTS; i++) {
    if (strlen(sample_faults[i].key) != (size_t)(colon - spec) ||
        strncmp(spec, sample_faults[i].key, (size_t)(colon - spec)) != 0)
      continue;
    errno = 0;
    *n = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || *n < 0 || *n > 1000 ||
        colon[1] == '+' || colon[1] == ' ')
      return -1;
    *which = i;
    return 0;
  }
  return -1;
}

/* What the hardware loader refused in text (the file render_cpu_hardware checked under the
 * name file), from its message msg ("file:line:col: key 'K': ..."): "K = V", V the value on
 * that line of text, into out; the message itself when it does not name a line and key. */
static void refused_key(const char *msg, const char *file, const char *text, char *out,
                        size_t cap) {
  const char *p = strstr(msg, file), *k = strstr(msg, "key '"), *ke;
  unsigned long line = 0;
  snprintf(out, cap, "%s", msg);
  if (p == NULL || k == NULL || (ke = strchr(k + 5, '\'')) == NULL) return;
  p += strlen(file);
  if (*p != ':' || !(p[1] >= '0' && p[1] <= '9')) return;
  line = strtoul(p + 1, NULL, 10);
  for (unsigned long l = 1; l < line && text != NULL; l++) {
    text = strchr(text, '\n');
    if (text != NULL) text++;
  }
  const char *eq = text != NULL ? strstr(text, " = ") : NULL;
  const char *nl = text != NULL ? strchr(text, '\n') : NULL;
  if (eq == NULL || (nl != NULL && eq > nl)) return;
  eq += 3;
  size_t vn = strcspn(eq, " #\n");
  snprintf(out, cap, "%.*s = %.*s", (int)(ke - k - 5), k + 5, (int)vn, eq);
}

/* Whether the refused "KEY = V" (refused_key) is a figure the skinny GEMMs and the
 * 2048^3 one timed with them give alone (measure_gemm_exposure). */
static int gemm_key(const char *refused) {
  static const char *const keys[] = {"gemm_exposed_bw_Bps", "gemm_exposed_knee_bytes",
                                     "peak_flops_per_s.fp32"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    size_t n = strlen(keys[i]);
    if (strncmp(refused, keys[i], n) == 0 && strncmp(refused + n, " = ", 3) == 0) return 1;
  }
  return 0;
}

int sc_cli_sample(int argc, char **argv) {
  const char *device = NULL, *out = NULL, *families = NULL, *hw_out = NULL, *plan_path = NULL;
  size_t plan_other = 0, plan_dups = 0;
  char hw_name[64] = "host-cpu";
  double plan_mid = 4194304.0;
  host_caps caps = {0, 0, 0, 0};
  FILE *hwf = NULL; /* --hardware-out (hw_af.f), opened with --out */
  sc_afile out_af = {0}, hw_af = {0}; /* both renamed over the old files at the very end */
  char *hwtext = NULL, *plantext = NULL, *trailtext = NULL;
  FILE *pf = NULL, *tf = NULL; /* the plan's rows, the trailer: written once accepted */
  micro_run *mr = NULL;
  size_t fault = 0; /* STEPCAST_SAMPLE_FAULT: sample_faults[fault], its first fault_n */
  long fault_n = 0;
  double seconds = 240.0;
  long threads = 1, min_reps = 5, passes = 3;
  int quick = 0, rc = 1, tty = isatty(2), gpu = 0;
  sc_dtype dtype = SC_DTYPE_FP32;
  sc_error err;
  sc_registry *reg = NULL;
  const sc_hw_plugin *hw;
  sc_device dev;
  sc_sample_plan pl = {0};
  FILE *f = NULL;
  char model[400], cmd[1024], stamp[64];
  time_t wall = time(NULL);
  struct tm tmv;

  sc_error_clear(&err);
  sc_cli_command_line(argc, argv, cmd, sizeof cmd);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
    char *end;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      sample_usage(stdout);
      return 0;
    }
    if (strcmp(a, "--quick") == 0) { quick = 1; continue; }
    if (strcmp(a, "--device") != 0 && strcmp(a, "--out") != 0 && strcmp(a, "--seconds") != 0 &&
        strcmp(a, "--threads") != 0 && strcmp(a, "--families") != 0 &&
        strcmp(a, "--min-reps") != 0 && strcmp(a, "--hardware-out") != 0 &&
        strcmp(a, "--passes") != 0 && strcmp(a, "--plan") != 0)
      return sc_cli_usage_error("sample", "unknown option '%s'", a);
    if (v == NULL) return sc_cli_usage_error("sample", "option '%s' needs a value", a);
    i++;
    if (strcmp(a, "--device") == 0) device = v;
    else if (strcmp(a, "--out") == 0) out = v;
    else if (strcmp(a, "--families") == 0) families = v;
    else if (strcmp(a, "--hardware-out") == 0) hw_out = v;
    else if (strcmp(a, "--plan") == 0) plan_path = v;
    else if (strcmp(a, "--seconds") == 0) {
      errno = 0;
      seconds = strtod(v, &end);
      if (errno || *end || !(seconds >= 0) || !isfinite(seconds))
        return sc_cli_usage_error("sample", "--seconds: '%s' is not a number >= 0 (0: no "
                                  "budget)", v);
    } else {
      long x;
      errno = 0;
      x = strtol(v, &end, 10);
      long hi = strcmp(a, "--threads") == 0 ? 4096 : strcmp(a, "--passes") == 0 ? SAMPLE_MAX_PASSES
                                                                                 : 255;
      if (errno || *end || x < 1 || x > hi)
        return sc_cli_usage_error("sample", "%s: '%s' is not a whole number in [1, %ld]", a, v,
                                  hi);
      if (strcmp(a, "--threads") == 0) threads = x;
      else if (strcmp(a, "--passes") == 0) passes = x;
      else min_reps = x;
    }
  }
  if (device == NULL) return sc_cli_usage_error("sample", "--device is required");
  {
    const char *fs = getenv("STEPCAST_SAMPLE_FAULT");
    if (fs != NULL && fs[0] != '\0' && sample_fault_parse(fs, &fault, &fault_n) != 0) {
      char keys[256] = "";
      for (size_t i = 0; i < SAMPLE_NFAULTS; i++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", i ? ", " : "",
                 sample_faults[i].key);
      return sc_cli_usage_error("sample", "STEPCAST_SAMPLE_FAULT: '%.100s' is not KEY:N with N "
                                "in [0, 1000] and KEY one of %s", fs, keys);
    }
  }
  if (out == NULL) return sc_cli_usage_error("sample", "--out is required");
  if (hw_out != NULL) { /* the device's name is the file's: X/<name>.toml */
    const char *base = strrchr(hw_out, '/');
    size_t n;
    base = base ? base + 1 : hw_out;
    n = strlen(base);
    if (n < 6 || strcmp(base + n - 5, ".toml") != 0 || n - 5 >= sizeof hw_name)
      return sc_cli_usage_error("sample", "--hardware-out: '%s' is not <name>.toml with a name "
                                "of 1 to %zu characters", hw_out, sizeof hw_name - 1);
    snprintf(hw_name, sizeof hw_name, "%.*s", (int)(n - 5), base);
    if (!sc__is_identifier(hw_name))
      return sc_cli_usage_error("sample", "--hardware-out: the name in '%s' may hold only "
                                "letters, digits, '-', '_' and '.'", hw_out);
    if (strcmp(device, "cpu") != 0)
      return sc_cli_usage_error("sample", "--hardware-out: only for --device cpu (a GPU's "
                                "file states vendor figures; the run prints what it measured)");
  }
  if (families != NULL) {
    static const char *const all[] = {"gemm",      "attention", "norm",
                                      "softmax",   "elementwise", "optimizer",
                                      "embedding", "cross_entropy"};
    /* comma-separated names, none empty (',' or 'gemm,,norm' would sample nothing or less
     * than asked without a word) */
    size_t n;
    const char *bad = sc_cli_list_unknown(families, all, sizeof all / sizeof all[0], &n);
    if (bad != NULL && n == 0)
      return sc_cli_usage_error("sample", "--families: an empty name in '%s'", families);
    if (bad != NULL)
      return sc_cli_usage_error("sample", "--families: unknown family '%.*s'",
                                (int)(n < 64 ? n : 64), bad);
  }

  if (sc_cli_registry_open(&reg, &err) != SC_OK) return sc_cli_fail(&err);
  hw = sc_registry_hw(reg, device);
  if (hw == NULL) {
    sc_error_set(&err, SC_ENOTFOUND, "--device: no hardware plugin of kind '%s'", device);
    goto fail;
  }
  if (hw->measure == NULL) {
    sc_error_set(&err, SC_EUNSUPPORTED, "--device: the '%s' plugin cannot measure on this "
                 "machine (it has no measure())", device);
    goto fail;
  }
  memset(&dev, 0, sizeof dev);
  snprintf(dev.name, sizeof dev.name, "live-%s", device);
  snprintf(dev.kind, sizeof dev.kind, "%s", device);
  dev.compute_units = (uint32_t)threads;
  openblas_set_num_threads((int)threads);
  gpu = strcmp(device, "cpu") != 0; /* an accelerator (the cuda plugin): bf16, larger plan */
  if (gpu) dtype = SC_DTYPE_BF16;

  /* The CPU plan puts half of each memory-bound family's points past the last-level cache
   * (mid: the elements at which about 8 bytes each fill it), where real layers run; a fit
   * whose training shapes all fit in the cache cannot know the DRAM regime. */
  caps = read_host_caps();
  plan_mid = (caps.llc > 0 ? caps.llc : 32.0 * 1024 * 1024) / 8.0;
  if (plan_path != NULL) {
    if (sc_sample_plan_read(plan_path, families, &pl, &plan_other, &plan_dups, &err) != SC_OK)
      goto fail;
  } else if (sc_sample_plan_build(&pl, families, quick, gpu, plan_mid, dtype) != SC_OK) {
    sc_error_set(&err, SC_ENOMEM, "sample: out of memory");
    goto fail;
  }

  if (sc_afile_open(&out_af, out, &err) != SC_OK) goto fail;
  f = out_af.f;
  sample_guard(0, &out_af);
  if (hw_out != NULL) { /* before the measurements */
    if (sc_afile_open(&hw_af, hw_out, &err) != SC_OK) goto fail;
    hwf = hw_af.f;
    sample_guard(1, &hw_af);
  }
  cpu_model(model, sizeof model);
  gmtime_r(&wall, &tmv);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  {
    sc_measurement last;
    size_t done = 0, planlen = 0, traillen = 0, hwlen = 0;
    double t0, plan_bw[SAMPLE_MAX_BW_RUNS + 1], plan_rmw[SAMPLE_MAX_BW_RUNS + 1];
    int nplan_bw, nplan_rmw, attempt;
    char refused[SAMPLE_ATTEMPTS][SC_ERROR_MSG_MAX];
    int regemm[SAMPLE_ATTEMPTS] = {0}; /* attempt i + 1's refusal: the GEMMs alone again */
    const char *hwfile = hw_out != NULL ? hw_out : SAMPLE_HW_UNNAMED;
    /* the plan's rows and comments, and the trailer of the microbenchmarks after it, are
     * held until the microbenchmarks are accepted: the header states those of the attempt
     * whose hardware file the loader accepts */
    mr = calloc(1, sizeof *mr);
    pf = open_memstream(&plantext, &planlen);
    if (mr == NULL || pf == NULL) {
      sc_error_set(&err, SC_ENOMEM, "sample: out of memory");
      goto fail;
    }
    mr->gpu = gpu;
    mr->dtype = dtype;
    if (measure_micros(mr, reg, hw, &dev, &caps, families, quick, tty, &err) != SC_OK)
      goto fail;
    t0 = now_s();
    /* the in-place rate through the plan too, as STREAM's (not with --quick: a test's
     * instrumented build spends seconds on each) */
    const sc_op_desc *rmw = mr->nrmw > 0 && !quick ? mr->rmw : NULL;
    if (run_plan(reg, hw, &dev, &pl, pf, seconds, min_reps, passes, tty, &mr->add, mr->esz,
                 mr->bw_runs, &mr->nbw, rmw, mr->rmw_runs, &mr->nrmw, &done, &err) != SC_OK)
      goto fail;
    if (fclose(pf) != 0) {
      pf = NULL;
      sc_error_set(&err, SC_ENOMEM, "sample: out of memory");
      goto fail;
    }
    pf = NULL;
    fprintf(stderr, "stepcast sample: %zu of %zu shapes measured in %.1f s -> %s\n", done,
            pl.n, now_s() - t0, out);
    /* the STREAM Add and in-place runs through the plan: every attempt keeps them */
    nplan_bw = mr->nbw - 1;
    memcpy(plan_bw, mr->bw_runs + 1, (size_t)nplan_bw * sizeof plan_bw[0]);
    nplan_rmw = mr->nrmw > 0 ? mr->nrmw - 1 : 0;
    memcpy(plan_rmw, mr->rmw_runs + 1, (size_t)nplan_rmw * sizeof plan_rmw[0]);
    for (attempt = 1;; attempt++) {
      /* the devices of a retry keep their names with new figures: no estimate of the
       * attempt before may answer for them */
      if (attempt > 1) sc_registry_memo_clear(reg);
      if (attempt > 1 && regemm[attempt - 2]) {
        /* a figure of the skinny GEMMs alone: those GEMMs again (and what their rate sets,
         * the attention split), then the microbenchmarks after the plan, measured against
         * the device they imply */
        mr->gemm_exposed_bw = mr->gemm_exposed_knee = 0.0;
        if (measure_gemm_exposure(mr, reg, hw, &dev, caps.llc, quick ? 0.15 : 0.6, &err) !=
            SC_OK)
          goto fail;
        attn_rates(mr);
        mr->kd.peak_flops_per_s[SC_DTYPE_FP32] = mr->gemm_rate;
      } else if (attempt > 1) { /* every microbenchmark before the plan, then those after */
        memset(mr, 0, sizeof *mr);
        mr->gpu = gpu;
        mr->dtype = dtype;
        if (measure_micros(mr, reg, hw, &dev, &caps, families, quick, tty, &err) != SC_OK)
          goto fail;
        for (int k = 0; k < nplan_bw; k++) mr->bw_runs[mr->nbw++] = plan_bw[k];
        for (int k = 0; k < nplan_rmw && mr->nrmw > 0; k++)
          mr->rmw_runs[mr->nrmw++] = plan_rmw[k];
      }
      if (attempt == 1 || !regemm[attempt - 2]) { /* the runs after the plan */
        if (stream_bw(reg, hw, &dev, &mr->add, mr->esz, 5, 0.3, &mr->bw_runs[mr->nbw], &last,
                      &err) != SC_OK)
          goto fail;
        mr->nbw++;
        if (mr->nrmw > 0) {
          if (rmw_again(reg, hw, &dev, mr->rmw, &mr->rmw_runs[mr->nrmw], &err) != SC_OK)
            goto fail;
          mr->nrmw++;
        }
      }
      free(trailtext);
      trailtext = NULL;
      if ((tf = open_memstream(&trailtext, &traillen)) == NULL) {
        sc_error_set(&err, SC_ENOMEM, "sample: out of memory");
        goto fail;
      }
      if (measure_after_plan(mr, tf, reg, hw, &caps, device, families, quick, tty, &err) !=
          SC_OK)
        goto fail;
      if (fclose(tf) != 0) {
        tf = NULL;
        sc_error_set(&err, SC_ENOMEM, "sample: out of memory");
        goto fail;
      }
      tf = NULL;
      if (gpu) break; /* no hardware file to check: the run prints what it measured */
      if (attempt <= fault_n) /* STEPCAST_SAMPLE_FAULT */
        *(double *)(void *)((char *)mr + sample_faults[fault].off) = sample_faults[fault].value;
      free(hwtext);
      hwtext = NULL;
      int hrc = render_cpu_hardware(reg, hw_name, model, threads, &caps, mr, cmd, stamp,
                                    hwfile, &hwtext, &hwlen, &err);
      if (hrc == SC_OK) break;
      if (hrc != SC_ERANGE) goto fail;
      refused_key(err.msg, hwfile, hwtext, refused[attempt - 1], sizeof refused[0]);
      regemm[attempt - 1] = mr->gsn[0] > 0 && gemm_key(refused[attempt - 1]);
      if (attempt == SAMPLE_ATTEMPTS) {
        char why[SC_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err.msg); /* not err.msg into itself */
        sc_error_set(&err, SC_ERANGE, "sample: the hardware loader refused what the "
                     "microbenchmarks measured in each of %d attempts, nothing written (a "
                     "loaded machine? measure again): %.400s", SAMPLE_ATTEMPTS, why);
        goto fail;
      }
      fprintf(stderr, "stepcast sample: note: the hardware loader refuses %s (attempt %d of "
                      "%d): measuring %s again, the plan's rows kept\n",
              refused[attempt - 1], attempt, SAMPLE_ATTEMPTS,
              regemm[attempt - 1] ? "the GEMMs with a dimension of 16 and the microbenchmarks "
                                    "after the plan"
                                  : "the microbenchmarks");
      sc_error_clear(&err);
    }
    write_samples_header(f, mr, device, model, cmd, stamp, seconds, min_reps, passes);
    if (plan_path != NULL)
      fprintf(f, "# plan = %s: %zu operator%s (and %zu row%s listing one again, %zu of "
                 "families not sampled here)\n", plan_path, pl.n, pl.n == 1 ? "" : "s",
              plan_dups, plan_dups == 1 ? "" : "s", plan_other);
    if (plantext != NULL) fwrite(plantext, 1, planlen, f);
    for (int a = 1; a < attempt; a++)
      fprintf(f, "# micro.refused.%d = the hardware loader refused %s: %s\n", a, refused[a - 1],
              regemm[a - 1] ? "the GEMMs with a dimension of 16 and the microbenchmarks after "
                              "the plan measured again"
                            : "every microbenchmark measured again after the plan (the STREAM "
                              "Add and in-place runs through it kept)");
    if (trailtext != NULL) fwrite(trailtext, 1, traillen, f);
    /* the last line: the reader refuses a sampler's file without it (cut short) */
    fprintf(f, "%s%zu rows\n", SC_SAMPLES_END, done);
    if (!gpu) { /* a complete hardware file: on stdout, and in --hardware-out */
      fputs(hwtext, stdout);
      if (hwf != NULL) fputs(hwtext, hwf);
    } else {
      printf("# measured by: %s (%s)\n", cmd, stamp);
      printf("[hardware]\nkind = \"%s\"\n", device);
      printf("mem_bw_Bps = %.4g      # STREAM Add, 2^28 %s elements, median of %d runs\n",
             mr->mem_bw, sc_dtype_name(dtype), mr->nbw);
      printf("launch_s = %.4g        # one-element kernel call\n", mr->m1.median_s);
      printf("[hardware.peak_flops_per_s]\n%s = %.4g           # %s GEMM %lld^3\n",
             sc_dtype_name(dtype), mr->gemm_rate, sc_dtype_name(dtype), (long long)mr->gn);
    }
  }
  /* both written whole: now they replace the old files (the samples last) */
  f = hwf = NULL;
  if (sc_afile_close(&out_af, &err) != SC_OK ||
      (hw_out != NULL && sc_afile_commit(&hw_af, &err) != SC_OK) ||
      sc_afile_commit(&out_af, &err) != SC_OK)
    goto fail;
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  sc_afile_abort(&out_af);
  sc_afile_abort(&hw_af);
  sample_tmp[0][0] = sample_tmp[1][0] = '\0';
  if (pf != NULL) fclose(pf);
  if (tf != NULL) fclose(tf);
  free(plantext);
  free(trailtext);
  free(mr);
  free(hwtext);
  sc_sample_plan_free(&pl);
  sc_registry_free(reg);
  return rc;
}
