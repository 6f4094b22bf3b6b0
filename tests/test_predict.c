/* sc_predict (core/src/predict/predict.c) end to end: a small GPT-style model built in code,
 * the shipped DGX A100 SuperPOD topology and A100 80 GB hardware file, the built-in plugins. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "fixtures.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

static sc_registry *reg;
static sc_predictor *pr;
static sc_topology topo;
static sc_device dev;

static void setup(void) {
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_topology_load("dgx-a100-superpod", &topo, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(reg, topo.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(reg, &pr, &err) == SC_OK, "%s", err.msg);
}

static void teardown(void) {
  sc_predictor_free(pr);
  sc_registry_free(reg);
  pr = NULL;
  reg = NULL;
}

/* A GPT-2-medium-like model (tests/fixtures.h), untied embeddings. */
static void small_model(sc_model *m, int64_t layers) {
  sc_test_gpt_model(m, "test-small", layers, 0);
}

static void par(sc_parallel *p, uint32_t tp, uint32_t pp, uint32_t dp, uint32_t gb) {
  sc_parallel_defaults(p);
  p->tp = tp;
  p->pp = pp;
  p->dp = dp;
  p->micro_batch = 1;
  p->global_batch = gb;
  p->seq_len = 1024;
}

static double predict_ok(const sc_model *m, const sc_parallel *p, sc_result *res) {
  sc_predict_opts o;
  sc_error err;
  sc_predict_opts_defaults(&o);
  sc_error_clear(&err);
  ck_assert_msg(sc_predict(pr, m, &topo, &dev, p, &o, res, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert(isfinite(res->iteration_s) && res->iteration_s > 0);
  return res->iteration_s;
}

/* Every term of the breakdown, and the renderers' term list, sum to the iteration time. */
START_TEST(breakdown_sums) {
  sc_model m;
  sc_parallel p;
  sc_result r;
  sc_report_term terms[64];
  small_model(&m, 8);
  par(&p, 2, 2, 2, 64);
  predict_ok(&m, &p, &r);
  const sc_sched_breakdown *b = &r.breakdown;
  double sum = b->compute_fwd_s + b->compute_recompute_s + b->compute_bwd_s + b->tp_exposed_s +
               b->cp_exposed_s + b->dp_exposed_s + b->p2p_exposed_s + b->bubble_s +
               b->optimizer_s;
  ck_assert_double_eq_tol(sum, r.iteration_s, 1e-9 * r.iteration_s);
  size_t n = sc_report_terms(b, terms, 64);
  ck_assert_uint_gt(n, 3);
  sum = 0;
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(terms[i].seconds >= 0, "%s negative", terms[i].key);
    sum += terms[i].seconds;
  }
  ck_assert_double_eq_tol(sum, r.iteration_s, 1e-9 * r.iteration_s);
  /* pp = 2 has a bubble; tp = 2 without overlap exposes TP communication. */
  ck_assert_double_gt(b->bubble_s, 0);
  ck_assert_double_gt(b->tp_exposed_s, 0);
  ck_assert_uint_eq(r.gpus, 8);
  ck_assert_uint_eq(r.microbatches, 32);
}
END_TEST

/* pp = 1, dp = 1: the iteration is M identical micro-batches then the optimizer, so
 * t(2B) = 2 t(B) - (per-iteration work); the per-iteration work is the optimizer here. */
START_TEST(double_batch) {
  sc_model m;
  sc_parallel p;
  sc_result r1, r2;
  small_model(&m, 4);
  par(&p, 1, 1, 1, 32);
  double t1 = predict_ok(&m, &p, &r1);
  p.global_batch = 64;
  double t2 = predict_ok(&m, &p, &r2);
  double ratio = t2 / t1;
  ck_assert_msg(ratio > 1.9 && ratio <= 2.0 + 1e-12, "ratio %.6f", ratio);
  ck_assert_double_eq_tol(2 * t1 - t2, r1.breakdown.optimizer_s + r1.breakdown.dp_exposed_s,
                          1e-9 * t1);
  ck_assert_double_eq_tol(r2.breakdown.optimizer_s, r1.breakdown.optimizer_s, 1e-12 * t1);
}
END_TEST

/* Sharded data parallelism end to end on two DGX A100 nodes (16 GPUs, dp 16): ZeRO-3's
 * per-pass gathers and reduce-scatters are exposed without overlap and mostly hidden with
 * it; HSDP with shards of one node's 8 GPUs gathers over NVLink and so exposes less than
 * shards spanning both nodes (over InfiniBand); the breakdown still sums to the iteration;
 * memory per GPU falls with each stage. */
static double sum_terms(const sc_result *r) {
  const sc_sched_breakdown *b = &r->breakdown;
  return b->compute_fwd_s + b->compute_recompute_s + b->compute_bwd_s + b->tp_exposed_s +
         b->cp_exposed_s + b->dp_exposed_s + b->p2p_exposed_s + b->bubble_s + b->optimizer_s;
}

START_TEST(zero_stages) {
  sc_model m;
  sc_parallel p;
  sc_result r0, r1, r3, r3o, rh;
  small_model(&m, 8);
  par(&p, 1, 1, 16, 64);
  predict_ok(&m, &p, &r0);
  p.distributed_optimizer = 1;
  predict_ok(&m, &p, &r1);
  p.zero_stage = 3;
  double t3 = predict_ok(&m, &p, &r3);
  p.overlap_param_gather = p.overlap_grad_reduce = 1;
  double t3o = predict_ok(&m, &p, &r3o);
  p.shard_size = 8;
  predict_ok(&m, &p, &rh);
  p.overlap_param_gather = p.overlap_grad_reduce = 0;
  double th = predict_ok(&m, &p, &rh);
  ck_assert_double_gt(r3.breakdown.dp_exposed_s, r1.breakdown.dp_exposed_s);
  ck_assert_double_lt(t3o, t3);
  ck_assert_double_lt(r3o.breakdown.dp_exposed_s, 0.5 * r3.breakdown.dp_exposed_s);
  ck_assert_double_lt(th, t3);
  const sc_result *all[] = {&r0, &r1, &r3, &r3o, &rh};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    ck_assert_double_eq_tol(sum_terms(all[i]), all[i]->iteration_s,
                            1e-9 * all[i]->iteration_s);
  ck_assert_double_lt(r1.memory.total_bytes, r0.memory.total_bytes);
  ck_assert_double_lt(r3.memory.total_bytes, r1.memory.total_bytes);
  ck_assert_double_gt(rh.memory.total_bytes, r3.memory.total_bytes);
}
END_TEST

static void predict_fails(const sc_model *m, const sc_parallel *p, int code, const char *name) {
  sc_predict_opts o;
  sc_error err;
  sc_result r;
  sc_predict_opts_defaults(&o);
  sc_error_clear(&err);
  ck_assert_int_eq(sc_predict(pr, m, &topo, &dev, p, &o, &r, NULL, &err), code);
  ck_assert_msg(strstr(err.msg, name) != NULL, "'%s' lacks '%s'", err.msg, name);
}

START_TEST(impossible) {
  sc_model m, big;
  sc_parallel p;
  small_model(&m, 4);
  par(&p, 3, 1, 1, 8); /* 3 does not divide 16 heads */
  predict_fails(&m, &p, SC_ECONFIG, "tp");
  par(&p, 1, 1, 2, 7); /* 7 sequences over dp 2 */
  predict_fails(&m, &p, SC_ECONFIG, "global");
  par(&p, 1, 8, 1, 8); /* 8 stages for 4 layers */
  predict_fails(&m, &p, SC_ECONFIG, "pp");
  /* GPT-3 175B shape on one GPU: 16 B/param of weights, gradients and Adam state alone is
   * 2.8 TB, far over 80 GB. */
  memset(&big, 0, sizeof big);
  snprintf(big.name, sizeof big.name, "test-175b");
  big.layers = 96;
  big.hidden = 12288;
  big.ffn_hidden = 49152;
  big.heads = 96;
  big.vocab = 50257;
  big.max_seq = 2048;
  big.linear_bias = 1;
  {
    sc_error err;
    sc_error_clear(&err);
    ck_assert_msg(sc_model_finish(&big, &err) == SC_OK, "%s", err.msg);
  }
  par(&p, 1, 1, 1, 1);
  p.seq_len = 2048;
  predict_fails(&big, &p, SC_ENOFIT, "memory");
  /* allow_oom predicts anyway. */
  {
    sc_predict_opts o;
    sc_error err;
    sc_result r;
    sc_predict_opts_defaults(&o);
    o.allow_oom = 1;
    sc_error_clear(&err);
    ck_assert_msg(sc_predict(pr, &big, &topo, &dev, &p, &o, &r, NULL, &err) == SC_OK, "%s",
                  err.msg);
    ck_assert_double_gt(r.memory.total_bytes, dev.mem_bytes);
  }
}
END_TEST

static double list_time(const sc_work_list *l, uint32_t layers) {
  double t = 0;
  for (uint32_t i = 0; i < l->nops; i++) {
    sc_estimate e;
    sc_error err;
    sc_error_clear(&err);
    memset(&e, 0, sizeof e);
    ck_assert_msg(sc_registry_estimate_op(reg, &dev, &l->ops[i].desc, &e, &err) == SC_OK,
                  "%s: %s", l->ops[i].label, err.msg);
    t += e.time_s * l->ops[i].repeat * (l->ops[i].where == SC_WHERE_LAYER ? layers : 1);
  }
  return t;
}

/* One layer, one GPU, one micro-batch: nothing to overlap, no communication, no bubble;
 * the iteration is the forward, the backward and the optimizer step, each the sum of the
 * plugin estimates of its operators. */
START_TEST(hand_checked) {
  sc_model m;
  sc_parallel p;
  sc_result r;
  sc_stage_work *w = malloc(sizeof *w);
  sc_error err;
  ck_assert_ptr_nonnull(w);
  small_model(&m, 1);
  par(&p, 1, 1, 1, 1);
  sc_error_clear(&err);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, w, &err) == SC_OK, "%s", err.msg);
  double fwd = list_time(&w->per_micro[SC_PHASE_FWD], w->layers);
  double bwd = list_time(&w->per_micro[SC_PHASE_BWD], w->layers);
  double opt = list_time(&w->per_iter, w->layers);
  ck_assert_uint_eq(w->per_micro[SC_PHASE_RECOMPUTE].nops, 0);
  predict_ok(&m, &p, &r);
  ck_assert_double_eq_tol(r.breakdown.compute_fwd_s, fwd, 1e-9 * fwd);
  ck_assert_double_eq_tol(r.breakdown.compute_bwd_s, bwd, 1e-9 * bwd);
  ck_assert_double_eq_tol(r.breakdown.optimizer_s, opt, 1e-9 * opt);
  ck_assert_double_eq_tol(r.iteration_s, fwd + bwd + opt, 1e-9 * (fwd + bwd + opt));
  ck_assert_double_eq(r.breakdown.bubble_s, 0);
  ck_assert_double_eq(r.breakdown.tp_exposed_s + r.breakdown.dp_exposed_s +
                          r.breakdown.p2p_exposed_s + r.breakdown.cp_exposed_s, 0);
  free(w);
}
END_TEST

/* Transformer Engine's TP overlap (overlap_tp_comm with sequence parallelism) is not free:
 * a pipelined reduce-scatter's last chunk stays exposed and its SMs slow the GEMM beside
 * it, the ring exchange runs each GEMM in tp pieces; so with it on, exposed TP
 * communication is above 0 and below all of it, and the compute grows. */
START_TEST(te_overlap_costs) {
  sc_model m;
  sc_parallel p;
  sc_result on, off;
  small_model(&m, 2);
  par(&p, 4, 1, 1, 1);
  p.sequence_parallel = 1;
  p.overlap_tp_comm = 0;
  predict_ok(&m, &p, &off);
  p.overlap_tp_comm = 1;
  predict_ok(&m, &p, &on);
  ck_assert_double_gt(off.breakdown.tp_exposed_s, 0.0);
  ck_assert_double_gt(on.breakdown.tp_exposed_s, 0.0);
  ck_assert_double_lt(on.breakdown.tp_exposed_s, off.breakdown.tp_exposed_s);
  ck_assert_double_gt(on.breakdown.compute_fwd_s, off.breakdown.compute_fwd_s);
  ck_assert_double_gt(on.breakdown.compute_bwd_s, off.breakdown.compute_bwd_s);
  /* a device whose SM count is unknown loses no GEMM time to the communication's SMs, and
   * its ring pieces still cost what the plugins say they do */
  sc_device keep = dev;
  dev.compute_units = 0;
  sc_result nosm;
  predict_ok(&m, &p, &nosm);
  dev = keep;
  ck_assert_double_lt(nosm.breakdown.compute_bwd_s, on.breakdown.compute_bwd_s);
}
END_TEST

/* ZB-H1 takes each backward's W from the workload: on one stage and one micro-batch its W
 * pass lasts exactly the plugin estimates of the stage's weight-gradient GEMMs (the labels
 * ending in ".wgrad", the output layer's included), the B pass the rest of the backward,
 * and the iteration is 1F1B's (nothing to overlap). */
START_TEST(zb_wgrad_split) {
  sc_model m;
  sc_parallel p;
  sc_result r;
  sc_sched_result sr;
  sc_predict_opts o;
  sc_stage_work *w = malloc(sizeof *w);
  sc_error err;
  ck_assert_ptr_nonnull(w);
  small_model(&m, 1);
  par(&p, 1, 1, 1, 1);
  sc_error_clear(&err);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, w, &err) == SC_OK, "%s", err.msg);
  const sc_work_list *bl = &w->per_micro[SC_PHASE_BWD];
  double wgrad = 0.0, bwd = list_time(bl, w->layers);
  int nw = 0;
  for (uint32_t i = 0; i < bl->nops; i++) {
    const char *lb = bl->ops[i].label;
    size_t n = strlen(lb);
    if (n < 6 || strcmp(lb + n - 6, ".wgrad") != 0) continue;
    sc_estimate e;
    memset(&e, 0, sizeof e);
    ck_assert(sc_registry_estimate_op(reg, &dev, &bl->ops[i].desc, &e, &err) == SC_OK);
    wgrad += e.time_s * bl->ops[i].repeat;
    nw++;
  }
  ck_assert_int_eq(nw, 5); /* qkv, attention projection, fc1, fc2, logits */
  ck_assert_double_gt(wgrad, 0.2 * bwd);
  ck_assert_double_lt(wgrad, 0.8 * bwd);
  double t1 = predict_ok(&m, &p, &r);
  p.schedule = SC_SCHED_ZB_H1;
  sc_predict_opts_defaults(&o);
  o.record_timeline = 1;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r, &sr, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_eq_tol(r.iteration_s, t1, 1e-9 * t1);
  double tw = 0.0, tb = 0.0;
  for (size_t i = 0; i < sr.nintervals; i++) {
    const sc_sched_interval *v = &sr.intervals[i];
    if (v->kind == SC_IV_WGRAD) tw += v->end_s - v->start_s;
    if (v->kind == SC_IV_BACKWARD) tb += v->end_s - v->start_s;
  }
  ck_assert_double_eq_tol(tw, wgrad, 1e-9 * wgrad);
  ck_assert_double_eq_tol(tb, bwd - wgrad, 1e-9 * bwd);
  free(w);
}
END_TEST

/* DualPipe: every rank steps the optimizer of both stage copies it holds (1F1B's two
 * stages' steps, on each of the two ranks), and holds both copies' model states. */
START_TEST(dualpipe_copies) {
  sc_model m;
  sc_parallel p;
  sc_result r1, r2;
  sc_sched_result s1, s2;
  sc_predict_opts o;
  sc_error err;
  small_model(&m, 8);
  par(&p, 1, 2, 4, 32); /* 8 micro-batches >= 2 pp */
  sc_predict_opts_defaults(&o);
  o.record_timeline = 1;
  sc_error_clear(&err);
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r1, &s1, &err) == SC_OK, "%s", err.msg);
  double opt0 = s1.stages[0].optimizer_s, opt1 = s1.stages[1].optimizer_s;
  double w1 = r1.memory.weights_bytes;
  p.schedule = SC_SCHED_DUALPIPE;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r2, &s2, &err) == SC_OK, "%s", err.msg);
  for (int st = 0; st < 2; st++)
    ck_assert_double_eq_tol(s2.stages[st].optimizer_s, opt0 + opt1, 1e-12 * (opt0 + opt1));
  ck_assert_double_gt(r2.memory.weights_bytes, 1.5 * w1);
  /* an odd number of micro-batches is refused naming the parameter */
  p.global_batch = 36;
  ck_assert_int_eq(sc_predict(pr, &m, &topo, &dev, &p, &o, &r2, &s2, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "global_batch: dualpipe"));
}
END_TEST

static Suite *predict_suite(void) {
  Suite *s = suite_create("predict");
  TCase *tc = tcase_create("predict");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, breakdown_sums);
  tcase_add_test(tc, double_batch);
  tcase_add_test(tc, zero_stages);
  tcase_add_test(tc, impossible);
  tcase_add_test(tc, hand_checked);
  tcase_add_test(tc, te_overlap_costs);
  tcase_add_test(tc, zb_wgrad_split);
  tcase_add_test(tc, dualpipe_copies);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(predict_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
