/*
 * What the hardware plugins that describe a [hardware] table and measure on a live device
 * (cpu.c, cuda/cuda.c) share: typed lookups through the host services with file:line:key
 * messages, and the summary of a set of timing samples. Plugins link only their own
 * sources, so this is a header of static functions, like ops/op_common.h.
 */
#ifndef SC_PLUGINS_HW_COMMON_H
#define SC_PLUGINS_HW_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/plugin.h"

/* Every key of t must be in known[] (NULL-terminated); an older host cannot list keys. */
static inline int sc__hw_check_keys(const sc_host *host, const sc_table *t, const char *prefix,
                                    const char *const *known, sc_error *err) {
  const char *key = NULL;
  if (host->size < offsetof(sc_host, table_key) + sizeof host->table_key ||
      host->table_key == NULL)
    return SC_OK;
  for (size_t i = 0; host->table_key(t, i, &key) == SC_OK; i++) {
    int ok = 0;
    for (size_t k = 0; known[k] != NULL; k++) ok |= strcmp(key, known[k]) == 0;
    if (!ok) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': unknown key in [hardware]",
                            host->table_where(t, key), prefix, key);
    }
  }
  return SC_OK;
}

/* A finite number > 0 (or >= 0 with zero_ok) inside the range of its unit
 * (sc_unit_range, plugin.h); required ones report a missing key, optional ones return
 * SC_ENOTFOUND. */
static inline int sc__hw_number(const sc_host *host, const sc_table *t, const char *prefix,
                                const char *key, int required, int zero_ok, double *out,
                                sc_error *err) {
  int rc = host->table_number(t, key, out, err);
  if (rc == SC_ENOTFOUND) {
    if (!required) return SC_ENOTFOUND;
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': missing required key in [hardware]",
                          host->table_where(t, NULL), prefix, key);
  }
  if (rc == SC_ESPEC && prefix[0] != '\0') /* the host names the key without its table */
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': expected a number",
                          host->table_where(t, key), prefix, key);
  if (rc != SC_OK) return rc;
  if (!isfinite(*out)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be finite (is %g)",
                          host->table_where(t, key), prefix, key, *out);
  }
  if (!(zero_ok ? *out >= 0 : *out > 0)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be %s 0 (is %g)",
                          host->table_where(t, key), prefix, key, zero_ok ? ">=" : ">", *out);
  }
  {
    double lo, hi;
    const char *unit;
    if (*out > 0 && sc_unit_range(prefix, key, &lo, &hi, &unit) && !(*out >= lo && *out <= hi))
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': %g %s is outside [%g, %g] (a typo "
                            "in the exponent?)", host->table_where(t, key), prefix, key, *out,
                            unit, lo, hi);
  }
  return SC_OK;
}

/* An optional number of [hardware] (> 0, or >= 0 with zero_ok) into *out; 0 when absent. */
static inline int sc__hw_opt_number(const sc_host *host, const sc_table *t, const char *key,
                                    int zero_ok, double *out, sc_error *err) {
  int rc = sc__hw_number(host, t, "", key, 0, zero_ok, out, err);
  if (rc == SC_ENOTFOUND) {
    *out = 0;
    return SC_OK;
  }
  return rc;
}

/* A whole number in [1, max] into *out (max at most 2^31 - 1); required, or optional and
 * then left unchanged when absent. */
static inline int sc__hw_whole(const sc_host *host, const sc_table *t, const char *prefix,
                               const char *key, int required, double max, uint32_t *out,
                               sc_error *err) {
  double v = 0;
  int rc = sc__hw_number(host, t, prefix, key, required, 0, &v, err);
  if (rc == SC_ENOTFOUND && !required) return SC_OK;
  if (rc != SC_OK) return rc;
  if (!(v >= 1 && v <= max && v == floor(v))) {
    if (max >= 2147483647.0)
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be a whole number >= 1 "
                            "(is %g)", host->table_where(t, key), prefix, key, v);
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be a whole number in [1, %g] "
                          "(is %g)", host->table_where(t, key), prefix, key, max, v);
  }
  *out = (uint32_t)v;
  return SC_OK;
}

/* A required whole number in [1, 2^31). */
static inline int sc__hw_count(const sc_host *host, const sc_table *t, const char *prefix,
                               const char *key, uint32_t *out, sc_error *err) {
  return sc__hw_whole(host, t, prefix, key, 1, 2147483647.0, out, err);
}

/* An optional fraction in (0, 1] into *out; absent leaves *out unchanged. */
static inline int sc__hw_opt_fraction(const sc_host *host, const sc_table *t, const char *prefix,
                                      const char *key, double *out, sc_error *err) {
  double v = 0;
  int rc = sc__hw_number(host, t, prefix, key, 0, 0, &v, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) return rc;
  if (!(v >= SC_RANGE_EFFICIENCY_MIN && v <= 1)) { /* below it: a typo, not a device */
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be in ["
                          SC_RANGE_STR(SC_RANGE_EFFICIENCY_MIN) ", 1] (is %g)",
                          host->table_where(t, key), prefix, key, v);
  }
  *out = v;
  return SC_OK;
}

/* An optional fraction in (0, 1], 1 when absent. */
static inline int sc__hw_fraction(const sc_host *host, const sc_table *t, const char *key,
                                  double *out, sc_error *err) {
  *out = 1.0;
  return sc__hw_opt_fraction(host, t, "", key, out, err);
}

/* The optional attention_fwd_efficiency, attention_bwd_efficiency, attention_block_q and
 * attention_block_k of t (a tile of at most 65536 rows or keys). */
static inline int sc__hw_attention_efficiencies(const sc_host *host, const sc_table *t,
                                                sc_device *dev, sc_error *err) {
  int rc = sc__hw_opt_fraction(host, t, "", "attention_fwd_efficiency",
                               &dev->attention_fwd_efficiency, err);
  if (rc == SC_OK)
    rc = sc__hw_opt_fraction(host, t, "", "attention_bwd_efficiency",
                             &dev->attention_bwd_efficiency, err);
  if (rc == SC_OK)
    rc = sc__hw_opt_fraction(host, t, "", "matmul_unaligned_efficiency",
                             &dev->matmul_unaligned_efficiency, err);
  if (rc == SC_OK)
    rc = sc__hw_whole(host, t, "", "attention_block_q", 0, 65536, &dev->attention_block_q, err);
  if (rc == SC_OK)
    rc = sc__hw_whole(host, t, "", "attention_block_k", 0, 65536, &dev->attention_block_k, err);
  return rc;
}

/* The optional kernel-class efficiencies of a [hardware] table t (docs/formats.md):
 *   [hardware.flops_efficiency_by_dtype]  <dtype> = fraction   (matmul efficiency per type;
 *                                          the type must have a peak)
 *   attention_fwd_efficiency, attention_bwd_efficiency = fraction
 *   matmul_unaligned_efficiency = fraction (a GEMM with a dimension not a multiple of
 *                                          16 bytes' worth of elements)
 *   attention_block_q, attention_block_k = whole number (the fused kernel's tile)
 * Call after dev->peak_flops_per_s is filled. Absent keys leave the fields 0. */
static inline int sc__hw_kernel_efficiencies(const sc_host *host, const sc_table *t,
                                             sc_device *dev, sc_error *err) {
  const sc_table *by = NULL;
  int rc = sc__hw_attention_efficiencies(host, t, dev, err);
  if (rc != SC_OK) return rc;
  rc = host->table_table(t, "flops_efficiency_by_dtype", &by, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) return rc;
  const char *known[SC_DTYPE_COUNT + 1];
  for (int d = 0; d < SC_DTYPE_COUNT; d++) known[d] = sc_dtype_name((sc_dtype)d);
  known[SC_DTYPE_COUNT] = NULL;
  if ((rc = sc__hw_check_keys(host, by, "flops_efficiency_by_dtype.", known, err)) != SC_OK)
    return rc;
  for (int d = 0; d < SC_DTYPE_COUNT; d++) {
    double v = 0;
    rc = sc__hw_opt_fraction(host, by, "flops_efficiency_by_dtype.", known[d], &v, err);
    if (rc != SC_OK) return rc;
    if (v == 0) continue;
    if (!(dev->peak_flops_per_s[d] > 0)) {
      return sc_plugin_fail(err, SC_ESPEC,
                            "%s: key 'flops_efficiency_by_dtype.%s': the device has no "
                            "peak_flops_per_s.%s", host->table_where(by, known[d]), known[d],
                            known[d]);
    }
    dev->matmul_efficiency[d] = v;
  }
  return SC_OK;
}

/* [hardware.<tkey>.<fam>.<variant>] of row widths: <cols> = value, cols one of
 * SC_ROW_RATE_COLS0 x 2^i (i < widths), into dst[i]. */
static inline int sc__hw_width_table(const sc_host *host, const sc_table *vt, const char *tkey,
                                     const char *fam, const char *variant, const char *unit,
                                     int zero_ok, int widths, double *dst, sc_error *err) {
  const sc_table *wt = NULL;
  const char *key = NULL;
  char prefix[128];
  int rc = host->table_table(vt, variant, &wt, err);
  if (rc != SC_OK) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s.%s': must be a table of <columns> = "
                          "%s", host->table_where(vt, variant), tkey, fam, variant, unit);
  }
  snprintf(prefix, sizeof prefix, "%s.%s.%s.", tkey, fam, variant);
  for (size_t j = 0; host->table_key(wt, j, &key) == SC_OK; j++) {
    char *end = NULL;
    long c = strtol(key, &end, 10);
    int w = -1;
    for (int i = 0; i < widths && end != key && *end == '\0'; i++)
      if ((double)c == SC_ROW_RATE_COLS0 * (double)(1L << i)) w = i;
    if (w < 0) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be a row width of %g x 2^i "
                            "columns (%g to %g)", host->table_where(wt, key), prefix, key,
                            SC_ROW_RATE_COLS0, SC_ROW_RATE_COLS0,
                            SC_ROW_RATE_COLS0 * (double)(1L << (widths - 1)));
    }
    rc = sc__hw_number(host, wt, prefix, key, 1, zero_ok, &dst[w], err);
    if (rc != SC_OK) return rc;
  }
  return SC_OK;
}

/* An optional per-kernel table of a [hardware] table t (docs/formats.md):
 *   [hardware.<key>.<family>]  <variant index> = value
 * or, with widths > 0, one value per row width (sc__hw_width_table):
 *   [hardware.<key>.<family>.<variant index>]  <columns> = value
 * at most SC_KERNEL_RATE_FAMILIES families and variant indices below
 * SC_KERNEL_RATE_VARIANTS; value > 0 (unit names it in messages), or >= 0 when zero_ok is
 * set. Entry i's family name is fam0 + i * stride (char[32]) and its values
 * val0 + i * stride bytes on (double[SC_KERNEL_RATE_VARIANTS], times widths when widths > 0):
 * the layout of sc_device.kernel_rates, .row_exposure and .row_rate. Absent: the entries stay
 * empty. The family names
 * are not checked against the loaded operator plugins (a hardware plugin does not see them);
 * a misspelt family is simply never asked for. */
static inline int sc__hw_kernel_table(const sc_host *host, const sc_table *t, const char *tkey,
                                      const char *unit, int zero_ok, int widths, char *fam0,
                                      double *val0, size_t stride, sc_error *err) {
  const sc_table *by = NULL;
  const char *fam = NULL;
  const size_t famcap = sizeof ((sc_device *)0)->kernel_rates[0].family;
  int rc = host->table_table(t, tkey, &by, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) return rc;
  if (host->size < offsetof(sc_host, table_key) + sizeof host->table_key ||
      host->table_key == NULL) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': this stepcast cannot list table keys "
                          "(host too old)", host->table_where(t, NULL), tkey);
  }
  for (size_t i = 0; host->table_key(by, i, &fam) == SC_OK; i++) {
    const sc_table *ft = NULL;
    const char *key = NULL;
    char *fdst = fam0 + i * stride;
    double *vdst = (double *)(void *)((char *)val0 + i * stride);
    if (i >= SC_KERNEL_RATE_FAMILIES) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': more than %d families",
                            host->table_where(by, fam), tkey, fam, SC_KERNEL_RATE_FAMILIES);
    }
    rc = host->table_table(by, fam, &ft, err);
    if (rc != SC_OK) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': must be a table of <variant "
                            "index> = %s", host->table_where(by, fam), tkey, fam, unit);
    }
    if (strlen(fam) >= famcap) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': family name longer than %zu "
                            "characters", host->table_where(by, fam), tkey, fam, famcap - 1);
    }
    snprintf(fdst, famcap, "%s", fam);
    for (size_t j = 0; host->table_key(ft, j, &key) == SC_OK; j++) {
      char *end = NULL;
      char prefix[96];
      long v = strtol(key, &end, 10);
      snprintf(prefix, sizeof prefix, "%s.%s.", tkey, fam);
      if (end == key || *end != '\0' || v < 0 || v >= SC_KERNEL_RATE_VARIANTS) {
        return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be a variant index in "
                              "[0, %d)", host->table_where(ft, key), prefix, key,
                              SC_KERNEL_RATE_VARIANTS);
      }
      if (widths == 0) {
        rc = sc__hw_number(host, ft, prefix, key, 1, zero_ok, &vdst[v], err);
        if (rc != SC_OK) return rc;
        continue;
      }
      rc = sc__hw_width_table(host, ft, tkey, fam, key, unit, zero_ok, widths, vdst + v * widths,
                              err);
      if (rc != SC_OK) return rc;
    }
  }
  return SC_OK;
}

_Static_assert(sizeof ((sc_device *)0)->kernel_rates[0] ==
                   sizeof ((sc_device *)0)->row_exposure[0] &&
               sizeof ((sc_device *)0)->kernel_rates[0].family ==
                   sizeof ((sc_device *)0)->row_exposure[0].family,
               "sc__hw_kernel_table reads both tables with one layout");
_Static_assert(sizeof ((sc_device *)0)->row_rate[0].family ==
                   sizeof ((sc_device *)0)->kernel_rates[0].family,
               "sc__hw_kernel_table writes row_rate's family names with kernel_rates' capacity");

/* The optional per-kernel rates [hardware.kernel_flops_per_s.<family>] <variant> = FLOP/s. */
static inline int sc__hw_kernel_rates(const sc_host *host, const sc_table *t, sc_device *dev,
                                      sc_error *err) {
  return sc__hw_kernel_table(host, t, "kernel_flops_per_s", "FLOP/s", 0, 0,
                             dev->kernel_rates[0].family, dev->kernel_rates[0].flops_per_s,
                             sizeof dev->kernel_rates[0], err);
}

/* The optional l1_bytes and [hardware.row_exposure.<family>] <variant> = multiple (>= 0) of a
 * CPU (sc_device_row_exposure); an exposure needs the L1 size it is relative to. */
static inline int sc__hw_row_exposure(const sc_host *host, const sc_table *t, sc_device *dev,
                                      sc_error *err) {
  int rc = sc__hw_opt_number(host, t, "l1_bytes", 0, &dev->l1_bytes, err);
  if (rc != SC_OK) return rc;
  rc = sc__hw_kernel_table(host, t, "row_exposure", "multiple", 1, 0,
                           dev->row_exposure[0].family, dev->row_exposure[0].multiple,
                           sizeof dev->row_exposure[0], err);
  if (rc != SC_OK) return rc;
  if (dev->row_exposure[0].family[0] != '\0' && !(dev->l1_bytes > 0)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'row_exposure': needs l1_bytes, the L1 data "
                          "cache the rows are measured against", host->table_where(t, "row_exposure"));
  }
  return SC_OK;
}

/* The optional gemm_exposed_bw_Bps and gemm_exposed_knee_bytes of a CPU
 * (sc_device_gemm_exposed_s): each needs the other. */
static inline int sc__hw_gemm_exposure(const sc_host *host, const sc_table *t, sc_device *dev,
                                       sc_error *err) {
  int rc = sc__hw_opt_number(host, t, "gemm_exposed_bw_Bps", 0, &dev->gemm_exposed_bw_Bps, err);
  if (rc != SC_OK) return rc;
  rc = sc__hw_opt_number(host, t, "gemm_exposed_knee_bytes", 0, &dev->gemm_exposed_knee_bytes,
                         err);
  if (rc != SC_OK) return rc;
  if ((dev->gemm_exposed_bw_Bps > 0) != (dev->gemm_exposed_knee_bytes > 0)) {
    const int bw = dev->gemm_exposed_bw_Bps > 0;
    const char *has = bw ? "gemm_exposed_bw_Bps" : "gemm_exposed_knee_bytes";
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': needs %s too (the exposed rate and the "
                          "working set at which half the traffic is exposed)",
                          host->table_where(t, has), has,
                          bw ? "gemm_exposed_knee_bytes" : "gemm_exposed_bw_Bps");
  }
  return SC_OK;
}

/* The optional [hardware.row_rate.<family>.<variant>] <columns> = multiple (> 0) of the
 * kernel's stated rate at that row width (sc_device_row_rate). */
static inline int sc__hw_row_rate(const sc_host *host, const sc_table *t, sc_device *dev,
                                  sc_error *err) {
  return sc__hw_kernel_table(host, t, "row_rate", "multiple", 0, SC_ROW_RATE_WIDTHS,
                             dev->row_rate[0].family, &dev->row_rate[0].multiple[0][0],
                             sizeof dev->row_rate[0], err);
}

/* An optional [hardware.<name>] table of <bytes> = value, a curve by size: at most
 * SC_CACHE_CURVE_POINTS whole byte counts in [1, SC_RANGE_BYTES_MAX] in increasing order,
 * each value a number in [lo, hi] (what names the pair in messages: "<working-set bytes> =
 * share"); with falling != NULL, none below the one before (falling completes the message:
 * "a larger working set does not miss less"). *n = 0 when the table is absent; an empty
 * table is an error. */
static inline int sc__hw_byte_curve(const sc_host *host, const sc_table *t, const char *name,
                                    const char *what, double lo, double hi, const char *falling,
                                    double *xs, double *ys, uint32_t *n, sc_error *err) {
  const sc_table *c = NULL;
  const char *key = NULL;
  char prefix[64];
  *n = 0;
  int rc = host->table_table(t, name, &c, err);
  if (rc == SC_ENOTFOUND) return SC_OK;
  if (rc != SC_OK) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': must be a table of %s",
                          host->table_where(t, name), name, what);
  }
  if (host->size < offsetof(sc_host, table_key) + sizeof host->table_key ||
      host->table_key == NULL) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': this stepcast cannot list table keys "
                          "(host too old)", host->table_where(t, NULL), name);
  }
  snprintf(prefix, sizeof prefix, "%s.", name);
  for (size_t i = 0; host->table_key(c, i, &key) == SC_OK; i++) {
    double y = 0;
    const int digits = key[0] != '\0' && strspn(key, "0123456789") == strlen(key);
    const double x = digits ? strtod(key, NULL) : 0.0;
    if (!(x >= 1 && x <= SC_RANGE_BYTES_MAX)) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': must be a size in whole bytes in "
                            "[1, %g]", host->table_where(c, key), name, key,
                            (double)SC_RANGE_BYTES_MAX);
    }
    if (*n >= SC_CACHE_CURVE_POINTS) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': more than %d points",
                            host->table_where(c, key), name, key, SC_CACHE_CURVE_POINTS);
    }
    rc = sc__hw_number(host, c, prefix, key, 1, 1, &y, err);
    if (rc != SC_OK) return rc;
    if (!(y >= lo && y <= hi)) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': must be in [%g, %g] (is %g)",
                            host->table_where(c, key), name, key, lo, hi, y);
    }
    if (*n > 0 && !(x > xs[*n - 1])) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': sizes must increase (the one "
                            "before is %.17g)", host->table_where(c, key), name, key,
                            xs[*n - 1]);
    }
    if (*n > 0 && falling != NULL && y < ys[*n - 1]) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s.%s': %g is below the value at the "
                            "smaller size before it (%g); %s", host->table_where(c, key), name,
                            key, y, ys[*n - 1], falling);
    }
    xs[*n] = x;
    ys[*n] = y;
    (*n)++;
  }
  if (*n == 0) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': an empty table (state points or leave "
                          "it out)", host->table_where(t, name), name);
  }
  return SC_OK;
}

/* The optional [hardware.cache_miss_share] <working-set bytes> = share of a CPU
 * (sc_device_miss_share): each share in [0, 1] and none below the one before; needs
 * cache_bw_Bps, the rate of the share that hits. */
static inline int sc__hw_cache_miss_share(const sc_host *host, const sc_table *t,
                                          sc_device *dev, sc_error *err) {
  uint32_t n = 0;
  int rc = sc__hw_byte_curve(host, t, "cache_miss_share", "<working-set bytes> = share", 0.0,
                             1.0, "a larger working set does not miss less",
                             dev->cache_miss_ws_bytes, dev->cache_miss_share, &n, err);
  if (rc != SC_OK || n == 0) return rc;
  if (!(dev->cache_bw_Bps > 0)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'cache_miss_share': needs cache_bw_Bps, the "
                          "rate of the share that hits", host->table_where(t, "cache_miss_share"));
  }
  dev->cache_miss_points = n;
  return SC_OK;
}

/* The optional [hardware.fill_bw_Bps] <buffer bytes> = zero-fill rate in B/s of a CPU
 * (sc_device_fill_bw), and with cold the same of a cold buffer,
 * [hardware.fill_cold_bw_Bps] (sc_device_fill_cold_bw): each rate in [SC_RANGE_BPS_MIN,
 * SC_RANGE_BPS_MAX]. */
static inline int sc__hw_fill_bw(const sc_host *host, const sc_table *t, sc_device *dev,
                                 int cold, sc_error *err) {
  uint32_t n = 0;
  int rc = sc__hw_byte_curve(host, t, cold ? "fill_cold_bw_Bps" : "fill_bw_Bps",
                             "<buffer bytes> = B/s", SC_RANGE_BPS_MIN, SC_RANGE_BPS_MAX, NULL,
                             cold ? dev->fill_cold_bytes : dev->fill_bytes,
                             cold ? dev->fill_cold_bw_Bps : dev->fill_bw_Bps, &n, err);
  if (rc == SC_OK) *(cold ? &dev->fill_cold_points : &dev->fill_points) = n;
  return rc;
}

/* The optional [hardware.gather_row_s] <working-set bytes> = seconds per row of a CPU
 * (sc_device_gather_row_s): each in [0, 1e-3] and none below the one before. */
static inline int sc__hw_gather_row(const sc_host *host, const sc_table *t, sc_device *dev,
                                    sc_error *err) {
  uint32_t n = 0;
  int rc = sc__hw_byte_curve(host, t, "gather_row_s", "<working-set bytes> = seconds per row",
                             0.0, 1e-3, "a larger working set does not cost less per row",
                             dev->gather_ws_bytes, dev->gather_row_s, &n, err);
  if (rc == SC_OK) dev->gather_points = n;
  return rc;
}

/* A required non-empty string that fits dst[cap]. */
static inline int sc__hw_string(const sc_host *host, const sc_table *t, const char *key,
                                char *dst, size_t cap, sc_error *err) {
  const char *s = NULL;
  int rc = host->table_string(t, key, &s, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': missing required key in [hardware]",
                          host->table_where(t, NULL), key);
  }
  if (rc != SC_OK) return rc;
  if (s[0] == '\0' || strlen(s) >= cap) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': must have 1 to %zu characters",
                          host->table_where(t, key), key, cap - 1);
  }
  snprintf(dst, cap, "%s", s);
  return SC_OK;
}

static inline int sc__hw_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Value at quantile q of sorted s[0..n) by linear interpolation. */
static inline double sc__hw_quantile(const double *s, uint32_t n, double q) {
  double pos = q * (double)(n - 1);
  uint32_t i = (uint32_t)pos;
  if (i + 1 >= n) return s[n - 1];
  return s[i] + (pos - (double)i) * (s[i + 1] - s[i]);
}

/* Sort samples[0..n) (n >= 1) and fill out with their median, extremes and p10/p90. */
static inline void sc__hw_summarise(double *samples, uint32_t n, sc_measurement *out) {
  qsort(samples, n, sizeof samples[0], sc__hw_cmp);
  memset(out, 0, sizeof *out);
  out->median_s = sc__hw_quantile(samples, n, 0.5);
  out->min_s = samples[0];
  out->max_s = samples[n - 1];
  out->p10_s = sc__hw_quantile(samples, n, 0.1);
  out->p90_s = sc__hw_quantile(samples, n, 0.9);
  out->reps = n;
}

/* The start of every hardware plugin's describe: the file's [hardware] table into *t (a
 * missing one is an error naming the file), dev zeroed, no key outside keys (NULL-ended),
 * the required name, and kind, which must be the plugin's own. */
static inline int sc__hw_open(const sc_host *host, const sc_table *file, const char *kind,
                              const char *const *keys, sc_device *dev, const sc_table **t,
                              sc_error *err) {
  int rc;
  if (host == NULL || file == NULL || dev == NULL)
    return sc_plugin_fail(err, SC_EINVAL, "%s: describe: NULL argument", kind);
  rc = host->table_table(file, "hardware", t, err);
  if (rc == SC_ENOTFOUND)
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'hardware': missing [hardware] table",
                          host->table_where(file, NULL));
  if (rc != SC_OK) return rc;
  memset(dev, 0, sizeof *dev);
  if ((rc = sc__hw_check_keys(host, *t, "", keys, err)) != SC_OK) return rc;
  if ((rc = sc__hw_string(host, *t, "name", dev->name, sizeof dev->name, err)) != SC_OK)
    return rc;
  if ((rc = sc__hw_string(host, *t, "kind", dev->kind, sizeof dev->kind, err)) != SC_OK)
    return rc;
  if (strcmp(dev->kind, kind) != 0)
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'kind': the %s plugin describes kind "
                          "\"%s\", not \"%s\"", host->table_where(*t, "kind"), kind, kind,
                          dev->kind);
  return SC_OK;
}

/* The [hardware] table of a GPU-like device file (the gpu and cuda plugins; docs/formats.md):
 * name, kind (must be `kind`), mem_bytes, mem_bw_Bps, l2_bytes, compute_units,
 * flops_efficiency, mem_efficiency, launch_s, board_power_W, [peak_flops_per_s] per dtype,
 * [tile] m/n/k,
 * the optional kernel-class efficiencies (sc__hw_kernel_efficiencies) and per-kernel rates
 * (sc__hw_kernel_rates). Unknown keys and
 * malformed values fail with file:line: key '...': reason. */
static inline int sc__hw_describe_accel(const sc_host *host, const sc_table *file,
                                        const char *kind, sc_device *dev, sc_error *err) {
  static const char *const keys[] = {"name", "kind", "mem_bytes", "mem_bw_Bps", "l2_bytes",
                                     "compute_units", "flops_efficiency", "mem_efficiency",
                                     "launch_s", "peak_flops_per_s", "tile",
                                     "flops_efficiency_by_dtype", "attention_fwd_efficiency",
                                     "attention_bwd_efficiency", "attention_block_q",
                                     "attention_block_k", "kernel_flops_per_s",
                                     "matmul_unaligned_efficiency", "board_power_W", NULL};
  static const char *const tile_keys[] = {"m", "n", "k", NULL};
  const sc_table *t = NULL, *peak = NULL, *tile = NULL;
  const char *known[SC_DTYPE_COUNT + 1];
  int rc, any = 0;
  if ((rc = sc__hw_open(host, file, kind, keys, dev, &t, err)) != SC_OK) return rc;
  if ((rc = sc__hw_number(host, t, "", "mem_bytes", 1, 0, &dev->mem_bytes, err)) != SC_OK ||
      (rc = sc__hw_number(host, t, "", "mem_bw_Bps", 1, 0, &dev->mem_bw_Bps, err)) != SC_OK ||
      (rc = sc__hw_number(host, t, "", "l2_bytes", 1, 0, &dev->l2_bytes, err)) != SC_OK ||
      (rc = sc__hw_count(host, t, "", "compute_units", &dev->compute_units, err)) != SC_OK ||
      (rc = sc__hw_fraction(host, t, "flops_efficiency", &dev->flops_efficiency, err)) != SC_OK ||
      (rc = sc__hw_fraction(host, t, "mem_efficiency", &dev->mem_efficiency, err)) != SC_OK)
    return rc;
  if ((rc = sc__hw_opt_number(host, t, "launch_s", 1, &dev->launch_s, err)) != SC_OK) return rc;
  if ((rc = sc__hw_opt_number(host, t, "board_power_W", 0, &dev->board_power_w, err)) != SC_OK)
    return rc;
  rc = host->table_table(t, "peak_flops_per_s", &peak, err);
  if (rc == SC_ENOTFOUND)
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'peak_flops_per_s': missing required table "
                          "in [hardware]", host->table_where(t, NULL));
  if (rc != SC_OK) return rc;
  for (int d = 0; d < SC_DTYPE_COUNT; d++) known[d] = sc_dtype_name((sc_dtype)d);
  known[SC_DTYPE_COUNT] = NULL;
  if ((rc = sc__hw_check_keys(host, peak, "peak_flops_per_s.", known, err)) != SC_OK) return rc;
  for (int d = 0; d < SC_DTYPE_COUNT; d++) {
    double v = 0;
    rc = sc__hw_number(host, peak, "peak_flops_per_s.", known[d], 0, 1, &v, err);
    if (rc == SC_ENOTFOUND) continue; /* unsupported dtype: 0 */
    if (rc != SC_OK) return rc;
    if (!(v > 0))
      return sc_plugin_fail(err, SC_ESPEC, "%s: key 'peak_flops_per_s.%s': must be > 0 (leave "
                            "it out when the device lacks the type), is %g",
                            host->table_where(peak, known[d]), known[d], v);
    dev->peak_flops_per_s[d] = v;
    any = 1;
  }
  if (!any)
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'peak_flops_per_s': names no data type",
                          host->table_where(peak, NULL));
  rc = host->table_table(t, "tile", &tile, err);
  if (rc == SC_ENOTFOUND)
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'tile': missing required table in [hardware]",
                          host->table_where(t, NULL));
  if (rc != SC_OK) return rc;
  if ((rc = sc__hw_check_keys(host, tile, "tile.", tile_keys, err)) != SC_OK ||
      (rc = sc__hw_count(host, tile, "tile.", "m", &dev->tile_m, err)) != SC_OK ||
      (rc = sc__hw_count(host, tile, "tile.", "n", &dev->tile_n, err)) != SC_OK ||
      (rc = sc__hw_count(host, tile, "tile.", "k", &dev->tile_k, err)) != SC_OK)
    return rc;
  if ((rc = sc__hw_kernel_efficiencies(host, t, dev, err)) != SC_OK) return rc;
  return sc__hw_kernel_rates(host, t, dev, err);
}

#endif
