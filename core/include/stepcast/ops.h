/*
 * The built-in operator families: their names, the meaning of sc_op_desc.dims[] and the
 * variant codes. Shared by the workload decomposition (which emits these operators) and the
 * analytical plugins under plugins/ops/ (which estimate them). Includes plugin.h alone, so
 * a third-party plugin for one of these families may include it too.
 *
 * Documented for users in docs/operators.md. Every dim is a per-GPU extent (after tensor,
 * sequence and context splitting) and must be > 0 unless said otherwise.
 *
 *   family          dims                                                      variants
 *   "gemm"          {batch, m, n, k}   C[m,n] = A[m,k] B[k,n], batch times    SC_GEMM_*
 *   "attention"     {batch, heads, kv_heads, seq_q, seq_k, head_dim, causal}  SC_ATTN_*
 *                   (fused flash attention; causal 0/1; kv_heads divides heads)
 *   "norm"          {rows, cols}   normalised over cols                       SC_NORM_OP_*
 *   "elementwise"   {elements}     elements of the (largest) output tensor    SC_EW_*
 *   "softmax"       {rows, cols}   fused scale + causal mask + softmax over cols  SC_SOFTMAX_*
 *   "embedding"     {tokens, hidden, vocab_rows}  lookup in a vocab_rows × hidden table
 *   "cross_entropy" {tokens, vocab}   vocabulary-parallel CE over vocab logits per token
 *   "optimizer"     {params}       one optimizer step over params parameters  SC_OPTIM_*
 *   "memcpy"        {bytes}        device-to-device copy, or zero-fill, of bytes  SC_MEMCPY_*
 *
 * op->dtype is the compute/activation dtype (bf16, fp16, fp32, ...). For "optimizer" it is
 * the dtype of the model (low-precision) weights; master weights and moments are fp32.
 */
#ifndef STEPCAST_OPS_H
#define STEPCAST_OPS_H

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Family names (static strings: sc_op_desc.family must point at a string that outlives
 * every use, and memoisation hashes its contents). */
#define SC_OP_GEMM "gemm"
#define SC_OP_ATTENTION "attention"
#define SC_OP_NORM "norm"
#define SC_OP_ELEMENTWISE "elementwise"
#define SC_OP_SOFTMAX "softmax"
#define SC_OP_EMBEDDING "embedding"
#define SC_OP_CROSS_ENTROPY "cross_entropy"
#define SC_OP_OPTIMIZER "optimizer"
#define SC_OP_MEMCPY "memcpy"

/* gemm: C[m,n] from row-major operands, by layout; batch > 1 is a strided batched GEMM
 * (attention QK^T and AV). The layout says which dimensions are leading dimensions (row
 * lengths in memory), the ones a library's aligned kernels need in whole 16-byte vectors:
 *   SC_GEMM_PLAIN  C = A B, A stored m x k, B k x n: k and n (a forward GEMM, a dgrad)
 *   SC_GEMM_TN     C = A^T B, A stored k x m, B k x n: m and n (a weight gradient,
 *                  dW = dY^T X, whose m is the layer's output width: a vocabulary's) */
enum { SC_GEMM_PLAIN = 0, SC_GEMM_TN = 1, SC_GEMM_VARIANT_COUNT };

/* attention (flash): forward, and backward (which recomputes the score tiles inside,
 * as FlashAttention-2 does: its FLOPs are 2.5x the forward's). */
enum { SC_ATTN_FLASH_FWD = 0, SC_ATTN_FLASH_BWD, SC_ATTN_VARIANT_COUNT };

/* norm */
enum {
  SC_NORM_OP_LAYERNORM_FWD = 0,
  SC_NORM_OP_LAYERNORM_BWD,
  SC_NORM_OP_RMSNORM_FWD,
  SC_NORM_OP_RMSNORM_BWD,
  SC_NORM_OP_VARIANT_COUNT
};

/* elementwise: what one element costs is defined per variant in docs/operators.md.
 * dims[0] = elements of the output (for SwiGLU: of the h_ffn-wide product, i.e. half its
 * input; for rotary: of q and k together). */
enum {
  SC_EW_GELU_FWD = 0,          /* bias + GeLU (fused, Megatron bias_gelu) */
  SC_EW_GELU_BWD,
  SC_EW_SWIGLU_FWD,            /* silu(a) * b */
  SC_EW_SWIGLU_BWD,
  SC_EW_DROPOUT_FWD,           /* writes output and a 1-byte mask */
  SC_EW_DROPOUT_BWD,
  SC_EW_BIAS_DROPOUT_ADD_FWD,  /* x + dropout(y + bias) (Megatron fused) */
  SC_EW_BIAS_DROPOUT_ADD_BWD,
  SC_EW_ADD,                   /* residual add / gradient accumulation: c = a + b */
  SC_EW_ROPE_FWD,              /* rotary embedding on q and k */
  SC_EW_ROPE_BWD,
  SC_EW_RELU_FWD,              /* bias + ReLU (OPT) */
  SC_EW_RELU_BWD,
  SC_EW_SQRELU_FWD,            /* bias + squared ReLU, relu(x)^2 (Nemotron-4, Primer) */
  SC_EW_SQRELU_BWD,
  SC_EW_GEGLU_FWD,             /* gelu(a) * b (Gemma, T5 v1.1) */
  SC_EW_GEGLU_BWD,
  SC_EW_VARIANT_COUNT
};
/* The variants the samplers measure (the cpu and cuda plugins have kernels for): the first
 * eleven; the activations after them are priced by their counts alone. */
#define SC_EW_SAMPLED 11

/* softmax (unfused attention path): Megatron's fused scale + causal mask + softmax, and its
 * backward; PLAIN: a framework's plain softmax over the whole row (torch.softmax: no scale,
 * no mask), another kernel at the same shape. The built-in samplers measure the fused
 * kernels only (SC_SOFTMAX_SAMPLED variants). */
enum {
  SC_SOFTMAX_FWD = 0,
  SC_SOFTMAX_BWD,
  SC_SOFTMAX_PLAIN_FWD,
  SC_SOFTMAX_PLAIN_BWD,
  SC_SOFTMAX_VARIANT_COUNT
};
#define SC_SOFTMAX_SAMPLED 2

/* embedding: gather rows (forward), scatter-add of the gradient into the fp32 table
 * gradient (backward). */
enum { SC_EMBED_FWD = 0, SC_EMBED_BWD, SC_EMBED_VARIANT_COUNT };

/* cross_entropy: vocabulary-parallel softmax cross-entropy of the logits (forward) and its
 * gradient with respect to the logits (backward). */
enum { SC_CE_FWD = 0, SC_CE_BWD, SC_CE_VARIANT_COUNT };

/* memcpy: a device-to-device copy of bytes, or a zero-fill of bytes (memset, zero_()). */
enum { SC_MEMCPY_COPY = 0, SC_MEMCPY_FILL, SC_MEMCPY_VARIANT_COUNT };

/* optimizer: Adam (AdamW) with fp32 master weights, two fp32 moments, fp32 gradients,
 * writing back the low-precision model weights. */
enum { SC_OPTIM_ADAM = 0, SC_OPTIM_VARIANT_COUNT };

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_OPS_H */
