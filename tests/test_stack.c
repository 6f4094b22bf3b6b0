/* Software stacks (core/include/stepcast/stack.h): the stack file's loader and its
 * messages, the per-operator kernels and traffic, the stream of a pass (host dispatch against
 * GPU time), the stack's attention kernel and vocabulary padding, the unaligned-GEMM rate,
 * and a prediction under a stack. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "stepcast/ops.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/stack.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

static const char *data_dir(void) {
  const char *d = getenv("SC_TEST_DATA");
  return d != NULL ? d : "tests/data";
}

static void stack_path(char *out, size_t cap, const char *file) {
  snprintf(out, cap, "%s/stack/%s", data_dir(), file);
}

static int load(const char *file, sc_stack *s, sc_error *err) {
  char p[SC_PATH_MAX];
  stack_path(p, sizeof p, file);
  sc_error_clear(err);
  return sc_stack_load(p, s, err);
}

START_TEST(test_load_good) {
  sc_stack s;
  sc_error err;
  ck_assert_msg(load("good.toml", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_str_eq(s.name, "test-stack");
  ck_assert(fabs(s.host_per_kernel_s - 20e-6) < 1e-15);
  ck_assert_uint_eq(s.vocab_divisible_by, 1);
  /* a family's rule covers every variant; a variant's rule wins; default 1 */
  ck_assert(sc_stack_kernels(&s, "gemm", 0) == 3.0);
  ck_assert(sc_stack_kernels(&s, "norm", 1) == 2.0);
  ck_assert(sc_stack_kernels(&s, "norm", 3) == 4.0);
  ck_assert(sc_stack_kernels(&s, "norm", 0) == 1.0);
  ck_assert(sc_stack_kernels(&s, "attention", 1) == 2.0);
  ck_assert(sc_stack_kernels(&s, "elementwise", 9) == 7.0);
  ck_assert(sc_stack_kernels(&s, "elementwise", 8) == 1.0);
  ck_assert(sc_stack_kernels(&s, "softmax", 0) == 1.0);
  ck_assert(sc_stack_traffic(&s, "norm", 2) == 2.5);
  ck_assert(sc_stack_traffic(&s, "optimizer", 0) == 1.5);
  ck_assert(sc_stack_traffic(&s, "gemm", 0) == 1.0);
  ck_assert_uint_eq(s.nattention, 2);
  ck_assert_str_eq(s.attention[0].device, "h100-sxm5-80gb");
  /* no stack: one kernel, the operator's own bytes */
  ck_assert(sc_stack_kernels(NULL, "gemm", 0) == 1.0);
  ck_assert(sc_stack_traffic(NULL, "norm", 1) == 1.0);
}
END_TEST

START_TEST(test_load_by_name) {
  sc_stack s;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_stack_load("pytorch-eager", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_str_eq(s.name, "pytorch-eager");
  ck_assert(s.host_per_kernel_s > 0);
  ck_assert_int_eq(s.p2p_blocking, 0); /* not stated: sends run beside the compute */
  ck_assert_msg(sc_stack_load("gpt-neox", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(s.p2p_blocking, 1); /* DeepSpeed's PipelineEngine */
  ck_assert_int_eq(sc_stack_load("no-such-stack", &s, &err), SC_ENOTFOUND);
  ck_assert_msg(strstr(err.msg, "stack 'no-such-stack' not found") != NULL, "%s", err.msg);
  ck_assert(load("ok_empty_traffic.toml", &s, &err) == SC_OK);
  ck_assert(load("empty.toml", &s, &err) == SC_OK);
  ck_assert(s.host_per_kernel_s == 0 && s.nkernels == 0 && s.ntraffic == 0);
}
END_TEST

/* A stack's overlap switches: megatron-core-te turns on the three Megatron-Core recipes
 * turn on, megatron-deepspeed none; they fill only the switches a job leaves unstated, and
 * TP overlap only with tp > 1 and sequence parallelism. */
START_TEST(test_overlap_defaults) {
  sc_stack s;
  sc_error err;
  sc_parallel p;
  sc_error_clear(&err);
  ck_assert_msg(sc_stack_load("megatron-core-te", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert(s.overlap_grad_reduce && s.overlap_param_gather && s.overlap_tp_comm);
  ck_assert_int_eq(s.p2p_blocking, 0);
  sc_parallel_defaults(&p);
  p.tp = 4;
  p.sequence_parallel = 1;
  ck_assert_int_eq(sc_stack_overlap_defaults(&s, NULL, &p), 3);
  ck_assert(p.overlap_grad_reduce && p.overlap_param_gather && p.overlap_tp_comm);
  /* stated off by the job: kept off */
  int given[3] = {0, 1, 1};
  sc_parallel_defaults(&p);
  p.tp = 4;
  p.sequence_parallel = 1;
  ck_assert_int_eq(sc_stack_overlap_defaults(&s, given, &p), 1);
  ck_assert(p.overlap_grad_reduce && !p.overlap_param_gather && !p.overlap_tp_comm);
  /* no sequence parallelism, or tp 1: no TP overlap */
  sc_parallel_defaults(&p);
  p.tp = 4;
  ck_assert_int_eq(sc_stack_overlap_defaults(&s, NULL, &p), 2);
  ck_assert_int_eq(p.overlap_tp_comm, 0);
  ck_assert_int_eq(sc_stack_overlap_defaults(NULL, NULL, &p), 0);
  ck_assert_msg(sc_stack_load("megatron-deepspeed", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert(!s.overlap_grad_reduce && !s.overlap_param_gather && !s.overlap_tp_comm);
  ck_assert_int_eq(s.p2p_blocking, 1);
  sc_parallel_defaults(&p);
  ck_assert_int_eq(sc_stack_overlap_defaults(&s, NULL, &p), 0);
  /* the model-state layout: PyTorch AMP's for the PyTorch stacks, Megatron's elsewhere */
  sc_stack_state_layout(&s, &p);
  ck_assert_int_eq(p.amp_layout, 0);
  ck_assert_msg(sc_stack_load("pytorch-eager", &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(s.amp_layout, 1);
  sc_stack_state_layout(&s, &p);
  ck_assert_int_eq(p.amp_layout, 1);
  sc_stack_state_layout(NULL, &p);
  ck_assert_int_eq(p.amp_layout, 1);
}
END_TEST

/* Each malformed file: SC_ESPEC, the file, its line and the key in the message. */
START_TEST(test_load_bad) {
  static const struct { const char *file, *needle; } cases[] = {
      {"bad_host.toml", ":3:1: key 'host_per_kernel_s': must be in [0, 0.01] s (is -1e-06)"},
      {"bad_kernels_zero.toml", ":4:1: key 'kernels.gemm': must be in [1, 10000] (is 0)"},
      {"bad_variant.toml", ":4:10: key 'kernels.norm.99': expected a variant index 0..15"},
      {"bad_variant_name.toml", ":4:10: key 'kernels.norm.x1': expected a variant index"},
      {"bad_family.toml", ":4:1: key 'kernels.Norm-2': not an operator family name"},
      {"bad_kernels_type.toml", ":4:1: key 'kernels.gemm': expected a number or a table"},
      {"bad_traffic.toml", ":4:1: key 'traffic.norm': must be in [1, 100] (is 1000)"},
      {"bad_key.toml", ":3:1: key 'kernel': unknown key in [stack]"},
      {"bad_no_name.toml", ":1:1: key 'name': missing required key in [stack]"},
      {"bad_attention_range.toml", ":4:1: key 'fwd': must be in ["},
      {"bad_attention_missing.toml", "key 'bwd': missing required key in "
                                     "[stack.attention.h100-sxm5-80gb]"},
      {"bad_attention_key.toml", ":6:1: key 'mid': unknown key in [stack.attention."},
      {"bad_vocab.toml", ":3:1: key 'vocab_divisible_by': must be in [1, 65536] (is 0)"},
      {"bad_p2p_blocking.toml", ":3:"},
      {"bad_overlap.toml", ":3:"},
      {"bad_amp_layout.toml", ":3:1: key 'amp_layout'"},
      {"not_a_stack.toml", ": key 'model': unknown key in a stack file"},
      {"bad_head_dims_order.toml", ":4:1: key 'head_dims': element 2: 64 is not a whole "
                                   "number in [1, 4096] above the one before"},
      {"bad_head_dims_len.toml", ":5:1: key 'fwd': expected an array of 2 numbers"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_stack s;
    sc_error err;
    int rc = load(cases[i].file, &s, &err);
    ck_assert_msg(rc == SC_ESPEC, "%s: rc %d (%s)", cases[i].file, rc, err.msg);
    ck_assert_msg(strstr(err.msg, cases[i].file) != NULL, "%s: no file in '%s'", cases[i].file,
                  err.msg);
    ck_assert_msg(strstr(err.msg, cases[i].needle) != NULL, "%s: '%s' lacks '%s'",
                  cases[i].file, err.msg, cases[i].needle);
    ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s: not one line", cases[i].file);
  }
}
END_TEST

/* The closed form of sc_stack_stream against one instance at a time. */
START_TEST(test_stream) {
  unsigned seed = 7;
  for (int t = 0; t < 2000; t++) {
    double h0 = (rand_r(&seed) % 1000) * 1e-6 - 5e-4, g0 = (rand_r(&seed) % 1000) * 1e-6;
    double h = (rand_r(&seed) % 100) * 1e-6, g = (rand_r(&seed) % 100) * 1e-6;
    uint64_t n = (uint64_t)(rand_r(&seed) % 50);
    double ha = h0, ga = g0, hb = h0, gb = g0;
    sc_stack_stream(&ha, &ga, h, g, n);
    for (uint64_t i = 0; i < n; i++) sc_stack_stream(&hb, &gb, h, g, 1);
    ck_assert_msg(fabs(ga - gb) < 1e-12 && fabs(ha - hb) < 1e-12,
                  "t %d: n %llu: closed form %g %g, one by one %g %g", t,
                  (unsigned long long)n, ha, ga, hb, gb);
  }
  /* host-bound: the GPU finishes one kernel after the host's last dispatch */
  double host = 0, gpu = 0;
  sc_stack_stream(&host, &gpu, 10e-6, 1e-6, 100);
  ck_assert(fabs(gpu - (100 * 10e-6 + 1e-6)) < 1e-12);
  /* GPU-bound: the host's first dispatch, then the GPU's work */
  host = gpu = 0;
  sc_stack_stream(&host, &gpu, 1e-6, 10e-6, 100);
  ck_assert(fabs(gpu - (1e-6 + 100 * 10e-6)) < 1e-12);
}
END_TEST

static sc_registry *open_reg(void) {
  sc_registry *reg = NULL;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  return reg;
}

/* A stack's extra kernels cost launch_s each on the GPU, its extra traffic the device's
 * achievable bandwidth; the host pays host_per_kernel_s per kernel. */
START_TEST(test_gpu_and_host_time) {
  sc_registry *reg = open_reg();
  sc_device dev;
  sc_stack s;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_hardware_load(reg, "h100-sxm5-80gb", &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert(dev.launch_s > 0);
  ck_assert_msg(load("good.toml", &s, &err) == SC_OK, "%s", err.msg);
  sc_op_desc op = {SC_OP_NORM, SC_NORM_OP_RMSNORM_BWD, SC_DTYPE_BF16, 2, {8192, 4096}, 0};
  sc_estimate e;
  ck_assert_msg(sc_registry_estimate_op(reg, &dev, &op, &e, &err) == SC_OK, "%s", err.msg);
  double bw = dev.mem_bw_Bps * dev.mem_efficiency;
  double want = e.time_s + 3 * dev.launch_s + 1.5 * e.bytes / bw; /* 4 kernels, 2.5x traffic */
  ck_assert_msg(fabs(sc_stack_gpu_s(&s, &dev, &op, &e, e.time_s) - want) < 1e-12 * want,
                "%g vs %g", sc_stack_gpu_s(&s, &dev, &op, &e, e.time_s), want);
  ck_assert(fabs(sc_stack_host_s(&s, &op) - 4 * 20e-6) < 1e-15);
  ck_assert(sc_stack_gpu_s(NULL, &dev, &op, &e, e.time_s) == e.time_s);
  ck_assert(sc_stack_host_s(NULL, &op) == 0.0);
  /* the attention kernel the stack names on this device replaces the device's figures */
  sc_device d2 = dev;
  ck_assert_int_eq(sc_stack_device(&s, &d2), 1);
  ck_assert(d2.attention_fwd_efficiency == 0.6 && d2.attention_bwd_efficiency == 0.5);
  /* one pair for every head dimension: an attention's time is the plugin's on d2 */
  sc_op_desc at = {SC_OP_ATTENTION, 0, SC_DTYPE_BF16, 7, {4, 32, 32, 2048, 2048, 64, 1}, 0};
  sc_estimate ea;
  ck_assert(sc_registry_estimate_op(reg, &d2, &at, &ea, &err) == SC_OK);
  ck_assert(fabs(sc_stack_gpu_s(&s, &d2, &at, &ea, ea.time_s) - (ea.time_s + d2.launch_s)) <
            1e-15); /* the test stack's two attention kernels */
  /* rates by head dimension, interpolated in log2 between the points, clamped beyond */
  const sc_stack_attention *a = sc_stack_attention_for(&s, "h200-sxm-141gb");
  ck_assert(a != NULL && a->n == 2);
  ck_assert(sc_stack_attention_eff(a, 64, 0) == 0.4 && sc_stack_attention_eff(a, 128, 0) == 0.6);
  ck_assert(fabs(sc_stack_attention_eff(a, sqrt(64.0 * 128.0), 1) - 0.4) < 1e-12);
  ck_assert(sc_stack_attention_eff(a, 32, 0) == 0.4 && sc_stack_attention_eff(a, 256, 1) == 0.5);
  sc_device h2;
  ck_assert_msg(sc_hardware_load(reg, "h200-sxm-141gb", &h2, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(sc_stack_device(&s, &h2), 1);
  ck_assert(h2.attention_fwd_efficiency == 0.6 && h2.attention_bwd_efficiency == 0.5);
  sc_estimate eh;
  ck_assert(sc_registry_estimate_op(reg, &h2, &at, &eh, &err) == SC_OK); /* head dim 64 */
  double want64 = h2.launch_s + (eh.time_s - h2.launch_s) * 0.6 / 0.4 + h2.launch_s;
  ck_assert_msg(fabs(sc_stack_gpu_s(&s, &h2, &at, &eh, eh.time_s) - want64) < 1e-12 * want64,
                "%g vs %g", sc_stack_gpu_s(&s, &h2, &at, &eh, eh.time_s), want64);
  at.dims[5] = 128; /* the largest head dimension: the device's rate, unchanged */
  ck_assert(sc_registry_estimate_op(reg, &h2, &at, &eh, &err) == SC_OK);
  ck_assert(fabs(sc_stack_gpu_s(&s, &h2, &at, &eh, eh.time_s) - (eh.time_s + h2.launch_s)) <
            1e-15);
  sc_device d3;
  ck_assert_msg(sc_hardware_load(reg, "a100-sxm4-80gb", &d3, &err) == SC_OK, "%s", err.msg);
  double f = d3.attention_fwd_efficiency;
  ck_assert_int_eq(sc_stack_device(&s, &d3), 0); /* not a device the stack names */
  ck_assert(d3.attention_fwd_efficiency == f);
  sc_registry_free(reg);
}
END_TEST

/* A GEMM with a dimension that is not a whole number of 16-byte vectors runs at the device's
 * unaligned rate; an aligned one does not. */
START_TEST(test_unaligned_gemm) {
  sc_registry *reg = open_reg();
  sc_device dev;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_hardware_load(reg, "h200-sxm-141gb", &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert(dev.matmul_unaligned_efficiency > 0);
  sc_op_desc al = {SC_OP_GEMM, 0, SC_DTYPE_BF16, 4, {1, 16384, 50304, 2048}, 0};
  sc_op_desc un = al;
  un.dims[2] = 50257;
  sc_estimate ea, eu;
  ck_assert(sc_registry_estimate_op(reg, &dev, &al, &ea, &err) == SC_OK);
  ck_assert(sc_registry_estimate_op(reg, &dev, &un, &eu, &err) == SC_OK);
  /* compute-bound both: the unaligned one at the unaligned rate, 6.5x slower */
  double ratio = (eu.time_s - dev.launch_s) / (ea.time_s - dev.launch_s);
  double flops_ratio = 50257.0 / 50304.0;
  double eff = sc_device_matmul_efficiency(&dev, SC_DTYPE_BF16);
  ck_assert_msg(ratio > 0.9 * flops_ratio * eff / dev.matmul_unaligned_efficiency &&
                    ratio < 1.1 * flops_ratio * eff / dev.matmul_unaligned_efficiency,
                "ratio %g", ratio);
  /* a device that states no unaligned rate (another name: the registry memoises by device) */
  sc_device nounal = dev;
  nounal.matmul_unaligned_efficiency = 0;
  snprintf(nounal.name, sizeof nounal.name, "h200-no-unaligned-rate");
  ck_assert(sc_registry_estimate_op(reg, &nounal, &un, &eu, &err) == SC_OK);
  ck_assert(eu.time_s < ea.time_s * 1.01); /* not stated: the aligned rate */
  /* The layout decides which dimensions are leading ones (stepcast/ops.h): a plain GEMM's
   * k and n, a weight gradient's (SC_GEMM_TN) m and n. 50257 as m: aligned rows for a plain
   * GEMM, the unaligned rate for a TN one; as k: the reverse. */
  sc_op_desc am = {SC_OP_GEMM, SC_GEMM_PLAIN, SC_DTYPE_BF16, 4, {1, 50304, 2048, 16384}, 0};
  sc_op_desc um = am, tm = am, tk = am, uk = am;
  um.dims[1] = 50257;
  tm.variant = SC_GEMM_TN;
  tm.dims[1] = 50257;
  uk.dims[3] = 16383;
  tk.variant = SC_GEMM_TN;
  tk.dims[3] = 16383;
  sc_estimate e_am, e_um, e_tm, e_uk, e_tk;
  ck_assert(sc_registry_estimate_op(reg, &dev, &am, &e_am, &err) == SC_OK);
  ck_assert(sc_registry_estimate_op(reg, &dev, &um, &e_um, &err) == SC_OK);
  ck_assert(sc_registry_estimate_op(reg, &dev, &tm, &e_tm, &err) == SC_OK);
  ck_assert(sc_registry_estimate_op(reg, &dev, &uk, &e_uk, &err) == SC_OK);
  ck_assert(sc_registry_estimate_op(reg, &dev, &tk, &e_tk, &err) == SC_OK);
  ck_assert(e_um.time_s < e_am.time_s * 1.01);
  ck_assert_msg(e_tm.time_s > 4.0 * e_am.time_s, "%g %g", e_tm.time_s, e_am.time_s);
  ck_assert_msg(e_uk.time_s > 4.0 * e_am.time_s, "%g %g", e_uk.time_s, e_am.time_s);
  ck_assert(e_tk.time_s < e_am.time_s * 1.01);
  sc_registry_free(reg);
}
END_TEST

START_TEST(test_vocab_padding) {
  sc_model m;
  sc_test_gpt_model(&m, "v", 2, 1);
  m.vocab = 50257;
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.tp = 2;
  ck_assert_int_eq(sc_workload_padded_vocab(&m, &p), 50432); /* 256 x 197 */
  p.vocab_divisible_by = 1;
  ck_assert_int_eq(sc_workload_padded_vocab(&m, &p), 50258); /* a multiple of tp */
  p.tp = 1;
  ck_assert_int_eq(sc_workload_padded_vocab(&m, &p), 50257);
}
END_TEST

/* A prediction under a stack: no rules and no host time changes nothing; a host far slower
 * than the GPU makes the step the host's dispatch, kernel by kernel. */
START_TEST(test_predict_with_stack) {
  sc_registry *reg = open_reg();
  sc_predictor *pr = NULL;
  sc_topology topo;
  sc_device dev;
  sc_model m;
  sc_parallel p;
  sc_predict_opts o;
  sc_result r0, r1, r2;
  sc_stack none, host;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_topology_load("dgx-h100-superpod", &topo, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(reg, topo.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(reg, &pr, &err) == SC_OK, "%s", err.msg);
  sc_test_gpt_model(&m, "s", 4, 0);
  sc_parallel_defaults(&p);
  p.micro_batch = 1;
  p.global_batch = 1;
  p.seq_len = 1024;
  sc_predict_opts_defaults(&o);
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r0, NULL, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_str_eq(r0.stack, "");
  ck_assert(load("empty.toml", &none, &err) == SC_OK);
  o.stack = &none;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r1, NULL, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_str_eq(r1.stack, "nothing");
  ck_assert(r1.iteration_s == r0.iteration_s);
  /* 1 ms a kernel, one kernel an operator: the passes are the host's, the GPU's last
   * operator of each pass after it */
  ck_assert(load("host_only.toml", &host, &err) == SC_OK);
  o.stack = &host;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r2, NULL, &err) == SC_OK, "%s",
                err.msg);
  sc_stage_work *w = malloc(sizeof *w);
  ck_assert(w != NULL);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, w, &err) == SC_OK, "%s", err.msg);
  double kernels = 0;
  for (int ph = 0; ph < SC_PHASE_COUNT; ph++) {
    const sc_work_list *l = ph == SC_PHASE_OPTIMIZER ? &w->per_iter : &w->per_micro[ph];
    for (uint32_t i = 0; i < l->nops; i++) kernels += l->ops[i].repeat;
  }
  free(w);
  /* a stack with its own attention rates on this device, then none again: the registry's
   * memo (which knows a device by its name) must not hand the second call the first's */
  sc_stack att;
  sc_result r3, r4;
  ck_assert(load("good.toml", &att, &err) == SC_OK);
  o.stack = &att;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r3, NULL, &err) == SC_OK, "%s",
                err.msg);
  o.stack = NULL;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r4, NULL, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_msg(r4.iteration_s == r0.iteration_s, "after a stack: %.17g, before: %.17g",
                r4.iteration_s, r0.iteration_s);
  ck_assert(r3.iteration_s != r0.iteration_s);
  double host_s = kernels * 1e-3;
  ck_assert_msg(r2.iteration_s >= 0.999 * host_s && r2.iteration_s < host_s + r0.iteration_s,
                "iteration %g s, host %g s (%g kernels), GPU alone %g s", r2.iteration_s,
                host_s, kernels, r0.iteration_s);
  sc_predictor_free(pr);
  sc_registry_free(reg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stack");
  TCase *tc = tcase_create("stack");
  tcase_add_test(tc, test_load_good);
  tcase_add_test(tc, test_load_by_name);
  tcase_add_test(tc, test_overlap_defaults);
  tcase_add_test(tc, test_load_bad);
  tcase_add_test(tc, test_stream);
  tcase_add_test(tc, test_gpu_and_host_time);
  tcase_add_test(tc, test_unaligned_gemm);
  tcase_add_test(tc, test_vocab_padding);
  tcase_add_test(tc, test_predict_with_stack);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
