/* Internal to core/src/estimate: what residuals.c needs of model.c. */
#ifndef SC_ESTIMATE_INT_H
#define SC_ESTIMATE_INT_H

#include <stdio.h>

#include "stepcast/estimate.h"

/* Write the fitted gbdt model m as XGBoost's JSON model to f (an open file, e.g. an
 * sc_afile's); path names it in errors. SC_EINVAL when m is not a fitted gbdt, SC_EIO on an
 * XGBoost or write error. */
int sc__resid_write_gbdt(const sc_resid_model *m, FILE *f, const char *path, sc_error *err);

#endif
