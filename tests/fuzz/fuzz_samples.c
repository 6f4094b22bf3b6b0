/* libFuzzer target: the samples reader (sc_samples_read, core/src/estimate/samples.c: the
 * CSV that stepcast sample writes and fit reads, with its "# key = value" metadata) on any
 * bytes as a file: SC_OK or an error, never a crash, a leak or undefined behaviour; a
 * set read satisfies the contract (ndims in 1..8, min <= p10 <= median <= p90 <= max, every
 * row's group one of the set's names). Native files and measured tables (with groups).
 * Seeds: tests/fuzz/corpus/samples/. */
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("samples.csv", data, size);
  sc_sample_set s;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  memset(&s, 0, sizeof s);
  int rc = sc_samples_read(path, &s, &err);
  if (rc != SC_OK) {
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    return 0;
  }
  if (s.n == 0) __builtin_trap();
  for (size_t i = 0; i < s.n; i++) {
    const sc_sample *r = &s.rows[i];
    if (r->op.family == NULL || r->op.ndims < 1 || r->op.ndims > 8) __builtin_trap();
    if (!(r->m.min_s <= r->m.median_s && r->m.median_s <= r->m.max_s)) __builtin_trap();
    if (r->group > s.ngroups) __builtin_trap();
  }
  for (size_t i = 0; i < s.ngroups; i++) /* a name of 1 to 47 characters */
    if (s.groups[i] == NULL || s.groups[i][0] == '\0' || strlen(s.groups[i]) > 47)
      __builtin_trap();
  for (size_t i = 0; i < s.nmeta; i++)
    if (sc_samples_meta(&s, s.meta_key[i]) == NULL) __builtin_trap();
  sc_samples_free(&s);
  return 0;
}
