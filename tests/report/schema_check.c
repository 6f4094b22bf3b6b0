/* schema_check SCHEMA JSON: exit 0 when the JSON document satisfies the schema, else 1 with
 * one line per violation naming its path ("$.inputs.gpus: expected integer, found string").
 * The JSON Schema subset the shipped schemas (docs/schemas/) use: type (a name or an array
 * of names: object, array, string, number, integer, boolean, null), required, properties,
 * additionalProperties (false, or a schema for the other keys), items, enum (strings),
 * minimum; description and $schema, $id, title are read as documentation. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nerr;

static void fail(const char *path, const char *fmt, const char *a, const char *b) {
  printf("%s: ", path);
  printf(fmt, a, b);
  printf("\n");
  nerr++;
}

static const char *type_of(const cJSON *v) {
  if (cJSON_IsObject(v)) return "object";
  if (cJSON_IsArray(v)) return "array";
  if (cJSON_IsString(v)) return "string";
  if (cJSON_IsBool(v)) return "boolean";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsNumber(v)) return v->valuedouble == floor(v->valuedouble) ? "integer" : "number";
  return "?";
}

static int type_ok(const char *want, const cJSON *v) {
  const char *got = type_of(v);
  return strcmp(want, got) == 0 || (strcmp(want, "number") == 0 && strcmp(got, "integer") == 0);
}

static void check(const cJSON *s, const cJSON *v, const char *path) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type"), *x;
  char sub[1024];
  if (t != NULL) {
    int ok = 0;
    if (cJSON_IsString(t)) ok = type_ok(t->valuestring, v);
    if (cJSON_IsArray(t)) {
      cJSON_ArrayForEach(x, t) ok |= cJSON_IsString(x) && type_ok(x->valuestring, v);
    }
    if (!ok) {
      fail(path, "expected %s, found %s", cJSON_IsString(t) ? t->valuestring : "one of the types",
           type_of(v));
      return;
    }
  }
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "enum")) != NULL) {
    int ok = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, x) {
      ok |= cJSON_IsString(e) && cJSON_IsString(v) && strcmp(e->valuestring, v->valuestring) == 0;
    }
    if (!ok)
      fail(path, "%s%s is not one of the enum's values",
           cJSON_IsString(v) ? v->valuestring : "the value", "");
  }
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "minimum")) != NULL && cJSON_IsNumber(v) &&
      v->valuedouble < x->valuedouble)
    fail(path, "below the minimum%s%s", "", "");
  if (cJSON_IsObject(v)) {
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *props =
        cJSON_GetObjectItemCaseSensitive(s, "properties"), *add =
        cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"), *r, *m;
    cJSON_ArrayForEach(r, req) {
      if (cJSON_IsString(r) && cJSON_GetObjectItemCaseSensitive(v, r->valuestring) == NULL)
        fail(path, "missing required key '%s'%s", r->valuestring, "");
    }
    cJSON_ArrayForEach(m, v) {
      const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
      snprintf(sub, sizeof sub, "%s.%s", path, m->string);
      if (ps != NULL) check(ps, m, sub);
      else if (cJSON_IsFalse(add)) fail(sub, "not a key the schema knows%s%s", "", "");
      else if (cJSON_IsObject(add)) check(add, m, sub);
    }
  }
  if (cJSON_IsArray(v) && (x = cJSON_GetObjectItemCaseSensitive(s, "items")) != NULL) {
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, v) {
      snprintf(sub, sizeof sub, "%s[%d]", path, i++);
      check(x, e, sub);
    }
  }
}

static cJSON *load(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  cJSON *j;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
    fprintf(stderr, "schema_check: %s: cannot read\n", path);
    exit(2);
  }
  buf = malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) exit(2);
  buf[n] = '\0';
  fclose(f);
  j = cJSON_Parse(buf);
  free(buf);
  if (j == NULL) {
    fprintf(stderr, "schema_check: %s: not JSON\n", path);
    exit(2);
  }
  return j;
}

int main(int argc, char **argv) {
  cJSON *s, *v;
  if (argc != 3) {
    fprintf(stderr, "usage: schema_check SCHEMA JSON\n");
    return 2;
  }
  s = load(argv[1]);
  v = load(argv[2]);
  check(s, v, "$");
  cJSON_Delete(s);
  cJSON_Delete(v);
  if (nerr == 0) printf("%s: valid against %s\n", argv[2], argv[1]);
  return nerr ? 1 : 0;
}
