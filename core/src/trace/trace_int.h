/* Internal pieces of the trace-driven mode (core/src/trace/). */
#ifndef SC_TRACE_INT_H
#define SC_TRACE_INT_H

#include <stdint.h>

#include "stepcast/trace.h"

/* What a cuda_sync event or a blocking runtime call is. */
enum {
  SC__SYNC_NONE = 0,
  SC__SYNC_STREAM,      /* "Stream Sync" / cudaStreamSynchronize */
  SC__SYNC_EVENT,       /* "Event Sync" / cudaEventSynchronize */
  SC__SYNC_CONTEXT,     /* "Context Sync" / cudaDeviceSynchronize */
  SC__SYNC_WAIT_EVENT   /* "Stream Wait Event" / cudaStreamWaitEvent */
};

/* One kept event. Times in integer nanoseconds as the file states them (microseconds with
 * up to three decimals). */
typedef struct sc__tev {
  int64_t ts_ns, dur_ns;
  int64_t corr;         /* args.correlation, -1 when absent */
  int64_t pid;          /* CPU: process; GPU: args.device (else pid) */
  int64_t tid;          /* CPU: thread; GPU: args.stream (else tid) */
  int64_t wait_corr;    /* cuda_sync: wait_on_cuda_event_record_corr_id, -1 */
  double coll_bytes;    /* collectives: max(In, Out msg nelems) * dtype size; 0 = unknown */
  uint32_t name;        /* offset of the name in the string pool */
  int32_t wait_stream;  /* cuda_sync: wait_on_stream, -1 */
  uint32_t coll;        /* 1 + index in sc_trace.coll of its collective metadata; 0 = none */
  uint8_t kind;         /* sc_trace_kind */
  uint8_t sync;         /* SC__SYNC_* (cuda_sync events) */
  uint8_t pad[2];
} sc__tev;

/* The collective metadata an event's args state (PyTorch's record_param_comms operator and,
 * in recent Kineto, the NCCL kernel it launched): what the replay needs to name the
 * collective and to match it across ranks. */
#define SC__NONE UINT32_MAX
typedef struct sc__tcoll {
  int64_t seq;          /* "Seq": the process group's sequence number; -1 when absent */
  uint32_t name;        /* "Collective name" (pool offset), SC__NONE */
  uint32_t pg;          /* "Process Group Name" (pool offset), SC__NONE */
  int32_t peer;         /* "Dst Rank" / "Src Rank" of a send / recv (global rank), -1 */
  uint32_t group_size;  /* "Group size", 0 = unknown */
} sc__tcoll;

struct sc_trace {
  char *path;
  sc__tev *ev;
  size_t nev, capev;
  sc__tcoll *coll;      /* referenced by sc__tev.coll */
  size_t ncoll, capcoll;
  char *pool;           /* interned strings, NUL-terminated */
  size_t npool, cappool;
  uint32_t *hash;       /* open addressing over pool offsets + 1 (0 = empty) */
  size_t caphash, nhash;
  char **skip_kind;
  uint64_t *skip_count;
  size_t nskip, capskip;
  sc_trace_info info;
};

static inline const char *sc__tname(const sc_trace *t, uint32_t off) { return t->pool + off; }

/* The collective metadata of event e, NULL when it has none. */
static inline const sc__tcoll *sc__tcoll_of(const sc_trace *t, const sc__tev *e) {
  return e->coll ? &t->coll[e->coll - 1] : NULL;
}

/* Intern s[0..len) in t's pool; *off receives its offset. SC_ENOMEM. */
int sc__trace_intern(sc_trace *t, const char *s, size_t len, uint32_t *off);

/* classify.c: the dtype a kernel name states (else dflt); the collective kind
 * (sc_coll_kind) a NCCL kernel or annotation name or a "Collective name" states,
 * SC__COLL_OTHER for an operation stepcast does not model (reduce, gather, scatter),
 * -1 when it states none (ncclDevKernel_Generic). */
#define SC__COLL_OTHER (-2)
sc_dtype sc__trace_kernel_dtype(const char *name, sc_dtype dflt);
int sc__trace_coll_kind(const char *name);

/* ---- the replay's graph (graph.c, edit.c, match.c, breakdown.c, replay.c) ---- */

/* An edge: instant to is at least instant from + lag (ns). */
typedef struct sc__tedge {
  uint32_t from, to;
  double lag;
} sc__tedge;

typedef struct sc__tbuilder {
  sc__tedge *e;
  size_t n, cap;
} sc__tbuilder;

/* One rank's trace in the graph. */
typedef struct sc__trank {
  sc_trace *t;
  int64_t base_ns;        /* measured clock origin of this rank (aligned across ranks) */
  uint64_t off;           /* first instant of this rank */
  int64_t *stream;        /* per event: effective stream of a GPU op */
  uint8_t *fam;           /* per event: sc_kernel_family of a GPU op, 255 otherwise */
  uint8_t *a2a;           /* per event: runtime call inside an all_to_all annotation */
  int8_t *ckind;          /* per event: sc_coll_kind of a communication op (docs/trace.md,
                             "Collectives"), -1 when unknown or not one */
  uint8_t *cguess;        /* per event: 1 when ckind was guessed (nothing states it) */
  sc__tcoll *cmeta;       /* per event: collective metadata of a communication op, the
                             kernel's own args over its enclosing record_param_comms' */
  double *cbytes;         /* per event: message bytes of a communication op (the kernel's,
                             else its record_param_comms'), 0 = unknown */
  uint32_t *ops;          /* GPU ops sorted by (device, stream, ts) */
  size_t nops;
  int64_t *launch_ts;     /* per entry of ops: start of the launching call (or own ts) */
  uint32_t *by_launch;    /* positions in ops sorted by launch_ts */
  double *dur;            /* per event: replayed duration (ns) */
} sc__trank;

struct sc_trace_result {
  size_t nr;
  sc__trank *r;
  uint64_t ninst;
  double *M, *T;
  sc_trace_iter *iters;
  size_t niters;
  sc_trace_graph_info g;
};

/* The start and end instants of event ev of rank g. */
#define SC__START(g, ev) ((g)->off + 2 * (uint64_t)(ev))
#define SC__END(g, ev) ((g)->off + 2 * (uint64_t)(ev) + 1)

static inline int sc__trace_is_gpu(int kind) {
  return kind == SC_TRACE_KERNEL || kind == SC_TRACE_MEMCPY || kind == SC_TRACE_MEMSET;
}
static inline int sc__trace_is_cpu(int kind) {
  return kind == SC_TRACE_CPU_OP || kind == SC_TRACE_ANNOTATION || kind == SC_TRACE_RUNTIME;
}

/* A GPU op by (device, stream, ts), for qsort with sc__trace_cmp_okey. */
typedef struct sc__okey {
  int64_t dev, stream, ts;
  uint32_t ev;
} sc__okey;
int sc__trace_cmp_okey(const void *a, const void *b);

/* graph.c: append an edge to b (SC_ENOMEM); rank g's events, ops and edges into b, with
 * the overlap edit of ed applied to its streams, counts into gi; free nr ranks. */
int sc__trace_add_edge(sc__tbuilder *b, uint64_t from, uint64_t to, double lag);
int sc__trace_build_rank(sc__trank *g, const sc_trace_edits *ed, sc__tbuilder *b,
                         sc_trace_graph_info *gi, sc_error *err);
void sc__trace_free_ranks(sc__trank *r, size_t nr);

/* edit.c: g->dur, the durations (ns) of rank g's events after the hardware and dp edits of
 * ed (NULL: as measured); the overlap edit: every communication op of a device moves to
 * the device's compute stream (most non-communication kernel time), g->ops to be sorted
 * again. SC_OK, SC_ENOMEM, or an edit's error in err. */
int sc__trace_edited_durations(sc__trank *g, const sc_trace_edits *ed, sc_error *err);
int sc__trace_serialize_comm(sc__trank *g);

/* match.c: groups of communication kernels, one per rank at most, that are one collective
 * (or one send/recv pair). */
typedef struct sc__tcmem {
  uint32_t rank, ev;
} sc__tcmem;

typedef struct sc__tcmatch {
  sc__tcmem *m;     /* members, group after group */
  size_t nm, capm;
  size_t *start;    /* ng + 1 offsets into m */
  uint8_t *by_key;  /* per group */
  size_t ng, capg;
} sc__tcmatch;
void sc__trace_cmatch_free(sc__tcmatch *c);
/* Match the communication ops of all ranks (ntraces > 1): groups in *out (the keyed ones
 * first, then those by order that were kept), the clock offsets in off, counts in res->g. */
int sc__trace_match_comm(sc_trace_result *res, sc__tcmatch *out, int64_t *off, sc_error *err);

/* breakdown.c: the iterations of rank ri with their breakdown, appended to res->iters
 * (res->T replayed). SC_OK or SC_ENOMEM. */
int sc__trace_rank_iters(sc_trace_result *res, size_t ri);

#endif
