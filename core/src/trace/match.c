/*
 * Communication kernels across ranks (docs/trace.md, "Collectives"): the k-th NCCL kernel
 * of one collective on every rank is one group; in the replay it ends when its last rank
 * arrives: end_r = max_q start_q + (measured end_r - measured last arrival), in one clock
 * (rank offsets = median difference of matched collective ends).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/median.h"
#include "stepcast/comm.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

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

static int cm_add(sc__tcmatch *c, const sc__tcmem *mem, size_t n, int by_key) {
  if (c->nm + n > c->capm) {
    size_t cap = c->capm ? c->capm : 256;
    while (cap < c->nm + n) cap *= 2;
    sc__tcmem *m = realloc(c->m, cap * sizeof *m);
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

void sc__trace_cmatch_free(sc__tcmatch *c) {
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
static int comm_key(const sc__trank *g, uint32_t ev, uint64_t *h) {
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
static int64_t mem_end(const sc_trace_result *res, const sc__tcmem *x) {
  const sc__tev *e = &res->r[x->rank].t->ev[x->ev];
  return e->ts_ns + e->dur_ns;
}

/* Clock offsets (ns, rank r's clock minus rank 0's) from the groups of c flagged in use:
 * the median over shared groups of end_r - end_q + off_q, from rank 0 outwards; a rank
 * that shares no group with a placed rank keeps 0. */
static int clock_offsets(const sc_trace_result *res, const sc__tcmatch *c, const uint8_t *use,
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
        const sc__tcmem *mi = NULL, *mq = NULL;
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
static int group_agrees(const sc_trace_result *res, const sc__tcmatch *c, size_t gi,
                        const int64_t *off) {
  int64_t lo = INT64_MAX, hi = INT64_MIN, mind = INT64_MAX;
  for (size_t k = c->start[gi]; k < c->start[gi + 1]; k++) {
    const sc__tcmem *x = &c->m[k];
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
int sc__trace_match_comm(sc_trace_result *res, sc__tcmatch *out, int64_t *off, sc_error *err) {
  size_t nr = res->nr;
  sc_trace_graph_info *gi = &res->g;
  sc__tcmatch ord;
  memset(&ord, 0, sizeof ord);
  kent *ke = NULL;
  sc__okey **lst = calloc(nr, sizeof *lst);
  size_t *nl = calloc(nr, sizeof *nl);
  uint8_t *use = NULL;
  sc__tcmem *tmp = malloc(nr * sizeof *tmp);
  int rc = SC_OK;
  size_t nk = 0, capk = 0;
  if (lst == NULL || nl == NULL || tmp == NULL) { rc = SC_ENOMEM; goto out; }
  /* keyed ops, and per rank the keyless ones that may go by order */
  for (size_t r = 0; r < nr; r++) {
    const sc__trank *g = &res->r[r];
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
        sc__okey o = {e->pid, e->tid, e->ts_ns, ev}; /* the measured stream */
        lst[r][nl[r]++] = o;
      }
    }
    qsort(lst[r], nl[r], sizeof **lst, sc__trace_cmp_okey);
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
          const sc__trank *g = &res->r[ke[q].rank];
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
          const sc__okey *o = &lst[r][pos[r] + k];
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
    for (size_t g2 = 0; g2 < ord.ng; g2++)
      ok += (use[g2] = (uint8_t)group_agrees(res, &ord, g2, off));
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
  sc__trace_cmatch_free(&ord);
  return rc;
}
