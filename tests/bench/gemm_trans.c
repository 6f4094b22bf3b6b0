/*
 * gemm_trans: cblas_sgemm's rate with and without transposed operands (NN, TN, NT, TT) at
 * the GEMM shapes of train_step's first model (docs/notes/0001-host-cpu-residuals.md, "One object for the CPU
 * kernels"). `stepcast sample` measures NN GEMMs only; a training step's backward runs the
 * data gradients as NT (dY W^T) and the weight gradients as TN (X^T dY). This prints, per
 * shape m x n x k, the median of 21 calls of each form in GFLOP/s (2 m n k per call), on
 * buffers allocated as the cpu plugin allocates them.
 *
 *   cmake --build build-rel --target gemm_trans
 *   OPENBLAS_NUM_THREADS=1 ./build-rel/bin/gemm_trans [M N K ...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "cpu_kernels.h"

#define REPS 21

static int shape(int64_t m, int64_t n, int64_t k) {
  void *r[3];
  float *A = sc__cpu_buf_alloc((size_t)(m * k) * sizeof(float), 0, &r[0]);
  float *B = sc__cpu_buf_alloc((size_t)(k * n) * sizeof(float), 1, &r[1]);
  float *C = sc__cpu_buf_alloc((size_t)(m * n) * sizeof(float), 2, &r[2]);
  if (A == NULL || B == NULL || C == NULL) return 1;
  for (int64_t i = 0; i < m * k; i++) A[i] = (float)(i % 13) * 0.1f;
  for (int64_t i = 0; i < k * n; i++) B[i] = (float)(i % 7) * 0.1f;
  printf("%6lld x %6lld x %6lld:", (long long)m, (long long)n, (long long)k);
  for (int v = 0; v < 4; v++) {
    int ta = v & 1, tb = v >> 1;
    double t[REPS];
    sc__cpu_gemm_t(ta, tb, m, n, k, A, ta ? m : k, B, tb ? k : n, 0.0f, C, n); /* warm-up */
    for (int i = 0; i < REPS; i++) {
      double t0 = now_s();
      sc__cpu_gemm_t(ta, tb, m, n, k, A, ta ? m : k, B, tb ? k : n, 0.0f, C, n);
      t[i] = now_s() - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_double);
    printf("  %c%c %6.1f", ta ? 'T' : 'N', tb ? 'T' : 'N',
           2.0 * (double)m * (double)n * (double)k / t[REPS / 2] / 1e9);
  }
  printf("  GFLOP/s\n");
  for (int i = 0; i < 3; i++) free(r[i]);
  return 0;
}

int main(int argc, char **argv) {
  /* train_step's first model (hidden 256, ffn 1024, vocab 8192, 256 tokens): the forward's
   * m x n x k and the two backward products' shapes */
  static const int64_t def[][3] = {{256, 768, 256},  {256, 256, 256},  {256, 1024, 256},
                                   {256, 256, 1024}, {256, 8192, 256}, {256, 256, 8192},
                                   {768, 256, 256},  {1024, 256, 256}, {8192, 256, 256}};
  int rc = 0;
  if (argc > 1) {
    if ((argc - 1) % 3 != 0) {
      fprintf(stderr, "usage: gemm_trans [M N K ...]\n");
      return 2;
    }
    for (int i = 1; i + 2 < argc && rc == 0; i += 3) {
      int64_t d[3];
      for (int j = 0; j < 3; j++) {
        char *end;
        errno = 0;
        long long v = strtoll(argv[i + j], &end, 10);
        if (errno != 0 || end == argv[i + j] || *end != '\0' || v < 1 || v > 65536) {
          fprintf(stderr, "gemm_trans: argument %d ('%s'): a dimension must be a whole number "
                  "in [1, 65536]\n", i + j, argv[i + j]);
          return 2;
        }
        d[j] = v;
      }
      rc = shape(d[0], d[1], d[2]);
    }
  } else {
    for (size_t i = 0; i < sizeof def / sizeof def[0] && rc == 0; i++)
      rc = shape(def[i][0], def[i][1], def[i][2]);
  }
  if (rc != 0) fprintf(stderr, "gemm_trans: out of memory\n");
  return rc;
}
