/*
 * The pieces of composing a prediction that sc_predict (predict.c) and the sweep's fast
 * path (core/src/sweep/eval.c) share, so that both compute the same numbers the same way:
 * the compute-family breakdown, the spans of a configuration's groups, the description of
 * one workload collective over its span, and the sums of a list's operators and
 * collectives (each caller brings its own way of timing one operator or collective).
 */
#ifndef SC_PREDICT_COMPOSE_H
#define SC_PREDICT_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/memory.h"
#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/predict.h"
#include "stepcast/registry.h"
#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/spec.h"
#include "stepcast/workload.h"

/* Operator families the compute breakdown keeps apart, in display order (optimizer work is
 * a term of its own, the schedule's optimizer lane). */
#define SC__NFAM 8
extern const char *const sc__families[SC__NFAM];

/* Index of family in sc__families, SC__NFAM when it is not one of them. */
size_t sc__family_index(const char *family);

/* The spans of a configuration's groups over topology t: TP, CP, DP (the gradient group,
 * dp*cp ranks: context-parallel ranks hold the same parameters) and PP, and the expert
 * groups ETP, EP, EDP that fold a stage's tp*cp*dp GPUs (ETP innermost). SC_ECONFIG when
 * CP does not sit just inside DP in p->order, when ep*etp > 1 and PP is not outermost, or
 * from sc_comm_group. */
typedef struct sc__spans {
  sc_coll_desc g[SC_GROUP_COUNT];
  /* Sharded data parallelism over part of the DP x CP group (sc_parallel.shard_size):
   * the shard (its innermost ranks) and the replicas of one shard; copies of g[DP] when
   * the shard is the whole group. */
  sc_coll_desc shard, replica;
  /* Mixture-of-experts layers over the same GPUs (parallel folding): g_moe[0] ETP,
   * [1] EP, [2] EDP (sc_group_kind - SC_GROUP_ETP); one rank each when ep = etp = 1. */
  sc_coll_desc g_moe[3];
} sc__spans;
int sc__spans_make(const sc_topology *t, const sc_parallel *p, sc__spans *s, sc_error *err);

/* The collective wc over its group's span, ready for sc_comm_estimate (the tied-embedding
 * pair of the first and last stage crosses the highest tier the pipeline group crosses).
 * Call only for wc->nranks > 1 and wc->bytes > 0. SC_ECONFIG when the workload's group
 * size and the placement disagree. */
int sc__coll_desc(const sc__spans *s, const sc_work_coll *wc, sc_coll_desc *d, sc_error *err);

/* The pipeline send/recv of bytes between neighbouring stages as a workload collective. */
void sc__p2p_work(const sc__spans *s, double bytes, sc_dtype dt, sc_work_coll *wc);

/* Time of one instance of an operator / a collective, the caller's way. For an operator,
 * *time_s is the GPU's time and *host_s the host's time to dispatch it (the software
 * stack's, stepcast/stack.h; 0 when the host keeps up). */
typedef int (*sc__op_time_fn)(void *ctx, const sc_work_op *o, double *time_s, double *host_s,
                              sc_error *err);
typedef int (*sc__coll_time_fn)(void *ctx, const sc_work_coll *wc, double *time_s,
                                sc_error *err);

/* Sum of a list's operators (time x repeat), split by family into fam[SC__NFAM] when fam
 * is not NULL (then an operator outside the families is SC_EINVAL). When any operator has
 * a host time, the list is one stream instead (sc_stack_stream): the host dispatches the
 * operators in order, a layer's operators layer after layer, and the GPU runs each once it
 * is dispatched and the one before is done; the total is when the GPU finishes, and a
 * family's share is what its operators add to that, their wait for the host included.
 * lead (may be NULL): in, how long before the pass's start on the GPU the host began to
 * dispatch it (the previous pass's GPU work outlasting its dispatch); out, the same for the
 * pass that follows (0 when no operator has a host time). */
int sc__ops_sum(const sc_work_list *l, sc__op_time_fn fn, void *ctx, double *total,
                double *fam, double *lead, sc_error *err);

/* 1 when o computes weight gradients, the W of a zero-bubble schedule (ZB-H1, DualPipe):
 * a backward GEMM whose label ends in ".wgrad" (the linear layers' and the output layer's),
 * except the unfused attention's attn_qk.wgrad and attn_av.wgrad, which compute dK and dV
 * (activation gradients the backward must propagate). */
int sc__op_is_wgrad(const sc_work_op *o);

/* The token budget and what prices its energy and cost (dev's board power, o's power
 * fraction, PUE and price per GPU-hour) into res, for sc_result_finish: one copy for
 * sc_predict and the sweep's fast path. */
void sc__result_set_training(sc_result *res, const sc_device *dev, const sc_predict_opts *o);

/* Per-micro-batch collectives of a list (time x repeat) added to *cp_s (CP group), *dp_s
 * (sharded data parallelism: ZeRO-2/3 gathers and reductions) or *tp_s (TP, and anything
 * else tied to a micro-batch pass: the MoE layers' EP all-to-alls and ETP collectives), and
 * the part of *tp_s that no overlap may hide (the collectives not overlappable: EP's, and
 * TP's without overlap_tp_comm) to *tp_fixed_s as well. *dp_hide_s gains the part of the list's DP
 * communication that prefetching can run under the pass's compute: every overlappable
 * instance but the longest one (the first gather has nothing before it to hide under, the
 * last reduction nothing after it). Trivial ones (one rank, no bytes) cost nothing and are
 * not timed. */
int sc__colls_sum_micro(const sc_work_list *l, sc__coll_time_fn fn, void *ctx, double *tp_s,
                        double *tp_fixed_s, double *cp_s, double *dp_s, double *dp_hide_s,
                        sc_error *err);

/* Context-parallel communication hides only under the attention it feeds (Megatron's ring
 * attention overlaps each K/V step with the partial attention of the previous one): set
 * ch->cp_fwd_s and ch->cp_bwd_s to what the attention kernels of the pass (attention and
 * softmax families; backward: those of the backward and the recomputation) cannot cover.
 * fam holds the pass splits: [0, NFAM) forward, [NFAM, 2 NFAM) backward, then recompute.
 * The schedule then exposes the rest whole (cp_overlap_frac = 0). */
void sc__cp_hide_under_attention(sc_sched_chunk *ch, const double *fam);

/* Collective times of one span set: a small memo keyed by group, kind, ranks, dtype, bytes
 * and whether the direct algorithm was asked, far cheaper than re-running the collective
 * model (which tries every algorithm and protocol). Valid only while the spans and the
 * algorithm choice stay the same: clear it whenever they change. */
#define SC__COLLMEMO 512u /* power of two */
typedef struct sc__collmemo_key {
  uint32_t group, kind, nranks, dtype, direct, pad;
  double bytes;
} sc__collmemo_key;
typedef struct sc__collmemo {
  uint32_t n;
  uint8_t used[SC__COLLMEMO];
  sc__collmemo_key key[SC__COLLMEMO];
  double time_s[SC__COLLMEMO];
} sc__collmemo;

void sc__collmemo_clear(sc__collmemo *m);
/* 1 and *time_s (one instance) when wc with algo is in m; else 0 and *slot for the put. */
int sc__collmemo_get(const sc__collmemo *m, const sc_work_coll *wc, const char *algo,
                     double *time_s, uint32_t *slot);
/* Remember the time at slot (from a missed get); does nothing once m is half full. */
void sc__collmemo_put(sc__collmemo *m, const sc_work_coll *wc, const char *algo,
                      uint32_t slot, double time_s);

/* The collective side of a prediction, shared by sc_predict and the sweep: the registry and
 * topology, the job's group spans, the algorithm ("auto", ...) and a memo of collective times
 * (NULL: none). */
typedef struct sc__coll_ctx {
  sc_registry *reg;
  const sc_topology *t;
  const sc__spans *sp;
  const char *algo;
  sc__collmemo *cm;
  sc_estimator estimator;             /* with cres: hybrid or learned collectives */
  const struct sc_residuals *cres;    /* collective residuals (NULL: analytical) */
  uint32_t sms;                       /* the device's SMs (sc_device.compute_units; 0:
                                       * unknown): what Transformer Engine's TP overlap
                                       * takes from the GEMMs beside it */
} sc__coll_ctx;

/* An sc__coll_time_fn (ctx: an sc__coll_ctx): one instance of wc over its group's span, the
 * pipeline's send/recv and the MoE layers' all-to-alls always with the direct algorithm,
 * through the memo. */
int sc__coll_time(void *ctx, const sc_work_coll *wc, double *time_s, sc_error *err);

/* A chunk's per-micro-batch terms from its stage work: fwd_s, bwd_s, recompute_s (with
 * their split by family into fam[0..3*SC__NFAM), zeroed first), wgrad_s (the share of bwd_s
 * that the weight-gradient GEMMs take, sc__op_is_wgrad), the TP and CP communication of
 * each pass (recomputation's counted in the backward), CP hidden under attention
 * (sc__cp_hide_under_attention). op times an operator with octx. */
int sc__chunk_micro(const sc_stage_work *w, sc__op_time_fn op, void *octx, sc__coll_ctx *cc,
                    sc_sched_chunk *ch, double *fam, sc_error *err);

/* A chunk's per-iteration terms: the optimizer step into *t_opt, the data-parallel parameter
 * all-gathers and gradient reductions, and the pipeline sends of one micro-batch. */
int sc__chunk_iter(const sc_stage_work *w, sc__op_time_fn op, void *octx, sc__coll_ctx *cc,
                   sc_sched_chunk *ch, double *t_opt, sc_error *err);

/* The reported memory per GPU: the worst stage's (its model states and activations, and o,
 * its overhead: stepcast/memory.h), against the device's capacity. */
void sc__memory_usage_of(const sc_memory *worst, const sc_memory_overhead *o,
                         double capacity_bytes, sc_memory_usage *mu);

#endif
