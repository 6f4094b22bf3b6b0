/*
 * End-to-end prediction of one training iteration: model + parallel configuration →
 * workload (per-stage operators and collectives) → estimates (operator plugins on the
 * device, collective plugins over the topology's tiers) → event simulation of the pipeline
 * schedule → an sc_result ready for the report renderers.
 *
 * A predictor holds what repeated predictions share: the registry (whose memo answers
 * repeated operator and collective questions with a hash lookup), the schedule workspace
 * and scratch space for one stage's workload. Sweeps keep one predictor per thread.
 */
#ifndef STEPCAST_PREDICT_H
#define STEPCAST_PREDICT_H

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/registry.h"
#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How operator times are estimated. Only the analytical roofline exists until residual
 * models are fitted for a device (stepcast fit); the others are refused with a message. */
typedef enum {
  SC_ESTIMATOR_ANALYTICAL = 0,
  SC_ESTIMATOR_HYBRID,
  SC_ESTIMATOR_LEARNED
} sc_estimator;

/* "analytical", "hybrid", "learned"; sc_estimator_parse: SC_EINVAL for anything else. */
const char *sc_estimator_name(sc_estimator e);
int sc_estimator_parse(const char *s, sc_estimator *out);

typedef struct sc_predictor sc_predictor;

/* A predictor using reg (borrowed: it must outlive the predictor). SC_ENOMEM on failure. */
int sc_predictor_new(sc_registry *reg, sc_predictor **out, sc_error *err);
void sc_predictor_free(sc_predictor *pr);

/* Options of one prediction beyond the parallel configuration. */
typedef struct sc_predict_opts {
  sc_estimator estimator;
  const char *coll_algo;      /* "auto" (NULL means auto), "ring", "tree", ... */
  double token_budget;        /* tokens to train on, for time to train (0 = not asked) */
  /* The budget's energy and cost (stepcast/report.h, sc_result): the share of the board's
   * power the GPUs draw on average (0 = 1: its power limit, the convention of Meta's Llama
   * model cards), the data centre's power usage effectiveness (0 = 1: the GPUs alone) and a
   * price per GPU-hour (0 = no cost). */
  double power_fraction, pue, price_per_gpu_hour;
  int record_timeline;        /* keep the simulated intervals (for --timeline) */
  int allow_oom;              /* 1: predict even when memory is refused (past the device's
                                 capacity by more than SC_MEMORY_REFUSE_MARGIN) */
  /* Fitted residual models of the device (stepcast/estimate.h, borrowed) for the hybrid and
   * learned estimators; NULL = none (then only 'analytical' is accepted). */
  const struct sc_residuals *residuals;
  /* Fitted collective residual models of the topology (stepcast fit --comm, borrowed),
   * applied to every collective under the hybrid and learned estimators; NULL = the
   * collectives stay analytical under every estimator. */
  const struct sc_residuals *coll_residuals;
  /* The software stack (stepcast/stack.h, borrowed): kernels and traffic per operator and
   * the host's dispatch time; NULL = one kernel per operator and a host that keeps up. */
  const struct sc_stack *stack;
  /* Why the estimator is the one used, copied into the result for the output (e.g. "the
   * default where the device has fitted residuals: DIR"); NULL or "" when it was stated. */
  const char *estimator_source;
} sc_predict_opts;

void sc_predict_opts_defaults(sc_predict_opts *o);

/* Predict one iteration of model m with parallel configuration p on topology t whose GPUs
 * are dev. p->tp * p->pp * p->dp * p->cp GPUs are used and must be placeable on t.
 * On success fills *res (sc_result_finish applied) and, when sched is not NULL, the
 * schedule result (its arrays live in the predictor until the next call or its free).
 * Errors, each one line naming the parameter:
 *   SC_ECONFIG  impossible configuration (tp not dividing heads, batch not divisible, ...);
 *   SC_ENOFIT   the busiest GPU's device figure (model states, activations and the
 *               overhead of stepcast/memory.h) is refused by sc_memory_refused: past
 *               dev->mem_bytes by more than SC_MEMORY_REFUSE_MARGIN of it (unless allow_oom),
 *               with the figures by category;
 *   SC_EUNSUPPORTED  the dtype has no peak on dev, or a non-analytical estimator has no
 *               fitted residual;
 *   SC_ENOTFOUND a plugin for an operator family or collective kind is missing. */
int sc_predict(sc_predictor *pr, const sc_model *m, const sc_topology *t, const sc_device *dev,
               const sc_parallel *p, const sc_predict_opts *o, sc_result *res,
               sc_sched_result *sched, sc_error *err);

/* What the last sc_predict call on pr made with record_timeline priced, for the
 * operator-level timeline (stepcast/report.h, sc_report_trace_ops) and `stepcast trace
 * compare`: per virtual stage the schedule's inputs and every operator and collective of its
 * workload with its estimate (one instance, as the prediction priced it). The arrays belong
 * to pr and stay valid until its next sc_predict or its free. SC_EINVAL when the last call
 * did not record a timeline or failed. */
int sc_predict_timeline(const sc_predictor *pr, sc_timeline_detail *out, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_PREDICT_H */
