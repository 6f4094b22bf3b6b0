/*
 * stepcast library API.
 *
 * Conventions (see docs/architecture.md): public names sc_*, internal sc__*, macros SC_*.
 * Functions return int status (SC_OK = 0, negative codes from SC_ERRNO_MAP in plugin.h)
 * and put a one-line message naming file:line:key or the parameter in an sc_error.
 * Library code never prints and never exits. Units are SI and carried in names.
 */
#ifndef STEPCAST_H
#define STEPCAST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "stepcast/plugin.h"
#include "stepcast/spec.h"
#include "stepcast/registry.h"
#include "stepcast/parallel.h"
#include "stepcast/stack.h"
#include "stepcast/common.h"

#endif /* STEPCAST_H */
