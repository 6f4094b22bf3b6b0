/*
 * optimizer: one Adam (AdamW) step over `params` parameters, as a fused multi-tensor
 * kernel (Apex/Transformer Engine FusedAdam). dims {params}; variant SC_OPTIM_ADAM.
 * op->dtype is the model weights' dtype. See docs/operators.md.
 *   mixed precision (dtype of 1 or 2 bytes): read fp32 master weight, fp32 gradient, m, v
 *     (16 B), write master, m, v (12 B) and the low-precision model weight (e B):
 *     28 + e bytes per parameter
 *   fp32 (dtype fp32/tf32): read weight, gradient, m, v; write weight, m, v: 28 B
 *   flops 14 per parameter: decoupled weight decay p *= (1 - lr*wd) 1; m = b1 m + (1-b1) g 3;
 *     v = b2 v + (1-b2) g^2 4; denominator sqrt(v)/sqrt(bc2) + eps 3; p -= step * m / denom 3
 *     (bias-correction scalars precomputed once per step)
 * Working set (for the cache hit rate): 16 + e bytes per parameter (each array is read and
 * written in place), 16 for fp32.
 * Arithmetic at the device's fp32 rate.
 */
#include "op_common.h"

static const char *const dim_names[] = {"params"};
static const char *const feature_names[] = {"log10_bytes", "log10_params"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "optimizer", 1, dim_names, SC_OPTIM_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "optimizer", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double n = (double)op->dims[0];
  double e = sc__op_dtype_bytes(op->dtype);
  double bpp = e < 4.0 ? 28.0 + e : 28.0;
  double flops = 14.0 * n, bytes = bpp * n;
  /* working set: master (or fp32 weight), gradient, m, v, and the low-precision weight */
  sc__op_roofline_mem(dev, peak, dev->flops_efficiency, 1.0, flops, bytes,
                      (16.0 + (e < 4.0 ? e : 0.0)) * n, 0.0, out); /* all in place */
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(n)};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "optimizer", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* both: a hybrid residual of the optimizer is a constant */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1),
};

SC_PLUGIN_ENTRY(ops_optimizer) { return &desc.hdr; }
