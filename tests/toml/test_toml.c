/*
 * TOML parser suite: toml-test 1.0.0 conformance (every listed case, in-process, compared
 * by value with cJSON) and unit tests of positions, messages, limits and lookups.
 *
 * Data: $SC_TEST_DATA/toml-test (copied from toml-lang/toml-test, see its SOURCE.md),
 * falling back to SC_SOURCE_DIR/tests/data.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "toml/toml.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */

static const char *data_dir(void) {
  static char buf[4096];
  const char *env = getenv("SC_TEST_DATA");
  if (env != NULL && *env != '\0') {
    snprintf(buf, sizeof buf, "%s", env);
  } else {
    snprintf(buf, sizeof buf, "%s/tests/data", SC_SOURCE_DIR);
  }
  return buf;
}

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  buf[n] = '\0';
  if (len != NULL) *len = n;
  return buf;
}

/* Parse a NUL-terminated document; returns the status, *doc set on success. */
static int parse_str(const char *text, const char *name, sc_toml_doc **doc, sc_error *err) {
  memset(err, 0, sizeof *err);
  return sc__toml_parse(text, strlen(text), name, doc, err);
}

/* Expect text to fail with code and a message equal to msg. */
static void expect_error(const char *text, int code, const char *msg) {
  sc_toml_doc *doc = (sc_toml_doc *)0x1;
  sc_error err;
  int rc = parse_str(text, "t.toml", &doc, &err);
  ck_assert_msg(rc == code, "rc %d != %d for <%s> (msg: %s)", rc, code, text, err.msg);
  ck_assert_ptr_null(doc);
  ck_assert_int_eq(err.code, code);
  if (msg != NULL) ck_assert_str_eq(err.msg, msg);
}

static sc_toml_doc *must_parse(const char *text) {
  sc_toml_doc *doc = NULL;
  sc_error err;
  int rc = parse_str(text, "t.toml", &doc, &err);
  ck_assert_msg(rc == SC_OK, "parse failed: %s", err.msg);
  ck_assert_ptr_nonnull(doc);
  return doc;
}

/* ------------------------------------------------------------------------- */
/* Value comparison of tagged JSON                                            */

static int is_tagged(const cJSON *o) {
  if (!cJSON_IsObject(o) || cJSON_GetArraySize(o) != 2) return 0;
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "value");
  return cJSON_IsString(t) && cJSON_IsString(v);
}

static int parse_float(const char *s, double *out) {
  const char *q = s;
  int neg = 0;
  if (*q == '+' || *q == '-') {
    neg = *q == '-';
    q++;
  }
  if (strcmp(q, "inf") == 0) {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return 1;
  }
  if (strcmp(q, "nan") == 0) {
    *out = NAN;
    return 1;
  }
  char *end = NULL;
  *out = strtod(s, &end);
  return end != s && *end == '\0';
}

typedef struct {
  int has_date, has_time, has_off;
  long long y, mo, d, h, mi, s, ns, off_min;
} dtparts;

static int parse_dt(const char *s, dtparts *p) {
  memset(p, 0, sizeof *p);
  const char *q = s;
  int n = 0;
  if (sscanf(q, "%4lld-%2lld-%2lld%n", &p->y, &p->mo, &p->d, &n) == 3 && n == 10) {
    p->has_date = 1;
    q += 10;
    if (*q == '\0') return 1;
    if (*q != 'T' && *q != 't' && *q != ' ') return 0;
    q++;
  }
  if (sscanf(q, "%2lld:%2lld:%2lld%n", &p->h, &p->mi, &p->s, &n) != 3 || n != 8) return 0;
  p->has_time = 1;
  q += 8;
  if (*q == '.') {
    q++;
    int k = 0;
    while (*q >= '0' && *q <= '9') {
      if (k < 9) p->ns = p->ns * 10 + (*q - '0');
      k++;
      q++;
    }
    for (; k < 9; k++) p->ns *= 10;
  }
  if (*q == 'Z' || *q == 'z') {
    p->has_off = 1;
    q++;
  } else if (*q == '+' || *q == '-') {
    long long oh, om;
    if (sscanf(q + 1, "%2lld:%2lld%n", &oh, &om, &n) != 2 || n != 5) return 0;
    p->has_off = 1;
    p->off_min = (*q == '-' ? -1 : 1) * (oh * 60 + om);
    q += 6;
  }
  return *q == '\0';
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static long long days_from_civil(long long y, long long m, long long d) {
  y -= m <= 2;
  long long era = (y >= 0 ? y : y - 399) / 400;
  long long yoe = y - era * 400;
  long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int leaf_equal(const char *type, const char *a, const char *b) {
  if (strcmp(type, "string") == 0 || strcmp(type, "bool") == 0) return strcmp(a, b) == 0;
  if (strcmp(type, "integer") == 0) {
    char *ea, *eb;
    errno = 0;
    long long x = strtoll(a, &ea, 10);
    long long y = strtoll(b, &eb, 10);
    return errno == 0 && *ea == '\0' && *eb == '\0' && x == y;
  }
  if (strcmp(type, "float") == 0) {
    double x, y;
    if (!parse_float(a, &x) || !parse_float(b, &y)) return 0;
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    return x == y && signbit(x) == signbit(y);
  }
  dtparts x, y;
  if (!parse_dt(a, &x) || !parse_dt(b, &y)) return 0;
  if (x.has_date != y.has_date || x.has_time != y.has_time || x.has_off != y.has_off) return 0;
  if (strcmp(type, "datetime") == 0) {
    if (!x.has_off) return 0;
    long long sx = days_from_civil(x.y, x.mo, x.d) * 86400 + x.h * 3600 + x.mi * 60 + x.s -
                   x.off_min * 60;
    long long sy = days_from_civil(y.y, y.mo, y.d) * 86400 + y.h * 3600 + y.mi * 60 + y.s -
                   y.off_min * 60;
    return sx == sy && x.ns == y.ns;
  }
  return x.y == y.y && x.mo == y.mo && x.d == y.d && x.h == y.h && x.mi == y.mi &&
         x.s == y.s && x.ns == y.ns;
}

/* 1 when the tagged JSON trees are equal by value; else writes where into why. */
static int json_equal(const cJSON *exp, const cJSON *got, char *why, size_t whysz) {
  if (is_tagged(exp)) {
    if (!is_tagged(got)) {
      snprintf(why, whysz, "expected a tagged scalar");
      return 0;
    }
    const char *te = cJSON_GetObjectItemCaseSensitive(exp, "type")->valuestring;
    const char *tg = cJSON_GetObjectItemCaseSensitive(got, "type")->valuestring;
    const char *ve = cJSON_GetObjectItemCaseSensitive(exp, "value")->valuestring;
    const char *vg = cJSON_GetObjectItemCaseSensitive(got, "value")->valuestring;
    if (strcmp(te, tg) != 0 || !leaf_equal(te, ve, vg)) {
      snprintf(why, whysz, "expected %s '%s', got %s '%s'", te, ve, tg, vg);
      return 0;
    }
    return 1;
  }
  if (cJSON_IsArray(exp)) {
    if (!cJSON_IsArray(got) || cJSON_GetArraySize(exp) != cJSON_GetArraySize(got)) {
      snprintf(why, whysz, "array length differs");
      return 0;
    }
    const cJSON *g = got->child;
    for (const cJSON *e = exp->child; e != NULL; e = e->next, g = g->next) {
      if (!json_equal(e, g, why, whysz)) return 0;
    }
    return 1;
  }
  if (cJSON_IsObject(exp)) {
    if (!cJSON_IsObject(got) || is_tagged(got) ||
        cJSON_GetArraySize(exp) != cJSON_GetArraySize(got)) {
      snprintf(why, whysz, "table differs in its number of keys");
      return 0;
    }
    for (const cJSON *e = exp->child; e != NULL; e = e->next) {
      const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, e->string);
      if (g == NULL) {
        snprintf(why, whysz, "missing key '%s'", e->string);
        return 0;
      }
      if (!json_equal(e, g, why, whysz)) return 0;
    }
    return 1;
  }
  snprintf(why, whysz, "unexpected JSON node");
  return 0;
}

/* ------------------------------------------------------------------------- */
/* Conformance                                                                */

START_TEST(test_toml_test_1_0_0) {
  char path[4096 + 256]; /* room for data_dir() and a corpus path */
  ck_assert_msg((size_t)snprintf(path, sizeof path, "%s/toml-test/files-toml-1.0.0", data_dir()) < sizeof path, "path too long");
  char *list = read_all(path, NULL);
  ck_assert_msg(list != NULL, "cannot read %s", path);
  int valid = 0, valid_ok = 0, invalid = 0, invalid_ok = 0, shown = 0;
  for (char *line = strtok(list, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    size_t ln = strlen(line);
    if (ln < 5 || strcmp(line + ln - 5, ".toml") != 0) continue;
    int is_valid = strncmp(line, "valid/", 6) == 0;
    ck_assert_msg((size_t)snprintf(path, sizeof path, "%s/toml-test/%s", data_dir(), line) < sizeof path, "path too long");
    size_t len = 0;
    char *text = read_all(path, &len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    sc_toml_doc *doc = NULL;
    sc_error err = {0, ""};
    int rc = sc__toml_parse(text, len, line, &doc, &err);
    free(text);
    if (!is_valid) {
      invalid++;
      if (rc != SC_OK && (rc == SC_EPARSE || rc == SC_ELIMIT) &&
          strncmp(err.msg, line, strlen(line)) == 0) {
        invalid_ok++;
      } else if (shown++ < 40) {
        printf("FAIL invalid %s: %s\n", line, rc == SC_OK ? "accepted" : err.msg);
      }
      sc__toml_free(doc);
      continue;
    }
    valid++;
    if (rc != SC_OK) {
      if (shown++ < 40) printf("FAIL valid %s: %s\n", line, err.msg);
      continue;
    }
    char *json = NULL;
    ck_assert_int_eq(sc__toml_to_json(doc->root, &json, NULL), SC_OK);
    sc__toml_free(doc);
    snprintf(path + strlen(path) - 5, 6, ".json");
    char *exp_text = read_all(path, NULL);
    ck_assert_msg(exp_text != NULL, "cannot read %s", path);
    cJSON *exp = cJSON_Parse(exp_text);
    cJSON *got = cJSON_Parse(json);
    ck_assert_msg(exp != NULL, "bad expected JSON %s", path);
    ck_assert_msg(got != NULL, "decoder wrote invalid JSON for %s: %s", line, json);
    char why[512] = "";
    if (json_equal(exp, got, why, sizeof why)) {
      valid_ok++;
    } else if (shown++ < 40) {
      printf("FAIL valid %s: %s\n", line, why);
    }
    cJSON_Delete(exp);
    cJSON_Delete(got);
    free(exp_text);
    free(json);
  }
  free(list);
  printf("toml-test 1.0.0: valid %d/%d, invalid %d/%d\n", valid_ok, valid, invalid_ok,
         invalid);
  fflush(stdout);
  ck_assert_int_eq(valid, 210);
  ck_assert_int_eq(invalid, 499);
  ck_assert_int_eq(valid_ok, valid);
  ck_assert_int_eq(invalid_ok, invalid);
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Positions and messages                                                     */

START_TEST(test_line_col) {
  sc_toml_doc *doc = must_parse("# header\n"
                                "a = 1\n"
                                "[gpu]\n"
                                "  peak = \"x\"\n"
                                "  t.u = [1,\n"
                                "         2]\n"
                                "[[runs]]\n"
                                "n = 'é'  # é\n"
                                "m = 5\n");
  const sc_toml_value *root = doc->root;
  const sc_toml_kv *a = sc__toml_find(root, "a");
  ck_assert_ptr_nonnull(a);
  ck_assert_uint_eq(a->line, 2);
  ck_assert_uint_eq(a->col, 1);
  ck_assert_uint_eq(a->value->line, 2);
  ck_assert_uint_eq(a->value->col, 5);
  const sc_toml_value *gpu = sc__toml_get(root, "gpu");
  ck_assert_uint_eq(gpu->line, 3);
  ck_assert_uint_eq(gpu->col, 1);
  const sc_toml_kv *peak = sc__toml_find(gpu, "peak");
  ck_assert_uint_eq(peak->line, 4);
  ck_assert_uint_eq(peak->col, 3);
  ck_assert_uint_eq(peak->value->line, 4);
  ck_assert_uint_eq(peak->value->col, 10);
  const sc_toml_kv *t = sc__toml_find(gpu, "t");
  ck_assert_uint_eq(t->line, 5);
  ck_assert_uint_eq(t->col, 3);
  const sc_toml_kv *u = sc__toml_find(t->value, "u");
  ck_assert_uint_eq(u->col, 5);
  ck_assert_uint_eq(u->value->col, 9);
  ck_assert_uint_eq(u->value->u.arr.items[1]->line, 6);
  ck_assert_uint_eq(u->value->u.arr.items[1]->col, 10);
  const sc_toml_value *runs = sc__toml_get(root, "runs");
  ck_assert_int_eq(runs->type, SC_TOML_ARRAY);
  ck_assert_uint_eq(runs->u.arr.items[0]->line, 7);
  /* columns count characters, not bytes: 'é' is 2 bytes, 1 column */
  const sc_toml_kv *m = sc__toml_find(runs->u.arr.items[0], "m");
  ck_assert_uint_eq(m->line, 9);
  ck_assert_uint_eq(m->value->col, 5);
  sc__toml_free(doc);

  /* the column of an error after a multi-byte character */
  expect_error("s = 'é' x\n", SC_EPARSE, "t.toml:1:9: expected end of line after a value, found 'x'");
}
END_TEST

START_TEST(test_messages) {
  sc_toml_doc *doc = NULL;
  sc_error err;
  const char *hw = "[gpu]\nname = \"h100\"\npeak 5\n";
  ck_assert_int_eq(sc__toml_parse(hw, strlen(hw), "hw.toml", &doc, &err), SC_EPARSE);
  ck_assert_str_eq(err.msg, "hw.toml:3:6: expected '=' after key 'peak', found '5'");
  ck_assert_ptr_null(doc);
  ck_assert_int_eq(parse_str("x = 1", NULL, &doc, &err), SC_OK);
  ck_assert_str_eq(doc->filename, "<input>");
  sc__toml_free(doc);
  ck_assert_int_eq(parse_str("x = @", NULL, &doc, &err), SC_EPARSE);
  ck_assert_str_eq(err.msg, "<input>:1:5: expected a value, found '@'");

  expect_error("a = 1\na = 2\n", SC_EPARSE, "t.toml:2:1: duplicate key 'a' (first defined at 1:1)");
  expect_error("[t]\nx = 1\n[t]\n", SC_EPARSE,
               "t.toml:3:1: table [t] is defined more than once (first at 1:1)");
  expect_error("a.b = 1\n[a]\n", SC_EPARSE,
               "t.toml:2:1: table [a] is already defined by dotted keys (at 1:1)");
  expect_error("a = {b = 1}\na.c = 2\n", SC_EPARSE,
               "t.toml:2:1: cannot add keys to inline table 'a' (defined at 1:5)");
  expect_error("a = [1]\n[[a]]\n", SC_EPARSE,
               "t.toml:2:1: cannot append to [[a]]: the key is already an array (at 1:1)");
  expect_error("[a.b]\n[a]\nb.c = 1\n", SC_EPARSE,
               "t.toml:3:1: cannot add keys to table 'b' with a dotted key: it is defined "
               "by a [table] header (at 1:1)");
  expect_error("n = 9223372036854775808\n", SC_EPARSE,
               "t.toml:1:5: integer '9223372036854775808' is out of range for a 64-bit "
               "signed integer");
  expect_error("n = 0x8000000000000000\n", SC_EPARSE,
               "t.toml:1:5: integer '0x8000000000000000' is out of range for a 64-bit "
               "signed integer");
  expect_error("n = 01\n", SC_EPARSE,
               "t.toml:1:5: invalid number '01': leading zeros are not allowed");
  expect_error("f = 1e400\n", SC_EPARSE,
               "t.toml:1:5: float '1e400' is out of range for a 64-bit float");
  expect_error("d = 2023-02-29\n", SC_EPARSE,
               "t.toml:1:5: invalid date: day 29 does not exist in 2023-02");
  expect_error("s = \"a\\qb\"\n", SC_EPARSE,
               "t.toml:1:7: invalid escape sequence '\\' + 'q'");
  expect_error("s = \"\\uD800\"\n", SC_EPARSE,
               "t.toml:1:6: invalid escape: U+D800 is not a Unicode scalar value");
  expect_error("t = {a = 1,}\n", SC_EPARSE,
               "t.toml:1:12: trailing comma in an inline table is not allowed in TOML 1.0.0");
  expect_error("a = 1\n\nb = \"x\x01\"\n", SC_EPARSE,
               "t.toml:3:7: control character U+0001 is not allowed in TOML");
  expect_error("a = \"\xC3\x28\"\n", SC_EPARSE,
               "t.toml:1:6: invalid UTF-8 sequence (byte 0x28 after 0xC3)");
}
END_TEST

/* ------------------------------------------------------------------------- */
/* Values                                                                     */

START_TEST(test_scalars) {
  sc_toml_doc *doc = must_parse("i1 = -9223372036854775808\n"
                                "i2 = 9_223_372_036_854_775_807\n"
                                "i3 = 0xDEAD_beef\n"
                                "i4 = 0o755\n"
                                "i5 = 0b1101\n"
                                "i6 = +0\n"
                                "f1 = 6.626e-34\n"
                                "f2 = -0.0\n"
                                "f3 = -inf\n"
                                "f4 = nan\n"
                                "f5 = 1_000.5E+0_2\n"
                                "b = true\n"
                                "dt = 1979-05-27 07:32:00.999999999987-07:30\n"
                                "dl = 1979-05-27T00:32:00\n"
                                "d = 2000-02-29\n"
                                "t = 23:59:60.5\n");
  const sc_toml_value *r = doc->root;
  ck_assert_int_eq(sc__toml_get(r, "i1")->u.integer, INT64_MIN);
  ck_assert_int_eq(sc__toml_get(r, "i2")->u.integer, INT64_MAX);
  ck_assert_int_eq(sc__toml_get(r, "i3")->u.integer, 0xDEADBEEF);
  ck_assert_int_eq(sc__toml_get(r, "i4")->u.integer, 0755);
  ck_assert_int_eq(sc__toml_get(r, "i5")->u.integer, 13);
  ck_assert_int_eq(sc__toml_get(r, "i6")->u.integer, 0);
  ck_assert_double_eq_tol(sc__toml_get(r, "f1")->u.flt, 6.626e-34, 1e-48);
  ck_assert(signbit(sc__toml_get(r, "f2")->u.flt));
  ck_assert(isinf(sc__toml_get(r, "f3")->u.flt) && sc__toml_get(r, "f3")->u.flt < 0);
  ck_assert(isnan(sc__toml_get(r, "f4")->u.flt));
  ck_assert_double_eq(sc__toml_get(r, "f5")->u.flt, 100050.0);
  ck_assert_int_eq(sc__toml_get(r, "b")->u.boolean, 1);
  const sc_toml_value *dt = sc__toml_get(r, "dt");
  ck_assert_int_eq(dt->type, SC_TOML_DATETIME);
  ck_assert_int_eq(dt->u.dt.year, 1979);
  ck_assert_int_eq(dt->u.dt.hour, 7);
  ck_assert_int_eq(dt->u.dt.nanosecond, 999999999);
  ck_assert_int_eq(dt->u.dt.frac_digits, 12);
  ck_assert_int_eq(dt->u.dt.offset_minutes, -450);
  ck_assert_int_eq(sc__toml_get(r, "dl")->type, SC_TOML_DATETIME_LOCAL);
  ck_assert_int_eq(sc__toml_get(r, "d")->type, SC_TOML_DATE_LOCAL);
  ck_assert_int_eq(sc__toml_get(r, "d")->u.dt.day, 29);
  const sc_toml_value *t = sc__toml_get(r, "t");
  ck_assert_int_eq(t->type, SC_TOML_TIME_LOCAL);
  ck_assert_int_eq(t->u.dt.second, 60);
  ck_assert_int_eq(t->u.dt.nanosecond, 500000000);
  ck_assert_int_eq(t->u.dt.frac_digits, 1);

  char *json = NULL;
  ck_assert_int_eq(sc__toml_to_json(r, &json, NULL), SC_OK);
  ck_assert_ptr_nonnull(strstr(json, "\"f3\":{\"type\":\"float\",\"value\":\"-inf\"}"));
  ck_assert_ptr_nonnull(strstr(json, "\"f4\":{\"type\":\"float\",\"value\":\"nan\"}"));
  ck_assert_ptr_nonnull(strstr(json, "\"f2\":{\"type\":\"float\",\"value\":\"-0\"}"));
  ck_assert_ptr_nonnull(
      strstr(json, "{\"type\":\"datetime\",\"value\":\"1979-05-27T07:32:00.999999999-07:30\"}"));
  ck_assert_ptr_nonnull(strstr(json, "\"value\":\"23:59:60.5\""));
  free(json);
  sc__toml_free(doc);

  /* float printing round-trips with the fewest digits */
  doc = must_parse("a = 0.1\nb = 1e300\nc = 5e-324\n");
  ck_assert_int_eq(sc__toml_to_json(doc->root, &json, NULL), SC_OK);
  ck_assert_str_eq(json, "{\"a\":{\"type\":\"float\",\"value\":\"0.1\"},"
                         "\"b\":{\"type\":\"float\",\"value\":\"1e+300\"},"
                         "\"c\":{\"type\":\"float\",\"value\":\"5e-324\"}}");
  free(json);
  sc__toml_free(doc);
}
END_TEST

START_TEST(test_embedded_nul) {
  sc_toml_doc *doc = must_parse("s = \"a\\u0000b\"\n\"k\\u0000\" = 1\n");
  const sc_toml_value *s = sc__toml_get(doc->root, "s");
  ck_assert_int_eq(s->type, SC_TOML_STRING);
  ck_assert_uint_eq(s->u.str.len, 3);
  ck_assert_int_eq(memcmp(s->u.str.ptr, "a\0b", 4), 0);
  const sc_toml_kv *k = &doc->root->u.tab.items[1];
  ck_assert_uint_eq(k->key_len, 2);
  ck_assert_int_eq(memcmp(k->key, "k\0", 3), 0);
  char *json = NULL;
  ck_assert_int_eq(sc__toml_to_json(doc->root, &json, NULL), SC_OK);
  ck_assert_str_eq(json, "{\"s\":{\"type\":\"string\",\"value\":\"a\\u0000b\"},"
                         "\"k\\u0000\":{\"type\":\"integer\",\"value\":\"1\"}}");
  free(json);
  sc__toml_free(doc);
  /* a raw NUL byte is a control character, not allowed even inside a string */
  sc_error err;
  const char raw[] = "s = \"a\0b\"\n";
  ck_assert_int_eq(sc__toml_parse(raw, sizeof raw - 1, "n.toml", &doc, &err), SC_EPARSE);
  ck_assert_str_eq(err.msg, "n.toml:1:7: control character U+0000 is not allowed in TOML");
}
END_TEST

START_TEST(test_crlf) {
  sc_toml_doc *doc = must_parse("a = 1\r\n"
                                "s = \"\"\"\r\nx\r\ny \\\r\n   z\"\"\"\r\n"
                                "l = '''\r\np\r\nq'''\r\n"
                                "b = 2 # c\r\n");
  const sc_toml_value *s = sc__toml_get(doc->root, "s");
  ck_assert_str_eq(s->u.str.ptr, "x\ny z");
  ck_assert_str_eq(sc__toml_get(doc->root, "l")->u.str.ptr, "p\nq");
  const sc_toml_kv *b = sc__toml_find(doc->root, "b");
  ck_assert_uint_eq(b->line, 9);
  ck_assert_uint_eq(b->value->col, 5);
  sc__toml_free(doc);
  expect_error("a = 1\r\nb = 2\rc = 3\r\n", SC_EPARSE,
               "t.toml:2:6: carriage return (U+000D) not followed by a line feed");
  expect_error("a = 1\r\nb = \r\n", SC_EPARSE, "t.toml:2:5: expected a value, found end of line");
}
END_TEST

START_TEST(test_truncated) {
  const char *full = "title = \"x\" # c\n"
                     "[owner]\n"
                     "name = 'Tom'\n"
                     "dob = 1979-05-27T07:32:00-08:00\n"
                     "[[db.ports]]\n"
                     "p = [ 8000, 8001, { a = 1.5e3, b = \"\"\"m\nl\"\"\" } ]\n"
                     "q = '''z'''\n"
                     "r = { c.d = true }\n";
  size_t n = strlen(full);
  sc_toml_doc *doc = must_parse(full);
  sc__toml_free(doc);
  int failures = 0;
  for (size_t k = 0; k < n; k++) {
    sc_error err = {0, ""};
    doc = NULL;
    int rc = sc__toml_parse(full, k, "cut.toml", &doc, &err);
    if (rc != SC_OK) {
      failures++;
      ck_assert_int_eq(rc, SC_EPARSE);
      ck_assert_msg(strncmp(err.msg, "cut.toml:", 9) == 0, "bad message %s", err.msg);
    }
    sc__toml_free(doc);
  }
  ck_assert_int_gt(failures, (int)n / 2);
  expect_error("a = \"abc", SC_EPARSE, "t.toml:1:5: unterminated string (no closing '\"')");
  expect_error("a = [1, 2", SC_EPARSE,
               "t.toml:1:10: expected ',' or ']' after an array element, found end of input");
  expect_error("[tab", SC_EPARSE,
               "t.toml:1:5: expected ']' to close the header of table 'tab', found end of input");
  expect_error("a = '''x\n", SC_EPARSE,
               "t.toml:1:5: unterminated literal string (no closing ''')");
  expect_error("a = { b = 1", SC_EPARSE,
               "t.toml:1:12: expected ',' or '}' in an inline table, found end of input");
  expect_error("a =", SC_EPARSE, "t.toml:1:4: expected a value, found end of input");
  expect_error("a = 1979-05-2", SC_EPARSE, "t.toml:1:5: invalid date: expected YYYY-MM-DD");
}
END_TEST

START_TEST(test_depth_limit) {
  char buf[8192];
  sc_toml_doc *doc = NULL;
  sc_error err;
  /* arrays: the innermost of k nested arrays sits at depth k (the root table is depth 0) */
  for (int k = SC_TOML_MAX_DEPTH; k <= SC_TOML_MAX_DEPTH + 1; k++) {
    size_t n = (size_t)snprintf(buf, sizeof buf, "a = ");
    for (int j = 0; j < k; j++) buf[n++] = '[';
    for (int j = 0; j < k; j++) buf[n++] = ']';
    buf[n] = '\0';
    int rc = parse_str(buf, "deep.toml", &doc, &err);
    if (k == SC_TOML_MAX_DEPTH) {
      ck_assert_msg(rc == SC_OK, "%s", err.msg);
      sc__toml_free(doc);
    } else {
      ck_assert_int_eq(rc, SC_ELIMIT);
      ck_assert_str_eq(err.msg, "deep.toml:1:133: tables and arrays nest deeper than 128 levels");
    }
  }
  /* inline tables */
  size_t n = (size_t)snprintf(buf, sizeof buf, "a = ");
  for (int j = 0; j < SC_TOML_MAX_DEPTH + 1; j++) n += (size_t)snprintf(buf + n, 8, "{b=");
  buf[n++] = '1';
  for (int j = 0; j < SC_TOML_MAX_DEPTH + 1; j++) buf[n++] = '}';
  buf[n] = '\0';
  ck_assert_int_eq(parse_str(buf, "deep.toml", &doc, &err), SC_ELIMIT);
  /* headers and dotted keys */
  for (int kind = 0; kind < 3; kind++) {
    n = (size_t)snprintf(buf, sizeof buf, "%s", kind == 0 ? "[" : kind == 1 ? "[[" : "");
    /* 129 tables; a dotted key needs one more segment for its (scalar) value */
    for (int j = 0; j < SC_TOML_MAX_DEPTH + 1 + (kind == 2); j++) {
      n += (size_t)snprintf(buf + n, 8, j > 0 ? ".k" : "k");
    }
    snprintf(buf + n, 8, "%s", kind == 0 ? "]\n" : kind == 1 ? "]]\n" : " = 1\n");
    ck_assert_int_eq(parse_str(buf, "deep.toml", &doc, &err), SC_ELIMIT);
    ck_assert_ptr_null(doc);
  }
  /* 128 levels of tables are fine */
  n = (size_t)snprintf(buf, sizeof buf, "[k");
  for (int j = 1; j < SC_TOML_MAX_DEPTH; j++) n += (size_t)snprintf(buf + n, 8, ".k");
  snprintf(buf + n, 8, "]\nx=1\n");
  ck_assert_int_eq(parse_str(buf, "deep.toml", &doc, &err), SC_OK);
  sc__toml_free(doc);
}
END_TEST

static void check_files(const sc_toml_value *v, const char *file, int *tables) {
  if (v->type == SC_TOML_TABLE) {
    ck_assert_ptr_eq(v->u.tab.file, file);
    (*tables)++;
    for (size_t k = 0; k < v->u.tab.len; k++) check_files(v->u.tab.items[k].value, file, tables);
  } else if (v->type == SC_TOML_ARRAY) {
    for (size_t k = 0; k < v->u.arr.len; k++) check_files(v->u.arr.items[k], file, tables);
  }
}

START_TEST(test_lookup_and_files) {
  char path[4096 + 256];
  ck_assert_msg((size_t)snprintf(path, sizeof path, "%s/toml-test/valid/spec-1.0.0/table-7.toml", data_dir()) < sizeof path, "path too long");
  sc_toml_doc *doc = NULL;
  sc_error err;
  int rc = sc__toml_parse_file(path, &doc, &err);
  ck_assert_msg(rc == SC_OK, "%s", err.msg);
  ck_assert_str_eq(doc->filename, path);
  int tables = 0;
  check_files(doc->root, doc->filename, &tables);
  ck_assert_int_ge(tables, 1);
  sc__toml_free(doc);

  doc = must_parse("[gpu.peak]\nbf16 = 989e12\n\"a.b\" = 1\n[[x]]\ny = 2\n"
                   "i = {p = {q = 3}}\n");
  tables = 0;
  check_files(doc->root, doc->filename, &tables);
  ck_assert_int_eq(tables, 6); /* root, gpu, peak, x[0], i, p */
  const sc_toml_value *r = doc->root;
  ck_assert_double_eq(sc__toml_get_path(r, "gpu.peak.bf16")->u.flt, 989e12);
  ck_assert_ptr_eq(sc__toml_get_path(r, "gpu.peak"), sc__toml_get(sc__toml_get(r, "gpu"), "peak"));
  ck_assert_ptr_null(sc__toml_get_path(r, "x.i")); /* no path through arrays */
  ck_assert_int_eq(sc__toml_get_path(sc__toml_get(r, "x")->u.arr.items[0], "i.p.q")->u.integer,
                   3);
  ck_assert_ptr_null(sc__toml_get_path(r, "gpu.peak.fp8"));
  ck_assert_ptr_null(sc__toml_get_path(r, "gpu.peak.bf16.z")); /* through a non-table */
  ck_assert_ptr_null(sc__toml_get_path(r, "gpu..peak"));
  ck_assert_ptr_null(sc__toml_get_path(r, "gpu."));
  ck_assert_ptr_null(sc__toml_get_path(r, ""));
  ck_assert_ptr_null(sc__toml_get_path(r, NULL));
  ck_assert_ptr_null(sc__toml_get_path(NULL, "gpu"));
  ck_assert_ptr_null(sc__toml_get_path(r, "gpu.peak.a.b")); /* dotted key unreachable */
  ck_assert_int_eq(sc__toml_get(sc__toml_get_path(r, "gpu.peak"), "a.b")->u.integer, 1);
  ck_assert_ptr_null(sc__toml_get(sc__toml_get_path(r, "x"), "y")); /* x is an array */
  ck_assert_ptr_null(sc__toml_find(r, NULL));
  ck_assert_str_eq(sc__toml_type_name(SC_TOML_DATETIME_LOCAL), "datetime-local");
  ck_assert_str_eq(sc__toml_type_name(SC_TOML_BOOL), "bool");
  ck_assert_str_eq(sc__toml_type_name(SC_TOML_TIME_LOCAL), "time-local");
  sc__toml_free(doc);
  sc__toml_free(NULL);
}
END_TEST

START_TEST(test_unreadable) {
  sc_toml_doc *doc = (sc_toml_doc *)0x1;
  sc_error err;
  ck_assert_int_eq(sc__toml_parse_file("/nonexistent/dir/x.toml", &doc, &err), SC_EIO);
  ck_assert_ptr_null(doc);
  ck_assert_str_eq(err.msg, "/nonexistent/dir/x.toml: No such file or directory");
  /* a directory opens but cannot be read */
  ck_assert_int_eq(sc__toml_parse_file(data_dir(), &doc, &err), SC_EIO);
  ck_assert_ptr_null(doc);
  ck_assert_ptr_nonnull(strstr(err.msg, "Is a directory"));
  ck_assert_int_eq(sc__toml_parse_file(NULL, &doc, &err), SC_EINVAL);
  ck_assert_int_eq(sc__toml_parse("a", 1, "x", NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc__toml_parse(NULL, 3, "x", &doc, &err), SC_EINVAL);
  ck_assert_int_eq(sc__toml_parse(NULL, 0, "x", &doc, &err), SC_OK);
  ck_assert_uint_eq(doc->root->u.tab.len, 0);
  sc__toml_free(doc);
}
END_TEST

START_TEST(test_many_keys) {
  /* the hash index of large tables: 5000 keys, then a duplicate of an early one */
  size_t cap = 5000 * 24 + 64, n = 0;
  char *buf = malloc(cap);
  for (int k = 0; k < 5000; k++) n += (size_t)snprintf(buf + n, cap - n, "key%d = %d\n", k, k);
  sc_toml_doc *doc = must_parse(buf);
  ck_assert_uint_eq(doc->root->u.tab.len, 5000);
  ck_assert_int_eq(sc__toml_get(doc->root, "key4321")->u.integer, 4321);
  sc__toml_free(doc);
  snprintf(buf + n, cap - n, "key17 = 0\n");
  expect_error(buf, SC_EPARSE, "t.toml:5001:1: duplicate key 'key17' (first defined at 18:1)");
  free(buf);
}
END_TEST

/* One 2 MB line with 300000 values and a 1000000-character string: positions are computed
 * incrementally (a first version recounted the line for every value: minutes here). */
START_TEST(test_long_line) {
  size_t n = 300000, cap = 2 * n + 3000064, len = 0;
  char *buf = malloc(cap);
  len += (size_t)snprintf(buf, cap, "a = [");
  for (size_t k = 0; k < n; k++) {
    buf[len++] = '1';
    buf[len++] = k + 1 < n ? ',' : ']';
  }
  len += (size_t)snprintf(buf + len, cap - len, "\ns = \"");
  for (size_t k = 0; k < 1000000; k++) {
    buf[len++] = '\xC3';
    buf[len++] = '\xA9';
  }
  len += (size_t)snprintf(buf + len, cap - len, "\" x\n");
  sc_toml_doc *doc = NULL;
  sc_error err;
  ck_assert_int_eq(sc__toml_parse(buf, len, "long.toml", &doc, &err), SC_EPARSE);
  ck_assert_str_eq(err.msg, "long.toml:2:1000008: expected end of line after a value, found 'x'");
  buf[len - 2] = '#'; /* the 'x' becomes a comment */
  doc = must_parse(buf);
  const sc_toml_value *a = sc__toml_get(doc->root, "a");
  ck_assert_uint_eq(a->u.arr.len, n);
  ck_assert_uint_eq(a->u.arr.items[n - 1]->col, (uint32_t)(6 + 2 * (n - 1)));
  ck_assert_uint_eq(sc__toml_get(doc->root, "s")->u.str.len, 2000000);
  sc__toml_free(doc);
  free(buf);
}
END_TEST

/* Inputs the fuzzer or review found interesting: each must fail cleanly (or parse). */
START_TEST(test_regressions) {
  expect_error("a = \"\"\"\"\"\"\"\"\"", SC_EPARSE, NULL); /* 9 quotes */
  expect_error("a = '''''''''\n", SC_EPARSE, NULL);
  expect_error("a = \"\\", SC_EPARSE, NULL);                 /* escape at end of input */
  expect_error("a = \"\"\"\\ ", SC_EPARSE, NULL);            /* line-ending '\' at end */
  expect_error("a = \"\\u12\"", SC_EPARSE, NULL);
  expect_error("[[a]]\n[a]\n", SC_EPARSE, NULL);
  expect_error("a = [{}]\n[a.b]\n", SC_EPARSE, NULL);
  expect_error("\xEF\xBB\xBF\xEF\xBB\xBF a = 1", SC_EPARSE, NULL);
  expect_error("a = 1\xF4\x90\x80\x80", SC_EPARSE, NULL);    /* above U+10FFFF */
  expect_error("a = 1_", SC_EPARSE, NULL);
  expect_error("a = 0x_1", SC_EPARSE, NULL);
  expect_error("a = 1979-05-27T", SC_EPARSE, NULL);
  expect_error("a = 1979-05-27T07:32:00.", SC_EPARSE, NULL);
  expect_error("a = 1979-05-27T07:32:00+05", SC_EPARSE, NULL);
  expect_error("\"\"\"a\"\"\" = 1", SC_EPARSE, NULL);
  sc_toml_doc *doc = must_parse("\xEF\xBB\xBF" "a = 1\n\"\" = 2\n'b' .x= 3\n");
  ck_assert_int_eq(sc__toml_get(doc->root, "a")->u.integer, 1);
  ck_assert_int_eq(sc__toml_get(doc->root, "")->u.integer, 2);
  sc__toml_free(doc);
  doc = must_parse("a = \"\"\"\"\"\"\"\"\nb = '''a'''''\n");
  ck_assert_str_eq(sc__toml_get(doc->root, "a")->u.str.ptr, "\"\"");
  ck_assert_str_eq(sc__toml_get(doc->root, "b")->u.str.ptr, "a''");
  sc__toml_free(doc);
}
END_TEST

static Suite *toml_suite(void) {
  Suite *s = suite_create("toml");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_toml_test_1_0_0);
  tcase_add_test(tc, test_line_col);
  tcase_add_test(tc, test_messages);
  tcase_add_test(tc, test_scalars);
  tcase_add_test(tc, test_embedded_nul);
  tcase_add_test(tc, test_crlf);
  tcase_add_test(tc, test_truncated);
  tcase_add_test(tc, test_depth_limit);
  tcase_add_test(tc, test_lookup_and_files);
  tcase_add_test(tc, test_unreadable);
  tcase_add_test(tc, test_many_keys);
  tcase_add_test(tc, test_long_line);
  tcase_add_test(tc, test_regressions);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(toml_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
