/*
 * What every layer of libstepcast uses (core/src/common/error.c): the library's version, the
 * names and messages of the status codes of SC_ERRNO_MAP (plugin.h), the setters of an
 * sc_error, and comma-separated name lists. Includes plugin.h alone, so that the lowest layers
 * (docs/architecture.md, "Layers") need not include the umbrella stepcast.h.
 */
#ifndef STEPCAST_COMMON_H
#define STEPCAST_COMMON_H

#include <stdarg.h>

#include "stepcast/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the library, "MAJOR.MINOR.PATCH". Never NULL. */
const char *sc_version(void);

/* Name of a status code ("SC_EPARSE") and its message ("parse error"); never NULL, unknown
 * codes give "SC_EUNKNOWN" / "unknown error". */
const char *sc_err_name(int code);
const char *sc_strerror(int code);

/* Set err (if not NULL) to code and a printf-formatted message, truncated to
 * SC_ERROR_MSG_MAX - 1 bytes. Returns code, so that callers can write
 * `return sc_error_set(err, SC_ESPEC, "%s:%u:%u: key '%s': ...", ...);`. */
int sc_error_set(sc_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int sc_error_setv(sc_error *err, int code, const char *fmt, va_list ap);

/* Clear err to SC_OK with an empty message. NULL is a no-op. */
void sc_error_clear(sc_error *err);

/* 1 when name is one of the comma-separated items of list, 0 otherwise; always 1 when list
 * is NULL (an option such as --families left out means every name). */
int sc_name_in_list(const char *list, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* STEPCAST_COMMON_H */
