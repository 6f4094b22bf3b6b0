/*
 * Memory per GPU outside the model states and activations (stepcast/memory.h). Every figure
 * is a published one; docs/validation/memory-other.md collects them with their context and
 * docs/operators.md ("Memory per GPU") states the formula:
 *
 *   allocated = model states + activations + W          (torch max_memory_allocated)
 *   reserved  = allocated x (1 + k_frag)                 (torch max_memory_reserved)
 *   device    = reserved + C_ctx + sum N_comm (+ NVLS) (+ TE userbuffers)   (nvidia-smi)
 *
 * W, workspaces that PyTorch's caching allocator hands out (so inside `allocated`):
 *   - PyTorch's cuBLAS workspace, one per (cuBLAS handle, stream) that ran a GEMM: the
 *     default ":4096:2:16:8" = 4096 KiB x 2 + 16 KiB x 8 = 8,519,680 B, or 32 MiB
 *     (4096 x 8 x 1024 B) when the device is sm90 (compute capability 9.0); on ROCm 32 MiB,
 *     128 MiB on gfx94x/gfx95x; and the cuBLASLt workspace, 1024 KiB (76 MiB hipBLASLt on
 *     ROCm). pytorch/pytorch aten/src/ATen/cuda/CublasHandlePool.cpp at commit
 *     26a39059ec580351411f180816c47e2ef5134ae1 (parseChosenWorkspaceSize,
 *     parseCUDABlasLtWorkspaceSize; both allocated through CUDACachingAllocator). A training
 *     step runs its GEMMs on one stream (autograd's backward runs on the forward's stream):
 *     one of each.
 *   - Transformer Engine's cuBLAS workspace (stacks whose te_workspace is true): 33,554,432 B
 *     when the compute capability major is >= 9, else 4,194,304 B, one torch.empty; with TP
 *     communication overlap it is repeated _NUM_MAX_UB_STREAMS = 3 times.
 *     NVIDIA/TransformerEngine transformer_engine/pytorch/module/base.py at commit
 *     fecb10bdf13c26a213807bc310b0ec438462614e (get_cublas_workspace_size_bytes,
 *     initialize_ub).
 *
 * k_frag = 0.05: reserved / allocated - 1 of the published pairs is 0.13 (a small
 *   Megatron-LM run: NVIDIA/Megatron-LM PR #5662, max 5670.39 MB allocated, 6406.00 MB
 *   reserved), 0.04 (GPT-2 774M at its OOM, Megatron-LM issue #525: 28.82 / 29.97 GiB) and
 *   0.00 (vLLM loading Llama-2-70B, vllm-project/vllm issue #636); 0.05 is
 *   memory-other.md's proposal inside that range (section 5), not a fit.
 *
 * C_ctx = 0.5 GiB: the CUDA context with lazy module loading is 274 MiB bare
 *   (pytorch/pytorch PR #86509), "around 400MB" (ptrblck, pytorch/pytorch issue #109888),
 *   426 MiB on an RTX 6000 Ada with PyTorch 2.10 (unslothai/unsloth-zoo PR #1053), and grows
 *   as cuBLAS, cuDNN and the attention kernels load; memory-other.md section 1.
 *
 * N_comm = 0.6 GiB per NCCL communicator that carries traffic: 544 MB for a 2-GPU process
 *   group and 688 MB for a group of 3-4 GPUs after a 4 MB all-reduce on 4 x A100 NVLink
 *   (NVIDIA/nccl issue #964); memory-other.md section 2. NCCL allocates these outside
 *   PyTorch (NVIDIA/nccl issue #1685: "excluded memory usage from PyTorch").
 * NVLS: 288 MiB per rank (nvlsPerRankSize 301989888, vllm-project/vllm issue #9699, 8 x
 *   H200) for each communicator that NCCL may run NVLS on: a topology whose tier 0 states
 *   nvls and a group with more than 2 members in one node that runs all-reduce, all-gather or
 *   reduce-scatter (the TP and data-parallel groups; the rule of NCCL 2.20.3 that
 *   stepcast/comm.h applies to the algorithm; pipeline and context-parallel sends are
 *   point-to-point).
 * Transformer Engine's userbuffers (te_workspace stacks under TP overlap): one per overlapped
 *   GEMM, 10 names (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad by ring exchange;
 *   proj_fprop, fc2_fprop pipelined; qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad bulk), each
 *   of shape [seq x micro_batch / cp, hidden] in the compute dtype, 1 byte for the six
 *   all-gather buffers under fp8 (initialize_ub, base.py above; Megatron-LM passes that shape:
 *   megatron/training/initialize.py, _initialize_tp_communicators). Userbuffers registers
 *   them itself; whether any stays a PyTorch tensor was not traced: counted outside the
 *   allocator, with the communication buffers.
 *
 * Communicators that carry traffic every step (Megatron-Core creates one process group per
 * parallel dimension, each its own NCCL communicator; memory-other.md section 2): TP when
 * tp > 1; CP when cp > 1; the data-parallel gradient group (DP x CP) when dp x cp > 1 (HSDP:
 * its shard and its replica groups, two); the pipeline's send/recv when pp > 1; the
 * tied-embedding pair of the first and last stage when pp > 1 and the embeddings are tied
 * (counted on every stage).
 */
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/memory.h"
#include "stepcast/stepcast.h"
#include "workload/workload_int.h"

#define MiB 1048576.0
#define GiB 1073741824.0

/* PyTorch (CublasHandlePool.cpp, commit above) */
#define TORCH_CUBLAS_WS_SM90 (4096.0 * 8 * 1024)               /* 32 MiB on sm90 */
#define TORCH_CUBLAS_WS_DEFAULT (4096.0 * 1024 * 2 + 16.0 * 1024 * 8) /* :4096:2:16:8 */
#define TORCH_CUBLASLT_WS (1024.0 * 1024)                       /* 1024 KiB */
#define TORCH_ROCBLAS_WS_GFX94 (1024.0 * 128 * 1024)            /* 128 MiB on gfx94x/95x */
#define TORCH_ROCBLAS_WS_DEFAULT (1024.0 * 32 * 1024)           /* 32 MiB */
#define TORCH_HIPBLASLT_WS (76.0 * 1024 * 1024)                 /* 76 MiB */
/* Transformer Engine (base.py, commit above) */
#define TE_WS_SM90 33554432.0
#define TE_WS_OLDER 4194304.0
#define TE_UB_STREAMS 3.0
#define TE_UB_BUFFERS 10.0
#define TE_UB_ALLGATHER_BUFFERS 6.0
/* Allocator, context, NCCL (memory-other.md sections 5, 1, 2) */
#define K_FRAG 0.05
#define C_CTX (0.5 * GiB)
#define N_COMM (0.6 * GiB)
#define NVLS_PER_RANK 301989888.0

/* NVIDIA compute capability majors by device name, from NVIDIA's "CUDA GPUs - Compute
 * Capability" table (https://developer.nvidia.com/cuda-gpus): A100 8.0; H100, H200, GH200
 * 9.0 (H800: the H100's export variant, same GH100 chip); B200, GB200 10.0. */
uint32_t sc_memory_sm_major(const char *name) {
  static const struct { const char *prefix; uint32_t major; } t[] = {
      {"gh200", 9}, {"gb200", 10}, {"h100", 9}, {"h200", 9}, {"h800", 9},
      {"b200", 10}, {"a100", 8},   {"a800", 8}};
  if (name == NULL) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strncmp(name, t[i].prefix, strlen(t[i].prefix)) == 0) return t[i].major;
  return 0;
}

/* AMD Instinct GPUs run ROCm's PyTorch: MI300 series are gfx942 (gfx94x), MI200 gfx90a
 * (ROCm documentation, "GPU hardware specifications", LLVM target names). 0: not AMD,
 * 1: AMD, 2: AMD gfx94x or gfx95x. */
static int rocm_class(const char *name) {
  if (name == NULL || strncmp(name, "mi", 2) != 0) return 0;
  return (strncmp(name, "mi300", 5) == 0 || strncmp(name, "mi325", 5) == 0 ||
          strncmp(name, "mi350", 5) == 0 || strncmp(name, "mi355", 5) == 0)
             ? 2
             : 1;
}

/* Members of the group g of p (DP: the DP x CP group, as the schedule places it) in one
 * node: the fan-out of its span at tier 0. */
static int tier0_ranks(const sc_topology *t, const sc_parallel *p, sc_group_kind g,
                       uint32_t *out, sc_error *err) {
  sc_parallel q = *p;
  sc_coll_desc d;
  if (g == SC_GROUP_DP) {
    q.dp = p->dp * p->cp;
    q.cp = 1;
  }
  int rc = sc_comm_group(t, &q, g, &d, err);
  if (rc != SC_OK) return rc;
  *out = d.ntiers > 0 ? d.tiers[0].ranks : 1;
  return SC_OK;
}

int sc_memory_overhead_of(const sc_model *m, const sc_parallel *p, const sc_device *dev,
                          const sc_stack *s, const sc_topology *t, sc_memory_overhead *out,
                          sc_error *err) {
  if (m == NULL || p == NULL || dev == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_memory_overhead_of: NULL argument");
  memset(out, 0, sizeof *out);
  if (strcmp(dev->kind, "gpu") != 0) return SC_OK;

  uint32_t sm = sc_memory_sm_major(dev->name);
  int rocm = rocm_class(dev->name);
  int tp_overlap = p->overlap_tp_comm && p->tp > 1 && p->sequence_parallel;
  int te = s != NULL && s->te_workspace && rocm == 0;

  /* Workspaces inside the allocator */
  double ws;
  if (rocm)
    ws = (rocm == 2 ? TORCH_ROCBLAS_WS_GFX94 : TORCH_ROCBLAS_WS_DEFAULT) + TORCH_HIPBLASLT_WS;
  else
    ws = (sm == 9 ? TORCH_CUBLAS_WS_SM90 : TORCH_CUBLAS_WS_DEFAULT) + TORCH_CUBLASLT_WS;
  if (te) ws += (sm >= 9 ? TE_WS_SM90 : TE_WS_OLDER) * (tp_overlap ? TE_UB_STREAMS : 1.0);
  out->workspace_bytes = ws;
  out->frag_fraction = K_FRAG;
  out->context_bytes = C_CTX;

  /* Communicators that carry traffic, and which of them get NVLS buffers */
  uint32_t dpc = p->dp * p->cp, S = sc_parallel_shard_ranks(p);
  int hsdp = S > 1 && S < dpc;
  int nvls_tier = t != NULL && t->ntiers > 0 && t->tiers[0].nvls && t->gpus_per_node > 1;
  uint32_t n = 0, nv = 0, r0 = 0;
  int rc;
  if (p->tp > 1) {
    n++;
    if (nvls_tier) {
      if ((rc = tier0_ranks(t, p, SC_GROUP_TP, &r0, err)) != SC_OK) return rc;
      if (r0 > 2) nv++;
    }
  }
  if (p->cp > 1) n++;
  if (dpc > 1) {
    uint32_t d0 = 1;
    if (nvls_tier && (rc = tier0_ranks(t, p, SC_GROUP_DP, &d0, err)) != SC_OK) return rc;
    if (hsdp) {
      /* the shard is the innermost S ranks of the DP x CP group, the replicas the rest */
      uint32_t s0 = d0 < S ? d0 : S;
      uint32_t rep0 = d0 > S ? d0 / S : 1;
      n += 2;
      if (nvls_tier && s0 > 2) nv++;
      if (nvls_tier && rep0 > 2) nv++;
    } else {
      n++;
      if (nvls_tier && d0 > 2) nv++;
    }
  }
  if (p->pp > 1) n++;
  if (p->pp > 1 && m->tied_embeddings) n++;
  if (m->num_experts > 0) {
    /* MoE layers: the EP all-to-all group, the ETP group, the experts' gradient group EDP
     * (Megatron-Core creates each as its own process group), when they have two members */
    uint32_t edp = sc_parallel_edp(p);
    n += (sc_parallel_ep(p) > 1) + (sc_parallel_etp(p) > 1) + (edp > 1);
  }
  out->communicators = n;
  out->nvls_communicators = nv;
  double ub = 0.0;
  if (te && tp_overlap) {
    /* the compute dtype's activations (bf16 under fp8), 1 byte for fp8 all-gather buffers */
    double e = sc__dtype_bytes(p->dtype == SC_DTYPE_FP8 ? SC_DTYPE_BF16 : p->dtype);
    double q = p->dtype == SC_DTYPE_FP8 ? 1.0 : e;
    double rows = (double)p->seq_len * (double)p->micro_batch / (double)p->cp;
    ub = rows * (double)m->hidden *
         (TE_UB_ALLGATHER_BUFFERS * q + (TE_UB_BUFFERS - TE_UB_ALLGATHER_BUFFERS) * e);
  }
  out->userbuffer_bytes = ub;
  out->comm_bytes = (double)n * N_COMM + (double)nv * NVLS_PER_RANK + ub;
  return SC_OK;
}

double sc_memory_allocated_bytes(const sc_memory *mem, const sc_memory_overhead *o) {
  return mem->total_bytes + (o != NULL ? o->workspace_bytes : 0.0);
}

double sc_memory_reserved_bytes(const sc_memory *mem, const sc_memory_overhead *o) {
  return sc_memory_allocated_bytes(mem, o) * (1.0 + (o != NULL ? o->frag_fraction : 0.0));
}

double sc_memory_device_bytes(const sc_memory *mem, const sc_memory_overhead *o) {
  double r = sc_memory_reserved_bytes(mem, o);
  return o != NULL ? r + o->context_bytes + o->comm_bytes : r;
}

int sc_memory_refused(double device_bytes, double capacity_bytes) {
  return capacity_bytes > 0 && device_bytes > capacity_bytes * (1.0 + SC_MEMORY_REFUSE_MARGIN);
}
