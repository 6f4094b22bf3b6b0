/*
 * The fitted residual models of one device: hardware/<device>/residuals/residuals.toml
 * (docs/learned.md) and its application to analytical estimates.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/afile.h"
#include "estimate/estimate_int.h"
#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/parallel.h"
#include "stepcast/registry.h"
#include "stepcast/spec.h"
#include "stepcast/stepcast.h"
#include "toml/toml.h"

#define MANIFEST "residuals.toml"

int sc_residuals_dir(const char *hardware_path, const char *device, char *out, size_t cap,
                     sc_error *err) {
  const char *slash;
  int n;
  if (hardware_path == NULL || device == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  slash = strrchr(hardware_path, '/');
  if (slash == NULL) n = snprintf(out, cap, "%s/residuals", device);
  else n = snprintf(out, cap, "%.*s/%s/residuals", (int)(slash - hardware_path), hardware_path,
                    device);
  if (n < 0 || (size_t)n >= cap)
    return sc_error_set(err, SC_ERANGE, "residuals: path of '%s' too long", device);
  return SC_OK;
}

void sc_residuals_free(sc_residuals *r) {
  if (r == NULL) return;
  for (size_t i = 0; i < r->n; i++) sc_resid_model_free(&r->models[i]);
  free(r->models);
  free(r);
}

static int where_fail(sc_error *err, const char *file, const sc_toml_value *v, const char *key,
                      const char *what) {
  return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%s': %s", file, v ? v->line : 0,
                      v ? v->col : 0, key, what);
}

static int get_str(const char *file, const sc_toml_value *tab, const char *key, const char **out,
                   sc_error *err) {
  const sc_toml_value *v = sc__toml_get(tab, key);
  if (v == NULL) return where_fail(err, file, tab, key, "missing required key in [[model]]");
  if (v->type != SC_TOML_STRING) return where_fail(err, file, v, key, "must be a string");
  *out = v->u.str.ptr;
  return SC_OK;
}

static int get_num(const char *file, const sc_toml_value *v, const char *key, double *out,
                   sc_error *err) {
  if (v->type == SC_TOML_FLOAT) *out = v->u.flt;
  else if (v->type == SC_TOML_INTEGER) *out = (double)v->u.integer;
  else return where_fail(err, file, v, key, "must be a number");
  if (!isfinite(*out)) return where_fail(err, file, v, key, "must be finite");
  return SC_OK;
}

static int get_vec(const char *file, const sc_toml_value *tab, const char *key, uint32_t n,
                   double *out, sc_error *err) {
  const sc_toml_value *v = sc__toml_get(tab, key);
  char what[96];
  if (v == NULL) return where_fail(err, file, tab, key, "missing required key in [[model]]");
  if (v->type != SC_TOML_ARRAY || v->u.arr.len != n) {
    snprintf(what, sizeof what, "must be an array of %u numbers (one per feature)", n);
    return where_fail(err, file, v, key, what);
  }
  for (uint32_t i = 0; i < n; i++) {
    int rc = get_num(file, v->u.arr.items[i], key, &out[i], err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

/* A required number >= 0 of a [[model]] (a MAPE, the ridge penalty). */
static int get_nonneg(const char *file, const sc_toml_value *tab, const char *key, double *out,
                      sc_error *err) {
  const sc_toml_value *v = sc__toml_get(tab, key);
  int rc;
  if (v == NULL) return where_fail(err, file, tab, key, "missing required key in [[model]]");
  if ((rc = get_num(file, v, key, out, err)) != SC_OK) return rc;
  if (!(*out >= 0.0)) return where_fail(err, file, v, key, "must be >= 0");
  return SC_OK;
}

/* Every key of table tab must be in known[] (NULL-terminated); else "unknown key <what>". */
static int known_keys(const char *file, const sc_toml_value *tab, const char *const *known,
                      const char *what, sc_error *err) {
  for (size_t i = 0; i < tab->u.tab.len; i++) {
    const sc_toml_kv *kv = &tab->u.tab.items[i];
    int ok = 0;
    for (size_t k = 0; known[k] && !ok; k++) ok = strcmp(kv->key, known[k]) == 0;
    if (!ok)
      return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%s': unknown key %s", file, kv->line,
                          kv->col, kv->key, what);
  }
  return SC_OK;
}

/* "variant dtype AxBx..." (the form probe_ops and sc__resid_probe_text use) into op. */
static int parse_probe(const char *s, sc_op_desc *op) {
  char dt[16], dims[160], *p, *end;
  unsigned long v;
  memset(op, 0, sizeof *op);
  if (sscanf(s, "%lu %15s %159s", &v, dt, dims) != 3 || v > 255) return 0;
  if (sc_dtype_parse(dt, &op->dtype) != 0) return 0;
  op->variant = (uint32_t)v;
  for (p = dims; op->ndims < SC_OP_MAX_DIMS; p = end + 1) {
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0) return 0;
    op->dims[op->ndims++] = d;
    if (*end == '\0') return 1;
    if (*end != 'x') return 0;
  }
  return 0;
}

/* probe_ops and probe_analytical_s: both or neither, as many of each, at most
 * SC_RESID_MAX_PROBES, every time > 0. */
static int load_probes(const char *file, const sc_toml_value *tab, sc_resid_model *m,
                       sc_error *err) {
  const sc_toml_value *o = sc__toml_get(tab, "probe_ops"), *a = sc__toml_get(tab,
                                                                             "probe_analytical_s");
  if (o == NULL && a == NULL) return SC_OK;
  if (o == NULL || a == NULL)
    return where_fail(err, file, o ? o : a, o ? "probe_ops" : "probe_analytical_s",
                      "probe_ops and probe_analytical_s go together");
  if (o->type != SC_TOML_ARRAY || o->u.arr.len < 1 || o->u.arr.len > SC_RESID_MAX_PROBES)
    return where_fail(err, file, o, "probe_ops", "must be an array of 1 to 3 strings");
  if (a->type != SC_TOML_ARRAY || a->u.arr.len != o->u.arr.len)
    return where_fail(err, file, a, "probe_analytical_s", "must be an array of one time a "
                      "probe_ops entry");
  for (size_t j = 0; j < o->u.arr.len; j++) {
    const sc_toml_value *s = o->u.arr.items[j];
    int rc;
    if (s->type != SC_TOML_STRING || !parse_probe(s->u.str.ptr, &m->probe[j]))
      return where_fail(err, file, s, "probe_ops", "every entry must read \"variant dtype "
                        "AxBx...\" (a variant 0-255, a dtype name, 1 to 8 whole dims)");
    if ((rc = get_num(file, a->u.arr.items[j], "probe_analytical_s", &m->probe_s[j], err)) !=
        SC_OK)
      return rc;
    if (!(m->probe_s[j] > 0))
      return where_fail(err, file, a->u.arr.items[j], "probe_analytical_s", "every time must "
                        "be > 0 seconds");
  }
  m->nprobes = (uint32_t)o->u.arr.len;
  m->probe_line = a->line;
  m->probe_col = a->col;
  return SC_OK;
}

static int load_model(const char *dir, const char *file, const sc_toml_value *tab,
                      sc_resid_model *m, sc_error *err) {
  static const char *const known[] = {"family", "target", "kind", "active", "features",
                                      "mean", "scale", "coef", "intercept", "lambda", "target_range", "file",
                                      "cv_mape", "heldout_mape", "group_ranks", "group_nodes",
                                      "unread", "domain_analytical_s", "beyond", "probe_ops",
                                      "probe_analytical_s", NULL};
  const char *s = NULL;
  const sc_toml_value *v;
  int rc;
  memset(m, 0, sizeof *m);
  if (tab->type != SC_TOML_TABLE) return where_fail(err, file, tab, "model", "must be a table");
  if ((rc = known_keys(file, tab, known, "in [[model]]", err)) != SC_OK) return rc;
  if ((rc = get_str(file, tab, "family", &s, err)) != SC_OK) return rc;
  if (s[0] == '\0' || strlen(s) >= sizeof m->family)
    return where_fail(err, file, sc__toml_get(tab, "family"), "family", "must have 1 to 31 characters");
  snprintf(m->family, sizeof m->family, "%s", s);
  m->family_line = sc__toml_get(tab, "family")->line;
  m->family_col = sc__toml_get(tab, "family")->col;
  if ((rc = get_str(file, tab, "target", &s, err)) != SC_OK) return rc;
  if (strcmp(s, "hybrid") == 0) m->target = SC_TARGET_HYBRID;
  else if (strcmp(s, "learned") == 0) m->target = SC_TARGET_LEARNED;
  else return where_fail(err, file, sc__toml_get(tab, "target"), "target", "must be \"hybrid\" or \"learned\"");
  if ((rc = get_str(file, tab, "kind", &s, err)) != SC_OK) return rc;
  if (strcmp(s, "linear") == 0) m->kind = SC_RESID_LINEAR;
  else if (strcmp(s, "gbdt") == 0) m->kind = SC_RESID_GBDT;
  else return where_fail(err, file, sc__toml_get(tab, "kind"), "kind", "must be \"linear\" or \"gbdt\"");
  v = sc__toml_get(tab, "active");
  if (v == NULL) return where_fail(err, file, tab, "active", "missing required key in [[model]]");
  if (v->type != SC_TOML_BOOL) return where_fail(err, file, v, "active", "must be true or false");
  m->active = v->u.boolean;
  v = sc__toml_get(tab, "features");
  if (v == NULL) return where_fail(err, file, tab, "features", "missing required key in [[model]]");
  if (v->type != SC_TOML_ARRAY || v->u.arr.len > SC_MAX_FEATURES)
    return where_fail(err, file, v, "features", "must be an array of at most 16 feature names");
  m->nfeatures = (uint32_t)v->u.arr.len;
  m->features_line = v->line;
  m->features_col = v->col;
  for (uint32_t j = 0; j < m->nfeatures; j++) {
    const sc_toml_value *nm = v->u.arr.items[j];
    if (nm->type != SC_TOML_STRING || nm->u.str.len == 0 ||
        nm->u.str.len >= sizeof m->feature_names[j])
      return where_fail(err, file, nm, "features", "every entry must be a feature name (a "
                        "string of 1 to 47 characters)");
    memcpy(m->feature_names[j], nm->u.str.ptr, nm->u.str.len + 1);
  }
  v = sc__toml_get(tab, "unread"); /* optional: features the model does not read */
  if (v != NULL) {
    if (v->type != SC_TOML_ARRAY)
      return where_fail(err, file, v, "unread", "must be an array of names from 'features'");
    for (size_t i = 0; i < v->u.arr.len; i++) {
      const sc_toml_value *nm = v->u.arr.items[i];
      uint32_t j = 0;
      while (nm->type == SC_TOML_STRING && j < m->nfeatures &&
             strcmp(m->feature_names[j], nm->u.str.ptr) != 0)
        j++;
      if (nm->type != SC_TOML_STRING || j == m->nfeatures)
        return where_fail(err, file, nm, "unread", "every entry must be one of the model's "
                          "'features'");
      m->unread |= SC_FEATURE(j);
    }
  }
  { /* collective models: group_ranks and group_nodes, both or neither, same length */
    const sc_toml_value *gr = sc__toml_get(tab, "group_ranks"), *gn = sc__toml_get(tab, "group_nodes");
    if ((gr == NULL) != (gn == NULL))
      return where_fail(err, file, gr ? gr : gn, gr ? "group_ranks" : "group_nodes",
                        "group_ranks and group_nodes go together");
    if (gr != NULL) {
      if (gr->type != SC_TOML_ARRAY || gn->type != SC_TOML_ARRAY || gr->u.arr.len == 0 ||
          gr->u.arr.len > SC_RESID_MAX_GROUPS || gn->u.arr.len != gr->u.arr.len)
        return where_fail(err, file, gr, "group_ranks", "must be 1 to 16 integers, as many as "
                          "group_nodes");
      m->ngroups = (uint32_t)gr->u.arr.len;
      for (uint32_t j = 0; j < m->ngroups; j++) {
        const sc_toml_value *a = gr->u.arr.items[j], *b = gn->u.arr.items[j];
        if (a->type != SC_TOML_INTEGER || a->u.integer < 1 || a->u.integer > 1000000000)
          return where_fail(err, file, a, "group_ranks", "every entry must be an integer in "
                            "[1, 1e9]");
        if (b->type != SC_TOML_INTEGER || b->u.integer < 1 || b->u.integer > a->u.integer)
          return where_fail(err, file, b, "group_nodes", "every entry must be an integer in "
                            "[1, its group_ranks]");
        m->group_ranks[j] = (uint32_t)a->u.integer;
        m->group_nodes[j] = (uint32_t)b->u.integer;
      }
    }
  }
  v = sc__toml_get(tab, "domain_analytical_s"); /* optional: the sampled domain */
  if (v != NULL) {
    double r[2];
    if (v->type != SC_TOML_ARRAY || v->u.arr.len != 2)
      return where_fail(err, file, v, "domain_analytical_s", "must be [low, high] in seconds");
    for (int j = 0; j < 2; j++)
      if ((rc = get_num(file, v->u.arr.items[j], "domain_analytical_s", &r[j], err)) != SC_OK)
        return rc;
    if (!(r[0] > 0 && r[0] <= r[1] && r[1] < 1e6))
      return where_fail(err, file, v, "domain_analytical_s", "must be [low, high] with "
                        "0 < low <= high < 1e6 seconds");
    m->dom_lo = r[0];
    m->dom_hi = r[1];
  }
  v = sc__toml_get(tab, "beyond"); /* optional: "model" (the default) or "analytical" */
  if (v != NULL) {
    if (v->type != SC_TOML_STRING ||
        (strcmp(v->u.str.ptr, "model") != 0 && strcmp(v->u.str.ptr, "analytical") != 0))
      return where_fail(err, file, v, "beyond", "must be \"model\" or \"analytical\"");
    m->beyond = strcmp(v->u.str.ptr, "analytical") == 0;
    if (m->beyond && !(m->dom_hi > 0))
      return where_fail(err, file, v, "beyond", "\"analytical\" needs domain_analytical_s "
                        "(where the model is used)");
  }
  if ((rc = load_probes(file, tab, m, err)) != SC_OK) return rc;
  if ((rc = get_nonneg(file, tab, "cv_mape", &m->cv_mape, err)) != SC_OK) return rc;
  if ((rc = get_nonneg(file, tab, "heldout_mape", &m->heldout_mape, err)) != SC_OK) return rc;
  if (m->kind == SC_RESID_LINEAR) {
    if ((rc = get_vec(file, tab, "mean", m->nfeatures, m->mean, err)) != SC_OK) return rc;
    if ((rc = get_vec(file, tab, "scale", m->nfeatures, m->scale, err)) != SC_OK) return rc;
    if ((rc = get_vec(file, tab, "coef", m->nfeatures, m->coef, err)) != SC_OK) return rc;
    for (uint32_t j = 0; j < m->nfeatures; j++) {
      if (!(m->scale[j] > 0))
        return where_fail(err, file, sc__toml_get(tab, "scale"), "scale", "every entry must be > 0");
    }
    v = sc__toml_get(tab, "intercept");
    if (v == NULL) return where_fail(err, file, tab, "intercept", "missing required key in [[model]]");
    if ((rc = get_num(file, v, "intercept", &m->intercept, err)) != SC_OK) return rc;
    if ((rc = get_nonneg(file, tab, "lambda", &m->lambda, err)) != SC_OK) return rc;
    v = sc__toml_get(tab, "target_range");
    if (v == NULL && m->target == SC_TARGET_HYBRID)
      return where_fail(err, file, tab, "target_range", "missing required key in a hybrid "
                        "linear [[model]]");
    if (v != NULL) {
      double r[2];
      if (v->type != SC_TOML_ARRAY || v->u.arr.len != 2)
        return where_fail(err, file, v, "target_range", "must be [low, high]");
      for (int j = 0; j < 2; j++)
        if ((rc = get_num(file, v->u.arr.items[j], "target_range", &r[j], err)) != SC_OK)
          return rc;
      if (!(r[0] <= r[1]))
        return where_fail(err, file, v, "target_range", "must be [low, high] with low <= high");
      m->y_lo = r[0];
      m->y_hi = r[1];
    }
  } else {
    char path[4200];
    if ((rc = get_str(file, tab, "file", &s, err)) != SC_OK) return rc;
    if (strchr(s, '/') != NULL || strlen(s) < 6 || strcmp(s + strlen(s) - 5, ".json") != 0)
      return where_fail(err, file, sc__toml_get(tab, "file"), "file",
                        "must name a .json file in the same folder");
    snprintf(path, sizeof path, "%s/%s", dir, s);
    if ((rc = sc_resid_load_gbdt(m, path, err)) != SC_OK) {
      /* the model the manifest names there: its line, then what is wrong with the tree file */
      const sc_toml_value *fv = sc__toml_get(tab, "file");
      char why[sizeof err->msg];
      snprintf(why, sizeof why, "%s", err->msg);
      sc_error_set(err, rc, "%s:%u:%u: key 'file': %s", file, fv ? fv->line : 0u,
                   fv ? fv->col : 0u, why);
      return rc;
    }
  }
  return SC_OK;
}

int sc_residuals_load(const char *dir, sc_residuals **out, sc_error *err) {
  static const char *const top_keys[] = {"device", "stack", "models", "model", NULL};
  char path[4200];
  sc_toml_doc *doc = NULL;
  sc_residuals *r;
  const sc_toml_value *dev, *arr, *count;
  FILE *f;
  int rc;
  if (dir == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  *out = NULL;
  snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
  f = fopen(path, "r");
  if (f == NULL) {
    return sc_error_set(err, errno == ENOENT ? SC_ENOTFOUND : SC_EIO, "%s: %s", path,
                        strerror(errno));
  }
  fclose(f);
  if ((rc = sc__toml_parse_file(path, &doc, err)) != SC_OK) return rc;
  r = calloc(1, sizeof *r);
  if (r == NULL) {
    sc__toml_free(doc);
    return sc_error_set(err, SC_ENOMEM, "residuals: out of memory");
  }
  snprintf(r->dir, sizeof r->dir, "%s", dir);
  if ((rc = known_keys(path, doc->root, top_keys, "(residuals.toml has device, stack, models "
                       "and "
                       "[[model]] tables)", err)) != SC_OK)
    goto fail;
  dev = sc__toml_get(doc->root, "device");
  if (dev == NULL || dev->type != SC_TOML_STRING || dev->u.str.len == 0 ||
      dev->u.str.len >= sizeof r->device) {
    rc = where_fail(err, path, dev ? dev : doc->root, "device",
                    "must be the device's name (a string of 1 to 63 characters)");
    goto fail;
  }
  snprintf(r->device, sizeof r->device, "%s", dev->u.str.ptr);
  {
    const sc_toml_value *st = sc__toml_get(doc->root, "stack"); /* optional */
    if (st != NULL && (st->type != SC_TOML_STRING || st->u.str.len == 0 ||
                       st->u.str.len >= sizeof r->stack)) {
      rc = where_fail(err, path, st, "stack", "must be the name of the software stack the "
                      "models were fitted under (a string of 1 to 63 characters)");
      goto fail;
    }
    if (st != NULL) snprintf(r->stack, sizeof r->stack, "%s", st->u.str.ptr);
  }
  r->device_line = dev->line;
  r->device_col = dev->col;
  arr = sc__toml_get(doc->root, "model");
  if (arr == NULL || arr->type != SC_TOML_ARRAY || arr->u.arr.len == 0) {
    rc = where_fail(err, path, arr ? arr : doc->root, "model", "needs at least one [[model]]");
    goto fail;
  }
  /* the count stepcast fit writes first: a file cut short after a whole [[model]] is still
   * valid TOML, and would lose the models after it without a word */
  count = sc__toml_get(doc->root, "models");
  if (count == NULL || count->type != SC_TOML_INTEGER || count->u.integer < 1) {
    rc = where_fail(err, path, count ? count : doc->root, "models",
                    count ? "must be the number of [[model]] tables (an integer >= 1)"
                          : "missing required key (the number of [[model]] tables)");
    goto fail;
  }
  if ((uint64_t)count->u.integer != (uint64_t)arr->u.arr.len) {
    char what[160];
    snprintf(what, sizeof what, "says %lld [[model]] tables, the file has %zu (cut short?)",
             (long long)count->u.integer, arr->u.arr.len);
    rc = where_fail(err, path, count, "models", what);
    goto fail;
  }
  r->models = calloc(arr->u.arr.len, sizeof *r->models);
  if (r->models == NULL) {
    rc = sc_error_set(err, SC_ENOMEM, "residuals: out of memory");
    goto fail;
  }
  for (size_t i = 0; i < arr->u.arr.len; i++) {
    rc = load_model(dir, path, arr->u.arr.items[i], &r->models[i], err);
    if (rc != SC_OK) {
      sc_resid_model_free(&r->models[i]);
      goto fail;
    }
    r->n++;
    for (size_t j = 0; j + 1 < r->n; j++) {
      const sc_resid_model *a = &r->models[j], *b = &r->models[i];
      if (a->active && b->active && a->target == b->target && strcmp(a->family, b->family) == 0) {
        rc = where_fail(err, path, arr->u.arr.items[i], "active",
                        "two active models for one family and target");
        goto fail;
      }
    }
  }
  sc__toml_free(doc);
  *out = r;
  return SC_OK;
fail:
  sc__toml_free(doc);
  sc_residuals_free(r);
  return rc;
}

/* An operator as probe_ops spells it: "variant dtype AxBx...". */
static void probe_text(const sc_op_desc *op, char *out, size_t cap) {
  size_t k = (size_t)snprintf(out, cap, "%u %s ", op->variant, sc_dtype_name(op->dtype));
  for (uint32_t j = 0; j < op->ndims && k < cap; j++)
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", j ? "x" : "", (long long)op->dims[j]);
}

static void write_vec(FILE *f, const char *key, const double *v, uint32_t n) {
  fprintf(f, "%s = [", key);
  for (uint32_t j = 0; j < n; j++) fprintf(f, "%s%.17g", j ? ", " : "", v[j]);
  fprintf(f, "]\n");
}

/* The manifest and every tree file go to temporaries first (common/afile.h); they replace
 * the old ones only once all of them were written, the manifest last: a failed save leaves
 * the folder's models as they were. */
int sc_residuals_save(const char *dir, const char *device, const char *stack,
                      const sc_resid_model *models,
                      size_t n, const char *const *feature_names_by_model, const char *header,
                      sc_error *err) {
  char path[4200];
  FILE *f;
  sc_afile man, *trees = NULL;
  size_t ntrees = 0;
  int rc = SC_OK;
  if (dir == NULL || device == NULL || models == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
  trees = calloc(n ? n : 1, sizeof *trees);
  if (trees == NULL) return sc_error_set(err, SC_ENOMEM, "residuals: out of memory");
  if ((rc = sc_afile_open(&man, path, err)) != SC_OK) {
    free(trees);
    return rc;
  }
  f = man.f;
  if (header != NULL) {
    const char *p = header;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      fprintf(f, "# %.*s\n", (int)len, p);
      p += len + (e != NULL);
    }
  }
  fprintf(f, "device = \"%s\"\n", device);
  if (stack != NULL && stack[0] != '\0')
    fprintf(f, "stack = \"%s\"  # fitted on the analytical time as this stack prices it\n",
            stack);
  fprintf(f, "models = %zu  # the [[model]] tables below\n", n);
  for (size_t i = 0; i < n && rc == SC_OK; i++) {
    const sc_resid_model *m = &models[i];
    const char *names = feature_names_by_model ? feature_names_by_model[i] : NULL;
    fprintf(f, "\n[[model]]\nfamily = \"%s\"\ntarget = \"%s\"\nkind = \"%s\"\nactive = %s\n",
            m->family, sc_resid_target_name(m->target), sc_resid_kind_name(m->kind),
            m->active ? "true" : "false");
    fprintf(f, "features = [%s]\n", names ? names : "");
    if (m->unread != 0) { /* by name: feature_names must be set */
      fprintf(f, "unread = [");
      for (uint32_t j = 0, k = 0; j < m->nfeatures; j++) {
        if (!(m->unread & SC_FEATURE(j))) continue;
        if (m->feature_names[j][0] == '\0') {
          rc = sc_error_set(err, SC_EINVAL, "%s: %s model: unread feature %u has no name",
                            path, m->family, j);
          break;
        }
        fprintf(f, "%s\"%s\"", k++ ? ", " : "", m->feature_names[j]);
      }
      fprintf(f, "]  # held at 0: the scale features, as a hybrid residual reads the shape "
              "features alone, unless fit --read/--unread said otherwise (docs/learned.md)\n");
    }
    if (m->ngroups > 0) {
      fprintf(f, "group_ranks = [");
      for (uint32_t j = 0; j < m->ngroups; j++) fprintf(f, "%s%u", j ? ", " : "", m->group_ranks[j]);
      fprintf(f, "]  # the group shapes fitted on; other groups stay analytical\ngroup_nodes = [");
      for (uint32_t j = 0; j < m->ngroups; j++) fprintf(f, "%s%u", j ? ", " : "", m->group_nodes[j]);
      fprintf(f, "]\n");
    }
    if (m->dom_hi > 0) {
      fprintf(f, "domain_analytical_s = [%.17g, %.17g]  # the analytical times fitted on\n",
              m->dom_lo, m->dom_hi);
      fprintf(f, "beyond = \"%s\"  # what the estimator is outside that domain\n",
              m->beyond ? "analytical" : "model");
    }
    if (m->nprobes > 0 && m->active) {
      fprintf(f, "probe_ops = [");
      for (uint32_t j = 0; j < m->nprobes && j < SC_RESID_MAX_PROBES; j++) {
        char op[200];
        probe_text(&m->probe[j], op, sizeof op);
        fprintf(f, "%s\"%s\"", j ? ", " : "", op);
      }
      fprintf(f, "]  # operators fitted on (variant dtype dims), and\nprobe_analytical_s = [");
      for (uint32_t j = 0; j < m->nprobes && j < SC_RESID_MAX_PROBES; j++)
        fprintf(f, "%s%.17g", j ? ", " : "", m->probe_s[j]);
      fprintf(f, "]  # the plugin's time for each then, on the hardware file alone: a "
              "roofline that now prices one otherwise refuses this set\n");
    }
    fprintf(f, "cv_mape = %.6g\nheldout_mape = %.6g\n", m->cv_mape, m->heldout_mape);
    if (m->kind == SC_RESID_LINEAR) {
      write_vec(f, "mean", m->mean, m->nfeatures);
      write_vec(f, "scale", m->scale, m->nfeatures);
      write_vec(f, "coef", m->coef, m->nfeatures);
      fprintf(f, "intercept = %.17g\nlambda = %.17g\n", m->intercept, m->lambda);
      if (m->target == SC_TARGET_HYBRID)
        fprintf(f, "target_range = [%.17g, %.17g]\n", m->y_lo, m->y_hi);
    } else {
      char file[128], gpath[4400];
      snprintf(file, sizeof file, "%s.%s.gbdt.json", m->family, sc_resid_target_name(m->target));
      snprintf(gpath, sizeof gpath, "%s/%s", dir, file);
      fprintf(f, "file = \"%s\"\n", file);
      if ((rc = sc_afile_open(&trees[ntrees], gpath, err)) != SC_OK) break;
      ntrees++;
      if ((rc = sc__resid_write_gbdt(m, trees[ntrees - 1].f, gpath, err)) == SC_OK)
        rc = sc_afile_close(&trees[ntrees - 1], err);
    }
  }
  if (rc == SC_OK) rc = sc_afile_close(&man, err);
  for (size_t i = 0; i < ntrees && rc == SC_OK; i++) rc = sc_afile_commit(&trees[i], err);
  if (rc == SC_OK) rc = sc_afile_commit(&man, err);
  for (size_t i = 0; i < ntrees; i++) sc_afile_abort(&trees[i]);
  sc_afile_abort(&man);
  free(trees);
  return rc;
}

const sc_resid_model *sc_residuals_find(const sc_residuals *r, const char *family,
                                        sc_resid_target target) {
  for (size_t i = 0; r != NULL && family != NULL && i < r->n; i++) {
    if (r->models[i].active && r->models[i].target == target &&
        strcmp(r->models[i].family, family) == 0)
      return &r->models[i];
  }
  return NULL;
}

/* The estimator's time for e through model m of r (found for e's family and mode's target). */
static sc_resid_target target_of_mode(sc_estimator mode) {
  return mode == SC_ESTIMATOR_HYBRID ? SC_TARGET_HYBRID : SC_TARGET_LEARNED;
}

/* The estimator's time through model m of r for estimate e's features, correcting base_s. */
static int apply_model(const sc_residuals *r, const sc_resid_model *m, const sc_estimate *e,
                       double base_s, double *time_s, sc_error *err) {
  double x[SC_MAX_FEATURES];
  uint32_t nx = sc_resid_features(e, x);
  if (m->nfeatures != nx)
    return sc_error_set(err, SC_EINVAL, "residuals: %s model of '%s' has %u features, the "
                        "plugin's estimate gives %u (refit with stepcast fit)", m->family,
                        r->device, m->nfeatures, nx);
  return sc_resid_time(m, x, base_s, time_s, err);
}

int sc_residuals_apply_at(const sc_residuals *r, sc_estimator mode, const char *family,
                          const sc_estimate *e, double base_s, double *time_s, sc_error *err) {
  const sc_resid_model *m;
  if (e == NULL || time_s == NULL) return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  *time_s = base_s;
  if (mode == SC_ESTIMATOR_ANALYTICAL || r == NULL) return SC_OK;
  m = sc_residuals_find(r, family, target_of_mode(mode));
  if (m == NULL) return SC_OK; /* no samples of this family: it stays analytical */
  return apply_model(r, m, e, base_s, time_s, err);
}

int sc_residuals_apply(const sc_residuals *r, sc_estimator mode, const char *family,
                       const sc_estimate *e, double *time_s, sc_error *err) {
  if (e == NULL || time_s == NULL) return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  return sc_residuals_apply_at(r, mode, family, e, e->time_s, time_s, err);
}

/* Model m of path must list want features named name(ctx, j): else SC_ESPEC at its
 * 'features' key, "... <whose> <count or name> ... (refit with <refit>)". */
static int check_features(const char *path, const sc_resid_model *m, uint32_t want,
                          const char *(*name)(const void *ctx, uint32_t j), const void *ctx,
                          const char *whose, const char *refit, sc_error *err) {
  if (m->nfeatures != want)
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'features': the %s %s model has %u "
                        "features, %s %u (refit with %s)", path, m->features_line,
                        m->features_col, m->family, sc_resid_target_name(m->target),
                        m->nfeatures, whose, want, refit);
  for (uint32_t j = 0; j < m->nfeatures && m->features_line > 0; j++) {
    const char *n = name(ctx, j);
    if (strcmp(m->feature_names[j], n) != 0)
      return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'features': feature %u of the %s %s "
                          "model is '%s', %s '%s' there (refit with %s)", path,
                          m->features_line, m->features_col, j + 1, m->family,
                          sc_resid_target_name(m->target), m->feature_names[j], whose, n,
                          refit);
  }
  return SC_OK;
}

static const char *op_feature(const void *op, uint32_t j) {
  return sc_resid_feature_name((const sc_op_plugin *)op, j);
}

static const char *coll_feature(const void *ctx, uint32_t j) {
  (void)ctx;
  return sc_coll_resid_feature_name(j);
}

int sc_residuals_check(const sc_residuals *r, const char *device, const sc_registry *reg,
                       sc_error *err) {
  char path[4200];
  if (r == NULL) return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  snprintf(path, sizeof path, "%s/%s", r->dir, MANIFEST);
  if (device != NULL && strcmp(r->device, device) != 0)
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'device': the models were fitted for "
                        "device '%s', not '%s' (fit this device's samples with stepcast fit)",
                        path, r->device_line, r->device_col, r->device, device);
  for (size_t i = 0; reg != NULL && i < r->n; i++) {
    const sc_resid_model *m = &r->models[i];
    const sc_op_plugin *op = sc_registry_op(reg, m->family);
    char whose[160];
    int rc;
    if (op == NULL) continue;
    snprintf(whose, sizeof whose, "operator plugin '%s' %s gives", op->hdr.name,
             op->hdr.version);
    rc = check_features(path, m, sc_resid_nfeatures(op), op_feature, op, whose, "stepcast fit",
                        err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

static int check_probes(const sc_residuals *r, sc_registry *reg, const sc_device *dev,
                        const char *path, sc_error *err);

int sc_residuals_check_roofline(const sc_residuals *r, sc_registry *reg,
                                const sc_device *dev, sc_error *err) {
  char path[4200];
  if (r == NULL || reg == NULL || dev == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  snprintf(path, sizeof path, "%s/%s", r->dir, MANIFEST);
  /* the memo knows a device by its name, and dev (the file as it is) may share it with a
   * device the caller changed: price the probes afresh, and leave no estimate of dev behind */
  sc_registry_memo_clear(reg);
  int rc = check_probes(r, reg, dev, path, err);
  sc_registry_memo_clear(reg);
  return rc;
}

static int check_probes(const sc_residuals *r, sc_registry *reg, const sc_device *dev,
                        const char *path, sc_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    const sc_resid_model *m = &r->models[i];
    if (!m->active || m->ngroups > 0) continue;
    for (uint32_t j = 0; j < m->nprobes && j < SC_RESID_MAX_PROBES; j++) {
      sc_op_desc op = m->probe[j];
      sc_estimate e;
      sc_error e2;
      char txt[200];
      op.family = m->family;
      probe_text(&op, txt, sizeof txt);
      if (sc_registry_estimate_op(reg, dev, &op, &e, &e2) != SC_OK)
        return sc_error_set(err, e2.code, "%s:%u:%u: key 'probe_ops': %s %s: %s", path,
                            m->probe_line, m->probe_col, m->family, txt, e2.msg);
      if (!(fabs(e.time_s / m->probe_s[j] - 1.0) <= 1e-6))
        return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'probe_analytical_s': %s %s: the "
                            "roofline now gives %.6g s where these models were fitted against "
                            "%.6g s (the hardware file or the operator plugin changed since "
                            "they were fitted: fit them again with stepcast fit)", path,
                            m->probe_line, m->probe_col, m->family, txt, e.time_s,
                            m->probe_s[j]);
    }
  }
  return SC_OK;
}

int sc_residuals_check_coll(const sc_residuals *r, const char *topology, sc_error *err) {
  char path[4200];
  if (r == NULL || topology == NULL) return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  snprintf(path, sizeof path, "%s/%s", r->dir, MANIFEST);
  if (strcmp(r->device, topology) != 0)
    return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'device': the models were fitted for "
                        "'%s', not topology '%s' (fit its nccl-tests rows with stepcast fit "
                        "--comm)", path, r->device_line, r->device_col, r->device, topology);
  for (size_t i = 0; i < r->n; i++) {
    const sc_resid_model *m = &r->models[i];
    sc_coll_kind kind;
    int rc;
    if (sc_comm_kind_parse(m->family, &kind) != SC_OK)
      return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'family': '%s' is not a collective "
                          "(allreduce, allgather, reducescatter, alltoall, broadcast, "
                          "sendrecv): these are not collective residuals", path,
                          m->family_line, m->family_col, m->family);
    rc = check_features(path, m, sc_coll_resid_nfeatures(), coll_feature, NULL,
                        "collective residuals have", "stepcast fit --comm", err);
    if (rc != SC_OK) return rc;
    if (m->ngroups == 0)
      return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key 'group_ranks': the %s %s model does "
                          "not say which group shapes it was fitted on (refit with stepcast "
                          "fit --comm)", path, m->family_line, m->family_col, m->family,
                          sc_resid_target_name(m->target));
  }
  return SC_OK;
}

const sc_resid_model *sc_residuals_find_coll(const sc_residuals *r, sc_estimator mode,
                                             const sc_coll_desc *c) {
  const sc_resid_model *m;
  uint32_t nodes;
  if (r == NULL || c == NULL || mode == SC_ESTIMATOR_ANALYTICAL) return NULL;
  m = sc_residuals_find(r, sc_comm_kind_name(c->kind), target_of_mode(mode));
  if (m == NULL) return NULL;
  nodes = sc_coll_resid_nodes(c);
  for (uint32_t j = 0; j < m->ngroups; j++)
    if (m->group_ranks[j] == c->nranks && m->group_nodes[j] == nodes) return m;
  return NULL; /* a group shape the model never saw */
}

int sc_residuals_apply_coll(const sc_residuals *r, sc_estimator mode, const sc_coll_desc *c,
                            const sc_estimate *an, double *time_s, sc_error *err) {
  const sc_resid_model *m;
  sc_estimate in;
  if (c == NULL || an == NULL || time_s == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  *time_s = an->time_s;
  if ((m = sc_residuals_find_coll(r, mode, c)) == NULL) return SC_OK;
  sc_coll_resid_input(c, an, &in);
  return apply_model(r, m, &in, in.time_s, time_s, err);
}

int sc_residuals_for_topology(const char *topology, const char *name, const char *dir,
                              int required, sc_estimator mode, sc_residuals **out,
                              sc_error *err) {
  char path[SC_PATH_MAX], own[4096];
  int rc;
  if (topology == NULL || name == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  *out = NULL;
  if (dir == NULL) {
    if ((rc = sc_spec_resolve(SC_SPEC_TOPOLOGY, topology, path, sizeof path, err)) != SC_OK)
      return rc;
    if ((rc = sc_residuals_dir(path, name, own, sizeof own, err)) != SC_OK) return rc;
    dir = own;
  }
  rc = sc_residuals_load(dir, out, err);
  if (rc == SC_ENOTFOUND && !required) {
    sc_error_clear(err);
    return SC_OK;
  }
  if (rc == SC_ENOTFOUND) {
    return sc_error_set(err, SC_ENOTFOUND, "estimator '%s': no fitted collective residuals "
                        "for topology '%s' (no %s/%s; fit measured nccl-tests rows with "
                        "stepcast fit --comm)", sc_estimator_name(mode), name, dir, MANIFEST);
  }
  if (rc == SC_OK && (rc = sc_residuals_check_coll(*out, name, err)) != SC_OK) {
    sc_residuals_free(*out);
    *out = NULL;
  }
  return rc;
}

int sc_residuals_for_hardware(const char *hardware, const char *device, const sc_registry *reg,
                              sc_estimator mode, sc_residuals **out, sc_error *err) {
  char path[SC_PATH_MAX], dir[4096];
  int rc;
  if (hardware == NULL || device == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "residuals: NULL argument");
  *out = NULL;
  if ((rc = sc_spec_resolve(SC_SPEC_HARDWARE, hardware, path, sizeof path, err)) != SC_OK)
    return rc;
  if ((rc = sc_residuals_dir(path, device, dir, sizeof dir, err)) != SC_OK) return rc;
  rc = sc_residuals_load(dir, out, err);
  if (rc == SC_ENOTFOUND) {
    return sc_error_set(err, SC_ENOTFOUND, "estimator '%s': no fitted residual models for "
                        "device '%s' (no %s/%s; run stepcast sample and stepcast fit)",
                        sc_estimator_name(mode), device, dir, MANIFEST);
  }
  if (rc == SC_OK && (rc = sc_residuals_check(*out, device, reg, err)) != SC_OK) {
    sc_residuals_free(*out);
    *out = NULL;
  }
  if (rc == SC_OK && reg != NULL) { /* against the hardware file they sit beside, as it is */
    sc_device *dev = malloc(sizeof *dev);
    rc = dev == NULL ? sc_error_set(err, SC_ENOMEM, "residuals: out of memory")
                     : sc_hardware_load((sc_registry *)reg, path, dev, err);
    if (rc == SC_OK) rc = sc_residuals_check_roofline(*out, (sc_registry *)reg, dev, err);
    free(dev);
    if (rc != SC_OK) {
      sc_residuals_free(*out);
      *out = NULL;
    }
  }
  return rc;
}
