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
  uint32_t group_size;  /* collectives: args "Group size", 0 = unknown */
  uint8_t kind;         /* sc_trace_kind */
  uint8_t sync;         /* SC__SYNC_* (cuda_sync events) */
  uint8_t pad[2];
} sc__tev;

struct sc_trace {
  char *path;
  sc__tev *ev;
  size_t nev, capev;
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

/* Intern s[0..len) in t's pool; *off receives its offset. SC_ENOMEM. */
int sc__trace_intern(sc_trace *t, const char *s, size_t len, uint32_t *off);

/* classify.c: the dtype a kernel name states (else dflt); the collective kind
 * (sc_coll_kind) a NCCL kernel or annotation name states, -1 when none. */
sc_dtype sc__trace_kernel_dtype(const char *name, sc_dtype dflt);
int sc__trace_coll_kind(const char *name);

#endif
