/*
 * Fixture plugins for tests/plugin/test_plugin.c: one source, one variant per compile
 * definition FIX_<VARIANT> (see tests/plugin/CMakeLists.txt). Good variants are small but
 * real estimators whose numbers the suite derives by hand; bad variants each break exactly
 * one rule of the loader.
 */
#include <stdint.h>
#include <string.h>

#include "stepcast/plugin.h"

/* ------------------------------------------------------------------------- */
/* An operator family "fix.scale": a GEMM-like roofline.
 *   dims = {m, n, k}; flops = 2 m n k; bytes = (m k + k n + m n) * 2;
 *   time_s = SCALE * max(flops / (peak[dtype] * flops_eff), bytes / (mem_bw * mem_eff))
 *            + launch_s
 * SCALE is 1 for the base plugin and 2 for the high-priority override, so the suite can
 * tell which one answered. The state counts calls (the memo tests read it through
 * sc_registry_state). */
#if defined(FIX_GOOD_OP) || defined(FIX_BAD_NAME) || defined(FIX_NO_ESTIMATE) ||          \
    defined(FIX_MANY_FEATURES) || defined(FIX_ABI_MAJOR) || defined(FIX_SMALL) ||           \
    defined(FIX_FLAGS) || defined(FIX_INIT_FAIL) || defined(FIX_BAD_KIND) ||                \
    defined(FIX_NULL_VERSION) || defined(FIX_UNDEFINED) || defined(FIX_NO_ENTRY)
#define FIX_OP_VARIANT 1
#endif

#if defined(FIX_OP_VARIANT)
#ifndef FIX_SCALE
#define FIX_SCALE 1.0
#endif
#ifndef FIX_PRIORITY
#define FIX_PRIORITY 0
#endif
#ifndef FIX_VERSION
#define FIX_VERSION "1.0.0"
#endif
#ifndef FIX_NAME
#define FIX_NAME "fix.scale"
#endif

typedef struct fix_state {
  uint64_t calls;
  const sc_host *host;
} fix_state;

static int fix_init(const sc_host *host, void **state, sc_error *err) {
  fix_state *s;
  if (host == NULL || host->size < sizeof(sc_host) || host->alloc == NULL) {
    return sc_plugin_fail(err, SC_EINVAL, "fix: host services missing");
  }
  s = host->alloc(sizeof *s);
  if (s == NULL) return sc_plugin_fail(err, SC_ENOMEM, "fix: out of memory");
  memset(s, 0, sizeof *s);
  s->host = host;
  host->log(SC_LOG_INFO, FIX_NAME, "init (version %s)", FIX_VERSION);
  *state = s;
  return SC_OK;
}

static void fix_fini(void *state) {
  fix_state *s = state;
  if (s != NULL) s->host->free(s);
}

static int fix_op_estimate(void *state, const sc_device *dev, const sc_op_desc *op,
                           sc_estimate *out, sc_error *err) {
  fix_state *s = state;
  double flops, bytes, tc, tm, peak;
  if (s != NULL) s->calls++;
  if (op->ndims != 3) return sc_plugin_fail(err, SC_EINVAL, "fix.scale: ndims must be 3");
  for (uint32_t i = 0; i < 3; i++) {
    if (op->dims[i] <= 0) {
      return sc_plugin_fail(err, SC_EINVAL, "fix.scale: dims[%u] must be > 0", (unsigned)i);
    }
  }
  peak = dev->peak_flops_per_s[op->dtype] * dev->flops_efficiency;
  if (!(peak > 0)) {
    return sc_plugin_fail(err, SC_EUNSUPPORTED, "fix.scale: dtype %d unsupported on %s",
                          (int)op->dtype, dev->name);
  }
  flops = 2.0 * (double)op->dims[0] * (double)op->dims[1] * (double)op->dims[2];
  bytes = 2.0 * ((double)op->dims[0] * (double)op->dims[2] +
                 (double)op->dims[2] * (double)op->dims[1] +
                 (double)op->dims[0] * (double)op->dims[1]);
  tc = flops / peak;
  tm = bytes / (dev->mem_bw_Bps * dev->mem_efficiency);
  out->flops = flops;
  out->bytes = bytes;
  out->bound = tc >= tm ? SC_BOUND_COMPUTE : SC_BOUND_MEMORY;
  out->time_s = FIX_SCALE * (tc >= tm ? tc : tm) + dev->launch_s;
  out->nfeatures = 2;
  out->features[0] = flops;
  out->features[1] = bytes;
  return SC_OK;
}

static const char *const fix_op_features[] = {"flops", "bytes"};


#if defined(FIX_INIT_FAIL)
static int fix_init_fail(const sc_host *host, void **state, sc_error *err) {
  (void)host;
  (void)state;
  return sc_plugin_fail(err, SC_ESPEC, "fixture.toml:3:1: key 'peak': must be > 0");
}
#endif

static const sc_op_plugin fix_op = {
    .hdr = SC_PLUGIN_HEADER_FULL(sc_op_plugin, SC_PLUGIN_KIND_OP, FIX_NAME, FIX_VERSION,
                                 FIX_PRIORITY, fix_init, fix_fini),
    .nfeatures = 2,
    .feature_names = fix_op_features,
    .estimate = fix_op_estimate,
};

#if defined(FIX_UNDEFINED)
/* Defined nowhere: dlopen(RTLD_NOW) must fail and say so. */
extern int sc_fixture_not_defined(void);
#endif

#if defined(FIX_NO_ENTRY)
/* Exports a plausible but wrong name only. */
SC_PLUGIN_VISIBLE const sc_plugin_header *sc_plugin_entry_v0(void);
SC_PLUGIN_VISIBLE const sc_plugin_header *sc_plugin_entry_v0(void) { return &fix_op.hdr; }
#else
/* The descriptor handed out: a copy of fix_op with one rule broken per bad variant. */
static sc_op_plugin fix_desc;

SC_PLUGIN_ENTRY(fixture) {
  fix_desc = fix_op;
#if defined(FIX_BAD_NAME)
  fix_desc.hdr.name = "bad name!";
#elif defined(FIX_NO_ESTIMATE)
  fix_desc.estimate = NULL;
#elif defined(FIX_MANY_FEATURES)
  fix_desc.nfeatures = SC_MAX_FEATURES + 1;
#elif defined(FIX_ABI_MAJOR)
  fix_desc.hdr.abi_major = SC_PLUGIN_ABI_MAJOR + 1;
#elif defined(FIX_SMALL)
  /* What a plugin built against an imagined older, shorter op payload would claim. */
  fix_desc.hdr.size = (uint32_t)(sizeof(sc_plugin_header) + sizeof(uint32_t));
#elif defined(FIX_FLAGS)
  fix_desc.hdr.flags = 0x4;
#elif defined(FIX_INIT_FAIL)
  fix_desc.hdr.init = fix_init_fail;
  fix_desc.hdr.fini = NULL;
#elif defined(FIX_BAD_KIND)
  fix_desc.hdr.kind = 9;
#elif defined(FIX_NULL_VERSION)
  fix_desc.hdr.version = NULL;
#elif defined(FIX_UNDEFINED)
  if (sc_fixture_not_defined() == 42) fix_desc.hdr.priority = 1;
#endif
  return &fix_desc.hdr;
}
#endif
#endif /* FIX_OP_VARIANT */

#if defined(FIX_NULL_ENTRY)
SC_PLUGIN_ENTRY(fixture) { return NULL; }
#endif

/* ------------------------------------------------------------------------- */
/* A collective algorithm "fix.allreduce.flat" answering all-reduce and all-gather:
 *   time_s = sum over crossed tiers (ranks > 1) of latency_s
 *            + bytes / min over crossed tiers of bw_Bps */
#if defined(FIX_COLL) || defined(FIX_COLL_BAD_MASK)
static int fix_coll_estimate(void *state, const sc_coll_desc *coll, sc_estimate *out,
                             sc_error *err) {
  double lat = 0, bw = 0;
  (void)state;
  for (uint32_t t = 0; t < coll->ntiers; t++) {
    if (coll->tiers[t].ranks > 1) {
      lat += coll->tiers[t].latency_s;
      if (bw == 0 || coll->tiers[t].bw_Bps < bw) bw = coll->tiers[t].bw_Bps;
    }
  }
  if (coll->nranks < 2 || bw <= 0) {
    return sc_plugin_fail(err, SC_EINVAL, "fix.allreduce.flat: no tier crossed");
  }
  out->time_s = lat + coll->bytes / bw;
  out->bytes = coll->bytes;
  out->bound = SC_BOUND_BANDWIDTH;
  out->busbw_Bps = coll->bytes / out->time_s;
  out->nfeatures = 0;
  return SC_OK;
}

static const sc_coll_plugin fix_coll = {
    .hdr = SC_PLUGIN_HEADER(sc_coll_plugin, SC_PLUGIN_KIND_COLLECTIVE, "fix.allreduce.flat",
                            "1.0.0"),
    .algorithm = "flat",
#if defined(FIX_COLL_BAD_MASK)
    .kinds_mask = 1u << 30,
#else
    .kinds_mask = (1u << SC_COLL_ALLREDUCE) | (1u << SC_COLL_ALLGATHER),
#endif
    .nfeatures = 0,
    .feature_names = NULL,
    .estimate = fix_coll_estimate,
};

SC_PLUGIN_ENTRY(fixture) { return &fix_coll.hdr; }
#endif

/* ------------------------------------------------------------------------- */
/* A hardware kind "fix.gpu": reads its table through the host services.
 *   name (string), peak_bf16_tflops (number), memory.bytes (integer), memory.bw_GBps
 *   (number); every other field fixed. */
#if defined(FIX_HW_NEWER)
/* "fix.gpu.next": built against the next minor ABI, whose sc_device has grown by a field;
 * describe() writes it, past the end of this runtime's sc_device. The loader must refuse
 * the plugin before describe() can be called. */
typedef struct fix_device_next {
  sc_device dev;
  double appended_at_next_minor;
} fix_device_next;

static int fix_hw_next_describe(void *state, const sc_host *host, const sc_table *t,
                                sc_device *dev, sc_error *err) {
  (void)state;
  (void)host;
  (void)t;
  (void)err;
  ((fix_device_next *)(void *)dev)->appended_at_next_minor = 1.0;
  return SC_OK;
}

static const sc_hw_plugin fix_hw_next = {
    .hdr = {.abi_major = SC_PLUGIN_ABI_MAJOR, .abi_minor = SC_PLUGIN_ABI_MINOR + 1,
            .size = (uint32_t)sizeof(sc_hw_plugin), .kind = SC_PLUGIN_KIND_HARDWARE,
            .name = "fix.gpu.next", .version = "0.1.0"},
    .describe = fix_hw_next_describe,
};

SC_PLUGIN_ENTRY(fixture) { return &fix_hw_next.hdr; }
#endif

#if defined(FIX_HW)
static int fix_hw_describe(void *state, const sc_host *host, const sc_table *t,
                           sc_device *dev, sc_error *err) {
  const char *name = NULL;
  double tflops = 0, bw_GBps = 0;
  int64_t mem = 0;
  int rc;
  (void)state;
  memset(dev, 0, sizeof *dev);
  if ((rc = host->table_string(t, "name", &name, err)) != SC_OK ||
      (rc = host->table_number(t, "peak_bf16_tflops", &tflops, err)) != SC_OK ||
      (rc = host->table_integer(t, "memory.bytes", &mem, err)) != SC_OK ||
      (rc = host->table_number(t, "memory.bw_GBps", &bw_GBps, err)) != SC_OK) {
    if (rc == SC_ENOTFOUND) {
      return sc_plugin_fail(err, SC_ESPEC, "%s: fix.gpu: a required key is missing",
                            host->table_where(t, NULL));
    }
    return rc;
  }
  if (!(tflops > 0)) {
    return sc_plugin_fail(err, SC_ESPEC, "%s: key 'peak_bf16_tflops': must be > 0",
                          host->table_where(t, "peak_bf16_tflops"));
  }
  strncpy(dev->name, name, sizeof dev->name - 1);
  host->log(SC_LOG_DEBUG, "fix.gpu", "described '%s' at %s", name, host->table_where(t, NULL));
  strcpy(dev->kind, "fix.gpu");
  dev->peak_flops_per_s[SC_DTYPE_BF16] = tflops * 1e12;
  dev->mem_bytes = (double)mem;
  dev->mem_bw_Bps = bw_GBps * 1e9;
  dev->flops_efficiency = 1.0;
  dev->mem_efficiency = 1.0;
  return SC_OK;
}

static const sc_hw_plugin fix_hw = {
    .hdr = SC_PLUGIN_HEADER(sc_hw_plugin, SC_PLUGIN_KIND_HARDWARE, "fix.gpu", "0.1.0"),
    .describe = fix_hw_describe,
    .measure = NULL,
};

SC_PLUGIN_ENTRY(fixture) { return &fix_hw.hdr; }
#endif
