/* Mutated inputs: the files stepcast ships (models/, hardware/, topologies/, stacks/, the fitted
 * residuals, the host CPU's samples, the published collective results), each value replaced
 * by hostile ones, lines deleted and duplicated, the file cut short. Whatever a loader makes
 * of a mutant it must return SC_OK or one error line that names the file (and, for TOML, the
 * line), never crash or leak (ASan/UBSan in CI), and never take a NaN or an infinity where
 * the file had a number: "bad input never crashes and never silently yields a number". */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xgboost/c_api.h>

#include "comm/comm_int.h"
#include "sc_config.h"
#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"

typedef struct sc__builtin {
  const char *origin;
  sc_plugin_entry_fn entry;
} sc__builtin;
extern const sc__builtin sc__builtin_plugins[];

/* ---- loaders: path of the mutant -> SC_OK or an error ----------------------------------- */

static sc_registry *g_reg;

static int load_model(const char *path, sc_error *err) {
  sc_model m;
  return sc_model_load(path, &m, err);
}

static int load_topology(const char *path, sc_error *err) {
  sc_topology t;
  return sc_topology_load(path, &t, err);
}

static int load_stack(const char *path, sc_error *err) {
  sc_stack st;
  return sc_stack_load(path, &st, err);
}

static int load_hardware(const char *path, sc_error *err) {
  sc_device d;
  return sc_hardware_load(g_reg, path, &d, err);
}

/* residuals.toml at path, loaded; with topology, checked as comm --estimator checks it. */
static int load_residuals_at(const char *path, const char *topology, sc_error *err) {
  char dir[SC_PATH_MAX];
  const char *slash = strrchr(path, '/');
  sc_residuals *r = NULL;
  int rc;
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  rc = sc_residuals_load(dir, &r, err);
  if (rc == SC_OK && topology != NULL) rc = sc_residuals_check_coll(r, topology, err);
  sc_residuals_free(r);
  return rc;
}

static int load_residuals(const char *path, sc_error *err) {
  return load_residuals_at(path, NULL, err);
}

/* Collective residuals (the Dell fixture's topology). */
static int load_coll_residuals(const char *path, sc_error *err) {
  return load_residuals_at(path, "dgx-h100-superpod", err);
}

static int load_nccl_log(const char *path, sc_error *err) {
  sc_nccl_log lg;
  int rc = sc_comm_read_nccl_log(path, &lg, err);
  if (rc == SC_OK) sc_comm_nccl_log_free(&lg);
  return rc;
}

static int load_samples(const char *path, sc_error *err) {
  sc_sample_set s;
  int rc = sc_samples_read(path, &s, err);
  if (rc == SC_OK) sc_samples_free(&s);
  return rc;
}

static int load_comm_validation(const char *path, sc_error *err) {
  sc_comm_vrow *rows = NULL;
  size_t n = 0;
  int rc = sc_comm_read_validation(path, &rows, &n, err);
  free(rows);
  return rc;
}

/* ---- files ---------------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert(fseek(f, 0, SEEK_END) == 0);
  n = ftell(f);
  ck_assert(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
  buf = malloc((size_t)n + 1);
  ck_assert(buf != NULL);
  ck_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void spit(const char *path, const char *a, size_t na, const char *b, size_t nb,
                 const char *c, size_t nc) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert(fwrite(a, 1, na, f) == na && fwrite(b, 1, nb, f) == nb && fwrite(c, 1, nc, f) == nc);
  ck_assert(fclose(f) == 0);
}

/* A fresh temporary folder. */
static void tmpdir(char *out, size_t cap) {
  snprintf(out, cap, "/tmp/sc-mutate-XXXXXX");
  ck_assert(mkdtemp(out) != NULL);
}

/* ---- one run of a mutant ---------------------------------------------------------------- */

typedef struct run_ctx {
  int (*load)(const char *path, sc_error *err);
  const char *orig;    /* the shipped file, for messages */
  const char *mutant;  /* where mutants are written */
  int toml;            /* errors must give a line */
  size_t runs, refused;
} run_ctx;

/* Load text = a + b + c written to ctx->mutant; nonfinite: the mutant puts a NaN or an
 * infinity where the file had a number, which must be refused. */
static void try_mutant(run_ctx *x, const char *a, size_t na, const char *b, size_t nb,
                       const char *c, size_t nc, int nonfinite, const char *what) {
  sc_error err;
  const char *base = strrchr(x->mutant, '/');
  int rc;
  spit(x->mutant, a, na, b, nb, c, nc);
  sc_error_clear(&err);
  rc = x->load(x->mutant, &err);
  x->runs++;
  if (rc == SC_OK) {
    ck_assert_msg(!nonfinite, "%s, %s: a non-finite value was accepted", x->orig, what);
    return;
  }
  x->refused++;
  ck_assert_msg(err.msg[0] != '\0', "%s, %s: error %d without a message", x->orig, what, rc);
  ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s, %s: a multi-line error: %s", x->orig,
                what, err.msg);
  ck_assert_msg(strstr(err.msg, base + 1) != NULL, "%s, %s: the error does not name the file: "
                "%s", x->orig, what, err.msg);
  if (x->toml) {
    char pat[SC_PATH_MAX + 8];
    const char *p;
    snprintf(pat, sizeof pat, "%s:", base + 1);
    p = strstr(err.msg, pat);
    ck_assert_msg(p != NULL && p[strlen(pat)] >= '0' && p[strlen(pat)] <= '9',
                  "%s, %s: the error gives no line: %s", x->orig, what, err.msg);
  }
}

/* ---- mutations -------------------------------------------------------------------------- */

/* The file text[0..n) cut at parts evenly spaced places (the first leaves nothing). */
static void cut_short(run_ctx *x, const char *text, size_t n, int parts) {
  for (int k = 0; k < parts; k++) {
    size_t cut = n * (size_t)k / (size_t)parts;
    char what[64];
    snprintf(what, sizeof what, "cut at byte %zu", cut);
    try_mutant(x, text, cut, "", 0, "", 0, 0, what);
  }
}

static const char *const hostile[] = {
    "0", "-1", "0.5", "nan", "inf", "-inf", "1e308", "-1e308", "1e-320", "9223372036854775807",
    "-9223372036854775808", "99999999999999999999", "\"x\"", "\"\"", "true", "[]", "[nan]",
    "{}", "1979-05-27", "0x10"};
#define NHOSTILE (sizeof hostile / sizeof hostile[0])

static int is_nonfinite(const char *v) {
  return strcmp(v, "nan") == 0 || strcmp(v, "inf") == 0 || strcmp(v, "-inf") == 0 ||
         strcmp(v, "[nan]") == 0;
}

/* Does the TOML value text v (up to a comment) start like a number or an array of them? */
static int numeric_value(const char *v, size_t n) {
  while (n > 0 && (*v == ' ' || *v == '[')) v++, n--;
  return n > 0 && ((*v >= '0' && *v <= '9') || *v == '-' || *v == '+' || *v == '.');
}

/* TOML files: every 'key = value' line's value replaced by each hostile value (the comment
 * dropped), deleted, doubled; then the file cut at 24 places. max_lines caps the lines
 * mutated (0: all). */
static void mutate_toml(run_ctx *x, int max_lines) {
  size_t n, start = 0;
  char *text = slurp(x->orig, &n);
  int lines = 0;
  while (start < n && (max_lines == 0 || lines < max_lines)) {
    const char *l = text + start, *nl = memchr(l, '\n', n - start);
    size_t len = nl ? (size_t)(nl - l) : n - start, end = start + len + (nl != NULL);
    const char *eq = memchr(l, '=', len), *s = l;
    while (s < l + len && (*s == ' ' || *s == '\t')) s++;
    if (eq != NULL && s < eq && *s != '#' && *s != '[' && *s != '"') {
      const char *v = eq + 1;
      const char *hash = memchr(v, '#', (size_t)(l + len - v));
      size_t vlen = (size_t)((hash ? hash : l + len) - v);
      int numeric = numeric_value(v, vlen);
      char what[160];
      lines++;
      for (size_t h = 0; h < NHOSTILE; h++) {
        char line[256];
        int w = snprintf(line, sizeof line, "%.*s= %s\n", (int)(eq - l), l, hostile[h]);
        ck_assert(w > 0 && (size_t)w < sizeof line);
        snprintf(what, sizeof what, "line %d value %s", lines, hostile[h]);
        try_mutant(x, text, start, line, (size_t)w, text + end, n - end,
                   numeric && is_nonfinite(hostile[h]), what);
      }
      snprintf(what, sizeof what, "line %d deleted", lines);
      try_mutant(x, text, start, "", 0, text + end, n - end, 0, what);
      snprintf(what, sizeof what, "line %d doubled", lines);
      try_mutant(x, text, end, l, end - start, text + end, n - end, 0, what);
    }
    start = end;
  }
  cut_short(x, text, n, 24);
  free(text);
}

/* CSV files: in the first rows data lines (after comments and the header), each field
 * replaced by each hostile value, a field dropped, one added; the file cut at 24 places. */
static void mutate_csv(run_ctx *x, int rows) {
  static const char *const fields[] = {"0", "-1", "nan", "inf", "-inf", "1e308", "1e-320",
                                       "", "x", "99999999999999999999", "4294967296", "\"",
                                       "\"a,b\"", "-0"};
  size_t n, start = 0;
  char *text = slurp(x->orig, &n);
  int data = 0, header = 0;
  while (start < n && data < rows) {
    const char *l = text + start, *nl = memchr(l, '\n', n - start);
    size_t len = nl ? (size_t)(nl - l) : n - start, end = start + len + (nl != NULL);
    if (len > 0 && l[0] != '#' && header++ > 0) {
      size_t f0 = 0;
      int field = 0;
      data++;
      while (f0 <= len) { /* each field [f0, f1) of the line */
        const char *comma = memchr(l + f0, ',', len - f0);
        size_t f1 = comma ? (size_t)(comma - l) : len;
        for (size_t h = 0; h < sizeof fields / sizeof fields[0]; h++) {
          char *line = malloc(len + 64);
          char what[96];
          int w;
          ck_assert(line != NULL);
          w = snprintf(line, len + 64, "%.*s%s%.*s\n", (int)f0, l, fields[h], (int)(len - f1),
                       l + f1);
          snprintf(what, sizeof what, "row %d field %d = '%s'", data, field, fields[h]);
          try_mutant(x, text, start, line, (size_t)w, text + end, n - end, 0, what);
          free(line);
        }
        if (comma == NULL) break;
        f0 = f1 + 1;
        field++;
      }
      {
        char what[64];
        snprintf(what, sizeof what, "row %d, a field more", data);
        try_mutant(x, text, start + len, ",1\n", 3, text + end, n - end, 0, what);
        snprintf(what, sizeof what, "row %d, the last field dropped", data);
        const char *last = l + len;
        while (last > l && last[-1] != ',') last--;
        if (last > l)
          try_mutant(x, text, (size_t)(last - 1 - text), "\n", 1, text + end, n - end, 0, what);
      }
    }
    start = end;
  }
  cut_short(x, text, n, 24);
  free(text);
}

/* Every *.toml directly in the source tree's folder sub, mutated by mutate_toml. */
/* Every mutant of the TOML file at path (a copy in the folder tmp), through load; adds to
 * *runs and *refused and asserts that some mutant is refused. */
static void mutate_toml_file(const char *path, const char *tmp, const char *name,
                             int (*load)(const char *, sc_error *), size_t *runs,
                             size_t *refused) {
  char mutant[SC_PATH_MAX + 256];
  run_ctx x;
  snprintf(mutant, sizeof mutant, "%s/%s", tmp, name);
  memset(&x, 0, sizeof x);
  x.load = load;
  x.orig = path;
  x.mutant = mutant;
  x.toml = 1;
  mutate_toml(&x, 0);
  remove(mutant);
  *runs += x.runs;
  *refused += x.refused;
  ck_assert_msg(x.refused > 0, "%s: no mutant refused", path);
}

static void mutate_folder(const char *sub, int (*load)(const char *, sc_error *)) {
  char dir[SC_PATH_MAX], tmp[64];
  DIR *d;
  struct dirent *e;
  size_t files = 0, runs = 0, refused = 0;
  snprintf(dir, sizeof dir, "%s/%s", SC_SOURCE_DIR, sub);
  tmpdir(tmp, sizeof tmp);
  d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    char path[SC_PATH_MAX + 256];
    if (len < 6 || strcmp(e->d_name + len - 5, ".toml") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    mutate_toml_file(path, tmp, e->d_name, load, &runs, &refused);
    files++;
  }
  closedir(d);
  rmdir(tmp);
  ck_assert_uint_gt(files, 1);
  printf("mutate %s: %zu files, %zu mutants, %zu refused\n", sub, files, runs, refused);
}

START_TEST(mutated_models) { mutate_folder("models", load_model); }
END_TEST

START_TEST(mutated_topologies) { mutate_folder("topologies", load_topology); }
END_TEST

START_TEST(mutated_stacks) { mutate_folder("stacks", load_stack); }
END_TEST

START_TEST(mutated_hardware) {
  sc_error err;
  ck_assert_int_eq(sc_registry_new(&g_reg, &err), SC_OK);
  for (const sc__builtin *b = sc__builtin_plugins; b->entry != NULL; b++)
    sc_registry_add_entry(g_reg, b->entry, b->origin, &err);
  mutate_folder("hardware", load_hardware);
  { /* the measured file with the GEMM exposure keys and the cache curve (the Zen 4 host,
     * sampled in passes) */
    char path[SC_PATH_MAX + 64], tmp[64];
    size_t runs = 0, refused = 0;
    snprintf(path, sizeof path, "%s/docs/validation/host-cpu-zen4-passes/host-cpu.toml",
             SC_SOURCE_DIR);
    tmpdir(tmp, sizeof tmp);
    mutate_toml_file(path, tmp, "host-cpu.toml", load_hardware, &runs, &refused);
    rmdir(tmp);
    printf("mutate docs/validation/host-cpu-zen4-passes/host-cpu.toml: %zu mutants, %zu "
           "refused\n", runs, refused);
  }
  sc_registry_free(g_reg);
  g_reg = NULL;
}
END_TEST

/* Collective residuals (stepcast fit --comm, the Dell XE9680 fixture) line by line. */
START_TEST(mutated_coll_residuals) {
  char path[SC_PATH_MAX + 64], tmp[64];
  size_t runs = 0, refused = 0;
  snprintf(path, sizeof path, "%s/tests/data/comm/coll_dell/residuals.toml", SC_SOURCE_DIR);
  tmpdir(tmp, sizeof tmp);
  sc_error e0 = {0};
  ck_assert_msg(load_coll_residuals(path, &e0) == SC_OK, "the fixture must load: %s", e0.msg);
  mutate_toml_file(path, tmp, "residuals.toml", load_coll_residuals, &runs, &refused);
  printf("mutate collective residuals: %zu mutants, %zu refused\n", runs, refused);
  rmdir(tmp);
}
END_TEST

/* The gbdt model at from, cut to its first tree, saved as JSON at to: the mutants are of
 * residuals.toml, and every one loads the models beside it, so a one-tree model with the same
 * features keeps the load (format checks, XGBoost) at a fraction of the shipped models' cost. */
static void copy_first_tree(const char *from, const char *to) {
  BoosterHandle bh = NULL, one = NULL;
  ck_assert_int_eq(XGBoosterCreate(NULL, 0, &bh), 0);
  ck_assert_msg(XGBoosterLoadModel(bh, from) == 0, "%s: %s", from, XGBGetLastError());
  ck_assert_msg(XGBoosterSlice(bh, 0, 1, 1, &one) == 0, "%s: %s", from, XGBGetLastError());
  ck_assert_msg(XGBoosterSaveModel(one, to) == 0, "%s: %s", to, XGBGetLastError());
  XGBoosterFree(one);
  XGBoosterFree(bh);
}

/* The residuals of the two GPUs (three models each, one gbdt) line by line; the host CPU's
 * (19 models) cut short only. Each gbdt model is copied beside the mutants
 * cut to its first tree (copy_first_tree). */

START_TEST(mutated_residuals) {
  static const struct { const char *device; int lines; } fitted[] = {
      {"a100-sxm4-80gb", 0}, {"h100-sxm5-80gb", 0}, {"host-cpu", -1}};
  for (size_t i = 0; i < sizeof fitted / sizeof fitted[0]; i++) {
    char src[SC_PATH_MAX], tmp[64], path[SC_PATH_MAX + 320], mutant[SC_PATH_MAX + 320];
    DIR *d;
    struct dirent *e;
    run_ctx x;
    snprintf(src, sizeof src, "%s/hardware/%s/residuals", SC_SOURCE_DIR, fitted[i].device);
    tmpdir(tmp, sizeof tmp);
    d = opendir(src);
    ck_assert_msg(d != NULL, "cannot open %s", src);
    while ((e = readdir(d)) != NULL) {
      size_t len = strlen(e->d_name);
      if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
      snprintf(path, sizeof path, "%s/%s", src, e->d_name);
      snprintf(mutant, sizeof mutant, "%s/%s", tmp, e->d_name);
      copy_first_tree(path, mutant);
    }
    closedir(d);
    snprintf(path, sizeof path, "%s/residuals.toml", src);
    snprintf(mutant, sizeof mutant, "%s/residuals.toml", tmp);
    memset(&x, 0, sizeof x);
    x.load = load_residuals;
    x.orig = path;
    x.mutant = mutant;
    x.toml = 1;
    if (fitted[i].lines >= 0) {
      mutate_toml(&x, fitted[i].lines);
    } else { /* cut short only */
      size_t n;
      char *text = slurp(path, &n);
      cut_short(&x, text, n, 48);
      free(text);
    }
    printf("mutate %s residuals: %zu mutants, %zu refused\n", fitted[i].device, x.runs,
           x.refused);
    ck_assert_uint_gt(x.refused, 0);
    d = opendir(tmp);
    while (d != NULL && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", tmp, e->d_name);
      remove(path);
    }
    if (d != NULL) closedir(d);
    rmdir(tmp);
  }
}
END_TEST

static void mutate_one_csv(const char *rel, int (*load)(const char *, sc_error *), int rows) {
  char path[SC_PATH_MAX], tmp[64], mutant[SC_PATH_MAX];
  run_ctx x;
  snprintf(path, sizeof path, "%s/%s", SC_SOURCE_DIR, rel);
  tmpdir(tmp, sizeof tmp);
  snprintf(mutant, sizeof mutant, "%s/mutant.csv", tmp);
  memset(&x, 0, sizeof x);
  x.load = load;
  x.orig = path;
  x.mutant = mutant;
  mutate_csv(&x, rows);
  remove(mutant);
  rmdir(tmp);
  printf("mutate %s: %zu mutants, %zu refused\n", rel, x.runs, x.refused);
  ck_assert_uint_gt(x.refused, x.runs / 4);
}

START_TEST(mutated_samples) { mutate_one_csv("hardware/host-cpu/samples.csv", load_samples, 3); }
END_TEST

START_TEST(mutated_comm_validation) {
  mutate_one_csv("docs/validation/nccl-tests.csv", load_comm_validation, 3);
}
END_TEST

/* An nccl-tests log (comm --import): each results line replaced by the hostile values, the
 * file cut short. */
START_TEST(mutated_nccl_log) {
  mutate_one_csv("tests/data/comm/dell_allreduce.log", load_nccl_log, 12);
}
END_TEST

/* One tcase per mutated input, so that ctest runs them as separate tests (CK_RUN_CASE, set
 * by tests/CMakeLists.txt) side by side: together they are the suite's longest run. */
static Suite *mutate_suite(void) {
  const struct { const char *name; const TTest *test; } cases[] = {
      {"models", mutated_models},       {"topologies", mutated_topologies},
      {"stacks", mutated_stacks},
      {"hardware", mutated_hardware},   {"residuals", mutated_residuals},
      {"coll_residuals", mutated_coll_residuals}, {"nccl_log", mutated_nccl_log},
      {"samples", mutated_samples},     {"comm_validation", mutated_comm_validation}};
  Suite *s = suite_create("mutate");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(mutate_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
