#!/usr/bin/env python3
"""Write layers4.json: a synthetic Kineto trace of one GPU-bound iteration with 4 layers.

One CPU thread launches every kernel on one stream (device 0, stream 7); the CPU runs far
ahead, so each kernel starts 2 us after its stream predecessor ends and the iteration
ends 3 us (the tail of cudaDeviceSynchronize) + 5 us after the last kernel.
Structure of ProfilerStep#1 (kernel durations in us):
  aten::embedding (30)
  4 x [aten::linear (gemm 100), aten::gelu (50)]                     forward layers
  aten::cross_entropy (40)
  4 x [evaluate_function: GeluBackward0 (60), MmBackward0 (gemm 200)] backward layers
  Optimizer.step (20), cudaDeviceSynchronize
Each layer adds (100 + 2) + (50 + 2) + (60 + 2) + (200 + 2) = 418 us on the critical path,
so N layers take measured + (N - 4) * 418 us (test_trace.c, layers_synthetic).
Run: python3 gen_layers.py > layers4.json
"""
import json

ops = [("aten::embedding", "embedding_kernel", 30)]
ops += [("aten::linear", "ampere_bf16_gemm_fwd", 100), ("aten::gelu", "gelu_kernel", 50)] * 4
ops += [("aten::cross_entropy", "xent_kernel", 40)]
ops += [("autograd::engine::evaluate_function: GeluBackward0", "gelu_bwd_kernel", 60),
        ("autograd::engine::evaluate_function: MmBackward0", "ampere_bf16_gemm_bwd", 200)] * 4
ops += [("Optimizer.step", "multi_tensor_apply_kernel", 20)]

ev = []
def x(cat, name, ts, dur, pid, tid, args=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        e["args"] = args
    ev.append(e)

c, g_end, corr = 10, None, 100
for name, kname, kdur in ops:
    x("cpu_op", name, c, 10, 1, 1)
    x("cuda_runtime", "cudaLaunchKernel", c + 2, 5, 1, 1, {"correlation": corr})
    start = c + 2 + 5 if g_end is None else g_end + 2
    assert start >= c + 2 + 5, "the CPU must stay ahead"
    x("kernel", kname, start, kdur, 0, 7, {"correlation": corr, "device": 0, "stream": 7})
    g_end = start + kdur
    c += 12
    corr += 1
sync_end = g_end + 3
x("cuda_runtime", "cudaDeviceSynchronize", c, sync_end - c, 1, 1, {"correlation": corr})
x("user_annotation", "ProfilerStep#1", 0, sync_end + 5, 1, 1)
ev.sort(key=lambda e: (e["ts"], -e["dur"]))
print(json.dumps({"schemaVersion": 1, "traceEvents": ev}, indent=0))
