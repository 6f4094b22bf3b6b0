/*
 * softmax: Megatron's fused scale + causal mask + softmax of attention scores (unfused
 * attention path), and its backward. dims {rows, cols}; variants SC_SOFTMAX_FWD / _BWD, and
 * SC_SOFTMAX_PLAIN_FWD / _BWD: a plain softmax over every element of the row (no scale, no
 * mask: torch.softmax), forward flops 5N (max, subtract, exp, sum, normalise), backward 4N
 * (no scale), the same bytes.
 * See docs/operators.md. With e = dtype bytes and N = rows * cols:
 *   causal mask: row r is query position r mod cols and sees keys 0 .. r mod cols, so the
 *             unmasked elements are V = floor(rows/cols) * cols(cols+1)/2 + m(m+1)/2 with
 *             m = rows mod cols (V = N(cols+1)/(2 cols) for whole heads, rows = k * cols)
 *   forward:  bytes 2eN (read scores, write probabilities; the causal mask is generated,
 *             not read); flops 7V (scale, mask select, max, subtract, exp, sum, normalise
 *             on the unmasked elements; the masked ones are written as zero)
 *   backward: bytes 3eN (read y and dy, write dx); flops 5N (y*dy, row sum, subtract,
 *             * y, scale)
 * Fresh writes (for a write-allocate device): the output, e N.
 * Arithmetic at the device's fp32 rate. Both kernels pass over a row more than once (the
 * forward: max, exponentials, normalise; the backward: the row's dot product, then dx); a
 * device stating [hardware.row_exposure.softmax] adds that multiple of min(compute, memory)
 * to the roofline's max at every row width (sc_device_exposure: on the CPU the forward's
 * rows of 128 to 1600 columns past the last-level cache ran 9-14 % over the overlapped
 * roofline alike, inside the L1 or not; docs/operators.md). The kernel's rate is its stated
 * rate (measured on 256-column rows) times the device's [hardware.row_rate.softmax.<variant>]
 * at this row width (sc_device_row_rate; on the Zen 4 guest rows of 64 columns ran 10-13 %
 * under their roofline without it). GPU files state none.
 */
#include "op_common.h"

static const char *const dim_names[] = {"rows", "cols"};
static const char *const feature_names[] = {"log10_bytes", "log10_rows", "log2_cols",
                                            "backward", "unmasked_fraction"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "softmax", 2, dim_names, SC_SOFTMAX_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double peak;
  rc = sc__op_vector_peak(dev, "softmax", op->variant, &peak, err);
  if (rc != SC_OK) return rc;
  double rows = (double)op->dims[0], cols = (double)op->dims[1], N = rows * cols;
  peak *= sc_device_row_rate(dev, "softmax", op->variant, cols);
  double e = sc__op_dtype_bytes(op->dtype);
  const int bwd = op->variant == SC_SOFTMAX_BWD || op->variant == SC_SOFTMAX_PLAIN_BWD;
  const int plain = op->variant >= SC_SOFTMAX_PLAIN_FWD;
  double whole = floor(rows / cols), m = rows - whole * cols;
  double V = plain ? N : whole * cols * (cols + 1.0) / 2.0 + m * (m + 1.0) / 2.0;
  double flops = plain ? (bwd ? 4.0 * N : 5.0 * N) : bwd ? 5.0 * N : 7.0 * V;
  double bytes = (bwd ? 3.0 : 2.0) * e * N;
  /* fresh writes: the probabilities (forward) or dx (backward) */
  sc__op_roofline_exposed(dev, peak, dev->flops_efficiency, 1.0, flops, bytes, bytes, e * N,
                          sc_device_exposure(dev, "softmax", op->variant), out);
  double f[NFEATURES] = {sc__op_log10(bytes), sc__op_log10(rows), sc__op_log2(cols), (double)bwd,
                         V / N};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "softmax", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* bytes and rows; the row width, the flag and the unmasked share are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1),
};

SC_PLUGIN_ENTRY(ops_softmax) { return &desc.hdr; }
