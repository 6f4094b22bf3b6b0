/* Chrome / Perfetto trace-event JSON of a simulated iteration (stepcast/report.h).
 * Format: "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
 * "M" metadata events name processes and threads, "X" complete events carry ts and dur
 * in microseconds, "s"/"f" events with one id draw a flow arrow; "bp":"e" binds the
 * arrow's end to the slice enclosing its timestamp. */
#include <math.h>
#include <stdio.h>

#include "report/report_int.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

#define US(t) ((t) * 1e6)
static double ns_dur_us(double start_s, double end_s) {
  return round(end_s * 1e9) / 1e3 - round(start_s * 1e9) / 1e3;
}

static void ev_sep(FILE *out, int *first) {
  fputs(*first ? "\n  " : ",\n  ", out);
  *first = 0;
}

static void interval_name(char *buf, size_t n, const sc_sched_interval *v, uint32_t vp) {
  char chunk[24] = "";
  /* DualPipe's second copy (micro-batches fed from the last rank) is chunk 1 with vp = 1 */
  if (vp > 1 || v->chunk > 0) snprintf(chunk, sizeof chunk, " c%u", v->chunk);
  switch ((sc_interval_kind)v->kind) {
  case SC_IV_FORWARD: snprintf(buf, n, "F mb%d%s", v->microbatch, chunk); break;
  case SC_IV_RECOMPUTE: snprintf(buf, n, "R mb%d%s", v->microbatch, chunk); break;
  case SC_IV_BACKWARD: snprintf(buf, n, "B mb%d%s", v->microbatch, chunk); break;
  case SC_IV_WGRAD: snprintf(buf, n, "W mb%d%s", v->microbatch, chunk); break;
  case SC_IV_TP: snprintf(buf, n, "TP mb%d%s", v->microbatch, chunk); break;
  case SC_IV_CP: snprintf(buf, n, "CP mb%d%s", v->microbatch, chunk); break;
  case SC_IV_P2P_ACT: snprintf(buf, n, "send activation mb%d%s", v->microbatch, chunk); break;
  case SC_IV_P2P_GRAD: snprintf(buf, n, "send gradient mb%d%s", v->microbatch, chunk); break;
  case SC_IV_DP_GRAD: snprintf(buf, n, "grad reduce bucket %d%s", v->bucket, chunk); break;
  case SC_IV_DP_PARAM: snprintf(buf, n, "param all-gather bucket %d%s", v->bucket, chunk); break;
  case SC_IV_OPTIMIZER: snprintf(buf, n, "optimizer step"); break;
  default: snprintf(buf, n, "unknown"); break;
  }
}

int sc_report_trace(FILE *out, const sc_sched_result *s, const sc_result *r, sc_error *err) {
  if (out == NULL || s == NULL)
    return sc_error_set(err, SC_EINVAL, "report: trace: %s is NULL",
                        out == NULL ? "out" : "schedule result");
  if (s->intervals == NULL || s->nintervals == 0)
    return sc_error_set(err, SC_EINVAL,
                        "report: trace: the schedule result has no timeline (run it with "
                        "record_timeline = 1)");
  for (size_t i = 0; i < s->nflows; i++)
    if (s->flows[i].send >= s->nintervals || s->flows[i].recv >= s->nintervals)
      return sc_error_set(err, SC_EINVAL, "report: trace: flow %zu names interval out of range",
                          i);
  /* every number written is finite (JSON has no inf or nan): refused before a byte is out */
  if (!isfinite(s->iteration_s) || !isfinite(US(s->iteration_s)) ||
      !isfinite(s->iteration_s * 1e9))
    return sc_error_set(err, SC_ERANGE, "report: trace: iteration_s %g is not a finite time in "
                        "nanoseconds", s->iteration_s);
  for (size_t i = 0; i < s->nintervals; i++) {
    const sc_sched_interval *v = &s->intervals[i];
    if (!isfinite(v->start_s) || !isfinite(v->end_s) || !isfinite(v->start_s * 1e9) ||
        !isfinite(v->end_s * 1e9) || !isfinite(ns_dur_us(v->start_s, v->end_s))) {
      char name[64];
      interval_name(name, sizeof name, v, s->vp);
      return sc_error_set(err, SC_ERANGE, "report: trace: interval %zu ('%s', stage %u) has "
                          "start %g s, end %g s: not finite", i, name, v->stage, v->start_s,
                          v->end_s);
    }
  }

  fputs("{\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {", out);
  fputs("\"generator\": ", out);
  fputs("\"stepcast ", out);
  fputs(sc_version(), out);
  fputs("\", \"iteration_s\": ", out);
  sc__json_number(out, s->iteration_s);
  fprintf(out, ", \"critical_stage\": %u, \"pp\": %u, \"virtual_stages\": %u, \"microbatches\": %u",
          s->critical_stage, s->pp, s->vp, s->microbatches);
  if (r != NULL) {
    fputs(", \"model\": ", out);
    sc_json_string(out, r->model);
    fputs(", \"topology\": ", out);
    sc_json_string(out, r->topology);
    fputs(", \"hardware\": ", out);
    sc_json_string(out, r->hardware);
    fputs(", \"estimator\": ", out);
    sc_json_string(out, r->estimator);
    fprintf(out, ", \"gpus\": %u, \"tp\": %u, \"pp_config\": %u, \"dp\": %u, \"cp\": %u",
            r->gpus, r->parallel.tp, r->parallel.pp, r->parallel.dp, r->parallel.cp);
  }
  fputs("},\n\"traceEvents\": [", out);
  int first = 1;
  for (uint32_t st = 0; st < s->pp; st++) {
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, \"tid\": 0, "
            "\"args\": {\"name\": \"pipeline stage %u%s\"}}",
            st, st, st == s->critical_stage ? " (critical)" : "");
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %u, \"tid\": 0, "
            "\"args\": {\"sort_index\": %u}}",
            st, st);
    for (unsigned lane = 0; lane < SC_LANE_COUNT; lane++) {
      ev_sep(out, &first);
      fprintf(out,
              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": %u, "
              "\"args\": {\"name\": \"%s\"}}",
              st, lane, sc_lane_name((sc_lane)lane));
      ev_sep(out, &first);
      fprintf(out,
              "{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %u, \"tid\": %u, "
              "\"args\": {\"sort_index\": %u}}",
              st, lane, lane);
    }
  }
  char name[96];
  /* ts and dur are printed to the nanosecond: take dur as the difference of the rounded
   * ends so that back-to-back intervals of a lane never overlap after rounding. */
  for (size_t i = 0; i < s->nintervals; i++) {
    const sc_sched_interval *v = &s->intervals[i];
    interval_name(name, sizeof name, v, s->vp);
    ev_sep(out, &first);
    fprintf(out, "{\"ph\": \"X\", \"name\": ");
    sc_json_string(out, name);
    fprintf(out, ", \"cat\": \"%s\", \"pid\": %u, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
                 "\"args\": {\"chunk\": %u, \"microbatch\": %d, \"bucket\": %d}}",
            sc_interval_kind_name((sc_interval_kind)v->kind), v->stage, (unsigned)v->lane,
            US(v->start_s), ns_dur_us(v->start_s, v->end_s), v->chunk, v->microbatch, v->bucket);
  }
  for (size_t i = 0; i < s->nflows; i++) {
    const sc_sched_interval *a = &s->intervals[s->flows[i].send];
    const sc_sched_interval *b = &s->intervals[s->flows[i].recv];
    const char *nm = a->kind == SC_IV_P2P_GRAD ? "gradient" : "activation";
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"s\", \"id\": %zu, \"name\": \"%s\", \"cat\": \"p2p\", \"pid\": %u, "
            "\"tid\": %u, \"ts\": %.3f}",
            i + 1, nm, a->stage, (unsigned)a->lane, US(a->start_s));
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"f\", \"bp\": \"e\", \"id\": %zu, \"name\": \"%s\", \"cat\": \"p2p\", "
            "\"pid\": %u, \"tid\": %u, \"ts\": %.3f}",
            i + 1, nm, b->stage, (unsigned)b->lane, US(b->start_s));
  }
  fputs("\n]\n}\n", out);
  return sc__io_status(out, "trace", err);
}
