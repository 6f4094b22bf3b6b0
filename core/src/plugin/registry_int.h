/*
 * Internals of the plugin registry (core/src/plugin/): the record of each plugin, the
 * estimate memo and the discovery helpers. Not part of the public API; tests reach it.
 */
#ifndef SC_PLUGIN_REGISTRY_INT_H
#define SC_PLUGIN_REGISTRY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/ident.h"
#include "stepcast/registry.h"

/* ------------------------------------------------------------------------- */
/* Estimate memo: an open-addressing hash table (linear probing, power-of-two slots, grown
 * at 3/4 load) from a serialised description (the key bytes) to an sc_estimate. Keys are
 * compared byte for byte after the 64-bit hash matches, so a hash collision is never a hit.
 * When SC__MEMO_MAX_ENTRIES entries are held the memo is emptied and refilled (a sweep over
 * ever new shapes must not grow without bound). */

#define SC__MEMO_MAX_ENTRIES (1u << 18) /* about 60 MB of entries and keys at most */
/* Longest key memoised; longer descriptions are estimated without the memo. */
#define SC__MEMO_KEY_MAX 512

typedef struct sc__memo_slot {
  uint32_t tag;   /* high 32 bits of the hash (fast reject) */
  uint32_t idx;   /* entry index + 1; 0 = empty */
} sc__memo_slot;

typedef struct sc__memo_entry {
  uint64_t hash;
  uint64_t key_off;  /* into keys */
  uint32_t key_len;
  sc_estimate est;
} sc__memo_entry;

typedef struct sc__memo {
  sc__memo_slot *slots;
  size_t nslots;           /* power of two, or 0 before the first insert */
  sc__memo_entry *entries;
  size_t n, cap;
  unsigned char *keys;
  size_t keys_len, keys_cap;
  uint64_t hits, lookups;
  uint64_t flushes;        /* times the memo was emptied because it was full */
} sc__memo;

/* 64-bit hash of len bytes (word at a time, multiply-xorshift mixing). */
uint64_t sc__memo_hash(const void *key, size_t len);

/* Look key up; on a hit copy the estimate to *out and return 1, else 0. Counts lookups and
 * hits. */
int sc__memo_find(sc__memo *m, const void *key, size_t len, uint64_t hash, sc_estimate *out);

/* Insert key -> est (the key must not be present). Returns SC_OK or SC_ENOMEM (the memo is
 * then left as it was: memoisation is an optimisation, callers ignore the failure). */
int sc__memo_insert(sc__memo *m, const void *key, size_t len, uint64_t hash,
                    const sc_estimate *est);

/* Forget every entry (statistics are kept). */
void sc__memo_clear(sc__memo *m);
void sc__memo_free(sc__memo *m);

/* Serialise an operator question / a collective question into buf (cap bytes). Returns
 * the key length, or 0 when it does not fit (then no memo is used). */
size_t sc__memo_key_op(unsigned char *buf, size_t cap, const sc_device *dev,
                       const sc_op_desc *op);
size_t sc__memo_key_coll(unsigned char *buf, size_t cap, const sc_coll_plugin *algo,
                         const sc_coll_desc *coll);

/* ------------------------------------------------------------------------- */
/* Discovery */

/* Narrate through the registry's log callback when STEPCAST_PLUGINS_VERBOSE=1 was set
 * when the registry was made (or sc__registry_set_verbose turned it on). */
void sc__registry_narrate(const sc_registry *reg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sc__registry_set_verbose(sc_registry *reg, int on);

/* A warning through the registry's log callback (SC_LOG_WARN, always, verbose or not). */
void sc__registry_warn(const sc_registry *reg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* 1 when a plugin whose file resolves to real_path is already taken (loaded or
 * overridden) in reg; *by then names its path. */
int sc__registry_has_file(const sc_registry *reg, const char *real_path, const char **by);

/* The default plugin folder for this program: the build tree's (SC_PLUGIN_BUILD_DIR) when
 * the program's own directory lies inside the build tree, else <prefix>/
 * SC_PLUGIN_INSTALL_SUBDIR with prefix derived from /proc/self/exe (<prefix>/bin/prog) or,
 * failing that, from where libstepcast itself was loaded. Writes the folder to out and a
 * short account of how it was chosen to why. Returns SC_OK, or SC_ENOTFOUND when no
 * folder could be derived (out is then ""). */
int sc__plugin_default_dir(char *out, size_t out_size, char *why, size_t why_size);

/* Discovery with explicit inputs (sc_registry_discover calls it with getenv and the
 * default folder): each element of path_list (colon list, may be NULL; empty elements are
 * skipped), then default_dir (may be NULL), then extra files. */
int sc__registry_discover_in(sc_registry *reg, const char *path_list, const char *default_dir,
                             const char *const *extra_files, size_t nextra, sc_error *err);

/* Bytes currently allocated by plugins through sc_host.alloc (all registries). */
size_t sc__plugin_alloc_live_bytes(void);

#endif /* SC_PLUGIN_REGISTRY_INT_H */
