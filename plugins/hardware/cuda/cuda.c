/*
 * The `cuda` hardware plugin: an NVIDIA GPU reached through the CUDA runtime, as a device
 * that can be described and measured. Built only when CMake finds a CUDA compiler and
 * SC_CUDA is on (plugins/CMakeLists.txt); never part of stepcast_builtins.
 *
 * describe() reads a hardware file with kind = "cuda" and exactly the keys of the `gpu`
 * plugin's files (docs/formats.md: name, kind, mem_bytes, mem_bw_Bps, l2_bytes,
 * compute_units, flops_efficiency, mem_efficiency, launch_s, [peak_flops_per_s] per dtype,
 * [tile] m n k). It needs no GPU: a hardware/<x>.toml of kind "gpu" is described by the gpu
 * plugin, the same file with kind = "cuda" by this one.
 *
 * This file links nothing from CUDA: every command that discovers plugins loads it, and
 * the CUDA runtime with cuBLAS (541 MB) would cost each of them 0.2 s and 211 MiB on a
 * machine without a GPU. measure() dlopens the backend (backend.c, SC__CUDA_BACKEND_FILE
 * beside this file's folder), which links them, at its first call, and hands every call to
 * it; what it measures and how is described there. A backend that cannot be loaded fails
 * measure() with SC_EIO and the loader's message; it never aborts.
 */
#define _GNU_SOURCE 1 /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stepcast/plugin.h"

#include "../hw_common.h"
#include "backend.h"

/* ---- describe: the gpu plugin's keys, kind = "cuda" ----------------------------------- */

static int cu_describe(void *state, const sc_host *host, const sc_table *file, sc_device *dev,
                       sc_error *err) {
  (void)state;
  return sc__hw_describe_accel(host, file, "cuda", dev, err);
}

/* ---- measure: through the backend, loaded at the first call --------------------------- */

static const sc__cuda_backend *cu_be; /* NULL until loaded */
static void *cu_be_dl;

/* Load the backend from the cuda/ subfolder of the folder this plugin was loaded from. */
static int cu_backend_load(sc_error *err) {
  Dl_info info;
  char path[PATH_MAX];
  const char *slash;
  void *sym;
  sc__cuda_backend_fn entry;
  const sc__cuda_backend *be;
  int n;
  if (cu_be != NULL) return SC_OK;
  if (dladdr((void *)(uintptr_t)&cu_describe, &info) == 0 || info.dli_fname == NULL ||
      (slash = strrchr(info.dli_fname, '/')) == NULL)
    return sc_plugin_fail(err, SC_EIO, "cuda: cannot tell which folder the plugin was loaded "
                          "from, to find its backend %s", SC__CUDA_BACKEND_FILE);
  n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
               SC__CUDA_BACKEND_FILE);
  if (n < 0 || (size_t)n >= sizeof path)
    return sc_plugin_fail(err, SC_EIO, "cuda: the backend's path is too long");
  dlerror();
  cu_be_dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (cu_be_dl == NULL) {
    const char *de = dlerror();
    return sc_plugin_fail(err, SC_EIO, "cuda: cannot load the CUDA backend %s: %s", path,
                          de != NULL ? de : "unknown error");
  }
  dlerror();
  sym = dlsym(cu_be_dl, SC__CUDA_BACKEND_SYMBOL);
  if (sym == NULL) {
    dlclose(cu_be_dl);
    cu_be_dl = NULL;
    return sc_plugin_fail(err, SC_EIO, "cuda: %s has no %s", path, SC__CUDA_BACKEND_SYMBOL);
  }
  memcpy(&entry, &sym, sizeof entry); /* POSIX: a dlsym pointer converts to a function */
  be = entry();
  if (be == NULL || be->size < sizeof *be || be->measure == NULL || be->fini == NULL) {
    dlclose(cu_be_dl);
    cu_be_dl = NULL;
    return sc_plugin_fail(err, SC_EIO, "cuda: %s is not a backend of this plugin (built "
                          "from another version?)", path);
  }
  cu_be = be;
  return SC_OK;
}

static int cu_measure(void *state, const sc_device *dev, const sc_op_desc *op, uint32_t min_reps,
                      double budget_s, sc_measurement *out, sc_error *err) {
  int rc = cu_backend_load(err);
  if (rc != SC_OK) return rc;
  return cu_be->measure(state, dev, op, min_reps, budget_s, out, err);
}

/* The backend's resources go; the backend itself stays mapped (it is linked with
 * -z nodelete: unmapping the libstdc++ that cuBLAS pulls in leaves its exception pool
 * unreachable, which LeakSanitizer reports). */
static void cu_fini(void *state) {
  (void)state;
  if (cu_be != NULL) cu_be->fini();
}

static const sc_hw_plugin cuda_plugin = {
  .hdr = SC_PLUGIN_HEADER_FULL(sc_hw_plugin, SC_PLUGIN_KIND_HARDWARE, "cuda", "1.0.0", 0, NULL,
                               cu_fini),
  .describe = cu_describe,
  .measure = cu_measure,
};

SC_PLUGIN_ENTRY(hardware_cuda) { return &cuda_plugin.hdr; }
