/*
 * Internals of the communication subsystem (core/src/comm/): the reader of the published
 * nccl-tests results used by `stepcast comm --validate` (docs/validation/nccl-tests.csv).
 * Not part of the public API; the CLI and the tests reach it.
 */
#ifndef SC_COMM_INT_H
#define SC_COMM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/comm.h"

/* One row of a validation file. Columns, in this order, with a header line naming them:
 *   id,source,system,topology,gpus,op,algo,bytes,busbw_GBps,notes
 * Fields may be double-quoted ("" inside is a quote). Lines starting with '#' and empty
 * lines are skipped. id: non-empty; source: non-empty (URL and which table or log);
 * topology: a topology name or path; gpus: integer >= 1; op: a kind name
 * (sc_comm_kind_parse); algo: "auto", "ring", "tree", ... (empty = auto); bytes: integer
 * >= 1 (nccl-tests' size column); busbw_GBps: number > 0 (GB = 1e9 bytes). */
typedef struct sc__vrow {
  uint32_t line;                 /* line in the file */
  char id[64];
  char source[512];
  char system[128];
  char topology[256];
  uint32_t gpus;
  sc_coll_kind op;
  char algo[32];
  double bytes;
  double busbw_Bps;
  char notes[512];
} sc__vrow;

/* Read path into a new array (*rows, *n; free with free()). Errors name "path:line: column
 * 'x': reason": SC_EIO (cannot open), SC_EPARSE (bad header, wrong number of fields,
 * unterminated quote, a value of the wrong form), SC_ENOMEM. An empty table (header only)
 * is SC_EPARSE too. */
int sc__comm_read_validation(const char *path, sc__vrow **rows, size_t *n, sc_error *err);

/* An nccl-tests run's standard output (ncclog.c): the out-of-place time of each size of
 * its results table (the '#' header line naming size, time and busbw gives the columns),
 * the collective (from "# Collective test starting: <name>_perf", when printed) and the
 * ranks ("#  Rank  N Group ..." lines, 0 when none). Other lines (NCCL INFO, warnings) are
 * skipped. Errors name path:line: a NUL byte, a row short of the time column, a size or
 * time that is not a positive number, a size twice or a second table (one run per log),
 * no table, no rows, an unknown collective. */
typedef struct sc__nccl_log_row {
  uint32_t line;
  double bytes;    /* the size column */
  double time_s;   /* out-of-place time */
} sc__nccl_log_row;
typedef struct sc__nccl_log {
  sc__nccl_log_row *rows;
  size_t n;
  int have_kind;
  sc_coll_kind kind;
  uint32_t ranks;
} sc__nccl_log;
int sc__comm_read_nccl_log(const char *path, sc__nccl_log *out, sc_error *err);
void sc__comm_nccl_log_free(sc__nccl_log *log);

/* NCCL 2.20's chunk size in bytes for an NVLS all-reduce of `bytes` bytes with `heads`
 * GPUs of the node in the group (16 NVLS channels; src/enqueue.cc computeCollChunkInfo):
 * 128 KiB, 64 KiB below 64 * 16 * heads * 128 KiB, 32 KiB below 8 * 16 * heads * 64 KiB,
 * 16 KiB below 2 * 16 * heads * 32 KiB. */
double sc__comm_nvls_chunk_bytes(double bytes, uint32_t heads);

/* Pipeline fill and drain of NCCL's single-node NVLS all-reduce (scatter, reduce/multicast,
 * gather), in seconds: 2 * bw_s * min(U, bytes) / bytes with U = 16 * heads * chunk
 * (sc__comm_nvls_chunk_bytes) and bw_s the bandwidth term of the whole operation;
 * 0 for bytes <= 0 or bw_s <= 0 (estimate.c; docs/comm.md, "NVLink SHARP"). */
double sc__comm_nvls_fill_s(double bytes, uint32_t heads, double bw_s);

#endif /* SC_COMM_INT_H */
