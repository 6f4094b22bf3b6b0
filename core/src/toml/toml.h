/*
 * TOML 1.0.0 parser (internal to libstepcast).
 *
 * The document is a tree of sc_toml_value nodes; every key and every value carries the
 * 1-based line and column where it starts, so that spec errors can name "file:line:col".
 * All memory of a document belongs to it and is released by sc__toml_free().
 */
#ifndef SC_TOML_H
#define SC_TOML_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/plugin.h" /* sc_error, status codes */

/* Tables and arrays nest at most this deep (stack-overflow guard); deeper input is
 * rejected with SC_ELIMIT. */
#define SC_TOML_MAX_DEPTH 128

typedef enum {
  SC_TOML_TABLE = 0,
  SC_TOML_ARRAY,
  SC_TOML_STRING,
  SC_TOML_INTEGER,
  SC_TOML_FLOAT,
  SC_TOML_BOOL,
  SC_TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00Z */
  SC_TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
  SC_TOML_DATE_LOCAL,     /* 1979-05-27 */
  SC_TOML_TIME_LOCAL      /* 07:32:00 */
} sc_toml_type;

typedef struct sc_toml_datetime {
  int year, month, day;       /* valid for DATETIME, DATETIME_LOCAL, DATE_LOCAL */
  int hour, minute, second;   /* valid for DATETIME, DATETIME_LOCAL, TIME_LOCAL */
  int32_t nanosecond;         /* fractional seconds, truncated to ns */
  int frac_digits;            /* digits written after the '.' (0 = none), for printing */
  int offset_minutes;         /* DATETIME only: offset from UTC; 0 for 'Z' */
  int offset_is_z;            /* DATETIME only: written as 'Z' (or 'z') */
} sc_toml_datetime;

typedef struct sc_toml_value sc_toml_value;

/* One key of a table. */
typedef struct sc_toml_kv {
  char *key;                  /* NUL-terminated; may contain no NUL (TOML keys cannot) */
  size_t key_len;
  uint32_t line, col;         /* where the (last segment of the) key was written */
  sc_toml_value *value;
} sc_toml_kv;

struct sc_toml_value {
  sc_toml_type type;
  uint32_t line, col;         /* where the value (or the [table] header) starts */
  union {
    struct { char *ptr; size_t len; } str;             /* STRING: UTF-8, NUL-terminated,
                                                          len excludes it; may embed NUL */
    int64_t integer;                                    /* INTEGER */
    double flt;                                         /* FLOAT (inf and nan included) */
    int boolean;                                        /* BOOL: 0 or 1 */
    sc_toml_datetime dt;                                /* the four date/time types */
    struct { sc_toml_value **items; size_t len; } arr;  /* ARRAY */
    struct { sc_toml_kv *items; size_t len;             /* TABLE, in document order; */
             const char *file; } tab;                   /* file = the document's filename */
  } u;
};

typedef struct sc_toml_doc {
  char *filename;             /* as given to the parser (for messages) */
  sc_toml_value *root;        /* a TABLE */
} sc_toml_doc;

/* Parse len bytes of text (need not be NUL-terminated). filename is used in messages only
 * and may be NULL ("<input>"). On success *out owns a new document (free with
 * sc__toml_free) and SC_OK is returned. On failure returns SC_EPARSE (or SC_ELIMIT for
 * nesting, SC_ENOMEM) and err->msg reads "file:line:col: what was expected". */
int sc__toml_parse(const char *text, size_t len, const char *filename, sc_toml_doc **out,
                   sc_error *err);

/* Read and parse a file. SC_EIO with "path: strerror" when it cannot be read. */
int sc__toml_parse_file(const char *path, sc_toml_doc **out, sc_error *err);

/* Free a document and everything in it. NULL is a no-op. */
void sc__toml_free(sc_toml_doc *doc);

/* Look up one key (no dot splitting) in a TABLE value; NULL when absent or tab is not a
 * table. */
const sc_toml_kv *sc__toml_find(const sc_toml_value *tab, const char *key);
const sc_toml_value *sc__toml_get(const sc_toml_value *tab, const char *key);

/* Look up a dotted path ("peak.bf16") through nested tables; NULL when any part is
 * absent. Keys containing dots cannot be reached this way (use sc__toml_get). */
const sc_toml_value *sc__toml_get_path(const sc_toml_value *tab, const char *path);

/* The name of a type as toml-test writes it ("string", "integer", "datetime-local", ...,
 * and "table"/"array"). */
const char *sc__toml_type_name(sc_toml_type t);

/* Encode v (normally doc->root) as toml-test's "tagged JSON": tables become objects,
 * arrays become arrays, and every scalar becomes {"type": T, "value": "text"} with T as
 * sc__toml_type_name() writes it. Floats are written with the fewest digits (up to 17) that
 * read back to the same double, and as "inf", "-inf", "nan"; date/times in RFC 3339 form
 * with 'T', 'Z' and the fractional digits as written (at most 9). On success *out is a new
 * NUL-terminated string owned by the caller (free()) and *len (if not NULL) its length.
 * Returns SC_OK, SC_EINVAL (NULL argument) or SC_ENOMEM. */
int sc__toml_to_json(const sc_toml_value *v, char **out, size_t *len);

#endif /* SC_TOML_H */
