/*
 * The sweep's fast path for one configuration: the same computation as sc_predict
 * (core/src/predict/predict.c), reorganised so that repeated work is done once.
 *
 *   - Chunk classes. With an even pipeline split every virtual stage holds the same layers;
 *     what a chunk computes and sends depends only on whether it is the first virtual stage
 *     (embedding, no gradient to send back), the last (output layer, no activation to send)
 *     or neither. So a configuration needs at most three chunk computations, not pp*vp,
 *     and each is memoised across configurations by the parameters it depends on.
 *   - Memory: only stages 0, 1 and pp-1 can be the worst (the middle stages hold the same
 *     weights and activations per micro-batch and fewer micro-batches in flight the later
 *     they are; DualPipe's middle ranks all hold pp + 1 of two equal copies), so three
 *     sc_memory_per_gpu calls decide what the loop over all stages does (ZB-H1, whose later
 *     stages hold more deferred W passes: every stage).
 *   - The arithmetic that feeds the result (sums over families, chunks and stages) runs in
 *     sc_predict's order, so the numbers are the same bit for bit; tests/test_sweep.c
 *     compares every field with sc_predict's.
 *
 * A chunk's times come from the same code as sc_predict's (sc__chunk_micro, sc__chunk_iter
 * and sc__coll_time in predict/compose.c); only the operator callback differs (it memoises).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix64.h"
#include "stepcast/comm.h"
#include "stepcast/ops.h"
#include "stepcast/stack.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"
#include "predict/compose.h"
#include "schedule/exposed.h"
#include "sweep/sweep_int.h"

static int okey_eq(const sc__sweep_omemo_key *a, const sc__sweep_omemo_key *b) {
  if (a->family != b->family || a->variant != b->variant || a->dtype != b->dtype ||
      a->ndims != b->ndims || a->flags != b->flags)
    return 0;
  for (uint32_t i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

/* Timing context of op_time (collectives: sc__coll_time with an sc__coll_ctx). */
typedef struct ectx {
  sc_registry *reg;
  const sc_device *dev;
  sc__sweep_omemo *om;
} ectx;

/* The registry's time for op, through the sweep's memo. */
static int op_time(void *vc, const sc_work_op *o, double *time_s, double *host_s,
                   sc_error *err) {
  const ectx *c = vc;
  *host_s = 0.0; /* sweeps price no software stack (stepcast/stack.h) */
  const sc_op_desc *d = &o->desc;
  sc__sweep_omemo *om = c->om;
  sc__sweep_omemo_key k;
  uint32_t h = 0;
  if (om != NULL && d->ndims <= SC_OP_MAX_DIMS) {
    memset(&k, 0, sizeof k);
    k.family = d->family;
    k.variant = d->variant;
    k.dtype = (uint32_t)d->dtype;
    k.ndims = d->ndims;
    k.flags = d->flags;
    uint64_t x = (uint64_t)(uintptr_t)d->family * 0x9E3779B97F4A7C15ull;
    x ^= ((uint64_t)k.variant << 40) ^ ((uint64_t)k.dtype << 32) ^ k.ndims ^
         ((uint64_t)k.flags << 20);
    for (uint32_t i = 0; i < d->ndims; i++) {
      k.dims[i] = d->dims[i];
      x = (x ^ (uint64_t)d->dims[i]) * 0x100000001B3ull;
    }
    x = sc__mix64(x);
    h = (uint32_t)(x >> 32) & (SC__SWEEP_OMEMO - 1);
    while (om->used[h]) {
      if (okey_eq(&om->key[h], &k)) {
        *time_s = om->time_s[h];
        return SC_OK;
      }
      h = (h + 1) & (SC__SWEEP_OMEMO - 1);
    }
  }
  sc_estimate e;
  int rc = sc_registry_estimate_op(c->reg, c->dev, d, &e, err);
  if (rc != SC_OK) return rc;
  if (om != NULL && d->ndims <= SC_OP_MAX_DIMS) {
    if (om->n >= SC__SWEEP_OMEMO / 2) { /* half full: start over */
      memset(om->used, 0, sizeof om->used);
      om->n = 0;
    } else {
      om->used[h] = 1;
      om->key[h] = k;
      om->time_s[h] = e.time_s;
      om->n++;
    }
  }
  *time_s = e.time_s;
  return SC_OK;
}

int sc__sweep_chunk_micro(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                          const sc_device *dev, const sc__spans *sp, const char *algo,
                          sc__collmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                          sc_error *err) {
  ectx c = {reg, dev, om};
  sc__coll_ctx cc = {reg, t, sp, algo, cm, SC_ESTIMATOR_ANALYTICAL, NULL, dev->compute_units};
  int rc = sc__chunk_micro(w, op_time, &c, &cc, &out->ch, out->fam, err);
  if (rc != SC_OK) return rc;
  out->flops[0] = w->flops[SC_PHASE_FWD];
  out->flops[1] = w->flops[SC_PHASE_BWD];
  out->flops[2] = w->flops[SC_PHASE_RECOMPUTE];
  return SC_OK;
}

int sc__sweep_chunk_iter(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                         const sc_device *dev, const sc__spans *sp, const char *algo,
                         sc__collmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                         sc_error *err) {
  ectx c = {reg, dev, om};
  sc__coll_ctx cc = {reg, t, sp, algo, cm, SC_ESTIMATOR_ANALYTICAL, NULL, dev->compute_units};
  return sc__chunk_iter(w, op_time, &c, &cc, &out->ch, &out->t_opt, err);
}

int sc__sweep_memory(const sc_model *m, const sc_parallel *p, const sc_topology *t,
                     const sc_device *dev, const sc_stack *s, int allow_oom,
                     sc_memory_usage *mu, sc_error *err) {
  uint32_t cand[3], n = 0;
  /* ZB-H1's deferred W passes grow with the stage (rank r defers r of them), so any stage
   * can be the worst: all of them, as sc_predict */
  int all = p->schedule == SC_SCHED_ZB_H1;
  sc_memory worst;
  sc_memory_overhead ov;
  sc_parallel q;
  if (s != NULL && s->amp_layout && !p->amp_layout) { /* the stack's model states, as predict */
    q = *p;
    sc_stack_state_layout(s, &q);
    p = &q;
  }
  memset(&worst, 0, sizeof worst);
  int rc = sc_memory_overhead_of(m, p, dev, s, t, &ov, err);
  if (rc != SC_OK) return rc;
  cand[n++] = 0;
  if (p->pp > 2) cand[n++] = 1;
  if (p->pp > 1) cand[n++] = p->pp - 1;
  if (all) n = p->pp;
  for (uint32_t i = 0; i < n; i++) {
    sc_memory mem;
    uint32_t st = all ? i : cand[i];
    rc = sc_memory_per_gpu(m, p, st, &mem, err);
    if (rc != SC_OK) return rc;
    /* The worst is refused iff one stage is (the device figure grows with the stage's
     * own bytes): stop at the first. sc_predict's test, sc_memory_refused. */
    if (!allow_oom && sc_memory_refused(sc_memory_device_bytes(&mem, &ov), dev->mem_bytes))
      return SC_ENOFIT; /* counted by the caller; no message to format */
    if (st == 0 || mem.total_bytes > worst.total_bytes) worst = mem;
  }
  sc__memory_usage_of(&worst, &ov, dev->mem_bytes, mu);
  return SC_OK;
}

double sc__sweep_lower_bound(const sc_parallel *p, uint32_t mb, const sc_sched_chunk *chunks,
                             const double *opt_s) {
  uint32_t pp = p->pp, vp = p->virtual_stages;
  double tpf = p->overlap_tp_comm ? 1.0 : 0.0, best = 0.0, arrive = 0.0;
  if (p->schedule == SC_SCHED_DUALPIPE) {
    /* a rank runs mb/2 micro-batches through each of its two stage copies; its F&B pairs
     * can hide all TP and CP communication, so only the compute and the sharded
     * communication's exposed part count, from time 0 */
    for (uint32_t r = 0; r < pp; r++) {
      double gather = 0.0, work = 0.0, dp = 0.0;
      const uint32_t st[2] = {r, pp - 1 - r};
      for (int k = 0; k < 2; k++) {
        const sc_sched_chunk *ch = &chunks[st[k]];
        double x = ch->recompute_s + ch->bwd_s;
        work += ch->fwd_s + x + sc__exposed_part(ch->shard_fwd_s, ch->shard_fwd_hide_s, ch->fwd_s) +
                sc__exposed_part(ch->shard_bwd_s, ch->shard_bwd_hide_s, x);
        gather += ch->dp_param_gather_s;
        dp += ch->dp_grad_s;
      }
      double lb = (p->overlap_param_gather ? 0.0 : gather) + 0.5 * (double)mb * work + opt_s[r];
      if (!p->overlap_grad_reduce) lb += dp;
      if (lb > best) best = lb;
    }
    return best;
  }
  for (uint32_t r = 0; r < pp; r++) {
    double gather = 0.0, work = 0.0, dp = 0.0;
    for (uint32_t c = 0; c < vp; c++) {
      const sc_sched_chunk *ch = &chunks[c * pp + r];
      double x = ch->recompute_s + ch->bwd_s;
      work += ch->fwd_s + sc__exposed_tp(ch->tp_fwd_s, ch->tp_fwd_fixed_s, tpf, ch->fwd_s) +
              sc__exposed(ch->cp_fwd_s, 0.0, ch->fwd_s) + x +
              sc__exposed_tp(ch->tp_bwd_s, ch->tp_bwd_fixed_s, tpf, x) +
              sc__exposed(ch->cp_bwd_s, 0.0, x);
      if (ch->shard_fwd_s > 0.0 || ch->shard_bwd_s > 0.0)
        work += sc__exposed_part(ch->shard_fwd_s, ch->shard_fwd_hide_s, ch->fwd_s) +
                sc__exposed_part(ch->shard_bwd_s, ch->shard_bwd_hide_s, x);
      gather += ch->dp_param_gather_s;
      dp += ch->dp_grad_s;
    }
    double start = arrive;
    if (!p->overlap_param_gather && gather > start) start = gather;
    double lb = start + (double)mb * work + opt_s[r];
    if (!p->overlap_grad_reduce) lb += dp;
    if (lb > best) best = lb;
    arrive += chunks[r].fwd_s; /* virtual stage r's first forward precedes r+1's */
  }
  return best;
}
