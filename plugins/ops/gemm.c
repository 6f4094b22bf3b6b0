/*
 * gemm: C[m,n] = A[m,k] B[k,n], `batch` independent products (strided batched GEMM).
 * dims {batch, m, n, k}; variant SC_GEMM_PLAIN. See docs/operators.md.
 *
 *   flops = 2 * batch * m * n * k                      (useful work, reported)
 *   bytes = e * batch * (m*k + k*n + m*n)              (compulsory traffic: read A and B once,
 *                                                       write C once; e = dtype bytes)
 * Tensor-core quantisation (NVIDIA, "Matrix Multiplication Background User's Guide",
 * https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/):
 *   tile quantisation: the kernel computes whole tile_m x tile_n output tiles over whole
 *     tile_k slices, so with M' = ceil(m/tile_m)*tile_m (same for N', K')
 *         tile_eff = (m * n * k) / (M' * N' * K')
 *   wave quantisation: tiles = batch * ceil(m/tile_m) * ceil(n/tile_n) thread blocks run
 *     compute_units at a time (one resident tile per SM assumed), so the last wave may be
 *     partial: waves = ceil(tiles / compute_units),
 *         wave_eff = tiles / (waves * compute_units)
 *   compute time = flops / (peak[dtype] * eff[dtype] * tile_eff * wave_eff)
 * with eff[dtype] the device's matmul efficiency of the dtype (flops_efficiency_by_dtype,
 * e.g. a measured maximum achievable matmul rate over the peak; else flops_efficiency).
 * A GEMM with m, n or k not a multiple of 16 / e elements runs at the device's
 * matmul_unaligned_efficiency instead, when it states one (the library's fallback kernel).
 * A device with tile_m/n/k = 0 has no tile quantisation (tile_eff = 1, tiles counted as if
 * each dimension were one tile) and compute_units = 0 disables wave quantisation.
 * A CPU that states gemm_exposed_bw_Bps adds the share of its BLAS's operand traffic that
 * packing does not overlap with the arithmetic (sc_device_gemm_exposed_s): skinny GEMMs,
 * whose traffic per FLOP is largest, run well below the 2048^3 rate (docs/operators.md).
 */
#include "op_common.h"

static const char *const dim_names[] = {"batch", "m", "n", "k"};

static const char *const feature_names[] = {
    "log10_flops",  "log10_bytes", "log10_intensity", "tile_eff", "wave_eff",
    "log2_batch",   "log2_m",      "log2_n",          "log2_k",   "waves"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  int rc = sc__op_check(dev, op, out, "gemm", 4, dim_names, SC_GEMM_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  double batch = (double)op->dims[0], m = (double)op->dims[1], n = (double)op->dims[2],
         k = (double)op->dims[3];
  double e = sc__op_dtype_bytes(op->dtype);
  double flops = 2.0 * batch * m * n * k;
  double bytes = e * batch * (m * k + k * n + m * n);

  double tile_eff = 1.0, wave_eff = 1.0, waves = 1.0;
  double tiles_mn = 1.0;
  if (dev->tile_m > 0 && dev->tile_n > 0 && dev->tile_k > 0) {
    int64_t mt = ceil_div(op->dims[1], dev->tile_m), nt = ceil_div(op->dims[2], dev->tile_n),
            kt = ceil_div(op->dims[3], dev->tile_k);
    tile_eff = (m * n * k) / ((double)mt * dev->tile_m * (double)nt * dev->tile_n *
                              (double)kt * dev->tile_k);
    tiles_mn = (double)mt * (double)nt;
  }
  if (dev->compute_units > 0) {
    double tiles = batch * tiles_mn;
    waves = ceil(tiles / dev->compute_units);
    wave_eff = tiles / (waves * dev->compute_units);
  }
  /* A dimension that is not a whole number of 16-byte vectors: the library's aligned
   * kernels cannot load it, and a device that states it runs the unaligned kernel's rate */
  double eff = sc_device_matmul_efficiency(dev, op->dtype);
  int64_t vec = e > 0 && e <= 16 ? (int64_t)(16.0 / e) : 1;
  if (dev->matmul_unaligned_efficiency > 0 && vec > 1 &&
      (op->dims[1] % vec != 0 || op->dims[2] % vec != 0 || op->dims[3] % vec != 0))
    eff = dev->matmul_unaligned_efficiency;
  sc__op_roofline_eff(dev, dev->peak_flops_per_s[op->dtype], eff, tile_eff * wave_eff, flops,
                      bytes, out);
  /* A CPU BLAS's packing and C traffic past the core's caches, not overlapped (0 on a device
   * that does not state it: every GPU file) */
  out->time_s += sc_device_gemm_exposed_s(dev, batch, bytes / batch); /* one product's */
  double f[NFEATURES] = {sc__op_log10(flops), sc__op_log10(bytes),
                         sc__op_log10(sc__op_intensity(flops, bytes)), tile_eff, wave_eff,
                         sc__op_log2(batch), sc__op_log2(m), sc__op_log2(n), sc__op_log2(k),
                         waves};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "gemm", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* the totals and the matrix dimensions; intensity, the quantisation efficiencies and the
     * count of products are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1) | SC_FEATURE(6) | SC_FEATURE(7) |
                      SC_FEATURE(8) | SC_FEATURE(9),
};

SC_PLUGIN_ENTRY(ops_gemm) { return &desc.hdr; }
