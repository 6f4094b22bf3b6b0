/*
 * Collective estimates over a topology: algorithm choice and hierarchical composition
 * (docs/comm.md, "Hierarchical composition").
 */
#include <math.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/stepcast.h"

#define SC__COMM_MAX_CANDIDATES 32

static const char *const sc__kind_names[SC_COLL_COUNT] = {
    "allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"};
static const char *const sc__kind_stems[SC_COLL_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"};

const char *sc_comm_kind_name(sc_coll_kind kind) {
  return (unsigned)kind < SC_COLL_COUNT ? sc__kind_names[kind] : NULL;
}

int sc_comm_kind_parse(const char *name, sc_coll_kind *out) {
  if (name == NULL || out == NULL) return SC_EINVAL;
  for (int k = 0; k < SC_COLL_COUNT; k++) {
    if (strcmp(name, sc__kind_names[k]) == 0 || strcmp(name, sc__kind_stems[k]) == 0) {
      *out = (sc_coll_kind)k;
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

double sc_comm_bus_factor(sc_coll_kind kind, uint32_t nranks) {
  double n = (double)nranks;
  if (nranks <= 1) return 1.0;
  switch (kind) {
  case SC_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
  case SC_COLL_ALLGATHER:
  case SC_COLL_REDUCESCATTER:
  case SC_COLL_ALLTOALL: return (n - 1.0) / n;
  default: return 1.0;
  }
}

/* One plugin call, through the registry's memo. */
static int sc__call(sc_registry *reg, const sc_coll_plugin *p, const sc_coll_desc *c,
                    sc_estimate *out, sc_error *err) {
  return sc_registry_estimate_coll(reg, p, c, out, err);
}

/* Latency term (time at 0 bytes) and full time of c with plugin p. */
static int sc__phase(sc_registry *reg, const sc_coll_plugin *p, const sc_coll_desc *c,
                     double *lat_s, sc_estimate *full, sc_error *err) {
  sc_coll_desc z = *c;
  sc_estimate e0;
  int rc = sc__call(reg, p, c, full, err);
  if (rc != SC_OK) return rc;
  z.bytes = 0.0;
  rc = sc__call(reg, p, &z, &e0, err);
  if (rc != SC_OK) return rc;
  *lat_s = e0.time_s;
  return SC_OK;
}

/* The fastest plugin of reg for kind on c (whole, not composed). */
static int sc__best_whole(sc_registry *reg, sc_coll_kind kind, const sc_coll_desc *c,
                          const sc_coll_plugin **best, sc_error *err) {
  const sc_coll_plugin *cand[SC__COMM_MAX_CANDIDATES];
  size_t n = sc_registry_colls(reg, kind, cand, SC__COMM_MAX_CANDIDATES);
  double best_t = INFINITY;
  sc_coll_desc k = *c;
  k.kind = kind;
  *best = NULL;
  for (size_t i = 0; i < n; i++) {
    sc_estimate e;
    int rc = sc__call(reg, cand[i], &k, &e, err);
    if (rc != SC_OK) return rc;
    if (e.time_s < best_t) {
      best_t = e.time_s;
      *best = cand[i];
    }
  }
  if (*best == NULL) {
    return sc_error_set(err, SC_ENOTFOUND, "no collective plugin serves %s",
                        sc_comm_kind_name(kind));
  }
  return SC_OK;
}

/* Hierarchical all-reduce of resolved span r with inter-node algorithm p. */
static int sc__compose_allreduce(sc_registry *reg, const sc_coll_desc *r,
                                 const sc_coll_plugin *p, sc_estimate *out, sc_error *err) {
  sc_coll_desc intra = *r, inter = *r;
  const sc_coll_plugin *rs, *ag;
  sc_estimate e_rs, e_ar, e_ag;
  double l_rs, l_ar, l_ag, b_rs, b_ar, b_ag, lat, bwt;
  int rc;
  uint32_t r0 = r->tiers[0].ranks;

  /* Inside the node: the tier-0 span alone (outer tiers not crossed). */
  for (uint32_t i = 1; i < intra.ntiers; i++) intra.tiers[i].ranks = 1;
  intra.nranks = r0;
  /* Across nodes: the shard S / r0 over the outer tiers, one rail per GPU (tier 0 kept
   * with fan-out 1, so that tier indices stay the topology's). */
  inter.tiers[0].ranks = 1;
  inter.nranks = r->nranks / r0;
  inter.bytes = r->bytes / r0;
  inter.kind = SC_COLL_ALLREDUCE;

  intra.kind = SC_COLL_REDUCESCATTER;
  rc = sc__best_whole(reg, SC_COLL_REDUCESCATTER, &intra, &rs, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, rs, &intra, &l_rs, &e_rs, err);
  if (rc != SC_OK) return rc;
  intra.kind = SC_COLL_ALLGATHER;
  rc = sc__best_whole(reg, SC_COLL_ALLGATHER, &intra, &ag, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, ag, &intra, &l_ag, &e_ag, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, p, &inter, &l_ar, &e_ar, err);
  if (rc != SC_OK) return rc;

  b_rs = e_rs.time_s - l_rs;
  b_ar = e_ar.time_s - l_ar;
  b_ag = e_ag.time_s - l_ag;
  lat = l_rs + l_ar + l_ag;
  bwt = b_ar;
  memset(out, 0, sizeof *out);
  out->bound_tier = e_ar.bound_tier;
  if (b_rs > bwt) {
    bwt = b_rs;
    out->bound_tier = 0;
  }
  if (b_ag > bwt) {
    bwt = b_ag;
    out->bound_tier = 0;
  }
  out->time_s = lat + bwt;
  out->bytes = e_rs.bytes + e_ar.bytes + e_ag.bytes;
  if (lat >= bwt) {
    out->bound = SC_BOUND_LATENCY;
    /* The phase with the largest latency term names the tier. */
    if (l_ar >= l_rs + l_ag) {
      out->bound_tier = e_ar.bound_tier >= 0 ? e_ar.bound_tier : 0;
    } else {
      out->bound_tier = 0;
    }
  } else {
    out->bound = SC_BOUND_BANDWIDTH;
  }
  out->busbw_Bps = out->time_s > 0.0
                       ? r->bytes / out->time_s * sc_comm_bus_factor(r->kind, r->nranks)
                       : 0.0;
  /* Features: those the chosen algorithm reported for its inter-node phase. */
  out->nfeatures = e_ar.nfeatures <= SC_MAX_FEATURES ? e_ar.nfeatures : SC_MAX_FEATURES;
  memcpy(out->features, e_ar.features, sizeof(double) * out->nfeatures);
  return SC_OK;
}

/* One candidate: composed for a multi-node all-reduce with several members per node and
 * a hierarchical algorithm, whole otherwise. */
static int sc__one(sc_registry *reg, const sc_coll_desc *r, const sc_coll_plugin *p,
                   sc_estimate *out, sc_error *err) {
  int top = -1;
  for (uint32_t i = 0; i < r->ntiers; i++) {
    if (r->tiers[i].ranks > 1) top = (int)i;
  }
  /* NCCL's ring is one flat ring over every rank (its channels on the NIC rails): the
   * plugin answers it whole. Any other all-reduce algorithm (tree, third-party ones) is
   * the inter-node stage of the hierarchical composition. */
  if (r->kind == SC_COLL_ALLREDUCE && top >= 1 && r->tiers[0].ranks > 1 &&
      strcmp(p->algorithm, "ring") != 0) {
    return sc__compose_allreduce(reg, r, p, out, err);
  }
  return sc__call(reg, p, r, out, err);
}

int sc_comm_estimate(sc_registry *reg, const sc_topology *t, const sc_coll_desc *c,
                     const char *algo, sc_estimate *out, const sc_coll_plugin **chosen,
                     sc_error *err) {
  sc_coll_desc r;
  const sc_coll_plugin *cand[SC__COMM_MAX_CANDIDATES];
  size_t n;
  int rc;
  double best_t = INFINITY;
  const sc_coll_plugin *best = NULL;
  sc_estimate best_e;
  if (reg == NULL || t == NULL || c == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_estimate: %s is NULL",
                        reg == NULL ? "reg" : t == NULL ? "t" : c == NULL ? "c" : "out");
  }
  if ((unsigned)c->kind >= SC_COLL_COUNT) {
    return sc_error_set(err, SC_EINVAL, "collective kind %d is unknown", (int)c->kind);
  }
  if (!(c->bytes >= 0.0) || !isfinite(c->bytes)) {
    return sc_error_set(err, SC_EINVAL, "collective: bytes must be finite and >= 0 (got %g)",
                        c->bytes);
  }
  rc = sc_comm_check_topology(t, err);
  if (rc != SC_OK) return rc;
  rc = sc_comm_resolve(t, c, &r, err);
  if (rc != SC_OK) return rc;
  if (algo == NULL || algo[0] == '\0' || strcmp(algo, "auto") == 0) {
    n = sc_registry_colls(reg, c->kind, cand, SC__COMM_MAX_CANDIDATES);
    if (n == 0) {
      return sc_error_set(err, SC_ENOTFOUND, "no collective plugin serves %s",
                          sc_comm_kind_name(c->kind));
    }
  } else {
    cand[0] = sc_registry_coll(reg, c->kind, algo);
    if (cand[0] == NULL) {
      return sc_error_set(err, SC_ENOTFOUND, "no '%s' algorithm for %s", algo,
                          sc_comm_kind_name(c->kind));
    }
    n = 1;
  }
  for (size_t i = 0; i < n; i++) {
    sc_estimate e;
    rc = sc__one(reg, &r, cand[i], &e, err);
    if (rc != SC_OK) return rc;
    if (best == NULL || e.time_s < best_t) {
      best_t = e.time_s;
      best = cand[i];
      best_e = e;
    }
  }
  *out = best_e;
  if (chosen != NULL) *chosen = best;
  return SC_OK;
}
