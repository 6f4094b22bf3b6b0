/*
 * A CSV reader (RFC 4180): a header row naming the columns, then data rows with the same
 * number of fields. Quoted fields may hold commas, doubled quotes ("") and line breaks;
 * records end with LF or CRLF. Used by `stepcast validate` for tables of measured runs.
 */
#ifndef STEPCAST_CSV_H
#define STEPCAST_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_csv sc_csv;

/* Parse len bytes of text; path is only used in messages ("file:line: ..."). Blank lines
 * (nothing at all between two line ends) are skipped. The text is copied: the caller keeps
 * ownership of it. On success *out is a table to free with sc_csv_free. Errors:
 *   SC_EPARSE  an unterminated quoted field (names the line it opened on), a quote
 *              inside an unquoted field or text after a closing quote (line and column
 *              name), a row whose number of fields differs from the header's (line, the
 *              counts), a header that is empty or names a column twice;
 *   SC_ENOMEM  allocation failed. */
int sc_csv_parse(const char *path, const char *text, size_t len, sc_csv **out, sc_error *err);

/* Read the file at path and parse it as above; SC_EIO when it cannot be read. */
int sc_csv_load(const char *path, sc_csv **out, sc_error *err);

void sc_csv_free(sc_csv *c);

/* Data rows (the header not counted) and columns. */
size_t sc_csv_nrows(const sc_csv *c);
size_t sc_csv_ncols(const sc_csv *c);
/* The file name given to the parser. */
const char *sc_csv_path(const sc_csv *c);
/* Name of column col (borrowed; lives as long as c). */
const char *sc_csv_colname(const sc_csv *c, size_t col);
/* Index of the column whose header is name (exact match after trimming spaces), or -1. */
int sc_csv_column(const sc_csv *c, const char *name);
/* Find every name of names[0..n-1]: idx[i] = its column. SC_ESPEC naming the file and the
 * first missing column otherwise. */
int sc_csv_require(const sc_csv *c, const char *const *names, size_t n, int *idx,
                   sc_error *err);
/* The unquoted text of field (row, col), NUL-terminated, borrowed ("" for an empty
 * field; NULL when row or col is out of range). */
const char *sc_csv_field(const sc_csv *c, size_t row, size_t col);
/* The 1-based line of the file on which data row `row` starts. */
uint32_t sc_csv_line(const sc_csv *c, size_t row);

/* Numeric fields. An empty field (or only spaces) sets *known = 0 and returns SC_OK; a
 * field that is not a number of the kind asked for (or out of range) gives SC_EPARSE with
 * "file:line: column 'name': 'text' is not ...". */
int sc_csv_u32(const sc_csv *c, size_t row, size_t col, uint32_t *out, int *known,
               sc_error *err);
int sc_csv_i64(const sc_csv *c, size_t row, size_t col, int64_t *out, int *known,
               sc_error *err);
int sc_csv_double(const sc_csv *c, size_t row, size_t col, double *out, int *known,
                  sc_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_CSV_H */
