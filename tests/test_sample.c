/* The sampling plan (stepcast/sample.h): the designed plan's size per family, its
 * determinism and interleaving, --quick's quarter, the accelerator ranges, the families
 * filter; a plan file's operators, its repeats and other families counted, its errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/sample.h"
#include "stepcast/stepcast.h"

static size_t count(const sc_sample_plan *p, const char *family) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) n += strcmp(p->ops[i].family, family) == 0;
  return n;
}

static const char *data(const char *rel) {
  static char p[SC_PATH_MAX];
  const char *d = getenv("SC_TEST_DATA");
  snprintf(p, sizeof p, "%s/%s", d ? d : SC_SOURCE_DIR "/tests/data", rel);
  return p;
}

/* every family, its points: gemm 72 plain + 24 batched, attention 48, norm 48, softmax 32,
 * elementwise 88, optimizer 24, embedding 48, cross_entropy 32; the same twice; each
 * family's first point before any family's second (interleaved) */
START_TEST(designed_plan) {
  sc_sample_plan a = {0}, b = {0};
  ck_assert_int_eq(sc_sample_plan_build(&a, NULL, 0, 0, 1 << 20, SC_DTYPE_FP32), SC_OK);
  ck_assert_int_eq(sc_sample_plan_build(&b, NULL, 0, 0, 1 << 20, SC_DTYPE_FP32), SC_OK);
  ck_assert_uint_eq(count(&a, SC_OP_GEMM), 96);
  ck_assert_uint_eq(count(&a, SC_OP_ATTENTION), 48);
  ck_assert_uint_eq(count(&a, SC_OP_NORM), 48);
  ck_assert_uint_eq(count(&a, SC_OP_SOFTMAX), 32);
  ck_assert_uint_eq(count(&a, SC_OP_ELEMENTWISE), 88);
  ck_assert_uint_eq(count(&a, SC_OP_OPTIMIZER), 24);
  ck_assert_uint_eq(count(&a, SC_OP_EMBEDDING), 48);
  ck_assert_uint_eq(count(&a, SC_OP_CROSS_ENTROPY), 32);
  ck_assert_uint_eq(a.n, 416);
  ck_assert_uint_eq(a.n, b.n);
  for (size_t i = 0; i < a.n; i++) ck_assert(sc_op_same(&a.ops[i], &b.ops[i]));
  ck_assert_str_eq(a.ops[0].family, SC_OP_GEMM);
  ck_assert_str_eq(a.ops[1].family, SC_OP_GEMM); /* the batched ones */
  ck_assert_str_eq(a.ops[2].family, SC_OP_ATTENTION);
  ck_assert_str_eq(a.ops[8].family, SC_OP_CROSS_ENTROPY);
  for (size_t i = 0; i < a.n; i++) {
    ck_assert_int_eq(a.ops[i].dtype, SC_DTYPE_FP32);
    for (uint32_t d = 0; d < a.ops[i].ndims; d++) ck_assert_int_ge(a.ops[i].dims[d], 0);
    if (strcmp(a.ops[i].family, SC_OP_SOFTMAX) == 0)
      ck_assert_uint_lt(a.ops[i].variant, SC_SOFTMAX_SAMPLED);
  }
  sc_sample_plan_free(&a);
  sc_sample_plan_free(&b);
  ck_assert_ptr_null(a.ops);
  sc_sample_plan_free(NULL);
}
END_TEST

/* --quick: a quarter of each family (rounded up); a families list keeps those only; an
 * accelerator's GEMMs span [64, 8192] in bf16 */
START_TEST(quick_families_gpu) {
  sc_sample_plan p = {0};
  ck_assert_int_eq(sc_sample_plan_build(&p, "gemm,norm", 1, 0, 1 << 20, SC_DTYPE_FP32), SC_OK);
  ck_assert_uint_eq(count(&p, SC_OP_GEMM), 18 + 6);
  ck_assert_uint_eq(count(&p, SC_OP_NORM), 12);
  ck_assert_uint_eq(p.n, 36);
  sc_sample_plan_free(&p);
  ck_assert_int_eq(sc_sample_plan_build(&p, "gemm", 0, 1, 0, SC_DTYPE_BF16), SC_OK);
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < p.n; i++) {
    ck_assert_int_eq(p.ops[i].dtype, SC_DTYPE_BF16);
    if (p.ops[i].dims[0] != 1) continue; /* plain: m, n, k */
    for (int d = 1; d < 4; d++) {
      if (p.ops[i].dims[d] < lo) lo = p.ops[i].dims[d];
      if (p.ops[i].dims[d] > hi) hi = p.ops[i].dims[d];
    }
  }
  ck_assert_int_ge(lo, 64);
  ck_assert_int_le(hi, 8192);
  ck_assert_int_gt(hi, 4096); /* past the CPU's range */
  sc_sample_plan_free(&p);
}
END_TEST

/* tests/data/estimate/plan_box.csv: six operators, one listed again, a memcpy row (listed,
 * not sampled); the collective row is of another kind */
START_TEST(plan_file) {
  sc_sample_plan p = {0};
  size_t other = 9, dups = 9;
  sc_error err;
  ck_assert_msg(sc_sample_plan_read(data("estimate/plan_box.csv"), NULL, &p, &other, &dups,
                                    &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(p.n, 6);
  ck_assert_uint_eq(dups, 1);
  ck_assert_uint_eq(other, 1);
  ck_assert_str_eq(p.ops[0].family, SC_OP_EMBEDDING);
  ck_assert_int_eq(p.ops[0].dims[2], 8192);
  sc_sample_plan_free(&p);
  /* the families filter moves the others to *other */
  ck_assert_int_eq(sc_sample_plan_read(data("estimate/plan_box.csv"), "optimizer", &p, &other,
                                       &dups, &err), SC_OK);
  ck_assert_uint_eq(p.n, 2);
  ck_assert_uint_eq(other, 5);
  sc_sample_plan_free(&p);
  /* a malformed row: file, line, column */
  ck_assert_int_eq(sc_sample_plan_read(data("estimate/plan_bad_dims.csv"), NULL, &p, &other,
                                       &dups, &err), SC_EPARSE);
  ck_assert_msg(strstr(err.msg, "plan_bad_dims.csv:") != NULL &&
                strstr(err.msg, "column 'dims'") != NULL, "%s", err.msg);
  sc_sample_plan_free(&p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sample");
  TCase *tc = tcase_create("plan");
  int failed;
  SRunner *sr;
  tcase_add_test(tc, designed_plan);
  tcase_add_test(tc, quick_families_gpu);
  tcase_add_test(tc, plan_file);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
