/* stepcast/afile.h: atomic output files, for every writer of the library, the CLI and a
 * program that links the library: the bytes go to a temporary file beside the target (same
 * folder, ".<name>.tmp.XXXXXX"), which is renamed over the target only after a successful
 * fflush, fsync and fclose. Until then the old file (if
 * any) stays as it was; on any error the temporary is removed and the old file is untouched.
 *
 *   sc_afile af;
 *   if (sc_afile_open(&af, path, err) != SC_OK) return ...;
 *   ... fprintf(af.f, ...) ...
 *   rc = sc_afile_commit(&af, err);   (or sc_afile_abort(&af) on an error of the caller)
 *
 * A set of files that must change together (fit --out) closes each with sc_afile_close
 * first, then commits them all only when every one was written (sc_afile_commit after
 * sc_afile_close only renames).
 *
 * A target that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written
 * in place: there is nothing to replace. A symbolic link is followed: its target is replaced
 * and the link kept. */
#ifndef STEPCAST_AFILE_H
#define STEPCAST_AFILE_H

#include <stdio.h>

#include "stepcast/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_afile {
  FILE *f;    /* write here between open and close/commit; NULL after */
  char *path; /* the target (owned), as given */
  char *real; /* where the bytes land: path, or a symbolic link's target (owned) */
  char *tmp;  /* the temporary beside real (owned); NULL when written in place or once gone */
} sc_afile;

/* Open a temporary beside path for writing. On success af->f is open; on error (SC_EINVAL,
 * SC_EIO: the message names path and the reason) af holds nothing to free and nothing was
 * created. */
int sc_afile_open(sc_afile *af, const char *path, sc_error *err);

/* Flush, fsync and close af->f without renaming. SC_EIO (naming the target) on a write
 * error, after which the temporary is removed (sc_afile_abort still safe to call). */
int sc_afile_close(sc_afile *af, sc_error *err);

/* Close (when still open) and rename the temporary over the target; frees af. SC_EIO on any
 * error, the temporary removed and the old target untouched. */
int sc_afile_commit(sc_afile *af, sc_error *err);

/* Close and remove the temporary, free af: the target is as it was. Safe on a zeroed, an
 * aborted or a committed af. */
void sc_afile_abort(sc_afile *af);

/* The temporary's path while one exists (for a signal handler that unlinks it), else NULL. */
const char *sc_afile_tmp(const sc_afile *af);

#ifdef __cplusplus
}
#endif
#endif
