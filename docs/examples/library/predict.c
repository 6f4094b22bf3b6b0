/* One prediction through the installed libstepcast: GPT-3 1.3B on 8 A100s of a DGX
 * SuperPOD, TP 2 x DP 4, 64 sequences of 2048 tokens. The model and topology are found by
 * name in the installation, the plugins in its plugin folder: no environment needed.
 *   cc predict.c $(pkg-config --cflags --libs stepcast) -o predict   (or CMakeLists.txt) */
#include <stdio.h>
#include <stepcast/predict.h>
#include <stepcast/registry.h>

int main(void) {
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_model m;
  sc_topology t;
  sc_device dev;
  sc_parallel p;
  sc_predict_opts o;
  sc_result res;
  sc_error err;
  int rc = 1;
  sc_parallel_defaults(&p);
  p.tp = 2, p.dp = 4, p.global_batch = 64, p.seq_len = 2048;
  sc_predict_opts_defaults(&o);
  if (sc_registry_new(&reg, &err) == 0 && sc_registry_discover(reg, NULL, 0, &err) == 0 &&
      sc_model_load("gpt3-1.3b", &m, &err) == 0 &&
      sc_topology_load("dgx-a100-superpod", &t, &err) == 0 &&
      sc_hardware_load(reg, t.hardware, &dev, &err) == 0 &&
      sc_predictor_new(reg, &pr, &err) == 0 &&
      sc_predict(pr, &m, &t, &dev, &p, &o, &res, NULL, &err) == 0) {
    printf("%s on %s: %.3f ms per iteration, MFU %.1f %%\n", m.name, dev.name,
           res.iteration_s * 1e3, 100.0 * res.mfu);
    rc = 0;
  } else {
    fprintf(stderr, "predict: %s\n", err.msg);
  }
  sc_predictor_free(pr);
  sc_registry_free(reg);
  return rc;
}
