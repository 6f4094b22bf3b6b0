/*
 * elementwise: pointwise kernels of a transformer layer. dims {elements}; variants SC_EW_*.
 * See docs/operators.md. Per output element, with e = dtype bytes (masks are 1 byte):
 *
 *   variant                 bytes      flops  reads / writes
 *   GELU_FWD (bias+GeLU)    2e         10     x | y   (tanh form: x^3 2, *0.044715 1,
 *                                                      +x 1, *sqrt(2/pi) 1, tanh 1, +1 1,
 *                                                      *x 1, *0.5 1, + bias 1)
 *   GELU_BWD                3e         19     x, dy | dx  (recompute the inner term 6,
 *                                                      tanh 1, 1-t^2 2, derivative of the
 *                                                      inner term 3, products and sums 7)
 *   SWIGLU_FWD              3e         5      a, b | y   (sigmoid 3, * a 1, * b 1)
 *   SWIGLU_BWD              5e         10     a, b, dy | da, db  (sigmoid 3, silu 1,
 *                                                      db 1, silu' 3, da 2)
 *   DROPOUT_FWD             2e + 1     12     x | y, mask   (compare, scale; the mask's random
 *                                                      number: 10, a counter-based hash such as
 *                                                      Philox or splitmix64 takes about ten
 *                                                      integer operations per value)
 *   DROPOUT_BWD             2e + 1     2      dy, mask | dx
 *   BIAS_DROPOUT_ADD_FWD    3e + 1     14     y, residual | out, mask  (+bias, dropout 2,
 *                                                      +residual, random number 10)
 *   BIAS_DROPOUT_ADD_BWD    2e + 1     2      dy, mask | dy_branch  (the residual branch's
 *                                                      gradient is dy itself, not copied)
 *   ADD                     3e         1      a, b | c
 *   ROPE_FWD, ROPE_BWD      2e         3      x | y   (x cos + rotate(x) sin; the cos/sin
 *                                                      tables are small and cache-resident)
 *   RELU_FWD (bias+ReLU)    2e         2      x | y   (+ bias 1, max 1)
 *   RELU_BWD                3e         1      x, dy | dx  (select dy where x > 0)
 *   SQRELU_FWD              2e         3      x | y   (+ bias 1, max 1, square 1)
 *   SQRELU_BWD              3e         3      x, dy | dx  (2 relu(x) dy: max, * 2, * dy)
 *   GEGLU_FWD               3e         10     a, b | y   (tanh-form GeLU of a 9, * b 1)
 *   GEGLU_BWD               5e         25     a, b, dy | da, db  (GeLU's derivative as
 *                                                      GELU_BWD 19, GeLU itself from its
 *                                                      tanh 3, da = dy b gelu'(a) 2,
 *                                                      db = dy gelu(a) 1)
 * Every write is to a new output (the after-bar columns: fresh for a write-allocate device).
 * Arithmetic at the device's fp32 rate. Features add two flags the FLOP and byte counts do
 * not separate: `rng` (the variant draws a random number per element) and `backward`.
 */
#include "op_common.h"

static const char *const dim_names[] = {"elements"};
static const char *const feature_names[] = {"log10_bytes",       "log10_elements",
                                            "bytes_per_element", "flops_per_element",
                                            "rng",               "backward"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

/* Per element: bytes = a * e + c, flops, whether a random number is drawn, backward.
 * Indexed by variant. */
static const struct { double a, c, flops, rng, bwd, wa, wc; } cost[SC_EW_VARIANT_COUNT] = {
    /* ..., written bytes per element = wa * e + wc (all fresh outputs) */
    [SC_EW_GELU_FWD] = {2, 0, 10, 0, 0, 1, 0},
    [SC_EW_GELU_BWD] = {3, 0, 19, 0, 1, 1, 0},
    [SC_EW_SWIGLU_FWD] = {3, 0, 5, 0, 0, 1, 0},
    [SC_EW_SWIGLU_BWD] = {5, 0, 10, 0, 1, 2, 0},
    [SC_EW_DROPOUT_FWD] = {2, 1, 12, 1, 0, 1, 1},
    [SC_EW_DROPOUT_BWD] = {2, 1, 2, 0, 1, 1, 0},
    [SC_EW_BIAS_DROPOUT_ADD_FWD] = {3, 1, 14, 1, 0, 1, 1},
    [SC_EW_BIAS_DROPOUT_ADD_BWD] = {2, 1, 2, 0, 1, 1, 0},
    [SC_EW_ADD] = {3, 0, 1, 0, 0, 1, 0},
    [SC_EW_ROPE_FWD] = {2, 0, 3, 0, 0, 1, 0},
    [SC_EW_ROPE_BWD] = {2, 0, 3, 0, 1, 1, 0},
    [SC_EW_RELU_FWD] = {2, 0, 2, 0, 0, 1, 0},
    [SC_EW_RELU_BWD] = {3, 0, 1, 0, 1, 1, 0},
    [SC_EW_SQRELU_FWD] = {2, 0, 3, 0, 0, 1, 0},
    [SC_EW_SQRELU_BWD] = {3, 0, 3, 0, 1, 1, 0},
    [SC_EW_GEGLU_FWD] = {3, 0, 10, 0, 0, 1, 0},
    [SC_EW_GEGLU_BWD] = {5, 0, 25, 0, 1, 2, 0},
};

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "elementwise", 1, dim_names, SC_EW_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "elementwise", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double n = (double)op->dims[0];
  double e = sc__op_dtype_bytes(op->dtype);
  double bpe = cost[op->variant].a * e + cost[op->variant].c;
  double flops = cost[op->variant].flops * n, bytes = bpe * n;
  double fresh = (cost[op->variant].wa * e + cost[op->variant].wc) * n; /* new outputs */
  sc__op_roofline_mem(dev, peak, dev->flops_efficiency, 1.0, flops, bytes, bytes, fresh, out);
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(n), bpe, cost[op->variant].flops,
                         cost[op->variant].rng, cost[op->variant].bwd};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "elementwise", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* bytes and elements; the per-element counts and the flags are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1),
};

SC_PLUGIN_ENTRY(ops_elementwise) { return &desc.hdr; }
