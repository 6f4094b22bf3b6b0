/* stepcast trace compare (core/src/trace/compare.c, docs/trace.md "Side by side"): a
 * hand-made two-step trace against a prediction, figures by hand; the prediction's rows
 * against its timeline detail summed here; the kernel names the family table had wrong;
 * and the H200's gpt3-125m profiled step. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"

#define ck_close(got, want, tol)                                                           \
  ck_assert_msg(fabs((got) - (want)) <= (tol), "%s = %.17g, want %.17g", #got,             \
                (double)(got), (double)(want))

static sc_registry *reg;
static sc_predictor *pr;

static void setup(void) {
  sc_error err;
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(reg, &pr, &err) == SC_OK, "%s", err.msg);
}
static void teardown(void) {
  sc_predictor_free(pr);
  sc_registry_free(reg);
}

static const char *data(const char *rel, char *buf, size_t n) {
  const char *d = getenv("SC_TEST_DATA");
  snprintf(buf, n, "%s/%s", d ? d : "tests/data", rel);
  return buf;
}

/* Predict model on topology with tp x pp x dp GPUs, global batch gb, recording the detail. */
static void predict(const char *model, const char *topo, uint32_t tp, uint32_t pp, uint32_t dp,
                    uint32_t gb, sc_result *res, sc_timeline_detail *d) {
  sc_error err;
  static sc_model m;
  static sc_topology t;
  static sc_device dev;
  ck_assert_msg(sc_model_load(model, &m, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_topology_load(topo, &t, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(reg, t.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.global_batch = gb;
  p.seq_len = 2048;
  sc_predict_opts o;
  sc_predict_opts_defaults(&o);
  o.record_timeline = 1;
  ck_assert_msg(sc_predict(pr, &m, &t, &dev, &p, &o, res, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predict_timeline(pr, d, &err) == SC_OK, "%s", err.msg);
}

START_TEST(classify_names) {
  /* recent PyTorch names its element-wise functors {lambda()#N}: not the LAMB optimizer */
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL,
                                     "void at::native::unrolled_elementwise_kernel<at::native::"
                                     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()"
                                     "#3}::operator()() const::{lambda()#10}>"),
                   SC_KFAM_ELEMENTWISE);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "lamb_cuda_kernel_part1"),
                   SC_KFAM_OPTIMIZER);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL, "nvjet_sm90_tst_96x128_64x6_2x1_v_bz_NNN"),
                   SC_KFAM_GEMM);
  ck_assert_int_eq(sc_trace_classify(SC_TRACE_KERNEL,
                                     "void at::native::(anonymous namespace)::"
                                     "GammaBetaBackwardCUDAKernelTemplate<float, float, 32u>"),
                   SC_KFAM_NORM);
  ck_assert_str_eq(sc_trace_compare_row_name(SC_TRACE_CMP_UNMAPPED), "unmapped");
  ck_assert_str_eq(sc_trace_compare_row_name(SC_KFAM_GEMM), "gemm");
  ck_assert_str_eq(sc_trace_compare_row_name(SC_TRACE_CMP_ROWS), "?");
}
END_TEST

/* The prediction's rows summed from its detail here: every item of stage st's chunk x its
 * repeat x the micro-batches (once for the per-iteration list), by the family its name
 * classifies as, and the sends. */
static void rows_by_hand(const sc_result *res, const sc_timeline_detail *d, uint32_t st,
                         double *rows) {
  memset(rows, 0, SC_TRACE_CMP_ROWS * sizeof *rows);
  const sc_timeline_chunk *c = &d->chunks[st]; /* vp = 1 */
  double m = res->microbatches;
  for (size_t i = c->first; i < c->first + c->count; i++) {
    char name[96];
    sc_report_item_name(&d->items[i], name, sizeof name);
    rows[sc_trace_classify(SC_TRACE_KERNEL, name)] +=
        d->items[i].time_s * d->items[i].repeat * (d->items[i].list == SC_TL_ITER ? 1 : m);
  }
  if (c->p2p_fwd_bytes > 0) rows[SC_KFAM_COMM] += c->times.p2p_fwd_s * m;
  if (c->p2p_bwd_bytes > 0) rows[SC_KFAM_COMM] += c->times.p2p_bwd_s * m;
}

START_TEST(steps_by_hand) {
  sc_error err;
  char path[1024];
  sc_trace *t;
  ck_assert_msg(sc_trace_load(data("trace/compare_steps.json", path, sizeof path), &t, &err) ==
                    SC_OK, "%s", err.msg);
  sc_result res;
  sc_timeline_detail d;
  predict("gpt3-125m", "dgx-a100-superpod", 2, 2, 1, 8, &res, &d);
  sc_trace_compare *c;
  ck_assert_msg(sc_trace_compare_run(&t, 1, &res, &d, &c, &err) == SC_OK, "%s", err.msg);
  size_t n;
  const sc_trace_cmp_step *s = sc_trace_compare_steps(c, &n);
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(s[0].name, "ProfilerStep#1");
  ck_assert_str_eq(s[1].name, "ProfilerStep#2");
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(s[k].rank, 0);
    ck_assert_int_eq(s[k].global_rank, 3); /* distributedInfo.rank */
    ck_assert_uint_eq(s[k].stage, 1);      /* TP innermost: rank 3 = (tp 1, pp 1) */
    ck_close(s[k].measured_s, 1000e-6, 1e-15);
    ck_assert(s[k].predicted_s == res.iteration_s);
  }
  /* step 1: GEMM 100, flash 50, the mystery kernel 20 and the LayerNorm launched in it
   * (30, its GPU time inside step 2's span) */
  ck_assert_uint_eq(s[0].kernels[SC_KFAM_GEMM], 1);
  ck_close(s[0].measured_row_s[SC_KFAM_GEMM], 100e-6, 1e-15);
  ck_close(s[0].measured_row_s[SC_KFAM_ATTENTION], 50e-6, 1e-15);
  ck_close(s[0].measured_row_s[SC_KFAM_NORM], 30e-6, 1e-15);
  ck_assert_uint_eq(s[0].kernels[SC_TRACE_CMP_UNMAPPED], 1);
  ck_close(s[0].measured_row_s[SC_TRACE_CMP_UNMAPPED], 20e-6, 1e-15);
  ck_close(s[0].gpu_measured_s, 200e-6, 1e-15);
  /* step 2: all-reduce 200, add 40, mystery 10, memset 5 */
  ck_close(s[1].measured_row_s[SC_KFAM_COMM], 200e-6, 1e-15);
  ck_close(s[1].measured_row_s[SC_KFAM_ELEMENTWISE], 40e-6, 1e-15);
  ck_close(s[1].measured_row_s[SC_TRACE_CMP_UNMAPPED], 10e-6, 1e-15);
  ck_assert_uint_eq(s[1].kernels[SC_KFAM_MEMSET], 1);
  ck_close(s[1].measured_row_s[SC_KFAM_MEMSET], 5e-6, 1e-15);
  ck_assert_uint_eq(s[1].kernels[SC_KFAM_GEMM], 0);
  ck_close(s[1].gpu_measured_s, 255e-6, 1e-15);
  /* the GEMM launched after both steps: outside, counted */
  uint64_t cnt;
  double ts;
  sc_trace_compare_outside(c, 0, &cnt, &ts);
  ck_assert_uint_eq(cnt, 1);
  ck_close(ts, 60e-6, 1e-15);
  sc_trace_compare_outside(c, 1, &cnt, &ts); /* no such trace */
  ck_assert_uint_eq(cnt, 0);
  /* unmapped names: one, twice, 30 us */
  const char *nm;
  ck_assert_int_eq(sc_trace_compare_unmapped(c, 0, &nm, &cnt, &ts), SC_OK);
  ck_assert_str_eq(nm, "mystery_kernel_xyz");
  ck_assert_uint_eq(cnt, 2);
  ck_close(ts, 30e-6, 1e-15);
  ck_assert_int_eq(sc_trace_compare_unmapped(c, 1, &nm, &cnt, &ts), SC_ENOTFOUND);
  /* the prediction's rows: stage 1 (the output layer, cross-entropy, TP all-reduces, the
   * gradient's send to stage 0) */
  double rows[SC_TRACE_CMP_ROWS], sum = 0;
  rows_by_hand(&res, &d, 1, rows);
  for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) {
    ck_close(s[0].predicted_row_s[r], rows[r], 1e-12 * (rows[r] + 1e-9));
    sum += rows[r];
  }
  ck_assert(rows[SC_KFAM_GEMM] > 0 && rows[SC_KFAM_COMM] > 0 && rows[SC_KFAM_OPTIMIZER] > 0);
  ck_assert(s[0].predicted_row_s[SC_TRACE_CMP_UNMAPPED] == 0);
  ck_close(s[0].gpu_predicted_s, sum, 1e-12 * sum);
  /* by operator family: they add up to the rows they are filed under */
  double byrow[SC_TRACE_CMP_ROWS] = {0};
  int has_ce = 0;
  for (uint32_t k = 0; k < s[0].nopfam; k++) {
    byrow[s[0].opfam_row[k]] += s[0].opfam_s[k];
    if (strcmp(s[0].opfam[k], "cross_entropy") == 0) has_ce = 1;
  }
  ck_assert(has_ce);
  for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++)
    ck_close(byrow[r], rows[r], 1e-12 * (rows[r] + 1e-9));
  sc_trace_compare_free(c);

  /* stage 0 of the same job: another set of rows (the embedding, no output layer) */
  predict("gpt3-125m", "dgx-a100-superpod", 2, 2, 1, 8, &res, &d);
  double r0[SC_TRACE_CMP_ROWS];
  rows_by_hand(&res, &d, 0, r0);
  ck_assert(r0[SC_KFAM_GEMM] < rows[SC_KFAM_GEMM]); /* no logits */

  /* refusals */
  ck_assert_int_eq(sc_trace_compare_run(NULL, 0, &res, &d, &c, &err), SC_EINVAL);
  ck_assert_ptr_null(c);
  sc_timeline_detail bad = d;
  bad.pp = 4;
  ck_assert_int_eq(sc_trace_compare_run(&t, 1, &res, &bad, &c, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "not of the prediction"));
  sc_trace_free(t);
  const char *nogpu = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
                      "\"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 5}]}";
  ck_assert_int_eq(sc_trace_load_mem("cpu-only.json", nogpu, strlen(nogpu), &t, &err), SC_OK);
  ck_assert_int_eq(sc_trace_compare_run(&t, 1, &res, &d, &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "cpu-only.json: nothing to compare"));
  sc_trace_free(t);
}
END_TEST

/* The profiled step of gpt3-125m on one H200 (hardware/h200-sxm-141gb/torch/, PyTorch
 * 2.11): its 709 kernels and 73 memsets, 13.07 ms of GPU time (the figure
 * docs/validation/torch-steps.csv states), every kernel in a family. */
START_TEST(real_h200_step) {
  sc_error err;
  char path[1024];
  sc_trace *t;
  data("../../hardware/h200-sxm-141gb/torch/trace-gpt3-125m-mb1.json.gz", path, sizeof path);
  ck_assert_msg(sc_trace_load(path, &t, &err) == SC_OK, "%s", err.msg);
  sc_result res;
  sc_timeline_detail d;
  predict("gpt3-125m", "dgx-h200", 1, 1, 1, 1, &res, &d);
  sc_trace_compare *c;
  ck_assert_msg(sc_trace_compare_run(&t, 1, &res, &d, &c, &err) == SC_OK, "%s", err.msg);
  size_t n;
  const sc_trace_cmp_step *s = sc_trace_compare_steps(c, &n);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(s[0].name, "trace"); /* no ProfilerStep#N: the whole file */
  uint64_t k = 0;
  for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) k += s[0].kernels[r];
  ck_assert_uint_eq(k, 709 + 73);
  ck_assert_uint_eq(s[0].kernels[SC_KFAM_MEMSET], 73);
  ck_assert_uint_eq(s[0].kernels[SC_KFAM_OPTIMIZER], 9); /* fused AdamW's launches */
  ck_assert_uint_eq(s[0].kernels[SC_TRACE_CMP_UNMAPPED], 0);
  ck_assert_int_eq(sc_trace_compare_unmapped(c, 0, NULL, NULL, NULL), SC_ENOTFOUND);
  ck_close(s[0].gpu_measured_s, 13.07e-3, 0.005e-3);
  uint64_t out;
  sc_trace_compare_outside(c, 0, &out, NULL);
  ck_assert_uint_eq(out, 0);
  ck_assert(s[0].predicted_row_s[SC_KFAM_GEMM] > 0 && s[0].predicted_row_s[SC_KFAM_COMM] == 0);
  sc_trace_compare_free(c);
  sc_trace_free(t);
}
END_TEST

int main(void) {
  Suite *s = suite_create("trace_compare");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, classify_names);
  tcase_add_test(tc, steps_by_hand);
  tcase_add_test(tc, real_h200_step);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
