/* The CSV reader behind `stepcast validate` (core/src/validate/csv.c), on the fixtures in
 * tests/data/validate/ and on strings. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_config.h"
#include "stepcast/csv.h"
#include "stepcast/stepcast.h"

static const char *const required[] = {
    "id", "source", "topology", "gpus", "layers", "hidden", "ffn_hidden", "heads", "kv_heads",
    "vocab", "seq_len", "activation", "tp", "pp", "dp", "cp", "micro_batch", "global_batch",
    "schedule", "virtual_stages", "recompute", "sequence_parallel", "distributed_optimizer",
    "flash_attention", "dtype", "measured_iteration_s", "notes"};
#define NREQ (sizeof required / sizeof required[0])

static void fixture(const char *name, char *out, size_t cap) {
  const char *d = getenv("SC_TEST_DATA");
  if (d && *d) snprintf(out, cap, "%s/validate/%s", d, name);
  else snprintf(out, cap, "%s/tests/data/validate/%s", SC_SOURCE_DIR, name);
}

static sc_csv *load_ok(const char *name) {
  char path[1024];
  sc_csv *c = NULL;
  sc_error err;
  sc_error_clear(&err);
  fixture(name, path, sizeof path);
  ck_assert_msg(sc_csv_load(path, &c, &err) == SC_OK, "%s: %s", name, err.msg);
  return c;
}

START_TEST(good_file) {
  sc_csv *c = load_ok("good.csv");
  int idx[NREQ];
  sc_error err;
  uint32_t u = 0;
  int known = -1;
  double d = 0;
  sc_error_clear(&err);
  ck_assert_uint_eq(sc_csv_ncols(c), 28); /* 27 + extra_col */
  ck_assert_uint_eq(sc_csv_nrows(c), 3);
  ck_assert_int_eq(sc_csv_require(c, required, NREQ, idx, &err), SC_OK);
  ck_assert_int_eq(sc_csv_column(c, "notes"), 0);
  ck_assert_int_eq(sc_csv_column(c, "extra_col"), 1);
  ck_assert_int_eq(sc_csv_column(c, "id"), 27);
  ck_assert_int_eq(sc_csv_column(c, "no_such"), -1);
  /* Quoted field with commas, doubled quotes and a line break (CRLF file, LF inside). */
  ck_assert_str_eq(sc_csv_field(c, 0, 0),
                   "shape of sc21-t1-1.7b, \"quoted\", with, commas\nand a line break");
  ck_assert_str_eq(sc_csv_field(c, 0, (size_t)idx[1]), "\"Narayanan et al., SC21\" (test fixture)");
  /* The last field of a CRLF record carries no '\r'. */
  ck_assert_str_eq(sc_csv_field(c, 0, 27), "ok-1.7b");
  ck_assert_str_eq(sc_csv_field(c, 2, 27), "err-tp5");
  /* Rows start on lines 2, 4, 5 (row 1 holds a line break). */
  ck_assert_uint_eq(sc_csv_line(c, 0), 2);
  ck_assert_uint_eq(sc_csv_line(c, 1), 4);
  ck_assert_uint_eq(sc_csv_line(c, 2), 5);
  ck_assert_ptr_null(sc_csv_field(c, 3, 0));
  ck_assert_ptr_null(sc_csv_field(c, 0, 28));
  ck_assert_int_eq(sc_csv_u32(c, 0, (size_t)idx[3], &u, &known, &err), SC_OK);
  ck_assert_int_eq(known, 1);
  ck_assert_uint_eq(u, 32);
  ck_assert_int_eq(sc_csv_u32(c, 0, (size_t)idx[16], &u, &known, &err), SC_OK); /* micro_batch */
  ck_assert_int_eq(known, 0);
  ck_assert_int_eq(sc_csv_u32(c, 1, (size_t)idx[12], &u, &known, &err), SC_OK); /* tp empty */
  ck_assert_int_eq(known, 0);
  ck_assert_int_eq(sc_csv_double(c, 0, (size_t)idx[25], &d, &known, &err), SC_OK);
  ck_assert_int_eq(known, 1);
  ck_assert_double_eq_tol(d, 3.528, 1e-12);
  sc_csv_free(c);
}
END_TEST

START_TEST(bad_gpus) {
  sc_csv *c = load_ok("bad_gpus.csv");
  int col = sc_csv_column(c, "gpus");
  uint32_t u = 7;
  int known = 1;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_int_ge(col, 0);
  ck_assert_int_eq(sc_csv_u32(c, 0, (size_t)col, &u, &known, &err), SC_OK);
  ck_assert_uint_eq(u, 32);
  ck_assert_int_eq(sc_csv_u32(c, 1, (size_t)col, &u, &known, &err), SC_EPARSE);
  ck_assert_int_eq(known, 0);
  /* Row 2 starts on line 4 (row 1's notes hold a line break). */
  ck_assert_msg(strstr(err.msg, "bad_gpus.csv:4: column 'gpus': 'thirty-two'") != NULL, "%s",
                err.msg);
  sc_csv_free(c);
}
END_TEST

START_TEST(missing_column) {
  sc_csv *c = load_ok("missing_column.csv");
  int idx[NREQ];
  sc_error err;
  sc_error_clear(&err);
  ck_assert_int_eq(sc_csv_require(c, required, NREQ, idx, &err), SC_ESPEC);
  ck_assert_msg(strstr(err.msg, "missing_column.csv:1: required column 'measured_iteration_s'"),
                "%s", err.msg);
  sc_csv_free(c);
}
END_TEST

static void load_fails(const char *name, const char *expect) {
  char path[1024];
  sc_csv *c = (sc_csv *)1;
  sc_error err;
  sc_error_clear(&err);
  fixture(name, path, sizeof path);
  ck_assert_int_eq(sc_csv_load(path, &c, &err), SC_EPARSE);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err.msg, expect) != NULL, "'%s' lacks '%s'", err.msg, expect);
}

START_TEST(unterminated) {
  load_fails("unterminated.csv", "unterminated.csv:4: column 'notes': unterminated quoted field");
}
END_TEST

START_TEST(wrong_fields) {
  load_fails("wrong_fields.csv", "wrong_fields.csv:4: row has 28 fields, the header has 27");
}
END_TEST

START_TEST(missing_file) {
  sc_csv *c = NULL;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_int_eq(sc_csv_load("/nonexistent/runs.csv", &c, &err), SC_EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/runs.csv"));
}
END_TEST

static int parse_str(const char *text, sc_csv **c, sc_error *err) {
  sc_error_clear(err);
  return sc_csv_parse("t.csv", text, strlen(text), c, err);
}

START_TEST(strings) {
  sc_csv *c = NULL;
  sc_error err;
  int64_t i = 0;
  int known = 0;
  double d;
  /* Minimal file, no final line end, empty last field, blank lines skipped. */
  ck_assert_int_eq(parse_str("a,b\r\n\r\n1,\n\n\"x\"\"y\",\"2,3\"", &c, &err), SC_OK);
  ck_assert_uint_eq(sc_csv_nrows(c), 2);
  ck_assert_str_eq(sc_csv_field(c, 0, 0), "1");
  ck_assert_str_eq(sc_csv_field(c, 0, 1), "");
  ck_assert_str_eq(sc_csv_field(c, 1, 0), "x\"y");
  ck_assert_str_eq(sc_csv_field(c, 1, 1), "2,3");
  ck_assert_uint_eq(sc_csv_line(c, 0), 3);
  ck_assert_uint_eq(sc_csv_line(c, 1), 5);
  ck_assert_int_eq(sc_csv_i64(c, 0, 0, &i, &known, &err), SC_OK);
  ck_assert_int_eq(i, 1);
  ck_assert_int_eq(sc_csv_double(c, 1, 1, &d, &known, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "t.csv:5: column 'b': '2,3' is not a finite number"));
  sc_csv_free(c);
  /* Trailing comma at the end of the file: one more empty field. */
  ck_assert_int_eq(parse_str("a,b\n1,", &c, &err), SC_OK);
  ck_assert_str_eq(sc_csv_field(c, 0, 1), "");
  sc_csv_free(c);
  /* Header names are trimmed. */
  ck_assert_int_eq(parse_str(" a , b\n1,2\n", &c, &err), SC_OK);
  ck_assert_int_eq(sc_csv_column(c, "b"), 1);
  sc_csv_free(c);
  /* Negative for u32, trailing junk for i64. */
  ck_assert_int_eq(parse_str("a,b\n-3,12x\n", &c, &err), SC_OK);
  {
    uint32_t u;
    ck_assert_int_eq(sc_csv_u32(c, 0, 0, &u, &known, &err), SC_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "column 'a': '-3' is not a non-negative integer"));
    ck_assert_int_eq(sc_csv_i64(c, 0, 1, &i, &known, &err), SC_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "column 'b': '12x' is not an integer"));
  }
  sc_csv_free(c);
}
END_TEST

START_TEST(malformed_strings) {
  sc_csv *c = (sc_csv *)1;
  sc_error err;
  ck_assert_int_eq(parse_str("a,b\n1,x\"y\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "t.csv:2: column 'b': quote inside an unquoted field"));
  ck_assert_int_eq(parse_str("a,b\n\"1\"z,2\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "t.csv:2: column 'a': text after the closing quote"));
  ck_assert_int_eq(parse_str("a,a\n1,2\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "column 'a' appears twice"));
  ck_assert_int_eq(parse_str("a,,b\n1,2,3\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "header column 2 has no name"));
  ck_assert_int_eq(parse_str("", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "no header row"));
  ck_assert_int_eq(parse_str("a,b\n1\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "t.csv:2: row has 1 fields, the header has 2"));
  ck_assert_int_eq(parse_str("a,b\n1,\"2\n3\n", &c, &err), SC_EPARSE);
  ck_assert_ptr_nonnull(strstr(err.msg, "t.csv:2: column 'b': unterminated quoted field"));
  { /* a NUL byte would end a field early: refused with its line */
    static const char nul[] = "a,b\n1,2\n3,4\0" "5\n";
    sc_error_clear(&err);
    ck_assert_int_eq(sc_csv_parse("t.csv", nul, sizeof nul - 1, &c, &err), SC_EPARSE);
    ck_assert_msg(strstr(err.msg, "t.csv:3: a NUL byte in the line") != NULL, "%s", err.msg);
  }
  ck_assert_ptr_null(c);
}
END_TEST

static Suite *validate_suite(void) {
  Suite *s = suite_create("validate");
  TCase *tc = tcase_create("csv");
  tcase_add_test(tc, good_file);
  tcase_add_test(tc, bad_gpus);
  tcase_add_test(tc, missing_column);
  tcase_add_test(tc, unterminated);
  tcase_add_test(tc, wrong_fields);
  tcase_add_test(tc, missing_file);
  tcase_add_test(tc, strings);
  tcase_add_test(tc, malformed_strings);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(validate_suite());
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
