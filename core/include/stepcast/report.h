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

/* SVG stacked bar of the breakdown of the critical stage: one rect (class "term") per
 * term of sc_report_terms, a time axis with ticks, labels and a legend. */
int sc_report_svg(FILE *out, const sc_result *r, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_REPORT_H */
