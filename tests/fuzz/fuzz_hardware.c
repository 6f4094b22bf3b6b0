/* libFuzzer target: the hardware spec loader (sc_hardware_load: the file's 'kind' picks the
 * hardware plugin that describes it, the built-in gpu and cpu plugins here) on any bytes as
 * a .toml file: SC_OK or an error, never a crash, a leak or undefined behaviour. Seeds:
 * tests/fuzz/corpus/hardware/. */
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/registry.h"
#include "stepcast/spec.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sc_registry *reg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_error err;
  memset(&err, 0, sizeof err);
  if (reg == NULL) { /* once: the plugins' state lives as long as the process */
    if (sc_registry_new(&reg, &err) != SC_OK || sc_registry_add_builtins(reg, &err) != SC_OK)
      __builtin_trap();
  }
  const char *path = sc_fuzz_write("hardware.toml", data, size);
  sc_device dev;
  if (path == NULL) return 0;
  int rc = sc_hardware_load(reg, path, &dev, &err);
  if (rc != SC_OK) sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
  return 0;
}
