/* Memory per GPU against hand-computed values: Korthikanti et al. 2022 Table 2 activation
 * formulas for a GPT-shaped model, the embedding/output terms of Sec. 4.3, micro-batches in
 * flight for 1F1B / interleaved / GPipe, and the Megatron bytes-per-parameter of model
 * states with and without the distributed optimizer; the overhead outside them (workspaces,
 * allocator reserve, CUDA context, NCCL and NVLS buffers, userbuffers) and the refusal
 * margin (stepcast/memory.h). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/memory.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

/* GPT-shaped: h = 1024, a = 16 (d = 64), f = 4h, 8 layers, V = 51200 (a multiple of
 * 128*tp up to tp = 8: no padding), learned positions up to 2048, tied, biases. */
static sc_model gpt(void) {
  sc_model m;
  sc_error err;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "gpt-mem");
  m.layers = 8;
  m.hidden = 1024;
  m.ffn_hidden = 4096;
  m.heads = 16;
  m.kv_heads = 16;
  m.vocab = 51200;
  m.max_seq = 2048;
  m.activation = SC_ACT_GELU;
  m.norm = SC_NORM_LAYERNORM;
  m.position = SC_POS_LEARNED;
  m.tied_embeddings = 1;
  m.linear_bias = 1;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_OK);
  return m;
}

/* s = 2048, b = 2, pp = 2 (4 layers per stage), 4 micro-batches, unfused attention. */
static sc_parallel base(uint32_t tp) {
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.tp = tp;
  p.pp = 2;
  p.micro_batch = 2;
  p.global_batch = 8;
  p.seq_len = 2048;
  p.flash_attention = 0;
  return p;
}

static const double S = 2048, B = 2, H = 1024, A = 16, V = 51200;
#define SBH (S * B * H)

/* Per-micro activation bytes of stage 0 (4 layers + the embedding dropout mask). */
static double stage0(const sc_model *m, const sc_parallel *p) {
  sc_memory mem;
  sc_error err;
  int rc = sc_memory_per_gpu(m, p, 0, &mem, &err);
  ck_assert_msg(rc == SC_OK, "%s", err.msg);
  return mem.activation_per_micro_bytes;
}

START_TEST(test_table2) {
  sc_model m = gpt();
  double as_h = 5.0 * A * S / H; /* 5as/h = 160 */
  double t = 4;
  struct {
    uint32_t tp;
    int sp;
    sc_recompute rc;
    double per_layer; /* Korthikanti et al. 2022, Table 2 */
    double emb;       /* the embedding dropout mask, sbh (/t with SP) */
  } rows[] = {
      {1, 0, SC_RECOMPUTE_NONE, SBH * (34 + as_h), SBH},
      {4, 0, SC_RECOMPUTE_NONE, SBH * (10 + 24 / t + as_h / t), SBH},
      {4, 1, SC_RECOMPUTE_NONE, SBH / t * (34 + as_h), SBH / t},
      {4, 0, SC_RECOMPUTE_SELECTIVE, SBH * (10 + 24 / t), SBH},
      {4, 1, SC_RECOMPUTE_SELECTIVE, SBH * 34 / t, SBH / t},
      {4, 0, SC_RECOMPUTE_FULL, 2 * SBH, SBH},
      {4, 1, SC_RECOMPUTE_FULL, 2 * SBH / t, SBH / t},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sc_parallel p = base(rows[i].tp);
    p.sequence_parallel = rows[i].sp;
    p.recompute = rows[i].rc;
    double want = 4 * rows[i].per_layer + rows[i].emb;
    ck_assert_msg(fabs(stage0(&m, &p) / want - 1.0) < 1e-12, "row %zu: %.6e vs %.6e", i,
                  stage0(&m, &p), want);
  }
}
END_TEST

START_TEST(test_output_and_flash) {
  sc_model m = gpt();
  sc_memory mem;
  sc_error err;
  /* Last stage with SP, t = 4, selective: 4 layers * 34 sbh/t + 4sbh/t (1 + v/h). */
  sc_parallel p = base(4);
  p.sequence_parallel = 1;
  p.recompute = SC_RECOMPUTE_SELECTIVE;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 1, &mem, &err), SC_OK);
  double want = 4 * SBH * 34 / 4 + 4 * SBH / 4 * (1 + V / H);
  ck_assert_double_eq_tol(mem.activation_per_micro_bytes / want, 1.0, 1e-12);
  ck_assert_double_eq(mem.inflight_micro, 1.0);
  ck_assert_double_eq_tol(mem.activations_bytes / want, 1.0, 1e-12);
  /* Flash attention, tp = 1: no score matrix; the fp32 log-sum-exp 4 b a s per layer. */
  p = base(1);
  p.flash_attention = 1;
  want = 4 * (34 * SBH + 4 * B * A * S) + SBH;
  ck_assert_double_eq_tol(stage0(&m, &p) / want, 1.0, 1e-12);
  /* fp8: the QKV, projection and fc1 inputs (2 sbh each) and the fc2 input (8 sbh) are kept
   * in 1 byte: 34 - 1 - 1 - 1 - 4 = 27 sbh per layer; the rest stays bf16. */
  p.dtype = SC_DTYPE_FP8;
  want = 4 * (27 * SBH + 4 * B * A * S) + SBH;
  ck_assert_double_eq_tol(stage0(&m, &p) / want, 1.0, 1e-12);
  /* Full recomputation keeps the bf16 layer input whatever the compute dtype. */
  p.recompute = SC_RECOMPUTE_FULL;
  want = 4 * 2 * SBH + SBH;
  ck_assert_double_eq_tol(stage0(&m, &p) / want, 1.0, 1e-12);
}
END_TEST

START_TEST(test_gqa_swiglu) {
  /* h 1024, 16 heads of 64, 4 KV heads, ffn 2816, SwiGLU, RMSNorm, RoPE, 2 layers on one
   * stage, s 2048, b 2 (sb = 4096), tp 1, unfused, no recomputation. Per layer:
   *   replicated: norm1, QKV, norm2, fc1 inputs (2 B each) + 2 masks (1 B) = 10 sbh
   *   split: 2 B * sb * (Q,K (16+4)*64 + V 4*64 + proj in 1024 + fc1 out 2*2816 + fc2 in 2816)
   *        = 2 * 4096 * 11008 = 90177536
   *   scores: 5 a s^2 b = 5 * 16 * 2048^2 * 2 = 671088640
   * Output layer (one stage: last too): 2 B * sbh * 2 + 4 B * sb * V (V 32000 padded to
   * 32000, a multiple of 128). Embedding: sbh mask. */
  sc_model m;
  sc_error err;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "llama-mem");
  m.layers = 2;
  m.hidden = 1024;
  m.ffn_hidden = 2816;
  m.heads = 16;
  m.kv_heads = 4;
  m.vocab = 32000;
  m.max_seq = 4096;
  m.activation = SC_ACT_SWIGLU;
  m.norm = SC_NORM_RMSNORM;
  m.position = SC_POS_ROPE;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_OK);
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.micro_batch = 2;
  p.global_batch = 2;
  p.seq_len = 2048;
  p.flash_attention = 0;
  sc_memory mem;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  double layer = 10.0 * 4096 * 1024 + 90177536.0 + 671088640.0;
  double want = 2 * layer + 4096.0 * 1024 + 2 * 2.0 * 4096 * 1024 + 4.0 * 4096 * 32000;
  ck_assert_double_eq_tol(mem.activation_per_micro_bytes / want, 1.0, 1e-12);
}
END_TEST

START_TEST(test_inflight) {
  sc_model m = gpt();
  sc_memory mem;
  sc_error err;
  sc_parallel p = base(1);
  p.pp = 4;
  p.global_batch = 16; /* 8 micro-batches */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 4.0); /* 1F1B: pp - stage */
  ck_assert_double_eq_tol(mem.activations_bytes, 4.0 * mem.activation_per_micro_bytes, 1e-3);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 3, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 1.0);
  p.global_batch = 4; /* 2 micro-batches: never more than the iteration has */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 2.0);
  p.global_batch = 16;
  p.schedule = SC_SCHED_GPIPE;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 2, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 8.0);
  /* Interleaved, p = 4, v = 2: first stage p (1 + (p-1)/(pv)) = 5.5, Korthikanti Sec. 4.2.3;
   * last stage (0 + (v-1) p + 1) / v = 2.5. */
  p.schedule = SC_SCHED_INTERLEAVED;
  p.virtual_stages = 2;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 5.5);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 3, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 2.5);
  /* ... and each chunk its own micro-batches: the forwards go chunk by chunk in groups of
   * pp = 4 (chunk (k / 4) % 2 for the k-th). One layer per chunk, unfused attention, tp 1:
   * 194 sbh a layer (34 + 5as/h = 34 + 160). Last stage, 5 forwards: chunk 0 holds 4, chunk
   * 1 (with the output layer: 4sbh + 4sbv) 1: 5 x 194 sbh + 4 sbh + 4 sbv. */
  ck_assert_double_eq_tol(mem.activations_bytes, 5 * 194 * SBH + 4 * SBH + 4 * S * B * V, 1e-3);
  /* First stage, 11 forwards: chunk 0 (with the embedding's 1-byte mask, sbh) holds 4 + 3 =
   * 7, chunk 1 4: 11 x 194 sbh + 7 sbh. */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.activations_bytes, 11 * 194 * SBH + 7 * SBH, 1e-3);
}
END_TEST

/* ZB-H1 and DualPipe. gpt(), tp 1, unfused attention, pp 4 (2 layers a stage), 8
 * micro-batches of 2: a layer stores 194 sbh (34 + 5as/h), and a micro-batch whose W pass is
 * deferred holds 32 sbh of it (Qi et al.'s M_W: the QKV, projection, fc1 and fc2 inputs, 2 +
 * 2 + 2 + 8, and their output gradients, 6 + 2 + 8 + 2); the output layer's W holds its
 * input and the logits' gradient, 2 sbh + 2 sbv. */
START_TEST(test_zb_dualpipe) {
  sc_model m = gpt();
  sc_memory mem, ref;
  sc_error err;
  sc_parallel p = base(1);
  p.pp = 4;
  p.global_batch = 16;
  p.schedule = SC_SCHED_ZB_H1;
  /* stage 0 defers nothing: 1F1B's 4 micro-batches of 389 sbh (the embedding's mask) */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 4.0);
  ck_assert_double_eq_tol(mem.activations_bytes, 4 * 389 * SBH, 1e-3);
  /* stage 1 defers one W: after its last steady forward 3 micro-batches wait for B and one
   * for W: 3 x 388 + 64 sbh */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 1, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 3.0);
  ck_assert_double_eq_tol(mem.activations_bytes, (3 * 388 + 64) * SBH, 1e-3);
  /* the last stage defers three, each with the output layer's W: (388 + 4) sbh + 4 sbv for
   * the micro-batch in its backward, 3 x ((64 + 2) sbh + 2 sbv) */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 3, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 1.0);
  ck_assert_double_eq_tol(mem.activations_bytes, (392 + 3 * 66) * SBH + 10 * S * B * V, 1e-3);
  /* full recomputation keeps 2 sbh a layer, less than a deferred W's 32 sbh: stage 1's peak
   * is then its last steady step, 2 x 4 sbh + 64 sbh + 64 sbh (its W before the next one) */
  p.recompute = SC_RECOMPUTE_FULL;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 1, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.activations_bytes, 136 * SBH, 1e-3);
  p.recompute = SC_RECOMPUTE_NONE;

  /* DualPipe: rank 0 holds stages 0 and 3 (weights, gradients and optimizer states of both)
   * and 4 micro-batches of stage 0 with 1 of stage 3: pp + 1 = 5 in all */
  p.schedule = SC_SCHED_DUALPIPE;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.inflight_micro, 2.5);
  ck_assert_double_eq_tol(mem.activations_bytes, (4 * 389 + 392) * SBH + 4 * S * B * V, 1e-3);
  sc_parallel q = p;
  q.schedule = SC_SCHED_1F1B;
  sc_memory s0, s3;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &q, 0, &s0, &err), SC_OK);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &q, 3, &s3, &err), SC_OK);
  ck_assert_int_eq(mem.params, s0.params + s3.params);
  ck_assert_double_eq_tol(mem.weights_bytes, s0.weights_bytes + s3.weights_bytes, 1e-3);
  ck_assert_double_eq_tol(mem.grads_bytes, s0.grads_bytes + s3.grads_bytes, 1e-3);
  ck_assert_double_eq_tol(mem.optimizer_bytes, s0.optimizer_bytes + s3.optimizer_bytes, 1e-3);
  /* the last rank holds the same two stages */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 3, &ref, &err), SC_OK);
  ck_assert_double_eq_tol(ref.total_bytes, mem.total_bytes, 1e-3);
  /* rank 1: stages 1 and 2, 3 + 2 micro-batches of 388 sbh, twice a middle stage's states */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 1, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.activations_bytes, 5 * 388 * SBH, 1e-3);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &q, 1, &s0, &err), SC_OK);
  ck_assert_int_eq(mem.params, 2 * s0.params);
  /* what DualPipe cannot run is refused, naming the parameter */
  p.global_batch = 12; /* 6 micro-batches < 2 pp */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "global_batch"));
  p.global_batch = 18; /* 9 */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "even number of micro-batches"));
}
END_TEST

/* A GPU device of that name (the overhead reads its name and kind only). */
static sc_device gpu_named(const char *name) {
  sc_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "%s", name);
  snprintf(d.kind, sizeof d.kind, "gpu");
  d.mem_bytes = 80e9;
  return d;
}

#define MIB 1048576.0
#define GIB 1073741824.0

START_TEST(test_overhead) {
  sc_model m = gpt(); /* tied embeddings */
  sc_memory_overhead o;
  sc_memory mem;
  sc_error err;
  sc_parallel p = base(1); /* pp 2, tp 1, dp 1 */
  sc_device h100 = gpu_named("h100-sxm5-80gb"), a100 = gpu_named("a100-sxm4-80gb");
  /* H100 (sm90), no stack: PyTorch's cuBLAS workspace 4096 x 8 KiB = 32 MiB + cuBLASLt 1 MiB
   * = 34603008 B; reserve 0.05; context 0.5 GiB; communicators: the pipeline's send/recv and
   * the tied-embedding pair (no TP, no DP): 2 x 0.6 GiB. */
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &h100, NULL, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 34603008.0);
  ck_assert_double_eq(o.frag_fraction, 0.05);
  ck_assert_double_eq(o.context_bytes, 0.5 * GIB);
  ck_assert_uint_eq(o.communicators, 2);
  ck_assert_uint_eq(o.nvls_communicators, 0);
  ck_assert_double_eq_tol(o.comm_bytes, 1.2 * GIB, 1e-3);
  /* The nested figures of stage 0: allocated = states + activations + W, reserved = x 1.05,
   * device = + 0.5 GiB + 1.2 GiB. */
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  double alloc = mem.total_bytes + 34603008.0;
  ck_assert_double_eq_tol(sc_memory_allocated_bytes(&mem, &o), alloc, 1e-3);
  ck_assert_double_eq_tol(sc_memory_reserved_bytes(&mem, &o), 1.05 * alloc, 1e-3);
  ck_assert_double_eq_tol(sc_memory_device_bytes(&mem, &o), 1.05 * alloc + 1.7 * GIB, 1e-3);
  /* A100 (sm80): ":4096:2:16:8" = 8388608 + 131072 = 8519680 B + 1 MiB = 9568256 B; with
   * Transformer Engine (te_workspace) its 4 MiB more: 13762560 B. */
  sc_stack te;
  memset(&te, 0, sizeof te);
  snprintf(te.name, sizeof te.name, "te");
  te.te_workspace = 1;
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &a100, NULL, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 9568256.0);
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &a100, &te, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 13762560.0);
  /* H100, TE, tp 4 with sequence parallelism and TP overlap: TE's 32 MiB x 3 streams =
   * 100663296 B on top of PyTorch's 34603008 B = 135266304 B; 10 userbuffers of s b / cp x h
   * = 2048 x 2 x 1024 elements, bf16: 10 x 2 x 4194304 = 83886080 B. Communicators: TP,
   * the pipeline, the tied pair (dp 1): 3 x 0.6 GiB + the userbuffers. */
  p = base(4);
  p.sequence_parallel = 1;
  p.overlap_tp_comm = 1;
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &h100, &te, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 135266304.0);
  ck_assert_double_eq(o.userbuffer_bytes, 83886080.0);
  ck_assert_uint_eq(o.communicators, 3);
  ck_assert_double_eq_tol(o.comm_bytes, 1.8 * GIB + 83886080.0, 1e-3);
  /* fp8: the six all-gather userbuffers are 1 byte: (6 x 1 + 4 x 2) x 4194304 = 58720256 B */
  p.dtype = SC_DTYPE_FP8;
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &h100, &te, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.userbuffer_bytes, 58720256.0);
  /* NVLS on a DGX H100 (tier 0 nvls, 8 GPUs a node): tp 4 x dp 2 x pp 2 = 16 GPUs; the TP
   * group has 4 members in a node (> 2): 288 MiB more; the DP group 2 (no). Communicators:
   * TP, DP, the pipeline, the tied pair: 4 x 0.6 GiB + 301989888 B. */
  sc_topology dgx;
  ck_assert_msg(sc_topology_load("dgx-h100-superpod", &dgx, &err) == SC_OK, "%s", err.msg);
  p = base(4);
  p.dp = 2;
  p.global_batch = 16;
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &h100, NULL, &dgx, &o, &err), SC_OK);
  ck_assert_uint_eq(o.communicators, 4);
  ck_assert_uint_eq(o.nvls_communicators, 1);
  ck_assert_double_eq_tol(o.comm_bytes, 2.4 * GIB + 301989888.0, 1e-3);
  /* HSDP over the 8 GPUs of one node, shards of 4: the shard group (4 in a node: NVLS) and the
   * replica group (2: none); no pipeline: 2 x 0.6 GiB + 288 MiB. */
  p = base(1);
  p.pp = 1;
  p.dp = 8;
  p.global_batch = 16;
  p.zero_stage = 3;
  p.shard_size = 4;
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &h100, NULL, &dgx, &o, &err), SC_OK);
  ck_assert_uint_eq(o.communicators, 2);
  ck_assert_uint_eq(o.nvls_communicators, 1);
  ck_assert_double_eq_tol(o.comm_bytes, 1.2 * GIB + 288 * MIB, 1e-3);
  /* ROCm: MI300X (gfx942) 128 MiB rocBLAS + 76 MiB hipBLASLt; MI250X 32 + 76 MiB */
  sc_device mi = gpu_named("mi300x");
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &mi, NULL, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 204 * MIB);
  mi = gpu_named("mi250x");
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &mi, NULL, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes, 108 * MIB);
  /* A device that is not a GPU holds none of it */
  sc_device cpu = gpu_named("host-cpu");
  snprintf(cpu.kind, sizeof cpu.kind, "cpu");
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, &cpu, NULL, NULL, &o, &err), SC_OK);
  ck_assert_double_eq(o.workspace_bytes + o.context_bytes + o.comm_bytes + o.frag_fraction, 0);
  ck_assert_int_eq(sc_memory_overhead_of(&m, &p, NULL, NULL, NULL, &o, &err), SC_EINVAL);
  /* Compute capability by name */
  ck_assert_uint_eq(sc_memory_sm_major("h200-sxm-141gb"), 9);
  ck_assert_uint_eq(sc_memory_sm_major("gh200-96gb"), 9);
  ck_assert_uint_eq(sc_memory_sm_major("b200-sxm-180gb"), 10);
  ck_assert_uint_eq(sc_memory_sm_major("a100-sxm4-40gb"), 8);
  ck_assert_uint_eq(sc_memory_sm_major("test-gpu"), 0);
}
END_TEST

/* The refusal margin: past the capacity by more than 5 % of it (80 GB: 84 GB). */
START_TEST(test_refused) {
  ck_assert_int_eq(sc_memory_refused(80e9, 80e9), 0);
  ck_assert_int_eq(sc_memory_refused(84e9, 80e9), 0);
  ck_assert_int_eq(sc_memory_refused(84.01e9, 80e9), 1);
  ck_assert_int_eq(sc_memory_refused(1e15, 0), 0); /* no capacity stated */
}
END_TEST

START_TEST(test_model_states) {
  sc_model m = gpt();
  sc_memory mem;
  sc_error err;
  /* Stage 0 of pp 2, tp 1: 4 layers of 12h^2 + 13h = 12596224 parameters, plus the word
   * (51200 h) and position (2048 h) tables: 104910848. */
  sc_parallel p = base(1);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_int_eq(mem.params, 104910848);
  ck_assert_double_eq(mem.weights_bytes, 2.0 * 104910848);
  ck_assert_double_eq(mem.grads_bytes, 4.0 * 104910848);
  ck_assert_double_eq(mem.optimizer_bytes, 12.0 * 104910848);
  ck_assert_double_eq_tol(mem.total_bytes,
                          18.0 * 104910848 + mem.activations_bytes, 1e-3);
  /* Distributed optimizer over dp = 8: 6 + 12/8 = 7.5 bytes per parameter. */
  p.dp = 8;
  p.global_batch = 64;
  p.distributed_optimizer = 1;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                          7.5 * 104910848, 1e-3);
  /* ZeRO-2 over dp = 8: the gradients sharded too, plus one layer's unsharded (12h^2 + 13h
   * = 12596224 parameters); ZeRO-3: the weights too, plus two gathered layers. */
  p.distributed_optimizer = 0;
  p.zero_stage = 2;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.grads_bytes, 4.0 * (104910848 / 8.0 + 12596224), 1e-3);
  ck_assert_double_eq_tol(mem.weights_bytes, 2.0 * 104910848, 1e-3);
  ck_assert_double_eq_tol(mem.optimizer_bytes, 12.0 * 104910848 / 8.0, 1e-3);
  p.zero_stage = 3;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.weights_bytes, 2.0 * (104910848 / 8.0 + 2.0 * 12596224), 1e-3);
  /* HSDP: shards of 2 ranks: every state divided by 2, not 8 */
  p.shard_size = 2;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.optimizer_bytes, 12.0 * 104910848 / 2.0, 1e-3);
  ck_assert_double_eq_tol(mem.grads_bytes, 4.0 * (104910848 / 2.0 + 12596224), 1e-3);
  /* Gradients kept and reduced in bf16 (Megatron-Core's grad_reduce_in_fp32 = False): 2 B
   * a parameter in place of 4, sharded alike under ZeRO-2; 16 B a parameter unsharded. */
  p = base(1);
  p.grad_reduce_dtype = SC_DTYPE_BF16;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.grads_bytes, 2.0 * 104910848);
  ck_assert_double_eq(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                      16.0 * 104910848);
  p.dp = 8;
  p.global_batch = 64;
  p.zero_stage = 2;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.grads_bytes, 2.0 * (104910848 / 8.0 + 12596224), 1e-3);
  /* PyTorch AMP's layout (amp_layout): 4 B fp32 weight + 2 B autocast copy, 4 B gradient,
   * 8 B moments = 18 B on one rank; DDP's buckets add 4 B a parameter on several ranks
   * (22 B); ZeRO-1 has none (the optimizer's moments sharded: 6 + 4 + 8/8) */
  p = base(1);
  p.amp_layout = 1;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.weights_bytes, 6.0 * 104910848);
  ck_assert_double_eq(mem.grads_bytes, 4.0 * 104910848);
  ck_assert_double_eq(mem.optimizer_bytes, 8.0 * 104910848);
  p.dp = 8;
  p.global_batch = 64;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                      22.0 * 104910848);
  p.distributed_optimizer = 1;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq_tol(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                          11.0 * 104910848, 1e-3);
  /* ... and fp32 training keeps its own 16 B whatever the layout says */
  p = base(1);
  p.amp_layout = 1;
  p.dtype = SC_DTYPE_FP32;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                      16.0 * 104910848);
  /* fp32 training: 4 + 4 + 8 = 16 bytes per parameter. */
  p = base(1);
  p.dtype = SC_DTYPE_FP32;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_double_eq(mem.weights_bytes + mem.grads_bytes + mem.optimizer_bytes,
                      16.0 * 104910848);
  /* Tensor parallel 4: per-GPU layer 12h^2/4 = 3145728, column-parallel biases split
   * (3h/4 + 4h/4 = 1792), row-parallel biases whole (2h = 2048), LayerNorms whole (4h =
   * 4096): 3153664; word table 12800 h, position table whole. */
  p = base(4);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_OK);
  ck_assert_int_eq(mem.params, 4 * 3153664 + 12800 * 1024 + 2048 * 1024);
}
END_TEST

START_TEST(test_errors) {
  sc_model m = gpt();
  sc_memory mem;
  sc_error err;
  sc_parallel p = base(1);
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 2, &mem, &err), SC_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "stage"));
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, NULL, &err), SC_EINVAL);
  p.tp = 3;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "tp"));
  p = base(1);
  p.global_batch = 3;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "global_batch"));
  /* gradients in a type that is not a gradient precision, or below fp32 training's */
  p = base(1);
  p.grad_reduce_dtype = SC_DTYPE_FP8;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "grad_reduce_dtype: fp8 is not fp32, bf16 or fp16"));
  p = base(1);
  p.dtype = SC_DTYPE_FP32;
  p.grad_reduce_dtype = SC_DTYPE_BF16;
  ck_assert_int_eq(sc_memory_per_gpu(&m, &p, 0, &mem, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "needs mixed precision"));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("memory");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_table2);
  tcase_add_test(tc, test_output_and_flash);
  tcase_add_test(tc, test_gqa_swiglu);
  tcase_add_test(tc, test_inflight);
  tcase_add_test(tc, test_zb_dualpipe);
  tcase_add_test(tc, test_model_states);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_overhead);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
