/*
 * Residual regressors: ridge (LAPACKE_dposv on the normal equations) and gradient-boosted
 * trees (XGBoost's C API, JSON model files). Contracts in stepcast/estimate.h.
 */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"

const char *sc_resid_kind_name(sc_resid_kind k) {
  return k == SC_RESID_LINEAR ? "linear" : k == SC_RESID_GBDT ? "gbdt" : "?";
}

const char *sc_resid_target_name(sc_resid_target t) {
  return t == SC_TARGET_HYBRID ? "hybrid" : t == SC_TARGET_LEARNED ? "learned" : "?";
}

static const char *const extra_names[SC_RESID_EXTRA_FEATURES] = {
    "log10_analytical_s", "hinge_log10_bytes_5", "hinge_log10_bytes_6",
    "hinge_log10_bytes_7", "hinge_log10_bytes_8", "compute_bound"};
/* which of them measure the operator's scale (sc_resid_scale_mask): all but compute_bound */
static const int extra_is_scale[SC_RESID_EXTRA_FEATURES] = {1, 1, 1, 1, 1, 0};

const char *sc_resid_extra_name(uint32_t i) {
  return i < SC_RESID_EXTRA_FEATURES ? extra_names[i] : "?";
}

uint32_t sc_resid_nfeatures(const sc_op_plugin *op) {
  uint32_t n = op->nfeatures + SC_RESID_EXTRA_FEATURES;
  return n < SC_MAX_FEATURES ? n : SC_MAX_FEATURES;
}

uint32_t sc_resid_scale_mask(const sc_op_plugin *op) {
  uint32_t n = sc_resid_nfeatures(op), own = op->nfeatures < n ? op->nfeatures : n;
  uint32_t mask = sc_op_scale_features(op) & (own < 32 ? (1u << own) - 1u : ~0u);
  for (uint32_t i = 0; i < SC_RESID_EXTRA_FEATURES && own + i < n; i++)
    if (extra_is_scale[i]) mask |= SC_FEATURE(own + i);
  return mask;
}

const char *sc_resid_feature_name(const sc_op_plugin *op, uint32_t j) {
  return j < op->nfeatures ? op->feature_names[j] : sc_resid_extra_name(j - op->nfeatures);
}

static const char *const coll_names[SC_COLL_RESID_OWN_FEATURES] = {"log10_bytes", "log2_ranks",
                                                                   "log2_nodes"};

uint32_t sc_coll_resid_nfeatures(void) {
  uint32_t n = SC_COLL_RESID_OWN_FEATURES + SC_RESID_EXTRA_FEATURES;
  return n < SC_MAX_FEATURES ? n : SC_MAX_FEATURES;
}

const char *sc_coll_resid_feature_name(uint32_t j) {
  return j < SC_COLL_RESID_OWN_FEATURES ? coll_names[j]
                                        : sc_resid_extra_name(j - SC_COLL_RESID_OWN_FEATURES);
}

uint32_t sc_coll_resid_nodes(const sc_coll_desc *c) {
  /* members per node: tier 0's fan-out (a group inside one node spans one node) */
  uint32_t ranks = c->nranks > 0 ? c->nranks : 1;
  uint32_t per_node = c->ntiers > 0 && c->tiers[0].ranks > 0 ? c->tiers[0].ranks : ranks;
  return ranks / per_node > 1 ? ranks / per_node : 1;
}

void sc_coll_resid_input(const sc_coll_desc *c, const sc_estimate *an, sc_estimate *out) {
  double ranks = c->nranks > 0 ? (double)c->nranks : 1.0;
  *out = *an;
  out->bytes = c->bytes;
  out->nfeatures = SC_COLL_RESID_OWN_FEATURES;
  out->features[0] = log10(c->bytes > 1.0 ? c->bytes : 1.0);
  out->features[1] = log2(ranks);
  out->features[2] = log2((double)sc_coll_resid_nodes(c));
}

uint32_t sc_resid_features(const sc_estimate *e, double *x) {
  uint32_t n = e->nfeatures < SC_MAX_FEATURES ? e->nfeatures : SC_MAX_FEATURES;
  double lb = log10(e->bytes > 1.0 ? e->bytes : 1.0);
  double extra[SC_RESID_EXTRA_FEATURES] = {
      log10(e->time_s > 1e-15 ? e->time_s : 1e-15), fmax(0.0, lb - 5.0), fmax(0.0, lb - 6.0),
      fmax(0.0, lb - 7.0), fmax(0.0, lb - 8.0), e->bound == SC_BOUND_COMPUTE ? 1.0 : 0.0};
  for (uint32_t i = 0; i < n; i++) x[i] = e->features[i];
  for (uint32_t i = 0; i < SC_RESID_EXTRA_FEATURES && n < SC_MAX_FEATURES; i++) x[n++] = extra[i];
  return n;
}

void sc_fit_opts_defaults(sc_fit_opts *o) {
  o->lambda = -1.0;
  o->gbdt_rounds = 100;
  o->gbdt_depth = 3;
  o->gbdt_eta = 0.15;
}

int sc_ridge_fit(const double *X, const double *y, size_t n, uint32_t p, double lambda,
                 double *mean, double *scale, double *coef, double *intercept, sc_error *err) {
  double A[SC_MAX_FEATURES * SC_MAX_FEATURES], b[SC_MAX_FEATURES], ybar = 0.0;
  lapack_int info;
  if (X == NULL || y == NULL || mean == NULL || scale == NULL || coef == NULL ||
      intercept == NULL)
    return sc_error_set(err, SC_EINVAL, "ridge: NULL argument");
  if (n < 1 || p > SC_MAX_FEATURES)
    return sc_error_set(err, SC_EINVAL, "ridge: need n >= 1 rows and p <= %d features (n=%zu, "
                        "p=%u)", SC_MAX_FEATURES, n, p);
  if (!(lambda >= 0) || !isfinite(lambda))
    return sc_error_set(err, SC_EINVAL, "ridge: lambda must be finite and >= 0 (is %g)", lambda);
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(y[i])) return sc_error_set(err, SC_EINVAL, "ridge: y[%zu] is not finite", i);
    ybar += y[i];
    for (uint32_t j = 0; j < p; j++) {
      if (!isfinite(X[i * p + j]))
        return sc_error_set(err, SC_EINVAL, "ridge: X[%zu][%u] is not finite", i, j);
    }
  }
  ybar /= (double)n;
  for (uint32_t j = 0; j < p; j++) {
    double s = 0.0, s2 = 0.0;
    for (size_t i = 0; i < n; i++) s += X[i * p + j];
    mean[j] = s / (double)n;
    for (size_t i = 0; i < n; i++) {
      double d = X[i * p + j] - mean[j];
      s2 += d * d;
    }
    scale[j] = sqrt(s2 / (double)n);
    if (!(scale[j] > 1e-12 * (fabs(mean[j]) + 1.0))) scale[j] = 1.0; /* constant column */
  }
  *intercept = ybar;
  if (p == 0) return SC_OK;
  memset(A, 0, sizeof A);
  memset(b, 0, sizeof b);
  for (size_t i = 0; i < n; i++) {
    double z[SC_MAX_FEATURES];
    for (uint32_t j = 0; j < p; j++) z[j] = (X[i * p + j] - mean[j]) / scale[j];
    for (uint32_t j = 0; j < p; j++) {
      b[j] += z[j] * (y[i] - ybar);
      for (uint32_t k = 0; k <= j; k++) A[j * p + k] += z[j] * z[k];
    }
  }
  for (uint32_t j = 0; j < p; j++) {
    for (uint32_t k = 0; k < j; k++) A[k * p + j] = A[j * p + k];
    A[j * p + j] += lambda;
  }
  info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', (lapack_int)p, 1, A, (lapack_int)p, b, 1);
  if (info > 0)
    return sc_error_set(err, SC_ERANGE, "ridge: normal equations are singular (leading minor "
                        "%d); raise lambda", (int)info);
  if (info < 0) return sc_error_set(err, SC_EINVAL, "ridge: LAPACKE_dposv argument %d", (int)-info);
  for (uint32_t j = 0; j < p; j++) coef[j] = b[j];
  return SC_OK;
}

/* The penalty, among n * {1e-3, 1e-2, 0.1, 1, 10}, with the least squared error of a 4-fold
 * cross-validation inside the rows given (rows dealt round-robin to folds). */
static int ridge_pick_lambda(const double *X, const double *y, size_t n, uint32_t p,
                             double *lambda, sc_error *err) {
  static const double grid[] = {1e-3, 1e-2, 0.1, 1.0, 10.0};
  double best = INFINITY;
  double *Xt = malloc(n * (p ? p : 1) * sizeof *Xt), *yt = malloc(n * sizeof *yt);
  int rc = SC_OK;
  *lambda = 1e-3 * (double)n;
  if (Xt == NULL || yt == NULL) {
    free(Xt);
    free(yt);
    return sc_error_set(err, SC_ENOMEM, "ridge: out of memory");
  }
  for (size_t g = 0; n >= 8 && g < sizeof grid / sizeof grid[0] && rc == SC_OK; g++) {
    double sse = 0.0, lam = grid[g] * (double)n;
    for (size_t k = 0; k < 4 && rc == SC_OK; k++) {
      double mean[SC_MAX_FEATURES], scale[SC_MAX_FEATURES], coef[SC_MAX_FEATURES], b0;
      size_t nt = 0;
      for (size_t i = 0; i < n; i++) {
        if (i % 4 == k) continue;
        memcpy(&Xt[nt * p], &X[i * p], p * sizeof *Xt);
        yt[nt++] = y[i];
      }
      rc = sc_ridge_fit(Xt, yt, nt, p, lam * (double)nt / (double)n, mean, scale, coef, &b0, err);
      for (size_t i = k; i < n && rc == SC_OK; i += 4) {
        double s = b0;
        for (uint32_t j = 0; j < p; j++) s += coef[j] * (X[i * p + j] - mean[j]) / scale[j];
        sse += (s - y[i]) * (s - y[i]);
      }
    }
    if (rc == SC_OK && sse < best) {
      best = sse;
      *lambda = lam;
    }
  }
  free(Xt);
  free(yt);
  return rc;
}

static int xgb_fail(sc_error *err, const char *call) {
  return sc_error_set(err, SC_EUNSUPPORTED, "gbdt: %s: %s", call, XGBGetLastError());
}

static int gbdt_fit(sc_resid_model *m, const double *X, const double *y, size_t n,
                    const sc_fit_opts *o, sc_error *err) {
  float *xf = malloc(n * (m->nfeatures ? m->nfeatures : 1) * sizeof *xf);
  float *yf = malloc(n * sizeof *yf);
  DMatrixHandle dm = NULL;
  BoosterHandle bh = NULL;
  char buf[64];
  int rc = SC_OK;
  if (xf == NULL || yf == NULL) {
    free(xf);
    free(yf);
    return sc_error_set(err, SC_ENOMEM, "gbdt: out of memory");
  }
  for (size_t i = 0; i < n * m->nfeatures; i++) xf[i] = (float)X[i];
  for (size_t i = 0; i < n; i++) yf[i] = (float)y[i];
  if (XGDMatrixCreateFromMat(xf, (bst_ulong)n, (bst_ulong)m->nfeatures, NAN, &dm) != 0) {
    rc = xgb_fail(err, "XGDMatrixCreateFromMat");
  } else if (XGDMatrixSetFloatInfo(dm, "label", yf, (bst_ulong)n) != 0) {
    rc = xgb_fail(err, "XGDMatrixSetFloatInfo");
  } else if (XGBoosterCreate(&dm, 1, &bh) != 0) {
    rc = xgb_fail(err, "XGBoosterCreate");
  } else {
    const char *kv[][2] = {{"objective", "reg:squarederror"}, {"nthread", "1"},
                           {"verbosity", "0"}, {"seed", "0"}, {"subsample", "1"},
                           {"min_child_weight", "1"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && rc == SC_OK; i++) {
      if (XGBoosterSetParam(bh, kv[i][0], kv[i][1]) != 0) rc = xgb_fail(err, "XGBoosterSetParam");
    }
    /* The trees start from the estimator's prior, not XGBoost 1.x's default 0.5 (a factor
     * e^0.5 that the first rounds must undo and that shrinkage pulls back toward): the
     * roofline itself (0) for a residual, the mean log time for a learned model. */
    double base = 0.0;
    if (m->target == SC_TARGET_LEARNED) {
      for (size_t i = 0; i < n; i++) base += y[i];
      base /= (double)n;
    }
    snprintf(buf, sizeof buf, "%.17g", base);
    if (rc == SC_OK && XGBoosterSetParam(bh, "base_score", buf) != 0)
      rc = xgb_fail(err, "XGBoosterSetParam");
    snprintf(buf, sizeof buf, "%u", o->gbdt_depth);
    if (rc == SC_OK && XGBoosterSetParam(bh, "max_depth", buf) != 0)
      rc = xgb_fail(err, "XGBoosterSetParam");
    snprintf(buf, sizeof buf, "%g", o->gbdt_eta);
    if (rc == SC_OK && XGBoosterSetParam(bh, "eta", buf) != 0)
      rc = xgb_fail(err, "XGBoosterSetParam");
    for (uint32_t it = 0; it < o->gbdt_rounds && rc == SC_OK; it++) {
      if (XGBoosterUpdateOneIter(bh, (int)it, dm) != 0) rc = xgb_fail(err, "XGBoosterUpdateOneIter");
    }
  }
  if (dm != NULL) XGDMatrixFree(dm);
  free(xf);
  free(yf);
  if (rc != SC_OK) {
    if (bh != NULL) XGBoosterFree(bh);
    return rc;
  }
  m->booster = bh;
  return SC_OK;
}

int sc_resid_fit(sc_resid_model *m, const double *X, const double *y, size_t n,
                 const sc_fit_opts *o, sc_error *err) {
  sc_fit_opts d;
  if (m == NULL || X == NULL || y == NULL) return sc_error_set(err, SC_EINVAL, "fit: NULL argument");
  if (o == NULL) {
    sc_fit_opts_defaults(&d);
    o = &d;
  }
  if (n < 2) return sc_error_set(err, SC_EINVAL, "fit: %s: need at least 2 samples (have %zu)",
                                 m->family, n);
  if (m->nfeatures > SC_MAX_FEATURES)
    return sc_error_set(err, SC_EINVAL, "fit: %s: %u features, at most %d", m->family,
                        m->nfeatures, SC_MAX_FEATURES);
  m->booster = NULL;
  if (m->kind != SC_RESID_LINEAR && m->kind != SC_RESID_GBDT)
    return sc_error_set(err, SC_EINVAL, "fit: unknown model kind %d", (int)m->kind);
  uint32_t p = m->nfeatures, q = 0, cols[SC_MAX_FEATURES];
  for (uint32_t j = 0; j < p; j++)
    if (!(m->unread & SC_FEATURE(j))) cols[q++] = j;
  /* the read columns only (linear), or every column with the unread ones at 0 (gbdt: the
   * trees never split on a constant) */
  uint32_t w = m->kind == SC_RESID_LINEAR ? q : p;
  double *Xr = malloc(n * (w ? w : 1) * sizeof *Xr);
  int rc = SC_OK;
  if (Xr == NULL) return sc_error_set(err, SC_ENOMEM, "fit: out of memory");
  for (size_t i = 0; i < n; i++) {
    if (m->kind == SC_RESID_LINEAR) {
      for (uint32_t c = 0; c < q; c++) Xr[i * q + c] = X[i * p + cols[c]];
    } else {
      for (uint32_t j = 0; j < p; j++)
        Xr[i * p + j] = (m->unread & SC_FEATURE(j)) ? 0.0 : X[i * p + j];
    }
  }
  if (m->kind == SC_RESID_LINEAR) {
    double mean[SC_MAX_FEATURES], scale[SC_MAX_FEATURES], coef[SC_MAX_FEATURES];
    m->lambda = o->lambda;
    if (m->lambda < 0) rc = ridge_pick_lambda(Xr, y, n, q, &m->lambda, err);
    m->y_lo = m->y_hi = y[0]; /* a residual's range; a learned log time extrapolates */
    for (size_t i = 1; i < n && m->target == SC_TARGET_HYBRID; i++) {
      if (y[i] < m->y_lo) m->y_lo = y[i];
      if (y[i] > m->y_hi) m->y_hi = y[i];
    }
    if (rc == SC_OK)
      rc = sc_ridge_fit(Xr, y, n, q, m->lambda, mean, scale, coef, &m->intercept, err);
    for (uint32_t j = 0; j < p; j++) { /* an unread feature: 0 + 0 * (x - 0) / 1 */
      m->mean[j] = 0.0;
      m->scale[j] = 1.0;
      m->coef[j] = 0.0;
    }
    for (uint32_t c = 0; c < q && rc == SC_OK; c++) {
      m->mean[cols[c]] = mean[c];
      m->scale[cols[c]] = scale[c];
      m->coef[cols[c]] = coef[c];
    }
  } else {
    rc = gbdt_fit(m, Xr, y, n, o, err);
  }
  free(Xr);
  return rc;
}

int sc_resid_predict(const sc_resid_model *m, const double *x, double *out, sc_error *err) {
  if (m == NULL || x == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "residual: NULL argument");
  if (m->kind == SC_RESID_LINEAR) {
    double s = m->intercept;
    for (uint32_t j = 0; j < m->nfeatures; j++)
      if (!(m->unread & SC_FEATURE(j))) s += m->coef[j] * (x[j] - m->mean[j]) / m->scale[j];
    if (m->y_lo < m->y_hi) s = s < m->y_lo ? m->y_lo : s > m->y_hi ? m->y_hi : s;
    *out = s;
    return SC_OK;
  }
  if (m->kind == SC_RESID_GBDT) {
    float xf[SC_MAX_FEATURES + 1];
    DMatrixHandle dm = NULL;
    bst_ulong len = 0;
    const float *res = NULL;
    int rc = SC_OK;
    if (m->booster == NULL)
      return sc_error_set(err, SC_EINVAL, "residual: %s gbdt model has no booster", m->family);
    for (uint32_t j = 0; j < m->nfeatures; j++)
      xf[j] = (m->unread & SC_FEATURE(j)) ? 0.0f : (float)x[j];
    if (XGDMatrixCreateFromMat(xf, 1, (bst_ulong)m->nfeatures, NAN, &dm) != 0)
      return xgb_fail(err, "XGDMatrixCreateFromMat");
    if (XGBoosterPredict((BoosterHandle)m->booster, dm, 0, 0, 0, &len, &res) != 0)
      rc = xgb_fail(err, "XGBoosterPredict");
    else if (len != 1)
      rc = sc_error_set(err, SC_EUNSUPPORTED, "gbdt: XGBoosterPredict returned %llu values",
                        (unsigned long long)len);
    else
      *out = (double)res[0];
    XGDMatrixFree(dm);
    return rc;
  }
  return sc_error_set(err, SC_EINVAL, "residual: unknown model kind %d", (int)m->kind);
}

int sc_resid_save_gbdt(const sc_resid_model *m, const char *path, sc_error *err) {
  if (m == NULL || path == NULL || m->kind != SC_RESID_GBDT || m->booster == NULL)
    return sc_error_set(err, SC_EINVAL, "gbdt: save: not a fitted gbdt model");
  if (XGBoosterSaveModel((BoosterHandle)m->booster, path) != 0)
    return sc_error_set(err, SC_EIO, "%s: XGBoosterSaveModel: %s", path, XGBGetLastError());
  return SC_OK;
}

int sc_resid_load_gbdt(sc_resid_model *m, const char *path, sc_error *err) {
  BoosterHandle bh = NULL;
  FILE *f;
  if (m == NULL || path == NULL || m->kind != SC_RESID_GBDT)
    return sc_error_set(err, SC_EINVAL, "gbdt: load: not a gbdt model");
  f = fopen(path, "rb"); /* XGBoost's own message for a missing file is vague */
  if (f == NULL) return sc_error_set(err, SC_EIO, "%s: cannot open gbdt model", path);
  fclose(f);
  if (XGBoosterCreate(NULL, 0, &bh) != 0) return xgb_fail(err, "XGBoosterCreate");
  if (XGBoosterLoadModel(bh, path) != 0) {
    int rc = sc_error_set(err, SC_EIO, "%s: XGBoosterLoadModel: %s", path, XGBGetLastError());
    XGBoosterFree(bh);
    return rc;
  }
  XGBoosterSetParam(bh, "nthread", "1");
  m->booster = bh;
  return SC_OK;
}

void sc_resid_model_free(sc_resid_model *m) {
  if (m == NULL) return;
  if (m->booster != NULL) XGBoosterFree((BoosterHandle)m->booster);
  m->booster = NULL;
}
