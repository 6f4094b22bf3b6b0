/*
 * Typed lookups in a TOML table (see table.h). These back the sc_host table services and
 * the spec loaders. Every message names "file:line:col: key 'a.b'".
 */
#include "spec/table.h"

#include <stdio.h>
#include <string.h>

#include "stepcast/common.h"
#include "stepcast/spec.h"

static const char *sc__table_file(const sc_toml_value *v) {
  return (v != NULL && v->type == SC_TOML_TABLE && v->u.tab.file != NULL) ? v->u.tab.file
                                                                          : "<input>";
}

/* "a string", "an integer", "an array", ... */
static const char *sc__article(sc_toml_type t) {
  const char *n = sc__toml_type_name(t);
  return (n != NULL && (n[0] == 'a' || n[0] == 'e' || n[0] == 'i' || n[0] == 'o' ||
                        n[0] == 'u'))
             ? "an"
             : "a";
}

/* Walk a dotted key. Returns SC_OK with *kv_out (and *owner_out, the table holding it),
 * SC_ENOTFOUND when a part is absent, SC_ESPEC when an inner part is not a table. */
static int sc__table_walk(const sc_table *t, const char *key, const sc_toml_kv **kv_out,
                          const sc_toml_value **owner_out, sc_error *err) {
  const sc_toml_value *tab = sc__table_value(t);
  char part[256];
  const char *p = key;
  if (tab == NULL || tab->type != SC_TOML_TABLE || key == NULL) {
    return sc_error_set(err, SC_EINVAL, "table lookup: %s is NULL or not a table",
                        key == NULL ? "key" : "table");
  }
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
    const sc_toml_kv *kv;
    if (n >= sizeof part) {
      return sc_error_set(err, SC_EINVAL, "%s: key '%s': too long",
                          sc__table_where(t, NULL), key);
    }
    memcpy(part, p, n);
    part[n] = '\0';
    kv = sc__toml_find(tab, part);
    if (kv == NULL) return SC_ENOTFOUND;
    if (dot == NULL) {
      *kv_out = kv;
      if (owner_out != NULL) *owner_out = tab;
      return SC_OK;
    }
    if (kv->value == NULL || kv->value->type != SC_TOML_TABLE) {
      return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%.*s': expected a table, found %s %s",
                          sc__table_file(tab), (unsigned)kv->line, (unsigned)kv->col,
                          (int)(dot - key), key,
                          kv->value ? sc__article(kv->value->type) : "a",
                          kv->value ? sc__toml_type_name(kv->value->type) : "nothing");
    }
    tab = kv->value;
    p = dot + 1;
  }
}

static int sc__table_mistyped(const sc_toml_value *owner, const sc_toml_kv *kv,
                              const char *key, const char *expected, sc_error *err) {
  return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%s': expected %s, found %s %s",
                      sc__table_file(owner), (unsigned)kv->line, (unsigned)kv->col, key,
                      expected, sc__article(kv->value->type),
                      sc__toml_type_name(kv->value->type));
}

/* Walk to key and check that its value has type want (SC_TOML_FLOAT accepts integers too,
 * for numbers); on SC_OK *v is the value. what names the expectation in the message. */
static int sc__table_typed(const sc_table *t, const char *key, sc_toml_type want,
                           const char *what, const sc_toml_value **v, sc_error *err) {
  const sc_toml_kv *kv = NULL;
  const sc_toml_value *owner = NULL;
  int rc = sc__table_walk(t, key, &kv, &owner, err);
  if (rc != SC_OK) return rc;
  if (kv->value->type == want || (want == SC_TOML_FLOAT && kv->value->type == SC_TOML_INTEGER)) {
    *v = kv->value;
    return SC_OK;
  }
  return sc__table_mistyped(owner, kv, key, what, err);
}

int sc__table_number(const sc_table *t, const char *key, double *out, sc_error *err) {
  const sc_toml_value *v = NULL;
  int rc = sc__table_typed(t, key, SC_TOML_FLOAT, "a number", &v, err);
  if (rc == SC_OK) *out = (v->type == SC_TOML_INTEGER) ? (double)v->u.integer : v->u.flt;
  return rc;
}

int sc__table_integer(const sc_table *t, const char *key, int64_t *out, sc_error *err) {
  const sc_toml_value *v = NULL;
  int rc = sc__table_typed(t, key, SC_TOML_INTEGER, "an integer", &v, err);
  if (rc == SC_OK) *out = v->u.integer;
  return rc;
}

int sc__table_string(const sc_table *t, const char *key, const char **out, sc_error *err) {
  const sc_toml_value *v = NULL;
  int rc = sc__table_typed(t, key, SC_TOML_STRING, "a string", &v, err);
  if (rc == SC_OK) *out = v->u.str.ptr;
  return rc;
}

int sc__table_bool(const sc_table *t, const char *key, int *out, sc_error *err) {
  const sc_toml_value *v = NULL;
  int rc = sc__table_typed(t, key, SC_TOML_BOOL, "a boolean", &v, err);
  if (rc == SC_OK) *out = v->u.boolean ? 1 : 0;
  return rc;
}

int sc__table_table(const sc_table *t, const char *key, const sc_table **out, sc_error *err) {
  const sc_toml_value *v = NULL;
  int rc = sc__table_typed(t, key, SC_TOML_TABLE, "a table", &v, err);
  if (rc == SC_OK) *out = sc__table_of(v);
  return rc;
}

int sc__table_key(const sc_table *t, size_t i, const char **key) {
  const sc_toml_value *tab = sc__table_value(t);
  if (tab == NULL || tab->type != SC_TOML_TABLE || key == NULL) return SC_EINVAL;
  if (i >= tab->u.tab.len) return SC_ENOTFOUND;
  *key = tab->u.tab.items[i].key;
  return SC_OK;
}

static _Thread_local char sc__where_buf[SC_PATH_MAX + 64];

const char *sc__table_where(const sc_table *t, const char *key) {
  const sc_toml_value *tab = sc__table_value(t);
  const sc_toml_kv *kv = NULL;
  const sc_toml_value *owner = tab;
  sc_error ignored;
  if (tab == NULL || tab->type != SC_TOML_TABLE) {
    snprintf(sc__where_buf, sizeof sc__where_buf, "<input>:0:0");
    return sc__where_buf;
  }
  if (key != NULL && sc__table_walk(t, key, &kv, &owner, &ignored) == SC_OK) {
    snprintf(sc__where_buf, sizeof sc__where_buf, "%s:%u:%u", sc__table_file(owner),
             (unsigned)kv->line, (unsigned)kv->col);
  } else {
    snprintf(sc__where_buf, sizeof sc__where_buf, "%s:%u:%u", sc__table_file(tab),
             (unsigned)tab->line, (unsigned)tab->col);
  }
  return sc__where_buf;
}
