/*
 * The what-if edits that change a rank's graph (docs/trace.md, "What-if"): the hardware
 * and dp edits re-time GPU work (the replayed durations), the overlap edit moves
 * communication onto the compute stream. The layers edit rewrites the trace itself
 * (layers.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

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
int sc__trace_edited_durations(sc__trank *g, const sc_trace_edits *ed, sc_error *err) {
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
      if (!sc__trace_is_gpu(e->kind)) continue;
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

/* The overlap edit: every communication op of a device moves to the device's compute
 * stream (most non-communication kernel time); the caller sorts the ops again. */
int sc__trace_serialize_comm(sc__trank *g) {
  const sc_trace *t = g->t;
  size_t n = t->nev, nops = g->nops;
  /* the compute stream of each device: most non-communication kernel time */
  int64_t best_s = -1, best_d = INT64_MIN;
  size_t nk = 0;
  sc__okey *k = malloc((nops ? nops : 1) * sizeof *k);
  if (k == NULL) return SC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (g->fam[i] == 255 || g->fam[i] == SC_KFAM_COMM) continue;
    k[nk].dev = t->ev[i].pid;
    k[nk].stream = t->ev[i].tid;
    k[nk].ts = t->ev[i].dur_ns;
    k[nk++].ev = (uint32_t)i;
  }
  qsort(k, nk, sizeof *k, sc__trace_cmp_okey);
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
  return SC_OK;
}
