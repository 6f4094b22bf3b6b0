/*
 * The fp32 kernels of the host CPU, compiled once (declared and documented in
 * plugins/hardware/cpu_kernels.h). This file is the object library sc_cpu_kernels
 * (plugins/CMakeLists.txt), linked into the cpu hardware plugin (its module and the static
 * built-ins) and into every program that runs the kernels (tests/bench: train_step,
 * kernel_place, row_sweep, ...): `stepcast sample` times the very machine code a training
 * step runs, at the same offsets in a 4 KiB page (SC__CPU_KERNEL_FIRST), whatever each
 * binary's compiler options or inlining decisions (docs/notes/0001-host-cpu-residuals.md, "One object for the
 * CPU kernels").
 *
 * A folder of its own: every plugins/hardware/<stem>.c is a plugin of its own.
 */
#include "cpu_kernels.h"

/* The object's text starts on a page: the first kernel is aligned to 4 KiB, which aligns the
 * section, and the linker keeps the object's layout, so every kernel and loop sits at the same
 * page offset in every binary. */
#define SC__CPU_KERNEL_FIRST SC__CPU_KERNEL __attribute__((aligned(4096)))

/* ---- Helpers of the kernels (inline) ------------------------------------------------ */

/* max(a, b) for the kernels' row maxima, inline: glibc's fmaxf is a call per element (gcc
 * keeps it a call for its NaN rules), 5.0 ns per logit in the cross-entropy forward where the
 * inline comparison takes 3.9 (docs/notes/0001-host-cpu-residuals.md, "The row maxima inline"); the scores and
 * logits are finite. */
static inline float sc__cpu_maxf(float a, float b) { return b > a ? b : a; }

#define SC__CPU_GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* tanh(u) = 1 - 2 / (1 + exp(2u)), without branches on u (glibc's tanhf switches formulas by
 * |u|; on activations those branches are data-dependent, and a measurement repeating the same
 * small input lets the branch predictor learn them, which a training step never does).
 * exp overflowing to +inf gives 1, underflowing to 0 gives -1. */
static inline float sc__cpu_tanh(float u) { return 1.0f - 2.0f / (1.0f + expf(2.0f * u)); }

/* Keys query row i may see: all, or 0 .. i + (seq_k - seq_q) when causal. */
static inline int64_t sc__cpu_attn_kmax(int64_t row_end, int64_t seq_q, int64_t seq_k,
                                        int causal) {
  if (!causal) return seq_k;
  int64_t k = row_end + (seq_k - seq_q);
  return k < seq_k ? (k > 0 ? k : 1) : seq_k;
}

/* ---- GEMM --------------------------------------------------------------------------- */

SC__CPU_KERNEL_FIRST void sc__cpu_gemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                                       const float *A, const float *B, float *C) {
  for (int64_t i = 0; i < batch; i++) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                A + i * m * k, (int)k, B + i * k * n, (int)n, 0.0f, C + i * m * n, (int)n);
  }
}

SC__CPU_KERNEL void sc__cpu_gemm_t(int ta, int tb, int64_t m, int64_t n, int64_t k,
                                   const float *A, int64_t lda, const float *B, int64_t ldb,
                                   float beta, float *C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* ---- Norms -------------------------------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_layernorm_fwd(int64_t rows, int64_t cols, const float *x,
                                          const float *gamma, const float *beta, float *y,
                                          float *mean, float *rstd) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float s = 0.0f, s2 = 0.0f;
    for (int64_t c = 0; c < cols; c++) s += xr[c];
    float mu = s / (float)cols;
    for (int64_t c = 0; c < cols; c++) {
      float d = xr[c] - mu;
      s2 += d * d;
    }
    float rs = 1.0f / sqrtf(s2 / (float)cols + 1e-5f);
    for (int64_t c = 0; c < cols; c++) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

SC__CPU_KERNEL void sc__cpu_layernorm_bwd(int64_t rows, int64_t cols, const float *dy,
                                          const float *x, const float *gamma, const float *mean,
                                          const float *rstd, float *dx, float *dgamma,
                                          float *dbeta) {
  for (int64_t r = 0; r < rows; r++) {
    const float *dyr = dy + r * cols, *xr = x + r * cols;
    float *dxr = dx + r * cols;
    float mu = mean[r], rs = rstd[r], a = 0.0f, b = 0.0f;
    for (int64_t c = 0; c < cols; c++) {
      float xh = (xr[c] - mu) * rs, g = dyr[c] * gamma[c];
      a += g;
      b += g * xh;
      dgamma[c] += dyr[c] * xh;
      dbeta[c] += dyr[c];
    }
    a /= (float)cols;
    b /= (float)cols;
    for (int64_t c = 0; c < cols; c++) {
      float xh = (xr[c] - mu) * rs;
      dxr[c] = (dyr[c] * gamma[c] - a - xh * b) * rs;
    }
  }
}

SC__CPU_KERNEL void sc__cpu_rmsnorm_fwd(int64_t rows, int64_t cols, const float *x,
                                        const float *gamma, float *y, float *rstd) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float s2 = 0.0f;
    for (int64_t c = 0; c < cols; c++) s2 += xr[c] * xr[c];
    float rs = 1.0f / sqrtf(s2 / (float)cols + 1e-5f);
    for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * rs * gamma[c];
    rstd[r] = rs;
  }
}

SC__CPU_KERNEL void sc__cpu_rmsnorm_bwd(int64_t rows, int64_t cols, const float *dy,
                                        const float *x, const float *gamma, const float *rstd,
                                        float *dx, float *dgamma) {
  for (int64_t r = 0; r < rows; r++) {
    const float *dyr = dy + r * cols, *xr = x + r * cols;
    float *dxr = dx + r * cols;
    float rs = rstd[r], b = 0.0f;
    for (int64_t c = 0; c < cols; c++) {
      b += dyr[c] * gamma[c] * xr[c];
      dgamma[c] += dyr[c] * xr[c] * rs;
    }
    b *= rs * rs / (float)cols;
    for (int64_t c = 0; c < cols; c++) dxr[c] = (dyr[c] * gamma[c] - xr[c] * b) * rs;
  }
}

/* ---- Softmax (scale + causal mask + softmax over cols) ------------------------------- */

SC__CPU_KERNEL void sc__cpu_softmax_fwd(int64_t rows, int64_t cols, float scale, const float *x,
                                        float *y) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    int64_t last = r % cols; /* query position: sees keys 0..last */
    float mx = -INFINITY, s = 0.0f;
    for (int64_t c = 0; c <= last; c++) mx = sc__cpu_maxf(mx, xr[c] * scale);
    for (int64_t c = 0; c <= last; c++) {
      float e = expf(xr[c] * scale - mx);
      yr[c] = e;
      s += e;
    }
    float inv = 1.0f / s;
    for (int64_t c = 0; c <= last; c++) yr[c] *= inv;
    for (int64_t c = last + 1; c < cols; c++) yr[c] = 0.0f;
  }
}

SC__CPU_KERNEL void sc__cpu_softmax_bwd(int64_t rows, int64_t cols, float scale, const float *dy,
                                        const float *y, float *dx) {
  for (int64_t r = 0; r < rows; r++) {
    const float *dyr = dy + r * cols, *yr = y + r * cols;
    float *dxr = dx + r * cols;
    float d = 0.0f;
    for (int64_t c = 0; c < cols; c++) d += dyr[c] * yr[c];
    for (int64_t c = 0; c < cols; c++) dxr[c] = scale * yr[c] * (dyr[c] - d);
  }
}

/* ---- Element-wise ------------------------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_gelu_fwd(int64_t n, const float *x, const float *bias, int64_t nbias,
                                     float *y) {
  for (int64_t i = 0, j = 0; i < n; i++, j = j + 1 == nbias ? 0 : j + 1) {
    float v = x[i] + bias[j];
    float t = sc__cpu_tanh(SC__CPU_GELU_K * (v + 0.044715f * v * v * v));
    y[i] = 0.5f * v * (1.0f + t);
  }
}

SC__CPU_KERNEL void sc__cpu_gelu_bwd(int64_t n, const float *dy, const float *x,
                                     const float *bias, int64_t nbias, float *dx) {
  for (int64_t i = 0, j = 0; i < n; i++, j = j + 1 == nbias ? 0 : j + 1) {
    float v = x[i] + bias[j];
    float u = SC__CPU_GELU_K * (v + 0.044715f * v * v * v);
    float t = sc__cpu_tanh(u);
    float du = SC__CPU_GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  }
}

SC__CPU_KERNEL void sc__cpu_swiglu_fwd(int64_t n, const float *a, const float *b, float *y) {
  for (int64_t i = 0; i < n; i++) {
    float s = 1.0f / (1.0f + expf(-a[i]));
    y[i] = a[i] * s * b[i];
  }
}

SC__CPU_KERNEL void sc__cpu_swiglu_bwd(int64_t n, const float *dy, const float *a,
                                       const float *b, float *da, float *db) {
  for (int64_t i = 0; i < n; i++) {
    float s = 1.0f / (1.0f + expf(-a[i]));
    float silu = a[i] * s;
    db[i] = dy[i] * silu;
    da[i] = dy[i] * b[i] * s * (1.0f + a[i] * (1.0f - s));
  }
}

SC__CPU_KERNEL void sc__cpu_dropout_fwd(int64_t n, float p, uint64_t seed, const float *x,
                                        float *y, uint8_t *mask) {
  uint32_t thr = (uint32_t)(p * 4294967295.0f);
  float sc = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; i++) {
    uint8_t k = sc__cpu_hash(seed, (uint64_t)i) >= thr;
    mask[i] = k;
    y[i] = x[i] * ((float)k * sc); /* no branch on the random mask */
  }
}

SC__CPU_KERNEL void sc__cpu_dropout_bwd(int64_t n, float p, const float *dy, const uint8_t *mask,
                                        float *dx) {
  float sc = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * ((float)mask[i] * sc); /* branch-free */
}

SC__CPU_KERNEL void sc__cpu_bda_fwd(int64_t n, float p, uint64_t seed, const float *x,
                                    const float *bias, int64_t nbias, const float *res,
                                    float *out, uint8_t *mask) {
  uint32_t thr = (uint32_t)(p * 4294967295.0f);
  float sc = 1.0f / (1.0f - p);
  for (int64_t i = 0, j = 0; i < n; i++, j = j + 1 == nbias ? 0 : j + 1) {
    uint8_t k = sc__cpu_hash(seed, (uint64_t)i) >= thr;
    mask[i] = k;
    out[i] = res[i] + (x[i] + bias[j]) * ((float)k * sc);
  }
}

SC__CPU_KERNEL void sc__cpu_add(int64_t n, const float *a, const float *b, float *c) {
  for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

SC__CPU_KERNEL void sc__cpu_rope(int64_t n, const float *x, const float *cs, int64_t npairs,
                                 float sign, float *y) {
  for (int64_t i = 0; i + 1 < n; i += 2) {
    int64_t j = (i / 2) % npairs;
    float c = cs[2 * j], s = sign * cs[2 * j + 1];
    y[i] = x[i] * c - x[i + 1] * s;
    y[i + 1] = x[i] * s + x[i + 1] * c;
  }
}

/* ---- Attention (flash-style, fp32) -------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_attn_fwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk,
                                     int64_t d, int causal, const float *Q, const float *K,
                                     const float *V, float *O, float *lse, float *scratch) {
  float scale = 1.0f / sqrtf((float)d);
  float *S = scratch;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      int64_t g = h / (H / G);
      const float *q = Q + ((b * H + h) * sq) * d;
      const float *kk = K + ((b * G + g) * sk) * d, *vv = V + ((b * G + g) * sk) * d;
      float *o = O + ((b * H + h) * sq) * d;
      float *l = lse + (b * H + h) * sq;
      for (int64_t r0 = 0; r0 < sq; r0 += SC__CPU_ATTN_BLOCK) {
        int64_t r1 = r0 + SC__CPU_ATTN_BLOCK < sq ? r0 + SC__CPU_ATTN_BLOCK : sq;
        int64_t nr = r1 - r0, kmax = sc__cpu_attn_kmax(r1, sq, sk, causal);
        sc__cpu_gemm_t(0, 1, nr, kmax, d, q + r0 * d, d, kk, d, 0.0f, S, kmax);
        for (int64_t i = 0; i < nr; i++) {
          float *s = S + i * kmax;
          int64_t last = causal ? r0 + i + (sk - sq) : sk - 1;
          if (last >= kmax) last = kmax - 1;
          float mx = -INFINITY, sum = 0.0f;
          for (int64_t c = 0; c <= last; c++) mx = sc__cpu_maxf(mx, s[c] * scale);
          for (int64_t c = 0; c <= last; c++) {
            s[c] = expf(s[c] * scale - mx);
            sum += s[c];
          }
          float inv = 1.0f / sum;
          for (int64_t c = 0; c <= last; c++) s[c] *= inv;
          for (int64_t c = last + 1; c < kmax; c++) s[c] = 0.0f;
          l[r0 + i] = mx + logf(sum);
        }
        sc__cpu_gemm_t(0, 0, nr, d, kmax, S, kmax, vv, d, 0.0f, o + r0 * d, d);
      }
    }
  }
}

SC__CPU_KERNEL void sc__cpu_attn_bwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk,
                                     int64_t d, int causal, const float *Q, const float *K,
                                     const float *V, const float *O, const float *dO,
                                     const float *lse, float *dQ, float *dK, float *dV,
                                     float *scratch) {
  float scale = 1.0f / sqrtf((float)d);
  float *P = scratch, *dP = scratch + (size_t)SC__CPU_ATTN_BLOCK * (size_t)sk;
  float *D = dP + (size_t)SC__CPU_ATTN_BLOCK * (size_t)sk;
  memset(dK, 0, (size_t)(B * G * sk * d) * sizeof *dK);
  memset(dV, 0, (size_t)(B * G * sk * d) * sizeof *dV);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t h = 0; h < H; h++) {
      int64_t g = h / (H / G);
      size_t qo = (size_t)((b * H + h) * sq * d), ko = (size_t)((b * G + g) * sk * d);
      const float *l = lse + (b * H + h) * sq;
      for (int64_t r0 = 0; r0 < sq; r0 += SC__CPU_ATTN_BLOCK) {
        int64_t r1 = r0 + SC__CPU_ATTN_BLOCK < sq ? r0 + SC__CPU_ATTN_BLOCK : sq;
        int64_t nr = r1 - r0, kmax = sc__cpu_attn_kmax(r1, sq, sk, causal);
        const float *q = Q + qo + r0 * d, *o = O + qo + r0 * d, *dout = dO + qo + r0 * d;
        /* P = exp(scale * Q K^T - lse), masked */
        sc__cpu_gemm_t(0, 1, nr, kmax, d, q, d, K + ko, d, 0.0f, P, kmax);
        for (int64_t i = 0; i < nr; i++) {
          float *p = P + i * kmax;
          int64_t last = causal ? r0 + i + (sk - sq) : sk - 1;
          if (last >= kmax) last = kmax - 1;
          for (int64_t c = 0; c <= last; c++) p[c] = expf(p[c] * scale - l[r0 + i]);
          for (int64_t c = last + 1; c < kmax; c++) p[c] = 0.0f;
          float s = 0.0f;
          for (int64_t c = 0; c < d; c++) s += dout[i * d + c] * o[i * d + c];
          D[i] = s;
        }
        /* dV += P^T dO */
        sc__cpu_gemm_t(1, 0, kmax, d, nr, P, kmax, dout, d, 1.0f, dV + ko, d);
        /* dP = dO V^T; dS = P (dP - D) scale (into dP) */
        sc__cpu_gemm_t(0, 1, nr, kmax, d, dout, d, V + ko, d, 0.0f, dP, kmax);
        for (int64_t i = 0; i < nr; i++) {
          for (int64_t c = 0; c < kmax; c++) {
            dP[i * kmax + c] = P[i * kmax + c] * (dP[i * kmax + c] - D[i]) * scale;
          }
        }
        /* dQ = dS K; dK += dS^T Q */
        sc__cpu_gemm_t(0, 0, nr, d, kmax, dP, kmax, K + ko, d, 0.0f, dQ + qo + r0 * d, d);
        sc__cpu_gemm_t(1, 0, kmax, d, nr, dP, kmax, q, d, 1.0f, dK + ko, d);
      }
    }
  }
}

/* ---- Embedding and cross-entropy ----------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_embed_fwd(int64_t tokens, int64_t hidden, const int64_t *ids,
                                      const float *W, float *y) {
  for (int64_t t = 0; t < tokens; t++)
    memcpy(y + t * hidden, W + ids[t] * hidden, (size_t)hidden * sizeof *y);
}

SC__CPU_KERNEL void sc__cpu_embed_bwd(int64_t tokens, int64_t hidden, int64_t vocab_rows,
                                      const int64_t *ids, const float *dy, float *G,
                                      float *main_grad) {
  memset(G, 0, (size_t)(vocab_rows * hidden) * sizeof *G);
  for (int64_t t = 0; t < tokens; t++) {
    float *g = G + ids[t] * hidden;
    const float *d = dy + t * hidden;
    for (int64_t c = 0; c < hidden; c++) g[c] += d[c];
  }
  for (int64_t i = 0; i < vocab_rows * hidden; i++) main_grad[i] += G[i];
}

SC__CPU_KERNEL void sc__cpu_xent_fwd(int64_t tokens, int64_t vocab, const int64_t *labels,
                                     float *logits, float *loss) {
  for (int64_t t = 0; t < tokens; t++) {
    float *x = logits + t * vocab, mx = -INFINITY, s = 0.0f;
    for (int64_t v = 0; v < vocab; v++) mx = sc__cpu_maxf(mx, x[v]);
    float xl = x[labels[t]] - mx;
    for (int64_t v = 0; v < vocab; v++) {
      x[v] = expf(x[v] - mx);
      s += x[v];
    }
    float inv = 1.0f / s;
    for (int64_t v = 0; v < vocab; v++) x[v] *= inv;
    loss[t] = logf(s) - xl;
  }
}

SC__CPU_KERNEL void sc__cpu_xent_bwd(int64_t tokens, int64_t vocab, const int64_t *labels,
                                     float dloss, float *probs) {
  for (int64_t t = 0; t < tokens; t++) {
    float *p = probs + t * vocab;
    for (int64_t v = 0; v < vocab; v++) p[v] *= dloss;
    p[labels[t]] -= dloss;
  }
}

/* ---- Optimizer ---------------------------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_adam(int64_t n, float lr, float beta1, float beta2, float eps,
                                 float wd, int t, float *p, const float *g, float *m,
                                 float *v) {
  float c1 = 1.0f / (1.0f - powf(beta1, (float)t)), c2 = 1.0f / (1.0f - powf(beta2, (float)t));
  for (int64_t i = 0; i < n; i++) {
    float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
    float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi * c1 / (sqrtf(vi * c2) + eps) + wd * p[i]);
  }
}
