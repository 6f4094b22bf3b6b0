/* Internal helpers shared by the workload decomposition and the memory model. */
#ifndef SC_WORKLOAD_INT_H
#define SC_WORKLOAD_INT_H

#include <stdint.h>

#include "stepcast/workload.h"

/* Bytes per element of a dtype as stored in memory (fp32/tf32 4, bf16/fp16 2, fp8/int8 1);
 * 0 for an out-of-range value. */
double sc__dtype_bytes(sc_dtype d);

/* Per-GPU widths after tensor (and context) splitting, derived once per call. */
typedef struct sc__dims {
  int64_t b;        /* micro-batch */
  int64_t s;        /* full sequence */
  int64_t s_c;      /* sequence per context-parallel rank: s / cp */
  int64_t T;        /* tokens per GPU in the TP regions: b * s_c */
  int64_t T_sp;     /* tokens per GPU in the norm/dropout regions: T / tp with SP, else T */
  int64_t h;        /* hidden */
  int64_t d;        /* head_dim */
  int64_t a_t;      /* query heads per TP rank */
  int64_t g_t;      /* KV heads per TP rank */
  int64_t q_t;      /* query width per rank: a_t * d */
  int64_t qkv_t;    /* fused QKV output width per rank: (a_t + 2 g_t) * d */
  int64_t f_t;      /* MLP inner width per rank: ffn_hidden / tp */
  int64_t f1_t;     /* fc1 output width per rank: f_t (GeLU) or 2 f_t (SwiGLU, fused gate+up) */
  int64_t V_t;      /* padded vocabulary per rank: vocab_padded / tp */
  int64_t vocab_padded;
  int sp;           /* sequence parallelism in effect (flag and tp > 1) */
  sc_dtype act;     /* dtype of activations, communication and weights: p->dtype, except
                       bf16 for fp8 training (Transformer Engine's recipe: only the linear
                       layers' GEMMs run in fp8; attention, norms, element-wise work,
                       activations, gradients in transit and weights stay bf16) */
  double e;         /* bytes per element of act */
} sc__dims;

void sc__dims_fill(const sc_model *m, const sc_parallel *p, sc__dims *d);

/* Parameters one GPU holds: per transformer layer, for the embedding chunk (word +
 * learned position tables), for the output chunk (final norm + output projection unless it
 * is the same tensor as the input embedding on this GPU). */
int64_t sc__layer_params(const sc_model *m, const sc__dims *d);
int64_t sc__embedding_params(const sc_model *m, const sc__dims *d);
int64_t sc__output_params(const sc_model *m, const sc_parallel *p, const sc__dims *d);

#endif
