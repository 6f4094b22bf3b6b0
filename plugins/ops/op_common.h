/*
 * Shared pieces of the analytical operator plugins (header-only, static inline: each
 * plugin is its own module). Only the SDK header is used.
 *
 * The roofline of every family:
 *     time_s = max(flops / (peak * eff * util), bytes / (mem_bw_Bps * mem_efficiency))
 *              + launch_s
 * where eff is the device's flops_efficiency, except for GEMMs (the matmul efficiency of the
 * dtype: flops_efficiency_by_dtype, else flops_efficiency) and fused attention (its forward or
 * backward efficiency, else the matmul efficiency of its dtype),
 * peak is the device's dense peak for the dtype (matrix families: gemm, attention) or
 * its fp32 rate (vector families: the arithmetic of elementwise, norm, softmax, embedding,
 * cross-entropy and optimizer kernels runs in fp32 registers on the non-tensor units
 * whatever the storage dtype), and util <= 1 is a family's quantisation efficiency (gemm:
 * tile x wave; 1 elsewhere). bound: LATENCY when launch_s exceeds both terms, else the
 * larger term (COMPUTE or MEMORY). A dtype whose peak is 0 on the device is unsupported.
 */
#ifndef SC_PLUGINS_OPS_COMMON_H
#define SC_PLUGINS_OPS_COMMON_H

#include <math.h>
#include <string.h>

#include "stepcast/ops.h"
#include "stepcast/plugin.h"

static inline double sc__op_dtype_bytes(sc_dtype d) {
  switch (d) {
  case SC_DTYPE_FP32: case SC_DTYPE_TF32: return 4.0;
  case SC_DTYPE_BF16: case SC_DTYPE_FP16: return 2.0;
  case SC_DTYPE_FP8: case SC_DTYPE_INT8: return 1.0;
  default: return 0.0;
  }
}

/* Check the arguments common to every family: non-NULL pointers, a sane device, the
 * family's ndims, every dim > 0 (dims named by names[]), variant < nvariants, a known
 * dtype that the device supports (peak > 0) unless need_peak is 0 (memcpy). */
static inline int sc__op_check(const sc_device *dev, const sc_op_desc *op, sc_estimate *out,
                               const char *family, uint32_t ndims, const char *const *names,
                               uint32_t nvariants, int need_peak, sc_error *err) {
  if (dev == NULL || op == NULL || out == NULL) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: device, operator or output is NULL", family);
  }
  if (!(dev->mem_bw_Bps > 0.0)) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: device '%s': mem_bw_Bps must be > 0", family,
                          dev->name);
  }
  if (!(dev->flops_efficiency > 0.0 && dev->flops_efficiency <= 1.0)) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: device '%s': flops_efficiency must be in (0, 1]",
                          family, dev->name);
  }
  if (!(dev->mem_efficiency > 0.0 && dev->mem_efficiency <= 1.0)) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: device '%s': mem_efficiency must be in (0, 1]",
                          family, dev->name);
  }
  if (!(dev->launch_s >= 0.0)) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: device '%s': launch_s must be >= 0", family,
                          dev->name);
  }
  if (op->ndims != ndims) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: ndims must be %u (got %u)", family, ndims,
                          op->ndims);
  }
  for (uint32_t i = 0; i < ndims; i++) {
    if (op->dims[i] <= 0) {
      return sc_plugin_fail(err, SC_EINVAL, "%s: dims[%u] (%s) must be > 0 (got %lld)", family,
                            i, names[i], (long long)op->dims[i]);
    }
  }
  if (op->variant >= nvariants) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: variant %u unknown (0..%u)", family,
                          op->variant, nvariants - 1);
  }
  if ((unsigned)op->dtype >= SC_DTYPE_COUNT) {
    return sc_plugin_fail(err, SC_EINVAL, "%s: dtype %d unknown", family, (int)op->dtype);
  }
  if (need_peak && !(dev->peak_flops_per_s[op->dtype] > 0.0)) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED,
                          "%s: dtype %s not supported on device '%s' (peak_flops_per_s.%s = 0)",
                          family, sc_dtype_name(op->dtype), dev->name,
                          sc_dtype_name(op->dtype));
  }
  return SC_OK;
}

/* The fp32 (vector) rate of a vector family's kernel: the device's measured rate of this
 * (family, variant) if it states one, else its vector_flops_per_s, else its fp32 peak;
 * SC_EUNSUPPORTED when all are 0. */
static inline int sc__op_vector_peak(const sc_device *dev, const char *family, uint32_t variant,
                                     double *peak, sc_error *err) {
  *peak = sc_device_kernel_rate(dev, family, variant);
  if (!(*peak > 0.0))
    *peak = dev->vector_flops_per_s > 0.0 ? dev->vector_flops_per_s
                                           : dev->peak_flops_per_s[SC_DTYPE_FP32];
  if (!(*peak > 0.0)) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED,
                          "%s: device '%s' has no fp32 rate (peak_flops_per_s.fp32 = 0), "
                          "needed for vector arithmetic", family, dev->name);
  }
  return SC_OK;
}

/* The time to zero-fill a buffer of fill bytes (memset, zero_()) whose cache state is that
 * of a buffer of at bytes (fill itself, or SC__OP_COLD_WS for a cold one): at the device's
 * measured fill rate for that size where it states one (sc_device_fill_bw); else at the
 * cache rate while the buffer fits the last-level cache (the stores land there) and
 * streamed to memory past it, which a write-allocate device's STREAM count prices at 4/3 of
 * mem_bw_Bps (no line is read first), split by the measured miss-share curve's share at
 * that size where the device states one instead of at the cache's nominal size; every fill
 * streamed on a device without a cache rate. docs/operators.md, "Zero-fills".
 * sc__op_fill_s: at = fill. */
static inline double sc__op_fill_at_s(const sc_device *dev, double fill, double at) {
  const double measured = sc_device_fill_bw(dev, at);
  if (measured > 0.0) return fill / measured;
  double dram = dev->mem_bw_Bps * dev->mem_efficiency;
  if (dev->write_allocate) dram *= 4.0 / 3.0;
  if (!(dev->cache_bw_Bps > dram)) return fill / dram;
  if (dev->cache_miss_points > 0) {
    double g = sc_device_miss_share(dev, at);
    return g * fill / dram + (1.0 - g) * fill / dev->cache_bw_Bps;
  }
  return at < dev->l2_bytes ? fill / dev->cache_bw_Bps : fill / dram;
}
static inline double sc__op_fill_s(const sc_device *dev, double fill) {
  return sc__op_fill_at_s(dev, fill, fill);
}

/* The working set at which an operator's cold operands (SC_OP_COLD) are priced: past every
 * cache a device describes, so that every curve by working set gives its last point and
 * the smooth hit rate ws / (ws + cache) is 1 to double precision. */
#define SC__OP_COLD_WS 1e18

/* The time to zero-fill a cold buffer of fill bytes (SC_OP_COLD): at the device's measured
 * cold fill rate for that size where it states one (sc_device_fill_cold_bw), else as a fill
 * past every cache (sc__op_fill_at_s at SC__OP_COLD_WS). */
static inline double sc__op_fill_cold_s(const sc_device *dev, double fill) {
  const double measured = sc_device_fill_cold_bw(dev, fill);
  return measured > 0.0 ? fill / measured : sc__op_fill_at_s(dev, fill, SC__OP_COLD_WS);
}

/* out for an operator whose device time is t seconds (launch overhead added): bound, unless
 * the launch dominates (latency); flops and bytes as given; the features cleared. */
static inline void sc__op_result(const sc_device *dev, double t, double flops, double bytes,
                                 sc_bound bound, sc_estimate *out) {
  memset(out, 0, sizeof *out);
  out->time_s = t + dev->launch_s;
  out->flops = flops;
  out->bytes = bytes;
  out->bound = dev->launch_s > t ? SC_BOUND_LATENCY : bound;
  out->busbw_Bps = 0.0;
  out->bound_tier = -1;
  out->nfeatures = 0;
}

/* Fill time, bound, flops and bytes of out from the roofline; clears the features.
 * footprint: the distinct bytes the kernel touches (its working set), which sets the cache
 * hit rate when the device states cache_bw_Bps; bytes (the traffic) is what moves. They
 * differ for kernels that pass over the same data more than once (an in-place softmax, a
 * read-modify-write).
 * fresh: the bytes the kernel writes to lines it did not read (new outputs), which a
 * write-allocate device (dev->write_allocate) reads first; < 0 = not stated, the STREAM-like
 * mix the device's bandwidth was measured with (bytes at mem_bw_Bps); 0 = every write in
 * place (at the device's rmw_bw_Bps where it states one).
 * exposure >= 0: the multiple of min(compute, memory) time not overlapped (0: the max). */
static inline void sc__op_roofline_exposed(const sc_device *dev, double peak, double eff,
                                           double util, double flops, double bytes,
                                           double footprint, double fresh, double exposure,
                                           sc_estimate *out) {
  double tc = flops > 0.0 ? flops / (peak * eff * util) : 0.0;
  double dram = dev->mem_bw_Bps * dev->mem_efficiency, tm;
  /* the DRAM time of the traffic: STREAM Add counts 12 bytes per element of the 16 that
   * move with write-allocate, so the bytes that really move go at 4/3 of the counted rate;
   * traffic wholly in place (fresh 0) at the device's measured in-place rate where it
   * states one (rmw_bw_Bps, docs/operators.md "In-place updates") */
  double tdram = (fresh == 0.0 && dev->rmw_bw_Bps > 0.0)  ? bytes / dev->rmw_bw_Bps
                 : (dev->write_allocate && fresh >= 0.0) ? (bytes + fresh) / (dram * 4.0 / 3.0)
                                                         : bytes / dram;
  /* the share that misses the caches (1, all of it, on a device without a cache rate) */
  const double g = sc_device_miss_share(dev, footprint);
  tm = g < 1.0 ? g * tdram + (1.0 - g) * bytes / dev->cache_bw_Bps : tdram;
  double t = (tc > tm ? tc : tm) + exposure * (tc > tm ? tm : tc);
  sc__op_result(dev, t, flops, bytes, tc >= tm ? SC_BOUND_COMPUTE : SC_BOUND_MEMORY, out);
}

/* The roofline that overlaps compute and memory fully (exposure 0). */
static inline void sc__op_roofline_mem(const sc_device *dev, double peak, double eff,
                                       double util, double flops, double bytes,
                                       double footprint, double fresh, sc_estimate *out) {
  sc__op_roofline_exposed(dev, peak, eff, util, flops, bytes, footprint, fresh, 0.0, out);
}

/* The roofline of a row kernel that passes over each row more than once, row_bytes the
 * working set it keeps per row (the rows it reads and writes and the per-column vectors):
 * sc_device_row_exposure times min(compute, memory), the part it cannot overlap, is added
 * to the max. */
static inline void sc__op_roofline_rows(const sc_device *dev, const char *family,
                                        uint32_t variant, double row_bytes, double peak,
                                        double eff, double flops, double bytes,
                                        double footprint, double fresh, sc_estimate *out) {
  sc__op_roofline_exposed(dev, peak, eff, 1.0, flops, bytes, footprint, fresh,
                          sc_device_row_exposure(dev, family, variant, row_bytes), out);
}

/* The roofline whose working set is its traffic (each byte touched once), at the
 * bandwidth's own read/write mix. */
static inline void sc__op_roofline_eff(const sc_device *dev, double peak, double eff,
                                       double util, double flops, double bytes,
                                       sc_estimate *out) {
  sc__op_roofline_mem(dev, peak, eff, util, flops, bytes, bytes, -1.0, out);
}

/* log10(max(x, 1)): features stay finite for zero-FLOP operators. */
static inline double sc__op_log10(double x) { return log10(x > 1.0 ? x : 1.0); }
static inline double sc__op_log2(double x) { return log2(x > 1.0 ? x : 1.0); }

/* Arithmetic intensity, FLOPs per byte (0 when no bytes). */
static inline double sc__op_intensity(double flops, double bytes) {
  return bytes > 0.0 ? flops / bytes : 0.0;
}

#endif
