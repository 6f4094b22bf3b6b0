/*
 * Example stepcast plugin: Rabenseifner's all-reduce (a reduce-scatter by recursive vector
 * halving, then an all-gather by recursive doubling), the algorithm MPICH and Open MPI use
 * for large messages, as a collective-algorithm plugin.
 *
 * Cost model: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
 * Communication Operations in MPICH", Int. J. High Performance Computing Applications
 * 19(1):49-66, 2005, section 4.4: on p = 2^L ranks of one flat network,
 *     T = 2 lg(p) alpha + 2 (p-1)/p n beta   (+ (p-1)/p n gamma for the reduction,
 *                                             which this plugin leaves to the residual)
 * Step k (k = 1..L) of the reduce-scatter exchanges n / 2^k bytes with the partner at rank
 * distance p / 2^k; the all-gather runs the same steps in reverse. stepcast describes the
 * group tier by tier (innermost first, innermost ranks numbered fastest), so the partner at
 * distance 2^j is reached over the tier that owns bit j of the rank, and each step pays that
 * tier's latency and per-GPU bandwidth. Every rank sends at once, so a tier's bandwidth is
 * divided by its oversubscription and by the number of groups sharing it. For one flat
 * tier this is exactly the formula above.
 *
 * Small messages: every step pays its latency whatever the size, and the bandwidth term
 * continues the formula below p bytes (fractions of a byte per step), as the built-in ring
 * does; at 0 bytes the answer is the latency term alone, 2 lg(p) alpha. The runtime asks
 * exactly that (a 0-byte message) to split an algorithm's time into latency and bandwidth,
 * so a plugin must answer it.
 *
 * Limits: every tier's fan-out must be a power of two (the non-power-of-two variant adds
 * a pre- and post-step that this model does not describe); other groups are declined with
 * SC_EUNSUPPORTED, and with the algorithm "auto" the runtime then chooses among the others.
 *
 * Build (against an installed stepcast):
 *   cc -O2 -shared -fPIC -fvisibility=hidden $(pkg-config --cflags stepcast-plugin) \
 *      -o allreduce-rabenseifner.so allreduce_rabenseifner.c
 * or with CMake: see CMakeLists.txt beside this file.
 */
#include <stdint.h>
#include <string.h>

#include "stepcast/plugin.h"

static const char *const rab_features[] = {"latency_s", "transfer_s", "log2_ranks"};

static int rab_estimate(void *state, const sc_coll_desc *coll, sc_estimate *out,
                        sc_error *err) {
  /* owner[j] = the tier that owns rank bit j. */
  uint32_t owner[64];
  double lat_s = 0, xfer_s = 0, tier_s[SC_MAX_TIERS] = {0};
  uint32_t L = 0, product = 1;
  (void)state;
  if (coll->kind != SC_COLL_ALLREDUCE) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "allreduce.rabenseifner: only all-reduce");
  }
  if (coll->ntiers == 0 || coll->ntiers > SC_MAX_TIERS) {
    return sc_plugin_fail(err, SC_EINVAL, "allreduce.rabenseifner: ntiers %u out of 1..%d",
                          (unsigned)coll->ntiers, SC_MAX_TIERS);
  }
  for (uint32_t t = 0; t < coll->ntiers; t++) {
    const sc_tier_span *s = &coll->tiers[t];
    uint32_t r = s->ranks;
    if (r == 0 || (r & (r - 1)) != 0) {
      return sc_plugin_fail(err, SC_EUNSUPPORTED,
                            "allreduce.rabenseifner: tiers[%u].ranks = %u is not a power of "
                            "two",
                            (unsigned)t, (unsigned)r);
    }
    if (r > 1 && (!(s->bw_Bps > 0) || !(s->latency_s >= 0) || !(s->oversubscription >= 1) ||
                  s->sharing < 1)) {
      return sc_plugin_fail(err, SC_EINVAL,
                            "allreduce.rabenseifner: tiers[%u] needs bw_Bps > 0, latency_s "
                            ">= 0, oversubscription >= 1, sharing >= 1",
                            (unsigned)t);
    }
    for (; r > 1; r >>= 1) {
      if (L >= 63) {
        return sc_plugin_fail(err, SC_ERANGE, "allreduce.rabenseifner: group too large");
      }
      owner[L++] = t;
    }
    product *= s->ranks;
  }
  if (product != coll->nranks) {
    return sc_plugin_fail(err, SC_EINVAL,
                          "allreduce.rabenseifner: nranks %u != product of tier ranks %u",
                          (unsigned)coll->nranks, (unsigned)product);
  }
  if (!(coll->bytes >= 0)) {
    return sc_plugin_fail(err, SC_EINVAL, "allreduce.rabenseifner: bytes must be >= 0");
  }
  memset(out, 0, sizeof *out);
  out->bound_tier = -1;
  if (L == 0) { /* a group of one: nothing to do */
    out->bound = SC_BOUND_LATENCY;
    out->nfeatures = 3;
    return SC_OK;
  }
  /* Reduce-scatter step k: n / 2^k bytes at distance 2^(L-k); the all-gather mirrors it. */
  for (uint32_t k = 1; k <= L; k++) {
    const sc_tier_span *s = &coll->tiers[owner[L - k]];
    double bw = s->bw_Bps / (s->oversubscription * (double)s->sharing);
    double chunk = coll->bytes / (double)(1ull << k);
    lat_s += 2.0 * s->latency_s;
    xfer_s += 2.0 * chunk / bw;
    tier_s[owner[L - k]] += 2.0 * (s->latency_s + chunk / bw);
  }
  out->time_s = lat_s + xfer_s;
  out->bytes = 2.0 * (double)(coll->nranks - 1) / (double)coll->nranks * coll->bytes;
  out->bound = xfer_s >= lat_s ? SC_BOUND_BANDWIDTH : SC_BOUND_LATENCY;
  for (uint32_t t = 0; t < coll->ntiers; t++) {
    if (coll->tiers[t].ranks > 1 &&
        (out->bound_tier < 0 || tier_s[t] > tier_s[out->bound_tier])) {
      out->bound_tier = (int32_t)t;
    }
  }
  /* nccl-tests: algbw = bytes / time, busbw = algbw * 2 (p-1) / p. */
  out->busbw_Bps = out->time_s > 0 ? out->bytes / out->time_s : 0;
  out->nfeatures = 3;
  out->features[0] = lat_s;
  out->features[1] = xfer_s;
  out->features[2] = (double)L;
  return SC_OK;
}

static const sc_coll_plugin rab_plugin = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE,
                            "allreduce.rabenseifner", "1.0.0"),
    .algorithm = "rabenseifner",
    .kinds_mask = 1u << SC_COLL_ALLREDUCE,
    .nfeatures = 3,
    .feature_names = rab_features,
    .estimate = rab_estimate,
};

SC_PLUGIN_ENTRY(allreduce_rabenseifner) { return &rab_plugin.hdr; }
