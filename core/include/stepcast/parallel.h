/*
 * A parallel training configuration: how a model is split over GPUs (Megatron-LM terms).
 * Shared by the workload decomposition, the communication placement, the schedule and
 * the sweep.
 */
#ifndef STEPCAST_PARALLEL_H
#define STEPCAST_PARALLEL_H

#include <stdint.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SC_RECOMPUTE_NONE = 0, SC_RECOMPUTE_SELECTIVE, SC_RECOMPUTE_FULL } sc_recompute;
/* Pipeline schedules (docs/schedule.md): GPipe; 1F1B (PipeDream-flush); Megatron's
 * interleaved 1F1B; ZB-H1 (Qi et al. 2023, zero bubble: the backward split into B and W,
 * 1F1B's peak activation memory); DualPipe (DeepSeek-V3, Sec. 3.2.1: bidirectional, two
 * stage copies per rank, needs an even pp and at least 2*pp micro-batches, an even number). */
typedef enum {
  SC_SCHED_GPIPE = 0,
  SC_SCHED_1F1B,
  SC_SCHED_INTERLEAVED,
  SC_SCHED_ZB_H1,
  SC_SCHED_DUALPIPE
} sc_schedule_kind;

/* Parallel groups, for placement and for tagging collectives. */
typedef enum {
  SC_GROUP_TP = 0, /* tensor parallel (with sequence parallel when enabled) */
  SC_GROUP_CP,     /* context parallel */
  SC_GROUP_DP,     /* data parallel */
  SC_GROUP_PP,     /* pipeline parallel (point-to-point between neighbouring stages) */
  SC_GROUP_COUNT,  /* the groups sc_parallel.order places: TP, CP, DP, PP */
  /* Mixture-of-experts layers fold the same tp*cp*dp GPUs of a pipeline stage into
   * ETP x EP x EDP, innermost first (Megatron-Core's "parallel folding"): */
  SC_GROUP_ETP = SC_GROUP_COUNT, /* expert tensor parallel: etp consecutive ranks */
  SC_GROUP_EP,     /* expert parallel: ep ranks, every etp-th (the all-to-all group) */
  SC_GROUP_EDP,    /* expert data parallel: every (etp*ep)-th rank, tp*cp*dp/(etp*ep) of
                      them (the expert parameters' gradient group) */
  SC_GROUP_ALL     /* all group kinds */
} sc_group_kind;

typedef struct sc_parallel {
  uint32_t tp, pp, dp, cp;        /* degrees; gpus = tp * pp * dp * cp */
  uint32_t micro_batch;           /* sequences per micro-batch b */
  uint32_t global_batch;          /* sequences per iteration B (= b * dp * microbatches) */
  uint32_t seq_len;               /* tokens per sequence s */
  uint32_t virtual_stages;        /* model chunks per pipeline rank (interleaved), >= 1 */
  sc_schedule_kind schedule;
  sc_recompute recompute;
  int sequence_parallel;          /* Megatron sequence parallelism (needs tp > 1 to matter) */
  int distributed_optimizer;      /* optimizer state sharded across dp (ZeRO-1 style) */
  /* Sharded data parallelism (Rajbhandari et al. 2020, ZeRO; PyTorch FSDP), over the DP x CP
   * group or, with shard_size, over its innermost shard_size ranks (HSDP: replicated across
   * the (dp*cp)/shard_size groups):
   *   0  none (the distributed_optimizer switch alone: 1 = ZeRO-1 as Megatron's distributed
   *      optimizer does it: full fp32 gradients reduce-scattered once an iteration),
   *   1  ZeRO-1 (the same as distributed_optimizer),
   *   2  ZeRO-2: the gradients sharded too, reduce-scattered during every micro-batch's
   *      backward (DeepSpeed's stage 2),
   *   3  ZeRO-3 / FSDP: the parameters sharded as well, all-gathered layer by layer before
   *      every forward and every backward, the gradients reduce-scattered layer by layer.
   * sc_parallel_zero() gives the effective stage. docs/schedule.md, "Sharded data
   * parallelism". */
  uint32_t zero_stage;
  uint32_t shard_size;            /* ranks a shard spans (HSDP); 0 = the whole DP x CP group */
  int flash_attention;            /* fused flash attention vs unfused softmax path */
  sc_dtype dtype;                 /* compute dtype of activations and GEMMs (bf16, fp16, ...) */
  /* Placement order of groups over ranks, innermost first; Megatron default: TP, CP, DP, PP. */
  sc_group_kind order[SC_GROUP_COUNT];
  /* Overlap switches (Megatron-LM flags of the same meaning). */
  int overlap_grad_reduce;        /* DP gradient reduction overlapped with backward */
  int overlap_param_gather;       /* distributed-optimizer parameter all-gather with forward */
  int overlap_tp_comm;            /* TP communication overlapped with GEMMs */
  /* Uneven pipeline splits: layers per stage when stage_layers[0] != 0 (pp entries). */
  uint32_t stage_layers[256];
  /* The vocabulary is padded to a multiple of this times tp (Megatron-LM's
   * make_vocab_size_divisible_by); 0 = Megatron's default, 128. A software stack that does
   * not pad (PyTorch eager: 1) sets it (stepcast/stack.h). */
  uint32_t vocab_divisible_by;
  /* The precision gradients are accumulated in and reduced over data parallelism (mixed
   * precision only): SC_DTYPE_FP32 (0, the default) = fp32 main gradients, 4 B a parameter
   * (Megatron-LM's --accumulate-allreduce-grads-in-fp32, which it forces for bf16); bf16 or
   * fp16 = gradients kept and reduced in that type, 2 B (Megatron-Core's DDP
   * grad_reduce_in_fp32 = False; NeMo's optim.grad_sync_dtype). */
  sc_dtype grad_reduce_dtype;
  /* Mixture-of-experts layers (a model with num_experts > 0): expert parallel degree (the
   * routed experts split over ep ranks) and expert tensor parallel degree (each expert's
   * MLP split over etp ranks); 0 = 1. ep * etp divides tp * cp * dp: the MoE layers use the
   * attention layers' GPUs as ETP x EP x EDP (stepcast/workload.h). */
  uint32_t ep, etp;
  /* Model states as PyTorch's automatic mixed precision keeps them (torch.autocast with a
   * GradScaler or bf16, DistributedDataParallel, torch.optim Adam/AdamW) instead of
   * Megatron's mixed-precision layout: fp32 weights (4 B a parameter) and the fp16/bf16
   * copies autocast makes of them for the GEMMs, cached and saved for the backward (2 B),
   * fp32 gradients (4 B) and, without ZeRO on more than one rank, DDP's gradient buckets
   * beside them (4 B: gradient_as_bucket_view is False by default), Adam's two fp32 moments
   * (8 B: no separate master copy); 22 B against Megatron's 18. Sources: PyTorch docs,
   * torch.amp ("cache_enabled ... the weight cache inside autocast", default True) and
   * torch.nn.parallel.DistributedDataParallel (gradient_as_bucket_view: "the saved memory
   * size will be equal to the total gradients size"). Mixed precision only; 0 = Megatron's
   * layout. A stack that trains this way sets it (stepcast/stack.h, amp_layout). */
  int amp_layout;
} sc_parallel;

/* Expert parallel and expert tensor parallel degrees (0 read as 1), and the expert data
 * parallel degree tp*cp*dp / (ep*etp) (0 when it does not divide). */
static inline uint32_t sc_parallel_ep(const sc_parallel *p) { return p->ep ? p->ep : 1u; }
static inline uint32_t sc_parallel_etp(const sc_parallel *p) { return p->etp ? p->etp : 1u; }
static inline uint32_t sc_parallel_edp(const sc_parallel *p) {
  uint64_t g = (uint64_t)p->tp * p->cp * p->dp, e = (uint64_t)sc_parallel_ep(p) * sc_parallel_etp(p);
  return e && g % e == 0 ? (uint32_t)(g / e) : 0u;
}

/* Names as the CLI, job files, validation CSVs and reports spell them: recompute "none",
 * "selective", "full" ("?" outside the enum). The parse functions accept exactly those,
 * dtype names as sc_dtype_name spells them, and schedules "gpipe", "1f1b", "interleaved"
 * (or sc_schedule_kind_name's "interleaved-1f1b"), "zb-h1", "dualpipe"; SC_OK or
 * SC_EINVAL. */
const char *sc_recompute_name(sc_recompute r);
int sc_recompute_parse(const char *s, sc_recompute *out);
int sc_schedule_kind_parse(const char *s, sc_schedule_kind *out);
int sc_dtype_parse(const char *s, sc_dtype *out);

/* Fill p with the defaults: every degree 1, micro_batch 1, global_batch 1, seq_len 2048,
 * virtual_stages 1, 1F1B, no recomputation, flash attention on, bf16, order TP,CP,DP,PP,
 * no overlap, even split, no sharding beyond distributed_optimizer (zero_stage 0). */
void sc_parallel_defaults(sc_parallel *p);

/* The effective ZeRO stage: zero_stage, or 1 for distributed_optimizer alone. */
static inline uint32_t sc_parallel_zero(const sc_parallel *p) {
  return p->zero_stage > 0 ? p->zero_stage : (p->distributed_optimizer ? 1u : 0u);
}

/* Ranks the model states are sharded over: shard_size, or the whole DP x CP group; 1 when
 * nothing is sharded. */
static inline uint32_t sc_parallel_shard_ranks(const sc_parallel *p) {
  if (sc_parallel_zero(p) == 0) return 1;
  return p->shard_size > 0 ? p->shard_size : p->dp * p->cp;
}

/* Bytes of one gradient element as accumulated and reduced (grad_reduce_dtype). */
static inline double sc_parallel_grad_bytes(const sc_parallel *p) {
  return p->grad_reduce_dtype == SC_DTYPE_FP32 ? 4.0 : 2.0;
}

/* Number of micro-batches per iteration: global_batch / (micro_batch * dp). */
static inline uint32_t sc_parallel_microbatches(const sc_parallel *p) {
  uint64_t per = (uint64_t)p->micro_batch * p->dp;
  return per ? (uint32_t)(p->global_batch / per) : 0;
}

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_PARALLEL_H */
