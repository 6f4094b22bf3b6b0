/* The install prefix of libstepcast from its own location (common/prefix.h). */
#define _GNU_SOURCE 1 /* dladdr */
#include "common/prefix.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sc_config.h"

int sc__lib_prefix(char *out, size_t cap) {
  Dl_info info;
  char dir[4096];
  const char *sub = SC_LIB_INSTALL_SUBDIR;
  size_t sl = strlen(sub), dl;
  char *slash;
  if (cap == 0 || sl == 0 || sub[0] == '/') return 0; /* an absolute libdir: no prefix */
  if (dladdr((void *)(uintptr_t)&sc__lib_prefix, &info) == 0 || info.dli_fname == NULL ||
      info.dli_fname[0] != '/')
    return 0;
  if (snprintf(dir, sizeof dir, "%s", info.dli_fname) >= (int)sizeof dir) return 0;
  if ((slash = strrchr(dir, '/')) == NULL) return 0;
  *slash = '\0'; /* the library's folder: must end with "/<libdir>" */
  dl = strlen(dir);
  if (dl < sl + 1 || dir[dl - sl - 1] != '/' || strcmp(dir + dl - sl, sub) != 0) return 0;
  dir[dl - sl - 1] = '\0';
  return snprintf(out, cap, "%s", dir[0] ? dir : "/") < (int)cap;
}
