/*
 * Internals of the communication subsystem (core/src/comm/). Not part of the public API (the
 * readers of published nccl-tests results and logs are, in stepcast/comm.h).
 */
#ifndef SC_COMM_INT_H
#define SC_COMM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/comm.h"

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

/* sc_comm_group for part of group g: its members 0, every, 2 every, ... (d of them; 0 = the
 * whole group when every is 1), named name in errors (NULL: the group's name). A shard of
 * the data-parallel group (HSDP: every 1, d the shard's ranks) or the replicas of one shard
 * (every = the shard's ranks, d the replicas). */
int sc__comm_group_part(const sc_topology *t, const sc_parallel *p, sc_group_kind g,
                        uint32_t every, uint32_t d, const char *name, sc_coll_desc *tmpl,
                        sc_error *err);

#endif /* SC_COMM_INT_H */
