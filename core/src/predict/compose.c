/* Shared composition pieces of sc_predict and the sweep (see compose.h). */
#include <stdio.h>
#include <string.h>

#include "comm/comm_int.h"
#include "common/mix64.h"
#include "predict/compose.h"
#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/stepcast.h"

const char *const sc__families[SC__NFAM] = {
    SC_OP_GEMM, SC_OP_ATTENTION, SC_OP_SOFTMAX, SC_OP_NORM, SC_OP_ELEMENTWISE,
    SC_OP_EMBEDDING, SC_OP_CROSS_ENTROPY, SC_OP_MEMCPY};

size_t sc__family_index(const char *family) {
  /* The workload's family pointers are the SC_OP_* literals: an address match settles it
   * before any string comparison. */
  for (size_t i = 0; i < SC__NFAM; i++) {
    if (family == sc__families[i]) return i;
  }
  for (size_t i = 0; i < SC__NFAM; i++) {
    if (strcmp(family, sc__families[i]) == 0) return i;
  }
  return SC__NFAM;
}

int sc__spans_make(const sc_topology *t, const sc_parallel *p, sc__spans *s, sc_error *err) {
  memset(s, 0, sizeof *s);
  for (int g = 0; g < SC_GROUP_COUNT; g++) {
    sc_parallel q = *p;
    if (g == SC_GROUP_DP) {
      /* With CP placed right inside DP, DP x CP is one contiguous group of dp*cp ranks. */
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
    int rc = sc_comm_group(t, &q, (sc_group_kind)g, &s->g[g], err);
    if (rc != SC_OK) return rc;
  }
  s->shard = s->replica = s->g[SC_GROUP_DP];
  uint32_t dpc = p->dp * p->cp, S = sc_parallel_shard_ranks(p);
  if (S > 1 && S < dpc) { /* HSDP: the shard and the replicas of one, in the DP x CP group */
    sc_parallel q = *p;
    q.dp = dpc;
    q.cp = 1;
    int rc = sc__comm_group_part(t, &q, SC_GROUP_DP, 1, S, "DP shard", &s->shard, err);
    if (rc == SC_OK)
      rc = sc__comm_group_part(t, &q, SC_GROUP_DP, S, dpc / S, "DP replica", &s->replica, err);
    if (rc != SC_OK) return rc;
  }
  {
    /* Expert groups: the stage's tp*cp*dp ranks (contiguous with PP outermost) as
     * ETP (every rank, etp of them), EP (every etp-th, ep), EDP (every etp*ep-th). */
    uint32_t ep = sc_parallel_ep(p), etp = sc_parallel_etp(p), fold = p->tp * p->cp * p->dp;
    uint32_t edp = sc_parallel_edp(p);
    if (ep * etp > 1 && p->order[SC_GROUP_COUNT - 1] != SC_GROUP_PP)
      return sc_error_set(err, SC_ECONFIG, "order: expert parallelism (ep %u, etp %u) needs "
                          "PP outermost", ep, etp);
    if (edp == 0)
      return sc_error_set(err, SC_ECONFIG, "ep: ep*etp (%u x %u) must divide tp*cp*dp (%u)",
                          ep, etp, fold);
    sc_parallel q;
    sc_parallel_defaults(&q);
    q.dp = fold;
    q.pp = p->pp;
    const uint32_t every[3] = {1, etp, etp * ep}, n[3] = {etp, ep, edp};
    const char *const nm[3] = {"ETP", "EP", "EDP"};
    for (int i = 0; i < 3; i++) {
      int rc = sc__comm_group_part(t, &q, SC_GROUP_DP, every[i], n[i], nm[i], &s->g_moe[i], err);
      if (rc != SC_OK) return rc;
    }
  }
  return SC_OK;
}

int sc__coll_desc(const sc__spans *s, const sc_work_coll *wc, sc_coll_desc *d, sc_error *err) {
  const sc_coll_desc *pp = &s->g[SC_GROUP_PP];
  if (wc->group == SC_GROUP_PP && wc->nranks == 2 && pp->nranks != 2) {
    int top = -1;
    *d = *pp;
    for (uint32_t i = 0; i < pp->ntiers; i++) {
      if (pp->tiers[i].ranks > 1) top = (int)i;
    }
    for (uint32_t i = 0; i < pp->ntiers; i++) d->tiers[i].ranks = ((int)i == top) ? 2 : 1;
    d->nranks = 2;
  } else if (wc->group == SC_GROUP_DP && wc->subgroup == SC_DP_SHARD) {
    *d = s->shard;
  } else if (wc->group == SC_GROUP_DP && wc->subgroup == SC_DP_REPLICA) {
    *d = s->replica;
  } else if (wc->group >= SC_GROUP_ETP && wc->group <= SC_GROUP_EDP) {
    *d = s->g_moe[wc->group - SC_GROUP_ETP];
  } else if ((unsigned)wc->group >= SC_GROUP_COUNT) {
    return sc_error_set(err, SC_EINVAL, "collective '%s': group kind %d is unknown", wc->label,
                        (int)wc->group);
  } else {
    *d = s->g[wc->group];
  }
  if (d->nranks != wc->nranks) {
    return sc_error_set(err, SC_ECONFIG,
                        "collective '%s': workload group of %u ranks, placement gives %u",
                        wc->label, wc->nranks, d->nranks);
  }
  d->kind = wc->kind;
  d->bytes = wc->bytes;
  d->dtype = wc->dtype;
  return SC_OK;
}

void sc__p2p_work(const sc__spans *s, double bytes, sc_dtype dt, sc_work_coll *wc) {
  memset(wc, 0, sizeof *wc);
  wc->kind = SC_COLL_SENDRECV;
  wc->group = SC_GROUP_PP;
  wc->nranks = s->g[SC_GROUP_PP].nranks;
  wc->bytes = bytes;
  wc->dtype = dt;
  wc->repeat = 1;
  snprintf(wc->label, sizeof wc->label, "pp.p2p");
}

/* Past this many layers a run of layer operators is taken to repeat its last layer's
 * increments (the stream settles within a layer or two). */
#define SC__STREAM_LAYERS 64u

void sc__result_set_training(sc_result *res, const sc_device *dev, const sc_predict_opts *o) {
  res->token_budget = o->token_budget;
  res->board_power_w = dev->board_power_w;
  res->power_fraction = o->power_fraction;
  res->pue = o->pue;
  res->price_per_gpu_hour = o->price_per_gpu_hour;
}

int sc__op_is_wgrad(const sc_work_op *o) {
  size_t n = strlen(o->label);
  if (n < 6 || strcmp(o->label + n - 6, ".wgrad") != 0) return 0;
  /* the unfused attention's "wgrad" GEMMs are dK and dV: activation gradients */
  return strncmp(o->label, "attn_qk.", 8) != 0 && strncmp(o->label, "attn_av.", 8) != 0;
}

/* sc__ops_sum, and into *wshare (when not NULL) the part of the total that the list's
 * weight-gradient GEMMs take (sc__op_is_wgrad), counted as a family's share is. */
static int ops_sum(const sc_work_list *l, sc__op_time_fn fn, void *ctx, double *total,
                   double *fam, double *lead, double *wshare, double *each, sc_error *err) {
  double g[SC_WORK_MAX_OPS], h[SC_WORK_MAX_OPS];
  size_t fi[SC_WORK_MAX_OPS];
  unsigned char isw[SC_WORK_MAX_OPS];
  double sum = 0.0, fplain[SC__NFAM] = {0}, wplain = 0.0;
  int stream = 0;
  if (l->nops > SC_WORK_MAX_OPS)
    return sc_error_set(err, SC_EINVAL, "work list of %u operators (at most %d)", l->nops,
                        SC_WORK_MAX_OPS);
  for (uint32_t i = 0; i < l->nops; i++) {
    const sc_work_op *o = &l->ops[i];
    size_t f = sc__family_index(o->desc.family);
    h[i] = 0.0;
    int rc = fn(ctx, o, &g[i], &h[i], err);
    if (rc != SC_OK) return rc;
    if (fam != NULL && f >= SC__NFAM) {
      return sc_error_set(err, SC_EINVAL, "operator '%s': family '%s' has no breakdown slot",
                          o->label, o->desc.family);
    }
    fi[i] = f;
    isw[i] = wshare != NULL && sc__op_is_wgrad(o);
    if (h[i] > 0.0) stream = 1;
    if (each != NULL) each[i] = g[i];
    double ts = g[i] * (double)o->repeat;
    sum += ts;
    if (f < SC__NFAM) fplain[f] += ts;
    if (isw[i]) wplain += ts;
  }
  if (!stream) {
    if (fam != NULL)
      for (size_t f = 0; f < SC__NFAM; f++) fam[f] += fplain[f];
    if (wshare != NULL) *wshare = wplain;
    *total = sum;
    if (lead != NULL && *lead > 0) *lead += sum; /* dispatched at once: still ahead */
    return SC_OK;
  }
  /* one stream from the pass's start on the GPU, which the host reached *lead before */
  double fsum[SC__NFAM] = {0}, host = lead != NULL && *lead > 0 ? -*lead : 0.0, gpu = 0.0;
  double wsum = 0.0;
  for (uint32_t i = 0; i < l->nops;) {
    const sc_work_op *o = &l->ops[i];
    if (o->where != SC_WHERE_LAYER || o->repeat <= 1) {
      double before = gpu;
      sc_stack_stream(&host, &gpu, h[i], g[i], o->repeat);
      if (fi[i] < SC__NFAM) fsum[fi[i]] += gpu - before;
      if (isw[i]) wsum += gpu - before;
      i++;
      continue;
    }
    uint32_t j = i + 1, R = o->repeat;
    while (j < l->nops && l->ops[j].where == SC_WHERE_LAYER && l->ops[j].repeat == R) j++;
    uint32_t n = R < SC__STREAM_LAYERS ? R : SC__STREAM_LAYERS;
    double last[SC__NFAM], wlast = 0.0, dh = 0.0, dg = 0.0;
    for (uint32_t r = 0; r < n; r++) {
      double h0 = host, g0 = gpu;
      memset(last, 0, sizeof last);
      wlast = 0.0;
      for (uint32_t k = i; k < j; k++) {
        double before = gpu;
        sc_stack_stream(&host, &gpu, h[k], g[k], 1);
        if (fi[k] < SC__NFAM) last[fi[k]] += gpu - before;
        if (isw[k]) wlast += gpu - before;
      }
      for (size_t f = 0; f < SC__NFAM; f++) fsum[f] += last[f];
      wsum += wlast;
      dh = host - h0;
      dg = gpu - g0;
    }
    if (R > n) { /* the last layer's increments for the rest */
      double more = (double)(R - n);
      host += more * dh;
      gpu += more * dg;
      for (size_t f = 0; f < SC__NFAM; f++) fsum[f] += more * last[f];
      wsum += more * wlast;
    }
    i = j;
  }
  if (fam != NULL)
    for (size_t f = 0; f < SC__NFAM; f++) fam[f] += fsum[f];
  if (wshare != NULL) *wshare = wsum;
  *total = gpu;
  if (lead != NULL) *lead = gpu > host ? gpu - host : 0.0;
  return SC_OK;
}

int sc__ops_sum(const sc_work_list *l, sc__op_time_fn fn, void *ctx, double *total,
                double *fam, double *lead, sc_error *err) {
  return ops_sum(l, fn, ctx, total, fam, lead, NULL, NULL, err);
}

/* wc's time x its repeat count; nothing for a trivial one (one rank or no bytes). */
static int coll_total(sc__coll_time_fn fn, void *ctx, const sc_work_coll *wc, double *ts,
                      sc_error *err) {
  double t1 = 0.0;
  if (wc->nranks > 1 && wc->bytes > 0.0) {
    int rc = fn(ctx, wc, &t1, err);
    if (rc != SC_OK) return rc;
  }
  *ts = t1 * (double)wc->repeat;
  return SC_OK;
}

int sc__colls_sum_micro(const sc_work_list *l, sc__coll_time_fn fn, void *ctx, double *tp_s,
                        double *tp_fixed_s, double *cp_s, double *dp_s, double *dp_hide_s,
                        sc_error *err) {
  double hide = 0.0, unit = 0.0;
  for (uint32_t i = 0; i < l->ncolls; i++) {
    const sc_work_coll *wc = &l->colls[i];
    double ts;
    int rc = coll_total(fn, ctx, wc, &ts, err);
    if (rc != SC_OK) return rc;
    if (wc->group == SC_GROUP_CP) {
      *cp_s += ts;
    } else if (wc->group == SC_GROUP_DP) {
      *dp_s += ts;
      if (wc->overlappable && ts > 0.0) {
        double one = ts / (double)wc->repeat;
        hide += ts;
        if (one > unit) unit = one;
      }
    } else {
      *tp_s += ts; /* TP, and the MoE layers' EP all-to-alls and ETP collectives */
      if (!wc->overlappable) *tp_fixed_s += ts; /* exposed whatever tp_overlap_frac says */
    }
  }
  /* prefetching hides every overlappable unit but one: the first gather has no compute
   * before it, the last reduction none after it */
  if (hide > unit) *dp_hide_s += hide - unit;
  return SC_OK;
}

static void collmemo_key(const sc_work_coll *wc, const char *algo, sc__collmemo_key *k) {
  memset(k, 0, sizeof *k);
  k->group = (uint32_t)wc->group;
  k->kind = (uint32_t)wc->kind;
  k->nranks = wc->nranks;
  k->dtype = (uint32_t)wc->dtype;
  k->direct = algo[0] == 'd';
  k->pad = wc->subgroup;
  k->bytes = wc->bytes;
}

void sc__memory_usage_of(const sc_memory *worst, const sc_memory_overhead *o,
                         double capacity_bytes, sc_memory_usage *mu) {
  memset(mu, 0, sizeof *mu);
  mu->weights_bytes = worst->weights_bytes;
  mu->grads_bytes = worst->grads_bytes;
  mu->optimizer_bytes = worst->optimizer_bytes;
  mu->activations_bytes = worst->activations_bytes;
  mu->workspace_bytes = o->workspace_bytes;
  mu->fragmentation_bytes =
      sc_memory_reserved_bytes(worst, o) - sc_memory_allocated_bytes(worst, o);
  mu->context_bytes = o->context_bytes;
  mu->comm_bytes = o->comm_bytes;
  mu->communicators = o->communicators;
  mu->other_bytes =
      mu->workspace_bytes + mu->fragmentation_bytes + mu->context_bytes + mu->comm_bytes;
  mu->total_bytes = sc_memory_device_bytes(worst, o);
  mu->capacity_bytes = capacity_bytes;
}

void sc__collmemo_clear(sc__collmemo *m) {
  m->n = 0;
  memset(m->used, 0, sizeof m->used);
}

int sc__collmemo_get(const sc__collmemo *m, const sc_work_coll *wc, const char *algo,
                     double *time_s, uint32_t *slot) {
  sc__collmemo_key k;
  uint64_t b;
  collmemo_key(wc, algo, &k);
  memcpy(&b, &k.bytes, sizeof b);
  uint64_t x = b ^ ((uint64_t)k.group << 56) ^ ((uint64_t)k.kind << 48) ^
               ((uint64_t)k.nranks << 20) ^ ((uint64_t)k.dtype << 8) ^ k.direct;
  uint32_t h = (uint32_t)(sc__mix64(x) >> 32) & (SC__COLLMEMO - 1);
  while (m->used[h]) {
    if (memcmp(&m->key[h], &k, sizeof k) == 0) {
      *time_s = m->time_s[h];
      return 1;
    }
    h = (h + 1) & (SC__COLLMEMO - 1);
  }
  *slot = h;
  return 0;
}

void sc__collmemo_put(sc__collmemo *m, const sc_work_coll *wc, const char *algo,
                      uint32_t slot, double time_s) {
  if (m->n >= SC__COLLMEMO / 2) return;
  m->used[slot] = 1;
  collmemo_key(wc, algo, &m->key[slot]);
  m->time_s[slot] = time_s;
  m->n++;
}

void sc__cp_hide_under_attention(sc_sched_chunk *ch, const double *fam) {
  size_t a = sc__family_index(SC_OP_ATTENTION), sm = sc__family_index(SC_OP_SOFTMAX);
  double fwd = fam[a] + fam[sm];
  double bwd = fam[SC__NFAM + a] + fam[SC__NFAM + sm] + fam[2 * SC__NFAM + a] +
               fam[2 * SC__NFAM + sm];
  ch->cp_fwd_s = ch->cp_fwd_s > fwd ? ch->cp_fwd_s - fwd : 0.0;
  ch->cp_bwd_s = ch->cp_bwd_s > bwd ? ch->cp_bwd_s - bwd : 0.0;
}

int sc__coll_time(void *ctx, const sc_work_coll *wc, double *time_s, sc_error *err) {
  const sc__coll_ctx *c = ctx;
  /* send/recv and all-to-all have one algorithm each (NCCL's), whatever --algo asks */
  const char *algo =
      wc->kind == SC_COLL_SENDRECV || wc->kind == SC_COLL_ALLTOALL ? "direct" : c->algo;
  sc_coll_desc d;
  sc_estimate e;
  uint32_t slot = 0;
  if (c->cm != NULL && sc__collmemo_get(c->cm, wc, algo, time_s, &slot)) return SC_OK;
  int rc = sc__coll_desc(c->sp, wc, &d, err);
  if (rc == SC_OK) rc = sc_comm_estimate(c->reg, c->t, &d, algo, &e, NULL, err);
  if (rc == SC_OK && c->cres != NULL)
    rc = sc_residuals_apply_coll(c->cres, c->estimator, &d, &e, &e.time_s, err);
  if (rc != SC_OK) return rc;
  if (c->cm != NULL) sc__collmemo_put(c->cm, wc, algo, slot, e.time_s);
  *time_s = e.time_s;
  return SC_OK;
}

/* Transformer Engine's userbuffers figures (TransformerEngine
 * transformer_engine/pytorch/module/base.py @ 0004dbd0, initialize_ub: add_ub's defaults
 * num_sm = 16, num_splits = 4, set_sm_margin = 0): the SMs a pipeline or bulk overlap's
 * communication kernel takes while it runs, and the chunks a pipelined GEMM is cut into. */
#define SC__UB_SMS 16.0
#define SC__UB_SPLITS 4.0

/* One TP collective of c seconds beside its GEMM of g seconds (Transformer Engine's
 * userbuffers, docs/schedule.md "TP/CP overlap"), on a device of S SMs (0: unknown): the
 * part of c that stays exposed into *u, the time the GEMM loses to the communication's SMs
 * into *e.
 * - ring exchange: the GEMM runs in n pieces, each fed by a copy of the previous piece's
 *   data (copy engines, no SMs): only the first piece has nothing to hide behind.
 * - pipeline: the GEMM runs in k chunks, each chunk's reduce-scatter beside the next chunk
 *   on SC__UB_SMS SMs; the last chunk's is exposed.
 * - bulk: the whole collective on SC__UB_SMS SMs beside the whole GEMM. */
static void ub_cost(uint32_t method, double c, double g, double piece, uint32_t n, double S,
                    double *u, double *e) {
  double share = S > SC__UB_SMS ? SC__UB_SMS / S : 0.0, k = SC__UB_SPLITS;
  double beside;
  *u = *e = 0.0;
  switch (method) {
  case SC_UB_RING_EXCHANGE: {
    /* piece: one of the n GEMMs of 1/n of the rows, as priced (smaller: less efficient) */
    double cover = piece * (double)(n - 1), whole = piece * (double)n;
    *u = c > cover ? c - cover : 0.0;
    *e = whole > g ? whole - g : 0.0;
    return;
  }
  case SC_UB_PIPELINE:
    *u = c / k + (c > g ? (c - g) * (k - 1.0) / k : 0.0);
    beside = c * (k - 1.0) / k;
    *e = (beside < g ? beside : g) * share;
    return;
  case SC_UB_BULK:
    *u = c > g ? c - g : 0.0;
    *e = (c < g ? c : g) * share;
    return;
  default:
    return;
  }
}

/* The userbuffers terms of list l (each: its operators' times of one instance): the part
 * of its TP communication that stays exposed into *fixed, the GEMM time lost to the
 * communication's SMs into *extra (of which the weight-gradient GEMMs' into *extra_w). */
static int ub_terms(const sc_work_list *l, const double *each, sc__op_time_fn op, void *octx,
                    sc__coll_ctx *cc, double *fixed, double *extra, double *extra_w,
                    sc_error *err) {
  for (uint32_t i = 0; i < l->ncolls; i++) {
    const sc_work_coll *wc = &l->colls[i];
    if (wc->ub_method == SC_UB_NONE || !wc->overlappable || wc->ub_op < 0 ||
        (uint32_t)wc->ub_op >= l->nops || wc->nranks < 2 || !(wc->bytes > 0.0))
      continue;
    const sc_work_op *go = &l->ops[wc->ub_op];
    double c1 = 0.0, u, e, R = (double)wc->repeat, g1 = each[wc->ub_op], piece = g1;
    int rc = sc__coll_time(cc, wc, &c1, err);
    if (rc != SC_OK) return rc;
    if (wc->ub_method == SC_UB_RING_EXCHANGE && go->desc.ndims >= 2) {
      /* the GEMM's rows (dims[1]: the sequence's tokens) in nranks pieces */
      sc_work_op one = *go;
      double host = 0.0;
      one.desc.dims[1] = (go->desc.dims[1] + (int64_t)wc->nranks - 1) / (int64_t)wc->nranks;
      rc = op(octx, &one, &piece, &host, err);
      if (rc != SC_OK) return rc;
    }
    ub_cost(wc->ub_method, c1, g1, piece, wc->nranks, (double)cc->sms, &u, &e);
    *fixed += u * R;
    *extra += e * R;
    if (sc__op_is_wgrad(&l->ops[wc->ub_op])) *extra_w += e * R;
  }
  return SC_OK;
}

int sc__chunk_micro(const sc_stage_work *w, sc__op_time_fn op, void *octx, sc__coll_ctx *cc,
                    sc_sched_chunk *ch, double *fam, sc_error *err) {
  static const sc_phase ph[3] = {SC_PHASE_FWD, SC_PHASE_BWD, SC_PHASE_RECOMPUTE};
  double *pass[3] = {&ch->fwd_s, &ch->bwd_s, &ch->recompute_s};
  /* in the order they run: forward, recomputation, backward; a host that runs behind the
   * GPU at a pass's end is ahead of it at the next one's start (the lead) */
  static const int order[3] = {0, 2, 1};
  double lead = 0.0;
  double each[3][SC_WORK_MAX_OPS];
  int rc = SC_OK;
  ch->tp_fwd_s = ch->cp_fwd_s = ch->tp_bwd_s = ch->cp_bwd_s = 0.0;
  ch->tp_fwd_fixed_s = ch->tp_bwd_fixed_s = 0.0;
  ch->shard_fwd_s = ch->shard_bwd_s = ch->shard_fwd_hide_s = ch->shard_bwd_hide_s = 0.0;
  memset(fam, 0, 3 * SC__NFAM * sizeof *fam);
  ch->wgrad_s = 0.0;
  for (int i = 0; i < 3 && rc == SC_OK; i++) {
    int k = order[i];
    rc = ops_sum(&w->per_micro[ph[k]], op, octx, pass[k], fam + k * SC__NFAM, &lead,
                 k == 1 ? &ch->wgrad_s : NULL, each[k], err);
  }
  /* Transformer Engine's TP overlap: what each collective's GEMM cannot cover, and what
   * the GEMMs lose to the communication's SMs (counted as GEMM time of the pass) */
  for (int k = 0; k < 3 && rc == SC_OK; k++) {
    double fixed = 0.0, extra = 0.0, extra_w = 0.0;
    rc = ub_terms(&w->per_micro[ph[k]], each[k], op, octx, cc, &fixed, &extra, &extra_w, err);
    if (rc != SC_OK || (fixed == 0.0 && extra == 0.0)) continue;
    *pass[k] += extra;
    fam[k * SC__NFAM + sc__family_index(SC_OP_GEMM)] += extra;
    if (k == 1) ch->wgrad_s += extra_w;
    if (k == 0) ch->tp_fwd_fixed_s += fixed;
    else ch->tp_bwd_fixed_s += fixed;
  }
  if (ch->wgrad_s > ch->bwd_s) ch->wgrad_s = ch->bwd_s; /* a share of it, whatever rounding */
  /* recomputation's TP/CP communication runs inside the backward pass */
  for (int k = 0; k < 3 && rc == SC_OK; k++)
    rc = sc__colls_sum_micro(&w->per_micro[ph[k]], sc__coll_time, cc,
                             k == 0 ? &ch->tp_fwd_s : &ch->tp_bwd_s,
                             k == 0 ? &ch->tp_fwd_fixed_s : &ch->tp_bwd_fixed_s,
                             k == 0 ? &ch->cp_fwd_s : &ch->cp_bwd_s,
                             k == 0 ? &ch->shard_fwd_s : &ch->shard_bwd_s,
                             k == 0 ? &ch->shard_fwd_hide_s : &ch->shard_bwd_hide_s, err);
  if (rc != SC_OK) return rc;
  /* a part of the whole, whatever rounding */
  if (ch->tp_fwd_fixed_s > ch->tp_fwd_s) ch->tp_fwd_fixed_s = ch->tp_fwd_s;
  if (ch->tp_bwd_fixed_s > ch->tp_bwd_s) ch->tp_bwd_fixed_s = ch->tp_bwd_s;
  sc__cp_hide_under_attention(ch, fam);
  return SC_OK;
}

int sc__chunk_iter(const sc_stage_work *w, sc__op_time_fn op, void *octx, sc__coll_ctx *cc,
                   sc_sched_chunk *ch, double *t_opt, sc_error *err) {
  const double bytes[2] = {w->p2p_send_fwd_bytes, w->p2p_send_bwd_bytes};
  double *p2p[2] = {&ch->p2p_fwd_s, &ch->p2p_bwd_s};
  ch->dp_param_gather_s = ch->dp_grad_s = ch->p2p_fwd_s = ch->p2p_bwd_s = 0.0;
  int rc = sc__ops_sum(&w->per_iter, op, octx, t_opt, NULL, NULL, err);
  for (uint32_t i = 0; i < w->per_iter.ncolls && rc == SC_OK; i++) {
    const sc_work_coll *wc = &w->per_iter.colls[i];
    double ts;
    rc = coll_total(sc__coll_time, cc, wc, &ts, err);
    if (rc != SC_OK) break;
    if ((wc->group == SC_GROUP_DP || wc->group == SC_GROUP_EDP) && wc->phase == SC_PHASE_FWD)
      ch->dp_param_gather_s += ts;
    else ch->dp_grad_s += ts; /* gradient reduction, tied-embedding gradient all-reduce */
  }
  for (int k = 0; k < 2 && rc == SC_OK; k++) {
    if (!(bytes[k] > 0)) continue;
    sc_work_coll pc;
    sc__p2p_work(cc->sp, bytes[k], w->p2p_dtype, &pc);
    rc = coll_total(sc__coll_time, cc, &pc, p2p[k], err);
  }
  return rc;
}
