/*
 * The transformer decomposition: one pipeline stage's chunk becomes lists of operators and
 * collectives per micro-batch and per iteration (see stepcast/workload.h for the contract).
 *
 * Reference: Megatron-LM's GPT layer (megatron/core/transformer/transformer_layer.py,
 * attention.py, mlp.py; tensor_parallel/layers.py) —
 *
 *   x ─ norm1 ─[SP: all-gather]─ QKV (column-parallel, bias in the GEMM epilogue)
 *     ─ rotary (RoPE models) ─ core attention ─ proj (row-parallel)
 *     ─[TP: all-reduce | SP: reduce-scatter]─ bias+dropout+residual add
 *     ─ norm2 ─[SP: all-gather]─ fc1 (column-parallel; SwiGLU: gate and up fused, 2 f/tp wide)
 *     ─ bias+GeLU | SwiGLU ─ fc2 (row-parallel) ─[all-reduce | reduce-scatter]─ bias+dropout+add
 *
 * Core attention is one flash kernel (p->flash_attention) or the unfused path
 * QK^T (batched GEMM) ─ scale+mask+softmax ─ dropout ─ ×V (batched GEMM).
 * Backward: each GEMM splits into dgrad (activation gradient) and wgrad (weight gradient);
 * column-parallel layers all-reduce (SP: reduce-scatter) their input gradient; with SP the
 * output gradient of a row-parallel layer is all-gathered first and the saved, sequence-
 * sharded input of a column-parallel layer is re-gathered for its wgrad (Megatron does both).
 * Bias gradients (column sums) are folded into the wgrad GEMMs and not listed.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/checked.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"
#include "workload/workload_int.h"

/* ------------------------------------------------------------------------- */
/* Small helpers                                                             */

double sc__dtype_bytes(sc_dtype d) {
  switch (d) {
  case SC_DTYPE_FP32: return 4.0;
  case SC_DTYPE_TF32: return 4.0;
  case SC_DTYPE_BF16: return 2.0;
  case SC_DTYPE_FP16: return 2.0;
  case SC_DTYPE_FP8: return 1.0;
  case SC_DTYPE_INT8: return 1.0;
  default: return 0.0;
  }
}

const char *sc_phase_name(sc_phase ph) {
  switch (ph) {
  case SC_PHASE_FWD: return "fwd";
  case SC_PHASE_BWD: return "bwd";
  case SC_PHASE_RECOMPUTE: return "recompute";
  case SC_PHASE_OPTIMIZER: return "optimizer";
  default: return "?";
  }
}

int64_t sc_workload_padded_vocab(const sc_model *m, const sc_parallel *p) {
  /* Megatron-LM _vocab_size_with_padding: multiple = make_vocab_size_divisible_by (128
   * unless p says otherwise) * tensor_model_parallel_size; the vocabulary is rounded up to it. */
  int64_t div = p->vocab_divisible_by ? (int64_t)p->vocab_divisible_by : 128;
  int64_t mult = div * (int64_t)(p->tp ? p->tp : 1);
  return (m->vocab + mult - 1) / mult * mult;
}

void sc__dims_fill(const sc_model *m, const sc_parallel *p, sc__dims *d) {
  int64_t tp = p->tp;
  d->b = p->micro_batch;
  d->s = p->seq_len;
  d->s_c = d->s / p->cp;
  d->T = d->b * d->s_c;
  d->sp = p->sequence_parallel && tp > 1;
  d->T_sp = d->sp ? d->T / tp : d->T;
  d->h = m->hidden;
  d->d = m->head_dim;
  d->a_t = m->heads / tp;
  d->g_t = m->kv_heads / tp;
  d->q_t = d->a_t * d->d;
  d->qkv_t = (d->a_t + 2 * d->g_t) * d->d;
  d->f_t = m->ffn_hidden / tp;
  d->f1_t = sc_activation_gated(m->activation) ? 2 * d->f_t : d->f_t;
  d->vocab_padded = sc_workload_padded_vocab(m, p);
  d->V_t = d->vocab_padded / tp;
  d->act = (p->dtype == SC_DTYPE_FP8) ? SC_DTYPE_BF16 : p->dtype;
  d->e = sc__dtype_bytes(d->act);
  d->mla = m->kv_lora_rank > 0;
  d->ql = d->kl = d->dr = d->dn = d->dv = d->dqk = d->qup_t = d->kvup_t = 0;
  if (d->mla) {
    /* MLA: head_dim is (dqk + dv)/2 (the attention core), kv_heads = heads; the output
     * projection reads a_t x dv and the "QKV" width is the up projections' outputs */
    d->ql = m->q_lora_rank;
    d->kl = m->kv_lora_rank;
    d->dr = m->qk_rope_head_dim;
    d->dn = m->qk_nope_head_dim;
    d->dv = m->v_head_dim;
    d->dqk = d->dn + d->dr;
    d->qup_t = d->a_t * d->dqk;
    d->kvup_t = d->a_t * (d->dn + d->dv);
    d->q_t = d->a_t * d->dv;
    d->qkv_t = d->qup_t + d->kvup_t;
  }
  d->E = d->E_l = d->k = d->N_moe = d->R_moe = d->t_e = 0;
  d->fe_t = d->fe1_t = d->fs_t = d->fs1_t = 0;
  d->load = 0.0;
  if (m->num_experts > 0) {
    int64_t ep = sc_parallel_ep(p), etp = sc_parallel_etp(p);
    int gated = sc_activation_gated(m->activation);
    d->E = m->num_experts;
    d->E_l = m->num_experts / ep;
    d->k = m->top_k;
    d->N_moe = d->T_sp;
    d->load = m->moe_imbalance > 0.0 ? m->moe_imbalance : 1.0;
    if (m->capacity_factor > 0.0 && m->capacity_factor < d->load) d->load = m->capacity_factor;
    /* the E_l experts' tokens, rounded up to whole tokens per expert */
    double r = ceil((double)d->N_moe * (double)d->k * (double)etp * d->load / (double)d->E_l);
    d->t_e = (int64_t)r;
    d->R_moe = d->t_e * d->E_l;
    d->fe_t = m->expert_ffn_hidden / etp;
    d->fe1_t = gated ? 2 * d->fe_t : d->fe_t;
    d->fs_t = m->shared_experts * m->expert_ffn_hidden / tp;
    d->fs1_t = gated ? 2 * d->fs_t : d->fs_t;
  }
}

int64_t sc__layer_params(const sc_model *m, const sc__dims *d) {
  /* Norm weights (and LayerNorm biases) are replicated over TP; column-parallel biases are
   * split, row-parallel biases are whole on every rank. */
  int64_t norm = m->norm == SC_NORM_LAYERNORM ? 2 * d->h : d->h;
  int64_t n = 2 * norm;
  if (d->mla) {
    /* the down projections and latent norms replicated over TP, the up projections split */
    int64_t nw = m->norm == SC_NORM_LAYERNORM ? 2 : 1;
    n += (d->ql > 0 ? d->h * d->ql + nw * d->ql + d->ql * d->qup_t : d->h * d->qup_t) +
         d->h * (d->kl + d->dr) + nw * d->kl + d->kl * d->kvup_t;
    return n + d->q_t * d->h + d->h * d->f1_t + d->f_t * d->h; /* no biases with MLA */
  }
  n += d->h * d->qkv_t + d->q_t * d->h + d->h * d->f1_t + d->f_t * d->h;
  if (m->linear_bias) n += d->qkv_t + d->h + d->f1_t + d->h;
  return n;
}

void sc__moe_layer_params(const sc_model *m, const sc__dims *d, int64_t *dense,
                          int64_t *expert) {
  *dense = *expert = 0;
  if (d->E <= 0) return;
  /* the dense layer without its MLP, plus the router (h x E, replicated over TP) and the
   * shared experts (TP-split like the dense MLP); the routed experts (ETP-split) */
  int64_t mlp = d->h * d->f1_t + d->f_t * d->h + (m->linear_bias ? d->f1_t + d->h : 0);
  int64_t shared = d->fs_t > 0 ? d->h * d->fs1_t + d->fs_t * d->h +
                                     (m->linear_bias ? d->fs1_t + d->h : 0)
                               : 0;
  *dense = sc__layer_params(m, d) - mlp + d->h * d->E + shared;
  *expert = d->E_l * (d->h * d->fe1_t + d->fe_t * d->h + (m->linear_bias ? d->fe1_t + d->h : 0));
}

int64_t sc__embedding_params(const sc_model *m, const sc__dims *d) {
  int64_t n = d->V_t * d->h;
  if (m->position == SC_POS_LEARNED) n += m->max_seq * d->h; /* replicated over TP */
  return n;
}

int64_t sc__output_params(const sc_model *m, const sc_parallel *p, const sc__dims *d) {
  int64_t norm = m->norm == SC_NORM_LAYERNORM ? 2 * d->h : d->h;
  /* Tied embeddings: with pp == 1 the output layer uses the input embedding itself; with
   * pp > 1 the last stage holds its own copy (kept equal by an all-reduce of the gradient),
   * as Megatron-LM does. */
  int with_table = !m->tied_embeddings || p->pp > 1;
  return norm + (with_table ? d->V_t * d->h : 0);
}

/* ------------------------------------------------------------------------- */
/* Validation                                                                */

#define FAIL(...) return sc_error_set(err, SC_ECONFIG, __VA_ARGS__)

/* *out = the product of vals[0..n-1] (named names[]), or SC_ERANGE naming them and their
 * values when it does not fit a signed 64-bit integer. */
static int prod(int64_t *out, sc_error *err, int n, const char *const *names,
                const int64_t *vals) {
  char what[160], nums[200];
  size_t a = 0, b = 0;
  if (!sc__prod_i64(vals, n, out)) return SC_OK;
  what[0] = nums[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (a < sizeof what)
      a += (size_t)snprintf(what + a, sizeof what - a, "%s%s", i ? " x " : "", names[i]);
    if (b < sizeof nums)
      b += (size_t)snprintf(nums + b, sizeof nums - b, "%s%lld", i ? " x " : "",
                            (long long)vals[i]);
  }
  return sc_error_set(err, SC_ERANGE, "%s: %s is more than 2^63 (too large for the "
                      "operator sizes)", what, nums);
}

/* Every product of user-given sizes the decomposition and the memory model form (operator
 * shapes, tensor elements, parameter counts), computed with overflow checks: past this,
 * sc__dims_fill and the builders may multiply in int64_t freely. */
static int check_products(const sc_model *m, const sc_parallel *p, sc_error *err) {
  const int64_t b = p->micro_batch, s = p->seq_len, s_c = (int64_t)p->seq_len / p->cp;
  const int64_t tp = p->tp, h = m->hidden, hd = m->head_dim;
  const int64_t a_t = m->heads / tp, g_t = m->kv_heads / tp, f_t = m->ffn_hidden / tp;
  const int64_t f1_t = sc_activation_gated(m->activation) ? 2 * f_t : f_t;
  int64_t T = 0, x = 0, qkv_w = 0, q_w = 0, V_t = 0, layer = 0, total = 0;
  const char *const nm_T[] = {"micro_batch", "seq_len/cp"};
  int rc = prod(&T, err, 2, nm_T, (const int64_t[]){b, s_c});
  if (rc != SC_OK) return rc;
  if (m->vocab > INT64_MAX - 128 * tp)
    FAIL("model '%s': vocab (%lld) is too large", m->name, (long long)m->vocab);
  V_t = sc_workload_padded_vocab(m, p) / tp;
  {
    const char *const n1[] = {"heads/tp + 2 kv_heads/tp", "head_dim"};
    if ((rc = prod(&qkv_w, err, 2, n1, (const int64_t[]){a_t + 2 * g_t, hd})) != SC_OK) return rc;
  }
  q_w = a_t * hd; /* <= qkv_w */
  {
    /* activations: 2 x tokens x the widest operand (the fp8 cast pass moves 2 bytes each) */
    const char *const n2[] = {"micro_batch", "seq_len/cp", "hidden", "2"};
    const char *const n3[] = {"micro_batch", "seq_len/cp", "ffn_hidden/tp (x2 for swiglu)", "2"};
    const char *const n4[] = {"micro_batch", "seq_len/cp", "qkv width per tp rank", "2"};
    const char *const n5[] = {"micro_batch", "seq_len/cp", "padded vocab/tp"};
    const int64_t v2[] = {b, s_c, h, 2}, v3[] = {b, s_c, f1_t, 2}, v4[] = {b, s_c, qkv_w, 2};
    /* the plain product first, so that the message names the sizes alone where it can */
    for (int k = 3; k <= 4; k++) {
      if ((rc = prod(&x, err, k, n2, v2)) != SC_OK) return rc;
      if ((rc = prod(&x, err, k, n3, v3)) != SC_OK) return rc;
      if ((rc = prod(&x, err, k, n4, v4)) != SC_OK) return rc;
    }
    if ((rc = prod(&x, err, 3, n5, (const int64_t[]){b, s_c, V_t})) != SC_OK) return rc;
  }
  if (m->num_experts > 0) {
    /* MoE: the routed token copies times the widest expert operand, the router's logits,
     * a stage's expert parameters (doubles: the load factor is not an integer) */
    double gated = sc_activation_gated(m->activation) ? 2.0 : 1.0;
    double R = (double)T * (double)m->top_k * (double)sc_parallel_etp(p) *
               (m->moe_imbalance > 1.0 ? m->moe_imbalance : 1.0);
    double wmax = (double)h > gated * (double)m->expert_ffn_hidden ? (double)h
                                                                  : gated * (double)m->expert_ffn_hidden;
    double lim = 2305843009213693952.0; /* 2^61 */
    if (R * wmax * 2.0 >= lim || (double)T * (double)m->num_experts * 4.0 >= lim ||
        (double)m->layers * (double)m->num_experts * 3.0 * (double)h *
                (double)m->expert_ffn_hidden * 4.0 >= lim)
      return sc_error_set(err, SC_ERANGE, "num_experts: model '%s' with micro_batch %lld x "
                          "seq_len/cp %lld routes too many tokens or holds too many expert "
                          "parameters for the operator sizes", m->name, (long long)b,
                          (long long)s_c);
  }
  if (!p->flash_attention) {
    /* the unfused path materialises the score matrix */
    const char *const n6[] = {"micro_batch", "heads/tp", "seq_len/cp", "seq_len"};
    if ((rc = prod(&x, err, 4, n6, (const int64_t[]){b, a_t, s_c, s})) != SC_OK) return rc;
  }
  {
    /* parameters: one layer (the four GEMM weights and the small vectors), the layers,
     * the tables */
    const char *const n7[] = {"hidden", "qkv width + attention width + 2 ffn_hidden widths"};
    const char *const n8[] = {"layers", "parameters per layer"};
    const char *const n9[] = {"padded vocab/tp", "hidden"};
    const char *const n10[] = {"max_seq", "hidden"};
    int64_t w = qkv_w + q_w + f1_t + f_t, emb = 0, pos = 0;
    if ((rc = prod(&layer, err, 2, n7, (const int64_t[]){h, w})) != SC_OK) return rc;
    if (sc__add_i64(layer, 4 * h + w, &layer))
      FAIL("hidden: model '%s' has too many parameters per layer", m->name);
    if ((rc = prod(&total, err, 2, n8, (const int64_t[]){m->layers, layer})) != SC_OK) return rc;
    if ((rc = prod(&emb, err, 2, n9, (const int64_t[]){V_t, h})) != SC_OK) return rc;
    if (m->position == SC_POS_LEARNED &&
        (rc = prod(&pos, err, 2, n10, (const int64_t[]){m->max_seq, h})) != SC_OK)
      return rc;
    /* embedding + positions + output table + norms, and 4 bytes each for the gradients */
    if (sc__add_i64(total, emb, &total) || sc__add_i64(total, emb, &total) ||
        sc__add_i64(total, pos, &total) || sc__add_i64(total, 2 * h, &total) ||
        sc__mul_i64(total, 4, &x))
      FAIL("model '%s': the parameter count (layers x parameters per layer + the embedding "
           "tables) is more than 2^61", m->name);
  }
  return SC_OK;
}

int sc_workload_validate(const sc_model *m, const sc_parallel *p, sc_error *err) {
  if (m == NULL || p == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_workload_validate: model or parallel is NULL");
  }
  if (m->layers <= 0) FAIL("model '%s': layers must be > 0 (%lld)", m->name, (long long)m->layers);
  if (m->hidden <= 0) FAIL("model '%s': hidden must be > 0 (%lld)", m->name, (long long)m->hidden);
  if (m->heads <= 0) FAIL("model '%s': heads must be > 0 (%lld)", m->name, (long long)m->heads);
  if (m->kv_heads <= 0 || m->heads % m->kv_heads != 0) {
    FAIL("model '%s': kv_heads (%lld) must be > 0 and divide heads (%lld)", m->name,
         (long long)m->kv_heads, (long long)m->heads);
  }
  if (m->head_dim <= 0) FAIL("model '%s': head_dim must be > 0 (%lld)", m->name, (long long)m->head_dim);
  if (m->ffn_hidden <= 0) FAIL("model '%s': ffn_hidden must be > 0 (%lld)", m->name, (long long)m->ffn_hidden);
  if (m->vocab <= 0) FAIL("model '%s': vocab must be > 0 (%lld)", m->name, (long long)m->vocab);
  if (m->position == SC_POS_LEARNED && m->max_seq <= 0) {
    FAIL("model '%s': max_seq must be > 0 with learned positions", m->name);
  }

  {
    /* the bounds of common/checked.h: nothing below can wrap a 32-bit value */
    const struct { const char *name; uint32_t v, max; } lim[] = {
        {"tp", p->tp, SC_MAX_GPUS},
        {"pp", p->pp, SC_MAX_GPUS},
        {"dp", p->dp, SC_MAX_GPUS},
        {"cp", p->cp, SC_MAX_GPUS},
        {"micro_batch", p->micro_batch, SC_MAX_MICRO_BATCH},
        {"global_batch", p->global_batch, SC_MAX_GLOBAL_BATCH},
        {"seq_len", p->seq_len, SC_MAX_SEQ_LEN},
        {"virtual_stages", p->virtual_stages, SC_MAX_VIRTUAL_STAGES}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
      if (lim[i].v < 1) FAIL("%s: must be >= 1 (%u)", lim[i].name, lim[i].v);
      if (lim[i].v > lim[i].max)
        return sc_error_set(err, SC_ERANGE, "%s: %u is out of range (at most %u)", lim[i].name,
                            lim[i].v, lim[i].max);
    }
  }
  {
    uint64_t g = (uint64_t)p->tp * p->pp; /* each <= 2^24: the pairs cannot overflow */
    uint64_t h = (uint64_t)p->dp * p->cp;
    if (g > SC_MAX_GPUS || h > SC_MAX_GPUS || g * h > SC_MAX_GPUS)
      return sc_error_set(err, SC_ERANGE, "gpus: tp*pp*dp*cp (%u x %u x %u x %u) is more than "
                          "%u GPUs", p->tp, p->pp, p->dp, p->cp, SC_MAX_GPUS);
  }
  if (p->zero_stage > 3) FAIL("zero_stage: %u is not a ZeRO stage (0, 1, 2 or 3)", p->zero_stage);
  if (p->shard_size != 0) {
    uint32_t dpc = p->dp * p->cp;
    if (sc_parallel_zero(p) == 0)
      FAIL("shard_size: %u needs sharded data parallelism (zero_stage 1-3 or the distributed "
           "optimizer)", p->shard_size);
    if (p->shard_size > dpc || dpc % p->shard_size != 0)
      FAIL("shard_size: %u must divide dp*cp (%u)", p->shard_size, dpc);
  }
  if (sc__dtype_bytes(p->dtype) == 0.0) FAIL("dtype: unknown value %d", (int)p->dtype);
  if (p->grad_reduce_dtype != SC_DTYPE_FP32) {
    if (p->grad_reduce_dtype != SC_DTYPE_BF16 && p->grad_reduce_dtype != SC_DTYPE_FP16)
      FAIL("grad_reduce_dtype: %s is not fp32, bf16 or fp16", sc_dtype_name(p->grad_reduce_dtype));
    if (sc__dtype_bytes(p->dtype) >= 4.0)
      FAIL("grad_reduce_dtype: %s needs mixed precision (dtype %s keeps fp32 gradients)",
           sc_dtype_name(p->grad_reduce_dtype), sc_dtype_name(p->dtype));
  }
  if ((unsigned)p->recompute > SC_RECOMPUTE_FULL) FAIL("recompute: unknown value %d", (int)p->recompute);
  if ((unsigned)p->schedule > SC_SCHED_DUALPIPE) FAIL("schedule: unknown value %d", (int)p->schedule);

  if (m->heads % p->tp != 0) FAIL("tp: %u must divide heads (%lld)", p->tp, (long long)m->heads);
  /* Megatron: num_query_groups % tensor_model_parallel_size == 0 (each rank whole KV heads). */
  if (m->kv_heads % p->tp != 0) {
    FAIL("tp: %u must divide kv_heads (%lld): each tensor-parallel rank holds whole key/value "
         "heads", p->tp, (long long)m->kv_heads);
  }
  if (m->ffn_hidden % p->tp != 0) {
    FAIL("tp: %u must divide ffn_hidden (%lld)", p->tp, (long long)m->ffn_hidden);
  }
  {
    /* Mixture of experts: Megatron-Core's rules (arguments.py, parallel_state.py's
     * expert groups over the same GPUs as the attention layers' TP x CP x DP) */
    uint32_t ep = sc_parallel_ep(p), etp = sc_parallel_etp(p);
    uint64_t fold = (uint64_t)p->tp * p->cp * p->dp;
    if (ep > SC_MAX_GPUS) return sc_error_set(err, SC_ERANGE, "ep: %u is out of range (at most %u)", ep, SC_MAX_GPUS);
    if (etp > SC_MAX_GPUS) return sc_error_set(err, SC_ERANGE, "etp: %u is out of range (at most %u)", etp, SC_MAX_GPUS);
    if (m->num_experts <= 0) {
      if (ep > 1) FAIL("ep: %u needs a mixture-of-experts model (model '%s' has no num_experts)", ep, m->name);
      if (etp > 1) FAIL("etp: %u needs a mixture-of-experts model (model '%s' has no num_experts)", etp, m->name);
    } else {
      if (m->num_experts % ep != 0)
        FAIL("ep: %u must divide num_experts (%lld)", ep, (long long)m->num_experts);
      if (fold % ((uint64_t)ep * etp) != 0)
        FAIL("ep: ep*etp (%u x %u) must divide tp*cp*dp (%llu), the GPUs of a stage that the "
             "MoE layers fold into ETP x EP x EDP", ep, etp, (unsigned long long)fold);
      if (m->expert_ffn_hidden % etp != 0)
        FAIL("etp: %u must divide expert_ffn_hidden (%lld)", etp, (long long)m->expert_ffn_hidden);
      if ((m->shared_experts * m->expert_ffn_hidden) % p->tp != 0)
        FAIL("tp: %u must divide the shared experts' width (%lld x %lld)", p->tp,
             (long long)m->shared_experts, (long long)m->expert_ffn_hidden);
      if (p->tp > 1 && !p->sequence_parallel)
        FAIL("sequence_parallel: a mixture of experts with tp %u > 1 needs sequence parallelism "
             "(Megatron-Core's rule)", p->tp);
      if (p->zero_stage >= 2 || p->shard_size != 0)
        FAIL("%s: sharding beyond the distributed optimizer (ZeRO-1) is not modelled for a "
             "mixture of experts", p->zero_stage >= 2 ? "zero_stage" : "shard_size");
    }
  }
  if (p->cp > 1 && p->seq_len % (2 * (uint64_t)p->cp) != 0) {
    FAIL("cp: seq_len (%u) must be divisible by 2*cp (%llu) for load-balanced causal chunks",
         p->seq_len, 2 * (unsigned long long)p->cp);
  }
  if (p->seq_len % p->cp != 0) FAIL("cp: %u must divide seq_len (%u)", p->cp, p->seq_len);
  if (p->sequence_parallel && p->tp > 1 && (p->seq_len / p->cp) % p->tp != 0) {
    FAIL("sequence_parallel: seq_len/cp (%u) must be divisible by tp (%u)", p->seq_len / p->cp,
         p->tp);
  }
  uint64_t per = (uint64_t)p->micro_batch * p->dp;
  if (p->global_batch % per != 0) {
    FAIL("global_batch: %u must be divisible by micro_batch*dp (%llu)", p->global_batch,
         (unsigned long long)per);
  }
  uint32_t mb = sc_parallel_microbatches(p);
  uint32_t v = p->virtual_stages;
  if (v > 1) {
    if (p->schedule != SC_SCHED_INTERLEAVED) {
      FAIL("virtual_stages: %u > 1 needs the interleaved schedule", v);
    }
    if (p->pp < 2) FAIL("virtual_stages: %u > 1 needs pp > 1 (pp = %u)", v, p->pp);
    if (mb % p->pp != 0) {
      FAIL("global_batch: the interleaved schedule needs micro-batches (%u) divisible by pp (%u)",
           mb, p->pp);
    }
  } else if (p->schedule == SC_SCHED_INTERLEAVED) {
    FAIL("schedule: interleaved needs virtual_stages > 1");
  }
  if (p->schedule == SC_SCHED_DUALPIPE) {
    /* DeepSeek's DualPipe.step asserts the same three */
    if (p->pp < 2 || p->pp % 2 != 0)
      FAIL("pp: dualpipe needs an even pp (pp = %u): rank r holds stages r and pp-1-r", p->pp);
    if (mb % 2 != 0)
      FAIL("global_batch: dualpipe needs an even number of micro-batches (%u): half enter at "
           "each end of the pipeline", mb);
    if (mb < 2 * p->pp)
      FAIL("global_batch: dualpipe needs at least 2*pp (%u) micro-batches, has %u",
           2 * p->pp, mb);
  }
  if ((uint64_t)p->pp * v > (uint64_t)m->layers) {
    FAIL("pp: pp*virtual_stages (%llu) exceeds layers (%lld)", (unsigned long long)p->pp * v,
         (long long)m->layers);
  }
  if (p->stage_layers[0] != 0) {
    if (p->pp > 256) FAIL("stage_layers: at most 256 stages can be given (pp = %u)", p->pp);
    int64_t sum = 0;
    for (uint32_t i = 0; i < p->pp; i++) {
      if (p->stage_layers[i] == 0) FAIL("stage_layers[%u]: must be > 0", i);
      if (p->stage_layers[i] % v != 0) {
        FAIL("stage_layers[%u]: %u must be divisible by virtual_stages (%u)", i,
             p->stage_layers[i], v);
      }
      sum += p->stage_layers[i];
    }
    if (sum != m->layers) {
      FAIL("stage_layers: sum %lld != layers (%lld)", (long long)sum, (long long)m->layers);
    }
  } else {
    if (m->layers % p->pp != 0) {
      FAIL("pp: %u must divide layers (%lld) unless stage_layers gives the split", p->pp,
           (long long)m->layers);
    }
    if ((m->layers / p->pp) % v != 0) {
      FAIL("virtual_stages: %u must divide layers per stage (%lld)", v,
           (long long)(m->layers / p->pp));
    }
  }
  return check_products(m, p, err);
}

int sc_workload_chunk_layers(const sc_model *m, const sc_parallel *p, uint32_t stage,
                             uint32_t chunk, uint32_t *first, uint32_t *count, sc_error *err) {
  int rc = sc_workload_validate(m, p, err);
  if (rc != SC_OK) return rc;
  if (stage >= p->pp) {
    return sc_error_set(err, SC_EINVAL, "stage: %u out of range (pp = %u)", stage, p->pp);
  }
  if (chunk >= p->virtual_stages) {
    return sc_error_set(err, SC_EINVAL, "chunk: %u out of range (virtual_stages = %u)", chunk,
                        p->virtual_stages);
  }
  uint32_t v = p->virtual_stages;
  uint32_t f, c;
  if (p->stage_layers[0] != 0) {
    /* Model chunk k = chunk*pp + stage; chunk j of stage i holds stage_layers[i]/v layers. */
    uint32_t before = 0;
    for (uint32_t i = 0; i < stage; i++) before += p->stage_layers[i] / v;
    f = chunk * (uint32_t)(m->layers / v) + before;
    c = p->stage_layers[stage] / v;
  } else {
    uint32_t per = (uint32_t)(m->layers / ((int64_t)p->pp * v));
    f = (chunk * p->pp + stage) * per;
    c = per;
  }
  if (first) *first = f;
  if (count) *count = c;
  return SC_OK;
}

/* ------------------------------------------------------------------------- */
/* Builders                                                                  */

typedef struct bld {
  const sc_model *m;
  const sc_parallel *p;
  sc__dims d;
  sc_stage_work *w;
  int overflow;
  uint32_t Ld, Lm; /* the chunk's dense and MoE layers (Ld + Lm = its layers) */
} bld;

static void copy_label(char dst[32], const char *src) {
  size_t n = strlen(src);
  if (n > 31) n = 31;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Append one operator; model FLOPs are accumulated into w->flops/gemm_flops. Returns it (to
 * set desc.flags on), or NULL when none was appended (rep 0, or the list full). */
static sc_work_op *op(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep,
                      sc_work_where where, const char *family, uint32_t variant,
                      const char *label, const int64_t *dims, uint32_t nd) {
  if (rep == 0) return NULL;
  if (l->nops >= SC_WORK_MAX_OPS) {
    B->overflow = 1;
    return NULL;
  }
  sc_work_op *o = &l->ops[l->nops++];
  o->desc.family = family;
  o->desc.variant = variant;
  o->desc.dtype = B->d.act;
  o->desc.ndims = nd;
  for (uint32_t i = 0; i < SC_OP_MAX_DIMS; i++) o->desc.dims[i] = i < nd ? dims[i] : 0;
  o->desc.flags = 0;
  copy_label(o->label, label);
  o->phase = ph;
  o->repeat = rep;
  o->where = where;
  if (ph > SC_PHASE_RECOMPUTE) return o;
  if (strcmp(family, SC_OP_GEMM) == 0) {
    double f = 2.0 * (double)dims[0] * (double)dims[1] * (double)dims[2] * (double)dims[3] * rep;
    B->w->flops[ph] += f;
    B->w->gemm_flops[ph] += f;
  } else if (strcmp(family, SC_OP_ATTENTION) == 0) {
    /* Nominal: QK^T and PV, 2 * 2 * b * heads * s_q * s_k * d; backward twice that. */
    double f = 4.0 * (double)dims[0] * (double)dims[1] * (double)dims[3] * (double)dims[4] *
               (double)dims[5] * rep;
    if (variant == SC_ATTN_FLASH_BWD) f *= 2.0;
    B->w->flops[ph] += f;
  }
  return o;
}

/* desc.flags of an operator op() appended (SC_OP_*; nothing when it appended none). */
static void set_flags(sc_work_op *o, uint32_t flags) {
  if (o != NULL) o->desc.flags = flags;
}

#define DIMS(...) (const int64_t[]){__VA_ARGS__}, (uint32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* A linear layer's GEMM (QKV, attention projection, MLP fc1/fc2, forward, dgrad and wgrad):
 * the one place the job's compute dtype applies as given (fp8 included).
 * fp8 (Transformer Engine's recipe): the GEMM's first operand A[m,k] (the activation of a
 * forward GEMM, the output gradient of a dgrad) is quantised from bf16 before it, and its
 * transpose is written too for the wgrad, which needs no cast of its own: a memory-bound
 * pass reading 2 bytes and writing 2 per element, modelled as a memcpy of 2*m*k bytes
 * (memcpy moves twice its size) labelled "<label>.fp8_cast". cast = 0 where there is no such
 * pass: wgrads, and the QKV and fc1 forward GEMMs, whose input comes out of the fused
 * norm-and-cast kernel (LayerNormLinear) in fp8 already. Weight casts (once per iteration,
 * at the first micro-batch) are not modelled. */
static void linear(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                   const char *label, int cast, const int64_t *dims, uint32_t nd) {
  /* a weight gradient dW = dY^T X reads dY transposed (stepcast/ops.h, SC_GEMM_TN) */
  const size_t ll = strlen(label);
  const uint32_t layout = ll > 6 && strcmp(label + ll - 6, ".wgrad") == 0 ? SC_GEMM_TN
                                                                         : SC_GEMM_PLAIN;
  if (cast && B->p->dtype == SC_DTYPE_FP8) {
    char cl[32];
    snprintf(cl, sizeof cl, "%s.fp8_cast", label);
    op(B, l, ph, rep, where, SC_OP_MEMCPY, SC_MEMCPY_COPY, cl,
       DIMS(2 * dims[0] * dims[1] * dims[3]));
  }
  uint32_t before = l->nops;
  op(B, l, ph, rep, where, SC_OP_GEMM, layout, label, dims, nd);
  if (l->nops > before) l->ops[before].desc.dtype = B->p->dtype;
}

static void coll(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                 sc_coll_kind kind, sc_group_kind group, uint32_t nranks, double bytes,
                 sc_dtype dt, int overlappable, const char *label) {
  if (rep == 0 || nranks < 2) return;
  if (l->ncolls >= SC_WORK_MAX_COLLS) {
    B->overflow = 1;
    return;
  }
  sc_work_coll *c = &l->colls[l->ncolls++];
  c->kind = kind;
  c->group = group;
  c->nranks = nranks;
  c->bytes = bytes;
  c->dtype = dt;
  c->phase = ph;
  c->repeat = rep;
  c->where = where;
  c->overlappable = overlappable ? 1 : 0;
  c->subgroup = SC_DP_WHOLE;
  c->ub_method = SC_UB_NONE;
  c->ub_op = -1;
  copy_label(c->label, label);
}

/* A data-parallel collective over part of the DP x CP group (sc_dp_subgroup); nothing when
 * that part is one rank. */
static void dp_coll(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                    sc_coll_kind kind, sc_dp_subgroup sub, double bytes, sc_dtype dt,
                    int overlappable, const char *label) {
  uint32_t dpc = B->p->dp * B->p->cp, S = sc_parallel_shard_ranks(B->p);
  uint32_t n = sub == SC_DP_SHARD ? S : sub == SC_DP_REPLICA ? dpc / S : dpc;
  uint32_t before = l->ncolls;
  coll(B, l, ph, rep, where, kind, SC_GROUP_DP, n, bytes, dt, overlappable, label);
  /* the shard that is the whole group is the whole group (its placement too) */
  if (l->ncolls > before) l->colls[before].subgroup = n == dpc ? SC_DP_WHOLE : (uint32_t)sub;
}

/* ZeRO-2 and ZeRO-3 per micro-batch: the gathers of a chunk's parameters before its forward
 * (ZeRO-3) and backward (ZeRO-3), the reduce-scatters of its gradients (ZeRO-2 and 3), one
 * per layer and one for the embedding's or the output layer's parameters. */
static void shard_micro(bld *B, sc_work_list *l, sc_phase ph, uint32_t L, int emb, int out) {
  const sc_model *m = B->m;
  const sc_parallel *p = B->p;
  const sc__dims *d = &B->d;
  uint32_t z = sc_parallel_zero(p);
  if (z < 2) return;
  int64_t lp = sc__layer_params(m, d), stage_p = 0;
  if (emb) stage_p += sc__embedding_params(m, d);
  if (out) stage_p += sc__output_params(m, p, d);
  int gather = z >= 3 && (ph == SC_PHASE_FWD || ph == SC_PHASE_BWD);
  int reduce = ph == SC_PHASE_BWD;
  if (gather) {
    dp_coll(B, l, ph, L, SC_WHERE_LAYER, SC_COLL_ALLGATHER, SC_DP_SHARD, (double)lp * d->e,
            d->act, p->overlap_param_gather, "zero.param_ag");
    if (stage_p > 0)
      dp_coll(B, l, ph, 1, SC_WHERE_STAGE, SC_COLL_ALLGATHER, SC_DP_SHARD,
              (double)stage_p * d->e, d->act, p->overlap_param_gather, "zero.param_ag_stage");
  }
  if (reduce) {
    double gb = sc_parallel_grad_bytes(p);
    dp_coll(B, l, ph, L, SC_WHERE_LAYER, SC_COLL_REDUCESCATTER, SC_DP_SHARD, (double)lp * gb,
            p->grad_reduce_dtype, p->overlap_grad_reduce, "zero.grad_rs");
    if (stage_p > 0)
      dp_coll(B, l, ph, 1, SC_WHERE_STAGE, SC_COLL_REDUCESCATTER, SC_DP_SHARD,
              (double)stage_p * gb, p->grad_reduce_dtype, p->overlap_grad_reduce,
              "zero.grad_rs_stage");
  }
}

/* A TP collective of the T x h activation (all-reduce, all-gather or reduce-scatter; in all
 * three the nccl-tests size is T*h elements: buffer, gathered output, scattered input). */
static void tp_coll(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                    sc_coll_kind kind, const char *label) {
  const sc__dims *d = &B->d;
  coll(B, l, ph, rep, where, kind, SC_GROUP_TP, B->p->tp, (double)d->T * d->h * d->e,
       B->d.act, B->p->overlap_tp_comm, label);
}

/* After a row-parallel linear (FWD) or a column-parallel dgrad (BWD). */
static void tp_reduce(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                      const char *label_ar, const char *label_rs) {
  if (B->d.sp) tp_coll(B, l, ph, rep, where, SC_COLL_REDUCESCATTER, label_rs);
  else tp_coll(B, l, ph, rep, where, SC_COLL_ALLREDUCE, label_ar);
}

/* Transformer Engine's userbuffers overlap (overlap_tp_comm with sequence parallelism):
 * the TP collective emitted since the list held nc0 of them runs beside the GEMM ops[gemm]
 * by method m. Its methods per GEMM are initialize_ub's defaults (TransformerEngine
 * transformer_engine/pytorch/module/base.py @ 0004dbd0: ring_exchange for qkv_fprop,
 * fc1_fprop, proj_dgrad, fc2_dgrad; pipeline for proj_fprop, fc2_fprop; bulk for
 * qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad). */
static void ub_pair(bld *B, sc_work_list *l, uint32_t nc0, sc_ub_method m, uint32_t gemm) {
  if (!B->p->overlap_tp_comm || !B->d.sp || l->ncolls != nc0 + 1 || gemm >= l->nops) return;
  sc_work_coll *c = &l->colls[nc0];
  if (c->group != SC_GROUP_TP || strcmp(l->ops[gemm].desc.family, SC_OP_GEMM) != 0) return;
  c->ub_method = (uint32_t)m;
  c->ub_op = (int32_t)gemm;
}

/* Before a column-parallel linear (FWD), a row-parallel dgrad (BWD), or a wgrad that needs
 * the whole sequence: only with sequence parallelism. */
static void sp_gather(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_work_where where,
                      const char *label) {
  if (B->d.sp) tp_coll(B, l, ph, rep, where, SC_COLL_ALLGATHER, label);
}

/* K and V of the chunk's local KV heads over the whole sequence, per CP rank. */
static double cp_kv_bytes(const bld *B) {
  const sc__dims *d = &B->d;
  return 2.0 * (double)d->b * (double)d->s * (double)d->g_t * (double)d->d * d->e;
}

static uint32_t norm_variant(const sc_model *m, int bwd) {
  if (m->norm == SC_NORM_RMSNORM) return bwd ? SC_NORM_OP_RMSNORM_BWD : SC_NORM_OP_RMSNORM_FWD;
  return bwd ? SC_NORM_OP_LAYERNORM_BWD : SC_NORM_OP_LAYERNORM_FWD;
}

/* The attention core forward (used by FWD, and by RECOMPUTE for selective and full). */
static void attn_core_fwd(bld *B, sc_work_list *l, sc_phase ph, uint32_t L) {
  const sc__dims *d = &B->d;
  const sc_parallel *p = B->p;
  int64_t ba = d->b * d->a_t;
  if (p->cp > 1) {
    /* Megatron's ring attention passes K/V around the cp ranks in cp-1 P2P steps that
     * overlap the partial attention; modelled as one all-gather of equal volume. */
    coll(B, l, ph, L, SC_WHERE_LAYER, SC_COLL_ALLGATHER, SC_GROUP_CP, p->cp, cp_kv_bytes(B),
         B->d.act, 1, "attn.cp_kv_ag");
  }
  if (p->flash_attention) {
    op(B, l, ph, L, SC_WHERE_LAYER, SC_OP_ATTENTION, SC_ATTN_FLASH_FWD, "attn_core",
       DIMS(d->b, d->a_t, d->g_t, d->s_c, d->s, d->d, 1));
  } else {
    op(B, l, ph, L, SC_WHERE_LAYER, SC_OP_GEMM, SC_GEMM_PLAIN, "attn_qk",
       DIMS(ba, d->s_c, d->s, d->d));
    op(B, l, ph, L, SC_WHERE_LAYER, SC_OP_SOFTMAX, SC_SOFTMAX_FWD, "attn_softmax",
       DIMS(ba * d->s_c, d->s));
    op(B, l, ph, L, SC_WHERE_LAYER, SC_OP_ELEMENTWISE, SC_EW_DROPOUT_FWD, "attn_dropout",
       DIMS(ba * d->s_c * d->s));
    op(B, l, ph, L, SC_WHERE_LAYER, SC_OP_GEMM, SC_GEMM_PLAIN, "attn_av",
       DIMS(ba, d->s_c, d->d, d->s));
  }
}

/* The MLP activation's elementwise kernel (forward, or backward with bwd) and its name. */
static const struct {
  uint32_t fwd, bwd;
  const char *name, *name_bwd;
} act_kernel[SC_ACT_COUNT] = {
    [SC_ACT_GELU] = {SC_EW_GELU_FWD, SC_EW_GELU_BWD, "mlp_gelu", "mlp_gelu.bwd"},
    [SC_ACT_SWIGLU] = {SC_EW_SWIGLU_FWD, SC_EW_SWIGLU_BWD, "mlp_swiglu", "mlp_swiglu.bwd"},
    [SC_ACT_RELU] = {SC_EW_RELU_FWD, SC_EW_RELU_BWD, "mlp_relu", "mlp_relu.bwd"},
    [SC_ACT_SQUARED_RELU] = {SC_EW_SQRELU_FWD, SC_EW_SQRELU_BWD, "mlp_squared_relu",
                             "mlp_squared_relu.bwd"},
    [SC_ACT_GEGLU] = {SC_EW_GEGLU_FWD, SC_EW_GEGLU_BWD, "mlp_geglu", "mlp_geglu.bwd"},
};

/* Multi-head latent attention's projections (DeepSeek-V2/V3; Megatron-Core's
 * MLASelfAttention), forward, repeated L times: the down projections (replicated over TP, on
 * the gathered T tokens) and their latent norms, the up projections (split over TP by
 * heads). Plain GEMMs of the real shapes; the attention core is attn_core_fwd's. */
static void mla_fwd(bld *B, sc_work_list *l, sc_phase ph, uint32_t L) {
  const sc__dims *d = &B->d;
  sc_work_where W = SC_WHERE_LAYER;
  if (d->ql > 0) {
    linear(B, l, ph, L, W, "q_down", 0, DIMS(1, d->T, d->ql, d->h));
    op(B, l, ph, L, W, SC_OP_NORM, norm_variant(B->m, 0), "q_norm", DIMS(d->T, d->ql));
    linear(B, l, ph, L, W, "q_up", 1, DIMS(1, d->T, d->qup_t, d->ql));
  } else {
    linear(B, l, ph, L, W, "q_proj", 0, DIMS(1, d->T, d->qup_t, d->h));
  }
  linear(B, l, ph, L, W, "kv_down", 0, DIMS(1, d->T, d->kl + d->dr, d->h));
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(B->m, 0), "kv_norm", DIMS(d->T, d->kl));
  linear(B, l, ph, L, W, "kv_up", 1, DIMS(1, d->T, d->kvup_t, d->kl));
}

/* The same, backward: each GEMM's dgrad and wgrad in reverse; the input gradient of the
 * down projections is reduced over TP (their output gradients are partial sums of the
 * heads' up projections), where the QKV's dgrad would be. */
static void mla_bwd(bld *B, sc_work_list *l, uint32_t L) {
  const sc__dims *d = &B->d;
  sc_phase ph = SC_PHASE_BWD;
  sc_work_where W = SC_WHERE_LAYER;
  linear(B, l, ph, L, W, "kv_up.dgrad", 1, DIMS(1, d->T, d->kl, d->kvup_t));
  linear(B, l, ph, L, W, "kv_up.wgrad", 0, DIMS(1, d->kvup_t, d->kl, d->T));
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(B->m, 1), "kv_norm.bwd", DIMS(d->T, d->kl));
  linear(B, l, ph, L, W, "kv_down.dgrad", 1, DIMS(1, d->T, d->h, d->kl + d->dr));
  if (d->ql > 0) {
    linear(B, l, ph, L, W, "q_up.dgrad", 1, DIMS(1, d->T, d->ql, d->qup_t));
    linear(B, l, ph, L, W, "q_up.wgrad", 0, DIMS(1, d->qup_t, d->ql, d->T));
    op(B, l, ph, L, W, SC_OP_NORM, norm_variant(B->m, 1), "q_norm.bwd", DIMS(d->T, d->ql));
    linear(B, l, ph, L, W, "q_down.dgrad", 1, DIMS(1, d->T, d->h, d->ql));
  } else {
    linear(B, l, ph, L, W, "q_proj.dgrad", 1, DIMS(1, d->T, d->h, d->qup_t));
  }
  sp_gather(B, l, ph, L, W, "qkv.wgrad_ag");
  tp_reduce(B, l, ph, L, W, "qkv.ar", "qkv.rs");
  linear(B, l, ph, L, W, "kv_down.wgrad", 0, DIMS(1, d->kl + d->dr, d->h, d->T));
  if (d->ql > 0) linear(B, l, ph, L, W, "q_down.wgrad", 0, DIMS(1, d->ql, d->h, d->T));
  else linear(B, l, ph, L, W, "q_proj.wgrad", 0, DIMS(1, d->qup_t, d->h, d->T));
}

/* A collective of a MoE layer over an expert group (EP or ETP); nothing for one rank. */
static void moe_coll(bld *B, sc_work_list *l, sc_phase ph, uint32_t rep, sc_coll_kind kind,
                     sc_group_kind g, double bytes, const char *label) {
  uint32_t n = g == SC_GROUP_EP ? sc_parallel_ep(B->p) : sc_parallel_etp(B->p);
  coll(B, l, ph, rep, SC_WHERE_LAYER, kind, g, n, bytes, B->d.act, 0, label);
}

/* "moe_<activation>" or "moe_shared_<activation>" (+ ".bwd"), from the MLP's kernel name. */
static const char *moe_act_label(char buf[32], const char *prefix, const char *mlp_name) {
  snprintf(buf, 32, "%s%s", prefix, mlp_name + 4); /* past "mlp_" */
  return buf;
}

/* A MoE layer's MLP forward, repeated n times (Megatron-Core's MoELayer with the all-to-all
 * token dispatcher; stepcast/workload.h, "MoE layer"): the router and its top-k, the
 * permutation of each token's k copies by expert, the dispatch all-to-all over EP (and the
 * gather over ETP), the local experts as grouped GEMMs, the way back, and the shared
 * experts beside them as a dense MLP of S x expert_ffn_hidden. */
static void moe_fwd(bld *B, sc_work_list *l, sc_phase ph, uint32_t n) {
  const sc__dims *d = &B->d;
  const int act = (int)B->m->activation;
  sc_work_where W = SC_WHERE_LAYER;
  char lb[32];
  if (n == 0) return;
  double tok = (double)d->N_moe * (double)d->k;      /* this GPU's token copies */
  double a2a = tok * d->load * (double)d->h * d->e;  /* the most loaded rank's share */
  double etp = (double)d->R_moe * (double)d->h * d->e;
  op(B, l, ph, n, W, SC_OP_GEMM, SC_GEMM_PLAIN, "moe_router", DIMS(1, d->N_moe, d->E, d->h));
  op(B, l, ph, n, W, SC_OP_SOFTMAX, SC_SOFTMAX_FWD, "moe_router_topk", DIMS(d->N_moe, d->E));
  op(B, l, ph, n, W, SC_OP_MEMCPY, SC_MEMCPY_COPY, "moe_permute",
     DIMS(d->N_moe * d->k * d->h * (int64_t)d->e));
  moe_coll(B, l, ph, n, SC_COLL_ALLTOALL, SC_GROUP_EP, a2a, "moe_dispatch.a2a");
  moe_coll(B, l, ph, n, SC_COLL_ALLGATHER, SC_GROUP_ETP, etp, "moe_etp.ag");
  linear(B, l, ph, n, W, "moe_fc1", 1, DIMS(d->E_l, d->t_e, d->fe1_t, d->h));
  op(B, l, ph, n, W, SC_OP_ELEMENTWISE, act_kernel[act].fwd,
     moe_act_label(lb, "moe_", act_kernel[act].name), DIMS(d->R_moe * d->fe_t));
  linear(B, l, ph, n, W, "moe_fc2", 1, DIMS(d->E_l, d->t_e, d->h, d->fe_t));
  moe_coll(B, l, ph, n, SC_COLL_REDUCESCATTER, SC_GROUP_ETP, etp, "moe_etp.rs");
  moe_coll(B, l, ph, n, SC_COLL_ALLTOALL, SC_GROUP_EP, a2a, "moe_combine.a2a");
  op(B, l, ph, n, W, SC_OP_MEMCPY, SC_MEMCPY_COPY, "moe_unpermute",
     DIMS(d->N_moe * d->k * d->h * (int64_t)d->e));
  if (d->fs_t > 0) {
    sp_gather(B, l, ph, n, W, "moe_shared_fc1.ag");
    linear(B, l, ph, n, W, "moe_shared_fc1", 1, DIMS(1, d->T, d->fs1_t, d->h));
    op(B, l, ph, n, W, SC_OP_ELEMENTWISE, act_kernel[act].fwd,
       moe_act_label(lb, "moe_shared_", act_kernel[act].name), DIMS(d->T * d->fs_t));
    linear(B, l, ph, n, W, "moe_shared_fc2", 1, DIMS(1, d->T, d->h, d->fs_t));
    tp_reduce(B, l, ph, n, W, "moe_shared_fc2.ar", "moe_shared_fc2.rs");
    op(B, l, ph, n, W, SC_OP_ELEMENTWISE, SC_EW_ADD, "moe_shared_add", DIMS(d->T_sp * d->h));
  }
}

/* The same, backward: each GEMM's dgrad and wgrad, the all-to-alls and ETP collectives
 * mirrored (the backward of an all-gather is a reduce-scatter and back). */
static void moe_bwd(bld *B, sc_work_list *l, uint32_t n) {
  const sc__dims *d = &B->d;
  const int act = (int)B->m->activation;
  sc_phase ph = SC_PHASE_BWD;
  sc_work_where W = SC_WHERE_LAYER;
  char lb[32];
  if (n == 0) return;
  double tok = (double)d->N_moe * (double)d->k;
  double a2a = tok * d->load * (double)d->h * d->e;
  double etp = (double)d->R_moe * (double)d->h * d->e;
  if (d->fs_t > 0) {
    sp_gather(B, l, ph, n, W, "moe_shared_fc2.ag");
    linear(B, l, ph, n, W, "moe_shared_fc2.dgrad", 1, DIMS(1, d->T, d->fs_t, d->h));
    linear(B, l, ph, n, W, "moe_shared_fc2.wgrad", 0, DIMS(1, d->h, d->fs_t, d->T));
    op(B, l, ph, n, W, SC_OP_ELEMENTWISE, act_kernel[act].bwd,
       moe_act_label(lb, "moe_shared_", act_kernel[act].name_bwd), DIMS(d->T * d->fs_t));
    linear(B, l, ph, n, W, "moe_shared_fc1.dgrad", 1, DIMS(1, d->T, d->h, d->fs1_t));
    sp_gather(B, l, ph, n, W, "moe_shared_fc1.wgrad_ag");
    tp_reduce(B, l, ph, n, W, "moe_shared_fc1.ar", "moe_shared_fc1.rs");
    linear(B, l, ph, n, W, "moe_shared_fc1.wgrad", 0, DIMS(1, d->fs1_t, d->h, d->T));
  }
  op(B, l, ph, n, W, SC_OP_MEMCPY, SC_MEMCPY_COPY, "moe_unpermute.bwd",
     DIMS(d->N_moe * d->k * d->h * (int64_t)d->e));
  moe_coll(B, l, ph, n, SC_COLL_ALLTOALL, SC_GROUP_EP, a2a, "moe_combine.a2a_bwd");
  moe_coll(B, l, ph, n, SC_COLL_ALLGATHER, SC_GROUP_ETP, etp, "moe_etp.ag_bwd");
  linear(B, l, ph, n, W, "moe_fc2.dgrad", 1, DIMS(d->E_l, d->t_e, d->fe_t, d->h));
  linear(B, l, ph, n, W, "moe_fc2.wgrad", 0, DIMS(d->E_l, d->h, d->fe_t, d->t_e));
  op(B, l, ph, n, W, SC_OP_ELEMENTWISE, act_kernel[act].bwd,
     moe_act_label(lb, "moe_", act_kernel[act].name_bwd), DIMS(d->R_moe * d->fe_t));
  linear(B, l, ph, n, W, "moe_fc1.dgrad", 1, DIMS(d->E_l, d->t_e, d->h, d->fe1_t));
  linear(B, l, ph, n, W, "moe_fc1.wgrad", 0, DIMS(d->E_l, d->fe1_t, d->h, d->t_e));
  moe_coll(B, l, ph, n, SC_COLL_REDUCESCATTER, SC_GROUP_ETP, etp, "moe_etp.rs_bwd");
  moe_coll(B, l, ph, n, SC_COLL_ALLTOALL, SC_GROUP_EP, a2a, "moe_dispatch.a2a_bwd");
  op(B, l, ph, n, W, SC_OP_MEMCPY, SC_MEMCPY_COPY, "moe_permute.bwd",
     DIMS(d->N_moe * d->k * d->h * (int64_t)d->e));
  op(B, l, ph, n, W, SC_OP_SOFTMAX, SC_SOFTMAX_BWD, "moe_router_topk.bwd", DIMS(d->N_moe, d->E));
  op(B, l, ph, n, W, SC_OP_GEMM, SC_GEMM_PLAIN, "moe_router.dgrad",
     DIMS(1, d->N_moe, d->h, d->E));
  op(B, l, ph, n, W, SC_OP_GEMM, SC_GEMM_TN, "moe_router.wgrad", DIMS(1, d->E, d->h, d->N_moe));
}

/* One transformer layer forward, repeated L times (FWD, or RECOMPUTE for full). */
static void layer_fwd(bld *B, sc_work_list *l, sc_phase ph, uint32_t L) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  const int act = (int)m->activation;
  sc_work_where W = SC_WHERE_LAYER;
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(m, 0), "norm1", DIMS(d->T_sp, d->h));
  uint32_t nc = l->ncolls;
  sp_gather(B, l, ph, L, W, "qkv.ag");
  if (d->mla) {
    mla_fwd(B, l, ph, L);
  } else {
    linear(B, l, ph, L, W, "qkv", 0, DIMS(1, d->T, d->qkv_t, d->h));
    ub_pair(B, l, nc, SC_UB_RING_EXCHANGE, l->nops - 1);
  }
  if (m->position == SC_POS_ROPE) {
    op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_ROPE_FWD, "rope",
       DIMS(d->mla ? d->T * (d->a_t + 1) * d->dr : d->T * (d->a_t + d->g_t) * d->d));
  }
  attn_core_fwd(B, l, ph, L);
  linear(B, l, ph, L, W, "attn_proj", 1, DIMS(1, d->T, d->h, d->q_t));
  nc = l->ncolls;
  tp_reduce(B, l, ph, L, W, "attn_proj.ar", "attn_proj.rs");
  ub_pair(B, l, nc, SC_UB_PIPELINE, l->nops - 1);
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_BIAS_DROPOUT_ADD_FWD, "attn_bda",
     DIMS(d->T_sp * d->h));
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(m, 0), "norm2", DIMS(d->T_sp, d->h));
  /* the dense MLP in the chunk's dense layers, the experts in its MoE layers (L layers of
   * a recomputation are the chunk's: Ld + Lm == L) */
  uint32_t Ld = L - B->Lm;
  nc = l->ncolls;
  sp_gather(B, l, ph, Ld, W, "mlp_fc1.ag");
  linear(B, l, ph, Ld, W, "mlp_fc1", 0, DIMS(1, d->T, d->f1_t, d->h));
  ub_pair(B, l, nc, SC_UB_RING_EXCHANGE, l->nops - 1);
  op(B, l, ph, Ld, W, SC_OP_ELEMENTWISE, act_kernel[act].fwd, act_kernel[act].name,
     DIMS(d->T * d->f_t));
  linear(B, l, ph, Ld, W, "mlp_fc2", 1, DIMS(1, d->T, d->h, d->f_t));
  nc = l->ncolls;
  tp_reduce(B, l, ph, Ld, W, "mlp_fc2.ar", "mlp_fc2.rs");
  ub_pair(B, l, nc, SC_UB_PIPELINE, l->nops - 1);
  moe_fwd(B, l, ph, B->Lm);
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_BIAS_DROPOUT_ADD_FWD, "mlp_bda",
     DIMS(d->T_sp * d->h));
}

static void layer_bwd(bld *B, sc_work_list *l, uint32_t L) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  const sc_parallel *p = B->p;
  const int act = (int)m->activation;
  sc_phase ph = SC_PHASE_BWD;
  sc_work_where W = SC_WHERE_LAYER;
  int64_t ba = d->b * d->a_t;

  /* MLP block, in reverse (the dense layers' MLP, the MoE layers' experts). */
  uint32_t Ld = L - B->Lm;
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_BIAS_DROPOUT_ADD_BWD, "mlp_bda.bwd",
     DIMS(d->T_sp * d->h));
  uint32_t nc = l->ncolls;
  sp_gather(B, l, ph, Ld, W, "mlp_fc2.ag");
  linear(B, l, ph, Ld, W, "mlp_fc2.dgrad", 1, DIMS(1, d->T, d->f_t, d->h));
  ub_pair(B, l, nc, SC_UB_RING_EXCHANGE, l->nops - 1);
  linear(B, l, ph, Ld, W, "mlp_fc2.wgrad", 0, DIMS(1, d->h, d->f_t, d->T));
  op(B, l, ph, Ld, W, SC_OP_ELEMENTWISE, act_kernel[act].bwd, act_kernel[act].name_bwd,
     DIMS(d->T * d->f_t));
  linear(B, l, ph, Ld, W, "mlp_fc1.dgrad", 1, DIMS(1, d->T, d->h, d->f1_t));
  nc = l->ncolls;
  sp_gather(B, l, ph, Ld, W, "mlp_fc1.wgrad_ag");
  ub_pair(B, l, nc, SC_UB_BULK, l->nops - 1);
  nc = l->ncolls;
  tp_reduce(B, l, ph, Ld, W, "mlp_fc1.ar", "mlp_fc1.rs");
  linear(B, l, ph, Ld, W, "mlp_fc1.wgrad", 0, DIMS(1, d->f1_t, d->h, d->T));
  ub_pair(B, l, nc, SC_UB_BULK, l->nops - 1);
  moe_bwd(B, l, B->Lm);
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(m, 1), "norm2.bwd", DIMS(d->T_sp, d->h));
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_ADD, "mlp_residual.bwd", DIMS(d->T_sp * d->h));

  /* Attention block, in reverse. */
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_BIAS_DROPOUT_ADD_BWD, "attn_bda.bwd",
     DIMS(d->T_sp * d->h));
  nc = l->ncolls;
  sp_gather(B, l, ph, L, W, "attn_proj.ag");
  linear(B, l, ph, L, W, "attn_proj.dgrad", 1, DIMS(1, d->T, d->q_t, d->h));
  ub_pair(B, l, nc, SC_UB_RING_EXCHANGE, l->nops - 1);
  linear(B, l, ph, L, W, "attn_proj.wgrad", 0, DIMS(1, d->h, d->q_t, d->T));
  if (p->cp > 1) {
    /* The ring passes K/V again and returns dK/dV to their owners. */
    coll(B, l, ph, L, W, SC_COLL_ALLGATHER, SC_GROUP_CP, p->cp, cp_kv_bytes(B), B->d.act, 1,
         "attn.cp_kv_ag");
  }
  if (p->flash_attention) {
    op(B, l, ph, L, W, SC_OP_ATTENTION, SC_ATTN_FLASH_BWD, "attn_core.bwd",
       DIMS(d->b, d->a_t, d->g_t, d->s_c, d->s, d->d, 1));
  } else {
    /* O = P V: dP = dO V^T, dV = P^T dO; S = Q K^T: dQ = dS K, dK = dS^T Q. */
    op(B, l, ph, L, W, SC_OP_GEMM, SC_GEMM_PLAIN, "attn_av.dgrad", DIMS(ba, d->s_c, d->s, d->d));
    op(B, l, ph, L, W, SC_OP_GEMM, SC_GEMM_TN, "attn_av.wgrad", DIMS(ba, d->s, d->d, d->s_c));
    op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_DROPOUT_BWD, "attn_dropout.bwd",
       DIMS(ba * d->s_c * d->s));
    op(B, l, ph, L, W, SC_OP_SOFTMAX, SC_SOFTMAX_BWD, "attn_softmax.bwd", DIMS(ba * d->s_c, d->s));
    op(B, l, ph, L, W, SC_OP_GEMM, SC_GEMM_PLAIN, "attn_qk.dgrad", DIMS(ba, d->s_c, d->d, d->s));
    op(B, l, ph, L, W, SC_OP_GEMM, SC_GEMM_TN, "attn_qk.wgrad", DIMS(ba, d->s, d->d, d->s_c));
  }
  if (p->cp > 1) {
    coll(B, l, ph, L, W, SC_COLL_REDUCESCATTER, SC_GROUP_CP, p->cp, cp_kv_bytes(B), B->d.act, 1,
         "attn.cp_dkv_rs");
  }
  if (m->position == SC_POS_ROPE) {
    op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_ROPE_BWD, "rope.bwd",
       DIMS(d->mla ? d->T * (d->a_t + 1) * d->dr : d->T * (d->a_t + d->g_t) * d->d));
  }
  if (d->mla) {
    mla_bwd(B, l, L);
  } else {
    linear(B, l, ph, L, W, "qkv.dgrad", 1, DIMS(1, d->T, d->h, d->qkv_t));
    nc = l->ncolls;
    sp_gather(B, l, ph, L, W, "qkv.wgrad_ag");
    ub_pair(B, l, nc, SC_UB_BULK, l->nops - 1);
    nc = l->ncolls;
    tp_reduce(B, l, ph, L, W, "qkv.ar", "qkv.rs");
    linear(B, l, ph, L, W, "qkv.wgrad", 0, DIMS(1, d->qkv_t, d->h, d->T));
    ub_pair(B, l, nc, SC_UB_BULK, l->nops - 1);
  }
  op(B, l, ph, L, W, SC_OP_NORM, norm_variant(m, 1), "norm1.bwd", DIMS(d->T_sp, d->h));
  op(B, l, ph, L, W, SC_OP_ELEMENTWISE, SC_EW_ADD, "attn_residual.bwd", DIMS(d->T_sp * d->h));
}

static void embedding_fwd(bld *B, sc_work_list *l) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  sc_phase ph = SC_PHASE_FWD;
  sc_work_where S = SC_WHERE_STAGE;
  /* VocabParallelEmbedding: each rank looks up its vocabulary rows (zeros elsewhere), then
   * the partial sums are all-reduced (SP: reduce-scattered along the sequence). */
  /* the tables were last touched a step before (SC_OP_COLD); positions come in order */
  set_flags(op(B, l, ph, 1, S, SC_OP_EMBEDDING, SC_EMBED_FWD, "embed", DIMS(d->T, d->h, d->V_t)),
            SC_OP_COLD);
  tp_reduce(B, l, ph, 1, S, "embed.ar", "embed.rs");
  if (m->position == SC_POS_LEARNED) {
    set_flags(op(B, l, ph, 1, S, SC_OP_EMBEDDING, SC_EMBED_FWD, "embed_pos",
                 DIMS(d->T_sp, d->h, m->max_seq)),
              SC_OP_COLD | SC_OP_ROWS_IN_ORDER);
    op(B, l, ph, 1, S, SC_OP_ELEMENTWISE, SC_EW_ADD, "embed_pos_add", DIMS(d->T_sp * d->h));
  }
  op(B, l, ph, 1, S, SC_OP_ELEMENTWISE, SC_EW_DROPOUT_FWD, "embed_dropout", DIMS(d->T_sp * d->h));
}

static void embedding_bwd(bld *B, sc_work_list *l) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  sc_phase ph = SC_PHASE_BWD;
  sc_work_where S = SC_WHERE_STAGE;
  op(B, l, ph, 1, S, SC_OP_ELEMENTWISE, SC_EW_DROPOUT_BWD, "embed_dropout.bwd",
     DIMS(d->T_sp * d->h));
  if (m->position == SC_POS_LEARNED) {
    set_flags(op(B, l, ph, 1, S, SC_OP_EMBEDDING, SC_EMBED_BWD, "embed_pos.bwd",
                 DIMS(d->T_sp, d->h, m->max_seq)),
              SC_OP_COLD | SC_OP_ROWS_IN_ORDER);
  }
  /* The backward of the reduce-scatter is an all-gather; of the all-reduce, the identity. */
  sp_gather(B, l, ph, 1, S, "embed.ag");
  set_flags(op(B, l, ph, 1, S, SC_OP_EMBEDDING, SC_EMBED_BWD, "embed.bwd",
               DIMS(d->T, d->h, d->V_t)),
            SC_OP_COLD);
}

static void output_fwd(bld *B, sc_work_list *l) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  const sc_parallel *p = B->p;
  sc_phase ph = SC_PHASE_FWD;
  sc_work_where S = SC_WHERE_STAGE;
  op(B, l, ph, 1, S, SC_OP_NORM, norm_variant(m, 0), "final_norm", DIMS(d->T_sp, d->h));
  sp_gather(B, l, ph, 1, S, "logits.ag");
  op(B, l, ph, 1, S, SC_OP_GEMM, SC_GEMM_PLAIN, "logits", DIMS(1, d->T, d->V_t, d->h));
  op(B, l, ph, 1, S, SC_OP_CROSS_ENTROPY, SC_CE_FWD, "cross_entropy", DIMS(d->T, d->V_t));
  /* vocab_parallel_cross_entropy: all-reduce of the logit max, of the sum of exponentials
   * and of the target logit, each T fp32 values. */
  coll(B, l, ph, 3, S, SC_COLL_ALLREDUCE, SC_GROUP_TP, p->tp, (double)d->T * 4.0, SC_DTYPE_FP32,
       0, "cross_entropy.ar");
}

static void output_bwd(bld *B, sc_work_list *l) {
  const sc__dims *d = &B->d;
  const sc_model *m = B->m;
  sc_phase ph = SC_PHASE_BWD;
  sc_work_where S = SC_WHERE_STAGE;
  op(B, l, ph, 1, S, SC_OP_CROSS_ENTROPY, SC_CE_BWD, "cross_entropy.bwd", DIMS(d->T, d->V_t));
  op(B, l, ph, 1, S, SC_OP_GEMM, SC_GEMM_PLAIN, "logits.dgrad", DIMS(1, d->T, d->h, d->V_t));
  sp_gather(B, l, ph, 1, S, "logits.wgrad_ag");
  tp_reduce(B, l, ph, 1, S, "logits.ar", "logits.rs");
  op(B, l, ph, 1, S, SC_OP_GEMM, SC_GEMM_TN, "logits.wgrad", DIMS(1, d->V_t, d->h, d->T));
  op(B, l, ph, 1, S, SC_OP_NORM, norm_variant(m, 1), "final_norm.bwd", DIMS(d->T_sp, d->h));
}

/* ------------------------------------------------------------------------- */
/* The stage                                                                 */

int sc_workload_stage(const sc_model *m, const sc_parallel *p, uint32_t stage, uint32_t chunk,
                      sc_stage_work *out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_workload_stage: out is NULL");
  uint32_t first = 0, L = 0;
  int rc = sc_workload_chunk_layers(m, p, stage, chunk, &first, &L, err);
  if (rc != SC_OK) return rc;

  bld B;
  B.m = m;
  B.p = p;
  B.w = out;
  B.overflow = 0;
  B.Ld = B.Lm = 0;
  sc__dims_fill(m, p, &B.d);
  const sc__dims *d = &B.d;
  uint32_t v = p->virtual_stages;

  out->stage = stage;
  out->chunk = chunk;
  out->layer_first = first;
  out->layers = L;
  out->has_embedding = stage == 0 && chunk == 0;
  out->has_output = stage == p->pp - 1 && chunk == v - 1;
  out->microbatches = sc_parallel_microbatches(p);
  out->vocab_padded = d->vocab_padded;
  for (int i = 0; i < SC_PHASE_COUNT; i++) {
    out->per_micro[i].nops = out->per_micro[i].ncolls = 0;
    out->flops[i] = out->gemm_flops[i] = 0.0;
  }
  out->per_iter.nops = out->per_iter.ncolls = 0;

  B.Lm = (uint32_t)sc_model_moe_layers(m, first, L);
  B.Ld = L - B.Lm;
  int64_t moe_dense = 0, moe_expert = 0;
  sc__moe_layer_params(m, d, &moe_dense, &moe_expert);
  int64_t params = (int64_t)B.Ld * sc__layer_params(m, d);
  int64_t expert_params = (int64_t)B.Lm * moe_expert;
  params += (int64_t)B.Lm * moe_dense + expert_params;
  if (out->has_embedding) params += sc__embedding_params(m, d);
  if (out->has_output) params += sc__output_params(m, p, d);
  out->params = params;
  out->expert_params = expert_params;
  /* the parameters the DP x CP group reduces (the experts' go over EDP) */
  int64_t dense_params = params - expert_params;

  /* Forward. */
  sc_work_list *fw = &out->per_micro[SC_PHASE_FWD];
  if (out->has_embedding) embedding_fwd(&B, fw);
  layer_fwd(&B, fw, SC_PHASE_FWD, L);
  if (out->has_output) output_fwd(&B, fw);
  shard_micro(&B, fw, SC_PHASE_FWD, L, out->has_embedding, out->has_output);

  /* Recomputation, run before the backward of the micro-batch. Megatron recomputes only
   * transformer layers (not the embedding or the output layer). */
  sc_work_list *rw = &out->per_micro[SC_PHASE_RECOMPUTE];
  if (p->recompute == SC_RECOMPUTE_FULL) {
    layer_fwd(&B, rw, SC_PHASE_RECOMPUTE, L);
  } else if (p->recompute == SC_RECOMPUTE_SELECTIVE) {
    /* Korthikanti et al. 2022 sec. 5: QK^T, softmax, softmax dropout and attention over V
     * are recomputed. With flash attention Megatron-core still checkpoints the core
     * attention (recompute_modules core_attn), so the flash forward runs again. */
    attn_core_fwd(&B, rw, SC_PHASE_RECOMPUTE, L);
  }

  /* Backward. */
  sc_work_list *bw = &out->per_micro[SC_PHASE_BWD];
  if (out->has_output) output_bwd(&B, bw);
  layer_bwd(&B, bw, L);
  if (out->has_embedding) embedding_bwd(&B, bw);
  shard_micro(&B, bw, SC_PHASE_BWD, L, out->has_embedding, out->has_output);

  /* Per iteration: optimizer and data-parallel reductions over the DP x CP group. */
  sc_work_list *it = &out->per_iter;
  uint32_t z = sc_parallel_zero(p), S = sc_parallel_shard_ranks(p);
  /* expert parameters: sharded (distributed optimizer) over the expert data parallel group */
  uint32_t edp = sc_parallel_edp(p);
  int64_t opt_params = z >= 1 ? (dense_params + S - 1) / S : dense_params;
  if (expert_params > 0) opt_params += z >= 1 ? (expert_params + edp - 1) / edp : expert_params;
  /* gradients as accumulated: fp32 main gradients, or the training type's (grad_reduce_dtype) */
  const double gb = sc_parallel_grad_bytes(p);
  const sc_dtype gdt = p->grad_reduce_dtype;
  op(&B, it, SC_PHASE_OPTIMIZER, 1, SC_WHERE_STAGE, SC_OP_OPTIMIZER, SC_OPTIM_ADAM, "adam",
     DIMS(opt_params));
  if (expert_params > 0) {
    coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE,
         z == 0 ? SC_COLL_ALLREDUCE : SC_COLL_REDUCESCATTER, SC_GROUP_EDP, edp,
         (double)expert_params * gb, gdt, p->overlap_grad_reduce,
         z == 0 ? "edp.grad_ar" : "edp.grad_rs");
    if (z >= 1)
      coll(&B, it, SC_PHASE_FWD, 1, SC_WHERE_STAGE, SC_COLL_ALLGATHER, SC_GROUP_EDP, edp,
           (double)expert_params * d->e, d->act, p->overlap_param_gather, "edp.param_ag");
  }
  if (z == 0) {
    dp_coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE, SC_COLL_ALLREDUCE, SC_DP_WHOLE,
            (double)dense_params * gb, gdt, p->overlap_grad_reduce, "dp.grad_ar");
  } else {
    if (z == 1)
      dp_coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE, SC_COLL_REDUCESCATTER, SC_DP_SHARD,
              (double)dense_params * gb, gdt, p->overlap_grad_reduce, "dp.grad_rs");
    /* HSDP: the shard's reduced gradients, all-reduced across the replicas of the shard */
    dp_coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE, SC_COLL_ALLREDUCE, SC_DP_REPLICA,
            (double)opt_params * gb, gdt, p->overlap_grad_reduce, "dp.grad_ar_replicas");
    if (z <= 2)
      dp_coll(&B, it, SC_PHASE_FWD, 1, SC_WHERE_STAGE, SC_COLL_ALLGATHER, SC_DP_SHARD,
              (double)dense_params * d->e, d->act, p->overlap_param_gather, "dp.param_ag");
  }
  if (m->tied_embeddings && p->pp > 1 && (out->has_embedding || out->has_output)) {
    coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE, SC_COLL_ALLREDUCE, SC_GROUP_PP, 2,
         (double)d->V_t * d->h * gb, gdt, 0, "embed.tied_grad_ar");
  }
  if (p->schedule == SC_SCHED_DUALPIPE) {
    /* DualPipe: the stage's two copies (on ranks s and pp-1-s) each saw half the
     * micro-batches; they sum their gradients (after the DP reduction, shard by shard) */
    coll(&B, it, SC_PHASE_BWD, 1, SC_WHERE_STAGE, SC_COLL_ALLREDUCE, SC_GROUP_PP, 2,
         (double)opt_params * gb, gdt, 0, "dualpipe.copy_grad_ar");
  }

  /* Pipeline messages: s/cp * b * h / tp elements (sequence shard with SP, Megatron's
   * scatter-gather split without it). */
  uint32_t k = chunk * p->pp + stage, K = p->pp * v;
  double msg = (double)d->T * d->h * d->e / p->tp;
  out->p2p_recv_fwd_bytes = k > 0 ? msg : 0.0;
  out->p2p_send_bwd_bytes = k > 0 ? msg : 0.0;
  out->p2p_send_fwd_bytes = k + 1 < K ? msg : 0.0;
  out->p2p_recv_bwd_bytes = k + 1 < K ? msg : 0.0;
  out->p2p_dtype = d->act;

  if (B.overflow) {
    return sc_error_set(err, SC_ELIMIT,
                        "sc_workload_stage: more than %d operators or %d collectives in a list",
                        SC_WORK_MAX_OPS, SC_WORK_MAX_COLLS);
  }
  return SC_OK;
}
