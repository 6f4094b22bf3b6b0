/*
 * Collective plugin "broadcast.ring" (algorithm "ring"). Pipelined ring broadcast: every member receives S and forwards it; above the node the ring leaves each node once per channel, channels spread over the members' NICs (S/m_t each); the pipeline fills in n-1 hops.
 * Formulas: docs/comm.md; shared arithmetic: coll_common.h.
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("broadcast.ring", (1u << SC_COLL_BROADCAST), c, err);
  if (rc != SC_OK) return rc;
  int top = sc__coll_top(c);
  for (uint32_t t = 0; t < c->ntiers && (int)t <= top; t++) {
    double r = (double)c->tiers[t].ranks;
    if (t == 0) {
      if (r > 1.0) link_bytes[0] = c->bytes;
    } else {
      link_bytes[t] = c->bytes / sc__coll_below(c, t);
    }
    hops[t] = r - 1.0;
  }
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "broadcast.ring", "1.0.0"),
    .algorithm = "ring",
    .kinds_mask = (1u << SC_COLL_BROADCAST),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_broadcast_ring) { return &sc__desc.hdr; }
