/*
 * Communication: where the ranks of a parallel configuration sit on a topology (placement),
 * how each parallel group spans the topology's tiers, and what a collective over such a
 * group costs (hierarchical composition of the collective plugins, algorithm choice).
 * Formulas and conventions: docs/comm.md.
 */
#ifndef STEPCAST_COMM_H
#define STEPCAST_COMM_H

#include <stdint.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/registry.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Check that t can carry collectives: gpus_per_node >= 1; 1..SC_MAX_TIERS tiers; tier 0's
 * scope is gpus_per_node (with one GPU per node, as on Vista, tier 0 may be the network
 * itself: then it joins more GPUs, or 0 = all, and no intra-node tier exists); each later scope is a multiple of the one before (or 0 = the
 * whole system, last tier only); every tier has bw_Bps > 0, latency_s >= 0,
 * oversubscription >= 1 and efficiency in [0,1] (0 = not stated = 1); nvls (NVLink SHARP)
 * only on tier 0 of a topology with more than one GPU per node. nics_per_node 0 means
 * unknown and is read as one NIC per GPU. SC_ESPEC naming the topology and the tier
 * otherwise. */
int sc_comm_check_topology(const sc_topology *t, sc_error *err);

/* Check that gpus GPUs can be placed on t: gpus >= 1, gpus <= max_gpus (when max_gpus is
 * not 0), at most the scope of the last tier (when not 0), and a multiple of
 * gpus_per_node when more than one node is used. SC_ECONFIG with a one-line reason. */
int sc_comm_check_gpus(const sc_topology *t, uint32_t gpus, sc_error *err);

/* The span of group kind g of p on t (for the group holding rank 0; every group of a kind
 * is a translate of it under the regular placement). Ranks are placed on GPUs in order
 * (rank r on GPU r, node r / gpus_per_node) and a rank's coordinates follow p->order,
 * innermost first (Megatron-LM's default TP, CP, DP, PP): the kind order[0] varies fastest.
 * Fills in *tmpl: nranks (the degree of g), ntiers (t->ntiers) and, per tier i, ranks (how
 * many distinct members the tier joins at its level: members per node for tier 0, then
 * the ratio of distinct tier-(i-1) to tier-i instances), bw_Bps, latency_s and
 * oversubscription as the topology states them (per GPU, nominal; efficiency not applied)
 * and sharing: how many groups of kind g have members under one instance of tier i-1 and
 * cross tier i at once (scope of tier i-1 / members of the group under it; 1 for tier 0
 * and for tiers not crossed). kind, bytes and dtype of *tmpl are left as they were.
 * Errors: SC_EINVAL (NULL, degree 0, bad order), SC_ECONFIG (tp*cp*dp*pp not placeable on
 * t, see sc_comm_check_gpus; a group spreading unevenly over a tier), SC_ESPEC (topology
 * fails sc_comm_check_topology). */
int sc_comm_group(const sc_topology *t, const sc_parallel *p, sc_group_kind g,
                  sc_coll_desc *tmpl, sc_error *err);

/* The span of a flat group of all `gpus` GPUs (as nccl-tests runs: ranks fill nodes in
 * order). Same as sc_comm_group with dp = gpus and every other degree 1. */
int sc_comm_group_flat(const sc_topology *t, uint32_t gpus, sc_coll_desc *tmpl,
                       sc_error *err);

/* Apply the topology to a span, as sc_comm_estimate does before asking a plugin: for each
 * tier i, the bandwidth one member gets each way and the load factor on the tier's links.
 *   tier 0: bw = bw_0 * eff_0 (a GPU's own NVLink ports); factor = oversubscription_0.
 *   tier i >= 1: with B = scope of tier i-1 (GPUs under one instance below the tier),
 *     a = min(B, m_i * sharing_i) GPUs of the concurrent groups sending through it
 *     (m_i = members of the group under it), one NIC's share
 *     cap = bw_i * eff_i * max(1, gpus_per_node / nics_per_node) (a GPU may use a whole
 *     NIC when the NIC serves several GPUs and they are idle; = bw_i * eff_i with a NIC
 *     per GPU, as on DGX and Perlmutter):
 *       bw = min(cap, B * bw_i * eff_i / a),
 *       factor = max(1, bw * oversubscription_i * a / (B * bw_i * eff_i)),
 *     so that bw / factor = min(cap, B * bw_i * eff_i / (oversubscription_i * a)).
 * out may alias in. Errors: SC_EINVAL when the span does not fit t (ntiers differ, a
 * fan-out of 0, product of fan-outs != nranks). */
int sc_comm_resolve(const sc_topology *t, const sc_coll_desc *in, sc_coll_desc *out,
                    sc_error *err);

/* nccl-tests' busbw / algbw for a kind and group size: 2(n-1)/n for all-reduce, (n-1)/n
 * for all-gather, reduce-scatter and all-to-all, 1 for broadcast and send/recv (and for
 * n = 1). */
double sc_comm_bus_factor(sc_coll_kind kind, uint32_t nranks);

/* Estimate collective c (a span as sc_comm_group fills it, with kind and bytes set) on t.
 * algo: "auto" (or NULL) tries every active plugin of reg serving c->kind, with NCCL's
 * protocols (LL, LL128, Simple), and keeps the pair NCCL 2.20.3's tuner would choose
 * (sc_comm_estimate_proto, docs/comm.md "Protocols and algorithm choice"); otherwise the algorithm name ("ring", "tree",
 * "direct", "nvls") selects the plugin (SC_ENOTFOUND naming kind and algorithm when none).
 * Algorithm "nvls" (NVLink SHARP: NCCL's NVLS in one node, NVLSTree across nodes) is a
 * candidate only where NCCL 2.20.3 would run it (docs/comm.md "NVLink SHARP"): tier 0 of
 * t sets nvls, more than 2 members of the group per node, all-reduce (any node count) or
 * all-gather / reduce-scatter inside one node, a type other than fp8 and int8; forced
 * where it cannot run, SC_EUNSUPPORTED with the reason.
 * The span is first resolved (sc_comm_resolve). The ring algorithm is NCCL's flat ring
 * over all ranks (channels on the NIC rails) and goes to its plugin whole, as does nvls.
 * With any other all-reduce algorithm (tree, ...), a group that has more than one member
 * per node and crosses a tier above the node is composed hierarchically:
 * reduce-scatter inside the node (tier 0), all-reduce of the 1/r_0 shard across the outer
 * tiers with the chosen algorithm (one NIC rail per GPU), all-gather inside the node;
 * the phases are pipelined as NCCL pipelines its chunks, so
 *   time = sum of the phases' latency terms + max of their bandwidth terms
 * (a phase's latency term is its time at 0 bytes). Any other group or kind goes to the
 * plugin whole. out->busbw_Bps follows nccl-tests; out->bound_tier indexes t's tiers.
 * *chosen (may be NULL) receives the plugin of the chosen algorithm. Errors: those of
 * sc_comm_resolve and the plugins; SC_ENOTFOUND when no plugin serves c->kind;
 * SC_EUNSUPPORTED for a forced "nvls" that cannot run on the span. */
int sc_comm_estimate(sc_registry *reg, const sc_topology *t, const sc_coll_desc *c,
                     const char *algo, sc_estimate *out, const sc_coll_plugin **chosen,
                     sc_error *err);

/* As sc_comm_estimate, choosing the protocol too, as NCCL's tuner does (docs/comm.md,
 * "Protocols and algorithm choice"): every (algorithm, protocol) pair of LL, LL128 and
 * Simple is priced with NCCL 2.20.3's tuning model (base latency, per-step surcharge per
 * hardware class on top of the tier's latency_s, protocol bandwidth fraction, the tree's
 * bandwidth price and correction factors) and the cheapest is kept; the time reported is
 * that pair's latency term plus its bandwidth term as the plugin states it. *protocol
 * (may be NULL) receives "LL", "LL128" or "Simple" (static strings). Errors: as
 * sc_comm_estimate. */
int sc_comm_estimate_proto(sc_registry *reg, const sc_topology *t, const sc_coll_desc *c,
                           const char *algo, sc_estimate *out, const sc_coll_plugin **chosen,
                           const char **protocol, sc_error *err);

/* Names of the collective kinds as nccl-tests and the CLI spell them ("allreduce",
 * "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"); NULL for an
 * unknown kind. sc_comm_kind_parse accepts those names (and "all_reduce" etc., the
 * nccl-tests binary stems without "_perf"); SC_EINVAL otherwise. */
const char *sc_comm_kind_name(sc_coll_kind kind);
int sc_comm_kind_parse(const char *name, sc_coll_kind *out);

/* Published nccl-tests results (stepcast comm --validate, docs/validation/nccl-tests.csv,
 * fit --comm). One row of a validation file. Columns, in this order, with a header line naming them:
 *   id,source,system,topology,gpus,op,algo,bytes,busbw_GBps,notes
 * Fields may be double-quoted ("" inside is a quote). Lines starting with '#' and empty
 * lines are skipped. id: non-empty; source: non-empty (URL and which table or log);
 * topology: a topology name or path; gpus: integer >= 1; op: a kind name
 * (sc_comm_kind_parse); algo: "auto", "ring", "tree", ... (empty = auto); bytes: integer
 * >= 1 (nccl-tests' size column); busbw_GBps: number > 0 (GB = 1e9 bytes). */
typedef struct sc_comm_vrow {
  uint32_t line;                 /* line in the file */
  char id[64];
  char source[512];
  char system[128];
  char topology[256];
  uint32_t gpus;
  sc_coll_kind op;
  char algo[32];
  double bytes;
  double busbw_Bps;
  char notes[512];
} sc_comm_vrow;

/* Read path into a new array (*rows, *n; free with free()). Errors name "path:line: column
 * 'x': reason": SC_EIO (cannot open), SC_EPARSE (bad header, wrong number of fields,
 * unterminated quote, a value of the wrong form), SC_ENOMEM. An empty table (header only)
 * is SC_EPARSE too. */
int sc_comm_read_validation(const char *path, sc_comm_vrow **rows, size_t *n, sc_error *err);

/* An nccl-tests run's standard output (ncclog.c): the out-of-place time of each size of
 * its results table (the '#' header line naming size, time and busbw gives the columns),
 * the collective (from "# Collective test starting: <name>_perf", when printed) and the
 * ranks ("#  Rank  N Group ..." lines, 0 when none). Other lines (NCCL INFO, warnings) are
 * skipped. Errors name path:line: a NUL byte, a row short of the time column, a size or
 * time that is not a positive number, a size twice or a second table (one run per log),
 * no table, no rows, an unknown collective. */
typedef struct sc_nccl_log_row {
  uint32_t line;
  double bytes;    /* the size column */
  double time_s;   /* out-of-place time */
} sc_nccl_log_row;
typedef struct sc_nccl_log {
  sc_nccl_log_row *rows;
  size_t n;
  int have_kind;
  sc_coll_kind kind;
  uint32_t ranks;
} sc_nccl_log;
int sc_comm_read_nccl_log(const char *path, sc_nccl_log *out, sc_error *err);
void sc_comm_nccl_log_free(sc_nccl_log *log);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_COMM_H */
