/*
 * Collective plugin "allgather.nvls" (algorithm "nvls"). NVLink SHARP all-gather inside
 * one node (NCCL's NVLS: multicast stores through the NVSwitch), priced as NCCL 2.20.3's
 * tuner prices it: the NVLS graph's bandwidth at 5/6, as for the all-reduce, one NVLS step
 * of latency.
 * Formulas: docs/comm.md ("NVLink SHARP"); shared arithmetic: coll_common.h (sc__nvls).
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  (void)state;
  return sc__nvls_estimate("allgather.nvls", (1u << SC_COLL_ALLGATHER), 1,
                           "all-gather", c, out, err);
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "allgather.nvls",
                            "1.0.0"),
    .algorithm = "nvls",
    .kinds_mask = (1u << SC_COLL_ALLGATHER),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_allgather_nvls) { return &sc__desc.hdr; }
