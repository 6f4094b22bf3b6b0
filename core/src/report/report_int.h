/* Internal helpers shared by the report renderers (core/src/report/ only). */
#ifndef SC_REPORT_INT_H
#define SC_REPORT_INT_H

#include <stdio.h>

#include "stepcast/report.h"

/* Families + forward/recompute/backward + six communication/bubble/optimizer terms. */
#define SC_REPORT_MAX_TERMS (SC_SCHED_MAX_FAMILIES + 9)


/* JSON string with escaping (quotes, backslash, control characters as \uXXXX). */
/* A JSON number (%.12g), or null when not finite. */
void sc__json_number(FILE *out, double v);
/* SC_OK when every number of r a writer prints is finite, else SC_ERANGE naming who (the
 * writer) and the field: JSON, CSV and SVG have no spelling for inf or nan. */
int sc__result_check_finite(const sc_result *r, const char *who, sc_error *err);
/* Flush and check the stream: SC_OK or SC_EIO naming who. */
int sc__io_status(FILE *out, const char *who, sc_error *err);

#endif
