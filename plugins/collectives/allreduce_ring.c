/*
 * Collective plugin "allreduce.ring" (algorithm "ring"). Ring all-reduce as NCCL runs it: one flat ring
 * through all n members (reduce-scatter then all-gather, 2(n-1) steps), its channels laid on
 * the NIC rails; per member 2(n-1)/n * S goes out in all.
 * Formulas: docs/comm.md; shared arithmetic: coll_common.h.
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("allreduce.ring", (1u << SC_COLL_ALLREDUCE), c, err);
  if (rc != SC_OK) return rc;
  sc__ring_flat(c, 2.0, link_bytes, hops);
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "allreduce.ring", "1.0.0"),
    .algorithm = "ring",
    .kinds_mask = (1u << SC_COLL_ALLREDUCE),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_allreduce_ring) { return &sc__desc.hdr; }
