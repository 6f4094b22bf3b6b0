/*
 * Collective plugin "alltoall.direct" (algorithm "direct"). All-to-all as NCCL does it, one send and one receive per peer (nccl-tests bytes S = a member's whole send buffer, S/n to each peer): the S (n - m_t)/n bound for peers outside the member's tier-(t-1) instance cross tier t's links; each of the n-1 peers costs the latency of the tier that reaches it.
 * Formulas: docs/comm.md; shared arithmetic: coll_common.h.
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("alltoall.direct", (1u << SC_COLL_ALLTOALL), c, err);
  if (rc != SC_OK) return rc;
  int top = sc__coll_top(c);
  double n = (double)c->nranks;
  for (uint32_t t = 0; t < c->ntiers && (int)t <= top; t++) {
    double r = (double)c->tiers[t].ranks, m = sc__coll_below(c, t);
    if (t == 0) {
      link_bytes[0] = c->bytes * (r - 1.0) / n;
    } else {
      link_bytes[t] = c->bytes * (n - m) / n;
    }
    hops[t] = m * (r - 1.0); /* peers first reached at this tier */
  }
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "alltoall.direct", "1.0.0"),
    .algorithm = "direct",
    .kinds_mask = (1u << SC_COLL_ALLTOALL),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_alltoall_direct) { return &sc__desc.hdr; }
