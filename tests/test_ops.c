/* Analytical operator plugins against hand-computed rooflines on an A100-like device built
 * here (bf16/fp16 312 TFLOP/s dense, fp32 19.5 TFLOP/s, 1.555 TB/s: the A100 SXM4 40GB
 * datasheet; 108 SMs; 256x128x64 tile), including compute- and memory-bound GEMMs, tile and
 * wave quantisation, unsupported dtypes and malformed descriptions. The plugins are reached
 * through their static entry symbols and through a registry. Relative tolerance 1e-9 unless
 * said otherwise. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/ops.h"
#include "stepcast/registry.h"
#include "stepcast/stepcast.h"

const sc_plugin_header *sc_plugin_entry_ops_gemm_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_attention_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_norm_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_elementwise_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_softmax_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_embedding_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_cross_entropy_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_optimizer_v1(void);
const sc_plugin_header *sc_plugin_entry_ops_memcpy_v1(void);

static const struct {
  const char *family;
  sc_plugin_entry_fn entry;
} entries[] = {
    {"gemm", sc_plugin_entry_ops_gemm_v1},
    {"attention", sc_plugin_entry_ops_attention_v1},
    {"norm", sc_plugin_entry_ops_norm_v1},
    {"elementwise", sc_plugin_entry_ops_elementwise_v1},
    {"softmax", sc_plugin_entry_ops_softmax_v1},
    {"embedding", sc_plugin_entry_ops_embedding_v1},
    {"cross_entropy", sc_plugin_entry_ops_cross_entropy_v1},
    {"optimizer", sc_plugin_entry_ops_optimizer_v1},
    {"memcpy", sc_plugin_entry_ops_memcpy_v1},
};
#define NENTRIES (sizeof entries / sizeof entries[0])

static sc_device a100(void) {
  sc_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "a100-test");
  snprintf(d.kind, sizeof d.kind, "gpu");
  d.peak_flops_per_s[SC_DTYPE_FP32] = 19.5e12;
  d.peak_flops_per_s[SC_DTYPE_TF32] = 156e12;
  d.peak_flops_per_s[SC_DTYPE_BF16] = 312e12;
  d.peak_flops_per_s[SC_DTYPE_FP16] = 312e12;
  d.peak_flops_per_s[SC_DTYPE_INT8] = 624e12; /* no FP8 on Ampere: peak 0 */
  d.mem_bytes = 40e9;
  d.mem_bw_Bps = 1.555e12;
  d.l2_bytes = 40.0 * 1024 * 1024;
  d.compute_units = 108;
  d.flops_efficiency = 1.0;
  d.mem_efficiency = 1.0;
  d.launch_s = 0.0;
  d.tile_m = 256;
  d.tile_n = 128;
  d.tile_k = 64;
  return d;
}

static const sc_op_plugin *plug(const char *family) {
  for (size_t i = 0; i < NENTRIES; i++) {
    if (strcmp(entries[i].family, family) == 0) {
      return (const sc_op_plugin *)entries[i].entry();
    }
  }
  ck_abort_msg("no entry for %s", family);
  return NULL;
}

static sc_op_desc desc(const char *family, uint32_t variant, sc_dtype dt, uint32_t nd,
                       const int64_t *dims) {
  sc_op_desc o;
  memset(&o, 0, sizeof o);
  o.family = family;
  o.variant = variant;
  o.dtype = dt;
  o.ndims = nd;
  for (uint32_t i = 0; i < nd; i++) o.dims[i] = dims[i];
  return o;
}
#define DESC(fam, var, dt, ...)                                                       \
  desc((fam), (var), (dt), (uint32_t)(sizeof((int64_t[]){__VA_ARGS__}) / 8),           \
       (int64_t[]){__VA_ARGS__})

static sc_estimate run(const sc_device *dev, sc_op_desc o) {
  sc_estimate e;
  sc_error err;
  err.msg[0] = '\0';
  int rc = plug(o.family)->estimate(NULL, dev, &o, &e, &err);
  ck_assert_msg(rc == SC_OK, "%s: %s", o.family, err.msg);
  return e;
}

static int run_err(const sc_device *dev, sc_op_desc o, sc_error *err) {
  sc_estimate e;
  return plug(o.family)->estimate(NULL, dev, &o, &e, err);
}

#define REL(got, want)                                                                     \
  ck_assert_msg(fabs((got) / (want) - 1.0) < 1e-9, "%s = %.9e, expected %.9e", #got,       \
                (double)(got), (double)(want))

START_TEST(test_descriptors) {
  for (size_t i = 0; i < NENTRIES; i++) {
    const sc_op_plugin *p = (const sc_op_plugin *)entries[i].entry();
    ck_assert_int_eq(p->hdr.kind, SC_PLUGIN_KIND_OP);
    ck_assert_int_eq(p->hdr.abi_major, SC_PLUGIN_ABI_MAJOR);
    ck_assert_str_eq(p->hdr.name, entries[i].family);
    ck_assert_uint_eq(p->hdr.size, sizeof(sc_op_plugin));
    ck_assert_uint_le(p->nfeatures, SC_MAX_FEATURES);
    ck_assert_uint_ge(p->nfeatures, 1);
    for (uint32_t f = 0; f < p->nfeatures; f++) ck_assert_ptr_nonnull(p->feature_names[f]);
  }
}
END_TEST

START_TEST(test_gemm_compute_bound_wave) {
  sc_device dev = a100();
  /* 4096^3 bf16: 16 x 32 = 512 tiles of 256x128 on 108 SMs -> 5 waves, wave_eff 512/540;
   * no tile waste. time = 2*4096^3 / (312e12 * 512/540) = 2*4096^2*4320/312e12. */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.flops, 2.0 * 4096.0 * 4096 * 4096);
  REL(e.bytes, 2.0 * 3 * 4096.0 * 4096);
  REL(e.time_s, 4.645998276923077e-4);
  ck_assert_int_eq(e.bound, SC_BOUND_COMPUTE);
  ck_assert_int_eq(e.bound_tier, -1);
  ck_assert_uint_eq(e.nfeatures, 10);
  REL(e.features[3], 1.0);           /* tile_eff */
  REL(e.features[4], 512.0 / 540.0); /* wave_eff */
  REL(e.features[9], 5.0);           /* waves */
  /* Efficiency derating and launch overhead: half the FLOP rate doubles the compute term. */
  dev.flops_efficiency = 0.5;
  dev.launch_s = 5e-6;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.time_s, 2 * 4.645998276923077e-4 + 5e-6);
}
END_TEST

START_TEST(test_gemm_tile_quantisation) {
  sc_device dev = a100();
  /* m = 4097: ceil(4097/256) = 17 tile rows, tile_eff 4097/4352; 17 x 32 = 544 tiles ->
   * 6 waves, wave_eff 544/648. time = 2*4097*4096^2 / (312e12 * 4097/4352 * 544/648)
   * = 2*4096^2*5184/312e12. */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4097, 4096, 4096));
  REL(e.flops, 2.0 * 4097 * 4096.0 * 4096);
  REL(e.time_s, 5.575197932307692e-4);
  REL(e.features[3], 4097.0 / 4352.0);
  REL(e.features[4], 544.0 / 648.0);
  /* k = 65 pads to 128: tile_eff 65/128. A 256x128 output is one tile, split-K into its two
   * k tiles (two slices of one tile each, the same padding): wave_eff 2/108. */
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 256, 128, 65));
  REL(e.features[3], 65.0 / 128.0);
  REL(e.features[4], 2.0 / 108.0);
  /* Without tile and SM counts, the plain roofline. */
  dev.tile_m = dev.tile_n = dev.tile_k = 0;
  dev.compute_units = 0;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4097, 4096, 4096));
  REL(e.time_s, 2.0 * 4097 * 4096.0 * 4096 / 312e12);
  REL(e.features[3], 1.0);
  REL(e.features[4], 1.0);
}
END_TEST

/* Split-K: a product whose output tiles leave SMs idle has its k split into the slices that
 * give the least time, each slice's fp32 partial C written and read once more. */
START_TEST(test_gemm_split_k) {
  sc_device dev = a100();
  /* 256 x 128 x 65536 bf16: one output tile of 1024 k tiles, unsplit one SM of 108 (1.49 ms).
   * Split, the operands' 50 MB (32 us) and the partials' 8 * s * 256 * 128 bytes bound it
   * from below; the estimate is the least over s = 1 .. 108 of max(compute, traffic). */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 256, 128, 65536));
  double flops = 2.0 * 256 * 128 * 65536, ops = 2.0 * (256.0 * 65536 + 65536.0 * 128 + 256 * 128);
  double best = 1e30;
  for (int s = 1; s <= 108; s++) {
    double kt_s = ceil(1024.0 / s);
    double te = 1024.0 / (kt_s * s), we = s / 108.0;
    double tc = flops / (312e12 * te * we);
    double tm = (ops + (s > 1 ? 8.0 * s * 256 * 128 : 0.0)) / 1.555e12;
    double t = tc > tm ? tc : tm;
    if (t < best) best = t;
  }
  REL(e.time_s, best);
  ck_assert(e.time_s < flops / (312e12 / 108.0) / 10.0); /* unsplit: one SM of 108 */
  REL(e.bytes, ops); /* the operands' traffic, not the partials' */
  /* A product that fills the SMs is not split: 4096^3 keeps its 5 waves (compute_bound_wave) */
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.features[9], 5.0);
  /* Without an SM count there is nothing to fill: no split, the plain roofline (here the
   * operands' traffic, no partials) */
  dev.compute_units = 0;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 256, 128, 65536));
  REL(e.time_s, ops / 1.555e12);
}
END_TEST

START_TEST(test_gemm_memory_bound) {
  sc_device dev = a100();
  dev.tile_m = dev.tile_n = dev.tile_k = 0;
  dev.compute_units = 0;
  /* 1024 batched 64^3 bf16: 2*1024*64^3 = 536870912 FLOPs (1.72 us at peak); bytes
   * 2 * 1024 * 3 * 64^2 = 25165824, 25165824 / 1.555e12 = 16.18 us: memory bound. */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1024, 64, 64, 64));
  REL(e.flops, 536870912.0);
  REL(e.bytes, 25165824.0);
  REL(e.time_s, 1.618380964630225e-05);
  ck_assert_int_eq(e.bound, SC_BOUND_MEMORY);
  /* With a large launch overhead the same operator is latency bound. */
  dev.launch_s = 1e-3;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1024, 64, 64, 64));
  ck_assert_int_eq(e.bound, SC_BOUND_LATENCY);
  REL(e.time_s, 1.618380964630225e-05 + 1e-3);
  /* fp32 GEMM runs at the fp32 peak (4 bytes per element). */
  dev.launch_s = 0;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP32, 1, 4096, 4096, 4096));
  REL(e.time_s, 2.0 * 4096.0 * 4096 * 4096 / 19.5e12);
  REL(e.bytes, 4.0 * 3 * 4096.0 * 4096);
}
END_TEST

START_TEST(test_unsupported_and_malformed) {
  sc_device dev = a100();
  sc_error err;
  int rc = run_err(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP8, 1, 64, 64, 64), &err);
  ck_assert_int_eq(rc, SC_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "fp8"));
  ck_assert_ptr_nonnull(strstr(err.msg, "a100-test"));
  rc = run_err(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_FWD, SC_DTYPE_FP8, 8, 8), &err);
  ck_assert_int_eq(rc, SC_EUNSUPPORTED);
  /* memcpy does no arithmetic: any dtype. */
  sc_estimate e = run(&dev, DESC("memcpy", 0, SC_DTYPE_FP8, 1000000));
  REL(e.bytes, 2e6);
  REL(e.time_s, 2e6 / 1.555e12);
  ck_assert_int_eq(e.bound, SC_BOUND_MEMORY);

  rc = run_err(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 64, 0, 64), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "dims[2] (n)"));
  rc = run_err(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 64, 64), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "ndims"));
  rc = run_err(&dev, DESC("gemm", 7, SC_DTYPE_BF16, 1, 64, 64, 64), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "variant"));
  rc = run_err(&dev, DESC("gemm", 0, (sc_dtype)42, 1, 64, 64, 64), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "dtype"));
  rc = run_err(&dev, DESC("elementwise", SC_EW_VARIANT_COUNT, SC_DTYPE_BF16, 10), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  rc = run_err(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 1, 16, 3, 64, 64, 64, 1),
               &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "kv_heads"));
  rc = run_err(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 1, 16, 16, 64, 64, 64, 2),
               &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "causal"));
  rc = run_err(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 1, 16, 16, -64, 64, 64, 1),
               &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "seq_q"));

  /* A device with impossible numbers. */
  sc_device bad = dev;
  bad.mem_bw_Bps = 0;
  rc = run_err(&bad, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_BF16, 8, 8), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "mem_bw_Bps"));
  bad = dev;
  bad.flops_efficiency = 1.5;
  rc = run_err(&bad, DESC("gemm", 0, SC_DTYPE_BF16, 1, 8, 8, 8), &err);
  ck_assert_int_eq(rc, SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "flops_efficiency"));
  bad = dev;
  bad.peak_flops_per_s[SC_DTYPE_FP32] = 0;
  rc = run_err(&bad, DESC("elementwise", SC_EW_ADD, SC_DTYPE_BF16, 8), &err);
  ck_assert_int_eq(rc, SC_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.msg, "fp32"));

  /* NULL arguments. */
  sc_op_desc o = DESC("gemm", 0, SC_DTYPE_BF16, 1, 8, 8, 8);
  sc_estimate out;
  ck_assert_int_eq(plug("gemm")->estimate(NULL, NULL, &o, &out, &err), SC_EINVAL);
  ck_assert_int_eq(plug("gemm")->estimate(NULL, &dev, NULL, &out, &err), SC_EINVAL);
  ck_assert_int_eq(plug("attention")->estimate(NULL, &dev, NULL, &out, &err), SC_EINVAL);
  ck_assert_int_eq(plug("gemm")->estimate(NULL, &dev, &o, NULL, NULL), SC_EINVAL);
}
END_TEST

START_TEST(test_attention) {
  sc_device dev = a100();
  /* b 2, 16 heads, s 2048, d 128, causal: nominal 4*2*16*2048^2*128 = 68719476736, half
   * of it done: 34359738368 FLOPs, 110.13 us at 312e12. Bytes: 2 B * (Q + O: 2*2*16*2048*128
   * + K + V: 2*2*16*2048*128) + LSE 4*2*16*2048 = 67108864 + 262144 = 67371008 (43.3 us). */
  sc_estimate e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 2, 16, 16, 2048,
                                 2048, 128, 1));
  REL(e.flops, 34359738368.0);
  REL(e.bytes, 67371008.0);
  REL(e.time_s, 34359738368.0 / 312e12);
  ck_assert_int_eq(e.bound, SC_BOUND_COMPUTE);
  /* Backward: 2.5x the FLOPs; bytes 2 B * (4*2*16*2048*128 + 4*2*16*2048*128) + 12*2*16*2048. */
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_BWD, SC_DTYPE_BF16, 2, 16, 16, 2048, 2048, 128, 1));
  REL(e.flops, 2.5 * 34359738368.0);
  REL(e.bytes, 2.0 * (4.0 * 8388608 + 4.0 * 8388608) + 12.0 * 65536);
  /* Not causal: the whole score matrix. GQA 16:4 reads a quarter of K and V. */
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 2, 16, 4, 2048, 2048, 128, 0));
  REL(e.flops, 68719476736.0);
  REL(e.bytes, 2.0 * (2.0 * 8388608 + 2.0 * 2097152) + 4.0 * 65536);
  REL(e.features[7], 4.0); /* gqa_ratio */
}
END_TEST

START_TEST(test_kernel_class_efficiencies) {
  sc_device dev = a100();
  dev.flops_efficiency = 0.8;
  /* GEMM: the dtype's matmul efficiency when stated, else flops_efficiency. 4096^3 as in
   * test_gemm_compute_bound_wave: 4.645998276923077e-4 s at full peak. */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.time_s, 4.645998276923077e-4 / 0.8);
  dev.matmul_efficiency[SC_DTYPE_BF16] = 0.5;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.time_s, 4.645998276923077e-4 / 0.5);
  /* Another dtype keeps flops_efficiency. */
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP16, 1, 4096, 4096, 4096));
  REL(e.time_s, 4.645998276923077e-4 / 0.8);
  /* Vector families never use the matmul figure: norm stays at flops_efficiency. */
  ck_assert(sc_device_matmul_efficiency(&dev, SC_DTYPE_FP16) == 0.8);
  ck_assert(sc_device_matmul_efficiency(&dev, SC_DTYPE_BF16) == 0.5);
  /* Attention: falls back to the dtype's matmul efficiency, then uses its own forward and
   * backward figures. 34359738368 FLOPs forward (test_attention). */
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 2, 16, 16, 2048, 2048, 128, 1));
  REL(e.time_s, 34359738368.0 / (312e12 * 0.5));
  dev.attention_fwd_efficiency = 0.4;
  dev.attention_bwd_efficiency = 0.25;
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_BF16, 2, 16, 16, 2048, 2048, 128, 1));
  REL(e.time_s, 34359738368.0 / (312e12 * 0.4));
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_BWD, SC_DTYPE_BF16, 2, 16, 16, 2048, 2048, 128, 1));
  REL(e.time_s, 2.5 * 34359738368.0 / (312e12 * 0.25));
}
END_TEST

/* The vector families price their arithmetic at vector_flops_per_s when the device states
 * it (a CPU whose fp32 peak is its sgemm rate), GEMMs keep the peak. */
START_TEST(test_vector_rate) {
  sc_device dev = a100();
  dev.peak_flops_per_s[SC_DTYPE_FP32] = 1e12;
  dev.mem_bw_Bps = 1e15; /* memory never binds here */
  sc_estimate e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_FWD, SC_DTYPE_FP32, 1024, 1024));
  REL(e.time_s, 7.0 * 1048576 / 1e12);
  dev.vector_flops_per_s = 5e9;
  e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_FWD, SC_DTYPE_FP32, 1024, 1024));
  REL(e.time_s, 7.0 * 1048576 / 5e9);
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096));
  REL(e.time_s, 4.645998276923077e-4); /* unchanged: bf16 peak, tile and wave as before */
}
END_TEST

/* A per-kernel rate (kernel_rates) wins over vector_flops_per_s for its (family, variant)
 * only; other variants and families keep the vector rate. */
START_TEST(test_kernel_rates) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e15; /* compute bound throughout */
  dev.vector_flops_per_s = 5e9;
  snprintf(dev.kernel_rates[0].family, sizeof dev.kernel_rates[0].family, "norm");
  dev.kernel_rates[0].flops_per_s[SC_NORM_OP_LAYERNORM_BWD] = 2e10;
  snprintf(dev.kernel_rates[1].family, sizeof dev.kernel_rates[1].family, "cross_entropy");
  dev.kernel_rates[1].flops_per_s[SC_CE_FWD] = 1e9;
  ck_assert(sc_device_kernel_rate(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD) == 2e10);
  ck_assert(sc_device_kernel_rate(&dev, "norm", SC_NORM_OP_LAYERNORM_FWD) == 0.0);
  ck_assert(sc_device_kernel_rate(&dev, "softmax", 0) == 0.0);
  ck_assert(sc_device_kernel_rate(&dev, "norm", SC_KERNEL_RATE_VARIANTS) == 0.0);
  sc_estimate e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_BWD, SC_DTYPE_FP32, 1024, 1024));
  REL(e.time_s, 13.0 * 1048576 / 2e10);
  e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_FWD, SC_DTYPE_FP32, 1024, 1024));
  REL(e.time_s, 7.0 * 1048576 / 5e9);
  e = run(&dev, DESC("cross_entropy", SC_CE_FWD, SC_DTYPE_FP32, 16, 4096));
  REL(e.time_s, 5.0 * 65536 / 1e9);
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 16, 4096));
  REL(e.time_s, 2.0 * 65536 / 5e9);
}
END_TEST

/* Attention with a softmax rate ([hardware.kernel_flops_per_s.attention]): the matmul FLOPs
 * at the attention efficiency plus 5 flops per unmasked score at that rate; without it, the
 * matmul FLOPs alone. */
START_TEST(test_attention_softmax_rate) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e15;
  dev.peak_flops_per_s[SC_DTYPE_FP32] = 1e11;
  dev.attention_fwd_efficiency = 0.8;
  dev.attention_bwd_efficiency = 0.5;
  /* b 1, 8 heads, 512 x 512, head dim 32, causal: 0.5 * 4 * 8 * 512^2 * 32 = 134217728
   * matmul FLOPs (x 2.5 backward), 0.5 * 8 * 512^2 = 1048576 unmasked scores */
  sc_estimate e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_FP32, 1, 8, 8, 512,
                                 512, 32, 1));
  REL(e.time_s, 134217728.0 / 0.8e11);
  snprintf(dev.kernel_rates[0].family, sizeof dev.kernel_rates[0].family, "attention");
  dev.kernel_rates[0].flops_per_s[SC_ATTN_FLASH_FWD] = 1e9;
  dev.kernel_rates[0].flops_per_s[SC_ATTN_FLASH_BWD] = 2e9;
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_FP32, 1, 8, 8, 512, 512, 32, 1));
  REL(e.flops, 134217728.0);
  REL(e.time_s, 134217728.0 / 0.8e11 + 5.0 * 1048576 / 1e9);
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_BWD, SC_DTYPE_FP32, 1, 8, 8, 512, 512, 32, 1));
  REL(e.time_s, 2.5 * 134217728.0 / 0.5e11 + 5.0 * 1048576 / 2e9);
  /* non-causal: all 8 * 512^2 scores */
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_FP32, 1, 8, 8, 512, 512, 32, 0));
  REL(e.time_s, 2.0 * 134217728.0 / 0.8e11 + 5.0 * 2097152 / 1e9);
}
END_TEST

/* A device stating its attention kernel's tile: a causal head computes its blocks' visible
 * keys (diagonal tiles whole), rounded up to the key tile; the matmul work uses that share,
 * the softmax work still the unmasked scores. */
START_TEST(test_attention_tile) {
  sc_device dev = a100();
  ck_assert(sc_device_attention_causal_share(&dev, 256, 256) == 0.5); /* not stated */
  dev.attention_block_q = 64;
  /* blocks of 64 rows see 64, 128, 192, 256 keys: 64 * 640 / 256^2 */
  REL(sc_device_attention_causal_share(&dev, 256, 256), 0.625);
  REL(sc_device_attention_causal_share(&dev, 512, 512), 0.5625);
  REL(sc_device_attention_causal_share(&dev, 64, 64), 1.0);
  REL(sc_device_attention_causal_share(&dev, 100, 100), (64.0 * 64 + 36.0 * 100) / 10000.0);
  /* fewer queries than keys (the mask aligned to the last key): 192 and 256 keys */
  REL(sc_device_attention_causal_share(&dev, 128, 256), 64.0 * 448 / (128.0 * 256));
  /* more queries than keys: the first three blocks see one key at least */
  REL(sc_device_attention_causal_share(&dev, 256, 64), (3.0 * 64 + 64.0 * 64) / (256.0 * 64));
  dev.attention_block_k = 128; /* 64 -> 128 and 192 -> 256 keys */
  REL(sc_device_attention_causal_share(&dev, 256, 256), 64.0 * 768 / 65536);
  /* beyond 65536 blocks, the closed form; exact for one-row blocks and one-key tiles */
  dev.attention_block_q = 1;
  dev.attention_block_k = 0;
  REL(sc_device_attention_causal_share(&dev, 60000, 60000), 60001.0 / 120000);
  REL(sc_device_attention_causal_share(&dev, 100000, 100000), 100001.0 / 200000);

  dev = a100();
  dev.mem_bw_Bps = 1e15;
  dev.peak_flops_per_s[SC_DTYPE_FP32] = 1e11;
  dev.attention_fwd_efficiency = 0.8;
  dev.attention_bwd_efficiency = 0.5;
  dev.attention_block_q = 64;
  snprintf(dev.kernel_rates[0].family, sizeof dev.kernel_rates[0].family, "attention");
  dev.kernel_rates[0].flops_per_s[SC_ATTN_FLASH_FWD] = 1e9;
  dev.kernel_rates[0].flops_per_s[SC_ATTN_FLASH_BWD] = 2e9;
  /* 8 heads of 512 x 512, head dim 32: 0.5625 of 4 * 8 * 512^2 * 32 matmul FLOPs, 0.5 of
   * the 8 * 512^2 scores unmasked (test_attention_softmax_rate) */
  sc_estimate e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_FP32, 1, 8, 8, 512,
                                 512, 32, 1));
  REL(e.flops, 0.5625 * 268435456.0);
  REL(e.time_s, 0.5625 * 268435456.0 / 0.8e11 + 5.0 * 1048576 / 1e9);
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_BWD, SC_DTYPE_FP32, 1, 8, 8, 512, 512, 32, 1));
  REL(e.time_s, 2.5 * 0.5625 * 268435456.0 / 0.5e11 + 5.0 * 1048576 / 2e9);
  /* non-causal: every score, whatever the tile */
  e = run(&dev, DESC("attention", SC_ATTN_FLASH_FWD, SC_DTYPE_FP32, 1, 8, 8, 512, 512, 32, 0));
  REL(e.time_s, 268435456.0 / 0.8e11 + 5.0 * 2097152 / 1e9);
}
END_TEST

/* A write-allocate device (mem_bw_Bps = STREAM Add's count): fresh writes are read first and
 * the bytes that move go at 4/3 of the counted rate, so STREAM Add itself is unchanged, an
 * in-place update is faster and a copy slower; without the flag, bytes / mem_bw_Bps. */
START_TEST(test_write_allocate) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e11;
  dev.write_allocate = 1;
  sc_estimate e = run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 12e6 / 1e11); /* (12 + 4) bytes at 4/3 x 1e11 */
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 1000, 1000));
  REL(e.time_s, 8e6 / (1e11 * 4.0 / 3.0)); /* in place: nothing fresh */
  e = run(&dev, DESC("memcpy", 0, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 3e6 / (1e11 * 4.0 / 3.0)); /* 2e6 bytes + the destination read first */
  e = run(&dev, DESC("optimizer", SC_OPTIM_ADAM, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, fmax(14e6 / dev.peak_flops_per_s[SC_DTYPE_FP32], 28e6 / (1e11 * 4.0 / 3.0)));
  /* GEMMs state no fresh bytes: the counted rate, as without the flag */
  sc_device nwa = dev;
  nwa.write_allocate = 0;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 8, 8, 65536));
  sc_estimate e2 = run(&nwa, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 8, 8, 65536));
  REL(e.time_s, e2.time_s);
  e = run(&nwa, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 1000, 1000));
  REL(e.time_s, 8e6 / 1e11);
}
END_TEST

/* A device stating an in-place rate (rmw_bw_Bps): traffic wholly in place (fresh 0) goes to
 * memory at it, in place of 4/3 of mem_bw_Bps; operators with fresh writes keep STREAM's
 * count, and a device without it is unchanged. */
START_TEST(test_rmw_rate) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 3e10;
  dev.write_allocate = 1;
  dev.launch_s = 0;
  dev.peak_flops_per_s[SC_DTYPE_FP32] = 1e15; /* memory-bound throughout */
  dev.vector_flops_per_s = 1e15;
  sc_device rmw = dev;
  rmw.rmw_bw_Bps = 4.5e10;
  /* the cross-entropy backward rewrites its probabilities in place: 8 bytes per element */
  sc_estimate e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 1000, 1000));
  REL(e.time_s, 8e6 / 4e10);
  e = run(&rmw, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 1000, 1000));
  REL(e.time_s, 8e6 / 4.5e10);
  /* the embedding backward: its scatter and accumulate at the in-place rate, its table's
   * zero-fill (4/3 of mem_bw_Bps, no fill curve) apart and unchanged */
  const double t = 256, h = 512, v = 32768, fill = 4.0 * v * h;
  const double moved = 12.0 * t * h + 8.0 * t + v * h * 12.0; /* dy; G's rows; G, main_grad */
  e = run(&rmw, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 256, 512, 32768));
  REL(e.time_s, moved / 4.5e10 + fill / 4e10);
  e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 256, 512, 32768));
  REL(e.time_s, moved / 4e10 + fill / 4e10);
  /* fresh writes: unchanged (STREAM Add's own count) */
  e = run(&rmw, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 12e6 / 3e10);
  e = run(&rmw, DESC("memcpy", SC_MEMCPY_COPY, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 3e6 / 4e10);
}
END_TEST

/* Gathers: the expected distinct rows of an embedding lookup; on a device stating a gather
 * curve, the forward adds tokens x the curve at its working set (the distinct rows and the
 * output) and the backward at its scatter's (the gradient table and the output gradient),
 * interpolated in log2 of the size; without it, nothing. */
START_TEST(test_gather_curve) {
  ck_assert(sc_expected_distinct(0.5, 10) == 0.0);
  ck_assert(sc_expected_distinct(10, 0) == 0.0);
  REL(sc_expected_distinct(1, 1000), 1.0);
  REL(sc_expected_distinct(5, 1), 1.0);
  REL(sc_expected_distinct(2, 2), 1.5);                       /* 2 (1 - 1/4) */
  REL(sc_expected_distinct(1e6, 2e6), 2e6 * -expm1(1e6 * log1p(-0.5e-6)));
  sc_device dev = a100();
  dev.launch_s = 0;
  const sc_estimate f0 = run(&dev, DESC("embedding", SC_EMBED_FWD, SC_DTYPE_FP32, 1000, 256,
                                        2000));
  const sc_estimate b0 = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 256,
                                        2000));
  dev.gather_points = 2;
  dev.gather_ws_bytes[0] = 1e6, dev.gather_row_s[0] = 0.0;
  dev.gather_ws_bytes[1] = 16e6, dev.gather_row_s[1] = 100e-9;
  ck_assert(sc_device_gather_row_s(&dev, 1e3) == 0.0);
  ck_assert(sc_device_gather_row_s(&dev, 1e9) == 100e-9);
  REL(sc_device_gather_row_s(&dev, 4e6), 50e-9);
  /* forward: 1024-byte rows, 1000 tokens from 2000 rows */
  const double ws_f = 1024.0 * (sc_expected_distinct(1000, 2000) + 1000) + 8000;
  sc_estimate e = run(&dev, DESC("embedding", SC_EMBED_FWD, SC_DTYPE_FP32, 1000, 256, 2000));
  REL(e.time_s, f0.time_s + 1000 * 100e-9 * log2(ws_f / 1e6) / 4.0);
  /* backward: the scatter's rows over the 2000-row gradient table and the output gradient */
  const double ws_b = 1024.0 * (2000 + 1000) + 8000;
  e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 256, 2000));
  REL(e.time_s, b0.time_s + 1000 * 100e-9 * log2(ws_b / 1e6) / 4.0);
  /* other families do not read it */
  sc_device none = dev;
  none.gather_points = 0;
  REL(run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000)).time_s,
      run(&none, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000)).time_s);
}
END_TEST

/* Cold parameters (SC_OP_COLD): the embedding priced as on the same device with every curve
 * by working set reduced to its last point (past every cache), or, on a device without
 * curves, with no cache rate; warm and cold agree where the table is past the caches
 * anyway. Ids in order (SC_OP_ROWS_IN_ORDER): no gather curve time. Other families ignore
 * the flags. */
START_TEST(test_embedding_cold) {
  sc_device dev = a100();
  dev.launch_s = 0;
  dev.cache_bw_Bps = 1e13;
  dev.l2_bytes = 40e6;
  dev.write_allocate = 1;
  dev.cache_miss_points = 2;
  dev.cache_miss_ws_bytes[0] = 1e6, dev.cache_miss_share[0] = 0.05;
  dev.cache_miss_ws_bytes[1] = 1e8, dev.cache_miss_share[1] = 0.9;
  dev.fill_points = 2;
  dev.fill_bytes[0] = 1e6, dev.fill_bw_Bps[0] = 9e12;
  dev.fill_bytes[1] = 1e8, dev.fill_bw_Bps[1] = 2e12;
  dev.gather_points = 2;
  dev.gather_ws_bytes[0] = 1e6, dev.gather_row_s[0] = 0.0;
  dev.gather_ws_bytes[1] = 1e8, dev.gather_row_s[1] = 120e-9;
  sc_device last = dev; /* each curve its last point alone */
  last.cache_miss_points = last.fill_points = last.gather_points = 1;
  last.cache_miss_ws_bytes[0] = 1e8, last.cache_miss_share[0] = 0.9;
  last.fill_bytes[0] = 1e8, last.fill_bw_Bps[0] = 2e12;
  last.gather_ws_bytes[0] = 1e8, last.gather_row_s[0] = 120e-9;
  for (uint32_t v = 0; v < SC_EMBED_VARIANT_COUNT; v++) {
    sc_op_desc warm = DESC("embedding", v, SC_DTYPE_FP32, 1000, 256, 4000); /* 4 MB table */
    sc_op_desc cold = warm;
    cold.flags = SC_OP_COLD;
    const double tw = run(&dev, warm).time_s, tc = run(&dev, cold).time_s;
    ck_assert_msg(tc > 1.5 * tw, "variant %u: cold %g s, warm %g s", v, tc, tw);
    REL(tc, run(&last, warm).time_s);
    /* a table past the last point: the same either way */
    sc_op_desc big = DESC("embedding", v, SC_DTYPE_FP32, 100000, 256, 400000);
    sc_op_desc bigc = big;
    bigc.flags = SC_OP_COLD;
    REL(run(&dev, bigc).time_s, run(&dev, big).time_s);
  }
  /* a measured cold fill rate: the cold backward's fill at it instead of the fill curve's
   * last point; the memcpy family's cold FILL too, its warm FILL at the fill curve */
  {
    sc_op_desc cb = DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 256, 4000);
    cb.flags = SC_OP_COLD;
    const double before = run(&dev, cb).time_s, fill = 4.0 * 256 * 4000;
    sc_device dc = dev;
    dc.fill_cold_points = 2;
    dc.fill_cold_bytes[0] = 1e6, dc.fill_cold_bw_Bps[0] = 3e11;
    dc.fill_cold_bytes[1] = 1e8, dc.fill_cold_bw_Bps[1] = 6e11;
    const double rate = 3e11 + 3e11 * log2(fill / 1e6) / log2(100.0);
    REL(sc_device_fill_cold_bw(&dc, fill), rate);
    REL(run(&dc, cb).time_s, before - fill / 2e12 + fill / rate);
    sc_op_desc f = DESC("memcpy", SC_MEMCPY_FILL, SC_DTYPE_FP32, 4096000);
    REL(run(&dc, f).time_s, 4096000 / sc_device_fill_bw(&dc, 4096000));
    f.flags = SC_OP_COLD;
    REL(run(&dc, f).time_s, 4096000 / rate);
  }
  /* without curves: cold as with no cache rate (every byte from memory) */
  sc_device plain = a100();
  plain.launch_s = 0;
  plain.cache_bw_Bps = 1e13;
  plain.l2_bytes = 40e6;
  plain.write_allocate = 1;
  sc_device nocache = plain;
  nocache.cache_bw_Bps = 0;
  for (uint32_t v = 0; v < SC_EMBED_VARIANT_COUNT; v++) {
    sc_op_desc o = DESC("embedding", v, SC_DTYPE_FP32, 1000, 256, 4000);
    o.flags = SC_OP_COLD;
    sc_op_desc w = o;
    w.flags = 0;
    REL(run(&plain, o).time_s, run(&nocache, w).time_s);
    ck_assert(run(&plain, o).time_s > run(&plain, w).time_s);
  }
  /* ids in order: the gather curve's time goes */
  sc_op_desc pos = DESC("embedding", SC_EMBED_FWD, SC_DTYPE_FP32, 1000, 256, 1000);
  pos.flags = SC_OP_COLD;
  const double with_rows = run(&dev, pos).time_s;
  pos.flags = SC_OP_COLD | SC_OP_ROWS_IN_ORDER;
  REL(run(&dev, pos).time_s, with_rows - 1000 * 120e-9);
  /* other families: the flags change nothing */
  sc_op_desc g = DESC("gemm", 0, SC_DTYPE_FP32, 1, 512, 512, 512);
  const double tg = run(&dev, g).time_s;
  g.flags = SC_OP_COLD | SC_OP_ROWS_IN_ORDER;
  REL(run(&dev, g).time_s, tg);
}
END_TEST

/* A row kernel's rate by row width: sc_device_row_rate interpolates the stated multiples
 * linearly in log2(cols) between stated widths and holds the nearest beyond them; the norm's
 * compute time divides by it; unstated kernels and families keep their rate. */
START_TEST(test_row_rate) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e13; /* compute-bound: the time is the FLOPs at the rate */
  dev.vector_flops_per_s = 1e10;
  snprintf(dev.row_rate[0].family, sizeof dev.row_rate[0].family, "norm");
  dev.row_rate[0].multiple[SC_NORM_OP_RMSNORM_FWD][0] = 1.3;  /* 64 columns */
  dev.row_rate[0].multiple[SC_NORM_OP_RMSNORM_FWD][1] = 0.9;  /* 128 */
  dev.row_rate[0].multiple[SC_NORM_OP_RMSNORM_FWD][4] = 1.0;  /* 1024; 256, 512 not stated */
  dev.row_rate[0].multiple[SC_NORM_OP_RMSNORM_FWD][7] = 1.1;  /* 8192 */
  ck_assert(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 64) == 1.3);
  ck_assert(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 16) == 1.3);
  ck_assert(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 128) == 0.9);
  REL(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 64.0 * sqrt(2.0)), 1.1);
  REL(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 256), 0.9 + 0.1 / 3.0);
  REL(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 2048), 1.0 + 0.1 / 3.0);
  ck_assert(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_FWD, 65536) == 1.1);
  ck_assert(sc_device_row_rate(&dev, "norm", SC_NORM_OP_RMSNORM_BWD, 64) == 1.0);
  ck_assert(sc_device_row_rate(&dev, "softmax", 0, 64) == 1.0);
  /* RMSNorm forward, 4 N flops at 1e10 x the multiple */
  sc_estimate e = run(&dev, DESC("norm", SC_NORM_OP_RMSNORM_FWD, SC_DTYPE_FP32, 4096, 64));
  REL(e.time_s, 4.0 * 4096 * 64 / (1e10 * 1.3));
  e = run(&dev, DESC("norm", SC_NORM_OP_RMSNORM_FWD, SC_DTYPE_FP32, 4096, 1024));
  REL(e.time_s, 4.0 * 4096 * 1024 / 1e10);
  e = run(&dev, DESC("norm", SC_NORM_OP_RMSNORM_BWD, SC_DTYPE_FP32, 4096, 64));
  REL(e.time_s, 9.0 * 4096 * 64 / 1e10);
  /* the softmax reads its own table: the backward (5 N flops) at 64 columns x 1.25, the
   * causal forward (7 x the unmasked elements, 64 x 65 / 2 per head) stated to 128 columns
   * only, so wider rows keep the 128-column multiple */
  snprintf(dev.row_rate[1].family, sizeof dev.row_rate[1].family, "softmax");
  dev.row_rate[1].multiple[SC_SOFTMAX_BWD][0] = 1.25;
  dev.row_rate[1].multiple[SC_SOFTMAX_BWD][2] = 1.0;
  dev.row_rate[1].multiple[SC_SOFTMAX_FWD][0] = 1.03;
  dev.row_rate[1].multiple[SC_SOFTMAX_FWD][1] = 0.95;
  e = run(&dev, DESC("softmax", SC_SOFTMAX_BWD, SC_DTYPE_FP32, 4096, 64));
  REL(e.time_s, 5.0 * 4096 * 64 / (1e10 * 1.25));
  e = run(&dev, DESC("softmax", SC_SOFTMAX_BWD, SC_DTYPE_FP32, 4096, 256));
  REL(e.time_s, 5.0 * 4096 * 256 / 1e10);
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_FP32, 4096, 64));
  REL(e.time_s, 7.0 * 64 * (64 * 65 / 2) / (1e10 * 1.03));
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_FP32, 4096, 1024));
  REL(e.time_s, 7.0 * 4 * (1024 * 1025 / 2) / (1e10 * 0.95));
}
END_TEST

/* A device for the row-exposure tests: vector rate 2e10 FLOP/s, memory 1e11 B/s, an L1 of
 * l1 bytes and one row_exposure entry, multiple for (family, variant). */
static sc_device exposure_dev(double l1, const char *family, uint32_t variant, double multiple) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e11;
  dev.vector_flops_per_s = 2e10;
  dev.l1_bytes = l1;
  snprintf(dev.row_exposure[0].family, sizeof dev.row_exposure[0].family, "%s", family);
  dev.row_exposure[0].multiple[variant] = multiple;
  return dev;
}

/* Row kernels past the L1: a device with l1_bytes and a row_exposure for (norm, variant) adds
 * exposure x ramp x min(compute, memory) to the max, the ramp clamp(row_bytes / l1 - 1/4, 0, 1)
 * of the norm's per-row working set (layer-norm backward, fp32: 24 bytes per column). Narrow
 * rows, other variants, other families and a device without an L1 keep the roofline. */
START_TEST(test_row_exposure) {
  sc_device dev = exposure_dev(49152, "norm", SC_NORM_OP_LAYERNORM_BWD, 1.5);
  ck_assert(sc_device_row_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD, 12288) == 0.0);
  ck_assert(sc_device_row_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD, 24576) == 0.375);
  ck_assert(sc_device_row_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD, 49152) == 1.125);
  ck_assert(sc_device_row_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD, 1e6) == 1.5);
  ck_assert(sc_device_row_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_FWD, 1e6) == 0.0);
  ck_assert(sc_device_row_exposure(&dev, "softmax", 0, 1e6) == 0.0);
  /* 4096 x 4096 layer-norm backward: 13 N flops at 2e10, 3 x 4 N + small bytes at 1e11;
   * rows of 4096 x 24 = 98304 bytes = 2 L1: the full exposure */
  const double N = 4096.0 * 4096.0;
  const double tc = 13.0 * N / 2e10;
  const double tm = (12.0 * N + 8.0 * 4096 + 8.0 * 4096 + 8.0 * 4096) / 1e11;
  sc_estimate e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_BWD, SC_DTYPE_FP32, 4096, 4096));
  REL(e.time_s, fmax(tc, tm) + 1.5 * fmin(tc, tm));
  /* rows of 2048 columns: 49152 bytes = the L1, three quarters of the ramp */
  e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_BWD, SC_DTYPE_FP32, 8192, 2048));
  {
    const double tm2 = (12.0 * N + 8.0 * 8192 + 16.0 * 2048) / 1e11;
    REL(e.time_s, fmax(tc, tm2) + 1.125 * fmin(tc, tm2));
  }
  /* rows of 512 columns (12288 bytes, a quarter of the L1): overlapped */
  e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_BWD, SC_DTYPE_FP32, 32768, 512));
  REL(e.time_s, fmax(13.0 * N / 2e10, (12.0 * N + 8.0 * 32768 + 16.0 * 512) / 1e11));
  /* no L1 stated: overlapped whatever the row */
  dev.l1_bytes = 0;
  e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_BWD, SC_DTYPE_FP32, 4096, 4096));
  REL(e.time_s, fmax(tc, tm));
}
END_TEST

/* The causal softmax's exposure, at every row width: a device with l1_bytes and a
 * row_exposure for (softmax, variant) adds that multiple of min(compute, memory) to the max
 * however narrow the rows (sc_device_exposure, no ramp); the other variant, and a device
 * without an L1, keep the roofline. */
START_TEST(test_softmax_exposure) {
  sc_device dev = exposure_dev(32768, "softmax", SC_SOFTMAX_FWD, 0.8);
  ck_assert(sc_device_exposure(&dev, "softmax", SC_SOFTMAX_FWD) == 0.8);
  ck_assert(sc_device_exposure(&dev, "softmax", SC_SOFTMAX_BWD) == 0.0);
  ck_assert(sc_device_exposure(&dev, "norm", SC_NORM_OP_LAYERNORM_BWD) == 0.0);
  /* 64 heads of 128 x 128 (rows of 512 bytes, a sixty-fourth of the L1): 7 flops per
   * unmasked score, 8 bytes per score */
  const double N = 8192.0 * 128.0, V = 64.0 * 128.0 * 129.0 / 2.0;
  const double tc = 7.0 * V / 2e10, tm = 8.0 * N / 1e11;
  sc_estimate e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_FP32, 8192, 128));
  REL(e.time_s, fmax(tc, tm) + 0.8 * fmin(tc, tm));
  e = run(&dev, DESC("softmax", SC_SOFTMAX_BWD, SC_DTYPE_FP32, 8192, 128));
  REL(e.time_s, fmax(5.0 * N / 2e10, 12.0 * N / 1e11));
  dev.l1_bytes = 0;
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_FP32, 8192, 128));
  REL(e.time_s, fmax(tc, tm));
}
END_TEST

/* The plain softmax (torch.softmax: no scale, no mask): every element unmasked, forward 5N
 * and backward 4N flops, the fused kernel's bytes; its features say "unmasked_fraction" 1. */
START_TEST(test_softmax_plain) {
  sc_device dev = exposure_dev(32768, "softmax", SC_SOFTMAX_FWD, 0.8);
  dev.l1_bytes = 0;
  const double N = 8192.0 * 128.0;
  sc_estimate e = run(&dev, DESC("softmax", SC_SOFTMAX_PLAIN_FWD, SC_DTYPE_FP32, 8192, 128));
  REL(e.flops, 5.0 * N);
  REL(e.bytes, 8.0 * N);
  REL(e.time_s, fmax(5.0 * N / 2e10, 8.0 * N / 1e11));
  ck_assert(e.features[3] == 0.0 && e.features[4] == 1.0);
  e = run(&dev, DESC("softmax", SC_SOFTMAX_PLAIN_BWD, SC_DTYPE_FP32, 8192, 128));
  REL(e.flops, 4.0 * N);
  REL(e.bytes, 12.0 * N);
  ck_assert(e.features[3] == 1.0 && e.features[4] == 1.0);
  /* the fused forward's unmasked share is about half for whole heads */
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_FP32, 8192, 128));
  ck_assert(e.features[4] < 0.51);
}
END_TEST

/* Zero-fills: a device stating a fill-rate curve prices a fill of B bytes at B over the curve's
 * rate at B (interpolated in log2 of the size, held past its ends); the embedding backward's
 * gradient-table fill and the memcpy family's FILL variant both read it. Without the curve, a
 * fill streams at 4/3 of the STREAM rate (write-allocate) past the cache. */
START_TEST(test_fill_curve) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 3e10;
  dev.write_allocate = 1;
  dev.launch_s = 0;
  ck_assert(sc_device_fill_bw(&dev, 1e6) == 0.0);
  sc_estimate e = run(&dev, DESC("memcpy", SC_MEMCPY_FILL, SC_DTYPE_FP32, 64 << 20));
  REL(e.time_s, (double)(64 << 20) / 4e10);
  ck_assert(e.bytes == (double)(64 << 20));
  const sc_estimate base = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 256, 512,
                                          32768));
  dev.fill_points = 3;
  dev.fill_bytes[0] = 2097152, dev.fill_bw_Bps[0] = 8.6e10;
  dev.fill_bytes[1] = 16777216, dev.fill_bw_Bps[1] = 4.5e10;
  dev.fill_bytes[2] = 67108864, dev.fill_bw_Bps[2] = 6.2e10;
  ck_assert(sc_device_fill_bw(&dev, 1e3) == 8.6e10);
  ck_assert(sc_device_fill_bw(&dev, 1e9) == 6.2e10);
  REL(sc_device_fill_bw(&dev, 4194304), 8.6e10 - (8.6e10 - 4.5e10) / 3.0);
  REL(sc_device_fill_bw(&dev, 33554432), 4.5e10 + (6.2e10 - 4.5e10) / 2.0);
  e = run(&dev, DESC("memcpy", SC_MEMCPY_FILL, SC_DTYPE_FP32, 16777216));
  REL(e.time_s, 16777216.0 / 4.5e10);
  /* a 64 MiB gradient table (32768 x 512 fp32): the fill's 64 MiB at 6.2e10 in place of 4e10 */
  e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 256, 512, 32768));
  REL(e.time_s, base.time_s - 67108864.0 / 4e10 + 67108864.0 / 6.2e10);
  /* the copy variant is not a fill: two bytes moved per byte, read and fresh write */
  e = run(&dev, DESC("memcpy", SC_MEMCPY_COPY, SC_DTYPE_FP32, 1 << 20));
  REL(e.time_s, (2.0 * (1 << 20) + (1 << 20)) / 4e10);
}
END_TEST

/* A CPU GEMM's exposed operand traffic: a device with gemm_exposed_bw_Bps X and
 * gemm_exposed_knee_bytes K adds, per product, g ws / X with ws = e (mk + kn + mn) and
 * g = ws / (ws + K) to the roofline's max; without either key (every GPU file) nothing. */
START_TEST(test_gemm_exposed) {
  sc_device dev = a100();
  dev.peak_flops_per_s[SC_DTYPE_FP32] = 1e11;
  dev.matmul_efficiency[SC_DTYPE_FP32] = 0;
  dev.flops_efficiency = 1.0;
  dev.tile_m = dev.tile_n = dev.tile_k = 0;
  dev.compute_units = 0;
  dev.launch_s = 0;
  const double F = 2.0 * 16 * 4096 * 4096, ws = 4.0 * (16 * 4096 * 2 + 4096.0 * 4096);
  sc_estimate base = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP32, 1, 16, 4096, 4096));
  REL(base.time_s, F / 1e11);
  ck_assert(sc_device_gemm_exposed_s(&dev, 1, ws) == 0.0);
  dev.gemm_exposed_bw_Bps = 8e9;
  ck_assert(sc_device_gemm_exposed_s(&dev, 1, ws) == 0.0); /* no knee: not stated */
  dev.gemm_exposed_knee_bytes = 4e6;
  /* skinny, past the knee: most of its 67 MB exposed, 8.0 ms on 5.4 ms of arithmetic */
  sc_estimate e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP32, 1, 16, 4096, 4096));
  REL(e.time_s, F / 1e11 + ws / (ws + 4e6) * ws / 8e9);
  ck_assert_int_eq(e.bound, SC_BOUND_COMPUTE);
  /* at the knee, half: a 4 MB working set; batched, per product */
  ck_assert(fabs(sc_device_gemm_exposed_s(&dev, 1, 4e6) - 0.5 * 4e6 / 8e9) < 1e-15);
  ck_assert(fabs(sc_device_gemm_exposed_s(&dev, 3, 4e6) - 1.5 * 4e6 / 8e9) < 1e-15);
  const double ws2 = 4.0 * (64 * 64 * 3);
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP32, 5, 64, 64, 64));
  REL(e.time_s, 5 * 2.0 * 64 * 64 * 64 / 1e11 + 5 * ws2 / (ws2 + 4e6) * ws2 / 8e9);
  /* a square 2048^3 GEMM: 2.9 % of its time (its traffic per FLOP is 1/512 of the skinny) */
  const double ws3 = 4.0 * 3 * 2048.0 * 2048;
  e = run(&dev, DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_FP32, 1, 2048, 2048, 2048));
  REL(e.time_s, 2.0 * 2048.0 * 2048 * 2048 / 1e11 + ws3 / (ws3 + 4e6) * ws3 / 8e9);
  /* features unchanged by the term */
  ck_assert_int_eq(e.nfeatures, base.nfeatures);
}
END_TEST

/* fp32 logits are not cast: cross-entropy moves 24 (forward) and 8 (backward) bytes per
 * logit; bf16 logits add the cast to fp32 and back (e + 4 each way). */
START_TEST(test_cross_entropy_fp32_no_cast) {
  sc_device dev = a100();
  sc_estimate e = run(&dev, DESC("cross_entropy", SC_CE_FWD, SC_DTYPE_FP32, 16, 4096));
  REL(e.bytes, 24.0 * 65536);
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 16, 4096));
  REL(e.bytes, 8.0 * 65536);
  e = run(&dev, DESC("cross_entropy", SC_CE_FWD, SC_DTYPE_BF16, 16, 4096));
  REL(e.bytes, 30.0 * 65536);
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_BF16, 16, 4096));
  REL(e.bytes, 14.0 * 65536);
}
END_TEST

/* A device with cache_bw_Bps: the share g = bytes / (bytes + l2_bytes) of the traffic at the
 * DRAM rate, the rest at the cache rate; without it, all at the DRAM rate. */
START_TEST(test_cache_bandwidth) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e11;
  dev.l2_bytes = 4e6;
  /* ADD of 1e6 fp32 elements: 12e6 bytes, g = 12/16 = 0.75 */
  sc_estimate e = run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 12e6 / 1e11);
  dev.cache_bw_Bps = 4e11;
  e = run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 12e6 * (0.75 / 1e11 + 0.25 / 4e11));
  /* the hit rate follows the working set, not the traffic: an fp32 cross-entropy backward
   * moves 8 bytes per logit over a 4-byte working set (in place); 1e6 logits: 8e6 bytes,
   * working set 4e6, g = 4/8 */
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_FP32, 1000, 1000));
  REL(e.bytes, 8e6);
  REL(e.time_s, 8e6 * (0.5 / 1e11 + 0.5 / 4e11));
  /* embedding backward, 1000 tokens x 100 hidden, 40000 rows, fp32: traffic 3 x 4e5 + 8e3 +
   * 16 x 4e6 = 65208000 bytes, of which the zero-fill of the 16e6-byte table is a pass of its
   * own: past the 4e6-byte cache, at the DRAM rate; the scatter and accumulate's 49208000
   * over a working set of 4e5 + 8e3 + 8 x 4e6 = 32408000 at the hit rate */
  e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 100, 40000));
  REL(e.bytes, 65208000.0);
  {
    double g = 32408000.0 / (32408000.0 + 4e6);
    REL(e.time_s, 49208000.0 * (g / 1e11 + (1.0 - g) / 4e11) + 16e6 / 1e11);
    /* a table that fits the cache is filled at the cache rate */
    dev.l2_bytes = 32e6;
    g = 32408000.0 / (32408000.0 + 32e6);
    e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 100, 40000));
    REL(e.time_s, 49208000.0 * (g / 1e11 + (1.0 - g) / 4e11) + 16e6 / 4e11);
    /* past it, on a write-allocate device, streamed at 4/3 of the (STREAM-counted) rate */
    dev.l2_bytes = 4e6;
    dev.write_allocate = 1;
    g = 32408000.0 / (32408000.0 + 4e6);
    e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 100, 40000));
    REL(e.time_s, 49208000.0 * (g / (1e11 * 4.0 / 3.0) + (1.0 - g) / 4e11) +
                      16e6 / (1e11 * 4.0 / 3.0));
    dev.write_allocate = 0;
  }
  /* a cache rate below the DRAM rate is ignored */
  dev.cache_bw_Bps = 5e10;
  e = run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
  REL(e.time_s, 12e6 / 1e11);
}
END_TEST

/* A measured miss-share curve (cache_miss_share) replaces the smooth hit rate: interpolated
 * in log2 of the working set between its points, held beyond them; the embedding zero-fill
 * splits by it too. Without a cache rate every byte goes at the DRAM rate. */
START_TEST(test_cache_miss_curve) {
  sc_device dev = a100();
  dev.mem_bw_Bps = 1e11;
  dev.l2_bytes = 4e6;
  ck_assert(sc_device_miss_share(&dev, 12e6) == 1.0); /* no cache rate */
  dev.cache_bw_Bps = 4e11;
  REL(sc_device_miss_share(&dev, 12e6), 0.75); /* the smooth share */
  dev.cache_miss_points = 3;
  dev.cache_miss_ws_bytes[0] = 1e6, dev.cache_miss_share[0] = 0.05;
  dev.cache_miss_ws_bytes[1] = 4e6, dev.cache_miss_share[1] = 0.2;
  dev.cache_miss_ws_bytes[2] = 16e6, dev.cache_miss_share[2] = 1.0;
  ck_assert(sc_device_miss_share(&dev, 1e3) == 0.05);
  ck_assert(sc_device_miss_share(&dev, 1e6) == 0.05);
  REL(sc_device_miss_share(&dev, 2e6), 0.125); /* halfway in log2 between 1e6 and 4e6 */
  REL(sc_device_miss_share(&dev, 8e6), 0.6);
  ck_assert(sc_device_miss_share(&dev, 16e6) == 1.0);
  ck_assert(sc_device_miss_share(&dev, 1e9) == 1.0);
  /* ADD of 1e6 fp32 elements: 12e6 bytes, working set 12e6: log2(3) / 2 of the way from
   * 0.2 to 1.0 */
  {
    double g = 0.2 + 0.8 * log2(3.0) / 2.0;
    sc_estimate e = run(&dev, DESC("elementwise", SC_EW_ADD, SC_DTYPE_FP32, 1000000));
    REL(e.time_s, 12e6 * (g / 1e11 + (1.0 - g) / 4e11));
  }
  /* embedding backward (test_cache_bandwidth's shape): the 16e6-byte zero-fill at the
   * curve's share 1.0, the rest (49208000 bytes) over its 32408000-byte working set, past the last point */
  {
    sc_estimate e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 100, 40000));
    REL(e.time_s, 49208000.0 / 1e11 + 16e6 / 1e11);
    /* a 4e6-byte table (10000 rows): the fill at the curve's 0.2 at 4e6; the rest,
     * 3 x 4e5 + 8e3 + 12 x 1e6 bytes over a working set of 4e5 + 8e3 + 8 x 1e6 */
    e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_FP32, 1000, 100, 10000));
    double g = 0.2 + 0.8 * log2(8408000.0 / 4e6) / 2.0;
    REL(e.time_s, 13208000.0 * (g / 1e11 + (1.0 - g) / 4e11) + 4e6 * (0.2 / 1e11 + 0.8 / 4e11));
  }
  /* a cache rate below the DRAM rate turns the curve off as well */
  dev.cache_bw_Bps = 5e10;
  ck_assert(sc_device_miss_share(&dev, 2e6) == 1.0);
}
END_TEST

START_TEST(test_vector_families) {
  sc_device dev = a100();
  double bw = 1.555e12;
  /* LayerNorm fwd 8192 x 4096 bf16: 2*2*N + 2*2*4096 + 8*8192 = 134299648 bytes (86.4 us);
   * 7N = 234881024 FLOPs at 19.5e12 (12.0 us): memory bound. */
  sc_estimate e = run(&dev, DESC("norm", SC_NORM_OP_LAYERNORM_FWD, SC_DTYPE_BF16, 8192, 4096));
  REL(e.bytes, 134299648.0);
  REL(e.flops, 7.0 * 33554432);
  REL(e.time_s, 8.636633311897107e-05);
  ck_assert_int_eq(e.bound, SC_BOUND_MEMORY);
  /* RMSNorm bwd: 3*2*N + 4*rows + 4*cols + 2*cols. */
  e = run(&dev, DESC("norm", SC_NORM_OP_RMSNORM_BWD, SC_DTYPE_BF16, 8192, 4096));
  REL(e.bytes, 6.0 * 33554432 + 4.0 * 8192 + 4.0 * 4096 + 2.0 * 4096);
  REL(e.flops, 9.0 * 33554432);
  /* Elementwise: GeLU fwd 2e per element, dropout fwd 2e + 1, SwiGLU bwd 5e. */
  e = run(&dev, DESC("elementwise", SC_EW_GELU_FWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 4e6);
  REL(e.time_s, 4e6 / bw);
  e = run(&dev, DESC("elementwise", SC_EW_DROPOUT_FWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 5e6);
  REL(e.flops, 12e6); /* compare, scale and the mask's random number (10) */
  ck_assert_uint_eq(e.nfeatures, 6);
  ck_assert(e.features[4] == 1.0 && e.features[5] == 0.0); /* rng, not backward */
  e = run(&dev, DESC("elementwise", SC_EW_DROPOUT_BWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 5e6);
  REL(e.flops, 2e6);
  ck_assert(e.features[4] == 0.0 && e.features[5] == 1.0);
  e = run(&dev, DESC("elementwise", SC_EW_SWIGLU_BWD, SC_DTYPE_FP32, 1000000));
  REL(e.bytes, 20e6);
  REL(e.flops, 10e6);
  /* The activations past the sampled ones: ReLU fwd 2e and 2 flops, squared ReLU bwd 3e
   * and 3, GeGLU bwd 5e and 25 (backward flags set) */
  e = run(&dev, DESC("elementwise", SC_EW_RELU_FWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 4e6);
  REL(e.flops, 2e6);
  ck_assert(e.features[5] == 0.0);
  e = run(&dev, DESC("elementwise", SC_EW_SQRELU_BWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 6e6);
  REL(e.flops, 3e6);
  ck_assert(e.features[5] == 1.0);
  e = run(&dev, DESC("elementwise", SC_EW_GEGLU_BWD, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 10e6);
  REL(e.flops, 25e6);
  ck_assert(e.features[4] == 0.0 && e.features[5] == 1.0);
  /* Softmax fwd 1024 x 2048 bf16: 2*2*N bytes; the causal mask leaves rows 0..1023 with
   * 1..1024 keys: V = 1024*1025/2 = 524800 unmasked elements, 7 flops each. Whole heads
   * (4096 x 2048 = 2 heads of 2048 queries): V = 2 * 2048*2049/2. Bwd 3*2*N bytes. */
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_BF16, 1024, 2048));
  REL(e.bytes, 4.0 * 2097152);
  REL(e.flops, 7.0 * 524800);
  REL(e.features[4], 524800.0 / 2097152);
  e = run(&dev, DESC("softmax", SC_SOFTMAX_FWD, SC_DTYPE_BF16, 4096, 2048));
  REL(e.flops, 7.0 * 2048 * 2049);
  e = run(&dev, DESC("softmax", SC_SOFTMAX_BWD, SC_DTYPE_BF16, 1024, 2048));
  REL(e.bytes, 6.0 * 2097152);
  /* Embedding fwd 4096 tokens x 1024: 2*2*T*h + 8*T; bwd T*h*3*2 + 8T + V*h*(2*2 + 8). */
  e = run(&dev, DESC("embedding", SC_EMBED_FWD, SC_DTYPE_BF16, 4096, 1024, 25000));
  REL(e.bytes, 4.0 * 4096 * 1024 + 8.0 * 4096);
  ck_assert_double_eq(e.flops, 0.0);
  e = run(&dev, DESC("embedding", SC_EMBED_BWD, SC_DTYPE_BF16, 4096, 1024, 25000));
  REL(e.bytes, 332398592.0);
  REL(e.time_s, 332398592.0 / bw);
  /* Cross-entropy 4096 x 25000 bf16: fwd (2 + 28) B per logit, bwd (2 + 12). */
  e = run(&dev, DESC("cross_entropy", SC_CE_FWD, SC_DTYPE_BF16, 4096, 25000));
  REL(e.bytes, 30.0 * 4096 * 25000);
  REL(e.flops, 5.0 * 4096 * 25000);
  e = run(&dev, DESC("cross_entropy", SC_CE_BWD, SC_DTYPE_BF16, 4096, 25000));
  REL(e.bytes, 14.0 * 4096 * 25000);
  /* Adam over 1e6 bf16 parameters: 30 B and 14 FLOPs each; fp32 weights: 28 B. */
  e = run(&dev, DESC("optimizer", SC_OPTIM_ADAM, SC_DTYPE_BF16, 1000000));
  REL(e.bytes, 30e6);
  REL(e.flops, 14e6);
  REL(e.time_s, 30e6 / bw);
  e = run(&dev, DESC("optimizer", SC_OPTIM_ADAM, SC_DTYPE_FP32, 1000000));
  REL(e.bytes, 28e6);
  /* Compute-bound vector op: efficiency 1, a device with a tiny fp32 rate. */
  sc_device slow = dev;
  slow.peak_flops_per_s[SC_DTYPE_FP32] = 1e9;
  e = run(&slow, DESC("elementwise", SC_EW_GELU_BWD, SC_DTYPE_BF16, 1000000));
  ck_assert_int_eq(e.bound, SC_BOUND_COMPUTE);
  REL(e.time_s, 19e6 / 1e9);
}
END_TEST

START_TEST(test_registry) {
  /* The plugins load through the registry and its memo answers the same. */
  sc_registry *reg = NULL;
  sc_error err;
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  for (size_t i = 0; i < NENTRIES; i++) {
    char origin[64];
    snprintf(origin, sizeof origin, "builtin:ops_%s", entries[i].family);
    int rc = sc_registry_add_entry(reg, entries[i].entry, origin, &err);
    ck_assert_msg(rc == SC_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(sc_registry_op(reg, entries[i].family));
  }
  sc_device dev = a100();
  sc_op_desc o = DESC("gemm", SC_GEMM_PLAIN, SC_DTYPE_BF16, 1, 4096, 4096, 4096);
  sc_estimate a, b;
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &o, &a, &err), SC_OK);
  ck_assert_int_eq(sc_registry_estimate_op(reg, &dev, &o, &b, &err), SC_OK);
  REL(a.time_s, 4.645998276923077e-4);
  ck_assert_double_eq(a.time_s, b.time_s);
  sc_registry_free(reg);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ops");
  TCase *tc = tcase_create("plugins");
  tcase_add_test(tc, test_descriptors);
  tcase_add_test(tc, test_gemm_compute_bound_wave);
  tcase_add_test(tc, test_gemm_split_k);
  tcase_add_test(tc, test_gemm_tile_quantisation);
  tcase_add_test(tc, test_gemm_memory_bound);
  tcase_add_test(tc, test_unsupported_and_malformed);
  tcase_add_test(tc, test_attention);
  tcase_add_test(tc, test_kernel_class_efficiencies);
  tcase_add_test(tc, test_vector_rate);
  tcase_add_test(tc, test_cache_bandwidth);
  tcase_add_test(tc, test_kernel_rates);
  tcase_add_test(tc, test_cross_entropy_fp32_no_cast);
  tcase_add_test(tc, test_attention_softmax_rate);
  tcase_add_test(tc, test_attention_tile);
  tcase_add_test(tc, test_write_allocate);
  tcase_add_test(tc, test_rmw_rate);
  tcase_add_test(tc, test_gather_curve);
  tcase_add_test(tc, test_embedding_cold);
  tcase_add_test(tc, test_row_exposure);
  tcase_add_test(tc, test_softmax_exposure);
  tcase_add_test(tc, test_softmax_plain);
  tcase_add_test(tc, test_fill_curve);
  tcase_add_test(tc, test_gemm_exposed);
  tcase_add_test(tc, test_row_rate);
  tcase_add_test(tc, test_cache_miss_curve);
  tcase_add_test(tc, test_vector_families);
  tcase_add_test(tc, test_registry);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
