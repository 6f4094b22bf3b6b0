/*
 * Shared arithmetic of the built-in collective plugins (plugins/collectives/<stem>.c).
 * Header-only (static functions), so that each plugin stays one self-contained module that
 * needs only the SDK header. The formulas are documented in docs/comm.md.
 *
 * Model. A group spans the topology's tiers innermost first; tier t joins r_t members at
 * its level (desc->tiers[t].ranks), so the group has n = prod r_t ranks and
 * m_t = prod_{j<t} r_j members below tier t inside one instance of the tier beneath it
 * (m_0 = 1; for tier 1 = the NICs, m_1 is the group's members per node).
 *
 * An algorithm states, per tier t:
 *   link_bytes[t]  bytes one member sends (each way) through tier t's links, and
 *   hops[t]        the number of sequential steps whose latency is tier t's one-hop latency.
 * The chunks of NCCL's algorithms are pipelined through every tier at once, so
 *   time = sum_t hops[t] * latency_t  +  max_t link_bytes[t] / (bw_t / oversubscription_t)
 * and the tier of the max is the bound (SC_BOUND_LATENCY when the latency sum is larger
 * than the bandwidth term). bw_t is the bandwidth one member gets on tier t, each way, with
 * the sharing between concurrent groups already applied by the caller (sc_comm_estimate);
 * oversubscription_t is the load factor the caller resolved (>= 1).
 */
#ifndef SC_COLL_COMMON_H
#define SC_COLL_COMMON_H

#include <math.h>
#include <string.h>

#include "stepcast/plugin.h"

/* Features handed to the residual regressor, in this order (names below). */
enum {
  SC__CF_LOG2_BYTES = 0,  /* log2(bytes), bytes >= 1 */
  SC__CF_LOG2_NRANKS,     /* log2(group size) */
  SC__CF_TIERS_CROSSED,   /* tiers with fan-out > 1 */
  SC__CF_LATENCY_S,       /* latency term */
  SC__CF_BANDWIDTH_S,     /* bandwidth term (the max over tiers) */
  SC__CF_BOUND_TIER,      /* index of the bounding tier */
  SC__CF_SHARING,         /* groups sharing the bounding tier */
  SC__CF_OVERSUB,         /* oversubscription factor on the bounding tier */
  SC__CF_COUNT
};

static const char *const sc__coll_feature_names[SC__CF_COUNT] = {
    "log2_bytes", "log2_nranks", "tiers_crossed", "latency_s",
    "bandwidth_s", "bound_tier",  "sharing",       "oversubscription"};

/* Highest tier with fan-out > 1, or -1 for a group of one. */
static inline int sc__coll_top(const sc_coll_desc *c) {
  int top = -1;
  for (uint32_t t = 0; t < c->ntiers; t++) {
    if (c->tiers[t].ranks > 1) top = (int)t;
  }
  return top;
}

/* Check a description: kind served, bytes finite and >= 0, ntiers in range, every tier's
 * fan-out >= 1 with product nranks, and on every tier used (fan-out > 1, or a tier >= 1
 * below the highest crossed one, which the traffic passes on its way up) positive finite
 * bandwidth, latency >= 0, oversubscription >= 1 and sharing >= 1. */
static inline int sc__coll_check(const char *who, uint32_t kinds_mask, const sc_coll_desc *c,
                          sc_error *err) {
  uint64_t prod = 1;
  int top = -1;
  if (c == NULL) return sc_plugin_fail(err, SC_EINVAL, "%s: description is NULL", who);
  if ((unsigned)c->kind >= SC_COLL_COUNT || !(kinds_mask & (1u << c->kind))) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "%s: collective kind %d is not served", who,
                          (int)c->kind);
  }
  if (!(c->bytes >= 0.0) || !isfinite(c->bytes)) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: bytes must be finite and >= 0 (got %g)", who,
                          c->bytes);
  }
  if (c->ntiers < 1 || c->ntiers > SC_MAX_TIERS) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: ntiers must be in 1..%d (got %u)", who,
                          SC_MAX_TIERS, (unsigned)c->ntiers);
  }
  if (c->nranks < 1) return sc_plugin_fail(err, SC_EINVAL, "%s: nranks must be >= 1", who);
  top = sc__coll_top(c);
  for (uint32_t t = 0; t < c->ntiers; t++) {
    const sc_tier_span *s = &c->tiers[t];
    /* Used: crossed at its level, or (above the node) passed on the way to a higher tier. */
    int used = s->ranks > 1 || (t >= 1 && (int)t <= top);
    if (s->ranks < 1) {
      return sc_plugin_fail(err, SC_EINVAL, "%s: tiers[%u].ranks must be >= 1", who,
                            (unsigned)t);
    }
    prod *= s->ranks;
    if (prod > (1ull << 31)) break;
    if (used) {
      if (!(s->bw_Bps > 0.0) || !isfinite(s->bw_Bps)) {
        return sc_plugin_fail(err, SC_EINVAL, "%s: tiers[%u].bw_Bps must be > 0 (got %g)",
                              who, (unsigned)t, s->bw_Bps);
      }
      if (!(s->latency_s >= 0.0) || !isfinite(s->latency_s)) {
        return sc_plugin_fail(err, SC_EINVAL, "%s: tiers[%u].latency_s must be >= 0 (got %g)",
                              who, (unsigned)t, s->latency_s);
      }
      if (!(s->oversubscription >= 1.0) || !isfinite(s->oversubscription)) {
        return sc_plugin_fail(err, SC_EINVAL,
                              "%s: tiers[%u].oversubscription must be >= 1 (got %g)", who,
                              (unsigned)t, s->oversubscription);
      }
      if (s->sharing < 1) {
        return sc_plugin_fail(err, SC_EINVAL, "%s: tiers[%u].sharing must be >= 1", who,
                              (unsigned)t);
      }
    }
  }
  if (prod != c->nranks) {
    return sc_plugin_fail(err, SC_EINVAL,
                          "%s: nranks %u is not the product of the tiers' fan-outs (%llu)", who,
                          (unsigned)c->nranks, (unsigned long long)prod);
  }
  return SC_OK;
}

/* m_t: members of the group below tier t inside one instance of tier t-1 (m_0 = 1). */
static inline double sc__coll_below(const sc_coll_desc *c, uint32_t t) {
  double m = 1.0;
  for (uint32_t j = 0; j < t && j < c->ntiers; j++) m *= (double)c->tiers[j].ranks;
  return m;
}

/* Combine per-tier bytes and hops into out (time, bound, bound tier, bytes, features).
 * bus_factor is nccl-tests' busbw / algbw for the kind (2(n-1)/n, (n-1)/n or 1); algbw is
 * bytes / time. A tier whose link_bytes is 0 and hops 0 is not used. */
static inline void sc__coll_finish(const sc_coll_desc *c, const double *link_bytes,
                            const double *hops, double bus_factor, sc_estimate *out) {
  double lat = 0.0, bwt = 0.0, wire = 0.0, lat_max = -1.0;
  int bound = -1, lat_tier = -1, crossed = 0;
  for (uint32_t t = 0; t < c->ntiers; t++) {
    const sc_tier_span *s = &c->tiers[t];
    if (s->ranks > 1) crossed++;
    if (hops[t] > 0.0) {
      lat += hops[t] * s->latency_s;
      if (hops[t] * s->latency_s > lat_max) {
        lat_max = hops[t] * s->latency_s;
        lat_tier = (int)t;
      }
    }
    if (link_bytes[t] > 0.0) {
      double eff = s->bw_Bps / s->oversubscription;
      double tt = link_bytes[t] / eff;
      wire += link_bytes[t];
      if (tt > bwt || bound < 0) {
        bwt = tt;
        bound = (int)t;
      }
    }
  }
  memset(out, 0, sizeof *out);
  out->time_s = lat + bwt;
  out->flops = 0.0;
  out->bytes = wire;
  if (bound < 0 && lat_tier < 0) {
    /* A group of one: nothing moves. */
    out->bound = SC_BOUND_LATENCY;
    out->bound_tier = -1;
  } else if (lat >= bwt || bound < 0) {
    out->bound = SC_BOUND_LATENCY;
    out->bound_tier = lat_tier >= 0 ? lat_tier : bound;
  } else {
    out->bound = SC_BOUND_BANDWIDTH;
    out->bound_tier = bound;
  }
  out->busbw_Bps = out->time_s > 0.0 ? c->bytes / out->time_s * bus_factor : 0.0;
  out->nfeatures = SC__CF_COUNT;
  out->features[SC__CF_LOG2_BYTES] = log2(c->bytes > 1.0 ? c->bytes : 1.0);
  out->features[SC__CF_LOG2_NRANKS] = log2((double)c->nranks);
  out->features[SC__CF_TIERS_CROSSED] = (double)crossed;
  out->features[SC__CF_LATENCY_S] = lat;
  out->features[SC__CF_BANDWIDTH_S] = bwt;
  out->features[SC__CF_BOUND_TIER] = (double)out->bound_tier;
  if (out->bound_tier >= 0) {
    out->features[SC__CF_SHARING] = (double)c->tiers[out->bound_tier].sharing;
    out->features[SC__CF_OVERSUB] = c->tiers[out->bound_tier].oversubscription;
  }
}

/* nccl-tests' bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md). */
static inline double sc__bus_factor(sc_coll_kind k, uint32_t n) {
  double nn = (double)n;
  if (n <= 1) return 1.0;
  switch (k) {
  case SC_COLL_ALLREDUCE: return 2.0 * (nn - 1.0) / nn;
  case SC_COLL_ALLGATHER:
  case SC_COLL_REDUCESCATTER:
  case SC_COLL_ALLTOALL: return (nn - 1.0) / nn;
  default: return 1.0;
  }
}

/* Flat ring (ring all-reduce, all-gather, reduce-scatter) as NCCL lays it out: one ring
 * through all n members, nested by tier (members of one node consecutive), run as several
 * channels whose node-leaving edges sit on different GPUs, so that each member's NIC rail
 * carries one channel's crossing. Each member sends passes * (n-1)/n * S in all (passes =
 * 2 for all-reduce: reduce-scatter then all-gather; 1 for the others):
 *   tier 0:  the share of that on intra-node edges, (r_0-1)/r_0 of it when the ring leaves
 *            the node (all of it in a single node);
 *   tier t >= 1: the ring leaves each tier-(t-1) instance once per channel, the channels
 *            spread over the m_t members below it: passes * (n-1)/n * S / m_t.
 * Steps: passes * (n-1), of which passes * E_t have tier t as their slowest hop, E_t being
 * the ring edges whose highest crossed tier is t: (r_t - 1) * prod_{u>t} r_u. */
static inline void sc__ring_flat(const sc_coll_desc *c, double passes, double *link_bytes,
                                 double *hops) {
  double n = (double)c->nranks;
  double total = passes * (n - 1.0) / n * c->bytes;
  int top = sc__coll_top(c);
  for (uint32_t t = 0; t < c->ntiers && (int)t <= top; t++) {
    double r = (double)c->tiers[t].ranks, above = 1.0;
    for (uint32_t u = t + 1; u < c->ntiers; u++) above *= (double)c->tiers[u].ranks;
    if (t == 0) {
      link_bytes[0] = top == 0 ? total : total * (r - 1.0) / r;
    } else {
      link_bytes[t] = total / sc__coll_below(c, t);
    }
    hops[t] = passes * (r - 1.0) * above;
  }
}

/* NVLink SHARP (NCCL's NVLS inside a node, NVLSTree across nodes) as NCCL 2.20.3 prices it
 * (NVIDIA/nccl src/graph/tuning.cc and src/graph/search.cc, commit
 * b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2; docs/comm.md, "NVLink SHARP"). Whether the
 * switch can do it is the caller's business (sc_comm_estimate checks the topology's nvls
 * tier); the plugin prices the span it is given.
 *   tier 0: each member sends and receives (r_0+1)/r_0 * S through its NVSwitch ports.
 *     NCCL's NVLS graph search (ncclTopoSearchTryNvls) books one unit of a channel's speed
 *     on every GPU's link to and from the switch and two units on the channel's head GPU,
 *     "d0 == g ? 2 : 1", with one channel per GPU (minChannels = maxChannels = GPU count):
 *     the largest speed with (r_0+1) * speed <= a GPU's NVLink bandwidth gives
 *     nChannels * bwIntra = r_0/(r_0+1) of it (the graph's discrete speeds are not
 *     modelled). One step: NCCL's NVLS latency is a single hwLat, not a per-rank count.
 *   tier t >= 1 (NVLSTree, all-reduce across nodes): the inter-node tree of NCCL carries
 *     each node's reduced shard: NCCL takes bw = min(bwIntra, nNodes <= 2 ? bwInter :
 *     bwInter/2), i.e. per member k * S / m_t with k = 1 for two subtrees, 2 otherwise (the
 *     tree's traffic, as allreduce.tree, without the tree's 0.92); 2 ceil(log2 r_t) steps
 *     ("2 * log2i(nNodes) * interLat").
 * Every byte is divided by 5/6: NCCL converts NVLS and NVLSTree bus bandwidth to algorithm
 * bandwidth with "ratio *= 5.0/6.0" (tuning.cc, ncclTopoTuneModel). */
#define SC__NVLS_BW_FRACTION (5.0 / 6.0)

static inline void sc__nvls(const sc_coll_desc *c, double *link_bytes, double *hops) {
  int top = sc__coll_top(c);
  double r0 = (double)c->tiers[0].ranks;
  if (top < 0) return;
  if (r0 > 1.0) {
    link_bytes[0] = c->bytes * (r0 + 1.0) / r0 / SC__NVLS_BW_FRACTION;
    hops[0] = 1.0;
  }
  for (uint32_t t = 1; t < c->ntiers && (int)t <= top; t++) {
    double r = (double)c->tiers[t].ranks, above = 1.0;
    for (uint32_t u = t; u < c->ntiers; u++) above *= (double)c->tiers[u].ranks;
    link_bytes[t] = (above > 2.0 ? 2.0 : 1.0) * c->bytes / sc__coll_below(c, t) /
                    SC__NVLS_BW_FRACTION;
    if (r > 1.0) hops[t] = 2.0 * ceil(log2(r));
  }
}

/* The estimate of an NVLS plugin named who for the collective kinds in kinds_mask:
 * sc__nvls's traffic and steps. NCCL 2.20.3 runs NVLS all-gather and reduce-scatter inside
 * one node only ("now we only support single-node NVLS allgather and reducescatter",
 * src/enqueue.cc): with in_node set, a group spanning nodes is SC_EUNSUPPORTED, the message
 * naming what (e.g. "all-gather"). */
static inline int sc__nvls_estimate(const char *who, uint32_t kinds_mask, int in_node,
                                    const char *what, const sc_coll_desc *c, sc_estimate *out,
                                    sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc = sc__coll_check(who, kinds_mask, c, err);
  if (rc != SC_OK) return rc;
  if (in_node && sc__coll_top(c) > 0) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "%s: NVLS %s runs inside one node only "
                          "(NCCL 2.20.3)", who, what);
  }
  sc__nvls(c, link_bytes, hops);
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

#endif /* SC_COLL_COMMON_H */
