/*
 * CUDA kernels of the `cuda` hardware plugin (declared in kernels.h): memory-bound kernels,
 * fp32 arithmetic on fp32/fp16/bf16 storage, arrays read and written in 16-byte packs where
 * they are aligned for it (elements one at a time otherwise, and for a tail). Norms and
 * softmax give a row to a warp (rows of at most 4 packs a lane) or to a 256-thread block,
 * with shuffle (and shared-memory) reductions; element-wise kernels and Adam use grid-stride
 * loops. The same operations as plugins/hardware/cpu_kernels.h; tests/cuda/test_cuda_kernels
 * checks them against host references.
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

/* N elements of T in 16 bytes, loaded and stored as one 16-byte access: the bandwidth of
 * half-precision arrays needs it (2-byte accesses reached 1.86 TB/s of STREAM Add on an H100
 * against PyTorch's 3.06, docs/notes/0002-cuda-sampler-h100.md "The CUDA sampler on an H100"). */
template <typename T> struct alignas(16) pack {
  static constexpr int N = 16 / (int)sizeof(T);
  T v[N];
};
template <int N> struct alignas(N) bytes { uint8_t v[N]; };

template <typename T>
__device__ __forceinline__ void ldv(const T *p, int64_t i, float *f) {
  pack<T> r = *reinterpret_cast<const pack<T> *>(p + i);
#pragma unroll
  for (int k = 0; k < pack<T>::N; k++) f[k] = ld(r.v, k);
}
template <typename T>
__device__ __forceinline__ void stv(T *p, int64_t i, const float *f) {
  pack<T> r;
#pragma unroll
  for (int k = 0; k < pack<T>::N; k++) st(r.v, k, f[k]);
  *reinterpret_cast<pack<T> *>(p + i) = r;
}

/* W elements of a row at c: one 16-byte pack (W = pack<T>::N) or one element (W = 1). The
 * row kernels are written once over W and launched with the pack width where their rows are
 * packed (rows_packed), with 1 otherwise. */
template <int W, typename T>
__device__ __forceinline__ void ldw(const T *p, int64_t c, float *f) {
  if constexpr (W == 1) {
    f[0] = ld(p, c);
  } else {
    static_assert(W == pack<T>::N, "a row kernel's width is 1 or a pack");
    ldv(p, c, f);
  }
}
template <int W, typename T>
__device__ __forceinline__ void stw(T *p, int64_t c, const float *f) {
  if constexpr (W == 1) st(p, c, f[0]);
  else stv(p, c, f);
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* A row kernel's arrays go by 16-byte packs when every row starts on 16 bytes. */
template <typename T> static bool rows_packed(int64_t cols, const void *a, const void *b,
                                              const void *c, const void *d) {
  return cols % pack<T>::N == 0 && aligned16(a) && aligned16(b) && (c == NULL || aligned16(c)) &&
         (d == NULL || aligned16(d));
}

/* The row kernels hand a row to a group of threads: a whole block (256 threads) for wide
 * rows, one warp for rows of at most WARP_ROW_PACKS 16-byte packs per lane (bf16: 1024
 * elements), eight rows to a block; a block per narrow row would leave most of its threads
 * idle (softmax rows of 128 bf16 ran at 0.2 TB/s on an H100 that way). */
#define WARP_ROW_PACKS 4

__device__ __forceinline__ float warp_reduce(float v, int is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  return v;
}

/* This thread's row (-1: none), its index in the row's group and the group's size. */
template <bool WARP> struct row_group {
  int64_t r;
  int t, n;
  __device__ row_group(int64_t rows) {
    if (WARP) {
      r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
      t = threadIdx.x & 31;
      n = 32;
      if (r >= rows) r = -1;
    } else {
      r = blockIdx.x;
      t = threadIdx.x;
      n = blockDim.x;
    }
  }
  __device__ float reduce(float v, int is_max) const {
    return WARP ? warp_reduce(v, is_max) : block_reduce(v, is_max);
  }
};

/* LayerNorm / RMSNorm forward: one pass for the sum and the sum of squares, one for the
 * output, W elements at a time. */
template <typename T, bool WARP, int W>
__global__ void k_norm_fwd(int rms, int64_t rows, int64_t cols, const T *x, const T *gamma,
                           const T *beta, T *y, float *mean, float *rstd) {
  const row_group<WARP> g(rows);
  if (g.r < 0) return; /* a whole warp: the block has no barrier in warp mode */
  const int64_t r = g.r;
  const T *xr = x + r * cols;
  T *yr = y + r * cols;
  float s = 0.0f, s2 = 0.0f;
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float f[W];
    ldw<W>(xr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) { s += f[k]; s2 += f[k] * f[k]; }
  }
  float mu = rms ? 0.0f : g.reduce(s, 0) / (float)cols;
  float var = g.reduce(s2, 0) / (float)cols - mu * mu;
  float rs = rsqrtf(fmaxf(var, 0.0f) + 1e-5f);
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float f[W], gm[W], bb[W] = {};
    ldw<W>(xr, c, f);
    ldw<W>(gamma, c, gm);
    if (!rms) ldw<W>(beta, c, bb);
#pragma unroll
    for (int k = 0; k < W; k++) f[k] = (f[k] - mu) * rs * gm[k] + bb[k];
    stw<W>(yr, c, f);
  }
  if (g.t == 0) {
    if (!rms) mean[r] = mu;
    rstd[r] = rs;
  }
}

/* LayerNorm / RMSNorm backward, dx: a row to a group (warp or block, as the forward): the
 * row sums of g*dy and g*dy*xhat, then
 *     dx = rstd * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat))   (RMSNorm: no mean(g*dy)) */
template <typename T, bool WARP, int W>
__global__ void k_norm_bwd(int rms, int64_t rows, int64_t cols, const T *x, const T *dy,
                           const T *gamma, const float *mean, const float *rstd, T *dx) {
  const row_group<WARP> g(rows);
  if (g.r < 0) return;
  const int64_t r = g.r;
  const T *xr = x + r * cols, *dyr = dy + r * cols;
  T *dxr = dx + r * cols;
  const float mu = rms ? 0.0f : mean[r], rs = rstd[r];
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float f[W], gr[W], gm[W];
    ldw<W>(xr, c, f);
    ldw<W>(dyr, c, gr);
    ldw<W>(gamma, c, gm);
#pragma unroll
    for (int k = 0; k < W; k++) {
      float gd = gm[k] * gr[k];
      s1 += gd;
      s2 += gd * (f[k] - mu) * rs;
    }
  }
  s1 = rms ? 0.0f : g.reduce(s1, 0) / (float)cols;
  s2 = g.reduce(s2, 0) / (float)cols;
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float f[W], gr[W], gm[W];
    ldw<W>(xr, c, f);
    ldw<W>(dyr, c, gr);
    ldw<W>(gamma, c, gm);
#pragma unroll
    for (int k = 0; k < W; k++) f[k] = rs * (gm[k] * gr[k] - s1 - (f[k] - mu) * rs * s2);
    stw<W>(dxr, c, f);
  }
}

/* dgamma = sum over rows of dy*xhat, dbeta = sum of dy: a block of 32 x 8 threads takes a
 * tile of 32 packs of columns (32 * N) and a chunk of rows, its threads' column sums meet in
 * shared memory, and each column's total is added to acc[c] (dgamma) and acc[cols + c]
 * (dbeta), zeroed before; by packs when vec. */
template <typename T>
__global__ void k_norm_cols(int rms, int vec, int64_t rows, int64_t cols, int64_t chunk,
                            const T *x, const T *dy, const float *mean, const float *rstd,
                            float *acc) {
  constexpr int N = pack<T>::N;
  __shared__ float sh[2][8][32 * N];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t c0 = (int64_t)blockIdx.x * 32 * N + (int64_t)tx * N;
  const int64_t r0 = (int64_t)blockIdx.y * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
  float sg[N], sb[N];
#pragma unroll
  for (int k = 0; k < N; k++) sg[k] = sb[k] = 0.0f;
  for (int64_t r = r0 + ty; r < r1; r += 8) {
    const float mu = rms ? 0.0f : mean[r], rs = rstd[r];
    float f[N], gr[N];
    if (vec && c0 < cols) {
      ldv(x + r * cols, c0, f);
      ldv(dy + r * cols, c0, gr);
    } else {
#pragma unroll
      for (int k = 0; k < N; k++) {
        f[k] = c0 + k < cols ? ld(x + r * cols, c0 + k) : 0.0f;
        gr[k] = c0 + k < cols ? ld(dy + r * cols, c0 + k) : 0.0f;
      }
    }
#pragma unroll
    for (int k = 0; k < N; k++) {
      sg[k] += gr[k] * (f[k] - mu) * rs;
      sb[k] += gr[k];
    }
  }
#pragma unroll
  for (int k = 0; k < N; k++) {
    sh[0][ty][tx * N + k] = sg[k];
    sh[1][ty][tx * N + k] = sb[k];
  }
  __syncthreads();
  for (int j = threadIdx.x; j < 2 * 32 * N; j += blockDim.x) {
    const int w = j / (32 * N), cc = j % (32 * N);
    const int64_t c = (int64_t)blockIdx.x * 32 * N + cc;
    if (c >= cols || (w == 1 && rms)) continue;
    float t = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; q++) t += sh[w][q][cc];
    atomicAdd(&acc[w * cols + c], t);
  }
}

template <typename T>
__global__ void k_norm_cast(int rms, int64_t cols, const float *acc, T *dgamma, T *dbeta) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
       c += (int64_t)gridDim.x * blockDim.x) {
    st(dgamma, c, acc[c]);
    if (!rms) st(dbeta, c, acc[cols + c]);
  }
}

/* Softmax forward: max, sum, output, W elements at a time (of a pack past the row's last
 * key, the keys past it are masked one by one). */
template <typename T, bool WARP, int W>
__global__ void k_softmax_fwd(int64_t rows, int64_t cols, int64_t period, int64_t offset,
                              int causal, float scale, const T *x, T *y) {
  const row_group<WARP> g(rows);
  if (g.r < 0) return;
  const int64_t r = g.r;
  const T *xr = x + r * cols;
  T *yr = y + r * cols;
  int64_t last = causal ? (r % period) + offset : cols - 1;
  if (last >= cols) last = cols - 1;
  if (last < 0) last = 0;
  float mx = -INFINITY, s = 0.0f;
  for (int64_t c = g.t * (int64_t)W; c <= last; c += (int64_t)g.n * W) {
    float f[W];
    ldw<W>(xr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) if (c + k <= last) mx = fmaxf(mx, f[k] * scale);
  }
  mx = g.reduce(mx, 1);
  for (int64_t c = g.t * (int64_t)W; c <= last; c += (int64_t)g.n * W) {
    float f[W];
    ldw<W>(xr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) if (c + k <= last) s += __expf(f[k] * scale - mx);
  }
  float inv = 1.0f / g.reduce(s, 0);
  /* every thread of the group has read all it needs (the reductions synchronise the group):
   * in place is safe */
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float f[W] = {};
    if (c <= last) ldw<W>(xr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) f[k] = c + k <= last ? __expf(f[k] * scale - mx) * inv : 0.0f;
    stw<W>(yr, c, f);
  }
}

template <typename T, bool WARP, int W>
__global__ void k_softmax_bwd(int64_t rows, int64_t cols, float scale, const T *dy,
                              const T *y, T *dx) {
  const row_group<WARP> g(rows);
  if (g.r < 0) return;
  const int64_t r = g.r;
  const T *dyr = dy + r * cols, *yr = y + r * cols;
  T *dxr = dx + r * cols;
  float d = 0.0f;
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float gr[W], f[W];
    ldw<W>(dyr, c, gr);
    ldw<W>(yr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) d += gr[k] * f[k];
  }
  d = g.reduce(d, 0);
  for (int64_t c = g.t * (int64_t)W; c < cols; c += (int64_t)g.n * W) {
    float gr[W], f[W];
    ldw<W>(dyr, c, gr);
    ldw<W>(yr, c, f);
#pragma unroll
    for (int k = 0; k < W; k++) f[k] = scale * f[k] * (gr[k] - d);
    stw<W>(dxr, c, f);
  }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* Arrays per variant (a, b, c, d as passed):
 *   gelu fwd: y=b from x=a+bias      gelu bwd: dx=b from dy=c, x=a+bias
 *   swiglu fwd: y=c = silu(a) b      swiglu bwd: dy=c; da -> d, db -> c (in place)
 *   dropout fwd: y=b, mask from a    dropout bwd / bda bwd: dx=b from dy=c, mask
 *   bda fwd: out=b = c + dropout(a + bias), mask    add: b = a + c
 *   rope fwd/bwd: y=b from x=a (bwd rotates back; ap is the pair's other element) */
template <int V> struct ew {
  static constexpr bool ra = V != EW_DROPOUT_BWD && V != EW_BDA_BWD;
  static constexpr bool rb = V == EW_SWIGLU_FWD || V == EW_SWIGLU_BWD;
  static constexpr bool rc = V == EW_GELU_BWD || V == EW_SWIGLU_BWD || V == EW_DROPOUT_BWD ||
                             V == EW_BDA_BWD || V == EW_BDA_FWD || V == EW_ADD;
  static constexpr bool rbias = V == EW_GELU_FWD || V == EW_GELU_BWD || V == EW_BDA_FWD;
  static constexpr bool rmask = V == EW_DROPOUT_BWD || V == EW_BDA_BWD;
  static constexpr bool wb = !rb;
  static constexpr bool wc = rb;
  static constexpr bool wd = V == EW_SWIGLU_BWD;
  static constexpr bool wmask = V == EW_DROPOUT_FWD || V == EW_BDA_FWD;
  static constexpr bool rope = V == EW_ROPE_FWD || V == EW_ROPE_BWD;

  /* element i: inputs a, b, c, bias, ap, mk; outputs ob, oc, od, omk */
  static __device__ __forceinline__ void op(int64_t i, float a, float b, float c, float bias,
                                            float ap, uint8_t mk, const float *rope_tab,
                                            int64_t npairs, float &ob, float &oc, float &od,
                                            uint8_t &omk) {
    const float p = 0.1f, sc = 1.0f / (1.0f - p);
    const uint32_t thr = (uint32_t)(0.1 * 4294967295.0);
    if (V == EW_GELU_FWD) {
      float v = a + bias;
      ob = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    } else if (V == EW_GELU_BWD) {
      float v = a + bias;
      float t = tanhf(GELU_K * (v + 0.044715f * v * v * v));
      float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
      ob = c * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    } else if (V == EW_SWIGLU_FWD) {
      float s = 1.0f / (1.0f + __expf(-a));
      oc = a * s * b;
    } else if (V == EW_SWIGLU_BWD) {
      float s = 1.0f / (1.0f + __expf(-a));
      od = c * b * s * (1.0f + a * (1.0f - s));
      oc = c * a * s;
    } else if (V == EW_DROPOUT_FWD) {
      uint8_t k = hash32(1, (uint64_t)i) >= thr;
      omk = k;
      ob = k ? a * sc : 0.0f;
    } else if (V == EW_DROPOUT_BWD || V == EW_BDA_BWD) {
      ob = mk ? c * sc : 0.0f;
    } else if (V == EW_BDA_FWD) {
      uint8_t k = hash32(1, (uint64_t)i) >= thr;
      omk = k;
      ob = c + (k ? (a + bias) * sc : 0.0f);
    } else if (V == EW_ADD) {
      ob = a + c;
    } else { /* rope: element i of pair j = (i / 2) % npairs */
      int64_t j = (i / 2) % npairs;
      float cs = rope_tab[2 * j], sn = (V == EW_ROPE_FWD ? 1.0f : -1.0f) * rope_tab[2 * j + 1];
      float x0 = (i & 1) ? ap : a, x1 = (i & 1) ? a : ap;
      ob = (i & 1) ? x0 * sn + x1 * cs : x0 * cs - x1 * sn;
    }
  }
};

/* One element-wise variant V: nvec packs of N elements (16-byte accesses), then elements
 * nvec * N .. n - 1 one at a time; both grid-stride. */
template <typename T, int V>
__global__ void k_elementwise(int64_t n, int64_t nvec, T *a, T *b, T *c, T *d, const T *bias,
                              int64_t nbias, uint8_t *mask, const float *rope, int64_t npairs) {
  typedef ew<V> E;
  constexpr int N = pack<T>::N;
  const int64_t t0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t q = t0; q < nvec; q += step) {
    const int64_t i0 = q * N;
    float fa[N], fb[N], fc[N], ob[N], oc[N], od[N];
    uint8_t mk[N], om[N];
    if (E::ra) ldv(a, i0, fa);
    if (E::rb) ldv(b, i0, fb);
    if (E::rc) ldv(c, i0, fc);
    if (E::rmask) {
      bytes<N> m = *reinterpret_cast<const bytes<N> *>(mask + i0);
#pragma unroll
      for (int k = 0; k < N; k++) mk[k] = m.v[k];
    }
#pragma unroll
    for (int k = 0; k < N; k++) {
      const int64_t i = i0 + k;
      E::op(i, E::ra ? fa[k] : 0.0f, E::rb ? fb[k] : 0.0f, E::rc ? fc[k] : 0.0f,
            E::rbias ? ld(bias, i % nbias) : 0.0f, E::rope ? fa[k ^ 1] : 0.0f,
            E::rmask ? mk[k] : (uint8_t)0, rope, npairs, ob[k], oc[k], od[k], om[k]);
    }
    if (E::wb) stv(b, i0, ob);
    if (E::wc) stv(c, i0, oc);
    if (E::wd) stv(d, i0, od);
    if (E::wmask) {
      bytes<N> m;
#pragma unroll
      for (int k = 0; k < N; k++) m.v[k] = om[k];
      *reinterpret_cast<bytes<N> *>(mask + i0) = m;
    }
  }
  for (int64_t i = nvec * N + t0; i < n; i += step) {
    float ob = 0.0f, oc = 0.0f, od = 0.0f, ap = 0.0f;
    uint8_t om = 0;
    if (E::rope) {
      if ((i | 1) >= n) continue; /* an unpaired last element: not written */
      ap = ld(a, i ^ 1);
    }
    E::op(i, E::ra ? ld(a, i) : 0.0f, E::rb ? ld(b, i) : 0.0f, E::rc ? ld(c, i) : 0.0f,
          E::rbias ? ld(bias, i % nbias) : 0.0f, ap, E::rmask ? mask[i] : (uint8_t)0, rope,
          npairs, ob, oc, od, om);
    if (E::wb) st(b, i, ob);
    if (E::wc) st(c, i, oc);
    if (E::wd) st(d, i, od);
    if (E::wmask) mask[i] = om;
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

/* A row kernel's launch: warp mode for rows of at most WARP_ROW_PACKS packs a lane. */
template <typename T> static bool warp_rows(int64_t cols) {
  return cols <= (int64_t)32 * WARP_ROW_PACKS * pack<T>::N;
}
#define ROW_LAUNCH_W(KERNEL, W, rows, cols, s, ...)                                          \
  do {                                                                                        \
    if (warp_rows<T>(cols))                                                                   \
      KERNEL<T, true, W><<<(unsigned)(((rows) + THREADS / 32 - 1) / (THREADS / 32)), THREADS, \
                           0, (s)>>>(__VA_ARGS__);                                            \
    else                                                                                      \
      KERNEL<T, false, W><<<(unsigned)(rows), THREADS, 0, (s)>>>(__VA_ARGS__);               \
  } while (0)
/* By packs where the rows are packed (vec), element by element otherwise. */
#define ROW_LAUNCH(KERNEL, vec, rows, cols, s, ...)                                           \
  do {                                                                                        \
    if (vec) ROW_LAUNCH_W(KERNEL, pack<T>::N, rows, cols, s, __VA_ARGS__);                   \
    else ROW_LAUNCH_W(KERNEL, 1, rows, cols, s, __VA_ARGS__);                                \
  } while (0)

extern "C" int sc__cu_norm_fwd(sc__cu_type type, int rms, int64_t rows, int64_t cols,
                               const void *x, const void *gamma, const void *beta, void *y,
                               float *mean, float *rstd, void *stream) {
  DISPATCH(type, ROW_LAUNCH(k_norm_fwd, (rows_packed<T>(cols, x, y, gamma, rms ? NULL : beta)),
                            rows, cols, S(stream), rms, rows, cols, (const T *)x,
                            (const T *)gamma, (const T *)beta, (T *)y, mean, rstd));
  return (int)cudaGetLastError();
}

extern "C" size_t sc__cu_norm_bwd_part_floats(sc__cu_type type, int64_t rows, int64_t cols) {
  (void)type;
  (void)rows;
  return (size_t)(2 * cols);
}

/* The column sums' blocks: tiles of 32 packs across, and enough chunks of rows down for about
 * NORM_COL_BLOCKS blocks (four per SM of an H100), each chunk at least 64 rows. */
#define NORM_COL_BLOCKS 528
template <typename T>
static void norm_bwd_launch(int rms, int64_t rows, int64_t cols, const void *x, const void *dy,
                            const void *gamma, const float *mean, const float *rstd, void *dx,
                            void *dgamma, void *dbeta, float *acc, cudaStream_t s) {
  const int vec = rows_packed<T>(cols, x, dy, gamma, dx);
  const int64_t nx = (cols + 32 * pack<T>::N - 1) / (32 * pack<T>::N);
  int64_t ny = (NORM_COL_BLOCKS + nx - 1) / nx, most = (rows + 63) / 64;
  if (ny > most) ny = most;
  if (ny > 65535) ny = 65535;
  if (ny < 1) ny = 1;
  const int64_t chunk = (rows + ny - 1) / ny;
  ROW_LAUNCH(k_norm_bwd, vec, rows, cols, s, rms, rows, cols, (const T *)x, (const T *)dy,
             (const T *)gamma, mean, rstd, (T *)dx);
  k_norm_cols<T><<<dim3((unsigned)nx, (unsigned)ny), THREADS, 0, s>>>(
      rms, vec, rows, cols, chunk, (const T *)x, (const T *)dy, mean, rstd, acc);
  k_norm_cast<T><<<grid_for(cols), THREADS, 0, s>>>(rms, cols, acc, (T *)dgamma, (T *)dbeta);
}

extern "C" int sc__cu_norm_bwd(sc__cu_type type, int rms, int64_t rows, int64_t cols,
                               const void *x, const void *dy, const void *gamma,
                               const float *mean, const float *rstd, void *dx, void *dgamma,
                               void *dbeta, float *part, void *stream) {
  cudaError_t e;
  if ((e = cudaMemsetAsync(part, 0, (size_t)(2 * cols) * 4, S(stream))) != cudaSuccess)
    return (int)e;
  DISPATCH(type, norm_bwd_launch<T>(rms, rows, cols, x, dy, gamma, mean, rstd, dx, dgamma,
                                    dbeta, part, S(stream)));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_softmax_fwd(sc__cu_type type, int64_t rows, int64_t cols,
                                  int64_t period, int64_t offset, int causal, float scale,
                                  const void *x, void *y, void *stream) {
  DISPATCH(type, ROW_LAUNCH(k_softmax_fwd, (rows_packed<T>(cols, x, y, NULL, NULL)), rows,
                            cols, S(stream), rows, cols, period, offset, causal, scale,
                            (const T *)x, (T *)y));
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_softmax_bwd(sc__cu_type type, int64_t rows, int64_t cols, float scale,
                                  const void *dy, const void *y, void *dx, void *stream) {
  DISPATCH(type, ROW_LAUNCH(k_softmax_bwd, (rows_packed<T>(cols, dy, y, dx, NULL)), rows,
                            cols, S(stream), rows, cols, scale, (const T *)dy, (const T *)y,
                            (T *)dx));
  return (int)cudaGetLastError();
}

template <typename T>
static int ew_launch(int variant, int64_t n, void *a, void *b, void *c, void *d,
                     const void *bias, int64_t nbias, uint8_t *mask, const float *rope,
                     int64_t npairs, cudaStream_t s) {
  const int N = pack<T>::N;
  int64_t nvec = aligned16(a) && aligned16(b) && aligned16(c) && aligned16(d) &&
                         ((uintptr_t)mask % N) == 0 ? n / N : 0;
  unsigned g = grid_for(nvec > 0 ? nvec : n);
#define EW_CASE(V)                                                                           \
  case V:                                                                                    \
    k_elementwise<T, V><<<g, THREADS, 0, s>>>(n, nvec, (T *)a, (T *)b, (T *)c, (T *)d,      \
                                              (const T *)bias, nbias, mask, rope, npairs);   \
    break
  switch (variant) {
    EW_CASE(EW_GELU_FWD); EW_CASE(EW_GELU_BWD); EW_CASE(EW_SWIGLU_FWD); EW_CASE(EW_SWIGLU_BWD);
    EW_CASE(EW_DROPOUT_FWD); EW_CASE(EW_DROPOUT_BWD); EW_CASE(EW_BDA_FWD); EW_CASE(EW_BDA_BWD);
    EW_CASE(EW_ADD); EW_CASE(EW_ROPE_FWD); EW_CASE(EW_ROPE_BWD);
  default: return (int)cudaErrorInvalidValue;
  }
#undef EW_CASE
  return (int)cudaGetLastError();
}

extern "C" int sc__cu_elementwise(sc__cu_type type, int variant, int64_t n, void *a, void *b,
                                  void *c, void *d, const void *bias, int64_t nbias,
                                  uint8_t *mask, const float *rope, int64_t npairs,
                                  void *stream) {
  int rc;
  DISPATCH(type, (rc = ew_launch<T>(variant, n, a, b, c, d, bias, nbias, mask, rope, npairs,
                                    S(stream))));
  return rc;
}

extern "C" int sc__cu_adam(sc__cu_type type, int64_t n, float lr, float beta1, float beta2,
                           float eps, float wd, int step, void *w, float *master,
                           const float *grad, float *m, float *v, void *stream) {
  float bc1 = 1.0f - powf(beta1, (float)step), bc2 = 1.0f - powf(beta2, (float)step);
  DISPATCH(type, (k_adam<T><<<grid_for(n), THREADS, 0, S(stream)>>>(
                     n, lr, beta1, beta2, eps, wd, bc1, bc2, (T *)w, master, grad, m, v)));
  return (int)cudaGetLastError();
}
