/* The residual fit as a library (stepcast/fit.h): requests that contradict themselves are
 * refused before anything is read; a fit writes nothing but its folder until sc_fit_write;
 * a fit freed unwritten leaves no file behind; what it writes loads as a residual set of
 * its device; a result is written once. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sc_config.h"
#include "stepcast/estimate.h"
#include "stepcast/fit.h"
#include "stepcast/registry.h"
#include "stepcast/stepcast.h"

static sc_registry *reg;

static void setup(void) {
  sc_error err;
  ck_assert(sc_registry_new(&reg, &err) == SC_OK);
  ck_assert(sc_registry_add_builtins(reg, &err) == SC_OK);
}

static void teardown(void) { sc_registry_free(reg); }

static const char *subset(void) {
  static char p[SC_PATH_MAX];
  const char *d = getenv("SC_TEST_DATA");
  snprintf(p, sizeof p, "%s/fit-groups/seed-subset.csv", d ? d : SC_SOURCE_DIR "/tests/data");
  return p;
}

/* the number of entries of dir (. and .. aside) */
static int entries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  ck_assert_msg(d != NULL, "%s", dir);
  while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static void rm_dir(const char *dir) {
  char p[SC_PATH_MAX + 300];
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    remove(p);
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

static void request(sc_fit_request *q, const char *out) {
  sc_fit_request_defaults(q);
  q->samples = subset();
  q->hardware = "a100-sxm4-80gb";
  q->out = out;
  q->opts.gbdt_rounds = 20;
}

START_TEST(refuses_contradictions) {
  sc_fit_request q;
  sc_fit_result *r = (sc_fit_result *)&q; /* set to NULL on every refusal */
  sc_error err;
  request(&q, "/tmp/sc-fit-never");
  q.comm = "x.csv"; /* samples and comm */
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, "samples and comm") != NULL, "%s", err.msg);
  request(&q, NULL);
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EINVAL);
  request(&q, "/tmp/sc-fit-never");
  q.folds = 1;
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EINVAL);
  request(&q, "/tmp/sc-fit-never");
  q.train = 0;
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EINVAL);
  request(&q, "/tmp/sc-fit-never");
  q.repeat = subset(); /* without its hardware file */
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EINVAL);
  ck_assert_int_ne(access("/tmp/sc-fit-never", F_OK), 0); /* nothing created */
  ck_assert_int_eq(sc_fit_run(NULL, &q, &r, &err), SC_EINVAL);
  ck_assert_int_eq(sc_fit_write(NULL, &err), SC_EINVAL);
  sc_fit_free(NULL);
}
END_TEST

/* --out a file, not a folder: SC_EIO naming it, after the samples were read */
START_TEST(out_not_a_folder) {
  char file[] = "/tmp/sc-fit-file-XXXXXX";
  sc_fit_request q;
  sc_fit_result *r = NULL;
  sc_error err;
  int fd = mkstemp(file);
  ck_assert_int_ge(fd, 0);
  close(fd);
  request(&q, file);
  ck_assert_int_eq(sc_fit_run(reg, &q, &r, &err), SC_EIO);
  ck_assert_ptr_null(r);
  ck_assert_msg(strstr(err.msg, file) != NULL && strstr(err.msg, "not a folder") != NULL, "%s",
                err.msg);
  remove(file);
}
END_TEST

START_TEST(fit_then_write) {
  char dir[] = "/tmp/sc-fit-XXXXXX", rows[SC_PATH_MAX], out[SC_PATH_MAX];
  sc_fit_request q;
  sc_fit_result *r = NULL;
  sc_residuals *set = NULL;
  sc_error err;
  char *text = NULL;
  size_t len = 0;
  FILE *mem;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(out, sizeof out, "%s/residuals", dir);
  snprintf(rows, sizeof rows, "%s/rows.csv", dir);
  /* freed unwritten: the folder is there (sc_fit_run creates it), empty; no rows file and no
   * temporary beside it */
  request(&q, out);
  q.rows = rows;
  ck_assert_msg(sc_fit_run(reg, &q, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_str_eq(sc_fit_note(r), "");
  sc_fit_free(r);
  ck_assert_int_eq(entries(out), 0);
  ck_assert_int_eq(entries(dir), 1);
  /* written: the set loads as the device's, its manifest, the report and the rows; the
   * printed tables name the device and the samples */
  r = NULL;
  ck_assert_msg(sc_fit_run(reg, &q, &r, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_fit_write(r, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(sc_fit_write(r, &err), SC_EINVAL); /* once */
  mem = open_memstream(&text, &len);
  sc_fit_print(r, mem);
  fclose(mem);
  ck_assert_msg(strstr(text, "device a100-sxm4-80gb, 287 samples from ") != NULL, "%s", text);
  ck_assert_msg(strstr(text, "| family |") != NULL, "%s", text);
  free(text);
  sc_fit_free(r);
  ck_assert_int_eq(access(rows, R_OK), 0);
  ck_assert_msg(sc_residuals_load(out, &set, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_residuals_check(set, "a100-sxm4-80gb", reg, &err) == SC_OK, "%s", err.msg);
  sc_residuals_free(set);
  ck_assert_int_ge(entries(out), 2); /* residuals.toml, report.md (and active gbdt models) */
  rm_dir(out);
  remove(rows);
  rmdir(dir);
}
END_TEST

/* a samples file that cannot be read: its error, no folder, no rows file */
START_TEST(bad_samples_write_nothing) {
  char dir[] = "/tmp/sc-fit-XXXXXX", rows[SC_PATH_MAX], out[SC_PATH_MAX];
  sc_fit_request q;
  sc_fit_result *r = NULL;
  sc_error err;
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(out, sizeof out, "%s/residuals", dir);
  snprintf(rows, sizeof rows, "%s/rows.csv", dir);
  request(&q, out);
  q.samples = "/nonexistent/samples.csv";
  q.rows = rows;
  ck_assert_int_ne(sc_fit_run(reg, &q, &r, &err), SC_OK);
  ck_assert_msg(strstr(err.msg, "/nonexistent/samples.csv") != NULL, "%s", err.msg);
  ck_assert_int_eq(entries(dir), 0);
  rmdir(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("fit");
  TCase *tc = tcase_create("fit");
  int failed;
  SRunner *sr;
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, refuses_contradictions);
  tcase_add_test(tc, out_not_a_folder);
  tcase_add_test(tc, fit_then_write);
  tcase_add_test(tc, bad_samples_write_nothing);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
