/* Chrome / Perfetto trace-event JSON of a simulated iteration (stepcast/report.h).
 * Format: "Trace Event Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
 * "M" metadata events name processes and threads, "X" complete events carry ts and dur
 * in microseconds, "s"/"f" events with one id draw a flow arrow; "bp":"e" binds the
 * arrow's end to the slice enclosing its timestamp. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_int.h"
#include "stepcast/comm.h"
#include "stepcast/ops.h"
#include "stepcast/report.h"
#include "stepcast/stepcast.h"

#define US(t) ((t) * 1e6)
/* Times are written in microseconds to the nanosecond: every ts is the instant rounded to
 * whole nanoseconds and every dur the difference of two such instants, so that slices laid
 * end to end never overlap after rounding and children sum to their parent exactly. */
static double ns_us(double t_s) { return round(t_s * 1e9) / 1e3; }
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

/* ---- operator-level children (sc_report_trace_ops) ---- */

void sc_report_item_name(const sc_timeline_item *it, char *buf, size_t cap) {
  static const char *const coll[SC_COLL_COUNT] = {"AllReduce", "AllGather", "ReduceScatter",
                                                  "AllToAll",  "Broadcast", "SendRecv"};
  const char *f = it->family != NULL ? it->family : "?", *pre = f;
  if (cap == 0) return;
  if (it->is_coll) {
    snprintf(buf, cap, "ncclDevKernel_%s %s",
             it->coll_kind < SC_COLL_COUNT ? coll[it->coll_kind] : "Generic", it->label);
    return;
  }
  if (strcmp(f, SC_OP_GEMM) == 0) pre = "gemm";
  else if (strcmp(f, SC_OP_ATTENTION) == 0)
    pre = it->variant == SC_ATTN_FLASH_BWD ? "flash_attn_bwd" : "flash_attn_fwd";
  else if (strcmp(f, SC_OP_SOFTMAX) == 0)
    pre = it->variant == SC_SOFTMAX_BWD || it->variant == SC_SOFTMAX_PLAIN_BWD ? "softmax_bwd"
                                                                               : "softmax";
  else if (strcmp(f, SC_OP_NORM) == 0) {
    static const char *const nm[SC_NORM_OP_VARIANT_COUNT] = {"layer_norm_fwd", "layer_norm_bwd",
                                                             "rms_norm_fwd", "rms_norm_bwd"};
    pre = it->variant < SC_NORM_OP_VARIANT_COUNT ? nm[it->variant] : "norm";
  } else if (strcmp(f, SC_OP_ELEMENTWISE) == 0) pre = "elementwise_kernel";
  else if (strcmp(f, SC_OP_EMBEDDING) == 0)
    pre = it->variant == SC_EMBED_BWD ? "embedding_bwd" : "embedding";
  else if (strcmp(f, SC_OP_CROSS_ENTROPY) == 0)
    pre = it->variant == SC_CE_BWD ? "cross_entropy_bwd" : "cross_entropy";
  else if (strcmp(f, SC_OP_OPTIMIZER) == 0) pre = "multi_tensor_apply_adam";
  else if (strcmp(f, SC_OP_MEMCPY) == 0) pre = it->variant == SC_MEMCPY_FILL ? "fill" : "copy";
  snprintf(buf, cap, "%s %s", pre, it->label);
}

static const char *group_name(unsigned g) {
  static const char *const n[] = {"tp", "cp", "dp", "pp", "etp", "ep", "edp"};
  return g < sizeof n / sizeof n[0] ? n[g] : "?";
}

/* What writing the children needs; with dry set nothing is written, slices are counted. */
typedef struct tl_ctx {
  FILE *out;
  int *first;
  const sc_sched_result *s;
  const sc_timeline_detail *d;
  uint32_t K;            /* operator slices for micro-batches < K */
  int general;           /* ZB-H1, DualPipe: backwards split into B and W */
  int dry;
  size_t count;
  uint32_t *sel;         /* scratch: selected item indices (d->nitems) */
  size_t *seg;           /* scratch: where each source's items start in sel (+ end) */
} tl_ctx;

/* The virtual stage (index into d->chunks) interval v belongs to. */
static uint32_t chunk_of(const tl_ctx *c, const sc_sched_interval *v) {
  const sc_timeline_detail *d = c->d;
  uint32_t g;
  if (d->schedule == SC_SCHED_DUALPIPE) g = v->chunk == 1 ? d->pp - 1 - v->stage : v->stage;
  else g = v->chunk * d->pp + v->stage;
  return g < d->nchunks ? g : UINT32_MAX;
}

/* Does item it belong to what a slice of kind k (an sc_interval_kind, or for the
 * communication lanes the list lst and lane) runs? */
static int op_in(const tl_ctx *c, const sc_timeline_item *it, int kind) {
  if (it->is_coll) return 0;
  switch (kind) {
  case SC_IV_FORWARD: return it->list == SC_TL_FWD;
  case SC_IV_RECOMPUTE: return it->list == SC_TL_RECOMPUTE;
  case SC_IV_BACKWARD: return it->list == SC_TL_BWD && !(c->general && it->wgrad);
  case SC_IV_WGRAD: return it->list == SC_TL_BWD && it->wgrad;
  case SC_IV_OPTIMIZER: return it->list == SC_TL_ITER;
  default: return 0;
  }
}

/* A collective of list lst that runs on lane (the schedule's TP lane carries TP, EP, ETP
 * and any other per-pass collective but CP's and the sharded DP ones). */
static int coll_in(const sc_timeline_item *it, int lst, int lane, int param) {
  if (!it->is_coll || it->list != lst || !(it->time_s > 0.0)) return 0;
  if (lst == SC_TL_ITER) return lane == SC_LANE_DP && it->param_gather == param;
  if (lane == SC_LANE_CP) return it->group == SC_GROUP_CP;
  if (lane == SC_LANE_DP) return it->group == SC_GROUP_DP;
  return it->group != SC_GROUP_CP && it->group != SC_GROUP_DP;
}

/* Append to sel the items of chunk g that pass the filter (one source). */
static size_t add_source(tl_ctx *c, size_t n, size_t *nseg, uint32_t g, int kind, int lst,
                         int lane, int param) {
  const sc_timeline_chunk *ch = &c->d->chunks[g];
  c->seg[(*nseg)++] = n;
  for (size_t i = ch->first; i < ch->first + ch->count; i++) {
    const sc_timeline_item *it = &c->d->items[i];
    if (kind >= 0 ? op_in(c, it, kind) : coll_in(it, lst, lane, param)) c->sel[n++] = (uint32_t)i;
  }
  return n;
}

/* Walk the instances of sel's sources in execution order: a run of per-layer entries with
 * one repeat count goes layer by layer; any other entry repeats in place. fn (when not
 * NULL) gets each instance; returns the nominal time of all (sum of estimates). */
typedef void (*inst_fn)(tl_ctx *c, const sc_timeline_item *it, uint32_t inst, void *arg);
static double walk(tl_ctx *c, size_t nseg, inst_fn fn, void *arg, size_t *ninst) {
  double total = 0.0;
  size_t n = 0;
  for (size_t s = 0; s < nseg; s++) {
    size_t a = c->seg[s], b = c->seg[s + 1];
    for (size_t i = a; i < b;) {
      const sc_timeline_item *it = &c->d->items[c->sel[i]];
      size_t j = i + 1;
      if (it->layer && it->repeat > 1)
        while (j < b && c->d->items[c->sel[j]].layer &&
               c->d->items[c->sel[j]].repeat == it->repeat)
          j++;
      for (uint32_t r = 0; r < it->repeat; r++) {
        for (size_t k = i; k < j; k++) {
          const sc_timeline_item *x = &c->d->items[c->sel[k]];
          total += x->time_s;
          n++;
          if (fn) fn(c, x, r, arg);
        }
      }
      i = j;
    }
  }
  if (ninst) *ninst = n;
  return total;
}

/* The slice [t0, t1) being filled: instances placed end to end, scaled. */
typedef struct fill {
  uint32_t pid, tid;
  double t0, t1, total, cum, at;
  const sc_timeline_chunk *ch;
  size_t left;
} fill;

static void ev_args_item(FILE *out, const sc_timeline_item *it, uint32_t inst) {
  fputs(", \"args\": {\"family\": ", out);
  sc_json_string(out, it->family);
  if (it->is_coll) {
    fputs(", \"kind\": ", out);
    sc_json_string(out, it->coll_kind < SC_COLL_COUNT
                            ? sc_comm_kind_name((sc_coll_kind)it->coll_kind) : "?");
    fprintf(out, ", \"group\": \"%s\", \"ranks\": %u", group_name(it->group), it->nranks);
  }
  fputs(", \"label\": ", out);
  sc_json_string(out, it->label);
  if (!it->is_coll) {
    char shape[160];
    size_t n = 0;
    shape[0] = '\0';
    for (uint32_t i = 0; i < it->ndims && i < SC_OP_MAX_DIMS && n < sizeof shape; i++) {
      int w = snprintf(shape + n, sizeof shape - n, "%s%lld", i ? "x" : "", (long long)it->dims[i]);
      if (w < 0) break;
      n += (size_t)w;
    }
    fputs(", \"shape\": ", out);
    sc_json_string(out, shape);
    fputs(", \"flops\": ", out);
    sc__json_number(out, it->flops);
  }
  fputs(", \"dtype\": ", out);
  sc_json_string(out, sc_dtype_name(it->dtype));
  fputs(", \"bytes\": ", out);
  sc__json_number(out, it->bytes);
  fputs(", \"estimate_us\": ", out);
  sc__json_number(out, it->time_s * 1e6);
  fprintf(out, ", \"instance\": %u}}", inst);
}

static void put_slice(tl_ctx *c, uint32_t pid, uint32_t tid, double a, double b,
                      const char *name, const char *cat) {
  FILE *out = c->out;
  ev_sep(out, c->first);
  fputs("{\"ph\": \"X\", \"name\": ", out);
  sc_json_string(out, name);
  fprintf(out, ", \"cat\": \"%s\", \"pid\": %u, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f", cat,
          pid, tid, ns_us(a), ns_dur_us(a, b));
}

static void put_inst(tl_ctx *c, const sc_timeline_item *it, uint32_t inst, void *arg) {
  fill *f = arg;
  f->cum += it->time_s;
  f->left--;
  double b = f->left == 0 ? f->t1 : f->t0 + (f->t1 - f->t0) * (f->cum / f->total);
  if (b > f->t1) b = f->t1;
  if (b < f->at) b = f->at;
  c->count++;
  if (!c->dry) {
    char name[96];
    sc_report_item_name(it, name, sizeof name);
    put_slice(c, f->pid, f->tid, f->at, b, name, it->is_coll ? "comm" : "op");
    ev_args_item(c->out, it, inst);
  }
  f->at = b;
}

/* Lay sel's instances end to end over [t0, t1). */
static void fill_span(tl_ctx *c, size_t nseg, uint32_t pid, uint32_t tid, double t0,
                      double t1) {
  size_t n = 0;
  double total = walk(c, nseg, NULL, NULL, &n);
  if (n == 0 || !(t1 > t0)) return;
  fill f = {pid, tid, t0, t1, total, 0.0, t0, NULL, n};
  if (!(total > 0.0)) return; /* nothing priced: no scale to lay them by */
  walk(c, nseg, put_inst, &f, NULL);
}

/* One child with a name and a note (no item behind it). */
static void put_plain(tl_ctx *c, uint32_t pid, uint32_t tid, double a, double b,
                      const char *name, const char *note) {
  if (!(b > a)) return;
  c->count++;
  if (c->dry) return;
  put_slice(c, pid, tid, a, b, name, "exposed");
  fputs(", \"args\": {\"note\": ", c->out);
  sc_json_string(c->out, note);
  fputs("}}", c->out);
}

/* The compute a compute slice holds (the rest of it is exposed communication, or waiting
 * for the parameter all-gather). */
static double compute_part(const tl_ctx *c, const sc_sched_interval *v, const sc_sched_chunk *t) {
  double x = 0.0, dur = v->end_s - v->start_s;
  switch ((sc_interval_kind)v->kind) {
  case SC_IV_FORWARD: x = t->fwd_s; break;
  case SC_IV_RECOMPUTE: x = t->recompute_s; break;
  case SC_IV_BACKWARD:
    x = c->general ? t->bwd_s - t->wgrad_s : t->bwd_s;
    if (x < 0.0) x = 0.0;
    break;
  case SC_IV_WGRAD: x = t->wgrad_s; break;
  default: x = dur; break;
  }
  if (x > dur || dur - x <= 1e-9 * dur) x = dur;
  return x;
}

/* Children of interval i. */
static void children(tl_ctx *c, size_t i) {
  const sc_sched_result *s = c->s;
  const sc_sched_interval *v = &s->intervals[i];
  uint32_t g = chunk_of(c, v);
  size_t nseg = 0, n = 0;
  int permb = v->microbatch >= 0;
  if (permb && (uint32_t)v->microbatch >= c->K) return;
  switch ((sc_interval_kind)v->kind) {
  case SC_IV_FORWARD:
  case SC_IV_RECOMPUTE:
  case SC_IV_BACKWARD:
  case SC_IV_WGRAD: {
    if (g == UINT32_MAX) return;
    const sc_sched_chunk *t = &c->d->chunks[g].times;
    double x = compute_part(c, v, t), b0 = v->start_s + x;
    n = add_source(c, n, &nseg, g, v->kind, 0, 0, 0);
    c->seg[nseg] = n;
    size_t ninst = 0;
    double tot = walk(c, nseg, NULL, NULL, &ninst);
    if (ninst > 0 && tot > 0.0) fill_span(c, nseg, v->stage, v->lane, v->start_s, b0);
    else put_plain(c, v->stage, v->lane, v->start_s, b0, "compute",
                   "the pass's compute (no operator priced above zero)");
    if (!(v->end_s > b0)) return;
    /* the rest: exposed communication at the pass's end; elsewhere (the forward of a
     * DualPipe F&B pair) the wait for the parameter all-gather */
    int last = 1;
    double tp_end = b0, cp_end = b0;
    for (size_t j = i + 1; j < s->nintervals && s->intervals[j].pass == v->pass; j++) {
      const sc_sched_interval *u = &s->intervals[j];
      if (u->stage != v->stage) continue;
      if (u->lane == SC_LANE_COMPUTE) last = 0;
      else if (u->kind == SC_IV_TP) tp_end = u->end_s;
      else if (u->kind == SC_IV_CP) cp_end = u->end_s;
    }
    if (!last) {
      put_plain(c, v->stage, v->lane, b0, v->end_s, "DP parameter all-gather (wait)",
                "the pass waits for its chunk's parameters");
      return;
    }
    if (tp_end < b0) tp_end = b0;
    if (tp_end > v->end_s) tp_end = v->end_s;
    if (cp_end < tp_end) cp_end = tp_end;
    if (cp_end > v->end_s) cp_end = v->end_s;
    put_plain(c, v->stage, v->lane, b0, tp_end, "TP comm (exposed)",
              "TP/EP communication of the pass its compute did not hide");
    put_plain(c, v->stage, v->lane, tp_end, cp_end, "CP comm (exposed)",
              "CP communication of the pass its attention did not hide");
    put_plain(c, v->stage, v->lane, cp_end, v->end_s, "DP comm (exposed)",
              "sharded data-parallel communication of the pass not hidden, or the wait for "
              "the parameter all-gather");
    return;
  }
  case SC_IV_TP:
  case SC_IV_CP:
  case SC_IV_DP_PARAM:
  case SC_IV_DP_GRAD: {
    if (!permb) { /* a per-iteration bucket: its share of the chunk's collectives */
      if (g == UINT32_MAX || v->lane != SC_LANE_DP) return;
      n = add_source(c, n, &nseg, g, -1, SC_TL_ITER, SC_LANE_DP, v->kind == SC_IV_DP_PARAM);
      c->seg[nseg] = n;
      fill_span(c, nseg, v->stage, v->lane, v->start_s, v->end_s);
      return;
    }
    /* a pass's communication: the collectives of the passes placed with it, in their order */
    size_t a = i;
    while (a > 0 && s->intervals[a - 1].pass == v->pass) a--;
    for (size_t j = a; j < i; j++) {
      const sc_sched_interval *u = &s->intervals[j];
      if (u->lane != SC_LANE_COMPUTE || u->stage != v->stage) continue;
      uint32_t gu = chunk_of(c, u);
      if (gu == UINT32_MAX) continue;
      int lst = u->kind == SC_IV_FORWARD ? SC_TL_FWD
                : u->kind == SC_IV_RECOMPUTE ? SC_TL_RECOMPUTE
                : u->kind == SC_IV_BACKWARD ? SC_TL_BWD : -1;
      if (lst < 0) continue;
      /* sharded DP: the forward's gathers on the DP_PARAM slice, the backward's on DP_GRAD */
      if (v->kind == SC_IV_DP_PARAM && lst != SC_TL_FWD) continue;
      if (v->kind == SC_IV_DP_GRAD && lst == SC_TL_FWD) continue;
      n = add_source(c, n, &nseg, gu, -1, lst, v->lane, 0);
    }
    c->seg[nseg] = n;
    fill_span(c, nseg, v->stage, v->lane, v->start_s, v->end_s);
    return;
  }
  case SC_IV_P2P_ACT:
  case SC_IV_P2P_GRAD: {
    if (g == UINT32_MAX || !(v->end_s > v->start_s)) return;
    const sc_timeline_chunk *ch = &c->d->chunks[g];
    sc_timeline_item it;
    memset(&it, 0, sizeof it);
    snprintf(it.label, sizeof it.label, "pp.p2p");
    it.family = "comm";
    it.is_coll = 1;
    it.coll_kind = SC_COLL_SENDRECV;
    it.group = SC_GROUP_PP;
    it.nranks = 2;
    it.repeat = 1;
    it.dtype = ch->p2p_dtype;
    it.bytes = v->kind == SC_IV_P2P_ACT ? ch->p2p_fwd_bytes : ch->p2p_bwd_bytes;
    it.time_s = v->kind == SC_IV_P2P_ACT ? ch->times.p2p_fwd_s : ch->times.p2p_bwd_s;
    if (!(it.time_s > 0.0)) it.time_s = 0.0;
    fill f = {v->stage, v->lane, v->start_s, v->end_s, 1.0, 0.0, v->start_s, NULL, 1};
    put_inst(c, &it, 0, &f); /* one instance: the whole send */
    return;
  }
  case SC_IV_OPTIMIZER: {
    /* the rank's chunks' optimizer steps (DualPipe: both stage copies it holds) */
    const sc_timeline_detail *d = c->d;
    if (d->schedule == SC_SCHED_DUALPIPE) {
      n = add_source(c, n, &nseg, v->stage, SC_IV_OPTIMIZER, 0, 0, 0);
      if (d->pp - 1 - v->stage != v->stage)
        n = add_source(c, n, &nseg, d->pp - 1 - v->stage, SC_IV_OPTIMIZER, 0, 0, 0);
    } else {
      for (uint32_t k = 0; k < d->vp; k++)
        if (k * d->pp + v->stage < d->nchunks)
          n = add_source(c, n, &nseg, k * d->pp + v->stage, SC_IV_OPTIMIZER, 0, 0, 0);
    }
    c->seg[nseg] = n;
    fill_span(c, nseg, v->stage, v->lane, v->start_s, v->end_s);
    return;
  }
  default: return;
  }
}

/* d consistent with s: SC_OK, else SC_EINVAL naming what differs. */
static int check_detail(const sc_sched_result *s, const sc_timeline_detail *d, sc_error *err) {
  uint32_t want = d->schedule == SC_SCHED_DUALPIPE ? d->pp : d->pp * d->vp;
  if (d->pp != s->pp || d->nchunks != want || d->chunks == NULL ||
      (d->schedule != SC_SCHED_DUALPIPE && d->vp != s->vp))
    return sc_error_set(err, SC_EINVAL, "report: trace: the timeline detail (pp %u, vp %u, %u "
                        "chunks) is not of this schedule result (pp %u, vp %u)", d->pp, d->vp,
                        d->nchunks, s->pp, s->vp);
  if (d->nitems > 0 && d->items == NULL)
    return sc_error_set(err, SC_EINVAL, "report: trace: the timeline detail has no items");
  for (uint32_t g = 0; g < d->nchunks; g++) {
    const sc_timeline_chunk *ch = &d->chunks[g];
    if (ch->first > d->nitems || ch->count > d->nitems - ch->first)
      return sc_error_set(err, SC_EINVAL, "report: trace: the timeline detail's chunk %u names "
                          "items out of range", g);
  }
  for (size_t i = 0; i < d->nitems; i++) {
    const sc_timeline_item *it = &d->items[i];
    if (!isfinite(it->time_s) || it->time_s < 0.0 || it->list > SC_TL_ITER)
      return sc_error_set(err, SC_EINVAL, "report: trace: the timeline detail's item %zu ('%s') "
                          "has time %g s or list %u", i, it->label, it->time_s,
                          (unsigned)it->list);
  }
  return SC_OK;
}

int sc_report_trace(FILE *out, const sc_sched_result *s, const sc_result *r, sc_error *err) {
  return sc_report_trace_ops(out, s, r, NULL, 0, err);
}

int sc_report_trace_ops(FILE *out, const sc_sched_result *s, const sc_result *r,
                        const sc_timeline_detail *d, uint32_t op_microbatches, sc_error *err) {
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

  tl_ctx c;
  memset(&c, 0, sizeof c);
  int ops = d != NULL && op_microbatches > 0;
  if (ops) {
    int rc = check_detail(s, d, err);
    if (rc != SC_OK) return rc;
    c.s = s;
    c.d = d;
    c.K = op_microbatches;
    c.general = d->schedule == SC_SCHED_ZB_H1 || d->schedule == SC_SCHED_DUALPIPE;
    c.sel = malloc((d->nitems ? d->nitems : 1) * sizeof *c.sel);
    c.seg = malloc(((size_t)d->vp + 8) * sizeof *c.seg);
    if (c.sel == NULL || c.seg == NULL) {
      free(c.sel);
      free(c.seg);
      return sc_error_set(err, SC_ENOMEM, "report: trace: out of memory");
    }
    /* count first: a file too large is refused before a byte is out */
    c.dry = 1;
    for (size_t i = 0; i < s->nintervals && c.count <= SC_REPORT_TRACE_MAX_OP_SLICES; i++)
      children(&c, i);
    if (c.count > SC_REPORT_TRACE_MAX_OP_SLICES) {
      free(c.sel);
      free(c.seg);
      return sc_error_set(err, SC_ERANGE, "report: trace: operator slices for %u micro-batches "
                          "would be more than %u (about %u MB of JSON): ask for fewer "
                          "(stepcast predict --timeline-ops)", op_microbatches,
                          SC_REPORT_TRACE_MAX_OP_SLICES, SC_REPORT_TRACE_MAX_OP_SLICES / 3000u);
    }
    c.dry = 0;
    c.count = 0;
  }
  int has_ep = 0;
  for (size_t i = 0; ops && i < d->nitems; i++)
    if (d->items[i].is_coll &&
        (d->items[i].group == SC_GROUP_EP || d->items[i].group == SC_GROUP_ETP))
      has_ep = 1;

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
  if (ops) fprintf(out, ", \"operator_microbatches\": %u", op_microbatches);
  fputs("},\n\"traceEvents\": [", out);
  int first = 1;
  c.out = out;
  c.first = &first;
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
              st, lane, lane == SC_LANE_TP && has_ep ? "tp + ep" : sc_lane_name((sc_lane)lane));
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
            ns_us(v->start_s), ns_dur_us(v->start_s, v->end_s), v->chunk, v->microbatch,
            v->bucket);
    if (ops) children(&c, i);
  }
  free(c.sel);
  free(c.seg);
  for (size_t i = 0; i < s->nflows; i++) {
    const sc_sched_interval *a = &s->intervals[s->flows[i].send];
    const sc_sched_interval *b = &s->intervals[s->flows[i].recv];
    const char *nm = a->kind == SC_IV_P2P_GRAD ? "gradient" : "activation";
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"s\", \"id\": %zu, \"name\": \"%s\", \"cat\": \"p2p\", \"pid\": %u, "
            "\"tid\": %u, \"ts\": %.3f}",
            i + 1, nm, a->stage, (unsigned)a->lane, ns_us(a->start_s));
    ev_sep(out, &first);
    fprintf(out,
            "{\"ph\": \"f\", \"bp\": \"e\", \"id\": %zu, \"name\": \"%s\", \"cat\": \"p2p\", "
            "\"pid\": %u, \"tid\": %u, \"ts\": %.3f}",
            i + 1, nm, b->stage, (unsigned)b->lane, ns_us(b->start_s));
  }
  fputs("\n]\n}\n", out);
  return sc__io_status(out, "trace", err);
}
