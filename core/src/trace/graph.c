/*
 * The dependency graph of one rank's trace (docs/trace.md): its instants and edges. The
 * replay (replay.c) sets each instant to the maximum over its predecessors; lags are chosen
 * so that, with measured durations, every instant lands on its measured time.
 *   CPU thread: the starts and ends of its events in time order form a chain whose lags
 *     are the measured gaps (untraced CPU work). The end of a blocking call (device,
 *     stream or event synchronisation; a memcpy that completed inside its call) is
 *     max(previous instant + min(gap, tail), end of the GPU work waited on + tail), tail =
 *     measured end - max(measured start, measured end of that work).
 *   GPU op: start >= launch call start + lag, >= end of the previous op of its stream +
 *     lag, >= end of the op an event wait points at + lag. The binding predecessor (the
 *     latest in the measurement) gets the measured lag; the others the smaller of their
 *     measured lag and the rank's median lag of that edge type when binding.
 * The edits that change the graph's durations or streams are edit.c's; communication
 * kernels across ranks are matched in match.c.
 */
#include <stdlib.h>
#include <string.h>

#include "common/median.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

int sc__trace_add_edge(sc__tbuilder *b, uint64_t from, uint64_t to, double lag) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1 << 16;
    sc__tedge *e = realloc(b->e, cap * sizeof *e);
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

int sc__trace_cmp_okey(const void *a, const void *b) {
  const sc__okey *x = a, *y = b;
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
static void stream_range(const sc__trank *g, int64_t dev, int64_t stream, size_t *lo, size_t *hi) {
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
static size_t last_launched(const sc__trank *g, size_t lo, size_t hi, int64_t t) {
  size_t a = lo, b = hi;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (g->launch_ts[m] <= t) a = m + 1; else b = m;
  }
  return a == lo ? SIZE_MAX : a - 1;
}
/* First op of [lo, hi) launched at or after t; SIZE_MAX if none. */
static size_t first_launched(const sc__trank *g, size_t lo, size_t hi, int64_t t) {
  size_t a = lo, b = hi;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (g->launch_ts[m] < t) a = m + 1; else b = m;
  }
  return a == hi ? SIZE_MAX : a;
}

static int sort_ops(sc__trank *g, const imap *launch);

/* Per-rank preparation: families, streams as measured, ops sorted, launch times. */
static int prepare_rank(sc__trank *g, const imap *launch) {
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
    if (sc__trace_is_gpu(e->kind)) {
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
static int sort_ops(sc__trank *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nops = g->nops;
  sc__okey *k = malloc((nops ? nops : 1) * sizeof *k);
  lkey *lk = malloc((nops ? nops : 1) * sizeof *lk);
  if (!k || !lk) {
    free(k);
    free(lk);
    return SC_ENOMEM;
  }
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (!sc__trace_is_gpu(t->ev[i].kind)) continue;
    k[j].dev = t->ev[i].pid;
    k[j].stream = g->stream[i];
    k[j].ts = t->ev[i].ts_ns;
    k[j++].ev = (uint32_t)i;
  }
  qsort(k, nops, sizeof *k, sc__trace_cmp_okey);
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

/* name is "cuda<api>" or "hip<api>". */
static int api_is(const char *name, const char *api) {
  if (strncmp(name, "cuda", 4) == 0) return strcmp(name + 4, api) == 0;
  if (strncmp(name, "hip", 3) == 0) return strcmp(name + 3, api) == 0;
  return 0;
}

/* Waited-on GPU work of a blocking runtime call: appends op positions to w (cap wcap). */
static size_t waited_ops(const sc__trank *g, const sc__tev *call, const sc__tev *sync,
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
  /* a memcpy that completed inside its own call: see sc__trace_build_rank */
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
static int resolve_comm(sc__trank *g, const imap *launch) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nm = 0;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (sc__trace_is_cpu(e->kind) && e->kind != SC_TRACE_RUNTIME &&
        (e->coll != 0 || strncmp(sc__tname(t, e->name), "nccl:", 5) == 0))
      nm++;
  }
  mev *m = malloc((nm ? nm : 1) * sizeof *m);
  if (m == NULL) return SC_ENOMEM;
  nm = 0;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (sc__trace_is_cpu(e->kind) && e->kind != SC_TRACE_RUNTIME &&
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
int sc__trace_build_rank(sc__trank *g, const sc_trace_edits *ed, sc__tbuilder *b,
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
  sc__okey *ends = NULL; /* inferred waits: (device, end, measured stream, op) */
  uint8_t *blocking_pred = NULL; /* per event: end instant gets GPU predecessors */
  double *tail = NULL;
  size_t *w = NULL;

  if ((rc = imap_init(&launch, n)) != SC_OK || (rc = imap_init(&syncm, n)) != SC_OK) goto out;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &t->ev[i];
    if (e->kind == SC_TRACE_RUNTIME && e->corr >= 0) imap_put(&launch, e->corr, (uint32_t)i);
    else if (e->kind == SC_TRACE_SYNC && e->corr >= 0) imap_put(&syncm, e->corr, (uint32_t)i);
    if (sc__trace_is_cpu(e->kind)) ncpu++;
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
      rc = sc__trace_add_edge(b, SC__END(g, g->ops[w[k]]), SC__END(g, i), tl);
      if (rc != SC_OK) goto out;
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
    if ((rc = sc__trace_add_edge(b, SC__END(g, ev), SC__END(g, li), tl)) != SC_OK) goto out;
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
      if (!sc__trace_is_cpu(e->kind)) continue;
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
      uint64_t inst = is_start ? SC__START(g, c->ev) : SC__END(g, c->ev);
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
      uint64_t pinst = (pc->thr_start & 1u) ? SC__START(g, pc->ev) : SC__END(g, pc->ev);
      double lag = (double)(c->t - pc->t);
      if (!is_start && blocking_pred[c->ev] && tail[c->ev] < lag) lag = tail[c->ev];
      if ((rc = sc__trace_add_edge(b, pinst, inst, lag)) != SC_OK) goto out;
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
  if (ed != NULL && ed->serialize_comm &&
      ((rc = sc__trace_serialize_comm(g)) != SC_OK || (rc = sort_ops(g, &launch)) != SC_OK))
    goto out;

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
      qsort(ends, g->nops, sizeof *ends, sc__trace_cmp_okey);
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
        ci[nc] = SC__START(g, li); ct[nc] = t->ev[li].ts_ns; cd[nc] = med_lat; ctype[nc++] = 0;
      }
      if (p > 0 && t->ev[g->ops[p - 1]].pid == o->pid &&
          g->stream[g->ops[p - 1]] == g->stream[ev]) {
        uint32_t q = g->ops[p - 1];
        ci[nc] = SC__END(g, q); ct[nc] = t->ev[q].ts_ns + t->ev[q].dur_ns; cd[nc] = med_gap;
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
          ci[nc] = SC__END(g, q); ct[nc] = t->ev[q].ts_ns + t->ev[q].dur_ns; cd[nc] = med_gap;
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
            ci[nc] = SC__END(g, q); ct[nc] = ends[a].stream; cd[nc] = med_gap; ctype[nc] = 3;
            bind = nc++;
            break;
          }
        }
      }
      for (int c = 0; c < nc; c++) {
        double meas = (double)(s - ct[c]);
        double lag = c == bind ? meas : (meas < cd[c] ? meas : cd[c]);
        if (lag < 0) lag = 0;
        if ((rc = sc__trace_add_edge(b, ci[c], SC__START(g, ev), lag)) != SC_OK) goto out;
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

void sc__trace_free_ranks(sc__trank *r, size_t nr) {
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
