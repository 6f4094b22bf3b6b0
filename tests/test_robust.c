/* Issue 34, "crashes and hangs", the library side: sizes past their bounds and products past
 * 2^63 refused by sc_workload_validate; sweep's divisors on 2^32-1; gbdt residual models with
 * a bad split feature, child, cycle, leaf or base score refused before XGBoost reads them;
 * report writers refusing non-finite numbers. The CLI side is tests/robust/CMakeLists.txt. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "stepcast/estimate.h"
#include "stepcast/report.h"
#include "stepcast/schedule.h"
#include "stepcast/stepcast.h"
#include "stepcast/sweep.h"
#include "stepcast/workload.h"

static const char *data_dir(void) {
  const char *d = getenv("SC_TEST_DATA");
  return d != NULL ? d : "tests/data";
}

static sc_parallel base_par(void) {
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.global_batch = 8;
  p.seq_len = 1024;
  return p;
}

#define EXPECT(call, code, text)                                                         \
  do {                                                                                   \
    sc_error_clear(&err);                                                                \
    int rc_ = (call);                                                                    \
    ck_assert_msg(rc_ == (code), "rc %d (want %d): %s", rc_, (code), err.msg);           \
    ck_assert_msg(strstr(err.msg, (text)) != NULL, "'%s' lacks '%s'", err.msg, (text));  \
  } while (0)

/* 2*cp wrapped to 0 in 32 bits (SIGFPE); every degree and size is bounded. */
START_TEST(workload_bounds) {
  sc_model m;
  sc_error err;
  sc_test_gpt_model(&m, "gpt", 24, 1);
  sc_parallel p = base_par();
  p.cp = 2147483648u;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE, "cp: 2147483648 is out of range");
  p = base_par();
  p.micro_batch = 4294967295u;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE, "micro_batch: 4294967295 is out of range");
  p = base_par();
  p.tp = p.pp = 16384;
  p.dp = 2;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE, "gpus: tp*pp*dp*cp");
  p = base_par();
  p.seq_len = 2147483648u;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE, "seq_len: 2147483648 is out of range");
  /* the bound itself is accepted */
  p = base_par();
  p.global_batch = 1u << 30;
  sc_error_clear(&err);
  ck_assert_msg(sc_workload_validate(&m, &p, &err) == SC_OK, "%s", err.msg);
}
END_TEST

/* micro-batch x seq x hidden past 2^63: the old code wrapped it (UBSan: signed overflow). */
START_TEST(workload_products) {
  sc_model m;
  sc_error err;
  sc_test_gpt_model(&m, "gpt", 24, 1);
  m.hidden = 1000000;
  m.heads = 1000;
  m.kv_heads = 1000;
  m.head_dim = 1000;
  m.ffn_hidden = 4000000;
  m.position = SC_POS_ROPE;
  sc_parallel p = base_par();
  p.micro_batch = 1u << 24;
  p.global_batch = 1u << 24;
  p.seq_len = 1u << 20;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE,
         "micro_batch x seq_len/cp x hidden: 16777216 x 1048576 x 1000000 is more than 2^63");
  /* the unfused attention's score matrix: micro_batch x heads/tp x seq^2 */
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = 64;
  m.ffn_hidden = 4096;
  p.micro_batch = 1;
  p.global_batch = 1;
  p.seq_len = 1u << 30;
  p.flash_attention = 0;
  EXPECT(sc_workload_validate(&m, &p, &err), SC_ERANGE,
         "micro_batch x heads/tp x seq_len/cp x seq_len");
  /* the flash kernel never forms it */
  p.flash_attention = 1;
  sc_error_clear(&err);
  ck_assert_msg(sc_workload_validate(&m, &p, &err) == SC_OK, "%s", err.msg);
}
END_TEST

/* divisors() counted to n in 32 bits: n = 2^32-1 wrapped the counter to 0 (SIGFPE). */
START_TEST(sweep_divisors) {
  sc_model m;
  sc_error err;
  sc_sweep_space *s = calloc(1, sizeof *s);
  ck_assert_ptr_nonnull(s);
  sc_test_gpt_model(&m, "gpt", 24, 1);
  EXPECT(sc_sweep_space_defaults(s, &m, 4294967295u, 16, 1024, &err), SC_ERANGE,
         "gpus: 4294967295 is out of range");
  EXPECT(sc_sweep_space_defaults(s, &m, 8, 4294967295u, 1024, &err), SC_ERANGE,
         "global-batch: 4294967295 is out of range");
  EXPECT(sc_sweep_space_defaults(s, &m, 8, 16, 2048, &err), SC_ECONFIG,
         "seq-len: 2048 is more than the max_seq of model 'gpt' (1024)");
  /* the largest gpus: its 25 divisors, in order */
  sc_error_clear(&err);
  ck_assert_msg(sc_sweep_space_defaults(s, &m, 1u << 24, 1u << 30, 1024, &err) == SC_OK, "%s",
                err.msg);
  ck_assert_uint_eq(s->ntp, 25);
  for (uint32_t i = 0; i < s->ntp; i++) ck_assert_uint_eq(s->tp[i], 1u << i);
  ck_assert_uint_eq(s->nmb, 31);
  /* 720720 has 240 divisors: the 64 smallest, increasing, each dividing it */
  ck_assert(sc_sweep_space_defaults(s, &m, 720720, 16, 1024, &err) == SC_OK);
  ck_assert_uint_eq(s->ntp, SC_SWEEP_MAX_CHOICES);
  for (uint32_t i = 0; i < s->ntp; i++) {
    ck_assert_uint_eq(720720 % s->tp[i], 0);
    if (i > 0) ck_assert_uint_lt(s->tp[i - 1], s->tp[i]);
  }
  ck_assert_uint_eq(s->tp[63], 156); /* the 64th divisor of 720720 */
  free(s);
}
END_TEST

/* A gbdt residual with a corrupt tree: refused naming the file, tree and node, before
 * XGBoost sees it (it crashed or hung there). */
START_TEST(gbdt_corrupt) {
  static const struct { const char *dir, *msg; } cases[] = {
      {"gbdt_bad_feature", "tree 0 node 0: split feature 99 is out of range (the model "
                           "declares 16 features)"},
      {"gbdt_bad_child", "tree 0 node 0: child 57 is out of range [1, 5)"},
      {"gbdt_cycle", "tree 0 node 2: child 2 is reached twice (a cycle or a shared node)"},
      {"gbdt_bad_leaf", "tree 1 node 1: leaf value 1e+300 is out of range"},
      {"gbdt_bad_base", "learner_model_param.base_score must be a finite number"}};
  char dir[4096];
  sc_error err;
  sc_residuals *r = NULL;
  snprintf(dir, sizeof dir, "%s/estimate/gbdt_ok", data_dir());
  sc_error_clear(&err);
  ck_assert_msg(sc_residuals_load(dir, &r, &err) == SC_OK, "%s", err.msg);
  sc_residuals_free(r);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    r = NULL;
    snprintf(dir, sizeof dir, "%s/estimate/%s", data_dir(), cases[i].dir);
    sc_error_clear(&err);
    ck_assert_int_ne(sc_residuals_load(dir, &r, &err), SC_OK);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(err.msg, cases[i].dir) != NULL && strstr(err.msg, "gemm.hybrid.gbdt.json"),
                  "%s: '%s' names no file", cases[i].dir, err.msg);
    ck_assert_msg(strstr(err.msg, cases[i].msg) != NULL, "%s: '%s' lacks '%s'", cases[i].dir,
                  err.msg, cases[i].msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
  }
}
END_TEST

/* No writer prints inf or nan: the table and SVG refuse such a result, JSON writes null. */
START_TEST(report_non_finite) {
  sc_result r;
  sc_error err;
  memset(&r, 0, sizeof r);
  sc_parallel_defaults(&r.parallel);
  r.parallel.global_batch = 8;
  r.gpus = 1;
  r.iteration_s = 1.0;
  r.breakdown.compute_fwd_s = 1.0;
  r.peak_flops_per_s = 1e12;
  sc_error_clear(&err);
  ck_assert_msg(sc_result_finish(&r, &err) == SC_OK, "%s", err.msg);
  r.time_to_train_s = INFINITY;
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  EXPECT(sc_report_table(f, &r, &err), SC_ERANGE, "report: table: time_to_train_s is inf");
  r.time_to_train_s = 0.0;
  r.mfu = NAN;
  EXPECT(sc_report_svg(f, &r, &err), SC_ERANGE, "report: svg: mfu is nan");
  ck_assert_int_eq(ftell(f), 0); /* refused before a byte was written */
  r.time_to_train_s = INFINITY;
  sc_error_clear(&err);
  ck_assert_msg(sc_report_json(f, &r, &err) == SC_OK, "%s", err.msg);
  long n = ftell(f);
  char *text = calloc((size_t)n + 1, 1);
  ck_assert_ptr_nonnull(text);
  rewind(f);
  ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  ck_assert_ptr_null(strstr(text, "inf"));
  ck_assert_ptr_null(strstr(text, "nan"));
  ck_assert_ptr_nonnull(strstr(text, "null"));
  free(text);
  fclose(f);
  /* the Chrome trace: an interval of 1e300 s is inf nanoseconds ("dur": inf before) */
  {
    sc_sched_interval iv[2];
    sc_sched_result sr;
    memset(iv, 0, sizeof iv);
    memset(&sr, 0, sizeof sr);
    iv[0].end_s = 1.0;
    iv[1].start_s = 1.0;
    iv[1].end_s = 1e300;
    iv[1].microbatch = 0;
    sr.iteration_s = 1.0;
    sr.pp = sr.vp = sr.microbatches = 1;
    sr.intervals = iv;
    sr.nintervals = 2;
    f = tmpfile();
    ck_assert_ptr_nonnull(f);
    EXPECT(sc_report_trace(f, &sr, NULL, &err), SC_ERANGE,
           "report: trace: interval 1 ('F mb0', stage 0) has start 1 s, end 1e+300 s");
    ck_assert_int_eq(ftell(f), 0);
    fclose(f);
  }
  /* a token budget that makes the time to train infinite */
  memset(&r, 0, sizeof r);
  sc_parallel_defaults(&r.parallel);
  r.parallel.global_batch = 1;
  r.parallel.seq_len = 1;
  r.gpus = 1;
  r.iteration_s = 1e6;
  r.breakdown.compute_fwd_s = 1e6;
  r.token_budget = 1e308;
  EXPECT(sc_result_finish(&r, &err), SC_ERANGE, "not a finite time");
}
END_TEST

int main(void) {
  Suite *s = suite_create("robust");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, workload_bounds);
  tcase_add_test(tc, workload_products);
  tcase_add_test(tc, sweep_divisors);
  tcase_add_test(tc, gbdt_corrupt);
  tcase_add_test(tc, report_non_finite);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
