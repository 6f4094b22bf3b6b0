/*
 * The cuda plugin's kernels (plugins/hardware/cuda/kernels.cu) against host references of
 * the same operations, in fp32 and bf16 storage, on shapes that take the 16-byte pack path,
 * the element-at-a-time tail after it, and (arrays off 16 bytes) the element path alone.
 * Needs a CUDA device: without one the suite prints why and exits 77, which ctest counts as
 * skipped (CI has no GPU). On a GPU machine: build with nvcc on PATH, then
 * `ctest -R cuda_kernels` or run build/tests/cuda/test_cuda_kernels.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../../plugins/hardware/cuda/kernels.h"

/* Element-wise variants, as SC_EW_* (stepcast/ops.h). */
enum { GELU_F, GELU_B, SWI_F, SWI_B, DROP_F, DROP_B, BDA_F, BDA_B, ADD, ROPE_F, ROPE_B };

static const sc__cu_type types[2] = {SC__CU_F32, SC__CU_BF16};

static size_t esize(sc__cu_type t) { return t == SC__CU_F32 ? 4 : 2; }

static float bf16_to_f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void *dev_alloc(size_t bytes) {
  void *p = NULL;
  ck_assert_int_eq(cudaMalloc(&p, bytes), cudaSuccess);
  return p;
}

/* n elements of type t at device p into floats. */
static void to_host(sc__cu_type t, const void *p, size_t n, float *out) {
  ck_assert_int_eq(cudaDeviceSynchronize(), cudaSuccess);
  if (t == SC__CU_F32) {
    ck_assert_int_eq(cudaMemcpy(out, p, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return;
  }
  uint16_t *h = malloc(n * 2);
  ck_assert_ptr_nonnull(h);
  ck_assert_int_eq(cudaMemcpy(h, p, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < n; i++) out[i] = bf16_to_f(h[i]);
  free(h);
}

/* A device array of n elements filled by sc__cu_fill in [lo, hi), and its values on the host
 * (as stored: bf16-rounded for bf16). */
static void *dev_filled(sc__cu_type t, size_t n, uint64_t seed, float lo, float hi, float *host) {
  void *p = dev_alloc(n * esize(t) + 16);
  ck_assert_int_eq(sc__cu_fill(t, p, n, seed, lo, hi, NULL), 0);
  to_host(t, p, n, host);
  return p;
}

/* |got - want| within the storage type's rounding: bf16 keeps 8 bits of mantissa. */
static void expect_close(sc__cu_type t, const float *got, const float *want, size_t n,
                         const char *what) {
  const double rel = t == SC__CU_F32 ? 2e-5 : 1.2e-2, abs_ = t == SC__CU_F32 ? 2e-6 : 1e-3;
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(fabs((double)got[i] - want[i]) <= rel * fabs((double)want[i]) + abs_,
                  "%s (%s): element %zu: %.7g, want %.7g", what, t == SC__CU_F32 ? "fp32" : "bf16",
                  i, (double)got[i], (double)want[i]);
}

START_TEST(fill_range_and_repeat) {
  for (int ti = 0; ti < 2; ti++) {
    sc__cu_type t = types[ti];
    const size_t n = 100003;
    float *h = malloc(n * 4), *h2 = malloc(n * 4);
    void *p = dev_filled(t, n, 7, -1.0f, 1.0f, h), *q = dev_filled(t, n, 7, -1.0f, 1.0f, h2);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
      ck_assert(h[i] >= -1.0f && h[i] <= 1.0f);
      ck_assert(h[i] == h2[i]);
      sum += h[i];
    }
    ck_assert_msg(fabs(sum / (double)n) < 0.02, "fill mean %g", sum / (double)n);
    cudaFree(p);
    cudaFree(q);
    free(h);
    free(h2);
  }
}
END_TEST

static uint32_t hash32(uint64_t seed, uint64_t i) { /* kernels.cu's, splitmix64's finaliser */
  uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* One element-wise variant over n elements, arrays shifted by off elements (off != 0 puts
 * them off 16 bytes: the element path alone). */
static void check_elementwise(sc__cu_type t, int v, size_t n, size_t off) {
  const size_t nbias = 1000, npairs = 64;
  const float p = 0.1f, sc = 1.0f / (1.0f - p);
  const uint32_t thr = (uint32_t)(0.1 * 4294967295.0);
  float *ha = malloc(n * 4), *hb = malloc(n * 4), *hc = malloc(n * 4), *hd = malloc(n * 4);
  float *hbias = malloc(nbias * 4), *got = malloc((n + off) * 4);
  float *wb = malloc(n * 4), *wc = malloc(n * 4), *wd = malloc(n * 4);
  uint8_t *hm = malloc(n), *gm = malloc(n), *wm = malloc(n);
  float rope[2 * 64];
  for (size_t j = 0; j < npairs; j++) {
    rope[2 * j] = cosf((float)j / 2048.0f);
    rope[2 * j + 1] = sinf((float)j / 2048.0f);
  }
  char *a = dev_filled(t, n + off, 1, -2.0f, 2.0f, got);
  memcpy(ha, got + off, n * 4);
  char *b = dev_filled(t, n + off, 2, -2.0f, 2.0f, got);
  memcpy(hb, got + off, n * 4);
  char *c = dev_filled(t, n + off, 3, -2.0f, 2.0f, got);
  memcpy(hc, got + off, n * 4);
  char *d = dev_filled(t, n + off, 4, -2.0f, 2.0f, got);
  memcpy(hd, got + off, n * 4);
  void *bias = dev_filled(t, nbias, 5, -0.5f, 0.5f, hbias);
  uint8_t *mask = dev_alloc(n + off + 16);
  float *drope = dev_alloc(sizeof rope);
  for (size_t i = 0; i < n; i++) hm[i] = hash32(9, i) & 1u;
  ck_assert_int_eq(cudaMemcpy(mask + off, hm, n, cudaMemcpyHostToDevice), cudaSuccess);
  ck_assert_int_eq(cudaMemcpy(drope, rope, sizeof rope, cudaMemcpyHostToDevice), cudaSuccess);
  /* the reference */
  memcpy(wb, hb, n * 4);
  memcpy(wc, hc, n * 4);
  memcpy(wd, hd, n * 4);
  memcpy(wm, hm, n);
  for (size_t i = 0; i < n; i++) {
    float x = ha[i], bi = hbias[i % nbias];
    switch (v) {
    case GELU_F: {
      float u = x + bi;
      wb[i] = 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
      break;
    }
    case GELU_B: {
      float u = x + bi, th = tanhf(0.7978845608f * (u + 0.044715f * u * u * u));
      float du = 0.7978845608f * (1.0f + 3.0f * 0.044715f * u * u);
      wb[i] = hc[i] * (0.5f * (1.0f + th) + 0.5f * u * (1.0f - th * th) * du);
      break;
    }
    case SWI_F: wc[i] = x / (1.0f + expf(-x)) * hb[i]; break;
    case SWI_B: {
      float s = 1.0f / (1.0f + expf(-x));
      wd[i] = hc[i] * hb[i] * s * (1.0f + x * (1.0f - s));
      wc[i] = hc[i] * x * s;
      break;
    }
    case DROP_F: wm[i] = hash32(1, i) >= thr; wb[i] = wm[i] ? x * sc : 0.0f; break;
    case DROP_B:
    case BDA_B: wb[i] = hm[i] ? hc[i] * sc : 0.0f; break;
    case BDA_F: wm[i] = hash32(1, i) >= thr; wb[i] = hc[i] + (wm[i] ? (x + bi) * sc : 0.0f); break;
    case ADD: wb[i] = x + hc[i]; break;
    default: { /* rope */
      size_t i0 = i & ~(size_t)1, j = (i / 2) % npairs;
      if (i0 + 1 >= n) break;
      float cs = rope[2 * j], sn = (v == ROPE_F ? 1.0f : -1.0f) * rope[2 * j + 1];
      wb[i] = (i & 1) ? ha[i0] * sn + ha[i0 + 1] * cs : ha[i0] * cs - ha[i0 + 1] * sn;
      break;
    }
    }
  }
  const size_t e = esize(t);
  ck_assert_int_eq(sc__cu_elementwise(t, v, (int64_t)n, a + off * e, b + off * e, c + off * e,
                                      d + off * e, bias, (int64_t)nbias, mask + off, drope,
                                      (int64_t)npairs, NULL),
                   0);
  char what[64];
  snprintf(what, sizeof what, "elementwise %d, n %zu, offset %zu", v, n, off);
  to_host(t, b + off * e, n, got);
  expect_close(t, got, wb, n, what);
  to_host(t, c + off * e, n, got);
  expect_close(t, got, wc, n, what);
  to_host(t, d + off * e, n, got);
  expect_close(t, got, wd, n, what);
  ck_assert_int_eq(cudaMemcpy(gm, mask + off, n, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(gm[i] == wm[i], "%s: mask %zu: %u, want %u", what, i, gm[i], wm[i]);
  cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(d); cudaFree(bias); cudaFree(mask);
  cudaFree(drope);
  free(ha); free(hb); free(hc); free(hd); free(hbias); free(got); free(wb); free(wc); free(wd);
  free(hm); free(gm); free(wm);
}

START_TEST(elementwise_every_variant) {
  /* 4096: packs only; 4099: packs and a tail; offset 1: off 16 bytes, elements only */
  const size_t shapes[3][2] = {{4096, 0}, {4099, 0}, {4097, 1}};
  for (int ti = 0; ti < 2; ti++)
    for (int v = 0; v <= ROPE_B; v++)
      for (int s = 0; s < 3; s++) check_elementwise(types[ti], v, shapes[s][0], shapes[s][1]);
}
END_TEST

/* The norms' shapes: rows of a block (4096, 3001: bf16 rows over 1024 elements, fp32 over
 * 512) and of a warp (1024, 1001, 64), by packs and not; 13 rows leave warps with no row in
 * the last block. */
#define NORM_ROWS 13
static const int64_t norm_cols[5] = {4096, 3001, 1024, 1001, 64};

/* The host's mean (0 for RMSNorm) and 1/sqrt(var + 1e-5) of each row of x, in double,
 * stored as the floats the device keeps. */
static void host_norm_stats(const float *x, int64_t rows, int64_t cols, int rms, float *mean,
                            float *rstd) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    double s = 0, s2 = 0;
    for (int64_t k = 0; k < cols; k++) s += xr[k];
    double mu = rms ? 0.0 : s / (double)cols;
    for (int64_t k = 0; k < cols; k++) s2 += (xr[k] - mu) * (xr[k] - mu);
    mean[r] = (float)mu;
    rstd[r] = (float)(1.0 / sqrt(s2 / (double)cols + 1e-5));
  }
}

START_TEST(norm_forward) {
  const int64_t rows = NORM_ROWS;
  for (int ti = 0; ti < 2; ti++)
    for (int rms = 0; rms <= 1; rms++)
      for (int ci = 0; ci < 5; ci++) {
        sc__cu_type t = types[ti];
        int64_t cols = norm_cols[ci], n = rows * cols;
        float *hx = malloc((size_t)n * 4), *hg = malloc((size_t)cols * 4);
        float *hb = malloc((size_t)cols * 4), *got = malloc((size_t)n * 4);
        float *want = malloc((size_t)n * 4), mean[NORM_ROWS], rstd[NORM_ROWS], wmean[NORM_ROWS],
              wrstd[NORM_ROWS];
        void *x = dev_filled(t, (size_t)n, 21, -3.0f, 5.0f, hx);
        void *g = dev_filled(t, (size_t)cols, 22, 0.5f, 1.5f, hg);
        void *bb = dev_filled(t, (size_t)cols, 23, -1.0f, 1.0f, hb);
        void *y = dev_alloc((size_t)n * esize(t));
        float *dm = dev_alloc(rows * 4), *dr = dev_alloc(rows * 4);
        host_norm_stats(hx, rows, cols, rms, wmean, wrstd);
        for (int64_t r = 0; r < rows; r++)
          for (int64_t k = 0; k < cols; k++)
            want[r * cols + k] = (float)((hx[r * cols + k] - (double)wmean[r]) * wrstd[r] *
                                             hg[k] + (rms ? 0.0 : hb[k]));
        ck_assert_int_eq(sc__cu_norm_fwd(t, rms, rows, cols, x, g, bb, y, dm, dr, NULL), 0);
        char what[64];
        snprintf(what, sizeof what, "%s forward, %lld cols", rms ? "RMSNorm" : "LayerNorm",
                 (long long)cols);
        to_host(t, y, (size_t)n, got);
        expect_close(t, got, want, (size_t)n, what);
        to_host(SC__CU_F32, dr, rows, rstd);
        to_host(SC__CU_F32, dm, rows, mean);
        for (int r = 0; r < rows; r++) {
          ck_assert_msg(fabsf(rstd[r] - wrstd[r]) <= 1e-4f * wrstd[r], "%s: rstd %g, want %g",
                        what, (double)rstd[r], (double)wrstd[r]);
          if (!rms)
            ck_assert_msg(fabsf(mean[r] - wmean[r]) < 1e-4f, "%s: mean %g, want %g", what,
                          (double)mean[r], (double)wmean[r]);
        }
        cudaFree(x); cudaFree(g); cudaFree(bb); cudaFree(y); cudaFree(dm); cudaFree(dr);
        free(hx); free(hg); free(hb); free(got); free(want);
      }
}
END_TEST

/* The backward, over the same shapes, from the host's mean and rstd of x: dx, dgamma and
 * (LayerNorm) dbeta. */
START_TEST(norm_backward) {
  const int64_t rows = NORM_ROWS;
  for (int ti = 0; ti < 2; ti++)
    for (int rms = 0; rms <= 1; rms++)
      for (int ci = 0; ci < 5; ci++) {
        sc__cu_type t = types[ti];
        int64_t cols = norm_cols[ci], n = rows * cols;
        float *hx = malloc((size_t)n * 4), *hdy = malloc((size_t)n * 4);
        float *hg = malloc((size_t)cols * 4), *got = malloc((size_t)n * 4);
        float *wdx = malloc((size_t)n * 4), *wdg = calloc((size_t)cols, 4);
        float *wdb = calloc((size_t)cols, 4), mean[NORM_ROWS], rstd[NORM_ROWS];
        void *x = dev_filled(t, (size_t)n, 51, -3.0f, 5.0f, hx);
        void *dy = dev_filled(t, (size_t)n, 52, -1.0f, 1.0f, hdy);
        void *g = dev_filled(t, (size_t)cols, 53, 0.5f, 1.5f, hg);
        void *dx = dev_alloc((size_t)n * esize(t)), *dg = dev_alloc((size_t)cols * esize(t));
        void *db = dev_alloc((size_t)cols * esize(t));
        float *dm = dev_alloc(rows * 4), *dr = dev_alloc(rows * 4);
        float *part = dev_alloc(sc__cu_norm_bwd_part_floats(t, rows, cols) * 4);
        host_norm_stats(hx, rows, cols, rms, mean, rstd);
        for (int64_t r = 0; r < rows; r++) {
          const float *xr = hx + r * cols, *gr = hdy + r * cols;
          const double mu = mean[r], rs = rstd[r]; /* the float figures the device reads */
          double a1 = 0, a2 = 0;
          for (int64_t k = 0; k < cols; k++) {
            double xh = (xr[k] - mu) * rs, gd = (double)hg[k] * gr[k];
            a1 += gd;
            a2 += gd * xh;
            wdg[k] += (float)(gr[k] * xh);
            wdb[k] += gr[k];
          }
          a1 = rms ? 0.0 : a1 / (double)cols;
          a2 /= (double)cols;
          for (int64_t k = 0; k < cols; k++) {
            double xh = (xr[k] - mu) * rs;
            wdx[r * cols + k] = (float)(rs * ((double)hg[k] * gr[k] - a1 - xh * a2));
          }
        }
        ck_assert_int_eq(cudaMemcpy(dm, mean, rows * 4, cudaMemcpyHostToDevice), cudaSuccess);
        ck_assert_int_eq(cudaMemcpy(dr, rstd, rows * 4, cudaMemcpyHostToDevice), cudaSuccess);
        ck_assert_int_eq(sc__cu_norm_bwd(t, rms, rows, cols, x, dy, g, dm, dr, dx, dg, db, part,
                                         NULL), 0);
        char what[64];
        snprintf(what, sizeof what, "%s backward, %lld cols", rms ? "RMSNorm" : "LayerNorm",
                 (long long)cols);
        to_host(t, dx, (size_t)n, got);
        expect_close(t, got, wdx, (size_t)n, what);
        to_host(t, dg, (size_t)cols, got);
        expect_close(t, got, wdg, (size_t)cols, what);
        if (!rms) {
          to_host(t, db, (size_t)cols, got);
          expect_close(t, got, wdb, (size_t)cols, what);
        }
        cudaFree(x); cudaFree(dy); cudaFree(g); cudaFree(dx); cudaFree(dg); cudaFree(db);
        cudaFree(dm); cudaFree(dr); cudaFree(part);
        free(hx); free(hdy); free(hg); free(got); free(wdx); free(wdg); free(wdb);
      }
}
END_TEST

/* Softmax forward (causal: row r sees keys 0 .. r % period + offset) and backward, in place
 * and not, on rows of a block (2048, 2001) and of a warp (512, 500, 64), by packs and not. */
START_TEST(softmax_forward_backward) {
  const int64_t rows = 11, colss[5] = {2048, 2001, 512, 500, 64};
  const float scale = 0.125f;
  for (int ti = 0; ti < 2; ti++)
    for (int ci = 0; ci < 5; ci++)
      for (int causal = 0; causal <= 1; causal++)
        for (int inplace = 0; inplace <= 1; inplace++) {
          sc__cu_type t = types[ti];
          int64_t cols = colss[ci], n = rows * cols, period = 3;
          /* a row's last key inside the first pack, or near the row's end */
          int64_t offset = ci % 2 == 0 ? 5 : cols - 3;
          float *hx = malloc((size_t)n * 4), *hdy = malloc((size_t)n * 4);
          float *got = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
          float *wdx = malloc((size_t)n * 4);
          void *x = dev_filled(t, (size_t)n, 31, -8.0f, 8.0f, hx);
          void *dy = dev_filled(t, (size_t)n, 32, -1.0f, 1.0f, hdy);
          void *y = inplace ? x : dev_alloc((size_t)n * esize(t));
          void *dx = dev_alloc((size_t)n * esize(t));
          for (int64_t r = 0; r < rows; r++) {
            int64_t last = causal ? r % period + offset : cols - 1;
            if (last >= cols) last = cols - 1;
            double mx = -INFINITY, s = 0;
            for (int64_t k = 0; k <= last; k++) mx = fmax(mx, hx[r * cols + k] * scale);
            for (int64_t k = 0; k <= last; k++) s += exp(hx[r * cols + k] * scale - mx);
            for (int64_t k = 0; k < cols; k++)
              want[r * cols + k] = k <= last ? (float)(exp(hx[r * cols + k] * scale - mx) / s) : 0.0f;
          }
          ck_assert_int_eq(sc__cu_softmax_fwd(t, rows, cols, period, offset, causal, scale, x, y,
                                              NULL), 0);
          char what[80];
          snprintf(what, sizeof what, "softmax forward, %lld cols, causal %d, in place %d",
                   (long long)cols, causal, inplace);
          to_host(t, y, (size_t)n, got);
          expect_close(t, got, want, (size_t)n, what);
          /* backward from the device's y (as stored) */
          for (int64_t r = 0; r < rows; r++) {
            double dot = 0;
            for (int64_t k = 0; k < cols; k++) dot += (double)hdy[r * cols + k] * got[r * cols + k];
            for (int64_t k = 0; k < cols; k++)
              wdx[r * cols + k] = (float)(scale * got[r * cols + k] * (hdy[r * cols + k] - dot));
          }
          ck_assert_int_eq(sc__cu_softmax_bwd(t, rows, cols, scale, dy, y, dx, NULL), 0);
          snprintf(what, sizeof what, "softmax backward, %lld cols", (long long)cols);
          to_host(t, dx, (size_t)n, got);
          expect_close(t, got, wdx, (size_t)n, what);
          cudaFree(x); cudaFree(dy); cudaFree(dx);
          if (!inplace) cudaFree(y);
          free(hx); free(hdy); free(got); free(want); free(wdx);
        }
}
END_TEST

START_TEST(adamw_step) {
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
  const int step = 10;
  for (int ti = 0; ti < 2; ti++) {
    sc__cu_type t = types[ti];
    const size_t n = 1027;
    float *hm = malloc(n * 4), *hg = malloc(n * 4), *h1 = malloc(n * 4), *h2 = malloc(n * 4);
    float *got = malloc(n * 4), *want = malloc(n * 4), *wm = malloc(n * 4), *wv = malloc(n * 4);
    float *master = dev_filled(SC__CU_F32, n, 41, -1.0f, 1.0f, hm);
    float *g = dev_filled(SC__CU_F32, n, 42, -1.0f, 1.0f, hg);
    float *m = dev_filled(SC__CU_F32, n, 43, -0.1f, 0.1f, h1);
    float *v = dev_filled(SC__CU_F32, n, 44, 0.0f, 0.01f, h2);
    void *w = dev_alloc(n * esize(t));
    double bc1 = 1.0 - pow(b1, step), bc2 = 1.0 - pow(b2, step);
    for (size_t i = 0; i < n; i++) {
      double mi = b1 * h1[i] + (1.0 - b1) * hg[i], vi = b2 * h2[i] + (1.0 - b2) * hg[i] * hg[i];
      double x = hm[i];
      x -= lr * ((mi / bc1) / (sqrt(vi / bc2) + eps) + wd * x);
      want[i] = (float)x;
      wm[i] = (float)mi;
      wv[i] = (float)vi;
    }
    ck_assert_int_eq(sc__cu_adam(t, (int64_t)n, lr, b1, b2, eps, wd, step, w, master, g, m, v,
                                 NULL), 0);
    to_host(t, w, n, got);
    expect_close(t, got, want, n, "AdamW weights");
    to_host(SC__CU_F32, master, n, got);
    expect_close(SC__CU_F32, got, want, n, "AdamW master weights");
    to_host(SC__CU_F32, m, n, got);
    expect_close(SC__CU_F32, got, wm, n, "AdamW first moment");
    to_host(SC__CU_F32, v, n, got);
    expect_close(SC__CU_F32, got, wv, n, "AdamW second moment");
    cudaFree(master); cudaFree(g); cudaFree(m); cudaFree(v); cudaFree(w);
    free(hm); free(hg); free(h1); free(h2); free(got); free(want); free(wm); free(wv);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cuda_kernels");
  TCase *tc = tcase_create("kernels");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fill_range_and_repeat);
  tcase_add_test(tc, elementwise_every_variant);
  tcase_add_test(tc, norm_forward);
  tcase_add_test(tc, norm_backward);
  tcase_add_test(tc, softmax_forward_backward);
  tcase_add_test(tc, adamw_step);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    printf("test_cuda_kernels: skipped: no usable CUDA device (%s)\n",
           e != cudaSuccess ? cudaGetErrorName(e) : "cudaGetDeviceCount = 0");
    return 77;
  }
  SRunner *sr = srunner_create(suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* a forked child cannot use the parent's CUDA context */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
