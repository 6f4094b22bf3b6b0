/*
 * norm: LayerNorm or RMSNorm over the last dimension, forward and backward.
 * dims {rows, cols} (rows = tokens, cols = hidden); variants SC_NORM_OP_*.
 * See docs/operators.md. With e = dtype bytes and N = rows * cols:
 *   LayerNorm fwd: flops 7 N (sum, subtract mean, square, sum, scale by rstd, * gamma,
 *                  + beta); bytes 2eN (read x, write y) + 2e cols (gamma, beta)
 *                  + 8 rows (fp32 mean and rstd saved)
 *   LayerNorm bwd: flops 13 N (x_hat 2, dgamma 2, dbeta 1, g = dy*gamma 1, two row sums
 *                  3, dx = rstd (g - mean(g) - x_hat mean(g x_hat)) 4);
 *                  bytes 3eN (read x, dy; write dx) + 8 rows (read mean, rstd)
 *                  + 8 cols (fp32 dgamma, dbeta written) + 2e cols (read gamma, beta)
 *   RMSNorm fwd:   flops 4 N (square, sum, scale by rstd, * gamma); bytes 2eN + e cols
 *                  + 4 rows (fp32 rstd)
 *   RMSNorm bwd:   flops 9 N (x_hat 1, dgamma 2, g 1, row sum of g x_hat 2,
 *                  dx = rstd (g - x_hat mean(g x_hat)) 3); bytes 3eN + 4 rows + 4 cols + e cols
 * Fresh writes (for a write-allocate device): y or dx, e N, and the forward's statistics.
 * Every variant passes over a row more than once (statistics, then the output), so its
 * working set per row, row_bytes, sets how much of min(compute, memory) a device with an L1
 * and a stated [hardware.row_exposure.norm] cannot overlap (sc_device_row_exposure): LayerNorm
 * fwd 4e cols (x, y, gamma, beta), bwd (4e + 8) cols (x, dy, dx, gamma, fp32 dgamma and
 * dbeta); RMSNorm fwd 3e cols, bwd (4e + 4) cols. The kernel's rate is its stated rate times
 * the device's [hardware.row_rate.norm.<variant>] at this row width (sc_device_row_rate).
 * Arithmetic at the device's fp32 rate.
 */
#include "op_common.h"

static const char *const dim_names[] = {"rows", "cols"};
static const char *const feature_names[] = {"log10_bytes", "log10_rows", "log2_cols", "rms",
                                            "backward"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "norm", 2, dim_names, SC_NORM_OP_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "norm", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double rows = (double)op->dims[0], cols = (double)op->dims[1], N = rows * cols;
  peak *= sc_device_row_rate(dev, "norm", op->variant, cols);
  double e = sc__op_dtype_bytes(op->dtype);
  int rms = op->variant == SC_NORM_OP_RMSNORM_FWD || op->variant == SC_NORM_OP_RMSNORM_BWD;
  int bwd = op->variant == SC_NORM_OP_LAYERNORM_BWD || op->variant == SC_NORM_OP_RMSNORM_BWD;
  double flops, bytes, row_bytes;
  if (!rms && !bwd) {
    flops = 7.0 * N;
    bytes = 2.0 * e * N + 2.0 * e * cols + 8.0 * rows;
    row_bytes = 4.0 * e * cols;
  } else if (!rms) {
    flops = 13.0 * N;
    bytes = 3.0 * e * N + 8.0 * rows + 8.0 * cols + 2.0 * e * cols;
    row_bytes = (4.0 * e + 8.0) * cols;
  } else if (!bwd) {
    flops = 4.0 * N;
    bytes = 2.0 * e * N + e * cols + 4.0 * rows;
    row_bytes = 3.0 * e * cols;
  } else {
    flops = 9.0 * N;
    bytes = 3.0 * e * N + 4.0 * rows + 4.0 * cols + e * cols;
    row_bytes = (4.0 * e + 4.0) * cols;
  }
  /* fresh writes: y (forward) or dx (backward) and the fp32 per-row statistics */
  sc__op_roofline_rows(dev, "norm", op->variant, row_bytes, peak, dev->flops_efficiency, flops,
                       bytes, bytes, e * N + (bwd ? 0.0 : (rms ? 4.0 : 8.0) * rows), out);
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(rows), sc__op_log2(cols),
                         (double)rms, (double)bwd};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "norm", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* bytes and rows; the row width and the flags are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1),
};

SC_PLUGIN_ENTRY(ops_norm) { return &desc.hdr; }
