/*
 * Reports: one result struct (sc_result) and its renderings: an aligned table for people,
 * JSON ("schema_version": 1), CSV (header + rows, shared with the sweep), a Chrome /
 * Perfetto trace of the predicted iteration, and an SVG stacked bar of the breakdown.
 *
 * Renderers write to a FILE* the caller owns (library code never opens stdout); each
 * returns SC_OK, SC_EINVAL for a NULL or inconsistent argument, or SC_EIO when the stream
 * reports a write error (err names the renderer).
 */
#ifndef STEPCAST_REPORT_H
#define STEPCAST_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/schedule.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SC_REPORT_SCHEMA_VERSION 1

/* Memory per GPU by category, bytes (the worst GPU, usually pipeline stage 0). */
typedef struct sc_memory_usage {
  double weights_bytes;
  double grads_bytes;
  double optimizer_bytes;       /* optimizer states (+ fp32 master weights) */
  double activations_bytes;     /* peak stored activations (all in-flight micro-batches) */
  double other_bytes;           /* workspace + fragmentation + context + communication
                                   (the four below; stepcast/memory.h) */
  double total_bytes;           /* sum of the above: the device figure (nvidia-smi);
                                   sc_result_finish fills it when 0 */
  double capacity_bytes;        /* device memory (0 = unknown) */
  /* The parts of other_bytes (stepcast/memory.h, sc_memory_overhead) */
  double workspace_bytes;       /* cuBLAS/cuBLASLt/Transformer Engine workspaces */
  double fragmentation_bytes;   /* the caching allocator's reserve beyond what it hands out */
  double context_bytes;         /* CUDA context */
  double comm_bytes;            /* NCCL (and NVLS, userbuffers) buffers */
  uint32_t communicators;       /* NCCL communicators that carry traffic */
} sc_memory_usage;

/* One prediction. The caller fills the inputs and primary quantities; sc_result_finish
 * derives the rest. Strings are copied in (no pointers to keep alive). */
typedef struct sc_result {
  /* inputs, echoed */
  char model[SC_NAME_MAX];
  char topology[SC_NAME_MAX];
  char hardware[SC_NAME_MAX];
  char estimator[32];           /* "analytical", "hybrid", "learned" */
  char estimator_source[320];   /* why that one (sc_predict_opts.estimator_source); "" */
  int coll_residuals;           /* 1: the collectives went through the topology's fitted
                                   residuals too (estimate.h, stepcast fit --comm) */
  char stack[64];               /* the software stack (stepcast/stack.h); "" = none */
  uint32_t gpus;                /* tp * pp * dp * cp */
  sc_parallel parallel;
  /* primary */
  double iteration_s;
  sc_sched_breakdown breakdown; /* of the critical stage; terms sum to iteration_s */
  double model_flops;           /* per iteration, whole job, without recomputation */
  double hardware_flops;        /* per iteration, whole job, with recomputation */
  double peak_flops_per_s;      /* dense peak of one GPU in parallel.dtype */
  sc_memory_usage memory;
  double token_budget;          /* tokens to train on (0 = not asked) */
  double board_power_w;         /* the device's power limit, W (0 = not stated: no energy) */
  double power_fraction;        /* share of it drawn on average, (0, 1] (0 read as 1) */
  double pue;                   /* power usage effectiveness, >= 1 (0 read as 1) */
  double price_per_gpu_hour;    /* money per GPU-hour (0 = no cost) */
  /* derived by sc_result_finish */
  uint32_t microbatches;
  double tokens_per_iteration;  /* global_batch * seq_len */
  double tokens_per_s;
  double model_tflops_per_gpu;  /* model_flops / (gpus * iteration_s) / 1e12 */
  double hardware_tflops_per_gpu;
  double mfu;                   /* model FLOP/s per GPU / peak, in [0, 1] normally */
  double hfu;
  double time_to_train_s;       /* token_budget / tokens_per_s (0 when no budget) */
  double gpu_hours;             /* time_to_train_s * gpus / 3600 (0 when no budget) */
  double energy_j;              /* gpus * board_power_w * power_fraction * pue *
                                   time_to_train_s (0 when no budget or no board power) */
  double cost;                  /* gpu_hours * price_per_gpu_hour (0 when either is 0) */
} sc_result;

/* Derive microbatches, tokens, throughput, MFU/HFU, memory total and time to train.
 * SC_EINVAL naming the field when iteration_s <= 0 or non-finite, gpus == 0 or not
 * tp*pp*dp*cp, global_batch or seq_len zero, peak_flops_per_s < 0, a negative FLOP count
 * or memory figure, or breakdown terms that do not sum to iteration_s (1e-9 relative). */
int sc_result_finish(sc_result *r, sc_error *err);

/* One term of the breakdown, for renderers (and callers that draw their own). */
typedef struct sc_report_term {
  char key[48];                 /* "compute.gemm", "tp_exposed", "bubble", ... */
  char label[48];               /* "compute: gemm", "TP comm (exposed)", ... */
  double seconds;
} sc_report_term;

/* The breakdown as a list of terms summing to iteration_s: compute by family when the
 * breakdown has families (else forward / recomputation / backward), then exposed TP, CP,
 * DP and P2P communication, pipeline bubble and optimizer. Writes at most cap terms and
 * returns how many there are. */
size_t sc_report_terms(const sc_sched_breakdown *b, sc_report_term *out, size_t cap);

/* Write s (NULL reads as "") as a JSON string: quotes, backslash and control characters
 * escaped (RFC 8259 section 7), other bytes as they are. Shared by every JSON writer. */
void sc_json_string(FILE *out, const char *s);

/* Human-readable aligned table with units (ms, TFLOP/s, GiB, days). */
int sc_report_table(FILE *out, const sc_result *r, sc_error *err);

/* JSON object with "schema_version": 1 (docs/formats.md#report; every field in
 * docs/schemas/predict.json); strings escaped, non-finite numbers written as null. */
int sc_report_json(FILE *out, const sc_result *r, sc_error *err);

/* CSV: a header line and one row per result, fixed columns (sc_report_csv_columns()),
 * RFC 4180 quoting. compute_by_family is one column "name=seconds;...". */
size_t sc_report_csv_columns(void);
int sc_report_csv_header(FILE *out, sc_error *err);
int sc_report_csv_row(FILE *out, const sc_result *r, sc_error *err);
/* Header and one row. */
int sc_report_csv(FILE *out, const sc_result *r, sc_error *err);

/* Chrome trace-event JSON of a simulated iteration (loadable in ui.perfetto.dev and
 * chrome://tracing): pid = pipeline stage, tid = stream (compute, TP, CP, DP, P2P next,
 * P2P prev, optimizer) with process_name / thread_name metadata, "X" events in
 * microseconds, and "s"/"f" flow arrows from every pipeline send to the pass that
 * consumed it. s must come from a run with record_timeline (SC_EINVAL otherwise). r may be
 * NULL; when given its inputs are written as trace metadata. */
int sc_report_trace(FILE *out, const sc_sched_result *s, const sc_result *r, sc_error *err);

/* ---- The operator-level timeline (stepcast predict --timeline, docs/cli.md) ---- */

/* What a pass of a virtual stage runs, one entry per operator or collective of its workload
 * (stepcast/workload.h), as the predictor priced it (sc_predict_timeline fills them). */
typedef enum {
  SC_TL_FWD = 0,        /* per micro-batch: the forward */
  SC_TL_BWD,            /* the backward (its weight-gradient GEMMs are the W of ZB-H1 and
                           DualPipe) */
  SC_TL_RECOMPUTE,      /* the recomputation before the backward */
  SC_TL_ITER            /* once per iteration: optimizer step, data-parallel collectives */
} sc_timeline_list;

typedef struct sc_timeline_item {
  char label[32];             /* the workload's label ("qkv", "attn_proj.rs", "adam") */
  const char *family;         /* operator family (a static SC_OP_* name), or "comm" */
  uint32_t variant;           /* the family's variant (operators) */
  sc_dtype dtype;
  uint32_t ndims;
  int64_t dims[SC_OP_MAX_DIMS];
  uint8_t list;               /* sc_timeline_list */
  uint8_t layer;              /* 1: one instance per layer (repeat = the layers it covers) */
  uint8_t wgrad;              /* 1: a weight-gradient GEMM (the W pass) */
  uint8_t is_coll;            /* 1: a collective (kind, group, nranks below) */
  uint8_t coll_kind;          /* sc_coll_kind */
  uint8_t group;              /* sc_group_kind */
  uint8_t param_gather;       /* SC_TL_ITER collectives: 1 a parameter all-gather (before the
                                 first forwards), 0 a gradient reduction */
  uint8_t pad;
  uint32_t nranks;
  uint32_t repeat;            /* instances per pass (per iteration for SC_TL_ITER) */
  double flops, bytes;        /* one instance, as the plugin counts them (collectives: bytes
                                 per rank, nccl-tests' convention; no FLOPs) */
  double time_s;              /* one instance as the prediction priced it (estimator, stack);
                                 0 for a collective of one rank or no bytes (not run) */
} sc_timeline_item;

/* One virtual stage: what the schedule was given and its items. */
typedef struct sc_timeline_chunk {
  sc_sched_chunk times;       /* the schedule's input (its family-split pointers NULL) */
  size_t first, count;        /* items[first .. first + count): the forward's, backward's,
                                 recomputation's and per-iteration lists, each in execution
                                 order (a run of per-layer entries repeats layer by layer) */
  double p2p_fwd_bytes;       /* one micro-batch's activation send (0: last virtual stage) */
  double p2p_bwd_bytes;       /* its gradient send (0: first virtual stage) */
  sc_dtype p2p_dtype;
} sc_timeline_chunk;

typedef struct sc_timeline_detail {
  sc_schedule_kind schedule;
  uint32_t pp, vp;
  uint32_t nchunks;           /* pp * vp, by virtual stage c * pp + r; DualPipe: pp, model
                                 stage s (run on ranks s and pp - 1 - s) */
  const sc_timeline_chunk *chunks;
  const sc_timeline_item *items;
  size_t nitems;
} sc_timeline_detail;

/* The name an operator-level slice carries, written as its kernels are named so that the
 * trace classifier (stepcast/trace.h, sc_trace_classify) files it under the family a
 * profiler trace's kernels of that operator come under: "gemm qkv", "flash_attn_fwd
 * attn_core", "layer_norm_fwd norm1", "softmax attn_softmax", "elementwise_kernel mlp_gelu",
 * "embedding embed", "cross_entropy cross_entropy", "multi_tensor_apply_adam adam",
 * "copy moe_permute", "ncclDevKernel_AllReduce attn_proj.ar". Cut to cap - 1 bytes. */
void sc_report_item_name(const sc_timeline_item *it, char *buf, size_t cap);

/* Most operator and collective slices one timeline may hold (about 300 MB of JSON). */
#define SC_REPORT_TRACE_MAX_OP_SLICES 1000000u

/* sc_report_trace at operator level: the same document, and inside every forward,
 * recomputation, backward and W slice of the micro-batches below op_microbatches (each
 * stage and chunk; each direction under DualPipe) one child slice per operator instance of
 * its workload in execution order (d's items; names by sc_report_item_name; args: family,
 * label, shape, dtype, FLOPs, bytes, the estimate), laid end to end with their estimates
 * scaled to fill the pass's compute (they sum to it exactly, in the file's nanoseconds),
 * then, where the slice holds communication the compute did not hide, one child each for
 * the exposed TP, CP and DP part; inside every TP, CP and sharded-DP slice of those
 * micro-batches one child per collective instance of the pass (TP, EP and ETP collectives
 * on the TP stream), inside every send its send/recv, and inside every per-iteration DP
 * bucket and optimizer step (whatever op_microbatches) its collectives and operators.
 * Children lie inside their parent on the parent's row (Perfetto nests them). d NULL or
 * op_microbatches 0: exactly sc_report_trace. SC_EINVAL when d does not match s (stage
 * and chunk counts, schedule), SC_ERANGE when the slices would be more than
 * SC_REPORT_TRACE_MAX_OP_SLICES (nothing written), else as sc_report_trace. */
int sc_report_trace_ops(FILE *out, const sc_sched_result *s, const sc_result *r,
                        const sc_timeline_detail *d, uint32_t op_microbatches, sc_error *err);

/* SVG stacked bar of the breakdown of the critical stage: one rect (class "term") per
 * term of sc_report_terms, a time axis with ticks, labels and a legend. */
int sc_report_svg(FILE *out, const sc_result *r, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_REPORT_H */
