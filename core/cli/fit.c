/* stepcast fit: the command line of the residual fit (stepcast/fit.h does the work): fit,
 * per operator family, residual regressors on a samples CSV (stepcast sample), report k-fold
 * cross-validated and held-out MAPE of the analytical, hybrid and learned estimators side by
 * side, and write the models and the report into a folder (hardware/<device>/residuals/).
 * docs/learned.md explains the method. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stepcast/fit.h"

static void fit_usage(FILE *out) {
  sc_fit_request d;
  sc_fit_request_defaults(&d);
  fprintf(out,
          "usage: stepcast fit --samples FILE --out DIR [options]\n"
          "       stepcast fit --comm FILE (--system S | --topology T) --out DIR [options]\n\n"
          "For every operator family of the samples, fits residual models on the operator\n"
          "plugin's features: target hybrid = log(measured / analytical) and target learned =\n"
          "log(measured), each as kind linear (ridge, LAPACKE) and gbdt (XGBoost, JSON model).\n"
          "Every model reads every feature (with --select other than domain, a hybrid model\n"
          "reads the shape features alone: --hybrid-features).\n"
          "Reports MAPE of the analytical, hybrid and learned estimators by k-fold cross-\n"
          "validation and on a held-out split (fit on the smaller shapes, predict the largest),\n"
          "marks per family and target a kind active when it beats the analytical estimate\n"
          "by more than %g%% MAPE cross-validated (inside the sampled shapes) and is within\n"
          "that margin of it on four chained held-out splits (fit on the smallest 50, 62.5,\n"
          "75 and 87.5%% by analytical time, test on the rest), used beyond the analytical\n"
          "times it was fitted on as the model where that extrapolated no worse, else as the\n"
          "analytical estimate (the lower cross-validated error of two such; --select,\n"
          "--margin), and writes DIR/residuals.toml, the gbdt JSON files and\n"
          "DIR/report.md. A samples row may be one of a group (column 'group'): one measured\n"
          "time covering several operators, fitted and scored as the sum of their estimates.\n\n"
          "With --comm, the samples are measured nccl-tests rows (the columns of stepcast comm\n"
          "--validate) of one system: per collective kind, residuals of the topology's\n"
          "analytical estimate (what stepcast comm predicts) on the collective's features\n"
          "(message bytes, ranks, nodes), held out by size; stepcast comm --estimator uses\n"
          "them. Kinds with fewer than max(8, folds + 2) rows are skipped. With --topology\n"
          "instead of --system, FILE is a table of measured collectives in stepcast estimate\n"
          "--csv's form (family, bytes, nranks, optional nodes and dtype, measured_s), every\n"
          "row run on that topology (the seed's hardware/a100-sxm4-80gb/seed/nccl.csv).\n\n"
          "options:\n"
          "  --samples FILE     samples CSV (stepcast sample)\n"
          "  --comm FILE        measured collectives CSV (id,source,system,topology,gpus,op,\n"
          "                     algo,bytes,busbw_GBps,notes), instead of --samples\n"
          "  --system S         with --comm: the rows of this system (its 'system' column);\n"
          "                     they must name one topology\n"
          "  --topology T       with --comm: FILE is a table of collectives measured on T\n"
          "                     (a name, topologies/T.toml, or a file)\n"
          "  --out DIR          output folder (created when missing; its parent must exist),\n"
          "                     e.g. hardware/host-cpu/residuals\n"
          "  --hardware H       device description for the analytical estimate (default: the\n"
          "                     hardware file beside the samples' folder, X/<name>.toml for\n"
          "                     X/<name>/samples.csv)\n"
          "  --folds K          cross-validation folds (default 5)\n"
          "  --heldout F        fraction of each family, the largest by analytical time,\n"
          "                     held out (default 0.25)\n"
          "  --lambda L         ridge penalty (default: picked by 4-fold CV in each fit)\n"
          "  --rounds N         boosting rounds (default 100, trees of depth 3)\n"
          "  --select domain|chain|guard|either|both  which residuals become active:\n"
          "                     'domain' (the default) as above; 'chain' within the margin\n"
          "                     of the analytical estimate cross-validated and on each\n"
          "                     chained split and better on their mean, the model used\n"
          "                     everywhere, for a family with 16 rows or more to\n"
          "                     judge on (fewer: 'either'); 'guard' the gbdt, else the\n"
          "                     linear kind, unless its chained splits' mean is worse than\n"
          "                     the analytical estimate's by more than the margin (no\n"
          "                     gain asked); 'either' beats the analytical\n"
          "                     estimate by more than the margin cross-validated or on the\n"
          "                     one held-out split and is within it in both; 'both' beats\n"
          "                     it by more than the margin in each (docs/learned.md)\n"
          "  --margin P         that margin in points of MAPE (default 1)\n"
          "  --stack S          the software stack the samples ran under (stacks/): the\n"
          "                     residuals correct the analytical time as S prices it, and\n"
          "                     apply under S only (residuals.toml's stack)\n"
          "  --train F          fit on a fraction F in (0, 1) of the measurements, drawn by a\n"
          "                     hash of each one's group name or line (the same on every\n"
          "                     run), and score the fitted models on the rest, per family\n"
          "                     (how a light sample predicts the operators it never saw)\n"
          "  --gain P           the chained rule: the splits' mean must beat the analytical\n"
          "                     estimate's by more than P points of MAPE (default 0)\n"
          "  --hybrid-features shape|all  what a hybrid model reads: 'all' (the default with\n"
          "                     --select domain, which judges it beyond the sampled shapes\n"
          "                     apart), every feature, the scale ones too (where the\n"
          "                     analytical estimate misses a size effect, e.g. a GPU's\n"
          "                     launch floor); 'shape' (the default with the other rules),\n"
          "                     the plugin's shape features and compute_bound, so that it\n"
          "                     carries to larger shapes (docs/learned.md)\n"
          "  --read LIST        after --hybrid-features, also read these features in the\n"
          "                     hybrid models: FAMILY.FEATURE, comma-separated (the names of\n"
          "                     residuals.toml's features, e.g. gemm.log2_k)\n"
          "  --unread LIST      leave these unread in the hybrid models, the same form (e.g.\n"
          "                     attention.log10_intensity); for ablations\n"
          "  --families LIST    with --samples: fit only these families (comma-separated),\n"
          "                     e.g. to leave out rows whose kernel is not the one the\n"
          "                     estimate prices; each must have samples\n"
          "  --rows FILE        also write every sample's analytical estimate beside its\n"
          "                     measurement as CSV (family, line, variant, dims, flops, bytes,\n"
          "                     bound, analytical_s, measured_s, measured/analytical; with\n"
          "                     --comm: family, line, id, gpus, bytes, algorithm, bound,\n"
          "                     analytical_s, measured_s, measured/analytical)\n"
          "  --repeat FILE      with --samples: a second samples file of the same plan,\n"
          "                     measured at another time (stepcast sample again); the\n"
          "                     report adds, per family, how far its medians and its\n"
          "                     residuals (measured / analytical) differ from the samples'\n"
          "                     on the same operators, on every row and on the held-out\n"
          "                     ones: the part of the error no model of these shapes can\n"
          "                     remove (docs/learned.md, \"Repeatability\")\n"
          "  --repeat-hardware H  the second file's hardware file (default: beside it, as\n"
          "                     for --hardware), for its residuals\n\n"
          "Exit status: 0 ok, 1 failure, 2 usage error.\n", 100.0 * d.margin);
}

int sc_cli_fit(int argc, char **argv) {
  for (int i = 1; i < argc; i++) /* scoring a residual set: estimate.c */
    if (strcmp(argv[i], "--test") == 0) return sc_cli_fit_test(argc, argv);
  char hwbuf[SC_PATH_MAX], hwbuf2[SC_PATH_MAX], cmd[1024];
  sc_fit_request q;
  sc_fit_result *fit = NULL;
  sc_error err;
  sc_registry *reg = NULL;
  int rc = 1;

  sc_fit_request_defaults(&q);
  sc_error_clear(&err);
  sc_cli_command_line(argc, argv, cmd, sizeof cmd);
  q.command = cmd;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = (i + 1 < argc) ? argv[i + 1] : NULL;
    char *end;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fit_usage(stdout);
      return 0;
    }
    if (strcmp(a, "--samples") != 0 && strcmp(a, "--out") != 0 && strcmp(a, "--hardware") != 0 &&
        strcmp(a, "--folds") != 0 && strcmp(a, "--heldout") != 0 && strcmp(a, "--lambda") != 0 &&
        strcmp(a, "--rounds") != 0 && strcmp(a, "--rows") != 0 && strcmp(a, "--comm") != 0 &&
        strcmp(a, "--system") != 0 && strcmp(a, "--topology") != 0 &&
        strcmp(a, "--select") != 0 && strcmp(a, "--margin") != 0 &&
        strcmp(a, "--families") != 0 && strcmp(a, "--hybrid-features") != 0 &&
        strcmp(a, "--read") != 0 && strcmp(a, "--unread") != 0 && strcmp(a, "--gain") != 0 &&
        strcmp(a, "--repeat") != 0 && strcmp(a, "--repeat-hardware") != 0 &&
        strcmp(a, "--train") != 0 && strcmp(a, "--stack") != 0)
      return sc_cli_usage_error("fit", "unknown option '%s'", a);
    if (v == NULL) return sc_cli_usage_error("fit", "option '%s' needs a value", a);
    i++;
    errno = 0;
    if (strcmp(a, "--samples") == 0) q.samples = v;
    else if (strcmp(a, "--comm") == 0) q.comm = v;
    else if (strcmp(a, "--system") == 0) q.system = v;
    else if (strcmp(a, "--topology") == 0) q.topology = v;
    else if (strcmp(a, "--out") == 0) q.out = v;
    else if (strcmp(a, "--hardware") == 0) q.hardware = v;
    else if (strcmp(a, "--rows") == 0) q.rows = v;
    else if (strcmp(a, "--stack") == 0) q.stack = v;
    else if (strcmp(a, "--repeat") == 0) q.repeat = v;
    else if (strcmp(a, "--repeat-hardware") == 0) q.repeat_hardware = v;
    else if (strcmp(a, "--read") == 0) q.read = v;
    else if (strcmp(a, "--unread") == 0) q.unread = v;
    else if (strcmp(a, "--families") == 0) {
      /* the names are checked against the operator plugins once the registry is open (a
       * third-party family fits like a built-in one); an empty one is refused here */
      size_t n = strlen(v);
      if (n == 0 || v[0] == ',' || v[n - 1] == ',' || strstr(v, ",,") != NULL)
        return sc_cli_usage_error("fit", "--families: an empty name in '%s'", v);
      q.families = v;
    }
    else if (strcmp(a, "--hybrid-features") == 0) {
      if (strcmp(v, "shape") != 0 && strcmp(v, "all") != 0)
        return sc_cli_usage_error("fit", "--hybrid-features: '%s' is not 'shape' or 'all'", v);
      q.hybrid_features = strcmp(v, "all") == 0;
    }
    else if (strcmp(a, "--select") == 0) {
      static const char *const rules[] = {"domain", "chain", "guard", "either", "both"};
      size_t k = 0;
      while (k < sizeof rules / sizeof rules[0] && strcmp(v, rules[k]) != 0) k++;
      if (k == sizeof rules / sizeof rules[0])
        return sc_cli_usage_error("fit", "--select: '%s' is not 'domain', 'chain', 'guard', "
                                  "'either' or 'both'", v);
      q.select = (sc_fit_select)k;
    }
    else if (strcmp(a, "--folds") == 0) {
      long k = strtol(v, &end, 10);
      if (errno || *end || k < 2 || k > 20)
        return sc_cli_usage_error("fit", "--folds: '%s' is not a whole number in [2, 20]", v);
      q.folds = (uint32_t)k;
    } else if (strcmp(a, "--rounds") == 0) {
      long k = strtol(v, &end, 10);
      if (errno || *end || k < 1 || k > 10000)
        return sc_cli_usage_error("fit", "--rounds: '%s' is not a whole number in [1, 10000]", v);
      q.opts.gbdt_rounds = (uint32_t)k;
    } else {
      double x = strtod(v, &end);
      int bad = errno || *end || !isfinite(x);
      if (strcmp(a, "--heldout") == 0) {
        if (bad || !(x > 0 && x < 1))
          return sc_cli_usage_error("fit", "--heldout: '%s' is not a fraction in (0, 1)", v);
        q.heldout = x;
      } else if (strcmp(a, "--margin") == 0) {
        if (bad || !(x >= 0 && x <= 50))
          return sc_cli_usage_error("fit", "--margin: '%s' is not a number of MAPE points in "
                                    "[0, 50]", v);
        q.margin = x / 100.0;
      } else if (strcmp(a, "--train") == 0) {
        if (bad || !(x > 0 && x < 1))
          return sc_cli_usage_error("fit", "--train: '%s' is not a fraction in (0, 1)", v);
        q.train = x;
      } else if (strcmp(a, "--gain") == 0) {
        if (bad || !(x >= 0 && x <= 50))
          return sc_cli_usage_error("fit", "--gain: '%s' is not a number of MAPE points in "
                                    "[0, 50]", v);
        q.gain = x / 100.0;
      } else {
        if (bad || x < 0) return sc_cli_usage_error("fit", "--lambda: '%s' is not a number >= 0", v);
        q.opts.lambda = x;
      }
    }
  }
  if (q.comm != NULL && q.samples != NULL)
    return sc_cli_usage_error("fit", "--samples and --comm exclude each other");
  if (q.comm != NULL && q.hardware != NULL)
    return sc_cli_usage_error("fit", "--hardware is for --samples; --comm takes the topology "
                              "from its rows");
  if (q.comm != NULL && q.system == NULL && q.topology == NULL)
    return sc_cli_usage_error("fit", "--comm needs --system (the nccl-tests rows of one "
                              "system) or --topology (a table measured on one topology)");
  if (q.system != NULL && q.topology != NULL)
    return sc_cli_usage_error("fit", "--system and --topology exclude each other");
  if (q.comm == NULL && q.system != NULL) return sc_cli_usage_error("fit", "--system is for --comm");
  if (q.comm == NULL && q.topology != NULL)
    return sc_cli_usage_error("fit", "--topology is for --comm");
  if (q.comm != NULL && q.repeat != NULL)
    return sc_cli_usage_error("fit", "--repeat is for --samples (a second samples file)");
  if (q.comm != NULL && q.stack != NULL)
    return sc_cli_usage_error("fit", "--stack is for --samples");
  if (q.repeat != NULL && q.stack != NULL)
    return sc_cli_usage_error("fit", "--stack and --repeat exclude each other");
  if (q.comm != NULL && q.train < 1.0)
    return sc_cli_usage_error("fit", "--train is for --samples");
  if (q.repeat != NULL && q.train < 1.0)
    return sc_cli_usage_error("fit", "--train and --repeat exclude each other");
  if (q.repeat == NULL && q.repeat_hardware != NULL)
    return sc_cli_usage_error("fit", "--repeat-hardware is for --repeat");
  if (q.comm != NULL && (q.read != NULL || q.unread != NULL))
    return sc_cli_usage_error("fit", "--read and --unread are for --samples (a collective's "
                              "residual reads every feature)");
  if (q.comm != NULL && q.families != NULL)
    return sc_cli_usage_error("fit", "--families is for --samples (--comm fits every collective "
                              "of the system)");
  if (q.samples == NULL && q.comm == NULL)
    return sc_cli_usage_error("fit", "--samples is required (or --comm)");
  if (q.out == NULL) return sc_cli_usage_error("fit", "--out is required");
  if (q.comm == NULL && q.hardware == NULL) {
    if (!sc_cli_hardware_beside(q.samples, hwbuf, sizeof hwbuf))
      return sc_cli_usage_error("fit", "--hardware is required when the samples file is not "
                                "in a folder named after its device");
    q.hardware = hwbuf;
  }
  if (q.repeat != NULL && q.repeat_hardware == NULL) { /* the same convention for the second file */
    if (!sc_cli_hardware_beside(q.repeat, hwbuf2, sizeof hwbuf2))
      return sc_cli_usage_error("fit", "--repeat-hardware is required when the --repeat file "
                                "is not in a folder named after its device");
    q.repeat_hardware = hwbuf2;
  }

  if (sc_cli_registry_open(&reg, &err) != SC_OK) goto fail;
  for (const char *p = q.families; p != NULL;) { /* each an operator plugin's family */
    size_t k = strcspn(p, ",");
    char name[SC_RESID_NAME_MAX];
    snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name ? k : sizeof name - 1), p);
    if (k >= sizeof name || sc_registry_op(reg, name) == NULL) {
      sc_registry_free(reg);
      return sc_cli_usage_error("fit", "--families: '%.*s' is not an operator family (no "
                                "operator plugin of that name; stepcast plugins lists them)",
                                (int)(k < 64 ? k : 64), p);
    }
    p = p[k] == '\0' ? NULL : p + k + 1;
  }
  if (sc_fit_run(reg, &q, &fit, &err) != SC_OK) goto fail;
  if (sc_fit_note(fit)[0] != '\0') sc_cli_eprintf("stepcast fit: note: %s", sc_fit_note(fit));
  if (sc_fit_write(fit, &err) != SC_OK) goto fail;
  sc_fit_print(fit, stdout);
  printf("\nwrote %s/residuals.toml and %s/report.md\n", q.out, q.out);
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  sc_fit_free(fit);
  sc_registry_free(reg);
  return rc;
}
