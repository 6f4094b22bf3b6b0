/*
 * Collective plugin "reducescatter.nvls" (algorithm "nvls"). NVLink SHARP reduce-scatter
 * inside one node (NCCL's NVLS: reducing loads through the NVSwitch), priced as NCCL
 * 2.20.3's tuner prices it: the NVLS graph's bandwidth at 5/6, as for the all-reduce, one
 * NVLS step of latency.
 * Formulas: docs/comm.md ("NVLink SHARP"); shared arithmetic: coll_common.h (sc__nvls).
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("reducescatter.nvls", (1u << SC_COLL_REDUCESCATTER), c, err);
  if (rc != SC_OK) return rc;
  /* NCCL 2.20.3 runs NVLS reduce-scatter inside one node only ("now we only support
   * single-node NVLS allgather and reducescatter", src/enqueue.cc). */
  if (sc__coll_top(c) > 0) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED,
                          "reducescatter.nvls: NVLS reduce-scatter runs inside one node only "
                          "(NCCL 2.20.3)");
  }
  sc__nvls(c, link_bytes, hops);
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "reducescatter.nvls",
                            "1.0.0"),
    .algorithm = "nvls",
    .kinds_mask = (1u << SC_COLL_REDUCESCATTER),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_reducescatter_nvls) { return &sc__desc.hdr; }
