/*
 * The `gpu` hardware plugin: turns a TOML-described GPU (hardware/<device>.toml with
 * kind = "gpu") into an sc_device. It reads the file only through the sc_host table
 * services and cannot measure (measure = NULL). Keys and units: docs/formats.md.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stepcast/plugin.h"

#include "hw_common.h"

static const char *const gpu_keys[] = {"name", "kind", "mem_bytes", "mem_bw_Bps", "l2_bytes",
                                       "compute_units", "flops_efficiency", "mem_efficiency",
                                       "launch_s", "peak_flops_per_s", "tile",
                                       "flops_efficiency_by_dtype", "attention_fwd_efficiency",
                                       "attention_bwd_efficiency", NULL};
static const char *const gpu_tile_keys[] = {"m", "n", "k", NULL};

/* A number from t; required ones give "missing required key" naming the table. */
static int gpu_number(const sc_host *host, const sc_table *t, const char *prefix,
                      const char *key, int required, double *out, sc_error *err) {
  int rc = host->table_number(t, key, out, err);
  if (rc == SC_ENOTFOUND) {
    if (!required) return SC_ENOTFOUND;
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': missing required key in [hardware]",
                          host->table_where(t, NULL), prefix, key);
  }
  if (rc == SC_OK && !isfinite(*out)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be finite",
                          host->table_where(t, key), prefix, key);
  }
  return rc;
}

static int gpu_positive(const sc_host *host, const sc_table *t, const char *prefix,
                        const char *key, double v, sc_error *err) {
  if (v > 0) return SC_OK;
  return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be > 0 (is %g)",
                        host->table_where(t, key), prefix, key, v);
}

/* An integral count in [1, 2^31). */
static int gpu_count(const sc_host *host, const sc_table *t, const char *prefix,
                     const char *key, uint32_t *out, sc_error *err) {
  double v = 0;
  int rc = gpu_number(host, t, prefix, key, 1, &v, err);
  if (rc != SC_OK) return rc;
  if (!(v >= 1 && v < 2147483648.0 && v == floor(v))) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s%s': must be a whole number >= 1 (is %g)",
                          host->table_where(t, key), prefix, key, v);
  }
  *out = (uint32_t)v;
  return SC_OK;
}

static int gpu_fraction(const sc_host *host, const sc_table *t, const char *key, double *out,
                        sc_error *err) {
  int rc = gpu_number(host, t, "", key, 0, out, err);
  if (rc == SC_ENOTFOUND) { *out = 1.0; return SC_OK; }
  if (rc != SC_OK) return rc;
  if (!(*out > 0 && *out <= 1)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key '%s': must be in (0, 1] (is %g)",
                          host->table_where(t, key), key, *out);
  }
  return SC_OK;
}

static int gpu_describe(void *state, const sc_host *host, const sc_table *file, sc_device *dev,
                        sc_error *err) {
  const sc_table *t = NULL, *peak = NULL, *tile = NULL;
  const char *s = NULL;
  double v = 0;
  int rc, any = 0;
  (void)state;
  if (host == NULL || file == NULL || dev == NULL) {
    return sc_plugin_fail(err, SC_EINVAL, "gpu: describe: NULL argument");
  }
  rc = host->table_table(file, "hardware", &t, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'hardware': missing [hardware] table",
                          host->table_where(file, NULL));
  }
  if (rc != SC_OK) return rc;
  memset(dev, 0, sizeof *dev);
  if ((rc = sc__hw_check_keys(host, t, "", gpu_keys, err)) != SC_OK) return rc;

  rc = host->table_string(t, "name", &s, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'name': missing required key in [hardware]",
                          host->table_where(t, NULL));
  }
  if (rc != SC_OK) return rc;
  if (s[0] == '\0' || strlen(s) >= sizeof dev->name) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'name': must have 1 to %zu characters",
                          host->table_where(t, "name"), sizeof dev->name - 1);
  }
  snprintf(dev->name, sizeof dev->name, "%s", s);
  rc = host->table_string(t, "kind", &s, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'kind': missing required key in [hardware]",
                          host->table_where(t, NULL));
  }
  if (rc != SC_OK) return rc;
  if (strcmp(s, "gpu") != 0) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'kind': the gpu plugin describes kind \"gpu\", "
                          "not \"%s\"", host->table_where(t, "kind"), s);
  }
  snprintf(dev->kind, sizeof dev->kind, "gpu");

  if ((rc = gpu_number(host, t, "", "mem_bytes", 1, &dev->mem_bytes, err)) != SC_OK) return rc;
  if ((rc = gpu_positive(host, t, "", "mem_bytes", dev->mem_bytes, err)) != SC_OK) return rc;
  if ((rc = gpu_number(host, t, "", "mem_bw_Bps", 1, &dev->mem_bw_Bps, err)) != SC_OK) return rc;
  if ((rc = gpu_positive(host, t, "", "mem_bw_Bps", dev->mem_bw_Bps, err)) != SC_OK) return rc;
  if ((rc = gpu_number(host, t, "", "l2_bytes", 1, &dev->l2_bytes, err)) != SC_OK) return rc;
  if ((rc = gpu_positive(host, t, "", "l2_bytes", dev->l2_bytes, err)) != SC_OK) return rc;
  if ((rc = gpu_count(host, t, "", "compute_units", &dev->compute_units, err)) != SC_OK) return rc;
  if ((rc = gpu_fraction(host, t, "flops_efficiency", &dev->flops_efficiency, err)) != SC_OK) return rc;
  if ((rc = gpu_fraction(host, t, "mem_efficiency", &dev->mem_efficiency, err)) != SC_OK) return rc;
  rc = gpu_number(host, t, "", "launch_s", 0, &dev->launch_s, err);
  if (rc == SC_ENOTFOUND) dev->launch_s = 0;
  else if (rc != SC_OK) return rc;
  else if (dev->launch_s < 0) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'launch_s': must be >= 0 (is %g)",
                          host->table_where(t, "launch_s"), dev->launch_s);
  }

  rc = host->table_table(t, "peak_flops_per_s", &peak, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC,
                          "%s: key 'peak_flops_per_s': missing required table in [hardware]",
                          host->table_where(t, NULL));
  }
  if (rc != SC_OK) return rc;
  {
    const char *known[SC_DTYPE_COUNT + 1];
    for (int d = 0; d < SC_DTYPE_COUNT; d++) known[d] = sc_dtype_name((sc_dtype)d);
    known[SC_DTYPE_COUNT] = NULL;
    if ((rc = sc__hw_check_keys(host, peak, "peak_flops_per_s.", known, err)) != SC_OK) return rc;
  }
  for (int d = 0; d < SC_DTYPE_COUNT; d++) {
    rc = gpu_number(host, peak, "peak_flops_per_s.", sc_dtype_name((sc_dtype)d), 0, &v, err);
    if (rc == SC_ENOTFOUND) continue; /* unsupported dtype: 0 */
    if (rc != SC_OK) return rc;
    if (!(v > 0)) {
      return sc_plugin_fail(err, SC_ESPEC,
                            "%s: key 'peak_flops_per_s.%s': must be > 0 (leave it out when the "
                            "device lacks the type), is %g",
                            host->table_where(peak, sc_dtype_name((sc_dtype)d)), sc_dtype_name((sc_dtype)d), v);
    }
    dev->peak_flops_per_s[d] = v;
    any = 1;
  }
  if (!any) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'peak_flops_per_s': names no data type",
                          host->table_where(peak, NULL));
  }

  rc = host->table_table(t, "tile", &tile, err);
  if (rc == SC_ENOTFOUND) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'tile': missing required table in [hardware]",
                          host->table_where(t, NULL));
  }
  if (rc != SC_OK) return rc;
  if ((rc = sc__hw_check_keys(host, tile, "tile.", gpu_tile_keys, err)) != SC_OK) return rc;
  if ((rc = gpu_count(host, tile, "tile.", "m", &dev->tile_m, err)) != SC_OK) return rc;
  if ((rc = gpu_count(host, tile, "tile.", "n", &dev->tile_n, err)) != SC_OK) return rc;
  if ((rc = gpu_count(host, tile, "tile.", "k", &dev->tile_k, err)) != SC_OK) return rc;
  return sc__hw_kernel_efficiencies(host, t, dev, err);
}

static const sc_hw_plugin gpu_plugin = {
  .hdr = SC_PLUGIN_HEADER(sc_hw_plugin, SC_PLUGIN_KIND_HARDWARE, "gpu", "1.0.0"),
  .describe = gpu_describe,
  .measure = NULL,
};

SC_PLUGIN_ENTRY(hardware_gpu) { return &gpu_plugin.hdr; }
