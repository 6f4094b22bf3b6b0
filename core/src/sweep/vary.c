/*
 * Co-design variants: "--vary FIELD=V1,V2,..." on a device (sc_device) or a network tier
 * (sc_tier), each value a multiplier of the loaded figure ("1.5x") or an absolute number.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/stepcast.h"
#include "stepcast/sweep.h"

/* Each field with the range the spec loaders give it (plugin.h's SC_RANGE_*, docs/formats.md):
 * far wider than any device or network, narrow enough that an exponent typo is refused. */
typedef struct vfield {
  const char *name;
  size_t offset;
  double lo, hi;
  const char *unit;
} vfield;

static const vfield hw_fields[] = {
    {"mem_bytes", offsetof(sc_device, mem_bytes), SC_RANGE_BYTES_MIN, SC_RANGE_BYTES_MAX, " bytes"},
    {"mem_bw_Bps", offsetof(sc_device, mem_bw_Bps), SC_RANGE_BPS_MIN, SC_RANGE_BPS_MAX, " B/s"},
    {"l2_bytes", offsetof(sc_device, l2_bytes), 0, SC_RANGE_BYTES_MAX, " bytes"},
    {"flops_efficiency", offsetof(sc_device, flops_efficiency), SC_RANGE_EFFICIENCY_MIN, 1, ""},
    {"mem_efficiency", offsetof(sc_device, mem_efficiency), SC_RANGE_EFFICIENCY_MIN, 1, ""},
    {"launch_s", offsetof(sc_device, launch_s), 0, SC_RANGE_SECONDS_MAX, " s"},
    {"attention_fwd_efficiency", offsetof(sc_device, attention_fwd_efficiency), SC_RANGE_EFFICIENCY_MIN, 1, ""},
    {"attention_bwd_efficiency", offsetof(sc_device, attention_bwd_efficiency), SC_RANGE_EFFICIENCY_MIN, 1, ""},
    {"peak_flops_per_s", offsetof(sc_device, peak_flops_per_s), SC_RANGE_FLOPS_MIN, SC_RANGE_FLOPS_MAX, " FLOP/s"},
    /* a CPU's (docs/formats.md): the cache rate, the in-place rate, the vector kernels' */
    {"cache_bw_Bps", offsetof(sc_device, cache_bw_Bps), SC_RANGE_BPS_MIN, SC_RANGE_BPS_MAX, " B/s"},
    {"rmw_bw_Bps", offsetof(sc_device, rmw_bw_Bps), SC_RANGE_BPS_MIN, SC_RANGE_BPS_MAX, " B/s"},
    {"vector_flops_per_s", offsetof(sc_device, vector_flops_per_s), SC_RANGE_FLOPS_MIN, SC_RANGE_FLOPS_MAX, " FLOP/s"},
};

static const vfield tier_fields[] = {
    {"bw_Bps", offsetof(sc_tier, bw_Bps), SC_RANGE_BPS_MIN, SC_RANGE_BPS_MAX, " B/s"},
    {"latency_s", offsetof(sc_tier, latency_s), 0, SC_RANGE_SECONDS_MAX, " s"},
    {"oversubscription", offsetof(sc_tier, oversubscription), 1, 1e6, ""},
    {"efficiency", offsetof(sc_tier, efficiency), SC_RANGE_EFFICIENCY_MIN, 1, ""},
};

static const vfield *find_field(const vfield *f, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(f[i].name) == len && strncmp(f[i].name, name, len) == 0) return &f[i];
  return NULL;
}

static void list_fields(const vfield *f, size_t n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", f[i].name);
}

static int parse_value(const char *field, const char *txt, size_t len, double *v, int *mult,
                       sc_error *err) {
  char buf[64];
  char *end = NULL;
  if (len == 0 || len >= sizeof buf)
    return sc_error_set(err, SC_EINVAL, "--vary %s: empty or too long value", field);
  memcpy(buf, txt, len);
  buf[len] = '\0';
  *mult = 0;
  if (buf[len - 1] == 'x' || buf[len - 1] == 'X') {
    *mult = 1;
    buf[len - 1] = '\0';
  }
  errno = 0;
  double d = strtod(buf, &end);
  if (buf[0] == '\0' || end == buf || *end != '\0' || errno != 0 || !isfinite(d))
    return sc_error_set(err, SC_EINVAL,
                        "--vary %s: '%.*s' is not a number or a multiplier like 1.5x", field,
                        (int)len, txt);
  if (*mult && !(d > 0))
    return sc_error_set(err, SC_EINVAL, "--vary %s: multiplier '%.*s' must be > 0", field,
                        (int)len, txt);
  if (!*mult && d < 0)
    return sc_error_set(err, SC_EINVAL, "--vary %s: value '%.*s' must be >= 0", field,
                        (int)len, txt);
  *v = d;
  return SC_OK;
}

int sc_vary_parse(const char *spec, sc_vary *out, sc_error *err) {
  char names[160];
  if (spec == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "--vary: NULL argument");
  memset(out, 0, sizeof *out);
  out->dtype = -1;
  const char *eq = strchr(spec, '=');
  if (eq == NULL || eq == spec)
    return sc_error_set(err, SC_EINVAL, "--vary '%s': expected FIELD=V1,V2,... (e.g. "
                        "hardware.mem_bw_Bps=1x,2x)", spec);
  size_t flen = (size_t)(eq - spec);
  if (flen >= sizeof out->field)
    return sc_error_set(err, SC_EINVAL, "--vary: field name too long");
  memcpy(out->field, spec, flen);
  out->field[flen] = '\0';
  const char *f = out->field;
  if (strncmp(f, "hardware.", 9) == 0) {
    const char *name = f + 9;
    size_t nlen = strlen(name);
    const char *br = strchr(name, '[');
    if (br != NULL) {
      const char *close = strchr(br, ']');
      if (close == NULL || close[1] != '\0' ||
          strncmp(name, "peak_flops_per_s[", 17) != 0)
        return sc_error_set(err, SC_EINVAL, "--vary: unknown field '%s'", f);
      char dt[16];
      size_t dl = (size_t)(close - br - 1);
      if (dl == 0 || dl >= sizeof dt)
        return sc_error_set(err, SC_EINVAL, "--vary: unknown field '%s'", f);
      memcpy(dt, br + 1, dl);
      dt[dl] = '\0';
      sc_dtype d;
      if (sc_dtype_parse(dt, &d) != SC_OK)
        return sc_error_set(err, SC_EINVAL, "--vary %s: '%s' is not a dtype", f, dt);
      out->dtype = (int)d;
      nlen = (size_t)(br - name);
    }
    const vfield *vf = find_field(hw_fields, sizeof hw_fields / sizeof hw_fields[0], name, nlen);
    if (vf == NULL) {
      list_fields(hw_fields, sizeof hw_fields / sizeof hw_fields[0], names, sizeof names);
      return sc_error_set(err, SC_EINVAL, "--vary: unknown field '%s' (hardware fields: %s)", f,
                          names);
    }
    out->target = 0;
    out->offset = vf->offset;
  } else if (strncmp(f, "topology.tier[", 14) == 0) {
    const char *p = f + 14;
    char *end = NULL;
    if (*p < '0' || *p > '9')
      return sc_error_set(err, SC_EINVAL, "--vary %s: tier index must be a non-negative integer",
                          f);
    errno = 0;
    unsigned long ti = strtoul(p, &end, 10);
    if (errno != 0 || end == NULL || end[0] != ']' || end[1] != '.' || ti > 1000)
      return sc_error_set(err, SC_EINVAL, "--vary %s: expected topology.tier[I].FIELD", f);
    const char *name = end + 2;
    const vfield *vf =
        find_field(tier_fields, sizeof tier_fields / sizeof tier_fields[0], name, strlen(name));
    if (vf == NULL) {
      list_fields(tier_fields, sizeof tier_fields / sizeof tier_fields[0], names, sizeof names);
      return sc_error_set(err, SC_EINVAL, "--vary: unknown field '%s' (tier fields: %s)", f,
                          names);
    }
    out->target = 1;
    out->tier = (int)ti;
    out->offset = vf->offset;
  } else {
    return sc_error_set(err, SC_EINVAL,
                        "--vary: unknown field '%s' (hardware.<field> or topology.tier[I].<field>)",
                        f);
  }
  const char *v = eq + 1;
  for (;;) {
    const char *comma = strchr(v, ',');
    size_t len = comma ? (size_t)(comma - v) : strlen(v);
    if (out->nvalues >= SC_VARY_MAX_VALUES)
      return sc_error_set(err, SC_EINVAL, "--vary %s: more than %d values", f, SC_VARY_MAX_VALUES);
    int rc = parse_value(f, v, len, &out->value[out->nvalues], &out->multiplier[out->nvalues], err);
    if (rc != SC_OK) return rc;
    if (len >= sizeof out->text[0])
      return sc_error_set(err, SC_EINVAL, "--vary %s: value '%.*s' is longer than %zu characters",
                          f, (int)len, v, sizeof out->text[0] - 1);
    memcpy(out->text[out->nvalues], v, len);
    out->text[out->nvalues][len] = '\0';
    out->nvalues++;
    if (comma == NULL) break;
    v = comma + 1;
  }
  return SC_OK;
}

static const vfield *field_of(const sc_vary *v) {
  const vfield *f = v->target == 0 ? hw_fields : tier_fields;
  size_t n = v->target == 0 ? sizeof hw_fields / sizeof hw_fields[0]
                            : sizeof tier_fields / sizeof tier_fields[0];
  for (size_t i = 0; i < n; i++)
    if (f[i].offset == v->offset) return &f[i];
  return NULL;
}

static int check_value(const sc_vary *v, const vfield *f, double x, sc_error *err) {
  if (!(x >= f->lo && x <= f->hi))
    return sc_error_set(err, SC_ESPEC, "--vary %s: %g%s is outside [%g, %g]", v->field, x,
                        f->unit, f->lo, f->hi);
  return SC_OK;
}

int sc_vary_apply(const sc_vary *v, uint32_t i, sc_device *dev, sc_topology *t, sc_error *err) {
  if (v == NULL || dev == NULL || t == NULL)
    return sc_error_set(err, SC_EINVAL, "--vary: NULL argument");
  if (i >= v->nvalues)
    return sc_error_set(err, SC_ERANGE, "--vary %s: value %u out of range", v->field, i);
  const vfield *f = field_of(v);
  if (f == NULL) return sc_error_set(err, SC_EINVAL, "--vary %s: not parsed", v->field);
  double x = v->value[i];
  int mult = v->multiplier[i];
  if (v->target == 0) {
    if (v->offset == offsetof(sc_device, peak_flops_per_s)) {
      for (int d = 0; d < SC_DTYPE_COUNT; d++) {
        if (v->dtype >= 0 && d != v->dtype) continue;
        double *p = &dev->peak_flops_per_s[d];
        if (v->dtype < 0 && *p == 0) continue; /* unsupported stays unsupported */
        double nv = mult ? *p * x : x;
        int rc = check_value(v, f, nv, err);
        if (rc != SC_OK) return rc;
        *p = nv;
      }
      return SC_OK;
    }
    double *p = (double *)((char *)dev + v->offset);
    double old = *p;
    int attn = v->offset == offsetof(sc_device, attention_fwd_efficiency) ||
               v->offset == offsetof(sc_device, attention_bwd_efficiency);
    if (attn && old == 0) old = sc_device_matmul_efficiency(dev, SC_DTYPE_BF16); /* not stated */
    if (mult && old == 0)
      return sc_error_set(err, SC_ESPEC, "--vary %s: %s of a figure '%s' does not state (0); "
                          "give an absolute value", v->field, v->text[i], dev->name);
    double nv = mult ? old * x : x;
    int rc = check_value(v, f, nv, err);
    if (rc != SC_OK) return rc;
    if (v->offset == offsetof(sc_device, flops_efficiency)) {
      /* The per-dtype matmul and the attention efficiencies follow: a multiplier scales the
       * stated ones, an absolute value replaces the per-dtype matmul figures. */
      double *also[SC_DTYPE_COUNT + 2];
      size_t n = 0;
      for (int d = 0; d < SC_DTYPE_COUNT; d++) also[n++] = &dev->matmul_efficiency[d];
      also[n++] = &dev->attention_fwd_efficiency;
      also[n++] = &dev->attention_bwd_efficiency;
      for (size_t k = 0; k < n; k++) {
        if (*also[k] == 0) continue;
        if (!mult) {
          if (k < SC_DTYPE_COUNT) *also[k] = 0;
          continue;
        }
        double sv = *also[k] * x;
        if ((rc = check_value(v, f, sv, err)) != SC_OK) return rc;
        *also[k] = sv;
      }
    }
    *p = nv;
    return SC_OK;
  }
  if (v->tier < 0 || (uint32_t)v->tier >= t->ntiers)
    return sc_error_set(err, SC_ERANGE, "--vary %s: topology '%s' has tiers 0 to %u", v->field,
                        t->name, t->ntiers ? t->ntiers - 1 : 0);
  sc_tier *tr = &t->tiers[v->tier];
  double *p = (double *)((char *)tr + v->offset);
  double old = *p;
  if (v->offset == offsetof(sc_tier, efficiency) && old == 0) old = 1.0; /* 0 = not stated */
  double nv = mult ? old * x : x;
  int rc = check_value(v, f, nv, err);
  if (rc != SC_OK) return rc;
  *p = nv;
  return sc_comm_check_topology(t, err);
}
