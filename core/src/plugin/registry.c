/*
 * The plugin registry: loading (dlopen or a static entry), validation and refusal,
 * priorities, lookups, host services and memoised estimates. See registry.h for the
 * contracts and docs/plugins.md for the rules a plugin author sees.
 *
 * Every plugin considered becomes a record, taken or not, so that `stepcast plugins` can
 * say why. A record owns copies of the plugin's strings: the listing stays valid even for
 * plugins that were unloaded after a refusal. Plugins that were once active (and so may
 * have handed out pointers or state) stay loaded until sc_registry_free.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/registry_int.h"
#include "spec/table.h"
#include "stepcast/stepcast.h"

typedef struct sc__rec {
  sc_plugin_kind kind;       /* 0 when refused before the header could be read */
  char *name, *version;      /* owned copies ("" when unknown) */
  uint16_t abi_major, abi_minor;
  int32_t priority;
  char *path;                /* as given, or "builtin:<id>" */
  char *real_path;           /* resolved file (NULL for static entries or missing files) */
  sc_plugin_status status;
  char *reason;              /* owned ("" when loaded) */
  const sc_plugin_header *hdr; /* NULL once unloaded (refused) */
  void *dl;                  /* dlopen handle, NULL for static entries */
  void *state;               /* from init */
  int inited;                /* init ran and succeeded: fini is due */
} sc__rec;

/* One takeover (sc_registry_override): record indices, so that recs may grow. */
typedef struct sc__override {
  size_t by, from;
  char *name;                /* family, algorithm or device kind (owned) */
} sc__override;

struct sc_registry {
  sc__rec *recs;
  size_t n, cap;
  sc__override *ovr;
  size_t novr, capovr;
  sc_host host;
  sc_log_fn log;
  void *log_ud;
  int verbose;
  sc__memo memo;
};

/* ------------------------------------------------------------------------- */
/* Host services                                                             */

/* The registry whose plugin is running on this thread: the host log service has no
 * registry argument (sc_host.log is a plain function), so each call into a plugin sets it. */
static _Thread_local sc_registry *sc__current_reg = NULL;
/* When a plugin is called directly, not through the registry (hardware describe() from the
 * spec loader), its messages go to the registry that set a log callback last. */
static sc_registry *_Atomic sc__log_fallback = NULL;

static void sc__host_log(sc_log_level level, const char *plugin, const char *fmt, ...) {
  sc_registry *reg = sc__current_reg != NULL ? sc__current_reg : atomic_load(&sc__log_fallback);
  char msg[1024];
  va_list ap;
  if (reg == NULL || reg->log == NULL || fmt == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  reg->log(level, plugin != NULL ? plugin : "plugin", msg, reg->log_ud);
}

/* Plugin allocations carry a header with their size so that the runtime can account for
 * the bytes live (sc__plugin_alloc_live_bytes). */
typedef union sc__alloc_hdr {
  size_t bytes;
  max_align_t align;
} sc__alloc_hdr;

static atomic_size_t sc__alloc_live = 0;

static void *sc__host_alloc(size_t bytes) {
  sc__alloc_hdr *h;
  if (bytes > SIZE_MAX - sizeof *h) return NULL;
  h = malloc(sizeof *h + bytes);
  if (h == NULL) return NULL;
  h->bytes = bytes;
  atomic_fetch_add(&sc__alloc_live, bytes);
  return h + 1;
}

static void sc__host_free(void *ptr) {
  sc__alloc_hdr *h;
  if (ptr == NULL) return;
  h = (sc__alloc_hdr *)ptr - 1;
  atomic_fetch_sub(&sc__alloc_live, h->bytes);
  free(h);
}

size_t sc__plugin_alloc_live_bytes(void) { return atomic_load(&sc__alloc_live); }

/* ------------------------------------------------------------------------- */
/* Small helpers                                                             */

static char *sc__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

static char *sc__strdup_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *sc__strdup_printf(const char *fmt, ...) {
  char buf[SC_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return sc__strdup(buf);
}

static const char *sc__kind_name(uint32_t kind) {
  switch (kind) {
  case SC_PLUGIN_KIND_OP: return "op";
  case SC_PLUGIN_KIND_COLLECTIVE: return "collective";
  case SC_PLUGIN_KIND_HARDWARE: return "hardware";
  default: return "?";
  }
}

void sc__registry_narrate(const sc_registry *reg, const char *fmt, ...) {
  char msg[SC_ERROR_MSG_MAX + 256];
  va_list ap;
  if (reg == NULL || !reg->verbose || reg->log == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  reg->log(SC_LOG_INFO, "plugins", msg, reg->log_ud);
}

void sc__registry_warn(const sc_registry *reg, const char *fmt, ...) {
  char msg[SC_ERROR_MSG_MAX + 256];
  va_list ap;
  if (reg == NULL || reg->log == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  reg->log(SC_LOG_WARN, "plugins", msg, reg->log_ud);
}

void sc__registry_set_verbose(sc_registry *reg, int on) {
  if (reg != NULL) reg->verbose = on;
}

static int sc__env_verbose(void) {
  const char *v = getenv("STEPCAST_PLUGINS_VERBOSE");
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* ------------------------------------------------------------------------- */
/* Life cycle                                                                */

int sc_registry_new(sc_registry **out, sc_error *err) {
  sc_registry *reg;
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_registry_new: out is NULL");
  *out = NULL;
  reg = calloc(1, sizeof *reg);
  if (reg == NULL) return sc_error_set(err, SC_ENOMEM, "plugin registry: out of memory");
  reg->host.size = (uint32_t)sizeof reg->host;
  reg->host.abi_major = SC_PLUGIN_ABI_MAJOR;
  reg->host.abi_minor = SC_PLUGIN_ABI_MINOR;
  reg->host.log = sc__host_log;
  reg->host.alloc = sc__host_alloc;
  reg->host.free = sc__host_free;
  reg->host.table_number = sc__table_number;
  reg->host.table_integer = sc__table_integer;
  reg->host.table_string = sc__table_string;
  reg->host.table_bool = sc__table_bool;
  reg->host.table_table = sc__table_table;
  reg->host.table_where = sc__table_where;
  reg->host.table_key = sc__table_key;
  reg->verbose = sc__env_verbose();
  *out = reg;
  return SC_OK;
}

static void sc__rec_release(sc_registry *reg, sc__rec *r) {
  if (r->inited && r->hdr != NULL && r->hdr->fini != NULL) {
    sc_registry *saved = sc__current_reg;
    sc__current_reg = reg;
    r->hdr->fini(r->state);
    sc__current_reg = saved;
  }
  r->inited = 0;
  r->state = NULL;
  r->hdr = NULL;
  if (r->dl != NULL) {
    dlclose(r->dl);
    r->dl = NULL;
  }
}

void sc_registry_free(sc_registry *reg) {
  sc_registry *expected = reg;
  if (reg == NULL) return;
  atomic_compare_exchange_strong(&sc__log_fallback, &expected, NULL);
  /* Finalise in reverse order of loading. */
  for (size_t i = reg->n; i-- > 0;) {
    sc__rec *r = &reg->recs[i];
    sc__rec_release(reg, r);
    free(r->name);
    free(r->version);
    free(r->path);
    free(r->real_path);
    free(r->reason);
  }
  free(reg->recs);
  for (size_t i = 0; i < reg->novr; i++) free(reg->ovr[i].name);
  free(reg->ovr);
  sc__memo_free(&reg->memo);
  free(reg);
}

void sc_registry_set_log(sc_registry *reg, sc_log_fn fn, void *ud) {
  if (reg == NULL) return;
  reg->log = fn;
  reg->log_ud = ud;
  if (fn != NULL) {
    atomic_store(&sc__log_fallback, reg);
  } else {
    sc_registry *expected = reg;
    atomic_compare_exchange_strong(&sc__log_fallback, &expected, NULL);
  }
}

/* ------------------------------------------------------------------------- */
/* Records                                                                   */

/* Append a record for path (strings empty). NULL when memory runs out. */
static sc__rec *sc__rec_new(sc_registry *reg, const char *path, const char *real_path) {
  sc__rec *r;
  if (reg->n == reg->cap) {
    size_t cap = reg->cap ? reg->cap * 2 : 16;
    sc__rec *recs = realloc(reg->recs, cap * sizeof *recs);
    if (recs == NULL) return NULL;
    reg->recs = recs;
    reg->cap = cap;
  }
  r = &reg->recs[reg->n];
  memset(r, 0, sizeof *r);
  r->path = sc__strdup(path);
  r->real_path = real_path != NULL ? sc__strdup(real_path) : NULL;
  r->name = sc__strdup("");
  r->version = sc__strdup("");
  r->reason = sc__strdup("");
  if (r->path == NULL || r->name == NULL || r->version == NULL || r->reason == NULL ||
      (real_path != NULL && r->real_path == NULL)) {
    free(r->path);
    free(r->real_path);
    free(r->name);
    free(r->version);
    free(r->reason);
    return NULL;
  }
  r->status = SC_PLUGIN_REFUSED;
  reg->n++;
  return r;
}

static int sc__rec_set_reason(sc__rec *r, char *reason) {
  if (reason == NULL) return SC_ENOMEM;
  free(r->reason);
  r->reason = reason;
  return SC_OK;
}

/* Refuse r: unload it, record the reason, narrate, and fill err with "PATH: reason". */
static int sc__refuse(sc_registry *reg, sc__rec *r, int code, sc_error *err, const char *fmt,
                      ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int sc__refuse(sc_registry *reg, sc__rec *r, int code, sc_error *err, const char *fmt,
                      ...) {
  char reason[SC_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  sc__rec_release(reg, r);
  r->status = SC_PLUGIN_REFUSED;
  if (sc__rec_set_reason(r, sc__strdup(reason)) != SC_OK) {
    return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
  }
  sc__registry_narrate(reg, "%s: refused: %s", r->path, reason);
  return sc_error_set(err, code, "%s: %s", r->path, reason);
}

/* ------------------------------------------------------------------------- */
/* Validation                                                                */

static int sc__check_features(sc_registry *reg, sc__rec *r, uint32_t nfeatures,
                              const char *const *names, sc_error *err) {
  if (nfeatures > SC_MAX_FEATURES) {
    return sc__refuse(reg, r, SC_EPLUGIN, err,
                      "nfeatures %u exceeds SC_MAX_FEATURES (%d)", (unsigned)nfeatures,
                      SC_MAX_FEATURES);
  }
  if (nfeatures > 0 && names == NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "feature_names is NULL with nfeatures %u",
                      (unsigned)nfeatures);
  }
  for (uint32_t i = 0; i < nfeatures; i++) {
    if (!sc__is_identifier(names[i])) {
      return sc__refuse(reg, r, SC_EPLUGIN, err,
                        "feature_names[%u] must be an identifier [A-Za-z0-9_.-]+",
                        (unsigned)i);
    }
  }
  return SC_OK;
}

/* Check the descriptor of r (r->hdr set). On refusal r is unloaded. */
static int sc__validate(sc_registry *reg, sc__rec *r, sc_error *err) {
  const sc_plugin_header *h = r->hdr;
  size_t min_size;
  /* abi_major is the first field in every ABI: read it before trusting anything else. */
  r->abi_major = h->abi_major;
  if (h->abi_major != SC_PLUGIN_ABI_MAJOR) {
    return sc__refuse(reg, r, SC_EABI, err,
                      "ABI major %u, this stepcast speaks ABI %d.%d (rebuild the plugin "
                      "against this stepcast's plugin.h)",
                      (unsigned)h->abi_major, SC_PLUGIN_ABI_MAJOR, SC_PLUGIN_ABI_MINOR);
  }
  r->abi_minor = h->abi_minor;
  /* The structures a plugin and the runtime hand each other (sc_device, which a hardware
   * plugin fills in the runtime's buffer; sc_op_desc, sc_coll_desc and sc_estimate) carry
   * no size: a plugin built against a newer minor, where they may have grown, would write
   * or read past the runtime's copies. Only the descriptor itself is sized. */
  if (h->abi_minor > SC_PLUGIN_ABI_MINOR) {
    return sc__refuse(reg, r, SC_EABI, err,
                      "ABI %u.%u is newer than this stepcast's ABI %d.%d: sc_device, "
                      "sc_op_desc, sc_coll_desc and sc_estimate carry no size, so a newer "
                      "plugin could write past them (rebuild the plugin against this "
                      "stepcast's plugin.h, or upgrade stepcast)",
                      (unsigned)h->abi_major, (unsigned)h->abi_minor, SC_PLUGIN_ABI_MAJOR,
                      SC_PLUGIN_ABI_MINOR);
  }
  if (h->size < sizeof(sc_plugin_header)) {
    return sc__refuse(reg, r, SC_EABI, err,
                      "descriptor size %u is smaller than the %zu-byte common header",
                      (unsigned)h->size, sizeof(sc_plugin_header));
  }
  r->kind = (sc_plugin_kind)h->kind;
  r->priority = h->priority;
  if (h->name != NULL) {
    char *name = sc__strdup(h->name);
    if (name == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    free(r->name);
    r->name = name;
  }
  if (h->version != NULL) {
    char *version = sc__strdup(h->version);
    if (version == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    free(r->version);
    r->version = version;
  }
  switch (h->kind) {
  case SC_PLUGIN_KIND_OP: min_size = SC_OP_PLUGIN_MIN_SIZE; break;
  case SC_PLUGIN_KIND_COLLECTIVE: min_size = SC_COLL_PLUGIN_MIN_SIZE; break;
  case SC_PLUGIN_KIND_HARDWARE: min_size = SC_HW_PLUGIN_MIN_SIZE; break;
  default:
    r->kind = 0;
    return sc__refuse(reg, r, SC_EPLUGIN, err,
                      "unknown kind %u (expected 1 = op, 2 = collective, 3 = hardware)",
                      (unsigned)h->kind);
  }
  if (h->size < min_size) {
    return sc__refuse(reg, r, SC_EABI, err,
                      "%s descriptor size %u is smaller than %zu, the size at ABI %d.0",
                      sc__kind_name(h->kind), (unsigned)h->size, min_size,
                      SC_PLUGIN_ABI_MAJOR);
  }
  if (h->flags != 0) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "flags 0x%x must be 0 (reserved)",
                      (unsigned)h->flags);
  }
  if (h->name == NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "name is NULL");
  }
  if (!sc__is_identifier(h->name)) {
    return sc__refuse(reg, r, SC_EPLUGIN, err,
                      "name '%s' is not a non-empty identifier [A-Za-z0-9_.-]+", h->name);
  }
  if (h->version == NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "version is NULL");
  }
  switch (h->kind) {
  case SC_PLUGIN_KIND_OP: {
    const sc_op_plugin *p = (const sc_op_plugin *)(const void *)h;
    if (p->estimate == NULL) {
      return sc__refuse(reg, r, SC_EPLUGIN, err, "op plugin has no estimate function");
    }
    const uint32_t scale = sc_op_scale_features(p); /* 0 for an ABI 1.0 descriptor */
    if (p->nfeatures < 32 && (scale >> p->nfeatures) != 0)
      return sc__refuse(reg, r, SC_EPLUGIN, err, "scale_features 0x%x marks features past "
                        "nfeatures %u", (unsigned)scale, (unsigned)p->nfeatures);
    return sc__check_features(reg, r, p->nfeatures, p->feature_names, err);
  }
  case SC_PLUGIN_KIND_COLLECTIVE: {
    const sc_coll_plugin *p = (const sc_coll_plugin *)(const void *)h;
    const uint32_t known = (1u << SC_COLL_COUNT) - 1u;
    if (p->estimate == NULL) {
      return sc__refuse(reg, r, SC_EPLUGIN, err,
                        "collective plugin has no estimate function");
    }
    if (!sc__is_identifier(p->algorithm)) {
      return sc__refuse(reg, r, SC_EPLUGIN, err,
                        "algorithm is not a non-empty identifier [A-Za-z0-9_.-]+");
    }
    if (p->kinds_mask == 0 || (p->kinds_mask & ~known) != 0) {
      return sc__refuse(reg, r, SC_EPLUGIN, err,
                        "kinds_mask 0x%x must be non-zero with bits below %d only",
                        (unsigned)p->kinds_mask, SC_COLL_COUNT);
    }
    return sc__check_features(reg, r, p->nfeatures, p->feature_names, err);
  }
  default: { /* SC_PLUGIN_KIND_HARDWARE */
    const sc_hw_plugin *p = (const sc_hw_plugin *)(const void *)h;
    if (p->describe == NULL) {
      return sc__refuse(reg, r, SC_EPLUGIN, err, "hardware plugin has no describe function");
    }
    return SC_OK;
  }
  }
}

/* ------------------------------------------------------------------------- */
/* Registration                                                              */

/* The active record of (kind, name), or NULL. */
static sc__rec *sc__active(const sc_registry *reg, uint32_t kind, const char *name) {
  for (size_t i = 0; i < reg->n; i++) {
    sc__rec *r = &reg->recs[i];
    if (r->status == SC_PLUGIN_LOADED && r->kind == kind && strcmp(r->name, name) == 0) {
      return r;
    }
  }
  return NULL;
}

static const char *sc__status_word(sc_plugin_status s) {
  return s == SC_PLUGIN_LOADED ? "loaded" : s == SC_PLUGIN_OVERRIDDEN ? "overridden"
                                                                      : "refused";
}

/* Record that recs[by] answers in place of recs[from] for name. */
static int sc__override_add(sc_registry *reg, size_t by, size_t from, const char *name) {
  char *copy;
  if (reg->novr == reg->capovr) {
    size_t cap = reg->capovr ? reg->capovr * 2 : 8;
    sc__override *o = realloc(reg->ovr, cap * sizeof *o);
    if (o == NULL) return SC_ENOMEM;
    reg->ovr = o;
    reg->capovr = cap;
  }
  copy = sc__strdup(name);
  if (copy == NULL) return SC_ENOMEM;
  reg->ovr[reg->novr].by = by;
  reg->ovr[reg->novr].from = from;
  reg->ovr[reg->novr].name = copy;
  reg->novr++;
  return SC_OK;
}

/* r has a valid descriptor: check for a duplicate descriptor, resolve priorities, run
 * init, and make it active (or overridden). */
static int sc__admit(sc_registry *reg, size_t ri, sc_error *err) {
  sc__rec *r = &reg->recs[ri];
  const sc_plugin_header *h = r->hdr;
  sc__rec *active;
  /* The same descriptor twice (the same file under another name, or a static entry added
   * twice) would share one state: refuse. */
  for (size_t i = 0; i < reg->n; i++) {
    if (i != ri && reg->recs[i].hdr == h) {
      return sc__refuse(reg, r, SC_EPLUGIN, err, "already loaded from %s",
                        reg->recs[i].path);
    }
  }
  /* One name, one priority: refuse the newcomer whatever the other's status. */
  for (size_t i = 0; i < reg->n; i++) {
    const sc__rec *o = &reg->recs[i];
    if (i != ri && o->status != SC_PLUGIN_REFUSED && o->kind == r->kind &&
        o->priority == r->priority && strcmp(o->name, r->name) == 0) {
      return sc__refuse(reg, r, SC_EPLUGIN, err,
                        "%s plugin name '%s' collides with %s at the same priority %d "
                        "(raise one priority to choose)",
                        sc__kind_name(r->kind), r->name, o->path, (int)r->priority);
    }
  }
  active = sc__active(reg, r->kind, r->name);
  if (active != NULL && active->priority > r->priority && r->kind != SC_PLUGIN_KIND_OP) {
    /* Valid but lower: never initialised, unloaded now. */
    char *why = sc__strdup_printf("overridden by %s (priority %d > %d)", active->path,
                                  (int)active->priority, (int)r->priority);
    if (sc__rec_set_reason(r, why) != SC_OK) {
      return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    }
    if (sc__override_add(reg, (size_t)(active - reg->recs), ri, r->name) != SC_OK) {
      return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    }
    sc__rec_release(reg, r);
    r->status = SC_PLUGIN_OVERRIDDEN;
    sc__registry_narrate(reg, "%s: %s plugin '%s' %s: %s", r->path, sc__kind_name(r->kind),
                         r->name, sc__status_word(r->status), r->reason);
    return SC_OK;
  }
  if (h->init != NULL) {
    sc_error ierr;
    sc_registry *saved = sc__current_reg;
    int rc;
    ierr.code = SC_OK;
    ierr.msg[0] = '\0';
    sc__current_reg = reg;
    rc = h->init(&reg->host, &r->state, &ierr);
    sc__current_reg = saved;
    if (rc != SC_OK) {
      r->state = NULL;
      return sc__refuse(reg, r, SC_EPLUGIN, err, "init failed (%s): %s", sc_err_name(rc),
                        ierr.msg[0] != '\0' ? ierr.msg : sc_strerror(rc));
    }
    r->inited = 1;
  }
  active = sc__active(reg, r->kind, r->name);
  if (active != NULL && active->priority > r->priority) {
    /* An operator family's lower plugin: initialised and kept loaded, overridden, to
     * answer the questions the active one declines (SC_EUNSUPPORTED). */
    char *why = sc__strdup_printf("overridden by %s (priority %d > %d)", active->path,
                                  (int)active->priority, (int)r->priority);
    if (sc__rec_set_reason(r, why) != SC_OK ||
        sc__override_add(reg, (size_t)(active - reg->recs), ri, r->name) != SC_OK) {
      return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    }
    r->status = SC_PLUGIN_OVERRIDDEN;
    sc__memo_clear(&reg->memo);
    sc__registry_narrate(reg, "%s: %s plugin '%s' %s: %s (kept for what it declines)",
                         r->path, sc__kind_name(r->kind), r->name, sc__status_word(r->status),
                         r->reason);
    return SC_OK;
  }
  if (active != NULL) {
    /* The newcomer has the higher priority: the old one stays loaded (pointers to it may
     * be held) but is no longer answered (an operator family's: only for what the
     * newcomer declines). */
    char *why = sc__strdup_printf("overridden by %s (priority %d > %d)", r->path,
                                  (int)r->priority, (int)active->priority);
    if (sc__rec_set_reason(active, why) != SC_OK ||
        sc__override_add(reg, ri, (size_t)(active - reg->recs), r->name) != SC_OK) {
      return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
    }
    active->status = SC_PLUGIN_OVERRIDDEN;
    sc__registry_narrate(reg, "%s: %s plugin '%s' now overridden by %s", active->path,
                         sc__kind_name(active->kind), active->name, r->path);
  }
  if (r->kind == SC_PLUGIN_KIND_COLLECTIVE) {
    /* Distinct names may offer one algorithm for one kind: sc_registry_coll answers with
     * the highest priority, the first loaded among equals. Each such pair is a takeover. */
    const sc_coll_plugin *rp = (const sc_coll_plugin *)(const void *)h;
    for (size_t i = 0; i < reg->n; i++) {
      const sc__rec *o = &reg->recs[i];
      const sc_coll_plugin *op;
      if (i == ri || o->status != SC_PLUGIN_LOADED || o->kind != SC_PLUGIN_KIND_COLLECTIVE) {
        continue;
      }
      op = (const sc_coll_plugin *)(const void *)o->hdr;
      if ((op->kinds_mask & rp->kinds_mask) == 0 || strcmp(op->algorithm, rp->algorithm) != 0) {
        continue;
      }
      if (sc__override_add(reg, r->priority > o->priority ? ri : i,
                           r->priority > o->priority ? i : ri, rp->algorithm) != SC_OK) {
        return sc_error_set(err, SC_ENOMEM, "%s: out of memory", r->path);
      }
    }
  }
  r->status = SC_PLUGIN_LOADED;
  /* Which plugin answers a question may have changed: forget memoised answers. */
  sc__memo_clear(&reg->memo);
  sc__registry_narrate(reg, "%s: loaded %s plugin '%s' %s (ABI %u.%u, priority %d)", r->path,
                       sc__kind_name(r->kind), r->name, r->version, (unsigned)r->abi_major,
                       (unsigned)r->abi_minor, (int)r->priority);
  return SC_OK;
}

/* Common tail of load_file and add_entry: r has hdr (possibly NULL) set. */
static int sc__register(sc_registry *reg, size_t ri, sc_error *err) {
  int rc;
  if (reg->recs[ri].hdr == NULL) {
    return sc__refuse(reg, &reg->recs[ri], SC_EPLUGIN, err,
                      "entry %s returned NULL (no descriptor)", SC_PLUGIN_ENTRY_SYMBOL);
  }
  rc = sc__validate(reg, &reg->recs[ri], err);
  if (rc != SC_OK) return rc;
  return sc__admit(reg, ri, err);
}

int sc__registry_has_file(const sc_registry *reg, const char *real_path, const char **by) {
  if (reg == NULL || real_path == NULL) return 0;
  for (size_t i = 0; i < reg->n; i++) {
    const sc__rec *r = &reg->recs[i];
    if (r->status != SC_PLUGIN_REFUSED && r->real_path != NULL &&
        strcmp(r->real_path, real_path) == 0) {
      if (by != NULL) *by = r->path;
      return 1;
    }
  }
  return 0;
}

int sc_registry_load_file(sc_registry *reg, const char *path, sc_error *err) {
  char real[PATH_MAX];
  const char *by = NULL;
  struct stat st;
  sc__rec *r;
  size_t ri;
  sc_plugin_entry_fn entry;
  void *sym;
  if (reg == NULL || path == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_registry_load_file: %s is NULL",
                        reg == NULL ? "reg" : "path");
  }
  sc__registry_narrate(reg, "%s: considering", path);
  if (stat(path, &st) != 0 || realpath(path, real) == NULL) {
    int e = errno;
    r = sc__rec_new(reg, path, NULL);
    if (r == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
    return sc__refuse(reg, r, SC_EPLUGIN, err, "cannot access: %s", strerror(e));
  }
  r = sc__rec_new(reg, path, real);
  if (r == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  ri = reg->n - 1;
  if (!S_ISREG(st.st_mode)) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "not a regular file");
  }
  for (size_t i = 0; i + 1 < reg->n; i++) {
    const sc__rec *o = &reg->recs[i];
    if (o->status != SC_PLUGIN_REFUSED && o->real_path != NULL &&
        strcmp(o->real_path, real) == 0) {
      by = o->path;
      break;
    }
  }
  if (by != NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "already loaded from %s", by);
  }
  dlerror();
  r->dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  if (r->dl == NULL) {
    const char *de = dlerror();
    return sc__refuse(reg, r, SC_EPLUGIN, err, "dlopen failed: %s",
                      de != NULL ? de : "unknown error");
  }
  dlerror();
  sym = dlsym(r->dl, SC_PLUGIN_ENTRY_SYMBOL);
  if (sym == NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err,
                      "no entry symbol '%s' (not a stepcast plugin, or built without "
                      "SC_PLUGIN_ENTRY)",
                      SC_PLUGIN_ENTRY_SYMBOL);
  }
  /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
  memcpy(&entry, &sym, sizeof entry);
  {
    sc_registry *saved = sc__current_reg;
    sc__current_reg = reg;
    r->hdr = entry();
    sc__current_reg = saved;
  }
  return sc__register(reg, ri, err);
}

int sc_registry_add_entry(sc_registry *reg, sc_plugin_entry_fn entry, const char *origin,
                          sc_error *err) {
  sc__rec *r;
  size_t ri;
  if (reg == NULL) return sc_error_set(err, SC_EINVAL, "sc_registry_add_entry: reg is NULL");
  if (origin == NULL) origin = "builtin:?";
  sc__registry_narrate(reg, "%s: considering (static entry)", origin);
  r = sc__rec_new(reg, origin, NULL);
  if (r == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", origin);
  ri = reg->n - 1;
  if (entry == NULL) {
    return sc__refuse(reg, r, SC_EPLUGIN, err, "entry function is NULL");
  }
  {
    sc_registry *saved = sc__current_reg;
    sc__current_reg = reg;
    r->hdr = entry();
    sc__current_reg = saved;
  }
  return sc__register(reg, ri, err);
}

/* ------------------------------------------------------------------------- */
/* Listing and lookups                                                       */

size_t sc_registry_count(const sc_registry *reg) { return reg != NULL ? reg->n : 0; }

int sc_registry_info(const sc_registry *reg, size_t i, sc_plugin_info *out) {
  const sc__rec *r;
  if (reg == NULL || out == NULL || i >= reg->n) return SC_EINVAL;
  r = &reg->recs[i];
  out->kind = r->kind;
  out->name = r->name;
  out->version = r->version;
  out->abi_major = r->abi_major;
  out->abi_minor = r->abi_minor;
  out->priority = r->priority;
  out->path = r->path;
  out->status = r->status;
  out->reason = r->reason;
  return SC_OK;
}

size_t sc_registry_override_count(const sc_registry *reg) {
  return reg != NULL ? reg->novr : 0;
}

int sc_registry_override(const sc_registry *reg, size_t i, sc_plugin_override *out) {
  const sc__rec *by, *from;
  if (reg == NULL || out == NULL || i >= reg->novr) return SC_EINVAL;
  by = &reg->recs[reg->ovr[i].by];
  from = &reg->recs[reg->ovr[i].from];
  out->kind = by->kind;
  out->name = reg->ovr[i].name;
  out->by_name = by->name;
  out->by_path = by->path;
  out->by_priority = by->priority;
  out->from_name = from->name;
  out->from_path = from->path;
  out->from_priority = from->priority;
  return SC_OK;
}

const sc_op_plugin *sc_registry_op(const sc_registry *reg, const char *family) {
  const sc__rec *r;
  if (reg == NULL || family == NULL) return NULL;
  r = sc__active(reg, SC_PLUGIN_KIND_OP, family);
  return r != NULL ? (const sc_op_plugin *)(const void *)r->hdr : NULL;
}

const sc_hw_plugin *sc_registry_hw(const sc_registry *reg, const char *device_kind) {
  const sc__rec *r;
  if (reg == NULL || device_kind == NULL) return NULL;
  r = sc__active(reg, SC_PLUGIN_KIND_HARDWARE, device_kind);
  return r != NULL ? (const sc_hw_plugin *)(const void *)r->hdr : NULL;
}

size_t sc_registry_colls(const sc_registry *reg, sc_coll_kind kind,
                         const sc_coll_plugin **out, size_t cap) {
  size_t n = 0;
  if (reg == NULL || (unsigned)kind >= SC_COLL_COUNT) return 0;
  for (size_t i = 0; i < reg->n && n < cap; i++) {
    const sc__rec *r = &reg->recs[i];
    if (r->status == SC_PLUGIN_LOADED && r->kind == SC_PLUGIN_KIND_COLLECTIVE) {
      const sc_coll_plugin *p = (const sc_coll_plugin *)(const void *)r->hdr;
      if (p->kinds_mask & (1u << kind)) {
        if (out != NULL) out[n] = p;
        n++;
      }
    }
  }
  return n;
}

const sc_coll_plugin *sc_registry_coll(const sc_registry *reg, sc_coll_kind kind,
                                       const char *algorithm) {
  const sc_coll_plugin *best = NULL;
  int32_t best_prio = 0;
  if (reg == NULL || algorithm == NULL || (unsigned)kind >= SC_COLL_COUNT) return NULL;
  /* Distinct names may offer one algorithm for one kind: the highest priority answers,
   * the first loaded among equals. */
  for (size_t i = 0; i < reg->n; i++) {
    const sc__rec *r = &reg->recs[i];
    if (r->status == SC_PLUGIN_LOADED && r->kind == SC_PLUGIN_KIND_COLLECTIVE) {
      const sc_coll_plugin *p = (const sc_coll_plugin *)(const void *)r->hdr;
      if ((p->kinds_mask & (1u << kind)) && strcmp(p->algorithm, algorithm) == 0 &&
          (best == NULL || r->priority > best_prio)) {
        best = p;
        best_prio = r->priority;
      }
    }
  }
  return best;
}

static const sc__rec *sc__rec_of(const sc_registry *reg, const sc_plugin_header *plugin) {
  if (reg == NULL || plugin == NULL) return NULL;
  for (size_t i = 0; i < reg->n; i++) {
    if (reg->recs[i].hdr == plugin) return &reg->recs[i];
  }
  return NULL;
}

void *sc_registry_state(const sc_registry *reg, const sc_plugin_header *plugin) {
  const sc__rec *r = sc__rec_of(reg, plugin);
  return r != NULL ? r->state : NULL;
}

const sc_host *sc_registry_host(const sc_registry *reg) {
  return reg != NULL ? &reg->host : NULL;
}

/* ------------------------------------------------------------------------- */
/* Estimates                                                                 */

/* After a plugin's estimate: the result must be usable by the core. */
/* Every time a plugin returns is checked here, the one place plugin results come back:
 * finite, not negative, and at most SC_MAX_OP_TIME_S (one operator or collective taking
 * more than a million seconds, 11.6 days, is a plugin's error, and would overflow the
 * reports' sums and plots downstream). what names the operator or collective. */
#define SC_MAX_OP_TIME_S 1e6
static int sc__check_estimate(const char *who, const char *what, const sc_estimate *out,
                              sc_error *err) {
  if (out->nfeatures > SC_MAX_FEATURES) {
    return sc_error_set(err, SC_EPLUGIN,
                        "plugin '%s' returned nfeatures %u > SC_MAX_FEATURES (%d)", who,
                        (unsigned)out->nfeatures, SC_MAX_FEATURES);
  }
  if (!isfinite(out->time_s) || out->time_s < 0.0 || out->time_s > SC_MAX_OP_TIME_S) {
    return sc_error_set(err, SC_EPLUGIN, "plugin '%s' returned time_s %g for %s (a time must "
                        "be finite, >= 0 and at most %g s for one operator)", who, out->time_s,
                        what, SC_MAX_OP_TIME_S);
  }
  return SC_OK;
}

/* The plugin an operator family's record r overrides: the loaded (overridden, still
 * initialised) one of the same family with the highest priority below r's; NULL if none. */
static const sc__rec *sc__op_fallback(const sc_registry *reg, const sc__rec *r) {
  const sc__rec *best = NULL;
  for (size_t i = 0; i < reg->n; i++) {
    const sc__rec *o = &reg->recs[i];
    if (o->status == SC_PLUGIN_OVERRIDDEN && o->hdr != NULL && o->kind == SC_PLUGIN_KIND_OP &&
        o->priority < r->priority && strcmp(o->name, r->name) == 0 &&
        (best == NULL || o->priority > best->priority)) {
      best = o;
    }
  }
  return best;
}

int sc_registry_estimate_op(sc_registry *reg, const sc_device *dev, const sc_op_desc *op,
                            sc_estimate *out, sc_error *err) {
  unsigned char key[SC__MEMO_KEY_MAX];
  size_t klen;
  uint64_t hash = 0;
  const sc__rec *r;
  const sc_op_plugin *p;
  sc_registry *saved;
  int rc;
  if (reg == NULL || dev == NULL || op == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_registry_estimate_op: %s is NULL",
                        reg == NULL ? "reg" : dev == NULL ? "dev" : op == NULL ? "op" : "out");
  }
  if (op->family == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_registry_estimate_op: op->family is NULL");
  }
  if (op->ndims > SC_OP_MAX_DIMS) {
    return sc_error_set(err, SC_EINVAL, "%s: ndims %u exceeds SC_OP_MAX_DIMS (%d)",
                        op->family, (unsigned)op->ndims, SC_OP_MAX_DIMS);
  }
  klen = sc__memo_key_op(key, sizeof key, dev, op);
  if (klen > 0) {
    hash = sc__memo_hash(key, klen);
    if (sc__memo_find(&reg->memo, key, klen, hash, out)) return SC_OK;
  } else {
    reg->memo.lookups++;
  }
  r = sc__active(reg, SC_PLUGIN_KIND_OP, op->family);
  if (r == NULL) {
    return sc_error_set(err, SC_ENOTFOUND, "no plugin for operator family '%s'", op->family);
  }
  for (;;) {
    const sc__rec *next;
    p = (const sc_op_plugin *)(const void *)r->hdr;
    memset(out, 0, sizeof *out);
    out->bound_tier = -1;
    saved = sc__current_reg;
    sc__current_reg = reg;
    rc = p->estimate(r->state, dev, op, out, err);
    sc__current_reg = saved;
    /* Declined: ask the plugin it overrides, if any. */
    if (rc != SC_EUNSUPPORTED || (next = sc__op_fallback(reg, r)) == NULL) break;
    sc__registry_narrate(reg, "op plugin '%s' at %s declined variant %u (%s): asking %s",
                         r->name, r->path, (unsigned)op->variant,
                         err != NULL ? err->msg : "", next->path);
    r = next;
  }
  if (rc != SC_OK) {
    if (err != NULL && (err->code != rc || err->msg[0] == '\0')) {
      sc_error_set(err, rc, "op plugin '%s' failed on family '%s': %s", r->name, op->family,
                   sc_strerror(rc));
    }
    return rc;
  }
  {
    char what[160];
    int n = snprintf(what, sizeof what, "operator %s variant %u dims ", op->family,
                     (unsigned)op->variant);
    for (uint32_t i = 0; i < op->ndims && n > 0 && (size_t)n < sizeof what; i++)
      n += snprintf(what + n, sizeof what - (size_t)n, "%s%lld", i ? "x" : "",
                    (long long)op->dims[i]);
    rc = sc__check_estimate(r->name, what, out, err);
  }
  if (rc != SC_OK) return rc;
  if (klen > 0) sc__memo_insert(&reg->memo, key, klen, hash, out);
  return SC_OK;
}

int sc_registry_estimate_coll(sc_registry *reg, const sc_coll_plugin *algo,
                              const sc_coll_desc *coll, sc_estimate *out, sc_error *err) {
  unsigned char key[SC__MEMO_KEY_MAX];
  size_t klen;
  uint64_t hash = 0;
  const sc__rec *r;
  sc_registry *saved;
  int rc;
  if (reg == NULL || algo == NULL || coll == NULL || out == NULL) {
    return sc_error_set(err, SC_EINVAL, "sc_registry_estimate_coll: %s is NULL",
                        reg == NULL ? "reg" : algo == NULL ? "algo" : coll == NULL ? "coll"
                                                                                   : "out");
  }
  if ((unsigned)coll->kind >= SC_COLL_COUNT) {
    return sc_error_set(err, SC_EINVAL, "collective kind %d is unknown", (int)coll->kind);
  }
  if (coll->ntiers > SC_MAX_TIERS) {
    return sc_error_set(err, SC_EINVAL, "collective: ntiers %u exceeds SC_MAX_TIERS (%d)",
                        (unsigned)coll->ntiers, SC_MAX_TIERS);
  }
  klen = sc__memo_key_coll(key, sizeof key, algo, coll);
  if (klen > 0) {
    hash = sc__memo_hash(key, klen);
    if (sc__memo_find(&reg->memo, key, klen, hash, out)) return SC_OK;
  } else {
    reg->memo.lookups++;
  }
  r = sc__rec_of(reg, &algo->hdr);
  if (r == NULL || r->status != SC_PLUGIN_LOADED) {
    return sc_error_set(err, SC_ENOTFOUND, "collective plugin '%s' is not active in this "
                        "registry", r != NULL ? r->name : "?");
  }
  if (!(algo->kinds_mask & (1u << coll->kind))) {
    return sc_error_set(err, SC_EUNSUPPORTED,
                        "collective plugin '%s' (algorithm '%s') does not answer kind %d",
                        r->name, algo->algorithm, (int)coll->kind);
  }
  memset(out, 0, sizeof *out);
  out->bound_tier = -1;
  saved = sc__current_reg;
  sc__current_reg = reg;
  rc = algo->estimate(r->state, coll, out, err);
  sc__current_reg = saved;
  if (rc != SC_OK) {
    if (err != NULL && (err->code != rc || err->msg[0] == '\0')) {
      sc_error_set(err, rc, "collective plugin '%s' failed: %s", r->name, sc_strerror(rc));
    }
    return rc;
  }
  {
    char what[96];
    snprintf(what, sizeof what, "collective kind %d of %.0f bytes", (int)coll->kind,
             coll->bytes);
    rc = sc__check_estimate(r->name, what, out, err);
  }
  if (rc != SC_OK) return rc;
  if (klen > 0) sc__memo_insert(&reg->memo, key, klen, hash, out);
  return SC_OK;
}

void sc_registry_memo_stats(const sc_registry *reg, uint64_t *hits, uint64_t *lookups) {
  if (hits != NULL) *hits = reg != NULL ? reg->memo.hits : 0;
  if (lookups != NULL) *lookups = reg != NULL ? reg->memo.lookups : 0;
}

void sc_registry_memo_clear(sc_registry *reg) {
  if (reg != NULL) sc__memo_clear(&reg->memo);
}
