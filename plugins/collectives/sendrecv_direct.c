/*
 * Collective plugin "sendrecv.direct" (algorithm "direct"). Point-to-point send/receive between neighbours (pipeline stages; nccl-tests sendrecv, each rank sending S to the next): S goes out of the member through every tier up to the highest one the pair crosses, in one hop of that tier.
 * Formulas: docs/comm.md; shared arithmetic: coll_common.h.
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("sendrecv.direct", (1u << SC_COLL_SENDRECV), c, err);
  if (rc != SC_OK) return rc;
  int top = sc__coll_top(c);
  if (top >= 0) {
    for (int t = (top == 0 ? 0 : 1); t <= top; t++) link_bytes[t] = c->bytes;
    hops[top] = 1.0;
  }
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "sendrecv.direct", "1.0.0"),
    .algorithm = "direct",
    .kinds_mask = (1u << SC_COLL_SENDRECV),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_sendrecv_direct) { return &sc__desc.hdr; }
