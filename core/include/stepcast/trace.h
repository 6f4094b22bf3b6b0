/*
 * Trace-driven mode (after Lumos, MLSys 2025): a PyTorch profiler (Kineto) Chrome-trace
 * JSON file per rank becomes a dependency graph whose nodes carry measured durations;
 * replay is an event simulation of that graph; what-if edits change node durations or
 * edges before replaying. Formats, rules and the kernel classification table:
 * docs/trace.md.
 *
 * Times are SI seconds in the public structs. A loaded trace owns its events and strings;
 * a replay result borrows the traces it was made from (free the result first).
 */
#ifndef STEPCAST_TRACE_H
#define STEPCAST_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stepcast/plugin.h"
#include "stepcast/predict.h"
#include "stepcast/registry.h"
#include "stepcast/report.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of event kept from a trace ("ph": "X" with these "cat"s). */
typedef enum {
  SC_TRACE_CPU_OP = 0,    /* cat cpu_op: an aten/torch operator on a CPU thread */
  SC_TRACE_ANNOTATION,    /* cat user_annotation: ProfilerStep#N, nn.Module, record_function */
  SC_TRACE_RUNTIME,       /* cat cuda_runtime / cuda_driver: cudaLaunchKernel, sync, ... */
  SC_TRACE_KERNEL,        /* cat kernel: a GPU kernel on a stream */
  SC_TRACE_MEMCPY,        /* cat gpu_memcpy */
  SC_TRACE_MEMSET,        /* cat gpu_memset */
  SC_TRACE_SYNC,          /* cat cuda_sync: what a sync or stream-wait call waited on */
  SC_TRACE_KIND_COUNT
} sc_trace_kind;

/* Name of a kind ("cpu_op", "user_annotation", "cuda_runtime", "kernel", "gpu_memcpy",
 * "gpu_memset", "cuda_sync"); "?" outside the enum. */
const char *sc_trace_kind_name(sc_trace_kind k);

typedef struct sc_trace sc_trace;

/* What a loaded trace holds. */
typedef struct sc_trace_info {
  uint64_t events;                       /* elements of traceEvents */
  uint64_t kept;                         /* events kept (sum of by_kind) */
  uint64_t by_kind[SC_TRACE_KIND_COUNT];
  uint64_t skipped;                      /* events of other phases or categories */
  uint64_t skipped_kinds;                /* distinct "ph/cat" pairs among the skipped */
  uint64_t json_bytes;                   /* uncompressed JSON bytes read */
  uint64_t legacy;                       /* kept events of PyTorch 1.8-1.9 category names
                                            ("Operator", "Runtime", "Kernel", "Memcpy",
                                            "Memset"), read as the current kinds */
  int32_t rank;                          /* distributedInfo.rank (-1 when absent) */
  int32_t world_size;                    /* distributedInfo.world_size (0 when absent) */
  char device_name[64];                  /* deviceProperties[0].name ("" when absent) */
} sc_trace_info;

/* Read one rank's trace: Chrome-trace JSON, plain or gzip-compressed (read through
 * zlib's gzread in chunks and parsed streaming with yajl: memory grows with the events
 * kept, not with the file). Keeps the kinds above (and their PyTorch 1.8-1.9 names, with
 * string thread ids; a ProfilerStep#N operator is kept as an annotation), counts and
 * skips everything else. Loading does not judge whether anything can be replayed:
 * sc_trace_replay does.
 * Errors (one line, naming path and the byte offset in the uncompressed JSON):
 * SC_EIO (cannot open; gzip stream truncated or corrupt), SC_EPARSE (malformed or
 * truncated JSON, a key with the wrong type, no "traceEvents" array), SC_ENOMEM.
 * *out is NULL on failure; free with sc_trace_free. */
int sc_trace_load(const char *path, sc_trace **out, sc_error *err);

/* Same, from a buffer of JSON (not gzip); name is used in messages. For tests and fuzzing. */
int sc_trace_load_mem(const char *name, const void *json, size_t len, sc_trace **out,
                      sc_error *err);

void sc_trace_free(sc_trace *t);

/* Counts of t (never fails on a loaded trace). */
void sc_trace_get_info(const sc_trace *t, sc_trace_info *out);

/* The i-th distinct skipped "ph/cat" pair (e.g. "f/ac2g") and how many events had it;
 * SC_ENOTFOUND past the last. *kind is owned by t. */
int sc_trace_skipped_kind(const sc_trace *t, size_t i, const char **kind, uint64_t *count);

/* Families of GPU work, by kernel name (table in docs/trace.md). */
typedef enum {
  SC_KFAM_GEMM = 0,       /* matrix multiply and convolution (compute-bound) */
  SC_KFAM_ATTENTION,      /* fused attention (compute-bound) */
  SC_KFAM_NORM,           /* layer/batch/RMS norm, softmax (memory-bound) */
  SC_KFAM_ELEMENTWISE,    /* element-wise, reductions, copies, indexing (memory-bound) */
  SC_KFAM_OPTIMIZER,      /* fused optimizer updates (memory-bound) */
  SC_KFAM_COMM,           /* NCCL/RCCL collectives and send/recv */
  SC_KFAM_MEMCPY,         /* gpu_memcpy (device-to-device: memory-bound; host: unchanged) */
  SC_KFAM_MEMSET,         /* gpu_memset (memory-bound) */
  SC_KFAM_COUNT
} sc_kernel_family;

/* Family of a GPU event by its kind and name; "gemm", "attention", ... for the name. */
sc_kernel_family sc_trace_classify(sc_trace_kind kind, const char *name);
const char *sc_trace_family_name(sc_kernel_family f);

/* What-if edits. Zero-initialise, then set what changes. */
typedef struct sc_trace_edits {
  /* Data-parallel degree: collective kernels whose group had dp_from ranks are re-timed
   * for dp_to ranks: measured * predicted(dp_to) / predicted(dp_from), both predictions
   * by sc_comm_estimate over sc_comm_group_flat on topology with registry reg. 0 = no
   * change. dp_from 0 = the trace's world_size. */
  uint32_t dp_from, dp_to;
  const sc_topology *topology;
  sc_registry *reg;
  /* With coll_residuals (stepcast/estimate.h, borrowed; NULL = analytical), both
   * predictions of the dp edit are the estimator's (hybrid or learned): the topology's
   * collective residuals applied to sc_comm_estimate's time. */
  sc_estimator estimator;
  const struct sc_residuals *coll_residuals;
  /* Hardware: GPU kernels are rescaled by family, compute-bound ones by the ratio of
   * achievable peak FLOP/s (peak * flops_efficiency) of hw_from to hw_to at the kernel's
   * dtype (from its name, else default_dtype), memory-bound ones by the ratio of
   * achievable bandwidth (mem_bw_Bps * mem_efficiency). NULL = no change (both or none). */
  const sc_device *hw_from, *hw_to;
  sc_dtype default_dtype;
  /* Overlap: 1 = every communication kernel runs on its rank's compute stream (the
   * stream with the most kernel time), in measured start order: no overlap. */
  int serialize_comm;
} sc_trace_edits;

/* The layers edit (docs/trace.md, "Changing the number of layers"): what was found. */
typedef struct sc_trace_layers_info {
  uint32_t layers;         /* L: repetitions of the unit found in every iteration */
  uint32_t unit_ops;       /* CPU operators (top level of the unit) per unit, first block */
  uint32_t blocks;         /* repeating blocks edited per iteration (forward, backward) */
  uint32_t iterations;     /* iterations edited */
  uint64_t scaled_comm;    /* collectives outside the units scaled by N/L (bucketed) */
  int by_module;           /* 1: the unit is an nn.Module annotation; 0: operator sequence */
} sc_trace_layers_info;

/* Layers edit: find in every iteration (ProfilerStep#N, else the whole trace) of in the
 * longest run of L >= 2 consecutive repetitions of one unit (an identical sequence of CPU
 * operators with their launched GPU kernels; "nn.Module: Name_i" annotations compare
 * without their index) and the mirrored run with the same count (backward), then remove
 * (layers_to < L) or duplicate (layers_to > L) whole units, shifting later events so the
 * graph built by sc_trace_replay rewires around them; communication kernels outside the
 * units from the first unit of the last block on (bucketed gradient collectives) get
 * duration and bytes times layers_to / L. layers_to == L gives an identical copy. *out
 * owns its events; free with sc_trace_free. info may be NULL.
 * Errors: SC_EINVAL (NULL, layers_to 0), SC_ECONFIG (no repetition in an iteration, or
 * iterations with different counts: one line naming the file), SC_ENOMEM. */
int sc_trace_edit_layers(const sc_trace *in, uint32_t layers_to, sc_trace **out,
                         sc_trace_layers_info *info, sc_error *err);

/* One ProfilerStep#N span of one rank. */
typedef struct sc_trace_iter {
  char name[48];          /* "ProfilerStep#1009" */
  int32_t rank;           /* index of the trace in the list given to sc_trace_replay */
  double measured_s;      /* the span's measured duration */
  double replayed_s;      /* the span's duration in the replay */
  /* Replayed GPU time of the span, by what the rank's GPU did (they sum to replayed_s):
   * compute kernels active; only communication active (exposed); only memcpy/memset;
   * nothing (idle). Holistic Trace Analysis's temporal breakdown is idle_s, compute_s
   * and non-compute = comm_exposed_s + memory_s. */
  double compute_s, comm_exposed_s, memory_s, idle_s;
  /* Lumos's four-way breakdown (they sum to replayed_s): compute kernels without
   * communication; compute and communication at once; communication without compute
   * (= comm_exposed_s); neither (idle, or only memcpy/memset: memory_s + idle_s). */
  double exposed_compute_s, overlapped_s, exposed_comm_s, other_s;
  /* HTA's communication/computation overlap: 100 * overlapped_s / (time any
   * communication kernel runs); NAN when no communication kernel runs in the span. */
  double comm_overlap_pct;
} sc_trace_iter;

/* Counts of the dependency graph. */
typedef struct sc_trace_graph_info {
  uint64_t nodes;          /* events replayed (CPU and GPU) */
  uint64_t edges;          /* dependency edges in all */
  uint64_t launch_edges;   /* runtime call -> GPU op, by correlation id */
  uint64_t stream_edges;   /* consecutive ops of one stream */
  uint64_t event_edges;    /* cudaEventRecord -> cudaStreamWaitEvent across streams */
  uint64_t sync_edges;     /* GPU op -> end of a blocking CPU call */
  uint64_t inferred_edges; /* GPU op -> GPU op of another stream, inferred from timing
                              where the trace records no cuda_sync (docs/trace.md) */
  uint64_t collectives;    /* collectives matched across ranks (0 with one rank):
                              coll_by_key + coll_by_order */
  uint64_t unmatched_waits;/* stream waits or event syncs whose record was not found */
  /* Matching communication kernels across ranks (docs/trace.md, "Collectives"): */
  uint64_t coll_by_key;    /* matched by process group and sequence number (collectives)
                              or by the pair of ranks and their order (send/recv) */
  uint64_t coll_by_order;  /* matched by their order on each rank's stream: the trace
                              states no process group and sequence number */
  uint64_t order_refused;  /* pairs by order refused: their ends disagree once the ranks'
                              clocks are aligned, so they are not one collective */
  uint64_t p2p_unpaired;   /* send/recv kernels without a peer or a sequence number: not
                              matched, kept as measured */
  uint64_t comm_alone;     /* communication kernels with no counterpart in the other
                              traces (their group's other ranks not given), as measured */
  /* Communication kernels whose collective kind (all-reduce, ...) nothing states: not the
   * kernel's name (ncclDevKernel_Generic), nor a "Collective name" of the kernel or of
   * its enclosing record_param_comms, nor an enclosing nccl:<kind> annotation. They are
   * taken as all-reduce. The first such kernel's rank (-1: none) and name. */
  uint64_t kind_guessed;
  int32_t kind_guessed_rank;
  char kind_guessed_name[64];
} sc_trace_graph_info;

typedef struct sc_trace_result sc_trace_result;

/* Build the graph of traces[0..ntraces) (one per rank; their communication kernels are
 * matched across ranks by process group and sequence number where the traces state them,
 * else by their order within each stream, refusing pairs whose ends disagree once the
 * clocks are aligned on collective ends: docs/trace.md) and replay it: every node starts
 * when its predecessors have finished (plus, on a CPU thread, the measured gap before it),
 * lasting its measured duration, or the edited one when edits is not NULL. The traces are
 * borrowed and must outlive *out.
 * Errors: SC_EINVAL (no traces, NULL), SC_EPARSE (a trace with nothing to replay: no GPU
 * kernel, memcpy or memset, no span, or no GPU work inside its ProfilerStep spans; a
 * dependency cycle: inconsistent timestamps), SC_ECONFIG (an edit that cannot apply: dp
 * edit without topology or registry; collectives of different kinds matched across ranks),
 * SC_ENOMEM, and those of sc_comm_estimate. Each message is one line naming the file.
 * Free with sc_trace_result_free. */
int sc_trace_replay(sc_trace *const *traces, size_t ntraces, const sc_trace_edits *edits,
                    sc_trace_result **out, sc_error *err);

void sc_trace_result_free(sc_trace_result *r);

/* The ProfilerStep#N spans, in rank then time order (borrowed from r). */
const sc_trace_iter *sc_trace_result_iters(const sc_trace_result *r, size_t *n);
void sc_trace_result_graph(const sc_trace_result *r, sc_trace_graph_info *out);

/* Write the replayed timeline as Chrome trace JSON: pid = rank, tid = CPU thread or
 * "stream N", "X" events in microseconds from the earliest replayed event. SC_EIO when
 * writing fails. */
int sc_trace_timeline(FILE *out, const sc_trace_result *r, sc_error *err);

/* ---- Side by side with a prediction: stepcast trace compare (docs/trace.md) ---- */

/* The rows of a comparison: the kernel families (sc_kernel_family), then the kernels the
 * family table files under elementwise only because no family's name pattern matched
 * ("unmapped": reported, never dropped). */
#define SC_TRACE_CMP_UNMAPPED SC_KFAM_COUNT
#define SC_TRACE_CMP_ROWS (SC_KFAM_COUNT + 1)
#define SC_TRACE_CMP_MAX_OPFAM 16

/* "gemm", ... as sc_trace_family_name, and "unmapped"; "?" out of range. */
const char *sc_trace_compare_row_name(size_t row);

/* One step of one rank, measured and predicted. */
typedef struct sc_trace_cmp_step {
  char name[48];             /* "ProfilerStep#4", or "trace" (no ProfilerStep#N: the whole file) */
  int32_t rank;              /* index of the trace in the list */
  int32_t global_rank;       /* the rank its stage is found from: distributedInfo.rank, else
                                the index */
  uint32_t stage;            /* its pipeline stage in the predicted job */
  double measured_s;         /* the span's measured duration */
  double predicted_s;        /* the predicted iteration */
  uint64_t kernels[SC_TRACE_CMP_ROWS];      /* GPU events (kernels, memcpy, memset) */
  double measured_row_s[SC_TRACE_CMP_ROWS]; /* the sum of their durations */
  double predicted_row_s[SC_TRACE_CMP_ROWS];/* the prediction's operators and collectives of the
                                 stage, one iteration (time x repeat x micro-batches), filed
                                 under the family their kernels' names come under
                                 (sc_report_item_name); the unmapped row is 0 */
  double gpu_measured_s, gpu_predicted_s;   /* the rows' sums */
  /* The predicted rows by the prediction's own operator families ("gemm", "softmax",
   * "embedding", ..., "comm"), with the row each is filed under. */
  uint32_t nopfam;
  char opfam[SC_TRACE_CMP_MAX_OPFAM][24];
  uint8_t opfam_row[SC_TRACE_CMP_MAX_OPFAM];
  double opfam_s[SC_TRACE_CMP_MAX_OPFAM];
} sc_trace_cmp_step;

typedef struct sc_trace_compare sc_trace_compare;

/* Line traces[0..ntraces) (one per rank of one job) up against a prediction of that job:
 * res and d from one sc_predict call with record_timeline (stepcast/predict.h,
 * sc_predict_timeline). Per trace its steps (ProfilerStep#N annotations, else the whole
 * trace as one span "trace"); a GPU event belongs to the step whose span holds the runtime
 * call that launched it (by correlation id), else its own start; events of no step are
 * counted apart (sc_trace_compare_outside). Each trace's rank (distributedInfo.rank, else
 * its index in the list) gives its pipeline stage through res->parallel's group order.
 * The traces are borrowed for the call only. Errors: SC_EINVAL (NULL, no traces, d not of
 * res's configuration), SC_ECONFIG (a trace's rank past the job's GPUs), SC_EPARSE (a trace
 * without any GPU kernel, memcpy or memset), each one line naming the file; SC_ENOMEM.
 * Free with sc_trace_compare_free. */
int sc_trace_compare_run(sc_trace *const *traces, size_t ntraces, const sc_result *res,
                         const sc_timeline_detail *d, sc_trace_compare **out, sc_error *err);
void sc_trace_compare_free(sc_trace_compare *c);

/* The steps, in trace then time order (borrowed from c). */
const sc_trace_cmp_step *sc_trace_compare_steps(const sc_trace_compare *c, size_t *n);

/* The i-th distinct unmapped kernel name over every trace, by time (longest first), with its
 * count and total duration; SC_ENOTFOUND past the last. *name is owned by c. */
int sc_trace_compare_unmapped(const sc_trace_compare *c, size_t i, const char **name,
                              uint64_t *count, double *time_s);

/* GPU events of trace `rank` that lie in no step (before the first, between, after). */
void sc_trace_compare_outside(const sc_trace_compare *c, size_t rank, uint64_t *count,
                              double *time_s);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_TRACE_H */
