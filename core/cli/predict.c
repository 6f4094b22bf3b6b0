/* stepcast predict: one training iteration of a model on a cluster. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "stepcast/afile.h"
#include "job.h"
#include "stepcast/estimate.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"

static void predict_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast predict --model M --topology T [--gpus N] [--tp --pp --dp --cp]\n"
          "                        --global-batch B [options] [--json | --csv]\n"
          "                        [--timeline FILE.json] [--plot FILE.svg]\n"
          "       stepcast predict --job FILE.toml [options]\n\n"
          "Predicts the time of one training iteration and what follows from it: the\n"
          "breakdown (compute by operator family, exposed TP/CP/DP/P2P communication, pipeline\n"
          "bubble, optimizer), TFLOP/s per GPU, MFU/HFU, tokens per second, memory per GPU and\n"
          "the time to train --tokens. One of tp, pp, dp, cp may be left out and is derived\n"
          "from --gpus (dp by preference). A boolean option --x may be written --no-x.\n\n"
          "job options (also the keys of a [job] table, with '_' for '-'):\n");
  sc_cli_job_help(out);
  fprintf(out,
          "\noutput:\n"
          "  --json | --csv           machine-readable result (default: a table)\n"
          "  --timeline FILE.json     the predicted iteration as a Chrome/Perfetto trace: per\n"
          "                           stage its streams' passes, and inside each pass of the\n"
          "                           first --timeline-ops micro-batches its operators and\n"
          "                           collectives, named as their kernels are\n"
          "  --timeline-ops K         operator slices for micro-batches below K of every stage\n"
          "                           and chunk (default 4; 0: the passes only); at most\n"
          "                           1,000,000 slices are written\n"
          "  --plot FILE.svg          the breakdown as a stacked bar chart\n"
          "  --allow-oom              predict even when memory exceeds the device\n");
}

static int write_file(const char *path, int (*fn)(FILE *, const void *, const void *, sc_error *),
                      const void *a, const void *b, sc_error *err) {
  sc_afile af; /* a temporary renamed over path once whole: a failure keeps the old file */
  int rc;
  if ((rc = sc_afile_open(&af, path, err)) != SC_OK) return rc;
  if ((rc = fn(af.f, a, b, err)) != SC_OK) {
    sc_afile_abort(&af);
    return rc;
  }
  return sc_afile_commit(&af, err);
}

/* What the timeline renders: the schedule, the result and the operators behind them. */
typedef struct timeline_args {
  const sc_sched_result *sched;
  const sc_timeline_detail *detail;
  uint32_t op_microbatches;
} timeline_args;

static int do_trace(FILE *f, const void *a, const void *r, sc_error *err) {
  const timeline_args *t = a;
  return sc_report_trace_ops(f, t->sched, (const sc_result *)r, t->detail, t->op_microbatches,
                             err);
}
static int do_svg(FILE *f, const void *r, const void *unused, sc_error *err) {
  (void)unused;
  return sc_report_svg(f, (const sc_result *)r, err);
}

int sc_cli_predict(int argc, char **argv) {
  sc_cli_job job;
  const char *timeline = NULL, *plot = NULL;
  uint32_t timeline_ops = 4;
  int json = 0, csv = 0, rc = 1;
  sc_error err;
  sc_predictor *pr = NULL;
  static sc_cli_job_inputs in; /* large: not on the stack */
  sc_result res;
  sc_sched_result sched;

  sc_cli_job_init(&job);
  sc_error_clear(&err);
  /* --job first, so that flags override the file wherever they stand. */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--job") == 0) {
      if (i + 1 >= argc) return sc_cli_usage_error("predict", "--job needs a file");
      if (sc_cli_job_load(&job, argv[i + 1], &err) != SC_OK) return sc_cli_fail(&err);
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char name[64];
    const char *val = NULL, *eq;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      predict_usage(stdout);
      return 0;
    }
    if (strncmp(a, "--", 2) != 0) return sc_cli_usage_error("predict", "unexpected '%s'", a);
    eq = strchr(a, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
    if (eq) val = eq + 1;
    if (strcmp(name, "json") == 0) { json = 1; continue; }
    if (strcmp(name, "csv") == 0) { csv = 1; continue; }
    if (strcmp(name, "allow-oom") == 0) { job.opts.allow_oom = 1; continue; }
    if (strcmp(name, "job") != 0 && strcmp(name, "timeline") != 0 && strcmp(name, "plot") != 0 &&
        strcmp(name, "timeline-ops") != 0 && !sc_cli_job_known(name))
      return sc_cli_usage_error("predict", "unknown option '--%s'", name);
    if (!sc_cli_job_is_bool(name) && val == NULL) {
      if (i + 1 >= argc) return sc_cli_usage_error("predict", "option '--%s' needs a value", name);
      val = argv[++i];
    }
    if (strcmp(name, "job") == 0) continue;
    if (strcmp(name, "timeline") == 0) { timeline = val; continue; }
    if (strcmp(name, "plot") == 0) { plot = val; continue; }
    if (strcmp(name, "timeline-ops") == 0) {
      char *end;
      unsigned long k = strtoul(val, &end, 10);
      if (val[0] < '0' || val[0] > '9' || *end != '\0' || k > UINT32_MAX)
        return sc_cli_usage_error("predict", "--timeline-ops: '%s' is not a whole number of "
                                  "micro-batches", val);
      timeline_ops = (uint32_t)k;
      continue;
    }
    int st = sc_cli_job_set(&job, name, val, &err);
    if (st == SC_ENOTFOUND) return sc_cli_usage_error("predict", "unknown option '--%s'", name);
    if (st != SC_OK) return sc_cli_usage_error("predict", "%s", err.msg);
  }
  if (json && csv) return sc_cli_usage_error("predict", "--json and --csv exclude each other");
  if (job.model[0] == '\0') return sc_cli_usage_error("predict", "--model is required");
  if (job.topology[0] == '\0') return sc_cli_usage_error("predict", "--topology is required");

  memset(&in, 0, sizeof in);
  if (sc_cli_job_open(&job, &in, &err) != SC_OK) goto fail;
  if (sc_predictor_new(in.reg, &pr, &err) != SC_OK) goto fail;
  job.opts.record_timeline = (timeline != NULL);
  if (sc_predict(pr, &in.model, &in.topo, &in.dev, &job.par, &job.opts, &res, &sched, &err) != SC_OK)
    goto fail;
  if (json) rc = sc_report_json(stdout, &res, &err);
  else if (csv) rc = sc_report_csv(stdout, &res, &err);
  else rc = sc_report_table(stdout, &res, &err);
  if (rc != SC_OK) goto fail;
  if (timeline) {
    sc_timeline_detail detail;
    timeline_args ta = {&sched, NULL, timeline_ops};
    if (timeline_ops > 0) {
      if (sc_predict_timeline(pr, &detail, &err) != SC_OK) goto fail;
      ta.detail = &detail;
    }
    if (write_file(timeline, do_trace, &ta, &res, &err) != SC_OK) goto fail;
  }
  if (plot && write_file(plot, do_svg, &res, NULL, &err) != SC_OK) goto fail;
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  sc_predictor_free(pr);
  sc_cli_job_inputs_free(&in);
  return rc;
}
