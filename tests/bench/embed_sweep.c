/*
 * embed_sweep: the host CPU's embedding backward by table size, whole and pass by pass
 * (docs/notes/0001-host-cpu-residuals.md, the embedding paragraph).
 *
 * sc__cpu_embed_bwd (plugins/hardware/cpu_kernels.h) zero-fills a vocab_rows x hidden
 * gradient table G, scatter-adds `tokens` rows of dy into it and adds G into the fp32 main
 * gradient M. For gradient tables of 2 to 128 MiB (hidden 512, 256 tokens by default) this
 * times the kernel itself and then its three passes apart (the same loops), each the median
 * of 15 calls after one warm-up on the same buffers, as `stepcast sample` measures, and
 * prints the working set (G + M + dy) over the last-level cache, the zero-fill's rate, the
 * scatter's time, the accumulate's rate in 12 bytes per element (read G, read and write M)
 * and the whole kernel's time.
 *
 *   cmake --build build-rel --target embed_sweep
 *   ./build-rel/bin/embed_sweep [--tokens T] [--hidden H] [--llc BYTES]
 *   ./build-rel/bin/embed_sweep --gather
 *
 * Then the forward (sc__cpu_embed_fwd, a gather of `tokens` rows) on the same tables, two
 * ways, in ns per token: one batch of ids repeated, as `stepcast sample` measures every
 * operator (the batch's rows stay cached whatever the table's size), and a fresh batch per
 * call, drawn in turn from a pool of tokens + 4 x rows ids, as a training step embeds new
 * tokens (about 98 % of the table's rows are touched per cycle, so the table itself competes
 * for the cache).
 *
 * --llc defaults to the level-3 cache sysfs gives (/sys/devices/system/cpu/cpu0/cache, as
 * `stepcast sample` reads it; the C library's sysconf can report the host's, not the guest's);
 * 32 MiB when unknown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_kernels.h"
#include "bench_util.h"

#define REPS 15

/* The level-3 cache size sysfs gives for cpu0, in bytes; 0 when it gives none. */
static double sysfs_l3(void) {
  for (int i = 0; i < 8; i++) {
    char path[96], buf[32];
    int level = 0;
    double kib = 0;
    FILE *f;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fscanf(f, "%d", &level) != 1) level = 0;
    fclose(f);
    if (level != 3) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if ((f = fopen(path, "r")) == NULL) continue;
    if (fgets(buf, sizeof buf, f) != NULL) kib = atof(buf); /* "32768K" */
    fclose(f);
    return kib * 1024.0;
  }
  return 0.0;
}

static double median(double *t) {
  qsort(t, REPS, sizeof *t, cmp_double);
  return t[REPS / 2];
}

/* --gather: the forward's cost per row once the rows it gathers outgrow the caches. Rows of
 * 64, 256 and 1216 floats from a 512 MiB table, 256 to 16384 random ids, one batch of ids
 * repeated as `stepcast sample` measures: ns per row and the rate of the rows and the output
 * together (8 bytes per element), the median of REPS calls. The roofline moves those bytes
 * at the STREAM rate; rows gathered from DRAM come one short stream at a time. */
static int gather_sweep(void) {
  static const int64_t hid[] = {64, 256, 1216};
  const int64_t maxt = 16384;
  printf("# the forward from a 512 MiB table, one batch of random ids repeated; medians of %d "
         "calls\n%8s %8s %12s %20s\n", REPS, "hidden", "tokens", "ns per row",
         "GB/s rows + output");
  for (size_t h = 0; h < sizeof hid / sizeof hid[0]; h++) {
    const int64_t hidden = hid[h], rows = (int64_t)(512 << 20) / (4 * hidden);
    float *W = malloc((size_t)(rows * hidden) * sizeof *W);
    float *y = malloc((size_t)(maxt * hidden) * sizeof *y);
    int64_t *ids = malloc((size_t)maxt * sizeof *ids);
    if (!W || !y || !ids) {
      fprintf(stderr, "embed_sweep: out of memory\n");
      free(W), free(y), free(ids);
      return 1;
    }
    for (int64_t i = 0; i < rows * hidden; i++) W[i] = (float)(i % 7);
    srand(7);
    for (int64_t tok = 256; tok <= maxt; tok *= 2) {
      double t[REPS];
      for (int64_t i = 0; i < tok; i++)
        ids[i] = ((int64_t)rand() * ((int64_t)RAND_MAX + 1) + rand()) % rows;
      sc__cpu_embed_fwd(tok, hidden, ids, W, y); /* warm-up */
      for (int r = 0; r < REPS; r++) {
        double s = now_s();
        sc__cpu_embed_fwd(tok, hidden, ids, W, y);
        t[r] = now_s() - s;
      }
      double m = median(t);
      printf("%8lld %8lld %12.1f %20.2f\n", (long long)hidden, (long long)tok,
             m / (double)tok * 1e9, 8.0 * (double)(tok * hidden) / m / 1e9);
    }
    free(W), free(y), free(ids);
  }
  return 0;
}

int main(int argc, char **argv) {
  long long tokens = 256, hidden = 512;
  double llc = 0.0;
  static const double mib[] = {2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128};
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--tokens") == 0) tokens = atoll(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--hidden") == 0) hidden = atoll(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--llc") == 0) llc = atof(argv[++i]);
    else if (argc == 2 && strcmp(argv[i], "--gather") == 0) return gather_sweep();
    else {
      fprintf(stderr, "usage: embed_sweep [--tokens T] [--hidden H] [--llc BYTES] | "
              "embed_sweep --gather\n");
      return 2;
    }
  }
  if (tokens < 1 || hidden < 1 || llc < 0) {
    fprintf(stderr, "embed_sweep: --tokens and --hidden must be >= 1, --llc >= 0\n");
    return 2;
  }
  if (!(llc > 0)) llc = sysfs_l3();
  if (!(llc > 0)) llc = 33554432.0;
  printf("# tokens %lld, hidden %lld, last-level cache %.0f bytes; medians of %d calls\n",
         tokens, hidden, llc, REPS);
  printf("%8s %7s %12s %11s %14s %10s\n", "G MiB", "ws/LLC", "zero GB/s", "scatter ms",
         "accum GB/s", "kernel ms");
  for (size_t k = 0; k < sizeof mib / sizeof mib[0]; k++) {
    int64_t rows = (int64_t)(mib[k] * 1048576.0 / 4.0 / (double)hidden);
    size_t n = (size_t)(rows * hidden), nt = (size_t)(tokens * hidden);
    float *G = malloc(n * sizeof *G), *M = calloc(n, sizeof *M), *dy = malloc(nt * sizeof *dy);
    int64_t *ids = malloc((size_t)tokens * sizeof *ids);
    double tk[REPS], tz[REPS], ts[REPS], ta[REPS];
    if (rows < 1 || !G || !M || !dy || !ids) {
      fprintf(stderr, "embed_sweep: out of memory at %g MiB\n", mib[k]);
      return 1;
    }
    for (int64_t t = 0; t < tokens; t++) /* spread over the table, repeatable */
      ids[t] = (int64_t)((uint64_t)t * 2654435761u % (uint64_t)rows);
    for (size_t i = 0; i < nt; i++) dy[i] = (float)(i % 89) * 0.001f;
    for (int rep = -1; rep < REPS; rep++) {
      double t0 = now_s();
      sc__cpu_embed_bwd(tokens, hidden, rows, ids, dy, G, M);
      if (rep >= 0) tk[rep] = now_s() - t0;
    }
    for (int rep = -1; rep < REPS; rep++) {
      double t0 = now_s(), t1, t2;
      memset(G, 0, n * sizeof *G);
      t1 = now_s();
      for (int64_t t = 0; t < tokens; t++) {
        float *g = G + ids[t] * hidden;
        const float *d = dy + t * hidden;
        for (int64_t c = 0; c < hidden; c++) g[c] += d[c];
      }
      t2 = now_s();
      for (size_t i = 0; i < n; i++) M[i] += G[i];
      if (rep >= 0) {
        tz[rep] = t1 - t0;
        ts[rep] = t2 - t1;
        ta[rep] = now_s() - t2;
      }
    }
    double ws = (double)n * 8.0 + (double)nt * 4.0 + (double)tokens * 8.0;
    printf("%8.0f %7.2f %12.1f %11.3f %14.1f %10.3f\n", mib[k], ws / llc,
           4.0 * (double)n / median(tz) / 1e9, 1e3 * median(ts),
           12.0 * (double)n / median(ta) / 1e9, 1e3 * median(tk));
    free(G);
    free(M);
    free(dy);
    free(ids);
  }
  printf("\n# forward: ns per token, one batch repeated vs a fresh batch per call\n");
  printf("%8s %8s %12s %12s %8s\n", "W MiB", "W/LLC", "same ids", "fresh ids", "ratio");
  for (size_t k = 0; k < sizeof mib / sizeof mib[0]; k++) {
    int64_t rows = (int64_t)(mib[k] * 1048576.0 / 4.0 / (double)hidden);
    int64_t pool = tokens + 4 * rows, next = 0;
    size_t n = (size_t)(rows * hidden), nt = (size_t)(tokens * hidden);
    float *W = malloc(n * sizeof *W), *y = malloc(nt * sizeof *y);
    int64_t *ids = malloc((size_t)pool * sizeof *ids);
    double tsame[REPS], tfresh[REPS];
    if (rows < 1 || !W || !y || !ids) {
      fprintf(stderr, "embed_sweep: out of memory at %g MiB\n", mib[k]);
      return 1;
    }
    for (size_t i = 0; i < n; i++) W[i] = (float)(i % 97) * 0.01f;
    for (int64_t t = 0; t < pool; t++)
      ids[t] = (int64_t)(sc__cpu_hash(3, (uint64_t)t) % (uint64_t)rows);
    for (int rep = -1; rep < REPS; rep++) {
      double t0 = now_s();
      sc__cpu_embed_fwd(tokens, hidden, ids, W, y);
      if (rep >= 0) tsame[rep] = now_s() - t0;
    }
    for (int rep = -1; rep < REPS; rep++) {
      /* a whole cycle of the pool before each timed call, so the cache holds what a long
       * run of fresh batches leaves in it */
      for (int64_t c = 0; rep < 0 && c < pool / tokens; c++) {
        sc__cpu_embed_fwd(tokens, hidden, ids + next, W, y);
        next = next + 2 * tokens > pool ? 0 : next + tokens;
      }
      double t0 = now_s();
      sc__cpu_embed_fwd(tokens, hidden, ids + next, W, y);
      if (rep >= 0) tfresh[rep] = now_s() - t0;
      next = next + 2 * tokens > pool ? 0 : next + tokens;
    }
    double a = 1e9 * median(tsame) / (double)tokens, b = 1e9 * median(tfresh) / (double)tokens;
    printf("%8.0f %8.2f %12.1f %12.1f %8.2f\n", mib[k], (double)n * 4.0 / llc, a, b, b / a);
    free(W);
    free(y);
    free(ids);
  }
  return 0;
}
