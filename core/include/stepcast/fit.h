/* stepcast/fit.h: fitting residual models to measurements, and choosing which to use.
 *
 * A fit reads measured times (a samples CSV of operators, stepcast sample's or a measured
 * table's, or nccl-tests rows of collectives), prices every row analytically, fits per
 * family the four residual models (hybrid and learned, linear and gbdt; sc_resid_fit),
 * scores them k-fold cross-validated, on a held-out split and on chained splits by size,
 * and makes active, per family and target, the one the selection rule keeps (none: the
 * family stays analytical). sc_fit_write then writes the folder --estimator hybrid|learned
 * reads (residuals.toml, the active gbdt models) and its report.md; every file is replaced
 * only when all of them were written. docs/learned.md explains the method and the rules.
 *
 *   sc_fit_request q;
 *   sc_fit_request_defaults(&q);
 *   q.samples = "hardware/a100-sxm4-80gb/seed/ops.csv";
 *   q.hardware = "hardware/a100-sxm4-80gb.toml";
 *   q.out = "/tmp/a100-residuals";
 *   if (sc_fit_run(reg, &q, &fit, &err) == SC_OK && sc_fit_write(fit, &err) == SC_OK)
 *     sc_fit_print(fit, stdout);
 *   sc_fit_free(fit);
 */
#ifndef STEPCAST_FIT_H
#define STEPCAST_FIT_H

#include <stdint.h>
#include <stdio.h>

#include "stepcast/estimate.h"
#include "stepcast/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rule that makes a model active (stepcast fit --select; docs/learned.md). */
typedef enum sc_fit_select {
  SC_FIT_SELECT_DOMAIN, /* judged inside the sampled domain (k-fold) and beyond it (chained
                         * splits) apart; beyond its analytical times a model is used as
                         * itself only where it extrapolated no worse (the default) */
  SC_FIT_SELECT_CHAIN,  /* within the margin cross-validated and on every chained split,
                         * better on their mean */
  SC_FIT_SELECT_GUARD,  /* the gbdt unless the chained splits show harm */
  SC_FIT_SELECT_EITHER, /* beats the roofline cross-validated or held out, no worse in both */
  SC_FIT_SELECT_BOTH    /* beats it in both */
} sc_fit_select;

/* What to fit. The strings are borrowed: they must outlive the sc_fit_result. */
typedef struct sc_fit_request {
  const char *samples;  /* operator samples CSV (sc_samples_read), or NULL with comm */
  const char *hardware; /* the samples' hardware file (required with samples) */
  const char *comm;     /* measured collectives, or NULL: nccl-tests validation rows (with
                         * system), or a table in `stepcast estimate --csv`'s collective form
                         * (with topology) */
  const char *system;   /* with comm: the nccl-tests rows of this system only */
  const char *topology; /* with comm instead of system: the table's rows (family, bytes,
                         * nranks, optional nodes and dtype, measured_s: every row a
                         * collective) ran on this topology (a name or file) */
  const char *stack;    /* the software stack the samples ran under (stacks/), or NULL: the
                         * residuals then correct the time as that stack prices it, and
                         * apply under it only */
  const char *families; /* comma-separated operator families to fit, or NULL: all */
  const char *read, *unread; /* FAMILY.FEATURE lists the hybrid models also read / leave
                              * unread, or NULL */
  const char *repeat;          /* a second samples file of the same plan, or NULL */
  const char *repeat_hardware; /* its hardware file (required with repeat) */
  const char *rows;     /* a CSV of every row's analytical estimate beside its measurement,
                         * or NULL */
  const char *out;      /* the folder written by sc_fit_write (created, its parent must
                         * exist; checked by sc_fit_run before fitting) */
  const char *command;  /* the command line, quoted in the headers and the report, or NULL */
  uint32_t folds;       /* k of the cross-validation, in [2, 20] (5) */
  double heldout;       /* the held-out share, largest by analytical time, in (0, 1) (0.25) */
  sc_fit_select select; /* SC_FIT_SELECT_DOMAIN */
  double margin;        /* MAPE margin, a fraction in [0, 0.5] (0.01) */
  double gain;          /* chain: the splits' mean must beat the roofline's by this (0) */
  double train;         /* in (0, 1]: fit on this share of the measurements (by a hash of
                         * each one's group or line) and score on the rest; 1: all (1) */
  int hybrid_features;  /* 1 every feature, 0 the shape ones, -1 the rule's default (all
                         * under SC_FIT_SELECT_DOMAIN, shape under the others) */
  sc_fit_opts opts;     /* regularisation and gbdt rounds (sc_fit_opts_defaults) */
} sc_fit_request;

/* Every field to its default (above); the paths NULL. */
void sc_fit_request_defaults(sc_fit_request *q);

typedef struct sc_fit_result sc_fit_result;

/* Read, price, fit and select, as q says. Writes nothing but the folder q->out when it is
 * missing. Errors: SC_EINVAL (a request that contradicts itself, "fit: ..."), the readers'
 * errors naming file and line, SC_EIO for the folder, SC_ENOMEM. On success *out is the
 * result (sc_fit_free), else *out is NULL. */
int sc_fit_run(sc_registry *reg, const sc_fit_request *q, sc_fit_result **out, sc_error *err);

/* A note on the fit for its user (e.g. samples noisier than the chosen rule can judge), or
 * "" when there is none. */
const char *sc_fit_note(const sc_fit_result *r);

/* Write q->out/residuals.toml, the active gbdt models, q->out/report.md and q->rows (when
 * asked), each through a temporary file renamed only once all are written; a gbdt file an
 * earlier fit left for a model no longer active is removed. SC_EIO naming the file. */
int sc_fit_write(sc_fit_result *r, sc_error *err);

/* The fit's tables (what report.md holds, the folder's header line first) on out. */
void sc_fit_print(const sc_fit_result *r, FILE *out);

/* NULL is a no-op. Files sc_fit_write did not commit are removed. */
void sc_fit_free(sc_fit_result *r);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_FIT_H */
