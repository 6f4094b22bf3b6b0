/*
 * Pricing one operator or collective with every estimator, and scoring estimates against
 * measured times (stepcast estimate, stepcast fit --test; docs/learned.md, "Scoring").
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/registry.h"
#include "stepcast/stepcast.h"

int sc_op_parse(const sc_registry *reg, const char *family, const char *variant,
                const char *dtype, const char *dims, sc_op_desc *out, sc_error *err) {
  const sc_op_plugin *op;
  char *end;
  unsigned long long v;
  if (reg == NULL || family == NULL || variant == NULL || dtype == NULL || dims == NULL ||
      out == NULL)
    return sc_error_set(err, SC_EINVAL, "operator: NULL argument");
  memset(out, 0, sizeof *out);
  op = sc_registry_op(reg, family);
  if (op == NULL)
    return sc_error_set(err, SC_EINVAL, "column 'family': '%.64s' is not an operator family "
                        "(no operator plugin of that name; stepcast plugins lists them)",
                        family);
  out->family = op->hdr.name; /* the plugin's static name: outlives every use */
  errno = 0;
  v = strtoull(variant, &end, 10);
  if (!isdigit((unsigned char)variant[0]) || *end != '\0' || errno != 0 || v > 255)
    return sc_error_set(err, SC_EINVAL, "column 'variant': '%.32s' is not a whole number in "
                        "[0, 255] (the family's variant code, docs/operators.md)", variant);
  out->variant = (uint32_t)v;
  if (sc_dtype_parse(dtype, &out->dtype) != SC_OK)
    return sc_error_set(err, SC_EINVAL, "column 'dtype': '%.32s' is not a dtype (fp32, tf32, "
                        "bf16, fp16, fp8, int8)", dtype);
  for (const char *q = dims;;) {
    if (!isdigit((unsigned char)*q) || out->ndims == SC_OP_MAX_DIMS)
      return sc_error_set(err, SC_EINVAL, "column 'dims': '%.64s' is not 1 to %d whole "
                          "numbers joined by 'x'", dims, SC_OP_MAX_DIMS);
    errno = 0;
    v = strtoull(q, &end, 10);
    if (errno != 0 || v > (unsigned long long)INT64_MAX / 2 || (*end != 'x' && *end != '\0'))
      return sc_error_set(err, SC_EINVAL, "column 'dims': '%.64s' is not 1 to %d whole "
                          "numbers (each below 2^62) joined by 'x'", dims, SC_OP_MAX_DIMS);
    out->dims[out->ndims++] = (int64_t)v;
    if (*end == '\0') break;
    q = end + 1;
  }
  return SC_OK;
}

/* A corrected estimate must be a time: finite and not negative (a learned model's exp() can
 * overflow where the plugin's own time, checked by the registry, does not). */
static int check_time(const char *what, double t, sc_error *err) {
  if (!isfinite(t) || t < 0.0)
    return sc_error_set(err, SC_ERANGE, "%s: the estimate %g s is not a time", what, t);
  return SC_OK;
}

int sc_price_mode(const sc_residuals *r, const sc_stack *s, const sc_device *dev,
                  sc_estimator mode, const sc_op_desc *op, const sc_estimate *e,
                  double *time_s, sc_error *err) {
  if (dev == NULL || op == NULL || e == NULL || time_s == NULL)
    return sc_error_set(err, SC_EINVAL, "price: NULL argument");
  *time_s = sc_stack_gpu_s(s, dev, op, e, e->time_s);
  if (mode == SC_ESTIMATOR_ANALYTICAL || r == NULL) return SC_OK;
  if (r->stack[0] == '\0') { /* the plugin's time corrected, then the stack's additions */
    double t;
    int rc = sc_residuals_apply(r, mode, op->family, e, &t, err);
    if (rc == SC_OK) *time_s = sc_stack_gpu_s(s, dev, op, e, t);
    return rc;
  }
  if (s == NULL || strcmp(s->name, r->stack) != 0)
    return sc_error_set(err, SC_EINVAL, "residuals %s were fitted under stack '%s'; this "
                        "prices %s%s%s (give --stack %s, or residuals fitted without one)",
                        r->dir, r->stack, s ? "stack '" : "no stack", s ? s->name : "",
                        s ? "'" : "", r->stack);
  return sc_residuals_apply_at(r, mode, op->family, e, *time_s, time_s, err);
}

int sc_price_op(sc_registry *reg, const sc_device *dev, const sc_residuals *r,
                const sc_op_desc *op, sc_price *out, sc_error *err) {
  return sc_price_op_stack(reg, dev, NULL, r, op, out, err);
}

int sc_price_op_stack(sc_registry *reg, const sc_device *dev, const sc_stack *s,
                      const sc_residuals *r, const sc_op_desc *op, sc_price *out,
                      sc_error *err) {
  int rc;
  if (reg == NULL || dev == NULL || op == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "price: NULL argument");
  memset(out, 0, sizeof *out);
  /* the registry refuses a plugin's time that is not finite, negative or absurd */
  if ((rc = sc_registry_estimate_op(reg, dev, op, &out->an, err)) != SC_OK) return rc;
  out->time_s[SC_ESTIMATOR_ANALYTICAL] = sc_stack_gpu_s(s, dev, op, &out->an, out->an.time_s);
  for (int m = SC_ESTIMATOR_HYBRID; m <= SC_ESTIMATOR_LEARNED; m++) {
    rc = sc_price_mode(r, s, dev, (sc_estimator)m, op, &out->an, &out->time_s[m], err);
    if (rc != SC_OK) return rc;
    if ((rc = check_time(op->family, out->time_s[m], err)) != SC_OK) return rc;
    out->corrected[m] = r != NULL && sc_residuals_find(r, op->family,
                                                       m == SC_ESTIMATOR_HYBRID
                                                           ? SC_TARGET_HYBRID
                                                           : SC_TARGET_LEARNED) != NULL;
  }
  return SC_OK;
}

int sc_price_coll(sc_registry *reg, const sc_topology *t, const sc_residuals *r,
                  const sc_coll_desc *c, sc_price *out, const char **algorithm,
                  const char **protocol, sc_error *err) {
  const sc_coll_plugin *chosen = NULL;
  const char *kind;
  int rc;
  if (reg == NULL || t == NULL || c == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "price: NULL argument");
  memset(out, 0, sizeof *out);
  kind = sc_comm_kind_name(c->kind);
  rc = sc_comm_estimate_proto(reg, t, c, "auto", &out->an, &chosen, protocol, err);
  if (rc != SC_OK) return rc;
  if (algorithm != NULL) *algorithm = chosen != NULL ? chosen->algorithm : "?";
  out->time_s[SC_ESTIMATOR_ANALYTICAL] = out->an.time_s;
  for (int m = SC_ESTIMATOR_HYBRID; m <= SC_ESTIMATOR_LEARNED; m++) {
    rc = sc_residuals_apply_coll(r, (sc_estimator)m, c, &out->an, &out->time_s[m], err);
    if (rc != SC_OK) return rc;
    if ((rc = check_time(kind, out->time_s[m], err)) != SC_OK) return rc;
    out->corrected[m] = sc_residuals_find_coll(r, (sc_estimator)m, c) != NULL;
  }
  return SC_OK;
}

int sc_coll_place(const sc_topology *t, sc_coll_kind kind, double bytes, sc_dtype dtype,
                  uint32_t nranks, uint32_t nodes, sc_coll_desc *out, sc_error *err) {
  int rc;
  if (t == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "collective: NULL argument");
  memset(out, 0, sizeof *out);
  if (!(bytes >= 0.0) || !isfinite(bytes) || bytes > 1e15)
    return sc_error_set(err, SC_EINVAL, "column 'bytes': %g is not a size in [0, 1e15]", bytes);
  if (nranks < 1 || nranks > (1u << 24))
    return sc_error_set(err, SC_EINVAL, "column 'nranks': %u is not in [1, 2^24]", nranks);
  if (nodes > nranks)
    return sc_error_set(err, SC_EINVAL, "column 'nodes': %u nodes for %u ranks", nodes, nranks);
  if (nodes == 0 || nodes == 1 || nranks / nodes == t->gpus_per_node) {
    if (nodes > 1 && nranks % nodes != 0)
      return sc_error_set(err, SC_EINVAL, "column 'nodes': %u ranks do not spread evenly over "
                          "%u nodes", nranks, nodes);
    if (nodes == 1 && nranks > t->gpus_per_node)
      return sc_error_set(err, SC_EINVAL, "column 'nodes': %u ranks on one node of %u GPUs "
                          "(topology '%s')", nranks, t->gpus_per_node, t->name);
    rc = sc_comm_group_flat(t, nranks, out, err);
  } else {
    /* k = nranks / nodes members per node, k < gpus_per_node: the group is the data-parallel
     * group of a placement whose inner (tensor-parallel) degree is gpus_per_node / k */
    sc_parallel p;
    uint32_t k = nranks / nodes;
    if (nranks % nodes != 0 || k > t->gpus_per_node || t->gpus_per_node % k != 0)
      return sc_error_set(err, SC_EINVAL, "column 'nodes': %u ranks over %u nodes is not a "
                          "whole divisor of the %u GPUs per node of topology '%s'", nranks,
                          nodes, t->gpus_per_node, t->name);
    sc_parallel_defaults(&p);
    p.tp = t->gpus_per_node / k;
    p.dp = nranks;
    p.pp = p.cp = 1;
    rc = sc_comm_group(t, &p, SC_GROUP_DP, out, err);
  }
  if (rc != SC_OK) return rc;
  out->kind = kind;
  out->bytes = bytes;
  out->dtype = dtype;
  return SC_OK;
}

int sc_coll_kind_parse_loose(const char *name, sc_coll_kind *out) {
  char buf[32];
  size_t n = 0;
  if (name == NULL || out == NULL) return SC_EINVAL;
  for (const char *p = name; *p != '\0'; p++) {
    if (*p == '-' || *p == '_') continue;
    if (n + 1 == sizeof buf) return SC_EINVAL;
    buf[n++] = (char)tolower((unsigned char)*p);
  }
  buf[n] = '\0';
  if (strcmp(buf, "p2p") == 0) {
    *out = SC_COLL_SENDRECV;
    return SC_OK;
  }
  return sc_comm_kind_parse(buf, out);
}

/* ---- scores ----------------------------------------------------------------------- */

void sc_score_init(sc_score *s) { memset(s, 0, sizeof *s); }

static int score_slot(sc_score *s, const char *name) {
  size_t i;
  for (i = 0; i < s->n; i++)
    if (strcmp(s->name[i], name) == 0) return (int)i;
  if (s->n == SC_SCORE_MAX) return -1;
  snprintf(s->name[s->n], sizeof s->name[0], "%s", name);
  return (int)s->n++;
}

int sc_score_add(sc_score *s, const char *name, const double est_s[SC_SCORE_ESTIMATORS],
                 double measured_s, sc_error *err) {
  int slot;
  if (s == NULL || name == NULL || est_s == NULL)
    return sc_error_set(err, SC_EINVAL, "score: NULL argument");
  if (!(measured_s > 0.0) || !isfinite(measured_s))
    return sc_error_set(err, SC_EINVAL, "score: measured time %g s is not > 0", measured_s);
  slot = score_slot(s, name);
  if (slot < 0)
    return sc_error_set(err, SC_ELIMIT, "score: more than %d families", SC_SCORE_MAX);
  for (int k = 0; k < 2; k++) {
    const size_t i = k == 0 ? (size_t)slot : SC_SCORE_MAX; /* the family, then every row */
    for (int m = 0; m < SC_SCORE_ESTIMATORS; m++) {
      const double e = (est_s[m] - measured_s) / measured_s;
      s->abs_sum[i][m] += fabs(e);
      s->signed_sum[i][m] += e;
      if (fabs(e) > s->worst[i][m]) s->worst[i][m] = fabs(e);
    }
    s->count[i]++;
  }
  return SC_OK;
}

double sc_score_mape(const sc_score *s, int i, int estimator) {
  const size_t k = i < 0 ? SC_SCORE_MAX : (size_t)i;
  if (s == NULL || estimator < 0 || estimator >= SC_SCORE_ESTIMATORS ||
      (i >= 0 && (size_t)i >= s->n) || s->count[k] == 0)
    return NAN;
  return s->abs_sum[k][estimator] / (double)s->count[k];
}

double sc_score_bias(const sc_score *s, int i, int estimator) {
  const size_t k = i < 0 ? SC_SCORE_MAX : (size_t)i;
  if (s == NULL || estimator < 0 || estimator >= SC_SCORE_ESTIMATORS ||
      (i >= 0 && (size_t)i >= s->n) || s->count[k] == 0)
    return NAN;
  return s->signed_sum[k][estimator] / (double)s->count[k];
}
