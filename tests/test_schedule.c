/* Pipeline schedule simulation: bubbles against closed forms, hand-derived timelines,
 * overlap rules, breakdown consistency, workspace reuse and malformed input. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/schedule.h"
#include "stepcast/stepcast.h"

#define REL 1e-12

static int close_rel(double got, double want, double rel) {
  return fabs(got - want) <= rel * fmax(fabs(want), 1e-300);
}
#define ck_close(got, want, rel)                                                        \
  ck_assert_msg(close_rel((got), (want), (rel)), "%s = %.17g, want %.17g (rel %g)", #got, \
                (double)(got), (double)(want), (double)(rel))

static sc_sched_workspace *ws;
static void setup(void) {
  sc_error err;
  ck_assert_int_eq(sc_sched_workspace_new(&ws, &err), SC_OK);
}
static void teardown(void) { sc_sched_workspace_free(ws); }

/* Uniform chunks: a whole stage takes f forward and b backward per micro-batch, split
 * evenly across vp chunks. */
static sc_sched_chunk *uniform(uint32_t pp, uint32_t vp, double f, double b) {
  sc_sched_chunk *c = calloc((size_t)pp * vp, sizeof *c);
  ck_assert_ptr_nonnull(c);
  for (uint32_t g = 0; g < pp * vp; g++) {
    c[g].fwd_s = f / vp;
    c[g].bwd_s = b / vp;
  }
  return c;
}

static sc_sched_input input(sc_schedule_kind k, uint32_t pp, uint32_t vp, uint32_t m,
                            const sc_sched_chunk *c) {
  sc_sched_input in;
  memset(&in, 0, sizeof in);
  in.kind = k;
  in.pp = pp;
  in.vp = vp;
  in.microbatches = m;
  in.chunks = c;
  return in;
}

static double terms_sum(const sc_sched_breakdown *b) {
  return b->compute_fwd_s + b->compute_recompute_s + b->compute_bwd_s + b->tp_exposed_s +
         b->cp_exposed_s + b->dp_exposed_s + b->p2p_exposed_s + b->bubble_s + b->optimizer_s;
}

/* ------------------------------------------------------------------------- */

/* 1F1B with uniform stages and no communication: T = (m + p - 1)(f + b), bubble fraction
 * (p-1)/(m+p-1) exactly (Narayanan et al. SC21, section 2.2.1). */
START_TEST(bubble_1f1b) {
  const uint32_t ps[] = {2, 3, 4, 8, 16};
  const uint32_t ms[] = {1, 2, 5, 8, 16, 33, 64};
  sc_error err;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
      uint32_t p = ps[i], m = ms[j];
      double f = 1.3e-3, b = 2.9e-3;
      sc_sched_chunk *c = uniform(p, 1, f, b);
      sc_sched_input in = input(SC_SCHED_1F1B, p, 1, m, c);
      sc_sched_result r;
      ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
      ck_close(r.iteration_s, (m + p - 1) * (f + b), REL);
      ck_close(r.breakdown.bubble_s / r.iteration_s, (p - 1.0) / (m + p - 1.0), REL);
      ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
      free(c);
    }
}
END_TEST

START_TEST(bubble_gpipe) {
  const uint32_t ps[] = {2, 4, 7, 16};
  const uint32_t ms[] = {1, 3, 8, 32};
  sc_error err;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
    for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
      uint32_t p = ps[i], m = ms[j];
      double f = 0.7, b = 1.9;
      sc_sched_chunk *c = uniform(p, 1, f, b);
      sc_sched_input in = input(SC_SCHED_GPIPE, p, 1, m, c);
      sc_sched_result r;
      ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
      ck_close(r.iteration_s, (m + p - 1) * (f + b), REL);
      ck_close(r.breakdown.bubble_s / r.iteration_s, (p - 1.0) / (m + p - 1.0), REL);
      free(c);
    }
}
END_TEST

/* Interleaved 1F1B, uniform chunks of f/v and b/v, no communication. Hand derivation
 * (docs/schedule.md): every rank computes m*v chunk passes of (f+b)/v, i.e. m(f+b); the
 * first backward on rank 0 waits for micro-batch 0 to cross all p*v virtual stages forward
 * and come back, and in Megatron's order the idle time of rank 0 totals (p-1)(f+b)/v.
 * T = m(f+b) + (p-1)(f+b)/v, bubble fraction (p-1)/(v*m + p-1). */
START_TEST(bubble_interleaved) {
  const uint32_t ps[] = {2, 4, 8};
  const uint32_t vs[] = {2, 3, 4};
  const uint32_t mult[] = {1, 2, 3, 8};
  sc_error err;
  for (size_t i = 0; i < 3; i++)
    for (size_t k = 0; k < 3; k++)
      for (size_t j = 0; j < 4; j++) {
        uint32_t p = ps[i], v = vs[k], m = p * mult[j];
        double f = 1.0, b = 2.0; /* binary-exact chunk times for v = 2, 4 */
        sc_sched_chunk *c = uniform(p, v, f, b);
        sc_sched_input in = input(SC_SCHED_INTERLEAVED, p, v, m, c);
        sc_sched_result r;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        ck_close(r.iteration_s, m * (f + b) + (p - 1) * (f + b) / v, 1e-12);
        ck_close(r.breakdown.bubble_s / r.iteration_s, (p - 1.0) / (v * m + p - 1.0), 1e-12);
        ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
        free(c);
      }
}
END_TEST

/* Two stages, unequal (the last carries the output layer), 1F1B, m = 3 (docs/schedule.md):
 * rank 0: F0 [0,1] F1 [1,2] B0 [8,10] F2 [10,11] B1 [15,17] B2 [22,24]
 * rank 1: F0 [1,4] B0 [4,8] F1 [8,11] B1 [11,15] F2 [15,18] B2 [18,22]
 * T = 24, critical stage 0 (compute 9, bubble 15); stage 1 ends at 22 (bubble 1 + 2). */
START_TEST(two_stage_hand) {
  sc_sched_chunk c[2];
  memset(c, 0, sizeof c);
  c[0].fwd_s = 1;
  c[0].bwd_s = 2;
  c[1].fwd_s = 3;
  c[1].bwd_s = 4;
  sc_sched_input in = input(SC_SCHED_1F1B, 2, 1, 3, c);
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 24.0, REL);
  ck_assert_uint_eq(r.critical_stage, 0);
  ck_close(r.breakdown.compute_fwd_s + r.breakdown.compute_bwd_s, 9.0, REL);
  ck_close(r.breakdown.bubble_s, 15.0, REL);
  ck_assert_ptr_nonnull(r.stages);
  ck_close(r.stages[1].end_s, 22.0, REL);
  ck_close(r.stages[1].bubble_s, 3.0, REL);
  ck_close(r.stages[1].compute_fwd_s + r.stages[1].compute_bwd_s, 21.0, REL);
  /* the passes of the timeline, by (stage, kind, mb) */
  const struct {
    uint32_t stage, kind;
    int32_t mb;
    double s, e;
  } want[] = {{0, SC_IV_FORWARD, 0, 0, 1},   {0, SC_IV_FORWARD, 1, 1, 2},
              {0, SC_IV_BACKWARD, 0, 8, 10}, {0, SC_IV_FORWARD, 2, 10, 11},
              {0, SC_IV_BACKWARD, 1, 15, 17}, {0, SC_IV_BACKWARD, 2, 22, 24},
              {1, SC_IV_FORWARD, 0, 1, 4},   {1, SC_IV_BACKWARD, 0, 4, 8},
              {1, SC_IV_FORWARD, 1, 8, 11},  {1, SC_IV_BACKWARD, 1, 11, 15},
              {1, SC_IV_FORWARD, 2, 15, 18}, {1, SC_IV_BACKWARD, 2, 18, 22}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    int found = 0;
    for (size_t i = 0; i < r.nintervals; i++) {
      const sc_sched_interval *v = &r.intervals[i];
      if (v->stage == want[w].stage && v->kind == want[w].kind && v->microbatch == want[w].mb) {
        ck_close(v->start_s, want[w].s, REL);
        ck_close(v->end_s, want[w].e, REL);
        found++;
      }
    }
    ck_assert_int_eq(found, 1);
  }
  /* flows: 3 activations and 3 gradients crossed the stage boundary */
  ck_assert_uint_eq(r.nflows, 6);
}
END_TEST

/* TP exposure with an overlappable fraction, one stage, m = 2, f = 1, b = 2. */
START_TEST(tp_overlap) {
  sc_sched_chunk c;
  memset(&c, 0, sizeof c);
  c.fwd_s = 1;
  c.bwd_s = 2;
  c.tp_fwd_s = 0.5;
  c.tp_bwd_s = 0.5;
  sc_sched_input in = input(SC_SCHED_1F1B, 1, 1, 2, &c);
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 8.0, REL); /* 2*(1+2) + 2*(0.5+0.5), all exposed */
  ck_close(r.breakdown.tp_exposed_s, 2.0, REL);
  in.tp_overlap_frac = 1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 6.0, REL);
  ck_close(r.breakdown.tp_exposed_s, 0.0, REL);
  /* half overlappable, comm longer than compute: fwd exposes 1.5 + (1.5 - 1) = 2,
   * bwd exposes 1.5 + max(0, 1.5 - 2) = 1.5; T = 6 + 2 * 3.5 = 13 */
  c.tp_fwd_s = 3;
  c.tp_bwd_s = 3;
  in.tp_overlap_frac = 0.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 13.0, REL);
  ck_close(r.breakdown.tp_exposed_s, 7.0, REL);
  /* CP follows the same rule on its own stream */
  c.tp_fwd_s = c.tp_bwd_s = 0;
  c.cp_fwd_s = 1;
  in.cp_overlap_frac = 0.25;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.breakdown.cp_exposed_s, 2 * 0.75, REL);
  ck_close(r.iteration_s, 6.0 + 1.5, REL);
}
END_TEST

/* A part of TP communication that stays exposed under overlap (Transformer Engine's
 * userbuffers: tp_fwd_fixed_s, tp_bwd_fixed_s): exposed whatever the fraction, the rest
 * hides as before; m = 2, f = 1, b = 2, tp 0.5 + 0.5 per micro-batch. */
START_TEST(tp_overlap_fixed) {
  sc_sched_chunk c;
  memset(&c, 0, sizeof c);
  c.fwd_s = 1;
  c.bwd_s = 2;
  c.tp_fwd_s = 0.5;
  c.tp_bwd_s = 0.5;
  c.tp_fwd_fixed_s = 0.125;
  c.tp_bwd_fixed_s = 0.25;
  sc_sched_input in = input(SC_SCHED_1F1B, 1, 1, 2, &c);
  sc_sched_result r;
  sc_error err;
  in.tp_overlap_frac = 1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.breakdown.tp_exposed_s, 2 * (0.125 + 0.25), REL);
  ck_close(r.iteration_s, 6.0 + 0.75, REL);
  /* overlap off: all of it, the fixed part included once */
  in.tp_overlap_frac = 0.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 8.0, REL);
  /* the rest longer than the compute it hides under: the excess shows too
   * (fwd: 0.125 fixed + (2.875 - 1) over the 1 s forward) */
  c.tp_fwd_s = 3.0;
  in.tp_overlap_frac = 1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.breakdown.tp_exposed_s, 2 * (0.125 + 1.875 + 0.25), REL);
  /* more fixed than there is communication: refused, naming the field */
  c.tp_fwd_s = 0.1;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "tp_fwd_fixed_s"));
  c.tp_fwd_s = 0.5;
  c.tp_bwd_fixed_s = -1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "tp_bwd_fixed_s"));
}
END_TEST

/* Sharded data parallelism's per-pass communication (ZeRO-2/3): the part prefetching may
 * hide runs under the pass's compute, the rest after it; one stage, m = 2, f = 1, b = 2. */
START_TEST(shard_overlap) {
  sc_sched_chunk c;
  memset(&c, 0, sizeof c);
  c.fwd_s = 1;
  c.bwd_s = 2;
  c.shard_fwd_s = 0.5;
  c.shard_bwd_s = 1.0;
  sc_sched_input in = input(SC_SCHED_1F1B, 1, 1, 2, &c);
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 9.0, REL); /* 2 * (1 + 2) + 2 * (0.5 + 1), none hidden */
  ck_close(r.breakdown.dp_exposed_s, 3.0, REL);
  /* all but 0.1 of the forward's and 0.25 of the backward's hidden: 2 * (0.1 + 0.25) */
  c.shard_fwd_hide_s = 0.4;
  c.shard_bwd_hide_s = 0.75;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 6.7, REL);
  ck_close(r.breakdown.dp_exposed_s, 0.7, REL);
  /* more to hide than compute: forward 3 of which 2.5 may hide under 1 s exposes
   * 0.5 + 1.5 = 2; backward 1 of which 0.75 hides: 0.25; T = 6 + 2 * 2.25 = 10.5 */
  c.shard_fwd_s = 3.0;
  c.shard_fwd_hide_s = 2.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 10.5, REL);
  ck_close(r.breakdown.dp_exposed_s, 4.5, REL);
  /* the hidden part cannot exceed the whole */
  c.shard_bwd_hide_s = 1.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "hidden part of the sharded communication"));
  c.shard_bwd_hide_s = -1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "shard_bwd_hide_s"));
}
END_TEST

/* DP gradient reduction: one stage, m = 2, f = b = 1, reduction 3 s. */
START_TEST(dp_grad_overlap) {
  sc_sched_chunk c;
  memset(&c, 0, sizeof c);
  c.fwd_s = 1;
  c.bwd_s = 1;
  c.dp_grad_s = 3;
  sc_sched_input in = input(SC_SCHED_1F1B, 1, 1, 2, &c);
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 7.0, REL);
  ck_close(r.breakdown.dp_exposed_s, 3.0, REL);
  /* overlapped, one bucket: starts when the last backward ends -> same 7 */
  in.overlap_grad_reduce = 1;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 7.0, REL);
  /* two buckets: ready at 3.5 and 4; [3.5, 5] then [5, 6.5] */
  in.grad_buckets = 2;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 6.5, REL);
  ck_close(r.breakdown.dp_exposed_s, 2.5, REL);
  /* optimizer after the reduction */
  double opt = 0.25;
  in.optimizer_s = &opt;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 6.75, REL);
  ck_close(r.breakdown.optimizer_s, 0.25, REL);
  ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
}
END_TEST

/* Distributed-optimizer parameter all-gather, one stage, m = 1, f = b = 1, gather 2 s. */
START_TEST(param_gather) {
  sc_sched_chunk c;
  memset(&c, 0, sizeof c);
  c.fwd_s = 1;
  c.bwd_s = 1;
  c.dp_param_gather_s = 2;
  sc_sched_input in = input(SC_SCHED_1F1B, 1, 1, 1, &c);
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 4.0, REL); /* exposed before the first forward */
  ck_close(r.breakdown.dp_exposed_s, 2.0, REL);
  /* overlapped, two buckets [0,1] [1,2]: forward starts at 1 and cannot end before the
   * last bucket plus its half of the forward: max(1 + 1, 2 + 0.5) = 2.5; T = 3.5 */
  in.overlap_param_gather = 1;
  in.param_buckets = 2;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 3.5, REL);
  ck_close(r.breakdown.dp_exposed_s, 1.5, REL);
  ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
}
END_TEST

/* P2P: two stages, m = 1, f = b = 1, sends of 0.5 s.
 * R0 F [0,1], send [1,1.5], R1 F [1.5,2.5], B [2.5,3.5], send [3.5,4], R0 B [4,5]. */
START_TEST(p2p_exposed) {
  sc_sched_chunk c[2];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 2; i++) {
    c[i].fwd_s = 1;
    c[i].bwd_s = 1;
    c[i].p2p_fwd_s = 0.5;
    c[i].p2p_bwd_s = 0.5;
  }
  sc_sched_input in = input(SC_SCHED_1F1B, 2, 1, 1, c);
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 5.0, REL);
  ck_assert_uint_eq(r.critical_stage, 0);
  ck_close(r.breakdown.bubble_s, 2.5, REL);
  ck_close(r.breakdown.p2p_exposed_s, 0.5, REL);
  ck_close(r.stages[1].bubble_s, 1.0 + 1.5, REL);
  ck_close(r.stages[1].p2p_exposed_s, 0.5, REL);
  ck_assert_uint_eq(r.nflows, 2);
  for (size_t i = 0; i < r.nflows; i++) {
    const sc_sched_interval *s = &r.intervals[r.flows[i].send];
    const sc_sched_interval *d = &r.intervals[r.flows[i].recv];
    ck_assert(s->kind == SC_IV_P2P_ACT || s->kind == SC_IV_P2P_GRAD);
    ck_assert_uint_eq(d->lane, SC_LANE_COMPUTE);
    ck_assert_uint_ne(s->stage, d->stage);
    ck_assert(d->start_s >= s->end_s);
  }
}
END_TEST

/* Blocking sends (p2p_blocking: DeepSpeed's PipelineEngine): two stages, m = 2, f = b = 1,
 * sends of 0.5 s that hold the sender's compute stream.
 * R0 F0 [0,1] send [1,1.5], F1 [1.5,2.5] send [2.5,3]; R1 F0 [1.5,2.5], B0 [2.5,3.5] send
 * [3.5,4], F1 [4,5], B1 [5,6] send [6,6.5]; R0 B0 [4,5], B1 [6.5,7.5]. Stage 0: 4 s of
 * compute, 1 s held by its sends and 1 s waiting for gradients in flight (P2P), 1.5 s of
 * bubble. Without blocking the same pipeline takes 7 s. */
START_TEST(p2p_blocking) {
  sc_sched_chunk c[2];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 2; i++) {
    c[i].fwd_s = 1;
    c[i].bwd_s = 1;
    c[i].p2p_fwd_s = 0.5;
    c[i].p2p_bwd_s = 0.5;
  }
  sc_sched_input in = input(SC_SCHED_1F1B, 2, 1, 2, c);
  in.record_timeline = 1; /* the per-stage breakdowns */
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 7.0, REL);
  in.p2p_blocking = 1;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 7.5, REL);
  ck_assert_uint_eq(r.critical_stage, 0);
  ck_close(r.stages[0].p2p_exposed_s, 2.0, REL);
  ck_close(r.stages[0].bubble_s, 1.5, REL);
  ck_close(terms_sum(&r.stages[0]), 7.5, REL);
  ck_close(terms_sum(&r.stages[1]), 7.5, REL);
}
END_TEST

/* Everything at once: non-uniform interleaved stages, comm on every stream, recompute,
 * families, buckets, optimizer. Every stage's terms sum to T; families sum to compute;
 * no two passes of one stage overlap; the critical stage ends at T. */
START_TEST(breakdown_consistent) {
  const uint32_t p = 4, v = 2, m = 8, G = p * v;
  static const char *const fam[] = {"gemm", "attention", "other"};
  sc_sched_chunk c[8];
  double split[8][3][3];
  memset(c, 0, sizeof c);
  for (uint32_t g = 0; g < G; g++) {
    double k = 1.0 + 0.1 * g;
    c[g].fwd_s = 0.010 * k;
    c[g].bwd_s = 0.021 * k;
    c[g].recompute_s = 0.004 * k;
    c[g].tp_fwd_s = 0.003;
    c[g].tp_bwd_s = 0.005;
    c[g].cp_fwd_s = 0.001;
    c[g].cp_bwd_s = 0.002;
    c[g].p2p_fwd_s = 0.0007;
    c[g].p2p_bwd_s = 0.0009;
    c[g].dp_grad_s = 0.02;
    c[g].dp_param_gather_s = 0.01;
    const double tot[3] = {c[g].fwd_s, c[g].bwd_s, c[g].recompute_s};
    for (int t = 0; t < 3; t++) {
      split[g][t][0] = tot[t] * 0.7;
      split[g][t][1] = tot[t] * 0.2;
      split[g][t][2] = tot[t] - split[g][t][0] - split[g][t][1];
    }
    c[g].fwd_family_s = split[g][0];
    c[g].bwd_family_s = split[g][1];
    c[g].recompute_family_s = split[g][2];
  }
  c[0].fwd_s += 0.003; /* embedding on the first stage: keep split consistent */
  split[0][0][2] += 0.003;
  double opt[4] = {0.002, 0.002, 0.002, 0.003};
  sc_sched_input in = input(SC_SCHED_INTERLEAVED, p, v, m, c);
  in.optimizer_s = opt;
  in.tp_overlap_frac = 0.6;
  in.cp_overlap_frac = 0.3;
  in.overlap_grad_reduce = 1;
  in.overlap_param_gather = 1;
  in.grad_buckets = 3;
  in.param_buckets = 2;
  in.nfamilies = 3;
  in.family_names = fam;
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  double tmax = 0;
  for (uint32_t s = 0; s < p; s++) {
    const sc_sched_breakdown *b = &r.stages[s];
    ck_close(terms_sum(b), r.iteration_s, REL);
    double fs = 0;
    for (uint32_t f = 0; f < 3; f++) fs += b->family_s[f];
    ck_close(fs, b->compute_fwd_s + b->compute_bwd_s + b->compute_recompute_s, 1e-12);
    ck_assert(b->bubble_s >= 0 && b->p2p_exposed_s >= 0 && b->dp_exposed_s >= 0);
    if (b->end_s > tmax) tmax = b->end_s;
  }
  ck_close(tmax, r.iteration_s, REL);
  ck_close(r.stages[r.critical_stage].end_s, r.iteration_s, REL);
  ck_assert_str_eq(r.breakdown.family_names[1], "attention");
  /* compute-lane intervals of one stage never overlap */
  for (size_t i = 0; i < r.nintervals; i++) {
    const sc_sched_interval *a = &r.intervals[i];
    ck_assert(a->end_s >= a->start_s);
    ck_assert(a->end_s <= r.iteration_s * (1 + 1e-12));
    if (a->lane != SC_LANE_COMPUTE) continue;
    for (size_t j = i + 1; j < r.nintervals; j++) {
      const sc_sched_interval *b = &r.intervals[j];
      if (b->lane != SC_LANE_COMPUTE || b->stage != a->stage) continue;
      ck_assert_msg(a->end_s <= b->start_s + 1e-15 || b->end_s <= a->start_s + 1e-15,
                    "overlap on stage %u", a->stage);
    }
  }
  /* every virtual-stage boundary carried m activations and m gradients */
  ck_assert_uint_eq(r.nflows, 2u * m * (G - 1));
}
END_TEST

/* The replay cache: a workspace reused across shapes gives what a fresh one gives. */
START_TEST(workspace_reuse) {
  sc_error err;
  sc_sched_chunk *a = uniform(8, 1, 1.0, 2.0);
  sc_sched_chunk *b = uniform(4, 2, 1.0, 2.0);
  sc_sched_input ia = input(SC_SCHED_1F1B, 8, 1, 16, a);
  sc_sched_input ib = input(SC_SCHED_INTERLEAVED, 4, 2, 8, b);
  sc_sched_result r1, r2, r3;
  ck_assert_int_eq(sc_schedule_run(ws, &ia, &r1, &err), SC_OK);
  ck_assert_int_eq(sc_schedule_run(ws, &ib, &r2, &err), SC_OK);
  a[3].fwd_s = 1.5; /* same shape, other times: replayed order */
  a[5].p2p_bwd_s = 0.25;
  ck_assert_int_eq(sc_schedule_run(ws, &ia, &r3, &err), SC_OK);
  double t_replay = r3.iteration_s, bub = r3.breakdown.bubble_s;
  sc_sched_workspace *fresh;
  ck_assert_int_eq(sc_sched_workspace_new(&fresh, &err), SC_OK);
  ck_assert_int_eq(sc_schedule_run(fresh, &ia, &r3, &err), SC_OK);
  ck_assert(t_replay == r3.iteration_s); /* bit-identical */
  ck_assert(bub == r3.breakdown.bubble_s);
  ck_assert(r1.iteration_s < r3.iteration_s);
  /* same shape, other schedule: must not replay the 1F1B order */
  ia.kind = SC_SCHED_GPIPE;
  ck_assert_int_eq(sc_schedule_run(ws, &ia, &r1, &err), SC_OK);
  ck_assert_int_eq(sc_schedule_run(fresh, &ia, &r3, &err), SC_OK);
  ck_assert(r1.iteration_s == r3.iteration_s);
  sc_sched_workspace_free(fresh);
  free(a);
  free(b);
}
END_TEST

/* A large case runs (the sweep size: p = 64, m = 512) and keeps the closed form. */
START_TEST(large) {
  sc_error err;
  sc_sched_chunk *c = uniform(64, 1, 1e-3, 2e-3);
  sc_sched_input in = input(SC_SCHED_1F1B, 64, 1, 512, c);
  sc_sched_result r;
  for (int rep = 0; rep < 2; rep++) {
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
    ck_close(r.breakdown.bubble_s / r.iteration_s, 63.0 / (512 + 63.0), 1e-12);
    ck_assert_ptr_null(r.stages); /* no timeline: critical stage only */
  }
  free(c);
}
END_TEST

START_TEST(malformed) {
  sc_error err;
  sc_sched_result r;
  sc_sched_chunk *c = uniform(4, 2, 1.0, 2.0);
  sc_sched_input in;

  in = input(SC_SCHED_INTERLEAVED, 4, 2, 6, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "multiple of pp"));

  in = input(SC_SCHED_1F1B, 4, 2, 8, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "virtual stages"));

  in = input(SC_SCHED_INTERLEAVED, 1, 2, 4, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_ECONFIG);

  in = input(SC_SCHED_1F1B, 0, 1, 8, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "pp"));

  in = input(SC_SCHED_1F1B, 4, 1, 0, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "microbatches"));

  in = input(SC_SCHED_1F1B, 4, 1, 8, NULL);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);

  in = input((sc_schedule_kind)7, 4, 1, 8, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);

  in = input(SC_SCHED_1F1B, 4, 1, 8, c);
  c[2].bwd_s = -1.0;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "chunks[2].bwd_s"));
  c[2].bwd_s = NAN;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  c[2].bwd_s = INFINITY;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  c[2].bwd_s = 1.0;

  in.tp_overlap_frac = 1.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "tp_overlap_frac"));
  in.tp_overlap_frac = NAN;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  in.tp_overlap_frac = 0;

  double bad_opt[4] = {0, 0, -1, 0};
  in.optimizer_s = bad_opt;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "optimizer_s[2]"));
  in.optimizer_s = NULL;

  static const char *const names[] = {"gemm", "other"};
  double split[2] = {0.5, 0.4}; /* sums to 0.9, not fwd_s = 0.5 */
  in.nfamilies = 2;
  in.family_names = names;
  c[1].fwd_family_s = split;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "fwd_family_s"));
  c[1].fwd_family_s = NULL;
  in.family_names = NULL;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  in.nfamilies = SC_SCHED_MAX_FAMILIES + 1;
  in.family_names = names;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  static const char *const empty[] = {"", "x"};
  in.nfamilies = 2;
  in.family_names = empty;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);

  ck_assert_int_eq(sc_schedule_run(ws, NULL, &r, &err), SC_EINVAL);
  ck_assert_int_eq(sc_schedule_run(NULL, &in, &r, &err), SC_EINVAL);
  ck_assert_int_eq(sc_sched_workspace_new(NULL, &err), SC_EINVAL);
  free(c);
}
END_TEST


/* ------------------------------------------------------------------------- */
/* ZB-H1 and DualPipe                                                         */

/* Uniform stages whose backward is b (input gradient, B) + w (weight gradient, W). */
static sc_sched_chunk *uniform_bw(uint32_t pp, double f, double b, double w) {
  sc_sched_chunk *c = calloc(pp, sizeof *c);
  ck_assert_ptr_nonnull(c);
  for (uint32_t g = 0; g < pp; g++) {
    c[g].fwd_s = f;
    c[g].bwd_s = b + w;
    c[g].wgrad_s = w;
  }
  return c;
}

/* ZB-H1 with uniform stages and no communication reproduces Qi et al.'s bubble
 * (arXiv:2401.10241, Sec. 2: 1F1B's (p-1)(T_F+T_B+T_W) becomes (p-1)(T_F+T_B-T_W)):
 * T = m(F+B+W) + (p-1)(F+B-W), exactly, whenever m >= p and W <= min(F, B) (the deferred
 * W passes then fit the cooldown's gaps); the same chunks under 1F1B take 2(p-1)W more. */
START_TEST(bubble_zbh1) {
  const double fbw[][3] = {{1, 1, 1},       {1, 2, 0.5},        {1.5, 1, 1},
                           {0.75, 1.25, 0.25}, {1.3e-3, 2.9e-3, 0.7e-3}, {2, 3, 0}};
  const uint32_t ps[] = {1, 2, 3, 4, 8, 16};
  sc_error err;
  for (size_t k = 0; k < sizeof fbw / sizeof fbw[0]; k++)
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      uint32_t p = ps[i];
      const uint32_t ms[] = {p, p + 1, 2 * p, 3 * p + 1, 8 * p};
      for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
        uint32_t m = ms[j];
        double f = fbw[k][0], b = fbw[k][1], w = fbw[k][2];
        sc_sched_chunk *c = uniform_bw(p, f, b, w);
        sc_sched_input in = input(SC_SCHED_ZB_H1, p, 1, m, c);
        sc_sched_result r;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        ck_close(r.iteration_s, m * (f + b + w) + (p - 1) * (f + b - w), REL);
        ck_close(r.breakdown.bubble_s, (p - 1) * (f + b - w), 1e-9);
        ck_close(r.breakdown.compute_bwd_s, m * (b + w), REL);
        ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
        double t_zb = r.iteration_s;
        in.kind = SC_SCHED_1F1B;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        ck_close(r.iteration_s - t_zb, 2.0 * (p - 1) * w, 1e-9);
        free(c);
      }
    }
}
END_TEST

/* Outside that domain the formula is a floor the simulation does not go below (W longer than
 * F or B cannot hide in the gaps), and ZB-H1 is never slower than 1F1B, at any m. */
START_TEST(zbh1_bounds) {
  const double fbw[][3] = {{1, 1, 2}, {1, 2, 3}, {0.5, 1, 1}, {2, 0.5, 1}, {1, 1, 1}};
  sc_error err;
  for (size_t k = 0; k < sizeof fbw / sizeof fbw[0]; k++)
    for (uint32_t p = 2; p <= 8; p *= 2)
      for (uint32_t m = 1; m <= 3 * p; m++) {
        double f = fbw[k][0], b = fbw[k][1], w = fbw[k][2];
        sc_sched_chunk *c = uniform_bw(p, f, b, w);
        sc_sched_input in = input(SC_SCHED_ZB_H1, p, 1, m, c);
        sc_sched_result r;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        double floor_s = m * (f + b + w) + (p - 1) * (f + b - w);
        if (m >= p) ck_assert(r.iteration_s >= floor_s * (1 - 1e-12));
        ck_assert(r.iteration_s <= (m + p - 1) * (f + b + w) * (1 + 1e-12));
        ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
        free(c);
      }
  /* W = 2 > F = B = 1, p = 4, m = 8: the floor is 32, the simulation 35, 1F1B 44 */
  sc_sched_chunk *c = uniform_bw(4, 1, 1, 2);
  sc_sched_input in = input(SC_SCHED_ZB_H1, 4, 1, 8, c);
  sc_sched_result r;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 35.0, REL);
  free(c);
}
END_TEST

/* ZB-H1, p = 2, m = 2, F = B = W = 1, by hand (rank 1 defers its first W):
 * rank 0: F0 [0,1] F1 [1,2] B0 [3,4] W0 [4,5] B1 [5,6] W1 [6,7]
 * rank 1: F0 [1,2] B0 [2,3] F1 [3,4] B1 [4,5] W0 [5,6] W1 [6,7]
 * T = 7 = m(F+B+W) + (p-1)(F+B-W); 1F1B takes 9. */
START_TEST(zbh1_hand) {
  sc_sched_chunk *c = uniform_bw(2, 1, 1, 1);
  sc_sched_input in = input(SC_SCHED_ZB_H1, 2, 1, 2, c);
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 7.0, REL);
  const struct {
    uint32_t stage, kind;
    int32_t mb;
    double s, e;
  } want[] = {{0, SC_IV_FORWARD, 0, 0, 1},  {0, SC_IV_FORWARD, 1, 1, 2},
              {0, SC_IV_BACKWARD, 0, 3, 4}, {0, SC_IV_WGRAD, 0, 4, 5},
              {0, SC_IV_BACKWARD, 1, 5, 6}, {0, SC_IV_WGRAD, 1, 6, 7},
              {1, SC_IV_FORWARD, 0, 1, 2},  {1, SC_IV_BACKWARD, 0, 2, 3},
              {1, SC_IV_FORWARD, 1, 3, 4},  {1, SC_IV_BACKWARD, 1, 4, 5},
              {1, SC_IV_WGRAD, 0, 5, 6},    {1, SC_IV_WGRAD, 1, 6, 7}};
  size_t ncompute = 0;
  for (size_t i = 0; i < r.nintervals; i++) ncompute += r.intervals[i].lane == SC_LANE_COMPUTE;
  ck_assert_uint_eq(ncompute, sizeof want / sizeof want[0]);
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    int found = 0;
    for (size_t i = 0; i < r.nintervals; i++) {
      const sc_sched_interval *v = &r.intervals[i];
      if (v->stage == want[w].stage && v->kind == want[w].kind && v->microbatch == want[w].mb) {
        ck_close(v->start_s, want[w].s, REL);
        ck_close(v->end_s, want[w].e, REL);
        found++;
      }
    }
    ck_assert_int_eq(found, 1);
  }
  ck_assert_uint_eq(r.nflows, 4);
  ck_assert_str_eq(sc_interval_kind_name(SC_IV_WGRAD), "wgrad");
  free(c);
}
END_TEST

/* DualPipe with uniform stages and no communication reproduces DeepSeek-V3's bubble (arXiv
 * 2412.19437, Table 2: (PP/2 - 1)(F&B + B - 3W), B the whole backward, F&B the overlapped
 * forward-backward pair, here F + B since without communication nothing overlaps):
 * T = m(F + B + W) + (p/2 - 1)(F + 2(B + W) - 3W) with B the input-gradient part, exactly,
 * whenever F = B and W <= F (the chunks of the report's figure). */
START_TEST(bubble_dualpipe) {
  const double fbw[][3] = {{1, 1, 1}, {1, 1, 0.5}, {2, 2, 0.25}, {1.5, 1.5, 1.5},
                           {1.3e-3, 1.3e-3, 0.7e-3}, {1, 1, 0}};
  const uint32_t ps[] = {2, 4, 6, 8, 16};
  sc_error err;
  for (size_t k = 0; k < sizeof fbw / sizeof fbw[0]; k++)
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      uint32_t p = ps[i];
      const uint32_t ms[] = {2 * p, 2 * p + 2, 3 * p, 10 * p};
      for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
        uint32_t m = ms[j];
        double f = fbw[k][0], b = fbw[k][1], w = fbw[k][2];
        double fb = f + b + w, bfull = b + w;
        sc_sched_chunk *c = uniform_bw(p, f, b, w);
        sc_sched_input in = input(SC_SCHED_DUALPIPE, p, 1, m, c);
        sc_sched_result r;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        double bubble = (p / 2.0 - 1.0) * (fb + bfull - 3.0 * w);
        ck_close(r.iteration_s, m * (f + b + w) + bubble, REL);
        ck_close(r.breakdown.bubble_s, bubble, 1e-9);
        ck_close(r.breakdown.compute_fwd_s, m * f, REL);
        ck_close(r.breakdown.compute_bwd_s, m * (b + w), REL);
        ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
        free(c);
      }
    }
}
END_TEST

/* DualPipe, p = 2, m = 4, F = B = W = 1, by hand from DeepSeek's order (d0: fed from rank 0,
 * d1: from rank 1; F&B a pair of 3 s; B* a split backward):
 * rank 0: F d0m0 [0,1], F d1m0 [1,2], F d0m1 [2,3], B d1m0 [3,5], F d1m1 & B d0m0 [5,8],
 *         B d1m1 [8,10], B* d0m1 [10,11], W d0m1 [11,12]
 * rank 1: the mirror image. T = 12 = m(F+B+W): no bubble at p = 2. */
START_TEST(dualpipe_hand) {
  sc_sched_chunk *c = uniform_bw(2, 1, 1, 1);
  sc_sched_input in = input(SC_SCHED_DUALPIPE, 2, 1, 4, c);
  in.record_timeline = 1;
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 12.0, REL);
  const struct {
    uint32_t kind, chunk;
    int32_t mb;
    double s, e;
  } want[] = {{SC_IV_FORWARD, 0, 0, 0, 1},   {SC_IV_FORWARD, 1, 0, 1, 2},
              {SC_IV_FORWARD, 0, 1, 2, 3},   {SC_IV_BACKWARD, 1, 0, 3, 4},
              {SC_IV_WGRAD, 1, 0, 4, 5},     {SC_IV_FORWARD, 1, 1, 5, 6},
              {SC_IV_BACKWARD, 0, 0, 6, 7},  {SC_IV_WGRAD, 0, 0, 7, 8},
              {SC_IV_BACKWARD, 1, 1, 8, 9},  {SC_IV_WGRAD, 1, 1, 9, 10},
              {SC_IV_BACKWARD, 0, 1, 10, 11}, {SC_IV_WGRAD, 0, 1, 11, 12}};
  for (uint32_t st = 0; st < 2; st++)
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
      int found = 0;
      uint32_t chunk = st == 0 ? want[w].chunk : 1 - want[w].chunk; /* the mirror */
      for (size_t i = 0; i < r.nintervals; i++) {
        const sc_sched_interval *v = &r.intervals[i];
        if (v->stage == st && v->lane == SC_LANE_COMPUTE && v->kind == want[w].kind &&
            v->chunk == chunk && v->microbatch == want[w].mb) {
          ck_close(v->start_s, want[w].s, REL);
          ck_close(v->end_s, want[w].e, REL);
          found++;
        }
      }
      ck_assert_msg(found == 1, "stage %u entry %zu found %d", st, w, found);
    }
  /* each direction crossed the one boundary with m/2 activations and m/2 gradients */
  ck_assert_uint_eq(r.nflows, 8);
  free(c);
}
END_TEST

/* Micro-batches in flight, counted on the simulated timeline (a forward holds its
 * activations from its start until the end of its micro-batch's backward): DualPipe holds
 * pp + 1 on every rank (DeepSeek-V3 Table 2's "PP+1": pp - s of the copy of stage s, the
 * pair's forward allocating before its backward frees), ZB-H1 pp - r on rank r as 1F1B, and
 * at most pp counting those whose W is still pending. */
static uint32_t peak_inflight(const sc_sched_result *r, uint32_t stage, int until_w) {
  /* events sorted by time: +1 at a forward's start, -1 at the end of the backward (or W) */
  double t[4096];
  int d[4096];
  size_t n = 0;
  for (size_t i = 0; i < r->nintervals; i++) {
    const sc_sched_interval *v = &r->intervals[i];
    if (v->stage != stage || v->lane != SC_LANE_COMPUTE) continue;
    if (v->kind == SC_IV_FORWARD) {
      t[n] = v->start_s;
      d[n++] = 1;
    } else if (v->kind == (until_w ? SC_IV_WGRAD : SC_IV_BACKWARD)) {
      t[n] = v->end_s;
      d[n++] = -1;
    }
    ck_assert_uint_lt(n, 4096);
  }
  for (size_t i = 1; i < n; i++) /* insertion sort; a release before an allocation at a tie */
    for (size_t j = i; j > 0 && (t[j] < t[j - 1] || (t[j] == t[j - 1] && d[j] < d[j - 1])); j--) {
      double tt = t[j];
      t[j] = t[j - 1];
      t[j - 1] = tt;
      int dd = d[j];
      d[j] = d[j - 1];
      d[j - 1] = dd;
    }
  int live = 0, peak = 0;
  for (size_t i = 0; i < n; i++) {
    live += d[i];
    if (live > peak) peak = live;
  }
  ck_assert_int_eq(live, 0);
  return (uint32_t)peak;
}

START_TEST(inflight_counts) {
  sc_error err;
  sc_sched_result r;
  for (uint32_t p = 2; p <= 8; p += 2) {
    uint32_t m = 4 * p;
    sc_sched_chunk *c = uniform_bw(p, 1, 1, 1);
    sc_sched_input in = input(SC_SCHED_DUALPIPE, p, 1, m, c);
    in.record_timeline = 1;
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
    for (uint32_t st = 0; st < p; st++) ck_assert_uint_eq(peak_inflight(&r, st, 0), p + 1);
    in.kind = SC_SCHED_ZB_H1;
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
    for (uint32_t st = 0; st < p; st++) {
      ck_assert_uint_eq(peak_inflight(&r, st, 0), p - st);
      ck_assert_uint_le(peak_inflight(&r, st, 1), p);
    }
    ck_assert_uint_eq(peak_inflight(&r, 0, 1), p);
    free(c);
  }
}
END_TEST

/* Gradient reduction under ZB-H1 waits for the chunk's last W: one stage, m = 2,
 * F = B = W = 1, reduction 3 s: F0 B0 W0 F1 B1 W1 end at 6, then the reduction. */
START_TEST(zbh1_grad_reduce) {
  sc_sched_chunk *c = uniform_bw(1, 1, 1, 1);
  c[0].dp_grad_s = 3;
  sc_sched_input in = input(SC_SCHED_ZB_H1, 1, 1, 2, c);
  sc_sched_result r;
  sc_error err;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 9.0, REL);
  ck_close(r.breakdown.dp_exposed_s, 3.0, REL);
  /* two buckets ready at 5.5 and 6 (the last W runs [5, 6]): [5.5, 7] then [7, 8.5] */
  in.overlap_grad_reduce = 1;
  in.grad_buckets = 2;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  ck_close(r.iteration_s, 8.5, REL);
  ck_close(r.breakdown.dp_exposed_s, 2.5, REL);
  ck_close(terms_sum(&r.breakdown), r.iteration_s, REL);
  free(c);
}
END_TEST

/* Everything at once under ZB-H1 and DualPipe: non-uniform stages, communication on every
 * stream, recomputation, families, buckets, optimizer, blocking sends or not. Every stage's
 * terms sum to T; compute intervals of a stage never overlap; every W has its interval; every
 * stage boundary of each direction carried its micro-batches' activations and gradients. */
START_TEST(zb_breakdown_consistent) {
  const uint32_t p = 4, m = 8;
  static const char *const fam[] = {"gemm", "other"};
  sc_sched_chunk c[4];
  double split[4][3][2];
  memset(c, 0, sizeof c);
  for (uint32_t g = 0; g < p; g++) {
    double k = 1.0 + 0.15 * g;
    c[g].fwd_s = 0.010 * k;
    c[g].bwd_s = 0.021 * k;
    c[g].wgrad_s = 0.009 * k;
    c[g].recompute_s = 0.004 * k;
    c[g].tp_fwd_s = 0.003;
    c[g].tp_bwd_s = 0.005;
    c[g].cp_fwd_s = 0.001;
    c[g].cp_bwd_s = 0.002;
    c[g].shard_fwd_s = 0.002;
    c[g].shard_fwd_hide_s = 0.001;
    c[g].shard_bwd_s = 0.003;
    c[g].shard_bwd_hide_s = 0.002;
    c[g].p2p_fwd_s = 0.0007;
    c[g].p2p_bwd_s = 0.0009;
    c[g].dp_grad_s = 0.02;
    c[g].dp_param_gather_s = 0.01;
    const double tot[3] = {c[g].fwd_s, c[g].bwd_s, c[g].recompute_s};
    for (int t = 0; t < 3; t++) {
      split[g][t][0] = tot[t] * 0.8;
      split[g][t][1] = tot[t] - split[g][t][0];
    }
    c[g].fwd_family_s = split[g][0];
    c[g].bwd_family_s = split[g][1];
    c[g].recompute_family_s = split[g][2];
  }
  double opt[4] = {0.002, 0.002, 0.002, 0.003};
  const sc_schedule_kind kinds[] = {SC_SCHED_ZB_H1, SC_SCHED_DUALPIPE};
  for (size_t ki = 0; ki < 2; ki++)
    for (int blocking = 0; blocking < 2; blocking++)
      for (int ov = 0; ov < 2; ov++) {
        sc_sched_input in = input(kinds[ki], p, 1, m, c);
        in.optimizer_s = opt;
        in.tp_overlap_frac = 0.6;
        in.cp_overlap_frac = 0.3;
        in.overlap_grad_reduce = ov;
        in.overlap_param_gather = ov;
        in.grad_buckets = 3;
        in.param_buckets = 2;
        in.nfamilies = 2;
        in.family_names = fam;
        in.p2p_blocking = blocking;
        in.record_timeline = 1;
        sc_sched_result r;
        sc_error err;
        ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
        double tmax = 0, fam_all = 0;
        for (uint32_t s = 0; s < p; s++) {
          const sc_sched_breakdown *b = &r.stages[s];
          ck_close(terms_sum(b), r.iteration_s, REL);
          double fs = b->family_s[0] + b->family_s[1];
          ck_close(fs, b->compute_fwd_s + b->compute_bwd_s + b->compute_recompute_s, 1e-12);
          fam_all += fs;
          ck_assert(b->bubble_s >= 0 && b->p2p_exposed_s >= 0 && b->dp_exposed_s >= 0);
          if (b->end_s > tmax) tmax = b->end_s;
        }
        double want = 0;
        for (uint32_t g = 0; g < p; g++)
          want += m * (c[g].fwd_s + c[g].bwd_s + c[g].recompute_s);
        ck_close(fam_all, want, 1e-12);
        ck_close(tmax, r.iteration_s, REL);
        size_t nw = 0;
        for (size_t i = 0; i < r.nintervals; i++) {
          const sc_sched_interval *a = &r.intervals[i];
          ck_assert(a->end_s >= a->start_s);
          ck_assert(a->end_s <= r.iteration_s * (1 + 1e-12));
          if (a->lane != SC_LANE_COMPUTE) continue;
          nw += a->kind == SC_IV_WGRAD;
          for (size_t j = i + 1; j < r.nintervals; j++) {
            const sc_sched_interval *b = &r.intervals[j];
            if (b->lane != SC_LANE_COMPUTE || b->stage != a->stage) continue;
            ck_assert_msg(a->end_s <= b->start_s + 1e-15 || b->end_s <= a->start_s + 1e-15,
                          "overlap on stage %u", a->stage);
          }
        }
        ck_assert_uint_eq(nw, (size_t)p * m);
        ck_assert_uint_eq(r.nflows, 2u * m * (p - 1));
      }
}
END_TEST

/* Replay of a cached order (same shape, other times) under the new schedules gives what a
 * fresh workspace gives, bit for bit; the same shape under another schedule is not
 * replayed. */
START_TEST(zb_workspace_reuse) {
  sc_error err;
  sc_sched_chunk *a = uniform_bw(8, 1.0, 1.5, 0.5);
  const sc_schedule_kind kinds[] = {SC_SCHED_ZB_H1, SC_SCHED_DUALPIPE, SC_SCHED_1F1B};
  double first[3];
  for (int k = 0; k < 3; k++) {
    sc_sched_input in = input(kinds[k], 8, 1, 32, a);
    sc_sched_result r1;
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r1, &err), SC_OK);
    first[k] = r1.iteration_s;
  }
  ck_assert(first[0] < first[2] && first[1] < first[2]);
  a[3].fwd_s = 1.5;
  a[5].p2p_bwd_s = 0.25;
  a[6].wgrad_s = 0.25;
  for (int k = 0; k < 2; k++) {
    sc_sched_input in = input(kinds[k], 8, 1, 32, a);
    sc_sched_result r1, r2;
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r1, &err), SC_OK); /* builds */
    a[2].bwd_s += 0.125;
    ck_assert_int_eq(sc_schedule_run(ws, &in, &r1, &err), SC_OK); /* replays */
    sc_sched_workspace *fresh;
    ck_assert_int_eq(sc_sched_workspace_new(&fresh, &err), SC_OK);
    ck_assert_int_eq(sc_schedule_run(fresh, &in, &r2, &err), SC_OK);
    ck_assert(r1.iteration_s == r2.iteration_s);
    ck_assert(r1.breakdown.bubble_s == r2.breakdown.bubble_s);
    ck_assert(r1.iteration_s > first[k]);
    sc_sched_workspace_free(fresh);
  }
  free(a);
}
END_TEST

/* Parameters the new schedules refuse, each naming what is wrong. */
START_TEST(zb_malformed) {
  sc_error err;
  sc_sched_result r;
  sc_sched_chunk *c = uniform_bw(8, 1.0, 2.0, 0.5);
  sc_sched_input in = input(SC_SCHED_DUALPIPE, 3, 1, 12, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "even pp"));
  in = input(SC_SCHED_DUALPIPE, 4, 1, 9, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "even microbatches"));
  in = input(SC_SCHED_DUALPIPE, 4, 1, 6, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "2*pp"));
  in = input(SC_SCHED_DUALPIPE, 4, 2, 8, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "virtual stages"));
  in = input(SC_SCHED_ZB_H1, 4, 2, 8, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  in = input(SC_SCHED_ZB_H1, 4, 1, 8, c);
  c[2].wgrad_s = 2.6; /* more than bwd_s = 2.5 */
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "chunks[2].wgrad_s"));
  c[2].wgrad_s = -0.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "chunks[2].wgrad_s"));
  c[2].wgrad_s = NAN;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_EINVAL);
  c[2].wgrad_s = 0.5;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  /* one that runs: the smallest DualPipe */
  in = input(SC_SCHED_DUALPIPE, 2, 1, 4, c);
  ck_assert_int_eq(sc_schedule_run(ws, &in, &r, &err), SC_OK);
  free(c);
}
END_TEST

START_TEST(names) {
  ck_assert_str_eq(sc_schedule_kind_name(SC_SCHED_INTERLEAVED), "interleaved-1f1b");
  ck_assert_str_eq(sc_lane_name(SC_LANE_P2P_NEXT), "p2p-next");
  ck_assert_str_eq(sc_lane_name((sc_lane)99), "unknown");
  ck_assert_str_eq(sc_interval_kind_name(SC_IV_DP_PARAM), "dp-param-gather");
  ck_assert_str_eq(sc_schedule_kind_name(SC_SCHED_ZB_H1), "zb-h1");
  ck_assert_str_eq(sc_schedule_kind_name(SC_SCHED_DUALPIPE), "dualpipe");
  sc_schedule_kind k;
  ck_assert_int_eq(sc_schedule_kind_parse("zb-h1", &k), SC_OK);
  ck_assert_int_eq(k, SC_SCHED_ZB_H1);
  ck_assert_int_eq(sc_schedule_kind_parse("dualpipe", &k), SC_OK);
  ck_assert_int_eq(k, SC_SCHED_DUALPIPE);
  ck_assert_int_eq(sc_schedule_kind_parse("zb-h2", &k), SC_EINVAL);
}
END_TEST

static Suite *schedule_suite(void) {
  Suite *s = suite_create("schedule");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, bubble_1f1b);
  tcase_add_test(tc, bubble_gpipe);
  tcase_add_test(tc, bubble_interleaved);
  tcase_add_test(tc, two_stage_hand);
  tcase_add_test(tc, tp_overlap);
  tcase_add_test(tc, tp_overlap_fixed);
  tcase_add_test(tc, shard_overlap);
  tcase_add_test(tc, dp_grad_overlap);
  tcase_add_test(tc, param_gather);
  tcase_add_test(tc, p2p_exposed);
  tcase_add_test(tc, p2p_blocking);
  tcase_add_test(tc, breakdown_consistent);
  tcase_add_test(tc, workspace_reuse);
  tcase_add_test(tc, large);
  tcase_add_test(tc, malformed);
  tcase_add_test(tc, bubble_zbh1);
  tcase_add_test(tc, zbh1_bounds);
  tcase_add_test(tc, zbh1_hand);
  tcase_add_test(tc, bubble_dualpipe);
  tcase_add_test(tc, dualpipe_hand);
  tcase_add_test(tc, inflight_counts);
  tcase_add_test(tc, zbh1_grad_reduce);
  tcase_add_test(tc, zb_breakdown_consistent);
  tcase_add_test(tc, zb_workspace_reuse);
  tcase_add_test(tc, zb_malformed);
  tcase_add_test(tc, names);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(schedule_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
