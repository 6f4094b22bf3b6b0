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

/* The span over topology t of a group of d ranks `stride` apart (ranks 0, stride, ...,
 * (d-1) stride) in a job of `total` GPUs; name names the group in errors. sc_comm_group's
 * placement for any such group: a shard of the data-parallel group (HSDP) or the replicas
 * of one shard. */
int sc__comm_group_strided(const sc_topology *t, uint64_t total, uint64_t stride, uint32_t d,
                           const char *name, sc_coll_desc *tmpl, sc_error *err);

#endif /* SC_COMM_INT_H */
