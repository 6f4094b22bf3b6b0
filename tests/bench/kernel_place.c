/*
 * kernel_place: the CPU kernels whose loops call libm once per element (expf), timed in this
 * executable, to set beside the cpu plugin's timing of the same shapes
 * (docs/notes/0001-host-cpu-residuals.md, "The row maxima inline: the cross-entropy gap"
 * and "One object for the CPU kernels"). Run it several times, alternated with another build of it: on a shared guest one process in
 * two or three ran every shape 10-20 % slower, whichever build it was (a spell of the host,
 * not the code's placement), and a single run told the two apart by nothing else.
 *
 *   cmake --build build-rel --target kernel_place
 *   OPENBLAS_NUM_THREADS=1 ./build-rel/bin/kernel_place
 *
 * For each shape it prints the median of 31 calls after one warm-up on buffers allocated as
 * the plugin allocates them (sc__cpu_buf_alloc): the cross-entropy forward (tokens x vocab,
 * in place as the plugin repeats it) and the causal flash-attention forward (batch, heads,
 * kv heads, seq, head dim), forward then backward (on that forward's output and
 * log-sum-exp), at shapes of the samples kept in docs/validation and, last, at the shape of
 * train_step's first model (1 x 4 heads x 256^2, d 64). Compare with the samples' median_s of
 * the same rows (attention), the micro.kernel.cross_entropy.0 line (8 x 4096), or
 * `stepcast ops` (attn_core, attn_core.bwd) and train_step's attention line.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "cpu_kernels.h"

#define REPS 31

static double median(double *t) {
  qsort(t, REPS, sizeof *t, cmp_double);
  return t[REPS / 2];
}

static void fill(float *p, int64_t n, int64_t mul, int64_t mod, float off) {
  for (int64_t i = 0; i < n; i++) p[i] = (float)((i * mul) % mod) * 0.01f - off;
}

static int xent(int64_t T, int64_t V) {
  void *r[3];
  float *x = sc__cpu_buf_alloc((size_t)(T * V) * sizeof(float), 0, &r[0]);
  float *loss = sc__cpu_buf_alloc((size_t)T * sizeof(float), 1, &r[1]);
  int64_t *lab = sc__cpu_buf_alloc((size_t)T * sizeof(int64_t), 2, &r[2]);
  double t[REPS];
  if (x == NULL || loss == NULL || lab == NULL) return 1;
  fill(x, T * V, 37, 101, 0.5f);
  for (int64_t i = 0; i < T; i++) lab[i] = (i * 7919) % V;
  sc__cpu_xent_fwd(T, V, lab, x, loss);
  for (int k = 0; k < REPS; k++) {
    double t0 = now_s();
    sc__cpu_xent_fwd(T, V, lab, x, loss);
    t[k] = now_s() - t0;
  }
  double m = median(t);
  printf("cross-entropy forward %lld x %lld: %.4g s, %.3f ns per logit\n", (long long)T,
         (long long)V, m, 1e9 * m / (double)(T * V));
  for (int i = 0; i < 3; i++) free(r[i]);
  return 0;
}

static int attn(int64_t B, int64_t H, int64_t G, int64_t s, int64_t d) {
  void *r[10];
  const size_t q = (size_t)(B * H * s * d), kv = (size_t)(B * G * s * d);
  float *Q = sc__cpu_buf_alloc(q * sizeof(float), 0, &r[0]);
  float *K = sc__cpu_buf_alloc(kv * sizeof(float), 1, &r[1]);
  float *V = sc__cpu_buf_alloc(kv * sizeof(float), 2, &r[2]);
  float *O = sc__cpu_buf_alloc(q * sizeof(float), 3, &r[3]);
  float *L = sc__cpu_buf_alloc((size_t)(B * H * s) * sizeof(float), 4, &r[4]);
  float *S = sc__cpu_buf_alloc((size_t)sc__cpu_attn_scratch_floats(s) * sizeof(float), 5, &r[5]);
  float *dO = sc__cpu_buf_alloc(q * sizeof(float), 6, &r[6]);
  float *dQ = sc__cpu_buf_alloc(q * sizeof(float), 7, &r[7]);
  float *dK = sc__cpu_buf_alloc(kv * sizeof(float), 8, &r[8]);
  float *dV = sc__cpu_buf_alloc(kv * sizeof(float), 9, &r[9]);
  double t[REPS], fwd;
  if (!Q || !K || !V || !O || !L || !S || !dO || !dQ || !dK || !dV) return 1;
  fill(Q, (int64_t)q, 37, 101, 0.5f);
  fill(K, (int64_t)kv, 53, 89, 0.4f);
  fill(V, (int64_t)kv, 29, 83, 0.4f);
  fill(dO, (int64_t)q, 31, 97, 0.5f);
  sc__cpu_attn_fwd(B, H, G, s, s, d, 1, Q, K, V, O, L, S);
  for (int k = 0; k < REPS; k++) {
    double t0 = now_s();
    sc__cpu_attn_fwd(B, H, G, s, s, d, 1, Q, K, V, O, L, S);
    t[k] = now_s() - t0;
  }
  fwd = median(t);
  sc__cpu_attn_bwd(B, H, G, s, s, d, 1, Q, K, V, O, dO, L, dQ, dK, dV, S);
  for (int k = 0; k < REPS; k++) {
    double t0 = now_s();
    sc__cpu_attn_bwd(B, H, G, s, s, d, 1, Q, K, V, O, dO, L, dQ, dK, dV, S);
    t[k] = now_s() - t0;
  }
  printf("attention %lld x %lld heads (%lld kv) x %lld^2, d %lld: forward %.4g s, "
         "backward %.4g s\n", (long long)B, (long long)H, (long long)G, (long long)s,
         (long long)d, fwd, median(t));
  for (int i = 0; i < 10; i++) free(r[i]);
  return 0;
}

int main(void) {
  static const int64_t a[][5] = {
      {2, 3, 3, 128, 32}, {1, 6, 3, 192, 32}, {2, 1, 1, 320, 64}, {1, 3, 3, 576, 64},
      {2, 9, 9, 64, 128}, {1, 4, 4, 256, 64}};
  int rc = xent(8, 4096) || xent(256, 8192);
  for (size_t i = 0; i < sizeof a / sizeof a[0] && rc == 0; i++)
    rc = attn(a[i][0], a[i][1], a[i][2], a[i][3], a[i][4]);
  if (rc != 0) fprintf(stderr, "kernel_place: out of memory\n");
  return rc;
}
