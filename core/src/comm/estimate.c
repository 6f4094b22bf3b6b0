/*
 * Collective estimates over a topology: hierarchical composition, NCCL's protocols and
 * NCCL's algorithm/protocol choice (docs/comm.md, "Protocols and algorithm choice" and
 * "Hierarchical composition"; constants of NVIDIA/nccl src/graph/tuning.cc, NCCL 2.20.3).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm_int.h"
#include "stepcast/comm.h"
#include "stepcast/stepcast.h"

#define SC__COMM_MAX_CANDIDATES 32

static const char *const sc__kind_names[SC_COLL_COUNT] = {
    "allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"};
static const char *const sc__kind_stems[SC_COLL_COUNT] = {
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"};

const char *sc_comm_kind_name(sc_coll_kind kind) {
  return (unsigned)kind < SC_COLL_COUNT ? sc__kind_names[kind] : NULL;
}

int sc_comm_kind_parse(const char *name, sc_coll_kind *out) {
  if (name == NULL || out == NULL) return SC_EINVAL;
  for (int k = 0; k < SC_COLL_COUNT; k++) {
    if (strcmp(name, sc__kind_names[k]) == 0 || strcmp(name, sc__kind_stems[k]) == 0) {
      *out = (sc_coll_kind)k;
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

double sc_comm_bus_factor(sc_coll_kind kind, uint32_t nranks) {
  double n = (double)nranks;
  if (nranks <= 1) return 1.0;
  switch (kind) {
  case SC_COLL_ALLREDUCE: return 2.0 * (n - 1.0) / n;
  case SC_COLL_ALLGATHER:
  case SC_COLL_REDUCESCATTER:
  case SC_COLL_ALLTOALL: return (n - 1.0) / n;
  default: return 1.0;
  }
}

/* One plugin call, through the registry's memo. */
static int sc__call(sc_registry *reg, const sc_coll_plugin *p, const sc_coll_desc *c,
                    sc_estimate *out, sc_error *err) {
  return sc_registry_estimate_coll(reg, p, c, out, err);
}

/* Latency term (time at 0 bytes) and full time of c with plugin p. */
static int sc__phase(sc_registry *reg, const sc_coll_plugin *p, const sc_coll_desc *c,
                     double *lat_s, sc_estimate *full, sc_error *err) {
  sc_coll_desc z = *c;
  sc_estimate e0;
  int rc = sc__call(reg, p, c, full, err);
  if (rc != SC_OK) return rc;
  z.bytes = 0.0;
  rc = sc__call(reg, p, &z, &e0, err);
  if (rc != SC_OK) return rc;
  *lat_s = e0.time_s;
  return SC_OK;
}

/* Algorithms whose plugin answers a multi-node all-reduce whole rather than as the
 * inter-node stage of the hierarchical composition: NCCL's flat ring, and NVLink SHARP
 * (NVLSTree is its own intra/inter-node pipeline, priced by its plugin). */
static int sc__whole_algo(const sc_coll_plugin *p) {
  return strcmp(p->algorithm, "ring") == 0 || strcmp(p->algorithm, "nvls") == 0;
}

/* The fastest plugin of reg for kind on c (whole, not composed). NVLink SHARP plugins are
 * left out: the composition prices NCCL's tree, whose intra-node phases are ring-like, and
 * the plugins would not know whether the switch can reduce. */
static int sc__best_whole(sc_registry *reg, sc_coll_kind kind, const sc_coll_desc *c,
                          const sc_coll_plugin **best, sc_error *err) {
  const sc_coll_plugin *cand[SC__COMM_MAX_CANDIDATES];
  size_t n = sc_registry_colls(reg, kind, cand, SC__COMM_MAX_CANDIDATES);
  double best_t = INFINITY;
  sc_coll_desc k = *c;
  k.kind = kind;
  *best = NULL;
  for (size_t i = 0; i < n; i++) {
    sc_estimate e;
    int rc;
    if (strcmp(cand[i]->algorithm, "nvls") == 0) continue;
    rc = sc__call(reg, cand[i], &k, &e, err);
    if (rc == SC_EUNSUPPORTED) continue; /* declines this group: the others choose */
    if (rc != SC_OK) return rc;
    if (e.time_s < best_t) {
      best_t = e.time_s;
      *best = cand[i];
    }
  }
  if (*best == NULL) {
    return sc_error_set(err, SC_ENOTFOUND, "no collective plugin serves %s",
                        sc_comm_kind_name(kind));
  }
  return SC_OK;
}

/* Hierarchical all-reduce of resolved span r with inter-node algorithm p. */
static int sc__compose_allreduce(sc_registry *reg, const sc_coll_desc *r,
                                 const sc_coll_plugin *p, sc_estimate *out, sc_error *err) {
  sc_coll_desc intra = *r, inter = *r;
  const sc_coll_plugin *rs, *ag;
  sc_estimate e_rs, e_ar, e_ag;
  double l_rs, l_ar, l_ag, b_rs, b_ar, b_ag, lat, bwt;
  int rc;
  uint32_t r0 = r->tiers[0].ranks;

  /* Inside the node: the tier-0 span alone (outer tiers not crossed). */
  for (uint32_t i = 1; i < intra.ntiers; i++) intra.tiers[i].ranks = 1;
  intra.nranks = r0;
  /* Across nodes: the shard S / r0 over the outer tiers, one rail per GPU (tier 0 kept
   * with fan-out 1, so that tier indices stay the topology's). */
  inter.tiers[0].ranks = 1;
  inter.nranks = r->nranks / r0;
  inter.bytes = r->bytes / r0;
  inter.kind = SC_COLL_ALLREDUCE;

  intra.kind = SC_COLL_REDUCESCATTER;
  rc = sc__best_whole(reg, SC_COLL_REDUCESCATTER, &intra, &rs, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, rs, &intra, &l_rs, &e_rs, err);
  if (rc != SC_OK) return rc;
  intra.kind = SC_COLL_ALLGATHER;
  rc = sc__best_whole(reg, SC_COLL_ALLGATHER, &intra, &ag, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, ag, &intra, &l_ag, &e_ag, err);
  if (rc != SC_OK) return rc;
  rc = sc__phase(reg, p, &inter, &l_ar, &e_ar, err);
  if (rc != SC_OK) return rc;

  b_rs = e_rs.time_s - l_rs;
  b_ar = e_ar.time_s - l_ar;
  b_ag = e_ag.time_s - l_ag;
  lat = l_rs + l_ar + l_ag;
  bwt = b_ar;
  memset(out, 0, sizeof *out);
  out->bound_tier = e_ar.bound_tier;
  if (b_rs > bwt) {
    bwt = b_rs;
    out->bound_tier = 0;
  }
  if (b_ag > bwt) {
    bwt = b_ag;
    out->bound_tier = 0;
  }
  out->time_s = lat + bwt;
  out->bytes = e_rs.bytes + e_ar.bytes + e_ag.bytes;
  if (lat >= bwt) {
    out->bound = SC_BOUND_LATENCY;
    /* The phase with the largest latency term names the tier. */
    if (l_ar >= l_rs + l_ag) {
      out->bound_tier = e_ar.bound_tier >= 0 ? e_ar.bound_tier : 0;
    } else {
      out->bound_tier = 0;
    }
  } else {
    out->bound = SC_BOUND_BANDWIDTH;
  }
  out->busbw_Bps = out->time_s > 0.0
                       ? r->bytes / out->time_s * sc_comm_bus_factor(r->kind, r->nranks)
                       : 0.0;
  /* Features: those the chosen algorithm reported for its inter-node phase. */
  out->nfeatures = e_ar.nfeatures <= SC_MAX_FEATURES ? e_ar.nfeatures : SC_MAX_FEATURES;
  memcpy(out->features, e_ar.features, sizeof(double) * out->nfeatures);
  return SC_OK;
}

/* Highest tier of r with fan-out > 1 (>= 1: the group spans nodes), -1 for a group of one. */
static int sc__top(const sc_coll_desc *r) {
  int top = -1;
  for (uint32_t i = 0; i < r->ntiers; i++) {
    if (r->tiers[i].ranks > 1) top = (int)i;
  }
  return top;
}

/* One candidate: composed for a multi-node all-reduce with several members per node and
 * a hierarchical algorithm, whole otherwise. */
static int sc__one(sc_registry *reg, const sc_coll_desc *r, const sc_coll_plugin *p,
                   sc_estimate *out, sc_error *err) {
  int top = sc__top(r);
  /* NCCL's ring is one flat ring over every rank (its channels on the NIC rails) and
   * NVLSTree its own pipeline: their plugins answer them whole. Any other all-reduce
   * algorithm (tree, third-party ones) is the inter-node stage of the hierarchical
   * composition. */
  if (r->kind == SC_COLL_ALLREDUCE && top >= 1 && r->tiers[0].ranks > 1 && !sc__whole_algo(p)) {
    return sc__compose_allreduce(reg, r, p, out, err);
  }
  return sc__call(reg, p, r, out, err);
}

/* ------------------------------------------------------------------------- */
/* NCCL's tuner (docs/comm.md, "Protocols and algorithm choice").             */
/* Constants of NVIDIA/nccl src/graph/tuning.cc, NCCL 2.20.3 (commit            */
/* b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2), ncclTopoTuneModel and             */
/* ncclTopoGetAlgoTime. Index order of the protocols: LL, LL128, Simple.        */

enum { SC__P_LL = 0, SC__P_LL128, SC__P_SIMPLE, SC__P_COUNT };
/* NVLS: NVLink SHARP inside one node; NVLS_TREE: NVLS in each node, a tree between nodes
 * (the "nvls" plugins; which one follows from the span). */
enum { SC__A_TREE = 0, SC__A_RING, SC__A_NVLS, SC__A_NVLS_TREE, SC__A_COUNT };
enum { SC__HW_NVLINK = 0, SC__HW_NET, SC__HW_COUNT };

static const char *const sc__proto_names[SC__P_COUNT] = {"LL", "LL128", "Simple"};

/* baseLat[algo][proto] in us: Tree {6.8, 14.0, 0}, Ring {6.6, 14.0, 8.4}, NVLS {0, 0, 0},
 * NVLS Tree {0, 0, 0}. */
static const double sc__base_lat_us[SC__A_COUNT][SC__P_COUNT] = {
    {6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
/* hwLat[hw][algo][proto] in us, per step: NVLINK Tree {.6, 1.25, 28}, Ring {.6, 1.9, 3.4},
 * NVLS {0, 0, 23}, NVLSTree {0, 0, 23}; NET Tree {5.0, 8.5, 28}, Ring {2.7, 4.0, 14.0},
 * NVLS {0, 0, 18}, NVLSTree {0, 0, 14}. NCCL prices NVLS at "latencies = intraLat" (23 us
 * in a node) and NVLSTree at "intraLat + 2 * log2i(nNodes) * interLat" (23 + 2 log2(nodes)
 * x 14 us): the plugins count one NVLink step and 2 ceil(log2 r_t) network steps. */
static const double sc__hw_lat_us[SC__HW_COUNT][SC__A_COUNT][SC__P_COUNT] = {
    {{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}, {0.0, 0.0, 23.0}, {0.0, 0.0, 23.0}},
    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}, {0.0, 0.0, 18.0}, {0.0, 0.0, 14.0}}};
/* treeCorrectionFactor[proto][log2(bytes >> 6)], powers of two from 64 B to 256 MiB. */
static const double sc__tree_corr[SC__P_COUNT][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
/* perChMaxTreeBws[arch][N1, N2, N4+] in GB/s: Ampere {24.0, 23.6, 17.8},
 * Hopper {38.7, 41.4, 36.0}. */
static const double sc__tree_ch_max_GBps[2][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};

/* NVLS pipeline fill (docs/comm.md, "NVLink SHARP", "Pipeline fill").
 *
 * NCCL 2.20's single-node NVLS all-reduce kernel (src/device/all_reduce.h,
 * RunWorkElement<ncclFuncAllReduce, T, RedOp, NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>, branch
 * "if (args->oneNode)") splits each channel's threads into three warp groups joined by the
 * NVLS FIFOs: "// Scatter" (prims.scatter: the input into the local unicast buffers of the
 * nHeads heads), "// Reduce, broadcast through NVLS" (prims.directRecvDirectSend with
 * ProtoSimple<1, 1, COLL_UNROLL, 1, 1>: multimem.ld_reduce then multimem.st of the head's
 * chunk) and "// Gather" (the multicast result into recvbuff). Each group walks the
 * channel's share in iterations of "const ssize_t loopCount = nvls->nHeads * chunkSize;"
 * elements, so one iteration over all channels moves U = nChannels * nHeads * chunkSize
 * bytes through three stages in sequence: a pipeline of depth 3. Its first unit passes
 * scatter and reduce before the first gather starts, its last unit leaves reduce one stage
 * time before the end; with every stage paced at the pipeline's rate (T_bw for S bytes),
 * that is (3 - 1) stage times of one unit:
 *   fill = 2 * T_bw * min(U, S) / S
 * (one iteration, S <= U, runs the three stages back to back: 3 T_bw in all).
 *
 * NCCL's constants:
 *   nChannels = 16: NCCL_PARAM(NvlsChannels, "NVLS_NCHANNELS", 16) and "comm->nvlsChannels =
 *     std::max(comm->config.minCTAs, std::min(comm->config.maxCTAs,
 *     (int)ncclParamNvlsChannels()));" (src/transport/nvls.cc, ncclNvlsInit, commit
 *     b6475625); getChannnelThreadInfo keeps them at every size ("// NVLS should not need
 *     more than 16 channels to get peak BW. nc = comm->nvlsChannels;", src/enqueue.cc).
 *   nHeads = the group's GPUs in the node: the NVLS graph has one channel per GPU ("// NVLS
 *     search must have ngpus heads at most." ... "graph->maxChannels =
 *     system->nodes[GPU].count;", src/graph/search.cc, ncclTopoCompute, commit b6475625),
 *     and connectNvls sets "channel->nvls.nHeads = nHeads;" from that graph.
 *   chunkSize: src/enqueue.cc, computeCollChunkInfo (NCCL 2.20): "int stepSize =
 *     collInfo->comm->buffSizes[collInfo->protocol] / NCCL_STEPS;" = 4 MiB / 8 = 512 KiB
 *     ("#define DEFAULT_BUFFSIZE (1 << 22)", src/init.cc; "#define NCCL_STEPS 8",
 *     src/include/device.h), chunkSteps 1 outside the ring, then for NCCL_ALGO_NVLS:
 *     "int maxChunkSize = 131072;" ... "if (chunkSize > maxChunkSize) chunkSize =
 *     maxChunkSize;" "uint64_t concurrentOps = nChannels *
 *     collInfo->comm->channels[0].nvls.nHeads;"
 *     "if ((nBytes < (64 * (concurrentOps * chunkSize))) && (chunkSize > 65536))
 *     chunkSize = 65536;" "if ((nBytes < (8 * (concurrentOps * chunkSize))) && (chunkSize >
 *     32768)) chunkSize = 32768;" "if ((nBytes < (2 * (concurrentOps * chunkSize))) &&
 *     (chunkSize > 16384)) chunkSize = 16384;"
 *     (the 32 KiB cap for several nodes applies to NVLS over CollNet, not modelled). */
#define SC__NVLS_NCHANNELS 16.0
#define SC__NVLS_STEP_BYTES (4194304.0 / 8.0)
#define SC__NVLS_MAX_CHUNK_BYTES 131072.0
#define SC__NVLS_STAGES 3.0

double sc__comm_nvls_chunk_bytes(double bytes, uint32_t heads) {
  double chunk = SC__NVLS_STEP_BYTES, ops = SC__NVLS_NCHANNELS * (double)(heads ? heads : 1);
  if (chunk > SC__NVLS_MAX_CHUNK_BYTES) chunk = SC__NVLS_MAX_CHUNK_BYTES;
  if (bytes < 64.0 * ops * chunk && chunk > 65536.0) chunk = 65536.0;
  if (bytes < 8.0 * ops * chunk && chunk > 32768.0) chunk = 32768.0;
  if (bytes < 2.0 * ops * chunk && chunk > 16384.0) chunk = 16384.0;
  return chunk;
}

double sc__comm_nvls_fill_s(double bytes, uint32_t heads, double bw_s) {
  double unit, h = (double)(heads ? heads : 1);
  if (!(bytes > 0.0) || !(bw_s > 0.0)) return 0.0;
  unit = SC__NVLS_NCHANNELS * h * sc__comm_nvls_chunk_bytes(bytes, heads);
  if (unit > bytes) unit = bytes;
  return (SC__NVLS_STAGES - 1.0) * bw_s * unit / bytes;
}

/* log2i of NCCL (floor of log2, 0 for v < 2). */
static int sc__log2i(double v) {
  int l = 0;
  while (v >= 2.0) {
    v /= 2.0;
    l++;
  }
  return l;
}

/* The GPU generation index of perChMaxTreeBws from the topology's hardware file name:
 * 0 Ampere (a100), 1 Hopper (h100, h200, gh200), -1 unknown (no per-channel cap). */
static int sc__arch_index(const sc_topology *t) {
  const char *h = strrchr(t->hardware, '/');
  h = h != NULL ? h + 1 : t->hardware;
  if (strstr(h, "a100") != NULL) return 0;
  if (strstr(h, "h100") != NULL || strstr(h, "h200") != NULL || strstr(h, "gh200") != NULL) {
    return 1;
  }
  return -1;
}

/* A tier is priced as NCCL's NET hardware when its hops leave the node: every tier above
 * tier 0, and tier 0 itself on a topology of one GPU per node (Vista). */
static int sc__tier_hw(const sc_topology *t, uint32_t tier) {
  return (tier >= 1 || t->gpus_per_node <= 1) ? SC__HW_NET : SC__HW_NVLINK;
}

/* What the tuner needs of one candidate algorithm on the resolved span. */
typedef struct sc__cand {
  const sc_coll_plugin *p;
  int algo;                     /* SC__A_TREE for "tree", SC__A_NVLS(_TREE) for "nvls",
                                   SC__A_RING otherwise */
  sc_estimate full;             /* the plugin's own answer (tier latencies as stated) */
  double bw_s;                  /* bandwidth term: time with every tier latency 0 */
  int bw_tier;                  /* tier bounding the bandwidth term */
  double hops[SC_MAX_TIERS];    /* steps whose slowest hop is tier t */
} sc__cand;

static int sc__probe_span(sc_registry *reg, const sc_coll_desc *r, const sc_coll_plugin *p,
                          sc__cand *cd, sc_error *err);

/* The plugin's answers on the resolved span r: its own estimate, its bandwidth term and
 * its hops per tier (indices of t's tiers). */
static int sc__probe(sc_registry *reg, const sc_topology *t, const sc_coll_desc *r,
                     const sc_coll_plugin *p, sc__cand *cd, sc_error *err) {
  sc_coll_desc z = *r;
  int rc, shift = 0;
  memset(cd, 0, sizeof *cd);
  /* One GPU per node (Vista): tier 0 is the network, not a node. The plugins read tier 0
   * as the inside of a node (the tree chains its members there), so any algorithm but the
   * flat ring is shown the span with an empty node tier in front (fan-out 1), and the
   * answers are mapped back to the topology's tiers. */
  if (t->gpus_per_node <= 1 && r->ntiers < SC_MAX_TIERS && strcmp(p->algorithm, "ring") != 0) {
    shift = 1;
    for (uint32_t i = r->ntiers; i > 0; i--) z.tiers[i] = r->tiers[i - 1];
    z.tiers[0] = r->tiers[0];
    z.tiers[0].ranks = 1;
    z.tiers[0].sharing = 1;
    z.ntiers = r->ntiers + 1;
  }
  {
    const sc_coll_desc base = z;
    rc = sc__probe_span(reg, &base, p, cd, err);
    if (rc != SC_OK) return rc;
  }
  if (shift) {
    for (uint32_t i = 0; i < r->ntiers; i++) cd->hops[i] = cd->hops[i + 1];
    cd->hops[r->ntiers] = 0.0;
    if (cd->bw_tier >= 1) cd->bw_tier--;
    if (cd->full.bound_tier >= 1) cd->full.bound_tier--;
  }
  return SC_OK;
}

static int sc__probe_span(sc_registry *reg, const sc_coll_desc *r, const sc_coll_plugin *p,
                          sc__cand *cd, sc_error *err) {
  sc_coll_desc z = *r;
  sc_estimate e;
  int rc;
  cd->p = p;
  cd->algo = strcmp(p->algorithm, "tree") == 0 ? SC__A_TREE : SC__A_RING;
  if (strcmp(p->algorithm, "nvls") == 0) cd->algo = sc__top(r) >= 1 ? SC__A_NVLS_TREE : SC__A_NVLS;
  rc = sc__one(reg, r, p, &cd->full, err);
  if (rc != SC_OK) return rc;
  for (uint32_t t = 0; t < z.ntiers; t++) z.tiers[t].latency_s = 0.0;
  rc = sc__one(reg, &z, p, &e, err);
  if (rc != SC_OK) return rc;
  cd->bw_s = e.time_s;
  cd->bw_tier = e.bound_tier;
  /* Hops per tier: the time at 0 bytes with a latency of 1 s on that tier alone. */
  z.bytes = 0.0;
  for (uint32_t t = 0; t < z.ntiers; t++) {
    for (uint32_t u = 0; u < z.ntiers; u++) z.tiers[u].latency_s = u == t ? 1.0 : 0.0;
    rc = sc__one(reg, &z, p, &e, err);
    if (rc != SC_OK) return rc;
    cd->hops[t] = e.time_s;
  }
  return SC_OK;
}

/* Latency term of candidate cd with protocol p (seconds), and its bandwidth term as the
 * protocol runs it (phys, seconds) and as NCCL's tuner prices it (tuner, seconds). */
static void sc__proto_time(const sc_topology *t, const sc_coll_desc *r, const sc__cand *cd,
                           int p, double *lat_s, double *phys_s, double *tuner_s) {
  double lat = sc__base_lat_us[cd->algo][p] * 1e-6, frac = 1.0, corr = 1.0;
  uint32_t nodes, ppn;
  if (t->gpus_per_node <= 1) {
    nodes = r->nranks;
    ppn = 1;
  } else {
    ppn = r->tiers[0].ranks;
    nodes = r->nranks / (ppn ? ppn : 1);
  }
  /* Per step: the tier's stated latency (NCCL's ring/LL step, see the topology files) plus
   * the surcharge NCCL prices for this algorithm and protocol on that hardware. */
  for (uint32_t i = 0; i < r->ntiers; i++) {
    int hw = sc__tier_hw(t, i);
    double extra = (sc__hw_lat_us[hw][cd->algo][p] - sc__hw_lat_us[hw][SC__A_RING][SC__P_LL]) *
                   1e-6;
    if (cd->hops[i] > 0.0) lat += cd->hops[i] * (r->tiers[i].latency_s + extra);
  }
  /* Ring Simple all-reduce across nodes: NCCL's "plateau effect of ring", latency x1.4
   * (Ampere and later) once bytes / (nChannels * nRanks) >= 64; channels taken as one per
   * GPU of a node (the NIC rails). */
  if (cd->algo == SC__A_RING && p == SC__P_SIMPLE && nodes > 1 &&
      r->kind == SC_COLL_ALLREDUCE &&
      r->bytes / ((double)t->gpus_per_node * (double)r->nranks) >= 64.0) {
    lat *= 1.4;
  }
  /* Protocol bandwidth (fraction of Simple's). */
  if (cd->algo == SC__A_RING) {
    if (p == SC__P_LL) {
      frac = (nodes > 1 || r->kind == SC_COLL_ALLREDUCE) ? 1.0 / 4.0 : 1.0 / 3.0;
    } else if (p == SC__P_LL128) {
      frac = ppn < 2 ? 0.7 : 0.92;
    }
  } else if (cd->algo == SC__A_TREE) {
    if (p == SC__P_LL) frac = 1.0 / 3.8;
    else if (p == SC__P_LL128) frac = nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    {
      double sz = r->bytes / 64.0;
      int ls = sz >= 1.0 ? sc__log2i(sz) : 0;
      if (ls < 23) corr = sc__tree_corr[p][ls];
    }
  }
  /* NVLS and NVLSTree: Simple only (the caller skips the others), no correction. */
  *lat_s = lat;
  *phys_s = cd->bw_s / (frac * corr);
  /* The ring, NVLS (priced from its own graph) and any other non-tree algorithm are
   * priced by the tuner as they run; the caller replaces the tree's price
   * (sc__tree_tuner_bw). */
  *tuner_s = *phys_s;
  /* NVLS all-reduce inside one node: the kernel's three-stage pipeline fills and drains
   * (sc__comm_nvls_fill_s). Physical time only: NCCL's tuner does not price it, so the
   * choice stays NCCL's. */
  if (cd->algo == SC__A_NVLS && r->kind == SC_COLL_ALLREDUCE) {
    *phys_s += sc__comm_nvls_fill_s(r->bytes, r->tiers[0].ranks, cd->bw_s);
  }
}

/* NCCL's tuner price of the tree's bandwidth term: it prices the tree at
 * algbw = 0.5 * min(0.92 * busBw, nChannels * perChMaxTreeBw) with busBw the ring's (same
 * channels, same link speed) whatever the node count, so that at large sizes the ring
 * always wins; given the ring's bandwidth term on the
 * same span (ring_bw_s, 0 when no ring plugin exists: the tree's own term is used). */
static double sc__tree_tuner_bw(const sc_topology *t, const sc_coll_desc *r, const sc__cand *cd,
                                int p, double ring_bw_s) {
  double F = sc_comm_bus_factor(SC_COLL_ALLREDUCE, r->nranks), busbw, tree_bus, frac = 1.0,
         corr = 1.0, cap = INFINITY;
  uint32_t nodes = t->gpus_per_node <= 1 ? r->nranks : r->nranks / r->tiers[0].ranks;
  int arch = sc__arch_index(t);
  if (!(ring_bw_s > 0.0)) return cd->bw_s;
  busbw = r->bytes * F / ring_bw_s;
  if (arch >= 0 && nodes > 1 && r->ntiers > 1) {
    /* nChannels * perChMax with nChannels = ring busBw / one NIC's bandwidth. */
    uint32_t nt = t->gpus_per_node <= 1 ? 0 : 1;
    double ch_bw = r->tiers[nt].bw_Bps / r->tiers[nt].oversubscription;
    int n2 = nodes <= 2 ? (int)nodes - 1 : 2;
    if (ch_bw > 0.0) cap = busbw / ch_bw * sc__tree_ch_max_GBps[arch][n2] * 1e9;
  }
  tree_bus = 0.92 * busbw < cap ? 0.92 * busbw : cap;
  if (p == SC__P_LL) frac = 1.0 / 3.8;
  else if (p == SC__P_LL128) frac = nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  {
    double sz = r->bytes / 64.0;
    int ls = sz >= 1.0 ? sc__log2i(sz) : 0;
    if (ls < 23) corr = sc__tree_corr[p][ls];
  }
  return r->bytes / (0.5 * tree_bus * frac * corr);
}

/* Whether NCCL 2.20.3 would run NVLink SHARP (NVLS in one node, NVLSTree across nodes)
 * for the resolved span r on t; 1 if so, else 0 with the reason in why (docs/comm.md,
 * "NVLink SHARP"):
 *   - the node's switch reduces: tier 0 of t has nvls = true (several GPUs per node);
 *   - more than 2 members of the group per node: "if (!ncclParamNvlsEnable() || gpuCount
 *     <= 2) return ncclSuccess;" (src/transport/nvls.cc, ncclNvlsInit; gpuCount = the
 *     communicator's GPUs in the node);
 *   - all-gather and reduce-scatter inside one node only ("now we only support
 *     single-node NVLS allgather and reducescatter", src/enqueue.cc); an all-reduce across
 *     nodes runs NVLSTree (NVLS itself is disabled across nodes without CollNet,
 *     "if (comm->nNodes > 1 || comm->MNNVL) algoEnable[NCCL_ALGO_NVLS] = 0", tuning.cc);
 *   - a type the switch reduces: ncclNvlsSupported() takes float, double, half, bfloat16
 *     and 32/64-bit integers, not 8-bit types (stepcast: fp32, tf32, bf16, fp16; not fp8,
 *     int8). */
static int sc__nvls_ok(const sc_topology *t, const sc_coll_desc *r, char *why, size_t cap) {
  int top = sc__top(r);
  if (t->gpus_per_node <= 1 || t->ntiers < 1 || !t->tiers[0].nvls) {
    snprintf(why, cap,
             "needs NVLink SHARP, and topology '%s' has none (its node tier '%s' does not "
             "set nvls = true; NVSwitch gen 3 / NVLink 4 nodes such as DGX H100 have it, "
             "A100's NVSwitch does not)",
             t->name, t->ntiers >= 1 ? t->tiers[0].name : "?");
    return 0;
  }
  if (r->tiers[0].ranks <= 2) {
    snprintf(why, cap,
             "needs more than 2 GPUs of the group in a node (NCCL enables NVLS only then); "
             "this group has %u per node",
             (unsigned)r->tiers[0].ranks);
    return 0;
  }
  if (r->kind != SC_COLL_ALLREDUCE && r->kind != SC_COLL_ALLGATHER &&
      r->kind != SC_COLL_REDUCESCATTER) {
    snprintf(why, cap, "serves all-reduce, all-gather and reduce-scatter only");
    return 0;
  }
  if (r->kind != SC_COLL_ALLREDUCE && top > 0) {
    snprintf(why, cap, "runs inside one node only (NCCL 2.20.3); this group spans nodes");
    return 0;
  }
  if (r->dtype == SC_DTYPE_FP8 || r->dtype == SC_DTYPE_INT8) {
    snprintf(why, cap, "cannot reduce %s (the switch reduces fp32, fp16 and bf16)",
             sc_dtype_name(r->dtype));
    return 0;
  }
  return 1;
}

int sc_comm_estimate_proto(sc_registry *reg, const sc_topology *t, const sc_coll_desc *c,
                           const char *algo, sc_estimate *out, const sc_coll_plugin **chosen,
                           const char **protocol, sc_error *err) {
  sc_coll_desc r;
  const sc_coll_plugin *cand[SC__COMM_MAX_CANDIDATES];
  sc__cand cd[SC__COMM_MAX_CANDIDATES];
  size_t n;
  int rc, best = -1, best_p = SC__P_SIMPLE, ring_i = -1;
  double best_tuner = INFINITY, best_lat = 0.0, best_phys = 0.0, ring_bw = 0.0;
  if (reg == NULL || t == NULL || c == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_comm_estimate: %s is NULL",
                        reg == NULL ? "reg" : t == NULL ? "t" : c == NULL ? "c" : "out");
  }
  if ((unsigned)c->kind >= SC_COLL_COUNT) {
    return sc_error_set(err, SC_EINVAL, "collective kind %d is unknown", (int)c->kind);
  }
  if (!(c->bytes >= 0.0) || !isfinite(c->bytes)) {
    return sc_error_set(err, SC_EINVAL, "collective: bytes must be finite and >= 0 (got %g)",
                        c->bytes);
  }
  rc = sc_comm_check_topology(t, err);
  if (rc != SC_OK) return rc;
  rc = sc_comm_resolve(t, c, &r, err);
  if (rc != SC_OK) return rc;
  if (algo == NULL || algo[0] == '\0' || strcmp(algo, "auto") == 0) {
    char why[512];
    size_t k = 0;
    n = sc_registry_colls(reg, c->kind, cand, SC__COMM_MAX_CANDIDATES);
    /* NVLink SHARP only where NCCL would run it. */
    for (size_t i = 0; i < n; i++) {
      if (strcmp(cand[i]->algorithm, "nvls") != 0 || sc__nvls_ok(t, &r, why, sizeof why)) {
        cand[k++] = cand[i];
      }
    }
    n = k;
    if (n == 0) {
      return sc_error_set(err, SC_ENOTFOUND, "no collective plugin serves %s",
                          sc_comm_kind_name(c->kind));
    }
  } else {
    char why[512];
    cand[0] = sc_registry_coll(reg, c->kind, algo);
    if (cand[0] == NULL) {
      return sc_error_set(err, SC_ENOTFOUND, "no '%s' algorithm for %s", algo,
                          sc_comm_kind_name(c->kind));
    }
    if (strcmp(cand[0]->algorithm, "nvls") == 0 && !sc__nvls_ok(t, &r, why, sizeof why)) {
      return sc_error_set(err, SC_EUNSUPPORTED, "algorithm 'nvls' for %s %s",
                          sc_comm_kind_name(c->kind), why);
    }
    n = 1;
  }
  {
    /* With "auto", a plugin that declines this group (SC_EUNSUPPORTED, e.g. an algorithm
     * for powers of two only) leaves the choice to the others; a forced one fails. */
    size_t k = 0;
    sc_error first;
    first.code = SC_OK;
    for (size_t i = 0; i < n; i++) {
      rc = sc__probe(reg, t, &r, cand[i], &cd[k], err);
      if (rc == SC_EUNSUPPORTED && n > 1) {
        if (first.code == SC_OK && err != NULL) first = *err;
        continue;
      }
      if (rc != SC_OK) return rc;
      cand[k] = cand[i];
      if (cd[k].algo == SC__A_RING && strcmp(cand[k]->algorithm, "ring") == 0) ring_i = (int)k;
      k++;
    }
    if (k == 0) {
      if (err != NULL && first.code != SC_OK) *err = first;
      return SC_EUNSUPPORTED;
    }
    n = k;
  }
  /* The tuner prices the tree against the ring's bandwidth: find it even when the tree is
   * forced. */
  if (ring_i >= 0) {
    ring_bw = cd[ring_i].bw_s;
  } else if (c->kind == SC_COLL_ALLREDUCE) {
    const sc_coll_plugin *rp = sc_registry_coll(reg, c->kind, "ring");
    if (rp != NULL) {
      sc__cand rc_cd;
      rc = sc__probe(reg, t, &r, rp, &rc_cd, err);
      if (rc != SC_OK) return rc;
      ring_bw = rc_cd.bw_s;
    }
  }
  for (size_t i = 0; i < n; i++) {
    for (int p = 0; p < SC__P_COUNT; p++) {
      double lat, phys, tuner;
      /* NVLS and NVLSTree run the Simple protocol only ("if ((a == NCCL_ALGO_NVLS || a ==
       * NCCL_ALGO_NVLS_TREE) && p != NCCL_PROTO_SIMPLE) continue;", tuning.cc). */
      if ((cd[i].algo == SC__A_NVLS || cd[i].algo == SC__A_NVLS_TREE) && p != SC__P_SIMPLE) {
        continue;
      }
      sc__proto_time(t, &r, &cd[i], p, &lat, &phys, &tuner);
      if (cd[i].algo == SC__A_TREE) tuner = sc__tree_tuner_bw(t, &r, &cd[i], p, ring_bw);
      tuner += lat;
      if (best < 0 || tuner < best_tuner) {
        best = (int)i;
        best_p = p;
        best_tuner = tuner;
        best_lat = lat;
        best_phys = phys;
      }
    }
  }
  *out = cd[best].full;
  out->time_s = best_lat + best_phys;
  if (r.nranks <= 1 || (best_lat == 0.0 && best_phys == 0.0)) {
    out->time_s = cd[best].full.time_s;
  } else if (best_lat >= best_phys) {
    int top = -1;
    for (uint32_t i = 0; i < r.ntiers; i++) {
      if (cd[best].hops[i] > 0.0) top = (int)i;
    }
    out->bound = SC_BOUND_LATENCY;
    out->bound_tier = top;
  } else {
    out->bound = SC_BOUND_BANDWIDTH;
    out->bound_tier = cd[best].bw_tier;
  }
  out->busbw_Bps =
      out->time_s > 0.0 ? r.bytes / out->time_s * sc_comm_bus_factor(r.kind, r.nranks) : 0.0;
  if (chosen != NULL) *chosen = cd[best].p;
  if (protocol != NULL) *protocol = sc__proto_names[best_p];
  return SC_OK;
}

int sc_comm_estimate(sc_registry *reg, const sc_topology *t, const sc_coll_desc *c,
                     const char *algo, sc_estimate *out, const sc_coll_plugin **chosen,
                     sc_error *err) {
  return sc_comm_estimate_proto(reg, t, c, algo, out, chosen, NULL, err);
}
