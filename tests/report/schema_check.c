/* schema_check SCHEMA JSON: exit 0 when the JSON document satisfies the schema, else 1 with
 * one line per violation naming its path ("$.inputs.gpus: expected integer, found string");
 * 2 when a file cannot be read or parsed, or a schema uses a keyword this program does not
 * implement (so that no constraint is silently skipped).
 * The JSON Schema subset the shipped schemas (docs/schemas/) use: type (a name or an array
 * of names: object, array, string, number, integer, boolean, null), required, properties,
 * additionalProperties (false, or a schema for the other keys), items, enum (strings and
 * null), minimum, maximum, oneOf (exactly one branch matches), $ref ("other.json" beside
 * the schema, "#/$defs/name" in the same file, or "other.json#/$defs/name") and $defs;
 * description and $schema, $id, title are read as documentation. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nerr;
static int quiet; /* > 0: inside a oneOf branch being tried; count, do not print */

static void fail(const char *path, const char *fmt, const char *a, const char *b) {
  nerr++;
  if (quiet) return;
  printf("%s: ", path);
  printf(fmt, a, b);
  printf("\n");
}

/* The schema files read so far (the one named on the command line first), by path. */
#define MAX_DOCS 16
static struct {
  char path[1024];
  cJSON *doc;
} docs[MAX_DOCS];
static int ndocs;
static char dir[1024]; /* the command-line schema's folder, with its '/', or "" */

static void walk_schema(const cJSON *s, const char *file);

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

/* A schema file by path, loaded (and its keywords checked) once. */
static const cJSON *schema_doc(const char *path) {
  for (int i = 0; i < ndocs; i++)
    if (strcmp(docs[i].path, path) == 0) return docs[i].doc;
  if (ndocs == MAX_DOCS || strlen(path) >= sizeof docs[0].path) {
    fprintf(stderr, "schema_check: %s: too many schema files\n", path);
    exit(2);
  }
  snprintf(docs[ndocs].path, sizeof docs[ndocs].path, "%s", path);
  docs[ndocs].doc = load(path);
  walk_schema(docs[ndocs].doc, path);
  return docs[ndocs++].doc;
}

/* What "$ref" names, from a schema in document *root; *root becomes the target's document. */
static const cJSON *resolve(const char *ref, const cJSON **root) {
  const char *hash = strchr(ref, '#');
  size_t flen = hash ? (size_t)(hash - ref) : strlen(ref);
  const cJSON *target;
  if (flen > 0) {
    char path[2048];
    if (memchr(ref, '/', flen) != NULL || flen < 6 || strncmp(ref + flen - 5, ".json", 5) != 0) {
      fprintf(stderr, "schema_check: $ref '%s': a schema file beside this one expected\n", ref);
      exit(2);
    }
    snprintf(path, sizeof path, "%s%.*s", dir, (int)flen, ref);
    *root = schema_doc(path);
  }
  target = *root;
  if (hash != NULL) {
    if (strncmp(hash, "#/$defs/", 8) != 0 ||
        (target = cJSON_GetObjectItemCaseSensitive(
             cJSON_GetObjectItemCaseSensitive(*root, "$defs"), hash + 8)) == NULL) {
      fprintf(stderr, "schema_check: $ref '%s': no such definition\n", ref);
      exit(2);
    }
  }
  return target;
}

/* Every keyword of every schema in a file must be one this program implements. */
static void walk_schema(const cJSON *s, const char *file) {
  static const char *const known[] = {
      "$schema", "$id", "title", "description", "type", "required", "properties",
      "additionalProperties", "items", "enum", "minimum", "maximum", "oneOf", "$ref", "$defs",
      NULL};
  const cJSON *k, *x;
  if (!cJSON_IsObject(s)) {
    fprintf(stderr, "schema_check: %s: a schema is not an object\n", file);
    exit(2);
  }
  cJSON_ArrayForEach(k, s) {
    int i = 0;
    while (known[i] != NULL && strcmp(known[i], k->string) != 0) i++;
    if (known[i] == NULL) {
      fprintf(stderr, "schema_check: %s: keyword '%s' is not implemented\n", file, k->string);
      exit(2);
    }
  }
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(s, "properties")) walk_schema(x, file);
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(s, "$defs")) walk_schema(x, file);
  cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(s, "oneOf")) walk_schema(x, file);
  if (cJSON_IsObject(x = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties")))
    walk_schema(x, file);
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "items")) != NULL) walk_schema(x, file);
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

static void check(const cJSON *s, const cJSON *v, const char *path, const cJSON *root) {
  const cJSON *t, *x;
  char sub[1024];
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "$ref")) != NULL) {
    const cJSON *r = root, *target = resolve(cJSON_IsString(x) ? x->valuestring : "", &r);
    check(target, v, path, r);
  }
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "oneOf")) != NULL) {
    /* exactly one branch; with none, the errors of the branch nearest to matching */
    const cJSON *b, *best = NULL;
    int saved = nerr, matched = 0, fewest = 0;
    quiet++;
    cJSON_ArrayForEach(b, x) {
      nerr = 0;
      check(b, v, path, root);
      matched += nerr == 0;
      if (best == NULL || nerr < fewest) {
        best = b;
        fewest = nerr;
      }
    }
    quiet--;
    nerr = saved;
    if (matched == 0 && best != NULL) check(best, v, path, root);
    if (matched != 1)
      fail(path, "matches %s of the oneOf schemas%s", matched ? "more than one" : "none", "");
  }
  if ((t = cJSON_GetObjectItemCaseSensitive(s, "type")) != NULL) {
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
      ok |= (cJSON_IsString(e) && cJSON_IsString(v) &&
             strcmp(e->valuestring, v->valuestring) == 0) ||
            (cJSON_IsNull(e) && cJSON_IsNull(v));
    }
    if (!ok)
      fail(path, "%s%s is not one of the enum's values",
           cJSON_IsString(v) ? v->valuestring : "the value", "");
  }
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "minimum")) != NULL && cJSON_IsNumber(v) &&
      v->valuedouble < x->valuedouble)
    fail(path, "below the minimum%s%s", "", "");
  if ((x = cJSON_GetObjectItemCaseSensitive(s, "maximum")) != NULL && cJSON_IsNumber(v) &&
      v->valuedouble > x->valuedouble)
    fail(path, "above the maximum%s%s", "", "");
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
      if (ps != NULL) check(ps, m, sub, root);
      else if (cJSON_IsFalse(add)) fail(sub, "not a key the schema knows%s%s", "", "");
      else if (cJSON_IsObject(add)) check(add, m, sub, root);
    }
  }
  if (cJSON_IsArray(v) && (x = cJSON_GetObjectItemCaseSensitive(s, "items")) != NULL) {
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, v) {
      snprintf(sub, sizeof sub, "%s[%d]", path, i++);
      check(x, e, sub, root);
    }
  }
}

int main(int argc, char **argv) {
  const cJSON *s;
  cJSON *v;
  const char *slash;
  if (argc != 3) {
    fprintf(stderr, "usage: schema_check SCHEMA JSON\n");
    return 2;
  }
  slash = strrchr(argv[1], '/');
  if (slash != NULL) {
    if ((size_t)(slash - argv[1]) + 2 > sizeof dir) return 2;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - argv[1] + 1), argv[1]);
  }
  s = schema_doc(argv[1]);
  v = load(argv[2]);
  check(s, v, "$", s);
  cJSON_Delete(v);
  for (int i = 0; i < ndocs; i++) cJSON_Delete(docs[i].doc);
  if (nerr == 0) printf("%s: valid against %s\n", argv[2], argv[1]);
  return nerr ? 1 : 0;
}
