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
  for (uint32_t i = 0; i < s.nattention; i++) {
    const sc_stack_attention *a = &s.attention[i];
    if (a->n < 1 || a->n > SC_STACK_HEAD_DIMS_MAX) __builtin_trap();
    for (uint32_t k = 0; k < a->n; k++)
      if (!(a->fwd[k] > 0 && a->fwd[k] <= 1 && a->bwd[k] > 0 && a->bwd[k] <= 1) ||
          (k > 0 && !(a->head_dim[k] > a->head_dim[k - 1])))
        __builtin_trap();
  }
  if (s.nkernels + s.ntraffic > SC_STACK_RULES_MAX || s.nattention > SC_STACK_DEVICES_MAX)
    __builtin_trap();
  return 0;
}
