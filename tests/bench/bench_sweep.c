/* bench_sweep: how fast the sweep goes through a design space, on one core.
 * GPT-3 175B on 4096 GPUs of perlmutter-gpu (A100 40 GB; the topology holds 6144), global
 * batch 1536 sequences of 2048 tokens (GPT-3's 3.2M-token batch, Brown et al. 2020,
 * Table 2.1), the default space of stepcast sweep (tp, pp, cp every divisor of 4096,
 * micro-batch every divisor of 1536, gpipe / 1f1b / interleaved with 2, 3, 4, 6, 8 virtual
 * stages, three recomputation modes, sequence parallel and distributed optimizer off/on).
 *   argv[1]  threads (default 1)
 *   argv[2]  "all" to also time the sweep without pruning and with plain sc_predict for
 *            every point (the baseline; takes minutes)
 * Prints, per mode: the space, how many points were predicted, pruned and skipped, and
 * the rates: points of the space per second, valid fitting points (predicted + pruned)
 * per second, schedule simulations per second. Build in Release without sanitizers:
 *   cmake --build <dir> --target bench_sweep && <dir>/bin/bench_sweep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "stepcast/sweep.h"

static int run(const char *name, sc_registry **regs, uint32_t nthreads, const sc_model *m,
               const sc_topology *t, const sc_device *dev, const sc_sweep_space *s, int prune,
               int exact, double *best) {
  sc_sweep_opts o;
  sc_sweep_result r;
  sc_error err;
  sc_error_clear(&err);
  sc_sweep_opts_defaults(&o);
  o.prune = prune;
  o.exact = exact;
  for (uint32_t i = 0; i < nthreads; i++) sc_registry_memo_clear(regs[i]);
  if (sc_sweep_run(regs, nthreads, m, t, dev, s, &o, &r, &err) != SC_OK) {
    fprintf(stderr, "bench_sweep: %s: %s\n", name, err.msg);
    return 1;
  }
  uint64_t skipped = 0;
  for (int i = 0; i < SC_SWEEP_NSKIP; i++) skipped += r.skipped[i];
  double e = r.elapsed_s;
  printf("%-9s %.3f s: space %llu (%.0f/s), valid and fitting %llu (%.0f/s), simulated %llu "
         "(%.0f/s), pruned %llu, skipped %llu (memory %llu); best %.6f s\n",
         name, e, (unsigned long long)r.space, (double)r.space / e,
         (unsigned long long)(r.predicted + r.pruned), (double)(r.predicted + r.pruned) / e,
         (unsigned long long)r.predicted, (double)r.predicted / e, (unsigned long long)r.pruned,
         (unsigned long long)skipped, (unsigned long long)r.skipped[SC_SWEEP_SKIP_MEMORY],
         r.ntop ? r.top[0].result.iteration_s : 0.0);
  if (best != NULL && r.ntop) {
    if (*best != 0 && *best != r.top[0].result.iteration_s) {
      fprintf(stderr, "bench_sweep: %s: best %.17g differs from %.17g\n", name,
              r.top[0].result.iteration_s, *best);
      sc_sweep_result_free(&r);
      return 1;
    }
    *best = r.top[0].result.iteration_s;
  }
  sc_sweep_result_free(&r);
  return 0;
}

int main(int argc, char **argv) {
  uint32_t nthreads = argc > 1 ? (uint32_t)atoi(argv[1]) : 1;
  int all = argc > 2 && strcmp(argv[2], "all") == 0;
  sc_registry *regs[64] = {0};
  sc_model m;
  sc_topology t;
  sc_device dev;
  sc_sweep_space s;
  sc_error err;
  double best = 0;
  int rc = 1;
  sc_error_clear(&err);
  if (nthreads < 1 || nthreads > 64) nthreads = 1;
  for (uint32_t i = 0; i < nthreads; i++)
    if (sc_registry_new(&regs[i], &err) != SC_OK ||
        sc_registry_add_builtins(regs[i], &err) != SC_OK)
      goto fail;
  if (sc_model_load("gpt3-175b", &m, &err) != SC_OK ||
      sc_topology_load("perlmutter-gpu", &t, &err) != SC_OK ||
      sc_hardware_load(regs[0], t.hardware, &dev, &err) != SC_OK ||
      sc_sweep_space_defaults(&s, &m, 4096, 1536, 2048, &err) != SC_OK)
    goto fail;
  printf("gpt3-175b on %s (%s): 4096 GPUs, global batch 1536, seq 2048, %u thread%s\n", t.name,
         dev.name, nthreads, nthreads > 1 ? "s" : "");
  if (run("pruned", regs, nthreads, &m, &t, &dev, &s, 1, 0, &best) != 0) goto done;
  if (run("pruned", regs, nthreads, &m, &t, &dev, &s, 1, 0, &best) != 0) goto done;
  if (all) {
    if (run("no-prune", regs, nthreads, &m, &t, &dev, &s, 0, 0, &best) != 0) goto done;
    if (run("exact", regs, nthreads, &m, &t, &dev, &s, 0, 1, &best) != 0) goto done;
  }
  rc = 0;
  goto done;
fail:
  fprintf(stderr, "bench_sweep: %s\n", err.msg);
done:
  for (uint32_t i = 0; i < nthreads; i++) sc_registry_free(regs[i]);
  return rc;
}
