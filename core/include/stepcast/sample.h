/* stepcast/sample.h: the plan of operator shapes a sampler measures on a device.
 *
 * A designed plan (sc_sample_plan_build) covers each operator family with Halton points over
 * the log-ranges of real transformer layers (GEMMs to 8192, attention sequences to 8192,
 * memory-bound families to 2^28 elements on an accelerator; on the host CPU half of each
 * memory-bound family's points past its last-level cache), interleaved family by family so
 * that a time budget spent early still measures every family. A plan file
 * (sc_sample_plan_read) lists a job's own operators, as stepcast ops --csv writes them.
 * docs/learned.md describes the plan; stepcast sample measures it. */
#ifndef STEPCAST_SAMPLE_H
#define STEPCAST_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operators to measure, in order. ops[i].family points at a static family name. */
typedef struct sc_sample_plan {
  sc_op_desc *ops;
  size_t n, cap;
} sc_sample_plan;

/* Append one operator (dtype fp32; set ops[n - 1].dtype after). SC_ENOMEM. */
int sc_sample_plan_add(sc_sample_plan *p, const char *family, uint32_t variant, uint32_t ndims,
                       const int64_t *dims);

/* The designed plan of the families in the comma-separated list families (NULL: all of
 * gemm, attention, norm, softmax, elementwise, optimizer, embedding, cross_entropy): a
 * quarter of each family's points with quick; gpu != 0 the accelerator ranges; mid the
 * element count (the host CPU's last-level cache, in elements) half of each memory-bound
 * family's points lie below; every operator in dtype. The same arguments give the same plan.
 * SC_ENOMEM. */
int sc_sample_plan_build(sc_sample_plan *pl, const char *families, int quick, int gpu,
                         double mid, sc_dtype dtype);

/* A plan file: a CSV with columns family, variant, dtype and dims ("AxBx..."; a kind column,
 * where there is one, keeps the rows of kind "op"). Rows of a family not in families (NULL:
 * all), or that no sampler measures (memcpy, the activations past SC_EW_SAMPLED), are
 * counted in *other; an operator listed again is measured once and counted in *dups. Errors: the CSV reader's, SC_EPARSE
 * "path:line: column 'name': ..." for a malformed row, and for a file with no operator to
 * measure; SC_ENOMEM. */
int sc_sample_plan_read(const char *path, const char *families, sc_sample_plan *pl,
                        size_t *other, size_t *dups, sc_error *err);

/* Free the plan's operators; pl stays usable (empty). NULL is a no-op. */
void sc_sample_plan_free(sc_sample_plan *pl);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_SAMPLE_H */
