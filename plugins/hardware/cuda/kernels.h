/*
 * CUDA kernels of the `cuda` hardware plugin (plugins/hardware/cuda/cuda.c), compiled by nvcc
 * from kernels.cu. Every launcher enqueues on `stream` and returns cudaGetLastError() as an
 * int (0 = cudaSuccess); none synchronises and none allocates. Arrays are device pointers,
 * row-major, of element type `type` (SC__CU_F32, SC__CU_F16, SC__CU_BF16) unless the
 * comment says float; arithmetic is fp32 in registers whatever the storage type. The
 * operation of each is the one the CPU kernels compute (plugins/hardware/cpu_kernels.h).
 */
#ifndef SC_PLUGINS_HARDWARE_CUDA_KERNELS_H
#define SC_PLUGINS_HARDWARE_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SC__CU_F32 = 0, SC__CU_F16, SC__CU_BF16 } sc__cu_type;

/* p[i] = lo + (hi - lo) * u_i, u_i a hash of (seed, i) in [0, 1). */
int sc__cu_fill(sc__cu_type type, void *p, size_t n, uint64_t seed, float lo, float hi,
                void *stream);

/* LayerNorm (with gamma, beta) or RMSNorm (rms != 0: gamma only) over cols, a warp or a
 * block a row; mean (LayerNorm) and rstd are float[rows]. */
int sc__cu_norm_fwd(sc__cu_type type, int rms, int64_t rows, int64_t cols, const void *x,
                    const void *gamma, const void *beta, void *y, float *mean, float *rstd,
                    void *stream);

/* LayerNorm or RMSNorm (rms != 0) backward: dx, and dgamma (and dbeta unless rms) summed
 * over the rows, from x, dy, gamma, the forward's mean (LayerNorm) and rstd (float[rows]).
 * part is scratch of sc__cu_norm_bwd_part_floats(type, rows, cols) floats (zeroed here: the
 * column sums' accumulators). */
size_t sc__cu_norm_bwd_part_floats(sc__cu_type type, int64_t rows, int64_t cols);
int sc__cu_norm_bwd(sc__cu_type type, int rms, int64_t rows, int64_t cols, const void *x,
                    const void *dy, const void *gamma, const float *mean, const float *rstd,
                    void *dx, void *dgamma, void *dbeta, float *part, void *stream);

/* y = softmax(scale * x) over cols with a causal mask: row r is query q = r % period, which
 * sees keys 0 .. q + offset (all keys when causal == 0). In place (y == x) is allowed. */
int sc__cu_softmax_fwd(sc__cu_type type, int64_t rows, int64_t cols, int64_t period,
                       int64_t offset, int causal, float scale, const void *x, void *y,
                       void *stream);

/* dx = scale * y * (dy - sum(dy * y)) over cols. */
int sc__cu_softmax_bwd(sc__cu_type type, int64_t rows, int64_t cols, float scale,
                       const void *dy, const void *y, void *dx, void *stream);

/* One element-wise variant (SC_EW_* of stepcast/ops.h) over n elements: a, b, c, d are
 * n-element arrays, bias has nbias elements, mask n bytes, rope 2 * npairs floats (cos, sin).
 * Which arrays each variant reads and writes is in kernels.cu. */
int sc__cu_elementwise(sc__cu_type type, int variant, int64_t n, void *a, void *b, void *c,
                       void *d, const void *bias, int64_t nbias, uint8_t *mask,
                       const float *rope, int64_t npairs, void *stream);

/* AdamW on float master weights, float grad, moments m and v; writes the model weights w
 * (type) at step `step`. */
int sc__cu_adam(sc__cu_type type, int64_t n, float lr, float beta1, float beta2, float eps,
                float wd, int step, void *w, float *master, const float *grad, float *m,
                float *v, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* SC_PLUGINS_HARDWARE_CUDA_KERNELS_H */
