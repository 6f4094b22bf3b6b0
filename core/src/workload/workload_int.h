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
  /* Mixture of experts (zeros for a dense model; stepcast/workload.h, "MoE layer"): */
  int64_t E;        /* routed experts */
  int64_t E_l;      /* routed experts per EP rank: E / ep */
  int64_t k;        /* experts per token */
  int64_t N_moe;    /* tokens entering a MoE layer on this GPU: T_sp */
  int64_t R_moe;    /* routed token copies this GPU's experts take: N_moe * k * etp x the
                       load factor, rounded up to a multiple of E_l */
  int64_t t_e;      /* tokens per local expert: R_moe / E_l */
  double load;      /* load factor: moe_imbalance, capped by capacity_factor when set */
  int64_t fe_t;     /* one expert's inner width per ETP rank: expert_ffn_hidden / etp */
  int64_t fe1_t;    /* its fc1 output width (x2 gated) */
  int64_t fs_t;     /* the shared experts' inner width per TP rank: S * expert_ffn_hidden/tp */
  int64_t fs1_t;    /* its fc1 output width (x2 gated) */
  /* Multi-head latent attention (0s without; sc_model.kv_lora_rank): the latent ranks, the
   * per-head widths (dqk = nope + rope), and the up projections' widths per TP rank */
  int mla;
  int64_t ql, kl, dr, dn, dv, dqk;
  int64_t qup_t;    /* a_t * dqk */
  int64_t kvup_t;   /* a_t * (dn + dv) */
} sc__dims;

void sc__dims_fill(const sc_model *m, const sc_parallel *p, sc__dims *d);

/* Parameters one GPU holds: per transformer layer, for the embedding chunk (word +
 * learned position tables), for the output chunk (final norm + output projection unless it
 * is the same tensor as the input embedding on this GPU). */
int64_t sc__layer_params(const sc_model *m, const sc__dims *d);
int64_t sc__embedding_params(const sc_model *m, const sc__dims *d);
int64_t sc__output_params(const sc_model *m, const sc_parallel *p, const sc__dims *d);

/* A MoE layer's parameters on one GPU: *dense (attention, norms, router, shared experts:
 * reduced over the DP x CP group) and *expert (its E_l routed experts / etp: reduced over
 * the expert data parallel group). 0 and 0 for a dense model. */
void sc__moe_layer_params(const sc_model *m, const sc__dims *d, int64_t *dense,
                          int64_t *expert);

#endif
