/*
 * stepcast trace: replay PyTorch profiler (Kineto) traces as a dependency graph, and
 * what-if edits of them (docs/trace.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "stepcast/afile.h"
#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/predict.h"
#include "stepcast/report.h"
#include "stepcast/stack.h"
#include "stepcast/trace.h"

static const char *const CMD = "trace";

static void trace_usage(FILE *out) {
  fprintf(out,
          "usage: stepcast trace replay FILE... [--timeline OUT.json] [--json] [--quiet]\n"
          "       stepcast trace whatif FILE... --set KEY=VALUE... [--topology T]\n"
          "                                     [--estimator E [--residuals DIR]]\n"
          "                                     [--timeline OUT.json] [--json] [--quiet]\n\n"
          "FILE is a PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip, one per\n"
          "rank of one job (PyTorch 1.8-1.9 category names are read too). replay rebuilds\n"
          "the dependency graph (CPU threads, launches, streams, event waits,\n"
          "synchronisation, collectives across ranks) and replays it with the measured\n"
          "durations: per rank and ProfilerStep#N span measured, replayed, error and the\n"
          "breakdown of the GPU's time (compute, exposed communication, memory copies,\n"
          "idle), then Lumos's (exposed compute, overlapped, exposed communication, other)\n"
          "and HTA's (idle, compute, non-compute, comm/comp overlap %%). whatif replays with\n"
          "edits:\n"
          "  --set dp=N            data-parallel degree N (collectives re-timed on --topology;\n"
          "                        the measured degree is the trace's world_size, or\n"
          "                        --set dp_from=M)\n"
          "  --set hardware=H      another GPU (hardware/ name or file); the measured one is\n"
          "                        --set hardware_from=H0 (required with hardware)\n"
          "  --set dtype=D         dtype of GEMM/attention kernels whose name states none\n"
          "                        (default bf16)\n"
          "  --set overlap=none    communication serialised onto the compute stream\n"
          "  --set layers=N        N layers: repeating per-layer units of every iteration\n"
          "                        (found from the operator structure) removed or copied\n"
          "  --topology T          topology of the dp edit (topologies/ name or file)\n"
          "  --estimator E         the dp edit's collective estimator: analytical (default),\n"
          "                        hybrid or learned with the topology's collective residuals\n"
          "                        (stepcast fit --comm): --residuals DIR, else\n"
          "                        <name>/residuals beside the topology file\n"
          "  --timeline OUT.json   write the replayed timeline as a Chrome trace\n"
          "  --json                the same as one JSON document (docs/schemas/trace.json)\n"
          "  --quiet               no per-file summary\n"
          "Rules and limits of every edit: docs/trace.md.\n\n"
          "       stepcast trace compare FILE... --model M --topology T [job options as\n"
          "                                      predict takes] [--json] [--quiet]\n\n"
          "compare predicts the job (as stepcast predict does, estimator and stack included)\n"
          "and lines it up with the traces, one per rank: per step (ProfilerStep#N, else the\n"
          "whole trace) the measured span against the predicted iteration, and per kernel\n"
          "family the measured GPU time (kernels, memcpy, memset) against the prediction's\n"
          "operators and collectives of the rank's pipeline stage, named as their kernels are;\n"
          "kernels no family's name pattern matches are a row of their own (unmapped), GPU\n"
          "work outside every step is counted apart. --json: docs/schemas/trace-compare.json.\n");
}

static int parse_u32(const char *s, uint32_t *out) {
  char *end;
  if (s[0] < '0' || s[0] > '9') return -1;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (*end != '\0' || errno != 0 || v == 0 || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

static void print_info(const sc_trace *t, const char *path) {
  sc_trace_info in;
  sc_trace_get_info(t, &in);
  printf("%s: rank %d of %d, %s, %.1f MB of JSON, %llu events: kept %llu (", path, in.rank,
         in.world_size, in.device_name[0] ? in.device_name : "device unknown",
         (double)in.json_bytes / 1e6, (unsigned long long)in.events,
         (unsigned long long)in.kept);
  for (int k = 0; k < SC_TRACE_KIND_COUNT; k++) {
    printf("%s%s %llu", k ? ", " : "", sc_trace_kind_name((sc_trace_kind)k),
           (unsigned long long)in.by_kind[k]);
  }
  printf("), skipped %llu", (unsigned long long)in.skipped);
  const char *kind;
  uint64_t count;
  for (size_t i = 0; sc_trace_skipped_kind(t, i, &kind, &count) == SC_OK; i++) {
    printf("%s%s %llu", i ? ", " : " (", kind, (unsigned long long)count);
    if (sc_trace_skipped_kind(t, i + 1, NULL, NULL) != SC_OK) printf(")");
  }
  if (in.legacy > 0)
    printf("; %llu kept events of PyTorch 1.8-1.9 category names", (unsigned long long)in.legacy);
  printf("\n");
}

static void print_graph(const sc_trace_result *r, size_t nf) {
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  printf("graph: %llu nodes, %llu edges (launch %llu, stream %llu, event wait %llu, "
         "inferred wait %llu, sync %llu), %llu collectives matched across ranks, %llu waits "
         "unmatched\n",
         (unsigned long long)g.nodes, (unsigned long long)g.edges,
         (unsigned long long)g.launch_edges, (unsigned long long)g.stream_edges,
         (unsigned long long)g.event_edges, (unsigned long long)g.inferred_edges,
         (unsigned long long)g.sync_edges,
         (unsigned long long)g.collectives, (unsigned long long)g.unmatched_waits);
  if (nf > 1)
    printf("across ranks: %llu by process group and sequence number, %llu by order (%llu "
           "pairs by order refused), %llu send/recv without a peer, %llu without a "
           "counterpart: kept as measured\n",
           (unsigned long long)g.coll_by_key, (unsigned long long)g.coll_by_order,
           (unsigned long long)g.order_refused, (unsigned long long)g.p2p_unpaired,
           (unsigned long long)g.comm_alone);
}

/* One-line warnings, once: collectives matched by order (the trace states no process
 * group and sequence number), and collective kinds guessed. */
static void warn_matching(const sc_trace_result *r, const char *const *files, size_t nf) {
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  if (nf > 1 && g.coll_by_order + g.order_refused + g.p2p_unpaired > 0)
    sc_cli_eprintf("stepcast: warning: communication kernels without a process group and "
                   "sequence number (record_param_comms 'Process Group Name', 'Seq'): %llu "
                   "collectives matched across ranks by their order on each stream, %llu "
                   "pairs by order refused (their ends disagree), %llu send/recv kernels "
                   "without a peer kept as measured",
                   (unsigned long long)g.coll_by_order, (unsigned long long)g.order_refused,
                   (unsigned long long)g.p2p_unpaired);
  if (g.kind_guessed > 0 && g.kind_guessed_rank >= 0 && (size_t)g.kind_guessed_rank < nf)
    sc_cli_eprintf("stepcast: warning: %s: %llu communication kernels (first '%s') state no "
                   "collective kind (not in their name, nor a 'Collective name' of theirs or "
                   "of their record_param_comms, nor an nccl: annotation): taken as "
                   "all-reduce", files[g.kind_guessed_rank],
                   (unsigned long long)g.kind_guessed, g.kind_guessed_name);
}

/* The overlap percentage, "-" when the span has no communication. */
static const char *pct(double v, char *buf, size_t n) {
  if (isnan(v)) snprintf(buf, n, "-");
  else snprintf(buf, n, "%.1f", v);
  return buf;
}

/* Lumos's and HTA's breakdown of each span (ms). */
static void print_breakdown(const sc_trace_iter *it, size_t ni, const char *what) {
  printf("breakdown of the %s time, ms: Lumos (exposed compute, overlapped, exposed comm, "
         "other = idle or copies only) | HTA (idle, compute, non-compute, comm/comp overlap "
         "%%)\n", what);
  printf("%-22s %4s %10s %10s %10s %10s | %10s %10s %10s %9s\n", "iteration", "rank",
         "exp comp", "overlap", "exp comm", "other", "idle", "compute", "non-comp",
         "overlap %");
  for (size_t i = 0; i < ni; i++) {
    char b[32];
    printf("%-22s %4d %10.3f %10.3f %10.3f %10.3f | %10.3f %10.3f %10.3f %9s\n", it[i].name,
           it[i].rank, it[i].exposed_compute_s * 1e3, it[i].overlapped_s * 1e3,
           it[i].exposed_comm_s * 1e3, it[i].other_s * 1e3, it[i].idle_s * 1e3,
           it[i].compute_s * 1e3, (it[i].comm_exposed_s + it[i].memory_s) * 1e3,
           pct(it[i].comm_overlap_pct, b, sizeof b));
  }
}

/* ---- --json (docs/schemas/trace.json) ---- */

static void jnum(FILE *o, double v) {
  if (isfinite(v)) fprintf(o, "%.9g", v);
  else fputs("null", o);
}

static void json_breakdown(FILE *o, const sc_trace_iter *it) {
  fputs("{\"gpu\": {\"compute_s\": ", o);
  jnum(o, it->compute_s);
  fputs(", \"comm_exposed_s\": ", o);
  jnum(o, it->comm_exposed_s);
  fputs(", \"memcpy_s\": ", o);
  jnum(o, it->memory_s);
  fputs(", \"idle_s\": ", o);
  jnum(o, it->idle_s);
  fputs("}, \"lumos\": {\"exposed_compute_s\": ", o);
  jnum(o, it->exposed_compute_s);
  fputs(", \"overlapped_s\": ", o);
  jnum(o, it->overlapped_s);
  fputs(", \"exposed_comm_s\": ", o);
  jnum(o, it->exposed_comm_s);
  fputs(", \"other_s\": ", o);
  jnum(o, it->other_s);
  fputs("}, \"hta\": {\"idle_s\": ", o);
  jnum(o, it->idle_s);
  fputs(", \"compute_s\": ", o);
  jnum(o, it->compute_s);
  fputs(", \"non_compute_s\": ", o);
  jnum(o, it->comm_exposed_s + it->memory_s);
  fputs(", \"comm_comp_overlap_pct\": ", o);
  jnum(o, it->comm_overlap_pct);
  fputs("}}", o);
}

static void json_head(FILE *o, int whatif, sc_trace *const *tr, const char *const *files,
                      size_t nf, const sc_trace_result *base) {
  fprintf(o, "{\n  \"schema_version\": %d,\n  \"command\": \"%s\",\n  \"files\": [",
          SC_REPORT_SCHEMA_VERSION, whatif ? "trace whatif" : "trace replay");
  for (size_t i = 0; i < nf; i++) {
    sc_trace_info in;
    sc_trace_get_info(tr[i], &in);
    fprintf(o, "%s\n    {\"path\": ", i ? "," : "");
    sc_json_string(o, files[i]);
    fprintf(o, ", \"rank\": %d, \"world_size\": %d, \"device\": ", in.rank, in.world_size);
    if (in.device_name[0]) sc_json_string(o, in.device_name);
    else fputs("null", o);
    fprintf(o, ", \"events\": %llu, \"kept\": %llu, \"skipped\": %llu, "
            "\"legacy_events\": %llu}", (unsigned long long)in.events,
            (unsigned long long)in.kept, (unsigned long long)in.skipped,
            (unsigned long long)in.legacy);
  }
  sc_trace_graph_info g;
  sc_trace_result_graph(base, &g);
  fprintf(o, "\n  ],\n  \"graph\": {\"nodes\": %llu, \"edges\": %llu, \"launch_edges\": %llu, "
          "\"stream_edges\": %llu, \"event_edges\": %llu, \"inferred_edges\": %llu, "
          "\"sync_edges\": %llu, \"unmatched_waits\": %llu, \"collectives\": %llu, "
          "\"coll_by_key\": %llu, \"coll_by_order\": %llu, \"order_refused\": %llu, "
          "\"p2p_unpaired\": %llu, \"comm_alone\": %llu, \"kind_guessed\": %llu}",
          (unsigned long long)g.nodes, (unsigned long long)g.edges,
          (unsigned long long)g.launch_edges, (unsigned long long)g.stream_edges,
          (unsigned long long)g.event_edges, (unsigned long long)g.inferred_edges,
          (unsigned long long)g.sync_edges, (unsigned long long)g.unmatched_waits,
          (unsigned long long)g.collectives, (unsigned long long)g.coll_by_key,
          (unsigned long long)g.coll_by_order, (unsigned long long)g.order_refused,
          (unsigned long long)g.p2p_unpaired, (unsigned long long)g.comm_alone,
          (unsigned long long)g.kind_guessed);
}

static int write_timeline(const char *path, const sc_trace_result *r) {
  sc_error err = {0};
  sc_afile af; /* a temporary renamed over path once whole: a failure keeps the old file */
  if (sc_afile_open(&af, path, &err) != SC_OK) return sc_cli_fail(&err);
  int rc = sc_trace_timeline(af.f, r, &err);
  if (rc != SC_OK) {
    sc_afile_abort(&af);
    return sc_cli_fail(&err);
  }
  if (sc_afile_commit(&af, &err) != SC_OK) return sc_cli_fail(&err);
  return 0;
}

/* ---- trace compare ---- */

static void cmp_err(FILE *o, double pred, double meas, int json) {
  if (meas > 0 && isfinite(pred)) {
    if (json) jnum(o, 100.0 * (pred - meas) / meas);
    else fprintf(o, " %9.1f", 100.0 * (pred - meas) / meas);
  } else {
    fputs(json ? "null" : "         -", o);
  }
}

static void compare_text(const sc_trace_compare *c, const sc_result *res, size_t nf) {
  size_t ns;
  const sc_trace_cmp_step *st = sc_trace_compare_steps(c, &ns);
  const sc_parallel *p = &res->parallel;
  printf("prediction: %s on %s (%s), %u GPUs = TP %u x PP %u x DP %u x CP %u, %s, %u "
         "micro-batches of %u, seq %u; estimator %s%s%s: iteration %.3f ms\n", res->model,
         res->topology, res->hardware, res->gpus, p->tp, p->pp, p->dp, p->cp,
         sc_cli_schedule_name(p->schedule), res->microbatches, p->micro_batch, p->seq_len,
         res->estimator, res->stack[0] ? ", stack " : "", res->stack, res->iteration_s * 1e3);
  double sm = 0, sp = 0;
  for (size_t i = 0; i < ns; i++) {
    const sc_trace_cmp_step *s = &st[i];
    printf("\nstep %s, trace %d (rank %d, pipeline stage %u): measured %.3f ms, predicted "
           "%.3f ms (", s->name, s->rank, s->global_rank, s->stage, s->measured_s * 1e3,
           s->predicted_s * 1e3);
    if (s->measured_s > 0) printf("%+.1f %%)\n", 100.0 * (s->predicted_s - s->measured_s) /
                                                     s->measured_s);
    else printf("-)\n");
    sm += s->measured_s;
    sp += s->predicted_s;
    printf("  %-12s %8s %12s %13s %9s\n", "family", "kernels", "measured ms", "predicted ms",
           "error %");
    for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) {
      if (s->kernels[r] == 0 && !(s->predicted_row_s[r] > 0)) continue;
      printf("  %-12s %8llu %12.3f ", sc_trace_compare_row_name(r),
             (unsigned long long)s->kernels[r], s->measured_row_s[r] * 1e3);
      if (r == SC_TRACE_CMP_UNMAPPED) printf("%13s %9s\n", "-", "-");
      else {
        printf("%13.3f", s->predicted_row_s[r] * 1e3);
        cmp_err(stdout, s->predicted_row_s[r], s->measured_row_s[r], 0);
        printf("\n");
      }
    }
    uint64_t nk = 0;
    for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) nk += s->kernels[r];
    printf("  %-12s %8llu %12.3f %13.3f", "GPU total", (unsigned long long)nk,
           s->gpu_measured_s * 1e3, s->gpu_predicted_s * 1e3);
    cmp_err(stdout, s->gpu_predicted_s, s->gpu_measured_s, 0);
    printf("\n  predicted by operator family, ms:");
    for (uint32_t k = 0; k < s->nopfam; k++)
      printf("%s %s %.3f (%s)", k ? "," : "", s->opfam[k], s->opfam_s[k] * 1e3,
             sc_trace_compare_row_name(s->opfam_row[k]));
    printf("\n");
  }
  const char *name;
  uint64_t cnt;
  double ts;
  size_t nu = 0;
  while (sc_trace_compare_unmapped(c, nu, NULL, NULL, NULL) == SC_OK) nu++;
  if (nu > 0) {
    printf("\nunmapped kernels (no family's name pattern; their own row, in no family's): %zu "
           "name%s\n", nu, nu == 1 ? "" : "s");
    for (size_t i = 0; i < nu && i < 10; i++) {
      sc_trace_compare_unmapped(c, i, &name, &cnt, &ts);
      printf("  %8.3f ms %6llu x  %.100s\n", ts * 1e3, (unsigned long long)cnt, name);
    }
    if (nu > 10) printf("  ... %zu more (--json lists them all)\n", nu - 10);
  }
  for (size_t r = 0; r < nf; r++) {
    sc_trace_compare_outside(c, r, &cnt, &ts);
    if (cnt > 0)
      printf("GPU work outside every step, trace %zu: %llu events, %.3f ms (not compared)\n", r,
             (unsigned long long)cnt, ts * 1e3);
  }
  if (ns > 0)
    printf("mean over %zu step%s: measured %.3f ms, predicted %.3f ms (%+.1f %%)\n", ns,
           ns == 1 ? "" : "s", sm / ns * 1e3, sp / ns * 1e3, sm > 0 ? 100.0 * (sp - sm) / sm : 0.0);
}

static void compare_json(FILE *o, const sc_trace_compare *c, const sc_result *res,
                         sc_trace *const *tr, const char *const *files, size_t nf) {
  const sc_parallel *p = &res->parallel;
  fprintf(o, "{\n  \"schema_version\": %d,\n  \"command\": \"trace compare\",\n  \"files\": [",
          SC_REPORT_SCHEMA_VERSION);
  for (size_t i = 0; i < nf; i++) {
    sc_trace_info in;
    sc_trace_get_info(tr[i], &in);
    fprintf(o, "%s\n    {\"path\": ", i ? "," : "");
    sc_json_string(o, files[i]);
    fprintf(o, ", \"rank\": %d, \"world_size\": %d, \"device\": ", in.rank, in.world_size);
    if (in.device_name[0]) sc_json_string(o, in.device_name);
    else fputs("null", o);
    fprintf(o, ", \"events\": %llu, \"kept\": %llu}", (unsigned long long)in.events,
            (unsigned long long)in.kept);
  }
  fputs("\n  ],\n  \"prediction\": {\"model\": ", o);
  sc_json_string(o, res->model);
  fputs(", \"topology\": ", o);
  sc_json_string(o, res->topology);
  fputs(", \"hardware\": ", o);
  sc_json_string(o, res->hardware);
  fputs(", \"estimator\": ", o);
  sc_json_string(o, res->estimator);
  fputs(", \"stack\": ", o);
  if (res->stack[0]) sc_json_string(o, res->stack);
  else fputs("null", o);
  fprintf(o, ", \"gpus\": %u, \"tp\": %u, \"pp\": %u, \"dp\": %u, \"cp\": %u, \"schedule\": ",
          res->gpus, p->tp, p->pp, p->dp, p->cp);
  sc_json_string(o, sc_cli_schedule_name(p->schedule));
  fprintf(o, ", \"microbatches\": %u, \"micro_batch\": %u, \"seq_len\": %u, \"iteration_s\": ",
          res->microbatches, p->micro_batch, p->seq_len);
  jnum(o, res->iteration_s);
  fputs("},\n  \"steps\": [", o);
  size_t ns;
  const sc_trace_cmp_step *st = sc_trace_compare_steps(c, &ns);
  double sm = 0, sp = 0;
  for (size_t i = 0; i < ns; i++) {
    const sc_trace_cmp_step *s = &st[i];
    sm += s->measured_s;
    sp += s->predicted_s;
    fprintf(o, "%s\n    {\"name\": ", i ? "," : "");
    sc_json_string(o, s->name);
    fprintf(o, ", \"trace\": %d, \"rank\": %d, \"stage\": %u, \"measured_s\": ", s->rank,
            s->global_rank, s->stage);
    jnum(o, s->measured_s);
    fputs(", \"predicted_s\": ", o);
    jnum(o, s->predicted_s);
    fputs(", \"error_pct\": ", o);
    cmp_err(o, s->predicted_s, s->measured_s, 1);
    fputs(", \"gpu_measured_s\": ", o);
    jnum(o, s->gpu_measured_s);
    fputs(", \"gpu_predicted_s\": ", o);
    jnum(o, s->gpu_predicted_s);
    fputs(", \"gpu_error_pct\": ", o);
    cmp_err(o, s->gpu_predicted_s, s->gpu_measured_s, 1);
    fputs(",\n     \"families\": [", o);
    for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) {
      fprintf(o, "%s{\"family\": \"%s\", \"kernels\": %llu, \"measured_s\": ", r ? ", " : "",
              sc_trace_compare_row_name(r), (unsigned long long)s->kernels[r]);
      jnum(o, s->measured_row_s[r]);
      fputs(", \"predicted_s\": ", o);
      if (r == SC_TRACE_CMP_UNMAPPED) fputs("null", o);
      else jnum(o, s->predicted_row_s[r]);
      fputs(", \"error_pct\": ", o);
      cmp_err(o, r == SC_TRACE_CMP_UNMAPPED ? NAN : s->predicted_row_s[r], s->measured_row_s[r], 1);
      fputs("}", o);
    }
    fputs("],\n     \"predicted_by_op_family\": [", o);
    for (uint32_t k = 0; k < s->nopfam; k++) {
      fprintf(o, "%s{\"family\": ", k ? ", " : "");
      sc_json_string(o, s->opfam[k]);
      fprintf(o, ", \"row\": \"%s\", \"predicted_s\": ",
              sc_trace_compare_row_name(s->opfam_row[k]));
      jnum(o, s->opfam_s[k]);
      fputs("}", o);
    }
    fputs("]}", o);
  }
  fputs("\n  ],\n  \"unmapped\": [", o);
  const char *name;
  uint64_t cnt;
  double ts;
  for (size_t i = 0; sc_trace_compare_unmapped(c, i, &name, &cnt, &ts) == SC_OK; i++) {
    fprintf(o, "%s\n    {\"name\": ", i ? "," : "");
    sc_json_string(o, name);
    fprintf(o, ", \"count\": %llu, \"time_s\": ", (unsigned long long)cnt);
    jnum(o, ts);
    fputs("}", o);
  }
  fputs("\n  ],\n  \"outside\": [", o);
  for (size_t r = 0; r < nf; r++) {
    sc_trace_compare_outside(c, r, &cnt, &ts);
    fprintf(o, "%s{\"trace\": %zu, \"events\": %llu, \"time_s\": ", r ? ", " : "", r,
            (unsigned long long)cnt);
    jnum(o, ts);
    fputs("}", o);
  }
  fprintf(o, "],\n  \"summary\": {\"steps\": %zu, \"mean_measured_s\": ", ns);
  jnum(o, ns ? sm / (double)ns : 0);
  fputs(", \"mean_predicted_s\": ", o);
  jnum(o, ns ? sp / (double)ns : 0);
  fputs(", \"error_pct\": ", o);
  cmp_err(o, sp, sm, 1);
  fputs("}\n}\n", o);
}

static int trace_compare(int argc, char **argv) {
  static const char *const C = "trace compare";
  sc_cli_job job;
  sc_error err;
  int json = 0, quiet = 0, rc = 1;
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  sc_trace **tr = calloc((size_t)argc + 1, sizeof *tr);
  size_t nf = 0;
  sc_predictor *pr = NULL;
  sc_trace_compare *cmp = NULL;
  static sc_cli_job_inputs in; /* large: not on the stack */
  sc_result res;
  sc_timeline_detail detail;
  sc_cli_job_init(&job);
  sc_error_clear(&err);
  memset(&in, 0, sizeof in);
  if (files == NULL || tr == NULL) {
    fprintf(stderr, "stepcast: out of memory\n");
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--job") == 0) {
      if (i + 1 >= argc) {
        rc = sc_cli_usage_error(C, "--job needs a file");
        goto done;
      }
      if (sc_cli_job_load(&job, argv[i + 1], &err) != SC_OK) goto fail;
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL, *eq;
    char name[64];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      trace_usage(stdout);
      rc = 0;
      goto done;
    }
    if (strncmp(a, "--", 2) != 0) {
      files[nf++] = a;
      continue;
    }
    eq = strchr(a, '=');
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
    if (eq) val = eq + 1;
    if (strcmp(name, "json") == 0) { json = 1; continue; }
    if (strcmp(name, "quiet") == 0) { quiet = 1; continue; }
    if (strcmp(name, "allow-oom") == 0) { job.opts.allow_oom = 1; continue; }
    if (strcmp(name, "job") != 0 && !sc_cli_job_known(name)) {
      rc = sc_cli_usage_error(C, "unknown option '--%s'", name);
      goto done;
    }
    if (!sc_cli_job_is_bool(name) && val == NULL) {
      if (i + 1 >= argc) {
        rc = sc_cli_usage_error(C, "option '--%s' needs a value", name);
        goto done;
      }
      val = argv[++i];
    }
    if (strcmp(name, "job") == 0) continue;
    int st = sc_cli_job_set(&job, name, val, &err);
    if (st != SC_OK) {
      rc = st == SC_ENOTFOUND ? sc_cli_usage_error(C, "unknown option '--%s'", name)
                              : sc_cli_usage_error(C, "%s", err.msg);
      goto done;
    }
  }
  if (nf == 0) {
    rc = sc_cli_usage_error(C, "no trace file given");
    goto done;
  }
  if (job.model[0] == '\0') {
    rc = sc_cli_usage_error(C, "--model is required (the job the traces are of)");
    goto done;
  }
  if (job.topology[0] == '\0') {
    rc = sc_cli_usage_error(C, "--topology is required");
    goto done;
  }
  for (size_t i = 0; i < nf; i++) {
    if (sc_trace_load(files[i], &tr[i], &err) != SC_OK) goto fail;
    if (!quiet && !json) print_info(tr[i], files[i]);
  }
  if (sc_cli_job_open(&job, &in, &err) != SC_OK) goto fail;
  job.opts.record_timeline = 1;
  if (sc_predictor_new(in.reg, &pr, &err) != SC_OK) goto fail;
  if (sc_predict(pr, &in.model, &in.topo, &in.dev, &job.par, &job.opts, &res, NULL, &err) != SC_OK ||
      sc_predict_timeline(pr, &detail, &err) != SC_OK ||
      sc_trace_compare_run(tr, nf, &res, &detail, &cmp, &err) != SC_OK)
    goto fail;
  for (size_t i = 0; i < nf; i++) {
    sc_trace_info in;
    sc_trace_get_info(tr[i], &in);
    if (in.world_size > 0 && (uint32_t)in.world_size != res.gpus)
      sc_cli_eprintf("stepcast: warning: %s: the traced job had %d ranks, the predicted one %u "
                     "GPUs", files[i], in.world_size, res.gpus);
  }
  if (json) {
    compare_json(stdout, cmp, &res, tr, files, nf);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fprintf(stderr, "stepcast: writing the JSON to stdout failed\n");
      goto done;
    }
  } else {
    compare_text(cmp, &res, nf);
  }
  rc = 0;
  goto done;
fail:
  rc = sc_cli_fail(&err);
done:
  sc_trace_compare_free(cmp);
  for (size_t i = 0; tr != NULL && i < nf; i++) sc_trace_free(tr[i]);
  free(tr);
  free(files);
  sc_predictor_free(pr);
  sc_cli_job_inputs_free(&in);
  return rc;
}

int sc_cli_trace(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    trace_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "compare") == 0) return trace_compare(argc - 1, argv + 1);
  int whatif;
  if (strcmp(argv[1], "replay") == 0) whatif = 0;
  else if (strcmp(argv[1], "whatif") == 0) whatif = 1;
  else return sc_cli_usage_error(CMD, "unknown action '%s' (replay, whatif or compare)", argv[1]);

  const char **files = calloc((size_t)argc, sizeof *files);
  sc_trace **tr = calloc((size_t)argc, sizeof *tr);
  size_t nf = 0;
  const char *timeline = NULL, *topo_name = NULL, *hw_name = NULL, *hw_from_name = NULL;
  const char *resid_dir = NULL, *est_name = NULL;
  sc_residuals *cres = NULL;
  int quiet = 0, rc = 0, nset = 0, json = 0;
  uint32_t layers_to = 0;
  sc_trace **etr = NULL; /* the traces after the layers edit */
  sc_trace_layers_info lay;
  memset(&lay, 0, sizeof lay);
  sc_trace_edits ed;
  memset(&ed, 0, sizeof ed);
  ed.default_dtype = SC_DTYPE_BF16;
  sc_registry *reg = NULL;
  sc_topology topo;
  sc_device hw_from, hw_to;
  sc_trace_result *base = NULL, *res = NULL;
  sc_error err = {0};
  if (files == NULL || tr == NULL) {
    fprintf(stderr, "stepcast: out of memory\n");
    rc = 1;
    goto out;
  }
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      trace_usage(stdout);
      goto out;
    } else if (strcmp(a, "--timeline") == 0 || strcmp(a, "--topology") == 0 ||
               strcmp(a, "--set") == 0 || strcmp(a, "--estimator") == 0 ||
               strcmp(a, "--residuals") == 0) {
      if (i + 1 >= argc) {
        rc = sc_cli_usage_error(CMD, "%s needs a value", a);
        goto out;
      }
      const char *v = argv[++i];
      if (strcmp(a, "--estimator") == 0) {
        if (sc_estimator_parse(v, &ed.estimator) != SC_OK) {
          rc = sc_cli_usage_error(CMD, "--estimator: '%s' is not analytical, hybrid or learned",
                                  v);
          goto out;
        }
        est_name = v;
      } else if (strcmp(a, "--residuals") == 0) resid_dir = v;
      else if (a[2] == 't' && a[3] == 'i') timeline = v;
      else if (a[2] == 't') topo_name = v;
      else {
        const char *eq = strchr(v, '=');
        if (!whatif) {
          rc = sc_cli_usage_error(CMD, "--set is for 'trace whatif'");
          goto out;
        }
        if (eq == NULL) {
          rc = sc_cli_usage_error(CMD, "--set '%s': expected KEY=VALUE", v);
          goto out;
        }
        size_t kl = (size_t)(eq - v);
        const char *val = eq + 1;
        nset++;
        if (kl == 2 && strncmp(v, "dp", 2) == 0) {
          if (parse_u32(val, &ed.dp_to) != 0) {
            rc = sc_cli_usage_error(CMD, "--set dp=%s: expected a positive integer", val);
            goto out;
          }
        } else if (kl == 7 && strncmp(v, "dp_from", 7) == 0) {
          if (parse_u32(val, &ed.dp_from) != 0) {
            rc = sc_cli_usage_error(CMD, "--set dp_from=%s: expected a positive integer", val);
            goto out;
          }
        } else if (kl == 8 && strncmp(v, "hardware", 8) == 0) {
          hw_name = val;
        } else if (kl == 13 && strncmp(v, "hardware_from", 13) == 0) {
          hw_from_name = val;
        } else if (kl == 5 && strncmp(v, "dtype", 5) == 0) {
          int found = 0;
          for (int d = 0; d < SC_DTYPE_COUNT; d++) {
            if (strcmp(val, sc_dtype_name((sc_dtype)d)) == 0) {
              ed.default_dtype = (sc_dtype)d;
              found = 1;
            }
          }
          if (!found) {
            rc = sc_cli_usage_error(CMD, "--set dtype=%s: expected fp32, tf32, bf16, fp16, "
                                    "fp8 or int8", val);
            goto out;
          }
        } else if (kl == 7 && strncmp(v, "overlap", 7) == 0) {
          if (strcmp(val, "none") == 0) ed.serialize_comm = 1;
          else if (strcmp(val, "measured") == 0) ed.serialize_comm = 0;
          else {
            rc = sc_cli_usage_error(CMD, "--set overlap=%s: expected none or measured", val);
            goto out;
          }
        } else if (kl == 6 && strncmp(v, "layers", 6) == 0) {
          if (parse_u32(val, &layers_to) != 0 || layers_to == 0) {
            rc = sc_cli_usage_error(CMD, "--set layers=%s: expected a positive integer", val);
            goto out;
          }
        } else {
          rc = sc_cli_usage_error(CMD, "--set '%.*s': unknown key (dp, dp_from, hardware, "
                                  "hardware_from, dtype, overlap, layers)", (int)kl, v);
          goto out;
        }
      }
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      rc = sc_cli_usage_error(CMD, "unknown option '%s'", a);
      goto out;
    } else {
      files[nf++] = a;
    }
  }
  if (nf == 0) {
    rc = sc_cli_usage_error(CMD, "no trace file given");
    goto out;
  }
  if (whatif && nset == 0) {
    rc = sc_cli_usage_error(CMD, "whatif needs at least one --set KEY=VALUE");
    goto out;
  }
  if (whatif && ed.dp_to > 0 && topo_name == NULL) {
    rc = sc_cli_usage_error(CMD, "--set dp needs --topology");
    goto out;
  }
  if (est_name != NULL && (!whatif || ed.dp_to == 0)) {
    rc = sc_cli_usage_error(CMD, "--estimator applies to the collectives of 'trace whatif "
                                 "--set dp=N'");
    goto out;
  }
  if (resid_dir != NULL && ed.estimator == SC_ESTIMATOR_ANALYTICAL) {
    rc = sc_cli_usage_error(CMD, "--residuals needs --estimator hybrid or learned");
    goto out;
  }
  if (whatif && (hw_name != NULL) != (hw_from_name != NULL)) {
    rc = sc_cli_usage_error(CMD, "--set hardware and --set hardware_from go together");
    goto out;
  }
  for (size_t i = 0; i < nf; i++) {
    if (sc_trace_load(files[i], &tr[i], &err) != SC_OK) {
      rc = sc_cli_fail(&err);
      goto out;
    }
    if (!quiet && !json) print_info(tr[i], files[i]);
  }
  if (whatif && (ed.dp_to > 0 || hw_name != NULL)) {
    if (sc_cli_registry_open(&reg, &err) != SC_OK) {
      rc = sc_cli_fail(&err);
      goto out;
    }
    ed.reg = reg;
  }
  if (whatif && ed.dp_to > 0) {
    if (sc_topology_load(topo_name, &topo, &err) != SC_OK ||
        sc_comm_check_topology(&topo, &err) != SC_OK) {
      rc = sc_cli_fail(&err);
      goto out;
    }
    ed.topology = &topo;
    if (ed.estimator != SC_ESTIMATOR_ANALYTICAL) {
      if (sc_residuals_for_topology(topo_name, topo.name, resid_dir, 1, ed.estimator, &cres,
                                    &err) != SC_OK) {
        rc = sc_cli_fail(&err);
        goto out;
      }
      ed.coll_residuals = cres;
    }
  }
  if (hw_name != NULL) {
    if (sc_hardware_load(reg, hw_from_name, &hw_from, &err) != SC_OK ||
        sc_hardware_load(reg, hw_name, &hw_to, &err) != SC_OK) {
      rc = sc_cli_fail(&err);
      goto out;
    }
    ed.hw_from = &hw_from;
    ed.hw_to = &hw_to;
  }
  if (sc_trace_replay(tr, nf, NULL, &base, &err) != SC_OK) {
    rc = sc_cli_fail(&err);
    goto out;
  }
  if (whatif && layers_to > 0) {
    etr = calloc(nf, sizeof *etr);
    if (etr == NULL) {
      fprintf(stderr, "stepcast: out of memory\n");
      rc = 1;
      goto out;
    }
    for (size_t i = 0; i < nf; i++) {
      sc_trace_layers_info li;
      if (sc_trace_edit_layers(tr[i], layers_to, &etr[i], &li, &err) != SC_OK) {
        rc = sc_cli_fail(&err);
        goto out;
      }
      if (i == 0) lay = li;
      if (li.layers != lay.layers) {
        sc_cli_eprintf("stepcast: %s repeats its unit %u times but %s %u times; the traces "
                "are not of one job", files[i], li.layers, files[0], lay.layers);
        rc = 1;
        goto out;
      }
      if (!json)
        printf("%s: layers: unit of %u operators (%s) repeated %u times in %u block%s per "
               "iteration, %u iterations; %llu bucketed collectives scaled by %u/%u\n",
               files[i], li.unit_ops, li.by_module ? "nn.Module annotation" :
               "operator repetition", li.layers, li.blocks, li.blocks == 1 ? "" : "s",
               li.iterations, (unsigned long long)li.scaled_comm, layers_to, li.layers);
    }
  }
  if (whatif && sc_trace_replay(etr ? etr : tr, nf, &ed, &res, &err) != SC_OK) {
    rc = sc_cli_fail(&err);
    goto out;
  }
  warn_matching(base, files, nf);
  size_t ni, nw = 0;
  const sc_trace_iter *it = sc_trace_result_iters(base, &ni);
  const sc_trace_iter *wi = whatif ? sc_trace_result_iters(res, &nw) : NULL;
  if (whatif && nw != ni) {
    /* the edits keep every span (the layers edit keeps the iterations' annotations) */
    fprintf(stderr, "stepcast: the edited replay has %zu spans, the measured one %zu\n", nw,
            ni);
    rc = 1;
    goto out;
  }
  double maxerr = 0, sm = 0, sp = 0;
  for (size_t i = 0; i < ni; i++) {
    double e = it[i].measured_s > 0
                   ? 100.0 * (it[i].replayed_s - it[i].measured_s) / it[i].measured_s
                   : 0;
    if (fabs(e) > maxerr) maxerr = fabs(e);
    sm += it[i].replayed_s;
    if (whatif) sp += wi[i].replayed_s;
  }
  if (json) {
    FILE *o = stdout;
    json_head(o, whatif, tr, files, nf, base);
    if (whatif) {
      sc_trace_info in0;
      sc_trace_get_info(tr[0], &in0);
      fputs(",\n  \"edits\": {\"dp_from\": ", o);
      if (ed.dp_to) fprintf(o, "%d", ed.dp_from ? (int)ed.dp_from : in0.world_size);
      else fputs("null", o);
      fputs(", \"dp_to\": ", o);
      if (ed.dp_to) fprintf(o, "%u", ed.dp_to); else fputs("null", o);
      fputs(", \"topology\": ", o);
      if (ed.dp_to) sc_json_string(o, topo.name); else fputs("null", o);
      fputs(", \"estimator\": ", o);
      if (ed.dp_to) sc_json_string(o, sc_estimator_name(ed.estimator));
      else fputs("null", o);
      fputs(", \"hardware_from\": ", o);
      if (hw_name) sc_json_string(o, hw_from.name); else fputs("null", o);
      fputs(", \"hardware_to\": ", o);
      if (hw_name) sc_json_string(o, hw_to.name); else fputs("null", o);
      fputs(", \"default_dtype\": ", o);
      sc_json_string(o, sc_dtype_name(ed.default_dtype));
      fprintf(o, ", \"overlap\": \"%s\", \"layers_from\": ", ed.serialize_comm ? "none" :
              "measured");
      if (layers_to) fprintf(o, "%u", lay.layers); else fputs("null", o);
      fputs(", \"layers_to\": ", o);
      if (layers_to) fprintf(o, "%u", layers_to); else fputs("null", o);
      fputs("}", o);
    }
    fputs(",\n  \"iterations\": [", o);
    for (size_t i = 0; i < ni; i++) {
      fprintf(o, "%s\n    {\"name\": ", i ? "," : "");
      sc_json_string(o, it[i].name);
      fprintf(o, ", \"rank\": %d, \"measured_s\": ", it[i].rank);
      jnum(o, it[i].measured_s);
      fputs(", \"replayed_s\": ", o);
      jnum(o, it[i].replayed_s);
      if (!whatif) {
        fputs(", \"error_pct\": ", o);
        jnum(o, it[i].measured_s > 0
                    ? 100.0 * (it[i].replayed_s - it[i].measured_s) / it[i].measured_s
                    : 0);
      } else {
        fputs(", \"predicted_s\": ", o);
        jnum(o, wi[i].replayed_s);
        fputs(", \"change_pct\": ", o);
        jnum(o, it[i].replayed_s > 0
                    ? 100.0 * (wi[i].replayed_s - it[i].replayed_s) / it[i].replayed_s
                    : 0);
      }
      fputs(",\n     \"breakdown\": ", o);
      json_breakdown(o, whatif ? &wi[i] : &it[i]);
      fputs("}", o);
    }
    fputs("\n  ],\n  \"summary\": {", o);
    if (!whatif) {
      fprintf(o, "\"spans\": %zu, \"max_abs_error_pct\": ", ni);
      jnum(o, maxerr);
    } else {
      fprintf(o, "\"spans\": %zu, \"mean_replayed_s\": ", ni);
      jnum(o, ni ? sm / (double)ni : 0);
      fputs(", \"mean_predicted_s\": ", o);
      jnum(o, ni ? sp / (double)ni : 0);
      fputs(", \"change_pct\": ", o);
      jnum(o, sm > 0 ? 100.0 * (sp - sm) / sm : 0);
    }
    fputs("}\n}\n", o);
    if (fflush(o) != 0 || ferror(o)) {
      fprintf(stderr, "stepcast: writing the JSON to stdout failed\n");
      rc = 1;
      goto out;
    }
  } else if (!whatif) {
    print_graph(base, nf);
    printf("%-22s %4s %12s %12s %8s %12s %12s %12s %12s\n", "iteration", "rank",
           "measured ms", "replayed ms", "error %", "compute ms", "comm exp ms", "memcpy ms",
           "idle ms");
    for (size_t i = 0; i < ni; i++) {
      double e = it[i].measured_s > 0
                     ? 100.0 * (it[i].replayed_s - it[i].measured_s) / it[i].measured_s
                     : 0;
      printf("%-22s %4d %12.3f %12.3f %8.3f %12.3f %12.3f %12.3f %12.3f\n", it[i].name,
             it[i].rank, it[i].measured_s * 1e3, it[i].replayed_s * 1e3, e,
             it[i].compute_s * 1e3, it[i].comm_exposed_s * 1e3, it[i].memory_s * 1e3,
             it[i].idle_s * 1e3);
    }
    printf("max |error| %.3f %% over %zu spans\n", maxerr, ni);
    print_breakdown(it, ni, "replayed");
  } else {
    print_graph(base, nf);
    printf("edits:");
    if (ed.dp_to) {
      sc_trace_info in;
      sc_trace_get_info(tr[0], &in);
      printf(" dp %d -> %u on %s;", ed.dp_from ? (int)ed.dp_from : in.world_size, ed.dp_to,
             topo.name);
    }
    if (hw_name) printf(" hardware %s -> %s (default dtype %s);", hw_from.name, hw_to.name,
                        sc_dtype_name(ed.default_dtype));
    if (ed.serialize_comm) printf(" communication serialised on the compute stream;");
    if (layers_to) printf(" layers %u -> %u;", lay.layers, layers_to);
    printf("\n%-22s %4s %12s %12s %12s %8s %12s %12s %12s %12s\n", "iteration", "rank",
           "measured ms", "replayed ms", "predicted ms", "change %", "compute ms",
           "comm exp ms", "memcpy ms", "idle ms");
    for (size_t i = 0; i < ni; i++) {
      double ch = it[i].replayed_s > 0
                      ? 100.0 * (wi[i].replayed_s - it[i].replayed_s) / it[i].replayed_s
                      : 0;
      printf("%-22s %4d %12.3f %12.3f %12.3f %8.2f %12.3f %12.3f %12.3f %12.3f\n", it[i].name,
             it[i].rank, it[i].measured_s * 1e3, it[i].replayed_s * 1e3,
             wi[i].replayed_s * 1e3, ch, wi[i].compute_s * 1e3, wi[i].comm_exposed_s * 1e3,
             wi[i].memory_s * 1e3, wi[i].idle_s * 1e3);
    }
    if (ni > 0)
      printf("mean iteration: replayed %.3f ms, predicted %.3f ms (%+.2f %%)\n", sm / ni * 1e3,
             sp / ni * 1e3, sm > 0 ? 100.0 * (sp - sm) / sm : 0);
    print_breakdown(wi, nw, "predicted");
  }
  if (timeline != NULL) rc = write_timeline(timeline, whatif ? res : base);
out:
  sc_trace_result_free(res);
  sc_trace_result_free(base);
  for (size_t i = 0; tr != NULL && i < nf; i++) sc_trace_free(tr[i]);
  for (size_t i = 0; etr != NULL && i < nf; i++) sc_trace_free(etr[i]);
  free(etr);
  free(tr);
  free(files);
  sc_residuals_free(cres);
  sc_registry_free(reg);
  return rc;
}
