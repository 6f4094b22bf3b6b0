/* libFuzzer target: the stack spec loader (sc_stack_load, core/src/spec/spec.c) on any
 * bytes as a .toml file: SC_OK or an error, never a crash, a leak or undefined behaviour;
 * a loaded stack states only values in its ranges. Seeds: tests/fuzz/corpus/stack/. */
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/spec.h"
#include "stepcast/stack.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = sc_fuzz_write("stack.toml", data, size);
  sc_stack s;
  sc_error err;
  if (path == NULL) return 0;
  memset(&err, 0, sizeof err);
  int rc = sc_stack_load(path, &s, &err);
  if (rc != SC_OK) {
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    return 0;
  }
  if (!(s.host_per_kernel_s >= 0 && s.host_per_kernel_s <= SC_STACK_HOST_MAX_S)) __builtin_trap();
  for (uint32_t i = 0; i < s.nkernels; i++)
    if (!(s.kernels[i].value >= 1 && s.kernels[i].value <= SC_STACK_KERNELS_MAX)) __builtin_trap();
  for (uint32_t i = 0; i < s.ntraffic; i++)
    if (!(s.traffic[i].value >= 1 && s.traffic[i].value <= SC_STACK_TRAFFIC_MAX)) __builtin_trap();
  for (uint32_t i = 0; i < s.nattention; i++)
    if (!(s.attention[i].fwd > 0 && s.attention[i].fwd <= 1 && s.attention[i].bwd > 0 &&
          s.attention[i].bwd <= 1))
      __builtin_trap();
  if (s.nkernels + s.ntraffic > SC_STACK_RULES_MAX || s.nattention > SC_STACK_DEVICES_MAX)
    __builtin_trap();
  return 0;
}
