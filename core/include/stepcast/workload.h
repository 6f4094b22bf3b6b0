/*
 * The workload: what one pipeline stage (one virtual chunk of it when interleaved) computes
 * and communicates, per micro-batch and per iteration, and what it holds in memory.
 *
 * Pure functions of (sc_model, sc_parallel): no timing, no plugins, no allocation. The
 * reference is Megatron-LM's GPT layer (column- then row-parallel linears, fused QKV,
 * grouped-query attention, flash or unfused attention, LayerNorm/RMSNorm, GeLU/SwiGLU,
 * fused bias-dropout-add, rotary embeddings, vocabulary-parallel embedding and
 * cross-entropy, Adam with fp32 master weights, optionally sharded across data parallel).
 *
 * Conventions
 *   - Operator shapes are exact per-GPU shapes after tensor (/tp on heads and ffn),
 *     sequence (/tp on the sequence outside attention and MLP when sequence_parallel) and
 *     context (/cp on the sequence) splitting. Families and dims: stepcast/ops.h.
 *   - One entry describes `repeat` identical instances: a per-layer operator appears once
 *     with repeat = the chunk's layer count (where = SC_WHERE_LAYER); a stage-level one
 *     (embedding, output layer, optimizer) has repeat 1 (where = SC_WHERE_STAGE).
 *     Multiply time, FLOPs and bytes by repeat.
 *   - Entries are listed in execution order within one layer (then stage-level ones
 *     before the layers for the embedding, after them for the output layer); the schedule
 *     may use this order for overlap (a collective follows the operator that produces its
 *     input).
 *   - Collective bytes are per rank as nccl-tests sizes them: all-reduce = the buffer;
 *     all-gather = the gathered output per rank; reduce-scatter = the input per rank (before
 *     scattering); send/recv = the message.
 *   - FLOPs in sc_stage_work are model FLOPs: matrix multiplications only (GEMMs, the
 *     attention score and context matmuls whether flash or unfused, the logits), nominal
 *     2mnk each with the full s_q x s_k score matrix (causal masking not exploited), the
 *     convention of Narayanan et al. SC21 and of MFU. Elementwise, norm, softmax and
 *     optimizer arithmetic is not model FLOPs; plugins report it per operator, and they
 *     report the FLOPs a kernel performs (a causal flash kernel does about half the score
 *     work, its backward recomputes the scores).
 *   - The data-parallel gradient group is DP x CP (Megatron's data_parallel_group_with_cp:
 *     context-parallel ranks hold the same parameters): DP collectives carry group
 *     SC_GROUP_DP with nranks = dp * cp, and the distributed optimizer shards over dp * cp.
 */
#ifndef STEPCAST_WORKLOAD_H
#define STEPCAST_WORKLOAD_H

#include <stdint.h>

#include "stepcast/ops.h"
#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* When work happens. FWD, BWD and RECOMPUTE lists are per micro-batch; OPTIMIZER is once
 * per iteration. RECOMPUTE work runs just before the micro-batch's backward. */
typedef enum {
  SC_PHASE_FWD = 0,
  SC_PHASE_BWD,
  SC_PHASE_RECOMPUTE,
  SC_PHASE_OPTIMIZER,
  SC_PHASE_COUNT
} sc_phase;

/* Short names "fwd", "bwd", "recompute", "optimizer"; "?" when out of range. */
const char *sc_phase_name(sc_phase ph);

typedef enum {
  SC_WHERE_LAYER = 0, /* one instance per transformer layer of the chunk (repeat = layers) */
  SC_WHERE_STAGE = 1  /* once per stage/chunk (embedding, output layer, optimizer, DP) */
} sc_work_where;

/* One operator entry. desc.family points at a static literal (SC_OP_* of ops.h). */
typedef struct sc_work_op {
  sc_op_desc desc;
  char label[32];      /* "qkv", "attn_core", "mlp_fc1.dgrad", "logits.wgrad", ... */
  sc_phase phase;
  uint32_t repeat;     /* identical instances per micro-batch (per iteration: OPTIMIZER) */
  sc_work_where where;
} sc_work_op;

/* One collective entry; the comm layer maps group onto the topology's tiers. */
typedef struct sc_work_coll {
  sc_coll_kind kind;
  sc_group_kind group; /* TP, CP, DP or PP (PP: the tied-embedding gradient all-reduce
                          between the first and last stage, nranks 2; see below); ETP, EP,
                          EDP in mixture-of-experts layers */
  uint32_t nranks;     /* group size (tp, cp, dp, etp, ep, edp, or 2 for the embedding
                          group) */
  double bytes;        /* per rank, nccl-tests convention (see the top of this file) */
  sc_dtype dtype;
  sc_phase phase;
  uint32_t repeat;
  sc_work_where where;
  /* Can be hidden behind compute when the matching switch is on: TP collectives under
   * overlap_tp_comm, DP gradient reduction under overlap_grad_reduce (overlaps the
   * backward), distributed-optimizer parameter all-gather under overlap_param_gather
   * (overlaps the next forward), CP K/V exchange always (Megatron overlaps the ring
   * steps with attention). The flag is already resolved against the sc_parallel switches:
   * 1 = this instance may overlap, 0 = it is exposed. */
  int overlappable;
  /* Which part of the DP x CP group a DP collective spans (sc_dp_subgroup): the whole
   * group, the shard (its innermost sc_parallel_shard_ranks ranks) or the replicas of one
   * shard (every shard_size-th rank: HSDP's cross-shard all-reduce). 0 for other groups. */
  uint32_t subgroup;
  char label[32];      /* "attn_proj.rs", "mlp_fc1.ag", "dp.grad_rs", ... */
  /* Transformer Engine's userbuffers overlap of a TP collective with one GEMM (with
   * overlap_tp_comm and sequence parallelism; docs/schedule.md, "TP/CP overlap"): how
   * (sc_ub_method; SC_UB_NONE: not paired, the collective may hide under the pass's
   * compute as a whole) and with which GEMM (ub_op: its index in the same list's ops; -1
   * when not paired). */
  uint32_t ub_method;
  int32_t ub_op;
} sc_work_coll;

/* How Transformer Engine overlaps a TP collective with its GEMM (initialize_ub's methods):
 * RING_EXCHANGE splits the GEMM into tp pieces fed by point-to-point copies; PIPELINE splits
 * it into chunks whose reduce-scatters run on a few SMs beside the next chunk; BULK runs
 * the whole collective on a few SMs beside the whole GEMM. */
typedef enum {
  SC_UB_NONE = 0,
  SC_UB_RING_EXCHANGE = 1,
  SC_UB_PIPELINE = 2,
  SC_UB_BULK = 3
} sc_ub_method;

typedef enum {
  SC_DP_WHOLE = 0,  /* every rank of the DP x CP group */
  SC_DP_SHARD,      /* the ranks one shard of the model states spans */
  SC_DP_REPLICA     /* one rank of each shard group: the replicas of one shard */
} sc_dp_subgroup;

#define SC_WORK_MAX_OPS 96
#define SC_WORK_MAX_COLLS 32

/* A fixed-capacity list (no allocation: sweeps call sc_workload_stage very often). */
typedef struct sc_work_list {
  uint32_t nops;
  uint32_t ncolls;
  sc_work_op ops[SC_WORK_MAX_OPS];
  sc_work_coll colls[SC_WORK_MAX_COLLS];
} sc_work_list;

/* Everything one pipeline stage's chunk does.
 *
 * Collectives modelled:
 *   TP without sequence parallelism: all-reduce of the s·b·h activation after each
 *     row-parallel linear in FWD (attention projection, MLP fc2) and after each
 *     column-parallel linear's dgrad in BWD (QKV, fc1): 2 per layer per direction.
 *   TP with sequence parallelism: all-gather before each column-parallel linear and
 *     reduce-scatter after each row-parallel linear in FWD; the mirror in BWD (plus the
 *     re-gather of the saved sequence-sharded input for the wgrad, as Megatron does).
 *   Vocabulary-parallel embedding: all-reduce (SP: reduce-scatter) of the embedding output
 *     in FWD; output layer: cross-entropy's three fp32 all-reduces of s·b values (max,
 *     sum of exponentials, target logit) in FWD.
 *   CP: modelled as an all-gather of the chunk's K and V over the cp ranks in FWD (equal in
 *     bytes to Megatron's cp-1 ring P2P steps, overlappable) and in BWD as a re-gather of
 *     K/V plus a reduce-scatter of dK/dV.
 *   DP (per iteration, in per_iter): gradient reduce-scatter (distributed optimizer) or
 *     all-reduce of the chunk's local parameters in fp32 (Megatron reduces main_grad in
 *     fp32 for bf16 training: --accumulate-allreduce-grads-in-fp32), tagged SC_PHASE_BWD;
 *     with the distributed optimizer, the all-gather of updated parameters in the model
 *     dtype, tagged SC_PHASE_FWD (it precedes the next iteration's forward).
 *   Sharded data parallelism (sc_parallel.zero_stage; S = the shard's ranks, R = dp*cp/S
 *     replicas): ZeRO-1 reduce-scatters the fp32 gradients over the shard and all-gathers
 *     the parameters once an iteration, as above; ZeRO-2 reduce-scatters each layer's
 *     gradients during every micro-batch's backward (per_micro[BWD], label zero.grad_rs);
 *     ZeRO-3 / FSDP also all-gathers each layer's parameters before its forward and again
 *     before its backward (per_micro[FWD] and [BWD], zero.param_ag) and has no
 *     per-iteration gather. With R > 1 (HSDP) the shard's gradients are all-reduced across
 *     the replicas once an iteration (dp.grad_ar_replicas). Gathers are overlappable under
 *     overlap_param_gather (FSDP's prefetch), gradient reductions under overlap_grad_reduce.
 *   Tied embeddings with pp > 1: all-reduce of the embedding gradient between the first
 *     and last stages (group PP, nranks 2), in per_iter on both of those stages.
 *   DualPipe: each stage's two copies (ranks s and pp-1-s) all-reduce their gradients
 *     (the optimizer's shard of them with sharding) between them (group PP, nranks 2,
 *     dualpipe.copy_grad_ar), in per_iter.
 *   PP point-to-point: not a list entry; p2p_*_bytes below.
 *
 * MoE layer (a model with num_experts > 0; its layers that sc_model_layer_is_moe names;
 * Megatron-Core's MoELayer with the all-to-all token dispatcher and "parallel folding": the
 * attention runs on TP x CP x DP as above, the experts on the same GPUs as ETP x EP x EDP,
 * ETP innermost, then EP, then EDP, within one pipeline stage). Its MLP becomes, per GPU,
 * with N = T_sp tokens (sequence parallelism is required with tp > 1), k = top_k, E_l =
 * num_experts/ep local experts, load = moe_imbalance (capped by capacity_factor when set):
 *   router GEMM N x E x h, top-k softmax over N x E ("softmax" family), permute (a copy of
 *   the N k token rows: memcpy of N k h bytes-per-element), dispatch all-to-all over EP of
 *   N k load h elements (the most loaded rank's share; nccl-tests size: the send buffer),
 *   all-gather over ETP of the R = N k etp load token rows (etp > 1), the E_l experts as
 *   batched GEMMs of t_e = ceil(R / E_l) tokens each (fc1 E_l x t_e x fe1/etp x h, the
 *   activation, fc2 E_l x t_e x h x fe/etp), reduce-scatter over ETP, combine all-to-all,
 *   unpermute (a copy), and the shared experts (shared_experts x expert_ffn_hidden wide)
 *   as a dense MLP split over TP with its own SP gather and reduce-scatter. Backward
 *   mirrors it (dgrad and wgrad per GEMM; two all-to-alls, the ETP pair). The EP and ETP
 *   collectives are per micro-batch and count as TP-lane communication (exposed unless
 *   overlap_tp_comm). Per iteration the routed experts' gradients (expert_params) are
 *   all-reduced, or reduce-scattered and their parameters all-gathered with the
 *   distributed optimizer, over EDP = tp*cp*dp/(ep*etp) ranks (group SC_GROUP_EDP); the
 *   rest over DP x CP as above. ZeRO-2/3 and shard_size are refused with experts.
 */
typedef struct sc_stage_work {
  uint32_t stage;            /* pipeline rank, 0 .. pp-1 */
  uint32_t chunk;            /* virtual chunk, 0 .. virtual_stages-1 (model chunk index
                                chunk*pp + stage, Megatron interleaving) */
  uint32_t layer_first;      /* index of the chunk's first transformer layer */
  uint32_t layers;           /* transformer layers in this chunk */
  int has_embedding;         /* the first chunk of the model (stage 0, chunk 0) */
  int has_output;            /* the last chunk (stage pp-1, chunk v-1): final norm, logits,
                                cross-entropy */
  uint32_t microbatches;     /* per iteration: global_batch / (micro_batch * dp) */
  int64_t vocab_padded;      /* vocabulary padded to a multiple of 128 * tp (Megatron
                                --make-vocab-size-divisible-by 128, times tp) */
  int64_t params;            /* parameters this GPU holds for this chunk (after TP) */
  int64_t expert_params;     /* of which routed-expert parameters (MoE layers: after EP and
                                ETP), reduced over the EDP group; 0 for a dense model */

  /* Per micro-batch: [SC_PHASE_FWD], [SC_PHASE_BWD], [SC_PHASE_RECOMPUTE] (empty without
   * recomputation). Index [SC_PHASE_OPTIMIZER] is unused (empty). */
  sc_work_list per_micro[SC_PHASE_COUNT];
  /* Per iteration: optimizer step ops (phase OPTIMIZER) and DP / embedding-group
   * collectives (phases as described above). */
  sc_work_list per_iter;

  /* Pipeline point-to-point per micro-batch, bytes per message (0 when there is no
   * neighbour in that direction): the activation sent to the next chunk in FWD and the
   * gradient sent to the previous chunk in BWD: s/cp · b · h elements of the model dtype,
   * divided by tp with sequence parallelism (each TP rank sends its sequence shard) or,
   * without it, by Megatron's scatter-gather optimisation (also ÷ tp, then an all-gather
   * inside the receiving node that is not modelled). */
  double p2p_send_fwd_bytes; /* to the next chunk, after FWD */
  double p2p_recv_fwd_bytes; /* from the previous chunk, before FWD */
  double p2p_send_bwd_bytes; /* to the previous chunk, after BWD */
  double p2p_recv_bwd_bytes; /* from the next chunk, before BWD */
  sc_dtype p2p_dtype;

  /* Model FLOPs on this GPU (matmuls, see the convention at the top) per micro-batch for
   * FWD, BWD and RECOMPUTE; [SC_PHASE_OPTIMIZER] is 0. gemm_flops is the part of flops done
   * by "gemm"-family entries (all of it except flash-attention kernels). */
  double flops[SC_PHASE_COUNT];
  double gemm_flops[SC_PHASE_COUNT];
} sc_stage_work;

/* Check that (m, p) is a configuration Megatron-LM can run; SC_OK or SC_ECONFIG with
 * err->msg naming the parameter, e.g. "tp: 3 must divide heads (32)". Rules:
 *   - every degree, micro_batch, global_batch, seq_len, virtual_stages >= 1;
 *   - tp divides heads and kv_heads (GQA: each TP rank holds whole KV heads);
 *     tp divides ffn_hidden;
 *   - cp: seq_len divisible by 2*cp when cp > 1 (load-balanced causal chunks);
 *     seq_len/cp divisible by tp with sequence parallelism;
 *   - global_batch divisible by micro_batch * dp;
 *   - pipeline split: layers % pp == 0 unless stage_layers[] gives pp positive counts summing
 *     to layers; with virtual_stages v > 1 the 1F1B-interleaved schedule is required, each
 *     stage's layers divisible by v, and microbatches % pp == 0 (Megatron's requirement);
 *     pp * v <= layers;
 *   - the DualPipe schedule: pp even (>= 2), microbatches even and >= 2 * pp (DeepSeek's
 *     DualPipe.step asserts these);
 *   - seq_len <= m->max_seq is NOT required (training at a different context is allowed);
 *   - sequence_parallel with tp == 1 is accepted (it changes nothing).
 * m must have passed sc_model_finish/sc_model_load. */
int sc_workload_validate(const sc_model *m, const sc_parallel *p, sc_error *err);

/* Layers of pipeline stage `stage` chunk `chunk`: first layer index and count. Validates
 * (as sc_workload_validate) and range-checks stage < pp, chunk < virtual_stages. */
int sc_workload_chunk_layers(const sc_model *m, const sc_parallel *p, uint32_t stage,
                             uint32_t chunk, uint32_t *first, uint32_t *count, sc_error *err);

/* Vocabulary padded as Megatron does: up to a multiple of 128 * tp. */
int64_t sc_workload_padded_vocab(const sc_model *m, const sc_parallel *p);

/* Fill *out for pipeline stage `stage` (< pp) and virtual chunk `chunk` (< virtual_stages).
 * No allocation; *out is caller-owned (about 30 KiB: avoid the stack in deep recursion).
 * Errors: SC_EINVAL for NULL arguments or stage/chunk out of range (naming it), SC_ECONFIG
 * from the validation above. On error *out is unspecified. */
int sc_workload_stage(const sc_model *m, const sc_parallel *p, uint32_t stage, uint32_t chunk,
                      sc_stage_work *out, sc_error *err);

/* ------------------------------------------------------------------------- */
/* Memory per GPU (core/src/memory/)                                         */

/* Bytes one GPU of pipeline stage `stage` holds at its peak (all its virtual chunks).
 * Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
 * Transformer Models", Table 2), times the micro-batches in flight on that stage. */
typedef struct sc_memory {
  int64_t params;                 /* parameters held by this GPU (all chunks) */
  double weights_bytes;           /* model-dtype weights: 2 B/param (bf16/fp16), 4 (fp32) */
  double grads_bytes;             /* fp32 main gradients: 4 B/param */
  double optimizer_bytes;         /* fp32 master + 2 Adam moments: 12 B/param, / dp with the
                                     distributed optimizer */
  double activation_per_micro_bytes; /* one micro-batch's stored activations (all chunks,
                                     the embedding/output terms of the first/last stage
                                     included) */
  double inflight_micro;          /* micro-batches whose activations are live at the peak
                                     (stage-equivalents; fractional when interleaved) */
  double activations_bytes;       /* activation_per_micro_bytes * inflight_micro; when
                                     interleaved, each chunk's times its own micro-batches
                                     in flight (core/src/memory/memory.c) */
  double total_bytes;             /* weights + grads + optimizer + activations */
} sc_memory;

/* Compute *out for stage (< pp). Errors as sc_workload_stage. */
int sc_memory_per_gpu(const sc_model *m, const sc_parallel *p, uint32_t stage, sc_memory *out,
                      sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_WORKLOAD_H */
