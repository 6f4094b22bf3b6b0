/* bench_predict: how fast sc_predict answers. GPT-3 175B on 1024 A100s of Perlmutter
 * (tp 8, pp 8, dp 16), global batch 1536, seq 2048, predicted in a loop for about
 * SECONDS seconds (argv[1], default 2). argv[2] names another topology (default
 * perlmutter-gpu; the placement refuses 1024 GPUs on dgx-a100-superpod, whose 160-GPU
 * scalable units split the 128-GPU pipeline stages unevenly, and dgx-h100-superpod holds
 * 1016 GPUs). Variants:
 *   same      the same configuration every time (operator and collective memo hits);
 *   vary-mb   the micro-batch cycles over 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96 (each
 *             divides 1536/16 = 96), so operator shapes change (memo misses until every
 *             size has been seen; the first pass over them is all misses);
 *   cold      as vary-mb, with the registry's memo cleared before every prediction, so
 *             every operator and collective estimate is computed afresh.
 * Each line also gives the memo hit rate over its loop.
 * Prints predictions per second and microseconds per prediction for each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "bench_util.h"

static int run(const char *name, sc_predictor *pr, const sc_model *m, const sc_topology *t,
               const sc_device *dev, sc_parallel *p, int vary, double seconds, sc_registry *reg) {
  static const uint32_t mbs[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96};
  const size_t nmbs = sizeof mbs / sizeof mbs[0];
  sc_predict_opts o;
  sc_result res;
  sc_error err;
  long n = 0;
  double t0 = now_s(), t1, first = 0;
  uint64_t h0, l0, h1, l1;
  sc_registry_memo_stats(reg, &h0, &l0);
  sc_predict_opts_defaults(&o);
  o.allow_oom = 1; /* large micro-batches exceed 80 GB; the timing question is the same */
  sc_error_clear(&err);
  do {
    for (int k = 0; k < 16; k++, n++) {
      if (vary) p->micro_batch = mbs[n % (long)nmbs];
      if (vary == 2) sc_registry_memo_clear(reg);
      if (sc_predict(pr, m, t, dev, p, &o, &res, NULL, &err) != SC_OK) {
        fprintf(stderr, "bench_predict: %s: micro_batch %u: %s\n", name, p->micro_batch, err.msg);
        return 1;
      }
      if (n == 0) first = res.iteration_s;
    }
    t1 = now_s();
  } while (t1 - t0 < seconds);
  sc_registry_memo_stats(reg, &h1, &l1);
  printf("%-8s %8ld predictions in %.3f s: %10.0f predictions/s, %8.2f us/prediction, "
         "memo hits %5.1f%% (first: %.4f s/iteration)\n",
         name, n, t1 - t0, (double)n / (t1 - t0), 1e6 * (t1 - t0) / (double)n,
         l1 > l0 ? 100.0 * (double)(h1 - h0) / (double)(l1 - l0) : 0.0, first);
  return 0;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  const char *topo = argc > 2 ? argv[2] : "perlmutter-gpu";
  sc_registry *reg = NULL;
  sc_predictor *pr = NULL;
  sc_model m;
  sc_topology t;
  sc_device dev;
  sc_parallel p;
  sc_error err;
  int rc = 1;
  sc_error_clear(&err);
  if (seconds <= 0) seconds = 2.0;
  if (sc_registry_new(&reg, &err) != SC_OK || sc_registry_add_builtins(reg, &err) != SC_OK ||
      sc_model_load("gpt3-175b", &m, &err) != SC_OK ||
      sc_topology_load(topo, &t, &err) != SC_OK ||
      sc_hardware_load(reg, t.hardware, &dev, &err) != SC_OK ||
      sc_predictor_new(reg, &pr, &err) != SC_OK) {
    fprintf(stderr, "bench_predict: %s\n", err.msg);
    goto done;
  }
  sc_parallel_defaults(&p);
  p.tp = 8;
  p.pp = 8;
  p.dp = 16;
  p.global_batch = 1536;
  p.seq_len = 2048;
  p.micro_batch = 1;
  printf("gpt3-175b on %s (%s): 1024 GPUs, tp 8, pp 8, dp 16, global batch 1536, seq 2048\n",
         t.name, dev.name);
  if (run("same", pr, &m, &t, &dev, &p, 0, seconds, reg) != 0) goto done;
  if (run("vary-mb", pr, &m, &t, &dev, &p, 1, seconds, reg) != 0) goto done;
  if (run("cold", pr, &m, &t, &dev, &p, 2, seconds, reg) != 0) goto done;
  rc = 0;
done:
  sc_predictor_free(pr);
  sc_registry_free(reg);
  return rc;
}
