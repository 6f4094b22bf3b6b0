/*
 * Typed lookups in a TOML table with file:line:col messages. These are the host services
 * sc_host.table_* that plugins call, and the spec loaders use them too.
 *
 * An sc_table (opaque in the SDK) is a const sc_toml_value of type SC_TOML_TABLE; its
 * u.tab.file names the document for messages.
 */
#ifndef SC_SPEC_TABLE_H
#define SC_SPEC_TABLE_H

#include <stdint.h>

#include "stepcast/plugin.h"
#include "toml/toml.h"

/* key may be dotted ("peak.bf16"). Each returns SC_OK; SC_ENOTFOUND when the key is absent
 * (err untouched); SC_ESPEC when the value has the wrong type, with err->msg
 * "file:line:col: key 'peak.bf16': expected a number, found a string".
 * table_number accepts integers and floats; table_integer only integers. */
int sc__table_number(const sc_table *t, const char *key, double *out, sc_error *err);
int sc__table_integer(const sc_table *t, const char *key, int64_t *out, sc_error *err);
int sc__table_string(const sc_table *t, const char *key, const char **out, sc_error *err);
int sc__table_bool(const sc_table *t, const char *key, int *out, sc_error *err);
int sc__table_table(const sc_table *t, const char *key, const sc_table **out, sc_error *err);

/* The i-th key of table t in document order (i from 0): SC_OK with *key borrowed from the
 * document, SC_ENOTFOUND when i is past the last key, SC_EINVAL when t is not a table.
 * Lets a reader reject unknown keys. */
int sc__table_key(const sc_table *t, size_t i, const char **key);

/* "file:line:col" of key (or of the table itself when key is NULL or absent), in a
 * thread-local buffer valid until the next call. */
const char *sc__table_where(const sc_table *t, const char *key);

/* The table view of a TOML value (NULL unless it is a table) and back. */
static inline const sc_table *sc__table_of(const sc_toml_value *v) {
  return (v != NULL && v->type == SC_TOML_TABLE) ? (const sc_table *)(const void *)v : NULL;
}
static inline const sc_toml_value *sc__table_value(const sc_table *t) {
  return (const sc_toml_value *)(const void *)t;
}

#endif
