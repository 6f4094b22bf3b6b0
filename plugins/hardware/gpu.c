/*
 * The `gpu` hardware plugin: turns a TOML-described GPU (hardware/<device>.toml with
 * kind = "gpu") into an sc_device. It reads the file only through the sc_host table
 * services and cannot measure (measure = NULL). Keys and units: docs/formats.md.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stepcast/plugin.h"

#include "hw_common.h"

static int gpu_describe(void *state, const sc_host *host, const sc_table *file, sc_device *dev,
                        sc_error *err) {
  (void)state;
  return sc__hw_describe_accel(host, file, "gpu", dev, err);
}

static const sc_hw_plugin gpu_plugin = {
  .hdr = SC_PLUGIN_HEADER(sc_hw_plugin, SC_PLUGIN_KIND_HARDWARE, "gpu", "1.0.0"),
  .describe = gpu_describe,
  .measure = NULL,
};

SC_PLUGIN_ENTRY(hardware_gpu) { return &gpu_plugin.hdr; }
