/*
 * Memory per GPU: weights, gradients, optimizer states and activations of one pipeline
 * stage (all its virtual chunks; DualPipe: both stage copies a rank holds), at the peak of
 * a 1F1B, interleaved, GPipe, ZB-H1 or DualPipe iteration.
 *
 * Model states (Megatron-LM docs, distributed optimizer, "bytes per parameter" table):
 *   mixed precision (bf16/fp16 compute): 2 B bf16/fp16 weight + 4 B fp32 main gradient
 *   (gradients accumulated and reduced in fp32) + 12 B optimizer (fp32 master weight, Adam
 *   first and second moments) = 18 B/param; with the distributed optimizer the 12 B are
 *   sharded over the data-parallel (x context-parallel) group: 6 + 12/dp B/param.
 *   fp8 compute keeps bf16 weights (Transformer Engine casts on the fly): counted as 2 B.
 *   fp32 training: 4 B weight + 4 B gradient + 8 B moments (no separate master copy).
 *   Gradients kept in the training type (sc_parallel.grad_reduce_dtype bf16/fp16:
 *   Megatron-Core's DDP grad_reduce_in_fp32 = False, NeMo's optim.grad_sync_dtype) are
 *   2 B, not 4: 16 B/param.
 *   PyTorch's automatic mixed precision (sc_parallel.amp_layout, set by a stack that trains
 *   that way): 4 B fp32 weight + 2 B autocast copy + 4 B gradient (+ 4 B DDP bucket without
 *   ZeRO on several ranks) + 8 B moments = 22 B/param (18 on one rank).
 *
 * Sharded data parallelism (Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, Sec. 5 and
 * Fig. 1: the optimizer states (stage 1), the gradients too (stage 2), the parameters too
 * (stage 3) partitioned over the N_d data-parallel ranks): optimizer bytes / shard from
 * stage 1, gradients / shard from stage 2, weights / shard at stage 3; shard = the ranks
 * a shard spans (sc_parallel_shard_ranks: the DP x CP group, or HSDP's shard_size). What
 * a stage holds unsharded while it works is counted too: the gradients of the layer being
 * reduced (stage 2 and 3) and the gathered weights of two layers (stage 3).
 *
 * Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models" (arXiv:2205.05198), Section 4 and Table 2. Per layer, with s the
 * sequence, b the micro-batch, h the width, a the heads, t the tensor-parallel degree and
 * 2-byte activations:
 *     no parallelism                      sbh (34 + 5as/h)
 *     tensor parallel                     sbh (10 + 24/t + 5as/(ht))
 *     tensor + sequence parallel          sbh/t (34 + 5as/h)
 *     TP + selective recomputation        sbh (10 + 24/t)        (the 5as/h term goes)
 *     TP + SP + selective                 sbh 34/t
 *     full recomputation                  2sbh (the layer input only; /t with SP)
 * The 34 decomposes (Sec. 4.1) as: attention 11 (QKV input 2, Q and K 4, V 2, projection
 * input 2, dropout mask 1), MLP 19 (fc1 input 2, GeLU input 8, fc2 input 8, dropout mask 1),
 * two norm inputs 4; the 10 replicated across TP without SP are the two norm inputs, the
 * QKV and fc1 inputs, and the two dropout masks; 5as/h is the softmax output (2), its
 * dropout mask (1) and dropout output (2) per score element. We evaluate the same terms
 * with the model's actual widths, so grouped-query attention (K and V g*d wide), SwiGLU (fc1
 * output 2f wide, fc2 input f wide), any ffn_hidden and any dtype size reduce to the
 * table's numbers for GPT (a*d = h, g = a, f = 4h, 2-byte dtype); test_memory checks this.
 * fp8 training (Transformer Engine) keeps the four linear layers' inputs (QKV, projection,
 * fc1, fc2) as the 1-byte copies their quantisation made, the rest in bf16.
 * Context parallelism divides s by cp (the score block is s/cp x s). Flash attention
 * stores no score matrix (the 5as/h term goes, as with selective recomputation) but
 * keeps its fp32 log-sum-exp, 4 b a/t s/cp bytes.
 * Embedding and output layer (Sec. 4.3): the input embedding's dropout mask (sbh/t with
 * SP) on the first stage; on the last the final norm input and the output projection input
 * (2sbh/t each with SP) and the fp32 logits of the cross-entropy (4sbv/t): 4sbh/t (1 + v/h).
 *
 * Mixture-of-experts layers (stepcast/workload.h, "MoE layer"): each GPU holds its E/ep
 * routed experts' weights / etp, their gradients and optimizer states (sharded over the
 * expert data parallel group tp*cp*dp/(ep*etp) with the distributed optimizer), the
 * router and the shared experts like dense weights; activations: moe_layer_activation_bytes
 * (ZB-H1's deferred weight-gradient inputs of a MoE layer are counted as a dense layer's).
 *
 * Micro-batches in flight (Korthikanti Sec. 4.2.3, Narayanan et al. SC21): 1F1B keeps
 * pp - stage micro-batches on stage `stage` (p on the first stage); the interleaved
 * schedule keeps 2(pp-stage-1) + (v-1)pp + 1 chunk micro-batches, which is
 * p (1 + (p-1)/(pv)) stage-equivalents on the first stage; GPipe keeps all of them. Never
 * more than the iteration's micro-batches. Interleaved, each chunk's activations count its
 * own micro-batches in flight (the forwards go chunk by chunk in groups of pp micro-batches,
 * Megatron-LM's get_model_chunk_id), so the last stage's output layer, in its last chunk,
 * counts once.
 *
 * ZB-H1 (Qi et al. 2023, arXiv:2401.10241, Sec. 2.1 and Table 1) keeps 1F1B's pp - stage
 * micro-batches whose backward has not run, and rank r also defers r weight-gradient passes
 * W: until its W runs, a micro-batch holds what the weight-gradient GEMMs read, the inputs of
 * the four linear layers (as the forward stored them) and their output gradients, which for
 * GPT is the paper's M_W = 32sbh per layer (QKV, projection, fc1 and fc2 inputs 2+2+2+8,
 * output gradients 6+2+8+2); on the last stage also the output layer's input and the logits'
 * gradient (a MoE layer's W counted as a dense layer's). The peak over ZB-H1's order
 * (core/src/schedule/schedule.c) is taken in closed form; the first stage defers nothing and
 * holds exactly 1F1B's pp micro-batches.
 *
 * DualPipe (DeepSeek-V3, arXiv:2412.19437, Sec. 3.2.1 and Table 2) puts stage s on rank s
 * and on rank pp-1-s: a rank holds the parameters, gradients and optimizer states of both
 * copies ("2x"), and the activations of pp - s micro-batches of each copy of stage s, pp + 1
 * on every rank (Table 2's PP+1; tests/test_schedule.c counts them on the simulated order:
 * the overlapped F&B pair allocates its forward's before its backward frees).
 */
#include <math.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "stepcast/workload.h"
#include "workload/workload_int.h"

/* Stored activation bytes of one transformer layer for one micro-batch on one GPU. */
static double layer_activation_bytes(const sc_parallel *p, const sc__dims *d) {
  double e = d->e;
  double T = (double)d->T, Tsp = (double)d->T_sp, h = (double)d->h;
  if (p->recompute == SC_RECOMPUTE_FULL) return e * Tsp * h;
  /* fp8 (Transformer Engine): the inputs of the four linear layers are kept for the wgrad
   * as the fp8 copies their forward cast made (1 byte), not in bf16. */
  double q = p->dtype == SC_DTYPE_FP8 ? 1.0 : e;
  /* Replicated over TP without SP, sharded with it: norm1 and norm2 inputs, QKV and fc1
   * inputs; two 1-byte dropout masks. */
  double rep = Tsp * h * (2.0 * e + 2.0 * q + 2.0);
  /* Split over TP: Q and K, V, activation input (fc1 output); projection and fc2 inputs. */
  double split = e * T * (double)((d->a_t + d->g_t) * d->d + d->g_t * d->d + d->f1_t) +
                 q * T * (double)(d->q_t + d->f_t);
  if (d->mla) /* MLA: Q and K dqk wide, V dv wide, and the two latents the up projections read */
    split = e * T * (double)(2 * d->a_t * d->dqk + d->a_t * d->dv + d->ql + d->kl + d->f1_t) +
            q * T * (double)(d->q_t + d->f_t);
  double scores;
  if (p->flash_attention) {
    scores = 4.0 * (double)d->b * (double)d->a_t * (double)d->s_c;
  } else if (p->recompute == SC_RECOMPUTE_SELECTIVE) {
    scores = 0.0;
  } else {
    scores = (2.0 * e + 1.0) * (double)d->b * (double)d->a_t * (double)d->s_c * (double)d->s;
  }
  return rep + split + scores;
}

/* The same for a MoE layer: the dense layer's terms without the MLP's split ones (fc1
 * output, fc2 input), plus what the experts' backward needs (Megatron-Core's MoELayer with
 * the all-to-all dispatcher): the router's fp32 probabilities and its 1-byte routing map
 * (N x E each), the R routed token rows this GPU's experts take after the dispatch (fc1
 * input, 1 byte under fp8) with their fc1 output (fe1/etp wide) and fc2 input (fe/etp wide),
 * the N k expert outputs back from the combine that the weighted unpermute keeps, and the
 * shared experts' fc1 output and fc2 input (T tokens, S x expert_ffn_hidden / tp wide).
 * Full recomputation keeps the layer input only, as for a dense layer. */
static double moe_layer_activation_bytes(const sc_parallel *p, const sc__dims *d) {
  double e = d->e, T = (double)d->T;
  if (p->recompute == SC_RECOMPUTE_FULL) return layer_activation_bytes(p, d);
  double q = p->dtype == SC_DTYPE_FP8 ? 1.0 : e;
  double dense_mlp = e * T * (double)d->f1_t + q * T * (double)d->f_t;
  double N = (double)d->N_moe, R = (double)d->R_moe, h = (double)d->h;
  double router = 5.0 * N * (double)d->E;
  double routed = R * (q * h + e * (double)d->fe1_t + q * (double)d->fe_t) +
                  e * N * (double)d->k * h;
  double shared = e * T * (double)d->fs1_t + q * T * (double)d->fs_t;
  return layer_activation_bytes(p, d) - dense_mlp + router + routed + shared;
}

static double embedding_activation_bytes(const sc__dims *d) {
  return (double)d->T_sp * (double)d->h; /* 1-byte dropout mask */
}

static double output_activation_bytes(const sc__dims *d) {
  return 2.0 * d->e * (double)d->T_sp * (double)d->h + 4.0 * (double)d->T * (double)d->V_t;
}

/* What one micro-batch whose weight-gradient pass W is deferred (ZB-H1) holds per layer:
 * the inputs of the QKV, projection, fc1 and fc2 GEMMs as stored (sequence-sharded with SP,
 * 1-byte copies under fp8) and their output gradients (model dtype, full sequence). */
static double layer_wgrad_bytes(const sc_parallel *p, const sc__dims *d) {
  double e = d->e, q = p->dtype == SC_DTYPE_FP8 ? 1.0 : e;
  double T = (double)d->T, Tsp = (double)d->T_sp, h = (double)d->h;
  double inputs = q * (2.0 * Tsp * h + T * (double)(d->q_t + d->f_t));
  double grads = e * T * (double)(d->qkv_t + d->f1_t + 2 * d->h);
  return inputs + grads;
}

/* The same for the output layer: its input (the final norm's output) and the logits'
 * gradient. */
static double output_wgrad_bytes(const sc__dims *d) {
  return d->e * (double)d->T_sp * (double)d->h + d->e * (double)d->T * (double)d->V_t;
}

/* ZB-H1's activation peak on rank r of pp with m micro-batches, a bytes per micro-batch
 * whose backward has not run and w per micro-batch whose W is pending. The order
 * (schedule.c, build_zbh1): warm = min(pp-r-1, m) forwards; then k = m - warm steps of F, B
 * and, from step r on, the oldest W; then B, W pairs; then the rest of the W passes. After
 * step i's forward warm+1 micro-batches wait for B and min(i, r) for W; after its B, warm
 * and min(i, r)+1. The peak is at the last step or at the first B of the cooldown. */
static double zbh1_peak(double pp, double r, double m, double a, double w) {
  double warm = fmin(pp - r - 1.0, m), k = m - warm;
  double peak = warm * a;
  if (k >= 1.0) peak = fmax(peak, warm * a + fmin(k - 1.0, r) * w + fmax(a, w));
  if (warm >= 1.0) peak = fmax(peak, (warm - 1.0) * a + (fmin(k, r) + 1.0) * w);
  return peak;
}

int sc_memory_per_gpu(const sc_model *m, const sc_parallel *p, uint32_t stage, sc_memory *out,
                      sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_memory_per_gpu: out is NULL");
  int rc = sc_workload_validate(m, p, err);
  if (rc != SC_OK) return rc;
  if (stage >= p->pp) {
    return sc_error_set(err, SC_EINVAL, "stage: %u out of range (pp = %u)", stage, p->pp);
  }
  sc__dims d;
  sc__dims_fill(m, p, &d);
  uint32_t v = p->virtual_stages;

  double mb = (double)sc_parallel_microbatches(p);
  double inflight, chunks = 0.0;
  int dual = p->schedule == SC_SCHED_DUALPIPE;
  if (dual) {
    inflight = ((double)p->pp + 1.0) / 2.0; /* pp + 1 chunk micro-batches over 2 copies */
  } else if (p->schedule == SC_SCHED_GPIPE) {
    inflight = mb;
  } else if (v > 1) {
    chunks = 2.0 * (double)(p->pp - stage - 1) + (double)(v - 1) * p->pp + 1.0;
    if (chunks > mb * v) chunks = mb * v;
    inflight = chunks / v;
  } else {
    inflight = (double)(p->pp - stage);
    if (inflight > mb) inflight = mb;
  }

  int64_t params = 0;
  double act = 0.0, act_inflight = 0.0;
  double per_layer = layer_activation_bytes(p, &d);
  double per_moe_layer = d.E > 0 ? moe_layer_activation_bytes(p, &d) : 0.0;
  int64_t moe_dense = 0, moe_expert = 0, expert = 0;
  sc__moe_layer_params(m, &d, &moe_dense, &moe_expert);
  /* the model chunks this GPU holds: its vp chunks, or DualPipe's two stage copies */
  uint32_t ncopy = dual ? 2u : v;
  for (uint32_t k = 0; k < ncopy; k++) {
    uint32_t c = dual ? 0u : k, st = dual && k == 1 ? p->pp - 1 - stage : stage;
    uint32_t first = 0, L = 0;
    rc = sc_workload_chunk_layers(m, p, st, c, &first, &L, err);
    if (rc != SC_OK) return rc;
    /* the chunk's MoE layers: their activations and parameters in place of dense ones */
    uint32_t Lm = (uint32_t)sc_model_moe_layers(m, first, L), Ld = L - Lm;
    double a = (double)Ld * per_layer;
    params += (int64_t)Ld * sc__layer_params(m, &d);
    if (Lm > 0) {
      a += (double)Lm * per_moe_layer;
      params += (int64_t)Lm * (moe_dense + moe_expert);
      expert += (int64_t)Lm * moe_expert;
    }
    int output = st == p->pp - 1 && c == v - 1;
    if (st == 0 && c == 0) {
      params += sc__embedding_params(m, &d);
      a += embedding_activation_bytes(&d);
    }
    if (output) {
      params += sc__output_params(m, p, &d);
      a += output_activation_bytes(&d);
    }
    act += a;
    if (dual) { /* pp - s micro-batches of the copy of stage s */
      act_inflight += (double)(p->pp - st) * a;
      continue;
    }
    if (p->schedule == SC_SCHED_ZB_H1) {
      double w = (double)L * layer_wgrad_bytes(p, &d) + (output ? output_wgrad_bytes(&d) : 0.0);
      act_inflight += zbh1_peak((double)p->pp, (double)stage, mb, a, w);
      continue;
    }
    /* Micro-batches of chunk c in flight. Interleaved: the forwards before the first
     * backward run chunk by chunk in groups of pp micro-batches (Megatron-LM's
     * get_model_chunk_id: chunk (k / pp) % v for the k-th forward), so of the `chunks`
     * forwards chunk c holds R pp + min(max(rem - c pp, 0), pp) (R full rounds of pp v,
     * rem the rest): the last stage's output layer, in its last chunk, holds one
     * micro-batch, the first stage's embedding the most. */
    double n_c = inflight;
    if (p->schedule != SC_SCHED_GPIPE && v > 1) {
      double round = (double)p->pp * v;
      double R = floor(chunks / round), rem = chunks - R * round;
      double part = rem - (double)c * p->pp;
      if (part < 0) part = 0;
      if (part > p->pp) part = p->pp;
      n_c = R * p->pp + part;
    }
    act_inflight += n_c * a;
  }

  int mixed = d.e < 4.0;
  int amp = mixed && p->amp_layout; /* PyTorch AMP's states (sc_parallel.amp_layout) */
  double wbytes = amp ? 4.0 + 2.0 : mixed ? 2.0 : 4.0;
  double obytes = mixed && !amp ? 12.0 : 8.0;
  uint32_t z = sc_parallel_zero(p);
  double shard = (double)sc_parallel_shard_ranks(p);

  memset(out, 0, sizeof *out);
  out->params = params;
  out->weights_bytes = wbytes * (double)params;
  /* fp32 main gradients, or gradients kept in the training type (grad_reduce_dtype) */
  double gbytes = amp ? 4.0 : mixed ? sc_parallel_grad_bytes(p) : 4.0;
  /* DDP's gradient buckets beside the gradients (AMP layout, no ZeRO, more than one rank) */
  if (amp && z == 0 && p->dp * p->cp > 1) gbytes += 4.0;
  out->grads_bytes = gbytes * (double)params;
  out->optimizer_bytes = obytes * (double)params / shard;
  if (expert > 0) {
    /* the routed experts' states sharded over the expert data parallel group instead */
    double eshard = z >= 1 ? (double)sc_parallel_edp(p) : 1.0;
    out->optimizer_bytes =
        obytes * (double)(params - expert) / shard + obytes * (double)expert / eshard;
  }
  if (z >= 2) {
    /* ZeRO-2 keeps a 1/shard of the fp32 gradients, plus the unsharded gradients of the
     * layer being reduced; ZeRO-3 also a 1/shard of the weights, plus the gathered
     * weights of two layers (the one computing and the one prefetched; FSDP's default
     * limit of in-flight all-gathers, limit_all_gathers, holds two) */
    int64_t lp = sc__layer_params(m, &d);
    out->grads_bytes = gbytes * ((double)params / shard + (double)lp);
    if (z >= 3) out->weights_bytes = wbytes * ((double)params / shard + 2.0 * (double)lp);
  }
  out->activation_per_micro_bytes = act;
  out->inflight_micro = inflight;
  out->activations_bytes = act_inflight;
  out->total_bytes =
      out->weights_bytes + out->grads_bytes + out->optimizer_bytes + out->activations_bytes;
  return SC_OK;
}
