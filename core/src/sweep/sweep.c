/*
 * Design-space sweep: enumeration, validity checks, per-thread workers, top list, merge.
 * See stepcast/sweep.h for the contract and docs/sweep.md for the rules.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/checked.h"
#include "common/mix64.h"
#include "stepcast/comm.h"
#include "stepcast/stepcast.h"
#include "stepcast/sweep.h"
#include "sweep/sweep_int.h"

const char *sc_sweep_skip_name(sc_sweep_skip s) {
  static const char *const names[SC_SWEEP_NSKIP] = {
      "gpus", "tp", "pp", "cp", "placement", "batch", "schedule", "seqpar", "duplicate",
      "invalid", "memory", "error"};
  return ((unsigned)s < SC_SWEEP_NSKIP) ? names[s] : "?";
}

/* ------------------------------------------------------------------------- */
/* The space                                                                 */

/* The divisors of n (>= 1) in increasing order, the first cap of them. The counter is 64
 * bits wide and stops at sqrt(n) (d*d <= n, d's partner n/d collected on the way), so
 * neither n = 2^32-1 nor any other n can wrap it or take n steps. */
static uint32_t divisors(uint32_t n, uint32_t *out, uint32_t cap) {
  uint32_t lo[1024], hi[1024]; /* a 32-bit n has at most 1344 divisors: 672 pairs */
  uint32_t nlo = 0, nhi = 0, k = 0;
  for (uint64_t d = 1; d * d <= n && nlo < 1024; d++) {
    if (n % d != 0) continue;
    lo[nlo++] = (uint32_t)d;
    if (d * d != n) hi[nhi++] = (uint32_t)(n / d);
  }
  for (uint32_t i = 0; i < nlo && k < cap; i++) out[k++] = lo[i];
  for (uint32_t i = nhi; i > 0 && k < cap; i--) out[k++] = hi[i - 1];
  return k;
}

int sc_sweep_space_defaults(sc_sweep_space *s, const sc_model *m, uint32_t gpus,
                            uint32_t global_batch, uint32_t seq_len, sc_error *err) {
  static const uint32_t vps[] = {2, 3, 4, 6, 8};
  if (s == NULL || m == NULL) return sc_error_set(err, SC_EINVAL, "sweep: NULL argument");
  if (gpus == 0) return sc_error_set(err, SC_EINVAL, "gpus: must be >= 1");
  if (global_batch == 0) return sc_error_set(err, SC_EINVAL, "global-batch: must be >= 1");
  if (gpus > SC_MAX_GPUS)
    return sc_error_set(err, SC_ERANGE, "gpus: %u is out of range (at most %u)", gpus,
                        SC_MAX_GPUS);
  if (global_batch > SC_MAX_GLOBAL_BATCH)
    return sc_error_set(err, SC_ERANGE, "global-batch: %u is out of range (at most %u)",
                        global_batch, SC_MAX_GLOBAL_BATCH);
  if (seq_len > SC_MAX_SEQ_LEN)
    return sc_error_set(err, SC_ERANGE, "seq-len: %u is out of range (at most %u)", seq_len,
                        SC_MAX_SEQ_LEN);
  if (m->position == SC_POS_LEARNED && (int64_t)seq_len > m->max_seq)
    return sc_error_set(err, SC_ECONFIG, "seq-len: %u is more than the max_seq of model '%s' "
                        "(%lld): "
                        "its learned position embeddings have no rows past position %lld",
                        seq_len, m->name, (long long)m->max_seq, (long long)m->max_seq);
  memset(s, 0, sizeof *s);
  sc_parallel_defaults(&s->base);
  s->base.global_batch = global_batch;
  s->base.seq_len = seq_len ? seq_len : (uint32_t)m->max_seq;
  s->gpus = gpus;
  s->ntp = divisors(gpus, s->tp, SC_SWEEP_MAX_CHOICES);
  s->npp = divisors(gpus, s->pp, SC_SWEEP_MAX_CHOICES);
  s->ncp = divisors(gpus, s->cp, SC_SWEEP_MAX_CHOICES);
  s->nmb = divisors(global_batch, s->mb, SC_SWEEP_MAX_CHOICES);
  s->sched[s->nsched++] = (sc_sweep_sched){SC_SCHED_GPIPE, 1};
  s->sched[s->nsched++] = (sc_sweep_sched){SC_SCHED_1F1B, 1};
  for (size_t i = 0; i < sizeof vps / sizeof vps[0]; i++)
    s->sched[s->nsched++] = (sc_sweep_sched){SC_SCHED_INTERLEAVED, vps[i]};
  s->nrecompute = 3;
  s->recompute[0] = SC_RECOMPUTE_NONE;
  s->recompute[1] = SC_RECOMPUTE_SELECTIVE;
  s->recompute[2] = SC_RECOMPUTE_FULL;
  s->nsp = 2;
  s->sp[0] = 0;
  s->sp[1] = 1;
  s->ndo = 2;
  s->dopt[0] = 0;
  s->dopt[1] = 1;
  return SC_OK;
}

static uint64_t inner_size(const sc_sweep_space *s) {
  return (uint64_t)s->nsched * s->nrecompute * s->nsp * s->ndo;
}

/* Choices of the expert degrees (0 = base's alone: one). */
static uint32_t n_ep(const sc_sweep_space *s) { return s->nep ? s->nep : 1u; }
static uint32_t n_etp(const sc_sweep_space *s) { return s->netp ? s->netp : 1u; }

static uint64_t nunits(const sc_sweep_space *s) {
  return (uint64_t)s->ntp * s->npp * s->ncp * s->nmb * n_ep(s) * n_etp(s);
}

uint64_t sc_sweep_space_size(const sc_sweep_space *s) {
  return s ? nunits(s) * inner_size(s) : 0;
}

/* Degrees and micro-batch of unit u. */
static void unit_decode(const sc_sweep_space *s, uint64_t u, sc_parallel *p) {
  uint32_t mi = (uint32_t)(u % s->nmb);
  u /= s->nmb;
  uint32_t ci = (uint32_t)(u % s->ncp);
  u /= s->ncp;
  uint32_t pi = (uint32_t)(u % s->npp);
  u /= s->npp;
  uint32_t ti = (uint32_t)(u % s->ntp);
  u /= s->ntp;
  /* the expert degrees outermost: a space without them numbers its units as before */
  uint32_t ei = (uint32_t)(u % n_ep(s));
  uint32_t xi = (uint32_t)(u / n_ep(s));
  *p = s->base;
  if (s->nep) p->ep = s->ep[ei];
  if (s->netp) p->etp = s->etp[xi];
  p->tp = s->tp[ti];
  p->pp = s->pp[pi];
  p->cp = s->cp[ci];
  p->micro_batch = s->mb[mi];
  uint64_t tpc = 0; /* each <= 2^32: three of them can overflow 64 bits */
  if (__builtin_mul_overflow((uint64_t)p->tp * p->pp, (uint64_t)p->cp, &tpc)) tpc = 0;
  p->dp = (tpc != 0 && tpc <= s->gpus && s->gpus % tpc == 0) ? (uint32_t)(s->gpus / tpc) : 0;
}

/* The inner choices of index i (within a unit) into p. */
static void inner_decode(const sc_sweep_space *s, uint64_t i, sc_parallel *p) {
  uint32_t di = (uint32_t)(i % s->ndo);
  i /= s->ndo;
  uint32_t si = (uint32_t)(i % s->nsp);
  i /= s->nsp;
  uint32_t ri = (uint32_t)(i % s->nrecompute);
  i /= s->nrecompute;
  const sc_sweep_sched *sc = &s->sched[i];
  p->schedule = sc->kind;
  p->virtual_stages = sc->vp;
  p->recompute = s->recompute[ri];
  p->sequence_parallel = s->sp[si];
  p->distributed_optimizer = s->dopt[di] >= 1;
  p->zero_stage = s->dopt[di] >= 2 ? (uint32_t)s->dopt[di] : 0;
}

int sc_sweep_config(const sc_sweep_space *s, uint64_t index, sc_parallel *out, sc_error *err) {
  if (s == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "sweep: NULL argument");
  uint64_t n = sc_sweep_space_size(s);
  if (index >= n)
    return sc_error_set(err, SC_ERANGE, "sweep: index %llu out of range (space %llu)",
                        (unsigned long long)index, (unsigned long long)n);
  uint64_t in = inner_size(s);
  unit_decode(s, index / in, out);
  inner_decode(s, index % in, out);
  return SC_OK;
}

const char *sc_sweep_objective_name(sc_sweep_objective o) {
  static const char *const n[SC_SWEEP_NOBJ] = {"time", "cost", "energy"};
  return (int)o >= 0 && o < SC_SWEEP_NOBJ ? n[o] : "?";
}

int sc_sweep_objective_parse(const char *s, sc_sweep_objective *out, sc_error *err) {
  for (int i = 0; s != NULL && out != NULL && i < SC_SWEEP_NOBJ; i++)
    if (strcmp(s, sc_sweep_objective_name((sc_sweep_objective)i)) == 0) {
      *out = (sc_sweep_objective)i;
      return SC_OK;
    }
  return sc_error_set(err, SC_EINVAL, "objective: '%s' is not time, cost or energy",
                      s ? s : "(null)");
}

double sc_sweep_objective_value(const sc_result *r, sc_sweep_objective o) {
  switch (o) {
  case SC_SWEEP_OBJ_COST: return r->cost;
  case SC_SWEEP_OBJ_ENERGY: return r->energy_j;
  default: return r->iteration_s;
  }
}

int sc_sweep_objective_check(sc_sweep_objective o, const sc_predict_opts *po,
                             const sc_device *dev, sc_error *err) {
  if ((int)o < 0 || o >= SC_SWEEP_NOBJ)
    return sc_error_set(err, SC_EINVAL, "objective: %d is not time, cost or energy", (int)o);
  if (o == SC_SWEEP_OBJ_TIME) return SC_OK;
  if (po == NULL || dev == NULL) return sc_error_set(err, SC_EINVAL, "sweep: NULL argument");
  const char *what = sc_sweep_objective_name(o);
  if (!(po->token_budget > 0))
    return sc_error_set(err, SC_EINVAL, "objective: %s needs a token budget (--tokens): it "
                        "ranks the %s of training on it", what, what);
  if (o == SC_SWEEP_OBJ_COST && !(po->price_per_gpu_hour > 0))
    return sc_error_set(err, SC_EINVAL, "objective: cost needs a price per GPU-hour > 0 "
                        "(--price-per-gpu-hour)");
  if (o == SC_SWEEP_OBJ_ENERGY && !(dev->board_power_w > 0))
    return sc_error_set(err, SC_EINVAL, "objective: energy needs the device's board power, "
                        "and '%s' states no board_power_W", dev->name);
  return SC_OK;
}

void sc_sweep_opts_defaults(sc_sweep_opts *o) {
  memset(o, 0, sizeof *o);
  o->top_k = 10;
  o->prune = 1;
  o->nranks = 1;
  sc_predict_opts_defaults(&o->predict);
}

/* ------------------------------------------------------------------------- */
/* Top list                                                                  */

/* Is (a, ia) ranked before (b, ib)? By the objective's figure, then the iteration time (the
 * same test for time), then the index. */
static int entry_before(sc_sweep_objective o, const sc_result *a, uint64_t ia,
                        const sc_result *b, uint64_t ib) {
  double va = sc_sweep_objective_value(a, o), vb = sc_sweep_objective_value(b, o);
  if (va != vb) return va < vb;
  if (a->iteration_s != b->iteration_s) return a->iteration_s < b->iteration_s;
  return ia < ib;
}

/* Would (res, idx) enter a list of n entries (cap k)? Position where it goes. */
static uint32_t top_pos(const sc_sweep_entry *top, uint32_t n, sc_sweep_objective o,
                        const sc_result *res, uint64_t idx) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (entry_before(o, &top[mid].result, top[mid].index, res, idx)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void top_insert(sc_sweep_result *r, uint64_t idx, const sc_result *res) {
  uint32_t pos = top_pos(r->top, r->ntop, r->objective, res, idx);
  if (pos >= r->top_k) return;
  uint32_t n = r->ntop < r->top_k ? r->ntop + 1 : r->top_k;
  if (n - 1 > pos) memmove(&r->top[pos + 1], &r->top[pos], (size_t)(n - 1 - pos) * sizeof *r->top);
  r->top[pos].index = idx;
  r->top[pos].result = *res;
  r->ntop = n;
}

int sc_sweep_result_merge(sc_sweep_result *dst, const sc_sweep_result *src, sc_error *err) {
  if (dst == NULL || src == NULL) return sc_error_set(err, SC_EINVAL, "sweep: NULL argument");
  if (dst->top_k != src->top_k)
    return sc_error_set(err, SC_EINVAL, "sweep: merging top lists of %u and %u entries",
                        dst->top_k, src->top_k);
  if (dst->objective != src->objective)
    return sc_error_set(err, SC_EINVAL, "sweep: merging top lists ranked by %s and by %s",
                        sc_sweep_objective_name(dst->objective),
                        sc_sweep_objective_name(src->objective));
  if (dst->top == NULL) {
    dst->top = calloc(dst->top_k, sizeof *dst->top);
    if (dst->top == NULL) return sc_error_set(err, SC_ENOMEM, "sweep: out of memory");
  }
  dst->considered += src->considered;
  for (int i = 0; i < SC_SWEEP_NSKIP; i++) dst->skipped[i] += src->skipped[i];
  dst->pruned += src->pruned;
  dst->predicted += src->predicted;
  for (uint32_t i = 0; i < src->ntop; i++) top_insert(dst, src->top[i].index, &src->top[i].result);
  return SC_OK;
}

void sc_sweep_result_free(sc_sweep_result *r) {
  if (r == NULL) return;
  free(r->top);
  r->top = NULL;
  r->ntop = 0;
}

/* ------------------------------------------------------------------------- */
/* Chunk memo: the two parts of each chunk class (sweep_int.h), keyed by what they depend
 * on, kept across units (the micro part of a (tp, cp, micro-batch) serves every pp and dp). */

typedef struct ckey {
  uint32_t part; /* 0 micro, 1 iteration */
  uint32_t tp, cp, mb, layers, cls, a, b, c, d, e, f;
  uint32_t dual; /* iteration: DualPipe (its copies' gradient all-reduce) */
} ckey;

typedef struct centry {
  ckey key;
  uint32_t used;
  sc__sweep_chunk_val v;
} centry;

#define CMEMO_SLOTS 8192u /* power of two */

static uint32_t ckey_hash(const ckey *k) {
  const uint32_t *w = (const uint32_t *)k;
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < sizeof *k / sizeof(uint32_t); i++) h = sc__mix64(h ^ w[i]);
  return (uint32_t)(h >> 32);
}

/* Distinct (TP span, CP span) pairs seen by a worker: the micro part's key names the pair
 * by its index, so that a (tp, cp) placed differently can never share an entry. */
#define SPAN_IDS 256
typedef struct span_id {
  uint32_t tp, cp;
  sc_coll_desc g_tp, g_cp;
} span_id;

/* ------------------------------------------------------------------------- */
/* Workers                                                                   */

typedef struct shared {
  const sc_model *m;
  const sc_topology *t;
  const sc_device *dev;
  const sc_sweep_space *s;
  const sc_sweep_opts *o;
  const char *algo;
  int fast, prune;
  uint64_t *units;              /* this rank's units */
  uint64_t nunits;
  atomic_uint_fast64_t next;
  atomic_int stop;
} shared;

typedef struct worker {
  shared *sh;
  uint32_t id;
  sc_registry *reg;
  sc_predictor *pr;             /* exact path */
  sc_sched_workspace *ws;
  sc_stage_work work;
  centry *memo;
  uint32_t memo_used;
  span_id *spans;
  uint32_t nspans, span;        /* span: the current unit's index */
  sc__sweep_chunk_val cls_val[3]; /* middle, first, last chunk of the current point */
  sc__collmemo cmemo;        /* collective times of the current unit's spans */
  sc__sweep_omemo *omemo;       /* operator times on the device */
  size_t cap;
  sc_sched_chunk *chunks;
  double *opt_s;
  sc_sweep_result res;
  sc_result tmp;
  sc_error err;
  int rc;
} worker;

static centry *memo_find(worker *w, const ckey *k, int *hit) {
  uint32_t h = ckey_hash(k) & (CMEMO_SLOTS - 1);
  for (;;) {
    centry *e = &w->memo[h];
    if (!e->used) break;
    if (memcmp(&e->key, k, sizeof *k) == 0) {
      *hit = 1;
      return e;
    }
    h = (h + 1) & (CMEMO_SLOTS - 1);
  }
  *hit = 0;
  return &w->memo[h];
}

static void memo_reset(worker *w) {
  memset(w->memo, 0, CMEMO_SLOTS * sizeof *w->memo);
  w->memo_used = 0;
}

/* The index of the current unit's (TP, CP) spans. */
static void span_lookup(worker *w, const sc_parallel *p, const sc__spans *sp) {
  for (uint32_t i = 0; i < w->nspans; i++) {
    const span_id *s = &w->spans[i];
    if (s->tp == p->tp && s->cp == p->cp &&
        memcmp(&s->g_tp, &sp->g[SC_GROUP_TP], sizeof s->g_tp) == 0 &&
        memcmp(&s->g_cp, &sp->g[SC_GROUP_CP], sizeof s->g_cp) == 0) {
      w->span = i;
      return;
    }
  }
  if (w->nspans == SPAN_IDS) { /* indices are about to be reused: forget what used them */
    w->nspans = 0;
    memo_reset(w);
  }
  span_id *s = &w->spans[w->nspans];
  s->tp = p->tp;
  s->cp = p->cp;
  s->g_tp = sp->g[SC_GROUP_TP];
  s->g_cp = sp->g[SC_GROUP_CP];
  w->span = w->nspans++;
}

/* Chunk class cls (bit 0: the first virtual stage, bit 1: the last) of p into *out. */
static int chunk_class(worker *w, const sc_parallel *p, uint32_t cls, const sc__spans *sp,
                       sc__sweep_chunk_val *out) {
  shared *sh = w->sh;
  ckey km, ki;
  int hm, hi, rc;
  uint32_t layers = (uint32_t)(sh->m->layers / ((int64_t)p->pp * p->virtual_stages));
  memset(&km, 0, sizeof km);
  km.part = 0;
  km.tp = p->tp;
  km.cp = p->cp;
  km.mb = p->micro_batch;
  km.layers = layers;
  km.cls = cls;
  km.a = (uint32_t)p->sequence_parallel;
  km.b = (uint32_t)p->recompute;
  km.c = p->pp > 1;
  km.d = w->span;
  /* ZeRO-2/3 put DP collectives over the shard into every pass */
  km.e = sc_parallel_zero(p) >= 2 ? sc_parallel_zero(p) : 0;
  km.f = km.e ? p->dp * p->cp : 0; /* the shard is the whole DP x CP group in a sweep */
  ki = km;
  ki.part = 1;
  ki.a = p->dp;
  ki.b = p->pp;
  ki.c = sc_parallel_zero(p);
  ki.d = 0;
  ki.f = sc_parallel_shard_ranks(p);
  ki.dual = p->schedule == SC_SCHED_DUALPIPE;
  if (w->memo_used + 2 > CMEMO_SLOTS / 2) memo_reset(w);
  centry *em = memo_find(w, &km, &hm);
  centry *ei = memo_find(w, &ki, &hi);
  if (!hm || !hi) {
    /* A representative chunk of the class: virtual stage g = chunk*pp + stage. */
    uint32_t G = p->pp * p->virtual_stages;
    uint32_t g = (cls & 1u) ? 0 : (cls & 2u) ? G - 1 : 1;
    rc = sc_workload_stage(sh->m, p, g % p->pp, g / p->pp, &w->work, &w->err);
    if (rc != SC_OK) return rc;
    if (!hm) {
      memset(&em->v, 0, sizeof em->v);
      rc = sc__sweep_chunk_micro(w->reg, &w->work, sh->t, sh->dev, sp, sh->algo, &w->cmemo,
                                 w->omemo, &em->v, &w->err);
      if (rc != SC_OK) return rc;
      em->key = km;
      em->used = 1;
      w->memo_used++;
      if (em == ei) ei = memo_find(w, &ki, &hi); /* took the slot the other would have */
    }
    if (!hi) {
      memset(&ei->v, 0, sizeof ei->v);
      rc = sc__sweep_chunk_iter(w->reg, &w->work, sh->t, sh->dev, sp, sh->algo, &w->cmemo,
                                w->omemo, &ei->v, &w->err);
      if (rc != SC_OK) return rc;
      ei->key = ki;
      ei->used = 1;
      w->memo_used++;
    }
  }
  *out = em->v;
  out->t_opt = ei->v.t_opt;
  out->ch.dp_grad_s = ei->v.ch.dp_grad_s;
  out->ch.dp_param_gather_s = ei->v.ch.dp_param_gather_s;
  out->ch.p2p_fwd_s = ei->v.ch.p2p_fwd_s;
  out->ch.p2p_bwd_s = ei->v.ch.p2p_bwd_s;
  return SC_OK;
}

static int reserve(worker *w, size_t n) {
  if (n <= w->cap) return SC_OK;
  sc_sched_chunk *c = realloc(w->chunks, n * sizeof *c);
  if (c != NULL) w->chunks = c;
  double *o = realloc(w->opt_s, n * sizeof *o);
  if (o != NULL) w->opt_s = o;
  if (c == NULL || o == NULL) return sc_error_set(&w->err, SC_ENOMEM, "sweep: out of memory");
  w->cap = n;
  return SC_OK;
}

/* A status that ends the sweep (as opposed to one configuration failing). */
static int fatal(int rc) {
  return rc == SC_ENOMEM || rc == SC_ENOTFOUND || rc == SC_EUNSUPPORTED || rc == SC_EINVAL ||
         rc == SC_EPLUGIN || rc == SC_ELIMIT;
}

static void fill_names(sc_result *res, const shared *sh) {
  snprintf(res->model, sizeof res->model, "%s", sh->m->name);
  snprintf(res->topology, sizeof res->topology, "%s", sh->t->name);
  snprintf(res->hardware, sizeof res->hardware, "%s", sh->dev->name);
  snprintf(res->estimator, sizeof res->estimator, "%s",
           sc_estimator_name(sh->o->predict.estimator));
}

/* Predict p (valid, placeable; spans sp) on the fast path. Returns SC_OK with *pruned set
 * or the result in w->tmp; SC_ENOFIT when it does not fit; another status on failure. */
static int eval_fast(worker *w, const sc_parallel *p, const sc__spans *sp, int *pruned) {
  shared *sh = w->sh;
  sc_result *res = &w->tmp;
  int rc;
  *pruned = 0;
  memset(res, 0, sizeof *res);
  rc = sc__sweep_memory(sh->m, p, sh->t, sh->dev, sh->o->predict.stack,
                        sh->o->predict.allow_oom, &res->memory, &w->err);
  if (rc != SC_OK) return rc;
  uint32_t pp = p->pp, vp = p->virtual_stages, G = pp * vp;
  uint32_t mb = sc_parallel_microbatches(p);
  rc = reserve(w, G);
  if (rc != SC_OK) return rc;
  const sc__sweep_chunk_val *cv[3] = {&w->cls_val[0], &w->cls_val[1], &w->cls_val[2]};
  if (G == 1) {
    rc = chunk_class(w, p, 3u, sp, &w->cls_val[1]);
    if (rc != SC_OK) return rc;
    cv[2] = cv[1];
  } else {
    rc = chunk_class(w, p, 1u, sp, &w->cls_val[1]);
    if (rc == SC_OK) rc = chunk_class(w, p, 2u, sp, &w->cls_val[2]);
    if (rc == SC_OK && G > 2) rc = chunk_class(w, p, 0u, sp, &w->cls_val[0]);
    if (rc != SC_OK) return rc;
  }
  double model_flops = 0.0, hw_flops = 0.0;
  double ranks = (double)p->tp * p->cp * p->dp;
  for (uint32_t r = 0; r < pp; r++) {
    double opt = 0.0;
    for (uint32_t c = 0; c < vp; c++) {
      uint32_t g = c * pp + r;
      const sc__sweep_chunk_val *v = g == 0 ? cv[1] : (g == G - 1 ? cv[2] : cv[0]);
      sc_sched_chunk *ch = &w->chunks[g];
      *ch = v->ch;
      ch->fwd_family_s = v->fam;
      ch->bwd_family_s = v->fam + SC__NFAM;
      ch->recompute_family_s = v->fam + 2 * SC__NFAM;
      opt += v->t_opt;
      double per_gpu = (v->flops[0] + v->flops[1]) * mb;
      model_flops += per_gpu * ranks;
      hw_flops += (per_gpu + v->flops[2] * mb) * ranks;
    }
    w->opt_s[r] = opt;
  }
  if (p->schedule == SC_SCHED_DUALPIPE) /* as sc_predict: both copies' optimizer steps */
    for (uint32_t r = 0; r < pp / 2; r++) {
      double both = w->opt_s[r] + w->opt_s[pp - 1 - r];
      w->opt_s[r] = w->opt_s[pp - 1 - r] = both;
    }
  /* The bound is on the iteration time; the cost and energy objectives are a constant
   * times it within a run (sc_sweep_objective_value), and rounding keeps them monotone in
   * it, so a point slower than the K-th is not before it by any objective. */
  if (sh->prune && w->res.ntop == w->res.top_k) {
    double lb = sc__sweep_lower_bound(p, mb, w->chunks, w->opt_s);
    if (lb * (1.0 - 1e-7) > w->res.top[w->res.ntop - 1].result.iteration_s) {
      *pruned = 1;
      return SC_OK;
    }
  }
  sc_sched_input in;
  sc_sched_result sr;
  memset(&in, 0, sizeof in);
  in.kind = p->schedule;
  in.pp = pp;
  in.vp = vp;
  in.microbatches = mb;
  in.chunks = w->chunks;
  in.optimizer_s = w->opt_s;
  in.tp_overlap_frac = p->overlap_tp_comm ? 1.0 : 0.0;
  in.cp_overlap_frac = 0.0; /* as sc_predict: attention's share is taken off per chunk */
  in.overlap_grad_reduce = p->overlap_grad_reduce;
  in.overlap_param_gather = p->overlap_param_gather;
  in.nfamilies = SC__NFAM;
  in.family_names = sc__families;
  rc = sc_schedule_run(w->ws, &in, &sr, &w->err);
  if (rc != SC_OK) return rc;
  res->gpus = p->tp * p->pp * p->dp * p->cp;
  res->parallel = *p;
  res->iteration_s = sr.iteration_s;
  res->breakdown = sr.breakdown;
  res->model_flops = model_flops;
  res->hardware_flops = hw_flops;
  res->peak_flops_per_s = sh->dev->peak_flops_per_s[p->dtype];
  sc__result_set_training(res, sh->dev, &sh->o->predict);
  return sc_result_finish(res, &w->err);
}

static void count(worker *w, sc_sweep_skip why, uint64_t n) {
  w->res.skipped[why] += n;
  w->res.considered += n;
}

static int run_unit(worker *w, uint64_t u) {
  shared *sh = w->sh;
  const sc_sweep_space *s = sh->s;
  const sc_model *m = sh->m;
  uint64_t nin = inner_size(s), base = u * nin;
  sc_parallel p;
  sc__spans sp;
  int rc;
  unit_decode(s, u, &p);
  /* Unit-level rules: every inner point shares the verdict. */
  if (p.dp == 0) { count(w, SC_SWEEP_SKIP_GPUS, nin); return SC_OK; }
  if (m->heads % p.tp != 0 || m->kv_heads % p.tp != 0 || m->ffn_hidden % p.tp != 0) {
    count(w, SC_SWEEP_SKIP_TP, nin);
    return SC_OK;
  }
  if (p.pp > m->layers || m->layers % p.pp != 0) { count(w, SC_SWEEP_SKIP_PP, nin); return SC_OK; }
  if (p.cp > 1 && p.seq_len % (2 * (uint64_t)p.cp) != 0) {
    count(w, SC_SWEEP_SKIP_CP, nin);
    return SC_OK;
  }
  if (sc_comm_check_gpus(sh->t, s->gpus, NULL) != SC_OK || /* a skip: no message needed */
      sc__spans_make(sh->t, &p, &sp, NULL) != SC_OK) {
    count(w, SC_SWEEP_SKIP_PLACEMENT, nin);
    return SC_OK;
  }
  sc__collmemo_clear(&w->cmemo); /* new spans: forget the collective times */
  span_lookup(w, &p, &sp);
  if (p.global_batch % ((uint64_t)p.micro_batch * p.dp) != 0) {
    count(w, SC_SWEEP_SKIP_BATCH, nin);
    return SC_OK;
  }
  uint32_t mbs = sc_parallel_microbatches(&p);
  uint32_t per_stage = (uint32_t)(m->layers / p.pp);
  for (uint64_t i = 0; i < nin; i++) {
    uint64_t idx = base + i;
    inner_decode(s, i, &p);
    if (p.schedule == SC_SCHED_INTERLEAVED) {
      if (p.pp < 2 || p.virtual_stages < 1 || per_stage % p.virtual_stages != 0 ||
          mbs % p.pp != 0) {
        count(w, SC_SWEEP_SKIP_SCHEDULE, 1);
        continue;
      }
    } else if (p.virtual_stages != 1) {
      count(w, SC_SWEEP_SKIP_SCHEDULE, 1);
      continue;
    }
    if (p.schedule == SC_SCHED_DUALPIPE && (p.pp % 2 != 0 || mbs % 2 != 0 || mbs < 2 * p.pp)) {
      count(w, SC_SWEEP_SKIP_SCHEDULE, 1);
      continue;
    }
    if (p.sequence_parallel && p.tp == 1) { count(w, SC_SWEEP_SKIP_DUPLICATE, 1); continue; }
    if (p.sequence_parallel && (p.seq_len / p.cp) % p.tp != 0) {
      count(w, SC_SWEEP_SKIP_SEQPAR, 1);
      continue;
    }
    if (sc_parallel_zero(&p) >= 1 && (uint64_t)p.dp * p.cp == 1) {
      count(w, SC_SWEEP_SKIP_DUPLICATE, 1);
      continue;
    }
    if (sc_workload_validate(m, &p, NULL) != SC_OK) {
      count(w, SC_SWEEP_SKIP_INVALID, 1);
      continue;
    }
    int pruned = 0;
    if (sh->fast) {
      rc = eval_fast(w, &p, &sp, &pruned);
    } else {
      rc = sc_predict(w->pr, m, sh->t, sh->dev, &p, &sh->o->predict, &w->tmp, NULL, &w->err);
    }
    if (rc == SC_ENOFIT) { count(w, SC_SWEEP_SKIP_MEMORY, 1); continue; }
    if (rc != SC_OK) {
      if (fatal(rc)) return rc;
      count(w, SC_SWEEP_SKIP_ERROR, 1);
      continue;
    }
    w->res.considered++;
    if (pruned) { w->res.pruned++; continue; }
    w->res.predicted++;
    sc_result *res = &w->tmp;
    int enters = w->res.ntop < w->res.top_k ||
                 entry_before(w->res.objective, res, idx, &w->res.top[w->res.ntop - 1].result,
                              w->res.top[w->res.ntop - 1].index);
    if (sh->fast && (enters || sh->o->visit != NULL)) fill_names(res, sh);
    if (enters) top_insert(&w->res, idx, res);
    if (sh->o->visit != NULL && sh->o->visit(sh->o->visit_ud, w->id, u, idx, res) != 0) {
      sc_error_set(&w->err, SC_EIO, "sweep: stopped by the caller");
      return SC_EIO;
    }
  }
  return SC_OK;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  w->rc = SC_OK;
  for (;;) {
    if (atomic_load(&sh->stop)) break;
    uint64_t k = atomic_fetch_add(&sh->next, 1);
    if (k >= sh->nunits) break;
    int rc = run_unit(w, sh->units[k]);
    if (rc != SC_OK) {
      w->rc = rc;
      atomic_store(&sh->stop, 1);
      break;
    }
  }
  return NULL;
}

static int worker_init(worker *w, shared *sh, uint32_t id, sc_registry *reg, uint32_t top_k) {
  memset(w, 0, sizeof *w);
  w->sh = sh;
  w->id = id;
  w->reg = reg;
  w->res.top_k = top_k;
  w->res.top = calloc(top_k, sizeof *w->res.top);
  w->memo = calloc(CMEMO_SLOTS, sizeof *w->memo);
  w->omemo = calloc(1, sizeof *w->omemo);
  w->spans = calloc(SPAN_IDS, sizeof *w->spans);
  if (w->res.top == NULL || w->memo == NULL || w->omemo == NULL || w->spans == NULL)
    return sc_error_set(&w->err, SC_ENOMEM, "sweep: out of memory");
  int rc = sc_sched_workspace_new(&w->ws, &w->err);
  if (rc == SC_OK && !sh->fast) rc = sc_predictor_new(reg, &w->pr, &w->err);
  return rc;
}

static void worker_free(worker *w) {
  sc_predictor_free(w->pr);
  sc_sched_workspace_free(w->ws);
  free(w->memo);
  free(w->omemo);
  free(w->spans);
  free(w->chunks);
  free(w->opt_s);
  free(w->res.top);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int check_list(const uint32_t *v, uint32_t n, const char *name, sc_error *err) {
  if (n == 0 || n > SC_SWEEP_MAX_CHOICES)
    return sc_error_set(err, SC_EINVAL, "%s: 1 to %d choices, not %u", name,
                        SC_SWEEP_MAX_CHOICES, n);
  for (uint32_t i = 0; i < n; i++)
    if (v[i] == 0) return sc_error_set(err, SC_EINVAL, "%s: 0 is not a valid choice", name);
  return SC_OK;
}

int sc_sweep_run(sc_registry *const *regs, uint32_t nthreads, const sc_model *m,
                 const sc_topology *t, const sc_device *dev, const sc_sweep_space *s,
                 const sc_sweep_opts *o, sc_sweep_result *out, sc_error *err) {
  int rc;
  if (regs == NULL || m == NULL || t == NULL || dev == NULL || s == NULL || o == NULL ||
      out == NULL)
    return sc_error_set(err, SC_EINVAL, "sweep: NULL argument");
  memset(out, 0, sizeof *out);
  if (nthreads < 1 || nthreads > 1024)
    return sc_error_set(err, SC_EINVAL, "threads: %u must be in [1, 1024]", nthreads);
  for (uint32_t i = 0; i < nthreads; i++)
    if (regs[i] == NULL) return sc_error_set(err, SC_EINVAL, "sweep: registry %u is NULL", i);
  if (o->top_k < 1) return sc_error_set(err, SC_EINVAL, "top: must be >= 1");
  if (o->nranks < 1 || o->rank >= o->nranks)
    return sc_error_set(err, SC_EINVAL, "sweep: rank %u of %u", o->rank, o->nranks);
  if ((rc = sc_sweep_objective_check(o->objective, &o->predict, dev, err)) != SC_OK) return rc;
  if (s->gpus == 0) return sc_error_set(err, SC_EINVAL, "gpus: must be >= 1");
  if (s->base.global_batch == 0 || s->base.seq_len == 0)
    return sc_error_set(err, SC_EINVAL, "sweep: global batch and sequence length must be >= 1");
  if (s->base.stage_layers[0] != 0)
    return sc_error_set(err, SC_EINVAL, "sweep: uneven pipeline splits are not swept");
  if ((rc = check_list(s->tp, s->ntp, "tp", err)) != SC_OK) return rc;
  if ((rc = check_list(s->pp, s->npp, "pp", err)) != SC_OK) return rc;
  if ((rc = check_list(s->cp, s->ncp, "cp", err)) != SC_OK) return rc;
  if ((rc = check_list(s->mb, s->nmb, "micro-batch", err)) != SC_OK) return rc;
  if (s->nep && (rc = check_list(s->ep, s->nep, "ep", err)) != SC_OK) return rc;
  if (s->netp && (rc = check_list(s->etp, s->netp, "etp", err)) != SC_OK) return rc;
  if (s->nsched == 0 || s->nsched > SC_SWEEP_MAX_CHOICES || s->nrecompute == 0 ||
      s->nrecompute > 3 || s->nsp == 0 || s->nsp > 2 || s->ndo == 0 || s->ndo > 4)
    return sc_error_set(err, SC_EINVAL, "sweep: a choice list is empty or too long");
  for (uint32_t i = 0; i < s->ndo; i++)
    if (s->dopt[i] < 0 || s->dopt[i] > 3)
      return sc_error_set(err, SC_EINVAL, "zero: %d is not a ZeRO stage (0, 1, 2 or 3)",
                          s->dopt[i]);
  if (s->base.shard_size != 0)
    return sc_error_set(err, SC_EINVAL, "sweep: shard_size (HSDP) is not swept");
  for (uint32_t i = 0; i < s->nsched; i++)
    if (s->sched[i].vp < 1 || s->sched[i].vp > SC_SCHED_MAX_VP)
      return sc_error_set(err, SC_EINVAL, "virtual-stages: %u must be in [1, %d]",
                          s->sched[i].vp, SC_SCHED_MAX_VP);
  if ((int)s->base.dtype < 0 || s->base.dtype >= SC_DTYPE_COUNT ||
      !(dev->peak_flops_per_s[s->base.dtype] > 0))
    return sc_error_set(err, SC_EUNSUPPORTED, "dtype: device '%s' has no peak for %s",
                        dev->name, sc_dtype_name(s->base.dtype));

  double t0 = now_s();
  shared sh;
  memset(&sh, 0, sizeof sh);
  sh.m = m;
  sh.t = t;
  sh.dev = dev;
  sh.s = s;
  sh.o = o;
  sh.algo = o->predict.coll_algo ? o->predict.coll_algo : "auto";
  /* the fast path's memo of chunk values assumes every layer alike (a mixture of experts'
   * chunks differ by their MoE layers and expert degrees): MoE models take sc_predict */
  sh.fast = !o->exact && o->predict.estimator == SC_ESTIMATOR_ANALYTICAL &&
            m->num_experts == 0 &&
            !o->predict.record_timeline;
  sh.prune = o->prune && o->visit == NULL && sh.fast;
  uint64_t nu = nunits(s);
  sh.units = malloc((size_t)(nu / o->nranks + 1) * sizeof *sh.units);
  if (sh.units == NULL) return sc_error_set(err, SC_ENOMEM, "sweep: out of memory");
  for (uint64_t u = o->rank; u < nu; u += o->nranks) sh.units[sh.nunits++] = u;
  atomic_init(&sh.next, 0);
  atomic_init(&sh.stop, 0);

  worker *ws = calloc(nthreads, sizeof *ws);
  pthread_t *th = calloc(nthreads, sizeof *th);
  int *started = calloc(nthreads, sizeof *started);
  if (ws == NULL || th == NULL || started == NULL) {
    free(ws);
    free(th);
    free(started);
    free(sh.units);
    return sc_error_set(err, SC_ENOMEM, "sweep: out of memory");
  }
  rc = SC_OK;
  uint32_t ninit = 0;
  for (; ninit < nthreads; ninit++) {
    rc = worker_init(&ws[ninit], &sh, ninit, regs[ninit], o->top_k);
    ws[ninit].res.objective = o->objective;
    if (rc != SC_OK) {
      if (err) *err = ws[ninit].err;
      ninit++;
      goto cleanup;
    }
  }
  for (uint32_t i = 1; i < nthreads; i++) {
    if (pthread_create(&th[i], NULL, worker_main, &ws[i]) != 0) {
      atomic_store(&sh.stop, 1);
      rc = sc_error_set(err, SC_ENOMEM, "sweep: cannot start thread %u", i);
      break;
    }
    started[i] = 1;
  }
  if (rc == SC_OK) worker_main(&ws[0]);
  for (uint32_t i = 1; i < nthreads; i++)
    if (started[i]) pthread_join(th[i], NULL);
  if (rc == SC_OK) {
    for (uint32_t i = 0; i < nthreads; i++) {
      if (ws[i].rc != SC_OK) {
        rc = ws[i].rc;
        if (err) *err = ws[i].err;
        break;
      }
    }
  }
  if (rc == SC_OK) {
    out->top_k = o->top_k;
    out->objective = o->objective;
    for (uint32_t i = 0; i < nthreads && rc == SC_OK; i++)
      rc = sc_sweep_result_merge(out, &ws[i].res, err);
    out->space = sc_sweep_space_size(s);
    out->elapsed_s = now_s() - t0;
  }
cleanup:
  for (uint32_t i = 0; i < ninit; i++) worker_free(&ws[i]);
  free(ws);
  free(th);
  free(started);
  free(sh.units);
  if (rc != SC_OK) sc_sweep_result_free(out);
  return rc;
}
