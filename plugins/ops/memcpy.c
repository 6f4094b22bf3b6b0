/*
 * memcpy: device-to-device copy, or zero-fill, of a buffer. dims {bytes}; variants
 * SC_MEMCPY_*. See docs/operators.md. The dtype is not used (any value is accepted, the
 * device need not support it); flops 0.
 *   COPY: bytes moved = 2 * dims[0] (read and write); the destination is a fresh write (read
 *         first by a write-allocate device).
 *   FILL: bytes moved = dims[0] (written), priced as a zero-fill (sc__op_fill_s): at the
 *         device's measured fill rate for a buffer of that size where it states one; a cold
 *         buffer (op->flags & SC_OP_COLD) at its cold fill rate (sc__op_fill_cold_s).
 */
#include "op_common.h"

static const char *const dim_names[] = {"bytes"};
static const char *const feature_names[] = {"log10_bytes"}; /* of the bytes moved */
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "memcpy", 1, dim_names, SC_MEMCPY_VARIANT_COUNT, 0, err);
  if (rc != SC_OK) return rc;
  const int fill = op->variant == SC_MEMCPY_FILL;
  double bytes = (fill ? 1.0 : 2.0) * (double)op->dims[0];
  if (fill) {
    sc__op_result(dev,
                  (op->flags & SC_OP_COLD) ? sc__op_fill_cold_s(dev, bytes)
                                           : sc__op_fill_s(dev, bytes),
                  0.0, bytes, SC_BOUND_MEMORY, out);
  } else {
    sc__op_roofline_mem(dev, 1.0, dev->flops_efficiency, 1.0, 0.0, bytes, bytes, 0.5 * bytes,
                        out);
  }
  out->nfeatures = NFEATURES;
  out->features[0] = sc__op_log10(bytes);
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "memcpy", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* the bytes moved */
    .scale_features = SC_FEATURE(0),
};

SC_PLUGIN_ENTRY(ops_memcpy) { return &desc.hdr; }
