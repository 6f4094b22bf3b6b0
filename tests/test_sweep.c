/* The design-space sweep (core/src/sweep/): enumeration and skip counters, the fast path
 * against plain sc_predict bit for bit, the top list against one derived here from
 * sc_predict on every candidate, pruning, threads and rank shares agreeing exactly, a
 * hand-argued best configuration, the --vary parser and its errors, and the objectives
 * (time, cost, energy) that order the top list. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "fixtures.h"
#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "stepcast/sweep.h"

#define NREG 3
static sc_registry *regs[NREG];
static sc_predictor *pr;
static sc_topology topo;
static sc_device dev;
static sc_model model;

/* A GPT-2-medium-like model with 12 layers (divisible by pp 1, 2, 3, 4, 6 and by vp 2, 3),
 * tied embeddings so that the first/last-stage gradient all-reduce is exercised. */
static void small_model(sc_model *m) { sc_test_gpt_model(m, "test-sweep", 12, 1); }

static void setup(void) {
  sc_error err;
  sc_error_clear(&err);
  for (int i = 0; i < NREG; i++) {
    ck_assert_msg(sc_registry_new(&regs[i], &err) == SC_OK, "%s", err.msg);
    ck_assert_msg(sc_registry_add_builtins(regs[i], &err) == SC_OK, "%s", err.msg);
  }
  ck_assert_msg(sc_topology_load("perlmutter-gpu", &topo, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(regs[0], topo.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(regs[0], &pr, &err) == SC_OK, "%s", err.msg);
  small_model(&model);
}

static void teardown(void) {
  sc_predictor_free(pr);
  pr = NULL;
  for (int i = 0; i < NREG; i++) {
    sc_registry_free(regs[i]);
    regs[i] = NULL;
  }
}

/* 8 GPUs (two Perlmutter nodes), global batch 16 of 1024 tokens. */
static void small_space(sc_sweep_space *s) {
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_space_defaults(s, &model, 8, 16, 1024, &err) == SC_OK, "%s", err.msg);
}

static uint64_t total(const sc_sweep_result *r) {
  uint64_t n = r->pruned + r->predicted;
  for (int i = 0; i < SC_SWEEP_NSKIP; i++) n += r->skipped[i];
  return n;
}

/* Bitwise equality of two doubles (so that -0.0 / NaN cannot hide a difference). */
#define SAME(a, b, what, idx)                                                                \
  do {                                                                                       \
    double _a = (a), _b = (b);                                                               \
    ck_assert_msg(memcmp(&_a, &_b, sizeof _a) == 0, "index %llu: %s %.17g != %.17g",          \
                  (unsigned long long)(idx), what, _a, _b);                                  \
  } while (0)

static void same_result(const sc_result *a, const sc_result *b, uint64_t idx) {
  SAME(a->iteration_s, b->iteration_s, "iteration_s", idx);
  SAME(a->model_flops, b->model_flops, "model_flops", idx);
  SAME(a->hardware_flops, b->hardware_flops, "hardware_flops", idx);
  SAME(a->peak_flops_per_s, b->peak_flops_per_s, "peak", idx);
  SAME(a->mfu, b->mfu, "mfu", idx);
  SAME(a->hfu, b->hfu, "hfu", idx);
  SAME(a->tokens_per_s, b->tokens_per_s, "tokens_per_s", idx);
  SAME(a->memory.weights_bytes, b->memory.weights_bytes, "weights", idx);
  SAME(a->memory.grads_bytes, b->memory.grads_bytes, "grads", idx);
  SAME(a->memory.optimizer_bytes, b->memory.optimizer_bytes, "optimizer", idx);
  SAME(a->memory.activations_bytes, b->memory.activations_bytes, "activations", idx);
  SAME(a->memory.total_bytes, b->memory.total_bytes, "memory total", idx);
  const sc_sched_breakdown *x = &a->breakdown, *y = &b->breakdown;
  ck_assert_uint_eq(x->stage, y->stage);
  SAME(x->end_s, y->end_s, "end_s", idx);
  SAME(x->compute_fwd_s, y->compute_fwd_s, "compute_fwd", idx);
  SAME(x->compute_recompute_s, y->compute_recompute_s, "compute_recompute", idx);
  SAME(x->compute_bwd_s, y->compute_bwd_s, "compute_bwd", idx);
  SAME(x->tp_exposed_s, y->tp_exposed_s, "tp", idx);
  SAME(x->cp_exposed_s, y->cp_exposed_s, "cp", idx);
  SAME(x->dp_exposed_s, y->dp_exposed_s, "dp", idx);
  SAME(x->p2p_exposed_s, y->p2p_exposed_s, "p2p", idx);
  SAME(x->bubble_s, y->bubble_s, "bubble", idx);
  SAME(x->optimizer_s, y->optimizer_s, "optimizer_s", idx);
  ck_assert_uint_eq(x->nfamilies, y->nfamilies);
  for (uint32_t f = 0; f < x->nfamilies; f++) {
    ck_assert_str_eq(x->family_names[f], y->family_names[f]);
    SAME(x->family_s[f], y->family_s[f], x->family_names[f], idx);
  }
  ck_assert_str_eq(a->model, b->model);
  ck_assert_str_eq(a->topology, b->topology);
  ck_assert_str_eq(a->hardware, b->hardware);
  ck_assert_uint_eq(a->parallel.tp, b->parallel.tp);
  ck_assert_uint_eq(a->parallel.pp, b->parallel.pp);
  ck_assert_uint_eq(a->parallel.dp, b->parallel.dp);
  ck_assert_uint_eq(a->parallel.cp, b->parallel.cp);
  ck_assert_uint_eq(a->parallel.micro_batch, b->parallel.micro_batch);
  ck_assert_uint_eq(a->parallel.virtual_stages, b->parallel.virtual_stages);
  ck_assert_int_eq(a->parallel.schedule, b->parallel.schedule);
  ck_assert_int_eq(a->parallel.recompute, b->parallel.recompute);
  ck_assert_int_eq(a->parallel.sequence_parallel, b->parallel.sequence_parallel);
  ck_assert_int_eq(a->parallel.distributed_optimizer, b->parallel.distributed_optimizer);
  ck_assert_uint_eq(a->parallel.zero_stage, b->parallel.zero_stage);
}

/* Every predicted configuration, by index. */
typedef struct seen {
  uint64_t n;
  uint8_t *got;
  sc_result *res;
} seen;

static int visit(void *ud, uint32_t thread, uint64_t unit, uint64_t index, const sc_result *r) {
  seen *s = ud;
  (void)thread;
  (void)unit;
  ck_assert_uint_lt(index, s->n);
  ck_assert_uint_eq(s->got[index], 0);
  s->got[index] = 1;
  s->res[index] = *r;
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  const sc_sweep_entry *x = a, *y = b;
  if (x->result.iteration_s != y->result.iteration_s)
    return x->result.iteration_s < y->result.iteration_s ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static void same_top(const sc_sweep_result *a, const sc_sweep_result *b) {
  ck_assert_uint_eq(a->ntop, b->ntop);
  for (uint32_t i = 0; i < a->ntop; i++) {
    ck_assert_uint_eq(a->top[i].index, b->top[i].index);
    same_result(&a->top[i].result, &b->top[i].result, a->top[i].index);
  }
  for (int i = 0; i < SC_SWEEP_NSKIP; i++) ck_assert_uint_eq(a->skipped[i], b->skipped[i]);
  ck_assert_uint_eq(a->pruned + a->predicted, b->pruned + b->predicted);
}

/* The fast path against sc_predict on every point of the space, and the skip counters
 * against what sc_predict says of each point. */
START_TEST(fast_equals_predict) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r;
  sc_error err;
  small_space(&s);
  uint64_t n = sc_sweep_space_size(&s);
  /* 4 tp x 4 pp x 4 cp x 5 mb x 7 schedules x 3 x 2 x 2 */
  ck_assert_uint_eq(n, 4ull * 4 * 4 * 5 * 7 * 3 * 2 * 2);
  seen sn = {n, calloc(n, 1), calloc(n, sizeof(sc_result))};
  ck_assert_ptr_nonnull(sn.got);
  ck_assert_ptr_nonnull(sn.res);
  sc_sweep_opts_defaults(&o);
  o.visit = visit;
  o.visit_ud = &sn;
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_uint_eq(r.space, n);
  ck_assert_uint_eq(r.considered, n);
  ck_assert_uint_eq(total(&r), n);
  ck_assert_uint_eq(r.pruned, 0); /* a visitor turns pruning off */
  ck_assert_uint_gt(r.predicted, 100);
  uint64_t ok = 0, dup = 0;
  for (uint64_t i = 0; i < n; i++) {
    sc_parallel p;
    sc_result want;
    ck_assert(sc_sweep_config(&s, i, &p, &err) == SC_OK);
    int rc = (p.dp == 0) ? SC_ECONFIG
                         : sc_predict(pr, &model, &topo, &dev, &p, NULL, &want, NULL, &err);
    if (sn.got[i]) {
      ck_assert_msg(rc == SC_OK, "index %llu: sweep predicted, sc_predict: %s",
                    (unsigned long long)i, err.msg);
      same_result(&sn.res[i], &want, i);
      ok++;
    } else if (rc == SC_OK) {
      /* a valid point the sweep skipped must be a duplicate of another */
      ck_assert_msg((p.sequence_parallel && p.tp == 1) ||
                        (p.distributed_optimizer && p.dp * p.cp == 1),
                    "index %llu: sc_predict succeeds but the sweep skipped it",
                    (unsigned long long)i);
      dup++;
    }
  }
  ck_assert_uint_eq(ok, r.predicted);
  ck_assert_uint_eq(dup, r.skipped[SC_SWEEP_SKIP_DUPLICATE]);

  /* The top list from sc_predict on every candidate, sorted by (time, index). */
  sc_sweep_entry *all = calloc(ok, sizeof *all);
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++)
    if (sn.got[i]) {
      all[k].index = i;
      all[k].result = sn.res[i];
      k++;
    }
  qsort(all, k, sizeof *all, cmp_entry);
  ck_assert_uint_eq(r.ntop, 10);
  for (uint32_t i = 0; i < r.ntop; i++) {
    ck_assert_uint_eq(r.top[i].index, all[i].index);
    same_result(&r.top[i].result, &all[i].result, all[i].index);
  }
  /* Pruned: the same top list, the same skips, fewer simulations. */
  sc_sweep_result q;
  o.visit = NULL;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &q, &err) == SC_OK);
  same_top(&q, &r);
  ck_assert_uint_gt(q.pruned, 0);
  ck_assert_uint_eq(total(&q), n);
  /* Exact mode (sc_predict for every point): the same again. */
  sc_sweep_result e;
  o.exact = 1;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &e, &err) == SC_OK);
  same_top(&e, &r);
  ck_assert_uint_eq(e.pruned, 0);
  sc_sweep_result_free(&e);
  sc_sweep_result_free(&q);
  sc_sweep_result_free(&r);
  free(all);
  free(sn.got);
  free(sn.res);
}
END_TEST

/* The sharding dimension as ZeRO stages 0-3, with the overlap switches on (prefetching
 * hides part of ZeRO-3's per-pass gathers): the fast path gives sc_predict's numbers on
 * every point, and the pruned search the same top list. */
START_TEST(fast_equals_predict_zero) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r, q;
  sc_error err;
  small_space(&s);
  s.ntp = s.ncp = 1;
  s.tp[0] = s.cp[0] = 1;
  s.nsched = 1;
  s.ndo = 4;
  for (int i = 0; i < 4; i++) s.dopt[i] = i;
  s.base.overlap_grad_reduce = s.base.overlap_param_gather = 1;
  uint64_t n = sc_sweep_space_size(&s);
  seen sn = {n, calloc(n, 1), calloc(n, sizeof(sc_result))};
  ck_assert_ptr_nonnull(sn.got);
  ck_assert_ptr_nonnull(sn.res);
  sc_sweep_opts_defaults(&o);
  o.visit = visit;
  o.visit_ud = &sn;
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err) == SC_OK, "%s",
                err.msg);
  uint64_t ok = 0, z3 = 0;
  for (uint64_t i = 0; i < n; i++) {
    sc_parallel p;
    sc_result want;
    ck_assert(sc_sweep_config(&s, i, &p, &err) == SC_OK);
    if (!sn.got[i]) continue;
    ck_assert_msg(sc_predict(pr, &model, &topo, &dev, &p, NULL, &want, NULL, &err) == SC_OK,
                  "%s", err.msg);
    same_result(&sn.res[i], &want, i);
    ok++;
    if (p.zero_stage == 3 && p.dp > 1) z3++;
  }
  ck_assert_uint_eq(ok, r.predicted);
  ck_assert_uint_gt(z3, 0);
  o.visit = NULL;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &q, &err) == SC_OK);
  same_top(&q, &r);
  sc_sweep_result_free(&q);
  /* a stage beyond 3 is refused, naming it */
  s.dopt[3] = 4;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &q, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "zero: 4"));
  sc_sweep_result_free(&r);
  free(sn.got);
  free(sn.res);
}
END_TEST

/* ZB-H1 and DualPipe on the fast path: sc_predict's numbers on every point (the W split,
 * DualPipe's two stage copies, their optimizer steps and gradient all-reduce, the memory of
 * every ZB-H1 stage), DualPipe's impossible points skipped as "schedule" (sc_predict refuses
 * them too), and the pruned search's top list the same. */
START_TEST(fast_equals_predict_zb) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r, q;
  sc_error err;
  small_space(&s);
  s.ncp = 1;
  s.cp[0] = 1;
  s.nsched = 3;
  s.sched[0] = (sc_sweep_sched){SC_SCHED_1F1B, 1};
  s.sched[1] = (sc_sweep_sched){SC_SCHED_ZB_H1, 1};
  s.sched[2] = (sc_sweep_sched){SC_SCHED_DUALPIPE, 1};
  s.ndo = 1;
  s.base.overlap_grad_reduce = 1;
  uint64_t n = sc_sweep_space_size(&s);
  seen sn = {n, calloc(n, 1), calloc(n, sizeof(sc_result))};
  ck_assert_ptr_nonnull(sn.got);
  ck_assert_ptr_nonnull(sn.res);
  sc_sweep_opts_defaults(&o);
  o.visit = visit;
  o.visit_ud = &sn;
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err) == SC_OK, "%s",
                err.msg);
  uint64_t ok = 0, kinds[3] = {0, 0, 0}, refused = 0;
  for (uint64_t i = 0; i < n; i++) {
    sc_parallel p;
    sc_result want;
    ck_assert(sc_sweep_config(&s, i, &p, &err) == SC_OK);
    int rc = (p.dp == 0) ? SC_ECONFIG
                         : sc_predict(pr, &model, &topo, &dev, &p, NULL, &want, NULL, &err);
    if (!sn.got[i]) {
      if (rc == SC_OK)
        ck_assert_msg(p.sequence_parallel && p.tp == 1, "index %llu: skipped, predictable",
                      (unsigned long long)i);
      else if (p.dp != 0 && p.schedule == SC_SCHED_DUALPIPE && strstr(err.msg, "dualpipe"))
        refused++;
      continue;
    }
    ck_assert_msg(rc == SC_OK, "%s", err.msg);
    same_result(&sn.res[i], &want, i);
    ok++;
    kinds[p.schedule == SC_SCHED_1F1B ? 0 : p.schedule == SC_SCHED_ZB_H1 ? 1 : 2]++;
  }
  ck_assert_uint_eq(ok, r.predicted);
  ck_assert_uint_gt(kinds[1], 10);
  ck_assert_uint_gt(kinds[2], 10);
  ck_assert_uint_gt(refused, 0);
  ck_assert_uint_gt(r.skipped[SC_SWEEP_SKIP_SCHEDULE], 0);
  o.visit = NULL;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &q, &err) == SC_OK);
  same_top(&q, &r);
  sc_sweep_result_free(&q);
  sc_sweep_result_free(&r);
  free(sn.got);
  free(sn.res);
}
END_TEST

/* Threads and rank shares give the serial answer exactly. */
START_TEST(threads_and_ranks_agree) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result serial, thr, merged;
  sc_error err;
  small_space(&s);
  sc_sweep_opts_defaults(&o);
  o.top_k = 7;
  sc_error_clear(&err);
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &serial, &err) == SC_OK);
  ck_assert_msg(sc_sweep_run(regs, 3, &model, &topo, &dev, &s, &o, &thr, &err) == SC_OK, "%s",
                err.msg);
  same_top(&thr, &serial);
  ck_assert_uint_eq(total(&thr), serial.space);
  memset(&merged, 0, sizeof merged);
  merged.top_k = o.top_k;
  merged.space = serial.space;
  o.nranks = 3;
  for (uint32_t rk = 0; rk < 3; rk++) {
    sc_sweep_result part;
    o.rank = rk;
    ck_assert(sc_sweep_run(regs, 2, &model, &topo, &dev, &s, &o, &part, &err) == SC_OK);
    ck_assert_uint_lt(part.considered, serial.space);
    ck_assert(sc_sweep_result_merge(&merged, &part, &err) == SC_OK);
    sc_sweep_result_free(&part);
  }
  same_top(&merged, &serial);
  ck_assert_uint_eq(merged.considered, serial.space);
  sc_sweep_result_free(&merged);
  sc_sweep_result_free(&thr);
  sc_sweep_result_free(&serial);
}
END_TEST

/* Hand-argued: with one GPU, no pipeline and nothing to split, the only choices left are
 * micro-batch 1..4 and recomputation. Recomputation only adds forward work (the same
 * communication, none; memory fits either way for this 0.2B-parameter model), so the best
 * point has recompute none; and among micro-batches the sweep must agree with predicting
 * each. */
START_TEST(hand_argued_best) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r;
  sc_error err;
  small_space(&s);
  s.gpus = 1;
  s.ntp = s.npp = s.ncp = 1;
  s.tp[0] = s.pp[0] = s.cp[0] = 1;
  s.nmb = 4;
  for (uint32_t i = 0; i < 4; i++) s.mb[i] = i + 1; /* 3 does not divide 16 */
  s.nsched = 1;
  s.sched[0] = (sc_sweep_sched){SC_SCHED_1F1B, 1};
  s.base.global_batch = 16;
  sc_sweep_opts_defaults(&o);
  o.top_k = 100;
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err) == SC_OK, "%s",
                err.msg);
  /* 4 mb x 3 recompute x 2 sp x 2 dopt = 48: mb 3 (12 points) does not divide the batch,
   * sp with tp 1 and dopt with dp 1 are duplicates (27 of the other 36), 9 predicted. */
  ck_assert_uint_eq(r.space, 48);
  ck_assert_uint_eq(r.skipped[SC_SWEEP_SKIP_BATCH], 12);
  ck_assert_uint_eq(r.skipped[SC_SWEEP_SKIP_DUPLICATE], 27);
  ck_assert_uint_eq(r.predicted, 9);
  ck_assert_int_eq(r.top[0].result.parallel.recompute, SC_RECOMPUTE_NONE);
  /* The best by hand: predict the three recompute-none points and take the fastest. */
  double best = INFINITY;
  uint32_t best_mb = 0;
  for (uint32_t mb = 1; mb <= 4; mb++) {
    if (mb == 3) continue;
    sc_parallel p = s.base;
    sc_result x;
    p.tp = p.pp = p.dp = p.cp = 1;
    p.micro_batch = mb;
    ck_assert(sc_predict(pr, &model, &topo, &dev, &p, NULL, &x, NULL, &err) == SC_OK);
    if (x.iteration_s < best) {
      best = x.iteration_s;
      best_mb = mb;
    }
    /* and full recomputation is slower than none at every micro-batch */
    p.recompute = SC_RECOMPUTE_FULL;
    sc_result y;
    ck_assert(sc_predict(pr, &model, &topo, &dev, &p, NULL, &y, NULL, &err) == SC_OK);
    ck_assert(y.iteration_s > x.iteration_s);
  }
  ck_assert(r.top[0].result.iteration_s == best);
  ck_assert_uint_eq(r.top[0].result.parallel.micro_batch, best_mb);
  /* top list ascending */
  for (uint32_t i = 1; i < r.ntop; i++)
    ck_assert(r.top[i - 1].result.iteration_s <= r.top[i].result.iteration_s);
  sc_sweep_result_free(&r);
}
END_TEST

START_TEST(bad_arguments) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r;
  sc_error err;
  sc_parallel p;
  small_space(&s);
  sc_sweep_opts_defaults(&o);
  sc_error_clear(&err);
  o.top_k = 0;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "top"));
  o.top_k = 5;
  o.rank = 2;
  o.nranks = 2;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err), SC_EINVAL);
  o.rank = 0;
  o.nranks = 1;
  s.ntp = 0;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "tp"));
  small_space(&s);
  s.mb[0] = 0;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s, &o, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "micro-batch"));
  small_space(&s);
  ck_assert_int_eq(sc_sweep_run(regs, 0, &model, &topo, &dev, &s, &o, &r, &err), SC_EINVAL);
  ck_assert_int_eq(sc_sweep_config(&s, sc_sweep_space_size(&s), &p, &err), SC_ERANGE);
  ck_assert_int_eq(sc_sweep_space_defaults(&s, &model, 0, 16, 0, &err), SC_EINVAL);
  ck_assert_int_eq(sc_sweep_space_defaults(&s, &model, 8, 0, 0, &err), SC_EINVAL);
  sc_device d2 = dev;
  small_space(&s);
  s.base.dtype = SC_DTYPE_INT8;
  d2.peak_flops_per_s[SC_DTYPE_INT8] = 0;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &d2, &s, &o, &r, &err),
                   SC_EUNSUPPORTED);
  /* merging different top sizes */
  sc_sweep_result a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.top_k = 3;
  b.top_k = 4;
  ck_assert_int_eq(sc_sweep_result_merge(&a, &b, &err), SC_EINVAL);
  ck_assert_str_eq(sc_sweep_skip_name(SC_SWEEP_SKIP_MEMORY), "memory");
  ck_assert_str_eq(sc_sweep_skip_name(SC_SWEEP_NSKIP), "?");
}
END_TEST

/* A too-large model on one GPU: every point is skipped for memory (175B does not fit on a
 * 40 GB A100 whatever the micro-batch), and the counters still add up. */
START_TEST(memory_skips) {
  sc_sweep_space s;
  sc_sweep_opts o;
  sc_sweep_result r;
  sc_error err;
  sc_model big;
  sc_error_clear(&err);
  ck_assert_msg(sc_model_load("gpt3-175b", &big, &err) == SC_OK, "%s", err.msg);
  ck_assert(sc_sweep_space_defaults(&s, &big, 4, 8, 0, &err) == SC_OK);
  sc_sweep_opts_defaults(&o);
  ck_assert_msg(sc_sweep_run(regs, 2, &big, &topo, &dev, &s, &o, &r, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_uint_eq(r.predicted + r.pruned, 0);
  ck_assert_uint_gt(r.skipped[SC_SWEEP_SKIP_MEMORY], 0);
  ck_assert_uint_eq(r.ntop, 0);
  ck_assert_uint_eq(total(&r), r.space);
  sc_sweep_result_free(&r);
}
END_TEST

START_TEST(vary_parse_apply) {
  sc_vary v;
  sc_error err;
  sc_device d = dev;
  sc_topology t = topo;
  sc_error_clear(&err);
  ck_assert_msg(sc_vary_parse("hardware.mem_bw_Bps=1x,1.5x,2e12", &v, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_uint_eq(v.nvalues, 3);
  ck_assert_str_eq(v.text[1], "1.5x");
  ck_assert(sc_vary_apply(&v, 1, &d, &t, &err) == SC_OK);
  ck_assert(d.mem_bw_Bps == dev.mem_bw_Bps * 1.5);
  d = dev;
  ck_assert(sc_vary_apply(&v, 2, &d, &t, &err) == SC_OK);
  ck_assert(d.mem_bw_Bps == 2e12);
  ck_assert_int_eq(sc_vary_apply(&v, 3, &d, &t, &err), SC_ERANGE);

  ck_assert(sc_vary_parse("hardware.peak_flops_per_s[bf16]=2x", &v, &err) == SC_OK);
  d = dev;
  ck_assert(sc_vary_apply(&v, 0, &d, &t, &err) == SC_OK);
  ck_assert(d.peak_flops_per_s[SC_DTYPE_BF16] == 2 * dev.peak_flops_per_s[SC_DTYPE_BF16]);
  ck_assert(d.peak_flops_per_s[SC_DTYPE_FP32] == dev.peak_flops_per_s[SC_DTYPE_FP32]);

  ck_assert(sc_vary_parse("topology.tier[1].bw_Bps=0.5x,25e9", &v, &err) == SC_OK);
  ck_assert(sc_vary_apply(&v, 0, &d, &t, &err) == SC_OK);
  ck_assert(t.tiers[1].bw_Bps == topo.tiers[1].bw_Bps * 0.5);
  t = topo;
  ck_assert(sc_vary_parse("topology.tier[7].latency_s=2x", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ERANGE);
  ck_assert_ptr_nonnull(strstr(err.msg, "has tiers 0 to"));
  ck_assert(sc_vary_parse("topology.tier[0].efficiency=1.5", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "efficiency"));
  /* the spec files' ranges: an exponent typo, set or multiplied, is refused */
  ck_assert(sc_vary_parse("hardware.mem_bw_Bps=1e-12", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "--vary hardware.mem_bw_Bps: 1e-12 B/s is outside [1000, 1e+16]"),
                "%s", err.msg);
  ck_assert(sc_vary_parse("hardware.flops_efficiency=1e-300x", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC);
  /* a CPU's figures; a multiplier of one the device does not state (0) is refused */
  ck_assert(sc_vary_parse("hardware.rmw_bw_Bps=2x,4.5e10", &v, &err) == SC_OK);
  d = dev;
  d.rmw_bw_Bps = 4e10;
  ck_assert(sc_vary_apply(&v, 0, &d, &t, &err) == SC_OK);
  ck_assert(d.rmw_bw_Bps == 8e10);
  d.rmw_bw_Bps = 0;
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "--vary hardware.rmw_bw_Bps: 2x of a figure") &&
                    strstr(err.msg, "does not state (0); give an absolute value"), "%s", err.msg);
  ck_assert(sc_vary_apply(&v, 1, &d, &t, &err) == SC_OK);
  ck_assert(d.rmw_bw_Bps == 4.5e10);
  ck_assert(sc_vary_parse("hardware.cache_bw_Bps=0.5x", &v, &err) == SC_OK);
  d.cache_bw_Bps = 1e11;
  ck_assert(sc_vary_apply(&v, 0, &d, &t, &err) == SC_OK);
  ck_assert(d.cache_bw_Bps == 5e10);
  ck_assert(sc_vary_parse("hardware.vector_flops_per_s=1e2", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC); /* below 1e3 FLOP/s */
  d = dev;
  ck_assert(sc_vary_parse("topology.tier[0].latency_s=5", &v, &err) == SC_OK);
  ck_assert_int_eq(sc_vary_apply(&v, 0, &d, &t, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "5 s is outside [0, 1]"), "%s", err.msg);

  static const char *const bad[] = {
      "hardware.mem_bw_Bps",          /* no '=' */
      "=2x",                          /* no field */
      "hardware.bogus=2x",            /* unknown field */
      "hardware.mem_bw_Bps=",         /* empty value */
      "hardware.mem_bw_Bps=1.5y",     /* bad multiplier */
      "hardware.mem_bw_Bps=x",        /* multiplier without a number */
      "hardware.mem_bw_Bps=-2x",      /* negative multiplier */
      "hardware.mem_bw_Bps=0x",       /* zero multiplier */
      "hardware.mem_bw_Bps=1x,,2x",   /* empty value in the list */
      "hardware.peak_flops_per_s[bf17]=2x", /* bad dtype */
      "topology.tier[-1].bw_Bps=2x",  /* bad tier index */
      "topology.tier[a].bw_Bps=2x",
      "topology.tier[1].bogus=2x",
      "topology.tier[1]bw_Bps=2x",
      "network.bw=2x",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sc_error_clear(&err);
    ck_assert_msg(sc_vary_parse(bad[i], &v, &err) == SC_EINVAL, "'%s' accepted", bad[i]);
    ck_assert_msg(strstr(err.msg, "--vary") != NULL && strchr(err.msg, '\n') == NULL,
                  "'%s': %s", bad[i], err.msg);
  }
}
END_TEST

/* Objectives (--objective): within one run (one GPU count) cost and energy order
 * configurations as time does, pruned or not; across GPU counts (runs merged, indices
 * offset as the CLI offsets them) the list is ordered by the objective's figure, whose best
 * is the minimum over every predicted configuration of both counts; the figures are the
 * token budget's GPU-hours times the price and GPUs x board power x time to train. Bad
 * objectives and missing inputs are refused naming "objective". */
static int visit_keep(void *ud, uint32_t thread, uint64_t unit, uint64_t index,
                      const sc_result *r) {
  sc_sweep_result *all = ud;
  (void)thread;
  (void)unit;
  (void)index;
  if (all->ntop < all->top_k) all->top[all->ntop++].result = *r;
  return 0;
}

START_TEST(objectives) {
  sc_sweep_space s4, s8;
  sc_sweep_opts o;
  sc_sweep_result rt, rc, rcn, re, merged, all;
  sc_error err;
  sc_error_clear(&err);
  small_space(&s8);
  ck_assert(sc_sweep_space_defaults(&s4, &model, 4, 16, 1024, &err) == SC_OK);
  sc_sweep_opts_defaults(&o);
  ck_assert_int_eq(o.objective, SC_SWEEP_OBJ_TIME);
  o.top_k = 12;
  o.predict.token_budget = 1e9;
  o.predict.price_per_gpu_hour = 2.5;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s8, &o, &rt, &err) == SC_OK);
  o.objective = SC_SWEEP_OBJ_COST;
  ck_assert_msg(sc_sweep_run(regs, 2, &model, &topo, &dev, &s8, &o, &rc, &err) == SC_OK, "%s",
                err.msg);
  o.prune = 0;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s8, &o, &rcn, &err) == SC_OK);
  o.prune = 1;
  o.objective = SC_SWEEP_OBJ_ENERGY;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s8, &o, &re, &err) == SC_OK);
  ck_assert_uint_eq(rc.ntop, rt.ntop);
  for (uint32_t i = 0; i < rt.ntop; i++) {
    ck_assert_uint_eq(rc.top[i].index, rt.top[i].index);
    ck_assert_uint_eq(rcn.top[i].index, rt.top[i].index);
    ck_assert_uint_eq(re.top[i].index, rt.top[i].index);
    const sc_result *x = &rc.top[i].result;
    /* the cost of 1e9 tokens: GPU-hours x price, GPU-hours = time to train x GPUs */
    double days = 1e9 / (16.0 * 1024.0) * x->iteration_s / 86400.0;
    ck_assert_double_eq_tol(x->time_to_train_s / 86400.0, days, 1e-12 * days);
    ck_assert_double_eq_tol(x->cost, days * 24.0 * 8 * 2.5, 1e-12 * x->cost);
    double joules = 8 * dev.board_power_w * days * 86400.0;
    ck_assert_double_eq_tol(re.top[i].result.energy_j, joules, 1e-12 * joules);
    ck_assert(x->cost > 0 && re.top[i].result.energy_j > 0);
  }
  /* two GPU counts: 8's top list (cost) merged with 4's, 4's indices after 8's space */
  o.objective = SC_SWEEP_OBJ_COST;
  sc_sweep_result r4;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s4, &o, &r4, &err) == SC_OK);
  memset(&merged, 0, sizeof merged);
  merged.top_k = o.top_k;
  ck_assert_int_eq(sc_sweep_result_merge(&merged, &rc, &err), SC_EINVAL); /* time vs cost */
  ck_assert_ptr_nonnull(strstr(err.msg, "ranked by time and by cost"));
  merged.objective = SC_SWEEP_OBJ_COST;
  ck_assert(sc_sweep_result_merge(&merged, &rc, &err) == SC_OK);
  for (uint32_t i = 0; i < r4.ntop; i++) r4.top[i].index += rc.space;
  ck_assert(sc_sweep_result_merge(&merged, &r4, &err) == SC_OK);
  for (uint32_t i = 1; i < merged.ntop; i++)
    ck_assert(merged.top[i - 1].result.cost <= merged.top[i].result.cost);
  /* its best is the cheapest of every predicted configuration of either count */
  memset(&all, 0, sizeof all);
  all.top_k = 100000;
  all.top = calloc(all.top_k, sizeof *all.top);
  ck_assert_ptr_nonnull(all.top);
  o.visit = visit_keep;
  o.visit_ud = &all;
  sc_sweep_result tmp;
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s8, &o, &tmp, &err) == SC_OK);
  sc_sweep_result_free(&tmp);
  ck_assert(sc_sweep_run(regs, 1, &model, &topo, &dev, &s4, &o, &tmp, &err) == SC_OK);
  sc_sweep_result_free(&tmp);
  ck_assert_uint_lt(all.ntop, all.top_k);
  double cheapest = INFINITY, fastest = INFINITY;
  for (uint32_t i = 0; i < all.ntop; i++) {
    if (all.top[i].result.cost < cheapest) cheapest = all.top[i].result.cost;
    if (all.top[i].result.iteration_s < fastest) fastest = all.top[i].result.iteration_s;
  }
  ck_assert(merged.top[0].result.cost == cheapest);
  ck_assert(sc_sweep_objective_value(&merged.top[0].result, SC_SWEEP_OBJ_COST) == cheapest);
  ck_assert(sc_sweep_objective_value(&rt.top[0].result, SC_SWEEP_OBJ_TIME) == fastest ||
            r4.top[0].result.iteration_s == fastest);
  free(all.top);
  o.visit = NULL;
  /* names, parsing and refusals */
  sc_sweep_objective ob;
  ck_assert_str_eq(sc_sweep_objective_name(SC_SWEEP_OBJ_ENERGY), "energy");
  ck_assert_str_eq(sc_sweep_objective_name(SC_SWEEP_NOBJ), "?");
  ck_assert(sc_sweep_objective_parse("cost", &ob, &err) == SC_OK && ob == SC_SWEEP_OBJ_COST);
  ck_assert_int_eq(sc_sweep_objective_parse("money", &ob, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "objective: 'money'"));
  sc_predict_opts po = o.predict;
  po.price_per_gpu_hour = 0;
  ck_assert_int_eq(sc_sweep_objective_check(SC_SWEEP_OBJ_COST, &po, &dev, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "price per GPU-hour"));
  ck_assert_int_eq(sc_sweep_objective_check(SC_SWEEP_OBJ_TIME, &po, &dev, &err), SC_OK);
  po = o.predict;
  po.token_budget = 0;
  ck_assert_int_eq(sc_sweep_objective_check(SC_SWEEP_OBJ_ENERGY, &po, &dev, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "token budget"));
  sc_device d2 = dev;
  d2.board_power_w = 0;
  o.objective = SC_SWEEP_OBJ_ENERGY;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &d2, &s8, &o, &tmp, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "board_power_W"));
  o.objective = (sc_sweep_objective)7;
  ck_assert_int_eq(sc_sweep_run(regs, 1, &model, &topo, &dev, &s8, &o, &tmp, &err), SC_EINVAL);
  sc_sweep_result_free(&merged);
  sc_sweep_result_free(&r4);
  sc_sweep_result_free(&rt);
  sc_sweep_result_free(&rc);
  sc_sweep_result_free(&rcn);
  sc_sweep_result_free(&re);
}
END_TEST

static Suite *sweep_suite(void) {
  Suite *s = suite_create("sweep");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, fast_equals_predict);
  tcase_add_test(tc, fast_equals_predict_zero);
  tcase_add_test(tc, fast_equals_predict_zb);
  tcase_add_test(tc, threads_and_ranks_agree);
  tcase_add_test(tc, hand_argued_best);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, memory_skips);
  tcase_add_test(tc, vary_parse_apply);
  tcase_add_test(tc, objectives);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  int failed;
  SRunner *sr = srunner_create(sweep_suite());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
