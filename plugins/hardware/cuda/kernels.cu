/*
 * CUDA kernels of the `cuda` hardware plugin (declared in kernels.h): straightforward
 * memory-bound kernels, fp32 arithmetic on fp32/fp16/bf16 storage. Norms and softmax use one
 * 256-thread block per row with shared-memory reductions; element-wise kernels and Adam use
 * grid-stride loops. The same operations as plugins/hardware/cpu_kernels.h.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

/* Element-wise variant codes: SC_EW_* of stepcast/ops.h (which is C; repeated here, checked
 * against it in cuda.c with static assertions). */
enum {
  EW_GELU_FWD = 0, EW_GELU_BWD, EW_SWIGLU_FWD, EW_SWIGLU_BWD, EW_DROPOUT_FWD, EW_DROPOUT_BWD,
  EW_BDA_FWD, EW_BDA_BWD, EW_ADD, EW_ROPE_FWD, EW_ROPE_BWD
};

#define THREADS 256

__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half(v); }
__device__ __forceinline__ void st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

/* splitmix64's finaliser, as sc__cpu_hash. */
__device__ __forceinline__ uint32_t hash32(uint64_t seed, uint64_t i) {
  uint64_t z = seed + i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static unsigned grid_for(int64_t n) {
  int64_t g = (n + THREADS - 1) / THREADS;
  if (g > 65535 * 8) g = 65535 * 8;
  return (unsigned)(g < 1 ? 1 : g);
}

/* Block-wide sum (max when is_max) of v; every thread gets the result. */
__device__ float block_reduce(float v, int is_max) {
  __shared__ float sh[32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); /* sh reused across calls */
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  int nw = (blockDim.x + 31) >> 5;
  v = lane < nw ? sh[lane] : (is_max ? -INFINITY : 0.0f);
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;
}

template <typename T>
__global__ void k_fill(T *p, int64_t n, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    st(p, i, lo + (hi - lo) * (float)hash32(seed, (uint64_t)i) * (1.0f / 4294967296.0f));
}

template <typename T>
__global__ void k_norm_fwd(int rms, int64_t cols, const T *x, const T *gamma, const T *beta,
                           T *y, float *mean, float *rstd) {
  int64_t r = blockIdx.x;
  const T *xr = x + r * cols;
  T *yr = y + r * cols;
  float mu = 0.0f, s2 = 0.0f;
  if (!rms) {
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += ld(xr, c);
    mu = block_reduce(s, 0) / (float)cols;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float dv = ld(xr, c) - mu;
    s2 += dv * dv;
  }
  float rs = rsqrtf(block_reduce(s2, 0) / (float)cols + 1e-5f);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = (ld(xr, c) - mu) * rs * ld(gamma, c);
    st(yr, c, rms ? v : v + ld(beta, c));
  }
  if (threadIdx.x == 0) {
    if (!rms) mean[r] = mu;
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void k_softmax_fwd(int64_t cols, int64_t period, int64_t offset, int causal,
                              float scale, const T *x, T *y) {
  int64_t r = blockIdx.x;
  const T *xr = x + r * cols;
  T *yr = y + r * cols;
  int64_t last = causal ? (r % period) + offset : cols - 1;
  if (last >= cols) last = cols - 1;
  if (last < 0) last = 0;
  float mx = -INFINITY, s = 0.0f;
  for (int64_t c = threadIdx.x; c <= last; c += blockDim.x) mx = fmaxf(mx, ld(xr, c) * scale);
  mx = block_reduce(mx, 1);
  for (int64_t c = threadIdx.x; c <= last; c += blockDim.x) s += __expf(ld(xr, c) * scale - mx);
  float inv = 1.0f / block_reduce(s, 0);
  /* every thread has read all it needs (the reductions synchronise): in place is safe */
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    st(yr, c, c <= last ? __expf(ld(xr, c) * scale - mx) * inv : 0.0f);
}

template <typename T>
__global__ void k_softmax_bwd(int64_t cols, float scale, const T *dy, const T *y, T *dx) {
  int64_t r = blockIdx.x;
  const T *dyr = dy + r * cols, *yr = y + r * cols;
  T *dxr = dx + r * cols;
  float d = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) d += ld(dyr, c) * ld(yr, c);
  d = block_reduce(d, 0);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    st(dxr, c, scale * ld(yr, c) * (ld(dyr, c) - d));
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* Arrays per variant (a, b, c, d as passed):
 *   gelu fwd: y=b from x=a+bias      gelu bwd: dx=b from dy=c, x=a+bias
 *   swiglu fwd: y=c = silu(a) b      swiglu bwd: dy=c; da -> d, db -> c (in place)
 *   dropout fwd: y=b, mask from a    dropout bwd / bda bwd: dx=b from dy=c, mask
 *   bda fwd: out=b = c + dropout(a + bias), mask    add: b = a + c
 *   rope fwd/bwd: y=b from x=a (bwd rotates back) */
template <typename T>
__global__ void k_elementwise(int variant, int64_t n, T *a, T *b, T *c, T *d, const T *bias,
                              int64_t nbias, uint8_t *mask, const float *rope, int64_t npairs) {
  const float p = 0.1f, sc = 1.0f / (1.0f - p);
  const uint32_t thr = (uint32_t)(0.1 * 4294967295.0);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    switch (variant) {
    case EW_GELU_FWD: {
      float v = ld(a, i) + ld(bias, i % nbias);
      st(b, i, 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v))));
      break;
    }
    case EW_GELU_BWD: {
      float v = ld(a, i) + ld(bias, i % nbias);
      float t = tanhf(GELU_K * (v + 0.044715f * v * v * v));
      float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
      st(b, i, ld(c, i) * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du));
      break;
    }
    case EW_SWIGLU_FWD: {
      float x = ld(a, i), s = 1.0f / (1.0f + __expf(-x));
      st(c, i, x * s * ld(b, i));
      break;
    }
    case EW_SWIGLU_BWD: { /* dy = c; da -> d; db -> c, written after dy is read */
      float x = ld(a, i), s = 1.0f / (1.0f + __expf(-x)), dy = ld(c, i);
      st(d, i, dy * ld(b, i) * s * (1.0f + x * (1.0f - s)));
      st(c, i, dy * x * s);
      break;
    }
    case EW_DROPOUT_FWD: {
      uint8_t k = hash32(1, (uint64_t)i) >= thr;
      mask[i] = k;
      st(b, i, k ? ld(a, i) * sc : 0.0f);
      break;
    }
    case EW_DROPOUT_BWD:
    case EW_BDA_BWD:
      st(b, i, mask[i] ? ld(c, i) * sc : 0.0f);
      break;
    case EW_BDA_FWD: {
      uint8_t k = hash32(1, (uint64_t)i) >= thr;
      mask[i] = k;
      st(b, i, ld(c, i) + (k ? (ld(a, i) + ld(bias, i % nbias)) * sc : 0.0f));
      break;
    }
    case EW_ADD:
      st(b, i, ld(a, i) + ld(c, i));
      break;
    default: { /* rope: element i of pair j = (i / 2) % npairs */
      int64_t j = (i / 2) % npairs, i0 = i & ~(int64_t)1;
      float cs = rope[2 * j], sn = (variant == EW_ROPE_FWD ? 1.0f : -1.0f) * rope[2 * j + 1];
      if (i0 + 1 >= n) break;
      float x0 = ld(a, i0), x1 = ld(a, i0 + 1);
      st(b, i, (i & 1) ? x0 * sn + x1 * cs : x0 * cs - x1 * sn);
      break;
    }
    }
  }
}

template <typename T>
__global__ void k_adam(int64_t n, float lr, float b1, float b2, float eps, float wd, float bc1,
                       float bc2, T *w, float *master, const float *g, float *m, float *v) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float gi = g[i];
    float mi = b1 * m[i] + (1.0f - b1) * gi, vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    float x = master[i];
    x -= lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * x);
    m[i] = mi;
    v[i] = vi;
    master[i] = x;
    st(w, i, x);
  }
}

#define DISPATCH(type, CALL)                                              \
  do {                                                                    \
    switch (type) {                                                       \
    case SC__CU_F32: { typedef float T; CALL; break; }                    \
    case SC__CU_F16: { typedef __half T; CALL; break; }                   \
    default: { typedef __nv_bfloat16 T; CALL; break; }                    \
    }                                                                     \
  } while (0)

#define S(stream) ((cudaStream_t)(stream))

extern "C" int sc__cu_fill(sc__cu_type type, void *p, size_t n, uint64_t seed, float lo,
                           float hi, void *stream) {
  DISPATCH(type, (k_fill<T><<<grid_for((int64_t)n), THREADS, 0, S(stream)>>>(
                     (T *)p, (int64_t)n, seed, lo, hi)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_norm_fwd(sc__cu_type type, int rms, int64_t rows, int64_t cols,
                               const void *x, const void *gamma, const void *beta, void *y,
                               float *mean, float *rstd, void *stream) {
  DISPATCH(type, (k_norm_fwd<T><<<(unsigned)rows, THREADS, 0, S(stream)>>>(
                     rms, cols, (const T *)x, (const T *)gamma, (const T *)beta, (T *)y, mean,
                     rstd)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_softmax_fwd(sc__cu_type type, int64_t rows, int64_t cols,
                                  int64_t period, int64_t offset, int causal, float scale,
                                  const void *x, void *y, void *stream) {
  DISPATCH(type, (k_softmax_fwd<T><<<(unsigned)rows, THREADS, 0, S(stream)>>>(
                     cols, period, offset, causal, scale, (const T *)x, (T *)y)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_softmax_bwd(sc__cu_type type, int64_t rows, int64_t cols, float scale,
                                  const void *dy, const void *y, void *dx, void *stream) {
  DISPATCH(type, (k_softmax_bwd<T><<<(unsigned)rows, THREADS, 0, S(stream)>>>(
                     cols, scale, (const T *)dy, (const T *)y, (T *)dx)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_elementwise(sc__cu_type type, int variant, int64_t n, void *a, void *b,
                                  void *c, void *d, const void *bias, int64_t nbias,
                                  uint8_t *mask, const float *rope, int64_t npairs,
                                  void *stream) {
  DISPATCH(type, (k_elementwise<T><<<grid_for(n), THREADS, 0, S(stream)>>>(
                     variant, n, (T *)a, (T *)b, (T *)c, (T *)d, (const T *)bias, nbias, mask,
                     rope, npairs)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_adam(sc__cu_type type, int64_t n, float lr, float beta1, float beta2,
                           float eps, float wd, int step, void *w, float *master,
                           const float *grad, float *m, float *v, void *stream) {
  float bc1 = 1.0f - powf(beta1, (float)step), bc2 = 1.0f - powf(beta2, (float)step);
  DISPATCH(type, (k_adam<T><<<grid_for(n), THREADS, 0, S(stream)>>>(
                     n, lr, beta1, beta2, eps, wd, bc1, bc2, (T *)w, master, grad, m, v)));
  return (int)cudaGetLastError();
}
