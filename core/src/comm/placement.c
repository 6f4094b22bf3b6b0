/*
 * Rank placement: parallel groups onto the topology's tiers (docs/comm.md, "Placement").
 */
#include <math.h>
#include <string.h>

#include "comm/comm_int.h"
#include "stepcast/comm.h"
#include "stepcast/stepcast.h"

static const char *sc__group_name(sc_group_kind g) {
  switch (g) {
  case SC_GROUP_TP: return "TP";
  case SC_GROUP_CP: return "CP";
  case SC_GROUP_DP: return "DP";
  case SC_GROUP_PP: return "PP";
  default: return "?";
  }
}

static const char *sc__topo_name(const sc_topology *t) {
  if (t->path[0]) return t->path;
  if (t->name[0]) return t->name;
  return "topology";
}

int sc_comm_check_topology(const sc_topology *t, sc_error *err) {
  const char *nm;
  if (t == NULL) return sc_error_set(err, SC_EINVAL, "sc_comm_check_topology: t is NULL");
  nm = sc__topo_name(t);
  if (t->gpus_per_node < 1) {
    return sc_error_set(err, SC_ESPEC, "%s: gpus_per_node must be >= 1", nm);
  }
  if (t->ntiers < 1 || t->ntiers > SC_MAX_TIERS) {
    return sc_error_set(err, SC_ESPEC, "%s: must have 1..%d tiers (has %u)", nm, SC_MAX_TIERS,
                        (unsigned)t->ntiers);
  }
  for (uint32_t i = 0; i < t->ntiers; i++) {
    const sc_tier *tr = &t->tiers[i];
    const char *tn = tr->name[0] ? tr->name : "?";
    if (i == 0 && tr->scope_gpus != t->gpus_per_node &&
        !(t->gpus_per_node == 1 && (tr->scope_gpus == 0 || t->ntiers == 1 ||
                                    tr->scope_gpus < t->tiers[1].scope_gpus))) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier 0 ('%s') must join one node: scope_gpus %u != "
                          "gpus_per_node %u",
                          nm, tn, (unsigned)tr->scope_gpus, (unsigned)t->gpus_per_node);
    }
    if (i == 0 && tr->scope_gpus == 0 && t->ntiers > 1) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier 0 ('%s'): scope_gpus 0 (whole system) is allowed on the "
                          "last tier only", nm, tn);
    }
    if (i > 0) {
      uint32_t below = t->tiers[i - 1].scope_gpus;
      if (tr->scope_gpus == 0) {
        if (i + 1 != t->ntiers) {
          return sc_error_set(err, SC_ESPEC,
                              "%s: tier %u ('%s'): scope_gpus 0 (whole system) is allowed "
                              "on the last tier only",
                              nm, (unsigned)i, tn);
        }
      } else if (below == 0 || tr->scope_gpus <= below || tr->scope_gpus % below != 0) {
        return sc_error_set(err, SC_ESPEC,
                            "%s: tier %u ('%s'): scope_gpus %u must be a larger multiple of "
                            "tier %u's %u",
                            nm, (unsigned)i, tn, (unsigned)tr->scope_gpus, (unsigned)(i - 1),
                            (unsigned)below);
      }
    }
    if (!(tr->bw_Bps > 0.0) || !isfinite(tr->bw_Bps)) {
      return sc_error_set(err, SC_ESPEC, "%s: tier %u ('%s'): bw_Bps must be > 0 (got %g)",
                          nm, (unsigned)i, tn, tr->bw_Bps);
    }
    if (!(tr->latency_s >= 0.0) || !isfinite(tr->latency_s)) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier %u ('%s'): latency_s must be >= 0 (got %g)", nm,
                          (unsigned)i, tn, tr->latency_s);
    }
    if (!(tr->oversubscription >= 1.0) || !isfinite(tr->oversubscription)) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier %u ('%s'): oversubscription must be >= 1 (got %g)", nm,
                          (unsigned)i, tn, tr->oversubscription);
    }
    if (!(tr->efficiency >= 0.0 && tr->efficiency <= 1.0)) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier %u ('%s'): efficiency must be in (0,1] (got %g)", nm,
                          (unsigned)i, tn, tr->efficiency);
    }
    if (tr->nvls != 0 && (i > 0 || t->gpus_per_node <= 1)) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: tier %u ('%s'): nvls (NVLink SHARP) is allowed on tier 0 of a "
                          "topology with several GPUs per node only", nm, (unsigned)i, tn);
    }
  }
  return SC_OK;
}

int sc_comm_check_gpus(const sc_topology *t, uint32_t gpus, sc_error *err) {
  const char *nm;
  uint32_t last;
  if (t == NULL) return sc_error_set(err, SC_EINVAL, "sc_comm_check_gpus: t is NULL");
  nm = t->name[0] ? t->name : sc__topo_name(t);
  if (gpus < 1) return sc_error_set(err, SC_ECONFIG, "%s: GPU count must be >= 1", nm);
  if (t->max_gpus != 0 && gpus > t->max_gpus) {
    return sc_error_set(err, SC_ECONFIG, "%s: %u GPUs exceed the system's %u", nm,
                        (unsigned)gpus, (unsigned)t->max_gpus);
  }
  last = t->ntiers >= 1 && t->ntiers <= SC_MAX_TIERS ? t->tiers[t->ntiers - 1].scope_gpus : 0;
  if (last != 0 && gpus > last) {
    return sc_error_set(err, SC_ECONFIG,
                        "%s: %u GPUs exceed the %u its outermost tier ('%s') joins", nm,
                        (unsigned)gpus, (unsigned)last, t->tiers[t->ntiers - 1].name);
  }
  if (gpus > t->gpus_per_node && gpus % t->gpus_per_node != 0) {
    return sc_error_set(err, SC_ECONFIG,
                        "%s: %u GPUs is not a multiple of the %u GPUs per node", nm,
                        (unsigned)gpus, (unsigned)t->gpus_per_node);
  }
  return SC_OK;
}

static uint32_t sc__inst(const sc_topology *t, uint32_t i, uint64_t gpu) {
  uint32_t s = t->tiers[i].scope_gpus;
  return s ? (uint32_t)(gpu / s) : 0u;
}

int sc_comm_group(const sc_topology *t, const sc_parallel *p, sc_group_kind g,
                  sc_coll_desc *tmpl, sc_error *err) {
  return sc__comm_group_part(t, p, g, 1, 0, NULL, tmpl, err);
}

int sc__comm_group_part(const sc_topology *t, const sc_parallel *p, sc_group_kind g,
                        uint32_t every, uint32_t d, const char *name, sc_coll_desc *tmpl,
                        sc_error *err) {
  uint32_t deg[SC_GROUP_COUNT];
  int seen[SC_GROUP_COUNT] = {0};
  uint64_t total = 1, stride = 1;
  int rc;
  if (t == NULL || p == NULL || tmpl == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_group: %s is NULL",
                        t == NULL ? "t" : p == NULL ? "p" : "tmpl");
  }
  if ((unsigned)g >= SC_GROUP_COUNT) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_group: group kind %d is unknown", (int)g);
  }
  rc = sc_comm_check_topology(t, err);
  if (rc != SC_OK) return rc;
  deg[SC_GROUP_TP] = p->tp;
  deg[SC_GROUP_CP] = p->cp;
  deg[SC_GROUP_DP] = p->dp;
  deg[SC_GROUP_PP] = p->pp;
  for (int k = 0; k < SC_GROUP_COUNT; k++) {
    if (deg[k] < 1) {
      return sc_error_set(err, SC_EINVAL, "parallel: %s degree must be >= 1",
                          sc__group_name((sc_group_kind)k));
    }
    total *= deg[k];
    if ((unsigned)p->order[k] >= SC_GROUP_COUNT || seen[p->order[k]]) {
      return sc_error_set(err, SC_EINVAL,
                          "parallel: order must name TP, CP, DP and PP once each");
    }
    seen[p->order[k]] = 1;
  }
  if (total > UINT32_MAX) {
    return sc_error_set(err, SC_ECONFIG, "parallel: tp*cp*dp*pp = %llu GPUs is too many",
                        (unsigned long long)total);
  }
  rc = sc_comm_check_gpus(t, (uint32_t)total, err);
  if (rc != SC_OK) {
    char why[SC_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", err ? err->msg : "");
    return sc_error_set(err, rc, "parallel tp=%u cp=%u dp=%u pp=%u (%llu GPUs): %s",
                        (unsigned)p->tp, (unsigned)p->cp, (unsigned)p->dp, (unsigned)p->pp,
                        (unsigned long long)total, why);
  }
  for (int k = 0; k < SC_GROUP_COUNT && p->order[k] != g; k++) stride *= deg[p->order[k]];
  if (d == 0) d = deg[g];
  if (name == NULL) name = sc__group_name(g);
  if (every < 1 || d < 1 || (uint64_t)every * d > deg[g])
    return sc_error_set(err, SC_EINVAL, "%s: %u ranks, every %u-th, of a group of %u", name,
                        (unsigned)d, (unsigned)every, (unsigned)deg[g]);
  stride *= every;
  uint32_t per[SC_MAX_TIERS];
  int top = -1;

  /* Members are ranks k * stride (k < d), on GPUs of the same index. Tier instances are
   * monotone in the GPU index, so members of one instance form one run. When every run of a
   * tier has the same length, that length is per[i]. When they differ (35 pipeline stages
   * over 20-node scalable units: runs of 20 and 15), the group is treated at that tier as if
   * its members shared no instance beyond the tier below (per[i] = per[i-1]): its traffic is
   * priced on the next tier up, exact in bandwidth where the two tiers give a GPU the same
   * rate (a full fat tree), pessimistic otherwise. Runs of an evenly spread tier above are
   * sums of the runs below, so every fan-out per[i] / per[i-1] stays whole. */
  for (uint32_t i = 0; i < t->ntiers; i++) {
    uint32_t run = 0, len = 0, cur = 0;
    int uneven = 0;
    for (uint32_t k = 0; k < d; k++) {
      uint32_t in = sc__inst(t, i, (uint64_t)k * stride);
      if (k == 0 || in != cur) {
        if (k != 0) {
          if (len != 0 && run != len) uneven = 1;
          len = run;
        }
        cur = in;
        run = 0;
      }
      run++;
    }
    if (len != 0 && run != len) uneven = 1;
    per[i] = uneven ? (i == 0 ? 1u : per[i - 1]) : run; /* members under one instance */
  }
  if (per[t->ntiers - 1] != d) {
    return sc_error_set(err, SC_ECONFIG,
                        "%s group of %u spans beyond the outermost tier ('%s') of %s",
                        name, (unsigned)d, t->tiers[t->ntiers - 1].name,
                        sc__topo_name(t));
  }
  tmpl->nranks = d;
  tmpl->ntiers = t->ntiers;
  for (uint32_t i = 0; i < SC_MAX_TIERS; i++) memset(&tmpl->tiers[i], 0, sizeof tmpl->tiers[i]);
  for (uint32_t i = 0; i < t->ntiers; i++) {
    sc_tier_span *s = &tmpl->tiers[i];
    s->ranks = i == 0 ? per[0] : per[i] / per[i - 1];
    s->bw_Bps = t->tiers[i].bw_Bps;
    s->latency_s = t->tiers[i].latency_s;
    s->oversubscription = t->tiers[i].oversubscription;
    s->sharing = 1;
    if (s->ranks > 1) top = (int)i;
  }
  for (int i = 1; i <= top; i++) {
    uint64_t below = t->tiers[i - 1].scope_gpus;
    uint64_t m = per[i - 1];
    if (below > total) below = total;
    tmpl->tiers[i].sharing = below / m >= 1 ? (uint32_t)(below / m) : 1u;
  }
  return SC_OK;
}

int sc_comm_group_flat(const sc_topology *t, uint32_t gpus, sc_coll_desc *tmpl,
                       sc_error *err) {
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.dp = gpus;
  return sc_comm_group(t, &p, SC_GROUP_DP, tmpl, err);
}

int sc_comm_resolve(const sc_topology *t, const sc_coll_desc *in, sc_coll_desc *out,
                    sc_error *err) {
  sc_coll_desc r;
  uint64_t prod = 1;
  double m = 1.0;
  if (t == NULL || in == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_resolve: an argument is NULL");
  }
  if (in->ntiers != t->ntiers || in->ntiers < 1 || in->ntiers > SC_MAX_TIERS) {
    return sc_error_set(err, SC_EINVAL,
                        "collective spans %u tiers but topology %s has %u", (unsigned)in->ntiers,
                        sc__topo_name(t), (unsigned)t->ntiers);
  }
  for (uint32_t i = 0; i < in->ntiers; i++) {
    if (in->tiers[i].ranks < 1) {
      return sc_error_set(err, SC_EINVAL, "collective: tiers[%u].ranks must be >= 1",
                          (unsigned)i);
    }
    prod *= in->tiers[i].ranks;
    if (prod > UINT32_MAX) break;
  }
  if (prod != in->nranks) {
    return sc_error_set(err, SC_EINVAL,
                        "collective: nranks %u is not the product of the tiers' fan-outs",
                        (unsigned)in->nranks);
  }
  r = *in;
  for (uint32_t i = 0; i < in->ntiers; i++) {
    const sc_tier *tr = &t->tiers[i];
    sc_tier_span *s = &r.tiers[i];
    double eff = tr->efficiency > 0.0 ? tr->efficiency : 1.0;
    if (in->kind == SC_COLL_SENDRECV && tr->p2p_efficiency > 0.0) eff = tr->p2p_efficiency;
    double raw = tr->bw_Bps;
    /* a node's mesh without a switch: a group on k of its GPUs reaches k - 1 peers */
    if (i == 0 && tr->pair_bw_Bps > 0.0 && in->tiers[0].ranks >= 2) {
      double k1 = (double)(in->tiers[0].ranks - 1) * tr->pair_bw_Bps;
      if (k1 < raw) raw = k1;
    }
    double bw = raw * eff;
    if (i == 0) {
      s->bw_Bps = bw;
      s->oversubscription = tr->oversubscription;
    } else {
      double B = (double)t->tiers[i - 1].scope_gpus;
      double share = (double)(s->sharing >= 1 ? s->sharing : 1u);
      double a = m * share;
      double nics = t->nics_per_node > 0 ? (double)t->nics_per_node : t->gpus_per_node;
      double per_nic = (double)t->gpus_per_node / nics;
      double cap = bw * (per_nic > 1.0 ? per_nic : 1.0);
      double got, f;
      if (a > B) a = B;
      if (a < 1.0) a = 1.0;
      got = B * bw / a;
      if (got > cap) got = cap;
      f = got * tr->oversubscription * a / (B * bw);
      s->bw_Bps = got;
      s->oversubscription = f > 1.0 ? f : 1.0;
    }
    s->latency_s = tr->latency_s;
    m *= (double)in->tiers[i].ranks;
  }
  *out = r;
  return SC_OK;
}
