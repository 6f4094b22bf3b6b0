/*
 * The replay of one or more ranks' traces (docs/trace.md): the ranks' graphs (graph.c)
 * with their edits (edit.c), joined where a collective spans ranks (match.c), replayed.
 * Every replayed event has two instants, its start and its end; an edge says "instant b
 * is at least instant a + lag". Replay sets each instant to the maximum over its
 * predecessors (a source keeps its measured time): a longest-path pass in topological
 * order (Kahn). The breakdown of each iteration is breakdown.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/report.h"
#include "stepcast/stepcast.h"
#include "stepcast/trace.h"
#include "trace/trace_int.h"

void sc_trace_result_free(sc_trace_result *res) {
  if (res == NULL) return;
  sc__trace_free_ranks(res->r, res->nr);
  free(res->M);
  free(res->T);
  free(res->iters);
  free(res);
}

int sc_trace_replay(sc_trace *const *traces, size_t ntraces, const sc_trace_edits *edits,
                    sc_trace_result **out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "sc_trace_replay: out is NULL");
  *out = NULL;
  if (traces == NULL || ntraces == 0)
    return sc_error_set(err, SC_EINVAL, "sc_trace_replay: no traces");
  for (size_t i = 0; i < ntraces; i++) {
    if (traces[i] == NULL)
      return sc_error_set(err, SC_EINVAL, "sc_trace_replay: traces[%zu] is NULL", i);
    /* a trace without GPU work has no iteration to replay: refused, not a 0 % error */
    const sc_trace *t = traces[i];
    const uint64_t *k = t->info.by_kind;
    if (k[SC_TRACE_KERNEL] + k[SC_TRACE_MEMCPY] + k[SC_TRACE_MEMSET] == 0) {
      /* name the complete events of categories not read: another profiler's names? */
      char cats[160] = "";
      size_t cl = 0, shown = 0;
      for (size_t q = 0; q < t->nskip && shown < 4; q++) {
        if (strncmp(t->skip_kind[q], "X/", 2) != 0 || strcmp(t->skip_kind[q], "X/Trace") == 0)
          continue;
        int w = snprintf(cats + cl, sizeof cats - cl, "%s%.40s %llu", shown ? ", " : "; complete "
                         "events of categories not read: ", t->skip_kind[q],
                         (unsigned long long)t->skip_count[q]);
        if (w < 0 || (size_t)w >= sizeof cats - cl) break;
        cl += (size_t)w;
        shown++;
      }
      return sc_error_set(err, SC_EPARSE, "%s: no GPU kernel, memcpy or memset events to "
                          "replay (%llu of %llu events kept%s; a profiler trace without CUDA "
                          "activity?)", t->path, (unsigned long long)t->info.kept,
                          (unsigned long long)t->info.events, cats);
    }
  }
  sc_trace_result *res = calloc(1, sizeof *res);
  sc__tbuilder b = {NULL, 0, 0};
  sc__tcmatch cm;
  memset(&cm, 0, sizeof cm);
  uint32_t *indeg = NULL, *csr_to = NULL, *queue = NULL;
  uint64_t *csr_off = NULL;
  double *csr_lag = NULL;
  int rc = SC_OK;
  if (res == NULL) return sc_error_set(err, SC_ENOMEM, "trace replay: out of memory");
  res->nr = ntraces;
  res->r = calloc(ntraces, sizeof *res->r);
  if (res->r == NULL) { rc = SC_ENOMEM; goto nomem; }
  uint64_t ninst = 0;
  for (size_t i = 0; i < ntraces; i++) {
    res->r[i].t = traces[i];
    res->r[i].off = ninst;
    ninst += 2 * (uint64_t)traces[i]->nev;
  }
  /* instants are 32-bit indices: the events' two each, plus at most one join per
   * communication kernel of the first trace */
  if (ninst + traces[0]->nev >= UINT32_MAX) {
    rc = sc_error_set(err, SC_ELIMIT, "trace replay: %llu events exceed the graph's 32-bit "
                      "index", (unsigned long long)(ninst / 2));
    goto fail;
  }
  for (size_t i = 0; i < ntraces; i++) {
    rc = sc__trace_build_rank(&res->r[i], edits, &b, &res->g, err);
    if (rc == SC_ENOMEM) goto nomem;
    if (rc != SC_OK) goto fail;
    rc = sc__trace_edited_durations(&res->r[i], edits, err);
    if (rc != SC_OK) goto fail;
  }
  /* communication kernels across ranks, the ranks' clock offsets */
  int64_t *offs = calloc(ntraces, sizeof *offs);
  if (offs == NULL) { rc = SC_ENOMEM; goto nomem; }
  if (ntraces > 1) {
    rc = sc__trace_match_comm(res, &cm, offs, err);
    if (rc != SC_OK) {
      free(offs);
      if (rc == SC_ENOMEM) goto nomem;
      goto fail;
    }
  }
  res->g.kind_guessed_rank = -1;
  for (size_t i = 0; i < ntraces; i++) {
    const sc__trank *g = &res->r[i];
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p];
      if (!g->cguess[ev]) continue;
      if (res->g.kind_guessed++ == 0) {
        res->g.kind_guessed_rank = (int32_t)i;
        snprintf(res->g.kind_guessed_name, sizeof res->g.kind_guessed_name, "%.*s",
                 (int)strcspn(sc__tname(g->t, g->t->ev[ev].name), "("),
                 sc__tname(g->t, g->t->ev[ev].name));
      }
    }
  }
  {
    int64_t base0 = INT64_MAX;
    for (size_t k = 0; k < traces[0]->nev; k++) {
      if (traces[0]->ev[k].ts_ns < base0) base0 = traces[0]->ev[k].ts_ns;
    }
    if (base0 == INT64_MAX) base0 = 0;
    for (size_t i = 0; i < ntraces; i++) res->r[i].base_ns = base0 + offs[i];
  }
  free(offs);
  /* joins: one instant per collective after the events' instants */
  res->ninst = ninst + cm.ng;
  if (res->ninst >= UINT32_MAX) {
    rc = sc_error_set(err, SC_ELIMIT, "trace replay: %llu instants exceed the graph's "
                      "32-bit index", (unsigned long long)res->ninst);
    goto fail;
  }
  res->M = malloc((res->ninst ? res->ninst : 1) * sizeof *res->M);
  res->T = malloc((res->ninst ? res->ninst : 1) * sizeof *res->T);
  if (res->M == NULL || res->T == NULL) { rc = SC_ENOMEM; goto nomem; }
  for (size_t i = 0; i < ntraces; i++) {
    const sc__trank *g = &res->r[i];
    for (size_t k = 0; k < traces[i]->nev; k++) {
      const sc__tev *e = &traces[i]->ev[k];
      res->M[SC__START(g, k)] = (double)(e->ts_ns - g->base_ns);
      res->M[SC__END(g, k)] = (double)(e->ts_ns + e->dur_ns - g->base_ns);
    }
  }
  /* collective joins: each member ends at the last arrival + its measured time after
   * it (scaled by its edit); every other GPU op: start -> end */
  {
    uint8_t **joined = calloc(ntraces, sizeof *joined);
    if (joined == NULL) { rc = SC_ENOMEM; goto nomem; }
    for (size_t i = 0; i < ntraces && rc == SC_OK; i++) {
      joined[i] = calloc(traces[i]->nev ? traces[i]->nev : 1, 1);
      if (joined[i] == NULL) rc = SC_ENOMEM;
    }
    for (size_t gq = 0; gq < cm.ng && rc == SC_OK; gq++) {
      uint64_t jid = ninst + gq;
      double last = -INFINITY;
      for (size_t k = cm.start[gq]; k < cm.start[gq + 1]; k++) {
        const sc__trank *g = &res->r[cm.m[k].rank];
        if (res->M[SC__START(g, cm.m[k].ev)] > last) last = res->M[SC__START(g, cm.m[k].ev)];
      }
      res->M[jid] = last;
      for (size_t k = cm.start[gq]; k < cm.start[gq + 1] && rc == SC_OK; k++) {
        sc__trank *g = &res->r[cm.m[k].rank];
        uint32_t ev = cm.m[k].ev;
        double meas = (double)traces[cm.m[k].rank]->ev[ev].dur_ns;
        double scale = meas > 0 ? g->dur[ev] / meas : 1.0;
        double lag = (res->M[SC__END(g, ev)] - last) * scale;
        if (lag < 0) lag = 0;
        joined[cm.m[k].rank][ev] = 1;
        if ((rc = sc__trace_add_edge(&b, SC__START(g, ev), jid, 0)) == SC_OK)
          rc = sc__trace_add_edge(&b, jid, SC__END(g, ev), lag);
      }
    }
    for (size_t i = 0; i < ntraces && rc == SC_OK; i++) {
      sc__trank *g = &res->r[i];
      for (size_t p = 0; p < g->nops && rc == SC_OK; p++) {
        uint32_t ev = g->ops[p];
        if (!joined[i][ev])
          rc = sc__trace_add_edge(&b, SC__START(g, ev), SC__END(g, ev), g->dur[ev]);
      }
    }
    for (size_t i = 0; i < ntraces; i++) free(joined[i]);
    free(joined);
    if (rc != SC_OK) goto nomem;
  }
  /* CSR and Kahn's longest path */
  {
    uint64_t n = res->ninst;
    indeg = calloc(n ? n : 1, sizeof *indeg);
    csr_off = calloc(n + 1, sizeof *csr_off);
    csr_to = malloc((b.n ? b.n : 1) * sizeof *csr_to);
    csr_lag = malloc((b.n ? b.n : 1) * sizeof *csr_lag);
    queue = malloc((n ? n : 1) * sizeof *queue);
    if (!indeg || !csr_off || !csr_to || !csr_lag || !queue) { rc = SC_ENOMEM; goto nomem; }
    for (size_t k = 0; k < b.n; k++) {
      csr_off[b.e[k].from + 1]++;
      indeg[b.e[k].to]++;
    }
    for (uint64_t k = 0; k < n; k++) csr_off[k + 1] += csr_off[k];
    {
      uint64_t *fill = malloc((n ? n : 1) * sizeof *fill);
      if (fill == NULL) { rc = SC_ENOMEM; goto nomem; }
      memcpy(fill, csr_off, n * sizeof *fill);
      for (size_t k = 0; k < b.n; k++) {
        uint64_t at = fill[b.e[k].from]++;
        csr_to[at] = b.e[k].to;
        csr_lag[at] = b.e[k].lag;
      }
      free(fill);
    }
    res->g.edges = b.n;
    free(b.e);
    b.e = NULL;
    size_t qh = 0, qt = 0;
    for (uint64_t k = 0; k < n; k++) {
      if (indeg[k] == 0) {
        res->T[k] = res->M[k];
        queue[qt++] = (uint32_t)k;
      } else {
        res->T[k] = -INFINITY;
      }
    }
    while (qh < qt) {
      uint32_t u = queue[qh++];
      double tu = res->T[u];
      for (uint64_t k = csr_off[u]; k < csr_off[u + 1]; k++) {
        uint32_t v = csr_to[k];
        double c = tu + csr_lag[k];
        if (c > res->T[v]) res->T[v] = c;
        if (--indeg[v] == 0) queue[qt++] = v;
      }
    }
    if (qt != n) {
      rc = sc_error_set(err, SC_EPARSE, "trace replay: the dependency graph has a cycle "
                        "(%llu of %llu instants unresolved): inconsistent timestamps or "
                        "collectives matched across ranks in the wrong order",
                        (unsigned long long)(n - qt), (unsigned long long)n);
      goto fail;
    }
  }
  for (size_t i = 0; i < ntraces; i++) {
    res->g.nodes += traces[i]->nev - traces[i]->info.by_kind[SC_TRACE_SYNC];
    size_t before = res->niters;
    if ((rc = sc__trace_rank_iters(res, i)) != SC_OK) goto nomem;
    /* nothing to replay is an error naming the file, not a 0 % or 100 % idle figure */
    if (res->niters == before) {
      rc = sc_error_set(err, SC_EPARSE, "%s: nothing to replay: no ProfilerStep#N span and "
                        "its events span no time", traces[i]->path);
      goto fail;
    }
    int busy = 0;
    for (size_t q = before; q < res->niters; q++) {
      if (res->iters[q].replayed_s - res->iters[q].idle_s > 0) busy = 1;
    }
    if (!busy) {
      rc = sc_error_set(err, SC_EPARSE, "%s: nothing to replay: no GPU work inside its %zu "
                        "ProfilerStep span%s (its kernels lie outside them)", traces[i]->path,
                        res->niters - before, res->niters - before == 1 ? "" : "s");
      goto fail;
    }
  }
  goto done;
nomem:
  if (rc == SC_ENOMEM) rc = sc_error_set(err, SC_ENOMEM, "trace replay: out of memory");
fail:
  sc_trace_result_free(res);
  res = NULL;
done:
  sc__trace_cmatch_free(&cm);
  free(b.e);
  free(indeg);
  free(csr_off);
  free(csr_to);
  free(csr_lag);
  free(queue);
  *out = res;
  return rc;
}

const sc_trace_iter *sc_trace_result_iters(const sc_trace_result *r, size_t *n) {
  if (n) *n = r ? r->niters : 0;
  return r ? r->iters : NULL;
}

void sc_trace_result_graph(const sc_trace_result *r, sc_trace_graph_info *out) {
  if (r && out) *out = r->g;
}

int sc_trace_timeline(FILE *out, const sc_trace_result *r, sc_error *err) {
  if (out == NULL || r == NULL)
    return sc_error_set(err, SC_EINVAL, "sc_trace_timeline: NULL argument");
  double t0 = INFINITY;
  for (uint64_t k = 0; k < r->ninst; k++) {
    if (r->T[k] < t0) t0 = r->T[k];
  }
  fprintf(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  int first = 1;
  for (size_t i = 0; i < r->nr; i++) {
    const sc__trank *g = &r->r[i];
    const sc_trace *t = g->t;
    fprintf(out, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %zu, \"args\": "
            "{\"name\": ", first ? "" : ",\n", i);
    char pn[64];
    snprintf(pn, sizeof pn, "rank %zu (replayed)", i);
    sc_json_string(out, pn);
    fprintf(out, "}}");
    first = 0;
    int64_t pd = INT64_MIN, ps = INT64_MIN;
    for (size_t p = 0; p < g->nops; p++) {
      uint32_t ev = g->ops[p];
      if (t->ev[ev].pid == pd && g->stream[ev] == ps) continue;
      pd = t->ev[ev].pid;
      ps = g->stream[ev];
      fprintf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": "
              "%lld, \"args\": {\"name\": \"GPU %lld stream %lld\"}}", i,
              (long long)(1000000000LL + pd * 1000000LL + ps), (long long)pd, (long long)ps);
    }
    for (size_t k = 0; k < t->nev; k++) {
      const sc__tev *e = &t->ev[k];
      if (e->kind == SC_TRACE_SYNC) continue;
      long long tid = sc__trace_is_gpu(e->kind) ? 1000000000LL + e->pid * 1000000LL + g->stream[k]
                                      : (long long)e->tid;
      double ts = (r->T[SC__START(g, k)] - t0) * 1e-3;
      double dur = (r->T[SC__END(g, k)] - r->T[SC__START(g, k)]) * 1e-3;
      fprintf(out, ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": ",
              sc_trace_kind_name((sc_trace_kind)e->kind));
      sc_json_string(out, sc__tname(t, e->name));
      fprintf(out, ", \"pid\": %zu, \"tid\": %lld, \"ts\": %.3f, \"dur\": %.3f}", i, tid, ts,
              dur);
    }
  }
  fprintf(out, "\n]}\n");
  if (ferror(out)) return sc_error_set(err, SC_EIO, "trace timeline: write failed");
  return SC_OK;
}
