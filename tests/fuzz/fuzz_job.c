/* libFuzzer target: the job file reader (sc_cli_job_load, core/cli/job.c: a [job] table of
 * the predict/validate flags) on any bytes as a .toml file: SC_OK or an error, never a
 * crash, a leak or undefined behaviour. Seeds: tests/fuzz/corpus/job/. */
#include <string.h>

#include "fuzz_file.h"
#include "job.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("job.toml", data, size);
  sc_cli_job j;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  sc_cli_job_init(&j);
  int rc = sc_cli_job_load(&j, path, &err);
  if (rc != SC_OK) sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
  return 0;
}
