/* Status codes and error messages. */
#include <stdio.h>
#include <string.h>

#include "sc_config.h"
#include "stepcast/common.h"

const char *sc_version(void) { return SC_VERSION_STRING; }

const char *sc_err_name(int code) {
  switch (code) {
  case SC_OK: return "SC_OK";
#define SC__ERR_NAME(name, val, msg) case SC_##name: return "SC_" #name;
    SC_ERRNO_MAP(SC__ERR_NAME)
#undef SC__ERR_NAME
  default: return "SC_EUNKNOWN";
  }
}

const char *sc_strerror(int code) {
  switch (code) {
  case SC_OK: return "success";
#define SC__ERR_MSG(name, val, msg) case SC_##name: return msg;
    SC_ERRNO_MAP(SC__ERR_MSG)
#undef SC__ERR_MSG
  default: return "unknown error";
  }
}

int sc_error_setv(sc_error *err, int code, const char *fmt, va_list ap) {
  if (err != NULL) {
    err->code = code;
    if (fmt != NULL) {
      vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    } else {
      snprintf(err->msg, sizeof err->msg, "%s", sc_strerror(code));
    }
  }
  return code;
}

int sc_error_set(sc_error *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sc_error_setv(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void sc_error_clear(sc_error *err) {
  if (err != NULL) {
    err->code = SC_OK;
    err->msg[0] = '\0';
  }
}

int sc_name_in_list(const char *list, const char *name) {
  const size_t n = strlen(name);
  if (list == NULL) return 1;
  for (const char *p = list;; p++) {
    const size_t k = strcspn(p, ",");
    if (k == n && strncmp(p, name, n) == 0) return 1;
    p += k;
    if (*p == '\0') return 0;
  }
}
