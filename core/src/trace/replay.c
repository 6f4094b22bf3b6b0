/*
 * The dependency graph of one or more ranks' traces and its replay (docs/trace.md).
 *
 * Every replayed event has two instants, its start and its end; an edge says "instant b
 * is at least instant a + lag". Replay sets each instant to the maximum over its
 * predecessors (a source keeps its measured time): a longest-path pass in topological
 * order (Kahn). Lags are chosen so that, with measured durations, every instant lands on
 * its measured time; edits change the start-to-end lags of GPU work.
 *   CPU thread: the starts and ends of its events in time order form a chain whose lags
 *     are the measured gaps (untraced CPU work). The end of a blocking call (device,
 *     stream or event synchronisation; a memcpy that completed inside its call) is
 *     max(previous instant + min(gap, tail), end of the GPU work waited on + tail), tail =
 *     measured end - max(measured start, measured end of that work).
 *   GPU op: start >= launch call start + lag, >= end of the previous op of its stream +
 *     lag, >= end of the op an event wait points at + lag. The binding predecessor (the
 *     latest in the measurement) gets the measured lag; the others the smaller of their
 *     measured lag and the rank's median lag of that edge type when binding.
 *   Collectives across ranks: the k-th NCCL kernel of the j-th NCCL stream of every rank
 *     is one collective; it ends when its last rank arrives: end_r = max_q start_q +
 *     (measured end_r - measured last arrival), in one clock (rank offsets = median
 *     difference of matched collective ends).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "common/median.h"
#include "stepcast/estimate.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

typedef struct edge {
  uint32_t from, to;
  double lag;
} edge;

typedef struct rank_g {
  sc_trace *t;
  int64_t base_ns;        /* measured clock origin of this rank (aligned across ranks) */
  uint64_t off;           /* first instant of this rank */
  int64_t *stream;        /* per event: effective stream of a GPU op */
  uint8_t *fam;           /* per event: sc_kernel_family of a GPU op, 255 otherwise */
  uint8_t *a2a;           /* per event: runtime call inside an all_to_all annotation */
  int8_t *ckind;          /* per event: sc_coll_kind of a communication op (docs/trace.md,
                             "Collectives"), -1 when unknown or not one */
  uint8_t *cguess;        /* per event: 1 when ckind was guessed (nothing states it) */
  sc__tcoll *cmeta;       /* per event: collective metadata of a communication op, the
                             kernel's own args over its enclosing record_param_comms' */
  double *cbytes;         /* per event: message bytes of a communication op (the kernel's,
                             else its record_param_comms'), 0 = unknown */
  uint32_t *ops;          /* GPU ops sorted by (device, stream, ts) */
  size_t nops;
  int64_t *launch_ts;     /* per entry of ops: start of the launching call (or own ts) */
  uint32_t *by_launch;    /* positions in ops sorted by launch_ts */
  double *dur;            /* per event: replayed duration (ns) */
} rank_g;

struct sc_trace_result {
  size_t nr;
  rank_g *r;
  uint64_t ninst;
  double *M, *T;
  sc_trace_iter *iters;
  size_t niters;
  sc_trace_graph_info g;
};

typedef struct builder {
  edge *e;
  size_t n, cap;
} builder;

static int add_edge(builder *b, uint64_t from, uint64_t to, double lag) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1 << 16;
    edge *e = realloc(b->e, cap * sizeof *e);
    if (e == NULL) return SC_ENOMEM;
    b->e = e;
    b->cap = cap;
  }
  b->e[b->n].from = (uint32_t)from;
  b->e[b->n].to = (uint32_t)to;
  b->e[b->n].lag = lag;
  b->n++;
  return SC_OK;
}

static int is_gpu(int kind) {
  return kind == SC_TRACE_KERNEL || kind == SC_TRACE_MEMCPY || kind == SC_TRACE_MEMSET;
}
static int is_cpu(int kind) {
  return kind == SC_TRACE_CPU_OP || kind == SC_TRACE_ANNOTATION || kind == SC_TRACE_RUNTIME;
}

/* ---- int64 -> uint32 hash (correlation ids) ---- */
typedef struct imap {
  int64_t *k;
  uint32_t *v;
  size_t cap;
} imap;

static int imap_init(imap *m, size_t n) {
  m->cap = 16;
  while (m->cap < n * 2 + 16) m->cap *= 2;
  m->k = malloc(m->cap * sizeof *m->k);
  m->v = malloc(m->cap * sizeof *m->v);
  if (m->k == NULL || m->v == NULL) return SC_ENOMEM;
  for (size_t i = 0; i < m->cap; i++) m->k[i] = INT64_MIN;
  return SC_OK;
}
static void imap_free(imap *m) {
  free(m->k);
  free(m->v);
}
static size_t imap_slot(const imap *m, int64_t key) {
  uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
  size_t j = (size_t)(h >> 20) & (m->cap - 1);
  while (m->k[j] != INT64_MIN && m->k[j] != key) j = (j + 1) & (m->cap - 1);
  return j;
}
static void imap_put(imap *m, int64_t key, uint32_t v) {
  size_t j = imap_slot(m, key);
  if (m->k[j] == INT64_MIN) { m->k[j] = key; m->v[j] = v; }
}
static int imap_get(const imap *m, int64_t key, uint32_t *v) {
  if (key < 0) return 0;
  size_t j = imap_slot(m, key);
  if (m->k[j] != key) return 0;
  *v = m->v[j];
  return 1;
}

/* ---- sorting helpers (qsort with a file-scope context: one replay at a time per
 * thread is not guaranteed, so comparators read only their arguments) ---- */

typedef struct cpt {      /* a CPU instant for the thread chains (24 bytes: sorted) */
  int64_t t;
  int64_t tie;            /* starts: -dur (longer first); ends: -start (later start first) */
  uint32_t ev;
  uint32_t thr_start;     /* thread index << 1 | 1 for a start */
} cpt;

static int cmp_cpt(const void *a, const void *b) {
  const cpt *x = a, *y = b;
  uint32_t tx = x->thr_start >> 1, ty = y->thr_start >> 1;
  if (tx != ty) return tx < ty ? -1 : 1;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  uint32_t sx = x->thr_start & 1u, sy = y->thr_start & 1u;
  if (sx != sy) return sx ? 1 : -1; /* ends first */
  if (x->tie != y->tie) return x->tie < y->tie ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

typedef struct okey {
  int64_t dev, stream, ts;
  uint32_t ev;
} okey;

static int cmp_okey(const void *a, const void *b) {
  const okey *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

typedef struct lkey {
  int64_t ts;
  uint32_t pos;
} lkey;

static int cmp_lkey(const void *a, const void *b) {
  const lkey *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ---- per-rank structure ---- */

/* Range [lo, hi) of ops of (dev, stream); lo == hi when none. */
static void stream_range(const rank_g *g, int64_t dev, int64_t stream, size_t *lo, size_t *hi) {
  size_t a = 0, b = g->nops;
  const sc__tev *ev = g->t->ev;
  while (a < b) { /* first >= (dev, stream) */
    size_t m = (a + b) / 2;
    const sc__tev *e = &ev[g->ops[m]];
    int64_t s = g->stream[g->ops[m]];
    if (e->pid < dev || (e->pid == dev && s < stream)) a = m + 1; else b = m;
  }
  *lo = a;
  b = g->nops;
  while (a < b) {
    size_t m = (a + b) / 2;
    const sc__tev *e = &ev[g->ops[m]];
    int64_t s = g->stream[g->ops[m]];
    if (e->pid < dev || (e->pid == dev && s <= stream)) a = m + 1; else b = m;
  }
  *hi = a;
}

/* Position (in ops) of the last op of [lo, hi) launched at or before t; SIZE_MAX if none. */
static size_t last_launched(const rank_g *g, size_t lo, size_t hi, int64_t t) {
  size_t a = lo, b = hi;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (g->launch_ts[m] <= t) a = m + 1; else b = m;
  }
  return a == lo ? SIZE_MAX : a - 1;
}
/* First op of [lo, hi) launched at or after t; SIZE_MAX if none. */
static size_t first_launched(const rank_g *g, size_t lo, size_t hi, int64_t t) {
  size_t a = lo, b = hi;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (g->launch_ts[m] < t) a = m + 1; else b = m;
  }
  return a == hi ? SIZE_MAX : a;
}

/* The dp edit's prediction of collective c: sc_comm_estimate's time, through the
 * topology's collective residuals when the edit carries them. */
static int coll_time(const sc_trace_edits *ed, const sc_coll_desc *c, double *time_s,
                     sc_error *err) {
  sc_estimate e;
  int rc = sc_comm_estimate(ed->reg, ed->topology, c, "auto", &e, NULL, err);
  if (rc != SC_OK) return rc;
  return sc_residuals_apply_coll(ed->coll_residuals, ed->estimator, c, &e, time_s, err);
}

/* Collective re-timing for the dp edit: measured * predicted(new) / predicted(old). */
static int dp_scale(const sc_trace_edits *ed, uint32_t from, int kind, double bytes,
                    double measured_s, double *scale, sc_error *err) {
  sc_coll_desc a, b;
  double ta, tb;
  int rc;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if ((rc = sc_comm_group_flat(ed->topology, from, &a, err)) != SC_OK) return rc;
  if ((rc = sc_comm_group_flat(ed->topology, ed->dp_to, &b, err)) != SC_OK) return rc;
  a.kind = b.kind = (sc_coll_kind)kind;
  a.dtype = b.dtype = SC_DTYPE_BF16;
  if (bytes <= 0) {
    /* The trace does not state the message size: the size whose predicted time on the old
     * group equals the measured time (bisection in log space; monotone in bytes). */
    double lo = 0, hi = 42; /* 1 B .. 4 TiB, as log2 */
    for (int it = 0; it < 48; it++) {
      double mid = 0.5 * (lo + hi);
      a.bytes = exp2(mid);
      if ((rc = coll_time(ed, &a, &ta, err)) != SC_OK) return rc;
      if (ta < measured_s) lo = mid; else hi = mid;
    }
    bytes = exp2(0.5 * (lo + hi));
  }
  a.bytes = b.bytes = bytes;
  if ((rc = coll_time(ed, &a, &ta, err)) != SC_OK) return rc;
  if ((rc = coll_time(ed, &b, &tb, err)) != SC_OK) return rc;
  *scale = ta > 0 ? tb / ta : 1.0;
  return SC_OK;
}

static double achievable_flops(const sc_device *d, sc_dtype t) {
  double eff = sc_device_matmul_efficiency(d, t);
  return d->peak_flops_per_s[t] * (eff > 0 ? eff : 1.0);
}
static double achievable_bw(const sc_device *d) {
  double eff = d->mem_efficiency > 0 ? d->mem_efficiency : 1.0;
  return d->mem_bw_Bps * eff;
}

/* Durations (ns) of rank g's events after edits. */
static int edited_durations(rank_g *g, const sc_trace_edits *ed, sc_error *err) {
  const sc_trace *t = g->t;
  for (size_t i = 0; i < t->nev; i++) g->dur[i] = (double)t->ev[i].dur_ns;
  if (ed == NULL) return SC_OK;
  if (ed->hw_from != NULL && ed->hw_to != NULL) {
    double bw = achievable_bw(ed->hw_from) / achievable_bw(ed->hw_to);
    if (!(bw > 0) || !isfinite(bw))
      return sc_error_set(err, SC_ECONFIG, "hardware edit: memory bandwidth of '%s' or "
                          "'%s' is not positive", ed->hw_from->name, ed->hw_to->name);
    for (size_t i = 0; i < t->nev; i++) {
      const sc__tev *e = &t->ev[i];
      if (!is_gpu(e->kind)) continue;
      int f = g->fam[i];
      const char *name = sc__tname(t, e->name);
      double r = 1.0;
      if (f == SC_KFAM_GEMM || f == SC_KFAM_ATTENTION) {
        sc_dtype dt = sc__trace_kernel_dtype(name, ed->default_dtype);
        double a = achievable_flops(ed->hw_from, dt), b = achievable_flops(ed->hw_to, dt);
        if (!(a > 0) || !(b > 0))
          return sc_error_set(err, SC_ECONFIG, "hardware edit: kernel '%.80s' is %s but "
                              "'%s' or '%s' states no %s peak", name, sc_dtype_name(dt),
                              ed->hw_from->name, ed->hw_to->name, sc_dtype_name(dt));
        r = a / b;
      } else if (f == SC_KFAM_NORM || f == SC_KFAM_ELEMENTWISE || f == SC_KFAM_OPTIMIZER ||
                 f == SC_KFAM_MEMSET) {
        r = bw;
      } else if (f == SC_KFAM_MEMCPY) {
        if (strstr(name, "DtoD") != NULL) r = bw; /* host copies cross PCIe: unchanged */
      }
      g->dur[i] *= r;
    }
  }
  if (ed->dp_to > 0) {
    uint32_t from = ed->dp_from ? ed->dp_from : (uint32_t)(t->info.world_size > 0
                                                               ? t->info.world_size : 0);
    if (ed->topology == NULL || ed->reg == NULL)
      return sc_error_set(err, SC_ECONFIG, "dp edit: needs a topology and a registry");
    if (from == 0)
      return sc_error_set(err, SC_ECONFIG, "dp edit: %s states no world_size; give the "
                          "measured data-parallel degree", t->path);
    for (size_t i = 0; i < t->nev; i++) {
      if (g->fam[i] != SC_KFAM_COMM) continue;
      uint32_t gs = g->cmeta[i].group_size;
      if (gs != 0 && gs != from) continue; /* another group */
      int kind = g->ckind[i];
      if (kind < 0) continue;
      double s;
      int rc = dp_scale(ed, from, kind, g->cbytes[i], g->dur[i] * 1e-9, &s, err);
      if (rc != SC_OK) return rc;
      g->dur[i] *= s;
    }
  }
  return SC_OK;
}

static int sort_ops(rank_g *g, const imap *launch);

/* Per-rank preparation: families, streams as measured, ops sorted, launch times. */
static int prepare_rank(rank_g *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev;
  g->stream = malloc((n ? n : 1) * sizeof *g->stream);
  g->fam = malloc(n ? n : 1);
  g->a2a = calloc(n ? n : 1, 1);
  g->ckind = malloc(n ? n : 1);
  g->cguess = calloc(n ? n : 1, 1);
  g->cmeta = malloc((n ? n : 1) * sizeof *g->cmeta);
  g->cbytes = calloc(n ? n : 1, sizeof *g->cbytes);
  g->dur = malloc((n ? n : 1) * sizeof *g->dur);
  if (!g->stream || !g->fam || !g->a2a || !g->ckind || !g->cguess || !g->cmeta || !g->cbytes ||
      !g->dur)
    return SC_ENOMEM;
  memset(g->ckind, -1, n ? n : 1);
  size_t nops = 0;
  imap fam; /* family of each kernel name (names are interned: one lookup per name) */
  if (imap_init(&fam, 2 * t->nhash) != SC_OK) {
    imap_free(&fam);
    return SC_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    g->stream[i] = e->tid;
    g->fam[i] = 255;
    if (is_gpu(e->kind)) {
      uint32_t f;
      int64_t key = (int64_t)e->name * 8 + e->kind;
      if (!imap_get(&fam, key, &f)) {
        f = (uint32_t)sc_trace_classify((sc_trace_kind)e->kind, sc__tname(t, e->name));
        imap_put(&fam, key, f);
      }
      g->fam[i] = (uint8_t)f;
      nops++;
    }
  }
  imap_free(&fam);
  g->nops = nops;
  g->ops = malloc((nops ? nops : 1) * sizeof *g->ops);
  g->launch_ts = malloc((nops ? nops : 1) * sizeof *g->launch_ts);
  g->by_launch = malloc((nops ? nops : 1) * sizeof *g->by_launch);
  if (!g->ops || !g->launch_ts || !g->by_launch) return SC_ENOMEM;
  return sort_ops(g, launch);
}

/* g->ops sorted by (device, effective stream, ts); launch times; launch order. */
static int sort_ops(rank_g *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nops = g->nops;
  okey *k = malloc((nops ? nops : 1) * sizeof *k);
  lkey *lk = malloc((nops ? nops : 1) * sizeof *lk);
  if (!k || !lk) {
    free(k);
    free(lk);
    return SC_ENOMEM;
  }
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_gpu(t->ev[i].kind)) continue;
    k[j].dev = t->ev[i].pid;
    k[j].stream = g->stream[i];
    k[j].ts = t->ev[i].ts_ns;
    k[j++].ev = (uint32_t)i;
  }
  qsort(k, nops, sizeof *k, cmp_okey);
  for (size_t i = 0; i < nops; i++) {
    uint32_t li;
    g->ops[i] = k[i].ev;
    const sc__tev *e = &t->ev[k[i].ev];
    g->launch_ts[i] = imap_get(launch, e->corr, &li) ? t->ev[li].ts_ns : e->ts_ns;
    lk[i].ts = g->launch_ts[i];
    lk[i].pos = (uint32_t)i;
  }
  qsort(lk, nops, sizeof *lk, cmp_lkey);
  for (size_t i = 0; i < nops; i++) g->by_launch[i] = lk[i].pos;
  free(lk);
  free(k);
  return SC_OK;
}

/* The overlap edit: every communication op of a device moves to the device's compute
 * stream (most non-communication kernel time); ops are sorted again. */
static int serialize_comm(rank_g *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nops = g->nops;
  {
    /* the compute stream of each device: most non-communication kernel time */
    int64_t best_s = -1, best_d = INT64_MIN;
    size_t nk = 0;
    okey *k = malloc((nops ? nops : 1) * sizeof *k);
    if (k == NULL) return SC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      if (g->fam[i] == 255 || g->fam[i] == SC_KFAM_COMM) continue;
      k[nk].dev = t->ev[i].pid;
      k[nk].stream = t->ev[i].tid;
      k[nk].ts = t->ev[i].dur_ns;
      k[nk++].ev = (uint32_t)i;
    }
    qsort(k, nk, sizeof *k, cmp_okey);
    /* per device, stream with the largest summed duration */
    for (size_t a = 0; a < nk;) {
      size_t d = a;
      int64_t bs = -1, bt = -1;
      while (d < nk && k[d].dev == k[a].dev) {
        size_t b = d;
        int64_t sum = 0;
        while (b < nk && k[b].dev == k[d].dev && k[b].stream == k[d].stream) sum += k[b++].ts;
        if (sum > bt) { bt = sum; bs = k[d].stream; }
        d = b;
      }
      best_d = k[a].dev;
      best_s = bs;
      for (size_t i = 0; i < n; i++) {
        if (g->fam[i] == SC_KFAM_COMM && t->ev[i].pid == best_d) g->stream[i] = best_s;
      }
      a = d;
    }
    free(k);
  }
  return sort_ops(g, launch);
}

/* The end instant of op at position pos of rank g. */
#define START(g, ev) ((g)->off + 2 * (uint64_t)(ev))
#define END(g, ev) ((g)->off + 2 * (uint64_t)(ev) + 1)

/* name is "cuda<api>" or "hip<api>". */
static int api_is(const char *name, const char *api) {
  if (strncmp(name, "cuda", 4) == 0) return strcmp(name + 4, api) == 0;
  if (strncmp(name, "hip", 3) == 0) return strcmp(name + 3, api) == 0;
  return 0;
}

/* Waited-on GPU work of a blocking runtime call: appends op positions to w (cap wcap). */
static size_t waited_ops(const rank_g *g, const sc__tev *call, const sc__tev *sync,
                         const imap *launch, size_t *w, size_t wcap) {
  const sc_trace *t = g->t;
  const char *name = sc__tname(t, call->name);
  size_t nw = 0;
  int kind = sync ? sync->sync : SC__SYNC_NONE;
  if (kind == SC__SYNC_NONE) {
    if (api_is(name, "DeviceSynchronize")) kind = SC__SYNC_CONTEXT;
    else if (api_is(name, "StreamSynchronize")) kind = SC__SYNC_STREAM;
    else if (api_is(name, "EventSynchronize")) kind = SC__SYNC_EVENT;
  }
  if (kind == SC__SYNC_WAIT_EVENT) return 0;
  if (kind == SC__SYNC_CONTEXT) {
    for (size_t a = 0; a < g->nops && nw < wcap;) {
      const sc__tev *e = &t->ev[g->ops[a]];
      size_t lo, hi;
      stream_range(g, e->pid, g->stream[g->ops[a]], &lo, &hi);
      if (sync == NULL || sync->pid < 0 || sync->pid == e->pid) {
        size_t p = last_launched(g, lo, hi, call->ts_ns);
        if (p != SIZE_MAX) w[nw++] = p;
      }
      a = hi > a ? hi : a + 1;
    }
    return nw;
  }
  if (kind == SC__SYNC_STREAM || kind == SC__SYNC_EVENT) {
    int64_t dev = -1, stream = -1, before = call->ts_ns;
    if (sync != NULL && kind == SC__SYNC_STREAM && sync->tid >= 0) {
      dev = sync->pid;
      stream = sync->tid;
    } else if (sync != NULL && kind == SC__SYNC_EVENT && sync->wait_stream >= 0) {
      uint32_t rec;
      dev = sync->pid;
      stream = sync->wait_stream;
      if (imap_get(launch, sync->wait_corr, &rec)) before = t->ev[rec].ts_ns;
    } else if (sync != NULL && kind == SC__SYNC_EVENT) {
      return 0; /* an event never recorded (wait_on_stream -1): nothing to wait for */
    } else {
      /* no cuda_sync record: the stream of the latest op launched before the call */
      size_t a = 0, b = g->nops;
      while (a < b) {
        size_t m = (a + b) / 2;
        if (g->launch_ts[g->by_launch[m]] <= call->ts_ns) a = m + 1; else b = m;
      }
      if (a == 0) return 0;
      uint32_t ev = g->ops[g->by_launch[a - 1]];
      dev = t->ev[ev].pid;
      stream = g->stream[ev];
    }
    size_t lo, hi;
    stream_range(g, dev, stream, &lo, &hi);
    size_t p = last_launched(g, lo, hi, before);
    if (p != SIZE_MAX && nw < wcap) w[nw++] = p;
    return nw;
  }
  /* a memcpy that completed inside its own call: see build_rank */
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A CPU event that can name the collective of the kernels launched inside it: one with
 * collective metadata (record_param_comms) or an "nccl:<kind>" annotation. */
typedef struct mev {
  int64_t pid, tid, ts;
  uint32_t ev;
} mev;

static int cmp_mev(const void *a, const void *b) {
  const mev *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* Collective kind and metadata of every communication op of rank g (docs/trace.md,
 * "Collectives"): the kernel's own args ("Collective name", "Process Group Name", "Seq",
 * "Group size", peer) over those of the innermost enclosing record_param_comms of its
 * launching call; the kind from that "Collective name", else the kernel's name (SendRecv
 * inside an all_to_all annotation: all-to-all), else the innermost enclosing nccl:<kind>
 * annotation, else guessed as all-reduce (cguess). */
static int resolve_comm(rank_g *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nm = 0;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (is_cpu(e->kind) && e->kind != SC_TRACE_RUNTIME &&
        (e->coll != 0 || strncmp(sc__tname(t, e->name), "nccl:", 5) == 0))
      nm++;
  }
  mev *m = malloc((nm ? nm : 1) * sizeof *m);
  if (m == NULL) return SC_ENOMEM;
  nm = 0;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (is_cpu(e->kind) && e->kind != SC_TRACE_RUNTIME &&
        (e->coll != 0 || strncmp(sc__tname(t, e->name), "nccl:", 5) == 0)) {
      m[nm].pid = e->pid;
      m[nm].tid = e->tid;
      m[nm].ts = e->ts_ns;
      m[nm++].ev = (uint32_t)i;
    }
  }
  qsort(m, nm, sizeof *m, cmp_mev);
  for (size_t p = 0; p < g->nops; p++) {
    uint32_t ev = g->ops[p], li;
    if (g->fam[ev] != SC_KFAM_COMM) continue;
    const sc__tev *k = &t->ev[ev];
    sc__tcoll c = {-1, SC__NONE, SC__NONE, -1, 0};
    const sc__tcoll *own = sc__tcoll_of(t, k), *rec = NULL;
    const sc__tev *rec_ev = NULL;
    const char *ann = NULL;
    if (nm > 0 && imap_get(launch, k->corr, &li)) {
      /* the enclosing events of the call on its thread: starts at or before it, ends at
       * or after its start; the innermost first (nesting is shallow: a few steps back) */
      const sc__tev *call = &t->ev[li];
      mev key = {call->pid, call->tid, call->ts_ns, UINT32_MAX};
      size_t a = 0, z = nm;
      while (a < z) {
        size_t mid = (a + z) / 2;
        if (cmp_mev(&m[mid], &key) <= 0) a = mid + 1; else z = mid;
      }
      for (size_t q = a, steps = 0; q > 0 && steps < 64 && (rec == NULL || ann == NULL);
           steps++) {
        const mev *c2 = &m[--q];
        if (c2->pid != call->pid || c2->tid != call->tid) break;
        const sc__tev *o = &t->ev[c2->ev];
        if (o->ts_ns + o->dur_ns < call->ts_ns) continue;
        if (rec == NULL && o->coll != 0) {
          rec = sc__tcoll_of(t, o);
          rec_ev = o;
        }
        if (ann == NULL && strncmp(sc__tname(t, o->name), "nccl:", 5) == 0)
          ann = sc__tname(t, o->name);
      }
    }
    if (rec != NULL) c = *rec;
    if (own != NULL) {
      if (own->seq >= 0) c.seq = own->seq;
      if (own->name != SC__NONE) c.name = own->name;
      if (own->pg != SC__NONE) c.pg = own->pg;
      if (own->peer >= 0) c.peer = own->peer;
      if (own->group_size != 0) c.group_size = own->group_size;
    }
    g->cmeta[ev] = c;
    g->cbytes[ev] = k->coll_bytes > 0 ? k->coll_bytes : rec_ev != NULL ? rec_ev->coll_bytes : 0;
    int kind = c.name != SC__NONE ? sc__trace_coll_kind(sc__tname(t, c.name)) : -1;
    if (kind == -1) {
      kind = sc__trace_coll_kind(sc__tname(t, k->name));
      if (kind == SC_COLL_SENDRECV && g->a2a[ev]) kind = SC_COLL_ALLTOALL;
    }
    if (kind == -1 && ann != NULL) kind = sc__trace_coll_kind(ann);
    if (kind == -1) {
      kind = SC_COLL_ALLREDUCE;
      g->cguess[ev] = 1;
    }
    g->ckind[ev] = (int8_t)(kind >= 0 ? kind : -1);
  }
  free(m);
  return SC_OK;
}

/* Build rank g's edges. */
static int build_rank(rank_g *g, const sc_trace_edits *ed, builder *b,
                      sc_trace_graph_info *gi, sc_error *err) {
  const sc_trace *t = g->t;
  size_t n = t->nev;
  int rc = SC_OK;
  imap launch, syncm;
  size_t ncpu = 0;
  memset(&launch, 0, sizeof launch);
  memset(&syncm, 0, sizeof syncm);
  cpt *pts = NULL;
  uint64_t *extra = NULL; /* (succ op pos << 32 | pred op pos) for event waits */
  size_t nextra = 0, capextra = 0;
  double *lat = NULL, *gap = NULL;
  okey *ends = NULL; /* inferred waits: (device, end, measured stream, op) */
  uint8_t *blocking_pred = NULL; /* per event: end instant gets GPU predecessors */
  double *tail = NULL;
  size_t *w = NULL;

  if ((rc = imap_init(&launch, n)) != SC_OK || (rc = imap_init(&syncm, n)) != SC_OK) goto out;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (e->kind == SC_TRACE_RUNTIME && e->corr >= 0) imap_put(&launch, e->corr, (uint32_t)i);
    else if (e->kind == SC_TRACE_SYNC && e->corr >= 0) imap_put(&syncm, e->corr, (uint32_t)i);
    if (is_cpu(e->kind)) ncpu++;
  }
  if ((rc = prepare_rank(g, &launch)) != SC_OK) goto out;

  blocking_pred = calloc(n ? n : 1, 1);
  tail = calloc(n ? n : 1, sizeof *tail);
  w = malloc(4096 * sizeof *w);
  if (!blocking_pred || !tail || !w) { rc = SC_ENOMEM; goto out; }

  /* 1. blocking calls: GPU op end -> call end, lag tail */
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (e->kind != SC_TRACE_RUNTIME) continue;
    uint32_t si;
    const sc__tev *sync = imap_get(&syncm, e->corr, &si) ? &t->ev[si] : NULL;
    size_t nw = waited_ops(g, e, sync, &launch, w, 4096);
    int64_t te = e->ts_ns + e->dur_ns;
    if (nw == 0) continue;
    int64_t done = INT64_MIN;
    for (size_t k = 0; k < nw; k++) {
      const sc__tev *o = &t->ev[g->ops[w[k]]];
      if (o->ts_ns + o->dur_ns > done) done = o->ts_ns + o->dur_ns;
    }
    if (done > te + 1000) continue; /* it did not wait for that work: no edge */
    double tl = (double)(te - (done > e->ts_ns ? done : e->ts_ns));
    if (tl < 0) tl = 0;
    tail[i] = tl;
    blocking_pred[i] = 1;
    for (size_t k = 0; k < nw; k++) {
      if ((rc = add_edge(b, END(g, g->ops[w[k]]), END(g, i), tl)) != SC_OK) goto out;
      gi->sync_edges++;
    }
  }
  /* synchronous memcpys: the op of a Memcpy call that ended inside the call */
  for (size_t p = 0; p < g->nops; p++) {
    uint32_t ev = g->ops[p], li;
    const sc__tev *o = &t->ev[ev];
    if (o->kind != SC_TRACE_MEMCPY || !imap_get(&launch, o->corr, &li)) continue;
    const sc__tev *c = &t->ev[li];
    const char *cn = sc__tname(t, c->name);
    if (strstr(cn, "emcpy") == NULL || blocking_pred[li]) continue;
    int64_t oe = o->ts_ns + o->dur_ns, ce = c->ts_ns + c->dur_ns;
    if (oe > ce || oe < c->ts_ns) continue;
    double tl = (double)(ce - (oe > c->ts_ns ? oe : c->ts_ns));
    tail[li] = tl;
    blocking_pred[li] = 1;
    if ((rc = add_edge(b, END(g, ev), END(g, li), tl)) != SC_OK) goto out;
    gi->sync_edges++;
  }

  /* 2. CPU thread chains */
  pts = malloc((ncpu ? 2 * ncpu : 1) * sizeof *pts);
  if (pts == NULL) { rc = SC_ENOMEM; goto out; }
  {
    size_t np = 0, nthr = 0, last = 0;
    int64_t thr[2 * 1024]; /* distinct (pid, tid) pairs, linear search with a last hit */
    for (size_t i = 0; i < n; i++) {
      const sc__tev *e = &t->ev[i];
      if (!is_cpu(e->kind)) continue;
      size_t ti = last;
      if (nthr == 0 || thr[2 * ti] != e->pid || thr[2 * ti + 1] != e->tid) {
        for (ti = 0; ti < nthr; ti++) {
          if (thr[2 * ti] == e->pid && thr[2 * ti + 1] == e->tid) break;
        }
        if (ti == nthr) {
          if (nthr == 1024) {
            rc = sc_error_set(err, SC_ELIMIT, "%s: more than 1024 CPU threads", t->path);
            goto out;
          }
          thr[2 * nthr] = e->pid;
          thr[2 * nthr + 1] = e->tid;
          nthr++;
        }
        last = ti;
      }
      cpt s = {e->ts_ns, -e->dur_ns, (uint32_t)i, (uint32_t)ti << 1 | 1u};
      cpt f = {e->ts_ns + e->dur_ns, -e->ts_ns, (uint32_t)i, (uint32_t)ti << 1};
      pts[np++] = s;
      pts[np++] = f;
    }
    qsort(pts, np, sizeof *pts, cmp_cpt);
    int64_t a2a_until = INT64_MIN;
    for (size_t k = 0; k < np; k++) {
      const cpt *c = &pts[k];
      int is_start = (int)(c->thr_start & 1u);
      uint64_t inst = is_start ? START(g, c->ev) : END(g, c->ev);
      int same = k > 0 && (pts[k - 1].thr_start >> 1) == (c->thr_start >> 1);
      if (!same) a2a_until = INT64_MIN;
      if (is_start) {
        const sc__tev *e = &t->ev[c->ev];
        const char *nm = sc__tname(t, e->name);
        if (e->kind != SC_TRACE_RUNTIME &&
            (strstr(nm, "all_to_all") != NULL || strstr(nm, "alltoall") != NULL))
          if (e->ts_ns + e->dur_ns > a2a_until) a2a_until = e->ts_ns + e->dur_ns;
        if (e->kind == SC_TRACE_RUNTIME && e->ts_ns < a2a_until) g->a2a[c->ev] = 1;
      }
      if (!same) continue;
      const cpt *pc = &pts[k - 1];
      uint64_t pinst = (pc->thr_start & 1u) ? START(g, pc->ev) : END(g, pc->ev);
      double lag = (double)(c->t - pc->t);
      if (!is_start && blocking_pred[c->ev] && tail[c->ev] < lag) lag = tail[c->ev];
      if ((rc = add_edge(b, pinst, inst, lag)) != SC_OK) goto out;
    }
  }
  /* runtime calls inside all_to_all annotations mark their ops */
  for (size_t p = 0; p < g->nops; p++) {
    uint32_t ev = g->ops[p], li;
    if (imap_get(&launch, t->ev[ev].corr, &li) && g->a2a[li]) g->a2a[ev] = 1;
  }
  if ((rc = resolve_comm(g, &launch)) != SC_OK) goto out;

  /* 3. event record -> stream wait across streams (HTA's matching) */
  for (size_t i = 0; i < n; i++) {
    const sc__tev *s = &t->ev[i];
    if (s->kind != SC_TRACE_SYNC || s->sync != SC__SYNC_WAIT_EVENT) continue;
    uint32_t rec, call;
    if (s->wait_stream < 0 || !imap_get(&launch, s->wait_corr, &rec) ||
        !imap_get(&launch, s->corr, &call)) {
      gi->unmatched_waits++;
      continue;
    }
    size_t lo, hi, lo2, hi2;
    stream_range(g, s->pid, s->wait_stream, &lo, &hi);
    size_t pred = last_launched(g, lo, hi, t->ev[rec].ts_ns);
    stream_range(g, s->pid, s->tid, &lo2, &hi2);
    size_t succ = first_launched(g, lo2, hi2, t->ev[call].ts_ns);
    if (pred == SIZE_MAX || succ == SIZE_MAX) {
      gi->unmatched_waits++;
      continue;
    }
    if (nextra == capextra) {
      size_t cap = capextra ? capextra * 2 : 256;
      uint64_t *x = realloc(extra, cap * sizeof *x);
      if (x == NULL) { rc = SC_ENOMEM; goto out; }
      extra = x;
      capextra = cap;
    }
    extra[nextra++] = ((uint64_t)g->ops[succ] << 32) | (uint64_t)g->ops[pred];
  }
  if (nextra > 1) qsort(extra, nextra, sizeof *extra, cmp_u64);
  /* the overlap edit changes streams only now: what the measurement waited on is known */
  if (ed != NULL && ed->serialize_comm && (rc = serialize_comm(g, &launch)) != SC_OK) goto out;

  /* 4. GPU op starts: medians of binding lags, then edges */
  lat = malloc((g->nops ? g->nops : 1) * sizeof *lat);
  gap = malloc((g->nops ? g->nops : 1) * sizeof *gap);
  if (!lat || !gap) { rc = SC_ENOMEM; goto out; }
  {
    size_t nlat = 0, ngap = 0;
    /* pass A: binding lags */
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p], li;
      const sc__tev *o = &t->ev[ev];
      int64_t s = o->ts_ns;
      int has_l = imap_get(&launch, o->corr, &li);
      int has_p = p > 0 && t->ev[g->ops[p - 1]].pid == o->pid &&
                  g->stream[g->ops[p - 1]] == g->stream[ev];
      int64_t tl = has_l ? t->ev[li].ts_ns : INT64_MIN;
      int64_t tp = has_p ? t->ev[g->ops[p - 1]].ts_ns + t->ev[g->ops[p - 1]].dur_ns
                         : INT64_MIN;
      if (has_l && tl >= tp && s >= tl) lat[nlat++] = (double)(s - tl);
      else if (has_p && tp > tl && s >= tp) gap[ngap++] = (double)(s - tp);
    }
    double med_lat = sc__median(lat, nlat), med_gap = sc__median(gap, ngap);
    size_t xi = 0;
    /* Without cuda_sync records (older Kineto), cudaStreamWaitEvent cannot be matched to
     * its record. A GPU op whose start no known predecessor explains (it starts more than
     * thr after all of them) then gets an inferred edge from the op of another stream of
     * its device that ended last before it, when that end is within thr of its start:
     * thr = the rank's median launch-to-start latency (at least the 1 us resolution of
     * Kineto timestamps). docs/trace.md, "Inferred waits". */
    double thr = med_lat > 1000.0 ? med_lat : 1000.0;
    if (t->info.by_kind[SC_TRACE_SYNC] == 0 && g->nops > 0) {
      ends = malloc(g->nops * sizeof *ends);
      if (ends == NULL) { rc = SC_ENOMEM; goto out; }
      for (size_t p = 0; p < g->nops; p++) {
        const sc__tev *o = &t->ev[g->ops[p]];
        ends[p].dev = o->pid;
        ends[p].stream = o->ts_ns + o->dur_ns; /* the end, as the sort key */
        ends[p].ts = o->tid;                   /* the measured stream */
        ends[p].ev = g->ops[p];
      }
      qsort(ends, g->nops, sizeof *ends, cmp_okey);
    }
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p], li;
      const sc__tev *o = &t->ev[ev];
      int64_t s = o->ts_ns;
      /* candidate predecessors: (instant, measured time, default lag, type) */
      uint64_t ci[65];
      int64_t ct[65];
      double cd[65];
      int ctype[65];
      int nc = 0;
      if (imap_get(&launch, o->corr, &li)) {
        ci[nc] = START(g, li); ct[nc] = t->ev[li].ts_ns; cd[nc] = med_lat; ctype[nc++] = 0;
      }
      if (p > 0 && t->ev[g->ops[p - 1]].pid == o->pid &&
          g->stream[g->ops[p - 1]] == g->stream[ev]) {
        uint32_t q = g->ops[p - 1];
        ci[nc] = END(g, q); ct[nc] = t->ev[q].ts_ns + t->ev[q].dur_ns; cd[nc] = med_gap;
        ctype[nc++] = 1;
      }
      size_t xa = 0, xb = nextra;
      while (xa < xb) {
        size_t m = (xa + xb) / 2;
        if ((extra[m] >> 32) < ev) xa = m + 1; else xb = m;
      }
      for (xi = xa; xi < nextra && (extra[xi] >> 32) == ev; xi++) {
        uint32_t q = (uint32_t)(extra[xi] & 0xffffffffu);
        if (nc < 64) {
          ci[nc] = END(g, q); ct[nc] = t->ev[q].ts_ns + t->ev[q].dur_ns; cd[nc] = med_gap;
          ctype[nc++] = 2;
        }
      }
      int bind = -1;
      for (int c = 0; c < nc; c++) {
        if (bind < 0 || ct[c] > ct[bind]) bind = c;
      }
      if (ends != NULL && (bind < 0 || (double)(s - ct[bind]) > thr)) {
        /* last end at or before s on this device */
        size_t a = 0, z = g->nops;
        while (a < z) {
          size_t m = (a + z) / 2;
          if (ends[m].dev < o->pid || (ends[m].dev == o->pid && ends[m].stream <= s)) a = m + 1;
          else z = m;
        }
        while (a > 0 && ends[a - 1].dev == o->pid && (double)(s - ends[a - 1].stream) <= thr) {
          a--;
          if (ends[a].ts != o->tid && ends[a].ev != ev) {
            uint32_t q = ends[a].ev;
            ci[nc] = END(g, q); ct[nc] = ends[a].stream; cd[nc] = med_gap; ctype[nc] = 3;
            bind = nc++;
            break;
          }
        }
      }
      for (int c = 0; c < nc; c++) {
        double meas = (double)(s - ct[c]);
        double lag = c == bind ? meas : (meas < cd[c] ? meas : cd[c]);
        if (lag < 0) lag = 0;
        if ((rc = add_edge(b, ci[c], START(g, ev), lag)) != SC_OK) goto out;
        if (ctype[c] == 0) gi->launch_edges++;
        else if (ctype[c] == 1) gi->stream_edges++;
        else if (ctype[c] == 2) gi->event_edges++;
        else gi->inferred_edges++;
      }
    }
  }
out:
  imap_free(&launch);
  imap_free(&syncm);
  free(pts);
  free(extra);
  free(lat);
  free(gap);
  free(ends);
  free(blocking_pred);
  free(tail);
  free(w);
  return rc;
}

static void free_ranks(rank_g *r, size_t nr) {
  if (r == NULL) return;
  for (size_t i = 0; i < nr; i++) {
    free(r[i].stream);
    free(r[i].fam);
    free(r[i].a2a);
    free(r[i].ckind);
    free(r[i].cguess);
    free(r[i].cmeta);
    free(r[i].cbytes);
    free(r[i].ops);
    free(r[i].launch_ts);
    free(r[i].by_launch);
    free(r[i].dur);
  }
  free(r);
}

void sc_trace_result_free(sc_trace_result *res) {
  if (res == NULL) return;
  free_ranks(res->r, res->nr);
  free(res->M);
  free(res->T);
  free(res->iters);
  free(res);
}

/* The kernel name up to '(' (template arguments differ in no way across ranks; arguments
 * may print differently). */
static int same_kernel(const char *a, const char *b) {
  size_t la = strcspn(a, "("), lb = strcspn(b, "(");
  return la == lb && memcmp(a, b, la) == 0;
}

/* ---- communication kernels across ranks (docs/trace.md, "Collectives") ----
 * Groups of kernels, one per rank at most, that are one collective (or one send/recv
 * pair): found by key (process group and sequence number; for a send/recv with its peer,
 * the pair of ranks and the order of their ops), else by order on each stream. */

typedef struct cmem {
  uint32_t rank, ev;
} cmem;

typedef struct cmatch {
  cmem *m;          /* members, group after group */
  size_t nm, capm;
  size_t *start;    /* ng + 1 offsets into m */
  uint8_t *by_key;  /* per group */
  size_t ng, capg;
} cmatch;

static int cm_add(cmatch *c, const cmem *mem, size_t n, int by_key) {
  if (c->nm + n > c->capm) {
    size_t cap = c->capm ? c->capm : 256;
    while (cap < c->nm + n) cap *= 2;
    cmem *m = realloc(c->m, cap * sizeof *m);
    if (m == NULL) return SC_ENOMEM;
    c->m = m;
    c->capm = cap;
  }
  if (c->ng + 2 > c->capg) {
    size_t cap = c->capg ? c->capg * 2 : 128;
    size_t *st = realloc(c->start, cap * sizeof *st);
    if (st == NULL) return SC_ENOMEM;
    c->start = st;
    uint8_t *bk = realloc(c->by_key, cap);
    if (bk == NULL) return SC_ENOMEM;
    c->by_key = bk;
    c->capg = cap;
  }
  if (c->ng == 0) c->start[0] = 0;
  memcpy(c->m + c->nm, mem, n * sizeof *mem);
  c->nm += n;
  c->by_key[c->ng] = (uint8_t)by_key;
  c->start[++c->ng] = c->nm;
  return SC_OK;
}

static void cm_free(cmatch *c) {
  free(c->m);
  free(c->start);
  free(c->by_key);
  memset(c, 0, sizeof *c);
}

static uint64_t mix64(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

typedef struct kent {
  uint64_t h;
  int64_t ts;
  uint32_t rank, ev, occ;
} kent;

static int cmp_kent_occ(const void *a, const void *b) {
  const kent *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int cmp_kent_grp(const void *a, const void *b) {
  const kent *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  if (x->occ != y->occ) return x->occ < y->occ ? -1 : 1;
  return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Key of communication op ev of rank g: 1 with *h set, 0 when the trace states none. */
static int comm_key(const rank_g *g, uint32_t ev, uint64_t *h) {
  const sc_trace *t = g->t;
  const sc__tcoll *c = &g->cmeta[ev];
  int p2p = g->ckind[ev] == SC_COLL_SENDRECV;
  if (c->pg == SC__NONE) return 0;
  uint64_t k = hash_str(sc__tname(t, c->pg));
  int32_t self = t->info.rank;
  if (p2p && c->peer >= 0 && self >= 0 && c->peer != self) {
    /* a send and its recv: the k-th op between two ranks on one, the k-th on the other */
    int32_t lo = self < c->peer ? self : c->peer, hi = self < c->peer ? c->peer : self;
    *h = mix64(mix64(mix64(k, 'P'), (uint64_t)lo), (uint64_t)hi);
    return 1;
  }
  if (c->seq < 0) return 0;
  *h = mix64(mix64(k, p2p ? 'p' : 'c'), (uint64_t)c->seq);
  return 1;
}

/* End (measured, ns, the rank's own clock) of member x. */
static int64_t mem_end(const sc_trace_result *res, const cmem *x) {
  const sc__tev *e = &res->r[x->rank].t->ev[x->ev];
  return e->ts_ns + e->dur_ns;
}

/* Clock offsets (ns, rank r's clock minus rank 0's) from the groups of c flagged in use:
 * the median over shared groups of end_r - end_q + off_q, from rank 0 outwards; a rank
 * that shares no group with a placed rank keeps 0. */
static int clock_offsets(const sc_trace_result *res, const cmatch *c, const uint8_t *use,
                         int64_t *off) {
  size_t nr = res->nr;
  uint8_t *known = calloc(nr, 1);
  double *d = malloc((c->ng ? c->ng : 1) * sizeof *d);
  if (known == NULL || d == NULL) {
    free(known);
    free(d);
    return SC_ENOMEM;
  }
  for (size_t i = 0; i < nr; i++) off[i] = 0;
  known[0] = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 1; i < nr; i++) {
      if (known[i]) continue;
      size_t nd = 0;
      for (size_t gi = 0; gi < c->ng; gi++) {
        if (!use[gi]) continue;
        const cmem *mi = NULL, *mq = NULL;
        for (size_t k = c->start[gi]; k < c->start[gi + 1]; k++) {
          if (c->m[k].rank == i) mi = &c->m[k];
          else if (known[c->m[k].rank] && mq == NULL) mq = &c->m[k];
        }
        if (mi != NULL && mq != NULL)
          d[nd++] = (double)(mem_end(res, mi) - mem_end(res, mq)) + (double)off[mq->rank];
      }
      if (nd > 0) {
        off[i] = (int64_t)llround(sc__median(d, nd));
        known[i] = 1;
        changed = 1;
      }
    }
  }
  free(known);
  free(d);
  return SC_OK;
}

/* Do the ends of group gi agree once the clocks are aligned by off? Within 100 us (clock
 * jitter, the ring's tail) or 5 % of its shortest kernel, whichever is larger. */
static int group_agrees(const sc_trace_result *res, const cmatch *c, size_t gi,
                        const int64_t *off) {
  int64_t lo = INT64_MAX, hi = INT64_MIN, mind = INT64_MAX;
  for (size_t k = c->start[gi]; k < c->start[gi + 1]; k++) {
    const cmem *x = &c->m[k];
    int64_t e = mem_end(res, x) - off[x->rank];
    int64_t du = res->r[x->rank].t->ev[x->ev].dur_ns;
    if (e < lo) lo = e;
    if (e > hi) hi = e;
    if (du < mind) mind = du;
  }
  double tol = 0.05 * (double)mind;
  if (tol < 100000.0) tol = 100000.0;
  return (double)(hi - lo) <= tol;
}

/* Match the communication ops of all ranks (ntraces > 1): groups in *out (the keyed ones
 * first, then those by order that were kept), the clock offsets in off, counts in gi. */
static int match_comm(sc_trace_result *res, cmatch *out, int64_t *off, sc_error *err) {
  size_t nr = res->nr;
  sc_trace_graph_info *gi = &res->g;
  cmatch ord;
  memset(&ord, 0, sizeof ord);
  kent *ke = NULL;
  okey **lst = calloc(nr, sizeof *lst);
  size_t *nl = calloc(nr, sizeof *nl);
  uint8_t *use = NULL;
  cmem *tmp = malloc(nr * sizeof *tmp);
  int rc = SC_OK;
  size_t nk = 0, capk = 0;
  if (lst == NULL || nl == NULL || tmp == NULL) { rc = SC_ENOMEM; goto out; }
  /* keyed ops, and per rank the keyless ones that may go by order */
  for (size_t r = 0; r < nr; r++) {
    const rank_g *g = &res->r[r];
    const sc_trace *t = g->t;
    lst[r] = malloc((g->nops ? g->nops : 1) * sizeof **lst);
    if (lst[r] == NULL) { rc = SC_ENOMEM; goto out; }
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p];
      if (g->fam[ev] != SC_KFAM_COMM) continue;
      const sc__tev *e = &t->ev[ev];
      uint64_t h;
      if (comm_key(g, ev, &h)) {
        if (nk == capk) {
          size_t cap = capk ? capk * 2 : 256;
          kent *x = realloc(ke, cap * sizeof *x);
          if (x == NULL) { rc = SC_ENOMEM; goto out; }
          ke = x;
          capk = cap;
        }
        kent k = {h, e->ts_ns, (uint32_t)r, ev, 0};
        ke[nk++] = k;
      } else if (g->ckind[ev] == SC_COLL_SENDRECV) {
        gi->p2p_unpaired++; /* a send/recv's peer is unknown: not paired by order */
      } else {
        okey o = {e->pid, e->tid, e->ts_ns, ev}; /* the measured stream */
        lst[r][nl[r]++] = o;
      }
    }
    qsort(lst[r], nl[r], sizeof **lst, cmp_okey);
  }
  /* by key: the k-th op of one key on every rank */
  if (nk > 0) {
    qsort(ke, nk, sizeof *ke, cmp_kent_occ);
    for (size_t i = 0; i < nk; i++) {
      ke[i].occ = (i > 0 && ke[i - 1].rank == ke[i].rank && ke[i - 1].h == ke[i].h)
                      ? ke[i - 1].occ + 1 : 0;
    }
    qsort(ke, nk, sizeof *ke, cmp_kent_grp);
    for (size_t a = 0; a < nk;) {
      size_t z = a + 1;
      while (z < nk && ke[z].h == ke[a].h && ke[z].occ == ke[a].occ) z++;
      if (z - a < 2) {
        gi->comm_alone++;
      } else {
        size_t nmem = 0;
        int kind = -1;
        size_t kr = 0;
        for (size_t q = a; q < z; q++) {
          const rank_g *g = &res->r[ke[q].rank];
          int kq = g->cguess[ke[q].ev] ? -1 : g->ckind[ke[q].ev];
          if (kq >= 0 && kind >= 0 && kq != kind) {
            const sc__tcoll *c = &g->cmeta[ke[q].ev];
            rc = sc_error_set(err, SC_ECONFIG, "communication kernel of process group '%.40s' "
                              "sequence %lld: %s on %s but %s on %s; the traces are not of "
                              "one job", sc__tname(g->t, c->pg), (long long)c->seq,
                              sc_comm_kind_name((sc_coll_kind)kind), res->r[kr].t->path,
                              sc_comm_kind_name((sc_coll_kind)kq), g->t->path);
            goto out;
          }
          if (kq >= 0 && kind < 0) { kind = kq; kr = ke[q].rank; }
          tmp[nmem].rank = ke[q].rank;
          tmp[nmem++].ev = ke[q].ev;
        }
        if ((rc = cm_add(out, tmp, nmem, 1)) != SC_OK) goto out;
        gi->coll_by_key++;
      }
      a = z;
    }
  }
  /* by order: the k-th op of the j-th stream of every rank (kernel names must agree) */
  {
    size_t *pos = calloc(nr, sizeof *pos);
    if (pos == NULL) { rc = SC_ENOMEM; goto out; }
    for (size_t j = 0;; j++) {
      /* the j-th stream's range on every rank */
      int any = 0, all = 1;
      size_t m = SIZE_MAX;
      for (size_t r = 0; r < nr; r++) {
        size_t a = pos[r], z = a;
        while (z < nl[r] && lst[r][z].dev == lst[r][a].dev &&
               lst[r][z].stream == lst[r][a].stream) z++;
        if (z > a) any = 1; else all = 0;
        if (z - a < m) m = z - a;
      }
      if (!any) break;
      for (size_t k = 0; all && k < m; k++) {
        size_t nmem = 0;
        for (size_t r = 0; r < nr; r++) {
          const okey *o = &lst[r][pos[r] + k];
          if (r > 0) {
            const sc_trace *t0 = res->r[0].t, *tr = res->r[r].t;
            const char *n0 = sc__tname(t0, t0->ev[lst[0][pos[0] + k].ev].name);
            const char *nrn = sc__tname(tr, tr->ev[o->ev].name);
            if (!same_kernel(n0, nrn)) {
              rc = sc_error_set(err, SC_ECONFIG, "collective %zu of NCCL stream %zu: '%.60s' "
                                "on %s but '%.60s' on %s; the traces are not of one job",
                                k, j, n0, t0->path, nrn, tr->path);
              free(pos);
              goto out;
            }
          }
          tmp[nmem].rank = (uint32_t)r;
          tmp[nmem++].ev = o->ev;
        }
        if ((rc = cm_add(&ord, tmp, nmem, 0)) != SC_OK) { free(pos); goto out; }
      }
      for (size_t r = 0; r < nr; r++) {
        size_t a = pos[r], z = a;
        while (z < nl[r] && lst[r][z].dev == lst[r][a].dev &&
               lst[r][z].stream == lst[r][a].stream) z++;
        gi->comm_alone += (z - a) - (all ? m : 0);
        pos[r] = z;
      }
    }
    free(pos);
  }
  /* clock offsets: from the keyed groups where there are any, else from the pairs by
   * order; pairs by order whose ends then disagree are refused, all of them when they
   * are the majority (the order is not the job's) */
  {
    size_t ng = out->ng + ord.ng;
    use = malloc(ng ? ng : 1);
    if (use == NULL) { rc = SC_ENOMEM; goto out; }
    if (out->ng > 0) {
      memset(use, 1, out->ng);
      if ((rc = clock_offsets(res, out, use, off)) != SC_OK) goto out;
    } else if (ord.ng > 0) {
      memset(use, 1, ord.ng);
      if ((rc = clock_offsets(res, &ord, use, off)) != SC_OK) goto out;
    }
    size_t ok = 0;
    for (size_t g2 = 0; g2 < ord.ng; g2++) ok += (use[g2] = (uint8_t)group_agrees(res, &ord, g2, off));
    if (ord.ng > 0 && 2 * ok < ord.ng) {
      memset(use, 0, ord.ng);
      ok = 0;
      if (out->ng == 0) memset(off, 0, nr * sizeof *off);
    } else if (ord.ng > 0 && out->ng == 0 && ok < ord.ng) {
      /* the offsets again from the pairs kept, which then must still agree */
      if ((rc = clock_offsets(res, &ord, use, off)) != SC_OK) goto out;
      ok = 0;
      for (size_t g2 = 0; g2 < ord.ng; g2++) {
        if (use[g2]) ok += (use[g2] = (uint8_t)group_agrees(res, &ord, g2, off));
      }
    }
    gi->order_refused = ord.ng - ok;
    gi->coll_by_order = ok;
    for (size_t g2 = 0; g2 < ord.ng; g2++) {
      if (!use[g2]) continue;
      if ((rc = cm_add(out, ord.m + ord.start[g2], ord.start[g2 + 1] - ord.start[g2], 0)) !=
          SC_OK)
        goto out;
    }
  }
  gi->collectives = out->ng;
out:
  if (lst != NULL) {
    for (size_t r = 0; r < nr; r++) free(lst[r]);
  }
  free(lst);
  free(nl);
  free(ke);
  free(tmp);
  free(use);
  cm_free(&ord);
  return rc;
}

/* What the GPU of a rank does at a time, by the ops active then. */
enum {
  ST_COMPUTE = 0,  /* compute kernels, no communication */
  ST_COMM,         /* communication, no compute (exposed) */
  ST_MEMORY,       /* only memcpy/memset */
  ST_OVERLAP,      /* compute and communication at once */
  ST_COUNT
};

typedef struct seg {
  double t0, t1;
  int state; /* ST_* */
} seg;

typedef struct bnd {
  double t;
  int d;     /* +1 / -1 */
  int cls;   /* 0 compute, 1 comm, 2 memory */
} bnd;

static int cmp_bnd(const void *a, const void *b) {
  const bnd *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->d - y->d; /* ends before starts at one time */
}

static int op_class(int fam) {
  if (fam == SC_KFAM_COMM) return 1;
  if (fam == SC_KFAM_MEMCPY || fam == SC_KFAM_MEMSET) return 2;
  return 0;
}

/* Append a span [ws, we] (replayed ns) of rank ri with its breakdown over segments sg. */
static int add_iter(sc_trace_result *res, const char *name, size_t ri, double measured_s,
                    double ws, double we, const seg *sg, size_t ns) {
  if (res->niters % 64 == 0) {
    sc_trace_iter *it = realloc(res->iters, (res->niters + 64) * sizeof *it);
    if (it == NULL) return SC_ENOMEM;
    res->iters = it;
  }
  sc_trace_iter *it = &res->iters[res->niters++];
  memset(it, 0, sizeof *it);
  snprintf(it->name, sizeof it->name, "%s", name);
  it->rank = (int32_t)ri;
  it->measured_s = measured_s;
  it->replayed_s = (we - ws) * 1e-9;
  double acc[ST_COUNT] = {0, 0, 0, 0};
  size_t a = 0, b = ns;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (sg[m].t1 <= ws) a = m + 1; else b = m;
  }
  for (size_t k = a; k < ns && sg[k].t0 < we; k++) {
    double lo = sg[k].t0 > ws ? sg[k].t0 : ws, hi = sg[k].t1 < we ? sg[k].t1 : we;
    if (hi > lo) acc[sg[k].state] += hi - lo;
  }
  it->compute_s = (acc[ST_COMPUTE] + acc[ST_OVERLAP]) * 1e-9;
  it->comm_exposed_s = acc[ST_COMM] * 1e-9;
  it->memory_s = acc[ST_MEMORY] * 1e-9;
  it->idle_s = it->replayed_s - it->compute_s - it->comm_exposed_s - it->memory_s;
  if (it->idle_s < 0) it->idle_s = 0;
  it->exposed_compute_s = acc[ST_COMPUTE] * 1e-9;
  it->overlapped_s = acc[ST_OVERLAP] * 1e-9;
  it->exposed_comm_s = it->comm_exposed_s;
  it->other_s = it->memory_s + it->idle_s;
  double comm = acc[ST_OVERLAP] + acc[ST_COMM];
  it->comm_overlap_pct = comm > 0 ? 100.0 * acc[ST_OVERLAP] / comm : NAN;
  return SC_OK;
}

/* Iterations of rank ri with their breakdown. */
static int rank_iters(sc_trace_result *res, size_t ri) {
  const rank_g *g = &res->r[ri];
  const sc_trace *t = g->t;
  size_t nb = 2 * g->nops, ns = 0;
  bnd *bd = malloc((nb ? nb : 1) * sizeof *bd);
  seg *sg = malloc((nb + 1) * sizeof *sg);
  if (bd == NULL || sg == NULL) {
    free(bd);
    free(sg);
    return SC_ENOMEM;
  }
  for (size_t p = 0; p < g->nops; p++) {
    uint32_t ev = g->ops[p];
    int cls = op_class(g->fam[ev]);
    bd[2 * p].t = res->T[START(g, ev)];
    bd[2 * p].d = 1;
    bd[2 * p].cls = cls;
    bd[2 * p + 1].t = res->T[END(g, ev)];
    bd[2 * p + 1].d = -1;
    bd[2 * p + 1].cls = cls;
  }
  qsort(bd, nb, sizeof *bd, cmp_bnd);
  long cnt[3] = {0, 0, 0};
  for (size_t k = 0; k < nb; k++) {
    int st = cnt[0] > 0 ? (cnt[1] > 0 ? ST_OVERLAP : ST_COMPUTE)
             : cnt[1] > 0 ? ST_COMM : cnt[2] > 0 ? ST_MEMORY : -1;
    if (st >= 0 && k > 0 && bd[k].t > bd[k - 1].t) {
      if (ns > 0 && sg[ns - 1].state == st && sg[ns - 1].t1 == bd[k - 1].t) {
        sg[ns - 1].t1 = bd[k].t;
      } else {
        sg[ns].t0 = bd[k - 1].t;
        sg[ns].t1 = bd[k].t;
        sg[ns++].state = st;
      }
    }
    cnt[bd[k].cls] += bd[k].d;
  }
  free(bd);
  int any_step = 0, rc;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    const char *nm = sc__tname(t, e->name);
    if (e->kind != SC_TRACE_ANNOTATION || strncmp(nm, "ProfilerStep#", 13) != 0) continue;
    any_step = 1;
    if ((rc = add_iter(res, nm, ri, (double)e->dur_ns * 1e-9, res->T[START(g, i)],
                       res->T[END(g, i)], sg, ns)) != SC_OK) {
      free(sg);
      return rc;
    }
  }
  if (!any_step && t->nev > 0) {
    /* no ProfilerStep#N: the whole trace is one span */
    double ms = INFINITY, me = -INFINITY, rs = INFINITY, re = -INFINITY;
    for (size_t i = 0; i < t->nev; i++) {
      if (t->ev[i].kind == SC_TRACE_SYNC) continue;
      if (res->M[START(g, i)] < ms) ms = res->M[START(g, i)];
      if (res->M[END(g, i)] > me) me = res->M[END(g, i)];
      if (res->T[START(g, i)] < rs) rs = res->T[START(g, i)];
      if (res->T[END(g, i)] > re) re = res->T[END(g, i)];
    }
    if (ms < me) {
      if ((rc = add_iter(res, "trace", ri, (me - ms) * 1e-9, rs, re, sg, ns)) != SC_OK) {
        free(sg);
        return rc;
      }
    }
  }
  free(sg);
  return SC_OK;
}

int sc_trace_replay(sc_trace *const *traces, size_t ntraces, const sc_trace_edits *edits,
                    sc_trace_result **out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_trace_replay: out is NULL");
  *out = NULL;
  if (traces == NULL || ntraces == 0)
    return sc_error_set(err, SC_EINVAL, "sc_trace_replay: no traces");
  for (size_t i = 0; i < ntraces; i++) {
    if (traces[i] == NULL)
      return sc_error_set(err, SC_EINVAL, "sc_trace_replay: traces[%zu] is NULL", i);
    /* a trace without GPU work has no iteration to replay: refused, not a 0 % error */
    const sc_trace *t = traces[i];
    const uint64_t *k = t->info.by_kind;
    if (k[SC_TRACE_KERNEL] + k[SC_TRACE_MEMCPY] + k[SC_TRACE_MEMSET] == 0) {
      /* name the complete events of categories not read: another profiler's names? */
      char cats[160] = "";
      size_t cl = 0, shown = 0;
      for (size_t q = 0; q < t->nskip && shown < 4; q++) {
        if (strncmp(t->skip_kind[q], "X/", 2) != 0 || strcmp(t->skip_kind[q], "X/Trace") == 0)
          continue;
        int w = snprintf(cats + cl, sizeof cats - cl, "%s%.40s %llu", shown ? ", " : "; complete "
                         "events of categories not read: ", t->skip_kind[q],
                         (unsigned long long)t->skip_count[q]);
        if (w < 0 || (size_t)w >= sizeof cats - cl) break;
        cl += (size_t)w;
        shown++;
      }
      return sc_error_set(err, SC_EPARSE, "%s: no GPU kernel, memcpy or memset events to "
                          "replay (%llu of %llu events kept%s; a profiler trace without CUDA "
                          "activity?)", t->path, (unsigned long long)t->info.kept,
                          (unsigned long long)t->info.events, cats);
    }
  }
  sc_trace_result *res = calloc(1, sizeof *res);
  builder b = {NULL, 0, 0};
  cmatch cm;
  memset(&cm, 0, sizeof cm);
  uint32_t *indeg = NULL, *csr_to = NULL, *queue = NULL;
  uint64_t *csr_off = NULL;
  double *csr_lag = NULL;
  int rc = SC_OK;
  if (res == NULL) return sc_error_set(err, SC_ENOMEM, "trace replay: out of memory");
  res->nr = ntraces;
  res->r = calloc(ntraces, sizeof *res->r);
  if (res->r == NULL) { rc = SC_ENOMEM; goto nomem; }
  uint64_t ninst = 0;
  for (size_t i = 0; i < ntraces; i++) {
    res->r[i].t = traces[i];
    res->r[i].off = ninst;
    ninst += 2 * (uint64_t)traces[i]->nev;
  }
  /* instants are 32-bit indices: the events' two each, plus at most one join per
   * communication kernel of the first trace */
  if (ninst + traces[0]->nev >= UINT32_MAX) {
    rc = sc_error_set(err, SC_ELIMIT, "trace replay: %llu events exceed the graph's 32-bit "
                      "index", (unsigned long long)(ninst / 2));
    goto fail;
  }
  for (size_t i = 0; i < ntraces; i++) {
    rc = build_rank(&res->r[i], edits, &b, &res->g, err);
    if (rc == SC_ENOMEM) goto nomem;
    if (rc != SC_OK) goto fail;
    rc = edited_durations(&res->r[i], edits, err);
    if (rc != SC_OK) goto fail;
  }
  /* communication kernels across ranks, the ranks' clock offsets */
  int64_t *offs = calloc(ntraces, sizeof *offs);
  if (offs == NULL) { rc = SC_ENOMEM; goto nomem; }
  if (ntraces > 1) {
    rc = match_comm(res, &cm, offs, err);
    if (rc != SC_OK) {
      free(offs);
      if (rc == SC_ENOMEM) goto nomem;
      goto fail;
    }
  }
  res->g.kind_guessed_rank = -1;
  for (size_t i = 0; i < ntraces; i++) {
    const rank_g *g = &res->r[i];
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p];
      if (!g->cguess[ev]) continue;
      if (res->g.kind_guessed++ == 0) {
        res->g.kind_guessed_rank = (int32_t)i;
        snprintf(res->g.kind_guessed_name, sizeof res->g.kind_guessed_name, "%.*s",
                 (int)strcspn(sc__tname(g->t, g->t->ev[ev].name), "("),
                 sc__tname(g->t, g->t->ev[ev].name));
      }
    }
  }
  {
    int64_t base0 = INT64_MAX;
    for (size_t k = 0; k < traces[0]->nev; k++) {
      if (traces[0]->ev[k].ts_ns < base0) base0 = traces[0]->ev[k].ts_ns;
    }
    if (base0 == INT64_MAX) base0 = 0;
    for (size_t i = 0; i < ntraces; i++) res->r[i].base_ns = base0 + offs[i];
  }
  free(offs);
  /* joins: one instant per collective after the events' instants */
  res->ninst = ninst + cm.ng;
  if (res->ninst >= UINT32_MAX) {
    rc = sc_error_set(err, SC_ELIMIT, "trace replay: %llu instants exceed the graph's "
                      "32-bit index", (unsigned long long)res->ninst);
    goto fail;
  }
  res->M = malloc((res->ninst ? res->ninst : 1) * sizeof *res->M);
  res->T = malloc((res->ninst ? res->ninst : 1) * sizeof *res->T);
  if (res->M == NULL || res->T == NULL) { rc = SC_ENOMEM; goto nomem; }
  for (size_t i = 0; i < ntraces; i++) {
    const rank_g *g = &res->r[i];
    for (size_t k = 0; k < traces[i]->nev; k++) {
      const sc__tev *e = &traces[i]->ev[k];
      res->M[START(g, k)] = (double)(e->ts_ns - g->base_ns);
      res->M[END(g, k)] = (double)(e->ts_ns + e->dur_ns - g->base_ns);
    }
  }
  /* collective joins: each member ends at the last arrival + its measured time after
   * it (scaled by its edit); every other GPU op: start -> end */
  {
    uint8_t **joined = calloc(ntraces, sizeof *joined);
    if (joined == NULL) { rc = SC_ENOMEM; goto nomem; }
    for (size_t i = 0; i < ntraces && rc == SC_OK; i++) {
      joined[i] = calloc(traces[i]->nev ? traces[i]->nev : 1, 1);
      if (joined[i] == NULL) rc = SC_ENOMEM;
    }
    for (size_t gq = 0; gq < cm.ng && rc == SC_OK; gq++) {
      uint64_t jid = ninst + gq;
      double last = -INFINITY;
      for (size_t k = cm.start[gq]; k < cm.start[gq + 1]; k++) {
        const rank_g *g = &res->r[cm.m[k].rank];
        if (res->M[START(g, cm.m[k].ev)] > last) last = res->M[START(g, cm.m[k].ev)];
      }
      res->M[jid] = last;
      for (size_t k = cm.start[gq]; k < cm.start[gq + 1] && rc == SC_OK; k++) {
        rank_g *g = &res->r[cm.m[k].rank];
        uint32_t ev = cm.m[k].ev;
        double meas = (double)traces[cm.m[k].rank]->ev[ev].dur_ns;
        double scale = meas > 0 ? g->dur[ev] / meas : 1.0;
        double lag = (res->M[END(g, ev)] - last) * scale;
        if (lag < 0) lag = 0;
        joined[cm.m[k].rank][ev] = 1;
        if ((rc = add_edge(&b, START(g, ev), jid, 0)) == SC_OK)
          rc = add_edge(&b, jid, END(g, ev), lag);
      }
    }
    for (size_t i = 0; i < ntraces && rc == SC_OK; i++) {
      rank_g *g = &res->r[i];
      for (size_t p = 0; p < g->nops && rc == SC_OK; p++) {
        uint32_t ev = g->ops[p];
        if (!joined[i][ev]) rc = add_edge(&b, START(g, ev), END(g, ev), g->dur[ev]);
      }
    }
    for (size_t i = 0; i < ntraces; i++) free(joined[i]);
    free(joined);
    if (rc != SC_OK) goto nomem;
  }
  /* CSR and Kahn's longest path */
  {
    uint64_t n = res->ninst;
    indeg = calloc(n ? n : 1, sizeof *indeg);
    csr_off = calloc(n + 1, sizeof *csr_off);
    csr_to = malloc((b.n ? b.n : 1) * sizeof *csr_to);
    csr_lag = malloc((b.n ? b.n : 1) * sizeof *csr_lag);
    queue = malloc((n ? n : 1) * sizeof *queue);
    if (!indeg || !csr_off || !csr_to || !csr_lag || !queue) { rc = SC_ENOMEM; goto nomem; }
    for (size_t k = 0; k < b.n; k++) {
      csr_off[b.e[k].from + 1]++;
      indeg[b.e[k].to]++;
    }
    for (uint64_t k = 0; k < n; k++) csr_off[k + 1] += csr_off[k];
    {
      uint64_t *fill = malloc((n ? n : 1) * sizeof *fill);
      if (fill == NULL) { rc = SC_ENOMEM; goto nomem; }
      memcpy(fill, csr_off, n * sizeof *fill);
      for (size_t k = 0; k < b.n; k++) {
        uint64_t at = fill[b.e[k].from]++;
        csr_to[at] = b.e[k].to;
        csr_lag[at] = b.e[k].lag;
      }
      free(fill);
    }
    res->g.edges = b.n;
    free(b.e);
    b.e = NULL;
    size_t qh = 0, qt = 0;
    for (uint64_t k = 0; k < n; k++) {
      if (indeg[k] == 0) {
        res->T[k] = res->M[k];
        queue[qt++] = (uint32_t)k;
      } else {
        res->T[k] = -INFINITY;
      }
    }
    while (qh < qt) {
      uint32_t u = queue[qh++];
      double tu = res->T[u];
      for (uint64_t k = csr_off[u]; k < csr_off[u + 1]; k++) {
        uint32_t v = csr_to[k];
        double c = tu + csr_lag[k];
        if (c > res->T[v]) res->T[v] = c;
        if (--indeg[v] == 0) queue[qt++] = v;
      }
    }
    if (qt != n) {
      rc = sc_error_set(err, SC_EPARSE, "trace replay: the dependency graph has a cycle "
                        "(%llu of %llu instants unresolved): inconsistent timestamps or "
                        "collectives matched across ranks in the wrong order",
                        (unsigned long long)(n - qt), (unsigned long long)n);
      goto fail;
    }
  }
  for (size_t i = 0; i < ntraces; i++) {
    res->g.nodes += traces[i]->nev - traces[i]->info.by_kind[SC_TRACE_SYNC];
    size_t before = res->niters;
    if ((rc = rank_iters(res, i)) != SC_OK) goto nomem;
    /* nothing to replay is an error naming the file, not a 0 % or 100 % idle figure */
    if (res->niters == before) {
      rc = sc_error_set(err, SC_EPARSE, "%s: nothing to replay: no ProfilerStep#N span and "
                        "its events span no time", traces[i]->path);
      goto fail;
    }
    int busy = 0;
    for (size_t q = before; q < res->niters; q++) {
      if (res->iters[q].replayed_s - res->iters[q].idle_s > 0) busy = 1;
    }
    if (!busy) {
      rc = sc_error_set(err, SC_EPARSE, "%s: nothing to replay: no GPU work inside its %zu "
                        "ProfilerStep span%s (its kernels lie outside them)", traces[i]->path,
                        res->niters - before, res->niters - before == 1 ? "" : "s");
      goto fail;
    }
  }
  goto done;
nomem:
  if (rc == SC_ENOMEM) rc = sc_error_set(err, SC_ENOMEM, "trace replay: out of memory");
fail:
  sc_trace_result_free(res);
  res = NULL;
done:
  cm_free(&cm);
  free(b.e);
  free(indeg);
  free(csr_off);
  free(csr_to);
  free(csr_lag);
  free(queue);
  *out = res;
  return rc;
}

const sc_trace_iter *sc_trace_result_iters(const sc_trace_result *r, size_t *n) {
  if (n) *n = r ? r->niters : 0;
  return r ? r->iters : NULL;
}

void sc_trace_result_graph(const sc_trace_result *r, sc_trace_graph_info *out) {
  if (r && out) *out = r->g;
}

int sc_trace_timeline(FILE *out, const sc_trace_result *r, sc_error *err) {
  if (out == NULL || r == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_trace_timeline: NULL argument");
  double t0 = INFINITY;
  for (uint64_t k = 0; k < r->ninst; k++) {
    if (r->T[k] < t0) t0 = r->T[k];
  }
  fprintf(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  int first = 1;
  for (size_t i = 0; i < r->nr; i++) {
    const rank_g *g = &r->r[i];
    const sc_trace *t = g->t;
    fprintf(out, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %zu, \"args\": "
            "{\"name\": ", first ? "" : ",\n", i);
    char pn[64];
    snprintf(pn, sizeof pn, "rank %zu (replayed)", i);
    sc_json_string(out, pn);
    fprintf(out, "}}");
    first = 0;
    int64_t pd = INT64_MIN, ps = INT64_MIN;
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p];
      if (t->ev[ev].pid == pd && g->stream[ev] == ps) continue;
      pd = t->ev[ev].pid;
      ps = g->stream[ev];
      fprintf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": "
              "%lld, \"args\": {\"name\": \"GPU %lld stream %lld\"}}", i,
              (long long)(1000000000LL + pd * 1000000LL + ps), (long long)pd, (long long)ps);
    }
    for (size_t k = 0; k < t->nev; k++) {
      const sc__tev *e = &t->ev[k];
      if (e->kind == SC_TRACE_SYNC) continue;
      long long tid = is_gpu(e->kind) ? 1000000000LL + e->pid * 1000000LL + g->stream[k]
                                      : (long long)e->tid;
      double ts = (r->T[START(g, k)] - t0) * 1e-3, dur = (r->T[END(g, k)] - r->T[START(g, k)]) * 1e-3;
      fprintf(out, ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ",
              sc_trace_kind_name((sc_trace_kind)e->kind));
      sc_json_string(out, sc__tname(t, e->name));
      fprintf(out, ", \"pid\": %zu, \"tid\": %lld, \"ts\": %.3f, \"dur\": %.3f}", i, tid, ts,
              dur);
    }
  }
  fprintf(out, "\n]}\n");
  if (ferror(out)) return sc_error_set(err, SC_EIO, "trace timeline: write failed");
  return SC_OK;
}
