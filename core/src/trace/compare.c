/*
 * stepcast trace compare: a profiler trace's measured GPU time per kernel family and step
 * against a prediction of the same job (stepcast/trace.h, docs/trace.md "Side by side").
 *
 * The measured side sums the durations of each step's GPU events (kernels, memcpy,
 * memset) by the family table of classify.c; kernels it files under elementwise only
 * because nothing else matched, and that no elementwise pattern below names either, are
 * the "unmapped" row. The predicted side sums the prediction's operators and collectives of
 * the trace's pipeline stage over one iteration, each filed under the family the trace
 * classifier gives the name its timeline slice carries (sc_report_item_name): one rule
 * maps an operator to the kernels it stands for, in the timeline and here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/stepcast.h"
#include "trace/trace_int.h"

struct sc_trace_compare {
  sc_trace_cmp_step *steps;
  size_t nsteps, capsteps;
  struct unm {
    char *name;
    uint64_t count;
    double time_s;
  } *unm;
  size_t nunm, capunm;
  uint64_t *out_count;   /* per trace: GPU events in no step */
  double *out_s;
  size_t ntraces;
};

const char *sc_trace_compare_row_name(size_t row) {
  if (row < SC_KFAM_COUNT) return sc_trace_family_name((sc_kernel_family)row);
  return row == SC_TRACE_CMP_UNMAPPED ? "unmapped" : "?";
}

/* Case-insensitive substring. */
static int has(const char *s, const char *needle) {
  size_t n = strlen(needle);
  for (; *s; s++) {
    size_t i = 0;
    while (i < n && s[i] && (s[i] | 0x20) == (needle[i] | 0x20)) i++;
    if (i == n) return 1;
  }
  return 0;
}

/* What names an element-wise, reduction, copy or indexing kernel of PyTorch, Apex,
 * Transformer Engine, Triton or CUB (lower case). A kernel the family table files under
 * elementwise but named by none of these is reported as unmapped. */
static const char *const k_elementwise[] = {
    "elementwise", "vectorized", "unrolled", "reduce", "copy", "fill", "cat", "index",
    "gather", "scatter", "embedding", "loss", "dropout", "gelu", "silu", "swiglu", "geglu",
    "relu", "rope", "rotary", "add", "mul", "div", "triton", "bias", "cast", "transpose",
    "permute", "where", "mask", "arange", "sort", "scan", "cub::", "topk", "sum", "mean",
    "pow", "sqrt", "exp", "clamp", "fused", "apex", "transformer_engine", "amax", "scale",
    "quantize", "memset", "memcpy", NULL};

static size_t row_of(sc_trace_kind kind, const char *name) {
  sc_kernel_family f = sc_trace_classify(kind, name);
  if (f != SC_KFAM_ELEMENTWISE || kind != SC_TRACE_KERNEL) return (size_t)f;
  for (const char *const *k = k_elementwise; *k; k++)
    if (has(name, *k)) return (size_t)f;
  return SC_TRACE_CMP_UNMAPPED;
}

void sc_trace_compare_free(sc_trace_compare *c) {
  if (c == NULL) return;
  for (size_t i = 0; i < c->nunm; i++) free(c->unm[i].name);
  free(c->unm);
  free(c->steps);
  free(c->out_count);
  free(c->out_s);
  free(c);
}

const sc_trace_cmp_step *sc_trace_compare_steps(const sc_trace_compare *c, size_t *n) {
  if (n) *n = c ? c->nsteps : 0;
  return c ? c->steps : NULL;
}

int sc_trace_compare_unmapped(const sc_trace_compare *c, size_t i, const char **name,
                              uint64_t *count, double *time_s) {
  if (c == NULL || i >= c->nunm) return SC_ENOTFOUND;
  if (name) *name = c->unm[i].name;
  if (count) *count = c->unm[i].count;
  if (time_s) *time_s = c->unm[i].time_s;
  return SC_OK;
}

void sc_trace_compare_outside(const sc_trace_compare *c, size_t rank, uint64_t *count,
                              double *time_s) {
  int ok = c != NULL && rank < c->ntraces;
  if (count) *count = ok ? c->out_count[rank] : 0;
  if (time_s) *time_s = ok ? c->out_s[rank] : 0.0;
}

static int add_unmapped(sc_trace_compare *c, const char *name, double dur_s) {
  for (size_t i = 0; i < c->nunm; i++) { /* few distinct names: a list is enough */
    if (strcmp(c->unm[i].name, name) == 0) {
      c->unm[i].count++;
      c->unm[i].time_s += dur_s;
      return SC_OK;
    }
  }
  if (c->nunm == c->capunm) {
    size_t cap = c->capunm ? 2 * c->capunm : 16;
    struct unm *n = realloc(c->unm, cap * sizeof *n);
    if (n == NULL) return SC_ENOMEM;
    c->unm = n;
    c->capunm = cap;
  }
  char *copy = malloc(strlen(name) + 1);
  if (copy == NULL) return SC_ENOMEM;
  strcpy(copy, name);
  c->unm[c->nunm].name = copy;
  c->unm[c->nunm].count = 1;
  c->unm[c->nunm].time_s = dur_s;
  c->nunm++;
  return SC_OK;
}

static int cmp_unm(const void *a, const void *b) {
  const struct unm *x = a, *y = b;
  if (x->time_s != y->time_s) return x->time_s > y->time_s ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* The pipeline stage of global rank g: its coordinate along PP in the group order
 * (innermost first). */
static uint32_t stage_of(const sc_parallel *p, uint32_t g) {
  uint64_t stride = 1;
  for (int k = 0; k < SC_GROUP_COUNT; k++) {
    sc_group_kind grp = p->order[k];
    uint32_t deg = grp == SC_GROUP_TP ? p->tp : grp == SC_GROUP_CP ? p->cp
                   : grp == SC_GROUP_DP ? p->dp : p->pp;
    if (grp == SC_GROUP_PP) return (uint32_t)((g / stride) % (p->pp ? p->pp : 1));
    stride *= deg ? deg : 1;
  }
  return 0;
}

/* What the prediction puts on stage st over one iteration, by row and operator family. */
static void predicted_rows(const sc_result *res, const sc_timeline_detail *d, uint32_t st,
                           sc_trace_cmp_step *s) {
  uint32_t ch[SC_SCHED_MAX_VP + 1], nch = 0;
  double m = (double)res->microbatches;
  if (d->schedule == SC_SCHED_DUALPIPE) {
    /* stage st's copy of the micro-batches fed from rank 0, and stage pp-1-st's of those
     * fed from the last rank: half of them each */
    ch[nch++] = st;
    if (d->pp - 1 - st != st) ch[nch++] = d->pp - 1 - st;
    m /= 2.0;
  } else {
    for (uint32_t c = 0; c < d->vp && c < SC_SCHED_MAX_VP; c++)
      if (c * d->pp + st < d->nchunks) ch[nch++] = c * d->pp + st;
  }
  for (uint32_t k = 0; k < nch; k++) {
    const sc_timeline_chunk *c = &d->chunks[ch[k]];
    for (size_t i = c->first; i < c->first + c->count; i++) {
      const sc_timeline_item *it = &d->items[i];
      double t = it->time_s * (double)it->repeat * (it->list == SC_TL_ITER ? 1.0 : m);
      char name[96];
      sc_report_item_name(it, name, sizeof name);
      size_t row = (size_t)sc_trace_classify(SC_TRACE_KERNEL, name);
      s->predicted_row_s[row] += t;
      const char *fam = it->family != NULL ? it->family : "?";
      uint32_t j = 0;
      while (j < s->nopfam && strcmp(s->opfam[j], fam) != 0) j++;
      if (j == s->nopfam && j < SC_TRACE_CMP_MAX_OPFAM) {
        snprintf(s->opfam[j], sizeof s->opfam[j], "%s", fam);
        s->opfam_row[j] = (uint8_t)row;
        s->opfam_s[j] = 0.0;
        s->nopfam++;
      }
      if (j < s->nopfam) s->opfam_s[j] += t;
    }
    /* the pipeline sends of every micro-batch */
    double p2p = (c->p2p_fwd_bytes > 0.0 ? c->times.p2p_fwd_s : 0.0) +
                 (c->p2p_bwd_bytes > 0.0 ? c->times.p2p_bwd_s : 0.0);
    if (p2p > 0.0) {
      s->predicted_row_s[SC_KFAM_COMM] += p2p * m;
      uint32_t j = 0;
      while (j < s->nopfam && strcmp(s->opfam[j], "comm") != 0) j++;
      if (j == s->nopfam && j < SC_TRACE_CMP_MAX_OPFAM) {
        snprintf(s->opfam[j], sizeof s->opfam[j], "comm");
        s->opfam_row[j] = SC_KFAM_COMM;
        s->opfam_s[j] = 0.0;
        s->nopfam++;
      }
      if (j < s->nopfam) s->opfam_s[j] += p2p * m;
    }
  }
  for (size_t r = 0; r < SC_TRACE_CMP_ROWS; r++) s->gpu_predicted_s += s->predicted_row_s[r];
}

/* One step span of trace ti. */
typedef struct span {
  int64_t t0, t1;
  size_t step; /* index in c->steps */
} span;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int compare_one(sc_trace_compare *c, const sc_trace *t, size_t ti, const sc_result *res,
                       const sc_timeline_detail *d, sc_error *err) {
  span *sp = NULL;
  size_t nsp = 0, cap = 0;
  int64_t *launch = NULL; /* (corr, ts) pairs of runtime calls, sorted by corr */
  size_t nl = 0;
  int rc = SC_OK;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    if (e->kind != SC_TRACE_ANNOTATION || strncmp(sc__tname(t, e->name), "ProfilerStep#", 13) != 0)
      continue;
    if (nsp == cap) {
      cap = cap ? 2 * cap : 16;
      span *n = realloc(sp, cap * sizeof *n);
      if (n == NULL) goto nomem;
      sp = n;
    }
    sp[nsp].t0 = e->ts_ns;
    sp[nsp].t1 = e->ts_ns + e->dur_ns;
    sp[nsp].step = i; /* the event, for now */
    nsp++;
  }
  if (nsp == 0) { /* the whole trace is one span */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t->nev; i++) {
      const sc__tev *e = &t->ev[i];
      if (e->kind == SC_TRACE_SYNC) continue;
      if (e->ts_ns < lo) lo = e->ts_ns;
      if (e->ts_ns + e->dur_ns > hi) hi = e->ts_ns + e->dur_ns;
    }
    sp = malloc(sizeof *sp);
    if (sp == NULL) goto nomem;
    sp[0].t0 = lo;
    sp[0].t1 = hi;
    sp[0].step = SIZE_MAX;
    nsp = 1;
  }
  /* the steps, in time order */
  for (size_t a = 1; a < nsp; a++)
    for (size_t b = a; b > 0 && sp[b].t0 < sp[b - 1].t0; b--) {
      span x = sp[b];
      sp[b] = sp[b - 1];
      sp[b - 1] = x;
    }
  sc_trace_info info;
  sc_trace_get_info(t, &info);
  int32_t grank = info.rank >= 0 ? info.rank : (int32_t)ti;
  if ((uint32_t)grank >= res->gpus) {
    rc = sc_error_set(err, SC_ECONFIG, "%s: rank %d is no rank of the predicted job (%u GPUs)%s",
                      t->path, grank, res->gpus,
                      info.world_size > 0 ? "; the trace's job had more" : "");
    goto done;
  }
  uint32_t st = stage_of(&res->parallel, (uint32_t)grank);
  sc_trace_cmp_step proto;
  memset(&proto, 0, sizeof proto);
  proto.rank = (int32_t)ti;
  proto.global_rank = grank;
  proto.stage = st;
  proto.predicted_s = res->iteration_s;
  predicted_rows(res, d, st, &proto);
  for (size_t k = 0; k < nsp; k++) {
    if (c->nsteps == c->capsteps) {
      size_t nc = c->capsteps ? 2 * c->capsteps : 16;
      sc_trace_cmp_step *n = realloc(c->steps, nc * sizeof *n);
      if (n == NULL) goto nomem;
      c->steps = n;
      c->capsteps = nc;
    }
    sc_trace_cmp_step *s = &c->steps[c->nsteps];
    *s = proto;
    snprintf(s->name, sizeof s->name, "%s",
             sp[k].step == SIZE_MAX ? "trace" : sc__tname(t, t->ev[sp[k].step].name));
    s->measured_s = (double)(sp[k].t1 - sp[k].t0) * 1e-9;
    sp[k].step = c->nsteps++;
  }
  /* launches by correlation id */
  for (size_t i = 0; i < t->nev; i++)
    if (t->ev[i].kind == SC_TRACE_RUNTIME && t->ev[i].corr >= 0) nl++;
  launch = malloc((nl ? nl : 1) * 2 * sizeof *launch);
  if (launch == NULL) goto nomem;
  nl = 0;
  for (size_t i = 0; i < t->nev; i++)
    if (t->ev[i].kind == SC_TRACE_RUNTIME && t->ev[i].corr >= 0) {
      launch[2 * nl] = t->ev[i].corr;
      launch[2 * nl + 1] = t->ev[i].ts_ns;
      nl++;
    }
  qsort(launch, nl, 2 * sizeof *launch, cmp_i64);
  uint64_t ngpu = 0;
  for (size_t i = 0; i < t->nev; i++) {
    const sc__tev *e = &t->ev[i];
    if (e->kind != SC_TRACE_KERNEL && e->kind != SC_TRACE_MEMCPY && e->kind != SC_TRACE_MEMSET)
      continue;
    ngpu++;
    int64_t at = e->ts_ns;
    if (e->corr >= 0) { /* the launching call's time */
      size_t lo = 0, hi = nl;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (launch[2 * mid] < e->corr) lo = mid + 1;
        else hi = mid;
      }
      if (lo < nl && launch[2 * lo] == e->corr) at = launch[2 * lo + 1];
    }
    size_t k = nsp;
    for (size_t q = 0; q < nsp; q++)
      if (at >= sp[q].t0 && at <= sp[q].t1) {
        k = q;
        break;
      }
    double dur = (double)e->dur_ns * 1e-9;
    if (k == nsp) {
      c->out_count[ti]++;
      c->out_s[ti] += dur;
      continue;
    }
    const char *nm = sc__tname(t, e->name);
    size_t row = row_of((sc_trace_kind)e->kind, nm);
    sc_trace_cmp_step *s = &c->steps[sp[k].step];
    s->kernels[row]++;
    s->measured_row_s[row] += dur;
    s->gpu_measured_s += dur;
    if (row == SC_TRACE_CMP_UNMAPPED && (rc = add_unmapped(c, nm, dur)) != SC_OK) goto nomem;
  }
  if (ngpu == 0) {
    rc = sc_error_set(err, SC_EPARSE, "%s: nothing to compare: no GPU kernel, memcpy or "
                      "memset events", t->path);
    goto done;
  }
  goto done;
nomem:
  rc = sc_error_set(err, SC_ENOMEM, "trace compare: out of memory");
done:
  free(sp);
  free(launch);
  return rc;
}

int sc_trace_compare_run(sc_trace *const *traces, size_t ntraces, const sc_result *res,
                         const sc_timeline_detail *d, sc_trace_compare **out, sc_error *err) {
  if (out == NULL) return sc_error_set(err, SC_EINVAL, "trace compare: NULL result");
  *out = NULL;
  if (traces == NULL || ntraces == 0 || res == NULL || d == NULL)
    return sc_error_set(err, SC_EINVAL, "trace compare: no traces, or no prediction");
  if (d->pp != res->parallel.pp || d->chunks == NULL || (d->nitems > 0 && d->items == NULL) ||
      d->nchunks != (d->schedule == SC_SCHED_DUALPIPE ? d->pp : d->pp * d->vp))
    return sc_error_set(err, SC_EINVAL, "trace compare: the timeline detail (pp %u, %u chunks) "
                        "is not of the prediction (pp %u)", d->pp, d->nchunks,
                        res->parallel.pp);
  for (uint32_t g = 0; g < d->nchunks; g++)
    if (d->chunks[g].first > d->nitems || d->chunks[g].count > d->nitems - d->chunks[g].first)
      return sc_error_set(err, SC_EINVAL, "trace compare: the timeline detail's chunk %u names "
                          "items out of range", g);
  sc_trace_compare *c = calloc(1, sizeof *c);
  if (c == NULL) return sc_error_set(err, SC_ENOMEM, "trace compare: out of memory");
  c->ntraces = ntraces;
  c->out_count = calloc(ntraces, sizeof *c->out_count);
  c->out_s = calloc(ntraces, sizeof *c->out_s);
  if (c->out_count == NULL || c->out_s == NULL) {
    sc_trace_compare_free(c);
    return sc_error_set(err, SC_ENOMEM, "trace compare: out of memory");
  }
  for (size_t i = 0; i < ntraces; i++) {
    if (traces[i] == NULL) {
      sc_trace_compare_free(c);
      return sc_error_set(err, SC_EINVAL, "trace compare: trace %zu is NULL", i);
    }
    int rc = compare_one(c, traces[i], i, res, d, err);
    if (rc != SC_OK) {
      sc_trace_compare_free(c);
      return rc;
    }
  }
  if (c->nunm > 1) qsort(c->unm, c->nunm, sizeof *c->unm, cmp_unm);
  *out = c;
  return SC_OK;
}
