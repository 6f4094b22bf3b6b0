/*
 * adam_alias: AdamW (sc__cpu_adam) over arrays that share their offset in a 4 KiB page, as
 * plain malloc leaves large blocks, against the same arrays each on its own 64-byte line of
 * the page (sc__cpu_buf_alloc, as `stepcast sample` and train_step allocate them); see
 * docs/notes/0001-host-cpu-residuals.md, "Kernels out of line, staggered buffers and the attention tile".
 *
 * Each round allocates four fresh arrays of --params floats both ways (new addresses each
 * time), fills them as a training step would see them, and times the median of 9 calls
 * after one warm-up; it prints both medians per round.
 *
 *   cmake --build build-rel --target adam_alias
 *   ./build-rel/bin/adam_alias [--params N] [--rounds R]     (defaults 3808256, 6)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "bench_util.h"

#define CALLS 9

/* The median of CALLS AdamW steps on p, g, m, v, in ms. */
static double adam_ms(int64_t n, float *p, float *g, float *m, float *v) {
  double t[CALLS];
  for (int64_t i = 0; i < n; i++) {
    float r = (float)sc__cpu_hash(1, (uint64_t)i) * (2.0f / 4294967296.0f) - 1.0f;
    p[i] = 0.02f * r;
    g[i] = 1e-4f * r;
    m[i] = v[i] = 0.0f;
  }
  sc__cpu_adam(n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, p, g, m, v); /* warm-up */
  for (int k = 0; k < CALLS; k++) {
    double t0 = now_s();
    sc__cpu_adam(n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, k + 2, p, g, m, v);
    t[k] = now_s() - t0;
  }
  qsort(t, CALLS, sizeof t[0], cmp_double);
  return t[CALLS / 2] * 1e3;
}

int main(int argc, char **argv) {
  long long n = 3808256, rounds = 6;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    long long *dst = strcmp(argv[i], "--params") == 0   ? &n
                     : strcmp(argv[i], "--rounds") == 0 ? &rounds
                                                        : NULL;
    if (dst == NULL || i + 1 >= argc) {
      fprintf(stderr, "usage: adam_alias [--params N] [--rounds R]\n");
      return 2;
    }
    *dst = strtoll(argv[++i], &end, 10);
    if (end == argv[i] || *end != '\0' || *dst < 1 || *dst > (1LL << 30)) {
      fprintf(stderr, "adam_alias: %s: '%s' is not a whole number in [1, 2^30]\n",
              argv[i - 1], argv[i]);
      return 2;
    }
  }
  printf("# AdamW over %lld fp32 parameters, median of %d calls (ms)\n", n, CALLS);
  printf("round  same page offset  own 64-byte lines\n");
  for (long long r = 0; r < rounds; r++) {
    size_t bytes = (size_t)n * sizeof(float);
    float *a[4];
    void *raw[4];
    double same, own;
    for (int k = 0; k < 4; k++) a[k] = malloc(bytes);
    if (!a[0] || !a[1] || !a[2] || !a[3]) {
      fprintf(stderr, "adam_alias: out of memory\n");
      return 1;
    }
    same = adam_ms(n, a[0], a[1], a[2], a[3]);
    for (int k = 0; k < 4; k++) free(a[k]);
    for (int k = 0; k < 4; k++) {
      a[k] = sc__cpu_buf_alloc(bytes, (unsigned)k, &raw[k]);
      if (a[k] == NULL) {
        fprintf(stderr, "adam_alias: out of memory\n");
        return 1;
      }
    }
    own = adam_ms(n, a[0], a[1], a[2], a[3]);
    for (int k = 0; k < 4; k++) free(raw[k]);
    printf("%5lld  %16.3f  %17.3f\n", r + 1, same, own);
  }
  return 0;
}
