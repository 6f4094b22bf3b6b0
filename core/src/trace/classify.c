/*
 * Kernel families by name (the table of docs/trace.md) and the dtype a kernel name states.
 */
#include <ctype.h>
#include <string.h>

#include "trace/trace_int.h"

const char *sc_trace_family_name(sc_kernel_family f) {
  static const char *const n[SC_KFAM_COUNT] = {"gemm",      "attention", "norm",   "elementwise",
                                               "optimizer", "comm",      "memcpy", "memset"};
  return (unsigned)f < SC_KFAM_COUNT ? n[f] : "?";
}

/* Case-insensitive substring search. */
static int has(const char *s, const char *needle) {
  size_t n = strlen(needle);
  for (; *s; s++) {
    size_t i = 0;
    while (i < n && s[i] && tolower((unsigned char)s[i]) == needle[i]) i++;
    if (i == n) return 1;
  }
  return 0;
}

static int any(const char *s, const char *const *needles) {
  for (; *needles; needles++) {
    if (has(s, *needles)) return 1;
  }
  return 0;
}

/* First match wins, in this order. Needles are lower case. */
static const char *const k_comm[] = {"nccl", "rccl", "msccl", NULL};
static const char *const k_attention[] = {"flash", "fmha", "attention", "sdpa", "_attn",
                                          "mha_", NULL};
static const char *const k_norm[] = {"norm", "softmax", "bn_fw", "bn_bw", "gammabeta", NULL};
static const char *const k_optimizer[] = {"multi_tensor_apply", "adam", "adagrad", "sgd_",
                                          "optimizer", NULL};

/* "lamb" (the LAMB optimizer's kernels) but not "lambda": PyTorch's element-wise kernels
 * name their functors "...::{lambda()#3}..." */
static int has_lamb(const char *s) {
  for (; *s; s++) {
    if (tolower((unsigned char)s[0]) == 'l' && tolower((unsigned char)s[1]) == 'a' &&
        tolower((unsigned char)s[2]) == 'm' && tolower((unsigned char)s[3]) == 'b' &&
        tolower((unsigned char)s[4]) != 'd')
      return 1;
  }
  return 0;
}
static const char *const k_gemm[] = {"gemm", "gemv", "cutlass", "cublas", "xmma", "matmul",
                                     "conv", "cudnn", "wgrad", "dgrad", "winograd", "nvjet", NULL};

sc_kernel_family sc_trace_classify(sc_trace_kind kind, const char *name) {
  if (kind == SC_TRACE_MEMCPY) return SC_KFAM_MEMCPY;
  if (kind == SC_TRACE_MEMSET) return SC_KFAM_MEMSET;
  if (name == NULL) name = "";
  if (any(name, k_comm)) return SC_KFAM_COMM;
  if (any(name, k_attention)) return SC_KFAM_ATTENTION;
  if (any(name, k_norm)) return SC_KFAM_NORM;
  if (any(name, k_optimizer) || has_lamb(name)) return SC_KFAM_OPTIMIZER;
  if (any(name, k_gemm)) return SC_KFAM_GEMM;
  return SC_KFAM_ELEMENTWISE;
}

/* The dtype a kernel's name states, else dflt. */
sc_dtype sc__trace_kernel_dtype(const char *name, sc_dtype dflt) {
  static const char *const bf16[] = {"bf16", "bfloat16", NULL};
  static const char *const fp8[] = {"e4m3", "e5m2", "fp8", NULL};
  static const char *const fp16[] = {"fp16", "f16f16", "half", "hgemm", "h884", "h1688",
                                     "h16816", NULL};
  static const char *const tf32[] = {"tf32", "s1688", "s16816", NULL};
  static const char *const int8[] = {"int8", "imma", "i8816", NULL};
  static const char *const fp32[] = {"sgemm", "f32f32_f32", "fp32", NULL};
  if (any(name, bf16)) return SC_DTYPE_BF16;
  if (any(name, fp8)) return SC_DTYPE_FP8;
  if (any(name, fp16)) return SC_DTYPE_FP16;
  if (any(name, tf32)) return SC_DTYPE_TF32;
  if (any(name, int8)) return SC_DTYPE_INT8;
  if (any(name, fp32)) return SC_DTYPE_FP32;
  return dflt;
}

/* The collective kind a NCCL kernel name, an "nccl:..." annotation or a record_param_comms
 * "Collective name" states; SC__COLL_OTHER for one stepcast does not model; -1 when none
 * (ncclDevKernel_Generic, "coalesced"). */
int sc__trace_coll_kind(const char *name) {
  if (has(name, "allreduce") || has(name, "all_reduce")) return SC_COLL_ALLREDUCE;
  if (has(name, "allgather") || has(name, "all_gather")) return SC_COLL_ALLGATHER;
  if (has(name, "reducescatter") || has(name, "reduce_scatter")) return SC_COLL_REDUCESCATTER;
  if (has(name, "alltoall") || has(name, "all_to_all")) return SC_COLL_ALLTOALL;
  if (has(name, "broadcast")) return SC_COLL_BROADCAST;
  if (has(name, "sendrecv") || has(name, "send") || has(name, "recv")) return SC_COLL_SENDRECV;
  /* ProcessGroupNCCL's barrier is an all-reduce of one element */
  if (has(name, "barrier")) return SC_COLL_ALLREDUCE;
  if (has(name, "reduce") || has(name, "gather") || has(name, "scatter")) return SC__COLL_OTHER;
  return -1;
}
