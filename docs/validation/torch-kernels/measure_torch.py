#!/usr/bin/env python3
"""Measure, on one CUDA GPU through PyTorch, what stepcast's GPU fits and software stacks need.

Run on the GPU machine (run.sh beside this file); needs PyTorch with CUDA, nothing else.
Writes, under --out:

  env.txt    torch, CUDA, GPU name, multiprocessors, clocks (nvidia-smi), and the run's log
  ops.csv    family,variant,dtype,dims,measured_s,eager_s,impl,source
             one operator a row in stepcast's operator notation (core/include/stepcast/ops.h;
             `stepcast estimate --csv` reads it). measured_s is the GPU time of one call: k calls
             queued behind a spin kernel (torch.cuda._sleep) so that the host's dispatch is
             hidden, the median of 5 such runs over k (kernels back to back in one stream;
             --graphs: from CUDA-graph replay instead). eager_s is one call of the same in a plain
             Python loop between two CUDA events: the host's dispatch included, so where it
             exceeds measured_s the host, not the GPU, set the pace. impl names the PyTorch
             call (the software stack's choice); source is this script's section.
  host.csv   probe,kernels,eager_s,graph_s: per-call time of tiny operators (negligible GPU
             work) in an eager loop and in a graph: PyTorch's host cost per operator.
  steps.csv  one training step of GPT-3-style models (models/gpt3-*.toml) in PyTorch eager,
             bf16 autocast, SDPA (PyTorch's own choice of backend: cuDNN's on Hopper), fused
             AdamW, one GPU: the median wall time of
             a step, and from one profiled step the number of GPU kernels and the sum of
             their durations (the GPU's busy time).
  kernels.csv  model,mb,kernel,count,total_s: the profiled step's kernels by name (template
             arguments cut), how many and their summed durations.
             Section steps_compiled: GPT-3 125M and 350M under torch.compile
             (mode 'reduce-overhead': Inductor's kernels from CUDA graphs).
             Section steps_llama: the same for HF-Llama-style models (TinyLlama-1.1B's shape:
             RMSNorm in fp32, rotary embedding, GQA, SwiGLU, no biases, untied embeddings).
  trace-*.json.gz  the profiled step of the smallest model at micro-batch 1 (Chrome trace).

Every section is timed against --budget seconds and stops early rather than run over; each
CSV is written when its section ends, so a cut run keeps what it measured.
"""
import argparse
import csv
import gzip
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

T0 = time.time()
ARGS = None
LOG = []


def log(msg):
    line = "[%6.1f s] %s" % (time.time() - T0, msg)
    print(line, flush=True)
    LOG.append(line)


def left():
    return ARGS.budget - (time.time() - T0)


def sync():
    torch.cuda.synchronize()


def eager_time(fn, est):
    """One call of fn in a plain loop between two events (host dispatch included)."""
    k = max(3, min(200, int(2e-3 / max(est, 1e-6))))
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    best = []
    for _ in range(3):
        e0.record()
        for _ in range(k):
            fn()
        e1.record()
        e1.synchronize()
        best.append(e0.elapsed_time(e1) / 1e3 / k)
    return statistics.median(best)


def graph_time(fn, est):
    """GPU time of one call: n calls in one CUDA graph, median of 5 replays over n."""
    n = max(1, min(64, int(2e-3 / max(est, 1e-6))))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(s)
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    sync()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(5):
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3 / n)
    del g
    return statistics.median(ts)


def queued_time(fn, eager):
    """GPU time of one call without graphs: a spin kernel holds the GPU while the host queues
    k calls behind it, so the events around the k calls see the GPU's time, not the host's.
    (CUDA-graph capture of autograd backwards with RNG state fails in PyTorch 2.11.)"""
    k = max(1, min(64, int(2e-3 / max(eager, 1e-6))))
    cycles = int((1.5 * k * eager + 1e-3) * 2.0e9)  # SM clock <= 2 GHz: at least that long
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(5):
        torch.cuda._sleep(cycles)
        e0.record()
        for _ in range(k):
            fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3 / k)
    return statistics.median(ts)


def bench(fn):
    fn()
    sync()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    e1.synchronize()
    est = e0.elapsed_time(e1) / 1e3
    eg = eager_time(fn, est)
    if ARGS.graphs:
        try:
            return graph_time(fn, min(est, eg)), eg
        except Exception as ex:
            log("graph capture failed (%s): %s" % (type(ex).__name__, str(ex).splitlines()[0][:120]))
    return queued_time(fn, eg), eg


class Table:
    def __init__(self, name, cols):
        self.name, self.cols, self.rows = name, cols, []

    def add(self, *row):
        self.rows.append(row)

    def write(self):
        path = os.path.join(ARGS.out, self.name)
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.cols)
            for r in self.rows:
                w.writerow([("%.6e" % v) if isinstance(v, float) else v for v in r])
        os.replace(tmp, path)


OPS = None
KERNELS = None


def op_row(fam, var, dims, fn, impl, section, dtype="bf16"):
    try:
        gt, eg = bench(fn)
    except torch.cuda.OutOfMemoryError:
        log("%s %d %s: out of memory, skipped" % (fam, var, dims))
        torch.cuda.empty_cache()
        return
    except Exception as ex:
        log("%s %d %s %s failed: %s" % (fam, var, dims, impl, str(ex).splitlines()[0][:160]))
        return
    OPS.add(fam, var, dtype, "x".join(str(d) for d in dims), gt, eg, impl, section)


def grad_fn(y, inputs, dy):
    return lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True)


BF = torch.bfloat16
DEV = "cuda"


def rnd(*shape, dtype=BF, grad=False):
    t = torch.randn(*shape, device=DEV, dtype=dtype)
    if grad:
        t.requires_grad_(True)
    return t


# ---------------------------------------------------------------------------------------
# host probes


def section_host(host):
    x = torch.zeros(1, device=DEV)
    a = rnd(16, 16)
    w = rnd(16, 16)
    ln_w = rnd(16)
    ln_b = rnd(16)
    q = rnd(1, 1, 16, 64)
    xl = rnd(16, 16, grad=True)
    lin = torch.nn.Linear(16, 16, device=DEV, dtype=BF)
    probes = [
        ("add_", 1, lambda: x.add_(1.0)),
        ("mul", 1, lambda: a * a),
        ("linear(cuBLAS)", 1, lambda: F.linear(a, w)),
        ("layer_norm", 1, lambda: F.layer_norm(a, (16,), ln_w, ln_b)),
        ("sdpa_flash", 1, lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)),
        ("empty(no kernel)", 0, lambda: torch.empty(16, device=DEV)),
    ]
    for name, k, fn in probes:
        gt, eg = bench(fn)
        host.add(name, k, eg, gt)
        log("host %-18s eager %.2f us graph %.2f us" % (name, eg * 1e6, gt * 1e6))

    def fwd_bwd():
        y = lin(xl)
        y.sum().backward()

    eg = eager_time(fwd_bwd, 1e-5)
    host.add("linear fwd+bwd(autograd,AccumulateGrad)", 0, eg, float("nan"))
    log("host linear fwd+bwd eager %.2f us" % (eg * 1e6))
    ps = [torch.nn.Parameter(rnd(16, dtype=torch.float32)) for _ in range(100)]
    for p in ps:
        p.grad = torch.zeros_like(p)
    for impl, kw in (("fused", dict(fused=True)), ("foreach", dict(foreach=True)),
                     ("for-loop", dict(foreach=False))):
        opt = torch.optim.AdamW(ps, lr=1e-4, **kw)
        opt.step()
        eg = eager_time(opt.step, 1e-5)
        host.add("adamw %s, 100 tensors of 16" % impl, 0, eg, float("nan"))
        log("host adamw %s 100 tensors eager %.1f us" % (impl, eg * 1e6))


# ---------------------------------------------------------------------------------------
# operators


def section_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    shapes = []
    for hh, kvh, hd in ((12, 12, 64), (16, 16, 128), (32, 32, 128), (32, 8, 128), (64, 8, 128)):
        for s in (512, 1024, 2048, 4096, 8192):
            for b in (1, 2, 4, 8):
                if b * s <= 32768 and b * s * hh <= 32768 * 32:
                    shapes.append((b, hh, kvh, s, hd))
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for bname, be in backends:
        for i, (b, hh, kvh, s, hd) in enumerate(shapes):
            if left() < ARGS.reserve:
                return
            if bname == "cudnn" and i % 2:
                continue  # half the grid: enough to compare the two kernels
            for causal in (0, 1):
                q = rnd(b, hh, s, hd, grad=True)
                k = rnd(b, kvh, s, hd, grad=True)
                v = rnd(b, kvh, s, hd, grad=True)
                gqa = kvh != hh
                dims = (b, hh, kvh, s, s, hd, causal)
                impl = "sdpa-%s%s" % (bname, "-gqa" if gqa else "")
                try:
                    with sdpa_kernel([be]):
                        fwd = lambda: F.scaled_dot_product_attention(
                            q, k, v, is_causal=bool(causal), enable_gqa=gqa)
                        op_row("attention", 0, dims, fwd, impl, "attention")
                        y = fwd()
                        dy = torch.randn_like(y)
                        op_row("attention", 1, dims, grad_fn(y, (q, k, v), dy), impl,
                               "attention")
                        del y, dy
                except Exception as ex:
                    log("attention %s %s: %s" % (impl, dims, str(ex).splitlines()[0][:160]))
                del q, k, v
    torch.cuda.empty_cache()


def rms_unfused(x, w):
    # GPT-NeoX / Llama reference RMSNorm: fp32 statistics, several kernels
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    return (w * (xf * torch.rsqrt(var + 1e-6))).to(x.dtype)


def section_norm():
    for rows in (1024, 4096, 16384, 65536):
        for cols in (768, 1024, 2048, 4096, 5120, 8192, 12288):
            if left() < ARGS.reserve:
                return
            if rows * cols > 2 ** 29:
                continue
            x = rnd(rows, cols, grad=True)
            w = rnd(cols, grad=True)
            bb = rnd(cols, grad=True)
            wf = rnd(cols, dtype=torch.float32, grad=True)
            dims = (rows, cols)
            cases = [
                (0, "layer_norm(fused)", lambda: F.layer_norm(x, (cols,), w, bb, 1e-5), (x, w, bb)),
                (2, "rms_norm(torch)", lambda: F.rms_norm(x, (cols,), w, 1e-6), (x, w)),
                (2, "rmsnorm-unfused(fp32 weight)", lambda: rms_unfused(x, wf), (x, wf)),
            ]
            for var, impl, fwd, ins in cases:
                op_row("norm", var, dims, fwd, impl, "norm")
                try:
                    y = fwd()
                    dy = torch.randn_like(y)
                    op_row("norm", var + 1, dims, grad_fn(y, ins, dy), impl, "norm")
                    del y, dy
                except Exception as ex:
                    log("norm bwd %s: %s" % (impl, str(ex).splitlines()[0][:160]))
            del x, w, bb, wf
    torch.cuda.empty_cache()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_unfused(q, k, cos, sin):
    # GPT-NeoX apply_rotary_pos_emb (eager, not TorchScript)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def section_elementwise():
    for e in (2 ** 16, 2 ** 18, 2 ** 20, 2 ** 22, 2 ** 24, 2 ** 26, 2 ** 28):
        if left() < ARGS.reserve:
            return
        cols = 4096 if e >= 4096 else e
        a = rnd(e // cols, cols, grad=True)
        bias = rnd(cols, grad=True)
        b2 = rnd(e // cols, cols, grad=True)
        cases = [
            (0, "bias+gelu(tanh), 2 kernels", lambda: F.gelu(a + bias, approximate="tanh"), (a, bias)),
            (2, "silu(a)*b, 2 kernels", lambda: F.silu(a) * b2, (a, b2)),
        ]
        for var, impl, fwd, ins in cases:
            op_row("elementwise", var, (e,), fwd, impl, "elementwise")
            y = fwd()
            dy = torch.randn_like(y)
            op_row("elementwise", var + 1, (e,), grad_fn(y, ins, dy), impl, "elementwise")
            del y, dy
        op_row("elementwise", 8, (e,), lambda: a + b2, "add", "elementwise")
        del a, b2, bias
        # rotary on q and k of (s, b, h, d) with d = 128: elements of q and k together = e
        hd, hh = 128, 32
        sb = max(1, e // (2 * hh * hd))
        q = rnd(sb, 1, hh, hd, grad=True)
        k = rnd(sb, 1, hh, hd, grad=True)
        cos = rnd(sb, 1, 1, hd)
        sin = rnd(sb, 1, 1, hd)
        fwd = lambda: rope_unfused(q, k, cos, sin)
        op_row("elementwise", 9, (2 * sb * hh * hd,), fwd, "rope-unfused(neox eager)", "elementwise")
        yq, yk = fwd()
        dq, dk = torch.randn_like(yq), torch.randn_like(yk)
        op_row("elementwise", 10, (2 * sb * hh * hd,),
               lambda: torch.autograd.grad((yq, yk), (q, k), (dq, dk), retain_graph=True),
               "rope-unfused(neox eager)", "elementwise")
        del q, k, cos, sin, yq, yk, dq, dk
    torch.cuda.empty_cache()


def section_softmax():
    for rows in (2 ** 12, 2 ** 14, 2 ** 16, 2 ** 18, 2 ** 20):
        for cols in (128, 512, 1024, 2048, 4096, 8192):
            if left() < ARGS.reserve:
                return
            if rows * cols > 2 ** 30 or rows * cols < 2 ** 18:
                continue
            x = rnd(rows, cols, grad=True)
            fwd = lambda: torch.softmax(x, dim=-1)
            op_row("softmax", 0, (rows, cols), fwd, "torch.softmax(no scale, no mask)", "softmax")
            y = fwd()
            dy = torch.randn_like(y)
            op_row("softmax", 1, (rows, cols), grad_fn(y, (x,), dy),
                   "torch.softmax(no scale, no mask)", "softmax")
            del x, y, dy
    torch.cuda.empty_cache()


def section_gemm():
    shapes = set()
    for d in (768, 1024, 2048, 4096, 8192):
        for m in (1024, 2048, 8192, 16384):
            for n, k in ((3 * d, d), (d, d), (4 * d, d), (d, 4 * d)):
                shapes.add((1, m, n, k))
    for (b, m, n, k) in ((96, 2048, 2048, 128), (32, 4096, 4096, 128), (64, 1024, 64, 1024),
                         (1, 4096, 50304, 4096), (1, 8192, 50304, 2048), (1, 128, 128, 128),
                         (1, 512, 512, 512)):
        shapes.add((b, m, n, k))
    for (b, m, n, k) in sorted(shapes):
        if left() < ARGS.reserve:
            return
        A = rnd(b, m, k) if b > 1 else rnd(m, k)
        B = rnd(b, k, n) if b > 1 else rnd(k, n)
        op_row("gemm", 0, (b, m, n, k), lambda: torch.matmul(A, B), "torch.matmul(cuBLAS)", "gemm")
        del A, B
    torch.cuda.empty_cache()


def section_embed_ce():
    for vocab in (50304, 128256):
        for hidden in (768, 2048, 4096):
            for tokens in (2048, 8192, 32768):
                if left() < ARGS.reserve:
                    return
                W = rnd(vocab, hidden, grad=True)
                ids = torch.randint(0, vocab, (tokens,), device=DEV)
                fwd = lambda: F.embedding(ids, W)
                op_row("embedding", 0, (tokens, hidden, vocab), fwd, "F.embedding(bf16 table)", "embedding")
                y = fwd()
                dy = torch.randn_like(y)
                op_row("embedding", 1, (tokens, hidden, vocab), grad_fn(y, (W,), dy),
                       "F.embedding(bf16 table, dense grad)", "embedding")
                del W, y, dy
        for tokens in (2048, 8192, 16384):
            if left() < ARGS.reserve:
                return
            logits = rnd(tokens, vocab, grad=True)
            tgt = torch.randint(0, vocab, (tokens,), device=DEV)
            fwd = lambda: F.cross_entropy(logits, tgt)
            op_row("cross_entropy", 0, (tokens, vocab), fwd, "F.cross_entropy(bf16 logits)", "cross_entropy")
            y = fwd()
            op_row("cross_entropy", 1, (tokens, vocab), grad_fn(y, (logits,), torch.ones_like(y)),
                   "F.cross_entropy(bf16 logits)", "cross_entropy")
            del logits, y
    torch.cuda.empty_cache()


GPT3 = {  # models/gpt3-*.toml: layers, hidden, heads (ffn = 4 hidden, vocab 50257, seq 2048)
    "gpt3-125m": (12, 768, 12),
    "gpt3-350m": (24, 1024, 16),
    "gpt3-760m": (24, 1536, 16),
    "gpt3-1.3b": (24, 2048, 32),
}


def model_tensors(layers, d, vocab=50257, seq=2048):
    sizes = [vocab * d, seq * d]
    for _ in range(layers):
        sizes += [d, d, 3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d]
    sizes += [d, d]
    return sizes


def section_optimizer():
    for name, (layers, d, _) in GPT3.items():
        sizes = model_tensors(layers, d)
        P = sum(sizes)
        for impl, kw in (("fused", dict(fused=True)), ("foreach", dict(foreach=True))):
            if left() < ARGS.reserve:
                return
            ps = [torch.nn.Parameter(torch.randn(s, device=DEV)) for s in sizes]
            for p in ps:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(ps, lr=1e-4, **kw)
            opt.step()
            sync()
            eg = eager_time(opt.step, 1e-3)
            OPS.add("optimizer", 0, "fp32", str(P), eg, eg,
                    "torch.optim.AdamW(%s, fp32 params, %d tensors, %s)" % (impl, len(sizes), name),
                    "optimizer")
            log("optimizer %s %s: %.3f ms" % (name, impl, eg * 1e3))
            del ps, opt
            torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------
# training steps


class Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, layers, d, h, vocab=50257, seq=2048):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, d)
        self.wpe = torch.nn.Embedding(seq, d)
        self.blocks = torch.nn.ModuleList([Block(d, h) for _ in range(layers)])
        self.lnf = torch.nn.LayerNorm(d)

    def forward(self, ids, tgt):
        s = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(s, device=ids.device))
        for blk in self.blocks:
            x = blk(x)
        logits = F.linear(self.lnf(x), self.wte.weight)  # tied
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))


class LlamaBlock(torch.nn.Module):
    """HF transformers' Llama block in eager: RMSNorm in fp32 (LlamaRMSNorm), rotary
    embedding with rotate_half, SDPA with GQA, SwiGLU MLP, no biases."""

    def __init__(self, d, h, kvh, ffn):
        super().__init__()
        self.h, self.kvh, self.hd = h, kvh, d // h
        self.n1 = torch.nn.Parameter(torch.ones(d))
        self.n2 = torch.nn.Parameter(torch.ones(d))
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kvh * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kvh * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, ffn, bias=False)
        self.up = torch.nn.Linear(d, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, d, bias=False)

    @staticmethod
    def rms(x, w):
        dt = x.dtype
        xf = x.to(torch.float32)
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        return w * xf.to(dt)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        y = self.rms(x, self.n1)
        q = self.q(y).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(b, s, self.kvh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kvh != self.h)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        y = self.rms(x, self.n2)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Llama(torch.nn.Module):
    def __init__(self, layers, d, h, kvh, ffn, vocab, seq):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList([LlamaBlock(d, h, kvh, ffn) for _ in range(layers)])
        self.nf = torch.nn.Parameter(torch.ones(d))
        self.head = torch.nn.Linear(d, vocab, bias=False)
        hd = d // h
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        f = torch.outer(torch.arange(seq).float(), inv)
        e = torch.cat((f, f), dim=-1)
        self.register_buffer("cos", e.cos()[None, None], persistent=False)
        self.register_buffer("sin", e.sin()[None, None], persistent=False)

    def forward(self, ids, tgt):
        x = self.emb(ids)
        cos, sin = self.cos.to(torch.bfloat16), self.sin.to(torch.bfloat16)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        logits = self.head(LlamaBlock.rms(x, self.nf))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))


LLAMA = {  # TinyLlama-1.1B's shape (layers, hidden, heads, kv heads, ffn, vocab)
    "tinyllama-1.1b": (22, 2048, 32, 4, 5632, 32000),
}


def kernel_stats(prof, keep=None):
    path = os.path.join("/tmp", "step-trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        tr = json.load(f)
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    ks = [e for e in ev if e.get("cat") == "kernel" and "dur" in e]
    agg = {}
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e:
            name = e["name"].replace("(anonymous namespace)::", "").replace("void ", "")
            name = name.split("<")[0].split("(")[0].strip()[:80]
            c = agg.setdefault(name, [0, 0.0])
            c[0] += 1
            c[1] += e["dur"] * 1e-6
    busy = sum(e["dur"] for e in ev
               if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e) * 1e-6
    if keep:
        with open(path, "rb") as f, gzip.open(os.path.join(ARGS.out, keep), "wb") as g:
            g.write(f.read())
    os.remove(path)
    return len(ks), busy, agg


def section_steps(steps):
    seq = 2048
    from torch.profiler import ProfilerActivity, profile
    for name, (layers, d, h) in GPT3.items():
        if left() < ARGS.reserve * 0.5:
            return
        torch.manual_seed(0)
        with torch.device(DEV):
            model = GPT(layers, d, h, seq=seq)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        P = sum(p.numel() for p in model.parameters())
        for mb in (1, 2, 4, 8):
            if left() < ARGS.reserve * 0.5:
                break
            try:
                ids = torch.randint(0, 50257, (mb, seq), device=DEV)
                tgt = torch.randint(0, 50257, (mb, seq), device=DEV)

                def step():
                    with torch.autocast("cuda", dtype=BF):
                        loss = model(ids, tgt)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                for _ in range(3):
                    step()
                sync()
                ts = []
                for _ in range(ARGS.steps):
                    t = time.perf_counter()
                    step()
                    sync()
                    ts.append(time.perf_counter() - t)
                wall = statistics.median(ts)
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    step()
                    sync()
                keep = "trace-%s-mb%d.json.gz" % (name, mb) if (mb == 1 and name == "gpt3-125m") else None
                nk, busy, agg = kernel_stats(prof, keep)
                for kname, (cnt, tot) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                    KERNELS.add(name, mb, kname, cnt, tot)
                steps.add(name, layers, d, h, 4 * d, 50257, seq, mb, P, wall, min(ts), nk, busy)
                log("step %s mb %d: %.2f ms (min %.2f), %d kernels, busy %.2f ms" %
                    (name, mb, wall * 1e3, min(ts) * 1e3, nk, busy * 1e3))
            except torch.cuda.OutOfMemoryError:
                log("step %s mb %d: out of memory" % (name, mb))
            except Exception as ex:
                log("step %s mb %d failed: %s" % (name, mb, str(ex).splitlines()[0][:160]))
            finally:
                ids = tgt = None
                torch.cuda.empty_cache()
        model = opt = None
        torch.cuda.empty_cache()


def section_steps_compiled(steps):
    """As section_steps, the model compiled by torch.compile (Inductor's fused kernels; mode
    'reduce-overhead' replays them from CUDA graphs, so the host launches little), fused
    AdamW eager. Rows are named <model>+compile."""
    seq = 2048
    from torch.profiler import ProfilerActivity, profile
    for name in ("gpt3-125m", "gpt3-350m"):
        layers, d, h = GPT3[name]
        torch.manual_seed(0)
        with torch.device(DEV):
            model = GPT(layers, d, h, seq=seq)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        cm = torch.compile(model, mode="reduce-overhead")
        P = sum(p.numel() for p in model.parameters())
        for mb in (1, 8):
            if left() < ARGS.reserve * 0.5:
                break
            try:
                ids = torch.randint(0, 50257, (mb, seq), device=DEV)
                tgt = torch.randint(0, 50257, (mb, seq), device=DEV)

                def step():
                    torch.compiler.cudagraph_mark_step_begin()
                    with torch.autocast("cuda", dtype=BF):
                        loss = cm(ids, tgt)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                t0 = time.time()
                for _ in range(4):
                    step()
                sync()
                log("compiled %s mb %d in %.1f s" % (name, mb, time.time() - t0))
                ts = []
                for _ in range(ARGS.steps):
                    t = time.perf_counter()
                    step()
                    sync()
                    ts.append(time.perf_counter() - t)
                wall = statistics.median(ts)
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    step()
                    sync()
                nk, busy, agg = kernel_stats(prof, None)
                for kname, (cnt, tot) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                    KERNELS.add(name + "+compile", mb, kname, cnt, tot)
                steps.add(name + "+compile", layers, d, h, 4 * d, 50257, seq, mb, P, wall,
                          min(ts), nk, busy)
                log("step %s+compile mb %d: %.2f ms (min %.2f), %d kernels, busy %.2f ms" %
                    (name, mb, wall * 1e3, min(ts) * 1e3, nk, busy * 1e3))
                steps.write()  # each row at once: a compile can outlast the budget
                KERNELS.write()
            except Exception as ex:
                log("step %s+compile mb %d failed: %s" % (name, mb, str(ex).splitlines()[0][:200]))
            finally:
                ids = tgt = None
                torch.cuda.empty_cache()
        model = opt = cm = None
        torch.cuda.empty_cache()


def section_steps_llama(steps):
    """As section_steps for HF-Llama-style models, under autocast bf16 (fp32 weights)."""
    seq = 2048
    from torch.profiler import ProfilerActivity, profile
    for name, (layers, d, h, kvh, ffn, vocab) in LLAMA.items():
        torch.manual_seed(0)
        with torch.device(DEV):
            model = Llama(layers, d, h, kvh, ffn, vocab, seq)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        P = sum(p.numel() for p in model.parameters())
        for mb in (1, 2, 4, 8):
            if left() < ARGS.reserve * 0.5:
                break
            try:
                ids = torch.randint(0, vocab, (mb, seq), device=DEV)
                tgt = torch.randint(0, vocab, (mb, seq), device=DEV)

                def step():
                    with torch.autocast("cuda", dtype=BF):
                        loss = model(ids, tgt)
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                for _ in range(3):
                    step()
                sync()
                ts = []
                for _ in range(ARGS.steps):
                    t = time.perf_counter()
                    step()
                    sync()
                    ts.append(time.perf_counter() - t)
                wall = statistics.median(ts)
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    step()
                    sync()
                keep = "trace-%s-mb%d.json.gz" % (name, mb) if mb == 1 else None
                nk, busy, agg = kernel_stats(prof, keep)
                for kname, (cnt, tot) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                    KERNELS.add(name, mb, kname, cnt, tot)
                steps.add(name, layers, d, h, ffn, vocab, seq, mb, P, wall, min(ts), nk, busy)
                log("step %s mb %d: %.2f ms (min %.2f), %d kernels, busy %.2f ms" %
                    (name, mb, wall * 1e3, min(ts) * 1e3, nk, busy * 1e3))
            except torch.cuda.OutOfMemoryError:
                log("step %s mb %d: out of memory" % (name, mb))
            except Exception as ex:
                log("step %s mb %d failed: %s" % (name, mb, str(ex).splitlines()[0][:160]))
            finally:
                ids = tgt = None
                torch.cuda.empty_cache()
        model = opt = None
        torch.cuda.empty_cache()


def main():
    global ARGS, OPS, KERNELS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds for the whole run")
    ap.add_argument("--reserve", type=float, default=20.0, help="seconds kept for the end")
    ap.add_argument("--graphs", action="store_true",
                    help="GPU time from CUDA-graph replay (default: calls queued behind a spin kernel)")
    ap.add_argument("--steps", type=int, default=8, help="timed training steps per config")
    ap.add_argument("--sections", default="host,steps,attention,norm,elementwise,optimizer,gemm,softmax,embed_ce")
    ARGS = ap.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    p = torch.cuda.get_device_properties(0)
    env = ["torch %s, CUDA %s, cuDNN %s" % (torch.__version__, torch.version.cuda,
                                             torch.backends.cudnn.version()),
           "device %s, %d SMs, %.1f GiB" % (p.name, p.multi_processor_count, p.total_memory / 2 ** 30)]
    try:
        env.append(subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",
             "--format=csv"], capture_output=True, text=True, timeout=20).stdout)
    except Exception as ex:
        env.append("nvidia-smi: %s" % ex)
    for line in env:
        log(line.strip())
    OPS = Table("ops.csv", ["family", "variant", "dtype", "dims", "measured_s", "eager_s", "impl", "source"])
    host = Table("host.csv", ["probe", "kernels", "eager_s", "graph_s"])
    steps = Table("steps.csv", ["model", "layers", "hidden", "heads", "ffn", "vocab", "seq", "mb",
                                "params", "step_s", "step_min_s", "kernels", "busy_s"])
    KERNELS = Table("kernels.csv", ["model", "mb", "kernel", "count", "total_s"])
    fns = {"host": lambda: section_host(host), "steps": lambda: section_steps(steps),
           "steps_llama": lambda: section_steps_llama(steps),
           "steps_compiled": lambda: section_steps_compiled(steps),
           "attention": section_attention, "norm": section_norm, "elementwise": section_elementwise,
           "softmax": section_softmax, "gemm": section_gemm, "embed_ce": section_embed_ce,
           "optimizer": section_optimizer}
    for sec in ARGS.sections.split(","):
        if left() < ARGS.reserve * 0.5:
            log("budget spent before section %s" % sec)
            break
        t = time.time()
        try:
            fns[sec]()
        except Exception:
            log("section %s failed:\n%s" % (sec, traceback.format_exc()))
        log("section %s: %.1f s, %d op rows so far" % (sec, time.time() - t, len(OPS.rows)))
        for tb in (OPS, host, steps, KERNELS):
            tb.write()
    with open(os.path.join(ARGS.out, "env.txt"), "w") as f:
        f.write("\n".join(LOG) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
