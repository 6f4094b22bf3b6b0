/* libFuzzer target: the CSV reader (sc_csv_parse, core/src/validate/csv.c: quoted fields,
 * line numbers) and its typed cells as `stepcast validate` reads its rows (sc_csv_require
 * of the columns, then every cell as i64, u32 and double): SC_OK or an error, never a
 * crash, a leak or undefined behaviour. Seeds: tests/fuzz/corpus/csv/. */
#include <stdint.h>
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/csv.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const need[] = {"id", "gpus", "measured_iteration_s"};
  sc_csv *c = NULL;
  sc_error err;
  memset(&err, 0, sizeof err);
  int rc = sc_csv_parse("fuzz.csv", (const char *)data, size, &c, &err);
  if (rc != SC_OK) {
    if (c != NULL) __builtin_trap();
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    return 0;
  }
  const size_t nr = sc_csv_nrows(c), nc = sc_csv_ncols(c);
  int idx[3];
  if ((rc = sc_csv_require(c, need, 3, idx, &err)) != SC_OK)
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
  for (size_t k = 0; k < nc; k++)
    if (sc_csv_colname(c, k) == NULL || sc_csv_column(c, sc_csv_colname(c, k)) < 0) __builtin_trap();
  (void)sc_csv_column(c, " tp ");
  for (size_t r = 0; r < nr; r++) {
    if (sc_csv_line(c, r) < 2) __builtin_trap(); /* the header is line 1 */
    for (size_t k = 0; k < nc; k++) {
      const char *f = sc_csv_field(c, r, k);
      int64_t i;
      uint32_t u;
      double d;
      int known;
      if (f == NULL) __builtin_trap();
      (void)strlen(f);
      memset(&err, 0, sizeof err);
      if ((rc = sc_csv_i64(c, r, k, &i, &known, &err)) != SC_OK)
        sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
      memset(&err, 0, sizeof err);
      if ((rc = sc_csv_u32(c, r, k, &u, &known, &err)) != SC_OK)
        sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
      memset(&err, 0, sizeof err);
      if ((rc = sc_csv_double(c, r, k, &d, &known, &err)) != SC_OK)
        sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    }
  }
  sc_csv_free(c);
  return 0;
}
