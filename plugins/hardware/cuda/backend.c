/*
 * The measuring half of the `cuda` hardware plugin: everything that calls the CUDA runtime,
 * cuBLAS and cuBLASLt, built as its own shared object (hardware-cuda-backend.so in the
 * plugin folder's cuda/ subfolder, which plugin discovery does not scan) and dlopened by the
 * plugin (cuda.c) at the first measure() only. Loading the plugin, listing it and describing
 * a device therefore map no CUDA library (541 MB of cuBLAS, 0.2 s and 211 MiB per command on
 * a machine without a GPU). Exports one symbol, sc__cuda_backend_v1 (backend.h).
 *
 * measure() times one operator on the live GPU (device 0) with CUDA events:
 *   gemm          cublasGemmEx (batch 1) / cublasGemmStridedBatchedEx, row-major C = A B
 *                 (SC_GEMM_TN: C = Aᵀ B, A stored k x m), fp32 / tf32 (CUBLAS_COMPUTE_32F_FAST_TF32) / fp16 / bf16 storage, fp32
 *                 accumulation; fp8 (E4M3, one product) through cuBLASLt, a bf16 product
 *   attention     the unfused path, per (batch, kv group): forward S = Q Kᵀ by
 *                 cublasGemmStridedBatchedEx over the group's heads (K stride 0), the scaled
 *                 causal-masked softmax kernel in place, O = P V likewise; backward dP =
 *                 dO Vᵀ, the softmax backward in place, dQ = dS K, and dV = Pᵀ dO, dK = dSᵀ Q
 *                 over the group's stacked heads
 *   norm          LayerNorm / RMSNorm forward and backward (dx, and dgamma, dbeta by partial
 *                 column sums per row group and a second kernel that adds them)
 *   softmax       scale + causal mask + softmax forward and backward
 *   elementwise   all SC_EW_* variants (GeLU, SwiGLU, dropout, bias-dropout-add, add, RoPE)
 *   optimizer     fused AdamW step on fp32 master weights and moments
 * Kernels: kernels.cu. Every kernel and GEMM runs on one non-blocking stream. Buffers are
 * allocated and filled once per call; one warm-up call runs, one timed call sets `inner`
 * (calls per sample, a sample lasting at least 50 µs), `inner` calls are captured into a
 * CUDA graph, and each sample (CUDA events around one launch of the graph) reports the
 * time per call, until min_reps samples are taken and budget_s is spent (at most 255).
 * Without a usable device, measure() fails with SC_EIO and a one-line message; it never
 * aborts.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "stepcast/ops.h"
#include "stepcast/plugin.h"

#include "../hw_common.h"
#include "backend.h"
#include "kernels.h"

_Static_assert(SC_EW_GELU_FWD == 0 && SC_EW_SWIGLU_FWD == 2 && SC_EW_DROPOUT_FWD == 4 &&
                   SC_EW_BIAS_DROPOUT_ADD_FWD == 6 && SC_EW_ADD == 8 && SC_EW_ROPE_FWD == 9 &&
                   SC_EW_SAMPLED == 11,
               "kernels.cu repeats the SC_EW_* codes");

/* ---- measure -------------------------------------------------------------------------- */

#define CU_MAX_SAMPLES 255
#define CU_MIN_SAMPLE_S 50e-6
#define CU_NBUF 10
#define CU_ROPE_PAIRS 2048

/* Created by the first measure(), destroyed by fini(): the cuBLAS handle, bound to the stream
 * every kernel and GEMM runs on (one the timing loop can capture into a graph), with its
 * workspace. */
static cublasHandle_t cu_blas;
static cublasLtHandle_t cu_lt; /* fp8 GEMMs */
static cudaStream_t cu_stream;
static void *cu_blas_ws;
#define CU_BLAS_WS_BYTES ((size_t)32 << 20) /* cuBLAS's recommendation for Hopper */

typedef struct cu_bufs {
  void *p[CU_NBUF];
  uint8_t *mask;
  float *rope;
  sc_op_desc op;
  sc__cu_type type;
  size_t elt;
} cu_bufs;

static double cu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cu_fail_rt(sc_error *err, const char *fam, const char *what, cudaError_t e) {
  return sc_plugin_fail(err, SC_EIO, "cuda: %s: %s: %s (%s)", fam, what, cudaGetErrorName(e),
                        cudaGetErrorString(e));
}

static int cu_fail_blas(sc_error *err, const char *fam, cublasStatus_t s) {
  return sc_plugin_fail(err, SC_EIO, "cuda: %s: cuBLAS: %s (%s)", fam, cublasGetStatusName(s),
                        cublasGetStatusString(s));
}

static void cu_bufs_free(cu_bufs *b) {
  for (int i = 0; i < CU_NBUF; i++) if (b->p[i] != NULL) cudaFree(b->p[i]);
  if (b->mask != NULL) cudaFree(b->mask);
  if (b->rope != NULL) cudaFree(b->rope);
}

/* Allocate buffers of n[i] elements of elt[i] bytes (filled in [-1, 1]), plus mask bytes. */
static int cu_alloc(cu_bufs *b, int count, const double *n, const size_t *elt,
                    double mask_bytes, sc_error *err) {
  size_t free_b = 0, total_b = 0;
  double need = mask_bytes;
  cudaError_t e;
  for (int i = 0; i < count; i++) need += n[i] * (double)elt[i];
  if ((e = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess)
    return cu_fail_rt(err, b->op.family, "cudaMemGetInfo", e);
  if (need > 0.9 * (double)free_b)
    return sc_plugin_fail(err, SC_ELIMIT, "cuda: %s needs %.2f GiB of buffers, more than 90%% "
                          "of the %.2f GiB free on the device", b->op.family,
                          need / 1073741824.0, (double)free_b / 1073741824.0);
  for (int i = 0; i < count; i++) {
    size_t cnt = n[i] >= 1 ? (size_t)n[i] : 1;
    sc__cu_type ty = elt[i] == 4 ? SC__CU_F32 : b->type;
    /* one-byte (fp8) arrays get the bytes of bf16 values in [-1, 1]: varied data, as the
     * others (a tensor core's power, and so its clock, depends on the data) */
    size_t nfill = elt[i] == 1 ? (cnt + 1) / 2 : cnt;
    if (elt[i] == 1) ty = SC__CU_BF16;
    if ((e = cudaMalloc(&b->p[i], nfill * (elt[i] == 1 ? 2 : elt[i]))) != cudaSuccess)
      return cu_fail_rt(err, b->op.family, "cudaMalloc", e);
    if ((e = (cudaError_t)sc__cu_fill(ty, b->p[i], nfill, 0x5eedull + (uint64_t)i, -1.0f, 1.0f,
                                      NULL)) != cudaSuccess)
      return cu_fail_rt(err, b->op.family, "fill kernel", e);
  }
  if (mask_bytes > 0) {
    if ((e = cudaMalloc((void **)&b->mask, (size_t)mask_bytes)) != cudaSuccess)
      return cu_fail_rt(err, b->op.family, "cudaMalloc", e);
    if ((e = cudaMemset(b->mask, 1, (size_t)mask_bytes)) != cudaSuccess)
      return cu_fail_rt(err, b->op.family, "cudaMemset", e);
  }
  return SC_OK;
}

static int cu_setup(cu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const char *fam = b->op.family;
  size_t t = b->elt;
  uint32_t v = b->op.variant;
  if (strcmp(fam, SC_OP_GEMM) == 0) {
    double n[3] = {(double)d[0] * d[1] * d[3], (double)d[0] * d[3] * d[2],
                   (double)d[0] * d[1] * d[2]};
    size_t e[3] = {t, t, t == 1 ? 2 : t}; /* fp8 inputs write a bf16 product */
    return cu_alloc(b, 3, n, e, 0, err);
  }
  if (strcmp(fam, SC_OP_ATTENTION) == 0) {
    /* forward: Q, K, V, S (the scores, then P in place), O; backward: Q, K, V, P, dO, dS
     * (dP, then dS in place), dQ, dK, dV */
    double q = (double)d[0] * d[1] * d[3] * d[5], kv = (double)d[0] * d[2] * d[4] * d[5];
    double sc = (double)d[0] * d[1] * d[3] * d[4];
    double n[9] = {q, kv, kv, sc, q, sc, q, kv, kv};
    size_t e[9] = {t, t, t, t, t, t, t, t, t};
    if (d[1] % d[2] != 0)
      return sc_plugin_fail(err, SC_EINVAL, "cuda: attention: kv_heads (%lld) must divide "
                            "heads (%lld)", (long long)d[2], (long long)d[1]);
    if (d[3] > d[4])
      return sc_plugin_fail(err, SC_EINVAL, "cuda: attention: seq_q (%lld) must be <= seq_k "
                            "(%lld)", (long long)d[3], (long long)d[4]);
    return cu_alloc(b, v == SC_ATTN_FLASH_FWD ? 5 : 9, n, e, 0, err);
  }
  if (strcmp(fam, SC_OP_NORM) == 0) {
    /* x, y (dy and dx for a backward), gamma, beta, mean, rstd; a backward's dgamma, dbeta
     * and its partial sums */
    const int bwd = v == SC_NORM_OP_LAYERNORM_BWD || v == SC_NORM_OP_RMSNORM_BWD;
    double nn = (double)d[0] * d[1];
    double part = bwd ? (double)sc__cu_norm_bwd_part_floats(b->type, d[0], d[1]) : 0.0;
    double n[10] = {nn, nn, (double)d[1], (double)d[1], (double)d[0], (double)d[0], nn,
                    (double)d[1], (double)d[1], part};
    size_t e[10] = {t, t, t, t, 4, 4, t, t, t, 4};
    return cu_alloc(b, bwd ? 10 : 6, n, e, 0, err);
  }
  if (strcmp(fam, SC_OP_SOFTMAX) == 0) {
    double nn = (double)d[0] * d[1];
    double n[3] = {nn, nn, nn};
    size_t e[3] = {t, t, t};
    return cu_alloc(b, 3, n, e, 0, err);
  }
  if (strcmp(fam, SC_OP_ELEMENTWISE) == 0) {
    double nn = (double)d[0];
    double n[5] = {nn, nn, nn, nn, 4096};
    size_t e[5] = {t, t, t, t, t};
    float tab[2 * CU_ROPE_PAIRS];
    cudaError_t ce;
    int rc = cu_alloc(b, 5, n, e, nn, err);
    if (rc != SC_OK) return rc;
    for (int j = 0; j < CU_ROPE_PAIRS; j++) { /* angle j / 2048, as the cpu plugin */
      tab[2 * j] = cosf((float)j / 2048.0f);
      tab[2 * j + 1] = sinf((float)j / 2048.0f);
    }
    if ((ce = cudaMalloc((void **)&b->rope, sizeof tab)) != cudaSuccess ||
        (ce = cudaMemcpy(b->rope, tab, sizeof tab, cudaMemcpyHostToDevice)) != cudaSuccess)
      return cu_fail_rt(err, fam, "RoPE table", ce);
    return SC_OK;
  }
  if (strcmp(fam, SC_OP_OPTIMIZER) == 0) {
    double nn = (double)d[0];
    double n[5] = {nn, nn, nn, nn, nn};
    size_t e[5] = {t, 4, 4, 4, 4};
    int rc = cu_alloc(b, 5, n, e, 0, err);
    cudaError_t ce;
    if (rc == SC_OK && (ce = (cudaError_t)sc__cu_fill(SC__CU_F32, b->p[4], (size_t)d[0], 11,
                                                      0.0f, 1e-3f, NULL)) != cudaSuccess)
      return cu_fail_rt(err, fam, "fill kernel", ce); /* v >= 0 */
    return rc;
  }
  return sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: no kernel for operator family '%s' "
                        "(gemm, attention, norm, softmax, elementwise, optimizer)", fam);
}

static cudaDataType_t cu_datatype(const cu_bufs *b) {
  return b->type == SC__CU_BF16 ? CUDA_R_16BF : b->type == SC__CU_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* Row-major C[m,n] = A[m,k] B[k,n] (batch times, consecutive) as column-major
 * Cᵀ = Bᵀ Aᵀ; SC_GEMM_TN: C = Aᵀ B with A stored k x m (row-major, leading dimension m), as
 * column-major Cᵀ = Bᵀ A, A's column-major view (m x k) transposed. Returns SC_OK or fills
 * err. */
static int cu_gemm(const cu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const float one = 1.0f, zero = 0.0f;
  cudaDataType_t dt = cu_datatype(b);
  cublasComputeType_t ct =
      b->op.dtype == SC_DTYPE_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  int m = (int)d[1], n = (int)d[2], k = (int)d[3];
  const int tn = b->op.variant == SC_GEMM_TN;
  const cublasOperation_t opa = tn ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = tn ? m : k;
  cublasStatus_t s;
  if (d[0] == 1)
    s = cublasGemmEx(cu_blas, CUBLAS_OP_N, opa, n, m, k, &one, b->p[1], dt, n, b->p[0], dt, lda,
                     &zero, b->p[2], dt, n, ct, CUBLAS_GEMM_DEFAULT);
  else
    s = cublasGemmStridedBatchedEx(cu_blas, CUBLAS_OP_N, opa, n, m, k, &one, b->p[1], dt, n,
                                   (long long)k * n, b->p[0], dt, lda, (long long)m * k, &zero,
                                   b->p[2], dt, n, (long long)m * n, (int)d[0], ct,
                                   CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? SC_OK : cu_fail_blas(err, b->op.family, s);
}

/* An fp8 (E4M3) GEMM through cuBLASLt, m x n x k with a bf16 product and fp32
 * accumulation: Hopper's fp8 kernels take A transposed and B not ("TN"), so A is stored k x m
 * and B k x n column-major (as Transformer Engine lays out its fp8 operands). No scaling
 * factors (1). One product only. The algorithm is cuBLASLt's first heuristic within the
 * handle's workspace; none is SC_EUNSUPPORTED. */
static int cu_gemm_fp8(const cu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const uint64_t m = (uint64_t)d[1], n = (uint64_t)d[2], k = (uint64_t)d[3];
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const float one = 1.0f, zero = 0.0f;
  const size_t ws = CU_BLAS_WS_BYTES;
  cublasLtMatmulDesc_t op = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  int nres = 0, rc = SC_OK;
  cublasStatus_t s;
  if (d[0] != 1)
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: gemm: fp8 is measured for one product "
                          "(batch %lld)", (long long)d[0]);
  memset(&res, 0, sizeof res);
  if ((s = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, (int64_t)k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, (int64_t)k)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, (int64_t)m)) !=
          CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatmulPreferenceCreate(&pref)) != CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof ws)) != CUBLAS_STATUS_SUCCESS ||
      (s = cublasLtMatmulAlgoGetHeuristic(cu_lt, op, la, lb, lc, lc, pref, 1, &res, &nres)) !=
          CUBLAS_STATUS_SUCCESS) {
    /* a shape cuBLASLt takes no fp8 kernel for (alignment, size) is skipped, not fatal */
    rc = sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: gemm: fp8 %llux%llux%llu: cuBLASLt: %s",
                        (unsigned long long)m, (unsigned long long)n, (unsigned long long)k,
                        cublasGetStatusName(s));
  } else if (nres < 1) {
    rc = sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: gemm: fp8 %llux%llux%llu: cuBLASLt has no "
                        "kernel for it", (unsigned long long)m, (unsigned long long)n,
                        (unsigned long long)k);
  } else if ((s = cublasLtMatmul(cu_lt, op, &one, b->p[0], la, b->p[1], lb, &zero, b->p[2], lc,
                                 b->p[2], lc, &res.algo, cu_blas_ws, ws, cu_stream)) !=
             CUBLAS_STATUS_SUCCESS) {
    rc = sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: gemm: fp8 %llux%llux%llu: cublasLtMatmul: "
                        "%s", (unsigned long long)m, (unsigned long long)n,
                        (unsigned long long)k, cublasGetStatusName(s));
  }
  if (pref != NULL) cublasLtMatmulPreferenceDestroy(pref);
  if (lc != NULL) cublasLtMatrixLayoutDestroy(lc);
  if (lb != NULL) cublasLtMatrixLayoutDestroy(lb);
  if (la != NULL) cublasLtMatrixLayoutDestroy(la);
  if (op != NULL) cublasLtMatmulDescDestroy(op);
  return rc;
}

/* Row-major C = op(A) op(B) (M x N, inner K) for `batch` matrices sa, sb, sc elements apart,
 * as column-major Cᵀ = op(B)ᵀ op(A)ᵀ. lda, ldb, ldc are the row-major leading dimensions
 * (the stored matrices' column counts). */
static cublasStatus_t rm_gemm(const cu_bufs *b, int ta, int tb, int64_t M, int64_t N,
                              int64_t K, const char *A, int64_t lda, int64_t sa, const char *B,
                              int64_t ldb, int64_t sb, char *C, int64_t ldc, int64_t sc,
                              int64_t batch) {
  const float one = 1.0f, zero = 0.0f;
  cudaDataType_t dt = cu_datatype(b);
  return cublasGemmStridedBatchedEx(cu_blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                    &one, B, dt, (int)ldb, sb, A, dt, (int)lda, sa, &zero, C, dt,
                                    (int)ldc, sc, (int)batch, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT);
}

/* Unfused attention, per (batch, kv group) of hpg query heads (contiguous in Q, S, O):
 *   forward:  S = Q Kᵀ over the group's heads (K stride 0), softmax in place (scale
 *             1/sqrt(d), causal), O = P V
 *   backward: dP = dO Vᵀ, dS = softmax backward (P, dP) in place, dQ = dS K (per head), and
 *             over the group's stacked heads at once dV = Pᵀ dO, dK = dSᵀ Q (a GEMM of inner
 *             dimension hpg * seq_q sums the heads that share K and V). */
static int cu_attention(const cu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const int64_t B = d[0], H = d[1], G = d[2], sq = d[3], sk = d[4], hd = d[5], hpg = H / G;
  const float scale = 1.0f / sqrtf((float)hd);
  char *const *p = (char *const *)b->p;
  const size_t e = b->elt;
  const int fwd = b->op.variant == SC_ATTN_FLASH_FWD;
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  int rc;
  for (int64_t bb = 0; bb < B && s == CUBLAS_STATUS_SUCCESS; bb++) {
    for (int64_t g = 0; g < G && s == CUBLAS_STATUS_SUCCESS; g++) {
      const size_t h0 = (size_t)(bb * H + g * hpg), kv = (size_t)(bb * G + g);
      const char *Q = p[0] + h0 * sq * hd * e, *K = p[1] + kv * sk * hd * e;
      const char *V = p[2] + kv * sk * hd * e;
      char *S = p[3] + h0 * sq * sk * e;
      if (fwd) /* S = Q Kᵀ */
        s = rm_gemm(b, 0, 1, sq, sk, hd, Q, hd, sq * hd, K, hd, 0, S, sk, sq * sk, hpg);
      else /* dP = dO Vᵀ, into dS */
        s = rm_gemm(b, 0, 1, sq, sk, hd, p[4] + h0 * sq * hd * e, hd, sq * hd, V, hd, 0,
                    p[5] + h0 * sq * sk * e, sk, sq * sk, hpg);
    }
  }
  if (s != CUBLAS_STATUS_SUCCESS) return cu_fail_blas(err, b->op.family, s);
  rc = fwd ? sc__cu_softmax_fwd(b->type, B * H * sq, sk, sq, sk - sq, (int)d[6], scale, p[3],
                                p[3], cu_stream)
           : sc__cu_softmax_bwd(b->type, B * H * sq, sk, scale, p[5], p[3], p[5], cu_stream);
  if (rc != 0) return cu_fail_rt(err, b->op.family, "softmax kernel", (cudaError_t)rc);
  for (int64_t bb = 0; bb < B && s == CUBLAS_STATUS_SUCCESS; bb++) {
    for (int64_t g = 0; g < G && s == CUBLAS_STATUS_SUCCESS; g++) {
      const size_t h0 = (size_t)(bb * H + g * hpg), kv = (size_t)(bb * G + g);
      const char *K = p[1] + kv * sk * hd * e, *V = p[2] + kv * sk * hd * e;
      const char *P = p[3] + h0 * sq * sk * e;
      if (fwd) { /* O = P V */
        s = rm_gemm(b, 0, 0, sq, hd, sk, P, sk, sq * sk, V, hd, 0, p[4] + h0 * sq * hd * e, hd,
                    sq * hd, hpg);
        continue;
      }
      const char *dS = p[5] + h0 * sq * sk * e, *dO = p[4] + h0 * sq * hd * e;
      const char *Q = p[0] + h0 * sq * hd * e;
      s = rm_gemm(b, 0, 0, sq, hd, sk, dS, sk, sq * sk, K, hd, 0, p[6] + h0 * sq * hd * e, hd,
                  sq * hd, hpg); /* dQ = dS K */
      if (s == CUBLAS_STATUS_SUCCESS) /* dV = Pᵀ dO over the stacked heads */
        s = rm_gemm(b, 1, 0, sk, hd, hpg * sq, P, sk, 0, dO, hd, 0, p[8] + kv * sk * hd * e, hd,
                    0, 1);
      if (s == CUBLAS_STATUS_SUCCESS) /* dK = dSᵀ Q */
        s = rm_gemm(b, 1, 0, sk, hd, hpg * sq, dS, sk, 0, Q, hd, 0, p[7] + kv * sk * hd * e, hd,
                    0, 1);
    }
  }
  return s == CUBLAS_STATUS_SUCCESS ? SC_OK : cu_fail_blas(err, b->op.family, s);
}

static int cu_run(const cu_bufs *b, sc_error *err) {
  const int64_t *d = b->op.dims;
  const char *fam = b->op.family;
  void *const *p = b->p;
  uint32_t v = b->op.variant;
  int rc;
  if (strcmp(fam, SC_OP_GEMM) == 0)
    return b->op.dtype == SC_DTYPE_FP8 ? cu_gemm_fp8(b, err) : cu_gemm(b, err);
  if (strcmp(fam, SC_OP_ATTENTION) == 0) return cu_attention(b, err);
  if (strcmp(fam, SC_OP_NORM) == 0) {
    const int rms = v == SC_NORM_OP_RMSNORM_FWD || v == SC_NORM_OP_RMSNORM_BWD;
    if (v == SC_NORM_OP_LAYERNORM_FWD || v == SC_NORM_OP_RMSNORM_FWD)
      rc = sc__cu_norm_fwd(b->type, rms, d[0], d[1], p[0], p[2], p[3], p[1], p[4], p[5],
                           cu_stream);
    else
      rc = sc__cu_norm_bwd(b->type, rms, d[0], d[1], p[0], p[1], p[2], p[4], p[5], p[6], p[7],
                           p[8], p[9], cu_stream);
  } else if (strcmp(fam, SC_OP_SOFTMAX) == 0)
    rc = v == SC_SOFTMAX_FWD
             ? sc__cu_softmax_fwd(b->type, d[0], d[1], d[1], 0, 1, 0.125f, p[0], p[1], cu_stream)
             : sc__cu_softmax_bwd(b->type, d[0], d[1], 0.125f, p[2], p[1], p[0], cu_stream);
  else if (strcmp(fam, SC_OP_ELEMENTWISE) == 0)
    rc = sc__cu_elementwise(b->type, (int)v, d[0], p[0], p[1], p[2], p[3], p[4],
                            d[0] < 4096 ? d[0] : 4096, b->mask, b->rope, CU_ROPE_PAIRS,
                            cu_stream);
  else /* optimizer */
    rc = sc__cu_adam(b->type, d[0], 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, p[0], p[1], p[2],
                     p[3], p[4], cu_stream);
  return rc == 0 ? SC_OK : cu_fail_rt(err, fam, "kernel launch", (cudaError_t)rc);
}

/* The timing loop of one prepared operator: one warm-up call (cuBLAS's heuristics, lazy
 * module loading), one timed call that sets `inner` (calls per sample, so that a sample
 * lasts at least CU_MIN_SAMPLE_S), then `inner` calls captured into a CUDA graph, and
 * samples of one launch of that graph each, until min_reps samples are taken and budget_s
 * is spent (at most CU_MAX_SAMPLES). A graph's launch is one call for all of its kernels, so
 * a sample is the GPU's time for them back to back, as a profiler's kernel times, not the
 * host's rate of launching them one at a time (3.6-5.0 us a call on the H100 machines of
 * docs/notes/0002-cuda-sampler-h100.md, "The CUDA sampler on an H100"). */
static int cu_time(const cu_bufs *b, uint32_t min_reps, double budget_s, double *samples,
                   uint32_t *count, sc_error *err) {
  cudaEvent_t e0 = NULL, e1 = NULL;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t ce = cudaSuccess;
  const char *what = "CUDA event";
  uint32_t n = 0, inner = 1;
  float ms = 0;
  double start;
  int rc = SC_OK;
  if ((ce = cudaEventCreate(&e0)) != cudaSuccess || (ce = cudaEventCreate(&e1)) != cudaSuccess)
    goto rt;
  if ((rc = cu_run(b, err)) != SC_OK) goto done;
  if ((ce = cudaEventRecord(e0, cu_stream)) != cudaSuccess) goto rt;
  if ((rc = cu_run(b, err)) != SC_OK) goto done;
  if ((ce = cudaEventRecord(e1, cu_stream)) != cudaSuccess ||
      (ce = cudaEventSynchronize(e1)) != cudaSuccess ||
      (ce = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
    goto rt;
  if (1e-3 * ms < CU_MIN_SAMPLE_S) {
    double c = ceil(CU_MIN_SAMPLE_S / (1e-3 * ms > 1e-7 ? 1e-3 * ms : 1e-7));
    inner = c > 1000 ? 1000 : (uint32_t)c;
  }
  what = "CUDA graph capture";
  if ((ce = cudaStreamBeginCapture(cu_stream, cudaStreamCaptureModeThreadLocal)) != cudaSuccess)
    goto rt;
  for (uint32_t r = 0; r < inner && rc == SC_OK; r++) rc = cu_run(b, err);
  ce = cudaStreamEndCapture(cu_stream, &graph); /* ends the capture whatever rc says */
  if (rc != SC_OK) goto done;
  if (ce != cudaSuccess || (ce = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess ||
      (ce = cudaGraphLaunch(exec, cu_stream)) != cudaSuccess || /* uploads the graph */
      (ce = cudaStreamSynchronize(cu_stream)) != cudaSuccess)
    goto rt;
  what = "CUDA event";
  start = cu_now();
  while (n < CU_MAX_SAMPLES) {
    if ((ce = cudaEventRecord(e0, cu_stream)) != cudaSuccess ||
        (ce = cudaGraphLaunch(exec, cu_stream)) != cudaSuccess ||
        (ce = cudaEventRecord(e1, cu_stream)) != cudaSuccess ||
        (ce = cudaEventSynchronize(e1)) != cudaSuccess ||
        (ce = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
      goto rt;
    samples[n++] = 1e-3 * (double)ms / (double)inner;
    if (n >= min_reps && cu_now() - start + 1e-3 * (double)ms > budget_s) break;
  }
  goto done;
rt:
  rc = cu_fail_rt(err, b->op.family, what, ce);
done:
  if (exec != NULL) cudaGraphExecDestroy(exec);
  if (graph != NULL) cudaGraphDestroy(graph);
  if (e0 != NULL) cudaEventDestroy(e0);
  if (e1 != NULL) cudaEventDestroy(e1);
  *count = n;
  return rc;
}

static void cu_fini(void *state);

/* The stream, the cuBLAS handle on it and the handle's workspace (cuBLAS must not allocate
 * one while a graph is being captured). On failure nothing is left half made. */
static int cu_init(const char *fam, sc_error *err) {
  cudaError_t ce;
  cublasStatus_t s;
  if ((ce = cudaStreamCreateWithFlags(&cu_stream, cudaStreamNonBlocking)) != cudaSuccess) {
    cu_stream = NULL;
    return cu_fail_rt(err, fam, "cudaStreamCreate", ce);
  }
  if ((ce = cudaMalloc(&cu_blas_ws, CU_BLAS_WS_BYTES)) != cudaSuccess) {
    cu_blas_ws = NULL;
    cu_fini(NULL);
    return cu_fail_rt(err, fam, "cudaMalloc (cuBLAS workspace)", ce);
  }
  if ((s = cublasCreate(&cu_blas)) != CUBLAS_STATUS_SUCCESS) {
    cu_blas = NULL;
    cu_fini(NULL);
    return cu_fail_blas(err, fam, s);
  }
  if ((s = cublasLtCreate(&cu_lt)) != CUBLAS_STATUS_SUCCESS) {
    cu_lt = NULL;
    cu_fini(NULL);
    return cu_fail_blas(err, fam, s);
  }
  if ((s = cublasSetStream(cu_blas, cu_stream)) != CUBLAS_STATUS_SUCCESS ||
      (s = cublasSetWorkspace(cu_blas, cu_blas_ws, CU_BLAS_WS_BYTES)) != CUBLAS_STATUS_SUCCESS) {
    cu_fini(NULL);
    return cu_fail_blas(err, fam, s);
  }
  return SC_OK;
}

static int cu_measure(void *state, const sc_device *dev, const sc_op_desc *op, uint32_t min_reps,
                      double budget_s, sc_measurement *out, sc_error *err) {
  static const char *const fams[] = {SC_OP_GEMM, SC_OP_ATTENTION, SC_OP_NORM,
                                     SC_OP_ELEMENTWISE, SC_OP_SOFTMAX, SC_OP_OPTIMIZER};
  static const uint32_t ndims_of[] = {4, 7, 2, 1, 2, 1};
  static const uint32_t nvariants[] = {SC_GEMM_VARIANT_COUNT, SC_ATTN_VARIANT_COUNT,
                                       SC_NORM_OP_VARIANT_COUNT, SC_EW_SAMPLED,
                                       SC_SOFTMAX_SAMPLED, SC_OPTIM_VARIANT_COUNT};
  double samples[CU_MAX_SAMPLES];
  uint32_t n = 0;
  int count = 0, rc, fi = -1;
  cudaError_t ce;
  cu_bufs b;
  (void)state;
  if (dev == NULL || op == NULL || out == NULL || op->family == NULL)
    return sc_plugin_fail(err, SC_EINVAL, "cuda: measure: NULL argument");
  if (min_reps < 1 || min_reps > CU_MAX_SAMPLES || !(budget_s >= 0) || !isfinite(budget_s))
    return sc_plugin_fail(err, SC_EINVAL, "cuda: measure: min_reps must be in [1, %d] and "
                          "budget_s finite and >= 0", CU_MAX_SAMPLES);
  ce = cudaGetDeviceCount(&count);
  if (ce != cudaSuccess)
    return sc_plugin_fail(err, SC_EIO, "cuda: no usable CUDA device: cudaGetDeviceCount: %s (%s)",
                          cudaGetErrorName(ce), cudaGetErrorString(ce));
  if (count < 1)
    return sc_plugin_fail(err, SC_EIO, "cuda: no CUDA device on this machine "
                          "(cudaGetDeviceCount = 0)");
  for (int i = 0; i < 6; i++) if (strcmp(op->family, fams[i]) == 0) fi = i;
  if (fi < 0)
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: no kernel for operator family '%s' "
                          "(gemm, attention, norm, softmax, elementwise, optimizer)", op->family);
  if (op->ndims != ndims_of[fi])
    return sc_plugin_fail(err, SC_EINVAL, "cuda: %s: ndims must be %u (got %u)", op->family,
                          ndims_of[fi], op->ndims);
  for (uint32_t i = 0; i < op->ndims; i++) {
    int ok = op->dims[i] > 0 && op->dims[i] < ((int64_t)1 << 31);
    if (fi == 1 && i == 6) ok = op->dims[i] == 0 || op->dims[i] == 1;
    if (!ok)
      return sc_plugin_fail(err, SC_EINVAL, "cuda: %s: dims[%u] = %lld out of range",
                            op->family, i, (long long)op->dims[i]);
  }
  if (op->variant >= nvariants[fi])
    return sc_plugin_fail(err, SC_EINVAL, "cuda: %s: variant %u unknown or not measured here", op->family,
                          op->variant);
  memset(&b, 0, sizeof b);
  b.op = *op;
  switch (op->dtype) {
  case SC_DTYPE_FP32:
  case SC_DTYPE_TF32: b.type = SC__CU_F32; b.elt = 4; break;
  case SC_DTYPE_FP16: b.type = SC__CU_F16; b.elt = 2; break;
  case SC_DTYPE_BF16: b.type = SC__CU_BF16; b.elt = 2; break;
  case SC_DTYPE_FP8: /* E4M3 GEMM operands, a bf16 product */
    if (fi != 0)
      return sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: %s: fp8 is measured for GEMMs only",
                            op->family);
    b.type = SC__CU_BF16;
    b.elt = 1;
    break;
  default:
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "cuda: measure: dtype %s: the CUDA sampler "
                          "runs fp32, tf32, fp16 and bf16", sc_dtype_name(op->dtype));
  }
  if (cu_blas == NULL && (rc = cu_init(op->family, err)) != SC_OK) return rc;
  rc = cu_setup(&b, err);
  /* the buffers are filled on the legacy stream; the non-blocking cu_stream does not wait */
  if (rc == SC_OK && (ce = cudaDeviceSynchronize()) != cudaSuccess)
    rc = cu_fail_rt(err, op->family, "cudaDeviceSynchronize", ce);
  if (rc == SC_OK) rc = cu_time(&b, min_reps, budget_s, samples, &n, err);
  cu_bufs_free(&b);
  if (rc != SC_OK) return rc;
  sc__hw_summarise(samples, n, out);
  return SC_OK;
}

static void cu_fini(void *state) {
  (void)state;
  if (cu_lt != NULL) cublasLtDestroy(cu_lt);
  if (cu_blas != NULL) cublasDestroy(cu_blas);
  if (cu_blas_ws != NULL) cudaFree(cu_blas_ws);
  if (cu_stream != NULL) cudaStreamDestroy(cu_stream);
  cu_blas = NULL;
  cu_lt = NULL;
  cu_blas_ws = NULL;
  cu_stream = NULL;
}

static void cu_backend_fini(void) { cu_fini(NULL); }

static const sc__cuda_backend cu_backend = {
    .size = (uint32_t)sizeof(sc__cuda_backend),
    .measure = cu_measure,
    .fini = cu_backend_fini,
};

SC_PLUGIN_VISIBLE const sc__cuda_backend *sc__cuda_backend_v1(void);
SC_PLUGIN_VISIBLE const sc__cuda_backend *sc__cuda_backend_v1(void) { return &cu_backend; }
