/* The median of an array of doubles, for the core and the CLI (one definition: the
 * sampler's microbenchmarks, the GEMM exposure solver and trace replay each had their own). */
#ifndef SC_COMMON_MEDIAN_H
#define SC_COMMON_MEDIAN_H

#include <stddef.h>
#include <stdlib.h>

static inline int sc__cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n) (the mean of the two middle values when n is even), sorting v in
 * place; 0 when n is 0. */
static inline double sc__median(double *v, size_t n) {
  if (n == 0) return 0.0;
  qsort(v, n, sizeof *v, sc__cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
