/*
 * Pipeline schedule: an event simulation of one training iteration over pipeline stages
 * and their streams (compute, TP/CP communication, DP communication, P2P sends).
 *
 * The caller (the predictor) gives, per virtual pipeline stage, per-micro-batch compute and
 * communication times and per-iteration data-parallel times; the simulation places every
 * forward, recomputation and backward pass of every micro-batch on its stage in the order
 * the schedule prescribes (GPipe, 1F1B = PipeDream-flush, Megatron's interleaved 1F1B, the
 * zero-bubble ZB-H1 and DeepSeek's DualPipe, whose backwards split into an input-gradient
 * pass B and a weight-gradient pass W), honours the data dependencies between neighbouring stages, and returns the iteration
 * time, a breakdown whose terms sum to it on the critical stage, and optionally the busy
 * intervals of every stream (the timeline behind the Chrome/Perfetto trace).
 * docs/schedule.md describes the model, the overlap rules and the breakdown.
 *
 * Times are seconds (SI), per GPU. Nothing here allocates per event: a workspace is grown
 * once to the largest problem seen and reused, so that sweeps call sc_schedule_run in a
 * loop at no allocation cost.
 */
#ifndef STEPCAST_SCHEDULE_H
#define STEPCAST_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operator families the compute breakdown can keep apart (gemm, attention, norm, ...). */
#define SC_SCHED_MAX_FAMILIES 16
#define SC_SCHED_FAMILY_NAME_MAX 32
/* Largest simulated problem: pipeline ranks, virtual chunks per rank, micro-batches. */
#define SC_SCHED_MAX_PP 1024
#define SC_SCHED_MAX_VP 64
#define SC_SCHED_MAX_MICROBATCHES (1u << 20)

/* Streams of one pipeline stage (the tids of the trace). */
typedef enum {
  SC_LANE_COMPUTE = 0, /* forward, recomputation, backward (and exposed TP/CP comm) */
  SC_LANE_TP,          /* tensor-parallel collectives */
  SC_LANE_CP,          /* context-parallel communication */
  SC_LANE_DP,          /* data-parallel gradient reduction and parameter all-gather */
  SC_LANE_P2P_NEXT,    /* sends of activations to the next pipeline stage */
  SC_LANE_P2P_PREV,    /* sends of gradients to the previous pipeline stage */
  SC_LANE_OPT,         /* optimizer step */
  SC_LANE_COUNT
} sc_lane;

/* What one busy interval is. */
typedef enum {
  SC_IV_FORWARD = 0,
  SC_IV_RECOMPUTE,
  SC_IV_BACKWARD,
  SC_IV_TP,            /* TP comm (overlapped part runs beside compute, exposed part after) */
  SC_IV_CP,            /* CP comm, same placement as TP */
  SC_IV_P2P_ACT,       /* activation send to the next stage */
  SC_IV_P2P_GRAD,      /* gradient send to the previous stage */
  SC_IV_DP_GRAD,       /* one gradient-reduction bucket */
  SC_IV_DP_PARAM,      /* one parameter all-gather bucket (distributed optimizer) */
  SC_IV_OPTIMIZER,
  SC_IV_WGRAD,         /* weight-gradient pass W (ZB-H1, DualPipe): its own interval, after
                          the input-gradient part of the backward or deferred to a later slot */
  SC_IV_COUNT
} sc_interval_kind;

/* Per-micro-batch times of one model chunk (one virtual pipeline stage). For the plain
 * schedules a pipeline rank holds one chunk; interleaved 1F1B gives each rank vp chunks:
 * chunk c of rank r is virtual stage c*pp + r (Megatron's layer assignment). DualPipe takes
 * pp entries, one per model stage s, and runs stage s on rank s (micro-batches fed from
 * rank 0) and on rank pp-1-s (micro-batches fed from rank pp-1). */
typedef struct sc_sched_chunk {
  double fwd_s;               /* forward compute of one micro-batch */
  double bwd_s;               /* backward compute of one micro-batch (without recompute) */
  double wgrad_s;             /* the part of bwd_s that computes weight gradients (W), in
                                 [0, bwd_s]; ZB-H1 and DualPipe run it as its own pass W
                                 (the rest, B, propagates the gradient); the other schedules
                                 ignore it. 0 = nothing to defer (W passes of zero length) */
  double recompute_s;         /* recomputation forward run just before the backward (0 = none) */
  double tp_fwd_s, tp_bwd_s;  /* TP comm per micro-batch; tp_bwd_s includes the TP comm of
                                 the recomputation forward */
  double tp_fwd_fixed_s, tp_bwd_fixed_s; /* the part of tp_fwd_s / tp_bwd_s that stays
                                 exposed even when overlapped (Transformer Engine's
                                 userbuffers: what its GEMM cannot cover, the last chunk of
                                 a pipelined reduce-scatter), <= the whole; 0 = all of it may
                                 hide (tp_overlap_frac of it) */
  double cp_fwd_s, cp_bwd_s;  /* context-parallel comm per micro-batch, same convention */
  double p2p_fwd_s;           /* send of this chunk's output activation to the next virtual
                                 stage (ignored on the last virtual stage) */
  double p2p_bwd_s;           /* send of this chunk's input gradient to the previous virtual
                                 stage (ignored on the first) */
  /* Sharded data parallelism (ZeRO-2/3, FSDP), per micro-batch: the pass's parameter
   * gathers and gradient reduce-scatters (the recomputation's in the backward), and the
   * part of each that prefetching runs beside the pass's compute (<= the whole); the rest
   * is exposed after the compute, and so is what the compute cannot cover. */
  double shard_fwd_s, shard_bwd_s;
  double shard_fwd_hide_s, shard_bwd_hide_s;
  double dp_grad_s;           /* per iteration: DP reduction of this chunk's gradients */
  double dp_param_gather_s;   /* per iteration: distributed-optimizer all-gather of this
                                 chunk's parameters (0 without a distributed optimizer) */
  /* Optional split of fwd_s, bwd_s, recompute_s by operator family (nfamilies entries
   * each, summing to the total within 1e-9 relative); NULL = not split. Borrowed. */
  const double *fwd_family_s;
  const double *bwd_family_s;
  const double *recompute_family_s;
} sc_sched_chunk;

typedef struct sc_sched_input {
  sc_schedule_kind kind;
  uint32_t pp;                /* pipeline ranks (>= 1) */
  uint32_t vp;                /* chunks per rank: 1, or >= 2 with SC_SCHED_INTERLEAVED */
  uint32_t microbatches;      /* m >= 1; interleaved needs m % pp == 0 (as Megatron);
                                 DualPipe an even m >= 2*pp (half fed from each end) */
  const sc_sched_chunk *chunks; /* pp*vp entries indexed by virtual stage c*pp + r (DualPipe:
                                   pp entries, one per model stage); borrowed */
  const double *optimizer_s;  /* pp entries: optimizer step time of each rank; NULL = 0 */
  /* Fraction in [0,1] of TP / CP comm that can hide under the compute of the same pass
   * (0 = all exposed; 1 = exposed only beyond the compute time). */
  double tp_overlap_frac;
  double cp_overlap_frac;
  int overlap_grad_reduce;    /* DP reduction of a chunk's buckets during the backward */
  int overlap_param_gather;   /* param all-gather overlapped with the first forwards */
  int p2p_blocking;           /* a send holds the sender's compute stream until it completes
                               * (blocking send/recv, DeepSpeed's PipelineEngine); 0: sends
                               * run on their own streams beside the compute */
  uint32_t grad_buckets;      /* buckets per chunk for the gradient reduction (0 means 1) */
  uint32_t param_buckets;     /* buckets per chunk for the parameter all-gather (0 means 1) */
  uint32_t nfamilies;         /* <= SC_SCHED_MAX_FAMILIES; 0 = no family split */
  const char *const *family_names; /* nfamilies names (< SC_SCHED_FAMILY_NAME_MAX bytes) */
  int record_timeline;        /* also record every busy interval and the P2P flows */
} sc_sched_input;

/* The breakdown of one stage's iteration. Terms sum to iteration_s (1e-12 relative):
 *   compute_fwd_s + compute_recompute_s + compute_bwd_s
 *   + tp_exposed_s + cp_exposed_s + dp_exposed_s + p2p_exposed_s + bubble_s + optimizer_s.
 * family_s[] splits the compute sum when families were given (sums to it). */
typedef struct sc_sched_breakdown {
  double iteration_s;         /* end of the last stage (the critical one) */
  uint32_t stage;             /* which pipeline rank this breakdown is of */
  double end_s;               /* when this stage's optimizer step ended */
  double compute_fwd_s, compute_recompute_s, compute_bwd_s;
  double tp_exposed_s;        /* TP comm not hidden under compute */
  double cp_exposed_s;
  double dp_exposed_s;        /* gradient reduction after the last backward + param gather
                                 before (or stretching) the first forward + the sharded
                                 passes' exposed gathers and reduce-scatters */
  double p2p_exposed_s;       /* waiting for a transfer after its producer finished */
  double bubble_s;            /* waiting for a producer still computing, plus the tail after
                                 this stage ended and before the iteration did */
  double optimizer_s;
  uint32_t nfamilies;
  char family_names[SC_SCHED_MAX_FAMILIES][SC_SCHED_FAMILY_NAME_MAX];
  double family_s[SC_SCHED_MAX_FAMILIES];
} sc_sched_breakdown;

/* One busy interval of the timeline. */
typedef struct sc_sched_interval {
  double start_s, end_s;
  uint32_t stage;             /* pipeline rank */
  uint16_t lane;              /* sc_lane */
  uint16_t kind;              /* sc_interval_kind */
  uint32_t chunk;             /* model chunk on this rank (0 when vp = 1; DualPipe: 0 for
                                 the copy fed from rank 0, stage r, 1 for the one fed from
                                 rank pp-1, stage pp-1-r) */
  int32_t microbatch;         /* -1 for per-iteration work (DP, optimizer); DualPipe counts
                                 each direction's micro-batches from 0 */
  int32_t bucket;             /* DP bucket index, -1 otherwise */
  uint32_t pass;              /* intervals placed together share it: one pass (a forward; a
                                 recomputation and backward; a W; a DualPipe F&B pair) with
                                 its TP, CP and sharded-DP communication, its sends and the
                                 gradient buckets it releases; a rank's parameter all-gather,
                                 and its closing reduction and optimizer step, have their own */
} sc_sched_interval;

/* A pipeline send: interval index of the send and of the pass that consumed it. */
typedef struct sc_sched_flow {
  uint32_t send;
  uint32_t recv;
} sc_sched_flow;

typedef struct sc_sched_result {
  double iteration_s;
  uint32_t critical_stage;    /* the rank finishing last (lowest index on a tie) */
  sc_sched_breakdown breakdown;           /* of critical_stage */
  /* pp entries, one per rank (owned by the workspace), with record_timeline only (else
   * NULL: a sweep needs the critical stage alone and skips the others' accounting). */
  const sc_sched_breakdown *stages;
  uint32_t pp, vp, microbatches;
  /* Timeline (record_timeline only, else NULL / 0), owned by the workspace. */
  const sc_sched_interval *intervals;
  size_t nintervals;
  const sc_sched_flow *flows;
  size_t nflows;
} sc_sched_result;

typedef struct sc_sched_workspace sc_sched_workspace;

/* A new, empty workspace (grows on demand inside sc_schedule_run). SC_ENOMEM on failure. */
int sc_sched_workspace_new(sc_sched_workspace **out, sc_error *err);

/* Free a workspace and everything results point into. NULL is a no-op. */
void sc_sched_workspace_free(sc_sched_workspace *ws);

/* Simulate one iteration. in and its arrays are borrowed for the call; out's arrays point
 * into ws and stay valid until the next run on ws or its free. Errors (out untouched):
 * SC_EINVAL naming the parameter (pp or vp or microbatches zero or too large, vp > 1
 * without the interleaved schedule, a negative or non-finite time, wgrad_s above bwd_s, a
 * family split not summing to its total, an overlap fraction outside [0,1], chunks NULL),
 * SC_ECONFIG for interleaved with microbatches % pp != 0 and for DualPipe with an odd pp,
 * an odd microbatches or microbatches < 2*pp, SC_ENOMEM when the workspace cannot grow. */
int sc_schedule_run(sc_sched_workspace *ws, const sc_sched_input *in, sc_sched_result *out,
                    sc_error *err);

/* Names for display and files: "compute", "tp", ... and "forward", "backward", ... */
const char *sc_lane_name(sc_lane lane);
const char *sc_interval_kind_name(sc_interval_kind kind);
const char *sc_schedule_kind_name(sc_schedule_kind kind);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_SCHEDULE_H */
