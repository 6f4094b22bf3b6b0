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

#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "stepcast/workload.h"

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


/* ---- the operator-level timeline (sc_report_trace_ops, issue 33 point 5) ---- */

typedef struct xev {
  double row;             /* pid * 1e6 + tid */
  long long ts, dur;      /* nanoseconds, as the file states them */
  int child, idx;         /* an operator, collective or exposed slice; order in the file */
  const cJSON *e;
  long long kids;         /* sum of the children's durations */
  int nkids;
} xev;

/* By row, then time, the longest first, a parent before a child, then file order. */
static int cmp_xev(const void *a, const void *b) {
  const xev *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
  if (x->child != y->child) return x->child - y->child;
  return x->idx - y->idx;
}

static const char *jstr(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}
static double jnum(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  ck_assert_msg(cJSON_IsNumber(v), "key '%s' is not a number", k);
  return v->valuedouble;
}

/* The trace family an operator family's kernels come under (docs/trace.md). */
static sc_kernel_family want_family(const char *fam) {
  if (strcmp(fam, "gemm") == 0) return SC_KFAM_GEMM;
  if (strcmp(fam, "attention") == 0) return SC_KFAM_ATTENTION;
  if (strcmp(fam, "norm") == 0 || strcmp(fam, "softmax") == 0) return SC_KFAM_NORM;
  if (strcmp(fam, "optimizer") == 0) return SC_KFAM_OPTIMIZER;
  if (strcmp(fam, "comm") == 0) return SC_KFAM_COMM;
  return SC_KFAM_ELEMENTWISE; /* elementwise, embedding, cross_entropy, memcpy */
}

/* Parse the document, nest every row's slices by time and check: children inside their
 * parents; the children of every pass (forward, recomputation, backward, W) of a
 * micro-batch below K and of every communication slice that has children sum to it to
 * the nanosecond; passes of later micro-batches have none; every operator slice's name
 * is classified by the trace classifier as its family's kernels are. Returns the number of
 * operator and collective slices. */
static int check_ops_doc(const char *text, uint32_t K, int *ncomm) {
  cJSON *doc = cJSON_Parse(text);
  ck_assert_msg(doc != NULL, "the operator-level trace is not JSON");
  const cJSON *evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
  ck_assert(cJSON_IsArray(evs));
  int n = cJSON_GetArraySize(evs), nx = 0, nops = 0;
  xev *x = calloc((size_t)n + 1, sizeof *x);
  ck_assert_ptr_nonnull(x);
  const cJSON *e;
  cJSON_ArrayForEach(e, evs) {
    const char *ph = jstr(e, "ph");
    ck_assert_ptr_nonnull(ph);
    if (strcmp(ph, "X") != 0) continue;
    const char *cat = jstr(e, "cat");
    ck_assert_ptr_nonnull(cat);
    x[nx].row = jnum(e, "pid") * 1e6 + jnum(e, "tid");
    x[nx].ts = llround(jnum(e, "ts") * 1e3);
    x[nx].dur = llround(jnum(e, "dur") * 1e3);
    ck_assert_msg(x[nx].dur >= 0, "negative dur");
    x[nx].child = strcmp(cat, "op") == 0 || strcmp(cat, "comm") == 0 ||
                  strcmp(cat, "exposed") == 0;
    x[nx].idx = nx;
    x[nx].e = e;
    nx++;
  }
  qsort(x, (size_t)nx, sizeof *x, cmp_xev);
  int p = -1; /* the pass or stream slice whose children follow */
  for (int i = 0; i < nx; i++) {
    if (!x[i].child) {
      p = i;
      continue;
    }
    ck_assert_msg(p >= 0 && x[p].row == x[i].row && x[i].ts >= x[p].ts &&
                      x[i].ts + x[i].dur <= x[p].ts + x[p].dur,
                  "slice '%s' [%lld, +%lld] lies in no parent (last '%s' [%lld, +%lld])",
                  jstr(x[i].e, "name"), x[i].ts, x[i].dur, p >= 0 ? jstr(x[p].e, "name") : "",
                  p >= 0 ? x[p].ts : 0, p >= 0 ? x[p].dur : 0);
    x[p].kids += x[i].dur;
    x[p].nkids++;
    if (strcmp(jstr(x[i].e, "cat"), "exposed") != 0) {
      const cJSON *args = cJSON_GetObjectItemCaseSensitive(x[i].e, "args");
      ck_assert(cJSON_IsObject(args));
      const char *fam = jstr(args, "family");
      ck_assert_ptr_nonnull(fam);
      ck_assert_ptr_nonnull(jstr(args, "label"));
      (void)jnum(args, "bytes");
      (void)jnum(args, "estimate_us");
      if (strcmp(fam, "comm") != 0) {
        ck_assert_ptr_nonnull(jstr(args, "shape"));
        (void)jnum(args, "flops");
      } else {
        ck_assert_ptr_nonnull(jstr(args, "kind"));
        ck_assert_ptr_nonnull(jstr(args, "group"));
        (*ncomm)++;
      }
      sc_kernel_family kf = sc_trace_classify(SC_TRACE_KERNEL, jstr(x[i].e, "name"));
      ck_assert_msg(kf == want_family(fam), "'%s' (family %s) is classified as %s",
                    jstr(x[i].e, "name"), fam, sc_trace_family_name(kf));
      nops++;
    }
  }
  for (int i = 0; i < nx; i++) {
    const char *cat = jstr(x[i].e, "cat");
    int pass = strcmp(cat, "forward") == 0 || strcmp(cat, "recompute") == 0 ||
               strcmp(cat, "backward") == 0 || strcmp(cat, "wgrad") == 0;
    if (!pass && strcmp(cat, "tp") != 0 && strcmp(cat, "cp") != 0 &&
        strcmp(cat, "optimizer") != 0)
      continue;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(x[i].e, "args");
    int mb = (int)jnum(args, "microbatch");
    if (pass && mb >= 0 && (uint32_t)mb >= K)
      ck_assert_msg(x[i].nkids == 0, "'%s' has operator slices beyond micro-batch %u",
                    jstr(x[i].e, "name"), K);
    if (pass && mb >= 0 && (uint32_t)mb < K && x[i].dur > 0)
      ck_assert_msg(x[i].nkids > 0, "'%s' has no operator slices", jstr(x[i].e, "name"));
    if (x[i].nkids > 0)
      ck_assert_msg(x[i].kids == x[i].dur, "the children of '%s' (stage %g) sum to %lld ns, "
                    "it lasts %lld", jstr(x[i].e, "name"), jnum(x[i].e, "pid"), x[i].kids,
                    x[i].dur);
  }
  free(x);
  cJSON_Delete(doc);
  return nops;
}

static char *render_ops(const sc_sched_result *sr, const sc_result *r,
                        const sc_timeline_detail *d, uint32_t K, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  ck_assert_ptr_nonnull(f);
  sc_error err;
  int rc = sc_report_trace_ops(f, sr, r, d, K, &err);
  ck_assert_msg(rc == SC_OK, "trace_ops: %s", err.msg);
  fclose(f);
  if (len) *len = n;
  return buf;
}

START_TEST(trace_ops) {
  static const struct {
    const char *model, *topo;
    uint32_t tp, pp, dp, cp, vp, ep, gb;
    sc_schedule_kind sched;
    sc_recompute rec;
    int sp, zero;
  } cases[] = {
      {"gpt3-1.3b", "dgx-a100-superpod", 2, 2, 2, 1, 1, 1, 16, SC_SCHED_1F1B,
       SC_RECOMPUTE_SELECTIVE, 1, 0},
      {"gpt3-1.3b", "dgx-a100-superpod", 2, 2, 1, 1, 2, 1, 8, SC_SCHED_INTERLEAVED,
       SC_RECOMPUTE_FULL, 0, 0},
      {"gpt3-1.3b", "dgx-a100-superpod", 1, 4, 1, 1, 1, 1, 16, SC_SCHED_ZB_H1,
       SC_RECOMPUTE_NONE, 0, 0},
      {"gpt3-1.3b", "dgx-a100-superpod", 2, 4, 1, 1, 1, 1, 16, SC_SCHED_DUALPIPE,
       SC_RECOMPUTE_NONE, 1, 0},
      {"gpt3-1.3b", "dgx-a100-superpod", 1, 1, 4, 2, 1, 1, 8, SC_SCHED_1F1B,
       SC_RECOMPUTE_NONE, 0, 3},
      {"mixtral-8x7b", "dgx-h100-superpod", 2, 2, 4, 1, 1, 4, 16, SC_SCHED_1F1B,
       SC_RECOMPUTE_NONE, 1, 0},
  };
  sc_error err;
  sc_registry *reg;
  sc_predictor *pr;
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(reg, &pr, &err) == SC_OK, "%s", err.msg);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    sc_model m;
    sc_topology t;
    sc_device dev;
    sc_parallel p;
    ck_assert_msg(sc_model_load(cases[k].model, &m, &err) == SC_OK, "%s", err.msg);
    ck_assert_msg(sc_topology_load(cases[k].topo, &t, &err) == SC_OK, "%s", err.msg);
    ck_assert_msg(sc_hardware_load(reg, t.hardware, &dev, &err) == SC_OK, "%s", err.msg);
    sc_parallel_defaults(&p);
    p.tp = cases[k].tp;
    p.pp = cases[k].pp;
    p.dp = cases[k].dp;
    p.cp = cases[k].cp;
    p.virtual_stages = cases[k].vp;
    p.ep = cases[k].ep;
    p.global_batch = cases[k].gb;
    p.seq_len = 2048;
    p.schedule = cases[k].sched;
    p.recompute = cases[k].rec;
    p.sequence_parallel = cases[k].sp;
    p.zero_stage = (uint32_t)cases[k].zero;
    p.overlap_grad_reduce = p.overlap_param_gather = cases[k].zero > 0;
    sc_predict_opts o;
    sc_predict_opts_defaults(&o);
    o.allow_oom = 1;
    sc_result r, r0;
    sc_sched_result sr;
    sc_timeline_detail d;
    /* without a timeline there is no detail; with one the numbers are the same */
    ck_assert_msg(sc_predict(pr, &m, &t, &dev, &p, &o, &r0, NULL, &err) == SC_OK, "case %zu: %s",
                  k, err.msg);
    ck_assert_int_eq(sc_predict_timeline(pr, &d, &err), SC_EINVAL);
    o.record_timeline = 1;
    ck_assert_msg(sc_predict(pr, &m, &t, &dev, &p, &o, &r, &sr, &err) == SC_OK, "case %zu: %s",
                  k, err.msg);
    ck_assert(r.iteration_s == r0.iteration_s);
    ck_assert_msg(sc_predict_timeline(pr, &d, &err) == SC_OK, "%s", err.msg);
    ck_assert_uint_gt(d.nitems, 0);
    /* K = 0 is the pass-level trace exactly */
    size_t n0, n1;
    char *plain = render_ops(&sr, &r, NULL, 0, &n0);
    char *zero = render_ops(&sr, &r, &d, 0, &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert_str_eq(plain, zero);
    free(zero);
    int ncomm = 0;
    for (uint32_t K = 1; K <= 2; K++) {
      char *text = render_ops(&sr, &r, &d, K, NULL);
      int nops = check_ops_doc(text, K, &ncomm);
      ck_assert_msg(nops > 0, "case %zu: no operator slices", k);
      free(text);
    }
    if (p.tp > 1 || p.cp > 1 || p.zero_stage > 0 || p.pp > 1)
      ck_assert_msg(ncomm > 0, "case %zu: no collective slices", k);
    free(plain);
  }
  /* a detail of another schedule result is refused */
  {
    sc_timeline_detail d;
    ck_assert_int_eq(sc_predict_timeline(pr, &d, &err), SC_OK);
    d.pp += 1;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ck_assert_int_eq(sc_report_trace_ops(f, &sched, &res, &d, 1, &err), SC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not of this schedule result"));
    fclose(f);
    free(buf);
  }
  sc_predictor_free(pr);
  sc_registry_free(reg);
}
END_TEST

/* Every operator of every built-in model's workload (dense, MoE, MLA, unfused attention)
 * is named so that the trace classifier files it under its family's kernels. */
START_TEST(item_names_classify) {
  static const char *const models[] = {"gpt3-125m", "llama3-8b", "mixtral-8x7b",
                                       "deepseek-v3"};
  sc_error err;
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    sc_model m;
    ck_assert_msg(sc_model_load(models[k], &m, &err) == SC_OK, "%s", err.msg);
    for (int flash = 0; flash < 2; flash++) {
      sc_parallel p;
      sc_parallel_defaults(&p);
      p.tp = 2;
      p.sequence_parallel = 1;
      p.pp = 2;
      p.global_batch = 4;
      p.seq_len = 1024;
      p.recompute = SC_RECOMPUTE_FULL;
      p.flash_attention = flash;
      if (m.num_experts > 0) p.ep = 2, p.dp = 2;
      for (uint32_t st = 0; st < p.pp; st++) {
        static sc_stage_work w;
        if (sc_workload_stage(&m, &p, st, 0, &w, &err) != SC_OK) continue;
        for (int ph = 0; ph <= SC_PHASE_OPTIMIZER; ph++) {
          const sc_work_list *l = ph == SC_PHASE_OPTIMIZER ? &w.per_iter : &w.per_micro[ph];
          for (uint32_t i = 0; i < l->nops + l->ncolls; i++) {
            sc_timeline_item it;
            memset(&it, 0, sizeof it);
            if (i < l->nops) {
              snprintf(it.label, sizeof it.label, "%s", l->ops[i].label);
              it.family = l->ops[i].desc.family;
              it.variant = l->ops[i].desc.variant;
            } else {
              const sc_work_coll *c = &l->colls[i - l->nops];
              snprintf(it.label, sizeof it.label, "%s", c->label);
              it.family = "comm";
              it.is_coll = 1;
              it.coll_kind = (uint8_t)c->kind;
            }
            char name[96];
            sc_report_item_name(&it, name, sizeof name);
            sc_kernel_family kf = sc_trace_classify(SC_TRACE_KERNEL, name);
            ck_assert_msg(kf == want_family(it.family), "%s: '%s' (%s) is classified as %s",
                          models[k], name, it.family, sc_trace_family_name(kf));
          }
        }
      }
    }
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
  TCase *to = tcase_create("trace_ops");
  tcase_add_checked_fixture(to, setup, teardown);
  tcase_add_test(to, trace_ops);
  tcase_add_test(to, item_names_classify);
  suite_add_tcase(s, to);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(report_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
