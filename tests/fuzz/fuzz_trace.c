/* libFuzzer target: the streaming Kineto trace reader (core/src/trace/parse.c) must return
 * SC_OK or a one-line error for any input, never crash or leak. Seeds: the JSON of
 * tests/data/trace/ (decompressed) and ../shared/data/traces/. See docs/trace.md. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "stepcast/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sc_trace *t = NULL;
  sc_error err;
  memset(&err, 0, sizeof err);
  int rc = sc_trace_load_mem("fuzz.json", data, size, &t, &err);
  if (rc == SC_OK) {
    sc_trace_info in;
    sc_trace_get_info(t, &in);
    if (in.kept > in.events) __builtin_trap();
    sc_trace_free(t);
  } else {
    if (t != NULL || memchr(err.msg, '\n', sizeof err.msg) != NULL) __builtin_trap();
  }
  return 0;
}
