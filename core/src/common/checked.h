/* Checked arithmetic on user-given sizes, and the bounds every parallel degree and size
 * given by a user is held to (flags, job-file keys, validate CSV cells, library callers).
 *
 * The bounds are far beyond any real job, yet small enough that the workload's own
 * combinations of them (2*cp, pp*virtual_stages, the product of the degrees) cannot wrap a
 * 32-bit value; the products of sizes that reach operator shapes (micro-batch x seq x
 * hidden, ...) are checked separately with sc__mul_i64 (sc_workload_validate). */
#ifndef SC_COMMON_CHECKED_H
#define SC_COMMON_CHECKED_H

#include <stdint.h>
#include <string.h>

#define SC_MAX_GPUS 16777216u          /* 2^24: gpus, and each of tp, pp, dp, cp */
#define SC_MAX_MICRO_BATCH 16777216u   /* 2^24 sequences per micro-batch */
#define SC_MAX_GLOBAL_BATCH 1073741824u /* 2^30 sequences per iteration */
#define SC_MAX_SEQ_LEN 1073741824u     /* 2^30 tokens per sequence */
#define SC_MAX_VIRTUAL_STAGES 64u      /* = SC_SCHED_MAX_VP */
#define SC_MAX_STAGE_LAYERS 100000u    /* layers of one pipeline stage (--stage-layers, ...) */
#define SC_MAX_VOCAB_DIVISIBLE_BY 65536u /* the vocabulary's padding multiple (times tp) */

/* The upper bound of a user-given parallel size by its name as the CLI spells it ("tp",
 * "micro-batch", "global_batch": '-' and '_' alike); 0 when name is not one of them. */
static inline uint32_t sc__size_limit(const char *name) {
  static const struct { const char *name; uint32_t max; } lim[] = {
      {"gpus", SC_MAX_GPUS},          {"tp", SC_MAX_GPUS},
      {"pp", SC_MAX_GPUS},            {"dp", SC_MAX_GPUS},
      {"cp", SC_MAX_GPUS},            {"micro-batch", SC_MAX_MICRO_BATCH},
      {"global-batch", SC_MAX_GLOBAL_BATCH}, {"seq-len", SC_MAX_SEQ_LEN},
      {"virtual-stages", SC_MAX_VIRTUAL_STAGES},
      {"first-stage-layers", SC_MAX_STAGE_LAYERS}, {"last-stage-layers", SC_MAX_STAGE_LAYERS},
      {"vocab-divisible-by", SC_MAX_VOCAB_DIVISIBLE_BY}, {"shard-size", SC_MAX_GPUS}};
  char c[32];
  size_t i = 0;
  for (; name[i] != '\0' && i + 1 < sizeof c; i++) c[i] = name[i] == '_' ? '-' : name[i];
  c[i] = '\0';
  for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++)
    if (strcmp(c, lim[k].name) == 0) return lim[k].max;
  return 0;
}

/* *out = a * b; returns 1 (and leaves *out unspecified) on signed 64-bit overflow, else 0. */
static inline int sc__mul_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/* *out = a + b; 1 on overflow, else 0. */
static inline int sc__add_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}

/* *out = the product of v[0..n-1]; 1 on overflow, else 0 (n = 0: 1). */
static inline int sc__prod_i64(const int64_t *v, int n, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, v[i], &p)) return 1;
  *out = p;
  return 0;
}

#endif
