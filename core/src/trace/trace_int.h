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

#endif
