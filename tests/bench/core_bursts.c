/*
 * core_bursts: how steady this core's throughput is over time, before trusting a sampling
 * run on a shared machine (docs/learned.md, "Passes"; docs/notes/0001-host-cpu-residuals.md, "Passes and the
 * measured cache curve").
 *
 * Times STREAM Add (sc__cpu_add, the kernel `stepcast sample` measures) on three arrays of
 * 4096 floats (48 KiB, cache resident: compute and the core's load/store ports, not memory)
 * in bursts of about 4 ms for --seconds, each burst's rate the median of its calls, and
 * prints the distribution of the burst rates against the fastest: on a core of its own
 * every burst sits within a few per cent of it; a core whose sibling hardware thread
 * another tenant uses drops to about half in spells. Then the longest run of consecutive
 * slow bursts (below 80 % of the fastest), in seconds.
 *
 *   cmake --build build-rel --target core_bursts
 *   ./build-rel/bin/core_bursts [--seconds 20]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "bench_util.h"

#define N 4096
#define PER_BURST 4096 /* calls, about 4 ms at 1 us per call */
#define MAX_BURSTS 100000

int main(int argc, char **argv) {
  double seconds = 20.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      char *end = NULL;
      seconds = strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0') seconds = -1.0; /* refused below */
    } else {
      fprintf(stderr, "usage: core_bursts [--seconds S]\n");
      return 2;
    }
  }
  if (!(seconds > 0 && seconds <= 3600)) {
    fprintf(stderr, "core_bursts: --seconds must be in (0, 3600]\n");
    return 2;
  }
  static float a[N], b[N], c[N];
  static double t[PER_BURST];
  double *rate = malloc(MAX_BURSTS * sizeof *rate), *sorted = malloc(MAX_BURSTS * sizeof *sorted);
  double *when = malloc(MAX_BURSTS * sizeof *when);
  if (rate == NULL || sorted == NULL || when == NULL) {
    fprintf(stderr, "core_bursts: out of memory\n");
    return 1;
  }
  for (int i = 0; i < N; i++) a[i] = 1.0f + (float)i * 1e-3f, b[i] = 2.0f, c[i] = 0.0f;
  int nb = 0;
  double t0 = now_s();
  while (nb < MAX_BURSTS && now_s() - t0 < seconds) {
    for (int k = 0; k < PER_BURST; k++) {
      double s = now_s();
      sc__cpu_add(N, a, b, c);
      t[k] = now_s() - s;
    }
    qsort(t, PER_BURST, sizeof t[0], cmp_double);
    when[nb] = now_s() - t0;
    rate[nb++] = 12.0 * N / t[PER_BURST / 2];
  }
  memcpy(sorted, rate, (size_t)nb * sizeof *rate);
  qsort(sorted, (size_t)nb, sizeof *sorted, cmp_double);
  double top = sorted[nb - 1], slow_run = 0.0, run_start = -1.0, prev = 0.0;
  int within5 = 0, slow = 0;
  for (int i = 0; i < nb; i++) {
    within5 += rate[i] >= 0.95 * top;
    if (rate[i] < 0.8 * top) {
      slow++;
      if (run_start < 0) run_start = prev;
      if (when[i] - run_start > slow_run) slow_run = when[i] - run_start;
    } else {
      run_start = -1.0;
    }
    prev = when[i];
  }
  printf("# %d bursts of %d STREAM Add calls on 3 x %d floats over %.1f s (c = a + b, %.0f "
         "bytes per call, STREAM's count)\n", nb, PER_BURST, N, when[nb - 1], 12.0 * N);
  printf("fastest burst        %.1f GB/s\n", top / 1e9);
  printf("percentiles (GB/s)   p10 %.1f  p25 %.1f  median %.1f  p75 %.1f  p90 %.1f\n",
         sorted[nb / 10] / 1e9, sorted[nb / 4] / 1e9, sorted[nb / 2] / 1e9,
         sorted[3 * nb / 4] / 1e9, sorted[9 * nb / 10] / 1e9);
  printf("within 5 %% of it     %.1f %% of the bursts\n", 100.0 * within5 / nb);
  printf("below 80 %% of it     %.1f %% of the bursts; the longest such run %.2f s\n",
         100.0 * slow / nb, slow_run);
  free(rate);
  free(sorted);
  free(when);
  return 0;
}
