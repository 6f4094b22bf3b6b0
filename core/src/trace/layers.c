/*
 * The layers edit of the trace-driven mode (docs/trace.md, "Changing the number of
 * layers"): find the repeating per-layer unit of every iteration and remove or duplicate
 * whole units, producing an edited trace that sc_trace_replay turns into a graph.
 *
 * Finding units. The CPU events of an iteration (ProfilerStep#N span, else the whole
 * trace) form a forest per thread (an event's parent is the innermost event of its thread
 * enclosing it). Every node gets a signature: a hash of its name ("nn.Module: Name_i"
 * without its "_i"), of the kernels its runtime call launched (by correlation) and of its
 * children's signatures in order. In every list of siblings (children of one node, or the
 * roots of one thread) the run of k >= 2 consecutive repetitions of a sequence of p
 * signatures that covers the most events is a candidate (ties: the smaller p); every unit
 * must launch GPU work. The best candidate of the iteration gives L = k; a second
 * candidate with the same count, disjoint in time and covering at least a quarter as many
 * events, is its mirror (the backward).
 *
 * Editing. Units are removed from the front of each block (N < L: units 0..L-N-1) or
 * unit 0 is copied N-L times right after itself (N > L). A unit spans a CPU window (start
 * of its first operator to the start of the next unit's) and a GPU window (first start
 * of its GPU ops to the next unit's). Every later event is shifted: CPU events by the
 * CPU windows removed or inserted before them, GPU events by the GPU windows, so that the
 * replay graph (thread order, stream order, launches by correlation, event waits by
 * record correlation) rewires around the edit with the measured gaps at the cut. At a
 * blocking synchronisation call that waited for the GPU (a GPU op ended between its start
 * and its end + 1 us), CPU and GPU meet again: both later shifts become max(GPU shift of
 * the waited work, CPU shift of the call start - the wait). Copies get fresh correlation
 * ids. Communication kernels outside the units from the GPU start of the last block of
 * an iteration on (data-parallel gradient buckets, which hold every layer's gradients)
 * get duration and bytes times N / L.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

static int is_gpu_k(int k) {
  return k == SC_TRACE_KERNEL || k == SC_TRACE_MEMCPY || k == SC_TRACE_MEMSET;
}
static int is_cpu_k(int k) {
  return k == SC_TRACE_CPU_OP || k == SC_TRACE_ANNOTATION || k == SC_TRACE_RUNTIME;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t name_hash(const char *s) {
  size_t n = strlen(s);
  if (strncmp(s, "nn.Module:", 10) == 0) { /* "nn.Module: Layer_3" -> "nn.Module: Layer" */
    size_t m = n;
    while (m > 0 && s[m - 1] >= '0' && s[m - 1] <= '9') m--;
    if (m < n && m > 0 && s[m - 1] == '_') n = m - 1;
  }
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

typedef struct ckey { int64_t corr; uint32_t ev; } ckey;
static int cmp_ckey(const void *a, const void *b) {
  const ckey *x = a, *y = b;
  if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}
/* [lo, hi) of entries with corr c */
static void crange(const ckey *k, size_t n, int64_t c, size_t *lo, size_t *hi) {
  size_t a = 0, b = n;
  while (a < b) { size_t m = (a + b) / 2; if (k[m].corr < c) a = m + 1; else b = m; }
  *lo = a;
  b = n;
  while (a < b) { size_t m = (a + b) / 2; if (k[m].corr <= c) a = m + 1; else b = m; }
  *hi = a;
}

typedef struct node {
  int64_t thr_pid, thr_tid, ts, end;
  uint32_t ev;
} node;
static int cmp_node(const void *a, const void *b) {
  const node *x = a, *y = b;
  if (x->thr_pid != y->thr_pid) return x->thr_pid < y->thr_pid ? -1 : 1;
  if (x->thr_tid != y->thr_tid) return x->thr_tid < y->thr_tid ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1; /* longer first: the parent */
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

typedef struct block {
  size_t first;     /* index (in nodes) of the first token */
  size_t *tok;      /* borrowed: the sibling list */
  size_t i, p, k;   /* tokens i .. i + k p of the list */
  uint64_t cover;   /* events covered */
  int64_t t0, t1;   /* CPU time range */
} block;

typedef struct cut {
  int gpu;
  int64_t t0, t1, delta;
  int ramp;
} cut;

typedef struct syncpt {
  int64_t tc, tg;       /* CPU time (call end) and GPU time (end of waited work) */
  double adjc, adjg;
} syncpt;

typedef struct ctx {
  const sc_trace *t;
  ckey *gk; size_t ngk;   /* GPU ops by corr */
  ckey *sk; size_t nsk;   /* cuda_sync by corr */
  cut *cuts; size_t ncut, capcut;
  syncpt *sp; size_t nsp;
  uint8_t *rm;            /* per event: removed */
  uint8_t *mem;           /* per event: belongs to a unit */
  double *scale;          /* per event: duration scale */
  uint32_t *cp_ev; int64_t *cp_corr; int64_t *cp_dc, *cp_dg;
  size_t ncp, capcp;
  int64_t stride, ncopyset;
} ctx;

/* best repetition in list tok[0..n) with signatures sig, event counts w; 0 if none */
static int best_rep(size_t n, const uint64_t *sig, const uint64_t *pre,
                    const uint8_t *launches, block *out) {
  int found = 0;
  for (size_t p = 1; p <= n / 2; p++) {
    size_t j = 0;
    while (j + p < n) {
      if (sig[j] != sig[j + p]) { j++; continue; }
      size_t s = j;
      while (j + p < n && sig[j] == sig[j + p]) j++;
      size_t run = j - s, k = run / p + 1;
      if (k < 2) continue;
      int gpu = 0;
      for (size_t q = s; q < s + p && !gpu; q++) gpu = launches[q];
      if (!gpu) continue;
      uint64_t cov = pre[s + k * p] - pre[s];
      if (!found || cov > out->cover || (cov == out->cover && p < out->p)) {
        out->i = s;
        out->p = p;
        out->k = k;
        out->cover = cov;
        found = 1;
      }
    }
  }
  return found;
}

static int add_cut(ctx *c, int gpu, int64_t t0, int64_t t1, int64_t delta, int ramp) {
  if (c->ncut == c->capcut) {
    size_t cap = c->capcut ? 2 * c->capcut : 16;
    cut *x = realloc(c->cuts, cap * sizeof *x);
    if (x == NULL) return SC_ENOMEM;
    c->cuts = x;
    c->capcut = cap;
  }
  cut *k = &c->cuts[c->ncut++];
  k->gpu = gpu; k->t0 = t0; k->t1 = t1; k->delta = delta; k->ramp = ramp;
  return SC_OK;
}

static double cutsum(const ctx *c, int gpu, int64_t t) {
  double s = 0;
  for (size_t i = 0; i < c->ncut; i++) {
    const cut *k = &c->cuts[i];
    if (k->gpu != gpu) continue;
    if (t >= k->t1) s += (double)k->delta;
    else if (k->ramp && t >= k->t0) s -= (double)(t - k->t0);
  }
  return s;
}

/* effective shift of an instant: cuts plus the meeting at waited synchronisations */
static double shift(const ctx *c, int gpu, int64_t t) {
  double adj = 0;
  for (size_t i = 0; i < c->nsp; i++) {
    if ((gpu ? c->sp[i].tg : c->sp[i].tc) <= t) adj = gpu ? c->sp[i].adjg : c->sp[i].adjc;
  }
  return cutsum(c, gpu, t) + adj;
}

static int add_copy(ctx *c, uint32_t ev, int64_t corr_off, int64_t dc, int64_t dg) {
  if (c->ncp == c->capcp) {
    size_t cap = c->capcp ? 2 * c->capcp : 256;
    uint32_t *a = realloc(c->cp_ev, cap * sizeof *a);
    if (a) c->cp_ev = a;
    int64_t *b = realloc(c->cp_corr, cap * sizeof *b);
    if (b) c->cp_corr = b;
    int64_t *d1 = realloc(c->cp_dc, cap * sizeof *d1);
    if (d1) c->cp_dc = d1;
    int64_t *d2 = realloc(c->cp_dg, cap * sizeof *d2);
    if (d2) c->cp_dg = d2;
    if (!a || !b || !d1 || !d2) return SC_ENOMEM;
    c->capcp = cap;
  }
  c->cp_ev[c->ncp] = ev;
  c->cp_corr[c->ncp] = corr_off;
  c->cp_dc[c->ncp] = dc;
  c->cp_dg[c->ncp] = dg;
  c->ncp++;
  return SC_OK;
}

/* Events of unit u of block b: CPU nodes [a, z) of nodes, plus their GPU ops and syncs.
 * Calls f on each event index. */
typedef int (*ev_fn)(ctx *c, uint32_t ev, void *arg);
static int unit_events(ctx *c, const node *nodes, const size_t *sub, const block *b,
                       size_t u, ev_fn f, void *arg, int64_t *gstart) {
  size_t a = b->tok[b->i + u * b->p], last = b->tok[b->i + (u + 1) * b->p - 1];
  size_t z = last + sub[last];
  int64_t g0 = INT64_MAX;
  int rc;
  for (size_t q = a; q < z; q++) {
    uint32_t ev = nodes[q].ev;
    if (f && (rc = f(c, ev, arg)) != SC_OK) return rc;
    const sc__tev *e = &c->t->ev[ev];
    if (e->kind != SC_TRACE_RUNTIME || e->corr < 0) continue;
    size_t lo, hi;
    crange(c->gk, c->ngk, e->corr, &lo, &hi);
    for (size_t m = lo; m < hi; m++) {
      if (c->t->ev[c->gk[m].ev].ts_ns < g0) g0 = c->t->ev[c->gk[m].ev].ts_ns;
      if (f && (rc = f(c, c->gk[m].ev, arg)) != SC_OK) return rc;
    }
    crange(c->sk, c->nsk, e->corr, &lo, &hi);
    for (size_t m = lo; m < hi; m++) {
      if (f && (rc = f(c, c->sk[m].ev, arg)) != SC_OK) return rc;
    }
  }
  if (gstart) *gstart = g0;
  return SC_OK;
}

static int f_member(ctx *c, uint32_t ev, void *arg) { (void)arg; c->mem[ev] = 1; return SC_OK; }
static int f_remove(ctx *c, uint32_t ev, void *arg) { (void)arg; c->rm[ev] = 1; return SC_OK; }
typedef struct cparg { int64_t corr_off, dc, dg; } cparg;
static int f_copy(ctx *c, uint32_t ev, void *arg) {
  const cparg *a = arg;
  return add_copy(c, ev, a->corr_off, a->dc, a->dg);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* One iteration [ps, pe): find blocks and record the edit. */
static int edit_iteration(ctx *c, int64_t ps, int64_t pe, const char *iname, uint32_t to,
                          sc_trace_layers_info *info, sc_error *err) {
  const sc_trace *t = c->t;
  size_t nn = 0;
  int rc = SC_OK;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    if (is_cpu_k(e->kind) && e->ts_ns >= ps && e->ts_ns < pe) nn++;
  }
  node *nodes = malloc((nn ? nn : 1) * sizeof *nodes);
  size_t *parent = malloc((nn ? nn : 1) * sizeof *parent);
  size_t *sub = malloc((nn ? nn : 1) * sizeof *sub);
  uint64_t *sig = malloc((nn ? nn : 1) * sizeof *sig);
  uint64_t *cnt = malloc((nn ? nn : 1) * sizeof *cnt);
  uint8_t *lau = malloc(nn ? nn : 1);
  size_t *tok = malloc((nn ? nn : 1) * sizeof *tok);   /* sibling lists, concatenated */
  size_t *lst = malloc((nn + 2) * sizeof *lst);        /* list starts */
  uint64_t *tsig = malloc((nn ? nn : 1) * sizeof *tsig);
  uint64_t *pre = malloc((nn + 1) * sizeof *pre);
  uint8_t *tl = malloc(nn ? nn : 1);
  block *cand = malloc((nn ? nn : 1) * sizeof *cand);
  size_t *stack = malloc((nn ? nn : 1) * sizeof *stack);
  if (!nodes || !parent || !sub || !sig || !cnt || !lau || !tok || !lst || !tsig || !pre ||
      !tl || !cand || !stack) { rc = SC_ENOMEM; goto out; }
  nn = 0;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    if (!is_cpu_k(e->kind) || e->ts_ns < ps || e->ts_ns >= pe) continue;
    if (e->kind == SC_TRACE_ANNOTATION &&
        strncmp(sc__tname(t, e->name), "ProfilerStep#", 13) == 0) continue;
    nodes[nn].thr_pid = e->pid;
    nodes[nn].thr_tid = e->tid;
    nodes[nn].ts = e->ts_ns;
    nodes[nn].end = e->ts_ns + e->dur_ns;
    nodes[nn++].ev = (uint32_t)i;
  }
  qsort(nodes, nn, sizeof *nodes, cmp_node);
  /* parents (preorder: a subtree is contiguous) */
  {
    size_t sp = 0;
    for (size_t q = 0; q < nn; q++) {
      if (q > 0 && (nodes[q].thr_pid != nodes[q - 1].thr_pid ||
                    nodes[q].thr_tid != nodes[q - 1].thr_tid)) sp = 0;
      while (sp > 0 && nodes[stack[sp - 1]].end <= nodes[q].ts) sp--;
      parent[q] = sp > 0 ? stack[sp - 1] : SIZE_MAX;
      stack[sp++] = q;
      sub[q] = 1;
    }
  }
  for (size_t q = nn; q-- > 0;) {
    if (parent[q] != SIZE_MAX) sub[parent[q]] += sub[q];
  }
  /* signatures bottom-up: children follow their parent in preorder */
  for (size_t q = nn; q-- > 0;) {
    const sc__tev *e = &t->ev[nodes[q].ev];
    uint64_t h = mix(name_hash(sc__tname(t, e->name)), e->kind);
    uint64_t w = 1;
    uint8_t l = 0;
    if (e->kind == SC_TRACE_RUNTIME && e->corr >= 0) {
      size_t lo, hi;
      crange(c->gk, c->ngk, e->corr, &lo, &hi);
      for (size_t m = lo; m < hi; m++) {
        h = mix(h, name_hash(sc__tname(t, t->ev[c->gk[m].ev].name)));
        w++;
        l = 1;
      }
    }
    for (size_t ch = q + 1; ch < q + sub[q]; ch += sub[ch]) {
      h = mix(h, sig[ch]);
      w += cnt[ch];
      l |= lau[ch];
    }
    sig[q] = h;
    cnt[q] = w;
    lau[q] = l;
  }
  /* sibling lists: roots of each thread, and children of each node */
  size_t nl = 0, nt = 0, nc = 0;
  for (size_t q = 0; q < nn; q++) {
    if (parent[q] != SIZE_MAX) continue;
    if (q == 0 || nodes[q].thr_pid != nodes[q - 1].thr_pid ||
        nodes[q].thr_tid != nodes[q - 1].thr_tid || nl == 0) lst[nl++] = nt;
    tok[nt++] = q;
  }
  for (size_t q = 0; q < nn; q++) {
    if (sub[q] < 2) continue;
    lst[nl++] = nt;
    for (size_t ch = q + 1; ch < q + sub[q]; ch += sub[ch]) tok[nt++] = ch;
  }
  lst[nl] = nt;
  for (size_t li = 0; li < nl; li++) {
    size_t a = lst[li], n = lst[li + 1] - a;
    if (n < 2) continue;
    pre[0] = 0;
    for (size_t m = 0; m < n; m++) {
      tsig[m] = sig[tok[a + m]];
      tl[m] = lau[tok[a + m]];
      pre[m + 1] = pre[m] + cnt[tok[a + m]];
    }
    /* the best run of the list, then the best runs of what lies before and after it
     * (a forward and a backward can be siblings) */
    size_t rng[64][2], nr = 0;
    rng[nr][0] = 0;
    rng[nr++][1] = n;
    while (nr > 0) {
      size_t lo = rng[nr - 1][0], hi = rng[nr - 1][1];
      nr--;
      if (hi - lo < 2) continue;
      block b;
      memset(&b, 0, sizeof b);
      if (!best_rep(hi - lo, tsig + lo, pre + lo, tl + lo, &b)) continue;
      b.i += lo;
      b.tok = tok + a;
      b.first = tok[a + b.i];
      size_t lastt = tok[a + b.i + b.k * b.p - 1];
      b.t0 = nodes[b.first].ts;
      b.t1 = nodes[lastt].end;
      cand[nc++] = b;
      if (nr + 2 <= 64) {
        rng[nr][0] = lo;
        rng[nr++][1] = b.i;
        rng[nr][0] = b.i + b.k * b.p;
        rng[nr++][1] = hi;
      }
    }
  }
  size_t best = SIZE_MAX, second = SIZE_MAX;
  for (size_t m = 0; m < nc; m++) {
    if (best == SIZE_MAX || cand[m].cover > cand[best].cover ||
        (cand[m].cover == cand[best].cover && cand[m].p < cand[best].p)) best = m;
  }
  if (best == SIZE_MAX) {
    rc = sc_error_set(err, SC_ECONFIG, "%s: %s: no repeating per-layer unit found (no "
                      "operator sequence launching GPU work repeats twice in a row); "
                      "cannot change the number of layers", t->path, iname);
    goto out;
  }
  for (size_t m = 0; m < nc; m++) {
    if (m == best || cand[m].k != cand[best].k || 4 * cand[m].cover < cand[best].cover)
      continue;
    if (cand[m].t0 < cand[best].t1 && cand[best].t0 < cand[m].t1) continue;
    if (second == SIZE_MAX || cand[m].cover > cand[second].cover) second = m;
  }
  uint32_t L = (uint32_t)cand[best].k;
  if (info->iterations == 0) {
    info->layers = L;
    info->unit_ops = (uint32_t)cand[best].p;
    info->blocks = second == SIZE_MAX ? 1 : 2;
    info->by_module = strncmp(sc__tname(t, t->ev[nodes[cand[best].first].ev].name),
                              "nn.Module:", 10) == 0;
  } else if (info->layers != L) {
    rc = sc_error_set(err, SC_ECONFIG, "%s: %s repeats its unit %u times but the first "
                      "iteration %u times; cannot change the number of layers", t->path,
                      iname, L, info->layers);
    goto out;
  }
  info->iterations++;
  block *bl[2] = {&cand[best], second == SIZE_MAX ? NULL : &cand[second]};
  int64_t glast = INT64_MIN; /* GPU start of the later block */
  for (int bi = 0; bi < 2; bi++) {
    block *b = bl[bi];
    if (b == NULL) continue;
    for (size_t u = 0; u < b->k; u++) {
      if ((rc = unit_events(c, nodes, sub, b, u, f_member, NULL, NULL)) != SC_OK) goto out;
    }
    int64_t g0;
    if ((rc = unit_events(c, nodes, sub, b, 0, NULL, NULL, &g0)) != SC_OK) goto out;
    if (bl[1] == NULL || b->t0 >= bl[1 - bi]->t0) glast = g0;
    if (to == L) continue;
    if (to < L) {
      size_t r = L - to;
      int64_t gr;
      if ((rc = unit_events(c, nodes, sub, b, r, NULL, NULL, &gr)) != SC_OK) goto out;
      for (size_t u = 0; u < r; u++) {
        if ((rc = unit_events(c, nodes, sub, b, u, f_remove, NULL, NULL)) != SC_OK) goto out;
      }
      int64_t s0 = nodes[b->tok[b->i]].ts, sr = nodes[b->tok[b->i + r * b->p]].ts;
      if ((rc = add_cut(c, 0, s0, sr, -(sr - s0), 1)) != SC_OK) goto out;
      if (g0 != INT64_MAX && gr != INT64_MAX && gr > g0 &&
          (rc = add_cut(c, 1, g0, gr, -(gr - g0), 1)) != SC_OK) goto out;
    } else {
      size_t a = to - L;
      int64_t g1;
      if ((rc = unit_events(c, nodes, sub, b, 1, NULL, NULL, &g1)) != SC_OK) goto out;
      int64_t s0 = nodes[b->tok[b->i]].ts, s1 = nodes[b->tok[b->i + b->p]].ts;
      int64_t wc = s1 - s0, wg = (g0 != INT64_MAX && g1 != INT64_MAX && g1 > g0) ? g1 - g0 : 0;
      for (size_t j = 1; j <= a; j++) {
        cparg arg = {c->stride * ++c->ncopyset, (int64_t)j * wc, (int64_t)j * wg};
        if ((rc = unit_events(c, nodes, sub, b, 0, f_copy, &arg, NULL)) != SC_OK) goto out;
      }
      if ((rc = add_cut(c, 0, s1, s1, (int64_t)a * wc, 0)) != SC_OK) goto out;
      if (wg > 0 && (rc = add_cut(c, 1, g1, g1, (int64_t)a * wg, 0)) != SC_OK) goto out;
    }
  }
  /* bucketed gradient collectives: outside the units, from the later block's GPU start */
  if (to != L && glast != INT64_MAX && glast != INT64_MIN) {
    for (size_t i = 0; i < t->nev; i++) {
      const sc__tev *e = &t->ev[i];
      if (e->kind != SC_TRACE_KERNEL || c->mem[i] || e->ts_ns < glast || e->ts_ns >= pe)
        continue;
      if (sc_trace_classify((sc_trace_kind)e->kind, sc__tname(t, e->name)) != SC_KFAM_COMM)
        continue;
      if (c->scale[i] == 1.0) info->scaled_comm++;
      c->scale[i] = (double)to / (double)L;
    }
  }
out:
  free(nodes); free(parent); free(sub); free(sig); free(cnt); free(lau); free(tok); free(lst);
  free(tsig); free(pre); free(tl); free(cand); free(stack);
  return rc;
}

static int api_sync(const char *n) {
  return (strncmp(n, "cuda", 4) == 0 || strncmp(n, "hip", 3) == 0) &&
         strstr(n, "Synchronize") != NULL;
}

typedef struct gend { int64_t end; uint32_t ev; } gend;
static int cmp_gend(const void *a, const void *b) {
  const gend *x = a, *y = b;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}
typedef struct call { int64_t te, ts; } call;
static int cmp_call(const void *a, const void *b) {
  const call *x = a, *y = b;
  if (x->te != y->te) return x->te < y->te ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Synchronisation points, in time order, with the shifts after them. The waited work
 * ends, after the edit, at the latest edited end of the GPU ops that ended within the
 * call (their start shift plus any duration scale). */
static int sync_points(ctx *c) {
  const sc_trace *t = c->t;
  size_t ng = 0, ns = 0;
  for (size_t i = 0; i < t->nev; i++) {
    if (is_gpu_k(t->ev[i].kind) && !c->rm[i]) ng++;
    if (t->ev[i].kind == SC_TRACE_RUNTIME && !c->rm[i] && !c->mem[i] &&
        api_sync(sc__tname(t, t->ev[i].name))) ns++;
  }
  gend *ends = malloc((ng ? ng : 1) * sizeof *ends);
  call *calls = malloc((ns ? ns : 1) * sizeof *calls);
  c->sp = malloc((ns ? ns : 1) * sizeof *c->sp);
  if (!ends || !calls || !c->sp) { free(ends); free(calls); return SC_ENOMEM; }
  ng = ns = 0;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    if (is_gpu_k(e->kind) && !c->rm[i]) {
      ends[ng].end = e->ts_ns + e->dur_ns;
      ends[ng++].ev = (uint32_t)i;
    }
    if (e->kind == SC_TRACE_RUNTIME && !c->rm[i] && !c->mem[i] &&
        api_sync(sc__tname(t, e->name))) {
      calls[ns].te = e->ts_ns + e->dur_ns;
      calls[ns++].ts = e->ts_ns;
    }
  }
  qsort(ends, ng, sizeof *ends, cmp_gend);
  qsort(calls, ns, sizeof *calls, cmp_call);
  c->nsp = 0;
  int64_t lastg = INT64_MIN;
  for (size_t k = 0; k < ns; k++) {
    int64_t te = calls[k].te, ts = calls[k].ts;
    size_t a = 0, b = ng;
    while (a < b) { size_t m = (a + b) / 2; if (ends[m].end <= te + 1000) a = m + 1; else b = m; }
    if (a == 0 || ends[a - 1].end < ts) continue; /* it did not wait */
    int64_t done = ends[a - 1].end;
    double sg = -INFINITY;
    for (size_t m = a; m-- > 0 && ends[m].end >= ts;) {
      const sc__tev *o = &t->ev[ends[m].ev];
      double ne = (double)(o->ts_ns + o->dur_ns) + shift(c, 1, o->ts_ns) +
                  (double)o->dur_ns * (c->scale[ends[m].ev] - 1.0);
      if (ne - (double)done > sg) sg = ne - (double)done;
    }
    double sc = shift(c, 0, ts) - (double)(done - ts);
    double after = sg > sc ? sg : sc;
    if (done < lastg) done = lastg;
    lastg = done;
    syncpt *p = &c->sp[c->nsp];
    p->tc = te;
    p->tg = done;
    p->adjc = after - cutsum(c, 0, te);
    p->adjg = after - cutsum(c, 1, done);
    c->nsp++;
  }
  free(ends);
  free(calls);
  return SC_OK;
}

static void place(const ctx *c, const sc__tev *e, sc__tev *o, int64_t dc, int64_t dg,
                  double scale) {
  *o = *e;
  if (is_cpu_k(e->kind)) {
    int64_t a = e->ts_ns + (int64_t)shift(c, 0, e->ts_ns) + dc;
    int64_t z = e->ts_ns + e->dur_ns + (int64_t)shift(c, 0, e->ts_ns + e->dur_ns) + dc;
    o->ts_ns = a;
    o->dur_ns = z > a ? z - a : 0;
  } else {
    o->ts_ns = e->ts_ns + (int64_t)shift(c, 1, e->ts_ns) + dg;
    if (scale != 1.0) {
      o->dur_ns = (int64_t)((double)e->dur_ns * scale + 0.5);
      o->coll_bytes = e->coll_bytes * scale;
    }
  }
}

int sc_trace_edit_layers(const sc_trace *in, uint32_t layers_to, sc_trace **out,
                         sc_trace_layers_info *info, sc_error *err) {
  if (out == NULL || in == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_trace_edit_layers: NULL argument");
  *out = NULL;
  if (layers_to == 0)
    return sc_error_set(err, SC_EINVAL, "layers edit: the number of layers must be >= 1");
  sc_trace_layers_info dummy;
  if (info == NULL) info = &dummy;
  memset(info, 0, sizeof *info);
  ctx c;
  memset(&c, 0, sizeof c);
  c.t = in;
  int rc = SC_OK;
  sc_trace *o = NULL;
  size_t n = in->nev;
  c.gk = malloc((n ? n : 1) * sizeof *c.gk);
  c.sk = malloc((n ? n : 1) * sizeof *c.sk);
  c.rm = calloc(n ? n : 1, 1);
  c.mem = calloc(n ? n : 1, 1);
  c.scale = malloc((n ? n : 1) * sizeof *c.scale);
  if (!c.gk || !c.sk || !c.rm || !c.mem || !c.scale) { rc = SC_ENOMEM; goto done; }
  int64_t maxcorr = 0;
  for (size_t i = 0; i < n; i++) {
    const sc__tev *e = &in->ev[i];
    c.scale[i] = 1.0;
    if (e->corr > maxcorr) maxcorr = e->corr;
    if (e->wait_corr > maxcorr) maxcorr = e->wait_corr;
    if (e->corr < 0) continue;
    if (is_gpu_k(e->kind)) { c.gk[c.ngk].corr = e->corr; c.gk[c.ngk++].ev = (uint32_t)i; }
    if (e->kind == SC_TRACE_SYNC) { c.sk[c.nsk].corr = e->corr; c.sk[c.nsk++].ev = (uint32_t)i; }
  }
  c.stride = maxcorr + 1;
  qsort(c.gk, c.ngk, sizeof *c.gk, cmp_ckey);
  qsort(c.sk, c.nsk, sizeof *c.sk, cmp_ckey);
  {
    int any = 0;
    for (size_t i = 0; i < n && rc == SC_OK; i++) {
      const sc__tev *e = &in->ev[i];
      const char *nm = sc__tname(in, e->name);
      if (e->kind != SC_TRACE_ANNOTATION || strncmp(nm, "ProfilerStep#", 13) != 0) continue;
      any = 1;
      rc = edit_iteration(&c, e->ts_ns, e->ts_ns + e->dur_ns + 1, nm, layers_to, info, err);
    }
    if (!any && rc == SC_OK)
      rc = edit_iteration(&c, INT64_MIN, INT64_MAX, "the trace", layers_to, info, err);
    if (rc != SC_OK) goto done;
  }
  if ((rc = sync_points(&c)) != SC_OK) goto done;
  o = calloc(1, sizeof *o);
  if (o == NULL) { rc = SC_ENOMEM; goto done; }
  size_t nout = 0;
  for (size_t i = 0; i < n; i++) nout += !c.rm[i];
  nout += c.ncp;
  o->path = malloc(strlen(in->path) + 1);
  o->ev = malloc((nout ? nout : 1) * sizeof *o->ev);
  o->pool = malloc(in->npool ? in->npool : 1);
  o->hash = malloc((in->caphash ? in->caphash : 1) * sizeof *o->hash);
  o->skip_kind = calloc(in->nskip ? in->nskip : 1, sizeof *o->skip_kind);
  o->skip_count = malloc((in->nskip ? in->nskip : 1) * sizeof *o->skip_count);
  o->coll = malloc((in->ncoll ? in->ncoll : 1) * sizeof *o->coll);
  if (!o->path || !o->ev || !o->pool || !o->hash || !o->skip_kind || !o->skip_count ||
      !o->coll) {
    rc = SC_ENOMEM;
    goto done;
  }
  strcpy(o->path, in->path);
  memcpy(o->pool, in->pool, in->npool);
  o->npool = o->cappool = in->npool;
  if (in->ncoll) memcpy(o->coll, in->coll, in->ncoll * sizeof *o->coll);
  o->ncoll = o->capcoll = in->ncoll; /* copies of a unit share their originals' metadata */
  if (in->caphash) memcpy(o->hash, in->hash, in->caphash * sizeof *o->hash);
  o->caphash = in->caphash;
  o->nhash = in->nhash;
  o->capskip = in->nskip ? in->nskip : 1;
  for (size_t i = 0; i < in->nskip; i++) {
    o->skip_kind[i] = malloc(strlen(in->skip_kind[i]) + 1);
    if (o->skip_kind[i] == NULL) { o->nskip = i; rc = SC_ENOMEM; goto done; }
    strcpy(o->skip_kind[i], in->skip_kind[i]);
    o->skip_count[i] = in->skip_count[i];
  }
  o->nskip = in->nskip;
  o->info = in->info;
  memset(o->info.by_kind, 0, sizeof o->info.by_kind);
  o->capev = nout ? nout : 1;
  for (size_t i = 0; i < n; i++) {
    if (c.rm[i]) continue;
    place(&c, &in->ev[i], &o->ev[o->nev++], 0, 0, c.scale[i]);
  }
  /* copies: fresh correlation ids (record ids of event waits inside the unit follow) */
  {
    int64_t *uc = malloc((c.ncp ? c.ncp : 1) * sizeof *uc);
    if (uc == NULL) { rc = SC_ENOMEM; goto done; }
    for (size_t k = 0; k < c.ncp;) {
      size_t z = k, nuc = 0;
      while (z < c.ncp && c.cp_corr[z] == c.cp_corr[k]) {
        if (in->ev[c.cp_ev[z]].corr >= 0) uc[nuc++] = in->ev[c.cp_ev[z]].corr;
        z++;
      }
      qsort(uc, nuc, sizeof *uc, cmp_i64);
      for (size_t m = k; m < z; m++) {
        const sc__tev *e = &in->ev[c.cp_ev[m]];
        sc__tev *d = &o->ev[o->nev++];
        place(&c, e, d, c.cp_dc[m], c.cp_dg[m], 1.0);
        if (e->corr >= 0) d->corr = e->corr + c.cp_corr[m];
        if (e->wait_corr >= 0 && bsearch(&e->wait_corr, uc, nuc, sizeof *uc, cmp_i64))
          d->wait_corr = e->wait_corr + c.cp_corr[m];
      }
      k = z;
    }
    free(uc);
  }
  for (size_t i = 0; i < o->nev; i++) o->info.by_kind[o->ev[i].kind]++;
  o->info.kept = o->nev;
  o->info.events = in->info.events - in->nev + o->nev;
done:
  free(c.gk); free(c.sk); free(c.rm); free(c.mem); free(c.scale); free(c.cuts); free(c.sp);
  free(c.cp_ev); free(c.cp_corr); free(c.cp_dc); free(c.cp_dg);
  if (rc != SC_OK) {
    sc_trace_free(o);
    if (rc == SC_ENOMEM) rc = sc_error_set(err, SC_ENOMEM, "layers edit: out of memory");
    return rc;
  }
  *out = o;
  return SC_OK;
}
