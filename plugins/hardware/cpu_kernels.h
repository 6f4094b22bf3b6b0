/*
 * fp32 kernels of the host CPU: what the `cpu` hardware plugin times (plugins/hardware/cpu.c)
 * and what tests/bench/train_step.c runs as a real training step. Declared here, defined once
 * in plugins/hardware/cpu/kernels.c, compiled once into the object library sc_cpu_kernels
 * that the plugin and every such program link: one machine code (see SC__CPU_KERNEL).
 *
 * Every kernel works on fp32 row-major arrays the caller owns; none allocates except
 * sc__cpu_attn_* (scratch from the caller too: see the _scratch_floats helpers). The
 * operation each computes is the one plugins/ops/<family>.c counts (docs/operators.md):
 *   gemm        C[m,n] = A[m,k] B[k,n], batch times, through cblas_sgemm
 *   layernorm / rmsnorm forward and backward over cols, fp32 statistics
 *   softmax     scale + causal mask + softmax over cols (row r is query r % cols)
 *   elementwise GeLU (tanh), SwiGLU, dropout, bias-dropout-add, add, RoPE, fwd and bwd
 *   attention   flash-style: per (batch, head) and block of 64 query rows, S = Q K^T by
 *               sgemm, masked softmax kept as log-sum-exp, O = P V; the backward recomputes
 *               P from the log-sum-exp (FlashAttention-2's five products); causal blocks skip
 *               the keys they cannot see
 *   embedding   row gather, and the dense backward (zero-fill, scatter-add, accumulate)
 *   cross_entropy  softmax cross-entropy over the vocabulary, fwd and bwd (in place)
 *   adam        AdamW on fp32 master weights, moments m and v
 */
#ifndef SC_PLUGINS_HARDWARE_CPU_KERNELS_H
#define SC_PLUGINS_HARDWARE_CPU_KERNELS_H

#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_attn_block.h" /* SC__CPU_ATTN_BLOCK */

/* The kernels are functions of one object, not code compiled into each includer. As static
 * functions of each caller they were inlined into it (AdamW in train_step's main took
 * 14.5-16.8 ms a step against 10.0-10.7 out of line), and even out of line each binary had
 * its own compilation of them; one object gives one machine code by construction, at the
 * same page offsets everywhere (docs/notes/0001-host-cpu-residuals.md, "Kernels out of line, staggered buffers
 * and the attention tile" and "One object for the CPU kernels"). Hidden: the plugin module
 * exports its entry point alone. */
#define SC__CPU_KERNEL __attribute__((visibility("hidden")))

/* ---- Buffers ------------------------------------------------------------------------- */

/* The kernels' arrays, allocated by the sampler and train_step alike. Blocks large enough for
 * malloc to map them all start at the same offset in their 4 KiB page, and a kernel that
 * streams several of them then loads from addresses whose low 12 bits match its own recent
 * stores (4K aliasing): AdamW over 3.8 M parameters took 10.2 ms or 17-19 ms by the process,
 * the same code and size. Buffer `index` starts on its own 64-byte line of the page instead
 * (index mod 64), as a colouring allocator would place it; *raw gets the block to free.
 * The buffer is not zeroed. NULL when out of memory. */
#define SC__CPU_BUF_LINE 64
static inline void *sc__cpu_buf_alloc(size_t bytes, unsigned index, void **raw) {
  size_t off = (size_t)(index % 64u) * SC__CPU_BUF_LINE;
  unsigned char *p = malloc(bytes + off + SC__CPU_BUF_LINE); /* not zeroed */
  *raw = p;
  if (p == NULL) return NULL;
  /* the offset from the block's own alignment, not from a page edge it may not sit on */
  uintptr_t a = ((uintptr_t)p + SC__CPU_BUF_LINE - 1) & ~(uintptr_t)(SC__CPU_BUF_LINE - 1);
  return (void *)(a + off);
}

/* ---- GEMM --------------------------------------------------------------------------- */

/* C[i] = A[i] B[i] for i < batch; A is m x k, B k x n, C m x n, consecutive in memory. */
SC__CPU_KERNEL void sc__cpu_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float *A,
                                 const float *B, float *C);

/* General form for the training step: C = alpha op(A) op(B) + beta C. */
SC__CPU_KERNEL void sc__cpu_gemm_t(int ta, int tb, int64_t m, int64_t n, int64_t k,
                                   const float *A, int64_t lda, const float *B, int64_t ldb,
                                   float beta, float *C, int64_t ldc);

/* ---- Norms -------------------------------------------------------------------------- */

SC__CPU_KERNEL void sc__cpu_layernorm_fwd(int64_t rows, int64_t cols, const float *x,
                                          const float *gamma, const float *beta, float *y,
                                          float *mean, float *rstd);

/* dx from dy; dgamma, dbeta accumulate (+=). */
SC__CPU_KERNEL void sc__cpu_layernorm_bwd(int64_t rows, int64_t cols, const float *dy,
                                          const float *x, const float *gamma, const float *mean,
                                          const float *rstd, float *dx, float *dgamma,
                                          float *dbeta);

SC__CPU_KERNEL void sc__cpu_rmsnorm_fwd(int64_t rows, int64_t cols, const float *x,
                                        const float *gamma, float *y, float *rstd);

SC__CPU_KERNEL void sc__cpu_rmsnorm_bwd(int64_t rows, int64_t cols, const float *dy,
                                        const float *x, const float *gamma, const float *rstd,
                                        float *dx, float *dgamma);

/* ---- Softmax (scale + causal mask + softmax over cols) ------------------------------- */

SC__CPU_KERNEL void sc__cpu_softmax_fwd(int64_t rows, int64_t cols, float scale, const float *x,
                                        float *y);

SC__CPU_KERNEL void sc__cpu_softmax_bwd(int64_t rows, int64_t cols, float scale, const float *dy,
                                        const float *y, float *dx);

/* ---- Element-wise ------------------------------------------------------------------- */

/* y = gelu(x + bias[i % nbias]) (tanh form). The bias index wraps with a counter, not a
 * division per element. */
SC__CPU_KERNEL void sc__cpu_gelu_fwd(int64_t n, const float *x, const float *bias, int64_t nbias,
                                     float *y);

/* dx = dy * gelu'(x + bias). */
SC__CPU_KERNEL void sc__cpu_gelu_bwd(int64_t n, const float *dy, const float *x,
                                     const float *bias, int64_t nbias, float *dx);

/* y = silu(a) * b. */
SC__CPU_KERNEL void sc__cpu_swiglu_fwd(int64_t n, const float *a, const float *b, float *y);

SC__CPU_KERNEL void sc__cpu_swiglu_bwd(int64_t n, const float *dy, const float *a,
                                       const float *b, float *da, float *db);

/* A counter-based hash (splitmix64's finaliser): the dropout mask of element i of a call
 * seeded with seed, reproducible and independent of traversal order. */
static inline uint32_t sc__cpu_hash(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* y = x * mask / (1 - p), mask[i] = 1 with probability 1 - p. */
SC__CPU_KERNEL void sc__cpu_dropout_fwd(int64_t n, float p, uint64_t seed, const float *x,
                                        float *y, uint8_t *mask);

/* dx = dy * mask / (1 - p) (also the backward of bias-dropout-add into its branch). */
SC__CPU_KERNEL void sc__cpu_dropout_bwd(int64_t n, float p, const float *dy, const uint8_t *mask,
                                        float *dx);

/* out = res + dropout(x + bias[i % nbias]) (Megatron's fused bias-dropout-add). */
SC__CPU_KERNEL void sc__cpu_bda_fwd(int64_t n, float p, uint64_t seed, const float *x,
                                    const float *bias, int64_t nbias, const float *res,
                                    float *out, uint8_t *mask);

/* c = a + b (STREAM's Add kernel; also the microbenchmark for memory bandwidth). */
SC__CPU_KERNEL void sc__cpu_add(int64_t n, const float *a, const float *b, float *c);

/* Rotary embedding on consecutive pairs: (x0, x1) rotated by the angle of pair j (table
 * cs[2j] = cos, cs[2j+1] = sin, npairs entries, reused cyclically); sign = -1 rotates
 * back (backward). */
SC__CPU_KERNEL void sc__cpu_rope(int64_t n, const float *x, const float *cs, int64_t npairs,
                                 float sign, float *y);

/* ---- Attention (flash-style, fp32) -------------------------------------------------- */

/* Scratch floats attention needs: one block of scores and one of probabilities. */
static inline size_t sc__cpu_attn_scratch_floats(int64_t seq_k) {
  return (size_t)2 * SC__CPU_ATTN_BLOCK * (size_t)seq_k + SC__CPU_ATTN_BLOCK;
}

/* Q [B][H][sq][d], K, V [B][G][sk][d], O [B][H][sq][d], lse [B][H][sq]. */
SC__CPU_KERNEL void sc__cpu_attn_fwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk,
                                     int64_t d, int causal, const float *Q, const float *K,
                                     const float *V, float *O, float *lse, float *scratch);

/* Gradients dQ (overwritten), dK and dV (overwritten) from dO, with P recomputed from lse. */
SC__CPU_KERNEL void sc__cpu_attn_bwd(int64_t B, int64_t H, int64_t G, int64_t sq, int64_t sk,
                                     int64_t d, int causal, const float *Q, const float *K,
                                     const float *V, const float *O, const float *dO,
                                     const float *lse, float *dQ, float *dK, float *dV,
                                     float *scratch);

/* ---- Embedding and cross-entropy ----------------------------------------------------- */

/* y[t] = W[ids[t]] (rows of hidden floats). */
SC__CPU_KERNEL void sc__cpu_embed_fwd(int64_t tokens, int64_t hidden, const int64_t *ids,
                                      const float *W, float *y);

/* PyTorch's dense embedding backward, then Megatron's accumulation: zero-fill G
 * (vocab_rows x hidden), scatter-add dy into it, add G into the fp32 main gradient. */
SC__CPU_KERNEL void sc__cpu_embed_bwd(int64_t tokens, int64_t hidden, int64_t vocab_rows,
                                      const int64_t *ids, const float *dy, float *G,
                                      float *main_grad);

/* Cross-entropy over vocab logits per token: logits become the softmax in place (kept for
 * the backward), loss[t] = log(sum exp) - logit[label]. */
SC__CPU_KERNEL void sc__cpu_xent_fwd(int64_t tokens, int64_t vocab, const int64_t *labels,
                                     float *logits, float *loss);

/* In place: softmax -> dlogits = (softmax - onehot) * dloss (the mean's 1/tokens). */
SC__CPU_KERNEL void sc__cpu_xent_bwd(int64_t tokens, int64_t vocab, const int64_t *labels,
                                     float dloss, float *probs);

/* ---- Optimizer ---------------------------------------------------------------------- */

/* One AdamW step (bias-corrected, step t >= 1) over n fp32 parameters. */
SC__CPU_KERNEL void sc__cpu_adam(int64_t n, float lr, float beta1, float beta2, float eps,
                                 float wd, int t, float *p, const float *g, float *m,
                                 float *v);

#endif /* SC_PLUGINS_HARDWARE_CPU_KERNELS_H */
