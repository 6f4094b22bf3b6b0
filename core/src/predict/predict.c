/*
 * End-to-end prediction: workload → plugin estimates → pipeline schedule → sc_result.
 * See stepcast/predict.h for the contract and docs/predict.md for the composition rules.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stepcast/comm.h"
#include "stepcast/estimate.h"
#include "stepcast/ops.h"
#include "stepcast/predict.h"
#include "stepcast/stepcast.h"
#include "stepcast/workload.h"
#include "predict/compose.h"

struct sc_predictor {
  sc_registry *reg;                 /* borrowed */
  sc_sched_workspace *ws;
  sc_stage_work work;               /* one chunk's workload (about 30 KiB) */
  size_t cap;                       /* chunks the arrays below hold */
  sc_sched_chunk *chunks;
  double *fam;                      /* cap * 3 * SC__NFAM: fwd, bwd, recompute splits */
  double *opt_s;                    /* optimizer time per pipeline rank (cap entries) */
  const sc_predict_opts *opts;      /* of the sc_predict call in progress */
  sc__collmemo cmemo;               /* collective times of the call in progress (its spans) */
  sc_device sdev;                   /* the device as the call's stack runs it */
  /* The attention efficiencies the registry's memo last saw under the device's name: the
   * memo knows a device by its name, so a stack that changes them under that name (and a
   * call without it after one with it) must clear it. */
  char memo_dev[64];
  double memo_att[2];
  /* The operator-level timeline's detail (record_timeline only): sc_predict_timeline */
  int tl_valid;
  sc_timeline_detail tl;
  sc_timeline_chunk *tl_chunks;
  size_t tl_cap_chunks;
  sc_timeline_item *tl_items;
  size_t tl_nitems, tl_cap_items;
};

const char *sc_estimator_name(sc_estimator e) {
  switch (e) {
  case SC_ESTIMATOR_ANALYTICAL: return "analytical";
  case SC_ESTIMATOR_HYBRID: return "hybrid";
  case SC_ESTIMATOR_LEARNED: return "learned";
  }
  return "?";
}

int sc_estimator_parse(const char *s, sc_estimator *out) {
  static const sc_estimator all[] = {SC_ESTIMATOR_ANALYTICAL, SC_ESTIMATOR_HYBRID,
                                     SC_ESTIMATOR_LEARNED};
  for (size_t i = 0; s != NULL && i < sizeof all / sizeof all[0]; i++) {
    if (strcmp(s, sc_estimator_name(all[i])) == 0) {
      *out = all[i];
      return SC_OK;
    }
  }
  return SC_EINVAL;
}

void sc_predict_opts_defaults(sc_predict_opts *o) {
  memset(o, 0, sizeof *o);
  o->estimator = SC_ESTIMATOR_ANALYTICAL;
  o->coll_algo = "auto";
}

int sc_predictor_new(sc_registry *reg, sc_predictor **out, sc_error *err) {
  sc_predictor *pr;
  int rc;
  if (reg == NULL || out == NULL) return sc_error_set(err, SC_EINVAL, "predictor: NULL argument");
  pr = calloc(1, sizeof *pr);
  if (pr == NULL) return sc_error_set(err, SC_ENOMEM, "predictor: out of memory");
  pr->reg = reg;
  rc = sc_sched_workspace_new(&pr->ws, err);
  if (rc != SC_OK) {
    free(pr);
    return rc;
  }
  *out = pr;
  return SC_OK;
}

void sc_predictor_free(sc_predictor *pr) {
  if (pr == NULL) return;
  sc_sched_workspace_free(pr->ws);
  free(pr->chunks);
  free(pr->fam);
  free(pr->opt_s);
  free(pr->tl_chunks);
  free(pr->tl_items);
  free(pr);
}

static int reserve(sc_predictor *pr, size_t n, sc_error *err) {
  sc_sched_chunk *c;
  double *f, *o;
  if (n <= pr->cap) return SC_OK;
  c = realloc(pr->chunks, n * sizeof *c);
  if (c != NULL) pr->chunks = c;
  f = realloc(pr->fam, n * 3 * SC__NFAM * sizeof *f);
  if (f != NULL) pr->fam = f;
  o = realloc(pr->opt_s, n * sizeof *o);
  if (o != NULL) pr->opt_s = o;
  if (c == NULL || f == NULL || o == NULL) return sc_error_set(err, SC_ENOMEM, "predictor: out of memory");
  pr->cap = n;
  return SC_OK;
}

/* What the timing callbacks of one prediction need. */
typedef struct pctx {
  sc_predictor *pr;
  const sc_device *dev;
} pctx;

/* One operator: the plugin's analytical time, through the fitted residuals for the hybrid
 * and learned estimators, then what the software stack adds (its kernels and traffic on the
 * GPU; the host's dispatch in *host_s). */
static int op_time(void *vc, const sc_work_op *o, double *time_s, double *host_s,
                   sc_error *err) {
  const pctx *c = vc;
  const sc_stack *stack = c->pr->opts->stack;
  sc_estimate e;
  int rc = sc_registry_estimate_op(c->pr->reg, c->dev, &o->desc, &e, err);
  if (rc != SC_OK) return rc;
  rc = sc_price_mode(c->pr->opts->residuals, stack, c->dev, c->pr->opts->estimator, &o->desc,
                     &e, time_s, err);
  if (rc != SC_OK) return rc;
  *host_s = sc_stack_host_s(stack, &o->desc);
  return SC_OK;
}

/* ---- the operator-level timeline's detail (record_timeline) ---- */

static sc_timeline_item *tl_push(sc_predictor *pr, sc_error *err) {
  if (pr->tl_nitems == pr->tl_cap_items) {
    size_t cap = pr->tl_cap_items ? 2 * pr->tl_cap_items : 256;
    sc_timeline_item *n = realloc(pr->tl_items, cap * sizeof *n);
    if (n == NULL) {
      sc_error_set(err, SC_ENOMEM, "predictor: out of memory (timeline detail)");
      return NULL;
    }
    pr->tl_items = n;
    pr->tl_cap_items = cap;
  }
  sc_timeline_item *it = &pr->tl_items[pr->tl_nitems++];
  memset(it, 0, sizeof *it);
  return it;
}

/* The items of one list: its operators priced as op_time does (the registry's memo answers:
 * the same numbers), with the plugin's FLOPs and bytes, then its collectives. */
static int tl_list(sc_predictor *pr, pctx *cx, sc__coll_ctx *cc, const sc_work_list *l,
                   sc_timeline_list which, sc_error *err) {
  for (uint32_t i = 0; i < l->nops; i++) {
    const sc_work_op *o = &l->ops[i];
    sc_estimate e;
    double t = 0.0, h = 0.0;
    int rc = sc_registry_estimate_op(pr->reg, cx->dev, &o->desc, &e, err);
    if (rc == SC_OK) rc = op_time(cx, o, &t, &h, err);
    if (rc != SC_OK) return rc;
    sc_timeline_item *it = tl_push(pr, err);
    if (it == NULL) return SC_ENOMEM;
    snprintf(it->label, sizeof it->label, "%s", o->label);
    it->family = o->desc.family;
    it->variant = o->desc.variant;
    it->dtype = o->desc.dtype;
    it->ndims = o->desc.ndims <= SC_OP_MAX_DIMS ? o->desc.ndims : SC_OP_MAX_DIMS;
    memcpy(it->dims, o->desc.dims, sizeof it->dims);
    it->list = (uint8_t)which;
    it->layer = o->where == SC_WHERE_LAYER;
    it->wgrad = which == SC_TL_BWD && sc__op_is_wgrad(o);
    it->repeat = o->repeat;
    it->flops = e.flops;
    it->bytes = e.bytes;
    it->time_s = t;
  }
  for (uint32_t i = 0; i < l->ncolls; i++) {
    const sc_work_coll *wc = &l->colls[i];
    double t = 0.0;
    if (wc->nranks > 1 && wc->bytes > 0.0) {
      int rc = sc__coll_time(cc, wc, &t, err);
      if (rc != SC_OK) return rc;
    }
    sc_timeline_item *it = tl_push(pr, err);
    if (it == NULL) return SC_ENOMEM;
    snprintf(it->label, sizeof it->label, "%s", wc->label);
    it->family = "comm";
    it->dtype = wc->dtype;
    it->list = (uint8_t)which;
    it->layer = wc->where == SC_WHERE_LAYER;
    it->is_coll = 1;
    it->coll_kind = (uint8_t)wc->kind;
    it->group = (uint8_t)wc->group;
    it->param_gather = which == SC_TL_ITER &&
                       (wc->group == SC_GROUP_DP || wc->group == SC_GROUP_EDP) &&
                       wc->phase == SC_PHASE_FWD; /* as sc__chunk_iter splits them */
    it->nranks = wc->nranks;
    it->repeat = wc->repeat;
    it->bytes = wc->bytes;
    it->time_s = t;
  }
  return SC_OK;
}

/* Chunk g's detail: the schedule's input ch and the items of stage work w. */
static int tl_chunk(sc_predictor *pr, pctx *cx, sc__coll_ctx *cc, uint32_t g,
                    const sc_stage_work *w, const sc_sched_chunk *ch, sc_error *err) {
  static const sc_phase ph[3] = {SC_PHASE_FWD, SC_PHASE_BWD, SC_PHASE_RECOMPUTE};
  static const sc_timeline_list tl[3] = {SC_TL_FWD, SC_TL_BWD, SC_TL_RECOMPUTE};
  sc_timeline_chunk *c = &pr->tl_chunks[g];
  memset(c, 0, sizeof *c);
  c->times = *ch;
  c->times.fwd_family_s = c->times.bwd_family_s = c->times.recompute_family_s = NULL;
  c->first = pr->tl_nitems;
  c->p2p_fwd_bytes = w->p2p_send_fwd_bytes;
  c->p2p_bwd_bytes = w->p2p_send_bwd_bytes;
  c->p2p_dtype = w->p2p_dtype;
  int rc = SC_OK;
  for (int k = 0; k < 3 && rc == SC_OK; k++)
    rc = tl_list(pr, cx, cc, &w->per_micro[ph[k]], tl[k], err);
  if (rc == SC_OK) rc = tl_list(pr, cx, cc, &w->per_iter, SC_TL_ITER, err);
  c->count = pr->tl_nitems - c->first;
  return rc;
}

int sc_predict_timeline(const sc_predictor *pr, sc_timeline_detail *out, sc_error *err) {
  if (pr == NULL || out == NULL)
    return sc_error_set(err, SC_EINVAL, "predict: timeline: NULL argument");
  if (!pr->tl_valid)
    return sc_error_set(err, SC_EINVAL, "predict: timeline: the last prediction did not "
                        "record one (record_timeline) or failed");
  *out = pr->tl;
  return SC_OK;
}

static int fill_memory(const sc_model *m, const sc_parallel *p, const sc_topology *t,
                       const sc_device *dev, const sc_predict_opts *o, sc_memory_usage *mu,
                       sc_error *err) {
  sc_memory worst;
  sc_memory_overhead ov;
  uint32_t worst_stage = 0;
  memset(&worst, 0, sizeof worst);
  for (uint32_t r = 0; r < p->pp; r++) {
    sc_memory mem;
    int rc = sc_memory_per_gpu(m, p, r, &mem, err);
    if (rc != SC_OK) return rc;
    if (r == 0 || mem.total_bytes > worst.total_bytes) {
      worst = mem;
      worst_stage = r;
    }
  }
  /* the overhead is the same on every stage but for the fragmentation reserve, a fraction
   * of the stage's allocated bytes: the worst stage stays the worst */
  int rc = sc_memory_overhead_of(m, p, dev, o->stack, t, &ov, err);
  if (rc != SC_OK) return rc;
  sc__memory_usage_of(&worst, &ov, dev->mem_bytes, mu);
  if (!o->allow_oom && sc_memory_refused(mu->total_bytes, dev->mem_bytes)) {
    return sc_error_set(err, SC_ENOFIT,
                        "memory: pipeline stage %u needs %.1f GB per GPU, more than the %.1f GB "
                        "of %s by over the %.0f %% margin (weights %.1f, gradients %.1f, "
                        "optimizer %.1f, activations %.1f, other %.1f GB); raise tp/pp, use "
                        "--distributed-optimizer or --recompute",
                        worst_stage, mu->total_bytes / 1e9, dev->mem_bytes / 1e9, dev->name,
                        100.0 * SC_MEMORY_REFUSE_MARGIN, worst.weights_bytes / 1e9,
                        worst.grads_bytes / 1e9, worst.optimizer_bytes / 1e9,
                        worst.activations_bytes / 1e9, mu->other_bytes / 1e9);
  }
  return SC_OK;
}

int sc_predict(sc_predictor *pr, const sc_model *m, const sc_topology *t, const sc_device *dev,
               const sc_parallel *p, const sc_predict_opts *o, sc_result *res,
               sc_sched_result *sched, sc_error *err) {
  sc_predict_opts defaults;
  sc_sched_input in;
  sc_sched_result sr;
  sc__spans sp;
  pctx cx;
  int rc;
  uint32_t gpus, nchunks, mb;
  double model_flops = 0.0, hw_flops = 0.0;
  const char *algo;

  if (pr == NULL || m == NULL || t == NULL || dev == NULL || p == NULL || res == NULL)
    return sc_error_set(err, SC_EINVAL, "predict: NULL argument");
  pr->tl_valid = 0;
  pr->tl_nitems = 0;
  if (o == NULL) {
    sc_predict_opts_defaults(&defaults);
    o = &defaults;
  }
  if (o->estimator != SC_ESTIMATOR_ANALYTICAL && o->residuals == NULL) {
    return sc_error_set(err, SC_EUNSUPPORTED,
                        "estimator '%s': no fitted residual models for device '%s' "
                        "(only 'analytical' is available)",
                        sc_estimator_name(o->estimator), dev->name);
  }
  pr->opts = o;
  /* The device as the stack runs it (its attention kernel's rates) */
  if (o->stack != NULL && sc_stack_attention_for(o->stack, dev->name) != NULL) {
    pr->sdev = *dev;
    sc_stack_device(o->stack, &pr->sdev);
    dev = &pr->sdev;
  }
  if (strcmp(pr->memo_dev, dev->name) != 0 ||
      pr->memo_att[0] != dev->attention_fwd_efficiency ||
      pr->memo_att[1] != dev->attention_bwd_efficiency) {
    if (pr->memo_dev[0] != '\0' && strcmp(pr->memo_dev, dev->name) == 0)
      sc_registry_memo_clear(pr->reg); /* the same name, other figures */
    snprintf(pr->memo_dev, sizeof pr->memo_dev, "%s", dev->name);
    pr->memo_att[0] = dev->attention_fwd_efficiency;
    pr->memo_att[1] = dev->attention_bwd_efficiency;
  }
  /* A stack that pads the vocabulary otherwise than Megatron (PyTorch eager: not at all),
   * unless the job states its own padding */
  sc_parallel pstack;
  if (o->stack != NULL && ((o->stack->vocab_divisible_by != 0 && p->vocab_divisible_by == 0) ||
                           (o->stack->amp_layout && !p->amp_layout))) {
    pstack = *p;
    if (pstack.vocab_divisible_by == 0)
      pstack.vocab_divisible_by = o->stack->vocab_divisible_by;
    sc_stack_state_layout(o->stack, &pstack); /* its model states (PyTorch AMP) */
    p = &pstack;
  }
  if ((int)p->dtype < 0 || p->dtype >= SC_DTYPE_COUNT)
    return sc_error_set(err, SC_EINVAL, "dtype: %d is not a dtype", (int)p->dtype);
  if (!(dev->peak_flops_per_s[p->dtype] > 0)) {
    char has[96] = "";
    size_t n = 0;
    for (int d = 0; d < SC_DTYPE_COUNT && n < sizeof has; d++) {
      if (dev->peak_flops_per_s[d] > 0) {
        int w = snprintf(has + n, sizeof has - n, "%s%s", n ? ", " : "",
                         sc_dtype_name((sc_dtype)d));
        if (w > 0) n += (size_t)w;
      }
    }
    return sc_error_set(err, SC_EUNSUPPORTED, "dtype: device '%s' has no peak_flops_per_s.%s "
                        "(it states %s): pass --dtype with one of those", dev->name,
                        sc_dtype_name(p->dtype), n ? has : "none");
  }
  algo = (o->coll_algo != NULL) ? o->coll_algo : "auto";
  rc = sc_workload_validate(m, p, err);
  if (rc != SC_OK) return rc;
  gpus = p->tp * p->pp * p->dp * p->cp;
  rc = sc_comm_check_gpus(t, gpus, err);
  if (rc != SC_OK) return rc;
  memset(res, 0, sizeof *res);
  rc = fill_memory(m, p, t, dev, o, &res->memory, err);
  if (rc != SC_OK) return rc;
  rc = sc__spans_make(t, p, &sp, err);
  if (rc != SC_OK) return rc;
  cx.pr = pr;
  cx.dev = dev;
  sc__collmemo_clear(&pr->cmemo); /* this call's spans */
  sc__coll_ctx cc = {pr->reg, t, &sp, algo, &pr->cmemo, o->estimator, o->coll_residuals,
                     dev->compute_units};

  nchunks = p->pp * p->virtual_stages;
  rc = reserve(pr, nchunks, err);
  if (rc != SC_OK) return rc;
  memset(pr->chunks, 0, nchunks * sizeof *pr->chunks);
  memset(pr->fam, 0, nchunks * 3 * SC__NFAM * sizeof *pr->fam);
  memset(pr->opt_s, 0, p->pp * sizeof *pr->opt_s);
  mb = sc_parallel_microbatches(p);
  if (o->record_timeline && pr->tl_cap_chunks < nchunks) {
    sc_timeline_chunk *tc = realloc(pr->tl_chunks, nchunks * sizeof *tc);
    if (tc == NULL) return sc_error_set(err, SC_ENOMEM, "predictor: out of memory (timeline)");
    pr->tl_chunks = tc;
    pr->tl_cap_chunks = nchunks;
  }

  for (uint32_t r = 0; r < p->pp; r++) {
    for (uint32_t c = 0; c < p->virtual_stages; c++) {
      uint32_t g = c * p->pp + r; /* virtual stage index, as the schedule indexes chunks */
      sc_sched_chunk *ch = &pr->chunks[g];
      double *ff = &pr->fam[(size_t)g * 3 * SC__NFAM];
      sc_stage_work *w = &pr->work;
      double t_opt = 0.0;
      rc = sc_workload_stage(m, p, r, c, w, err);
      if (rc != SC_OK) return rc;
      rc = sc__chunk_micro(w, op_time, &cx, &cc, ch, ff, err);
      if (rc == SC_OK) rc = sc__chunk_iter(w, op_time, &cx, &cc, ch, &t_opt, err);
      if (rc == SC_OK && o->record_timeline) rc = tl_chunk(pr, &cx, &cc, g, w, ch, err);
      if (rc != SC_OK) return rc;
      pr->opt_s[r] += t_opt;
      ch->fwd_family_s = ff;
      ch->bwd_family_s = ff + SC__NFAM;
      ch->recompute_family_s = ff + 2 * SC__NFAM;
      /* Model FLOPs of the whole job: every GPU of this pipeline rank does the same. */
      double per_gpu = (w->flops[SC_PHASE_FWD] + w->flops[SC_PHASE_BWD]) * mb;
      double ranks = (double)p->tp * p->cp * p->dp;
      model_flops += per_gpu * ranks;
      hw_flops += (per_gpu + w->flops[SC_PHASE_RECOMPUTE] * mb) * ranks;
    }
  }
  if (p->schedule == SC_SCHED_DUALPIPE) /* a rank steps both stage copies it holds */
    for (uint32_t r = 0; r < p->pp / 2; r++) {
      double both = pr->opt_s[r] + pr->opt_s[p->pp - 1 - r];
      pr->opt_s[r] = pr->opt_s[p->pp - 1 - r] = both;
    }

  memset(&in, 0, sizeof in);
  in.kind = p->schedule;
  in.pp = p->pp;
  in.vp = p->virtual_stages;
  in.microbatches = mb;
  in.chunks = pr->chunks;
  in.optimizer_s = pr->opt_s;
  in.tp_overlap_frac = p->overlap_tp_comm ? 1.0 : 0.0;
  in.cp_overlap_frac = 0.0; /* what attention hides is already taken off (see below) */
  in.overlap_grad_reduce = p->overlap_grad_reduce;
  in.overlap_param_gather = p->overlap_param_gather;
  in.p2p_blocking = o->stack != NULL && o->stack->p2p_blocking;
  in.grad_buckets = 0;
  in.param_buckets = 0;
  in.nfamilies = (uint32_t)SC__NFAM;
  in.family_names = sc__families;
  in.record_timeline = o->record_timeline;
  rc = sc_schedule_run(pr->ws, &in, &sr, err);
  if (rc != SC_OK) return rc;

  snprintf(res->model, sizeof res->model, "%s", m->name);
  snprintf(res->topology, sizeof res->topology, "%s", t->name);
  snprintf(res->hardware, sizeof res->hardware, "%s", dev->name);
  snprintf(res->estimator, sizeof res->estimator, "%s", sc_estimator_name(o->estimator));
  snprintf(res->estimator_source, sizeof res->estimator_source, "%s",
           o->estimator_source ? o->estimator_source : "");
  snprintf(res->stack, sizeof res->stack, "%s", o->stack != NULL ? o->stack->name : "");
  res->coll_residuals = o->estimator != SC_ESTIMATOR_ANALYTICAL && o->coll_residuals != NULL;
  res->gpus = gpus;
  res->parallel = *p;
  res->iteration_s = sr.iteration_s;
  res->breakdown = sr.breakdown;
  res->model_flops = model_flops;
  res->hardware_flops = hw_flops;
  res->peak_flops_per_s = dev->peak_flops_per_s[p->dtype];
  sc__result_set_training(res, dev, o);
  rc = sc_result_finish(res, err);
  if (rc != SC_OK) return rc;
  if (sched != NULL) *sched = sr;
  if (o->record_timeline) {
    pr->tl.schedule = p->schedule;
    pr->tl.pp = p->pp;
    pr->tl.vp = p->virtual_stages;
    pr->tl.nchunks = nchunks;
    pr->tl.chunks = pr->tl_chunks;
    pr->tl.items = pr->tl_items;
    pr->tl.nitems = pr->tl_nitems;
    pr->tl_valid = 1;
  }
  return SC_OK;
}
