/*
 * Plugin discovery: STEPCAST_PLUGIN_PATH, then the build tree's or the installation's
 * plugin folder (found from the program's own path, no environment needed), then the files
 * given with --plugin. With STEPCAST_PLUGINS_VERBOSE=1 every folder and file considered is
 * narrated through the registry's log callback.
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/prefix.h"
#include "plugin/registry_int.h"
#include "sc_config.h"
#include "stepcast/stepcast.h"

/* ------------------------------------------------------------------------- */
/* Where this program lives                                                  */

static int sc__is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Cut the last path component off p in place ("/a/b/c" -> "/a/b", "/a" -> "/"). */
static void sc__dirname_inplace(char *p) {
  char *slash = strrchr(p, '/');
  if (slash == NULL) {
    strcpy(p, ".");
  } else if (slash == p) {
    p[1] = '\0';
  } else {
    *slash = '\0';
  }
}

/* 1 when path is dir or lies below it (both absolute, resolved). */
static int sc__path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (n > 1 && dir[n - 1] == '/') n--;
  return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Join prefix and a relative subdir into out; 0 when it does not fit. */
static int sc__join(char *out, size_t out_size, const char *prefix, const char *sub) {
  int n = snprintf(out, out_size, "%s%s%s", prefix,
                   (prefix[0] != '\0' && prefix[strlen(prefix) - 1] == '/') ? "" : "/", sub);
  return n > 0 && (size_t)n < out_size;
}

int sc__plugin_default_dir(char *out, size_t out_size, char *why, size_t why_size) {
  char exe[PATH_MAX], exe_dir[PATH_MAX], build[PATH_MAX], cand[PATH_MAX];
  char first[PATH_MAX] = "";
  ssize_t n;
  out[0] = '\0';
  if (why_size > 0) why[0] = '\0';

  n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    snprintf(exe_dir, sizeof exe_dir, "%s", exe);
    sc__dirname_inplace(exe_dir);
    /* The build tree (CMAKE_BINARY_DIR), which holds SC_PLUGIN_BUILD_DIR. */
    snprintf(cand, sizeof cand, "%s", SC_BUILD_DIR);
    if (realpath(cand, build) != NULL && sc__path_within(exe_dir, build)) {
      snprintf(out, out_size, "%s", SC_PLUGIN_BUILD_DIR);
      snprintf(why, why_size, "program %s runs from the build tree %s", exe, build);
      return SC_OK;
    }
    /* Installed: <prefix>/bin/<program> -> <prefix>/SC_PLUGIN_INSTALL_SUBDIR. */
    snprintf(cand, sizeof cand, "%s", exe_dir);
    sc__dirname_inplace(cand);
    if (sc__join(first, sizeof first, cand, SC_PLUGIN_INSTALL_SUBDIR) && sc__is_dir(first)) {
      snprintf(out, out_size, "%s", first);
      snprintf(why, why_size, "installed program %s (prefix %s)", exe, cand);
      return SC_OK;
    }
  }
  /* A program elsewhere that links libstepcast: <prefix>/<libdir>/libstepcast.so
   * (common/prefix.h) */
  {
    char prefix[PATH_MAX];
    if (sc__lib_prefix(prefix, sizeof prefix) &&
        sc__join(cand, sizeof cand, prefix, SC_PLUGIN_INSTALL_SUBDIR) && sc__is_dir(cand)) {
      snprintf(out, out_size, "%s", cand);
      snprintf(why, why_size, "libstepcast installed under the prefix %s", prefix);
      return SC_OK;
    }
  }
  /* The prefix configured at build time, if that folder exists. */
  if (sc__join(cand, sizeof cand, SC_INSTALL_PREFIX, SC_PLUGIN_INSTALL_SUBDIR) &&
      sc__is_dir(cand)) {
    snprintf(out, out_size, "%s", cand);
    snprintf(why, why_size, "configured install prefix %s", SC_INSTALL_PREFIX);
    return SC_OK;
  }
  if (first[0] != '\0') {
    snprintf(out, out_size, "%s", first);
    snprintf(why, why_size, "derived from the program's path %s (folder missing)", exe);
    return SC_OK;
  }
  snprintf(why, why_size, "cannot tell where this program is installed");
  return SC_ENOTFOUND;
}

/* ------------------------------------------------------------------------- */
/* Scanning                                                                  */

typedef struct sc__seen {
  char **dirs;
  size_t n, cap;
} sc__seen;

static int sc__seen_add(sc__seen *s, const char *dir) {
  char *d;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    char **dirs = realloc(s->dirs, cap * sizeof *dirs);
    if (dirs == NULL) return SC_ENOMEM;
    s->dirs = dirs;
    s->cap = cap;
  }
  d = malloc(strlen(dir) + 1);
  if (d == NULL) return SC_ENOMEM;
  strcpy(d, dir);
  s->dirs[s->n++] = d;
  return SC_OK;
}

static int sc__seen_has(const sc__seen *s, const char *dir) {
  for (size_t i = 0; i < s->n; i++) {
    if (strcmp(s->dirs[i], dir) == 0) return 1;
  }
  return 0;
}

static void sc__seen_free(sc__seen *s) {
  for (size_t i = 0; i < s->n; i++) free(s->dirs[i]);
  free(s->dirs);
}

static int sc__cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int sc__ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Why st (of a plugin folder or file) may not be trusted, like ssh's StrictModes: writable
 * by everyone without the sticky bit (anyone could drop a plugin in, or replace it), or
 * owned by a user other than root and the one running stepcast (that user could). NULL when
 * it is safe; else the reason, written to buf. */
static const char *sc__unsafe(const struct stat *st, char *buf, size_t cap) {
  if ((st->st_mode & S_IWOTH) != 0 && !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))) {
    snprintf(buf, cap, "writable by every user (mode %04o%s)", (unsigned)(st->st_mode & 07777),
             S_ISDIR(st->st_mode) ? ", no sticky bit" : "");
    return buf;
  }
  if (st->st_uid != 0 && st->st_uid != geteuid()) {
    snprintf(buf, cap, "owned by another user (uid %u; trusted: root and uid %u)",
             (unsigned)st->st_uid, (unsigned)geteuid());
    return buf;
  }
  return NULL;
}

/* Load every *.so of dir, in name order. Only running out of memory is an error. A folder
 * or file that sc__unsafe refuses is skipped with a warning. */
static int sc__scan_dir(sc_registry *reg, const char *dir, const char *origin, sc__seen *seen,
                        sc_error *err) {
  char real[PATH_MAX];
  DIR *d;
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = SC_OK;
  if (realpath(dir, real) == NULL) {
    sc__registry_narrate(reg, "folder %s (%s): skipped: %s", dir, origin, strerror(errno));
    return SC_OK;
  }
  if (sc__seen_has(seen, real)) {
    sc__registry_narrate(reg, "folder %s (%s): skipped: already scanned", dir, origin);
    return SC_OK;
  }
  if (sc__seen_add(seen, real) != SC_OK) {
    return sc_error_set(err, SC_ENOMEM, "plugin discovery: out of memory");
  }
  {
    struct stat st;
    char why[160];
    const char *bad;
    if (stat(real, &st) == 0 && (bad = sc__unsafe(&st, why, sizeof why)) != NULL) {
      sc__registry_warn(reg, "plugin folder %s (%s) skipped: %s", dir, origin, bad);
      return SC_OK;
    }
  }
  d = opendir(real);
  if (d == NULL) {
    sc__registry_narrate(reg, "folder %s (%s): skipped: %s", dir, origin, strerror(errno));
    return SC_OK;
  }
  sc__registry_narrate(reg, "folder %s (%s): scanning", dir, origin);
  while ((de = readdir(d)) != NULL) {
    char *copy;
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (!sc__ends_with(de->d_name, ".so")) {
      sc__registry_narrate(reg, "%s/%s: skipped: not a *.so file", dir, de->d_name);
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 32;
      char **nn = realloc(names, ncap * sizeof *nn);
      if (nn == NULL) {
        rc = SC_ENOMEM;
        break;
      }
      names = nn;
      cap = ncap;
    }
    copy = malloc(strlen(de->d_name) + 1);
    if (copy == NULL) {
      rc = SC_ENOMEM;
      break;
    }
    strcpy(copy, de->d_name);
    names[n++] = copy;
  }
  closedir(d);
  if (rc == SC_OK && n > 1) qsort(names, n, sizeof *names, sc__cmp_str);
  for (size_t i = 0; i < n && rc == SC_OK; i++) {
    char path[PATH_MAX], rp[PATH_MAX];
    const char *by = NULL;
    sc_error lerr;
    int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (w < 0 || (size_t)w >= sizeof path) {
      sc__registry_narrate(reg, "%s/%s: skipped: path too long", dir, names[i]);
      continue;
    }
    if (realpath(path, rp) != NULL && sc__registry_has_file(reg, rp, &by)) {
      sc__registry_narrate(reg, "%s: skipped: already loaded as %s", path, by);
      continue;
    }
    {
      struct stat st;
      char why[160];
      const char *bad;
      if (stat(path, &st) == 0 && (bad = sc__unsafe(&st, why, sizeof why)) != NULL) {
        sc__registry_warn(reg, "plugin %s skipped: %s", path, bad);
        continue;
      }
    }
    if (sc_registry_load_file(reg, path, &lerr) == SC_ENOMEM) rc = SC_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  if (rc != SC_OK) return sc_error_set(err, rc, "plugin discovery in %s: out of memory", dir);
  return SC_OK;
}

int sc__registry_discover_in(sc_registry *reg, const char *path_list, const char *default_dir,
                             const char *const *extra_files, size_t nextra, sc_error *err) {
  sc__seen seen = {NULL, 0, 0};
  int rc = SC_OK;
  if (reg == NULL) return sc_error_set(err, SC_EINVAL, "plugin discovery: reg is NULL");
  if (path_list != NULL) {
    const char *p = path_list;
    size_t idx = 0;
    sc__registry_narrate(reg, "STEPCAST_PLUGIN_PATH=%s", path_list);
    for (;;) {
      const char *colon = strchr(p, ':');
      size_t len = colon != NULL ? (size_t)(colon - p) : strlen(p);
      if (len == 0) {
        sc__registry_narrate(reg, "STEPCAST_PLUGIN_PATH element %zu is empty: skipped", idx);
      } else if (len >= PATH_MAX) {
        sc__registry_narrate(reg, "STEPCAST_PLUGIN_PATH element %zu is too long: skipped",
                             idx);
      } else if (p[0] != '/') {
        /* Relative to whatever folder stepcast runs in: a stranger's checkout or a shared
         * scratch folder would supply the plugins. Ignored, not resolved. */
        sc__registry_warn(reg, "STEPCAST_PLUGIN_PATH element %zu '%.*s' is a relative path: "
                          "ignored (plugin folders must be absolute)", idx, (int)len, p);
      } else {
        char dir[PATH_MAX];
        memcpy(dir, p, len);
        dir[len] = '\0';
        rc = sc__scan_dir(reg, dir, "STEPCAST_PLUGIN_PATH", &seen, err);
        if (rc != SC_OK) goto done;
      }
      if (colon == NULL) break;
      p = colon + 1;
      idx++;
    }
  }
  if (default_dir != NULL && default_dir[0] != '\0') {
    rc = sc__scan_dir(reg, default_dir, "default plugin folder", &seen, err);
    if (rc != SC_OK) goto done;
  }
  for (size_t i = 0; i < nextra; i++) {
    char rp[PATH_MAX];
    const char *by = NULL;
    sc_error lerr;
    int lrc;
    if (extra_files == NULL || extra_files[i] == NULL) continue;
    if (realpath(extra_files[i], rp) != NULL && sc__registry_has_file(reg, rp, &by)) {
      sc__registry_narrate(reg, "%s (--plugin): already loaded as %s", extra_files[i], by);
      continue;
    }
    lerr.code = SC_OK;
    lerr.msg[0] = '\0';
    lrc = sc_registry_load_file(reg, extra_files[i], &lerr);
    if (lrc == SC_ENOMEM) {
      rc = sc_error_set(err, SC_ENOMEM, "%s", lerr.msg);
      goto done;
    }
    /* Keep loading the others; report the first file that failed. */
    if (lrc != SC_OK && rc == SC_OK) {
      rc = sc_error_set(err, SC_EPLUGIN, "--plugin %s", lerr.msg);
    }
  }
done:
  sc__seen_free(&seen);
  return rc;
}

int sc_registry_discover(sc_registry *reg, const char *const *extra_files, size_t nextra,
                         sc_error *err) {
  char dir[PATH_MAX], why[PATH_MAX + 256];
  const char *path_list = getenv("STEPCAST_PLUGIN_PATH");
  int have_dir;
  if (reg == NULL) return sc_error_set(err, SC_EINVAL, "sc_registry_discover: reg is NULL");
  have_dir = sc__plugin_default_dir(dir, sizeof dir, why, sizeof why) == SC_OK;
  if (have_dir) {
    sc__registry_narrate(reg, "default plugin folder %s: %s", dir, why);
  } else {
    sc__registry_narrate(reg, "no default plugin folder: %s", why);
  }
  return sc__registry_discover_in(reg, path_list, have_dir ? dir : NULL, extra_files, nextra,
                                  err);
}
