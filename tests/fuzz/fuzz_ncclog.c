/* libFuzzer target: the nccl-tests log importer (core/src/comm/ncclog.c,
 * sc_comm_read_nccl_log: the "# Collective", "#  Rank" and size/time table lines of an
 * all_reduce_perf log) on any bytes as a file: SC_OK or an error, never a crash, a leak or
 * undefined behaviour. Seeds: tests/fuzz/corpus/ncclog/. */
#include <string.h>

#include "comm/comm_int.h"
#include "fuzz_file.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("nccl.log", data, size);
  sc_nccl_log log;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  memset(&log, 0, sizeof log);
  int rc = sc_comm_read_nccl_log(path, &log, &err);
  if (rc != SC_OK) {
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    sc_comm_nccl_log_free(&log);
    return 0;
  }
  if (log.n > 0 && log.rows == NULL) __builtin_trap();
  sc_comm_nccl_log_free(&log);
  return 0;
}
