/* libFuzzer target: the residual model loader (sc_residuals_load, core/src/estimate/
 * residuals.c and model.c): residuals.toml and the gbdt model it names, XGBoost's JSON
 * (checked by the loader before XGBoost reads it). The input up to its first NUL byte is
 * residuals.toml, the rest is the file m.json of the same folder (seeds name it: file =
 * "m.json"). SC_OK or an error, never a crash, a leak or undefined behaviour; each model
 * loaded then predicts once. Seeds: tests/fuzz/corpus/residuals/. */
#include <string.h>

#include "fuzz_file.h"
#include "stepcast/estimate.h"
#include "stepcast/stepcast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, '\0', size);
  const size_t tl = nul ? (size_t)(nul - data) : size;
  sc_residuals *r = NULL;
  sc_error err;
  if (sc_fuzz_write("residuals.toml", data, tl) == NULL) return 0;
  if (sc_fuzz_write("m.json", nul ? nul + 1 : data, nul ? size - tl - 1 : 0) == NULL) return 0;
  memset(&err, 0, sizeof err);
  int rc = sc_residuals_load(sc_fuzz_dir(), &r, &err);
  if (rc != SC_OK) {
    if (r != NULL) __builtin_trap();
    sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    return 0;
  }
  for (size_t i = 0; i < r->n; i++) {
    double x[64], y = 0.0;
    const sc_resid_model *m = &r->models[i];
    if (m->nfeatures > 64) continue;
    for (uint32_t k = 0; k < m->nfeatures; k++) x[k] = 0.5 * k;
    memset(&err, 0, sizeof err);
    rc = sc_resid_predict(m, x, &y, &err);
    if (rc != SC_OK) sc_fuzz_check_error(rc, err.msg, sizeof err.msg);
    (void)y;
  }
  sc_residuals_free(r);
  return 0;
}
