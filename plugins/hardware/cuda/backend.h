/*
 * The interface between the `cuda` hardware plugin (cuda.c, which links nothing from CUDA)
 * and its measuring backend (backend.c, hardware-cuda-backend.so, which links the CUDA
 * runtime, cuBLAS and cuBLASLt). The plugin dlopens the backend at its first measure() from
 * the cuda/ subfolder beside its own file, looks up SC__CUDA_BACKEND_SYMBOL and checks
 * size. Private to the plugin: not part of the SDK.
 */
#ifndef SC_PLUGINS_HARDWARE_CUDA_BACKEND_H
#define SC_PLUGINS_HARDWARE_CUDA_BACKEND_H

#include <stdint.h>

#include "stepcast/plugin.h"

/* The backend's file, relative to the folder of the plugin's own file. */
#define SC__CUDA_BACKEND_FILE "cuda/hardware-cuda-backend.so"
#define SC__CUDA_BACKEND_SYMBOL "sc__cuda_backend_v1"

typedef struct sc__cuda_backend {
  uint32_t size; /* sizeof(sc__cuda_backend) as the backend was built */
  /* sc_hw_plugin.measure's contract (state unused). */
  int (*measure)(void *state, const sc_device *dev, const sc_op_desc *op, uint32_t min_reps,
                 double budget_s, sc_measurement *out, sc_error *err);
  /* Destroys the stream, the cuBLAS handles and the workspace the first measure() made. */
  void (*fini)(void);
} sc__cuda_backend;

typedef const sc__cuda_backend *(*sc__cuda_backend_fn)(void);

#endif /* SC_PLUGINS_HARDWARE_CUDA_BACKEND_H */
