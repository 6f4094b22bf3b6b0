/*
 * The plugin registry: loads plugins (dlopen or static entries), refuses bad ones with a
 * reason, answers "which plugin estimates this operator family / collective kind and
 * algorithm / device kind", and memoises estimates by the description's signature.
 *
 * Threads: a registry serves one thread at a time (estimates update its memo without a
 * lock); a threaded sweep gives each thread its own registry (dlopen of a file already
 * loaded is cheap). Pointers returned by lookups and by sc_registry_info stay valid until
 * sc_registry_free: a plugin overridden later stays loaded, it is only no longer answered.
 * Plugins' host log calls reach the log callback of the registry that called into them.
 */
#ifndef STEPCAST_REGISTRY_H
#define STEPCAST_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_registry sc_registry;

typedef enum {
  SC_PLUGIN_LOADED = 0,   /* taken and active */
  SC_PLUGIN_OVERRIDDEN,   /* valid, but a plugin of the same kind and name with a higher
                             priority is active */
  SC_PLUGIN_REFUSED       /* refused: see reason */
} sc_plugin_status;

/* One row of `stepcast plugins`. Strings are owned by the registry. */
typedef struct sc_plugin_info {
  sc_plugin_kind kind;    /* 0 when refused before the header could be read */
  const char *name;       /* "" when unknown */
  const char *version;    /* "" when unknown */
  uint16_t abi_major, abi_minor;
  int32_t priority;
  const char *path;       /* file, or "builtin:<id>" for a static entry */
  sc_plugin_status status;
  const char *reason;     /* why refused or overridden ("" when loaded) */
} sc_plugin_info;

/* A new, empty registry. SC_ENOMEM on failure. */
int sc_registry_new(sc_registry **out, sc_error *err);

/* Run every active plugin's fini and unload. NULL is a no-op. */
void sc_registry_free(sc_registry *reg);

/* dlopen one plugin file and register it. A refusal is recorded in the listing and
 * returned (SC_EPLUGIN / SC_EABI with err->msg "FILE: reason"); the registry stays usable. */
int sc_registry_load_file(sc_registry *reg, const char *path, sc_error *err);

/* Register a plugin from an entry function linked into the program; origin names it in
 * the listing ("builtin:ops_gemm"). Same checks and refusals as load_file. */
int sc_registry_add_entry(sc_registry *reg, sc_plugin_entry_fn entry, const char *origin,
                          sc_error *err);

/* Register every built-in plugin linked statically into the program (the table
 * sc__builtin_plugins[] generated from plugins/builtins.c.in; defined in the
 * stepcast_builtins library, which the caller must link). Each goes through
 * sc_registry_add_entry with origin "builtin:<dir>_<stem>". Every entry is tried; returns
 * SC_OK, or the status of the first refusal (with its message in err) after trying all. */
int sc_registry_add_builtins(sc_registry *reg, sc_error *err);

/* Discover plugins in order: each folder of STEPCAST_PLUGIN_PATH (colon list), then the
 * build tree's plugin folder (when the program runs from the build tree) or the
 * installation's, then each file of extra_files (--plugin). Refusals do not stop discovery
 * (they are in the listing); returns SC_OK unless memory runs out or a file named in
 * extra_files cannot be loaded (then SC_EPLUGIN naming it). STEPCAST_PLUGINS_VERBOSE=1
 * narrates every file considered through the log callback. */
int sc_registry_discover(sc_registry *reg, const char *const *extra_files, size_t nextra,
                         sc_error *err);

/* Where messages go (default: none). Used for STEPCAST_PLUGINS_VERBOSE narration and the
 * host log service. */
typedef void (*sc_log_fn)(sc_log_level level, const char *who, const char *msg, void *ud);
void sc_registry_set_log(sc_registry *reg, sc_log_fn fn, void *ud);

/* The listing. */
size_t sc_registry_count(const sc_registry *reg);
int sc_registry_info(const sc_registry *reg, size_t i, sc_plugin_info *out);

/* A takeover: plugin "by" answers in place of plugin "from" for one operator family, one
 * collective algorithm (distinct collective plugins offering one algorithm for a common
 * kind: the higher priority answers, the first loaded among equals) or one device kind.
 * An overridden operator plugin is still asked for what the one above it declines
 * (SC_EUNSUPPORTED). Strings are owned by the registry. The CLI prints each as a warning. */
typedef struct sc_plugin_override {
  sc_plugin_kind kind;
  const char *name;       /* the family, the algorithm or the device kind taken over */
  const char *by_name, *by_path;
  int32_t by_priority;
  const char *from_name, *from_path;
  int32_t from_priority;
} sc_plugin_override;

/* The takeovers so far, in the order they happened; i < sc_registry_override_count.
 * sc_registry_override returns SC_OK, or SC_EINVAL for a NULL argument or i out of range. */
size_t sc_registry_override_count(const sc_registry *reg);
int sc_registry_override(const sc_registry *reg, size_t i, sc_plugin_override *out);

/* Lookups of the active plugin; NULL when none. */
const sc_op_plugin *sc_registry_op(const sc_registry *reg, const char *family);
const sc_coll_plugin *sc_registry_coll(const sc_registry *reg, sc_coll_kind kind,
                                       const char *algorithm);
const sc_hw_plugin *sc_registry_hw(const sc_registry *reg, const char *device_kind);
/* Every active collective plugin answering kind (for algorithm "auto"); returns how many
 * were written to out (at most cap). */
size_t sc_registry_colls(const sc_registry *reg, sc_coll_kind kind,
                         const sc_coll_plugin **out, size_t cap);
/* The state init() gave a plugin (NULL when it has no init). */
void *sc_registry_state(const sc_registry *reg, const sc_plugin_header *plugin);

/* The host services handed to plugins by this registry. */
const sc_host *sc_registry_host(const sc_registry *reg);

/* Estimate through the active plugin, memoised by (device name, op signature) or
 * (collective signature, algorithm): a repeated question costs a hash lookup.
 * SC_ENOTFOUND with "no plugin for operator family 'x'" when none answers. */
int sc_registry_estimate_op(sc_registry *reg, const sc_device *dev, const sc_op_desc *op,
                            sc_estimate *out, sc_error *err);
int sc_registry_estimate_coll(sc_registry *reg, const sc_coll_plugin *algo,
                              const sc_coll_desc *coll, sc_estimate *out, sc_error *err);

/* Memo statistics (for benchmarks): lookups answered from the memo and total lookups.
 * Either pointer may be NULL. */
void sc_registry_memo_stats(const sc_registry *reg, uint64_t *hits, uint64_t *lookups);

/* Forget every memoised estimate (statistics are kept). The memo identifies a device by
 * its name: a caller that changes a device's numbers but keeps its name calls this first.
 * Loading a plugin that changes which plugin is active clears the memo by itself. */
void sc_registry_memo_clear(sc_registry *reg);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_REGISTRY_H */
