/*
 * Helpers shared by the benchmark programs of tests/bench (each a single .c file that
 * includes this header): a monotonic clock and a comparator for qsort of doubles.
 */
#ifndef SC_BENCH_UTIL_H
#define SC_BENCH_UTIL_H

#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort comparator: ascending doubles. */
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
