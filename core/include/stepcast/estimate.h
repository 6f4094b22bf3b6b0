/*
 * Learned corrections of operator estimates (docs/learned.md).
 *
 *   samples   `stepcast sample` writes one CSV row per operator measured on a live device
 *             (family, variant, dtype, dims, repetitions, median and spread); the reader
 *             here also reads a measured table (family, variant, dtype, dims, measured_s),
 *             and in both a group column (rows timed together as one measurement), and
 *             rejects malformed files with "file:line: ..." messages.
 *   ridge     least squares with an L2 penalty on standardised features (LAPACKE_dposv on
 *             the normal equations).
 *   models    a regressor per operator family, of kind `linear` (ridge) or `gbdt`
 *             (XGBoost's C API, saved in XGBoost's JSON model format), with target `hybrid`
 *             (log(measured / analytical)) or `learned` (log(measured)).
 *   residuals the fitted models of one device: hardware/<device>/residuals/residuals.toml
 *             (linear coefficients inline, gbdt models in JSON files beside it), applied to
 *             the analytical estimate according to the estimator mode.
 *
 * Times are seconds; logarithms are natural. Library code: nothing here prints.
 */
#ifndef STEPCAST_ESTIMATE_H
#define STEPCAST_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stepcast/plugin.h"
#include "stepcast/predict.h"
#include "stepcast/spec.h"
#include "stepcast/stack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- samples ------------------------------------------------------------------------ */

/* The column header line every samples file carries (after its '#' comment lines). */
#define SC_SAMPLES_COLUMNS \
  "family,variant,dtype,ndims,d0,d1,d2,d3,d4,d5,d6,d7,reps,median_s,min_s,max_s,p10_s,p90_s"

/* The first line of a file stepcast sample writes, and its last: "# end = N rows", N the
 * rows it holds. sc_samples_read refuses a file whose first line is SC_SAMPLES_LIVE and whose
 * last line is not that count (a file cut short at a row boundary is still valid CSV). */
#define SC_SAMPLES_LIVE "# stepcast samples v1: operator times measured on the live device"
#define SC_SAMPLES_END "# end = "

typedef struct sc_sample {
  sc_op_desc op;           /* op.family points into the set's own storage */
  sc_measurement m;
  uint32_t line;           /* 1-based line of the file */
  uint32_t group;          /* 0: a measurement of its own; else 1 + the index of its name in
                              the set's groups (the rows of a group are one measurement) */
} sc_sample;

#define SC_SAMPLES_MAX_META 64

typedef struct sc_sample_set {
  sc_sample *rows;
  size_t n;
  /* "# key = value" header lines, in order (both owned). */
  size_t nmeta;
  char *meta_key[SC_SAMPLES_MAX_META];
  char *meta_value[SC_SAMPLES_MAX_META];
  /* The distinct family names the rows point at (owned), at most 64. */
  size_t nfamilies;
  char *families[64];
  /* The distinct group names (owned), in order of first appearance: row.group - 1 indexes
   * them. */
  char **groups;
  size_t ngroups;
} sc_sample_set;

/* Read a samples CSV. Lines starting with '#' are comments; those of the form
 * "# key = value" before the column header are kept as metadata. The first other line is
 * the column header, of one of two forms:
 *
 *   native  SC_SAMPLES_COLUMNS exactly, optionally followed by ",group", ",group,source" or
 *           ",source" (any other header is refused). Every row has those 18 (to 20) fields:
 *           a family name (an operator plugin's, [A-Za-z0-9_.-]+), variant (an integer in
 *           0..255) and ndims (1..8), a dtype name (sc_dtype_name), eight integer dims (the
 *           first ndims >= 0, the rest 0), reps in 1..1000000 and five finite times > 0
 *           with min <= p10 <= median <= p90 <= max.
 *   table   a measured table: columns (in any order, each named once) family, variant,
 *           dtype, dims, measured_s, and optionally group and source; any other column is
 *           refused. family, variant and dtype as above; dims "AxBx..." (1 to SC_OP_MAX_DIMS
 *           whole numbers below 2^62, ndims their count); measured_s a finite time > 0, which
 *           becomes median = min = max = p10 = p90 with reps = 1. A header is taken for a
 *           table when it names a column dims or measured_s.
 *
 * In both, a group cell is empty (the row is a measurement of its own) or a name of 1 to 47
 * characters: the rows with one group name, anywhere in the file and of any families, are
 * one measurement (their operators run together, timed once), so they must have the same
 * median_s (to 1e-9 relative); row.group is 1 + the name's index in out->groups. A source
 * cell (where the row came from) is free text of at most 200 characters and is not kept.
 *
 * Errors: SC_EIO (cannot open), SC_EPARSE with "file:line: column 'name': what is wrong"
 * (e.g. "group 'G' was measured as X s on line L: a group has one measured time"),
 * SC_ELIMIT (more than 64 families), SC_ENOMEM. On success *out owns its memory
 * (sc_samples_free). An empty file (no rows) is SC_EPARSE, and so is a native file of
 * stepcast sample (first line SC_SAMPLES_LIVE) without its SC_SAMPLES_END trailer or whose
 * count disagrees. */
int sc_samples_read(const char *path, sc_sample_set *out, sc_error *err);
void sc_samples_free(sc_sample_set *s);

/* 1 when a and b are the same operator: family, variant, dtype, dims and flags (a plan's
 * operator listed again, a second samples file's row of it). */
int sc_op_same(const sc_op_desc *a, const sc_op_desc *b);

/* "compute", "memory", "latency" or "bandwidth"; "?" out of range. */
const char *sc_bound_name(sc_bound b);

/* The value of metadata key in s, or NULL. */
const char *sc_samples_meta(const sc_sample_set *s, const char *key);

/* Write one row for op measured as m, in SC_SAMPLES_COLUMNS order, times with 6
 * significant digits. SC_EIO when the stream fails. */
int sc_samples_write_row(FILE *f, const sc_op_desc *op, const sc_measurement *m, sc_error *err);

/* A CPU GEMM's exposed operand traffic (sc_device_gemm_exposed_s) from microbenchmark
 * times. t_big is a square GEMM's time (f_big FLOPs, ws_big operand bytes e(mk + kn + mn));
 * t[j] for j < n are GEMMs with one small dimension (f[j] FLOPs, ws[j] operand bytes), the
 * last past the last-level cache, the others below it. With the model
 *     t = F / P + g ws / X,   g = ws / (ws + K)
 * the square and the last GEMM give P and X for a given K, each other GEMM the K that puts
 * it on the model; K is the median of those, and the three are solved in turn until K
 * settles (at most 50 rounds). SC_OK with *peak_flops_per_s = P, *bw_Bps = X and
 * *knee_bytes = K; SC_ENOTFOUND, outputs untouched, when the times show no exposure (P or X
 * not positive and finite, or no other GEMM between 0 and all of its traffic exposed);
 * SC_EINVAL when n < 2, n > 16 or an input is not positive and finite. */
int sc_gemm_exposure_solve(double f_big, double ws_big, double t_big, const double *f,
                           const double *ws, const double *t, int n, double *peak_flops_per_s,
                           double *bw_Bps, double *knee_bytes);

/* A CPU's cache-miss share by working set (sc_device.cache_miss_share) from STREAM Add
 * rates: rate[j] B/s (STREAM's count) at increasing working sets j < n, cache_Bps the
 * cache-resident rate, dram_Bps the rate past the caches (mem_bw_Bps). Each point's share is
 * the g with 1/rate = g/dram + (1-g)/cache, clamped to [0, 1]; the shares are then made
 * non-decreasing by pooling adjacent violators (the least-squares monotone fit: noise on one
 * point does not make a larger working set hit more). SC_OK with share[0..n); SC_EINVAL when
 * n < 1, n > SC_CACHE_CURVE_POINTS, cache_Bps <= dram_Bps or an input is not positive and
 * finite. */
int sc_cache_miss_curve(const double *rate, int n, double cache_Bps, double dram_Bps,
                        double *share);

/* ---- ridge regression --------------------------------------------------------------- */

/* Fit y ≈ intercept + sum_j coef[j] * (X[i][j] - mean[j]) / scale[j] for n rows of p
 * features (X row-major, n x p) with penalty lambda >= 0 on coef (not the intercept).
 * mean/scale are the columns' mean and standard deviation (1 for a constant column), and
 * are outputs. Solved with LAPACKE_dposv on (Z^T Z + lambda I) coef = Z^T (y - mean(y)).
 * Errors: SC_EINVAL (n < 1, p > SC_MAX_FEATURES, non-finite input), SC_ERANGE (the system
 * is singular: lambda = 0 with collinear features). */
int sc_ridge_fit(const double *X, const double *y, size_t n, uint32_t p, double lambda,
                 double *mean, double *scale, double *coef, double *intercept, sc_error *err);

/* ---- models ------------------------------------------------------------------------- */

/* The regressors see the plugin's features followed by SC_RESID_EXTRA_FEATURES derived from
 * the analytical estimate (as many as fit in SC_MAX_FEATURES): log10 of the analytical time,
 * hinges max(0, log10(bytes) - k) for k = 5, 6, 7, 8 (a piecewise-linear basis in the
 * working-set size, where caches end), and 1 when the roofline is compute bound. */
#define SC_RESID_EXTRA_FEATURES 6

/* Write the regressor's inputs for e into x (SC_MAX_FEATURES doubles); returns how many. */
uint32_t sc_resid_features(const sc_estimate *e, double *x);

/* Name of the i-th extra feature ("log10_analytical_s", "hinge_log10_bytes_5", ...). */
const char *sc_resid_extra_name(uint32_t i);

/* Bits (SC_FEATURE(j)) of the regressor inputs of operator plugin op that measure the
 * operator's scale: the plugin's own scale_features and, of the extra ones, the analytical
 * time and the byte hinges (compute_bound is shape). A hybrid residual leaves them unread
 * (sc_resid_model.unread; docs/learned.md, "Scale and shape features"). */
uint32_t sc_resid_scale_mask(const sc_op_plugin *op);

/* For the estimates of operator plugin op: how many inputs the regressors see
 * (sc_resid_features' count), and the name of the j-th (the plugin's feature names, then
 * the extra ones): what stepcast fit writes as a model's features and --estimator checks. */
uint32_t sc_resid_nfeatures(const sc_op_plugin *op);
const char *sc_resid_feature_name(const sc_op_plugin *op, uint32_t j);

typedef enum { SC_RESID_LINEAR = 0, SC_RESID_GBDT } sc_resid_kind;
typedef enum { SC_TARGET_HYBRID = 0, SC_TARGET_LEARNED } sc_resid_target;

/* "linear"/"gbdt", "hybrid"/"learned". */
const char *sc_resid_kind_name(sc_resid_kind k);
const char *sc_resid_target_name(sc_resid_target t);

/* Longest feature name a residual model keeps, with its NUL. */
#define SC_RESID_NAME_MAX 48
/* Most group shapes a collective residual model lists. */
#define SC_RESID_MAX_GROUPS 16
/* Operators a model keeps to recognise the roofline it was fitted against (sc_resid_model's
 * probes, residuals.toml's probe_ops / probe_analytical_s). */
#define SC_RESID_MAX_PROBES 3

typedef struct sc_resid_model {
  char family[32];
  sc_resid_kind kind;
  sc_resid_target target;
  uint32_t nfeatures;
  /* linear */
  double mean[SC_MAX_FEATURES], scale[SC_MAX_FEATURES], coef[SC_MAX_FEATURES];
  double intercept, lambda;
  /* Hybrid (residual) linear models: the range of the training targets, into which a
   * prediction is clamped (a residual never corrects by more than it was seen to, however far
   * a feature extrapolates). y_lo >= y_hi: no clamp (learned models, whose log time must
   * extrapolate, and a hybrid one fitted on a single residual value). */
  double y_lo, y_hi;
  /* Bit j (SC_FEATURE(j)) set: the model does not read feature j (held at 0 when fitting and
   * when predicting; a linear model's coefficient is 0 there). stepcast fit sets the scale
   * features of a hybrid residual (sc_resid_scale_mask); residuals.toml lists them as
   * `unread`; 0, every feature read, where it has none. */
  uint32_t unread;
  /* gbdt: an XGBoost booster handle (NULL for linear) */
  void *booster;
  /* cross-validated and held-out MAPE of the estimator this model makes (fractions) */
  double cv_mape, heldout_mape;
  int active;              /* the model the estimator uses for its (family, target) */
  /* The feature names residuals.toml lists for the model (the operator plugin's features,
   * then sc_resid_extra_name's), and where that list is (line, col). Empty names and line 0
   * for a model built in code: sc_residuals_check then compares the count only. */
  char feature_names[SC_MAX_FEATURES][SC_RESID_NAME_MAX];
  uint32_t features_line, features_col;
  uint32_t family_line, family_col; /* of 'family' (0: built in code) */
  /* Collective models: the group shapes of the rows they were fitted on (ranks, and the
   * nodes those ranks span), residuals.toml's group_ranks / group_nodes; a collective over
   * another shape keeps its analytical time. ngroups 0: operator models. */
  uint32_t ngroups;
  uint32_t group_ranks[SC_RESID_MAX_GROUPS], group_nodes[SC_RESID_MAX_GROUPS];
  /* The sampled domain: the analytical times (s) of the rows the model was fitted on,
   * residuals.toml's domain_analytical_s = [lo, hi] (dom_hi 0: not stated, the model is
   * used everywhere). beyond (residuals.toml's beyond = "model" | "analytical"): what the
   * estimator is outside it: 0 the model (its correction capped to the residuals it was
   * fitted on, for a hybrid one), 1 the analytical time. stepcast fit sets it from how the
   * model did on shapes larger than those it was fitted on (docs/learned.md, "The selection
   * rule"). */
  double dom_lo, dom_hi;
  int beyond;
  /* Probes: nprobes (0: none, a set fitted before they were written) operators the model
   * was fitted on (the shortest, the median and the longest by analytical time) and the
   * operator plugin's time for each then, on the hardware file alone (no stack, no
   * residual): residuals.toml's probe_ops ("variant dtype AxBx...") and probe_analytical_s.
   * sc_residuals_check_roofline refuses a set whose roofline has moved since (the hardware
   * file or the plugin changed: the residuals correct a roofline that is no longer there).
   * The probes' family is the model's (probe[i].family is not set: a model is copied). */
  uint32_t nprobes;
  sc_op_desc probe[SC_RESID_MAX_PROBES];
  double probe_s[SC_RESID_MAX_PROBES];
  uint32_t probe_line, probe_col; /* of probe_analytical_s (0: built in code) */
} sc_resid_model;

/* Hyper-parameters of sc_resid_fit (defaults from sc_fit_opts_defaults). */
typedef struct sc_fit_opts {
  double lambda;           /* ridge penalty on standardised features; < 0 (the default):
                              picked by 4-fold CV on the rows among n * {1e-3 ... 10} */
  uint32_t gbdt_rounds;    /* boosting rounds (default 100) */
  uint32_t gbdt_depth;     /* tree depth (default 3) */
  double gbdt_eta;         /* learning rate (default 0.15) */
} sc_fit_opts;

void sc_fit_opts_defaults(sc_fit_opts *o);

/* Fit m (family, kind, target and nfeatures set by the caller) on n rows X (n x nfeatures)
 * and targets y. lambda < 0 in o: chosen by cross-validation inside the rows (with fewer
 * than 8 rows, 1e-3 * n). Errors: SC_EINVAL, SC_ERANGE, and
 * SC_EUNSUPPORTED naming the XGBoost call that failed. Free with sc_resid_model_free. */
int sc_resid_fit(sc_resid_model *m, const double *X, const double *y, size_t n,
                 const sc_fit_opts *o, sc_error *err);

/* The model's prediction of its target for one feature vector x (nfeatures values). */
int sc_resid_predict(const sc_resid_model *m, const double *x, double *out, sc_error *err);

/* The estimator's time through model m for an operator of regressor inputs x (as
 * sc_resid_features gives them) and analytical time an_s: an_s * exp(prediction) for a
 * hybrid model, exp(prediction) for a learned one; an_s itself where m says it is used
 * beyond its sampled domain only as the analytical estimate (m->beyond) and an_s lies
 * outside [m->dom_lo, m->dom_hi]. Errors as sc_resid_predict. */
int sc_resid_time(const sc_resid_model *m, const double *x, double an_s, double *time_s,
                  sc_error *err);

/* 1 when an operator of analytical time an_s lies inside m's sampled domain (or m states
 * none). */
int sc_resid_in_domain(const sc_resid_model *m, double an_s);

/* Save / load a gbdt model in XGBoost's JSON model format (path ends in ".json").
 * load sets m->booster (m->kind must be SC_RESID_GBDT). SC_EIO naming the path. */
int sc_resid_save_gbdt(const sc_resid_model *m, const char *path, sc_error *err);
int sc_resid_load_gbdt(sc_resid_model *m, const char *path, sc_error *err);

/* Release the booster (a linear model owns nothing). NULL is a no-op. */
void sc_resid_model_free(sc_resid_model *m);

/* ---- the residuals of one device ---------------------------------------------------- */

typedef struct sc_residuals {
  char device[64];
  /* The software stack the operator models were fitted under (residuals.toml's optional
   * `stack`; "" for none): their hybrid target is the measured time over the analytical time
   * as that stack prices it (sc_stack_gpu_s), so they apply under that stack only. A set
   * fitted without one corrects the plugin's analytical time under any stack. */
  char stack[64];
  uint32_t device_line, device_col; /* of 'device' in residuals.toml (0: built in code) */
  char dir[4096];
  size_t n;
  sc_resid_model *models;
} sc_residuals;

/* The residuals folder of a device: <folder of hardware_path>/<device>/residuals. */
int sc_residuals_dir(const char *hardware_path, const char *device, char *out, size_t cap,
                     sc_error *err);

/* Load dir/residuals.toml and the gbdt files it names. Errors: SC_ENOTFOUND (no
 * residuals.toml: the device has not been fitted), SC_ESPEC "file:line:col: key 'k': ..."
 * for malformed entries (every key stepcast fit writes is required, except the gbdt models'
 * mean/scale/coef), SC_EIO for a gbdt file XGBoost cannot read. */
int sc_residuals_load(const char *dir, sc_residuals **out, sc_error *err);

/* Check loaded residuals against what will use them: device (when not NULL) must be the
 * name residuals.toml was fitted for, and every model of a family that reg has an operator
 * plugin for must list that plugin's features followed by the extra ones, in order (a model
 * fitted for another version of the plugin would otherwise be applied to the wrong
 * features). SC_ESPEC "DIR/residuals.toml:line:col: key 'device'|'features': ...". Models of
 * families reg does not serve are left alone (they are never applied). */
int sc_residuals_check(const sc_residuals *r, const char *device, const sc_registry *reg,
                       sc_error *err);

/* Check that the roofline the active operator models of r were fitted against is the one
 * reg's plugins give on dev (the hardware file as it is, no stack): every probe's analytical
 * time again within a relative 1e-6. SC_ESPEC "DIR/residuals.toml:line:col: key
 * 'probe_analytical_s': <family> <op>: the roofline now gives X s where these models were
 * fitted against Y s (the hardware file or the operator plugin changed since they were
 * fitted: fit them again with stepcast fit)"; a probe the plugin cannot price, its error.
 * Models without probes pass. */
int sc_residuals_check_roofline(const sc_residuals *r, sc_registry *reg,
                                const sc_device *dev, sc_error *err);

/* Write dir/residuals.toml for the n models (gbdt ones saved as
 * <family>.<target>.gbdt.json beside it). header is written as '#' comment lines; stack
 * (NULL or "": none) the software stack the models were fitted under (sc_residuals.stack). */
int sc_residuals_save(const char *dir, const char *device, const char *stack,
                      const sc_resid_model *models,
                      size_t n, const char *const *feature_names_by_model, const char *header,
                      sc_error *err);

void sc_residuals_free(sc_residuals *r);

/* For the CLI: the residuals of the device described by hardware (a name or path, resolved
 * as sc_spec_resolve does) whose name is device, checked by sc_residuals_check against
 * device and reg (NULL: the features are not checked). SC_ENOTFOUND reads "estimator
 * 'mode': no fitted residual models for device 'd' (DIR/residuals.toml: ...; run stepcast
 * sample and stepcast fit)"; other errors as sc_residuals_load and sc_residuals_check. */
int sc_residuals_for_hardware(const char *hardware, const char *device,
                              const sc_registry *reg, sc_estimator mode,
                              sc_residuals **out, sc_error *err);

/* The active model for (family, target), or NULL. */
const sc_resid_model *sc_residuals_find(const sc_residuals *r, const char *family,
                                        sc_resid_target target);

/* The estimator's time for one operator: analytical e->time_s unchanged
 * (SC_ESTIMATOR_ANALYTICAL, or a family r has no model for), e->time_s * exp(residual)
 * (hybrid) or exp(prediction) (learned), the model evaluated on sc_resid_features(e).
 * SC_EINVAL when the model's feature count differs from sc_resid_features' (a model fitted
 * for another plugin version). r may be NULL (then analytical). */
/* The same with the analytical time the model corrects given as base_s (e's own time, or the
 * time a software stack prices e at: sc_price_mode); the model still reads e's features. */
int sc_residuals_apply_at(const sc_residuals *r, sc_estimator mode, const char *family,
                          const sc_estimate *e, double base_s, double *time_s, sc_error *err);
int sc_residuals_apply(const sc_residuals *r, sc_estimator mode, const char *family,
                       const sc_estimate *e, double *time_s, sc_error *err);

/* ---- pricing and scoring (stepcast estimate, stepcast fit --test) ------------------- */

/* An operator from its text fields, as `stepcast ops --csv` writes them and `stepcast
 * estimate --csv` and `sample --plan` read them: family (an operator plugin of reg; out->family
 * then points at the plugin's own name), variant (a whole number), dtype (sc_dtype_name) and
 * dims ("AxBx...", 1 to SC_OP_MAX_DIMS whole numbers below 2^62; which dims a family takes is
 * its plugin's business: it refuses a wrong count when asked to estimate). SC_EINVAL with
 * "column 'name': what is wrong" (the caller prefixes the file and line). */
int sc_op_parse(const sc_registry *reg, const char *family, const char *variant,
                const char *dtype, const char *dims, sc_op_desc *out, sc_error *err);

/* A collective kind from a name as nccl-tests, `stepcast comm` or `stepcast ops --csv` spell
 * it ("allreduce", "all_reduce", "all-reduce", "AllReduce", ...; "p2p" is send/recv). */
int sc_coll_kind_parse_loose(const char *name, sc_coll_kind *out);

/* A collective of kind over nranks GPUs of t spanning nodes nodes (0: as nccl-tests places
 * them, filling nodes in order), bytes per rank as nccl-tests counts them. With fewer
 * members per node than t's GPUs per node (nodes > 1 and nranks / nodes < gpus_per_node),
 * the group is one member in every gpus_per_node / k GPUs of each node, as a data-parallel
 * group with tensor parallelism inside the node sits. SC_EINVAL naming the column ('bytes',
 * 'nranks', 'nodes') for a group that cannot be placed so; the errors of sc_comm_group. */
int sc_coll_place(const sc_topology *t, sc_coll_kind kind, double bytes, sc_dtype dtype,
                  uint32_t nranks, uint32_t nodes, sc_coll_desc *out, sc_error *err);

/* One operator or collective priced by every estimator: an is the analytical estimate (its
 * bound, FLOPs, bytes and features); time_s[m] the time of estimator m (sc_estimator:
 * analytical, hybrid, learned); corrected[m] 1 when a fitted model of that estimator
 * applies (else time_s[m] is the analytical time). */
typedef struct sc_price {
  sc_estimate an;
  double time_s[3];
  int corrected[3];
} sc_price;

/* Price op on dev with reg's plugin and r's residuals (r may be NULL: every estimator is
 * the analytical one). Errors: the plugin's, the residual models', and SC_ERANGE when an
 * estimate is not a finite time >= 0. */
int sc_price_op(sc_registry *reg, const sc_device *dev, const sc_residuals *r,
                const sc_op_desc *op, sc_price *out, sc_error *err);

/* The same under software stack s (NULL: none): time_s[m] as sc_price_mode gives it. */
int sc_price_op_stack(sc_registry *reg, const sc_device *dev, const sc_stack *s,
                      const sc_residuals *r, const sc_op_desc *op, sc_price *out, sc_error *err);

/* The time of estimator mode for operator op of plugin estimate e on dev, under stack s
 * (NULL: none) with residuals r (NULL: none), the one rule every command prices by:
 * - analytical: the analytical time as the stack prices it, sc_stack_gpu_s(e->time_s);
 * - r fitted without a stack (r->stack ""): the model corrects the plugin's time, then the
 *   stack adds its kernels and traffic: sc_stack_gpu_s(model time);
 * - r fitted under stack r->stack: s must be that stack (SC_EINVAL naming both otherwise);
 *   the model corrects the stack's analytical time (sc_resid_time at sc_stack_gpu_s(e)).
 * A family without an active model keeps the analytical time. Errors also as
 * sc_residuals_apply. */
int sc_price_mode(const sc_residuals *r, const sc_stack *s, const sc_device *dev,
                  sc_estimator mode, const sc_op_desc *op, const sc_estimate *e,
                  double *time_s, sc_error *err);

/* Price collective c (placed by sc_coll_place or sc_comm_group, kind and bytes set) on t:
 * the algorithm and protocol NCCL's tuner would pick (sc_comm_estimate_proto; *algorithm
 * and *protocol, either may be NULL, get static names), corrected by r's collective models
 * (r may be NULL). Errors as sc_price_op. */
int sc_price_coll(sc_registry *reg, const sc_topology *t, const sc_residuals *r,
                  const sc_coll_desc *c, sc_price *out, const char **algorithm,
                  const char **protocol, sc_error *err);

/* Error of estimates against measured times, per named group (a family) and over all. */
#define SC_SCORE_MAX 64
#define SC_SCORE_ESTIMATORS 3
typedef struct sc_score {
  size_t n;                                       /* named groups */
  char name[SC_SCORE_MAX][48];
  /* index SC_SCORE_MAX: every row */
  size_t count[SC_SCORE_MAX + 1];
  double abs_sum[SC_SCORE_MAX + 1][SC_SCORE_ESTIMATORS];
  double signed_sum[SC_SCORE_MAX + 1][SC_SCORE_ESTIMATORS];
  double worst[SC_SCORE_MAX + 1][SC_SCORE_ESTIMATORS];
} sc_score;

void sc_score_init(sc_score *s);
/* One measurement of group name: est_s[m] the time of estimator m, measured_s > 0 (finite).
 * SC_EINVAL for a measurement that is not, SC_ELIMIT past SC_SCORE_MAX groups. */
int sc_score_add(sc_score *s, const char *name, const double est_s[SC_SCORE_ESTIMATORS],
                 double measured_s, sc_error *err);
/* Mean absolute percentage error (a fraction) and mean signed error ((est - meas) / meas)
 * of group i (0..n-1; -1: every row) for an estimator; NaN without rows. */
double sc_score_mape(const sc_score *s, int i, int estimator);
double sc_score_bias(const sc_score *s, int i, int estimator);

/* ---- collective residuals (stepcast fit --comm, stepcast comm --estimator) ----------- */

/* A collective's regressor inputs: its own three (log10 of the message bytes, log2 of the
 * group's ranks, log2 of the nodes it spans), then the extra ones of sc_resid_features
 * (log10 of the analytical time, hinges on log10 bytes, compute_bound: always 0). The
 * residuals of a topology are fitted on measured nccl-tests rows of one system, one model
 * per collective kind (family = sc_comm_kind_name), device = the topology's name. */
#define SC_COLL_RESID_OWN_FEATURES 3
uint32_t sc_coll_resid_nfeatures(void);
const char *sc_coll_resid_feature_name(uint32_t j);

/* The estimate the residual models see for collective c (a span as sc_comm_group fills it,
 * kind and bytes set) whose analytical estimate is an: *an with its features replaced by
 * the collective's own three and bytes by the message bytes. */
void sc_coll_resid_input(const sc_coll_desc *c, const sc_estimate *an, sc_estimate *out);

/* The nodes a collective's group spans: ranks over tier 0's members per node (1 inside a
 * node), as the log2_nodes feature counts them. */
uint32_t sc_coll_resid_nodes(const sc_coll_desc *c);

/* The model the estimator applies to collective c (a span, kind set): r's active model for
 * c's kind and mode's target when it was fitted on c's group shape (ranks and nodes); NULL
 * when r is NULL, mode is analytical, or there is none (c keeps its analytical time). */
const sc_resid_model *sc_residuals_find_coll(const sc_residuals *r, sc_estimator mode,
                                             const sc_coll_desc *c);

/* The estimator's time for collective c (a span, kind and bytes set) whose analytical
 * estimate is an: through sc_residuals_find_coll's model on sc_coll_resid_input, else
 * an->time_s unchanged. */
int sc_residuals_apply_coll(const sc_residuals *r, sc_estimator mode, const sc_coll_desc *c,
                            const sc_estimate *an, double *time_s, sc_error *err);

/* Check collective residuals: fitted for topology (its name), every model's family a
 * collective kind, its features sc_coll_resid_feature_name's, in order, and its group
 * shapes stated. SC_ESPEC "DIR/residuals.toml:line:col: key 'device'|'family'|'features'|
 * 'group_ranks': ...". */
int sc_residuals_check_coll(const sc_residuals *r, const char *topology, sc_error *err);

/* For the CLI: the collective residuals of a topology. dir: a residuals folder, or NULL for
 * the topology's own, <folder of the topology file>/<name>/residuals (topology a name or
 * path, resolved as sc_spec_resolve does). Checked by sc_residuals_check_coll against name.
 * A folder without residuals.toml: with required, SC_ENOTFOUND reading "estimator 'mode':
 * no fitted collective residuals for topology 'n' (no DIR/residuals.toml; fit measured
 * nccl-tests rows with stepcast fit --comm)"; without, SC_OK and *out = NULL (the
 * collectives stay analytical). */
int sc_residuals_for_topology(const char *topology, const char *name, const char *dir,
                              int required, sc_estimator mode, sc_residuals **out,
                              sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_ESTIMATE_H */
