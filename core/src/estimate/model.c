/*
 * Residual regressors: ridge (LAPACKE_dposv on the normal equations) and gradient-boosted
 * trees (XGBoost's C API, JSON model files). Contracts in stepcast/estimate.h.
 */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>
#include <yajl/yajl_tree.h>

#include "stepcast/afile.h"
#include "estimate/estimate_int.h"
#include "common/slurp.h"
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

int sc_resid_in_domain(const sc_resid_model *m, double an_s) {
  return m == NULL || !(m->dom_hi > 0) || (an_s >= m->dom_lo && an_s <= m->dom_hi);
}

int sc_resid_time(const sc_resid_model *m, const double *x, double an_s, double *time_s,
                  sc_error *err) {
  double y = 0.0;
  int rc;
  if (m == NULL || x == NULL || time_s == NULL)
    return sc_error_set(err, SC_EINVAL, "residual: NULL argument");
  if (m->beyond && !sc_resid_in_domain(m, an_s)) {
    *time_s = an_s;
    return SC_OK;
  }
  if ((rc = sc_resid_predict(m, x, &y, err)) != SC_OK) return rc;
  *time_s = m->target == SC_TARGET_HYBRID ? an_s * exp(y) : exp(y);
  return SC_OK;
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

int sc__resid_write_gbdt(const sc_resid_model *m, FILE *f, const char *path, sc_error *err) {
  bst_ulong len = 0;
  const char *buf = NULL;
  if (m == NULL || f == NULL || m->kind != SC_RESID_GBDT || m->booster == NULL)
    return sc_error_set(err, SC_EINVAL, "gbdt: save: not a fitted gbdt model");
  if (XGBoosterSaveModelToBuffer((BoosterHandle)m->booster, "{\"format\": \"json\"}", &len,
                                 &buf) != 0)
    return sc_error_set(err, SC_EIO, "%s: XGBoosterSaveModelToBuffer: %s", path,
                        XGBGetLastError());
  if (fwrite(buf, 1, (size_t)len, f) != (size_t)len)
    return sc_error_set(err, SC_EIO, "%s: write error", path);
  return SC_OK;
}

/* Through a temporary file renamed over path (common/afile.h): a failed save leaves the old
 * model as it was. */
int sc_resid_save_gbdt(const sc_resid_model *m, const char *path, sc_error *err) {
  sc_afile af;
  int rc;
  if (m == NULL || path == NULL || m->kind != SC_RESID_GBDT || m->booster == NULL)
    return sc_error_set(err, SC_EINVAL, "gbdt: save: not a fitted gbdt model");
  if ((rc = sc_afile_open(&af, path, err)) != SC_OK) return rc;
  if ((rc = sc__resid_write_gbdt(m, af.f, path, err)) != SC_OK) {
    sc_afile_abort(&af);
    return rc;
  }
  return sc_afile_commit(&af, err);
}

/* ------------------------------------------------------------------------- */
/* A gbdt model file checked before XGBoost reads it: XGBoost trusts the trees' indices (a
 * split feature or a child out of range reads outside its arrays; a tree that is its own
 * child never ends), so every index and number is checked here first. */

#define GBDT_MAX_DEPTH 64           /* JSON nesting: XGBoost's format needs 8 */
#define GBDT_MAX_NODES (1L << 24)   /* per tree */
#define GBDT_MAX_VALUE 100.0        /* |leaf value|, |base_score|: a log-time correction of
                                       e^100 is no model */

static const char *jstr(yajl_val v) { return YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL; }

static yajl_val jget(yajl_val obj, const char *key) {
  const char *p[2] = {key, NULL};
  return obj != NULL ? yajl_tree_get(obj, p, yajl_t_any) : NULL;
}

/* A JSON number (or a string holding one, as XGBoost writes its parameters) into *out;
 * 0 when it is one and finite. */
static int jnum(yajl_val v, double *out) {
  if (YAJL_IS_NUMBER(v)) {
    if (v->u.number.flags & YAJL_NUMBER_DOUBLE_VALID) *out = YAJL_GET_DOUBLE(v);
    else if (v->u.number.flags & YAJL_NUMBER_INT_VALID) *out = (double)YAJL_GET_INTEGER(v);
    else return -1;
    return isfinite(*out) ? 0 : -1;
  }
  if (YAJL_IS_STRING(v)) {
    char *end = NULL;
    const char *s = YAJL_GET_STRING(v);
    *out = strtod(s, &end);
    return (end != s && *end == '\0' && isfinite(*out)) ? 0 : -1;
  }
  return -1;
}

/* An integer (number or string) into *out; 0 when it is one. */
static int jint(yajl_val v, long long *out) {
  double d;
  if (YAJL_IS_INTEGER(v)) {
    *out = YAJL_GET_INTEGER(v);
    return 0;
  }
  if (jnum(v, &d) != 0 || d != floor(d) || fabs(d) > 9e15) return -1;
  *out = (long long)d;
  return 0;
}

/* The array named key of tree t, of exactly n entries. */
static int tree_array(const char *path, size_t t, yajl_val tree, const char *key, size_t n,
                      yajl_val *out, sc_error *err) {
  yajl_val a = jget(tree, key);
  if (!YAJL_IS_ARRAY(a))
    return sc_error_set(err, SC_EIO, "%s: tree %zu: '%s' is missing or not an array", path,
                        t, key);
  if (a->u.array.len != n)
    return sc_error_set(err, SC_EIO, "%s: tree %zu: '%s' has %zu entries, num_nodes is %zu",
                        path, t, key, a->u.array.len, n);
  *out = a;
  return SC_OK;
}

static int gbdt_check_tree(const char *path, size_t t, yajl_val tree, uint32_t nfeatures,
                           sc_error *err) {
  yajl_val lc = NULL, rc_ = NULL, par = NULL, si = NULL, sc = NULL, bw = NULL, dl = NULL,
           st = NULL, tp = jget(tree, "tree_param");
  long long n = 0, id = -1, x;
  int rc = SC_OK;
  if (!YAJL_IS_OBJECT(tree))
    return sc_error_set(err, SC_EIO, "%s: tree %zu: not an object", path, t);
  if (jint(jget(tree, "id"), &id) != 0 || id != (long long)t)
    return sc_error_set(err, SC_EIO, "%s: tree %zu: 'id' must be %zu (its place)", path, t,
                        t);
  if (jint(jget(tp, "num_nodes"), &n) != 0 || n < 1 || n > GBDT_MAX_NODES)
    return sc_error_set(err, SC_EIO, "%s: tree %zu: tree_param.num_nodes must be an integer "
                        "in [1, %ld]", path, t, GBDT_MAX_NODES);
  if (jint(jget(tp, "num_deleted"), &x) == 0 && x != 0)
    return sc_error_set(err, SC_EIO, "%s: tree %zu: %lld deleted nodes (a tree's nodes must "
                        "all be reached from its root)", path, t, x);
  size_t nn = (size_t)n;
  if ((rc = tree_array(path, t, tree, "left_children", nn, &lc, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "right_children", nn, &rc_, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "parents", nn, &par, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "split_indices", nn, &si, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "split_conditions", nn, &sc, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "base_weights", nn, &bw, err)) != SC_OK ||
      (rc = tree_array(path, t, tree, "default_left", nn, &dl, err)) != SC_OK)
    return rc;
  {
    const char *const more[] = {"loss_changes", "sum_hessian"};
    yajl_val a;
    for (size_t k = 0; k < 2; k++)
      if ((rc = tree_array(path, t, tree, more[k], nn, &a, err)) != SC_OK) return rc;
  }
  st = jget(tree, "split_type"); /* optional; every split numerical (no categories) */
  if (st != NULL && (!YAJL_IS_ARRAY(st) || st->u.array.len != nn))
    return sc_error_set(err, SC_EIO, "%s: tree %zu: 'split_type' must have num_nodes (%zu) "
                        "entries", path, t, nn);
  unsigned char *seen = calloc(nn, 1);
  size_t *stack = malloc(nn * sizeof *stack), top = 0;
  if (seen == NULL || stack == NULL) {
    free(seen);
    free(stack);
    return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  }
  /* depth-first from the root: every node reached once, children in range */
  seen[0] = 1;
  stack[top++] = 0;
  while (top > 0 && rc == SC_OK) {
    size_t i = stack[--top];
    long long l, r, f, pa;
    double c, w;
    if (jint(lc->u.array.values[i], &l) != 0 || jint(rc_->u.array.values[i], &r) != 0 ||
        jint(si->u.array.values[i], &f) != 0 || jint(par->u.array.values[i], &pa) != 0) {
      rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: a child, parent or split "
                        "index is not an integer", path, t, i);
      break;
    }
    if (jnum(sc->u.array.values[i], &c) != 0 || jnum(bw->u.array.values[i], &w) != 0) {
      rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: split_conditions or "
                        "base_weights is not a finite number", path, t, i);
      break;
    }
    if (st != NULL) {
      long long ty;
      if (jint(st->u.array.values[i], &ty) != 0 || ty != 0) {
        rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: split_type must be 0 "
                          "(numerical; categorical splits are not supported)", path, t, i);
        break;
      }
    }
    if ((l == -1) != (r == -1)) {
      rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: one child is -1 and the other "
                        "is not (%lld, %lld)", path, t, i, l, r);
      break;
    }
    if (l == -1) { /* a leaf: split_conditions holds its value */
      if (fabs(c) > GBDT_MAX_VALUE) {
        rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: leaf value %g is out of range "
                          "(|value| <= %g)", path, t, i, c, GBDT_MAX_VALUE);
        break;
      }
      continue;
    }
    if (f < 0 || f >= (long long)nfeatures) {
      rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: split feature %lld is out of "
                        "range (the model declares %u features)", path, t, i, f, nfeatures);
      break;
    }
    const long long ch[2] = {l, r};
    for (int k = 0; k < 2 && rc == SC_OK; k++) {
      if (ch[k] < 1 || ch[k] >= n) {
        rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: child %lld is out of range "
                          "[1, %lld)", path, t, i, ch[k], n);
      } else if (seen[ch[k]]) {
        rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: child %lld is reached twice "
                          "(a cycle or a shared node)", path, t, i, ch[k]);
      } else {
        long long cp;
        if (jint(par->u.array.values[ch[k]], &cp) != 0 || cp != (long long)i) {
          rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %lld: parent must be %zu", path,
                            t, ch[k], i);
        } else {
          seen[ch[k]] = 1;
          stack[top++] = (size_t)ch[k];
        }
      }
    }
  }
  for (size_t i = 0; i < nn && rc == SC_OK; i++) {
    if (!seen[i])
      rc = sc_error_set(err, SC_EIO, "%s: tree %zu node %zu: not reached from the root",
                        path, t, i);
  }
  free(seen);
  free(stack);
  return rc;
}

static int gbdt_check_file(const char *path, uint32_t nfeatures, sc_error *err) {
  char *text = NULL, ebuf[256];
  size_t len = 0;
  yajl_val root = NULL, L, gb, model, trees, info;
  long long nt = 0, nf = 0, x;
  double base;
  int rc = SC_OK;
  if ((rc = sc__slurp(path, SC_TEXT_INPUT_MAX, &text, &len, err)) != SC_OK) return rc;
  { /* nesting depth, outside strings: yajl_tree frees recursively */
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
      char c = text[i];
      if (in_str) {
        if (c == '\\' && i + 1 < len) i++;
        else if (c == '"') in_str = 0;
      } else if (c == '"') {
        in_str = 1;
      } else if ((c == '[' || c == '{') && ++depth > GBDT_MAX_DEPTH) {
        free(text);
        return sc_error_set(err, SC_EIO, "%s: JSON nested deeper than %d levels", path,
                            GBDT_MAX_DEPTH);
      } else if (c == ']' || c == '}') {
        depth--;
      }
    }
    if (memchr(text, '\0', len) != NULL) {
      free(text);
      return sc_error_set(err, SC_EIO, "%s: a NUL byte: not a JSON gbdt model (XGBoost's "
                          "binary formats are not read)", path);
    }
  }
  ebuf[0] = '\0';
  root = yajl_tree_parse(text, ebuf, sizeof ebuf);
  free(text);
  if (root == NULL) {
    for (char *p = ebuf; *p; p++)
      if (*p == '\n' || *p == '\r') *p = ' ';
    return sc_error_set(err, SC_EIO, "%s: not JSON: %s", path, ebuf[0] ? ebuf : "?");
  }
#define GBDT_FAIL(...)                               \
  do {                                               \
    rc = sc_error_set(err, SC_EIO, __VA_ARGS__); \
    goto done;                                       \
  } while (0)
  L = jget(root, "learner");
  if (!YAJL_IS_OBJECT(L)) GBDT_FAIL("%s: no 'learner' object (not an XGBoost JSON model)", path);
  {
    yajl_val mp = jget(L, "learner_model_param");
    if (jnum(jget(mp, "base_score"), &base) != 0 || fabs(base) > GBDT_MAX_VALUE)
      GBDT_FAIL("%s: learner_model_param.base_score must be a finite number with |value| <= "
                "%g", path, GBDT_MAX_VALUE);
    if (jint(jget(mp, "num_feature"), &nf) != 0 || nf != (long long)nfeatures)
      GBDT_FAIL("%s: learner_model_param.num_feature must be %u (the features residuals.toml "
                "lists)", path, nfeatures);
    if (jint(jget(mp, "num_class"), &x) == 0 && x > 1)
      GBDT_FAIL("%s: learner_model_param.num_class is %lld: a residual is one regression", path,
                x);
  }
  gb = jget(L, "gradient_booster");
  if (jstr(jget(gb, "name")) == NULL || strcmp(jstr(jget(gb, "name")), "gbtree") != 0)
    GBDT_FAIL("%s: gradient_booster.name must be \"gbtree\"", path);
  model = jget(gb, "model");
  trees = jget(model, "trees");
  if (!YAJL_IS_ARRAY(trees)) GBDT_FAIL("%s: gradient_booster.model.trees is not an array", path);
  if (jint(jget(jget(model, "gbtree_model_param"), "num_trees"), &nt) != 0 ||
      nt != (long long)trees->u.array.len)
    GBDT_FAIL("%s: gbtree_model_param.num_trees must be the number of trees (%zu)", path,
              trees->u.array.len);
  info = jget(model, "tree_info");
  if (!YAJL_IS_ARRAY(info) || info->u.array.len != trees->u.array.len)
    GBDT_FAIL("%s: tree_info must have one entry per tree (%zu)", path, trees->u.array.len);
  for (size_t t = 0; t < info->u.array.len; t++)
    if (jint(info->u.array.values[t], &x) != 0 || x != 0)
      GBDT_FAIL("%s: tree %zu: tree_info must be 0 (one output group)", path, t);
  for (size_t t = 0; t < trees->u.array.len; t++)
    if ((rc = gbdt_check_tree(path, t, trees->u.array.values[t], nfeatures, err)) != SC_OK)
      goto done;
#undef GBDT_FAIL
done:
  yajl_tree_free(root);
  return rc;
}

int sc_resid_load_gbdt(sc_resid_model *m, const char *path, sc_error *err) {
  BoosterHandle bh = NULL;
  FILE *f;
  if (m == NULL || path == NULL || m->kind != SC_RESID_GBDT)
    return sc_error_set(err, SC_EINVAL, "gbdt: load: not a gbdt model");
  f = fopen(path, "rb"); /* XGBoost's own message for a missing file is vague */
  if (f == NULL) return sc_error_set(err, SC_EIO, "%s: cannot open gbdt model", path);
  fclose(f);
  int rc = gbdt_check_file(path, m->nfeatures, err);
  if (rc != SC_OK) return rc;
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
