/* Internal pieces of the sweep (core/src/sweep/ only, and its tests). */
#ifndef SC_SWEEP_INT_H
#define SC_SWEEP_INT_H

#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/sweep.h"
#include "stepcast/workload.h"
#include "predict/compose.h"

/* What one virtual stage computes, as the predictor fills its sc_sched_chunk (family
 * pointers left NULL), its family splits (fwd, bwd, recompute), its per-iteration
 * optimizer time and its model FLOPs per micro-batch (fwd, bwd, recompute). */
typedef struct sc__sweep_chunk_val {
  sc_sched_chunk ch;
  double fam[3 * SC__NFAM];
  double t_opt;
  double flops[3];
} sc__sweep_chunk_val;



/* Operator times on the sweep's one device: a memo keyed by the family literal's address,
 * variant, dtype and dims (the registry's memo also hashes the device name and the
 * family string; this one is a few times cheaper). A miss asks the registry, so the
 * time is the registry's own. Cleared when half full. */
#define SC__SWEEP_OMEMO 8192u /* power of two */
typedef struct sc__sweep_omemo_key {
  const char *family;
  uint32_t variant, dtype, ndims, flags;
  int64_t dims[SC_OP_MAX_DIMS];
} sc__sweep_omemo_key;
typedef struct sc__sweep_omemo {
  uint32_t n;
  uint8_t used[SC__SWEEP_OMEMO];
  sc__sweep_omemo_key key[SC__SWEEP_OMEMO];
  double time_s[SC__SWEEP_OMEMO];
} sc__sweep_omemo;

/* The two parts of what a virtual stage computes, from its workload w (as
 * sc_workload_stage filled it), each as sc_predict computes it. The micro part (fwd_s,
 * bwd_s, recompute_s, TP/CP comm, family splits, FLOPs) depends on tp, cp, micro-batch,
 * sequence parallel, recomputation, the chunk's layers and position, and the TP and CP
 * spans; not on dp or pp. The iteration part (optimizer, DP reductions and parameter
 * gather, pipeline sends) depends on dp, pp, the distributed optimizer, the chunk's layers
 * and position. Each fills only its own fields of *out. cm and om may be NULL. */
int sc__sweep_chunk_micro(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                          const sc_device *dev, const sc__spans *sp, const char *algo,
                          sc__collmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                          sc_error *err);
int sc__sweep_chunk_iter(sc_registry *reg, const sc_stage_work *w, const sc_topology *t,
                         const sc_device *dev, const sc__spans *sp, const char *algo,
                         sc__collmemo *cm, sc__sweep_omemo *om, sc__sweep_chunk_val *out,
                         sc_error *err);

/* The worst stage's memory as sc_predict's fill_memory finds it (its overhead with stack s
 * on topology t: stepcast/memory.h); SC_ENOFIT (no message) when sc_memory_refused refuses
 * it (and allow_oom is 0). */
int sc__sweep_memory(const sc_model *m, const sc_parallel *p, const sc_topology *t,
                     const sc_device *dev, const sc_stack *s, int allow_oom,
                     sc_memory_usage *mu, sc_error *err);

/* A lower bound on the simulated iteration time from the chunk times alone: every rank
 * runs its passes one after another, the first of them not before the first micro-batch
 * has gone through the virtual stages before it (and the parameter all-gather, when not
 * overlapped), then its gradient reduction (when not overlapped) and its optimizer step.
 * ZB-H1 exposes at least as much as the bound counts (its B passes hide communication
 * under less compute); DualPipe counts each rank's two copies, mb/2 micro-batches each,
 * without TP and CP communication (its F&B pairs may hide all of it). */
double sc__sweep_lower_bound(const sc_parallel *p, uint32_t mb, const sc_sched_chunk *chunks,
                             const double *opt_s);

#endif
