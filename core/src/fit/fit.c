/* Residual fitting (stepcast/fit.h): per operator family (or per collective of a system),
 * residual regressors fitted on a samples CSV (stepcast sample) or on nccl-tests rows,
 * k-fold cross-validated and held-out MAPE of the analytical, hybrid and learned estimators
 * side by side, the selection rule that makes a model active, and the folder written from
 * it (residuals.toml, the active gbdt models, report.md). docs/learned.md explains the
 * method; stepcast fit (core/cli/fit.c) is a client of this file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "stepcast/afile.h"
#include "comm/comm_int.h"
#include "stepcast/comm.h"
#include "stepcast/csv.h"
#include "stepcast/estimate.h"
#include "stepcast/fit.h"
#include "stepcast/parallel.h"

/* How much worse than the roofline a residual may be and still be used: about the run-to-run
 * noise of one machine's samples (1-3 points of MAPE). */
#define FIT_MARGIN 0.01

/* The rule that makes a residual active (--select, --margin). "chain" (the default): a kind
 * within margin of the roofline cross-validated and on each of NCHAIN forward-chained
 * held-out splits (fitted on the smallest share of the rows by analytical time, tested on all
 * the larger ones), whose mean error over those splits is below the roofline's (the margin
 * bounds the harm; any gain on the mean counts, docs/notes/0001-host-cpu-residuals.md "Scale and shape
 * features"); a family with fewer than FIT_CHAIN_MIN_ROWS rows to judge on falls back to
 * "either". "either": a kind that beats the roofline by more than
 * margin cross-validated or held out and is within margin of it in both; "both", one that
 * beats it by more than margin in each. */
typedef struct fit_rule {
  int domain;    /* --select domain (the default): judged inside the sampled domain and
                  * beyond it apart (choose()) */
  int chain;     /* the chained rule where a family has the rows for it */
  int guard;     /* with chain: --select guard, the gbdt unless the splits show harm */
  int both;      /* otherwise "both" (else "either") */
  double margin; /* MAPE, a fraction */
  double gain;   /* the chained rule: how far the splits' mean must beat the roofline's
                  * (--gain; 0, any gain, by default) */
  uint32_t folds; /* for the text */
} fit_rule;

/* The chained held-out splits: fit on the smallest chain_at[c] of the rows (by analytical
 * time), test on the rest. Extrapolation to larger shapes is what the held-out check asks of
 * a residual, and one split of a few rows decides by noise: over the 20 CPU sample sets of
 * docs/notes/0001-host-cpu-residuals.md ("The chained rule") the chained rule's selected hybrid holds out at
 * 5.66 %, against 6.14 % for "either", 5.77 % for "both" by 3 points and 6.20 % for the
 * roofline (on the 17 it was chosen on, with the analytical model of that time, 5.80 %
 * against 6.12 % for the rule it replaced). */
#define NCHAIN 4
static const double chain_at[NCHAIN] = {0.5, 0.625, 0.75, 0.875};
/* Fewer rows than this to judge on (a family, or the training rows of the held-out split):
 * the splits would test one to three rows each, and the either/both rule decides instead. */
#define FIT_CHAIN_MIN_ROWS 16

/* The 90th percentile of how far a samples file's passes disagreed, in per cent, from its
 * "# passes.spread = ..." line (stepcast sample writes it after the rows); -1 when the file
 * has none (one pass, or an older sampler). */
static double passes_spread_p90(const char *path) {
  char line[512];
  double p90 = -1.0;
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1.0;
  while (fgets(line, sizeof line, f) != NULL) {
    const char *q;
    if (strncmp(line, "# passes.spread = ", 18) != 0) continue;
    if ((q = strstr(line, "90th percentile ")) != NULL && sscanf(q + 16, "%lf", &p90) != 1)
      p90 = -1.0;
  }
  fclose(f);
  return p90;
}

/* Above this 90th percentile of the passes' disagreement (per cent), a fit under the
 * either/both rule notes that the samples are noisy: one held-out split of a few rows then
 * decides by the noise, which the chained rule (the default) is there to avoid. */
#define FIT_NOISY_P90 10.0

/* Where the either/both rule asks a kind to beat the analytical estimate by the margin, in
 * words. */
static const char *rule_where(const fit_rule *r) {
  return r->both ? "both cross-validated and held out (--select both)"
                 : "cross-validated or held out and within that margin of it in both";
}

/* The rule r in words, for the report and the residuals header: which kinds qualify and
 * which of them is used; an names the analytical estimate ("roofline"). */
static void rule_text(const fit_rule *r, const char *an, char *buf, size_t n) {
  char fallback[400];
  snprintf(fallback, sizeof fallback, "those that beat the %s by more than a MAPE margin of "
           "%g%% %s, the one with the lower held-out error", an, 100.0 * r->margin,
           rule_where(r));
  if (r->domain) {
    snprintf(buf, n, "of the two kinds, those that beat the %s by more than a MAPE margin of "
             "%g%% %u-fold cross-validated (inside the sampled shapes) and are within that "
             "margin of it on %d chained held-out splits (fitted on the smallest 50, 62.5, 75 "
             "and 87.5%% by analytical time, tested on the rest; the mean, or the one held-out "
             "split where fewer than %d rows are there to judge on), each used beyond the "
             "analytical times it was fitted on as the model where that extrapolated no worse "
             "than the %s there, else as the %s (beyond = \"analytical\"); the one with the "
             "lower cross-validated error (--select domain)", an, 100.0 * r->margin,
             r->folds, NCHAIN, FIT_CHAIN_MIN_ROWS, an, an);
    return;
  }
  if (!r->chain) {
    snprintf(buf, n, "of the two kinds, %s", fallback);
    return;
  }
  char gain[64] = "";
  if (r->gain > 0) snprintf(gain, sizeof gain, " by more than %g points (--gain)", 100.0 * r->gain);
  if (r->guard) {
    snprintf(buf, n, "the gbdt, else the linear kind, whose mean MAPE over %d chained held-out "
             "splits (fitted on the smallest 50, 62.5, 75 and 87.5%% by analytical time, "
             "tested on the rest) is within a margin of %g%% of the %s's (--select guard; where "
             "fewer than %d rows are there to judge on, %s)", NCHAIN, 100.0 * r->margin, an,
             FIT_CHAIN_MIN_ROWS, fallback);
    return;
  }
  snprintf(buf, n, "of the two kinds, those within a MAPE margin of %g%% of the %s "
           "cross-validated and on each of %d chained held-out splits (fitted on the smallest "
           "50, 62.5, 75 and 87.5%% by analytical time, tested on the rest) and better than it "
           "on the splits' mean%s, the one with the lower mean "
           "(--select chain; where fewer than %d rows are there to judge on, %s)",
           100.0 * r->margin, an, NCHAIN, gain, FIT_CHAIN_MIN_ROWS, fallback);
}


#define NEST 4 /* hybrid-linear, hybrid-gbdt, learned-linear, learned-gbdt */
static const sc_resid_target est_target[NEST] = {SC_TARGET_HYBRID, SC_TARGET_HYBRID,
                                                 SC_TARGET_LEARNED, SC_TARGET_LEARNED};
static const sc_resid_kind est_kind[NEST] = {SC_RESID_LINEAR, SC_RESID_GBDT, SC_RESID_LINEAR,
                                             SC_RESID_GBDT};

typedef struct fam_data {
  const char *family;
  size_t n;
  uint32_t p;
  uint32_t unread; /* what the hybrid residuals leave unread: the scale features, unless
                    * --hybrid-features all, --read or --unread changed it */
  double *X;      /* n x p */
  double *an;     /* analytical time */
  double *meas;   /* measured median; a group's rows: its share of the group's time, in
                   * proportion to their analytical times */
  /* The measurements ("units"): a row, or the rows of this family that one measured time
   * covers (a samples file's group). Rows are stored unit by unit: unit u is rows
   * ufirst[u] .. ufirst[u] + ulen[u]; without groups, unit k is row k. */
  size_t nu;
  size_t *ufirst, *ulen;
  double *uan, *umeas; /* a unit's analytical time (its rows' sum) and measured time */
  size_t *order;  /* units by analytical time, ascending */
  size_t *src;    /* --samples: the row of the sample set each row came from */
  double *again;  /* --repeat: the same operator's median in the second file (NAN: absent) */
  double *again_an; /* and its analytical time on the second file's own hardware file */
  /* results */
  double cv[NEST + 1], ho[NEST + 1]; /* [0] analytical, then the four */
  double ch[NCHAIN][NEST + 1];       /* the chained splits, the same order */
  /* the same errors with each model used only inside the analytical times it was fitted on
   * (the analytical time outside): how it does with beyond = "analytical" */
  double cvb[NEST + 1], hob[NEST + 1], chb[NCHAIN][NEST + 1];
  size_t ntrain;
  /* per target (hybrid, learned): the estimator an inner split of the training rows picks
   * (-1 = the roofline, else an index of est_kind) and its held-out error */
  int sel[2], sel_beyond[2];
  double sel_ho[2];
  /* the final models' sampled domain (every row's analytical time) and, per target, what
   * the active model is beyond it (1: the analytical time) */
  double dom_lo, dom_hi;
  int beyond[2];
  char names[SC_MAX_FEATURES * (SC_RESID_NAME_MAX + 4)]; /* "a", "b", ... */
  const char *feature[SC_MAX_FEATURES];                  /* the same, one by one */
  /* --comm: the group shapes (ranks, nodes) of the rows; 0 for operator families */
  uint32_t ngroups, group_ranks[SC_RESID_MAX_GROUPS], group_nodes[SC_RESID_MAX_GROUPS];
} fam_data;

static double target_of(sc_resid_target t, double an, double meas) {
  return t == SC_TARGET_HYBRID ? log(meas / an) : log(meas);
}

static double time_of(sc_resid_target t, double an, double y) {
  return t == SC_TARGET_HYBRID ? an * exp(y) : exp(y);
}

/* Fit estimator e on the rows of units train[0..nt) and add, over units test[0..ns),
 * |pred - meas| / meas into sum[0] (pred: the sum of the unit's rows' estimates) and the same
 * with the analytical time for every row outside the analytical times fitted on into
 * sum[1] (the model with beyond = "analytical"). */
static int eval_split(const fam_data *fd, int e, const size_t *train, size_t nt,
                      const size_t *test, size_t ns, const sc_fit_opts *o, double *sum,
                      sc_error *err) {
  sc_resid_model m;
  size_t nr = 0, k = 0;
  for (size_t i = 0; i < nt; i++) nr += fd->ulen[train[i]];
  double *X = malloc((nr ? nr : 1) * (fd->p ? fd->p : 1) * sizeof *X),
         *y = malloc((nr ? nr : 1) * sizeof *y);
  double lo = INFINITY, hi = 0.0;
  int rc;
  if (X == NULL || y == NULL) {
    free(X);
    free(y);
    return sc_error_set(err, SC_ENOMEM, "fit: out of memory");
  }
  for (size_t i = 0; i < nt; i++)
    for (size_t r = fd->ufirst[train[i]]; r < fd->ufirst[train[i]] + fd->ulen[train[i]]; r++) {
      memcpy(&X[k * fd->p], &fd->X[r * fd->p], fd->p * sizeof *X);
      y[k++] = target_of(est_target[e], fd->an[r], fd->meas[r]);
      if (fd->an[r] < lo) lo = fd->an[r];
      if (fd->an[r] > hi) hi = fd->an[r];
    }
  memset(&m, 0, sizeof m);
  snprintf(m.family, sizeof m.family, "%s", fd->family);
  m.kind = est_kind[e];
  m.target = est_target[e];
  m.nfeatures = fd->p;
  m.unread = est_target[e] == SC_TARGET_HYBRID ? fd->unread : 0;
  rc = sc_resid_fit(&m, X, y, nr, o, err);
  for (size_t i = 0; i < ns && rc == SC_OK; i++) {
    const size_t u = test[i];
    double t0 = 0.0, t1 = 0.0;
    for (size_t r = fd->ufirst[u]; r < fd->ufirst[u] + fd->ulen[u] && rc == SC_OK; r++) {
      double yy;
      rc = sc_resid_predict(&m, &fd->X[r * fd->p], &yy, err);
      double t = time_of(est_target[e], fd->an[r], yy);
      t0 += t;
      t1 += (fd->an[r] < lo || fd->an[r] > hi) ? fd->an[r] : t;
    }
    sum[0] += fabs(t0 - fd->umeas[u]) / fd->umeas[u];
    sum[1] += fabs(t1 - fd->umeas[u]) / fd->umeas[u];
  }
  sc_resid_model_free(&m);
  free(X);
  free(y);
  return rc;
}

static const fam_data *sort_ctx;
static int by_analytical(const void *a, const void *b) {
  double x = sort_ctx->uan[*(const size_t *)a], y = sort_ctx->uan[*(const size_t *)b];
  return (x > y) - (x < y);
}

/* |analytical - measured| / measured of unit u. */
static double roofline_err(const fam_data *fd, size_t u) {
  return fabs(fd->uan[u] - fd->umeas[u]) / fd->umeas[u];
}

/* Mean relative errors of the roofline ([0]) and the four estimators ([1 + e]) on the m
 * smallest units of fd (fd->order[0..m)): k-fold cross-validated into cv (the units, by
 * size, dealt round-robin so that every fold spans every size), held out into ho (fitted on
 * the smallest *mt of them, tested on the rest) and, where ch is not NULL and m >=
 * FIT_CHAIN_MIN_ROWS, on each chained split into ch[c] (fitted on the smallest chain_at[c]
 * of them, tested on the rest; left unset below that). cvb, hob and chb get the same with
 * each model used only inside the analytical times it was fitted on (eval_split's sum[1]). */
static int errors_on(const fam_data *fd, size_t m, uint32_t folds, double heldout,
                     const sc_fit_opts *o, double *cv, double *ho, double (*ch)[NEST + 1],
                     double *cvb, double *hob, double (*chb)[NEST + 1], size_t *mt,
                     size_t *train, size_t *test, sc_error *err) {
  const size_t *ord = fd->order;
  int rc = SC_OK;
  double s[2];
  for (int e = 0; e <= NEST; e++) cv[e] = ho[e] = cvb[e] = hob[e] = 0.0;
  for (size_t i = 0; i < m; i++) cv[0] += roofline_err(fd, ord[i]);
  cvb[0] = cv[0];
  for (int e = 0; e < NEST && rc == SC_OK; e++) {
    for (uint32_t k = 0; k < folds && rc == SC_OK; k++) {
      size_t nt = 0, ns = 0;
      for (size_t i = 0; i < m; i++) {
        if (i % folds == k) test[ns++] = ord[i];
        else train[nt++] = ord[i];
      }
      s[0] = s[1] = 0.0;
      rc = eval_split(fd, e, train, nt, test, ns, o, s, err);
      cv[1 + e] += s[0];
      cvb[1 + e] += s[1];
    }
  }
  for (int e = 0; e <= NEST; e++) {
    cv[e] /= (double)m;
    cvb[e] /= (double)m;
  }
  *mt = (size_t)ceil((double)m * (1.0 - heldout));
  if (*mt < 2) *mt = 2;
  if (*mt >= m) *mt = m - 1;
  for (size_t i = *mt; i < m; i++) ho[0] += roofline_err(fd, ord[i]);
  hob[0] = ho[0];
  for (int e = 0; e < NEST && rc == SC_OK; e++) {
    s[0] = s[1] = 0.0;
    rc = eval_split(fd, e, ord, *mt, ord + *mt, m - *mt, o, s, err);
    ho[1 + e] = s[0];
    hob[1 + e] = s[1];
  }
  for (int e = 0; e <= NEST; e++) {
    ho[e] /= (double)(m - *mt);
    hob[e] /= (double)(m - *mt);
  }
  for (int c = 0; ch != NULL && m >= FIT_CHAIN_MIN_ROWS && c < NCHAIN && rc == SC_OK; c++) {
    size_t k = (size_t)ceil((double)m * chain_at[c]);
    for (int e = 0; e <= NEST; e++) ch[c][e] = chb[c][e] = 0.0;
    for (size_t i = k; i < m; i++) ch[c][0] += roofline_err(fd, ord[i]);
    chb[c][0] = ch[c][0];
    for (int e = 0; e < NEST && rc == SC_OK; e++) {
      s[0] = s[1] = 0.0;
      rc = eval_split(fd, e, ord, k, ord + k, m - k, o, s, err);
      ch[c][1 + e] = s[0];
      chb[c][1 + e] = s[1];
    }
    for (int e = 0; e <= NEST; e++) {
      ch[c][e] /= (double)(m - k);
      chb[c][e] /= (double)(m - k);
    }
  }
  if (fd->ngroups > 0) { /* collective models state no domain: always the model */
    memcpy(cvb, cv, (NEST + 1) * sizeof *cv);
    memcpy(hob, ho, (NEST + 1) * sizeof *ho);
    if (ch != NULL && m >= FIT_CHAIN_MIN_ROWS) memcpy(chb, ch, NCHAIN * sizeof *ch);
  }
  return rc;
}

/* The estimator used for target t (0 hybrid, 1 learned) from the errors of errors_on over
 * rows rows: among t's two kinds, those that qualify under rule r, the best (linear on ties);
 * -1, the roofline, when neither qualifies. The chained rule (r->chain and rows >=
 * FIT_CHAIN_MIN_ROWS): within the margin of the roofline cross-validated and on every
 * chained split, better than it on the splits' mean; the best has
 * the lower mean. Else "either" (they help somewhere and hurt nowhere beyond the noise: they
 * beat the roofline by more than the margin cross-validated, inside the sampled range, or
 * held out, beyond it, and are within the margin of it in both) or "both" (they beat it by
 * more than the margin in each); the best has the lower held-out error. */
/* The mean error of estimator column k (0 the roofline, 1 + e estimator e) over the chained
 * splits. */
static double chain_mean(double (*ch)[NEST + 1], int k) {
  double s = 0.0;
  for (int c = 0; c < NCHAIN; c++) s += ch[c][k] / NCHAIN;
  return s;
}

static int choose(const double *cv, const double *ho, double (*ch)[NEST + 1],
                  const double *cvb, const double *hob, double (*chb)[NEST + 1], size_t rows,
                  int t, const fit_rule *r, int *beyond) {
  int best = -1;
  const double m = r->margin;
  *beyond = 0;
  if (r->domain) {
    /* --select domain: beyond the sampled domain, the model where it extrapolated no worse
     * than it does with the analytical time there (the chained splits' mean, or the one
     * held-out split below FIT_CHAIN_MIN_ROWS), else the analytical time; a kind qualifies
     * when, so used, it beats the roofline by more than the margin cross-validated (inside
     * the domain) and is within the margin of it beyond (the splits); the best has the
     * lower cross-validated error */
    const int chained = rows >= FIT_CHAIN_MIN_ROWS && ch != NULL && chb != NULL;
    const double x0 = chained ? chain_mean(ch, 0) : ho[0];
    double best_cv = 0.0;
    for (int e = 2 * t; e <= 2 * t + 1; e++) {
      const double xm = chained ? chain_mean(ch, 1 + e) : ho[1 + e];
      const double xb = chained ? chain_mean(chb, 1 + e) : hob[1 + e];
      const int b = xb < xm;
      const double c = b ? cvb[1 + e] : cv[1 + e], x = b ? xb : xm;
      if (!(c < cv[0] - m) || x > x0 + m) continue;
      if (best < 0 || c < best_cv) {
        best = e;
        best_cv = c;
        *beyond = b;
      }
    }
    return best;
  }
  if (r->chain && r->guard && rows >= FIT_CHAIN_MIN_ROWS) {
    /* --select guard: the tree unless its splits' mean is worse than the roofline's by more
     * than the margin, then the linear kind by the same test */
    for (int e = 2 * t + 1; e >= 2 * t; e--)
      if (chain_mean(ch, 1 + e) <= chain_mean(ch, 0) + m) return e;
    return -1;
  }
  if (r->chain && rows >= FIT_CHAIN_MIN_ROWS) {
    double best_mean = 0.0;
    for (int e = 2 * t; e <= 2 * t + 1; e++) {
      const double mean = chain_mean(ch, 1 + e);
      int ok = cv[1 + e] <= cv[0] + m;
      for (int c = 0; c < NCHAIN; c++)
        if (ch[c][1 + e] > ch[c][0] + m) ok = 0;
      if (!ok || !(mean < chain_mean(ch, 0) - r->gain)) continue;
      if (best < 0 || mean < best_mean) {
        best = e;
        best_mean = mean;
      }
    }
    return best;
  }
  for (int e = 2 * t; e <= 2 * t + 1; e++) {
    int cv_better = cv[1 + e] < cv[0] - m, ho_better = ho[1 + e] < ho[0] - m;
    int helps = r->both ? cv_better && ho_better : cv_better || ho_better;
    int harmless = cv[1 + e] <= cv[0] + m && ho[1 + e] <= ho[0] + m;
    if (!helps || !harmless) continue;
    if (best < 0 || ho[1 + e] < ho[1 + best]) best = e;
  }
  return best;
}

/* Cross-validation, held-out split, the estimator chosen without the held-out rows (the
 * same errors on the training rows alone), and the final models (fitted on every row). */
static int fit_family(fam_data *fd, uint32_t folds, double heldout, const sc_fit_opts *o,
                      const fit_rule *rule, sc_resid_model *final, sc_error *err) {
  size_t n = fd->n, *train = malloc(n * sizeof *train), *test = malloc(n * sizeof *test);
  int rc = SC_OK;
  if (train == NULL || test == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
    goto done;
  }
  /* the chained splits only where the rule reads them */
  const int chained = rule->chain || rule->domain;
  rc = errors_on(fd, fd->nu, folds, heldout, o, fd->cv, fd->ho, chained ? fd->ch : NULL,
                 fd->cvb, fd->hob, fd->chb, &fd->ntrain, train, test, err);
  if (rc == SC_OK) {
    double icv[NEST + 1], iho[NEST + 1], ich[NCHAIN][NEST + 1];
    double icvb[NEST + 1], ihob[NEST + 1], ichb[NCHAIN][NEST + 1];
    size_t imt = 0;
    int inner = fd->ntrain >= 2 * (size_t)folds && fd->ntrain >= 4;
    if (inner)
      rc = errors_on(fd, fd->ntrain, folds, heldout, o, icv, iho, chained ? ich : NULL, icvb,
                     ihob, ichb, &imt, train, test, err);
    for (int t = 0; t < 2 && rc == SC_OK; t++) {
      fd->sel_beyond[t] = 0;
      fd->sel[t] = inner ? choose(icv, iho, ich, icvb, ihob, ichb, fd->ntrain, t, rule,
                                  &fd->sel_beyond[t])
                         : -1;
      fd->sel_ho[t] = fd->sel_beyond[t] ? fd->hob[fd->sel[t] + 1] : fd->ho[fd->sel[t] + 1];
    }
  }
  fd->dom_lo = INFINITY;
  fd->dom_hi = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (fd->an[i] < fd->dom_lo) fd->dom_lo = fd->an[i];
    if (fd->an[i] > fd->dom_hi) fd->dom_hi = fd->an[i];
  }
  /* final models on all rows */
  for (int e = 0; e < NEST && rc == SC_OK; e++) {
    double *y = malloc(n * sizeof *y);
    sc_resid_model *m = &final[e];
    if (y == NULL) {
      rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
      break;
    }
    for (size_t i = 0; i < n; i++) y[i] = target_of(est_target[e], fd->an[i], fd->meas[i]);
    memset(m, 0, sizeof *m);
    snprintf(m->family, sizeof m->family, "%s", fd->family);
    m->kind = est_kind[e];
    m->target = est_target[e];
    m->nfeatures = fd->p;
    m->unread = est_target[e] == SC_TARGET_HYBRID ? fd->unread : 0;
    for (uint32_t j = 0; j < fd->p; j++)
      snprintf(m->feature_names[j], sizeof m->feature_names[j], "%s", fd->feature[j]);
    m->ngroups = fd->ngroups;
    memcpy(m->group_ranks, fd->group_ranks, sizeof m->group_ranks);
    memcpy(m->group_nodes, fd->group_nodes, sizeof m->group_nodes);
    m->cv_mape = fd->cv[1 + e];
    m->heldout_mape = fd->ho[1 + e];
    if (fd->ngroups == 0 && rule->domain) { /* operator models: their sampled domain */
      m->dom_lo = fd->dom_lo;
      m->dom_hi = fd->dom_hi;
    }
    rc = sc_resid_fit(m, fd->X, y, n, o, err);
    free(y);
  }
  for (int t = 0; t < 2 && rc == SC_OK; t++) { /* the active kind per target */
    int b = 0, e = choose(fd->cv, fd->ho, fd->ch, fd->cvb, fd->hob, fd->chb, fd->nu, t, rule, &b);
    fd->beyond[t] = 0;
    if (e >= 0) {
      final[e].active = 1;
      final[e].beyond = b && final[e].dom_hi > 0;
      fd->beyond[t] = final[e].beyond;
      if (b && final[e].beyond) { /* the errors the report gives are the model's so used */
        final[e].cv_mape = fd->cvb[1 + e];
        final[e].heldout_mape = fd->hob[1 + e];
      }
    }
  }
done:
  free(train);
  free(test);
  return rc;
}

/* --read / --unread: each FAMILY.FEATURE of the comma-separated list (NULL: none) read
 * (unread = 0) or left unread (1) by the hybrid models of that family; an item naming a
 * family without samples or a feature its plugin does not give is an error naming it. A
 * family's name may hold dots itself (a plugin's "fix.scale"): the longest family of the
 * samples followed by a dot is the one meant. */
static int apply_reads(fam_data *fds, size_t nf, const char *opt, const char *list,
                       int unread, sc_error *err) {
  for (const char *p = list; p != NULL;) {
    size_t k = strcspn(p, ","), f = nf, flen = 0;
    uint32_t j = 0;
    int n = (int)(k < 64 ? k : 64);
    for (size_t i = 0; i < nf; i++) {
      size_t l = strlen(fds[i].family);
      if (l + 1 < k && l > flen && strncmp(fds[i].family, p, l) == 0 && p[l] == '.') {
        f = i;
        flen = l;
      }
    }
    if (f == nf) {
      size_t dot = strcspn(p, ".");
      if (dot >= k || dot == 0 || dot + 1 == k)
        return sc_error_set(err, SC_EINVAL, "fit: %s: '%.*s' is not FAMILY.FEATURE", opt, n, p);
      return sc_error_set(err, SC_EINVAL, "fit: %s: '%.*s': no samples of family '%.*s'", opt,
                          n, p, (int)dot, p);
    }
    const char *feat = p + flen + 1;
    size_t fl = k - flen - 1;
    for (; j < fds[f].p && !(strlen(fds[f].feature[j]) == fl &&
                             strncmp(fds[f].feature[j], feat, fl) == 0); j++) {}
    if (j == fds[f].p)
      return sc_error_set(err, SC_EINVAL, "fit: %s: '%.*s': the %s plugin has no feature "
                          "'%.*s' (it has %s)", opt, n, p, fds[f].family, (int)fl, feat,
                          fds[f].names);
    if (unread) fds[f].unread |= SC_FEATURE(j);
    else fds[f].unread &= ~SC_FEATURE(j);
    p = p[k] == '\0' ? NULL : p + k + 1;
  }
  return SC_OK;
}

/* --repeat: beside each row of fds (from set), the median of the same operator in the second
 * sample set again (its first row of that operator) and that operator's analytical time on
 * dev2, the second file's own device (its micro-benchmarks, taken in its run); NAN where
 * again has none. No row matched at all is an error: a file of another plan says nothing
 * about these samples. The estimate memo is keyed by the device's name, which the two
 * files share: it is cleared before and after. */
static int repeat_match(sc_registry *reg, const sc_device *dev2, fam_data *fds, size_t nf,
                        const sc_sample_set *set, const sc_sample_set *again, const char *path,
                        sc_error *err) {
  size_t matched = 0;
  int rc = SC_OK;
  sc_registry_memo_clear(reg);
  for (size_t f = 0; f < nf && rc == SC_OK; f++) {
    fam_data *fd = &fds[f];
    fd->again = malloc((fd->n ? fd->n : 1) * sizeof *fd->again);
    fd->again_an = malloc((fd->n ? fd->n : 1) * sizeof *fd->again_an);
    if (fd->again == NULL || fd->again_an == NULL) {
      rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
      break;
    }
    for (size_t k = 0; k < fd->n && rc == SC_OK; k++) {
      const sc_op_desc *a = &set->rows[fd->src[k]].op;
      fd->again[k] = fd->again_an[k] = NAN;
      for (size_t j = 0; j < again->n; j++) {
        const sc_sample *s = &again->rows[j];
        sc_estimate e;
        sc_error e2;
        if (!sc_op_same(a, &s->op)) continue;
        if (sc_registry_estimate_op(reg, dev2, &s->op, &e, &e2) != SC_OK) {
          rc = sc_error_set(err, e2.code, "%s:%u: %s", path, s->line, e2.msg);
        } else if (!(e.time_s > 0)) {
          rc = sc_error_set(err, SC_EINVAL, "%s:%u: the %s plugin gave a time <= 0", path,
                            s->line, fd->family);
        } else {
          fd->again[k] = s->m.median_s;
          fd->again_an[k] = e.time_s;
          matched++;
        }
        break;
      }
    }
  }
  sc_registry_memo_clear(reg);
  if (rc == SC_OK && matched == 0)
    rc = sc_error_set(err, SC_EINVAL, "%s: --repeat: none of its rows is an operator of the "
                      "samples (the same family, variant, dtype and dims)", path);
  return rc;
}

/* Over fd's rows order[from..to) that the second file has, the mean of |p - meas| / meas
 * with p its median (resid 0) or this file's analytical time times the second file's
 * measured / analytical (resid 1); *n gets how many. */
static double repeat_mape(const fam_data *fd, size_t from, size_t to, int resid, size_t *n) {
  double s = 0.0;
  *n = 0;
  for (size_t i = from; i < to; i++) {
    size_t r = fd->order[i];
    if (isnan(fd->again[r])) continue;
    double p = resid ? fd->an[r] * fd->again[r] / fd->again_an[r] : fd->again[r];
    s += fabs(p - fd->meas[r]) / fd->meas[r];
    (*n)++;
  }
  return *n ? s / (double)*n : NAN;
}

/* --repeat's table: per family, how far the second file's medians, and its residuals, lie
 * from these. */
static void print_repeat(FILE *out, const fam_data *fds, size_t nf, const char *path,
                         const char *hw2) {
  fprintf(out, "\n## Repeatability: the same operators measured again (%s, hardware %s) "
               "(MAPE %%)\n\n", path, hw2);
  fprintf(out, "| family | rows again | medians | medians, held out | residuals | residuals, "
               "held out | held out: roofline | held out: hybrid, selected |\n");
  fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nf; i++) {
    const fam_data *fd = &fds[i];
    fprintf(out, "| %s", fd->family);
    for (int c = 0; c < 4; c++) {
      size_t n;
      double v = repeat_mape(fd, c % 2 ? fd->ntrain : 0, fd->n, c / 2, &n);
      if (c == 0) fprintf(out, " | %zu of %zu", n, fd->n);
      if (n) fprintf(out, " | %.1f", 100.0 * v);
      else fprintf(out, " | -");
    }
    fprintf(out, " | %.1f | %.1f |\n", 100.0 * fd->ho[0], 100.0 * fd->sel_ho[0]);
  }
  fprintf(out, "\nOn the rows both files have (held out: the same rows as above). Medians: the "
               "second file's medians taken as the prediction of these, how far two runs "
               "measure one operator apart. Residuals: this file's roofline times the second "
               "file's measured / analytical (its analytical estimate on its own hardware file, "
               "whose micro-benchmarks were taken in its run): what a hybrid that knew the "
               "other run's residual of every shape exactly would reach. A hybrid held out "
               "near that figure has no error left that a model of the shape could remove: "
               "both runs' noise is in it (about 1.4 x one run's, where the two are alike "
               "and independent).\n");
}

/* an: what the analytical estimate is called ("roofline" for operators). */
static void print_tables(FILE *out, fam_data *fds, size_t nf, uint32_t folds, double heldout,
                         const char *an, const fit_rule *rule) {
  fprintf(out, "## %u-fold cross-validated MAPE (%%)\n\n", folds);
  fprintf(out, "| family | n | analytical | hybrid linear | hybrid gbdt | learned linear | learned gbdt |\n");
  fprintf(out, "|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nf; i++) {
    fprintf(out, "| %s | %zu", fds[i].family, fds[i].nu);
    for (int e = 0; e <= NEST; e++) fprintf(out, " | %.1f", 100.0 * fds[i].cv[e]);
    fprintf(out, " |\n");
  }
  fprintf(out, "\n## Held out: fit on the smallest %.0f%%, predict the largest %.0f%% (by analytical time) (MAPE %%)\n\n",
          100.0 * (1.0 - heldout), 100.0 * heldout);
  fprintf(out, "| family | train | test | analytical | hybrid linear | hybrid gbdt | learned linear | learned gbdt | hybrid, selected | learned, selected |\n");
  fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < nf; i++) {
    fprintf(out, "| %s | %zu | %zu", fds[i].family, fds[i].ntrain, fds[i].nu - fds[i].ntrain);
    for (int e = 0; e <= NEST; e++) fprintf(out, " | %.1f", 100.0 * fds[i].ho[e]);
    for (int t = 0; t < 2; t++)
      fprintf(out, " | %.1f (%s)", 100.0 * fds[i].sel_ho[t],
              fds[i].sel[t] < 0 ? an : sc_resid_kind_name(est_kind[fds[i].sel[t]]));
    fprintf(out, " |\n");
  }
  char text[1024];
  rule_text(rule, an, text, sizeof text);
  fprintf(out, "\nThe rule for the model --estimator uses, per family and target: %s; none "
          "(the %s) when neither qualifies. Selected: that rule applied to the training rows "
          "alone (cross-validated and their largest %.0f%% held out%s), scored on the "
          "held-out rows: what --estimator would have reached on shapes it never saw. The "
          "active models below follow the rule on every row and are fitted on every row.\n",
          text, an, 100.0 * heldout, rule->chain ? ", and their chained splits" : "");
}

/* Append feature j's name, quoted, to fd->names (the list residuals.toml writes). */
static void add_name(fam_data *fd, uint32_t j, const char *name) {
  size_t nl = strlen(fd->names);
  if (j < SC_MAX_FEATURES) fd->feature[j] = name;
  int w = snprintf(fd->names + nl, sizeof fd->names - nl, "%s\"%s\"", j ? ", " : "", name);
  if (w < 0 || (size_t)w >= sizeof fd->names - nl) fd->names[nl] = '\0'; /* too long: cut */
}

/* fd's arrays for n rows of fd->p features (and as many units at most). */
static int fam_alloc(fam_data *fd, size_t n, sc_error *err) {
  size_t k = n ? n : 1;
  fd->X = malloc(k * (fd->p ? fd->p : 1) * sizeof *fd->X);
  fd->an = malloc(k * sizeof *fd->an);
  fd->meas = malloc(k * sizeof *fd->meas);
  fd->order = malloc(k * sizeof *fd->order);
  fd->src = malloc(k * sizeof *fd->src);
  fd->ufirst = malloc(k * sizeof *fd->ufirst);
  fd->ulen = malloc(k * sizeof *fd->ulen);
  fd->uan = malloc(k * sizeof *fd->uan);
  fd->umeas = malloc(k * sizeof *fd->umeas);
  if (!fd->X || !fd->an || !fd->meas || !fd->order || !fd->src || !fd->ufirst || !fd->ulen ||
      !fd->uan || !fd->umeas)
    return sc_error_set(err, SC_ENOMEM, "fit: out of memory");
  return SC_OK;
}

static void fam_free(fam_data *fd) {
  free(fd->X);
  free(fd->an);
  free(fd->meas);
  free(fd->order);
  free(fd->src);
  free(fd->ufirst);
  free(fd->ulen);
  free(fd->uan);
  free(fd->umeas);
  free(fd->again);
  free(fd->again_an);
}

/* Every row its own unit (no groups), sorted by analytical time. */
static void units_of_rows(fam_data *fd) {
  fd->nu = fd->n;
  for (size_t k = 0; k < fd->n; k++) {
    fd->ufirst[k] = k;
    fd->ulen[k] = 1;
    fd->uan[k] = fd->an[k];
    fd->umeas[k] = fd->meas[k];
    fd->order[k] = k;
  }
  sort_ctx = fd;
  qsort(fd->order, fd->nu, sizeof *fd->order, by_analytical);
}

/* --train F: which side row s of set falls on, 1 fitted, 0 held out (F >= 1: every row is
 * fitted). The side is drawn from a hash of the row's group name, or of its line without
 * one, so that it is the same on every run and a group's rows fall together. */
static int train_side(const sc_sample_set *set, const sc_sample *s, double frac) {
  char key[64];
  const char *k = key;
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a finaliser */
  if (frac >= 1.0) return 1;
  if (s->group > 0 && s->group <= set->ngroups) k = set->groups[s->group - 1];
  else snprintf(key, sizeof key, "line %u", s->line);
  for (; *k; k++) {
    h ^= (unsigned char)*k;
    h *= 1099511628211ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (double)(h >> 11) * 0x1.0p-53 < frac;
}

/* --samples: the rows of set (those on side `side` of --train frac) become one fam_data per
 * operator family (at most maxf), each with its plugin's analytical estimate on dev (as
 * stack prices it: sc_stack_gpu_s; stack may be NULL) and the measured median, and its units: a row, or the rows of one family that a group's measured
 * time covers. A group spanning several families gives each family the share of its time in
 * proportion to that family's analytical time in it; within a unit each row gets its share
 * the same way (what a hybrid residual learns: the group's measured / analytical). With
 * families (a comma-separated list, --families), only the rows of those, each of which must
 * have some; a group with rows of a family left out is refused. */
static int sample_families(sc_registry *reg, const sc_device *dev, const sc_stack *stack,
                           const char *samples, const sc_sample_set *set, const char *families,
                           uint32_t folds, double frac, int side, fam_data *fds, size_t maxf,
                           size_t *nf, FILE *rows, sc_error *err) {
  int rc = SC_OK;
  const size_t ng = set->ngroups;
  double *gan = calloc(ng ? ng : 1, sizeof *gan); /* a group's analytical time, all families */
  size_t *gunit = malloc((ng ? ng : 1) * sizeof *gunit); /* group -> unit of this family */
  size_t *gout = calloc(ng ? ng : 1, sizeof *gout); /* 1 + a row of the group left out */
  size_t *ug = NULL, *fill = NULL;
  *nf = 0;
  if (gan == NULL || gunit == NULL || gout == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
    goto done;
  }
  /* group rows by family (family pointers are interned by the reader) */
  for (size_t i = 0; i < set->n; i++) {
    const sc_sample *s = &set->rows[i];
    size_t f;
    if (!sc_name_in_list(families, s->op.family)) {
      if (s->group > 0) gout[s->group - 1] = i + 1;
      continue;
    }
    if (train_side(set, s, frac) != side) continue;
    for (f = 0; f < *nf && fds[f].family != s->op.family; f++) {}
    if (f == *nf) {
      if (*nf == maxf) {
        rc = sc_error_set(err, SC_ELIMIT, "%s: more than 32 families", samples);
        goto done;
      }
      fds[(*nf)++].family = s->op.family;
    }
    fds[f].n++;
  }
  for (size_t i = 0; i < set->n; i++) { /* a group is fitted whole or not at all */
    const sc_sample *s = &set->rows[i];
    if (s->group > 0 && gout[s->group - 1] != 0 && sc_name_in_list(families, s->op.family)) {
      const sc_sample *o = &set->rows[gout[s->group - 1] - 1];
      rc = sc_error_set(err, SC_EINVAL, "%s:%u: column 'group': group '%s' also has a row of "
                        "family '%s' (line %u), which --families leaves out: one measured time "
                        "covers both", samples, s->line, set->groups[s->group - 1],
                        o->op.family, o->line);
      goto done;
    }
  }
  for (const char *p = families; p != NULL;) { /* each family asked for has rows */
    size_t k = strcspn(p, ","), f;
    for (f = 0; f < *nf && !(strlen(fds[f].family) == k && strncmp(fds[f].family, p, k) == 0);
         f++) {}
    if (f == *nf) {
      rc = sc_error_set(err, SC_EINVAL, "%s: --families: no samples of family '%.*s'",
                        samples, (int)(k < 64 ? k : 64), p);
      goto done;
    }
    p = p[k] == '\0' ? NULL : p + k + 1;
  }
  for (size_t i = 0; i < set->n && ng > 0; i++) { /* the groups' analytical times */
    const sc_sample *s = &set->rows[i];
    sc_estimate e;
    sc_error e2;
    if (s->group == 0 || !sc_name_in_list(families, s->op.family) ||
        train_side(set, s, frac) != side)
      continue;
    if (sc_registry_estimate_op(reg, dev, &s->op, &e, &e2) != SC_OK) {
      rc = sc_error_set(err, e2.code, "%s:%u: %s", samples, s->line, e2.msg);
      goto done;
    }
    gan[s->group - 1] += sc_stack_gpu_s(stack, dev, &s->op, &e, e.time_s);
  }
  for (size_t f = 0; f < *nf; f++) {
    fam_data *fd = &fds[f];
    const sc_op_plugin *op = sc_registry_op(reg, fd->family);
    size_t nu = 0;
    if (op == NULL) {
      rc = sc_error_set(err, SC_ENOTFOUND, "%s: no operator plugin for family '%s'", samples,
                        fd->family);
      goto done;
    }
    fd->p = sc_resid_nfeatures(op);
    fd->unread = sc_resid_scale_mask(op);
    for (uint32_t j = 0; j < fd->p; j++) add_name(fd, j, sc_resid_feature_name(op, j));
    if ((rc = fam_alloc(fd, fd->n, err)) != SC_OK) goto done;
    free(ug);
    free(fill);
    ug = malloc(fd->n * sizeof *ug);     /* unit -> group + 1 (0: none) */
    fill = calloc(fd->n, sizeof *fill);  /* rows placed in each unit so far */
    if (ug == NULL || fill == NULL) {
      rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
      goto done;
    }
    for (size_t g = 0; g < ng; g++) gunit[g] = (size_t)-1;
    for (size_t i = 0; i < set->n; i++) { /* the units, in order of first row */
      const sc_sample *s = &set->rows[i];
      if (s->op.family != fd->family || train_side(set, s, frac) != side) continue;
      if (s->group > 0 && gunit[s->group - 1] != (size_t)-1) {
        fd->ulen[gunit[s->group - 1]]++;
        continue;
      }
      if (s->group > 0) gunit[s->group - 1] = nu;
      ug[nu] = s->group;
      fd->ulen[nu] = 1;
      fd->uan[nu] = 0.0;
      nu++;
    }
    fd->nu = nu;
    for (size_t u = 0, at = 0; u < nu; u++) {
      fd->ufirst[u] = at;
      at += fd->ulen[u];
    }
    if (side == 1 && (nu < (size_t)folds + 2 || nu < 8)) {
      rc = sc_error_set(err, SC_EINVAL, "%s: family '%s' has %zu measurements%s; fitting needs "
                        "at least max(8, folds + 2)", samples, fd->family, nu,
                        frac < 1.0 ? " to fit on (--train)" : "");
      goto done;
    }
    for (size_t g = 0; g < ng; g++) gunit[g] = (size_t)-1;
    for (size_t i = 0, nx = 0; i < set->n; i++) {
      const sc_sample *s = &set->rows[i];
      double x[SC_MAX_FEATURES];
      sc_estimate e;
      sc_error e2;
      size_t u, k;
      if (s->op.family != fd->family || train_side(set, s, frac) != side) continue;
      if (s->group > 0 && gunit[s->group - 1] != (size_t)-1) u = gunit[s->group - 1];
      else {
        u = nx++;
        if (s->group > 0) gunit[s->group - 1] = u;
      }
      k = fd->ufirst[u] + fill[u]++;
      if (sc_registry_estimate_op(reg, dev, &s->op, &e, &e2) != SC_OK) {
        rc = sc_error_set(err, e2.code, "%s:%u: %s", samples, s->line, e2.msg);
        goto done;
      }
      if (sc_resid_features(&e, x) != fd->p || !(e.time_s > 0)) {
        rc = sc_error_set(err, SC_EINVAL, "%s:%u: the %s plugin gave %u features (declares "
                          "%u) or a time <= 0", samples, s->line, fd->family, e.nfeatures,
                          op->nfeatures);
        goto done;
      }
      memcpy(&fd->X[k * fd->p], x, fd->p * sizeof(double));
      /* the analytical time as the stack prices it (--stack; the plugin's without one) */
      fd->an[k] = sc_stack_gpu_s(stack, dev, &s->op, &e, e.time_s);
      fd->uan[u] += fd->an[k];
      fd->umeas[u] = s->m.median_s; /* the group's whole time: its share below */
      fd->src[k] = i;
    }
    for (size_t u = 0; u < nu; u++) {
      if (ug[u] > 0) fd->umeas[u] *= fd->uan[u] / gan[ug[u] - 1];
      fd->order[u] = u;
      for (size_t k = fd->ufirst[u]; k < fd->ufirst[u] + fd->ulen[u]; k++) {
        const sc_sample *s = &set->rows[fd->src[k]];
        fd->meas[k] = fd->umeas[u] * fd->an[k] / fd->uan[u];
        if (rows != NULL) {
          fprintf(rows, "%s,%u,%u", fd->family, s->line, s->op.variant);
          for (uint32_t j = 0; j < 8; j++)
            fprintf(rows, ",%lld", j < s->op.ndims ? (long long)s->op.dims[j] : 0LL);
          sc_estimate e;
          sc_error e2;
          if (sc_registry_estimate_op(reg, dev, &s->op, &e, &e2) != SC_OK) memset(&e, 0, sizeof e);
          fprintf(rows, ",%.6g,%.6g,%s,%.6g,%.6g,%.4f\n", e.flops, e.bytes,
                  sc_bound_name(e.bound), fd->an[k], fd->meas[k], fd->meas[k] / fd->an[k]);
        }
      }
    }
    sort_ctx = fd;
    qsort(fd->order, fd->nu, sizeof *fd->order, by_analytical);
  }
done:
  free(gan);
  free(gunit);
  free(gout);
  free(ug);
  free(fill);
  return rc;
}

/* --comm: the rows of system in file become one fam_data per collective kind with enough
 * rows (the others are listed in skipped), each with the analytical estimate of what
 * stepcast comm --validate predicts for it and the measured time bytes / algbw. *topo gets
 * the topology the rows name (one only), *used the number of rows fitted. */
/* A table in `stepcast estimate --csv`'s collective form (family, bytes, nranks, optional
 * nodes and dtype, measured_s; every row a collective) as nccl-tests rows of one "system"
 * named after the topology, with each row's nodes, measured time and dtype beside them. */
typedef struct comm_table {
  uint32_t *nodes; /* 0: as nccl-tests places the ranks (sc_coll_place) */
  double *meas;
  sc_dtype *dt;
} comm_table;

static int comm_table_read(const char *file, const char *topology, sc_comm_vrow **out,
                           size_t *n, comm_table *tb, sc_error *err) {
  static const char *const need[] = {"family", "bytes", "nranks", "measured_s"};
  int idx[4], rc;
  sc_csv *t = NULL;
  *out = NULL;
  *n = 0;
  if ((rc = sc_csv_load(file, &t, err)) != SC_OK) return rc;
  const int nodes = sc_csv_column(t, "nodes"), dtype = sc_csv_column(t, "dtype"),
            source = sc_csv_column(t, "source");
  const size_t nr = sc_csv_nrows(t);
  if ((rc = sc_csv_require(t, need, 4, idx, err)) != SC_OK) goto done;
  if (nr == 0) {
    rc = sc_error_set(err, SC_EPARSE, "%s: no rows", file);
    goto done;
  }
  *out = calloc(nr, sizeof **out);
  tb->nodes = calloc(nr, sizeof *tb->nodes);
  tb->meas = calloc(nr, sizeof *tb->meas);
  tb->dt = calloc(nr, sizeof *tb->dt);
  if (*out == NULL || !tb->nodes || !tb->meas || !tb->dt) {
    rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
    goto done;
  }
  for (size_t i = 0; i < nr && rc == SC_OK; i++) {
    sc_comm_vrow *v = &(*out)[i];
    const unsigned line = sc_csv_line(t, i);
    const char *fam = sc_csv_field(t, i, (size_t)idx[0]);
    double b = 0, r = 0, k = 0, m = 0;
    int kb = 0, kr = 0, kk = 0, km = 0;
    if (sc_coll_kind_parse_loose(fam, &v->op) != SC_OK) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'family': '%.40s' is not a collective "
                        "kind (allreduce, allgather, reducescatter, alltoall, broadcast, "
                        "sendrecv)", file, line, fam);
      break;
    }
    if ((rc = sc_csv_double(t, i, (size_t)idx[1], &b, &kb, err)) != SC_OK ||
        (rc = sc_csv_double(t, i, (size_t)idx[2], &r, &kr, err)) != SC_OK ||
        (rc = sc_csv_double(t, i, (size_t)idx[3], &m, &km, err)) != SC_OK ||
        (nodes >= 0 && (rc = sc_csv_double(t, i, (size_t)nodes, &k, &kk, err)) != SC_OK))
      break;
    const char *bad = !kb || !(b > 0)                                      ? "bytes"
                      : !kr || r != floor(r) || r < 2 || r > 16777216.0   ? "nranks"
                      : kk && (k != floor(k) || k < 1 || k > r)           ? "nodes"
                      : !km || !(m > 0) || !isfinite(m)                   ? "measured_s"
                                                                         : NULL;
    if (bad != NULL) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column '%s': a measured collective needs "
                        "bytes > 0, a whole number of ranks (2 to 2^24), nodes in [1, nranks] "
                        "where given and a measured time > 0", file, line, bad);
      break;
    }
    tb->dt[i] = SC_DTYPE_FP32;
    if (dtype >= 0 && sc_csv_field(t, i, (size_t)dtype)[0] != '\0' &&
        sc_dtype_parse(sc_csv_field(t, i, (size_t)dtype), &tb->dt[i]) != SC_OK) {
      rc = sc_error_set(err, SC_EPARSE, "%s:%u: column 'dtype': '%.32s' is not a dtype", file,
                        line, sc_csv_field(t, i, (size_t)dtype));
      break;
    }
    v->line = line;
    snprintf(v->id, sizeof v->id, "%.63s", source >= 0 && sc_csv_field(t, i, (size_t)source)[0]
                                                ? sc_csv_field(t, i, (size_t)source)
                                                : "");
    snprintf(v->system, sizeof v->system, "%s", topology);
    snprintf(v->topology, sizeof v->topology, "%s", topology);
    snprintf(v->algo, sizeof v->algo, "auto");
    v->gpus = (uint32_t)r;
    v->bytes = b;
    tb->nodes[i] = kk ? (uint32_t)k : 0;
    tb->meas[i] = m;
  }
  if (rc == SC_OK) *n = nr;
done:
  sc_csv_free(t);
  return rc;
}

static void comm_table_free(comm_table *tb) {
  free(tb->nodes);
  free(tb->meas);
  free(tb->dt);
  memset(tb, 0, sizeof *tb);
}

/* The collective families of file: nccl-tests rows of one system (system), or a table of
 * measured collectives on one topology (topology; comm_table_read). */
static int comm_families(sc_registry *reg, const char *file, const char *system,
                         const char *topology, uint32_t folds, fam_data *fds, size_t *nf,
                         size_t *used, sc_topology *topo, FILE *rows, char *skipped,
                         size_t skcap, sc_error *err) {
  sc_comm_vrow *vr = NULL;
  comm_table tb = {0};
  size_t n = 0, first = (size_t)-1, count[SC_COLL_COUNT] = {0};
  size_t need = (size_t)folds + 2 > 8 ? (size_t)folds + 2 : 8, sl = 0;
  int rc = topology != NULL ? comm_table_read(file, topology, &vr, &n, &tb, err)
                            : sc_comm_read_validation(file, &vr, &n, err);
  if (rc != SC_OK) {
    free(vr);
    comm_table_free(&tb);
    return rc;
  }
  if (topology != NULL) system = topology;
  *nf = *used = 0;
  skipped[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (strcmp(vr[i].system, system) != 0) continue;
    if (first == (size_t)-1) first = i;
    else if (strcmp(vr[i].topology, vr[first].topology) != 0) {
      rc = sc_error_set(err, SC_EINVAL, "%s:%u: column 'topology': system '%s' has rows on "
                        "'%s' (line %u) and '%s'; fit one topology at a time", file,
                        (unsigned)vr[i].line, system, vr[first].topology,
                        (unsigned)vr[first].line, vr[i].topology);
      goto done;
    }
    count[vr[i].op]++;
  }
  if (first == (size_t)-1) {
    rc = sc_error_set(err, SC_ENOTFOUND, "%s: no row of system '%s' (column 'system', e.g. "
                      "'%s')", file, system, vr[0].system);
    goto done;
  }
  if ((rc = sc_topology_load(vr[first].topology, topo, err)) != SC_OK ||
      (rc = sc_comm_check_topology(topo, err)) != SC_OK)
    goto done;
  for (int k = 0; k < SC_COLL_COUNT; k++) {
    fam_data *fd;
    if (count[k] == 0) continue;
    if (count[k] < need) {
      int w = snprintf(skipped + sl, skcap - sl, "%s%s (%zu rows)", sl ? ", " : "",
                       sc_comm_kind_name((sc_coll_kind)k), count[k]);
      if (w > 0 && (size_t)w < skcap - sl) sl += (size_t)w;
      continue;
    }
    fd = &fds[(*nf)++];
    fd->family = sc_comm_kind_name((sc_coll_kind)k);
    fd->p = sc_coll_resid_nfeatures();
    for (uint32_t j = 0; j < fd->p; j++) add_name(fd, j, sc_coll_resid_feature_name(j));
    if ((rc = fam_alloc(fd, count[k], err)) != SC_OK) goto done;
    for (size_t i = 0; i < n; i++) {
      const sc_comm_vrow *r = &vr[i];
      sc_coll_desc c;
      sc_estimate e, ce;
      sc_error e2;
      const sc_coll_plugin *chosen = NULL;
      double x[SC_MAX_FEATURES];
      if (strcmp(r->system, system) != 0 || (int)r->op != k) continue;
      memset(&c, 0, sizeof c);
      if (topology != NULL) { /* the table's rows: placed on their nodes */
        if (sc_coll_place(topo, r->op, r->bytes, tb.dt[i], r->gpus, tb.nodes[i], &c, &e2) !=
            SC_OK) {
          rc = sc_error_set(err, e2.code, "%s:%u: %s", file, (unsigned)r->line, e2.msg);
          goto done;
        }
      } else if (sc_comm_check_gpus(topo, r->gpus, &e2) != SC_OK ||
                 sc_comm_group_flat(topo, r->gpus, &c, &e2) != SC_OK) {
        rc = sc_error_set(err, e2.code, "%s:%u (row '%s'): %s", file, (unsigned)r->line, r->id,
                          e2.msg);
        goto done;
      } else {
        c.kind = r->op;
        c.bytes = r->bytes;
        c.dtype = SC_DTYPE_FP32;
      }
      if (sc_comm_estimate_proto(reg, topo, &c, r->algo, &e, &chosen, NULL, &e2) != SC_OK ||
          !(e.time_s > 0)) {
        rc = sc_error_set(err, e2.code ? e2.code : SC_EINVAL, "%s:%u (row '%s'): %s", file,
                          (unsigned)r->line, r->id,
                          e2.code ? e2.msg : "the analytical time is not > 0");
        goto done;
      }
      {
        uint32_t nodes = sc_coll_resid_nodes(&c), g;
        for (g = 0; g < fd->ngroups; g++)
          if (fd->group_ranks[g] == c.nranks && fd->group_nodes[g] == nodes) break;
        if (g == fd->ngroups) {
          if (g == SC_RESID_MAX_GROUPS) {
            rc = sc_error_set(err, SC_ELIMIT, "%s:%u (row '%s'): more than %d group shapes "
                              "(GPU counts) for %s", file, (unsigned)r->line, r->id,
                              SC_RESID_MAX_GROUPS, fd->family);
            goto done;
          }
          fd->group_ranks[g] = c.nranks;
          fd->group_nodes[g] = nodes;
          fd->ngroups++;
        }
      }
      sc_coll_resid_input(&c, &e, &ce);
      if (sc_resid_features(&ce, x) != fd->p) {
        rc = sc_error_set(err, SC_EINVAL, "fit: collective features: count mismatch");
        goto done;
      }
      memcpy(&fd->X[fd->n * fd->p], x, fd->p * sizeof(double));
      fd->an[fd->n] = e.time_s;
      /* nccl-tests: algbw = bytes / time, busbw = algbw * bus factor; a table states it */
      fd->meas[fd->n] = topology != NULL ? tb.meas[i]
                                         : r->bytes * sc_comm_bus_factor(r->op, r->gpus) /
                                               r->busbw_Bps;
      if (rows != NULL)
        fprintf(rows, "%s,%u,%s,%u,%.0f,%s,%s,%.6g,%.6g,%.4f\n", fd->family,
                (unsigned)r->line, r->id, (unsigned)r->gpus, r->bytes,
                chosen ? chosen->algorithm : "?", sc_bound_name(e.bound), e.time_s,
                fd->meas[fd->n], fd->meas[fd->n] / e.time_s);
      fd->n++;
      (*used)++;
    }
    units_of_rows(fd);
  }
  if (*nf == 0)
    rc = sc_error_set(err, SC_EINVAL, "%s: %s '%s' has no collective kind with %zu rows "
                      "or more to fit (%s)", file, topology ? "topology" : "system", system,
                      need, skipped);
done:
  free(vr);
  comm_table_free(&tb);
  return rc;
}

/* --train's scores, per family of the rows left out of the fit: how many measurements
 * were fitted and scored, the sum of |estimate - measured| / measured of the analytical,
 * hybrid and learned estimators, and whether hybrid and learned had an active model. */
typedef struct train_score {
  const char *family;
  size_t fitted, scored;
  double sum[3];
  int none[2];
} train_score;

/* --train: the fitted models (models[f * NEST ..], before the manifest's reordering; the
 * active one per target, as --estimator uses it: sc_resid_time, the analytical time beyond
 * a domain where the rule said so) scored on the measurements left out of the fit (tfds),
 * a unit's estimate the sum of its rows'. */
static int score_train(const fam_data *fds, size_t nf, const fam_data *tfds, size_t ntf,
                       const sc_resid_model *models, train_score *ts, sc_error *err) {
  for (size_t t = 0; t < ntf; t++) {
    const fam_data *td = &tfds[t];
    const sc_resid_model *act[2] = {NULL, NULL};
    memset(&ts[t], 0, sizeof ts[t]);
    ts[t].family = td->family;
    ts[t].scored = td->nu;
    for (size_t f = 0; f < nf; f++) {
      if (fds[f].family != td->family) continue;
      ts[t].fitted = fds[f].nu;
      for (int e = 0; e < NEST; e++)
        if (models[f * NEST + (size_t)e].active)
          act[models[f * NEST + (size_t)e].target] = &models[f * NEST + (size_t)e];
    }
    for (int k = 0; k < 2; k++) ts[t].none[k] = act[k] == NULL;
    for (size_t u = 0; u < td->nu; u++) {
      double est[3] = {td->uan[u], 0, 0};
      for (size_t r = td->ufirst[u]; r < td->ufirst[u] + td->ulen[u]; r++)
        for (int k = 0; k < 2; k++) {
          double tm = td->an[r];
          int rc = act[k] == NULL ? SC_OK
                                  : sc_resid_time(act[k], &td->X[r * td->p], td->an[r], &tm, err);
          if (rc != SC_OK) return rc;
          est[1 + k] += tm;
        }
      for (int k = 0; k < 3; k++) ts[t].sum[k] += fabs(est[k] - td->umeas[u]) / td->umeas[u];
    }
  }
  return SC_OK;
}

static void print_train(FILE *out, const train_score *ts, size_t n, double frac) {
  double all[3] = {0, 0, 0};
  size_t nall = 0;
  fprintf(out, "\n## Held out at random: fitted on %.4g%% of the measurements, scored on the "
               "other %.4g%% (MAPE %%)\n\n", 100.0 * frac, 100.0 * (1.0 - frac));
  fprintf(out, "| family | fitted | scored | analytical | hybrid | learned |\n");
  fprintf(out, "|---|---:|---:|---:|---:|---:|\n");
  for (size_t t = 0; t < n; t++) {
    fprintf(out, "| %s | %zu | %zu", ts[t].family, ts[t].fitted, ts[t].scored);
    for (int k = 0; k < 3; k++) {
      fprintf(out, " | %.1f%s", ts[t].scored ? 100.0 * ts[t].sum[k] / (double)ts[t].scored : 0.0,
              k > 0 && ts[t].none[k - 1] ? " (none)" : "");
      all[k] += ts[t].sum[k];
    }
    fprintf(out, " |\n");
    nall += ts[t].scored;
  }
  fprintf(out, "| all | | %zu", nall);
  for (int k = 0; k < 3; k++) fprintf(out, " | %.1f", nall ? 100.0 * all[k] / (double)nall : 0.0);
  fprintf(out, " |\n\nA measurement (a row, or a group's rows) is fitted or scored whole, its "
               "side drawn from a hash of its group name or line (the same on every run). "
               "(none): no active model, the analytical time.\n");
}


/* ---- the public API (stepcast/fit.h) --------------------------------------------------- */

#define FIT_MAX_FAMILIES 32

struct sc_fit_result {
  sc_fit_request q;     /* the strings borrowed from the caller */
  fit_rule rule;
  char note[640];       /* sc_fit_note */
  char skipped[512];    /* --comm: the collectives with too few rows */
  char header[4096];    /* residuals.toml's comment block */
  const char *source, *basis, *target_name;
  size_t nrows;
  sc_topology topo;
  sc_device dev, dev2;
  sc_device plain; /* dev as its file describes it, before a stack sets its attention */
  sc_stack stack;
  sc_sample_set set, again; /* the samples and --repeat's */
  fam_data fds[FIT_MAX_FAMILIES], tfds[FIT_MAX_FAMILIES]; /* tfds: train's other rows */
  size_t nf, ntf;
  train_score tscore[FIT_MAX_FAMILIES];
  sc_resid_model *models; /* nf * NEST, family by family in est_kind order */
  const char **names;
  sc_afile rows_af;      /* q.rows, committed by sc_fit_write */
  int written;
};

void sc_fit_request_defaults(sc_fit_request *q) {
  if (q == NULL) return;
  memset(q, 0, sizeof *q);
  q->folds = 5;
  q->heldout = 0.25;
  q->select = SC_FIT_SELECT_DOMAIN;
  q->margin = FIT_MARGIN;
  q->train = 1.0;
  q->hybrid_features = -1;
  sc_fit_opts_defaults(&q->opts);
}

const char *sc_fit_note(const sc_fit_result *r) { return r != NULL ? r->note : ""; }

/* The request's own consistency (the CLI refuses the same as usage errors, earlier). */
static int check_request(const sc_fit_request *q, sc_error *err) {
  if ((q->samples == NULL) == (q->comm == NULL))
    return sc_error_set(err, SC_EINVAL, "fit: one of samples and comm is needed, not both");
  if (q->out == NULL || q->out[0] == '\0')
    return sc_error_set(err, SC_EINVAL, "fit: no output folder");
  if (q->samples != NULL && q->hardware == NULL)
    return sc_error_set(err, SC_EINVAL, "fit: samples need their hardware file");
  if (q->comm != NULL && ((q->system == NULL) == (q->topology == NULL) || q->hardware != NULL ||
                          q->repeat != NULL || q->stack != NULL || q->train < 1.0 ||
                          q->read != NULL || q->unread != NULL || q->families != NULL))
    return sc_error_set(err, SC_EINVAL, "fit: comm takes a system or a topology, and none of "
                        "hardware, repeat, stack, train, read, unread, families");
  if (q->comm == NULL && (q->system != NULL || q->topology != NULL))
    return sc_error_set(err, SC_EINVAL, "fit: system and topology are for comm");
  if (q->repeat != NULL && (q->repeat_hardware == NULL || q->stack != NULL || q->train < 1.0))
    return sc_error_set(err, SC_EINVAL, "fit: repeat needs its hardware file, and excludes "
                        "stack and train");
  if (q->folds < 2 || q->folds > 20 || !(q->heldout > 0 && q->heldout < 1) ||
      !(q->margin >= 0 && q->margin <= 0.5) || !(q->gain >= 0 && q->gain <= 0.5) ||
      !(q->train > 0 && q->train <= 1) || (unsigned)q->select > SC_FIT_SELECT_BOTH)
    return sc_error_set(err, SC_EINVAL, "fit: folds, heldout, margin, gain, train or select "
                        "out of range (stepcast/fit.h)");
  return SC_OK;
}

/* The output folder: created when missing (its parent must exist), before the fit. */
static int prepare_out(const char *outdir, sc_error *err) {
  struct stat st;
  if (stat(outdir, &st) != 0) {
    if (errno != ENOENT || mkdir(outdir, 0777) != 0)
      return sc_error_set(err, SC_EIO, "%s: --out: cannot create the folder: %s", outdir,
                          strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    return sc_error_set(err, SC_EIO, "%s: --out: not a folder", outdir);
  }
  return SC_OK;
}

static void fit_header(sc_fit_result *r) {
  const sc_fit_request *q = &r->q;
  time_t wall = time(NULL);
  struct tm tmv;
  char stamp[64], text[1024];
  gmtime_r(&wall, &tmv);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  rule_text(&r->rule, "analytical estimate", text, sizeof text);
  /* A header longer than the buffer is cut; it is a comment block, nothing parses it. */
  int hn = snprintf(r->header, sizeof r->header,
           "%s '%s'%s%s, written by stepcast fit (docs/learned.md).\n"
           "command: %s\ndate: %s\nsamples: %s (%zu rows%s%s); %s: %s\n"
           "cv_mape: %u-fold cross-validated MAPE of the estimator (fraction); heldout_mape: "
           "fitted on the smallest %.0f%% of the family by analytical time, tested on the rest.\n"
           "active: the kind the estimator uses: %s (none: the family stays analytical); "
           "inactive gbdt models are not kept (report.md has their errors).",
           q->comm ? "Collective residual models of topology" : "Residual models of device",
           r->target_name, q->stack ? " under stack " : "", q->stack ? r->stack.name : "",
           q->command ? q->command : "", stamp, r->source, r->nrows,
           !q->comm ? "" : q->system ? " of system " : " on topology ",
           !q->comm ? "" : q->system ? q->system : q->topology,
           q->comm ? "topology" : "hardware", r->basis, q->folds, 100.0 * (1.0 - q->heldout),
           text);
  if (hn < 0 || (size_t)hn >= sizeof r->header) r->header[sizeof r->header - 1] = '\0';
}

typedef struct probe_key {
  double an;
  size_t row;
} probe_key;

static int by_probe_an(const void *a, const void *b) {
  double x = ((const probe_key *)a)->an, y = ((const probe_key *)b)->an;
  return x < y ? -1 : x > y;
}

/* The probes of a family's models (sc_resid_model.probe): its rows with the shortest, the
 * median and the longest analytical time, priced again by the plugin on the hardware file
 * alone (plain: no stack), which sc_residuals_check_roofline compares with. */
static int set_probes(sc_registry *reg, const sc_device *plain, const fam_data *fd,
                      const sc_sample_set *set, sc_resid_model *models, sc_error *err) {
  probe_key *key = malloc((fd->n ? fd->n : 1) * sizeof *key);
  size_t pick[SC_RESID_MAX_PROBES];
  uint32_t np = 0;
  if (key == NULL) return sc_error_set(err, SC_ENOMEM, "fit: out of memory");
  for (size_t i = 0; i < fd->n; i++) key[i] = (probe_key){fd->an[i], i};
  qsort(key, fd->n, sizeof *key, by_probe_an);
  const size_t at[SC_RESID_MAX_PROBES] = {0, fd->n / 2, fd->n ? fd->n - 1 : 0};
  for (int j = 0; j < SC_RESID_MAX_PROBES && fd->n > 0; j++)
    if (j == 0 || at[j] != at[j - 1]) pick[np++] = key[at[j]].row;
  free(key);
  /* the memo knows a device by its name: plain shares dev's, whose attention a stack set */
  sc_registry_memo_clear(reg);
  for (uint32_t j = 0; j < np; j++) {
    const sc_sample *s = &set->rows[fd->src[pick[j]]];
    sc_estimate e;
    sc_error e2;
    if (sc_registry_estimate_op(reg, plain, &s->op, &e, &e2) != SC_OK)
      return sc_error_set(err, e2.code, "fit: probe %s: %s", fd->family, e2.msg);
    for (int k = 0; k < NEST; k++) {
      models[k].probe[j] = s->op;
      models[k].probe[j].family = NULL;
      models[k].probe_s[j] = e.time_s;
      models[k].nprobes = j + 1;
    }
  }
  sc_registry_memo_clear(reg);
  return SC_OK;
}

int sc_fit_run(sc_registry *reg, const sc_fit_request *q, sc_fit_result **out, sc_error *err) {
  sc_fit_result *r;
  const sc_stack *stack = NULL;
  int rc;
  if (out != NULL) *out = NULL;
  if (reg == NULL || q == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "fit: NULL argument");
  if ((rc = check_request(q, err)) != SC_OK) return rc;
  if ((r = calloc(1, sizeof *r)) == NULL) return sc_error_set(err, SC_ENOMEM, "fit: out of memory");
  r->q = *q;
  r->rule = (fit_rule){q->select == SC_FIT_SELECT_DOMAIN,
                       q->select == SC_FIT_SELECT_CHAIN || q->select == SC_FIT_SELECT_GUARD,
                       q->select == SC_FIT_SELECT_GUARD, q->select == SC_FIT_SELECT_BOTH,
                       q->margin, q->gain, q->folds};
  if (q->samples != NULL) {
    if ((rc = sc_samples_read(q->samples, &r->set, err)) != SC_OK) goto fail;
    double p90 = passes_spread_p90(q->samples);
    if (p90 > FIT_NOISY_P90 && !r->rule.chain && !r->rule.domain)
      snprintf(r->note, sizeof r->note, "%s: the sampler's passes disagreed by %.1f %% at the "
               "90th percentile (a noisy machine), where one held-out split of a few rows "
               "decides by the noise; --select domain (the default) or chain judges on four "
               "(docs/notes/0001-host-cpu-residuals.md, \"The selection rule\")", q->samples,
               p90);
    if ((rc = sc_hardware_load(reg, q->hardware, &r->dev, err)) != SC_OK) goto fail;
    r->plain = r->dev;
  }
  if (q->stack != NULL) {
    if ((rc = sc_stack_load(q->stack, &r->stack, err)) != SC_OK) goto fail;
    sc_stack_device(&r->stack, &r->dev); /* its attention kernel on this device */
    stack = &r->stack;
  }
  if ((rc = prepare_out(q->out, err)) != SC_OK) goto fail;
  if (q->rows != NULL) {
    if ((rc = sc_afile_open(&r->rows_af, q->rows, err)) != SC_OK) goto fail;
    if (q->comm != NULL)
      fprintf(r->rows_af.f, "family,line,id,gpus,bytes,algorithm,bound,analytical_s,"
              "measured_s,measured_over_analytical\n");
    else
      fprintf(r->rows_af.f, "family,line,variant,d0,d1,d2,d3,d4,d5,d6,d7,flops,bytes,bound,"
              "analytical_s,measured_s,measured_over_analytical\n");
  }
  if (q->comm != NULL) {
    if ((rc = comm_families(reg, q->comm, q->system, q->topology, q->folds, r->fds, &r->nf,
                            &r->nrows,
                            &r->topo, r->rows_af.f, r->skipped, sizeof r->skipped, err)) != SC_OK)
      goto fail;
    r->source = q->comm;
    r->basis = r->topo.path;
    r->target_name = r->topo.name;
  } else {
    int all = q->hybrid_features < 0 ? r->rule.domain : q->hybrid_features;
    r->source = q->samples;
    r->basis = q->hardware;
    r->target_name = r->dev.name;
    r->nrows = r->set.n;
    if ((rc = sample_families(reg, &r->dev, stack, q->samples, &r->set, q->families, q->folds,
                              q->train, 1, r->fds, FIT_MAX_FAMILIES, &r->nf, r->rows_af.f,
                              err)) != SC_OK)
      goto fail;
    if (q->train < 1.0 &&
        (rc = sample_families(reg, &r->dev, stack, q->samples, &r->set, q->families, q->folds,
                              q->train, 0, r->tfds, FIT_MAX_FAMILIES, &r->ntf, NULL, err)) !=
            SC_OK)
      goto fail;
    if (q->repeat != NULL && r->set.ngroups > 0) {
      rc = sc_error_set(err, SC_EINVAL, "%s: --repeat: the samples have groups (column "
                        "'group'); repeatability compares single operators", q->samples);
      goto fail;
    }
    for (size_t f = 0; f < r->nf && all; f++) r->fds[f].unread = 0;
    for (size_t f = 0; f < r->ntf && all; f++) r->tfds[f].unread = 0;
    if ((rc = apply_reads(r->fds, r->nf, "--read", q->read, 0, err)) != SC_OK ||
        (rc = apply_reads(r->fds, r->nf, "--unread", q->unread, 1, err)) != SC_OK)
      goto fail;
    if (q->repeat != NULL &&
        ((rc = sc_samples_read(q->repeat, &r->again, err)) != SC_OK ||
         (rc = sc_hardware_load(reg, q->repeat_hardware, &r->dev2, err)) != SC_OK ||
         (rc = repeat_match(reg, &r->dev2, r->fds, r->nf, &r->set, &r->again, q->repeat,
                            err)) != SC_OK))
      goto fail;
  }
  r->models = calloc(r->nf * NEST + 1, sizeof *r->models);
  r->names = calloc(r->nf * NEST + 1, sizeof *r->names);
  if (r->models == NULL || r->names == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "fit: out of memory");
    goto fail;
  }
  for (size_t f = 0; f < r->nf; f++) {
    if ((rc = fit_family(&r->fds[f], q->folds, q->heldout, &q->opts, &r->rule,
                         &r->models[f * NEST], err)) != SC_OK)
      goto fail;
    for (int e = 0; e < NEST; e++) r->names[f * NEST + (size_t)e] = r->fds[f].names;
    if (q->comm == NULL &&
        (rc = set_probes(reg, &r->plain, &r->fds[f], &r->set, &r->models[f * NEST], err)) !=
            SC_OK)
      goto fail;
  }
  if (q->train < 1.0 &&
      (rc = score_train(r->fds, r->nf, r->tfds, r->ntf, r->models, r->tscore, err)) != SC_OK)
    goto fail;
  fit_header(r);
  *out = r;
  return SC_OK;
fail:
  sc_fit_free(r);
  return rc;
}

/* report.md's body, and the tables sc_fit_print writes. */
static void fit_tables(const sc_fit_result *r, FILE *out) {
  const sc_fit_request *q = &r->q;
  print_tables(out, (fam_data *)r->fds, r->nf, q->folds, q->heldout,
               q->comm ? "analytical" : "roofline", &r->rule);
  if (q->repeat != NULL) print_repeat(out, r->fds, r->nf, q->repeat, q->repeat_hardware);
  if (q->train < 1.0) print_train(out, r->tscore, r->ntf, q->train);
}

static void fit_report(const sc_fit_result *r, FILE *rep) {
  const sc_fit_request *q = &r->q;
  fprintf(rep, "# Residual fit of %s\n\nCommand: `%s`\n\nSamples: `%s` (%zu rows%s%s), %s: "
          "`%s`. MAPE of the analytical %s, hybrid (analytical x exp(residual)) and "
          "learned (exp(regressor on features alone)) estimators.\n\n",
          r->target_name, q->command ? q->command : "", r->source, r->nrows,
          !q->comm ? "" : q->system ? " of system " : " on topology ",
          !q->comm ? "" : q->system ? q->system : q->topology,
          q->comm ? "topology" : "hardware", r->basis,
          q->comm ? "estimate (stepcast comm)" : "roofline");
  if (r->skipped[0] != '\0')
    fprintf(rep, "Skipped (fewer than max(8, folds + 2) rows): %s.\n\n", r->skipped);
  fit_tables(r, rep);
  fprintf(rep, "\nActive models (used by --estimator hybrid / learned; a family with none "
               "stays analytical: no model met the rule above):\n\n");
  for (size_t f = 0; f < r->nf; f++) {
    for (int t = 0; t < 2; t++) {
      const char *kind = "none (analytical)";
      const sc_resid_model *act = NULL;
      for (int e = 0; e < NEST; e++) {
        const sc_resid_model *mm = &r->models[f * NEST + (size_t)e];
        if (mm->active && (int)mm->target == t) act = mm;
      }
      if (act != NULL) kind = sc_resid_kind_name(act->kind);
      fprintf(rep, "- %s %s: %s", r->fds[f].family, sc_resid_target_name((sc_resid_target)t),
              kind);
      if (act != NULL && act->dom_hi > 0)
        fprintf(rep, "; fitted on analytical times %.3g to %.3g s, beyond them %s", act->dom_lo,
                act->dom_hi, act->beyond ? "the analytical time" : "the model");
      fprintf(rep, "\n");
    }
  }
}

int sc_fit_write(sc_fit_result *r, sc_error *err) {
  const sc_fit_request *q;
  sc_afile rep_af = {0};
  char path[SC_PATH_MAX + 16];
  size_t n, nk = 0;
  int rc;
  if (r == NULL) return sc_error_set(err, SC_EINVAL, "fit: write: no fit");
  if (r->written) return sc_error_set(err, SC_EINVAL, "fit: write: already written");
  q = &r->q;
  n = r->nf * NEST;
  snprintf(path, sizeof path, "%s/report.md", q->out);
  if ((rc = sc_afile_open(&rep_af, path, err)) != SC_OK) return rc;
  fit_report(r, rep_af.f);
  if ((q->rows != NULL && (rc = sc_afile_close(&r->rows_af, err)) != SC_OK) ||
      (rc = sc_afile_close(&rep_af, err)) != SC_OK)
    goto done;
  /* the manifest keeps every linear model (a few numbers) and the active gbdt ones */
  for (size_t i = 0; i < n; i++) {
    if (r->models[i].kind == SC_RESID_GBDT && !r->models[i].active) continue;
    if (nk != i) {
      sc_resid_model tmp = r->models[nk];
      const char *tn = r->names[nk];
      r->models[nk] = r->models[i];
      r->names[nk] = r->names[i];
      r->models[i] = tmp;
      r->names[i] = tn;
    }
    nk++;
  }
  r->written = 1; /* the models are reordered: no second write */
  /* the models (manifest last), then the rows and the report: all written, now renamed */
  if ((rc = sc_residuals_save(q->out, r->target_name, q->stack ? r->stack.name : NULL,
                              r->models, nk, r->names, r->header, err)) != SC_OK ||
      (q->rows != NULL && (rc = sc_afile_commit(&r->rows_af, err)) != SC_OK) ||
      (rc = sc_afile_commit(&rep_af, err)) != SC_OK)
    goto done;
  for (size_t i = nk; i < n; i++) {
    /* a tree file an earlier fit left for this family and target would outlive the
     * manifest that named it: remove it (the name is the one sc_residuals_save gives), now
     * that the new manifest is in place */
    char stale[SC_PATH_MAX + 160];
    if (r->models[i].kind != SC_RESID_GBDT || r->models[i].active) continue;
    snprintf(stale, sizeof stale, "%s/%s.%s.gbdt.json", q->out, r->models[i].family,
             sc_resid_target_name(r->models[i].target));
    if (remove(stale) != 0 && errno != ENOENT) {
      rc = sc_error_set(err, SC_EIO, "%s: %s", stale, strerror(errno));
      goto done;
    }
  }
  rc = SC_OK;
done:
  sc_afile_abort(&rep_af);
  return rc;
}

void sc_fit_print(const sc_fit_result *r, FILE *out) {
  const sc_fit_request *q;
  if (r == NULL || out == NULL) return;
  q = &r->q;
  if (q->comm != NULL)
    fprintf(out, "topology %s, %zu rows%s%s%s from %s%s%s\n\n", r->target_name, r->nrows,
            q->system ? " of system '" : "", q->system ? q->system : "",
            q->system ? "'" : "", r->source,
            r->skipped[0] ? "; skipped (too few rows): " : "", r->skipped);
  else
    fprintf(out, "device %s, %zu samples from %s%s\n\n", r->target_name, r->nrows, r->source,
            q->train < 1.0 ? " (--train: a share fitted, the rest scored)" : "");
  fit_tables(r, out);
}

void sc_fit_free(sc_fit_result *r) {
  if (r == NULL) return;
  sc_afile_abort(&r->rows_af);
  for (size_t i = 0; r->models != NULL && i < r->nf * NEST; i++)
    sc_resid_model_free(&r->models[i]);
  free(r->models);
  free((void *)r->names);
  for (size_t f = 0; f < r->nf; f++) fam_free(&r->fds[f]);
  for (size_t f = 0; f < r->ntf; f++) fam_free(&r->tfds[f]);
  sc_samples_free(&r->set);
  sc_samples_free(&r->again);
  free(r);
}
