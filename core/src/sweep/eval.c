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
 *     they are), so three sc_memory_per_gpu calls decide what the loop over all stages does.
 *   - The arithmetic that feeds the result (sums over families, chunks and stages) runs in
 *     sc_predict's order, so the numbers are the same bit for bit; tests/test_sweep.c
 *     compares every field with sc_predict's.
 *
 * Keep in step with predict.c: a change to how it composes chunk times must be made here
 * too (the test fails otherwise).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/ops.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"
#include "sweep/sweep_int.h"

const char *const sc__sweep_families[SC__SWEEP_NFAM] = {
    SC_OP_GEMM, SC_OP_ATTENTION, SC_OP_SOFTMAX, SC_OP_NORM, SC_OP_ELEMENTWISE,
    SC_OP_EMBEDDING, SC_OP_CROSS_ENTROPY, SC_OP_MEMCPY};

/* predict.c's family_index (the same answer): the workload's family pointers are the
 * SC_OP_* literals, so an address match settles it before any string comparison. */
static size_t family_index(const char *fam) {
  for (size_t i = 0; i < SC__SWEEP_NFAM; i++)
    if (fam == sc__sweep_families[i]) return i;
  for (size_t i = 0; i < SC__SWEEP_NFAM; i++)
    if (strcmp(fam, sc__sweep_families[i]) == 0) return i;
  return SC__SWEEP_NFAM;
}

static int okey_eq(const sc__sweep_omemo_key *a, const sc__sweep_omemo_key *b) {
  if (a->family != b->family || a->variant != b->variant || a->dtype != b->dtype ||
      a->ndims != b->ndims)
    return 0;
  for (uint32_t i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

int sc__sweep_make_spans(const sc_topology *t, const sc_parallel *p, sc__sweep_span_set *s,
                    sc_error *err) {
  int rc;
  memset(s, 0, sizeof *s);
  for (int g = 0; g < SC_GROUP_COUNT; g++) {
    sc_parallel q = *p;
    if (g == SC_GROUP_DP) {
      uint32_t ci = 0, di = 0;
      for (uint32_t i = 0; i < SC_GROUP_COUNT; i++) {
        if (p->order[i] == SC_GROUP_CP) ci = i;
        if (p->order[i] == SC_GROUP_DP) di = i;
      }
      if (p->cp > 1 && di != ci + 1) {
        return sc_error_set(err, SC_ECONFIG,
                            "order: context parallel must sit just inside data parallel");
      }
      q.dp = p->dp * p->cp;
      q.cp = 1;
    }
    rc = sc_comm_group(t, &q, (sc_group_kind)g, &s->g[g], err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

static void pair_span(const sc_coll_desc *pp, sc_coll_desc *out) {
  int top = -1;
  *out = *pp;
  for (uint32_t i = 0; i < pp->ntiers; i++) {
    if (pp->tiers[i].ranks > 1) top = (int)i;
  }
  for (uint32_t i = 0; i < pp->ntiers; i++) out->tiers[i].ranks = ((int)i == top) ? 2 : 1;
  out->nranks = 2;
}

static int coll_time(sc_registry *reg, const sc_topology *t, const sc__sweep_span_set *s,
                     const sc_work_coll *wc, const char *algo, sc__sweep_cmemo *cm,
                     double *time_s, sc_error *err) {
  sc_coll_desc d;
  sc_estimate e;
  int rc;
  *time_s = 0.0;
  if (wc->nranks <= 1 || wc->bytes <= 0.0) return SC_OK;
  sc__sweep_cmemo_key k;
  uint32_t h = 0;
  if (cm != NULL) {
    memset(&k, 0, sizeof k);
    k.group = (uint32_t)wc->group;
    k.kind = (uint32_t)wc->kind;
    k.nranks = wc->nranks;
    k.dtype = (uint32_t)wc->dtype;
    k.direct = algo[0] == 'd';
    k.bytes = wc->bytes;
    uint64_t b;
    memcpy(&b, &k.bytes, sizeof b);
    uint64_t x = b ^ ((uint64_t)k.group << 56) ^ ((uint64_t)k.kind << 48) ^
                 ((uint64_t)k.nranks << 20) ^ ((uint64_t)k.dtype << 8) ^ k.direct;
    h = (uint32_t)(sc__sweep_mix64(x) >> 32) & (SC__SWEEP_CMEMO - 1);
    while (cm->used[h]) {
      if (memcmp(&cm->key[h], &k, sizeof k) == 0) {
        *time_s = cm->time_s[h] * (double)wc->repeat;
        return SC_OK;
      }
      h = (h + 1) & (SC__SWEEP_CMEMO - 1);
    }
  }
  if (wc->group == SC_GROUP_PP && wc->nranks == 2 && s->g[SC_GROUP_PP].nranks != 2) {
    pair_span(&s->g[SC_GROUP_PP], &d);
  } else {
    d = s->g[wc->group];
  }
  if (d.nranks != wc->nranks) {
    return sc_error_set(err, SC_ECONFIG,
                        "collective '%s': workload group of %u ranks, placement gives %u",
                        wc->label, wc->nranks, d.nranks);
  }
  d.kind = wc->kind;
  d.bytes = wc->bytes;
  d.dtype = wc->dtype;
  rc = sc_comm_estimate(reg, t, &d, algo, &e, NULL, err);
  if (rc != SC_OK) return rc;
  if (cm != NULL && cm->n < SC__SWEEP_CMEMO / 2) {
    cm->used[h] = 1;
    cm->key[h] = k;
    cm->time_s[h] = e.time_s;
    cm->n++;
  }
  *time_s = e.time_s * (double)wc->repeat;
  return SC_OK;
}

static int p2p_time(sc_registry *reg, const sc_topology *t, const sc__sweep_span_set *s,
                    double bytes, sc_dtype dt, sc__sweep_cmemo *cm, double *time_s,
                    sc_error *err) {
  sc_work_coll wc;
  memset(&wc, 0, sizeof wc);
  wc.kind = SC_COLL_SENDRECV;
  wc.group = SC_GROUP_PP;
  wc.nranks = s->g[SC_GROUP_PP].nranks;
  wc.bytes = bytes;
  wc.dtype = dt;
  wc.repeat = 1;
  snprintf(wc.label, sizeof wc.label, "pp.p2p");
  return coll_time(reg, t, s, &wc, "direct", cm, time_s, err);
}

/* The registry's time for op, through the sweep's memo. */
static int op_time(sc_registry *reg, const sc_device *dev, const sc_op_desc *d,
                   sc__sweep_omemo *om, double *time_s, sc_error *err) {
  sc__sweep_omemo_key k;
  uint32_t h = 0;
  if (om != NULL && d->ndims <= SC_OP_MAX_DIMS) {
    memset(&k, 0, sizeof k);
    k.family = d->family;
    k.variant = d->variant;
    k.dtype = (uint32_t)d->dtype;
    k.ndims = d->ndims;
    uint64_t x = (uint64_t)(uintptr_t)d->family * 0x9E3779B97F4A7C15ull;
    x ^= ((uint64_t)k.variant << 40) ^ ((uint64_t)k.dtype << 32) ^ k.ndims;
    for (uint32_t i = 0; i < d->ndims; i++) {
      k.dims[i] = d->dims[i];
      x = (x ^ (uint64_t)d->dims[i]) * 0x100000001B3ull;
    }
    x = sc__sweep_mix64(x);
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
  int rc = sc_registry_estimate_op(reg, dev, d, &e, err);
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

static int ops_time(sc_registry *reg, const sc_device *dev, const sc_work_list *l,
                    sc__sweep_omemo *om, double *total, double *fam, sc_error *err) {
  double sum = 0.0;
  for (uint32_t i = 0; i < l->nops; i++) {
    const sc_work_op *o = &l->ops[i];
    double t_s;
    size_t f = family_index(o->desc.family);
    int rc = op_time(reg, dev, &o->desc, om, &t_s, err);
    if (rc != SC_OK) return rc;
    if (fam != NULL && f >= SC__SWEEP_NFAM) {
      return sc_error_set(err, SC_EINVAL, "operator '%s': family '%s' has no breakdown slot",
                          o->label, o->desc.family);
    }
    double ts = t_s * (double)o->repeat;
    sum += ts;
    if (fam != NULL) fam[f] += ts;
  }
  *total = sum;
  return SC_OK;
}

static int colls_micro(sc_registry *reg, const sc_topology *t, const sc__sweep_span_set *s,
                       const sc_work_list *l, const char *algo, sc__sweep_cmemo *cm,
                       double *tp_s, double *cp_s, sc_error *err) {
  for (uint32_t i = 0; i < l->ncolls; i++) {
    double ts;
    int rc = coll_time(reg, t, s, &l->colls[i], algo, cm, &ts, err);
    if (rc != SC_OK) return rc;
    if (l->colls[i].group == SC_GROUP_CP) {
      *cp_s += ts;
    } else {
      *tp_s += ts;
    }
  }
  return SC_OK;
}

int sc__sweep_chunk_micro(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                          const sc_device *dev, const sc__sweep_span_set *sp, const char *algo,
                          sc__sweep_cmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                          sc_error *err) {
  sc_sched_chunk *ch = &out->ch;
  double *ff = out->fam;
  int rc;
  ch->tp_fwd_s = ch->cp_fwd_s = ch->tp_bwd_s = ch->cp_bwd_s = 0.0;
  memset(ff, 0, sizeof out->fam);
  rc = ops_time(reg, dev, &w->per_micro[SC_PHASE_FWD], om, &ch->fwd_s, ff, err);
  if (rc == SC_OK)
    rc = ops_time(reg, dev, &w->per_micro[SC_PHASE_BWD], om, &ch->bwd_s, ff + SC__SWEEP_NFAM, err);
  if (rc == SC_OK)
    rc = ops_time(reg, dev, &w->per_micro[SC_PHASE_RECOMPUTE], om, &ch->recompute_s,
                  ff + 2 * SC__SWEEP_NFAM, err);
  if (rc == SC_OK)
    rc = colls_micro(reg, t, sp, &w->per_micro[SC_PHASE_FWD], algo, cm, &ch->tp_fwd_s,
                     &ch->cp_fwd_s, err);
  if (rc == SC_OK)
    rc = colls_micro(reg, t, sp, &w->per_micro[SC_PHASE_BWD], algo, cm, &ch->tp_bwd_s,
                     &ch->cp_bwd_s, err);
  if (rc == SC_OK) /* recomputation's TP comm runs inside the backward pass */
    rc = colls_micro(reg, t, sp, &w->per_micro[SC_PHASE_RECOMPUTE], algo, cm, &ch->tp_bwd_s,
                     &ch->cp_bwd_s, err);
  if (rc != SC_OK) return rc;
  out->flops[0] = w->flops[SC_PHASE_FWD];
  out->flops[1] = w->flops[SC_PHASE_BWD];
  out->flops[2] = w->flops[SC_PHASE_RECOMPUTE];
  return SC_OK;
}

int sc__sweep_chunk_iter(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                         const sc_device *dev, const sc__sweep_span_set *sp, const char *algo,
                         sc__sweep_cmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                         sc_error *err) {
  sc_sched_chunk *ch = &out->ch;
  int rc;
  ch->dp_param_gather_s = ch->dp_grad_s = ch->p2p_fwd_s = ch->p2p_bwd_s = 0.0;
  rc = ops_time(reg, dev, &w->per_iter, om, &out->t_opt, NULL, err);
  if (rc != SC_OK) return rc;
  for (uint32_t i = 0; i < w->per_iter.ncolls; i++) {
    const sc_work_coll *wc = &w->per_iter.colls[i];
    double ts;
    rc = coll_time(reg, t, sp, wc, algo, cm, &ts, err);
    if (rc != SC_OK) return rc;
    if (wc->group == SC_GROUP_DP && wc->phase == SC_PHASE_FWD) {
      ch->dp_param_gather_s += ts;
    } else {
      ch->dp_grad_s += ts; /* gradient reduction, tied-embedding gradient all-reduce */
    }
  }
  if (w->p2p_send_fwd_bytes > 0) {
    rc = p2p_time(reg, t, sp, w->p2p_send_fwd_bytes, w->p2p_dtype, cm, &ch->p2p_fwd_s, err);
    if (rc != SC_OK) return rc;
  }
  if (w->p2p_send_bwd_bytes > 0) {
    rc = p2p_time(reg, t, sp, w->p2p_send_bwd_bytes, w->p2p_dtype, cm, &ch->p2p_bwd_s, err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

int sc__sweep_memory(const sc_model *m, const sc_parallel *p, const sc_device *dev,
                     int allow_oom, sc_memory_usage *mu, sc_error *err) {
  uint32_t cand[3], n = 0;
  sc_memory worst;
  memset(&worst, 0, sizeof worst);
  cand[n++] = 0;
  if (p->pp > 2) cand[n++] = 1;
  if (p->pp > 1) cand[n++] = p->pp - 1;
  for (uint32_t i = 0; i < n; i++) {
    sc_memory mem;
    int rc = sc_memory_per_gpu(m, p, cand[i], &mem, err);
    if (rc != SC_OK) return rc;
    /* The worst exceeds the device iff one stage does: stop at the first. */
    if (!allow_oom && dev->mem_bytes > 0 && mem.total_bytes > dev->mem_bytes)
      return SC_ENOFIT; /* counted by the caller; no message to format */
    if (cand[i] == 0 || mem.total_bytes > worst.total_bytes) worst = mem;
  }
  memset(mu, 0, sizeof *mu);
  mu->weights_bytes = worst.weights_bytes;
  mu->grads_bytes = worst.grads_bytes;
  mu->optimizer_bytes = worst.optimizer_bytes;
  mu->activations_bytes = worst.activations_bytes;
  mu->total_bytes = worst.total_bytes;
  mu->capacity_bytes = dev->mem_bytes;
  return SC_OK;
}

/* The schedule's exposed part of communication c under compute x with overlap fraction f
 * (schedule.c's formula). */
static inline double exposed(double c, double f, double x) {
  double hid = c * f;
  double over = hid - x;
  return (c - hid) + (over > 0.0 ? over : 0.0);
}

double sc__sweep_lower_bound(const sc_parallel *p, uint32_t mb, const sc_sched_chunk *chunks,
                             const double *opt_s) {
  uint32_t pp = p->pp, vp = p->virtual_stages;
  double tpf = p->overlap_tp_comm ? 1.0 : 0.0, best = 0.0, arrive = 0.0;
  for (uint32_t r = 0; r < pp; r++) {
    double gather = 0.0, work = 0.0, dp = 0.0;
    for (uint32_t c = 0; c < vp; c++) {
      const sc_sched_chunk *ch = &chunks[c * pp + r];
      double x = ch->recompute_s + ch->bwd_s;
      work += ch->fwd_s + exposed(ch->tp_fwd_s, tpf, ch->fwd_s) +
              exposed(ch->cp_fwd_s, 1.0, ch->fwd_s) + x + exposed(ch->tp_bwd_s, tpf, x) +
              exposed(ch->cp_bwd_s, 1.0, x);
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
