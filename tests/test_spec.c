/* Spec layer: every shipped model/hardware/topology file loads, derived parameter counts
 * match hand-derived and published sizes, and malformed files give file:line:col + key. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "spec/table.h"
#include "stepcast/stepcast.h"
#include "toml/toml.h"

typedef struct sc__builtin {
  const char *origin;
  sc_plugin_entry_fn entry;
} sc__builtin;
extern const sc__builtin sc__builtin_plugins[];

static const char *data_dir(void) {
  const char *d = getenv("SC_TEST_DATA");
  return d != NULL ? d : SC_SOURCE_DIR "/tests/data";
}

static void spec_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/spec/%s", data_dir(), name);
}

/* A registry with the built-in plugins linked statically. */
static sc_registry *builtin_registry(void) {
  sc_registry *reg = NULL;
  sc_error err;
  ck_assert_int_eq(sc_registry_new(&reg, &err), SC_OK);
  for (const sc__builtin *b = sc__builtin_plugins; b->entry != NULL; b++) {
    sc_registry_add_entry(reg, b->entry, b->origin, &err);
  }
  ck_assert_ptr_nonnull(sc_registry_hw(reg, "gpu"));
  return reg;
}

/* ---- every shipped file loads ---- */

static int for_each_toml(const char *sub, int (*fn)(const char *path)) {
  char dir[SC_PATH_MAX];
  int n = 0;
  DIR *d;
  struct dirent *e;
  snprintf(dir, sizeof dir, "%s/%s", SC_SOURCE_DIR, sub);
  d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    char path[SC_PATH_MAX + 256];
    if (len < 6 || strcmp(e->d_name + len - 5, ".toml") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ck_assert_msg(fn(path) == SC_OK, "%s does not load", path);
    n++;
  }
  closedir(d);
  return n;
}

static int load_model(const char *path) {
  sc_model m;
  sc_error err;
  int rc = sc_model_load(path, &m, &err);
  if (rc != SC_OK) fprintf(stderr, "%s\n", err.msg);
  return rc;
}
static int load_topology(const char *path) {
  sc_topology t;
  sc_error err;
  int rc = sc_topology_load(path, &t, &err);
  if (rc != SC_OK) fprintf(stderr, "%s\n", err.msg);
  return rc;
}
static sc_registry *g_reg;
static int load_hardware(const char *path) {
  sc_device d;
  sc_error err;
  int rc = sc_hardware_load(g_reg, path, &d, &err);
  if (rc != SC_OK) fprintf(stderr, "%s\n", err.msg);
  return rc;
}

START_TEST(shipped_files_load) {
  ck_assert_int_ge(for_each_toml("models", load_model), 15);
  ck_assert_int_ge(for_each_toml("topologies", load_topology), 4);
  g_reg = builtin_registry();
  ck_assert_int_ge(for_each_toml("hardware", load_hardware), 8);
  sc_registry_free(g_reg);
  g_reg = NULL;
}
END_TEST

/* ---- parameter counts ---- */

static int64_t params_of(const char *name) {
  sc_model m;
  sc_error err;
  ck_assert_msg(sc_model_load(name, &m, &err) == SC_OK, "%s", err.msg);
  return m.params;
}

static void near_published(const char *name, double published, double tol) {
  double p = (double)params_of(name);
  ck_assert_msg(fabs(p / published - 1.0) <= tol, "%s: %.4g params vs published %.4g", name, p,
                published);
}

START_TEST(params_hand_derived) {
  /* GPT-3 175B: 96 x (12 h^2 + 13 h) + V h + S h + 2 h, h = 12288, V = 50257, S = 2048. */
  int64_t h = 12288;
  int64_t want = 96 * (12 * h * h + 13 * h) + 50257 * h + 2048 * h + 2 * h;
  ck_assert_int_eq(params_of("gpt3-175b"), want);
  ck_assert_int_eq(want, 174604259328LL);
  /* Llama 2 7B: 32 x (4 h^2 + 3 h f + 2 h) + 2 V h + h, h = 4096, f = 11008, V = 32000. */
  h = 4096;
  ck_assert_int_eq(params_of("llama2-7b"), 32 * (4 * h * h + 3 * h * 11008 + 2 * h) +
                                               2 * 32000 * h + h);
  /* GQA (Llama 3 8B): q and o are h x h, k and v are h x (8 x 128). */
  ck_assert_int_eq(params_of("llama3-8b"),
                   32 * (2 * h * h + 2 * h * 1024 + 3 * h * 14336 + 2 * h) + 2 * 128256 * h + h);
  /* NeoX 20B, untied, rotary: 44 x (12 h^2 + 13 h) + 2 V h + 2 h = 20,554,567,680, the
   * exact count published by Black et al. 2022. */
  ck_assert_int_eq(params_of("gpt-neox-20b"), 20554567680LL);
  /* Llama 2 70B: the formula gives 68.98 B (Meta's name "70B" is nominal). */
  ck_assert_int_eq(params_of("llama2-70b"), 68976648192LL);
}
END_TEST

START_TEST(params_published_within_1pct) {
  near_published("gpt3-175b", 175.0e9, 0.01);   /* Brown et al. 2020, Table 2.1 */
  near_published("gpt3-13b", 13.0e9, 0.01);     /* idem */
  near_published("gpt3-6.7b", 6.7e9, 0.01);     /* idem */
  near_published("gpt3-760m", 760e6, 0.01);     /* idem */
  near_published("gpt3-125m", 125e6, 0.01);     /* idem */
  near_published("gpt-neox-20b", 20.55e9, 0.01);/* Black et al. 2022 */
  near_published("llama2-7b", 6.74e9, 0.01);    /* HF model card, 6.74B */
  near_published("llama2-13b", 13.0e9, 0.01);   /* Touvron et al. 2023 */
  near_published("llama3-8b", 8.03e9, 0.01);    /* HF model card, 8.03B */
  near_published("llama3-70b", 70.6e9, 0.01);  /* HF model card, 70.6B */
  near_published("llama3.1-405b", 405.9e9, 0.01); /* HF model card, 405.9B (BF16 406B) */
}
END_TEST

START_TEST(model_finish_in_code) {
  sc_model m;
  sc_error err;
  memset(&m, 0, sizeof m);
  m.layers = 2; m.hidden = 64; m.ffn_hidden = 256; m.heads = 4; m.vocab = 100; m.max_seq = 16;
  m.activation = SC_ACT_GELU; m.norm = SC_NORM_LAYERNORM; m.position = SC_POS_LEARNED;
  m.tied_embeddings = 1; m.linear_bias = 1;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_OK);
  ck_assert_int_eq(m.kv_heads, 4);
  ck_assert_int_eq(m.head_dim, 16);
  /* 2 x (12*64^2 + 13*64) + 100*64 + 16*64 + 2*64 */
  ck_assert_int_eq(m.params, 2 * (12 * 4096 + 13 * 64) + 6400 + 1024 + 128);
  m.heads = 5; m.kv_heads = 0; m.head_dim = 0;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "key 'heads'"));
  m.heads = 4; m.layers = -1;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "key 'layers'"));
}
END_TEST

/* ---- contents of a few files ---- */

START_TEST(topology_contents) {
  sc_topology t;
  sc_error err;
  ck_assert_msg(sc_topology_load("perlmutter-gpu", &t, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(t.gpus_per_node, 4);
  ck_assert_uint_eq(t.ntiers, 2);
  ck_assert_uint_eq(t.tiers[0].scope_gpus, 4);
  ck_assert_double_eq_tol(t.tiers[1].bw_Bps, 25e9, 1);
  ck_assert_double_eq_tol(t.tiers[1].oversubscription, 1.0, 1e-12);
  ck_assert_ptr_nonnull(strstr(t.hardware, "hardware/a100-sxm4-40gb.toml"));
  ck_assert_msg(sc_topology_load("dgx-h100-superpod", &t, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(t.ntiers, 3);
  ck_assert_uint_eq(t.tiers[1].scope_gpus, 256);
}
END_TEST

START_TEST(hardware_contents) {
  sc_registry *reg = builtin_registry();
  sc_device d;
  sc_error err;
  ck_assert_msg(sc_hardware_load(reg, "a100-sxm4-40gb", &d, &err) == SC_OK, "%s", err.msg);
  ck_assert_str_eq(d.name, "a100-sxm4-40gb");
  ck_assert_str_eq(d.kind, "gpu");
  ck_assert_double_eq_tol(d.peak_flops_per_s[SC_DTYPE_BF16], 312e12, 1);
  ck_assert(d.peak_flops_per_s[SC_DTYPE_FP8] == 0.0); /* no FP8 on Ampere */
  ck_assert_double_eq_tol(d.mem_bw_Bps, 1.555e12, 1);
  ck_assert_uint_eq(d.compute_units, 108);
  ck_assert_uint_eq(d.tile_m, 256);
  ck_assert(d.flops_efficiency > 0 && d.flops_efficiency <= 1);
  ck_assert(d.matmul_efficiency[SC_DTYPE_BF16] == 0.0); /* not stated: flops_efficiency */
  ck_assert(d.attention_fwd_efficiency == 0.0);
  ck_assert_uint_eq(d.attention_block_q, 0); /* no attention tile stated: half the scores */
  /* H100: FP8 GEMMs at their own measured fraction, fused attention at its own. */
  ck_assert_msg(sc_hardware_load(reg, "h100-sxm5-80gb", &d, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_eq_tol(d.matmul_efficiency[SC_DTYPE_FP8], 0.709, 1e-9);
  ck_assert(sc_device_matmul_efficiency(&d, SC_DTYPE_BF16) == d.flops_efficiency);
  ck_assert(d.attention_fwd_efficiency > 0 && d.attention_fwd_efficiency <= 1);
  ck_assert(d.attention_bwd_efficiency > 0 && d.attention_bwd_efficiency <= 1);
  ck_assert(d.kernel_rates[0].family[0] == '\0'); /* no per-kernel rates stated */
  ck_assert_int_eq(d.write_allocate, 0);
  ck_assert_msg(sc_hardware_load(reg, "host-cpu", &d, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(d.write_allocate, 1);
  ck_assert(sc_device_kernel_rate(&d, "norm", 1) > 0);
  ck_assert_uint_eq(d.attention_block_q, 64); /* the cpu plugin's attention kernel */
  ck_assert_uint_eq(d.attention_block_k, 0);
  ck_assert_msg(sc_hardware_load(reg, "h100-sxm5-80gb", &d, &err) == SC_OK, "%s", err.msg);
  /* a GPU file may state per-kernel rates too */
  {
    char path[SC_PATH_MAX];
    spec_path(path, sizeof path, "hw_gpu_kernel_rates.toml");
    ck_assert_msg(sc_hardware_load(reg, path, &d, &err) == SC_OK, "%s", err.msg);
    ck_assert(sc_device_kernel_rate(&d, "softmax", 1) == 4e12);
    ck_assert(sc_device_kernel_rate(&d, "softmax", 0) == 0.0);
    ck_assert(sc_device_kernel_rate(&d, "attention", 0) == 2e12);
    ck_assert(sc_device_kernel_rate(&d, "norm", 0) == 0.0);
  }
  sc_registry_free(reg);
}
END_TEST

/* ---- resolution ---- */

START_TEST(resolve_names) {
  char out[SC_PATH_MAX], p[SC_PATH_MAX];
  sc_error err;
  ck_assert_int_eq(sc_spec_resolve(SC_SPEC_MODEL, "gpt3-175b", out, sizeof out, &err), SC_OK);
  ck_assert_ptr_nonnull(strstr(out, "models/gpt3-175b.toml"));
  ck_assert_int_eq(sc_spec_resolve(SC_SPEC_MODEL, "nope-1b", out, sizeof out, &err),
                   SC_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err.msg, "nope-1b"));
  ck_assert_int_eq(sc_spec_resolve(SC_SPEC_TOPOLOGY, "/no/such.toml", out, sizeof out, &err),
                   SC_ENOTFOUND);
  /* STEPCAST_DATA_PATH comes first: tests/data has spec/ but a models/ lookup there misses
   * and falls back to the source tree. */
  setenv("STEPCAST_DATA_PATH", "/nonexistent:", 1);
  ck_assert_int_eq(sc_spec_resolve(SC_SPEC_MODEL, "llama3-8b", out, sizeof out, &err), SC_OK);
  unsetenv("STEPCAST_DATA_PATH");
  spec_path(p, sizeof p, "unknown_key.toml");
  ck_assert_int_eq(sc_spec_resolve(SC_SPEC_MODEL, p, out, sizeof out, &err), SC_OK);
  ck_assert_str_eq(out, p);
}
END_TEST

/* ---- malformed files ---- */

typedef struct bad_case {
  const char *file;
  sc_spec_kind kind;
  const char *where; /* ":line:col: " */
  const char *key;   /* "key 'x'" or NULL (broken TOML) */
  const char *why;
} bad_case;

static const bad_case bad_cases[] = {
  {"unknown_key.toml", SC_SPEC_MODEL, ":14:1: ", "key 'dropout'", "unknown key"},
  {"missing_key.toml", SC_SPEC_MODEL, ":1:1: ", "key 'vocab'", "missing required key"},
  {"wrong_type.toml", SC_SPEC_MODEL, ":3:1: ", "key 'layers'", "expected an integer, found a string"},
  {"heads_not_dividing.toml", SC_SPEC_MODEL, ":6:1: ", "key 'heads'", "must divide 'hidden'"},
  {"long_model_name.toml", SC_SPEC_MODEL, ":2:1: ", "key 'name'", "must have 1 to 63 characters"},
  {"layers_out_of_range.toml", SC_SPEC_MODEL, ":3:1: ", "key 'layers'", "99999999999 is out of range (at most 100000)"},
  {"long_topology_name.toml", SC_SPEC_TOPOLOGY, ":2:1: ", "key 'name'", "must have 1 to 63 characters"},
  {"long_tier_name.toml", SC_SPEC_TOPOLOGY, ":8:1: ", "key 'name'", "must have 1 to 63 characters"},
  {"kv_heads_not_dividing.toml", SC_SPEC_MODEL, ":7:1: ", "key 'kv_heads'", "must divide 'heads'"},
  {"broken.toml", SC_SPEC_MODEL, ":3:", NULL, ""},
  {"two_kinds.toml", SC_SPEC_MODEL, ":3:", "key 'hardware'", "unknown key"},
  {"negative_bw.toml", SC_SPEC_TOPOLOGY, ":10:1: ", "key 'bw_Bps'", "-3e+11 B/s is outside [1e3, 1e16]"},
  {"tier_latency_range.toml", SC_SPEC_TOPOLOGY, ":11:1: ", "key 'latency_s'", "must be in [0, 1] s (is 2.7)"},
  {"bad_tier_order.toml", SC_SPEC_TOPOLOGY, ":14:1: ", "key 'scope_gpus'", "tiers must grow"},
  {"bad_hardware_ref.toml", SC_SPEC_TOPOLOGY, ":3:1: ", "key 'hardware'", "does not resolve"},
  {"scope_mismatch.toml", SC_SPEC_TOPOLOGY, ":9:1: ", "key 'scope_gpus'", "gpus_per_node"},
  {"undersubscribed.toml", SC_SPEC_TOPOLOGY, ":16:1: ", "key 'oversubscription'", ">= 1"},
  {"hw_unknown_key.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'clock_hz'", "unknown key"},
  {"hw_unknown_dtype.toml", SC_SPEC_HARDWARE, ":10:1: ", "key 'peak_flops_per_s.bf8'", "unknown key"},
  {"hw_negative_bw.toml", SC_SPEC_HARDWARE, ":5:1: ", "key 'mem_bw_Bps'", "must be > 0"},
  {"hw_bw_exponent_typo.toml", SC_SPEC_HARDWARE, ":5:1: ", "key 'mem_bw_Bps'", "1.555e-12 B/s is outside [1000, 1e+16] (a typo in the exponent?)"},
  {"hw_flops_exponent_typo.toml", SC_SPEC_HARDWARE, ":9:1: ", "key 'peak_flops_per_s.bf16'", "3.12e+23 FLOP/s is outside [1000, 1e+19]"},
  {"hw_missing_key.toml", SC_SPEC_HARDWARE, ":1:1: ", "key 'mem_bytes'", "missing required key"},
  {"hw_wrong_type.toml", SC_SPEC_HARDWARE, ":7:1: ", "key 'compute_units'", "expected a number"},
  {"hw_unknown_kind.toml", SC_SPEC_HARDWARE, ":3:1: ", "key 'kind'", "no hardware plugin"},
  {"hw_matmul_eff_range.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'flops_efficiency_by_dtype.bf16'", "[1e-4, 1]"},
  {"hw_matmul_eff_no_peak.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'flops_efficiency_by_dtype.fp8'", "no peak_flops_per_s.fp8"},
  {"hw_attention_eff_range.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'attention_bwd_efficiency'", "> 0"},
  {"hw_board_power_negative.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'board_power_W'", "must be > 0 (is -400)"},
  {"hw_unaligned_eff_range.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'matmul_unaligned_efficiency'", "1.5"},
  {"hw_attention_block_zero.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'attention_block_q'", "> 0"},
  {"hw_attention_block_frac.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'attention_block_k'", "whole number in [1, 65536] (is 1.5)"},
  {"hw_attention_block_big.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'attention_block_q'", "whole number in [1, 65536] (is 131072)"},
  {"hw_cpu_bad_vector.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'vector_flops_per_s'", "must be > 0"},
  {"hw_cpu_bad_cache.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'cache_bw_Bps'", "expected a number"},
  {"hw_cpu_bad_rmw.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'rmw_bw_Bps'", "must be > 0"},
  {"hw_cpu_gather_falling.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'gather_row_s.16777216'", "does not cost less per row"},
  {"hw_cpu_gather_range.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'gather_row_s.2097152'", "must be in [0, 0.001]"},
  {"hw_cpu_fill_cold_range.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'fill_cold_bw_Bps.2097152'", "0.03"},
  {"hw_cpu_bad_kernel_index.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'kernel_flops_per_s.norm.16'", "variant index in [0, 16)"},
  {"hw_cpu_bad_kernel_name.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'kernel_flops_per_s.norm.ln'", "variant index"},
  {"hw_cpu_bad_kernel_rate.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'kernel_flops_per_s.norm.1'", "must be > 0"},
  {"hw_gpu_bad_kernel_rate.toml", SC_SPEC_HARDWARE, ":15:1: ", "key 'kernel_flops_per_s.norm.0'", "expected a number"},
  {"hw_cpu_bad_write_allocate.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'write_allocate'", "expected a boolean"},
  {"hw_cpu_bad_kernel_table.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'kernel_flops_per_s.norm'", "must be a table"},
  {"hw_cpu_exposure_no_l1.toml", SC_SPEC_HARDWARE, ":10:11: ", "key 'row_exposure'", "needs l1_bytes"},
  {"hw_cpu_bad_exposure.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'row_exposure.norm.1'", "must be >= 0"},
  {"hw_cpu_bad_l1.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'l1_bytes'", "expected a number"},
  {"hw_cpu_bad_row_width.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'row_rate.norm.2.100'", "row width of 64 x 2^i"},
  {"hw_cpu_bad_row_rate.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'row_rate.norm.2.128'", "must be > 0"},
  {"hw_cpu_row_rate_flat.toml", SC_SPEC_HARDWARE, ":11:1: ", "key 'row_rate.norm.2'", "table of <columns>"},
  {"hw_cpu_gemm_exposed_no_knee.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'gemm_exposed_bw_Bps'", "needs gemm_exposed_knee_bytes"},
  {"hw_cpu_gemm_knee_no_bw.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'gemm_exposed_knee_bytes'", "needs gemm_exposed_bw_Bps"},
  {"hw_cpu_gemm_exposed_range.toml", SC_SPEC_HARDWARE, ":8:1: ", "key 'gemm_exposed_bw_Bps'", "outside [1000, 1e+16]"},
  {"hw_cpu_miss_key.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'cache_miss_share.1e6'", "size in whole bytes"},
  {"hw_cpu_miss_share_range.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'cache_miss_share.1048576'", "in [0, 1] (is 1.5)"},
  {"hw_cpu_miss_ws_order.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'cache_miss_share.65536'", "sizes must increase"},
  {"hw_cpu_miss_share_order.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'cache_miss_share.1048576'", "does not miss less"},
  {"hw_cpu_miss_empty.toml", SC_SPEC_HARDWARE, ":11:11: ", "key 'cache_miss_share'", "an empty table"},
  {"hw_cpu_miss_no_cache.toml", SC_SPEC_HARDWARE, ":10:11: ", "key 'cache_miss_share'", "needs cache_bw_Bps"},
  {"hw_cpu_miss_string.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'cache_miss_share.1048576'", "expected a number"},
  {"hw_cpu_fill_key.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'fill_bw_Bps.2MiB'", "size in whole bytes"},
  {"hw_cpu_fill_rate.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'fill_bw_Bps.4194304'", "must be in [1000, 1e+16] (is 0)"},
  {"hw_cpu_fill_order.toml", SC_SPEC_HARDWARE, ":13:1: ", "key 'fill_bw_Bps.2097152'", "sizes must increase"},
  {"hw_cpu_fill_string.toml", SC_SPEC_HARDWARE, ":12:1: ", "key 'fill_bw_Bps.2097152'", "expected a number"},
  {"hw_cpu_fill_flat.toml", SC_SPEC_HARDWARE, ":9:1: ", "key 'fill_bw_Bps'", "must be a table of <buffer bytes> = B/s"},
};

START_TEST(malformed_is_named) {
  const bad_case *c = &bad_cases[_i];
  char path[SC_PATH_MAX], want[SC_PATH_MAX + 32];
  sc_error err;
  int rc;
  memset(&err, 0, sizeof err);
  spec_path(path, sizeof path, c->file);
  if (c->kind == SC_SPEC_MODEL) {
    sc_model m;
    rc = sc_model_load(path, &m, &err);
  } else if (c->kind == SC_SPEC_TOPOLOGY) {
    sc_topology t;
    rc = sc_topology_load(path, &t, &err);
  } else {
    sc_registry *reg = builtin_registry();
    sc_device d;
    rc = sc_hardware_load(reg, path, &d, &err);
    sc_registry_free(reg);
  }
  ck_assert_msg(rc != SC_OK, "%s loaded", c->file);
  ck_assert_int_eq(err.code, rc);
  snprintf(want, sizeof want, "%s%s", path, c->where);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s: message '%s' does not start with '%s'",
                c->file, err.msg, want);
  if (c->key != NULL) {
    ck_assert_msg(strstr(err.msg, c->key) != NULL, "%s: '%s' lacks %s", c->file, err.msg, c->key);
  }
  ck_assert_msg(strstr(err.msg, c->why) != NULL, "%s: '%s' lacks '%s'", c->file, err.msg, c->why);
}
END_TEST

/* ---- table accessors ---- */

START_TEST(table_accessors) {
  static const char text[] = "[a]\nx = 3\ny = 2.5\ns = \"hi\"\nb = true\n[a.peak]\nbf16 = 1e12\n";
  sc_toml_doc *doc = NULL;
  sc_error err;
  const sc_table *root, *a = NULL, *peak = NULL;
  double d = 0;
  int64_t i = 0;
  const char *s = NULL, *key = NULL;
  int b = 0;
  ck_assert_int_eq(sc__toml_parse(text, sizeof text - 1, "t.toml", &doc, &err), SC_OK);
  root = sc__table_of(doc->root);
  ck_assert_int_eq(sc__table_table(root, "a", &a, &err), SC_OK);
  ck_assert_int_eq(sc__table_number(a, "x", &d, &err), SC_OK);
  ck_assert_double_eq(d, 3.0);
  ck_assert_int_eq(sc__table_integer(a, "y", &i, &err), SC_ESPEC);
  ck_assert_str_eq(err.msg, "t.toml:3:1: key 'y': expected an integer, found a float");
  ck_assert_int_eq(sc__table_string(a, "s", &s, &err), SC_OK);
  ck_assert_str_eq(s, "hi");
  ck_assert_int_eq(sc__table_bool(a, "b", &b, &err), SC_OK);
  ck_assert_int_eq(b, 1);
  ck_assert_int_eq(sc__table_number(root, "a.peak.bf16", &d, &err), SC_OK);
  ck_assert_double_eq(d, 1e12);
  ck_assert_int_eq(sc__table_number(root, "a.x.z", &d, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "key 'a.x': expected a table"));
  ck_assert_int_eq(sc__table_number(root, "a.nope", &d, &err), SC_ENOTFOUND);
  ck_assert_int_eq(sc__table_table(a, "peak", &peak, &err), SC_OK);
  ck_assert_str_eq(sc__table_where(root, "a.peak.bf16"), "t.toml:7:1");
  ck_assert_int_eq(sc__table_key(a, 0, &key), SC_OK);
  ck_assert_str_eq(key, "x");
  ck_assert_int_eq(sc__table_key(a, 99, &key), SC_ENOTFOUND);
  sc__toml_free(doc);
}
END_TEST

static Suite *spec_suite(void) {
  Suite *s = suite_create("spec");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, shipped_files_load);
  tcase_add_test(tc, params_hand_derived);
  tcase_add_test(tc, params_published_within_1pct);
  tcase_add_test(tc, model_finish_in_code);
  tcase_add_test(tc, topology_contents);
  tcase_add_test(tc, hardware_contents);
  tcase_add_test(tc, resolve_names);
  tcase_add_loop_test(tc, malformed_is_named, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
  tcase_add_test(tc, table_accessors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(spec_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
