/* Internal to the library and the CLI: spec loading beyond the public stepcast/spec.h. */
#ifndef SC_SPEC_INT_H
#define SC_SPEC_INT_H

#include <stddef.h>

#include "stepcast/stepcast.h"

/* sc_hardware_load on len bytes of TOML text instead of a file (filename names it in the
 * messages): the same parse and the same checks of the hardware plugin, so that a writer
 * (stepcast sample) can refuse a file its loader would refuse before writing it. */
int sc__hardware_load_text(struct sc_registry *reg, const char *text, size_t len,
                           const char *filename, sc_device *out, sc_error *err);

#endif
