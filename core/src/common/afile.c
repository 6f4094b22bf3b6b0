/* Atomic output files: a temporary beside the target, renamed over it on success (afile.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "stepcast/afile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SC__AFILE_TRIES 64
#define SC__AFILE_NAME_MAX 255 /* of one path component, NAME_MAX on Linux */

static void afile_free(sc_afile *af) {
  free(af->path);
  free(af->real);
  free(af->tmp);
  memset(af, 0, sizeof *af);
}

/* Six characters of [A-Za-z0-9] from a mix of the clock, the process and the try. */
static void tmp_suffix(char out[7], unsigned try_no, const void *salt) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  struct timespec ts;
  uint64_t x;
  clock_gettime(CLOCK_REALTIME, &ts);
  x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 12) ^
      ((uint64_t)try_no * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(uintptr_t)salt;
  for (int i = 0; i < 6; i++) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    out[i] = abc[x % (sizeof abc - 1)];
  }
  out[6] = '\0';
}

int sc_afile_open(sc_afile *af, const char *path, sc_error *err) {
  struct stat st;
  int exists, fd = -1;
  mode_t mode = 0666;
  if (af == NULL) return sc_error_set(err, SC_EINVAL, "afile: NULL argument");
  memset(af, 0, sizeof *af);
  if (path == NULL || path[0] == '\0')
    return sc_error_set(err, SC_EINVAL, "output file: an empty path");
  af->path = strdup(path);
  if (af->path == NULL) return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  /* a symbolic link: replace what it points at and keep the link */
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) af->real = realpath(path, NULL);
  if (af->real == NULL && (af->real = strdup(path)) == NULL) {
    afile_free(af);
    return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
  }
  exists = stat(af->real, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) { /* a device or a FIFO: nothing to replace */
    af->f = fopen(af->real, "w");
    if (af->f == NULL) {
      int e = errno;
      afile_free(af);
      return sc_error_set(err, SC_EIO, "%s: cannot open for writing: %s", path, strerror(e));
    }
    return SC_OK;
  }
  if (exists) mode = st.st_mode & 07777;
  {
    const char *slash = strrchr(af->real, '/');
    size_t dirlen = slash ? (size_t)(slash - af->real) + 1 : 0; /* with its '/' */
    const char *base = af->real + dirlen;
    size_t baselen = strlen(base);
    if (baselen == 0) {
      afile_free(af);
      return sc_error_set(err, SC_EINVAL, "%s: names a folder, not a file", path);
    }
    if (baselen > SC__AFILE_NAME_MAX - 13) baselen = SC__AFILE_NAME_MAX - 13; /* ".", ".tmp.XXXXXX" */
    af->tmp = malloc(dirlen + baselen + 16);
    if (af->tmp == NULL) {
      afile_free(af);
      return sc_error_set(err, SC_ENOMEM, "%s: out of memory", path);
    }
    for (unsigned t = 0; t < SC__AFILE_TRIES; t++) {
      char sfx[7];
      tmp_suffix(sfx, t, af);
      snprintf(af->tmp, dirlen + baselen + 16, "%.*s.%.*s.tmp.%s", (int)dirlen, af->real,
               (int)baselen, base, sfx);
      fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : mode);
      if (fd >= 0 || errno != EEXIST) break;
    }
  }
  if (fd < 0) {
    int e = errno;
    afile_free(af);
    return sc_error_set(err, SC_EIO, "%s: cannot write a temporary file beside it: %s", path,
                        strerror(e));
  }
  if (exists) (void)fchmod(fd, mode); /* the old file's permissions, not the umask's */
  af->f = fdopen(fd, "w");
  if (af->f == NULL) {
    int e = errno;
    close(fd);
    remove(af->tmp);
    afile_free(af);
    return sc_error_set(err, SC_EIO, "%s: %s", path, strerror(e));
  }
  return SC_OK;
}

int sc_afile_close(sc_afile *af, sc_error *err) {
  int bad = 0, e = 0;
  if (af == NULL || af->path == NULL) return sc_error_set(err, SC_EINVAL, "afile: not open");
  if (af->f == NULL) return SC_OK;
  errno = 0;
  if (fflush(af->f) != 0) {
    bad = 1;
    e = errno;
  } else if (ferror(af->f)) {
    bad = 1;
  } else if (af->tmp != NULL && fsync(fileno(af->f)) != 0 && errno != EINVAL &&
             errno != EROFS) {
    bad = 1;
    e = errno;
  }
  errno = 0;
  if (fclose(af->f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  af->f = NULL;
  if (!bad) return SC_OK;
  {
    char path[4096];
    const int kept = af->tmp != NULL;
    if (kept) remove(af->tmp);
    snprintf(path, sizeof path, "%s", af->path);
    afile_free(af);
    return sc_error_set(err, SC_EIO, "%s: write error: %s%s", path,
                        e ? strerror(e) : "the output failed",
                        kept ? " (the file is as it was)" : "");
  }
}

int sc_afile_commit(sc_afile *af, sc_error *err) {
  int rc;
  if (af == NULL || af->path == NULL) return sc_error_set(err, SC_EINVAL, "afile: not open");
  if ((rc = sc_afile_close(af, err)) != SC_OK) return rc;
  if (af->tmp != NULL && rename(af->tmp, af->real) != 0) {
    int e = errno;
    rc = sc_error_set(err, SC_EIO, "%s: cannot replace it: %s", af->path, strerror(e));
    remove(af->tmp);
  }
  afile_free(af);
  return rc;
}

void sc_afile_abort(sc_afile *af) {
  if (af == NULL) return;
  if (af->f != NULL) fclose(af->f);
  af->f = NULL;
  if (af->tmp != NULL) remove(af->tmp);
  afile_free(af);
}

const char *sc_afile_tmp(const sc_afile *af) { return af != NULL ? af->tmp : NULL; }
