/*
 * Memory per GPU outside the model states and activations (core/src/memory/other.c): the
 * libraries' workspaces, the caching allocator's fragmentation reserve, the CUDA context and
 * the communication libraries' buffers, each priced from a published figure
 * (docs/validation/memory-other.md gives the sources; docs/operators.md, "Memory per GPU",
 * the formula).
 *
 * Three figures are published as "a run's memory" and they nest; each is a sum of these
 * terms and of sc_memory (stepcast/workload.h):
 *   allocated (torch.cuda.max_memory_allocated)  = model states + activations + workspace
 *   reserved  (torch.cuda.max_memory_reserved)   = allocated x (1 + frag_fraction)
 *   device    (nvidia-smi, cudaMemGetInfo)        = reserved + context + communication
 * predict reports, and refuses on, the device figure (sc_memory_refused).
 */
#ifndef STEPCAST_MEMORY_H
#define STEPCAST_MEMORY_H

#include <stdint.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/spec.h"
#include "stepcast/stack.h"
#include "stepcast/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The refusal margin: a configuration is refused only when its predicted device figure
 * exceeds the device's capacity by more than this fraction of the capacity (why this value:
 * docs/operators.md, "Memory per GPU"). */
#define SC_MEMORY_REFUSE_MARGIN 0.05

/* What a GPU holds besides its model states and activations; the same on every pipeline
 * stage except the fragmentation reserve, a fraction of the stage's allocated bytes. */
typedef struct sc_memory_overhead {
  double workspace_bytes;    /* cuBLAS / cuBLASLt workspaces (PyTorch) and Transformer
                                Engine's, all PyTorch tensors: inside `allocated` */
  double frag_fraction;      /* reserved / allocated - 1 (the caching allocator's rounding
                                and fragmentation) */
  double context_bytes;      /* CUDA context of the process (outside PyTorch's allocator) */
  double comm_bytes;         /* NCCL buffers of the communicators that carry traffic, their
                                NVLS buffers, and Transformer Engine's userbuffers under TP
                                overlap (outside PyTorch's allocator) */
  double userbuffer_bytes;   /* the userbuffers' share of comm_bytes */
  uint32_t communicators;    /* NCCL communicators that carry traffic on this GPU */
  uint32_t nvls_communicators; /* of those, the ones with NVLS buffers */
} sc_memory_overhead;

/* The overhead of one GPU of configuration p (valid for m) on device dev, run by stack s
 * (NULL: no stack, PyTorch's own workspaces only) on topology t (NULL: no NVLS buffers, the
 * groups' placement unknown). A device whose kind is not "gpu" has none of these terms (all
 * zero). Errors: SC_EINVAL for a NULL m, p, dev or out; placement errors of sc_comm_group
 * (SC_ECONFIG) when t is given. */
int sc_memory_overhead_of(const sc_model *m, const sc_parallel *p, const sc_device *dev,
                          const sc_stack *s, const sc_topology *t, sc_memory_overhead *out,
                          sc_error *err);

/* The three nested figures of one stage (mem from sc_memory_per_gpu), bytes. */
double sc_memory_allocated_bytes(const sc_memory *mem, const sc_memory_overhead *o);
double sc_memory_reserved_bytes(const sc_memory *mem, const sc_memory_overhead *o);
double sc_memory_device_bytes(const sc_memory *mem, const sc_memory_overhead *o);

/* 1 when a device figure of device_bytes is refused on a device of capacity_bytes: past the
 * capacity by more than SC_MEMORY_REFUSE_MARGIN of it; 0 otherwise, and when the capacity is
 * not stated (<= 0). */
int sc_memory_refused(double device_bytes, double capacity_bytes);

/* The CUDA compute capability major that stepcast assumes for a device by its name
 * (NVIDIA: a100 8, h100/h200/h800/gh200 9, b200/gb200 10; 0 for any other name). */
uint32_t sc_memory_sm_major(const char *device_name);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_MEMORY_H */
