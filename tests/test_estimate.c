/* Learned residuals: ridge, gbdt JSON round trip, the samples reader, residual files and
 * the hybrid/learned estimators inside sc_predict. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_config.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/predict.h"
#include "stepcast/registry.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

static const char *data_dir(void) {
  const char *d = getenv("SC_TEST_DATA");
  return d != NULL ? d : SC_SOURCE_DIR "/tests/data";
}

static void data_path(char *out, size_t cap, const char *rel) {
  snprintf(out, cap, "%s/estimate/%s", data_dir(), rel);
}

/* A deterministic uniform in [0, 1) (64-bit LCG, Knuth's MMIX constants). */
static double lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* ---- ridge ---------------------------------------------------------------------- */

/* y = 2 + 3 x0 - 1.5 x1 + 0.5 x2 exactly: lambda = 0 recovers the coefficients in the
 * original units (coef_j / scale_j) and the intercept to 1e-9. */
START_TEST(ridge_recovers_coefficients) {
  enum { N = 200, P = 3 };
  static double X[N * P], y[N];
  const double beta[P] = {3.0, -1.5, 0.5};
  double mean[P], scale[P], coef[P], b0, icpt;
  uint64_t s = 42;
  sc_error err;
  for (int i = 0; i < N; i++) {
    y[i] = 2.0;
    for (int j = 0; j < P; j++) {
      X[i * P + j] = 10.0 * lcg(&s) - 3.0 * j;
      y[i] += beta[j] * X[i * P + j];
    }
  }
  sc_error_clear(&err);
  ck_assert_msg(sc_ridge_fit(X, y, N, P, 0.0, mean, scale, coef, &b0, &err) == SC_OK, "%s", err.msg);
  icpt = b0;
  for (int j = 0; j < P; j++) {
    ck_assert_msg(fabs(coef[j] / scale[j] - beta[j]) < 1e-9, "coef %d: %.12g", j, coef[j] / scale[j]);
    icpt -= coef[j] * mean[j] / scale[j];
  }
  ck_assert_msg(fabs(icpt - 2.0) < 1e-9, "intercept %.12g", icpt);
  /* a large penalty shrinks every coefficient toward 0, never the intercept (mean of y) */
  {
    double c2[P], b2, ybar = 0.0;
    ck_assert(sc_ridge_fit(X, y, N, P, 1e9, mean, scale, c2, &b2, &err) == SC_OK);
    for (int i = 0; i < N; i++) ybar += y[i] / N;
    for (int j = 0; j < P; j++) ck_assert(fabs(c2[j]) < 1e-4 * fabs(coef[j]));
    ck_assert(fabs(b2 - ybar) < 1e-9);
  }
  /* with noise of sd ~0.03 the fit is still within 0.02 */
  {
    double yn[N];
    for (int i = 0; i < N; i++) yn[i] = y[i] + 0.1 * (lcg(&s) - 0.5);
    ck_assert(sc_ridge_fit(X, yn, N, P, 0.0, mean, scale, coef, &b0, &err) == SC_OK);
    for (int j = 0; j < P; j++) ck_assert(fabs(coef[j] / scale[j] - beta[j]) < 0.02);
  }
}
END_TEST

START_TEST(ridge_errors) {
  double X[8] = {1, 1, 2, 2, 3, 3, 4, 4}, y[4] = {1, 2, 3, 4}, mean[2], scale[2], coef[2], b0;
  sc_error err;
  sc_error_clear(&err);
  /* identical columns, no penalty: singular */
  ck_assert_int_eq(sc_ridge_fit(X, y, 4, 2, 0.0, mean, scale, coef, &b0, &err), SC_ERANGE);
  ck_assert(strstr(err.msg, "singular") != NULL);
  /* a penalty makes it solvable and splits the weight evenly */
  ck_assert(sc_ridge_fit(X, y, 4, 2, 1e-6, mean, scale, coef, &b0, &err) == SC_OK);
  ck_assert(fabs(coef[0] - coef[1]) < 1e-9);
  y[2] = NAN;
  ck_assert_int_eq(sc_ridge_fit(X, y, 4, 2, 0.1, mean, scale, coef, &b0, &err), SC_EINVAL);
  ck_assert(strstr(err.msg, "y[2]") != NULL);
  y[2] = 3;
  ck_assert_int_eq(sc_ridge_fit(X, y, 4, 17, 0.1, mean, scale, coef, &b0, &err), SC_EINVAL);
  ck_assert_int_eq(sc_ridge_fit(X, y, 4, 2, -1.0, mean, scale, coef, &b0, &err), SC_EINVAL);
}
END_TEST

/* ---- gbdt ------------------------------------------------------------------------ */

static void tmpdir(char *out, size_t cap) {
  snprintf(out, cap, "/tmp/sc_estimate_XXXXXX");
  ck_assert(mkdtemp(out) != NULL);
}

/* A step y = 1 (x < 0.5), 3 (x >= 0.5) is learnt, saved as JSON, loaded into a fresh model
 * that predicts the same to float precision. */
START_TEST(gbdt_json_round_trip) {
  enum { N = 100 };
  double X[N], y[N], a, b;
  sc_resid_model m, m2;
  sc_fit_opts o;
  sc_error err;
  char dir[64], path[128];
  FILE *f;
  int c;
  for (int i = 0; i < N; i++) {
    X[i] = (i + 0.5) / N;
    y[i] = X[i] < 0.5 ? 1.0 : 3.0;
  }
  memset(&m, 0, sizeof m);
  snprintf(m.family, sizeof m.family, "gemm");
  m.kind = SC_RESID_GBDT;
  m.target = SC_TARGET_HYBRID;
  m.nfeatures = 1;
  sc_fit_opts_defaults(&o);
  o.gbdt_rounds = 60;
  o.gbdt_eta = 0.3;
  sc_error_clear(&err);
  ck_assert_msg(sc_resid_fit(&m, X, y, N, &o, &err) == SC_OK, "%s", err.msg);
  {
    double x = 0.25;
    ck_assert(sc_resid_predict(&m, &x, &a, &err) == SC_OK);
    ck_assert_msg(fabs(a - 1.0) < 0.01, "%g", a);
    x = 0.8;
    ck_assert(sc_resid_predict(&m, &x, &a, &err) == SC_OK);
    ck_assert_msg(fabs(a - 3.0) < 0.01, "%g", a);
  }
  tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/m.json", dir);
  ck_assert_msg(sc_resid_save_gbdt(&m, path, &err) == SC_OK, "%s", err.msg);
  f = fopen(path, "r");
  ck_assert(f != NULL);
  while ((c = fgetc(f)) == ' ' || c == '\n') {}
  fclose(f);
  ck_assert_int_eq(c, '{'); /* XGBoost's JSON model format, not its binary one */
  memset(&m2, 0, sizeof m2);
  m2.kind = SC_RESID_GBDT;
  m2.nfeatures = 1;
  ck_assert_msg(sc_resid_load_gbdt(&m2, path, &err) == SC_OK, "%s", err.msg);
  for (int i = 0; i < 20; i++) {
    double x = i / 19.0;
    ck_assert(sc_resid_predict(&m, &x, &a, &err) == SC_OK);
    ck_assert(sc_resid_predict(&m2, &x, &b, &err) == SC_OK);
    ck_assert_msg(a == b, "x=%g: %.9g vs %.9g", x, a, b);
  }
  sc_resid_model_free(&m);
  sc_resid_model_free(&m2);
  /* a missing file and a broken one are errors naming the path */
  m2.kind = SC_RESID_GBDT;
  snprintf(path, sizeof path, "%s/absent.json", dir);
  ck_assert_int_eq(sc_resid_load_gbdt(&m2, path, &err), SC_EIO);
  ck_assert(strstr(err.msg, "absent.json") != NULL);
  f = fopen(path, "w");
  ck_assert(f != NULL);
  fputs("{\"learner\": [1, 2", f);
  fclose(f);
  ck_assert_int_eq(sc_resid_load_gbdt(&m2, path, &err), SC_EIO);
  ck_assert(m2.booster == NULL);
  remove(path);
  snprintf(path, sizeof path, "%s/m.json", dir);
  remove(path);
  rmdir(dir);
}
END_TEST

/* ---- samples --------------------------------------------------------------------- */

START_TEST(samples_read_good) {
  sc_sample_set s;
  sc_error err;
  char path[1024];
  data_path(path, sizeof path, "good.csv");
  sc_error_clear(&err);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(s.n, 3);
  ck_assert_str_eq(sc_samples_meta(&s, "device_kind"), "cpu");
  ck_assert_str_eq(sc_samples_meta(&s, "OPENBLAS_NUM_THREADS"), "1");
  ck_assert(sc_samples_meta(&s, "absent") == NULL);
  ck_assert_str_eq(s.rows[1].op.family, "norm");
  ck_assert_uint_eq(s.rows[1].op.variant, 1);
  ck_assert_uint_eq(s.rows[1].op.ndims, 2);
  ck_assert_int_eq(s.rows[1].op.dims[0], 128);
  ck_assert_int_eq(s.rows[1].op.dims[1], 256);
  ck_assert_uint_eq(s.rows[1].line, 8);
  ck_assert_uint_eq(s.rows[1].m.reps, 7);
  ck_assert(s.rows[0].op.family == s.rows[2].op.family);
  ck_assert(s.rows[0].m.median_s == 2e-05 && s.rows[0].m.p90_s == 2.5e-05);
  ck_assert_int_eq(s.rows[2].op.dims[0], 2);
  sc_samples_free(&s);
}
END_TEST

START_TEST(samples_read_malformed) {
  static const struct { const char *file, *where, *what; int code; } cases[] = {
      {"bad_header.csv", "bad_header.csv:2:", "column header", SC_EPARSE},
      {"bad_fields.csv", "bad_fields.csv:2:", "18 comma-separated", SC_EPARSE},
      {"bad_dtype.csv", "bad_dtype.csv:3:", "column 'dtype'", SC_EPARSE},
      {"bad_ndims.csv", "bad_ndims.csv:2:", "column 'ndims'", SC_EPARSE},
      {"bad_pastdims.csv", "bad_pastdims.csv:2:", "column 'd2'", SC_EPARSE},
      {"bad_time.csv", "bad_time.csv:2:", "column 'median_s'", SC_EPARSE},
      {"bad_order.csv", "bad_order.csv:2:", "min <= p10", SC_EPARSE},
      {"bad_family.csv", "bad_family.csv:2:", "column 'family'", SC_EPARSE},
      {"bad_dim.csv", "bad_dim.csv:2:", "column 'd3'", SC_EPARSE},
      {"bad_reps.csv", "bad_reps.csv:2:", "column 'reps'", SC_EPARSE},
      {"bad_nan.csv", "bad_nan.csv:2:", "column 'median_s'", SC_EPARSE},
      {"empty.csv", "empty.csv:2:", "no sample rows", SC_EPARSE},
      {"bad_nul.csv", "bad_nul.csv:2:", "a NUL byte in the line", SC_EPARSE},
      {"absent.csv", "absent.csv", "No such file", SC_EIO},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_sample_set s;
    sc_error err;
    char path[1024];
    data_path(path, sizeof path, cases[i].file);
    sc_error_clear(&err);
    ck_assert_int_eq(sc_samples_read(path, &s, &err), cases[i].code);
    ck_assert_msg(strstr(err.msg, cases[i].where) != NULL && strstr(err.msg, cases[i].what) != NULL,
                  "%s: %s", cases[i].file, err.msg);
    ck_assert(s.rows == NULL && s.n == 0);
  }
}
END_TEST

START_TEST(samples_write_read) {
  char dir[64], path[128];
  sc_op_desc op;
  sc_measurement m = {1.5e-3, 1.2e-3, 2.5e-3, 1.3e-3, 1.9e-3, 17};
  sc_sample_set s;
  sc_error err;
  FILE *f;
  tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/s.csv", dir);
  memset(&op, 0, sizeof op);
  op.family = SC_OP_ATTENTION;
  op.variant = SC_ATTN_FLASH_BWD;
  op.dtype = SC_DTYPE_FP32;
  op.ndims = 7;
  for (int i = 0; i < 7; i++) op.dims[i] = i + 1;
  f = fopen(path, "w");
  ck_assert(f != NULL);
  fprintf(f, "%s\n", SC_SAMPLES_COLUMNS);
  sc_error_clear(&err);
  ck_assert(sc_samples_write_row(f, &op, &m, &err) == SC_OK);
  fclose(f);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(s.n, 1);
  ck_assert_str_eq(s.rows[0].op.family, "attention");
  ck_assert_uint_eq(s.rows[0].op.variant, 1);
  for (int i = 0; i < 7; i++) ck_assert_int_eq(s.rows[0].op.dims[i], i + 1);
  ck_assert(s.rows[0].m.median_s == 1.5e-3 && s.rows[0].m.reps == 17);
  sc_samples_free(&s);
  remove(path);
  rmdir(dir);
}
END_TEST

/* Write text to dir/name; path gets the file's path. */
static void write_text(const char *dir, const char *name, const char *text, char *path,
                       size_t cap) {
  FILE *f;
  snprintf(path, cap, "%s/%s", dir, name);
  f = fopen(path, "w");
  ck_assert(f != NULL);
  ck_assert(fputs(text, f) >= 0);
  ck_assert(fclose(f) == 0);
}

/* Groups (rows timed together as one measurement) in the native form, with its optional
 * group and source columns, and the measured-table form. */
START_TEST(samples_read_groups) {
  char dir[64], path[128];
  sc_sample_set s;
  sc_error err;
  tmpdir(dir, sizeof dir);
  sc_error_clear(&err);
  /* native, group column: two GEMMs of one group, a norm of its own */
  write_text(dir, "native.csv",
             "# device_kind = gpu\n" SC_SAMPLES_COLUMNS ",group\n"
             "gemm,0,fp16,4,1,64,64,64,0,0,0,0,5,2e-05,1.8e-05,3e-05,1.9e-05,2.5e-05,bwd.0\n"
             "norm,1,fp16,2,128,256,0,0,0,0,0,0,7,1e-05,1e-05,1e-05,1e-05,1e-05,\n"
             "gemm,0,fp16,4,1,64,32,64,0,0,0,0,5,2e-05,1.9e-05,2e-05,1.9e-05,2e-05, bwd.0 \n",
             path, sizeof path);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(s.n, 3);
  ck_assert_uint_eq(s.ngroups, 1);
  ck_assert_str_eq(s.groups[0], "bwd.0");
  ck_assert_uint_eq(s.rows[0].group, 1);
  ck_assert_uint_eq(s.rows[1].group, 0);
  ck_assert_uint_eq(s.rows[2].group, 1);
  ck_assert_int_eq(s.rows[2].op.dims[2], 32);
  ck_assert_str_eq(sc_samples_meta(&s, "device_kind"), "gpu");
  sc_samples_free(&s);
  ck_assert(s.groups == NULL && s.ngroups == 0);
  /* native, group and source; source alone */
  write_text(dir, "native2.csv",
             SC_SAMPLES_COLUMNS ",group,source\n"
             "gemm,0,fp16,4,1,64,64,64,0,0,0,0,5,2e-05,1.8e-05,3e-05,1.9e-05,2.5e-05,g,a.csv:2\n"
             "gemm,0,fp16,4,1,64,64,64,0,0,0,0,5,2e-05,1.8e-05,3e-05,1.9e-05,2.5e-05,,\n",
             path, sizeof path);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert(s.n == 2 && s.ngroups == 1 && s.rows[0].group == 1 && s.rows[1].group == 0);
  sc_samples_free(&s);
  write_text(dir, "native3.csv",
             SC_SAMPLES_COLUMNS ",source\n"
             "gemm,0,fp16,4,1,64,64,64,0,0,0,0,5,2e-05,1.8e-05,3e-05,1.9e-05,2.5e-05,paper\n",
             path, sizeof path);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert(s.n == 1 && s.ngroups == 0 && s.groups == NULL && s.rows[0].group == 0);
  sc_samples_free(&s);
  /* a measured table, its columns in another order; a group of two families, its rows
   * apart; a 47-character group name is the longest */
  write_text(dir, "table.csv",
             "# from a paper\n"
             "dims,family,measured_s,variant,dtype,group,source\n"
             "1x4096x4096x4096,gemm,1.06928e-03,0,bf16,,p.csv:1\n"
             "8192x4096,norm,2.5e-4,2,bf16,fwd,p.csv:2\n"
             "2x3x4x5x6x7x8x9,attention,3e-3,1,fp16,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,\n"
             "0x64x64x64,gemm,2.5e-4,0,bf16,fwd,\n",
             path, sizeof path);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(s.n, 4);
  ck_assert_uint_eq(s.ngroups, 2);
  ck_assert_str_eq(s.groups[0], "fwd");
  ck_assert_uint_eq(strlen(s.groups[1]), 47);
  ck_assert_str_eq(s.rows[0].op.family, "gemm");
  ck_assert(s.rows[0].op.family == s.rows[3].op.family);
  ck_assert_uint_eq(s.rows[0].op.ndims, 4);
  ck_assert_int_eq(s.rows[0].op.dims[0], 1);
  ck_assert_int_eq(s.rows[0].op.dims[3], 4096);
  ck_assert_uint_eq(s.rows[0].op.dtype, SC_DTYPE_BF16);
  ck_assert(s.rows[0].m.median_s == 1.06928e-03 && s.rows[0].m.min_s == 1.06928e-03 &&
            s.rows[0].m.max_s == 1.06928e-03 && s.rows[0].m.p10_s == 1.06928e-03 &&
            s.rows[0].m.p90_s == 1.06928e-03 && s.rows[0].m.reps == 1);
  ck_assert_uint_eq(s.rows[0].group, 0);
  ck_assert_uint_eq(s.rows[0].line, 3);
  ck_assert_str_eq(s.rows[1].op.family, "norm");
  ck_assert_uint_eq(s.rows[1].op.variant, 2);
  ck_assert_uint_eq(s.rows[1].op.ndims, 2);
  ck_assert_int_eq(s.rows[1].op.dims[1], 4096);
  ck_assert_uint_eq(s.rows[1].group, 1);
  ck_assert_uint_eq(s.rows[2].op.ndims, 8);
  ck_assert_int_eq(s.rows[2].op.dims[7], 9);
  ck_assert_uint_eq(s.rows[2].group, 2);
  ck_assert_int_eq(s.rows[3].op.dims[0], 0);
  ck_assert_uint_eq(s.rows[3].group, 1);
  ck_assert(s.rows[3].m.median_s == 2.5e-4);
  sc_samples_free(&s);
  remove(path);
  snprintf(path, sizeof path, "%s/native.csv", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/native2.csv", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/native3.csv", dir);
  remove(path);
  rmdir(dir);
}
END_TEST

START_TEST(samples_read_group_errors) {
#define ROW "gemm,0,fp16,4,1,64,64,64,0,0,0,0,5,2e-05,1.8e-05,3e-05,1.9e-05,2.5e-05"
#define ROW2 "norm,1,fp16,2,128,256,0,0,0,0,0,0,7,1e-05,1e-05,1e-05,1e-05,1e-05"
#define TABLE "family,variant,dtype,dims,measured_s,group,source\n"
  static const char long_name[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; /* 48 */
  char long_source[300];
  char long_group_row[256], long_source_row[512];
  memset(long_source, 's', 201);
  long_source[201] = '\0';
  snprintf(long_group_row, sizeof long_group_row,
           SC_SAMPLES_COLUMNS ",group\n" ROW ",%s\n", long_name);
  snprintf(long_source_row, sizeof long_source_row, TABLE "gemm,0,fp16,1x2x3x4,1e-3,,%s\n",
           long_source);
  const struct { const char *text, *what; } cases[] = {
      /* one group, two times: the second row names the first's line */
      {TABLE "gemm,0,fp16,1x2x3x4,1e-3,g,\ngemm,0,fp16,1x2x3x5,2e-3,g,\n",
       "x.csv:3: column 'group': group 'g' was measured as 0.001 s on line 2: a group has one "
       "measured time"},
      /* native, of two families, rows apart */
      {"# c\n" SC_SAMPLES_COLUMNS ",group\n" ROW ",g\n" ROW ",\n" ROW2 ",g\n",
       "x.csv:5: column 'group': group 'g' was measured as 2e-05 s on line 3"},
      {"family,variant,dtype,dims,measured_s,reps\ngemm,0,fp16,1x2x3x4,1e-3,1\n",
       "x.csv:1: column 'reps': not a column of a measured table (family, variant, dtype, dims, "
       "measured_s, group, source)"},
      {SC_SAMPLES_COLUMNS ",comment\n" ROW ",x\n", "x.csv:1: expected the column header '"
       SC_SAMPLES_COLUMNS "'"},
      {SC_SAMPLES_COLUMNS ",source,group\n" ROW ",x,y\n", "x.csv:1: expected the column header"},
      {long_group_row, "x.csv:2: column 'group': 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' "
       "is longer than 47 characters"},
      {long_source_row, "x.csv:2: column 'source': longer than 200 characters"},
      {SC_SAMPLES_COLUMNS ",group\n" ROW "\n", "x.csv:2: expected 19 comma-separated fields, "
       "found 18"},
      {"family,variant,dtype,dims,measured_s,dims\n", "x.csv:1: column 'dims': named twice"},
      {"family,dtype,dims,measured_s\n", "x.csv:1: column 'variant': missing"},
      {TABLE "gemm,0,fp16,1x2x3x4,1e-3,\n", "x.csv:2: expected 7 comma-separated fields, found 6"},
      {TABLE "gemm,0,fp16,1xx4,1e-3,,\n", "x.csv:2: column 'dims': '1xx4' is not 1 to 8"},
      {TABLE "gemm,0,fp16,1x2x3x4x5x6x7x8x9,1e-3,,\n", "x.csv:2: column 'dims'"},
      {TABLE "gemm,0,fp16,4611686018427387904,1e-3,,\n", "x.csv:2: column 'dims'"},
      {TABLE "gemm,0,fp16,-4,1e-3,,\n", "x.csv:2: column 'dims'"},
      {TABLE "gemm,0,fp16,4x,1e-3,,\n", "x.csv:2: column 'dims'"},
      {TABLE "gemm,0,fp16,4,0,,\n", "x.csv:2: column 'measured_s': '0' is not a finite time > 0"},
      {TABLE "gemm,0,fp16,4,nan,,\n", "x.csv:2: column 'measured_s'"},
      {TABLE "gemm,256,fp16,4,1e-3,,\n", "x.csv:2: column 'variant'"},
      {TABLE "gemm,0,fp64,4,1e-3,,\n", "x.csv:2: column 'dtype'"},
      {TABLE "ge mm,0,fp16,4,1e-3,,\n", "x.csv:2: column 'family'"},
      {TABLE, "x.csv:1: no sample rows"},
  };
  char dir[64], path[128];
  tmpdir(dir, sizeof dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_sample_set s;
    sc_error err;
    sc_error_clear(&err);
    write_text(dir, "x.csv", cases[i].text, path, sizeof path);
    ck_assert_msg(sc_samples_read(path, &s, &err) == SC_EPARSE, "case %zu: %s", i, err.msg);
    ck_assert_msg(strstr(err.msg, cases[i].what) != NULL, "case %zu: %s", i, err.msg);
    ck_assert(s.rows == NULL && s.n == 0 && s.groups == NULL && s.ngroups == 0);
  }
  /* 9 dims is one too many, 8 of 2^62 - 1 are fine; a table's trailer rules are not the
   * sampler's (a table has none) */
  {
    sc_sample_set s;
    sc_error err;
    write_text(dir, "x.csv", SC_SAMPLES_LIVE "\n" TABLE
               "gemm,0,fp16,4611686018427387903x1,1e-3,,\n", path, sizeof path);
    ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
    ck_assert_int_eq(s.rows[0].op.dims[0], INT64_C(4611686018427387903));
    sc_samples_free(&s);
  }
  remove(path);
  rmdir(dir);
#undef ROW
#undef ROW2
#undef TABLE
}
END_TEST

/* The A100 seed's measured table (81903 operators, 17005 groups of several) reads, every
 * group with one time. */
START_TEST(samples_read_seed_table) {
  sc_sample_set s;
  sc_error err;
  const char *path = SC_SOURCE_DIR "/hardware/a100-sxm4-80gb/seed/ops.csv";
  double *t;
  size_t *count;
  sc_error_clear(&err);
  ck_assert_msg(sc_samples_read(path, &s, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(s.n, 81903);
  ck_assert_uint_eq(s.ngroups, 17005);
  t = calloc(s.ngroups, sizeof *t);
  count = calloc(s.ngroups, sizeof *count);
  ck_assert(t != NULL && count != NULL);
  for (size_t i = 0; i < s.n; i++) {
    const uint32_t g = s.rows[i].group;
    ck_assert(g <= s.ngroups && s.rows[i].m.reps == 1);
    if (g == 0) continue;
    if (count[g - 1]++ == 0) t[g - 1] = s.rows[i].m.median_s;
    ck_assert(t[g - 1] == s.rows[i].m.median_s);
  }
  for (size_t g = 0; g < s.ngroups; g++) ck_assert_uint_ge(count[g], 1);
  ck_assert_str_eq(s.groups[s.rows[1].group - 1], "baddbmm.B.2");
  free(t);
  free(count);
  sc_samples_free(&s);
}
END_TEST

/* ---- residual files -------------------------------------------------------------- */

/* The GEMM exposure solver recovers P, X and K from times its own model makes (the
 * sampler's shapes: 2048^3 and one dimension of 16 with two of 512 .. 4096), refuses times
 * without exposure and malformed input. */
static double expo_time(double F, double ws, double P, double X, double K) {
  return F / P + ws / (ws + K) * ws / X;
}
START_TEST(gemm_exposure_solve) {
  const double P = 1.05e11, X = 8.6e9, K = 2.5e6;
  const double fb = 2.0 * 2048.0 * 2048 * 2048, wb = 4.0 * 3 * 2048.0 * 2048;
  double f[4], ws[4], t[4], p = 0, x = 0, k = 0;
  for (int j = 0; j < 4; j++) {
    double n = 512.0 * (1 << j);
    f[j] = 2.0 * 16 * n * n;
    ws[j] = 4.0 * (2.0 * 16 * n + n * n);
    t[j] = expo_time(f[j], ws[j], P, X, K);
  }
  const double tb = expo_time(fb, wb, P, X, K);
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, tb, f, ws, t, 4, &p, &x, &k), SC_OK);
  ck_assert_msg(fabs(p / P - 1) < 1e-6 && fabs(x / X - 1) < 1e-6 && fabs(k / K - 1) < 1e-6,
                "P %g X %g K %g", p, x, k);
  /* the raw square rate is below P: its own exposed traffic, 2.9 % here */
  ck_assert(fb / tb < 0.98 * P);
  /* no exposure: every GEMM at one rate */
  double t0[4];
  for (int j = 0; j < 4; j++) t0[j] = f[j] / P;
  p = x = k = -1;
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, fb / P, f, ws, t0, 4, &p, &x, &k),
                   SC_ENOTFOUND);
  ck_assert(p == -1 && x == -1 && k == -1);
  /* the smaller GEMMs all slower than all their traffic exposed: no knee */
  double t1[4];
  for (int j = 0; j < 4; j++) t1[j] = j < 3 ? 10.0 * t[j] : t[j];
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, tb, f, ws, t1, 4, &p, &x, &k), SC_ENOTFOUND);
  /* malformed */
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, tb, f, ws, t, 1, &p, &x, &k), SC_EINVAL);
  t1[0] = NAN;
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, tb, f, ws, t1, 4, &p, &x, &k), SC_EINVAL);
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, -1, tb, f, ws, t, 4, &p, &x, &k), SC_EINVAL);
  ck_assert_int_eq(sc_gemm_exposure_solve(fb, wb, tb, f, ws, t, 4, NULL, &x, &k), SC_EINVAL);
}
END_TEST

/* The Zen 4 host's samples header keeps the GEMM micro's medians: solving them again gives
 * the rates its hardware file states (to the 4 digits the header prints). */
static double med3(double a, double b, double c) {
  return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}
/* The miss-share curve from STREAM rates: each share inverts 1/rate = g/D + (1-g)/C, clamped
 * to [0, 1], and a point that hits more than the smaller working set before it is pooled with
 * it (least-squares monotone fit). */
START_TEST(cache_miss_curve) {
  const double C = 1e11, D = 2.5e10;
  const double g[5] = {0.0, 0.1, 0.4, 0.9, 1.0};
  double rate[6], share[6];
  for (int j = 0; j < 5; j++) rate[j] = 1.0 / (g[j] / D + (1.0 - g[j]) / C);
  ck_assert_int_eq(sc_cache_miss_curve(rate, 5, C, D, share), SC_OK);
  for (int j = 0; j < 5; j++) ck_assert_msg(fabs(share[j] - g[j]) < 1e-12, "point %d", j);
  /* faster than the cache rate and slower than DRAM clamp to 0 and 1 */
  rate[0] = 1.2e11;
  rate[4] = 2e10;
  ck_assert_int_eq(sc_cache_miss_curve(rate, 5, C, D, share), SC_OK);
  ck_assert(share[0] == 0.0 && share[4] == 1.0);
  /* 0.3 then 0.1: both become their mean 0.2; the points after stay */
  const double noisy[4] = {0.0, 0.3, 0.1, 0.5};
  for (int j = 0; j < 4; j++) rate[j] = 1.0 / (noisy[j] / D + (1.0 - noisy[j]) / C);
  ck_assert_int_eq(sc_cache_miss_curve(rate, 4, C, D, share), SC_OK);
  ck_assert(share[0] == 0.0);
  ck_assert(fabs(share[1] - 0.2) < 1e-12 && fabs(share[2] - 0.2) < 1e-12);
  ck_assert(fabs(share[3] - 0.5) < 1e-12);
  /* a violation that spans blocks: 0.4 and 0.35 pool into 0.375, which 0.0 then pulls into
   * one block of 0.25 over the three; the first point stays 0.1 */
  const double deep[4] = {0.1, 0.4, 0.35, 0.0};
  for (int j = 0; j < 4; j++) rate[j] = 1.0 / (deep[j] / D + (1.0 - deep[j]) / C);
  ck_assert_int_eq(sc_cache_miss_curve(rate, 4, C, D, share), SC_OK);
  ck_assert(fabs(share[0] - 0.1) < 1e-12);
  for (int j = 1; j < 4; j++) ck_assert(fabs(share[j] - 0.25) < 1e-12);
  /* refusals */
  ck_assert_int_eq(sc_cache_miss_curve(rate, 0, C, D, share), SC_EINVAL);
  ck_assert_int_eq(sc_cache_miss_curve(rate, SC_CACHE_CURVE_POINTS + 1, C, D, share), SC_EINVAL);
  ck_assert_int_eq(sc_cache_miss_curve(rate, 4, D, C, share), SC_EINVAL); /* cache below DRAM */
  ck_assert_int_eq(sc_cache_miss_curve(rate, 4, C, NAN, share), SC_EINVAL);
  rate[2] = 0.0;
  ck_assert_int_eq(sc_cache_miss_curve(rate, 4, C, D, share), SC_EINVAL);
  ck_assert_int_eq(sc_cache_miss_curve(NULL, 4, C, D, share), SC_EINVAL);
}
END_TEST

START_TEST(gemm_exposure_header) {
  sc_sample_set set;
  sc_error err;
  const char *path = SC_SOURCE_DIR "/docs/validation/host-cpu-zen4/samples.csv";
  ck_assert_msg(sc_samples_read(path, &set, &err) == SC_OK, "%s", err.msg);
  const char *sg = sc_samples_meta(&set, "micro.sgemm");
  const char *ge = sc_samples_meta(&set, "micro.gemm_exposed");
  ck_assert(sg != NULL && ge != NULL);
  double tb = 0, f[4], ws[4], t[4], p = 0, x = 0, k = 0;
  const char *m = strstr(sg, "median ");
  ck_assert(m != NULL && sscanf(m, "median %lf s", &tb) == 1);
  const char *c = ge;
  for (int j = 0; j < 4; j++) {
    long long n = 0;
    double a, b, d;
    c = strstr(c, " n ");
    ck_assert_msg(c != NULL && sscanf(c, " n %lld: %lf, %lf, %lf s", &n, &a, &b, &d) == 4,
                  "size %d", j);
    c += 3;
    f[j] = 2.0 * 16 * (double)n * (double)n;
    ws[j] = 4.0 * (2.0 * 16 * (double)n + (double)n * (double)n);
    t[j] = med3(a, b, d);
  }
  ck_assert_int_eq(sc_gemm_exposure_solve(2.0 * 2048.0 * 2048 * 2048, 12.0 * 2048.0 * 2048, tb,
                                          f, ws, t, 4, &p, &x, &k),
                   SC_OK);
  const double want_p = atof(sc_samples_meta(&set, "micro.sgemm_flops_per_s"));
  const double want_x = atof(sc_samples_meta(&set, "micro.gemm_exposed_bw_Bps"));
  const double want_k = atof(sc_samples_meta(&set, "micro.gemm_exposed_knee_bytes"));
  ck_assert_msg(fabs(p / want_p - 1) < 0.01 && fabs(x / want_x - 1) < 0.02 &&
                    fabs(k / want_k - 1) < 0.02,
                "P %g (%g), X %g (%g), K %g (%g)", p, want_p, x, want_x, k, want_k);
  sc_samples_free(&set);
}
END_TEST

START_TEST(residuals_apply_linear) {
  sc_residuals *r = NULL;
  sc_estimate e;
  sc_error err;
  char dir[1024];
  double t;
  data_path(dir, sizeof dir, "resid_ok");
  sc_error_clear(&err);
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_str_eq(r->device, "test-dev");
  memset(&e, 0, sizeof e);
  e.time_s = 2.0;
  e.nfeatures = 1;
  e.features[0] = 5.0;
  /* residual = 0.1 + 0.2 * (5 - 1) / 2 = 0.5 */
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert_msg(fabs(t - 2.0 * exp(0.5)) < 1e-12, "%.15g", t);
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_ANALYTICAL, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert(t == 2.0);
  /* no learned model, no gemm model: the analytical time stays */
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_LEARNED, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert(t == 2.0);
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "gemm", &e, &t, &err) == SC_OK);
  ck_assert(t == 2.0);
  /* the derived features: log10 time, hinges at 1e5..1e8 bytes, compute bound */
  {
    sc_estimate e2;
    double x[SC_MAX_FEATURES], want[8] = {7.0, 8.0, -3.0, 2.0, 1.0, 0.0, 0.0, 1.0};
    memset(&e2, 0, sizeof e2);
    e2.nfeatures = 2;
    e2.features[0] = 7.0;
    e2.features[1] = 8.0;
    e2.time_s = 1e-3;
    e2.bytes = 1e7;
    e2.bound = SC_BOUND_COMPUTE;
    ck_assert_uint_eq(sc_resid_features(&e2, x), 8);
    for (int i = 0; i < 8; i++) ck_assert_msg(fabs(x[i] - want[i]) < 1e-12, "x[%d] = %g", i, x[i]);
    e2.nfeatures = SC_MAX_FEATURES; /* no room left: no extras */
    ck_assert_uint_eq(sc_resid_features(&e2, x), SC_MAX_FEATURES);
    ck_assert_str_eq(sc_resid_extra_name(0), "log10_analytical_s");
  }
  /* a plugin with another feature count is refused */
  e.nfeatures = 2;
  ck_assert_int_eq(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err), SC_EINVAL);
  ck_assert(strstr(err.msg, "stepcast fit") != NULL);
  sc_residuals_free(r);
}
END_TEST

/* A model with a sampled domain and beyond = "analytical": the model inside the analytical
 * times it was fitted on, the analytical time outside (below and above); saved and loaded
 * again, the domain and the choice stay. */
START_TEST(residuals_domain_beyond) {
  sc_residuals *r = NULL, *r2 = NULL;
  sc_estimate e;
  sc_error err;
  char dir[1024], out[] = "/tmp/sc_resid_domain_XXXXXX";
  double t;
  data_path(dir, sizeof dir, "resid_domain_ok");
  sc_error_clear(&err);
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert(r->models[0].beyond == 1);
  ck_assert(r->models[0].dom_lo == 1e-6 && r->models[0].dom_hi == 1e-3);
  memset(&e, 0, sizeof e);
  e.nfeatures = 1;
  e.features[0] = 5.0; /* residual 0.5 */
  e.time_s = 1e-4;
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert_msg(fabs(t - 1e-4 * exp(0.5)) < 1e-15, "%.15g", t);
  e.time_s = 2e-3; /* above the domain */
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert(t == 2e-3);
  e.time_s = 5e-7; /* below it */
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert(t == 5e-7);
  ck_assert(sc_resid_in_domain(&r->models[0], 1e-3) && !sc_resid_in_domain(&r->models[0], 1.1e-3));
  /* beyond = "model": the model everywhere */
  r->models[0].beyond = 0;
  e.time_s = 2e-3;
  ck_assert(sc_residuals_apply(r, SC_ESTIMATOR_HYBRID, "memcpy", &e, &t, &err) == SC_OK);
  ck_assert_msg(fabs(t - 2e-3 * exp(0.5)) < 1e-15, "%.15g", t);
  r->models[0].beyond = 1;
  { /* the round trip */
    const char *names[1] = {"\"log10_bytes\", \"log10_analytical_s\", \"hinge_log10_bytes_5\", "
                            "\"hinge_log10_bytes_6\", \"hinge_log10_bytes_7\", "
                            "\"hinge_log10_bytes_8\", \"compute_bound\""};
    ck_assert(mkdtemp(out) != NULL);
    ck_assert_msg(sc_residuals_save(out, "test-dev", NULL, r->models, 1, names, "test", &err) == SC_OK,
                  "%s", err.msg);
    ck_assert_msg(sc_residuals_load(out, &r2, &err) == SC_OK, "%s", err.msg);
    ck_assert(r2->models[0].beyond == 1);
    ck_assert(r2->models[0].dom_lo == 1e-6 && r2->models[0].dom_hi == 1e-3);
    char path[1100];
    snprintf(path, sizeof path, "%s/residuals.toml", out);
    remove(path);
    rmdir(out);
  }
  sc_residuals_free(r);
  sc_residuals_free(r2);
}
END_TEST

START_TEST(residuals_malformed) {
  static const struct { const char *dir, *what; int code; } cases[] = {
      {"resid_bad_kind", "residuals.toml:6:8: key 'kind'", SC_ESPEC},
      {"resid_bad_vec", "key 'mean': must be an array of 1 numbers", SC_ESPEC},
      {"resid_missing_gbdt", "absent.json", SC_EIO},
      {"resid_bad_json", "broken.json", SC_EIO},
      {"resid_unknown_key", "key 'colour': unknown key", SC_ESPEC},
      {"resid_two_active", "two active models", SC_ESPEC},
      {"resid_bad_range_len", "residuals.toml:12:16: key 'target_range': must be [low, high]",
       SC_ESPEC},
      {"resid_bad_range_order", "key 'target_range': must be [low, high] with low <= high",
       SC_ESPEC},
      {"resid_unknown_top", "residuals.toml:4:1: key 'samples': unknown key (residuals.toml has "
       "device, stack, models and [[model]] tables)", SC_ESPEC},
      {"resid_cut_short", "residuals.toml:4:10: key 'models': says 2 [[model]] tables, the "
       "file has 1 (cut short?)", SC_ESPEC},
      {"resid_no_active", "residuals.toml:4:1: key 'active': missing required key", SC_ESPEC},
      {"resid_bad_mape", "residuals.toml:10:11: key 'cv_mape': must be >= 0", SC_ESPEC},
      {"resid_no_range", "key 'target_range': missing required key in a hybrid linear",
       SC_ESPEC},
      {"resid_bad_feature_name", "residuals.toml:9:13: key 'features': every entry must be a "
       "feature name", SC_ESPEC},
      {"resid_bad_unread", "residuals.toml:10:33: key 'unread': every entry must be one of "
       "the model's 'features'", SC_ESPEC},
      {"resid_bad_beyond", "residuals.toml:18:10: key 'beyond': must be \"model\" or "
       "\"analytical\"", SC_ESPEC},
      {"resid_beyond_no_domain", "key 'beyond': \"analytical\" needs domain_analytical_s",
       SC_ESPEC},
      {"resid_bad_domain", "residuals.toml:17:23: key 'domain_analytical_s': must be [low, "
       "high] with 0 < low <= high", SC_ESPEC},
      {"resid_bad_probe_pair", "residuals.toml:18:13: key 'probe_ops': probe_ops and "
       "probe_analytical_s go together", SC_ESPEC},
      {"resid_bad_probe_op", "residuals.toml:18:14: key 'probe_ops': every entry must read "
       "\"variant dtype AxBx...\"", SC_ESPEC},
      {"resid_bad_probe_len", "residuals.toml:19:22: key 'probe_analytical_s': must be an "
       "array of one time a probe_ops entry", SC_ESPEC},
      {"resid_bad_probe_time", "residuals.toml:19:23: key 'probe_analytical_s': every time must "
       "be > 0 seconds", SC_ESPEC},
      {"no_such_dir", "residuals.toml", SC_ENOTFOUND},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sc_residuals *r = NULL;
    sc_error err;
    char dir[1024];
    data_path(dir, sizeof dir, cases[i].dir);
    sc_error_clear(&err);
    ck_assert_int_eq(sc_residuals_load(dir, &r, &err), cases[i].code);
    ck_assert_msg(strstr(err.msg, cases[i].what) != NULL, "%s: %s", cases[i].dir, err.msg);
    ck_assert(r == NULL);
  }
}
END_TEST

/* sc_residuals_check: the device the models were fitted for, and each model's features
 * against its operator plugin's, in order (the builtin memcpy plugin: log10_bytes). */
START_TEST(residuals_check_against_plugins) {
  sc_registry *reg = NULL;
  sc_residuals *r = NULL;
  sc_error err;
  char dir[1024];
  sc_error_clear(&err);
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
  data_path(dir, sizeof dir, "resid_ok");
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_residuals_check(r, "test-dev", reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_residuals_check(r, NULL, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(sc_residuals_check(r, "other-dev", reg, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "residuals.toml:3:10: key 'device': the models were fitted for "
                       "device 'test-dev', not 'other-dev'") != NULL, "%s", err.msg);
  /* one feature fewer than the plugin gives */
  r->models[0].nfeatures = 6;
  ck_assert_int_eq(sc_residuals_check(r, "test-dev", reg, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "residuals.toml:10:12: key 'features': the memcpy hybrid model "
                       "has 6 features, operator plugin 'memcpy'") != NULL, "%s", err.msg);
  sc_residuals_free(r);
  r = NULL;
  data_path(dir, sizeof dir, "resid_wrong_features");
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(sc_residuals_check(r, "test-dev", reg, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "key 'features': feature 3 of the memcpy hybrid model is "
                       "'hinge_log10_bytes_6', operator plugin 'memcpy'") != NULL, "%s", err.msg);
  ck_assert(strstr(err.msg, "gives 'hinge_log10_bytes_5' there (refit with stepcast fit)") != NULL);
  /* a family no plugin serves is never applied: left alone */
  snprintf(r->models[0].family, sizeof r->models[0].family, "no-such-family");
  ck_assert_msg(sc_residuals_check(r, "test-dev", reg, &err) == SC_OK, "%s", err.msg);
  sc_residuals_free(r);
  sc_registry_free(reg);
}
END_TEST

/* Remove what sc_residuals_save wrote into dir (residuals.toml and the tree file gbdt), and
 * dir. */
static void remove_saved(const char *dir, const char *gbdt) {
  char path[160];
  snprintf(path, sizeof path, "%s/residuals.toml", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/%s", dir, gbdt);
  remove(path);
  rmdir(dir);
}

START_TEST(residuals_dir_and_save) {
  char out[256], dir[64];
  sc_error err;
  sc_resid_model ms[2];
  sc_residuals *r = NULL;
  double X[40], y[40], a, b;
  const char *names[2] = {"\"log10_bytes\"", "\"log10_bytes\""};
  sc_error_clear(&err);
  ck_assert(sc_residuals_dir("hardware/host-cpu.toml", "host-cpu", out, sizeof out, &err) == SC_OK);
  ck_assert_str_eq(out, "hardware/host-cpu/residuals");
  ck_assert(sc_residuals_dir("host-cpu.toml", "host-cpu", out, sizeof out, &err) == SC_OK);
  ck_assert_str_eq(out, "host-cpu/residuals");
  ck_assert_int_eq(sc_residuals_dir("a/b.toml", "x", out, 8, &err), SC_ERANGE);
  /* save a linear and a gbdt model, load them back: same predictions */
  for (int i = 0; i < 40; i++) {
    X[i] = i * 0.25;
    y[i] = 0.3 - 0.05 * X[i];
  }
  memset(ms, 0, sizeof ms);
  for (int k = 0; k < 2; k++) {
    snprintf(ms[k].family, sizeof ms[k].family, "memcpy");
    ms[k].kind = k ? SC_RESID_GBDT : SC_RESID_LINEAR;
    ms[k].target = k ? SC_TARGET_LEARNED : SC_TARGET_HYBRID;
    ms[k].nfeatures = 1;
    ms[k].active = 1;
    ck_assert_msg(sc_resid_fit(&ms[k], X, y, 40, NULL, &err) == SC_OK, "%s", err.msg);
  }
  tmpdir(dir, sizeof dir);
  ck_assert_msg(sc_residuals_save(dir, "dev-x", NULL, ms, 2, names, "line one\nline two", &err) == SC_OK,
                "%s", err.msg);
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(r->n, 2);
  for (int k = 0; k < 2; k++) {
    double x = 3.3;
    ck_assert(sc_resid_predict(&ms[k], &x, &a, &err) == SC_OK);
    ck_assert(sc_resid_predict(&r->models[k], &x, &b, &err) == SC_OK);
    ck_assert_msg(fabs(a - b) <= 1e-15 * fabs(a) + 1e-300 || a == b, "%d: %.17g %.17g", k, a, b);
  }
  { /* a hybrid linear model never corrects past the residuals it was fitted on (-0.1875 ..
     * 0.3), before and after the round trip; a learned linear one extrapolates */
    double x = 100.0, lo = 0.3 - 0.05 * 39 * 0.25;
    ck_assert(sc_resid_predict(&ms[0], &x, &a, &err) == SC_OK);
    ck_assert(sc_resid_predict(&r->models[0], &x, &b, &err) == SC_OK);
    ck_assert_msg(fabs(a - lo) < 1e-12 && fabs(b - lo) < 1e-12, "%.17g %.17g", a, b);
    x = -100.0;
    ck_assert(sc_resid_predict(&r->models[0], &x, &b, &err) == SC_OK);
    ck_assert_msg(fabs(b - 0.3) < 1e-12, "%.17g", b);
    sc_resid_model lm = ms[0];
    lm.target = SC_TARGET_LEARNED;
    lm.booster = NULL;
    ck_assert(sc_resid_fit(&lm, X, y, 40, NULL, &err) == SC_OK);
    x = 100.0;
    ck_assert(sc_resid_predict(&lm, &x, &a, &err) == SC_OK);
    ck_assert_msg(a < -4.0, "learned linear at x = 100: %g", a);
  }
  sc_residuals_free(r);
  for (int k = 0; k < 2; k++) sc_resid_model_free(&ms[k]);
  remove_saved(dir, "memcpy.learned.gbdt.json");
}
END_TEST

/* A model's unread features (a hybrid residual's scale features): held at 0 when fitting
 * and predicting, whatever value they come with; linear coefficient 0 there; kept through
 * residuals.toml by name; a model to be saved with them needs its feature names. */
START_TEST(residuals_unread_features) {
  enum { N = 60 };
  double X[2 * N], y[N], a, b;
  sc_resid_model ms[2];
  sc_residuals *r = NULL;
  sc_error err;
  char dir[64];
  const char *names[2] = {"\"shape\", \"scale\"", "\"shape\", \"scale\""};
  sc_error_clear(&err);
  for (int i = 0; i < N; i++) { /* y depends on both; the scale column is left unread */
    X[2 * i] = (i % 6) * 0.5;
    X[2 * i + 1] = i * 0.1;
    y[i] = 0.1 * X[2 * i] + 0.02 * X[2 * i + 1];
  }
  memset(ms, 0, sizeof ms);
  for (int k = 0; k < 2; k++) {
    snprintf(ms[k].family, sizeof ms[k].family, "memcpy");
    ms[k].kind = k ? SC_RESID_GBDT : SC_RESID_LINEAR;
    ms[k].target = SC_TARGET_HYBRID;
    ms[k].nfeatures = 2;
    ms[k].unread = SC_FEATURE(1);
    ms[k].active = k == 0;
    ck_assert_msg(sc_resid_fit(&ms[k], X, y, N, NULL, &err) == SC_OK, "%s", err.msg);
    double x1[2] = {1.5, -40.0}, x2[2] = {1.5, 400.0};
    ck_assert(sc_resid_predict(&ms[k], x1, &a, &err) == SC_OK);
    ck_assert(sc_resid_predict(&ms[k], x2, &b, &err) == SC_OK);
    ck_assert_msg(a == b, "kind %d: %.17g vs %.17g", k, a, b);
  }
  ck_assert(ms[0].coef[1] == 0.0 && ms[0].mean[1] == 0.0 && ms[0].scale[1] == 1.0);
  ck_assert_msg(fabs(ms[0].coef[0]) > 0.01, "%g", ms[0].coef[0]); /* the shape one is read */
  /* saving needs the names of the unread features */
  tmpdir(dir, sizeof dir);
  ck_assert_int_eq(sc_residuals_save(dir, "dev-x", NULL, ms, 2, names, "unread", &err), SC_EINVAL);
  ck_assert_msg(strstr(err.msg, "unread feature 1 has no name") != NULL, "%s", err.msg);
  for (int k = 0; k < 2; k++) {
    snprintf(ms[k].feature_names[0], sizeof ms[k].feature_names[0], "shape");
    snprintf(ms[k].feature_names[1], sizeof ms[k].feature_names[1], "scale");
  }
  ck_assert_msg(sc_residuals_save(dir, "dev-x", NULL, ms, 2, names, "unread", &err) == SC_OK, "%s",
                err.msg);
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(r->n, 2);
  for (int k = 0; k < 2; k++) {
    double x[2] = {2.0, 123.0};
    ck_assert_uint_eq(r->models[k].unread, SC_FEATURE(1));
    ck_assert(sc_resid_predict(&ms[k], x, &a, &err) == SC_OK);
    ck_assert(sc_resid_predict(&r->models[k], x, &b, &err) == SC_OK);
    ck_assert_msg(fabs(a - b) <= 1e-15 * fabs(a) || a == b, "%d: %.17g %.17g", k, a, b);
  }
  sc_residuals_free(r);
  for (int k = 0; k < 2; k++) sc_resid_model_free(&ms[k]);
  remove_saved(dir, "memcpy.hybrid.gbdt.json");
}
END_TEST

/* The scale features of an operator plugin's regressor inputs: the plugin's own bits, then
 * the analytical time and the byte hinges; a descriptor of ABI 1.0 (too small to hold
 * scale_features) states none of its own. */
START_TEST(resid_scale_mask) {
  sc_registry *reg = NULL;
  sc_error err;
  sc_error_clear(&err);
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
  const sc_op_plugin *gemm = sc_registry_op(reg, SC_OP_GEMM);
  ck_assert(gemm != NULL);
  uint32_t mask = sc_resid_scale_mask(gemm);
  for (uint32_t j = 0; j < sc_resid_nfeatures(gemm); j++) {
    const char *nm = sc_resid_feature_name(gemm, j);
    int scale = strncmp(nm, "log10_flops", 11) == 0 || strcmp(nm, "log10_bytes") == 0 ||
                strcmp(nm, "log2_m") == 0 || strcmp(nm, "log2_n") == 0 ||
                strcmp(nm, "log2_k") == 0 || strcmp(nm, "waves") == 0 ||
                strcmp(nm, "log10_analytical_s") == 0 || strncmp(nm, "hinge_", 6) == 0;
    ck_assert_msg(!!(mask & SC_FEATURE(j)) == scale, "gemm feature %u (%s)", j, nm);
  }
  sc_op_plugin old = *gemm;
  old.hdr.size = (uint32_t)SC_OP_PLUGIN_MIN_SIZE;
  ck_assert_uint_eq(sc_op_scale_features(&old), 0);
  ck_assert_uint_eq(sc_op_scale_features(gemm), gemm->scale_features);
  ck_assert_uint_eq(sc_resid_scale_mask(&old), mask & ~gemm->scale_features);
  sc_registry_free(reg);
}
END_TEST

/* ---- hybrid and learned inside sc_predict ---------------------------------------- */

static const char *const all_families[] = {SC_OP_GEMM, SC_OP_ATTENTION, SC_OP_NORM,
                                           SC_OP_ELEMENTWISE, SC_OP_SOFTMAX, SC_OP_EMBEDDING,
                                           SC_OP_CROSS_ENTROPY, SC_OP_OPTIMIZER, SC_OP_MEMCPY};

/* Residuals whose hybrid model is the constant log(factor) for the families listed. */
static void constant_residuals(sc_registry *reg, sc_residuals *r, sc_resid_model *ms,
                               const char *const *fams, size_t nf, double factor) {
  memset(r, 0, sizeof *r);
  snprintf(r->device, sizeof r->device, "test");
  for (size_t i = 0; i < nf; i++) {
    const sc_op_plugin *op = sc_registry_op(reg, fams[i]);
    ck_assert(op != NULL);
    memset(&ms[i], 0, sizeof ms[i]);
    snprintf(ms[i].family, sizeof ms[i].family, "%s", fams[i]);
    ms[i].kind = SC_RESID_LINEAR;
    ms[i].target = SC_TARGET_HYBRID;
    ms[i].nfeatures = op->nfeatures + SC_RESID_EXTRA_FEATURES;
    ck_assert(ms[i].nfeatures <= SC_MAX_FEATURES);
    for (uint32_t j = 0; j < ms[i].nfeatures; j++) ms[i].scale[j] = 1.0;
    ms[i].intercept = log(factor);
    ms[i].active = 1;
  }
  r->models = ms;
  r->n = nf;
}

static double term(const sc_result *res, const char *key) {
  sc_report_term t[64];
  size_t n = sc_report_terms(&res->breakdown, t, 64);
  for (size_t i = 0; i < n && i < 64; i++)
    if (strcmp(t[i].key, key) == 0) return t[i].seconds;
  return -1.0;
}

/* A collective's regressor inputs: log10 bytes, log2 ranks, log2 nodes (ranks over the
 * members per node, tier 0's fan-out; 1 node inside a node), then the extra ones; the
 * names are what stepcast fit --comm writes and comm --estimator checks. */
START_TEST(collective_features) {
  sc_coll_desc c;
  sc_estimate an, in;
  double x[SC_MAX_FEATURES];
  memset(&c, 0, sizeof c);
  memset(&an, 0, sizeof an);
  c.kind = SC_COLL_ALLREDUCE;
  c.bytes = 1048576.0;
  c.nranks = 32;
  c.ntiers = 2;
  c.tiers[0].ranks = 8;
  c.tiers[1].ranks = 4;
  an.time_s = 1e-4;
  an.bytes = 3.0 * 1048576.0; /* the plugin's traffic: replaced by the message */
  an.nfeatures = 2;
  sc_coll_resid_input(&c, &an, &in);
  ck_assert_uint_eq(sc_resid_features(&in, x), sc_coll_resid_nfeatures());
  ck_assert_uint_eq(sc_coll_resid_nfeatures(), 9);
  ck_assert_double_eq_tol(x[0], log10(1048576.0), 1e-12);
  ck_assert_double_eq_tol(x[1], 5.0, 1e-12);
  ck_assert_double_eq_tol(x[2], 2.0, 1e-12);
  ck_assert_double_eq_tol(x[3], -4.0, 1e-12); /* log10 of the analytical time */
  ck_assert_double_eq_tol(x[4], log10(1048576.0) - 5.0, 1e-12);
  ck_assert_str_eq(sc_coll_resid_feature_name(2), "log2_nodes");
  ck_assert_str_eq(sc_coll_resid_feature_name(3), "log10_analytical_s");
  c.nranks = 4; /* inside one node */
  c.tiers[0].ranks = 4;
  c.tiers[1].ranks = 1;
  sc_coll_resid_input(&c, &an, &in);
  ck_assert_double_eq_tol(in.features[2], 0.0, 1e-12);
  ck_assert_double_eq(in.time_s, 1e-4);
}
END_TEST

/* sc_residuals_check_roofline: a probe priced as at the fit passes, one the roofline now
 * prices otherwise is refused naming the file, the line and both times; inactive models are
 * not checked; the probes survive a save and a load. */
START_TEST(residuals_check_roofline) {
  sc_registry *reg = NULL;
  sc_residuals *r = NULL, *back = NULL;
  sc_device dev;
  sc_estimate e;
  sc_error err;
  char dir[1024], out[] = "/tmp/sc_test_probes_XXXXXX";
  sc_error_clear(&err);
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
  ck_assert_msg(sc_hardware_load(reg, "a100-sxm4-80gb", &dev, &err) == SC_OK, "%s", err.msg);
  data_path(dir, sizeof dir, "resid_ok");
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  sc_resid_model *m = &r->models[0]; /* memcpy, active */
  ck_assert(m->active);
  ck_assert_uint_eq(m->nprobes, 0);
  ck_assert_msg(sc_residuals_check_roofline(r, reg, &dev, &err) == SC_OK, "%s", err.msg);
  sc_op_desc op = {SC_OP_MEMCPY, SC_MEMCPY_COPY, SC_DTYPE_BF16, 1, {1 << 24}, 0};
  ck_assert(sc_registry_estimate_op(reg, &dev, &op, &e, &err) == SC_OK);
  m->nprobes = 1;
  m->probe[0] = op;
  m->probe[0].family = NULL;
  m->probe_s[0] = e.time_s;
  m->probe_line = 7;
  m->probe_col = 3;
  ck_assert_msg(sc_residuals_check_roofline(r, reg, &dev, &err) == SC_OK, "%s", err.msg);
  dev.mem_efficiency *= 0.5; /* the hardware file changed */
  ck_assert_int_eq(sc_residuals_check_roofline(r, reg, &dev, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "residuals.toml:7:3: key 'probe_analytical_s': memcpy 0 bf16 "
                       "16777216: the roofline now gives ") != NULL, "%s", err.msg);
  m->active = 0; /* never applied: not checked */
  ck_assert_msg(sc_residuals_check_roofline(r, reg, &dev, &err) == SC_OK, "%s", err.msg);
  m->active = 1;
  /* save and load: the probes come back as written */
  ck_assert(mkdtemp(out) != NULL);
  char list[SC_MAX_FEATURES * (SC_RESID_NAME_MAX + 4)] = "";
  for (uint32_t j = 0; j < m->nfeatures; j++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", j ? ", " : "",
             m->feature_names[j]);
  const char *names[] = {list};
  ck_assert_msg(sc_residuals_save(out, "test-dev", NULL, r->models, 1, names, "probes", &err) ==
                    SC_OK, "%s", err.msg);
  ck_assert_msg(sc_residuals_load(out, &back, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(back->models[0].nprobes, 1);
  ck_assert_uint_eq(back->models[0].probe[0].ndims, 1);
  ck_assert_int_eq(back->models[0].probe[0].dims[0], 1 << 24);
  ck_assert_int_eq(back->models[0].probe[0].dtype, SC_DTYPE_BF16);
  ck_assert(back->models[0].probe_s[0] == e.time_s);
  sc_residuals_free(back);
  char path[1100];
  snprintf(path, sizeof path, "%s/residuals.toml", out);
  remove(path);
  rmdir(out);
  sc_residuals_free(r);
  sc_registry_free(reg);
}
END_TEST

START_TEST(predict_hybrid_factor) {
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_topology topo;
  sc_device dev;
  sc_model m;
  sc_parallel p;
  sc_predict_opts o;
  sc_result ra, rh, rg, ra2;
  sc_residuals r;
  sc_resid_model ms[9];
  sc_error err;
  sc_error_clear(&err);
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
  ck_assert_msg(sc_topology_load("dgx-a100-superpod", &topo, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(reg, topo.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_model_load("gpt3-125m", &m, &err) == SC_OK, "%s", err.msg);
  ck_assert(sc_predictor_new(reg, &pr, &err) == SC_OK);
  /* one GPU: no communication, so the iteration is compute + optimizer only */
  sc_parallel_defaults(&p);
  p.micro_batch = 1;
  p.global_batch = 2;
  p.seq_len = 1024;
  sc_predict_opts_defaults(&o);
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &ra, NULL, &err) == SC_OK, "%s", err.msg);

  /* hybrid without residuals keeps the clear error */
  o.estimator = SC_ESTIMATOR_HYBRID;
  ck_assert_int_eq(sc_predict(pr, &m, &topo, &dev, &p, &o, &rh, NULL, &err), SC_EUNSUPPORTED);
  ck_assert(strstr(err.msg, "no fitted residual models") != NULL);

  /* every family x1.25: the iteration is exactly 1.25x */
  constant_residuals(reg, &r, ms, all_families, 9, 1.25);
  o.residuals = &r;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &rh, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(fabs(rh.iteration_s / ra.iteration_s - 1.25) < 1e-12, "%.15g / %.15g",
                rh.iteration_s, ra.iteration_s);
  ck_assert_str_eq(rh.estimator, "hybrid");

  /* gemm alone x1.25: its compute term scales by 1.25, attention's does not move */
  constant_residuals(reg, &r, ms, all_families, 1, 1.25);
  ck_assert(sc_predict(pr, &m, &topo, &dev, &p, &o, &rg, NULL, &err) == SC_OK);
  ck_assert(term(&ra, "compute.gemm") > 0 && term(&ra, "compute.attention") > 0);
  ck_assert_msg(fabs(term(&rg, "compute.gemm") / term(&ra, "compute.gemm") - 1.25) < 1e-12, "%g",
                term(&rg, "compute.gemm") / term(&ra, "compute.gemm"));
  ck_assert(term(&rg, "compute.attention") == term(&ra, "compute.attention"));

  /* analytical with residuals attached: bit-identical to analytical without */
  o.estimator = SC_ESTIMATOR_ANALYTICAL;
  ck_assert(sc_predict(pr, &m, &topo, &dev, &p, &o, &ra2, NULL, &err) == SC_OK);
  ck_assert(ra2.iteration_s == ra.iteration_s);

  /* a model with the wrong feature count is an error, not a silent number */
  ms[0].nfeatures = 1;
  o.estimator = SC_ESTIMATOR_HYBRID;
  ck_assert_int_eq(sc_predict(pr, &m, &topo, &dev, &p, &o, &rh, NULL, &err), SC_EINVAL);
  ck_assert(strstr(err.msg, "gemm") != NULL);

  sc_predictor_free(pr);
  sc_registry_free(reg);
}
END_TEST

/* Learned: a constant model exp(y) = 1 us for every gemm makes each GEMM 1 us. */
START_TEST(predict_learned_constant) {
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_topology topo;
  sc_device dev;
  sc_model m;
  sc_parallel p;
  sc_predict_opts o;
  sc_result ra, rl, r2;
  sc_residuals r;
  sc_resid_model ms[1];
  sc_error err;
  sc_error_clear(&err);
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
  ck_assert(sc_topology_load("dgx-a100-superpod", &topo, &err) == SC_OK);
  ck_assert(sc_hardware_load(reg, topo.hardware, &dev, &err) == SC_OK);
  ck_assert(sc_model_load("gpt3-125m", &m, &err) == SC_OK);
  ck_assert(sc_predictor_new(reg, &pr, &err) == SC_OK);
  sc_parallel_defaults(&p);
  p.micro_batch = 1;
  p.global_batch = 1;
  p.seq_len = 1024;
  sc_predict_opts_defaults(&o);
  ck_assert(sc_predict(pr, &m, &topo, &dev, &p, &o, &ra, NULL, &err) == SC_OK);
  constant_residuals(reg, &r, ms, all_families, 1, 1e-6);
  ms[0].target = SC_TARGET_LEARNED;
  o.residuals = &r;
  o.estimator = SC_ESTIMATOR_LEARNED;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &rl, NULL, &err) == SC_OK, "%s", err.msg);
  /* GPT per layer: fwd qkv, proj, fc1, fc2 (4) + bwd dgrad and wgrad of each (8) = 12
   * GEMMs, 12 layers; plus the logits GEMM forward, dgrad, wgrad: 147 GEMMs of 1 us */
  ck_assert_msg(fabs(term(&rl, "compute.gemm") - 147e-6) < 1e-15, "%.9g", term(&rl, "compute.gemm"));
  ck_assert(term(&rl, "compute.attention") == term(&ra, "compute.attention"));
  /* hybrid has no model here: every family stays analytical */
  o.estimator = SC_ESTIMATOR_HYBRID;
  ck_assert(sc_predict(pr, &m, &topo, &dev, &p, &o, &r2, NULL, &err) == SC_OK);
  ck_assert(r2.iteration_s == ra.iteration_s);
  sc_predictor_free(pr);
  sc_registry_free(reg);
}
END_TEST

static Suite *estimate_suite(void) {
  Suite *s = suite_create("estimate");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ridge_recovers_coefficients);
  tcase_add_test(tc, ridge_errors);
  tcase_add_test(tc, gbdt_json_round_trip);
  tcase_add_test(tc, samples_read_good);
  tcase_add_test(tc, samples_read_malformed);
  tcase_add_test(tc, samples_write_read);
  tcase_add_test(tc, samples_read_groups);
  tcase_add_test(tc, samples_read_group_errors);
  tcase_add_test(tc, samples_read_seed_table);
  tcase_add_test(tc, gemm_exposure_solve);
  tcase_add_test(tc, cache_miss_curve);
  tcase_add_test(tc, gemm_exposure_header);
  tcase_add_test(tc, residuals_apply_linear);
  tcase_add_test(tc, residuals_malformed);
  tcase_add_test(tc, residuals_domain_beyond);
  tcase_add_test(tc, residuals_check_against_plugins);
  tcase_add_test(tc, residuals_check_roofline);
  tcase_add_test(tc, residuals_dir_and_save);
  tcase_add_test(tc, residuals_unread_features);
  tcase_add_test(tc, resid_scale_mask);
  tcase_add_test(tc, collective_features);
  tcase_add_test(tc, predict_hybrid_factor);
  tcase_add_test(tc, predict_learned_constant);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(estimate_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
