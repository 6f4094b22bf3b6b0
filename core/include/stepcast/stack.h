/*
 * Software stacks: how a framework runs the operators stepcast prices. The same GPU runs
 * fused or unfused norms, a cast before every GEMM or none, one kernel per operator from a
 * CUDA graph or a dozen from Python; a stack file (stacks/<name>.toml, docs/formats.md)
 * says, per operator family and variant, how many kernels the stack launches and how many
 * times the operator's own bytes its kernels move, and what the host spends to dispatch one
 * kernel. Kernel implementation is not hardware: the device file keeps what the chip does
 * (its rates, its per-kernel launch_s), the stack what the software asks of it.
 *
 * Pricing (docs/operators.md, "Software stacks"): an operator whose plugin estimate is t
 * (one kernel, launch_s included) costs the GPU
 *     t + (kernels - 1) launch_s + (traffic - 1) bytes / (mem_bw_Bps mem_efficiency)
 * and the host kernels x host_per_kernel_s. A pass's operators are one stream: the host
 * dispatches them in order and the GPU runs each once it is dispatched and the one before
 * it is done, so a pass takes the later of the two streams, kernel by kernel
 * (sc_stack_stream).
 */
#ifndef STEPCAST_STACK_H
#define STEPCAST_STACK_H

#include <stdint.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SC_STACK_RULES_MAX 64 /* [stack.kernels] and [stack.traffic] entries together */
#define SC_STACK_HOST_MAX_S 1e-2 /* host time per kernel, upper bound */
#define SC_STACK_KERNELS_MAX 10000.0
#define SC_STACK_TRAFFIC_MAX 100.0

/* One rule: family (and variant, or every variant when variant < 0) -> value. */
typedef struct sc_stack_rule {
  char family[32];
  int32_t variant;
  double value;
} sc_stack_rule;

#define SC_STACK_DEVICES_MAX 16 /* [stack.attention.<device>] tables */

#define SC_STACK_HEAD_DIMS_MAX 8 /* points of [stack.attention.<device>] head_dims */

/* The attention kernel's achievable fractions of peak on one device (by its name): one
 * pair for every head dimension (n = 1, head_dim[0] = 0), or one per head dimension
 * (head_dim increasing), interpolated in log2(head dim) between them and the nearest
 * point's beyond. */
typedef struct sc_stack_attention {
  char device[64];
  uint32_t n;
  double head_dim[SC_STACK_HEAD_DIMS_MAX];
  double fwd[SC_STACK_HEAD_DIMS_MAX], bwd[SC_STACK_HEAD_DIMS_MAX];
} sc_stack_attention;

typedef struct sc_stack {
  char name[64];
  char path[SC_PATH_MAX];      /* the file it came from ("" when built in code) */
  double host_per_kernel_s;    /* host time to dispatch one kernel (0: the host keeps up) */
  uint32_t vocab_divisible_by; /* the vocabulary padded to a multiple of this (times tp);
                                  0 = not stated (Megatron's 128) */
  int p2p_blocking;            /* pipeline sends block the sender's compute until they
                                  complete (DeepSpeed's PipelineEngine: dist.send/recv);
                                  0: they run beside it (sc_sched_input.p2p_blocking) */
  /* The overlap switches the stack runs with (1) unless a job states its own: Megatron-LM's
   * overlap_grad_reduce, overlap_param_gather and tp_comm_overlap (sc_parallel's
   * overlap_*), as the stack's recipes set them. 0 = the stack does not turn it on. The
   * programs apply them to the switches a job leaves unstated (sc_stack_overlap_defaults). */
  int overlap_grad_reduce, overlap_param_gather, overlap_tp_comm;
  /* 1: the stack runs Transformer Engine's modules, which hold TE's own cuBLAS workspace
   * (and, under TP overlap, its userbuffers): memory per GPU (stepcast/memory.h). */
  int te_workspace;
  /* 1: the stack trains with PyTorch's automatic mixed precision and DDP, whose model
   * states take 22 B a parameter (sc_parallel.amp_layout); sc_stack_state_layout. */
  int amp_layout;
  uint32_t nkernels, ntraffic;
  sc_stack_rule kernels[SC_STACK_RULES_MAX]; /* kernels launched per operator (default 1) */
  sc_stack_rule traffic[SC_STACK_RULES_MAX]; /* multiple of the operator's bytes (default 1) */
  /* The stack's attention kernel on the devices it was measured on: replaces the device's
   * attention_fwd_efficiency and attention_bwd_efficiency (which describe the kernel the
   * device file names, e.g. FlashAttention-2) on a device of that name. */
  uint32_t nattention;
  sc_stack_attention attention[SC_STACK_DEVICES_MAX];
} sc_stack;

/* Load and validate a stack file (a name looked up in stacks/, or a path; see
 * sc_spec_resolve). Errors name file:line:col and the key. */
int sc_stack_load(const char *name_or_path, sc_stack *out, sc_error *err);

/* The stack's kernels for (family, variant): the variant's rule, else the family's, else 1.
 * NULL stack: 1. Likewise sc_stack_traffic (default 1). */
double sc_stack_kernels(const sc_stack *s, const char *family, uint32_t variant);
double sc_stack_traffic(const sc_stack *s, const char *family, uint32_t variant);

/* The stack's attention efficiency (bwd: of the backward) at head dimension hd on a; the
 * entry of the device named dev_name in s, or NULL. */
double sc_stack_attention_eff(const sc_stack_attention *a, double hd, int bwd);
const sc_stack_attention *sc_stack_attention_for(const sc_stack *s, const char *dev_name);

/* The GPU time of op under stack s on dev, given the estimate e of its plugin and t, the
 * time of one kernel (e->time_s, or a fitted residual's correction of it); t when s is NULL.
 * dev is the device as sc_stack_device left it: an attention whose head dimension the stack
 * rates below its largest one takes the ratio of the two rates longer, past launch_s. */
double sc_stack_gpu_s(const sc_stack *s, const sc_device *dev, const sc_op_desc *op,
                      const sc_estimate *e, double t);

/* dev as stack s runs it: *dev with the stack's attention efficiencies for a device of that
 * name (sc_stack.attention; those of its largest head dimension); *dev unchanged when s is
 * NULL or names none. Returns 1 when something was replaced. sc_stack_gpu_s then prices an
 * attention of another head dimension at the stack's rate for it. */
int sc_stack_device(const sc_stack *s, sc_device *dev);

/* p's overlap switches with s's defaults for those not stated: given[0..2] say whether the
 * job stated overlap_grad_reduce, overlap_param_gather and overlap_tp_comm (NULL: none
 * was). TP overlap only with tp > 1 and sequence parallelism (Transformer Engine's
 * userbuffers overlap needs both: Megatron-Bridge's CommOverlapConfig turns it off
 * otherwise). Returns how many switches the stack turned on. NULL s: none. */
int sc_stack_overlap_defaults(const sc_stack *s, const int *given, sc_parallel *p);

/* p's model-state layout as s trains (sc_parallel.amp_layout from s's amp_layout); NULL s
 * or a stack that does not state it: p unchanged. */
void sc_stack_state_layout(const sc_stack *s, sc_parallel *p);

/* The host time of one instance of op under s: kernels x host_per_kernel_s (0 for NULL). */
double sc_stack_host_s(const sc_stack *s, const sc_op_desc *op);

/* One stream of a pass, operator by operator: host and gpu are the times (from the pass's
 * start) at which the host has dispatched, and the GPU has finished, everything before.
 * Advances both over `count` instances of an operator of GPU time g and host time h:
 * host += h; gpu = max(gpu, host) + g, count times. */
void sc_stack_stream(double *host, double *gpu, double h, double g, uint64_t count);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_STACK_H */
