#!/usr/bin/env python3
"""Import the seed paper's measured A100 operator and NCCL tables as stepcast input tables.

The seed: Zhang et al. 2025, "Efficient Fine-Grained GPU Performance Modeling for Distributed
Deep Learning of LLM" (arXiv 2509.22832), data from github DebarghaG/estimate-train-time at
commit 1ac4d5e441169983737f4f5c1c2c3b05b618307d, folder
src/estimate_train_time/data/regressors/Perlmutter/{operator,nccl} (MIT licence), kept in the
shared data folder seed-perlmutter-a100/ with a README.md that documents every file. Times are
PyTorch-profiler CUDA kernel durations of one named PyTorch op (forward target, backward
target) on an NVIDIA A100-SXM4-80GB of Perlmutter, fp16, trimmed mean of 10 iterations, in us.

Usage (from the repository root; standard library only):

    python3 hardware/a100-sxm4-80gb/seed/import_seed.py \\
        --seed /work/shared/data/seed-perlmutter-a100 --out hardware/a100-sxm4-80gb/seed

--seed defaults to ../shared/data/seed-perlmutter-a100 relative to the repository root,
--out to this script's folder. Writes, deterministically (input order, no timestamps):

ops.csv   family,variant,dtype,dims,measured_s,group,source
    One row per stepcast operator (core/include/stepcast/ops.h, docs/operators.md). dims are
    "AxBx..." in ops.h's order, dtype fp16, measured_s = the seed's us * 1e-6. A measured time
    that covers several stepcast operators (a linear layer's backward: its data-gradient and
    weight-gradient GEMMs) gives one row per operator, all with the same group id
    "<op>.<F|B>.<line>" and the same measured_s (stepcast estimate sums the group's
    estimates); a one-operator measurement has an empty group. source =
    "<seed file>:<line>:<F|B|dur>", line 1-based in the seed file (the header is line 1).
nccl.csv  family,variant,dtype,dims,bytes,nranks,nodes,measured_s,source
    One row per NCCL measurement of the per-topology files nccl/..._<coll>_fp16_<n>_<g>.csv.
    variant and dims are empty: stepcast estimate --csv requires those four columns of every
    table and reads a row whose family is a collective name by bytes, nranks and nodes.

Notation: the seed's columns mp (tensor-parallel degree), b (micro-batch), h (heads),
l (sequence), dim (hidden), encoders (layers); hd = dim/h, hp = h/mp,
V = ceil(50257/(128*mp))*128 (the seed's padded vocabulary shard, GPT-2 vocabulary).
GEMM dims are {batch, m, n, k} with C[m,n] = A[m,k] B[k,n]; a linear layer with the
authors' features (M, K, N) = (b*l, in, out) is forward {1, M, N, K}, backward the
data gradient {1, M, K, N} and the weight gradient {1, K, N, M}, one group.

Mapping (seed operator file -> stepcast operator, F / B variant):

  linear1       QKV, nn.Linear(dim, 3*dim/mp) with bias: gemm {1, b*l, 3*dim/mp, dim};
                B = dgrad + wgrad (group). The bias gradient (a column sum inside
                AddmmBackward0) is in the measured B but not modelled.
  linear2       attention output, no bias (sampled at mp=1 only): (b*l, dim/mp, dim).
  linear3       MLP up, no bias: (b*l, dim, 4*dim/mp).
  linear4       MLP down, no bias: (b*l, 4*dim/mp, dim).
  linear_final  LM head, no bias: (b*l, dim, V).
  flash_atten   flash_attn_func, non-causal: attention {b, hp, hp, l, l, hd, 0}, variant 0 / 1.
  layernorm     nn.LayerNorm: norm {b*l, dim}, variant 0 / 1.
  RMSlayernorm  GPT-NeoX RMSNorm (unfused PyTorch, several kernels, fp32 weight):
                norm {b*l, dim}, variant 2 / 3.
  gelu          F.gelu on [l, b, 4*dim/mp] (no bias, erf form): elementwise
                {l*b*4*dim/mp}, variant 0 / 1 (stepcast's is Megatron's bias + tanh GeLU).
  RoPE          GPT-NeoX apply_rotary_pos_emb on q and k, each [l, b, hp, hd] (the
                cos/sin cache is outside the F target): elementwise {2*l*b*hp*hd} (ops.h:
                "of q and k together", as the workload emits T*(a_t+g_t)*d), variant 9 / 10.
  res_add       a + b on [l, b, dim]: elementwise {b*l*dim}, variant 8 (ADD), F only. The
                sampler has no backward for it and profiles 'aten::add' as both targets, so
                its B column repeats F (351 of 351 rows): B is not a measurement.
  embedding     nn.Embedding(V, dim) on b*l ids: embedding {b*l, dim, V}, variant 0 / 1
                (the seed's B is aten::embedding_backward: the dense gradient, no fp32
                main-gradient accumulation, which stepcast's backward counts).
  parallel_cross_entropy_128   Megatron vocab_parallel_cross_entropy on [b, l, V] logits:
                cross_entropy {b*l, V}, variant 0 / 1 (with mp = 1 no all-reduce runs).
  softmax       torch softmax over [b, hp, l, l], not scaled, not masked: softmax
                {b*hp*l, l}, variant 2 / 3 (SC_SOFTMAX_PLAIN_*: a plain softmax over the
                whole row, another kernel than Megatron's fused one at the same shape).
  ScaledUpperTriangMaskedSoftmax   Megatron's fused causal kernel on [b*hp, l, l]:
                softmax {b*hp*l, l}, variant 0 / 1 (exactly stepcast's softmax).
  baddbmm       scores = Q K^T, Q [b*hp, l, hd], K^T [b*hp, hd, l] (beta = 0):
                F gemm {b*hp, l, l, hd}; B (group) dQ = dS K {b*hp, l, hd, l} and
                dK^T = Q^T dS {b*hp, hd, l, l}.
  bmm           out = S V, S [b*hp, l, l], V [b*hp, l, hd]: F gemm {b*hp, l, hd, l};
                B (group) dS = dO V^T {b*hp, l, l, hd} and dV = S^T dO {b*hp, l, hd, l}.
  firstStage_optimizer / middleStage_optimizer / lastStage_optimizer
                DeepSpeed FusedAdam step over a GPT-NeoX stage stub of `encoders` layers:
                optimizer {P}, variant 0, P per GPU = encoders * (12*dim^2/mp + 7*dim/mp
                + 6*dim) (QKV and MLP weights and biases and the attention-output and MLP-down
                weights split by mp; the row-parallel biases and two layer norms whole),
                + V*dim on the first stage (the embedding), + 2*dim + V*dim on the last (final
                layer norm, untied output layer).
  optimizer     FusedAdam over a whole model: optimizer {params}, params as the file gives
                them (they equal L*(12*d^2 + 13*d) + 2*50304*d + 2*d on every row, the
                stage formula at mp = 1 with both vocabulary matrices and the final norm).

Not mapped: fillmask (masked_fill_ of the causal mask into [b, hp, l, l] scores and its
backward, an in-place masked write: no stepcast family prices it; memcpy FILL is a plain
zero-fill of contiguous bytes), res_add's B column (above), and the summary files
operator/NVIDIAA100-SXM4-80GB.csv and nccl/NVIDIAA100-SXM4-80GB.csv (the authors' regressor
choices and errors, not measurements).

NCCL (torch.distributed through NCCL, profiler time of the c10d op, 'shape' = elements of the
per-rank tensor, fp16): nranks = nodes * GPUsPerNode, nodes = nodes, bytes as nccl-tests
counts them (sc_coll_desc.bytes):
  allreduce, allreduce_large   family allreduce, bytes = shape*2 (the buffer reduced).
  allgather_large              family allgather; the sampler all-gathers a per-rank tensor of
                               `shape` elements into a list of nranks tensors, and
                               nccl-tests' size for all_gather is the whole output:
                               bytes = shape*2*nranks.
  p2p                          family sendrecv between 2 ranks (rank 0 sends, the other
                               receives), bytes = shape*2.
The un-suffixed files nccl/..._allreduce_fp16.csv, _allreduce_large_fp16.csv and
_allgather_large_fp16.csv are the concatenation of their per-topology files (same rows, LF
instead of CRLF): they are not imported again.
"""

import argparse
import csv
import math
import os
import re
import sys

GPU = "NVIDIAA100-SXM4-80GB"
VOCAB = 50257


def vocab_part(mp):
    """The seed's partition_vocab_size: ceil(50257 / (128*mp)) * 128."""
    return -(-VOCAB // (128 * mp)) * 128


def div(a, b, what):
    if b <= 0 or a % b != 0:
        raise ValueError("%s: %d is not a multiple of %d" % (what, a, b))
    return a // b


def gemm(batch, m, n, k, layout=0):
    """layout: 0 plain (A m x k), 1 TN (A stored k x m: a weight gradient), stepcast/ops.h"""
    return ("gemm", layout, (batch, m, n, k))


def linear_fwd(M, K, N):
    return [gemm(1, M, N, K)]


def linear_bwd(M, K, N):
    return [gemm(1, M, K, N), gemm(1, K, N, M, 1)]  # data gradient, weight gradient (TN)


def linear(kn):
    """A linear layer whose (K, N) kn(mp, dim) gives; M = b*l."""
    def fwd(r):
        K, N = kn(r["mp"], r["dim"])
        return linear_fwd(r["b"] * r["l"], K, N)

    def bwd(r):
        K, N = kn(r["mp"], r["dim"])
        return linear_bwd(r["b"] * r["l"], K, N)
    return fwd, bwd


def heads(r):
    hp = div(r["h"], r["mp"], "h/mp")
    hd = div(r["dim"], r["h"], "dim/h")
    return hp, hd


def stage_params(kind, mp, dim, layers):
    """Parameters per GPU of the seed's GPT-NeoX stage stub (see the docstring)."""
    p = layers * (12 * dim * dim // mp + 7 * dim // mp + 6 * dim)
    if kind == "first":
        p += vocab_part(mp) * dim
    elif kind == "last":
        p += 2 * dim + vocab_part(mp) * dim
    return p


def one(family, variant, dims_fn):
    return lambda r: [(family, variant, dims_fn(r))]


# seed op -> (input columns, forward mapping, backward mapping); a mapping returns a list of
# (family, variant, dims). None: that column is not imported.
OPS = {
    "linear1": ("mp,b,l,dim",) + linear(lambda mp, d: (d, div(3 * d, mp, "3*dim/mp"))),
    "linear2": ("mp,b,l,dim",) + linear(lambda mp, d: (div(d, mp, "dim/mp"), d)),
    "linear3": ("mp,b,l,dim",) + linear(lambda mp, d: (d, div(4 * d, mp, "4*dim/mp"))),
    "linear4": ("mp,b,l,dim",) + linear(lambda mp, d: (div(4 * d, mp, "4*dim/mp"), d)),
    "linear_final": ("mp,b,l,dim",) + linear(lambda mp, d: (d, vocab_part(mp))),
    "flash_atten": (
        "mp,b,h,l,dim",
        lambda r: [("attention", 0, (r["b"],) + (heads(r)[0],) * 2 + (r["l"], r["l"], heads(r)[1], 0))],
        lambda r: [("attention", 1, (r["b"],) + (heads(r)[0],) * 2 + (r["l"], r["l"], heads(r)[1], 0))]),
    "layernorm": ("b,l,dim",
                  one("norm", 0, lambda r: (r["b"] * r["l"], r["dim"])),
                  one("norm", 1, lambda r: (r["b"] * r["l"], r["dim"]))),
    "RMSlayernorm": ("b,l,dim",
                     one("norm", 2, lambda r: (r["b"] * r["l"], r["dim"])),
                     one("norm", 3, lambda r: (r["b"] * r["l"], r["dim"]))),
    "gelu": ("mp,b,l,dim",
             one("elementwise", 0, lambda r: (r["l"] * r["b"] * div(4 * r["dim"], r["mp"], "4*dim/mp"),)),
             one("elementwise", 1, lambda r: (r["l"] * r["b"] * div(4 * r["dim"], r["mp"], "4*dim/mp"),))),
    "RoPE": ("mp,b,h,l,dim",
             one("elementwise", 9, lambda r: (2 * r["l"] * r["b"] * heads(r)[0] * heads(r)[1],)),
             one("elementwise", 10, lambda r: (2 * r["l"] * r["b"] * heads(r)[0] * heads(r)[1],))),
    "res_add": ("b,l,dim",
                one("elementwise", 8, lambda r: (r["b"] * r["l"] * r["dim"],)),
                None),
    "embedding": ("mp,b,l,dim",
                  one("embedding", 0, lambda r: (r["b"] * r["l"], r["dim"], vocab_part(r["mp"]))),
                  one("embedding", 1, lambda r: (r["b"] * r["l"], r["dim"], vocab_part(r["mp"])))),
    "parallel_cross_entropy_128": (
        "mp,b,l",
        one("cross_entropy", 0, lambda r: (r["b"] * r["l"], vocab_part(r["mp"]))),
        one("cross_entropy", 1, lambda r: (r["b"] * r["l"], vocab_part(r["mp"])))),
    "softmax": ("mp,b,h,l",
                one("softmax", 2, lambda r: (r["b"] * div(r["h"], r["mp"], "h/mp") * r["l"], r["l"])),
                one("softmax", 3, lambda r: (r["b"] * div(r["h"], r["mp"], "h/mp") * r["l"], r["l"]))),
    "ScaledUpperTriangMaskedSoftmax": (
        "mp,b,h,l",
        one("softmax", 0, lambda r: (r["b"] * div(r["h"], r["mp"], "h/mp") * r["l"], r["l"])),
        one("softmax", 1, lambda r: (r["b"] * div(r["h"], r["mp"], "h/mp") * r["l"], r["l"]))),
    "baddbmm": ("mp,b,h,l,dim",
                lambda r: [gemm(r["b"] * heads(r)[0], r["l"], r["l"], heads(r)[1])],
                lambda r: [gemm(r["b"] * heads(r)[0], r["l"], heads(r)[1], r["l"]),
                           gemm(r["b"] * heads(r)[0], heads(r)[1], r["l"], r["l"])]),
    "bmm": ("mp,b,h,l,dim",
            lambda r: [gemm(r["b"] * heads(r)[0], r["l"], heads(r)[1], r["l"])],
            lambda r: [gemm(r["b"] * heads(r)[0], r["l"], r["l"], heads(r)[1]),
                       gemm(r["b"] * heads(r)[0], r["l"], heads(r)[1], r["l"])]),
    "firstStage_optimizer": ("mp,dim,encoders",
                             one("optimizer", 0, lambda r: (stage_params("first", r["mp"], r["dim"], r["encoders"]),)),
                             None),
    "middleStage_optimizer": ("mp,dim,encoders",
                              one("optimizer", 0, lambda r: (stage_params("middle", r["mp"], r["dim"], r["encoders"]),)),
                              None),
    "lastStage_optimizer": ("mp,dim,encoders",
                            one("optimizer", 0, lambda r: (stage_params("last", r["mp"], r["dim"], r["encoders"]),)),
                            None),
    "optimizer": ("num_layers,hidden_size,param_tensors,params",
                  one("optimizer", 0, lambda r: (r["params"],)),
                  None),
}

SKIPPED = {"fillmask": "masked_fill_ of the causal mask: no stepcast family prices it"}

# the number of dims each family takes (core/include/stepcast/ops.h)
NDIMS = {"gemm": 4, "attention": 7, "norm": 2, "elementwise": 1, "softmax": 2,
         "embedding": 3, "cross_entropy": 2, "optimizer": 1, "memcpy": 1}

NCCL = {  # seed collective -> (stepcast family, bytes from (shape, nranks))
    "allreduce": ("allreduce", lambda n, r: 2 * n),
    "allreduce_large": ("allreduce", lambda n, r: 2 * n),
    "allgather_large": ("allgather", lambda n, r: 2 * n * r),
    "p2p": ("sendrecv", lambda n, r: 2 * n),
}


def check_dims(family, dims, where):
    """ops.h's dim count for the family, every dim > 0 (attention's causal flag 0 or 1)."""
    n = NDIMS[family]
    ok = len(dims) == n and all(isinstance(d, int) for d in dims)
    if ok and family == "attention":
        ok = all(d > 0 for d in dims[:6]) and dims[6] in (0, 1)
    elif ok:
        ok = all(d > 0 for d in dims)
    if not ok:
        raise ValueError("%s: %s dims %s do not fit ops.h" % (where, family, dims))


def whole(text, where):
    v = float(text)
    if not math.isfinite(v) or v != math.floor(v) or v <= 0:
        raise ValueError("%s: '%s' is not a whole number > 0" % (where, text))
    return int(v)


def seconds(text, where):
    v = float(text)
    if not math.isfinite(v) or v <= 0:
        raise ValueError("%s: '%s' is not a time > 0" % (where, text))
    return "%.10g" % (v * 1e-6)


def read(path):
    """The rows of a seed CSV with their 1-based line numbers (files are LF or CRLF)."""
    with open(path, newline="") as f:
        text = f.read()
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].split(",")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        if line == "":
            continue
        cells = next(csv.reader([line]))
        if len(cells) != len(header):
            raise ValueError("%s:%d: %d cells, the header has %d" % (path, i, len(cells), len(header)))
        rows.append((i, dict(zip(header, cells))))
    return header, rows


def import_ops(seed):
    out = []
    for op in sorted(OPS, key=str.lower):
        inputs, fwd, bwd = OPS[op]
        rel = "operator/%s_%s_fp16.csv" % (GPU, op)
        header, rows = read(os.path.join(seed, rel))
        cols = inputs.split(",")
        if header[:len(cols)] != cols:
            raise ValueError("%s: columns %s, expected %s first" % (rel, header, cols))
        times = [("F", "F_dur(us)", fwd), ("B", "B_dur(us)", bwd)] if "F_dur(us)" in header \
            else [("dur", header[len(cols)], fwd)]
        for line, cells in rows:
            r = {c: whole(cells[c], "%s:%d" % (rel, line)) for c in cols}
            for tag, col, fn in times:
                if fn is None:
                    continue
                ops = fn(r)
                s = seconds(cells[col], "%s:%d" % (rel, line))
                group = "%s.%s.%d" % (op, tag, line) if len(ops) > 1 else ""
                for family, variant, dims in ops:
                    check_dims(family, dims, "%s:%d" % (rel, line))
                    out.append((family, variant, "fp16", "x".join(str(d) for d in dims), s, group,
                                "%s:%d:%s" % (rel, line, tag)))
    return out


def import_nccl(seed):
    out = []
    pat = re.compile(r"^%s_(.+)_fp16_(\d+)_(\d+)\.csv$" % GPU)
    names = sorted(n for n in os.listdir(os.path.join(seed, "nccl")) if pat.match(n))
    for name in names:
        m = pat.match(name)
        coll, nodes, gpn = m.group(1), int(m.group(2)), int(m.group(3))
        if coll not in NCCL:
            raise ValueError("nccl/%s: unknown collective '%s'" % (name, coll))
        family, nbytes = NCCL[coll]
        rel = "nccl/" + name
        header, rows = read(os.path.join(seed, rel))
        if header != ["shape", "nodes", "GPUsPerNode", "dur(us)"]:
            raise ValueError("%s: columns %s" % (rel, header))
        nranks = nodes * gpn
        if coll == "p2p" and nranks != 2:
            raise ValueError("%s: p2p on %d ranks" % (rel, nranks))
        for line, c in rows:
            where = "%s:%d" % (rel, line)
            if (whole(c["nodes"], where), whole(c["GPUsPerNode"], where)) != (nodes, gpn):
                raise ValueError("%s: nodes/GPUsPerNode disagree with the file name" % where)
            out.append((family, "", "fp16", "", str(nbytes(whole(c["shape"], where), nranks)),
                        str(nranks), str(nodes), seconds(c["dur(us)"], where), "%s:dur" % where))
    return out


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow(r)


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", default=os.path.join(root, "..", "shared", "data", "seed-perlmutter-a100"),
                    help="the seed data folder (default: ../shared/data/seed-perlmutter-a100 "
                         "relative to the repository root)")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="where ops.csv and nccl.csv go (default: this script's folder)")
    a = ap.parse_args(argv)
    try:
        ops = import_ops(a.seed)
        nccl = import_nccl(a.seed)
    except (OSError, ValueError, KeyError) as e:
        print("import_seed: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(a.out, exist_ok=True)
    write(os.path.join(a.out, "ops.csv"),
          ["family", "variant", "dtype", "dims", "measured_s", "group", "source"], ops)
    write(os.path.join(a.out, "nccl.csv"),
          ["family", "variant", "dtype", "dims", "bytes", "nranks", "nodes", "measured_s",
           "source"], nccl)
    counts = {}
    for r in ops:
        counts[(r[0], r[1])] = counts.get((r[0], r[1]), 0) + 1
    for r in nccl:
        counts[(r[0], "")] = counts.get((r[0], ""), 0) + 1
    for (fam, var), n in sorted(counts.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print("%-14s %3s %6d" % (fam, var, n))
    print("ops.csv %d rows, nccl.csv %d rows; skipped: %s" %
          (len(ops), len(nccl), ", ".join("%s (%s)" % kv for kv in sorted(SKIPPED.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
