/*
 * cross_entropy: Megatron's vocab_parallel_cross_entropy on the local vocabulary shard,
 * computed in fp32 (the logits are cast with .float()), and its gradient.
 * dims {tokens, vocab}; variants SC_CE_FWD / SC_CE_BWD. See docs/operators.md.
 * Per logit, with e = the logits' dtype bytes:
 *   forward:  bytes e + 28: cast (read e, write 4), max (read 4), subtract max and exp
 *             (read 4, write 4), sum (read 4), normalise in place to the softmax kept for
 *             the backward (read 4, write 4); flops 5 (max, subtract, exp, sum, divide)
 *   backward: bytes e + 12: softmax minus one-hot times the loss gradient in place (read 4,
 *             write 4), cast back (read 4, write e); flops 2
 * fp32 logits have no casts (PyTorch's .float() of an fp32 tensor returns it): forward 24,
 * backward 8 bytes per logit.
 * Working set (for the cache hit rate): e bytes per logit, plus 4 when cast: the passes
 * run in place over the same rows. Fresh writes (for a write-allocate device): only the
 * casts' outputs (4, and e back).
 * The three all-reduces over the tensor-parallel group are collectives, not part of this.
 * Arithmetic at the device's fp32 rate.
 */
#include "op_common.h"

static const char *const dim_names[] = {"tokens", "vocab"};
static const char *const feature_names[] = {"log10_bytes", "log10_tokens", "log10_vocab",
                                            "backward"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "cross_entropy", 2, dim_names, SC_CE_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "cross_entropy", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double t = (double)op->dims[0], v = (double)op->dims[1], N = t * v;
  double e = sc__op_dtype_bytes(op->dtype);
  int bwd = op->variant == SC_CE_BWD;
  double cast = op->dtype == SC_DTYPE_FP32 ? 0.0 : e + 4.0; /* to fp32 and (bwd) back */
  double flops = (bwd ? 2.0 : 5.0) * N, bytes = (cast + (bwd ? 8.0 : 24.0)) * N;
  /* working set: the logits, and their fp32 copy when cast (the passes are in place) */
  sc__op_roofline_mem(dev, peak, dev->flops_efficiency, 1.0, flops, bytes,
                      (e + (cast > 0.0 ? 4.0 : 0.0)) * N,
                      cast > 0.0 ? (bwd ? e : 4.0) * N : 0.0, out); /* fresh: the casts' outputs */
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(t), sc__op_log10(v), (double)bwd};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "cross_entropy", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* bytes, tokens and the vocabulary (the row width, but one that grows with the model
     * past every cache: read as shape, it took the held-out error from 2.1 to 3.2 % over the
     * twenty CPU sets of tests/bench/select_rules.sh); the flag is shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1) | SC_FEATURE(2),
};

SC_PLUGIN_ENTRY(ops_cross_entropy) { return &desc.hdr; }
