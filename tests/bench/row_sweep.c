/*
 * row_sweep: where the host CPU's norm kernels stop overlapping their arithmetic with their
 * memory traffic (docs/operators.md, "Row kernels past the L1").
 *
 * For each norm kernel of plugins/hardware/cpu_kernels.h (layer-norm and RMSNorm, forward
 * and backward) and row widths from 64 to 8192 columns, it times the kernel on
 *   cache:  16384 elements (every array cache resident), and
 *   dram:   N elements (default 2^24 + 16384, 64 MiB per array: past a 32 MiB last-level
 *           cache; not 2^24: arrays a power of two in size lie a power of two apart, and the
 *           kernels' streams then collide, `--elements 33554432` against 33570816 on the
 *           Zen 4 guest: 1.32-1.58 ns per element against 1.03-1.37 for the layer-norm
 *           backward; docs/operators.md, "Row kernels past the L1"),
 * and prints nanoseconds per element for both, their difference (the time the kernel adds
 * when its data come from DRAM) and that difference as a share of the widest rows' one,
 * beside the per-row working set over the L1 data cache (row_bytes / l1, row_bytes as the
 * norm plugin counts it: 16, 24, 12 and 20 bytes per fp32 column). Medians of 7 calls after
 * one warm-up.
 *
 *   cmake --build build-rel --target row_sweep
 *   OPENBLAS_NUM_THREADS=1 ./build-rel/bin/row_sweep [--elements N] [--l1 BYTES]
 *
 * --l1 defaults to the C library's level-1 data cache size (sysconf; 49152 when unknown).
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL1_DCACHE_SIZE) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_kernels.h"
#include "bench_util.h"

/* Median seconds per element of variant v on rows x cols (buffers sized for it). */
static double time_norm(int v, int64_t rows, int64_t cols) {
  size_t n = (size_t)(rows * cols);
  float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy), *y = malloc(n * sizeof *y);
  float *g = malloc((size_t)cols * sizeof *g), *b = malloc((size_t)cols * sizeof *b);
  float *dg = calloc((size_t)cols, sizeof *dg), *db = calloc((size_t)cols, sizeof *db);
  float *mu = malloc((size_t)rows * sizeof *mu), *rs = malloc((size_t)rows * sizeof *rs);
  double t[8], med = -1.0;
  if (x && dy && y && g && b && dg && db && mu && rs) {
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)(i % 97) * 0.01f;
      dy[i] = (float)(i % 89) * 0.01f;
      y[i] = 0.0f;
    }
    for (int64_t c = 0; c < cols; c++) g[c] = 1.0f, b[c] = 0.0f;
    for (int64_t r = 0; r < rows; r++) mu[r] = 0.5f, rs[r] = 1.0f;
    for (int rep = 0; rep < 8; rep++) {
      double t0 = now_s();
      switch (v) {
      case 0: sc__cpu_layernorm_fwd(rows, cols, x, g, b, y, mu, rs); break;
      case 1: sc__cpu_layernorm_bwd(rows, cols, dy, x, g, mu, rs, y, dg, db); break;
      case 2: sc__cpu_rmsnorm_fwd(rows, cols, x, g, y, rs); break;
      default: sc__cpu_rmsnorm_bwd(rows, cols, dy, x, g, rs, y, dg); break;
      }
      t[rep] = now_s() - t0;
    }
    qsort(t + 1, 7, sizeof t[0], cmp_double); /* t[0] is the warm-up */
    med = t[4] / (double)n;
  }
  free(x), free(dy), free(y), free(g), free(b), free(dg), free(db), free(mu), free(rs);
  return med;
}

int main(int argc, char **argv) {
  static const char *const names[4] = {"layer-norm forward", "layer-norm backward",
                                       "RMSNorm forward", "RMSNorm backward"};
  static const double bytes_per_col[4] = {16, 24, 12, 20}; /* the norm plugin's row_bytes */
  static const int64_t widths[] = {64,   128,  256,  512,  768,  1024, 1536, 2048,
                                   2560, 3072, 3584, 4096, 6144, 8192};
  const int nw = (int)(sizeof widths / sizeof widths[0]);
  double n_dram = 16777216.0 + 16384.0, l1 = (double)sysconf(_SC_LEVEL1_DCACHE_SIZE);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--elements") == 0 && i + 1 < argc) n_dram = atof(argv[++i]);
    else if (strcmp(argv[i], "--l1") == 0 && i + 1 < argc) l1 = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: row_sweep [--elements N] [--l1 BYTES]\n");
      return 2;
    }
  }
  if (!(l1 > 0)) l1 = 49152;
  if (!(n_dram >= 65536 && n_dram <= 1e9)) {
    fprintf(stderr, "row_sweep: --elements must be in [65536, 1e9]\n");
    return 2;
  }
  printf("# L1 data cache %.0f bytes; dram runs over %.0f elements per array\n", l1, n_dram);
  for (int v = 0; v < 4; v++) {
    double cache[16], dram[16];
    printf("\n%s (row_bytes = %.0f x cols)\n", names[v], bytes_per_col[v]);
    printf("%6s %10s %12s %11s %11s %9s\n", "cols", "row/L1", "cache ns/el", "dram ns/el",
           "extra ns", "share");
    for (int w = 0; w < nw; w++) {
      int64_t cols = widths[w];
      int64_t rc = 16384 / cols > 0 ? 16384 / cols : 1;
      int64_t rd = (int64_t)(n_dram / (double)cols);
      cache[w] = time_norm(v, rc, cols) * 1e9;
      dram[w] = time_norm(v, rd, cols) * 1e9;
      if (cache[w] < 0 || dram[w] < 0) {
        fprintf(stderr, "row_sweep: out of memory\n");
        return 1;
      }
    }
    double full = dram[nw - 1] - cache[nw - 1];
    for (int w = 0; w < nw; w++) {
      double extra = dram[w] - cache[w];
      printf("%6lld %10.2f %12.3f %11.3f %11.3f %9.2f\n", (long long)widths[w],
             bytes_per_col[v] * (double)widths[w] / l1, cache[w], dram[w], extra,
             full > 0 ? extra / full : 0.0);
    }
  }
  return 0;
}
