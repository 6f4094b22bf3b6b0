/*
 * gemm: C[m,n] = A[m,k] B[k,n], `batch` independent products (strided batched GEMM).
 * dims {batch, m, n, k}; variant SC_GEMM_PLAIN (A m x k) or SC_GEMM_TN (A stored k x m).
 * See docs/operators.md.
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
 *   split-K: a product whose output tiles cannot fill the SMs (batch * ceil(m/tile_m) *
 *     ceil(n/tile_n) < compute_units) has its k dimension split by the library into s
 *     slices of whole k tiles, s tiles per output tile, each slice's partial C in fp32
 *     written and read once more to be summed (2 * 4 * s * batch * m * n bytes); s is
 *     the one of 1 .. min(ceil(k/tile_k), compute_units) with the least time, so a long
 *     thin product (a small micro-batch's, a wgrad's) runs on every SM, as cuBLAS's and
 *     CUTLASS's split-K and stream-K kernels do. tile_eff counts the slices' own k
 *     padding (s * ceil(ceil(k/tile_k)/s) k tiles).
 * with eff[dtype] the device's matmul efficiency of the dtype (flops_efficiency_by_dtype,
 * e.g. a measured maximum achievable matmul rate over the peak; else flops_efficiency).
 * A GEMM whose leading dimensions (k and n for SC_GEMM_PLAIN, m and n for SC_GEMM_TN: the
 * row lengths of its row-major operands) are not a multiple of 16 / e elements runs at the
 * device's matmul_unaligned_efficiency instead, when it states one (the library's fallback
 * kernel: cuBLAS's for a 50257-word vocabulary in each of a layer's three GEMMs).
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

  /* A leading dimension that is not a whole number of 16-byte vectors: the library's
   * aligned kernels cannot load its rows, and a device that states it runs the unaligned
   * kernel's rate */
  double eff = sc_device_matmul_efficiency(dev, op->dtype);
  int64_t vec = e > 0 && e <= 16 ? (int64_t)(16.0 / e) : 1;
  const int64_t lead_a = op->variant == SC_GEMM_TN ? op->dims[1] : op->dims[3];
  if (dev->matmul_unaligned_efficiency > 0 && vec > 1 &&
      (lead_a % vec != 0 || op->dims[2] % vec != 0))
    eff = dev->matmul_unaligned_efficiency;

  double tile_eff = 1.0, wave_eff = 1.0, waves = 1.0;
  int64_t mt = 1, nt = 1, kt = 1;
  const int tiled = dev->tile_m > 0 && dev->tile_n > 0 && dev->tile_k > 0;
  if (tiled) {
    mt = ceil_div(op->dims[1], dev->tile_m);
    nt = ceil_div(op->dims[2], dev->tile_n);
    kt = ceil_div(op->dims[3], dev->tile_k);
  }
  const double tiles_mn = (double)mt * (double)nt;
  /* split-K only where the output tiles leave SMs idle, at most one slice per SM */
  int64_t smax = 1;
  if (tiled && dev->compute_units > 0 && batch * tiles_mn < (double)dev->compute_units)
    smax = kt < (int64_t)dev->compute_units ? kt : (int64_t)dev->compute_units;
  for (int64_t s = 1; s <= smax; s++) {
    double te = 1.0, we = 1.0, w = 1.0;
    if (tiled)
      te = (m * n * k) / ((double)mt * dev->tile_m * (double)nt * dev->tile_n *
                          (double)(s * ceil_div(kt, s)) * dev->tile_k);
    if (dev->compute_units > 0) {
      double tiles = batch * tiles_mn * (double)s;
      w = ceil(tiles / dev->compute_units);
      we = tiles / (w * dev->compute_units);
    }
    double partial = s > 1 ? 2.0 * 4.0 * (double)s * batch * m * n : 0.0;
    sc_estimate cand;
    sc__op_roofline_eff(dev, dev->peak_flops_per_s[op->dtype], eff, te * we, flops,
                        bytes + partial, &cand);
    if (s == 1 || cand.time_s < out->time_s) {
      *out = cand;
      tile_eff = te;
      wave_eff = we;
      waves = w;
    }
  }
  /* the reported traffic is the operands' (the partial sums are the library's business) */
  out->bytes = bytes;
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
