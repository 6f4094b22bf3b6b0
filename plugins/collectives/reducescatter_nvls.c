/*
 * Collective plugin "reducescatter.nvls" (algorithm "nvls"). NVLink SHARP reduce-scatter
 * inside one node (NCCL's NVLS: reducing loads through the NVSwitch), priced as NCCL
 * 2.20.3's tuner prices it: the NVLS graph's bandwidth at 5/6, as for the all-reduce, one
 * NVLS step of latency.
 * Formulas: docs/comm.md ("NVLink SHARP"); shared arithmetic: coll_common.h (sc__nvls).
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  (void)state;
  return sc__nvls_estimate("reducescatter.nvls", (1u << SC_COLL_REDUCESCATTER), 1,
                           "reduce-scatter", c, out, err);
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
