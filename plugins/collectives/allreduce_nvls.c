/*
 * Collective plugin "allreduce.nvls" (algorithm "nvls"). NVLink SHARP all-reduce: inside
 * a node NCCL's NVLS (the NVSwitch reduces what the GPUs load through it and multicasts
 * the result), across nodes NCCL's NVLSTree (NVLS inside each node, a tree between the
 * nodes). Each member moves (r_0+1)/r_0 * S through its NVSwitch ports, at 5/6 of the link
 * bandwidth as NCCL prices it; one NVLS step of latency (NCCL 2.20.3: 23 us over NVLink,
 * Simple protocol only).
 * Formulas: docs/comm.md ("NVLink SHARP"); shared arithmetic: coll_common.h (sc__nvls).
 */
#include "coll_common.h"

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  (void)state;
  return sc__nvls_estimate("allreduce.nvls", (1u << SC_COLL_ALLREDUCE), 0,
                           "all-reduce", c, out, err);
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "allreduce.nvls",
                            "1.0.0"),
    .algorithm = "nvls",
    .kinds_mask = (1u << SC_COLL_ALLREDUCE),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_allreduce_nvls) { return &sc__desc.hdr; }
