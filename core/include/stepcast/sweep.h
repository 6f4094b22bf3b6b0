/*
 * Design-space sweep: every parallel configuration of a model on a number of GPUs of a
 * topology (TP, PP, DP, CP, micro-batch, pipeline schedule and virtual stages,
 * recomputation, sequence parallelism, distributed optimizer), the invalid ones skipped with
 * a counted reason, the rest predicted exactly as sc_predict would, the best K kept.
 *
 * The space is a Cartesian product of choice lists, enumerated in a fixed order (tp, pp,
 * cp, micro-batch, schedule, recompute, sequence parallel, distributed optimizer; the last
 * varies fastest); a configuration's index is its position in that order. Work is split in
 * units of (tp, pp, cp, micro-batch): unit u belongs to rank u % nranks (MPI), and the
 * threads of a rank take its units one at a time. The top list is ordered by the objective
 * (iteration time by default; the cost or energy of a token budget), ties by iteration time
 * then index, so serial, threaded and distributed runs give the same list.
 *
 * Speed (docs/sweep.md): validity checks before any estimate; memory from the three stages
 * that can be the worst; per-chunk times computed once per chunk class (first, middle, last
 * virtual stage) and memoised across configurations; a lower bound on the iteration time
 * from the chunk times prunes configurations that cannot enter the top list before their
 * schedule is simulated. With the analytical estimator every number equals sc_predict's bit
 * for bit (tests/test_sweep.c compares); other estimators go through sc_predict itself.
 */
#ifndef STEPCAST_SWEEP_H
#define STEPCAST_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/parallel.h"
#include "stepcast/plugin.h"
#include "stepcast/predict.h"
#include "stepcast/registry.h"
#include "stepcast/report.h"
#include "stepcast/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SC_SWEEP_MAX_CHOICES 64

/* Why a configuration was not predicted; the first rule it breaks, in this order. */
typedef enum {
  SC_SWEEP_SKIP_GPUS = 0,   /* tp*pp*cp does not divide the GPU count (no integer dp) */
  SC_SWEEP_SKIP_TP,         /* tp does not divide heads, kv_heads or ffn_hidden */
  SC_SWEEP_SKIP_PP,         /* pp does not divide layers (the sweep splits evenly) */
  SC_SWEEP_SKIP_CP,         /* cp > 1 and seq_len not divisible by 2*cp */
  SC_SWEEP_SKIP_PLACEMENT,  /* the GPUs or a group cannot be placed on the topology */
  SC_SWEEP_SKIP_BATCH,      /* global batch not divisible by micro_batch * dp */
  SC_SWEEP_SKIP_SCHEDULE,   /* interleaved: pp < 2, vp not dividing layers/pp, pp*vp >
                               layers or micro-batches not a multiple of pp; dualpipe: pp
                               odd, micro-batches odd or fewer than 2*pp */
  SC_SWEEP_SKIP_SEQPAR,     /* sequence parallel with seq_len/cp not divisible by tp */
  SC_SWEEP_SKIP_DUPLICATE,  /* same prediction as another point: sequence parallel with
                               tp = 1, distributed optimizer with dp*cp = 1 */
  SC_SWEEP_SKIP_INVALID,    /* refused by sc_workload_validate for another reason */
  SC_SWEEP_SKIP_MEMORY,     /* the busiest GPU's memory is refused (sc_memory_refused, as
                               sc_predict refuses it) */
  SC_SWEEP_SKIP_ERROR,      /* the prediction failed otherwise (counted, not fatal) */
  SC_SWEEP_NSKIP
} sc_sweep_skip;

/* "gpus", "tp", "pp", "cp", "placement", "batch", "schedule", "seqpar", "duplicate",
 * "invalid", "memory", "error"; "?" out of range. */
const char *sc_sweep_skip_name(sc_sweep_skip s);

/* One choice of the schedule dimension. */
typedef struct sc_sweep_sched {
  sc_schedule_kind kind;
  uint32_t vp;                  /* virtual stages: >= 2 interleaved, 1 for the others */
} sc_sweep_sched;

typedef struct sc_sweep_space {
  /* Fixed for every point: seq_len, global_batch, dtype, flash_attention, order and the
   * overlap switches are taken from base; its degrees, micro_batch, schedule,
   * virtual_stages, recompute, sequence_parallel, distributed_optimizer and zero_stage
   * are replaced (shard_size is 0).
   * stage_layers must be empty (even pipeline splits only). */
  sc_parallel base;
  uint32_t gpus;                /* tp*pp*dp*cp; dp is derived */
  uint32_t ntp, tp[SC_SWEEP_MAX_CHOICES];
  uint32_t npp, pp[SC_SWEEP_MAX_CHOICES];
  uint32_t ncp, cp[SC_SWEEP_MAX_CHOICES];
  uint32_t nmb, mb[SC_SWEEP_MAX_CHOICES];
  uint32_t nsched;
  sc_sweep_sched sched[SC_SWEEP_MAX_CHOICES];
  uint32_t nrecompute;
  sc_recompute recompute[3];
  uint32_t nsp;
  int sp[2];                    /* sequence parallel off / on */
  uint32_t ndo;
  int dopt[4];                  /* data-parallel sharding: the ZeRO stage, 0 (none), 1 (the
                                   distributed optimizer), 2 or 3 (sc_parallel.zero_stage),
                                   over the whole DP x CP group */
  /* Mixture-of-experts degrees (sc_parallel.ep, etp); nep / netp 0 = base's alone. With
   * more than one choice, configurations whose ep*etp does not divide tp*cp*dp or ep
   * num_experts are skipped as invalid. */
  uint32_t nep, ep[SC_SWEEP_MAX_CHOICES];
  uint32_t netp, etp[SC_SWEEP_MAX_CHOICES];
} sc_sweep_space;

/* The default space for gpus GPUs, global batch global_batch sequences of seq_len tokens
 * (0 = the model's max_seq): tp, pp and cp every divisor of gpus (at most 64 each), every
 * micro-batch dividing global_batch (at most 64, smallest first), schedules gpipe, 1f1b
 * and interleaved with 2, 3, 4, 6 or 8 virtual stages (the schedules Megatron-LM runs;
 * zb-h1 and dualpipe only when asked for), recompute none/selective/full,
 * sequence parallel off/on, distributed optimizer off/on; bf16, flash attention, no
 * overlap, Megatron order. SC_EINVAL naming the parameter for gpus or global_batch 0. */
int sc_sweep_space_defaults(sc_sweep_space *s, const sc_model *m, uint32_t gpus,
                            uint32_t global_batch, uint32_t seq_len, sc_error *err);

/* Configurations in the space (the product of the list lengths). */
uint64_t sc_sweep_space_size(const sc_sweep_space *s);

/* The configuration at index (< sc_sweep_space_size) into *out (dp derived as
 * gpus / (tp*pp*cp), 0 when that does not divide). SC_ERANGE for an index out of range. */
int sc_sweep_config(const sc_sweep_space *s, uint64_t index, sc_parallel *out, sc_error *err);

/* Called for every predicted configuration (from the thread that predicted it; thread is
 * 0 .. nthreads-1). unit is the (tp, pp, cp, micro-batch) unit; within a unit the calls
 * come in index order. Return non-zero to stop the sweep (sc_sweep_run then returns
 * SC_EIO with "sweep: stopped by the caller"). */
typedef int (*sc_sweep_visit_fn)(void *ud, uint32_t thread, uint64_t unit, uint64_t index,
                                 const sc_result *r);

/* What the top list is ordered by (the same for every configuration of a run, the same
 * arithmetic as predict's: sc_result_finish). */
typedef enum sc_sweep_objective {
  SC_SWEEP_OBJ_TIME = 0,        /* the iteration time (the default) */
  SC_SWEEP_OBJ_COST,            /* the cost of the token budget: GPU-hours x price per
                                   GPU-hour (sc_result.cost) */
  SC_SWEEP_OBJ_ENERGY,          /* the energy of the token budget: GPUs x board power x
                                   power fraction x PUE x time to train (sc_result.energy_j) */
  SC_SWEEP_NOBJ
} sc_sweep_objective;

/* "time", "cost", "energy"; "?" out of range. */
const char *sc_sweep_objective_name(sc_sweep_objective o);

/* Parse one of the names above into *out. SC_EINVAL naming the parameter ("objective")
 * for anything else. */
int sc_sweep_objective_parse(const char *s, sc_sweep_objective *out, sc_error *err);

/* The figure r is ranked by: iteration_s (time), cost (cost) or energy_j (energy), as
 * sc_result_finish derived them. With the GPU count, batch, sequence length and training
 * inputs of a run fixed, cost and energy are a constant times the time to train, so within
 * one sc_sweep_run they order configurations as time does; they differ between runs of
 * different GPU counts (merged with sc_sweep_result_merge). */
double sc_sweep_objective_value(const sc_result *r, sc_sweep_objective o);

/* Whether objective o can be ranked with the training inputs of po on dev: cost needs a
 * token budget and a price per GPU-hour > 0, energy a token budget and a device that
 * states its board power (board_power_w > 0); time needs nothing. SC_EINVAL naming what is
 * missing ("objective: cost needs ..."). */
int sc_sweep_objective_check(sc_sweep_objective o, const sc_predict_opts *po,
                             const sc_device *dev, sc_error *err);

typedef struct sc_sweep_opts {
  uint32_t top_k;               /* configurations kept, >= 1 */
  int prune;                    /* 1: skip points whose lower bound cannot enter the top
                                   list (default 1; forced 0 when visit is set) */
  int exact;                    /* 1: predict every point with sc_predict itself (slow;
                                   for tests). Always so for a non-analytical estimator. */
  uint32_t rank, nranks;        /* share of this process (MPI): units u % nranks == rank */
  sc_predict_opts predict;      /* estimator, collective algorithm, allow_oom, tokens,
                                   power fraction, PUE, price per GPU-hour */
  sc_sweep_objective objective; /* what the top list is ordered by (default time);
                                   checked with sc_sweep_objective_check */
  sc_sweep_visit_fn visit;      /* may be NULL */
  void *visit_ud;
} sc_sweep_opts;

/* top_k 10, prune 1, exact 0, rank 0 of 1, sc_predict_opts_defaults, objective time, no
 * visitor. */
void sc_sweep_opts_defaults(sc_sweep_opts *o);

typedef struct sc_sweep_entry {
  uint64_t index;               /* position in the space */
  sc_result result;             /* as sc_predict fills it */
} sc_sweep_entry;

/* What a sweep found. Every configuration of this run's share is counted once:
 * sum(skipped) + pruned + predicted == share of the space (== space when nranks == 1).
 * The skip counts do not depend on pruning, threads or ranks; the split between pruned
 * and predicted does. */
typedef struct sc_sweep_result {
  uint64_t space;               /* size of the whole space */
  uint64_t considered;          /* configurations of this share */
  uint64_t skipped[SC_SWEEP_NSKIP];
  uint64_t pruned;              /* valid and fitting, bound above the K-th best */
  uint64_t predicted;           /* schedule simulated, result complete */
  uint32_t top_k;
  sc_sweep_objective objective; /* what top is ordered by */
  uint32_t ntop;                /* <= top_k */
  sc_sweep_entry *top;          /* ntop entries, best first: by the objective's figure,
                                   ties by iteration time, then by index (owned;
                                   sc_sweep_result_free) */
  double elapsed_s;             /* wall time of sc_sweep_run */
} sc_sweep_result;

/* Sweep space s of model m on topology t with device dev. regs holds nthreads registries
 * (>= 1), one per thread, each loaded with the same plugins (a registry serves one thread
 * at a time); thread 0 runs on the calling thread. dev, t and m are shared read-only.
 * Fills *out (free with sc_sweep_result_free). Errors: SC_EINVAL naming the parameter (NULL,
 * empty list, a degree or batch of 0, top_k 0, rank >= nranks, stage_layers set, an
 * objective sc_sweep_objective_check refuses),
 * SC_EUNSUPPORTED when dev has no peak for the dtype, SC_ENOMEM, SC_ENOTFOUND when a
 * plugin is missing, SC_EIO when the visitor stopped it. A configuration that fails on its
 * own (memory, placement, ...) is counted, not an error. */
int sc_sweep_run(sc_registry *const *regs, uint32_t nthreads, const sc_model *m,
                 const sc_topology *t, const sc_device *dev, const sc_sweep_space *s,
                 const sc_sweep_opts *o, sc_sweep_result *out, sc_error *err);

/* Add src's counts into dst and merge the top lists (keeping dst->top_k best by
 * dst->objective, ties by iteration time, then by index). dst and src come from runs of
 * the same top_k and objective: on different shares of one space, or (with src's indices
 * made distinct by the caller, and space summed by the caller) of spaces of different GPU
 * counts. SC_EINVAL when top_k or the objective differs, SC_ENOMEM. */
int sc_sweep_result_merge(sc_sweep_result *dst, const sc_sweep_result *src, sc_error *err);

/* Free the top list (the struct itself is the caller's). NULL is a no-op. */
void sc_sweep_result_free(sc_sweep_result *r);

/* ------------------------------------------------------------------------- */
/* Co-design: variants of a device or a network                               */

#define SC_VARY_MAX_VALUES 32

/* One --vary: a field and its values. Fields are named by their struct names:
 * "hardware.<f>" with f one of mem_bytes, mem_bw_Bps, l2_bytes, flops_efficiency,
 * mem_efficiency, launch_s, attention_fwd_efficiency, attention_bwd_efficiency,
 * peak_flops_per_s (every dtype) or peak_flops_per_s[<dtype>]; flops_efficiency as a
 * multiplier also scales the per-dtype matmul and the attention efficiencies the device
 * states, as an absolute value it replaces the per-dtype matmul efficiencies;
 * "topology.tier[<i>].<f>" with f one of bw_Bps, latency_s, oversubscription, efficiency.
 * A value is a multiplier of the loaded figure ("1.5x") or an absolute number ("2e12"). */
typedef struct sc_vary {
  char field[96];               /* as given */
  int target;                   /* 0 hardware, 1 topology tier */
  int tier;                     /* tier index (target 1) */
  int dtype;                    /* peak_flops_per_s[dtype]; -1 = all dtypes */
  size_t offset;                /* of the double within sc_device or sc_tier */
  uint32_t nvalues;
  double value[SC_VARY_MAX_VALUES];
  int multiplier[SC_VARY_MAX_VALUES]; /* 1: value multiplies the loaded figure */
  char text[SC_VARY_MAX_VALUES][24];  /* each value as written */
} sc_vary;

/* Parse "FIELD=V1,V2,..." into *out. SC_EINVAL with a one-line message naming the field
 * or value: no '=', unknown field, tier index not a non-negative integer, empty or
 * malformed value ("1.5y", "x", "-2x", 0 multiplier, more than SC_VARY_MAX_VALUES). The
 * tier index is checked against a topology by sc_vary_apply. */
int sc_vary_parse(const char *spec, sc_vary *out, sc_error *err);

/* Apply value i of v to dev or t (copies the caller made of the loaded specs). SC_ERANGE
 * naming the field when the tier index is not below t->ntiers or i >= nvalues; SC_ESPEC
 * when the result is not a valid device or topology (a bandwidth <= 0, an efficiency
 * outside (0, 1], oversubscription < 1, ...). The registry memo identifies a device by its
 * name: clear it (sc_registry_memo_clear) before predicting with a changed device. */
int sc_vary_apply(const sc_vary *v, uint32_t i, sc_device *dev, sc_topology *t,
                  sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_SWEEP_H */
