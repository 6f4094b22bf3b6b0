/* libFuzzer target: the reader of `stepcast comm --validate` tables (published nccl-tests
 * results, core/src/comm/validation.c, sc_comm_read_validation: quoted fields, typed
 * columns) on any bytes as a file: SC_OK or an error, never a crash, a leak or undefined
 * behaviour; a row read satisfies the contract. Seeds: tests/fuzz/corpus/comm_validation/. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm_int.h"
#include "fuzz_file.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("validation.csv", data, size);
  sc_comm_vrow *rows = NULL;
  size_t n = 0;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  int rc = sc_comm_read_validation(path, &rows, &n, &err);
  if (rc != SC_OK) {
    if (rows != NULL) __builtin_trap();
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    const sc_comm_vrow *r = &rows[i];
    if (r->id[0] == '\0' || r->gpus < 1 || !(r->bytes >= 1) || !(r->busbw_Bps > 0))
      __builtin_trap();
    if (memchr(r->notes, '\0', sizeof r->notes) == NULL) __builtin_trap();
  }
  free(rows);
  return 0;
}
