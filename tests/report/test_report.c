/* Report renderers: derived metrics against hand values, and every rendering parsed back
 * (JSON and the trace with cJSON and python3 -m json.tool, CSV by a quote-aware splitter,
 * SVG with expat). */
#include <check.h>
#include <cjson/cJSON.h>
#include <expat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/stepcast.h"

#define ck_close(got, want, rel)                                                           \
  ck_assert_msg(fabs((got) - (want)) <= (rel) * fabs(want), "%s = %.17g, want %.17g", #got, \
                (double)(got), (double)(want))

static sc_sched_workspace *ws;
static sc_sched_result sched;
static sc_result res;
/* a name that needs escaping everywhere: quote, backslash, comma, newline, tab, <, & */
static const char *const NASTY = "gpt \"x\"\\y, <a&b>\n\tz\x01";

/* 1F1B, pp = 2, m = 4, f = 1 ms, b = 2 ms: T = (m + p - 1)(f + b) = 15 ms.
 * tp = 2, dp = 2: 8 GPUs; global batch 8 = micro 1 * dp 2 * m 4; seq 2048. */
static void setup(void) {
  sc_error err;
  ck_assert_int_eq(sc_sched_workspace_new(&ws, &err), SC_OK);
  static sc_sched_chunk c[2];
  static double split[2][2][2];
  static const char *const fam[] = {"gemm", "attention"};
  memset(c, 0, sizeof c);
  for (int g = 0; g < 2; g++) {
    c[g].fwd_s = 1e-3;
    c[g].bwd_s = 2e-3;
    split[g][0][0] = 0.75e-3;
    split[g][0][1] = 0.25e-3;
    split[g][1][0] = 1.5e-3;
    split[g][1][1] = 0.5e-3;
    c[g].fwd_family_s = split[g][0];
    c[g].bwd_family_s = split[g][1];
  }
  sc_sched_input in;
  memset(&in, 0, sizeof in);
  in.kind = SC_SCHED_1F1B;
  in.pp = 2;
  in.vp = 1;
  in.microbatches = 4;
  in.chunks = c;
  in.nfamilies = 2;
  in.family_names = fam;
  in.record_timeline = 1;
  ck_assert_int_eq(sc_schedule_run(ws, &in, &sched, &err), SC_OK);

  memset(&res, 0, sizeof res);
  snprintf(res.model, sizeof res.model, "%s", NASTY);
  snprintf(res.topology, sizeof res.topology, "dgx-a100-superpod");
  snprintf(res.hardware, sizeof res.hardware, "a100-sxm4-80gb");
  snprintf(res.estimator, sizeof res.estimator, "analytical");
  sc_parallel_defaults(&res.parallel);
  res.parallel.tp = 2;
  res.parallel.pp = 2;
  res.parallel.dp = 2;
  res.parallel.global_batch = 8;
  res.parallel.seq_len = 2048;
  res.gpus = 8;
  res.iteration_s = sched.iteration_s;
  res.breakdown = sched.breakdown;
  res.model_flops = 1.2e13;    /* 1.2e13 / (8 * 0.015 s) = 100 TFLOP/s per GPU */
  res.hardware_flops = 1.6e13; /* 133.33 TFLOP/s */
  res.peak_flops_per_s = 312e12;
  res.memory.weights_bytes = 4e9;
  res.memory.grads_bytes = 4e9;
  res.memory.optimizer_bytes = 24e9;
  res.memory.activations_bytes = 20e9;
  res.memory.other_bytes = 2e9;
  res.memory.capacity_bytes = 80e9;
  res.token_budget = 1e9;
  ck_assert_int_eq(sc_result_finish(&res, &err), SC_OK);
}
static void teardown(void) { sc_sched_workspace_free(ws); }

/* Render into a memory buffer (open_memstream); caller frees. */
static char *render(int which, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  ck_assert_ptr_nonnull(f);
  sc_error err;
  int rc = -1;
  switch (which) {
  case 0: rc = sc_report_table(f, &res, &err); break;
  case 1: rc = sc_report_json(f, &res, &err); break;
  case 2: rc = sc_report_csv(f, &res, &err); break;
  case 3: rc = sc_report_trace(f, &sched, &res, &err); break;
  case 4: rc = sc_report_svg(f, &res, &err); break;
  }
  ck_assert_msg(rc == SC_OK, "render %d: %s", which, err.msg);
  fclose(f);
  if (len) *len = n;
  return buf;
}

/* python3 -m json.tool on the text, when python3 is there (1 ok, 0 invalid, -1 absent). */
static int python_json_ok(const char *text, const char *tag) {
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) return -1;
  const char *dir = getenv("SC_REPORT_OUT");
  char path[1024];
  snprintf(path, sizeof path, "%s/report_%s_%d.json", dir ? dir : "/tmp", tag, (int)getpid());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s' >/dev/null", path);
  int ok = system(cmd) == 0;
  remove(path);
  return ok;
}

START_TEST(derived) {
  ck_close(res.iteration_s, 0.015, 1e-12);
  ck_assert_uint_eq(res.microbatches, 4);
  ck_close(res.tokens_per_iteration, 16384.0, 1e-15);
  ck_close(res.tokens_per_s, 16384.0 / 0.015, 1e-12);
  ck_close(res.model_tflops_per_gpu, 100.0, 1e-12);
  ck_close(res.hardware_tflops_per_gpu, 1.6e13 / 0.12 / 1e12, 1e-12);
  ck_close(res.mfu, 100.0 / 312.0, 1e-12);
  ck_close(res.hfu, (1.6e13 / 0.12) / 312e12, 1e-12);
  ck_close(res.memory.total_bytes, 54e9, 1e-15);
  ck_close(res.time_to_train_s, 1e9 / (16384.0 / 0.015), 1e-12);
  sc_report_term t[32];
  size_t n = sc_report_terms(&res.breakdown, t, 32);
  ck_assert_uint_eq(n, 2 + 6);
  ck_assert_str_eq(t[0].key, "compute.gemm");
  ck_close(t[0].seconds, 4 * (0.75e-3 + 1.5e-3), 1e-12);
  ck_assert_str_eq(t[6].key, "bubble");
  ck_close(t[6].seconds, 1 * 3e-3, 1e-12); /* (p-1)(f+b) */
}
END_TEST

START_TEST(table) {
  char *s = render(0, NULL);
  ck_assert_ptr_nonnull(strstr(s, "iteration time"));
  ck_assert_ptr_nonnull(strstr(s, "15.000 ms"));
  ck_assert_ptr_nonnull(strstr(s, "100.0 TFLOP/s"));
  ck_assert_ptr_nonnull(strstr(s, "compute: gemm"));
  ck_assert_ptr_nonnull(strstr(s, "pipeline bubble"));
  ck_assert_ptr_nonnull(strstr(s, "fits"));
  free(s);
}
END_TEST

START_TEST(json) {
  char *s = render(1, NULL);
  cJSON *j = cJSON_Parse(s);
  ck_assert_msg(j != NULL, "cJSON could not parse:\n%s", s);
  ck_assert_int_eq(cJSON_GetObjectItem(j, "schema_version")->valueint, 1);
  ck_close(cJSON_GetObjectItem(j, "iteration_s")->valuedouble, 0.015, 1e-11);
  cJSON *in = cJSON_GetObjectItem(j, "inputs");
  ck_assert_str_eq(cJSON_GetObjectItem(in, "model")->valuestring, NASTY); /* escaping */
  ck_assert_str_eq(cJSON_GetObjectItem(in, "schedule")->valuestring, "1f1b");
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(in, "sequence_parallel")));
  cJSON *b = cJSON_GetObjectItem(j, "breakdown");
  double sum = 0;
  const char *keys[] = {"tp_exposed_s", "cp_exposed_s", "dp_exposed_s", "p2p_exposed_s",
                        "bubble_s", "optimizer_s"};
  for (size_t i = 0; i < 6; i++) sum += cJSON_GetObjectItem(b, keys[i])->valuedouble;
  cJSON *fam = cJSON_GetObjectItem(b, "compute_by_family_s");
  ck_assert_int_eq(cJSON_GetArraySize(fam), 2);
  for (cJSON *x = fam->child; x; x = x->next) sum += x->valuedouble;
  ck_close(sum, 0.015, 1e-11);
  cJSON *tp = cJSON_GetObjectItem(j, "throughput");
  ck_close(cJSON_GetObjectItem(tp, "mfu")->valuedouble, 100.0 / 312.0, 1e-11);
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "memory_per_gpu"), "fits")));
  cJSON_Delete(j);
  ck_assert_int_ne(python_json_ok(s, "json"), 0);
  free(s);
  /* non-finite numbers become null, not "inf" */
  res.peak_flops_per_s = 0;
  res.mfu = NAN;
  s = render(1, NULL);
  j = cJSON_Parse(s);
  ck_assert_ptr_nonnull(j);
  ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "throughput"), "mfu")));
  cJSON_Delete(j);
  free(s);
}
END_TEST

/* Split one CSV record (RFC 4180) and count its fields; p advances past the record. */
static size_t csv_fields(const char **p, char fields[][256], size_t cap) {
  size_t n = 0, k = 0;
  int q = 0;
  const char *s = *p;
  for (;; s++) {
    char c = *s;
    if (q) {
      if (c == '"' && s[1] == '"') {
        if (n < cap && k < 255) fields[n][k++] = '"';
        s++;
      } else if (c == '"') {
        q = 0;
      } else if (c == '\0') {
        break;
      } else if (n < cap && k < 255) {
        fields[n][k++] = c;
      }
      continue;
    }
    if (c == '"') {
      q = 1;
    } else if (c == ',' || c == '\n' || c == '\0') {
      if (n < cap) fields[n][k] = '\0';
      n++;
      k = 0;
      if (c != ',') break;
    } else if (n < cap && k < 255) {
      fields[n][k++] = c;
    }
  }
  *p = *s ? s + 1 : s;
  return n;
}

START_TEST(csv) {
  char *s = render(2, NULL);
  static char f[128][256];
  const char *p = s;
  size_t ncols = sc_report_csv_columns();
  ck_assert_uint_eq(csv_fields(&p, f, 128), ncols);
  ck_assert_str_eq(f[0], "schema_version");
  size_t it = 0;
  for (size_t i = 0; i < ncols; i++)
    if (strcmp(f[i], "iteration_s") == 0) it = i;
  ck_assert_uint_eq(csv_fields(&p, f, 128), ncols); /* the model name's comma is quoted */
  ck_assert_str_eq(f[1], NASTY);
  ck_close(strtod(f[it], NULL), 0.015, 1e-11);
  ck_assert_str_eq(p, ""); /* exactly two records */
  free(s);
  /* the sweep's use: header once, many rows */
  char *buf = NULL;
  size_t n = 0;
  FILE *m = open_memstream(&buf, &n);
  sc_error err;
  ck_assert_int_eq(sc_report_csv_header(m, &err), SC_OK);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(sc_report_csv_row(m, &res, &err), SC_OK);
  fclose(m);
  p = buf;
  int rows = 0;
  while (*p) {
    ck_assert_uint_eq(csv_fields(&p, f, 128), ncols);
    rows++;
  }
  ck_assert_int_eq(rows, 4);
  free(buf);
}
END_TEST

START_TEST(trace) {
  char *s = render(3, NULL);
  cJSON *j = cJSON_Parse(s);
  ck_assert_msg(j != NULL, "trace does not parse");
  cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
  ck_assert(cJSON_IsArray(ev));
  int nx = 0, ns = 0, nf = 0, nthread = 0, nproc = 0;
  int named[8][SC_LANE_COUNT] = {{0}};
  long long sid_sum = 0, fid_sum = 0;
  for (cJSON *e = ev->child; e; e = e->next) {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    int pid = cJSON_GetObjectItem(e, "pid")->valueint;
    ck_assert(pid >= 0 && pid < 2);
    if (strcmp(ph, "M") == 0) {
      const char *nm = cJSON_GetObjectItem(e, "name")->valuestring;
      if (strcmp(nm, "thread_name") == 0) {
        named[pid][cJSON_GetObjectItem(e, "tid")->valueint] = 1;
        nthread++;
      }
      if (strcmp(nm, "process_name") == 0) nproc++;
      continue;
    }
    int tid = cJSON_GetObjectItem(e, "tid")->valueint;
    ck_assert(tid >= 0 && tid < SC_LANE_COUNT);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "ts")));
    ck_assert(cJSON_GetObjectItem(e, "ts")->valuedouble >= 0);
    if (strcmp(ph, "X") == 0) {
      nx++;
      ck_assert(cJSON_GetObjectItem(e, "dur")->valuedouble >= 0);
      ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "name")));
      ck_assert(cJSON_GetObjectItem(e, "ts")->valuedouble <= 15000.0 + 1e-6);
    } else if (strcmp(ph, "s") == 0) {
      ns++;
      sid_sum += cJSON_GetObjectItem(e, "id")->valueint;
    } else if (strcmp(ph, "f") == 0) {
      nf++;
      fid_sum += cJSON_GetObjectItem(e, "id")->valueint;
      ck_assert_str_eq(cJSON_GetObjectItem(e, "bp")->valuestring, "e");
      ck_assert_int_eq(tid, SC_LANE_COMPUTE);
    } else {
      ck_abort_msg("unexpected phase %s", ph);
    }
  }
  ck_assert_int_eq(nproc, 2);
  ck_assert_int_eq(nthread, 2 * SC_LANE_COUNT);
  for (int p = 0; p < 2; p++)
    for (int l = 0; l < SC_LANE_COUNT; l++) ck_assert(named[p][l]);
  /* 2 stages x 4 mb x (F + B) passes + 4 activation and 4 gradient sends */
  ck_assert_int_eq(nx, (int)sched.nintervals);
  ck_assert_int_eq(nx, 16 + 8);
  ck_assert_int_eq(ns, 8);
  ck_assert_int_eq(nf, 8);
  ck_assert(sid_sum == fid_sum); /* every arrow has both ends */
  cJSON_Delete(j);
  ck_assert_int_ne(python_json_ok(s, "trace"), 0);
  free(s);
}
END_TEST

typedef struct {
  int rects_term, rects_swatch, depth, max_depth, root_svg;
} svg_count;

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts) {
  svg_count *c = ud;
  if (c->depth == 0 && strcmp(name, "svg") == 0) c->root_svg = 1;
  c->depth++;
  if (c->depth > c->max_depth) c->max_depth = c->depth;
  if (strcmp(name, "rect") != 0) return;
  for (int i = 0; atts[i]; i += 2)
    if (strcmp(atts[i], "class") == 0) {
      if (strcmp(atts[i + 1], "term") == 0) c->rects_term++;
      if (strcmp(atts[i + 1], "swatch") == 0) c->rects_swatch++;
    }
}
static void XMLCALL on_end(void *ud, const XML_Char *name) {
  (void)name;
  ((svg_count *)ud)->depth--;
}

static int parse_svg(const char *s, size_t n, svg_count *c) {
  memset(c, 0, sizeof *c);
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, c);
  XML_SetElementHandler(p, on_start, on_end);
  int ok = XML_Parse(p, s, (int)n, 1) == XML_STATUS_OK;
  if (!ok)
    fprintf(stderr, "svg: %s at line %lu\n", XML_ErrorString(XML_GetErrorCode(p)),
            (unsigned long)XML_GetCurrentLineNumber(p));
  XML_ParserFree(p);
  return ok;
}

START_TEST(svg) {
  size_t n;
  char *s = render(4, &n);
  svg_count c;
  ck_assert(parse_svg(s, n, &c));
  ck_assert(c.root_svg);
  ck_assert_int_eq(c.depth, 0);
  size_t nt = sc_report_terms(&res.breakdown, NULL, 0);
  ck_assert_int_eq(c.rects_term, (int)nt);
  ck_assert_int_eq(c.rects_swatch, (int)nt);
  ck_assert_ptr_nonnull(strstr(s, "&quot;x&quot;")); /* the nasty name, escaped */
  const char *dir = getenv("SC_REPORT_OUT");
  if (dir) { /* kept for a look: build-dir/tests/report/breakdown.svg */
    char path[1024];
    snprintf(path, sizeof path, "%s/breakdown.svg", dir);
    FILE *f = fopen(path, "w");
    if (f) {
      fwrite(s, 1, n, f);
      fclose(f);
    }
  }
  free(s);
  /* without families: forward / recompute / backward + 6 */
  res.breakdown.nfamilies = 0;
  s = render(4, &n);
  ck_assert(parse_svg(s, n, &c));
  ck_assert_int_eq(c.rects_term, 3 + 6);
  free(s);
}
END_TEST

START_TEST(malformed) {
  sc_error err;
  sc_result r = res;
  r.gpus = 7;
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "gpus"));
  r = res;
  r.iteration_s = 0;
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "iteration_s"));
  r = res;
  r.model_flops = NAN;
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "model_flops"));
  r = res;
  r.memory.activations_bytes = -1;
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "activations"));
  r = res;
  r.breakdown.bubble_s += 1e-3; /* terms no longer sum to T */
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "sum"));
  r = res;
  r.parallel.global_batch = 0;
  ck_assert_int_eq(sc_result_finish(&r, &err), SC_EINVAL);
  ck_assert_int_eq(sc_result_finish(NULL, &err), SC_EINVAL);

  /* a trace needs a timeline */
  sc_sched_result s2 = sched;
  s2.intervals = NULL;
  s2.nintervals = 0;
  FILE *f = fopen("/dev/null", "w");
  ck_assert_int_eq(sc_report_trace(f, &s2, NULL, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "record_timeline"));
  s2 = sched;
  sc_sched_flow bad = {(uint32_t)sched.nintervals, 0};
  s2.flows = &bad;
  s2.nflows = 1;
  ck_assert_int_eq(sc_report_trace(f, &s2, NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc_report_json(NULL, &res, &err), SC_EINVAL);
  ck_assert_int_eq(sc_report_csv_row(f, NULL, &err), SC_EINVAL);
  ck_assert_int_eq(sc_report_svg(NULL, &res, &err), SC_EINVAL);
  r = res;
  r.iteration_s = 0;
  ck_assert_int_eq(sc_report_svg(f, &r, &err), SC_EINVAL);
  fclose(f);

  /* a full device: every renderer reports the write error */
  f = fopen("/dev/full", "w");
  if (f != NULL) {
    ck_assert_int_eq(sc_report_json(f, &res, &err), SC_EIO);
    clearerr(f);
    ck_assert_int_eq(sc_report_csv(f, &res, &err), SC_EIO);
    clearerr(f);
    ck_assert_int_eq(sc_report_table(f, &res, &err), SC_EIO);
    clearerr(f);
    ck_assert_int_eq(sc_report_trace(f, &sched, &res, &err), SC_EIO);
    clearerr(f);
    ck_assert_int_eq(sc_report_svg(f, &res, &err), SC_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "svg"));
    fclose(f);
  }
}
END_TEST

static Suite *report_suite(void) {
  Suite *s = suite_create("report");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, derived);
  tcase_add_test(tc, table);
  tcase_add_test(tc, json);
  tcase_add_test(tc, csv);
  tcase_add_test(tc, trace);
  tcase_add_test(tc, svg);
  tcase_add_test(tc, malformed);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(report_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
