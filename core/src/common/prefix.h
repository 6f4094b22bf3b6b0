/* Where the libstepcast this code runs in is installed: for a program anywhere (a user's C
 * program, the Python package) that links the installed library, the data (models,
 * hardware, topologies, stacks) and the plugins are found beside it, with no environment. */
#ifndef SC_COMMON_PREFIX_H
#define SC_COMMON_PREFIX_H

#include <stddef.h>

/* The install prefix of the shared libstepcast holding this code, when it lies in
 * <prefix>/SC_LIB_INSTALL_SUBDIR (dladdr): 1 and the prefix in out ("/" for the root), else
 * 0 (linked statically into a program, or a library outside such a folder). */
int sc__lib_prefix(char *out, size_t cap);

#endif
