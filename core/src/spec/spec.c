/*
 * Spec files: resolution of names to files, and the model, topology and hardware loaders.
 * Schemas: docs/formats.md. Every failure names "file:line:col: key 'x': problem".
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/prefix.h"
#include "sc_config.h"
#include "spec/table.h"
#include "stepcast/common.h"
#include "stepcast/registry.h"
#include "stepcast/stack.h"
#include "toml/toml.h"

/* ------------------------------------------------------------------------- */
/* Resolution                                                                */

static const char *const sc__spec_dirs[] = {"models", "hardware", "topologies", "stacks"};

static int sc__is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Append "; " + s to buf (bounded). */
static void sc__append(char *buf, size_t cap, const char *s) {
  size_t n = strlen(buf), k = strlen(s);
  if (n > 0) {
    if (n + 2 >= cap) return;
    memcpy(buf + n, ", ", 2);
    n += 2;
  }
  if (k > cap - n - 1) k = cap - n - 1;
  memcpy(buf + n, s, k);
  buf[n + k] = '\0';
}

/* Try dir/sub/name.toml; on success copy to out. */
static int sc__try(const char *dir, const char *sub, const char *name, char *out,
                   size_t out_size, char *tried, size_t tried_cap) {
  char p[SC_PATH_MAX];
  int n = snprintf(p, sizeof p, "%s/%s/%s.toml", dir, sub, name);
  if (n < 0 || (size_t)n >= sizeof p) return 0;
  sc__append(tried, tried_cap, p);
  if (!sc__is_file(p)) return 0;
  if ((size_t)n >= out_size) return 0;
  memcpy(out, p, (size_t)n + 1);
  return 1;
}

static int sc__is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folders that may hold data, in order, into roots[0..return): the source tree when the
 * program runs from the build tree; else <prefix>/SC_DATA_INSTALL_SUBDIR of the installed
 * program (<prefix>/bin/<program>), of the installed libstepcast it links (a program
 * anywhere, common/prefix.h) and of the prefix configured at build time, each that exists;
 * when none does, the program's, so that the error names where it looked. */
#define SC_DATA_ROOTS 3
static int sc__data_roots(char (*roots)[SC_PATH_MAX]) {
  char exe[SC_PATH_MAX], build[SC_PATH_MAX], prefix[SC_PATH_MAX], cand[SC_PATH_MAX];
  char first[SC_PATH_MAX] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  int k = 0;
  if (n > 0) {
    size_t blen;
    exe[n] = '\0';
    /* The build tree (CMAKE_BINARY_DIR). */
    snprintf(build, sizeof build, "%s", SC_BUILD_DIR);
    blen = strlen(build);
    if (blen > 0 && strncmp(exe, build, blen) == 0 && exe[blen] == '/') {
      snprintf(roots[0], SC_PATH_MAX, "%s", SC_SOURCE_DIR);
      return 1;
    }
    /* <prefix>/bin/stepcast -> <prefix> */
    for (int up = 0; up < 2; up++) {
      char *sl = strrchr(exe, '/');
      if (sl == NULL) break;
      *sl = '\0';
    }
    if (snprintf(first, sizeof first, "%s/%s", exe, SC_DATA_INSTALL_SUBDIR) >= (int)sizeof first)
      first[0] = '\0';
    if (first[0] && sc__is_dir(first)) snprintf(roots[k++], SC_PATH_MAX, "%s", first);
  }
  if (sc__lib_prefix(prefix, sizeof prefix) &&
      snprintf(cand, sizeof cand, "%s/%s", strcmp(prefix, "/") ? prefix : "",
               SC_DATA_INSTALL_SUBDIR) < (int)sizeof cand &&
      sc__is_dir(cand) && (k == 0 || strcmp(cand, roots[0]) != 0))
    snprintf(roots[k++], SC_PATH_MAX, "%s", cand);
  if (snprintf(cand, sizeof cand, "%s/%s", SC_INSTALL_PREFIX, SC_DATA_INSTALL_SUBDIR) <
          (int)sizeof cand && sc__is_dir(cand)) {
    int seen = 0;
    for (int i = 0; i < k; i++) seen |= strcmp(cand, roots[i]) == 0;
    if (!seen) snprintf(roots[k++], SC_PATH_MAX, "%s", cand);
  }
  if (k == 0 && first[0]) snprintf(roots[k++], SC_PATH_MAX, "%s", first);
  return k;
}

int sc_spec_resolve(sc_spec_kind kind, const char *name_or_path, char *out, size_t out_size,
                    sc_error *err) {
  char tried[SC_ERROR_MSG_MAX / 2];
  const char *sub;
  size_t len;
  if (name_or_path == NULL || out == NULL || out_size == 0 || (int)kind < 0 ||
      kind > SC_SPEC_STACK) {
    return sc_error_set(err, SC_EINVAL, "sc_spec_resolve: invalid argument");
  }
  sub = sc__spec_dirs[kind];
  len = strlen(name_or_path);
  if (len == 0) return sc_error_set(err, SC_EINVAL, "empty %s name", sub);
  if (strchr(name_or_path, '/') != NULL || (len > 5 && strcmp(name_or_path + len - 5, ".toml") == 0)) {
    if (!sc__is_file(name_or_path)) {
      return sc_error_set(err, SC_ENOTFOUND, "%s: no such file", name_or_path);
    }
    if (len >= out_size) return sc_error_set(err, SC_ELIMIT, "%s: path too long", name_or_path);
    memcpy(out, name_or_path, len + 1);
    return SC_OK;
  }
  tried[0] = '\0';
  {
    const char *env = getenv("STEPCAST_DATA_PATH");
    if (env != NULL && env[0] != '\0') {
      char *copy = strdup(env);
      char *save = NULL;
      if (copy == NULL) return sc_error_set(err, SC_ENOMEM, "out of memory");
      for (char *d = strtok_r(copy, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        if (d[0] == '\0') continue;
        if (sc__try(d, sub, name_or_path, out, out_size, tried, sizeof tried)) {
          free(copy);
          return SC_OK;
        }
      }
      free(copy);
    }
  }
  {
    char roots[SC_DATA_ROOTS][SC_PATH_MAX];
    int nr = sc__data_roots(roots);
    for (int i = 0; i < nr; i++)
      if (sc__try(roots[i], sub, name_or_path, out, out_size, tried, sizeof tried)) return SC_OK;
  }
  return sc_error_set(err, SC_ENOTFOUND, "%s '%s' not found (tried %s)",
                      kind == SC_SPEC_MODEL ? "model"
                      : kind == SC_SPEC_HARDWARE ? "hardware"
                      : kind == SC_SPEC_TOPOLOGY ? "topology" : "stack",
                      name_or_path, tried[0] ? tried : "no folder");
}

/* ------------------------------------------------------------------------- */
/* Shared validation helpers                                                 */

/* Every key of t must be in known[]; else SC_ESPEC naming the first unknown one. */
static int sc__check_keys(const sc_table *t, const char *what, const char *const *known,
                          sc_error *err) {
  const char *key = NULL;
  for (size_t i = 0; sc__table_key(t, i, &key) == SC_OK; i++) {
    int ok = 0;
    for (size_t k = 0; known[k] != NULL; k++) {
      if (strcmp(key, known[k]) == 0) { ok = 1; break; }
    }
    if (!ok) {
      return sc_error_set(err, SC_ESPEC, "%s: key '%s': unknown key in %s",
                          sc__table_where(t, key), key, what);
    }
  }
  return SC_OK;
}

static int sc__missing(const sc_table *t, const char *prefix, const char *key, const char *what,
                       sc_error *err) {
  return sc_error_set(err, SC_ESPEC, "%s: key '%s%s': missing required key in %s",
                      sc__table_where(t, NULL), prefix, key, what);
}

/* Read an integer; doubles with an exact integer value are accepted too (4.8e9 style). */
static int sc__get_int(const sc_table *t, const char *prefix, const char *key, int required,
                       const char *what, int64_t *out, sc_error *err) {
  double d = 0;
  int rc = sc__table_integer(t, key, out, err);
  if (rc == SC_OK || (rc != SC_ENOTFOUND && rc != SC_ESPEC)) return rc;
  if (rc == SC_ENOTFOUND) return required ? sc__missing(t, prefix, key, what, err) : SC_ENOTFOUND;
  /* Wrong type for integer: accept an integral float. */
  {
    sc_error scratch;
    if (sc__table_number(t, key, &d, &scratch) != SC_OK) return rc; /* err says why */
  }
  if (!(d == floor(d)) || fabs(d) > 9.0e15) {
    return sc_error_set(err, SC_ESPEC, "%s: key '%s%s': expected an integer, found %g",
                        sc__table_where(t, key), prefix, key, d);
  }
  *out = (int64_t)d;
  return SC_OK;
}

static int sc__get_num(const sc_table *t, const char *prefix, const char *key, int required,
                       const char *what, double *out, sc_error *err) {
  int rc = sc__table_number(t, key, out, err);
  if (rc == SC_ENOTFOUND && required) return sc__missing(t, prefix, key, what, err);
  if (rc == SC_OK && !isfinite(*out)) {
    return sc_error_set(err, SC_ESPEC, "%s: key '%s%s': must be finite",
                        sc__table_where(t, key), prefix, key);
  }
  return rc;
}

static int sc__bad(const sc_table *t, const char *key, sc_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int sc__bad(const sc_table *t, const char *key, sc_error *err, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return sc_error_set(err, SC_ESPEC, "%s: key '%s': %s", sc__table_where(t, key), key, why);
}

/* The one top-level table named section of doc (parsed from path); doc freed on error. */
static int sc__doc_section(sc_toml_doc *doc, const char *path, const char *section,
                           sc_toml_doc **doc_out, const sc_table **sec_out, sc_error *err);

/* Parse path and return the one top-level table named section ("model", ...). */
static int sc__open_section(const char *path, const char *section, sc_toml_doc **doc_out,
                            const sc_table **sec_out, sc_error *err) {
  sc_toml_doc *doc = NULL;
  int rc = sc__toml_parse_file(path, &doc, err);
  if (rc != SC_OK) return rc;
  return sc__doc_section(doc, path, section, doc_out, sec_out, err);
}

static int sc__doc_section(sc_toml_doc *doc, const char *path, const char *section,
                           sc_toml_doc **doc_out, const sc_table **sec_out, sc_error *err) {
  const sc_table *root;
  const char *known[2] = {section, NULL};
  char what[64];
  int rc;
  root = sc__table_of(doc->root);
  snprintf(what, sizeof what, "a %s file (only [%s] is allowed at top level)", section, section);
  rc = sc__check_keys(root, what, known, err);
  if (rc == SC_OK) {
    rc = sc__table_table(root, section, sec_out, err);
    if (rc == SC_ENOTFOUND) {
      rc = sc_error_set(err, SC_ESPEC, "%s:1:1: key '%s': missing [%s] table", path, section,
                        section);
    }
  }
  if (rc != SC_OK) {
    sc__toml_free(doc);
    return rc;
  }
  *doc_out = doc;
  return SC_OK;
}

static void sc__copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src != NULL ? src : "");
}

/* ------------------------------------------------------------------------- */
/* Model                                                                     */

/* Parameter count of a validated model; see docs/formats.md for the formula. */
static int64_t sc__model_params(const sc_model *m) {
  int64_t h = m->hidden, q = m->heads * m->head_dim, kv = m->kv_heads * m->head_dim;
  int64_t f = m->ffn_hidden;
  int64_t norm = m->norm == SC_NORM_LAYERNORM ? 2 * h : h;
  int64_t attn = h * q + 2 * h * kv + q * h;
  if (m->kv_lora_rank > 0) {
    /* MLA: the down and up projections, the two latent norms, the output projection */
    int64_t a = m->heads, dqk = m->qk_nope_head_dim + m->qk_rope_head_dim;
    int64_t ql = m->q_lora_rank, kl = m->kv_lora_rank, nw = m->norm == SC_NORM_LAYERNORM ? 2 : 1;
    attn = (ql > 0 ? h * ql + nw * ql + ql * a * dqk : h * a * dqk) +
           h * (kl + m->qk_rope_head_dim) + nw * kl +
           kl * a * (m->qk_nope_head_dim + m->v_head_dim) + a * m->v_head_dim * h;
  }
  int64_t mlp = (sc_activation_gated(m->activation) ? 3 : 2) * h * f;
  int64_t layer, total;
  if (m->linear_bias) {
    attn += q + 2 * kv + h;
    mlp += (sc_activation_gated(m->activation) ? 2 * f : f) + h;
  }
  layer = attn + mlp + 2 * norm;
  total = m->layers * layer + norm; /* final norm */
  total += m->vocab * h * (m->tied_embeddings ? 1 : 2);
  if (m->position == SC_POS_LEARNED) total += m->max_seq * h;
  return total;
}

/* One expert's MLP parameters (the dense MLP's formula at width expert_ffn_hidden). */
static int64_t sc__expert_params(const sc_model *m) {
  int64_t h = m->hidden, f = m->expert_ffn_hidden;
  int gated = sc_activation_gated(m->activation);
  int64_t n = (gated ? 3 : 2) * h * f;
  if (m->linear_bias) n += (gated ? 2 * f : f) + h;
  return n;
}

/* Total and active parameters of a validated model: each MoE layer's dense MLP replaced by
 * the router (h x E, no bias), E routed and S shared experts; a token uses the router, its
 * top_k routed experts and the shared ones (docs/formats.md, "Mixture of experts"). */
static void sc__model_params_moe(const sc_model *m, int64_t *total, int64_t *active) {
  int64_t dense = sc__model_params(m);
  int64_t f = m->ffn_hidden, h = m->hidden;
  int gated = sc_activation_gated(m->activation);
  int64_t mlp = (gated ? 3 : 2) * h * f + (m->linear_bias ? (gated ? 2 * f : f) + h : 0);
  int64_t nm = sc_model_moe_layers(m, 0, m->layers), ex = sc__expert_params(m);
  int64_t router = h * m->num_experts;
  *total = dense;
  *active = dense;
  if (nm == 0) return;
  *total = dense + nm * (router + (m->num_experts + m->shared_experts) * ex - mlp);
  *active = dense + nm * (router + (m->top_k + m->shared_experts) * ex - mlp);
}

/* The mixture-of-experts keys of m (sc_model_finish): defaults, ranges, cross-field rules. */
static int sc__model_moe_check(sc_model *m, const char *where, sc_error *err) {
  if (m->num_experts < 0 || m->num_experts > 100000)
    return sc_error_set(err, SC_ESPEC, "%s: key 'num_experts': must be in [0, 100000] (is %lld)",
                        where, (long long)m->num_experts);
  if (m->num_experts == 0) {
    const struct { const char *key; int set; } dep[] = {
        {"top_k", m->top_k != 0},
        {"expert_ffn_hidden", m->expert_ffn_hidden != 0},
        {"shared_experts", m->shared_experts != 0},
        {"moe_layer_freq", m->moe_layer_freq != 0},
        {"first_dense_layers", m->first_dense_layers != 0},
        {"capacity_factor", m->capacity_factor != 0.0},
        {"moe_imbalance", m->moe_imbalance != 0.0}};
    for (size_t i = 0; i < sizeof dep / sizeof dep[0]; i++)
      if (dep[i].set)
        return sc_error_set(err, SC_ESPEC, "%s: key '%s': needs 'num_experts' (a mixture of "
                            "experts)", where, dep[i].key);
    return SC_OK;
  }
  if (m->top_k < 1 || m->top_k > m->num_experts)
    return sc_error_set(err, SC_ESPEC, "%s: key 'top_k': must be in [1, num_experts = %lld] "
                        "(is %lld)", where, (long long)m->num_experts, (long long)m->top_k);
  if (m->expert_ffn_hidden < 1 || m->expert_ffn_hidden > 10000000)
    return sc_error_set(err, SC_ESPEC, "%s: key 'expert_ffn_hidden': must be in [1, 10000000] "
                        "with num_experts (is %lld)", where, (long long)m->expert_ffn_hidden);
  if (m->shared_experts < 0 || m->shared_experts > 1000)
    return sc_error_set(err, SC_ESPEC, "%s: key 'shared_experts': must be in [0, 1000] (is %lld)",
                        where, (long long)m->shared_experts);
  if (m->moe_layer_freq == 0) m->moe_layer_freq = 1;
  if (m->moe_layer_freq < 1 || m->moe_layer_freq > m->layers)
    return sc_error_set(err, SC_ESPEC, "%s: key 'moe_layer_freq': must be in [1, layers = %lld] "
                        "(is %lld)", where, (long long)m->layers, (long long)m->moe_layer_freq);
  if (m->first_dense_layers < 0 || sc_model_moe_layers(m, 0, m->layers) == 0)
    return sc_error_set(err, SC_ESPEC, "%s: key 'first_dense_layers': %lld leaves no MoE layer "
                        "among %lld layers", where, (long long)m->first_dense_layers,
                        (long long)m->layers);
  if (!(m->capacity_factor >= 0.0) || !isfinite(m->capacity_factor))
    return sc_error_set(err, SC_ESPEC, "%s: key 'capacity_factor': must be >= 0 (0 = dropless), "
                        "is %g", where, m->capacity_factor);
  {
    /* (E + S) experts x an expert's parameters x MoE layers must fit with room to spare */
    int64_t ex = 0, n = 0;
    const int64_t v[] = {m->num_experts + m->shared_experts, m->hidden, m->expert_ffn_hidden,
                         3, m->layers, 8};
    if (sc__prod_i64(v, 6, &n) || sc__mul_i64(m->hidden, m->num_experts, &ex))
      return sc_error_set(err, SC_ERANGE, "%s: key 'num_experts': %lld experts of width %lld "
                          "over %lld layers is too many parameters", where,
                          (long long)m->num_experts, (long long)m->expert_ffn_hidden,
                          (long long)m->layers);
  }
  if (m->moe_imbalance == 0.0) m->moe_imbalance = 1.0;
  {
    double most = (double)m->num_experts / (double)m->top_k;
    if (!(m->moe_imbalance >= 1.0 && m->moe_imbalance <= most))
      return sc_error_set(err, SC_ESPEC, "%s: key 'moe_imbalance': must be in [1, num_experts/"
                          "top_k = %g] (the most loaded expert's tokens over the mean), is %g",
                          where, most, m->moe_imbalance);
  }
  return SC_OK;
}

int sc_model_finish(sc_model *m, sc_error *err) {
  const char *where = (m != NULL && m->path[0]) ? m->path : "<model>";
  if (m == NULL) return sc_error_set(err, SC_EINVAL, "sc_model_finish: model is NULL");
#define SC__POS(field)                                                                     \
  if (m->field <= 0)                                                                       \
    return sc_error_set(err, SC_ESPEC, "%s: key '" #field "': must be > 0 (is %lld)", where, \
                        (long long)m->field);
  SC__POS(layers) SC__POS(hidden) SC__POS(ffn_hidden) SC__POS(heads) SC__POS(vocab)
  SC__POS(max_seq)
#undef SC__POS
  if (m->kv_heads == 0) m->kv_heads = m->heads;
  if (m->kv_heads < 0 || m->kv_heads > m->heads || m->heads % m->kv_heads != 0) {
    return sc_error_set(err, SC_ESPEC, "%s: key 'kv_heads': must divide 'heads' (%lld %% %lld != 0)",
                        where, (long long)m->heads, (long long)m->kv_heads);
  }
  if (m->kv_lora_rank > 0 || m->q_lora_rank != 0 || m->qk_nope_head_dim != 0 ||
      m->qk_rope_head_dim != 0 || m->v_head_dim != 0) {
    /* multi-head latent attention */
    const struct { const char *key; int64_t v; } k[] = {
        {"kv_lora_rank", m->kv_lora_rank}, {"qk_nope_head_dim", m->qk_nope_head_dim},
        {"qk_rope_head_dim", m->qk_rope_head_dim}, {"v_head_dim", m->v_head_dim}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
      if (k[i].v <= 0 || k[i].v > 1000000)
        return sc_error_set(err, SC_ESPEC, "%s: key '%s': must be in [1, 1000000] for multi-head "
                            "latent attention (is %lld)", where, k[i].key, (long long)k[i].v);
    if (m->q_lora_rank < 0 || m->q_lora_rank > 1000000)
      return sc_error_set(err, SC_ESPEC, "%s: key 'q_lora_rank': must be in [0, 1000000] (is "
                          "%lld)", where, (long long)m->q_lora_rank);
    if (m->kv_heads != m->heads)
      return sc_error_set(err, SC_ESPEC, "%s: key 'kv_heads': multi-head latent attention has "
                          "kv_heads = heads (%lld)", where, (long long)m->heads);
    if (m->linear_bias)
      return sc_error_set(err, SC_ESPEC, "%s: key 'linear_bias': not modelled with multi-head "
                          "latent attention", where);
    int64_t d2 = m->qk_nope_head_dim + m->qk_rope_head_dim + m->v_head_dim;
    if (d2 % 2 != 0)
      return sc_error_set(err, SC_ESPEC, "%s: key 'v_head_dim': qk_nope_head_dim + "
                          "qk_rope_head_dim + v_head_dim (%lld) must be even (the attention "
                          "core's head_dim is half of it)", where, (long long)d2);
    if (m->head_dim != 0 && m->head_dim != d2 / 2)
      return sc_error_set(err, SC_ESPEC, "%s: key 'head_dim': derived from the latent attention's "
                          "dimensions ((nope + rope + v)/2 = %lld); leave it out", where,
                          (long long)(d2 / 2));
    m->head_dim = d2 / 2;
  }
  if (m->head_dim == 0) {
    if (m->hidden % m->heads != 0) {
      return sc_error_set(err, SC_ESPEC,
                          "%s: key 'heads': must divide 'hidden' (%lld %% %lld != 0) unless "
                          "'head_dim' is given", where, (long long)m->hidden, (long long)m->heads);
    }
    m->head_dim = m->hidden / m->heads;
  } else if (m->head_dim < 0) {
    return sc_error_set(err, SC_ESPEC, "%s: key 'head_dim': must be > 0", where);
  }
  if ((int)m->activation < 0 || m->activation >= SC_ACT_COUNT || (int)m->norm < 0 ||
      m->norm > SC_NORM_RMSNORM || (int)m->position < 0 || m->position > SC_POS_NONE) {
    return sc_error_set(err, SC_ESPEC, "%s: activation, norm or position out of range", where);
  }
  /* Guard the product terms against int64 overflow (ample for any real model); each bound
   * checked alone first, so that the heads x head_dim product cannot overflow itself. */
  {
    const struct { const char *key; int64_t v, max; } lim[] = {
        {"hidden", m->hidden, 1000000},         {"ffn_hidden", m->ffn_hidden, 10000000},
        {"layers", m->layers, 100000},          {"vocab", m->vocab, 100000000},
        {"heads", m->heads, 10000000},          {"head_dim", m->head_dim, 10000000},
        {"max_seq", m->max_seq, 1000000000}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
      if (lim[i].v > lim[i].max)
        return sc_error_set(err, SC_ERANGE, "%s: key '%s': %lld is out of range (at most %lld)",
                            where, lim[i].key, (long long)lim[i].v, (long long)lim[i].max);
    if (m->heads * m->head_dim > 10000000)
      return sc_error_set(err, SC_ERANGE, "%s: keys 'heads' x 'head_dim': %lld is out of range "
                          "(at most 10000000)", where, (long long)(m->heads * m->head_dim));
  }
  {
    int rc = sc__model_moe_check(m, where, err);
    if (rc != SC_OK) return rc;
  }
  sc__model_params_moe(m, &m->params, &m->active_params);
  return SC_OK;
}

static int sc__enum(const sc_table *t, const char *key, const char *const *names, int n,
                    int required, int *out, sc_error *err) {
  const char *s = NULL;
  char list[160] = "";
  int rc = sc__table_string(t, key, &s, err);
  if (rc == SC_ENOTFOUND) return required ? sc__missing(t, "", key, "[model]", err) : rc;
  if (rc != SC_OK) return rc;
  for (int i = 0; i < n; i++) {
    if (strcmp(s, names[i]) == 0) { *out = i; return SC_OK; }
    sc__append(list, sizeof list, names[i]);
  }
  return sc__bad(t, key, err, "'%s' is not one of %s", s, list);
}

int sc_model_load(const char *name_or_path, sc_model *out, sc_error *err) {
  static const char *const known[] = {"name", "layers", "hidden", "ffn_hidden", "heads",
                                      "kv_heads", "head_dim", "vocab", "max_seq", "activation",
                                      "norm", "position", "tied_embeddings", "linear_bias",
                                      "num_experts", "shared_experts", "top_k",
                                      "expert_ffn_hidden", "moe_layer_freq",
                                      "first_dense_layers", "capacity_factor", "moe_imbalance",
                                      "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                      "qk_rope_head_dim", "v_head_dim", NULL};
  static const char *const acts[] = {"gelu", "swiglu", "relu", "squared_relu", "geglu"};
  static const char *const norms[] = {"layernorm", "rmsnorm"};
  static const char *const poss[] = {"learned", "rope", "alibi", "none"};
  char path[SC_PATH_MAX];
  sc_toml_doc *doc = NULL;
  const sc_table *t = NULL;
  const char *name = NULL;
  sc_model m;
  int rc, e;
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_model_load: out is NULL");
  rc = sc_spec_resolve(SC_SPEC_MODEL, name_or_path, path, sizeof path, err);
  if (rc != SC_OK) return rc;
  rc = sc__open_section(path, "model", &doc, &t, err);
  if (rc != SC_OK) return rc;
  memset(&m, 0, sizeof m);
  sc__copy(m.path, sizeof m.path, path);
  rc = sc__check_keys(t, "[model]", known, err);
  if (rc == SC_OK) {
    rc = sc__table_string(t, "name", &name, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "name", "[model]", err);
  }
  if (rc == SC_OK && (name[0] == '\0' || strlen(name) >= sizeof m.name))
    rc = sc__bad(t, "name", err, "must have 1 to %zu characters", sizeof m.name - 1);
  if (rc == SC_OK) sc__copy(m.name, sizeof m.name, name);
#define SC__INT(key, req)                                                               \
  if (rc == SC_OK) {                                                                    \
    rc = sc__get_int(t, "", #key, req, "[model]", &m.key, err);                         \
    if (rc == SC_ENOTFOUND) rc = SC_OK;                                                 \
    else if (rc == SC_OK && m.key <= 0)                                                 \
      rc = sc__bad(t, #key, err, "must be > 0 (is %lld)", (long long)m.key);            \
  }
  SC__INT(layers, 1) SC__INT(hidden, 1) SC__INT(ffn_hidden, 1) SC__INT(heads, 1)
  SC__INT(kv_heads, 0) SC__INT(head_dim, 0) SC__INT(vocab, 1) SC__INT(max_seq, 1)
  SC__INT(num_experts, 0) SC__INT(top_k, 0) SC__INT(expert_ffn_hidden, 0)
  SC__INT(moe_layer_freq, 0) SC__INT(kv_lora_rank, 0) SC__INT(q_lora_rank, 0)
  SC__INT(qk_nope_head_dim, 0) SC__INT(qk_rope_head_dim, 0) SC__INT(v_head_dim, 0)
#undef SC__INT
  /* keys that may be 0 */
  if (rc == SC_OK) {
    rc = sc__get_int(t, "", "shared_experts", 0, "[model]", &m.shared_experts, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && m.shared_experts < 0)
      rc = sc__bad(t, "shared_experts", err, "must be >= 0 (is %lld)", (long long)m.shared_experts);
  }
  if (rc == SC_OK) {
    rc = sc__get_int(t, "", "first_dense_layers", 0, "[model]", &m.first_dense_layers, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && m.first_dense_layers < 0)
      rc = sc__bad(t, "first_dense_layers", err, "must be >= 0 (is %lld)",
                   (long long)m.first_dense_layers);
  }
  if (rc == SC_OK) {
    rc = sc__get_num(t, "", "capacity_factor", 0, "[model]", &m.capacity_factor, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && m.capacity_factor < 0.0)
      rc = sc__bad(t, "capacity_factor", err, "must be >= 0 (0 = dropless), is %g",
                   m.capacity_factor);
  }
  if (rc == SC_OK) {
    rc = sc__get_num(t, "", "moe_imbalance", 0, "[model]", &m.moe_imbalance, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && m.moe_imbalance < 1.0)
      rc = sc__bad(t, "moe_imbalance", err, "must be >= 1 (the most loaded expert's tokens "
                   "over the mean), is %g", m.moe_imbalance);
  }
  if (rc == SC_OK) { rc = sc__enum(t, "activation", acts, 5, 1, &e, err); if (rc == SC_OK) m.activation = (sc_activation)e; }
  if (rc == SC_OK) { rc = sc__enum(t, "norm", norms, 2, 1, &e, err); if (rc == SC_OK) m.norm = (sc_norm_kind)e; }
  if (rc == SC_OK) { rc = sc__enum(t, "position", poss, 4, 1, &e, err); if (rc == SC_OK) m.position = (sc_pos_embedding)e; }
  if (rc == SC_OK) {
    rc = sc__table_bool(t, "tied_embeddings", &m.tied_embeddings, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "tied_embeddings", "[model]", err);
  }
  if (rc == SC_OK) {
    rc = sc__table_bool(t, "linear_bias", &m.linear_bias, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "linear_bias", "[model]", err);
  }
  /* Cross-field rules, reported at the key's own position. */
  if (rc == SC_OK && m.kv_heads != 0 && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)) {
    rc = sc__bad(t, "kv_heads", err, "must divide 'heads' (%lld %% %lld != 0)",
                 (long long)m.heads, (long long)m.kv_heads);
  }
  if (rc == SC_OK && m.head_dim == 0 && m.kv_lora_rank == 0 && m.hidden % m.heads != 0) {
    rc = sc__bad(t, "heads", err,
                 "must divide 'hidden' (%lld %% %lld != 0) unless 'head_dim' is given",
                 (long long)m.hidden, (long long)m.heads);
  }
  if (rc == SC_OK) {
    char where[SC_PATH_MAX + 32];
    rc = sc_model_finish(&m, err);
    if (rc != SC_OK && err != NULL) {
      char msg[SC_ERROR_MSG_MAX], key[64] = "";
      const char *p = strstr(err->msg, ": key");
      /* the line of the key the message names ("key 'x'" or "keys 'x' x ..."), else the
       * [model] table's */
      const char *q = p != NULL ? strchr(p, '\'') : NULL;
      const char *e = q != NULL ? strchr(q + 1, '\'') : NULL;
      if (e != NULL && (size_t)(e - q - 1) < sizeof key)
        snprintf(key, sizeof key, "%.*s", (int)(e - q - 1), q + 1);
      snprintf(where, sizeof where, "%s", sc__table_where(t, key[0] ? key : NULL));
      if (snprintf(msg, sizeof msg, "%s%s", where, p != NULL ? p : err->msg) >= 0) {
        memcpy(err->msg, msg, sizeof err->msg);
        err->msg[sizeof err->msg - 1] = '\0';
      }
    }
  }
  sc__toml_free(doc);
  if (rc == SC_OK) *out = m;
  return rc;
}

/* ------------------------------------------------------------------------- */
/* Topology                                                                  */

static int sc__tier_load(const sc_table *tt, size_t idx, sc_tier *tier, sc_error *err) {
  static const char *const known[] = {"name", "scope_gpus", "bw_Bps", "latency_s",
                                      "oversubscription", "efficiency", "nvls", "pair_bw_Bps",
                                      "p2p_efficiency", NULL};
  char what[48];
  const char *name = NULL;
  int64_t scope = 0;
  int rc;
  snprintf(what, sizeof what, "[[topology.tier]] #%zu", idx + 1);
  rc = sc__check_keys(tt, what, known, err);
  if (rc != SC_OK) return rc;
  rc = sc__table_string(tt, "name", &name, err);
  if (rc == SC_ENOTFOUND) return sc__missing(tt, "", "name", what, err);
  if (rc != SC_OK) return rc;
  if (name[0] == '\0' || strlen(name) >= sizeof tier->name)
    return sc__bad(tt, "name", err, "must have 1 to %zu characters", sizeof tier->name - 1);
  sc__copy(tier->name, sizeof tier->name, name);
  rc = sc__get_int(tt, "", "scope_gpus", 1, what, &scope, err);
  if (rc != SC_OK) return rc;
  if (scope < 0 || scope > (int64_t)UINT32_MAX) {
    return sc__bad(tt, "scope_gpus", err, "must be >= 0 (0 = the whole system), is %lld",
                   (long long)scope);
  }
  tier->scope_gpus = (uint32_t)scope;
  rc = sc__get_num(tt, "", "bw_Bps", 1, what, &tier->bw_Bps, err);
  if (rc != SC_OK) return rc;
  /* the ranges of plugin.h (SC_RANGE_*), as the hardware plugins and sweep --vary */
  if (!(tier->bw_Bps >= SC_RANGE_BPS_MIN && tier->bw_Bps <= SC_RANGE_BPS_MAX))
    return sc__bad(tt, "bw_Bps", err, "%g B/s is outside [" SC_RANGE_STR(SC_RANGE_BPS_MIN) ", "
                   SC_RANGE_STR(SC_RANGE_BPS_MAX) "] (a typo in the exponent?)", tier->bw_Bps);
  tier->latency_s = 0;
  rc = sc__get_num(tt, "", "latency_s", 0, what, &tier->latency_s, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  if (!(tier->latency_s >= 0 && tier->latency_s <= SC_RANGE_SECONDS_MAX))
    return sc__bad(tt, "latency_s", err, "must be in [0, " SC_RANGE_STR(SC_RANGE_SECONDS_MAX)
                   "] s (is %g)", tier->latency_s);
  tier->oversubscription = 1;
  rc = sc__get_num(tt, "", "oversubscription", 0, what, &tier->oversubscription, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  if (!(tier->oversubscription >= 1)) {
    return sc__bad(tt, "oversubscription", err, "must be >= 1 (is %g)", tier->oversubscription);
  }
  tier->efficiency = 0; /* not stated: taken as 1 by the communication model */
  rc = sc__get_num(tt, "", "efficiency", 0, what, &tier->efficiency, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  if (rc == SC_OK && !(tier->efficiency >= SC_RANGE_EFFICIENCY_MIN && tier->efficiency <= 1)) {
    return sc__bad(tt, "efficiency", err, "must be in [" SC_RANGE_STR(SC_RANGE_EFFICIENCY_MIN)
                   ", 1] (is %g)", tier->efficiency);
  }
  tier->nvls = 0; /* not stated: no NVLink SHARP */
  rc = sc__table_bool(tt, "nvls", &tier->nvls, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  tier->p2p_efficiency = 0; /* not stated: the tier's efficiency */
  rc = sc__get_num(tt, "", "p2p_efficiency", 0, what, &tier->p2p_efficiency, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  if (rc == SC_OK &&
      !(tier->p2p_efficiency >= SC_RANGE_EFFICIENCY_MIN && tier->p2p_efficiency <= 1)) {
    return sc__bad(tt, "p2p_efficiency", err, "must be in [" SC_RANGE_STR(SC_RANGE_EFFICIENCY_MIN)
                   ", 1] (is %g)", tier->p2p_efficiency);
  }
  tier->pair_bw_Bps = 0; /* not stated: a switch */
  rc = sc__get_num(tt, "", "pair_bw_Bps", 0, what, &tier->pair_bw_Bps, err);
  if (rc != SC_OK && rc != SC_ENOTFOUND) return rc;
  if (rc == SC_OK) {
    if (idx != 0)
      return sc__bad(tt, "pair_bw_Bps", err, "only tier 0 (a node's GPUs) can state the "
                     "bandwidth of a directly joined pair");
    if (!(tier->pair_bw_Bps >= SC_RANGE_BPS_MIN && tier->pair_bw_Bps <= tier->bw_Bps))
      return sc__bad(tt, "pair_bw_Bps", err, "%g B/s is outside [" SC_RANGE_STR(SC_RANGE_BPS_MIN)
                     ", bw_Bps = %g]", tier->pair_bw_Bps, tier->bw_Bps);
  }
  return SC_OK;
}

int sc_topology_load(const char *name_or_path, sc_topology *out, sc_error *err) {
  static const char *const known[] = {"name", "hardware", "gpus_per_node", "nics_per_node",
                                      "max_gpus", "tier", NULL};
  char path[SC_PATH_MAX];
  sc_toml_doc *doc = NULL;
  const sc_table *t = NULL;
  const sc_toml_value *tiers;
  const char *s = NULL;
  sc_topology topo;
  int64_t v = 0;
  int rc;
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_topology_load: out is NULL");
  rc = sc_spec_resolve(SC_SPEC_TOPOLOGY, name_or_path, path, sizeof path, err);
  if (rc != SC_OK) return rc;
  rc = sc__open_section(path, "topology", &doc, &t, err);
  if (rc != SC_OK) return rc;
  memset(&topo, 0, sizeof topo);
  sc__copy(topo.path, sizeof topo.path, path);
  rc = sc__check_keys(t, "[topology]", known, err);
  if (rc == SC_OK) {
    rc = sc__table_string(t, "name", &s, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "name", "[topology]", err);
    if (rc == SC_OK && (s[0] == '\0' || strlen(s) >= sizeof topo.name))
      rc = sc__bad(t, "name", err, "must have 1 to %zu characters", sizeof topo.name - 1);
    if (rc == SC_OK) sc__copy(topo.name, sizeof topo.name, s);
  }
  if (rc == SC_OK) {
    rc = sc__table_string(t, "hardware", &s, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "hardware", "[topology]", err);
    if (rc == SC_OK) {
      sc_error rerr;
      char rel[SC_PATH_MAX];
      const size_t sl = strlen(s);
      const char *slash = strrchr(path, '/');
      /* a relative file (not a name looked up in the data path) is the topology's neighbour,
       * whatever the working directory: resolved against the topology file's folder */
      if (s[0] != '/' && slash != NULL &&
          (strchr(s, '/') != NULL || (sl > 5 && strcmp(s + sl - 5, ".toml") == 0))) {
        int n = snprintf(rel, sizeof rel, "%.*s/%s", (int)(slash - path), path, s);
        if (n < 0 || (size_t)n >= sizeof rel) {
          rc = sc__bad(t, "hardware", err, "path too long beside %s", path);
        } else {
          s = rel;
        }
      }
      if (rc == SC_OK &&
          sc_spec_resolve(SC_SPEC_HARDWARE, s, topo.hardware, sizeof topo.hardware, &rerr) != SC_OK) {
        rc = sc__bad(t, "hardware", err, "does not resolve: %s", rerr.msg);
      }
    }
  }
#define SC__U32(key, req, min)                                                          \
  if (rc == SC_OK) {                                                                    \
    v = 0;                                                                              \
    rc = sc__get_int(t, "", #key, req, "[topology]", &v, err);                          \
    if (rc == SC_ENOTFOUND) rc = SC_OK;                                                 \
    else if (rc == SC_OK && (v < (min) || v > (int64_t)UINT32_MAX))                     \
      rc = sc__bad(t, #key, err, "must be >= %d (is %lld)", (min), (long long)v);       \
    if (rc == SC_OK) topo.key = (uint32_t)v;                                            \
  }
  SC__U32(gpus_per_node, 1, 1) SC__U32(nics_per_node, 1, 0) SC__U32(max_gpus, 0, 0)
#undef SC__U32
  tiers = rc == SC_OK ? sc__toml_get(sc__table_value(t), "tier") : NULL;
  if (rc == SC_OK && tiers == NULL) {
    rc = sc__missing(t, "", "tier", "[topology] (at least one [[topology.tier]])", err);
  }
  if (rc == SC_OK && (tiers->type != SC_TOML_ARRAY || tiers->u.arr.len == 0)) {
    rc = sc__bad(t, "tier", err, "expected a non-empty array of tables [[topology.tier]]");
  }
  if (rc == SC_OK && tiers->u.arr.len > SC_MAX_TIERS) {
    rc = sc__bad(t, "tier", err, "at most %d tiers (found %zu)", SC_MAX_TIERS, tiers->u.arr.len);
  }
  for (size_t i = 0; rc == SC_OK && i < tiers->u.arr.len; i++) {
    const sc_table *tt = sc__table_of(tiers->u.arr.items[i]);
    if (tt == NULL) {
      rc = sc__bad(t, "tier", err, "element %zu is not a table", i + 1);
      break;
    }
    rc = sc__tier_load(tt, i, &topo.tiers[i], err);
    if (rc != SC_OK) break;
    topo.ntiers = (uint32_t)(i + 1);
    if (topo.tiers[i].nvls && (i > 0 || topo.gpus_per_node <= 1)) {
      rc = sc__bad(tt, "nvls", err,
                   "only tier 0 of a topology with several GPUs per node (the node's NVSwitch) "
                   "can be NVLink SHARP");
    } else if (i == 0 && topo.gpus_per_node > 1 &&
               topo.tiers[0].scope_gpus != topo.gpus_per_node) {
      rc = sc__bad(tt, "scope_gpus", err,
                   "tier 0 must join exactly the GPUs of one node (gpus_per_node = %u, "
                   "scope_gpus = %u)", topo.gpus_per_node, topo.tiers[0].scope_gpus);
    } else if (i > 0) {
      uint32_t prev = topo.tiers[i - 1].scope_gpus, cur = topo.tiers[i].scope_gpus;
      if (prev == 0) {
        rc = sc__bad(tt, "scope_gpus", err,
                     "tier %zu follows a tier that already spans the whole system "
                     "(scope_gpus = 0)", i + 1);
      } else if (cur != 0 && (cur <= prev || cur % prev != 0)) {
        rc = sc__bad(tt, "scope_gpus", err,
                     "tiers must grow, innermost first: %u is not a multiple > %u of the tier "
                     "before", cur, prev);
      }
    }
    if (rc == SC_OK && topo.max_gpus != 0 && topo.tiers[i].scope_gpus > topo.max_gpus) {
      rc = sc__bad(tt, "scope_gpus", err, "exceeds max_gpus (%u > %u)",
                   topo.tiers[i].scope_gpus, topo.max_gpus);
    }
  }
  if (rc == SC_OK && topo.max_gpus != 0 && topo.max_gpus % topo.gpus_per_node != 0) {
    rc = sc__bad(t, "max_gpus", err, "must be a multiple of gpus_per_node (%u %% %u != 0)",
                 topo.max_gpus, topo.gpus_per_node);
  }
  sc__toml_free(doc);
  if (rc == SC_OK) *out = topo;
  return rc;
}

/* ------------------------------------------------------------------------- */
/* Hardware                                                                  */

static int sc__hardware_of_doc(struct sc_registry *reg, sc_toml_doc *doc, const sc_table *t,
                               sc_device *out, sc_error *err);

int sc_hardware_load(struct sc_registry *reg, const char *name_or_path, sc_device *out,
                     sc_error *err) {
  char path[SC_PATH_MAX];
  sc_toml_doc *doc = NULL;
  const sc_table *t = NULL;
  int rc;
  if (reg == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_hardware_load: registry or out is NULL");
  }
  rc = sc_spec_resolve(SC_SPEC_HARDWARE, name_or_path, path, sizeof path, err);
  if (rc != SC_OK) return rc;
  rc = sc__open_section(path, "hardware", &doc, &t, err);
  if (rc != SC_OK) return rc;
  return sc__hardware_of_doc(reg, doc, t, out, err);
}

int sc_hardware_load_text(struct sc_registry *reg, const char *text, size_t len,
                           const char *filename, sc_device *out, sc_error *err) {
  sc_toml_doc *doc = NULL;
  const sc_table *t = NULL;
  int rc;
  if (reg == NULL || text == NULL || filename == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_hardware_load_text: NULL argument");
  rc = sc__toml_parse(text, len, filename, &doc, err);
  if (rc != SC_OK) return rc;
  rc = sc__doc_section(doc, filename, "hardware", &doc, &t, err);
  if (rc != SC_OK) return rc;
  return sc__hardware_of_doc(reg, doc, t, out, err);
}

/* The device that the [hardware] table t of doc describes; frees doc. */
static int sc__hardware_of_doc(struct sc_registry *reg, sc_toml_doc *doc, const sc_table *t,
                               sc_device *out, sc_error *err) {
  const char *kind = NULL;
  const sc_hw_plugin *hw;
  sc_device dev;
  int rc = sc__table_string(t, "kind", &kind, err);
  if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "kind", "[hardware]", err);
  if (rc == SC_OK) {
    hw = sc_registry_hw(reg, kind);
    if (hw == NULL) {
      rc = sc_error_set(err, SC_ENOTFOUND, "%s: key 'kind': no hardware plugin serves kind '%s'",
                        sc__table_where(t, "kind"), kind);
    } else {
      memset(&dev, 0, sizeof dev);
      rc = hw->describe(sc_registry_state(reg, &hw->hdr), sc_registry_host(reg),
                        sc__table_of(doc->root), &dev, err);
      if (rc != SC_OK && err != NULL && err->code != rc) err->code = rc;
      if (rc == SC_OK && dev.kind[0] == '\0') sc__copy(dev.kind, sizeof dev.kind, kind);
    }
  }
  sc__toml_free(doc);
  if (rc == SC_OK) *out = dev;
  return rc;
}

/* ------------------------------------------------------------------------- */
/* Software stack                                                            */

/* A family name as op plugins name theirs: [a-z0-9_]+, under 32 bytes. */
static int sc__family_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= 32) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
  }
  return 1;
}

/* Append the rule family[.variant] = v (variant < 0: every variant) of key, v in [lo, hi];
 * where is the rule's file:line:col, name its key as written after key. */
static int sc__stack_rule_add(const char *where, const char *key, const char *name,
                              const char *family, int32_t variant, double v, double lo,
                              double hi, sc_stack_rule *rules, uint32_t *n, uint32_t cap,
                              sc_error *err) {
  if (!(v >= lo && v <= hi))
    return sc_error_set(err, SC_ESPEC, "%s: key '%s.%s': must be in [%g, %g] (is %g)", where,
                        key, name, lo, hi, v);
  if (*n >= cap)
    return sc_error_set(err, SC_ESPEC, "%s: key '%s.%s': more than %u rules in "
                        "[stack.kernels] and [stack.traffic]", where, key, name, cap);
  snprintf(rules[*n].family, sizeof rules[*n].family, "%s", family);
  rules[*n].variant = variant;
  rules[*n].value = v;
  (*n)++;
  return SC_OK;
}

/* One [stack.kernels] or [stack.traffic] table: family = number (every variant), or
 * family = { <variant index> = number, ... }. Values in [lo, hi]. */
static int sc__stack_rules(const sc_table *st, const char *key, double lo, double hi,
                           sc_stack_rule *rules, uint32_t *n, uint32_t cap, sc_error *err) {
  const sc_table *t = NULL;
  const char *fam = NULL;
  int rc = sc__table_table(st, key, &t, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) return rc;
  for (size_t i = 0; sc__table_key(t, i, &fam) == SC_OK; i++) {
    const sc_table *vt = NULL;
    const char *var = NULL;
    char name[80];
    double v = 0;
    if (!sc__family_ok(fam)) {
      return sc_error_set(err, SC_ESPEC, "%s: key '%s.%s': not an operator family name "
                          "([a-z0-9_]+, under 32 bytes)", sc__table_where(t, fam), key, fam);
    }
    if (sc__table_table(t, fam, &vt, err) == SC_OK) {
      for (size_t j = 0; sc__table_key(vt, j, &var) == SC_OK; j++) {
        char *end = NULL;
        long idx = strtol(var, &end, 10);
        if (var[0] < '0' || var[0] > '9' || *end != '\0' || idx >= SC_KERNEL_RATE_VARIANTS) {
          return sc_error_set(err, SC_ESPEC, "%s: key '%s.%s.%s': expected a variant index "
                              "0..%d", sc__table_where(vt, var), key, fam, var,
                              SC_KERNEL_RATE_VARIANTS - 1);
        }
        rc = sc__table_number(vt, var, &v, err);
        if (rc != SC_OK) return rc;
        snprintf(name, sizeof name, "%s.%s", fam, var);
        rc = sc__stack_rule_add(sc__table_where(vt, var), key, name, fam, (int32_t)idx, v, lo,
                                hi, rules, n, cap, err);
        if (rc != SC_OK) return rc;
      }
      continue;
    }
    rc = sc__table_number(t, fam, &v, err);
    if (rc != SC_OK) {
      return sc_error_set(err, SC_ESPEC, "%s: key '%s.%s': expected a number or a table of "
                          "variant indices", sc__table_where(t, fam), key, fam);
    }
    rc = sc__stack_rule_add(sc__table_where(t, fam), key, fam, fam, -1, v, lo, hi, rules, n, cap,
                            err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

/* One number of an array value v (the element i of key in what, for messages). */
static int sc__stack_array_num(const sc_table *t, const char *key, const char *what, size_t i,
                               const sc_toml_value *v, double *out, sc_error *err) {
  if (v->type == SC_TOML_INTEGER) *out = (double)v->u.integer;
  else if (v->type == SC_TOML_FLOAT) *out = v->u.flt;
  else
    return sc_error_set(err, SC_ESPEC, "%s: key '%s': element %zu of %s is not a number",
                        sc__table_where(t, key), key, i + 1, what);
  if (!isfinite(*out))
    return sc_error_set(err, SC_ESPEC, "%s: key '%s': element %zu of %s must be finite",
                        sc__table_where(t, key), key, i + 1, what);
  return SC_OK;
}

/* [stack.attention.<device name>]: fwd = f, bwd = b (fractions of peak in (0, 1]), or
 * head_dims = [d1, d2, ...] (increasing whole numbers) with fwd and bwd arrays as long. */
static int sc__stack_attention(const sc_table *st, sc_stack *s, sc_error *err) {
  static const char *const known[] = {"fwd", "bwd", "head_dims", NULL};
  const sc_table *t = NULL;
  const char *dev = NULL;
  int rc = sc__table_table(st, "attention", &t, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) return rc;
  for (size_t i = 0; sc__table_key(t, i, &dev) == SC_OK; i++) {
    const sc_table *dt = NULL;
    char what[96];
    if (strlen(dev) >= sizeof s->attention[0].device)
      return sc_error_set(err, SC_ESPEC, "%s: key 'attention.%.40s...': device name too long",
                          sc__table_where(t, dev), dev);
    if (s->nattention >= SC_STACK_DEVICES_MAX)
      return sc_error_set(err, SC_ESPEC, "%s: key 'attention.%s': more than %d devices",
                          sc__table_where(t, dev), dev, SC_STACK_DEVICES_MAX);
    rc = sc__table_table(t, dev, &dt, err);
    if (rc != SC_OK)
      return sc_error_set(err, SC_ESPEC, "%s: key 'attention.%s': expected a table with fwd "
                          "and bwd", sc__table_where(t, dev), dev);
    snprintf(what, sizeof what, "[stack.attention.%s]", dev);
    rc = sc__check_keys(dt, what, known, err);
    if (rc != SC_OK) return rc;
    sc_stack_attention *a = &s->attention[s->nattention];
    memset(a, 0, sizeof *a);
    const sc_toml_value *hv = sc__toml_get(sc__table_value(dt), "head_dims");
    if (hv == NULL) { /* one pair for every head dimension */
      a->n = 1;
      rc = sc__get_num(dt, "", "fwd", 1, what, &a->fwd[0], err);
      if (rc == SC_OK) rc = sc__get_num(dt, "", "bwd", 1, what, &a->bwd[0], err);
      if (rc != SC_OK) return rc;
    } else {
      if (hv->type != SC_TOML_ARRAY || hv->u.arr.len < 1 ||
          hv->u.arr.len > SC_STACK_HEAD_DIMS_MAX)
        return sc__bad(dt, "head_dims", err, "expected an array of 1 to %d head dimensions",
                       SC_STACK_HEAD_DIMS_MAX);
      a->n = (uint32_t)hv->u.arr.len;
      for (size_t k = 0; k < a->n; k++) {
        double d = 0;
        rc = sc__stack_array_num(dt, "head_dims", what, k, hv->u.arr.items[k], &d, err);
        if (rc != SC_OK) return rc;
        if (!(d >= 1 && d <= 4096 && d == floor(d)) || (k > 0 && !(d > a->head_dim[k - 1])))
          return sc__bad(dt, "head_dims", err, "element %zu: %g is not a whole number in "
                         "[1, 4096] above the one before", k + 1, d);
        a->head_dim[k] = d;
      }
      static const char *const pk[2] = {"fwd", "bwd"};
      for (int j = 0; j < 2; j++) {
        const sc_toml_value *v = sc__toml_get(sc__table_value(dt), pk[j]);
        if (v == NULL) return sc__missing(dt, "", pk[j], what, err);
        if (v->type != SC_TOML_ARRAY || v->u.arr.len != a->n)
          return sc__bad(dt, pk[j], err, "expected an array of %u numbers, one per head_dims "
                         "element", a->n);
        for (size_t k = 0; k < a->n; k++) {
          double *o = j == 0 ? &a->fwd[k] : &a->bwd[k];
          rc = sc__stack_array_num(dt, pk[j], what, k, v->u.arr.items[k], o, err);
          if (rc != SC_OK) return rc;
        }
      }
    }
    for (uint32_t k = 0; k < a->n; k++) {
      for (int j = 0; j < 2; j++) {
        double v = j == 0 ? a->fwd[k] : a->bwd[k];
        if (!(v >= SC_RANGE_EFFICIENCY_MIN && v <= 1))
          return sc__bad(dt, j == 0 ? "fwd" : "bwd", err, "must be in ["
                         SC_RANGE_STR(SC_RANGE_EFFICIENCY_MIN) ", 1] (is %g)", v);
      }
    }
    snprintf(a->device, sizeof a->device, "%s", dev);
    s->nattention++;
  }
  return SC_OK;
}

int sc_stack_load(const char *name_or_path, sc_stack *out, sc_error *err) {
  static const char *const known[] = {"name", "description", "host_per_kernel_s",
                                      "vocab_divisible_by", "p2p_blocking", "overlap_grad_reduce",
                                      "overlap_param_gather", "overlap_tp_comm", "te_workspace",
                                      "amp_layout", "kernels", "traffic", "attention", NULL};
  char path[SC_PATH_MAX];
  sc_toml_doc *doc = NULL;
  const sc_table *t = NULL;
  const char *s = NULL;
  int rc;
  if (out == NULL || name_or_path == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_stack_load: invalid argument");
  rc = sc_spec_resolve(SC_SPEC_STACK, name_or_path, path, sizeof path, err);
  if (rc != SC_OK) return rc;
  rc = sc__open_section(path, "stack", &doc, &t, err);
  if (rc != SC_OK) return rc;
  sc_stack *st = calloc(1, sizeof *st);
  if (st == NULL) {
    sc__toml_free(doc);
    return sc_error_set(err, SC_ENOMEM, "out of memory");
  }
  sc__copy(st->path, sizeof st->path, path);
  rc = sc__check_keys(t, "[stack]", known, err);
  if (rc == SC_OK) {
    rc = sc__table_string(t, "name", &s, err);
    if (rc == SC_ENOTFOUND) rc = sc__missing(t, "", "name", "[stack]", err);
    if (rc == SC_OK && (s[0] == '\0' || strlen(s) >= sizeof st->name))
      rc = sc__bad(t, "name", err, "must have 1 to %zu characters", sizeof st->name - 1);
    if (rc == SC_OK) sc__copy(st->name, sizeof st->name, s);
  }
  if (rc == SC_OK) {
    rc = sc__table_string(t, "description", &s, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
  }
  if (rc == SC_OK) {
    rc = sc__get_num(t, "", "host_per_kernel_s", 0, "[stack]", &st->host_per_kernel_s, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && !(st->host_per_kernel_s >= 0 &&
                              st->host_per_kernel_s <= SC_STACK_HOST_MAX_S))
      rc = sc__bad(t, "host_per_kernel_s", err, "must be in [0, %g] s (is %g)",
                   SC_STACK_HOST_MAX_S, st->host_per_kernel_s);
  }
  if (rc == SC_OK) {
    int64_t v = 0;
    rc = sc__get_int(t, "", "vocab_divisible_by", 0, "[stack]", &v, err);
    if (rc == SC_ENOTFOUND) rc = SC_OK;
    else if (rc == SC_OK && (v < 1 || v > SC_MAX_VOCAB_DIVISIBLE_BY))
      rc = sc__bad(t, "vocab_divisible_by", err, "must be in [1, %u] (is %lld)",
                   SC_MAX_VOCAB_DIVISIBLE_BY, (long long)v);
    else if (rc == SC_OK) st->vocab_divisible_by = (uint32_t)v;
  }
  {
    static const char *const sw[] = {"p2p_blocking", "overlap_grad_reduce",
                                     "overlap_param_gather", "overlap_tp_comm", "te_workspace",
                                     "amp_layout"};
    int *dst[] = {&st->p2p_blocking, &st->overlap_grad_reduce, &st->overlap_param_gather,
                  &st->overlap_tp_comm, &st->te_workspace, &st->amp_layout};
    for (size_t i = 0; i < sizeof sw / sizeof sw[0] && rc == SC_OK; i++) {
      rc = sc__table_bool(t, sw[i], dst[i], err);
      if (rc == SC_ENOTFOUND) rc = SC_OK;
    }
  }
  uint32_t n = 0;
  if (rc == SC_OK)
    rc = sc__stack_rules(t, "kernels", 1.0, SC_STACK_KERNELS_MAX, st->kernels, &n,
                         SC_STACK_RULES_MAX, err);
  st->nkernels = n;
  if (rc == SC_OK)
    rc = sc__stack_rules(t, "traffic", 1.0, SC_STACK_TRAFFIC_MAX, st->traffic, &st->ntraffic,
                         SC_STACK_RULES_MAX - st->nkernels, err);
  if (rc == SC_OK) rc = sc__stack_attention(t, st, err);
  sc__toml_free(doc);
  if (rc == SC_OK) *out = *st;
  free(st);
  return rc;
}

static double sc__stack_rule(const sc_stack_rule *r, uint32_t n, const char *family,
                             uint32_t variant) {
  double all = 1.0;
  if (family == NULL) return 1.0;
  for (uint32_t i = 0; i < n; i++) {
    if (strcmp(r[i].family, family) != 0) continue;
    if (r[i].variant == (int32_t)variant) return r[i].value;
    if (r[i].variant < 0) all = r[i].value;
  }
  return all;
}

double sc_stack_kernels(const sc_stack *s, const char *family, uint32_t variant) {
  return s == NULL ? 1.0 : sc__stack_rule(s->kernels, s->nkernels, family, variant);
}

double sc_stack_traffic(const sc_stack *s, const char *family, uint32_t variant) {
  return s == NULL ? 1.0 : sc__stack_rule(s->traffic, s->ntraffic, family, variant);
}

double sc_stack_gpu_s(const sc_stack *s, const sc_device *dev, const sc_op_desc *op,
                      const sc_estimate *e, double t) {
  if (s == NULL || dev == NULL || op == NULL) return t;
  double k = sc_stack_kernels(s, op->family, op->variant);
  double m = sc_stack_traffic(s, op->family, op->variant);
  double bw = dev->mem_bw_Bps * (dev->mem_efficiency > 0 ? dev->mem_efficiency : 1.0);
  /* an attention of a head dimension the stack rates below its largest (the device's now) */
  const sc_stack_attention *a = sc_stack_attention_for(s, dev->name);
  if (a != NULL && a->n > 1 && op->family != NULL && strcmp(op->family, "attention") == 0 &&
      op->ndims >= 6 && t > dev->launch_s) {
    int bwd = op->variant == 1;
    double ref = sc_stack_attention_eff(a, 1e9, bwd);
    double here = sc_stack_attention_eff(a, (double)op->dims[5], bwd);
    if (here > 0 && here < ref) t = dev->launch_s + (t - dev->launch_s) * ref / here;
  }
  if (k > 1.0 && dev->launch_s > 0) t += (k - 1.0) * dev->launch_s;
  if (m > 1.0 && e != NULL && e->bytes > 0 && bw > 0) t += (m - 1.0) * e->bytes / bw;
  return t;
}

const sc_stack_attention *sc_stack_attention_for(const sc_stack *s, const char *dev_name) {
  if (s == NULL || dev_name == NULL) return NULL;
  for (uint32_t i = 0; i < s->nattention; i++)
    if (strcmp(s->attention[i].device, dev_name) == 0) return &s->attention[i];
  return NULL;
}

double sc_stack_attention_eff(const sc_stack_attention *a, double hd, int bwd) {
  if (a == NULL || a->n == 0) return 0.0;
  const double *v = bwd ? a->bwd : a->fwd;
  uint32_t n = a->n < SC_STACK_HEAD_DIMS_MAX ? a->n : SC_STACK_HEAD_DIMS_MAX;
  if (n == 1 || !(hd > a->head_dim[0])) return v[0];
  if (hd >= a->head_dim[n - 1]) return v[n - 1];
  uint32_t k = 1;
  while (k < n - 1 && hd > a->head_dim[k]) k++;
  double x0 = log2(a->head_dim[k - 1]), x1 = log2(a->head_dim[k]), x = log2(hd);
  return v[k - 1] + (x - x0) / (x1 - x0) * (v[k] - v[k - 1]);
}

int sc_stack_device(const sc_stack *s, sc_device *dev) {
  if (dev == NULL) return 0;
  const sc_stack_attention *a = sc_stack_attention_for(s, dev->name);
  if (a == NULL) return 0;
  dev->attention_fwd_efficiency = sc_stack_attention_eff(a, 1e9, 0); /* the largest's */
  dev->attention_bwd_efficiency = sc_stack_attention_eff(a, 1e9, 1);
  return 1;
}

int sc_stack_overlap_defaults(const sc_stack *s, const int *given, sc_parallel *p) {
  int n = 0;
  if (s == NULL || p == NULL) return 0;
  int *sw[3] = {&p->overlap_grad_reduce, &p->overlap_param_gather, &p->overlap_tp_comm};
  const int on[3] = {s->overlap_grad_reduce, s->overlap_param_gather,
                     s->overlap_tp_comm && p->tp > 1 && p->sequence_parallel};
  for (int i = 0; i < 3; i++) {
    if ((given != NULL && given[i]) || !on[i] || *sw[i]) continue;
    *sw[i] = 1;
    n++;
  }
  return n;
}

void sc_stack_state_layout(const sc_stack *s, sc_parallel *p) {
  if (s != NULL && p != NULL && s->amp_layout) p->amp_layout = 1;
}

double sc_stack_host_s(const sc_stack *s, const sc_op_desc *op) {
  if (s == NULL || op == NULL || !(s->host_per_kernel_s > 0)) return 0.0;
  return sc_stack_kernels(s, op->family, op->variant) * s->host_per_kernel_s;
}

void sc_stack_stream(double *host, double *gpu, double h, double g, uint64_t count) {
  if (count == 0) return;
  /* gpu_n = max over the instances k of host0 + k h + (n - k + 1) g, and gpu0 + n g: linear
   * in k, so the largest is at k = 1 or k = n */
  double n = (double)count, h0 = *host, g0 = *gpu;
  double a = g0 + n * g, b = h0 + h + n * g, c = h0 + n * h + g;
  double r = a > b ? a : b;
  *gpu = r > c ? r : c;
  *host = h0 + n * h;
}

/* ------------------------------------------------------------------------- */
/* A file's kind, and the scalars of a one-table file (job files)            */

const char *sc_spec_file_kind(const char *path, sc_error *err) {
  sc_toml_doc *doc = NULL;
  const char *kind = NULL;
  if (path == NULL) {
    sc_error_set(err, SC_EINVAL, "sc_spec_file_kind: NULL path");
    return NULL;
  }
  if (sc__toml_parse_file(path, &doc, err) != SC_OK) return NULL;
  const sc_toml_value *mv = sc__toml_get(doc->root, "model");
  if (sc__toml_get(doc->root, "device") != NULL && (mv == NULL || mv->type == SC_TOML_ARRAY))
    kind = "residuals"; /* residuals.toml: device, models and [[model]] tables */
  else if (mv != NULL) kind = "model";
  else if (sc__toml_get(doc->root, "hardware") != NULL) kind = "hardware";
  else if (sc__toml_get(doc->root, "topology") != NULL) kind = "topology";
  else if (sc__toml_get(doc->root, "job") != NULL) kind = "job";
  else if (sc__toml_get(doc->root, "stack") != NULL) kind = "stack";
  else sc_error_set(err, SC_ESPEC, "%s:1:1: no [model], [hardware], [topology], [stack] or "
                    "[job] table, nor a residual set's device", path);
  sc__toml_free(doc);
  return kind;
}

int sc_spec_read_table(const char *path, const char *table, sc_spec_scalar_fn fn, void *ud,
                       sc_error *err) {
  sc_toml_doc *doc = NULL;
  const sc_toml_value *tab;
  int rc;
  if (path == NULL || table == NULL || fn == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_spec_read_table: NULL argument");
  if ((rc = sc__toml_parse_file(path, &doc, err)) != SC_OK) return rc;
  for (size_t i = 0; i < doc->root->u.tab.len; i++) {
    const sc_toml_kv *kv = &doc->root->u.tab.items[i];
    if (strcmp(kv->key, table) != 0) {
      rc = sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%s': a %s file holds one [%s] table",
                        path, kv->line, kv->col, kv->key, table, table);
      goto done;
    }
  }
  tab = sc__toml_get(doc->root, table);
  if (tab == NULL || tab->type != SC_TOML_TABLE) {
    rc = sc_error_set(err, SC_ESPEC, "%s:1:1: missing [%s] table", path, table);
    goto done;
  }
  for (size_t i = 0; i < tab->u.tab.len; i++) {
    const sc_toml_kv *kv = &tab->u.tab.items[i];
    const sc_toml_value *v = kv->value;
    char buf[64];
    sc_spec_scalar sv = {kv->key, kv->line, kv->col, buf, SC_SPEC_OTHER,
                         sc__toml_type_name(v->type), v->line, v->col};
    switch (v->type) {
    case SC_TOML_STRING: sv.text = v->u.str.ptr, sv.kind = SC_SPEC_STRING; break;
    case SC_TOML_INTEGER:
      snprintf(buf, sizeof buf, "%lld", (long long)v->u.integer);
      sv.kind = SC_SPEC_INTEGER;
      break;
    case SC_TOML_FLOAT:
      snprintf(buf, sizeof buf, "%.17g", v->u.flt);
      sv.kind = SC_SPEC_FLOAT;
      break;
    case SC_TOML_BOOL: sv.text = v->u.boolean ? "true" : "false", sv.kind = SC_SPEC_BOOL; break;
    default: sv.text = NULL; break;
    }
    if ((rc = fn(ud, &sv, err)) != 0) goto done;
  }
  rc = SC_OK;
done:
  sc__toml_free(doc);
  return rc;
}
