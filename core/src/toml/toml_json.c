/*
 * toml-test's tagged JSON encoding of a TOML value tree (used by the toml-decode program
 * and by the conformance suite). Recursion follows the tree, whose depth the parser bounds
 * by SC_TOML_MAX_DEPTH.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toml/toml.h"

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} jbuf;

static void put(jbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap != 0 ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void puts_(jbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_jstring(jbuf *b, const char *s, size_t n) {
  put(b, "\"", 1);
  size_t run = 0;
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)s[k];
    const char *esc = NULL;
    char u[8];
    switch (c) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\b': esc = "\\b"; break;
    case '\f': esc = "\\f"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7F) {
        snprintf(u, sizeof u, "\\u%04x", c);
        esc = u;
      }
    }
    if (esc != NULL) {
      put(b, s + run, k - run);
      puts_(b, esc);
      run = k + 1;
    }
  }
  put(b, s + run, n - run);
  put(b, "\"", 1);
}

static void put_float(jbuf *b, double d) {
  char t[40];
  if (isnan(d)) {
    snprintf(t, sizeof t, "nan");
  } else if (isinf(d)) {
    snprintf(t, sizeof t, "%s", d < 0 ? "-inf" : "inf");
  } else {
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(t, sizeof t, "%.*g", prec, d);
      if (strtod(t, NULL) == d) break;
    }
  }
  puts_(b, t);
}

static void put_datetime(jbuf *b, sc_toml_type type, const sc_toml_datetime *dt) {
  char t[80];
  size_t n = 0;
  if (type != SC_TOML_TIME_LOCAL) {
    n += (size_t)snprintf(t + n, sizeof t - n, "%04d-%02d-%02d", dt->year, dt->month, dt->day);
  }
  if (type == SC_TOML_DATE_LOCAL) {
    put(b, t, n);
    return;
  }
  if (type != SC_TOML_TIME_LOCAL) t[n++] = 'T';
  n += (size_t)snprintf(t + n, sizeof t - n, "%02d:%02d:%02d", dt->hour, dt->minute,
                        dt->second);
  if (dt->frac_digits > 0) {
    char frac[16];
    snprintf(frac, sizeof frac, "%09ld", (long)dt->nanosecond);
    int nd = dt->frac_digits < 9 ? dt->frac_digits : 9;
    n += (size_t)snprintf(t + n, sizeof t - n, ".%.*s", nd, frac);
  }
  if (type == SC_TOML_DATETIME) {
    if (dt->offset_is_z) {
      t[n++] = 'Z';
    } else {
      int off = dt->offset_minutes;
      char sign = off < 0 ? '-' : '+';
      if (off < 0) off = -off;
      n += (size_t)snprintf(t + n, sizeof t - n, "%c%02d:%02d", sign, off / 60, off % 60);
    }
  }
  put(b, t, n);
}

static void put_value(jbuf *b, const sc_toml_value *v) {
  char t[32];
  switch (v->type) {
  case SC_TOML_TABLE:
    put(b, "{", 1);
    for (size_t k = 0; k < v->u.tab.len; k++) {
      if (k > 0) put(b, ",", 1);
      put_jstring(b, v->u.tab.items[k].key, v->u.tab.items[k].key_len);
      put(b, ":", 1);
      put_value(b, v->u.tab.items[k].value);
    }
    put(b, "}", 1);
    return;
  case SC_TOML_ARRAY:
    put(b, "[", 1);
    for (size_t k = 0; k < v->u.arr.len; k++) {
      if (k > 0) put(b, ",", 1);
      put_value(b, v->u.arr.items[k]);
    }
    put(b, "]", 1);
    return;
  default: break;
  }
  puts_(b, "{\"type\":\"");
  puts_(b, sc__toml_type_name(v->type));
  puts_(b, "\",\"value\":");
  switch (v->type) {
  case SC_TOML_STRING: put_jstring(b, v->u.str.ptr, v->u.str.len); break;
  case SC_TOML_INTEGER:
    snprintf(t, sizeof t, "\"%lld\"", (long long)v->u.integer);
    puts_(b, t);
    break;
  case SC_TOML_FLOAT:
    put(b, "\"", 1);
    put_float(b, v->u.flt);
    put(b, "\"", 1);
    break;
  case SC_TOML_BOOL: puts_(b, v->u.boolean ? "\"true\"" : "\"false\""); break;
  default:
    put(b, "\"", 1);
    put_datetime(b, v->type, &v->u.dt);
    put(b, "\"", 1);
    break;
  }
  put(b, "}", 1);
}

int sc__toml_to_json(const sc_toml_value *v, char **out, size_t *len) {
  if (out != NULL) *out = NULL;
  if (v == NULL || out == NULL) return SC_EINVAL;
  jbuf b = {NULL, 0, 0, 0};
  put_value(&b, v);
  if (b.oom) {
    free(b.p);
    return SC_ENOMEM;
  }
  *out = b.p;
  if (len != NULL) *len = b.len;
  return SC_OK;
}
