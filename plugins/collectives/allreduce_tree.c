/*
 * Collective plugin "allreduce.tree" (algorithm "tree"). NCCL's double binary tree: a chain through the members of a node (tier 0), two complementary binary trees over the nodes, each carrying half of the message, reduce up then broadcast down. Latency 2((r_0-1) a_0 + sum_{t>=1} ceil(log2 r_t) a_t): it grows with log2 of the node count where a ring grows linearly.
 * Formulas: docs/comm.md; shared arithmetic: coll_common.h.
 */
#include "coll_common.h"

#define SC__TREE_BW_FRACTION 0.92

static int sc__estimate(void *state, const sc_coll_desc *c, sc_estimate *out, sc_error *err) {
  double link_bytes[SC_MAX_TIERS] = {0}, hops[SC_MAX_TIERS] = {0};
  int rc;
  (void)state;
  rc = sc__coll_check("allreduce.tree", (1u << SC_COLL_ALLREDUCE), c, err);
  if (rc != SC_OK) return rc;
  int top = sc__coll_top(c);
  for (uint32_t t = 0; t < c->ntiers && (int)t <= top; t++) {
    double r = (double)c->tiers[t].ranks;
    if (t == 0) {
      /* Chain: an interior member receives and sends S on the way up and on the way down
       * (2S out); in a chain of two each member sends S once. */
      if (r > 1.0) {
        link_bytes[0] = (r > 2.0 ? 2.0 : 1.0) * c->bytes;
        hops[0] = 2.0 * (r - 1.0);
      }
    } else {
      /* Above the node: the members below tier t exchange, with the rest of the trees,
       * the reduced message up and the result down: 2S out of the subtree (S when only two
       * subtrees exist), spread over its m_t members links. */
      double above = 1.0;
      for (uint32_t u = t; u < c->ntiers; u++) above *= (double)c->tiers[u].ranks;
      link_bytes[t] = (above > 2.0 ? 2.0 : 1.0) * c->bytes / sc__coll_below(c, t);
      if (r > 1.0) hops[t] = 2.0 * ceil(log2(r));
    }
  }
  /* NCCL's own model reaches 0.92 of the link bandwidth with the tree (the extra
   * reduction and copy work of its chained pipeline): "if (a == NCCL_ALGO_TREE && coll ==
   * ncclFuncAllReduce) busBw = std::min(busBw*.92, ...)", NVIDIA/nccl src/graph/tuning.cc,
   * ncclTopoTuneModel. */
  for (uint32_t t = 0; t < c->ntiers; t++) link_bytes[t] /= SC__TREE_BW_FRACTION;
  sc__coll_finish(c, link_bytes, hops, sc__bus_factor(c->kind, c->nranks), out);
  return SC_OK;
}

static const sc_coll_plugin sc__desc = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "allreduce.tree", "1.0.0"),
    .algorithm = "tree",
    .kinds_mask = (1u << SC_COLL_ALLREDUCE),
    .nfeatures = SC__CF_COUNT,
    .feature_names = sc__coll_feature_names,
    .estimate = sc__estimate,
};

SC_PLUGIN_ENTRY(collectives_allreduce_tree) { return &sc__desc.hdr; }
