/*
 * memcpy: device-to-device copy. dims {bytes}; variant 0. See docs/operators.md.
 *   bytes moved = 2 * dims[0] (read and write); flops 0; the dtype is not used (any value
 *   is accepted, the device need not support it).
 */
#include "op_common.h"

static const char *const dim_names[] = {"bytes"};
static const char *const feature_names[] = {"log10_bytes"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "memcpy", 1, dim_names, 1, 0, err);
  if (rc != SC_OK) return rc;
  double bytes = 2.0 * (double)op->dims[0];
  /* the destination is a fresh write (read first by a write-allocate device) */
  sc__op_roofline_mem(dev, 1.0, dev->flops_efficiency, 1.0, 0.0, bytes, bytes, 0.5 * bytes, out);
  out->nfeatures = NFEATURES;
  out->features[0] = sc__op_log10(bytes);
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "memcpy", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
};

SC_PLUGIN_ENTRY(ops_memcpy) { return &desc.hdr; }
