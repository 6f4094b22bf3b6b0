/*
 * Spec files: models/, hardware/, topologies/ TOML become these validated structs.
 * Schemas are documented in docs/formats.md. Nothing downstream of core/src/spec/ reads TOML.
 */
#ifndef STEPCAST_SPEC_H
#define STEPCAST_SPEC_H

#include <stdint.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SC_NAME_MAX 64
#define SC_PATH_MAX 1024

/* The MLP's activation: gelu (GPT-2/3, BLOOM), swiglu (Llama), relu (OPT), squared_relu
 * (Nemotron-4, Primer), geglu (Gemma, T5 v1.1); the gated ones (swiglu, geglu) have a third
 * weight matrix. */
typedef enum {
  SC_ACT_GELU = 0,
  SC_ACT_SWIGLU,
  SC_ACT_RELU,
  SC_ACT_SQUARED_RELU,
  SC_ACT_GEGLU,
  SC_ACT_COUNT
} sc_activation;

/* 1 when the activation gates one projection by another (fc1 twice as wide). */
static inline int sc_activation_gated(sc_activation a) {
  return a == SC_ACT_SWIGLU || a == SC_ACT_GEGLU;
}
typedef enum { SC_NORM_LAYERNORM = 0, SC_NORM_RMSNORM } sc_norm_kind;
typedef enum {
  SC_POS_LEARNED = 0, /* learned absolute position embedding (GPT-2/3) */
  SC_POS_ROPE,        /* rotary (Llama, GPT-NeoX) */
  SC_POS_ALIBI,
  SC_POS_NONE
} sc_pos_embedding;

/* A transformer model (models/<name>.toml). */
typedef struct sc_model {
  char name[SC_NAME_MAX];
  char path[SC_PATH_MAX];       /* the file it came from ("" when built in code) */
  int64_t layers;               /* transformer blocks */
  int64_t hidden;               /* model width h */
  int64_t ffn_hidden;           /* MLP inner width (4h for GPT, ~8h/3 rounded for SwiGLU) */
  int64_t heads;                /* attention (query) heads */
  int64_t kv_heads;             /* key/value heads (== heads without GQA) */
  int64_t head_dim;             /* hidden / heads unless the file says otherwise */
  int64_t vocab;                /* vocabulary size V (before any padding) */
  int64_t max_seq;              /* trained context length */
  sc_activation activation;
  sc_norm_kind norm;
  sc_pos_embedding position;
  int tied_embeddings;          /* input and output embedding share weights */
  int linear_bias;              /* linear layers carry biases (GPT: yes, Llama: no) */
  /* Mixture of experts (docs/formats.md, "Mixture of experts"); num_experts 0 = a dense
   * model, and then every key below is 0 and ignored. A layer i (0-based) is an MoE layer
   * when i >= first_dense_layers and i % moe_layer_freq == 0 (DeepSeek-V3's rule); its MLP
   * is a router over num_experts routed experts of which top_k run per token, each an MLP
   * of width expert_ffn_hidden with the model's activation, plus shared_experts experts of
   * the same width that every token runs. Other layers have the dense MLP (ffn_hidden). */
  int64_t num_experts;          /* routed experts E (0 = dense) */
  int64_t shared_experts;       /* always-active experts per MoE layer (DeepSeek: 1) */
  int64_t top_k;                /* routed experts per token k */
  int64_t expert_ffn_hidden;    /* one expert's MLP inner width */
  int64_t moe_layer_freq;       /* every k-th layer is MoE (1 = all, after the dense ones) */
  int64_t first_dense_layers;   /* dense layers before the first MoE layer */
  double capacity_factor;       /* tokens an expert takes, x the mean (0 = dropless) */
  double moe_imbalance;         /* a stated input: the most loaded rank's expert tokens over
                                   the mean (1 = balanced); bounded by num_experts/top_k */
  /* Multi-head latent attention (DeepSeek-V2/V3; docs/formats.md, "Multi-head latent
   * attention"), on when kv_lora_rank > 0, then modelled by its projections' real shapes as
   * plain GEMMs: q = (q_lora_rank > 0: h -> q_lora_rank, norm, -> heads x (nope + rope);
   * else h -> heads x (nope + rope)), kv = h -> kv_lora_rank + rope, norm, kv_lora_rank ->
   * heads x (nope + v), output heads x v -> h; the attention core as flash attention of
   * head_dim = (nope + rope + v) / 2 (its nominal FLOPs exact), kv_heads = heads. */
  int64_t q_lora_rank;          /* 0 = queries projected from h directly */
  int64_t kv_lora_rank;         /* 0 = ordinary attention */
  int64_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
  int64_t params;               /* derived: total parameter count (embeddings included) */
  int64_t active_params;        /* derived: parameters one token uses (embeddings included:
                                   top_k routed experts of each MoE layer); = params dense */
} sc_model;

/* 1 when layer i (0-based) of m is a mixture-of-experts layer. */
static inline int sc_model_layer_is_moe(const sc_model *m, int64_t i) {
  int64_t f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
  return m->num_experts > 0 && i >= m->first_dense_layers && i % f == 0;
}

/* MoE layers among layers [first, first + count) of m. */
static inline int64_t sc_model_moe_layers(const sc_model *m, int64_t first, int64_t count) {
  int64_t n = 0;
  if (m->num_experts <= 0) return 0;
  for (int64_t i = first; i < first + count; i++) n += sc_model_layer_is_moe(m, i);
  return n;
}

/* One tier of a network, innermost first. */
typedef struct sc_tier {
  char name[SC_NAME_MAX];       /* "nvlink", "leaf", "spine", ... */
  uint32_t scope_gpus;          /* GPUs joined by one instance of this tier (cumulative:
                                   tier 0 = GPUs per node; the last tier may be 0 = all) */
  double bw_Bps;                /* per-GPU bandwidth each way through this tier */
  double latency_s;             /* one-hop latency */
  double oversubscription;      /* >= 1 (1 = full bisection) */
  /* Added for the communication model (docs/comm.md): the fraction of bw_Bps that NCCL's
   * large-message transfers achieve on this tier (protocol overhead, PCIe/NIC efficiency),
   * in (0,1]; 0 = not stated, taken as 1. */
  double efficiency;
  /* Added for NVLink SHARP (docs/comm.md, "NVLink SHARP"): 1 when this tier is the node's
   * NVSwitch with in-network reduction and multicast (third-generation NVSwitch, NVLink 4:
   * DGX/HGX H100 and H200), so that NCCL's NVLS and NVLSTree algorithms can run on it;
   * 0 = no (the default; A100's NVSwitch has none). Tier 0 of a topology with more than
   * one GPU per node only. */
  int nvls;
  /* The bandwidth each way between two GPUs of one instance of this tier that are joined
   * directly (a node's NVLink mesh without a switch: A100 nodes of 4 GPUs, 4 links a pair);
   * a group that spans k of the instance's GPUs then gets at most (k - 1) x pair_bw_Bps per
   * GPU through it. 0 = not stated (a switch: every GPU its bw_Bps whatever k). Tier 0 only. */
  double pair_bw_Bps;
  /* The fraction of the tier's bandwidth that point-to-point transfers (send/recv: pipeline
   * messages) achieve, when it differs from the collectives' efficiency (NCCL's p2p runs
   * more connections at once: over its socket transport on Perlmutter, 2.7x the ring
   * collectives' rate); 0 = not stated: efficiency. */
  double p2p_efficiency;
} sc_tier;

/* A cluster (topologies/<name>.toml). */
typedef struct sc_topology {
  char name[SC_NAME_MAX];
  char path[SC_PATH_MAX];
  char hardware[SC_PATH_MAX];   /* hardware file of the node's device, resolved path */
  uint32_t gpus_per_node;
  uint32_t nics_per_node;
  uint32_t max_gpus;            /* largest system described (0 = unbounded) */
  uint32_t ntiers;
  sc_tier tiers[SC_MAX_TIERS];
} sc_topology;

struct sc_registry;

/* Which folder a spec name is looked up in. */
typedef enum { SC_SPEC_MODEL = 0, SC_SPEC_HARDWARE, SC_SPEC_TOPOLOGY, SC_SPEC_STACK } sc_spec_kind;

/* Resolve a spec argument to a file path. A value containing '/' or ending in ".toml" is a
 * path (must exist). A bare name ("gpt3-175b") is looked up as <dir>/<name>.toml in: each
 * folder of STEPCAST_DATA_PATH (colon list), then the source tree (program run from the
 * build tree) or the installed data folder (<prefix>/share/stepcast), dir being models,
 * hardware, topologies or stacks. SC_ENOTFOUND with the places tried otherwise. */
int sc_spec_resolve(sc_spec_kind kind, const char *name_or_path, char *out, size_t out_size,
                    sc_error *err);

/* Load and validate a model file (name or path, resolved as above). Errors name
 * file:line:col and the key (unknown key, missing key, wrong type, impossible value such
 * as heads not dividing hidden). Derives head_dim and params. */
int sc_model_load(const char *name_or_path, sc_model *out, sc_error *err);

/* Validate a model built in code (same rules as the loader) and derive params. */
int sc_model_finish(sc_model *m, sc_error *err);

/* Load and validate a topology file; resolves its hardware reference to a path. */
int sc_topology_load(const char *name_or_path, sc_topology *out, sc_error *err);

/* Load a hardware file: reads its 'kind' and asks that hardware plugin of reg to describe
 * it (plugins/hardware/<kind>.c). SC_ENOTFOUND when no plugin serves the kind. */
int sc_hardware_load(struct sc_registry *reg, const char *name_or_path, sc_device *out,
                     sc_error *err);

/* Which spec a TOML file is, from its top-level table: "model", "hardware", "topology",
 * "stack", "job", or "residuals" (a residual set's residuals.toml: a device and [[model]]
 * tables). NULL with err set (the parser's error, or SC_ESPEC "path:1:1: no [model], ...")
 * when none. */
const char *sc_spec_file_kind(const char *path, sc_error *err);

/* One key of a one-table file (sc_spec_read_table): its value as text (an integer in
 * decimal, a float as %.17g, a boolean as true/false; NULL for an array, a table or a date),
 * its kind, the TOML type's name for messages ("string", "integer", "float", "bool", ...),
 * and where the key and the value stand. */
typedef enum {
  SC_SPEC_STRING,
  SC_SPEC_INTEGER,
  SC_SPEC_FLOAT,
  SC_SPEC_BOOL,
  SC_SPEC_OTHER
} sc_spec_value_kind;
typedef struct sc_spec_scalar {
  const char *key;
  unsigned key_line, key_col;
  const char *text;
  sc_spec_value_kind kind;
  const char *type_name;
  unsigned line, col; /* the value's */
} sc_spec_scalar;

/* The scalars of a file that holds one table (a job file's [job]): fn is called for each
 * key of [table], in file order. A non-zero return from fn stops the walk and is returned.
 * Errors: the parser's; SC_ESPEC "path:line:col: key 'k': a <table> file holds one
 * [<table>] table" for any other top-level key, "path:1:1: missing [<table>] table". */
typedef int (*sc_spec_scalar_fn)(void *ud, const sc_spec_scalar *v, sc_error *err);
int sc_spec_read_table(const char *path, const char *table, sc_spec_scalar_fn fn, void *ud,
                       sc_error *err);

/* sc_hardware_load on len bytes of TOML text instead of a file (filename names it in the
 * messages): the same parse and the same checks of the hardware plugin, so that a writer
 * (stepcast sample) can refuse a file its loader would refuse before writing it. */
int sc_hardware_load_text(struct sc_registry *reg, const char *text, size_t len,
                          const char *filename, sc_device *out, sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_SPEC_H */
