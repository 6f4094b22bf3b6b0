/* libFuzzer target: the topology spec loader (sc_topology_load, core/src/spec/spec.c) on any
 * bytes as a .toml file (its hardware reference is resolved, not loaded): SC_OK or an
 * error, never a crash, a leak or undefined behaviour. Seeds: tests/fuzz/corpus/topology/. */
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/spec.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("topology.toml", data, size);
  sc_topology t;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  int rc = sc_topology_load(path, &t, &err);
  if (rc != SC_OK) sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
  return 0;
}
