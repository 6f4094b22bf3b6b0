#!/usr/bin/env python3
"""Writes the two-rank fixtures of tests/test_trace.c (docs/trace.md, "Collectives").

seq_rank0.json, seq_rank1.json: two ranks of one job, each with an all-reduce of process
group "0", an all-gather of group "1" and a send (rank 0) / recv (rank 1) of group "0", the
metadata on the enclosing record_param_comms as PyTorch writes it ("Collective name",
"Process Group Name", "Seq", "Group size", "Dst Rank" / "Src Rank"). The kernels are all
ncclDevKernel_Generic and the groups' streams are swapped between the ranks (rank 0: group
"0" on stream 13, "1" on 20; rank 1: "0" on 20, "1" on 13), so pairing them by the order of
the streams would pair the all-reduce of one rank with the all-gather of the other.

order_rank0.json, order_rank1.json: the same job with no metadata (a trace of PyTorch
before record_param_comms carried it): the kinds come from nccl:<kind> annotations, the
send/recv kernels are named ncclDevKernel_SendRecv.

Times in microseconds; both ranks' clocks agree. Rank 1 computes a bf16 GEMM [10, 200] on
stream 20 before its all-reduce, so rank 0's all-reduce [100, 300] waits for it: the
all-reduce itself lasts 100 us after the last arrival (200).
"""
import json

def ev(cat, name, pid, tid, ts, dur, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e

def kern(name, dev, stream, ts, dur, corr):
    return ev("kernel", name, dev, stream, ts, dur, device=dev, stream=stream, correlation=corr)

GEN = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
P2P = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_nn"

def rank(r, meta):
    pid = 100 + r
    dev = r
    e = [ev("user_annotation", "ProfilerStep#1", pid, pid, 0, 1000)]
    corr = 10 * r + 1
    def comm(ts, kts, kdur, stream, coll, pg, seq, ann, peer=None):
        nonlocal corr
        args = {}
        if meta:
            args = {"Collective name": coll, "Process Group Name": pg, "Seq": seq,
                    "Group size": 2, "In msg nelems": 1048576, "Out msg nelems": 1048576,
                    "dtype": "BFloat16"}
            if peer is not None:
                args["Dst Rank" if coll == "send" else "Src Rank"] = peer
        e.append(ev("cpu_op", "record_param_comms", pid, pid, ts, 9, **args))
        e.append(ev("user_annotation", ann, pid, pid, ts + 1, 7))
        e.append(ev("cuda_runtime", "cudaLaunchKernel", pid, pid, ts + 2, 5, correlation=corr))
        name = GEN if meta or peer is None else P2P
        e.append(kern(name, dev, stream, kts, kdur, corr))
        corr += 1
    if r == 0:
        comm(90, 100, 200, 13, "allreduce", "0", 1, "nccl:all_reduce")
        comm(300, 310, 140, 20, "allgather", "1", 1, "nccl:all_gather")
        comm(400, 410, 90, 30, "send", "0", 1, "nccl:send", peer=1)
    else:
        e.append(ev("cuda_runtime", "cudaLaunchKernel", pid, pid, 5, 3, correlation=corr))
        e.append(kern(GEMM, dev, 20, 10, 190, corr))
        corr += 1
        comm(20, 200, 100, 20, "allreduce", "0", 1, "nccl:all_reduce")
        comm(300, 310, 140, 13, "allgather", "1", 1, "nccl:all_gather")
        comm(400, 410, 90, 30, "recv", "0", 1, "nccl:recv", peer=0)
    e.append(ev("cuda_runtime", "cudaDeviceSynchronize", pid, pid, 410, 100, correlation=corr))
    return {"schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": r, "world_size": 2},
            "traceEvents": e}

for prefix, meta in (("seq", True), ("order", False)):
    for r in (0, 1):
        d = rank(r, meta)
        with open(f"{prefix}_rank{r}.json", "w") as f:
            f.write('{"schemaVersion": 1, "distributedInfo": %s,\n "traceEvents": [\n'
                    % json.dumps(d["distributedInfo"]))
            f.write(",\n".join("  " + json.dumps(x) for x in d["traceEvents"]))
            f.write("\n]}\n")
