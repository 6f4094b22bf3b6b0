/*
 * attention: fused flash attention (FlashAttention-2 style), forward and backward.
 * dims {batch, heads, kv_heads, seq_q, seq_k, head_dim, causal}; causal is 0 or 1;
 * kv_heads divides heads (grouped-query attention). See docs/operators.md.
 *
 * With B = batch, H = heads, G = kv_heads, d = head_dim, e = dtype bytes:
 *   nominal forward matmul work  W = 4 * B * H * seq_q * seq_k * d   (S = QK^T and O = PV)
 *   causal: masked tiles are skipped, c = 1/2 of the work, else c = 1; the matmul work
 *     takes c_m = c, or on a device that states its kernel's tile (attention_block_q,
 *     attention_block_k) the share of the scores its blocks compute, diagonal tiles whole
 *     (sc_device_attention_causal_share): 0.625 of a 256 x 256 head in blocks of 64 query
 *     rows. The softmax work (below) counts the unmasked scores, c.
 *   forward  flops = c_m * W
 *   backward flops = 2.5 * c_m * W: five matmuls (recompute S, dV = P^T dO, dP = dO V^T,
 *     dQ = dS K, dK = dS^T Q) against the forward's two (Dao 2023, FlashAttention-2,
 *     arXiv:2307.08691, Sec. 3.1.2 and its FLOP accounting of the backward pass)
 *   forward  bytes = e * (2*B*H*seq_q*d [read Q, write O] + 2*B*G*seq_k*d [read K, V])
 *                    + 4 * B*H*seq_q [fp32 log-sum-exp written]
 *   backward bytes = e * (4*B*H*seq_q*d [read Q, O, dO; write dQ]
 *                         + 4*B*G*seq_k*d [read K, V; write dK, dV])
 *                    + 12 * B*H*seq_q [read LSE; write and read D = rowsum(dO * O), fp32]
 * Bytes are compulsory traffic (K/V re-reads per query block assumed served by on-chip
 * memory and L2); the kernel is compute bound in practice.
 * Compute runs at peak[dtype] x the device's attention_fwd_efficiency or
 * attention_bwd_efficiency (what fused attention kernels reach at long sequences: softmax,
 * masking and the online rescaling keep them below GEMM rates), falling back to the matmul
 * efficiency of the dtype when the hardware file does not state them.
 * A device may instead separate the two kinds of work: with a kernel rate for (attention,
 * variant) ([hardware.kernel_flops_per_s.attention]), the efficiency is the matmul part's
 * and the softmax work on the unmasked scores is added at that rate, 5 flops per score
 * (forward: scale, max, exp, sum, normalise; backward: recompute P = exp(S scale - lse)
 * (3), dS = P (dP - D) (2)). The matmul work grows with head_dim and the softmax work does
 * not, so one efficiency cannot serve head dims 32 and 128 on such a device (a CPU's
 * expf loop against its sgemm).
 */
#include "op_common.h"

static const char *const dim_names[] = {"batch",  "heads", "kv_heads", "seq_q",
                                        "seq_k", "head_dim", "causal"};

static const char *const feature_names[] = {
    "log10_flops", "log10_bytes", "log10_intensity", "log2_seq_q", "log2_seq_k",
    "log2_head_dim", "log2_batch_heads", "gqa_ratio", "causal", "backward"};
#define NFEATURES (sizeof feature_names / sizeof feature_names[0])

static int estimate(void *state, const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                    sc_error *err) {
  (void)state;
  /* causal may be 0: check it separately, after the others (> 0). */
  sc_op_desc chk;
  if (op != NULL) {
    chk = *op;
    if (chk.ndims == 7 && chk.dims[6] == 0) chk.dims[6] = 1;
  }
  int rc = sc__op_check(dev, op ? &chk : NULL, out, "attention", 7, dim_names,
                        SC_ATTN_VARIANT_COUNT, 1, err);
  if (rc != SC_OK) return rc;
  if (op->dims[6] != 0 && op->dims[6] != 1) {
    return sc_plugin_fail(err, SC_EINVAL, "attention: dims[6] (causal) must be 0 or 1 (got %lld)",
                          (long long)op->dims[6]);
  }
  if (op->dims[1] % op->dims[2] != 0) {
    return sc_plugin_fail(err, SC_EINVAL,
                          "attention: dims[2] (kv_heads = %lld) must divide dims[1] (heads = %lld)",
                          (long long)op->dims[2], (long long)op->dims[1]);
  }
  double B = (double)op->dims[0], H = (double)op->dims[1], G = (double)op->dims[2],
         sq = (double)op->dims[3], sk = (double)op->dims[4], d = (double)op->dims[5];
  int causal = op->dims[6] != 0;
  int bwd = op->variant == SC_ATTN_FLASH_BWD;
  double e = sc__op_dtype_bytes(op->dtype);
  double c = causal ? 0.5 : 1.0, c_m = causal ? sc_device_attention_causal_share(dev, sq, sk) : 1.0;
  double W = 4.0 * B * H * sq * sk * d;
  double flops, bytes;
  if (!bwd) {
    flops = c_m * W;
    bytes = e * (2.0 * B * H * sq * d + 2.0 * B * G * sk * d) + 4.0 * B * H * sq;
  } else {
    flops = 2.5 * c_m * W;
    bytes = e * (4.0 * B * H * sq * d + 4.0 * B * G * sk * d) + 12.0 * B * H * sq;
  }
  double eff = bwd ? dev->attention_bwd_efficiency : dev->attention_fwd_efficiency;
  if (!(eff > 0.0)) eff = sc_device_matmul_efficiency(dev, op->dtype);
  double peak = dev->peak_flops_per_s[op->dtype];
  double sm_rate = sc_device_kernel_rate(dev, "attention", op->variant);
  if (sm_rate > 0.0 && peak > 0.0) { /* matmul part + softmax part, as one efficiency */
    double t = flops / (peak * eff) + 5.0 * c * B * H * sq * sk / sm_rate;
    eff = flops / (peak * t);
  }
  sc__op_roofline_eff(dev, peak, eff, 1.0, flops, bytes, out);
  double f[NFEATURES] = {sc__op_log10(flops), sc__op_log10(bytes),
                         sc__op_log10(sc__op_intensity(flops, bytes)), sc__op_log2(sq),
                         sc__op_log2(sk), sc__op_log2(d), sc__op_log2(B * H), H / G,
                         (double)causal, (double)bwd};
  out->nfeatures = NFEATURES;
  for (size_t i = 0; i < NFEATURES; i++) out->features[i] = f[i];
  return SC_OK;
}

static const sc_op_plugin desc = {
    .hdr = SC_PLUGIN_HEADER(sc_op_plugin, SC_PLUGIN_KIND_OP, "attention", "1.0.0"),
    .nfeatures = NFEATURES,
    .feature_names = feature_names,
    .estimate = estimate,
    /* the totals, the sequence lengths and batch x heads; intensity, head dimension, GQA
     * ratio and the flags are shape */
    .scale_features = SC_FEATURE(0) | SC_FEATURE(1) | SC_FEATURE(3) | SC_FEATURE(4) |
                      SC_FEATURE(6),
};

SC_PLUGIN_ENTRY(ops_attention) { return &desc.hdr; }
