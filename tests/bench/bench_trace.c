/*
 * Speed of the trace-driven mode: builds a large synthetic trace by repeating a real
 * trace's events (shifted in time, correlation ids renumbered) into a temporary plain JSON
 * file, then times sc_trace_load (streaming parse) and sc_trace_replay, and prints events
 * per second and the peak resident memory. The file is removed at the end.
 *
 *   bench_trace [SOURCE.json[.gz]] [MB]     (defaults: HTA trace_diff/control, 200 MB)
 *
 * Build in Release without sanitizers for meaningful figures (docs/trace.md#speed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sc_config.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"
#include "bench_util.h"

static double peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

static void put_us(FILE *f, int64_t ns) {
  fprintf(f, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000 < 0 ? -(ns % 1000) : ns % 1000));
}

/* Write copies of src's events until the file holds about target_bytes. */
static int write_synthetic(const sc_trace *src, FILE *f, double target_bytes, uint64_t *nev) {
  int64_t t0 = INT64_MAX, t1 = INT64_MIN, maxcorr = 0;
  for (size_t i = 0; i < src->nev; i++) {
    const sc__tev *e = &src->ev[i];
    if (e->ts_ns < t0) t0 = e->ts_ns;
    if (e->ts_ns + e->dur_ns > t1) t1 = e->ts_ns + e->dur_ns;
    if (e->corr > maxcorr) maxcorr = e->corr;
    if (e->wait_corr > maxcorr) maxcorr = e->wait_corr;
  }
  int64_t span = t1 - t0 + 1000;
  fprintf(f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0, \"world_size\": 1},\n"
             "\"traceEvents\": [\n");
  *nev = 0;
  for (int64_t k = 0; ftell(f) < (long)target_bytes; k++) {
    for (size_t i = 0; i < src->nev; i++) {
      const sc__tev *e = &src->ev[i];
      int gpu = e->kind == SC_TRACE_KERNEL || e->kind == SC_TRACE_MEMCPY ||
                e->kind == SC_TRACE_MEMSET || e->kind == SC_TRACE_SYNC;
      fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ", *nev ? ",\n" : "",
              sc_trace_kind_name((sc_trace_kind)e->kind));
      sc_json_string(f, sc__tname(src, e->name));
      fprintf(f, ", \"pid\": %lld, \"tid\": %lld, \"ts\": ", (long long)e->pid,
              (long long)e->tid);
      put_us(f, e->ts_ns + k * span);
      fprintf(f, ", \"dur\": ");
      put_us(f, e->dur_ns);
      fprintf(f, ", \"args\": {\"External id\": %lld", (long long)(k * 1000000 + (int64_t)i));
      if (e->corr >= 0) fprintf(f, ", \"correlation\": %lld", (long long)(e->corr + k * (maxcorr + 1)));
      if (gpu) fprintf(f, ", \"device\": %lld, \"stream\": %lld", (long long)e->pid, (long long)e->tid);
      if (e->kind == SC_TRACE_SYNC) {
        static const char *const sk[] = {"", "Stream Sync", "Event Sync", "Context Sync",
                                         "Stream Wait Event"};
        fprintf(f, ", \"cuda_sync_kind\": \"%s\", \"wait_on_stream\": %d", sk[e->sync & 7 ? e->sync % 5 : 0],
                e->wait_stream);
        if (e->wait_corr >= 0)
          fprintf(f, ", \"wait_on_cuda_event_record_corr_id\": %lld",
                  (long long)(e->wait_corr + k * (maxcorr + 1)));
      }
      fprintf(f, "}}");
      /* a flow event per launch, as Kineto writes: parsed and skipped */
      if (e->kind == SC_TRACE_RUNTIME && e->corr >= 0) {
        fprintf(f, ",\n{\"ph\": \"s\", \"id\": %lld, \"pid\": %lld, \"tid\": %lld, \"ts\": ",
                (long long)(e->corr + k * (maxcorr + 1)), (long long)e->pid, (long long)e->tid);
        put_us(f, e->ts_ns + k * span);
        fprintf(f, ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
        (*nev)++;
      }
      (*nev)++;
    }
  }
  fprintf(f, "\n]}\n");
  return ferror(f) ? -1 : 0;
}

int main(int argc, char **argv) {
  const char *src_path = argc > 1 ? argv[1]
                                  : SC_SOURCE_DIR "/../shared/data/traces/hta/trace_diff/"
                                                  "control/control.json.gz";
  double mb = argc > 2 ? atof(argv[2]) : 200.0;
  sc_error err = {0};
  sc_trace *src = NULL;
  if (sc_trace_load(src_path, &src, &err) != SC_OK) {
    fprintf(stderr, "bench_trace: %s\n", err.msg);
    return 1;
  }
  char path[] = "/tmp/stepcast-bench-trace-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("bench_trace: mkstemp");
    sc_trace_free(src);
    return 1;
  }
  FILE *f = fdopen(fd, "w");
  uint64_t nev = 0;
  double t = now_s();
  int wrc = f ? write_synthetic(src, f, mb * 1e6, &nev) : -1;
  long bytes = f ? ftell(f) : 0;
  if (f) fclose(f);
  sc_trace_free(src);
  if (wrc != 0) {
    fprintf(stderr, "bench_trace: cannot write %s\n", path);
    unlink(path);
    return 1;
  }
  printf("synthetic trace: %.1f MB, %llu events (from %s), written in %.2f s\n", bytes / 1e6,
         (unsigned long long)nev, src_path, now_s() - t);

  sc_trace *tr = NULL;
  t = now_s();
  int rc = sc_trace_load(path, &tr, &err);
  double tp = now_s() - t;
  unlink(path);
  if (rc != SC_OK) {
    fprintf(stderr, "bench_trace: %s\n", err.msg);
    return 1;
  }
  sc_trace_info in;
  sc_trace_get_info(tr, &in);
  printf("parse:  %.2f s, %.2f M events/s, %.0f MB/s of JSON (%llu events, %llu kept); "
         "peak RSS %.0f MB\n", tp, in.events / tp / 1e6, bytes / tp / 1e6,
         (unsigned long long)in.events, (unsigned long long)in.kept, peak_rss_mb());
  sc_trace_result *r = NULL;
  t = now_s();
  rc = sc_trace_replay(&tr, 1, NULL, &r, &err);
  double tr_s = now_s() - t;
  if (rc != SC_OK) {
    fprintf(stderr, "bench_trace: %s\n", err.msg);
    sc_trace_free(tr);
    return 1;
  }
  sc_trace_graph_info g;
  sc_trace_result_graph(r, &g);
  printf("replay: %.2f s, %.2f M events/s (%llu nodes, %llu edges); peak RSS %.0f MB\n", tr_s,
         g.nodes / tr_s / 1e6, (unsigned long long)g.nodes, (unsigned long long)g.edges,
         peak_rss_mb());
  sc_trace_result_free(r);
  sc_trace_free(tr);
  return 0;
}
