/*
 * The breakdown of a rank's replayed GPU time over its iterations (docs/trace.md,
 * "Breakdown"): what the GPU does at each time by the ops active then (compute,
 * exposed communication, overlap, copies only, idle), summed per ProfilerStep#N span as
 * stepcast's own categories, Lumos's and HTA's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

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
int sc__trace_rank_iters(sc_trace_result *res, size_t ri) {
  const sc__trank *g = &res->r[ri];
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
    bd[2 * p].t = res->T[SC__START(g, ev)];
    bd[2 * p].d = 1;
    bd[2 * p].cls = cls;
    bd[2 * p + 1].t = res->T[SC__END(g, ev)];
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
    if ((rc = add_iter(res, nm, ri, (double)e->dur_ns * 1e-9, res->T[SC__START(g, i)],
                       res->T[SC__END(g, i)], sg, ns)) != SC_OK) {
      free(sg);
      return rc;
    }
  }
  if (!any_step && t->nev > 0) {
    /* no ProfilerStep#N: the whole trace is one span */
    double ms = INFINITY, me = -INFINITY, rs = INFINITY, re = -INFINITY;
    for (size_t i = 0; i < t->nev; i++) {
      if (t->ev[i].kind == SC_TRACE_SYNC) continue;
      if (res->M[SC__START(g, i)] < ms) ms = res->M[SC__START(g, i)];
      if (res->M[SC__END(g, i)] > me) me = res->M[SC__END(g, i)];
      if (res->T[SC__START(g, i)] < rs) rs = res->T[SC__START(g, i)];
      if (res->T[SC__END(g, i)] > re) re = res->T[SC__END(g, i)];
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
