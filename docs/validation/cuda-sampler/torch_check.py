"""PyTorch's own timings of the shapes of the cuda sampler's microbenchmarks and of a few
operators, on the same GPU, to check the sampler against (device.sh runs it)."""
import torch
import torch.nn.functional as F


def timed(fn, n=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e-3 / n


dev, bf = "cuda", torch.bfloat16
print(torch.cuda.get_device_name(), "torch", torch.__version__)
for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 8192, 1024), (512, 512, 512)]:
    a = torch.randn(m, k, device=dev, dtype=bf)
    b = torch.randn(k, n, device=dev, dtype=bf)
    s = timed(lambda: a @ b)
    print(f"gemm {m}x{n}x{k} bf16: {s * 1e6:.1f} us, {2 * m * n * k / s / 1e12:.1f} TFLOP/s")
N = 1 << 28
x, y = torch.randn(N, device=dev, dtype=bf), torch.randn(N, device=dev, dtype=bf)
z = torch.empty_like(x)
s = timed(lambda: torch.add(x, y, out=z))
print(f"add 2^28 bf16: {s * 1e6:.1f} us, {6 * N / s / 1e9:.0f} GB/s")
del x, y, z
for r, c in [(16384, 8192), (65536, 1024)]:
    x = torch.randn(r, c, device=dev, dtype=bf)
    w, bb = torch.ones(c, device=dev, dtype=bf), torch.zeros(c, device=dev, dtype=bf)
    s = timed(lambda: F.layer_norm(x, (c,), w, bb))
    print(f"layernorm fwd {r}x{c} bf16: {s * 1e6:.1f} us, {4 * r * c / s / 1e9:.0f} GB/s")
    s = timed(lambda: torch.softmax(x, -1))
    print(f"softmax fwd {r}x{c} bf16: {s * 1e6:.1f} us, {4 * r * c / s / 1e9:.0f} GB/s")
