/* Mixture of experts: total and active parameter counts of the shipped MoE models against
 * their published figures, the FLOPs of a MoE layer against a hand computation, the
 * all-to-all's bytes, expert parallelism inside a node priced below the same group across
 * nodes, expert parameters and their gradient group, memory, and every bad key or
 * parameter refused with a message naming it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "predict/compose.h"
#include "sc_config.h"
#include "stepcast/comm.h"
#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"

static sc_stage_work W; /* large: static */

/* A small MoE model: 2 layers, h 256, 4 heads of 64, SwiGLU, 8 experts of width 128, top-2,
 * V 1000 (padded to 1024), untied, no biases. */
static sc_model tiny_moe(void) {
  sc_model m;
  sc_error err;
  memset(&m, 0, sizeof m);
  snprintf(m.name, sizeof m.name, "tiny-moe");
  m.layers = 2;
  m.hidden = 256;
  m.ffn_hidden = 512;
  m.heads = 4;
  m.kv_heads = 4;
  m.vocab = 1000;
  m.max_seq = 4096;
  m.activation = SC_ACT_SWIGLU;
  m.norm = SC_NORM_RMSNORM;
  m.position = SC_POS_ROPE;
  m.num_experts = 8;
  m.top_k = 2;
  m.expert_ffn_hidden = 128;
  sc_error_clear(&err);
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  return m;
}

static sc_parallel par(uint32_t tp, uint32_t dp, uint32_t ep, uint32_t etp) {
  sc_parallel p;
  sc_parallel_defaults(&p);
  p.tp = tp;
  p.dp = dp;
  p.ep = ep;
  p.etp = etp;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  p.global_batch = dp;
  p.seq_len = 128;
  return p;
}

static const sc_work_coll *find_coll(const sc_work_list *l, const char *label) {
  for (uint32_t i = 0; i < l->ncolls; i++)
    if (strcmp(l->colls[i].label, label) == 0) return &l->colls[i];
  return NULL;
}

static const sc_work_op *find_op(const sc_work_list *l, const char *label) {
  for (uint32_t i = 0; i < l->nops; i++)
    if (strcmp(l->ops[i].label, label) == 0) return &l->ops[i];
  return NULL;
}

/* Published totals and active parameters (the model files' header comments cite them),
 * within 2 %: the publishers round, and some truncate (Qwen3-30B-A3B's "3.3B activated" is
 * 3.35B by its config), so half a unit of the last digit is too tight; a wrong expert count,
 * top_k or layer pattern misses by far more (all experts active: 3.5x for Mixtral). */
START_TEST(test_published_params) {
  static const struct {
    const char *name;
    double total, active;
  } pub[] = {
      {"mixtral-8x7b", 46.7e9, 12.9e9},   /* arXiv:2401.04088; HF model card */
      {"mixtral-8x22b", 141e9, 39e9},     /* mistral.ai/news/mixtral-8x22b */
      {"qwen3-235b-a22b", 235e9, 22e9},   /* HF model card; arXiv:2505.09388 */
      {"qwen3-30b-a3b", 30.5e9, 3.3e9},   /* HF model card */
      {"deepseek-v3", 671e9, 37e9},       /* arXiv:2412.19437 */
  };
  for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
    sc_model m;
    sc_error err;
    sc_error_clear(&err);
    ck_assert_msg(sc_model_load(pub[i].name, &m, &err) == SC_OK, "%s", err.msg);
    ck_assert_msg(fabs((double)m.params / pub[i].total - 1.0) <= 0.02,
                  "%s: total %lld, published %.4g", pub[i].name, (long long)m.params,
                  pub[i].total);
    ck_assert_msg(fabs((double)m.active_params / pub[i].active - 1.0) <= 0.02,
                  "%s: active %lld, published %.4g", pub[i].name, (long long)m.active_params,
                  pub[i].active);
  }
  /* the Qwen3 model cards also state the non-embedding parameters: 234B and 29.9B */
  sc_model q;
  sc_error err;
  ck_assert_msg(sc_model_load("qwen3-30b-a3b", &q, &err) == SC_OK, "%s", err.msg);
  double ne = (double)(q.params - 2 * q.vocab * q.hidden);
  ck_assert_msg(fabs(ne / 29.9e9 - 1.0) <= 0.005, "non-embedding %g", ne);
}
END_TEST

/* Mixtral 8x7B by hand: attention 4096*(4096+2*1024) + 4096*4096 = 41943040, one expert
 * 3*4096*14336 = 176160768, router 4096*8 = 32768, norms 2*4096; 32 layers; embeddings
 * 2*32000*4096; final norm 4096. */
START_TEST(test_params_by_hand) {
  sc_model m;
  sc_error err;
  ck_assert_msg(sc_model_load("mixtral-8x7b", &m, &err) == SC_OK, "%s", err.msg);
  int64_t attn = 41943040, ex = 176160768, router = 32768, norms = 8192;
  int64_t emb = 2LL * 32000 * 4096 + 4096;
  ck_assert_int_eq(m.params, 32 * (attn + 8 * ex + router + norms) + emb);
  ck_assert_int_eq(m.active_params, 32 * (attn + 2 * ex + router + norms) + emb);
  /* the tiny model: dense layers would hold 3*256*512; its MoE layers hold 8 experts */
  sc_model t = tiny_moe();
  int64_t tattn = 256 * 768 + 256 * 256, tex = 3 * 256 * 128;
  ck_assert_int_eq(t.params, 2 * (tattn + 8 * tex + 256 * 8 + 512) + 2 * 1000 * 256 + 256);
  ck_assert_int_eq(t.active_params, 2 * (tattn + 2 * tex + 256 * 8 + 512) + 2 * 1000 * 256 + 256);
}
END_TEST

/* DeepSeek-V3 by hand: MLA 7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256 +
 * 128*128*7168 = 187107328, norms 2*7168; dense MLP 3*7168*18432 = 396361728 (3 layers);
 * MoE: router 7168*256 = 1835008, (256 + 1) experts of 3*7168*2048 = 44040192 (58 layers);
 * embeddings 2*129280*7168, final norm 7168. Active: 8 routed + 1 shared. */
START_TEST(test_deepseek_v3_by_hand) {
  sc_model m;
  sc_error err;
  ck_assert_msg(sc_model_load("deepseek-v3", &m, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(m.head_dim, 160);
  ck_assert_int_eq(sc_model_moe_layers(&m, 0, 61), 58);
  int64_t attn = 187107328, norms = 14336, mlp = 396361728, router = 1835008, ex = 44040192;
  int64_t emb = 2LL * 129280 * 7168 + 7168;
  ck_assert_int_eq(m.params, 3 * (attn + norms + mlp) + 58 * (attn + norms + router + 257 * ex) + emb);
  ck_assert_int_eq(m.active_params,
                   3 * (attn + norms + mlp) + 58 * (attn + norms + router + 9 * ex) + emb);
  ck_assert_int_eq(m.params, 671026404352LL);
}
END_TEST

/* Multi-head latent attention's FWD FLOPs by hand (h 256, 4 heads, q_lora 64, kv_lora 32,
 * rope 16, nope 32, v 32; T = 128, tp 1): q_down 2*128*64*256 = 4194304, q_up 2*128*192*64 =
 * 3145728, kv_down 2*128*48*256 = 3145728, kv_up 2*128*256*32 = 2097152, core
 * 2*4*128*128*(48 + 32) = 10485760, projection 2*128*256*128 = 8388608; SwiGLU MLP 512 wide
 * 67108864 + 33554432; 2 layers; logits 2*128*1024*256. */
START_TEST(test_mla_flops_by_hand) {
  sc_model m = tiny_moe();
  sc_error err;
  m.num_experts = m.top_k = m.expert_ffn_hidden = 0;
  m.moe_layer_freq = 0;
  m.moe_imbalance = 0.0;
  m.head_dim = 0;
  m.q_lora_rank = 64;
  m.kv_lora_rank = 32;
  m.qk_rope_head_dim = 16;
  m.qk_nope_head_dim = 32;
  m.v_head_dim = 32;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(m.head_dim, 40);
  sc_parallel p = par(1, 1, 1, 1);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  double attn = 4194304.0 + 3145728 + 3145728 + 2097152 + 10485760 + 8388608;
  ck_assert_double_eq(W.flops[SC_PHASE_FWD], 2.0 * (attn + 67108864.0 + 33554432.0) +
                                                 2.0 * 128 * 1024 * 256);
  const sc_work_op *qu = find_op(&W.per_micro[SC_PHASE_FWD], "q_up");
  ck_assert_ptr_nonnull(qu);
  ck_assert_int_eq(qu->desc.dims[2], 192);
  ck_assert_int_eq(qu->desc.dims[3], 64);
  ck_assert_ptr_null(find_op(&W.per_micro[SC_PHASE_FWD], "qkv"));
  ck_assert_ptr_nonnull(find_op(&W.per_micro[SC_PHASE_BWD], "kv_down.wgrad"));
  /* parameters: the per-GPU count is the model's (pp 1, tp 1), with the two embedding
   * tables padded from 1000 to 1024 rows */
  ck_assert_int_eq(W.params, m.params + 2 * 24 * 256);
  /* tp 2: the up projections split by heads, the down projections whole */
  sc_parallel q = par(2, 1, 1, 1);
  ck_assert_msg(sc_workload_stage(&m, &q, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(find_op(&W.per_micro[SC_PHASE_FWD], "q_up")->desc.dims[2], 96);
  ck_assert_int_eq(find_op(&W.per_micro[SC_PHASE_FWD], "q_down")->desc.dims[2], 64);
  /* bad MLA keys */
  m.v_head_dim = 31;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "'v_head_dim'"));
  m.v_head_dim = 32;
  m.kv_lora_rank = 0;
  ck_assert_int_eq(sc_model_finish(&m, &err), SC_ESPEC);
  ck_assert_ptr_nonnull(strstr(err.msg, "'kv_lora_rank'"));
}
END_TEST

/* FWD model FLOPs of the tiny model on one GPU of ep 2 (T = 128 tokens, 4 local experts,
 * 128 x 2 = 256 routed copies, 64 per expert), by hand:
 *   qkv 2*128*768*256 = 50331648, flash attention 4*1*4*128*128*64 = 16777216,
 *   projection 2*128*256*256 = 16777216, router 2*128*8*256 = 524288,
 *   experts fc1 2*4*64*256*256 = 33554432, fc2 2*4*64*256*128 = 16777216
 *   = 134742016 per layer; 2 layers; logits 2*128*1024*256 = 67108864. */
START_TEST(test_moe_flops_by_hand) {
  sc_model m = tiny_moe();
  sc_parallel p = par(1, 2, 2, 1);
  sc_error err;
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_eq(W.flops[SC_PHASE_FWD], 2.0 * 134742016.0 + 67108864.0);
  /* backward: every GEMM twice (dgrad, wgrad), flash attention's backward 2x its forward */
  ck_assert_double_eq(W.flops[SC_PHASE_BWD],
                      2.0 * (2.0 * (134742016.0 - 16777216.0) + 2.0 * 16777216.0) +
                          2.0 * 67108864.0);
  const sc_work_op *fc1 = find_op(&W.per_micro[SC_PHASE_FWD], "moe_fc1");
  ck_assert_ptr_nonnull(fc1);
  ck_assert_int_eq(fc1->desc.dims[0], 4);   /* local experts */
  ck_assert_int_eq(fc1->desc.dims[1], 64);  /* tokens each */
  ck_assert_int_eq(fc1->desc.dims[2], 256); /* gate and up, 2 x 128 */
  ck_assert_int_eq(fc1->desc.dims[3], 256);
  ck_assert_uint_eq(fc1->repeat, 2);
  /* the dense MLP is gone from MoE layers */
  ck_assert_ptr_null(find_op(&W.per_micro[SC_PHASE_FWD], "mlp_fc1"));
  ck_assert_ptr_nonnull(find_op(&W.per_micro[SC_PHASE_FWD], "moe_router"));
  ck_assert_ptr_nonnull(find_op(&W.per_micro[SC_PHASE_FWD], "moe_permute"));
  ck_assert_ptr_nonnull(find_op(&W.per_micro[SC_PHASE_BWD], "moe_fc1.wgrad"));
  /* balanced routing: the MoE layer's FLOPs are those of a dense MLP k*fe wide plus the
   * router's */
  sc_model d = tiny_moe();
  d.num_experts = d.top_k = d.expert_ffn_hidden = 0;
  d.moe_layer_freq = 0;
  d.moe_imbalance = 0.0;
  d.ffn_hidden = 256;
  ck_assert_msg(sc_model_finish(&d, &err) == SC_OK, "%s", err.msg);
  sc_parallel pd = par(1, 2, 1, 1);
  static sc_stage_work Wd;
  ck_assert_msg(sc_workload_stage(&d, &pd, 0, 0, &Wd, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_eq(W.flops[SC_PHASE_FWD], Wd.flops[SC_PHASE_FWD] + 2.0 * 524288.0);
}
END_TEST

/* The dispatch and combine all-to-alls carry tokens*top_k*hidden*dtype per rank over the
 * EP group, twice forward and twice backward; imbalance scales them and the expert tokens. */
START_TEST(test_alltoall_bytes) {
  sc_model m = tiny_moe();
  sc_parallel p = par(1, 4, 4, 1);
  sc_error err;
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  const char *fw[] = {"moe_dispatch.a2a", "moe_combine.a2a"};
  const char *bw[] = {"moe_combine.a2a_bwd", "moe_dispatch.a2a_bwd"};
  for (int i = 0; i < 2; i++) {
    const sc_work_coll *c = find_coll(&W.per_micro[SC_PHASE_FWD], fw[i]);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->kind, SC_COLL_ALLTOALL);
    ck_assert_int_eq(c->group, SC_GROUP_EP);
    ck_assert_uint_eq(c->nranks, 4);
    ck_assert_double_eq(c->bytes, 128.0 * 2 * 256 * 2);
    ck_assert_uint_eq(c->repeat, 2);
    c = find_coll(&W.per_micro[SC_PHASE_BWD], bw[i]);
    ck_assert_ptr_nonnull(c);
    ck_assert_double_eq(c->bytes, 128.0 * 2 * 256 * 2);
  }
  /* no ETP collective with etp 1 */
  ck_assert_ptr_null(find_coll(&W.per_micro[SC_PHASE_FWD], "moe_etp.ag"));
  /* imbalance 1.5: the most loaded rank takes 1.5x; t_e = ceil(128*2*1.5/2) = 192 */
  m.moe_imbalance = 1.5;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_eq(find_coll(&W.per_micro[SC_PHASE_FWD], "moe_dispatch.a2a")->bytes,
                      1.5 * 128.0 * 2 * 256 * 2);
  ck_assert_int_eq(find_op(&W.per_micro[SC_PHASE_FWD], "moe_fc1")->desc.dims[1], 192);
  /* a capacity factor below the imbalance caps it */
  m.capacity_factor = 1.25;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(find_op(&W.per_micro[SC_PHASE_FWD], "moe_fc1")->desc.dims[1], 160);
  /* ETP 2 over tp 2 (SP): 64 tokens per rank, gathered over ETP: 64*2*2 = 256 copies for
   * the 8/2 = 4 local experts at fe/2 = 64 wide */
  m.moe_imbalance = 0.0;
  m.capacity_factor = 0.0;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  sc_parallel q = par(2, 2, 2, 2);
  ck_assert_msg(sc_workload_stage(&m, &q, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  const sc_work_op *fc1 = find_op(&W.per_micro[SC_PHASE_FWD], "moe_fc1");
  ck_assert_int_eq(fc1->desc.dims[0], 4);
  ck_assert_int_eq(fc1->desc.dims[1], 64);
  ck_assert_int_eq(fc1->desc.dims[2], 128);
  const sc_work_coll *ag = find_coll(&W.per_micro[SC_PHASE_FWD], "moe_etp.ag");
  ck_assert_ptr_nonnull(ag);
  ck_assert_int_eq(ag->group, SC_GROUP_ETP);
  ck_assert_double_eq(ag->bytes, 256.0 * 256 * 2);
  ck_assert_double_eq(find_coll(&W.per_micro[SC_PHASE_FWD], "moe_dispatch.a2a")->bytes,
                      64.0 * 2 * 256 * 2);
}
END_TEST

/* Expert parameters: E/ep experts / etp per GPU, reduced over EDP = tp*cp*dp/(ep*etp); the
 * rest over DP x CP. */
START_TEST(test_expert_params_and_groups) {
  sc_model m = tiny_moe();
  sc_parallel p = par(1, 8, 4, 1);
  sc_error err;
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  int64_t ex = 2 * 2 * 3 * 256 * 128; /* 2 layers x 2 local experts */
  ck_assert_int_eq(W.expert_params, ex);
  const sc_work_coll *e = find_coll(&W.per_iter, "edp.grad_ar");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(e->group, SC_GROUP_EDP);
  ck_assert_uint_eq(e->nranks, 2);
  ck_assert_double_eq(e->bytes, 4.0 * (double)ex);
  const sc_work_coll *d = find_coll(&W.per_iter, "dp.grad_ar");
  ck_assert_double_eq(d->bytes, 4.0 * (double)(W.params - ex));
  ck_assert_uint_eq(d->nranks, 8);
  /* distributed optimizer: reduce-scatter and parameter gather over EDP */
  p.distributed_optimizer = 1;
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_ptr_nonnull(find_coll(&W.per_iter, "edp.grad_rs"));
  ck_assert_ptr_nonnull(find_coll(&W.per_iter, "edp.param_ag"));
  /* memory: the optimizer's 12 B of the experts over EDP 2, of the rest over DP 8 */
  sc_memory mem;
  ck_assert_msg(sc_memory_per_gpu(&m, &p, 0, &mem, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(mem.params, W.params);
  ck_assert_double_eq_tol(mem.optimizer_bytes,
                          12.0 * (double)(W.params - ex) / 8.0 + 12.0 * (double)ex / 2.0, 1e-6);
  /* activations grow with the imbalance (more routed tokens held) */
  double a1 = mem.activation_per_micro_bytes;
  m.moe_imbalance = 2.0;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_memory_per_gpu(&m, &p, 0, &mem, &err) == SC_OK, "%s", err.msg);
  ck_assert(mem.activation_per_micro_bytes > a1);
}
END_TEST

/* first_dense_layers and moe_layer_freq: DeepSeek's rule (i >= first and i % freq == 0). */
START_TEST(test_layer_pattern) {
  sc_model m = tiny_moe();
  sc_error err;
  m.layers = 8;
  m.first_dense_layers = 3;
  m.moe_layer_freq = 2;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  int want[8] = {0, 0, 0, 0, 1, 0, 1, 0};
  for (int i = 0; i < 8; i++) ck_assert_int_eq(sc_model_layer_is_moe(&m, i), want[i]);
  ck_assert_int_eq(sc_model_moe_layers(&m, 0, 8), 2);
  /* pp 2: stage 0 (layers 0-3) is dense, stage 1 holds both MoE layers */
  sc_parallel p = par(1, 2, 2, 1);
  p.pp = 2;
  ck_assert_msg(sc_workload_stage(&m, &p, 0, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_int_eq(W.expert_params, 0);
  ck_assert_ptr_null(find_coll(&W.per_micro[SC_PHASE_FWD], "moe_dispatch.a2a"));
  ck_assert_uint_eq(find_op(&W.per_micro[SC_PHASE_FWD], "mlp_fc1")->repeat, 4);
  ck_assert_msg(sc_workload_stage(&m, &p, 1, 0, &W, &err) == SC_OK, "%s", err.msg);
  ck_assert_uint_eq(find_op(&W.per_micro[SC_PHASE_FWD], "mlp_fc1")->repeat, 2);
  ck_assert_uint_eq(find_op(&W.per_micro[SC_PHASE_FWD], "moe_fc1")->repeat, 2);
  ck_assert_uint_eq(find_op(&W.per_micro[SC_PHASE_FWD], "qkv")->repeat, 4);
  /* shared experts: a dense MLP S x fe wide beside the routed ones */
  m.shared_experts = 2;
  ck_assert_msg(sc_model_finish(&m, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_workload_stage(&m, &p, 1, 0, &W, &err) == SC_OK, "%s", err.msg);
  const sc_work_op *s = find_op(&W.per_micro[SC_PHASE_FWD], "moe_shared_fc1");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->desc.dims[2], 2 * 2 * 128);
}
END_TEST

/* The same all-to-all over EP 8 inside one DGX H100 (etp 1: ranks 0-7) and over two nodes
 * (etp 2: every other rank, 0-14): the second crosses InfiniBand and costs more. */
START_TEST(test_ep_inside_node_cheaper) {
  sc_registry *reg = NULL;
  sc_topology topo;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_topology_load("dgx-h100-superpod", &topo, &err) == SC_OK, "%s", err.msg);
  sc_parallel in = par(1, 16, 8, 1), across = par(1, 16, 8, 2);
  static sc__spans si, sa;
  ck_assert_msg(sc__spans_make(&topo, &in, &si, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc__spans_make(&topo, &across, &sa, &err) == SC_OK, "%s", err.msg);
  const sc_coll_desc *ei = &si.g_moe[SC_GROUP_EP - SC_GROUP_ETP];
  const sc_coll_desc *ea = &sa.g_moe[SC_GROUP_EP - SC_GROUP_ETP];
  ck_assert_uint_eq(ei->nranks, 8);
  ck_assert_uint_eq(ei->tiers[0].ranks, 8);
  ck_assert_uint_eq(ea->nranks, 8);
  ck_assert_uint_eq(ea->tiers[0].ranks, 4);
  ck_assert_uint_eq(ea->tiers[1].ranks, 2);
  /* EDP of the second: every 16th rank of 16, one rank */
  ck_assert_uint_eq(sa.g_moe[SC_GROUP_EDP - SC_GROUP_ETP].nranks, 1);
  sc_coll_desc a = *ei, b = *ea;
  a.kind = b.kind = SC_COLL_ALLTOALL;
  a.bytes = b.bytes = 64.0 * 1024 * 1024;
  a.dtype = b.dtype = SC_DTYPE_BF16;
  sc_estimate x, y;
  ck_assert_msg(sc_comm_estimate(reg, &topo, &a, "auto", &x, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_comm_estimate(reg, &topo, &b, "auto", &y, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(x.time_s > 0 && y.time_s > 2.0 * x.time_s, "inside %g s, across %g s", x.time_s,
                y.time_s);
  /* PP not outermost: refused, naming the order */
  sc_parallel bad = par(1, 16, 8, 1);
  bad.order[2] = SC_GROUP_PP;
  bad.order[3] = SC_GROUP_DP;
  ck_assert_int_eq(sc__spans_make(&topo, &bad, &si, &err), SC_ECONFIG);
  ck_assert_ptr_nonnull(strstr(err.msg, "order:"));
  sc_registry_free(reg);
}
END_TEST

static void refused(const sc_model *m, const sc_parallel *p, const char *prefix) {
  sc_error err;
  sc_error_clear(&err);
  ck_assert_int_eq(sc_workload_validate(m, p, &err), SC_ECONFIG);
  ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0, "'%s' does not start '%s'",
                err.msg, prefix);
  ck_assert_ptr_null(strchr(err.msg, '\n'));
}

START_TEST(test_bad_parallel) {
  sc_model m = tiny_moe();
  sc_parallel p = par(1, 6, 3, 1);
  refused(&m, &p, "ep: 3 must divide num_experts (8)");
  p = par(1, 2, 4, 1);
  refused(&m, &p, "ep: ep*etp (4 x 1) must divide tp*cp*dp (2)");
  p = par(1, 8, 2, 3);
  refused(&m, &p, "ep: ep*etp");
  p = par(2, 6, 2, 3);
  refused(&m, &p, "etp: 3 must divide expert_ffn_hidden (128)");
  p = par(2, 2, 2, 1);
  p.sequence_parallel = 0;
  refused(&m, &p, "sequence_parallel:");
  p = par(1, 4, 2, 1);
  p.zero_stage = 3;
  refused(&m, &p, "zero_stage:");
  sc_model d = tiny_moe();
  d.num_experts = d.top_k = d.expert_ffn_hidden = 0;
  d.moe_layer_freq = 0;
  d.moe_imbalance = 0.0;
  sc_error err;
  ck_assert_msg(sc_model_finish(&d, &err) == SC_OK, "%s", err.msg);
  p = par(1, 4, 2, 1);
  refused(&d, &p, "ep: 2 needs a mixture-of-experts model");
  p = par(1, 4, 1, 2);
  refused(&d, &p, "etp: 2 needs a mixture-of-experts model");
}
END_TEST

/* A model file with one bad line; the message names file:line and the key. */
static void bad_file(const char *extra, const char *key, int line) {
  char path[] = "/tmp/sc_moe_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f,
          "[model]\nname = \"m\"\nlayers = 4\nhidden = 256\nffn_hidden = 512\nheads = 4\n"
          "vocab = 1000\nmax_seq = 2048\nactivation = \"swiglu\"\nnorm = \"rmsnorm\"\n"
          "position = \"rope\"\ntied_embeddings = false\nlinear_bias = false\n%s",
          extra);
  fclose(f);
  sc_model m;
  sc_error err;
  sc_error_clear(&err);
  int rc = sc_model_load(path, &m, &err);
  unlink(path);
  ck_assert_msg(rc != SC_OK, "accepted: %s", extra);
  char want[512];
  snprintf(want, sizeof want, "%s:%d:", path, line);
  ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "'%s' does not start '%s'", err.msg,
                want);
  ck_assert_msg(strstr(err.msg, key) != NULL, "'%s' does not name %s", err.msg, key);
  ck_assert_ptr_null(strchr(err.msg, '\n'));
}

START_TEST(test_bad_keys) {
  bad_file("top_k = 2\n", "'top_k'", 14);
  bad_file("num_experts = 8\ntop_k = 9\nexpert_ffn_hidden = 128\n", "'top_k'", 15);
  /* a missing key: the [model] table's line */
  bad_file("num_experts = 8\nexpert_ffn_hidden = 128\n", "'top_k'", 1);
  bad_file("num_experts = 8\ntop_k = 2\n", "'expert_ffn_hidden'", 1);
  bad_file("num_experts = -1\n", "'num_experts'", 14);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\nmoe_imbalance = 0.5\n",
           "'moe_imbalance'", 17);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\nmoe_imbalance = 5.0\n",
           "'moe_imbalance'", 17);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\ncapacity_factor = -1\n",
           "'capacity_factor'", 17);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\nfirst_dense_layers = 4\n",
           "'first_dense_layers'", 17);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\nmoe_layer_freq = 0\n",
           "'moe_layer_freq'", 17);
  bad_file("num_experts = 8\ntop_k = 2\nexpert_ffn_hidden = 128\nshared_experts = \"one\"\n",
           "'shared_experts'", 17);
}
END_TEST

/* A whole prediction of Mixtral 8x7B with EP 8 runs and counts the all-to-alls. */
START_TEST(test_predict_mixtral) {
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_topology topo;
  sc_device dev;
  sc_model m;
  sc_error err;
  sc_error_clear(&err);
  ck_assert_msg(sc_registry_new(&reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_registry_add_builtins(reg, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_topology_load("dgx-h100-superpod", &topo, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_hardware_load(reg, topo.hardware, &dev, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_predictor_new(reg, &pr, &err) == SC_OK, "%s", err.msg);
  ck_assert_msg(sc_model_load("mixtral-8x7b", &m, &err) == SC_OK, "%s", err.msg);
  sc_predict_opts o;
  sc_predict_opts_defaults(&o);
  o.estimator = SC_ESTIMATOR_ANALYTICAL;
  o.allow_oom = 1; /* EP 1 holds all 8 experts of 16 layers */
  static sc_result r1, r8;
  sc_parallel p = par(2, 16, 1, 1);
  p.pp = 2;
  p.global_batch = 64;
  p.seq_len = 4096;
  p.distributed_optimizer = 1;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r1, NULL, &err) == SC_OK, "%s", err.msg);
  p.ep = 8;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &r8, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert(isfinite(r8.iteration_s) && r8.iteration_s > 0);
  /* EP 8 holds an eighth of the experts: far less memory than EP 1 */
  ck_assert(r8.memory.weights_bytes < 0.3 * r1.memory.weights_bytes);
  /* the dispatch and combine all-to-alls wait for the router and feed the experts: no TP
   * overlap switch hides them (TP 1: they are the only collectives of the TP lane) */
  static sc_result off, on;
  p.tp = 1;
  p.dp = 32;
  p.overlap_tp_comm = 0;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &off, NULL, &err) == SC_OK, "%s", err.msg);
  p.overlap_tp_comm = 1;
  ck_assert_msg(sc_predict(pr, &m, &topo, &dev, &p, &o, &on, NULL, &err) == SC_OK, "%s", err.msg);
  ck_assert_double_gt(off.breakdown.tp_exposed_s, 0.0);
  ck_assert_double_eq(on.breakdown.tp_exposed_s, off.breakdown.tp_exposed_s);
  ck_assert_double_eq(on.iteration_s, off.iteration_s);
  sc_predictor_free(pr);
  sc_registry_free(reg);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("moe");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_published_params);
  tcase_add_test(tc, test_params_by_hand);
  tcase_add_test(tc, test_moe_flops_by_hand);
  tcase_add_test(tc, test_deepseek_v3_by_hand);
  tcase_add_test(tc, test_mla_flops_by_hand);
  tcase_add_test(tc, test_alltoall_bytes);
  tcase_add_test(tc, test_expert_params_and_groups);
  tcase_add_test(tc, test_layer_pattern);
  tcase_add_test(tc, test_ep_inside_node_cheaper);
  tcase_add_test(tc, test_bad_parallel);
  tcase_add_test(tc, test_bad_keys);
  tcase_add_test(tc, test_predict_mixtral);
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
